import json

import numpy as np
import pytest
from toy_benchmark import ToyAdapter

from genenv.agents.agent import FEW_SHOT_EXCHANGES, Agent
from genenv.envs.simulator import Simulator, difficulty_instruction, extract_json_object, to_proposal
from genenv.envs.tool_env import ToolEnv
from genenv.llm.generation import SamplingConfig


def test_rollout_runs_every_episode_to_an_end(tiny_policy):
    adapter = ToyAdapter()
    tasks = adapter.load_tasks("train")[:3]
    envs = [ToolEnv(adapter, tasks=tasks, max_turns=2) for _ in tasks]
    agent = Agent(tiny_policy, SamplingConfig(max_new_tokens=8))
    episodes = agent.rollout(envs, tasks, seed=0)
    assert [e.task.task_id for e in episodes] == [t.task_id for t in tasks]
    for episode in episodes:
        assert 1 <= len(episode.trajectory.turns) <= 2
        assert 0.0 <= episode.reward <= 1.0 and "score" in episode.info


def test_agent_conversation_inserts_few_shot_after_system():
    agent = Agent(policy=None)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    conversation = agent.conversation(messages)
    assert conversation[0] == messages[0] and conversation[-1] == messages[1]
    assert conversation[1:-1] == FEW_SHOT_EXCHANGES
    assert Agent(policy=None, few_shot=False).conversation(messages) == messages


def test_an_adapter_may_bring_its_own_few_shot_exchanges():
    class OwnExamples(ToyAdapter):
        def few_shot_exchanges(self):
            return [{"role": "user", "content": "What is 1 + 1?"}, {"role": "assistant", "content": "2"}]

    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert Agent(policy=None).conversation(messages, ToyAdapter())[1:-1] == FEW_SHOT_EXCHANGES
    assert Agent(policy=None).conversation(messages, OwnExamples())[1:-1] == OwnExamples().few_shot_exchanges()


def test_extract_json_object():
    assert extract_json_object('Here: ```json\n{"a": 1}\n``` bye') == {"a": 1}
    for bad in ["no json", '{"a": ', "[1, 2]"]:
        try:
            extract_json_object(bad)
        except ValueError as error:
            assert "JSON" in str(error)
        else:
            raise AssertionError(bad)


def test_proposals_parsed_validated_and_rejects_kept():
    adapter = ToyAdapter()
    good = to_proposal(adapter, "small", [], json.dumps({"a": 4, "b": 5}))
    assert good.task is not None and good.task.source == "generated" and good.task.gold == {"sum": 9}
    for raw, reason in [
        ("garbage", "unparsable"),
        ('{"a": "x", "b": 1}', "unparsable"),
        ('{"a": 9999999, "b": 1}', "invalid"),
    ]:
        proposal = to_proposal(adapter, "small", [], raw)
        assert proposal.task is None and proposal.reject_reason.startswith(reason)
        assert proposal.to_dict()["raw"] == raw


def test_simulator_prompt_carries_schema_examples_and_difficulty(tiny_policy):
    simulator = Simulator(tiny_policy, batch_size=3, sampling=SamplingConfig(max_new_tokens=12, temperature=1.0))
    messages = simulator.messages(ToyAdapter(), "small", np.random.default_rng(0), success={"small": 0.9})
    assert '"a"' in messages[0]["content"] and messages[-1]["content"].endswith(
        "Write one new task of kind 'small' as JSON."
    )
    assert "harder" in messages[-1]["content"] and len(messages) == 1 + 2 * 2 + 1
    proposals = simulator.propose(ToyAdapter(), rng=np.random.default_rng(0))
    assert len(proposals) == 3 and all(p.family in ("small", "large") for p in proposals)
    assert all(p.task is not None or p.reject_reason for p in proposals)


def test_own_examples_are_shown_last_and_topped_up_with_the_adapters(tiny_policy):
    simulator = Simulator(tiny_policy, num_examples=2)
    adapter = ToyAdapter()
    shown = [
        m["content"] for m in simulator.messages(adapter, "small", np.random.default_rng(0)) if m["role"] == "assistant"
    ]

    def examples(own):
        messages = simulator.messages(adapter, "small", np.random.default_rng(0), own_examples=own)
        return [m["content"] for m in messages if m["role"] == "assistant"]

    assert examples([]) == shown and len(shown) == 2
    assert examples(["mine"]) == [shown[0], "mine"]
    assert examples(["old", "mid", "new"]) == ["mid", "new"]
    unshown = Simulator(tiny_policy, num_examples=0).messages(adapter, "small", np.random.default_rng(0), None, ["x"])
    assert [m["role"] for m in unshown] == ["system", "user"]  # no worked example at all


def test_scored_tasks_are_listed_in_the_request_with_their_success(tiny_policy):
    simulator = Simulator(tiny_policy, num_examples=2, alpha=0.5)
    adapter = ToyAdapter()
    plain = simulator.messages(adapter, "small", np.random.default_rng(0))
    scored = simulator.messages(
        adapter, "small", np.random.default_rng(0), scored=[('{"a": 1,\n "b": 2}', 1.0), ('{"a": 9}', 0.375)]
    )
    assert scored[:-1] == plain[:-1]  # the same system prompt and worked examples
    request = scored[-1]["content"]
    assert request.startswith(plain[-1]["content"].split("\n\n")[0])
    listed = request[request.index("Your latest tasks") :].splitlines()
    assert listed[1:3] == ['- {"a": 1, "b": 2} -> 100%', '- {"a": 9} -> 38%'] and "target 50%" in listed[0]
    assert request.endswith(plain[-1]["content"][plain[-1]["content"].index("The agent") :])
    long = simulator.messages(adapter, "small", np.random.default_rng(0), scored=[("x" * 400, 0.0)])
    assert f"- {'x' * 300}... -> 0%" in long[-1]["content"]


def test_difficulty_instruction_direction():
    assert "easier" in difficulty_instruction(0.1, 0.5)
    assert "harder" in difficulty_instruction(0.9, 0.5)
    assert "not seen" in difficulty_instruction(None, 0.5)


def test_env_with_simulator_falls_back_visibly(tiny_policy):
    simulator = Simulator(tiny_policy, batch_size=2, sampling=SamplingConfig(max_new_tokens=6, temperature=1.0))
    env = ToolEnv(ToyAdapter(), task_source="simulator", simulator=simulator, simulator_attempts=1)
    _, info = env.reset(seed=0)
    # a random tiny model writes no valid JSON: the env says so and plays a real task
    assert info["task_origin"] == "benchmark_fallback" and info["task"]["source"] == "benchmark"
    assert len(env.generation_log) == 2 and all(r["reject_reason"] for r in env.generation_log)
    strict = ToolEnv(ToyAdapter(), task_source="simulator", simulator=simulator, simulator_attempts=1, fallback="error")
    with pytest.raises(RuntimeError, match="no valid toy task"):
        strict.reset(seed=0)


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_in_a_simulator_task_are_rejected_at_parse_time(number):
    with pytest.raises(ValueError, match="simulator output"):
        extract_json_object(f'{{"api": "RecordHealthData", "value": {number}}}')


def test_an_adapter_that_raises_while_validating_rejects_the_task_not_the_epoch():
    class Raising(ToyAdapter):
        def validate_task(self, task):
            raise TypeError("'NoneType' object is not subscriptable")

    adapter = Raising()
    family = adapter.families()[0]
    example = adapter.generation_examples(family, 1, np.random.default_rng(0))[0]
    proposal = to_proposal(adapter, family, [], json.dumps(example))
    assert proposal.task is None and proposal.reject_reason.startswith("invalid: validation raised TypeError")
