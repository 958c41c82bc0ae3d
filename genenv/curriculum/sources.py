"""Where each curriculum's fresh tasks come from (``GenEnvConfig.curriculum``).

* ``genenv``: the simulator writes every epoch's tasks, its prompt conditioned on the agent's recent success per
  family (:class:`WrittenEachEpoch`);
* ``random``: the same, never told the agent's success (nor updated: GenEnv-Random);
* ``static``: the frozen simulator writes one pool before training, and every epoch draws its tasks from it
  (:class:`WrittenOnce`, GenEnv-Static);
* ``offline``: ``static`` with ``offline_multiplier`` times the tasks (the paper's offline augmentation);
* ``learnability``: no simulator; the benchmark's base tasks, drawn in proportion to ``p (1 - p)`` of the agent's
  estimated success (:class:`~genenv.curriculum.learnability.LearnabilitySource`).

Each simulator output is parsed and validated by the adapter (rejects are kept with a reason); the simulator gets
``generation_rounds`` batches for each batch the wanted tasks need. The curricula of :data:`WRITTEN_CURRICULA` need
the adapter's generation methods (:data:`GENERATION_METHODS`); :func:`missing_generation_methods` says which an
adapter lacks.

A source also hears, through ``report``, every attempt the agent played in the epoch, and gives the state it keeps
across epochs to the checkpoint (``state_dict`` / ``load_state_dict``): the trainer drives every curriculum alike.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from genenv.benchmarks.base import BenchmarkAdapter, Task
from genenv.checkpoints import POOL_DRAFT
from genenv.console import progress
from genenv.curriculum.aim import AimConfig, WrittenAim
from genenv.curriculum.sampler import task_groups
from genenv.envs.simulator import Proposal, Simulator
from genenv.pools import JsonlPool, TaskPool

__all__ = [
    "CURRICULA_WITHOUT_GENERATION",
    "GENERATION_METHODS",
    "POOL_STREAM",
    "SCORED_TASKS",
    "WRITTEN_CURRICULA",
    "EpochTasks",
    "TaskSource",
    "WrittenEachEpoch",
    "WrittenOnce",
    "missing_generation_methods",
]

logger = logging.getLogger(__name__)

POOL_STREAM = 1  # batch i of a static/offline pool draws from np.random.default_rng([seed, POOL_STREAM, i])
#: played tasks of the requested family a ``simulator.examples=scored`` prompt lists with their success
SCORED_TASKS = 6
#: the curricula whose tasks a simulator writes (they need the adapter's generation methods)
WRITTEN_CURRICULA = ("genenv", "random", "static", "offline")
#: the curricula that train on the benchmark's own tasks: no simulator, no generation methods
CURRICULA_WITHOUT_GENERATION = ("learnability",)
#: the adapter methods a simulator-written task needs (``BenchmarkAdapter``'s own raise ``NotImplementedError``)
GENERATION_METHODS = ("families", "generation_context", "generation_examples", "parse_task", "validate_task")


def missing_generation_methods(adapter: BenchmarkAdapter) -> list[str]:
    """The :data:`GENERATION_METHODS` ``adapter``'s class leaves to :class:`BenchmarkAdapter` (none: it supports
    simulator-written tasks)."""
    return [name for name in GENERATION_METHODS if getattr(type(adapter), name) is getattr(BenchmarkAdapter, name)]


@dataclass
class EpochTasks:
    """An epoch's fresh tasks, every simulator output written for them, (epoch 0 of a static or offline run) what
    writing the pool cost: the batches it used, how many of them carry a time, and their seconds, and the ids of the
    tasks among ``fresh`` that were written in an earlier epoch and are served again (``curriculum.aim.reserve``)."""

    fresh: list[Task]
    proposals: list[Proposal]
    pool_writing: dict[str, float] | None = None
    again: frozenset[str] = frozenset()


class TaskSource(Protocol):
    """A curriculum's fresh tasks, epoch by epoch, and what it learns from the agent's attempts."""

    def epoch_tasks(
        self,
        simulator: Simulator | None,
        epoch: int,
        wanted: int,
        rng: np.random.Generator,
        success: Mapping[str, float],
    ) -> EpochTasks:
        """Up to ``wanted`` tasks for ``epoch`` (``success``: the agent's recent success per family, for a
        simulator conditioned on it; ``simulator``: ``None`` for a curriculum without one)."""

    def more_tasks(
        self,
        simulator: Simulator | None,
        epoch: int,
        wanted: int,
        rng: np.random.Generator,
        success: Mapping[str, float],
    ) -> EpochTasks:
        """Up to ``wanted`` further tasks for ``epoch``, sourced as its first ones were (the agent update's dynamic
        sampling refills its batches with them); none of them is one the epoch already has."""

    def report(self, task_ids: Sequence[str], rewards: Sequence[float]) -> dict[str, float]:
        """Every attempt the agent played in the epoch (``task_ids[i]`` scored ``rewards[i]``; the attempts at a task
        are its group); returns what the source learnt, for the epoch's metrics."""

    def state_dict(self) -> dict[str, Any]:
        """The state the source keeps across epochs, JSON-ready, for the epoch's checkpoint."""

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a checkpoint's :meth:`state_dict`."""


