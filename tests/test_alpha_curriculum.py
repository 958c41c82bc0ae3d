"""AlphaCurriculum: the co-evolution trainer's curriculum bookkeeping as a task source, driving TRL's real
GRPOTrainer."""

from __future__ import annotations

import itertools
import json
import logging

import numpy as np
import pytest
from conftest import data_dir, two_step_grpo_config
from scripted_simulator import ScriptedSimulator
from test_apibank_env import CALCULATOR_TASK
from test_integration_trl import scripted_generate
from test_train import HARD_TASK, _script_attempts, tiny_config

from genenv.coevolution import CoEvolutionTrainer
from genenv.curriculum import AlphaCurriculum, AlphaCurriculumConfig, RWRConfig
from genenv.integrations.trl import environment_factory, episode_reward
from genenv.llm.engines.openai import OpenAIConfig
from genenv.llm.models import build_tiny_policy
from genenv.pools import TaskPool

REPLIES = [json.dumps(CALCULATOR_TASK), json.dumps(HARD_TASK), "{broken"]
#: the agent's G = 2 attempts at each task (as test_train scripts them): one in the band, one outside
ATTEMPTS = {"(12+8)*3": [1.0, 0.0], "7*6": [0.0, 0.0]}


@pytest.fixture(scope="module")
def adapter():
    from genenv.benchmarks.base import get_benchmark

    return get_benchmark("apibank", data_dir=str(data_dir("apibank")))


def curriculum(adapter, replies=REPLIES, **config) -> AlphaCurriculum:
    return AlphaCurriculum(adapter, ScriptedSimulator(replies, "Calculator"), AlphaCurriculumConfig(**config))


def test_bookkeeping_equals_the_coevolution_trainers_on_the_same_rewards(adapter, tmp_path):
    config = tiny_config(tmp_path, epochs=2, replay_tasks=0, validation_split=None, base_split=None)
    trainer = CoEvolutionTrainer(config)
    trainer.simulator = ScriptedSimulator(REPLIES, "Calculator")
    _script_attempts(trainer)
    history = trainer.train()

    source = curriculum(adapter, generation_rounds=config.curriculum.generation_rounds, seed=config.seed)
    for epoch, metrics in enumerate(history):
        tasks = source.next_tasks(config.tasks_per_epoch)
        attempts = [(t.task_id, r) for t in tasks for q, rs in ATTEMPTS.items() if q in t.prompt for r in rs]
        reported = source.report([t for t, _ in attempts], [r for _, r in attempts])
        assert reported["p_hat"] == metrics["p_hat"] and reported["r_env"] == metrics["r_env"]
        assert sorted(reported["p_hat_per_task"].values()) == metrics["p_hat_per_task"]
        assert reported["p_hat_per_family"] == metrics["p_hat_per_family"]
        assert reported["in_band"] == metrics["in_band"]
        # every valid output earned what D_env stored for it: p_hat, R_env, the band verdict, the RWR weight
        stored = [r for r in TaskPool(tmp_path / "pools").records(epoch) if r["task"] is not None]
        earned = source.rewarded[2 * epoch : 2 * epoch + 2]
        assert [(p.raw, r.p_hat, r.r_env, r.kept, r.weight) for p, r in earned] == [
            (r["raw"], r["p_hat"], r["r_env"], r["kept"], r["weight"]) for r in stored
        ]
    assert source.stats.rates() == trainer.stats.rates() == {"Calculator": 0.25}
    # the simulator was shown the same success (the same prompts) in both epochs
    assert source.simulator.prompts == trainer.simulator.prompts


