"""Seeded resets: the same seed gives the same task and observation on every registered env, simulator-written tasks
included, and Gymnasium's ``check_env`` passes on each benchmark's id as registered (the tiny model as simulator)."""

from __future__ import annotations

import re
from typing import Any

import gymnasium as gym
import pytest
from conftest import REPO
from gymnasium.utils.env_checker import check_env
from toy_benchmark import ToyAdapter

import genenv
from genenv.benchmarks.base import DataNotFoundError
from genenv.envs.simulator import Simulator
from genenv.envs.tool_env import ToolEnv
from genenv.llm.generation import SamplingConfig

BENCHMARKS = ["apibank", "alfworld", "bfcl", "bamboogle", "travelplanner", "reasoning_gym"]


class WrittenToy(ToyAdapter):
    """The toy benchmark with a generation schema, so the tiny constrained model writes tasks it accepts."""

    def generation_schema(self, family: str) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        }


def tiny_simulator(policy: Any, *, batch_size: int, max_new_tokens: int, num_examples: int = 2) -> Simulator:
    return Simulator(
        policy,
        batch_size=batch_size,
        num_examples=num_examples,
        sampling=SamplingConfig(max_new_tokens=max_new_tokens, temperature=1.0),
    )


def test_a_seed_replays_the_simulator_written_task_and_the_resets_after_it(tiny_policy):
    simulator = tiny_simulator(tiny_policy, batch_size=8, max_new_tokens=128)
    env = ToolEnv(WrittenToy(), task_source="simulator", simulator=simulator)

    def episode_starts(seed: int) -> list[tuple[str, dict]]:
        first = env.reset(seed=seed)
        return [first, *(env.reset() for _ in range(2))]

    played = episode_starts(3)
    assert played[0][1]["task_origin"] == "simulator" and played[0][1]["task"]["source"] == "generated"
    assert episode_starts(3) == played  # the task, observation and info, and the unseeded resets after it
    other = ToolEnv(WrittenToy(), task_source="simulator", simulator=simulator)
    assert other.reset(seed=3) == played[0]  # another env of the same simulator: the same task
    prompts = {env.reset(seed=seed)[1]["task"]["prompt"] for seed in range(4)}
    assert len(prompts) > 1  # other seeds, other tasks


def test_an_unseeded_reset_takes_the_next_written_task_as_before(tiny_policy):
    simulator = tiny_simulator(tiny_policy, batch_size=8, max_new_tokens=128)
    env = ToolEnv(WrittenToy(), task_source="simulator", simulator=simulator)
    env.reset(seed=3)
    kept = list(env._generated)
    assert kept, "the seed's batch left no second valid task"
    written = len(env.generation_log)
    _, info = env.reset()
    assert info["task"]["task_id"] == kept[0].task_id and len(env.generation_log) == written  # no new batch


def test_seeded_resets_without_a_model_replay_the_first_task_of_the_batch():
    from scripted_simulator import ScriptedSimulator

    simulator = ScriptedSimulator(['{"a": 1, "b": 2}', '{"a": 3, "b": 4}'], "small")
    env = ToolEnv(ToyAdapter(), task_source="simulator", simulator=simulator)
    assert env.reset(seed=0)[1]["task"]["prompt"] == "What is 1 + 2?"
    assert env.reset(seed=0)[1]["task"]["prompt"] == "What is 1 + 2?"  # not the batch's second task
    assert env.reset()[1]["task"]["prompt"] == "What is 3 + 4?"
    assert len(env.generation_log) == 4


def _registered_env(name: str, simulator: Simulator) -> gym.Env:
    """``gym.make`` of benchmark ``name``'s id as registered, the simulator aside; skips when its extra or data is
    missing."""
    try:
        env = gym.make(genenv.env_id(name), simulator=simulator)
    except ImportError as error:
        pytest.skip(f"{name}: its extra is not installed ({error})")
    except (DataNotFoundError, FileNotFoundError) as error:
        pytest.skip(f"{name}: no data ({error})")
    assert env.unwrapped.task_source == "simulator"
    return env


@pytest.mark.parametrize("name", BENCHMARKS)
def test_check_env_passes_on_every_registered_id(name, tiny_policy):
    # reasoning-gym's short schema lets the tiny model write tasks it accepts; for the others it writes too little to
    # close a task (a short budget keeps the test quick), and reset plays a fallback task, seeded as well
    tokens, batch = (200, 2) if name == "reasoning_gym" else (16, 1)
    env = _registered_env(name, tiny_simulator(tiny_policy, batch_size=batch, max_new_tokens=tokens, num_examples=1))
    check_env(env, skip_render_check=True)
    observation, info = env.reset(seed=11)
    assert env.reset(seed=11) == (observation, info)
    if name == "reasoning_gym":
        assert info["task_origin"] == "simulator"


def test_the_documented_default_split_is_the_one_gym_make_plays():
    """docs/environments.md's table of each benchmark's default split matches ``gym.make``."""
    text = (REPO / "docs" / "environments.md").read_text()
    rows = dict(re.findall(r"^\s*\| `GenEnv-(\w+)-v0` \| `([\w-]+)` \|", text, flags=re.MULTILINE))
    assert len(rows) == len(BENCHMARKS)
    checked = 0
    for name in BENCHMARKS:
        env_id = genenv.env_id(name)
        try:
            env = gym.make(env_id, task_source="benchmark")
        except (ImportError, DataNotFoundError, FileNotFoundError):
            continue
        assert rows[env_id.removeprefix("GenEnv-").removesuffix("-v0")] == env.unwrapped.split, env_id
        checked += 1
    assert checked
