"""The simulator's RWR update: weighted SFT through LoRA, KL to the disabled-adapter reference, KL cap."""

from __future__ import annotations

import logging
import math

import pytest
import torch

from genenv.curriculum.rwr import RWRConfig, RWRStats, RWRTrainer
from genenv.llm.generation import SamplingConfig, generate_chat, render_chat
from genenv.llm.models import build_tiny_policy

MESSAGES = [
    {"role": "system", "content": "You write tasks."},
    {"role": "user", "content": "One task as JSON."},
]
TEXTS = ['{"task": "book a flight"}', '{"task": "add two numbers"}', '{"task": "check the weather"}', '{"q": "hi"}']


@pytest.fixture(autouse=True)
def one_thread():
    # The tiny model gains nothing from intra-op threads, and on a busy 2-core machine OpenMP
    # oversubscription makes these tests several times slower.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def examples(weights=None, texts=TEXTS):
    weights = [1.0] * len(texts) if weights is None else weights
    return [{"messages": MESSAGES, "completion": text, "weight": w} for text, w in zip(texts, weights, strict=True)]


def make(seed: int = 0, **overrides) -> RWRTrainer:
    # A fresh tiny policy per trainer: wrapping injects LoRA layers into the model in place, so the
    # session fixture must not be used here.
    settings = {"learning_rate": 1e-2, "seed": seed} | overrides
    return RWRTrainer(build_tiny_policy(seed=0), RWRConfig(**settings))


def base_state(model) -> dict[str, torch.Tensor]:
    """The non-LoRA weights, under their names before wrapping."""
    state = model.state_dict().items()
    return {k.replace(".base_layer", ""): v.detach().clone() for k, v in state if "lora_" not in k}


def test_updates_lower_nll_and_raise_kl_from_exact_zero():
    trainer = make()
    data = examples()
    assert trainer.kl_to_reference(data) == 0.0
    before = trainer.completion_nll(data)
    for _ in range(5):
        stats = trainer.train(data)
        assert isinstance(stats, RWRStats)
        assert stats.steps == 1 and stats.examples == 4 and not stats.stopped_early
    after = trainer.completion_nll(data)
    assert sum(after) < sum(before) - 0.1
    assert all(a < b for a, b in zip(after, before, strict=True))
    kl = trainer.kl_to_reference(data)
    assert kl > 0
    assert stats.kl == pytest.approx(kl, rel=1e-4)  # last accepted KL, on the same (single) batch
    assert trainer.step == 5 and not trainer.model.training


def test_micro_batches_give_the_update_of_the_whole_batch():
    """Texts of different lengths (padding differs), weights and the KL term: the same step either way."""
    data = examples(weights=[3.0, 0.5, 1.0, 2.0])
    whole, split = make(micro_batch_size=4, kl_coef=0.5), make(micro_batch_size=1, kl_coef=0.5)
    for _ in range(2):  # the second step has a KL term with a gradient
        a, b = whole.train(data), split.train(data)
        assert a.mean_loss == pytest.approx(b.mean_loss, rel=1e-5)
        assert a.mean_nll == pytest.approx(b.mean_nll, rel=1e-5)
        assert a.kl == pytest.approx(b.kl, rel=1e-4, abs=1e-9)
    for (name, p), q in zip(whole.model.named_parameters(), split.model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6, msg=name)
    assert whole.completion_nll(data) == pytest.approx(split.completion_nll(data), rel=1e-5)


def test_activation_checkpointing_gives_the_same_update():
    """Recomputing the activations in the backward pass changes memory, not the step (KL term included)."""
    data = examples(weights=[3.0, 0.5, 1.0, 2.0])
    kept = make(activation_checkpointing=False, kl_coef=0.5)
    recomputed = make(activation_checkpointing=True, kl_coef=0.5)
    assert recomputed.model.get_base_model().is_activation_checkpointing
    assert not kept.model.get_base_model().is_activation_checkpointing
    for _ in range(2):
        a, b = kept.train(data), recomputed.train(data)
        assert a.mean_loss == pytest.approx(b.mean_loss, rel=1e-6)
    for (name, p), q in zip(kept.model.named_parameters(), recomputed.model.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-6, atol=1e-7, msg=name)


