"""The adapter protocol: what one benchmark provides to genenv, and the registry of benchmarks.

A benchmark is one :class:`BenchmarkAdapter` subclass registered by name with
:func:`register_benchmark` (or advertised by an installed package through the
``genenv.benchmarks`` entry-point group); each has the Gymnasium id :func:`env_id` gives
(``GenEnv-<Name>-v0``, in :data:`ENV_IDS`). Everything else in genenv (the Gymnasium
:class:`~genenv.envs.tool_env.ToolEnv`, the simulator, the trainer, the evaluator) talks
to benchmarks only through this protocol. :class:`~genenv.toolcalls.ToolCall` is re-exported here, beside the
other types an adapter speaks in.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, ClassVar, Literal

from gymnasium.envs.registration import register
from gymnasium.envs.registration import registry as gym_registry

from genenv.toolcalls import ToolCall, parse_tool_calls

logger = logging.getLogger(__name__)

DATA_DIR_ENV = "GENENV_DATA_DIR"
ENTRY_POINT_GROUP = "genenv.benchmarks"


@dataclass
class Task:
    """One episode's worth of work: what the agent is asked and what counts as solving it.

    ``gold`` is benchmark-specific (gold calls, answers, a goal) and must be JSON-serialisable,
    so tasks can be stored in pools and checkpoints. ``source`` is ``"benchmark"`` for a real
    benchmark item and ``"generated"`` for a simulator-written one.
    """

    task_id: str
    benchmark: str
    prompt: str
    gold: Any
    split: str = ""
    source: Literal["benchmark", "generated"] = "benchmark"
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Task:
        """The task :meth:`to_dict` wrote; a missing, unknown or mistyped field raises ``ValueError`` naming it."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a task must be a dict, not {type(data).__name__}")
        known = fields(cls)
        names = {f.name for f in known}
        unknown = sorted(str(key) for key in data if key not in names)
        if unknown:
            raise ValueError(f"a task has no field {', '.join(map(repr, unknown))}")
        required = [f.name for f in known if f.default is MISSING and f.default_factory is MISSING]
        missing = [name for name in required if name not in data]
        if missing:
            raise ValueError(f"the task lacks {', '.join(map(repr, missing))}")
        task = cls(**data)
        task.check()
        return task

    def check(self) -> None:
        """Raise ``ValueError`` naming the first field of the wrong type (``gold`` may be any JSON value)."""
        for name, kind in _FIELD_TYPES.items():
            value = getattr(self, name)
            if not isinstance(value, kind):
                raise ValueError(f"the task's {name!r} must be a {kind.__name__}, not {type(value).__name__}")
        if self.source not in ("benchmark", "generated"):
            raise ValueError(f"the task's 'source' must be 'benchmark' or 'generated', not {self.source!r}")


#: the type of each :class:`Task` field but ``gold`` and ``source``
_FIELD_TYPES: dict[str, type] = {"task_id": str, "benchmark": str, "prompt": str, "split": str, "metadata": dict}


@dataclass
class StepResult:
    """What executing one tool call produced.

    ``observation`` is the text shown to the agent. ``error`` is ``None`` or a machine-readable
    kind: ``"unknown_tool"``, ``"unknown_argument"``, ``"missing_argument"``, ``"wrong_type"``,
    ``"execution_error"`` (the tool ran and failed), or a benchmark-specific kind.
    ``done`` is set when the call is the benchmark's terminal action.
    """

    observation: str
    output: Any = None
    error: str | None = None
    done: bool = False


@dataclass
class Turn:
    """One agent action and what the environment answered."""

    action: str
    calls: list[ToolCall] = field(default_factory=list)
    results: list[StepResult] = field(default_factory=list)
    error: str | None = None


@dataclass
class Trajectory:
    """A whole episode: the turns in order and the final free-text answer, if one was given."""

    turns: list[Turn] = field(default_factory=list)
    final_answer: str | None = None

    @property
    def calls(self) -> list[ToolCall]:
        return [call for turn in self.turns for call in turn.calls]

    @property
    def results(self) -> list[StepResult]:
        return [result for turn in self.turns for result in turn.results]


