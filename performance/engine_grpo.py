"""GRPO with rollouts from CTranslate2 (importance-sampling corrected) against rollouts from HF ``generate``.

    OMP_NUM_THREADS=2 python performance/engine_grpo.py [--steps 24] [--engines hf ctranslate2:int8:4]

An engine is ``NAME[:COMPUTE_TYPE[:SYNC_EVERY]]`` (CTranslate2's precision and optimizer steps between weight
syncs; default ``int8`` and 4, the training config's). The same fixed task set (reasoning-gym training items the
embedded SmolLM2 partly solves), the same seed, the same settings as the default config's agent (LoRA, G=4, 8
episodes per optimizer step), one optimizer step per ``train()`` call so every step's reward is recorded; engines
run one after the other in this process, each from the same starting weights. The held-out tasks (the validation
split, greedy, HF) are scored before training and after each engine's run; the rise is paired by task, with a 95%
bootstrap interval over tasks. Writes ``results/performance/<name>.json`` and ``<name>.png`` (reward per step and
its running mean, engines overlaid; ``--name engine_grpo`` by default).

Every step is its own ``train()`` call here, and a call's first rollout always syncs the engine: whatever
``SYNC_EVERY`` says, each step's rollouts come from the current weights (in ``genenv.train`` an epoch is one call).
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from genenv.agents.agent import Agent
from genenv.agents.grpo import GRPOAgentConfig, GRPOAgentTrainer
from genenv.benchmarks.base import get_benchmark
from genenv.evaluate import evaluate
from genenv.learning_curve import bootstrap_interval, paired_difference
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import load_policy
from genenv.machine import peak_rss_mb, uptime

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"
FAMILIES = ["basic_arithmetic@0-2", "chain_sum@0-2", "products@0-2"]
LEVEL0 = ["basic_arithmetic@0", "chain_sum@0", "products@0"]  # the setting where GRPO moved held-out scores


def fixed_tasks(adapter, count: int) -> list:
    """``count`` training items spread evenly over the adapter's ``train`` split: the fixed task set."""
    train = adapter.load_tasks("train")
    return [train[int(i * len(train) / count)] for i in range(count)]


def agent_config(engine: str, compute_type: str, sync_every: int, learning_rate: float, seed: int, **fields):
    """The agent settings of these benchmarks: the default config's (LoRA, G=4, 8 episodes per optimizer step), short
    turns, the task order fixed."""
    return GRPOAgentConfig(
        engine=engine,
        engine_compute_type=compute_type,
        engine_sync_every=sync_every,
        num_generations=4,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,
        max_new_tokens=64,
        max_completion_length=256,
        max_turns=2,
        learning_rate=learning_rate,
        use_lora=True,
        shuffle_tasks=False,
        seed=seed,
        **fields,
    )


def held_out(model, policy, adapter, tasks) -> list[float]:
    """Greedy score of ``model`` on each of ``tasks`` (HF generate, the benchmark's turn limit)."""
    agent = Agent(replace(policy, model=model), SamplingConfig(max_new_tokens=64), few_shot="generic")
    _, episodes = evaluate(adapter, agent, tasks, batch_size=8, max_turns=2, progress=False)
    return [float(e.info.get("score", e.reward)) for e in episodes]


def paired(before: list[float], after: list[float]) -> dict:
    """Mean of after - before per task, with a 95% bootstrap interval over tasks."""
    rise, low, high = paired_difference(before, after)
    return {"rise": rise, "ci95": [low, high]}


def curve(spec: str, tasks, validation, before: list[float], args) -> dict:
    parts = spec.split(":")
    name, compute_type, sync_every = parts + ["ctranslate2", "int8", "4"][len(parts) :]
    torch.manual_seed(args.seed)
    adapter = get_benchmark("reasoning_gym", families=args.families, partial_credit=True)
    policy = load_policy(args.model)
    config = agent_config(
        name,
        compute_type,
        int(sync_every),
        args.learning_rate,
        args.seed,
        output_dir=f"/tmp/genenv-engine-grpo-{spec.replace(':', '-')}",
        grpo_kwargs=json.loads(args.grpo_kwargs),
    )
    trainer = GRPOAgentTrainer(policy, adapter, config)
    rows = []
    per_step = trainer.tasks_per_step
    for step in range(args.steps):
        batch = [tasks[(step * per_step + k) % len(tasks)] for k in range(per_step)]
        metrics = trainer.train(batch, steps=1)
        rows.append(
            {
                "step": step,
                "reward": metrics["reward"],
                "step_time": metrics["step_time"],
                "engine_sync_seconds": metrics["engine_sync_seconds"],
                "completion_tokens": metrics["completion_tokens"],
                "sampling_logp_difference_mean": metrics.get("trl/sampling/sampling_logp_difference/mean"),
                "importance_sampling_ratio_mean": metrics.get("trl/sampling/importance_sampling_ratio/mean"),
                "load": uptime(),
            }
        )
        print(spec, json.dumps(rows[-1]), flush=True)
    after = held_out(trainer.model, policy, adapter, validation)
    return {
        "engine": spec,
        "resolved": trainer.engine_name,
        "reason": trainer.engine_reason,
        "steps": rows,
        "held_out_after": sum(after) / len(after),
        "held_out_rise": paired(before, after),
        "held_out_scores_after": after,
    }


