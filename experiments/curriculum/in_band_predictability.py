"""Could a simulator write more tasks inside the band? How well a written expression predicts it, from played tasks.

Every task a run's agent played after epoch 0 (``pools/traces.jsonl``, written-expression tasks of
``task_spec=expression``) is labelled inside the band (some but not all of its G attempts solved it: with G = 8 and
k = 0.4 the band is exactly that) and described by its family key and by features of its expression (terms, digits,
size and sign of the answer, operators, brackets, negative, round and trivial operands). Leave one run out: each
predictor is fitted on the other runs' tasks and ranks the left-out run's tasks; the pooled rankings give the AUC and
the in-band share of the top quarter and top half of the tasks, what a simulator that wrote only such tasks would have
played. Predictors: the family key (its in-band share in the other runs, as a curriculum that aims keys can at best
know it) and the key plus the expression's features (ridge logistic regression). Intervals: 95% bootstrap over tasks.

    RUNS=$GENENV_STATE_DIR/curriculum_experiment/runs  # the experiment's run folders
    python experiments/curriculum/in_band_predictability.py $RUNS/reasoning_gym_expressions_t10/*-s?
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from task_spread import played_after_epoch_0  # this folder is on sys.path

FEATURES = (
    "terms", "max digits", "log10 |answer|", "answer < 0", "operator kinds", "brackets", "negative operands",
    "round operands", "operands 0 or 1", "all operands equal", "division",
)  # fmt: skip
SHARES = (0.25, 0.5)
_NUMBER = re.compile(r"\d+")
#: a played task: (family key, "EXPRESSION = ANSWER", inside the band)
Played = tuple[str, str, bool]


def played_tasks(run_dir: Path) -> list[Played]:
    """(family key, expression, inside the band) of every written-expression task played after epoch 0."""
    return [
        (key, f"{task['gold']['expression']} = {task['gold']['answer']}", 0 < float(np.mean(rewards)) < 1)
        for task, key, rewards in played_after_epoch_0(run_dir).values()
        if task.get("gold", {}).get("expression") is not None
    ]


def expression_features(text: str) -> list[float]:
    """The :data:`FEATURES` of ``"EXPRESSION = ANSWER"``."""
    expression, _, answer = text.rpartition(" = ")
    numbers = _NUMBER.findall(expression)
    if not numbers:
        raise ValueError(f"no operand in {expression!r}")
    operators = set(re.findall(r"(?<=\s)[-+*/](?=\s)", f" {expression} "))
    value = abs(float(answer))
    return [
        len(numbers),
        max(len(n) for n in numbers),
        float(np.log10(1 + value)),
        float(answer.strip().startswith("-")),
        len(operators),
        expression.count("("),
        len(re.findall(r"-(?=[\d(])", expression)),
        sum(n != "0" and n.endswith("0") for n in numbers),
        sum(n in ("0", "1") for n in numbers),
        float(len(set(numbers)) == 1),
        float("/" in operators),
    ]


def fit_logistic(x: np.ndarray, y: np.ndarray, ridge: float = 1.0, steps: int = 100) -> np.ndarray:
    """Weights (intercept first, not penalised) of a ridge-penalised logistic regression, by Newton's method."""
    x = np.hstack([np.ones((len(x), 1)), x])
    penalty = ridge * np.diag([0.0] + [1.0] * (x.shape[1] - 1))
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-x @ w))
        step = np.linalg.solve(
            x.T @ (x * (p * (1 - p))[:, None]) + penalty + 1e-9 * np.eye(len(w)), x.T @ (p - y) + penalty @ w
        )
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w


Predictor = Callable[[list[Played], list[Played]], np.ndarray]


def by_key(train: list[Played], test: list[Played]) -> np.ndarray:
    """Each test task's key's in-band share among the training tasks (one pseudo-task at the overall share added)."""
    overall = np.mean([band for _, _, band in train])
    counts: dict[str, list[float]] = defaultdict(lambda: [overall, 1.0])
    for key, _, band in train:
        counts[key][0] += band
        counts[key][1] += 1
    return np.array([counts[key][0] / counts[key][1] if key in counts else overall for key, _, _ in test])


