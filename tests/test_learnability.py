"""curriculum=learnability: the p(1-p) draw, its online Beta estimates, exploration of unplayed tasks, retirement,
its state across a checkpoint, a co-evolution run with it, and LearnabilityCurriculum driving TRL's GRPOTrainer."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
from conftest import REPO, child_env, data_dir, two_step_grpo_config
from test_train import _train_command, tiny_config
from toy_benchmark import ToyAdapter

from genenv.checkpoints import latest_checkpoint, read_metrics
from genenv.coevolution import CoEvolutionTrainer, GenEnvConfig
from genenv.curriculum import LearnabilityConfig, LearnabilityCurriculum
from genenv.curriculum.learnability import LearnabilitySampler, LearnabilitySource
from genenv.integrations.trl import environment_factory, episode_reward
from genenv.llm.models import build_tiny_policy


def sampler(n: int = 3, **settings) -> LearnabilitySampler:
    return LearnabilitySampler([f"t{i}" for i in range(n)], LearnabilityConfig(**settings))


def draw_counts(s: LearnabilitySampler, draws: int, seed: int = 0) -> Counter:
    rng = np.random.default_rng(seed)
    return Counter(task_id for _ in range(draws) for task_id in s.draw(1, rng))


def test_played_tasks_are_drawn_in_proportion_to_p_times_1_minus_p():
    s = sampler(exploration=0.0, retire_after=None)
    s.update("t0", [1.0, 0.0])  # Beta(2, 2): p = 0.5
    s.update("t1", [1.0] * 8)  # Beta(9, 1): p = 0.9
    s.update("t2", [0.0] * 8)  # Beta(1, 9): p = 0.1
    assert [s.success(t) for t in ("t0", "t1", "t2")] == pytest.approx([0.5, 0.9, 0.1])
    assert [s.learnability(t) for t in ("t0", "t1", "t2")] == pytest.approx([0.25, 0.09, 0.09])
    counts = draw_counts(s, 20_000)
    shares = np.array([counts[t] for t in ("t0", "t1", "t2")]) / 20_000
    assert shares == pytest.approx(np.array([0.25, 0.09, 0.09]) / 0.43, abs=0.015)
    rng = np.random.default_rng(0)
    assert sorted(s.draw(3, rng)) == ["t0", "t1", "t2"] and len(s.draw(5, rng)) == 3  # without replacement


def test_estimates_follow_every_reported_group_online():
    s = sampler(prior_successes=2.0, prior_failures=6.0, exploration=0.0, retire_after=None)
    assert s.success("t0") == 0.25  # the prior's mean before any attempt
    s.update("t0", [1.0, 0.5, 0.0])  # a partial score counts half a success, half a failure
    assert s.success("t0") == pytest.approx((2 + 1.5) / (8 + 3))
    s.update("t0", [1.0, 1.0])
    assert s.success("t0") == pytest.approx((2 + 3.5) / (8 + 5))
    assert s.estimates["t0"].successes == 3.5 and s.estimates["t0"].failures == 1.5
    # the draw follows the estimates as they move: t1 failed 4 times (p = 2/12), then solved 6 of 12 (p = 8/24)
    s.update("t1", [0.0] * 4)
    before = draw_counts(s, 4000)["t1"] / 4000
    s.update("t1", [1.0, 0.0] * 6)
    after = draw_counts(s, 4000)["t1"] / 4000
    t0 = s.learnability("t0")
    assert before == pytest.approx((2 / 12 * 10 / 12) / (2 / 12 * 10 / 12 + t0), abs=0.025)
    assert after == pytest.approx((8 / 24 * 16 / 24) / (8 / 24 * 16 / 24 + t0), abs=0.025) and after > before + 0.08
    with pytest.raises(ValueError, match="not a task of this curriculum's pool"):
        s.update("elsewhere", [1.0])


def test_unplayed_tasks_have_the_prior_and_the_exploration_share():
    s = sampler(n=40, exploration=0.3, retire_after=None)
    rng = np.random.default_rng(1)
    first = s.draw(5, rng)
    assert len(set(first)) == 5 and not s.estimates  # nothing played yet: all five are unplayed tasks
    for task_id in [f"t{i}" for i in range(20)]:
        s.update(task_id, [1.0, 0.0])
    unplayed = sum(s.draw(1, rng)[0] not in s.estimates for _ in range(4000))
    assert unplayed / 4000 == pytest.approx(0.3, abs=0.03)
    greedy = sampler(n=4, exploration=0.0, retire_after=None)
    greedy.update("t0", [1.0, 0.0])
    picks = greedy.draw(3, np.random.default_rng(0))  # one played task: unplayed ones make up the rest
    assert "t0" in picks and len(set(picks)) == 3
    assert all(greedy.draw(1, np.random.default_rng(i)) == ["t0"] for i in range(50))  # no exploration otherwise


def test_tasks_every_attempt_solves_are_retired():
    s = sampler(n=3, exploration=0.0, retire_after=2)
    assert s.update("t0", [1.0, 1.0]) is False
    assert s.update("t0", [1.0, 0.0]) is False  # a failure resets the count
    assert s.update("t0", [1.0, 1.0]) is False
    assert s.update("t0", [1.0, 1.0]) is True and s.retired == {"t0"}
    for _ in range(5):
        s.update("t1", [0.0, 0.0])  # never solved: kept
    s.update("t2", [1.0, 0.0])
    assert s.retired == {"t0"} and "t0" not in {t for seed in range(50) for t in s.draw(3, np.random.default_rng(seed))}
    assert s.summary() == {"pool": 3, "played": 3, "retired": 1, "unplayed": 0, "mean_learnability": pytest.approx(
        (s.learnability("t1") + s.learnability("t2")) / 2
    )}  # fmt: skip
    never = sampler(n=1, retire_after=None)
    assert not any(never.update("t0", [1.0]) for _ in range(10))


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"prior_successes": 0}, "prior_successes must be a number > 0"),
        ({"exploration": 1.5}, r"exploration must lie in \[0, 1\]"),
        ({"retire_after": 0}, "retire_after must be an int of at least 1 or null"),
    ],
)
def test_bad_settings_are_refused_by_name(settings, message):
    with pytest.raises(ValueError, match=message):
        LearnabilityConfig(**settings)
    with pytest.raises(ValueError, match="learnability has no setting explore"):
        LearnabilityConfig.of({"explore": 0.1})


def test_the_source_reports_groups_and_its_state_round_trips():
    tasks = ToyAdapter().load_tasks("train")
    source = LearnabilitySource(tasks, LearnabilityConfig(retire_after=1))
    epoch = source.epoch_tasks(None, 0, 2, np.random.default_rng(0), {})
    more = source.more_tasks(None, 0, 5, np.random.default_rng(1), {})
    assert len(epoch.fresh) == 2 and len(more.fresh) == 3 and not epoch.proposals
    assert not {t.task_id for t in epoch.fresh} & {t.task_id for t in more.fresh}  # refills are other tasks
    a, b = (task.task_id for task in epoch.fresh)
    learnt = source.report([a, a, b, b, "replayed-elsewhere"], [1.0, 1.0, 0.0, 1.0, 1.0])
    assert learnt["played"] == 2 and learnt["retired"] == learnt["newly_retired"] == 1
    state = json.loads(json.dumps(source.state_dict()))
    resumed = LearnabilitySource(tasks, LearnabilityConfig(retire_after=1))
    resumed.load_state_dict(state)
    assert resumed.sampler.estimates == source.sampler.estimates and resumed.sampler.retired == {a}
    with pytest.raises(ValueError, match="same curriculum.learnability settings"):
        LearnabilitySource(tasks, LearnabilityConfig(retire_after=2)).load_state_dict(state)
    with pytest.raises(ValueError, match="tasks that are not in the pool"):
        LearnabilitySource(tasks[2:], LearnabilityConfig(retire_after=1)).load_state_dict(state)


def learnability_config(run_dir, **overrides) -> GenEnvConfig:
    settings = dict(curriculum="learnability", epochs=1, replay_tasks=0, validation_split=None)
    return tiny_config(run_dir, **{**settings, **overrides})


def test_a_run_trains_on_base_tasks_and_resumes_with_the_curriculums_state(tmp_path):
    """One epoch of genenv.train's trainer with the tiny model, resumed for a second: the estimates the checkpoint
    holds come back, and the resumed run ends where an uninterrupted one of two epochs does."""
    config = learnability_config(tmp_path / "run", learnability=LearnabilityConfig(exploration=0.5))
    trainer = CoEvolutionTrainer(config)
    assert trainer.simulator is None and trainer.simulator_policy is None
    (first,) = trainer.train()
    assert first["curriculum"] == "learnability" and first["fresh_tasks"] == 2 and first["proposals"] == 0
    assert first["task_source"]["played"] == 2 and first["task_source"]["pool"] == 853  # API-Bank's train split
    saved = trainer.task_source.state_dict()
    assert json.loads((latest_checkpoint(tmp_path / "run") / "state.json").read_text())["task_source"] == saved
    assert sum(e["successes"] + e["failures"] for e in saved["estimates"].values()) == 4  # 2 tasks x G = 2

    resumed = CoEvolutionTrainer(replace(config, epochs=2), resume=True)
    assert resumed.task_source.state_dict() == saved
    (second,) = resumed.train()
    assert second["epoch"] == 1
    straight = CoEvolutionTrainer(replace(config, epochs=2, run_dir=str(tmp_path / "straight")))
    straight.train()
    assert resumed.task_source.state_dict() == straight.task_source.state_dict()
    with pytest.raises(ValueError, match="learnability.exploration must lie in"):
        replace(config.curriculum, learnability={"exploration": -1})


def test_genenv_train_runs_an_epoch_with_curriculum_learnability(tmp_path):
    data_dir("apibank")
    command = _train_command(
        tmp_path, "curriculum=learnability", "coevolution.epochs=1", "coevolution.replay_tasks=0",
        "coevolution.tasks_per_epoch=2", "curriculum.learnability.exploration=1.0",
    )  # fmt: skip
    result = subprocess.run(command, cwd=REPO, env=child_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    (metrics,) = read_metrics(tmp_path)
    assert metrics["curriculum"] == "learnability" and metrics["fresh_tasks"] == 2 and metrics["proposals"] == 0
    assert metrics["task_source"]["played"] == 2 and "epoch 0: p_hat=" in result.stdout
    state = json.loads((latest_checkpoint(tmp_path) / "state.json").read_text())
    assert state["config"]["curriculum"]["learnability"]["exploration"] == 1.0
    assert len(state["task_source"]["estimates"]) == 2


def test_it_drives_trls_grpo_trainer_with_a_dataset_and_reports(tmp_path):
    from trl import GRPOTrainer

    adapter = ToyAdapter()
    curriculum = LearnabilityCurriculum(adapter, "train", LearnabilityConfig(exploration=0.5), seed=0)
    seen: list[tuple[list[str], list[float]]] = []

    def reward(completions, environments, **kwargs):
        rewards = episode_reward(completions, environments, **kwargs)
        seen.append((list(kwargs["task_id"]), rewards))
        return rewards

    policy = build_tiny_policy(seed=0)
    trainer = GRPOTrainer(
        model=policy.model,
        processing_class=policy.tokenizer,
        reward_funcs=curriculum.reporting(reward),
        train_dataset=curriculum.dataset(),
        environment_factory=environment_factory(adapter, max_turns=2),
        args=two_step_grpo_config(tmp_path, shuffle_dataset=False, max_completion_length=16),
    )
    trainer.train()
    assert trainer.state.global_step == 2 and len(seen) == 2
    groups = [ids[i] for ids, _ in seen for i in range(0, len(ids), 2)]
    assert all(ids[i] == ids[i + 1] for ids, _ in seen for i in range(0, len(ids), 2))  # G = 2 attempts a group
    assert curriculum.handouts.reported == len(groups) == 4
    estimates = curriculum.sampler.estimates
    assert set(estimates) == set(groups)
    assert sum(e.successes for e in estimates.values()) == sum(r for _, rewards in seen for r in rewards)
    assert sum(e.successes + e.failures for e in estimates.values()) == 8
    logged = [entry["curriculum/p_hat"] for entry in trainer.state.log_history if "curriculum/p_hat" in entry]
    assert logged == pytest.approx([float(np.mean(rewards)) for _, rewards in seen])


def test_the_curriculum_hands_out_reports_refuses_and_resumes(tmp_path):
    curriculum = LearnabilityCurriculum(ToyAdapter(), "train", LearnabilityConfig(retire_after=1), seed=3)
    first = [task.task_id for _ in range(5) for task in curriculum.next_tasks(1)]
    assert len(set(first)) == 5  # a task with an open hand-out waits while others are left
    assert len(curriculum.next_tasks(2)) == 2 and curriculum.handouts.outstanding == 7
    with pytest.raises(ValueError, match="never handed out"):
        LearnabilityCurriculum(ToyAdapter(), "train").report(["toy-0-1"], [1.0])
    with pytest.raises(ValueError, match="n must be at least 1"):
        curriculum.next_tasks(0)
    reported = curriculum.report([first[0], first[0], first[1]], [1.0, 1.0, 0.0])
    assert reported["p_hat"] == pytest.approx(2 / 3) and reported["p_hat_per_task"] == {first[0]: 1.0, first[1]: 0.0}
    assert reported["retired"] == 1 and reported["outstanding"] == 5
    with pytest.raises(ValueError, match="split='validation'"):
        LearnabilityCurriculum(ToyAdapter(), "validation")

    curriculum.save(tmp_path)
    again = LearnabilityCurriculum(ToyAdapter(), "train", LearnabilityConfig(retire_after=1))
    again.load(tmp_path)
    assert again.handouts.outstanding == 5 and again.sampler.estimates == curriculum.sampler.estimates
    assert [t.task_id for t in again.next_tasks(3)] == [t.task_id for t in curriculum.next_tasks(3)]

    solved = LearnabilityCurriculum(ToyAdapter(), "train", LearnabilityConfig(retire_after=1))
    for task in solved.next_tasks(5):
        solved.report([task.task_id], [1.0])
    with pytest.raises(RuntimeError, match="every task of toy split 'train' is retired"):
        solved.next_tasks(1)
