import subprocess
import sys
import textwrap
from importlib.metadata import EntryPoint

import gymnasium as gym
import pytest
from toy_benchmark import ToyAdapter

from genenv import ENV_IDS
from genenv.benchmarks.base import (
    _REGISTRY,
    ENTRY_POINT_GROUP,
    DataNotFoundError,
    _load_entry_points,
    available_benchmarks,
    env_id,
    get_benchmark,
    register_benchmark,
    require_files,
)


def test_third_party_benchmark_via_entry_point(tmp_path):
    """A package installed outside genenv advertises an adapter through the entry-point group."""
    (tmp_path / "toybench").mkdir()
    (tmp_path / "toybench" / "__init__.py").write_text(
        textwrap.dedent(
            """
            from genenv.benchmarks.base import BenchmarkAdapter, Score, StepResult, Task

            class EchoAdapter(BenchmarkAdapter):
                name = "echo"
                splits = ("test",)
                max_turns = 3
                def load_tasks(self, split):
                    return [Task("e0", "echo", "Say hi.", {"answer": "hi"}, split)]
                def tools(self, task):
                    return []
                def start(self, task):
                    return None
                def execute(self, state, call):
                    return StepResult("no tools here", error="unknown_tool")
                def score(self, task, trajectory):
                    return Score(float((trajectory.final_answer or "").strip() == task.gold["answer"]))
                def family(self, task):
                    return "echo"
            """
        )
    )
    dist = tmp_path / "toybench-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toybench\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[genenv.benchmarks]\necho = toybench:EchoAdapter\n")
    script = textwrap.dedent(
        """
        import sys
        import gymnasium as gym
        from genenv import ENV_IDS, ToolEnv, available_benchmarks, get_benchmark
        assert ENV_IDS["GenEnv-Echo-v0"] == "echo"
        assert gym.spec("GenEnv-Echo-v0").max_episode_steps == 3  # the adapter's own episode length
        env = gym.make("GenEnv-Echo-v0", task_source="benchmark", data_dir=".")
        env.reset(seed=0)
        print(env.step("hi")[1])
        assert "echo" in available_benchmarks(), available_benchmarks()
        env = ToolEnv("echo", data_dir=".")
        env.reset(seed=0)
        print(env.step("hi")[1])
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], env={"PYTHONPATH": str(tmp_path), "PATH": ""}, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1.0", "1.0"]


def test_an_adapter_without_an_episode_length_is_refused_by_name():
    class NoLength(ToyAdapter):
        name = "no_length"
        max_turns = None

    with pytest.raises(TypeError, match="NoLength must state its episode length as a class attribute max_turns"):
        register_benchmark("no_length")(NoLength)
    assert "no_length" not in available_benchmarks()


BUILT_IN_IDS = {
    "GenEnv-APIBank-v0": "apibank",
    "GenEnv-ALFWorld-v0": "alfworld",
    "GenEnv-ReasoningGym-v0": "reasoning_gym",
    "GenEnv-Bamboogle-v0": "bamboogle",
    "GenEnv-TravelPlanner-v0": "travelplanner",
    "GenEnv-BFCL-v0": "bfcl",
}


def test_every_registered_benchmark_has_its_gymnasium_id():
    assert {env: ENV_IDS[env] for env in BUILT_IN_IDS} == BUILT_IN_IDS
    for env, name in BUILT_IN_IDS.items():
        spec = gym.spec(env)
        assert spec.entry_point == "genenv.envs.tool_env:ToolEnv"
        assert spec.kwargs == {"benchmark": name, "task_source": "simulator"}
    assert {env_id(name) for name in available_benchmarks()} <= set(ENV_IDS)
    assert env_id("my_bench") == env_id("My-Bench") == "GenEnv-MyBench-v0"


@pytest.fixture
def toy_entry_point():
    """The toy benchmark as an installed package would advertise it; unregistered afterwards."""
    yield EntryPoint(name="toy_entry", value="toy_benchmark:ToyAdapter", group=ENTRY_POINT_GROUP)
    _REGISTRY.pop("toy_entry", None)
    ENV_IDS.pop("GenEnv-ToyEntry-v0", None)
    gym.registry.pop("GenEnv-ToyEntry-v0", None)


def test_an_entry_point_benchmark_gets_a_gymnasium_id(toy_entry_point):
    assert "GenEnv-ToyEntry-v0" not in gym.registry
    _load_entry_points([toy_entry_point])
    assert ENV_IDS["GenEnv-ToyEntry-v0"] == "toy_entry" and "toy_entry" in available_benchmarks()
    env = gym.make("GenEnv-ToyEntry-v0", task_source="benchmark", split="train")
    assert isinstance(env.unwrapped.adapter, ToyAdapter)
    env.reset(seed=0, options={"task": ToyAdapter()._task(2, 3, "train")})
    assert env.step('<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>')[0] == '{"result": 5}'
    assert env.step("It is 5.")[1] == 1.0


def test_unknown_benchmark_lists_available():
    with pytest.raises(KeyError, match="apibank"):
        get_benchmark("no-such-bench")
    assert "apibank" in available_benchmarks()


def test_missing_data_error_names_files_and_setting(tmp_path):
    with pytest.raises(DataNotFoundError) as error:
        require_files(tmp_path, ["a.json", "b/c.json"], "toy", "from the toy repo")
    message = str(error.value)
    assert "a.json" in message and "b/c.json" in message and "GENENV_DATA_DIR" in message and "toy repo" in message
