"""TravelPlanner (Xie et al., ICML 2024) as a genenv benchmark.

Modes (constructor ``mode``)
----------------------------
``sole-planning``  the reference information is in the prompt; no tools; the answer is the plan.
``two-stage``      the eight official tools over the database (:mod:`.tools`); the agent collects
                   information, may call ``Planner`` to see its notebook, and answers with the plan.

The plan is the agent's final plain answer: a JSON (or Python-literal) list of day objects in the
official submission format, or the planner's ``Day 1: / Current City: ...`` text (see :mod:`.plan`).

Splits
------
``train``       the 45 train queries (the default): official reference information and the
                annotated gold plans; fully evaluable (the flights subset holds every flight their
                reference information lists).
``validation``  the 180 validation queries. Only the texts are here: the structured fields come
                from :func:`~.query.parse_query`, ``level``/``days``/``visiting_city_number`` from
                the position (blocks of 20: easy/medium/hard x 3/5/7 days). There is no official
                reference information and no full flights table: in sole-planning mode the
                reference information is rebuilt from the database (destination city, or every city
                of the destination state, with driving/taxi legs; flights omitted), and a plan
                flight outside the available subset fails "Within Sandbox" as unverifiable.

``Task.gold`` = ``{"query": TravelQuery fields, "plan": gold plan or None, "cities": [...] or None}``;
``Task.metadata``: ``idx`` (1-based within the split), ``level``, ``days``, ``query_text``.

Scoring
-------
:func:`~.evaluation.evaluate_plan` runs the official commonsense and hard constraints;
``Score.value`` is the final pass (1 if every constraint passes), or with ``reward="shaped"`` the
fraction of checks passed (8 commonsense + the hard ones the query sets). The breakdown holds every
check, so :meth:`aggregate` reports the six official metrics (delivery rate, commonsense micro/macro,
hard micro/macro, final pass rate), with per-level and per-days final pass rates.

Generated tasks
---------------
Families are ``<level>-<days>day`` (level easy/medium/hard x 3/5/7 days). The context gives a
scenario drawn from the database (origin, cities, dates, travellers, constraints of the level and
the cheapest plan's cost); the simulator writes the query text and its structured fields. A task
is kept only if the text states the fields the scorer uses (checked with the query parser) and
:func:`~.feasibility.cheapest_plan` finds a plan within its budget; that plan becomes the gold plan.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, ClassVar

from ..base import (
    BenchmarkAdapter,
    Score,
    StepResult,
    Task,
    ToolCall,
    Trajectory,
    read_data_json,
    register_benchmark,
    require_files,
)
from .database import HOW_TO_GET, TravelDatabase, extract_before_parenthesis
from .evaluation import COMMONSENSE, HARD, count_hard_constraints, evaluate_plan, extract_from_to
from .feasibility import cheapest_plan, travel_legs
from .plan import PlanFormatError, parse_plan
from .query import (
    CITIES_FOR_DAYS,
    CUISINES,
    HOUSE_RULES,
    LEVELS,
    ROOM_TYPES,
    TRANSPORTATION_RULES,
    TravelQuery,
    level_of,
    parse_query,
)
from .reference import build_reference, load_train_reference, render_reference
from .tools import TOOL_SCHEMAS, TwoStageState, execute_tool

MODES = ("sole-planning", "two-stage")
TRAIN_FILES = ["train/std_travelplanner_sft.jsonl", "train/train_ref_info.jsonl"]
VALIDATION_FILE = "queries/validation_queries.jsonl"
DAYS = (3, 5, 7)
#: queries per (level, days) block, in that order, of each split
BLOCK = {"train": 5, "validation": 20}

_EXAMPLE_PLAN = [
    {
        "days": 1,
        "current_city": "from Ithaca to Charlotte",
        "transportation": "Flight Number: F3633413, from Ithaca to Charlotte, Departure Time: 05:38, "
        "Arrival Time: 07:46",
        "breakfast": "Nagaland's Kitchen, Charlotte",
        "attraction": "The Charlotte Museum of History, Charlotte;",
        "lunch": "Cafe Maple Street, Charlotte",
        "dinner": "Bombay Vada Pav, Charlotte",
        "accommodation": "Affordable Spacious Refurbished Room in Bushwick!, Charlotte",
    },
    {
        "days": 2,
        "current_city": "Charlotte",
        "transportation": "-",
        "breakfast": "Olive Tree Cafe, Charlotte",
        "attraction": "The Mint Museum, Charlotte;Romare Bearden Park, Charlotte;",
        "lunch": "Birbal Ji Dhaba, Charlotte",
        "dinner": "Pind Balluchi, Charlotte",
        "accommodation": "Affordable Spacious Refurbished Room in Bushwick!, Charlotte",
    },
    {
        "days": 3,
        "current_city": "from Charlotte to Ithaca",
        "transportation": "Flight Number: F3786167, from Charlotte to Ithaca, Departure Time: 21:42, "
        "Arrival Time: 23:26",
        "breakfast": "Subway, Charlotte",
        "attraction": "Books Monument, Charlotte;",
        "lunch": "Olive Tree Cafe, Charlotte",
        "dinner": "Kylin Skybar, Charlotte",
        "accommodation": "-",
    },
]
_PLANNER_RULES = (
    "You are a proficient planner. Based on the provided information and query, give a detailed plan, including "
    "specifics such as flight numbers (e.g., F0123456), restaurant names, and accommodation names. All information "
    "in your plan must be derived from the provided data and align with commonsense. The symbol '-' means the "
    "information is unnecessary (e.g. no accommodation on the last day). When you travel between two cities in one "
    "day, write it in current_city as 'from A to B'. Write every place as 'Name, City'; end each attraction with ';'.\n"
    "Answer with the plan only: a JSON list with one object per day, keys days, current_city, transportation, "
    "breakfast, attraction, lunch, dinner, accommodation. Example (3 days, Ithaca to Charlotte):\n"
)


@dataclass
class TravelPlannerState:
    """One episode: the task's query fields and, in two-stage mode, the notebook."""

    task: Task
    tools: TwoStageState = field(default_factory=TwoStageState)


