"""reasoning-gym as a benchmark: family/level specs, deterministic items, official scoring, env, co-evolution."""

import json

import gymnasium as gym
import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from scripted_simulator import ScriptedSimulator

pytest.importorskip("reasoning_gym")

import genenv  # noqa: F401, E402  (registers the env ids)
from genenv.benchmarks.base import Task, Trajectory, get_benchmark  # noqa: E402
from genenv.benchmarks.reasoning_gym import (  # noqa: E402
    HELD_OUT_SEED,
    ReasoningGymAdapter,
    extract_answer,
    extract_tagged_answer,
    generate_entry,
    parse_family_entry,
)
from genenv.benchmarks.reasoning_gym_expressions import parse_expression  # noqa: E402
from genenv.checkpoints import latest_checkpoint  # noqa: E402
from genenv.coevolution import CoEvolutionTrainer  # noqa: E402
from genenv.config import CONFIG_DIR  # noqa: E402
from genenv.envs.expert import expert_messages, replay_expert  # noqa: E402
from genenv.envs.simulator import to_proposal  # noqa: E402
from genenv.llm.constrained import integer_bounds  # noqa: E402
from genenv.pools import TaskPool  # noqa: E402
from genenv.train import genenv_config  # noqa: E402

FAMILIES = ["basic_arithmetic@0-2", "chain_sum@0-1"]
SIZES = {"test_per_level": 4, "validation_per_level": 2, "train_per_level": 6, "answer_format": "answer"}


@pytest.fixture(scope="module")
def adapter() -> ReasoningGymAdapter:
    return ReasoningGymAdapter(families=FAMILIES, **SIZES)


def spec(family="basic_arithmetic", level=1, seed=7) -> dict:
    return {"family": family, "level": level, "seed": seed}


def answered(text: str | None) -> Trajectory:
    return Trajectory(final_answer=text)


def test_family_entries():
    assert parse_family_entry("basic_arithmetic") == ("basic_arithmetic", [0, 1, 2, 3, 4])
    assert parse_family_entry("chain_sum@3") == ("chain_sum", [3])
    assert parse_family_entry("products@1-2") == ("products", [1, 2])
    for entry, reason in [
        ("no_such_family", "unknown reasoning-gym family"),
        ("basic_arithmetic@5", "out of range: its curriculum has levels 0-4"),
        ("basic_arithmetic@2-1", "out of range"),
        ("acre", "has no curriculum"),
        ("basic arithmetic", "is not 'name'"),
    ]:
        with pytest.raises(ValueError, match=reason):
            parse_family_entry(entry)
    with pytest.raises(ValueError, match="unknown reasoning-gym family"):
        ReasoningGymAdapter(families=["basic_arithmetic@0", "nope@1"])
    # caesar_cipher's curriculum reaches rotations its own config rejects (reasoning-gym 0.1.25)
    with pytest.raises(ValueError, match=r"cannot generate caesar_cipher@2 \(AssertionError: rotation"):
        ReasoningGymAdapter(families=["caesar_cipher@1-2"])


def test_registry_and_families(adapter):
    assert isinstance(get_benchmark("reasoning_gym", families=["chain_sum@0"]), ReasoningGymAdapter)
    assert adapter.families() == [f"basic_arithmetic@{i}" for i in range(3)] + ["chain_sum@0", "chain_sum@1"]


@pytest.mark.parametrize(
    ("obj", "family", "reason"),
    [
        (spec(family="leg_counting"), None, "'leg_counting' is known to reasoning-gym but not configured"),
        (spec(family="no_such_family"), None, "'no_such_family' is unknown"),
        (spec(level=3), None, "level 3 of 'basic_arithmetic' is out of range: configured levels 0-2"),
        (spec(family="chain_sum", level=2), None, "out of range: configured levels 0-1"),
        (spec(level=-1), None, "out of range"),
        (spec(level=2), "basic_arithmetic@0", "more than level_step=1 from the requested"),
        (spec(), "chain_sum@1", "not the requested family 'chain_sum'"),
        (spec(level="1"), None, "'level' must be an integer"),
        (spec(seed=1.5), None, "'seed' must be an integer"),
        (spec(level=True), None, "'level' must be an integer"),
        ({"family": "basic_arithmetic", "level": 1}, None, "misses seed"),
        ({**spec(), "answer": "3"}, None, "unknown key"),
        ([spec()], None, "must be a JSON object"),
        ('{"family": "basic_arithmetic", "level": 1,', None, "not valid JSON"),
    ],
)
def test_bad_specs_are_rejected_with_a_reason(adapter, obj, family, reason):
    with pytest.raises(ValueError, match=reason):
        adapter.parse_task(obj, family)