@dataclass(frozen=True)
class Score:
    """An episode's score in [0, 1] with the benchmark's own breakdown (per-metric values)."""

    value: float
    breakdown: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 <= self.value <= 1.0:
            raise ValueError(f"score must lie in [0, 1], got {self.value}")


class DataNotFoundError(FileNotFoundError):
    """Raised when benchmark data is missing; the message names files, setting and origin."""


class BenchmarkAdapter(ABC):
    """One benchmark: data loading, tools, execution, official scoring, generated-task schema.

    Subclasses set ``name``, ``splits`` and ``max_turns`` and implement the abstract methods. State that a
    tool back-end mutates during an episode lives in the object returned by :meth:`start`;
    the adapter itself stays immutable after construction so one instance serves many envs.

    The class attributes below are the benchmark's defaults for every entry point: ``gym.make`` (the registered
    ``max_episode_steps``), ``genenv.train``, ``genenv.evaluate``, ``genenv.serve``, TRL and verifiers all read them
    (:meth:`bench_defaults`), and the keyword defaults of ``__init__`` are its ``options``.
    """

    name: ClassVar[str]
    splits: ClassVar[tuple[str, ...]]
    #: the episode length: agent turns before an episode is truncated (Gymnasium's ``max_episode_steps``).
    max_turns: ClassVar[int]
    #: the split ``gym.make`` and ``genenv.evaluate`` play (``None``: the first of ``splits``).
    default_split: ClassVar[str | None] = None
    #: the held-out split ``genenv.train`` scores before training and after each epoch (``None``: none).
    validation_split: ClassVar[str | None] = None
    #: the training split whose expert traces are D_train's base data (``None``: no base data).
    base_split: ClassVar[str | None] = None
    #: at most this many base tasks, evenly spread over ``base_split`` (``None``: all).
    base_limit: ClassVar[int | None] = None
    #: whether its tasks offer tools (``False``: none does, and the TRL and verifiers doors advertise no tool).
    has_tools: ClassVar[bool] = True
    #: a YAML file beside the adapter's module whose keys override :meth:`bench_defaults` (``None``: none).
    bench_yaml: ClassVar[str | None] = None
    #: JSON schema of the object the simulator must write for a generated task.
    task_schema: ClassVar[dict[str, Any]] = {}

    def __init__(self, data_dir: str | os.PathLike[str] | None = None) -> None:
        self.data_dir = resolve_data_dir(self.name, data_dir)

    def split_or_default(self, split: str | None) -> str:
        """``split``, or the benchmark's default one (``default_split``; without one, the first of ``splits``)."""
        return split or self.default_split or self.splits[0]

    @classmethod
    def bench_defaults(cls) -> dict[str, Any]:
        """The benchmark's config (the ``bench`` node of ``+bench=NAME``): ``name``, ``split``, ``max_turns``,
        ``validation_split``, ``base_split``, ``base_limit`` and ``options``, the keyword defaults of ``__init__``
        (``data_dir`` aside); then the keys of :attr:`bench_yaml`, if the adapter ships one."""
        keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        options = {
            param.name: list(param.default) if isinstance(param.default, tuple) else param.default
            for param in inspect.signature(cls.__init__).parameters.values()
            if param.name not in ("self", "data_dir") and param.kind in keyword and param.default is not param.empty
        }
        defaults = {
            "name": cls.name,
            "split": cls.default_split or cls.splits[0],
            "max_turns": cls.max_turns,
            "validation_split": cls.validation_split,
            "base_split": cls.base_split,
            "base_limit": cls.base_limit,
            "options": options,
        }
        if cls.bench_yaml is None:
            return defaults
        import yaml

        path = Path(inspect.getfile(cls)).parent / cls.bench_yaml
        override = yaml.safe_load(path.read_text()) or {}
        if not isinstance(override, dict) or not set(override) <= set(defaults) - {"name"}:
            unknown = sorted(set(override) - set(defaults)) if isinstance(override, dict) else override
            raise ValueError(f"{path}: a bench YAML holds keys of {sorted(set(defaults) - {'name'})}, got {unknown}")
        options.update(override.pop("options", None) or {})
        return {**defaults, **override, "options": options}

    # -- data ---------------------------------------------------------------------------
    @abstractmethod
    def load_tasks(self, split: str) -> list[Task]:
        """All tasks of ``split``; raises :class:`DataNotFoundError` when files are missing."""

    # -- tools and execution ------------------------------------------------------------
    @abstractmethod
    def tools(self, task: Task) -> list[dict[str, Any]]:
        """Tool schemas offered for ``task``, OpenAI/TRL function format."""

    @abstractmethod
    def start(self, task: Task) -> Any:
        """Fresh per-episode back-end state for ``task``."""

    @abstractmethod
    def execute(self, state: Any, call: ToolCall) -> StepResult:
        """Run ``call`` against ``state``. Never raises on bad calls: returns ``error``."""

    def parse_action(self, text: str, state: Any) -> list[ToolCall]:
        """The tool calls in one action of the episode ``state`` (``[]``: a plain answer); raises
        :class:`~genenv.toolcalls.ToolCallParseError`. The default reads every format
        :func:`~genenv.toolcalls.parse_tool_calls` reads; an adapter whose official evaluator reads
        model text its own way overrides it (API-Bank's ``scoring`` option)."""
        return parse_tool_calls(text)

    def scoring_mode(self) -> dict[str, Any] | None:
        """How this adapter scores (mode, deviations), for results files; ``None``: one mode only."""
        return None

    def reporting_adapter(self) -> BenchmarkAdapter:
        """The adapter whose scores are reported (validation during training): this one, or, where this one
        scores leniently for training, its official counterpart over the same tasks."""
        return self

    def system_prompt(self, task: Task) -> str:
        """Benchmark instructions placed before the tool schemas (override to customise)."""
        return "You are a helpful assistant that solves the user's request by calling tools."

    def few_shot_exchanges(self) -> list[dict[str, Any]] | None:
        """Worked exchanges (user, assistant, tool messages) the agent sees before each request, in this
        benchmark's own tools and answer form; ``None``: the generic tool-call exchanges
        (:data:`genenv.agents.rollout.FEW_SHOT_EXCHANGES`)."""
        return None

    def format_call(self, name: str, arguments: dict[str, Any]) -> str:
        """One tool call written the way this benchmark's system prompt asks the agent to write it (the default:
        ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, the chat template's own form)."""
        return (
            "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False) + "\n</tool_call>"
        )

    def gold_actions(self, task: Task) -> Iterable[list[str]]:
        """The task's gold trajectory as the agent's actions, the text of each of its turns: the gold calls written
        with :meth:`format_call`, then the final answer. Each item is one way of writing the whole trajectory,
        preferred first; none when the task has no gold trajectory. :func:`genenv.envs.expert.expert_messages`
        plays them through a :class:`~genenv.envs.tool_env.ToolEnv` and keeps the first that makes a complete
        episode, with the outputs the env executed: an expert trace, D_train's base data and the agent's warm
        start."""
        return ()

    def turn_limit(self, task: Task) -> int | None:
        """The benchmark's own limit on the agent's turns for ``task`` (``None``: only the env's ``max_turns``), e.g.
        one turn where the official evaluation takes one model output per sample."""
        return None

    def next_user_message(self, state: Any, answer: str) -> str | None:
        """The user's next message after the plain-text ``answer`` (multi-turn conversations), or ``None``
        to end the episode there (the default: one user request per episode)."""
        return None

    # -- scoring ------------------------------------------------------------------------
    @abstractmethod
    def score(self, task: Task, trajectory: Trajectory) -> Score:
        """Score an episode exactly as the benchmark's official evaluation does."""

    @abstractmethod
    def family(self, task: Task) -> str:
        """The unit the curriculum tracks success for (API name, task type, category, ...)."""

    def aggregate(self, tasks: list[Task], scores: list[Score]) -> dict[str, float]:
        """Benchmark-level metrics over scored episodes, as the benchmark reports them.

        The default is the mean score and the mean of every numeric breakdown entry; adapters
        override it with their official aggregates (per level, per category, group averages).
        """
        metrics: dict[str, float] = {"n": float(len(scores))}
        if not scores:
            return metrics
        metrics["score"] = sum(score.value for score in scores) / len(scores)
        keys = {
            k for s in scores for k, v in s.breakdown.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
        }
        for key in sorted(keys):
            values = [s.breakdown[key] for s in scores if isinstance(s.breakdown.get(key), (int, float))]
            metrics[key] = sum(values) / len(values)
        return metrics

    # -- generated tasks ----------------------------------------------------------------
    def families(self) -> list[str]:
        """Families the simulator may be asked to write tasks for."""
        raise NotImplementedError(f"{self.name} does not support generated tasks")

    # ``rng`` below is a ``numpy.random.Generator`` (what Gymnasium's ``np_random`` is).
    def generation_context(self, family: str, rng: Any, success: Mapping[str, float] | None = None) -> str:
        """What the simulator needs to know to write a task of ``family`` (specs, world state).

        ``success`` maps every family seen so far to the agent's recent success rate; an adapter
        whose families are levels of one task kind may quote the neighbouring levels' rates."""
        raise NotImplementedError(f"{self.name} does not support generated tasks")

    def request_success(self, family: str, success: Mapping[str, float]) -> float | None:
        """The agent's recent success on what a request for ``family`` writes, from ``success`` (the recent success
        per family key of :meth:`family`): ``success[family]`` unless the adapter's requests span several keys."""
        return success.get(family)

    def requested_family(self, task: Task) -> str:
        """The request (one of :meth:`families`) that ``task`` answers: its :meth:`family` unless the adapter's
        requests span several keys."""
        return self.family(task)

    def generation_schema(self, family: str) -> dict[str, Any] | None:
        """A JSON schema the simulator's answer for ``family`` is constrained to while it is
        generated (e.g. ``task_schema`` with that family's exact argument names and types), or
        ``None`` to generate unconstrained."""
        return None

    def generation_examples(self, family: str, k: int, rng: Any) -> list[dict[str, Any]]:
        """Up to ``k`` example objects in ``task_schema`` format, drawn from training data."""
        raise NotImplementedError(f"{self.name} does not support generated tasks")

    def parse_task(self, obj: dict[str, Any], family: str | None = None) -> Task:
        """Turn one simulator JSON object into a :class:`Task`; raises ``ValueError`` with a reason."""
        raise NotImplementedError(f"{self.name} does not support generated tasks")

    def validate_task(self, task: Task) -> tuple[bool, str]:
        """Whether a generated task is solvable (its gold solution works); returns (ok, reason).

        May complete ``task.gold`` in place with what validation computed (e.g. the gold call's
        executed result), so a validated task scores exactly like a benchmark task.
        """
        raise NotImplementedError(f"{self.name} does not support generated tasks")


