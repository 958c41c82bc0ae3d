"""A Markdown table of co-evolution runs, one row per run and epoch, from their ``metrics.jsonl``.

    python experiments/smollm2/curriculum_table.py runs/rg_curriculum/{genenv,random,static}

Columns: p_hat of the epoch's fresh tasks, how many of them lay inside the band, the simulator's examples
and KL after its update, the fresh tasks per level (``name@L`` families) or family, and the held-out score
overall and per group (``score/<group>``).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

from genenv.plot import load_runs, mix_group


def _number(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) and not isinstance(value, bool) else "-"


def table(run_dirs: list[Path]) -> str:
    """The Markdown table of these runs."""
    runs = load_runs(run_dirs)
    groups = sorted({k for _, ms in runs for m in ms for k in (m.get("validation") or {}) if k.startswith("score/")})
    header = ["run", "epoch", "p_hat", "in band", "simulator (examples, KL)", "fresh tasks", "held-out"]
    header += [g.split("/", 1)[1] for g in groups]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, metrics in runs:
        for m in metrics:
            mix = Counter()
            for family, n in (m.get("fresh_per_family") or {}).items():
                mix[mix_group(family)] += n
            simulator = m.get("simulator") or {}
            update = f"{simulator['examples']}, {_number(simulator.get('kl'), 4)}" if simulator.get("examples") else "-"
            validation = m.get("validation") or {}
            row = [
                label.split(" ")[0],
                str(m["epoch"]),
                _number(m.get("p_hat")),
                f"{m.get('in_band', '-')}/{m.get('fresh_tasks', '-')}",
                update,
                ", ".join(f"{group}: {n}" for group, n in sorted(mix.items())),
                _number(validation.get("score")),
            ]
            row += [_number(validation.get(g)) for g in groups]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders holding metrics.jsonl")
    print(table(parser.parse_args().runs))


if __name__ == "__main__":
    main()
