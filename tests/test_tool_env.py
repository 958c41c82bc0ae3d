import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from toy_benchmark import ToyAdapter

from genenv.envs.tool_env import ToolEnv

CALL = '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>'


@pytest.fixture
def env():
    return ToolEnv(ToyAdapter(), split="train", max_turns=3)


def test_spaces_are_text_and_check_env_passes(env):
    assert isinstance(env.observation_space, gym.spaces.Text)
    assert isinstance(env.action_space, gym.spaces.Text)
    check_env(env, skip_render_check=True)


def test_episode_tool_call_then_answer(env):
    obs, info = env.reset(seed=0, options={"task": ToyAdapter()._task(2, 3, "train")})
    assert "What is 2 + 3?" in obs and '"name": "add"' in obs
    assert info["task"]["gold"] == {"sum": 5} and info["tools"][0]["function"]["name"] == "add"
    obs, reward, terminated, truncated, info = env.step(CALL)
    assert obs == '{"result": 5}' and reward == 0.0 and not terminated and not truncated
    assert info["error"] is None
    obs, reward, terminated, truncated, info = env.step("The answer is 5.")
    assert terminated and reward == 1.0 and info["score"] == 1.0
    assert env.trajectory.final_answer == "The answer is 5." and len(env.trajectory.calls) == 1


def test_wrong_answer_scores_zero(env):
    env.reset(options={"task": ToyAdapter()._task(2, 3, "train")})
    _, reward, terminated, _, _ = env.step("It is 6.")
    assert terminated and reward == 0.0


def test_max_turns_truncates_with_score(env):
    env.reset(seed=1)
    for _ in range(2):
        assert env.step(CALL)[3] is False
    _, reward, terminated, truncated, info = env.step(CALL)
    assert truncated and not terminated and "score" in info


@pytest.mark.parametrize(
    "action, kind",
    [
        ("", "empty_action"),
        ("   \n", "empty_action"),
        ("<tool_call>{oops</tool_call>", "malformed_json"),
        ('<tool_call>{"name": "mul", "arguments": {"a": 1, "b": 2}}</tool_call>', "unknown_tool"),
        ('<tool_call>{"name": "add", "arguments": {"a": "two", "b": 2}}</tool_call>', "wrong_type"),
        ("[add(a=__import__('os'), b=1)]", "malformed_call"),
        ("x" * 1_000_000, "action_too_long"),
        (None, "bad_action_type"),
    ],
)
def test_bad_actions_never_raise(env, action, kind):
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["error"] == kind and reward == 0.0 and not terminated
    assert kind in obs or "Error" in obs
    assert env.observation_space.contains(obs)


def test_step_after_end_is_reported_not_raised(env):
    env.reset(seed=0)
    env.step("5")
    _, reward, terminated, _, info = env.step(CALL)
    assert terminated and reward == 0.0 and info["error"] == "episode_over"


def test_observation_is_clipped():
    env = ToolEnv(ToyAdapter(), split="train", max_observation_chars=10)
    env.reset(seed=0)
    obs, *_, info = env.step("<tool_call>{}</tool_call>")
    assert "characters cut" in obs or len(obs) <= 60


def test_seeded_reset_is_reproducible(env):
    first = [env.reset(seed=s)[1]["task"]["task_id"] for s in range(5)]
    assert first == [env.reset(seed=s)[1]["task"]["task_id"] for s in range(5)]


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_random_actions_never_raise(action):
    env = ToolEnv(ToyAdapter(), split="train", max_turns=2)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and 0.0 <= reward <= 1.0