def string_tool(name: str, description: str, params: Mapping[str, str]) -> dict[str, Any]:
    """An OpenAI-style function tool whose parameters (name -> description) are all required strings."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {param: {"type": "string", "description": text} for param, text in params.items()},
                "required": list(params),
            },
        },
    }


# -- data directory ----------------------------------------------------------------------


def resolve_data_dir(benchmark: str, data_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where ``benchmark``'s data lives: ``data_dir`` if given, else ``$GENENV_DATA_DIR/<benchmark>``.

    The path is not checked here; adapters check for the files they need with
    :func:`require_files` so the error can name them.
    """
    if data_dir is not None:
        return Path(data_dir)
    root = os.environ.get(DATA_DIR_ENV)
    if root:
        return Path(root) / benchmark
    return Path.cwd() / "data" / benchmark


class DataFileError(ValueError):
    """A benchmark data file is there but cannot be read (truncated or damaged)."""


def read_data_json(path: Path, benchmark: str, how_to_get: str, *, lines: bool = False) -> Any:
    """A benchmark data file's JSON (``lines=True``: JSON Lines, one object a line); a damaged file raises
    :class:`DataFileError` naming it, the setting that points at it and where to get it again."""
    try:
        with open(path, encoding="utf-8") as handle:
            if not lines:
                return json.load(handle)
            return [json.loads(line) for line in handle if line.strip()]
    except (ValueError, UnicodeDecodeError) as error:
        raise DataFileError(
            f"{benchmark} data file {path} cannot be read ({type(error).__name__}: {error}); it is truncated or "
            f"damaged. Replace it in the folder that {DATA_DIR_ENV} (or `data_root`) points at.\n"
            f"How to get the data: {how_to_get}"
        ) from None