def test_unparsable_simulator_output_is_a_reject_with_reason(adapter):
    proposal = to_proposal(adapter, "basic_arithmetic@1", [], '{"family": "basic_arithmetic", "level": ')
    assert proposal.task is None and proposal.reject_reason.startswith("unparsable: invalid JSON")
    proposal = to_proposal(adapter, "basic_arithmetic@1", [], json.dumps(spec(level=4)))
    assert proposal.task is None and "out of range" in proposal.reject_reason


def test_valid_spec_is_deterministic_and_gold_scores_one(adapter):
    first = adapter.parse_task(spec(seed=123), "basic_arithmetic@1")
    generate_entry.cache_clear()  # really generated again, not read from the cache
    again = ReasoningGymAdapter(families=FAMILIES, **SIZES).parse_task(json.dumps(spec(seed=123)))
    assert (first.prompt, first.gold, first.task_id) == (again.prompt, again.gold, again.task_id)
    assert first.source == "generated" and adapter.family(first) == "basic_arithmetic@1"
    assert first.metadata["settings"] == "num_terms=2-3, num_digits=1-2"
    assert adapter.validate_task(first) == (True, "ok")
    others = {adapter.parse_task(spec(seed=seed)).prompt for seed in range(5)}
    assert len(others) > 1, "the seed picks the item"
    # a negative or huge seed is a valid spec, mapped below the held-out seeds
    big = adapter.parse_task(spec(seed=-3))
    assert big.gold["seed"] == HELD_OUT_SEED - 3 and big.metadata["spec_seed"] == -3

    gold = first.gold["answer"]
    for reply in (gold, f"<answer>{gold}</answer>", f"The answer is {gold}.", f"Answer: {gold}\nbecause ..."):
        score = adapter.score(first, answered(reply))
        assert score.value == 1.0 and score.breakdown["solved"] == 1.0, reply
    wrong = adapter.score(first, answered(str(int(gold) + 1)))
    assert wrong.value < 1.0 and wrong.breakdown["solved"] == 0.0
    none = adapter.score(first, answered(None))
    assert none.value == 0.0 and none.breakdown["answered"] == 0.0


def test_partial_credit_is_the_family_own(adapter):
    backward = ReasoningGymAdapter(
        families=["spell_backward@0"],
        test_per_level=1,
        validation_per_level=0,
        partial_credit=True,
        answer_format="answer",
    )
    task = backward.parse_task(spec(family="spell_backward", level=0, seed=3))
    gold = task.gold["answer"]
    assert backward.score(task, answered(gold)).value == 1.0
    partial = backward.score(task, answered(gold[:-1] + "#")).value
    assert 0.0 < partial < 1.0  # spell_backward's score_answer credits the matching prefix


def _single_digit_item(adapter):
    for seed in range(200):
        task = adapter.parse_task(spec(level=0, seed=seed))
        if len(task.gold["answer"]) == 1 and task.gold["answer"].isdigit():
            return task
    raise AssertionError("no single-digit basic_arithmetic item in 200 seeds")


def test_a_wrong_answer_holding_the_gold_earns_nothing_by_default(adapter):
    task = _single_digit_item(adapter)
    hedge = answered("1" + task.gold["answer"])  # wrong, yet official scoring gives it len(gold)/len(answer) = 0.5
    score = adapter.score(task, hedge)
    assert score.value == 0.0 and score.breakdown["official"] == 0.5 and score.breakdown["solved"] == 0.0
    official = ReasoningGymAdapter(families=FAMILIES, **SIZES, partial_credit=True)
    assert official.score(task, hedge).value == 0.5
    reporting = adapter.reporting_adapter()
    assert reporting.partial_credit and reporting.score(task, hedge).value == 0.5  # held-out scores stay official
    assert reporting.load_tasks("validation") == adapter.load_tasks("validation")
    assert official.reporting_adapter() is official
    assert adapter.score(task, answered(task.gold["answer"])).value == 1.0


