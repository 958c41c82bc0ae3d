"""``ToolEnv``: a Gymnasium env over any benchmark adapter.

``reset()`` draws a task (a real benchmark item, or one the simulator wrote and the adapter
validated) and returns its prompt; ``step(action_text)`` parses tool calls, executes them through
the adapter and returns the tool output as the next observation. A plain-text answer, or the
benchmark's terminal action, ends the episode with the adapter's score as reward, unless the adapter
has a next user message for it (``next_user_message``: multi-turn conversations such as BFCL's), which
then comes back as the observation and a ``user`` message. Bad actions never raise: they cost a turn,
earn 0 and come back with ``info["error"]`` set.
"""

from __future__ import annotations

import copy
import json
import logging
import pickle
import string
from collections.abc import Sequence
from typing import Any, Literal

import gymnasium as gym
from gymnasium import spaces

from genenv.benchmarks.base import BenchmarkAdapter, Score, StepResult, Task, Trajectory, Turn, as_adapter
from genenv.toolcalls import ToolCallParseError

logger = logging.getLogger(__name__)

MAX_TEXT_CHARS = 1 << 20


class UnicodeText(spaces.Text):
    """A :class:`gymnasium.spaces.Text` whose members may hold any unicode character.

    Sampling draws from printable ASCII; membership accepts every string within the length bounds.
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | None = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


class ToolEnv(gym.Env[str, str]):
    """Multi-turn tool use on one benchmark.

    Args:
        benchmark: a registered benchmark name or an adapter instance.
        task_source: ``"benchmark"`` samples real tasks of ``split``; ``"simulator"`` samples tasks
            written by ``simulator`` and kept only if ``adapter.validate_task`` accepts them.
        split: benchmark split (default: the adapter's first split).
        tasks: an explicit task list (overrides ``task_source``).
        simulator: a :class:`~genenv.envs.simulator.Simulator` or a model name for one (default
            ``"smollm2"``, loaded on the first ``reset``).
        max_turns: episode length limit (``None``: the benchmark's ``max_turns``, which its Gymnasium id registers
            as ``max_episode_steps``); reaching it (or the adapter's ``turn_limit`` of the task) truncates.
        max_action_chars: longer actions are refused with ``info["error"] == "action_too_long"`` (the
            ``action_space`` holds exactly the strings up to this length).
        max_calls_per_action: tool calls one action may make; the calls beyond it are not run, and the turn's
            error is ``too_many_calls``.
        expose_gold: put the task's gold answer into ``info["task"]`` (off: wrappers and loggers see the task
            without its answer).
        max_observation_chars: tool output beyond this is cut, and the cut is stated.
        simulator_attempts: generation batches tried per ``reset`` before giving up.
        fallback: what ``reset`` does when the simulator wrote no valid task in
            ``simulator_attempts`` batches: ``"benchmark"`` uses a real task of ``split`` (logged, and
            ``info["task_origin"] == "benchmark_fallback"``), ``"error"`` raises.
        data_dir: the benchmark's data folder (default ``$GENENV_DATA_DIR/<benchmark>``).
    """

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        benchmark: str | BenchmarkAdapter = "apibank",
        *,
        task_source: Literal["benchmark", "simulator"] = "benchmark",
        split: str | None = None,
        tasks: list[Task] | None = None,
        simulator: Any = "smollm2",
        max_turns: int | None = None,
        max_action_chars: int = 32_768,
        max_calls_per_action: int = 16,
        expose_gold: bool = False,
        max_observation_chars: int = 16_384,
        simulator_attempts: int = 4,
        fallback: Literal["benchmark", "error"] = "benchmark",
        data_dir: str | None = None,
        render_mode: str | None = None,
        **adapter_kwargs: Any,
    ) -> None:
        if task_source not in ("benchmark", "simulator"):
            raise ValueError(f"task_source must be 'benchmark' or 'simulator', got {task_source!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"unsupported render_mode {render_mode!r}")
        if data_dir is not None:
            adapter_kwargs["data_dir"] = data_dir
        self.adapter = as_adapter(benchmark, **adapter_kwargs)
        self.split = self.adapter.split_or_default(split)
        if self.split not in self.adapter.splits:
            raise ValueError(f"{self.adapter.name} has splits {self.adapter.splits}, not {self.split!r}")
        self.task_source = "tasks" if tasks is not None else task_source
        self._tasks = list(tasks) if tasks is not None else None
        self._simulator = simulator
        self._generated: list[Task] = []
        self.generation_log: list[dict[str, Any]] = []
        self.max_turns = self.adapter.max_turns if max_turns is None else max_turns
        if not isinstance(self.max_turns, int) or self.max_turns < 1:
            raise ValueError(f"max_turns must be a positive integer, got {self.max_turns!r}")
        self.max_action_chars = max_action_chars
        if max_calls_per_action < 1:
            raise ValueError(f"max_calls_per_action must be at least 1, got {max_calls_per_action}")
        self.max_calls_per_action = max_calls_per_action
        self.expose_gold = expose_gold
        self.max_observation_chars = max_observation_chars
        self.simulator_attempts = simulator_attempts
        self.fallback = fallback
        self.render_mode = render_mode

        self.observation_space = UnicodeText(MAX_TEXT_CHARS)
        self.action_space = UnicodeText(max_action_chars)

        self.task: Task | None = None
        self.trajectory = Trajectory()
        self.messages: list[dict[str, Any]] = []
        self._state: Any = None
        self._done = True
        self._task_origin = ""

    # -- task sampling -----------------------------------------------------------------------
    @property
    def benchmark_tasks(self) -> list[Task]:
        """The real tasks of ``split`` (or the explicit ``tasks``), loaded on first use."""
        if self._tasks is None:
            self._tasks = self.adapter.load_tasks(self.split)
            if not self._tasks:
                raise ValueError(f"{self.adapter.name} split {self.split!r} has no tasks")
        return self._tasks

    @property
    def simulator(self):
        """The task-writing simulator, built on first use when given as a model name."""
        if isinstance(self._simulator, str):
            from genenv.envs.simulator import Simulator

            self._simulator = Simulator(self._simulator)
        return self._simulator

    def _sample_task(self) -> tuple[Task, str]:
        if self.task_source != "simulator":
            tasks = self.benchmark_tasks
            return tasks[int(self.np_random.integers(len(tasks)))], self.task_source
        reasons: list[str] = []
        for _ in range(self.simulator_attempts):
            if self._generated:
                break
            proposals = self.simulator.propose(self.adapter, rng=self.np_random)
            for proposal in proposals:
                self.generation_log.append(proposal.to_dict())
                if proposal.task is not None:
                    self._generated.append(proposal.task)
                else:
                    reasons.append(proposal.reject_reason)
        if self._generated:
            return self._generated.pop(0), "simulator"
        summary = "; ".join(sorted(set(reasons))[:5])
        if self.fallback == "error":
            raise RuntimeError(
                f"the simulator wrote no valid {self.adapter.name} task in {self.simulator_attempts} "
                f"batches; reasons: {summary}"
            )
        logger.warning("simulator wrote no valid task (%s); using a benchmark task instead", summary)
        tasks = self.benchmark_tasks
        return tasks[int(self.np_random.integers(len(tasks)))], "benchmark_fallback"

    # -- Gymnasium API -----------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        """Start an episode. ``options={"task": Task | dict}`` plays that task instead of sampling; a task that is
        not one raises ``ValueError`` naming what is wrong, before anything of the env changes.

        The same ``seed`` gives the same task and observation, and the same tasks on the unseeded resets that follow,
        simulator-written tasks included: the simulator's batch is written from ``np_random`` (its prompts and its
        sampling seed), and the tasks left from earlier batches are dropped. That holds for the same simulator
        weights on an engine that honours the sampling seed (``hf``, the default, and ``llamacpp``; not
        ``ctranslate2``'s unconstrained sampling). Without a seed, reset goes on from the generator as it is."""
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"reset options must be a dict, not {type(options).__name__}")
        forced = (options or {}).get("task")
        if forced is not None:
            task, origin = _as_task(forced), "options"
            try:
                system, tools, state = self._begin(task)
            except (AttributeError, KeyError, TypeError, IndexError) as error:
                raise ValueError(
                    f"options['task'] is not a {self.adapter.name} task: {type(error).__name__}: {error} (its "
                    "'gold' and 'metadata' must have the form of the benchmark's own tasks)"
                ) from error
            self._seed(seed)
        else:
            self._seed(seed)
            task, origin = self._sample_task()
            system, tools, state = self._begin(task)
        self.task, self._task_origin, self._state = task, origin, state
        self.trajectory = Trajectory()
        self._done = False
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": task.prompt}]
        observation = render_prompt(system, tools, task.prompt)
        return observation, self._info(tools=tools)

    def _seed(self, seed: int | None) -> None:
        """Seed ``np_random`` (Gymnasium's ``reset(seed=...)``); a seed also drops the simulator-written tasks kept from
        earlier batches, so the tasks of this reset and the unseeded resets after it are written from the seed."""
        super().reset(seed=seed)
        if seed is not None:
            self._generated.clear()

    def _begin(self, task: Task) -> tuple[str, list[dict[str, Any]], Any]:
        """The system prompt, the tools and the fresh back-end state of an episode of ``task`` (its family read too,
        so a task the adapter cannot read fails here)."""
        system, tools = self.adapter.system_prompt(task), self.adapter.tools(task)
        self.adapter.family(task)
        return system, tools, self.adapter.start(task)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        if self.task is None or self._done:
            return "The episode is over; call reset().", 0.0, True, False, self._info(error="episode_over")
        turn = Turn(action=action if isinstance(action, str) else repr(action)[:200])
        self.trajectory.turns.append(turn)
        self.messages.append({"role": "assistant", "content": turn.action})

        observation, terminated = self._act(action, turn)
        role = "tool"
        if terminated and not turn.calls and self.trajectory.final_answer is not None:
            follow_up = self.adapter.next_user_message(self._state, self.trajectory.final_answer)
            if follow_up is not None:  # a multi-turn conversation: the answer closes one user turn, not the episode
                self.trajectory.final_answer = None
                observation, terminated, role = follow_up, False, "user"
        limit = self.adapter.turn_limit(self.task)
        truncated = not terminated and len(self.trajectory.turns) >= min(self.max_turns, limit or self.max_turns)
        reward, score = 0.0, None
        if terminated or truncated:
            self._done = True
            score = score_episode(self.adapter, self.task, self.trajectory)
            reward = score.value
        else:
            self.messages.append({"role": role, "content": observation})
        return observation, reward, terminated, truncated, self._info(error=turn.error, score=score)

    def _act(self, action: Any, turn: Turn) -> tuple[str, bool]:
        """Parse and execute one action; returns (observation, terminated)."""
        if not isinstance(action, str):
            return self._refuse(turn, "bad_action_type", f"An action must be text, not {type(action).__name__}.")
        if len(action) > self.max_action_chars:
            return self._refuse(
                turn,
                "action_too_long",
                f"The action has {len(action)} characters; the limit is {self.max_action_chars}.",
            )
        if not action.strip():
            return self._refuse(turn, "empty_action", "The action is empty. Call a tool or answer the user.")
        try:
            calls = self.adapter.parse_action(action, self._state)
        except ToolCallParseError as error:
            return self._refuse(turn, error.kind, f"Could not read your tool call: {error}")
        if not calls:
            self.trajectory.final_answer = action.strip()
            return "", True
        outputs = []
        if len(calls) > self.max_calls_per_action:
            turn.error = "too_many_calls"
            outputs.append(
                f"Error (too_many_calls): the action makes {len(calls)} tool calls; only the first "
                f"{self.max_calls_per_action} run."
            )
            calls = calls[: self.max_calls_per_action]
        for call in calls:
            result = self._execute(call)
            turn.calls.append(call)
            turn.results.append(result)
            if result.error and turn.error is None:
                turn.error = result.error
            outputs.append(result.observation)
            if result.done:
                break
        observation = self._clip("\n".join(outputs))
        return observation, any(result.done for result in turn.results)

    def _execute(self, call) -> StepResult:
        try:
            return self.adapter.execute(self._state, call)
        except Exception as error:  # an adapter bug must not kill a training run; it is reported
            logger.exception("adapter %s raised on %s", self.adapter.name, call.name)
            return StepResult(observation=f"Error: the tool {call.name} failed: {error}", error="adapter_error")

    def _refuse(self, turn: Turn, kind: str, message: str) -> tuple[str, bool]:
        turn.error = kind
        return self._clip(f"Error ({kind}): {message}"), False

    def _clip(self, text: str) -> str:
        if len(text) <= self.max_observation_chars:
            return text
        cut = len(text) - self.max_observation_chars
        return text[: self.max_observation_chars] + f"\n...[{cut} characters cut]"

    def _info(self, *, tools: list | None = None, error: str | None = None, score: Score | None = None) -> dict:
        info: dict[str, Any] = {
            "task": self._public_task(),
            "family": self.adapter.family(self.task) if self.task else None,
            "task_origin": self._task_origin,
            "turn": len(self.trajectory.turns),
            "error": error,
        }
        if tools is not None:
            info["tools"] = tools
            info["messages"] = [dict(message) for message in self.messages]
        if score is not None:
            info["score"] = score.value
            info["score_breakdown"] = score.breakdown
        return info

    def _public_task(self) -> dict[str, Any] | None:
        if self.task is None:
            return None
        task = self.task.to_dict()
        if not self.expose_gold:
            del task["gold"]
        return task

    def __deepcopy__(self, memo: dict[int, Any]) -> ToolEnv:
        try:
            copy.deepcopy(self.adapter, memo)
        except Exception as error:  # noqa: BLE001 - whatever the adapter holds that cannot be copied
            raise TypeError(_not_copyable(self.adapter, error)) from error
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            setattr(new, key, copy.deepcopy(value, memo))
        return new

    def __getstate__(self) -> dict[str, Any]:
        try:
            pickle.dumps(self.adapter)
        except Exception as error:  # noqa: BLE001
            raise TypeError(_not_copyable(self.adapter, error)) from error
        return self.__dict__.copy()

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return "\n".join(f"[{m['role']}] {m['content']}" for m in self.messages)


