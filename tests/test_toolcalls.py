import json
import keyword
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv.toolcalls import ToolCallParseError, parse_apibank_call, parse_tool_calls


def test_chatml_tagged_calls():
    text = (
        'ok <tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'
        '<tool_call>{"name": "g", "arguments": {}}</tool_call>'
    )
    calls = parse_tool_calls(text)
    assert [(c.name, c.arguments) for c in calls] == [("f", {"a": 1}), ("g", {})]


def test_unclosed_tag_and_string_arguments():
    calls = parse_tool_calls('<tool_call>{"name": "f", "arguments": "{\\"x\\": [1, 2]}"}')
    assert calls[0].arguments == {"x": [1, 2]}


def test_bare_json_inside_prose_and_openai_shape():
    calls = parse_tool_calls('Sure! {"name": "QueryStock", "arguments": {"stock_code": "AAPL"}} done.')
    assert calls[0].name == "QueryStock" and calls[0].arguments == {"stock_code": "AAPL"}
    calls = parse_tool_calls('[{"type": "function", "function": {"name": "f", "parameters": {"a": 2}}}]')
    assert calls[0].name == "f" and calls[0].arguments == {"a": 2}


def test_apibank_call_syntax():
    text = "API-Request: [ModifyRegistration(appointment_id='34567890', new_appointment_date='2023-03-26')]"
    (call,) = parse_tool_calls(text)
    assert call.name == "ModifyRegistration"
    assert call.arguments == {"appointment_id": "34567890", "new_appointment_date": "2023-03-26"}


def test_python_call_list_with_dotted_names_and_literals():
    calls = parse_tool_calls("[math.hypot(x=3, y=4.5), f(a=[1, 'b'], b={'k': None}, c=True)]")
    assert calls[0].name == "math.hypot" and calls[0].arguments == {"x": 3, "y": 4.5}
    assert calls[1].arguments == {"a": [1, "b"], "b": {"k": None}, "c": True}


def test_apibank_regex_fallback_keeps_official_semantics():
    # not valid Python (nested quotes): API-Bank's own regex reads the value up to the next quote
    (call,) = parse_tool_calls("[AddMeeting(attendees='['a','b']', meeting_topic='x')]")
    assert call.name == "AddMeeting" and call.arguments["attendees"] == "["


@pytest.mark.parametrize(
    "tail",
    [" and then [GetToday()]", " [GetToday()]", ", [GetToday()]", " + [GetToday()] is next", "\n[GetToday()]"],
)
def test_leading_call_list_survives_trailing_text_python_can_read(tail):
    # "[f(...)] and then [g()]" is valid Python (a subscript), but not a call list: the leading call is kept
    (call,) = parse_tool_calls("[GetUserToken(username='a', password='b')]" + tail)
    assert call.name == "GetUserToken" and call.arguments == {"username": "a", "password": "b"}


def test_leading_call_found_among_many_closing_brackets():
    # its cost (once quadratic) is measured in performance/step_fuzz.py, not asserted here
    (call,) = parse_tool_calls("[f(a=1)]" + " then g(x)]" * 3000)
    assert (call.name, call.arguments) == ("f", {"a": 1})


def test_plain_text_is_an_answer():
    assert parse_tool_calls("The weather is nice [citation needed].") == []


@pytest.mark.parametrize(
    "text, kind",
    [
        ('<tool_call>{"name": "f", "arguments": </tool_call>', "malformed_json"),
        ("<tool_call></tool_call>", "malformed_json"),
        ('{"name": 3, "arguments": {}}', "malformed_call"),
        ('{"name": "f", "arguments": [1]}', "malformed_call"),
        ("[f(1, 2)]", "malformed_call"),
        ("[os.system(cmd=__import__('os').getcwd())]", "malformed_call"),
        ("[f(**{'a': 1})]", "malformed_call"),
    ],
)
def test_malformed_calls_raise_a_kind(text, kind):
    with pytest.raises(ToolCallParseError) as error:
        parse_tool_calls(text)
    assert error.value.kind == kind


def test_code_is_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    text = f"[f(a=open({str(marker)!r}, 'w').write('x'))]"
    with pytest.raises(ToolCallParseError):
        parse_tool_calls(text)
    assert not marker.exists()


