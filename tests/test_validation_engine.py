"""Who plays the held-out episodes of genenv.train: CTranslate2 in float32 where it is installed (auto), HF generate
on request; the run records which, and the converted copy does not stay resident between stages."""

from __future__ import annotations

import pytest
from test_train import tiny_config

from genenv.checkpoints import read_metrics
from genenv.coevolution import CoEvolutionTrainer

pytest.importorskip("ctranslate2")


@pytest.mark.parametrize(("setting", "label"), [("auto", "ctranslate2 float32"), ("hf", "hf")])
def test_held_out_engine_is_recorded_and_released(tmp_path, setting, label):
    trainer = CoEvolutionTrainer(tiny_config(tmp_path, epochs=1, replay_tasks=1, validation_engine=setting))
    trainer.train()
    metrics = read_metrics(tmp_path)[-1]
    assert metrics["validation_start"]["engine"] == metrics["validation"]["engine"] == label
    assert len(metrics["validation"]["task_scores"]) == 2
    engine = trainer._validation_engine
    if setting == "auto":  # its own float32 copy, freed after each stage (the next stage converts again)
        assert engine is not trainer.agent_trainer.engine and engine.compute_type == "float32"
        assert engine._generator is None
    else:  # HF generate on the trained model (these rollouts play on CTranslate2: tests' AGENT)
        assert engine.name == "hf" and engine.policy.model is trainer.agent_trainer.model


def test_an_unknown_held_out_engine_is_refused_by_name(tmp_path):
    with pytest.raises(ValueError, match="validation.engine must be one of auto, hf, ctranslate2, got 'vllm'"):
        tiny_config(tmp_path, validation_engine="vllm")
