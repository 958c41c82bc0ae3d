"""Plot co-evolution runs: ``python -m genenv.plot RUN_DIR [RUN_DIR ...] [--out DIR]``.

One run: p_hat per epoch against the alpha band (with each generated task's own p_hat as dots), R_env,
the share of generated tasks inside the band, validation score (overall and per group, e.g. level), mean
generated-task length (the paper's "curriculum emergence" picture), simulator KL, the mix of generated
tasks per level or family, and the held-out learning curve (start, warm start, each epoch), one PNG each. Several runs
(e.g. GenEnv vs Random vs Static): the same panels with one line per run, labelled by curriculum.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from genenv.checkpoints import latest_checkpoint, read_metrics  # noqa: E402
from genenv.learning_curve import held_out_curve  # noqa: E402

#: panel name -> (title, y label, how to read the value from one epoch's metrics)
PANELS: dict[str, tuple[str, str, Any]] = {
    "p_hat": ("Agent success on generated tasks (p_hat)", "p_hat", lambda m: m.get("p_hat")),
    "r_env": ("alpha-Curriculum Reward R_env (mean over generated tasks)", "R_env", lambda m: m.get("r_env")),
    "in_band": ("Generated tasks inside the band", "share of fresh tasks", lambda m: _share_in_band(m)),
    "validation": ("Held-out validation score", "score", lambda m: (m.get("validation") or {}).get("score")),
    "task_length": ("Mean generated task length", "tokens", lambda m: m.get("task_length_tokens")),
    "simulator_kl": ("Simulator KL to its initial policy", "KL", lambda m: (m.get("simulator") or {}).get("kl")),
}


def _share_in_band(metrics: dict[str, Any]) -> float | None:
    """Share of the epoch's fresh tasks whose own p_hat lies in the band (``None`` for older metrics)."""
    in_band, fresh = metrics.get("in_band"), metrics.get("fresh_tasks")
    if isinstance(in_band, bool) or not isinstance(in_band, int) or not fresh:
        return None
    return in_band / fresh


