"""The experiment driver end to end with the tiny model: runs, skips what finished, rebuilds the report."""

import os
import subprocess
import sys

from conftest import REPO, data_dir

TINY = [
    "model=tiny", "coevolution.epochs=1", "coevolution.tasks_per_epoch=1", "coevolution.simulator_batch_size=2",
    "coevolution.simulator_max_new_tokens=8", "coevolution.validation_limit=2", "agent.num_generations=2",
    "agent.max_new_tokens=8", "warm_start.max_examples=2", "agent.per_device_train_batch_size=2",
    "agent.gradient_accumulation_steps=1", "coevolution.base_limit=4",
]  # fmt: skip


def _driver(tmp_path, action, *args):
    command = [sys.executable, "benchmarks/curriculum_experiment.py", action, "reasoning_gym",
               "--runs-root", str(tmp_path / "runs"), "--results-root", str(tmp_path / "results"), *args]  # fmt: skip
    environment = {**os.environ, "GENENV_DATA_DIR": str(data_dir("apibank").parent)}
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, env=environment)


def test_driver_runs_skips_finished_runs_and_rebuilds_the_report(tmp_path):
    first = _driver(tmp_path, "run", "--curricula", "offline", "--seeds", "3", "--jobs", "1", "--set", *TINY)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "1 runs to go: offline-s3" in first.stdout and "offline-s3: exit 0" in first.stdout
    copied = tmp_path / "results" / "reasoning_gym" / "runs" / "offline-s3.jsonl"
    assert copied.exists() and '"seed": 3' in copied.read_text()
    again = _driver(tmp_path, "run", "--curricula", "offline", "--seeds", "3", "--set", *TINY)
    assert "0 runs to go" in again.stdout
    (tmp_path / "runs").rename(tmp_path / "gone")  # the report is rebuilt from the committed copies alone
    report = _driver(tmp_path, "report")
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "results" / "reasoning_gym" / "report.md").read_text()
    assert "| offline | [3] |" in text and (tmp_path / "results" / "reasoning_gym" / "held_out.png").exists()