def test_validate_rejects_tampering_and_held_out_items(adapter):
    task = adapter.parse_task(spec())
    tampered = Task.from_dict({**task.to_dict(), "gold": {**task.gold, "answer": "12345"}})
    assert adapter.validate_task(tampered) == (False, tampered_reason())
    test_item = adapter.load_tasks("test")[0]
    as_generated = Task.from_dict({**test_item.to_dict(), "source": "generated"})
    ok, reason = adapter.validate_task(as_generated)
    assert not ok and "held-out range" in reason
    unknown = Task.from_dict({**task.to_dict(), "gold": {**task.gold, "level": 4}})
    assert adapter.validate_task(unknown) == (False, "basic_arithmetic@4 is not a configured family and level")
    # a generated spec whose question equals a held-out one is rejected (level 0 has few distinct questions)
    held_out = adapter.held_out_questions()
    colliding = next(s for s in range(20_000) if generate_entry("basic_arithmetic", 0, s)["question"] in held_out)
    ok, reason = adapter.validate_task(adapter.parse_task(spec(level=0, seed=colliding)))
    assert not ok and "repeats a held-out" in reason


def tampered_reason() -> str:
    return "the question or answer differs from what reasoning-gym generates for this spec"


def test_splits_are_deterministic_and_disjoint(adapter):
    splits = {name: adapter.load_tasks(name) for name in ("test", "validation", "train")}
    fresh = ReasoningGymAdapter(families=FAMILIES, **SIZES)
    for name, tasks in splits.items():
        assert [t.to_dict() for t in tasks] == [t.to_dict() for t in fresh.load_tasks(name)]
        assert len(tasks) == 5 * SIZES[f"{name}_per_level"]
        assert {adapter.family(t) for t in tasks} == set(adapter.families())
    ids = [{t.task_id for t in tasks} for tasks in splits.values()]
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    assert all(t.gold["seed"] >= HELD_OUT_SEED for t in splits["test"] + splits["validation"])
    assert not {t.prompt for t in splits["train"]} & adapter.held_out_questions()
    assert all(adapter.validate_task(t) == (True, "ok") for t in splits["test"])
    with pytest.raises(ValueError, match="unknown split"):
        adapter.load_tasks("dev")


def test_generation_hooks(adapter):
    rng = np.random.default_rng(0)
    schema = adapter.generation_schema("basic_arithmetic@0")
    assert schema["properties"]["family"]["enum"] == ["basic_arithmetic"]
    assert schema["properties"]["level"]["enum"] == [0, 1]
    assert adapter.generation_schema("basic_arithmetic@1")["properties"]["level"]["enum"] == [0, 1, 2]
    assert set(schema["required"]) == set(adapter.task_schema["properties"]) and not schema["additionalProperties"]
    # the seed is bounded below the held-out seeds, so constrained decoding writes at most 9 unsigned digits
    assert integer_bounds(schema) == (len(str(HELD_OUT_SEED - 1)), False) == (9, False)
    with pytest.raises(ValueError, match="unknown family key"):
        adapter.generation_schema("basic_arithmetic@7")
    context = adapter.generation_context("chain_sum@1", rng, success={"chain_sum@0": 0.75, "basic_arithmetic@1": 0.1})
    assert "Current level: 1 (the instruction below is about it); you may write level 0, 1." in context
    assert "level 0 (num_terms=2, num_digits=1)" in context and "the agent solves 75%" in context
    assert "10%" not in context  # another family's success is not shown
    examples = adapter.generation_examples("chain_sum@0", 3, rng)
    assert len(examples) == 3 and all(e["family"] == "chain_sum" and e["level"] in (0, 1) for e in examples)
    assert all(adapter.validate_task(adapter.parse_task(e, "chain_sum@0"))[0] for e in examples)


def test_level_step_sets_how_far_the_simulator_may_move():
    free = ReasoningGymAdapter(families=["chain_sum@0-4"], test_per_level=1, validation_per_level=1, train_per_level=4,
                               level_step=None)  # fmt: skip
    assert free.generation_schema("chain_sum@0")["properties"]["level"]["enum"] == [0, 1, 2, 3, 4]
    assert free.validate_task(free.parse_task(spec(family="chain_sum", level=4, seed=3), "chain_sum@0"))[0]
    stay = ReasoningGymAdapter(families=["chain_sum@0-4"], test_per_level=1, validation_per_level=1, train_per_level=4,
                               level_step=0)  # fmt: skip
    assert stay.generation_schema("chain_sum@2")["properties"]["level"]["enum"] == [2]
    with pytest.raises(ValueError, match="more than level_step=0"):
        stay.parse_task(spec(family="chain_sum", level=3, seed=3), "chain_sum@2")
    with pytest.raises(ValueError, match="level_step must be"):
        ReasoningGymAdapter(families=["chain_sum@0"], level_step=-1)


