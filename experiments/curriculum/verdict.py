"""The second curriculum test's pre-registered statistics, verdict and figures (``results/<testbed>/README.md``).

- **Primary**: informative groups (a task whose G attempts have mixed outcomes: the only groups with a GRPO
  advantage) per 1,000 agent episodes over epochs 1-4, GenEnv minus Random, paired by seed and epoch; 95% bootstrap
  interval resampling seeds, then epochs within each seed.
- **Secondary**: held-out gain per 1,000 agent episodes on the seed's frontier items (warm-start score in
  [0.2, 0.8], each item scored as the mean of several samples), GenEnv minus Random, paired by seed and item.
- **Mechanism**: the written tasks' mean ``|p - alpha|`` per epoch; over epochs 3-4, GenEnv minus Random.

Every interval is drawn DRAWS times, with each bound's Monte Carlo error beside it; the primary carries the seed-level
tests over its per-seed differences (t-test, exact sign-flip), and the verdict says where they disagree with the
bootstrap about 0.

    python experiments/curriculum/verdict.py reasoning_gym_worked    # writes summary.json and the figures

It reads the runs' metrics copies (``results/<testbed>/runs/*.jsonl``), the gate (``gate-t10.json``) and the
simulator calibration (``calibration/*.jsonl``) of the testbed's results folder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np
from analysis import Run, load_experiment, per_epoch_means  # this folder is on sys.path

from genenv.significance import CHUNK, disagreement, percentile_interval, seed_level

RESULTS = Path(__file__).resolve().parents[2] / "results" / "curriculum"
ALPHA = 0.5
PRIMARY_EPOCHS = (1, 2, 3, 4)
MECHANISM_EPOCHS = (3, 4)
FRONTIER = (0.2, 0.8)
#: informative groups per 1,000 episodes: the goal (+0.10 of the groups at G = 8 without refills) and the largest
#: difference that, with an upper bound below the goal, counts against GenEnv (+0.03 of the groups)
GOAL, AGAINST = 12.5, 3.75
#: the calibration's criterion: GenEnv's share of written tasks with success in [0.25, 0.75] over rounds 3-4 exceeds
#: both other arms' by at least this much, with a smaller mean |p - alpha|
CALIBRATION_MARGIN, CALIBRATION_ROUNDS = 0.10, (3, 4)
OFF_TARGET = (0.25, 0.75)
#: bootstrap draws of every interval (at the 2,000 of analysis.paired_differences the primary's lower bound moved with
#: the bootstrap's seed): the bootstrap means lie on a grid (steps of 0.24 per 1,000 episodes), and the primary's upper
#: bound sits where the distribution crosses 97.5% within 0.0003 of a step; at 2,000,000 draws that crossing is found
#: with a standard error of 0.0001, at 200,000 the bound still moved between +18.6 and +18.8 with the bootstrap's seed
DRAWS = 2_000_000


def epoch_signal(record: dict[str, Any]) -> dict[str, float]:
    """One epoch's groups: how many tasks, how many informative, per 1,000 of its agent episodes, and the tasks'
    mean distance from alpha."""
    p = [float(x) for x in record["p_hat_per_task"]]
    mixed = sum(0 < x < 1 for x in p)
    return {
        "tasks": len(p),
        "informative": mixed,
        "share": mixed / len(p),
        "per_1000": 1000 * mixed / record["agent"]["episodes"],
        "distance": statistics.fmean(abs(x - ALPHA) for x in p),
    }


def _by_seed(runs: list[Run], curriculum: str) -> dict[int, Run]:
    return {r.seed: r for r in runs if r.curriculum == curriculum}


def _epoch_differences(
    runs: list[Run], measure: str, epochs: tuple[int, ...], reference: str, other: str
) -> tuple[list[int], list[np.ndarray]]:
    """Per seed both arms reached an epoch of ``epochs`` in: ``reference - other`` of ``measure`` per such epoch."""
    ours, theirs = _by_seed(runs, reference), _by_seed(runs, other)
    seeds, diffs = [], []
    for seed in sorted(ours.keys() & theirs.keys()):
        a = {m["epoch"]: epoch_signal(m)[measure] for m in ours[seed].metrics if m["epoch"] in epochs}
        b = {m["epoch"]: epoch_signal(m)[measure] for m in theirs[seed].metrics if m["epoch"] in epochs}
        if shared := sorted(a.keys() & b.keys()):
            seeds.append(seed)
            diffs.append(np.array([a[e] - b[e] for e in shared]))
    return seeds, diffs


def two_level_means(diffs: list[np.ndarray], rng: np.random.Generator, draws: int = DRAWS) -> np.ndarray:
    """``draws`` bootstrap means over seeds of paired differences (one array a seed): the seeds resampled, then the
    units (epochs, items) within each picked seed."""
    count = len(diffs)
    means = np.empty(draws)
    for start in range(0, draws, CHUNK):
        size = min(CHUNK, draws - start)
        within = np.stack([d[rng.integers(len(d), size=(size, count, len(d)))].mean(axis=2) for d in diffs])
        picked = rng.integers(count, size=(size, count))  # within[seed, draw, place]: the seed drawn into a place
        means[start : start + size] = within[picked, np.arange(size)[:, None], np.arange(count)].mean(axis=1)
    return means


def paired(diffs: list[np.ndarray], seed: int) -> dict[str, Any]:
    """The mean over seeds of paired differences, its two-level bootstrap interval (:func:`two_level_means`) with
    the bounds' Monte Carlo error, the interval of a bootstrap over seeds alone, and each seed's mean."""
    rng = np.random.default_rng(seed)
    per_seed = np.array([d.mean() for d in diffs])
    interval = percentile_interval(two_level_means(diffs, rng))
    over_seeds = percentile_interval(per_seed[rng.integers(len(per_seed), size=(DRAWS, len(per_seed)))].mean(axis=1))
    return {
        "difference": float(per_seed.mean()),
        **interval,
        "interval_seeds": [over_seeds["low"], over_seeds["high"]],
        "per_seed": [float(x) for x in per_seed],
    }


def primary(runs: list[Run], reference: str = "genenv", other: str = "random", seed: int = 0) -> dict[str, Any] | None:
    """Informative groups per 1,000 episodes over :data:`PRIMARY_EPOCHS`, ``reference - other`` paired by seed and
    epoch, with each arm's mean and the seed-level tests over the per-seed differences; ``complete`` once every
    paired seed has every epoch. ``None`` before any pair."""
    seeds, diffs = _epoch_differences(runs, "per_1000", PRIMARY_EPOCHS, reference, other)
    if not seeds:
        return None
    pair = paired(diffs, seed)
    arms = {
        arm: statistics.fmean(
            epoch_signal(m)["per_1000"] for r in runs if r.curriculum == arm and r.seed in seeds
            for m in r.metrics if m["epoch"] in PRIMARY_EPOCHS
        )
        for arm in (reference, other)
    }  # fmt: skip
    return {
        f"{reference}_minus_{other}": pair["difference"],
        **{k: pair[k] for k in ("low", "high", "low_mc_error", "high_mc_error", "draws", "interval_seeds", "per_seed")},
        "seed_level": seed_level(pair["per_seed"]) if len(seeds) > 1 else None,
        "per_arm": arms,
        "seeds": seeds,
        "complete": all(len(d) == len(PRIMARY_EPOCHS) for d in diffs),
    }


def mechanism(runs: list[Run], reference: str = "genenv", other: str = "random", seed: int = 0) -> dict[str, Any]:
    """The written tasks' mean ``|p - alpha|`` per arm and epoch (mean over seeds), and ``reference - other`` over
    :data:`MECHANISM_EPOCHS` paired by seed and epoch (``None`` before any pair)."""
    means = per_epoch_means(runs, lambda m: epoch_signal(m)["distance"])
    per_epoch = {arm: dict(zip(epochs, values)) for arm, (epochs, values) in means.items()}
    seeds, diffs = _epoch_differences(runs, "distance", MECHANISM_EPOCHS, reference, other)
    late = None
    if seeds:
        pair = paired(diffs, seed)
        late = {k: pair[k] for k in ("difference", "low", "high", "low_mc_error", "high_mc_error")}
    return {"distance_per_epoch": per_epoch, f"{reference}_minus_{other}_epochs_3_4": late}


def secondary(
    runs: list[Run], reference: str = "genenv", other: str = "random", seed: int = 0
) -> dict[str, Any] | None:
    """Held-out gain per 1,000 agent episodes on each seed's frontier items (warm-start score in :data:`FRONTIER`),
    from the warm start to the last scored epoch both arms reached, ``reference - other`` paired by seed and item,
    with each arm's own gain. The runs of a seed must share their warm start (the same warm-start scores)."""
    ours, theirs = _by_seed(runs, reference), _by_seed(runs, other)
    seeds, diffs, gains = [], [], {reference: [], other: []}
    for s in sorted(ours.keys() & theirs.keys()):
        staged = {arm: dict(run.stages()) for arm, run in ((reference, ours[s]), (other, theirs[s]))}
        warm = staged[reference].get("warm start")
        if warm is None or staged[other].get("warm start") != warm:
            raise ValueError(f"seed {s}: {reference} and {other} do not share their warm start's held-out scores")
        last = [st for st in staged[reference] if st.startswith("epoch ") and st in staged[other]]
        if not last:
            continue
        frontier = [i for i, x in enumerate(warm) if FRONTIER[0] <= x <= FRONTIER[1]]
        per_item = {}
        for arm, run in ((reference, ours[s]), (other, theirs[s])):
            episodes = sum(m["agent"]["episodes"] for m in run.metrics if m["epoch"] <= int(last[-1].split()[1]))
            final = staged[arm][last[-1]]
            per_item[arm] = np.array([(final[i] - warm[i]) * 1000 / episodes for i in frontier])
            gains[arm].append(float(per_item[arm].mean()) if frontier else 0.0)
        seeds.append(s)
        diffs.append(per_item[reference] - per_item[other])
    if not seeds or not all(len(d) for d in diffs):
        return None
    pair = paired(diffs, seed)
    return {
        f"{reference}_minus_{other}": pair["difference"],
        **{k: pair[k] for k in ("low", "high", "low_mc_error", "high_mc_error")},
        "gain_per_1000_episodes": {arm: statistics.fmean(g) for arm, g in gains.items()},
        "frontier_items_per_seed": [len(d) for d in diffs],
        "seeds": seeds,
    }


