"""Peak memory and time of the agent's training steps by micro-batch and LoRA dropout, each condition in its own
process (peak RSS is per process), back to back.

    python performance/training_memory.py matrix --output results/performance/training_memory.json
    python performance/training_memory.py one --stage sft --batch 1 --accum 4 --lora-dropout 0.0   # one condition

Stages:
- ``sft``: one warm-start step of the main job's agent (SmolLM2-135M, ``python -m genenv.train
  +bench=reasoning_gym``'s settings, its worked exchanges in the prompt) on the 4 longest of the 128 expert traces
  its warm start draws: the main job's heaviest warm-start step.
- ``grpo``: 3 GRPO steps of 32 episodes (G = 8, temperature 0.7) of the ``experiments/agent_learning/agent_learning.py``
testbed,
  from its warm start of seed 0 (trained with LoRA dropout 0.05; computed and kept in ``$GENENV_STATE_DIR`` when
  missing), on the same tasks; each condition sets its own dropout on that adapter.

The update does not depend on the micro-batch (TRL normalises the loss over the optimizer step); a micro-batch of
several sequences pads them to the longest, and the padding is computed and stored for the backward pass too.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WARM_START_DROPOUT = 0.05
#: (stage, micro-batch, accumulation, LoRA dropout): the former defaults first, then the new ones
CONDITIONS = [
    ("sft", 4, 1, 0.05),
    ("sft", 4, 1, 0.0),
    ("sft", 1, 4, 0.05),
    ("sft", 1, 4, 0.0),
    ("grpo", 8, 4, 0.05),
    ("grpo", 1, 32, 0.0),
]


def sft_step(args: argparse.Namespace) -> dict[str, Any]:
    from dataclasses import replace

    from genenv.agents.grpo import GRPOAgentTrainer
    from genenv.agents.rollout import shown_exchanges
    from genenv.agents.warm_start import WarmStartConfig, WarmStartTrainer
    from genenv.envs.expert import expert_conversation
    from genenv.llm.models import load_policy
    from genenv.train import compose_setup

    config, adapter, _ = compose_setup(["+bench=reasoning_gym"])
    policy = load_policy(config.agent_model, seed=0)
    trainer = GRPOAgentTrainer(policy, adapter, replace(config.agent, lora_dropout=args.lora_dropout))
    tasks = adapter.load_tasks("train")
    random.Random(0).shuffle(tasks)
    conversations = [c for c in (expert_conversation(adapter, t) for t in tasks[:128]) if c]
    sft = WarmStartTrainer(
        trainer.model,
        policy.tokenizer,
        WarmStartConfig(per_device_train_batch_size=args.batch, gradient_accumulation_steps=args.accum),
        exchanges=shown_exchanges(adapter, config.agent.few_shot),
        output_dir=str(ROOT / "outputs" / "training_memory"),
    )
    rows, _ = sft.examples(conversations)
    longest = sorted(range(len(rows)), key=lambda i: -len(rows[i]["input_ids"]))[: args.batch * args.accum]
    start = time.perf_counter()
    result = sft.train([conversations[i] for i in longest])
    return {
        "seconds": time.perf_counter() - start,
        "tokens": result["tokens"],
        "trace_lengths": [len(rows[i]["input_ids"]) for i in longest],
        "loss": result["loss_first"],
    }


def grpo_steps(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from torch.nn import Identity

    sys.path.insert(0, str(ROOT / "experiments" / "agent_learning"))
    import agent_learning

    settings = {
        **agent_learning.AGENT,
        "per_device_train_batch_size": args.batch,
        "gradient_accumulation_steps": args.accum,
        "temperature": 0.7,
        "learning_rate": 1e-4,
        "lora_dropout": WARM_START_DROPOUT,
    }
    build_args = argparse.Namespace(
        seed=0, model="smollm2", answer_format="worked", warm_start=128, held_out_per_level=16
    )
    adapter, _, trainer, _ = agent_learning.build(build_args, settings)
    if args.lora_dropout != WARM_START_DROPOUT:  # the same warm start, the condition's dropout (0: none, as PEFT's)
        for module in trainer.model.modules():
            for name in list(getattr(module, "lora_dropout", {})):
                module.lora_dropout[name] = torch.nn.Dropout(args.lora_dropout) if args.lora_dropout else Identity()
    tasks = adapter.load_tasks("train")
    random.Random(1000).shuffle(tasks)
    metrics = trainer.train(tasks[: 3 * trainer.tasks_per_step], steps=3)
    return {
        "seconds_per_step": metrics["train_time"] / 3,
        "reward": metrics["reward"],
        "skipped_micro_batches": metrics.get("skipped_batches"),
    }


def one(args: argparse.Namespace) -> dict[str, Any]:
    from genenv.machine import load_average, peak_rss_mb

    load_before = load_average()
    record = {"stage": args.stage, "batch": args.batch, "accum": args.accum, "lora_dropout": args.lora_dropout}
    record |= sft_step(args) if args.stage == "sft" else grpo_steps(args)
    record |= {
        "peak_rss_mb": peak_rss_mb(),
        "load_before": load_before,
        "load_after": load_average(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    print(json.dumps(record), flush=True)
    return record


def matrix(args: argparse.Namespace) -> None:
    records = []
    for stage, batch, accum, dropout in CONDITIONS:
        command = [sys.executable, __file__, "one", "--stage", stage, "--batch", str(batch), "--accum", str(accum)]
        out = subprocess.run(
            [*command, "--lora-dropout", str(dropout)], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout
        records.append(json.loads(out.strip().splitlines()[-1]))
        print(json.dumps(records[-1]), flush=True)
        Path(args.output).write_text(json.dumps({"command": " ".join(sys.argv), "records": records}, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    single = sub.add_parser("one", help="one condition in this process")
    single.add_argument("--stage", choices=("sft", "grpo"), required=True)
    single.add_argument("--batch", type=int, required=True, help="sequences per micro-batch")
    single.add_argument("--accum", type=int, required=True, help="micro-batches per optimizer step")
    single.add_argument("--lora-dropout", type=float, required=True)
    every = sub.add_parser("matrix", help="every condition, each in its own process")
    every.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    {"one": one, "matrix": matrix}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