def require_files(data_dir: Path, files: list[str], benchmark: str, how_to_get: str) -> None:
    """Raise :class:`DataNotFoundError` naming every missing file, the setting and the origin."""
    missing = [name for name in files if not (data_dir / name).exists()]
    if missing:
        listed = "\n  ".join(str(data_dir / name) for name in missing)
        raise DataNotFoundError(
            f"{benchmark} data not found; missing:\n  {listed}\n"
            f"Set the data root with the environment variable {DATA_DIR_ENV} or the config key "
            f"`data_root` (its '{benchmark}/' sub-folder is used), or pass data_dir= (this "
            f"benchmark's own folder) to the adapter.\n"
            f"How to get the data: {how_to_get}"
        )


# -- registry ----------------------------------------------------------------------------

_REGISTRY: dict[str, type[BenchmarkAdapter]] = {}
# Built-in adapters: light modules whose heavy dependencies load on first use.
_BUILTIN: dict[str, str] = {
    "apibank": "genenv.benchmarks.apibank:APIBankAdapter",
    "alfworld": "genenv.benchmarks.alfworld:ALFWorldAdapter",
    "reasoning_gym": "genenv.benchmarks.reasoning_gym:ReasoningGymAdapter",
    "bamboogle": "genenv.benchmarks.bamboogle:BamboogleAdapter",
    "travelplanner": "genenv.benchmarks.travelplanner:TravelPlannerAdapter",
    "bfcl": "genenv.benchmarks.bfcl:BFCLAdapter",
}
#: the built-in benchmarks' names in their Gymnasium ids; any other name is written in CamelCase there
_ENV_NAMES: dict[str, str] = {
    "apibank": "APIBank",
    "alfworld": "ALFWorld",
    "reasoning_gym": "ReasoningGym",
    "bamboogle": "Bamboogle",
    "travelplanner": "TravelPlanner",
    "bfcl": "BFCL",
}
#: Gymnasium id -> benchmark name, for every registered benchmark. ``gym.make(id)`` samples simulator-written tasks;
#: pass ``task_source="benchmark", split=...`` for the real benchmark tasks.
ENV_IDS: dict[str, str] = {}


