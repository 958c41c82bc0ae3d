"""Rollout engines: the seam, the CTranslate2 engine on the tiny model (converted for real), weight sync, the
conversion cache, the simulator's fallback, and GRPO's importance-sampling correction of engine log-probs."""

from __future__ import annotations

import gc
import logging
import os

import numpy as np
import pytest
import torch
from conftest import random_lora
from toy_benchmark import ToyAdapter

from genenv.agents.agent import Agent
from genenv.envs.simulator import Simulator
from genenv.envs.tool_env import ToolEnv
from genenv.llm import engines
from genenv.llm.engines import resolve_engine
from genenv.llm.engines.hf import HFEngine, hf_generator
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import build_tiny_policy

pytest.importorskip("ctranslate2")
from genenv.llm.engines.ctranslate2 import CTranslate2Engine  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def lively(seed: int = 1):
    """The tiny random model with its weights scaled up, so greedy text varies with the prompt."""
    policy = build_tiny_policy(seed=seed)
    with torch.no_grad():
        for name, weight in policy.model.named_parameters():
            if "norm" not in name:
                weight.mul_(5.0)
    return policy


def engine(policy, tmp_path, **kwargs) -> CTranslate2Engine:
    return CTranslate2Engine(policy, cache_dir=tmp_path, threads=1, **{"compute_type": "float32", **kwargs})


def ids(policy, texts):
    return [policy.tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]


def cut(rows, policy):
    """Each row up to its first end-of-turn token (HF pads finished rows of a batch; CTranslate2 stops them)."""
    eos = policy.tokenizer.eos_token_id
    return [row[: row.index(eos) + 1] if eos in row else row for row in rows]


PROMPTS = ["hello world", "a much longer prompt, with more bytes in it", "tool"]


# -- choosing an engine ------------------------------------------------------------------------


def test_auto_picks_ctranslate2_on_cpu_and_hf_without_it(monkeypatch, caplog):
    with caplog.at_level(logging.INFO, logger="genenv.llm.engines"):
        assert resolve_engine("auto", device="cpu", purpose="rollout")[0] == "ctranslate2"
    assert "ctranslate2 installed" in caplog.text
    monkeypatch.setattr(engines, "_ctranslate2_available", lambda: False)
    for requested in ("auto", "ctranslate2"):
        name, reason = resolve_engine(requested, device="cpu", purpose="generate")
        assert name == "hf" and "not installed" in reason
    assert resolve_engine("vllm", device="cpu", purpose="rollout")[0] == "hf"
    assert resolve_engine("vllm", device="cpu", purpose="generate")[0] == "hf"
    with pytest.raises(ValueError, match="engine must be one of"):
        resolve_engine("llama.cpp", device="cpu", purpose="generate")


# -- the CTranslate2 engine --------------------------------------------------------------------


def test_greedy_rollouts_match_hf_float32(tmp_path):
    policy = lively()
    adapter = ToyAdapter()
    tasks = adapter.load_tasks("train")[:4]
    sampling = SamplingConfig(max_new_tokens=12)

    def actions(engine_):
        envs = [ToolEnv(adapter, tasks=tasks, max_turns=3, max_action_chars=1) for _ in tasks]
        episodes = Agent(policy, sampling, engine=engine_).rollout(envs, tasks, seed=0)
        return [[turn.action for turn in e.trajectory.turns] for e in episodes]

    reference = actions(HFEngine(policy))
    assert len({tuple(a) for a in reference}) > 1
    assert actions(engine(policy, tmp_path)) == reference
    int8 = engine(policy, tmp_path, compute_type="int8").generator(sampling)(ids(policy, PROMPTS))[0]
    assert all(len(row) > 0 for row in int8)


def test_sampled_log_probs_are_those_of_the_sampling_distribution(tmp_path):
    policy = lively()
    ct2 = engine(policy, tmp_path, logprob_temperature=0.7)
    prompts = ids(policy, PROMPTS)
    new_ids, logprobs = ct2.generator(SamplingConfig(max_new_tokens=10, temperature=0.7), logprobs=True)(prompts)
    for prompt, row, lps in zip(prompts, new_ids, logprobs):
        assert len(row) == len(lps) > 0
        with torch.no_grad():
            logits = policy.model(torch.tensor([prompt + row])).logits[0, len(prompt) - 1 : -1]
        expected = torch.log_softmax(logits / 0.7, -1).gather(1, torch.tensor(row)[:, None])[:, 0]
        assert torch.allclose(torch.tensor(lps), expected, atol=1e-4)
    with pytest.raises(ValueError, match="logprob_temperature"):
        ct2.generator(SamplingConfig(temperature=1.0), logprobs=True)


