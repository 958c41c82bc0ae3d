"""The episode belongs to the benchmark: every door plays the adapter's ``max_turns`` unless the user overrides it."""

import subprocess
from pathlib import Path

import gymnasium as gym
import pytest
from conftest import REPO, data_dir
from hydra import compose, initialize_config_dir

import genenv
from genenv.benchmarks.base import get_benchmark_class, registered_episode_steps
from genenv.config import CONFIG_DIR, episode_turns
from genenv.train import genenv_config

BENCHES = ["alfworld", "apibank", "bamboogle", "bfcl", "reasoning_gym", "travelplanner"]
NEEDS = {"alfworld": "alfworld", "bfcl": "bfcl_eval", "reasoning_gym": "reasoning_gym"}  # the extra's module


def _composed(config: str, bench: str, *overrides: str):
    extra = {"config": ["model=tiny", "run_dir=/tmp/unused"], "evaluate": ["model=tiny"], "serve": []}[config]
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        return compose(config, overrides=[f"+bench={bench}", *extra, *overrides])


def _played(config: str, bench: str, *overrides: str) -> int:
    """The episode length ``python -m genenv.evaluate`` / ``genenv.serve`` plays with ``overrides``."""
    cfg = _composed(config, bench, *overrides)
    return episode_turns(cfg, cfg.max_turns)


def _adapter_kwargs(bench: str) -> dict:
    if bench in NEEDS:
        pytest.importorskip(NEEDS[bench])
    return {} if bench == "reasoning_gym" else {"data_dir": str(data_dir(bench))}


@pytest.mark.parametrize("bench", BENCHES)
def test_every_door_plays_the_adapters_episode_length(bench):
    turns = get_benchmark_class(bench).max_turns
    kwargs = _adapter_kwargs(bench)
    env = gym.make(genenv.env_id(bench), task_source="benchmark", **kwargs)
    assert env.spec.max_episode_steps == registered_episode_steps(turns)  # None for a one-turn benchmark
    doors = {
        "gym.make env": env.unwrapped.max_turns,
        "ToolEnv": genenv.ToolEnv(bench, **kwargs).max_turns,
        "train": genenv_config(_composed("config", bench)).agent.max_turns,
        "evaluate": _played("evaluate", bench),
        "serve": _played("serve", bench),
    }
    from genenv.integrations.trl import environment_factory

    doors["trl"] = environment_factory(bench, **kwargs).max_turns
    assert doors == dict.fromkeys(doors, turns)


@pytest.mark.parametrize("bench", ["apibank", "reasoning_gym"])
def test_an_override_reaches_every_door(bench):
    kwargs = _adapter_kwargs(bench)
    assert genenv_config(_composed("config", bench, "bench.max_turns=7")).agent.max_turns == 7
    assert genenv_config(_composed("config", bench, "agent.max_turns=5")).agent.max_turns == 5
    assert _played("evaluate", bench, "max_turns=6") == 6
    assert _played("serve", bench, "bench.max_turns=9") == 9
    env = gym.make(genenv.env_id(bench), task_source="benchmark", max_turns=11, max_episode_steps=11, **kwargs)
    assert env.spec.max_episode_steps == 11 and env.unwrapped.max_turns == 11
    from genenv.integrations.trl import environment_factory

    assert environment_factory(bench, max_turns=3, **kwargs).max_turns == 3


def test_verifiers_plays_the_adapters_episode_length():
    """verifiers lives in its own overlay environment (scripts/setup.sh): its task config leaves the length to the
    env, which takes the adapter's."""
    python = Path(REPO, ".venv-verifiers", "bin", "python")
    if not python.exists():
        pytest.skip("no .venv-verifiers (scripts/setup.sh makes it)")
    script = (
        "from genenv.integrations.verifiers import GenEnvTaskConfig; from genenv import ToolEnv; "
        "turns = GenEnvTaskConfig().max_turns; print(turns, ToolEnv('reasoning_gym', max_turns=turns).max_turns)"
    )
    result = subprocess.run([str(python), "-c", script], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["None", str(get_benchmark_class("reasoning_gym").max_turns)]
