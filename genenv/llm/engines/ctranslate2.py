"""The CTranslate2 engine: CPU generation from a converted copy of the policy's weights (int8 or float32).

Conversion: the policy's current weights (LoRA adapters merged, the model left untouched) are loaded into a
throw-away copy of the architecture and handed to ``ctranslate2.converters.TransformersConverter`` (whose
loaders dismantle the model they convert). The first conversion of a set of weights is cached under
``<genenv cache>/ctranslate2/<key>``, the key a hash of the weights, the tokenizer's vocabulary, the
quantization, the log-probability temperature and the CTranslate2 version, so a stale conversion is never used;
syncs after training steps convert into a temporary folder (new weights are never seen twice).

Log-probabilities: CTranslate2 reports the log-probability of a sampled token under the *untempered*
distribution, while TRL's importance-sampling correction compares against ``log_softmax(logits / T)``. The
engine therefore divides the output projection of its copy by ``logprob_temperature`` and samples at
``temperature / logprob_temperature``: the distribution is unchanged and the reported log-probabilities are
those of the sampling distribution (greedy decoding is unaffected by the scale).
"""

from __future__ import annotations

import gc
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from genenv.llm.engines.weights import merged_state_dict, weights_fingerprint, weights_key
from genenv.llm.generation import GenerateFn, SamplingConfig
from genenv.machine import release_freed_memory

__all__ = ["COMPUTE_TYPES", "CTranslate2Engine", "convert_policy"]

logger = logging.getLogger(__name__)

#: CTranslate2 compute types genenv offers (``engine_compute_type``).
COMPUTE_TYPES = ("int8", "float32")

_FORMAT = 1  # bump when the conversion changes, to retire every cached folder

#: CTranslate2's switch for a second, packed copy of the weights for its GEMM. float32 loads set it off (unless it is
#: set already): the copy added 280 MB to SmolLM2-135M's 540 MB and gave no measured speed-up, while int8 decoded
#: about 15% faster with it. CTranslate2 reads it once, when a process loads its first model.
_PACKED_GEMM = "CT2_PACKED_GEMM"


def _shadow_model(config: Any, state: dict[str, torch.Tensor], logit_scale: float, *, quantized: bool) -> Any:
    """A throw-away model of ``config``'s architecture holding ``state``, its output projection (untied) times
    ``logit_scale``: a tensor of its own, unless the conversion only reads it (float32 at scale 1)."""
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        shadow = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    head = state.get("lm_head.weight")
    if head is None:  # tied: the output projection is the embedding matrix
        head = state["model.embed_tokens.weight"]
    missing, unexpected = shadow.load_state_dict(
        {k: v for k, v in state.items() if k != "lm_head.weight"}, assign=True, strict=False
    )
    missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        raise RuntimeError(f"conversion for CTranslate2: missing={missing[:5]} unexpected={unexpected[:5]}")
    if logit_scale != 1.0 or quantized:
        head = head * logit_scale
    shadow.lm_head.weight = torch.nn.Parameter(head, requires_grad=False)
    return shadow.eval()


def _converter(shadow: Any, tokenizer: Any, config_dir: Path) -> Any:
    from ctranslate2.converters import TransformersConverter

    class _InMemoryConverter(TransformersConverter):
        """TransformersConverter over a model already in memory (``config_dir`` holds only its config)."""

        def load_model(self, model_class: Any, model_name_or_path: str, **kwargs: Any) -> Any:
            return shadow

        def load_tokenizer(self, tokenizer_class: Any, model_name_or_path: str, **kwargs: Any) -> Any:
            return tokenizer

        def _load(self) -> Any:
            spec = super()._load()
            if spec.config.bos_token is None:  # CTranslate2 needs a string; generation never uses it here
                spec.config.bos_token = tokenizer.pad_token or tokenizer.eos_token
            return spec

    return _InMemoryConverter(str(config_dir))


def convert_policy(
    state: dict[str, torch.Tensor],
    config: Any,
    tokenizer: Any,
    output_dir: Path,
    *,
    quantization: str,
    logit_scale: float = 1.0,
) -> Path:
    """Write the CTranslate2 model of ``state`` (a :func:`merged_state_dict`) to ``output_dir`` (must not exist).

    ``state`` is emptied: the converter then holds the only references to the merged weights, and frees each layer's
    as it goes. A quantized conversion scales the tensors it reads in place: give it a state of copies.
    """
    with tempfile.TemporaryDirectory(prefix="genenv-ct2-config-") as config_dir:
        config = config.__class__.from_dict(config.to_dict())
        config.tie_word_embeddings = False
        config.save_pretrained(config_dir)
        with _collections_skip_older_objects():
            shadow = _shadow_model(config, state, logit_scale, quantized=quantization != "float32")
            state.clear()
            _converter(shadow, tokenizer, Path(config_dir)).convert(str(output_dir), quantization=quantization)
            del shadow
            gc.collect()  # the dismantled copy's reference cycles: young objects, so this collection is quick
    return output_dir


