"""experiments/agent_learning/agent_learning.py: every branch of the confirmatory verdict and of the GRPO-against-
more-SFT verdict, their boundaries and exact wording, decided on synthetic runs whose per-item rises vary."""

from __future__ import annotations

import json

import agent_learning
import pytest

#: the exact wording of each branch: a change to any of them must be a deliberate change of this test
RISE = "GRPO raises the agent above its warm start"
GOAL_MET = RISE + "; the issue's goal (+0.05) is met"
SHORT = RISE + "; short of the issue's goal (+0.05)"
NULL = "null: the interval contains 0"
NOT_EVERY_SEED = "null: above 0 on average, not on every seed"
HARM = "harm: the interval lies below 0"
SEEDS_DO_NOT_EXCLUDE = (
    "; the t-test over the 3 seeds does not exclude 0 (3 seeds do not resolve the spread between them)"
)
SEEDS_EXCLUDE = "; the t-test over the 3 seeds excludes 0, the bootstrap interval does not"


def _items(up: int, down: int, n: int = 160) -> tuple[list[float], list[float]]:
    """A run of ``n`` items scored as the mean of 4 samples: before 0.5 on every item; after, ``up`` items a sample
    higher, ``down`` a sample lower (so its items' rises vary and the bootstrap has a spread)."""
    return [0.5] * n, [0.75] * up + [0.25] * down + [0.5] * (n - up - down)


def _summary(tmp_path, moves: list[tuple[int, int]], items=_items) -> dict:
    for seed, (up, down) in enumerate(moves):
        before, after = items(up, down)
        run = {
            "seed": seed,
            "bench": "apibank",  # no reasoning-gym question merging: the verdict alone
            "model": "qwen05",
            "eval": "mean4",
            "eval_temperature": 0.7,
            "agent": {"temperature": 0.7},
            "overrides": {},
            "episodes": 64,
            "held_out_before": before,
            "held_out_after": after,
            "seconds_per_step": 1.0,
            "wall_seconds": 1.0,
            "peak_rss_mb": 1.0,
            "load_average": [1.0, 1.0, 1.0],
        }
        (tmp_path / f"v-s{seed}.json").write_text(json.dumps(run))
    out = tmp_path / "summary.json"
    agent_learning.main(["summary", "v", "--runs-dir", str(tmp_path), "--output", str(out)])
    return json.loads(out.read_text())


@pytest.mark.parametrize(
    ("moves", "expected"),
    [
        ([(70, 20), (66, 20), (68, 20)], GOAL_MET),  # rises +0.078, +0.072, +0.075: interval above 0, seeds agree
        ([(40, 20), (38, 20), (39, 20)], SHORT),  # +0.031, +0.028, +0.030
        ([(30, 30), (31, 29), (29, 31)], NULL),  # 0, +0.003, -0.003: interval and seeds across 0
        ([(20, 70), (20, 66), (20, 68)], HARM),
        ([(60, 20), (64, 20), (20, 22)], NOT_EVERY_SEED + SEEDS_DO_NOT_EXCLUDE),  # one seed -0.003
        ([(100, 20), (22, 20), (40, 20)], GOAL_MET + SEEDS_DO_NOT_EXCLUDE),  # +0.125, +0.003, +0.031: seeds spread
        ([(80, 76), (81, 76), (80, 75)], NULL + SEEDS_EXCLUDE),  # +0.006 to +0.008: seeds agree, items noisy
    ],
)
def test_the_summary_verdict_on_each_branch(tmp_path, moves, expected):
    result = _summary(tmp_path, moves)
    interval = result["warm_start_to_final"]
    assert interval["mean"] == pytest.approx(sum(0.25 * (u - d) / 160 for u, d in moves) / 3)
    assert interval["low"] < interval["mean"] < interval["high"]  # the items' spread gives the interval its width
    assert interval["draws"] == "exact" and interval["low_mc_error"] == interval["high_mc_error"] == 0
    assert result["verdict"] == expected
    assert result["seed_level"]["t_interval"] == [result["between_seeds_t_interval"][k] for k in ("low", "high")]


