"""Model text -> the calls BFCL's evaluation sees, decoded the way ``bfcl_eval`` decodes them.

Two output formats are accepted:

* ``<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`` blocks (Qwen/Hermes style; the
  newlines are part of the format), decoded like ``bfcl_eval``'s Qwen function-calling handler
  (``QwenFCHandler``): blocks whose JSON does not load are skipped, a block without ``name`` and
  ``arguments`` (an object) fails the decoding; a text with the tag but no such block holds no call.
* the prompting format BFCL's system prompt asks for, ``[func(a=1, b='x'), g(c=[1, 2])]``, decoded
  like ``default_decode_ast_prompting``: backticks, newlines and spaces are stripped from both ends,
  the text is wrapped in ``[...]`` when needed and the *whole* text must parse. Python categories are
  read with :mod:`ast` (positional arguments are ignored, names become strings, calls without keyword
  arguments become their source text, ...: every quirk of ``resolve_ast_by_type`` is reproduced);
  Java and JavaScript categories use ``bfcl_eval``'s own tree-sitter parsers.

Nothing is ever evaluated. The one place where the official decoder calls ``eval`` (a binary operation
such as ``2*3``, ``'a'+'b'`` or ``{'a': 1} | {'b': 2}`` in an argument) is computed here by walking the
AST, for operands built of literals (numbers, text, lists, tuples, dicts, sets) only, and only when
the result's size, predicted before computing, stays within :data:`MAX_INT_BITS` and
:data:`MAX_LITERAL_SIZE`. Two documented deviations follow: an operation holding a name or a call
(``int('10') + 0``), which ``eval`` might compute, fails to decode here, and so does a literal
operation beyond the bound (``10 ** 700``, ``'ab' * 60000``).

:func:`contains_call` (relevance and irrelevance) goes further than the official check: an answer
with the shape of a call is a call even when its arguments do not decode, so that
``[f(x=len('abc') + 1)]`` cannot earn the irrelevance reward.

:func:`decode_execute` gives the multi-turn form: per call the function name and the keyword
arguments exactly as ``eval`` of the official ``decoded_output_to_execution_list`` string would pass
them, or the reason that string would not run.
"""

from __future__ import annotations

import ast
import json
import keyword
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any

from .official import java_parser, js_parser

TOOL_CALL_TAG = "<tool_call>"
#: a call list as text: ``[name(`` ... ``)]``, whatever lies between (for texts Python cannot parse)
_CALL_TEXT = re.compile(r"\[\s*[A-Za-z_][\w.]*\(.*\)\s*\]", re.DOTALL)
_TAGGED = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.DOTALL)
#: largest integer (in bits) a computed operation may produce (10 ** 308 fits, 10 ** 700 does not)
MAX_INT_BITS = 1024
#: largest computed text, list, tuple, dict or set: characters plus elements, counted deep
MAX_LITERAL_SIZE = 100_000


class DecodeError(ValueError):
    """The text is not a decodable function-call output (the official decoder would raise)."""


# -- single-turn (AST) decoding --------------------------------------------------------------------


def decode_ast(text: str, language: str = "python") -> Any:
    """The official ``decode_ast`` of ``text``: usually ``[{name: {param: value}}, ...]``.

    The Java/JavaScript parsers may return other shapes (``{}``, ``None``) that the official runner
    then rejects with :func:`is_function_calling_format`. Raises :class:`DecodeError` exactly when
    the official decoder raises.
    """
    if not isinstance(text, str):
        raise DecodeError(f"model output must be text, got {type(text).__name__}")
    if TOOL_CALL_TAG in text:
        return [{name: dict(arguments)} for name, arguments in _tagged_calls(text)]
    wrapped = _wrap(text)
    try:
        if language == "java":
            return java_parser().parse_java_function_call(wrapped[1:-1])
        if language == "javascript":
            return js_parser().parse_javascript_function_call(wrapped[1:-1])
        return _python_calls(wrapped)
    except DecodeError:
        raise
    except Exception as error:  # noqa: BLE001 - the official runner turns any decoder failure into "no call"
        raise DecodeError(f"{type(error).__name__}: {error}") from None


def is_function_calling_format(decoded: Any) -> bool:
    """``bfcl_eval.utils.is_function_calling_format_output``: a list of ``{name: {params}}``."""
    if type(decoded) is not list:
        return False
    return all(type(item) is dict and len(item) == 1 and type(next(iter(item.values()))) is dict for item in decoded)