@register_benchmark("travelplanner")
class TravelPlannerAdapter(BenchmarkAdapter):
    """TravelPlanner sole-planning / two-stage with the official constraint evaluation."""

    name = "travelplanner"
    max_turns = 1  # sole-planning: one answer, as the official planner; two-stage needs more (e.g. max_turns=16)
    default_split = "validation"  # the 180 validation queries, the official evaluation set
    validation_split = "validation"
    base_split = "train"  # the 45 train queries with gold plans: expert traces (sole-planning), never evaluated
    splits = ("train", "validation")
    task_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "the user's request, stating every field below"},
            "org": {"type": "string", "description": "origin city"},
            "dest": {"type": "string", "description": "destination city (3 days) or state (5 or 7 days)"},
            "days": {"type": "integer"},
            "cities": {"type": "array", "items": {"type": "string"}, "description": "cities visited, in order"},
            "start_date": {"type": "string", "description": "YYYY-MM-DD"},
            "people_number": {"type": "integer"},
            "budget": {"type": "integer", "description": "dollars"},
            "local_constraint": {
                "type": "object",
                "properties": {
                    "house rule": {"type": ["string", "null"], "enum": [*HOUSE_RULES, None]},
                    "cuisine": {"type": ["array", "null"], "items": {"type": "string", "enum": list(CUISINES)}},
                    "room type": {"type": ["string", "null"], "enum": [*ROOM_TYPES, None]},
                    "transportation": {"type": ["string", "null"], "enum": [*TRANSPORTATION_RULES, None]},
                },
            },
        },
        "required": ["query", "org", "dest", "days", "cities", "start_date", "people_number", "budget"],
    }

    def __init__(
        self,
        data_dir=None,
        mode: str = "sole-planning",
        max_reference_rows: int | None = 8,
        reward: str = "final",
    ) -> None:
        super().__init__(data_dir)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if reward not in ("final", "shaped"):
            raise ValueError("reward must be 'final' or 'shaped'")
        if max_reference_rows is not None and max_reference_rows < 1:
            raise ValueError("max_reference_rows must be a positive integer or None")
        self.mode = mode
        self.max_reference_rows = max_reference_rows
        self.reward = reward
        self._db: TravelDatabase | None = None
        self._examples: list[dict[str, Any]] | None = None

    @property
    def db(self) -> TravelDatabase:
        """The sandbox database, loaded on first use."""
        if self._db is None:
            self._db = TravelDatabase(self.data_dir)
        return self._db

    # -- data ---------------------------------------------------------------------------
    def load_tasks(self, split: str) -> list[Task]:
        if split == "train":
            return self._load_train()
        if split == "validation":
            return self._load_validation()
        raise ValueError(f"unknown split {split!r}; choose from {', '.join(self.splits)}")

    def _load_train(self) -> list[Task]:
        require_files(self.data_dir, TRAIN_FILES, self.name, HOW_TO_GET)
        references = load_train_reference(self.data_dir)
        tasks = []
        examples = read_data_json(self.data_dir / TRAIN_FILES[0], self.name, HOW_TO_GET, lines=True)
        for index, (example, reference) in enumerate(zip(examples, references)):
            messages = example["messages"]
            text = messages[1]["content"].rsplit("Query:", 1)[-1].strip()
            plan = ast.literal_eval(messages[2]["content"])
            query = self._structured(text, "train", index)
            tasks.append(
                self._task(f"travelplanner-train-{index + 1:02d}", "train", index + 1, text, query, reference, plan)
            )
        return tasks

    def _load_validation(self) -> list[Task]:
        require_files(self.data_dir, [VALIDATION_FILE], self.name, HOW_TO_GET)
        tasks = []
        rows = read_data_json(self.data_dir / VALIDATION_FILE, self.name, HOW_TO_GET, lines=True)
        for row in rows:
            index = int(row["idx"]) - 1
            query = self._structured(row["query"], "validation", index)
            reference = self._reconstructed_reference(query) if self.mode == "sole-planning" else None
            tasks.append(
                self._task(f"travelplanner-validation-{index + 1:03d}", "validation", index + 1, row["query"], query,
                           reference, None)
            )  # fmt: skip
        return tasks

    def _structured(self, text: str, split: str, index: int) -> TravelQuery:
        """Parsed fields; level and days follow the split's block layout (5 or 20 per level x days)."""
        try:
            query = parse_query(text, self.db.city_state)
        except ValueError as error:
            raise ValueError(f"{split} query {index + 1} cannot be read: {error}") from None
        block = index // BLOCK[split]
        query.level, days = LEVELS[block // 3], DAYS[block % 3]
        if query.days != days:
            start = date.fromisoformat(query.date[0])
            query.date = [(start + timedelta(days=i)).isoformat() for i in range(days)]
        query.days, query.visiting_city_number = days, CITIES_FOR_DAYS[days]
        return query

    def _reconstructed_reference(self, query: TravelQuery) -> dict[str, Any]:
        db = self.db
        if query.visiting_city_number == 1:
            cities = [query.dest]
        else:
            cities = [c for c in db.state_cities.get(query.dest, []) if c != query.org and c in db.cities_with_data]
        legs: list[tuple[str, str, str | None]] = []
        for city in cities:
            legs += [(query.org, city, None), (city, query.org, None)]
        legs += [(a, b, None) for a in cities for b in cities if a != b]
        reference = build_reference(db, cities, legs)
        if not db.flights_complete:
            reference["Flights"] = "not available (the full flights table is missing); plan without flights"
        return reference

    def _task(
        self,
        task_id: str,
        split: str,
        idx: int,
        text: str,
        query: TravelQuery,
        reference: dict[str, Any] | None,
        plan: list[dict[str, Any]] | None,
        cities: list[str] | None = None,
        source: str = "benchmark",
    ) -> Task:
        if self.mode == "sole-planning" and reference is not None:
            reference_text = render_reference(reference, self.max_reference_rows)
            prompt = f"Given information:\n{reference_text}\n\nQuery: {text}\nTravel Plan:"
        else:
            prompt = f"Query: {text}"
        return Task(
            task_id=task_id,
            benchmark=self.name,
            prompt=prompt,
            gold={"query": query.to_dict(), "plan": plan, "cities": cities},
            split=split,
            source=source,  # type: ignore[arg-type]
            metadata={"idx": idx, "level": query.level, "days": query.days, "query_text": text, "mode": self.mode},
        )

    # -- tools and execution ------------------------------------------------------------
    def system_prompt(self, task: Task) -> str:
        example = _PLANNER_RULES + json.dumps(_EXAMPLE_PLAN, ensure_ascii=False)
        if self.mode == "sole-planning":
            return example
        return (
            "Collect the information a travel plan needs with the tools (flights, distances, accommodations, "
            "restaurants, attractions, cities of a state); store useful results with NotebookWrite; call Planner to "
            "review the notebook. Then give the final plan as your answer.\n" + example
        )

    def tools(self, task: Task) -> list[dict[str, Any]]:
        return copy.deepcopy(TOOL_SCHEMAS) if self.mode == "two-stage" else []

    def gold_actions(self, task: Task) -> list[list[str]]:
        """Sole-planning: the annotated gold plan (train) or the plan found when a generated task was validated, as
        the final answer in the submission format (a JSON list of day objects). Two-stage: none; which searches
        gathered a gold plan's facts is not recorded, and a trace that answers without them would teach skipping
        the tools."""
        plan = task.gold.get("plan") if isinstance(task.gold, dict) else None
        if self.mode != "sole-planning" or not plan:
            return []
        return [[json.dumps(plan, ensure_ascii=False)]]

    def start(self, task: Task) -> TravelPlannerState:
        return TravelPlannerState(task=task)

    def execute(self, state: TravelPlannerState, call: ToolCall) -> StepResult:
        if self.mode != "two-stage":
            return StepResult(
                "There are no tools in sole-planning mode: answer with the plan (a JSON list of day objects).",
                error="unknown_tool",
            )
        return execute_tool(self.db, state.tools, call)

    # -- scoring ------------------------------------------------------------------------
    def score(self, task: Task, trajectory: Trajectory) -> Score:
        query = task.gold["query"]
        base = {"level": task.metadata.get("level", query.get("level")), "days": query.get("days")}
        try:
            answer = trajectory.final_answer
            plan = parse_plan(answer, int(query["days"])) if answer is not None else None
            error = None if plan is not None else "no final answer: the episode ended without a plan"
        except PlanFormatError as exc:
            plan, error = None, f"malformed plan: {exc}"
        evaluation = evaluate_plan(query, plan, self.db)
        checks = {**evaluation.commonsense, **(evaluation.hard or {})}
        hard_total = evaluation.n_hard
        breakdown: dict[str, Any] = {
            **base,
            "delivered": int(evaluation.delivered),
            "commonsense_passed": evaluation.commonsense_passed,
            "commonsense_total": len(COMMONSENSE),
            "hard_passed": evaluation.hard_passed,
            "hard_total": hard_total,
            "commonsense_pass": int(evaluation.commonsense_pass),
            "hard_pass": int(evaluation.hard_pass),
            "final_pass": int(evaluation.final_pass),
            "checks": {name: ok for name, (ok, _) in checks.items()},
            "failures": evaluation.failures(),
            "unverified": list(evaluation.unverified),
        }
        if error:
            breakdown["error"] = error
        if self.reward == "shaped":
            value = (evaluation.commonsense_passed + evaluation.hard_passed) / (len(COMMONSENSE) + hard_total)
        else:
            value = float(evaluation.final_pass)
        return Score(value, breakdown)

    def aggregate(self, tasks: list[Task], scores: list[Score]) -> dict[str, float]:
        """The official six metrics (denominators from the queries: 8 per query, 1 + local constraints),
        plus the final pass rate per level and per days and the pass rate of each constraint."""
        n = len(scores)
        metrics: dict[str, float] = {"n": float(n)}
        if not n:
            return metrics
        rows = [s.breakdown for s in scores]
        hard_total = sum(count_hard_constraints(t.gold["query"]) for t in tasks)

        def total(key: str) -> float:
            return float(sum(r.get(key, 0) for r in rows))

        metrics["score"] = sum(s.value for s in scores) / n
        metrics["delivery_rate"] = total("delivered") / n
        metrics["commonsense_micro"] = total("commonsense_passed") / (len(COMMONSENSE) * n)
        metrics["commonsense_macro"] = total("commonsense_pass") / n
        metrics["hard_micro"] = total("hard_passed") / hard_total
        metrics["hard_macro"] = total("hard_pass") / n
        metrics["final_pass_rate"] = total("final_pass") / n
        for key, values in (("level", LEVELS), ("days", DAYS)):
            for value in values:
                group = [r for t, r in zip(tasks, rows) if t.metadata.get(key) == value]
                if group:
                    metrics[f"final_pass/{key}={value}"] = sum(r.get("final_pass", 0) for r in group) / len(group)
        for name in [*COMMONSENSE.values(), *HARD.values()]:
            results = [r["checks"][name] for r in rows if name in r.get("checks", {}) and r["checks"][name] is not None]
            if results:
                metrics[f"pass/{name}"] = sum(1 for ok in results if ok) / len(results)
        metrics["unverified_plans"] = float(sum(1 for r in rows if r.get("unverified")))
        return metrics

    def family(self, task: Task) -> str:
        return f"{task.metadata.get('level', 'easy')}-{task.metadata.get('days', 3)}day"

    # -- generated tasks ----------------------------------------------------------------
    def families(self) -> list[str]:
        return [f"{level}-{days}day" for level in LEVELS for days in DAYS]

    @staticmethod
    def _family_parts(family: str) -> tuple[str, int]:
        level, _, days = family.partition("-")
        if level not in LEVELS or days not in ("3day", "5day", "7day"):
            raise ValueError(f"unknown family {family!r}; families are <easy|medium|hard>-<3|5|7>day")
        return level, int(days[0])

    def generation_context(self, family: str, rng: Any, success: Mapping[str, float] | None = None) -> str:
        level, days = self._family_parts(family)
        for _ in range(50):
            scenario = self._scenario(level, days, rng)
            if scenario is None:
                continue
            query, cities, found = scenario
            local = {k: v for k, v in query.local_constraint.items() if v}
            return "\n".join(
                [
                    f"Scenario from the database ({level} level, {days} days, {len(cities)} "
                    f"cit{'y' if len(cities) == 1 else 'ies'}):",
                    f"origin (org): {query.org}",
                    f"destination (dest): {query.dest}"
                    + ("" if days == 3 else f" (a state); visit: {', '.join(cities)}"),
                    f"cities: {json.dumps(cities)}",
                    f"start_date: {query.date[0]} (the trip ends on {query.date[-1]})",
                    f"people_number: {query.people_number}",
                    f"local_constraint: {json.dumps(local) if local else 'none'}",
                    f"The cheapest plan the search found costs ${found:,.0f}: choose a budget at or above it "
                    "(close to it is harder).",
                    "The query text must state the origin, the destination, the number of days, the dates, the number "
                    "of travellers, the budget in dollars and each local constraint.",
                ]
            )
        raise ValueError(f"no feasible scenario found for {family}")

    def _scenario(self, level: str, days: int, rng: Any) -> tuple[TravelQuery, list[str], float] | None:
        db = self.db
        k = CITIES_FOR_DAYS[days]
        usable = [c for c in db.cities_with_data if len(db.restaurants[c]) >= 5]
        if k == 1:
            cities = [usable[int(rng.integers(len(usable)))]]
            dest = cities[0]
        else:
            states = sorted({db.city_state[c] for c in usable})
            states = [s for s in states if sum(1 for c in usable if db.city_state[c] == s) >= k]
            dest = states[int(rng.integers(len(states)))]
            in_state = [c for c in usable if db.city_state[c] == dest]
            cities = [in_state[int(i)] for i in rng.choice(len(in_state), size=k, replace=False)]
        origins = [
            c
            for c in sorted(db.city_state)
            if c not in cities
            and db.city_state[c] != dest
            and cities[0] in db.drivable.get(c, ())
            and c in db.drivable.get(cities[-1], ())
        ]
        if not origins:
            return None
        org = origins[int(rng.integers(len(origins)))]
        start = date(2022, 3, 1) + timedelta(days=int(rng.integers(25)))
        local: dict[str, Any] = {"house rule": None, "cuisine": None, "room type": None, "transportation": None}
        keys = [] if level == "easy" else ["house rule", "cuisine", "room type"]
        if level == "hard":
            keys.append("transportation")
        chosen = (
            [keys[int(i)] for i in rng.choice(len(keys), size=1 if level == "medium" else 3, replace=False)]
            if keys
            else []
        )
        for key in chosen:
            if key == "house rule":
                local[key] = HOUSE_RULES[int(rng.integers(len(HOUSE_RULES)))]
            elif key == "room type":
                local[key] = ROOM_TYPES[int(rng.integers(len(ROOM_TYPES)))]
            elif key == "transportation":
                local[key] = TRANSPORTATION_RULES[int(rng.integers(len(TRANSPORTATION_RULES)))]
            else:
                local[key] = [CUISINES[int(i)] for i in rng.choice(len(CUISINES), size=2, replace=False)]
        query = TravelQuery(
            org=org,
            dest=dest,
            days=days,
            visiting_city_number=k,
            date=[(start + timedelta(days=i)).isoformat() for i in range(days)],
            people_number=1 if level == "easy" else int(rng.integers(2, 9)),
            budget=0,
            local_constraint=local,
            level=level,
        )
        found, _ = cheapest_plan(db, query.to_dict(), cities)
        if found is None:
            return None
        return query, cities, found.cost

    def generation_schema(self, family: str) -> dict[str, Any]:
        """``task_schema`` for ``family``: its days and level fixed, names from the database."""
        level, days = self._family_parts(family)
        k = CITIES_FOR_DAYS[days]
        cities = sorted(self.db.city_state)
        states = sorted(set(self.db.city_state.values()))
        null = {"type": "null"}

        def optional(schema: dict[str, Any]) -> dict[str, Any]:
            return null if level == "easy" else {"anyOf": [schema, null]}

        return {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 40, "maxLength": 500},
                "org": {"type": "string", "enum": cities},
                "dest": {"type": "string", "enum": cities if k == 1 else states},
                "days": {"type": "integer", "enum": [days]},
                "cities": {"type": "array", "items": {"type": "string", "enum": cities}, "minItems": k, "maxItems": k},
                "start_date": {"type": "string", "pattern": r"2022-0[34]-[0-3][0-9]"},
                "people_number": {"type": "integer", "enum": [1] if level == "easy" else list(range(2, 9))},
                "budget": {"type": "integer"},
                "local_constraint": {
                    "type": "object",
                    "properties": {
                        "house rule": optional({"type": "string", "enum": list(HOUSE_RULES)}),
                        "cuisine": optional(
                            {
                                "type": "array",
                                "items": {"type": "string", "enum": list(CUISINES)},
                                "minItems": 1,
                                "maxItems": 4,
                            }
                        ),  # fmt: skip
                        "room type": optional({"type": "string", "enum": list(ROOM_TYPES)}),
                        "transportation": optional({"type": "string", "enum": list(TRANSPORTATION_RULES)}),
                    },
                    "required": ["house rule", "cuisine", "room type", "transportation"],
                    "additionalProperties": False,
                },
            },
            "required": [
                "query",
                "org",
                "dest",
                "days",
                "cities",
                "start_date",
                "people_number",
                "budget",
                "local_constraint",
            ],  # fmt: skip
            "additionalProperties": False,
        }

    def _training_examples(self) -> list[dict[str, Any]]:
        if self._examples is None:
            self._examples = []
            for task in self.load_tasks("train"):
                query = task.gold["query"]
                self._examples.append(
                    {
                        "query": task.metadata["query_text"],
                        "org": query["org"],
                        "dest": query["dest"],
                        "days": query["days"],
                        "cities": plan_cities(task.gold["plan"], query),
                        "start_date": query["date"][0],
                        "people_number": query["people_number"],
                        "budget": query["budget"],
                        "local_constraint": query["local_constraint"],
                    }
                )
        return self._examples

    def generation_examples(self, family: str, k: int, rng: Any) -> list[dict[str, Any]]:
        level, days = self._family_parts(family)
        examples = self._training_examples()
        same = [e for e in examples if e["days"] == days and level_of(e["local_constraint"]) == level]
        others = [e for e in examples if e not in same]
        chosen = [same[int(i)] for i in rng.choice(len(same), size=min(k, len(same)), replace=False)]
        if len(chosen) < k:
            picks = rng.choice(len(others), size=min(k - len(chosen), len(others)), replace=False)
            chosen += [others[int(i)] for i in picks]
        return copy.deepcopy(chosen)

    def parse_task(self, obj: dict[str, Any], family: str | None = None) -> Task:
        if not isinstance(obj, dict):
            raise ValueError("task must be a JSON object")
        text = obj.get("query")
        if not isinstance(text, str) or len(text.strip()) < 20:
            raise ValueError("'query' must be the request text (at least 20 characters)")
        for key in ("org", "dest", "start_date"):
            if not isinstance(obj.get(key), str) or not obj[key].strip():
                raise ValueError(f"{key!r} must be a non-empty string")
        for key in ("days", "people_number", "budget"):
            if not isinstance(obj.get(key), int) or isinstance(obj[key], bool) or obj[key] < 1:
                raise ValueError(f"{key!r} must be a positive integer")
        cities = obj.get("cities")
        if not isinstance(cities, list) or not cities or not all(isinstance(c, str) for c in cities):
            raise ValueError("'cities' must be a non-empty list of city names")
        days = obj["days"]
        if days not in DAYS:
            raise ValueError(f"'days' must be 3, 5 or 7, got {days}")
        try:
            start = date.fromisoformat(obj["start_date"])
        except ValueError:
            raise ValueError(f"'start_date' {obj['start_date']!r} is not YYYY-MM-DD") from None
        local = _local_constraint(obj.get("local_constraint"))
        query = TravelQuery(
            org=obj["org"].strip(),
            dest=obj["dest"].strip(),
            days=days,
            visiting_city_number=CITIES_FOR_DAYS[days],
            date=[(start + timedelta(days=i)).isoformat() for i in range(days)],
            people_number=obj["people_number"],
            budget=obj["budget"],
            local_constraint=local,
            level=level_of(local),
        )
        if family is not None:
            level, family_days = self._family_parts(family)
            if (query.level, days) != (level, family_days):
                raise ValueError(f"the task is {query.level}-{days}day, not the requested family {family}")
        cities = [c.strip() for c in cities]
        legs = travel_legs(query.org, cities, query.date) if len(cities) == query.visiting_city_number else []
        reference = build_reference(self.db, cities, legs) if self.mode == "sole-planning" else None
        digest = hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:12]
        return self._task(f"travelplanner-gen-{query.level}-{days}day-{digest}", "generated", 0, text.strip(), query,
                          reference, None, cities, source="generated")  # fmt: skip

    def validate_task(self, task: Task) -> tuple[bool, str]:
        try:
            query = task.gold["query"]
            cities = list(task.gold.get("cities") or [])
        except (TypeError, KeyError, AttributeError):
            return False, "task has no structured query"
        fields = {"org": str, "dest": str, "days": int, "visiting_city_number": int, "budget": int}
        if not isinstance(query, dict) or not all(isinstance(query.get(k), t) for k, t in fields.items()):
            return False, "the task's query lacks org, dest, days, visiting_city_number or budget"
        if not all(isinstance(city, str) for city in cities):
            return False, "the task's cities must be names"
        db = self.db
        problems = []
        if query["org"] not in db.city_state:
            problems.append(f"unknown origin city {query['org']!r}")
        if len(cities) != query["visiting_city_number"] or len(set(cities)) != len(cities):
            problems.append(f"a {query['days']}-day trip visits {query['visiting_city_number']} distinct cities")
        for city in cities:
            if city not in db.cities_with_data:
                problems.append(f"{city!r} is not a city with attractions, restaurants and accommodations")
            elif city == query["org"]:
                problems.append("the origin is also a visited city")
            elif query["days"] > 3 and db.city_state[city] != query["dest"]:
                problems.append(f"{city} is not in {query['dest']}")
        if query["days"] == 3 and cities and cities[0] != query["dest"]:
            problems.append("a 3-day trip visits its destination city")
        if problems:
            return False, "; ".join(problems)
        mismatch = _text_mismatch(task.metadata.get("query_text", ""), query, db.city_state)
        if mismatch:
            return False, f"the query text does not state the task's fields: {mismatch}"
        found, reason = cheapest_plan(db, query, cities)
        if found is None:
            return False, f"no feasible plan: {reason}"
        if found.cost > query["budget"]:
            return False, f"the cheapest plan found costs {found.cost:g} > budget {query['budget']}"
        task.gold["plan"] = found.plan
        return True, "ok"