@contextmanager
def _collections_skip_older_objects() -> Iterator[None]:
    """Garbage collections inside the block scan only the objects made inside it (``gc.freeze``).

    CTranslate2's loaders run a full collection after every layer they convert; in a training process, whose
    millions of objects each collection would walk, that made up most of a conversion's time. What the block leaves
    as cyclic garbage must be collected inside it: after it, that garbage waits for the next full collection, which a
    process with millions of objects runs rarely (each conversion left 220 MB of SmolLM2's copy behind).
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _conversion_key(
    state: dict[str, torch.Tensor], config: Any, tokenizer: Any, quantization: str, logit_scale: float
) -> str:
    import ctranslate2

    header = {"ctranslate2": ctranslate2.__version__, "quantization": quantization, "logit_scale": logit_scale}
    return weights_key(state, config, tokenizer, {"format": _FORMAT, **header})


def _length_groups(batch: list[list[int]], span: int) -> list[list[int]]:
    """Row indices grouped by prompt length, each group's lengths within ``span`` tokens.

    CTranslate2 prefills a batch only up to its shortest prompt and feeds the rest of every longer prompt one
    token per decoding step: a group whose lengths differ by less than the new tokens it generates (``span``)
    costs at most that many extra steps, fewer than a call of its own would.
    """
    groups: list[list[int]] = []
    for i in sorted(range(len(batch)), key=lambda i: len(batch[i])):
        if groups and len(batch[i]) - len(batch[groups[-1][0]]) <= span:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def _shared_prefix(rows: list[list[str]]) -> int:
    """Length of the longest token prefix all ``rows`` share, leaving every row at least one token of its own.

    CTranslate2 runs such a prefix (its ``static_prompt``) once for the batch instead of once a row: the held-out
    prompts share their system prompt and worked exchanges, most of each prompt.
    """
    if len(rows) < 2:
        return 0
    limit = min(len(row) for row in rows) - 1
    first = rows[0]
    for position in range(limit):
        token = first[position]
        if any(row[position] != token for row in rows):
            return position
    return max(limit, 0)


class CTranslate2Engine:
    """Generation with ``ctranslate2.Generator`` on CPU from a converted copy of a policy.

    Args:
        policy: the :class:`~genenv.llm.models.Policy`; its current weights are converted at once.
        compute_type: ``"int8"`` (weights quantized at conversion) or ``"float32"``.
        logprob_temperature: the temperature whose log-probabilities :meth:`generator` reports (see the module
            docstring); sampling at any other temperature stays correct.
        threads: CTranslate2's OpenMP threads (default: ``torch.get_num_threads()``).
        cache_dir: root of genenv's cache (default: that of :func:`~genenv.llm.models.load_policy`). The first
            conversion is cached, except the tiny test model's when no ``cache_dir`` is given (it converts in well
            under a second, and tests build many).
        seed: makes sampling reproducible. CTranslate2's worker threads seed their random generators when a copy
            loads (``ctranslate2.set_random_seed`` does not reach them afterwards), so every load seeds them with
            ``seed`` plus the number of loads before it: the same calls after the same syncs sample the same tokens.
            ``None``: unseeded.
    """

    name = "ctranslate2"

    def __init__(
        self,
        policy: Any,
        *,
        compute_type: str = "int8",
        logprob_temperature: float = 1.0,
        threads: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        seed: int | None = None,
    ) -> None:
        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute_type must be one of {', '.join(COMPUTE_TYPES)}, got {compute_type!r}")
        if logprob_temperature <= 0:
            raise ValueError(f"logprob_temperature must be positive, got {logprob_temperature}")
        from genenv.llm.models import _default_cache_root

        self.tokenizer = policy.tokenizer
        self.compute_type = compute_type
        self.logprob_temperature = float(logprob_temperature)
        self.threads = threads or torch.get_num_threads()
        self.cache_root = Path(cache_dir).expanduser() if cache_dir is not None else _default_cache_root()
        self.seed = seed
        self._loads = 0
        self._generator: Any = None
        self._fingerprint: tuple | None = None
        eos = policy.model.generation_config.eos_token_id  # where HF generate stops: an id or a list of ids
        self._eos = sorted({self.tokenizer.eos_token_id, *(eos if isinstance(eos, list) else [eos])} - {None})
        self.sync(policy.model, cached=cache_dir is not None or policy.name != "tiny")

    # -- weights ----------------------------------------------------------------------------------
    def sync(self, model: Any, *, force: bool = False, cached: bool = False) -> float:
        """Convert ``model``'s current weights and load them, unless the engine holds them already.

        ``cached``: look the conversion up in (and add it to) the cache; syncs during training skip the cache.
        Returns the seconds spent (0.0 when nothing changed).
        """
        fingerprint = weights_fingerprint(model)
        if not force and fingerprint == self._fingerprint:
            return 0.0
        start = time.perf_counter()
        self._generator = self._fingerprint = None  # the old copy's memory is free for the new one
        # CTranslate2's quantization scales the weights it reads in place: only a float32 conversion reads the
        # model's own tensors
        state = merged_state_dict(model, copy_unmerged=self.compute_type != "float32")
        config = (model.get_base_model() if hasattr(model, "get_base_model") else model).config
        quantization = self.compute_type
        scale = 1.0 / self.logprob_temperature
        if cached:
            folder = self._cached(state, config, quantization, scale)
            del state  # converted: its source goes before the copy loads
            release_freed_memory()
            generator = self._load(folder)
        else:
            with tempfile.TemporaryDirectory(prefix="genenv-ct2-") as tmp:
                folder = convert_policy(
                    state, config, self.tokenizer, Path(tmp) / "model", quantization=quantization, logit_scale=scale
                )
                del state
                release_freed_memory()
                generator = self._load(folder)
        self._generator, self._fingerprint = generator, fingerprint
        seconds = time.perf_counter() - start
        logger.info("ctranslate2 %s engine loaded the policy's weights in %.1f s", self.compute_type, seconds)
        return seconds

    def _load(self, folder: Path) -> Any:
        import ctranslate2

        if self.compute_type == "float32":
            os.environ.setdefault(_PACKED_GEMM, "0")
        if self.seed is not None:
            ctranslate2.set_random_seed(self.seed + self._loads)
        self._loads += 1
        return ctranslate2.Generator(str(folder), device="cpu", compute_type=self.compute_type,
                                     intra_threads=self.threads)  # fmt: skip

    def _cached(self, state: dict[str, torch.Tensor], config: Any, quantization: str, scale: float) -> Path:
        key = _conversion_key(state, config, self.tokenizer, quantization, scale)
        final = self.cache_root / "ctranslate2" / key
        if (final / "model.bin").is_file():
            return final
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / f".{key}.tmp-{uuid.uuid4().hex}"
        try:
            convert_policy(state, config, self.tokenizer, tmp, quantization=quantization, logit_scale=scale)
            try:
                os.replace(tmp, final)
            except OSError:  # another process put the same conversion in place first
                if not (final / "model.bin").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        logger.info("ctranslate2 conversion cached at %s", final)
        return final

    def unload(self) -> None:
        """Free the converted copy; the next :meth:`sync` converts the weights again (what a caller does between
        rare uses of the engine, so the copy does not stay resident beside training)."""
        self._generator = None
        self._fingerprint = None

    # -- generation -------------------------------------------------------------------------------
    def generator(self, sampling: SamplingConfig, seed: int | None = None, *, logprobs: bool = False) -> GenerateFn:
        """A :data:`GenerateFn`. ``seed`` is ignored: the engine's own ``seed`` seeds each loaded copy's sampling
        (see the class)."""
        options: dict[str, Any] = {
            "max_length": sampling.max_new_tokens,
            "include_prompt_in_result": False,
            "end_token": self._eos,
            "return_end_token": True,
        }
        if sampling.temperature > 0:
            options.update(
                sampling_topk=0,  # the whole vocabulary
                sampling_topp=sampling.top_p,
                sampling_temperature=sampling.temperature / self.logprob_temperature,
            )
        else:
            options.update(sampling_topk=1)
        if logprobs and sampling.temperature > 0 and sampling.temperature != self.logprob_temperature:
            raise ValueError(
                f"this engine reports log-probabilities at temperature {self.logprob_temperature}, "
                f"not {sampling.temperature}: build it with logprob_temperature={sampling.temperature}"
            )

        def generate(batch: list[list[int]]) -> tuple[list[list[int]], list[list[float]] | None]:
            ids: list[list[int]] = [[] for _ in batch]
            steps: list[list[float]] = [[] for _ in batch]
            for group in _length_groups(batch, sampling.max_new_tokens):
                extra: dict[str, Any] = {}
                if logprobs:
                    extra = {
                        "return_scores": True,
                        "callback": lambda step, group=group: steps[group[step.batch_id]].append(step.log_prob),
                    }
                tokens = [self.tokenizer.convert_ids_to_tokens(batch[i]) for i in group]
                shared = _shared_prefix(tokens)
                if shared:
                    extra.update(static_prompt=tokens[0][:shared], cache_static_prompt=False)
                    tokens = [row[shared:] for row in tokens]
                for i, result in zip(group, self._generator.generate_batch(tokens, **options, **extra)):
                    ids[i] = list(result.sequences_ids[0])
            if not logprobs:
                return ids, None
            for row, (new, lps) in enumerate(zip(ids, steps)):
                if len(lps) != len(new):
                    raise RuntimeError(f"ctranslate2 returned {len(new)} tokens but {len(lps)} log-probs (row {row})")
            return ids, steps

        return generate
