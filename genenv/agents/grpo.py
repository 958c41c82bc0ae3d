"""GRPO update of the agent policy with TRL's :class:`~trl.GRPOTrainer`, rollouts played in :class:`ToolEnv`.

Each GenEnv epoch the agent plays ``num_generations`` (G) episodes per task and is updated with GRPO; the
reward of an episode is the benchmark adapter's score of it (``R_agent``), exactly what
:class:`~genenv.envs.tool_env.ToolEnv` returns when the episode ends.

Which TRL mechanism, and why
----------------------------
TRL 1.16 offers three multi-turn paths: ``tools=``, ``environment_factory`` and ``rollout_func``. This module
uses **``rollout_func``**: TRL calls our function with the prompts of a generation batch and we play every
episode through genenv's own ``ToolEnv`` (its parser, its adapter execution, its error refusals, its
``max_turns`` and its scoring), batched one ``generate`` call per turn over the episodes still running. The two
other paths do not fit:

* ``tools=`` / ``environment_factory`` expose a *fixed* set of Python methods as tools and detect tool calls
  with the tokenizer's response parser. genenv's tools are per task (an API-Bank task offers its own APIs),
  calls are parsed by :func:`genenv.toolcalls.parse_tool_calls` (tagged JSON, bare JSON, Python-call
  lists), bad calls cost a turn with an error observation, and an episode ends on a plain answer or the
  benchmark's terminal action; re-implementing all of that as environment methods would fork ``ToolEnv``.
* With ``rollout_func`` the token sequence TRL trains on is exactly the one the model generated from, and the
  loss mask is ours to give (below).

The trainer itself (advantages, clipping, KL, optimizer, accelerate, PEFT, vLLM weight sync) is TRL's
``GRPOTrainer``, unmodified except for three hooks (:class:`_GenEnvGRPOTrainer`): the rollout function sees the
dataset rows (the ``task`` column) of the prompts it is asked to play, CTranslate2 rollouts get TRL's
importance-sampling correction, and a micro-batch whose advantages are all zero skips its forward and backward pass
(its gradient is zero; ``GRPOAgentConfig.skip_zero_advantage``) and, optionally, leaves the weights and the
optimizer's moments untouched (``GRPOAgentConfig.skip_zero_advantage_steps``).

Token layout and masking
------------------------
Episodes are played by :func:`genenv.agents.rollout.play_episodes` (the same loop evaluation plays), at the
token level: TRL gets each episode's ``prompt_ids`` and ``completion_ids`` exactly as generated, and the
rollout's ``env_mask`` (TRL's ``tool_mask``) is 0 on tool-response blocks, so ``loss_mask = completion_mask *
tool_mask`` trains only on the agent's own tokens. With vLLM the sampling log-probabilities are returned too
(0.0 on masked positions, as TRL does).

Rollouts are not generated twice: the episodes TRL trained on are kept in :attr:`GRPOAgentTrainer.episodes`
(as :class:`~genenv.agents.rollout.Episode` objects, the type ``Agent.rollout`` returns), so the caller can put
their traces into its training pool.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import random
import time
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from genenv.agents.dynamic_sampling import GroupFilterStats, Refill, TaskQueue, fill_informative
from genenv.agents.rollout import Episode, RolloutBatch, play_episodes
from genenv.benchmarks.base import BenchmarkAdapter, Task
from genenv.config import check_types
from genenv.console import step_log_callback
from genenv.envs.tool_env import render_prompt
from genenv.llm.engines import Engine, build_engine, resolve_engine
from genenv.llm.engines import hf as hf_engine
from genenv.llm.engines import vllm as vllm_engine
from genenv.llm.generation import GenerateFn, SamplingConfig

if TYPE_CHECKING:
    from genenv.llm.models import Policy

__all__ = ["GRPOAgentConfig", "GRPOAgentTrainer", "rollout_to_trl"]

logger = logging.getLogger(__name__)

STATE_FILE = "genenv_grpo.json"
OPTIMIZER_FILE = "optimizer.pt"  # transformers.Trainer's own name for the optimizer state
#: the KL reference of ``beta > 0`` once :meth:`GRPOAgentTrainer.anchor_reference` fixed it: a LoRA adapter of this
#: name (TRL computes the reference with it when the model has one), or a full fine-tune's weights in this file
REFERENCE_ADAPTER, REFERENCE_FILE = "ref", "reference.safetensors"
REWARD_NAME = "agent_reward"

# --------------------------------------------------------------------------------------------
# configuration


@dataclass
class GRPOAgentConfig:
    """Settings of the agent's GRPO update (TRL style; every field maps to TRL or to the rollout loop).

    Args:
        num_generations: G, episodes played per task per step; GRPO's advantage is the reward minus the
            mean of the task's G rewards (divided by their std, TRL's ``scale_rewards="group"``). At least 2.
        learning_rate: AdamW learning rate (the default suits LoRA; full fine-tunes want about 20x less). The
            schedule is constant because :meth:`GRPOAgentTrainer.train` is called once per GenEnv epoch with the
            same optimizer. Measured learning rates: the results index (``results/README.md``).
        kl_coef: KL coefficient against the reference policy (TRL's ``beta``): the model the trainer was built from
            (with LoRA, the model with adapters disabled) until :meth:`GRPOAgentTrainer.anchor_reference` makes it the
            policy as
            it is then (e.g. after a warm start). TRL's default 0.0 builds no reference model and logs no ``kl``.
        max_new_tokens: tokens the agent may generate in one turn (one ``generate`` call per turn).
        max_completion_length: token budget of a whole episode's completion: every turn *and* every tool
            response block. An episode whose next tool response would not fit (with room for one more
            token) ends there and is scored as a truncated episode. Also TRL's ``max_completion_length``.
        max_turns: agent turns per episode (``None``: the benchmark's); reaching it truncates and scores.
        per_device_train_batch_size: episodes per forward/backward micro-batch (TRL semantics: completions,
            not tasks). The update does not depend on it (TRL normalises the loss over the whole step); on a CPU 1 is
            fastest and smallest, as no padding is computed or stored (GPUs want larger micro-batches).
        gradient_accumulation_steps: micro-batches per optimizer step. One optimizer step uses
            ``per_device_train_batch_size * gradient_accumulation_steps * num_processes`` episodes, i.e.
            that many divided by G tasks (:attr:`GRPOAgentTrainer.tasks_per_step`); it must divide by G. All
            episodes of a step are generated in one batched rollout.
        temperature: sampling temperature of the rollouts (GRPO needs diverse samples; TRL's default is 1.0).
        top_p: nucleus sampling mass of the rollouts.
        few_shot: which worked exchanges precede the request (``"generic"``/``True``: the benchmark's own, else
            :data:`~genenv.agents.agent.FEW_SHOT_EXCHANGES`; ``"own"``; ``"none"``/``False``:
            :func:`~genenv.agents.rollout.shown_exchanges`), exactly as :class:`~genenv.agents.agent.Agent` does at
            evaluation, so training and evaluation prompts agree. The model config sets it.
        use_lora: train a LoRA adapter (TRL's ``peft_config``) instead of every weight.
        lora_r: LoRA rank.
        lora_alpha: LoRA scaling numerator.
        lora_dropout: dropout on the LoRA branch (0: the policy trained is the policy that played the rollouts; a
            dropout stores a masked copy of every adapted layer's input for the backward pass).
        lora_target_modules: module names that get adapters (attention projections by default; never
            ``lm_head``, which TRL refuses).
        gradient_checkpointing: recompute activations in the backward pass (TRL defaults to True; off here
            because it slows CPU training and the models used fit without it).
        output_dir: TRL/transformers output folder (nothing is written there unless ``grpo_kwargs`` asks for
            checkpoints; :meth:`GRPOAgentTrainer.save` writes where it is told).
        seed: seed of TRL (model init of adapters, sampling RNG) and of the task order.
        shuffle_tasks: shuffle the task list before each :meth:`GRPOAgentTrainer.train` call.
        engine: who generates the rollouts (:mod:`genenv.llm.engines`): ``"hf"`` (the trained model's own
            ``generate``), ``"ctranslate2"`` (CPU; a converted copy synced every ``engine_sync_every`` steps),
            ``"vllm"`` (TRL's vLLM integration, ``vllm_mode``), or ``"auto"``: the fastest available here
            (:func:`~genenv.llm.engines.resolve_engine` logs its reason). With ``ctranslate2`` and ``vllm`` the
            engine's numerics differ from the trained model's: TRL's importance-sampling correction applies (the
            old log-probabilities recomputed with the trained model, ``vllm_importance_sampling_*`` in
            ``grpo_kwargs``). The same engine plays validation episodes.
        engine_compute_type: ``"int8"`` or ``"float32"`` (CTranslate2 only).
        engine_sync_every: optimizer steps between weight syncs into a CTranslate2 engine (1: every step, the
            engine always samples from the current policy); the first rollout of each :meth:`GRPOAgentTrainer.train`
            call always checks. A sync converts the whole model, so syncing every few steps trades a little
            staleness for much less conversion time (measured: results/README.md, docs/engines.md).
        vllm_mode: ``"colocate"`` or ``"server"`` (TRL's ``vllm_mode``).
        bf16: mixed precision; ``None`` means bfloat16 on a CUDA device that supports it, off on CPU (TRL
            defaults to True, which fails on CPU).
        report_to: transformers reporting integrations (``[]``: none).
        logging_steps: TRL logging interval in optimizer steps; 1 so every step's metrics are collected.
        disable_tqdm: hide the transformers progress bar and its printed logs (:meth:`GRPOAgentTrainer.train`
            returns the metrics; each step's log dict is logged to ``genenv.steps``).
        env_kwargs: extra ``ToolEnv`` keyword arguments (e.g. ``max_observation_chars``).
        grpo_kwargs: any other :class:`trl.GRPOConfig` field (e.g. ``loss_type``, ``epsilon``,
            ``num_iterations``, ``scale_rewards``, ``max_grad_norm``); they override the values set here.
        skip_zero_advantage: skip the forward and backward pass of a micro-batch whose advantages are all exactly
            0 (every group in it had equal rewards, as most groups do on tasks far from the agent's level), when
            nothing else in TRL's loss has a gradient (``beta == 0``, no entropy bonus, no router loss). Its
            gradient is zero either way, so the update is TRL's to the last bit (the optimizer still takes its
            step with zero gradients, Adam momentum included); only TRL's per-batch ``entropy``/``clip_ratio``
            logs lose that micro-batch. With LoRA dropout the random stream shifts, so runs differ by sampling
            noise. Off: TRL computes every micro-batch.
        skip_zero_advantage_steps: also leave the weights alone where such micro-batches make up a whole
            optimizer step. In TRL, AdamW steps on the zero gradient and its momentum keeps moving the weights in
            the direction of the last informative step (about ten steps more of it, with ``beta1 = 0.9``); with
            one task per step and most tasks solved by all or none of their G episodes, most steps are such
            steps. On: those micro-batches leave no gradient, so AdamW skips every weight and its moments, as if
            the group had been filtered out before the step (the filter of DAPO's dynamic sampling, without
            refilling the batch). Off: TRL's update.
        dynamic_sampling: DAPO's dynamic sampling (:mod:`genenv.agents.dynamic_sampling`): groups whose G rewards
            are all equal are dropped and the step's batch is refilled with further tasks until all its
            ``tasks_per_step`` places hold informative groups. One process only.
        dynamic_sampling_max_rounds: generation rounds a step may play, its first included (DAPO's
            ``max_num_gen_batches``); when they run out the batch keeps uninformative groups (zero advantage) and
            the metrics count it under ``groups/exhausted``.
    """

    num_generations: int = 8
    learning_rate: float = 1e-4
    kl_coef: float = 0.0
    max_new_tokens: int = 96
    max_completion_length: int = 512
    max_turns: int | None = None
    per_device_train_batch_size: int = 1
    gradient_accumulation_steps: int = 16
    temperature: float = 0.7
    top_p: float = 1.0
    few_shot: bool | str = "generic"
    use_lora: bool = True
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    lora_target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    gradient_checkpointing: bool = False
    output_dir: str = "outputs/grpo_agent"
    seed: int = 0
    shuffle_tasks: bool = True
    engine: str = "hf"
    engine_compute_type: str = "int8"
    engine_sync_every: int = 4
    vllm_mode: str = "colocate"
    bf16: bool | None = None
    report_to: list[str] = field(default_factory=list)
    logging_steps: int = 1
    disable_tqdm: bool = True
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    grpo_kwargs: dict[str, Any] = field(default_factory=dict)
    skip_zero_advantage: bool = True
    skip_zero_advantage_steps: bool = False
    dynamic_sampling: bool = False
    dynamic_sampling_max_rounds: int = 4

    def __post_init__(self) -> None:
        check_types(self, "agent")
        if self.learning_rate <= 0:
            raise ValueError(f"agent.learning_rate must be positive, got {self.learning_rate}")
        if self.num_generations < 2:
            raise ValueError(f"GRPO needs num_generations >= 2, got {self.num_generations}")
        if self.max_new_tokens < 1 or self.max_completion_length < self.max_new_tokens:
            raise ValueError("need 1 <= max_new_tokens <= max_completion_length")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {self.max_turns}")
        from genenv.llm.engines import COMPUTE_TYPES, ENGINES

        if self.engine not in ENGINES:
            raise ValueError(f"agent.engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.engine_compute_type not in COMPUTE_TYPES:
            raise ValueError(f"agent.engine_compute_type must be one of {', '.join(COMPUTE_TYPES)}")
        if self.dynamic_sampling_max_rounds < 1:
            raise ValueError(f"agent.dynamic_sampling_max_rounds must be >= 1, got {self.dynamic_sampling_max_rounds}")
        if self.engine_sync_every < 1:
            raise ValueError(f"agent.engine_sync_every must be >= 1, got {self.engine_sync_every}")
        if (self.per_device_train_batch_size * self.gradient_accumulation_steps) % self.num_generations:
            raise ValueError(
                "per_device_train_batch_size * gradient_accumulation_steps "
                f"({self.per_device_train_batch_size} * {self.gradient_accumulation_steps}) must be a multiple of "
                f"num_generations ({self.num_generations}): each optimizer step plays whole groups of G episodes"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------------------------
# TRL glue


def rollout_to_trl(batch: RolloutBatch) -> dict[str, Any]:
    """The dict a TRL ``rollout_func`` returns: ids, logprobs, ``env_mask`` and the reward field."""
    return {
        "prompt_ids": batch.prompt_ids,
        "completion_ids": batch.completion_ids,
        "logprobs": batch.logprobs,
        "env_mask": batch.env_mask,
        REWARD_NAME: list(batch.rewards),
        "num_turns": [len(e.trajectory.turns) for e in batch.episodes],
    }


def _agent_reward(completions: list[Any], **kwargs: Any) -> list[float]:
    """TRL reward function: the adapter scores computed during the rollout (the ``agent_reward`` field)."""
    return [float(r) for r in kwargs[REWARD_NAME]]


_agent_reward.__name__ = REWARD_NAME


def _make_trainer_class():
    from trl import GRPOTrainer

    class _GenEnvGRPOTrainer(GRPOTrainer):
        """TRL's GRPOTrainer plus three hooks: the rollout function can read the dataset rows it plays, rollouts
        of an engine other than TRL's (CTranslate2, whose log-probabilities come back with the episodes) get TRL's
        own vLLM importance-sampling correction, and a micro-batch with all advantages 0 is not computed.

        For the latter, ``use_vllm`` reads True from the moment the rollout function hands back such log-probabilities
        until the batch is scored, and while the loss of a batch carrying an importance-sampling ratio is computed:
        the only places that test it on the ``rollout_func`` path besides TRL's vLLM weight sync, which has already
        run (genenv syncs its engine itself). TRL then recomputes the old log-probabilities with the trained model
        and weights each token's loss by ``exp(old - engine)`` (``vllm_importance_sampling_mode``,
        ``_clip_min``/``_clip_max``), exactly as for vLLM.
        """

        _genenv_rows: list[dict[str, Any]] | None = None
        skip_zero_advantage = False
        skip_zero_advantage_steps = False
        skipped_batches = 0  # micro-batches whose forward and backward pass were skipped (zero advantages)

        def correct_engine_logprobs(self) -> None:
            """Called by the rollout function: this batch's log-probabilities come from a genenv engine."""
            self.use_vllm = True

        def _generate_and_score_completions(self, inputs):
            self._genenv_rows, use_vllm = inputs, self.use_vllm
            try:
                return super()._generate_and_score_completions(inputs)
            finally:
                self._genenv_rows, self.use_vllm = None, use_vllm

        def _zero_advantage(self, inputs) -> bool:
            """True when the loss of this micro-batch has a zero gradient on every process: all advantages are 0
            and no term of TRL's loss (KL, entropy bonus, router loss) works without them."""
            if self.beta != 0.0 or self.aux_loss_enabled or getattr(self, "_entropy_bonus_enabled", True):
                return False
            zero = inputs["advantages"].eq(0).all().to(self.accelerator.device, torch.float32)
            return bool(self.accelerator.gather(zero.reshape(1)).min() > 0)  # every process skips, or none

        def _compute_loss(self, model, inputs):
            skip = self.skip_zero_advantage or self.skip_zero_advantage_steps
            if skip and self._zero_advantage(inputs):
                self.skipped_batches += 1
                if self.skip_zero_advantage_steps:  # no gradient at all: AdamW passes over weights without one
                    return torch.zeros((), device=self.accelerator.device, requires_grad=True)
                # The zero gradient TRL's loss would give, without the forward pass: the optimizer steps as in TRL.
                return sum((p.sum() * 0.0 for p in model.parameters() if p.requires_grad), torch.zeros(()))
            if self.use_vllm or "importance_sampling_ratio" not in inputs:
                return super()._compute_loss(model, inputs)
            self.use_vllm = True
            try:
                return super()._compute_loss(model, inputs)
            finally:
                self.use_vllm = False

    return _GenEnvGRPOTrainer


class _MetricsCallback:
    """Collects TRL's per-step logs and the wall time of every optimizer step."""

    def __init__(self) -> None:
        from transformers import TrainerCallback

        outer = self

        class _Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                outer._start = time.perf_counter()

            def on_step_end(self, args, state, control, **kwargs):
                outer.step_times.append(time.perf_counter() - outer._start)

            def on_log(self, args, state, control, logs=None, **kwargs):
                if logs:
                    outer.logs.append(dict(logs))

        self.callback = _Callback()
        self.logs: list[dict[str, Any]] = []
        self.step_times: list[float] = []
        self._start = time.perf_counter()

    def reset(self) -> None:
        self.logs.clear()
        self.step_times.clear()


def _mean(values: Sequence[float]) -> float:
    values = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(values) / len(values) if values else float("nan")


class GRPOAgentTrainer:
    """GRPO on the agent policy with TRL's ``GRPOTrainer``; episodes are played in genenv's ``ToolEnv``.

    Args:
        policy: the agent's :class:`~genenv.llm.models.Policy`. Its model is trained in place (with
            ``use_lora``, adapters are injected into it), so an :class:`~genenv.agents.agent.Agent` holding the
            same policy acts with the updated weights.
        adapter: the benchmark whose tools execute the calls and whose score is the reward.
        config: :class:`GRPOAgentConfig` (defaults if omitted).

    One TRL trainer is built here and kept: its optimizer state carries over from one :meth:`train` call
    (GenEnv epoch) to the next, and its reference model (``beta > 0``) stays the initial policy or the one
    :meth:`anchor_reference` fixed.
    """

    def __init__(self, policy: Policy, adapter: BenchmarkAdapter, config: GRPOAgentConfig | None = None) -> None:
        from datasets import Dataset
        from trl import GRPOConfig

        self.policy = policy
        self.adapter = adapter
        config = config or GRPOAgentConfig()
        cuda = torch.cuda.is_available()
        self.engine_name, self.engine_reason = resolve_engine(
            config.engine, device=policy.model.device, purpose="rollout"
        )
        use_vllm = self.engine_name == "vllm"
        self.config = config
        self.tokenizer = policy.tokenizer
        if self.tokenizer.pad_token is None or self.tokenizer.padding_side != "left":
            raise ValueError("the policy's tokenizer needs a pad token and left padding (load it with load_policy)")
        bf16 = config.bf16 if config.bf16 is not None else bool(cuda and torch.cuda.is_bf16_supported())
        per_turn = {"max_tokens" if use_vllm else "max_new_tokens": config.max_new_tokens}
        kwargs: dict[str, Any] = dict(
            output_dir=config.output_dir,
            per_device_train_batch_size=config.per_device_train_batch_size,
            gradient_accumulation_steps=config.gradient_accumulation_steps,
            num_generations=config.num_generations,
            learning_rate=config.learning_rate,
            lr_scheduler_type="constant",
            beta=config.kl_coef,
            temperature=config.temperature,
            top_p=config.top_p,
            max_completion_length=config.max_completion_length,
            generation_kwargs=per_turn,
            max_steps=1,  # set per train() call
            logging_steps=config.logging_steps,
            save_strategy="no",
            report_to=list(config.report_to),
            use_cpu=not cuda,
            bf16=bf16,
            # transformers 5 renamed gradient_checkpointing; TRL still sets the old name to True by default.
            activation_checkpointing=config.gradient_checkpointing,
            seed=config.seed,
            shuffle_dataset=False,  # train() orders the tasks itself
            use_vllm=use_vllm,
            vllm_mode=config.vllm_mode,
            disable_tqdm=config.disable_tqdm,
            remove_unused_columns=False,
            dataloader_num_workers=0,
        )
        kwargs.update(config.grpo_kwargs)
        # TRL 1.16 builds the reference model of a full fine-tune by reloading `config._name_or_path` from disk,
        # which fails for an in-memory model (the tiny one) and silently uses stale weights for a policy that was
        # trained before this trainer was built. We build TRL with beta=0 and attach a frozen copy of the policy
        # as it is now (see _attach_reference_model); with LoRA, TRL's own reference (adapters off, or the
        # adapter named REFERENCE_ADAPTER once anchor_reference added it) is right.
        self._own_reference = kwargs["beta"] != 0.0 and not config.use_lora
        beta = self.beta = kwargs["beta"]
        if self._own_reference:
            kwargs["beta"] = 0.0
        self.grpo_config = GRPOConfig(**kwargs)

        peft_config = None
        if config.use_lora:
            from peft import LoraConfig

            peft_config = LoraConfig(
                r=config.lora_r,
                lora_alpha=config.lora_alpha,
                lora_dropout=config.lora_dropout,
                target_modules=list(config.lora_target_modules),
                task_type="CAUSAL_LM",
            )

        self._metrics = _MetricsCallback()
        self.episodes: list[Episode] = []  # every episode trained on in the last train() call
        self.last_rollout: RolloutBatch | None = None  # the last generation batch, token level
        self.optimizer_steps = 0  # over all train() calls (and restored by load())
        self.train_calls = 0
        self._rng = random.Random(config.seed)
        self._call_tokens = {"prompt_tokens": 0, "completion_tokens": 0, "env_tokens": 0}
        self._queue: TaskQueue | None = None  # dynamic sampling's task queue in the current train() call
        self.group_stats = GroupFilterStats()  # dynamic sampling in the last train() call

        placeholder = Dataset.from_dict({"prompt": [""], "task": ["{}"]})
        trainer_cls = _make_trainer_class()
        with warnings.catch_warnings():  # rollout_func is experimental in TRL 1.16 (documented above)
            warnings.filterwarnings("ignore", message="You are using 'rollout_func'")
            self.trainer = trainer_cls(
                model=policy.model,
                reward_funcs=[_agent_reward],
                args=self.grpo_config,
                train_dataset=placeholder,
                processing_class=self.tokenizer,
                peft_config=peft_config,
                rollout_func=self._rollout_func,
                callbacks=[self._metrics.callback, step_log_callback("agent GRPO")],
            )
        self.trainer.skip_zero_advantage = config.skip_zero_advantage
        self.trainer.skip_zero_advantage_steps = config.skip_zero_advantage_steps
        if self._own_reference:
            self._attach_reference_model(beta)
        # The stand-alone engine: rollouts with ctranslate2, and validation episodes (hf unless ctranslate2).
        self.engine: Engine = build_engine(
            "ctranslate2" if self.engine_name == "ctranslate2" else "hf",
            replace(policy, model=self.model),
            compute_type=config.engine_compute_type,
            logprob_temperature=config.temperature,
            seed=config.seed,
        )
        self.sync_seconds: list[float] = []  # weight syncs into the engine in the last train() call (0.0: current)
        self._synced_at: int | None = None  # the optimizer step (over all train() calls) of the last sync
        if config.disable_tqdm:  # without a progress bar transformers prints every log dict; train() returns them
            from transformers import PrinterCallback

            self.trainer.remove_callback(PrinterCallback)
        self.model.eval()

    def _attach_reference_model(self, beta: float) -> None:
        """Give TRL a frozen copy of the current policy as reference model, prepared as TRL prepares its own."""
        from trl.models import prepare_deepspeed, prepare_fsdp

        trainer = self.trainer
        reference = copy.deepcopy(trainer.accelerator.unwrap_model(trainer.model)).eval()
        reference.requires_grad_(False)
        if trainer.args.disable_dropout:
            from trl.trainer.utils import disable_dropout_in_model

            disable_dropout_in_model(reference)
        if trainer.is_deepspeed_enabled:
            reference = prepare_deepspeed(reference, trainer.accelerator)
        elif trainer.is_fsdp_enabled:
            reference = prepare_fsdp(reference, trainer.accelerator)
        else:
            reference = trainer.accelerator.prepare_model(reference, evaluation_mode=True)
        trainer.ref_model = reference
        trainer.beta = beta
        trainer.args.beta = beta
        self.grpo_config = trainer.args

    def anchor_reference(self) -> None:
        """Make the policy as it is now the reference of the KL term (``beta > 0``; without it, a no-op).

        Call it after a warm start trained into this trainer's weights: the reference is otherwise the model the
        trainer was built from, the agent before its warm start. With LoRA the adapter is copied into a frozen
        adapter named ``ref`` (TRL's reference for an adapter trained further); a full fine-tune's reference copy
        takes the current weights. :meth:`save` and :meth:`load` carry the reference.
        """
        if self.beta == 0.0:
            return
        if self.config.use_lora:
            peft_model = self._reference_adapter()
            with torch.no_grad():
                for name, param in peft_model.named_parameters():
                    if ".default." in name:
                        peft_model.get_parameter(name.replace(".default.", f".{REFERENCE_ADAPTER}.")).copy_(param)
        else:
            reference = self.trainer.accelerator.unwrap_model(self.trainer.ref_model)
            reference.load_state_dict(self.trainer.accelerator.unwrap_model(self.trainer.model).state_dict())

    def _reference_adapter(self) -> Any:
        """The PEFT model with a frozen adapter named REFERENCE_ADAPTER beside the trained one (added if absent);
        the trained adapter stays the active one."""
        peft_model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        if REFERENCE_ADAPTER not in peft_model.peft_config:
            peft_model.add_adapter(REFERENCE_ADAPTER, peft_model.peft_config["default"])
            peft_model.set_adapter("default")  # PEFT's set_adapter freezes every adapter but the active one
        return peft_model

    # -- properties -----------------------------------------------------------------------------
    @property
    def model(self) -> Any:
        """The trained model: the policy's model, or the PEFT model wrapping it with ``use_lora``."""
        return self.trainer.accelerator.unwrap_model(self.trainer.model)

    @property
    def tasks_per_step(self) -> int:
        """Tasks played per optimizer step (each ``num_generations`` times), over all processes."""
        return self.grpo_config.generation_batch_size // self.config.num_generations

    # -- generation -------------------------------------------------------------------------------
    def _generator(self) -> GenerateFn:
        """One turn of generation for a batch of token-id lists, by the configured engine with TRL's settings."""
        trainer = self.trainer
        if self.engine_name == "vllm":
            return vllm_engine.trl_generator(trainer)
        if self.engine_name == "hf":
            return hf_engine.trl_generator(trainer, self.tokenizer.pad_token_id)
        step = self.optimizer_steps + trainer.state.global_step
        if self._synced_at is None or step - self._synced_at >= self.config.engine_sync_every:
            self.sync_seconds.append(self.engine.sync(self.model))
            self._synced_at = step
        sampling = SamplingConfig(self.config.max_new_tokens, self.config.temperature, self.config.top_p)
        return self.engine.generator(sampling, logprobs=True)

    def _rollout_func(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """TRL ``rollout_func``: plays the tasks of this generation batch's rows in ToolEnv (with dynamic sampling,
        tasks from the call's :class:`~genenv.agents.dynamic_sampling.TaskQueue` until the batch is informative)."""
        rows = trainer._genenv_rows
        if rows is None or len(rows) != len(prompts):
            raise RuntimeError("rollout_func called without its dataset rows (TRL internals changed?)")
        tasks = [Task.from_dict(json.loads(row["task"])) for row in rows]
        generate = self._generator()

        def play(batch_tasks: list[Task]) -> RolloutBatch:
            batch = play_episodes(
                self.adapter,
                batch_tasks,
                self.tokenizer,
                generate,
                eos_token_ids=trainer.eos_token_ids,
                max_turns=self.config.max_turns,
                max_completion_length=self.config.max_completion_length,
                few_shot=self.config.few_shot,
                env_kwargs=self.config.env_kwargs,
            )
            self.episodes.extend(batch.episodes)
            for key, value in batch.token_counts.items():
                self._call_tokens[key] += value
            return batch

        if self._queue is None:
            batch = play(tasks)
        else:
            group = self.config.num_generations
            own = tasks[::group]  # rows hold each task G times in a row (TRL's RepeatSampler)
            first = self._queue.take(len(own))
            first += own[len(first) :]  # a refill that ran dry: the rows' own tasks take the places left
            batch, stats = fill_informative(
                lambda ts: play([t for t in ts for _ in range(group)]),
                first,
                group,
                self._queue,
                self.config.dynamic_sampling_max_rounds,
            )
            self.group_stats.add(stats)
        if batch.logprobs is not None and not trainer.use_vllm:
            trainer.correct_engine_logprobs()
        self.last_rollout = batch
        return rollout_to_trl(batch)

    # -- data -----------------------------------------------------------------------------------
    def _dataset(self, tasks: list[Task], steps: int):
        """Rows for ``steps`` optimizer steps, cycling through ``tasks`` (shuffled once per call)."""
        from datasets import Dataset

        order = list(tasks)
        if self.config.shuffle_tasks:
            self._rng.shuffle(order)
        batches = math.ceil(steps / self.grpo_config.num_iterations)
        rows = [order[k % len(order)] for k in range(batches * self.tasks_per_step)]
        prompts = [render_prompt(self.adapter.system_prompt(t), self.adapter.tools(t), t.prompt) for t in rows]
        return Dataset.from_dict({"prompt": prompts, "task": [json.dumps(t.to_dict()) for t in rows]})

    # -- training -------------------------------------------------------------------------------
    def train(self, tasks: list[Task], steps: int | None = None, refill: Refill | None = None) -> dict[str, float]:
        """Run GRPO on ``tasks``: one pass (each task in one group of G episodes; the last step is filled by
        cycling the list) or ``steps`` optimizer steps (cycling the tasks as needed).

        With ``dynamic_sampling`` the steps are as many, but each step's tasks are drawn from ``tasks`` (shuffled)
        and then from ``refill(n)`` (new tasks of the same source; without it, further passes over ``tasks``) until
        its batch holds ``tasks_per_step`` informative groups or ``dynamic_sampling_max_rounds`` rounds are played
        (:mod:`genenv.agents.dynamic_sampling`); the metrics then add ``groups/*`` (played, informative, kept,
        filled, extra episodes, refill rounds, exhausted batches) and :attr:`episodes` holds every episode played,
        the dropped groups' too.

        Returns metrics (floats): ``steps``, ``episodes``, ``reward`` / ``reward_std`` (adapter scores of the
        episodes trained on), ``solved`` (fraction with score 1), ``turns`` (mean agent turns), ``loss``,
        ``kl`` (only when ``beta > 0``: TRL computes it only then), ``step_time`` (mean seconds per optimizer
        step, generation included), ``train_time``, ``engine_syncs`` / ``engine_sync_seconds`` (weight syncs into
        a CTranslate2 engine and their cost), ``skipped_batches`` (micro-batches with all advantages 0 whose forward
        and backward pass were skipped, ``skip_zero_advantage``), ``prompt_tokens`` / ``completion_tokens``
        (model-sampled) / ``env_tokens`` (masked tool responses), and every numeric value TRL logged, averaged over
        steps, under ``trl/<name>``. The episodes themselves are in :attr:`episodes` (with several processes, those of
        every process).
        """
        if not tasks:
            raise ValueError("train() needs at least one task")
        mu = self.grpo_config.num_iterations  # optimizer steps per generation batch (1 by default)
        if steps is None:
            steps = math.ceil(len(tasks) / self.tasks_per_step) * mu
        if steps < 1:
            raise ValueError(f"steps must be >= 1, got {steps}")
        from accelerate.optimizer import AcceleratedOptimizer

        trainer = self.trainer
        trainer.train_dataset = self._dataset(list(tasks), steps)
        trainer.args.max_steps = steps
        # A second train() call re-prepares the optimizer with accelerate: hand it the raw one, not a wrapper.
        if isinstance(trainer.optimizer, AcceleratedOptimizer):
            trainer.optimizer = trainer.optimizer.optimizer
        if getattr(trainer, "use_vllm", False):
            trainer._last_loaded_step = -1  # global_step restarts at 0: force a weight sync on the first step
        self._synced_at = None  # the first rollout checks the engine's weights (a warm start may have changed them)
        self.sync_seconds = []
        self.trainer.skipped_batches = 0
        self.episodes = []
        self.group_stats = GroupFilterStats()
        self._queue = None
        if self.config.dynamic_sampling:
            if trainer.accelerator.num_processes > 1:  # TRL splits a group's G episodes over processes
                raise ValueError("agent.dynamic_sampling runs in one process (a group's episodes must stay together)")
            self._queue = TaskQueue(tasks, refill, seed=self.config.seed + self.train_calls)
        self._call_tokens = {key: 0 for key in self._call_tokens}
        self._metrics.reset()
        start = time.perf_counter()
        try:
            output = trainer.train()
        finally:
            self.model.eval()
        elapsed = time.perf_counter() - start
        if trainer.accelerator.num_processes > 1:  # every process played its share of the episodes
            from accelerate.utils import gather_object

            self.episodes = gather_object(self.episodes)
            self._call_tokens = {k: sum(gather_object([v])) for k, v in self._call_tokens.items()}
        self.optimizer_steps += trainer.state.global_step
        self.train_calls += 1
        return self._summary(output, elapsed)

    def _summary(self, output: Any, elapsed: float) -> dict[str, float]:
        rewards = [e.reward for e in self.episodes]
        mean_reward = _mean(rewards)
        std = math.sqrt(_mean([(r - mean_reward) ** 2 for r in rewards])) if rewards else float("nan")
        step_logs = [log for log in self._metrics.logs if "loss" in log]
        metrics: dict[str, float] = {
            "steps": float(self.trainer.state.global_step),
            "episodes": float(len(self.episodes)),
            "reward": mean_reward,
            "reward_std": std,
            "solved": _mean([float(r >= 1.0) for r in rewards]),
            "turns": _mean([float(len(e.trajectory.turns)) for e in self.episodes]),
            "loss": _mean([log["loss"] for log in step_logs]) if step_logs else float(output.training_loss),
            "step_time": _mean(self._metrics.step_times),
            "train_time": elapsed,
            "engine_sync_seconds": float(sum(self.sync_seconds)),
            "engine_syncs": float(sum(seconds > 0 for seconds in self.sync_seconds)),
            "skipped_batches": float(self.trainer.skipped_batches),
            **{key: float(value) for key, value in self._call_tokens.items()},
        }
        if self.config.dynamic_sampling:
            metrics.update({f"groups/{key}": value for key, value in self.group_stats.to_dict().items()})
        if self.config.kl_coef != 0.0:
            metrics["kl"] = _mean([log["kl"] for log in step_logs if "kl" in log])
        keys = sorted({k for log in step_logs for k, v in log.items() if isinstance(v, (int, float))})
        for key in keys:
            metrics[f"trl/{key}"] = _mean(
                [float(log[key]) for log in step_logs if isinstance(log.get(key), (int, float))]
            )
        return metrics

    # -- checkpoints ----------------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write the model (or only the LoRA adapter) and tokenizer with transformers' ``save_model``, the
        optimizer state (``optimizer.pt``, as transformers names it) and genenv's counters and config.

        With several processes, call it on every process (``save_model`` gathers sharded weights); the main
        process writes the files. The optimizer state saved is the main process's, complete under DDP (it is
        replicated) but not under DeepSpeed ZeRO, whose resume restarts the optimizer.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.trainer.save_model(str(directory))
        if not self.trainer.accelerator.is_main_process:
            return directory
        if self.trainer.optimizer is not None and not self.trainer.is_deepspeed_enabled:
            torch.save(self.trainer.optimizer.state_dict(), directory / OPTIMIZER_FILE)
        if self._own_reference:  # a LoRA reference is an adapter: save_model wrote it into REFERENCE_ADAPTER/
            from safetensors.torch import save_model

            save_model(self.trainer.accelerator.unwrap_model(self.trainer.ref_model), str(directory / REFERENCE_FILE))
        state = {
            "config": self.config.to_dict(),
            "optimizer_steps": self.optimizer_steps,
            "train_calls": self.train_calls,
            "use_lora": self.config.use_lora,
        }
        (directory / STATE_FILE).write_text(json.dumps(state, indent=2), encoding="utf-8")
        return directory

    def load(self, directory: str | Path) -> None:
        """Restore weights (or the LoRA adapter) and optimizer state written by :meth:`save`, to resume.

        Build the trainer as for the original run (same policy name, same ``use_lora``), then call this.
        """
        from safetensors.torch import load_file

        directory = Path(directory)
        state = json.loads((directory / STATE_FILE).read_text(encoding="utf-8"))
        if bool(state.get("use_lora")) != self.config.use_lora:
            raise ValueError(f"checkpoint use_lora={state.get('use_lora')} but this trainer has {self.config.use_lora}")
        model = self.model
        device = next(model.parameters()).device
        if self.config.use_lora:
            from peft import set_peft_model_state_dict

            weights = load_file(str(directory / "adapter_model.safetensors"), device=str(device))
            result = set_peft_model_state_dict(model, weights)
            if result.unexpected_keys:
                raise ValueError(f"unexpected adapter weights: {result.unexpected_keys[:5]}")
            reference = directory / REFERENCE_ADAPTER / "adapter_model.safetensors"
            if reference.exists() and self.beta != 0.0:
                weights = load_file(str(reference), device=str(device))
                set_peft_model_state_dict(self._reference_adapter(), weights, REFERENCE_ADAPTER)
        else:
            single = directory / "model.safetensors"
            if single.exists():
                weights = load_file(str(single), device=str(device))
                missing, unexpected = model.load_state_dict(weights, strict=False)
                tied = set(getattr(model, "_tied_weights_keys", None) or [])
                if getattr(model.config, "tie_word_embeddings", False):
                    tied |= {"lm_head.weight"}
                missing = [k for k in missing if k not in tied]
                if missing or unexpected:
                    raise ValueError(f"checkpoint mismatch: missing={missing[:5]} unexpected={unexpected[:5]}")
            else:
                from transformers.modeling_utils import load_sharded_checkpoint

                load_sharded_checkpoint(model, str(directory), strict=False)
        if self._own_reference and (directory / REFERENCE_FILE).exists():
            from safetensors.torch import load_model

            load_model(self.trainer.accelerator.unwrap_model(self.trainer.ref_model), str(directory / REFERENCE_FILE))
        optimizer_file = directory / OPTIMIZER_FILE
        if optimizer_file.exists():
            if self.trainer.optimizer is None:
                self.trainer.create_optimizer()
            self.trainer.optimizer.load_state_dict(torch.load(optimizer_file, map_location=device, weights_only=True))
        self.optimizer_steps = int(state.get("optimizer_steps", 0))
        self.train_calls = int(state.get("train_calls", 0))
        self._rng = random.Random(self.config.seed + self.train_calls)
        self.model.eval()
