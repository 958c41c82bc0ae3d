"""Every Hydra config composes, and the training configs map onto the documented dataclasses."""

import pytest
from hydra import compose, initialize_config_dir

from genenv.benchmarks.base import available_benchmarks
from genenv.config import CONFIG_DIR
from genenv.train import genenv_config

BENCHES = ["alfworld", "apibank", "bamboogle", "bfcl", "reasoning_gym", "travelplanner"]
MODELS = sorted(p.stem for p in (CONFIG_DIR / "model").glob("*.yaml"))
CURRICULA = sorted(p.stem for p in (CONFIG_DIR / "curriculum").glob("*.yaml"))


@pytest.mark.parametrize("config_name", ["config", "paper"])
@pytest.mark.parametrize("bench", BENCHES)
@pytest.mark.parametrize("curriculum", CURRICULA)
def test_training_configs_compose(config_name, bench, curriculum):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(
            config_name, overrides=[f"+bench={bench}", f"curriculum={curriculum}", "model=tiny", "run_dir=/tmp/unused"]
        )
    config = genenv_config(cfg)
    assert config.benchmark == bench and config.curriculum.name == curriculum and config.agent_model == "tiny"
    if config_name == "paper":
        assert (config.epochs, config.tasks_per_epoch, config.curriculum.alpha, config.curriculum.lam) == (
            10,
            64,
            0.5,
            1.0,
        )
    else:  # agent.max_turns: null trains with the benchmark's own episode length
        assert config.agent.max_turns == cfg.bench.max_turns


def test_agent_max_turns_override():
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["+bench=alfworld", "agent.max_turns=3", "run_dir=/tmp/unused"])
    assert genenv_config(cfg).agent.max_turns == 3


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("bench", BENCHES)
def test_evaluate_config_composes(model, bench):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("evaluate", overrides=[f"+bench={bench}", f"model={model}"])
    assert cfg.bench.name == bench and cfg.model.name == model and cfg.bench.split


@pytest.mark.parametrize("bench", BENCHES)
def test_serve_config_composes(bench):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("serve", overrides=[f"+bench={bench}", "port=9000"])
    assert cfg.bench.name == bench and cfg.port == 9000 and cfg.max_action_chars > 0 and cfg.idle_timeout_s > 0


def test_every_builtin_benchmark_has_a_bench_config():
    assert set(BENCHES) <= set(available_benchmarks())


def test_every_yaml_under_configs_is_composed_or_loaded():
    hydra_groups = {"model", "curriculum"}  # bench: made from the adapters (genenv.config.register_bench_configs)
    top_level = {"config", "paper", "evaluate", "serve"}
    for path in CONFIG_DIR.rglob("*.yaml"):
        group = path.parent.relative_to(CONFIG_DIR).as_posix()
        assert (group == "." and path.stem in top_level) or group in hydra_groups | {"accelerate"}, path


@pytest.mark.parametrize("path", sorted((CONFIG_DIR / "accelerate").glob("*.yaml")), ids=lambda p: p.stem)
def test_accelerate_configs_load(path):
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(path))
    assert config.num_processes >= 2 and config.mixed_precision == "bf16" and not config.use_cpu
    if config.distributed_type == "DEEPSPEED":
        assert config.deepspeed_config["zero_stage"] in (2, 3)


@pytest.mark.parametrize("model,few_shot", [("smollm2", "generic"), ("qwen05", "own"), ("tiny", "generic")])
def test_main_job_config(model, few_shot):
    """README's main job: base data and a warm start, the held-out split, the model's own few-shot setting."""
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["+bench=reasoning_gym", f"model={model}", "run_dir=/tmp/unused"])
    config = genenv_config(cfg)
    assert config.base_split == "train" and config.validation.split == "validation"
    assert config.warm_start.max_examples > 0 and config.agent.few_shot == few_shot
    assert config.simulator_model == config.agent_model == model
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["+bench=apibank", "simulator.model=smollm2", "run_dir=/tmp/unused"])
    assert genenv_config(cfg).simulator_model == "smollm2" and genenv_config(cfg).base_split == "train"


