"""Per-API correctness rules: ``check(predicted_result, gold_result) -> bool``.

One rule per API, following each upstream class's ``check_api_call_correctness`` (see
``APIS.md``). Rules never mutate their arguments (upstream pops ``meeting_topic`` /
``content`` from both dicts; here copies are compared). A rule may raise ``KeyError`` or
``TypeError`` where upstream does (e.g. a result dict without ``api_name``); the scorer
counts that as incorrect (bucket ``KEY_ERROR`` / ``CHECK_ERROR``).

Known upstream bug, fixed by default: DeleteMeeting's rule compares ``input['time']``, a
key DeleteMeeting results never have, so upstream raises ``KeyError`` for every call where
both outputs are 'success' - including the gold call itself. Here it compares
``start_time`` (the meeting's time). ``delete_meeting_rule=False`` restores the KeyError, and
``query_scene_case=False`` restores upstream's exact QueryScene comparison (deviations of
:mod:`.scoring`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .apis_lv12 import health_format, query_history_date, stock_format
from .world import normalize_datetime

Check = Callable[[dict[str, Any], dict[str, Any]], bool]
DT = "%Y-%m-%d %H:%M:%S"
D = "%Y-%m-%d"


def _same(r: dict, g: dict, *keys: str) -> bool:
    return all(r[k] == g[k] for k in keys)


def exact(r: dict, g: dict) -> bool:
    return r["input"] == g["input"] and r["output"] == g["output"] and r["exception"] == g["exception"]


def out_exc(r: dict, g: dict) -> bool:
    return _same(r, g, "output", "exception")


def jaccard_over_half(a: str, b: str, lower: bool = False) -> bool:
    if lower:
        a, b = a.lower(), b.lower()
    sa, sb = set(a.split(" ")), set(b.split(" "))
    return len(sa & sb) / len(sa | sb) > 0.5


def _named(r: dict, g: dict) -> None:
    if r["api_name"] != g["api_name"]:
        raise AssertionError("The API name is not correct.")


def agenda_like(r: dict, g: dict) -> bool:
    """AddAgenda / ModifyAgenda / QueryAgenda: word-Jaccard(content) > 0.5, rest exact."""
    ri, gi = r["input"], g["input"]
    return (
        jaccard_over_half(ri["content"], gi["content"])
        and ri["time"] == gi["time"]
        and ri["location"] == gi["location"]
        and out_exc(r, g)
    )


def reminder_like(r: dict, g: dict) -> bool:
    """AddReminder / ModifyReminder / QueryReminder: lower-cased Jaccard(content) > 0.5."""
    ri, gi = r["input"], g["input"]
    return jaccard_over_half(ri["content"], gi["content"], lower=True) and ri["time"] == gi["time"] and out_exc(r, g)


def meeting_like(r: dict, g: dict) -> bool:
    """Add/Modify/QueryMeeting: Jaccard(meeting_topic) > 0.5, other inputs exact."""
    ri, gi = dict(r["input"]), dict(g["input"])
    ok = jaccard_over_half(ri.pop("meeting_topic"), gi.pop("meeting_topic"))
    return ok and ri == gi and out_exc(r, g)


def delete_by_time(time_key: str) -> Check:
    """DeleteAgenda / DeleteReminder / DeleteMeeting: both 'success' -> same time."""

    def check(r: dict, g: dict) -> bool:
        if g["output"] == "success" and r["output"] == "success":
            return r["input"][time_key] == g["input"][time_key]
        return out_exc(r, g)

    return check


def _devices(devices: Any) -> list:
    out = [{**d, "name": d["name"].strip().lower(), "description": d["description"].strip()} for d in devices]
    return sorted(out, key=lambda d: d["name"])


def scene_like(compare_output: bool) -> Check:
    def check(r: dict, g: dict) -> bool:
        if r["input"]["name"].strip().lower() != g["input"]["name"].strip().lower():
            return False
        if _devices(r["input"]["devices"]) != _devices(g["input"]["devices"]):
            return False
        if compare_output:
            if r["output"] != g["output"]:
                return False
        elif g["output"] is None and r["output"] is not None:
            return False
        return r["exception"] == g["exception"]

    return check


def _fmt_equal(a: Any, b: Any) -> bool:
    """Upstream compares format_check results: exceptions never equal each other."""
    if isinstance(a, Exception) or isinstance(b, Exception):
        return False
    return a == b


def appointment_registration(r: dict, g: dict) -> bool:
    ri, gi = r["input"], g["input"]
    if ri["patient_name"].strip() != gi["patient_name"].strip():
        return False
    if not _fmt_equal(normalize_datetime(ri["date"], D), normalize_datetime(gi["date"], D)):
        return False
    if ri["doctor_name"].strip() != gi["doctor_name"].strip():
        return False
    if g["output"] is None and r["output"] is not None:
        return False
    return r["exception"] == g["exception"]


def calculator(r: dict, g: dict) -> bool:
    return r["input"]["formula"].replace(" ", "") == g["input"]["formula"].replace(" ", "") and out_exc(r, g)


def cancel_registration(r: dict, g: dict) -> bool:
    return r["input"]["appointment_id"].strip() == g["input"]["appointment_id"].strip() and out_exc(r, g)


def cancel_timed_switch(r: dict, g: dict) -> bool:
    ri, gi = r["input"], g["input"]
    return (
        ri["name"].strip().lower() == gi["name"].strip().lower()
        and _fmt_equal(normalize_datetime(ri["time"], DT), normalize_datetime(gi["time"], DT))
        and out_exc(r, g)
    )


def timed_switch(r: dict, g: dict) -> bool:
    return cancel_timed_switch(r, g) and r["input"]["on"] == g["input"]["on"]


def named_out_exc(r: dict, g: dict) -> bool:
    """Dictionary / Wiki: same API name, output and exception."""
    return r["api_name"] == g["api_name"] and out_exc(r, g)


def document_qa(r: dict, g: dict) -> bool:
    ri, gi = r["input"], g["input"]
    return ri["url"].strip() == gi["url"].strip() and ri["question"].strip() == gi["question"].strip() and out_exc(r, g)


def _symptom_norm(text: str) -> Any:
    text = text.strip()
    if text == "":
        raise AttributeError("'Exception' object has no attribute 'lower'")
    return text.lower()


def symptom_like(r: dict, g: dict) -> bool:
    return _symptom_norm(r["input"]["symptom"]) == _symptom_norm(g["input"]["symptom"]) and out_exc(r, g)


def get_today(r: dict, g: dict) -> bool:
    return r["output"] is not None and r["exception"] is None and r["input"] is None


def input_out_exc(r: dict, g: dict) -> bool:
    return r["input"] == g["input"] and out_exc(r, g)


def modify_registration(r: dict, g: dict) -> bool:
    ri, gi = r["input"], g["input"]

    def date(x):
        return normalize_datetime(x, D) if x is not None else None

    def doctor(x):
        return x.strip() if x is not None else None

    if str(ri["appointment_id"]).strip() != gi["appointment_id"].strip():
        return False
    rd, gd = date(ri["new_appointment_date"]), date(gi["new_appointment_date"])
    if (rd is not None or gd is not None) and not _fmt_equal(rd, gd):
        return False
    if doctor(ri["new_appointment_doctor"]) != doctor(gi["new_appointment_doctor"]):
        return False
    return out_exc(r, g)


def play_music(r: dict, g: dict) -> bool:
    return r["output"] == g["output"]


def query_balance(r: dict, g: dict) -> bool:
    return r["input"]["token"].strip() == g["input"]["token"].strip() and out_exc(r, g)


def query_health_data(r: dict, g: dict) -> bool:
    ri, gi = r["input"], g["input"]
    ru, rs, re_ = health_format(ri["user_id"], ri["start_time"], ri["end_time"])
    gu, gs, ge = health_format(gi["user_id"], gi["start_time"], gi["end_time"])
    return ru == gu and _fmt_equal(rs, gs) and _fmt_equal(re_, ge) and out_exc(r, g)


def query_history_today(r: dict, g: dict) -> bool:
    rd, gd = query_history_date(r["input"]["date"]), query_history_date(g["input"]["date"])
    return _fmt_equal(rd, gd) and out_exc(r, g)


def query_registration(r: dict, g: dict) -> bool:
    ri, gi = r["input"], g["input"]
    return (
        ri["patient_name"].strip() == gi["patient_name"].strip()
        and _fmt_equal(normalize_datetime(ri["date"], D), normalize_datetime(gi["date"], D))
        and out_exc(r, g)
    )


def scene_name_out_exc(r: dict, g: dict) -> bool:
    """DeleteScene: normalised scene name, output and exception."""
    return r["input"]["name"].strip().lower() == g["input"]["name"].strip().lower() and out_exc(r, g)


def query_scene(r: dict, g: dict) -> bool:
    """QueryScene: as upstream, but device lists are compared with device names normalised
    the way AddScene/ModifyScene store them (the gold outputs quote an older Scenes table
    with 'Light', 'Coffee Maker'; the released table has 'light', 'coffee maker')."""
    if r["input"]["name"].strip().lower() != g["input"]["name"].strip().lower():
        return False
    ro, go = r["output"], g["output"]
    if isinstance(ro, list) and isinstance(go, list):
        try:
            same = _devices(ro) == _devices(go)
        except (KeyError, TypeError, AttributeError):
            same = ro == go
    else:
        same = ro == go
    return same and r["exception"] == g["exception"]


def query_stock(r: dict, g: dict) -> bool:
    rc, rd = stock_format(r["input"]["stock_code"], r["input"]["date"])
    gc, gd = stock_format(g["input"]["stock_code"], g["input"]["date"])
    return rc == gc and _fmt_equal(rd, gd) and out_exc(r, g)


def record_health_data(r: dict, g: dict) -> bool:
    ri, gi = r["input"], g["input"]
    return (
        str(ri["user_id"]).upper().strip() == gi["user_id"].upper().strip()
        and _fmt_equal(normalize_datetime(ri["time"], DT), normalize_datetime(gi["time"], DT))
        and out_exc(r, g)
    )


def register_user(r: dict, g: dict) -> bool:
    if g["output"] is None and r["output"] is not None:
        return False
    return r["input"] == g["input"] and r["exception"] == g["exception"]


def search_engine(r: dict, g: dict) -> bool:
    if r["api_name"] != g["api_name"] or r["exception"] != g["exception"]:
        return False

    def ordered(out):
        if out is None:
            return None
        return sorted(out, key=lambda x: x["title"] + x["abstract"], reverse=True)

    return ordered(r["output"]) == ordered(g["output"])


def send_email(r: dict, g: dict) -> bool:
    ri, gi = r["input"], g["input"]
    return (
        ri["receiver"].strip().lower() == gi["receiver"].strip().lower()
        and ri["subject"].strip() == gi["subject"].strip()
        and ri["content"].strip() == gi["content"].strip()
        and out_exc(r, g)
    )


def translate(r: dict, g: dict) -> bool:
    return r["api_name"] == g["api_name"] and r["input"]["src"] == g["input"]["src"] and out_exc(r, g)


LV12_CHECKS: dict[str, Check] = {
    "AddAgenda": agenda_like,
    "AddAlarm": exact,
    "AddMeeting": meeting_like,
    "AddReminder": reminder_like,
    "AddScene": scene_like(compare_output=False),
    "AppointmentRegistration": appointment_registration,
    "BookHotel": exact,
    "Calculator": calculator,
    "CancelRegistration": cancel_registration,
    "CancelTimedSwitch": cancel_timed_switch,
    "CheckToken": exact,
    "DeleteAccount": exact,
    "DeleteAgenda": delete_by_time("time"),
    "DeleteAlarm": exact,
    "DeleteMeeting": delete_by_time("start_time"),
    "DeleteReminder": delete_by_time("time"),
    "DeleteScene": scene_name_out_exc,
    "Dictionary": named_out_exc,
    "DocumentQA": document_qa,
    "EmergencyKnowledge": symptom_like,
    "ForgotPassword": exact,
    "GetToday": get_today,
    "GetUserToken": exact,
    "ImageCaption": input_out_exc,
    "ModifyAgenda": agenda_like,
    "ModifyAlarm": exact,
    "ModifyMeeting": meeting_like,
    "ModifyPassword": input_out_exc,
    "ModifyRegistration": modify_registration,
    "ModifyReminder": reminder_like,
    "ModifyScene": scene_like(compare_output=True),
    "OpenBankAccount": exact,
    "PlayMusic": play_music,
    "QueryAgenda": agenda_like,
    "QueryAlarm": exact,
    "QueryBalance": query_balance,
    "QueryHealthData": query_health_data,
    "QueryHistoryToday": query_history_today,
    "QueryMeeting": meeting_like,
    "QueryRegistration": query_registration,
    "QueryReminder": reminder_like,
    "QueryScene": query_scene,
    "QueryStock": query_stock,
    "RecordHealthData": record_health_data,
    "RegisterUser": register_user,
    "SearchEngine": search_engine,
    "SendEmail": send_email,
    "SpeechRecognition": input_out_exc,
    "SymptomSearch": symptom_like,
    "TimedSwitch": timed_switch,
    "ToolSearcher": out_exc,
    "Translate": translate,
    "Wiki": named_out_exc,
}


def _named_exact(r: dict, g: dict) -> bool:
    _named(r, g)
    return exact(r, g)


def email_reminder(r: dict, g: dict) -> bool:
    _named(r, g)
    ri = {k: v for k, v in r["input"].items() if k != "content"}
    gi = {k: v for k, v in g["input"].items() if k != "content"}
    return out_exc(r, g) and ri == gi


def hotel_availability(r: dict, g: dict) -> bool:
    _named(r, g)
    ri, gi = r["input"], g["input"]
    return (
        _same(ri, gi, "destination", "check_in_date", "check_out_date")
        and r["output"]["hotels"] == g["output"]["hotels"]
    )


def nearby_restaurants(r: dict, g: dict) -> bool:
    _named(r, g)
    return r["input"] == g["input"]


def tax_calculator(r: dict, g: dict) -> bool:
    _named(r, g)
    return (
        r["input"]["salary"] == g["input"]["salary"]
        and r["output"]["salary_after_tax"] == g["output"]["salary_after_tax"]
        and r["exception"] == g["exception"]
    )


def personal_info_update(r: dict, g: dict) -> bool:
    _named(r, g)
    return r["input"] == g["input"] and r["output"] == g["output"]


LV3_CHECKS: dict[str, Check] = {
    "AccountInfo": _named_exact,
    "AddMeeting": meeting_like,
    "Calculator": calculator,
    "ClothingRecommendation": _named_exact,
    "EmailReminder": email_reminder,
    "FlightSearch": _named_exact,
    "Geocoding": _named_exact,
    "GetOccupationSalary": _named_exact,
    "GetWeatherForCoordinates": exact,
    "HotelAvailability": hotel_availability,
    "LikeCount": _named_exact,
    "MovieRecommendations": _named_exact,
    "NearbyRestaurants": nearby_restaurants,
    "OrganizationMembers": _named_exact,
    "QueryMeeting": _named_exact,
    "TaxCalculator": tax_calculator,
    "ToolSearcher": out_exc,
    "TravelStatus": _named_exact,
    "PersonalInfoUpdate": personal_info_update,
    "UserPosts": _named_exact,
    "UserWatchedMovies": _named_exact,
    "UserMoviePreferences": _named_exact,
}


def query_scene_upstream(r: dict, g: dict) -> bool:
    """QueryScene exactly as upstream: normalised scene name, then output and exception as they are."""
    return r["input"]["name"].strip().lower() == g["input"]["name"].strip().lower() and out_exc(r, g)


def get_check(
    api_name: str, level: str, *, delete_meeting_rule: bool = True, query_scene_case: bool = True
) -> Check | None:
    """The rule for ``api_name`` at ``level`` (``'level-3'`` uses the level-3 classes); the two
    switches turn genenv's repaired DeleteMeeting and QueryScene rules off (upstream's rules)."""
    table = LV3_CHECKS if level == "level-3" else LV12_CHECKS
    if level != "level-3":
        if not delete_meeting_rule and api_name == "DeleteMeeting":
            return delete_by_time("time")
        if not query_scene_case and api_name == "QueryScene":
            return query_scene_upstream
    return table.get(api_name)
