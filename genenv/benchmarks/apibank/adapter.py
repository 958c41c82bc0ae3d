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
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from genenv.toolcalls import parse_apibank_call

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
from .apis_lv12 import LV12_IMPLS, NETWORK_APIS
from .calls import (
    ArgumentError,
    coerce_arguments,
    coerce_value,
    format_api_request,
    format_value,
    json_schema_type,
    normalize_arguments,
    split_camel_case,
)
from .checks import get_check
from .data import (
    DB_FILES,
    DIALOGUE_DIRS,
    LEGACY_PARAM_ALIASES,
    SPEC_FILES,
    TEST_FILES,
    APIBankData,
    dialogue_samples,
    repair_legacy,
)
from .scoring import API_REQUEST_FORMAT, TEXT_DEVIATIONS, Scoring
from .tool_searcher import Catalogue, ToolSearcher
from .training import TRAIN_LEVEL, call_matches, training_tasks
from .world import ApiImpl, World, run_api

LEVELS = ("level-1", "level-2", "level-3")
MAX_OBSERVATION_CHARS = 6000
#: not offered for generated tasks (network fixtures, internal helper, search)
NOT_GENERATED = NETWORK_APIS | {"CheckToken", "ToolSearcher"}


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
    #: the three levels, then one kind only (API-call or response samples) of levels 1 and 2
    splits = (*LEVELS, "level-1-api", "level-1-response", "level-2-api", "level-2-response", TRAIN_LEVEL)
    task_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "api": {"type": "string", "description": "name of the API the request needs"},
            "gold_call": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "arguments": {"type": "object", "description": "parameter -> value"},
                },
                "required": ["name", "arguments"],
            },
            "request": {
                "type": "string",
                "description": "what the user says to the assistant: it states every argument value of gold_call",
            },
        },
        "required": ["api", "gold_call", "request"],
    }

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
        level, _, kind = split.partition(":") if ":" in split else _split_kind(split)
        if level not in LEVELS or kind not in ("", "api", "response"):
            raise ValueError(f"unknown split {split!r}; choose from {', '.join(self.splits)}")
        self.data.require(SPEC_FILES + DB_FILES + list(TEST_FILES[level]))
        if level == "level-3":
            return self._load_level3()
        tasks: list[Task] = []
        api_file, response_file = TEST_FILES[level]
        if kind in ("", "api"):
            tasks += self._load_lv12(level, api_file, "api")
        if kind in ("", "response"):
            tasks += self._load_lv12(level, response_file, "response")
        return tasks

    def _load_lv12(self, level: str, rel: str, kind: str) -> list[Task]:
        tasks = []
        for index, sample in enumerate(self.data.test_samples(rel)):
            history = self.data.dialogue(level, sample["file"])
            prefix_len, truth = dialogue_samples(history)[sample["id"]]
            apis = _instruction_apis(sample.get("instruction", ""))
            if truth.get("role") == "API":
                name = truth["api_name"]
                calls = [
                    {
                        "name": name,
                        "arguments": self._legacy(name, truth.get("param_dict") or {}),
                        "result": self._legacy_result(name, truth.get("result")),
                    }
                ]
                response, api = None, name
            else:
                calls, response = [], truth.get("text", "")
                api = next(
                    (t["api_name"] for t in reversed(history[:prefix_len]) if t.get("role") == "API"),
                    "",
                )
            replay = [
                {
                    "name": t["api_name"],
                    "arguments": self._legacy(t["api_name"], t.get("param_dict") or {}),
                    "output": (t.get("result") or {}).get("output"),
                }
                for t in history[:prefix_len]
                if t.get("role") == "API"
            ]
            tag = "l1" if level == "level-1" else "l2"
            tasks.append(
                Task(
                    task_id=f"apibank-{tag}-{kind}-{index:04d}",
                    benchmark=self.name,
                    prompt=_clean_prompt(sample.get("input", "")),
                    gold={"calls": calls, "response": response},
                    split=level,
                    metadata={
                        "level": level,
                        "kind": "api" if truth.get("role") == "API" else "response",
                        "file": rel,
                        "index": index,
                        "dialogue": sample["file"],
                        "sample_id": sample["id"],
                        "apis": apis,
                        "api": api,
                        "replay": replay,
                    },
                )
            )
        return tasks

    def _legacy(self, name: str, mapping: dict[str, Any] | None) -> dict[str, Any] | None:
        """Legacy parameter names renamed where ``legacy_device_id`` is on."""
        return repair_legacy(name, mapping) if self.scoring.on("legacy_device_id") else mapping

    def _legacy_result(self, name: str, result: Any) -> Any:
        if not isinstance(result, dict):
            return result
        return {**result, "input": self._legacy(name, result.get("input"))}

    def _load_level3(self) -> list[Task]:
        tasks = []
        for index, item in enumerate(self.data.test_samples(TEST_FILES["level-3"][0])):
            calls = [
                {"name": a["api_name"], "arguments": a.get("input") or {}, "result": a.get("output")}
                for a in item.get("apis", [])
            ]
            main = next((c["name"] for c in calls if c["name"] != "ToolSearcher"), "")
            requirement = item.get("requirement", "").strip()
            tasks.append(
                Task(
                    task_id=f"apibank-l3-{index:04d}",
                    benchmark=self.name,
                    prompt=f"User: {requirement}\n",
                    gold={"calls": calls, "response": item.get("response")},
                    split="level-3",
                    metadata={
                        "level": "level-3",
                        "kind": "chain",
                        "file": TEST_FILES["level-3"][0],
                        "index": index,
                        "sample_id": index,
                        "apis": ["ToolSearcher"],
                        "api": main,
                    },
                )
            )
        return tasks

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
            return _check_described_call(state.schemas, name, arguments)
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
            raise ArgumentError("unknown_tool", f"invalid tool name: {_short(name)}")
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
                observation=_short(f"Error ({err.kind}): {err}", MAX_OBSERVATION_CHARS),
                output=None,
                error=err.kind,
                done=done,
            )
        except Exception as exc:  # noqa: BLE001 - execute never raises
            state.results.append(None)
            return StepResult(
                observation=_short(f"Error (execution_error): {type(exc).__name__}: {exc}", MAX_OBSERVATION_CHARS),
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
    def _executed(self, task: Task, trajectory: Trajectory) -> list[tuple[ToolCall, Any, str | None]]:
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
        gold = task.gold if isinstance(task.gold, dict) else {}
        gold_calls = gold.get("calls") or []
        level = task.metadata.get("level", "level-1")
        breakdown: dict[str, Any] = {}
        value = 0.0
        if gold_calls:
            executed = self._executed(task, trajectory)
            buckets = [
                self._bucket(level, g, executed[i] if i < len(executed) else None) for i, g in enumerate(gold_calls)
            ]
            if level == TRAIN_LEVEL:  # no implementation to execute: exact match with the gold request
                buckets = [
                    "CORRECT"
                    if b == "CHECK_ERROR" and call_matches(g, executed[i][0].name, executed[i][0].arguments)
                    else ("INPUT_MISMATCH" if b == "CHECK_ERROR" else b)
                    for i, (g, b) in enumerate(zip(gold_calls, buckets))
                ]
            correct = buckets.count("CORRECT")
            value = correct / len(gold_calls)
            breakdown.update(
                api_correct=correct,
                api_total=len(gold_calls),
                api_accuracy=value,
                buckets=buckets,
                errors=dict(Counter(b for b in buckets if b != "CORRECT")),
                sample_correct=correct == len(gold_calls),
            )
        response = gold.get("response")
        if response:
            rouge = rouge_l(response, trajectory.final_answer or "")
            breakdown["rouge_l"] = rouge
            if not gold_calls:
                value = rouge
        return Score(value=min(1.0, max(0.0, value)), breakdown=breakdown)

    def aggregate(self, tasks: list[Task], scores: list[Score]) -> dict[str, float]:
        """The API-Bank paper's figures: API-call accuracy (correct calls / gold calls), response
        ROUGE-L (mean over response samples), level-3 sample accuracy, and error-bucket counts."""
        metrics = super().aggregate(tasks, scores)
        metrics = {"n": metrics["n"], **({"score": metrics["score"]} if "score" in metrics else {})}
        api = [s.breakdown for s in scores if s.breakdown.get("api_total")]
        if api:
            metrics["api_samples"] = float(len(api))
            metrics["api_call_accuracy"] = sum(b["api_correct"] for b in api) / sum(b["api_total"] for b in api)
            errors = Counter(bucket for b in api for bucket, count in b["errors"].items() for _ in range(count))
            metrics.update({f"errors/{bucket}": float(count) for bucket, count in sorted(errors.items())})
        chains = [s.breakdown for t, s in zip(tasks, scores) if t.metadata.get("kind") == "chain"]
        if chains:
            metrics["sample_accuracy"] = sum(bool(b.get("sample_correct")) for b in chains) / len(chains)
        responses = [s.breakdown["rouge_l"] for t, s in zip(tasks, scores) if t.metadata.get("kind") == "response"]
        if responses:
            metrics["response_samples"] = float(len(responses))
            metrics["response_rouge_l"] = sum(responses) / len(responses)
        return metrics

    def _bucket(self, level: str, gold_call: dict[str, Any], executed) -> str:
        if executed is None:
            return "NO_API_CALL"
        call, result, error = executed
        if getattr(call, "name", None) != gold_call.get("name"):
            return "API_NAME_MISMATCH"
        if error == "unknown_argument":
            return "INVALID_INPUT_PARAMETER"
        if error == "missing_argument":
            return "MISS_INPUT_ARGUMENT"
        if error == "wrong_type":
            return "INVALID_PARAMETER_TYPE"
        if not isinstance(result, dict):
            return "CHECK_ERROR"
        gold_result = gold_call.get("result")
        if not isinstance(gold_result, dict):
            return "CHECK_ERROR"
        check = get_check(
            gold_call["name"],
            level,
            delete_meeting_rule=self.scoring.on("delete_meeting_rule"),
            query_scene_case=self.scoring.on("query_scene_case"),
        )
        if check is None:
            return "CHECK_ERROR"
        try:
            ok = bool(check(copy.deepcopy(result), copy.deepcopy(gold_result)))
        except KeyError:
            return "KEY_ERROR"
        except Exception:  # noqa: BLE001 - a rule crashing on odd input = incorrect
            return "CHECK_ERROR"
        if ok:
            return "CORRECT"
        if result.get("exception"):
            return "HAS_EXCEPTION"
        if result.get("output") != gold_result.get("output"):
            return "OUTPUT_MISMATCH"
        if result.get("input") != gold_result.get("input"):
            return "INPUT_MISMATCH"
        return "OTHER_MISMATCH"

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
        return sorted(n for n in LV12_IMPLS if n not in NOT_GENERATED and n in self.data.lv12_specs)

    def generation_context(self, family: str, rng: Any, success: Mapping[str, float] | None = None) -> str:
        spec = self.data.lv12_specs.get(family)
        if spec is None or family not in self.families():
            raise ValueError(f"unknown or non-generatable API {family!r}")
        shown = {k: spec[k] for k in ("name", "description", "input_parameters", "output_parameters")}
        parts = [
            f"API: {family}",
            "Spec: " + json.dumps(shown, ensure_ascii=False),
            "Today is 2023-03-31 (GetToday). Write the gold call first, so that it succeeds against the records "
            "below (copy identifiers: usernames, passwords, tokens, ids, codes, dates, exactly), then the user's "
            "request. The agent sees only the request, so it must state every argument value of the gold call "
            "(but a token: the dialogue gives the agent the token of its account).",
        ]
        db_name = spec.get("database_name")
        init_db = self.data.init_db
        accounts = init_db["Account"]
        db = init_db.get(db_name) if db_name else None
        needs_token = "token" in (spec.get("input_parameters") or {})
        users: list[str] = []
        if db_name and db_name != "Account" and db is not None:
            excerpt, users = _db_excerpt(db, rng, accounts)
            parts.append(f"Records of database {db_name}: {excerpt}")
        if needs_token or db_name == "Account":
            users = [u for u in dict.fromkeys(users) if u in accounts][:3]
            users += _sample(rng, [u for u in sorted(accounts) if u not in users], 3 - len(users))
            shown_accounts = {u: accounts[u] for u in users}
            parts.append("Accounts (username -> password, token, email): " + json.dumps(shown_accounts))
            if needs_token:
                parts.append(
                    "Put the token of one of these accounts in the gold call; the request need not say it: the "
                    "dialogue then gives the agent that account's username and password and its GetUserToken call."
                )
        return "\n".join(parts)

    def _training_examples(self) -> list[dict[str, Any]]:
        """The training split's API calls as tasks in ``task_schema`` order, keeping only those whose request gives
        every argument value (what :meth:`validate_task` asks of a generated task)."""
        if self._examples is None:
            accounts = self.data.init_db["Account"]
            examples = []
            for item in self.data.training_api_samples:
                parsed = parse_apibank_call(item.get("output", ""))
                if parsed is None:
                    continue
                name, args = parsed.name, parsed.arguments
                user = [line for line in item.get("input", "").split("\n") if line.startswith("User:")]
                if not user:
                    continue
                request = user[-1][len("User:") :].strip()
                request = re.sub(r"\s*TIME:\s*", " (current time: ", request)
                if "(current time:" in request:
                    request += ")"
                if ungrounded_arguments(request, args, accounts):
                    continue
                examples.append({"api": name, "gold_call": {"name": name, "arguments": args}, "request": request})
            self._examples = examples
        return self._examples

    def generation_schema(self, family: str) -> dict[str, Any]:
        """``task_schema`` narrowed to ``family``: its name, and its exact argument names and types."""
        parameters = copy.deepcopy(self.tool_schema(family)["function"]["parameters"])
        for prop in parameters["properties"].values():
            prop.pop("description", None)
            if prop["type"] == "string":
                prop["maxLength"] = 64  # every API-Bank value is short; bounded strings always close
        parameters["additionalProperties"] = False
        return {
            "type": "object",
            "properties": {
                "api": {"type": "string", "enum": [family]},
                "gold_call": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "enum": [family]}, "arguments": parameters},
                    "required": ["name", "arguments"],
                    "additionalProperties": False,
                },
                "request": {"type": "string", "minLength": 8, "maxLength": 200},
            },
            "required": ["api", "gold_call", "request"],
            "additionalProperties": False,
        }

    def generation_examples(self, family: str, k: int, rng: Any) -> list[dict[str, Any]]:
        examples = self._training_examples()
        same = [e for e in examples if e["api"] == family]
        others = [e for e in examples if e["api"] not in (family, "ToolSearcher")]
        chosen = _sample(rng, same, min(k, len(same)))
        chosen += _sample(rng, others, max(0, min(k - len(chosen), len(others))))
        return copy.deepcopy(chosen[:k])

    def parse_task(self, obj: dict[str, Any], family: str | None = None) -> Task:
        if not isinstance(obj, dict):
            raise ValueError("task must be a JSON object")
        request = obj.get("request")
        if not isinstance(request, str) or not request.strip():
            raise ValueError("'request' must be a non-empty string")
        if len(request) > 4000:
            raise ValueError("'request' is longer than 4000 characters")
        gold_call = obj.get("gold_call")
        if not isinstance(gold_call, dict):
            raise ValueError("'gold_call' must be an object with 'name' and 'arguments'")
        name = gold_call.get("name")
        arguments = gold_call.get("arguments", {})
        if not isinstance(name, str) or not name:
            raise ValueError("'gold_call.name' must be a string")
        if not isinstance(arguments, dict):
            raise ValueError("'gold_call.arguments' must be an object")
        api = obj.get("api", name)
        if api != name:
            raise ValueError(f"'api' ({api!r}) differs from 'gold_call.name' ({name!r})")
        if family is not None and name != family:
            raise ValueError(f"gold call API {name!r} is not the requested family {family!r}")
        if name not in self.families():
            raise ValueError(f"unknown or non-generatable API {name!r}")
        params = self.data.lv12_specs[name].get("input_parameters") or {}
        unknown = [k for k in arguments if k not in params]
        if unknown:
            raise ValueError(f"unknown argument(s) for {name}: {', '.join(map(str, unknown))}")
        apis = [name]
        prompt = f"User: {request.strip()}\n"
        if "token" in params:
            apis.insert(0, "GetUserToken")
            prompt += credentials_turns(request, arguments.get("token"), self.data.init_db["Account"])
        digest = hashlib.sha1(
            json.dumps({"r": request, "c": gold_call}, sort_keys=True, default=str).encode()
        ).hexdigest()[:12]
        return Task(
            task_id=f"apibank-gen-{name}-{digest}",
            benchmark=self.name,
            prompt=prompt,
            gold={"calls": [{"name": name, "arguments": copy.deepcopy(arguments), "result": None}], "response": None},
            split="level-1",
            source="generated",
            metadata={"level": "level-1", "kind": "api", "api": name, "apis": apis},
        )

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

