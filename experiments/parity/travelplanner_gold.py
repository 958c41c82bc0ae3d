"""TravelPlanner: the annotated gold plans under genenv's evaluator, and the query parser's accuracy.

    GENENV_DATA_DIR=../shared/data python experiments/parity/travelplanner_gold.py

1. Scores the 45 train gold plans (``std_travelplanner_sft.jsonl``) with the adapter's scorer and
   the official aggregate (expected: everything passes).
2. Parser accuracy on train, per field, against what the gold data implies: origin, destination,
   dates and days from the reference-information keys (``Flight from A to B on D``; a multi-city
   destination is the state of the visited cities), visiting cities from the ``Attractions in X``
   keys, level and days from the split layout. People, budget and local constraints have no gold
   here; the check is that the gold plan satisfies every hard constraint under the parsed fields.
3. Validation (180 texts only): days, visiting cities and level against the block layout, and
   the number of hard constraints per level (official total 420: 180 budgets + 60 + 180).
4. Generated-task feasibility: how many random scenarios per family the greedy search solves, and
   whether it accepts each train query (whose gold plan proves it feasible) as a generated task.

Writes ``results/parity/travelplanner_gold.json``.
"""

from __future__ import annotations

import json
import re
import time
from datetime import date
from pathlib import Path

import numpy as np

from genenv.benchmarks.base import Trajectory, get_benchmark
from genenv.benchmarks.travelplanner.adapter import plan_cities
from genenv.benchmarks.travelplanner.evaluation import count_hard_constraints, evaluate_plan
from genenv.benchmarks.travelplanner.query import parse_query
from genenv.benchmarks.travelplanner.reference import load_train_reference

RESULTS = Path(__file__).resolve().parents[2] / "results" / "parity" / "travelplanner_gold.json"
_FLIGHT_KEY = re.compile(r"^Flight from (.+) to (.+) on (\d{4}-\d{2}-\d{2})$")


def gold_fields(reference: dict, city_state: dict[str, str]) -> dict:
    """Origin, destination, dates, days and visiting cities implied by the reference keys and the plan."""
    legs = [m.groups() for key in reference if (m := _FLIGHT_KEY.match(key))]
    visited = [key[len("Attractions in ") :] for key in reference if key.startswith("Attractions in ")]
    start, end = date.fromisoformat(legs[0][2]), date.fromisoformat(legs[-1][2])
    dest = visited[0] if len(visited) == 1 else city_state[visited[0]]
    return {
        "org": legs[0][0],
        "dest": dest,
        "start_date": start.isoformat(),
        "end_date": end.isoformat(),
        "days": (end - start).days + 1,
        "visiting_city_number": len(visited),
        "plan_cities": visited,
    }


