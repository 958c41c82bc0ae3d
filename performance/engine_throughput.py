"""Each rollout engine against Hugging Face ``generate`` on the same prompts, in one process.

    OMP_NUM_THREADS=2 GENENV_DATA_DIR=../shared/data python performance/engine_throughput.py [--model smollm2]

Prompts are the agent's first-turn prompts of ``--prompts`` tasks (``reasoning_gym:train`` by default;
``apibank:level-1-api``: about 900 tokens each, prefill-heavy), chat template, tools, worked exchanges and request as
:func:`genenv.agents.rollout.play_envs` renders them. Measured, one after the other in this
process (so a busy machine slows every engine alike; ``uptime`` before and after is recorded):

* ``throughput``: greedy tokens/s (tokens kept by a rollout: up to and including the first end-of-turn token)
  of HF ``generate`` (float32), CTranslate2 float32 and int8, batches of 1, 8 and 32, each batch through every
  engine in turn; ratios against HF per batch size;
* ``agreement``: over ``--agreement-prompts`` prompts, the share of CTranslate2 completions (float32, int8)
  identical to HF float32's, token for token;
* ``sync``: seconds of a weight sync (LoRA merged + conversion + load) into each CTranslate2 engine.

Writes ``results/performance/engine_throughput[_<model>][_<benchmark>][_<label>].json`` (neither model nor benchmark
for SmolLM2 on the default prompts).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from genenv.agents.rollout import few_shot_conversation, shown_exchanges
from genenv.benchmarks.base import get_benchmark
from genenv.config import model_few_shot
from genenv.envs.tool_env import ToolEnv
from genenv.llm.engines.ctranslate2 import CTranslate2Engine
from genenv.llm.engines.hf import hf_generator
from genenv.llm.generation import SamplingConfig, render_chat
from genenv.llm.models import load_policy
from genenv.machine import peak_rss_mb, uptime

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"
DEFAULT_PROMPTS = "reasoning_gym:train"


def load_average() -> str:
    return uptime()


def prompts(policy, count: int, few_shot: str, source: str = "apibank:level-1-api") -> list[list[int]]:
    """First-turn prompt ids of ``count`` tasks of ``source`` (``benchmark:split``), spread over the split."""
    name, split = source.split(":")
    adapter = get_benchmark(name)
    tasks = adapter.load_tasks(split)
    tasks = [tasks[int(i * len(tasks) / count)] for i in range(count)]
    rows = []
    for task in tasks:
        env = ToolEnv(adapter, tasks=[task], max_turns=1)
        env.reset(options={"task": task})
        exchanges = shown_exchanges(adapter, few_shot)
        messages = few_shot_conversation(env.messages, exchanges) if exchanges else env.messages
        text = render_chat(policy.tokenizer, messages, adapter.tools(task))
        rows.append(policy.tokenizer(text, add_special_tokens=False)["input_ids"])
    return rows


def kept(rows: list[list[int]], eos: int) -> list[list[int]]:
    """Each row up to and including its first end-of-turn token (what a rollout keeps)."""
    return [row[: row.index(eos) + 1] if eos in row else row for row in rows]


def run(generators: dict, batches: list[list[list[int]]], eos: int) -> dict[str, dict]:
    """Every batch through every engine in turn (engines interleaved batch by batch, so load changes hit all
    alike): per engine its seconds, kept tokens and outputs."""
    results = {name: {"seconds": 0.0, "outputs": []} for name in generators}
    for batch in batches:
        for name, generate in generators.items():
            start = time.perf_counter()
            new_ids, _ = generate(batch)
            results[name]["seconds"] += time.perf_counter() - start
            results[name]["outputs"] += kept(new_ids, eos)
    for result in results.values():
        result["tokens"] = sum(len(row) for row in result["outputs"])
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--prompts-per-size", type=int, default=32, help="prompts timed at each batch size")
    parser.add_argument("--agreement-prompts", type=int, default=200)
    parser.add_argument("--agreement-batch", type=int, default=8)
    parser.add_argument("--agreement-max-new-tokens", type=int, default=64)
    parser.add_argument("--prompts", default=DEFAULT_PROMPTS, help="benchmark:split of the prompts")
    parser.add_argument("--sync-repeats", type=int, default=3)
    parser.add_argument("--skip", nargs="*", default=[], choices=["throughput", "agreement", "sync"])
    parser.add_argument("--label", default="", help="appended to the results file name (e.g. idle)")
    args = parser.parse_args()

    threads = torch.get_num_threads()
    record: dict = {
        "command": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} GENENV_DATA_DIR=../shared/data "
        "python performance/engine_throughput.py "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if k not in ("skip", "label"))
        + (f" --label {args.label}" if args.label else "")
        + (f" --skip {' '.join(args.skip)}" if args.skip else ""),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {threads} torch threads = ctranslate2 intra_threads,"
        f" OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}, Python {platform.python_version()}",
        "load_start": load_average(),
    }
    policy = load_policy(args.model)
    few_shot = model_few_shot(args.model)
    eos = policy.tokenizer.eos_token_id
    sampling = SamplingConfig(max_new_tokens=args.max_new_tokens)
    engines = {"hf_float32": None, "ct2_float32": None, "ct2_int8": None}
    start = time.perf_counter()
    engines["ct2_float32"] = CTranslate2Engine(policy, compute_type="float32")
    engines["ct2_int8"] = CTranslate2Engine(policy, compute_type="int8")
    record["first_conversion_seconds"] = time.perf_counter() - start
    generators = {
        "hf_float32": hf_generator(policy.model, policy.tokenizer, sampling),
        "ct2_float32": engines["ct2_float32"].generator(sampling),
        "ct2_int8": engines["ct2_int8"].generator(sampling),
    }
    pool = prompts(policy, max(args.agreement_prompts, args.prompts_per_size, max(args.batch_sizes)), few_shot,
                   args.prompts)  # fmt: skip
    RESULTS.mkdir(exist_ok=True)
    suffix = "" if args.model == "smollm2" else f"_{args.model}"
    if args.prompts != DEFAULT_PROMPTS:
        suffix += f"_{args.prompts.split(':')[0]}"
    if args.label:
        suffix += f"_{args.label}"
    path = RESULTS / f"engine_throughput{suffix}.json"

    def save() -> None:  # after every section, so a run stopped early keeps what it measured
        record["peak_rss_mb"] = peak_rss_mb()
        path.write_text(json.dumps(record, indent=1) + "\n")

    record["prompt_tokens_mean"] = statistics.mean(len(p) for p in pool)
    for generate in generators.values():  # warm-up: first calls allocate
        generate(pool[:2])

    if "throughput" not in args.skip:
        record["throughput"] = {}
        for size in args.batch_sizes:
            count = max(size, args.prompts_per_size // size * size) if size > 1 else min(8, args.prompts_per_size)
            batches = [pool[i : i + size] for i in range(0, count, size)]
            row: dict = {"prompts": count, "load_before": load_average()}
            for name, result in run(generators, batches, eos).items():
                seconds, tokens = result["seconds"], result["tokens"]
                row[name] = {"seconds": seconds, "tokens": tokens, "tokens_per_s": tokens / seconds}
            for name in ("ct2_float32", "ct2_int8"):
                row[f"{name}_vs_hf"] = row[name]["tokens_per_s"] / row["hf_float32"]["tokens_per_s"]
            row["load_after"] = load_average()
            record["throughput"][f"batch_{size}"] = row
            save()
            print(json.dumps({size: row}), flush=True)

    if "agreement" not in args.skip:
        agreement = SamplingConfig(max_new_tokens=args.agreement_max_new_tokens)
        generators = {
            "hf_float32": hf_generator(policy.model, policy.tokenizer, agreement),
            "ct2_float32": engines["ct2_float32"].generator(agreement),
            "ct2_int8": engines["ct2_int8"].generator(agreement),
        }
        batches = [pool[i : i + args.agreement_batch] for i in range(0, args.agreement_prompts, args.agreement_batch)]
        outputs = {name: result["outputs"] for name, result in run(generators, batches, eos).items()}
        record["agreement"] = {
            "prompts": args.agreement_prompts,
            "max_new_tokens": args.agreement_max_new_tokens,
            **{
                f"{name}_identical_to_hf_float32": sum(a == b for a, b in zip(outputs[name], outputs["hf_float32"]))
                / args.agreement_prompts
                for name in ("ct2_float32", "ct2_int8")
            },
            "load_after": load_average(),
        }
        save()
        print(json.dumps(record["agreement"]), flush=True)

    if "sync" not in args.skip:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(policy.model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
        record["sync"] = {"load_before": load_average()}
        for name in ("ct2_float32", "ct2_int8"):
            times = [engines[name].sync(model, force=True) for _ in range(args.sync_repeats)]
            record["sync"][f"{name}_seconds"] = statistics.median(times)
        record["sync"]["load_after"] = load_average()
        print(json.dumps(record["sync"]), flush=True)

    record["load_end"] = load_average()
    save()
    print(f"written to {path}")


if __name__ == "__main__":
    main()
