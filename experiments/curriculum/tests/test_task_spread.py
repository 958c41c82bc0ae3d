"""experiments/curriculum/task_spread.py: how many tasks of a half-solved family key lie inside the band."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import task_spread


def _traces(run_dir: Path, tasks: dict[tuple[int, str, str], list[float]]) -> None:
    """On-policy traces of (epoch, task id, family key) -> attempt rewards, and a base trace that must not count."""
    lines = [{"epoch": 0, "source": "base", "family": "a@0", "task": {"task_id": "base"}, "reward": 1.0}]
    for (epoch, task_id, key), rewards in tasks.items():
        lines += [{"epoch": epoch, "source": "on_policy", "family": key, "task": {"task_id": task_id}, "reward": r}
                  for r in rewards]  # fmt: skip
    (run_dir / "pools").mkdir(parents=True)
    (run_dir / "pools" / "traces.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_half_solved_key_of_unanimous_tasks_holds_no_task_inside_the_band(tmp_path):
    _traces(tmp_path, {
        (0, "t0", "a@0"): [0.5, 0.5],  # epoch 0 is left out
        (1, "t1", "a@0"): [1.0, 1.0], (1, "t2", "a@0"): [0.0, 0.0],  # key a@0 at 0.5 from two unanimous tasks
        (1, "t3", "a@1"): [1.0, 0.0],  # key a@1 at 0.5 from one task inside the band
        (2, "t1", "a@0"): [1.0, 1.0],  # the same task id in another epoch is another task; key a@0 at 1.0 there
    })  # fmt: skip
    spread = task_spread.spread(tmp_path, (0.3, 0.7))
    assert (spread["tasks"], spread["half_solved_key_tasks"]) == (4, 3)
    assert spread["in_band"] == pytest.approx(1 / 4) and spread["in_band_of_those"] == pytest.approx(1 / 3)
    assert (spread["none_of_those"], spread["all_of_those"]) == pytest.approx((1 / 3, 1 / 3))


def test_a_run_without_traces_after_epoch_0_is_refused(tmp_path):
    _traces(tmp_path, {(0, "t0", "a@0"): [1.0]})
    with pytest.raises(SystemExit, match="no on-policy traces after epoch 0"):
        task_spread.spread(tmp_path, (0.3, 0.7))
