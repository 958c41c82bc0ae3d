"""Model outputs built from BFCL ground truth: the gold answer and perturbations of it.

Used to validate generated tasks (the gold answer must pass the checker), by the conformance tests
and by ``experiments/parity/bfcl_parity.py``, which feeds the same texts to genenv and to bfcl-eval.

Values are rendered the way a model must write them: Python values as literals; Java and JavaScript
values as source text in a string (what BFCL's function-calling path expects: ``"true"``, ``"5L"``,
``"new int[]{1, 2}"``, ``'new ArrayList<>(Arrays.asList("a"))'``, ``"[1, 2]"``, ...). Two text
formats: ``python`` (the prompting format ``[f(a=1)]``; Java/JavaScript values unquoted where they
are code) and ``json`` (Qwen-style ``<tool_call>`` blocks).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from genenv.toolcalls import ToolCallParseError, parse_tool_calls

from ..base import Trajectory, Turn
from .checker import PYTHON_TYPES

Calls = list[dict[str, dict[str, Any]]]
_JAVA_ELEMENT = {
    "String": "String",
    "integer": "int",
    "long": "long",
    "char": "char",
    "boolean": "boolean",
    "float": "float",
    "double": "double",
    "byte": "byte",
    "short": "short",
}
_STRING_TYPES = ("String", "any", "char", "string")


@dataclass(frozen=True)
class Candidate:
    """One model output; ``expect_valid`` is the verdict a correct checker gives, when construction fixes it."""

    label: str
    text: str
    expect_valid: bool | None


def _doc(functions: list[dict], name: str) -> dict:
    return next((f for f in functions if f["name"] == name), {"parameters": {"properties": {}}})


def _pick(acceptable: list, wanted: type | None) -> Any:
    """The first acceptable value (preferring one of type ``wanted``); ``None`` if only ``""`` is."""
    values = [v for v in acceptable if v != ""]
    if not values:
        return None
    typed = [v for v in values if wanted is not None and type(v) is wanted]
    return (typed or values)[0]


def gold_calls(functions: list[dict], ground_truth: list[dict], language: str) -> Calls:
    """The decoded form of the first acceptable answer: ``[{name: {param: value}}]`` (Java/JS values as code)."""
    calls: Calls = []
    for answer in ground_truth:
        name, params = next(iter(answer.items()))
        properties = _doc(functions, name)["parameters"].get("properties", {})
        arguments = {}
        for param, acceptable in params.items():
            detail = properties.get(param, {})
            wanted = str if language != "python" and detail.get("type") in _STRING_TYPES else None
            value = _pick(acceptable, wanted)
            if value is None:
                continue
            if language == "python":
                arguments[param] = _python_gold(value, detail)
            else:
                arguments[param] = to_code(value, detail, language)
        calls.append({name: arguments})
    return calls


def _first_values(answer: dict) -> dict:
    """A dict-typed gold value (``{key: [acceptable values]}``) with the first acceptable value per key."""
    chosen = {}
    for key, acceptable in answer.items():
        value = _pick(acceptable, None) if isinstance(acceptable, list) else acceptable
        if value is not None:
            chosen[key] = value
    return chosen


def _python_gold(value: Any, detail: dict) -> Any:
    kind, items = detail.get("type"), (detail.get("items") or {}).get("type")
    if kind == "dict" and isinstance(value, dict):
        return _first_values(value)
    if kind in ("array", "tuple") and items == "dict" and isinstance(value, list):
        return [_first_values(v) if isinstance(v, dict) else v for v in value]
    return value


def to_code(value: Any, detail: dict, language: str) -> str:
    """A gold value as Java/JavaScript source text that bfcl-eval's converters map back to it."""
    kind = detail.get("type", "any")
    if isinstance(value, str) and (kind in _STRING_TYPES or not _structured(kind)):
        return value  # a string, or a variable name standing for a value of another type
    if language == "java":
        return _java(value, kind, (detail.get("items") or {}).get("type"))
    return _js(value, kind, (detail.get("items") or {}).get("type"))


def _structured(kind: str) -> bool:
    return kind not in _STRING_TYPES


