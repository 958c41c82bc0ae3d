"""Curricula x seeds: the statistics and figures of a controlled curriculum experiment.

An experiment is a set of co-evolution runs, one per (curriculum, seed), that score the same held-out tasks at
every stage (``validation.task_scores``: before training, after the warm start, after every epoch). This module
reads their ``metrics.jsonl`` records and reports, with 95% bootstrap intervals:

- the held-out curve of each curriculum (mean over seeds; interval over seeds), and its gain over its own warm start
  (paired by seed and task);
- the final difference GenEnv minus each other curriculum, paired by seed and by task (intervals over seeds, and
  over seeds and tasks together: a two-level bootstrap);
- p_hat per epoch against the alpha band, and the share of epochs after the first whose p_hat lies inside it;
- the share of played tasks whose own p_hat lies inside the band, per curriculum (interval over seeds);
- the level mix of the generated tasks per epoch (curriculum emergence), and whether it follows the agent: the
  alpha-curriculum reward of the tasks' family keys at the success the agent had shown on them (per curriculum, and
  GenEnv minus each other paired by seed); the simulator's KL;
- held-out score against the generated tasks written so far (data efficiency, against ``offline``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from genenv.learning_curve import BOOTSTRAP_SAMPLES, bootstrap_interval  # noqa: E402
from genenv.plot import integer_epoch_ticks, mix_group, save_figure  # noqa: E402

__all__ = [
    "Run", "band_share", "difference", "family_success", "gain_over_warm_start", "held_out_curves",
    "in_band_by_curriculum", "in_band_tasks", "load_experiment", "mix_aim", "mix_aim_by_curriculum",
    "mix_aim_per_epoch", "paired_differences", "per_epoch_means", "plot_experiment", "report",
]  # fmt: skip

REFERENCE = "genenv"
#: the measures of :func:`mix_aim_per_epoch`, and their titles in the report and the figure
AIMS = ("written", "played", "tasks")
AIM_TITLES = ("keys, at their success when written", "keys, at their success that epoch", "tasks, at their own p_hat")


@dataclass(frozen=True)
class Run:
    """One (curriculum, seed) run: its epoch metrics, the last record of each epoch."""

    curriculum: str
    seed: int
    metrics: tuple[dict[str, Any], ...]

    def stages(self) -> list[tuple[str, list[float]]]:
        """(stage, held-out task scores) in order: start, warm start, epoch 0, 1, ...; stages without scores are
        left out."""
        found: list[tuple[str, dict[str, Any]]] = []
        if self.metrics:
            first = self.metrics[0]
            found += [
                ("start", first.get("validation_start") or {}),
                ("warm start", first.get("validation_warm_start") or {}),
            ]
        found += [(f"epoch {m['epoch']}", m.get("validation") or {}) for m in self.metrics]
        return [(stage, [float(s) for s in v["task_scores"]]) for stage, v in found if v.get("task_scores")]


def load_experiment(files: Iterable[Path]) -> list[Run]:
    """Runs from ``metrics.jsonl`` files (or copies of them): curriculum and seed read from the records."""
    runs = []
    for path in sorted(files):
        by_epoch: dict[int, dict[str, Any]] = {}
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                by_epoch[int(record["epoch"])] = record
        if not by_epoch:
            continue
        metrics = tuple(by_epoch[e] for e in sorted(by_epoch))
        seed = metrics[0].get("seed")
        if not isinstance(seed, int):
            raise ValueError(f"{path}: the metrics records carry no 'seed' (written by a genenv before the experiment)")
        runs.append(Run(metrics[0]["curriculum"], seed, metrics))
    return runs


def _quantiles(samples: np.ndarray) -> tuple[float, float]:
    return float(np.quantile(samples, 0.025)), float(np.quantile(samples, 0.975))


def held_out_curves(runs: list[Run], seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """Per curriculum, per stage any of its seeds reached: mean held-out score over the seeds that reached it, its
    interval and how many seeds (fewer at the late stages while some seeds are still running)."""
    rng = np.random.default_rng(seed)
    curves: dict[str, list[dict[str, Any]]] = {}
    for curriculum in sorted({r.curriculum for r in runs}):
        staged = [dict(r.stages()) for r in runs if r.curriculum == curriculum]
        points = []
        for stage in _stage_order(staged):
            means = np.array([np.mean(s[stage]) for s in staged if stage in s])
            low, high = bootstrap_interval(means, rng)
            points.append({"stage": stage, "score": float(means.mean()), "low": low, "high": high, "seeds": len(means)})
        curves[curriculum] = points
    return curves


def difference(runs: list[Run], other: str, reference: str = REFERENCE, seed: int = 0) -> dict[str, Any] | None:
    """``reference - other`` at the last scored epoch both reached, over the seeds that reached it in both, paired by
    seed and task.

    ``interval_seeds`` resamples seeds; ``interval`` resamples seeds, then tasks within each seed (two levels), so it
    also carries the held-out set's sampling noise. ``None`` before the two share a scored epoch of a seed: the start
    and warm start stages are no comparison (runs of a seed share them)."""
    by_seed = {(r.curriculum, r.seed): dict(r.stages()) for r in runs if r.curriculum in (reference, other)}
    shared = sorted({s for c, s in by_seed if c == reference} & {s for c, s in by_seed if c == other})
    reached = {s: set(by_seed[(reference, s)]) & set(by_seed[(other, s)]) for s in shared}
    final = _scored_epochs(list(reached.values()))
    if not final:
        return None
    stage = final[-1]
    seeds = [s for s in shared if stage in reached[s]]
    diffs = [_task_differences(by_seed[(reference, s)][stage], by_seed[(other, s)][stage],
                               f"seed {s}, {stage}: {reference} and {other}") for s in seeds]  # fmt: skip
    return {"reference": reference, "other": other, "stage": stage, "seeds": seeds,
            **paired_differences(diffs, np.random.default_rng(seed))}  # fmt: skip


def gain_over_warm_start(runs: list[Run], curriculum: str, seed: int = 0) -> dict[str, Any] | None:
    """The curriculum's held-out score at the last scored epoch it reached minus its own warm start's, over the seeds
    that reached that epoch, paired by seed and task (intervals as :func:`difference`'s): whether its training made
    the agent better at all; with the tasks that went down and up, summed over seeds. ``None`` before an epoch with
    held-out scores."""
    by_seed = {r.seed: dict(r.stages()) for r in runs if r.curriculum == curriculum}
    by_seed = {s: staged for s, staged in sorted(by_seed.items()) if "warm start" in staged}
    epochs = _scored_epochs(list(by_seed.values()))
    if not epochs:
        return None
    seeds = [s for s, staged in by_seed.items() if epochs[-1] in staged]
    diffs = [_task_differences(by_seed[s][epochs[-1]], by_seed[s]["warm start"],
                               f"{curriculum} seed {s}: {epochs[-1]} and the warm start") for s in seeds]  # fmt: skip
    moved = {"down": int(sum((d < 0).sum() for d in diffs)), "up": int(sum((d > 0).sum() for d in diffs))}
    return {"curriculum": curriculum, "stage": epochs[-1], "seeds": seeds,
            **paired_differences(diffs, np.random.default_rng(seed)), **moved}  # fmt: skip


def _task_differences(ours: list[float], theirs: list[float], what: str) -> np.ndarray:
    """Task-by-task ``ours - theirs``; ``what`` names the two in the error when they scored different held-out sets."""
    if len(ours) != len(theirs):
        raise ValueError(f"{what} scored different held-out sets")
    return np.asarray(ours) - np.asarray(theirs)


def paired_differences(diffs: list[np.ndarray], rng: np.random.Generator) -> dict[str, Any]:
    """The mean over seeds of paired differences (one array per seed: per task, or per epoch), with a 95% bootstrap
    interval that resamples seeds, then the units within each seed (``interval``), and one over seeds only
    (``interval_seeds``)."""
    seed_means = np.array([d.mean() for d in diffs])
    two_level = np.empty(BOOTSTRAP_SAMPLES)
    for b in range(BOOTSTRAP_SAMPLES):
        picked = rng.integers(len(diffs), size=len(diffs))
        two_level[b] = np.mean([diffs[i][rng.integers(len(diffs[i]), size=len(diffs[i]))].mean() for i in picked])
    low, high = _quantiles(two_level)
    seeds_low, seeds_high = bootstrap_interval(seed_means, rng)
    return {"difference": float(seed_means.mean()), "interval": [low, high], "interval_seeds": [seeds_low, seeds_high],
            "per_seed": [float(d) for d in seed_means]}  # fmt: skip


def _stage_order(staged: list[Any]) -> list[str]:
    """The stages of the run that reached the most, in order (every run's stages are a prefix of the same list)."""
    return sorted(set().union(*staged), key=_stage_rank) if staged else []


def _scored_epochs(staged: list[Any]) -> list[str]:
    """The epoch stages among :func:`_stage_order`'s (not the start and warm start that runs of a seed share)."""
    return [stage for stage in _stage_order(staged) if stage.startswith("epoch ")]


def _stage_rank(stage: str) -> tuple[int, int]:
    return (0, ["start", "warm start"].index(stage)) if not stage.startswith("epoch ") else (1, int(stage.split()[1]))


def band_share(run: Run, alpha: float, band_k: float) -> float | None:
    """Share of the epochs after the first whose p_hat lies inside ``|p_hat - alpha| <= band_k``."""
    p_hats = [m.get("p_hat") for m in run.metrics[1:]]
    p_hats = [p for p in p_hats if isinstance(p, (int, float))]
    return sum(abs(p - alpha) <= band_k for p in p_hats) / len(p_hats) if p_hats else None


def in_band_tasks(run: Run) -> float | None:
    """Share of the tasks played in the epochs after the first whose p_hat lies inside the band (``in_band`` of
    ``fresh_tasks``): the difficulty the alpha curriculum aims its tasks at."""
    epochs = [m for m in run.metrics[1:] if isinstance(m.get("in_band"), int) and m.get("fresh_tasks")]
    return sum(m["in_band"] for m in epochs) / sum(m["fresh_tasks"] for m in epochs) if epochs else None


def unanimous_tasks(run: Run) -> tuple[float, float] | None:
    """Shares of the tasks played in the epochs after the first that none, and all, of their G attempts solved
    (``p_hat_per_task`` 0 and 1): groups without reward variance, from which GRPO learns nothing."""
    p_hats = [p for m in run.metrics[1:] for p in m.get("p_hat_per_task") or []]
    return (sum(p == 0 for p in p_hats) / len(p_hats), sum(p == 1 for p in p_hats) / len(p_hats)) if p_hats else None


def in_band_by_curriculum(runs: list[Run], seed: int = 0) -> dict[str, dict[str, Any]]:
    """Per curriculum: :func:`in_band_tasks` of each seed, their mean and its 95% bootstrap interval over seeds, and
    the mean shares of :func:`unanimous_tasks` (``none``, ``all``; ``None`` without per-task records)."""
    rng = np.random.default_rng(seed)
    out = {}
    for curriculum in sorted({r.curriculum for r in runs}):
        per_seed = {r.seed: in_band_tasks(r) for r in runs if r.curriculum == curriculum}
        per_seed = {s: v for s, v in sorted(per_seed.items()) if v is not None}
        if per_seed:
            values = np.array(list(per_seed.values()))
            low, high = bootstrap_interval(values, rng)
            unanimous = [u for r in runs if r.curriculum == curriculum and (u := unanimous_tasks(r)) is not None]
            none, every = np.mean(unanimous, axis=0) if unanimous else (None, None)
            out[curriculum] = {"per_seed": per_seed, "share": float(values.mean()), "low": low, "high": high,
                               "none": none, "all": every}  # fmt: skip
    return out


def family_success(run: Run, index: int, stats_window: int) -> tuple[dict[str, float], bool]:
    """The agent's recent success per family key when the tasks of ``run.metrics[index]`` were written, and whether
    it is exact: the record's ``family_success`` where it has one, else rebuilt from the earlier epochs'
    ``p_hat_per_family`` (the last ``stats_window`` episodes of each key, ``G`` per task; an epoch only partly inside
    the window counts at its mean, so the rebuilt rate may differ from the one the run had)."""
    recorded = run.metrics[index].get("family_success")
    if isinstance(recorded, dict):
        return {key: float(rate) for key, rate in recorded.items()}, True
    rates = {}
    for key in {key for m in run.metrics[:index] for key in m.get("fresh_per_family") or {}}:
        episodes, total = 0, 0.0
        for m in reversed(run.metrics[:index]):
            tasks, rate = (m.get("fresh_per_family") or {}).get(key, 0), (m.get("p_hat_per_family") or {}).get(key)
            if not tasks or rate is None:
                continue
            group = int((m.get("agent") or {}).get("episodes", 0)) // (m["fresh_tasks"] + m.get("replay_tasks", 0))
            taken = min(tasks * group, stats_window - episodes)
            episodes, total = episodes + taken, total + taken * rate
            if episodes >= stats_window:
                break
        if episodes:
            rates[key] = total / episodes
    return rates, False


def mix_aim_per_epoch(run: Run, alpha: float, beta: float, stats_window: int) -> dict[int, dict[str, Any]]:
    """Does the run's task mix follow its agent? Per epoch after the first, the mean alpha-curriculum reward
    ``exp(-beta (s - alpha)^2)`` of its fresh tasks with ``s``: their family key's success when they were written
    (``written``, keys not yet played left out, None if none was: did the mix go where the success it had been shown
    was near alpha?), their key's success in that epoch (``played``: was it near alpha there?) and each task's own p_hat
    (``tasks``: was the task near alpha?); ``exact``: the epoch recorded the success it was written under (else it is
    rebuilt, :func:`family_success`)."""

    def reward(s: float) -> float:
        return float(np.exp(-beta * (s - alpha) ** 2))

    out = {}
    for index in range(1, len(run.metrics)):
        m = run.metrics[index]
        fresh, per_task = m.get("fresh_per_family") or {}, m.get("p_hat_per_task")
        played = m.get("p_hat_per_family") or {}
        if not fresh or not per_task or set(fresh) - set(played):
            continue
        success, exact = family_success(run, index, stats_window)
        aimed = [(n, reward(success[key])) for key, n in fresh.items() if key in success]
        out[int(m["epoch"])] = {
            "written": sum(n * r for n, r in aimed) / sum(n for n, _ in aimed) if aimed else None,
            "played": sum(n * reward(played[key]) for key, n in fresh.items()) / sum(fresh.values()),
            "tasks": float(np.mean([reward(p) for p in per_task])),
            "exact": exact,
        }
    return out


def mix_aim(run: Run, alpha: float, beta: float, stats_window: int) -> dict[str, Any] | None:
    """:func:`mix_aim_per_epoch` averaged over the epochs (``exact``: every epoch's is); None without such epochs."""
    epochs = list(mix_aim_per_epoch(run, alpha, beta, stats_window).values())
    if not epochs:
        return None
    written = [e["written"] for e in epochs if e["written"] is not None]
    return {
        "written": float(np.mean(written)) if written else None,
        "played": float(np.mean([e["played"] for e in epochs])),
        "tasks": float(np.mean([e["tasks"] for e in epochs])),
        "exact": all(e["exact"] for e in epochs),
    }


def _interval(values: list[float], rng: np.random.Generator) -> tuple[float, float, float] | None:
    """Mean and 95% bootstrap interval of ``values`` (None when empty)."""
    array = np.array(values, dtype=float)
    return (float(array.mean()), *bootstrap_interval(array, rng)) if len(array) else None


def mix_aim_by_curriculum(
    runs: list[Run], alpha: float, beta: float, stats_window: int, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """:func:`mix_aim` per curriculum: for each measure the mean over seeds and its 95% bootstrap interval over
    seeds, and the same of the reference curriculum minus it, paired by seed (``minus``; absent for the
    reference). Also ``seeds`` and ``exact`` (every seed's success recorded, none rebuilt)."""
    rng = np.random.default_rng(seed)
    aims = {(r.curriculum, r.seed): a for r in runs if (a := mix_aim(r, alpha, beta, stats_window)) is not None}
    out: dict[str, dict[str, Any]] = {}
    for curriculum in sorted({c for c, _ in aims}):
        seeds = sorted(s for c, s in aims if c == curriculum)
        row: dict[str, Any] = {"seeds": seeds, "exact": all(aims[curriculum, s]["exact"] for s in seeds)}
        row.update({m: _interval([aims[curriculum, s][m] for s in seeds if aims[curriculum, s][m] is not None], rng)
                    for m in AIMS})  # fmt: skip
        if curriculum != REFERENCE:
            paired = [s for s in seeds if (REFERENCE, s) in aims]
            both = [(aims[REFERENCE, s], aims[curriculum, s]) for s in paired]
            row["minus"] = {
                m: _interval([a[m] - b[m] for a, b in both if a[m] is not None and b[m] is not None], rng) for m in AIMS
            }
            row["paired_seeds"] = paired
        out[curriculum] = row
    return out


def per_epoch_means(runs: list[Run], read: Any) -> dict[str, tuple[list[int], list[float]]]:
    """Per curriculum: epochs and the mean over seeds of ``read(metrics)`` (values that are ``None`` left out)."""
    out = {}
    for curriculum in sorted({r.curriculum for r in runs}):
        values: dict[int, list[float]] = {}
        for run in (r for r in runs if r.curriculum == curriculum):
            for m in run.metrics:
                value = read(m)
                if isinstance(value, (int, float)):
                    values.setdefault(int(m["epoch"]), []).append(float(value))
        epochs = sorted(values)
        out[curriculum] = (epochs, [float(np.mean(values[e])) for e in epochs])
    return out


def level_mix(runs: list[Run], curriculum: str) -> dict[int, dict[str, float]]:
    """Epoch -> share of each level (or family) among the fresh tasks, pooled over the curriculum's seeds."""
    counts: dict[int, dict[str, int]] = {}
    for run in (r for r in runs if r.curriculum == curriculum):
        for m in run.metrics:
            epoch = counts.setdefault(int(m["epoch"]), {})
            for family, n in (m.get("fresh_per_family") or {}).items():
                epoch[mix_group(family)] = epoch.get(mix_group(family), 0) + int(n)
    return {e: {g: n / max(1, sum(c.values())) for g, n in sorted(c.items())} for e, c in sorted(counts.items())}


def plot_experiment(
    runs: list[Run], out: Path, alpha: float, band_k: float, beta: float, stats_window: int
) -> list[Path]:
    """The experiment's figures (PNG) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    fig, ax = plt.subplots(figsize=(7, 4))
    curves = held_out_curves(runs)
    order = [p["stage"] for p in max(curves.values(), key=len)]
    for curriculum, points in curves.items():
        x = [order.index(p["stage"]) for p in points]
        seeds = [p["seeds"] for p in points] or [0]
        late = f", {seeds[-1]} at the last stage" if seeds[-1] < seeds[0] else ""
        ax.plot(x, [p["score"] for p in points], marker="o", label=f"{curriculum} ({_seed_count(seeds[0])}{late})")
        ax.fill_between(x, [p["low"] for p in points], [p["high"] for p in points], alpha=0.2)
    ax.set_xticks(range(len(order)), order, rotation=30, fontsize=7)
    ax.set_title("Held-out score: mean over the seeds that reached each stage,\n95% bootstrap interval over seeds",
                 fontsize=10)  # fmt: skip
    ax.set_ylabel("score")
    ax.legend(fontsize=8)
    paths.append(save_figure(fig, out / "held_out.png"))

    fig, ax = plt.subplots(figsize=(7, 4))
    for curriculum, (epochs, values) in per_epoch_means(runs, lambda m: m.get("p_hat")).items():
        ax.plot(epochs, values, marker="o", label=curriculum)
    ax.axhspan(alpha - band_k, alpha + band_k, color="green", alpha=0.1, label=f"band {alpha} +/- {band_k}")
    ax.axhline(alpha, color="green", linestyle="--", linewidth=1)
    ax.set(title="p_hat on generated tasks per epoch (mean over seeds)", xlabel="epoch", ylabel="p_hat", ylim=(0, 1))
    integer_epoch_ticks(ax)
    ax.legend(fontsize=8)
    paths.append(save_figure(fig, out / "p_hat.png"))

    curricula = sorted({r.curriculum for r in runs})
    fig, axes = plt.subplots(1, len(curricula), figsize=(3.6 * len(curricula), 3.4), squeeze=False, sharey=True)
    for ax, curriculum in zip(axes[0], curricula):
        mix = level_mix(runs, curriculum)
        groups = sorted({g for shares in mix.values() for g in shares})
        bottom = np.zeros(len(mix))
        for group in groups:
            shares = np.array([mix[e].get(group, 0.0) for e in mix])
            ax.bar(list(mix), shares, bottom=bottom, label=group)
            bottom += shares
        ax.set(title=curriculum, xlabel="epoch", ylabel="share of fresh tasks")
        integer_epoch_ticks(ax)
    if axes[0][-1].get_legend_handles_labels()[0]:
        axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("Level mix of the generated tasks (all seeds pooled)")
    paths.append(save_figure(fig, out / "level_mix.png"))

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for curriculum, (epochs, values) in per_epoch_means(runs, lambda m: (m.get("simulator") or {}).get("kl")).items():
        if epochs:
            left.plot(epochs, values, marker="o", label=curriculum)
    left.set(title="Simulator KL to its initial policy", xlabel="epoch", ylabel="KL")
    for curriculum in curricula:
        generated = per_epoch_means([r for r in runs if r.curriculum == curriculum], lambda m: m.get("generated_tasks"))
        scores = per_epoch_means(
            [r for r in runs if r.curriculum == curriculum], lambda m: (m.get("validation") or {}).get("score")
        )
        x, y = dict(zip(*generated[curriculum])), dict(zip(*scores[curriculum]))
        epochs = [e for e in x if e in y]
        right.plot([x[e] for e in epochs], [y[e] for e in epochs], marker="o", label=curriculum)
    right.set(title="Held-out score vs generated tasks written", xlabel="valid generated tasks (mean over seeds)",
              ylabel="score")  # fmt: skip
    for ax in (left, right):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    paths.append(save_figure(fig, out / "kl_and_data_efficiency.png"))

    aims = [(r.curriculum, mix_aim_per_epoch(r, alpha, beta, stats_window)) for r in runs]
    fig, axes = plt.subplots(1, len(AIMS), figsize=(4 * len(AIMS), 3.6), sharey=True)
    for ax, measure, title in zip(axes, AIMS, AIM_TITLES, strict=True):
        for curriculum in curricula:
            values: dict[int, list[float]] = {}
            for epoch, aim in ((e, a) for c, per_epoch in aims if c == curriculum for e, a in per_epoch.items()):
                if aim[measure] is not None:
                    values.setdefault(epoch, []).append(aim[measure])
            if values:
                epochs = sorted(values)
                ax.plot(epochs, [np.mean(values[e]) for e in epochs], marker="o", label=curriculum)
        ax.set(title=title, xlabel="epoch", ylim=(0, 1))
        integer_epoch_ticks(ax)
    axes[0].set_ylabel(f"exp(-{beta:g} (s - {alpha:g})^2), mean over tasks")
    if axes[-1].get_legend_handles_labels()[0]:
        axes[-1].legend(fontsize=8)
    fig.suptitle("Does the task mix follow the agent? Alpha-curriculum reward of the fresh tasks (mean over seeds)")
    paths.append(save_figure(fig, out / "mix_aim.png"))
    return paths


def _seed_count(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"


def report(runs: list[Run], alpha: float, band_k: float, beta: float, stats_window: int) -> str:
    """The experiment as Markdown: curves, differences, band share, the task mix's aim, the budget."""
    if not runs:
        return "No runs yet.\n"
    lines = ["## Held-out score per stage (mean over the seeds that reached it [95% bootstrap interval over seeds]; "
             "the number of seeds where fewer than all have reached it)", ""]  # fmt: skip
    curves = held_out_curves(runs)
    order = [p["stage"] for p in max(curves.values(), key=len)]
    lines += ["| curriculum | seeds | " + " | ".join(order) + " |", "|---|---|" + "---|" * len(order)]
    for curriculum, points in curves.items():
        seeds = sorted(r.seed for r in runs if r.curriculum == curriculum)
        cells = {p["stage"]: f"{p['score']:.3f} [{p['low']:.3f}, {p['high']:.3f}]"
                 + (f" ({_seed_count(p['seeds'])})" if p["seeds"] < len(seeds) else "") for p in points}  # fmt: skip
        lines.append(f"| {curriculum} | {seeds} | " + " | ".join(cells.get(s, "-") for s in order) + " |")
    lines += ["", "## Each curriculum minus its own warm start at the last scored epoch it reached (over the seeds "
              "that reached it, paired by seed and task: did training make the agent better?)", "",
              "| curriculum | stage | seeds | gain | 95% interval (seeds x tasks) | 95% interval (seeds) | per seed | "
              "tasks down / up |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for curriculum in curves:
        gain = gain_over_warm_start(runs, curriculum)
        if gain is not None:
            lines.append(f"| {curriculum} | {gain['stage']} | {gain['seeds']} | {_paired_cells(gain)} | "
                         f"{gain['down']} / {gain['up']} |")  # fmt: skip
    lines += ["", f"## {REFERENCE} minus each other curriculum at the last scored epoch both reached", ""]
    lines += ["| other | stage | seeds | difference | 95% interval (seeds x tasks) | 95% interval (seeds) | per seed |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for other in sorted({r.curriculum for r in runs} - {REFERENCE}):
        diff = difference(runs, other)
        if diff is None:
            lines.append(f"| {other} | no scored epoch of a seed both reached | - | - | - | - | - |")
            continue
        lines.append(f"| {other} | {diff['stage']} | {diff['seeds']} | {_paired_cells(diff)} |")
    lines += ["", f"## p_hat against the band |p_hat - {alpha}| <= {band_k}", "",
              "| run | p_hat per epoch | epochs after the first inside the band | tasks in the band per epoch | "
              "generated tasks | simulator KL (last) |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for run in sorted(runs, key=lambda r: (r.curriculum, r.seed)):
        p_hats = ", ".join("-" if m.get("p_hat") is None else f"{m['p_hat']:.2f}" for m in run.metrics)
        share = band_share(run, alpha, band_k)
        kl = [(m.get("simulator") or {}).get("kl") for m in run.metrics]
        kl = [k for k in kl if isinstance(k, (int, float))]
        in_band = ", ".join(f"{m.get('in_band', '-')}/{m.get('fresh_tasks', '-')}" for m in run.metrics)
        lines.append(
            f"| {run.curriculum} s{run.seed} | {p_hats} | {'-' if share is None else f'{share:.0%}'} | {in_band} | "
            f"{run.metrics[-1].get('generated_tasks', '-')} | {f'{kl[-1]:.4f}' if kl else '-'} |"
        )
    lines += ["", "## Tasks inside the band, epochs after the first (mean over seeds [95% bootstrap interval over "
              "seeds])", "", "| curriculum | seeds | share of tasks in the band | per seed | solved by none of G | "
              "solved by all of G |", "|---|---|---|---|---|---|"]  # fmt: skip
    for curriculum, share in in_band_by_curriculum(runs).items():
        none, every = ("-" if share[k] is None else f"{share[k]:.3f}" for k in ("none", "all"))
        interval = f"[{share['low']:.3f}, {share['high']:.3f}]"
        lines.append(
            f"| {curriculum} | {list(share['per_seed'])} | {share['share']:.3f} {interval} "
            f"| {', '.join(f'{v:.3f}' for v in share['per_seed'].values())} | {none} | {every} |"
        )
    return "\n".join(lines + aim_lines(runs, alpha, beta, stats_window) + budget(runs)) + "\n"


def aim_lines(runs: list[Run], alpha: float, beta: float, stats_window: int) -> list[str]:
    """Markdown lines of :func:`mix_aim_by_curriculum`."""
    aims = mix_aim_by_curriculum(runs, alpha, beta, stats_window)
    if not aims:
        return []
    lines = ["", "## Does the task mix follow the agent? (epochs after the first)", "",
             f"Mean over the fresh tasks of the alpha-curriculum reward exp(-{beta:g} (s - {alpha:g})^2) at three "
             "success rates s: their family key's success when they were written (the agent's last "
             f"{stats_window} episodes of the key: what a GenEnv simulator is shown; rebuilt from the earlier epochs' "
             "per-key p_hat where a run did not record it), the key's success in that epoch, and the task's own "
             f"p_hat. Mean over seeds [95% bootstrap interval over seeds]; the `{REFERENCE} minus` rows are paired by "
             "seed.", "",
             "| curriculum | seeds | " + " | ".join(AIM_TITLES) + " |", "|---|---|---|---|---|"]  # fmt: skip

    def cells(values: dict[str, Any], signed: bool) -> str:
        form = "+.3f" if signed else ".3f"
        return " | ".join("-" if (v := values[m]) is None else f"{v[0]:{form}} [{v[1]:{form}}, {v[2]:{form}}]"
                          for m in AIMS)  # fmt: skip

    for curriculum, row in aims.items():
        rebuilt = "" if row["exact"] else " (rebuilt)"
        lines.append(f"| {curriculum} | {row['seeds']}{rebuilt} | {cells(row, signed=False)} |")
    for curriculum, row in aims.items():
        if row.get("paired_seeds"):
            lines.append(
                f"| {REFERENCE} minus {curriculum} | {row['paired_seeds']} | {cells(row['minus'], signed=True)} |"
            )
    return lines


def _paired_cells(paired: dict[str, Any]) -> str:
    """Difference, both intervals and the per-seed differences of :func:`paired_differences` as Markdown cells."""
    (low, high), (s_low, s_high) = paired["interval"], paired["interval_seeds"]
    per_seed = ", ".join(f"{d:+.3f}" for d in paired["per_seed"])
    return f"{paired['difference']:+.3f} | [{low:+.3f}, {high:+.3f}] | [{s_low:+.3f}, {s_high:+.3f}] | {per_seed}"


def mean_load(run: Run) -> str:
    """The mean of the 15-minute load averages the run's epochs recorded at their ends (``-`` if none did), with how
    many epochs recorded one when not all did."""
    loads = [m["load_average"][2] for m in run.metrics if m.get("load_average")]
    if not loads:
        return "-"
    share = "" if len(loads) == len(run.metrics) else f" ({len(loads)} of {len(run.metrics)} epochs)"
    return f"{np.mean(loads):.1f}{share}"


def pool_hours(run: Run) -> str:
    """The hours the simulator took to write a static or offline run's pool (its epoch 0's ``pool_writing``),
    wherever its batches were written, with how many were timed when not all were (``-`` if none recorded)."""
    writing = run.metrics[0].get("pool_writing") if run.metrics else None
    if not writing:
        return "-"
    timed, batches = int(writing["timed_batches"]), int(writing["batches"])
    share = "" if timed == batches else f" ({timed} of {batches} batches timed)"
    return f"{float(writing['seconds']) / 3600:.2f}{share}"


def budget(runs: list[Run]) -> list[str]:
    """Markdown lines: each run's epochs, agent episodes and wall hours, the load they ran under, where the time
    went (``stage_seconds``, summed over its epochs; epochs written before stage times were recorded count in the
    total only) and what its pool cost (:func:`pool_hours`)."""
    stages = sorted({name for run in runs for m in run.metrics for name in m.get("stage_seconds") or {}})
    lines = ["", "## Budget (wall time on each run's machine; load: the 15-minute load average at the end of each "
             "epoch, mean over the epochs that recorded it; pool h: the simulator's time for the batches of a static "
             "or offline pool, also those written by another run or process, which `tasks h` leaves out)", "",
             "| run | epochs | agent episodes | hours | load | " + " | ".join(f"{s} h" for s in stages) + " | pool h |",
             "|---|---|---|---|---|" + "---|" * len(stages) + "---|"]  # fmt: skip
    for run in sorted(runs, key=lambda r: (r.curriculum, r.seed)):
        episodes = sum(int((m.get("agent") or {}).get("episodes", 0)) for m in run.metrics)
        hours = sum(float(m.get("seconds", 0.0)) for m in run.metrics) / 3600
        per_stage = [sum(float((m.get("stage_seconds") or {}).get(s, 0.0)) for m in run.metrics) / 3600 for s in stages]
        cells = [str(len(run.metrics)), str(episodes), f"{hours:.2f}", mean_load(run), *(f"{h:.2f}" for h in per_stage)]
        lines.append(f"| {run.curriculum} s{run.seed} | " + " | ".join([*cells, pool_hours(run)]) + " |")
    shared = [f"{run.curriculum} s{run.seed} from {run.metrics[0]['warm_start_shared_from']}"
              for run in sorted(runs, key=lambda r: (r.seed, r.curriculum))
              if run.metrics and run.metrics[0].get("warm_start_shared_from")]  # fmt: skip
    if shared:
        lines += ["", "Started from another run's warm start of the same seed (its time is counted there): "
                  + ", ".join(shared) + "."]  # fmt: skip
    return lines
