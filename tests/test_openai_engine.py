"""``engine=openai`` against real servers on localhost: llama-cpp-python's OpenAI-compatible server on the embedded
SmolLM2 GGUF (the simulator writes schema-valid tasks through it, the agent plays evaluation episodes through it),
and a small stdlib HTTP server that misbehaves on purpose (429, 500, malformed JSON, timeouts, a refused
connection), under which the errors are clear and the pools already written stay intact."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import numpy as np
import pytest
from toy_benchmark import ToyAdapter

from genenv.agents.agent import Agent
from genenv.curriculum.sources import WrittenEachEpoch, WrittenOnce
from genenv.envs.simulator import Simulator
from genenv.envs.tool_env import ToolEnv
from genenv.evaluate import evaluate
from genenv.llm.engines import build_engine, resolve_engine
from genenv.llm.engines.openai import EndpointError, OpenAIConfig, OpenAIEngine
from genenv.llm.generation import SamplingConfig
from genenv.pools import JsonlPool, TaskPool

SERVER_PACKAGES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
TASK_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


class SchemaToyAdapter(ToyAdapter):
    """The toy benchmark with a generation schema: the simulator's answers are constrained to it."""

    def generation_schema(self, family: str) -> dict[str, Any]:
        return TASK_SCHEMA


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- llama.cpp's server on the SmolLM2 GGUF ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def llama_server(tmp_path_factory) -> Iterator[str]:
    """The base URL of ``python -m llama_cpp.server`` on the embedded SmolLM2 GGUF (one server for the module)."""
    missing = [name for name in SERVER_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(
            f"llama-cpp-python's server is not installed ({', '.join(missing)} missing): "
            'pip install "llama-cpp-python[server]==0.3.36" (scripts/setup.sh; builds llama.cpp from source)'
        )
    from genenv.llm.models import embedded_gguf_path

    try:
        gguf = embedded_gguf_path("smollm2")
    except ModuleNotFoundError as error:
        pytest.skip(f"no SmolLM2 GGUF: {error}")
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--n_threads", "1", "--n_threads_batch", "1",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if server.poll() is not None:
                pytest.fail(f"llama.cpp's server exited with {server.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp's server did not answer within 180 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield base_url
        if server.poll() is not None:
            pytest.fail(
                f"llama.cpp's server died with {server.returncode} (after an illegal instruction: rebuild it with "
                f'CMAKE_ARGS="-DGGML_NATIVE=OFF", scripts/setup.sh):\n{log.read_text()[-3000:]}'
            )
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def llama_config(base_url: str, **overrides: Any) -> OpenAIConfig:
    """llama-cpp-python's server takes a schema as ``{"type": "json_object", "schema": ...}``."""
    return OpenAIConfig(**{"base_url": base_url, "model": "smollm2", "schema_format": "json_object", **overrides})


def test_simulator_writes_schema_valid_tasks_through_llama_cpp(llama_server):
    simulator = Simulator(
        None,
        batch_size=2,
        sampling=SamplingConfig(max_new_tokens=48, temperature=0.8, top_p=0.95),
        engine="openai",
        openai=llama_config(llama_server),
    )
    proposals = simulator.propose(SchemaToyAdapter(), rng=np.random.default_rng(0), success={"small": 0.9})
    assert len(proposals) == 2
    for proposal in proposals:
        assert proposal.task is not None, proposal.reject_reason
        assert set(json.loads(proposal.raw)) == {"a", "b"}  # the grammar kept the answer inside the schema
    with pytest.raises(ValueError, match="no local weights"):  # nothing for RWR to update
        _ = simulator.policy


def test_evaluate_plays_the_agent_through_llama_cpp(llama_server):
    from genenv.llm.models import load_policy

    policy = load_policy("smollm2")  # the served model's tokenizer and chat template render the prompts
    engine = build_engine("openai", policy, openai=llama_config(llama_server, extra_body={"top_k": 0}))
    agent = Agent(policy, SamplingConfig(max_new_tokens=48), engine=engine)
    adapter = ToyAdapter()
    tasks = adapter.load_tasks("test")[:2]
    summary, episodes = evaluate(adapter, agent, tasks, batch_size=2, max_turns=2, progress=False)
    assert "per_family" in summary and len(episodes) == 2
    for episode in episodes:
        assert episode.trajectory.turns and all(turn.action for turn in episode.trajectory.turns)
    # greedy decoding through the server is deterministic: the same prompt gives the same actions
    again = agent.rollout([ToolEnv(adapter, tasks=tasks, max_turns=2)], [tasks[0]])
    assert [t.action for t in again[0].trajectory.turns] == [t.action for t in episodes[0].trajectory.turns]


def test_the_evaluate_command_with_engine_openai(llama_server, tmp_path):
    from hydra import compose, initialize_config_dir

    from genenv.config import CONFIG_DIR
    from genenv.evaluate import run

    server = [f"openai.base_url={llama_server}", "openai.model=smollm2"]
    overrides = ["+bench=reasoning_gym", "model=smollm2", "engine=openai", *server, "limit=2", "max_turns=1",
                 "max_new_tokens=24", f"output_dir={tmp_path}"]  # fmt: skip
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("evaluate", overrides=overrides)
    results = json.loads((run(cfg) / "results.json").read_text())
    assert results["engine"] == "openai" and results["n_tasks"] == 2
    assert all(episode["actions"] and episode["actions"][0] for episode in results["episodes"])


def test_a_genenv_epoch_with_the_simulator_on_llama_cpp(llama_server, tmp_path, caplog):
    pytest.importorskip("reasoning_gym")
    from test_train import tiny_config

    from genenv.coevolution import CoEvolutionTrainer
    from genenv.pools import TaskPool

    config = tiny_config(
        tmp_path, benchmark="reasoning_gym", data_dir=None, epochs=1, validation_split="validation", replay_tasks=0,
        simulator_max_new_tokens=48, simulator_engine="openai", simulator_openai=llama_config(llama_server),
    )  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="genenv.curriculum.rwr"):
        (metrics,) = CoEvolutionTrainer(config).train()
    assert any("RWR is off" in record.getMessage() for record in caplog.records)
    assert metrics["proposals"] == 2 and metrics["fresh_tasks"] >= 1 and metrics["simulator"] == {}
    assert len(TaskPool(tmp_path / "pools")) == 2  # D_env committed with the epoch


# -- a server that misbehaves on purpose ---------------------------------------------------------------------------
@dataclass
class Reply:
    status: int = 200
    body: str = ""
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def chat_reply(content: str) -> Reply:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
    return Reply(body=json.dumps({"object": "chat.completion", "choices": [choice]}))


@dataclass
class Script:
    """What the server answers: the replies in order, the last one for every further request."""

    replies: list[Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, request: dict[str, Any]) -> Reply:
        with self.lock:
            self.requests.append(request)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def done(self) -> None:
        with self.lock:
            self.in_flight -= 1


@pytest.fixture
def stub() -> Iterator[tuple[str, Script]]:
    """A real HTTP server on localhost whose answers a test scripts; yields its base URL and the script."""
    script = Script([chat_reply("{}")])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            request = {
                "path": self.path,
                "auth": self.headers.get("Authorization"),
                **json.loads(self.rfile.read(length)),
            }
            reply = script.next(request)
            time.sleep(reply.delay)
            script.done()  # before the answer goes out: the client may send its next request as soon as it has it
            try:
                self.send_response(reply.status)
                for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body.encode())))
                self.end_headers()
                self.wfile.write(reply.body.encode())
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", script
    finally:
        server.shutdown()
        server.server_close()