_DATE_OR_TIME = re.compile(r"^(?=\d)(\d{4}-\d{2}-\d{2})?[ T]?(\d{2}:\d{2}(:\d{2})?)?$")


def ungrounded_arguments(request: str, arguments: Mapping[str, Any], accounts: Mapping[str, Any]) -> list[str]:
    """Names of the gold arguments whose values a generated request does not give, so that no agent could write the
    gold call: a value must appear in the request (case and spacing aside); a ``token`` may instead be given by its
    account's username and password (the agent gets it from GetUserToken). Dates and times are left out: requests
    say them in words ("March 16th at 7 a.m.") as API-Bank's own dialogues do."""

    def norm(text: str) -> str:
        return " ".join(text.lower().split())

    said = norm(request)

    def given(value: Any) -> bool:
        if isinstance(value, bool) or value is None:
            return True
        if isinstance(value, (int, float)):
            return any(form in said for form in {str(value), f"{value:g}", f"{value:,}"})
        if isinstance(value, str):
            return not value.strip() or bool(_DATE_OR_TIME.match(value.strip())) or norm(value) in said
        if isinstance(value, Mapping):
            return all(given(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return all(given(v) for v in value)
        return True

    missing = []
    for name, value in arguments.items():
        if name == "token":
            owners = [user for user, account in accounts.items() if account.get("token") == value]
            if not given(value) and not any(given(o) and given(accounts[o].get("password", "")) for o in owners):
                missing.append("token (nor its account's username and password)")
        elif not given(value):
            missing.append(name)
    return missing


def credentials_turns(request: str, token: Any, accounts: Mapping[str, Any]) -> str:
    """The dialogue turns that give a generated request's token as API-Bank's level-1 dialogues do: the AI asks, the
    user gives the username and password of the token's account, and the GetUserToken call with its result is in the
    history, so the agent's one call is the gold one. Empty when the request states the token itself, or when no
    account holds it (the gold call then fails validation)."""
    owners = [user for user, account in accounts.items() if account.get("token") == token]
    if not owners or not ungrounded_arguments(request, {"token": token}, {}):  # no account, or the request states it
        return ""
    user, password = owners[0], accounts[owners[0]].get("password", "")
    return (
        "AI: Sure. To do that, I need your username and password first.\n"
        f"User: My username is {user} and my password is {password}.\n"
        "AI: Thank you. Let me get your token.\n"
        + history_line("GetUserToken", {"username": user, "password": password}, {"token": token})
        + "\n"
    )


def _check_described_call(schemas: dict[str, dict[str, Any]], name: Any, arguments: Any) -> dict[str, Any]:
    """A training-split call checked against the item's schemas; its result has no output (nothing runs)."""
    if not isinstance(name, str) or name not in schemas:
        raise ArgumentError("unknown_tool", f"invalid tool name: {_short(name)}")
    args = normalize_arguments(arguments)
    params = schemas[name].get("properties") or {}
    unknown = sorted(str(k) for k in args if k not in params)
    if unknown:
        raise ArgumentError("unknown_argument", "invalid parameter name. parameter: " + ", ".join(unknown))
    missing = [p for p in schemas[name].get("required") or [] if p not in args]
    if missing:
        raise ArgumentError("missing_argument", f"missing required argument(s): {', '.join(missing)}")
    return {"api_name": name, "input": args, "output": None, "exception": None}


def _split_kind(split: str) -> tuple[str, str, str]:
    for level in LEVELS:
        if split == level:
            return level, "", ""
        for kind in ("api", "response"):
            if split == f"{level}-{kind}" and level != "level-3":
                return level, "", kind
    return split, "", "?"


def _instruction_apis(instruction: str) -> list[str]:
    """API names listed after 'API descriptions:' in a test sample's instruction."""
    _, _, tail = instruction.partition("API descriptions:")
    names = []
    for line in tail.strip().splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("name"), str):
            names.append(obj["name"])
    return names


def _clean_prompt(text: str) -> str:
    text = re.sub(r"\n?Generate (API Request|AI Response):\s*$", "\n", text.rstrip() + "\n")
    return text.lstrip()


def render_result(result: dict[str, Any]) -> str:
    """What the agent reads after a call (mirrors the '->output' of the test prompts)."""
    name = result.get("api_name", "")
    if result.get("exception") is not None:
        text = f"{name} exception: {result['exception']}"
    else:
        text = json.dumps({"api_name": name, "output": result.get("output")}, ensure_ascii=False, default=str)
    return _short(text, MAX_OBSERVATION_CHARS)


def history_line(name: str, params: dict[str, Any], output: Any) -> str:
    """'API-Request: [Name(k='v')]->output' as in the benchmark prompts."""
    return f"API-Request: {format_api_request(name, params)}->{output}"


_ROLE_PREFIX = re.compile(r"^\s*(?:AI|User)\s*:\s*")
_SCORER = None


def rouge_l(reference: str, hypothesis: str) -> float:
    """ROUGE-L F1 between the gold reply and the answer (leading 'AI:'/'User:' removed)."""
    global _SCORER
    hyp = hypothesis or ""
    while _ROLE_PREFIX.match(hyp):
        hyp = _ROLE_PREFIX.sub("", hyp, count=1)
    hyp = hyp.strip()
    if not hyp or not (reference or "").strip():
        return 0.0
    if _SCORER is None:
        from rouge_score import rouge_scorer

        _SCORER = rouge_scorer.RougeScorer(["rougeL"])
    return float(_SCORER.score(reference, hyp)["rougeL"].fmeasure)


def _sample(rng: Any, items: list, k: int) -> list:
    items = list(items)
    k = max(0, min(k, len(items)))
    if k == 0:
        return []
    if hasattr(rng, "sample"):
        return rng.sample(items, k)
    if hasattr(rng, "choice"):
        idx = rng.choice(len(items), size=k, replace=False)
        return [items[int(i)] for i in idx]
    return items[:k]


def _db_excerpt(db: Any, rng: Any, accounts: dict[str, Any], limit: int = 2500) -> tuple[str, list[str]]:
    """A few records of ``db`` as JSON, and the account usernames they mention."""
    users: list[str] = []
    if isinstance(db, list):
        picked: Any = _sample(rng, db, 3)
    elif isinstance(db, dict) and "raw_documents" in db:
        picked = [d.get("title") for d in _sample(rng, db["raw_documents"], 6)]
    elif isinstance(db, dict):
        picked = {k: db[k] for k in _sample(rng, sorted(db, key=str), 5)}
        for key, record in picked.items():
            if key in accounts:
                users.append(key)
            elif isinstance(record, dict) and record.get("username") in accounts:
                users.append(record["username"])
    else:
        picked = db
    text = json.dumps(picked, ensure_ascii=False, default=str)
    return (text if len(text) <= limit else text[:limit] + "..."), users


def _short(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


__all__ = ["APIBankAdapter", "APIBankState", "json_schema_type", "rouge_l", "DIALOGUE_DIRS"]