def is_empty_output(decoded: Any) -> bool:
    """``bfcl_eval.utils.is_empty_output``: no usable call (``[]``, ``[{}]`` or not call-shaped)."""
    if not is_function_calling_format(decoded):
        return True
    return len(decoded) == 0 or (len(decoded) == 1 and len(decoded[0]) == 0)


def contains_call(text: str) -> bool:
    """Whether ``text`` holds a function call (relevance and irrelevance scoring).

    The official check: the answer decodes to a non-empty call list. In addition, an answer with the
    shape of a call counts as one even when its arguments cannot be decoded (a deliberate deviation
    that closes a reward hack): a Python text that parses as a call or a list of calls, a text
    Python cannot parse that reads ``[name(...)]`` (too deep, broken arguments), or a ``<tool_call>``
    block holding an object with a ``"name"`` (or, when its JSON does not load, a ``"name":`` key).
    """
    try:
        if not is_empty_output(decode_ast(text, "python")):
            return True
    except DecodeError:
        pass
    return has_call_shape(text)


def has_call_shape(text: str) -> bool:
    """Whether ``text`` is shaped like a call answer, whatever its arguments hold (nothing decoded)."""
    if not isinstance(text, str):
        return False
    if TOOL_CALL_TAG in text:
        for body in _TAGGED.findall(text):
            try:
                item = json.loads(body)
            except (ValueError, RecursionError):
                if re.search(r'"name"\s*:', body):
                    return True
                continue
            if type(item) is dict and "name" in item:
                return True
        return False
    source = _wrap(text).strip().strip("'")
    try:
        body = ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _CALL_TEXT.fullmatch(source) is not None  # unparsable (too deep, broken arguments) but call-shaped
    if isinstance(body, ast.Call):
        return True
    elements = body.elts if isinstance(body, (ast.List, ast.Tuple, ast.Set)) else []
    return bool(elements) and all(isinstance(e, ast.Call) for e in elements)


def _wrap(text: str) -> str:
    text = text.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    return text


def _tagged_items(text: str) -> list[dict[str, Any]]:
    """The JSON objects of the ``<tool_call>`` blocks; blocks that do not load are skipped."""
    items = []
    for body in _TAGGED.findall(text):
        try:
            item = json.loads(body)
        except (ValueError, RecursionError):
            continue
        if type(item) is not dict:
            raise DecodeError("a <tool_call> block must hold a JSON object")
        if "name" not in item or "arguments" not in item:
            raise DecodeError('a <tool_call> object needs "name" and "arguments"')
        if isinstance(item["name"], (dict, list)):
            raise DecodeError('"name" must be a string')
        items.append(item)
    return items


def _tagged_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for item in _tagged_items(text):
        if not isinstance(item["arguments"], dict):
            raise DecodeError('"arguments" must be a JSON object')
        calls.append((item["name"], item["arguments"]))
    return calls


def _python_calls(wrapped: str) -> list[dict[str, dict[str, Any]]]:
    source = wrapped.strip().strip("'")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        raise DecodeError(f"not a Python call list: {error}") from None
    body = tree.body
    if isinstance(body, ast.Call):
        return [_resolve_call(body)]
    if not isinstance(body, (ast.List, ast.Tuple, ast.Set)):
        raise DecodeError("expected a list of calls")
    calls = []
    for element in body.elts:
        if not isinstance(element, ast.Call):
            raise DecodeError("every element must be a call")
        calls.append(_resolve_call(element))
    return calls


def _resolve_call(node: ast.Call) -> dict[str, dict[str, Any]]:
    parts = []
    func = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    arguments: dict[Any, Any] = {}
    for argument in node.keywords:  # positional arguments are ignored, as upstream does
        arguments[argument.arg] = _resolve_value(argument.value)
    return {".".join(reversed(parts)): arguments}


