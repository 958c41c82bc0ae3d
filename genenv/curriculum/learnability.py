"""``curriculum=learnability``: the benchmark's own tasks, drawn where the agent's success is most uncertain.

No simulator writes anything: the curriculum draws from a fixed pool of benchmark tasks (a co-evolution run's base
split, ``coevolution.base_split``; where the benchmark has none, its default split, the one ``gym.make`` plays,
with a warning) and learns from every group of attempts the agent plays which of them to hand out next.

The rules (:class:`LearnabilityConfig` holds the settings):

- **Estimate.** Each task's success is a Beta posterior: ``Beta(prior_successes, prior_failures)`` before any attempt,
  and each reported attempt of reward ``r`` in [0, 1] adds ``r`` to the successes and ``1 - r`` to the failures. ``p``
  is the posterior mean, ``(s + prior_successes) / (n + prior_successes + prior_failures)`` after ``n`` attempts.
- **Learnability.** A played task is drawn with probability proportional to ``p (1 - p)``, the variance of one
  attempt's success: largest where the agent solves it half the time, small where it always or never does. The
  draws of one call are without replacement.
- **Exploration.** Each task handed out is, with probability ``exploration``, a task never played yet, drawn
  uniformly (while any is left); the others are drawn by learnability among the played tasks. Where too few tasks
  have been played (the first draws), unplayed ones make up the rest.
- **Retirement.** A task solved by every attempt (each reward 1) in ``retire_after`` reported groups in a row is
  retired and never handed out again; a group with any failure resets its count. A task never solved is kept: the
  agent may come to it.
- **Online.** Every group the agent plays is reported, replayed tasks of the pool included (the co-evolution trainer
  reports each epoch's episodes; a TRL script reports through :meth:`LearnabilityCurriculum.reporting`).

Two faces over one :class:`LearnabilitySampler`:

- :class:`LearnabilitySource`, the co-evolution trainer's task source
  (:class:`~genenv.curriculum.sources.TaskSource`: ``epoch_tasks``, ``more_tasks``, ``report``), whose state a
  checkpoint holds;
- :class:`LearnabilityCurriculum`, the same curriculum for any training loop, as
  :class:`~genenv.curriculum.alpha.AlphaCurriculum` is: ``next_tasks`` / ``report``, ``dataset()`` (an endless
  ``datasets.IterableDataset`` of task rows for TRL's ``GRPOTrainer``) and ``reporting(reward_func)``, with hand-outs
  kept by :class:`~genenv.curriculum.handouts.Handouts`; ``save`` / ``load`` to resume.

The idea is not new: sampling for learnability, ``p (1 - p)``, comes from unsupervised environment design and was
applied to the RL stage of LLM training by Foster et al., "Learning to Reason at the Frontier of Learnability" (2025,
arXiv 2502.12272); marin (marin-community/marin#8765) measured it on Qwen3-0.6B against plain sampling; prime-rl's
difficulty pools (prime-rl#3261), NeMo Gym's reward profiling (NeMo-Gym#1509) and verl's curriculum sampler
(verl#2314) sort or weight a dataset's prompts by their measured pass rate in the same spirit. The Beta posterior, the
exploration share and the retirement rule here are genenv's own.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from genenv.benchmarks.base import BenchmarkAdapter, Task, as_adapter
from genenv.curriculum.handouts import Handouts, check_count, reporting_reward
from genenv.curriculum.sampler import LearnabilityConfig, LearnabilitySampler, TaskEstimate, task_groups
from genenv.curriculum.sources import EpochTasks
from genenv.envs.rows import task_row
from genenv.envs.simulator import Simulator

if TYPE_CHECKING:
    from datasets import IterableDataset

__all__ = [
    "LearnabilityConfig",
    "LearnabilityCurriculum",
    "LearnabilitySampler",
    "LearnabilitySource",
    "TaskEstimate",
    "pool_split",
]

logger = logging.getLogger(__name__)

_STATE_FILE = "learnability.json"
#: hand-outs neither reported nor released before the dataset warns that the trainer reads far ahead
READ_AHEAD_WARNING = 256


def pool_split(adapter: BenchmarkAdapter, base_split: str | None) -> str:
    """The split a learnability curriculum draws from: ``base_split``, or where that is ``None`` the adapter's default
    split (``default_split``, else its first: the one ``gym.make`` plays), with a warning: that split may be one the
    benchmark evaluates on."""
    if base_split is not None:
        return base_split
    split = adapter.split_or_default(None)
    logger.warning(
        "curriculum=learnability: %s has no base split (coevolution.base_split is null), so its tasks come from its "
        "default split %r; set coevolution.base_split to train on another",
        adapter.name,
        split,
    )
    return split


class LearnabilitySource:
    """``curriculum=learnability`` in the co-evolution trainer: a :class:`~genenv.curriculum.sources.TaskSource` over
    ``tasks`` (the pool) that needs no simulator (the ``simulator`` argument of its calls is ignored)."""

    def __init__(self, tasks: Sequence[Task], config: LearnabilityConfig) -> None:
        if not tasks:
            raise ValueError("a learnability curriculum needs at least one task in its pool")
        self.tasks = {task.task_id: task for task in tasks}
        self.sampler = LearnabilitySampler([task.task_id for task in tasks], config)
        self._epoch_ids: set[str] = set()

    def epoch_tasks(
        self,
        simulator: Simulator | None,
        epoch: int,
        wanted: int,
        rng: np.random.Generator,
        success: Mapping[str, float] | None = None,
    ) -> EpochTasks:
        """Up to ``wanted`` distinct pool tasks drawn by the module's rules (fewer once most are retired)."""
        ids = self.sampler.draw(wanted, rng)
        self._epoch_ids = set(ids)
        if len(ids) < wanted:
            logger.warning(
                "learnability: epoch %d gets %d of the %d tasks wanted; %d of the pool's %d tasks are retired",
                epoch,
                len(ids),
                wanted,
                len(self.sampler.retired),
                len(self.tasks),
            )
        return EpochTasks([self.tasks[task_id] for task_id in ids], [])

    def more_tasks(
        self,
        simulator: Simulator | None,
        epoch: int,
        wanted: int,
        rng: np.random.Generator,
        success: Mapping[str, float] | None = None,
    ) -> EpochTasks:
        """Up to ``wanted`` further pool tasks, drawn as the epoch's first ones were, none of them one the epoch
        already has."""
        ids = self.sampler.draw(wanted, rng, exclude=self._epoch_ids)
        self._epoch_ids.update(ids)
        return EpochTasks([self.tasks[task_id] for task_id in ids], [])

    def report(self, task_ids: Sequence[str], rewards: Sequence[float]) -> dict[str, float]:
        """Update the estimates with every attempt the agent played (``task_ids[i]`` scored ``rewards[i]``; the
        attempts at a task in one call are one group); attempts at tasks outside the pool are left out. Returns the
        sampler's :meth:`~LearnabilitySampler.summary` and ``newly_retired``."""
        retired = sum(
            self.sampler.update(task_id, group)
            for task_id, group in task_groups(task_ids, rewards).items()
            if task_id in self.sampler
        )
        return {**self.sampler.summary(), "newly_retired": retired}

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps of this source: the sampler's estimates and retired tasks."""
        return self.sampler.state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from a checkpoint's :meth:`state_dict`."""
        self.sampler.load_state_dict(state)


