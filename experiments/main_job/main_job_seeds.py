"""The main job (README command 1) over several seeds: does its rise over the warm start hold beyond one run?

One run of the main job prints the rise from the warm start to the last epoch with a paired bootstrap interval over
its 72 held-out tasks, but that interval holds the tasks fixed, not the run's random draws (the warm start's order,
the simulator's writing, GRPO's sampling), and the job's verdict has changed with them. This script plays the same job
with other seeds and reads the rise seed by seed, with the t-interval over seeds; the criteria are in
``results/learning_curves/main_job/seeds/README.md``, written before its runs.

    python experiments/main_job/main_job_seeds.py run --seeds 0 1 2 3 4   # each seed's job, in turn (2 threads)
    python experiments/main_job/main_job_seeds.py summary                  # seeds.json, from the finished seeds

A seed whose metrics are already in the results folder is not played again; a killed job is played again from its
start (it takes about 5 minutes). Run folders go to ``$GENENV_STATE_DIR/main_job_seeds/`` (run state, not results).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from genenv.learning_curve import held_out_curve, paired_rise
from genenv.run_archive import state_dir
from genenv.significance import seed_level

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "results" / "learning_curves" / "main_job" / "seeds"
#: README command 1's job, whose data directory and seed the runs below set.
JOB = ["-m", "genenv.train", "+bench=reasoning_gym"]
EPOCHS = 2


def metrics_path(seed: int) -> Path:
    return RESULTS / f"seed-{seed}.jsonl"


def run(args: argparse.Namespace) -> None:
    """Play the job of every seed in ``--seeds`` that has no metrics in the results folder yet."""
    for seed in args.seeds:
        if metrics_path(seed).exists():
            print(f"seed {seed}: finished already ({metrics_path(seed).relative_to(REPO)})")
            continue
        run_dir = state_dir() / "main_job_seeds" / f"seed-{seed}"
        shutil.rmtree(run_dir, ignore_errors=True)  # a killed job's partial run: played again from its start
        command = [sys.executable, *JOB, f"coevolution.seed={seed}", f"run_dir={run_dir}"]
        print(f"seed {seed}: {' '.join(command[1:])}", flush=True)
        subprocess.run(command, check=True, cwd=REPO, env=os.environ | {"OMP_NUM_THREADS": str(args.threads)})
        records = (run_dir / "metrics.jsonl").read_text().splitlines()
        if len({json.loads(line)["epoch"] for line in records}) != EPOCHS:
            raise SystemExit(f"seed {seed}: {run_dir}/metrics.jsonl holds {len(records)} records, not {EPOCHS} epochs")
        RESULTS.mkdir(parents=True, exist_ok=True)
        metrics_path(seed).write_text("\n".join(records) + "\n")


def seed_rises(seed: int) -> dict[str, Any]:
    """One seed's curve and its rises over the warm start and over the start, each with its paired interval."""
    metrics = [json.loads(line) for line in metrics_path(seed).read_text().splitlines()]
    points = {p.stage: p for p in held_out_curve(metrics)}
    last = points[f"epoch {EPOCHS - 1}"]
    out: dict[str, Any] = {"curve": {stage: p.score for stage, p in points.items()}}
    for name, first in (("over_warm_start", points["warm start"]), ("over_start", points["start"])):
        rise, low, high = paired_rise(first, last)
        out[name] = {"rise": rise, "low": low, "high": high, "above_noise": low > 0}
    return out


def verdict(tests: dict[str, Any], mean: float) -> str:
    """The README's rule: the t-interval over seeds of the rise over the warm start, against 0."""
    low, high = tests["t_interval"]
    interval = f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"
    if low > 0:
        return f"a rise over the warm start across seeds: {interval}"
    if high < 0:
        return f"a fall below the warm start across seeds: {interval}"
    return f"null: the interval over seeds of the rise over the warm start contains 0 ({interval})"


def summary(args: argparse.Namespace) -> None:
    """``seeds.json``: every finished seed's rises, and the rise over the warm start across them with its verdict."""
    seeds = sorted(int(p.stem.split("-")[1]) for p in RESULTS.glob("seed-*.jsonl"))
    if len(seeds) < 2:
        raise SystemExit(f"{len(seeds)} finished seeds in {RESULTS.relative_to(REPO)}; a summary needs at least 2")
    per_seed = {str(s): seed_rises(s) for s in seeds}
    rises = [per_seed[str(s)]["over_warm_start"]["rise"] for s in seeds]
    tests, mean = seed_level(rises), statistics.fmean(rises)
    result = {
        "seeds": seeds,
        "per_seed": per_seed,
        "over_warm_start": {
            "mean": mean,
            "low": tests["t_interval"][0],
            "high": tests["t_interval"][1],
            "seed_level": tests,
            "seeds_above_noise": sum(per_seed[str(s)]["over_warm_start"]["above_noise"] for s in seeds),
        },
        "verdict": verdict(tests, mean),
    }
    (RESULTS / "seeds.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: result[k] for k in ("seeds", "verdict")}, indent=1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    play = commands.add_parser("run", help="play the main job of each seed not finished yet")
    play.add_argument("--seeds", type=int, nargs="+", required=True)
    play.add_argument("--threads", type=int, default=2, help="OMP_NUM_THREADS of each job")
    commands.add_parser("summary", help="seeds.json from the finished seeds")
    args = parser.parse_args(argv)
    {"run": run, "summary": summary}[args.command](args)


if __name__ == "__main__":
    main()
