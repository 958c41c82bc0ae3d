"""Rollout engines: who turns token ids into new token ids, behind :data:`~genenv.llm.generation.GenerateFn`.

One module per engine:

* :mod:`~genenv.llm.engines.hf`: Hugging Face ``generate`` on the policy's own model (always available;
  the trained weights are the generating weights, nothing to sync);
* :mod:`~genenv.llm.engines.ctranslate2`: CTranslate2 on CPU (int8 or float32), a converted copy of the
  policy's weights, re-synced from the policy when they change;
* :mod:`~genenv.llm.engines.vllm`: vLLM through TRL's integration, for GRPO rollouts on a GPU;
* :mod:`~genenv.llm.engines.openai`: an OpenAI-compatible server genenv does not train (the simulator, the
  Offline baseline's writer, the agent under evaluation);
* :mod:`~genenv.llm.engines.llamacpp`: llama.cpp on CPU from a GGUF copy of the policy, re-exported when its weights
  change; it enforces the simulator's JSON schemas with its own grammar sampler.

:mod:`~genenv.llm.engines.weights` holds what the engines with a converted copy share: the policy's merged weights,
their fingerprint, the cache key of a conversion.

:func:`resolve_engine` turns a setting (``hf``, ``ctranslate2``, ``vllm``, ``llamacpp`` or ``auto``) into the engine
used on this machine for a purpose (``"rollout"``: GRPO episodes; ``"generate"``: evaluation and the simulator) and
logs why; :func:`build_engine` makes the stand-alone engines (``hf``, ``ctranslate2``, ``llamacpp``, ``openai``).
"""

from __future__ import annotations

import importlib.util
import logging
from typing import Any, Literal, Protocol

import torch

from genenv.llm.engines.ctranslate2 import COMPUTE_TYPES, CTranslate2Engine
from genenv.llm.engines.openai import OpenAIConfig, OpenAIEngine
from genenv.llm.generation import GenerateFn, SamplingConfig, render_chat

__all__ = ["ENGINES", "COMPUTE_TYPES", "Engine", "OpenAIConfig", "build_engine", "engine_chat", "resolve_engine"]

logger = logging.getLogger(__name__)

#: Values of the ``engine`` settings.
ENGINES = ("auto", "hf", "ctranslate2", "vllm", "openai", "llamacpp")

Purpose = Literal["rollout", "generate"]


class Engine(Protocol):
    """A stand-alone generation engine for one policy."""

    name: str

    def generator(self, sampling: SamplingConfig, seed: int | None = None, *, logprobs: bool = False) -> GenerateFn:
        """A :data:`GenerateFn` decoding as ``sampling`` says; ``logprobs``: also return the sampled tokens'
        log-probabilities under the sampling distribution (temperature applied). An engine that enforces JSON
        schemas itself (``llamacpp``) also takes ``schemas``: row ``i`` kept inside ``schemas[i]``."""

    def sync(self, model: Any, *, force: bool = False) -> float:
        """Make the engine generate with ``model``'s current weights (LoRA merged); returns the seconds spent
        (0.0 when the engine already held them)."""


def _ctranslate2_available() -> bool:
    return importlib.util.find_spec("ctranslate2") is not None


