"""HF ``generate`` and CTranslate2 under OpenMP settings, on a machine other jobs share: why HF degrades.

    GENENV_DATA_DIR=../shared/data python benchmarks/hf_contention.py [--rounds 2]

Each setting runs in its own subprocess (OpenMP reads its environment once, at start), settings alternate
round by round so the other jobs' load falls on all of them alike, and ``uptime`` is recorded around each run.
The workload: SmolLM2, the first-turn prompts of 8 API-Bank level-1 tasks as one batch, 32 greedy new tokens,
after one warm-up call. Settings: torch's defaults with 2 threads; ``OMP_WAIT_POLICY=PASSIVE`` (idle OpenMP
threads sleep instead of spinning); 1 thread; and the CTranslate2 int8 engine with 2 threads, default and
passive. Writes ``benchmarks/results/hf_contention.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
SETTINGS = {
    "hf_2_threads": ("hf", {"OMP_NUM_THREADS": "2"}),
    "hf_2_threads_passive": ("hf", {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"}),
    "hf_1_thread": ("hf", {"OMP_NUM_THREADS": "1"}),
    "ct2_int8_2_threads": ("ctranslate2", {"OMP_NUM_THREADS": "2"}),
    "ct2_int8_2_threads_passive": ("ctranslate2", {"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "PASSIVE"}),
}


def workload(engine: str) -> None:
    import time

    from engine_throughput import kept, prompts

    from genenv.agents.engines import build_engine
    from genenv.agents.generation import SamplingConfig
    from genenv.agents.models import load_policy

    policy = load_policy("smollm2")
    batch = prompts(policy, 8, "generic")
    generate = build_engine(engine, policy).generator(SamplingConfig(max_new_tokens=32))
    generate(batch[:2])
    start = time.perf_counter()
    new_ids, _ = generate(batch)
    seconds = time.perf_counter() - start
    tokens = sum(len(row) for row in kept(new_ids, policy.tokenizer.eos_token_id))
    print(json.dumps({"seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds}))


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workload", choices=["hf", "ctranslate2"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.workload:
        workload(args.workload)
        return
    runs: dict[str, list[dict]] = {name: [] for name in SETTINGS}
    for _ in range(args.rounds):
        for name, (engine, env) in SETTINGS.items():
            before = uptime()
            out = subprocess.run(
                [sys.executable, __file__, "--workload", engine],
                env={**{k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")},
                     **env},  # fmt: skip
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(out.stdout.strip().splitlines()[-1])
            runs[name].append({**result, "load_before": before, "load_after": uptime()})
            print(name, json.dumps(runs[name][-1]), flush=True)
    summary = {name: statistics.median(r["tokens_per_s"] for r in rs) for name, rs in runs.items()}
    record = {
        "command": f"GENENV_DATA_DIR=../shared/data python benchmarks/hf_contention.py --rounds {args.rounds}",
        "median_tokens_per_s": summary,
        "runs": runs,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "hf_contention.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
