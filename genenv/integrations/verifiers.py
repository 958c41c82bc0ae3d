"""genenv benchmarks as a verifiers (``verifiers.v1``) environment: ``load_environment(benchmark="apibank")``.

verifiers finds a taskset by its id: an installed module (``-`` read as ``_``) that exports one ``Taskset`` subclass,
and here the ``Env`` that plays it, through ``__all__``. genenv installs one such module per built-in benchmark,
``genenv_<benchmark>`` (``vf-eval genenv-apibank``), whose taskset plays that benchmark (:func:`benchmark_taskset`),
and ``genenv_verifiers``, whose taskset plays any registered benchmark named by its ``benchmark`` field; they live in
``verifiers_environments/``.

The taskset (:class:`GenEnvTaskset`) yields one task per benchmark task; the env (:class:`GenEnvEnv`) plays each as
a multi-turn exchange with the ``player`` agent: the opening is
genenv's prompt (instructions, the tools' schemas, the request), each reply is one agent turn for
:meth:`ToolEnv.step <genenv.envs.tool_env.ToolEnv.step>` (tool calls in the benchmark's format, or the final answer),
and the tool output comes back as the next user turn, until the episode ends. The reward, ``official_score``, is
genenv's official score of the trace's replies (:func:`score_actions`: they are replayed through a fresh
``ToolEnv``, so any trace, a gold one included, is scored exactly as an episode of the same actions).

Needs the ``verifiers`` extra: ``pip install genenv[verifiers]``.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator
from typing import Any, Literal

try:
    import pydantic
    import verifiers.v1 as vf
    from verifiers.v1.harnesses.null import NullHarnessConfig
except ImportError as error:  # pragma: no cover - exercised only without the optional extra
    raise ImportError(
        "genenv's verifiers integration needs the verifiers extra, in an environment of its own (it pins mcp==2.0.0, "
        "which the openenv extra refuses): pip install 'genenv[verifiers]'"
    ) from error

from genenv.benchmarks.base import BenchmarkAdapter, Task, get_benchmark
from genenv.envs.tool_env import ToolEnv, score_actions

__all__ = ["GenEnvEnv", "GenEnvTaskset", "benchmark_taskset", "load_environment", "official_adapter", "taskset_id"]

#: the verifiers id of the taskset that plays any registered benchmark (its ``benchmark`` field names it)
TASKSET_ID = "genenv_verifiers"


@functools.cache
def official_adapter(benchmark: str, data_dir: str | None) -> BenchmarkAdapter:
    """The benchmark's adapter in official scoring, built once per process."""
    return get_benchmark(benchmark, data_dir=data_dir).reporting_adapter()


class GenEnvTaskConfig(vf.TaskConfig):
    max_turns: int | None = None
    """Agent turns per episode (the episode is truncated and scored after this many; ``None``: the benchmark's)."""


class GenEnvData(vf.TaskData):
    benchmark: str
    task: dict[str, Any]
    """genenv's task (``Task.to_dict``), gold included: the reward replays the replies on it."""
    data_dir: str | None = None


class GenEnvTask(vf.Task[GenEnvData, vf.State, GenEnvTaskConfig]):
    @property
    def key(self) -> str:
        return f"{self.data.benchmark}:{self.data.task['task_id']}"

    def genenv_task(self) -> Task:
        return Task.from_dict(self.data.task)

    @vf.reward(weight=1.0)
    async def official_score(self, trace: vf.Trace) -> float:
        """The benchmark's official score of the trace's replies, played as one genenv episode."""
        actions = [message.content or "" for message in trace.assistant_messages]
        adapter = official_adapter(self.data.benchmark, self.data.data_dir)
        return score_actions(adapter, self.genenv_task(), actions, self.config.max_turns)


class GenEnvTasksetConfig(vf.TasksetConfig):
    benchmark: str = "apibank"
    """A registered genenv benchmark."""
    split: str | None = None
    """The benchmark split (default: the adapter's first)."""
    data_dir: str | None = None
    """The benchmark's data folder (default: ``$GENENV_DATA_DIR/<benchmark>``)."""
    task: GenEnvTaskConfig = GenEnvTaskConfig()


