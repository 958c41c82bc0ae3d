"""The alpha-Curriculum Reward and the difficulty band filter of GenEnv."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar


def alpha_reward(p_hat: float, alpha: float = 0.5, beta: float = 10.0) -> float:
    """``R_env = exp(-beta * (p_hat - alpha)**2)``: 1 when the agent succeeds at rate ``alpha``.

    Args:
        p_hat: the agent's empirical success rate on a batch, in [0, 1].
        alpha: the target success rate.
        beta: sharpness; larger values punish distance from ``alpha`` harder.
    """
    if not 0.0 <= p_hat <= 1.0:
        raise ValueError(f"p_hat must lie in [0, 1], got {p_hat}")
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got {beta}")
    return math.exp(-beta * (p_hat - alpha) ** 2)


def rwr_weight(r_env: float, lam: float = 1.0) -> float:
    """Reward-weighted-regression weight ``exp(lambda * R_env)`` of one simulator generation."""
    return math.exp(lam * r_env)


@dataclass
class AlphaTarget:
    """What the alpha-curriculum aims the simulator at, defined once for every curriculum that uses it.

    Args:
        alpha: target success rate of the alpha-curriculum reward (and the one the simulator's prompt quotes).
        beta: sharpness of ``R_env = exp(-beta (p_hat - alpha)^2)``.
        band_k: half-width of the difficulty band ``|p_hat - alpha| <= band_k``; written tasks outside it do not
            train the simulator.
        lam: lambda of the RWR weights ``exp(lam R_env)``.
    """

    alpha: float = 0.5
    beta: float = 10.0
    band_k: float = 0.4
    lam: float = 1.0

    #: what a setting's name starts with in error messages (``curriculum.`` on the command line)
    prefix: ClassVar[str] = ""

    def __post_init__(self) -> None:
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) or not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"{self.prefix}alpha must lie in [0, 1], got {self.alpha!r}")
        for name in ("beta", "band_k", "lam"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{self.prefix}{name} must be a number >= 0, got {value!r}")


@dataclass(frozen=True)
class DifficultyFilter:
    """Keeps batches whose success rate lies in the band ``|p_hat - alpha| <= k``.

    Args:
        alpha: band centre (the target success rate).
        k: band half-width; ``k >= 0.5`` keeps every batch when ``alpha = 0.5``.
    """

    alpha: float = 0.5
    k: float = 0.4

    def __call__(self, p_hat: float) -> bool:
        return abs(p_hat - self.alpha) <= self.k
