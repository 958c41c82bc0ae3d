"""API-Bank scoring modes: how a model's text becomes a call, and which of genenv's deviations apply.

``official`` (the default everywhere a number is reported) reads an action as the official evaluator
does (``api_call_extraction.get_api_call`` + ``parse_api_call``): the first ``[ApiName(...)]`` on one
line (``.*`` is greedy and stops at the line end, so whatever follows on that line, a second call
included, is read as more parameters of the first call), parameters found by a three-branch regex:
a quoted value is cut at its first quote character of either kind, an unquoted value is the first
word (``humidity=0.5`` reads ``'0'``), a list is its source text. Every value is a string; the
API's declared types are applied as ``ToolManager.api_call`` applies them (``isdigit``, ``== 'True'``,
lists passed on as text). Text without such a call is a plain answer.

``genenv`` reads any format :func:`genenv.toolcalls.parse_tool_calls` reads (``<tool_call>`` JSON,
bare JSON, Python call lists with typed literals); training uses it only where the config asks for
``scoring: genenv``, and validation is then scored by the adapter's official counterpart. Both modes ask
the agent for the test prompts' form, ``API-Request: [ApiName(key1='value1', key2='value2', ...)]``.

:data:`DEVIATIONS` are genenv's deliberate departures from the official code, each switchable with
``deviations=``: a list (exactly those on) or a mapping ``{name: bool}`` (changes to the mode's
defaults). ``official`` switches on the data repairs, which make the gold calls reproduce, and
switches off the two that change how model text is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from genenv.benchmarks.base import ToolCall
from genenv.toolcalls import parse_apibank_call, parse_tool_calls

MODES = ("official", "genenv")

#: name -> what it changes and why (docs/benchmarks/apibank.md lists the same).
DEVIATIONS: dict[str, str] = {
    "list_arguments": (
        "list and dict parameters written as text are parsed as literals (never evaluated); upstream hands "
        "the text to the API, so no call with a list argument (AddMeeting attendees, AddScene devices, ...) "
        "can match a recorded input, which holds the parsed list"
    ),
    "lenient_numbers": (
        "int and float text may carry a leading '-' and surrounding spaces, and bool text is compared with "
        "'true' case-insensitively; upstream's isdigit() refuses ' 1 ' and '-1' and only 'True' is true"
    ),
    "legacy_device_id": (
        "TimedSwitch/CancelTimedSwitch gold calls were recorded with a parameter 'device_id' that the "
        "released API calls 'name': gold inputs are renamed, 'device_id' is accepted as an alias, and the "
        "timers the recorded CancelTimedSwitch successes presuppose are added to TimeSwitch"
    ),
    "recorded_descriptions": (
        "level-1/2 ToolSearcher returns the API descriptions of the time the dialogues were recorded, "
        "which the gold ToolSearcher outputs quote; upstream's released classes have newer descriptions"
    ),
    "history_replay": (
        "the calls made earlier in a level-1/2 sample's dialogue are replayed before the sample; upstream "
        "evaluates every sample on untouched databases, which leaves 8 level-1 gold calls unreproducible"
    ),
    "delete_meeting_rule": (
        "the DeleteMeeting rule compares 'start_time'; upstream's reads input['time'], raises KeyError on "
        "every pair of successful calls and so marks even the gold call wrong"
    ),
    "query_scene_case": (
        "QueryScene compares device lists with names normalised as AddScene/ModifyScene store them; the "
        "gold outputs quote an older Scenes table ('Light') than the released one ('light')"
    ),
    "name_keyword": (
        "ToolSearcher keywords that are an API name ('QueryMeeting', 'Query Stock') return that API; the "
        "MiniLM model alone maps 'Add Meeting' to QueryMeeting on 5 of 114 level-3 gold calls"
    ),
}

#: deviations that change how model text is read: off in ``official`` mode
TEXT_DEVIATIONS = frozenset({"list_arguments", "lenient_numbers"})
DEFAULTS = {"official": frozenset(DEVIATIONS) - TEXT_DEVIATIONS, "genenv": frozenset(DEVIATIONS)}

API_REQUEST_FORMAT = "API-Request: [ApiName(key1='value1', key2='value2', ...)]"


@dataclass(frozen=True)
class Scoring:
    """One scoring mode with the deviations that are on."""

    mode: str = "official"
    deviations: frozenset[str] = DEFAULTS["official"]

    @classmethod
    def make(cls, mode: str = "official", deviations: Iterable[str] | Mapping[str, bool] | None = None) -> Scoring:
        """``mode`` with its default deviations, or exactly ``deviations`` (a list) or the defaults
        changed by ``deviations`` (a mapping); unknown names raise ``ValueError``."""
        if mode not in MODES:
            raise ValueError(f"scoring must be one of {', '.join(MODES)}, got {mode!r}")
        on = set(DEFAULTS[mode])
        if isinstance(deviations, Mapping):
            _check_names(deviations)
            for name, value in deviations.items():
                if not isinstance(value, bool):
                    raise ValueError(f"deviation {name!r} must be switched with true or false, got {value!r}")
                (on.add if value else on.discard)(name)
        elif deviations is not None:
            if isinstance(deviations, str):
                raise ValueError("deviations must be a list of names or a mapping of names to true/false")
            on = set(deviations)
            _check_names(on)
        return cls(mode, frozenset(on))

    def on(self, name: str) -> bool:
        """Whether deviation ``name`` applies."""
        if name not in DEVIATIONS:
            raise KeyError(name)
        return name in self.deviations

    def parse(self, text: str) -> list[ToolCall]:
        """The calls in one action: upstream's first ``[ApiName(...)]`` (official) or every call genenv
        reads (genenv; raises :class:`~genenv.toolcalls.ToolCallParseError` on a malformed call)."""
        if self.mode == "genenv":
            return parse_tool_calls(text)
        call = parse_apibank_call(text)
        return [] if call is None else [call]

    def describe(self) -> dict[str, Any]:
        """What results files record: the mode and the deviations on and off."""
        return {
            "mode": self.mode,
            "deviations_on": sorted(self.deviations),
            "deviations_off": sorted(set(DEVIATIONS) - self.deviations),
        }


def _check_names(names: Iterable[str]) -> None:
    unknown = sorted(str(n) for n in names if n not in DEVIATIONS)
    if unknown:
        raise ValueError(f"unknown API-Bank deviation(s) {', '.join(unknown)}; known: {', '.join(DEVIATIONS)}")
