"""Which written levels put tasks in the band, and how many could a level choice put there at most?

    python benchmarks/in_band_by_level.py reasoning_gym_expressions [--runs-root runs/curriculum_experiment]

Reads the committed records of every run folder of a curriculum-experiment testbed (read only: a running run is safe)
and writes ``benchmarks/results/curriculum_experiment/<testbed>/in_band_by_level.md``:

* per written family key (``name@L``) and curriculum: the tasks the agent met for the first time, and the shares its G
  attempts solved none of, all of, and in the band ``|p_hat - alpha| <= band_k`` (from ``pools/traces.jsonl``, the
  on-policy attempts grouped by epoch and task);
* the in-band share each curriculum's own level mix reached, next to two mixes of the same per-key shares (pooled over
  every run): the uniform mix over the keys, and the best key of each family. The second is the most a curriculum
  that only chooses levels could reach, given how the agent's outcomes spread within a level;
* requested against written level, per curriculum (from ``pools/tasks.jsonl``): whether the simulator writes the level
  it is asked for, and the share of distinct expressions among the tasks it wrote.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from curriculum_experiment import RESULTS, ROOT, TESTBEDS

from genenv.curriculum.reward import DifficultyFilter

#: the share columns of the per-key table
OUTCOMES = ("none", "all", "band")


def committed(pool: Path) -> Iterator[dict]:
    """The committed records of a pool file (``<name>.meta.json`` counts them), without opening it for writing."""
    meta = pool.with_name(pool.name.replace(".jsonl", ".meta.json"))
    count = json.loads(meta.read_text())["committed"] if meta.exists() else 0
    with pool.open() as lines:
        for _, line in zip(range(count), lines):
            yield json.loads(line)


def key_of(task: dict) -> str:
    """The written family key ``name@L`` of a stored task."""
    gold = task["gold"]
    return f"{gold['family']}@{gold['level']}"


def first_attempts(run_dir: Path) -> list[tuple[str, float]]:
    """(written key, p_hat) of every task in the epoch the agent first met it."""
    attempts: dict[tuple[int, str], list[float]] = defaultdict(list)
    keys: dict[str, str] = {}
    for record in committed(run_dir / "pools" / "traces.jsonl"):
        if record["source"] == "on_policy":
            task = record["task"]
            attempts[(record["epoch"], task["task_id"])].append(float(record["reward"]))
            keys[task["task_id"]] = key_of(task)
    seen: set[str] = set()
    tasks = []
    for (_, task_id), rewards in sorted(attempts.items()):
        if task_id not in seen:
            seen.add(task_id)
            tasks.append((keys[task_id], float(np.mean(rewards))))
    return tasks


def outcome_shares(p_hats: list[float], alpha: float, band_k: float) -> dict[str, float]:
    """Shares of the tasks that none of the attempts solved, that all solved, and that lie in the band."""
    band = DifficultyFilter(alpha, band_k)
    return {
        "none": float(np.mean([p == 0 for p in p_hats])),
        "all": float(np.mean([p == 1 for p in p_hats])),
        "band": float(np.mean([band(p) for p in p_hats])),
    }


def level_requests(run_dir: Path) -> tuple[list[int], int, int]:
    """(written minus requested level of each parsed generation, its count of distinct expressions, its count)."""
    offsets, expressions = [], []
    for record in committed(run_dir / "pools" / "tasks.jsonl"):
        task = record.get("task")
        requested = record["family"].rpartition("@")[2]
        if task is None or not requested.isdigit():
            continue
        offsets.append(int(task["gold"]["level"]) - int(requested))
        expressions.append(task["gold"].get("expression") or json.dumps(task["gold"], sort_keys=True))
    return offsets, len(set(expressions)), len(expressions)


def curriculum_of(run_dir: Path) -> str:
    return run_dir.name.rpartition("-s")[0]


def build(testbed: str, runs_root: Path) -> str:
    _, alpha, band_k = TESTBEDS[testbed]
    runs = sorted(d for d in (runs_root / testbed).iterdir() if (d / "pools" / "traces.jsonl").exists())
    if not runs:
        raise SystemExit(f"no run folder with pools under {runs_root / testbed}")
    by_curriculum: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for run_dir in runs:
        by_curriculum[curriculum_of(run_dir)].extend(first_attempts(run_dir))
    pooled: dict[str, list[float]] = defaultdict(list)
    for tasks in by_curriculum.values():
        for key, p in tasks:
            pooled[key].append(p)
    curricula = sorted(by_curriculum)
    lines = [
        f"# In the band by written level: {testbed}",
        "",
        f"Built by `python benchmarks/in_band_by_level.py {testbed}` from the committed pools of "
        + ", ".join(f"`{d.name}`" for d in runs)
        + f". A task is counted in the epoch the agent first met it; band: |p_hat - {alpha}| <= {band_k} over the G "
        "attempts.",
        "",
        "## Outcomes per written family key (share of tasks: solved by none of G / by all of G / in the band)",
        "",
        "| key | "
        + " | ".join(f"{c}: tasks | none / all / band" for c in curricula)
        + " | pooled: tasks | none / all / band |",
        "|---|" + "---|---|" * (len(curricula) + 1),
    ]
    for key in sorted(pooled, key=lambda k: (k.rpartition("@")[0], int(k.rpartition("@")[2]))):
        cells = []
        for curriculum in curricula + ["pooled"]:
            values = pooled[key] if curriculum == "pooled" else [p for k, p in by_curriculum[curriculum] if k == key]
            shares = outcome_shares(values, alpha, band_k) if values else None
            cells.append(f"{len(values)} | " + (" / ".join(f"{shares[o]:.2f}" for o in OUTCOMES) if shares else "-"))
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    band = {key: outcome_shares(values, alpha, band_k)["band"] for key, values in pooled.items()}
    families: dict[str, list[str]] = defaultdict(list)
    for key in band:
        families[key.rpartition("@")[0]].append(key)
    uniform = float(np.mean(list(band.values())))
    best = {family: max(keys, key=band.get) for family, keys in families.items()}
    ceiling = float(np.mean([band[key] for key in best.values()]))
    lines += [
        "",
        "## The share of tasks in the band: each curriculum's own mix against two mixes of the pooled per-key shares",
        "",
        "| mix | share in the band |",
        "|---|---|",
    ]
    for curriculum in curricula:
        tasks = by_curriculum[curriculum]
        share = outcome_shares([p for _, p in tasks], alpha, band_k)["band"]
        lines.append(f"| {curriculum} (its own level mix, {len(tasks)} tasks) | {share:.3f} |")
    lines += [
        f"| uniform over the {len(band)} written keys | {uniform:.3f} |",
        "| the best key of each family ("
        + ", ".join(f"{key} {band[key]:.2f}" for key in sorted(best.values()))
        + f"), families equally | {ceiling:.3f} |",
        "",
        "## Requested against written level (parsed generations)",
        "",
        "| curriculum | generations | written = requested | written below | written above | mean offset | distinct "
        "expressions |",
        "|---|---|---|---|---|---|---|",
    ]
    for curriculum in curricula:
        offsets, distinct, count = [], 0, 0
        for run_dir in runs:
            if curriculum_of(run_dir) == curriculum:
                run_offsets, run_distinct, run_count = level_requests(run_dir)
                offsets += run_offsets
                distinct += run_distinct
                count += run_count
        if not offsets:
            lines.append(f"| {curriculum} | 0 | - | - | - | - | - |")
            continue
        o = np.asarray(offsets)
        lines.append(
            f"| {curriculum} | {len(o)} | {np.mean(o == 0):.2f} | {np.mean(o < 0):.2f} | {np.mean(o > 0):.2f} | "
            f"{np.mean(o):+.2f} | {distinct / count:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("testbed", choices=sorted(TESTBEDS))
    parser.add_argument("--runs-root", type=Path, default=ROOT / "runs" / "curriculum_experiment")
    parser.add_argument("--output", type=Path, help="default: <results>/<testbed>/in_band_by_level.md")
    args = parser.parse_args()
    output = args.output or RESULTS / args.testbed / "in_band_by_level.md"
    output.write_text(build(args.testbed, args.runs_root))
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