def test_it_drives_trls_grpo_trainer_and_updates_the_simulator(adapter, tmp_path):
    from trl import GRPOTrainer

    simulator = ScriptedSimulator(REPLIES, "Calculator")
    simulator._policy = build_tiny_policy(seed=1)  # the simulator's weights, which RWR trains
    source = AlphaCurriculum(adapter, simulator, AlphaCurriculumConfig(rwr=RWRConfig(batch_size=2)))
    policy = build_tiny_policy(seed=0)
    scripted_generate(policy.model, policy.tokenizer)  # attempts 1, 0 at each task: every task lands in the band
    reported = []

    def reward(completions, environments, **kwargs):
        rewards = episode_reward(completions, environments, **kwargs)
        reported.append(list(zip(kwargs["task_id"], rewards, strict=True)))
        return rewards

    args = two_step_grpo_config(
        tmp_path,
        shuffle_dataset=False,  # a shuffle buffer would read 1000 tasks ahead of the agent's reports
    )
    trainer = GRPOTrainer(
        model=policy.model,
        processing_class=policy.tokenizer,
        reward_funcs=source.reporting(reward),
        train_dataset=source.dataset(),
        environment_factory=environment_factory(adapter),
        args=args,
    )
    trainer.train()
    assert trainer.state.global_step == 2 and len(reported) == 2
    assert [r for batch in reported for _, r in batch] == [1.0, 0.0] * 4
    assert source.stats.count("Calculator") == 8 and source.stats.success("Calculator") == 0.5
    assert all(r.p_hat == 0.5 and r.kept and r.r_env == 1.0 for _, r in source.rewarded)
    logged = [entry for entry in trainer.state.log_history if "curriculum/p_hat" in entry]
    assert [entry["curriculum/p_hat"] for entry in logged] == [0.5, 0.5]
    # each report ran the simulator's update on the batch's in-band outputs (2 tasks, written once or twice)
    assert all(entry["curriculum/simulator_examples"] >= 2 for entry in logged)
    assert source.update_simulator() == {"steps": 0, "examples": 0}
    # the rows TRL read ahead of its 2 steps were handed out and never reported: counted, logged, then retired
    assert source.handouts.counts() == {"handed_out": 6, "reported": 4, "retired": 0, "outstanding": 2}
    assert logged[-1]["curriculum/outstanding"] == 2
    assert source.retire(source.handouts.outstanding_ids) == 2 and source.handouts.outstanding == 0
    assert len(simulator.prompts) <= 3  # the tasks were written as the trainer read them, one batch ahead at most


def test_valid_tasks_beyond_the_request_wait_for_the_next_call(adapter):
    source = curriculum(adapter)
    first, second = source.next_tasks(1), source.next_tasks(1)
    assert len(source.simulator.prompts) == 1  # one simulator batch wrote both tasks
    assert {first[0].prompt, second[0].prompt} == {"User: How much is (12+8)*3?\n", "User: How much is 7*6?\n"}
    source.report([first[0].task_id] * 2, [1.0, 1.0])
    (output, earned), *_ = source.rewarded
    assert output.task.task_id == first[0].task_id and earned.p_hat == 1.0 and not earned.kept  # outside the band


class ChangingSimulator(ScriptedSimulator):
    """A scripted simulator whose replies change from call to call (the last list stays)."""

    def __init__(self, calls: list[list[str]]) -> None:
        super().__init__(calls[0], "Calculator")
        self.calls = calls

    def generate(self, conversations, seed=None, schemas=None):
        self.replies = self.calls[min(len(self.prompts), len(self.calls) - 1)]
        return super().generate(conversations, seed, schemas)


def test_a_task_written_again_while_it_waits_counts_once_and_more_are_written(adapter):
    first, second = (json.dumps(t) for t in (CALCULATOR_TASK, HARD_TASK))
    third = json.dumps(
        dict(
            CALCULATOR_TASK,
            request="How much is 9+4?",
            gold_call={"name": "Calculator", "arguments": {"formula": "9+4"}},
        )
    )
    source = AlphaCurriculum(adapter, ChangingSimulator([[first, second], [second, second], [third, second]]))
    (handed,) = source.next_tasks(1)  # the second task waits
    tasks = source.next_tasks(2)  # the next batch repeats the waiting task only: one more batch writes a new one
    assert [t.prompt for t in [handed, *tasks]] == [f"User: How much is {x}?\n" for x in ("(12+8)*3", "7*6", "9+4")]
    assert len(source.simulator.prompts) == 3
    stuck = AlphaCurriculum(adapter, ChangingSimulator([[first, second], [second, second]]))
    stuck.next_tasks(1)
    with pytest.raises(RuntimeError, match="wrote 1 valid apibank tasks of the 2 wanted in 6 outputs"):
        stuck.next_tasks(2)  # the source's rounds ran out: no new task, an error


def test_bad_input_is_refused(adapter):
    source = curriculum(adapter)
    with pytest.raises(ValueError, match="at least 1"):
        source.next_tasks(0)
    (task,) = source.next_tasks(1)
    with pytest.raises(ValueError, match="never handed out: apibank-gen-nothing"):
        source.report(["apibank-gen-nothing"], [1.0])
    with pytest.raises(ValueError, match="task_ids has 1 entries but rewards has 2"):
        source.report([task.task_id], [1.0, 0.0])
    with pytest.raises(ValueError, match=r"lie in \[0, 1\]: rewards\[0\]=nan"):
        source.report([task.task_id], [float("nan")])
    with pytest.raises(ValueError, match="at least one"):
        source.report([], [])
    with pytest.raises(RuntimeError, match="set AlphaCurriculumConfig.rwr"):
        source.update_simulator()
    with pytest.raises(ValueError, match="task_id"):
        source.reporting(episode_reward)(completions=[], environments=[])
    with pytest.raises(RuntimeError, match=r"wrote 0 valid apibank tasks of the 1 wanted.*unparsable"):
        curriculum(adapter, replies=["{broken"]).next_tasks(1)
    with pytest.raises(ValueError, match="quotes alpha=0.5"):
        curriculum(adapter, alpha=0.3)
    with pytest.raises(ValueError, match="update_every"):
        AlphaCurriculumConfig(update_every=0)


