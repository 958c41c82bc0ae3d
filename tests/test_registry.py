import subprocess
import sys
import textwrap

import pytest

from genenv.benchmarks.base import DataNotFoundError, available_benchmarks, get_benchmark, require_files


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
        import gymnasium as gym
        from genenv import ToolEnv, available_benchmarks, get_benchmark
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
    assert result.stdout.strip() == "1.0"


def test_unknown_benchmark_lists_available():
    with pytest.raises(KeyError, match="apibank"):
        get_benchmark("no-such-bench")
    assert "apibank" in available_benchmarks()


def test_missing_data_error_names_files_and_setting(tmp_path):
    with pytest.raises(DataNotFoundError) as error:
        require_files(tmp_path, ["a.json", "b/c.json"], "toy", "from the toy repo")
    message = str(error.value)
    assert "a.json" in message and "b/c.json" in message and "GENENV_DATA_DIR" in message and "toy repo" in message
