"""The 53 level-1/2 API-Bank APIs, re-implemented over ``init_database/*.json``.

Each API is one small function ``f(world, **params)`` that returns the API's output or
raises; :func:`~genenv.benchmarks.apibank.world.run_api` wraps it into the upstream result
dict. Behaviour, error texts and the order of the checks follow the upstream classes in
``api-bank/apis/*.py`` (read, not copied; see ``APIS.md`` in the data folder), including
quirks the recorded gold results depend on:

* DocumentQA: ``QuestionAnswering.json`` stores ``url -> [{question, answer}]`` and upstream
  looks the question up *in that list*, so every known document answers 'The question is
  too difficult to answer.' - which is exactly what every gold DocumentQA result says.
* ModifyPassword and DeleteAccount wrap their status as ``{'status': 'success'}``;
  GetUserToken/RegisterUser return ``{'token': ...}``; CheckToken, DeleteAccount,
  ForgotPassword and RegisterUser results carry no ``api_name``.
* AppointmentRegistration and RegisterUser create random ids/tokens (their checks ignore
  the value); a per-episode seeded RNG keeps episodes reproducible.

Network APIs: **Dictionary** and **Translate** call web services upstream. Here they answer
from a fixture table built when the adapter loads, from the recorded ``result`` of every
Dictionary/Translate call in the dialogue files (``lv1-lv2-samples``). Unknown inputs give
the upstream failure text ('Failed.') for Dictionary and an explicit 'not available
offline' exception for Translate. **ToolSearcher** lives in :mod:`.tool_searcher`.

Deliberate deviations (robustness only; none changes a gold result):

* Calculator uses the upstream token-list reduction (never ``eval``) but rejects formulas
  longer than 2,000 characters and an operator at either end of an expression (where the
  upstream loop never terminates) with 'invalid formula'.
* Functions returning ``Exception('Error')`` upstream (ModifyAgenda, QueryMeeting) raise it.
* SearchEngine implements BM25Okapi (rank_bm25's formula) itself and breaks score ties by
  document order; tokenisation uses NLTK's Treebank word tokenizer when NLTK is installed
  (upstream: ``word_tokenize``) and a close regex otherwise.
"""

from __future__ import annotations

import math
import re
import string
from typing import Any

from .world import ApiImpl, World, normalize_datetime, pad_year, strptime

DT = "%Y-%m-%d %H:%M:%S"
D = "%Y-%m-%d"


def _rng(world: World):
    import random

    rng = world.tool_state.get("_rng")
    if rng is None:
        rng = world.tool_state["_rng"] = random.Random(20230331)
    return rng


def _nonempty(text: Any, message: str) -> None:
    if text.strip() == "":
        raise Exception(message)


# -- calendar-like token APIs --------------------------------------------------------------


def add_agenda(w: World, token, content, time, location):
    strptime(time, DT)
    _nonempty(content, "Content should not be null")
    db = w.write("Agenda")
    new_id = len(db) + 1
    username = w.check_token(token)
    db[new_id] = {"username": username, "content": content, "time": time, "location": location}
    return "success"


def add_alarm(w: World, token, time):
    strptime(time, DT)
    db = w.write("Alarm")
    new_id = len(db) + 1
    username = w.check_token(token)
    db[new_id] = {"username": username, "time": time}
    return "success"


def _next_id(db: dict) -> str:
    return str(max(int(k) for k in db) + 1) if db else "0"


def add_meeting(w: World, token, meeting_topic, start_time, end_time, location, attendees):
    strptime(start_time, DT)
    strptime(end_time, DT)
    _nonempty(meeting_topic, "Meeting Topic should not be null")
    db = w.write("Meeting")
    new_id = _next_id(db)
    username = w.check_token(token)
    db[new_id] = {
        "username": username,
        "meeting_topic": meeting_topic,
        "start_time": start_time,
        "end_time": end_time,
        "location": location,
        "attendees": list(attendees) if isinstance(attendees, list) else attendees,
    }
    return "success"


def add_reminder(w: World, token, content, time):
    strptime(time, DT)
    _nonempty(content, "Content should not be null")
    db = w.write("Reminder")
    new_id = _next_id(db)
    username = w.check_token(token)
    db[new_id] = {"username": username, "content": content, "time": time}
    return "success"


def _first_match(db: dict, username: str, pred) -> Any:
    for key, record in db.items():
        if record.get("username") == username and pred(record):
            return key
    return None