def test_a_simulator_on_a_server_skips_rwr_and_says_so(adapter, caplog):
    """With no local weights (engine openai) there is nothing for RWR to train: the curriculum warns once, at start,
    as the co-evolution trainer does, and still writes, hands out and scores tasks."""
    simulator = ScriptedSimulator(REPLIES, "Calculator")  # its replies stand in for the server's
    simulator.engine_setting, simulator.openai = "openai", OpenAIConfig(base_url="http://127.0.0.1:9/v1", model="sim")
    assert not simulator.has_local_weights
    config = AlphaCurriculumConfig(rwr=RWRConfig(batch_size=2))
    with caplog.at_level(logging.WARNING, logger="genenv.curriculum.rwr"):
        source = AlphaCurriculum(adapter, simulator, config)
        tasks = source.next_tasks(2)
        attempts = [(t.task_id, r) for t in tasks for q, rs in ATTEMPTS.items() if q in t.prompt for r in rs]
        reported = source.report([t for t, _ in attempts], [r for _, r in attempts])
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "RWR is off" in warning and "http://127.0.0.1:9/v1 (model sim)" in warning
    assert source.rwr_trainer is None and "simulator" not in reported
    assert reported["in_band"] == 1 and any(earned.kept for _, earned in source.rewarded)  # scored as with RWR
    with pytest.raises(RuntimeError, match="no local weights"):
        source.update_simulator()


def _attempts(tasks):
    return [(t.task_id, r) for t in tasks for q, rs in ATTEMPTS.items() if q in t.prompt for r in rs]


def test_a_saved_curriculum_continues_where_it_stopped(adapter, tmp_path):
    """Save after a report with one written task still waiting and the RWR examples of an in-band task pending; a
    fresh curriculum that loads it hands out the same task, scores it the same and trains the same simulator."""

    def make():
        simulator = ScriptedSimulator(REPLIES, "Calculator")
        simulator._policy = build_tiny_policy(seed=1)
        config = AlphaCurriculumConfig(rwr=RWRConfig(batch_size=2, learning_rate=1e-2), update_every=2)
        return AlphaCurriculum(adapter, simulator, config)

    original = make()
    first = original.next_tasks(1)  # one batch writes both tasks: the second waits
    original.report(*zip(*_attempts(first)))
    original.save(tmp_path / "state")
    resumed = make()
    resumed.load(tmp_path / "state")
    assert resumed.stats.rates() == original.stats.rates()
    assert (
        resumed.handouts.counts()
        == original.handouts.counts()
        == {
            "handed_out": 1,
            "reported": 1,
            "retired": 0,
            "outstanding": 0,
        }
    )
    (a,), (b,) = original.next_tasks(1), resumed.next_tasks(1)
    assert len(resumed.simulator.prompts) == 0  # the waiting task was handed out without writing
    assert a.to_dict() == b.to_dict() and a.task_id != first[0].task_id
    ma, mb = original.report(*zip(*_attempts([a]))), resumed.report(*zip(*_attempts([b])))
    assert ma["simulator"]["examples"] == mb["simulator"]["examples"] >= 1  # the pending in-band example and this one
    assert ma["simulator"]["mean_loss"] == pytest.approx(mb["simulator"]["mean_loss"], rel=1e-6)
    weights = [p for n, p in original.rwr_trainer.model.named_parameters() if "lora_" in n]
    again = [p for n, p in resumed.rwr_trainer.model.named_parameters() if "lora_" in n]
    assert all(bool((p == q).all()) for p, q in zip(weights, again, strict=True))
    assert original.stats.rates() == resumed.stats.rates()