def calibration(folder: Path) -> dict[str, Any]:
    """The simulator calibration's rounds per arm and seed, gate (c) from ``random``'s round 0, and whether RWR moved
    the simulator by the written criterion, for the library's RWR settings (``genenv-s0``) and each variant of them
    (``genenv-s0-<change>``): ``None`` until it and both other arms of seed 0 have rounds 3 and 4."""
    arms: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("*-s*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        arms[path.stem] = [
            {k: r[k] for k in ("round", "success", "share_graded", "mean_distance", "levels")} for r in rows
        ]
    off_target = None
    if first := arms.get("random-s0"):
        off_target = not OFF_TARGET[0] < first[0]["success"] < OFF_TARGET[1]

    def late(name: str, key: str) -> float | None:
        rows = [r[key] for r in arms.get(name, []) if r["round"] in CALIBRATION_ROUNDS]
        return statistics.fmean(rows) if len(rows) == len(CALIBRATION_ROUNDS) else None

    others = ("random-s0", "conditioned-s0")
    genenv = sorted(name for name in arms if name == "genenv-s0" or name.startswith("genenv-s0-"))
    share = {name: late(name, "share_graded") for name in (*others, *genenv)}
    distance = {name: late(name, "mean_distance") for name in (*others, *genenv)}

    def moved(name: str) -> bool | None:
        if None in [share[n] for n in (name, *others)] + [distance[n] for n in (name, *others)]:
            return None
        return all(share[name] - share[o] >= CALIBRATION_MARGIN and distance[name] < distance[o] for o in others)

    return {
        "rounds": arms,
        "c_off_target": off_target,
        "rounds_3_4": {"share_graded": share, "mean_distance": distance},
        "rwr_moves_simulator": {name: moved(name) for name in genenv},
    }