def delete_agenda(w: World, token, content, time, location):
    if time:
        strptime(time, DT)
    username = w.check_token(token)
    db = w.write("Agenda")
    key = _first_match(db, username, lambda r: r.get("content") == content or r.get("time") == time)
    if key is not None:
        del db[key]
    else:
        if content:
            raise Exception(f"You have no meeting about {content}")
        if time:
            raise Exception(f"You have no meeting at time : {time}")
    return "success"


def delete_alarm(w: World, token, time):
    strptime(time, DT)
    username = w.check_token(token)
    db = w.write("Alarm")
    key = _first_match(db, username, lambda r: r.get("time") == time)
    if key is not None:
        del db[key]
    elif time:
        raise Exception(f"You have no alarm clock at time : {time}")
    return "success"


def _meeting_prelude(meeting_topic, start_time, end_time) -> None:
    if start_time:
        strptime(start_time, DT)
    if end_time:
        strptime(end_time, DT)
    if meeting_topic.strip() == "" and not start_time:
        raise Exception("Meeting Topic and start_time should not be null both")


def _meeting_missing(meeting_topic, start_time) -> None:
    if meeting_topic:
        raise Exception(f"You have no meeting about {meeting_topic}")
    if start_time:
        raise Exception(f"You have no meeting at time : {start_time}")


def _meeting_pred(meeting_topic, start_time):
    return lambda r: r.get("meeting_topic") == meeting_topic or r.get("start_time") == start_time


def delete_meeting(w: World, token, meeting_topic, start_time, end_time, location, attendees):
    _meeting_prelude(meeting_topic, start_time, end_time)
    username = w.check_token(token)
    db = w.write("Meeting")
    key = _first_match(db, username, _meeting_pred(meeting_topic, start_time))
    if key is not None:
        del db[key]
    else:
        _meeting_missing(meeting_topic, start_time)
    return "success"


def modify_meeting(w: World, token, meeting_topic, start_time, end_time, location, attendees):
    _meeting_prelude(meeting_topic, start_time, end_time)
    username = w.check_token(token)
    db = w.write("Meeting")
    key = _first_match(db, username, _meeting_pred(meeting_topic, start_time))
    if key is None:
        _meeting_missing(meeting_topic, start_time)
        return "success"
    if meeting_topic:
        db[key]["meeting_topic"] = meeting_topic
    if start_time:
        db[key]["start_time"] = start_time
        db[key]["end_time"] = end_time
    return "success"


def query_meeting(w: World, token, meeting_topic, start_time, end_time, location, attendees):
    _meeting_prelude(meeting_topic, start_time, end_time)
    username = w.check_token(token)
    db = w.read("Meeting")
    key = _first_match(db, username, _meeting_pred(meeting_topic, start_time))
    if key is not None:
        return db[key]
    _meeting_missing(meeting_topic, start_time)
    raise Exception("Error")


def _reminder_prelude(content, time) -> None:
    strptime(time, DT)
    _nonempty(content, "Content should not be null")


def _reminder_pred(content, time):
    return lambda r: r.get("content") == content or r.get("time") == time


def _find_reminder(w: World, token, content, time, *, write: bool) -> tuple[dict, Any]:
    """The user's first reminder with this content or time: (database, key); raises when none."""
    _reminder_prelude(content, time)
    username = w.check_token(token)
    db = w.write("Reminder") if write else w.read("Reminder")
    key = _first_match(db, username, _reminder_pred(content, time))
    if key is None:
        raise Exception(f"You have no reminder about {content} or at time : {time}")
    return db, key


def delete_reminder(w: World, token, content, time):
    db, key = _find_reminder(w, token, content, time, write=True)
    del db[key]
    return "success"


def modify_reminder(w: World, token, content, time):
    db, key = _find_reminder(w, token, content, time, write=True)
    db[key]["content"] = content
    db[key]["time"] = time
    return "success"


def query_reminder(w: World, token, content, time):
    db, key = _find_reminder(w, token, content, time, write=False)
    return db[key]


def _agenda_missing(content, time) -> None:
    if content:
        raise Exception(f"You have no agenda about {content}")
    if time:
        raise Exception(f"You have no agenda at time : {time}")
    raise Exception("Error")


def modify_agenda(w: World, token, content, time, location):
    if time:
        strptime(time, DT)
    username = w.check_token(token)
    db = w.write("Agenda")
    key = _first_match(db, username, lambda r: r.get("content") == content or r.get("time") == time)
    if key is None:
        _agenda_missing(content, time)
    db[key] = {"username": username, "content": content, "time": time, "location": location}
    return "success"


def query_agenda(w: World, token, content, time, location):
    if time:
        strptime(time, DT)
    username = w.check_token(token)
    db = w.read("Agenda")
    key = _first_match(db, username, lambda r: r.get("content") == content or r.get("time") == time)
    if key is None:
        _agenda_missing(content, time)
    return db[key]


