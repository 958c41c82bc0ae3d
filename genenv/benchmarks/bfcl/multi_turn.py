"""BFCL multi-turn: the stateful back-ends, call execution, and the official state/response checks.

The back-ends are bfcl-eval's own classes (``GorillaFileSystem``, ``MathAPI``, ``MessageAPI``,
``TwitterAPI``, ``TicketAPI``, ``TradingBot``, ``TravelAPI``, ``VehicleControlAPI``), built from an
entry's ``initial_config`` exactly as ``execute_multi_turn_func_call`` builds them. Calls run as
method calls on those instances, never through ``eval``: a method name maps to the instance of the
last involved class that has it; a call result is kept as text the way upstream keeps it (``str``
as is, ``dict`` as JSON, anything else through ``str``, an exception as ``"Error during execution:
..."``).

:func:`check_multi_turn` is ``multi_turn_checker``: the model's decoded steps and the ground-truth
calls run turn by turn on two fresh sets of instances; after every turn that has ground truth, the
model must have answered with at least one call, every instance's public attributes must equal the
ground truth's, and every ground-truth result must appear among the model's results so far
(multiset, any order).
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import math
import sys
from collections.abc import Sequence
from typing import Any

from .checker import Verdict
from .decoding import ExecCall
from .official import backend_class, backend_config

#: function names upstream refuses to run (checked on the name after the first dot, as upstream does)
BLOCKED_NAMES = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
ERROR_PREFIX = "Error during execution: "


class Backends:
    """The back-end instances of one multi-turn entry and the method-name -> bound-method map."""

    def __init__(self, involved_classes: Sequence[str], initial_config: dict[str, Any], long_context: bool) -> None:
        stateless = set(backend_config().STATELESS_CLASSES)
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for class_name in involved_classes:
            instance = backend_class(class_name)()
            if class_name not in stateless:
                scenario = copy.deepcopy(initial_config.get(class_name, {}))
                instance._load_scenario(scenario, long_context=long_context)
            self.instances[class_name] = instance
            for method_name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method_name.startswith("_"):
                    self.methods[method_name] = method

    def run(self, call: ExecCall, args: Sequence[Any] = ()) -> str:
        """Execute one call; returns its result as upstream records it (never raises)."""
        short = call.name.split(".")[1] if "." in call.name else call.name
        if short in BLOCKED_NAMES:
            return f"{ERROR_PREFIX}Function call {short} is not allowed."
        if call.error is not None:
            return ERROR_PREFIX + call.error
        method = self.methods.get(call.name)
        if method is None:
            return f"{ERROR_PREFIX}name {call.name.split('.')[0]!r} is not defined"
        if _unprintable_power(method, args, call.arguments):
            return ERROR_PREFIX + _INT_DIGITS_ERROR
        try:
            result = method(*copy.deepcopy(list(args)), **copy.deepcopy(call.arguments))
            return format_result(result)
        except Exception as error:  # noqa: BLE001 - a failing tool call is a result, as upstream records it
            return ERROR_PREFIX + str(error)

    def run_source(self, source: str) -> str:
        """Execute a ground-truth call string such as ``"cd(folder='document')"`` (literals only)."""
        try:
            name, args, kwargs = parse_source_call(source)
        except ValueError as error:
            return f"{ERROR_PREFIX}{error}"
        return self.run(ExecCall(name, kwargs), args)

    def keyword_form(self, source: str) -> ExecCall:
        """A ground-truth call string with its positional arguments named (what a model must write,
        since the official decoder drops positional arguments); raises ``ValueError``."""
        name, args, kwargs = parse_source_call(source)
        method = self.methods.get(name)
        if args and method is not None:
            try:
                bound = inspect.signature(method).bind_partial(*args)
            except TypeError as error:
                raise ValueError(f"{source!r}: {error}") from None
            kwargs = {**bound.arguments, **kwargs}
        elif args:
            raise ValueError(f"{source!r}: positional arguments of an unknown function")
        return ExecCall(name, kwargs)

    def public_state(self, class_name: str) -> dict[str, Any]:
        """The attributes the state check compares (those not starting with ``_``)."""
        return {k: v for k, v in vars(self.instances[class_name]).items() if not k.startswith("_")}


_INT_DIGITS_ERROR = (
    f"Exceeds the limit ({sys.get_int_max_str_digits()} digits) for integer string conversion; "
    "use sys.set_int_max_str_digits() to increase the limit"
)


def _unprintable_power(method: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    """Whether a ``MathAPI.power`` call would compute an integer too long to print.

    Upstream computes it (minutes for a huge exponent) and then fails to turn it into text, which
    gives the result ``"Error during execution: Exceeds the limit (4300 digits) ..."``; this answers
    that same result at once, from the predicted number of digits.
    """
    owner = getattr(method, "__self__", None)
    if getattr(method, "__name__", "") != "power" or type(owner).__name__ != "MathAPI":
        return False
    try:
        bound = inspect.signature(method).bind(*args, **kwargs).arguments
    except TypeError:
        return False
    base, exponent = bound.get("base"), bound.get("exponent")
    if not (isinstance(base, int) and isinstance(exponent, int)) or exponent <= 0 or abs(base) < 2:
        return False
    limit = sys.get_int_max_str_digits()
    return limit > 0 and exponent * math.log10(abs(base)) >= limit + 1


def format_result(result: Any) -> str:
    """A call result as upstream keeps it: text as is, dicts as JSON (else ``str``), the rest ``str``."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return json.dumps(result)
        except Exception:  # noqa: BLE001 - upstream falls back to str() on any failure
            return str(result)
    return str(result)


