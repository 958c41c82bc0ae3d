"""The simulator's RWR update with and without activation checkpointing: peak memory, CPU time, the same update.

    OMP_NUM_THREADS=1 python performance/rwr_memory.py [--out FILE]

Each setting runs in its own process (a fresh allocator): the embedded SmolLM2 as the simulator, one RWR update of
8 examples whose prompts fill ``rwr.max_length`` (768 tokens), in batches of 4 (micro-batches of 1, the KL penalty and
cap on, the defaults). Recorded: the process's peak RSS above its RSS before the update (the kernel's high-water
mark, reset before it, as ``conversion_memory.py`` reads it), the CPU and wall seconds of the update, its mean loss and
the sum of the trained LoRA weights after it (equal when the update is the same).

Writes ``results/performance/rwr_memory.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conversion_memory import reset_peak, status_mb

OUT = Path(__file__).resolve().parents[1] / "results" / "performance" / "rwr_memory.json"


def measure(checkpointing: bool) -> dict[str, float]:
    """One update in this process."""
    from genenv.curriculum.rwr import RWRConfig, RWRTrainer
    from genenv.llm.models import load_policy

    trainer = RWRTrainer(load_policy("smollm2", seed=1), RWRConfig(activation_checkpointing=checkpointing))
    words = " ".join(f"word{i} plus {i * 7} equals" for i in range(150))  # about 1,400 tokens: cut to max_length
    examples = [
        {
            "messages": [{"role": "user", "content": f"Write a task. {words} {j}"}],
            "completion": '{"family": "chain_sum", "level": 2, "seed": 123456}',
            "weight": 1.0 + j,
        }
        for j in range(8)
    ]
    reset_peak()
    before = status_mb("VmRSS")
    cpu, wall = time.process_time(), time.perf_counter()
    stats = trainer.train(examples)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        "peak_rss_above_before_mb": status_mb("VmHWM") - before,
        "cpu_seconds": round(cpu, 1),
        "wall_seconds": round(wall, 1),
        "mean_loss": stats.mean_loss,
        "lora_weight_sum": sum(float(p.detach().double().sum()) for p in trainer.params),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--one", choices=["on", "off"], help=argparse.SUPPRESS)  # a child process's setting
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one == "on")))
        return
    from genenv.machine import uptime

    command = "OMP_NUM_THREADS=1 python performance/rwr_memory.py"
    result: dict[str, Any] = {"command": command, "uptime_before": uptime()}
    rows = {}
    for setting in ("off", "on"):
        child = subprocess.run([sys.executable, __file__, "--one", setting], capture_output=True, text=True, check=True)
        rows[setting] = json.loads(child.stdout.strip().splitlines()[-1])
        result[f"activation_checkpointing_{setting}"] = rows[setting]
        print(setting, json.dumps(rows[setting]), flush=True)
    result["uptime_after"] = uptime()
    on, off = rows["on"], rows["off"]
    result["same_update"] = on["lora_weight_sum"] == off["lora_weight_sum"] and on["mean_loss"] == off["mean_loss"]
    result["cpu_ratio_on_to_off"] = round(on["cpu_seconds"] / off["cpu_seconds"], 2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
