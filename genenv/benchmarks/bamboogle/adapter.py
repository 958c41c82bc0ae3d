"""Bamboogle (Press et al., 2022; the self-ask paper) as a genenv benchmark.

125 hand-written two-hop questions that a search engine does not answer directly. The agent has
``search(query)`` and ``answer(answer)`` tools; a plain-text reply (no tool call) is also a final
answer, scored on what follows "So the final answer is:" when that phrase is there (self-ask).

Splits
------
``test``     all 125 questions (the official set; what Search-R1 / FlashRAG report).
``heldin``   the 13 questions with index % 10 == 0: the only ones the simulator ever sees as worked
             examples (:meth:`BamboogleAdapter.generation_examples`).
``heldout``  the other 112: a clean evaluation set for an agent trained on simulator-written tasks.
Bamboogle has no train split. A simulator shown ``heldin`` questions may paraphrase them into
training tasks, so after GenEnv training report ``heldout`` (``test`` overlaps by 13 questions);
generated tasks that copy any Bamboogle question are rejected outright.

``Task.gold`` = ``{"answers": [gold answers], "decomposition": {"Q1", "A1": [...], "Q2", "A2": [...]}}``;
the prompt is the question alone. Gold answers reach neither the prompt nor the search back-end.

Search back-ends (:mod:`.search`): BM25 over a JSONL corpus given as ``corpus=PATH``, or, with no
corpus, results written by a language model (``search_model``; every observation says they are
simulated).

Scoring (:mod:`.scoring`)
-------------------------
The prediction is the argument of the last well-formed ``answer`` call, else the plain-text
final answer, after self-ask / ``<answer>`` extraction. ``em`` (SQuAD-normalised exact match
against any gold answer), ``f1`` (token F1) and ``cover_em`` (gold contained in the prediction)
are always in the breakdown; the score value is ``f1`` (``reward="f1"``: the soft reward for
training) or ``em`` (``reward="em"``: the official evaluation). :meth:`aggregate` reports the
EM, F1 and cover-EM means whichever reward is chosen.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..base import (
    BenchmarkAdapter,
    DataNotFoundError,
    Score,
    StepResult,
    Task,
    ToolCall,
    Trajectory,
    read_data_json,
    register_benchmark,
    require_files,
    string_tool,
)
from .questions import GENERATED_FAMILIES, MAX_QUESTION_CHARS, question_family, two_hop_problems
from .scoring import cover_exact_match, exact_match, extract_answer, normalize_answer, token_f1
from .search import BM25Search, SearchEngine, SimulatedSearch

DATA_FILE = "bamboogle_test.jsonl"
HOW_TO_GET = (
    "bamboogle_test.jsonl (FlashRAG-style: id, question, golden_answers, decomposition) is made from "
    "data/bamboogle.json of github.com/LoganMilandin/comp-gap-public (the Bamboogle sheet of Press et al. 2022, "
    "ofirpress/self-ask); see SOURCE.md of the shared data folder."
)
HELD_IN_STRIDE = 10
MAX_QUERY_CHARS = 500
MAX_ANSWER_CHARS = 500
REWARDS = ("f1", "em")
TOPICS = (
    "history", "science", "geography", "sports", "music", "film", "literature", "politics",
    "technology", "art", "business", "space exploration", "architecture", "religion",
)  # fmt: skip
FAMILY_HINTS = {
    "who": "The question asks for a person and starts with 'Who'.",
    "when": "The question asks for a date or a year and starts with 'When' or 'In what year'.",
    "where": "The question asks for a place and starts with 'Where' or 'In what country'.",
    "quantity": "The question asks for a number or an amount and starts with 'How many' or 'How much'.",
    "what": "The question asks for a thing or a property and starts with 'What' or 'Which' (not 'What year').",
}
_STRING = {"type": "string", "minLength": 1, "maxLength": 200}
_ANSWER = {"type": "string", "minLength": 1, "maxLength": 60}
FIELDS = ("Q1", "A1", "Q2", "A2", "question")


@dataclass
class BamboogleState:
    """One episode: the queries searched so far."""

    queries: list[str] = field(default_factory=list)


@register_benchmark("bamboogle")
class BamboogleAdapter(BenchmarkAdapter):
    """Bamboogle two-hop QA with a pluggable search tool, scored by EM / F1 as Search-R1 and FlashRAG.

    Args:
        data_dir: the folder holding ``bamboogle_test.jsonl`` (default ``$GENENV_DATA_DIR/bamboogle``).
        corpus: a JSONL file of ``{id, title, text}`` documents searched with BM25; ``None``: simulated search.
        reward: the score value, ``"f1"`` (soft, for training) or ``"em"`` (exact match, for evaluation).
        top_k: search results per query.
        search_model: the simulated search engine's model, a Policy or a name for ``load_policy``.
        search_max_new_tokens: generation budget of one simulated result page.
    """

    name = "bamboogle"
    max_turns = 3
    default_split = "heldout"  # the 112 never trained on; "test": all 125, the official set (13 of them heldin)
    validation_split = "heldout"  # never shown to the simulator
    base_split = "heldin"  # the 13 the simulator sees as examples: expert traces (two searches, then the answer)
    splits = ("test", "heldout", "heldin")
    task_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "Q1": {"type": "string", "description": "hop 1: a question whose answer is the bridge entity"},
            "A1": {"type": "string", "description": "the bridge entity (short)"},
            "Q2": {"type": "string", "description": "hop 2: a question about the bridge entity, naming it"},
            "A2": {"type": "string", "description": "the answer of Q2 and of the whole question (short)"},
            "question": {"type": "string", "description": "Q2 with the bridge entity replaced by Q1's description"},
        },
        "required": list(FIELDS),
    }

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        corpus: str | os.PathLike[str] | None = None,
        reward: str = "f1",
        top_k: int = 3,
        search_model: Any = "smollm2",
        search_max_new_tokens: int = 64,
    ) -> None:
        super().__init__(data_dir)
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        if top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {top_k}")
        self.reward = reward
        self.search_engine: SearchEngine = (
            BM25Search(corpus, top_k=top_k)
            if corpus
            else SimulatedSearch(search_model, top_k=top_k, max_new_tokens=search_max_new_tokens)
        )
        self._records: list[dict[str, Any]] | None = None

    # -- data ---------------------------------------------------------------------------
    def records(self) -> list[dict[str, Any]]:
        """The 125 rows of ``bamboogle_test.jsonl`` in order (read once)."""
        if self._records is None:
            require_files(self.data_dir, [DATA_FILE], self.name, HOW_TO_GET)
            self._records = read_data_json(self.data_dir / DATA_FILE, self.name, HOW_TO_GET, lines=True)
        return self._records

    def load_tasks(self, split: str) -> list[Task]:
        if split not in self.splits:
            raise ValueError(f"unknown split {split!r}; choose from {', '.join(self.splits)}")
        tasks = []
        for index, row in enumerate(self.records()):
            held_in = index % HELD_IN_STRIDE == 0
            if (split == "heldin" and not held_in) or (split == "heldout" and held_in):
                continue
            question = row["question"].strip()
            tasks.append(
                Task(
                    task_id=f"bamboogle-{row['id']}",
                    benchmark=self.name,
                    prompt=question,
                    gold={"answers": list(row["golden_answers"]), "decomposition": row.get("decomposition")},
                    split=split,
                    metadata={"index": index, "family": question_family(question), "held_in": held_in},
                )
            )
        return tasks

    # -- tools and execution ------------------------------------------------------------
    def tools(self, task: Task) -> list[dict[str, Any]]:
        return [
            string_tool(
                "search", "Search the web; returns the top results for the query.", {"query": "what to search for"}
            ),
            string_tool(
                "answer", "Give the final answer to the question (ends the episode).", {"answer": "a short answer"}
            ),
        ]

    def start(self, task: Task) -> BamboogleState:
        return BamboogleState()

    def execute(self, state: BamboogleState, call: ToolCall) -> StepResult:
        name = getattr(call, "name", None)
        if name not in ("search", "answer"):
            return StepResult(
                f"Error (unknown_tool): there is no tool {str(name)[:80]!r}; use search or answer.",
                error="unknown_tool",
            )
        param = "query" if name == "search" else "answer"
        value, error = _string_argument(getattr(call, "arguments", None), param)
        if error is not None:
            return StepResult(f"Error ({error[0]}): {error[1]}", error=error[0])
        if name == "answer":
            if len(value) > MAX_ANSWER_CHARS:
                return StepResult(
                    f"Error (answer_too_long): keep the answer under {MAX_ANSWER_CHARS} characters.",
                    error="answer_too_long",
                )
            return StepResult("Answer recorded.", output={"answer": value}, done=True)
        if len(value) > MAX_QUERY_CHARS:
            return StepResult(
                f"Error (query_too_long): keep the query under {MAX_QUERY_CHARS} characters.", error="query_too_long"
            )
        state.queries.append(value)
        try:
            observation = self.search_engine.search(value)
        except Exception as exc:  # noqa: BLE001 - execute never raises
            return StepResult(
                f"Error (execution_error): search failed: {type(exc).__name__}: {exc}", error="execution_error"
            )
        return StepResult(observation, output={"query": value})

    def gold_actions(self, task: Task) -> list[list[str]]:
        """The question's decomposition played out: a search for each hop (``Q1``, then ``Q2``), then the self-ask
        answer with the gold. The search results are whatever the back-end returns (with simulated search, a
        model's text that may miss the fact); the trace teaches the procedure and the answer form."""
        gold = task.gold if isinstance(task.gold, dict) else {}
        hops = gold.get("decomposition") or {}
        answers = [a for a in gold.get("answers") or [] if isinstance(a, str) and normalize_answer(a)]
        queries = [hops.get(key) for key in ("Q1", "Q2")]
        if not answers or not all(isinstance(q, str) and q.strip() for q in queries):
            return []
        searches = [self.format_call("search", {"query": q.strip()}) for q in queries]
        return [[*searches, f"So the final answer is: {answers[0]}"]]

    def few_shot_exchanges(self) -> list[dict[str, Any]]:
        """One worked two-hop question (not from Bamboogle): two searches, then the self-ask answer."""
        return FEW_SHOT_EXCHANGES

    def system_prompt(self, task: Task) -> str:
        return "\n".join(
            [
                "Answer the question. It needs two facts: search for the first one, then for the second one.",
                "To search, write: "
                '<tool_call>{"name": "search", "arguments": {"query": "author of Hamlet"}}</tool_call>',
                f"Search results: {self.search_engine.description}.",
                "When you know the answer, reply without a tool call and end with 'So the final answer is: ' and "
                "a short answer, for example: Hamlet was written by William Shakespeare, whose father was John "
                "Shakespeare. So the final answer is: John Shakespeare",
            ]
        )

    # -- scoring ------------------------------------------------------------------------
    def prediction(self, trajectory: Trajectory) -> tuple[str | None, str]:
        """The answer text of an episode and where it came from: ``"answer_tool"``, ``"final_text"`` or ``"none"``."""
        for call in reversed(trajectory.calls):
            if call.name == "answer":
                value, error = _string_argument(call.arguments, "answer")
                if error is None and len(value) <= MAX_ANSWER_CHARS:
                    return value, "answer_tool"
        final = trajectory.final_answer
        if isinstance(final, str) and final.strip():
            return final, "final_text"
        return None, "none"

    def score(self, task: Task, trajectory: Trajectory) -> Score:
        gold = task.gold if isinstance(task.gold, dict) else {}
        answers = [a for a in gold.get("answers") or [] if isinstance(a, str) and normalize_answer(a)]
        breakdown: dict[str, Any] = {"em": 0.0, "f1": 0.0, "cover_em": 0.0}
        breakdown["searches"] = sum(call.name == "search" for call in trajectory.calls)
        if not answers:
            return Score(0.0, {**breakdown, "error": "the task has no gold answer"})
        text, source = self.prediction(trajectory)
        breakdown.update(answer_source=source, gold=answers)
        if text is None:
            return Score(
                0.0, {**breakdown, "prediction": None, "error": "no answer: neither an answer call nor a final text"}
            )
        predicted, extraction = extract_answer(text)
        breakdown.update(prediction=predicted, extraction=extraction)
        if not normalize_answer(predicted):
            return Score(0.0, {**breakdown, "error": "the answer is empty after normalisation"})
        breakdown.update(
            em=exact_match(predicted, answers),
            f1=token_f1(predicted, answers),
            cover_em=cover_exact_match(predicted, answers),
        )
        return Score(breakdown[self.reward], breakdown)

    def aggregate(self, tasks: list[Task], scores: list[Score]) -> dict[str, float]:
        """EM, F1 and cover-EM means (Search-R1 / FlashRAG's Bamboogle figures), the share of episodes
        with an answer, and searches per episode."""
        n = len(scores)
        metrics: dict[str, float] = {"n": float(n)}
        if not n:
            return metrics
        metrics["score"] = sum(s.value for s in scores) / n
        for key in ("em", "f1", "cover_em", "searches"):
            metrics[key] = sum(float(s.breakdown.get(key, 0.0)) for s in scores) / n
        metrics["answered"] = sum(s.breakdown.get("answer_source", "none") != "none" for s in scores) / n
        return metrics

    def family(self, task: Task) -> str:
        return task.metadata.get("family") or question_family(task.prompt)

    # -- generated tasks ----------------------------------------------------------------
    def families(self) -> list[str]:
        return list(GENERATED_FAMILIES)

    def generation_context(self, family: str, rng: Any, success: Mapping[str, float] | None = None) -> str:
        if family not in FAMILY_HINTS:
            raise ValueError(f"unknown family {family!r}; choose from {', '.join(FAMILY_HINTS)}")
        topic = TOPICS[int(rng.integers(len(TOPICS)))]
        return (
            "Write a new two-hop question about real, well-known facts. Q1 asks for a bridge entity A1. "
            "Q2 asks about A1 and names it word for word; its answer A2 answers the whole question. "
            "The question is Q2 with A1 replaced by Q1's description, so it never names A1. "
            "A1 and A2 are short (a name, a date, a number or a place) and A2 appears in no question. "
            f"{FAMILY_HINTS[family]} Topic: {topic}."
        )

    def generation_schema(self, family: str) -> dict[str, Any]:
        """``task_schema`` with bounded strings (so constrained generation always closes them)."""
        lengths = {"Q1": _STRING, "A1": _ANSWER, "Q2": _STRING, "A2": _ANSWER, "question": _STRING}
        return {
            "type": "object",
            "properties": {key: dict(lengths[key]) for key in FIELDS},
            "required": list(FIELDS),
            "additionalProperties": False,
        }

    def generation_examples(self, family: str, k: int, rng: Any) -> list[dict[str, Any]]:
        """Up to ``k`` well-formed ``heldin`` questions, ``family`` first, in ``task_schema`` format."""
        examples = []
        for row in self.records()[::HELD_IN_STRIDE]:
            d = row.get("decomposition") or {}
            example = {"Q1": d.get("Q1"), "A1": _first(d.get("A1")), "Q2": d.get("Q2"), "A2": _first(d.get("A2"))}
            example["question"] = row["question"].strip()
            if not two_hop_problems(example["question"], example["Q1"], example["A1"], example["Q2"], example["A2"]):
                examples.append(example)
        same = [e for e in examples if question_family(e["question"]) == family]
        others = [e for e in examples if question_family(e["question"]) != family]
        chosen = [same[int(i)] for i in rng.permutation(len(same))]
        chosen += [others[int(i)] for i in rng.permutation(len(others))]
        return [dict(e) for e in chosen[: max(0, k)]]

    def parse_task(self, obj: dict[str, Any], family: str | None = None) -> Task:
        if not isinstance(obj, dict):
            raise ValueError("the task must be a JSON object")
        values: dict[str, Any] = {}
        for key in FIELDS:
            value = obj.get(key)
            if key in ("A1", "A2"):
                value = [value] if isinstance(value, str) else value
                if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
                    raise ValueError(f"{key!r} must be a non-empty string (or a list of them)")
                values[key] = [v.strip() for v in value]
            elif not isinstance(value, str) or not value.strip():
                raise ValueError(f"{key!r} must be a non-empty string")
            elif len(value) > MAX_QUESTION_CHARS:
                raise ValueError(f"{key!r} is longer than {MAX_QUESTION_CHARS} characters")
            else:
                values[key] = value.strip()
        kind = question_family(values["question"])
        if family is not None and kind != family:
            raise ValueError(f"the question is a {kind!r} question, not the requested {family!r}")
        decomposition = {key: values[key] for key in ("Q1", "A1", "Q2", "A2")}
        digest = hashlib.sha1(json.dumps(values, sort_keys=True).encode()).hexdigest()[:12]
        return Task(
            task_id=f"bamboogle-gen-{digest}",
            benchmark=self.name,
            prompt=values["question"],
            gold={"answers": list(values["A2"]), "decomposition": decomposition},
            split="generated",
            source="generated",
            metadata={"family": kind},
        )

    def validate_task(self, task: Task) -> tuple[bool, str]:
        """A generated task is kept when its question is a well-formed two-hop question
        (:func:`.questions.two_hop_problems`) and not a copy of a Bamboogle question."""
        gold = task.gold if isinstance(task.gold, dict) else {}
        d = gold.get("decomposition")
        if not isinstance(d, dict) or not isinstance(task.prompt, str):
            return False, "the task has no decomposition"
        a1, a2 = _first(d.get("A1")), _first(d.get("A2"))
        if not gold.get("answers") or a1 is None or a2 is None:
            return False, "the task has no answer"
        problems = two_hop_problems(task.prompt, d.get("Q1"), a1, d.get("Q2"), a2)
        if problems:
            return False, "; ".join(problems)
        try:
            known = {normalize_answer(row["question"]) for row in self.records()}
        except (DataNotFoundError, ValueError, KeyError) as error:
            return False, f"cannot check against the Bamboogle questions: {error}"
        if normalize_answer(task.prompt) in known:
            return False, "the question copies a Bamboogle question"
        return True, "ok"


# -- helpers ------------------------------------------------------------------------------


def _search_call(query: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "search", "arguments": {"query": query}}) + "\n</tool_call>"