def env_id(name: str) -> str:
    """The Gymnasium id of benchmark ``name``: ``GenEnv-<Name>-v0`` (``my_bench``: ``GenEnv-MyBench-v0``)."""
    key = name.lower()
    title = _ENV_NAMES.get(key) or "".join(part.capitalize() for part in re.findall(r"[a-z0-9]+", key))
    return f"GenEnv-{title}-v0"


def registered_episode_steps(max_turns: int) -> int | None:
    """The ``max_episode_steps`` a benchmark's id registers: its episode length, except for a one-turn benchmark
    (``None``), whose only step Gymnasium's ``TimeLimit`` would mark truncated even where the episode terminated (the
    env's own ``max_turns`` still ends it after that turn)."""
    return max_turns if max_turns > 1 else None


def _register_env(key: str, max_turns: int) -> None:
    """Register benchmark ``key``'s Gymnasium id: a :class:`~genenv.envs.tool_env.ToolEnv` over it whose
    ``max_episode_steps`` is the benchmark's episode length (:func:`registered_episode_steps`). An id another benchmark
    holds already stays that one's (logged)."""
    env = env_id(key)
    spec = gym_registry.get(env)
    if spec is None:
        register(
            id=env,
            entry_point="genenv.envs.tool_env:ToolEnv",
            kwargs={"benchmark": key, "task_source": "simulator"},
            max_episode_steps=registered_episode_steps(max_turns),
        )
    elif spec.kwargs.get("benchmark") != key:
        logger.warning(
            "benchmark %r gets no Gymnasium id: %s is registered to %s", key, env, spec.kwargs or spec.entry_point
        )
        return
    ENV_IDS[env] = key


