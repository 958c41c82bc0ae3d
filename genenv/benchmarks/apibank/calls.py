"""API-Bank call text and argument coercion.

API-Bank models write calls as ``[ApiName(key1='value1', key2='value2')]``. The official
evaluator (``api_call_extraction.parse_api_call``) finds the first ``[Name(...)]`` in the
text and reads parameters with a three-branch regex, so every value arrives as a string
(lists keep their source text). ``ToolManager.api_call`` then coerces each value to the
type declared in the API spec. This module reproduces both steps without ``eval``:

* :func:`parse_api_request` - text -> ``(name, {param: str})`` with the upstream regexes.
* :func:`format_api_request` - the inverse, used to render dialogue history.
* :func:`coerce_arguments` - ToolManager's coercion, extended to typed JSON values (the
  genenv env parser may hand over ``{"name": ..., "arguments": {...}}`` with real ints,
  bools and lists). Differences from ToolManager, all in the direction of accepting what
  the recorded dialogues accepted:

  - ``list`` / ``list(str)`` / ``dict`` given as text are parsed with ``json.loads`` or
    ``ast.literal_eval`` (a literal parser, never ``eval``). Upstream passes the raw text
    through at scoring time, but the dialogue data was recorded with parsed lists (its
    ``param_dict`` holds the text and ``result.input`` the parsed list), so parsing is
    what reproduces the gold results.
  - ``int``/``float`` text may carry a leading ``-`` and surrounding spaces; ``bool`` text is
    compared case-insensitively with ``'true'`` (upstream: ``value == 'True'``).

  The two text deviations above (lists, numbers) are switchable (``list_arguments``,
  ``lenient_numbers``) and off in the ``official`` scoring mode (:mod:`.scoring`).
  - numbers given to a ``str`` parameter are turned into their text (JSON callers often
    send ``{"appointment_id": 34567890}``); dicts/lists given to ``str`` are rejected.
"""

from __future__ import annotations

import ast
import copy
import json
import re
from typing import Any

from genenv.toolcalls import parse_apibank_params

#: Longest text we try to interpret as a literal; longer list/dict text is rejected.
MAX_LITERAL_CHARS = 100_000
#: Longest string argument accepted (no API-Bank value comes near it; bounds the work a
#: garbage call can cause, e.g. tokenising a megabyte of search keywords).
MAX_STRING_CHARS = 20_000


