"""experiments/agent_learning/agent_learning.py summary, compare and grpo-vs-sft: the verdict's numbers, the rise with
the copies of a question merged, two runs read item by item, and GRPO's agents against warm starts on more traces."""

from __future__ import annotations

import json

import agent_learning
import pytest


def test_copies_of_a_question_are_averaged_into_one_item_in_first_seen_order():
    assert agent_learning.merged_copies([1.0, 0.5, 0.0, 1.0], ["a", "b", "a", "c"]) == [0.5, 0.5, 1.0]
    with pytest.raises(ValueError):  # a score without its question is an error, not a silent cut
        agent_learning.merged_copies([1.0, 0.5], ["a"])


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
    questions = agent_learning.held_out_questions(_run(0, [0.0] * 153, [0.0] * 153))
    assert len(questions) == 153 and len(set(questions)) < 153  # the validation split repeats some questions
    seen: set[str] = set()
    after = []
    for question in questions:  # a question's first copy rises to 1, its later copies stay at 0
        after.append(0.0 if question in seen else 1.0)
        seen.add(question)
    for seed in (1, 2):
        (tmp_path / f"t-s{seed}.json").write_text(json.dumps(_run(seed, [0.0] * 153, after)))
    out = tmp_path / "summary.json"
    agent_learning.main(["summary", "t", "--runs-dir", str(tmp_path), "--output", str(out)])
    result = json.loads(out.read_text())
    assert result["warm_start_to_final"]["mean"] == pytest.approx(len(seen) / 153)
    merged = result["distinct_questions"]
    copies = {q: questions.count(q) for q in seen}
    assert merged["items"] == len(seen)
    assert merged["mean"] == pytest.approx(sum(1 / n for n in copies.values()) / len(seen))
    assert merged["low"] <= merged["mean"] <= merged["high"]


def test_compare_reads_two_runs_item_by_item_and_groups_items_by_their_warm_start_score(tmp_path, capsys):
    before = [0.0, 0.0, 0.5, 1.0, 1.0, 1.0]
    (tmp_path / "anchored-s0.json").write_text(json.dumps(_run(0, before, [0.5, 0.0, 0.5, 1.0, 1.0, 1.0])))
    (tmp_path / "free-s0.json").write_text(json.dumps(_run(0, before, [1.0, 0.0, 0.25, 0.5, 1.0, 0.0])))
    agent_learning.main(["compare", "anchored-s0", "free-s0", "--runs-dir", str(tmp_path)])
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
    (tmp_path / "a-s0.json").write_text(json.dumps(_run(0, [0.0] * 3, [1.0] * 3)))
    (tmp_path / "b-s0.json").write_text(json.dumps(_run(0, [0.0] * 4, [1.0] * 4)))
    with pytest.raises(SystemExit, match="not scored on the same held-out items"):
        agent_learning.main(["compare", "a-s0", "b-s0", "--runs-dir", str(tmp_path)])
    with pytest.raises(SystemExit, match="no such run"):
        agent_learning.main(["compare", "a-s0", "c-s0", "--runs-dir", str(tmp_path)])


def _scored(seed: int, before: list[float], after: list[float], warm_start: int) -> dict:
    return {**_run(seed, before, after), "warm_start_examples": warm_start}


