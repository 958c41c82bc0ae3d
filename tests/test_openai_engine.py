"""``engine=openai`` against real servers on localhost (``local_server.py``): ``transformers serve`` on the tiny
model, which the default set-up installs (no constrained output: the probe finds neither form, one log line); where the
opt-in ``llama-server`` extra is installed, llama-cpp-python's server on the embedded SmolLM2 GGUF (schema-constrained
output: the simulator writes schema-valid tasks through it); and a small stdlib HTTP server that misbehaves on purpose
(429, 500, malformed JSON, timeouts, a refused connection, a 500 on ``json_schema``), under which the errors are clear,
nothing is retried in a storm and the pools already written stay intact."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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

TASK_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
ENGINE_LOGGER = "genenv.llm.engines.openai"


class SchemaToyAdapter(ToyAdapter):
    """The toy benchmark with a generation schema: the simulator's answers are constrained to it."""

    def generation_schema(self, family: str) -> dict[str, Any]:
        return TASK_SCHEMA


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def watched(engine: OpenAIEngine) -> list[dict[str, Any]]:
    """The bodies of the requests ``engine`` sends from now on, in order (an httpx event hook: what went out)."""
    sent: list[dict[str, Any]] = []
    engine._client.event_hooks["request"].append(lambda request: sent.append(json.loads(request.content)))
    return sent


def engine_records(caplog) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == ENGINE_LOGGER]


# -- transformers serve on the tiny model -----------------------------------------------------------------------------
def test_the_probe_learns_once_that_transformers_serve_enforces_no_schema(transformers_server, caplog):
    """transformers serve ignores ``response_format`` (it answers, unconstrained): the probe rules out both forms in
    two requests and says so in one line; schema-constrained calls then go out without a ``response_format``."""
    engine = OpenAIEngine(OpenAIConfig(base_url=transformers_server.base_url, model=transformers_server.model))
    sent = watched(engine)
    conversations = [[{"role": "user", "content": f"Write task {i}."}] for i in range(2)]
    sampling = SamplingConfig(max_new_tokens=8)
    with caplog.at_level(logging.INFO, logger=ENGINE_LOGGER):
        first = engine.chat(conversations, sampling, schemas=[TASK_SCHEMA] * 2)
        second = engine.chat(conversations, sampling, schemas=[TASK_SCHEMA] * 2)
    assert len(first) == len(second) == 2 and all(isinstance(text, str) for text in first + second)
    assert engine.schema_support() == "none"
    probes, rows = sent[:2], sent[2:]
    assert [probe["response_format"]["type"] for probe in probes] == ["json_schema", "json_object"]
    assert len(rows) == 4 and not any("response_format" in row for row in rows)  # no second probe
    (line,) = engine_records(caplog)
    message = line.getMessage()
    assert line.levelno == logging.WARNING and transformers_server.base_url in message
    assert "no constrained output" in message and "json_schema: not enforced" in message
    assert "json_object: not enforced" in message


def test_the_simulator_through_transformers_serve_keeps_or_rejects_each_task_with_a_reason(transformers_server):
    server = OpenAIConfig(base_url=transformers_server.base_url, model=transformers_server.model)
    simulator = Simulator(
        None, batch_size=2, sampling=SamplingConfig(max_new_tokens=16), engine="openai", openai=server
    )
    proposals = simulator.propose(SchemaToyAdapter(), rng=np.random.default_rng(0), success={"small": 0.9})
    assert len(proposals) == 2
    assert all((proposal.task is None) == bool(proposal.reject_reason) for proposal in proposals)
    with pytest.raises(ValueError, match="no local weights"):  # nothing for RWR to update
        _ = simulator.policy


def test_transformers_serve_generates_the_local_models_tokens(transformers_server, tiny_policy):
    """The server holds the tiny model's weights: token ids sent as text to ``/completions`` come back as the tokens
    the local ``hf`` engine generates, greedy (up to its end-of-turn token, which the engine appends on a stop)."""
    from genenv.llm.engines.hf import hf_generator

    tokenizer = tiny_policy.tokenizer
    server = OpenAIConfig(base_url=transformers_server.base_url, model=transformers_server.model)
    prompts = [tokenizer(text)["input_ids"] for text in ("hello", "b", "world 1", "<|im_start|>user\nhi<|im_end|>\n")]
    sampling = SamplingConfig(max_new_tokens=12)
    remote, _ = OpenAIEngine(server, tokenizer).generator(sampling)(prompts)
    local = hf_generator(tiny_policy.model, tokenizer, sampling)(prompts)[0]
    eos = tokenizer.eos_token_id
    assert remote == [row[: row.index(eos) + 1] if eos in row else row for row in local]
    assert len({tuple(row) for row in remote}) > 1  # the prompts lead somewhere different


