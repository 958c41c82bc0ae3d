"""The held-out learning curve: stages, intervals over tasks, the paired rise."""

import pytest

from genenv.learning_curve import ENGINE_AGREEMENT, format_curve, held_out_curve, paired_rise


def _metrics(start, warm, *epochs):
    first = {"epoch": 0, "validation_start": {"task_scores": start}, "validation_warm_start": {"task_scores": warm}}
    records = [{**first, "validation": {"task_scores": epochs[0]}}]
    records += [{"epoch": i, "validation": {"task_scores": s}} for i, s in enumerate(epochs[1:], start=1)]
    return records


def test_curve_has_every_stage_in_order_and_resumed_epochs_count_once():
    metrics = _metrics([0, 0, 1, 0], [1, 0, 1, 0], [1, 1, 1, 0], [1, 1, 1, 1])
    metrics.append({"epoch": 1, "validation": {"task_scores": [0, 0, 0, 0]}})  # epoch 1 again, after a resume
    points = held_out_curve(metrics)
    assert [p.stage for p in points] == ["start", "warm start", "epoch 0", "epoch 1"]
    assert [p.score for p in points] == [0.25, 0.5, 0.75, 0.0]
    assert all(p.low <= p.score <= p.high for p in points)


def test_a_consistent_rise_is_above_noise_and_a_flat_one_is_not():
    n = 60
    rising = held_out_curve(_metrics([0.0] * n, [0.0] * n, [1.0] * 30 + [0.0] * 30))
    rise, low, high = paired_rise(rising[0], rising[-1])
    assert rise == pytest.approx(0.5) and low > 0.3 and high <= 0.7
    assert "above noise" in format_curve(rising) and "not above" not in format_curve(rising)
    flat = held_out_curve(_metrics([1.0, 0.0] * 30, [0.0, 1.0] * 30, [1.0, 0.0] * 30))
    rise, low, high = paired_rise(flat[0], flat[1])
    assert rise == 0.0 and low < 0 < high
    assert "not above noise" in format_curve(
        held_out_curve(_metrics([1.0, 0.0] * 30, [0.0, 1.0] * 30, [0.0, 1.0] * 30))
    )


def test_stages_with_different_task_counts_are_refused():
    a, b = held_out_curve(_metrics([0, 1], [0, 1, 1], [1]))[:2]
    with pytest.raises(ValueError, match="different numbers"):
        paired_rise(a, b)


def test_the_rise_over_the_warm_start_is_reported_on_its_own_line():
    """What the epochs add to the supervised warm start is a line of its own: here the warm start alone explains
    half of the rise from the start, and the epochs the other half."""
    n = 60
    points = held_out_curve(_metrics([0.0] * n, [1.0] * 20 + [0.0] * 40, [1.0] * 40 + [0.0] * 20))
    text = format_curve(points)
    assert "rise start -> epoch 0: +0.667" in text
    assert "rise warm start -> epoch 0: +0.333" in text
    no_warm_start = [p for p in points if p.stage != "warm start"]
    assert "warm start ->" not in format_curve(no_warm_start)


def test_the_curve_names_the_engine_that_scored_it_and_what_is_measured_of_it():
    metrics = _metrics([0, 1], [1, 1], [1, 0])
    for key in ("validation_start", "validation_warm_start", "validation"):
        metrics[0][key]["engine"] = "ctranslate2 float32"
    text = format_curve(held_out_curve(metrics))
    assert (
        f"held-out episodes played by ctranslate2 float32 at every stage ({ENGINE_AGREEMENT['ctranslate2 float32']})"
        in text
    )
    metrics[0]["validation"]["engine"] = "hf"  # a run resumed with validation.engine=hf
    lines = format_curve(held_out_curve(metrics)).splitlines()
    assert "  held-out episodes played by ctranslate2 float32 at start, warm start (" in "\n".join(lines)
    assert any(line.startswith("  held-out episodes played by hf at epoch 0") for line in lines)
    assert "played by" not in format_curve(held_out_curve(_metrics([0], [1], [1])))  # runs that did not record it
