"""Batched multi-turn rollouts at the token level: the one loop every agent episode is played by.

All episodes of a batch advance in lock-step: each turn, one batched ``generate`` call continues the token
ids of every episode still running (left-padded; the KV cache is used within the call), the new text is the
action given to that episode's :class:`~genenv.envs.tool_env.ToolEnv`, and the tool observation is appended
as the chat template's tool-response block. The token sequence of an episode is never re-tokenised: what the
model generated from is exactly what GRPO trains on (:mod:`genenv.agents.grpo`), and evaluation
(:meth:`genenv.agents.agent.Agent.rollout`) plays the same loop with a plain Hugging Face generator.

Token layout of one episode::

    prompt_ids     = chat template(system + tools, few-shot exchanges, user request, assistant header)
    completion_ids = [turn 1 ... <|im_end|>] [\\n<|im_start|>user\\n<tool_response>...<|im_end|>\\n
                      <|im_start|>assistant\\n] [turn 2 ... <|im_end|>] ...

``env_mask`` is 1 on tokens the model sampled and 0 on tool-response blocks (and on an end-of-turn token
inserted after a turn cut by the token limit).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from genenv.benchmarks.base import BenchmarkAdapter, Task, Trajectory
from genenv.envs.tool_env import ToolEnv, score_episode
from genenv.llm.generation import GenerateFn, render_chat

__all__ = [
    "FEW_SHOT_EXCHANGES",
    "Episode",
    "RolloutBatch",
    "ToolSuffix",
    "few_shot_conversation",
    "shown_exchanges",
    "play_envs",
    "play_episodes",
]


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


def few_shot_conversation(
    messages: list[dict[str, Any]], exchanges: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The model's view of an episode: system message, the worked ``exchanges`` (default
    :data:`FEW_SHOT_EXCHANGES`), then the episode."""
    if not messages or messages[0]["role"] != "system":
        return list(messages)
    return [messages[0], *(FEW_SHOT_EXCHANGES if exchanges is None else exchanges), *messages[1:]]


FewShot = bool | str


def shown_exchanges(adapter: BenchmarkAdapter, few_shot: FewShot) -> list[dict[str, Any]]:
    """The worked exchanges an agent is shown before each request.

    ``few_shot``: ``"generic"`` (or ``True``): the benchmark's own exchanges, else :data:`FEW_SHOT_EXCHANGES`;
    ``"own"``: the benchmark's own exchanges only (for models the generic ones hurt, e.g. Qwen2.5-Coder, whose chat
    template already explains tool calls); ``"none"`` (or ``False``): none.
    """
    mode = ("generic" if few_shot else "none") if isinstance(few_shot, bool) else few_shot
    if mode not in ("generic", "own", "none"):
        raise ValueError(f"few_shot must be 'generic', 'own', 'none' or a bool, got {few_shot!r}")
    if mode == "none":
        return []
    own = adapter.few_shot_exchanges()
    if own is not None:
        return own
    return FEW_SHOT_EXCHANGES if mode == "generic" else []


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


@dataclass
class RolloutBatch:
    """Episodes played together, in TRL's token layout (one row per episode).

    ``env_mask[i][j]`` is 1 where ``completion_ids[i][j]`` was sampled by the model and 0 on the tokens of tool
    responses (and of follow-up user messages); ``logprobs`` is ``None`` unless the generator returns sampling
    log-probabilities (vLLM).
    """

    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    env_mask: list[list[int]]
    logprobs: list[list[float]] | None
    rewards: list[float]
    episodes: list[Episode]

    def select(self, rows: Sequence[int]) -> RolloutBatch:
        """The episodes at ``rows``, in that order."""
        logprobs = None if self.logprobs is None else [self.logprobs[i] for i in rows]
        return RolloutBatch(
            [self.prompt_ids[i] for i in rows],
            [self.completion_ids[i] for i in rows],
            [self.env_mask[i] for i in rows],
            logprobs,
            [self.rewards[i] for i in rows],
            [self.episodes[i] for i in rows],
        )

    @staticmethod
    def concat(batches: Sequence[RolloutBatch]) -> RolloutBatch:
        """One batch of the episodes of ``batches``, in order (log-probabilities only if every batch has them)."""
        have_logprobs = all(b.logprobs is not None for b in batches)
        return RolloutBatch(
            [ids for b in batches for ids in b.prompt_ids],
            [ids for b in batches for ids in b.completion_ids],
            [mask for b in batches for mask in b.env_mask],
            [lp for b in batches for lp in b.logprobs] if have_logprobs else None,
            [r for b in batches for r in b.rewards],
            [e for b in batches for e in b.episodes],
        )

    @property
    def token_counts(self) -> dict[str, int]:
        """Prompt tokens, model-sampled completion tokens and tool-response (masked) tokens, summed."""
        sampled = sum(sum(mask) for mask in self.env_mask)
        total = sum(len(ids) for ids in self.completion_ids)
        return {
            "prompt_tokens": sum(len(ids) for ids in self.prompt_ids),
            "completion_tokens": sampled,
            "env_tokens": total - sampled,
        }


