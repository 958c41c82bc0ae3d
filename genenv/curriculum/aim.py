"""How GenEnv's environment policy aims beyond its prompt (``curriculum.aim.*``): which keys it asks the simulator
for, and which of its own written tasks it serves again.

The simulator's prompt shows the agent's success per family, and RWR trains it toward tasks at ``alpha``; both leave
the *request* (the family or family-level key each output is asked for) uniform, and every written task is played once.
Two levers change that, each off by default (the paper's GenEnv):

- **Aimed requests** (``requests="informative"``). Each key's latest ``window`` groups are kept: a group is
  *informative* when its attempts disagree (some solved, some not: GRPO learns from it). A key's informative rate is a
  Beta posterior mean over them, ``(informative + 1) / (groups + 2)``, 0.5 before any group. Each request is, with
  probability ``exploration``, a key drawn uniformly; otherwise a key drawn in proportion to its informative rate. A
  group counts for the key its task was requested as, the first time the task is played.
- **Re-serving** (``reserve`` in [0, 1]). That share of each batch of tasks is drawn from the written tasks already
  played, by the learnability rule of :mod:`genenv.curriculum.learnability` (``p (1 - p)`` of each task's Beta
  posterior; a task every attempt solved twice in a row is retired); the rest is written fresh. While fewer tasks
  have been played, fresh ones make up the difference.

:class:`WrittenAim` holds both: the written source (:class:`~genenv.curriculum.sources.WrittenEachEpoch`) asks it
for the requests and the re-served tasks, and reports every group to it. Its state goes into checkpoints.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from genenv.benchmarks.base import Task
from genenv.config import check_types, settings_from
from genenv.curriculum.sampler import LearnabilityConfig, LearnabilitySampler

__all__ = ["AimConfig", "WrittenAim", "informative"]

_STATE_FORMAT = 1


@dataclass
class AimConfig:
    """Settings of the levers (``curriculum.aim.*``; the defaults are the paper's GenEnv: neither lever on).

    Args:
        requests: ``"uniform"`` (every key as likely) or ``"informative"`` (keys drawn by their informative rate).
        exploration: with ``"informative"``, the chance in [0, 1] that a request's key is drawn uniformly.
        window: the latest groups per key its informative rate is estimated from (the agent changes as it learns).
        reserve: the share in [0, 1] of each batch of tasks served again from the written tasks already played.
    """

    requests: Literal["uniform", "informative"] = "uniform"
    exploration: float = 0.25
    window: int = 32
    reserve: float = 0.0

    def __post_init__(self) -> None:
        check_types(self, "curriculum.aim")
        for name in ("exploration", "reserve"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"curriculum.aim.{name} must lie in [0, 1], got {getattr(self, name)}")
        if self.window < 1:
            raise ValueError(f"curriculum.aim.window must be at least 1, got {self.window}")

    @property
    def active(self) -> bool:
        """Whether any lever is on."""
        return self.requests != "uniform" or self.reserve > 0

    @classmethod
    def of(cls, value: AimConfig | Mapping[str, Any]) -> AimConfig:
        """``value`` itself, or the config its mapping of settings describes (unknown settings: ``ValueError``)."""
        return settings_from(cls, value, "curriculum.aim")


def informative(rewards: Sequence[float]) -> bool:
    """Whether a group's attempts disagree: at least one solved (reward 1) and one not."""
    return any(r >= 1.0 for r in rewards) and any(r < 1.0 for r in rewards)


class WrittenAim:
    """The levers' state: each key's groups and informative groups, the key each written task was requested as, and
    the written tasks already played with their learnability estimates."""

    def __init__(self, config: AimConfig) -> None:
        self.config = config
        self.groups: dict[str, deque[bool]] = {}  # key -> whether each of its latest groups was informative
        self.requested: dict[str, tuple[Task, str]] = {}  # task id -> the task and its key, until its first report
        self.played: dict[str, Task] = {}  # the written tasks played, by id (what re-serving draws from)
        self.sampler = LearnabilitySampler([], LearnabilityConfig(exploration=0.0))

    def informative_rate(self, key: str) -> float:
        """The posterior mean of ``key``'s informative rate (0.5 before any group)."""
        recent = self.groups.get(key, ())
        return (sum(recent) + 1) / (len(recent) + 2)

    def requests(self, keys: Sequence[str], n: int, rng: np.random.Generator) -> list[str] | None:
        """``n`` request keys drawn from ``keys`` (``None`` with uniform requests: the simulator draws its own)."""
        if self.config.requests == "uniform":
            return None
        weights = np.array([self.informative_rate(key) for key in keys])
        aimed = rng.choice(len(keys), n, p=weights / weights.sum())
        uniform = rng.integers(len(keys), size=n)
        explore = rng.random(n) < self.config.exploration
        return [keys[int(u if e else a)] for a, u, e in zip(aimed, uniform, explore, strict=True)]

    def written(self, tasks: Sequence[Task], keys: Sequence[str]) -> None:
        """Remember the fresh ``tasks`` handed out and the key each was requested as (``keys[i]``)."""
        for task, key in zip(tasks, keys, strict=True):
            self.requested.setdefault(task.task_id, (task, key))

    def reserved(self, wanted: int, rng: np.random.Generator, exclude: set[str]) -> list[Task]:
        """Up to ``round(reserve * wanted)`` written tasks already played, drawn by learnability, none in
        ``exclude``."""
        n = round(self.config.reserve * wanted)
        return [self.played[task_id] for task_id in self.sampler.draw(n, rng, exclude=exclude)] if n else []

    def report(self, groups: Mapping[str, Sequence[float]]) -> dict[str, float]:
        """Count each group (task id -> its attempts' rewards) of a task written here for its requested key (its first
        group) and, with re-serving, into the task's estimate; other groups are left out. Returns the share of
        informative groups among those counted."""
        counted = []
        for task_id, rewards in groups.items():
            if task_id in self.requested:
                task, key = self.requested.pop(task_id)
                self.groups.setdefault(key, deque(maxlen=self.config.window)).append(informative(rewards))
                if self.config.reserve > 0 and task_id not in self.played:  # a task written again is added once
                    self.played[task_id] = task
                    self.sampler.add([task_id])
            elif task_id not in self.played:
                continue
            counted.append(informative(rewards))
            if self.config.reserve > 0:
                self.sampler.update(task_id, rewards)
        return {"aim_informative": float(np.mean(counted))} if counted else {}

    def state_dict(self) -> dict[str, Any]:
        """Everything :meth:`load_state_dict` needs, JSON-ready."""
        return {
            "format": _STATE_FORMAT,
            "config": asdict(self.config),
            "groups": {key: list(recent) for key, recent in self.groups.items()},
            "requested": {task_id: [task.to_dict(), key] for task_id, (task, key) in self.requested.items()},
            "played": [task.to_dict() for task in self.played.values()],
            "sampler": self.sampler.state_dict(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict`; refuses another format or other settings."""
        if state.get("format") != _STATE_FORMAT:
            raise ValueError(f"unknown curriculum.aim state format {state.get('format')!r}")
        if state["config"] != asdict(self.config):
            raise ValueError(
                f"the saved curriculum.aim state has the settings {state['config']}, this run {asdict(self.config)}: "
                "resume with the same settings"
            )
        self.groups = {key: deque(recent, maxlen=self.config.window) for key, recent in state["groups"].items()}
        self.requested = {task_id: (Task.from_dict(task), key) for task_id, (task, key) in state["requested"].items()}
        self.played = {task["task_id"]: Task.from_dict(task) for task in state["played"]}
        self.sampler = LearnabilitySampler(list(self.played), LearnabilityConfig(exploration=0.0))
        self.sampler.load_state_dict(state["sampler"])
