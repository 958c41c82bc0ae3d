"""How finely does a family key (family@level) set a task's difficulty for the agent?

For each run folder, from its on-policy traces (``pools/traces.jsonl``, epochs after the first): the share of
played tasks inside the band (some but not all of their G attempts solved), and the same among the tasks whose key
the agent half-solved in that epoch (its mean success over the epoch's tasks of that key within ``--middle``), with
the shares of those tasks that none and that all attempts solved. A curriculum that aims keys at alpha only produces
in-band tasks as far as a half-solved key holds them.

    RUNS=$GENENV_STATE_DIR/curriculum_experiment/runs  # the experiment's run folders
    python experiments/curriculum/task_spread.py $RUNS/reasoning_gym_expressions_t10/{genenv,random}-s{0,1}
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np


def played_after_epoch_0(run_dir: Path) -> dict[tuple[int, str], tuple[dict[str, Any], str, list[float]]]:
    """(epoch, task id) -> (the task, its family key, its attempts' rewards) of every task the agent played after
    epoch 0 (on-policy traces), in order."""
    traces = run_dir / "pools" / "traces.jsonl"
    if not traces.is_file():
        raise SystemExit(f"{run_dir} is not a run folder: it has no {traces.relative_to(run_dir)}")
    played: dict[tuple[int, str], tuple[dict[str, Any], str, list[float]]] = {}
    for line in traces.read_text(encoding="utf-8").splitlines():
        trace = json.loads(line)
        if trace.get("source") == "on_policy" and trace["epoch"] > 0:
            task = trace["task"]
            _, _, rewards = played.setdefault((trace["epoch"], task["task_id"]), (task, trace["family"], []))
            rewards.append(float(trace["reward"]))
    return dict(sorted(played.items()))


def task_success(run_dir: Path) -> list[tuple[int, str, float]]:
    """(epoch, family key, success over its attempts) of every task the agent played after epoch 0."""
    return [(epoch, key, float(np.mean(r))) for (epoch, _), (_, key, r) in played_after_epoch_0(run_dir).items()]


def spread(run_dir: Path, middle: tuple[float, float]) -> dict[str, float | int]:
    tasks = task_success(run_dir)
    if not tasks:
        raise SystemExit(f"{run_dir}: no on-policy traces after epoch 0")
    by_key: dict[tuple[int, str], list[float]] = defaultdict(list)
    for epoch, key, success in tasks:
        by_key[epoch, key].append(success)
    half = [s for epoch, key, s in tasks if middle[0] <= np.mean(by_key[epoch, key]) <= middle[1]]
    return {
        "tasks": len(tasks),
        "in_band": float(np.mean([0 < s < 1 for s in (t[2] for t in tasks)])),
        "half_solved_key_tasks": len(half),
        "in_band_of_those": float(np.mean([0 < s < 1 for s in half])) if half else float("nan"),
        "none_of_those": float(np.mean([s == 0 for s in half])) if half else float("nan"),
        "all_of_those": float(np.mean([s == 1 for s in half])) if half else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", type=Path, nargs="+")
    parser.add_argument("--middle", type=float, nargs=2, default=(0.3, 0.7), help="a half-solved key's success range")
    args = parser.parse_args()
    low, high = args.middle
    print(f"| run | tasks (epochs after the first) | in the band | tasks of keys at {low:g}-{high:g} that epoch | "
          "in the band | solved by none of G | solved by all of G |\n|---|---|---|---|---|---|---|")  # fmt: skip
    for run_dir in args.run_dirs:
        s = spread(run_dir, (low, high))
        print(f"| {run_dir.name} | {s['tasks']} | {s['in_band']:.2f} | {s['half_solved_key_tasks']} | "
              f"{s['in_band_of_those']:.2f} | {s['none_of_those']:.2f} | {s['all_of_those']:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
