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
epoch's batch from it (GenEnv-Static). ``"learnability"`` loads no simulator: it draws the benchmark's base tasks in
proportion to ``p (1 - p)`` of the agent's estimated success (:mod:`genenv.curriculum.learnability`), and is the one
curriculum a benchmark without generation methods trains with (the others are refused before any work, naming the
missing methods). Where each curriculum's tasks come from: :mod:`genenv.curriculum.sources`;
the warm start's data: :mod:`genenv.agents.warm_start`; the run folder and its checkpoints: :mod:`genenv.checkpoints`.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
import torch
from accelerate import PartialState
from accelerate.utils import broadcast_object_list

from genenv.agents.agent import Agent, Episode
from genenv.agents.dynamic_sampling import Refill
from genenv.agents.grpo import GRPOAgentConfig, GRPOAgentTrainer
from genenv.agents.rollout import shown_exchanges
from genenv.agents.warm_start import (
    WarmStartConfig,
    WarmStartTrainer,
    base_tasks,
    draw_conversations,
    expert_record,
)
from genenv.benchmarks.base import BenchmarkAdapter, Task, get_benchmark
from genenv.checkpoints import METRICS_FILE, POOLS, WARM_START, Checkpoints, logged_epochs
from genenv.config import check_types
from genenv.console import EPOCHS, epoch_line
from genenv.curriculum import DifficultyFilter, FamilyStats, RWRConfig, RWRTrainer
from genenv.curriculum.config import CurriculumConfig
from genenv.curriculum.learnability import LearnabilitySource, pool_split
from genenv.curriculum.rwr import warn_rwr_off
from genenv.curriculum.sources import (
    CURRICULA_WITHOUT_GENERATION,
    WRITTEN_CURRICULA,
    EpochTasks,
    TaskSource,
    WrittenEachEpoch,
    WrittenOnce,
    missing_generation_methods,
)
from genenv.curriculum.success import BatchSuccess, output_rewards
from genenv.envs.simulator import Proposal, Simulator
from genenv.evaluate import evaluate
from genenv.llm.engines import COMPUTE_TYPES, ENGINES, Engine, OpenAIConfig, build_engine, resolve_engine
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import load_policy
from genenv.machine import load_average, peak_rss_mb, release_freed_memory
from genenv.pools import TaskPool, TracePool
from genenv.reporting import MetricsReporter
from genenv.run_lock import RunLock, make_run_dir

logger = logging.getLogger(__name__)

VALIDATION_SEED = 12345  # picks the held-out subset: runs of different seeds score the same tasks
#: values of ``validation_engine``
VALIDATION_ENGINES = ("auto", "hf", "ctranslate2")
#: held-out episodes played at once, per engine: CTranslate2 drops a batch's finished rows and gains from wide
#: batches; HF ``generate`` pads every row to the batch's longest
VALIDATION_BATCH = {"ctranslate2": 24, "hf": 8}
Shared = TypeVar("Shared")


@dataclass
class ValidationConfig:
    """The held-out tasks scored before training, after the warm start and after epochs.

    Args:
        split: the held-out benchmark split (``None``: the adapter's ``validation_split``; it has none: no scoring).
        limit: tasks scored (a fixed subset of the split, the same for every ``seed``); ``0``: none (ZeRO-3:
            validation generates on the main process, which sharded weights do not allow).
        every: score them after every ``every``-th epoch (epochs ``n-1``, ``2n-1``, ...) and after the last; the score
            before training and after the warm start is always taken. Other epochs' metrics have an empty
            ``validation``.
        samples: episodes played of each task; its score is their mean (1: one episode).
        temperature: their sampling temperature (0: greedy, which needs ``samples=1``). The mean of several samples
            at the rollouts' temperature sees a shift of probability that greedy scoring shows only when the top
            answer flips.
        engine: who plays them: ``"auto"``, CTranslate2 in float32 on a CPU where it is installed (its greedy text
            equals HF ``generate``'s), else HF ``generate``; ``"ctranslate2"`` (float32; ``hf`` where it cannot run,
            and the log says why); ``"hf"``: HF ``generate`` on the trained model.
    """

    split: str | None = None
    limit: int = 72
    every: int = 1
    samples: int = 1
    temperature: float = 0.0
    engine: str = "auto"

    def __post_init__(self) -> None:
        check_types(self, "validation")
        for name in ("every", "samples"):
            if getattr(self, name) < 1:
                raise ValueError(f"validation.{name} must be at least 1, got {getattr(self, name)}")
        for name in ("limit", "temperature"):
            if getattr(self, name) < 0:
                raise ValueError(f"validation.{name} must be >= 0, got {getattr(self, name)}")
        if self.samples > 1 and self.temperature == 0:
            raise ValueError(
                f"validation.samples={self.samples} at validation.temperature 0 plays the same greedy episode each "
                "time: set a temperature above 0 or validation.samples=1"
            )
        if self.engine not in VALIDATION_ENGINES:
            raise ValueError(f"validation.engine must be one of {', '.join(VALIDATION_ENGINES)}, got {self.engine!r}")