def verdict(gate_passed: bool | None, first: dict[str, Any] | None, mech: dict[str, Any]) -> str:
    """The pre-registered verdict in plain words, with the clause that says where the seed-level t-test over the
    primary's per-seed differences disagrees with its bootstrap interval about 0."""
    if gate_passed is False:
        return "gate failed: the testbed cannot tell GenEnv from Random; no verdict on GenEnv"
    if first is None or not first["complete"]:
        return "not yet decided: the arms have not reached epoch 4 on every paired seed"
    d, low, high = first["genenv_minus_random"], first["low"], first["high"]
    late = mech["genenv_minus_random_epochs_3_4"]
    closer = late is not None and late["high"] < 0
    if low > 0 and d >= GOAL:
        decided = "GenEnv gives GRPO more informative groups per episode than Random, at the goal (+0.10 of the groups)"
    elif low > 0:
        decided = "GenEnv gives GRPO more informative groups per episode than Random, short of the goal"
    elif d <= AGAINST and high < GOAL and not closer:
        decided = "against GenEnv: no more informative groups per episode than Random, and its tasks no closer to alpha"
    else:
        decided = "inconclusive at this budget: the interval admits both no difference and the goal"
    seeds = first.get("seed_level")
    return decided + (disagreement(low > 0 or high < 0, seeds) if seeds else "")


