"""Check the premise of the experiment driver's pool sharing on the real simulator: rewrite batches of a stored static
or offline pool draft with another testbed's settings and the current code, and compare the texts.

    python experiments/curriculum/pool_identity.py --draft RUN_DIR --testbed reasoning_gym_expressions_t10 --seed 0 \\
        --batches 0 21 --output results/curriculum/pool_identity.json

Batch ``i`` of a pool draws from the seed's stream ``i`` (``WrittenOnce`` in genenv/curriculum/sources.py), so with
the same simulator settings it must come out the same whatever the curriculum, the pool's size or the agent's
settings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import driver as experiment  # this folder is on sys.path
import numpy as np

from genenv.curriculum.sources import POOL_STREAM
from genenv.machine import uptime
from genenv.train import compose_setup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draft", type=Path, required=True, help="a run folder holding pools/pool_draft.jsonl")
    parser.add_argument("--testbed", required=True, choices=sorted(experiment.TESTBEDS))
    parser.add_argument("--curriculum", default="offline", choices=experiment.POOL_CURRICULA)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--batches", type=int, nargs="+", required=True)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    path = experiment.pool_draft(args.draft)
    stored = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    testbed = experiment.TESTBEDS[args.testbed]
    config, adapter, policy = compose_setup(experiment.run_overrides(testbed, args.curriculum, args.seed))
    simulator = config.simulator.build(policy, config.curriculum.alpha)
    load_start, results = uptime(), []
    for index in args.batches:
        start = time.perf_counter()
        rng = np.random.default_rng([config.seed, POOL_STREAM, index])
        batch = simulator.propose(adapter, rng=rng, success=None)
        records = [record for record in stored if record["epoch"] == index]
        if len(records) != len(batch):
            raise SystemExit(f"{path}: batch {index} holds {len(records)} proposals, the simulator wrote {len(batch)}")
        same = sum(
            p.family == r["family"] and p.messages == r["messages"] and p.raw == r["raw"]
            for p, r in zip(batch, records, strict=True)
        )
        results.append({"batch": index, "proposals": len(batch), "identical": same,
                        "seconds": round(time.perf_counter() - start, 1)})  # fmt: skip
        print(json.dumps(results[-1]), flush=True)
    record = {
        "command": f"python experiments/curriculum/pool_identity.py --draft {args.draft} --testbed {args.testbed} "
        f"--curriculum {args.curriculum} --seed {args.seed} --batches {' '.join(map(str, args.batches))}",
        "draft_settings": (args.draft / ".hydra" / "overrides.yaml").read_text(encoding="utf-8").splitlines(),
        "machine": f"{platform.machine()}, Python {platform.python_version()}, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}",
        "load_start": load_start,
        "load_end": uptime(),
        "batches": results,
        "all_identical": all(r["identical"] == r["proposals"] for r in results),
    }
    args.output.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
