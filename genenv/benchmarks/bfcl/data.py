"""BFCL v4 data: categories, their files, and entries as genenv tasks' raw material.

Files (``$GENENV_DATA_DIR/bfcl``, copied unchanged from ``bfcl_eval/data`` of bfcl-eval 2026.3.23):
``BFCL_v4_<category>.json`` (JSON Lines: ``id``, ``question`` (turns of messages), ``function`` or, for
multi-turn, ``involved_classes``/``initial_config``/``missed_function``), ``possible_answer/BFCL_v4_
<category>.json`` (``ground_truth``, aligned by position) and ``multi_turn_func_doc/*.json`` (the docs
of the multi-turn back-ends, JSON Lines).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from ..base import read_data_json, require_files

AST_NON_LIVE = ("simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple")
AST_LIVE = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")
RELEVANCE = ("irrelevance", "live_irrelevance", "live_relevance")
MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")
CATEGORIES = AST_NON_LIVE + AST_LIVE + RELEVANCE + MULTI_TURN
#: splits that are unions of categories (the leaderboard's groups)
GROUPS: dict[str, tuple[str, ...]] = {
    "non_live": AST_NON_LIVE,
    "live": AST_LIVE,
    "hallucination": RELEVANCE,
    "multi_turn": MULTI_TURN,
    "single_turn": AST_NON_LIVE + AST_LIVE + RELEVANCE,
    "all": CATEGORIES,
}
HOW_TO_GET = (
    "pip download --no-deps bfcl-eval==2026.3.23 and copy the wheel's bfcl_eval/data/ folder (BFCL v4, "
    "Apache-2.0; upstream github.com/ShishirPatil/gorilla, berkeley-function-call-leaderboard/)."
)
#: the multi-turn back-end classes and their doc files (bfcl_eval's MULTI_TURN_FUNC_DOC_FILE_MAPPING)
FUNC_DOC_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
# bfcl_eval's OpenAPI type names of BFCL (Python, Java, JavaScript) types (GORILLA_TO_OPENAPI)
OPENAPI_TYPES = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "double": "number",
    "char": "string",
    "ArrayList": "array",
    "Array": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
    "Any": "string",
    "String": "string",
    "Bigint": "integer",
}


def language(category: str) -> str:
    """The checker language of a category: ``java``, ``javascript`` or ``python``."""
    if "java" in category and "javascript" not in category:
        return "java"
    return "javascript" if "javascript" in category else "python"


def category_of(entry_id: str) -> str:
    """``simple_python_12`` -> ``simple_python``; ``live_simple_3-2-1`` -> ``live_simple``."""
    return entry_id.split(":")[0].rsplit("_", 1)[0]


def expand_split(split: str) -> tuple[str, ...]:
    """The categories of a split: a category, a group of :data:`GROUPS`, or ``+``-joined categories."""
    if split in GROUPS:
        return GROUPS[split]
    parts = tuple(part.strip() for part in split.split("+"))
    unknown = [part for part in parts if part not in CATEGORIES]
    if unknown:
        raise ValueError(
            f"unknown BFCL split {split!r}; choose a category ({', '.join(CATEGORIES)}), a group "
            f"({', '.join(GROUPS)}) or categories joined with '+'"
        )
    return parts


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return read_data_json(path, "bfcl", HOW_TO_GET, lines=True)


class BFCLData:
    """Reads (and caches) one data folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def require(self, categories: tuple[str, ...]) -> None:
        files = [f"BFCL_v4_{c}.json" for c in categories]
        files += [f"possible_answer/BFCL_v4_{c}.json" for c in categories if c not in RELEVANCE]
        if any(c in MULTI_TURN for c in categories):
            files += [f"multi_turn_func_doc/{name}" for name in FUNC_DOC_FILES.values()]
        require_files(self.root, files, "bfcl", HOW_TO_GET)

    def entries(self, category: str) -> list[dict[str, Any]]:
        """The entries of ``category`` with ``ground_truth`` attached (``None`` for relevance ones)."""
        return _entries(self.root, category)

    def func_docs(self, class_name: str) -> list[dict[str, Any]]:
        """The function docs of one multi-turn back-end class."""
        return _func_docs(self.root, class_name)


