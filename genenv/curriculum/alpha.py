"""The alpha-curriculum as a task source any training loop can drive.

:class:`AlphaCurriculum` is GenEnv's environment side without GenEnv's trainer. Two calls drive it:

1. ``next_tasks(n)``: the simulator writes tasks, its prompt showing the agent's recent success per family
   (:class:`~genenv.curriculum.sources.WrittenEachEpoch`, conditioned); the adapter parses and validates each output,
   and only valid tasks are handed out (valid ones beyond ``n`` wait for the next call);
2. ``report(task_ids, rewards)``: the agent's rewards on them, one per attempt, all G attempts at a handed-out task
   in one call. Each hand-out is reported once (:mod:`genenv.curriculum.handouts`: a second report is refused, naming
   the task); ``retire(task_ids)`` releases hand-outs that will never be reported, and ``handouts.outstanding``
   counts the ones neither reported nor retired. The outputs that wrote a task are rewarded by its first report.
   The rewards feed the family statistics,
   and each task's ``p_hat`` rewards the simulator outputs that wrote it with ``R_env = exp(-beta (p_hat -
   alpha)^2)``; outputs inside the band ``|p_hat - alpha| <= k`` become examples of the simulator's reward-weighted
   regression (weights ``exp(lambda R_env)``), run every ``update_every`` reports when ``rwr`` is set
   (:mod:`genenv.curriculum.success`: the co-evolution trainer's own bookkeeping).

:meth:`AlphaCurriculum.dataset` is the same source as an endless ``datasets.IterableDataset`` of task rows
(:mod:`genenv.envs.rows`) for TRL's ``GRPOTrainer``, and :meth:`AlphaCurriculum.reporting` wraps a TRL reward
function so every batch's rewards are reported.

The simulator's worked examples are the benchmark's training items (``simulator.examples=train``); the co-evolution
trainer's ``in_band`` and ``scored`` prompts read its persisted D_env, which this in-memory source does not keep.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from genenv.benchmarks.base import BenchmarkAdapter, Task, as_adapter
from genenv.curriculum.aim import AimConfig
from genenv.curriculum.handouts import Handouts, check_count, reporting_reward
from genenv.curriculum.reward import AlphaTarget, DifficultyFilter
from genenv.curriculum.rwr import RWRConfig, RWRTrainer, warn_rwr_off
from genenv.curriculum.sources import EpochTasks, WrittenEachEpoch
from genenv.curriculum.stats import FamilyStats
from genenv.curriculum.success import BatchSuccess, OutputReward, output_rewards
from genenv.envs.rows import task_row
from genenv.envs.simulator import Proposal, Simulator

if TYPE_CHECKING:
    from datasets import IterableDataset

__all__ = ["AlphaCurriculum", "AlphaCurriculumConfig"]

logger = logging.getLogger(__name__)

#: hand-outs outstanding at which the dataset warns that the trainer reads far ahead (a shuffle buffer)
READ_AHEAD_WARNING = 256
_STATE_FILE = "curriculum.json"
_STATE_FORMAT = 2


@dataclass
class AlphaCurriculumConfig(AlphaTarget):
    """Settings of an :class:`AlphaCurriculum` (the co-evolution trainer's names and defaults).

    Args:
        alpha, beta, band_k, lam: the alpha-curriculum's target (:class:`~genenv.curriculum.reward.AlphaTarget`).
        stats_window: episodes per family in the success statistics shown to the simulator.
        generation_rounds: simulator batches tried for each batch the wanted tasks need before ``next_tasks`` gives
            up.
        rwr: settings of the simulator's RWR update (LoRA over the simulator's model); ``None``: the simulator is
            conditioned on the agent's success but never updated, as is a simulator without local weights (on a
            server, engine ``openai``: the curriculum logs a warning and runs no RWR).
        update_every: ``report`` calls between two simulator updates (with ``rwr``).
        conditioned: show the simulator the agent's recent success per family; ``False`` with ``rwr=None`` is the
            Random baseline (the same simulator, never shown the agent nor updated).
        aim: the levers of :mod:`genenv.curriculum.aim` (aimed requests, re-served written tasks; by default
            neither, as in the paper); only for a conditioned simulator.
        seed: seed of the simulator's sampling and of the families it is asked for.
    """

    stats_window: int = 64
    generation_rounds: int = 2
    rwr: RWRConfig | None = None
    update_every: int = 1
    conditioned: bool = True
    aim: AimConfig = field(default_factory=AimConfig)
    seed: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("stats_window", "generation_rounds", "update_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


class AlphaCurriculum:
    """Tasks written by ``simulator`` for ``benchmark`` at the agent's level, steered by the rewards reported back.

    Args:
        benchmark: a registered benchmark name or an adapter instance (it must support generated tasks).
        simulator: the task writer; its ``alpha`` must equal ``config.alpha``.
        config: :class:`AlphaCurriculumConfig` (defaults when ``None``).
        adapter_kwargs: the adapter's keyword arguments (``data_dir``, ...), with a benchmark name only.

    Attributes:
        stats: the agent's recent success per family (what the simulator is shown).
        handouts: the tasks handed out and what became of them (reported, retired, outstanding).
        rewarded: every simulator output whose task was reported, with what it earned, in report order.
    """

    def __init__(
        self,
        benchmark: str | BenchmarkAdapter,
        simulator: Simulator,
        config: AlphaCurriculumConfig | None = None,
        **adapter_kwargs: Any,
    ) -> None:
        self.config = config = config or AlphaCurriculumConfig()
        self.adapter = as_adapter(benchmark, **adapter_kwargs)
        if simulator.alpha != config.alpha:
            raise ValueError(f"the simulator quotes alpha={simulator.alpha}, the curriculum targets {config.alpha}")
        self.simulator = simulator
        self.stats = FamilyStats(window=config.stats_window)
        self.band = DifficultyFilter(alpha=config.alpha, k=config.band_k)
        self.rwr_trainer: RWRTrainer | None = None
        if config.rwr is not None and simulator.has_local_weights:
            self.rwr_trainer = RWRTrainer(simulator.policy, config.rwr)
        elif config.rwr is not None:  # a simulator on a server: nothing local for RWR to train
            server = simulator.openai
            warn_rwr_off(
                f"the endpoint {server.base_url} (model {server.model})"
                if server is not None and simulator.engine_setting == "openai"
                else f"engine {simulator.engine_setting} without local weights"
            )
        self.rewarded: list[tuple[Proposal, OutputReward]] = []
        self._source = WrittenEachEpoch(
            self.adapter,
            None,
            generation_rounds=config.generation_rounds,
            conditioned=config.conditioned,
            aim=config.aim,
        )
        self._rng = np.random.default_rng(config.seed)
        self._written: list[Task] = []  # valid, not handed out yet
        self.handouts = Handouts()
        self._unrewarded: dict[str, list[Proposal]] = {}  # task id -> the outputs that wrote it, not yet rewarded
        self._rwr_examples: list[dict[str, Any]] = []
        self._reports = 0

    # -- the two calls ------------------------------------------------------------------------
    def next_tasks(self, n: int) -> list[Task]:
        """``n`` valid tasks written for the agent's current success per family; raises ``RuntimeError`` (with the
        simulator's reject reasons) when its rounds write too few."""
        tasks = self._write(check_count(n, "n"))
        self.handouts.hand_out(tasks)
        return tasks

    def _write(self, n: int) -> list[Task]:
        """The next ``n`` valid tasks, written when too few wait; not handed out yet. A task written again while an
        earlier copy still waits counts once: while the source delivers all it was asked for and such repeats leave
        the queue short, it is asked for the rest (none of them a task it already gave for this call)."""
        if len(self._written) < n:
            wanted = n - len(self._written)
            batch = self._source.epoch_tasks(self.simulator, self._reports, wanted, self._rng, self.stats.rates())
            self._queue(batch)
            proposals = list(batch.proposals)
            while len(self._written) < n and len(batch.fresh) >= wanted:  # short by repeats of queued tasks
                wanted = n - len(self._written)
                batch = self._source.more_tasks(self.simulator, self._reports, wanted, self._rng, self.stats.rates())
                self._queue(batch)
                proposals += batch.proposals
            if len(self._written) < n:
                reasons = sorted({p.reject_reason.split(":", 1)[0] for p in proposals if p.task is None})
                raise RuntimeError(
                    f"the simulator wrote {len(self._written)} valid {self.adapter.name} tasks of the {n} wanted in "
                    f"{len(proposals)} outputs (rejected: {', '.join(reasons) or 'none'})"
                )
        tasks, self._written = self._written[:n], self._written[n:]
        return tasks

    def _queue(self, batch: EpochTasks) -> None:
        """Queue ``batch``'s tasks served again and its valid distinct written tasks not queued yet."""
        for proposal in batch.proposals:
            if proposal.task is not None:
                self._unrewarded.setdefault(proposal.task.task_id, []).append(proposal)
        queued = {task.task_id for task in self._written}
        again = [task for task in batch.fresh if task.task_id in batch.again]  # played before, served again
        self._written += [t for t in again + _distinct(batch.proposals) if t.task_id not in queued]

    def report(
        self, task_ids: Sequence[str], rewards: Sequence[float], handout_ids: Sequence[int] | None = None
    ) -> dict[str, Any]:
        """Record the agent's reward of each attempt (``task_ids[i]``, a task id ``next_tasks`` handed out, was
        attempted with ``rewards[i]`` in [0, 1]; ``handout_ids[i]``, a dataset row's ``handout_id``, names its
        hand-out exactly, otherwise it is the task's oldest open one). All attempts at a hand-out come in one call; a
        hand-out already reported or retired is refused (``ValueError`` naming the task) and so are wrong types (an
        error naming the argument), changing nothing. Returns the batch's metrics, with ``outstanding`` (hand-outs
        neither reported nor retired) and ``simulator`` (the RWR update's statistics) when an update ran."""
        attempts = self.handouts.report(task_ids, rewards, handout_ids)
        aimed = self._source.report([task.task_id for task, _ in attempts], [reward for _, reward in attempts])
        success = BatchSuccess.of(attempts, self.adapter.family)
        for family, family_rewards in success.per_family.items():
            self.stats.update(family, family_rewards)
        proposals = [p for task_id in success.per_task for p in self._unrewarded.pop(task_id, [])]
        config = self.config
        earned = output_rewards(
            [p.task.task_id for p in proposals],
            success,
            alpha=config.alpha,
            beta=config.beta,
            band=self.band,
            lam=config.lam,
        )
        self.rewarded += zip(proposals, earned, strict=True)
        if self.rwr_trainer is not None:  # with no update to train, the examples would only pile up
            self._rwr_examples += [
                {"messages": p.messages, "completion": p.raw, "weight": r.weight}
                for p, r in zip(proposals, earned, strict=True)
                if r.kept
            ]
        self._reports += 1
        r_env = success.r_env(config.alpha, config.beta)
        metrics: dict[str, Any] = {
            "p_hat": success.p_hat,
            "p_hat_per_family": {family: float(np.mean(r)) for family, r in sorted(success.per_family.items())},
            "p_hat_per_task": dict(success.per_task),
            "r_env": float(np.mean(list(r_env.values()))),
            "in_band": sum(self.band(p) for p in success.per_task.values()),
            "outstanding": self.handouts.outstanding,
            **aimed,
        }
        if self.rwr_trainer is not None and self._reports % config.update_every == 0:
            metrics["simulator"] = self.update_simulator()
        return metrics

    def retire(self, task_ids: Sequence[str]) -> int:
        """Release the hand-outs of ``task_ids`` that will never be reported (rows a trainer read ahead and did not
        train on; ``handouts.outstanding_ids`` lists them all); returns how many. Their simulator outputs stay
        unrewarded until a later hand-out of the same task is reported."""
        return self.handouts.retire(task_ids)

    def update_simulator(self) -> dict[str, Any]:
        """The simulator's RWR update on the in-band outputs reported since the last one; returns its statistics."""
        if self.rwr_trainer is None and self.config.rwr is not None:
            raise RuntimeError("this curriculum has no simulator update: the simulator has no local weights for RWR")
        if self.rwr_trainer is None:
            raise RuntimeError("this curriculum has no simulator update: set AlphaCurriculumConfig.rwr")
        examples, self._rwr_examples = self._rwr_examples, []
        if not examples:
            return {"steps": 0, "examples": 0}
        return self.rwr_trainer.train(examples).to_dict()

    # -- resuming --------------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write everything a later :meth:`load` needs to continue exactly here: the success statistics, the tasks
        written and not yet handed out, the hand-outs (the open ones with their tasks), the outputs not yet rewarded,
        the RWR examples not yet trained on, the sampling state and the RWR trainer (adapter and optimizer, under
        ``rwr/``). ``rewarded`` is not kept.
        The state file is written last and removed first: a folder that holds it is complete, also after a kill while
        saving over an earlier save."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / _STATE_FILE).unlink(missing_ok=True)
        if self.rwr_trainer is not None:
            self.rwr_trainer.save(directory / "rwr")
        state = {
            "format": _STATE_FORMAT,
            "stats": self.stats.to_dict(),
            "rng": self._rng.bit_generator.state,
            "written": [task.to_dict() for task in self._written],
            "handouts": self.handouts.to_dict(),
            "unrewarded": {task_id: [p.to_dict() for p in ps] for task_id, ps in self._unrewarded.items()},
            "rwr_examples": self._rwr_examples,
            "reports": self._reports,
            "source": self._source.state_dict(),
        }
        tmp = directory / f".{_STATE_FILE}.tmp"
        tmp.write_text(json.dumps(state), encoding="utf-8")
        os.replace(tmp, directory / _STATE_FILE)  # never half-written: whole or absent
        return directory

    def load(self, directory: str | Path) -> None:
        """Continue from a :meth:`save` of a curriculum with the same settings (and simulator weights' shape)."""
        directory = Path(directory)
        if not (directory / _STATE_FILE).exists():
            raise FileNotFoundError(
                f"{directory} holds no complete curriculum state (no {_STATE_FILE}): "
                "its save was cut short or it is not one"
            )
        state = json.loads((directory / _STATE_FILE).read_text(encoding="utf-8"))
        if state.get("format") == 1:  # before hand-outs were kept: every one had been reported, or it is refused
            state["handouts"] = _format_1_handouts(state, directory)
        elif state.get("format") != _STATE_FORMAT:
            raise ValueError(f"unknown curriculum state format {state.get('format')!r} in {directory}")
        if self.rwr_trainer is not None:
            self.rwr_trainer.load(directory / "rwr")
        self.stats = FamilyStats.from_dict(state["stats"])
        self._rng.bit_generator.state = state["rng"]
        self._written = [Task.from_dict(task) for task in state["written"]]
        self.handouts = Handouts.from_dict(state["handouts"])
        self._unrewarded = {task_id: [Proposal.from_dict(p) for p in ps] for task_id, ps in state["unrewarded"].items()}
        self._rwr_examples = state["rwr_examples"]
        self._reports = state["reports"]
        self._source.load_state_dict(state.get("source", {}))

    # -- TRL -------------------------------------------------------------------------------------
    def dataset(self) -> IterableDataset:
        """This curriculum as an endless ``datasets.IterableDataset`` of task rows (:func:`~genenv.envs.rows.task_row`:
        ``prompt``, ``task_id``, ``task``, and ``handout_id``, by which :meth:`reporting` reports); each row is
        written and handed out when the trainer reads it, so a trainer that reads ahead (TRL's shuffle buffer: pass
        ``GRPOConfig(shuffle_dataset=False)``) trains on tasks written for the agent's success as it was when they were
        read, and the rows it read but did not train on stay outstanding until retired (:meth:`retire`)."""
        from datasets import IterableDataset

        return IterableDataset.from_generator(self._rows)

    def _rows(self) -> Iterator[dict[str, Any]]:
        while True:
            (task,) = self._write(1)
            (handout_id,) = self.handouts.hand_out([task])
            if self.handouts.outstanding == READ_AHEAD_WARNING:
                logger.warning(
                    "the trainer holds %d tasks it has not reported rewards for: it reads ahead (with TRL, pass "
                    "GRPOConfig(shuffle_dataset=False)), so its tasks are written for the agent's past success",
                    READ_AHEAD_WARNING,
                )
            yield {**task_row(self.adapter, task), "handout_id": handout_id}

    def reporting(self, reward_func: Callable[..., list[float | None]]) -> Callable[..., list[float | None]]:
        """``reward_func`` (a TRL reward function) that also reports its rewards, by the batch's ``task_id`` and
        ``handout_id`` columns (a batch without ``handout_id`` is reported by task id), and logs the batch's ``p_hat``,
        ``R_env``, tasks in the band, the hand-outs outstanding and the simulator update's examples and steps as TRL
        metrics (``curriculum/...``). Attempts it scores ``None`` are not reported (their hand-outs stay outstanding);
        a return value of another length than the batch is refused."""
        return reporting_reward(reward_func, self.report, _logged_metrics, "AlphaCurriculum.dataset()")


