"""Does the simulator's choice follow the agent? Reads the simulator pools (D_env) of finished or running runs.

    python experiments/curriculum/simulator_response.py RUN_DIR [RUN_DIR ...] [--output FILE.md]

Each record of ``RUN_DIR/pools/tasks.jsonl`` (and of a static or offline pool's ``pool_draft.jsonl``) holds the
family key the simulator was asked for, the prompt it saw and the task it wrote. For every run this counts, per epoch
and per instruction of the prompt ("write a harder / easier / similar task", or no history yet), how often the written
task's family key (``adapter.family``) is the requested one and, for keys that end in a level (``name@L``, as
reasoning-gym's do), the mean level written minus the level requested. A simulator that follows the agent writes
higher levels when told "harder" than when told "easier"; one that copies the request writes offset 0 whatever it is
told, and then the level mix is the trainer's uniform draw of keys, not a curriculum. The same counts per requested
level and instruction compare instructions where the simulator may move the same ways (asked for the lowest level, it
can only stay or go up, whatever it is told), and with a run whose simulator is shown no history (``none``), such as
a random curriculum's. A second table per run gives, per level of the tasks the agent trained on
(``pools/traces.jsonl``), how the attempts at a task came out: only tasks whose attempts disagree carry a GRPO
advantage, so it bounds what choosing the level can gain. A third table gives, per family key the agent played, what
the simulator's update pays for writing it: the mean RWR weight ``exp(lambda R_env)`` of its tasks (0 outside the
band, as the update leaves them out), over ``exp(lambda)`` (a task at ``p_hat = alpha`` pays 1), with a 95% bootstrap
interval over tasks, and the same for the proposals written at the requested key against those written at another;
``alpha``, ``beta``, ``k`` and ``lambda`` are the run's (``.hydra/config.yaml``), and ``--lam`` adds columns for other
lambdas. RWR can only teach the simulator to prefer a key that pays more than the one it writes now.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from genenv.benchmarks.base import Task, get_benchmark
from genenv.curriculum import DifficultyFilter, alpha_reward, rwr_weight

INSTRUCTION = re.compile(r"Write an? (harder|easier|similar) task|has not seen tasks of this kind")
POOL_FILES = ("tasks.jsonl", "pool_draft.jsonl")


def instruction(messages: list[dict[str, Any]]) -> str:
    """The difficulty instruction the simulator's prompt ended with: harder, easier, similar or none."""
    found = INSTRUCTION.search(messages[-1]["content"])
    if found is None:
        raise ValueError("no difficulty instruction in the prompt's last message")
    return found.group(1) or "none"


def level(key: str) -> int | None:
    """The level of a ``name@L`` family key, else None."""
    _, at, tail = key.rpartition("@")
    return int(tail) if at and tail.isdigit() else None


def proposals(run_dir: Path) -> list[dict[str, Any]]:
    """The simulator's valid proposals of a run, from its task pool (or, for a pool written up front, its draft)."""
    for name in POOL_FILES:
        path = run_dir / "pools" / name
        if path.exists():
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            return [row for row in rows if row.get("task") and row.get("messages")]
    raise FileNotFoundError(f"{run_dir} has none of pools/{' or pools/'.join(POOL_FILES)}")


def summarise(rows: list[tuple[str, str, str]]) -> dict[str, Any]:
    """n, the share written at the requested key and the level offsets of (requested, written, instruction) rows."""
    offsets = [level(w) - level(r) for r, w, _ in rows if level(r) is not None and level(w) is not None]
    return {
        "n": len(rows),
        "at_request": sum(r == w for r, w, _ in rows) / len(rows),
        "mean_offset": sum(offsets) / len(offsets) if offsets else None,
        "offsets": dict(sorted(Counter(offsets).items())),
    }


