"""The held-out learning curve of a run: the score before training, after the warm start and after every epoch.

Every stage scores the same held-out tasks (``validation.task_scores`` in ``metrics.jsonl``, in task order), so two
stages compare task by task: the rise from the first stage to the last carries a paired bootstrap 95% interval over
tasks, the noise a reader should weigh the rise against. The curve also names the engine that played the held-out
episodes (``validation.engine``) and what is measured of its scores against HF ``generate``'s
(:data:`ENGINE_AGREEMENT`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CurvePoint", "bootstrap_interval", "format_curve", "held_out_curve", "paired_difference", "paired_rise"]

BOOTSTRAP_SAMPLES = 2000
#: What is measured of each held-out engine's greedy answers against HF ``generate``'s on the same weights.
ENGINE_AGREEMENT = {
    "hf": "HF generate itself",
    "ctranslate2 float32": "measured on the main job: the same answer as HF generate on all 72 held-out tasks at "
    "each of its 4 stages, where int8 changed 3 to 9 scores: results/learning_curves/main_job/heldout_engines.json",
}


@dataclass(frozen=True)
class CurvePoint:
    """One stage: its label, mean held-out score, 95% bootstrap interval over tasks, the task scores, and the engine
    that played its episodes (``None`` where the run did not record it)."""

    stage: str
    score: float
    low: float
    high: float
    task_scores: tuple[float, ...]
    engine: str | None = None


def bootstrap_interval(values: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """95% bootstrap interval of the mean of ``values`` (a point when there are fewer than two)."""
    if len(values) < 2:
        return float(values.mean()), float(values.mean())
    means = values[rng.integers(len(values), size=(BOOTSTRAP_SAMPLES, len(values)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def held_out_curve(metrics: list[dict[str, Any]], seed: int = 0) -> list[CurvePoint]:
    """The curve of a run's epoch metrics (the last record of an epoch wins, as after a resume); stages without
    per-task scores are left out."""
    metrics = [m for _, m in sorted({int(m["epoch"]): m for m in metrics}.items())]
    stages: list[tuple[str, dict[str, Any]]] = []
    if metrics:
        first = metrics[0]
        stages += [
            ("start", first.get("validation_start") or {}),
            ("warm start", first.get("validation_warm_start") or {}),
        ]
    stages += [(f"epoch {m['epoch']}", m.get("validation") or {}) for m in metrics]
    rng = np.random.default_rng(seed)
    points = []
    for stage, validation in stages:
        scores = validation.get("task_scores")
        if not scores:
            continue
        values = np.asarray(scores, dtype=float)
        low, high = bootstrap_interval(values, rng)
        scores_tuple = tuple(float(v) for v in values)
        points.append(CurvePoint(stage, float(values.mean()), low, high, scores_tuple, validation.get("engine")))
    return points


def paired_rise(first: CurvePoint, last: CurvePoint, seed: int = 0) -> tuple[float, float, float]:
    """``last - first`` over the same tasks, with its paired bootstrap 95% interval."""
    return paired_difference(first.task_scores, last.task_scores, seed)


def paired_difference(before: Sequence[float], after: Sequence[float], seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``after - before`` task by task, with its paired bootstrap 95% interval."""
    if len(before) != len(after):
        raise ValueError("the two stages scored different numbers of held-out tasks")
    diff = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    low, high = bootstrap_interval(diff, np.random.default_rng(seed))
    return float(diff.mean()), low, high


def format_curve(points: list[CurvePoint]) -> str:
    """The curve as text, one stage a line, then the rise from the first stage to the last and, when the run had a
    warm start, from it to the last (what the co-evolution epochs added to the supervised start), then the engine
    that scored the stages and how its scores compare with HF ``generate``'s."""
    if not points:
        return "no held-out scores (set validation.split and a validation.limit of at least 1)"
    n = len(points[0].task_scores)
    lines = [f"held-out score on {n} tasks (95% bootstrap interval over tasks):"]
    lines += [f"  {p.stage:<11} {p.score:.3f}  [{p.low:.3f}, {p.high:.3f}]" for p in points]
    starts = [points[0]] + [p for p in points[1:-1] if p.stage == "warm start"]
    for start in starts if len(points) > 1 else []:
        rise, low, high = paired_rise(start, points[-1])
        verdict = "above" if low > 0 else "not above"
        lines.append(
            f"  rise {start.stage} -> {points[-1].stage}: {rise:+.3f} [{low:+.3f}, {high:+.3f}] "
            f"(paired; {verdict} noise)"
        )
    engines = sorted({p.engine for p in points if p.engine})
    for engine in engines:
        stages = [p.stage for p in points if p.engine == engine]
        scope = "every stage" if len(stages) == len(points) else ", ".join(stages)
        agreement = ENGINE_AGREEMENT.get(engine, "not compared with HF generate")
        lines.append(f"  held-out episodes played by {engine} at {scope} ({agreement})")
    return "\n".join(lines)
