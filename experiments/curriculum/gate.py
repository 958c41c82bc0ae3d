"""The curriculum testbed's gate: criteria (a) and (b) of ``results/<testbed>/README.md``, read from a per-key
measurement of ``experiments/agent_learning/agent_learning.py signal``.

    python experiments/curriculum/gate.py \\
        results/agent_learning/group_signal/smollm2-worked-s0-gate-l0-4.json \\
        --output results/curriculum/reasoning_gym_worked/gate.json

(a) graded success: among the keys whose success lies in [0.1, 0.9], the mean of their within-key ICC(1) is at most
0.5, with at least 3 such keys over at least 2 levels. (b) a ladder: a key with success >= 0.6 and one <= 0.05.
(c), the unconditioned simulator's tasks off target, is measured by the simulator calibration, not here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

GRADED = (0.1, 0.9)
MAX_ICC = 0.5
MIN_KEYS, MIN_LEVELS = 3, 2
LADDER_TOP, LADDER_BOTTOM = 0.6, 0.05


def gate(row: dict[str, Any]) -> dict[str, Any]:
    """Criteria (a) and (b) of one temperature's row (its ``per_key`` statistics)."""
    keys = row["per_key"]
    graded = {k: v for k, v in keys.items() if GRADED[0] <= v["solved"] <= GRADED[1]}
    levels = {k.rsplit("@", 1)[1] for k in graded}
    icc = statistics.fmean(v["within_task_correlation"] for v in graded.values()) if graded else None
    a = icc is not None and icc <= MAX_ICC and len(graded) >= MIN_KEYS and len(levels) >= MIN_LEVELS
    top = max(v["solved"] for v in keys.values())
    bottom = min(v["solved"] for v in keys.values())
    return {
        "temperature": row["temperature"],
        "a_graded_success": {
            "passed": a,
            "mean_within_key_icc": icc,
            "graded_keys": sorted(graded),
            "levels": sorted(levels),
            "pooled_icc": row["within_task_correlation"],
        },
        "b_ladder": {
            "passed": top >= LADDER_TOP and bottom <= LADDER_BOTTOM,
            "highest_success": top,
            "lowest_success": bottom,
        },
        "uniform_mix_success": statistics.fmean(v["solved"] for v in keys.values()),
        "per_key": {k: {"solved": v["solved"], "icc": v["within_task_correlation"]} for k, v in keys.items()},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("signal", type=Path, help="a result file of agent_learning.py signal with per-key statistics")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    measured = json.loads(args.signal.read_text())
    result = {"signal": str(args.signal), "rows": [gate(row) for row in measured["rows"]]}
    text = json.dumps(result, indent=1)
    if args.output:
        args.output.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
