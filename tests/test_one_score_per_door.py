"""One score per task, whichever door plays it: the same answers to the same reasoning-gym task earn the same reward
from ``gym.make``, TRL's ``environment_factory``, verifiers, ``genenv.serve``, ``genenv.train`` and
``genenv.evaluate``; and a benchmark without tools advertises none."""

import json
import subprocess
from pathlib import Path

import gymnasium as gym
import pytest
from conftest import REPO
from hydra import compose, initialize_config_dir

import genenv
from genenv.config import CONFIG_DIR, official_adapter
from genenv.envs.tool_env import ToolEnv
from genenv.train import compose_setup

pytest.importorskip("reasoning_gym")
TASK = genenv.get_benchmark("reasoning_gym").load_tasks("test")[5]
GOLD = TASK.gold["answer"]
#: a worked answer, a bare one (no answer tags: unanswered in the default worked format) and a wrong one
ANSWERS = [f"3 + 4 = 7\n<answer>{GOLD}</answer>", str(GOLD), "<answer>-1</answer>"]


def played(env: ToolEnv, answer: str) -> float:
    env.reset(options={"task": TASK})
    return env.step(answer)[1]


def by_gym_make() -> list[float]:
    env = gym.make("GenEnv-ReasoningGym-v0", task_source="benchmark").unwrapped
    return [played(env, answer) for answer in ANSWERS]


def by_trl() -> list[float]:
    from genenv.integrations.trl import environment_factory, episode_reward, task_dataset

    Env = environment_factory("reasoning_gym")
    (row,) = task_dataset(Env.adapter, [TASK])
    rewards = []
    for answer in ANSWERS:
        env = Env()
        env.reset(**row)
        rewards += episode_reward([[{"role": "assistant", "content": answer}]], environments=[env])
    return rewards


def by_config(config: str) -> list[float]:
    """What ``genenv.evaluate`` / ``genenv.serve`` play: the composed config's adapter, scored officially."""
    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose(config, overrides=["+bench=reasoning_gym"])
    return [played(ToolEnv(official_adapter(cfg), tasks=[TASK]), answer) for answer in ANSWERS]


def by_serve_environment() -> list[float]:
    pytest.importorskip("openenv")
    from genenv.integrations.openenv import GenEnvAction, ToolEnvEnvironment

    with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("serve", overrides=["+bench=reasoning_gym"])
    env = ToolEnvEnvironment(official_adapter(cfg), [TASK], split="test")
    rewards = []
    for answer in ANSWERS:
        env.reset(task_id=TASK.task_id)
        rewards.append(env.step(GenEnvAction(text=answer)).reward)
    return rewards


def by_train() -> list[float]:
    _, adapter, _ = compose_setup(["+bench=reasoning_gym", "model=tiny", "run_dir=/tmp/unused"])
    return [played(ToolEnv(adapter, tasks=[TASK]), answer) for answer in ANSWERS]


def by_verifiers() -> list[float]:
    python = Path(REPO, ".venv-verifiers", "bin", "python")
    if not python.exists():
        pytest.skip("no .venv-verifiers (scripts/setup.sh makes it)")
    script = (
        "import json, sys\n"
        "from genenv.envs.tool_env import score_actions\n"
        "from genenv.integrations.verifiers import official_adapter\n"
        "from genenv import Task\n"
        "task, answers = Task.from_dict(json.loads(sys.argv[1])), json.loads(sys.argv[2])\n"
        "print(json.dumps([score_actions(official_adapter('reasoning_gym', None), task, [a]) for a in answers]))\n"
    )
    args = [str(python), "-c", script, json.dumps(TASK.to_dict()), json.dumps(ANSWERS)]
    result = subprocess.run(args, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def test_the_same_answers_score_the_same_by_every_door():
    doors = {
        "gym.make": by_gym_make(),
        "trl": by_trl(),
        "evaluate": by_config("evaluate"),
        "serve": by_serve_environment(),
        "train": by_train(),
        "verifiers": by_verifiers(),
    }
    assert doors["gym.make"] == [1.0, 0.0, 0.0]
    assert doors == dict.fromkeys(doors, doors["gym.make"])


def test_a_benchmark_without_tools_advertises_none_to_trl():
    from toy_benchmark import ToyAdapter

    from genenv.integrations.trl import environment_factory

    def methods(env_class: type) -> set[str]:
        return {name for name in dir(env_class) if not name.startswith("_") and callable(getattr(env_class, name))}

    assert methods(environment_factory("reasoning_gym")) == {"reset"}
    assert methods(environment_factory(ToyAdapter())) == {"reset", "call_tool"}
