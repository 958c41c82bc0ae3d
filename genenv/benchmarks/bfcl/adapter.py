"""BFCL v4 (Berkeley Function Calling Leaderboard) as a genenv benchmark.

Splits
------
Every category is a split: the non-live AST set (``simple_python``, ``simple_java``,
``simple_javascript``, ``multiple``, ``parallel``, ``parallel_multiple``), the live AST set
(``live_simple``, ``live_multiple``, ``live_parallel``, ``live_parallel_multiple``), hallucination
(``irrelevance``, ``live_irrelevance``, ``live_relevance``) and multi-turn (``multi_turn_base``,
``_miss_func``, ``_miss_param``, ``_long_context``); groups ``non_live``, ``live``, ``hallucination``,
``multi_turn``, ``single_turn`` and ``all`` are splits too, and so is any ``+``-joined list of
categories. ``BFCLAdapter(category=...)`` (also ``gym.make("GenEnv-BFCL-v0", category=...)``) makes
that split the default one. The family of a task is its category.

Tasks
-----
``Task.task_id`` is the BFCL id; ``Task.prompt`` the user's message (earlier messages of a live
conversation are quoted before it; an entry's system message goes into :meth:`system_prompt`);
``Task.gold`` the ground truth (``possible_answer``: ``[{function: {param: [acceptable values]}}]``;
``None`` for relevance categories; per-turn call strings for multi-turn). ``Task.metadata``:
``category``, ``functions`` (the docs as BFCL stores them; single-turn), ``system``, and for
multi-turn ``involved_classes``, ``initial_config``, ``turns`` (the user messages of every turn) and
``missed_function`` (turn -> functions held back until that turn).

Episodes and scoring
--------------------
Single-turn categories: the agent's first action is its one response (BFCL asks once) and ends the
episode, whatever it holds; :meth:`score` decodes that action the way bfcl-eval decodes model output
(:mod:`.decoding`) and checks it with the AST checker (:mod:`.checker`). ``irrelevance`` and
``live_irrelevance`` are correct when the response holds no decodable call, ``live_relevance`` when it
holds at least one.

Multi-turn categories: the back-ends are bfcl-eval's classes (:mod:`.multi_turn`); calls execute on
them and return their results. Responses are read as the official runner reads them (:meth:`parse_action`):
what ``decode_execute`` cannot decode, or decodes to no call, is a plain answer, and a plain answer ends a
user turn; more than ``MAXIMUM_STEP_LIMIT`` (20) decodable responses in one user turn end the entry, as
upstream force-quits it. :meth:`next_user_message` gives
the next turn's message (for ``miss_func``, the held-back docs and "I have updated some more
functions you can choose from. What about now?"), or ``None`` after the last turn. :meth:`score`
groups the actions by user turn, decodes every action like the official runner (actions that do not
decode, or decode to nothing, are skipped) and runs the official state and response checks on fresh
instances (``multi_turn_checker``). Fewer answered turns than ground-truth turns fails, like
upstream's force-terminated entries. ``ToolEnv`` calls ``next_user_message`` on every plain answer.

``aggregate`` reports accuracy per category and the leaderboard's group scores: ``non_live`` (the
unweighted mean of simple (itself the mean of Python, Java, JavaScript), multiple, parallel and
parallel multiple), ``live`` (the four live AST categories weighted by their sizes), ``multi_turn``
(unweighted mean of the four), ``irrelevance_detection`` (mean of irrelevance and live irrelevance)
and ``relevance_detection`` (live relevance); a group appears when all its categories were scored.
"""

from __future__ import annotations

import copy
import json
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ..base import BenchmarkAdapter, Score, StepResult, Task, ToolCall, Trajectory, Turn, register_benchmark
from .checker import Verdict, check_ast
from .data import (
    AST_LIVE,
    AST_NON_LIVE,
    CATEGORIES,
    GROUPS,
    MULTI_TURN,
    RELEVANCE,
    BFCLData,
    category_of,
    expand_split,
    language,
    language_hinted,
    openai_tool,
)
from .decoding import DecodeError, ExecCall, contains_call, decode_ast, decode_execute, is_function_calling_format
from .expert import IRRELEVANT_ANSWER, multi_turn_actions, single_turn_actions
from .generation import (
    GENERATED_SHAPES,
    TASK_SCHEMA,
    example_of,
    generation_schema,
    parse_generated,
    task_id,
    validate_generated,
)
from .multi_turn import ERROR_PREFIX, Backends, check_multi_turn