class GenEnvTaskset(vf.Taskset[GenEnvTask, GenEnvTasksetConfig]):
    def load(self) -> Iterator[GenEnvTask]:
        config = self.config
        adapter = official_adapter(config.benchmark, config.data_dir)
        split = adapter.split_or_default(config.split)
        if split not in adapter.splits:
            raise ValueError(f"{adapter.name} has splits {adapter.splits}, not {split!r}")
        for index, task in enumerate(adapter.load_tasks(split)):
            data = GenEnvData(
                idx=index,
                name=task.task_id,
                prompt=None,  # the env opens each exchange with genenv's prompt
                benchmark=config.benchmark,
                task=task.to_dict(),
                data_dir=config.data_dir,
            )
            yield GenEnvTask(data, config.task)


def taskset_id(benchmark: str) -> str:
    """The verifiers id of ``benchmark``'s own taskset module: ``genenv_<benchmark>`` (``genenv_reasoning_gym``)."""
    return f"genenv_{benchmark.lower()}"


def benchmark_taskset(benchmark: str) -> type[GenEnvTaskset]:
    """A :class:`GenEnvTaskset` subclass that plays ``benchmark`` only (its config's ``benchmark`` accepts that name
    alone), for the benchmark's own verifiers module :func:`taskset_id`."""
    title = "".join(part.capitalize() for part in benchmark.split("_"))
    config = pydantic.create_model(
        f"{title}TasksetConfig",
        __base__=GenEnvTasksetConfig,
        __module__=taskset_id(benchmark),
        benchmark=(Literal[benchmark], benchmark),
    )
    namespace = {"__module__": taskset_id(benchmark), "__doc__": f"genenv's {benchmark} tasks, one per task of a split"}
    # new_class, not type(): the generic base must resolve (verifiers reads the config type from __orig_bases__)
    return types.new_class(
        f"{title}Taskset", (GenEnvTaskset, vf.Taskset[GenEnvTask, config]), exec_body=lambda ns: ns.update(namespace)
    )


class GenEnvEnvConfig(vf.EnvConfig):
    player: vf.AgentConfig = vf.AgentConfig(harness=NullHarnessConfig(id="null"), runtime=vf.SubprocessConfig())
    """The agent playing the episodes: by default verifiers' ``null`` harness (a plain chat loop, no tools of its
    own) in a local subprocess; model, client and sampling come from the run (``vf-eval`` / ``EvalConfig``)."""


class GenEnvEnv(vf.Env[GenEnvEnvConfig]):
    """One genenv episode per task: the player's replies step a :class:`ToolEnv`, its outputs are the user turns."""

    async def run(self, task: GenEnvTask, agents: vf.Agents) -> None:
        adapter = official_adapter(task.data.benchmark, task.data.data_dir)
        genenv_task = task.genenv_task()
        env = ToolEnv(adapter, tasks=[genenv_task], max_turns=task.config.max_turns)
        prompt, _ = env.reset(options={"task": genenv_task})
        async with agents.player.interaction(task) as interaction:
            segment = await interaction.turn(prompt)
            while not segment.terminated:
                _, _, terminated, truncated, _ = env.step(segment.last_reply)
                if terminated or truncated:
                    interaction.trace.stop("episode_over")
                    break
                segment = await interaction.turn(env.messages[-1]["content"])


def load_environment(benchmark: str = "apibank", **kwargs: Any) -> GenEnvEnv:
    """The verifiers env of ``benchmark``: ``split``, ``data_dir`` and ``max_turns`` choose the tasks and the episode
    length; ``player`` (a dict or ``vf.AgentConfig``) the agent; any other keyword is a ``vf.EnvConfig`` field."""
    taskset = {"id": TASKSET_ID, "benchmark": benchmark}
    taskset.update({key: kwargs.pop(key) for key in ("split", "data_dir") if key in kwargs})
    if "max_turns" in kwargs:
        taskset["task"] = {"max_turns": kwargs.pop("max_turns")}
    return vf.load_environment(vf.resolve_env_config({"taskset": taskset, **kwargs}))
