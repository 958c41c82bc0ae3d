"""The two-stage tools over the sandbox database (``agents/tool_agents.py`` of the official repo).

Eight tools, named as in the official ReAct prompt: ``FlightSearch``, ``GoogleDistanceMatrix``,
``AccommodationSearch``, ``RestaurantSearch``, ``AttractionSearch``, ``CitySearch``,
``NotebookWrite`` and ``Planner``. Cities are validated against ``citySet.txt`` and dates against
``YYYY-MM-DD`` as upstream; "no result" answers follow upstream's sentences. ``NotebookWrite`` stores
the latest search result under a short description. Upstream's ``Planner`` is a second LLM that
writes the plan from the notebook; here the agent is the planner: ``Planner`` returns the notebook
(the "given information") with the query, and the agent's next plain answer is the plan.

Without the full flights table, ``FlightSearch`` answers from the train-reference subset only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..base import StepResult, ToolCall, string_tool
from .database import TravelDatabase
from .reference import render_rows

TOOL_SCHEMAS: list[dict[str, Any]] = [
    string_tool(
        "FlightSearch",
        "Flights from one city to another on a date.",
        {"origin": "departure city", "destination": "arrival city", "date": "travel date, YYYY-MM-DD"},
    ),
    string_tool(
        "GoogleDistanceMatrix",
        "Distance, duration and cost of driving between two cities.",
        {"origin": "departure city", "destination": "arrival city", "mode": "'self-driving' or 'taxi'"},
    ),
    string_tool("AccommodationSearch", "Accommodations in a city.", {"city": "city name"}),
    string_tool("RestaurantSearch", "Restaurants in a city.", {"city": "city name"}),
    string_tool("AttractionSearch", "Attractions in a city.", {"city": "city name"}),
    string_tool("CitySearch", "Cities of a state.", {"state": "state name"}),
    string_tool(
        "NotebookWrite",
        "Store the latest search result in the notebook under a short description.",
        {"description": "short description, e.g. 'Flights from Rome to Paris on 2022-03-01'"},
    ),
    string_tool(
        "Planner",
        "Show the notebook and the query; your next answer must then be the final plan.",
        {"query": "the user's query"},
    ),
]
TOOL_NAMES = [schema["function"]["name"] for schema in TOOL_SCHEMAS]
#: what the notebook keeps per episode (so that ``Planner``, which shows all of it, stays bounded too)
MAX_NOTEBOOK_ENTRIES = 64
MAX_NOTEBOOK_CHARS = 200_000
_PARAMS = {s["function"]["name"]: list(s["function"]["parameters"]["properties"]) for s in TOOL_SCHEMAS}


@dataclass
class TwoStageState:
    """One episode: the notebook and the latest search result (what NotebookWrite stores)."""

    notebook: list[tuple[str, str]] = field(default_factory=list)
    latest: str | None = None


def execute_tool(db: TravelDatabase, episode: TwoStageState, call: ToolCall) -> StepResult:
    """Run one two-stage tool call; bad calls come back as errors, never exceptions."""
    if call.name not in _PARAMS:
        return StepResult(f"Invalid Action. Valid Actions are {', '.join(TOOL_NAMES)}.", error="unknown_tool")
    expected = _PARAMS[call.name]
    unknown = [k for k in call.arguments if k not in expected]
    if unknown:
        return StepResult(
            f"{call.name} takes {', '.join(expected)}; unknown: {', '.join(unknown)}.", error="unknown_argument"
        )
    missing = [k for k in expected if k not in call.arguments]
    if missing:
        return StepResult(f"{call.name} needs {', '.join(missing)}.", error="missing_argument")
    args = call.arguments
    if not all(isinstance(args[k], str) for k in expected):
        return StepResult(f"{call.name}: every argument must be text.", error="wrong_type")
    args = {k: v.strip() for k, v in args.items()}
    handler = _HANDLERS[call.name]
    return handler(db, episode, **args)


def _search(episode: TwoStageState, text: str) -> StepResult:
    episode.latest = text
    return StepResult(text, output=text)


def _invalid_city(db: TravelDatabase, city: str) -> StepResult | None:
    if city in db.city_set:
        return None
    return StepResult(f"{city} is not valid city in the city set.", error="execution_error")


def _flights(db: TravelDatabase, episode: TwoStageState, origin: str, destination: str, date: str) -> StepResult:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        return StepResult(f"'{date}' is not in the format YYYY-MM-DD", error="execution_error")
    invalid = _invalid_city(db, origin) or _invalid_city(db, destination)
    if invalid:
        return invalid
    rows = db.search_flights(origin, destination, date)
    if not rows:
        return _search(episode, f"There is no flight from {origin} to {destination} on {date}.")
    return _search(episode, render_rows("Flight", rows))


def _distance(db: TravelDatabase, episode: TwoStageState, origin: str, destination: str, mode: str) -> StepResult:
    mode = mode.lower()
    if mode not in ("self-driving", "taxi"):
        return StepResult("Mode must be 'self-driving' or 'taxi'.", error="execution_error")
    return _search(episode, db.distance(origin, destination, mode).describe())


def _table(kind: str, empty: str):
    tables = {"Accommodations": "accommodations", "Restaurants": "restaurants", "Attractions": "attractions"}

    def handler(db: TravelDatabase, episode: TwoStageState, city: str) -> StepResult:
        invalid = _invalid_city(db, city)
        if invalid:
            return invalid
        rows = getattr(db, tables[kind]).get(city, [])
        return _search(episode, render_rows(kind, rows) if rows else empty)

    return handler


def _cities(db: TravelDatabase, episode: TwoStageState, state: str) -> StepResult:
    cities = db.state_cities.get(state)
    if cities is None:
        return StepResult("Invalid State", error="execution_error")
    return _search(episode, str(cities))


def _notebook_write(db: TravelDatabase, episode: TwoStageState, description: str) -> StepResult:
    if episode.latest is None:
        return StepResult("Nothing to write: search first, then call NotebookWrite.", error="execution_error")
    if len(episode.notebook) >= MAX_NOTEBOOK_ENTRIES:
        return StepResult(
            f"The notebook is full ({MAX_NOTEBOOK_ENTRIES} entries): call Planner and answer with the plan.",
            error="execution_error",
        )
    used = sum(len(d) + len(c) for d, c in episode.notebook)
    if used + len(description) + len(episode.latest) > MAX_NOTEBOOK_CHARS:
        return StepResult(
            f"The notebook is full ({MAX_NOTEBOOK_CHARS} characters): call Planner and answer with the plan.",
            error="execution_error",
        )
    episode.notebook.append((description, episode.latest))
    text = f"The information has been recorded in Notebook, and its index is {len(episode.notebook) - 1}."
    return StepResult(text, output=text)


def _planner(db: TravelDatabase, episode: TwoStageState, query: str) -> StepResult:
    entries = "\n\n".join(f"[{i}] {d}:\n{c}" for i, (d, c) in enumerate(episode.notebook)) or "(the notebook is empty)"
    text = f"Given information (notebook):\n{entries}\n\nQuery: {query}\nNow answer with the final plan."
    return StepResult(text, output=text)


_HANDLERS = {
    "FlightSearch": _flights,
    "GoogleDistanceMatrix": _distance,
    "AccommodationSearch": _table("Accommodations", "There is no accommodation in this city."),
    "RestaurantSearch": _table("Restaurants", "There is no restaurant in this city."),
    "AttractionSearch": _table("Attractions", "There is no attraction in this city."),
    "CitySearch": _cities,
    "NotebookWrite": _notebook_write,
    "Planner": _planner,
}
