"""GenEnv-APIBank-v0 end to end: the registered env, generated tasks, and the real embedded model."""

import json
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from conftest import child_env, data_dir
from gymnasium.utils.env_checker import check_env
from scripted_simulator import ScriptedSimulator

import genenv  # noqa: F401  (registers the env ids)
from genenv.agents.agent import Agent
from genenv.envs.simulator import Simulator
from genenv.envs.tool_env import ToolEnv
from genenv.llm.generation import SamplingConfig

CALCULATOR_TASK = {
    "api": "Calculator",
    "request": "How much is (12+8)*3?",
    "gold_call": {"name": "Calculator", "arguments": {"formula": "(12+8)*3"}},
}


@pytest.fixture(autouse=True)
def _data():
    data_dir("apibank")


def test_check_env_with_tiny_simulator(tiny_policy):
    simulator = Simulator(tiny_policy, batch_size=2, sampling=SamplingConfig(max_new_tokens=8, temperature=1.0))
    env = gym.make("GenEnv-APIBank-v0", simulator=simulator, simulator_attempts=1)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.unwrapped.generation_log, "the simulator was asked for tasks"


@pytest.mark.parametrize(
    "scoring, action",
    [
        ("official", "API-Request: [Calculator(formula='(12+8)*3')]"),
        ("genenv", '<tool_call>{"name": "Calculator", "arguments": {"formula": "(12+8)*3"}}</tool_call>'),
    ],
)
def test_generated_task_is_validated_and_played(scoring, action):
    simulator = ScriptedSimulator([json.dumps(CALCULATOR_TASK), "not json at all"], "Calculator")
    env = gym.make("GenEnv-APIBank-v0", simulator=simulator, max_turns=3, scoring=scoring)
    obs, info = env.reset(seed=0, options=None)
    assert info["task_origin"] == "simulator" and info["task"]["source"] == "generated"
    assert "(12+8)*3" in obs and info["family"] == "Calculator"
    rejected = [r for r in env.unwrapped.generation_log if r["task"] is None]
    assert len(rejected) == 1 and rejected[0]["reject_reason"].startswith("unparsable")
    _, reward, terminated, _, info = env.step(action)
    assert terminated and reward == 1.0 and info["score_breakdown"]["buckets"] == ["CORRECT"]


def test_generated_task_with_failing_gold_call_is_rejected():
    bad = dict(
        CALCULATOR_TASK, request="What is 2+x?", gold_call={"name": "Calculator", "arguments": {"formula": "2+x"}}
    )
    simulator = ScriptedSimulator([json.dumps(bad)], "Calculator")
    env = gym.make("GenEnv-APIBank-v0", simulator=simulator, simulator_attempts=2, split="level-1-api")
    _, info = env.reset(seed=0)
    assert info["task_origin"] == "benchmark_fallback"
    assert all(r["reject_reason"].startswith("invalid") for r in env.unwrapped.generation_log)


BAD_ACTIONS = {
    "genenv": [
        ('<tool_call>{"name": "NoSuchApi", "arguments": {}}</tool_call>', "unknown_tool"),
        ('<tool_call>{"name": "Calculator", "arguments": {"formula": "1+1", "x": 1}}</tool_call>', "unknown_argument"),
        ("<tool_call>{'name': 'Calculator'}</tool_call>", "malformed_json"),
    ],
    "official": [
        ("API-Request: [NoSuchApi()]", "unknown_tool"),
        ("[Calculator(formula='1+1', x='1')]", "unknown_argument"),
        # one line: the second call's parameters are read as the first call's
        ("[Calculator(formula='1+1')] then [GetUserToken(username='a')]", "unknown_argument"),
    ],
}


@pytest.mark.parametrize("scoring", ["official", "genenv"])
def test_benchmark_tasks_and_bad_actions(scoring):
    env = gym.make("GenEnv-APIBank-v0", task_source="benchmark", split="level-1-api", expose_gold=True, scoring=scoring)
    _, info = env.reset(seed=3)
    assert info["task_origin"] == "benchmark" and info["task"]["split"] == "level-1"
    for action, kind in BAD_ACTIONS[scoring]:
        env.reset(seed=3, options={"task": info["task"]})
        _, reward, _, _, step_info = env.step(action)
        assert step_info["error"] == kind and reward == 0.0


