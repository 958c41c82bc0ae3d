"""Simulator-written arithmetic expressions (reasoning-gym's ``task_spec="expression"``): the grammar matches the
families' own items, the level is measured, and a written task reads, validates and scores like a family item."""

import json
import re

import gymnasium as gym
import numpy as np
import pytest
from scripted_simulator import ScriptedSimulator

pytest.importorskip("reasoning_gym")

import genenv  # noqa: F401, E402  (registers the env ids)
from genenv.benchmarks.base import Task, Trajectory  # noqa: E402
from genenv.benchmarks.reasoning_gym import ReasoningGymAdapter, generate_entry, level_ranges  # noqa: E402
from genenv.benchmarks.reasoning_gym_expressions import (  # noqa: E402
    FAMILIES,
    expression_pattern,
    parse_expression,
    worked_steps,
)
from genenv.envs.expert import replay_expert  # noqa: E402
from genenv.llm.constrained import json_schema_constraint  # noqa: E402, F401  (patches lm-format-enforcer's import)

SIZES = {"test_per_level": 4, "validation_per_level": 2, "train_per_level": 6, "answer_format": "answer"}


@pytest.fixture(scope="module")
def adapter() -> ReasoningGymAdapter:
    return ReasoningGymAdapter(
        families=["basic_arithmetic@0-4", "chain_sum@0-4", "products@0-4"], task_spec="expression", **SIZES
    )


def written(family: str, expression: str) -> dict:
    return {"family": family, "expression": expression}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_grammar_reads_the_familys_own_items(family):
    """Every item reasoning-gym generates (levels 0-4) parses to its own expression, answer and question; for the
    one-draw families its terms and digits lie in the ranges of the level that made it."""
    for level in range(5):
        min_terms, max_terms, min_digits, max_digits = level_ranges(family, level)
        for seed in range(60):
            entry = generate_entry(family, level, seed)
            expression = parse_expression(family, entry["metadata"]["expression"])
            assert expression.text == entry["metadata"]["expression"]
            assert str(expression.value) == entry["answer"]
            assert FAMILIES[family].format_question(expression.text) == entry["question"]
            if family != "basic_arithmetic":  # its division fix-ups can add a term
                assert min_terms <= expression.terms <= max_terms and min_digits <= expression.digits <= max_digits
                assert re.match(expression_pattern(family, max_terms, max_digits), expression.text)


def test_canonical_form_value_and_exactness():
    assert parse_expression("chain_sum", "37+12 -5").text == "37 + 12 - 5"
    assert parse_expression("chain_sum", "37+12 -5").value == 44
    product = parse_expression("products", "12 * 3 * 405")
    assert (product.value, product.terms, product.digits) == (14580, 3, 3)
    grouped = parse_expression("basic_arithmetic", "-(3+-4)*2 - 6/3")
    assert (grouped.text, grouped.value, grouped.exact) == ("-( 3 + -4 ) * 2 - 6 / 3", 0, True)
    assert parse_expression("basic_arithmetic", "2 + 3 * 4").value == 14  # * before +
    assert parse_expression("basic_arithmetic", "8 - 3 - 2").value == 3  # left to right
    floor = parse_expression("basic_arithmetic", "-7 / 2")
    assert (floor.value, floor.exact) == (-4, False)  # reasoning-gym's floor division, flagged inexact


@pytest.mark.parametrize(
    "family, text, reason",
    [
        ("chain_sum", "7", "at least two numbers"),
        ("chain_sum", "", "empty"),
        ("chain_sum", "3 * 4", "operator '\\*' is not allowed"),
        ("chain_sum", "(3 + 4) - 1", "parentheses are not allowed"),
        ("chain_sum", "3 + -4", "where a number is expected"),
        ("products", "3 * -4", "operator '-' is not allowed"),
        ("products", "3 * 04", "leading zero"),
        ("products", "3 *", "ends where a number is expected"),
        ("products", "3 * 4 5", "unexpected '5'"),
        ("products", "3 x 4", "unexpected character 'x'"),
        ("products", "__import__('os')", "unexpected character '_'"),
        ("basic_arithmetic", "( 3 + 4", "not closed"),
        ("basic_arithmetic", "3 / ( 2 - 2 )", "division by zero"),
        ("basic_arithmetic", "1 + " * 100 + "1", "longer than 200"),
        ("no_family", "1 + 1", "no expression grammar"),
    ],
)
def test_bad_expressions_are_refused_with_the_reason(family, text, reason):
    with pytest.raises(ValueError, match=reason):
        parse_expression(family, text)


