"""The TravelPlanner sandbox database: the CSV tables, loaded and looked up as the official tools do.

Loading follows ``tools/*/apis.py`` of the official repository: each table is read with pandas and
rows with any missing value are dropped (``dropna()``; 762 accommodations without ``house_rules``
disappear this way, exactly as upstream), the distance matrix is read as is, and duplicate
(origin, destination) rows resolve to the first one. Name lookups reproduce the evaluator's
``Name.str.contains(re.escape(name)) & City == city``: a case-sensitive substring match inside
the city, first match in table order.

Flights: only ``flights/flights_subset_from_train_ref_info.csv`` is available (the 313 flights
listed by the 45 train queries' reference information), not the official ``clean_Flights_2022.csv``.
:attr:`TravelDatabase.flights_complete` is ``False`` then, and every check or tool answer that
depends on a flight outside the subset says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..base import require_files

HOW_TO_GET = (
    "TravelPlanner (Xie et al., ICML 2024): the database CSVs from GitHub OSU-NLP-Group/TravelPlanner "
    "(commit 958f30d7e7629d18f33d79183dedf9b2830ff88c, folder database/) or the Google-Drive zip linked "
    "from its README; train/train_ref_info.jsonl (database/ at HEAD) and train/std_travelplanner_sft.jsonl "
    "(finetuning_data/); queries/validation_queries.jsonl from postprocess/example_evaluation.jsonl. "
    "See SOURCE.md of the prepared data folder."
)

ACCOMMODATIONS = "database/accommodations/clean_accommodations_2022.csv"
ATTRACTIONS = "database/attractions/attractions.csv"
RESTAURANTS = "database/restaurants/clean_restaurant_2022.csv"
DISTANCES = "database/googleDistanceMatrix/distance.csv"
CITY_STATES = "database/background/citySet_with_states.txt"
CITY_SET = "database/background/citySet.txt"
FLIGHTS_FULL = "database/flights/clean_Flights_2022.csv"
FLIGHTS_SUBSET = "database/flights/flights_subset_from_train_ref_info.csv"
DATABASE_FILES = [ACCOMMODATIONS, ATTRACTIONS, RESTAURANTS, DISTANCES, CITY_STATES, CITY_SET]

ACCOMMODATION_COLUMNS = [
    "NAME", "price", "room type", "house_rules", "minimum nights", "maximum occupancy", "review rate number", "city",
]  # fmt: skip
RESTAURANT_COLUMNS = ["Name", "Average Cost", "Cuisines", "Aggregate Rating", "City"]
ATTRACTION_COLUMNS = ["Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City"]
FLIGHT_COLUMNS = [
    "Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime", "FlightDate", "OriginCityName",
    "DestCityName", "Distance",
]  # fmt: skip


def extract_before_parenthesis(text: str) -> str:
    """``utils/func.py``: the text before a parenthesised part (``'Toledo(Ohio)'`` -> ``'Toledo'``), unstripped."""
    match = re.search(r"^(.*?)\([^)]*\)", text)
    return match.group(1) if match else text


def split_name_city(text: str) -> tuple[str, str]:
    """``get_valid_name_city``: ``'Name, City(State)'`` -> ``('Name', 'City')``; ``('-', '-')`` if unparsable."""
    match = re.search(r"(.*?),\s*([^,]+)(\(\w[\w\s]*\))?$", text)
    if match:
        return match.group(1).strip(), extract_before_parenthesis(match.group(2).strip()).strip()
    return "-", "-"


def _records(frame: Any, columns: list[str]) -> list[dict[str, Any]]:
    out = []
    for row in frame[columns].to_dict(orient="records"):
        out.append({key: (value.item() if hasattr(value, "item") else value) for key, value in row.items()})
    return out


def _group(rows: list[dict[str, Any]], key: str) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(str(row[key]), []).append(row)
    return groups


@dataclass(frozen=True)
class DistanceInfo:
    """One distance-matrix answer; ``cost`` is ``None`` when the route has no valid information."""

    origin: str
    destination: str
    mode: str
    found: bool
    duration: str | None
    distance: str | None
    cost: int | None

    def describe(self) -> str:
        """The tool text (``GoogleDistanceMatrix.run``)."""
        if not self.found:
            return f"{self.mode}, from {self.origin} to {self.destination}, no valid information."
        if self.cost is None:
            return "No valid information."
        return (
            f"{self.mode}, from {self.origin} to {self.destination}, duration: {self.duration}, "
            f"distance: {self.distance}, cost: {self.cost}"
        )


class TravelDatabase:
    """All sandbox tables of one data folder, every one read when the database is built."""

    def __init__(self, data_dir: Path) -> None:
        import pandas as pd

        self.data_dir = Path(data_dir)
        require_files(self.data_dir, DATABASE_FILES, "travelplanner", HOW_TO_GET)
        full = self.data_dir / FLIGHTS_FULL
        subset = self.data_dir / FLIGHTS_SUBSET
        if not full.exists() and not subset.exists():
            require_files(self.data_dir, [FLIGHTS_FULL], "travelplanner", HOW_TO_GET)
        #: whether the official full flights table is loaded (else only the train reference subset)
        self.flights_complete = full.exists()
        flights_path = full if self.flights_complete else subset

        self.accommodations = _group(
            _records(pd.read_csv(self.data_dir / ACCOMMODATIONS).dropna(), ACCOMMODATION_COLUMNS), "city"
        )
        self.restaurants = _group(
            _records(pd.read_csv(self.data_dir / RESTAURANTS).dropna(), RESTAURANT_COLUMNS), "City"
        )
        self.attractions = _group(
            _records(pd.read_csv(self.data_dir / ATTRACTIONS).dropna(), ATTRACTION_COLUMNS), "City"
        )
        flights = _records(pd.read_csv(flights_path).dropna(), FLIGHT_COLUMNS)
        self.flights_by_number: dict[str, list[dict[str, Any]]] = _group(flights, "Flight Number")
        self.flights_by_route: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for row in flights:
            key = (row["OriginCityName"], row["DestCityName"], row["FlightDate"])
            self.flights_by_route.setdefault(key, []).append(row)
        self.flight_dates = sorted({row["FlightDate"] for row in flights})

        self._distances: dict[tuple[str, str], tuple[str | None, str | None]] = {}
        frame = pd.read_csv(self.data_dir / DISTANCES)
        for origin, destination, duration, distance in zip(
            frame["origin"], frame["destination"], frame["duration"], frame["distance"]
        ):
            key = (str(origin), str(destination))
            if key not in self._distances:
                self._distances[key] = (_text_or_none(duration), _text_or_none(distance))

        lines = (self.data_dir / CITY_STATES).read_text(encoding="utf-8").split("\n")
        self.city_state: dict[str, str] = {}
        for line in lines:
            if "\t" in line:
                city, state = line.split("\t", 1)
                self.city_state[city] = state
        self.state_cities: dict[str, list[str]] = {}
        for city, state in self.city_state.items():
            self.state_cities.setdefault(state, []).append(city)
        #: the city list the official tools validate against (``citySet.txt``)
        self.city_set = [c for c in (self.data_dir / CITY_SET).read_text(encoding="utf-8").split("\n") if c]

    # -- lookups with the evaluator's semantics ----------------------------------------------
    def find_restaurants(self, name: str, city: str) -> list[dict[str, Any]]:
        """Restaurants of ``city`` whose name contains ``name`` (table order)."""
        return [row for row in self.restaurants.get(city, []) if name in str(row["Name"])]

    def find_attractions(self, name: str, city: str) -> list[dict[str, Any]]:
        return [row for row in self.attractions.get(city, []) if name in str(row["Name"])]

    def find_accommodations(self, name: str, city: str) -> list[dict[str, Any]]:
        return [row for row in self.accommodations.get(city, []) if name in str(row["NAME"])]

    def find_flight(self, number: str, origin: str | None = None, destination: str | None = None) -> list[dict]:
        """Flights with this number (and, if given, this origin and destination city)."""
        rows = self.flights_by_number.get(number, [])
        if origin is not None:
            rows = [r for r in rows if r["OriginCityName"] == origin and r["DestCityName"] == destination]
        return rows

    def search_flights(self, origin: str, destination: str, date: str) -> list[dict[str, Any]]:
        return list(self.flights_by_route.get((origin, destination, date), []))

    def distance(self, origin: str, destination: str, mode: str) -> DistanceInfo:
        """``GoogleDistanceMatrix.run_for_evaluation``: cost int(km x 0.05) driving, int(km) taxi;
        ``None`` when the route is missing or takes days."""
        origin = extract_before_parenthesis(origin)
        destination = extract_before_parenthesis(destination)
        found = (origin, destination) in self._distances
        duration, distance = self._distances.get((origin, destination), (None, None))
        cost = None
        if duration is not None and distance is not None and "day" not in duration:
            km = float(distance.replace("km", "").replace(",", ""))
            if "driving" in mode:
                cost = int(km * 0.05)
            elif mode == "taxi":
                cost = int(km)
        return DistanceInfo(origin, destination, mode, found, duration, distance, cost)

    @cached_property
    def drivable(self) -> dict[str, frozenset[str]]:
        """Origin -> destinations the distance matrix gives a cost for (drivable within a day)."""
        routes: dict[str, set[str]] = {}
        for (origin, destination), (duration, distance) in self._distances.items():
            if duration is not None and distance is not None and "day" not in duration:
                routes.setdefault(origin, set()).add(destination)
        return {origin: frozenset(dests) for origin, dests in routes.items()}

    @cached_property
    def cities_with_data(self) -> tuple[str, ...]:
        """Cities (of ``citySet_with_states``) with attractions, restaurants and accommodations, sorted."""
        return tuple(
            sorted(
                c
                for c in self.city_state
                if self.attractions.get(c) and self.restaurants.get(c) and self.accommodations.get(c)
            )
        )


def _text_or_none(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value)
