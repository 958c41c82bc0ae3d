"""TravelPlanner queries: the structured fields the evaluator needs, and a parser that reads them from text.

The Hugging Face rows carry ``org, dest, days, visiting_city_number, date, people_number,
local_constraint, budget, level``; only the query texts are available here, so
:func:`parse_query` recovers the fields with rules over the database's city and state names:

* origin: the first known city preceded by a departure cue (``from``, ``departing``, ``starting in``,
  ``leaving``, ...), else the first city named; destination: for a one-city trip the next other
  city, for a multi-city trip the state named (not the origin's qualifying state, e.g. "Charlotte
  in North Carolina");
* days: ``N-day``/``N days``/``a week``/``week-long``, else the date range; visiting cities:
  ``N cities``, else TravelPlanner's rule (3 days: 1, 5: 2, 7: 3);
* dates: ``March 16th``, ``the 8th of March``, ``March 9th and 13th``, ``from March 12th to 14th``;
  the list has one date per day from the first date named;
* people: ``group/party of N``, ``N people/persons/individuals/...``, ``for two``, ``a pair``,
  ``a couple``; else 1 (``solo``, ``alone``, unstated);
* budget: the first dollar amount;
* local constraints: house rule (smoking, parties, children under 10, visitors, pets), room type
  (``not shared room`` before ``shared room``; explicit ``private``/``entire`` rooms first),
  cuisines (the benchmark's seven, in text order), transportation (a negated flight or self-driving
  mention: ``no flight`` / ``no self-driving``);
* level: the number of local constraints (0 easy, 1 medium, more hard).

Accuracy against the data the gold plans imply is measured by ``experiments/parity/travelplanner_gold.py``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from typing import Any

CUISINES = ("Chinese", "American", "Italian", "Mexican", "Indian", "Mediterranean", "French")
HOUSE_RULES = ("smoking", "parties", "children under 10", "visitors", "pets")
ROOM_TYPES = ("entire room", "private room", "shared room", "not shared room")
TRANSPORTATION_RULES = ("no flight", "no self-driving")
LEVELS = ("easy", "medium", "hard")
CITIES_FOR_DAYS = {3: 1, 5: 2, 7: 3}
LOCAL_KEYS = ("house rule", "cuisine", "room type", "transportation")

_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
    "December",
)  # fmt: skip
_NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "single": 1, "solo": 1,
}  # fmt: skip
_NUM = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
_MONTH = "(" + "|".join(_MONTHS) + ")"
_ORD = r"(\d{1,2})(?:st|nd|rd|th)?\b"
_PEOPLE_NOUN = r"(?:people|persons?|individuals|travell?ers|participants|adults|guests|friends|members)"
_NEGATION = (
    r"(?:\bno\b|\bnot\b|n't\b|\bnon-|\bavoid\w*|\bwithout\b|\bnever\b|\bcannot\b|\brather than\b|"
    r"\bexclud\w*|\bskip\w*|\bsteer clear\b|\brefrain\w*)"
)
_DEPARTURE_CUE = re.compile(
    r"(?:\bfrom|\bdepart\w*(?:\s+from)?|\bleav\w*(?:\s+from)?|\bstart\w*(?:\s+(?:from|in|at))?|\bbegin\w*"
    r"(?:\s+(?:from|in|at))?|\boriginat\w*(?:\s+(?:from|in))?|\bset(?:ting)? off from|\btak\w* off from|"
    r"\bcommenc\w*(?:\s+(?:in|from))?|\bout of|\bbased in)\s*$",
    re.IGNORECASE,
)


@dataclass
class TravelQuery:
    """The structured fields of one TravelPlanner query (the Hugging Face columns)."""

    org: str
    dest: str
    days: int
    visiting_city_number: int
    date: list[str]
    people_number: int
    budget: int
    local_constraint: dict[str, Any] = field(
        default_factory=lambda: {"house rule": None, "cuisine": None, "room type": None, "transportation": None}
    )
    level: str = "easy"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TravelQuery:
        fields = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**fields)


def level_of(local_constraint: dict[str, Any]) -> str:
    """TravelPlanner's difficulty by the number of local constraints: 0 easy, 1 medium, more hard."""
    count = sum(1 for key in LOCAL_KEYS if local_constraint.get(key))
    return LEVELS[min(count, 2)]