def by_key_and_expression(train: list[Played], test: list[Played]) -> np.ndarray:
    """A ridge logistic regression on the family key (one-hot) and the expression's standardised features."""
    keys = sorted({key for key, _, _ in train})

    def design(tasks: list[Played]) -> np.ndarray:
        return np.array([[key == k for k in keys] + expression_features(text) for key, text, _ in tasks], dtype=float)

    x_train, x_test = design(train), design(test)
    numeric = slice(len(keys), None)
    mean, scale = x_train[:, numeric].mean(0), x_train[:, numeric].std(0) + 1e-9
    x_train[:, numeric] = (x_train[:, numeric] - mean) / scale
    x_test[:, numeric] = (x_test[:, numeric] - mean) / scale
    w = fit_logistic(x_train, np.array([band for _, _, band in train], dtype=float))
    return 1 / (1 + np.exp(-(w[0] + x_test @ w[1:])))


PREDICTORS: dict[str, Predictor] = {"family key": by_key, "family key + expression": by_key_and_expression}


def leave_one_run_out(runs: dict[str, list[Played]], predictor: Predictor) -> tuple[np.ndarray, np.ndarray]:
    """(scores, labels) of every run's tasks, each run scored by the predictor fitted on the other runs."""
    scores, labels = [], []
    for name, tasks in runs.items():
        train = [task for other, held in runs.items() if other != name for task in held]
        scores.append(predictor(train, tasks))
        labels.append(np.array([band for _, _, band in tasks], dtype=float))
    return np.concatenate(scores), np.concatenate(labels)


def top_share(scores: np.ndarray, labels: np.ndarray, share: float) -> float:
    """The in-band share of the ``share`` of tasks scored highest, ties taken in proportion."""
    n = max(1, round(share * len(scores)))
    threshold = np.sort(scores)[::-1][n - 1]
    above = scores > threshold
    tied = scores == threshold
    return float((labels[above].sum() + (n - above.sum()) * labels[tied].mean()) / n)


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """The chance that an in-band task is scored above a task outside the band (ties count a half)."""
    inside, outside = scores[labels == 1], scores[labels == 0]
    return float(
        ((inside[:, None] > outside).sum() + 0.5 * (inside[:, None] == outside).sum()) / (len(inside) * len(outside))
    )


def evaluate(scores: np.ndarray, labels: np.ndarray, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """AUC and top-share in-band shares, each with its 95% bootstrap interval over tasks."""
    rng = np.random.default_rng(seed)
    measures = {"auc": auc, **{f"top {share:g}": lambda s, y, share=share: top_share(s, y, share) for share in SHARES}}
    draws = [rng.integers(len(scores), size=len(scores)) for _ in range(resamples)]
    return {
        name: (measure(scores, labels), *np.percentile([measure(scores[d], labels[d]) for d in draws], [2.5, 97.5]))
        for name, measure in measures.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dirs", type=Path, nargs="+", help="run folders of one testbed (two at least)")
    args = parser.parse_args()
    runs = {run_dir.name: played_tasks(run_dir) for run_dir in args.run_dirs}
    if len(runs) < 2 or any(not tasks for tasks in runs.values()):
        raise SystemExit("need two run folders or more, each with written-expression tasks played after epoch 0")
    labels = np.concatenate([[band for _, _, band in tasks] for tasks in runs.values()])
    print(f"{len(labels)} tasks of {len(runs)} runs ({', '.join(f'{n}: {len(t)}' for n, t in runs.items())}); "
          f"inside the band: {labels.mean():.3f}\n")  # fmt: skip
    print("| predictor (fitted on the other runs) | AUC | in the band, top quarter | in the band, top half |")
    print("|---|---|---|---|")
    for name, predictor in PREDICTORS.items():
        measured = evaluate(*leave_one_run_out(runs, predictor))
        cells = [f"{m:.3f} [{lo:.3f}, {hi:.3f}]" for m, lo, hi in measured.values()]
        print(f"| {name} | {' | '.join(cells)} |")
    digits = np.array([len(text.rpartition(" = ")[2].lstrip("-")) for tasks in runs.values() for _, text, _ in tasks])
    print("\n| digits of the answer | tasks | inside the band |\n|---|---|---|")
    for low, high in ((1, 1), (2, 2), (3, 3), (4, 4), (5, 6), (7, None)):
        chosen = (digits >= low) & (digits <= (high or digits.max()))
        span = f"{low}" if low == high else f"{low}-{high}" if high else f"{low} or more"
        print(f"| {span} | {chosen.sum()} | {labels[chosen].mean() if chosen.any() else float('nan'):.3f} |")


if __name__ == "__main__":
    main()
