"""Simulator-written API-Bank tasks: what the simulator is shown, the task JSON schema, worked examples and parsing.

A generated task is one level-1 API call: the simulator writes the gold call first (against records of the API's
database it is shown, copying identifiers), then the user's request, which must state every argument value of the
call (a token may instead come from the dialogue: :func:`credentials_turns`). The adapter validates it by running the
gold call on fresh databases.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from genenv.toolcalls import parse_apibank_call

from ..base import Task
from .apis_lv12 import LV12_IMPLS, NETWORK_APIS
from .calls import format_api_request
from .data import APIBankData

#: not offered for generated tasks (network fixtures, internal helper, search)
NOT_GENERATED = NETWORK_APIS | {"CheckToken", "ToolSearcher"}
TASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "api": {"type": "string", "description": "name of the API the request needs"},
        "gold_call": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "arguments": {"type": "object", "description": "parameter -> value"},
            },
            "required": ["name", "arguments"],
        },
        "request": {
            "type": "string",
            "description": "what the user says to the assistant: it states every argument value of gold_call",
        },
    },
    "required": ["api", "gold_call", "request"],
}


def generatable_apis(data: APIBankData) -> list[str]:
    """The APIs the simulator may write tasks for (the families of generated tasks)."""
    return sorted(n for n in LV12_IMPLS if n not in NOT_GENERATED and n in data.lv12_specs)


def generation_context(data: APIBankData, family: str, rng: Any) -> str:
    """What the simulator is shown to write a task of API ``family``: its spec, records of its database and accounts
    whose identifiers the gold call may copy."""
    spec = data.lv12_specs.get(family)
    if spec is None or family not in generatable_apis(data):
        raise ValueError(f"unknown or non-generatable API {family!r}")
    shown = {k: spec[k] for k in ("name", "description", "input_parameters", "output_parameters")}
    parts = [
        f"API: {family}",
        "Spec: " + json.dumps(shown, ensure_ascii=False),
        "Today is 2023-03-31 (GetToday). Write the gold call first, so that it succeeds against the records "
        "below (copy identifiers: usernames, passwords, tokens, ids, codes, dates, exactly), then the user's "
        "request. The agent sees only the request, so it must state every argument value of the gold call "
        "(but a token: the dialogue gives the agent the token of its account).",
    ]
    db_name = spec.get("database_name")
    init_db = data.init_db
    accounts = init_db["Account"]
    db = init_db.get(db_name) if db_name else None
    needs_token = "token" in (spec.get("input_parameters") or {})
    users: list[str] = []
    if db_name and db_name != "Account" and db is not None:
        excerpt, users = _db_excerpt(db, rng, accounts)
        parts.append(f"Records of database {db_name}: {excerpt}")
    if needs_token or db_name == "Account":
        users = [u for u in dict.fromkeys(users) if u in accounts][:3]
        users += _sample(rng, [u for u in sorted(accounts) if u not in users], 3 - len(users))
        shown_accounts = {u: accounts[u] for u in users}
        parts.append("Accounts (username -> password, token, email): " + json.dumps(shown_accounts))
        if needs_token:
            parts.append(
                "Put the token of one of these accounts in the gold call; the request need not say it: the "
                "dialogue then gives the agent that account's username and password and its GetUserToken call."
            )
    return "\n".join(parts)


def training_examples(data: APIBankData) -> list[dict[str, Any]]:
    """The training split's API calls as objects in :data:`TASK_SCHEMA` form, keeping only those whose request gives
    every argument value (what validation asks of a generated task)."""
    accounts = data.init_db["Account"]
    examples = []
    for item in data.training_api_samples:
        parsed = parse_apibank_call(item.get("output", ""))
        if parsed is None:
            continue
        name, args = parsed.name, parsed.arguments
        user = [line for line in item.get("input", "").split("\n") if line.startswith("User:")]
        if not user:
            continue
        request = user[-1][len("User:") :].strip()
        request = re.sub(r"\s*TIME:\s*", " (current time: ", request)
        if "(current time:" in request:
            request += ")"
        if ungrounded_arguments(request, args, accounts):
            continue
        examples.append({"api": name, "gold_call": {"name": name, "arguments": args}, "request": request})
    return examples


def generation_schema(tool_schema: dict[str, Any], family: str) -> dict[str, Any]:
    """:data:`TASK_SCHEMA` narrowed to API ``family`` (``tool_schema``: its function schema): its name, and its exact
    argument names and types."""
    parameters = copy.deepcopy(tool_schema["function"]["parameters"])
    for prop in parameters["properties"].values():
        prop.pop("description", None)
        if prop["type"] == "string":
            prop["maxLength"] = 64  # every API-Bank value is short; bounded strings always close
    parameters["additionalProperties"] = False
    return {
        "type": "object",
        "properties": {
            "api": {"type": "string", "enum": [family]},
            "gold_call": {
                "type": "object",
                "properties": {"name": {"type": "string", "enum": [family]}, "arguments": parameters},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            },
            "request": {"type": "string", "minLength": 8, "maxLength": 200},
        },
        "required": ["api", "gold_call", "request"],
        "additionalProperties": False,
    }


def generation_examples(examples: list[dict[str, Any]], family: str, k: int, rng: Any) -> list[dict[str, Any]]:
    """Up to ``k`` of the training ``examples``, those of API ``family`` first."""
    same = [e for e in examples if e["api"] == family]
    others = [e for e in examples if e["api"] not in (family, "ToolSearcher")]
    chosen = _sample(rng, same, min(k, len(same)))
    chosen += _sample(rng, others, max(0, min(k - len(chosen), len(others))))
    return copy.deepcopy(chosen[:k])


def generated_task(data: APIBankData, obj: dict[str, Any], family: str | None = None) -> Task:
    """The task a simulator object in :data:`TASK_SCHEMA` form describes; raises ``ValueError`` with a reason."""
    if not isinstance(obj, dict):
        raise ValueError("task must be a JSON object")
    request = obj.get("request")
    if not isinstance(request, str) or not request.strip():
        raise ValueError("'request' must be a non-empty string")
    if len(request) > 4000:
        raise ValueError("'request' is longer than 4000 characters")
    gold_call = obj.get("gold_call")
    if not isinstance(gold_call, dict):
        raise ValueError("'gold_call' must be an object with 'name' and 'arguments'")
    name = gold_call.get("name")
    arguments = gold_call.get("arguments", {})
    if not isinstance(name, str) or not name:
        raise ValueError("'gold_call.name' must be a string")
    if not isinstance(arguments, dict):
        raise ValueError("'gold_call.arguments' must be an object")
    api = obj.get("api", name)
    if api != name:
        raise ValueError(f"'api' ({api!r}) differs from 'gold_call.name' ({name!r})")
    if family is not None and name != family:
        raise ValueError(f"gold call API {name!r} is not the requested family {family!r}")
    if name not in generatable_apis(data):
        raise ValueError(f"unknown or non-generatable API {name!r}")
    params = data.lv12_specs[name].get("input_parameters") or {}
    unknown = [k for k in arguments if k not in params]
    if unknown:
        raise ValueError(f"unknown argument(s) for {name}: {', '.join(map(str, unknown))}")
    apis = [name]
    prompt = f"User: {request.strip()}\n"
    if "token" in params:
        apis.insert(0, "GetUserToken")
        prompt += credentials_turns(request, arguments.get("token"), data.init_db["Account"])
    digest = hashlib.sha1(json.dumps({"r": request, "c": gold_call}, sort_keys=True, default=str).encode()).hexdigest()[
        :12
    ]
    return Task(
        task_id=f"apibank-gen-{name}-{digest}",
        benchmark="apibank",
        prompt=prompt,
        gold={"calls": [{"name": name, "arguments": copy.deepcopy(arguments), "result": None}], "response": None},
        split="level-1",
        source="generated",
        metadata={"level": "level-1", "kind": "api", "api": name, "apis": apis},
    )


_DATE_OR_TIME = re.compile(r"^(?=\d)(\d{4}-\d{2}-\d{2})?[ T]?(\d{2}:\d{2}(:\d{2})?)?$")


def ungrounded_arguments(request: str, arguments: Mapping[str, Any], accounts: Mapping[str, Any]) -> list[str]:
    """Names of the gold arguments whose values a generated request does not give, so that no agent could write the
    gold call: a value must appear in the request (case and spacing aside); a ``token`` may instead be given by its
    account's username and password (the agent gets it from GetUserToken). Dates and times are left out: requests
    say them in words ("March 16th at 7 a.m.") as API-Bank's own dialogues do."""

    def norm(text: str) -> str:
        return " ".join(text.lower().split())

    said = norm(request)

    def given(value: Any) -> bool:
        if isinstance(value, bool) or value is None:
            return True
        if isinstance(value, (int, float)):
            return any(form in said for form in {str(value), f"{value:g}", f"{value:,}"})
        if isinstance(value, str):
            return not value.strip() or bool(_DATE_OR_TIME.match(value.strip())) or norm(value) in said
        if isinstance(value, Mapping):
            return all(given(v) for v in value.values())
        if isinstance(value, (list, tuple)):
            return all(given(v) for v in value)
        return True

    missing = []
    for name, value in arguments.items():
        if name == "token":
            owners = [user for user, account in accounts.items() if account.get("token") == value]
            if not given(value) and not any(given(o) and given(accounts[o].get("password", "")) for o in owners):
                missing.append("token (nor its account's username and password)")
        elif not given(value):
            missing.append(name)
    return missing