SYSTEM_PROMPT = (
    "You are an expert in composing functions. You are given a question and a set of possible functions. "
    "Based on the question, you will need to make one or more function/tool calls to achieve the purpose. "
    "If none of the functions can be used, point it out. If the given question lacks the parameters required "
    "by the function, also point it out.\n\n"
    "If you decide to invoke any of the function(s), you MUST put it in the format of "
    "[func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)] "
    '(or as <tool_call>{"name": ..., "arguments": {...}}</tool_call> blocks). '
    "You SHOULD NOT include any other text in the response."
)
MULTI_TURN_BEHAVIOUR = (
    "At each turn, you should try your best to complete the tasks requested by the user within the current "
    "turn. Continue to output functions to call until you have fulfilled the user's request to the best of "
    "your ability. Once you have no more functions to call, the system will consider the current turn "
    "complete and proceed to the next turn or task."
)
ADDITIONAL_FUNCTIONS = "I have updated some more functions you can choose from. What about now?"
#: bfcl-eval's MAXIMUM_STEP_LIMIT: decodable responses per user turn; the one beyond it ends the whole entry
MAXIMUM_STEP_LIMIT = 20
SINGLE_TURN_OBSERVATION = "Recorded. BFCL scores this single response, so the episode ends here."


@dataclass
class SingleTurnState:
    """A single-turn episode has nothing to execute: the response itself is scored."""

    category: str


@dataclass
class MultiTurnState:
    """A multi-turn episode: the live back-ends and which user turn is being answered."""

    backends: Backends
    turns: list[str]
    turn: int = 0
    steps: int = 0  # decodable responses in the current user turn


@dataclass(frozen=True)
class DecodedCall(ToolCall):
    """A multi-turn call as the official runner decoded it, with what its executor runs (or why it cannot)."""

    executable: ExecCall | None = None


