"""A mean over a few seeds, read two ways: a percentile bootstrap over items (or epochs) with the Monte Carlo error of
its bounds, and seed-level tests over the per-seed values (the one-sample t-test and the exact sign-flip test); and
the clause a verdict adds where the two disagree about 0.

The bootstrap interval is the pair of order statistics ``sorted[int(0.025 B)]`` and ``sorted[int(0.975 B) - 1]`` of
``B`` bootstrap means. The Monte Carlo error of a bound is the standard error of that order statistic, estimated
without a model of the bootstrap distribution: half the distance between the order statistics one binomial standard
deviation, ``sqrt(B q (1 - q))``, below and above it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "LEVEL",
    "disagreement",
    "exact_interval",
    "percentile_interval",
    "seed_level",
    "sign_flip_p",
    "stratified_means",
    "t_quantile",
    "t_test",
    "t_two_sided_p",
]

#: the two-sided level of every test and interval here (95% intervals)
LEVEL = 0.05
#: bootstrap draws generated at once (memory: draws x items floats)
CHUNK = 10_000


def percentile_interval(means: np.ndarray) -> dict[str, float]:
    """The 95% percentile interval of bootstrap ``means`` and each bound's Monte Carlo standard error (module
    docstring); ``draws``: how many means."""
    draws = len(means)
    if draws < 40:
        raise ValueError(f"means: a 95% percentile interval needs at least 40 bootstrap means, got {draws}")
    ordered = np.sort(np.asarray(means, dtype=float))
    out: dict[str, float] = {"draws": draws}
    for name, q, index in (
        ("low", LEVEL / 2, int(LEVEL / 2 * draws)),
        ("high", 1 - LEVEL / 2, int((1 - LEVEL / 2) * draws) - 1),
    ):
        spread = math.ceil(math.sqrt(draws * q * (1 - q)))
        below, above = ordered[max(index - spread, 0)], ordered[min(index + spread, draws - 1)]
        out[name] = float(ordered[index])
        out[f"{name}_mc_error"] = float(above - below) / 2
    return out


def stratified_means(strata: Sequence[Sequence[float]], draws: int, seed: int = 0) -> np.ndarray:
    """``draws`` bootstrap means over ``strata`` (e.g. one per seed): each stratum's values resampled with
    replacement within it, the stratum means averaged with equal weight."""
    arrays = [np.asarray(s, dtype=float) for s in strata]
    if not arrays or any(len(a) == 0 for a in arrays):
        raise ValueError("strata: every stratum needs at least one value")
    rng = np.random.default_rng(seed)
    means = np.empty(draws)
    for start in range(0, draws, CHUNK):
        count = min(CHUNK, draws - start)
        total = np.zeros(count)
        for values in arrays:
            total += values[rng.integers(len(values), size=(count, len(values)))].mean(axis=1)
        means[start : start + count] = total / len(arrays)
    return means


def exact_interval(strata: Sequence[Sequence[float]], denominator: int) -> dict[str, Any] | None:
    """The bounds :func:`stratified_means` and :func:`percentile_interval` approach as the draws grow, computed
    rather than sampled, for strata of equal size whose values are whole multiples of ``1 / denominator`` (``None``
    otherwise): each stratum's resampled sum has the n-fold convolution of its values' distribution, the strata's
    sums add up (both by FFT, on the coarsest grid ``1 / d`` with ``d`` dividing ``denominator`` that holds the
    values), and the bounds are where the sum's cumulative probability first exceeds 2.5% and first reaches 97.5%,
    as the order statistics of :func:`percentile_interval` do (Monte Carlo error 0)."""
    arrays = [np.asarray(s, dtype=float) for s in strata]
    if not arrays or len({len(a) for a in arrays}) != 1 or len(arrays[0]) == 0:
        return None
    grid = next(
        (d for d in range(1, denominator + 1) if denominator % d == 0 and all(_on_grid(a * d) for a in arrays)), None
    )
    if grid is None:
        return None
    ints = [np.round(a * grid).astype(np.int64) for a in arrays]
    n = len(arrays[0])
    lows = [int(x.min()) for x in ints]
    size = sum(n * int(x.max() - low) for x, low in zip(ints, lows, strict=True)) + 1
    spectrum = np.ones(size // 2 + 1, dtype=complex)
    for x, low in zip(ints, lows, strict=True):
        spectrum *= np.fft.rfft(np.bincount(x - low) / n, size) ** n
    total = np.clip(np.fft.irfft(spectrum, size), 0, None)
    cdf = np.cumsum(total) / total.sum()
    scale, offset = 1 / (grid * len(arrays) * n), n * sum(lows)
    low_index = int(np.searchsorted(cdf, LEVEL / 2, side="right"))
    high_index = int(np.searchsorted(cdf, 1 - LEVEL / 2, side="left"))
    return {
        "low": (offset + low_index) * scale,
        "high": (offset + high_index) * scale,
        "low_mc_error": 0.0,
        "high_mc_error": 0.0,
        "draws": "exact",
    }


def _on_grid(values: np.ndarray) -> bool:
    return bool(np.allclose(values, np.round(values), rtol=0, atol=1e-6))


def t_two_sided_p(t: float, df: int) -> float:
    """Two-sided p of Student's t with ``df`` degrees of freedom (exact series of Abramowitz and Stegun 26.7.3-4)."""
    if df < 1:
        raise ValueError(f"df must be at least 1, got {df}")
    if math.isinf(t):
        return 0.0
    theta = math.atan(abs(t) / math.sqrt(df))
    sin, cos = math.sin(theta), math.cos(theta)
    if df % 2 == 0:  # A(t|df) = sin(theta) * (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ... up to cos^(df-2))
        term, series = 1.0, 1.0
        for k in range(1, df // 2):
            term *= (2 * k - 1) / (2 * k) * cos**2
            series += term
        inside = sin * series
    else:  # A(t|df) = 2/pi * (theta + sin(theta) * (cos + 2/3 cos^3 + ... up to cos^(df-2)))
        series, term = 0.0, cos
        for k in range(1, (df - 1) // 2 + 1):
            series += term
            term *= (2 * k) / (2 * k + 1) * cos**2
        inside = 2 / math.pi * (theta + sin * series) if df > 1 else 2 * theta / math.pi
    return min(1.0, max(0.0, 1.0 - inside))


def t_quantile(df: int, p: float = LEVEL) -> float:
    """The ``t`` whose two-sided p with ``df`` degrees of freedom is ``p`` (bisection; 1e-10)."""
    low, high = 0.0, 1.0
    while t_two_sided_p(high, df) > p:
        high *= 2
    while high - low > 1e-10:
        mid = (low + high) / 2
        low, high = (mid, high) if t_two_sided_p(mid, df) > p else (low, mid)
    return (low + high) / 2


def t_test(values: Sequence[float]) -> dict[str, float]:
    """One-sample t-test of mean 0 over ``values`` (one a seed): t, degrees of freedom, two-sided p and the 95%
    t-interval of the mean. Values all equal: t infinite (p 0) unless they are 0 (t 0, p 1)."""
    n = len(values)
    if n < 2:
        raise ValueError(f"values: a t-test needs at least 2, got {n}")
    mean = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    error = sd / math.sqrt(n)
    t = mean / error if error > 0 else (0.0 if mean == 0 else math.copysign(math.inf, mean))
    half = t_quantile(n - 1) * error
    return {"t": t, "df": n - 1, "p_two_sided": t_two_sided_p(t, n - 1), "low": mean - half, "high": mean + half}


def sign_flip_p(values: Sequence[float]) -> float:
    """Exact two-sided sign-flip p of mean 0: the share of the 2^n sign assignments to ``values`` whose mean is at
    least as far from 0 as the observed one."""
    if not values:
        raise ValueError("values: a sign-flip test needs at least one")
    observed = abs(math.fsum(values))
    sums = [
        abs(math.fsum(s * v for s, v in zip(signs, values))) for signs in itertools.product((1, -1), repeat=len(values))
    ]
    return sum(s >= observed - 1e-12 * max(1.0, observed) for s in sums) / len(sums)


def seed_level(values: Sequence[float]) -> dict[str, Any]:
    """The seed-level tests of per-seed ``values``: the t-test (whose 95% t-interval decides ``excludes_0``) and
    the exact sign-flip p beside the smallest p that many seeds allow."""
    test = t_test(values)
    return {
        "seeds": len(values),
        "t": test["t"],
        "df": test["df"],
        "p_two_sided": test["p_two_sided"],
        "t_interval": [test["low"], test["high"]],
        "sign_flip_p": sign_flip_p(values),
        "smallest_sign_flip_p": 2 / 2 ** len(values),
        "excludes_0": test["p_two_sided"] < LEVEL,
    }


def disagreement(interval_excludes_0: bool, seeds: dict[str, Any]) -> str:
    """The clause a verdict adds where the bootstrap interval and the seed-level t-test (``seed_level``) disagree
    about 0; ``""`` where they agree."""
    n = seeds["seeds"]
    if interval_excludes_0 and not seeds["excludes_0"]:
        return f"; the t-test over the {n} seeds does not exclude 0 ({n} seeds do not resolve the spread between them)"
    if seeds["excludes_0"] and not interval_excludes_0:
        return f"; the t-test over the {n} seeds excludes 0, the bootstrap interval does not"
    return ""
