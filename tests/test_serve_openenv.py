"""``python -m genenv.serve`` end to end: the real server on localhost, played with OpenEnv's own client."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator

import pytest
from conftest import REPO, child_env, data_dir

pytest.importorskip("openenv", reason="needs the openenv extra: pip install 'genenv[openenv]'")
websockets_sync = pytest.importorskip("websockets.sync.client")

from genenv.benchmarks.base import get_benchmark  # noqa: E402
from genenv.envs.expert import expert_messages  # noqa: E402
from genenv.envs.tool_env import ToolEnv  # noqa: E402
from genenv.integrations.openenv import GenEnvAction, GenEnvClient  # noqa: E402

SPLIT, MAX_TURNS, MAX_ACTION_CHARS, IDLE_TIMEOUT_S = "level-3", 12, 4096, 4
HOSTILE = [
    "[NoSuchApi(x='1')]",
    "API-Request: [QueryMeeting(user_name='Mallory')]",
    "API-Request: [ToolSearcher(keywords=__import__('os').system('true'))]",
    "I could not do it.",
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The server on a free localhost port, started once for the module; yields its http URL."""
    data_dir("apibank")
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "genenv.serve",
        "+bench=apibank",
        f"port={port}",
        f"split={SPLIT}",
        f"max_turns={MAX_TURNS}",
        "max_sessions=16",
        f"max_action_chars={MAX_ACTION_CHARS}",
        f"idle_timeout_s={IDLE_TIMEOUT_S}",
    ]
    process = subprocess.Popen(command, cwd=REPO, env=child_env(OMP_NUM_THREADS="1"))
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if get_json(f"{url}/health")["status"] == "healthy":
                    break
            except OSError:
                pass
            assert process.poll() is None, "the server exited while starting"
            assert time.monotonic() < deadline, "the server did not answer /health within 120 s"
            time.sleep(0.3)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def adapter():
    return get_benchmark("apibank").reporting_adapter()


@pytest.fixture(scope="module")
def tasks(adapter):
    return adapter.load_tasks(SPLIT)


def gold_actions(adapter, task) -> list[str]:
    return [m["content"] for m in expert_messages(adapter, task) if m["role"] == "assistant"]


def in_process(adapter, task, actions: list[str]) -> tuple[list[str], float]:
    """The observations and reward of ``actions`` played by ``ToolEnv.step`` in this process."""
    env = ToolEnv(adapter, tasks=[task], split=SPLIT, max_turns=MAX_TURNS, max_action_chars=MAX_ACTION_CHARS)
    env.reset(options={"task": task})
    texts, reward = [], 0.0
    for action in actions:
        text, reward, terminated, truncated, _ = env.step(action)
        texts.append(text)
        if terminated or truncated:
            break
    return texts, reward


def wait_for_sessions(url: str, active: int, timeout_s: float) -> int:
    deadline = time.monotonic() + timeout_s
    while (count := get_json(f"{url}/sessions")["active"]) != active and time.monotonic() < deadline:
        time.sleep(0.2)
    return count


def test_schema_health_metadata(server):
    assert get_json(f"{server}/health")["status"] == "healthy"
    schema = get_json(f"{server}/schema")
    assert schema["action"]["properties"]["text"]["maxLength"] == MAX_ACTION_CHARS
    assert {"text", "tools", "error", "score_breakdown"} <= set(schema["observation"]["properties"])
    assert {"task_id", "benchmark", "episode_id", "step_count"} <= set(schema["state"]["properties"])
    assert get_json(f"{server}/metadata")["name"] == "genenv-apibank"
    assert get_json(f"{server}/sessions")["max"] == 16


def test_gold_episode_scores_one(server, adapter, tasks):
    task = tasks[0]
    actions = gold_actions(adapter, task)
    expected, expected_reward = in_process(adapter, task, actions)
    assert len(actions) >= 3 and expected_reward == 1.0
    with GenEnvClient(base_url=server).sync() as env:
        result = env.reset(task_id=task.task_id, episode_id="gold")
        assert task.prompt in result.observation.text and result.observation.tools
        assert "gold" not in result.observation.task and not result.done
        texts = []
        for index, action in enumerate(actions):
            result = env.step(GenEnvAction(text=action))
            texts.append(result.observation.text)
            assert result.done == (index == len(actions) - 1)
        assert result.reward == 1.0 and result.observation.score_breakdown["sample_correct"]
        state = env.state()
        assert (state.task_id, state.episode_id, state.done) == (task.task_id, "gold", True)
        assert state.step_count == len(actions)
    assert texts == expected


def test_hostile_episode_scores_zero(server, adapter, tasks):
    with GenEnvClient(base_url=server).sync() as env:
        env.reset(task_id=tasks[0].task_id)
        results = [env.step(action) for action in HOSTILE]
    assert [r.done for r in results] == [False] * (len(HOSTILE) - 1) + [True]
    assert [r.observation.error for r in results[:2]] == ["unknown_tool", "execution_error"]
    assert results[-1].reward == 0.0
    assert in_process(adapter, tasks[0], HOSTILE)[1] == 0.0