def _local_constraint(value: Any) -> dict[str, Any]:
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ValueError("'local_constraint' must be an object")
    allowed = {"house rule": HOUSE_RULES, "room type": ROOM_TYPES, "transportation": TRANSPORTATION_RULES}
    local: dict[str, Any] = {}
    for key, options in allowed.items():
        item = value.get(key)
        if item is not None and item not in options:
            raise ValueError(f"local_constraint {key!r} must be one of {options} or null, got {item!r}")
        local[key] = item
    cuisine = value.get("cuisine")
    if cuisine is not None:
        if not isinstance(cuisine, list) or not all(c in CUISINES for c in cuisine):
            raise ValueError(f"local_constraint 'cuisine' must be a list of {CUISINES} or null")
        cuisine = list(dict.fromkeys(cuisine)) or None
    local["cuisine"] = cuisine
    unknown = set(value) - {*allowed, "cuisine"}
    if unknown:
        raise ValueError(f"unknown local_constraint key(s): {', '.join(sorted(unknown))}")
    return local


def _text_mismatch(text: str, query: dict[str, Any], city_state: dict[str, str]) -> str:
    """Which scored fields the query text states differently (empty when they all agree)."""
    try:
        parsed = parse_query(text, city_state).to_dict()
    except ValueError as error:
        return str(error)
    wrong = [k for k in ("org", "dest", "days", "people_number", "budget") if parsed[k] != query[k]]
    if parsed["date"][0] != query["date"][0]:
        wrong.append("start date")
    for key, value in query["local_constraint"].items():
        got = parsed["local_constraint"].get(key)
        same = set(got or []) == set(value or []) if key == "cuisine" else got == value
        if not same:
            wrong.append(key)
    return ", ".join(f"{k}" for k in wrong)


def plan_cities(plan: list[dict[str, Any]] | None, query: dict[str, Any]) -> list[str]:
    """The cities a plan visits, in order, without the origin."""
    cities: list[str] = []
    for day in (plan or [])[: query["days"]]:
        current = day.get("current_city", "") if isinstance(day, dict) else ""
        if "from" in current:
            names = [n for n in extract_from_to(current) if n]
        else:
            names = [current]
        for name in names:
            city = extract_before_parenthesis(name).strip()
            if city and city != query["org"] and city not in cities:
                cities.append(city)
    return cities
