"""The Hugging Face engine: ``model.generate`` on the policy's own (trained) model.

:class:`HFEngine` serves evaluation and the simulator; :func:`trl_generator` serves GRPO rollouts inside TRL's
trainer (the model unwrapped as TRL unwraps it for generation, TRL's generation config).

On CPU, ``generate`` runs hundreds of small OpenMP parallel regions per token, and libgomp's threads spin between
them by default. When another job shares the cores, the spinning threads of each job take the cores the other's
threads are waiting for, and ``generate`` runs many times slower; ``OMP_WAIT_POLICY=PASSIVE`` or one thread per job
avoids it, and CTranslate2 is not affected (measured: ``performance/hf_contention.py``, results/README.md). The wait
policy is read when torch loads, so genenv cannot change it
for a running process; :func:`warn_if_contended` says what to do when a job starts on a busy machine.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from typing import Any

import torch

from genenv.llm.generation import GenerateFn, SamplingConfig
from genenv.llm.turn_cache import TurnCache
from genenv.machine import cores_busy_by_others

__all__ = ["HFEngine", "cores_held_by_others", "hf_generator", "trl_generator", "warn_if_contended"]

logger = logging.getLogger(__name__)


def cores_held_by_others(threads: int) -> float | None:
    """The cores other processes keep busy now (:func:`~genenv.machine.cores_busy_by_others`: CPU time over a
    fraction of a second, this process's own left out) when they leave fewer idle than ``threads`` spinning threads
    need; ``None`` when enough are idle, for a single thread, or where the platform cannot tell."""
    if threads < 2:
        return None
    others = cores_busy_by_others()
    if others is None:
        return None
    return others if (os.cpu_count() or 1) - others < threads - 0.5 else None


@functools.cache
def warn_if_contended() -> bool:
    """Log a warning (once per process) when ``generate`` would spin-wait on cores other jobs keep busy: several
    torch threads, OpenMP threads that spin, and :func:`cores_held_by_others`. Returns whether it warned."""
    threads = torch.get_num_threads()
    others = cores_held_by_others(threads)
    if others is None or os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE":
        return False
    logger.warning(
        "HF generate with %d spinning OpenMP threads on %d cores while other jobs keep about %.1f of them busy: "
        "generate then runs many times slower (results/performance/hf_contention.json). Start genenv with "
        "OMP_NUM_THREADS=1 (one core per job) or OMP_WAIT_POLICY=PASSIVE, or generate with engine ctranslate2.",
        threads,
        os.cpu_count() or 1,
        others,
    )
    return True


def hf_generator(
    model: Any,
    tokenizer: Any,
    sampling: SamplingConfig | None = None,
    seed: int | None = None,
    reuse_cache: bool = True,
) -> GenerateFn:
    """A :data:`GenerateFn` over ``model.generate``: left padding, greedy or sampled as ``sampling`` says.

    With ``seed`` and sampling, call ``k`` of the generator seeds torch with ``seed + 7919 * k``, so a rollout
    is reproducible. ``reuse_cache``: a call that continues the previous call's rows (the next turn of the same
    episodes) reuses its KV cache instead of prefilling the whole history again (:class:`TurnCache`).
    """
    sampling = sampling or SamplingConfig()
    pad_id = tokenizer.pad_token_id
    turns = TurnCache(pad_id)
    calls = 0

    @torch.no_grad()
    def generate(batch: list[list[int]]) -> tuple[list[list[int]], None]:
        nonlocal calls
        kwargs: dict[str, Any] = {**sampling.generate_kwargs(), "pad_token_id": pad_id}
        if sampling.temperature > 0 and seed is not None:
            torch.manual_seed(seed + 7919 * calls)
        calls += 1
        if not reuse_cache:
            width = max(len(ids) for ids in batch)
            input_ids = torch.tensor([[pad_id] * (width - len(ids)) + ids for ids in batch], device=model.device)
            mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in batch], device=model.device)
            return model.generate(input_ids=input_ids, attention_mask=mask, **kwargs)[:, width:].tolist(), None
        return turns.generate(model, batch, kwargs.pop("max_new_tokens"), **kwargs), None

    generate.turn_cache = turns  # type: ignore[attr-defined]
    return generate


class HFEngine:
    """``generate`` on ``policy.model`` (read at every call: a trainer may wrap it); nothing to sync."""

    name = "hf"

    def __init__(self, policy: Any) -> None:
        self.policy = policy

    def generator(self, sampling: SamplingConfig, seed: int | None = None, *, logprobs: bool = False) -> GenerateFn:
        if logprobs:
            raise ValueError("the hf engine generates with the trained model itself: it returns no log-probabilities")
        if self.policy.model.device.type == "cpu":
            warn_if_contended()
        return hf_generator(self.policy.model, self.policy.tokenizer, sampling, seed=seed)

    def sync(self, model: Any, *, force: bool = False) -> float:
        return 0.0


def trl_generator(trainer: Any, pad_id: int) -> GenerateFn:
    """One turn of GRPO rollouts with the model TRL trains, unwrapped as TRL does for generation; the turns of a
    generation batch reuse the KV cache of the previous turn (:class:`~genenv.llm.turn_cache.TurnCache`)."""
    from trl.models import unwrap_model_for_generation

    if trainer.accelerator.device.type == "cpu":
        warn_if_contended()
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
            config = trainer.generation_config
            return turns.generate(unwrapped, batch, config.max_new_tokens, generation_config=config), None

    return generate
