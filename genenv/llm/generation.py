"""Batched chat generation: many conversations, one left-padded ``generate`` call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

#: ``generate(batch_of_token_id_lists) -> (new_ids_per_row, logprobs_per_row or None)``. The new ids may run
#: past the end-of-turn token (padding); the rollout cuts them at the first one.
GenerateFn = Callable[[list[list[int]]], tuple[list[list[int]], list[list[float]] | None]]


@dataclass
class SamplingConfig:
    """How to decode.

    Args:
        max_new_tokens: generation length limit per call.
        temperature: 0 means greedy decoding.
        top_p: nucleus sampling mass when sampling. There is no top-k cut: every engine samples the whole
            vocabulary (``top_k=0``, as TRL's GRPO rollouts do), not HF ``generate``'s default top 50.
    """

    max_new_tokens: int = 192
    temperature: float = 0.0
    top_p: float = 1.0

    def generate_kwargs(self) -> dict[str, Any]:
        """HF ``generate`` keyword arguments for this decoding (greedy, or sampled from the whole vocabulary)."""
        kwargs: dict[str, Any] = {"max_new_tokens": self.max_new_tokens}
        if self.temperature > 0:
            return kwargs | {"do_sample": True, "temperature": self.temperature, "top_p": self.top_p, "top_k": 0}
        return kwargs | {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}


def render_chat(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict] | None = None) -> str:
    """The model's prompt text for ``messages`` (with ``tools`` in its system block), ready to continue."""
    return tokenizer.apply_chat_template(messages, tools=tools or None, add_generation_prompt=True, tokenize=False)


@torch.no_grad()
def generate_chat(
    policy: Any,
    conversations: list[list[dict[str, Any]]],
    tools: list[list[dict] | None] | None = None,
    sampling: SamplingConfig | None = None,
    generator_seed: int | None = None,
    allowed_tokens: Callable[[int, Any], list[int]] | None = None,
) -> list[str]:
    """Continue every conversation by one assistant message; returns the new texts in order.

    ``allowed_tokens`` is a ``prefix_allowed_tokens_fn`` constraining each row (see
    :mod:`genenv.llm.constrained`).
    """
    if not conversations:
        return []
    sampling = sampling or SamplingConfig()
    tokenizer, model = policy.tokenizer, policy.model
    tools = tools or [None] * len(conversations)
    prompts = [render_chat(tokenizer, messages, tool) for messages, tool in zip(conversations, tools)]
    batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(model.device)
    kwargs: dict[str, Any] = {**sampling.generate_kwargs(), "pad_token_id": tokenizer.pad_token_id}
    if allowed_tokens is not None:
        kwargs["prefix_allowed_tokens_fn"] = allowed_tokens
    if sampling.temperature > 0 and generator_seed is not None:
        torch.manual_seed(generator_seed)
    output = model.generate(**batch, **kwargs)
    new_tokens = output[:, batch["input_ids"].shape[1] :]
    return [text.strip() for text in tokenizer.batch_decode(new_tokens, skip_special_tokens=True)]
