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

The plan is read as the official evaluation reads it (``eval.py`` delivers any non-empty plan and
every check iterates ``range(min(days, len(plan)))``): only the first ``days`` entries are kept
and must be day objects; whatever follows them (``null``, a closing sentence, ``[]``, any number of
further entries) is ignored, neither checked nor copied. A list is taken as the plan when one of its
first ``days`` entries is a day object. Fewer entries than ``days`` are kept as given (the checks
then fail "Complete Information").

Anything else raises :class:`PlanFormatError` with the reason; the plan then counts as not
delivered.
"""

from __future__ import annotations

import ast
import json
import re
from itertools import islice
from typing import Any, TypeGuard

PLAN_KEYS = ("days", "current_city", "transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation")
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


def parse_plan(text: Any, days: int) -> list[dict[str, Any]]:
    """The first ``days`` day dicts of the plan in ``text`` (a query of ``days`` days); raises
    :class:`PlanFormatError` with the reason."""
    if isinstance(text, list):
        return _first_days(text, days)
    if not isinstance(text, str) or not text.strip():
        raise PlanFormatError("the answer is empty: no plan was given")
    value = _literal_plan(text, days)
    if value is not None:
        return _first_days(value, days)
    plan = _text_plan(text)
    if plan:
        return _first_days(plan, days)
    raise PlanFormatError(
        "no plan found: answer with a JSON list of day objects "
        f"({', '.join(PLAN_KEYS)}) or the 'Day 1:' / 'Current City: ...' text format"
    )


def _literal_plan(text: str, days: int) -> Any:
    """The first JSON/Python-literal list (or {"plan": [...]}) found in ``text``, or ``None``.

    Bounded: at most :data:`_MAX_CANDIDATES` start brackets; a Python span is parsed once (its
    nested lists are then searched in the syntax tree, not re-parsed) and all spans together are at
    most :data:`_PARSE_BUDGET` times the text.
    """
    decoder = json.JSONDecoder()
    starts = [m.start() for m in islice(re.finditer(r"[\[{]", text), _MAX_CANDIDATES)]
    matching: dict[int, int] | None = None
    budget = _PARSE_BUDGET * len(text)
    searched_until = -1
    for start in starts:
        try:
            value, _ = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            if start < searched_until:
                continue  # inside a span whose syntax tree was already searched
            if matching is None:
                matching = _matching_brackets(text)
            for end in _candidate_ends(text, start, matching):
                if end - start > budget:
                    continue
                budget -= end - start
                tree = _python_tree(text[start:end])
                if tree is not None:
                    searched_until = end
                    value = _plan_in_tree(tree, days)
                    break
            else:
                value = None
        plan = _unwrap(value, days)
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


def _plan_in_tree(tree: ast.expr, days: int) -> list[Any] | None:
    """The first ``days`` entries of the first (outermost) list in ``tree`` that is a plan, or of the ``"plan"``
    list of a dict, read with ``literal_eval``; later entries are neither read nor required to be literals."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            plans = [v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value == "plan"]
            node = plans[-1] if plans else node
        if not _may_be_plan(node, days):
            continue
        try:
            return [ast.literal_eval(element) for element in node.elts[:days]]
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            continue
    return None


def _may_be_plan(node: ast.AST, days: int) -> TypeGuard[ast.List]:
    """A list whose first ``days`` elements hold a dict with a plan key (checked before reading)."""
    return isinstance(node, ast.List) and any(
        isinstance(element, ast.Dict)
        and any(isinstance(key, ast.Constant) and key.value in PLAN_KEYS for key in element.keys)
        for element in node.elts[:days]
    )


def _unwrap(value: Any, days: int) -> Any:
    """``value`` (or its ``"plan"``) when it is a list with a day object among its first ``days`` entries."""
    if isinstance(value, dict) and isinstance(value.get("plan"), list):
        value = value["plan"]
    if isinstance(value, list) and any(
        isinstance(day, dict) and any(key in day for key in PLAN_KEYS) for day in value[:days]
    ):
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


def _first_days(plan: Any, days: int) -> list[dict[str, Any]]:
    """The first ``days`` entries of a non-empty list, each a day object; later entries are not looked at."""
    if not isinstance(plan, list) or not plan:
        raise PlanFormatError("the plan must be a non-empty list of day objects")
    read = plan[:days]
    for index, day in enumerate(read):
        if not isinstance(day, dict):
            raise PlanFormatError(f"day {index + 1} of the plan is a {type(day).__name__}, not an object")
    return read