@pytest.mark.slow
def test_embedded_model_plays_one_episode_and_simulates():
    from genenv.llm.models import load_policy

    policy = load_policy("smollm2")
    env = gym.make("GenEnv-APIBank-v0", task_source="benchmark", split="level-1-api", max_turns=3)
    (episode,) = Agent(policy, SamplingConfig(max_new_tokens=96)).rollout([env.unwrapped], seed=0)
    assert 1 <= len(episode.trajectory.turns) <= 3 and 0.0 <= episode.reward <= 1.0
    assert "api_total" in episode.info["score_breakdown"]
    simulator = Simulator(policy, batch_size=2, sampling=SamplingConfig(max_new_tokens=128, temperature=0.8))
    proposals = simulator.propose(env.unwrapped.adapter, rng=np.random.default_rng(0))
    assert len(proposals) == 2 and all(p.task is not None or p.reject_reason for p in proposals)


def test_a_level_1_sample_takes_one_output_as_the_official_evaluation_does():
    """A call the evaluator cannot read is wrong, not retried; a level-3 chain keeps the env's turns."""
    env = gym.make("GenEnv-APIBank-v0", task_source="benchmark", split="level-1-api", max_turns=4, scoring="genenv")
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step('<tool_call>{"name": broken</tool_call>')
    assert (reward, terminated, truncated) == (0.0, False, True) and info["error"] == "malformed_json"
    # official: text without "[ApiName(...)]" on one line is the sample's output, with no API call in it
    env = gym.make("GenEnv-APIBank-v0", task_source="benchmark", split="level-1-api", max_turns=4)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("API-Request:\n[ModifyRegistration(\nappointment_id='34567890')]")
    assert (reward, terminated) == (0.0, True) and info["score_breakdown"]["buckets"] == ["NO_API_CALL"]
    env = gym.make("GenEnv-APIBank-v0", task_source="benchmark", split="level-3", max_turns=4, scoring="genenv")
    env.reset(seed=0)
    _, _, terminated, truncated, _ = env.step('<tool_call>{"name": broken</tool_call>')
    assert not terminated and not truncated


def test_a_copied_env_goes_on_from_where_the_episode_was(tmp_path):
    """``copy.deepcopy`` and ``pickle`` copy a level-3 episode in progress (its world, the ToolSearcher): a copy gets
    its searcher's embedder (MiniLM: an ONNX session) again on first use, in this process or another, and original
    and copies, stepped apart, answer the same actions the same way."""
    import copy
    import pickle

    env = ToolEnv("apibank", split="level-3", max_turns=20)
    task = env.benchmark_tasks[0]
    (gold,) = env.adapter.gold_actions(task)
    env.reset(options={"task": task})
    for action in gold[:2]:
        env.step(action)
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    assert all(twin._state.searcher._embedder is None and twin.adapter is not env.adapter for twin in copies)
    (tmp_path / "env.pkl").write_bytes(pickle.dumps(env))
    # a search the embedder ranks (not an API name), then the rest of the gold trajectory
    rest = ["API-Request: [ToolSearcher(keywords='send a reminder by email')]", *gold[2:]]
    runs = [[list(twin.step(action)[:4]) for action in rest] for twin in (env, *copies)]
    assert runs[0] == runs[1] == runs[2] and "EmailReminder" in runs[0][0][0]
    assert runs[0][-1][2] and runs[0][-1][1] > 0.0
    script = (
        "import json, pickle, sys\n"
        f"env = pickle.loads(open({str(tmp_path / 'env.pkl')!r}, 'rb').read())\n"
        f"print(json.dumps([list(env.step(action)[:4]) for action in {rest!r}]))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], env=child_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout) == runs[0]
