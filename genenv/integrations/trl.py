"""genenv's benchmarks inside TRL's ``GRPOTrainer(environment_factory=...)``.

:func:`environment_factory` returns an environment class in TRL 1.16's contract: an argument-free constructor,
``reset(**row)`` and public typed methods as tools. Each instance plays one rollout in a
:class:`~genenv.envs.tool_env.ToolEnv`, so execution, errors, turn limits and scoring are the env's own (the
benchmark's official scorer by default). :func:`episode_reward` is the reward function that goes with it.

The task comes from the dataset row, never from sampling: TRL repeats each row for the G rollouts of its group, and
``reset`` plays the row's ``task`` column, so all G attempts play the same task. Rows come from :func:`task_dataset`
(benchmark tasks) or :meth:`genenv.curriculum.AlphaCurriculum.dataset` (simulator-written tasks); their ``prompt`` is
the task's prompt as ``ToolEnv`` renders it, tool schemas included.

Tool surface
------------
TRL exposes a fixed set of methods as tools, while a genenv task offers its own tools (each API-Bank or BFCL task its
own APIs). The environment therefore has one tool, ``call_tool(name, arguments)``: the agent picks any tool the task's
prompt lists by name; the call is written in the benchmark's own call form (``adapter.format_call``) and played as
one ``ToolEnv`` action, so the adapter parses, executes and scores it exactly as it would the agent's text. Each call
is one turn of the episode. The rollout's final assistant message (no tool call) is played as the episode's last
action, when :func:`episode_reward` scores the rollout; an episode the rollout left unfinished (out of tokens or tool
iterations, or a benchmark waiting for a further user message) is scored as it stands, as ``ToolEnv`` scores a
truncated one. A final message written in the benchmark's own text form (API-Bank's ``API-Request: [...]``) is read
by the adapter as that action too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, ClassVar

from datasets import Dataset

from genenv.benchmarks.base import BenchmarkAdapter, Task, as_adapter
from genenv.envs.rows import row_task, task_row
from genenv.envs.tool_env import ToolEnv, score_episode

__all__ = ["BenchmarkEnvironment", "environment_factory", "episode_reward", "task_dataset"]

EPISODE_OVER = "The episode is over."


class BenchmarkEnvironment:
    """One rollout of a benchmark task for TRL; subclasses made by :func:`environment_factory` set the class
    attributes. Its only public method is ``reset``: TRL turns public methods into tools, and a benchmark whose tasks
    offer tools gets :class:`ToolCallingEnvironment`, whose one tool is ``call_tool``."""

    adapter: ClassVar[BenchmarkAdapter]
    max_turns: ClassVar[int]
    max_observation_chars: ClassVar[int]

    def __init__(self) -> None:
        self._env = ToolEnv(self.adapter, max_turns=self.max_turns, max_observation_chars=self.max_observation_chars)
        self._over = True
        self._reward = 0.0

    def reset(self, **row: Any) -> None:
        """Start an episode of the row's ``task`` (TRL passes every column of the row); the row's prompt already
        shows it, so nothing is added to it."""
        self._env.reset(options={"task": row_task(row)})
        self._over, self._reward = False, 0.0

    def _act(self, action: str) -> str:
        observation, reward, terminated, truncated, _ = self._env.step(action)
        self._over, self._reward = terminated or truncated, reward
        return observation

    def _finish(self, completion: list[dict[str, Any]] | str) -> float:
        """Play the rollout's final answer, if it has one and the episode is still on, and return the episode's
        score."""
        if not self._over and (answer := _final_answer(completion)) is not None:
            self._act(answer)
        if not self._over:
            self._over = True
            self._reward = score_episode(self.adapter, self._env.task, self._env.trajectory).value
        return self._reward


class ToolCallingEnvironment(BenchmarkEnvironment):
    """A :class:`BenchmarkEnvironment` whose tasks offer tools: ``call_tool`` is its one TRL tool."""

    def call_tool(self, name: str, arguments: dict) -> str:
        """Call one of the tools the task lists.

        Args:
            name: the tool's name, as the task lists it.
            arguments: the tool's arguments, by parameter name.

        Returns:
            The tool's output, or an error message saying what was wrong with the call.
        """
        if self._env.task is None:
            raise RuntimeError("call_tool before reset: TRL resets every environment before its rollout")
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise ValueError("call_tool takes a tool name (a string) and its arguments (an object)")
        if self._over:
            return EPISODE_OVER
        return self._act(self.adapter.format_call(name, arguments))


def _final_answer(completion: list[dict[str, Any]] | str) -> str | None:
    """The text of the rollout's last assistant message when it calls no tool (``None`` otherwise)."""
    if isinstance(completion, str):
        return completion
    last = completion[-1] if completion else {}
    if last.get("role") != "assistant" or last.get("tool_calls"):
        return None
    content = last.get("content")
    return content if isinstance(content, str) else None


def environment_factory(
    benchmark: str | BenchmarkAdapter,
    *,
    max_turns: int | None = None,
    max_observation_chars: int = 16_384,
    **adapter_kwargs: Any,
) -> type[BenchmarkEnvironment]:
    """An environment class for ``GRPOTrainer(environment_factory=...)`` over ``benchmark``.

    Args:
        benchmark: a registered benchmark name or an adapter instance (shared by every rollout: adapters are
            immutable once built).
        max_turns: turns per episode (one per tool call, one for the final answer; ``None``: the benchmark's); the
            benchmark's own turn limit of a task applies too (``ToolEnv``).
        max_observation_chars: tool output beyond this is cut, and the cut is stated.
        adapter_kwargs: the adapter's keyword arguments (``data_dir``, ``scoring``, ...), with a benchmark name only.
    """
    adapter = as_adapter(benchmark, **adapter_kwargs)
    max_turns = adapter.max_turns if max_turns is None else max_turns
    if max_turns < 1:
        raise ValueError(f"max_turns must be at least 1, got {max_turns}")
    name = "".join(part.capitalize() for part in re.findall(r"[a-z0-9]+", adapter.name.lower())) + "Environment"
    attributes = {
        "adapter": adapter,
        "max_turns": max_turns,
        "max_observation_chars": max_observation_chars,
        "__doc__": f"One rollout of a {adapter.name} task for TRL (genenv.integrations.trl).",
    }
    base = ToolCallingEnvironment if adapter.has_tools else BenchmarkEnvironment
    return type(name, (base,), attributes)


def episode_reward(
    completions: list[list[dict[str, Any]] | str],
    environments: list[BenchmarkEnvironment] | None = None,
    **kwargs: Any,
) -> list[float]:
    """TRL reward function: the benchmark's score of each rollout's episode, its final answer played first."""
    if environments is None:
        raise ValueError("episode_reward scores the environments of GRPOTrainer(environment_factory=...); none given")
    if not all(isinstance(env, BenchmarkEnvironment) for env in environments):
        raise TypeError("episode_reward scores environments made by genenv.integrations.trl.environment_factory")
    return [env._finish(completion) for env, completion in zip(environments, completions, strict=True)]


def task_dataset(adapter: BenchmarkAdapter, tasks: Iterable[Task]) -> Dataset:
    """``tasks`` as a TRL training dataset, one row per task (:func:`~genenv.envs.rows.task_row`)."""
    rows = [task_row(adapter, task) for task in tasks]
    if not rows:
        raise ValueError("task_dataset needs at least one task")
    return Dataset.from_list(rows)