def test_options_are_checked():
    with pytest.raises(ValueError, match="task_spec must be one of seed, expression"):
        ReasoningGymAdapter(families=["chain_sum@0"], task_spec="question")
    with pytest.raises(ValueError, match="not: count_bits"):
        ReasoningGymAdapter(families=["chain_sum@0", "count_bits@0"], task_spec="expression")


def test_a_written_task_has_its_measured_level_and_scores_like_an_item(adapter):
    task = adapter.parse_task(written("products", "12*3"), "products@1")
    assert task.prompt == "Solve the following multiplication: 12 * 3. Give only the result as your final answer."
    assert task.gold == {"family": "products", "level": 1, "expression": "12 * 3", "answer": "36"}
    assert adapter.family(task) == "products@1" and task.source == "generated"
    assert adapter.validate_task(task) == (True, "ok")
    assert adapter.score(task, Trajectory(final_answer="12 * 3 = 36")).value == 1.0
    assert adapter.score(task, Trajectory(final_answer="The answer is 37.")).value == 0.0
    hedge = adapter.score(task, Trajectory(final_answer="136"))  # holds the gold: official partial credit only
    assert hedge.value == 0.0 and hedge.breakdown["official"] == pytest.approx(2 / 3)
    assert adapter.reporting_adapter().score(task, Trajectory(final_answer="136")).value == pytest.approx(2 / 3)
    assert parse_expression("products", "3 * 4").terms == 2
    assert adapter.family(adapter.parse_task(written("products", "3 * 4"), "products@0")) == "products@0"
    assert adapter.family(adapter.parse_task(written("chain_sum", "1 + 2 + 3 + 4 + 5"), "chain_sum@3")) == "chain_sum@3"
    messages, score = replay_expert(adapter, task)
    assert score.value == 1.0 and messages[-1]["content"] == "12 * 3 = 36"


def test_the_level_step_and_the_ladder_bound_what_may_be_written(adapter):
    with pytest.raises(ValueError, match="level 3 is more than level_step=1 from the requested 'chain_sum@1'"):
        adapter.parse_task(written("chain_sum", "1 + 2 + 3 + 4 + 5"), "chain_sum@1")
    with pytest.raises(ValueError, match="fit no configured level"):
        adapter.parse_task(written("products", "123456 * 2"), "products@4")
    with pytest.raises(ValueError, match="not the requested family"):
        adapter.parse_task(written("chain_sum", "1 + 2"), "products@0")
    with pytest.raises(ValueError, match="unknown key"):
        adapter.parse_task({"family": "chain_sum", "level": 0, "seed": 3}, "chain_sum@0")
    with pytest.raises(ValueError, match="misses expression"):
        adapter.parse_task({"family": "chain_sum"}, "chain_sum@0")


def test_validation_refuses_inexact_division_tampering_and_held_out_questions(adapter):
    inexact = adapter.parse_task(written("basic_arithmetic", "7 / 2"), "basic_arithmetic@0")
    assert adapter.validate_task(inexact) == (False, "a division in the expression leaves a remainder")
    task = adapter.parse_task(written("chain_sum", "40 + 2"), "chain_sum@1")
    tampered = Task.from_dict({**task.to_dict(), "gold": {**task.gold, "answer": "41"}})
    assert adapter.validate_task(tampered) == (False, "the question or answer differs from what the expression gives")
    mislevelled = Task.from_dict({**task.to_dict(), "gold": {**task.gold, "level": 3}})
    assert adapter.validate_task(mislevelled) == (False, "the expression is of level 1, not 3")
    held_out = adapter.load_tasks("validation")[0]
    expression = generate_entry(*(held_out.gold[k] for k in ("family", "level", "seed")))["metadata"]["expression"]
    family = held_out.gold["family"]
    copied = adapter.parse_task(written(family, expression), f"{family}@{held_out.gold['level']}")
    assert copied.prompt == held_out.prompt
    assert adapter.validate_task(copied) == (False, "the question repeats a held-out test/validation item")


def test_generation_hooks_ask_for_and_constrain_an_expression(adapter):
    rng = np.random.default_rng(0)
    context = adapter.generation_context("products@1", rng, success={"products@1": 0.25})
    assert "level 1 (num_terms=2-3, num_digits=1-2): e.g. '15 * 43 * 75' -> '48375'; the agent solves 25%" in context
    assert '{"family": ..., "expression": ...}' in context and "seed" not in context
    assert adapter.task_schema["required"] == ["family", "expression"]
    for key in adapter.families():
        schema = adapter.generation_schema(key)
        pattern = schema["properties"]["expression"]["pattern"]
        examples = adapter.generation_examples(key, 4, rng)
        assert 1 <= len(examples) <= 4  # items of a level that measure lower are left out
        for example in examples:
            assert re.match(pattern, example["expression"]), (key, example)
            task = adapter.parse_task(example, key)
            ok, reason = adapter.validate_task(task)
            assert ok or "repeats a held-out" in reason or "remainder" in reason, reason