def test_evaluate_plays_the_agent_through_transformers_serve(transformers_server):
    from genenv.llm.models import load_policy

    policy = load_policy("tiny")
    server = OpenAIConfig(base_url=transformers_server.base_url, model=transformers_server.model)
    adapter = ToyAdapter()
    tasks = adapter.load_tasks("test")[:2]
    sampling = SamplingConfig(max_new_tokens=12)
    remote = Agent(policy, sampling, engine=build_engine("openai", policy, openai=server))
    local = Agent(policy, sampling, engine=build_engine("hf", policy))
    summary, episodes = evaluate(adapter, remote, tasks, batch_size=2, max_turns=2, progress=False)
    _, expected = evaluate(adapter, local, tasks, batch_size=2, max_turns=2, progress=False)
    assert "per_family" in summary and len(episodes) == 2 and all(e.trajectory.turns for e in episodes)
    actions = [[turn.action for turn in episode.trajectory.turns] for episode in episodes]
    assert actions == [[turn.action for turn in episode.trajectory.turns] for episode in expected]


def test_the_evaluate_command_with_engine_openai(transformers_server, tmp_path):
    """``limit=2`` of reasoning-gym's test split: two tasks of two families (the limit spreads over families)."""
    from hydra import compose, initialize_config_dir

    from genenv.config import CONFIG_DIR
    from genenv.evaluate import run

    server = [f"openai.base_url={transformers_server.base_url}", f"openai.model={transformers_server.model}"]
    overrides = ["+bench=reasoning_gym", "model=tiny", "engine=openai", *server, "limit=2", "max_turns=1",
                 "max_new_tokens=12", f"output_dir={tmp_path}"]  # fmt: skip
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("evaluate", overrides=overrides)
    results = json.loads((run(cfg) / "results.json").read_text())
    assert results["engine"] == "openai" and results["n_tasks"] == 2
    assert len({episode["family"] for episode in results["episodes"]}) == 2
    assert all(len(episode["actions"]) == 1 for episode in results["episodes"])  # one turn each, played by the server


@pytest.mark.parametrize("server_name", ["transformers_server", "llama_server"])
def test_a_genenv_epoch_with_the_simulator_on_an_endpoint(server_name, request, tmp_path, caplog):
    """One co-evolution epoch whose simulator is the server: RWR is off, both proposals are recorded in D_env; under
    llama.cpp's constraint at least one is a fresh task."""
    pytest.importorskip("reasoning_gym")
    from test_train import tiny_config

    from genenv.coevolution import CoEvolutionTrainer

    server = request.getfixturevalue(server_name)
    config = tiny_config(
        tmp_path, benchmark="reasoning_gym", data_dir=None, epochs=1, validation_split="validation", replay_tasks=0,
        simulator_max_new_tokens=48, simulator_engine="openai",
        simulator_openai=OpenAIConfig(base_url=server.base_url, model=server.model),
    )  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="genenv.curriculum.rwr"):
        (metrics,) = CoEvolutionTrainer(config).train()
    assert any("RWR is off" in record.getMessage() for record in caplog.records)
    assert metrics["proposals"] == 2 and metrics["simulator"] == {}
    assert metrics["fresh_tasks"] + metrics["rejects"] == 2
    if server_name == "llama_server":
        assert metrics["fresh_tasks"] >= 1
    assert len(TaskPool(tmp_path / "pools")) == 2  # D_env committed with the epoch


# -- llama.cpp's server on the SmolLM2 GGUF (the opt-in llama-server extra) -----------------------------------------
def test_the_simulator_writes_schema_valid_tasks_through_llama_cpp(llama_server, caplog):
    """llama-cpp-python's server enforces a schema: the probe finds a form it enforces (one line), and the
    simulator's answers are inside the schema."""
    server = OpenAIConfig(base_url=llama_server.base_url, model=llama_server.model)
    sampling = SamplingConfig(max_new_tokens=48, temperature=0.8, top_p=0.95)
    simulator = Simulator(None, batch_size=2, sampling=sampling, engine="openai", openai=server)
    with caplog.at_level(logging.INFO, logger=ENGINE_LOGGER):
        proposals = simulator.propose(SchemaToyAdapter(), rng=np.random.default_rng(0), success={"small": 0.9})
    (line,) = engine_records(caplog)
    assert simulator.engine.schema_support() in line.getMessage() and "constrained output by" in line.getMessage()
    assert simulator.engine.schema_support() in ("json_schema", "json_object")
    assert len(proposals) == 2
    for proposal in proposals:
        assert proposal.task is not None, proposal.reject_reason
        assert set(json.loads(proposal.raw)) == {"a", "b"}  # the grammar kept the answer inside the schema