def test_heavy_example_learned_more():
    trainer = make(kl_coef=0.0)
    texts = ["aaaa bbbb aaaa bbbb", "ZQ#7 xw!!9 ~~K"]
    data = examples(weights=(10.0, 1e-6), texts=texts)
    before = trainer.completion_nll(data)
    for _ in range(10):
        trainer.train(data)
    after = trainer.completion_nll(data)
    heavy, light = before[0] - after[0], before[1] - after[1]
    assert heavy > 0.2  # about 0.31 nats
    assert heavy > light + 0.2  # the light one gets slightly worse (about -0.05)


def test_an_example_without_a_weight_is_refused():
    with pytest.raises(ValueError, match="example 0 needs a 'weight'"):
        make().train([{"messages": MESSAGES, "completion": TEXTS[0], "reward": 0.5}])


def test_kl_cap_rolls_back_the_step_and_stops(caplog):
    trainer = make(learning_rate=0.5, max_kl=1e-6, batch_size=2)
    lora_before = trainer.lora_state()
    with caplog.at_level(logging.WARNING, logger="genenv.curriculum.rwr"):
        stats = trainer.train(examples())
    assert stats.stopped_early and stats.steps == 0
    assert stats.rejected_kl is not None and stats.rejected_kl > 1e-6
    assert stats.kl == 0.0  # the kept parameters are the initial ones
    assert "KL cap hit" in caplog.text and "max_kl" in caplog.text
    for name, value in trainer.lora_state().items():
        assert torch.equal(value, lora_before[name]), name
    assert trainer.optimizer.state_dict()["state"] == {}  # optimizer state rolled back too
    assert trainer.kl_to_reference(examples()) == 0.0
    assert trainer.step == 0 and not trainer.model.training


def test_kl_cap_keeps_earlier_steps():
    # A cap that a few steps exceed: the kept steps stay and the KL stays under the cap.
    trainer = make(learning_rate=0.05, max_kl=0.02, batch_size=1, epochs=5, kl_coef=0.0)
    stats = trainer.train(examples())
    assert stats.stopped_early and 0 < stats.steps < 20
    assert stats.kl <= 0.02
    assert trainer.step == stats.steps


def test_reference_and_base_weights_untouched():
    policy = build_tiny_policy(seed=0)
    batch = policy.tokenizer([render_chat(policy.tokenizer, MESSAGES) + TEXTS[0]], return_tensors="pt")
    with torch.no_grad():
        original = policy.model(**batch).logits
    base = base_state(policy.model)
    trainer = RWRTrainer(policy, RWRConfig(learning_rate=1e-2))
    for _ in range(3):
        trainer.train(examples())
    after = base_state(trainer.model.get_base_model())
    assert after.keys() == base.keys()
    for key, value in base.items():
        assert torch.equal(after[key], value), key
    with torch.no_grad():
        with trainer.model.disable_adapter():
            reference = trainer.model(**batch).logits
        adapted = trainer.model(**batch).logits
    assert torch.equal(reference, original)
    assert not torch.allclose(adapted, original)
    assert all("lora_" in name for name, p in trainer.model.named_parameters() if p.requires_grad)


def test_generation_works_on_wrapped_policy():
    trainer = make()
    trainer.train(examples())
    assert trainer.policy.model is trainer.model  # the caller's Policy now holds the PeftModel
    texts = generate_chat(trainer.policy, [MESSAGES, MESSAGES], sampling=SamplingConfig(max_new_tokens=6))
    assert len(texts) == 2 and all(isinstance(t, str) for t in texts)
    assert not trainer.model.training


