"""API-Bank (Li et al., EMNLP 2023) as a genenv benchmark.

Splits and tasks
----------------
``level-1``  the 399 API-call samples of ``test-data/level-1-api.json`` followed by the 375
             response samples of ``level-1-response.json`` (the benchmark reports both:
             API-call accuracy and response ROUGE-L). ``load_tasks("level-1-api")`` /
             ``("level-1-response")`` give one kind only.
``level-2``  ``level-2-api.json`` (135) + ``level-2-response.json`` (103); the agent only gets
             ToolSearcher and must find the APIs (``level-2-api`` / ``level-2-response``).
``level-3``  the 50 tasks of ``level-3.json``: a requirement, the gold chain of calls
             (245 in all, ToolSearcher included) and the gold final response.

``Task.gold`` (JSON)::

    {"calls": [{"name": str, "arguments": {param: value as the dialogue wrote it},
                "result": {"api_name"?, "input", "output", "exception"} | None}, ...],
     "response": str | None}

``Task.metadata``: ``level`` ('level-1'|'level-2'|'level-3'), ``kind`` ('api'|'response'|
'chain'), ``file`` (test-data file), ``index`` (position in it), and for levels 1/2
``dialogue`` (the jsonl file), ``sample_id`` (the sample ``id``), ``apis`` (API names
offered by the sample's instruction), ``api`` (the API of the gold call, or for a response
sample the API whose result the reply reports); for level 3 ``sample_id`` (index in
level-3.json) and ``api`` (first non-ToolSearcher gold API). Generated tasks: ``level``
'level-1', ``kind`` 'api', ``api``, ``apis``.

Execution and scoring
---------------------
Every episode starts from fresh copies of the init databases (``start``), like the official
evaluator's new ``ToolManager`` per sample; level-3 calls share the episode state like
``lv3_evaluator``'s single ToolManager. ``execute`` accepts every API of the level whatever
``tools`` offered. ``score`` compares the i-th call of the trajectory with the i-th gold
call: same API name, then the gold API's correctness rule (:mod:`.checks`) on the executed
result and the gold result; value = correct / gold calls, buckets as
``evaluator_by_json.py`` (NO_API_CALL, API_NAME_MISMATCH, INVALID_INPUT_PARAMETER,
MISS_INPUT_ARGUMENT, KEY_ERROR, HAS_EXCEPTION, OUTPUT_MISMATCH, INPUT_MISMATCH) plus
CORRECT, INVALID_PARAMETER_TYPE (upstream: an uncaught AssertionError), CHECK_ERROR (a
rule raising something else than KeyError) and OTHER_MISMATCH. Response samples score
ROUGE-L F1 (``rouge-score``) of the final answer, leading ``AI:``/``User:`` removed.
Level-3 scores its calls; its ROUGE-L and ``sample_correct`` (all calls right) go in the
breakdown.

Scoring modes (:mod:`.scoring`, option ``scoring``): ``official`` (the default) reads the agent's
text exactly as the official evaluator does; ``genenv`` reads every format ``parse_tool_calls`` reads
(training only; ``reporting_adapter`` validates in ``official`` mode). Both ask for the test prompts'
``API-Request: [ApiName(...)]`` form. The deviations below are each switchable
(``deviations=``); ``official`` keeps the data repairs on and the two text-reading deviations
(``list_arguments``, ``lenient_numbers``) off.

Conformance (replaying every gold call, with its structured arguments, through start/execute/score;
see ``tests/test_apibank.py``): level-1-api 399/399, level-2-api 135/135, level-3 245/245 calls
with the MiniLM ToolSearcher backend and every deviation on. What it took, beyond the upstream
behaviour (deviation names in brackets):

* Gold ``DeleteMeeting`` calls [``delete_meeting_rule``]: upstream's rule reads ``input['time']``
  and raises KeyError for every pair of successful calls, so upstream marks even the gold call
  wrong. The rule here compares ``start_time``.
* [``legacy_device_id``] 8 level-1 samples (TimedSwitch-level-1-{1,2,3}, CancelTimedSwitch-level-1-{1..5}) were
  recorded with an unreleased API version whose parameter was ``device_id``; the released
  API (and the instruction shown to models) calls it ``name``. Gold inputs are renamed
  ``device_id -> name``, ``device_id`` is accepted as an alias, and the timer the recorded
  CancelTimedSwitch successes presuppose (device '10000025') is added to TimeSwitch.
* [``recorded_descriptions``] ToolSearcher outputs quote the API descriptions of the recording
  time (see :mod:`.tool_searcher`); [``name_keyword``] names given as keywords map to that API.
* [``history_replay``] The calls made earlier in a sample's dialogue have happened: ``start`` replays them on the
  fresh databases (ids/tokens that AppointmentRegistration/RegisterUser draw at random take
  the recorded value). Upstream evaluates every sample against untouched init databases,
  which leaves 8 gold calls unreproducible: ForgotPassword 'Verification Code' (x4,
  needs the 'Forgot Password' call), GetUserToken after ForgotPassword changed the
  password (x2), RegisterUser of a user the dialogue deleted, QueryRegistration of an
  appointment the dialogue made. Without it: the upstream behaviour (level-1-api 391/399).
* [``query_scene_case``] QueryScene: the gold outputs quote an older Scenes table ('Light', 'Coffee Maker') while
  the released one stores device names lower-cased, as AddScene/ModifyScene do; the rule
  compares device lists with names normalised like those APIs' rules (5 samples).
* [``list_arguments``, ``lenient_numbers``] list text parsed, number text read leniently
  (:mod:`.calls`); off in ``official`` mode, where ``[AddMeeting(attendees=[...])]`` fails as
  upstream fails it.

The adapter is split the way BFCL's is: the test samples as tasks in :mod:`.tasks` (the training split in
:mod:`.training`), generated tasks in :mod:`.generation`, the official evaluation in :mod:`.evaluation`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..base import (
    BenchmarkAdapter,
    Score,
    StepResult,
    Task,
    ToolCall,
    Trajectory,
    register_benchmark,
)
from .apis_lv3 import LV3_IMPLS
from .apis_lv12 import LV12_IMPLS
from .calls import (
    ArgumentError,
    coerce_arguments,
    coerce_value,
    format_value,
    json_schema_type,
    normalize_arguments,
    shorten,
    split_camel_case,
)
from .data import (
    DB_FILES,
    LEGACY_PARAM_ALIASES,
    SPEC_FILES,
    TEST_FILES,
    APIBankData,
)
from .evaluation import Executed, paper_metrics, score_sample
from .generation import (
    TASK_SCHEMA,
    generatable_apis,
    generated_task,
    generation_context,
    generation_examples,
    generation_schema,
    training_examples,
    ungrounded_arguments,
)
from .scoring import API_REQUEST_FORMAT, TEXT_DEVIATIONS, Scoring
from .tasks import LEVELS, level_and_kind, level_tasks
from .tool_searcher import Catalogue, ToolSearcher
from .training import TRAIN_LEVEL, check_described_call, training_tasks
from .world import ApiImpl, World, run_api

MAX_OBSERVATION_CHARS = 6000


@dataclass
class APIBankState:
    """One episode: the world, which APIs exist, how many calls were made."""

    world: World | None
    level: str
    impls: dict[str, ApiImpl]
    searcher: ToolSearcher | None
    n_gold_calls: int
    has_response: bool
    n_calls: int = 0
    results: list[dict[str, Any] | None] = field(default_factory=list)
    #: training-split tasks only: the item's API schemas (its APIs have no implementation)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)


@register_benchmark("apibank")
class APIBankAdapter(BenchmarkAdapter):
    """API-Bank levels 1-3 with re-implemented APIs, official per-API correctness rules."""

    name = "apibank"
    max_turns = 4
    default_split = "level-1"
    validation_split = "level-1-api"  # held out; scored during training
    base_split = "train"  # training-data/lv3-api-train.json: expert traces, never evaluated
    #: the three levels, then one kind only (API-call or response samples) of levels 1 and 2
    splits = (*LEVELS, "level-1-api", "level-1-response", "level-2-api", "level-2-response", TRAIN_LEVEL)
    task_schema: ClassVar[dict[str, Any]] = TASK_SCHEMA

    def __init__(
        self,
        data_dir=None,
        toolsearcher_backend: str = "auto",
        scoring: str = "official",
        deviations: list[str] | dict[str, bool] | None = None,
    ) -> None:
        """``scoring``: ``'official'`` or ``'genenv'``; ``deviations``: exactly these on (a list), or the
        mode's defaults changed (a mapping of names to true/false); see :mod:`.scoring`."""
        super().__init__(data_dir)
        self.data = APIBankData(self.data_dir)
        self.toolsearcher_backend = toolsearcher_backend
        self.scoring = Scoring.make(scoring, deviations)
        self._reporting: APIBankAdapter | None = None
        self._searchers: dict[str, ToolSearcher] = {}
        self._examples: list[dict[str, Any]] | None = None

    # -- data ---------------------------------------------------------------------------
    def load_tasks(self, split: str) -> list[Task]:
        if split == TRAIN_LEVEL:
            return training_tasks(self.data.training_api_samples)
        level, kind = level_and_kind(split)
        if level not in LEVELS or kind not in ("", "api", "response"):
            raise ValueError(f"unknown split {split!r}; choose from {', '.join(self.splits)}")
        self.data.require(SPEC_FILES + DB_FILES + list(TEST_FILES[level]))
        return level_tasks(self.data, level, kind, legacy=self.scoring.on("legacy_device_id"))

    # -- tools and execution ------------------------------------------------------------
    def _specs(self, level: str) -> dict[str, dict[str, Any]]:
        return self.data.lv3_specs if level == "level-3" else self.data.lv12_specs

    def _impls(self, level: str) -> dict[str, ApiImpl]:
        return LV3_IMPLS if level == "level-3" else LV12_IMPLS

    def tool_schema(self, api: str, level: str = "level-1") -> dict[str, Any]:
        """OpenAI function schema of ``api`` (API-Bank types mapped to JSON schema)."""
        spec = self._specs(level)[api]
        impl = self._impls(level).get(api)
        params = spec.get("input_parameters") or {}
        if impl is None:  # ToolSearcher
            required = list(params)
        else:
            required = [p for p in impl.required if p in params]
            if impl.kwargs_style:
                required = required[:1]
        properties = {}
        for pname, pspec in params.items():
            prop = json_schema_type(str(pspec.get("type", "str")))
            prop["description"] = pspec.get("description", "")
            properties[pname] = prop
        return {
            "type": "function",
            "function": {
                "name": api,
                "description": spec.get("description", ""),
                "parameters": {"type": "object", "properties": properties, "required": required},
            },
        }

    def tools(self, task: Task) -> list[dict[str, Any]]:
        level = task.metadata.get("level", "level-1")
        if level == TRAIN_LEVEL:
            return copy.deepcopy(task.metadata.get("tools") or [])
        if level in ("level-2", "level-3"):
            names = ["ToolSearcher"]
        else:
            names = [n for n in task.metadata.get("apis") or [] if n in self._specs(level)]
            if not names:
                names = [c["name"] for c in task.gold.get("calls", []) if c["name"] in self._specs(level)]
        return [self.tool_schema(n, level) for n in dict.fromkeys(names)]

    def _searcher(self, level: str) -> ToolSearcher:
        key = "level-3" if level == "level-3" else "level-1"
        if key not in self._searchers:
            if key == "level-3":
                catalogue = Catalogue(list(self.data.lv3_specs.values()), legacy=False)
            else:
                legacy = self.scoring.on("recorded_descriptions")
                catalogue = Catalogue(list(self.data.lv12_specs.values()), legacy=legacy)
            name_keyword = self.scoring.on("name_keyword")
            self._searchers[key] = ToolSearcher(catalogue, self.toolsearcher_backend, name_keyword=name_keyword)
        return self._searchers[key]

    @property
    def toolsearcher_backend_name(self) -> str:
        """The ToolSearcher backend actually in use ('minilm' or 'lexical')."""
        return self._searcher("level-1").backend

    def start(self, task: Task) -> APIBankState:
        level = task.metadata.get("level", "level-1")
        if level == TRAIN_LEVEL:
            return APIBankState(
                world=None,
                level=level,
                impls={},
                searcher=None,
                n_gold_calls=len(task.gold.get("calls") or []),
                has_response=bool(task.gold.get("response")),
                schemas={t["function"]["name"]: t["function"]["parameters"] for t in self.tools(task)},
            )
        init_db = self.data.init_db if self.scoring.on("legacy_device_id") else self.data.released_db
        world = World(init_db=init_db, level=level)
        world.tool_state["_fixtures"] = self.data.fixtures
        gold = task.gold if isinstance(task.gold, dict) else {}
        state = APIBankState(
            world=world,
            level=level,
            impls=self._impls(level),
            searcher=self._searcher(level),
            n_gold_calls=len(gold.get("calls") or []),
            has_response=bool(gold.get("response")),
        )
        if self.scoring.on("history_replay"):
            for call in task.metadata.get("replay") or []:
                self._replay(state, call)
        return state

    def _replay(self, state: APIBankState, call: dict[str, Any]) -> None:
        """Re-run an earlier call of the dialogue; random ids/tokens take the recorded value, and list text is
        parsed as the recording parsed it, whatever the scoring mode."""
        try:
            result = self._run(state, call["name"], call.get("arguments") or {}, replaying=True)
        except Exception:  # noqa: BLE001 - a bad history call just does not happen
            return
        recorded = call.get("output")
        if result.get("exception") is not None or recorded is None:
            return
        if call["name"] == "AppointmentRegistration" and isinstance(recorded, str):
            db = state.world.write("Appointments")
            new_id = result.get("output")
            if new_id in db and recorded not in db:
                db[recorded] = db.pop(new_id)
        elif call["name"] == "RegisterUser" and isinstance(recorded, dict) and "token" in recorded:
            username = (result.get("input") or {}).get("username")
            db = state.world.write("Account")
            if username in db:
                db[username]["token"] = recorded["token"]

    def _run(self, state: APIBankState, name: Any, arguments: Any, replaying: bool = False) -> dict[str, Any]:
        """Execute one call; returns the result dict or raises ArgumentError."""
        if state.level == TRAIN_LEVEL:
            return check_described_call(state.schemas, name, arguments)
        if name == "ToolSearcher":
            args = normalize_arguments(arguments)
            if set(args) - {"keywords"}:
                raise ArgumentError(
                    "unknown_argument",
                    "invalid parameter name. parameter: " + ", ".join(sorted(map(str, set(args) - {"keywords"}))),
                )
            if "keywords" not in args:
                raise ArgumentError("missing_argument", "call() missing 1 required positional argument: 'keywords'")
            keywords = args["keywords"]
            if isinstance(keywords, (int, float)) and not isinstance(keywords, bool):
                keywords = str(keywords)
            if not isinstance(keywords, str):
                raise ArgumentError("wrong_type", "parameter 'keywords' must be a string")
            coerce_value("keywords", keywords, "str")  # length guard
            if state.level == "level-3":
                keywords = split_camel_case(keywords)
            try:
                output, exception = state.searcher.search(keywords), None
            except Exception as exc:  # noqa: BLE001
                output, exception = None, str(exc)
            return {
                "api_name": "ToolSearcher",
                "input": {"keywords": keywords},
                "output": output,
                "exception": exception,
            }
        impl = state.impls.get(name) if isinstance(name, str) else None
        if impl is None:
            raise ArgumentError("unknown_tool", f"invalid tool name: {shorten(name, 200)}")
        args = normalize_arguments(arguments)
        if self.scoring.on("legacy_device_id"):
            args = {LEGACY_PARAM_ALIASES.get((name, k), k): v for k, v in args.items()}
        spec = self._specs(state.level)[name]
        coerced = coerce_arguments(
            spec.get("input_parameters") or {},
            args,
            list_arguments=replaying or self.scoring.on("list_arguments"),
            lenient_numbers=self.scoring.on("lenient_numbers"),
        )
        return run_api(impl, state.world, coerced)

    def execute(self, state: APIBankState, call: ToolCall) -> StepResult:
        state.n_calls += 1
        done = state.n_gold_calls > 0 and not state.has_response and state.n_calls >= state.n_gold_calls
        name = getattr(call, "name", None)
        try:
            result = self._run(state, name, getattr(call, "arguments", None))
        except ArgumentError as err:
            state.results.append(None)
            return StepResult(
                observation=shorten(f"Error ({err.kind}): {err}", MAX_OBSERVATION_CHARS),
                output=None,
                error=err.kind,
                done=done,
            )
        except Exception as exc:  # noqa: BLE001 - execute never raises
            state.results.append(None)
            return StepResult(
                observation=shorten(f"Error (execution_error): {type(exc).__name__}: {exc}", MAX_OBSERVATION_CHARS),
                output=None,
                error="execution_error",
                done=done,
            )
        state.results.append(result)
        return StepResult(
            observation=render_result(result),
            output=result,
            error="execution_error" if result.get("exception") is not None else None,
            done=done,
        )

    def turn_limit(self, task: Task) -> int | None:
        """One turn for a level-1/2 sample (and the generated and training-split tasks of their form), as the
        official evaluation generates one output per sample: a call it cannot read is wrong, not retried. Level-3
        chains take the env's ``max_turns``."""
        return None if task.metadata.get("level") == "level-3" else 1

    def gold_actions(self, task: Task) -> list[list[str]]:
        """Gold calls one per turn (as the system prompt asks), then the gold response where there is one. (A gold
        response holding JSON that reads as a tool call makes no complete episode: 2 tasks have no expert trace.)"""
        gold = task.gold if isinstance(task.gold, dict) else {}
        actions = [self.format_call(c["name"], c.get("arguments") or {}) for c in gold.get("calls") or []]
        if gold.get("response"):
            actions.append(str(gold["response"]))
        return [actions] if actions else []

    def parse_action(self, text: str, state: Any) -> list[ToolCall]:
        """The scoring mode's text-to-call step; in ``official`` mode a level-1/2 response sample reads
        no call (upstream scores the whole reply with ROUGE-L)."""
        if self.scoring.mode == "official" and isinstance(state, APIBankState) and state.n_gold_calls == 0:
            if state.has_response:
                return []
        return self.scoring.parse(text)

    def scoring_mode(self) -> dict[str, Any]:
        return self.scoring.describe()

    def reporting_adapter(self) -> APIBankAdapter:
        """This adapter in ``official`` mode, with the same data repairs and the text deviations off."""
        if self.scoring.mode == "official":
            return self
        if self._reporting is None:
            self._reporting = APIBankAdapter(
                self.data_dir,
                toolsearcher_backend=self.toolsearcher_backend,
                scoring="official",
                deviations=sorted(self.scoring.deviations - TEXT_DEVIATIONS),
            )
        return self._reporting

    def format_call(self, name: str, arguments: dict[str, Any]) -> str:
        """``API-Request: [Name(k='v', ...)]``, the form the test prompts show (:func:`.calls.format_value`)."""
        inner = ", ".join(f"{key}={format_value(value)}" for key, value in arguments.items())
        return f"API-Request: [{name}({inner})]"

    def few_shot_exchanges(self) -> list[dict[str, Any]] | None:
        """One worked exchange in the API-Request form."""
        arguments = {"token": "a9s8d7f6g5h4", "time": "2023-03-16 07:30:00"}
        result = render_result({"api_name": "AddAlarm", "output": "success", "exception": None})
        return [
            {"role": "user", "content": "Set an alarm for 2023-03-16 07:30:00, my token is a9s8d7f6g5h4."},
            {"role": "assistant", "content": self.format_call("AddAlarm", arguments)},
            {"role": "tool", "content": result},
            {"role": "assistant", "content": "Your alarm for 2023-03-16 07:30:00 is set."},
        ]

    def system_prompt(self, task: Task) -> str:
        level = task.metadata.get("level", "level-1")
        lines = [
            "You are an AI assistant that helps the user by calling APIs.",
            "To call an API, write exactly one call per message as",
            API_REQUEST_FORMAT,
            "and wait for its result. Use only parameter names from the API's schema and the "
            "values the user gave (dates as %Y-%m-%d, times as %Y-%m-%d %H:%M:%S).",
        ]
        if level in ("level-2", "level-3"):
            lines.append(
                "You only know ToolSearcher at first: call it with a few keywords to find the "
                "API you need; its result describes that API, which you can then call."
            )
        lines.append("When you have what you need, answer the user in plain text without a tool call.")
        return "\n".join(lines)

    # -- scoring ------------------------------------------------------------------------
    def _executed(self, task: Task, trajectory: Trajectory) -> list[Executed]:
        calls = list(trajectory.calls)
        results = list(trajectory.results)
        if len(results) == len(calls) and all(r.output is None or isinstance(r.output, dict) for r in results):
            return [(c, r.output, r.error) for c, r in zip(calls, results, strict=True)]
        state = self.start(task)  # results missing: re-run the calls on a fresh episode
        out = []
        for c in calls:
            r = self.execute(state, c)
            out.append((c, r.output, r.error))
        return out

    def score(self, task: Task, trajectory: Trajectory) -> Score:
        """The official evaluators' score (:mod:`.evaluation`) of the calls as they executed."""
        executed = self._executed(task, trajectory) if isinstance(task.gold, dict) and task.gold.get("calls") else []
        return score_sample(task, executed, trajectory.final_answer, self.scoring)

    def aggregate(self, tasks: list[Task], scores: list[Score]) -> dict[str, float]:
        """The mean score and the API-Bank paper's figures (:func:`.evaluation.paper_metrics`)."""
        metrics = super().aggregate(tasks, scores)
        mean = {"score": metrics["score"]} if "score" in metrics else {}
        return {"n": metrics["n"], **mean, **paper_metrics(tasks, scores)}

    def family(self, task: Task) -> str:
        meta = task.metadata
        api = meta.get("api") or ""
        if meta.get("level") == "level-3":
            return f"level-3:{api}" if api else "level-3"
        if meta.get("kind") == "response":
            return f"response:{api}" if api else "response"
        return api or "unknown"

    # -- generated tasks ----------------------------------------------------------------
    def families(self) -> list[str]:
        return generatable_apis(self.data)

    def generation_context(self, family: str, rng: Any, success: Mapping[str, float] | None = None) -> str:
        return generation_context(self.data, family, rng)

    def generation_schema(self, family: str) -> dict[str, Any]:
        """``task_schema`` narrowed to ``family``: its name, and its exact argument names and types."""
        return generation_schema(self.tool_schema(family), family)

    def _training_examples(self) -> list[dict[str, Any]]:
        """The training split's grounded API calls (:func:`.generation.training_examples`), read once."""
        if self._examples is None:
            self._examples = training_examples(self.data)
        return self._examples

    def generation_examples(self, family: str, k: int, rng: Any) -> list[dict[str, Any]]:
        return generation_examples(self._training_examples(), family, k, rng)

    def parse_task(self, obj: dict[str, Any], family: str | None = None) -> Task:
        return generated_task(self.data, obj, family)

    def validate_task(self, task: Task) -> tuple[bool, str]:
        try:
            calls = task.gold["calls"]
            call = calls[0]
        except (TypeError, KeyError, IndexError):
            return False, "task has no gold call"
        if call.get("name") not in self.data.lv12_specs or call.get("name") == "ToolSearcher":
            return False, f"unknown API {call.get('name')!r}"
        if missing := ungrounded_arguments(task.prompt, call.get("arguments") or {}, self.data.init_db["Account"]):
            return False, f"the request does not give {', '.join(missing)}: no agent could write the gold call"
        state = self.start(task)
        step = self.execute(state, ToolCall(name=call["name"], arguments=call.get("arguments") or {}))
        if step.error is not None and step.error != "execution_error":
            return False, f"gold call rejected ({step.error}): {step.observation}"
        result = step.output
        if not isinstance(result, dict) or result.get("exception") is not None:
            exc = result.get("exception") if isinstance(result, dict) else step.observation
            return False, f"gold call raised an exception: {exc}"
        call["result"] = result
        return True, "ok"


# -- helpers ------------------------------------------------------------------------------


def render_result(result: dict[str, Any]) -> str:
    """What the agent reads after a call (mirrors the '->output' of the test prompts)."""
    name = result.get("api_name", "")
    if result.get("exception") is not None:
        text = f"{name} exception: {result['exception']}"
    else:
        text = json.dumps({"api_name": name, "output": result.get("output")}, ensure_ascii=False, default=str)
    return shorten(text, MAX_OBSERVATION_CHARS)


__all__ = ["APIBankAdapter", "APIBankState"]
