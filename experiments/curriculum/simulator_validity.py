"""How many of the untrained simulator's proposals pass the adapter's validation, and why the others fail.

    GENENV_DATA_DIR=../shared/data python experiments/curriculum/simulator_validity.py --output FILE [--batches 12] \\
        +bench=apibank model=qwen05 [overrides ...]

Composes ``genenv/configs/config.yaml`` as ``python -m genenv.train`` does and builds the simulator the trainer builds
(its
model, batch size, sampling, constrained decoding). It then asks for ``--batches`` batches of proposals as an epoch 0
does (families drawn uniformly, no success history yet) from a fixed seed, so two versions of the code can be compared
on the same draws. Writes the valid share with a 95% Wilson interval, the reject reasons, the seconds and every raw
output.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time
from collections import Counter
from pathlib import Path

import numpy as np

from genenv.machine import uptime
from genenv.train import compose_setup


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion ``k / n``."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    config, adapter, policy = compose_setup(args.overrides)
    simulator = config.simulator(policy)
    load_start = uptime()
    rng = np.random.default_rng(args.seed)
    proposals, start = [], time.perf_counter()
    for _ in range(args.batches):
        proposals.extend(simulator.propose(adapter, rng=rng, success=None))
    seconds = time.perf_counter() - start
    valid = sum(p.task is not None for p in proposals)
    reasons = Counter(p.reject_reason.split(": no agent")[0] for p in proposals if p.task is None)
    record = {
        "command": "python experiments/curriculum/simulator_validity.py "
        + " ".join([f"--batches {args.batches}", f"--seed {args.seed}", *args.overrides]),
        "machine": f"{platform.machine()}, Python {platform.python_version()}, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}",
        "load_start": load_start,
        "load_end": uptime(),
        "proposals": len(proposals),
        "valid": valid,
        "valid_share": valid / len(proposals),
        "valid_share_ci95": wilson(valid, len(proposals)),
        "seconds": seconds,
        "reject_reasons": dict(reasons.most_common()),
        "outputs": [
            {"family": p.family, "raw": p.raw, "valid": p.task is not None, "reject_reason": p.reject_reason}
            for p in proposals
        ],
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1) + "\n")
    low, high = record["valid_share_ci95"]
    print(f"{valid}/{len(proposals)} valid ({valid / len(proposals):.2f} [{low:.2f}, {high:.2f}]) in {seconds:.0f} s")
    for reason, count in reasons.most_common(8):
        print(f"  {count:3d}  {reason[:110]}")


if __name__ == "__main__":
    main()
