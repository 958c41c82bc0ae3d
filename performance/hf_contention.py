"""Why HF ``generate`` slows down so much when another model job shares the cores, and what the thread settings do.

    GENENV_DATA_DIR=../shared/data python performance/hf_contention.py [--model smollm2]

Each engine (HF ``generate`` float32, CTranslate2 int8) is timed in a fresh child process on the same greedy
prompts (batches of 1 and 8, ``--max-new-tokens`` tokens each, end-of-turn ignored so every call makes the same
number of tokens), once alone and once while a competitor child (HF ``generate`` in a loop: a second model job)
runs beside it, under each thread setting:

* ``threads2``: ``OMP_NUM_THREADS=2`` (torch's default on these 2 cores), libgomp's default waiting (spin, then
  sleep);
* ``threads2_passive``: the same with ``OMP_WAIT_POLICY=PASSIVE`` (idle OpenMP threads sleep at once);
* ``threads1``: ``OMP_NUM_THREADS=1``: no parallel regions, nothing to wait for.

Measurer and competitor use the same setting (a machine whose jobs are all configured alike). Reports tokens/s
per cell and the slowdown (alone / contended) per setting. Writes ``results/performance/hf_contention.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

from genenv.machine import uptime

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"
SETTINGS = {
    "threads2": {"OMP_NUM_THREADS": "2"},
    "threads2_passive": {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"},
    "threads1": {"OMP_NUM_THREADS": "1"},
}


def _generator(engine: str, model: str, max_new_tokens: int):
    """(policy, generate) for ``engine`` in this process; every call makes exactly ``max_new_tokens`` tokens."""
    from genenv.llm.models import load_policy

    policy = load_policy(model)
    if engine == "hf":
        import torch

        @torch.no_grad()
        def generate(batch: list[list[int]]) -> int:
            width = max(len(row) for row in batch)
            pad = policy.tokenizer.pad_token_id
            ids = torch.tensor([[pad] * (width - len(row)) + row for row in batch])
            mask = torch.tensor([[0] * (width - len(row)) + [1] * len(row) for row in batch])
            out = policy.model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_new_tokens,
                                        min_new_tokens=max_new_tokens, do_sample=False, pad_token_id=pad)  # fmt: skip
            return (out.shape[1] - width) * len(batch)

        return policy, generate
    from genenv.llm.engines.ctranslate2 import CTranslate2Engine

    ct2 = CTranslate2Engine(policy, compute_type=engine.removeprefix("ct2_"))

    def generate(batch: list[list[int]]) -> int:
        tokens = [policy.tokenizer.convert_ids_to_tokens(row) for row in batch]
        results = ct2._generator.generate_batch(tokens, max_length=max_new_tokens, min_length=max_new_tokens,
                                                sampling_topk=1, include_prompt_in_result=False)  # fmt: skip
        return sum(len(r.sequences_ids[0]) for r in results)

    return policy, generate


def _prompts(policy, count: int) -> list[list[int]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from engine_throughput import prompts

    from genenv.config import model_few_shot

    return prompts(policy, count, model_few_shot(policy.name), "reasoning_gym:train")


def worker(args) -> None:
    """Child: time ``args.engine`` on the prompts, print one JSON line."""
    policy, generate = _generator(args.engine, args.model, args.max_new_tokens)
    pool = _prompts(policy, 8)
    generate(pool[:1])  # warm-up
    print("READY", flush=True)
    if args.ready_file:  # wait until the parent says the competitor runs
        while not Path(args.ready_file).exists():
            time.sleep(0.2)
    row = {}
    for size in args.batch_sizes:
        batches = [pool[i : i + size] for i in range(0, args.prompts, size)]
        start, tokens = time.perf_counter(), 0
        for batch in batches:
            tokens += generate(batch)
        row[f"batch_{size}"] = tokens / (time.perf_counter() - start)
    print("RESULT " + json.dumps(row), flush=True)


def competitor(args) -> None:
    """Child: HF ``generate`` at batch 1 in a loop until killed."""
    policy, generate = _generator("hf", args.model, args.max_new_tokens)
    pool = _prompts(policy, 8)
    generate(pool[:1])
    print("READY", flush=True)
    k = 0
    while True:
        generate(pool[k % len(pool) : k % len(pool) + 1])
        k += 1


def _child(mode: str, setting: str, args, extra: list[str]) -> subprocess.Popen:
    env = {key: value for key, value in os.environ.items() if key not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    env.update(SETTINGS[setting])
    command = [sys.executable, __file__, f"--{mode}", "--model", args.model, "--max-new-tokens",
               str(args.max_new_tokens), "--prompts", str(args.prompts), "--batch-sizes",
               *map(str, args.batch_sizes), *extra]  # fmt: skip
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(process: subprocess.Popen, prefix: str) -> str:
    for line in process.stdout:
        if line.startswith(prefix):
            return line[len(prefix) :].strip()
    raise RuntimeError(f"child exited without {prefix!r} (exit code {process.wait()})")


def measure(engine: str, setting: str, contended: bool, args) -> dict:
    ready = Path(f"/tmp/genenv-contention-{os.getpid()}-{engine}-{setting}-{int(contended)}")
    ready.unlink(missing_ok=True)
    rival = None
    if contended:
        rival = _child("competitor", setting, args, [])
        _wait_for(rival, "READY")
    child = _child("worker", setting, args, ["--engine", engine, "--ready-file", str(ready)])
    _wait_for(child, "READY")
    load = uptime()
    ready.touch()
    try:
        result = json.loads(_wait_for(child, "RESULT "))
    finally:
        child.wait()
        if rival is not None:
            os.killpg(rival.pid, signal.SIGKILL)
            rival.wait()
        ready.unlink(missing_ok=True)
    return {"tokens_per_s": result, "load_at_start": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--prompts", type=int, default=8, help="prompts timed per batch size")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--engines", nargs="+", default=["hf", "ct2_int8"])
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--competitor", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--engine", help=argparse.SUPPRESS)
    parser.add_argument("--ready-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if args.competitor:
        return competitor(args)

    record: dict = {
        "command": "GENENV_DATA_DIR=../shared/data python performance/hf_contention.py "
        + " ".join(
            f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in vars(args).items()
            if k in ("model", "max_new_tokens", "prompts", "batch_sizes", "engines", "settings")
        ),  # fmt: skip
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_start": uptime(),
        "settings": SETTINGS,
        "cells": {},
    }
    path = RESULTS / "hf_contention.json"
    for setting in args.settings:
        for engine in args.engines:
            cell = {
                "alone": measure(engine, setting, False, args),
                "contended": measure(engine, setting, True, args),
            }
            cell["slowdown"] = {
                size: cell["alone"]["tokens_per_s"][size] / cell["contended"]["tokens_per_s"][size]
                for size in cell["alone"]["tokens_per_s"]
            }
            record["cells"][f"{engine}/{setting}"] = cell
            print(f"{engine}/{setting}", json.dumps(cell), flush=True)
            path.write_text(json.dumps(record, indent=1) + "\n")
    record["load_end"] = uptime()
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