def _resolve_value(node: Any) -> Any:
    """``resolve_ast_by_type``, node type by node type, in the official order."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):  # upstream negates whatever the operator (a quirk kept as is)
        operand = node.operand
        if not isinstance(operand, ast.Constant):
            raise DecodeError("unary operator on a non-literal")
        return -operand.value
    if isinstance(node, ast.List):
        return [_resolve_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        return {_resolve_value(k): _resolve_value(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.BinOp):
        return _literal_arithmetic(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _resolve_call(node) if node.keywords else ast.unparse(node)
    if isinstance(node, ast.Tuple):
        return tuple(_resolve_value(v) for v in node.elts)
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    raise DecodeError(f"unsupported AST type: {type(node).__name__}")


_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_,
}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}


def _literal_arithmetic(node: ast.expr) -> Any:
    """What ``eval`` gives for an operation on literals, computed by walking the AST, or :class:`DecodeError`.

    Every result's size is predicted from its operands before it is computed, so that no text of
    ``max_action_chars`` can make this slow or large (``((3**512)**512)**512``, ``[[0]*100000]*100000``).
    """
    value, _ = _bounded_literal(node)
    return value


def _bounded_literal(node: ast.expr) -> tuple[Any, int]:
    """``(value, size)`` of a literal expression; size is counted by :func:`_size_of_constant` and deep."""
    if isinstance(node, ast.Constant):
        return node.value, _size_of_constant(node.value)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_bounded_literal(v) for v in node.elts]
        size = _checked_size(1 + sum(s for _, s in items))
        values = [v for v, _ in items]
        if isinstance(node, ast.List):
            return values, size
        if isinstance(node, ast.Tuple):
            return tuple(values), size
        return _computed(node, set, values), size
    if isinstance(node, ast.Dict):
        return _bounded_dict(node)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        operand, size = _bounded_literal(node.operand)
        return _computed(node, _UNARY[type(node.op)], operand), size
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        (left, left_size), (right, right_size) = _bounded_literal(node.left), _bounded_literal(node.right)
        size = _predicted_size(node.op, left, left_size, right, right_size)
        return _computed(node, _BINARY[type(node.op)], left, right), size
    raise DecodeError(f"only operations on literals are computed, not {type(node).__name__} (never evaluated)")


def _bounded_dict(node: ast.Dict) -> tuple[dict[Any, Any], int]:
    result: dict[Any, Any] = {}
    size = 1
    for key_node, value_node in zip(node.keys, node.values):
        value, value_size = _bounded_literal(value_node)
        if key_node is None:  # {**other}
            if not isinstance(value, dict):
                raise DecodeError(f"cannot compute {ast.unparse(node)}: ** needs a mapping")
            result.update(value)
        else:
            key, key_size = _bounded_literal(key_node)
            _computed(node, result.__setitem__, key, value)
            value_size += key_size
        size = _checked_size(size + value_size)
    return result, size


def _computed(node: ast.expr, function: Any, *operands: Any) -> Any:
    try:
        return function(*operands)
    except (ArithmeticError, TypeError, ValueError) as error:
        raise DecodeError(f"cannot compute {ast.unparse(node)}: {error}") from None


def _size_of_constant(value: Any) -> int:
    """Characters of text, decimal digits of an integer (upper bound), 1 for anything else."""
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, int):
        return value.bit_length() // 3 + 1
    return 1


def _checked_size(size: int) -> int:
    if size > MAX_LITERAL_SIZE:
        raise DecodeError(f"the computed value would exceed {MAX_LITERAL_SIZE} elements and characters")
    return size


_FORMAT_FIELD = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _predicted_size(op: ast.operator, left: Any, left_size: int, right: Any, right_size: int) -> int:
    """The size of ``left <op> right`` before it is computed; :class:`DecodeError` beyond the bounds."""
    if _is_int(left) and _is_int(right):
        bits = max(left.bit_length(), right.bit_length()) + 1
        if isinstance(op, ast.Mult):
            bits = left.bit_length() + right.bit_length()
        elif isinstance(op, ast.LShift):
            bits = left.bit_length() + max(right, 0)
        elif isinstance(op, ast.Pow) and right > 0 and abs(left) > 1:
            bits = math.ceil(right * math.log2(abs(left))) + 1
        if bits > MAX_INT_BITS:
            raise DecodeError(f"the computed integer would exceed {MAX_INT_BITS} bits")
        return bits // 3 + 1
    if isinstance(op, ast.Mult):
        for sequence, sequence_size, count in ((left, left_size, right), (right, right_size, left)):
            if isinstance(sequence, (str, bytes, list, tuple)) and _is_int(count):
                return _checked_size(sequence_size * max(count, 0))
    if isinstance(op, ast.Mod) and isinstance(left, (str, bytes)):
        return _checked_size(_formatted_size(left, right_size))
    return _checked_size(left_size + right_size)


def _formatted_size(template: str | bytes, arguments_size: int) -> int:
    """An upper bound on the size of ``template % arguments`` (each field may repeat all arguments)."""
    text = template.decode("latin-1") if isinstance(template, bytes) else template
    fields = _FORMAT_FIELD.findall(text)
    widths = [int(n) for field in fields for n in field if n.isdigit()]
    if any(n == "*" for field in fields for n in field):
        raise DecodeError("a '*' width in a computed format is not computed")
    if any(w > MAX_LITERAL_SIZE for w in widths):
        raise DecodeError(f"a format width beyond {MAX_LITERAL_SIZE} is not computed")
    return len(text) + len(fields) * (max(widths, default=0) + 10 * arguments_size + 10)


def _is_int(value: Any) -> bool:
    return isinstance(value, int)


# -- multi-turn (execution) decoding ---------------------------------------------------------------


@dataclass
class ExecCall:
    """One call as the official executor runs it: ``name(**arguments)``, or ``error`` if it cannot run."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def decode_execute(text: str) -> list[ExecCall]:
    """The official ``decode_execute`` of one model step; raises :class:`DecodeError` when it would."""
    if not isinstance(text, str):
        raise DecodeError(f"model output must be text, got {type(text).__name__}")
    if TOOL_CALL_TAG in text:
        calls = []
        for item in _tagged_items(text):
            arguments = item["arguments"]
            if isinstance(arguments, str):  # upstream json-loads string arguments here
                try:
                    arguments = json.loads(arguments)
                except (ValueError, RecursionError) as error:
                    raise DecodeError(f"arguments string is not JSON: {error}") from None
            if not isinstance(arguments, dict):
                raise DecodeError('"arguments" must be a JSON object')
            calls.append(_exec_call(str(item["name"]), arguments, rendered=False))
        return calls
    try:
        decoded = _python_calls(_wrap(text))
    except DecodeError:
        raise
    except Exception as error:  # noqa: BLE001 - any decoder failure means "no call in this step"
        raise DecodeError(f"{type(error).__name__}: {error}") from None
    calls = []
    for item in decoded:
        for name, arguments in item.items():
            _check_renderable(arguments)
            calls.append(_exec_call(name, arguments, rendered=True))
    return calls