def test_grpo_vs_sft_pairs_each_seed_grpo_after_with_the_larger_warm_start_item_by_item(tmp_path):
    n = 40  # per seed: GRPO's agent solves items 0-19 (and 20-21 on seed 2), the 128-trace warm start items 0-15
    grpo = {1: [1.0] * 20 + [0.0] * 20, 2: [1.0] * 22 + [0.0] * 18}
    sft = {1: [1.0] * 16 + [0.0] * 24, 2: [1.0] * 16 + [0.0] * 24}
    for seed in (1, 2):
        (tmp_path / f"few-s{seed}.json").write_text(json.dumps(_scored(seed, [0.0] * n, grpo[seed], 32)))
        (tmp_path / f"more-s{seed}.json").write_text(json.dumps(_scored(seed, sft[seed], [0.5] * n, 128)))
    out = tmp_path / "grpo_vs_sft.json"
    agent_learning.main(
        ["grpo-vs-sft", "--grpo", "few", "--sft", "more", "--runs-dir", str(tmp_path), "--output", str(out)]
    )
    result = json.loads(out.read_text())
    assert result["seeds"] == [1, 2]
    assert result["grpo_after"] == pytest.approx((20 + 22) / 2 / n)
    assert result["sft_more"] == pytest.approx(16 / n)
    assert result["difference"] == pytest.approx((4 + 6) / 2 / n)
    assert [s["difference"] for s in result["per_seed"]] == pytest.approx([4 / n, 6 / n])
    assert 0 < result["low"] < result["difference"] < result["high"]
    assert result["draws"] == "exact" and result["low_mc_error"] == result["high_mc_error"] == 0  # 0/1 scores
    assert result["warm_start_examples"] == {"grpo": 32, "sft": 128}
    assert result["seed_level"]["seeds"] == 2 and result["seed_level"]["sign_flip_p"] == 0.5
    decided = agent_learning.grpo_vs_sft_verdict([4 / n, 6 / n], result["low"], result["high"])
    assert decided == "GRPO from 32 traces ends above SFT on 128 traces"
    stated = agent_learning.stated_verdict("", result["low"], result["high"], result["seed_level"])
    assert result["verdict"] == decided + stated
    fourth = result["outside_the_verdict"]
    assert fourth["grpo_from_more_sft"] == 0.5
    assert fourth["grpo_from_more_sft_minus_grpo_after"]["mean"] == pytest.approx(0.5 - 42 / 2 / n)


def test_grpo_vs_sft_refuses_other_seeds_and_other_scoring(tmp_path):
    (tmp_path / "few-s1.json").write_text(json.dumps(_scored(1, [0.0] * 3, [1.0] * 3, 32)))
    (tmp_path / "more-s2.json").write_text(json.dumps(_scored(2, [0.0] * 3, [1.0] * 3, 128)))
    with pytest.raises(SystemExit, match="the comparison needs the same seeds"):
        agent_learning.main(["grpo-vs-sft", "--grpo", "few", "--sft", "more", "--runs-dir", str(tmp_path)])
    greedy = {**_scored(1, [0.0] * 3, [1.0] * 3, 128), "eval": "greedy"}
    (tmp_path / "more-s2.json").unlink()
    (tmp_path / "more-s1.json").write_text(json.dumps(greedy))
    with pytest.raises(SystemExit, match="not scored on the same held-out items the same way"):
        agent_learning.main(["grpo-vs-sft", "--grpo", "few", "--sft", "more", "--runs-dir", str(tmp_path)])


def test_grpo_vs_sft_judges_warm_starts_that_played_no_grpo_and_leaves_out_the_fourth_cell(tmp_path):
    n = 20
    for seed in (1, 2, 3):
        (tmp_path / f"few-s{seed}.json").write_text(json.dumps(_scored(seed, [0.0] * n, [1.0] * 10 + [0.0] * 10, 32)))
        more = {**_scored(seed, [1.0] * 10 + [0.0] * 10, None, 128), "episodes": 0}  # --episodes 0: no GRPO
        (tmp_path / f"more-s{seed}.json").write_text(json.dumps(more))
    out = tmp_path / "grpo_vs_sft.json"
    agent_learning.main(
        ["grpo-vs-sft", "--grpo", "few", "--sft", "more", "--runs-dir", str(tmp_path), "--output", str(out)]
    )
    result = json.loads(out.read_text())
    assert result["difference"] == 0 and result["low"] == result["high"] == 0
    assert result["verdict"].startswith("GRPO from 32 traces ends where SFT on 128 traces ends")
    assert "outside_the_verdict" not in result
