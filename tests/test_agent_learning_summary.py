"""benchmarks/agent_learning.py summary: the verdict's numbers, and the rise with the copies of a question merged."""

from __future__ import annotations

import json

import pytest
from conftest import load_script


def test_copies_of_a_question_are_averaged_into_one_item_in_first_seen_order():
    module = load_script("benchmarks/agent_learning.py")
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
    module = load_script("benchmarks/agent_learning.py")
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