def test_deep_nesting_does_not_crash():
    for text in ["[" * 100_000, '{"name": "f", "arguments": ' + "[" * 100_000, "[f(a=" + "[" * 50_000 + ")]"]:
        try:
            parse_tool_calls(text)
        except ToolCallParseError:
            pass


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_random_text_never_raises_anything_else(text):
    try:
        calls = parse_tool_calls(text)
    except ToolCallParseError as error:
        assert error.kind
    else:
        assert all(isinstance(c.name, str) and isinstance(c.arguments, dict) for c in calls)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(
    # Python keywords (`is`, `or`, `None`, ...) can be neither call names nor keyword-argument names in the
    # Python-call syntax: `[is(_=None)]` is not Python, so it is read by API-Bank's text extraction (next test)
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True).filter(lambda n: not keyword.iskeyword(n)),
    st.dictionaries(
        st.from_regex(r"[a-z_]{1,8}", fullmatch=True).filter(lambda k: not keyword.iskeyword(k)),
        json_values,
        max_size=4,
    ),
)
def test_round_trip_json_and_python_syntax(name, arguments):
    tagged = f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"
    assert parse_tool_calls(tagged)[0].arguments == arguments
    python = "[" + name + "(" + ", ".join(f"{k}={v!r}" for k, v in arguments.items()) + ")]"
    (call,) = parse_tool_calls(python)
    assert call.name == name and call.arguments == arguments


def test_a_call_named_by_a_python_keyword_is_read_as_api_bank_text():
    (call,) = parse_tool_calls("[is(_=None, n=3)]")  # not Python: API-Bank's extraction, every value a string
    assert call.name == "is" and call.arguments == {"_": "None", "n": "3"}


def test_source_code_arguments_of_java_and_javascript_calls():
    text = '[Store.save(map=new HashMap<String, Object>() {{ put("k", 1); }}, n=5L, s="a, b"), util.f(x=[1, 2])]'
    first, second = parse_tool_calls(text)
    assert first.name == "Store.save" and second.name == "util.f"
    assert first.arguments == {"map": 'new HashMap<String, Object>() {{ put("k", 1); }}', "n": "5L", "s": "a, b"}
    assert second.arguments == {"x": "[1, 2]"}  # the whole list is not Python, so values stay source text
    with pytest.raises(ToolCallParseError):
        parse_tool_calls("[Store.save(map=new HashMap<>(), ]")


def test_java_style_names_as_values_are_kept_as_source_text():
    calls = parse_tool_calls("[validateUserInput(inputField=userInputField, isComplete=true, mode=Mode.FAST)]")
    assert [(c.name, c.arguments) for c in calls] == [
        ("validateUserInput", {"inputField": "userInputField", "isComplete": "true", "mode": "Mode.FAST"})
    ]
    (call,) = parse_tool_calls('[f(options={"stop": true}, ids=[a, -1])]')
    assert call.arguments == {"options": '{"stop": true}', "ids": "[a, -1]"}
    for code in ("[f(a=g(1))]", "[f(a=x + 1)]", "[os.system(cmd=__import__('os').getcwd())]"):
        with pytest.raises(ToolCallParseError):  # code that computes: still refused
            parse_tool_calls(code)


# API-Bank's own patterns (evaluator + ToolManager), the reference the linear-time extraction must equal.
_UPSTREAM_CALL = re.compile(r"\[(\w+)\((.*)\)\]")
_UPSTREAM_PARAM = re.compile(r"""(\w+)\s*=\s*['"](.+?)['"]|(\w+)\s*=\s*(\[.*\])|(\w+)\s*=\s*(\w+)""")
_CALL_PIECES = ["[", "]", "(", ")", "[a(", "[Ab_1(", ")]", "a=", "b = ", "c=[", "'", '"', "\n", ", ", "x1", " "]
_CALL_TEXT = st.lists(st.sampled_from(_CALL_PIECES), max_size=24).map("".join)


@settings(max_examples=600, deadline=None)
@given(_CALL_TEXT)
def test_apibank_extraction_equals_upstream_patterns(text):
    upstream = _UPSTREAM_CALL.search(text)
    call = parse_apibank_call(text)
    if upstream is None:
        assert call is None
        return
    expected = {}
    for groups in _UPSTREAM_PARAM.findall(upstream.group(2)):
        expected[groups[0] or groups[2] or groups[4]] = groups[1] or groups[3] or groups[5]
    assert (call.name, call.arguments, call.raw) == (upstream.group(1), expected, upstream.group(0))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # once quadratic (2-30 s); their cost is measured in performance/step_fuzz.py, not asserted here
        ("[f(" + "a" * 32000 + " b)]", [("f", {})]),  # API-Bank's regex reads no parameter in it
        ("[" + " " * 32000, []),
        ("{" + " " * 32000 + '"name"', []),
        ("[a(" * 10000, "malformed_call"),
        ("[" + ", ".join("f(a=1)" for _ in range(4000)) + "]", [("f", {"a": 1})] * 4000),
    ],
)
def test_hostile_actions_parse_to_calls_or_a_clean_error(text, expected):
    if isinstance(expected, str):
        with pytest.raises(ToolCallParseError) as error:
            parse_tool_calls(text)
        assert error.value.kind == expected
    else:
        assert [(c.name, c.arguments) for c in parse_tool_calls(text)] == expected


def test_source_segments_count_utf8_columns():
    (call, other) = parse_tool_calls("[f(city='Zürich', note='é'), g(\n  a='ü')]")
    assert call.raw == "f(city='Zürich', note='é')" and other.raw == "g(\n  a='ü')"