def test_sync_follows_the_policy_lora_merged(tmp_path):
    policy = lively()
    ct2 = engine(policy, tmp_path)
    sampling = SamplingConfig(max_new_tokens=10)
    prompts = ids(policy, PROMPTS)
    before = ct2.generator(sampling)(prompts)[0]
    assert ct2.sync(policy.model) == 0.0  # unchanged weights: nothing to do
    model = random_lora(policy.model)
    stale = ct2.generator(sampling)(prompts)[0]
    assert ct2.sync(model) > 0.0
    synced = ct2.generator(sampling)(prompts)[0]
    expected = cut(hf_generator(model, policy.tokenizer, sampling)(prompts)[0], policy)
    assert stale == before and synced == expected != before
    assert sum(p.numel() for n, p in model.named_parameters() if "lora_" in n) > 0  # the adapters are intact


def test_conversion_cache_is_keyed_by_the_weights(tmp_path):
    policy = lively()
    engine(policy, tmp_path)
    cached = sorted((tmp_path / "ctranslate2").iterdir())
    engine(policy, tmp_path)
    assert sorted((tmp_path / "ctranslate2").iterdir()) == cached and len(cached) == 1
    with torch.no_grad():
        policy.model.model.layers[0].mlp.up_proj.weight.add_(0.5)
    ct2 = engine(policy, tmp_path)
    assert len(list((tmp_path / "ctranslate2").iterdir())) == 2
    sampling = SamplingConfig(max_new_tokens=10)
    prompts = ids(policy, PROMPTS)
    expected = hf_generator(policy.model, policy.tokenizer, sampling)(prompts)[0]
    assert ct2.generator(sampling)(prompts)[0] == cut(expected, policy)


def test_a_seeded_engine_samples_the_same_tokens_after_the_same_loads(tmp_path):
    """Seeded copies repeat their samples call by call; another seed, or the next load, samples others."""
    policy = lively()
    sampling = SamplingConfig(max_new_tokens=12, temperature=1.0)
    prompts = ids(policy, PROMPTS) * 4

    def samples(seed, loads=1):
        ct2 = engine(policy, tmp_path, seed=seed)
        for _ in range(loads - 1):
            ct2.sync(policy.model, force=True)
        generate = ct2.generator(sampling)
        return [generate(prompts)[0] for _ in range(2)]

    first = samples(3)
    assert first == samples(3)
    assert first[0] != first[1]  # the second call continues the stream
    assert first != samples(4)
    assert first != samples(3, loads=2)


def test_a_conversion_leaves_no_object_frozen_from_collection(tmp_path, monkeypatch):
    """The converter's per-layer collections skip the objects older than the conversion, and only during it."""
    from ctranslate2.converters import TransformersConverter

    frozen_during = []
    convert = TransformersConverter.convert
    monkeypatch.setattr(
        TransformersConverter,
        "convert",
        lambda self, *args, **kwargs: frozen_during.append(gc.get_freeze_count()) or convert(self, *args, **kwargs),
    )
    engine(lively(), tmp_path)
    assert frozen_during and frozen_during[0] > 1000
    assert gc.get_freeze_count() == 0


def test_a_conversion_leaves_none_of_its_copy_to_the_next_full_collection(tmp_path):
    """The converter dismantles its copy of the model into reference cycles; the conversion collects them itself."""

    def models() -> set[int]:
        return {id(o) for o in gc.get_objects() if isinstance(o, torch.nn.Module) and hasattr(o, "lm_head")}

    policy = lively()
    gc.collect()
    gc.disable()  # only the conversion's own collections run
    try:
        before = models()
        engine(policy, tmp_path)
        left = models() - before
    finally:
        gc.enable()
    assert id(policy.model) in before and not left


