"""Loading API-Bank data: specs, init databases, dialogues, test samples, fixtures.

Ground truth follows the official evaluator (``evaluator_by_json.py``): a test sample
``{file, id}`` points into the dialogue ``lv1-lv2-samples/<dir>/<file>``; the dialogue's
samples are made by ``Sample.from_chat_history`` - for the API turn at position ``i`` two
samples in order: (history[:i] -> turn i) and (history[:i+1] -> turn i+1) - and ``id`` is
the index in that list. An API ground truth carries ``api_name``, ``param_dict`` (the call
as text) and ``result`` (the recorded result dict); an AI ground truth carries ``text``.
"""

from __future__ import annotations

import threading
from functools import cached_property
from pathlib import Path
from typing import Any

from ..base import read_data_json, require_files
from .apis_lv12 import dictionary_key, translate_key

HOW_TO_GET = (
    "API-Bank (Li et al., EMNLP 2023) from GitHub AlibabaResearch/DAMO-ConvAI, folder api-bank/ "
    "(init_database/, lv1-lv2-samples/, lv3-samples/, data/exceptions.json), with test-data/ and "
    "training-data/ from commit 1d76900822d9ecfcd6e9eb0ca64a073cb892b735 or the Hugging Face "
    "dataset liminghao1630/API-Bank; meta/api_specs.json and meta/lv3_api_tables.json are the "
    "machine-readable API specs and level-3 tables (see SOURCE.md of the prepared data folder)."
)

DB_NAMES = (
    "Account", "Agenda", "Alarm", "Appointments", "Bank", "HealthData", "History", "Hotel",
    "ImageCaptioning", "Meeting", "QuestionAnswering", "Reminder", "Scenes", "SearchEngine",
    "SpeechRecognition", "Stock", "Symptom", "TimeSwitch", "Wiki",
)  # fmt: skip

SPEC_FILES = ["meta/api_specs.json", "meta/lv3_api_tables.json"]
DB_FILES = [f"init_database/{name}.json" for name in DB_NAMES]
DIALOGUE_DIRS = {"level-1": "lv1-lv2-samples/level-1-given-desc", "level-2": "lv1-lv2-samples/level-2-toolsearcher"}
TEST_FILES = {
    "level-1": ("test-data/level-1-api.json", "test-data/level-1-response.json"),
    "level-2": ("test-data/level-2-api.json", "test-data/level-2-response.json"),
    "level-3": ("test-data/level-3.json",),
}
TRAIN_FILE = "training-data/lv3-api-train.json"

#: Parameters the recorded dialogues use under an older name: (api, old) -> current.
#: TimedSwitch / CancelTimedSwitch were recorded with ``device_id`` before the released
#: API named the device ``name``; the value is the same identifier the user gives.
LEGACY_PARAM_ALIASES: dict[tuple[str, str], str] = {
    ("TimedSwitch", "device_id"): "name",
    ("CancelTimedSwitch", "device_id"): "name",
}


def _read_json(path: Path) -> Any:
    return read_data_json(path, "apibank", HOW_TO_GET)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return read_data_json(path, "apibank", HOW_TO_GET, lines=True)