def test_a_save_cut_short_over_an_earlier_one_is_refused_on_load(adapter, tmp_path, monkeypatch):
    """A kill while the RWR trainer is written over an earlier save must not pair new weights with the old state."""
    simulator = ScriptedSimulator(REPLIES, "Calculator")
    simulator._policy = build_tiny_policy(seed=1)
    source = AlphaCurriculum(adapter, simulator, AlphaCurriculumConfig(rwr=RWRConfig(batch_size=2)))
    source.save(tmp_path / "state")

    def killed(directory):
        raise KeyboardInterrupt

    monkeypatch.setattr(source.rwr_trainer, "save", killed)
    with pytest.raises(KeyboardInterrupt):
        source.save(tmp_path / "state")
    with pytest.raises(FileNotFoundError, match="no complete curriculum state"):
        source.load(tmp_path / "state")


def test_an_unconditioned_curriculum_never_shows_the_agents_success(adapter):
    source = curriculum(adapter, conditioned=False)
    for _ in range(2):
        tasks = source.next_tasks(2)
        source.report(*zip(*_attempts(tasks)))
    assert source.stats.rates() == {"Calculator": 0.25}  # scored as a conditioned one is
    requests = [conversation[-1]["content"] for call in source.simulator.prompts for conversation in call]
    assert len(requests) == 6 and all("has not seen tasks of this kind yet" in r for r in requests)
    shown = curriculum(adapter)
    for _ in range(2):
        shown.report(*zip(*_attempts(shown.next_tasks(2))))
    assert "currently solves 25%" in shown.simulator.prompts[-1][0][-1]["content"]


# -- hand-out accounting -----------------------------------------------------------------------------------------


def test_a_second_report_of_a_handout_is_refused_and_changes_nothing(adapter):
    source = curriculum(adapter)
    first, second = source.next_tasks(2)
    source.report([first.task_id] * 2, [1.0, 1.0])
    source.report([second.task_id] * 2, [1.0, 0.0])
    rates, rewarded, counts = source.stats.rates(), len(source.rewarded), source.handouts.counts()
    assert rates == {"Calculator": 0.75} and counts["outstanding"] == 0
    with pytest.raises(ValueError, match=rf"{second.task_id} \(reported\); each hand-out is reported once"):
        source.report([second.task_id] * 2, [1.0, 1.0])  # once counted, this turned 0.75 into 0.6
    assert source.stats.rates() == rates and len(source.rewarded) == rewarded and source.handouts.counts() == counts
    # the simulator writes the same two tasks again: two further hand-outs, each reported on its own
    again = source.next_tasks(2)
    assert [t.task_id for t in again] == [first.task_id, second.task_id]
    with pytest.raises(ValueError, match=first.task_id):  # one open hand-out, one already reported: nothing changes
        source.report([first.task_id, first.task_id], [1.0, 1.0], handout_ids=[2, 0])
    assert source.report([first.task_id] * 2, [0.0, 0.0])["outstanding"] == 1
    assert source.stats.rates() == {"Calculator": 0.5}


def test_read_ahead_rows_stay_outstanding_until_retired(adapter, tmp_path):
    """TRL reads rows ahead of training: 6 handed out, 4 trained (G = 2 attempts each, one batch). The 2 rows read
    ahead are counted as outstanding, logged, and released by ``retire``; a retired row's report is refused."""
    source = curriculum(adapter)
    rows = list(itertools.islice(iter(source.dataset()), 6))
    assert [row["handout_id"] for row in rows] == list(range(6))
    assert source.handouts.counts() == {"handed_out": 6, "reported": 0, "retired": 0, "outstanding": 6}
    trained = [row for row in rows[:4] for _ in range(2)]  # TRL repeats each row for its G rollouts
    logged = {}

    def reward(completions, task_id, **kwargs):
        return [1.0 if i % 2 == 0 else 0.0 for i in range(len(completions))]

    source.reporting(reward)(
        prompts=[row["prompt"] for row in trained],
        completions=["answer"] * len(trained),
        task_id=[row["task_id"] for row in trained],
        handout_id=[row["handout_id"] for row in trained],
        task=[row["task"] for row in trained],
        log_metric=logged.__setitem__,
    )
    # the scripted simulator wrote the same two tasks each time: the batch holds two hand-outs of each, both closed
    assert len({row["task_id"] for row in rows[:4]}) == 2
    assert logged["curriculum/outstanding"] == 2.0 and logged["curriculum/p_hat"] == 0.5
    assert source.handouts.counts() == {"handed_out": 6, "reported": 4, "retired": 0, "outstanding": 2}
    assert source.handouts.outstanding_ids == [rows[4]["task_id"], rows[5]["task_id"]]
    source.save(tmp_path / "state")  # outstanding hand-outs are kept across a resume
    resumed = curriculum(adapter)
    resumed.load(tmp_path / "state")
    assert resumed.handouts.to_dict() == source.handouts.to_dict()
    assert resumed.report([rows[4]["task_id"]], [1.0], handout_ids=[4])["outstanding"] == 1
    assert source.retire(source.handouts.outstanding_ids) == 2
    assert source.handouts.counts() == {"handed_out": 6, "reported": 4, "retired": 2, "outstanding": 0}
    with pytest.raises(ValueError, match=rf"{rows[4]['task_id']} \(retired\)"):
        source.report([rows[4]["task_id"]] * 2, [1.0, 0.0], handout_ids=[4, 4])
    with pytest.raises(ValueError, match="never handed out: apibank-gen-nothing"):
        source.retire(["apibank-gen-nothing"])