def test_merged_weights_are_fresh_and_the_others_the_models_own():
    """Only the LoRA-merged weights are copies; a conversion reads the rest in place, and writes none of them."""
    from genenv.llm.engines.weights import merged_state_dict, weights_fingerprint

    model = random_lora(lively().model)
    before = weights_fingerprint(model)
    state = merged_state_dict(model, copy_unmerged=False)
    live = {name: weight for name, weight in model.get_base_model().named_parameters()}
    merged = live["model.layers.0.self_attn.q_proj.base_layer.weight"]
    assert state["model.layers.0.self_attn.q_proj.weight"].data_ptr() != merged.data_ptr()
    assert not torch.equal(state["model.layers.0.self_attn.q_proj.weight"], merged)
    for name in ("model.embed_tokens.weight", "model.layers.0.self_attn.k_proj.weight", "model.norm.weight"):
        assert state[name].data_ptr() == live[name].data_ptr()
    assert weights_fingerprint(model) == before


@pytest.mark.parametrize("scale", [1.0, 0.5])  # at 1 the output layer is the embedding matrix itself
def test_a_float32_conversion_reads_the_models_weights_in_place_and_leaves_them_as_they_were(tmp_path, scale):
    from genenv.llm.engines.ctranslate2 import convert_policy
    from genenv.llm.engines.weights import merged_state_dict, weights_fingerprint

    policy = lively()
    model = random_lora(policy.model)
    before = weights_fingerprint(model)
    config = model.get_base_model().config
    copied = merged_state_dict(model)
    convert_policy(copied, config, policy.tokenizer, tmp_path / "copied", quantization="float32", logit_scale=scale)
    state = merged_state_dict(model, copy_unmerged=False)
    convert_policy(state, config, policy.tokenizer, tmp_path / "model", quantization="float32", logit_scale=scale)
    assert state == {}  # the converter held the only references to the merged weights
    assert weights_fingerprint(model) == before
    files = [(tmp_path / folder / "model.bin").read_bytes() for folder in ("copied", "model")]
    assert files[0] == files[1]  # reading the model's own weights in place converts the same


@pytest.mark.parametrize("compute_type", ["int8", "float32"])
def test_a_sync_leaves_the_trained_model_as_it_was(tmp_path, compute_type):
    """int8 quantization scales the weights it converts in place: the engine hands it copies, never the model's."""
    from genenv.llm.engines.weights import weights_fingerprint

    policy = lively()
    model = random_lora(policy.model)
    before = weights_fingerprint(model)
    ct2 = engine(policy, tmp_path, compute_type=compute_type)
    ct2.sync(model)
    assert weights_fingerprint(model) == before
    assert weights_fingerprint(policy.model) == before


def test_a_batchs_shared_prompt_prefix_runs_once_with_the_same_tokens(tmp_path, monkeypatch):
    """Prompts sharing a prefix pass it as CTranslate2's static prompt; greedy tokens are those of full prompts."""
    from genenv.llm.engines import ctranslate2 as ct2_module

    policy = lively()
    ct2 = engine(policy, tmp_path)
    sampling = SamplingConfig(max_new_tokens=10)
    prefix = "a system prompt and worked exchanges that every request shares; "
    prompts = ids(policy, [prefix + text for text in ("hello world", "tool", "another one")])
    calls = []
    generate_batch = ct2._generator.generate_batch

    class Recording:
        def generate_batch(self, tokens, **kwargs):
            calls.append((tokens, kwargs.get("static_prompt")))
            return generate_batch(tokens, **kwargs)

    ct2._generator = Recording()
    shared = ct2.generator(sampling)(prompts)[0]
    monkeypatch.setattr(ct2_module, "_shared_prefix", lambda rows: 0)
    whole = ct2.generator(sampling)(prompts)[0]
    assert len(calls[0][1]) >= len(ids(policy, [prefix])[0]) - 1 and calls[1][1] is None
    assert all(len(row) >= 1 for row in calls[0][0])
    assert shared == whole == cut(hf_generator(policy.model, policy.tokenizer, sampling)(prompts)[0], policy)


def test_shared_prefix_leaves_every_row_a_token_and_needs_two_rows():
    from genenv.llm.engines.ctranslate2 import _shared_prefix

    assert _shared_prefix([["a", "b", "c"], ["a", "b", "d"]]) == 2
    assert _shared_prefix([["a", "b"], ["a", "b", "c"]]) == 1
    assert _shared_prefix([["a", "b"], ["a", "b"]]) == 1
    assert _shared_prefix([["x"], ["y"]]) == 0
    assert _shared_prefix([["a", "b", "c"]]) == 0


