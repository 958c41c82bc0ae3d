"""BFCL's AST checker: is a decoded model output one of the acceptable answers?

A re-implementation of ``bfcl_eval/eval_checker/ast_eval/ast_checker.py`` (bfcl-eval 2026.3.23),
which cannot be imported without the provider SDKs (see :mod:`.official`). Its semantics are kept
decision by decision, quirks included, so the verdicts are the official ones
(``experiments/parity/bfcl_parity.py`` compares them on every entry, gold answers and perturbations):

* simple: exactly one call; the function name must match; every ``required`` parameter present; no
  parameter outside the doc or the acceptable answers; each value type-checked (Python: exact
  types, an int accepted for a float, one level of element types for arrays; Java/JavaScript: the
  value must be a string, converted with bfcl-eval's own converters) and equal to an acceptable
  value (strings compared after :func:`standardize_string`; dicts and lists of dicts key by key);
  an omitted optional parameter must have ``""`` among its acceptable values;
* multiple: one call, checked against the expected function of the doc list;
* parallel / parallel_multiple: as many calls as answers; each answer, in order, takes the first
  still-unmatched call that passes (greedy, order-free);
* the official model-name conversion of dotted names is the identity for the text formats genenv
  accepts (no ``underscore_to_dot``).

Where upstream would crash (an unknown type in a doc, a converter raising ``NotImplementedError``),
the output is judged invalid with ``error_type == "checker:error"``; the parity script counts these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .official import java_type_converter, js_type_converter, type_mappings

PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
PYTHON_NESTED = ("array", "tuple")
JAVA_JS_NESTED = ("Array", "ArrayList", "array")
_STANDARDIZE = re.compile(r"[ \,\.\/\-\_\*\^]")


@dataclass
class Verdict:
    """The checker's decision: ``valid`` and, when not, the official ``error_type`` and messages."""

    valid: bool
    error_type: str = ""
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"valid": self.valid, "error_type": self.error_type, "errors": self.errors}


class _Crash(Exception):
    """Where upstream raises instead of returning a verdict."""


def standardize_string(text: str) -> str:
    """BFCL's string normalisation: drop spaces and ``,./-_*^``, lower-case, ``'`` -> ``"``."""
    return _STANDARDIZE.sub("", text).lower().replace("'", '"')


def check_ast(functions: list[dict], decoded: list, possible_answer: list, language: str, category: str) -> Verdict:
    """``ast_checker``: ``decoded`` is ``[{name: {param: value}}]``, ``possible_answer`` the ground truth."""
    try:
        if "parallel" in category:
            return _parallel(functions, decoded, possible_answer, language)
        if "multiple" in category:
            return _multiple(functions, decoded, possible_answer, language)
        if len(decoded) != 1:
            return Verdict(False, "simple_function_checker:wrong_count", ["Wrong number of functions."])
        return _simple(functions[0], decoded[0], possible_answer[0], language)
    except (_Crash, KeyError, TypeError, IndexError, AttributeError, ValueError, NotImplementedError) as error:
        return Verdict(False, "checker:error", [f"upstream would raise {type(error).__name__}: {error}"])


def _find_description(functions: Any, name: str) -> dict | None:
    if isinstance(functions, list):
        return next((f for f in functions if f["name"] == name), None)
    return functions


def _parallel(functions: list[dict], decoded: list, answers: list, language: str) -> Verdict:
    if len(decoded) != len(answers):
        return Verdict(False, "parallel_function_checker_no_order:wrong_count", ["Wrong number of functions."])
    matched: set[int] = set()
    result = Verdict(True)
    for i, answer in enumerate(answers):
        description = _find_description(functions, next(iter(answer)))
        if description is None:
            raise _Crash(f"no function doc for {next(iter(answer))!r}")
        for index, output in enumerate(decoded):
            if index in matched:
                continue
            result = _simple(description, output, answer, language)
            if result.valid:
                matched.add(index)
                break
        if not result.valid:
            return Verdict(
                False,
                "parallel_function_checker_no_order:cannot_find_match",
                [f"Could not find a matching function for index {i} of possible answers."],
            )
    return Verdict(True)


def _multiple(functions: list[dict], decoded: list, answers: list, language: str) -> Verdict:
    if len(decoded) != len(answers):
        return Verdict(False, "multiple_function_checker:wrong_count", ["Wrong number of functions."])
    description = _find_description(functions, next(iter(answers[0])))
    if description is None:
        raise _Crash(f"no function doc for {next(iter(answers[0]))!r}")
    return _simple(description, decoded[0], answers[0], language)


def _simple(description: dict, output: dict, answer: dict, language: str) -> Verdict:
    """``simple_function_checker``."""
    possible = next(iter(answer.values()))
    name = description["name"]
    details = description["parameters"]["properties"]
    required = description["parameters"]["required"]
    if name not in output:
        return Verdict(False, "simple_function_checker:wrong_func_name", [f"Function name {name!r} not found."])
    params = output[name]
    for param in required:
        if param not in params:
            return Verdict(
                False, "simple_function_checker:missing_required", [f"Missing required parameter {param!r}."]
            )
    for param, value in params.items():
        if param not in details or param not in possible:
            return Verdict(False, "simple_function_checker:unexpected_param", [f"Unexpected parameter {param!r}."])
        verdict = _check_param(param, value, details[param], possible[param], language)
        if not verdict.valid:
            return verdict
    for param in possible:
        if param not in params and "" not in possible[param]:
            return Verdict(
                False,
                "simple_function_checker:missing_optional",
                [f"Optional parameter {param!r} not provided and not marked as optional."],
            )
    return Verdict(True)


