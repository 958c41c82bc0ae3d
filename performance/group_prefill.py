"""GRPO's G attempts at a task share its prompt: HF rollouts with one prefill per distinct prompt, against one per row.

    OMP_NUM_THREADS=2 GENENV_DATA_DIR=../shared/data python performance/group_prefill.py [--model smollm2]

Each benchmark's first tasks are played G times each in one batch through the real
:func:`~genenv.agents.rollout.play_episodes` loop on the HF engine, the first turn of every episode being the batch
whose rows repeat prompts (:class:`~genenv.llm.turn_cache.TurnCache`). The shared prefill on and off alternate on
the same episodes, ``--repeats`` times, in this process; greedy decoding, so the generated tokens must be identical.
Writes ``results/performance/group_prefill.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from genenv.agents.rollout import play_episodes
from genenv.benchmarks.base import get_benchmark
from genenv.config import model_few_shot
from genenv.llm.engines.hf import hf_generator
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import load_policy
from genenv.llm.turn_cache import TurnCache
from genenv.machine import uptime

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"
BENCHMARKS = {"reasoning_gym": "train", "apibank": "level-1"}


def play(adapter, policy, tasks, args, shared: bool) -> tuple[float, list[list[int]], int, int]:
    """Seconds, completion ids, prompt tokens and prompt tokens not prefilled of one batch of G attempts a task."""
    prefill = TurnCache._prefill_shared
    if not shared:
        TurnCache._prefill_shared = lambda *a: None  # type: ignore[method-assign]
    try:
        generate = hf_generator(policy.model, policy.tokenizer, SamplingConfig(max_new_tokens=args.max_new_tokens))
        start = time.perf_counter()
        batch = play_episodes(
            adapter,
            [t for t in tasks for _ in range(args.group)],
            policy.tokenizer,
            generate,
            eos_token_ids=[policy.tokenizer.eos_token_id],
            max_turns=args.max_turns,
            few_shot=model_few_shot(args.model),
        )
        seconds = time.perf_counter() - start
    finally:
        TurnCache._prefill_shared = prefill  # type: ignore[method-assign]
    prompt_tokens = sum(len(ids) for ids in batch.prompt_ids)
    return seconds, batch.completion_ids, prompt_tokens, generate.turn_cache.reused_tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--tasks", type=int, default=2, help="distinct tasks in the batch")
    parser.add_argument("--group", type=int, default=8, help="G, attempts a task")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--max-turns", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    policy = load_policy(args.model, seed=0)
    record: dict = {
        "command": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} python performance/group_prefill.py "
        f"--model {args.model} --tasks {args.tasks} --group {args.group} --max-new-tokens {args.max_new_tokens} "
        f"--max-turns {args.max_turns} --repeats {args.repeats}",
        "torch_threads": torch.get_num_threads(),
        "load_start": uptime(),
        "benchmarks": {},
    }
    for name, split in BENCHMARKS.items():
        adapter = get_benchmark(name)
        tasks = adapter.load_tasks(split)[: args.tasks]
        runs: dict[str, list[float]] = {"off": [], "on": []}
        tokens: dict[str, list[list[int]]] = {}
        for _ in range(args.repeats):
            for mode in ("off", "on"):
                seconds, completions, prompt_tokens, reused = play(adapter, policy, tasks, args, mode == "on")
                runs[mode].append(round(seconds, 2))
                tokens[mode] = completions
                if mode == "on":
                    record["benchmarks"].setdefault(name, {})["prompt_tokens_not_prefilled"] = reused
        row = record["benchmarks"][name]
        row.update(
            split=split,
            tasks=[t.task_id for t in tasks],
            prompt_tokens=prompt_tokens,
            identical_greedy_tokens=tokens["on"] == tokens["off"],
            seconds_off=runs["off"],
            seconds_on=runs["on"],
            speedup=round(min(runs["off"]) / min(runs["on"]), 2),
        )
        print(name, json.dumps(row), flush=True)
    record["load_end"] = uptime()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "group_prefill.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