@lru_cache(maxsize=8)
def _name_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])(?:{alternatives})(?!\w)")


def _number(token: str) -> int:
    token = token.lower()
    return int(token) if token.isdigit() else _NUMBERS[token]


def parse_days(text: str) -> int | None:
    """Trip length stated in ``text`` (``None`` when not stated)."""
    match = re.search(rf"\b{_NUM}[- ]days?\b", text, re.IGNORECASE)
    if match:
        return _number(match.group(1))
    if re.search(r"\b(?:a|one|1)[- ]week\b|\bweek-?long\b|\bweeklong\b", text, re.IGNORECASE):
        return 7
    return None


def parse_dates(text: str) -> list[date]:
    """Every calendar date named in ``text``, in order of appearance (year defaults to 2022)."""
    year_match = re.search(r"\b(20\d\d)\b", text)
    year = int(year_match.group(1)) if year_match else 2022
    found: list[tuple[int, int, int]] = []  # (position, month, day)
    for m in re.finditer(rf"{_MONTH}\s+{_ORD}(?:\s*(?:to|and|through|until|-|–)\s*(?:the\s+)?{_ORD}\b)?", text):
        month = _MONTHS.index(m.group(1)) + 1
        found.append((m.start(), month, int(m.group(2))))
        tail = m.group(3)
        if tail and not re.match(rf"\s*{_MONTH}", text[m.end(3) :]) and not _followed_by_count(text, m.end()):
            found.append((m.start(3), month, int(tail)))
    for m in re.finditer(
        rf"(?:the\s+)?{_ORD}(?:\s+(?:to|and|through|until)\s+(?:the\s+)?{_ORD})?\s+of\s+{_MONTH}", text
    ):
        month = _MONTHS.index(m.group(3)) + 1
        found.append((m.start(), month, int(m.group(1))))
        if m.group(2):
            found.append((m.start(2), month, int(m.group(2))))
    dates = []
    for _, month, day in sorted(set(found)):
        try:
            dates.append(date(year, month, day))
        except ValueError:
            continue
    return dates


def _followed_by_count(text: str, end: int) -> bool:
    return bool(re.match(r"\s*(?:people|persons|days|nights|cities|travell?ers)", text[end:]))


def parse_people(text: str) -> int:
    """Number of travellers (1 when the text does not say)."""
    patterns = (
        rf"\b(?:group|party|team|family) of {_NUM}\b",
        rf"\b{_NUM}\s+(?:\w+\s+)?{_PEOPLE_NOUN}\b",
        rf"\bfor {_NUM}\b(?![- ](?:days?|nights?|weeks?|cities|city|different|distinct|unique|separate))",
    )
    for pattern in patterns:
        match = re.search(pattern, text, re.IGNORECASE)
        if match:
            return _number(match.group(1))
    if re.search(r"\b(?:a|as a) (?:pair|couple)\b|\bpair of\b|\bcouple\b|\bduo\b", text, re.IGNORECASE):
        return 2
    return 1


def parse_budget(text: str) -> int | None:
    match = re.search(r"\$\s*([\d,]+(?:\.\d+)?)", text)
    if not match:
        return None
    return int(float(match.group(1).replace(",", "")))


