"""``python -m genenv.serve`` against careless clients: the real server on localhost, real WebSockets, its log read
back. Malformed frames get an error naming the cause and the same socket then plays an episode; abrupt disconnects
mid-episode free their sessions and cost at most one log line each, never a traceback."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, child_env, data_dir

pytest.importorskip("openenv", reason="needs the openenv extra: pip install 'genenv[openenv]'")
websockets_sync = pytest.importorskip("websockets.sync.client")

from test_serve_openenv import SPLIT, free_port, get_json, gold_actions, wait_for_sessions  # noqa: E402

from genenv.benchmarks.base import get_benchmark  # noqa: E402

DISCONNECTS = 100


class Server:
    """The server process, its http URL and its log (stdout and stderr together)."""

    def __init__(self, url: str, log: Path) -> None:
        self.url, self.log = url, log

    @property
    def ws(self) -> str:
        return self.url.replace("http://", "ws://") + "/ws"

    def log_lines(self) -> list[str]:
        return self.log.read_text(encoding="utf-8", errors="replace").splitlines()


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Server]:
    data_dir("apibank")
    port = free_port()
    log = tmp_path_factory.mktemp("serve") / "server.log"
    command = [sys.executable, "-m", "genenv.serve", "+bench=apibank", f"port={port}", f"split={SPLIT}", "max_turns=12"]
    with log.open("w") as out:
        process = subprocess.Popen(
            command, cwd=REPO, env=child_env(OMP_NUM_THREADS="1"), stdout=out, stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if get_json(f"{url}/health")["status"] == "healthy":
                    break
            except OSError:
                pass
            assert process.poll() is None, f"the server exited while starting: {log.read_text()}"
            assert time.monotonic() < deadline, "the server did not answer /health within 120 s"
            time.sleep(0.3)
        yield Server(url, log)
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def adapter():
    return get_benchmark("apibank").reporting_adapter()


@pytest.fixture(scope="module")
def tasks(adapter):
    return adapter.load_tasks(SPLIT)


#: (frame, the error code, words the error's message must hold)
HOSTILE_FRAMES = [
    ("[1,2,3]", "VALIDATION_ERROR", "must be a JSON object with a 'type'"),
    ('"reset"', "VALIDATION_ERROR", "got a string"),
    ("null", "VALIDATION_ERROR", "got null"),
    ("{this is not json", "INVALID_JSON", "Invalid JSON"),
    ("[" * 100_000 + "]" * 100_000, "INVALID_JSON", "nested too deeply"),
    (b"\x00\x01binary", "INVALID_JSON", "binary frame"),
    ('{"data": {}}', "UNKNOWN_TYPE", "unknown message type None"),
    ('{"type": ["reset"]}', "UNKNOWN_TYPE", "unknown message type ['reset']"),
    ('{"type": "jump"}', "UNKNOWN_TYPE", "unknown message type 'jump'"),
    ('{"type": "reset", "data": {"task_id": ["a", "b"]}}', "VALIDATION_ERROR", "data.task_id: Input should be a valid"),
    ('{"type": "reset", "data": {"seed": "seven"}}', "VALIDATION_ERROR", "data.seed: Input should be a valid integer"),
    ('{"type": "reset", "data": {"seed": -1}}', "VALIDATION_ERROR", "data.seed: Input should be greater than"),
    ('{"type": "reset", "data": {"tsak_id": "x"}}', "VALIDATION_ERROR", "data.tsak_id: Extra inputs"),
    ('{"type": "reset", "data": [1]}', "VALIDATION_ERROR", "invalid reset message: data: Input should be"),
    ('{"type": "step"}', "VALIDATION_ERROR", "invalid step message: data: Field required"),
    ('{"type": "step", "data": "API-Request: [X()]"}', "VALIDATION_ERROR", "data: Input should be a valid dict"),
    ('{"type": "step", "data": {"text": 7}}', "VALIDATION_ERROR", "data.text: Input should be a valid string"),
    ('{"type": "step", "data": {"text": "x", "more": 1}}', "VALIDATION_ERROR", "data.more: Extra inputs"),
    ('{"type": "state", "extra": true}', "VALIDATION_ERROR", "extra: Extra inputs"),
]


def reply(ws) -> dict:
    return json.loads(ws.recv(timeout=10))


def test_hostile_frames_are_answered_then_the_same_socket_plays(server, adapter, tasks):
    task = tasks[0]
    with websockets_sync.connect(server.ws) as ws:
        for frame, code, words in HOSTILE_FRAMES:
            ws.send(frame)
            error = reply(ws)
            assert error["type"] == "error" and error["data"]["code"] == code, frame
            assert words in error["data"]["message"], (frame[:80], error["data"]["message"])
        ws.send(json.dumps({"type": "reset", "data": {"task_id": 3, "seed": 1.5}}))  # pydantic's errors, each located
        errors = reply(ws)["data"]["errors"]
        assert sorted(tuple(e["loc"]) for e in errors) == [("data", "seed"), ("data", "task_id")]
        ws.send(json.dumps({"type": "reset", "data": {"task_id": "no-such-task"}}))  # valid frame, unknown task
        assert "unknown task_id 'no-such-task'" in reply(ws)["data"]["message"]
        ws.send(json.dumps({"type": "reset", "data": {"task_id": task.task_id, "episode_id": "after"}}))
        reset = reply(ws)
        assert reset["type"] == "observation" and task.prompt in reset["data"]["observation"]["text"]
        actions = gold_actions(adapter, task)
        for index, action in enumerate(actions):
            ws.send(json.dumps({"type": "step", "data": {"text": action}}))
            result = reply(ws)
            assert result["type"] == "observation" and result["data"]["done"] == (index == len(actions) - 1)
            if index == 0:  # hostile frames mid-episode: answered, and they cost no turn
                for frame, code, _ in HOSTILE_FRAMES:
                    ws.send(frame)
                    assert reply(ws)["data"]["code"] == code
        assert result["data"]["reward"] == 1.0
        ws.send(json.dumps({"type": "state"}))
        state = reply(ws)["data"]
    assert (state["task_id"], state["episode_id"], state["done"]) == (task.task_id, "after", True)
    assert state["step_count"] == len(actions)
    assert wait_for_sessions(server.url, 0, 10) == 0


def abrupt_disconnect(url: str, seed: int) -> None:
    """Start an episode, send a step and drop the connection at once, without a close frame (a TCP reset)."""
    with websockets_sync.connect(url) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
        assert reply(ws)["type"] == "observation"
        ws.send(json.dumps({"type": "step", "data": {"text": "API-Request: [NoSuchApi(x='1')]"}}))
        ws.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        ws.socket.close()


def test_abrupt_disconnects_cost_a_line_each_and_free_their_sessions(server, adapter, tasks):
    before = len(server.log_lines())
    for seed in range(DISCONNECTS):  # bounded, localhost only
        abrupt_disconnect(server.ws, seed)
    assert wait_for_sessions(server.url, 0, 30) == 0
    time.sleep(1)  # the last sessions' log lines
    lines = server.log_lines()[before:]
    assert len(lines) <= DISCONNECTS, "\n".join(lines[:40])
    assert not [line for line in lines if "Traceback" in line or "ERROR" in line or "Exception" in line]
    assert all("closed:" in line for line in lines), lines[:5]
    with websockets_sync.connect(server.ws) as ws:  # the server serves on
        ws.send(json.dumps({"type": "reset", "data": {"task_id": tasks[1].task_id}}))
        assert tasks[1].prompt in reply(ws)["data"]["observation"]["text"]
    assert get_json(f"{server.url}/health")["status"] == "healthy"


def test_clean_closes_log_nothing(server):
    before = len(server.log_lines())
    for seed in range(5):
        with websockets_sync.connect(server.ws) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
            reply(ws)
    with websockets_sync.connect(server.ws) as ws:
        ws.send(json.dumps({"type": "close"}))
    assert wait_for_sessions(server.url, 0, 10) == 0
    time.sleep(0.5)
    assert server.log_lines()[before:] == []


def test_the_environment_itself_refuses_wrong_reset_fields(adapter, tasks):
    """The same rules hold where frames do not pass the guard (OpenEnv's HTTP ``/reset``, in-process use)."""
    from genenv.integrations.openenv import ToolEnvEnvironment

    env = ToolEnvEnvironment(adapter, tasks, SPLIT)
    with pytest.raises(ValueError, match="invalid reset: task_id: Input should be a valid string"):
        env.reset(task_id=["a"])
    with pytest.raises(ValueError, match="invalid reset: tsak_id: Extra inputs are not permitted"):
        env.reset(tsak_id=tasks[0].task_id)
    assert tasks[0].prompt in env.reset(task_id=tasks[0].task_id).text
