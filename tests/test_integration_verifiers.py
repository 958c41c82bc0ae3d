"""``genenv.integrations.verifiers`` through verifiers' own doors: its loader finds genenv's benchmarks by taskset id
(``genenv-apibank``, ..., ``genenv_verifiers``: installed modules, verifiers' convention), its ``vf-eval`` command
plays genenv episodes against a real OpenAI-compatible server on localhost (``python -m genenv.llm.local_server``:
``transformers serve`` on the tiny model, streams closed as verifiers' chat harness needs), and the rubric is
genenv's score.

verifiers 0.4 pins mcp==2.0.0 and openenv's fastmcp (in ``.venv``) needs mcp<2, so verifiers' side runs in
``.venv-verifiers`` (``scripts/setup.sh``: an overlay on ``.venv`` holding only what differs) as child processes
(``vf-eval`` itself, and ``verifiers_side.py``); this module, in ``.venv``, serves the model and replays every trace as
a genenv episode."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, child_env, data_dir

from genenv.benchmarks.base import BenchmarkAdapter, Task, get_benchmark
from genenv.envs.expert import expert_messages
from genenv.envs.tool_env import ToolEnv, score_episode

BENCHMARK, SPLIT, MAX_TURNS = "apibank", "level-3", 3
TASKSET = "genenv-apibank"
BUILTIN = ("alfworld", "apibank", "bamboogle", "bfcl", "reasoning_gym", "travelplanner")
SIDE_SCRIPT = Path(__file__).with_name("verifiers_side.py")
#: the overlay environment scripts/setup.sh builds beside .venv for verifiers
VERIFIERS_ENV = REPO / ".venv-verifiers"


@pytest.fixture(scope="module")
def verifiers_python() -> str:
    """The interpreter with verifiers 0.4 and mcp 2.0: the overlay, else this one if it has both."""
    overlay = VERIFIERS_ENV / "bin" / "python"
    if overlay.is_file():
        return str(overlay)
    try:
        if importlib.util.find_spec("verifiers") and importlib.util.find_spec("mcp.server.mcpserver"):
            return sys.executable
    except ImportError:
        pass
    pytest.skip(
        f"no {VERIFIERS_ENV} (verifiers 0.4 needs mcp==2.0.0, openenv's fastmcp in .venv needs mcp<2): "
        "`bash scripts/setup.sh` builds it, or install genenv[verifiers] in an environment of its own"
    )


def verifiers_env(python: str) -> dict[str, str]:
    """The environment of a child under ``python``: its interpreter's scripts first on ``PATH`` (verifiers' chat
    harness runs ``uv`` from there), then this one's."""
    path = os.pathsep.join((str(Path(python).parent), str(Path(sys.executable).parent), os.environ["PATH"]))
    return child_env(PATH=path)