def modify_alarm(w: World, token, from_time, to_time):
    strptime(from_time, DT)
    strptime(to_time, DT)
    username = w.check_token(token)
    db = w.write("Alarm")
    key = _first_match(db, username, lambda r: r.get("time") == from_time)
    if key is None:
        raise Exception(f"You have no agenda at time : {from_time}")
    db[key] = {"username": username, "time": to_time}
    return "success"


def query_alarm(w: World, token, time):
    strptime(time, DT)
    username = w.check_token(token)
    db = w.read("Alarm")
    key = _first_match(db, username, lambda r: r.get("time") == time)
    if key is None:
        raise Exception(f"You have no alarm clock at time : {time}")
    return db[key]


# -- accounts ------------------------------------------------------------------------------


def check_token(w: World, token):
    return {"username": w.check_token(token)}


def get_user_token(w: World, username, password):
    db = w.read("Account")
    if username not in db:
        raise Exception("The username does not exist.")
    if db[username]["password"] != password:
        raise Exception("The password is incorrect.")
    return {"token": db[username]["token"]}


def delete_account(w: World, token):
    username = w.check_token(token)
    db = w.write("Account")
    if username in db:
        del db[username]
        return {"status": "success"}
    raise Exception("No such user.")


def modify_password(w: World, token, old_password, new_password):
    username = w.check_token(token)
    db = w.write("Account")
    if db[username]["password"] != old_password:
        raise Exception("The old password is incorrect.")
    db[username]["password"] = new_password
    return {"status": "success"}


def register_user(w: World, username, password, email):
    db = w.write("Account")
    if username in db:
        raise Exception("The username already exists.")
    alphabet = string.ascii_letters + string.digits
    token = "".join(_rng(w).choices(alphabet, k=18)).lower()
    db[username] = {"password": password, "token": token, "email": email}
    return {"token": token}


def forgot_password(w: World, status, **kwargs):
    state = w.tool_state.setdefault("ForgotPassword", {"code": None, "username": None})
    if status == "Forgot Password":
        if "username" not in kwargs or "email" not in kwargs:
            raise Exception("The username and email are required for the first call.")
        username, email = kwargs["username"], kwargs["email"]
        db = w.read("Account")
        if username not in db:
            raise Exception("The username does not exist.")
        if db[username]["email"] != email:
            raise Exception("The email is incorrect.")
        state["code"], state["username"] = 970420, username
        return 970420
    if status == "Verification Code":
        if not state["code"]:
            raise Exception("You need to call the API with status 'Forgot Password' at first.")
        if "new_password" not in kwargs or "verification_code" not in kwargs:
            raise Exception("The new password and verification code are required for the second call.")
        if state["code"] != kwargs["verification_code"]:
            raise Exception("The verification code is incorrect.")
        w.write("Account")[state["username"]]["password"] = kwargs["new_password"]
        return "success"
    raise Exception("The status is only 'Forgot Password' or 'Verification Code'.")


def open_bank_account(w: World, account, password, name):
    db = w.tool_state.setdefault("OpenBankAccount", {0: {"account": "test", "password": "test", "name": "yifei"}})
    if any(rec["account"] == account for rec in db.values()):
        return "failed"
    db[len(db) + 1] = {"account": account, "password": password, "name": name}
    return "success"


def query_balance(w: World, token):
    try:
        token.strip()
        username = w.check_token(token)
    except Exception:
        raise Exception("The token is incorrect.") from None
    db = w.read("Bank")
    if username not in db:
        raise Exception("The user does not have an account.")
    return db[username]["balance"]


# -- hospital / health ----------------------------------------------------------------------


def _date_or_raise(text) -> str:
    value = normalize_datetime(text, D)
    if isinstance(value, Exception):
        raise value
    return value


def appointment_registration(w: World, patient_name, date, doctor_name):
    patient_name, doctor_name = patient_name.strip(), doctor_name.strip()
    if patient_name == "" or doctor_name == "":
        raise Exception("Patient name or doctor name cannot be empty.")
    date = _date_or_raise(date)
    db = w.write("Appointments")
    for record in db.values():
        if record["patient_name"] == patient_name and normalize_datetime(record["date"], D) == date:
            if record["doctor_name"] == doctor_name:
                raise Exception("This appointment has already been registered.")
            raise Exception("This patient has already been registered in this day.")
    rng = _rng(w)
    appointment_id = str(rng.randint(10000000, 99999999))
    while appointment_id in db:
        appointment_id = str(rng.randint(10000000, 99999999))
    db[appointment_id] = {"patient_name": patient_name, "date": date, "doctor_name": doctor_name}
    return appointment_id