def test_evaluate_plays_the_agent_through_llama_cpp(llama_server):
    from genenv.llm.models import load_policy

    policy = load_policy("smollm2")  # the served model's tokenizer and chat template render the prompts
    server = OpenAIConfig(base_url=llama_server.base_url, model=llama_server.model, extra_body={"top_k": 0})
    agent = Agent(policy, SamplingConfig(max_new_tokens=48), engine=build_engine("openai", policy, openai=server))
    adapter = ToyAdapter()
    tasks = adapter.load_tasks("test")[:2]
    summary, episodes = evaluate(adapter, agent, tasks, batch_size=2, max_turns=2, progress=False)
    assert "per_family" in summary and len(episodes) == 2
    for episode in episodes:
        assert episode.trajectory.turns and all(turn.action for turn in episode.trajectory.turns)
    # greedy decoding through the server is deterministic: the same prompt gives the same actions
    again = agent.rollout([ToolEnv(adapter, tasks=tasks, max_turns=2)], [tasks[0]])
    assert [t.action for t in again[0].trajectory.turns] == [t.action for t in episodes[0].trajectory.turns]


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


def test_transient_statuses_and_one_500_are_retried_with_backoff(stub):
    base_url, script = stub
    script.replies[:] = [Reply(429, '{"error": "slow down"}'), Reply(503, "busy"), Reply(500, "oops"), chat_reply("hi")]
    assert stub_engine(base_url, max_retries=3).chat(*CHAT) == ["hi"]
    assert len(script.requests) == 4 and script.requests[0]["path"] == "/v1/chat/completions"


def test_a_500_that_persists_is_tried_twice_and_names_url_and_status(stub):
    base_url, script = stub
    script.replies[:] = [Reply(500, '{"error": "model crashed"}')]
    with pytest.raises(EndpointError, match=r"POST http://127\.0\.0\.1:\d+/v1/chat/completions: HTTP 500.*2 tries"):
        stub_engine(base_url, max_retries=4).chat(*CHAT)
    assert len(script.requests) == 2  # not 5: a second 500 is the request's


def test_a_server_that_fails_on_json_schema_is_probed_once_and_gets_json_object(stub, caplog):
    """The server of the report: ``json_schema`` gives HTTP 500. The probe costs one request per form, not a retry
    storm; the rows go out as ``json_object``, and later calls ask nothing again."""
    base_url, script = stub
    script.replies[:] = [Reply(500, '{"error": "unsupported response_format"}'), chat_reply('{"answer": "yes"}'),
                         chat_reply('{"a": 1, "b": 2}')]  # fmt: skip
    engine = stub_engine(base_url, max_retries=4)
    with caplog.at_level(logging.INFO, logger=ENGINE_LOGGER):
        assert engine.chat(*CHAT, schemas=[TASK_SCHEMA]) == ['{"a": 1, "b": 2}']
        assert engine.chat(*CHAT, schemas=[TASK_SCHEMA]) == ['{"a": 1, "b": 2}']
    forms = [request["response_format"]["type"] for request in script.requests]
    assert forms == ["json_schema", "json_object", "json_object", "json_object"]
    assert script.requests[0]["response_format"]["json_schema"]["schema"]["required"] == ["answer"]  # the probe's
    assert script.requests[2]["response_format"] == {"type": "json_object", "schema": TASK_SCHEMA}
    (line,) = engine_records(caplog)
    assert line.levelno == logging.INFO and engine.schema_support() == "json_object"
    assert "constrained output by response_format json_object (json_schema: refused (HTTP 500" in line.getMessage()


def test_a_probe_that_cannot_reach_the_server_is_an_error_not_a_finding():
    engine = stub_engine(f"http://127.0.0.1:{free_port()}/v1", max_retries=0)
    with pytest.raises(EndpointError, match="cannot connect"):
        engine.schema_support()
    assert engine._schema_support is None  # asked again on the next call


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


def test_a_configured_schema_format_is_used_without_a_probe(stub):
    base_url, script = stub
    script.replies[:] = [chat_reply('{"a": 1, "b": 2}')]
    stub_engine(base_url, schema_format="json_schema").chat(*CHAT, schemas=[TASK_SCHEMA])
    stub_engine(base_url, schema_format="json_object").chat(*CHAT, schemas=[TASK_SCHEMA])
    stub_engine(base_url, schema_format="none").chat(*CHAT, schemas=[TASK_SCHEMA])
    openai_form, llama_cpp_form, unconstrained = script.requests
    assert openai_form["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": TASK_SCHEMA},
    }
    assert llama_cpp_form["response_format"] == {"type": "json_object", "schema": TASK_SCHEMA}
    assert "response_format" not in unconstrained


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
     ({"schema_format": "xml"}, "auto, json_schema, json_object, none"),
     ({"max_concurrency": 0}, "max_concurrency >= 1")],
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
    server = OpenAIConfig(base_url=base_url, max_retries=0, schema_format="json_schema")
    simulator = Simulator(None, batch_size=1, engine="openai", openai=server)
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
