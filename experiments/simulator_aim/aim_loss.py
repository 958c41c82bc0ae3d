"""Where the simulator's aim is lost: its informative share split into the keys it wrote for and how informative its
tasks were within each key, against the benchmark's own tasks.

Reads the committed frozen-agent calibration of ``results/curriculum/reasoning_gym_worked/calibration`` (SmolLM2
agent and simulator, the simulator choosing the level) and the gate's per-key mixed-group rates on the benchmark's
tasks (``results/agent_learning/group_signal/smollm2-worked-s0-gate-l0-4-t10.json``: 20 tasks a key, G = 8, the same
agent at T = 1.0). For each arm and the rounds read, with ``m_k`` the share of its tasks at key ``k``, ``w_k`` their
informative share and ``g_k`` the gate's:

- ``informative_share`` = sum m_k w_k, what the arm reached;
- ``allocation_only`` = sum m_k g_k, what its key mix would reach with the benchmark's own tasks;
- ``uniform`` = the mean of g_k, every key alike (Random over the benchmark's tasks);
- ``proportional`` = sum g_k^2 / sum g_k, keys drawn in proportion to g_k (what aimed requests approach);
- ``best_key`` = max g_k.

So ``allocation_only - uniform`` is what the arm's choice of keys gained and ``informative_share - allocation_only``
what writing within the keys gained or lost.

    python experiments/simulator_aim/aim_loss.py --output results/simulator_aim/reasoning_gym/aim_loss.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CALIBRATION = ROOT / "results" / "curriculum" / "reasoning_gym_worked" / "calibration"
GATE = ROOT / "results" / "agent_learning" / "group_signal" / "smollm2-worked-s0-gate-l0-4-t10.json"


def gate_rates(path: Path = GATE) -> dict[str, float]:
    """The gate's mixed-group rate per key."""
    row = json.loads(path.read_text())["rows"][0]
    return {key: float(values["mixed_groups"]) for key, values in row["per_key"].items()}


def decompose(records: list[dict[str, Any]], gate: dict[str, float]) -> dict[str, Any]:
    """The split of the module's docstring over ``records`` (rounds of one arm)."""
    keys = [k for r in records for k in r["keys"]]
    informative = [0 < p < 1 for r in records for p in r["p_per_task"]]
    mix = Counter(keys)
    hits: dict[str, list[bool]] = defaultdict(list)
    for key, hit in zip(keys, informative, strict=True):
        hits[key].append(hit)
    n = len(keys)
    return {
        "tasks": n,
        "informative_share": statistics.fmean(informative),
        "allocation_only": sum(count / n * gate[key] for key, count in mix.items()),
        "key_mix": {key: mix[key] / n for key in sorted(gate)},
        "within_key_share": {key: statistics.fmean(hits[key]) for key in sorted(hits)},
    }


def aim_loss(rounds: list[int]) -> dict[str, Any]:
    gate = gate_rates()
    rates = list(gate.values())
    arms = {}
    for path in sorted(CALIBRATION.glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        chosen = [r for r in records if r["round"] in rounds]
        if len(chosen) == len(rounds):
            arms[path.stem] = decompose(chosen, gate)
    return {
        "rounds": rounds,
        "gate": str(GATE.relative_to(ROOT)),
        "uniform": statistics.fmean(rates),
        "proportional": sum(r * r for r in rates) / sum(rates),
        "best_key": max(rates),
        "gate_rates": gate,
        "arms": arms,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, nargs="+", default=[3, 4])
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    result = aim_loss(args.rounds)
    text = json.dumps(result, indent=1) + "\n"
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text)
    for arm, values in result["arms"].items():
        print(f"{arm}: {values['informative_share']:.3f} reached, {values['allocation_only']:.3f} from its keys alone")
    print(f"uniform {result['uniform']:.3f}, proportional {result['proportional']:.3f}, best key {result['best_key']}")


if __name__ == "__main__":
    sys.exit(main())
