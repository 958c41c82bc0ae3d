"""How fast does each engine write the simulator's tasks? Valid tasks per minute and per core-minute, same prompts.

    # every condition, back to back, each in its own process: engines x threads, quiet and beside one busy core
    python performance/simulator_engines.py matrix --batches 2 --output results/performance/simulator_engines.json \\
        -- +bench=reasoning_gym model=qwen05 simulator.batch_size=16 simulator.max_new_tokens=64
    # where a call's time goes: prefill and decode tokens/s of hf and of llama.cpp's GGUF types, same prompts
    python performance/simulator_engines.py prefill --threads 1 --output results/performance/simulator_prefill.json \\
        -- +bench=reasoning_gym model=qwen05
    # one condition in this process (what ``matrix`` runs)
    python performance/simulator_engines.py one --engine llamacpp --threads 1 --batches 2 -- +bench=reasoning_gym ...

The simulator is the one ``python -m genenv.train OVERRIDES`` builds (untrained); each condition asks for
``--batches`` batches of proposals as an epoch 0 does (families drawn uniformly from ``--seed``, no success history),
so every condition writes from the same prompts. Constrained calls (the adapter's JSON schemas) run on ``hf``
(lm-format-enforcer) or ``llamacpp`` (llama.cpp's grammar); ``--free`` drops the schemas, where ``ctranslate2`` can
serve too. The first batch warms the engine up (loads, conversions, the schema's vocabulary tree) and is timed
apart. A "busy" condition runs beside one single-thread torch job (a matrix product in a loop): another training
job on a shared machine. ``OMP_WAIT_POLICY`` and thread counts are set per condition before its process starts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: (engine, threads, OMP_WAIT_POLICY or None) of ``matrix``; hf and ctranslate2 take their threads from torch
CONDITIONS = [
    ("hf", 1, None),
    ("hf", 2, None),
    ("llamacpp", 1, None),
    ("llamacpp", 2, None),
    ("llamacpp", 2, "passive"),
    ("ctranslate2", 1, None),  # free calls only (constrained ones fall back to hf)
    ("ctranslate2", 2, None),
]


def cpu_seconds() -> float:
    """This process's CPU time so far, every thread counted."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def one(args: argparse.Namespace) -> dict[str, Any]:
    """Measure one condition in this process; prints its record as one JSON line."""
    import numpy as np
    import torch

    from genenv.machine import load_average
    from genenv.train import compose_setup

    torch.set_num_threads(args.threads)
    config, adapter, policy = compose_setup(args.overrides)
    config = replace(config, simulator=replace(config.simulator, engine=args.engine, engine_threads=args.threads))
    simulator = config.simulator.build(policy, config.curriculum.alpha)
    if args.free:
        simulator.constrained = False
    rng = np.random.default_rng(args.seed)
    load_before = load_average()
    batches = []
    for _ in range(args.batches + 1):
        wall, cpu = time.perf_counter(), cpu_seconds()
        proposals = simulator.propose(adapter, rng=rng, success=None)
        tokens = sum(len(policy.tokenizer(p.raw, add_special_tokens=False)["input_ids"]) for p in proposals)
        batches.append({
            "seconds": time.perf_counter() - wall,
            "cpu_seconds": cpu_seconds() - cpu,
            "proposals": len(proposals),
            "valid": sum(p.task is not None for p in proposals),
            "new_tokens": tokens,
            "reject_reasons": [p.reject_reason[:200] for p in proposals if p.task is None],
        })  # fmt: skip
    timed = batches[1:]
    seconds, cpu = sum(b["seconds"] for b in timed), sum(b["cpu_seconds"] for b in timed)
    valid, proposals = sum(b["valid"] for b in timed), sum(b["proposals"] for b in timed)
    record = {
        "engine": simulator.engine_name,
        "requested": args.engine,
        "threads": args.threads,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "constrained": simulator.constrained,
        "busy_neighbour": args.busy_label,
        "model": config.simulator_model,
        "warm_up_seconds": batches[0]["seconds"],
        "proposals": proposals,
        "valid": valid,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "valid_per_minute": 60 * valid / seconds,
        "valid_per_core_minute": 60 * valid / cpu,
        "new_tokens_per_second": sum(b["new_tokens"] for b in timed) / seconds,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "batches": batches,
    }
    print(json.dumps(record), flush=True)
    return record


