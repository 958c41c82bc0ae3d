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
