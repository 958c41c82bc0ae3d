"""``Agent``: the agent policy acting in :class:`~genenv.envs.tool_env.ToolEnv` episodes.

Rollouts are batched: every episode of a batch advances together, one ``generate`` call per turn for the
episodes still running (:func:`genenv.agents.rollout.play_envs`, the loop GRPO training plays too).
"""

from __future__ import annotations

from typing import Any

from genenv.agents.rollout import (
    FEW_SHOT_EXCHANGES,
    Episode,
    FewShot,
    few_shot_conversation,
    play_envs,
    shown_exchanges,
)
from genenv.benchmarks.base import BenchmarkAdapter, Task
from genenv.llm.engines import Engine
from genenv.llm.engines.hf import HFEngine
from genenv.llm.generation import SamplingConfig

__all__ = ["FEW_SHOT_EXCHANGES", "Agent", "Episode"]


class Agent:
    """Turns env observations into actions with a chat policy and few-shot tool-call examples.

    Args:
        policy: a :class:`~genenv.llm.models.Policy` (model + tokenizer).
        sampling: decoding settings (greedy by default); ``max_new_tokens`` is per turn.
        few_shot: which worked exchanges precede every conversation (:func:`~genenv.agents.rollout.shown_exchanges`:
            ``"generic"``/``True``, ``"own"``, ``"none"``/``False``).
        max_completion_length: token budget of an episode's turns and tool responses (``None``: only the
            env's ``max_turns`` limits an episode).
        engine: who generates (:mod:`genenv.llm.engines`; default Hugging Face ``generate`` on the policy's
            model); it is synced with the policy's current weights before every rollout.
    """

    def __init__(
        self,
        policy: Any,
        sampling: SamplingConfig | None = None,
        few_shot: FewShot = True,
        max_completion_length: int | None = None,
        engine: Engine | None = None,
    ) -> None:
        self.policy = policy
        self.engine = engine or HFEngine(policy)
        self.sampling = sampling or SamplingConfig()
        self.few_shot = few_shot
        self.max_completion_length = max_completion_length

    def conversation(
        self, messages: list[dict[str, Any]], adapter: BenchmarkAdapter | None = None
    ) -> list[dict[str, Any]]:
        """The model's view of an episode: system message, few-shot exchanges (``adapter``'s own, if it has
        them), then the episode."""
        if adapter is None:
            return few_shot_conversation(messages) if self.few_shot in (True, "generic") else list(messages)
        exchanges = shown_exchanges(adapter, self.few_shot)
        return few_shot_conversation(messages, exchanges) if exchanges else list(messages)

    def rollout(
        self, envs: list[Any], tasks: list[Task | None] | None = None, seed: int | None = None
    ) -> list[Episode]:
        """Play one episode in each env (``tasks[i]`` forced if given), all envs in lock-step."""
        tasks = tasks or [None] * len(envs)
        for index, (env, task) in enumerate(zip(envs, tasks)):
            env.reset(seed=None if seed is None else seed + index, options={"task": task} if task else None)
        tokenizer = self.policy.tokenizer
        self.engine.sync(self.policy.model)
        batch = play_envs(
            envs,
            tokenizer,
            self.engine.generator(self.sampling, seed=seed),
            eos_token_ids=[tokenizer.eos_token_id],
            max_completion_length=self.max_completion_length,
            few_shot=self.few_shot,
        )
        return batch.episodes
