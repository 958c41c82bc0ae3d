"""``Agent``: the agent policy acting in :class:`~genenv.envs.tool_env.ToolEnv` episodes.

Rollouts are batched: every episode of a batch advances together, one ``generate`` call per turn
for the episodes still running.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from genenv.agents.generation import SamplingConfig, generate_chat
from genenv.benchmarks.base import Task, Trajectory


def _tool_call_text(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


# Two worked exchanges shown before the real request: small chat models copy this format
# (a JSON call inside <tool_call> tags, then a plain-text answer) far more reliably than they
# follow a description of it. The tools here are illustrative and never offered for execution.
FEW_SHOT_EXCHANGES: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris today?"},
    {"role": "assistant", "content": _tool_call_text("GetWeather", {"city": "Paris"})},
    {"role": "tool", "content": json.dumps({"output": {"temperature": 18, "sky": "cloudy"}, "exception": None})},
    {"role": "assistant", "content": "It is 18 degrees and cloudy in Paris today."},
    {"role": "user", "content": "Set an alarm for 2023-03-16 07:30:00, my token is a9s8d7f6g5h4."},
    {
        "role": "assistant",
        "content": _tool_call_text("AddAlarm", {"token": "a9s8d7f6g5h4", "time": "2023-03-16 07:30:00"}),
    },
    {"role": "tool", "content": json.dumps({"output": "success", "exception": None})},
    {"role": "assistant", "content": "Your alarm for 2023-03-16 07:30:00 is set."},
]


@dataclass
class Episode:
    """One finished episode: the task, what happened, and the reward the env gave."""

    task: Task
    trajectory: Trajectory
    reward: float
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    info: dict[str, Any] = field(default_factory=dict)
    truncated: bool = False


class Agent:
    """Turns env observations into actions with a chat policy and few-shot tool-call examples.

    Args:
        policy: a :class:`~genenv.agents.models.Policy` (model + tokenizer).
        sampling: decoding settings (greedy by default).
        few_shot: prepend :data:`FEW_SHOT_EXCHANGES` to every conversation.
    """

    def __init__(self, policy: Any, sampling: SamplingConfig | None = None, few_shot: bool = True) -> None:
        self.policy = policy
        self.sampling = sampling or SamplingConfig()
        self.few_shot = few_shot

    def conversation(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The model's view of an episode: system message, few-shot exchanges, then the episode."""
        if not self.few_shot or not messages or messages[0]["role"] != "system":
            return list(messages)
        return [messages[0], *FEW_SHOT_EXCHANGES, *messages[1:]]

    def act(
        self, episodes_messages: list[list[dict[str, Any]]], tools: list[list[dict]], seed: int | None = None
    ) -> list[str]:
        """One action per conversation, generated in one batch."""
        conversations = [self.conversation(messages) for messages in episodes_messages]
        return generate_chat(self.policy, conversations, tools, self.sampling, generator_seed=seed)

    def rollout(
        self, envs: list[Any], tasks: list[Task | None] | None = None, seed: int | None = None
    ) -> list[Episode]:
        """Play one episode in each env (``tasks[i]`` forced if given), all envs in lock-step."""
        tasks = tasks or [None] * len(envs)
        tools: list[list[dict]] = []
        infos: list[dict] = []
        for index, (env, task) in enumerate(zip(envs, tasks)):
            _, info = env.reset(seed=None if seed is None else seed + index, options={"task": task} if task else None)
            tools.append(info["tools"])
            infos.append(info)
        running = list(range(len(envs)))
        truncated = [False] * len(envs)
        rewards = [0.0] * len(envs)
        turn = 0
        while running:
            actions = self.act(
                [envs[i].messages for i in running],
                [tools[i] for i in running],
                seed=None if seed is None else seed + 7919 * turn,
            )
            still_running = []
            for i, action in zip(running, actions):
                _, reward, terminated, trunc, info = envs[i].step(action)
                if terminated or trunc:
                    rewards[i], truncated[i], infos[i] = reward, trunc, info
                else:
                    still_running.append(i)
            running = still_running
            turn += 1
        return [
            Episode(env.task, env.trajectory, rewards[i], list(env.messages), tools[i], infos[i], truncated[i])
            for i, env in enumerate(envs)
        ]
