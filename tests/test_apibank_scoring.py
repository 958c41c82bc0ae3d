"""API-Bank scoring modes: the official text-to-call step, and each deviation switched on and off."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from genenv.benchmarks.apibank import APIBankAdapter
from genenv.benchmarks.apibank.scoring import DEFAULTS, DEVIATIONS, Scoring
from genenv.benchmarks.base import Task, ToolCall, Trajectory, Turn
from genenv.envs.expert import expert_messages

DATA = Path(os.environ.get("GENENV_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data")) / "apibank"
pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason=f"API-Bank data not found at {DATA}")
USER = {"username": "a", "password": "b"}


@pytest.fixture(scope="module")
def official() -> APIBankAdapter:
    return APIBankAdapter(data_dir=DATA)


@pytest.fixture(scope="module")
def tasks(official):
    return {split: official.load_tasks(split) for split in ("level-1-api", "level-2-api", "level-3")}


def bucket_of_text(adapter: APIBankAdapter, task: Task, text: str) -> str:
    """The bucket of one level-1/2 answer text, read by the adapter's scoring mode."""
    state = adapter.start(task)
    calls = adapter.parse_action(text, state)
    turn = Turn(action=text, calls=calls, results=[adapter.execute(state, c) for c in calls])
    return adapter.score(task, Trajectory(turns=[turn])).breakdown["buckets"][0]


def bucket_of_gold(adapter: APIBankAdapter, task: Task, position: int = 0) -> str:
    """The bucket of the gold call at ``position`` when the gold calls (structured arguments) are made."""
    state = adapter.start(task)
    turns = []
    for gold in task.gold["calls"]:
        call = ToolCall(name=gold["name"], arguments=gold["arguments"])
        turns.append(Turn(action="", calls=[call], results=[adapter.execute(state, call)]))
    return adapter.score(task, Trajectory(turns=turns)).breakdown["buckets"][position]


def first(task_list: list[Task], api: str) -> Task:
    return next(t for t in task_list if t.gold["calls"][0]["name"] == api)


# -- the mode object ----------------------------------------------------------------------


def test_modes_defaults_and_switches():
    assert Scoring.make().mode == "official" and Scoring.make().deviations == DEFAULTS["official"]
    assert not Scoring.make().on("list_arguments") and not Scoring.make().on("lenient_numbers")
    assert Scoring.make("genenv").deviations == frozenset(DEVIATIONS)
    assert Scoring.make("official", []).deviations == frozenset()
    assert Scoring.make("official", ["list_arguments"]).deviations == {"list_arguments"}
    changed = Scoring.make("official", {"history_replay": False, "lenient_numbers": True})
    assert changed.deviations == (DEFAULTS["official"] - {"history_replay"}) | {"lenient_numbers"}
    for bad in (("strict", None), ("official", ["no_such"]), ("official", {"history_replay": "no"}), ("official", "x")):
        with pytest.raises(ValueError):
            Scoring.make(*bad)
    described = APIBankAdapter(data_dir=DATA, scoring="genenv", deviations={"name_keyword": False}).scoring_mode()
    assert described["mode"] == "genenv" and described["deviations_off"] == ["name_keyword"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("API-Request: [GetToday()]", ("GetToday", {})),
        # one line, greedy: the second call's parameters are read as the first call's
        ("[GetUserToken(username='a', password='b')] [AddAlarm(time='t')]", ("GetUserToken", {**USER, "time": "t"})),
        ("[GetUserToken(username='a', password='b')] and then [GetToday()]", ("GetUserToken", USER)),
        ("[QueryStock(stock_code='AA\"PL', date='2022')]", ("QueryStock", {"stock_code": "AA", "date": "2022"})),
        ("[RecordHealthData(humidity=0.5)]", ("RecordHealthData", {"humidity": "0"})),
        ("[BookHotel(room_count=' 1 ')]", ("BookHotel", {"room_count": " 1 "})),
        ("[AddMeeting(attendees=['a', 'b'])]", ("AddMeeting", {"attendees": "['a', 'b']"})),
        ('[AddMeeting(attendees=\'["a", "b"]\')]', ("AddMeeting", {"attendees": "["})),
        ("API-Request:\n[GetUserToken(\nusername='a',\npassword='b'\n)]", None),  # one line only
        ('<tool_call>{"name": "GetToday", "arguments": {}}</tool_call>', None),
        ("I cannot help.", None),
    ],
)
def test_official_text_to_call_reads_as_upstream(text, expected):
    calls = Scoring.make("official").parse(text)
    assert [(c.name, c.arguments) for c in calls] == ([] if expected is None else [expected])


def test_official_mode_asks_for_and_writes_the_api_request_form(official, tasks):
    task = tasks["level-1-api"][0]
    assert "API-Request: [ApiName(key1='value1'" in official.system_prompt(task)
    text = official.format_call("BookHotel", {"hotel_name": "O'Neil", "room_count": 2, "rooms": ["a"]})
    assert text == "API-Request: [BookHotel(hotel_name='O'Neil', room_count='2', rooms=['a'])]"
    (call,) = official.scoring.parse(text)  # upstream cuts a quoted value at any quote inside it
    assert call.arguments == {"hotel_name": "O", "room_count": "2", "rooms": "['a']"}
    shown = official.few_shot_exchanges()
    assert shown[1]["content"].startswith("API-Request: [AddAlarm(") and official.scoring.parse(shown[1]["content"])
    genenv = APIBankAdapter(data_dir=DATA, scoring="genenv", deviations={"history_replay": False})
    assert genenv.system_prompt(task) == official.system_prompt(task)  # one prompt: only the reading differs
    assert genenv.few_shot_exchanges() == shown and official.reporting_adapter() is official
    reporting = genenv.reporting_adapter()  # validation of a lenient training run is scored officially
    assert reporting.scoring == Scoring.make("official", {"history_replay": False})
    assert reporting is genenv.reporting_adapter()
    messages = expert_messages(official, task)  # the gold call in the official form replays to 1
    assert messages[0]["content"].startswith("API-Request: [ModifyRegistration(")


