"""Parity of genenv's TravelPlanner evaluation with the official evaluation scripts, plan by plan.

    GENENV_DATA_DIR=/work/shared/data python experiments/parity/travelplanner_parity.py --official-dir /work/scratch/tp

``--official-dir`` holds ``evaluation/``, ``tools/`` and ``utils/`` of OSU-NLP-Group/TravelPlanner
(HEAD da7c1d4; e.g. ``git archive HEAD evaluation tools utils | tar x -C DIR``); nothing of it is
copied into genenv. This script lays out ``DIR/database`` from ``GENENV_DATA_DIR`` (symlinks; the
flights table is the train subset both sides read, placed where upstream looks for
``clean_Flights_2022.csv``) and runs ``experiments/parity/travelplanner_official_runner.py`` in a separate
process, which imports the official scripts by path (only ``datasets`` and ``gradio`` stubbed).

Candidates, on each of the 45 train gold plans (``experiments/parity/travelplanner_gold.py`` shows how they
are read) with the query genenv parsed: the gold plan; each commonsense constraint violated alone
(a meal in another city, unknown restaurant / attraction / accommodation / flight, a repeated
restaurant, a repeated attraction, a flight and self-driving in one trip, an accommodation below its
minimum nights, a wrong origin or return city, absent information); missing fields; too few and too
many days; swapped and wrong city sequences; no plan; and each hard constraint set on the query
(budget one dollar below and exactly at the plan's cost, every house rule, room type, cuisine and
transportation value). Every check's value (True / False / None, hard checks only where ``eval.py``
runs them) and the final pass are compared; ``eval.py``'s ``eval_score`` also scores the gold set and a
mixed perturbed set, compared with genenv's ``aggregate``. Writes
``results/parity/travelplanner_parity.json``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from genenv.benchmarks.base import Trajectory, get_benchmark
from genenv.benchmarks.travelplanner.database import TravelDatabase
from genenv.benchmarks.travelplanner.evaluation import COMMONSENSE, HARD, evaluate_plan, total_cost

RESULTS = Path(__file__).resolve().parents[2] / "results" / "parity" / "travelplanner_parity.json"
RUNNER = Path(__file__).resolve().parent / "travelplanner_official_runner.py"
HOUSE_RULES = ("parties", "smoking", "children under 10", "visitors", "pets")
ROOM_TYPES = ("entire room", "private room", "shared room", "not shared room")
CUISINES = ("Chinese", "American", "Italian", "Mexican", "Indian", "Mediterranean", "French")
TRANSPORT_RULES = ("no flight", "no self-driving")
MEALS = ("breakfast", "lunch", "dinner")
PLAN_FIELDS = ("current_city", "transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation")
DATABASE_LINKS = ("accommodations", "attractions", "background", "googleDistanceMatrix", "restaurants")


def perturbations(query: dict, plan: list[dict], db: TravelDatabase) -> list[tuple[str, dict, list | None]]:
    """``(label, query, plan)`` candidates built from one gold plan (labels ``kind:detail``)."""
    out: list[tuple[str, dict, list | None]] = [("gold:plan", query, plan), ("no_plan:empty", query, None)]

    def edit(label: str, change) -> None:  # noqa: ANN001 - a function editing a copy of the plan
        changed = copy.deepcopy(plan)
        if change(changed) is not False:
            out.append((label, query, changed))

    meals = [(i, m) for i, day in enumerate(plan) for m in MEALS if _filled(day.get(m))]
    cities = {city for _, city in (_name_city(plan[i][m]) for i, m in meals)}
    if meals:
        i, m = meals[0]
        other = next(c for c in sorted(db.restaurants) if c not in cities)
        edit(
            "commonsense:meal_in_other_city",
            lambda p: p[i].__setitem__(m, f"{db.restaurants[other][0]['Name']}, {other}"),
        )
        edit(
            "commonsense:unknown_restaurant",
            lambda p: p[i].__setitem__(m, f"Zz Imaginary Diner, {_name_city(plan[i][m])[1]}"),
        )
        same_city = [(j, n) for j, n in meals[1:] if _name_city(plan[j][n])[1] == _name_city(plan[i][m])[1]]
        if same_city:
            j, n = same_city[0]
            edit("commonsense:repeated_restaurant", lambda p: p[j].__setitem__(n, plan[i][m]))
    attraction_days = [i for i, day in enumerate(plan) if _filled(day.get("attraction"))]
    if attraction_days:
        i = attraction_days[0]
        first = plan[i]["attraction"].split(";")[0]
        edit("commonsense:repeated_attraction", lambda p: p[i].__setitem__("attraction", f"{first};{first};"))
        city = _name_city(first)[1]
        edit(
            "commonsense:unknown_attraction", lambda p: p[i].__setitem__("attraction", f"Zz Imaginary Museum, {city};")
        )
    stays = [i for i, day in enumerate(plan) if _filled(day.get("accommodation"))]
    if stays:
        i = stays[0]
        name, city = _name_city(plan[i]["accommodation"])
        nights = sum(1 for day in plan if day.get("accommodation") == plan[i]["accommodation"])
        strict = [a for a in db.accommodations.get(city, []) if a["minimum nights"] > nights and a["NAME"] != name]

        def stay_elsewhere(p: list, new_name: str) -> None:
            for day in p:
                if day.get("accommodation") == plan[i]["accommodation"]:
                    day["accommodation"] = f"{new_name}, {city}"

        edit("commonsense:unknown_accommodation", lambda p: stay_elsewhere(p, "Zz Imaginary Inn"))
        if strict:
            edit("commonsense:below_minimum_nights", lambda p: stay_elsewhere(p, strict[0]["NAME"]))
    flights = [i for i, day in enumerate(plan) if "Flight Number:" in str(day.get("transportation"))]
    if flights:
        i = flights[0]
        number = plan[i]["transportation"].split("Flight Number: ")[1].split(",")[0]
        edit(
            "commonsense:unknown_flight",
            lambda p: p[i].__setitem__("transportation", plan[i]["transportation"].replace(number, "F0000000")),
        )
        last = flights[-1]
        origin, destination = _from_to(plan[last]["current_city"])
        if origin:
            edit(
                "transport_conflict:flight_and_self_driving",
                lambda p: p[last].__setitem__(
                    "transportation",
                    f"Self-driving, from {origin} to {destination}, duration: 1 hour, distance: 100 km, cost: 5",
                ),
            )
    travel = [i for i, day in enumerate(plan) if " to " in str(day.get("current_city"))]
    others = [c for c in db.city_set if c not in str(plan)]
    if travel and others:
        first, last = travel[0], travel[-1]
        origin, destination = _from_to(plan[first]["current_city"])
        if origin:
            edit(
                "city_sequence:wrong_origin",
                lambda p: p[first].__setitem__(
                    "current_city", plan[first]["current_city"].replace(origin, others[0], 1)
                ),
            )
        back_from, back_to = _from_to(plan[last]["current_city"])
        if back_to and last != first:
            edit(
                "city_sequence:wrong_return",
                lambda p: p[last].__setitem__("current_city", f"from {back_from} to {others[0]}"),
            )
            edit(
                "city_sequence:swapped_travel_days",
                lambda p: (
                    p[first].__setitem__("current_city", plan[last]["current_city"]),
                    p[last].__setitem__("current_city", plan[first]["current_city"]),
                ),
            )
    edit(
        "commonsense:absent_information", lambda p: [day.update({k: "-" for k in (*MEALS, "attraction")}) for day in p]
    )
    for key in PLAN_FIELDS:
        edit(f"missing_field:{key}", lambda p, key=key: p[min(1, len(p) - 1)].pop(key, None))
    if len(plan) > 1:
        edit("day_count:one_day_short", lambda p: p.pop())
    edit("day_count:one_day_extra", lambda p: p.append({**copy.deepcopy(p[-1]), "days": len(p) + 1}))

    cost = total_cost(query, plan, db)
    for label, budget in (("hard:budget_one_below", int(cost) - 1), ("hard:budget_exact", cost)):
        out.append((label, {**query, "budget": budget}, plan))
    for key, values in (
        ("house rule", HOUSE_RULES),
        ("room type", ROOM_TYPES),
        ("cuisine", [[c] for c in CUISINES]),
        ("transportation", TRANSPORT_RULES),
    ):
        for value in values:
            constraint = {**query["local_constraint"], key: value}
            label = f"hard:{key.replace(' ', '_')}={value if isinstance(value, str) else value[0]}"
            out.append((label, {**query, "local_constraint": constraint}, plan))
    return out


def _filled(value: Any) -> bool:
    return isinstance(value, str) and value not in ("", "-")


def _name_city(text: str) -> tuple[str, str]:
    name, _, city = text.rpartition(", ")
    return name, city


def _from_to(text: str) -> tuple[str | None, str | None]:
    if not text.startswith("from ") or " to " not in text:
        return None, None
    origin, _, destination = text[len("from ") :].partition(" to ")
    return origin, destination


def genenv_verdict(query: dict, plan: list | None, db: TravelDatabase) -> dict:
    """genenv's checks keyed like upstream: ``{"commonsense": {key: value}, "hard": {...} | None}``."""
    result = evaluate_plan(query, plan, db)
    if not result.delivered:
        return {"delivered": False, "final": False}
    commonsense = {key: result.commonsense[name][0] for key, name in COMMONSENSE.items()}
    hard = None if result.hard is None else {key: result.hard[name][0] for key, name in HARD.items()}
    reasons = {name: reason for name, (ok, reason) in {**result.commonsense, **(result.hard or {})}.items() if reason}
    return {"delivered": True, "commonsense": commonsense, "hard": hard, "final": result.final_pass, "reasons": reasons}


