"""Dynamic sampling (genenv.agents.dynamic_sampling): uniform groups dropped and refilled, and a refill budget that
runs out and says so; then through the GRPO trainer with the tiny model."""

from __future__ import annotations

import pytest
import torch
from test_grpo import HalfSolvableToyAdapter, rowwise_generator, tiny_config

from genenv.agents.dynamic_sampling import GroupFilterStats, TaskQueue, fill_informative, informative
from genenv.agents.grpo import GRPOAgentTrainer
from genenv.agents.rollout import Episode, RolloutBatch
from genenv.benchmarks.base import Task, Trajectory
from genenv.llm.models import build_tiny_policy

G = 2


def task(k: int) -> Task:
    return Task(task_id=f"t-{k}", benchmark="toy", prompt=f"task {k}", gold={})


def scripted_play(rewards: dict[str, list[float]], played: list[str]):
    """``play(tasks)`` whose episode ``i`` of a task gets ``rewards[task_id][i % G]``; records the tasks it plays."""

    def play(tasks: list[Task]) -> RolloutBatch:
        rows, seen = [], {}
        for t in tasks:
            i = seen.get(t.task_id, 0)
            seen[t.task_id] = i + 1
            if i == 0:
                played.append(t.task_id)
            rows.append(Episode(t, Trajectory(), rewards[t.task_id][i], [], []))
        n = len(rows)
        return RolloutBatch([[1]] * n, [[2]] * n, [[1]] * n, None, [e.reward for e in rows], rows)

    return lambda tasks: play([t for t in tasks for _ in range(G)])


def test_informative_means_rewards_differ():
    assert informative([0.0, 1.0]) and informative([0.2, 0.2, 0.3])
    assert not informative([1.0, 1.0]) and not informative([0.0, 0.0, 0.0])


def test_uniform_groups_are_dropped_and_the_batch_refilled_from_the_source():
    rewards = {"t-0": [1, 1], "t-1": [0, 1], "t-2": [0, 0], "t-3": [1, 0], "t-4": [0, 0], "t-5": [1, 0]}
    played: list[str] = []
    source = TaskQueue([task(2), task(3), task(4), task(5)], seed=0)
    source._queue = [task(2), task(3), task(4), task(5)]  # a fixed order for the assertion
    source._passes = 1
    batch, stats = fill_informative(scripted_play(rewards, played), [task(0), task(1)], G, source, max_rounds=4)
    # round 1: t-0 uniform, t-1 informative; round 2: t-2 uniform, t-3 informative -> two informative places
    assert played == ["t-0", "t-1", "t-2", "t-3"]
    assert [e.task.task_id for e in batch.episodes] == ["t-1", "t-1", "t-3", "t-3"]
    assert batch.rewards == [0, 1, 1, 0]
    assert stats == GroupFilterStats(
        batches=1,
        groups_played=4,
        groups_informative=2,
        groups_kept=2,
        groups_filled=0,
        extra_episodes=4,
        refill_rounds=1,
        exhausted=0,
    )


def test_a_refill_budget_that_runs_out_fills_with_uniform_groups_and_says_so():
    rewards = {f"t-{k}": [0, 0] for k in range(8)} | {"t-5": [0, 1]}
    played: list[str] = []
    source = TaskQueue([task(k) for k in range(2, 8)], seed=0)
    source._queue, source._passes = [task(k) for k in range(2, 8)], 1
    batch, stats = fill_informative(scripted_play(rewards, played), [task(0), task(1)], G, source, max_rounds=3)
    assert played == [f"t-{k}" for k in range(6)]  # three rounds of two tasks, then the budget is spent
    assert [e.task.task_id for e in batch.episodes] == ["t-5", "t-5", "t-0", "t-0"]  # the informative one first
    assert stats.exhausted == 1 and stats.groups_kept == 1 and stats.groups_filled == 1
    assert stats.groups_played == 6 and stats.extra_episodes == 8 and stats.refill_rounds == 2


def test_refill_function_supplies_tasks_after_the_list_and_its_tasks_are_recorded():
    asked: list[int] = []

    def refill(n: int) -> list[Task]:
        asked.append(n)
        return [task(100 + len(asked) * 10 + i) for i in range(n)]

    source = TaskQueue([task(0), task(1)], refill, seed=0)
    first = source.take(2)
    assert {t.task_id for t in first} == {"t-0", "t-1"}
    more = source.take(3)
    assert [t.task_id for t in more] == ["t-110", "t-111", "t-112"] and asked == [3]
    assert source.refilled == more


def test_without_refill_the_source_cycles_its_tasks_and_a_dry_refill_stops():
    source = TaskQueue([task(0), task(1)], seed=0)
    assert sorted(t.task_id for t in source.take(4)) == ["t-0", "t-0", "t-1", "t-1"]
    dry = TaskQueue([task(0)], lambda n: [], seed=0)
    assert [t.task_id for t in dry.take(3)] == ["t-0"]
    with pytest.raises(ValueError, match="needs tasks or a refill"):
        TaskQueue([])


def test_grpo_with_dynamic_sampling_trains_only_on_informative_groups(tmp_path):
    """Every other toy task scores 0 whatever the agent writes: with dynamic sampling each step's batch holds only
    graded groups, the uniform ones are played and dropped, and the metrics count both."""
    torch.set_num_threads(1)
    adapter = HalfSolvableToyAdapter()
    uniform, graded = adapter.uniform_and_graded()
    tasks = [uniform[0], graded[0], uniform[1], graded[1]]
    config = tiny_config(tmp_path, dynamic_sampling=True, dynamic_sampling_max_rounds=4, shuffle_tasks=False)
    trainer = GRPOAgentTrainer(build_tiny_policy(0), adapter, config)
    trainer._generator = lambda: rowwise_generator(trainer.tokenizer)
    metrics = trainer.train(tasks, steps=2)
    assert metrics["groups/batches"] == 2 and metrics["groups/groups_kept"] == 2
    assert metrics["groups/groups_informative"] == 2
    assert metrics["groups/groups_filled"] == 0 and metrics["groups/exhausted"] == 0
    played = metrics["groups/groups_played"]
    assert len(trainer.episodes) == 2 * played and metrics["groups/extra_episodes"] == 2 * (played - 2)
    assert metrics["skipped_batches"] == 0  # no micro-batch of zero advantages reached the loss
    assert not any(adapter.unsolvable(e.task) for e in trainer.last_rollout.episodes)


def test_grpo_dynamic_sampling_budget_out_keeps_a_uniform_group_and_counts_it(tmp_path):
    torch.set_num_threads(1)
    adapter = HalfSolvableToyAdapter()
    uniform, _ = adapter.uniform_and_graded()
    config = tiny_config(tmp_path, dynamic_sampling=True, dynamic_sampling_max_rounds=2, shuffle_tasks=False)
    trainer = GRPOAgentTrainer(build_tiny_policy(0), adapter, config)
    trainer._generator = lambda: rowwise_generator(trainer.tokenizer)
    metrics = trainer.train(uniform[:3], steps=1)
    assert metrics["groups/exhausted"] == 1 and metrics["groups/groups_filled"] == 1
    assert metrics["groups/groups_played"] == 2 and metrics["skipped_batches"] == 1