def cancel_registration(w: World, appointment_id):
    appointment_id = appointment_id.strip()
    db = w.write("Appointments")
    if appointment_id in db:
        del db[appointment_id]
        return "success"
    raise Exception("The appointment ID is incorrect.")


def modify_registration(w: World, appointment_id, new_appointment_date=None, new_appointment_doctor=None):
    appointment_id = appointment_id.strip()
    db = w.write("Appointments")
    if appointment_id not in db:
        raise Exception("The appointment ID does not exist.")
    date, doctor = new_appointment_date, new_appointment_doctor
    if date is not None:
        date = normalize_datetime(date, D)
    if doctor is not None:
        doctor = doctor.strip()
        if doctor == "":
            raise Exception("Fail because the doctor name is empty.")
    if isinstance(date, Exception):
        raise date
    record = db[appointment_id]
    if date is None and doctor is None:
        raise Exception("Fail because no modification is made.")
    if date is None:
        if doctor == record["doctor_name"]:
            raise Exception("Fail because doctor is not changed.")
        record["doctor_name"] = doctor
    elif doctor is None:
        if date == record["date"]:
            raise Exception("Fail because date is not changed.")
        record["date"] = date
    else:
        if date == record["date"] and doctor == record["doctor_name"]:
            raise Exception("Fail because no modification is made.")
        if date == record["date"]:
            raise Exception("Fail because date is not changed.")
        if doctor == record["doctor_name"]:
            raise Exception("Fail because doctor is not changed.")
        record["date"], record["doctor_name"] = date, doctor
    return "success"


def query_registration(w: World, patient_name, date):
    patient_name = patient_name.strip()
    date = _date_or_raise(date)
    found = {
        key: record
        for key, record in w.read("Appointments").items()
        if record["patient_name"] == patient_name and normalize_datetime(record["date"], D) == date
    }
    if not found:
        raise Exception("No appointments found.")
    return found


def health_format(user_id, start_time, end_time):
    """QueryHealthData.format_check: (USER_ID or None, datetime|exc, datetime|exc)."""
    user = user_id.upper().strip() or None

    def parse(text):
        try:
            return strptime(pad_year(text), DT)
        except Exception as exc:  # noqa: BLE001
            return exc

    return user, parse(start_time), parse(end_time)


def query_health_data(w: World, user_id, start_time, end_time):
    user, start, end = health_format(user_id, start_time, end_time)
    if user is None:
        raise Exception("The user id cannot be empty.")
    if isinstance(start, Exception) and isinstance(end, Exception):
        raise Exception(f"{start}; {end}")
    if isinstance(start, Exception):
        raise start
    if isinstance(end, Exception):
        raise end
    if start > end:
        raise Exception("The start time cannot be later than the end time.")
    db = w.read("HealthData")
    if user not in db:
        raise Exception("The user id does not exist.")
    found = [item for item in db[user] if start <= strptime(item["time"], DT) <= end]
    if not found:
        raise Exception("There is no health data in the given time span.")
    return found


def record_health_data(w: World, user_id, time, health_data=None):
    user = user_id.upper().strip() or None
    if user is None:
        raise Exception("The user id cannot be empty.")
    time = normalize_datetime(time, DT)
    if isinstance(time, Exception):
        raise time
    if health_data is None or len(health_data) == 0:
        raise Exception("The health data cannot be empty.")
    names = set()
    for item in health_data:
        if not isinstance(item, dict) or "name" not in item:
            raise Exception("The health data has invalid format.")
        if item["name"] in names:
            raise Exception("The health data cannot contain duplicate items.")
        names.add(item["name"])
    db = w.write("HealthData")
    records = db.setdefault(user, [])
    target = None
    for record in records:
        if record["time"] == time:
            target = record
    if target is None:
        target = {"time": time}
        records.append(target)
    for item in health_data:
        target[item["name"]] = item["value"]
    return "success"


def _symptom_key(symptom) -> str:
    symptom = symptom.strip()
    if symptom == "":
        # upstream assigns an Exception and then calls .lower() on it
        raise Exception("'Exception' object has no attribute 'lower'")
    return symptom.lower()


def emergency_knowledge(w: World, symptom):
    key = _symptom_key(symptom)
    db = w.read("Symptom")
    if key not in db:
        raise Exception("The symptom does not exist.")
    return [{"name": item["name"], "aid": item["aid"]} for item in db[key]]


