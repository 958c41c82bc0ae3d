"""Reading a submitted plan: the agent's final answer text -> the official list of day dicts.

Accepted, tried in this order (model text is never evaluated as code):

1. a JSON array of day objects, or a Python-literal list (single quotes, as the gold plans of
   ``std_travelplanner_sft.jsonl`` are written) read with :func:`ast.literal_eval`, optionally
   inside a code fence or wrapped as ``{"plan": [...]}``;
2. the planner's text format of the official prompts::

       Day 1:
       Current City: from A to B
       Transportation: Flight Number: F0123456, from A to B, Departure Time: ..., Arrival Time: ...
       Breakfast: ...   Attraction: ...   Lunch: ...   Dinner: ...   Accommodation: ...

   (the official pipeline turns such text into JSON with GPT-4; here a fixed rule does it).

Anything else raises :class:`PlanFormatError` with the reason; the plan then counts as not
delivered.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

PLAN_KEYS = ("days", "current_city", "transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation")
MAX_PLAN_DAYS = 60
_TEXT_FIELDS = {
    "current city": "current_city",
    "transportation": "transportation",
    "breakfast": "breakfast",
    "attraction": "attraction",
    "attractions": "attraction",
    "lunch": "lunch",
    "dinner": "dinner",
    "accommodation": "accommodation",
}
# Read line by line, on stripped lines, with no two adjacent runs that can take the same characters:
# linear time on any text (``\s*`` runs across lines backtrack quadratically on long blank stretches).
_DAY_HEADER = re.compile(r"\**[ \t]*Day[ \t]*(\d+)[ \t*:]*", re.IGNORECASE)
_FIELD_LINE = re.compile(
    r"(?:[-*][ \t]*)?(?:\*+[ \t]*)?(Current City|Transportation|Breakfast|Attractions?|Lunch|Dinner|Accommodation)"
    r"[ \t]*(?:\*+[ \t]*)?:(.*)",
    re.IGNORECASE,
)
_MAX_CANDIDATES = 32
#: Python-literal spans parsed per answer, in characters, as a multiple of the answer's length
_PARSE_BUDGET = 4
_FALLBACK_ENDS = 2
_PAIRS = {"]": "[", "}": "{"}


class PlanFormatError(ValueError):
    """The answer holds no plan in a readable format."""


def parse_plan(text: Any) -> list[dict[str, Any]]:
    """The plan in ``text`` as a list of day dicts; raises :class:`PlanFormatError` with the reason."""
    if isinstance(text, list):
        return _validate(text)
    if not isinstance(text, str) or not text.strip():
        raise PlanFormatError("the answer is empty: no plan was given")
    value = _literal_plan(text)
    if value is not None:
        return _validate(value)
    days = _text_plan(text)
    if days:
        return _validate(days)
    raise PlanFormatError(
        "no plan found: answer with a JSON list of day objects "
        f"({', '.join(PLAN_KEYS)}) or the 'Day 1:' / 'Current City: ...' text format"
    )


def _literal_plan(text: str) -> Any:
    """The first JSON/Python-literal list (or {"plan": [...]}) found in ``text``, or ``None``.

    Bounded: at most :data:`_MAX_CANDIDATES` start brackets; a Python span is parsed once (its
    nested lists are then searched in the syntax tree, not re-parsed) and all spans together are at
    most :data:`_PARSE_BUDGET` times the text.
    """
    decoder = json.JSONDecoder()
    starts = [m.start() for m in re.finditer(r"[\[{]", text)][:_MAX_CANDIDATES]
    matching = _matching_brackets(text)
    budget = _PARSE_BUDGET * len(text)
    searched_until = -1
    for start in starts:
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            if start < searched_until:
                continue  # inside a span whose syntax tree was already searched
            for end in _candidate_ends(text, start, matching):
                if end - start > budget:
                    continue
                budget -= end - start
                tree = _python_tree(text[start:end])
                if tree is not None:
                    searched_until = end
                    value = _plan_in_tree(tree)
                    break
            else:
                value = None
        plan = _unwrap(value)
        if plan is not None:
            return plan
    return None


def _matching_brackets(text: str) -> dict[int, int]:
    """Opening bracket index -> index just past its closing bracket (one pass; strings not skipped)."""
    stack: list[int] = []
    matching = {}
    for match in re.finditer(r"[\[\]{}]", text):
        char, index = match.group(), match.start()
        if char in "[{":
            stack.append(index)
        elif stack and text[stack[-1]] == _PAIRS[char]:
            matching[stack.pop()] = index + 1
    return matching


def _candidate_ends(text: str, start: int, matching: dict[int, int]) -> list[int]:
    """The end of ``start``'s matching bracket, then the last few closers of its kind (brackets in strings)."""
    closer = "]" if text[start] == "[" else "}"
    ends = [matching[start]] if start in matching else []
    position = len(text)
    while len(ends) < 1 + _FALLBACK_ENDS:
        position = text.rfind(closer, start + 1, position)
        if position < 0:
            break
        if position + 1 not in ends:
            ends.append(position + 1)
    return ends


def _python_tree(source: str) -> ast.expr | None:
    try:
        return ast.parse(source, mode="eval").body
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None


def _plan_in_tree(tree: ast.expr) -> Any:
    """The first (outermost) literal list in ``tree`` that is a plan, read with ``literal_eval``."""
    for node in ast.walk(tree):
        if not _may_be_plan(node):
            continue
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            continue
        if _unwrap(value) is not None:
            return value
    return None


def _may_be_plan(node: ast.AST) -> bool:
    """A list holding a dict with a plan key, or a dict with a ``"plan"`` key (checked before reading)."""
    if isinstance(node, ast.Dict):
        return any(isinstance(key, ast.Constant) and key.value == "plan" for key in node.keys)
    if isinstance(node, ast.List):
        return any(
            isinstance(element, ast.Dict)
            and any(isinstance(key, ast.Constant) and key.value in PLAN_KEYS for key in element.keys)
            for element in node.elts
        )
    return False


def _unwrap(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("plan"), list):
        value = value["plan"]
    if isinstance(value, list) and any(isinstance(day, dict) and any(key in day for key in PLAN_KEYS) for day in value):
        return value
    return None


def _text_plan(text: str) -> list[dict[str, Any]]:
    days: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        header = _DAY_HEADER.fullmatch(line)
        if header:
            days.append({"days": int(header.group(1))})
            continue
        field = _FIELD_LINE.match(line) if days else None
        if field:
            days[-1][_TEXT_FIELDS[field.group(1).lower()]] = field.group(2).strip().strip("*").strip()
    return [day for day in days if len(day) > 1]


def _validate(plan: Any) -> list[dict[str, Any]]:
    if not isinstance(plan, list) or not plan:
        raise PlanFormatError("the plan must be a non-empty list of day objects")
    if len(plan) > MAX_PLAN_DAYS:
        raise PlanFormatError(f"the plan has {len(plan)} days; at most {MAX_PLAN_DAYS} are read")
    for index, day in enumerate(plan):
        if not isinstance(day, dict):
            raise PlanFormatError(f"day {index + 1} of the plan is a {type(day).__name__}, not an object")
    return plan
