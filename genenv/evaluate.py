"""Evaluate an agent on a benchmark with its official metric.

    python -m genenv.evaluate +bench=apibank [split=level-1] [stride=K] [limit=N] [model=tiny] [engine=hf]

``stride=K`` plays every K-th task of the split; ``limit=N`` then N of those, taken from the families in turn
(``limit_spread=false``: the first N; :func:`select_tasks` states the rule).

``engine`` (``auto``, ``hf``, ``ctranslate2``, ``openai``; :func:`genenv.llm.engines.resolve_engine`) generates the
agent's turns, ``engine_compute_type`` (``int8``/``float32``) is CTranslate2's. With ``engine=openai`` an
OpenAI-compatible server (the ``openai`` settings) plays the agent through its ``/completions`` endpoint, the prompts
rendered with ``model``'s tokenizer, which must be the served model's (:mod:`genenv.llm.engines.openai`).

Writes ``results.json`` (metrics, per-family success, every episode, how the adapter scored, wall time per task
and peak RSS) and ``results.md`` (a table) into the Hydra run folder (or ``output_dir=DIR``) and prints where they
are. Episodes are journalled there as they finish, so the same command with the same ``output_dir`` continues an
interrupted run.
Scores come from the adapter's ``reporting_adapter`` (API-Bank: the official text-to-call step, whatever the bench
config says).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from genenv.agents.agent import Agent, Episode
from genenv.benchmarks.base import BenchmarkAdapter, Score, Task
from genenv.config import CONFIG_DIR, episode_turns, official_adapter, require_bench
from genenv.console import progress as progress_bar
from genenv.envs.tool_env import ToolEnv
from genenv.llm.engines import OpenAIConfig, build_engine, resolve_engine
from genenv.llm.generation import SamplingConfig
from genenv.machine import load_average, peak_rss_mb
from genenv.pools import RESERVED_KEYS, JsonlPool

logger = logging.getLogger(__name__)


def evaluate(
    adapter: BenchmarkAdapter,
    agent: Agent,
    tasks: list[Task],
    *,
    batch_size: int = 8,
    max_turns: int | None = None,
    seed: int = 0,
    progress: bool = True,
) -> tuple[dict[str, Any], list[Episode]]:
    """Play every task once and aggregate with the adapter's official metrics; episodes come back in task order.

    Tasks are batched in order of prompt length, so a batch pads its prompts little (left padding to the longest
    prompt of a batch costs a model as much as real tokens)."""
    played: dict[int, Episode] = {}
    envs = [ToolEnv(adapter, tasks=tasks, max_turns=max_turns) for _ in range(min(batch_size, len(tasks)))]
    order = length_order(adapter, tasks)
    bar = progress_bar(total=len(tasks), desc=f"evaluate {adapter.name}", unit="task", disable=not progress)
    for start in range(0, len(tasks), batch_size):
        chunk = order[start : start + batch_size]
        played.update(zip(chunk, agent.rollout(envs[: len(chunk)], [tasks[i] for i in chunk], seed=seed + start)))
        scored = [e.info.get("score", e.reward) for e in played.values()]  # the official score, as returned below
        bar.set_postfix(score=f"{sum(scored) / len(scored):.3f}")  # before the update, which draws the bar
        bar.update(len(chunk))
    bar.close()
    episodes = [played[i] for i in range(len(tasks))]
    scores = [Score(e.info.get("score", e.reward), e.info.get("score_breakdown", {})) for e in episodes]
    return summarise(adapter, tasks, scores), episodes


def select_tasks(
    adapter: BenchmarkAdapter, tasks: list[Task], stride: int = 1, limit: int | None = None, spread: bool = True
) -> list[Task]:
    """The tasks an evaluation plays, in split order: every ``stride``-th task of ``tasks``, then, with ``limit``,
    ``limit`` of those. ``spread``: taken from the families in turn (each family's first task, in the order the
    families first appear in the split, then each one's second, ...; a family with no task left is passed over), so
    every family gets ``limit // F`` tasks or one more while it has them; otherwise the first ``limit``. Nothing is
    random: the same split and settings give the same tasks."""
    for name, value in (("stride", stride), ("limit", limit)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    chosen = tasks[::stride]
    if limit is None or limit >= len(chosen):
        return chosen
    if not spread:
        return chosen[:limit]
    by_family: dict[str, list[int]] = defaultdict(list)
    for index, task in enumerate(chosen):
        by_family[adapter.family(task)].append(index)
    picked: list[int] = []
    for round_ in range(max(len(indices) for indices in by_family.values())):
        picked += [indices[round_] for indices in by_family.values() if round_ < len(indices)][: limit - len(picked)]
    return [chosen[index] for index in sorted(picked)]


def length_order(adapter: BenchmarkAdapter, tasks: list[Task]) -> list[int]:
    """Task indices by prompt length (tools included): the order :func:`evaluate` batches them in."""
    return sorted(range(len(tasks)), key=lambda i: len(tasks[i].prompt) + len(json.dumps(adapter.tools(tasks[i]))))


def summarise(adapter: BenchmarkAdapter, tasks: list[Task], scores: list[Score]) -> dict[str, Any]:
    """The adapter's official metrics over ``scores`` (in task order) and the mean score per family."""
    per_family: dict[str, list[float]] = defaultdict(list)
    for task, score in zip(tasks, scores, strict=True):
        per_family[adapter.family(task)].append(score.value)
    return {
        "metrics": adapter.aggregate(tasks, scores),
        "per_family": {family: {"n": len(v), "score": sum(v) / len(v)} for family, v in sorted(per_family.items())},
    }


def evaluate_with_journal(
    adapter: BenchmarkAdapter,
    agent: Agent,
    tasks: list[Task],
    journal: str | os.PathLike[str],
    *,
    batch_size: int = 8,
    max_turns: int | None = None,
    seed: int = 0,
    progress: bool = True,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """:func:`evaluate`, with every batch's :func:`episode_summary` records appended to ``journal`` (a
    :class:`~genenv.pools.JsonlPool` file: a batch is stored whole or not at all, a torn write is quarantined) as
    the batch ends. Tasks the journal already holds (an interrupted evaluation of the same tasks) are not played
    again; batches and seeds are those of an uninterrupted :func:`evaluate`. Returns the summary and every task's
    record, in task order."""
    path = Path(journal)
    ids = [task.task_id for task in tasks]
    if len(set(ids)) != len(ids):
        raise ValueError("tasks with the same task_id cannot be told apart in a journal")
    pool = JsonlPool(path.parent, path.name.removesuffix(".jsonl"))
    if pending := pool.uncommitted():  # a batch appended whole, killed before its commit: keep it
        pool.commit(pending[-1]["epoch"])
    done = {r["task_id"]: {k: v for k, v in r.items() if k not in RESERVED_KEYS} for r in pool.records()}
    if unknown := sorted(done.keys() - set(ids)):
        raise ValueError(
            f"{path} holds episodes of {len(unknown)} tasks not evaluated now (e.g. {unknown[0]!r}): it belongs to "
            "another evaluation (split, stride, limit); give this one another output folder"
        )
    if done:
        logger.info("%s: continuing, %d of %d tasks already played", path, len(done), len(tasks))
    order = length_order(adapter, tasks)
    bar = progress_bar(
        total=len(tasks), initial=len(done), desc=f"evaluate {adapter.name}", unit="task", disable=not progress
    )
    batch = -1 if pool.committed_epoch is None else pool.committed_epoch
    for start in range(0, len(tasks), batch_size):
        todo = [tasks[i] for i in order[start : start + batch_size] if tasks[i].task_id not in done]
        if not todo:
            continue
        _, episodes = evaluate(
            adapter, agent, todo, batch_size=batch_size, max_turns=max_turns, seed=seed + start, progress=False
        )
        records = [episode_summary(adapter, episode) for episode in episodes]
        batch += 1
        pool.append(json.loads(json.dumps(records, default=str)), batch)  # durable, whole or not at all
        pool.commit(batch)
        done.update((record["task_id"], record) for record in records)
        bar.update(len(todo))
    bar.close()
    records = [done[task_id] for task_id in ids]
    scores = [Score(record["score"], record["breakdown"]) for record in records]
    return summarise(adapter, tasks, scores), records


def episode_summary(adapter: BenchmarkAdapter, episode: Episode) -> dict[str, Any]:
    """A JSON-ready summary of one episode for ``results.json`` (actions, errors, score and its breakdown)."""
    return {
        "task_id": episode.task.task_id,
        "family": adapter.family(episode.task),
        "score": float(episode.info.get("score", episode.reward)),
        "reward": episode.reward,
        "truncated": episode.truncated,
        "breakdown": episode.info.get("score_breakdown", {}),
        "actions": [turn.action for turn in episode.trajectory.turns],
        "errors": [turn.error for turn in episode.trajectory.turns],
    }


def markdown_table(title: str, metrics: dict[str, float], per_family: dict[str, dict]) -> str:
    lines = [f"# {title}", "", "| metric | value |", "|---|---|"]
    lines += [f"| {k} | {v:.4f} |" if isinstance(v, float) else f"| {k} | {v} |" for k, v in metrics.items()]
    lines += ["", "| family | n | score |", "|---|---|---|"]
    lines += [f"| {family} | {row['n']} | {row['score']:.4f} |" for family, row in per_family.items()]
    return "\n".join(lines) + "\n"


JOURNAL = "episodes.jsonl"
CONFIG_FILE = "evaluation_config.json"


@hydra.main(config_path=str(CONFIG_DIR), config_name="evaluate", version_base="1.3")
def main(cfg: DictConfig) -> None:
    run(cfg)


def run(cfg: DictConfig) -> Path:
    """Evaluate as ``cfg`` says; write ``results.json`` and ``results.md`` into ``cfg.output_dir`` and return it.

    Episodes are journalled in ``episodes.jsonl`` there as they finish: run again with the same ``output_dir`` and
    an interrupted evaluation continues (an evaluation with other settings is refused there)."""
    bench = require_bench(cfg)
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in OmegaConf.to_container(cfg, resolve=True).items() if k != "output_dir"}
    claim_output_dir(out, settings)
    import torch

    from genenv.llm.models import load_policy

    # reported numbers are scored officially, even where the bench config reads text leniently for training
    adapter = official_adapter(cfg)
    split = cfg.split or cfg.category or bench.split
    tasks = select_tasks(adapter, adapter.load_tasks(split), cfg.stride, cfg.limit, cfg.limit_spread)
    policy = load_policy(cfg.model.name)
    engine, _ = resolve_engine(cfg.engine, device=policy.model.device, purpose="generate")
    agent = Agent(
        policy,
        SamplingConfig(max_new_tokens=cfg.max_new_tokens),
        few_shot=cfg.model.get("few_shot", "generic"),
        engine=build_engine(
            engine,
            policy,
            compute_type=cfg.engine_compute_type,
            openai=OpenAIConfig(**OmegaConf.to_container(cfg.openai, resolve=True)) if engine == "openai" else None,
        ),
    )
    max_turns = episode_turns(cfg, cfg.max_turns)
    continued, began = (out / JOURNAL).exists(), time.perf_counter()
    summary, records = evaluate_with_journal(
        adapter, agent, tasks, out / JOURNAL, batch_size=cfg.batch_size, max_turns=max_turns, seed=cfg.seed
    )
    seconds = time.perf_counter() - began
    result = {
        "benchmark": bench.name,
        "split": split,
        "model": cfg.model.name,
        "engine": engine,
        "n_tasks": len(tasks),
        "scoring": adapter.scoring_mode(),
        **summary,
        "cost": {  # of this invocation; a continued evaluation's time covers only the tasks it played
            "seconds": seconds,
            "seconds_per_task": None if continued else seconds / len(tasks),
            "continued": continued,
            "peak_rss_mb": peak_rss_mb(),
            "torch_threads": torch.get_num_threads(),
            "cpu_count": os.cpu_count(),
            "load_average_at_end": load_average(),
        },
        "config": OmegaConf.to_container(cfg, resolve=True),
        "episodes": records,
    }
    (out / "results.json").write_text(json.dumps(result, indent=1, default=str))
    title = f"{bench.name} {split}, model {cfg.model.name}, {len(tasks)} tasks"
    (out / "results.md").write_text(markdown_table(title, summary["metrics"], summary["per_family"]))
    print(markdown_table(title, summary["metrics"], summary["per_family"]))
    print(f"results written to {out / 'results.json'} and {out / 'results.md'}")
    return out


def claim_output_dir(out: Path, settings: dict[str, Any]) -> None:
    """Record an evaluation's settings in ``out``, or check them against those of the evaluation it continues there
    (``ValueError`` naming the settings that differ)."""
    path = out / CONFIG_FILE
    if path.exists():
        earlier = json.loads(path.read_text())
        if changed := sorted(k for k in earlier.keys() | settings.keys() if earlier.get(k) != settings.get(k)):
            raise ValueError(
                f"{out} holds an evaluation with other settings ({', '.join(changed)} differ); continue it with "
                f"the same settings (see {path}) or give this one another output_dir"
            )
    elif journals := sorted(out.glob("*.jsonl")):  # JOURNAL, or one per BFCL category (experiments/zero_shot/)
        raise FileExistsError(f"{journals[0]} exists without {CONFIG_FILE}: give this evaluation another output_dir")
    else:
        path.write_text(json.dumps(settings, indent=1, default=str))


if __name__ == "__main__":
    main()