def _java(value: Any, kind: str, items: str | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "long":
        return f"{value}L"
    if kind == "float":
        return f"{value}f"
    if kind in ("Array", "ArrayList") and isinstance(value, list):
        if kind == "Array":
            elements = ", ".join(_java_element(v, items, quoted=False) for v in value)
            return f"new {_JAVA_ELEMENT.get(items or '', 'Object')}[]{{{elements}}}"
        if not value:
            return "new ArrayList<>()"
        return "new ArrayList<>(Arrays.asList(" + ", ".join(_java_element(v, items, quoted=True) for v in value) + "))"
    if kind == "HashMap" and isinstance(value, dict):
        if not value:
            return "new HashMap<>()"
        puts = " ".join(
            f'put("{k}", {_java_literal(_pick(v, None) if isinstance(v, list) else v)});' for k, v in value.items()
        )
        return "new HashMap<String, Object>() {{ " + puts + " }}"
    return str(value)


def _java_element(value: Any, items: str | None, *, quoted: bool) -> str:
    if items == "String" and isinstance(value, str):
        return f'"{value}"' if quoted else value
    if items == "char" and isinstance(value, str):
        return f"'{value}'" if quoted else value
    return _java(value, items or "any", None)


def _java_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


def _js(value: Any, kind: str, items: str | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "Bigint":
        return f"{value}n"
    if kind == "array" and isinstance(value, list):
        return "[" + ", ".join(_js_literal(v, items) for v in value) + "]"
    if kind == "dict" and isinstance(value, dict):
        pairs = (f'"{k}": {_js_literal(_pick(v, None) if isinstance(v, list) else v, None)}' for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return str(value)


def _js_literal(value: Any, items: str | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, list):
        return "[" + ", ".join(_js_literal(v, None) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f'"{k}": {_js_literal(v, None)}' for k, v in value.items()) + "}"
    return str(value)


def render(calls: Calls, functions: list[dict], language: str, fmt: str) -> str:
    """Calls as model text: ``fmt`` ``"python"`` (``[f(a=1), g()]``) or ``"json"`` (``<tool_call>`` blocks)."""
    if fmt == "json":
        return "\n".join(
            "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"
            for call in calls
            for name, args in call.items()
        )
    parts = []
    for call in calls:
        for name, args in call.items():
            properties = _doc(functions, name)["parameters"].get("properties", {})
            rendered = ", ".join(f"{k}={_source(v, properties.get(k, {}), language)}" for k, v in args.items())
            parts.append(f"{name}({rendered})")
    return "[" + ", ".join(parts) + "]"


def _source(value: Any, detail: dict, language: str) -> str:
    if language == "python" or not isinstance(value, str):
        return repr(value)
    if detail.get("type") in _STRING_TYPES or not _looks_like_code(value):
        return json.dumps(value)  # a string literal; the official parsers strip its quotes
    return value


def _looks_like_code(value: str) -> bool:
    text = value.strip()
    if text in ("true", "false"):
        return True
    if text[:1] in "[{" or text.startswith("new "):
        return True
    return text.rstrip("LlfFn").lstrip("-").replace(".", "", 1).replace("e-", "").replace("e", "").isdigit()


# -- perturbations ------------------------------------------------------------------------------


def ast_candidates(functions: list[dict], ground_truth: list[dict], category: str, language: str) -> list[Candidate]:
    """The gold answer (both formats) and perturbations that no acceptable answer matches."""
    gold = gold_calls(functions, ground_truth, language)
    out: list[Candidate] = []
    for fmt in ("python", "json"):
        out.append(Candidate(f"gold_{fmt}", render(gold, functions, language, fmt), True))
    if len(gold) > 1:
        out.append(Candidate("reordered_calls", render(gold[::-1], functions, language, "python"), True))
    first_name, first_args = next(iter(gold[0].items()))
    if len(first_args) > 1:
        swapped = [{first_name: dict(reversed(list(first_args.items())))}, *gold[1:]]
        out.append(Candidate("reordered_params", render(swapped, functions, language, "python"), True))

    def variant(label: str, calls: Calls, fmt: str = "python", expect: bool | None = False) -> None:
        out.append(Candidate(label, render(calls, functions, language, fmt), expect))

    variant("wrong_function", [{first_name + "_v2": first_args}, *gold[1:]])
    variant("extra_param", [{first_name: {**first_args, "zz_extra_param": 1}}, *gold[1:]])
    required = _doc(functions, first_name)["parameters"].get("required", [])
    present = [p for p in required if p in first_args]
    if present:
        variant("missing_required", [{first_name: {k: v for k, v in first_args.items() if k != present[0]}}, *gold[1:]])
    if first_args:
        param = next(iter(first_args))
        value = first_args[param]
        wrong_type = "zz wrong" if not isinstance(value, str) else 987654
        if language != "python" and isinstance(value, str):
            variant("wrong_type", [{first_name: {**first_args, param: 987654}}, *gold[1:]], fmt="json")
        else:
            variant("wrong_type", [{first_name: {**first_args, param: wrong_type}}, *gold[1:]])
        wrong = _wrong_value(value) if language == "python" else "zz_wrong_value"
        if wrong is not None:
            variant("wrong_value", [{first_name: {**first_args, param: wrong}}, *gold[1:]])
    if len(gold) > 1:
        variant("missing_call", gold[:-1])
    variant("duplicated_call", [*gold, gold[0]])
    gold_text = render(gold, functions, language, "python")
    out.append(Candidate("gold_fenced", f"```\n{gold_text}\n```", True))
    out.append(Candidate("gold_unbracketed", gold_text[1:-1], True))
    out.append(Candidate("prose_then_gold", "Sure, here it is: " + gold_text, False))
    out.append(Candidate("json_without_newlines", render(gold, functions, language, "json").replace("\n", ""), False))
    out.append(Candidate("prose", "I cannot help with that request.", False))
    out.append(Candidate("empty_list", "[]", False))
    out.append(Candidate("malformed", gold_text[:-3], False))
    return out


def decoder_probes(name: str, param: str) -> list[Candidate]:
    """Texts that exercise the decoders' corner cases (verdicts not fixed by construction)."""
    n, p = name, param
    texts = [
        f"[{n}({p}=1+2)]",
        f"[{n}({p}=-5)]",
        f"[{n}({p}=+5)]",
        f"[{n}({p}=not True)]",
        f"[{n}({p}=~3)]",
        f"[{n}({p}=x)]",
        f"[{n}({p}=g())]",
        f"[{n}({p}=g(b=1))]",
        f"[{n}({p}=[1, 2][0])]",
        f"[{n}({p}=lambda: 1)]",
        f"[{n}(1, {p}=1)]",
        f"[{n}(**{{'{p}': 1}})]",
        f"[{n}({p}=1, {p}=2)]",
        f"[{n}({p}={{1, 2}})]",
        f"[{n}({p}=f'x')]",
        f"[{n}({p}=1)], [{n}()]",
        f"{n}({p}='a') and more",
        f"[{n}({p}=...)]",
        f"[{n}({p}='a' * 3)]",
        f"[{n}({p}=2**10)]",
        f"[{n}({p}=1/0)]",
        f"[{n}({p}=math.pi)]",
        f"[{n}({p}=None)]",
        f"[{n}({p}=(1, 2))]",
        f"[{n}({p}={{'k': [1, {{'j': 2}}]}})]",
        f"[{n}({p}=True)]",
        f"[{n}.x({p}=1)]",
        f"[a().{n}({p}=1)]",
        f"[{n}()()]",
        f"['{n}']",
        f"[[{n}({p}=1)]]",
        f"({n}({p}=1),)",
        f"[{n}({p}=-x)]",
        f"[{n}({p}=1 if True else 2)]",
        f"[{n}({p}=[i for i in (1, 2)])]",
        f"[{n}({p}=1.5e3)]",
        f"[{n}({p}='line\\nbreak')]",
        f'[{n}({p}="it\'s")]',
        f"[{n}({p}=[1, 'a', None])]",
        f"[{n}({p}={{}})]",
        f'<tool_call>\n{{"name": "{n}"}}\n</tool_call>',
        "<tool_call>\n[1]\n</tool_call>",
        f'<tool_call>\n{{"name": "{n}", "arguments": "{{}}"}}\n</tool_call>',
        "<tool_call>\nnot json\n</tool_call>",
        f'<tool_call>\n{{"name": ["{n}"], "arguments": {{}}}}\n</tool_call>',
        f'<tool_call>\n{{"name": "{n}", "arguments": {{"{p}": 1}}}}\n</tool_call>\n<tool_call>\nbad\n</tool_call>',
        "",
        "   ",
        "[]",
        "[{}]",
        "None",
        "```json\n[1]\n```",
        "`[]`",
        f"```python\n[{n}({p}=1)]\n```",
        f"'[{n}({p}=1)]'",
        f"[{n}({p}=1)]\n\nThis calls the function.",
        f"[{n}(\n    {p}=1,\n)]",
    ]
    return [Candidate(f"probe_{i}", text, None) for i, text in enumerate(texts)]


def operation_candidates(functions: list[dict], ground_truth: list[dict]) -> list[Candidate]:
    """The gold answer (Python format) with its first call's arguments written as operations.

    Labels ``operation_literal:*`` (literals only, dict/list/set included: computed as ``eval`` does),
    ``operation_with_call:*`` (a call inside the operation: ``eval`` computes it, genenv never does) and
    ``operation_oversize:*`` (a literal term beyond genenv's size bound, cancelled out by ``eval``).
    Verdicts are not fixed by construction; the parity run compares them with bfcl-eval's.
    """
    gold = gold_calls(functions, ground_truth, "python")
    if not gold:
        return []
    first_name, first_args = next(iter(gold[0].items()))
    out = []
    for param, value in first_args.items():
        for label, source in _operation_forms(value):
            calls = [{first_name: {**first_args, param: _Source(source)}}, *gold[1:]]
            out.append(Candidate(f"{label}:{param}", render(calls, functions, "python", "python"), None))
    return out


class _Source(str):
    """Argument source text rendered as is (an operation), not as a literal."""

    def __repr__(self) -> str:
        return str(self)


def _operation_forms(value: Any) -> list[tuple[str, str]]:
    """``(label, source)`` pairs whose ``eval`` equals ``value``."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int):
        return [
            ("operation_literal:int", f"({value - 3}) + 3"),
            ("operation_literal:int_power", f"{value} * 2 ** 0"),
            ("operation_with_call:int", f"int({str(value)!r}) + 0"),
            ("operation_oversize:int", f"({value} + 10 ** 700) - 10 ** 700"),
        ]
    if isinstance(value, float):
        return [
            ("operation_literal:float", f"{value!r} * 1"),
            ("operation_with_call:float", f"float({value!r}) + 0"),
        ]
    if isinstance(value, str):
        half = len(value) // 2
        return [
            ("operation_literal:str", f"{value[:half]!r} + {value[half:]!r}"),
            ("operation_literal:str_format", f"'%s' % ({value!r},)"),
            ("operation_with_call:str", f"str({value!r}) + ''"),
            ("operation_oversize:str", f"{value!r} + 'ab' * 60000 * 0"),
        ]
    if isinstance(value, list):
        return [
            ("operation_literal:list", f"{value[:1]!r} + {value[1:]!r}"),
            ("operation_literal:list_of_dicts", f"{value!r} + [{{'k': 1}}] * 0"),
            ("operation_with_call:list", f"list({value!r}) + []"),
            ("operation_oversize:list", f"{value!r} + [0] * 60000 * 0"),
        ]
    if isinstance(value, dict):
        items = list(value.items())
        return [
            ("operation_literal:dict", f"{dict(items[:1])!r} | {dict(items[1:])!r}"),
            ("operation_literal:dict_unpacked", f"{{**{value!r}}} | {{}}"),
            ("operation_with_call:dict", f"dict({value!r}) | {{}}"),
        ]
    if isinstance(value, tuple):
        return [("operation_literal:tuple", f"{value[:1]!r} + {value[1:]!r}")]
    return []


def call_shape_probes(name: str, param: str) -> list[Candidate]:
    """Answers shaped like calls whose arguments may not decode (relevance and irrelevance).

    Labels ``call_shape:*``; genenv counts each as a call, bfcl-eval only those it can decode.
    """
    n, p = name, param
    texts = {
        "call_in_operation": f"[{n}({p}=len('abc') + 1)]",
        "call_in_operation_int": f"[{n}({p}=int('10') + 0)]",
        "name_in_operation": f"[{n}({p}=some_value + 1)]",
        "negated_name": f"[{n}({p}=-some_value)]",
        "oversize_power": f"[{n}({p}=10 ** 700)]",
        "oversize_repeat": f"[{n}({p}='ab' * 60000)]",
        "set_literal": f"[{n}({p}={{1, 2}})]",
        "dict_operation": f"[{n}({p}={{'a': 1}} | {{'b': 2}})]",
        "set_operation": f"[{n}({p}={{1}} | {{2}})]",
        "list_of_dicts_operation": f"[{n}({p}=[{{'a': 1}}] + [])]",
        "f_string": f"[{n}({p}=f'x')]",
        "conditional": f"[{n}({p}=1 if True else 2)]",
        "comprehension": f"[{n}({p}=[i for i in (1, 2)])]",
        "broken_arguments": f"[{n}({p}=1, other=)]",
        "too_deep_to_parse": f"[{n}({p}=" + "[" * 300 + "]" * 300 + ")]",
        "tagged_arguments_not_object": f'<tool_call>\n{{"name": "{n}", "arguments": 3}}\n</tool_call>',
        "tagged_json_broken": f'<tool_call>\n{{"name": "{n}", "arguments": {{"{p}": }}}}\n</tool_call>',
    }
    return [Candidate(f"call_shape:{label}", text, None) for label, text in texts.items()]


def _wrong_value(value: Any) -> Any:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value + 7919
    if isinstance(value, str):
        return "zz wrong value " + value
    if isinstance(value, list):
        return [*value, "zz extra element"]
    if isinstance(value, dict):
        return {**value, "zz_extra_key": "zz"}
    return None


def dummy_value(detail: dict) -> Any:
    """A plausible value of a parameter's type (for calls whose content does not matter)."""
    kind = PYTHON_TYPES.get(detail.get("type", "string"), str)
    return {str: "example", int: 1, float: 1.5, bool: True, list: [], dict: {}}[kind]


def relevance_candidates(functions: list[dict], category: str) -> list[Candidate]:
    """Outputs with and without a call; ``expect_valid`` follows the category's rule."""
    want_call = category == "live_relevance"
    if not functions:  # a few live_irrelevance entries offer no function at all
        functions = [
            {"name": "search_web", "parameters": {"properties": {"query": {"type": "string"}}, "required": ["query"]}}
        ]
    function = functions[0]
    properties = function["parameters"].get("properties", {})
    args = {p: dummy_value(properties.get(p, {})) for p in function["parameters"].get("required", [])}
    call = [{function["name"]: args}]
    return [
        Candidate("call_python", render(call, functions, "python", "python"), want_call),
        Candidate("call_json", render(call, functions, "python", "json"), want_call),
        Candidate("prose", "None of the functions can answer this question.", not want_call),
        Candidate("empty_list", "[]", not want_call),
        Candidate("malformed", render(call, functions, "python", "python")[:-2], not want_call),
        Candidate("bare_json", json.dumps({"name": function["name"], "arguments": args}), not want_call),
    ]


# -- multi-turn ------------------------------------------------------------------------------------

Steps = list[list[str]]


def multi_turn_candidates(gold_turns: list[list[dict[str, Any]]]) -> list[tuple[str, Steps, bool | None]]:
    """(label, step texts per user turn, expected verdict) from the keyword-form gold calls per turn.

    ``gold_turns[t]`` holds ``{name: kwargs}`` dicts. Every step is one model message; a plain-text
    message ends each user turn (the text the model answers with when it is done).
    """

    def python(calls: list[dict[str, Any]]) -> str:
        return (
            "["
            + ", ".join(f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for c in calls for n, a in c.items())
            + "]"
        )

    def json_text(calls: list[dict[str, Any]]) -> str:
        return "\n".join(
            "<tool_call>\n" + json.dumps({"name": n, "arguments": a}) + "\n</tool_call>"
            for c in calls
            for n, a in c.items()
        )

    out: list[tuple[str, Steps, bool | None]] = [
        ("gold_steps", [[python([c]) for c in turn] for turn in gold_turns], True),
        ("gold_one_step", [[python(turn)] if turn else [] for turn in gold_turns], True),
        ("gold_json", [[json_text([c]) for c in turn] for turn in gold_turns], True),
        (
            "extra_unknown_call",
            [[*[python([c]) for c in turn], "[zz_unknown_function(x=1)]"] for turn in gold_turns],
            True,
        ),
        ("truncated", [[python([c]) for c in turn] for turn in gold_turns[:-1]], False),
    ]
    filled = [i for i, turn in enumerate(gold_turns) if turn]
    if filled:
        first = filled[0]
        empty = [[python([c]) for c in turn] if i != first else [] for i, turn in enumerate(gold_turns)]
        out.append(("empty_turn", empty, False))
        last = filled[-1]
        dropped = [[python([c]) for c in (turn[:-1] if i == last else turn)] for i, turn in enumerate(gold_turns)]
        out.append(("dropped_last_call", dropped, None))
        changed = copy.deepcopy(gold_turns)
        name, args = next(iter(changed[first][0].items()))
        for key, value in args.items():
            if isinstance(value, str):
                args[key] = value + "_zz"
                break
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                args[key] = value + 7
                break
        out.append(("wrong_argument", [[python([c]) for c in turn] for turn in changed], None))
    return out


def trajectory_of(turns: Steps, answer: str = "Done.") -> Trajectory:
    """The trajectory ToolEnv records when an agent sends these messages, ending each user turn with
    the plain-text ``answer`` (calls parsed by ``parse_tool_calls`` as the env parses them)."""
    trajectory = Trajectory()
    for steps in turns:
        for text in [*steps, answer]:
            try:
                calls, error = parse_tool_calls(text), None
            except ToolCallParseError as parse_error:
                calls, error = [], parse_error.kind
            trajectory.turns.append(Turn(action=text, calls=calls, error=error))
    trajectory.final_answer = answer
    return trajectory