def _check_renderable(arguments: dict[Any, Any]) -> None:
    """``parse_nested_value`` raises on an empty dict argument (it reads its first key as a call name)."""
    for value in arguments.values():
        _check_nested(value)


def _check_nested(value: Any) -> None:
    if isinstance(value, dict):
        if not value:
            raise DecodeError("an empty dict argument cannot be rendered (IndexError upstream)")
        if not all(isinstance(v, dict) for v in value.values()):
            for v in value.values():
                _check_nested(v)
        else:
            for v in next(iter(value.values())).values():
                _check_nested(v)


def _exec_call(name: str, arguments: dict[Any, Any], *, rendered: bool) -> ExecCall:
    """What ``eval`` of the official call string would receive, or why it would fail.

    ``rendered``: values were rendered by ``parse_nested_value`` (prompting format: a dict whose
    values are all dicts is a nested call) rather than by ``repr`` (function-calling format).
    """
    if any(not isinstance(k, str) or not k.isidentifier() or keyword.iskeyword(k) for k in arguments):
        return ExecCall(name, error="invalid syntax: a keyword argument needs a valid name")
    values = {}
    for key, value in arguments.items():
        try:
            values[key] = _executed_value(value) if rendered else _repr_value(value)
        except ValueError as error:
            return ExecCall(name, error=str(error))
    return ExecCall(name, values)


def _repr_value(value: Any) -> Any:
    _check_repr_roundtrip(value)
    return value


def _executed_value(value: Any) -> Any:
    """``eval(parse_nested_value(value))`` for the values the decoders produce."""
    if isinstance(value, dict):
        if value and all(isinstance(v, dict) for v in value.values()):
            raise ValueError("nested function calls as arguments are not executed")
        result = {}
        for key, item in value.items():
            text = str(key)
            if "'" in text or "\\" in text or "\n" in text:
                raise ValueError("invalid syntax: dict key not representable")
            result[text] = _executed_value(item)
        return result
    _check_repr_roundtrip(value)
    return value


def _check_repr_roundtrip(value: Any) -> None:
    """``eval(repr(value))`` gives ``value`` back, except for non-finite floats (``inf``, ``nan``)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"name {repr(value).lstrip('-')!r} is not defined")
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_repr_roundtrip(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_repr_roundtrip(key)
            _check_repr_roundtrip(item)