class ArgumentError(Exception):
    """A call's arguments do not fit the API: ``kind`` is the StepResult error kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return repr(value) if isinstance(value, (list, dict, tuple)) else str(value)


def format_api_request(name: str, params: dict[str, Any] | None) -> str:
    """Render ``[Name(k='v', ...)]`` the way the test-data prompts show API calls."""
    inner = ", ".join(f"{k}='{_value_text(v)}'" for k, v in (params or {}).items())
    return f"[{name}({inner})]"


def format_value(value: Any) -> str:
    """One argument as the API-Bank prompts write it: text, numbers and bools in single quotes, lists as their
    literal. Upstream's regex ends a quoted value at its first quote character of either kind, so no quoting
    carries a value that holds one."""
    if isinstance(value, (list, tuple, dict)):
        return repr(value)
    return f"'{value}'"


def split_camel_case(text: str) -> str:
    """``'QueryMeeting'`` -> ``'Query Meeting'`` (lv3_evaluator.split_by_uppercase)."""
    return "".join(" " + c if c.isupper() else c for c in text).strip()


# -- coercion ----------------------------------------------------------------------------

_INT_RE = re.compile(r"-?\d+")
_FLOAT_RE = re.compile(r"-?(\d+\.?\d*|\.\d+)")


def parse_literal(text: str) -> Any:
    """JSON or Python literal text -> value; raises ``ValueError`` when it is neither."""
    text = text.strip()
    if len(text) > MAX_LITERAL_CHARS:
        raise ValueError("literal too long")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
        raise ValueError(f"not a literal: {exc}") from None


def coerce_value(
    name: str, value: Any, type_name: str, *, list_arguments: bool = True, lenient_numbers: bool = True
) -> Any:
    """Coerce one argument to the API-Bank declared type; raises ArgumentError('wrong_type').

    ``list_arguments=False``: list text is passed on as text, as ``ToolManager.api_call`` does;
    ``lenient_numbers=False``: number and bool text are read exactly as it reads them (``isdigit``,
    ``== 'True'``). See :data:`genenv.benchmarks.apibank.scoring.DEVIATIONS`.
    """
    t = (type_name or "str").strip()
    if isinstance(value, str) and len(value) > MAX_STRING_CHARS and not t.startswith(("list", "dict", "json")):
        raise ArgumentError(
            "wrong_type", f"parameter {name!r} is too long ({len(value)} characters; limit {MAX_STRING_CHARS})"
        )
    if isinstance(value, str) and not lenient_numbers and t in ("int", "float", "bool"):
        return _upstream_text_value(value, t)
    if isinstance(value, str) and not list_arguments and t.startswith("list"):
        return value
    if t == "int":
        if isinstance(value, bool):
            raise ArgumentError("wrong_type", f"parameter {name!r} must be an int")
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and _INT_RE.fullmatch(value.strip()):
            return int(value.strip())
        raise ArgumentError("wrong_type", f"invalid parameter type. parameter: {shorten(value)}")
    if t == "float":
        if isinstance(value, bool):
            raise ArgumentError("wrong_type", f"parameter {name!r} must be a number")
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str) and _FLOAT_RE.fullmatch(value.strip()):
            return float(value.strip())
        raise ArgumentError("wrong_type", f"invalid parameter type. parameter: {shorten(value)}")
    if t == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            return value.strip().lower() == "true"
        if isinstance(value, int):
            return bool(value)
        raise ArgumentError("wrong_type", f"parameter {name!r} must be a bool")
    if t in ("list", "list(str)", "dict", "json") or t.startswith("list"):
        want = dict if t in ("dict", "json") else list
        if isinstance(value, str):
            try:
                value = parse_literal(value)
            except ValueError:
                raise ArgumentError("wrong_type", f"parameter {name!r} must be a {want.__name__} literal") from None
        if isinstance(value, tuple):
            value = list(value)
        if t == "json" and isinstance(value, (list, dict)):
            return value
        if not isinstance(value, want):
            raise ArgumentError("wrong_type", f"parameter {name!r} must be a {want.__name__}")
        if t == "list(str)" and not all(isinstance(v, str) for v in value):
            value = [v if isinstance(v, str) else _value_text(v) for v in value]
        return value
    # str (and anything undeclared)
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float)):
        return str(value)
    raise ArgumentError("wrong_type", f"parameter {name!r} must be a string")


def _upstream_text_value(value: str, type_name: str) -> Any:
    """``ToolManager.api_call`` on text given to an int, float or bool parameter."""
    if type_name == "bool":
        return value == "True"
    digits = value if type_name == "int" else value.replace(".", "", 1)
    if not digits.isdigit():
        raise ArgumentError("wrong_type", f"invalid parameter type. parameter: {shorten(value)}")
    try:  # isdigit() accepts digits int() refuses ('²'): upstream raises ValueError there
        return int(value) if type_name == "int" else float(value)
    except ValueError:
        raise ArgumentError("wrong_type", f"invalid parameter type. parameter: {shorten(value)}") from None


def coerce_arguments(
    input_parameters: dict[str, dict[str, Any]],
    arguments: dict[str, Any],
    *,
    list_arguments: bool = True,
    lenient_numbers: bool = True,
) -> dict[str, Any]:
    """ToolManager.api_call's parameter processing (see module docstring for extensions, and
    :func:`coerce_value` for the two switches).

    Raises :class:`ArgumentError` with kind ``unknown_argument`` (upstream AssertionError
    'invalid parameter name') or ``wrong_type``.
    """
    out: dict[str, Any] = {}
    for key, value in arguments.items():
        if not isinstance(key, str) or key not in input_parameters:
            raise ArgumentError("unknown_argument", f"invalid parameter name. parameter: {shorten(key)}")
        out[key] = coerce_value(
            key,
            value,
            str(input_parameters[key].get("type", "str")),
            list_arguments=list_arguments,
            lenient_numbers=lenient_numbers,
        )
    return out


def normalize_arguments(arguments: Any) -> dict[str, Any]:
    """Accept a dict, JSON-object text or ``k='v', ...`` text; raise ArgumentError otherwise."""
    if isinstance(arguments, dict):
        return dict(arguments)
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        text = arguments.strip()
        if not text:
            return {}
        if len(text) <= MAX_LITERAL_CHARS and text.startswith("{"):
            try:
                obj = json.loads(text)
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                return obj
        parsed = parse_apibank_params(text[:MAX_LITERAL_CHARS])
        if parsed:
            return parsed
    raise ArgumentError("wrong_type", "arguments must be an object of parameter names to values")


def shorten(value: Any, limit: int = 80) -> str:
    """``value`` (its ``repr`` unless text) cut to ``limit`` characters, ``...`` marking a cut."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


_TYPE_MAP = {
    "str": {"type": "string"},
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "list": {"type": "array", "items": {}},
    "list(str)": {"type": "array", "items": {"type": "string"}},
    "dict": {"type": "object"},
    "json": {"type": "object"},
}


def json_schema_type(type_name: str) -> dict[str, Any]:
    """API-Bank parameter type -> JSON-schema fragment."""
    return copy.deepcopy(_TYPE_MAP.get((type_name or "str").strip(), {"type": "string"}))