def official_final(verdict: dict) -> bool:
    """``eval.py``'s final pass: no commonsense and no hard check False, hard checks run."""
    if not verdict.get("delivered") or verdict.get("hard") is None:
        return False
    checks = [*verdict["commonsense"].values(), *verdict["hard"].values()]
    return all(value is not False for value, _ in checks)


def compare(mine: dict, official: dict) -> list[str]:
    """The check keys (and ``final``/``hard_run``/``delivered``) on which the two verdicts differ."""
    if mine["delivered"] != official["delivered"]:
        return ["delivered"]
    if not mine["delivered"]:
        return []
    differing = [k for k, v in mine["commonsense"].items() if official["commonsense"][k][0] != v]
    if (mine["hard"] is None) != (official.get("hard") is None):
        differing.append("hard_run")
    elif mine["hard"] is not None:
        differing += [k for k, v in mine["hard"].items() if official["hard"][k][0] != v]
    if mine["final"] != official_final(official):
        differing.append("final")
    return differing


def deviation(mine: dict, official: dict) -> str | None:
    """The documented deviation (docs/benchmarks/travelplanner.md) a disagreement falls under, or ``None``."""
    if "raised" in official and any("could not be checked" in r for r in mine.get("reasons", {}).values()):
        return "upstream_raises_genenv_fails_the_check"
    return None