def test_family_requests_let_the_simulator_choose_the_level():
    from genenv.envs.simulator import Simulator

    by_family = ReasoningGymAdapter(families=["chain_sum@0-4", "products@0-1"], test_per_level=1,
                                    validation_per_level=1, train_per_level=4, requests="families")  # fmt: skip
    assert by_family.families() == ["chain_sum", "products"]
    assert by_family.generation_schema("chain_sum")["properties"]["level"]["enum"] == [0, 1, 2, 3, 4]
    task = by_family.parse_task(spec(family="chain_sum", level=4, seed=3), "chain_sum")
    assert by_family.validate_task(task)[0]
    assert by_family.family(task) == "chain_sum@4" and by_family.requested_family(task) == "chain_sum"
    with pytest.raises(ValueError, match="not the requested family 'chain_sum'"):
        by_family.parse_task(spec(family="products", level=0, seed=3), "chain_sum")
    with pytest.raises(ValueError, match="unknown family 'chain_sum@1'"):
        by_family.generation_schema("chain_sum@1")
    success = {"chain_sum@0": 0.9, "chain_sum@3": 0.1, "products@0": 0.5}
    assert by_family.request_success("chain_sum", success) == pytest.approx(0.5)  # the mean over played levels
    assert by_family.request_success("products", {}) is None
    context = by_family.generation_context("chain_sum", np.random.default_rng(0), success)
    assert "you choose the level" in context and "Current level" not in context
    assert "the agent solves 90%" in context and "the agent solves 10%" in context
    prompt = Simulator(None, engine="hf").messages(by_family, "chain_sum", np.random.default_rng(0), success)
    assert "The agent currently solves 50% of these tasks" in prompt[-1]["content"]
    assert all(
        e["family"] == "chain_sum" for e in by_family.generation_examples("chain_sum", 4, np.random.default_rng(0))
    )
    with pytest.raises(ValueError, match="requests must be one of"):
        ReasoningGymAdapter(families=["chain_sum@0"], requests="levels and families")


def test_answer_extraction():
    assert extract_answer("<answer>1</answer> then <answer> 42 </answer>") == "42"
    assert extract_answer("thinking... <answer>7") == "7"
    assert extract_answer("5 + 4 = 9\n\nThe answer is 9.") == "9"
    assert extract_answer("**Answer:** `nus`") == "nus"
    assert extract_answer("Final answer:\nMonday, Tuesday") == "Monday, Tuesday"
    assert extract_answer("The result of -2 + -2 is -4.") == "-4"
    assert extract_answer("The final answer to the arithmetic problem is 11.") == "11"
    assert extract_answer("Let me see.\n42 + 69 = 111.") == "111"
    assert extract_answer("x = 3 is wrong, so\nno") == "x = 3 is wrong, so\nno"  # only a last-line equation
    assert extract_answer("The letter d appears 2 times.") == "The letter d appears 2 times."
    assert extract_answer("hello world.") == "hello world."
    assert extract_answer("  \n") is None and extract_answer(None) is None


def test_env_plays_benchmark_episode_and_refuses_tool_calls():
    env = gym.make("GenEnv-ReasoningGym-v0", families=FAMILIES, task_source="benchmark", expose_gold=True, **SIZES)
    obs, info = env.reset(seed=0)
    task = info["task"]
    assert info["tools"] == [] and task["split"] == "test" and task["prompt"] in obs
    _, reward, terminated, truncated, step = env.step('<tool_call>{"name": "calc", "arguments": {}}</tool_call>')
    assert step["error"] == "unknown_tool" and not terminated and not truncated and reward == 0.0
    _, reward, terminated, _, step = env.step(f"The answer is {task['gold']['answer']}.")
    assert terminated and reward == 1.0 and step["score_breakdown"]["solved"] == 1.0
    assert step["family"] == f"{task['gold']['family']}@{task['gold']['level']}"


def test_env_plays_a_generated_task():
    simulator = ScriptedSimulator(["{broken", json.dumps(spec(family="chain_sum", level=1, seed=5))], "chain_sum@0")
    env = gym.make("GenEnv-ReasoningGym-v0", families=FAMILIES, simulator=simulator, **SIZES)
    _, info = env.reset(seed=0)
    assert info["task_origin"] == "simulator" and info["task"]["source"] == "generated"
    assert info["family"] == "chain_sum@1"
    assert [bool(r["reject_reason"]) for r in env.unwrapped.generation_log] == [True, False]
    _, reward, terminated, _, _ = env.step(f"<answer>{env.unwrapped.task.gold['answer']}</answer>")
    assert terminated and reward == 1.0


