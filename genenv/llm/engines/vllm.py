"""The vLLM engine: GRPO rollouts through TRL's own vLLM integration (colocate or server), GPU only.

TRL syncs the trained weights into vLLM before each generation batch (``GRPOTrainer.vllm_generation``) and
corrects the vLLM/policy numeric mismatch with its importance-sampling correction; genenv adds nothing.
"""

from __future__ import annotations

from typing import Any

from genenv.llm.generation import GenerateFn

__all__ = ["trl_generator"]


def trl_generator(trainer: Any) -> GenerateFn:
    """One turn of GRPO rollouts with TRL's vLLM generation, with the sampled tokens' log-probabilities."""

    def generate(batch: list[list[int]]):
        _, ids, logprobs, _ = trainer.vllm_generation.generate(prompts=batch, images=None, num_generations=1)
        logprobs = None if logprobs is None else [[lp[0] for lp in row] for row in logprobs]
        return [list(row) for row in ids], logprobs

    return generate