def symptom_search(w: World, symptom):
    key = symptom.strip().lower()
    if key == "":
        raise Exception("The symptom cannot be empty.")
    db = w.read("Symptom")
    if key not in db:
        raise Exception("The symptom does not exist.")
    return [{"name": item["name"], "description": item["description"]} for item in db[key]]


# -- smart home ------------------------------------------------------------------------------


def _normalize_devices(devices) -> list:
    seen = set()
    for device in devices:
        if not isinstance(device, dict) or "name" not in device or "description" not in device:
            raise Exception("Invalid device format.")
        device["name"] = device["name"].strip().lower()
        device["description"] = device["description"].strip()
        if device["name"] in seen:
            raise Exception("Device name cannot be duplicated.")
        seen.add(device["name"])
    devices.sort(key=lambda d: d["name"])
    return devices


def _scene_name(name) -> str:
    name = name.strip().lower()
    if name == "":
        raise Exception("Scene name cannot be empty.")
    return name


def add_scene(w: World, name, devices):
    name = _scene_name(name)
    devices = _normalize_devices(devices)
    db = w.write("Scenes")
    if name in db:
        raise Exception("Scene name already exists.")
    db[name] = [dict(d) for d in devices]
    return "success"


def modify_scene(w: World, name, devices):
    name = _scene_name(name)
    devices = _normalize_devices(devices)
    db = w.write("Scenes")
    if name not in db:
        raise Exception("The scene does not exist.")
    db[name] = [dict(d) for d in devices]
    return "success"


def delete_scene(w: World, name):
    name = _scene_name(name)
    db = w.write("Scenes")
    if name not in db:
        raise Exception("The scene does not exist.")
    del db[name]
    return "success"


def query_scene(w: World, name):
    name = _scene_name(name)
    db = w.read("Scenes")
    if name not in db:
        raise Exception("Scene not found.")
    return db[name]


def timed_switch(w: World, name, time, on):
    name = name.strip().lower()
    if name == "":
        raise Exception("Name cannot be empty.")
    time = normalize_datetime(time, DT)
    if isinstance(time, Exception):
        raise time
    timers = w.write("TimeSwitch").setdefault(name, [])
    for timer in timers:
        if timer["time"] == time:
            timer["on"] = on
            return "success"
    timers.append({"time": time, "on": on})
    return "success"


def cancel_timed_switch(w: World, name, time):
    name = name.strip().lower()
    if name == "":
        raise Exception("name cannot be empty.")
    time = normalize_datetime(time, DT)
    if isinstance(time, Exception):
        raise time
    db = w.write("TimeSwitch")
    if name not in db:
        raise Exception("device name does not exist.")
    for i, timer in enumerate(db[name]):
        if timer["time"] == time:
            db[name].pop(i)
            return "success"
    raise Exception("time does not exist.")


# -- information ------------------------------------------------------------------------------


def book_hotel(w: World, hotel_name, check_in_time, check_out_time, room_count, adult_count, child_count):
    check_in = strptime(check_in_time, D)
    check_out = strptime(check_out_time, D)
    if adult_count > 2 and room_count == 1:
        raise Exception("The number of adults is greater than 2. Two rooms are ordered.")
    db = w.write("Hotel")
    for order in db.values():
        if order["hotel_name"] != hotel_name:
            continue
        o_in, o_out = strptime(order["check_in_time"], D), strptime(order["check_out_time"], D)
        if (o_in <= check_in < o_out) or (o_in < check_out <= o_out):
            raise Exception("The room is not available.")
    order_id = str(len(db) + 1)
    db[order_id] = {
        "hotel_name": hotel_name,
        "check_in_time": check_in_time,
        "check_out_time": check_out_time,
        "room_count": room_count,
        "adult_count": adult_count,
        "child_count": child_count,
    }
    return order_id


def document_qa(w: World, url, question):
    url, question = url.strip(), question.strip()
    if question == "":
        raise Exception("The question is empty.")
    db = w.read("QuestionAnswering")
    if url not in db:
        raise Exception("The document of this url failed to be processed.")
    entries = db[url]
    # upstream: ``question not in database[url]``; the stored value is a list of
    # {question, answer} dicts, so a question string is never found in it.
    if isinstance(entries, dict) and question in entries:
        return entries[question]
    return "The question is too difficult to answer."


def image_caption(w: World, url):
    url = url.strip()
    if not url.endswith((".jpg", ".jpeg", ".png")):
        raise Exception("The url should end with .jpg, .jpeg or .png.")
    for item in w.read("ImageCaptioning"):
        if item.get("url") == url:
            return item["caption"]
    raise Exception("The image of this url failed to be processed.")


