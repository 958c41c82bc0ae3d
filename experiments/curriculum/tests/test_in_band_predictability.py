"""experiments/curriculum/in_band_predictability.py: how well a written expression predicts that its task lands inside
the band."""

from __future__ import annotations

import json
from pathlib import Path

import in_band_predictability
import numpy as np
import pytest


def _run(run_dir: Path, tasks: list[tuple[int, str, str, str, list[float]]]) -> Path:
    """A run folder whose traces hold (epoch, family key, expression, answer, attempt rewards) per task."""
    lines = [{"epoch": 1, "source": "base", "family": "a@0", "task": {"task_id": "b", "gold": {}}, "reward": 1.0}]
    for i, (epoch, key, expression, answer, rewards) in enumerate(tasks):
        task = {"task_id": f"t{i}", "gold": {"expression": expression, "answer": answer}}
        lines += [{"epoch": epoch, "source": "on_policy", "family": key, "task": task, "reward": r} for r in rewards]
    (run_dir / "pools").mkdir(parents=True)
    (run_dir / "pools" / "traces.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run_dir


def test_played_tasks_are_those_after_epoch_0_labelled_by_whether_their_attempts_disagree(tmp_path):
    run = _run(tmp_path, [
        (0, "p@1", "2 * 3", "6", [1.0, 0.0]),  # epoch 0: left out
        (1, "p@1", "2 * 3", "6", [1.0, 0.0]),
        (1, "p@2", "12 * 34", "408", [0.0, 0.0]),
        (2, "p@1", "5 * 5", "25", [1.0, 1.0]),
    ])  # fmt: skip
    assert in_band_predictability.played_tasks(run) == [
        ("p@1", "2 * 3 = 6", True), ("p@2", "12 * 34 = 408", False), ("p@1", "5 * 5 = 25", False),
    ]  # fmt: skip


def test_expression_features():
    features = in_band_predictability.expression_features
    assert features("-( -10 + 1 ) / 3 - 120 = -117") == [
        4, 3, pytest.approx(np.log10(118)), 1.0, 3, 1, 2, 2, 1, 0.0, 1.0,
    ]  # fmt: skip
    assert features("7 * 7 = 49")[-2:] == [1.0, 0.0]
    with pytest.raises(ValueError, match="no operand"):
        features("( ) = 0")


def test_logistic_regression_finds_the_feature_that_decides_the_label():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 2))
    y = (rng.random(400) < 1 / (1 + np.exp(-(0.5 + 2 * x[:, 0])))).astype(float)
    w = in_band_predictability.fit_logistic(x, y, ridge=0.0)
    assert w[0] == pytest.approx(0.5, abs=0.3) and w[1] == pytest.approx(2.0, abs=0.5) and abs(w[2]) < 0.3


def test_ranking_measures_take_ties_in_proportion():
    scores, labels = np.array([0.9, 0.5, 0.5, 0.1]), np.array([1.0, 1.0, 0.0, 0.0])
    assert in_band_predictability.top_share(scores, labels, 0.5) == pytest.approx((1 + 0.5) / 2)
    assert in_band_predictability.auc(scores, labels) == pytest.approx((2 + 1 + 0.5) / 4)


def test_a_key_predictor_fitted_on_the_other_runs_knows_which_key_lands_inside_the_band(tmp_path):
    tasks = [(1, "a@1", "1 + 2", "3", [1.0, 0.0]), (1, "a@2", "10 + 20", "30", [1.0, 1.0])] * 3
    runs = {name: in_band_predictability.played_tasks(_run(tmp_path / name, tasks)) for name in ("r0", "r1")}
    scores, labels = in_band_predictability.leave_one_run_out(runs, in_band_predictability.by_key)
    assert list(labels) == [1.0, 0.0] * 6
    assert all(scores[::2] > scores[1::2])
    assert in_band_predictability.evaluate(scores, labels, resamples=50)["auc"][0] == 1.0


def test_a_folder_without_traces_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="not a run folder"):
        in_band_predictability.played_tasks(tmp_path)