def test_every_spec_the_schema_allows_is_valid(adapter):
    """What constrained decoding can write (the schema's family and levels, any seed) parses and validates."""
    rng = np.random.default_rng(1)
    for key in adapter.families():
        schema = adapter.generation_schema(key)["properties"]
        for family in schema["family"]["enum"]:
            for level in schema["level"]["enum"]:
                seed = int(rng.integers(-(10**12), 10**12))
                task = adapter.parse_task(spec(family=family, level=level, seed=seed), key)
                ok, reason = adapter.validate_task(task)
                assert ok or "repeats a held-out" in reason, reason


@pytest.mark.slow
def tiny_run_config(tmp_path, *overrides: str):
    """``python -m genenv.train +bench=reasoning_gym model=tiny`` on chain_sum@0-1, one task an epoch, groups of 2,
    one held-out task, then ``overrides``."""
    shared = [
        "+bench=reasoning_gym",
        "model=tiny",
        f"run_dir={tmp_path}",
        "bench.options.families=[chain_sum@0-1]",
        "bench.options.test_per_level=2",
        "coevolution.tasks_per_epoch=1",
        "curriculum.generation_rounds=1",
        "coevolution.base_split=train",
        "validation.limit=1",
        "agent.num_generations=2",
        "agent.per_device_train_batch_size=2",
        "agent.gradient_accumulation_steps=1",
        "rwr.batch_size=2",
    ]
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return genenv_config(compose("config", overrides=[*shared, *overrides]))


def test_two_epoch_coevolution_with_tiny_model(tmp_path):
    """``python -m genenv.train +bench=reasoning_gym model=tiny`` in small: two epochs, base data, validation."""
    config = tiny_run_config(
        tmp_path,
        "bench.options.validation_per_level=2",
        "bench.options.train_per_level=4",
        "coevolution.epochs=2",
        "simulator.batch_size=2",
        "coevolution.replay_tasks=1",
        "curriculum.band_k=0.5",
        "agent.max_new_tokens=8",
        "agent.max_completion_length=128",
    )
    trainer = CoEvolutionTrainer(config)
    assert trainer.adapter.families() == ["chain_sum@0", "chain_sum@1"]
    trainer.simulator = ScriptedSimulator([json.dumps(spec("chain_sum", 1, 11)), "{broken"], "chain_sum@0")
    history = trainer.train()
    assert [m["epoch"] for m in history] == [0, 1]
    for metrics in history:
        assert metrics["fresh_tasks"] == 1 and metrics["rejects"] == 1 and metrics["replay_tasks"] == 1
        assert set(metrics["p_hat_per_family"]) == {"chain_sum@1"} and metrics["agent"]["episodes"] == 4
        assert {"score", "solved"} <= metrics["validation"].keys()
        assert any(key.startswith("score/level-") for key in metrics["validation"])
    # the curriculum tracks the family key with its level: 2 epochs x 2 generations of the fresh task
    assert trainer.stats.count("chain_sum@1") == 4
    # each epoch records the success the simulator was shown when it wrote the epoch's tasks: none before epoch 0
    assert history[0]["family_success"] == {} and history[1]["family_success"] == history[0]["p_hat_per_family"]
    assert latest_checkpoint(tmp_path).name == "epoch-0001"
    accepted = TaskPool(tmp_path / "pools").records(status="accepted")
    assert len(accepted) == 2 and accepted[0]["task"]["gold"]["family"] == "chain_sum"


def test_expert_trace_of_every_base_task_scores_full_and_shows_the_expression():
    """D_train's base data (split ``train``): each expert trace, replayed through ToolEnv, records the same
    messages and solves its task; the arithmetic families' traces write ``expression = answer``."""
    base = get_benchmark("reasoning_gym", answer_format="answer")
    tasks = base.load_tasks("train")
    assert len(tasks) == 9 * 64
    for task in tasks:
        expert = expert_messages(base, task)
        recorded, score = replay_expert(base, task)
        assert recorded == expert[-len(recorded) :] and score.value == 1.0, task.task_id
        reply = expert[-1]["content"]
        assert reply.endswith(f" = {task.gold['answer']}") and reply.partition(" = ")[0] in task.prompt
    assert expert_messages(base, Task("x", "reasoning_gym", "p", gold=None)) is None


