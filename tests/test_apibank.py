"""API-Bank adapter: conformance with the gold data, robustness, scoring, generated tasks."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from genenv.benchmarks.apibank import APIBankAdapter
from genenv.benchmarks.apibank.apis_lv12 import calculate
from genenv.benchmarks.apibank.generation import ungrounded_arguments
from genenv.benchmarks.base import DataNotFoundError, Task, ToolCall, Trajectory, Turn, get_benchmark
from genenv.toolcalls import parse_apibank_call

DATA = Path(os.environ.get("GENENV_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data")) / "apibank"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"API-Bank data not found at {DATA}")

#: Gold calls that do not replay as correct, per file, with the MiniLM ToolSearcher (the
#: default when its packages are installed). Empty: every gold call reproduces. Each fix
#: that made this so is documented in genenv/benchmarks/apibank/adapter.py.
EXPECTED_EXCEPTIONS: dict[str, list[str]] = {"level-1-api": [], "level-2-api": [], "level-3": []}

#: With history_replay="none" (upstream: every sample on untouched databases) these
#: level-1 gold calls fail, because they depend on earlier calls of their dialogue.
UPSTREAM_STATELESS_FAILURES = {
    "apibank-l1-api-0036": "ForgotPassword",  # 'Verification Code' needs the first step
    "apibank-l1-api-0037": "GetUserToken",  # new password set by ForgotPassword
    "apibank-l1-api-0039": "RegisterUser",  # user deleted earlier in the dialogue
    "apibank-l1-api-0046": "ForgotPassword",
    "apibank-l1-api-0047": "GetUserToken",
    "apibank-l1-api-0191": "ForgotPassword",
    "apibank-l1-api-0202": "QueryRegistration",  # appointment made earlier in the dialogue
    "apibank-l1-api-0327": "ForgotPassword",
}


@pytest.fixture(scope="module")
def adapter() -> APIBankAdapter:
    """genenv mode: every deviation on (the structured-gold conformance figures hold for it)."""
    return APIBankAdapter(data_dir=DATA, scoring="genenv")


@pytest.fixture(scope="module")
def tasks(adapter):
    return {split: adapter.load_tasks(split) for split in ("level-1-api", "level-2-api", "level-3")}


def replay(adapter: APIBankAdapter, task: Task, calls=None, final_answer=None):
    """Run ``calls`` (default: the gold calls) through start/execute and score them."""
    state = adapter.start(task)
    turns = []
    for c in task.gold["calls"] if calls is None else calls:
        call = ToolCall(name=c["name"], arguments=c["arguments"])
        turns.append(Turn(action="", calls=[call], results=[adapter.execute(state, call)]))
    return adapter.score(task, Trajectory(turns=turns, final_answer=final_answer))


def failures(adapter, task_list):
    out, correct, total = [], 0, 0
    for task in task_list:
        score = replay(adapter, task)
        correct += score.breakdown["api_correct"]
        total += score.breakdown["api_total"]
        for i, bucket in enumerate(score.breakdown["buckets"]):
            if bucket != "CORRECT":
                out.append(f"{task.task_id}#{i} {task.gold['calls'][i]['name']} {bucket}")
    return out, correct, total


# -- data and tasks ---------------------------------------------------------------------


def test_registered_and_splits(adapter, tasks):
    assert isinstance(get_benchmark("apibank", data_dir=DATA), APIBankAdapter)
    assert adapter.splits[:3] == ("level-1", "level-2", "level-3")
    level1 = adapter.load_tasks("level-1")
    assert len(level1) == 399 + 375
    assert len(adapter.load_tasks("level-2")) == 135 + 103
    assert len(tasks["level-1-api"]) == 399 and len(tasks["level-2-api"]) == 135
    assert len(tasks["level-3"]) == 50
    assert sum(len(t.gold["calls"]) for t in tasks["level-3"]) == 245
    with pytest.raises(ValueError):
        adapter.load_tasks("level-4")


def test_task_structure(adapter, tasks):
    task = tasks["level-1-api"][0]
    assert set(task.gold) == {"calls", "response"} and task.gold["response"] is None
    call = task.gold["calls"][0]
    assert set(call) == {"name", "arguments", "result"}
    assert call["name"] == "ModifyRegistration" and call["result"]["output"] == "success"
    meta = task.metadata
    assert meta["level"] == "level-1" and meta["kind"] == "api" and meta["sample_id"] == 0
    assert meta["dialogue"] == "ModifyRegistration-QueryHealthData-CancelRegistration-level-2-2.jsonl"
    assert task.prompt.startswith("User: Can you please modify my appointment")
    assert "Generate API Request" not in task.prompt
    assert adapter.family(task) == "ModifyRegistration"
    # the gold call is the sample's expected_output
    sample = json.loads((DATA / "test-data/level-1-api.json").read_text())[0]
    parsed = parse_apibank_call(sample["expected_output"])
    assert (parsed.name, parsed.arguments) == (call["name"], call["arguments"])
    response = adapter.load_tasks("level-1-response")[0]
    assert response.gold == {"calls": [], "response": "Your appointment has been modified successfully."}
    assert adapter.family(response) == "response:ModifyRegistration"
    l3 = tasks["level-3"][0]
    assert l3.prompt == "User: Query meeting of John and send email reminder to john@example.com.\n"
    assert l3.gold["calls"][0]["name"] == "ToolSearcher" and l3.gold["response"]
    assert adapter.family(l3) == "level-3:QueryMeeting"
    Task.from_dict(json.loads(json.dumps(task.to_dict())))  # JSON round trip


def test_tool_schemas(adapter, tasks):
    names = [t["function"]["name"] for t in adapter.tools(tasks["level-1-api"][0])]
    assert names == ["QueryHealthData", "CancelRegistration", "ModifyRegistration"]
    hotel = adapter.tool_schema("BookHotel")["function"]["parameters"]
    assert hotel["properties"]["room_count"]["type"] == "integer"
    assert hotel["required"] == [
        "hotel_name",
        "check_in_time",
        "check_out_time",
        "room_count",
        "adult_count",
        "child_count",
    ]
    meeting = adapter.tool_schema("AddMeeting")["function"]["parameters"]["properties"]["attendees"]
    assert meeting == {"type": "array", "items": {"type": "string"}, "description": meeting["description"]}
    assert adapter.tool_schema("TimedSwitch")["function"]["parameters"]["properties"]["on"]["type"] == "boolean"
    assert adapter.tool_schema("ModifyRegistration")["function"]["parameters"]["required"] == ["appointment_id"]
    assert (
        adapter.tool_schema("TaxCalculator", "level-3")["function"]["parameters"]["properties"]["salary"]["type"]
        == "number"
    )
    for split in ("level-2-api", "level-3"):
        schemas = adapter.tools(tasks[split][0])
        assert [s["function"]["name"] for s in schemas] == ["ToolSearcher"]
        assert schemas[0]["type"] == "function" and schemas[0]["function"]["parameters"]["type"] == "object"


# -- conformance --------------------------------------------------------------------------


@pytest.mark.parametrize("split", ["level-1-api", "level-2-api", "level-3"])
def test_gold_calls_replay_as_correct(adapter, tasks, split):
    failed, correct, total = failures(adapter, tasks[split])
    print(f"{split}: {correct}/{total} gold calls correct (ToolSearcher backend: {adapter.toolsearcher_backend_name})")
    for line in failed:
        print("  ", line)
    if adapter.toolsearcher_backend_name == "minilm":
        assert failed == EXPECTED_EXCEPTIONS[split]
    else:  # lexical fallback: only ToolSearcher choices may differ from the recording
        assert all(" ToolSearcher " in line for line in failed), failed
        if split == "level-2-api":
            assert len(failed) <= 15
    non_toolsearcher = [line for line in failed if " ToolSearcher " not in line]
    assert not non_toolsearcher
    if adapter.toolsearcher_backend_name == "minilm":
        assert correct / total >= 0.99


def test_upstream_stateless_mode_lists_its_failures(tasks):
    stateless = APIBankAdapter(data_dir=DATA, scoring="genenv", deviations={"history_replay": False})
    failed, correct, total = failures(stateless, tasks["level-1-api"])
    assert {line.split("#")[0]: line.split()[1] for line in failed} == UPSTREAM_STATELESS_FAILURES
    assert (correct, total) == (391, 399)


def test_strict_upstream_delete_meeting_rule(tasks):
    strict = APIBankAdapter(data_dir=DATA, scoring="genenv", deviations={"delete_meeting_rule": False})
    meetings = [t for t in tasks["level-1-api"] if t.gold["calls"][0]["name"] == "DeleteMeeting"]
    assert meetings
    for task in meetings:
        assert replay(strict, task).breakdown["buckets"] == ["KEY_ERROR"]


def test_toolsearcher_agreement(adapter, tasks):
    """ToolSearcher picks the recorded API for every gold level-2 keyword (MiniLM backend)."""
    searches = [t for t in tasks["level-2-api"] if t.gold["calls"][0]["name"] == "ToolSearcher"]
    assert len(searches) == 45
    agree = sum(replay(adapter, t).value == 1.0 for t in searches)
    print(f"ToolSearcher agreement: {agree}/45 ({adapter.toolsearcher_backend_name})")
    assert agree == 45 if adapter.toolsearcher_backend_name == "minilm" else agree >= 30
    lexical = APIBankAdapter(data_dir=DATA, toolsearcher_backend="lexical", scoring="genenv")
    assert sum(replay(lexical, t).value == 1.0 for t in searches) >= 30


def _perturb(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return "zzqx perturbed value"
        return str(int(number) + 1) if number.is_integer() and "." not in value else str(number + 1.5)
    if isinstance(value, list):
        return ["zzqx perturbed value"]
    return {"zzqx": "perturbed"}


def _searched_api(call) -> str:
    output = call["result"]["output"]
    return (output[-1] if isinstance(output, list) else output)["name"]


#: arguments a rule ignores on purpose (upstream rules): perturbing them is not an error
IGNORED_BY_RULE = {
    ("level-1", "DeleteAgenda"): {"token", "content", "location"},
    ("level-1", "DeleteReminder"): {"token", "content"},
    ("level-1", "DeleteMeeting"): {"token", "meeting_topic", "end_time", "location", "attendees"},
    ("level-1", "RecordHealthData"): {"health_data"},
    ("level-3", "EmailReminder"): {"content"},
}


def test_perturbed_argument_scores_incorrect(adapter, tasks):
    checked, passed_anyway = 0, []
    for task_list in tasks.values():
        for task in task_list:
            level = task.metadata["level"]
            for i, call in enumerate(task.gold["calls"]):
                ignored = IGNORED_BY_RULE.get(("level-3" if level == "level-3" else "level-1", call["name"]), set())
                keys = [k for k in call["arguments"] if k not in ignored]
                if not keys:
                    continue
                key = keys[(i + len(task.task_id)) % len(keys)]
                value = _perturb(call["arguments"][key])
                if call["name"] == "ToolSearcher":  # any text finds *some* API: name another one
                    target = _searched_api(call)
                    value = "TravelStatus" if level == "level-3" and target != "TravelStatus" else "GetToday"
                    if target == value:
                        value = "Calculator"
                calls = [dict(c) for c in task.gold["calls"]]
                calls[i] = {"name": call["name"], "arguments": {**call["arguments"], key: value}}
                checked += 1
                if replay(adapter, task, calls).breakdown["buckets"][i] == "CORRECT":
                    passed_anyway.append(f"{task.task_id}#{i} {call['name']}.{key}")
    print(f"perturbed {checked} gold calls; still correct: {passed_anyway}")
    assert checked > 600
    assert not passed_anyway


# -- robustness --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "kind"),
    [
        ("NoSuchApi", {"x": "1"}, "unknown_tool"),
        (None, {}, "unknown_tool"),
        (12, {}, "unknown_tool"),
        ("QueryStock", {"stock_code": "AAPL", "date": "2022-01-01", "bogus": "1"}, "unknown_argument"),
        ("QueryStock", {"stock_code": "AAPL"}, "missing_argument"),
        (
            "BookHotel",
            {
                "hotel_name": "Hilton",
                "check_in_time": "2023-01-01",
                "check_out_time": "2023-01-02",
                "room_count": "two",
                "adult_count": "1",
                "child_count": "0",
            },
            "wrong_type",
        ),
        (
            "AddMeeting",
            {
                "token": "t",
                "meeting_topic": "x",
                "start_time": "2023-01-01 10:00:00",
                "end_time": "2023-01-01 11:00:00",
                "location": "a",
                "attendees": "[unclosed",
            },
            "wrong_type",
        ),
        ("QueryStock", {"stock_code": {"a": 1}, "date": "2022-01-01"}, "wrong_type"),
        ("Calculator", {"formula": "1" * 1_000_000}, "wrong_type"),
        ("SearchEngine", {"keyword": "x" * 1_000_000}, "wrong_type"),
        ("ToolSearcher", {"keywords": "x " * 500_000}, "wrong_type"),
        (
            "AddAgenda",
            {"token": "a9s8d7f6g5h4j3k2l1", "content": "é" * 1_000_000, "time": "2023-01-01 10:00:00", "location": "x"},
            "wrong_type",
        ),
        ("QueryStock", ["AAPL", "2022-01-01"], "wrong_type"),
        ("QueryStock", 42, "wrong_type"),
        ("QueryStock", "garbage without any structure", "wrong_type"),
        ("GetUserToken", {"username": "JohnDoe", "password": "wrong"}, "execution_error"),
        ("Calculator", {"formula": "1/0"}, "execution_error"),
    ],
)
def test_malformed_calls_never_raise(adapter, tasks, name, arguments, kind):
    state = adapter.start(tasks["level-1-api"][0])
    result = adapter.execute(state, ToolCall(name=name, arguments=arguments))  # type: ignore[arg-type]
    assert result.error == kind
    assert isinstance(result.observation, str) and len(result.observation) <= 7000


def test_garbage_never_raises(adapter, tasks):
    rng = random.Random(0)
    values = [
        None,
        "",
        " ",
        "0",
        "-1",
        "1e999",
        "True",
        "[]",
        "[{}]",
        "{",
        "'; DROP",
        "__import__('os')",
        [],
        {},
        [1, [2, [3]]],
        {"a": None},
        3.5,
        -7,
        True,
        "9" * 5000,
        "2023-13-45 99:99:99",
    ]
    state = adapter.start(tasks["level-1-api"][0])
    level3 = adapter.start(tasks["level-3"][0])
    for impl_state, specs in ((state, adapter.data.lv12_specs), (level3, adapter.data.lv3_specs)):
        for api, spec in specs.items():
            params = list(spec["input_parameters"]) or ["x"]
            for _ in range(4):
                args = {p: rng.choice(values) for p in params if rng.random() < 0.9}
                result = adapter.execute(impl_state, ToolCall(name=api, arguments=args))
                assert isinstance(result.observation, str)
                json.dumps(result.output)


def test_text_arguments_are_coerced_like_toolmanager(adapter, tasks):
    state = adapter.start(tasks["level-1-api"][0])
    call = parse_apibank_call(
        "API-Request: [BookHotel(hotel_name='Hilton', check_in_time='2024-03-14', check_out_time='2024-03-18', "
        "room_count='2', adult_count='2', child_count='1')]"
    )
    result = adapter.execute(state, call)
    assert result.error is None and result.output["input"]["room_count"] == 2
    call = parse_apibank_call(
        "[RecordHealthData(user_id='12345', time='2023-04-11 10:30:00', "
        "health_data=[{'name': 'blood_pressure', 'value': '120/80'}])]"
    )
    result = adapter.execute(state, call)
    assert result.error is None and result.output["input"]["health_data"][0]["name"] == "blood_pressure"
    result = adapter.execute(
        state, ToolCall(name="TimedSwitch", arguments={"name": "tv", "time": "2023-03-20 13:00:00", "on": "False"})
    )
    assert result.output["input"]["on"] is False
    typed = adapter.execute(state, ToolCall(name="CancelRegistration", arguments={"appointment_id": 12345678}))
    assert typed.output["input"]["appointment_id"] == "12345678"


def test_calculator_without_eval():
    assert calculate("(1 + 2) * 3") == 9.0
    assert calculate("25*3+7/3") == 25 * 3 + 7 / 3
    assert calculate("10-2-3") == 5.0
    for bad in ("", "1", "2**3", "__import__('os')", "1+", "-3+2", "((1+2)*3)", ")1+2(", "9" * 3000 + "+1"):
        with pytest.raises(Exception):  # noqa: B017 - upstream turns any of these into an exception text
            calculate(bad)


def test_episodes_are_isolated(adapter, tasks):
    before = json.dumps(adapter.data.init_db["Agenda"], sort_keys=True, default=str)
    task = tasks["level-1-api"][0]
    add = {"token": "a9s8d7f6g5h4j3k2l1", "content": "Isolation test", "time": "2023-05-01 10:00:00", "location": "X"}
    query = {"token": "a9s8d7f6g5h4j3k2l1", "content": "Isolation test", "time": "2023-05-01 10:00:00", "location": "X"}
    first = adapter.start(task)
    assert adapter.execute(first, ToolCall("AddAgenda", add)).output["output"] == "success"
    assert adapter.execute(first, ToolCall("QueryAgenda", query)).output["output"]["content"] == "Isolation test"
    fresh = adapter.start(task)
    assert adapter.execute(fresh, ToolCall("QueryAgenda", query)).output["exception"]
    assert json.dumps(adapter.data.init_db["Agenda"], sort_keys=True, default=str) == before


def test_done_and_response_scoring(adapter, tasks):
    api_task = tasks["level-1-api"][0]
    state = adapter.start(api_task)
    assert adapter.execute(state, ToolCall("NoSuchApi", {})).done
    response_task = adapter.load_tasks("level-1-response")[0]
    state = adapter.start(response_task)
    assert not adapter.execute(state, ToolCall("GetToday", {})).done
    gold = response_task.gold["response"]
    assert adapter.score(response_task, Trajectory(final_answer=gold)).value == pytest.approx(1.0)
    assert adapter.score(response_task, Trajectory(final_answer="AI: " + gold)).value == pytest.approx(1.0)
    assert adapter.score(response_task, Trajectory(final_answer=None)).value == 0.0
    score = adapter.score(response_task, Trajectory(final_answer="Your appointment was not found."))
    assert 0.0 < score.value < 1.0 and score.breakdown["rouge_l"] == score.value
    l3 = tasks["level-3"][0]
    state = adapter.start(l3)
    assert not any(adapter.execute(state, ToolCall(c["name"], c["arguments"])).done for c in l3.gold["calls"])
    full = replay(adapter, l3, final_answer=l3.gold["response"])
    assert full.value == 1.0 and full.breakdown["rouge_l"] == pytest.approx(1.0) and full.breakdown["sample_correct"]
    empty = adapter.score(api_task, Trajectory())
    assert empty.value == 0.0 and empty.breakdown["buckets"] == ["NO_API_CALL"]
    wrong = replay(adapter, api_task, [{"name": "GetToday", "arguments": {}}])
    assert wrong.breakdown["buckets"] == ["API_NAME_MISMATCH"]


def test_score_without_step_results_reexecutes(adapter, tasks):
    task = tasks["level-1-api"][0]
    call = task.gold["calls"][0]
    trajectory = Trajectory(turns=[Turn(action="", calls=[ToolCall(call["name"], call["arguments"])])])
    assert adapter.score(task, trajectory).value == 1.0


# -- data errors ------------------------------------------------------------------------


def test_missing_data_dir_names_files_and_setting(tmp_path):
    missing = APIBankAdapter(data_dir=tmp_path / "nowhere")
    with pytest.raises(DataNotFoundError) as err:
        missing.load_tasks("level-1")
    message = str(err.value)
    assert "test-data/level-1-api.json" in message and "init_database/Account.json" in message
    assert "GENENV_DATA_DIR" in message and "DAMO-ConvAI" in message
    with pytest.raises(DataNotFoundError):
        missing.families() and missing.generation_context("QueryStock", random.Random(0))


# -- generated tasks --------------------------------------------------------------------


def test_the_simulator_is_shown_only_examples_that_would_pass_validation(adapter):
    """Requests in API-Bank's training split often leave values to earlier turns; shown as worked examples, those
    taught the simulator to write tasks no agent could solve. Only grounded ones are shown, gold call first, and the
    prompt states the rule."""
    accounts = adapter.data.init_db["Account"]
    shown = adapter._training_examples()
    assert 0 < len(shown) < len(adapter.data.training_api_samples)
    assert all(not ungrounded_arguments(e["request"], e["gold_call"]["arguments"], accounts) for e in shown)
    context = adapter.generation_context("AddAgenda", random.Random(0))
    assert "must state every argument value" in context
    assert "Put the token of one of these accounts in the gold call" in context
    assert "token of one" not in adapter.generation_context("QueryStock", random.Random(0))  # no token there
    schema = adapter.generation_schema("AddAgenda")
    assert list(schema["properties"]) == ["api", "gold_call", "request"]


def test_generated_task_roundtrip(adapter):
    families = adapter.families()
    assert "QueryStock" in families and "AddAgenda" in families
    assert not {"Dictionary", "Translate", "ToolSearcher", "CheckToken"} & set(families)
    context = adapter.generation_context("AddAgenda", random.Random(1))
    assert "AddAgenda" in context and "token" in context
    tokens = [rec["token"] for rec in adapter.data.init_db["Account"].values()]
    assert any(tok in context for tok in tokens)
    examples = adapter.generation_examples("QueryStock", 3, random.Random(2))
    assert len(examples) == 3
    for ex in examples:
        assert list(ex) == ["api", "gold_call", "request"] and ex["gold_call"]["name"] == ex["api"]
        assert isinstance(ex["gold_call"]["arguments"], dict) and ex["request"]
    code = sorted(adapter.data.init_db["Stock"])[0]
    dates = sorted(adapter.data.init_db["Stock"][code])
    obj = {
        "api": "QueryStock",
        "request": f"What was the price of {code} stock on {dates[0]}?",
        "gold_call": {"name": "QueryStock", "arguments": {"stock_code": code, "date": dates[0]}},
    }
    task = adapter.parse_task(obj, "QueryStock")
    assert task.source == "generated" and task.benchmark == "apibank"
    assert adapter.family(task) == "QueryStock"
    assert [t["function"]["name"] for t in adapter.tools(task)] == ["QueryStock"]
    ok, reason = adapter.validate_task(task)
    assert ok, reason
    result = task.gold["calls"][0]["result"]
    assert result["exception"] is None and result["output"] is not None
    task = Task.from_dict(json.loads(json.dumps(task.to_dict())))
    assert replay(adapter, task).value == 1.0
    bad = [{"name": "QueryStock", "arguments": {"stock_code": code, "date": dates[1]}}]
    assert replay(adapter, task, bad).value == 0.0
    token_task = adapter.parse_task(
        {
            "api": "AddAgenda",
            "request": "My token is a9s8d7f6g5h4j3k2l1. Add 'Dentist' on 2023-04-02 09:00:00 at City Clinic.",
            "gold_call": {
                "name": "AddAgenda",
                "arguments": {
                    "token": "a9s8d7f6g5h4j3k2l1",
                    "content": "Dentist",
                    "time": "2023-04-02 09:00:00",
                    "location": "City Clinic",
                },
            },
        }
    )
    assert [t["function"]["name"] for t in adapter.tools(token_task)] == ["GetUserToken", "AddAgenda"]
    assert adapter.validate_task(token_task)[0]


@pytest.mark.parametrize(
    "obj",
    [
        "not an object",
        {"api": "QueryStock", "gold_call": {"name": "QueryStock", "arguments": {}}},
        {"api": "QueryStock", "request": "  ", "gold_call": {"name": "QueryStock", "arguments": {}}},
        {"api": "QueryStock", "request": "hi", "gold_call": "QueryStock(stock_code='A')"},
        {"api": "QueryStock", "request": "hi", "gold_call": {"name": "NoSuchApi", "arguments": {}}},
        {"api": "Wiki", "request": "hi", "gold_call": {"name": "QueryStock", "arguments": {}}},
        {"api": "QueryStock", "request": "hi", "gold_call": {"name": "QueryStock", "arguments": {"ticker": "A"}}},
        {"api": "QueryStock", "request": "hi", "gold_call": {"name": "QueryStock", "arguments": ["A"]}},
        {"api": "Dictionary", "request": "hi", "gold_call": {"name": "Dictionary", "arguments": {"keyword": "a"}}},
    ],
)
def test_parse_task_rejects_malformed(adapter, obj):
    with pytest.raises(ValueError) as err:
        adapter.parse_task(obj, None)
    assert str(err.value)


def test_validate_task_rejects_failing_gold_call(adapter):
    family_mismatch = {"api": "Wiki", "request": "hi", "gold_call": {"name": "Wiki", "arguments": {"keyword": "x"}}}
    with pytest.raises(ValueError, match="family"):
        adapter.parse_task(family_mismatch, "QueryStock")
    task = adapter.parse_task(
        {
            "api": "QueryStock",
            "request": "Price of ZZZZ?",
            "gold_call": {"name": "QueryStock", "arguments": {"stock_code": "ZZZZ", "date": "2022-01-01"}},
        }
    )
    ok, reason = adapter.validate_task(task)
    assert not ok and "does not exist" in reason
    missing = adapter.parse_task(
        {"api": "QueryStock", "request": "Price?", "gold_call": {"name": "QueryStock", "arguments": {}}}
    )
    ok, reason = adapter.validate_task(missing)
    assert not ok and "missing_argument" in reason


def test_aggregate_reports_the_papers_figures():
    adapter = get_benchmark("apibank", data_dir=DATA)
    api = adapter.load_tasks("level-1-api")[:3]
    response = adapter.load_tasks("level-1-response")[:1]
    gold = [
        Trajectory(turns=[Turn(action="", calls=[ToolCall(c["name"], c["arguments"])])])
        for t in api
        for c in t.gold["calls"][:1]
    ]
    scores = [adapter.score(t, tr) for t, tr in zip(api, gold)]
    scores[0] = adapter.score(api[0], Trajectory(final_answer="no call"))
    scores.append(adapter.score(response[0], Trajectory(final_answer=response[0].gold["response"])))
    metrics = adapter.aggregate(api + response, scores)
    assert metrics["api_samples"] == 3 and metrics["response_samples"] == 1
    assert metrics["api_call_accuracy"] == 2 / 3 and metrics["errors/NO_API_CALL"] == 1
    assert metrics["response_rouge_l"] == 1.0


def test_generated_tasks_must_give_the_values_of_their_gold_call(adapter):
    """Simulator outputs seen in a Qwen run: the API's description as the request, values the request never gives."""

    def check(api, request, arguments):
        return adapter.validate_task(
            adapter.parse_task({"api": api, "request": request, "gold_call": {"name": api, "arguments": arguments}})
        )

    ok, reason = check("PlayMusic", "This API triggers a music player to play a music file", {"music_name": "a.mp3"})
    assert not ok and "does not give music_name" in reason
    assert check("PlayMusic", "Please play A.mp3 for me", {"music_name": "a.mp3"})[0]  # case aside
    johns = adapter.data.init_db["Account"]["JohnDoe"]
    alarm = {"token": johns["token"], "time": "2023-03-16 07:00:00"}
    # dates in words pass; the token through the account's username and password (GetUserToken)
    assert check("DeleteAlarm", "I'm JohnDoe, password pass123: delete my alarm at 7 a.m. on March 16th", alarm)[0]
    # a token the request does not give: the dialogue gives its account's username and password, as API-Bank's do
    task = adapter.parse_task({"api": "DeleteAlarm", "request": "Delete my alarm at 7 a.m. on March 16th",
                               "gold_call": {"name": "DeleteAlarm", "arguments": alarm}})  # fmt: skip
    assert task.prompt.startswith("User: Delete my alarm") and "User: My username is JohnDoe and my password is " \
        f"{johns['password']}." in task.prompt  # fmt: skip
    assert f"API-Request: [GetUserToken(username='JohnDoe', password='{johns['password']}')]->" in task.prompt
    assert adapter.validate_task(task)[0]
    assert replay(adapter, task).value == 1.0  # one call, the token read from the dialogue, as in level-1's samples
    assert replay(adapter, task, [{"name": "DeleteAlarm", "arguments": {**alarm, "token": "x"}}]).value == 0.0
    given = adapter.parse_task({"api": "DeleteAlarm", "request": f"My token is {johns['token']}; delete my alarm at 7",
                                "gold_call": {"name": "DeleteAlarm", "arguments": alarm}})  # fmt: skip
    assert given.prompt.count("User:") == 1  # the request gives the token: nothing added
    ok, reason = check("DeleteAlarm", "Delete my alarm at 7 a.m. on March 16th", {**alarm, "token": "no-such-token"})
    assert not ok and "token" in reason  # no account holds it: nothing to give