def stub_engine(base_url: str, **overrides: Any) -> OpenAIEngine:
    return OpenAIEngine(OpenAIConfig(**{"base_url": base_url, "backoff_s": 0.01, "max_retries": 2, **overrides}))


CHAT = ([[{"role": "user", "content": "hi"}]], SamplingConfig(max_new_tokens=8))


def test_429_and_500_are_retried_with_backoff(stub):
    base_url, script = stub
    script.replies[:] = [Reply(429, '{"error": "slow down"}'), Reply(503, "busy"), chat_reply("hello")]
    assert stub_engine(base_url).chat(*CHAT) == ["hello"]
    assert len(script.requests) == 3 and script.requests[0]["path"] == "/v1/chat/completions"


def test_a_server_error_that_persists_names_url_and_status(stub):
    base_url, script = stub
    script.replies[:] = [Reply(500, '{"error": "model crashed"}')]
    with pytest.raises(EndpointError, match=r"POST http://127\.0\.0\.1:\d+/v1/chat/completions: HTTP 500.*3 tries"):
        stub_engine(base_url).chat(*CHAT)
    assert len(script.requests) == 3


def test_a_client_error_is_not_retried_and_a_refused_key_names_its_variable(stub, monkeypatch):
    base_url, script = stub
    monkeypatch.setenv("GENENV_TEST_KEY", "sk-test")
    script.replies[:] = [Reply(401, '{"error": "bad key"}')]
    with pytest.raises(EndpointError, match=r"HTTP 401.*\$GENENV_TEST_KEY: set"):
        stub_engine(base_url, api_key_env="GENENV_TEST_KEY").chat(*CHAT)
    assert len(script.requests) == 1 and script.requests[0]["auth"] == "Bearer sk-test"


