"""The learnability rule's per-task estimates: a Beta posterior of each task's success, draws in proportion to
``p (1 - p)`` with an exploration share of unplayed tasks, and the retirement of tasks every attempt solves (the rules
are stated in :mod:`genenv.curriculum.learnability`, which serves the benchmark's tasks by them;
:mod:`genenv.curriculum.aim` serves the simulator's played tasks again by them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from genenv.config import settings_from

__all__ = ["LearnabilityConfig", "LearnabilitySampler", "TaskEstimate", "task_groups"]

_STATE_FORMAT = 1


@dataclass
class LearnabilityConfig:
    """Settings of the learnability curriculum (``curriculum.learnability.*``).

    Args:
        prior_successes: the Beta prior's successes (> 0): every task's estimate before it is played.
        prior_failures: the Beta prior's failures (> 0); with ``prior_successes`` 1 the prior is uniform, mean 0.5.
        exploration: the chance, in [0, 1], that a task handed out is one never played yet (while any is left).
        retire_after: reported groups in a row, every attempt solved, after which a task is retired (at least 1);
            ``None``: never retire.
    """

    prior_successes: float = 1.0
    prior_failures: float = 1.0
    exploration: float = 0.25
    retire_after: int | None = 2

    def __post_init__(self) -> None:
        for name in ("prior_successes", "prior_failures"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"learnability.{name} must be a number > 0, got {value!r}")
        exploration = self.exploration
        if isinstance(exploration, bool) or not isinstance(exploration, (int, float)) or not 0 <= exploration <= 1:
            raise ValueError(f"learnability.exploration must lie in [0, 1], got {exploration!r}")
        retire = self.retire_after
        if retire is not None and (isinstance(retire, bool) or not isinstance(retire, int) or retire < 1):
            raise ValueError(f"learnability.retire_after must be an int of at least 1 or null, got {retire!r}")

    @classmethod
    def of(cls, value: LearnabilityConfig | Mapping[str, Any]) -> LearnabilityConfig:
        """``value`` itself, or the config its mapping of settings describes (a Hydra config's, a checkpoint's);
        unknown settings raise a ``ValueError`` naming them."""
        return settings_from(cls, value, "learnability")


@dataclass
class TaskEstimate:
    """What the reported attempts at one task add up to: summed rewards, summed ``1 - reward``, and the reported
    groups in a row whose every attempt was solved."""

    successes: float = 0.0
    failures: float = 0.0
    solved_streak: int = 0


class LearnabilitySampler:
    """The per-task estimates, the draw and the retirement rule of the module's docstring, over ``task_ids`` (distinct
    ids, in a fixed order that makes draws reproducible for a seeded generator).

    Attributes:
        estimates: the played tasks' estimates (a task not in it has never been reported).
        retired: the ids of the retired tasks.
    """

    def __init__(self, task_ids: Sequence[str], config: LearnabilityConfig) -> None:
        ids = list(task_ids)
        if len(set(ids)) != len(ids):
            duplicated = sorted({task_id for task_id in ids if ids.count(task_id) > 1})
            raise ValueError(f"task_ids must be distinct; repeated: {', '.join(duplicated[:5])}")
        self.task_ids = ids
        self.config = config
        self.estimates: dict[str, TaskEstimate] = {}
        self.retired: set[str] = set()
        self._known = set(ids)

    def add(self, task_ids: Sequence[str]) -> None:
        """Add tasks to the pool (after the ones it has, in this order); ids it holds already are refused."""
        ids = list(task_ids)
        if repeated := sorted(self._known.intersection(ids) | {t for t in ids if ids.count(t) > 1}):
            raise ValueError(f"task_ids already in the pool or repeated: {', '.join(repeated[:5])}")
        self.task_ids += ids
        self._known.update(ids)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._known

    def success(self, task_id: str) -> float:
        """The posterior mean of the agent's success at ``task_id`` (the prior's mean if never played)."""
        estimate = self.estimates.get(task_id, TaskEstimate())
        a = self.config.prior_successes + estimate.successes
        return a / (a + self.config.prior_failures + estimate.failures)

    def learnability(self, task_id: str) -> float:
        """``p (1 - p)`` of the task's estimated success ``p``: its weight in a draw among played tasks."""
        p = self.success(task_id)
        return p * (1.0 - p)

    def draw(self, n: int, rng: np.random.Generator, exclude: frozenset[str] | set[str] = frozenset()) -> list[str]:
        """Up to ``n`` distinct task ids, neither retired nor in ``exclude``: each one unplayed with probability
        ``exploration``, the rest by learnability among the played (fewer when fewer are left)."""
        active = [task_id for task_id in self.task_ids if task_id not in self.retired and task_id not in exclude]
        unplayed = [task_id for task_id in active if task_id not in self.estimates]
        played = [task_id for task_id in active if task_id in self.estimates]
        n = min(n, len(active))
        if n <= 0:
            return []
        explore = min(len(unplayed), max(int(rng.binomial(n, self.config.exploration)), n - len(played)))
        picks = [unplayed[int(i)] for i in rng.choice(len(unplayed), explore, replace=False)] if explore else []
        if exploit := n - explore:
            weights = np.array([self.learnability(task_id) for task_id in played])
            chosen = rng.choice(len(played), exploit, replace=False, p=weights / weights.sum())
            picks += [played[int(i)] for i in chosen]
        return picks

    def update(self, task_id: str, rewards: Sequence[float]) -> bool:
        """Add one reported group (every attempt's reward, in [0, 1]) to ``task_id``'s estimate; returns whether the
        group retired it."""
        if task_id not in self._known:
            raise ValueError(f"task_id {task_id!r} is not a task of this curriculum's pool")
        if not rewards:
            raise ValueError(f"rewards of {task_id!r} are empty: a group has at least one attempt")
        estimate = self.estimates.setdefault(task_id, TaskEstimate())
        estimate.successes += float(sum(rewards))
        estimate.failures += float(sum(1.0 - r for r in rewards))
        estimate.solved_streak = estimate.solved_streak + 1 if all(r >= 1.0 for r in rewards) else 0
        retire_after = self.config.retire_after
        if retire_after is not None and estimate.solved_streak >= retire_after and task_id not in self.retired:
            self.retired.add(task_id)
            return True
        return False

    def summary(self) -> dict[str, float]:
        """``pool``, ``played``, ``retired`` and ``unplayed`` task counts, and ``mean_learnability``: the mean
        ``p (1 - p)`` of the played tasks still in the draw (0 when none)."""
        active_played = [t for t in self.estimates if t not in self.retired]
        mean = float(np.mean([self.learnability(t) for t in active_played])) if active_played else 0.0
        return {
            "pool": len(self.task_ids),
            "played": len(self.estimates),
            "retired": len(self.retired),
            "unplayed": len(self.task_ids) - len(self.estimates),
            "mean_learnability": mean,
        }

    def state_dict(self) -> dict[str, Any]:
        """The estimates and the retired tasks, JSON-ready (what :meth:`load_state_dict` restores)."""
        return {
            "format": _STATE_FORMAT,
            "config": asdict(self.config),
            "estimates": {task_id: asdict(estimate) for task_id, estimate in self.estimates.items()},
            "retired": sorted(self.retired),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s output; refuses (``ValueError``) another format, other settings, or
        tasks that are not in this pool (a resume must draw from the same pool with the same settings)."""
        if state.get("format") != _STATE_FORMAT:
            raise ValueError(f"unknown learnability state format {state.get('format')!r}")
        if state["config"] != asdict(self.config):
            raise ValueError(
                f"the saved learnability state has the settings {state['config']}, this curriculum "
                f"{asdict(self.config)}: resume with the same curriculum.learnability settings"
            )
        named = set(state["estimates"]) | set(state["retired"])
        if unknown := sorted(named - self._known):
            raise ValueError(
                f"the saved learnability state names {len(unknown)} tasks that are not in the pool (e.g. "
                f"{unknown[0]}): resume with the same benchmark, split and options"
            )
        self.estimates = {task_id: TaskEstimate(**values) for task_id, values in state["estimates"].items()}
        self.retired = set(state["retired"])


def task_groups(task_ids: Sequence[str], rewards: Sequence[float]) -> dict[str, list[float]]:
    """Each task id's rewards, in the order of first appearance."""
    groups: dict[str, list[float]] = {}
    for task_id, reward in zip(task_ids, rewards, strict=True):
        groups.setdefault(task_id, []).append(float(reward))
    return groups
