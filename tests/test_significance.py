"""genenv.significance: the bootstrap interval's Monte Carlo error, the seed-level tests and the verdict clause."""

from __future__ import annotations

import math

import numpy as np
import pytest

from genenv import significance

#: two-sided 95% quantiles of Student's t by degrees of freedom 1-10 (the printed tables)
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]


@pytest.mark.parametrize("df", range(1, 11))
def test_t_p_and_quantile_match_the_printed_table(df):
    assert significance.t_two_sided_p(T975[df - 1], df) == pytest.approx(0.05, abs=2e-4)
    assert significance.t_quantile(df) == pytest.approx(T975[df - 1], abs=1e-3)


def test_t_p_closed_forms_and_edges():
    assert significance.t_two_sided_p(1.0, 1) == pytest.approx(0.5)  # Cauchy: P(|T| > 1) = 1/2
    assert significance.t_two_sided_p(3.37, 2) == pytest.approx(1 - 3.37 / math.sqrt(2 + 3.37**2))
    assert significance.t_two_sided_p(0.0, 3) == 1.0 and significance.t_two_sided_p(math.inf, 3) == 0.0
    assert significance.t_two_sided_p(-2.0, 5) == significance.t_two_sided_p(2.0, 5)
    with pytest.raises(ValueError, match="df"):
        significance.t_two_sided_p(1.0, 0)


def test_t_test_over_seeds():
    test = significance.t_test([0.082, 0.039, 0.123])
    mean, sd = 0.08133333, 0.0420040
    assert test["t"] == pytest.approx(mean / (sd / math.sqrt(3)), rel=1e-4) and test["df"] == 2
    assert test["low"] == pytest.approx(mean - 4.303 * sd / math.sqrt(3), abs=1e-4)
    assert significance.t_test([0.02, 0.02])["p_two_sided"] == 0.0  # no spread, mean not 0
    assert significance.t_test([0.0, 0.0])["p_two_sided"] == 1.0
    with pytest.raises(ValueError, match="values"):
        significance.t_test([0.1])


def test_sign_flip_p_counts_the_sign_assignments_at_least_as_extreme():
    assert significance.sign_flip_p([1.0, 2.0, 3.0]) == 2 / 8  # all +, all -
    assert significance.sign_flip_p([22.5, 6.8, 6.8, 0.0]) == 4 / 16  # a 0 flips to itself
    assert significance.sign_flip_p([3.0, -1.0, 1.0]) == 6 / 8  # |sum| 3: all but 3 - 1 - 1 and its negative
    with pytest.raises(ValueError, match="values"):
        significance.sign_flip_p([])


def test_seed_level_and_the_clause_where_it_disagrees_with_the_bootstrap():
    agree = significance.seed_level([0.10, 0.11, 0.12])
    spread = significance.seed_level([0.20, 0.01, 0.05])
    assert agree["excludes_0"] and not spread["excludes_0"] and agree["smallest_sign_flip_p"] == 0.25
    assert significance.disagreement(True, agree) == "" and significance.disagreement(False, spread) == ""
    assert significance.disagreement(True, spread) == (
        "; the t-test over the 3 seeds does not exclude 0 (3 seeds do not resolve the spread between them)"
    )
    assert significance.disagreement(False, agree) == (
        "; the t-test over the 3 seeds excludes 0, the bootstrap interval does not"
    )


def test_percentile_interval_takes_the_written_order_statistics_and_its_monte_carlo_error_shrinks_with_draws():
    means = np.arange(1000.0)[::-1]  # any order: sorted first
    interval = significance.percentile_interval(means)
    assert (interval["low"], interval["high"], interval["draws"]) == (25.0, 974.0, 1000)
    spread = math.ceil(math.sqrt(1000 * 0.025 * 0.975))  # 5 order statistics either side
    assert interval["low_mc_error"] == pytest.approx(spread) and interval["high_mc_error"] == pytest.approx(spread)
    with pytest.raises(ValueError, match="means"):
        significance.percentile_interval(np.zeros(10))
    values = [np.random.default_rng(1).normal(size=150)]
    errors = [
        significance.percentile_interval(significance.stratified_means(values, d))["low_mc_error"]
        for d in (2_000, 200_000)
    ]
    assert errors[1] < errors[0] / 5  # about 1 / sqrt(100)
    # the estimate against the spread of the bound over independent bootstraps
    bounds = [
        significance.percentile_interval(significance.stratified_means(values, 2_000, s))["low"] for s in range(40)
    ]
    assert np.std(bounds) == pytest.approx(errors[0], rel=0.5)


def test_stratified_means_weigh_each_stratum_equally_and_refuse_an_empty_one():
    means = significance.stratified_means([[1.0] * 10, [0.0, 0.0]], 50)
    assert np.allclose(means, 0.5)
    with pytest.raises(ValueError, match="strata"):
        significance.stratified_means([[1.0], []], 10)


def test_the_exact_interval_is_the_limit_of_the_drawn_one():
    two = significance.exact_interval([[0.0, 1.0]], 1)  # the mean of 2 draws: 0, 0.5, 1 with 1/4, 1/2, 1/4
    assert (two["low"], two["high"], two["draws"], two["low_mc_error"]) == (0.0, 1.0, "exact", 0.0)
    rng = np.random.default_rng(3)
    strata = [rng.integers(-4, 5, size=60) / 4 for _ in range(3)]
    exact = significance.exact_interval(strata, 240)
    drawn = significance.percentile_interval(significance.stratified_means(strata, 400_000))
    for bound in ("low", "high"):
        assert abs(exact[bound] - drawn[bound]) <= max(3 * drawn[f"{bound}_mc_error"], 1 / 4 / 60 / 3)
    shifted = [s + 1 / 240 for s in strata]  # on the finer grid the bounds move with the values
    assert significance.exact_interval(shifted, 240)["low"] == pytest.approx(exact["low"] + 1 / 240)
    assert significance.exact_interval([[0.001, 0.3]], 240) is None  # off the grid of 1/240
    assert significance.exact_interval([[0.25, 0.5], [0.25]], 240) is None  # strata of other sizes