def speech_recognition(w: World, url):
    url = url.strip()
    if not url.endswith(".wav"):
        raise Exception("The url should end with .wav.")
    db = w.read("SpeechRecognition")
    if url in db:
        return db[url]
    raise Exception("The audio of this url failed to be processed.")


def query_history_date(date) -> str | Exception:
    """QueryHistoryToday.filter_date_format: '%m-%d' text, or the ValueError."""
    text = pad_year(date)
    try:
        return strptime(text, D).strftime("%m-%d")
    except Exception:  # noqa: BLE001
        try:
            return strptime(text, "%m-%d").strftime("%m-%d")
        except Exception as exc:  # noqa: BLE001
            return exc


def query_history_today(w: World, date):
    key = query_history_date(date)
    if isinstance(key, Exception):
        raise key
    db = w.read("History")
    if key not in db:
        raise Exception("The date is not in the database.")
    return [
        f"Title: {h['Title'].strip()}, Date: {h['Date'].strip()}, Description: {h['Description'].strip()}"
        for h in db[key]
    ]


def stock_format(stock_code, date):
    """QueryStock.format_check: (CODE or None, normalised date or exception)."""
    code = stock_code.upper().strip() or None
    return code, normalize_datetime(date, D)


def query_stock(w: World, stock_code, date):
    code, date = stock_format(stock_code, date)
    if code is None:
        raise Exception("The stock code cannot be empty.")
    if isinstance(date, Exception):
        raise date
    db = w.read("Stock")
    if code not in db:
        raise Exception("The stock code does not exist.")
    if date not in db[code]:
        raise Exception("The stock price of this date is not maintained.")
    return db[code][date]


def wiki(w: World, keyword):
    key = keyword.replace("_", " ").strip().lower()
    db = w.read("Wiki")
    if key in db:
        return {"url": db[key]["url"], "summary": db[key]["summary"]}
    raise Exception("Keyword not found.")


def play_music(w: World, music_name):
    name = music_name.lower().strip()
    if name == "":
        raise Exception("The music name cannot be empty.")
    return f"music://{name}"


_EMAIL_RE = re.compile(r"^[a-z0-9]+[\._]?[a-z0-9]+[@]\w+[.]\w{2,3}$")


def send_email(w: World, receiver, subject, content):
    receiver, subject, content = receiver.strip(), subject.strip(), content.strip()
    if not _EMAIL_RE.match(receiver):
        raise Exception("Email address of the receiver is invalid.")
    if subject == "":
        raise Exception("Subject cannot be empty.")
    if content == "":
        raise Exception("Content cannot be empty.")
    return "success"


def get_today(w: World):
    return "2023-03-31"


# -- calculator -----------------------------------------------------------------------------

MAX_FORMULA_CHARS = 2000


def _apply(a, op, b):
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a / b
    raise Exception("invalid formula")


def _reduce(tokens: list, depth: int = 0):
    """Upstream Calculator.calculate_formula: parentheses first (first '(' with the first
    ')'), then the leftmost of * and /, then the leftmost of + and -."""
    if depth > 100:
        raise Exception("invalid formula")
    while "(" in tokens:
        left, right = tokens.index("("), tokens.index(")")
        tokens[left : right + 1] = [_reduce(tokens[left + 1 : right], depth + 1)]
    for ops in (("*", "/"), ("+", "-")):
        while any(op in tokens for op in ops):
            index = min(tokens.index(op) for op in ops if op in tokens)
            if index == 0 or index == len(tokens) - 1:
                raise Exception("invalid formula")
            tokens[index - 1 : index + 2] = [_apply(tokens[index - 1], tokens[index], tokens[index + 1])]
    return tokens[0]


def calculate(formula: str) -> float:
    formula = formula.replace(" ", "")
    n_ops = sum(formula.count(op) for op in "+-*/")
    if (
        not formula
        or len(formula) > MAX_FORMULA_CHARS
        or any(c not in "0123456789+-*/()" for c in formula)
        or formula.count("(") != formula.count(")")
        or n_ops == 0
        or n_ops + 1 == len(formula)
    ):
        raise Exception("invalid formula")
    tokens: list = []
    number = ""
    for c in formula:
        if c.isdigit():
            number += c
            continue
        if number:
            tokens.append(float(number))
            number = ""
        tokens.append(c)
    if number:
        tokens.append(float(number))
    return _reduce(tokens)


def calculator(w: World, formula):
    return calculate(formula)


# -- search engine (BM25Okapi) -------------------------------------------------------------


