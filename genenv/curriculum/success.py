"""The agent's success on the simulator's tasks and what each simulator output earns from it.

A batch of attempts gives ``p_hat`` per task (the mean reward of the agent's attempts at it) and the rewards per
family (what :class:`~genenv.curriculum.stats.FamilyStats` shows the simulator). Each simulator output whose task was
played earns ``R_env = exp(-beta (p_hat - alpha)^2)`` and, inside the band ``|p_hat - alpha| <= k``, trains the
simulator with the weight ``exp(lambda R_env)``. The co-evolution trainer and
:class:`~genenv.curriculum.alpha.AlphaCurriculum` both score their simulator through these two steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from genenv.benchmarks.base import Task
from genenv.curriculum.reward import DifficultyFilter, alpha_reward, rwr_weight


@dataclass
class BatchSuccess:
    """The agent's success on a batch of tasks: every attempt's reward per family, and ``p_hat`` per task."""

    per_family: dict[str, list[float]]
    per_task: dict[str, float]
    p_hat: float | None  # over all the attempts

    @classmethod
    def of(cls, attempts: Iterable[tuple[Task, float]], family: Callable[[Task], str]) -> BatchSuccess:
        """The success of ``attempts`` (task, reward in [0, 1]); ``family`` maps a task to its family."""
        per_family: dict[str, list[float]] = {}
        per_task: dict[str, list[float]] = {}
        rewards: list[float] = []
        for task, reward in attempts:
            per_family.setdefault(family(task), []).append(reward)
            per_task.setdefault(task.task_id, []).append(reward)
            rewards.append(reward)
        p_hat = float(np.mean(rewards)) if rewards else None
        return cls(per_family, {task_id: float(np.mean(r)) for task_id, r in per_task.items()}, p_hat)

    def r_env(self, alpha: float, beta: float) -> dict[str, float]:
        """``R_env`` of each played task."""
        return {task_id: alpha_reward(p_hat, alpha, beta) for task_id, p_hat in self.per_task.items()}


@dataclass(frozen=True)
class OutputReward:
    """What one simulator output earns: its task's ``p_hat`` (``None``: not played, or no valid task), ``R_env`` (0
    when not played), whether it trains the simulator (played and inside the band) and its RWR weight."""

    p_hat: float | None
    r_env: float
    kept: bool
    weight: float


def output_rewards(
    task_ids: Sequence[str | None],
    success: BatchSuccess,
    *,
    alpha: float,
    beta: float,
    band: DifficultyFilter,
    lam: float,
) -> list[OutputReward]:
    """The reward of each simulator output, given the task id it wrote (``None``: rejected) and the agent's success."""
    r_env = success.r_env(alpha, beta)
    rewards = []
    for task_id in task_ids:
        p_hat = success.per_task.get(task_id) if task_id is not None else None
        earned = r_env.get(task_id, 0.0) if task_id is not None else 0.0
        kept = p_hat is not None and band(p_hat)
        rewards.append(OutputReward(p_hat, earned, kept, rwr_weight(earned, lam)))
    return rewards
