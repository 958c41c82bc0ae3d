"""Reward-weighted regression (RWR) of the environment simulator, KL-regularised to its start.

GenEnv updates the simulator pi_env on its own generations: every generated task text is an SFT
target for the chat prompt that produced it, weighted by ``exp(lambda * R_env)`` where ``R_env``
is the alpha-curriculum reward (:func:`~genenv.curriculum.reward.alpha_reward`) of the batch the
task came from. The update is a LoRA adapter over the simulator (peft), so the reference policy
pi_ref is the very same model with the adapter disabled: no second copy of the weights.

For one batch ``B`` of examples ``i`` with completion tokens ``t`` (prompt tokens masked)::

    nll_i = mean_t  -log pi(y_t | y_<t, prompt_i)
    kl    = mean over all completion tokens of the batch of
            sum_v pi(v | .) * (log pi(v | .) - log pi_ref(v | .))      (full-vocabulary, exact)
    loss  = (1/|B|) * sum_i w_i * nll_i  +  kl_coef * kl

with ``w_i`` the example weights, divided by their mean over the whole update when
``normalize_weights`` (so they average 1 and the loss scale is stable). After every optimizer
step the KL is measured again on the batch (eval mode, no grad); if it exceeds ``max_kl`` the
step is rolled back (LoRA weights and optimizer state restored) and the update stops.

TRL's ``SFTTrainer`` has neither per-example weights nor a rollback on a KL cap, so the loop is
plain torch; peft provides the adapter, its checkpoints and the disabled-adapter reference.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import logging
import math
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from genenv.config import check_types
from genenv.console import progress
from genenv.llm.generation import render_chat
from genenv.llm.models import Policy

__all__ = ["RWRConfig", "RWRStats", "RWRTrainer"]

logger = logging.getLogger(__name__)

_ADAPTER_DIR = "adapter"
_OPTIMIZER_FILE = "optimizer.pt"
_STATE_FILE = "trainer_state.json"
_STATE_FORMAT = 1


def warn_rwr_off(writer: str) -> None:
    """Log that the simulator (``writer``: where it writes, e.g. a server's URL and model) has no local weights, so it
    is conditioned on the agent's success but RWR never updates it."""
    logger.warning(
        "simulator on %s: conditioned on the agent's success but never updated, RWR is off (it trains local weights)",
        writer,
    )


@dataclass
class RWRConfig:
    """Settings of the simulator's RWR update.

    Args:
        learning_rate: AdamW learning rate of the LoRA parameters.
        lora_r: LoRA rank.
        lora_alpha: LoRA scaling numerator (the adapter output is scaled by ``lora_alpha / lora_r``).
        lora_dropout: dropout on the LoRA input during updates (0 keeps updates deterministic).
        target_modules: names of the linear modules that get a LoRA adapter.
        batch_size: examples per optimizer step.
        micro_batch_size: examples per forward/backward pass; the step's gradient is the same (the loss is a sum
            over micro-batches), while padding, activations and logits shrink with it (on a CPU 1 is fastest).
        epochs: passes over the examples per :meth:`RWRTrainer.train` call.
        max_length: token limit of prompt + completion + eos. Longer examples keep at least
            ``min(len(completion), max_length // 2)`` completion tokens (cut on the right) and lose
            the start of their prompt (cut on the left); a warning counts them.
        kl_coef: weight of the KL(pi || pi_ref) penalty in the loss.
        max_kl: hard cap on the mean per-token KL(pi || pi_ref) measured on the batch after each
            optimizer step; once exceeded, that step is rolled back and the update stops.
            ``None`` (or ``math.inf``) disables the cap and saves the post-step forward pass.
        normalize_weights: divide the weights by their mean over the update's examples, so that
            the loss scale does not depend on the reward level.
        max_grad_norm: gradient clipping norm (``None`` or ``0`` disables clipping).
        weight_decay: AdamW weight decay of the LoRA parameters (0 as in TRL's default).
        activation_checkpointing: recompute each decoder layer's activations in the backward pass instead of
            keeping them: the same update in less memory, for more compute (the simulator's prompts run to
            ``max_length`` tokens; ``docs/training.md`` has the measurement).
        seed: seed of the LoRA initialisation and of the example shuffling.
    """

    learning_rate: float = 1e-4
    lora_r: int = 8
    lora_alpha: int = 16
    lora_dropout: float = 0.0
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    batch_size: int = 4
    micro_batch_size: int = 1
    epochs: int = 1
    max_length: int = 768
    kl_coef: float = 0.05
    max_kl: float | None = 0.5
    normalize_weights: bool = True
    max_grad_norm: float | None = 1.0
    weight_decay: float = 0.0
    activation_checkpointing: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        self.target_modules = tuple(self.target_modules)
        check_types(self, "rwr")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")
        if self.lora_r < 1:
            raise ValueError(f"lora_r must be at least 1, got {self.lora_r}")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise ValueError(f"lora_dropout must lie in [0, 1), got {self.lora_dropout}")
        if self.batch_size < 1 or self.micro_batch_size < 1 or self.epochs < 1:
            raise ValueError(
                "batch_size, micro_batch_size and epochs must be at least 1, got "
                f"{self.batch_size}, {self.micro_batch_size}, {self.epochs}"
            )
        if self.max_length < 2:
            raise ValueError(f"max_length must be at least 2, got {self.max_length}")
        if self.kl_coef < 0:
            raise ValueError(f"kl_coef must be non-negative, got {self.kl_coef}")
        if self.max_kl is not None and not self.max_kl >= 0:
            raise ValueError(f"max_kl must be non-negative or None, got {self.max_kl}")


@dataclass
class RWRStats:
    """What one :meth:`RWRTrainer.train` call did.

    Attributes:
        steps: optimizer steps kept (a step rolled back by the KL cap is not counted).
        examples: examples trained on (after skipping unusable ones).
        mean_loss: mean training loss over the batches seen (each measured before its step;
            NaN when no batch was seen).
        mean_nll: mean of the batches' weight-free mean per-example NLL (NaN when none).
        kl: mean per-token KL(pi || pi_ref) of the parameters kept, on the last batch seen: after
            the last kept step, or before the rolled-back step (NaN when no batch was seen). Without
            a cap (``max_kl=None``) the post-step forward is skipped and this is the KL measured
            before the last step; without a cap and with ``kl_coef=0`` the reference is never run
            and this is NaN.
        stopped_early: True when the KL cap stopped the update.
        seconds: wall-clock time of the call.
        skipped: examples skipped (empty completion).
        rejected_kl: the KL that exceeded the cap (None unless ``stopped_early``).
    """

    steps: int = 0
    examples: int = 0
    mean_loss: float = math.nan
    mean_nll: float = math.nan
    kl: float = math.nan
    stopped_early: bool = False
    seconds: float = 0.0
    skipped: int = 0
    rejected_kl: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Encoded:
    prompt: list[int]
    completion: list[int]  # includes the eos token unless truncated away
    weight: float
    index: int  # position in the caller's list


@dataclass
class _Batch:
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor
    targets: torch.Tensor  # [B, C]: the last C tokens of every row, -100 where not a completion token
    weights: torch.Tensor  # [B]
    width: int = field(init=False)

    def __post_init__(self) -> None:
        self.width = self.targets.shape[1]


class RWRTrainer:
    """Weighted SFT of the simulator through a LoRA adapter, with a KL penalty and a KL cap.

    Args:
        policy: the simulator's :class:`~genenv.llm.models.Policy`. Its model is wrapped in a
            peft LoRA adapter (``get_peft_model``, LoRA settings from ``config``), or used as is
            when it already is a trainable ``PeftModel``. ``policy.model`` is replaced by the
            ``PeftModel`` (in place, so whoever holds the policy, e.g. the
            :class:`~genenv.envs.simulator.Simulator`, generates with the adapter enabled).
        config: :class:`RWRConfig` (defaults when None).

    The reference policy is the same model under ``model.disable_adapter()``. Only the LoRA
    parameters get gradients; their AdamW optimizer persists across :meth:`train` calls and is
    saved with :meth:`save`. The model is left in eval mode between updates.
    """

    def __init__(self, policy: Policy, config: RWRConfig | None = None) -> None:
        from peft import PeftModel

        self.config = config or RWRConfig()
        self.policy = policy
        if isinstance(policy.model, PeftModel):
            model = policy.model
        else:
            model = self._wrap(policy.model)
            policy.model = model
        self.model = model
        self.tokenizer = policy.tokenizer
        self.params = [p for _, p in model.named_parameters() if p.requires_grad]
        if not self.params:
            raise ValueError("the PeftModel has no trainable parameters (load it with is_trainable=True)")
        self.optimizer = torch.optim.AdamW(
            self.params, lr=self.config.learning_rate, weight_decay=self.config.weight_decay
        )
        self.step = 0  # optimizer steps kept, over all updates
        self.updates = 0  # train() calls that saw at least one batch
        base_forward = model.get_base_model().forward
        try:
            self._logits_to_keep = "logits_to_keep" in inspect.signature(base_forward).parameters
        except (TypeError, ValueError):
            self._logits_to_keep = False
        eos = self.tokenizer.eos_token_id
        if eos is None:
            raise ValueError("the simulator's tokenizer has no eos token")
        self._eos = int(eos)
        pad = self.tokenizer.pad_token_id
        self._pad = int(pad) if pad is not None else self._eos
        if self.config.activation_checkpointing:
            # only in train mode: generation and the eval-mode reference and KL passes are unchanged
            model.get_base_model().activation_checkpointing_enable({"use_reentrant": False})
        model.eval()

    # ----------------------------------------------------------------------------------------
    # setup

    def _wrap(self, model: Any) -> Any:
        from peft import LoraConfig, get_peft_model

        cfg = self.config
        lora = LoraConfig(
            r=cfg.lora_r,
            lora_alpha=cfg.lora_alpha,
            lora_dropout=cfg.lora_dropout,
            target_modules=list(cfg.target_modules),
            bias="none",
            task_type="CAUSAL_LM",
        )
        device = next(model.parameters()).device
        cuda = [device.index or 0] if device.type == "cuda" else []
        with torch.random.fork_rng(devices=cuda), warnings.catch_warnings():
            # peft reads a transformers property that transformers 5 deprecates; not ours to fix.
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
            torch.manual_seed(cfg.seed)
            return get_peft_model(model, lora)

    @property
    def device(self) -> torch.device:
        return self.params[0].device

    # ----------------------------------------------------------------------------------------
    # data

    def _encode(self, examples: list[dict[str, Any]], *, weighted: bool) -> tuple[list[_Encoded], int]:
        """Tokenise the examples; returns the usable ones and the number skipped."""
        encoded: list[_Encoded] = []
        skipped = truncated = 0
        limit = self.config.max_length
        for index, example in enumerate(examples):
            if not isinstance(example, dict) or "messages" not in example or "completion" not in example:
                raise ValueError(f"example {index} needs 'messages' and 'completion' keys, got {example!r:.200}")
            completion = example["completion"]
            if not isinstance(completion, str):
                raise ValueError(f"example {index}: 'completion' must be a string, got {type(completion).__name__}")
            weight = self._weight(example, index) if weighted else 1.0
            if not completion.strip():
                logger.warning("RWR: skipping example %d, its completion is empty", index)
                skipped += 1
                continue
            prompt_text = render_chat(self.tokenizer, example["messages"], example.get("tools"))
            prompt = self.tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
            target = self.tokenizer(completion, add_special_tokens=False)["input_ids"] + [self._eos]
            if len(prompt) + len(target) > limit:
                keep = max(limit - len(prompt), min(len(target), limit // 2))
                target = target[:keep]
                prompt = prompt[len(prompt) - (limit - len(target)) :]
                truncated += 1
            encoded.append(_Encoded(prompt=prompt, completion=target, weight=weight, index=index))
        if truncated:
            logger.warning("RWR: truncated %d of %d examples to max_length=%d tokens", truncated, len(examples), limit)
        return encoded, skipped

    def _weight(self, example: dict[str, Any], index: int) -> float:
        if "weight" not in example:
            raise ValueError(f"example {index} needs a 'weight' (the curriculum's exp(lam * R_env))")
        weight = float(example["weight"])
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"example {index}: weight must be finite and non-negative, got {weight}")
        return weight

    def _collate(self, items: list[_Encoded], weights: list[float]) -> _Batch:
        """Left-padded batch (as in generation), positions counted from the first real token."""
        length = max(len(it.prompt) + len(it.completion) for it in items)
        width = max(len(it.completion) for it in items)
        input_ids = torch.full((len(items), length), self._pad, dtype=torch.long)
        attention_mask = torch.zeros((len(items), length), dtype=torch.long)
        targets = torch.full((len(items), width), -100, dtype=torch.long)
        for row, it in enumerate(items):
            seq = it.prompt + it.completion
            input_ids[row, length - len(seq) :] = torch.tensor(seq)
            attention_mask[row, length - len(seq) :] = 1
            targets[row, width - len(it.completion) :] = torch.tensor(it.completion)
        position_ids = (attention_mask.cumsum(-1) - 1).clamp(min=0)
        device = self.device
        return _Batch(
            input_ids=input_ids.to(device),
            attention_mask=attention_mask.to(device),
            position_ids=position_ids.to(device),
            targets=targets.to(device),
            weights=torch.tensor(weights, dtype=torch.float32, device=device),
        )

    # ----------------------------------------------------------------------------------------
    # forward passes

    def _logprobs(self, batch: _Batch, *, reference: bool = False) -> torch.Tensor:
        """Float32 log-probabilities [B, C, V] of the next token at the batch's completion positions."""
        kwargs: dict[str, Any] = {
            "input_ids": batch.input_ids,
            "attention_mask": batch.attention_mask,
            "position_ids": batch.position_ids,
            "use_cache": False,
        }
        if self._logits_to_keep:
            kwargs["logits_to_keep"] = batch.width + 1
        context = self.model.disable_adapter() if reference else contextlib.nullcontext()
        with context:
            logits = self.model(**kwargs).logits
        return torch.log_softmax(logits[:, -(batch.width + 1) : -1].float(), dim=-1)

    @staticmethod
    def _token_kl_sum(logp: torch.Tensor, ref_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Sum over completion tokens of the exact KL(pi || pi_ref) over the vocabulary."""
        kl = (logp.exp() * (logp - ref_logp)).sum(-1)
        return (kl * mask).sum()

    @staticmethod
    def _example_nll(logp: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Per-example mean token NLL [B]."""
        token = -logp.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        return (token * mask).sum(1) / mask.sum(1)

    # ----------------------------------------------------------------------------------------
    # training

    def train(self, examples: list[dict[str, Any]]) -> RWRStats:
        """One RWR update over ``examples``.

        Each example is ``{"messages": [...chat prompt...], "completion": "<generated text>",
        "weight": float}`` (the curriculum's ``exp(lam * R_env)``; an optional ``"tools"`` list is rendered into the
        prompt). Examples
        with an empty completion are skipped with a warning. See the module docstring for the loss.
        """
        start = time.perf_counter()
        cfg = self.config
        encoded, skipped = self._encode(examples, weighted=True)
        stats = RWRStats(examples=len(encoded), skipped=skipped)
        weights = np.array([it.weight for it in encoded], dtype=np.float64)
        if encoded and cfg.normalize_weights:
            mean = weights.mean()
            if mean <= 0:
                logger.warning("RWR: every example weight is 0; nothing to learn, update skipped")
                encoded = []
            else:
                weights = weights / mean
        if not encoded:
            stats.examples = 0
            stats.seconds = time.perf_counter() - start
            return stats

        losses: list[float] = []
        nlls: list[float] = []
        capped = cfg.max_kl is not None and math.isfinite(cfg.max_kl)
        # The reference forward is needed for the penalty or the cap; without either, KL is not measured.
        with_reference = capped or cfg.kl_coef > 0
        steps_planned = cfg.epochs * math.ceil(len(encoded) / cfg.batch_size)
        bar = progress(total=steps_planned, desc="simulator RWR", unit="step", leave=False)
        try:
            for epoch in range(cfg.epochs):
                order = np.random.default_rng([cfg.seed, self.updates, epoch]).permutation(len(encoded))
                for begin in range(0, len(order), cfg.batch_size):
                    chosen = order[begin : begin + cfg.batch_size]
                    bar.update(1)
                    tokens = sum(len(encoded[i].completion) for i in chosen)
                    if capped:
                        saved_params = [p.detach().clone() for p in self.params]
                        saved_optimizer = copy.deepcopy(self.optimizer.state_dict())
                    # the batch's loss, summed over micro-batches: each one's backward adds its share of the gradient
                    batches, references = [], []
                    loss_sum = nll_sum = kl_sum = 0.0
                    for part in range(0, len(chosen), cfg.micro_batch_size):
                        micro = chosen[part : part + cfg.micro_batch_size]
                        batch = self._collate([encoded[i] for i in micro], [float(weights[i]) for i in micro])
                        mask = (batch.targets != -100).float()
                        ref_logp = None
                        if with_reference:
                            self.model.eval()
                            with torch.no_grad():
                                ref_logp = self._logprobs(batch, reference=True)
                        self.model.train()
                        logp = self._logprobs(batch)
                        nll = self._example_nll(logp, batch.targets, mask)
                        loss = (batch.weights * nll).sum() / len(chosen)
                        nll_sum += nll.sum().item()
                        if ref_logp is not None:
                            kl = self._token_kl_sum(logp, ref_logp, mask) / tokens
                            loss = loss + cfg.kl_coef * kl
                            kl_sum += kl.item()
                        loss_sum += loss.item()
                        del logp
                        loss.backward()
                        if capped:  # measured again after the step
                            batches.append((batch, mask))
                            references.append(ref_logp)
                    kl_before = kl_sum if with_reference else math.nan
                    losses.append(loss_sum)
                    nlls.append(nll_sum / len(chosen))

                    if cfg.max_grad_norm:
                        torch.nn.utils.clip_grad_norm_(self.params, cfg.max_grad_norm)
                    self.optimizer.step()
                    self.optimizer.zero_grad(set_to_none=True)
                    if not capped:
                        self.step += 1
                        stats.steps += 1
                        stats.kl = kl_before  # no post-step measurement without a cap
                        continue

                    self.model.eval()
                    with torch.no_grad():
                        kl_after = (
                            sum(
                                self._token_kl_sum(self._logprobs(batch), ref_logp, mask).item()
                                for (batch, mask), ref_logp in zip(batches, references)
                            )
                            / tokens
                        )
                    if not kl_after <= cfg.max_kl:  # also catches NaN
                        with torch.no_grad():
                            for param, saved in zip(self.params, saved_params, strict=True):
                                param.copy_(saved)
                        self.optimizer.load_state_dict(saved_optimizer)
                        logger.warning(
                            "RWR: KL cap hit: mean per-token KL(pi || pi_ref) %.6g > max_kl %.6g after step %d; "
                            "step rolled back, update stopped",
                            kl_after,
                            cfg.max_kl,
                            self.step + 1,
                        )
                        stats.stopped_early = True
                        stats.rejected_kl = kl_after
                        stats.kl = kl_before
                        return stats
                    self.step += 1
                    stats.steps += 1
                    stats.kl = kl_after
        finally:
            bar.close()
            self.optimizer.zero_grad(set_to_none=True)
            self.model.eval()
            self.updates += 1
            if losses:
                stats.mean_loss = float(np.mean(losses))
                stats.mean_nll = float(np.mean(nlls))
            stats.seconds = time.perf_counter() - start
        return stats

    # ----------------------------------------------------------------------------------------
    # measurements

    @torch.no_grad()
    def kl_to_reference(self, examples: list[dict[str, Any]], batch_size: int | None = None) -> float:
        """Mean per-token KL(pi || pi_ref) over the completion tokens of ``examples`` (no weights needed).

        NaN when no example has a completion.
        """
        total = count = 0.0
        for _, batch, mask in self._eval_batches(examples, batch_size):
            total += self._token_kl_sum(self._logprobs(batch), self._logprobs(batch, reference=True), mask).item()
            count += mask.sum().item()
        return total / count if count else math.nan

    @torch.no_grad()
    def completion_nll(
        self, examples: list[dict[str, Any]], batch_size: int | None = None, *, reference: bool = False
    ) -> list[float]:
        """Per-example mean token NLL of the completions (+ eos) under pi (or pi_ref when ``reference``).

        NaN for examples skipped for an empty completion; same order as ``examples``.
        """
        result = [math.nan] * len(examples)
        for items, batch, mask in self._eval_batches(examples, batch_size):
            nll = self._example_nll(self._logprobs(batch, reference=reference), batch.targets, mask)
            for it, value in zip(items, nll.tolist(), strict=True):
                result[it.index] = value
        return result

    def _eval_batches(self, examples: list[dict[str, Any]], batch_size: int | None):
        """Unweighted batches of ``examples`` in eval mode: (items, batch, completion mask) each."""
        encoded, _ = self._encode(examples, weighted=False)
        was_training = self.model.training
        self.model.eval()
        try:
            size = batch_size or self.config.batch_size
            for begin in range(0, len(encoded), size):
                items = encoded[begin : begin + size]
                batch = self._collate(items, [1.0] * len(items))
                yield items, batch, (batch.targets != -100).float()
        finally:
            self.model.train(was_training)

    def lora_state(self) -> dict[str, torch.Tensor]:
        """Detached copies of the trainable (LoRA) parameters, by name."""
        return {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}

    # ----------------------------------------------------------------------------------------
    # checkpoints

    def save(self, directory: str | Path) -> Path:
        """Write the adapter (peft ``save_pretrained`` under ``adapter/``), optimizer state and counters.

        ``directory/adapter`` is a regular peft adapter folder (``PeftModel.from_pretrained``).
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(directory / _ADAPTER_DIR)
        torch.save(self.optimizer.state_dict(), directory / _OPTIMIZER_FILE)
        state = {
            "format": _STATE_FORMAT,
            "step": self.step,
            "updates": self.updates,
            "config": asdict(self.config),
        }
        (directory / _STATE_FILE).write_text(json.dumps(state, indent=2), encoding="utf-8")
        return directory

    def load(self, directory: str | Path) -> None:
        """Restore a :meth:`save` checkpoint into this trainer (same base model and LoRA shape).

        The learning rate of this trainer's config is kept (not the checkpoint's).
        """
        from peft.utils import load_peft_weights, set_peft_model_state_dict

        directory = Path(directory)
        state = json.loads((directory / _STATE_FILE).read_text(encoding="utf-8"))
        if state.get("format") != _STATE_FORMAT:
            raise ValueError(f"unknown RWR checkpoint format {state.get('format')!r} in {directory}")
        saved = state.get("config", {})
        for key in ("lora_r", "lora_alpha", "target_modules"):
            mine = getattr(self.config, key)
            theirs = tuple(saved[key]) if key == "target_modules" else saved.get(key)
            if theirs != mine:
                logger.warning("RWR checkpoint %s has %s=%r, this trainer %r", directory, key, theirs, mine)
        weights = load_peft_weights(str(directory / _ADAPTER_DIR), device=str(self.device))
        result = set_peft_model_state_dict(self.model, weights)
        if result.unexpected_keys:
            raise ValueError(f"RWR checkpoint {directory} has unexpected adapter keys: {result.unexpected_keys[:5]}")
        missing = [k for k in result.missing_keys if "lora_" in k]
        if missing:
            raise ValueError(f"RWR checkpoint {directory} lacks adapter weights: {missing[:5]}")
        optimizer_state = torch.load(directory / _OPTIMIZER_FILE, map_location=self.device, weights_only=True)
        self.optimizer.load_state_dict(optimizer_state)
        for group in self.optimizer.param_groups:
            group["lr"] = self.config.learning_rate
        self.step = int(state["step"])
        self.updates = int(state["updates"])
        self.model.eval()
