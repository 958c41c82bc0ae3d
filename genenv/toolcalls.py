"""Tool calls: :class:`ToolCall`, and tool-call text read into them without ever evaluating model text.

Accepted formats, tried in this order:

1. ChatML / Qwen / TRL: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (one or more;
   an unclosed last tag is accepted, as generation often stops at the end-of-turn token);
2. bare JSON: ``{"name": ..., "arguments": {...}}`` or a list of such objects, anywhere in the text;
3. Python-call lists as API-Bank and BFCL prompts ask for: ``[ApiName(key='value', n=3)]``,
   ``[math.hypot(x=3, y=4), f(a=[1, 2])]``; parsed with :mod:`ast` and
   :func:`ast.literal_eval` (literals only). Text that :mod:`ast` rejects falls back to the
   official API-Bank regex, which yields string values exactly as API-Bank's ToolManager sees them,
   and then to a call list whose argument values are source code (BFCL's Java and JavaScript
   answers: ``[Store.save(map=new HashMap<String, Object>(), n=5L)]``): each value is kept as its
   source text (a single quoted string literal without its quotes).

Text with none of these is a plain answer (an empty list). Text that *tries* to be a tool call but
is malformed raises :class:`ToolCallParseError` with a machine-readable ``kind``.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
# Possessive whitespace: the same matches as ``[\[{]\s*\{?\s*"name"\s*:`` without its quadratic backtracking.
_JSON_CALL_START = re.compile(r'[\[{]\s*+(?:\{\s*+)?"(?:name|function)"\s*:')
_PY_CALL_START = re.compile(r"\[\s*[A-Za-z_][\w.]*\s*\(")
# API-Bank's own extraction (evaluator + ToolManager): the first "[ApiName(...)]", then key=value pairs.
# Upstream's call pattern is r"\[(\w+)\((.*)\)\]" (searched, so the first "[Name(" of a line whose last ")]"
# follows it); _APIBANK_CALL_OPEN finds the same starts in linear time. Upstream's parameter pattern begins
# with (\w+), which can only match a whole word, so the (?<!\w) guard changes no match and stops the
# quadratic retries inside long words.
_APIBANK_CALL_OPEN = re.compile(r"\[(\w++)\(")
_APIBANK_PARAM = re.compile(r"""(?<!\w)(?:(\w+)\s*=\s*['"](.+?)['"]|(\w+)\s*=\s*(\[.*\])|(\w+)\s*=\s*(\w+))""")
_MAX_PY_CANDIDATES = 16


@dataclass(frozen=True)
class ToolCall:
    """One tool invocation parsed from model text."""

    name: str
    arguments: dict[str, Any]
    raw: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arguments": self.arguments}


class ToolCallParseError(ValueError):
    """Text that tries to be a tool call but cannot be read as one."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _NonLiteralArgument(ToolCallParseError):
    """A Python-syntax call whose argument names something (``rootNode``, ``true``, ``{"stop": true}``): how
    Java/JavaScript calls pass variables and constants; such calls are read with their values as source text."""


def _is_reference(node: ast.expr | None) -> bool:
    """Names, constants and containers of them (``{"stop": true}``, ``[a, b]``), nothing that computes."""
    if isinstance(node, ast.Attribute):
        return _is_reference(node.value)
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_is_reference(item) for item in node.elts)
    if isinstance(node, ast.Dict):
        return all(key is not None and _is_reference(key) for key in node.keys) and all(
            _is_reference(value) for value in node.values
        )
    return False


def parse_tool_calls(text: str) -> list[ToolCall]:
    """All tool calls in ``text``; ``[]`` for a plain answer; raises :class:`ToolCallParseError`."""
    if not isinstance(text, str):
        raise ToolCallParseError("bad_action_type", f"expected text, got {type(text).__name__}")
    if "<tool_call>" in text:
        return _parse_tagged(text)
    json_start = _JSON_CALL_START.search(text)
    if json_start:
        return _parse_json_at(text, json_start.start())
    py_start = _PY_CALL_START.search(text)
    if py_start:
        return _parse_python_calls(text, py_start.start())
    return []


def _parse_tagged(text: str) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for match in _TAGGED.finditer(text):
        body = _strip_code_fence(match.group(1).strip())
        if not body:
            raise ToolCallParseError("malformed_json", "empty <tool_call></tool_call> block")
        try:
            value = json.loads(body)
        except (ValueError, RecursionError) as error:
            raise ToolCallParseError("malformed_json", f"the JSON inside <tool_call> is invalid: {error}") from None
        calls.extend(_calls_from_json(value, match.group(0)))
    return calls


def _parse_json_at(text: str, start: int) -> list[ToolCall]:
    try:
        value, end = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError) as error:
        raise ToolCallParseError("malformed_json", f"the tool-call JSON is invalid: {error}") from None
    return _calls_from_json(value, text[start:end])


def _calls_from_json(value: Any, raw: str) -> list[ToolCall]:
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ToolCallParseError("malformed_call", "an empty list of tool calls")
    return [_call_from_object(item, raw) for item in items]


def _call_from_object(obj: Any, raw: str) -> ToolCall:
    if not isinstance(obj, dict):
        raise ToolCallParseError("malformed_call", f"a tool call must be a JSON object, got {obj!r:.80}")
    if isinstance(obj.get("function"), dict):  # OpenAI style {"type": "function", "function": {...}}
        obj = obj["function"]
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ToolCallParseError("malformed_call", 'a tool call needs a non-empty string "name"')
    arguments = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(arguments, str):  # OpenAI encodes arguments as a JSON string
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):
            raise ToolCallParseError("malformed_json", f'"arguments" of {name} is not valid JSON') from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolCallParseError("malformed_call", f'"arguments" of {name} must be an object')
    return ToolCall(name=name.strip(), arguments=arguments, raw=raw)


def _parse_python_calls(text: str, start: int) -> list[ToolCall]:
    """Parse ``[f(a=1), g(b='x')]`` starting at ``start``; try each closing ``)]`` from the last.

    The longest span that Python reads as a list of calls wins; a longer span that Python reads as
    something else (``[f(a=1)] and then [g()]`` is a subscript) is passed over, so the leading call
    list is kept and the text after it ignored. Only text that is not Python at all falls back to
    API-Bank's regex; a call list that breaks the call rules is an error (positional arguments),
    except non-literal values written the way Java/JavaScript calls are (``[f(node=rootNode,
    flag=true)]``), which are kept as source text.
    """
    ends = [m.end() for m in re.finditer(r"\)\s*\]", text[start:])]
    for end in reversed(ends[:_MAX_PY_CANDIDATES]):
        source = text[start : start + end].strip()
        try:
            tree = ast.parse(source, mode="eval")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if not _is_call_list(tree.body):
            continue
        try:
            return _calls_from_python(tree, source)
        except _NonLiteralArgument:
            calls = _parse_source_calls(text, start)
            if calls:
                return calls
            raise
    legacy = parse_apibank_call(text)
    if legacy is not None:
        return [legacy]
    calls = _parse_source_calls(text, start)
    if calls:
        return calls
    raise ToolCallParseError("malformed_call", "cannot read the call list: expected [f(key=value, ...)]")


def _is_call_list(node: ast.expr) -> bool:
    """``[f(...), ...]``, ``(f(...), ...)`` or ``f(...)``: the shapes a call list takes in Python."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(isinstance(item, ast.Call) for item in node.elts)
    return isinstance(node, ast.Call)