def prefill(args: argparse.Namespace) -> None:
    """Where a simulator call's time goes: prompt evaluation (prefill) and one-token steps (decode), tokens per
    second, for HF (float32, rows one by one and as one batch) and llama.cpp (the shipped GGUF and exports of the
    same weights in Q8_0 and F32), on ``--prompts`` simulator prompts of epoch 0, in this process, one after another.
    """
    import tempfile

    import llama_cpp
    import numpy as np
    import torch

    from genenv.llm.engines.llamacpp import export_gguf
    from genenv.llm.engines.weights import merged_state_dict
    from genenv.llm.generation import render_chat
    from genenv.llm.models import _default_cache_root, embedded_gguf_path
    from genenv.machine import load_average
    from genenv.train import compose_setup

    torch.set_num_threads(args.threads)
    config, adapter, policy = compose_setup(args.overrides)
    simulator = config.simulator.build(policy, config.curriculum.alpha)
    rng = np.random.default_rng(args.seed)
    families = adapter.families()
    tokenizer = policy.tokenizer
    prompts = []
    for _ in range(args.prompts):
        chat = simulator.messages(adapter, families[int(rng.integers(len(families)))], rng, None)
        prompts.append(tokenizer(render_chat(tokenizer, chat), add_special_tokens=False)["input_ids"])
    tokens = sum(len(p) for p in prompts)
    load_before = load_average()
    rows = []
    model = policy.model.eval()
    with torch.no_grad():
        model(input_ids=torch.tensor([prompts[0][:32]]))  # warm-up
        start = time.perf_counter()
        for p in prompts:
            model(input_ids=torch.tensor([p]), logits_to_keep=1)
        rows.append(
            {
                "engine": "hf float32, one row at a time",
                "prefill_tokens_per_second": tokens / (time.perf_counter() - start),
            }
        )
        width = min(len(p) for p in prompts)
        start = time.perf_counter()
        model(input_ids=torch.tensor([p[:width] for p in prompts]), logits_to_keep=1)
        rows.append({"engine": f"hf float32, one batch ({len(prompts)} x {width})",
                     "prefill_tokens_per_second": len(prompts) * width / (time.perf_counter() - start)})  # fmt: skip
    ggufs = {}
    shipped = embedded_gguf_path(config.simulator_model, _default_cache_root())
    if shipped is not None:
        ggufs[f"llama.cpp shipped {shipped.name}"] = shipped
    folder = Path(tempfile.mkdtemp(prefix="genenv-prefill-"))
    state = merged_state_dict(model)
    for compute_type, label in (("int8", "Q8_0"), ("float32", "F32")):
        path = folder / f"{compute_type}.gguf"
        export_gguf(state, model.config, tokenizer, path, compute_type=compute_type, source=shipped)
        ggufs[f"llama.cpp export {label}"] = path
    for label, path in ggufs.items():
        llm = llama_cpp.Llama(model_path=str(path), n_ctx=4096, n_threads=args.threads,
                              n_threads_batch=args.threads, verbose=False)  # fmt: skip
        llm.eval(prompts[0][:32])  # warm-up
        start = time.perf_counter()
        for p in prompts:
            llm.reset()
            llm.eval(p)
        speed = tokens / (time.perf_counter() - start)
        start = time.perf_counter()
        for token in prompts[0][:32]:
            llm.eval([token])
        rows.append({"engine": label, "prefill_tokens_per_second": speed,
                     "decode_tokens_per_second": 32 / (time.perf_counter() - start)})  # fmt: skip
        llm.close()
    result = {
        "command": " ".join(["python performance/simulator_engines.py", *sys.argv[1:]]),
        "threads": args.threads,
        "prompt_tokens": [len(p) for p in prompts],
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "rows": rows,
    }
    print(json.dumps(result, indent=1))
    if args.output:
        args.output.write_text(json.dumps(result, indent=1) + "\n")


