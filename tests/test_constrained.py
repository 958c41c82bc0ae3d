import json

from genenv.llm.constrained import json_schema_constraint
from genenv.llm.generation import SamplingConfig, generate_chat

SCHEMAS = [
    {
        "type": "object",
        "properties": {"kind": {"type": "string", "enum": ["add", "sub"]}, "ok": {"type": "boolean"}},
        "required": ["kind", "ok"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 6}},
        "required": ["name"],
        "additionalProperties": False,
    },
]


def test_random_model_writes_schema_valid_json_when_constrained(tiny_policy):
    conversations = [
        [{"role": "system", "content": "Write JSON."}, {"role": "user", "content": f"task {i}"}] for i in range(2)
    ]
    allowed = json_schema_constraint(tiny_policy.tokenizer, SCHEMAS)
    texts = generate_chat(
        tiny_policy,
        conversations,
        sampling=SamplingConfig(max_new_tokens=160, temperature=1.0),
        generator_seed=0,
        allowed_tokens=allowed,
    )
    first, second = (json.loads(text) for text in texts)
    assert set(first) == {"kind", "ok"} and first["kind"] in ("add", "sub") and isinstance(first["ok"], bool)
    assert set(second) == {"name"} and isinstance(second["name"], str) and len(second["name"]) <= 6


def test_unconstrained_random_model_does_not(tiny_policy):
    conversations = [[{"role": "system", "content": "Write JSON."}, {"role": "user", "content": "task"}]]
    (text,) = generate_chat(
        tiny_policy, conversations, sampling=SamplingConfig(max_new_tokens=24, temperature=1.0), generator_seed=0
    )
    try:
        json.loads(text)
    except ValueError:
        return
    raise AssertionError(f"a random model wrote valid JSON by chance: {text!r}")


def test_a_row_whose_constraint_admits_no_token_may_only_end():
    from genenv.llm.constrained import ended_when_stuck

    stuck_row = 1
    allowed = ended_when_stuck(lambda batch_id, ids: [] if batch_id == stuck_row else [5, 7], end=[2])
    assert allowed(0, [1]) == [5, 7]  # a row with choices keeps them
    assert allowed(stuck_row, [1]) == [2]  # a dead end ends the row instead of raising in generate


SEED_SCHEMA = {
    "type": "object",
    "properties": {
        "level": {"type": "integer", "enum": [0, 1, 2]},
        "seed": {"type": "integer", "minimum": 0, "maximum": 9999},
    },
    "required": ["level", "seed"],
    "additionalProperties": False,
}


def test_integer_bounds_read_from_a_schema_whose_numbers_are_all_bounded():
    from genenv.llm.constrained import integer_bounds

    assert integer_bounds(SEED_SCHEMA) == (4, False)
    signed = {"type": "array", "items": {"type": "integer", "minimum": -50, "maximum": 7}}
    assert integer_bounds(signed) == (2, True)
    assert integer_bounds({"type": "integer", "enum": [3, 120]}) == (3, False)
    # one unbounded number (or a float, or none at all) leaves decoding as lm-format-enforcer has it
    unbounded = {**SEED_SCHEMA, "properties": {**SEED_SCHEMA["properties"], "n": {"type": "integer", "minimum": 0}}}
    assert integer_bounds(unbounded) is None
    assert integer_bounds({"type": "number", "minimum": 0, "maximum": 1}) is None
    # a property called "type" is a schema, not a JSON type
    named_type = {"type": "object", "properties": {"type": {"type": "integer", "minimum": 1, "maximum": 12}}}
    assert integer_bounds(named_type) == (2, False)
    assert integer_bounds(SCHEMAS[1]) is None


def test_bounded_integers_stop_at_their_digits_without_sign_fraction_or_exponent():
    from genenv.llm.constrained import BoundedIntegers, schema_parser

    parser = schema_parser(SEED_SCHEMA)
    assert isinstance(parser, BoundedIntegers)
    for character in '{"level": 1, "seed": ':
        parser = parser.add_character(character)
    assert "-" not in parser.get_allowed_characters() and "7" in parser.get_allowed_characters()
    for character in "123":
        parser = parser.add_character(character)
    allowed = parser.get_allowed_characters()
    assert "4" in allowed and not set(allowed) & set(".eE-")
    parser = parser.add_character("4")
    allowed = parser.get_allowed_characters()
    assert not set(allowed) & set("0123456789.eE") and "}" in allowed  # four digits: the number must end
    parser = parser.add_character("}")
    assert parser.can_end()
    plain = schema_parser(SCHEMAS[0])
    assert not isinstance(plain, BoundedIntegers)


def test_a_random_model_writes_bounded_integers_when_constrained(tiny_policy):
    conversations = [[{"role": "system", "content": "Write JSON."}, {"role": "user", "content": f"task {i}"}]
                     for i in range(6)]  # fmt: skip
    texts = generate_chat(
        tiny_policy,
        conversations,
        sampling=SamplingConfig(max_new_tokens=120, temperature=1.0),
        generator_seed=0,
        allowed_tokens=json_schema_constraint(tiny_policy.tokenizer, [SEED_SCHEMA] * 6),
    )
    for text in texts:
        spec = json.loads(text)
        assert spec["level"] in (0, 1, 2) and isinstance(spec["seed"], int) and 0 <= spec["seed"] <= 9999, text
