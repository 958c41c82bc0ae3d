"""A benchmark without the generation methods trains on its base tasks with curriculum=learnability, loading no
simulator; a curriculum that needs simulator-written tasks is refused before any work, naming what is missing."""

from __future__ import annotations

import logging

import pytest
from test_train import AGENT, grouped
from toy_benchmark import ToyAdapter

from genenv.agents.warm_start import WarmStartConfig
from genenv.benchmarks.base import BenchmarkAdapter, register_benchmark
from genenv.checkpoints import latest_checkpoint
from genenv.coevolution import CoEvolutionTrainer, GenEnvConfig
from genenv.curriculum.sources import GENERATION_METHODS, missing_generation_methods


@register_benchmark("toy_no_generation")
class NoGenerationToy(ToyAdapter):
    """The toy benchmark as a third party writes one without generation: its generation methods are
    ``BenchmarkAdapter``'s own, which raise ``NotImplementedError``."""

    name = "toy_no_generation"
    max_turns = 2
    families = BenchmarkAdapter.families
    generation_context = BenchmarkAdapter.generation_context
    generation_examples = BenchmarkAdapter.generation_examples
    parse_task = BenchmarkAdapter.parse_task
    validate_task = BenchmarkAdapter.validate_task


def toy_config(run_dir, **overrides) -> GenEnvConfig:
    settings = dict(
        benchmark="toy_no_generation",
        run_dir=str(run_dir),
        curriculum="learnability",
        epochs=1,
        tasks_per_epoch=2,
        base_split="train",
        validation_split="test",
        validation_limit=1,
        warm_start=WarmStartConfig(max_examples=2, per_device_train_batch_size=2, gradient_accumulation_steps=1),
        agent_model="tiny",
        simulator_model="tiny",
        agent=AGENT,
    )
    return GenEnvConfig(**grouped({**settings, **overrides}))


@pytest.fixture
def loaded_models(monkeypatch) -> list[str]:
    """Every model name the trainer loads, in order."""
    import genenv.coevolution

    loaded: list[str] = []
    load = genenv.coevolution.load_policy

    def recording_load(name, **kwargs):
        loaded.append(name)
        return load(name, **kwargs)

    monkeypatch.setattr(genenv.coevolution, "load_policy", recording_load)
    return loaded


def test_the_missing_generation_methods_are_named():
    assert missing_generation_methods(NoGenerationToy()) == list(GENERATION_METHODS)
    assert missing_generation_methods(ToyAdapter()) == []


@pytest.mark.parametrize("curriculum", ["genenv", "random", "static", "offline"])
def test_a_curriculum_that_needs_generation_is_refused_before_any_work(tmp_path, monkeypatch, curriculum):
    import genenv.coevolution

    def no_work(*args, **kwargs):
        raise AssertionError("the trainer started working before refusing")

    for step in ("load_policy", "evaluate", "base_tasks"):  # models, held-out scoring, D_train's base data
        monkeypatch.setattr(genenv.coevolution, step, no_work)
    with pytest.raises(ValueError) as refused:
        CoEvolutionTrainer(toy_config(tmp_path, curriculum=curriculum))
    message = str(refused.value)
    assert f"curriculum={curriculum}" in message and "NoGenerationToy" in message
    assert "families, generation_context, generation_examples, parse_task, validate_task" in message
    assert "curriculum=learnability" in message
    assert not (tmp_path / "pools").exists() and latest_checkpoint(tmp_path) is None


def test_it_trains_on_its_base_tasks_with_learnability_and_loads_no_simulator(tmp_path, loaded_models):
    trainer = CoEvolutionTrainer(toy_config(tmp_path))
    assert loaded_models == ["tiny"]  # the agent only
    assert trainer.simulator is None and trainer.simulator_policy is None and trainer.simulator_trainer is None
    (metrics,) = trainer.train()
    train_ids = {task.task_id for task in NoGenerationToy().load_tasks("train")}
    assert set(trainer.task_source.tasks) == train_ids
    assert metrics["fresh_tasks"] == 2 and metrics["proposals"] == 0 and metrics["simulator"] == {}
    assert metrics["agent"]["episodes"] == 4  # 2 tasks x G = 2
    assert metrics["warm_start"]["examples"] == 2 and metrics["validation_start"] and metrics["validation"]
    assert metrics["task_source"]["played"] == 2 and metrics["task_source"]["pool"] == 5
    assert loaded_models == ["tiny"]


def test_without_a_base_split_it_draws_from_the_default_split_and_says_so(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="genenv.curriculum.learnability"):
        trainer = CoEvolutionTrainer(toy_config(tmp_path, base_split=None))
    trainer.lock.release()
    assert set(trainer.task_source.tasks) == {task.task_id for task in NoGenerationToy().load_tasks("train")}
    assert "has no base split" in caplog.text and "default split 'train'" in caplog.text


def test_a_default_split_that_is_the_held_out_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"shares \d+ tasks with the held-out split 'train'"):
        CoEvolutionTrainer(toy_config(tmp_path, base_split=None, validation_split="train"))