def load_runs(run_dirs: list[Path]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(label, metrics per epoch) of each run; the last line per epoch wins."""
    runs = []
    for run_dir in run_dirs:
        by_epoch = {int(m["epoch"]): m for m in read_metrics(run_dir)}
        if not by_epoch:
            raise SystemExit(f"{run_dir} has no metrics.jsonl records")
        metrics = [by_epoch[e] for e in sorted(by_epoch)]
        label = metrics[0].get("curriculum", "run") + ("" if len(run_dirs) == 1 else f" ({run_dir.name})")
        runs.append((label, metrics))
    return runs


def plot_runs(run_dirs: list[Path], out: Path, alpha: float | None = None, band_k: float | None = None) -> list[Path]:
    """Write one PNG per panel into ``out``; returns their paths."""
    runs = load_runs(run_dirs)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (title, ylabel, value) in PANELS.items():
        fig, ax = plt.subplots(figsize=(6, 3.6))
        plotted = False
        for label, metrics in runs:
            points = [(m["epoch"], value(m)) for m in metrics if isinstance(value(m), (int, float))]
            if points:
                xs, ys = zip(*points)
                line = ax.plot(xs, ys, marker="o", label=label)[0]
                plotted = True
                if name == "p_hat":  # each generated task's own p_hat (its G attempts), what R_env rewards
                    tasks = [(m["epoch"], p) for m in metrics for p in m.get("p_hat_per_task") or []]
                    if tasks:
                        ax.scatter(*zip(*tasks), s=10, alpha=0.35, color=line.get_color())
        if name == "p_hat" and alpha is not None:
            ax.axhline(alpha, color="gray", linestyle="--", linewidth=1, label=f"alpha = {alpha}")
            if band_k is not None:
                ax.axhspan(
                    max(0.0, alpha - band_k),
                    min(1.0, alpha + band_k),
                    color="gray",
                    alpha=0.15,
                    label=f"band |p_hat - alpha| <= {band_k}",
                )
        if not plotted:
            ax.text(0.5, 0.5, "no data in these runs", ha="center", va="center", transform=ax.transAxes)
        ax.set(title=title, xlabel="epoch", ylabel=ylabel)
        integer_epoch_ticks(ax)
        ax.grid(alpha=0.3)
        if plotted:
            ax.legend(fontsize=8)
        written.append(save_figure(fig, out / f"{name}.png"))
    return written


def plot_validation_groups(run_dirs: list[Path], out: Path) -> Path | None:
    """One panel per group of the held-out score (``score/<group>`` keys, e.g. per level), one line per run;
    ``None`` when the validation metrics have no groups."""
    runs = load_runs(run_dirs)
    groups = sorted({k for _, metrics in runs for m in metrics for k in (m.get("validation") or {}) if "/" in k})
    groups = [g for g in groups if g.startswith("score/")]
    if not groups:
        return None
    fig, axes = plt.subplots(1, len(groups), figsize=(3.6 * len(groups), 3.4), squeeze=False, sharey=True)
    for ax, group in zip(axes[0], groups):
        for label, metrics in runs:
            points = [(m["epoch"], (m.get("validation") or {}).get(group)) for m in metrics]
            points = [(x, y) for x, y in points if isinstance(y, (int, float))]
            if points:
                ax.plot(*zip(*points), marker="o", label=label)
        ax.set(title=group.split("/", 1)[1], xlabel="epoch", ylabel="held-out score")
        integer_epoch_ticks(ax)
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=8)
    fig.suptitle("Held-out score per group")
    return save_figure(fig, out / "validation_groups.png")


def plot_learning_curve(run_dirs: list[Path], out: Path) -> Path | None:
    """The held-out score by stage (before training, after the warm start, after each epoch) with 95% bootstrap
    intervals over tasks, one line per run; ``None`` when no run recorded per-task held-out scores."""
    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    plotted = False
    for label, metrics in load_runs(run_dirs):
        points = held_out_curve(metrics)
        if not points:
            continue
        xs = range(len(points))
        ys = [p.score for p in points]
        errors = [[p.score - p.low for p in points], [p.high - p.score for p in points]]
        ax.errorbar(xs, ys, yerr=errors, marker="o", capsize=3, label=label)
        ax.set_xticks(list(xs), [p.stage for p in points], rotation=30, ha="right")
        plotted = True
    if not plotted:
        plt.close(fig)
        return None
    ax.set(title="Held-out score by training stage", ylabel="score (95% CI over tasks)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, out / "learning_curve.png")


def mix_group(family: str) -> str:
    """What the task-mix panel stacks: the level of a ``family@level`` family, else the family."""
    return f"level {family.rsplit('@', 1)[1]}" if "@" in family else family


def plot_task_mix(run_dirs: list[Path], out: Path) -> Path:
    """One panel per run: the share of each level (or family) among the fresh tasks of every epoch, the
    curriculum the simulator chose."""
    runs = load_runs(run_dirs)
    groups = sorted({mix_group(f) for _, metrics in runs for m in metrics for f in (m.get("fresh_per_family") or {})})
    fig, axes = plt.subplots(1, len(runs), figsize=(4.2 * len(runs), 3.6), squeeze=False, sharey=True)
    for ax, (label, metrics) in zip(axes[0], runs):
        epochs = [m["epoch"] for m in metrics]
        bottom = [0.0] * len(metrics)
        for group in groups:
            shares = []
            for m in metrics:
                counts = m.get("fresh_per_family") or {}
                total = sum(counts.values())
                in_group = sum(n for f, n in counts.items() if mix_group(f) == group)
                shares.append(in_group / total if total else 0.0)
            ax.bar(epochs, shares, bottom=bottom, label=group)
            bottom = [b + v for b, v in zip(bottom, shares)]
        ax.set(title=label, xlabel="epoch", ylabel="share of fresh tasks")
        integer_epoch_ticks(ax)
    if groups:
        axes[0][-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle("Generated task mix per epoch")
    return save_figure(fig, out / "task_mix.png")


def integer_epoch_ticks(ax: Any) -> None:
    """Whole epochs on the x axis, also when a plot holds one epoch (``MaxNLocator`` drops ``integer`` below
    ``min_n_ticks`` integers in view and labelled a lone epoch 0 from -0.4 to 0.4)."""
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def save_figure(fig: Any, path: Path) -> Path:
    """Lay ``fig`` out, write it to ``path`` (120 dpi) and close it; returns ``path``."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _run_setting(run_dir: Path, key: str) -> float | None:
    """A curriculum setting recorded in the run's last checkpoint (``alpha``, ``band_k``)."""
    checkpoint = latest_checkpoint(run_dir)
    if checkpoint is None:
        return None
    return json.loads((checkpoint / "state.json").read_text(encoding="utf-8"))["config"].get(key)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Plot GenEnv co-evolution runs.")
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (holding metrics.jsonl)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: RUN_DIR/plots)")
    args = parser.parse_args(argv)
    out = args.out or (args.runs[0] / "plots")
    alpha, band_k = _run_setting(args.runs[0], "alpha"), _run_setting(args.runs[0], "band_k")
    paths = [*plot_runs(args.runs, out, alpha, band_k), plot_task_mix(args.runs, out)]
    paths += [plot_validation_groups(args.runs, out), plot_learning_curve(args.runs, out)]
    for path in paths:
        if path is not None:
            print(path)


if __name__ == "__main__":
    main()
