"""Reference information: what a sole-planning agent is given up front, and how it is shown.

The train queries come with the official reference information (``train/train_ref_info.jsonl``:
``"Attractions in X"`` / ``"Restaurants in X"`` / ``"Accommodations in X"`` -> rows, ``"Flight from A
to B on D"`` -> rows or a sentence, ``"Self-driving from A to B"`` / ``"Taxi from A to B"`` -> a
sentence). For other queries (validation, generated tasks) :func:`build_reference` assembles the
same dictionary from the database for given cities and travel legs.

:func:`render_reference` writes it compactly for a small model's context: one line per row with
the columns a plan needs (attraction names only; restaurant cost, cuisines, rating; accommodation
price, room type, house rules, minimum nights, maximum occupancy, rating; flight number, price and
times), optionally keeping only the first ``max_rows`` rows of each section (the cut is stated in
the text, so the agent knows the list is partial).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base import read_data_json
from .database import HOW_TO_GET, TravelDatabase

REFERENCE_FILE = "train/train_ref_info.jsonl"

_COLUMNS = {
    "Attractions": ["Name"],
    "Restaurants": ["Name", "Average Cost", "Cuisines", "Aggregate Rating"],
    "Accommodations": [
        "NAME",
        "price",
        "room type",
        "house_rules",
        "minimum nights",
        "maximum occupancy",
        "review rate number",
    ],  # fmt: skip
    "Flight": ["Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime"],
}
_HEADERS = {
    "Attractions": "name",
    "Restaurants": "name | average cost | cuisines | rating",
    "Accommodations": "name | price per night | room type | house rules | minimum nights | maximum occupancy | rating",
    "Flight": "flight number | price | departure | arrival | duration",
}


def load_train_reference(data_dir: Path) -> list[dict[str, Any]]:
    """The official reference information of the 45 train queries, in query order."""
    return read_data_json(Path(data_dir) / REFERENCE_FILE, "travelplanner", HOW_TO_GET, lines=True)


def build_reference(db: TravelDatabase, cities: list[str], legs: list[tuple[str, str, str | None]]) -> dict[str, Any]:
    """Reference information from the database: each city's tables, then each leg's transport.

    ``legs`` are (origin, destination, date); a leg without a date gets no flight entry. Without
    the full flights table a flight entry is listed only where the available subset has flights.
    """
    reference: dict[str, Any] = {}
    for city in cities:
        reference[f"Attractions in {city}"] = list(db.attractions.get(city, []))
        reference[f"Restaurants in {city}"] = list(db.restaurants.get(city, []))
        reference[f"Accommodations in {city}"] = list(db.accommodations.get(city, []))
    for origin, destination, day in legs:
        if day is not None:
            flights = db.search_flights(origin, destination, day)
            if flights or db.flights_complete:
                reference[f"Flight from {origin} to {destination} on {day}"] = (
                    flights or f"There is no flight from {origin} to {destination} on {day}."
                )
        reference[f"Self-driving from {origin} to {destination}"] = db.distance(
            origin, destination, "self-driving"
        ).describe()
        reference[f"Taxi from {origin} to {destination}"] = db.distance(origin, destination, "taxi").describe()
    return reference


def _cell(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def render_rows(kind: str, rows: list[dict[str, Any]], max_rows: int | None = None) -> str:
    """Rows of one table kind ("Attractions", "Restaurants", "Accommodations", "Flight") as text lines."""
    shown = rows if max_rows is None else rows[:max_rows]
    lines = [f"({_HEADERS[kind]})"]
    lines += [" | ".join(_cell(row.get(column, "")) for column in _COLUMNS[kind]) for row in shown]
    if len(shown) < len(rows):
        lines.append(f"... {len(rows) - len(shown)} more not shown")
    return "\n".join(lines)


def render_reference(reference: dict[str, Any], max_rows: int | None = None) -> str:
    """The reference information as compact text (see the module docstring)."""
    blocks = []
    for description, content in reference.items():
        kind = description.split(" ", 1)[0]
        if isinstance(content, list) and kind in _COLUMNS:
            blocks.append(f"{description}:\n{render_rows(kind, content, max_rows)}")
        else:
            blocks.append(f"{description}: {content}")
    return "\n\n".join(blocks)