def test_eight_concurrent_sessions_stay_isolated(server, adapter, tasks):
    """Eight clients play eight tasks at once, gold and hostile interleaved turn by turn; each sees exactly what its
    own episode shows in process."""
    plays = [(task, gold_actions(adapter, task) if i % 2 == 0 else HOSTILE) for i, task in enumerate(tasks[:8])]

    async def play(task, actions, barrier: asyncio.Barrier) -> tuple[list[str], float, str]:
        async with GenEnvClient(base_url=server) as env:
            await env.reset(task_id=task.task_id)
            await barrier.wait()
            texts, reward = [], 0.0
            for action in actions:
                result = await env.step(action)
                texts.append(result.observation.text)
                reward = result.reward
                await asyncio.sleep(0)
            return texts, reward, (await env.state()).task_id

    async def main():
        barrier = asyncio.Barrier(len(plays))
        return await asyncio.gather(*(play(task, actions, barrier) for task, actions in plays))

    outcomes = asyncio.run(main())
    for (task, actions), (texts, reward, task_id) in zip(plays, outcomes, strict=True):
        assert task_id == task.task_id
        assert (texts, reward) == in_process(adapter, task, actions)
        assert reward == (1.0 if actions is not HOSTILE else 0.0)
    assert wait_for_sessions(server, 0, 10) == 0


def ws_url(server: str) -> str:
    return server.replace("http://", "ws://") + "/ws"


def test_malformed_json_is_answered_and_the_session_survives(server, tasks):
    with websockets_sync.connect(ws_url(server)) as ws:
        ws.send("{this is not json")
        error = json.loads(ws.recv(timeout=10))
        assert error["type"] == "error" and error["data"]["code"] == "INVALID_JSON"
        ws.send(json.dumps({"type": "step", "data": {"txt": "no such field"}}))
        error = json.loads(ws.recv(timeout=10))
        assert error["data"]["code"] == "VALIDATION_ERROR" and "text" in json.dumps(error["data"]["errors"])
        ws.send(json.dumps({"type": "reset", "data": {"task_id": tasks[1].task_id}}))
        reply = json.loads(ws.recv(timeout=10))
        assert reply["type"] == "observation" and tasks[1].prompt in reply["data"]["observation"]["text"]


def test_unknown_session_and_unknown_task_are_named(server):
    with websockets_sync.connect(ws_url(server) + "?session_id=no-such-session") as ws:
        error = json.loads(ws.recv(timeout=10))
    assert error["type"] == "error" and "Unknown session_id: no-such-session" in error["data"]["message"]
    with GenEnvClient(base_url=server).sync() as env:
        with pytest.raises(RuntimeError, match="unknown task_id 'nope'"):
            env.reset(task_id="nope")


def test_oversized_actions_are_refused_clearly(server, adapter, tasks):
    with GenEnvClient(base_url=server).sync() as env:
        env.reset(task_id=tasks[0].task_id)
        with pytest.raises(RuntimeError, match=f"4097 characters; this server takes at most {MAX_ACTION_CHARS}"):
            env.step("x" * (MAX_ACTION_CHARS + 1))
        result = env.step(gold_actions(adapter, tasks[0])[0])  # the refused action cost no turn
        assert result.observation.turn == 1 and result.observation.error is None
    with websockets_sync.connect(ws_url(server), max_size=None) as ws:  # beyond the frame limit: the socket closes
        ws.send(json.dumps({"type": "step", "data": {"text": "y" * (20 * MAX_ACTION_CHARS + 70_000)}}))
        with pytest.raises(Exception) as closed:
            ws.recv(timeout=10)
    assert getattr(closed.value, "rcvd", None) is not None and closed.value.rcvd.code == 1009
    assert get_json(f"{server}/health")["status"] == "healthy"


CLIENT = textwrap.dedent(
    """
    import sys, time
    from genenv.integrations.openenv import GenEnvClient
    env = GenEnvClient(base_url=sys.argv[1]).sync()
    env.connect()
    env.reset(task_id=sys.argv[2])
    env.step("[NoSuchApi(x='1')]")
    print("mid-episode", flush=True)
    time.sleep(600)
    """
)


@pytest.mark.parametrize("how", ["killed", "frozen"])
def test_a_dead_client_loses_its_session_and_the_server_lives(server, tasks, how):
    """A killed client's socket closes; a frozen one stops answering pings and is dropped after the idle timeout."""
    assert wait_for_sessions(server, 0, 10) == 0
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT, server, tasks[2].task_id], stdout=subprocess.PIPE, text=True, env=child_env()
    )
    try:
        assert client.stdout.readline().strip() == "mid-episode"
        assert get_json(f"{server}/sessions")["active"] == 1
        os.kill(client.pid, signal.SIGKILL if how == "killed" else signal.SIGSTOP)
        assert wait_for_sessions(server, 0, 5 * IDLE_TIMEOUT_S) == 0
    finally:
        client.kill()
        client.wait()
    with GenEnvClient(base_url=server).sync() as env:
        assert not env.reset(task_id=tasks[2].task_id).done
