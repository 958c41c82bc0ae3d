"""experiments/curriculum/calibration.py: what a calibration round records from the frozen agent's attempts."""

from __future__ import annotations

import calibration
import pytest

from genenv.benchmarks.base import Task


class _Keys:
    def family(self, task: Task) -> str:
        return task.gold["key"]


def test_a_round_records_each_tasks_success_the_graded_share_and_the_levels():
    tasks = [
        Task(task_id=str(i), benchmark="b", prompt="", gold={"key": key}) for i, key in enumerate(["a@0", "a@4", "b@4"])
    ]
    rewards = [1, 1, 0, 1] + [0, 0, 0, 0] + [1, 0, 0, 0]  # G = 4: success 0.75, 0.0, 0.25
    record = calibration.round_record(_Keys(), tasks, rewards, 4, {"in_band": 2, "r_env": 0.5})
    assert record["p_per_task"] == [0.75, 0.0, 0.25]
    assert record["share_graded"] == pytest.approx(2 / 3)  # 0.75 and 0.25 lie in [0.25, 0.75]
    assert record["mean_distance"] == pytest.approx((0.25 + 0.5 + 0.25) / 3)
    assert record["mixed_groups"] == pytest.approx(2 / 3)
    assert record["levels"] == {"0": 1, "4": 2} and record["simulator"] is None


def test_a_run_continues_only_rounds_made_with_its_settings(tmp_path):
    log = tmp_path / "genenv-s0.jsonl"
    assert calibration.finished_rounds(log, {"tasks": 64, "temperature": 1.0}) == []
    log.write_text('{"round": 0, "tasks": 64, "temperature": 1.0}\n{"round": 1, "tasks": 64, "temperature": 1.0}\n')
    assert [r["round"] for r in calibration.finished_rounds(log, {"tasks": 64, "temperature": 1.0})] == [0, 1]
    with pytest.raises(SystemExit, match=r"round 0 was run with other settings.*temperature.*1\.0, 0\.7"):
        calibration.finished_rounds(log, {"tasks": 64, "temperature": 0.7})
    assert len(log.read_text().splitlines()) == 2  # refused, nothing lost


def test_an_rwr_change_names_the_run_and_only_genenv_takes_one():
    args = calibration.argparse.Namespace(arm="genenv", seed=0, rwr=["learning_rate=1e-3", "epochs=2"])
    assert calibration.rwr_changes(args) == {"learning_rate": 1e-3, "epochs": 2}
    assert calibration.run_name(args) == "genenv-s0-epochs2-learning_rate0.001"
    assert calibration.run_name(calibration.argparse.Namespace(arm="random", seed=3, rwr=None)) == "random-s3"
    with pytest.raises(SystemExit, match="only the genenv arm runs"):
        calibration.rwr_changes(calibration.argparse.Namespace(arm="random", seed=0, rwr=["learning_rate=1e-3"]))
