"""The embedded SmolLM2 on an evenly spread subset of ALFWorld valid_unseen, success overall and per type.

    GENENV_DATA_DIR=../shared/data python experiments/zero_shot/alfworld_eval.py [--stride 6] [--max-turns 10]

Every ``stride``-th game of the split (games are sorted by task folder, so a stride spreads the
subset over all six task types), played once with ``genenv.evaluate.evaluate`` (greedy, few-shot
tool-call prompt, the admissible commands after every observation). Writes
``results/zero_shot/alfworld_<split>_<model>.json`` with the ALFWorld metrics (success overall and
per task type), how the agent's turns went (admissible / inadmissible commands, malformed calls,
episodes ended by plain text) and every episode's actions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

from genenv.agents.agent import Agent
from genenv.benchmarks.base import get_benchmark
from genenv.evaluate import episode_summary, evaluate
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import load_policy
from genenv.machine import peak_rss_mb

RESULTS = Path(__file__).resolve().parents[2] / "results" / "zero_shot"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="valid_unseen")
    parser.add_argument("--stride", type=int, default=6)
    parser.add_argument("--max-turns", type=int, default=10)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--model", default="smollm2")
    args = parser.parse_args()

    adapter = get_benchmark("alfworld", max_steps=args.max_turns)
    all_tasks = adapter.load_tasks(args.split)
    tasks = all_tasks[:: args.stride]
    start = time.perf_counter()
    policy = load_policy(args.model)
    agent = Agent(policy, SamplingConfig(max_new_tokens=args.max_new_tokens))
    load_seconds = time.perf_counter() - start
    start = time.perf_counter()
    summary, episodes = evaluate(
        adapter, agent, tasks, batch_size=args.batch_size, max_turns=args.max_turns, seed=0, progress=True
    )
    seconds = time.perf_counter() - start

    turns = Counter()
    for episode in episodes:
        for turn in episode.trajectory.turns:
            if not turn.calls and turn.error is None:
                turns["plain_text_answer (ends the episode)"] += 1
            else:
                turns[turn.error or "admissible_command"] += 1
    result = {
        "command": "python " + " ".join(sys.argv),
        "what": (
            f"{args.model} (greedy, few-shot tool-call prompt, admissible commands after every observation) on "
            f"every {args.stride}th of the {len(all_tasks)} {args.split} games ({len(tasks)} games), "
            f"{args.max_turns} turns (= game steps) per episode, {args.max_new_tokens} new tokens per action"
        ),
        "benchmark": "alfworld",
        "split": args.split,
        "model": args.model,
        "n_tasks": len(tasks),
        "stride": args.stride,
        "max_turns": args.max_turns,
        "max_new_tokens": args.max_new_tokens,
        **summary,
        "turn_outcomes": dict(turns.most_common()),
        "wall_seconds": seconds,
        "seconds_per_game": seconds / len(tasks),
        "model_load_seconds": load_seconds,
        "peak_rss_mb": peak_rss_mb(),
        "load_average": os.getloadavg(),
        "episodes": [episode_summary(adapter, episode) for episode in episodes],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"alfworld_{args.split}_{args.model}.json"
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(json.dumps({k: result[k] for k in ("metrics", "per_family", "turn_outcomes", "wall_seconds")}, indent=1))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
