"""Agent tokens/s of a batch of ToolEnv episodes against the bare engine on the same calls, per engine.

    GENENV_DATA_DIR=../shared/data python performance/rollout_throughput.py [--model smollm2] [--batch 8] \
        [--engines hf ctranslate2]

The rollout (:func:`genenv.agents.rollout.play_envs`: batched lock-step turns, parsing, tool execution,
scoring) is played with greedy decoding through an engine while every ``generate`` call's inputs are recorded;
then the same calls (same token ids, batch composition and settings) are replayed on the bare engine
(``model.generate`` for ``hf``, ``Generator.generate_batch`` for ``ctranslate2``). The ratio of tokens/s is the
share of time left to generation: 1.0 means the env, parsing and scoring cost nothing. Rounds alternate rollout
and replay so a busy machine slows both alike; engines take turns within each round. Writes
``results/performance/rollout_throughput.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

from genenv.agents.agent import Agent
from genenv.agents.rollout import play_envs
from genenv.benchmarks.base import get_benchmark
from genenv.envs.tool_env import ToolEnv
from genenv.llm.engines import build_engine
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import load_policy
from genenv.machine import peak_rss_mb, uptime

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"


def sampled_tokens(rows: list[list[int]], eos: int) -> int:
    """Tokens up to and including the first end-of-turn token of each row (what the rollout keeps)."""
    return sum(next((k + 1 for k, tok in enumerate(row) if tok == eos), len(row)) for row in rows)


def rollout_round(policy, generate, adapter, tasks, max_turns):
    """One batched rollout; returns (seconds, sampled tokens, recorded generate inputs, turns per episode)."""
    calls: list[list[list[int]]] = []

    def recording(batch):
        calls.append([list(ids) for ids in batch])
        return generate(batch)

    envs = [ToolEnv(adapter, tasks=tasks, max_turns=max_turns) for _ in tasks]
    start = time.perf_counter()
    for env, task in zip(envs, tasks):
        env.reset(options={"task": task})
    batch = play_envs(envs, policy.tokenizer, recording, eos_token_ids=[policy.tokenizer.eos_token_id])
    seconds = time.perf_counter() - start
    turns = [len(e.trajectory.turns) for e in batch.episodes]
    return seconds, batch.token_counts["completion_tokens"], calls, turns


def bare_round(policy, generate, calls):
    """The recorded calls replayed on the bare engine; returns (seconds, sampled tokens)."""
    eos = policy.tokenizer.eos_token_id
    tokens = 0
    start = time.perf_counter()
    for batch in calls:
        new_ids, _ = generate(batch)
        tokens += sampled_tokens(new_ids, eos)
    return time.perf_counter() - start, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--benchmark", default="apibank")
    parser.add_argument("--split", default="level-1-api")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engines", nargs="+", default=["hf"], choices=["hf", "ctranslate2"])
    parser.add_argument("--compute-type", default="int8", choices=["int8", "float32"])
    args = parser.parse_args()

    policy = load_policy(args.model)
    engines = {name: build_engine(name, policy, compute_type=args.compute_type) for name in args.engines}
    adapter = get_benchmark(args.benchmark)
    all_tasks = adapter.load_tasks(args.split)
    stride = max(1, len(all_tasks) // (args.batch * args.rounds))
    sampling = SamplingConfig(max_new_tokens=args.max_new_tokens)
    Agent(policy, SamplingConfig(max_new_tokens=4)).rollout(
        [ToolEnv(adapter, tasks=all_tasks[:2], max_turns=1) for _ in range(2)], all_tasks[:2]
    )  # warm-up
    rounds: dict[str, list[dict]] = {name: [] for name in engines}
    for r in range(args.rounds):
        tasks = all_tasks[r * args.batch * stride :: stride][: args.batch]
        for name, engine in engines.items():
            generate = engine.generator(sampling)
            seconds, tokens, calls, turns = rollout_round(policy, generate, adapter, tasks, args.max_turns)
            bare_seconds, bare_tokens = bare_round(policy, generate, calls)
            if bare_tokens != tokens:
                raise RuntimeError(f"replay sampled {bare_tokens} tokens, the rollout {tokens}: not the same calls")
            rounds[name].append(
                {
                    "load": uptime(),
                    "tasks": [t.task_id for t in tasks],
                    "generate_calls": len(calls),
                    "turns": turns,
                    "sampled_tokens": tokens,
                    "rollout_seconds": seconds,
                    "bare_generate_seconds": bare_seconds,
                    "rollout_tokens_per_s": tokens / seconds,
                    "bare_tokens_per_s": tokens / bare_seconds,
                    "ratio": bare_seconds / seconds,
                }
            )
            print(name, json.dumps(rounds[name][-1]), flush=True)
    record = {
        "command": "GENENV_DATA_DIR=../shared/data python performance/rollout_throughput.py "
        f"--model {args.model} --benchmark {args.benchmark} --split {args.split} --batch {args.batch} "
        f"--max-turns {args.max_turns} --max-new-tokens {args.max_new_tokens} --rounds {args.rounds} "
        f"--engines {' '.join(args.engines)} --compute-type {args.compute_type}",
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch threads, Python {platform.python_version()}",
        "device": str(policy.model.device),
        "engines": {
            name: {
                "ratio_median": statistics.median(r["ratio"] for r in runs),
                "rollout_tokens_per_s_median": statistics.median(r["rollout_tokens_per_s"] for r in runs),
                "bare_tokens_per_s_median": statistics.median(r["bare_tokens_per_s"] for r in runs),
                "rounds": runs,
            }
            for name, runs in rounds.items()
        },
        "peak_rss_mb": peak_rss_mb(),
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "rollout_throughput.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    for name, summary in record["engines"].items():
        print(f"{name}: ratio {summary['ratio_median']:.3f} (median of {args.rounds})")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