@register_benchmark("bfcl")
class BFCLAdapter(BenchmarkAdapter):
    """BFCL v4: AST, hallucination and multi-turn categories with the official checkers."""

    name = "bfcl"
    max_turns = 8  # single-turn categories end at the first call; multi-turn needs several steps
    default_split = "simple_python"
    validation_split = "live_simple"  # held-out real-user queries of the generated tasks' shape
    splits: tuple[str, ...] = (*CATEGORIES, *GROUPS)
    task_schema: ClassVar[dict[str, Any]] = TASK_SCHEMA

    def __init__(self, data_dir=None, category: str | None = None) -> None:
        super().__init__(data_dir)
        self.data = BFCLData(self.data_dir)
        self.category = category
        self._examples: dict[str, list[dict[str, Any]]] = {}
        if category is not None:
            expand_split(category)  # raises on an unknown category
            self.default_split = category

    # -- data ---------------------------------------------------------------------------
    def load_tasks(self, split: str) -> list[Task]:
        categories = expand_split(split)
        self.data.require(categories)
        tasks: list[Task] = []
        for category in categories:
            for entry in self.data.entries(category):
                tasks.append(self._task(entry, category, split))
        return tasks

    def _task(self, entry: dict[str, Any], category: str, split: str) -> Task:
        entry = copy.deepcopy(entry)  # the parsed files are cached; tasks must not share them
        if category in MULTI_TURN:
            turns = [_user_text(messages) for messages in entry["question"]]
            return Task(
                task_id=entry["id"],
                benchmark=self.name,
                prompt=turns[0],
                gold=entry["ground_truth"],
                split=split,
                metadata={
                    "category": category,
                    "involved_classes": list(entry["involved_classes"]),
                    "initial_config": entry.get("initial_config", {}),
                    "turns": turns,
                    "missed_function": entry.get("missed_function", {}),
                },
            )
        messages = entry["question"][0]
        system = "\n".join(m["content"] for m in messages if m.get("role") == "system")
        return Task(
            task_id=entry["id"],
            benchmark=self.name,
            prompt=_conversation_text([m for m in messages if m.get("role") != "system"]),
            gold=entry["ground_truth"],
            split=split,
            metadata={"category": category, "functions": entry["function"], "system": system},
        )

    # -- tools and execution ------------------------------------------------------------
    def _functions(self, task: Task) -> list[dict[str, Any]]:
        if _category(task) not in MULTI_TURN:
            return task.metadata.get("functions") or []
        missed = {name for names in (task.metadata.get("missed_function") or {}).values() for name in names}
        docs = [doc for cls in task.metadata["involved_classes"] for doc in self.data.func_docs(cls)]
        return [doc for doc in docs if doc["name"] not in missed]

    def tools(self, task: Task) -> list[dict[str, Any]]:
        return [openai_tool(doc) for doc in language_hinted(self._functions(task), _category(task))]

    def system_prompt(self, task: Task) -> str:
        parts = [SYSTEM_PROMPT]
        if _category(task) in MULTI_TURN:
            parts.append(MULTI_TURN_BEHAVIOUR)
        if task.metadata.get("system"):
            parts.append(task.metadata["system"])
        return "\n\n".join(parts)

    def start(self, task: Task) -> SingleTurnState | MultiTurnState:
        category = _category(task)
        if category not in MULTI_TURN:
            return SingleTurnState(category)
        backends = Backends(
            task.metadata["involved_classes"], task.metadata.get("initial_config") or {}, "long_context" in category
        )
        return MultiTurnState(backends=backends, turns=self._turn_messages(task))

    def _turn_messages(self, task: Task) -> list[str]:
        missed = task.metadata.get("missed_function") or {}
        messages = list(task.metadata["turns"])
        docs = [doc for cls in task.metadata["involved_classes"] for doc in self.data.func_docs(cls)]
        for turn, names in missed.items():
            revealed = [doc for doc in docs if doc["name"] in names]
            messages[int(turn)] = f"{json.dumps(revealed, ensure_ascii=False)}\n{ADDITIONAL_FUNCTIONS}"
        return messages

    def parse_action(self, text: str, state: Any) -> list[ToolCall]:
        """One response read as bfcl-eval's runner reads it; never refuses one.

        Multi-turn: ``decode_execute``; a response that does not decode, or decodes to no call, is a plain
        answer and closes the user turn (upstream: "Proceed to next turn"), so a call in a format the official
        decoder cannot read (a fenced JSON block) is never executed. Single-turn: BFCL scores the first response
        as written (:meth:`judge`), so it ends the episode either way; its calls are what ``decode_ast`` reads."""
        if isinstance(state, MultiTurnState):
            try:
                decoded = decode_execute(text)
            except DecodeError:
                return []
            if decoded:
                state.steps += 1
            return [DecodedCall(c.name, dict(c.arguments), raw=text, executable=c) for c in decoded]
        try:
            decoded = decode_ast(text, language(state.category))
        except DecodeError:
            return []
        if not is_function_calling_format(decoded):
            return []
        return [ToolCall(name, dict(arguments), raw=text) for item in decoded for name, arguments in item.items()]

    def execute(self, state: Any, call: ToolCall) -> StepResult:
        """Single-turn: nothing runs, the episode ends. Multi-turn: the call runs on the episode's back-ends; the
        first call of a user turn's response beyond :data:`MAXIMUM_STEP_LIMIT` ends the episode, as upstream
        force-quits the entry there (the turns answered so far are scored)."""
        if isinstance(state, SingleTurnState):
            return StepResult(SINGLE_TURN_OBSERVATION, output=call.to_dict(), done=True)
        if isinstance(call, DecodedCall) and call.executable is not None:
            exec_call = call.executable
        else:
            exec_call = _env_call(call.name, call.arguments if isinstance(call.arguments, dict) else {})
        result = state.backends.run(exec_call)
        error = "execution_error" if result.startswith(ERROR_PREFIX) else None
        return StepResult(result, output=result, error=error, done=state.steps > MAXIMUM_STEP_LIMIT)

    def gold_actions(self, task: Task) -> Iterator[list[str]]:
        """The ground truth as the agent's responses (:mod:`.expert`), only where the official verdict accepts it;
        a single-turn answer in each form the verdict accepts (the env may not read every form as a call). None
        for live relevance (no ground truth) and for the few gold answers bfcl-eval itself rejects."""
        category = _category(task)
        if category in MULTI_TURN:
            turns = multi_turn_actions(task.gold, self.start(task).backends)
            if turns is not None and self.judge_turns(task, turns).valid:
                yield [action for turn in turns for action in turn]
        elif "irrelevance" in category:
            yield [IRRELEVANT_ANSWER]
        elif task.gold is not None:
            candidates = single_turn_actions(task.metadata.get("functions") or [], task.gold, language(category))
            yield from ([action] for action in candidates if self.judge(task, action).valid)

    def next_user_message(self, state: Any, answer: str) -> str | None:
        """The user's next message after a plain-text answer (multi-turn), or ``None`` to end the episode."""
        if not isinstance(state, MultiTurnState) or state.turn + 1 >= len(state.turns):
            return None
        state.turn += 1
        state.steps = 0
        return state.turns[state.turn]

    # -- scoring ------------------------------------------------------------------------
    def score(self, task: Task, trajectory: Trajectory) -> Score:
        category = _category(task)
        if category in MULTI_TURN:
            verdict = self._score_multi_turn(task, trajectory)
        else:
            answers = [turn.action for turn in trajectory.turns if accepted(turn)]
            if answers:
                verdict = self.judge(task, answers[0])
            else:
                verdict = Verdict(False, "no_answer", ["every action was refused (too long, empty or unreadable)"])
        breakdown = {"category": category, "valid": verdict.valid, "error_type": verdict.error_type}
        if verdict.errors:
            breakdown["errors"] = verdict.errors[:3]
        return Score(1.0 if verdict.valid else 0.0, breakdown)

    def judge(self, task: Task, text: str) -> Verdict:
        """The official verdict on one single-turn response ``text`` (never raises)."""
        category = _category(task)
        if category in RELEVANCE:
            has_call = contains_call(text)
            if "irrelevance" in category:
                return Verdict(not has_call, "irrelevance_error:decoder_success" if has_call else "")
            return Verdict(has_call, "" if has_call else "relevance_error:decoder_failed")
        lang = language(category)
        try:
            decoded = decode_ast(text, lang)
        except DecodeError as error:
            return Verdict(False, "ast_decoder:decoder_failed", [str(error)])
        if not is_function_calling_format(decoded):
            return Verdict(False, "ast_decoder:decoder_wrong_output_format")
        return check_ast(task.metadata.get("functions") or [], decoded, task.gold, lang, category)

    def judge_turns(self, task: Task, turns: list[list[str]]) -> Verdict:
        """The official multi-turn verdict on the model's messages, grouped by user turn."""
        decoded_turns = []
        for messages in turns:
            steps = []
            for text in messages:
                try:
                    calls = decode_execute(text)
                except DecodeError:
                    continue
                if calls:
                    steps.append(calls)
            decoded_turns.append(steps)
        return check_multi_turn(
            decoded_turns,
            task.gold,
            task.metadata["involved_classes"],
            task.metadata.get("initial_config") or {},
            "long_context" in _category(task),
        )

    def _score_multi_turn(self, task: Task, trajectory: Trajectory) -> Verdict:
        return self.judge_turns(task, user_turns(trajectory))

    def aggregate(self, tasks: list[Task], scores: list[Score]) -> dict[str, float]:
        metrics: dict[str, float] = {"n": float(len(scores))}
        if not scores:
            return metrics
        metrics["score"] = sum(s.value for s in scores) / len(scores)
        per_category: dict[str, list[float]] = defaultdict(list)
        for task, score in zip(tasks, scores):
            per_category[_category(task)].append(score.value)
        accuracy = {c: sum(v) / len(v) for c, v in per_category.items()}
        counts = {c: len(v) for c, v in per_category.items()}
        for category in sorted(accuracy):
            metrics[f"{category}/accuracy"] = accuracy[category]
            metrics[f"{category}/n"] = float(counts[category])
        metrics.update(leaderboard_groups(accuracy, counts))
        return metrics

    def family(self, task: Task) -> str:
        return _category(task)

    # -- generated tasks ----------------------------------------------------------------
    def families(self) -> list[str]:
        if self.category in GENERATED_SHAPES:
            return [self.category]
        return list(GENERATED_SHAPES)

    def generation_context(self, family: str, rng: Any, success: Mapping[str, float] | None = None) -> str:
        if family not in GENERATED_SHAPES:
            raise ValueError(f"BFCL generates {', '.join(GENERATED_SHAPES)}, not {family!r}")
        (f_min, f_max), (g_min, g_max) = GENERATED_SHAPES[family]
        rules = {
            "simple_python": "one function doc and a question that needs exactly one call to it",
            "multiple": f"{f_min}-{f_max} function docs and a question that needs exactly one call to one of them",
            "parallel": f"one function doc and a question that needs {g_min}-{g_max} calls to it (different arguments)",
            "parallel_multiple": f"{f_min}-{f_max} function docs and a question that needs {g_min}-{g_max} calls "
            "to at least two different functions",
            "irrelevance": "one or two function docs and a question that none of them can answer; "
            "ground_truth is [] (the right answer is no call)",
        }[family]
        return (
            f"Task category: {family} (BFCL). Write {rules}. Function docs use BFCL's format: "
            '{"name", "description", "parameters": {"type": "dict", "properties": {param: {"type": '
            'string|integer|float|boolean|array (with "items"), "description"}}, "required": [...]}}. '
            "ground_truth lists the expected calls as [{function_name: {param: [acceptable values]}}]; "
            'add "" to a list when an optional parameter may be left out. Every value must follow from the question.'
        )

    def generation_schema(self, family: str) -> dict[str, Any]:
        return generation_schema(family)

    def generation_examples(self, family: str, k: int, rng: Any) -> list[dict[str, Any]]:
        """``k`` entries of the category in task format, drawn from its shorter half of valid ones."""
        if family not in self._examples:
            examples = [example_of(entry, family) for entry in self.data.entries(family)]
            valid = [e for e in examples if validate_generated(family, e["function"], e["ground_truth"])[0]]
            valid.sort(key=lambda e: len(json.dumps(e)))
            self._examples[family] = valid[: max(k, len(valid) // 2)]
        pool = self._examples[family]
        return [copy.deepcopy(pool[int(i)]) for i in rng.permutation(len(pool))[:k]]

    def parse_task(self, obj: dict[str, Any], family: str | None = None) -> Task:
        fields = parse_generated(obj, family)
        gold_functions = [next(iter(a)) for a in fields["ground_truth"] if isinstance(a, dict) and a]
        return Task(
            task_id=task_id(fields),
            benchmark=self.name,
            prompt=fields["question"],
            gold=copy.deepcopy(fields["ground_truth"]),
            split=fields["category"],
            source="generated",
            metadata={
                "category": fields["category"],
                "functions": copy.deepcopy(fields["function"]),
                "system": "",
                "function": gold_functions[0] if gold_functions else "",
            },
        )

    def validate_task(self, task: Task) -> tuple[bool, str]:
        try:
            return validate_generated(_category(task), task.metadata.get("functions") or [], task.gold or [])
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as error:
            return False, f"malformed task: {type(error).__name__}: {error}"


# -- helpers ------------------------------------------------------------------------------


def _category(task: Task) -> str:
    return task.metadata.get("category") or category_of(task.task_id)


def _user_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(m.get("content", "") for m in messages if m.get("role") == "user")


def _conversation_text(messages: list[dict[str, Any]]) -> str:
    """The user's message; earlier turns of a logged conversation are quoted before it."""
    if len(messages) == 1:
        return messages[0].get("content", "")
    return "\n".join(f"{m.get('role', 'user').capitalize()}: {m.get('content', '')}" for m in messages)


def _env_call(name: str, arguments: dict[str, Any]) -> ExecCall:
    """A parsed tool call as the back-ends run it (keyword names must be identifiers)."""
    if any(not isinstance(k, str) or not k.isidentifier() for k in arguments):
        return ExecCall(name, error="invalid syntax: a keyword argument needs a valid name")
    return ExecCall(name, copy.deepcopy(arguments))


def accepted(turn: Turn) -> bool:
    """Whether ToolEnv accepted the action: a refused one (too long, empty, unreadable) has an error and
    no calls; it cost the agent a turn and is not scored (nor re-parsed)."""
    return turn.error is None or bool(turn.calls)


def user_turns(trajectory: Trajectory) -> list[list[str]]:
    """The agent's accepted messages grouped by user turn: a plain-text answer (no call, no error) closes
    a turn; refused actions are left out."""
    turns: list[list[str]] = []
    current: list[str] | None = None
    for turn in trajectory.turns:
        if not accepted(turn):
            continue
        if current is None:
            current = []
            turns.append(current)
        current.append(turn.action)
        if not turn.calls and turn.error is None:
            current = None
    return turns


def leaderboard_groups(accuracy: dict[str, float], counts: dict[str, int]) -> dict[str, float]:
    """The leaderboard's group scores from per-category accuracy, for the groups fully present."""
    groups: dict[str, float] = {}
    if all(c in accuracy for c in AST_NON_LIVE):
        simple = sum(accuracy[c] for c in AST_NON_LIVE[:3]) / 3
        groups["non_live"] = (simple + sum(accuracy[c] for c in AST_NON_LIVE[3:])) / 4
    if all(c in accuracy for c in AST_LIVE):
        total = sum(counts[c] for c in AST_LIVE)
        groups["live"] = sum(accuracy[c] * counts[c] for c in AST_LIVE) / total
    if all(c in accuracy for c in MULTI_TURN):
        groups["multi_turn"] = sum(accuracy[c] for c in MULTI_TURN) / len(MULTI_TURN)
    if "irrelevance" in accuracy and "live_irrelevance" in accuracy:
        groups["irrelevance_detection"] = (accuracy["irrelevance"] + accuracy["live_irrelevance"]) / 2
    if "live_relevance" in accuracy:
        groups["relevance_detection"] = accuracy["live_relevance"]
    return groups
