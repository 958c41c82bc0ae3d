"""A simulator that stands in for the model in unit tests: fixed replies, always for one family."""

from __future__ import annotations

from genenv.envs.simulator import Simulator


class ScriptedSimulator(Simulator):
    """Replies with ``replies`` (one per proposal) instead of generating, each for ``family``; keeps the prompts."""

    def __init__(self, replies: list[str], family: str) -> None:
        super().__init__(policy=None, batch_size=len(replies))
        self.replies, self.family = replies, family
        self.prompts: list[list[list[dict]]] = []  # the conversations of each generate call

    def generate(self, conversations, seed=None, schemas=None):
        self.prompts.append(conversations)
        return self.replies[: len(conversations)]

    def propose(self, adapter, *, rng, n=None, families=None, success=None, own_examples=None, scored=None):
        families = [self.family] * len(self.replies)
        return super().propose(
            adapter, rng=rng, families=families, success=success, own_examples=own_examples, scored=scored
        )