def response(run_dir: Path, data_dir: str | None = None) -> dict[str, Any]:
    """Per instruction, per epoch and per requested level and instruction: how the written family key relates to the
    requested one."""
    records = proposals(run_dir)
    adapter = get_benchmark(records[0]["task"]["benchmark"], data_dir=data_dir)
    rows = defaultdict(list)
    for record in records:
        written = adapter.family(Task(**record["task"]))
        told = instruction(record["messages"])
        row = (record["family"], written, told)
        rows[("instruction", told)].append(row)
        rows[("epoch", record["epoch"])].append(row)
        requested = level(record["family"])
        if requested is not None:
            rows[("requested level", f"{requested}, {told}")].append(row)
    return {f"{kind} {value}": summarise(group) for (kind, value), group in sorted(rows.items(), key=str)}


def has_traces(run_dir: Path) -> bool:
    return (run_dir / "pools" / "traces.jsonl").exists()


def played(run_dir: Path) -> dict[tuple[int, str], tuple[str, float]]:
    """(epoch, task id) -> (family key, p_hat) of every task the agent played on policy."""
    attempts = defaultdict(list)
    for line in (run_dir / "pools" / "traces.jsonl").read_text(encoding="utf-8").splitlines():
        trace = json.loads(line)
        if trace.get("source") == "on_policy":
            attempts[(trace["epoch"], trace["task"]["task_id"], trace["family"])].append(float(trace["reward"]))
    return {(epoch, task_id): (key, sum(r) / len(r)) for (epoch, task_id, key), r in attempts.items()}


def outcomes(tasks: dict[tuple[int, str], tuple[str, float]]) -> dict[str, dict[str, float]]:
    """Per level of the tasks trained on (``name@L`` keys; ``tasks`` from :func:`played`): tasks, mean p_hat and the
    shares of tasks whose attempts were all wrong (p_hat 0), all right (1) or disagreed (0 < p_hat < 1: the only ones
    with a GRPO advantage)."""
    by_level = defaultdict(list)
    for key, p_hat in tasks.values():
        by_level[level(key)].append(p_hat)
    return {
        f"level {lv}": {
            "tasks": len(p),
            "mean_p_hat": sum(p) / len(p),
            "p_hat_0": sum(x == 0 for x in p) / len(p),
            "p_hat_1": sum(x == 1 for x in p) / len(p),
            "disagree": sum(0 < x < 1 for x in p) / len(p),
        }
        for lv, p in sorted(by_level.items(), key=str)
    }


def curriculum_settings(run_dir: Path) -> dict[str, float]:
    """The run's alpha, beta, band half-width k and RWR lambda, from its Hydra config (a run of a genenv whose
    settings were all under ``coevolution`` is read there)."""
    cfg = OmegaConf.load(run_dir / ".hydra" / "config.yaml")
    aim = cfg.curriculum if "alpha" in cfg.get("curriculum", {}) else cfg.coevolution
    return {"alpha": aim.alpha, "beta": aim.beta, "k": aim.band_k, "lam": aim.lam}


def price(
    p_hats: list[float], settings: dict[str, float], lams: tuple[float, ...], rng: np.random.Generator, resamples: int
) -> dict[str, Any]:
    """Tasks, the share in the band, and per lambda (the run's first, then ``lams``) the mean relative RWR weight
    ``exp(lambda (R_env - 1))`` of the tasks (0 outside the band) with a 95% bootstrap interval over tasks."""
    band = DifficultyFilter(settings["alpha"], settings["k"])  # the trainer's own band, reward and weight
    in_band = np.array([band(p) for p in p_hats])
    r_env = [alpha_reward(p, settings["alpha"], settings["beta"]) for p in p_hats]
    row: dict[str, Any] = {"tasks": len(p_hats), "in_band": float(in_band.mean()), "pay": {}}
    for lam in (settings["lam"], *lams):
        at_alpha = rwr_weight(1.0, lam)
        paid = np.where(in_band, [rwr_weight(r, lam) / at_alpha for r in r_env], 0.0)
        means = paid[rng.integers(0, len(p_hats), size=(resamples, len(p_hats)))].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        row["pay"][float(lam)] = (float(paid.mean()), float(low), float(high))
    return row


