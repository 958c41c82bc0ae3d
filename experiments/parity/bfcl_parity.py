"""Parity of genenv's BFCL verdicts with bfcl-eval's, on gold answers and perturbations of every entry.

    GENENV_DATA_DIR=/work/shared/data python experiments/parity/bfcl_parity.py \
        [--bfcl-python /work/bfclenv/bin/python] [--multi-turn-stride 1] [--categories simple_python,...]

For every entry of the AST, hallucination and multi-turn categories it builds candidate model outputs
(:mod:`genenv.benchmarks.bfcl.candidates`: the gold answer in both text formats, reordered calls and
parameters, a wrong function, an extra / missing / wrongly typed / wrong-valued parameter, a missing
or duplicated call, prose, ``[]``, truncated text, plus ~60 decoder corner cases (operators, names,
nested calls, lambdas, fences, malformed tags, ...) on the first entries of each category, and there
also the candidate classes of genenv's documented deviations: the gold answer with an argument written
as a literal operation (dict/list/set/str/int), as an operation holding a call, or with an over-size
literal term that ``eval`` cancels out, and (relevance/irrelevance) answers shaped like calls whose
arguments do not decode; for
multi-turn the gold calls step by step, batched, as JSON, with an extra unknown call, a dropped call, a
changed argument, an empty or a missing turn).
genenv judges them through ``BFCLAdapter.score`` (on the trajectory ToolEnv would record); bfcl-eval
judges the same texts with its own runner functions in a separate virtual environment that has its
provider SDKs (``experiments/parity/bfcl_official_checker.py``; ``--stub-sdks`` where bfcl-eval is installed
``--no-deps``, e.g. ``--bfcl-python /work/main/.venv/bin/python --stub-sdks``). Each disagreement is
matched against genenv's documented deviations (:func:`deviation`); the results give, per candidate
kind, the agreements, the documented deviations and the rest (which must be 0). Prints the
disagreements per category and writes ``results/parity/bfcl_parity.json`` with the counts, the
throughput of both checkers and every disagreement and gold answer that fails (with both verdicts).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from importlib.metadata import version
from pathlib import Path
from typing import Any

from genenv.benchmarks.base import Trajectory, Turn
from genenv.benchmarks.bfcl import BFCLAdapter
from genenv.benchmarks.bfcl.candidates import (
    ast_candidates,
    call_shape_probes,
    decoder_probes,
    multi_turn_candidates,
    operation_candidates,
    relevance_candidates,
    trajectory_of,
)
from genenv.benchmarks.bfcl.data import AST_LIVE, AST_NON_LIVE, MULTI_TURN, RELEVANCE, language
from genenv.benchmarks.bfcl.decoding import DecodeError, decode_ast, has_call_shape, is_empty_output
from genenv.benchmarks.bfcl.multi_turn import Backends

RESULTS = Path(__file__).resolve().parents[2] / "results" / "parity" / "bfcl_parity.json"
OFFICIAL = Path(__file__).resolve().parent / "bfcl_official_checker.py"
#: entries per single-turn category that also get the decoder corner-case probes
PROBED_ENTRIES = 25


def build(adapter: BFCLAdapter, categories: list[str], mt_stride: int) -> list[dict[str, Any]]:
    """Every candidate: its task, label, expected verdict, genenv trajectory and official request."""
    items = []
    for category in categories:
        tasks = adapter.load_tasks(category)
        if category in MULTI_TURN:
            tasks = tasks[::mt_stride]
        for index, task in enumerate(tasks):
            if category in MULTI_TURN:
                backends = Backends(task.metadata["involved_classes"], task.metadata["initial_config"], False)
                gold = [[{c.name: c.arguments} for c in map(backends.keyword_form, turn)] for turn in task.gold]
                for label, turns, expect in multi_turn_candidates(gold):
                    request = {
                        "kind": "multi_turn",
                        "id": task.task_id,
                        "category": category,
                        "turns": [[*steps, "Done."] for steps in turns],
                    }
                    items.append(_item(task, label, expect, trajectory_of(turns), request))
                continue
            functions = task.metadata["functions"]
            if category in RELEVANCE:
                candidates, kind = relevance_candidates(functions, category), "relevance"
            else:
                candidates, kind = ast_candidates(functions, task.gold, category, language(category)), "ast"
            if index < PROBED_ENTRIES:
                first = functions[0] if functions else {"name": "f", "parameters": {"properties": {}}}
                param = next(iter(first["parameters"].get("properties") or {"x": None}))
                candidates = [*candidates, *decoder_probes(first["name"], param)]
                if category in RELEVANCE:
                    candidates += call_shape_probes(first["name"], param)
                elif language(category) == "python":
                    candidates += operation_candidates(functions, task.gold)
            for candidate in candidates:
                request = {"kind": kind, "id": task.task_id, "category": category, "text": candidate.text}
                trajectory = Trajectory(turns=[Turn(action=candidate.text)])
                items.append(_item(task, candidate.label, candidate.expect_valid, trajectory, request))
    return items


def _item(task, label, expect, trajectory, request) -> dict[str, Any]:
    return {"task": task, "label": label, "expect": expect, "trajectory": trajectory, "request": request}


def genenv_verdicts(adapter: BFCLAdapter, items: list[dict[str, Any]]) -> tuple[list[dict], dict[str, float]]:
    verdicts, seconds = [], defaultdict(float)
    for item in items:
        start = time.perf_counter()
        score = adapter.score(item["task"], item["trajectory"])
        seconds[item["request"]["kind"]] += time.perf_counter() - start
        verdict = {"valid": score.value == 1.0, "error_type": score.breakdown.get("error_type", "")}
        if score.breakdown.get("errors"):
            verdict["error"] = str(score.breakdown["errors"][0])[:300]
        verdicts.append(verdict)
    return verdicts, seconds


def candidate_kind(label: str) -> str:
    """``operation_literal``, ``operation_with_call``, ``operation_oversize``, ``call_shape`` or ``other``."""
    return label.split(":")[0] if ":" in label else "other"


def deviation(item: dict[str, Any], mine: dict[str, Any], official: dict[str, Any]) -> str | None:
    """The documented deviation (docs/benchmarks/bfcl.md) a disagreement falls under, or ``None``."""
    request = item["request"]
    if request["kind"] == "relevance":
        irrelevance = "irrelevance" in request["category"]
        genenv_call, official_call = mine["valid"] != irrelevance, official["valid"] != irrelevance
        if (
            genenv_call
            and not official_call
            and has_call_shape(request["text"])
            and not _decodes_a_call(request["text"])
        ):
            return "call_shape_counts_as_call"
        return None
    if request["kind"] == "ast" and official["valid"] and not mine["valid"]:
        error = mine.get("error", "")
        if "only operations on literals are computed" in error:
            return "operation_with_name_or_call_not_evaluated"
        if "would exceed" in error or "format width" in error or "'*' width" in error:
            return "operation_beyond_size_bound"
    return None


def _decodes_a_call(text: str) -> bool:
    try:
        return not is_empty_output(decode_ast(text, "python"))
    except DecodeError:
        return False


def official_verdicts(python: str, items: list[dict[str, Any]], stub_sdks: bool) -> tuple[list[dict], dict[str, float]]:
    payload = "".join(json.dumps(item["request"]) + "\n" for item in items)
    command = [python, str(OFFICIAL), *(["--stub-sdks"] if stub_sdks else [])]
    done = subprocess.run(command, input=payload, capture_output=True, text=True, check=True, cwd="/tmp")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    *verdicts, timing = lines
    if len(verdicts) != len(items):
        raise RuntimeError(f"bfcl-eval answered {len(verdicts)} of {len(items)} requests:\n{done.stderr[-2000:]}")
    return verdicts, timing["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bfcl-python", default="/work/bfclenv/bin/python", help="python of the full bfcl-eval venv")
    parser.add_argument("--categories", default=",".join(AST_NON_LIVE + AST_LIVE + RELEVANCE + MULTI_TURN))
    parser.add_argument("--multi-turn-stride", type=int, default=1, help="every K-th multi-turn entry")
    parser.add_argument("--stub-sdks", action="store_true", help="bfcl-eval installed --no-deps: stub its SDKs")
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()
    categories = [c for c in args.categories.split(",") if c]

    adapter = BFCLAdapter()
    items = build(adapter, categories, args.multi_turn_stride)
    ours, our_seconds = genenv_verdicts(adapter, items)
    theirs, their_seconds = official_verdicts(args.bfcl_python, items, args.stub_sdks)

    per_category: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    disagreements, gold_failures, unexpected = [], [], []
    counts: dict[str, int] = defaultdict(int)
    per_kind: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for item, mine, official in zip(items, ours, theirs):
        category, kind = item["request"]["category"], item["request"]["kind"]
        counts[kind] += 1
        kind_row = per_kind[candidate_kind(item["label"])]
        kind_row["candidates"] += 1
        row = per_category[category]
        row["candidates"] += 1
        row["genenv_valid"] += mine["valid"]
        detail = {
            "id": item["task"].task_id,
            "category": category,
            "label": item["label"],
            "genenv": mine,
            "official": official,
            "text": str(item["request"].get("text", item["request"].get("turns")))[:400],
        }
        if official["valid"] is None:
            row["official_raised"] += 1
            kind_row["official_raised"] += 1
            disagreements.append(detail)
            continue
        row["official_valid"] += official["valid"]
        if official["valid"] == mine["valid"]:
            row["agree"] += 1
            kind_row["agree"] += 1
        else:
            documented = deviation(item, mine, official)
            detail["deviation"] = documented
            row["disagree"] += 1
            row["documented_deviation" if documented else "undocumented_disagreement"] += 1
            kind_row[f"deviation:{documented}" if documented else "undocumented_disagreement"] += 1
            disagreements.append(detail)
        if item["label"].startswith("gold") and not mine["valid"]:
            gold_failures.append(detail)
        elif item["expect"] is not None and mine["valid"] != item["expect"] and not item["label"].startswith("gold"):
            unexpected.append(detail)

    throughput = {
        kind: {
            "candidates": counts[kind],
            "genenv_verdicts_per_s": counts[kind] / our_seconds[kind] if our_seconds.get(kind) else None,
            "official_verdicts_per_s": counts[kind] / their_seconds[kind] if their_seconds.get(kind) else None,
        }
        for kind in counts
    }
    keys = ("candidates", "agree", "disagree", "documented_deviation", "undocumented_disagreement")
    totals = {key: sum(row.get(key, 0) for row in per_category.values()) for key in keys}
    totals["official_raised"] = sum(row.get("official_raised", 0) for row in per_category.values())
    result = {
        "command": " ".join(
            ["GENENV_DATA_DIR=/work/shared/data python experiments/parity/bfcl_parity.py", *sys.argv[1:]]
        ),
        "bfcl_eval_version": version("bfcl-eval"),
        "official_handlers": "Qwen/Qwen3-0.6B (prompting: [f(a=1)] texts), Qwen/Qwen3-0.6B-FC (<tool_call> texts)",
        "multi_turn_stride": args.multi_turn_stride,
        "cpu_count": os.cpu_count(),
        "totals": totals,
        "candidate_kinds": {k: dict(row) for k, row in per_kind.items()},
        "categories": {c: dict(row) for c, row in per_category.items()},
        "throughput": throughput,
        "disagreements": disagreements,
        "gold_failures_both_checkers": [d for d in gold_failures if d["official"]["valid"] is False],
        "gold_failures_genenv_only": [d for d in gold_failures if d["official"]["valid"] is not False],
        "perturbations_judged_against_expectation": unexpected,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(result, indent=1, default=str) + "\n")

    print(f"{'category':26} {'candidates':>10} {'agree':>7} {'disagree':>8} {'raised':>6} {'gold fails':>10}")
    for category, row in per_category.items():
        fails = sum(d["category"] == category for d in gold_failures)
        print(
            f"{category:26} {row['candidates']:>10} {row.get('agree', 0):>7} {row.get('disagree', 0):>8} "
            f"{row.get('official_raised', 0):>6} {fails:>10}"
        )
    print(f"totals: {totals}")
    for kind, row in per_kind.items():
        print(f"{kind}: {dict(row)}")
    for kind, row in throughput.items():
        ours, theirs = row["genenv_verdicts_per_s"], row["official_verdicts_per_s"]
        print(f"{kind}: genenv {ours:.0f} verdicts/s, bfcl-eval {theirs:.0f} verdicts/s")
    print(f"written to {args.output}")


if __name__ == "__main__":
    main()