def _check_param(param: str, value: Any, detail: dict, acceptable: list, language: str) -> Verdict:
    type_name = detail["type"]
    nested_type = None
    if language in ("java", "javascript"):
        table = type_mappings().JAVA_TYPE_CONVERSION if language == "java" else type_mappings().JS_TYPE_CONVERSION
        expected = table[type_name]
        if type(value) is not str:
            kind = "type_error:java" if language == "java" else "type_error:js"
            return Verdict(False, kind, [f"Incorrect type for parameter {param!r}. Expected type String."])
        convert = (
            java_type_converter().java_type_converter if language == "java" else js_type_converter().js_type_converter
        )
        if type_name in JAVA_JS_NESTED:
            items_type = detail["items"]["type"]
            nested_type = table[items_type]
            value = convert(value, type_name, items_type)
        else:
            value = convert(value, type_name)
    else:
        expected = PYTHON_TYPES[type_name]
        if type_name in PYTHON_NESTED:
            nested_type = PYTHON_TYPES[detail["items"]["type"]]
    if type_name == "tuple" and type(value) is tuple:
        value = list(value)
    if language == "python" and type_name == "float" and type(value) is int:
        value = float(value)

    valid, is_variable, error_type = _type_check(value, acceptable, expected, nested_type)
    if not valid:
        return Verdict(False, error_type, [f"Incorrect type for parameter {param!r}. Expected type {type_name}."])
    if not is_variable:
        if expected is dict:
            return _dict_check(value, acceptable)
        if expected is list and nested_type is dict:
            return _list_dict_check(value, acceptable)
        if expected is str:
            return _string_check(param, value, acceptable)
        if expected is list:
            return _list_check(param, value, acceptable)
    if value not in acceptable:
        return Verdict(False, "value_error:others", [f"Invalid value for parameter {param!r}: {value!r}."])
    return Verdict(True)


def _answer_type(acceptable: list) -> type | None:
    return next((type(answer) for answer in acceptable if answer != ""), None)


def _type_check(value: Any, acceptable: Any, expected: type, nested: type | None) -> tuple[bool, bool, str]:
    """``type_checker``: (valid, is_variable, error_type); one level of element types for arrays."""
    answer_type = _answer_type(acceptable)
    is_variable = answer_type is not None and answer_type is not expected
    nested_failed = False
    if type(value) is expected:
        if nested is None:
            return True, is_variable, ""
        for answer in acceptable:
            ok = True
            if type(answer) is list:
                for item in value:
                    if not _type_check(item, answer, nested, None)[0]:
                        ok = False
                        break
            if ok:
                return True, is_variable, ""
        nested_failed = True
    if answer_type is not None and type(value) is answer_type:
        # upstream returns its running result here: still invalid after a failed element check
        return not nested_failed, True, "type_error:nested" if nested_failed else ""
    return False, False, "type_error:simple"


def _string_check(param: str, value: str, acceptable: list) -> Verdict:
    options = [standardize_string(a) for a in acceptable if type(a) is str]
    if standardize_string(value) not in options:
        return Verdict(False, "value_error:string", [f"Invalid value for parameter {param!r}: {value!r}."])
    return Verdict(True)


def _standardized_items(items: Any) -> list:
    return [standardize_string(items[j]) if type(items[j]) is str else items[j] for j in range(len(items))]


def _list_check(param: str, value: list, acceptable: list) -> Verdict:
    standardized = [standardize_string(v) if type(v) is str else v for v in value]
    options = [_standardized_items(answer) for answer in acceptable]
    if standardized not in options:
        return Verdict(False, "value_error:list/tuple", [f"Invalid value for parameter {param!r}: {value!r}."])
    return Verdict(True)


def _dict_check(value: dict, acceptable: list) -> Verdict:
    result = Verdict(False, "dict_checker:unclear")
    for answer in acceptable:
        if answer == "":
            continue
        result = Verdict(False, "dict_checker:unclear")
        ok = True
        for key, item in value.items():
            if key not in answer:
                result = Verdict(False, "value_error:dict_key", [f"Unexpected dict key parameter: {key!r}."])
                ok = False
                break
            standardized = standardize_string(item) if type(item) is str else item
            options = [standardize_string(a) if type(a) is str else a for a in answer[key]]
            if standardized not in options:
                result = Verdict(False, "value_error:dict_value", [f"Invalid value for dict key {key!r}: {item!r}."])
                ok = False
                break
        for key, options in answer.items():
            if key not in value and "" not in options:
                result = Verdict(False, "value_error:dict_key", [f"Missing dict key parameter: {key!r}."])
                ok = False
                break
        if ok:
            return Verdict(True)
    return result


def _list_dict_check(value: list, acceptable: list) -> Verdict:
    result = Verdict(False, "list_dict_checker:unclear")
    for answer in acceptable:
        if len(value) != len(answer):
            result = Verdict(False, "value_error:list_dict_count", ["Wrong number of dictionaries in the list."])
            continue
        ok = True
        for index in range(len(value)):
            result = _dict_check(value[index], [answer[index]])
            if not result.valid:
                ok = False
                break
        if ok:
            return Verdict(True)
    return result