def test_official_response_sample_reads_no_call(official):
    response = official.load_tasks("level-1-response")[0]
    state = official.start(response)
    assert official.parse_action("[GetToday()] Your appointment is modified.", state) == []


# -- each deviation, off and on -----------------------------------------------------------


def test_text_deviations_lists_and_numbers(official, tasks):
    meeting = first(tasks["level-1-api"], "AddMeeting")
    arguments = {k: v for k, v in meeting.gold["calls"][0]["arguments"].items()}
    attendees = (
        arguments["attendees"]
        if isinstance(arguments["attendees"], list)
        else json.loads(arguments["attendees"].replace("'", '"'))
    )
    pieces = [f"{k}='{v}'" for k, v in arguments.items() if k != "attendees"] + [f"attendees={attendees!r}"]
    text = f"API-Request: [AddMeeting({', '.join(pieces)})]"
    assert bucket_of_text(official, meeting, text) == "INPUT_MISMATCH"  # upstream: the list stays text
    with_lists = APIBankAdapter(data_dir=DATA, deviations={"list_arguments": True})
    assert bucket_of_text(with_lists, meeting, text) == "CORRECT"

    hotel = first(tasks["level-1-api"], "BookHotel")
    gold = hotel.gold["calls"][0]["arguments"]
    spaced = ", ".join(f"{k}=' {v} '" if k.endswith("_count") else f"{k}='{v}'" for k, v in gold.items())
    text = f"[BookHotel({spaced})]"
    assert bucket_of_text(official, hotel, text) == "INVALID_PARAMETER_TYPE"  # ' 1 '.isdigit() is False
    lenient = APIBankAdapter(data_dir=DATA, deviations={"lenient_numbers": True})
    assert bucket_of_text(lenient, hotel, text) == "CORRECT"
    negative = text.replace("' ", "'-", 1)
    assert bucket_of_text(official, hotel, negative) == "INVALID_PARAMETER_TYPE"
    assert bucket_of_text(lenient, hotel, negative) != "INVALID_PARAMETER_TYPE"  # read as a number, then wrong


@pytest.mark.parametrize(
    ("deviation", "split", "api"),
    [
        ("legacy_device_id", "level-1-api", "TimedSwitch"),
        ("recorded_descriptions", "level-2-api", "ToolSearcher"),
        ("query_scene_case", "level-1-api", "QueryScene"),
        ("delete_meeting_rule", "level-1-api", "DeleteMeeting"),
    ],
)
def test_data_repair_deviations_make_gold_calls_reproduce(deviation, split, api):
    on = APIBankAdapter(data_dir=DATA, scoring="genenv")
    off = APIBankAdapter(data_dir=DATA, scoring="genenv", deviations={deviation: False})
    failing = [
        t.task_id
        for t_on, t in zip(on.load_tasks(split), off.load_tasks(split), strict=True)
        if t.gold["calls"][0]["name"] == api
        and bucket_of_gold(off, t) != "CORRECT"
        and bucket_of_gold(on, t_on) == "CORRECT"
    ]
    assert failing, f"switching {deviation} off changes no {api} verdict"


def test_name_keyword_deviation(tasks):
    on = APIBankAdapter(data_dir=DATA, scoring="genenv")
    if on.toolsearcher_backend_name != "minilm":
        pytest.skip("the keyword rule's effect is measured with the MiniLM backend")
    off = APIBankAdapter(data_dir=DATA, scoring="genenv", deviations={"name_keyword": False})
    level3 = off.load_tasks("level-3")
    differ = [
        (t.task_id, i)
        for t in level3
        for i, call in enumerate(t.gold["calls"])
        if call["name"] == "ToolSearcher" and bucket_of_gold(off, t, i) != bucket_of_gold(on, t, i)
    ]
    assert len(differ) == 5


# -- the test files' own expected_output strings -------------------------------------------


@pytest.mark.parametrize(
    ("scoring", "figures"),
    [("official", {"level-1-api": 369, "level-2-api": 127}), ("genenv", {"level-1-api": 368, "level-2-api": 125})],
)
def test_expected_output_strings_replay(scoring, figures):
    """Lists written as quoted strings ('['a', 'b']') are cut at the inner quote: fewer than the structured gold."""
    adapter = APIBankAdapter(data_dir=DATA, scoring=scoring)
    for split, correct in figures.items():
        samples = json.loads((DATA / f"test-data/{split}.json").read_text())
        tasks = adapter.load_tasks(split)
        scored = sum(bucket_of_text(adapter, t, s["expected_output"]) == "CORRECT" for t, s in zip(tasks, samples))
        assert scored == correct, split


def test_history_replay_parses_list_text_as_the_recording_did(official):
    """Replayed dialogue calls reproduce the recorded state: their list text is parsed in every mode."""
    task = next(t for t in official.load_tasks("level-1-api") if t.task_id == "apibank-l1-api-0034")
    (record,) = [c for c in task.metadata["replay"] if c["name"] == "RecordHealthData"]
    assert isinstance(record["arguments"]["health_data"], str) and record["output"] == "success"
    health = official.start(task).world.read("HealthData")
    assert {"time": "2023-08-06 09:00:00", "blood_pressure": "120/80", "heart_rate": "80"} in health["12345"]
