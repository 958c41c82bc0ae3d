"""Simulator-written tasks are checked against the adapter's own JSON schema before ``validate_task``."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from scripted_simulator import ScriptedSimulator
from toy_benchmark import ToyAdapter

from genenv.benchmarks.base import DataNotFoundError, get_benchmark
from genenv.envs.simulator import Simulator, extract_json_object, to_proposal
from genenv.envs.task_schema import family_schema, schema_violation
from genenv.envs.tool_env import ToolEnv
from genenv.llm.generation import SamplingConfig

BOUNDED = {
    "type": "object",
    "properties": {
        "a": {"type": "integer", "minimum": 0, "maximum": 1000},
        "b": {"type": "integer", "minimum": 0, "maximum": 1000},
    },
    "required": ["a", "b"],
    "additionalProperties": False,
}


class BoundedToy(ToyAdapter):
    """The toy benchmark with a bounded generation schema; counts ``validate_task`` calls."""

    def __init__(self) -> None:
        super().__init__()
        self.validated = 0

    def generation_schema(self, family: str) -> dict[str, Any]:
        return BOUNDED

    def validate_task(self, task):
        self.validated += 1
        return super().validate_task(task)


@pytest.mark.parametrize(
    "obj, reason",
    [
        ({"a": 403355, "b": 1}, "$.a: 403355 is greater than the maximum of 1000"),
        ({"a": 1, "b": -2}, "$.b: -2 is less than the minimum of 0"),
        ({"a": 1, "b": 9.2e32}, "$.b: 9.2e+32 is greater than the maximum of 1000"),
        ({"a": 1, "b": 2.5}, "$.b: 2.5 is not of type 'integer'"),
        ({"a": 1, "b": "2"}, "$.b: '2' is not of type 'integer'"),
        ({"a": 1}, "$: 'b' is a required property"),
        ({"a": 1, "b": 2, "c": 3}, "Additional properties are not allowed ('c' was unexpected)"),
    ],
)
def test_schema_violation_names_the_path_and_the_rule(obj, reason):
    assert reason in schema_violation(obj, BOUNDED)


def test_enums_lengths_and_items_are_checked_and_long_values_are_cut():
    schema = {
        "type": "object",
        "properties": {
            "kind": {"enum": ["add", "sub"]},
            "name": {"type": "string", "minLength": 2, "maxLength": 4},
            "args": {"type": "array", "maxItems": 2},
        },
    }
    assert schema_violation({"kind": "add", "name": "ab", "args": [1]}, schema) is None
    assert "'mul' is not one of ['add', 'sub']" in schema_violation({"kind": "mul"}, schema)
    assert schema_violation({"name": "abcde"}, schema) == "$.name: 'abcde' is too long"
    assert schema_violation({"name": "a"}, schema) == "$.name: 'a' is too short"
    assert "$.args: [1, 2, 3] is too long" in schema_violation({"args": [1, 2, 3]}, schema)
    long = schema_violation({"name": "x" * 5000}, schema)
    assert long.endswith("...") and len(long) < 400


def test_an_invalid_schema_raises_a_value_error_naming_it():
    with pytest.raises(ValueError, match="not a valid JSON schema"):
        schema_violation({"a": 1}, {"type": "integer-ish"})
    with pytest.raises(ValueError, match="schema must be a dict, not list"):
        schema_violation({"a": 1}, [])


def test_family_schema_is_the_generation_schema_else_the_task_schema():
    assert family_schema(BoundedToy(), "small") == BOUNDED
    assert family_schema(ToyAdapter(), "small") == ToyAdapter.task_schema

    class NoSchema(ToyAdapter):
        task_schema = {}

    assert family_schema(NoSchema(), "small") is None


def test_a_task_outside_the_schema_is_rejected_with_its_reason_before_validate_task():
    adapter = BoundedToy()
    rejected = to_proposal(adapter, "small", [], json.dumps({"a": 403355, "b": 1}))
    assert rejected.task is None and adapter.validated == 0
    assert rejected.reject_reason == "schema: $.a: 403355 is greater than the maximum of 1000"
    kept = to_proposal(adapter, "small", [], json.dumps({"a": 1000, "b": 0}))
    assert kept.task is not None and kept.task.gold == {"sum": 1000} and adapter.validated == 1


def test_without_a_generation_schema_the_task_schema_is_checked():
    proposal = to_proposal(ToyAdapter(), "small", [], '{"a": true, "b": 1}')  # parse_task takes a bool for an int
    assert proposal.task is None and proposal.reject_reason == "schema: $.a: True is not of type 'integer'"
    unchecked = to_proposal(ToyAdapter(), "small", [], '{"a": true, "b": 1}', schema={})
    assert unchecked.task is not None


def test_what_parse_task_cannot_read_stays_unparsable():
    proposal = to_proposal(BoundedToy(), "small", [], '{"a": "x", "b": 1}')
    assert proposal.reject_reason.startswith("unparsable: a and b must be integers")


def test_schema_rejects_are_kept_in_the_generation_log_and_counted():
    replies = [json.dumps({"a": 403355, "b": 1}), json.dumps({"a": 2, "b": 3}), json.dumps({"a": 1, "b": 2, "c": 0})]
    simulator = ScriptedSimulator(replies, "small")
    proposals = simulator.propose(BoundedToy(), rng=np.random.default_rng(0))
    reasons = [p.reject_reason.split(":", 1)[0] for p in proposals if p.task is None]
    assert reasons == ["schema", "schema"] and proposals[1].task is not None
    env = ToolEnv(BoundedToy(), task_source="simulator", simulator=ScriptedSimulator(replies, "small"))
    _, info = env.reset(seed=0)
    assert info["task_origin"] == "simulator" and info["task"]["prompt"] == "What is 2 + 3?"
    logged = [record["reject_reason"] for record in env.generation_log]
    assert logged[0].startswith("schema: $.a:") and logged[1] == "" and logged[2].startswith("schema: $:")


def test_constrained_decoding_ignores_numeric_bounds_so_the_schema_check_rejects(tiny_policy):
    """lm-format-enforcer keeps the schema's keys and JSON types while it generates, not ``minimum``/``maximum``: the
    tiny random model, constrained to ``BOUNDED``, writes integers beyond them, and the schema check rejects them."""
    simulator = Simulator(
        tiny_policy, batch_size=8, num_examples=0, sampling=SamplingConfig(max_new_tokens=128, temperature=1.0)
    )
    proposals = simulator.propose(BoundedToy(), rng=np.random.default_rng(0))
    beyond = 0
    for proposal in proposals:
        try:
            obj = extract_json_object(proposal.raw)
        except ValueError:
            assert proposal.reject_reason.startswith("unparsable")
            continue
        assert set(obj) == {"a", "b"}  # the schema's keys: kept while generating
        if not all(type(obj[key]) is int for key in "ab"):  # e.g. 0e+7233: parse_task refuses it first
            assert proposal.reject_reason.startswith("unparsable")
            continue
        out_of_bounds = [key for key in "ab" if not 0 <= obj[key] <= 1000]
        if out_of_bounds:
            beyond += 1
            assert proposal.task is None and proposal.reject_reason.startswith(f"schema: $.{out_of_bounds[0]}: ")
        if proposal.task is not None:
            assert 0 <= proposal.task.metadata["a"] <= 1000 and 0 <= proposal.task.gold["sum"] <= 2000
    assert beyond, [p.raw for p in proposals]


BENCHMARKS = ["apibank", "alfworld", "bfcl", "bamboogle", "travelplanner", "reasoning_gym"]


def _adapter_or_skip(name: str):
    try:
        return get_benchmark(name)
    except ImportError as error:
        pytest.skip(f"{name}: its extra is not installed ({error})")
    except (DataNotFoundError, FileNotFoundError) as error:
        pytest.skip(f"{name}: no data ({error})")


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmarks_schemas_are_valid_and_its_own_examples_satisfy_them(name):
    """Each family's schema is a valid JSON schema; the benchmark's own worked examples of that family satisfy it
    (API-Bank's, of other APIs, its ``task_schema``), except BFCL's: its generation schema is narrower than its data
    (function names without dots, no parameter ``enum``, at most 3 possible values per argument), so only what
    constrained decoding can write passes."""
    adapter = _adapter_or_skip(name)
    checked = 0
    for family in adapter.families():
        schema = family_schema(adapter, family)
        assert schema is not None, f"{name} declares no schema for {family}"
        assert schema_violation({}, schema) is not None  # a valid schema (else ValueError), and {} does not pass it
        if name == "bfcl":
            continue
        for example in adapter.generation_examples(family, 3, np.random.default_rng(0)):
            # API-Bank's worked examples call the training set's other APIs: they satisfy its task_schema
            own = schema if name != "apibank" or example["api"] == family else adapter.task_schema
            assert schema_violation(example, own) is None, (family, example)
            checked += 1
    assert name == "bfcl" or checked
