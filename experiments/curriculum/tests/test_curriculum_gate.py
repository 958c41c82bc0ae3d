"""experiments/curriculum/gate.py: the testbed gate's criteria (a) graded success and (b) a ladder, per key."""

from __future__ import annotations

from gate import gate


def _row(per_key: dict[str, tuple[float, float]]) -> dict:
    keys = {k: {"solved": s, "within_task_correlation": icc} for k, (s, icc) in per_key.items()}
    return {"temperature": 0.7, "within_task_correlation": 0.6, "per_key": keys}


def test_graded_keys_over_two_levels_with_low_icc_and_a_ladder_pass():
    result = gate(_row({"a@0": (0.7, 0.4), "a@1": (0.4, 0.5), "b@1": (0.3, 0.45), "b@4": (0.02, 0.9)}))
    assert result["a_graded_success"]["passed"] and result["b_ladder"]["passed"]
    assert result["a_graded_success"]["graded_keys"] == ["a@0", "a@1", "b@1"]  # b@4 (0.02) is not graded
    assert result["a_graded_success"]["mean_within_key_icc"] == (0.4 + 0.5 + 0.45) / 3


def test_high_icc_too_few_graded_keys_or_no_ladder_fail():
    high_icc = gate(_row({"a@0": (0.7, 0.6), "a@1": (0.4, 0.6), "b@1": (0.3, 0.5), "b@4": (0.0, 1.0)}))
    assert not high_icc["a_graded_success"]["passed"] and high_icc["b_ladder"]["passed"]
    one_level = gate(_row({"a@1": (0.5, 0.1), "b@1": (0.5, 0.1), "c@1": (0.5, 0.1), "c@2": (0.95, 0.1)}))
    assert not one_level["a_graded_success"]["passed"]  # three graded keys, all at level 1
    assert not one_level["b_ladder"]["passed"]  # nothing at or below 0.05
