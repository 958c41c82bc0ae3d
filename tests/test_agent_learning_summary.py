"""experiments/agent_learning/agent_learning.py summary and compare: the verdict's numbers, the rise with the copies of a question
merged, and two runs read item by item."""

from __future__ import annotations

import json

import pytest
from conftest import load_script


def test_copies_of_a_question_are_averaged_into_one_item_in_first_seen_order():
    module = load_script("experiments/agent_learning/agent_learning.py")
    assert module.merged_copies([1.0, 0.5, 0.0, 1.0], ["a", "b", "a", "c"]) == [0.5, 0.5, 1.0]
    with pytest.raises(ValueError):  # a score without its question is an error, not a silent cut
        module.merged_copies([1.0, 0.5], ["a"])


def _run(seed: int, before: list[float], after: list[float]) -> dict:
    return {
        "seed": seed,
        "bench": "reasoning_gym",
        "model": "smollm2",
        "answer_format": "worked",
        "eval": "mean4",
        "eval_temperature": 0.7,
        "agent": {"temperature": 0.7},
        "overrides": {"agent": {"temperature": 0.7}},
        "episodes": 64,
        "held_out_before": before,
        "held_out_after": after,
        "seconds_per_step": 1.0,
        "wall_seconds": 10.0,
        "peak_rss_mb": 100.0,
        "load_average": [1.0, 1.0, 1.0],
    }


def test_summary_reports_the_rise_over_items_and_over_distinct_questions(tmp_path):
    module = load_script("experiments/agent_learning/agent_learning.py")
    questions = module.held_out_questions(_run(0, [0.0] * 153, [0.0] * 153))
    assert len(questions) == 153 and len(set(questions)) < 153  # the validation split repeats some questions
    seen: set[str] = set()
    after = []
    for question in questions:  # a question's first copy rises to 1, its later copies stay at 0
        after.append(0.0 if question in seen else 1.0)
        seen.add(question)
    for seed in (1, 2):
        (tmp_path / f"t-s{seed}.json").write_text(json.dumps(_run(seed, [0.0] * 153, after)))
    out = tmp_path / "summary.json"
    module.main(["summary", "t", "--runs-dir", str(tmp_path), "--output", str(out)])
    result = json.loads(out.read_text())
    assert result["warm_start_to_final"]["mean"] == pytest.approx(len(seen) / 153)
    merged = result["distinct_questions"]
    copies = {q: questions.count(q) for q in seen}
    assert merged["items"] == len(seen)
    assert merged["mean"] == pytest.approx(sum(1 / n for n in copies.values()) / len(seen))
    assert merged["low"] <= merged["mean"] <= merged["high"]


def test_compare_reads_two_runs_item_by_item_and_groups_items_by_their_warm_start_score(tmp_path, capsys):
    module = load_script("experiments/agent_learning/agent_learning.py")
    before = [0.0, 0.0, 0.5, 1.0, 1.0, 1.0]
    (tmp_path / "anchored-s0.json").write_text(json.dumps(_run(0, before, [0.5, 0.0, 0.5, 1.0, 1.0, 1.0])))
    (tmp_path / "free-s0.json").write_text(json.dumps(_run(0, before, [1.0, 0.0, 0.25, 0.5, 1.0, 0.0])))
    module.main(["compare", "anchored-s0", "free-s0", "--runs-dir", str(tmp_path)])
    result = json.loads(capsys.readouterr().out)
    anchored, free = result["anchored-s0"], result["free-s0"]
    assert anchored["rise"] == pytest.approx(0.5 / 6) and (anchored["up"], anchored["down"]) == (1, 0)
    assert (free["up"], free["down"]) == (1, 3)
    assert free["by_warm_start_score"] == {
        "none": {"items": 2, "mean": 0.5, "of_rise": pytest.approx(1 / 6)},
        "some": {"items": 1, "mean": -0.25, "of_rise": pytest.approx(-0.25 / 6)},
        "all": {"items": 3, "mean": pytest.approx(-0.5), "of_rise": pytest.approx(-1.5 / 6)},
    }
    assert result["rise_minus_reference"]["mean"] == pytest.approx(0.5 / 6 - (1.0 - 0.25 - 1.5) / 6)
    assert result["same_warm_start_scores"] is True


def test_compare_refuses_runs_scored_on_other_items(tmp_path):
    module = load_script("experiments/agent_learning/agent_learning.py")
    (tmp_path / "a-s0.json").write_text(json.dumps(_run(0, [0.0] * 3, [1.0] * 3)))
    (tmp_path / "b-s0.json").write_text(json.dumps(_run(0, [0.0] * 4, [1.0] * 4)))
    with pytest.raises(SystemExit, match="not scored on the same held-out items"):
        module.main(["compare", "a-s0", "b-s0", "--runs-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="no such run"):
        module.main(["compare", "a-s0", "c-s0", "--runs-dir", str(tmp_path)])