def test_malformed_json_is_a_clear_error(stub):
    base_url, script = stub
    script.replies[:] = [Reply(200, '{"choices": [{"message": ')]
    with pytest.raises(EndpointError, match="malformed JSON body"):
        stub_engine(base_url).chat(*CHAT)
    script.replies[:] = [Reply(200, '{"object": "error"}')]
    with pytest.raises(EndpointError, match="no choices"):
        stub_engine(base_url).chat(*CHAT)


def test_timeouts_are_retried_then_reported(stub):
    base_url, script = stub
    script.replies[:] = [Reply(delay=1.0, body="{}")]
    with pytest.raises(EndpointError, match=r"no answer within 0\.2 s \(after 2 tries\)"):
        stub_engine(base_url, timeout_s=0.2, max_retries=1).chat(*CHAT)
    assert len(script.requests) == 2


def test_a_server_that_is_down_is_a_clear_error():
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EndpointError, match=rf"POST {base_url}/chat/completions: cannot connect.*server running"):
        stub_engine(base_url, max_retries=1).chat(*CHAT)


def test_requests_in_flight_stay_within_the_concurrency_limit(stub):
    base_url, script = stub
    script.replies[:] = [Reply(body=chat_reply("ok").body, delay=0.2)]
    conversations = [[{"role": "user", "content": str(i)}] for i in range(6)]
    engine = stub_engine(base_url, max_concurrency=2)
    assert engine.chat(conversations, SamplingConfig(max_new_tokens=8), seed=5) == ["ok"] * 6
    assert script.most_in_flight == 2
    assert sorted(request["seed"] for request in script.requests) == [5, 6, 7, 8, 9, 10]  # one seed per row


def test_schemas_go_out_as_response_format(stub):
    base_url, script = stub
    script.replies[:] = [chat_reply('{"a": 1, "b": 2}')]
    stub_engine(base_url).chat(*CHAT, schemas=[TASK_SCHEMA])
    stub_engine(base_url, schema_format="json_object").chat(*CHAT, schemas=[TASK_SCHEMA])
    openai_form, llama_cpp_form = (request["response_format"] for request in script.requests)
    assert openai_form == {"type": "json_schema", "json_schema": {"name": "answer", "schema": TASK_SCHEMA}}
    assert llama_cpp_form == {"type": "json_object", "schema": TASK_SCHEMA}


def test_token_level_turns_go_out_as_text_and_come_back_as_token_ids(stub, tiny_policy):
    base_url, script = stub
    tokenizer = tiny_policy.tokenizer
    replies = [("Sure.", "stop"), ("It is", "length")]
    script.replies[:] = [Reply(body=json.dumps({"choices": [{"text": t, "finish_reason": f}]})) for t, f in replies]
    engine = OpenAIEngine(OpenAIConfig(base_url=base_url, max_concurrency=1), tokenizer)
    prompts = [tokenizer("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")["input_ids"], [65, 66]]
    new_ids, logprobs = engine.generator(SamplingConfig(max_new_tokens=5), seed=3)(prompts)
    assert logprobs is None
    assert [request["prompt"] for request in script.requests] == [tokenizer.decode(ids) for ids in prompts]
    assert script.requests[0]["prompt"].startswith("<|im_start|>user")  # special tokens go out as their text
    assert [request["path"] for request in script.requests] == ["/v1/completions"] * 2
    assert [request["seed"] for request in script.requests] == [3, 4] and script.requests[0]["max_tokens"] == 5
    # the answer's token ids, with the end-of-turn token where the server stopped on its own
    assert new_ids == [tokenizer("Sure.")["input_ids"] + [tokenizer.eos_token_id], tokenizer("It is")["input_ids"]]


