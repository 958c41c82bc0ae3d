"""Evaluate an agent on a benchmark with its official metric.

    python -m genenv.evaluate +bench=apibank [split=level-1] [stride=K] [limit=N] [model=tiny] [engine=hf]

``engine`` (``auto``, ``hf``, ``ctranslate2``; :func:`genenv.agents.engines.resolve_engine`) generates the
agent's turns, ``engine_compute_type`` (``int8``/``float32``) is CTranslate2's.

Writes ``results.json`` (metrics, per-family success, every episode, how the adapter scored) and
``results.md`` (a table) into the Hydra run folder and prints where they are. Scores come from the
adapter's ``reporting_adapter`` (API-Bank: the official text-to-call step, whatever the bench config says).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from genenv.agents.agent import Agent, Episode
from genenv.agents.engines import build_engine, resolve_engine
from genenv.agents.generation import SamplingConfig
from genenv.benchmarks.base import BenchmarkAdapter, Score, Task, get_benchmark
from genenv.config import CONFIG_DIR, adapter_data_dir, adapter_options, require_bench
from genenv.envs.tool_env import ToolEnv

logger = logging.getLogger(__name__)


def evaluate(
    adapter: BenchmarkAdapter,
    agent: Agent,
    tasks: list[Task],
    *,
    batch_size: int = 8,
    max_turns: int = 4,
    seed: int = 0,
    progress: bool = True,
) -> tuple[dict[str, Any], list[Episode]]:
    """Play every task once and aggregate with the adapter's official metrics; episodes come back in task order.

    Tasks are batched in order of prompt length, so a batch pads its prompts little (left padding to the longest
    prompt of a batch costs a model as much as real tokens)."""
    played: dict[int, Episode] = {}
    envs = [ToolEnv(adapter, tasks=tasks, max_turns=max_turns) for _ in range(min(batch_size, len(tasks)))]
    order = sorted(range(len(tasks)), key=lambda i: len(tasks[i].prompt) + len(json.dumps(adapter.tools(tasks[i]))))
    bar = tqdm(total=len(tasks), desc=f"evaluate {adapter.name}", unit="task", disable=not progress)
    for start in range(0, len(tasks), batch_size):
        chunk = order[start : start + batch_size]
        played.update(zip(chunk, agent.rollout(envs[: len(chunk)], [tasks[i] for i in chunk], seed=seed + start)))
        bar.update(len(chunk))
        bar.set_postfix(score=f"{sum(e.reward for e in played.values()) / len(played):.3f}")
    bar.close()
    episodes = [played[i] for i in range(len(tasks))]
    scores = [Score(e.info.get("score", e.reward), e.info.get("score_breakdown", {})) for e in episodes]
    metrics = adapter.aggregate(tasks, scores)
    per_family: dict[str, list[float]] = defaultdict(list)
    for task, score in zip(tasks, scores):
        per_family[adapter.family(task)].append(score.value)
    summary = {
        "metrics": metrics,
        "per_family": {family: {"n": len(v), "score": sum(v) / len(v)} for family, v in sorted(per_family.items())},
    }
    return summary, episodes


def episode_summary(adapter: BenchmarkAdapter, episode: Episode) -> dict[str, Any]:
    """A JSON-ready summary of one episode for ``results.json`` (actions, errors, score breakdown)."""
    return {
        "task_id": episode.task.task_id,
        "family": adapter.family(episode.task),
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


@hydra.main(config_path=str(CONFIG_DIR), config_name="evaluate", version_base="1.3")
def main(cfg: DictConfig) -> None:
    bench = require_bench(cfg)
    from genenv.agents.models import load_policy

    # reported numbers are scored officially, even where the bench config reads text leniently for training
    adapter = get_benchmark(bench.name, data_dir=adapter_data_dir(cfg), **adapter_options(cfg)).reporting_adapter()
    split = cfg.split or cfg.category or bench.split
    tasks = adapter.load_tasks(split)[:: int(cfg.stride)]
    if cfg.limit:
        tasks = tasks[: int(cfg.limit)]
    policy = load_policy(cfg.model.name)
    engine, _ = resolve_engine(cfg.engine, device=policy.model.device, purpose="generate")
    agent = Agent(
        policy,
        SamplingConfig(max_new_tokens=cfg.max_new_tokens),
        few_shot=cfg.model.get("few_shot", "generic"),
        engine=build_engine(engine, policy, compute_type=cfg.engine_compute_type),
    )
    summary, episodes = evaluate(
        adapter, agent, tasks, batch_size=cfg.batch_size, max_turns=cfg.max_turns or bench.max_turns, seed=cfg.seed
    )
    out = Path(cfg.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = {
        "benchmark": bench.name,
        "split": split,
        "model": cfg.model.name,
        "engine": engine,
        "n_tasks": len(tasks),
        "scoring": adapter.scoring_mode(),
        **summary,
        "config": OmegaConf.to_container(cfg, resolve=True),
        "episodes": [episode_summary(adapter, episode) for episode in episodes],
    }
    (out / "results.json").write_text(json.dumps(result, indent=1, default=str))
    title = f"{bench.name} {split}, model {cfg.model.name}, {len(tasks)} tasks"
    (out / "results.md").write_text(markdown_table(title, summary["metrics"], summary["per_family"]))
    print(markdown_table(title, summary["metrics"], summary["per_family"]))
    print(f"results written to {out / 'results.json'} and {out / 'results.md'}")


if __name__ == "__main__":
    main()