def parse_source_call(source: str) -> tuple[str, list[Any], dict[str, Any]]:
    """A ground-truth call string -> (name, positional args, keyword args); raises ``ValueError``."""
    try:
        node = ast.parse(source, mode="eval").body
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise ValueError("not a plain call")
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None}
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError) as error:
        raise ValueError(f"bad call {source!r}: {error}") from None
    return node.func.id, args, kwargs


def check_multi_turn(
    model_turns: Sequence[Sequence[Sequence[ExecCall]]],
    ground_truth: Sequence[Sequence[str]],
    involved_classes: Sequence[str],
    initial_config: dict[str, Any],
    long_context: bool,
) -> Verdict:
    """``multi_turn_checker`` (plus the runner's turn-count check): the model's decoded, non-empty
    steps per user turn against the ground-truth call strings per turn."""
    if len(model_turns) != len(ground_truth):
        return Verdict(
            False,
            "multi_turn:force_terminated",
            [f"{len(model_turns)} answered turns for {len(ground_truth)} ground-truth turns"],
        )
    model = Backends(involved_classes, initial_config, long_context)
    gold = Backends(involved_classes, initial_config, long_context)
    all_model_results: list[str] = []
    for turn_index, (steps, gold_calls) in enumerate(zip(model_turns, ground_truth)):
        for step in steps:
            all_model_results.extend(model.run(call) for call in step)
        gold_results = [gold.run_source(source) for source in gold_calls]
        if not gold_calls:
            continue
        if not steps or (len(steps) == 1 and not steps[0]):
            return Verdict(False, "multi_turn:empty_turn_model_response", [f"no function call in turn {turn_index}"])
        for class_name in gold.instances:
            expected = gold.public_state(class_name)
            instance = model.instances[class_name]
            differences = [k for k, v in expected.items() if getattr(instance, k) != v]
            if differences:
                return Verdict(
                    False,
                    "multi_turn:instance_state_mismatch",
                    [f"{class_name} differs from the ground truth after turn {turn_index} in {differences}"],
                )
        missing = _missing_results(gold_results, all_model_results)
        if missing:
            return Verdict(
                False,
                "multi_turn:execution_response_mismatch",
                [f"turn {turn_index}: ground-truth results missing from the model's: {missing[:3]}"],
            )
    return Verdict(True)


def _missing_results(expected: list[str], produced: list[str]) -> list[str]:
    remaining = list(produced)
    missing = []
    for item in expected:
        try:
            remaining.remove(item)
        except ValueError:
            missing.append(item)
    return missing