def run_verifiers(python: str, kind: str, request: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """``verifiers_side.py`` under ``python``; its JSON result."""
    request_path, result_path = tmp_path / f"{kind}-request.json", tmp_path / f"{kind}-result.json"
    request_path.write_text(json.dumps({"kind": kind, **request}))
    process = subprocess.run(
        [python, str(SIDE_SCRIPT), str(request_path), str(result_path)],
        env=verifiers_env(python),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 0, f"{python} {SIDE_SCRIPT.name} failed:\n{process.stderr[-6000:]}"
    result = json.loads(result_path.read_text())
    assert result["versions"]["verifiers"] == "0.4.0" and result["versions"]["mcp"].startswith("2."), result
    return result


@pytest.fixture(scope="module")
def adapter() -> BenchmarkAdapter:
    data_dir(BENCHMARK)
    return get_benchmark(BENCHMARK).reporting_adapter()


@pytest.fixture(scope="module")
def tasks(adapter) -> dict[str, Task]:
    """The split's tasks by the taskset's key."""
    return {f"{BENCHMARK}:{task.task_id}": task for task in adapter.load_tasks(SPLIT)}


@dataclass
class Episode:
    prompt: str
    observations: list[str]
    """What the env answered to each reply but the last."""
    score: float
    ended: bool


def replay(adapter: BenchmarkAdapter, task: Task, replies: list[str], max_turns: int) -> Episode:
    """genenv's episode of ``replies`` on ``task`` (replies after its end are not played; replies that never end it
    are scored as a truncated episode)."""
    env = ToolEnv(adapter, tasks=[task], max_turns=max_turns)
    prompt, _ = env.reset(options={"task": task})
    observations = []
    for reply in replies:
        observation, reward, terminated, truncated, _ = env.step(reply)
        if terminated or truncated:
            return Episode(prompt, observations, reward, ended=True)
        observations.append(observation)
    return Episode(prompt, observations, score_episode(adapter, task, env.trajectory).value, ended=False)


def streamed_events(server, path: str, body: dict[str, Any]) -> list[str]:
    """The ``data:`` events of one streamed answer of ``server``."""
    import httpx

    with httpx.stream("POST", f"{server.base_url}/{path}", json={**body, "stream": True}, timeout=60) as response:
        assert response.status_code == 200
        return [line for line in response.iter_lines() if line.startswith("data:")]


@pytest.mark.parametrize(("path", "body"), [("chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
                                            ("completions", {"prompt": "hello"})])  # fmt: skip
def test_the_local_server_closes_the_streams_transformers_serve_leaves_open(transformers_server, chat_server, path,
                                                                            body):  # fmt: skip
    """OpenAI's protocol ends a stream with ``data: [DONE]``, which verifiers' chat harness waits for: transformers
    serve leaves it out; genenv's local server, the same server otherwise, sends it once, last."""
    request = {**body, "max_tokens": 3}
    plain = streamed_events(transformers_server, path, {**request, "model": transformers_server.model})
    closed = streamed_events(chat_server, path, {**request, "model": chat_server.model})
    assert "data: [DONE]" not in plain
    assert closed[-1] == "data: [DONE]" and closed.count("data: [DONE]") == 1
    assert len(closed) == len(plain) + 1


def test_the_local_server_serves_local_folders_only(tmp_path):
    from genenv.llm.local_server import model_folder

    assert model_folder(str(tmp_path)) == tmp_path.resolve()
    with pytest.raises(ValueError, match="model must be a local model folder or one of .*'smollm2'.*got 'org/name'"):
        model_folder("org/name")  # a hub id: nothing is downloaded


def test_verifiers_finds_genenvs_benchmarks_by_taskset_id(verifiers_python, tasks, tmp_path):
    """Each built-in benchmark's id, and ``genenv_verifiers`` for any, resolves in verifiers' loader to genenv's env and
    taskset, without importing genenv first; ``vf.load_environment`` builds the env of the split's tasks."""
    taskset_ids = [f"genenv-{name.replace('_', '-')}" for name in BUILTIN] + ["genenv_verifiers"]
    request = {"ids": taskset_ids, "load": TASKSET, "split": SPLIT}
    result = run_verifiers(verifiers_python, "ids", request, tmp_path)
    for name, taskset_id in zip(BUILTIN, taskset_ids):
        title = "".join(part.capitalize() for part in name.split("_"))
        resolved = {
            "env": "GenEnvEnv",
            "taskset_config": f"{title}TasksetConfig",
            "benchmark": name,
            "task": "GenEnvTask",
        }
        assert result["resolved"][taskset_id] == resolved
    assert result["resolved"]["genenv_verifiers"]["taskset_config"] == "GenEnvTasksetConfig"
    assert result["env"] == "GenEnvEnv" and result["keys"] == list(tasks)
    assert "benchmark" in result["refusal"] and "'apibank'" in result["refusal"]  # genenv-apibank plays API-Bank only


def test_the_rubric_is_genenvs_score(verifiers_python, adapter, tasks, tmp_path):
    """verifiers' rubric on a trace of given replies: a gold trajectory scores 1, a hostile one 0, each exactly
    genenv's score of an episode of the same replies."""
    key, task = next(iter(tasks.items()))
    gold = [m["content"] for m in expert_messages(adapter, task) if m["role"] == "assistant"]
    hostile = ["[NoSuchApi(x='1')]", "I could not do it."]
    traces = [
        {"key": key, "replies": gold, "max_turns": len(gold)},
        {"key": key, "replies": hostile, "max_turns": MAX_TURNS},
    ]
    request = {"id": TASKSET, "split": SPLIT, "traces": traces}
    scores = run_verifiers(verifiers_python, "rubric", request, tmp_path)["scores"]
    assert scores == [1.0, 0.0]
    assert scores == [replay(adapter, task, t["replies"], t["max_turns"]).score for t in traces]


def test_vf_eval_plays_two_genenv_episodes_against_a_local_server(verifiers_python, chat_server, adapter, tasks,
                                                                   tmp_path):  # fmt: skip
    """``vf-eval genenv-apibank -n 2`` against the local server: each trace is exactly the episode genenv plays with
    the same replies (its user turns are the episode's prompt and observations), and its reward is genenv's official
    score of them."""
    vf_eval = Path(verifiers_python).with_name("vf-eval")
    command = [
        str(vf_eval), TASKSET, "-n", "2", "-c", "1", "-m", chat_server.model,
        "--client.base-url", chat_server.base_url, "--sampling.max-tokens", "24", "--sampling.temperature", "0",
        "--env.taskset.split", SPLIT, "--env.taskset.task.max-turns", str(MAX_TURNS),
        "--no-rich", "--no-push", "-o", str(tmp_path), "--run.dir", "eval",
    ]  # fmt: skip
    process = subprocess.run(
        command, env=verifiers_env(verifiers_python), cwd=tmp_path, capture_output=True, text=True, timeout=480
    )
    assert process.returncode == 0, f"vf-eval failed:\n{process.stderr[-6000:]}"
    episodes = [json.loads(line) for line in (tmp_path / "eval" / "traces.jsonl").read_text().splitlines()]
    assert len(episodes) == 2 and len({episode["task"]["key"] for episode in episodes}) == 2
    for episode in episodes:
        (trace,) = episode["traces"]
        assert not trace["errors"], trace["errors"]
        messages = [node["message"] for node in trace["nodes"]]
        replies = [message["content"] or "" for message in messages if message["role"] == "assistant"]
        users = [message["content"] for message in messages if message["role"] == "user"]
        assert replies, "the agent made no turn"
        played = replay(adapter, tasks[trace["task"]["key"]], replies, MAX_TURNS)
        assert played.ended and trace["stop_condition"] == "episode_over"
        assert users == [played.prompt, *played.observations]
        assert trace["rewards"]["official_score"]["score"] == played.score