FEW_SHOT_EXCHANGES: list[dict[str, Any]] = [
    {"role": "user", "content": "In what year was the founder of Amazon born?"},
    {"role": "assistant", "content": _search_call("founder of Amazon")},
    {
        "role": "tool",
        "content": 'Search results for "founder of Amazon":\n1. Amazon (company): Amazon was founded by Jeff Bezos '
        "in Bellevue, Washington, on July 5, 1994.",
    },
    {"role": "assistant", "content": _search_call("Jeff Bezos birth year")},
    {
        "role": "tool",
        "content": 'Search results for "Jeff Bezos birth year":\n1. Jeff Bezos: Jeffrey Preston Bezos (born January '
        "12, 1964) is an American businessman, the founder of Amazon.",
    },
    {
        "role": "assistant",
        "content": "Amazon was founded by Jeff Bezos, who was born on January 12, 1964. So the final answer is: 1964",
    },
]

SEARCH_QUERY = "what to search for"
SHORT_ANSWER = "a short answer"


def _string_argument(arguments: Any, param: str) -> tuple[str, tuple[str, str] | None]:
    """The one string argument ``param`` of a call, or ``(kind, message)`` saying what is wrong."""
    if not isinstance(arguments, dict):
        return "", ("wrong_type", "the arguments must be a JSON object")
    unknown = sorted(str(k) for k in arguments if k != param)
    if unknown:
        return "", ("unknown_argument", f"unknown argument(s) {', '.join(unknown)[:120]}; the only one is {param!r}")
    if param not in arguments:
        return "", ("missing_argument", f"missing the argument {param!r}")
    value = arguments[param]
    if not isinstance(value, str):
        return "", ("wrong_type", f"{param!r} must be a string, not {type(value).__name__}")
    if not value.strip():
        return "", (f"empty_{param}", f"{param!r} is empty")
    return value.strip(), None


def _first(value: Any) -> str | None:
    """The first answer of a string or a list of strings."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and isinstance(value[0], str):
        return value[0]
    return None


__all__ = ["BamboogleAdapter", "BamboogleState", "HELD_IN_STRIDE"]