class LearnabilityCurriculum:
    """The learnability curriculum for any training loop: ``benchmark``'s tasks of ``split`` handed out by the module's
    rules, steered by the rewards reported back.

    Args:
        benchmark: a registered benchmark name or an adapter instance (no generation methods needed).
        split: the split whose tasks make the pool (a training split: never one you evaluate on).
        config: :class:`LearnabilityConfig` (defaults when ``None``).
        seed: seeds the draws.
        adapter_kwargs: the adapter's keyword arguments (``data_dir``, ...), with a benchmark name only.

    Attributes:
        handouts: the tasks handed out and what became of them (:class:`~genenv.curriculum.handouts.Handouts`;
            ``handouts.retire(ids)`` releases hand-outs a trainer read ahead and will never report).
    """

    def __init__(
        self,
        benchmark: str | BenchmarkAdapter,
        split: str,
        config: LearnabilityConfig | None = None,
        *,
        seed: int = 0,
        **adapter_kwargs: Any,
    ) -> None:
        self.adapter = as_adapter(benchmark, **adapter_kwargs)
        if split not in self.adapter.splits:
            raise ValueError(f"split={split!r}: {self.adapter.name} has the splits {', '.join(self.adapter.splits)}")
        self.split = split
        self.config = config or LearnabilityConfig()
        self.source = LearnabilitySource(self.adapter.load_tasks(split), self.config)
        self.handouts = Handouts()
        self._rng = np.random.default_rng(seed)

    @property
    def sampler(self) -> LearnabilitySampler:
        """The estimates, retired tasks and draw behind the hand-outs."""
        return self.source.sampler

    # -- the two calls ------------------------------------------------------------------------
    def next_tasks(self, n: int) -> list[Task]:
        """``n`` tasks by the module's rules, preferring tasks without an open hand-out (a task may repeat only when
        too few others are left); raises ``RuntimeError`` when every task of the pool is retired."""
        n = check_count(n, "n")
        if len(self.sampler.retired) == len(self.source.tasks):
            raise RuntimeError(
                f"every task of {self.adapter.name} split {self.split!r} is retired (each solved by every attempt "
                f"in {self.config.retire_after} reported groups in a row): nothing is left to learn from it"
            )
        ids = self.sampler.draw(n, self._rng, exclude=set(self.handouts.outstanding_ids))
        if len(ids) < n:  # too few tasks without an open hand-out: the others, then repeats
            ids += self.sampler.draw(n - len(ids), self._rng, exclude=set(ids))
        while len(ids) < n:
            ids += self.sampler.draw(n - len(ids), self._rng)
        tasks = [self.source.tasks[task_id] for task_id in ids]
        self.handouts.hand_out(tasks)
        return tasks

    def report(self, task_ids: Sequence[str], rewards: Sequence[float]) -> dict[str, Any]:
        """Record the agent's reward of each attempt (``task_ids[i]``, handed out by ``next_tasks``, was attempted
        with ``rewards[i]`` in [0, 1]; all attempts at a hand-out in one call, each hand-out reported once). Returns
        the batch's ``p_hat`` (mean reward), ``p_hat_per_task``, the sampler's summary, ``newly_retired`` and
        ``outstanding`` (hand-outs neither reported nor released)."""
        attempts = self.handouts.report(task_ids, rewards)
        ids, values = [task.task_id for task, _ in attempts], [reward for _, reward in attempts]
        groups = task_groups(ids, values)
        return {
            "p_hat": float(np.mean(values)),
            "p_hat_per_task": {task_id: float(np.mean(group)) for task_id, group in groups.items()},
            **self.source.report(ids, values),
            "outstanding": self.handouts.outstanding,
        }

    # -- resuming --------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write what :meth:`load` needs to continue exactly here (estimates, retired tasks, hand-outs, the draw's
        random state) to ``directory/learnability.json``, atomically."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = {
            "split": self.split,
            "sampler": self.sampler.state_dict(),
            "handouts": self.handouts.to_dict(),
            "rng": self._rng.bit_generator.state,
        }
        tmp = directory / f".{_STATE_FILE}.tmp"
        tmp.write_text(json.dumps(state), encoding="utf-8")
        os.replace(tmp, directory / _STATE_FILE)
        return directory

    def load(self, directory: str | Path) -> None:
        """Continue from a :meth:`save` of a curriculum over the same benchmark, split and settings."""
        path = Path(directory) / _STATE_FILE
        if not path.exists():
            raise FileNotFoundError(f"{directory} holds no learnability curriculum state (no {_STATE_FILE})")
        state = json.loads(path.read_text(encoding="utf-8"))
        if state["split"] != self.split:
            raise ValueError(
                f"{path} was saved for split {state['split']!r}; this curriculum draws from {self.split!r}"
            )
        self.sampler.load_state_dict(state["sampler"])
        self.handouts = Handouts.from_dict(state["handouts"])
        self._rng.bit_generator.state = state["rng"]

    # -- TRL -------------------------------------------------------------------------------------
    def dataset(self) -> IterableDataset:
        """This curriculum as an endless ``datasets.IterableDataset`` of task rows (:func:`~genenv.envs.rows.task_row`:
        ``prompt``, ``task_id``, ``task``), each drawn when the trainer reads it (pass TRL's
        ``GRPOConfig(shuffle_dataset=False)``: a shuffle buffer reads far ahead of the reports)."""
        from datasets import IterableDataset

        return IterableDataset.from_generator(self._rows)

    def _rows(self) -> Iterator[dict[str, Any]]:
        while True:
            (task,) = self.next_tasks(1)
            if self.handouts.outstanding == READ_AHEAD_WARNING:
                logger.warning(
                    "the trainer has read %d tasks without reporting rewards: it reads ahead (with TRL, pass "
                    "GRPOConfig(shuffle_dataset=False)), so its tasks are drawn from stale estimates",
                    READ_AHEAD_WARNING,
                )
            yield task_row(self.adapter, task)

    def reporting(self, reward_func: Callable[..., list[float | None]]) -> Callable[..., list[float | None]]:
        """``reward_func`` (a TRL reward function) that also reports its rewards, by the batch's ``task_id`` column,
        and logs the batch's ``p_hat`` and the pool's played and retired counts and mean learnability as TRL metrics
        (``curriculum/...``). Attempts it scores ``None`` are not reported."""
        names = ("p_hat", "played", "retired", "mean_learnability")
        return reporting_reward(
            reward_func,
            lambda ids, rewards, _: self.report(ids, rewards),
            lambda metrics: {name: metrics[name] for name in names},
            "LearnabilityCurriculum.dataset()",
        )