@dataclass
class SimulatorConfig:
    """The environment policy: the model that writes tasks, and how it generates.

    Args:
        model: its model (``smollm2``, ``qwen05``, ``tiny`` or an HF path; ``None``: the agent's). Never the agent's
            weights: the simulator is a copy of its own, trained by RWR.
        batch_size: proposals per ``generate`` call.
        max_new_tokens: generation limit of one proposal.
        temperature: its sampling temperature.
        engine: who generates (``hf``, ``ctranslate2``, ``vllm``, ``llamacpp``, ``auto``;
            :class:`~genenv.envs.simulator.Simulator`: constrained calls run on ``hf``, or on llama.cpp's grammar
            with ``llamacpp``), or ``openai``: the server ``openai`` names writes the tasks (no local simulator
            weights: a ``genenv`` curriculum conditions it on the agent's success but cannot update it, RWR is off,
            and the trainer says so when it starts).
        engine_compute_type: ``"int8"`` or ``"float32"`` (CTranslate2's weights, or a llama.cpp export's).
        engine_threads: CTranslate2's or llama.cpp's threads (``None``: torch's for CTranslate2, 1 for llama.cpp).
        examples: the worked examples in a GenEnv simulator's prompt: ``"train"``, the benchmark's training items;
            ``"in_band"``, its own latest generations of the requested family whose tasks landed inside the band
            (what RWR trains it toward, shown in context), topped up with training items while it has too few;
            ``"scored"``, the training items, and in the request its latest
            :data:`~genenv.curriculum.sources.SCORED_TASKS` tasks of the requested family that the agent played,
            each with the share of the agent's attempts that solved it. The other curricula always show training
            items only.
        openai: the OpenAI-compatible server of ``engine="openai"``.
    """

    model: str | None = None
    batch_size: int = 4
    max_new_tokens: int = 256
    temperature: float = 0.8
    engine: str = "auto"
    engine_compute_type: str = "int8"
    engine_threads: int | None = None
    examples: Literal["train", "in_band", "scored"] = "train"
    openai: OpenAIConfig = field(default_factory=OpenAIConfig)

    def __post_init__(self) -> None:
        if isinstance(self.openai, dict):
            self.openai = OpenAIConfig(**self.openai)
        check_types(self, "simulator")
        for name in ("batch_size", "max_new_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"simulator.{name} must be at least 1, got {getattr(self, name)}")
        if self.temperature < 0:
            raise ValueError(f"simulator.temperature must be >= 0, got {self.temperature}")
        if self.engine not in ENGINES:
            raise ValueError(f"simulator.engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.engine_compute_type not in COMPUTE_TYPES:
            raise ValueError(f"simulator.engine_compute_type must be one of {', '.join(COMPUTE_TYPES)}")
        if self.engine_threads is not None and self.engine_threads < 1:
            raise ValueError(f"simulator.engine_threads must be at least 1 or null, got {self.engine_threads}")

    def build(self, policy: Any, alpha: float) -> Simulator:
        """The task writer these settings describe, on ``policy`` (the simulator's model), quoting ``alpha``."""
        return Simulator(
            policy,
            batch_size=self.batch_size,
            sampling=SamplingConfig(self.max_new_tokens, self.temperature, 0.95),
            alpha=alpha,
            engine=self.engine,
            engine_compute_type=self.engine_compute_type,
            engine_threads=self.engine_threads,
            openai=self.openai,
        )


@dataclass
class GenEnvConfig:
    """Settings of a co-evolution run, grouped by concept; every default here is the command line's too
    (``python -m genenv.train +bench=NAME --cfg job`` prints them).

    Args:
        benchmark: registered benchmark name.
        data_dir: the benchmark's data folder (``None``: ``$GENENV_DATA_DIR/<benchmark>``).
        adapter_options: keyword arguments of the benchmark adapter (e.g. TravelPlanner's ``mode``).
        run_dir: where pools, checkpoints and ``metrics.jsonl`` live.
        agent_model: model of the agent policy (``smollm2``, ``qwen05``, ``tiny`` or an HF path).
        epochs: co-evolution epochs.
        tasks_per_epoch: fresh tasks the agent trains on per epoch.
        replay_tasks: tasks replayed per epoch from D_train (base data and earlier epochs).
        base_split: the benchmark's training split, whose tasks and expert traces seed D_train as base data (and the
            pool of ``curriculum.name="learnability"``); ``None``: the adapter's ``base_split``. Never a split
            evaluation or validation uses.
        base_limit: at most this many tasks of ``base_split``, evenly spread over it (``None``: all); for splits
            whose expert traces are slow to make (ALFWorld replays every game).
        seed: seeds task sampling, generation and both trainers.
        report_to: mirror each epoch's metrics to ``"tensorboard"`` and/or ``"wandb"`` (``metrics.jsonl`` is
            always written).
        curriculum: where fresh tasks come from and what GenEnv aims at
            (:class:`~genenv.curriculum.config.CurriculumConfig`).
        validation: the held-out scoring (:class:`ValidationConfig`).
        simulator: the environment policy (:class:`SimulatorConfig`).
        agent: GRPO settings of the agent update (:class:`~genenv.agents.grpo.GRPOAgentConfig`).
        warm_start: supervised warm start on D_train's expert traces before epoch 0, and expert traces mixed
            into later epochs (:class:`~genenv.agents.warm_start.WarmStartConfig`).
        rwr: the simulator's update (:class:`~genenv.curriculum.rwr.RWRConfig`).
    """

    benchmark: str = "reasoning_gym"
    data_dir: str | None = None
    adapter_options: dict[str, Any] = field(default_factory=dict)
    run_dir: str = "runs/train"
    agent_model: str = "smollm2"
    epochs: int = 2
    tasks_per_epoch: int = 8
    replay_tasks: int = 0
    base_split: str | None = None
    base_limit: int | None = None
    seed: int = 0
    report_to: list[str] = field(default_factory=list)
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    validation: ValidationConfig = field(default_factory=ValidationConfig)
    simulator: SimulatorConfig = field(default_factory=SimulatorConfig)
    agent: GRPOAgentConfig = field(default_factory=GRPOAgentConfig)
    warm_start: WarmStartConfig = field(default_factory=WarmStartConfig)
    rwr: RWRConfig = field(default_factory=RWRConfig)

    def __post_init__(self) -> None:
        for name, kind in self.groups().items():
            value = getattr(self, name)
            if isinstance(value, dict):
                setattr(self, name, kind(**value))
        check_types(self, "coevolution")
        for name in ("epochs", "tasks_per_epoch"):
            if getattr(self, name) < 1:
                raise ValueError(f"coevolution.{name} must be at least 1, got {getattr(self, name)}")
        if self.replay_tasks < 0:
            raise ValueError(f"coevolution.replay_tasks must be >= 0, got {self.replay_tasks}")
        if self.base_limit is not None and self.base_limit < 1:
            raise ValueError(f"coevolution.base_limit must be at least 1 or null, got {self.base_limit}")

    @staticmethod
    def groups() -> dict[str, type]:
        """The grouped settings: field name -> its dataclass."""
        return {
            "curriculum": CurriculumConfig,
            "validation": ValidationConfig,
            "simulator": SimulatorConfig,
            "agent": GRPOAgentConfig,
            "warm_start": WarmStartConfig,
            "rwr": RWRConfig,
        }

    def for_benchmark(self, adapter: BenchmarkAdapter) -> GenEnvConfig:
        """These settings with what they leave to the benchmark filled in from its adapter: ``base_split`` (and then
        ``base_limit``) and ``validation.split`` left at ``None`` are the adapter's."""
        if self.base_split is not None and self.validation.split is not None:
            return self
        base = (
            (self.base_split, self.base_limit)
            if self.base_split
            else (adapter.base_split, self.base_limit or adapter.base_limit)
        )
        validation = replace(self.validation, split=self.validation.split or adapter.validation_split)
        return replace(self, base_split=base[0], base_limit=base[1], validation=validation)

    @property
    def simulator_model(self) -> str:
        """The simulator's model: its own setting, or the agent's."""
        return self.simulator.model or self.agent_model

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def held_out_tasks(adapter: BenchmarkAdapter, split: str, limit: int | None) -> list[Task]:
    """The first ``limit`` (``None``: all) of ``split``'s tasks in an order fixed by :data:`VALIDATION_SEED`: the same
    held-out tasks for every seed and every run."""
    tasks = adapter.load_tasks(split)
    order = np.random.default_rng(VALIDATION_SEED).permutation(len(tasks))
    return [tasks[int(i)] for i in order[:limit]]


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
        device = str(self.processes.device)
        self.adapter: BenchmarkAdapter = get_benchmark(
            self.config.benchmark, data_dir=self.config.data_dir, **self.config.adapter_options
        )
        config = self.config = self.config.for_benchmark(self.adapter)
        for key, split in (
            ("coevolution.base_split", config.base_split),
            ("validation.split", config.validation.split),
        ):
            if split is not None and split not in self.adapter.splits:
                raise ValueError(f"{key}={split!r}: {config.benchmark} has the splits {', '.join(self.adapter.splits)}")
        without_simulator = config.curriculum.name in CURRICULA_WITHOUT_GENERATION
        if config.curriculum.name in WRITTEN_CURRICULA and (missing := missing_generation_methods(self.adapter)):
            raise ValueError(
                f"curriculum={config.curriculum.name} trains on simulator-written tasks, but the {config.benchmark} "
                f"adapter ({type(self.adapter).__name__}) does not implement {', '.join(missing)}; without them it "
                f"trains with curriculum={' or curriculum='.join(CURRICULA_WITHOUT_GENERATION)} (its base split)"
            )
        self.rng = np.random.default_rng(config.seed)
        torch.manual_seed(config.seed)
        self.stats = FamilyStats(window=config.curriculum.stats_window)
        self.band = DifficultyFilter(alpha=config.curriculum.alpha, k=config.curriculum.band_k)

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
            if config.simulator.engine != "openai" and not without_simulator:  # an endpoint has no local weights
                self.simulator_policy = load_policy(config.simulator_model, device=device, seed=config.seed + 1)
            if config.curriculum.name == "genenv" and self.simulator_policy is None:
                server = config.simulator.openai
                warn_rwr_off(f"the endpoint {server.base_url} (model {server.model})")
            elif config.curriculum.name == "genenv":
                self.simulator_trainer = RWRTrainer(self.simulator_policy, config.rwr)
            self.simulator = (
                None if without_simulator else config.simulator.build(self.simulator_policy, config.curriculum.alpha)
            )
            self.traces = TracePool(self.run_dir / POOLS)
            self.tasks = TaskPool(self.run_dir / POOLS)
            self.validation_tasks = self._validation_tasks()
            self.task_source = self._task_source()
            self.reporter = MetricsReporter(config.report_to, self.run_dir, config.to_dict())
        self.checkpoints = Checkpoints(self.run_dir, self.processes)
        self.start_epoch = 0
        self.resumed_from: Path | None = None  # the checkpoint a resumed run continues from
        self._warm_started: tuple[dict[str, Any], float] | None = None
        epochs_saved, warm_started = self.checkpoints.has_epochs(), self.checkpoints.has_warm_start()
        if (epochs_saved or warm_started) and not resume:
            raise FileExistsError(f"{self.run_dir} already holds a run; pass resume=true or choose another run_dir")
        if epochs_saved:
            self.start_epoch = self._restore()
            return
        if warm_started:  # before the pools are touched: a damaged checkpoint stops the run with nothing moved
            state = self.checkpoints.load_warm_start(self.agent_trainer)
            self.rng.bit_generator.state = state["rng"]
            self._warm_started = state["metrics"], float(state["seconds"])
        if self.is_main:
            self._start_over(resume)

    def _task_source(self) -> TaskSource:
        """Where this curriculum's fresh tasks come from (:mod:`genenv.curriculum.sources`)."""
        config = self.config
        if config.curriculum.name == "learnability":  # the base split's tasks (never the held-out ones), no simulator
            split = pool_split(self.adapter, config.base_split)
            tasks = base_tasks(self.adapter, split, None, self.validation_tasks, config.validation.split)
            return LearnabilitySource(tasks, config.curriculum.learnability)
        if config.curriculum.name in ("static", "offline"):  # one pool written before training; same budget per epoch
            return WrittenOnce(
                self.adapter,
                self.tasks,
                self.run_dir / POOLS,
                size=self.pool_size(),
                seed=config.seed,
                generation_rounds=config.curriculum.generation_rounds,
            )
        return WrittenEachEpoch(
            self.adapter,
            self.tasks,
            generation_rounds=config.curriculum.generation_rounds,
            conditioned=config.curriculum.name == "genenv",
            examples=config.simulator.examples,
            aim=config.curriculum.aim,
        )

    def pool_size(self) -> int:
        """The tasks a ``static`` or ``offline`` curriculum generates before training."""
        if self.config.curriculum.static_pool_size is not None:
            return self.config.curriculum.static_pool_size
        trained_on = self.config.tasks_per_epoch * self.config.epochs
        multiplier = self.config.curriculum.offline_multiplier if self.config.curriculum.name == "offline" else 1.0
        return math.ceil(multiplier * trained_on)

    # -- the loop ---------------------------------------------------------------------------
    def train(self) -> list[dict[str, Any]]:
        """Run the remaining epochs; returns their metrics (also appended to ``metrics.jsonl``)."""
        history = []
        try:
            for epoch in range(self.start_epoch, self.config.epochs):
                metrics = self.run_epoch(epoch)
                history.append(metrics)
                if self.is_main:
                    EPOCHS.info(epoch_line(metrics))
            if self.is_main:
                self.reporter.close()
        finally:
            self.lock.release()
        return history

    def run_epoch(self, epoch: int) -> dict[str, Any]:
        """One co-evolution epoch, the five steps of this module's docstring, checkpointed; returns its metrics (epoch
        0's also hold the held-out score before training and after the warm start, and the warm start's steps and
        loss)."""
        start = time.perf_counter()
        stages: dict[str, float] = {}
        before = self._warm_start_once(stages) if epoch == 0 else {}
        family_success = self.stats.rates()  # what a conditioned simulator is shown when it writes this epoch's tasks

        # 1. the simulator writes the epoch's tasks (the adapter validates them); D_train gives the replayed ones
        written, replay = EpochTasks([], []), []
        if self.is_main:
            with _timed(stages, "tasks"):
                written, replay = self._epoch_tasks(epoch, family_success)
        fresh, replay = self._from_main((written.fresh, replay))

        # 2. the agent plays G episodes of each task and is updated with GRPO
        agent_metrics: dict[str, float] = {}
        episodes: list[Episode] = []
        if fresh or replay:
            refill = self._refill(epoch, family_success, written)
            with _timed(stages, "agent"):
                agent_metrics = self.agent_trainer.train(fresh + replay, refill=refill)
            episodes = list(self.agent_trainer.episodes)
            if refill is not None:
                fresh = list(written.fresh)  # with dynamic sampling's refills
        with _timed(stages, "expert_mix"):
            expert_mix = self._mix_expert_traces(epoch)

        # 3. each fresh task's p_hat, the agent's success over its attempts, rewards the output that wrote it
        fresh_ids = {task.task_id for task in fresh}
        attempts = ((e.task, e.reward) for e in episodes if e.task.task_id in fresh_ids)
        success = BatchSuccess.of(attempts, self.adapter.family)
        for family, rewards in success.per_family.items():
            self.stats.update(family, rewards)
        task_r_env = success.r_env(self.config.curriculum.alpha, self.config.curriculum.beta)
        if not self.is_main:
            self._checkpoint(epoch, {})  # the agent's weights are saved by every process
            return self._from_main(None)
        filtered = self._add_proposals(written.proposals, epoch, success)
        learnt = self.task_source.report([e.task.task_id for e in episodes], [e.reward for e in episodes])

        # 4. the simulator is updated by reward-weighted regression on its outputs inside the band
        with _timed(stages, "simulator"):
            simulator_metrics = self._update_simulator(epoch) if self.simulator_trainer is not None else {}
        with _timed(stages, "validation"):
            last = epoch == self.config.epochs - 1
            validation = self._validate() if last or (epoch + 1) % self.config.validation.every == 0 else {}

        # 5. the traces join D_train and the outputs D_env: a checkpoint, the metrics line, then both pools commit
        if episodes:
            self.traces.add_episodes(episodes, epoch, "on_policy")
        metrics = {
            **before,
            "epoch": epoch,
            "curriculum": self.config.curriculum.name,
            "seed": self.config.seed,
            "p_hat": success.p_hat,
            "p_hat_per_family": {family: float(np.mean(r)) for family, r in sorted(success.per_family.items())},
            "p_hat_per_task": sorted(success.per_task.values()),
            "family_success": family_success,
            "r_env": float(np.mean(list(task_r_env.values()))) if task_r_env else 0.0,
            "in_band": sum(self.band(p) for p in success.per_task.values()),
            "fresh_tasks": len(fresh),
            "fresh_per_family": _counts(self.adapter.family(task) for task in fresh),
            "replay_tasks": len(replay),
            "proposals": len(written.proposals),
            "rejects": sum(p.task is None for p in written.proposals),
            "filtered": filtered,
            "reject_reasons": _reason_counts(written.proposals),
            "task_length_tokens": _mean_tokens(self.agent_policy.tokenizer, [t.prompt for t in fresh]),
            "agent": agent_metrics,
            "expert_mix": expert_mix,
            "simulator": simulator_metrics,
            "task_source": learnt,
            "validation": validation,
            "pool_traces": len(self.traces) + len(self.traces.uncommitted()),
            "pool_tasks": len(self.tasks) + len(self.tasks.uncommitted()),
            "generated_tasks": self._generated_tasks(),
            "seconds": time.perf_counter() - start,
            "stage_seconds": stages,
            **({"pool_writing": written.pool_writing} if written.pool_writing is not None else {}),
            "peak_rss_mb": peak_rss_mb(),
            "load_average": load_average(),  # 1, 5, 15 min at the epoch's end: the load beside its times
        }
        metrics = json.loads(json.dumps(metrics, default=float))
        self._checkpoint(epoch, metrics)
        self._log_metrics(metrics)
        self.traces.commit(epoch)
        self.tasks.commit(epoch)
        return self._from_main(metrics)

    # -- the steps ----------------------------------------------------------------------------
    def _epoch_tasks(self, epoch: int, family_success: dict[str, float]) -> tuple[EpochTasks, list[Task]]:
        """The epoch's fresh tasks as the curriculum sources them (the expert traces of generated ones join D_train)
        and the tasks replayed from D_train."""
        wanted = self.config.tasks_per_epoch
        written = self.task_source.epoch_tasks(self.simulator, epoch, wanted, self.rng, family_success)
        replay = self._replay(epoch)
        self._add_expert_traces([task for task in written.fresh if task.task_id not in written.again], epoch)
        return written, replay

    def _refill(self, epoch: int, family_success: dict[str, float], written: EpochTasks) -> Refill | None:
        """With the agent's dynamic sampling: ``n`` -> further tasks from the curriculum's own source (the simulator,
        conditioned as for the epoch's first tasks, or the static pool), each added to ``written`` (its proposals to
        D_env, its expert trace to D_train) as the epoch's first tasks are, so the run's task budget counts them."""
        if not self.config.agent.dynamic_sampling or not self.is_main:
            return None

        def refill(n: int) -> list[Task]:
            more = self.task_source.more_tasks(self.simulator, epoch, n, self.rng, family_success)
            have = {task.task_id for task in written.fresh}
            fresh = [task for task in more.fresh if task.task_id not in have]
            written.fresh.extend(fresh)
            written.proposals.extend(more.proposals)
            written.again |= more.again
            self._add_expert_traces([task for task in fresh if task.task_id not in more.again], epoch)
            return fresh

        return refill

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

    def _add_proposals(self, proposals: list[Proposal], epoch: int, success: BatchSuccess) -> int:
        """Store the epoch's simulator outputs in D_env, each rewarded by the success of the agent's G attempts
        on its task (:func:`~genenv.curriculum.success.output_rewards`); returns how many valid ones were filtered out
        of the simulator update. A valid proposal whose task was not played (beyond the epoch's quota) has no p_hat: it
        is stored as filtered with R_env 0, like one outside the band."""
        if not proposals:
            return 0
        task_ids = [p.task.task_id if p.task is not None else None for p in proposals]
        config = self.config
        rewards = output_rewards(
            task_ids,
            success,
            alpha=config.curriculum.alpha,
            beta=config.curriculum.beta,
            band=self.band,
            lam=config.curriculum.lam,
        )
        records = self.tasks.add_proposals(
            proposals,
            epoch,
            [r.r_env for r in rewards],
            [r.weight for r in rewards],
            [r.kept for r in rewards],
            [r.p_hat for r in rewards],
        )
        return sum(record["status"] == "filtered" for record in records)

    def _update_simulator(self, epoch: int) -> dict[str, Any]:
        examples = self.tasks.rwr_examples(epoch)
        if not examples:
            return {"steps": 0, "examples": 0}
        stats = self.simulator_trainer.train(examples)
        return stats.to_dict()

    def _generated_tasks(self) -> int:
        """Distinct valid tasks the simulator has written so far in this run (what data efficiency counts)."""
        records = self.tasks.records(include_uncommitted=True)
        return len({record["task"]["task_id"] for record in records if record["task"] is not None})

    def _log_metrics(self, metrics: dict[str, Any]) -> None:
        with (self.run_dir / METRICS_FILE).open("a", encoding="utf-8") as out:
            out.write(json.dumps(metrics) + "\n")
        self.reporter.log(metrics, metrics["epoch"])

    def _from_main(self, value: Shared) -> Shared:
        """``value`` as the main process holds it, on every process (tasks, expert traces, an epoch's metrics)."""
        if self.processes.num_processes == 1:
            return value
        payload = [value]
        broadcast_object_list(payload, from_process=0)
        return payload[0]

    # -- the warm start and its data ----------------------------------------------------------
    def _warm_start_once(self, stages: dict[str, float]) -> dict[str, Any]:
        """Epoch 0's warm start, checkpointed, or what a killed epoch 0 recorded of it; returns its metrics."""
        if self._warm_started is not None:  # resumed after the warm start of a killed epoch 0
            before, stages["warm_start"] = self._warm_started
            return before
        with _timed(stages, "warm_start"):
            before = self._warm_start()
        state = {"metrics": before, "seconds": stages["warm_start"], "rng": self.rng.bit_generator.state}
        self.checkpoints.save(WARM_START, state, self.agent_trainer)
        return before

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
        self.agent_trainer.anchor_reference()  # a KL term (agent.kl_coef > 0) keeps GRPO near the warm-started agent
        if self.is_main:
            out["validation_warm_start"] = self._validate()
            logger.info("warm start: %s", json.dumps(out["warm_start"]))
        return out

    def _mix_expert_traces(self, epoch: int) -> dict[str, float]:
        """``warm_start.mix_per_epoch`` expert traces of D_train as supervised steps after the GRPO update."""
        k = self.config.warm_start.mix_per_epoch
        conversations = self._expert_conversations(epoch, k, draw=1) if k > 0 else []
        return self.expert_trainer.train(conversations, epochs=1.0) if conversations else {}

    def _expert_conversations(self, epoch: int, k: int | None, draw: int) -> list[dict[str, Any]]:
        """``k`` expert traces of D_train at ``epoch`` (all with ``None``), a sample seeded by the epoch and ``draw``
        (0: the warm start, 1: the epoch's mixing), shared with every process."""
        conversations: list[dict[str, Any]] = []
        if self.is_main:
            rng = np.random.default_rng([self.config.warm_start.seed, epoch, draw])
            conversations = draw_conversations(self.traces.training_set(epoch), k, rng)
        return self._from_main(conversations)

    def _add_expert_traces(self, tasks: list[Task], epoch: int) -> None:
        """The expert trace of every validated generated task, as it is generated (source ``expert``)."""
        records = [expert_record(self.adapter, t, "expert") for t in tasks if t.source == "generated"]
        records = [r for r in records if r["messages"]]
        if records:
            self.traces.append(records, epoch)

    def _start_over(self, resume: bool) -> None:
        """Epoch 0 from scratch; the records of an earlier run killed before its first checkpoint are set aside, and
        D_train gets its base data: the training split's tasks, each with its expert trace where it has one."""
        if committed := [pool.path for pool in (self.traces, self.tasks) if pool.committed_epoch is not None]:
            raise FileExistsError(
                f"{committed[0]} holds committed epochs but {self.checkpoints.root} has no checkpoint: the "
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
        if split := self.config.base_split:
            held_out = (self.validation_tasks, self.config.validation.split)
            tasks = base_tasks(self.adapter, split, self.config.base_limit, *held_out)
            self.traces.append([expert_record(self.adapter, t, "base") for t in tasks], 0)

    # -- evaluation ---------------------------------------------------------------------------
    def _validation_tasks(self) -> list[Task]:
        if not self.config.validation.split or self.config.validation.limit == 0:
            return []
        return held_out_tasks(self.adapter, self.config.validation.split, self.config.validation.limit)

    def _validate(self) -> dict[str, Any]:
        """The agent's score on the fixed held-out tasks (greedy, or the mean of ``validation_samples`` episodes at
        ``validation_temperature``), scored by the adapter's ``reporting_adapter`` (API-Bank: official scoring even
        where training reads text leniently): its metrics, the engine that played them and every task's score (in
        task order, so stages of a run can be compared task by task)."""
        if not self.validation_tasks:
            return {}
        k = self.config.validation.samples
        release_freed_memory()  # what training freed, before a converting engine needs room
        engine = self._validation_engine_for_agent()
        agent = Agent(
            self.agent_policy,
            SamplingConfig(self.config.agent.max_new_tokens, self.config.validation.temperature),
            few_shot=self.config.agent.few_shot,
            engine=engine,
        )
        summary, episodes = evaluate(
            self.adapter.reporting_adapter(),
            agent,
            [task for task in self.validation_tasks for _ in range(k)],
            batch_size=VALIDATION_BATCH[engine.name],
            max_turns=self.config.agent.max_turns,
            seed=self.config.seed,
        )
        if engine is not self.agent_trainer.engine and hasattr(engine, "unload"):
            engine.unload()  # a converted copy would stay resident beside training until the next stage
            release_freed_memory()
        scores = [float(e.info.get("score", e.reward)) for e in episodes]
        task_scores = [sum(scores[i : i + k]) / k for i in range(0, len(scores), k)]
        return {**summary["metrics"], "samples": k, "engine": engine_label(engine), "task_scores": task_scores}

    def _validation_engine_for_agent(self) -> Engine:
        """The engine of ``validation_engine``, built once: CTranslate2 always in float32, whose greedy text equals
        HF's (and ``genenv.evaluate``'s) whatever precision the rollouts use; the rollouts' own engine where it is
        that one already."""
        if self._validation_engine is None:
            trainer = self.agent_trainer
            name, _ = resolve_engine(self.config.validation.engine, device=trainer.model.device, purpose="generate")
            if name == trainer.engine.name and engine_label(trainer.engine) in ("hf", "ctranslate2 float32"):
                self._validation_engine = trainer.engine
            else:
                policy = replace(self.agent_policy, model=trainer.model)
                self._validation_engine = build_engine(name, policy, compute_type="float32")
        return self._validation_engine

    # -- checkpoints --------------------------------------------------------------------------
    def _checkpoint(self, epoch: int, metrics: dict[str, Any]) -> None:
        """Checkpoint ``epoch``: both policies and the trainer's state (family stats, RNG, config, metrics)."""
        state = {
            "epoch": epoch,
            "stats": self.stats.to_dict(),
            "rng": self.rng.bit_generator.state,
            "config": self.config.to_dict(),
            "metrics": metrics,
            "task_source": self.task_source.state_dict() if self.is_main else {},
        }
        self.checkpoints.save_epoch(epoch, state, self.agent_trainer, self.simulator_trainer)

    def _restore(self) -> int:
        """Load the newest loadable checkpoint (not older than what the pools committed) and reconcile the pools with
        it; returns the next epoch."""
        committed = -1
        if self.is_main:
            committed = max(
                (p.committed_epoch for p in (self.traces, self.tasks) if p.committed_epoch is not None), default=-1
            )
        chosen, state = self.checkpoints.load_latest(self.agent_trainer, self.simulator_trainer, committed)
        epoch = int(state["epoch"])
        if not self.is_main:
            return epoch + 1
        self.stats = FamilyStats.from_dict(state["stats"])
        self.rng.bit_generator.state = state["rng"]
        self.task_source.load_state_dict(state.get("task_source", {}))  # checkpoints before sources had state: {}
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
        self.resumed_from = chosen
        logger.info("resumed from %s; continuing at epoch %d", chosen, epoch + 1)
        return epoch + 1


def engine_label(engine: Engine) -> str:
    """The engine's name, with its precision where it has one (``"ctranslate2 float32"``)."""
    return f"{engine.name} {getattr(engine, 'compute_type', '')}".strip()


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