@cache
def _entries(root: Path, category: str) -> list[dict[str, Any]]:
    entries = _read_jsonl(root / f"BFCL_v4_{category}.json")
    if category in RELEVANCE:
        answers: list[Any] = [None] * len(entries)
    else:
        answers = [a["ground_truth"] for a in _read_jsonl(root / "possible_answer" / f"BFCL_v4_{category}.json")]
        if len(answers) != len(entries):
            raise ValueError(f"{category}: {len(entries)} entries but {len(answers)} ground-truth lines")
    return [{**entry, "ground_truth": answer} for entry, answer in zip(entries, answers)]


@cache
def _func_docs(root: Path, class_name: str) -> list[dict[str, Any]]:
    if class_name not in FUNC_DOC_FILES:
        raise KeyError(f"unknown multi-turn class {class_name!r}")
    return _read_jsonl(root / "multi_turn_func_doc" / FUNC_DOC_FILES[class_name])


def language_hinted(functions: list[dict[str, Any]], category: str) -> list[dict[str, Any]]:
    """The docs as BFCL shows them to models: a language note on each description and, for Java and
    JavaScript, every parameter typed ``string`` with its real type in the description
    (``_func_doc_language_specific_pre_processing``)."""
    functions = copy.deepcopy(functions)
    lang = language(category)
    note = {
        "java": " Note that the provided function is in Java 8 SDK syntax.",
        "javascript": " Note that the provided function is in JavaScript syntax.",
        "python": " Note that the provided function is in Python 3 syntax.",
    }[lang]
    for function in functions:
        function["description"] = function.get("description", "") + note
        if lang == "python":
            continue
        word = "Java" if lang == "java" else "JavaScript"
        for value in function["parameters"].get("properties", {}).values():
            description = value.get("description", "")
            if value.get("type") == "any":
                description += f" This parameter can be of any type of {word} object in string representation."
            else:
                description += f" This is {word} {value.get('type')} type parameter in string representation."
            if value.get("type") in (("ArrayList", "Array") if lang == "java" else ("array",)) and "items" in value:
                element = value["items"].get("type")
                description += f" The list elements are of type {element}; they are not in string representation."
                del value["items"]
            if lang == "javascript" and value.get("type") == "dict" and "properties" in value:
                description += (
                    " The dictionary entries have the following schema; they are not in string representation. "
                    + json.dumps(value["properties"])
                )
                del value["properties"]
            value["description"] = description
            value["type"] = "string"
    return functions


def openai_tool(function: dict[str, Any]) -> dict[str, Any]:
    """A BFCL function doc as an OpenAI/TRL tool schema (``dict`` -> ``object``, ``float`` -> ``number``, ...)."""
    function = copy.deepcopy(function)
    parameters = function.get("parameters") or {}
    parameters["type"] = "object"
    parameters["properties"] = _openapi_properties(parameters.get("properties") or {})
    parameters.setdefault("required", [])
    schema = {"name": function["name"], "description": function.get("description", ""), "parameters": parameters}
    return {"type": "function", "function": schema}


def _openapi_properties(properties: dict[str, Any]) -> dict[str, Any]:
    for prop in properties.values():
        if not isinstance(prop, dict):
            continue
        kind = prop.get("type", "string")
        if kind == "float":
            prop["format"] = "float"
        prop["type"] = OPENAPI_TYPES.get(kind, "string") if isinstance(kind, str) else "string"
        if isinstance(prop.get("properties"), dict):
            prop["properties"] = _openapi_properties(prop["properties"])
        items = prop.get("items")
        if isinstance(items, dict):
            if isinstance(items.get("properties"), dict):
                items["properties"] = _openapi_properties(items["properties"])
            if isinstance(items.get("type"), str):
                items["type"] = OPENAPI_TYPES.get(items["type"], "string")
            if isinstance(items.get("items"), dict) and isinstance(items["items"].get("type"), str):
                items["items"]["type"] = OPENAPI_TYPES.get(items["items"]["type"], "string")
    return properties
