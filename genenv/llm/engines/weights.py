"""The weights an engine generates with: a policy's merged weights, a cheap fingerprint that tells when they changed,
and the cache key of a converted copy."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import torch

__all__ = ["merged_state_dict", "weights_fingerprint", "weights_key"]


def merged_state_dict(model: Any, *, copy_unmerged: bool = True) -> dict[str, torch.Tensor]:
    """``model``'s weights as the plain architecture names them, LoRA adapters merged, as fresh tensors.

    ``copy_unmerged=False``: the weights no adapter changes are the model's own tensors (detached, in float32 on the
    CPU: the same storage where they already are), for a reader that never writes them and would rather not hold a
    second copy. Works for a ``PeftModel``, a model with injected LoRA layers, or a plain model; the model is not
    modified.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    state: dict[str, torch.Tensor] = {}
    for key, value in base.state_dict().items():
        parts = key.split(".")
        if any(part.startswith("lora_") for part in parts):
            continue
        plain = ".".join(p for p in parts if p != "base_layer")
        state[plain] = value.detach().to("cpu", torch.float32, copy=copy_unmerged)
    with torch.no_grad():
        for name, module in base.named_modules():
            if not (hasattr(module, "base_layer") and hasattr(module, "get_delta_weight")):
                continue
            if getattr(module, "merged", False) or getattr(module, "disable_adapters", False):
                continue
            for adapter in module.active_adapters:
                if adapter in getattr(module, "lora_A", {}):
                    key = f"{name}.weight"
                    state[key] = state[key] + module.get_delta_weight(adapter).to("cpu", torch.float32)
    return state


@torch.no_grad()
def weights_fingerprint(model: Any) -> tuple[int, ...]:
    """A checksum of every weight (the integer sum of its bits): it changes when any weight changes (one element
    always; a whole update unless its bit changes cancel out exactly), at a fraction of a conversion's cost.
    (Tensor version counters are no substitute: TRL's optimizer steps leave them unchanged.)"""
    sums = []
    for tensor in model.state_dict().values():
        flat = tensor.detach().contiguous().reshape(-1)
        bits = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.uint8}[flat.element_size()]
        sums.append(int(flat.view(bits).sum(dtype=torch.int64)))
    return tuple(sums)


def weights_key(state: dict[str, torch.Tensor], config: Any, tokenizer: Any, header: dict[str, Any]) -> str:
    """A hash of ``state``, ``config``, the tokenizer's vocabulary and special tokens, and ``header`` (the engine's
    version, format and conversion settings): the cache key of a converted copy."""
    digest = hashlib.blake2b(digest_size=20)
    special = [tokenizer.bos_token, tokenizer.eos_token, tokenizer.pad_token]
    header = {**header, "config": config.to_dict(), "special": special}
    digest.update(json.dumps(header, sort_keys=True, default=str).encode())
    digest.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode())
    for key in sorted(state):
        tensor = state[key].contiguous()
        digest.update(f"{key}:{tuple(tensor.shape)}".encode())
        digest.update(tensor.view(torch.uint8).reshape(-1).numpy())
    return digest.hexdigest()
