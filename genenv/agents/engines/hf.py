"""The Hugging Face engine: ``model.generate`` on the policy's own (trained) model.

:class:`HFEngine` serves evaluation and the simulator; :func:`trl_generator` serves GRPO rollouts inside TRL's
trainer (the model unwrapped as TRL unwraps it for generation, TRL's generation config).
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from genenv.agents.generation import SamplingConfig
from genenv.agents.rollout import GenerateFn, TurnCache, hf_generator

__all__ = ["HFEngine", "trl_generator"]


class HFEngine:
    """``generate`` on ``policy.model`` (read at every call: a trainer may wrap it); nothing to sync."""

    name = "hf"

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def generator(self, sampling: SamplingConfig, seed: int | None = None, *, logprobs: bool = False) -> GenerateFn:
        if logprobs:
            raise ValueError("the hf engine generates with the trained model itself: it returns no log-probabilities")
        return hf_generator(self.policy.model, self.policy.tokenizer, sampling, seed=seed)

    def sync(self, model: Any, *, force: bool = False) -> float:
        return 0.0


def trl_generator(trainer: Any, pad_id: int) -> GenerateFn:
    """One turn of GRPO rollouts with the model TRL trains, unwrapped as TRL does for generation; the turns of a
    generation batch reuse the KV cache of the previous turn (:class:`~genenv.agents.rollout.TurnCache`)."""
    from trl.models import unwrap_model_for_generation

    turns = TurnCache(pad_id)

    def generate(batch: list[list[int]]):
        dist = getattr(trainer, "_dist", None)
        summon = dist.summon_full_params(trainer.model_wrapped, recurse=False) if dist else contextlib.nullcontext()
        with (
            unwrap_model_for_generation(
                trainer.model_wrapped,
                trainer.accelerator,
                gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                generation_kwargs=trainer.generation_kwargs,
                gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
            ) as unwrapped,
            torch.no_grad(),
            summon,
        ):
            input_ids, attention, cache = turns.inputs(batch, unwrapped)
            out = unwrapped.generate(
                input_ids=input_ids,
                attention_mask=attention,
                past_key_values=cache,
                generation_config=trainer.generation_config,
            )
        return turns.update(batch, out, attention).tolist(), None

    return generate