def test_scores_off_the_grid_are_bootstrapped_with_the_bounds_monte_carlo_error(tmp_path, monkeypatch):
    monkeypatch.setattr(agent_learning, "DRAWS", 20_000)

    def off_grid(up: int, down: int) -> tuple[list[float], list[float]]:
        before, after = _items(up, down)
        return before, [a + 1e-3 * (i % 7) for i, a in enumerate(after)]

    result = _summary(tmp_path, [(70, 20), (66, 20), (68, 20)], items=off_grid)
    interval = result["warm_start_to_final"]
    assert interval["draws"] == 20_000 and 0 < interval["low_mc_error"] < 0.002
    assert result["verdict"] == GOAL_MET


def test_the_verdicts_boundaries():
    # the interval's bounds: 0 is "contains 0" on either side
    assert agent_learning.verdict([0.1, 0.1, 0.1], 0.0, 0.2, 0.1) == NULL
    assert agent_learning.verdict([0.1, 0.1, 0.1], 1e-9, 0.2, 0.1) == GOAL_MET
    assert agent_learning.verdict([-0.1] * 3, -0.2, 0.0, -0.1) == NULL
    assert agent_learning.verdict([-0.1] * 3, -0.2, -1e-9, -0.1) == HARM
    # a seed at exactly 0 does not rise
    assert agent_learning.verdict([0.1, 0.0, 0.1], 0.01, 0.2, 0.07) == NOT_EVERY_SEED
    # the goal: a mean of +0.05 meets it, a hair below does not
    assert agent_learning.verdict([0.05] * 3, 0.01, 0.09, 0.05) == GOAL_MET
    assert agent_learning.verdict([0.05] * 3, 0.01, 0.09, 0.05 - 1e-9) == SHORT


GRPO_ABOVE = "GRPO from 32 traces ends above SFT on 128 traces"
SFT_ABOVE = "SFT on 128 traces ends above GRPO from 32 traces"
SAME = (
    "GRPO from 32 traces ends where SFT on 128 traces ends (the interval lies within 0.05 either way); "
    "not shown to beat more SFT"
)
ABOVE_NOT_EVERY = "inconclusive: GRPO from 32 traces ends above SFT on 128 traces on average, not on every seed"
BELOW_NOT_EVERY = "inconclusive: SFT on 128 traces ends above GRPO from 32 traces on average, not on every seed"
WIDE = "inconclusive: the interval contains 0 and reaches beyond 0.05 either way"


@pytest.mark.parametrize(
    ("differences", "low", "high", "expected"),
    [
        ([0.04, 0.03, 0.05], 0.01, 0.07, GRPO_ABOVE),
        ([0.04, -0.01, 0.05], 0.01, 0.07, ABOVE_NOT_EVERY),
        ([0.04, 0.0, 0.05], 0.01, 0.07, ABOVE_NOT_EVERY),  # a seed at 0 is not above
        ([-0.04, -0.03, -0.05], -0.07, -0.01, SFT_ABOVE),
        ([-0.04, 0.01, -0.05], -0.07, -0.01, BELOW_NOT_EVERY),
        ([0.01, -0.01, 0.0], -0.03, 0.03, SAME),
        ([0.01, -0.01, 0.0], -0.05, 0.05, SAME),  # the margin's ends belong to it
        ([0.01, -0.01, 0.0], -0.05, 0.0500001, WIDE),
        ([0.01, -0.01, 0.0], -0.0500001, 0.02, WIDE),
        ([0.01, 0.02, 0.0], 0.0, 0.04, SAME),  # a bound at 0 contains 0
    ],
)
def test_the_grpo_against_more_sft_verdict_on_each_branch(differences, low, high, expected):
    assert agent_learning.grpo_vs_sft_verdict(differences, low, high) == expected
