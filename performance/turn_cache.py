"""Cross-turn KV reuse of the HF engine: multi-turn episodes with and without it, same inputs, one process.

    OMP_NUM_THREADS=2 GENENV_DATA_DIR=../shared/data python performance/turn_cache.py [--model smollm2]

Realistic multi-turn histories need episodes that last: the embedded SmolLM2 ends almost every episode at its
first turn, so each turn's action is the task's expert action (API-Bank level-3: 5-9 calls; ALFWorld
valid_unseen: the walkthrough), fed back through the real :func:`~genenv.agents.rollout.play_envs` loop and the
real env, while the model still generates ``--max-new-tokens`` greedy tokens per turn from that history (its
text is discarded). Only generation is timed. ``reuse_cache`` off and on alternate on the same episodes; the
generated tokens must be identical. Writes ``results/performance/turn_cache.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch

from genenv.agents.rollout import play_envs
from genenv.benchmarks.base import get_benchmark
from genenv.config import model_few_shot
from genenv.envs.expert import expert_messages
from genenv.envs.tool_env import ToolEnv
from genenv.llm.engines.hf import hf_generator
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import load_policy
from genenv.machine import uptime

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"


def forced(generate, tokenizer, actions: list[list[str]]):
    """A GenerateFn that times ``generate`` on each turn's real input but answers with the expert action."""
    eos = tokenizer.eos_token_id
    prompts: list[list[int]] = []
    turn = [0] * len(actions)
    log = {"seconds": 0.0, "input_tokens": 0, "generated": []}

    def run(batch):
        if not prompts:
            prompts.extend(list(row) for row in batch)
        rows, i = [], 0
        for ids in batch:  # the running episodes, in order: find each by its prompt
            while ids[: len(prompts[i])] != prompts[i]:
                i += 1
            rows.append(i)
            i += 1
        start = time.perf_counter()
        new_ids, _ = generate(batch)
        log["seconds"] += time.perf_counter() - start
        log["input_tokens"] += sum(len(ids) for ids in batch)
        log["generated"].append(new_ids)
        out = []
        for row in rows:
            action = actions[row][turn[row]]
            turn[row] += 1
            out.append(tokenizer(action, add_special_tokens=False)["input_ids"] + [eos])
        return out, None

    return run, log


def episodes(adapter, tasks, actions, policy, reuse: bool, max_new_tokens: int, few_shot) -> dict:
    generate = hf_generator(policy.model, policy.tokenizer, SamplingConfig(max_new_tokens=max_new_tokens),
                            reuse_cache=reuse)  # fmt: skip
    run, log = forced(generate, policy.tokenizer, actions)
    envs = [ToolEnv(adapter, tasks=[t], max_turns=len(a)) for t, a in zip(tasks, actions)]
    for env, task in zip(envs, tasks):
        env.reset(options={"task": task})
    batch = play_envs(envs, policy.tokenizer, run, eos_token_ids=[policy.tokenizer.eos_token_id], few_shot=few_shot)
    return {
        "generate_seconds": log["seconds"],
        "generate_calls": len(log["generated"]),
        "input_tokens": log["input_tokens"],
        "prefill_tokens_saved": generate.turn_cache.reused_tokens,
        "rewards": batch.rewards,
        "generated": log["generated"],
        "load": uptime(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--benchmarks", nargs="+", default=["apibank:level-3", "alfworld:valid_unseen"])
    args = parser.parse_args()
    policy = load_policy(args.model)
    few_shot = model_few_shot(args.model)
    record = {
        "command": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} python performance/turn_cache.py "
        f"--model {args.model} --batch {args.batch} --max-new-tokens {args.max_new_tokens} --rounds {args.rounds} "
        f"--benchmarks {' '.join(args.benchmarks)}",
        "torch_threads": torch.get_num_threads(),
        "load_start": uptime(),
        "benchmarks": {},
    }
    for spec in args.benchmarks:
        name, split = spec.split(":")
        adapter = get_benchmark(name)
        every = adapter.load_tasks(split)
        tasks, actions = [], []
        for task in every[:: max(1, len(every) // (4 * args.batch))]:
            expert = [m["content"] for m in expert_messages(adapter, task) or [] if m["role"] == "assistant"]
            if len(expert) >= 2:
                tasks.append(task)
                actions.append(expert)
            if len(tasks) == args.batch:
                break
        runs = {"off": [], "on": []}
        for _ in range(args.rounds):
            for mode in ("off", "on"):
                runs[mode].append(episodes(adapter, tasks, actions, policy, mode == "on", args.max_new_tokens,
                                           few_shot))  # fmt: skip
                print(spec, mode, json.dumps({k: v for k, v in runs[mode][-1].items() if k != "generated"}), flush=True)
        identical = all(a["generated"] == b["generated"] for a, b in zip(runs["off"], runs["on"]))
        off = sum(r["generate_seconds"] for r in runs["off"])
        on = sum(r["generate_seconds"] for r in runs["on"])
        record["benchmarks"][spec] = {
            "tasks": [t.task_id for t in tasks],
            "turns": [len(a) for a in actions],
            "identical_greedy_tokens": identical,
            "generate_seconds_off": off,
            "generate_seconds_on": on,
            "speedup": off / on,
            "runs": {mode: [{k: v for k, v in r.items() if k != "generated"} for r in rs] for mode, rs in runs.items()},
        }
        print(spec, json.dumps({k: v for k, v in record["benchmarks"][spec].items() if k != "runs"}), flush=True)
    record["load_end"] = uptime()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "turn_cache.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