def _logged_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """What :meth:`AlphaCurriculum.reporting` logs of a report: the batch's aim and the simulator update's size."""
    logged = {name: metrics[name] for name in ("p_hat", "r_env", "in_band", "outstanding")}
    simulator = metrics.get("simulator", {})
    return {**logged, **{f"simulator_{name}": simulator[name] for name in ("examples", "steps") if name in simulator}}


def _format_1_handouts(state: dict[str, Any], directory: Path) -> dict[str, Any]:
    """The hand-outs of a format-1 state (one saved after a report, when none was outstanding)."""
    if state["unreported"]:
        raise ValueError(
            f"{directory} is a format-1 curriculum state saved with {state['unreported']} tasks handed out and not "
            "reported; that format cannot say which, so it resumes only from a save made right after a report"
        )
    ids = [task["task_id"] for task in state["handed_out"]]
    counts = {"handed_out": len(ids), "reported": len(ids), "retired": 0}
    return {"counts": counts, "open": [], "closed": dict.fromkeys(ids, "reported"), "reward_range": [0.0, 1.0]}


def _distinct(proposals: list[Proposal]) -> list[Task]:
    """The valid tasks of ``proposals``, each task id once, in writing order."""
    tasks: dict[str, Task] = {}
    for proposal in proposals:
        if proposal.task is not None:
            tasks.setdefault(proposal.task.task_id, proposal.task)
    return list(tasks.values())
