"""GRPO with rollouts from CTranslate2 (int8, importance-sampling corrected) against rollouts from HF ``generate``.

    OMP_NUM_THREADS=2 python benchmarks/engine_grpo.py [--steps 12] [--engines hf ctranslate2]

The same fixed task set (reasoning-gym training items the embedded SmolLM2 partly solves), the same seed, the
same settings as the default config's agent (LoRA, G=4, 8 episodes per optimizer step), one optimizer step per
``train()`` call so every step's reward is recorded; engines run one after the other in this process. Writes
``benchmarks/results/engine_grpo.json`` and ``engine_grpo.png`` (reward per step, both engines overlaid).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
from pathlib import Path

import torch

from genenv.agents.grpo import GRPOAgentConfig, GRPOAgentTrainer
from genenv.agents.models import load_policy
from genenv.benchmarks.base import get_benchmark

RESULTS = Path(__file__).resolve().parent / "results"
FAMILIES = ["basic_arithmetic@0-2", "chain_sum@0-2", "products@0-2"]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def curve(engine: str, tasks, steps: int, args) -> dict:
    torch.manual_seed(0)
    adapter = get_benchmark("reasoning_gym", families=FAMILIES)
    config = GRPOAgentConfig(
        engine=engine,
        engine_sync_every=1,
        num_generations=4,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,
        max_new_tokens=64,
        max_completion_length=256,
        max_turns=2,
        learning_rate=args.learning_rate,
        use_lora=True,
        shuffle_tasks=False,
        seed=0,
        output_dir=f"/tmp/genenv-engine-grpo-{engine}",
    )
    trainer = GRPOAgentTrainer(load_policy(args.model), adapter, config)
    rows = []
    per_step = trainer.tasks_per_step
    for step in range(steps):
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
        print(engine, json.dumps(rows[-1]), flush=True)
    return {"engine": trainer.engine_name, "reason": trainer.engine_reason, "steps": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--tasks", type=int, default=8, help="the fixed task set, cycled")
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--engines", nargs="+", default=["hf", "ctranslate2"])
    args = parser.parse_args()
    adapter = get_benchmark("reasoning_gym", families=FAMILIES)
    train = adapter.load_tasks("train")
    tasks = [train[int(i * len(train) / args.tasks)] for i in range(args.tasks)]
    record = {
        "command": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} python benchmarks/engine_grpo.py "
        f"--model {args.model} --steps {args.steps} --tasks {args.tasks} --learning-rate {args.learning_rate} "
        f"--engines {' '.join(args.engines)}",
        "torch_threads": torch.get_num_threads(),
        "tasks": [t.task_id for t in tasks],
        "load_start": uptime(),
        "runs": [curve(engine, tasks, args.steps, args) for engine in args.engines],
        "load_end": uptime(),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    for run in record["runs"]:
        steps = run["steps"]
        half = len(steps) // 2
        run["reward_first_half"] = sum(s["reward"] for s in steps[:half]) / max(half, 1)
        run["reward_second_half"] = sum(s["reward"] for s in steps[half:]) / max(len(steps) - half, 1)
        run["step_time_mean"] = sum(s["step_time"] for s in steps) / len(steps)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "engine_grpo.json").write_text(json.dumps(record, indent=1) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for run in record["runs"]:
        ax.plot([s["step"] for s in run["steps"]], [s["reward"] for s in run["steps"]], marker="o", label=run["engine"])
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("mean episode reward (8 episodes)")
    ax.set_title(f"GRPO, {args.model}, reasoning-gym, same tasks and seed")
    ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "engine_grpo.png", dpi=120)
    print(json.dumps({r["engine"]: (r["reward_first_half"], r["reward_second_half"], r["step_time_mean"])
                      for r in record["runs"]}))  # fmt: skip


if __name__ == "__main__":
    main()
