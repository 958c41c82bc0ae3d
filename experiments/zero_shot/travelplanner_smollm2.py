"""TravelPlanner train (45 queries, sole-planning) with an offline model (the embedded SmolLM2 by default).

    GENENV_DATA_DIR=../shared/data python experiments/zero_shot/travelplanner_smollm2.py [--model qwen05] \\
        [--reference-rows 5]
    python experiments/zero_shot/travelplanner_smollm2.py --results runs/evaluate/<run>/results.json --wall-time 1h02m

Runs ``python -m genenv.evaluate +bench=travelplanner`` (reference information cut to the first
``--reference-rows`` rows per section, greedy decoding) into ``runs/evaluate/travelplanner-<split>-<model>``, and
writes the metrics, per-family scores, the failure reasons and a few example answers to
``results/zero_shot/travelplanner_<model>.json``; ``--results`` summarises an existing run instead.
Killed, the same command continues the evaluation from the queries it finished (``genenv.evaluate``'s journal); the
wall time recorded is that of the last invocation, with the number of queries it played.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from genenv.evaluate import JOURNAL
from genenv.machine import peak_rss_mb

RESULTS = Path(__file__).resolve().parents[2] / "results" / "zero_shot"
MODELS = {"smollm2": "embedded SmolLM2-135M-Instruct", "qwen05": "Qwen2.5-Coder-0.5B-Instruct"}


def summarise(results: dict, command: str, wall_time: str) -> dict:
    episodes = results["episodes"]
    errors = Counter((e["breakdown"].get("error") or "").split(":", 1)[0] or "delivered" for e in episodes)
    failures = Counter(name for e in episodes for name in e["breakdown"].get("failures", {}))
    return {
        "command": command,
        "what": f"{MODELS.get(results['model'], results['model'])}, sole-planning (reference information in the "
        f"prompt, cut to {results['config']['bench']['options']['max_reference_rows']} rows per section), greedy, "
        f"one answer per query, on the {results['n_tasks']} TravelPlanner {results['split']} queries; official "
        "metrics of evaluation/eval.py",
        "wall_time": wall_time,
        "benchmark": results["benchmark"],
        "split": results["split"],
        "model": results["model"],
        "n_tasks": results["n_tasks"],
        "max_new_tokens": results["config"]["max_new_tokens"],
        "options": results["config"]["bench"]["options"],
        "metrics": results["metrics"],
        "per_family": results["per_family"],
        "answers": dict(errors),
        "failed_constraints": dict(failures),
        "example_answers": [e["actions"][0][:400] for e in episodes[::9]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="model config (smollm2, qwen05)")
    parser.add_argument("--results", type=Path, help="summarise this results.json instead of running")
    parser.add_argument("--wall-time", default="", help="wall time of that run (with --results)")
    parser.add_argument("--reference-rows", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=768)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--split", default="train", help="train: the 45 queries with gold plans; validation: 180")
    parser.add_argument(
        "--output-dir", type=Path, help="evaluation folder (default runs/evaluate/travelplanner-SPLIT-MODEL)"
    )
    args = parser.parse_args()
    overrides = [
        f"split={args.split}",
        *([f"model={args.model}"] if args.model != "smollm2" else []),
        f"bench.options.max_reference_rows={args.reference_rows}",
        f"max_new_tokens={args.max_new_tokens}",
        f"batch_size={args.batch_size}",
    ]
    command = "python -m genenv.evaluate +bench=travelplanner " + " ".join(overrides)
    if args.results is not None:
        results = json.loads(args.results.read_text())
        wall_time = args.wall_time
    else:
        out = args.output_dir or Path("runs/evaluate") / f"travelplanner-{args.split}-{args.model}"
        journal = out / JOURNAL
        earlier = journal.read_bytes().count(b"\n") if journal.exists() else 0  # complete records only
        start = time.perf_counter()
        cmd = [sys.executable, "-m", "genenv.evaluate", "+bench=travelplanner", *overrides, f"output_dir={out}"]
        subprocess.run(cmd, check=True)
        seconds = time.perf_counter() - start
        peak_gb = peak_rss_mb(children=True) / 1024
        results = json.loads((out / "results.json").read_text())
        played = results["n_tasks"] - earlier
        wall_time = f"{seconds / 60:.1f} min for {played} queries ({earlier} played before), peak RSS {peak_gb:.1f} GB"
    summary = summarise(results, "GENENV_DATA_DIR=../shared/data " + command, wall_time)
    path = RESULTS / f"travelplanner_{results['model']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary["metrics"], indent=1))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