def summarise(folder: Path, runs: list[Run]) -> dict[str, Any]:
    """``summary.json``'s content for the testbed's results ``folder`` and its ``runs``: gate, calibration, the arms,
    the three measures and the verdict."""
    gate_file = folder / "gate-t10.json"
    gate = json.loads(gate_file.read_text())["rows"][0] if gate_file.exists() else {}
    cal = calibration(folder / "calibration")
    checks = [gate.get("a_graded_success", {}).get("passed"), gate.get("b_ladder", {}).get("passed")]
    checks.append(cal["c_off_target"])
    passed = False if False in checks else (True if None not in checks else None)
    first, mech = primary(runs), mechanism(runs)
    return {
        "gate": {"a": checks[0], "b": checks[1], "c": checks[2], "passed": passed},
        "calibration": cal,
        "seeds": sorted({r.seed for r in runs}),
        "arms": sorted({r.curriculum for r in runs}),
        "primary": first,
        "secondary": secondary(runs),
        "mechanism": mech,
        "verdict": verdict(passed, first, mech),
    }


def plot(runs: list[Run], folder: Path) -> list[Path]:
    """Informative-group share and the written tasks' success per epoch per arm, and the held-out curves."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from genenv.plot import save_figure

    figures = []
    for name, read, title in (
        ("informative_share.png", lambda m: epoch_signal(m)["share"], "tasks with mixed outcomes (informative groups)"),
        (
            "written_success.png",
            lambda m: statistics.fmean(m["p_hat_per_task"]),
            "written tasks' success (alpha dashed)",
        ),
    ):
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for arm, (epochs, values) in per_epoch_means(runs, read).items():
            ax.plot(epochs, values, marker="o", label=arm)
        if name == "written_success.png":
            ax.axhline(ALPHA, linestyle="--", color="gray")
        ax.set(xlabel="epoch", ylabel="mean over seeds", title=title)
        ax.legend()
        figures.append(save_figure(fig, folder / name))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for arm in sorted({r.curriculum for r in runs}):
        stages: dict[str, list[float]] = {}
        for r in runs:
            if r.curriculum == arm:
                for stage, scores in r.stages():
                    stages.setdefault(stage, []).append(statistics.fmean(scores))
        ax.plot(list(stages), [statistics.fmean(v) for v in stages.values()], marker="o", label=arm)
    ax.set(xlabel="stage", ylabel="held-out score (mean over seeds)", title="held-out")
    ax.legend()
    figures.append(save_figure(fig, folder / "held_out.png"))
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("testbed")
    parser.add_argument("--results-root", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    folder = args.results_root / args.testbed
    runs = load_experiment((folder / "runs").glob("*.jsonl")) if (folder / "runs").exists() else []
    summary = summarise(folder, runs)
    (folder / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    if runs:
        plot(runs, folder)
    print(json.dumps({k: summary[k] for k in ("gate", "primary", "secondary", "verdict")}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