def _calls_from_python(tree: ast.Expression, source: str) -> list[ToolCall]:
    nodes = tree.body.elts if isinstance(tree.body, (ast.List, ast.Tuple)) else [tree.body]
    if not nodes:
        raise ToolCallParseError("malformed_call", "an empty list of tool calls")
    calls, segment = [], _Segments(source)
    for node in nodes:
        if not isinstance(node, ast.Call):
            raise ToolCallParseError("malformed_call", "each list element must be a call f(key=value)")
        name = _dotted_name(node.func)
        if node.args:
            raise ToolCallParseError("malformed_call", f"{name}: use key=value arguments, not positional ones")
        arguments: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise ToolCallParseError("malformed_call", f"{name}: **kwargs is not allowed")
            try:
                arguments[keyword.arg] = ast.literal_eval(keyword.value)
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                error = _NonLiteralArgument if _is_reference(keyword.value) else ToolCallParseError
                raise error("malformed_call", f"{name}: argument {keyword.arg!r} is not a literal value") from None
        calls.append(ToolCall(name=name, arguments=arguments, raw=segment(node)))
    return calls


class _Segments:
    """``ast.get_source_segment`` in constant time per node (it re-splits the whole source on every call)."""

    def __init__(self, source: str) -> None:
        self.encoded = source.encode()  # AST column offsets count UTF-8 bytes
        self.line_starts = [0] + [match.end() for match in re.finditer(b"\n", self.encoded)]

    def __call__(self, node: ast.expr) -> str:
        if node.end_lineno is None or node.end_col_offset is None:
            return ""
        begin = self.line_starts[node.lineno - 1] + node.col_offset
        end = self.line_starts[node.end_lineno - 1] + node.end_col_offset
        return self.encoded[begin:end].decode(errors="replace")