class ToolSuffix:
    """Token ids that follow an assistant turn when a ``tool`` message answers it, up to the next assistant
    header (``\\n<|im_start|>user\\n<tool_response>...<|im_end|>\\n<|im_start|>assistant\\n`` in ChatML);
    the same for a ``user`` message (the next turn of a multi-turn conversation).

    Computed as TRL's tool loop does: render a dummy conversation ending with an assistant turn, render it
    again with the tool message(s) and the generation prompt, and keep the difference, starting right after
    the assistant turn's end-of-turn token.
    """

    def __init__(self, tokenizer: Any, eos_token_id: int) -> None:
        self.tokenizer = tokenizer
        self._dummy = [
            {"role": "system", "content": "dummy"},
            {"role": "user", "content": "dummy"},
            {"role": "assistant", "content": "dummy"},
        ]
        rendered = tokenizer.apply_chat_template(self._dummy, add_generation_prompt=False, tokenize=False)
        prefix = self._ids(rendered)
        eos_positions = [i for i, tok in enumerate(prefix) if tok == eos_token_id]
        if not eos_positions:
            raise ValueError("the chat template does not end an assistant turn with the eos token")
        self._prefix = prefix[: eos_positions[-1] + 1]

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def __call__(self, tool_messages: list[dict[str, Any]]) -> list[int]:
        full = self._ids(render_chat(self.tokenizer, self._dummy + list(tool_messages)))
        if full[: len(self._prefix)] != self._prefix:
            raise ValueError("unexpected tokenization: the assistant turn is not a prefix of the tool turn")
        return full[len(self._prefix) :]


def play_envs(
    envs: Sequence[ToolEnv],
    tokenizer: Any,
    generate: GenerateFn,
    *,
    eos_token_ids: Sequence[int],
    max_completion_length: int | None = None,
    few_shot: FewShot = True,
) -> RolloutBatch:
    """Play the episode each (already reset) env holds to its end, all envs in lock-step.

    An episode ends on a plain answer, the benchmark's terminal action, the env's ``max_turns``, or when
    its next tool response would not fit in ``max_completion_length`` tokens (``None``: no budget); its
    reward is the adapter's score.
    """
    eos = list(eos_token_ids)
    if not eos:
        raise ValueError("eos_token_ids must name at least one end-of-turn token")
    budget = max_completion_length if max_completion_length is not None else float("inf")
    suffix = ToolSuffix(tokenizer, eos[0])
    n = len(envs)
    prompt_ids = []
    tools = []
    for env in envs:
        if env.task is None:
            raise ValueError("play_envs needs envs that were reset")
        tools.append(env.adapter.tools(env.task))
        exchanges = shown_exchanges(env.adapter, few_shot)
        messages = few_shot_conversation(env.messages, exchanges) if exchanges else env.messages
        text = render_chat(tokenizer, messages, tools[-1])
        prompt_ids.append(tokenizer(text, add_special_tokens=False)["input_ids"])

    completion: list[list[int]] = [[] for _ in range(n)]
    mask: list[list[int]] = [[] for _ in range(n)]
    logprobs: list[list[float]] = [[] for _ in range(n)]
    have_logprobs = True
    rewards = [0.0] * n
    truncated = [False] * n
    infos: list[dict[str, Any]] = [{} for _ in range(n)]
    running = list(range(n))
    while running:
        new_ids, new_logprobs = generate([prompt_ids[i] + completion[i] for i in running])
        if new_logprobs is None:
            have_logprobs = False
        still_running = []
        for row, i in enumerate(running):
            ids = list(new_ids[row])
            lps = list(new_logprobs[row]) if new_logprobs is not None else [0.0] * len(ids)
            cut = next((k + 1 for k, tok in enumerate(ids) if tok in eos), len(ids))
            cut = int(min(cut, budget - len(completion[i])))
            ids, lps = ids[:cut], lps[:cut]
            completion[i] += ids
            mask[i] += [1] * len(ids)
            logprobs[i] += lps
            action = tokenizer.decode(ids, skip_special_tokens=True).strip()
            _, reward, terminated, trunc, info = envs[i].step(action)
            if terminated or trunc:
                rewards[i], truncated[i], infos[i] = reward, trunc, info
                continue
            env_ids = ([] if ids and ids[-1] in eos else [eos[0]]) + suffix([envs[i].messages[-1]])
            if len(completion[i]) + len(env_ids) >= budget:
                # No room for the tool output plus one more token: the episode ends here, truncated.
                score = score_episode(envs[i].adapter, envs[i].task, envs[i].trajectory)
                rewards[i], truncated[i] = score.value, True
                infos[i] = {
                    **info,
                    "score": score.value,
                    "score_breakdown": score.breakdown,
                    "truncated_by": "max_completion_length",
                }
                continue
            completion[i] += env_ids
            mask[i] += [0] * len(env_ids)
            logprobs[i] += [0.0] * len(env_ids)
            still_running.append(i)
        running = still_running

    episodes = [
        Episode(env.task, env.trajectory, rewards[i], list(env.messages), tools[i], infos[i], truncated[i])
        for i, env in enumerate(envs)
    ]
    return RolloutBatch(prompt_ids, completion, mask, logprobs if have_logprobs else None, rewards, episodes)


def play_episodes(
    adapter: BenchmarkAdapter,
    tasks: Sequence[Task],
    tokenizer: Any,
    generate: GenerateFn,
    *,
    eos_token_ids: Sequence[int],
    max_turns: int | None,
    max_completion_length: int | None = None,
    few_shot: FewShot = True,
    env_kwargs: dict[str, Any] | None = None,
) -> RolloutBatch:
    """Play one episode of each task (repeat a task to play it several times) with :func:`play_envs`."""
    envs = [ToolEnv(adapter, tasks=[task], max_turns=max_turns, **(env_kwargs or {})) for task in tasks]
    for env, task in zip(envs, tasks):
        env.reset(options={"task": task})
    return play_envs(
        envs,
        tokenizer,
        generate,
        eos_token_ids=eos_token_ids,
        max_completion_length=max_completion_length,
        few_shot=few_shot,
    )