def test_batched_nll_matches_unpadded_forward():
    trainer = make()
    trainer.train(examples())
    data = examples()
    batched = trainer.completion_nll(data, batch_size=4)
    tok, model = trainer.tokenizer, trainer.model
    for example, value in zip(data, batched, strict=True):
        prompt = tok(render_chat(tok, MESSAGES), add_special_tokens=False)["input_ids"]
        target = tok(example["completion"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        ids = torch.tensor([prompt + target])
        labels = torch.tensor([[-100] * len(prompt) + target])
        with torch.no_grad():
            loss = model(input_ids=ids, labels=labels).loss.item()
        assert value == pytest.approx(loss, abs=1e-4)


def test_save_load_round_trip_and_resume(tmp_path):
    data = examples(weights=(1.0, 2.0, 3.0, 4.0))
    first = make(batch_size=2)
    first.train(data)
    first.save(tmp_path / "ckpt")
    assert (tmp_path / "ckpt" / "adapter" / "adapter_config.json").is_file()

    second = make(seed=1, batch_size=2)  # different LoRA init, overwritten by the checkpoint
    second.load(tmp_path / "ckpt")
    assert second.step == first.step and second.updates == first.updates
    batch = first.tokenizer([render_chat(first.tokenizer, MESSAGES) + TEXTS[1]], return_tensors="pt")
    with torch.no_grad():
        assert torch.equal(first.model(**batch).logits, second.model(**batch).logits)

    second.config.seed = first.config.seed  # same shuffling from here on
    s1, s2 = first.train(data), second.train(data)
    assert s1.mean_loss == s2.mean_loss and s1.kl == s2.kl
    state1, state2 = first.lora_state(), second.lora_state()
    for name, value in state1.items():
        assert torch.equal(value, state2[name]), name


def test_empty_and_bad_input(caplog):
    trainer = make()
    stats = trainer.train([])
    assert stats.steps == 0 and stats.examples == 0 and math.isnan(stats.mean_loss)
    data = examples()
    data[1] = {"messages": MESSAGES, "completion": "   ", "weight": 5.0}
    with caplog.at_level(logging.WARNING, logger="genenv.curriculum.rwr"):
        stats = trainer.train(data)
    assert "empty" in caplog.text
    assert stats.steps == 1 and stats.examples == 3 and stats.skipped == 1
    only_empty = trainer.train([{"messages": MESSAGES, "completion": "", "weight": 1.0}])
    assert only_empty.steps == 0 and only_empty.skipped == 1
    assert math.isnan(trainer.completion_nll(data)[1])
    zero = trainer.train(examples(weights=(0.0, 0.0), texts=TEXTS[:2]))
    assert zero.steps == 0
    with pytest.raises(ValueError, match="weight"):
        trainer.train([{"messages": MESSAGES, "completion": "x"}])
    with pytest.raises(ValueError, match="non-negative"):
        trainer.train([{"messages": MESSAGES, "completion": "x", "weight": -1.0}])


def test_long_examples_are_truncated(caplog):
    trainer = make(max_length=48)
    data = examples(texts=["x" * 100, "short"])
    with caplog.at_level(logging.WARNING, logger="genenv.curriculum.rwr"):
        stats = trainer.train(data)
    assert stats.steps == 1 and "truncated 2 of 2" in caplog.text
    assert all(math.isfinite(v) for v in trainer.completion_nll(data))


def test_config_validation():
    with pytest.raises(ValueError):
        RWRConfig(batch_size=0)
    with pytest.raises(ValueError):
        RWRConfig(max_kl=-1.0)
    assert RWRConfig(target_modules=["q_proj"]).target_modules == ("q_proj",)


def test_without_cap():
    # No cap: no post-step forward (kl is the pre-step value); no cap and no penalty: no reference pass.
    penalised = make(max_kl=None)
    first = penalised.train(examples())
    assert first.steps == 1 and first.kl == 0.0  # measured before the first step
    assert penalised.train(examples()).kl > 0
    plain = make(max_kl=None, kl_coef=0.0, batch_size=2)
    stats = plain.train(examples())
    assert stats.steps == 2 and math.isnan(stats.kl) and not stats.stopped_early
    assert plain.kl_to_reference(examples()) > 0