def pay(
    run_dir: Path,
    tasks: dict[tuple[int, str], tuple[str, float]],
    lams: tuple[float, ...] = (),
    resamples: int = 2000,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """What the simulator's update pays (:func:`price`) for the run's played ``tasks`` (:func:`played`) per family key
    and, where the run has a task pool, for the proposals written at the requested key against those written at
    another."""
    settings = curriculum_settings(run_dir)
    rng = np.random.default_rng(seed)
    groups: dict[str, list[float]] = defaultdict(list)
    for key, p_hat in sorted(tasks.values(), key=lambda kp: (kp[0].rpartition("@")[0], level(kp[0]) or 0, kp[0])):
        groups[key].append(p_hat)
    if (run_dir / "pools" / "tasks.jsonl").exists():
        for record in proposals(run_dir):
            key, p_hat = tasks.get((record["epoch"], record["task"]["task_id"]), (None, None))
            if key is not None:
                groups["at the requested key" if key == record["family"] else "at another key"].append(p_hat)
    return {group: price(p_hats, settings, tuple(lams), rng, resamples) for group, p_hats in groups.items()}


def pay_table(paid: dict[str, dict[str, Any]]) -> str:
    lams = list(next(iter(paid.values()))["pay"])
    lines = ["| tasks played | n | in band | " + " | ".join(f"pay, lambda {lam:g}" for lam in lams) + " |"]
    lines.append("|---" * (3 + len(lams)) + "|")
    for key, row in paid.items():
        cells = [f"{m:.2f} [{lo:.2f}, {hi:.2f}]" for m, lo, hi in row["pay"].values()]
        lines.append(f"| {key} | {row['tasks']} | {row['in_band']:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def table(name: str, result: dict[str, Any], trained: dict[str, dict[str, float]] | None = None) -> str:
    lines = [f"### {name}", "", "| proposals | n | at the requested key | mean level offset | level offsets |"]
    lines.append("|---|---|---|---|---|")
    for group, s in result.items():
        offset = "" if s["mean_offset"] is None else f"{s['mean_offset']:+.3f}"
        counts = ", ".join(f"{k:+d}: {v}" for k, v in s["offsets"].items())
        lines.append(f"| {group} | {s['n']} | {s['at_request']:.3f} | {offset} | {counts} |")
    if trained:
        lines += ["", "| tasks trained on | n | mean p_hat | p_hat 0 | p_hat 1 | 0 < p_hat < 1 |", "|---" * 6 + "|"]
        for group, o in trained.items():
            lines.append(
                f"| {group} | {o['tasks']} | {o['mean_p_hat']:.2f} | {o['p_hat_0']:.2f} | {o['p_hat_1']:.2f} | "
                f"{o['disagree']:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dirs", nargs="+", type=Path)
    parser.add_argument("--data-dir", default=None, help="the benchmark data folder (default: GENENV_DATA_DIR)")
    parser.add_argument("--output", type=Path, help="write the tables as markdown here too")
    parser.add_argument("--lam", type=float, nargs="*", default=[], help="other RWR lambdas to price the keys at")
    args = parser.parse_args()
    command = "python experiments/curriculum/simulator_response.py " + " ".join(map(str, args.run_dirs))
    if args.lam:
        command += " --lam " + " ".join(f"{lam:g}" for lam in args.lam)
    tables = []
    for run_dir in args.run_dirs:
        tasks = played(run_dir) if has_traces(run_dir) else None
        tables.append(table(run_dir.name, response(run_dir, args.data_dir), outcomes(tasks) if tasks else None))
        if tasks and (run_dir / ".hydra" / "config.yaml").exists():
            tables.append(pay_table(pay(run_dir, tasks, tuple(args.lam))))
    text = "\n".join([f"Written by `{command}`.\n", *tables])
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
