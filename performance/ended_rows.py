"""HF rollouts whose ended rows leave the batch every ``chunk_tokens`` tokens, against one ``generate`` call a turn.

    OMP_NUM_THREADS=2 GENENV_DATA_DIR=../shared/data python performance/ended_rows.py RUN

``generate`` decodes padding for a batch's ended rows until its longest row ends; :class:`~genenv.llm.turn_cache.
TurnCache` decodes in steps and lets the ended rows leave. Measured on what the main job's GRPO plays: its agent after
the warm start (``RUN``: a finished run of README command 1), G = 8 attempts at each of 2 reasoning-gym tasks a batch,
sampled as GRPO samples (``GRPOAgentConfig``'s temperature, top-p and tokens a turn), through the real
:func:`~genenv.agents.rollout.play_episodes` loop. The two settings alternate on the same batches, ``--repeats``
times, in this process; sampling makes their tokens differ, so the record has the seconds and the new tokens each
generated. Writes ``results/performance/ended_rows.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from heldout_engines import agent_model, stages

from genenv.agents.grpo import GRPOAgentConfig
from genenv.agents.rollout import play_episodes
from genenv.benchmarks.base import get_benchmark
from genenv.config import model_few_shot
from genenv.llm.engines.hf import hf_generator
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import load_policy
from genenv.llm.turn_cache import CHUNK_TOKENS
from genenv.machine import uptime

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"


def rollout(policy, adapter, tasks, sampling, seed, chunk, **episode) -> tuple[float, Any]:
    """Seconds and the :class:`~genenv.agents.rollout.RolloutBatch` of ``tasks`` played on the HF engine, its turns
    decoded in steps of ``chunk`` tokens (``None``: one ``generate`` call); ``episode``: ``play_episodes``' limits."""
    generate = hf_generator(policy.model, policy.tokenizer, sampling, seed=seed)
    generate.turn_cache.chunk_tokens = chunk
    start = time.perf_counter()
    batch = play_episodes(
        adapter,
        tasks,
        policy.tokenizer,
        generate,
        eos_token_ids=[policy.tokenizer.eos_token_id],
        few_shot=model_few_shot("smollm2"),
        **episode,
    )
    return time.perf_counter() - start, batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished run folder of README command 1")
    parser.add_argument("--batches", type=int, default=3, help="batches of 2 tasks x G")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    load_start = uptime()
    grpo = GRPOAgentConfig()
    policy = load_policy("smollm2", seed=0)
    warm_start = dict(stages(args.run))["warm start"]
    policy = replace(policy, model=agent_model(policy.model, warm_start))
    adapter = get_benchmark("reasoning_gym")
    tasks = adapter.load_tasks("train")
    picks = [tasks[(k * len(tasks)) // (2 * args.batches)] for k in range(2 * args.batches)]
    sampling = SamplingConfig(grpo.max_new_tokens, grpo.temperature, grpo.top_p)
    settings = {"one call a turn": None, f"ended rows leave every {CHUNK_TOKENS} tokens": CHUNK_TOKENS}
    runs: dict[str, dict[str, float]] = {name: {"seconds": 0.0, "new_tokens": 0, "episodes": 0} for name in settings}
    for repeat in range(args.repeats):
        for b in range(args.batches):
            batch_tasks = [t for t in picks[2 * b : 2 * b + 2] for _ in range(grpo.num_generations)]
            for name, chunk in settings.items():
                seconds, batch = rollout(
                    policy,
                    adapter,
                    batch_tasks,
                    sampling,
                    1000 * repeat + b,
                    chunk,
                    max_turns=grpo.max_turns,
                    max_completion_length=grpo.max_completion_length,
                )
                runs[name]["seconds"] += seconds
                runs[name]["new_tokens"] += sum(sum(mask) for mask in batch.env_mask)
                runs[name]["episodes"] += len(batch_tasks)
    for row in runs.values():
        row["seconds"] = round(row["seconds"], 1)
        row["ms_per_new_token"] = round(1000 * row["seconds"] / row["new_tokens"], 2)
    one, stepped = runs.values()
    record = {
        "command": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} python performance/ended_rows.py "
        f"RUN --batches {args.batches} --repeats {args.repeats}",
        "run": str(args.run),
        "torch_threads": torch.get_num_threads(),
        "sampling": {"temperature": grpo.temperature, "top_p": grpo.top_p, "max_new_tokens": grpo.max_new_tokens},
        "load_start": load_start,
        "runs": runs,
        "speedup_per_new_token": round(one["ms_per_new_token"] / stepped["ms_per_new_token"], 2),
    }
    record["load_end"] = uptime()
    print(json.dumps(record, indent=1))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ended_rows.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