class BM25:
    """BM25Okapi as in rank_bm25 (k1=1.5, b=0.75, epsilon=0.25)."""

    def __init__(self, corpus: list[list[str]], k1: float = 1.5, b: float = 0.75, epsilon: float = 0.25):
        self.k1, self.b = k1, b
        self.doc_freqs = []
        self.doc_len = []
        df: dict[str, int] = {}
        for doc in corpus:
            freqs: dict[str, int] = {}
            for word in doc:
                freqs[word] = freqs.get(word, 0) + 1
            self.doc_freqs.append(freqs)
            self.doc_len.append(len(doc))
            for word in freqs:
                df[word] = df.get(word, 0) + 1
        n = len(corpus)
        self.avgdl = sum(self.doc_len) / n if n else 0.0
        self.idf: dict[str, float] = {}
        negative = []
        total = 0.0
        for word, freq in df.items():
            idf = math.log(n - freq + 0.5) - math.log(freq + 0.5)
            self.idf[word] = idf
            total += idf
            if idf < 0:
                negative.append(word)
        eps = epsilon * (total / len(self.idf)) if self.idf else 0.0
        for word in negative:
            self.idf[word] = eps

    def scores(self, query: list[str]) -> list[float]:
        out = [0.0] * len(self.doc_freqs)
        for q in query:
            idf = self.idf.get(q)
            if idf is None:
                continue
            for i, freqs in enumerate(self.doc_freqs):
                f = freqs.get(q, 0)
                if f:
                    denom = f + self.k1 * (1 - self.b + self.b * self.doc_len[i] / self.avgdl)
                    out[i] += idf * (f * (self.k1 + 1) / denom)
        return out


_WORD_RE = re.compile(r"\w+|[^\w\s]")


def word_tokenize(text: str) -> list[str]:
    try:
        from nltk.tokenize import NLTKWordTokenizer
    except Exception:  # noqa: BLE001 - NLTK is optional
        return _WORD_RE.findall(text)
    return NLTKWordTokenizer().tokenize(text)


_BM25_CACHE: dict[int, BM25] = {}


def search_engine(w: World, keyword):
    db = w.read("SearchEngine")
    bm25 = _BM25_CACHE.get(id(db))
    if bm25 is None:
        bm25 = _BM25_CACHE[id(db)] = BM25(db["tokenized_documents"])
    scores = bm25.scores(word_tokenize(keyword.lower().strip()))
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:2]
    return [db["raw_documents"][i] for i in order]


# -- network APIs (fixtures) ------------------------------------------------------------------

_LANGUAGE_CODES = {
    "english": "en", "spanish": "es", "french": "fr", "german": "de", "italian": "it",
    "portuguese": "pt", "russian": "ru", "japanese": "ja", "korean": "ko", "arabic": "ar",
    "hindi": "hi", "dutch": "nl", "greek": "el", "turkish": "tr", "swedish": "sv",
    "polish": "pl", "vietnamese": "vi", "thai": "th", "indonesian": "id", "hebrew": "he",
}  # fmt: skip


def language_code(lang: str | None) -> str:
    """Upstream Translate.detect_language over a fixed language table (no googletrans)."""
    if lang is None:
        return "en"
    lang = lang.lower()
    if "chinese" in lang:
        return "zh-tw" if "traditional" in lang else "zh-cn"
    if lang in _LANGUAGE_CODES.values() or lang in ("zh-cn", "zh-tw"):
        return lang
    for name, code in _LANGUAGE_CODES.items():
        if name in lang:
            return code
    raise Exception("Language not supported.")


def dictionary_key(keyword: str) -> str:
    return keyword.replace("_", " ").strip().lower()


def translate_key(src: str, tgt_lang: str | None) -> tuple[str, str]:
    return src.strip(), language_code(tgt_lang)


def dictionary(w: World, keyword):
    fixtures = w.tool_state.get("_fixtures", {}).get("Dictionary", {})
    key = dictionary_key(keyword)
    if key in fixtures:
        return fixtures[key]
    raise Exception("Failed.")


def translate(w: World, src, **kwargs):
    src_lang = kwargs.get("src_lang")
    if src_lang is not None:
        language_code(src_lang)
    key = translate_key(src, kwargs.get("tgt_lang"))
    fixtures = w.tool_state.get("_fixtures", {}).get("Translate", {})
    if key in fixtures:
        return fixtures[key]
    raise Exception("Translation is not available offline for this text.")


# -- registry -------------------------------------------------------------------------------

_TOKEN_MEETING = ("token", "meeting_topic", "start_time", "end_time", "location", "attendees")


def _impl(name, func, params, **kw) -> ApiImpl:
    return ApiImpl(name=name, func=func, params=tuple(params), **kw)