def _valid(proposals: list[Proposal]) -> dict[str, Task]:
    return {p.task.task_id: p.task for p in proposals if p.task is not None}


class _Written:
    """What the simulator-written sources share: a report teaches them nothing (the trainer's family statistics and
    D_env hold what the simulator is shown and trained on), and they keep no state across epochs but D_env."""

    def report(self, task_ids: Sequence[str], rewards: Sequence[float]) -> dict[str, float]:
        """Nothing to learn from the attempts here: no metrics."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        """No state beyond D_env."""
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Refuses a non-empty state (a checkpoint of another curriculum's source)."""
        if state:
            raise ValueError(f"a simulator-written source keeps no state, got one with {sorted(state)}")


class WrittenEachEpoch(_Written):
    """``genenv`` and ``random``: every epoch the simulator writes tasks until enough distinct ones are valid or its
    rounds run out. ``conditioned`` (``genenv``): its prompt shows the agent's success per family, and with
    ``examples`` ``"in_band"`` its own latest in-band outputs, with ``"scored"`` the agent's success on its latest
    played tasks of the requested family (the outputs come from ``pool``, D_env, which only these two need). ``aim``
    (``genenv`` only): the levers of :mod:`genenv.curriculum.aim`, aimed requests and re-served written tasks; the
    source then learns from every report and keeps its state in checkpoints."""

    def __init__(
        self,
        adapter: BenchmarkAdapter,
        pool: TaskPool | None,
        *,
        generation_rounds: int,
        conditioned: bool,
        examples: str = "train",
        aim: AimConfig | None = None,
    ) -> None:
        if pool is None and conditioned and examples != "train":
            raise ValueError(f"examples={examples!r} shows outputs of D_env: it needs a pool")
        if aim is not None and aim.active and not conditioned:
            raise ValueError("curriculum.aim steers a conditioned simulator (curriculum=genenv), not the Random one")
        self.adapter, self.pool = adapter, pool
        self.generation_rounds = generation_rounds
        self.conditioned = conditioned
        self.examples = examples
        self.aim = WrittenAim(aim) if aim is not None and aim.active else None
        self._epoch_ids: set[str] = set()

    def epoch_tasks(
        self, simulator: Simulator, epoch: int, wanted: int, rng: np.random.Generator, success: Mapping[str, float]
    ) -> EpochTasks:
        """Up to ``wanted`` valid tasks written by ``simulator`` (``success``: the agent's recent success per
        family), with ``aim.reserve`` a share of them served again."""
        self._epoch_ids = set()
        return self.more_tasks(simulator, epoch, wanted, rng, success)

    def more_tasks(
        self, simulator: Simulator, epoch: int, wanted: int, rng: np.random.Generator, success: Mapping[str, float]
    ) -> EpochTasks:
        """Further tasks sourced as the epoch's first ones were (the same conditioning), none of them one the epoch
        already has."""
        again = self.aim.reserved(wanted, rng, self._epoch_ids) if self.aim is not None else []
        taken = self._epoch_ids | {task.task_id for task in again}
        proposals: list[Proposal] = []
        valid: dict[str, Proposal] = {}  # task id -> the first output that wrote it
        own_examples = scored = None
        if self.conditioned and self.examples == "in_band":
            own_examples = self.pool.in_band_outputs(simulator.num_examples)
        if self.conditioned and self.examples == "scored":
            scored = self.pool.scored_outputs(
                lambda task: self.adapter.requested_family(Task.from_dict(task)), SCORED_TASKS
            )
        shown = success if self.conditioned else None
        to_write = wanted - len(again)
        rounds = simulator_rounds(simulator, self.generation_rounds, to_write) if to_write else 0
        for _ in progress(range(rounds), desc="simulator", unit="batch", leave=False):
            if len(valid) >= to_write:
                break
            requests = None
            if self.aim is not None:
                requests = self.aim.requests(self.adapter.families(), simulator.batch_size, rng)
            batch = simulator.propose(
                self.adapter, rng=rng, families=requests, success=shown, own_examples=own_examples, scored=scored
            )
            proposals.extend(batch)
            for proposal in batch:
                if proposal.task is not None and proposal.task.task_id not in taken:
                    valid.setdefault(proposal.task.task_id, proposal)
        written = [proposal.task for proposal in valid.values()]
        fresh = written[:to_write]
        if self.aim is not None:  # every valid task: a caller may keep the ones beyond ``wanted`` for later
            self.aim.written(written, [proposal.family for proposal in valid.values()])
        self._epoch_ids.update(task.task_id for task in again + fresh)
        return EpochTasks(again + fresh, proposals, again=frozenset(task.task_id for task in again))

    def report(self, task_ids: Sequence[str], rewards: Sequence[float]) -> dict[str, float]:
        """With ``aim``: count every group for the levers (their metrics); otherwise nothing to learn here."""
        return self.aim.report(task_groups(task_ids, rewards)) if self.aim is not None else {}

    def state_dict(self) -> dict[str, Any]:
        """The levers' state (none without ``aim``: D_env holds the rest)."""
        return {"aim": self.aim.state_dict()} if self.aim is not None else {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a checkpoint's :meth:`state_dict`; refuses a state of other settings."""
        if self.aim is None:
            super().load_state_dict(state)
        elif "aim" not in state:
            raise ValueError("the checkpoint holds no curriculum.aim state: resume with the settings it was made with")
        else:
            self.aim.load_state_dict(state["aim"])


class WrittenOnce(_Written):
    """``static`` and ``offline``: the frozen simulator writes a pool of ``size`` tasks before training (epoch 0); every
    epoch draws its tasks from it.

    The pool is written as :class:`WrittenEachEpoch` writes unconditioned tasks, except that each batch is stored
    durably in ``pools/pool_draft.jsonl`` as soon as it is written and batch ``i`` draws from its own seeded stream: a
    run killed while writing its pool (hours for an offline pool on a CPU) continues from the batches it has, and the
    pool is the same as an uninterrupted run's. Batch ``i`` does not depend on the pool's size, so a draft written for
    a larger pool of the same seed and simulator (an offline run's, for a static run) holds this pool's batches too:
    they are read in order until the pool is full and the rest is left unread, as though this run had written them
    itself. Each batch's records carry ``batch_seconds``, the wall time the simulator took to write it, so the pool's
    cost is known whichever process or run wrote it."""

    def __init__(
        self,
        adapter: BenchmarkAdapter,
        pool: TaskPool,
        draft_dir: Path,
        *,
        size: int,
        seed: int,
        generation_rounds: int,
    ) -> None:
        self.adapter, self.pool = adapter, pool
        self.draft_dir = draft_dir
        self.size = size
        self.seed = seed
        self.generation_rounds = generation_rounds
        self._left: list[Task] = []

    def epoch_tasks(
        self,
        simulator: Simulator,
        epoch: int,
        wanted: int,
        rng: np.random.Generator,
        success: Mapping[str, float] | None = None,
    ) -> EpochTasks:
        """``wanted`` tasks drawn from the pool, which ``simulator`` writes in epoch 0 (later epochs read it from
        D_env); ``success`` is not shown to it."""
        if epoch == 0:
            written = self.write_pool(simulator)
            pool = written.fresh
        else:
            written = EpochTasks([], [])
            unique = {r["task"]["task_id"]: r["task"] for r in self.pool.records() if r["task"] is not None}
            pool = [Task.from_dict(task) for task in unique.values()]
        picks = rng.permutation(len(pool))
        self._left = [pool[int(i)] for i in picks[wanted:]]  # what more_tasks draws from in this epoch
        return EpochTasks([pool[int(i)] for i in picks[:wanted]], written.proposals, written.pool_writing)

    def more_tasks(
        self,
        simulator: Simulator,
        epoch: int,
        wanted: int,
        rng: np.random.Generator,
        success: Mapping[str, float] | None = None,
    ) -> EpochTasks:
        """Further tasks of the pool, none drawn before in this epoch (none once the pool is used up)."""
        more, self._left = self._left[:wanted], self._left[wanted:]
        return EpochTasks(more, [])

    def write_pool(self, simulator: Simulator) -> EpochTasks:
        """The whole pool written by ``simulator``, every output written for it, and what writing it cost."""
        draft = JsonlPool(self.draft_dir, POOL_DRAFT)
        if pending := draft.uncommitted():  # batches are appended whole: a kill before its commit loses none
            draft.commit(pending[-1]["epoch"])
        written: dict[int, list[Proposal]] = {}
        seconds: dict[int, float] = {}
        for record in draft.records():
            written.setdefault(int(record["epoch"]), []).append(Proposal.from_dict(record))
            if "batch_seconds" in record:
                seconds[int(record["epoch"])] = float(record["batch_seconds"])
        proposals: list[Proposal] = []
        valid: dict[str, Task] = {}
        rounds = simulator_rounds(simulator, self.generation_rounds, self.size)
        read = 0
        while read < rounds and len(valid) < self.size:
            if (batch := written.get(read)) is None:
                if any(index > read for index in written):
                    raise RuntimeError(f"{draft.path}: batch {read} is missing; the draft is damaged")
                break
            proposals.extend(batch)
            valid.update(_valid(batch))
            read += 1
        if read:
            logger.info("pool: %d batches read from the draft (%d valid tasks of %d)", read, len(valid), self.size)
        used = read
        for batch_index in progress(range(read, rounds), desc="pool", unit="batch", leave=False):
            if len(valid) >= self.size:
                break
            rng = np.random.default_rng([self.seed, POOL_STREAM, batch_index])
            start = time.perf_counter()
            batch = simulator.propose(self.adapter, rng=rng, success=None)
            seconds[batch_index] = time.perf_counter() - start
            draft.append([p.to_dict() | {"batch_seconds": seconds[batch_index]} for p in batch], batch_index)
            draft.commit(batch_index)
            proposals.extend(batch)
            valid.update(_valid(batch))
            used = batch_index + 1
        timed = [seconds[index] for index in range(used) if index in seconds]
        pool_writing = {"batches": used, "timed_batches": len(timed), "seconds": float(sum(timed))}
        return EpochTasks(list(valid.values())[: self.size], proposals, pool_writing)


def simulator_rounds(simulator: Simulator, generation_rounds: int, wanted: int) -> int:
    """Simulator batches allowed for ``wanted`` tasks: ``generation_rounds`` tries per batch they need."""
    return generation_rounds * max(1, -(-wanted // simulator.batch_size))