def parse_local_constraint(text: str) -> dict[str, Any]:
    """House rule, cuisines, room type and transportation rule stated in ``text`` (``None`` if absent)."""
    lowered = text.lower()
    rules = {
        "smoking": r"smok",
        "parties": r"\bparty(?!\s+of)\b|\bparties\b",
        "children under 10": r"\bchild|\bkids?\b",
        "visitors": r"\bvisitors?\b",
        "pets": r"\bpets?\b",
    }
    hits = [(m.start(), rule) for rule, pattern in rules.items() if (m := re.search(pattern, lowered))]
    house_rule = min(hits)[1] if hits else None

    room = None
    if re.search(r"\bprivate rooms?\b", lowered):
        room = "private room"
    elif re.search(r"\bentire (?:\w+ )?(?:rooms?|homes?|apartments?|apt|places?|houses?|units?|spaces?)\b", lowered):
        room = "entire room"
    elif re.search(r"(?:\bnot\b|\bnon-?|n't\b|\bneither\b|\bno\b)\s*(?:be\s+|a\s+)?shared\b", lowered):
        room = "not shared room"
    elif re.search(r"\bshared rooms?\b", lowered):
        room = "shared room"

    cuisines = sorted((m.start(), c) for c in CUISINES if (m := re.search(rf"\b{c}\b", text, re.IGNORECASE)))
    transport_hits = []
    flight = re.search(
        rf"{_NEGATION}[^.;]{{0,60}}?\b(?:flights?|fly|flying|air travel|airplanes?|planes?|airlines?)\b|"
        r"\bnon-?flight|\bflight-free",
        lowered,
    )
    if flight:
        transport_hits.append((flight.start(), "no flight"))
    driving = re.search(
        rf"{_NEGATION}[^.;]{{0,60}}?\b(?:self-?driv\w*|self drive|drive|driving)\b|\bnon-self-driving",
        lowered,
    )
    if driving:
        transport_hits.append((driving.start(), "no self-driving"))
    transportation = min(transport_hits)[1] if transport_hits else None
    return {
        "house rule": house_rule,
        "cuisine": [c for _, c in cuisines] or None,
        "room type": room,
        "transportation": transportation,
    }


def _origin_and_cities(text: str, cities: tuple[str, ...]) -> tuple[str | None, tuple[int, int] | None, list]:
    matches = list(_name_pattern(cities).finditer(text))
    origin = None
    for m in matches:
        if _DEPARTURE_CUE.search(text[max(0, m.start() - 30) : m.start()]):
            origin = m
            break
    if origin is None and matches:
        origin = matches[0]
    if origin is None:
        return None, None, matches
    return origin.group(0), origin.span(), matches


def parse_query(text: str, city_state: dict[str, str]) -> TravelQuery:
    """Recover the structured fields of a TravelPlanner query (see the module docstring for the rules).

    Raises ``ValueError`` naming the field that cannot be read (origin, destination, dates or budget).
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the query text is empty")
    cities = tuple(sorted(city_state))
    states = tuple(sorted(set(city_state.values())))
    origin, origin_span, city_matches = _origin_and_cities(text, cities)
    if origin is None or origin_span is None:
        raise ValueError("no origin city found in the query")

    dates = parse_dates(text)
    days = parse_days(text)
    if days is None and len(dates) >= 2:
        days = (dates[-1] - dates[0]).days + 1
    if days is None:
        raise ValueError("the trip length (days) is not stated")
    count_match = re.search(rf"\b{_NUM}\s+(?:\w+\s+)?cities\b", text, re.IGNORECASE)
    visiting = _number(count_match.group(1)) if count_match else CITIES_FOR_DAYS.get(days, 1)

    if visiting == 1:
        others = [m.group(0) for m in city_matches if m.span() != origin_span and m.group(0) != origin]
        if not others:
            raise ValueError("no destination city found in the query")
        dest = others[0]
    else:
        dest = _destination_state(text, states, origin, origin_span, city_state)

    if not dates:
        raise ValueError("no travel dates found in the query")
    start = dates[0]
    budget = parse_budget(text)
    if budget is None:
        raise ValueError("no budget ($ amount) found in the query")
    local = parse_local_constraint(text)
    return TravelQuery(
        org=origin,
        dest=dest,
        days=days,
        visiting_city_number=visiting,
        date=[(start + timedelta(days=i)).isoformat() for i in range(days)],
        people_number=parse_people(text),
        budget=budget,
        local_constraint=local,
        level=level_of(local),
    )


def _destination_state(
    text: str, states: tuple[str, ...], origin: str, origin_span: tuple[int, int], city_state: dict[str, str]
) -> str:
    candidates = []
    for m in _name_pattern(states).finditer(text):
        if m.start() < origin_span[1] and m.end() > origin_span[0]:
            continue  # the origin city's own name (New York, Washington)
        between = text[origin_span[1] : m.start()]
        if m.start() >= origin_span[1] and re.fullmatch(r"\s*(?:,|in)?\s*", between):
            continue  # "Charlotte in North Carolina": qualifies the origin
        candidates.append(m.group(0))
    if not candidates:
        raise ValueError("no destination state found in the query")
    return max(candidates, key=lambda s: (candidates.count(s), -candidates.index(s)))
