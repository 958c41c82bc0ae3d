"""Dynamic sampling (DAPO): a generation batch refilled until it holds enough groups that GRPO can learn from.

A group is the G episodes of one task. GRPO's advantage is each reward minus the group's mean, so a group whose G
rewards are all equal (every attempt solved the task, or none did) has a zero advantage everywhere and teaches
nothing. With dynamic sampling such groups are dropped and further tasks are played, a whole generation batch of them
at a time, until the batch holds as many informative groups (rewards not all equal) as it has places, or the round
budget runs out. In GenEnv's terms it is the agent-side half of the difficulty band: the simulator is rewarded for
writing tasks near ``alpha``; the agent's update keeps only the tasks whose attempts disagree.

When the budget runs out the batch is completed with dropped groups (zero advantage, so they change nothing; the
trainer skips their forward and backward pass) and :class:`GroupFilterStats` says so.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

from genenv.agents.rollout import RolloutBatch
from genenv.benchmarks.base import Task

__all__ = ["GroupFilterStats", "Refill", "TaskQueue", "fill_informative", "informative"]

#: ``refill(n)``: up to ``n`` further tasks from the same source as the batch's own (e.g. the simulator)
Refill = Callable[[int], list[Task]]


def informative(rewards: Sequence[float]) -> bool:
    """True when a group's rewards are not all equal (its GRPO advantages are not all zero)."""
    return max(rewards) > min(rewards)


class TaskQueue:
    """The tasks dynamic sampling plays: ``tasks`` in a shuffled order, then ``refill`` when given (new tasks of the
    same source, e.g. written by the simulator), else another shuffled pass over ``tasks``."""

    def __init__(self, tasks: Sequence[Task], refill: Refill | None = None, seed: int = 0) -> None:
        if not tasks and refill is None:
            raise ValueError("a task source needs tasks or a refill function")
        self.tasks = list(tasks)
        self.refill = refill
        self._rng = random.Random(seed)
        self._queue: list[Task] = []
        self._passes = 0
        self.refilled: list[Task] = []  # tasks that came from ``refill``

    def take(self, n: int) -> list[Task]:
        """The next ``n`` tasks (fewer only when ``refill`` has no more)."""
        out: list[Task] = []
        while len(out) < n:
            if not self._queue:
                if self.refill is not None and self._passes > 0:
                    fresh = list(self.refill(n - len(out)))[: n - len(out)]
                    if not fresh:
                        break
                    self.refilled.extend(fresh)
                    self._queue = fresh
                else:
                    self._queue = self._rng.sample(self.tasks, len(self.tasks))
                    self._passes += 1
                    if not self._queue:
                        continue
            out.append(self._queue.pop(0))
        return out


@dataclass
class GroupFilterStats:
    """What dynamic sampling did over a number of generation batches (summed).

    Attributes:
        batches: generation batches built.
        groups_played: groups played, the first round and every refill round.
        groups_informative: of those, groups whose rewards were not all equal.
        groups_kept: informative groups in the batches trained on (at most their places).
        groups_filled: places filled with uninformative groups because the round budget ran out.
        extra_episodes: episodes played beyond the batches' own places (the cost of refilling).
        refill_rounds: refill rounds played.
        exhausted: batches whose round budget ran out before every place held an informative group.
    """

    batches: int = 0
    groups_played: int = 0
    groups_informative: int = 0
    groups_kept: int = 0
    groups_filled: int = 0
    extra_episodes: int = 0
    refill_rounds: int = 0
    exhausted: int = 0

    def add(self, other: GroupFilterStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def to_dict(self) -> dict[str, float]:
        return {f.name: float(getattr(self, f.name)) for f in fields(self)}


def fill_informative(
    play: Callable[[list[Task]], RolloutBatch],
    first: Sequence[Task],
    group_size: int,
    queue: TaskQueue,
    max_rounds: int,
) -> tuple[RolloutBatch, GroupFilterStats]:
    """A batch of ``len(first)`` groups of ``group_size`` episodes, informative ones first.

    ``play(tasks)`` plays every task of its list ``group_size`` times, each task's episodes next to each other (the
    layout TRL's GRPO groups by). ``first`` is played, then, while informative groups are missing and fewer than
    ``max_rounds`` rounds have been played, another ``len(first)`` tasks from ``queue``. Informative groups are kept
    in the order they were played; missing places take the first uninformative groups.
    """
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be >= 1, got {max_rounds}")
    places = len(first)
    stats = GroupFilterStats(batches=1)
    kept: list[RolloutBatch] = []
    dropped: list[RolloutBatch] = []
    tasks = list(first)
    for round_ in range(max_rounds):
        if round_ > 0:
            tasks = queue.take(places)
            if not tasks:
                break
            stats.refill_rounds += 1
        batch = play(tasks)
        for start in range(0, len(batch.rewards), group_size):
            group = batch.select(range(start, start + group_size))
            stats.groups_played += 1
            if informative(group.rewards):
                stats.groups_informative += 1
                kept.append(group)
            else:
                dropped.append(group)
        if len(kept) >= places:
            break
    kept = kept[:places]
    stats.groups_kept = len(kept)
    stats.groups_filled = places - len(kept)
    stats.exhausted = int(stats.groups_filled > 0)
    stats.extra_episodes = (stats.groups_played - places) * group_size
    return RolloutBatch.concat(kept + dropped[: stats.groups_filled]), stats