def credentials_turns(request: str, token: Any, accounts: Mapping[str, Any]) -> str:
    """The dialogue turns that give a generated request's token as API-Bank's level-1 dialogues do: the AI asks, the
    user gives the username and password of the token's account, and the GetUserToken call with its result is in the
    history, so the agent's one call is the gold one. Empty when the request states the token itself, or when no
    account holds it (the gold call then fails validation)."""
    owners = [user for user, account in accounts.items() if account.get("token") == token]
    if not owners or not ungrounded_arguments(request, {"token": token}, {}):  # no account, or the request states it
        return ""
    user, password = owners[0], accounts[owners[0]].get("password", "")
    return (
        "AI: Sure. To do that, I need your username and password first.\n"
        f"User: My username is {user} and my password is {password}.\n"
        "AI: Thank you. Let me get your token.\n"
        + history_line("GetUserToken", {"username": user, "password": password}, {"token": token})
        + "\n"
    )


def history_line(name: str, params: dict[str, Any], output: Any) -> str:
    """'API-Request: [Name(k='v')]->output' as in the benchmark prompts."""
    return f"API-Request: {format_api_request(name, params)}->{output}"


def _sample(rng: Any, items: list, k: int) -> list:
    items = list(items)
    k = max(0, min(k, len(items)))
    if k == 0:
        return []
    if hasattr(rng, "sample"):
        return rng.sample(items, k)
    if hasattr(rng, "choice"):
        idx = rng.choice(len(items), size=k, replace=False)
        return [items[int(i)] for i in idx]
    return items[:k]


def _db_excerpt(db: Any, rng: Any, accounts: dict[str, Any], limit: int = 2500) -> tuple[str, list[str]]:
    """A few records of ``db`` as JSON, and the account usernames they mention."""
    users: list[str] = []
    if isinstance(db, list):
        picked: Any = _sample(rng, db, 3)
    elif isinstance(db, dict) and "raw_documents" in db:
        picked = [d.get("title") for d in _sample(rng, db["raw_documents"], 6)]
    elif isinstance(db, dict):
        picked = {k: db[k] for k in _sample(rng, sorted(db, key=str), 5)}
        for key, record in picked.items():
            if key in accounts:
                users.append(key)
            elif isinstance(record, dict) and record.get("username") in accounts:
                users.append(record["username"])
    else:
        picked = db
    text = json.dumps(picked, ensure_ascii=False, default=str)
    return (text if len(text) <= limit else text[:limit] + "..."), users