def test_float32_loads_without_ctranslate2s_packed_weight_copy(tmp_path, monkeypatch):
    """float32 switches the packed copy off unless the user set it; int8 leaves CTranslate2's default."""
    monkeypatch.delenv("CT2_PACKED_GEMM", raising=False)
    engine(lively(), tmp_path, compute_type="int8")
    assert "CT2_PACKED_GEMM" not in os.environ
    engine(lively(), tmp_path)
    assert os.environ["CT2_PACKED_GEMM"] == "0"
    monkeypatch.setenv("CT2_PACKED_GEMM", "1")
    engine(lively(), tmp_path)
    assert os.environ["CT2_PACKED_GEMM"] == "1"


# -- the simulator -----------------------------------------------------------------------------


class SchemaToy(ToyAdapter):
    def generation_schema(self, family):
        return {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def test_simulator_constrained_calls_fall_back_to_hf_and_free_calls_use_the_engine(tiny_policy, caplog, monkeypatch):
    import genenv.envs.simulator as simulator_module

    constrained_calls = []
    original = simulator_module.generate_chat

    def recording(*args, **kwargs):
        constrained_calls.append(kwargs.get("allowed_tokens") is not None)
        return original(*args, **kwargs)

    monkeypatch.setattr(simulator_module, "generate_chat", recording)
    sampling = SamplingConfig(max_new_tokens=12)
    on_ct2 = Simulator(tiny_policy, batch_size=2, sampling=sampling, engine="ctranslate2")
    on_hf = Simulator(tiny_policy, batch_size=2, sampling=sampling, engine="hf")
    assert on_ct2.engine_name == "ctranslate2"
    rng = np.random.default_rng(0)
    conversations = [on_hf.messages(SchemaToy(), "small", rng) for _ in range(2)]
    schemas = [SchemaToy().generation_schema("small")] * 2
    with caplog.at_level(logging.INFO, logger="genenv.envs.simulator"):
        constrained = on_ct2.generate(conversations, seed=0, schemas=schemas)
    assert "constrained decoding runs on hf" in caplog.text
    assert constrained == on_hf.generate(conversations, seed=0, schemas=schemas)
    assert constrained_calls == [True, True]  # both ran HF generate under the schema constraint
    assert on_ct2.generate(conversations, seed=0) == on_hf.generate(conversations, seed=0)
    assert constrained_calls == [True, True]  # free calls go through the engines (HF's via hf_generator)


# -- GRPO with engine log-probabilities ---------------------------------------------------------


def grpo_trainer(tmp_path, engine_name="ctranslate2", **overrides):
    from test_grpo import GradedToyAdapter, tiny_config

    from genenv.agents.grpo import GRPOAgentTrainer

    settings = dict(engine=engine_name, engine_compute_type="float32", temperature=0.7, **overrides)
    return GRPOAgentTrainer(build_tiny_policy(0), GradedToyAdapter(), tiny_config(tmp_path, **settings))


def spy_loss_inputs(trainer):
    seen = []
    compute = trainer.trainer._compute_loss

    def spy(model, inputs):
        seen.append({k: v.detach().clone() for k, v in inputs.items() if isinstance(v, torch.Tensor)})
        return compute(model, inputs)

    trainer.trainer._compute_loss = spy
    return seen


def test_grpo_corrects_engine_log_probs_with_trls_importance_sampling(tmp_path):
    trainer = grpo_trainer(tmp_path, engine_sync_every=1)
    assert trainer.engine.name == "ctranslate2"
    seen = spy_loss_inputs(trainer)
    metrics = trainer.train(trainer.adapter.load_tasks("train")[:2], steps=2)
    assert len(seen) == 2
    # step 1 syncs what step 0 trained; a first group whose two sampled answers score alike trains nothing
    # (zero advantages), and then there is nothing to sync
    first_step_trained = bool(seen[0]["advantages"].abs().sum() > 0)
    assert metrics["engine_syncs"] == float(first_step_trained)
    for inputs in seen:
        mask = (inputs["completion_mask"] * inputs["tool_mask"]).bool()
        # old log-probs recomputed by the trained model; the engine's (float32, same weights) agree with them
        assert torch.allclose(inputs["old_per_token_logps"][mask], inputs["sampling_per_token_logps"][mask], atol=1e-3)
        assert torch.allclose(inputs["importance_sampling_ratio"], torch.ones(()), atol=1e-2)
    assert metrics["trl/sampling/sampling_logp_difference/mean"] < 1e-3


def test_grpo_never_uses_engine_log_probs_uncorrected(tmp_path):
    """An engine whose log-probs are off by 0.5 nat per token: TRL's old log-probs must still be the trained
    model's, and the loss must carry the ratio exp(old - engine) (masked beyond clip_max=3: sequence_mask)."""
    trainer = grpo_trainer(tmp_path)
    make = trainer._generator

    def skewed():
        generate = make()

        def run(batch):
            new_ids, logprobs = generate(batch)
            return new_ids, [[lp - 0.5 for lp in row] for row in logprobs]

        return run

    trainer._generator = skewed
    seen = spy_loss_inputs(trainer)
    trainer.train(trainer.adapter.load_tasks("train")[:1], steps=1)
    (inputs,) = seen
    mask = (inputs["completion_mask"] * inputs["tool_mask"]).bool()
    gap = inputs["old_per_token_logps"] - inputs["sampling_per_token_logps"]
    assert torch.allclose(gap[mask], torch.full_like(gap[mask], 0.5), atol=1e-3)
    tokens = mask.sum(-1, keepdim=True).float()
    ratio = torch.exp(0.5 * tokens)
    expected = torch.where(ratio > 3.0, torch.zeros_like(ratio), ratio)
    assert torch.allclose(inputs["importance_sampling_ratio"], expected, rtol=1e-2)


def test_grpo_on_hf_has_no_correction_and_sync_every_n_steps(tmp_path):
    hf = grpo_trainer(tmp_path / "hf", engine_name="hf")
    seen = spy_loss_inputs(hf)
    hf.train(hf.adapter.load_tasks("train")[:1], steps=1)
    assert "importance_sampling_ratio" not in seen[0] and "sampling_per_token_logps" not in seen[0]
    lazy = grpo_trainer(tmp_path / "ct2", engine_sync_every=2)
    seen = spy_loss_inputs(lazy)
    metrics = lazy.train(lazy.adapter.load_tasks("train")[:3], steps=3)
    # syncs at step 0 (weights unchanged since building: no conversion) and step 2, which converts unless
    # steps 0 and 1 both trained nothing (groups whose sampled answers scored alike)
    trained_before_step_2 = any(bool(inputs["advantages"].abs().sum() > 0) for inputs in seen[:2])
    assert len(seen) == 3 and metrics["engine_syncs"] == float(trained_before_step_2)


def test_engines_sample_the_whole_vocabulary(tmp_path):
    """Sampling means the full tempered softmax on every engine, as TRL's GRPO rollouts sample (its ``top_k=0``):
    tokens outside the 50 most likely come up as often as their probability says (HF's own default is top-50)."""
    policy = build_tiny_policy(seed=3)
    prompt = ids(policy, ["hello world"])[0]
    with torch.no_grad():
        logits = policy.model(torch.tensor([prompt])).logits[0, -1]
    tail = set(range(logits.numel())) - set(torch.topk(logits, 50).indices.tolist())
    tail_mass = float(torch.softmax(logits, -1)[list(tail)].sum())
    assert tail_mass > 0.5  # the tiny random model spreads its mass over a vocabulary far larger than 50
    sampling = SamplingConfig(max_new_tokens=1, temperature=1.0)
    for generate in (hf_generator(policy.model, policy.tokenizer, sampling, seed=0),
                     engine(policy, tmp_path).generator(sampling)):  # fmt: skip
        first = [row[0] for row in generate([prompt] * 400)[0]]
        share = sum(token in tail for token in first) / len(first)
        assert abs(share - tail_mass) < 0.1, (share, tail_mass)


def test_hf_rollouts_sample_at_the_agents_temperature(tmp_path):
    """The agent's ``temperature`` reaches the HF engine's rollouts (TRL's generation config), not only its loss."""
    trainer = grpo_trainer(tmp_path, engine_name="hf")
    seen = []
    generate = trainer.model.generate

    def spy(*args, **kwargs):
        seen.append(kwargs["generation_config"])
        return generate(*args, **kwargs)

    trainer.model.generate = spy
    trainer.train(trainer.adapter.load_tasks("train")[:1], steps=1)
    assert seen and all(config.do_sample and config.temperature == 0.7 for config in seen)