def prepare_official_dir(official: Path, data_dir: Path) -> None:
    """``official/database`` as upstream reads it, linked to genenv's data folder."""
    for script in ("evaluation/commonsense_constraint.py", "evaluation/hard_constraint.py", "evaluation/eval.py"):
        if not (official / script).exists():
            raise SystemExit(f"{official / script} not found: extract the official repository there (see --help)")
    database = official / "database"
    (database / "flights").mkdir(parents=True, exist_ok=True)
    for name in DATABASE_LINKS:
        link = database / name
        if not link.exists():
            link.symlink_to(data_dir / "travelplanner" / "database" / name)
    flights = database / "flights" / "clean_Flights_2022.csv"
    if not flights.exists():
        flights.symlink_to(
            data_dir / "travelplanner" / "database" / "flights" / "flights_subset_from_train_ref_info.csv"
        )


def run_official(official: Path, requests: list[dict], aggregate: bool) -> tuple[list[dict], dict | None]:
    with tempfile.TemporaryDirectory() as folder:
        requests_path, verdicts_path = Path(folder) / "requests.jsonl", Path(folder) / "verdicts.jsonl"
        aggregate_path = Path(folder) / "aggregate.json"
        requests_path.write_text("".join(json.dumps(r) + "\n" for r in requests))
        command = [sys.executable, str(RUNNER), str(official), str(requests_path), str(verdicts_path)]
        done = subprocess.run([*command, *([str(aggregate_path)] if aggregate else [])], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the official runner failed:\n{done.stderr[-3000:]}")
        verdicts = [json.loads(line) for line in verdicts_path.read_text().splitlines()]
        return verdicts, json.loads(aggregate_path.read_text()) if aggregate else None


def genenv_aggregate(adapter, tasks: list, plans: list) -> dict[str, float]:  # noqa: ANN001
    """``aggregate`` over the adapter's scores of ``plans`` submitted as JSON answers."""
    answers = [Trajectory(final_answer=None if plan is None else json.dumps(plan)) for plan in plans]
    return adapter.aggregate(tasks, [adapter.score(task, answer) for task, answer in zip(tasks, answers)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--official-dir", type=Path, required=True)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    started = time.perf_counter()
    adapter = get_benchmark("travelplanner")
    db = adapter.db
    prepare_official_dir(args.official_dir.resolve(), Path(adapter.data_dir).resolve().parent)
    train = adapter.load_tasks("train")

    items = [
        (task.task_id, label, query, plan)
        for task in train
        for label, query, plan in perturbations(task.gold["query"], task.gold["plan"], db)
    ]
    ours = [genenv_verdict(query, plan, db) for _, _, query, plan in items]
    theirs, _ = run_official(args.official_dir.resolve(), [{"query": q, "plan": p} for _, _, q, p in items], False)

    per_kind: dict[str, Counter] = defaultdict(Counter)
    disagreements = []
    deviations: Counter = Counter()
    failed_checks: dict[str, Counter] = defaultdict(Counter)
    for (task_id, label, _, _), mine, official in zip(items, ours, theirs):
        row = per_kind[label.split(":")[0]]
        row["candidates"] += 1
        for part in ("commonsense", "hard"):
            failed_checks[label].update(k for k, (v, _) in (official.get(part) or {}).items() if v is False)
        row["genenv_final_pass"] += mine["final"]
        row["official_final_pass"] += official_final(official)
        row["official_raised"] += "raised" in official
        differing = compare(mine, official) if "raised" not in official else ["raised"]
        if not differing:
            row["agree"] += 1
            continue
        documented = deviation(mine, official)
        row[f"deviation:{documented}" if documented else "undocumented_disagreement"] += 1
        deviations[documented or "undocumented"] += 1
        disagreements.append(
            {
                "id": task_id,
                "label": label,
                "differing": differing,
                "deviation": documented,
                "genenv": mine,
                "official": official,
            }  # fmt: skip
        )

    aggregates = {}
    gold_plans = [t.gold["plan"] for t in train]
    by_task: dict[str, list] = defaultdict(list)
    for task_id, label, _, plan in items:
        if label.split(":")[0] not in ("gold", "hard", "missing_field"):  # eval.py crashes on missing fields
            by_task[task_id].append(plan)
    mixed = [by_task[t.task_id][i % len(by_task[t.task_id])] for i, t in enumerate(train)]
    for name, plans in (("gold", gold_plans), ("mixed_perturbations", mixed)):
        requests = [{"query": t.gold["query"], "plan": p} for t, p in zip(train, plans)]
        _, official_scores = run_official(args.official_dir.resolve(), requests, True)
        aggregates[name] = {"official_eval_py": official_scores, "genenv": genenv_aggregate(adapter, train, plans)}

    result = {
        "command": "GENENV_DATA_DIR=/work/shared/data python experiments/parity/travelplanner_parity.py "
        + " ".join(sys.argv[1:]),
        "official": "OSU-NLP-Group/TravelPlanner HEAD da7c1d4: evaluation/commonsense_constraint.py, "
        "hard_constraint.py, eval.py, run by path (experiments/parity/travelplanner_official_runner.py)",
        "flights_table": "train subset (flights_subset_from_train_ref_info.csv) on both sides",
        "cpu_count": os.cpu_count(),
        "seconds": round(time.perf_counter() - started, 1),
        "totals": {
            "candidates": len(items),
            "agree": sum(r["agree"] for r in per_kind.values()),
            "documented_deviations": {k: v for k, v in deviations.items() if k != "undocumented"},
            "undocumented_disagreements": deviations["undocumented"],
        },
        "candidate_kinds": {k: dict(v) for k, v in per_kind.items()},
        "labels": dict(Counter(label for _, label, _, _ in items)),
        "official_failed_checks_per_label": {label: dict(c) for label, c in failed_checks.items()},
        "aggregates": aggregates,
        "disagreements": disagreements,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=1, default=str) + "\n")
    for kind, row in per_kind.items():
        print(f"{kind:20} {dict(row)}")
    print(f"totals: {result['totals']}")
    for name, pair in aggregates.items():
        print(name, pair)
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
