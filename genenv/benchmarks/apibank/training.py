"""API-Bank's training split (``training-data/lv3-api-train.json``) as genenv tasks.

Each item is a level-3-style dialogue cut before one API request: the user's utterance, the API requests made so
far with their recorded results, and the next request (the gold). Its APIs are described in the item (ToolSearcher,
and each API a ToolSearcher result described); almost none of them is implemented by API-Bank (365 distinct
names, 12 in its API code), so these tasks have no executable back-end: a call is checked against the item's
schemas and scored by exact match of API name and arguments with the gold request. They are D_train's base data
(expert traces for the warm start, replayed tasks) and never an evaluation split: no reported number comes from
them.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from genenv.benchmarks.base import Task
from genenv.toolcalls import parse_apibank_call

from .calls import ArgumentError, json_schema_type, normalize_arguments, shorten

__all__ = ["TRAIN_LEVEL", "call_matches", "training_tasks"]

TRAIN_LEVEL = "train"
_HISTORY = re.compile(r"^API-Request: \[(\w+)\(.*?\)\]->(.*)$")


def _schema(name: str, description: str, params: dict[str, Any]) -> dict[str, Any]:
    properties = {}
    for pname, pspec in (params if isinstance(params, dict) else {}).items():
        pspec = pspec if isinstance(pspec, dict) else {}
        properties[str(pname)] = {
            **json_schema_type(str(pspec.get("type", "str"))),
            "description": str(pspec.get("description", "")),
        }
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(properties)},
        },
    }


def _described_apis(lines: list[str]) -> list[dict[str, Any]]:
    """Tool schemas of ToolSearcher (a JSON line) and of every API a ToolSearcher result described."""
    tools: dict[str, dict[str, Any]] = {}
    for line in lines:
        if line.startswith("{"):
            try:
                spec = json.loads(line)
            except ValueError:
                continue
            name = spec.get("apiCode") or spec.get("name")
            if isinstance(name, str):
                tools[name] = _schema(name, str(spec.get("description", "")), spec.get("parameters") or {})
            continue
        match = _HISTORY.match(line)
        if match and match.group(1) == "ToolSearcher":
            try:  # the dataset's own text (a Python dict repr), never model output
                found = ast.literal_eval(match.group(2))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
            for spec in found if isinstance(found, list) else [found]:
                if isinstance(spec, dict) and isinstance(spec.get("name"), str):
                    tools[spec["name"]] = _schema(
                        spec["name"], str(spec.get("description", "")), spec.get("input_parameters") or {}
                    )
    return list(tools.values())


def training_tasks(items: list[dict[str, Any]]) -> list[Task]:
    """One task per training item whose gold request parses, names a described API and gives exactly its parameters."""
    tasks = []
    for index, item in enumerate(items):
        gold = parse_apibank_call(str(item.get("output", "")))
        lines = str(item.get("input", "")).replace("Generate API Request:", "").strip().splitlines()
        tools = _described_apis(lines)
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        if gold is None or gold.name not in schemas or set(gold.arguments) != set(schemas[gold.name]["required"]):
            continue  # 14 requests whose text the dataset garbled (a value swallowed the next parameter)
        dialogue = [line for line in lines if not line.startswith("{")]
        prompt = "\n".join(dialogue).replace("TIME:", "\nTIME:").strip() + "\n"
        tasks.append(
            Task(
                task_id=f"apibank-train-{index:04d}",
                benchmark="apibank",
                prompt=prompt,
                gold={"calls": [{"name": gold.name, "arguments": gold.arguments, "result": None}], "response": None},
                split=TRAIN_LEVEL,
                metadata={"level": TRAIN_LEVEL, "kind": "api", "api": gold.name, "tools": tools, "index": index},
            )
        )
    return tasks


def call_matches(gold: dict[str, Any], name: Any, arguments: Any) -> bool:
    """Exact match of API name and arguments (values compared as stripped strings, as the request text has them)."""
    if name != gold.get("name") or not isinstance(arguments, dict):
        return False
    want = {str(k): str(v).strip() for k, v in (gold.get("arguments") or {}).items()}
    got = {str(k): str(v).strip() for k, v in arguments.items()}
    return want == got


def check_described_call(schemas: dict[str, dict[str, Any]], name: Any, arguments: Any) -> dict[str, Any]:
    """A training-split call checked against the item's schemas; its result has no output (nothing runs)."""
    if not isinstance(name, str) or name not in schemas:
        raise ArgumentError("unknown_tool", f"invalid tool name: {shorten(name, 200)}")
    args = normalize_arguments(arguments)
    params = schemas[name].get("properties") or {}
    unknown = sorted(str(k) for k in args if k not in params)
    if unknown:
        raise ArgumentError("unknown_argument", "invalid parameter name. parameter: " + ", ".join(unknown))
    missing = [p for p in schemas[name].get("required") or [] if p not in args]
    if missing:
        raise ArgumentError("missing_argument", f"missing required argument(s): {', '.join(missing)}")
    return {"api_name": name, "input": args, "output": None, "exception": None}