@pytest.mark.parametrize(
    "override, message",
    [
        ("coevolution.epochs=abc", "coevolution.epochs must be int, got 'abc'"),
        ("coevolution.epochs=1.5", "coevolution.epochs must be int, got 1.5"),
        ("simulator.batch_size=0", "simulator.batch_size must be at least 1"),
        ("curriculum.band_k=-0.1", "curriculum.band_k must be a number >= 0"),
        ("agent.learning_rate=-1e-5", "agent.learning_rate must be positive"),
        ("agent.num_generations=two", "agent.num_generations must be int"),
        ("warm_start.learning_rate=-1", "warm_start.epochs and warm_start.learning_rate must be > 0"),
        ("rwr.lora_r=1.5", "rwr.lora_r must be int"),
        ("simulator.examples=best", "simulator.examples must be one of 'train', 'in_band', 'scored'"),
    ],
)
def test_bad_settings_stop_before_anything_loads_naming_the_key(override, message):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["+bench=reasoning_gym", "model=tiny", "run_dir=/tmp/unused", override])
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        genenv_config(cfg)


def test_a_split_the_benchmark_lacks_is_named(tmp_path):
    from genenv.coevolution import CoEvolutionTrainer

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=["+bench=reasoning_gym", "model=tiny", f"run_dir={tmp_path}", "validation.split=dev"],
        )
    with pytest.raises(ValueError, match="validation.split='dev': reasoning_gym has the splits test"):
        CoEvolutionTrainer(genenv_config(cfg))


def test_model_few_shot_follows_the_model_config():
    from genenv.config import model_few_shot

    assert model_few_shot("qwen05") == "own" and model_few_shot("smollm2") == "generic"
    assert model_few_shot("/models/some-hf-path") == "generic"


def test_every_default_is_the_same_from_python_and_from_the_command_line():
    """``python -m genenv.train`` and ``GenEnvConfig()`` built in Python train the same run: every setting's default
    is defined once (the dataclasses), and the command line adds only what it is told (the benchmark, the model)."""
    import dataclasses

    from genenv.agents.grpo import GRPOAgentConfig
    from genenv.benchmarks.base import get_benchmark
    from genenv.coevolution import GenEnvConfig

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["+bench=reasoning_gym", "run_dir=/tmp/unused"])
    by_command_line = genenv_config(cfg)
    adapter = get_benchmark("reasoning_gym")
    by_python = GenEnvConfig(
        benchmark="reasoning_gym",
        run_dir="/tmp/unused",
        data_dir=by_command_line.data_dir,  # where GENENV_DATA_DIR points, as the command line reads it
        adapter_options=adapter.bench_defaults()["options"],  # the adapter's keyword defaults, as the bench node says
        agent=GRPOAgentConfig(max_turns=adapter.max_turns),
    )
    # what the trainer runs: the settings left to the benchmark filled in from its adapter
    assert dataclasses.asdict(by_command_line.for_benchmark(adapter)) == dataclasses.asdict(
        by_python.for_benchmark(adapter)
    )
    assert by_python.for_benchmark(adapter).validation.split == "validation"


def test_the_alpha_curriculum_for_any_loop_shares_the_trainers_defaults():
    import dataclasses

    from genenv.curriculum import AlphaCurriculumConfig, CurriculumConfig

    trainer, any_loop = dataclasses.asdict(CurriculumConfig()), dataclasses.asdict(AlphaCurriculumConfig())
    shared = set(trainer) & set(any_loop)
    assert {"alpha", "beta", "band_k", "lam", "stats_window", "generation_rounds"} <= shared
    assert {key: trainer[key] for key in shared} == {key: any_loop[key] for key in shared}


def test_every_setting_of_the_command_line_is_read_by_the_package():
    """Each key ``python -m genenv.train`` accepts names a dataclass field that genenv's code reads (as an attribute
    or by name); a setting that does nothing fails here."""
    import re

    from genenv.train import train_defaults

    source = "\n".join(path.read_text() for path in (CONFIG_DIR.parent).rglob("*.py"))
    unread = []
    for group, settings in train_defaults().items():
        for key in settings:
            definition = re.compile(rf"^\s+{key}: .*=", re.M)
            uses = len(re.findall(rf"\.{key}\b|[\"']{key}[\"']", source))
            if uses == 0 or (uses == 1 and not definition.search(source)):
                unread.append(f"{group}.{key}")
    assert unread == []
