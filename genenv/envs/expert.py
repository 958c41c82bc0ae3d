"""Expert traces: a task's gold trajectory played through :class:`~genenv.envs.tool_env.ToolEnv`.

An adapter knows its gold *actions* (:meth:`~genenv.benchmarks.base.BenchmarkAdapter.gold_actions`: the text the
agent should write each turn, gold calls in the agent's tool-call format, then the final answer);
:func:`replay_actions` plays them in a fresh env and returns the messages an episode records, so the tool outputs
an expert trace shows are the executed ones, byte for byte what the agent would see. :func:`expert_messages` keeps
the first way of writing the gold actions that makes a complete episode; :func:`expert_conversation` adds the
opening (system prompt, user request) and the tool schemas: one supervised example of the agent's warm start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from genenv.benchmarks.base import BenchmarkAdapter, Score, Task
from genenv.envs.tool_env import ToolEnv, score_episode

__all__ = ["ExpertTraceError", "expert_conversation", "expert_messages", "replay_actions", "replay_expert"]


class ExpertTraceError(ValueError):
    """The gold actions do not make a complete episode (it ended early, or never ended)."""


def replay_actions(adapter: BenchmarkAdapter, task: Task, actions: Sequence[str]) -> list[dict[str, Any]]:
    """Play ``actions`` in order from ``task``'s opening; returns the messages after the opening.

    The last action must end the episode (a plain answer or the benchmark's terminal call) and no earlier
    one may: otherwise :class:`ExpertTraceError`.
    """
    env = ToolEnv(adapter, tasks=[task], max_turns=max(1, len(actions)))
    env.reset(options={"task": task})
    opening = len(env.messages)
    for index, action in enumerate(actions):
        _, _, terminated, truncated, info = env.step(action)
        last = index == len(actions) - 1
        if terminated and not last:
            raise ExpertTraceError(f"{task.task_id}: the episode ended at gold action {index + 1} of {len(actions)}")
        if last and not terminated:
            raise ExpertTraceError(f"{task.task_id}: the episode did not end after its last gold action")
    return [dict(message) for message in env.messages[opening:]]


def expert_messages(adapter: BenchmarkAdapter, task: Task) -> list[dict[str, Any]] | None:
    """The task's expert trace: the chat messages that follow its opening (system prompt, user request), the agent's
    turns and what the environment answered (tool outputs, follow-up user turns), exactly as a :class:`ToolEnv`
    episode records them. They come from the first of the adapter's :meth:`gold_actions
    <genenv.benchmarks.base.BenchmarkAdapter.gold_actions>` that makes a complete episode; ``None`` when none does
    (or the task has no gold trajectory)."""
    for actions in adapter.gold_actions(task):
        try:
            return replay_actions(adapter, task, actions)
        except ExpertTraceError:
            continue
    return None


def replay_expert(adapter: BenchmarkAdapter, task: Task) -> tuple[list[dict[str, Any]], Score]:
    """Replay the assistant turns of :func:`expert_messages` in a fresh env: the messages the env recorded and the
    episode's score. A correct expert trace records the same messages and scores the maximum."""
    expert = expert_messages(adapter, task)
    if not expert:
        raise ExpertTraceError(f"{task.task_id} has no expert trace")
    actions = [m["content"] for m in expert if m["role"] == "assistant"]
    env = ToolEnv(adapter, tasks=[task], max_turns=len(actions))
    env.reset(options={"task": task})
    opening = len(env.messages)
    for action in actions:
        env.step(action)
    return [dict(m) for m in env.messages[opening:]], score_episode(adapter, task, env.trajectory)


def expert_conversation(adapter: BenchmarkAdapter, task: Task) -> dict[str, Any] | None:
    """One warm-start example: ``{"messages": opening + expert trace, "tools": schemas}``, or ``None``."""
    expert = expert_messages(adapter, task)
    if not expert:
        return None
    opening = [
        {"role": "system", "content": adapter.system_prompt(task)},
        {"role": "user", "content": task.prompt},
    ]
    return {"messages": opening + expert, "tools": adapter.tools(task)}