def main() -> None:
    started = time.perf_counter()
    adapter = get_benchmark("travelplanner")
    db = adapter.db
    train = adapter.load_tasks("train")
    references = load_train_reference(adapter.data_dir)

    # 1. gold plans under the scorer
    scores = [adapter.score(t, Trajectory(final_answer=json.dumps(t.gold["plan"]))) for t in train]
    exceptions = {
        t.task_id: s.breakdown["failures"] or s.breakdown.get("error") for t, s in zip(train, scores) if s.value < 1
    }

    # 2. parser accuracy on train
    fields = ("org", "dest", "start_date", "end_date", "days", "visiting_city_number", "level")
    correct = dict.fromkeys(fields, 0)
    errors = []
    hard_ok = 0
    for index, (task, reference) in enumerate(zip(train, references)):
        query = task.gold["query"]
        gold = gold_fields(reference, db.city_state)
        gold["level"] = ("easy", "medium", "hard")[index // 15]
        raw = parse_query(task.metadata["query_text"], db.city_state)
        parsed = {**raw.to_dict(), "start_date": raw.date[0], "end_date": raw.date[-1]}
        for key in fields:
            if parsed[key] == gold[key]:
                correct[key] += 1
            else:
                errors.append({"task": task.task_id, "field": key, "parsed": parsed[key], "gold": gold[key]})
        if plan_cities(task.gold["plan"], query) != gold["plan_cities"]:
            errors.append({"task": task.task_id, "field": "plan_cities", "gold": gold["plan_cities"]})
        evaluation = evaluate_plan(query, task.gold["plan"], db)
        hard_ok += int(evaluation.hard_pass)
    train_accuracy = {key: correct[key] / len(train) for key in fields}

    # 3. validation layout consistency
    validation = adapter.load_tasks("validation")
    val_fields = {"days": 0, "visiting_city_number": 0, "level": 0}
    val_errors = []
    for task in validation:
        raw = parse_query(task.metadata["query_text"], db.city_state)
        expected = task.gold["query"]
        checks = {
            "days": (raw.days, expected["days"]),
            "visiting_city_number": (raw.visiting_city_number, expected["visiting_city_number"]),
            "level": (raw.level, expected["level"]),
        }
        for key, (got, want) in checks.items():
            if got == want:
                val_fields[key] += 1
            else:
                val_errors.append({"task": task.task_id, "field": key, "parsed": got, "layout": want})
    hard_total = sum(count_hard_constraints(t.gold["query"]) for t in validation)

    # 4. generated-task feasibility per family
    rng = np.random.default_rng(0)
    feasibility = {}
    for family in adapter.families():
        level, days = adapter._family_parts(family)
        solved = sum(adapter._scenario(level, days, rng) is not None for _ in range(20))
        feasibility[family] = solved / 20

    # 5. the feasibility search on the 45 train queries (each has a known feasible plan: its gold plan)
    recall_failures = {}
    for example in adapter._training_examples():
        task = adapter.parse_task(example)
        ok, reason = adapter.validate_task(task)
        if not ok:
            recall_failures[example["query"][:80]] = reason

    result = {
        "command": "GENENV_DATA_DIR=../shared/data python experiments/parity/travelplanner_gold.py",
        "what": "TravelPlanner train gold plans under genenv's re-implementation of the official evaluation; "
        "query-parser accuracy; generated-scenario feasibility",
        "gold_plans": {
            "metrics": adapter.aggregate(train, scores),
            "exceptions": exceptions,
            "note": "all 45 gold plans pass every commonsense and hard constraint (parsed query fields); "
            "flights are checked against the train-reference flights subset, which holds every flight "
            "the train reference information lists",
        },
        "parser_train": {
            "n": len(train),
            "accuracy": train_accuracy,
            "gold_source": "org/dest/dates/days from the reference-information keys, visiting cities from its "
            "'Attractions in X' keys, level from the split layout (15 easy, 15 medium, 15 hard)",
            "gold_plan_meets_parsed_hard_constraints": hard_ok / len(train),
            "hard_constraint_total": sum(count_hard_constraints(t.gold["query"]) for t in train),
            "hard_constraint_total_official": 105,
            "errors": errors,
        },
        "parser_validation": {
            "n": len(validation),
            "agreement_with_layout": {k: v / len(validation) for k, v in val_fields.items()},
            "hard_constraint_total": hard_total,
            "hard_constraint_total_official": 420,
            "errors": val_errors,
            "note": "validation has no structured gold here; 'layout' = level/days by position (blocks of 20)",
        },
        "generated_feasibility": {
            "scenarios_per_family": 20,
            "solved_fraction": feasibility,
            "note": "fraction of random database scenarios (cities, dates, people, constraints) for which the "
            "greedy search finds a plan meeting every constraint",
        },
        "feasibility_on_train_queries": {
            "accepted": len(train) - len(recall_failures),
            "n": len(train),
            "rejected": recall_failures,
            "note": "each train query, written as a generated task (its text, parsed fields and the cities its gold "
            "plan visits), must be accepted: the greedy search finds a plan within the budget",
        },
        "wall_time_s": round(time.perf_counter() - started, 1),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=1, default=str))
    print(json.dumps({k: v for k, v in result.items() if k != "gold_plans"}, indent=1, default=str)[:4000])
    print(json.dumps(result["gold_plans"]["metrics"], indent=1))
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