def register_benchmark(name: str | None = None):
    """Class decorator (or plain call) that registers an adapter class under ``name``, and its Gymnasium id."""

    def decorator(cls: type[BenchmarkAdapter]) -> type[BenchmarkAdapter]:
        key = (name or cls.name).lower()
        existing = _REGISTRY.get(key)
        if existing is not None and existing is not cls:
            raise ValueError(f"benchmark {key!r} is already registered by {existing.__qualname__}")
        turns = getattr(cls, "max_turns", None)
        if not isinstance(turns, int) or isinstance(turns, bool) or turns < 1:
            raise TypeError(
                f"{cls.__qualname__} must state its episode length as a class attribute max_turns (a positive int), "
                f"got {turns!r}"
            )
        _REGISTRY[key] = cls
        _register_env(key, turns)
        return cls

    return decorator


def _load_entry_points(found: Iterable[EntryPoint] | None = None) -> None:
    """Register the adapters that installed packages advertise (or the entry points ``found``); a broken one is
    logged, not fatal."""
    for ep in entry_points(group=ENTRY_POINT_GROUP) if found is None else found:
        key = ep.name.lower()
        if key in _REGISTRY or key in _BUILTIN:
            continue
        try:
            register_benchmark(key)(ep.load())
        except Exception:
            logger.exception("could not load benchmark %r from entry point %s", ep.name, ep.value)


def _load_builtin(key: str) -> None:
    module_name, _, class_name = _BUILTIN[key].partition(":")
    cls = getattr(import_module(module_name), class_name)
    if key not in _REGISTRY:
        register_benchmark(key)(cls)


def available_benchmarks() -> list[str]:
    """Names of every registered benchmark, built-in and from entry points."""
    _load_entry_points()
    return sorted(set(_REGISTRY) | set(_BUILTIN))


def get_benchmark_class(name: str) -> type[BenchmarkAdapter]:
    """The adapter class registered as ``name`` (case-insensitive)."""
    key = name.lower()
    if key not in _REGISTRY and key in _BUILTIN:
        _load_builtin(key)
    if key not in _REGISTRY:
        _load_entry_points()
    if key not in _REGISTRY:
        raise KeyError(f"unknown benchmark {name!r}; available: {', '.join(available_benchmarks())}")
    return _REGISTRY[key]


def get_benchmark(name: str, **kwargs: Any) -> BenchmarkAdapter:
    """Instantiate the adapter registered as ``name`` (case-insensitive)."""
    return get_benchmark_class(name)(**kwargs)


def as_adapter(benchmark: str | BenchmarkAdapter, **adapter_kwargs: Any) -> BenchmarkAdapter:
    """``benchmark`` itself when it is an adapter instance, else the adapter registered under that name, built with
    ``adapter_kwargs``; options given with an instance (built already) are an error rather than ignored."""
    if isinstance(benchmark, BenchmarkAdapter):
        if adapter_kwargs:
            raise ValueError(f"adapter options {sorted(adapter_kwargs)} given with an adapter instance")
        return benchmark
    return get_benchmark(benchmark, **adapter_kwargs)


def register_installed() -> None:
    """Register the Gymnasium ids of the built-in benchmarks and of those installed packages advertise: their adapter
    classes are imported (each keeps its heavy imports for first use) for the episode length every id is registered
    with. ``import genenv`` calls it once its own names exist, so an advertised adapter may import them."""
    for name in _BUILTIN:
        try:
            _load_builtin(name)
        except ImportError:
            logger.exception("could not load the built-in benchmark %r", name)
    _load_entry_points()
