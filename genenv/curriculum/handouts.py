"""Which tasks a curriculum handed out, and which of them came back: the bookkeeping behind a ``next_tasks`` /
``report`` pair (:class:`~genenv.curriculum.alpha.AlphaCurriculum`, or any task source that learns from the rewards
reported to it).

A *hand-out* is one task given to the trainer; it gets an id, a serial number (``hand_out`` returns them), which a
dataset row can carry so that a report names exactly the hand-outs it covers. The rules:

- a report closes the hand-outs it covers: with ``handout_ids`` (one per attempt) exactly those; without, the
  oldest open hand-out of each task id it names. All the attempts at one hand-out (the G rollouts of its group) come in
  one call, so an id may repeat within a call;
- an attempt whose hand-out is not open is refused with a ``ValueError`` naming the task: never handed out, already
  reported (a second report of the same hand-out) or retired. A refused report changes nothing;
- a task handed out again (a simulator wrote it again) opens a further hand-out, reported on its own;
- :meth:`Handouts.retire` closes the open hand-outs of the tasks it names without a report: rows a trainer read ahead
  and never trained on;
- :attr:`Handouts.outstanding` counts the hand-outs neither reported nor retired.

Wrong types are refused before anything changes, each error naming the argument (``task_ids[3]``, ``rewards``, ...).
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from genenv.benchmarks.base import Task

__all__ = ["Handouts", "check_count", "scored_attempts", "scored_handout_ids"]


class Handouts:
    """The hand-outs of one task source and what became of them (see the module's rules).

    Args:
        reward_range: the bounds a reported reward must lie in (inclusive).

    Attributes:
        handed_out, reported, retired: hand-outs opened, closed by a report and closed by :meth:`retire`, since
            creation (``handed_out`` is also the next hand-out's serial).
    """

    def __init__(self, reward_range: tuple[float, float] = (0.0, 1.0)) -> None:
        low, high = (float(bound) for bound in reward_range)
        if not low <= high:
            raise ValueError(f"reward_range must be (low, high) with low <= high, got {reward_range}")
        self.reward_range = (low, high)
        self.handed_out = self.reported = self.retired = 0
        self._open: dict[int, Task] = {}  # serial -> task of each open hand-out, in hand-out order
        self._closed: dict[str, str] = {}  # task id -> how its last hand-out closed: "reported" or "retired"

    @property
    def outstanding(self) -> int:
        """Hand-outs neither reported nor retired."""
        return len(self._open)

    @property
    def outstanding_ids(self) -> list[str]:
        """The ids of the tasks with an open hand-out, oldest first, each once."""
        return list(dict.fromkeys(task.task_id for task in self._open.values()))

    def counts(self) -> dict[str, int]:
        """``handed_out``, ``reported``, ``retired`` and ``outstanding``."""
        return {
            "handed_out": self.handed_out,
            "reported": self.reported,
            "retired": self.retired,
            "outstanding": self.outstanding,
        }

    def hand_out(self, tasks: Iterable[Task]) -> list[int]:
        """Open one hand-out for each of ``tasks``; returns their serials."""
        tasks = list(tasks)
        for index, task in enumerate(tasks):
            if not isinstance(task, Task):
                raise TypeError(f"tasks[{index}] is of type {type(task).__name__}, not a Task")
        serials = list(range(self.handed_out, self.handed_out + len(tasks)))
        self._open.update(zip(serials, tasks, strict=True))
        self.handed_out += len(tasks)
        return serials

    def report(
        self, task_ids: Sequence[str], rewards: Sequence[float], handout_ids: Sequence[int] | None = None
    ) -> list[tuple[Task, float]]:
        """Close the hand-outs of these attempts (``task_ids[i]`` was attempted with ``rewards[i]``, in hand-out
        ``handout_ids[i]`` when given); returns each attempt as (task, reward). Refuses, changing nothing, wrong types,
        lengths that differ, an empty report, rewards outside ``reward_range`` or not finite, and attempts whose
        hand-out is not open."""
        ids = _task_ids(task_ids, "task_ids")
        values = _rewards(rewards, "rewards")
        if len(ids) != len(values):
            raise ValueError(f"task_ids has {len(ids)} entries but rewards has {len(values)}: one reward per attempt")
        if not ids:
            raise ValueError("report() needs at least one attempt (task_ids and rewards are empty)")
        low, high = self.reward_range
        if bad := [(i, r) for i, r in enumerate(values) if not (math.isfinite(r) and low <= r <= high)]:
            shown = ", ".join(f"rewards[{i}]={r}" for i, r in bad[:5])
            raise ValueError(f"rewards must be finite and lie in [{low:g}, {high:g}]: {shown}")
        if handout_ids is None:
            serials = self._oldest_open(ids)
        else:
            serials = _serials(handout_ids, "handout_ids")
            if len(serials) != len(ids):
                raise ValueError(f"task_ids has {len(ids)} entries but handout_ids has {len(serials)}: one per attempt")
            self._check_open(ids, serials)
        attempts = [(self._open[serial], reward) for serial, reward in zip(serials, values, strict=True)]
        for serial in dict.fromkeys(serials):
            self._close(serial, "reported")
        return attempts

    def retire(self, task_ids: Sequence[str]) -> int:
        """Close every open hand-out of the tasks ``task_ids`` names, unreported; returns how many closed. Refuses,
        changing nothing, an id without an open hand-out."""
        ids = _task_ids(task_ids, "task_ids")
        self._oldest_open(ids)  # refuses ids without an open hand-out
        wanted = set(ids)
        serials = [serial for serial, task in self._open.items() if task.task_id in wanted]
        for serial in serials:
            self._close(serial, "retired")
        return len(serials)

    def _oldest_open(self, ids: list[str]) -> list[int]:
        """The oldest open hand-out of each id, per entry of ``ids``; refuses ids without one."""
        oldest: dict[str, int] = {}
        for serial, task in self._open.items():
            oldest.setdefault(task.task_id, serial)
        closed = [task_id for task_id in dict.fromkeys(ids) if task_id not in oldest]
        if closed:
            self._refuse(closed)
        return [oldest[task_id] for task_id in ids]

    def _check_open(self, ids: list[str], serials: list[int]) -> None:
        for index, (task_id, serial) in enumerate(zip(ids, serials, strict=True)):
            if not 0 <= serial < self.handed_out:
                raise ValueError(
                    f"handout_ids[{index}] is {serial}, not a hand-out made here (serials run from 0 to "
                    f"{self.handed_out - 1})"
                )
            if serial in self._open and self._open[serial].task_id != task_id:
                raise ValueError(
                    f"handout_ids[{index}] is hand-out {serial} of task {self._open[serial].task_id}, not of "
                    f"task_ids[{index}] {task_id}"
                )
        if closed := [task_id for task_id, serial in zip(ids, serials, strict=True) if serial not in self._open]:
            self._refuse(list(dict.fromkeys(closed)))

    def _refuse(self, task_ids: list[str]) -> None:
        if never := [task_id for task_id in task_ids if task_id not in self._closed]:
            raise ValueError(f"task_ids names tasks that were never handed out: {', '.join(never[:5])}")
        detail = ", ".join(f"{task_id} ({self._closed[task_id]})" for task_id in task_ids[:5])
        raise ValueError(
            f"task_ids names tasks whose hand-out was already reported or retired: {detail}; each hand-out is "
            "reported once, all its attempts in one call"
        )

    def _close(self, serial: int, how: str) -> None:
        self._closed[self._open.pop(serial).task_id] = how
        if how == "reported":
            self.reported += 1
        else:
            self.retired += 1

    # -- resuming --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Everything :meth:`from_dict` needs, as JSON-ready values."""
        return {
            "counts": {"handed_out": self.handed_out, "reported": self.reported, "retired": self.retired},
            "open": [{"handout": serial, "task": task.to_dict()} for serial, task in self._open.items()],
            "closed": dict(self._closed),
            "reward_range": list(self.reward_range),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Handouts:
        """The hand-outs :meth:`to_dict` wrote; raises ``ValueError`` when its counts disagree with its open ones."""
        handouts = cls(tuple(data["reward_range"]))
        counts = data["counts"]
        handouts.handed_out, handouts.reported, handouts.retired = (
            int(counts[name]) for name in ("handed_out", "reported", "retired")
        )
        handouts._open = {int(entry["handout"]): Task.from_dict(entry["task"]) for entry in data["open"]}
        handouts._closed = dict(data["closed"])
        expected = handouts.handed_out - handouts.reported - handouts.retired
        if handouts.outstanding != expected:
            raise ValueError(f"inconsistent hand-outs: {handouts.outstanding} open but the counts leave {expected}")
        return handouts


def check_count(value: Any, argument: str) -> int:
    """``value`` if it is an int of at least 1; otherwise a ``TypeError`` or ``ValueError`` naming ``argument``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{argument} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{argument} must be at least 1, got {value}")
    return int(value)


def scored_attempts(task_ids: Any, rewards: Any) -> tuple[list[str], list[float]]:
    """The attempts a reward function scored: a batch's ``task_id`` column and the function's ``rewards``, without the
    attempts it scored ``None`` (TRL's "not scored"). Refuses lengths that differ, naming both."""
    ids = _task_ids(task_ids, "the batch's task_id column")
    values = _sequence(rewards, "the reward function's return value")
    if len(ids) != len(values):
        raise ValueError(
            f"the reward function returned {len(values)} rewards for a batch of {len(ids)} completions (task_id)"
        )
    kept = [(task_id, reward) for task_id, reward in zip(ids, values, strict=True) if reward is not None]
    return [task_id for task_id, _ in kept], [reward for _, reward in kept]


def scored_handout_ids(handout_ids: Any, rewards: Any) -> list[int] | None:
    """The batch's ``handout_id`` column without the attempts the reward function scored ``None`` (``None`` when the
    batch has no such column), matching :func:`scored_attempts`."""
    if handout_ids is None:
        return None
    serials = _serials(handout_ids, "the batch's handout_id column")
    values = _sequence(rewards, "the reward function's return value")
    if len(serials) != len(values):
        raise ValueError(f"the reward function returned {len(values)} rewards for {len(serials)} handout_id entries")
    return [serial for serial, reward in zip(serials, values, strict=True) if reward is not None]


def reporting_reward(
    reward_func: Callable[..., list[float | None]],
    report: Callable[[list[str], list[float], list[int] | None], Mapping[str, Any]],
    metrics: Callable[[Mapping[str, Any]], dict[str, float]],
    dataset: str,
) -> Callable[..., list[float | None]]:
    """``reward_func`` (a synchronous TRL reward function) that also hands the attempts it scored to ``report`` (task
    ids, rewards, and the hand-out ids where the batch has a ``handout_id`` column) and logs ``metrics`` of what
    ``report`` returns as TRL metrics ``curriculum/<name>``. Attempts scored ``None`` are not reported; a batch without
    a ``task_id`` column is refused, naming ``dataset`` (what the trainer should train on)."""
    if not callable(reward_func):
        raise TypeError(f"reward_func must be a callable (a TRL reward function), got {type(reward_func).__name__}")
    if inspect.iscoroutinefunction(reward_func):
        raise TypeError("reporting() wraps synchronous reward functions only")

    @functools.wraps(reward_func)
    def reported(*args: Any, task_id: list[str] | None = None, **kwargs: Any) -> list[float | None]:
        if task_id is None:
            raise ValueError(f"the batch has no 'task_id' column: train on {dataset}")
        rewards = reward_func(*args, task_id=task_id, **kwargs)
        ids, scored = scored_attempts(task_id, rewards)
        if ids:
            logged = metrics(report(ids, scored, scored_handout_ids(kwargs.get("handout_id"), rewards)))
            if log_metric := kwargs.get("log_metric"):
                for name, value in logged.items():
                    log_metric(f"curriculum/{name}", float(value))
        return rewards

    return reported


def _sequence(value: Any, argument: str) -> Sequence[Any]:
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{argument} must be a list or tuple, got {type(value).__name__}")
    return value


def _task_ids(value: Any, argument: str) -> list[str]:
    ids = list(_sequence(value, argument))
    for index, task_id in enumerate(ids):
        if isinstance(task_id, Task):
            raise TypeError(f"{argument}[{index}] is a Task, not its id: pass task.task_id ({task_id.task_id!r})")
        if not isinstance(task_id, str):
            raise TypeError(f"{argument}[{index}] is of type {type(task_id).__name__}, not a task id (a str)")
    return ids


def _rewards(value: Any, argument: str) -> list[float]:
    values = list(_sequence(value, argument))
    for index, reward in enumerate(values):
        if reward is None:
            raise TypeError(f"{argument}[{index}] is None, not a number: leave unscored attempts out of the report")
        if not isinstance(reward, numbers.Real):
            raise TypeError(f"{argument}[{index}] is of type {type(reward).__name__}, not a number")
    return [float(reward) for reward in values]


def _serials(value: Any, argument: str) -> list[int]:
    serials = list(_sequence(value, argument))
    for index, serial in enumerate(serials):
        if isinstance(serial, bool) or not isinstance(serial, numbers.Integral):
            raise TypeError(f"{argument}[{index}] is of type {type(serial).__name__}, not a hand-out id (an int)")
    return [int(serial) for serial in serials]