@pytest.mark.parametrize(
    ("setting", "message"),
    [({"timeout_s": "abc"}, "timeout_s must be int or float"), ({"base_url": "localhost:8080"}, "http:// or https://"),
     ({"schema_format": "xml"}, "json_schema or json_object"), ({"max_concurrency": 0}, "max_concurrency >= 1")],
)  # fmt: skip
def test_settings_are_checked(setting, message):
    with pytest.raises(ValueError, match=message):
        OpenAIConfig(**setting)


def test_an_endpoint_cannot_play_grpo_rollouts():
    with pytest.raises(ValueError, match="cannot play GRPO rollouts"):
        resolve_engine("openai", device="cpu", purpose="rollout")
    with pytest.raises(ValueError, match="log-probabilities"):
        stub_engine("http://127.0.0.1:9/v1").generator(SamplingConfig(), logprobs=True)


def test_pools_already_written_survive_a_failing_endpoint(stub, tmp_path):
    """A static/offline pool draft keeps the batches written before the server failed, and the run continues from
    them; a GenEnv epoch that fails leaves the committed D_env as it was."""
    base_url, script = stub
    adapter = SchemaToyAdapter()
    simulator = Simulator(None, batch_size=1, engine="openai", openai=OpenAIConfig(base_url=base_url, max_retries=0))
    script.replies[:] = [chat_reply('{"a": 1, "b": 2}'), chat_reply('{"a": 3, "b": 4}'), Reply(500, "down")]
    pool = TaskPool(tmp_path)
    writer = WrittenOnce(adapter, pool, tmp_path, size=4, seed=0, generation_rounds=1)
    with pytest.raises(EndpointError, match="HTTP 500"):
        writer.write_pool(simulator)
    draft = JsonlPool(tmp_path, "pool_draft")
    assert [r["task"]["task_id"] for r in draft.records()] == ["toy-1-2", "toy-3-4"] and draft.committed_epoch == 1

    pool.add_proposals(draft.records(), epoch=0, r_env=0.0, weight=1.0, kept=True)
    pool.commit(0)
    before = pool.records()
    each_epoch = WrittenEachEpoch(adapter, pool, generation_rounds=1, conditioned=True)
    with pytest.raises(EndpointError):
        each_epoch.epoch_tasks(simulator, 1, 2, np.random.default_rng(0), {})
    assert TaskPool(tmp_path).records() == before and not TaskPool(tmp_path).uncommitted()

    script.replies[:] = [chat_reply('{"a": 5, "b": 6}'), chat_reply('{"a": 7, "b": 8}')]
    written = WrittenOnce(adapter, pool, tmp_path, size=4, seed=0, generation_rounds=1).write_pool(simulator)
    assert [task.task_id for task in written.fresh] == ["toy-1-2", "toy-3-4", "toy-5-6", "toy-7-8"]
    assert len(script.requests) == 3 + 1 + 2  # the two drafted batches were not asked for again


def test_a_genenv_trainer_with_an_endpoint_simulator_says_rwr_is_off(stub, tmp_path, caplog):
    from test_train import tiny_config

    from genenv.coevolution import CoEvolutionTrainer

    base_url, _ = stub
    config = tiny_config(tmp_path, simulator_engine="openai", simulator_openai=OpenAIConfig(base_url=base_url))
    with caplog.at_level(logging.WARNING, logger="genenv.curriculum.rwr"):
        trainer = CoEvolutionTrainer(config)
    trainer.lock.release()
    assert trainer.simulator_trainer is None and trainer.simulator_policy is None
    assert any("RWR is off" in record.getMessage() and base_url in record.getMessage() for record in caplog.records)
    assert trainer.simulator.engine_name == "openai"