def test_every_wrong_type_is_named(adapter):
    source = curriculum(adapter)
    (task,) = source.next_tasks(1)
    refused = [
        (lambda: source.report(None, [1.0]), TypeError, "task_ids must be a list or tuple, got NoneType"),
        (lambda: source.report(task.task_id, [1.0]), TypeError, "task_ids must be a list or tuple, got str"),
        (lambda: source.report([task], [1.0]), TypeError, r"task_ids\[0\] is a Task, not its id: pass task.task_id"),
        (lambda: source.report([7], [1.0]), TypeError, r"task_ids\[0\] is of type int, not a task id"),
        (lambda: source.report([task.task_id], [None]), TypeError, r"rewards\[0\] is None, not a number"),
        (lambda: source.report([task.task_id], ["1"]), TypeError, r"rewards\[0\] is of type str, not a number"),
        (lambda: source.report([task.task_id], 1.0), TypeError, "rewards must be a list or tuple, got float"),
        (lambda: source.report([task.task_id], {1.0}), TypeError, "rewards must be a list or tuple, got set"),
        (lambda: source.report([task.task_id], [1.0, 0.0]), ValueError, "task_ids has 1 entries but rewards has 2"),
        (lambda: source.report([task.task_id], [1.0], ["0"]), TypeError, r"handout_ids\[0\] is of type str"),
        (lambda: source.report([task.task_id], [1.0], [0, 1]), ValueError, "handout_ids has 2"),
        (lambda: source.report([task.task_id], [1.0], [99]), ValueError, r"handout_ids\[0\] is 99, not a hand-out"),
        (lambda: source.next_tasks(2.0), TypeError, "n must be an int, got float"),
        (lambda: source.next_tasks("2"), TypeError, "n must be an int, got str"),
        (lambda: source.retire(task.task_id), TypeError, "task_ids must be a list or tuple, got str"),
        (lambda: source.retire([task]), TypeError, r"task_ids\[0\] is a Task"),
        (lambda: source.reporting("episode_reward"), TypeError, "reward_func must be a callable"),
        (
            lambda: source.reporting(lambda completions, **kwargs: [1.0])(completions=["a", "b"], task_id=["x", "y"]),
            ValueError,
            "returned 1 rewards for a batch of 2 completions",
        ),
    ]
    for call, error, message in refused:
        with pytest.raises(error, match=message):
            call()
    assert source.handouts.counts() == {"handed_out": 1, "reported": 0, "retired": 0, "outstanding": 1}
    assert source.stats.rates() == {}
    assert source.report((task.task_id, task.task_id), np.array([1.0, 0.0]))["p_hat"] == 0.5  # tuples, arrays


def test_a_format_1_state_resumes_only_when_nothing_was_outstanding(adapter, tmp_path):
    """States saved before hand-outs were kept (format 1) load when saved right after a report."""
    source = curriculum(adapter)
    tasks = source.next_tasks(2)
    source.report(*zip(*_attempts(tasks)))
    source.save(tmp_path / "state")
    state = json.loads((tmp_path / "state" / "curriculum.json").read_text())
    del state["handouts"]
    state.update(format=1, handed_out=[t.to_dict() for t in tasks], unreported=0)
    (tmp_path / "state" / "curriculum.json").write_text(json.dumps(state))
    resumed = curriculum(adapter)
    resumed.load(tmp_path / "state")
    assert resumed.handouts.counts() == {"handed_out": 2, "reported": 2, "retired": 0, "outstanding": 0}
    with pytest.raises(ValueError, match=r"\(reported\)"):
        resumed.report([tasks[0].task_id], [1.0])
    state["unreported"] = 1
    (tmp_path / "state" / "curriculum.json").write_text(json.dumps(state))
    with pytest.raises(ValueError, match="format-1 curriculum state saved with 1 tasks handed out and not reported"):
        curriculum(adapter).load(tmp_path / "state")