def busy_neighbour() -> subprocess.Popen:
    """One single-thread torch job: a 512 x 512 matrix product in a loop, until killed."""
    code = "import torch\ntorch.set_num_threads(1)\na = torch.randn(512, 512)\nwhile True:\n    a = torch.tanh(a @ a)\n"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", code], env=env)


def matrix(args: argparse.Namespace) -> None:
    """Every condition of :data:`CONDITIONS`, quiet and busy, each in its own process, back to back."""
    engines = set(args.engines)
    records = []
    for busy in (False, True):
        neighbour = busy_neighbour() if busy else None
        try:
            if neighbour is not None:
                time.sleep(5)
            for engine, threads, wait in CONDITIONS:
                if engine not in engines or (engine == "ctranslate2" and not args.free):
                    continue
                env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
                env.pop("OMP_WAIT_POLICY", None)
                if wait is not None:
                    env["OMP_WAIT_POLICY"] = wait
                command = [sys.executable, __file__, "one", "--engine", engine, "--threads", str(threads),
                           "--batches", str(args.batches), "--seed", str(args.seed),
                           "--busy-label", "one single-thread torch job" if busy else "none"]  # fmt: skip
                command += ["--free"] if args.free else []
                done = subprocess.run([*command, "--", *args.overrides], env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
                records.append(json.loads(done.stdout.strip().splitlines()[-1]))
                write(args.output, records)
                r = records[-1]
                print(
                    f"{engine:9s} threads {threads} wait {wait or '-':7s} busy {busy!s:5s}: {r['valid']}/"
                    f"{r['proposals']} valid, {r['seconds']:.1f} s, {r['valid_per_core_minute']:.1f} valid/core-min",
                    flush=True,
                )
        finally:
            if neighbour is not None:
                neighbour.kill()
                neighbour.wait()


def write(output: Path, records: list[dict[str, Any]]) -> None:
    """The records so far, each with its speed against hf on 1 thread beside the same neighbour (rewritten after
    every condition, so an interrupted matrix keeps what it measured)."""
    from genenv.machine import load_average

    baseline = {r["busy_neighbour"]: r for r in records if r["requested"] == "hf" and r["threads"] == 1}
    for r in records:
        base = baseline.get(r["busy_neighbour"])
        r["valid_per_minute_vs_hf_1_thread"] = r["valid_per_minute"] / base["valid_per_minute"] if base else None
    result = {
        "command": " ".join(["python performance/simulator_engines.py", *sys.argv[1:]]),
        "cores": os.cpu_count(),
        "load_average_end": load_average(),
        "records": records,
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(result, indent=1) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    single = sub.add_parser("one", help="one engine and thread count, in this process")
    single.add_argument("--engine", required=True, choices=("hf", "ctranslate2", "llamacpp"))
    single.add_argument("--threads", type=int, default=1)
    single.add_argument("--busy-label", default="none", help="what runs beside it (recorded)")
    grid = sub.add_parser("matrix", help="every condition, quiet and beside a busy core, one process each")
    grid.add_argument("--engines", nargs="+", default=["hf", "llamacpp"])
    grid.add_argument("--output", type=Path, required=True)
    speeds = sub.add_parser("prefill", help="prefill and decode tokens/s per engine and GGUF type, one process")
    speeds.add_argument("--threads", type=int, default=1)
    speeds.add_argument("--prompts", type=int, default=4)
    speeds.add_argument("--output", type=Path)
    speeds.add_argument("--seed", type=int, default=0)
    speeds.add_argument("overrides", nargs="*", help="python -m genenv.train overrides (after --)")
    for p in (single, grid):
        p.add_argument("--batches", type=int, default=2, help="timed batches (one more warms up)")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--free", action="store_true", help="no schemas (free calls)")
        p.add_argument("overrides", nargs="*", help="python -m genenv.train overrides (after --)")
    args = parser.parse_args(argv)
    {"one": one, "matrix": matrix, "prefill": prefill}[args.command](args)


if __name__ == "__main__":
    main()