LV12_IMPLS: dict[str, ApiImpl] = {
    impl.name: impl
    for impl in [
        _impl("AddAgenda", add_agenda, ("token", "content", "time", "location")),
        _impl("AddAlarm", add_alarm, ("token", "time")),
        _impl("AddMeeting", add_meeting, _TOKEN_MEETING),
        _impl("AddReminder", add_reminder, ("token", "content", "time")),
        _impl("AddScene", add_scene, ("name", "devices")),
        _impl("AppointmentRegistration", appointment_registration, ("patient_name", "date", "doctor_name")),
        _impl(
            "BookHotel",
            book_hotel,
            ("hotel_name", "check_in_time", "check_out_time", "room_count", "adult_count", "child_count"),
        ),
        _impl("Calculator", calculator, ("formula",)),
        _impl("CancelRegistration", cancel_registration, ("appointment_id",)),
        _impl("CancelTimedSwitch", cancel_timed_switch, ("name", "time")),
        _impl("CheckToken", check_token, ("token",), with_api_name=False),
        _impl("DeleteAccount", delete_account, ("token",), with_api_name=False),
        _impl("DeleteAgenda", delete_agenda, ("token", "content", "time", "location")),
        _impl("DeleteAlarm", delete_alarm, ("token", "time")),
        _impl("DeleteMeeting", delete_meeting, _TOKEN_MEETING),
        _impl("DeleteReminder", delete_reminder, ("token", "content", "time")),
        _impl("DeleteScene", delete_scene, ("name",)),
        _impl("Dictionary", dictionary, ("keyword",)),
        _impl("DocumentQA", document_qa, ("url", "question")),
        _impl("EmergencyKnowledge", emergency_knowledge, ("symptom",)),
        _impl(
            "ForgotPassword",
            forgot_password,
            ("status", "username", "email", "verification_code", "new_password"),
            kwargs_style=True,
            with_api_name=False,
        ),
        _impl("GetToday", get_today, (), input_none=True),
        _impl("GetUserToken", get_user_token, ("username", "password")),
        _impl("ImageCaption", image_caption, ("url",)),
        _impl("ModifyAgenda", modify_agenda, ("token", "content", "time", "location")),
        _impl("ModifyAlarm", modify_alarm, ("token", "from_time", "to_time")),
        _impl("ModifyMeeting", modify_meeting, _TOKEN_MEETING),
        _impl("ModifyPassword", modify_password, ("token", "old_password", "new_password")),
        _impl(
            "ModifyRegistration",
            modify_registration,
            ("appointment_id", "new_appointment_date", "new_appointment_doctor"),
            defaults={"new_appointment_date": None, "new_appointment_doctor": None},
        ),
        _impl("ModifyReminder", modify_reminder, ("token", "content", "time")),
        _impl("ModifyScene", modify_scene, ("name", "devices")),
        _impl("OpenBankAccount", open_bank_account, ("account", "password", "name")),
        _impl("PlayMusic", play_music, ("music_name",)),
        _impl("QueryAgenda", query_agenda, ("token", "content", "time", "location")),
        _impl("QueryAlarm", query_alarm, ("token", "time")),
        _impl("QueryBalance", query_balance, ("token",)),
        _impl("QueryHealthData", query_health_data, ("user_id", "start_time", "end_time")),
        _impl("QueryHistoryToday", query_history_today, ("date",)),
        _impl("QueryMeeting", query_meeting, _TOKEN_MEETING),
        _impl("QueryRegistration", query_registration, ("patient_name", "date")),
        _impl("QueryReminder", query_reminder, ("token", "content", "time")),
        _impl("QueryScene", query_scene, ("name",)),
        _impl("QueryStock", query_stock, ("stock_code", "date")),
        _impl(
            "RecordHealthData",
            record_health_data,
            ("user_id", "time", "health_data"),
            defaults={"health_data": None},
        ),
        _impl("RegisterUser", register_user, ("username", "password", "email"), with_api_name=False),
        _impl("SearchEngine", search_engine, ("keyword",)),
        _impl("SendEmail", send_email, ("receiver", "subject", "content")),
        _impl("SpeechRecognition", speech_recognition, ("url",)),
        _impl("SymptomSearch", symptom_search, ("symptom",)),
        _impl("TimedSwitch", timed_switch, ("name", "time", "on")),
        _impl("Translate", translate, ("src", "src_lang", "tgt_lang"), kwargs_style=True),
        _impl("Wiki", wiki, ("keyword",)),
    ]
}  # fmt: skip

#: APIs that need the network upstream (answered from recorded fixtures here)
NETWORK_APIS = frozenset({"Dictionary", "Translate"})