def summarize(files: list[str], name: str) -> None:
    """One table over several results files (seeds): every run's held-out rise, then per setting the mean rise over
    runs with a 95% bootstrap interval over runs. Writes ``<name>.md``."""
    settings: dict[str, list[tuple[str, dict]]] = {}
    for file in files:
        record = json.loads(Path(file).read_text())
        no_is = '"vllm_importance_sampling_correction": false' in record["command"]
        for run in record["runs"]:
            setting = run["engine"].split(":")[0] + (" float32" if "float32" in run["engine"] else "")
            setting += " (no IS correction)" if no_is else ""
            settings.setdefault(setting, []).append((Path(file).name, run))
    lines = [
        "# GRPO with engine rollouts, over seeds",
        "",
        f"`python performance/engine_grpo.py --summarize {' '.join(Path(f).name for f in files)} --name {name}` "
        "(files in results/performance/). Held-out rise: greedy score after 24 steps minus before, same held-out "
        "tasks; training reward: mean of the first and of the last 6 steps.",
        "",
        "| setting | file | held-out rise [95% CI over tasks] | training reward, first -> last 6 steps |",
        "|---|---|---|---|",
    ]
    rng = np.random.default_rng(0)
    summary = []
    for setting, runs in settings.items():
        rises, gains = [], []
        for file, run in runs:
            rise, rewards = run["held_out_rise"], [s["reward"] for s in run["steps"]]
            first, last = np.mean(rewards[:6]), np.mean(rewards[-6:])
            rises.append(rise["rise"])
            gains.append(last - first)
            lines.append(f"| {setting} | {file} | {rise['rise']:+.3f} [{rise['ci95'][0]:+.3f}, {rise['ci95'][1]:+.3f}]"
                         f" | {first:.3f} -> {last:.3f} |")  # fmt: skip
        rises, gains = np.asarray(rises), np.asarray(gains)
        low, high = bootstrap_interval(rises, rng)
        gain_low, gain_high = bootstrap_interval(gains, rng)
        summary.append(f"| {setting} | {len(rises)} | {rises.mean():+.3f} [{low:+.3f}, {high:+.3f}] | "
                       f"{gains.mean():+.3f} [{gain_low:+.3f}, {gain_high:+.3f}] |")  # fmt: skip
    lines += ["", "| setting | runs | mean held-out rise | mean training-reward gain, last minus first 6 steps |",
              "|---|---|---|---|", *summary, "", "(95% bootstrap intervals over runs.)"]  # fmt: skip
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--tasks", type=int, default=8, help="the fixed task set, cycled")
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--engines", nargs="+", default=["hf", "ctranslate2:int8:4"])
    parser.add_argument("--validation", type=int, default=72, help="held-out tasks (validation split)")
    parser.add_argument("--families", nargs="+", default=FAMILIES, help="reasoning-gym families (name@levels)")
    parser.add_argument("--name", default="engine_grpo", help="results file name (.json, .png)")
    parser.add_argument("--seed", type=int, default=0, help="torch seed, LoRA initialisation, HF sampling")
    parser.add_argument("--grpo-kwargs", default="{}", help="JSON: extra trl.GRPOConfig fields for every engine")
    parser.add_argument("--summarize", nargs="+", metavar="FILE", help="only tabulate these results files")
    args = parser.parse_args()
    if args.summarize:
        return summarize(args.summarize, args.name)
    adapter = get_benchmark("reasoning_gym", families=args.families, partial_credit=True)
    tasks = fixed_tasks(adapter, args.tasks)
    validation = adapter.load_tasks("validation")[: args.validation]
    policy = load_policy(args.model)
    before = held_out(policy.model, policy, adapter, validation)
    del policy
    record = {
        "command": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} python performance/engine_grpo.py "
        f"--model {args.model} --steps {args.steps} --tasks {args.tasks} --learning-rate {args.learning_rate} "
        f"--engines {' '.join(args.engines)} --validation {args.validation} --families {' '.join(args.families)} "
        f"--name {args.name} --seed {args.seed} --grpo-kwargs '{args.grpo_kwargs}'",
        "torch_threads": torch.get_num_threads(),
        "tasks": [t.task_id for t in tasks],
        "load_start": uptime(),
        "held_out_tasks": len(validation),
        "held_out_before": sum(before) / len(before),
        "runs": [curve(spec, tasks, validation, before, args) for spec in args.engines],
        "load_end": uptime(),
        "peak_rss_mb": peak_rss_mb(),
    }
    for run in record["runs"]:
        steps = run["steps"]
        half = len(steps) // 2
        run["reward_first_half"] = sum(s["reward"] for s in steps[:half]) / max(half, 1)
        run["reward_second_half"] = sum(s["reward"] for s in steps[half:]) / max(len(steps) - half, 1)
        run["step_time_mean"] = sum(s["step_time"] for s in steps) / len(steps)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(record, indent=1) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for run in record["runs"]:
        steps = [s["step"] for s in run["steps"]]
        rewards = np.asarray([s["reward"] for s in run["steps"]])
        line = ax.plot(steps, rewards, marker="o", alpha=0.35, linewidth=0.8)[0]
        window = min(6, len(rewards))
        running = np.convolve(rewards, np.ones(window) / window, mode="valid")
        rise = run["held_out_rise"]
        label = f"{run['engine']} (held-out {rise['rise']:+.3f} [{rise['ci95'][0]:+.3f}, {rise['ci95'][1]:+.3f}])"
        ax.plot(steps[window - 1 :], running, color=line.get_color(), linewidth=2, label=label)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("episode reward (8 per step; 6-step mean)")
    ax.set_title(f"GRPO, {args.model}, reasoning-gym, same tasks, seed {args.seed}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / f"{args.name}.png", dpi=120)
    print(json.dumps({r["engine"]: (r["reward_first_half"], r["reward_second_half"], r["step_time_mean"],
                                    r["held_out_rise"]) for r in record["runs"]}))  # fmt: skip


if __name__ == "__main__":
    main()
