"""The GenEnv co-evolution loop: the simulator writes tasks, the agent learns them, both update.

One epoch (:meth:`CoEvolutionTrainer.run_epoch`):

1. the simulator writes a batch of tasks, its prompt conditioned on the agent's recent success per
   task family; each output is parsed and validated by the adapter (rejects are kept with a reason);
2. the agent plays G episodes per task in ``ToolEnv`` and is updated with GRPO (TRL), on the fresh
   tasks plus tasks replayed from its pool D_train (base data + history);
3. each fresh task's ``p_hat`` = the agent's success over its G attempts, and the simulator output
   that wrote it earns ``R_env = exp(-beta (p_hat - alpha)^2)``; tasks with ``|p_hat - alpha| > k``
   are kept out of the simulator update (still stored); the epoch's ``p_hat`` (all fresh attempts)
   is what the metrics report against the band;
4. the simulator is updated by reward-weighted regression (weights ``exp(lambda R_env)``, LoRA,
   KL to its initial weights, hard KL cap);
5. traces join D_train, generations join D_env; a checkpoint (both policies, optimizer states,
   family stats, RNG) is written, then both pools commit the epoch.

Several processes (``accelerate launch`` / ``torchrun``): every process holds the agent and plays its share of
each epoch's episodes in the GRPO update (TRL/accelerate handle DDP or DeepSpeed); the main process alone holds
the simulator, writes tasks and sends them to the others, gathers every episode, updates the simulator,
validates, and writes pools, metrics and checkpoints (``run_dir`` must be on a file system all nodes share).

Ablations (``curriculum``): ``"random"`` never updates the simulator nor tells it the agent's
success (GenEnv-Random); ``"offline"`` is ``"static"`` with ``offline_multiplier`` (3.3) times the tasks
(the paper's offline augmentation); ``"static"`` generates one pool of tasks before training and draws every
epoch's batch from it (GenEnv-Static).
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from accelerate import PartialState
from accelerate.utils import broadcast_object_list
from tqdm import tqdm

from genenv.agents.agent import Agent
from genenv.agents.grpo import GRPOAgentConfig, GRPOAgentTrainer
from genenv.agents.rollout import shown_exchanges
from genenv.agents.warm_start import WarmStartConfig, WarmStartTrainer
from genenv.benchmarks.base import BenchmarkAdapter, Task, get_benchmark
from genenv.config import check_types
from genenv.curriculum import DifficultyFilter, FamilyStats, RWRConfig, RWRTrainer, alpha_reward, rwr_weight
from genenv.envs.expert import expert_conversation
from genenv.envs.simulator import Proposal, Simulator
from genenv.evaluate import evaluate
from genenv.llm.engines import COMPUTE_TYPES, ENGINES, Engine, build_engine
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import load_policy
from genenv.machine import load_average, peak_rss_mb
from genenv.pools import JsonlPool, TaskPool, TracePool
from genenv.reporting import MetricsReporter
from genenv.run_lock import RunLock, make_run_dir

logger = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
LATEST = "latest"
#: the agent after the warm start (and the held-out scores around it), so that a run killed in epoch 0 keeps them
WARM_START = "warm-start"
METRICS_FILE = "metrics.jsonl"
POOLS = "pools"
#: static/offline: the pool's simulator batches as they are written (pools/pool_draft.jsonl), so a run killed while
#: writing its pool continues where it stopped
POOL_DRAFT = "pool_draft"
POOL_STREAM = 1  # batch i of a static/offline pool draws from np.random.default_rng([seed, POOL_STREAM, i])
VALIDATION_SEED = 12345  # picks the held-out subset: runs of different seeds score the same tasks
#: played tasks of the requested family a ``simulator.examples=scored`` prompt lists with their success
SCORED_TASKS = 6


@dataclass
class GenEnvConfig:
    """Settings of a co-evolution run.

    Args:
        benchmark: registered benchmark name.
        data_dir: the benchmark's data folder (``None``: ``$GENENV_DATA_DIR/<benchmark>``).
        adapter_options: keyword arguments of the benchmark adapter (e.g. TravelPlanner's ``mode``).
        run_dir: where pools, checkpoints and ``metrics.jsonl`` live.
        curriculum: ``"genenv"`` (the full method), ``"random"``, ``"static"`` or ``"offline"`` (the ablations).
        epochs: co-evolution epochs.
        tasks_per_epoch: valid generated tasks the agent trains on per epoch.
        generation_rounds: simulator batches tried per epoch to collect ``tasks_per_epoch`` valid tasks.
        static_pool_size: tasks generated once, before training, for ``curriculum="static"`` or ``"offline"``
            (``None``: the ``tasks_per_epoch * epochs`` a GenEnv run of the same length trains on, times
            ``offline_multiplier`` for ``"offline"``); every epoch then trains on ``tasks_per_epoch`` of them.
        offline_multiplier: how many times a GenEnv run's tasks the ``"offline"`` pool holds (the paper compares
            GenEnv with an offline pool of 3.3x its data); written by the frozen simulator, or by another model
            with ``simulator_model``.
        replay_tasks: tasks replayed per epoch from D_train (base data and earlier epochs).
        base_split: the benchmark's training split, whose tasks and expert traces seed D_train as base data
        base_limit: at most this many tasks of ``base_split``, evenly spread over it (``None``: all); for splits
            whose expert traces are slow to make (ALFWorld replays every game)
            (``None``: none). Never a split evaluation or validation uses.
        validation_split: held-out benchmark split evaluated after each epoch (``None``: no validation).
        validation_limit: validation tasks (a fixed subset of the split, the same for every ``seed``); ``0``: none,
            as with no ``validation_split`` (ZeRO-3: validation generates on the main process, which sharded weights
            do not allow).
        validation_every: score the held-out tasks after every ``validation_every``-th epoch (epochs ``n-1``,
            ``2n-1``, ...) and after the last; the held-out score before training and after the warm start is always
            taken. Other epochs' metrics have an empty ``validation``.
        alpha: target success rate of the alpha-curriculum reward.
        beta: sharpness of ``R_env = exp(-beta (p_hat - alpha)^2)``.
        band_k: half-width of the difficulty band; batches outside it skip the simulator update.
        lam: lambda of the RWR weights ``exp(lambda R_env)``.
        stats_window: episodes per family in the success statistics shown to the simulator.
        agent_model: model of the agent policy (``smollm2``, ``tiny`` or an HF path).
        simulator_model: model of the simulator policy.
        simulator_batch_size: proposals per simulator ``generate`` call.
        simulator_max_new_tokens: generation limit of one proposal.
        simulator_temperature: sampling temperature of the simulator.
        simulator_engine: who generates the simulator's tasks (``hf``, ``ctranslate2``, ``vllm``, ``auto``;
            :class:`~genenv.envs.simulator.Simulator`: constrained calls run on ``hf``).
        simulator_engine_compute_type: ``"int8"`` or ``"float32"`` (CTranslate2 only).
        simulator_examples: the worked examples in a GenEnv simulator's prompt: ``"train"``, the benchmark's
            training items; ``"in_band"``, its own latest generations of the requested family whose tasks landed
            inside the band (what RWR trains it toward, shown in context), topped up with training items while it
            has too few; ``"scored"``, the training items, and in the request its latest ``SCORED_TASKS`` tasks of
            the requested family that the agent played, each with the share of the agent's attempts that solved it
            (per-task feedback: the success per family cannot tell which tasks inside a family are on target). The
            other curricula always show training items only.
        agent: GRPO settings of the agent update.
        warm_start: supervised warm start on D_train's expert traces before epoch 0, and expert traces mixed
            into later epochs (``warm_start.mix_per_epoch``).
        rwr: RWR settings of the simulator update.
        seed: seeds task sampling, generation and both trainers.
        report_to: mirror each epoch's metrics to ``"tensorboard"`` and/or ``"wandb"`` (``metrics.jsonl`` is
            always written).
    """

    benchmark: str = "apibank"
    data_dir: str | None = None
    adapter_options: dict[str, Any] = field(default_factory=dict)
    run_dir: str = "runs/train"
    curriculum: Literal["genenv", "random", "static", "offline"] = "genenv"
    epochs: int = 2
    tasks_per_epoch: int = 2
    generation_rounds: int = 2
    static_pool_size: int | None = None
    offline_multiplier: float = 3.3
    replay_tasks: int = 0
    base_split: str | None = None
    base_limit: int | None = None
    validation_split: str | None = None
    validation_limit: int = 8
    validation_every: int = 1
    alpha: float = 0.5
    beta: float = 10.0
    band_k: float = 0.4
    lam: float = 1.0
    stats_window: int = 64
    agent_model: str = "smollm2"
    simulator_model: str = "smollm2"
    simulator_batch_size: int = 4
    simulator_max_new_tokens: int = 256
    simulator_temperature: float = 0.8
    simulator_engine: str = "auto"
    simulator_engine_compute_type: str = "int8"
    simulator_examples: str = "train"
    agent: GRPOAgentConfig = field(default_factory=GRPOAgentConfig)
    warm_start: WarmStartConfig = field(default_factory=WarmStartConfig)
    rwr: RWRConfig = field(default_factory=RWRConfig)
    seed: int = 0
    report_to: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        check_types(self, "coevolution")
        for name in ("epochs", "tasks_per_epoch", "generation_rounds", "simulator_batch_size",
                     "simulator_max_new_tokens", "validation_every", "stats_window"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ValueError(f"coevolution.{name} must be at least 1, got {getattr(self, name)}")
        for name in ("replay_tasks", "validation_limit", "beta", "band_k", "lam", "simulator_temperature"):
            if getattr(self, name) < 0:
                raise ValueError(f"coevolution.{name} must be >= 0, got {getattr(self, name)}")
        if self.base_limit is not None and self.base_limit < 1:
            raise ValueError(f"coevolution.base_limit must be at least 1 or null, got {self.base_limit}")
        if self.static_pool_size is not None and self.static_pool_size < 1:
            raise ValueError(f"coevolution.static_pool_size must be at least 1 or null, got {self.static_pool_size}")
        if self.offline_multiplier <= 0:
            raise ValueError(f"coevolution.offline_multiplier must be > 0, got {self.offline_multiplier}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"coevolution.alpha must lie in [0, 1], got {self.alpha}")
        if self.simulator_engine not in ENGINES:
            raise ValueError(f"simulator.engine must be one of {', '.join(ENGINES)}, got {self.simulator_engine!r}")
        if self.simulator_engine_compute_type not in COMPUTE_TYPES:
            raise ValueError(f"simulator.engine_compute_type must be one of {', '.join(COMPUTE_TYPES)}")
        if self.simulator_examples not in ("train", "in_band", "scored"):
            raise ValueError(f"simulator.examples must be train, in_band or scored, got {self.simulator_examples!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def simulator(self, policy: Any) -> Simulator:
        """The task writer these settings describe, on ``policy`` (the simulator's model)."""
        return Simulator(
            policy,
            batch_size=self.simulator_batch_size,
            sampling=SamplingConfig(self.simulator_max_new_tokens, self.simulator_temperature, 0.95),
            alpha=self.alpha,
            engine=self.simulator_engine,
            engine_compute_type=self.simulator_engine_compute_type,
        )


class CoEvolutionTrainer:
    """Runs GenEnv epochs with checkpoints; ``resume=True`` continues from the last complete one."""

    def __init__(self, config: GenEnvConfig, *, resume: bool = False) -> None:
        self.config = config
        self.run_dir = make_run_dir(config.run_dir)
        self.processes = PartialState(cpu=not torch.cuda.is_available())
        self.is_main = self.processes.is_main_process
        self.lock = RunLock(self.run_dir)
        if self.is_main:
            self.lock.acquire()
        try:
            self._build(resume)
        except BaseException:
            self.lock.release()
            raise

    def _build(self, resume: bool) -> None:
        config = self.config
        device = str(self.processes.device)
        self.adapter: BenchmarkAdapter = get_benchmark(
            config.benchmark, data_dir=config.data_dir, **config.adapter_options
        )
        for key in ("base_split", "validation_split"):
            split = getattr(config, key)
            if split is not None and split not in self.adapter.splits:
                raise ValueError(
                    f"coevolution.{key}={split!r}: {config.benchmark} has the splits {', '.join(self.adapter.splits)}"
                )
        self.rng = np.random.default_rng(config.seed)
        torch.manual_seed(config.seed)
        self.stats = FamilyStats(window=config.stats_window)
        self.band = DifficultyFilter(alpha=config.alpha, k=config.band_k)

        self.agent_policy = load_policy(config.agent_model, device=device, seed=config.seed)
        agent_config = GRPOAgentConfig(**{**asdict(config.agent), "output_dir": str(self.run_dir / "trl")})
        self.agent_trainer = GRPOAgentTrainer(self.agent_policy, self.adapter, agent_config)
        self.expert_trainer = WarmStartTrainer(
            self.agent_trainer.model,
            self.agent_policy.tokenizer,
            config.warm_start,
            exchanges=shown_exchanges(self.adapter, config.agent.few_shot),
            output_dir=str(self.run_dir / "trl-sft"),
        )
        self.simulator_policy = self.simulator_trainer = self.simulator = None
        self.validation_tasks: list[Task] = []
        self._validation_engine: Engine | None = None
        if self.is_main:
            self.simulator_policy = load_policy(config.simulator_model, device=device, seed=config.seed + 1)
            if config.curriculum == "genenv":
                self.simulator_trainer = RWRTrainer(self.simulator_policy, config.rwr)
            self.simulator = config.simulator(self.simulator_policy)
            self.traces = TracePool(self.run_dir / POOLS)
            self.tasks = TaskPool(self.run_dir / POOLS)
            self.validation_tasks = self._validation_tasks()
            self.reporter = MetricsReporter(config.report_to, self.run_dir, config.to_dict())
        self.start_epoch = 0
        self._warm_started: tuple[dict[str, Any], float] | None = None
        warm_start = self.run_dir / CHECKPOINTS / WARM_START
        epochs_saved, warm_started = bool(checkpoint_folders(self.run_dir)), (warm_start / "state.json").exists()
        if (epochs_saved or warm_started) and not resume:
            raise FileExistsError(f"{self.run_dir} already holds a run; pass resume=true or choose another run_dir")
        if epochs_saved:
            self.start_epoch = self._restore()
            return
        if warm_started:  # before the pools are touched: a damaged checkpoint stops the run with nothing moved
            self._warm_started = self._restore_warm_start(warm_start)
        if self.is_main:
            self._start_over(resume)

    # -- the loop ---------------------------------------------------------------------------
    def train(self) -> list[dict[str, Any]]:
        """Run the remaining epochs; returns their metrics (also appended to ``metrics.jsonl``)."""
        history = []
        try:
            for epoch in range(self.start_epoch, self.config.epochs):
                metrics = self.run_epoch(epoch)
                history.append(metrics)
                if self.is_main:
                    logger.info("epoch %d: %s", epoch, json.dumps(_short(metrics)))
            if self.is_main:
                self.reporter.close()
        finally:
            self.lock.release()
        return history

    def run_epoch(self, epoch: int) -> dict[str, Any]:
        """One co-evolution epoch, checkpointed; returns its metrics (epoch 0's also hold the held-out score
        before training and after the warm start, and the warm start's steps and loss)."""
        start = time.perf_counter()
        stages: dict[str, float] = {}
        before: dict[str, Any] = {}
        if epoch == 0 and self._warm_started is not None:  # resumed after the warm start of a killed epoch 0
            before, stages["warm_start"] = self._warm_started
        elif epoch == 0:
            with _timed(stages, "warm_start"):
                before = self._warm_start()
            state = {"metrics": before, "seconds": stages["warm_start"], "rng": self.rng.bit_generator.state}
            self._save_checkpoint(WARM_START, state, simulator=False)
        fresh, proposals, replay, pool_writing = [], [], [], None
        family_success = self.stats.rates()  # what a conditioned simulator is shown when it writes this epoch's tasks
        if self.is_main:
            with _timed(stages, "tasks"):
                fresh, proposals, pool_writing = self._epoch_tasks(epoch)
                replay = self._replay(epoch)
                self._add_expert_traces(fresh, epoch)
        fresh, replay = self._share_tasks(fresh, replay)
        agent_metrics: dict[str, float] = {}
        episodes = []
        if fresh or replay:
            with _timed(stages, "agent"):
                agent_metrics = self.agent_trainer.train(fresh + replay)
            episodes = list(self.agent_trainer.episodes)
        with _timed(stages, "expert_mix"):
            expert_mix = self._mix_expert_traces(epoch)
        fresh_ids = {task.task_id for task in fresh}
        fresh_episodes = [e for e in episodes if e.task.task_id in fresh_ids]
        p_hat = float(np.mean([e.reward for e in fresh_episodes])) if fresh_episodes else None
        per_family: dict[str, list[float]] = {}
        per_task: dict[str, list[float]] = {}
        for episode in fresh_episodes:
            per_family.setdefault(self.adapter.family(episode.task), []).append(episode.reward)
            per_task.setdefault(episode.task.task_id, []).append(episode.reward)
        for family, rewards in per_family.items():
            self.stats.update(family, rewards)
        task_p_hat = {task_id: float(np.mean(rewards)) for task_id, rewards in per_task.items()}
        task_r_env = {
            task_id: alpha_reward(p, self.config.alpha, self.config.beta) for task_id, p in task_p_hat.items()
        }
        if not self.is_main:
            self._checkpoint(epoch, {})  # the agent's weights are saved by every process
            return self._share_metrics(None)

        filtered = self._add_proposals(proposals, epoch, task_p_hat, task_r_env) if proposals else 0
        if episodes:
            self.traces.add_episodes(episodes, epoch, "on_policy")
        with _timed(stages, "simulator"):
            simulator_metrics = self._update_simulator(epoch) if self.simulator_trainer is not None else {}
        with _timed(stages, "validation"):
            last = epoch == self.config.epochs - 1
            validation = self._validate() if last or (epoch + 1) % self.config.validation_every == 0 else {}

        metrics = {
            **before,
            "epoch": epoch,
            "curriculum": self.config.curriculum,
            "seed": self.config.seed,
            "p_hat": p_hat,
            "p_hat_per_family": {family: float(np.mean(r)) for family, r in sorted(per_family.items())},
            "p_hat_per_task": sorted(task_p_hat.values()),
            "family_success": family_success,
            "r_env": float(np.mean(list(task_r_env.values()))) if task_r_env else 0.0,
            "in_band": sum(self.band(p) for p in task_p_hat.values()),
            "fresh_tasks": len(fresh),
            "fresh_per_family": _counts(self.adapter.family(task) for task in fresh),
            "replay_tasks": len(replay),
            "proposals": len(proposals),
            "rejects": sum(p.task is None for p in proposals),
            "filtered": filtered,
            "reject_reasons": _reason_counts(proposals),
            "task_length_tokens": _mean_tokens(self.agent_policy.tokenizer, [t.prompt for t in fresh]),
            "agent": agent_metrics,
            "expert_mix": expert_mix,
            "simulator": simulator_metrics,
            "validation": validation,
            "pool_traces": len(self.traces) + len(self.traces.uncommitted()),
            "pool_tasks": len(self.tasks) + len(self.tasks.uncommitted()),
            "generated_tasks": self._generated_tasks(),
            "seconds": time.perf_counter() - start,
            "stage_seconds": stages,
            **({"pool_writing": pool_writing} if pool_writing is not None else {}),
            "peak_rss_mb": peak_rss_mb(),
            "load_average": load_average(),  # 1, 5, 15 min at the epoch's end: the load beside its times
        }
        metrics = json.loads(json.dumps(metrics, default=float))
        self._checkpoint(epoch, metrics)
        self._log_metrics(metrics)
        self.traces.commit(epoch)
        self.tasks.commit(epoch)
        return self._share_metrics(metrics)

    def _add_proposals(
        self, proposals: list[Proposal], epoch: int, task_p_hat: dict[str, float], task_r_env: dict[str, float]
    ) -> int:
        """Store the epoch's simulator outputs in D_env, each rewarded by the success of the agent's G attempts
        on its task; returns how many valid ones were filtered out of the simulator update. A valid proposal
        whose task was not played (beyond the epoch's quota) has no p_hat: it is stored as filtered with
        R_env 0, like one outside the band."""
        task_ids = [p.task.task_id if p.task is not None else None for p in proposals]
        r_env = [task_r_env.get(task_id, 0.0) for task_id in task_ids]
        kept = [task_id in task_p_hat and self.band(task_p_hat[task_id]) for task_id in task_ids]
        weights = [rwr_weight(r, self.config.lam) for r in r_env]
        p_hat = [task_p_hat.get(task_id) for task_id in task_ids]
        records = self.tasks.add_proposals(proposals, epoch, r_env, weights, kept, p_hat)
        return sum(record["status"] == "filtered" for record in records)

    def _generated_tasks(self) -> int:
        """Distinct valid tasks the simulator has written so far in this run (what data efficiency counts)."""
        records = self.tasks.records(include_uncommitted=True)
        return len({record["task"]["task_id"] for record in records if record["task"] is not None})

    # -- several processes ------------------------------------------------------------------
    def _share_tasks(self, fresh: list[Task], replay: list[Task]) -> tuple[list[Task], list[Task]]:
        """The main process's task lists, on every process."""
        if self.processes.num_processes == 1:
            return fresh, replay
        payload = [[t.to_dict() for t in fresh], [t.to_dict() for t in replay]]
        broadcast_object_list(payload, from_process=0)
        return [Task.from_dict(t) for t in payload[0]], [Task.from_dict(t) for t in payload[1]]

    def _share_metrics(self, metrics: dict[str, Any] | None) -> dict[str, Any]:
        """The main process's epoch metrics, on every process."""
        if self.processes.num_processes == 1:
            return metrics
        payload = [metrics]
        broadcast_object_list(payload, from_process=0)
        return payload[0]

    def _log_metrics(self, metrics: dict[str, Any]) -> None:
        with (self.run_dir / METRICS_FILE).open("a", encoding="utf-8") as out:
            out.write(json.dumps(metrics) + "\n")
        self.reporter.log(metrics, metrics["epoch"])

    # -- tasks ------------------------------------------------------------------------------
    def _epoch_tasks(self, epoch: int) -> tuple[list[Task], list[Proposal], dict[str, float] | None]:
        """This epoch's fresh tasks, every proposal written for them, and (epoch 0 of a static or offline run) what
        writing the pool cost (:meth:`_generate_pool`)."""
        if self.config.curriculum in ("static", "offline"):  # one pool written before training; same budget per epoch
            proposals: list[Proposal] = []
            pool_writing = None
            if epoch == 0:
                pool, proposals, pool_writing = self._generate_pool(self.pool_size())
            else:
                unique = {r["task"]["task_id"]: r["task"] for r in self.tasks.records() if r["task"] is not None}
                pool = [Task.from_dict(task) for task in unique.values()]
            picks = self.rng.permutation(len(pool))[: self.config.tasks_per_epoch]
            return [pool[int(i)] for i in picks], proposals, pool_writing
        fresh, proposals = self._generate(self.config.tasks_per_epoch, conditioned=self.config.curriculum == "genenv")
        return fresh, proposals, None

    def pool_size(self) -> int:
        """The tasks a ``static`` or ``offline`` curriculum generates before training."""
        if self.config.static_pool_size is not None:
            return self.config.static_pool_size
        trained_on = self.config.tasks_per_epoch * self.config.epochs
        multiplier = self.config.offline_multiplier if self.config.curriculum == "offline" else 1.0
        return math.ceil(multiplier * trained_on)

    def _rounds(self, wanted: int) -> int:
        """Simulator batches allowed for ``wanted`` tasks: ``generation_rounds`` tries per batch they need."""
        return self.config.generation_rounds * max(1, -(-wanted // self.simulator.batch_size))

    def _generate(self, wanted: int, *, conditioned: bool) -> tuple[list[Task], list[Proposal]]:
        """Ask the simulator for tasks until ``wanted`` distinct ones are valid or the rounds run out."""
        proposals: list[Proposal] = []
        valid: dict[str, Task] = {}
        success = self.stats.rates() if conditioned else None
        own_examples = scored = None
        if conditioned and self.config.simulator_examples == "in_band":
            own_examples = self.tasks.in_band_outputs(self.simulator.num_examples)
        if conditioned and self.config.simulator_examples == "scored":
            scored = self.tasks.scored_outputs(lambda task: self.adapter.family(Task.from_dict(task)), SCORED_TASKS)
        for _ in tqdm(range(self._rounds(wanted)), desc="simulator", unit="batch", leave=False):
            if len(valid) >= wanted:
                break
            batch = self.simulator.propose(
                self.adapter, rng=self.rng, success=success, own_examples=own_examples, scored=scored
            )
            proposals.extend(batch)
            valid.update((p.task.task_id, p.task) for p in batch if p.task is not None)
        return list(valid.values())[:wanted], proposals

    def _generate_pool(self, wanted: int) -> tuple[list[Task], list[Proposal], dict[str, float]]:
        """The static/offline pool, written before training by the frozen simulator as :meth:`_generate` would,
        except that each batch is stored durably in ``pools/pool_draft.jsonl`` as soon as it is written and batch
        ``i`` draws from its own seeded stream: a run killed while writing its pool (hours for an offline pool on a
        CPU) continues from the batches it has, and the pool is the same as an uninterrupted run's.

        Batch ``i`` does not depend on the pool's size, so a draft written for a larger pool of the same seed and
        simulator (an offline run's, for a static run) holds this pool's batches too: they are read in order until
        the pool is full and the rest is left unread, as though this run had written them itself.

        Each batch's records carry ``batch_seconds``, the wall time the simulator took to write it, so the pool's
        cost is known whichever process or run wrote it: the returned ``pool_writing`` holds the batches the pool
        used, how many of them carry a time (drafts written before times were recorded carry none) and their sum."""
        draft = JsonlPool(self.run_dir / POOLS, POOL_DRAFT)
        if pending := draft.uncommitted():  # batches are appended whole: a kill before its commit loses none
            draft.commit(pending[-1]["epoch"])
        written: dict[int, list[Proposal]] = {}
        seconds: dict[int, float] = {}
        for record in draft.records():
            written.setdefault(int(record["epoch"]), []).append(_proposal(record))
            if "batch_seconds" in record:
                seconds[int(record["epoch"])] = float(record["batch_seconds"])
        proposals: list[Proposal] = []
        valid: dict[str, Task] = {}
        rounds = self._rounds(wanted)
        read = 0
        while read < rounds and len(valid) < wanted:
            if (batch := written.get(read)) is None:
                if any(index > read for index in written):
                    raise RuntimeError(f"{draft.path}: batch {read} is missing; the draft is damaged")
                break
            proposals.extend(batch)
            valid.update((p.task.task_id, p.task) for p in batch if p.task is not None)
            read += 1
        if read:
            logger.info("pool: %d batches read from the draft (%d valid tasks of %d)", read, len(valid), wanted)
        used = read
        for batch_index in tqdm(range(read, rounds), desc="pool", unit="batch", leave=False):
            if len(valid) >= wanted:
                break
            rng = np.random.default_rng([self.config.seed, POOL_STREAM, batch_index])
            start = time.perf_counter()
            batch = self.simulator.propose(self.adapter, rng=rng, success=None)
            seconds[batch_index] = time.perf_counter() - start
            draft.append([p.to_dict() | {"batch_seconds": seconds[batch_index]} for p in batch], batch_index)
            draft.commit(batch_index)
            proposals.extend(batch)
            valid.update((p.task.task_id, p.task) for p in batch if p.task is not None)
            used = batch_index + 1
        timed = [seconds[index] for index in range(used) if index in seconds]
        pool_writing = {"batches": used, "timed_batches": len(timed), "seconds": float(sum(timed))}
        return list(valid.values())[:wanted], proposals, pool_writing

    def _replay(self, epoch: int) -> list[Task]:
        """Tasks drawn from D_train (base data and earlier epochs) for this epoch's agent update."""
        if self.config.replay_tasks <= 0:
            return []
        records = [r for r in self.traces.training_set(epoch) if r["epoch"] < epoch or r["source"] == "base"]
        unique = list({r["task"]["task_id"]: r["task"] for r in records}.values())
        if not unique:
            return []
        picks = self.rng.choice(len(unique), min(self.config.replay_tasks, len(unique)), replace=False)
        return [Task.from_dict(unique[int(i)]) for i in picks]

    def _restore_warm_start(self, folder: Path) -> tuple[dict[str, Any], float]:
        """The agent as the warm start of a killed epoch 0 left it; returns that stage's metrics and seconds."""
        try:
            state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
            self.agent_trainer.load(folder / "agent")
            torch.set_rng_state(torch.load(folder / "torch_rng.pt", weights_only=True))
        except Exception as error:  # noqa: BLE001 - any damaged file
            raise RuntimeError(
                f"resume: the warm-start checkpoint {folder} cannot be loaded ({type(error).__name__}: {error}); "
                "delete that folder to redo the warm start"
            ) from error
        self.rng.bit_generator.state = state["rng"]
        logger.info("resumed from %s: epoch 0 continues after the warm start", folder)
        return state["metrics"], float(state["seconds"])

    def _start_over(self, resume: bool) -> None:
        """Epoch 0 from scratch; the records of an earlier run killed before its first checkpoint are set aside."""
        if committed := [pool.path for pool in (self.traces, self.tasks) if pool.committed_epoch is not None]:
            raise FileExistsError(
                f"{committed[0]} holds committed epochs but {self.run_dir / CHECKPOINTS} has no checkpoint: the "
                "checkpoints were removed, so the run cannot be resumed; choose another run_dir"
            )
        moved = sum(len(pool.discard_uncommitted()) for pool in (self.traces, self.tasks))
        if moved or resume:
            logger.warning(
                "%s has no epoch checkpoint yet%s: epoch 0 starts %s",
                self.run_dir,
                f" ({moved} records of an unfinished epoch 0 moved to pools/*.uncommitted.jsonl)" if moved else "",
                "after the restored warm start" if self._warm_started is not None else "from the beginning",
            )
        if self.config.base_split:
            self._add_base_data()

    def _add_base_data(self) -> None:
        """D_train's base data: the training split's tasks, each with its expert trace where it has one."""
        tasks = self.adapter.load_tasks(self.config.base_split)
        if self.config.base_limit is not None and len(tasks) > self.config.base_limit:
            picks = np.linspace(0, len(tasks) - 1, self.config.base_limit).round().astype(int)
            tasks = [tasks[int(i)] for i in picks]
        held_out = {t.task_id for t in self.validation_tasks} | {t.prompt for t in self.validation_tasks}
        shared = [t.task_id for t in tasks if t.task_id in held_out or t.prompt in held_out]
        if shared:
            raise ValueError(
                f"base_split {self.config.base_split!r} shares {len(shared)} tasks with the held-out split "
                f"{self.config.validation_split!r} (e.g. {shared[0]}): base data must never be evaluated on"
            )
        self.traces.append([self._expert_record(t, "base") for t in tasks], 0)

    def _add_expert_traces(self, tasks: list[Task], epoch: int) -> None:
        """The expert trace of every validated generated task, as it is generated (source ``expert``)."""
        records = [self._expert_record(t, "expert") for t in tasks if t.source == "generated"]
        records = [r for r in records if r["messages"]]
        if records:
            self.traces.append(records, epoch)

    def _expert_record(self, task: Task, source: str) -> dict[str, Any]:
        conversation = expert_conversation(self.adapter, task) or {"messages": [], "tools": []}
        return {
            "task": task.to_dict(),
            "family": self.adapter.family(task),
            "messages": conversation["messages"],
            "tools": conversation["tools"],
            "reward": 1.0 if conversation["messages"] else 0.0,
            "truncated": False,
            "info": {},
            "source": source,
            "valid": True,
        }

    def _expert_conversations(self, epoch: int, k: int | None, draw: int) -> list[dict[str, Any]]:
        """``k`` expert traces of D_train at ``epoch`` (all with ``None``), a sample seeded by the epoch and ``draw``
        (0: the warm start, 1: the epoch's mixing), shared with every process."""
        conversations: list[dict[str, Any]] = []
        if self.is_main:
            records = [
                r for r in self.traces.training_set(epoch) if r["source"] in ("base", "expert") and r["messages"]
            ]
            rng = np.random.default_rng([self.config.warm_start.seed, epoch, draw])
            picks = rng.permutation(len(records))[: len(records) if k is None else k]
            conversations = [{"messages": records[i]["messages"], "tools": records[i]["tools"]} for i in picks]
        if self.processes.num_processes > 1:
            payload = [conversations]
            broadcast_object_list(payload, from_process=0)
            conversations = payload[0]
        return conversations

    def _warm_start(self) -> dict[str, Any]:
        """Held-out score before training, the supervised warm start on expert traces, and the score after it."""
        out: dict[str, Any] = {}
        if self.is_main:
            out["validation_start"] = self._validate()
        if self.config.warm_start.max_examples == 0:
            return out
        conversations = self._expert_conversations(0, self.config.warm_start.max_examples, draw=0)
        if not conversations:
            return out
        out["warm_start"] = self.expert_trainer.train(conversations)
        if self.is_main:
            out["validation_warm_start"] = self._validate()
            logger.info("warm start: %s", json.dumps(out["warm_start"]))
        return out

    def _mix_expert_traces(self, epoch: int) -> dict[str, float]:
        """``warm_start.mix_per_epoch`` expert traces of D_train as supervised steps after the GRPO update."""
        k = self.config.warm_start.mix_per_epoch
        conversations = self._expert_conversations(epoch, k, draw=1) if k > 0 else []
        return self.expert_trainer.train(conversations, epochs=1.0) if conversations else {}

    def _validation_tasks(self) -> list[Task]:
        if not self.config.validation_split or self.config.validation_limit == 0:
            return []
        tasks = self.adapter.load_tasks(self.config.validation_split)
        order = np.random.default_rng(VALIDATION_SEED).permutation(len(tasks))  # the same tasks for every seed
        return [tasks[int(i)] for i in order[: self.config.validation_limit]]

    # -- updates and evaluation -------------------------------------------------------------
    def _update_simulator(self, epoch: int) -> dict[str, Any]:
        examples = self.tasks.rwr_examples(epoch)
        if not examples:
            return {"steps": 0, "examples": 0}
        stats = self.simulator_trainer.train(examples)
        return stats.to_dict()

    def _validate(self) -> dict[str, Any]:
        """The agent's greedy score on the fixed held-out tasks, scored by the adapter's ``reporting_adapter``
        (API-Bank: official scoring even where training reads text leniently): its metrics and every task's score
        (in task order, so stages of a run can be compared task by task)."""
        if not self.validation_tasks:
            return {}
        agent = Agent(
            self.agent_policy,
            SamplingConfig(max_new_tokens=self.config.agent.max_new_tokens),
            few_shot=self.config.agent.few_shot,
            engine=self._validation_engine_for_agent(),
        )
        summary, episodes = evaluate(
            self.adapter.reporting_adapter(),
            agent,
            self.validation_tasks,
            batch_size=8,
            max_turns=self.config.agent.max_turns,
            seed=self.config.seed,
        )
        return {**summary["metrics"], "task_scores": [float(e.info.get("score", e.reward)) for e in episodes]}

    def _validation_engine_for_agent(self) -> Engine:
        """The agent's engine, in float32 when it is CTranslate2: greedy validation text then equals HF's (and
        ``genenv.evaluate``'s), whatever precision the rollouts use."""
        if self._validation_engine is None:
            trainer = self.agent_trainer
            self._validation_engine = trainer.engine
            if trainer.engine_name == "ctranslate2" and self.config.agent.engine_compute_type != "float32":
                self._validation_engine = build_engine(
                    "ctranslate2", replace(self.agent_policy, model=trainer.model), compute_type="float32"
                )
        return self._validation_engine

    # -- checkpoints ------------------------------------------------------------------------
    def _checkpoint(self, epoch: int, metrics: dict[str, Any]) -> None:
        """Write checkpoint ``epoch`` atomically, then point ``latest`` at it."""
        state = {
            "epoch": epoch,
            "stats": self.stats.to_dict(),
            "rng": self.rng.bit_generator.state,
            "config": self.config.to_dict(),
            "metrics": metrics,
        }
        name = f"epoch-{epoch:04d}"
        self._save_checkpoint(name, state)
        if self.is_main:
            _write_atomic(self.run_dir / CHECKPOINTS / LATEST, name)

    def _save_checkpoint(self, name: str, state: dict[str, Any], simulator: bool = True) -> None:
        """Write checkpoint folder ``name`` atomically (temp folder, rename): the agent (saved by every process:
        sharded weights are gathered), the simulator, ``state.json`` and the torch RNG."""
        root = self.run_dir / CHECKPOINTS
        final = root / name
        tmp = root / f".{name}.tmp"
        if self.is_main:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
        self.processes.wait_for_everyone()
        self.agent_trainer.save(tmp / "agent")
        self.processes.wait_for_everyone()
        if not self.is_main:
            return
        if simulator and self.simulator_trainer is not None:
            self.simulator_trainer.save(tmp / "simulator")
        (tmp / "state.json").write_text(json.dumps(state, default=str), encoding="utf-8")
        torch.save(torch.get_rng_state(), tmp / "torch_rng.pt")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)

    def _restore(self) -> int:
        """Load the newest loadable checkpoint and reconcile the pools; returns the next epoch.

        A damaged checkpoint (unreadable ``state.json``, RNG, optimizer or weights) is skipped with a warning for
        the next older one, as long as that one is not older than what the pools have committed; otherwise the
        error names every damaged file."""
        committed = -1
        if self.is_main:
            committed = max(
                (p.committed_epoch for p in (self.traces, self.tasks) if p.committed_epoch is not None), default=-1
            )
        skipped: list[str] = []
        chosen: Path | None = None
        for checkpoint in checkpoint_folders(self.run_dir):
            try:
                state = json.loads((checkpoint / "state.json").read_text(encoding="utf-8"))
                epoch = int(state["epoch"])
            except (OSError, ValueError, KeyError, TypeError) as error:
                skipped.append(f"{checkpoint / 'state.json'}: {error}")
                continue
            if epoch < committed:
                skipped.append(f"{checkpoint}: epoch {epoch} is older than the pools' committed epoch {committed}")
                break
            part = checkpoint / "torch_rng.pt"
            try:
                rng_state = torch.load(part, weights_only=True)
                part = checkpoint / "agent"
                self.agent_trainer.load(part)
                if self.simulator_trainer is not None:
                    part = checkpoint / "simulator"
                    self.simulator_trainer.load(part)
            except Exception as error:  # noqa: BLE001 - any damaged file: try the next older checkpoint
                reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
                skipped.append(f"{part}: {reason}")
                logger.warning("resume: %s cannot be loaded (%s); trying an older checkpoint", part, reason)
                continue
            chosen = checkpoint
            break
        if chosen is None:
            raise RuntimeError(f"resume: no loadable checkpoint in {self.run_dir}: " + "; ".join(skipped))
        if skipped:
            logger.warning("resume: fell back to %s; skipped %s", chosen, "; ".join(skipped))
        torch.set_rng_state(rng_state)
        if not self.is_main:
            return epoch + 1
        self.stats = FamilyStats.from_dict(state["stats"])
        self.rng.bit_generator.state = state["rng"]
        for pool in (self.traces, self.tasks):
            pending = pool.uncommitted()
            if pending and all(r["epoch"] <= epoch for r in pending):
                pool.commit(epoch)  # killed after the checkpoint, before the commit: the epoch is complete
            elif pending:
                moved = pool.discard_uncommitted()
                logger.warning("resume: %d records of unfinished epoch %d moved aside", len(moved), epoch + 1)
        if epoch not in logged_epochs(self.run_dir):  # killed between the checkpoint and the metrics line
            if "metrics" in state:
                self._log_metrics(state["metrics"])
            else:
                logger.warning(
                    "resume: checkpoint %s predates saved metrics; epoch %d has no metrics line", chosen, epoch
                )
        logger.info("resumed from %s; continuing at epoch %d", chosen, epoch + 1)
        return epoch + 1


def checkpoint_folders(run_dir: str | Path) -> list[Path]:
    """A run's checkpoint folders holding a ``state.json``, the one ``latest`` points at first, then newest first."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    folders = sorted((f for f in root.glob("epoch-*") if (f / "state.json").exists()), reverse=True)
    pointer = root / LATEST
    if pointer.exists():
        target = root / pointer.read_text(encoding="utf-8").strip()
        if target in folders:
            folders.remove(target)
            folders.insert(0, target)
        else:
            logger.warning("%s points at %s, which is missing or incomplete", pointer, target.name)
    return folders


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The checkpoint a resume starts from first (see :func:`checkpoint_folders`), or ``None``."""
    folders = checkpoint_folders(run_dir)
    return folders[0] if folders else None


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every epoch's metrics of a run, in order (``metrics.jsonl``)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        return []
    metrics = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            metrics.append(json.loads(line))
        except ValueError:  # a line torn by a kill mid-write
            logger.warning("skipping an unreadable line of %s", path)
    return metrics


def logged_epochs(run_dir: str | Path) -> set[int]:
    return {int(m["epoch"]) for m in read_metrics(run_dir)}


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


def _proposal(record: dict[str, Any]) -> Proposal:
    """A :class:`Proposal` from its stored ``to_dict()``."""
    task = Task.from_dict(record["task"]) if record["task"] is not None else None
    return Proposal(record["family"], record["messages"], record["raw"], task, record["reject_reason"])


@contextmanager
def _timed(stages: dict[str, float], name: str) -> Iterator[None]:
    """Add the wall seconds of the block to ``stages[name]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        stages[name] = stages.get(name, 0.0) + time.perf_counter() - start


def _counts(keys: Iterable[str]) -> dict[str, int]:
    return dict(sorted(Counter(keys).items()))


def _reason_counts(proposals: list[Proposal]) -> dict[str, int]:
    return _counts(p.reject_reason.split(":", 1)[0] for p in proposals if p.task is None)


def _mean_tokens(tokenizer: Any, texts: list[str]) -> float | None:
    return float(np.mean([len(tokenizer(text)["input_ids"]) for text in texts])) if texts else None


def _short(metrics: dict[str, Any]) -> dict[str, Any]:
    keys = ("epoch", "p_hat", "r_env", "fresh_tasks", "rejects", "seconds")
    return {key: metrics.get(key) for key in keys}
