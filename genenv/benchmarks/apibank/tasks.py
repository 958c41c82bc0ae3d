"""API-Bank's test samples as genenv tasks: levels 1 and 2 (API-call and response samples) and level 3 (the training
split is :mod:`.training`)."""

from __future__ import annotations

import json
import re
from typing import Any

from ..base import Task
from .data import TEST_FILES, APIBankData, dialogue_samples, repair_legacy

LEVELS = ("level-1", "level-2", "level-3")


def level_tasks(data: APIBankData, level: str, kind: str, legacy: bool) -> list[Task]:
    """The tasks of ``level``: its API-call samples then its response samples (``kind``: ``api`` or ``response``
    for one kind only); ``legacy``: gold inputs recorded with legacy parameter names renamed (``legacy_device_id``)."""
    if level == "level-3":
        return _level3_tasks(data)
    api_file, response_file = TEST_FILES[level]
    tasks: list[Task] = []
    if kind in ("", "api"):
        tasks += _level12_tasks(data, level, api_file, "api", legacy)
    if kind in ("", "response"):
        tasks += _level12_tasks(data, level, response_file, "response", legacy)
    return tasks


def _level12_tasks(data: APIBankData, level: str, rel: str, kind: str, legacy: bool) -> list[Task]:
    """The samples of test file ``rel`` (``kind``: ``api`` or ``response``) of level 1 or 2."""

    def repaired(name: str, mapping: dict[str, Any] | None) -> dict[str, Any] | None:
        return repair_legacy(name, mapping) if legacy else mapping

    tasks = []
    for index, sample in enumerate(data.test_samples(rel)):
        history = data.dialogue(level, sample["file"])
        prefix_len, truth = dialogue_samples(history)[sample["id"]]
        apis = instruction_apis(sample.get("instruction", ""))
        if truth.get("role") == "API":
            name, result = truth["api_name"], truth.get("result")
            if isinstance(result, dict):
                result = {**result, "input": repaired(name, result.get("input"))}
            calls = [{"name": name, "arguments": repaired(name, truth.get("param_dict") or {}), "result": result}]
            response, api = None, name
        else:
            calls, response = [], truth.get("text", "")
            api = next(
                (t["api_name"] for t in reversed(history[:prefix_len]) if t.get("role") == "API"),
                "",
            )
        replay = [
            {
                "name": t["api_name"],
                "arguments": repaired(t["api_name"], t.get("param_dict") or {}),
                "output": (t.get("result") or {}).get("output"),
            }
            for t in history[:prefix_len]
            if t.get("role") == "API"
        ]
        tag = "l1" if level == "level-1" else "l2"
        tasks.append(
            Task(
                task_id=f"apibank-{tag}-{kind}-{index:04d}",
                benchmark="apibank",
                prompt=clean_prompt(sample.get("input", "")),
                gold={"calls": calls, "response": response},
                split=level,
                metadata={
                    "level": level,
                    "kind": "api" if truth.get("role") == "API" else "response",
                    "file": rel,
                    "index": index,
                    "dialogue": sample["file"],
                    "sample_id": sample["id"],
                    "apis": apis,
                    "api": api,
                    "replay": replay,
                },
            )
        )
    return tasks


def _level3_tasks(data: APIBankData) -> list[Task]:
    """The 50 tasks of level-3.json: a requirement, its gold chain of calls and the gold final response."""
    tasks = []
    for index, item in enumerate(data.test_samples(TEST_FILES["level-3"][0])):
        calls = [
            {"name": a["api_name"], "arguments": a.get("input") or {}, "result": a.get("output")}
            for a in item.get("apis", [])
        ]
        main = next((c["name"] for c in calls if c["name"] != "ToolSearcher"), "")
        requirement = item.get("requirement", "").strip()
        tasks.append(
            Task(
                task_id=f"apibank-l3-{index:04d}",
                benchmark="apibank",
                prompt=f"User: {requirement}\n",
                gold={"calls": calls, "response": item.get("response")},
                split="level-3",
                metadata={
                    "level": "level-3",
                    "kind": "chain",
                    "file": TEST_FILES["level-3"][0],
                    "index": index,
                    "sample_id": index,
                    "apis": ["ToolSearcher"],
                    "api": main,
                },
            )
        )
    return tasks


def level_and_kind(split: str) -> tuple[str, str]:
    """The level and the sample kind a split names: ``level-1-api`` (or ``level-1:api``) is ``("level-1", "api")``,
    ``level-1`` is ``("level-1", "")``; an unknown split's kind is ``"?"``."""
    if ":" in split:
        level, _, kind = split.partition(":")
        return level, kind
    for level in LEVELS:
        if split == level:
            return level, ""
        for kind in ("api", "response"):
            if split == f"{level}-{kind}" and level != "level-3":
                return level, kind
    return split, "?"


def instruction_apis(instruction: str) -> list[str]:
    """API names listed after 'API descriptions:' in a test sample's instruction."""
    _, _, tail = instruction.partition("API descriptions:")
    names = []
    for line in tail.strip().splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("name"), str):
            names.append(obj["name"])
    return names


def clean_prompt(text: str) -> str:
    """A test sample's input without its closing "Generate API Request:" / "Generate AI Response:" line."""
    text = re.sub(r"\n?Generate (API Request|AI Response):\s*$", "\n", text.rstrip() + "\n")
    return text.lstrip()
