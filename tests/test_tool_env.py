import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from toy_benchmark import ToyAdapter

from genenv.benchmarks.base import Task
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
    assert "gold" not in info["task"] and info["tools"][0]["function"]["name"] == "add"
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


def test_gold_reaches_info_only_when_asked():
    task = ToyAdapter()._task(2, 3, "train")
    hidden = ToolEnv(ToyAdapter(), split="train")
    _, info = hidden.reset(seed=0, options={"task": task})
    assert "gold" not in info["task"] and "gold" not in hidden.step(CALL)[4]["task"]
    shown = ToolEnv(ToyAdapter(), split="train", expose_gold=True)
    _, info = shown.reset(seed=0, options={"task": task})
    assert info["task"]["gold"] == {"sum": 5}
    shown.reset(seed=0, options={"task": info["task"]})  # a task from info replays


def test_action_space_is_what_the_env_accepts():
    env = ToolEnv(ToyAdapter(), split="train", max_action_chars=64)
    assert env.action_space.max_length == 64
    env.action_space.seed(0)
    for _ in range(50):
        env.reset(seed=0)
        action = env.action_space.sample()
        assert env.action_space.contains(action)
        assert env.step(action)[4]["error"] != "action_too_long"
    assert not env.action_space.contains("x" * 65)


def test_calls_beyond_the_per_action_limit_are_not_run():
    env = ToolEnv(ToyAdapter(), split="train", max_calls_per_action=2)
    env.reset(seed=0, options={"task": ToyAdapter()._task(2, 3, "train")})
    observation, _, _, _, info = env.step(CALL * 5)
    assert info["error"] == "too_many_calls" and "5 tool calls; only the first 2 run" in observation
    assert len(env.trajectory.turns[-1].calls) == 2
    with pytest.raises(ValueError, match="max_calls_per_action"):
        ToolEnv(ToyAdapter(), split="train", max_calls_per_action=0)


GOOD = {"task_id": "t", "benchmark": "toy", "prompt": "What is 2 + 3?", "gold": {"sum": 5}}


@pytest.mark.parametrize(
    "options, message",
    [
        ("task", "must be a dict"),
        ({"task": 3}, "must be a Task or a dict, not int"),
        ({"task": ["t", "toy"]}, "must be a Task or a dict, not list"),
        ({"task": {"prompt": "x"}}, "lacks 'task_id', 'benchmark', 'gold'"),
        ({"task": {k: v for k, v in GOOD.items() if k != "gold"}}, "lacks 'gold' .*expose_gold=True"),
        ({"task": {**GOOD, "colour": 1}}, "has no field 'colour'"),
        ({"task": {**GOOD, "metadata": None}}, "'metadata' must be a dict, not NoneType"),
        ({"task": {**GOOD, "metadata": [1]}}, "'metadata' must be a dict, not list"),
        ({"task": {**GOOD, "prompt": 5}}, "'prompt' must be a str, not int"),
        ({"task": {**GOOD, "task_id": 7}}, "'task_id' must be a str, not int"),
        ({"task": {**GOOD, "split": None}}, "'split' must be a str, not NoneType"),
        ({"task": {**GOOD, "source": "web"}}, "'source' must be 'benchmark' or 'generated', not 'web'"),
        ({"task": Task("t", "toy", "x", {"sum": 5}, metadata=None)}, "'metadata' must be a dict"),
        ({"task": {**GOOD, "gold": None}}, "not a toy task: TypeError.*'gold' and 'metadata'"),
        ({"task": {**GOOD, "gold": {}}}, "not a toy task: KeyError: 'sum'"),
    ],
)
def test_reset_with_bad_options_raises_one_value_error(options, message):
    env = ToolEnv(ToyAdapter(), split="train", max_turns=3)
    env.reset(seed=0, options={"task": ToyAdapter()._task(2, 3, "train")})
    env.step(CALL)
    before = (env.task, env._state, list(env.messages), env.np_random.bit_generator.state)
    with pytest.raises(ValueError, match=message):
        env.reset(seed=5, options=options)
    # nothing changed: the episode goes on, and a good reset afterwards works
    assert (env.task, env._state, env.messages, env.np_random.bit_generator.state) == before
    assert env.step("It is 5.")[1] == 1.0
    env.reset(seed=0, options={"task": GOOD})
    assert env.step("5")[1] == 1.0


def test_task_from_dict_reads_what_to_dict_wrote():
    task = ToyAdapter()._task(2, 3, "train")
    assert Task.from_dict(task.to_dict()) == task
    with pytest.raises(ValueError, match="a task must be a dict, not str"):
        Task.from_dict("task")


def test_deepcopy_and_pickle_copy_an_episode_in_progress():
    import copy
    import pickle

    env = ToolEnv(ToyAdapter(), split="train")
    env.reset(seed=0, options={"task": ToyAdapter()._task(2, 3, "train")})
    env.step(CALL)
    for twin in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        assert twin.messages == env.messages and twin.adapter is not env.adapter
        assert twin.step("5")[1] == env.__class__.step(copy.deepcopy(env), "5")[1] == 1.0


def test_an_env_whose_adapter_cannot_be_copied_says_so():
    import copy
    import pickle
    import threading

    adapter = ToyAdapter()
    adapter.session = threading.Lock()  # something that cannot be copied
    env = ToolEnv(adapter, split="train")
    with pytest.raises(TypeError, match="cannot be copied or pickled"):
        copy.deepcopy(env)
    with pytest.raises(TypeError, match="cannot be copied or pickled"):
        pickle.dumps(env)


def test_a_seeded_reset_with_a_given_task_also_drops_the_written_tasks_left():
    from scripted_simulator import ScriptedSimulator

    simulator = ScriptedSimulator(['{"a": 1, "b": 2}', '{"a": 3, "b": 4}'], "small")
    env = ToolEnv(ToyAdapter(), task_source="simulator", simulator=simulator)
    env.reset(seed=0)  # the batch's second task is kept for the next reset
    env.reset(seed=0, options={"task": ToyAdapter()._task(7, 8, "train")})
    assert env.reset()[1]["task"]["prompt"] == "What is 1 + 2?"  # written again from np_random, not the kept one
    env.reset(options={"task": ToyAdapter()._task(7, 8, "train")})  # no seed: the kept task stays
    assert env.reset()[1]["task"]["prompt"] == "What is 3 + 4?"


def test_options_given_with_an_adapter_instance_are_an_error_not_ignored():
    with pytest.raises(ValueError, match=r"adapter options \['data_dir'\] given with an adapter instance"):
        ToolEnv(ToyAdapter(), data_dir="/elsewhere")
    with pytest.raises(ValueError, match=r"adapter options \['scoring'\] given with an adapter instance"):
        ToolEnv(ToyAdapter(), scoring="official")
    assert ToolEnv(ToyAdapter()).adapter.name == ToyAdapter.name