def _not_copyable(adapter: BenchmarkAdapter, error: Exception) -> str:
    return (
        f"this {adapter.name} env cannot be copied or pickled: its adapter holds {type(error).__name__}: {error}; "
        "make another env with gym.make(...) instead"
    )


def _as_task(value: Any) -> Task:
    """``options['task']`` as a :class:`Task`; anything else raises ``ValueError`` naming the field at fault."""
    if not isinstance(value, (Task, dict)):
        raise ValueError(f"options['task'] must be a Task or a dict, not {type(value).__name__}")
    try:
        if isinstance(value, dict):
            return Task.from_dict(value)
        value.check()
    except ValueError as error:
        hidden_gold = isinstance(value, dict) and "gold" not in value
        hint = " (info['task'] holds 'gold' only with expose_gold=True)" if hidden_gold else ""
        raise ValueError(f"options['task']: {error}{hint}") from None
    return value


def score_episode(adapter: BenchmarkAdapter, task: Task, trajectory: Trajectory) -> Score:
    """The adapter's score of an episode; a scoring error scores 0 with the reason kept (and logged)."""
    try:
        return adapter.score(task, trajectory)
    except Exception as error:  # an adapter bug must not kill a training run; it is reported
        logger.exception("adapter %s failed to score task %s", adapter.name, task.task_id)
        return Score(0.0, {"error": f"scoring failed: {error}"})


def score_actions(adapter: BenchmarkAdapter, task: Task, actions: Sequence[str], max_turns: int | None = None) -> float:
    """The reward of ``actions`` played in order on ``task`` in a fresh :class:`ToolEnv` (actions after the episode
    ends are not played; actions that never end it are scored as a truncated episode)."""
    env = ToolEnv(adapter, tasks=[task], max_turns=max_turns)
    env.reset(options={"task": task})
    for action in actions:
        _, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return float(reward)
    return score_episode(adapter, task, env.trajectory).value


def render_prompt(system: str, tools: list[dict[str, Any]], request: str) -> str:
    """The plain-text prompt: instructions, tool schemas (one JSON per line), the user's request."""
    schemas = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    return f"{system}\n\nTools:\n{schemas}\n\nUser:\n{request}"
