"""Per-family success statistics: what the simulator is told about the agent."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FamilyStats:
    """The agent's recent success per task family, over a sliding window of episodes.

    Args:
        window: how many of the most recent episode rewards count per family.
    """

    window: int = 64
    _recent: dict[str, deque[float]] = field(default_factory=dict, repr=False)

    def update(self, family: str, rewards: list[float]) -> None:
        """Record episode rewards (in [0, 1]) of ``family``."""
        recent = self._recent.setdefault(family, deque(maxlen=self.window))
        recent.extend(float(r) for r in rewards)

    def success(self, family: str) -> float | None:
        """Mean recent reward of ``family``; ``None`` when it has not been seen."""
        recent = self._recent.get(family)
        return sum(recent) / len(recent) if recent else None

    def count(self, family: str) -> int:
        return len(self._recent.get(family, ()))

    def rates(self) -> dict[str, float]:
        """Family -> recent success, for every family seen."""
        return {family: sum(r) / len(r) for family, r in sorted(self._recent.items()) if r}

    def to_dict(self) -> dict[str, Any]:
        return {"window": self.window, "recent": {family: list(r) for family, r in self._recent.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FamilyStats:
        stats = cls(window=data["window"])
        for family, rewards in data["recent"].items():
            stats.update(family, rewards)
        return stats