def dialogue_samples(history: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """``Sample.from_chat_history``: [(prefix length, ground-truth turn), ...] in id order."""
    samples = []
    for i, turn in enumerate(history):
        if turn.get("role") == "API":
            samples.append((i, history[i]))
            if i + 1 < len(history):
                samples.append((i + 1, history[i + 1]))
    return samples


def repair_legacy(api_name: str, mapping: dict[str, Any] | None) -> dict[str, Any] | None:
    """Rename legacy parameter names (see :data:`LEGACY_PARAM_ALIASES`) in ``mapping``."""
    if not isinstance(mapping, dict):
        return mapping
    out = {}
    for key, value in mapping.items():
        out[LEGACY_PARAM_ALIASES.get((api_name, key), key)] = value
    return out


class APIBankData:
    """Lazily loaded, read-only view of one API-Bank data folder."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """What a copy (``copy.deepcopy``, ``pickle``) keeps: the data read so far; it gets its own lock."""
        return {key: value for key, value in self.__dict__.items() if key != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _lock=threading.Lock())

    def require(self, files: list[str]) -> None:
        require_files(self.root, files, "apibank", HOW_TO_GET)

    # -- static data -------------------------------------------------------------------
    @cached_property
    def specs(self) -> list[dict[str, Any]]:
        self.require(SPEC_FILES)
        return _read_json(self.root / "meta/api_specs.json")

    @cached_property
    def lv12_specs(self) -> dict[str, dict[str, Any]]:
        return {s["name"]: s for s in self.specs if not s.get("level_set", "").startswith("lv3")}

    @cached_property
    def lv3_specs(self) -> dict[str, dict[str, Any]]:
        return {s["name"]: s for s in self.specs if s.get("level_set", "").startswith("lv3")}

    @cached_property
    def released_db(self) -> dict[str, Any]:
        """The init databases as released (and the level-3 tables under ``'__lv3__'``)."""
        self.require(DB_FILES + SPEC_FILES)
        db = {name: _read_json(self.root / f"init_database/{name}.json") for name in DB_NAMES}
        db["__lv3__"] = _read_json(self.root / "meta/lv3_api_tables.json")
        return db

    @cached_property
    def init_db(self) -> dict[str, Any]:
        """:attr:`released_db` with the timers of :attr:`implied_timers` added to TimeSwitch."""
        db = dict(self.released_db)
        db["TimeSwitch"] = dict(db["TimeSwitch"])
        for device, timers in self.implied_timers.items():
            db["TimeSwitch"].setdefault(device, timers)
        return db

    # -- dialogues ----------------------------------------------------------------------
    def dialogue(self, level: str, file: str) -> list[dict[str, Any]]:
        with self._lock:
            cache = self.__dict__.setdefault("_dialogues", {})
            key = (level, file)
            if key not in cache:
                path = self.root / DIALOGUE_DIRS[level] / file
                self.require([f"{DIALOGUE_DIRS[level]}/{file}"])
                cache[key] = _read_jsonl(path)
            return cache[key]

    def all_dialogue_files(self) -> list[tuple[str, Path]]:
        out = []
        for level, folder in DIALOGUE_DIRS.items():
            base = self.root / folder
            if base.is_dir():
                out += [(level, p) for p in sorted(base.glob("*.jsonl"))]
        return out

    @cached_property
    def fixtures(self) -> dict[str, dict[Any, Any]]:
        """Recorded results of the network APIs (Dictionary, Translate) keyed by input."""
        fixtures: dict[str, dict[Any, Any]] = {"Dictionary": {}, "Translate": {}}
        for level, path in self.all_dialogue_files():
            for turn in self.dialogue(level, path.name):
                if turn.get("role") != "API" or turn.get("api_name") not in fixtures:
                    continue
                result = turn.get("result") or {}
                inp = result.get("input") or {}
                if result.get("exception") is not None or result.get("output") is None:
                    continue
                try:
                    if turn["api_name"] == "Dictionary":
                        key = dictionary_key(inp["keyword"])
                    else:
                        key = translate_key(inp["src"], inp.get("tgt_lang"))
                except Exception:  # noqa: BLE001 - a malformed record is skipped
                    continue
                fixtures[turn["api_name"]].setdefault(key, result["output"])
        return fixtures

    @cached_property
    def implied_timers(self) -> dict[str, list[dict[str, Any]]]:
        """Timers that recorded CancelTimedSwitch successes presuppose but TimeSwitch.json
        lacks (the dialogues name devices by a legacy numeric id, e.g. ``10000025``)."""
        path = self.root / "init_database/TimeSwitch.json"
        known = _read_json(path) if path.exists() else {}
        timers: dict[str, list[dict[str, Any]]] = {}
        for level, p in self.all_dialogue_files():
            for turn in self.dialogue(level, p.name):
                if turn.get("role") != "API" or turn.get("api_name") != "CancelTimedSwitch":
                    continue
                result = turn.get("result") or {}
                inp = repair_legacy("CancelTimedSwitch", result.get("input")) or {}
                if result.get("output") != "success" or not isinstance(inp.get("name"), str):
                    continue
                device = inp["name"].strip().lower()
                if device in known:
                    continue
                entry = {"time": inp.get("time"), "on": True}
                if entry not in timers.setdefault(device, []):
                    timers[device].append(entry)
        return timers

    # -- test sets -----------------------------------------------------------------------
    def test_samples(self, rel: str) -> list[dict[str, Any]]:
        self.require([rel])
        return _read_json(self.root / rel)

    @cached_property
    def training_api_samples(self) -> list[dict[str, Any]]:
        self.require([TRAIN_FILE])
        return _read_json(self.root / TRAIN_FILE)