def test_the_schema_is_one_constrained_decoding_can_follow(adapter):
    """lm-format-enforcer accepts the schema (a pattern with no length bound) and keeps text inside it."""
    from lmformatenforcer import JsonSchemaParser

    def accepted(schema: dict, text: str) -> bool:
        parser = JsonSchemaParser(schema)
        for character in text:
            if character not in parser.get_allowed_characters():
                return False
            parser = parser.add_character(character)
        return parser.can_end()

    schema = adapter.generation_schema("chain_sum@1")  # levels 0-2: up to 4 terms of up to 3 digits
    assert accepted(schema, json.dumps(written("chain_sum", "120 - 7 + 3")))
    assert not accepted(schema, json.dumps(written("chain_sum", "1200 - 7")))
    assert not accepted(schema, json.dumps(written("chain_sum", "1 + 2 + 3 + 4 + 5")))
    assert not accepted(schema, json.dumps({"family": "chain_sum", "level": 1, "seed": 4}))


def test_env_plays_a_written_task():
    simulator = ScriptedSimulator(['{"family": "chain_sum", "expression": "9 + 9 + 9"}'], "chain_sum@1")
    env = gym.make(
        "GenEnv-ReasoningGym-v0", families=["chain_sum@0-2"], task_spec="expression", simulator=simulator, **SIZES
    )
    _, info = env.reset(seed=0)
    assert info["task"]["source"] == "generated" and info["family"] == "chain_sum@1"
    _, reward, terminated, _, _ = env.step("<answer>27</answer>")
    assert terminated and reward == 1.0


@pytest.mark.parametrize(
    ("family", "text", "steps"),
    [
        ("basic_arithmetic", "3 + 4 * 2", ["3 + 4 * 2", "3 + 8", "11"]),
        ("basic_arithmetic", "10 - ( 3 - 2 )", ["10 - ( 3 - 2 )", "10 - 1", "9"]),
        ("basic_arithmetic", "-33 / 11 + -22", ["-33 / 11 + -22", "-3 + -22", "-25"]),
        ("basic_arithmetic", "-( 3 - 5 ) * 2", ["-( 3 - 5 ) * 2", "2 * 2", "4"]),
        ("basic_arithmetic", "( -9 / 9 )", ["( -9 / 9 )", "-1"]),
        ("chain_sum", "12 + 34 - 5", ["12 + 34 - 5", "46 - 5", "41"]),
        ("products", "58 * 26", ["58 * 26", "58 * 20 + 58 * 6", "1160 + 58 * 6", "1160 + 348", "1508"]),
        ("products", "26 * 40", ["26 * 40", "1040"]),
        ("basic_arithmetic", "-41 - 12 * 34", ["-41 - 12 * 34", "-41 - ( 12 * 30 + 12 * 4 )",
                                               "-41 - ( 360 + 12 * 4 )", "-41 - ( 360 + 48 )", "-41 - 408", "-449"]),
    ],
)  # fmt: skip
def test_worked_steps_carry_out_one_operation_a_step(family, text, steps):
    assert worked_steps(family, text) == steps
    assert all(step_value(step) == int(steps[-1]) for step in steps[:-1])


def step_value(step: str) -> int:
    """The value of one step of a working (any of the four operations; ``-( -2 )`` is a step too)."""
    return parse_expression("basic_arithmetic", step if len(re.findall(r"\d+", step)) > 1 else f"0 + {step}").value


def test_worked_steps_of_every_family_item_keep_the_value():
    """Each step of the working of the families' own items is an expression of the same value (the grammar allows
    the steps: negative results are literals, parentheses stay where precedence needs them)."""
    for family in FAMILIES:
        for level in range(3):
            for seed in range(20):
                expression = generate_entry(family, level, seed)["metadata"]["expression"]
                steps = worked_steps(family, expression)
                value = parse_expression(family, expression).value
                assert steps[-1] == str(value) and steps[0] == parse_expression(family, expression).text
                for step in steps[1:-1]:
                    assert step_value(step) == value, (expression, step)
