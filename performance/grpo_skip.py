"""What skipping zero-advantage micro-batches saves in a GRPO step (``GRPOAgentConfig.skip_zero_advantage``).

    OMP_NUM_THREADS=1 python performance/grpo_skip.py [--model qwen05] [--steps 12]

The curriculum experiment's agent settings (G=8, one task per optimizer step, temperature 0.6, LoRA) on a fixed set
of reasoning-gym tasks spread over levels 0-4, so some groups are all solved or all failed. The same steps run twice
in this process, back to back from the same starting weights: skip off (TRL computes every micro-batch), then on.
Each step is one ``train()`` call, so every step's time, reward and skipped micro-batches are recorded. The update
is the same either way (tests/test_grpo.py checks it to the bit); only the random stream of LoRA dropout moves, so
samples differ after the first skipped step, and steps are compared by kind: groups with equal rewards (skippable)
and the rest. Writes ``results/performance/<name>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np
import torch
from engine_grpo import fixed_tasks

from genenv.agents.grpo import GRPOAgentConfig, GRPOAgentTrainer
from genenv.benchmarks.base import get_benchmark
from genenv.config import model_few_shot
from genenv.llm.models import load_policy
from genenv.machine import peak_rss_mb, uptime

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"
FAMILIES = ["basic_arithmetic@0-4", "chain_sum@0-4", "products@0-4"]  # the curriculum experiment's ladder


def run(args, skip: bool, adapter, tasks) -> list[dict]:
    torch.manual_seed(args.seed)
    config = GRPOAgentConfig(
        engine="hf",
        num_generations=8,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=2,
        temperature=0.6,
        max_new_tokens=128,
        max_completion_length=512,
        max_turns=1,
        learning_rate=2e-5,
        use_lora=True,
        shuffle_tasks=False,
        few_shot=model_few_shot(args.model),
        seed=args.seed,
        skip_zero_advantage=skip,
        output_dir=f"/tmp/genenv-grpo-skip-{skip}",
    )
    trainer = GRPOAgentTrainer(load_policy(args.model), adapter, config)
    rows = []
    for step, task in enumerate(tasks):
        metrics = trainer.train([task], steps=1)
        rewards = [e.reward for e in trainer.episodes]
        rows.append(
            {
                "step": step,
                "task": task.task_id,
                "rewards": rewards,
                "uniform": len(set(rewards)) == 1,
                "skipped_batches": metrics["skipped_batches"],
                "step_time": metrics["step_time"],
                "load": uptime(),
            }
        )
        print(skip, json.dumps(rows[-1]), flush=True)
    return rows


def by_kind(rows: list[dict]) -> dict:
    out = {}
    for kind, uniform in (("uniform", True), ("informative", False)):
        times = [r["step_time"] for r in rows if r["uniform"] == uniform]
        out[kind] = {"steps": len(times), "mean_step_time": float(np.mean(times)) if times else None}
    out["all"] = {"steps": len(rows), "mean_step_time": float(np.mean([r["step_time"] for r in rows]))}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen05")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--name", default="grpo_skip")
    args = parser.parse_args()
    adapter = get_benchmark("reasoning_gym", families=FAMILIES, partial_credit=True)
    tasks = fixed_tasks(adapter, args.steps)  # one task per step
    record = {
        "command": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} python performance/grpo_skip.py "
        f"--model {args.model} --steps {args.steps} --seed {args.seed} --name {args.name}",
        "torch_threads": torch.get_num_threads(),
        "load_start": uptime(),
        "runs": {},
    }
    for skip in (False, True):
        rows = run(args, skip, adapter, tasks)
        record["runs"]["skip" if skip else "no_skip"] = {"steps": rows, "by_kind": by_kind(rows)}
    off, on = (record["runs"][k]["by_kind"] for k in ("no_skip", "skip"))
    for kind in ("uniform", "informative"):  # mean step time without the skip over mean step time with it
        times = off[kind]["mean_step_time"], on[kind]["mean_step_time"]
        record[f"{kind}_step_ratio"] = times[0] / times[1] if None not in times else None
    record["load_end"] = uptime()
    record["peak_rss_mb"] = peak_rss_mb()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: record[k] for k in ("uniform_step_ratio", "informative_step_ratio")}))
    print(json.dumps({k: v["by_kind"] for k, v in record["runs"].items()}, indent=1))


if __name__ == "__main__":
    main()