_SOURCE_CALL_NAME = re.compile(r"\s*([A-Za-z_$][\w.$]*)\s*\(")
_SOURCE_ARG = re.compile(r"\s*([A-Za-z_$][\w$]*)\s*=(?!=)(.*)", re.DOTALL)
_CLOSERS = {"(": ")", "[": "]", "{": "}", "<": ">"}


def _parse_source_calls(text: str, start: int) -> list[ToolCall]:
    """``[a.b(k=<code>, ...), ...]`` with values kept as source text; ``[]`` if the text is not one."""
    position, calls = start + 1, []
    while True:
        name = _SOURCE_CALL_NAME.match(text, position)
        if name is None:
            return []
        arguments: dict[str, Any] = {}
        pieces, position = _split_arguments(text, name.end())
        if pieces is None:
            return []
        for piece in pieces:
            argument = _SOURCE_ARG.fullmatch(piece)
            if argument is None:
                return []
            arguments[argument.group(1)] = _unquote(argument.group(2).strip())
        calls.append(ToolCall(name=name.group(1), arguments=arguments, raw=text[name.start(1) : position]))
        rest = text[position:].lstrip()
        if rest.startswith("]"):
            return calls
        if not rest.startswith(","):
            return []
        position = len(text) - len(rest) + 1


def _split_arguments(text: str, position: int) -> tuple[list[str] | None, int]:
    """The top-level comma-separated pieces up to the ``)`` closing the call, and the index after it."""
    stack: list[str] = []
    quote = ""
    pieces, begin = [], position
    index = position
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'`":
            quote = char
        elif char in "([{" or (char == "<" and index > 0 and (text[index - 1].isalnum() or text[index - 1] == "_")):
            stack.append(_CLOSERS[char])
        elif stack and char == stack[-1]:
            stack.pop()
        elif char in ")]}":
            if char != ")" or stack:
                return None, index
            piece = text[begin:index]
            if piece.strip() or pieces:
                pieces.append(piece)
            return pieces, index + 1
        elif char == "," and not stack:
            pieces.append(text[begin:index])
            begin = index + 1
        index += 1
    return None, index


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`" and value[0] not in value[1:-1]:
        return value[1:-1]
    return value


def _dotted_name(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise ToolCallParseError("malformed_call", "a call must name a function, e.g. f(...) or a.b(...)")
    parts.append(node.id)
    return ".".join(reversed(parts))


def parse_apibank_call(text: str) -> ToolCall | None:
    """API-Bank's official extraction: the first ``[Name(...)]`` with string-valued parameters.

    This is exactly what API-Bank's evaluator and ToolManager see (values stay strings; the
    API's declared types are applied later); ``None`` when the text holds no such call.
    """
    line_end = -1
    for opening in _APIBANK_CALL_OPEN.finditer(text):
        if opening.start() > line_end:  # a new line: where it ends and where its last ")]" is
            line_start = text.rfind("\n", 0, opening.start()) + 1
            line_end = text.find("\n", opening.start())
            line_end = len(text) if line_end < 0 else line_end
            closing = text.rfind(")]", line_start, line_end)
        if closing >= opening.end():
            raw = text[opening.start() : closing + 2]
            arguments = parse_apibank_params(text[opening.end() : closing])
            return ToolCall(name=opening.group(1), arguments=arguments, raw=raw)
    return None


def parse_apibank_params(params: str) -> dict[str, str]:
    """``k='v', k2=[...], k3=word`` -> ``{k: 'v', ...}`` with API-Bank's parameter regex."""
    arguments: dict[str, str] = {}
    for groups in _APIBANK_PARAM.findall(params):
        key = groups[0] or groups[2] or groups[4]
        arguments[key] = groups[1] or groups[3] or groups[5]
    return arguments


def _strip_code_fence(body: str) -> str:
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    return body.strip()
