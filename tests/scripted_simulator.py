"""A simulator that stands in for the model in unit tests: fixed replies, always for one family."""

from __future__ import annotations

from genenv.envs.simulator import Simulator


class ScriptedSimulator(Simulator):
    """Replies with ``replies`` (one per proposal) instead of generating, each for ``family``."""

    def __init__(self, replies: list[str], family: str) -> None:
        super().__init__(policy=None, batch_size=len(replies))
        self.replies, self.family = replies, family

    def generate(self, conversations, seed=None, schemas=None):
        return self.replies[: len(conversations)]

    def propose(self, adapter, *, rng, n=None, families=None, success=None):
        return super().propose(adapter, rng=rng, families=[self.family] * len(self.replies), success=success)
