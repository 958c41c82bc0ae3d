"""Every script of ``examples/`` runs as a user runs it, on the tiny model, from a folder outside the checkout."""

import socket
import subprocess
import sys

import pytest
from conftest import REPO, child_env, data_dir


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_example(name: str, *args: str, cwd) -> str:
    command = [sys.executable, str(REPO / "examples" / name), "--model", "tiny", *args]
    result = subprocess.run(command, cwd=cwd, env=child_env(), capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_custom_rl_loop(tmp_path):
    out = run_example("custom_rl_loop.py", "--episodes", "2", "--max-new-tokens", "8", cwd=tmp_path)
    assert [line.split(":")[0] for line in out.splitlines()] == ["episode 0", "episode 1"]


def test_trl_environment_factory(tmp_path):
    data_dir("apibank")
    out = run_example("trl_environment_factory.py", "--steps", "1", "--output-dir", str(tmp_path / "run"), cwd=tmp_path)
    assert "step 1: mean episode reward" in out


def test_alpha_curriculum_inside_trl(tmp_path):
    out = run_example("alpha_curriculum_trl.py", "--steps", "1", "--output-dir", str(tmp_path / "run"), cwd=tmp_path)
    assert "step 1: p_hat" in out


def test_openenv_client(tmp_path):
    pytest.importorskip("openenv")
    command = [sys.executable, str(REPO / "examples" / "openenv_client.py"), "--port", str(free_port())]
    result = subprocess.run(command, cwd=tmp_path, env=child_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "done True, reward 0.0" in result.stdout