def _vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def _llamacpp_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def resolve_engine(requested: str, *, device: str | torch.device, purpose: Purpose) -> tuple[str, str]:
    """The engine to use and why (the reason is logged).

    ``auto`` picks the fastest engine available: vLLM for GRPO rollouts on a CUDA device with vLLM installed,
    CTranslate2 on CPU when it is installed (faster than HF ``generate``; measured: ``results/README.md``), else
    ``hf``. An explicit engine that cannot run here falls back to ``hf`` with the reason: ``ctranslate2`` not
    installed, ``vllm`` without CUDA or vLLM, and ``vllm`` for evaluation or the simulator (genenv drives vLLM only
    through TRL's GRPO integration), and ``llamacpp`` not installed, on a CUDA device, or for GRPO rollouts (it
    returns no log-probabilities for TRL's importance-sampling correction). ``auto`` never picks ``llamacpp``.
    ``openai`` (a server's weights, which genenv cannot train) serves ``generate`` only: for GRPO rollouts it raises
    ``ValueError``.
    """
    if requested not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {requested!r}")
    if requested == "openai" and purpose == "rollout":
        raise ValueError(
            "engine openai cannot play GRPO rollouts: GRPO trains the weights that generate, and an endpoint's are "
            "not genenv's (use it for evaluation and the simulator)"
        )
    cuda = torch.device(device).type == "cuda"
    if requested == "auto":
        if cuda and purpose == "rollout" and _vllm_available():
            choice, reason = "vllm", "auto: CUDA device and vLLM installed (TRL's vLLM integration)"
        elif not cuda and _ctranslate2_available():
            choice, reason = "ctranslate2", "auto: CPU device and ctranslate2 installed (faster than HF generate)"
        elif cuda:
            choice, reason = (
                "hf",
                "auto: CUDA device without vLLM"
                + ("" if purpose == "rollout" else " (vLLM serves GRPO rollouts only)"),
            )
        else:
            choice, reason = "hf", "auto: ctranslate2 is not installed (pip install ctranslate2==4.8.5)"
    elif requested == "ctranslate2" and not _ctranslate2_available():
        choice, reason = "hf", "ctranslate2 requested but not installed (pip install ctranslate2==4.8.5): using hf"
    elif requested == "ctranslate2" and cuda:
        choice, reason = "hf", "ctranslate2 requested on a CUDA device: genenv runs it on CPU only; using hf"
    elif requested == "llamacpp" and purpose == "rollout":
        choice, reason = (
            "hf",
            "llamacpp requested for GRPO rollouts: it returns no log-probabilities for TRL's importance-sampling "
            "correction; using hf",
        )
    elif requested == "llamacpp" and not _llamacpp_available():
        choice, reason = (
            "hf",
            "llamacpp requested but not installed (pip install llama-cpp-python==0.3.36 (compiles llama.cpp)): "
            "using hf",
        )
    elif requested == "llamacpp" and cuda:
        choice, reason = "hf", "llamacpp requested on a CUDA device: genenv runs llama.cpp on CPU only; using hf"
    elif requested == "vllm" and purpose != "rollout":
        choice, reason = "hf", "vllm requested: genenv drives vLLM only for GRPO rollouts (TRL); using hf here"
    elif requested == "vllm" and not (cuda and _vllm_available()):
        choice, reason = (
            "hf",
            "vllm requested but " + ("vLLM is not installed" if cuda else "no CUDA device") + (": using hf"),
        )
    else:
        choice, reason = requested, "requested"
    logger.info("engine for %s: %s (%s)", purpose, choice, reason)
    return choice, reason


def build_engine(
    name: str,
    policy: Any,
    *,
    compute_type: str = "int8",
    logprob_temperature: float = 1.0,
    threads: int | None = None,
    openai: OpenAIConfig | None = None,
    seed: int | None = None,
) -> Engine:
    """A stand-alone engine (``hf``, ``ctranslate2``, ``llamacpp`` or ``openai``: :func:`resolve_engine` first) for
    ``policy``.

    ``compute_type``: CTranslate2's weights, or those of a llama.cpp export (``int8``: Q8_0); ``logprob_temperature``:
    the sampling temperature whose log-probabilities a CTranslate2 engine returns (GRPO's); ``threads``: CTranslate2
    threads (default: torch's) or llama.cpp threads (default 1); ``openai``: the server of an ``openai`` engine
    (``policy`` may then be ``None``; its tokenizer, when given, lets the engine play token-level episodes); ``seed``:
    the sampling seed of a CTranslate2 engine's copies (the other engines take theirs per call).
    """
    if name == "openai":
        if openai is None:
            raise ValueError("engine openai needs the server's settings (base_url, model: the openai config block)")
        return OpenAIEngine(openai, tokenizer=getattr(policy, "tokenizer", None))
    if name == "hf":
        from genenv.llm.engines.hf import HFEngine

        return HFEngine(policy)
    if name == "ctranslate2":
        return CTranslate2Engine(
            policy, compute_type=compute_type, logprob_temperature=logprob_temperature, threads=threads, seed=seed
        )
    if name == "llamacpp":
        from genenv.llm.engines.llamacpp import LlamaCppEngine

        return LlamaCppEngine(policy, compute_type=compute_type, threads=threads or 1)
    raise ValueError(f"no stand-alone engine {name!r} (vllm runs inside TRL's GRPOTrainer)")


def engine_chat(
    engine: Engine,
    tokenizer: Any,
    conversations: list[list[dict[str, Any]]],
    sampling: SamplingConfig,
    seed: int | None = None,
    schemas: list[dict[str, Any]] | None = None,
) -> list[str]:
    """:func:`~genenv.llm.generation.generate_chat` through an engine: each new text up to its end-of-turn token;
    ``schemas``: row ``i`` kept inside the JSON schema ``schemas[i]`` (engines that enforce schemas: ``llamacpp``)."""
    if not conversations:
        return []
    prompts = [tokenizer(render_chat(tokenizer, messages), add_special_tokens=False)["input_ids"]
               for messages in conversations]  # fmt: skip
    constraint = {} if schemas is None else {"schemas": schemas}
    new_ids, _ = engine.generator(sampling, seed=seed, **constraint)(prompts)
    eos = tokenizer.eos_token_id
    cut = [ids[: ids.index(eos)] if eos in ids else ids for ids in new_ids]
    return [text.strip() for text in tokenizer.batch_decode(cut, skip_special_tokens=True)]