def test_worked_expert_traces_show_each_operation_and_score_full():
    """``answer_format="worked"``: every base task's expert trace works the expression out one operation a step,
    each step's value is right, and the tagged answer scores 1.0 when replayed through ToolEnv."""
    worked = get_benchmark(
        "reasoning_gym", families=["basic_arithmetic@0-2", "chain_sum@0-2", "products@0-2"], answer_format="worked"
    )
    for task in worked.load_tasks("train"):
        reply = expert_messages(worked, task)[-1]["content"]
        working, _, tagged = reply.rpartition("\n")
        assert tagged == f"<answer>{task.gold['answer']}</answer>", task.task_id
        steps = working.split(" = ")
        assert steps[-1] == task.gold["answer"] and len(steps) >= 2
        assert {parse_expression("basic_arithmetic", step).value for step in steps[:-1] if " " in step} <= {
            int(steps[-1])
        }
        assert replay_expert(worked, task)[1].value == 1.0, task.task_id
    assert "<answer>" in worked.system_prompt(task)


def test_worked_answers_are_read_as_reasoning_gym_reads_them():
    """Only the last ``<answer>...</answer>`` counts (case-sensitive, stripped, as reasoning-gym's extract_answer);
    working without the tag, or a tag left open, is no answer; the default format still reads plain answers."""
    worked = ReasoningGymAdapter(families=["chain_sum@0"], **{**SIZES, "answer_format": "worked"})
    plain = ReasoningGymAdapter(families=["chain_sum@0"], **SIZES)
    task = worked.load_tasks("test")[0]
    gold = task.gold["answer"]

    def score(adapter, text):
        return adapter.score(task, Trajectory(final_answer=text)).value

    assert extract_tagged_answer(f"1 + 1 = 2\n<answer> {gold} </answer>") == gold
    assert score(worked, f"working <answer>0</answer> more working <answer>{gold}</answer>") == 1.0
    assert score(worked, f"<answer>{gold}</answer> on second thought <answer>{int(gold) + 1}</answer>") == 0.0
    assert score(worked, f"the answer is {gold}") == 0.0 and score(plain, f"the answer is {gold}") == 1.0
    assert score(worked, f"<answer>{gold}") == 0.0 and score(worked, f"<ANSWER>{gold}</ANSWER>") == 0.0
    with pytest.raises(ValueError, match="answer_format"):
        ReasoningGymAdapter(families=["chain_sum@0"], answer_format="essay")


class CountingSimulator(ScriptedSimulator):
    """Writes a new chain_sum@0 item at every call (seed 100, 101, ...)."""

    def __init__(self) -> None:
        super().__init__([""], "chain_sum@0")
        self.calls = 0

    def generate(self, conversations, seed=None, schemas=None):
        self.calls += 1
        return [json.dumps(spec("chain_sum", 0, 100 + self.calls)) for _ in conversations]


def test_dynamic_sampling_refills_from_the_simulator_and_counts_its_tasks(tmp_path):
    """With ``agent.dynamic_sampling`` the epoch's uniform groups (the tiny model solves nothing) are refilled with
    tasks the simulator writes then: each is an epoch's fresh task, its output is in D_env with its p_hat, its expert
    trace in D_train, and the metrics say the round budget ran out."""
    config = tiny_run_config(
        tmp_path,
        "bench.options.validation_per_level=1",
        "bench.options.train_per_level=2",
        "coevolution.epochs=1",
        "warm_start.max_examples=0",
        "agent.max_new_tokens=4",
        "agent.max_completion_length=64",
        "agent.dynamic_sampling=true",
        "agent.dynamic_sampling_max_rounds=3",
    )
    trainer = CoEvolutionTrainer(config)
    trainer.simulator = CountingSimulator()
    (metrics,) = trainer.train()
    assert trainer.simulator.calls == 3  # the epoch's task, then one refill per further round
    agent = metrics["agent"]
    assert agent["groups/groups_played"] == 3 and agent["groups/refill_rounds"] == 2
    assert agent["groups/exhausted"] == 1 and agent["groups/groups_filled"] == 1 and agent["episodes"] == 6
    assert metrics["fresh_tasks"] == 3 and metrics["proposals"] == 3 and len(metrics["p_hat_per_task"]) == 3
    records = TaskPool(tmp_path / "pools").records()
    assert sorted(r["task"]["gold"]["seed"] for r in records) == [101, 102, 103]
    assert all(r["p_hat"] == 0.0 for r in records)
    expert = [r for r in trainer.traces.records() if r["source"] == "expert"]
    assert sorted(r["task"]["gold"]["seed"] for r in expert) == [101, 102, 103]
