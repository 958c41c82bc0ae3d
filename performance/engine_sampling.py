"""Do CTranslate2 and TRL's HF generate sample the same GRPO episodes? Same weights, same tasks, episode statistics.

    OMP_NUM_THREADS=1 python performance/engine_sampling.py [--episodes 64]

The GRPO agent of ``performance/engine_grpo.py`` (SmolLM2, LoRA, CTranslate2 float32 engine) plays each of its 4
level-0 training tasks ``--episodes`` times with each rollout generator a GRPO step can use, from the same starting
weights and the same sampling settings (temperature 1.0, whole vocabulary, 64 new tokens per turn, 2 turns):

* ``hf``: ``genenv.llm.engines.hf.trl_generator``, TRL's generation config on the trained model (as in training:
  the model in train mode; with fresh LoRA adapters, dropout changes nothing);
* ``ctranslate2``: the trainer's float32 engine.

If the engines sample the same distribution, the mean reward per task, the agent tokens per episode and the share
of turns that end with the end-of-turn token agree within their sampling error (given here as 95% intervals).
Writes ``results/performance/engine_sampling.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch
from engine_grpo import LEVEL0, agent_config, fixed_tasks  # this folder is on sys.path

from genenv.agents.grpo import GRPOAgentTrainer
from genenv.agents.rollout import play_episodes
from genenv.benchmarks.base import get_benchmark
from genenv.learning_curve import bootstrap_interval
from genenv.llm.engines import hf as hf_engine
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import load_policy
from genenv.machine import uptime

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"
BATCH = 8  # episodes of each task per generation batch (32 episodes a batch)


def interval(values: list[float], rng: np.random.Generator) -> list[float]:
    low, high = bootstrap_interval(np.asarray(values, dtype=float), rng)
    return [round(float(np.mean(values)), 4), round(low, 4), round(high, 4)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--episodes", type=int, default=64, help="episodes per task and engine (a multiple of 8)")
    args = parser.parse_args()
    if args.episodes < BATCH or args.episodes % BATCH:
        raise SystemExit(f"--episodes must be a positive multiple of {BATCH}")

    adapter = get_benchmark("reasoning_gym", families=LEVEL0, partial_credit=True)
    tasks = fixed_tasks(adapter, 4)
    torch.manual_seed(0)
    config = agent_config("ctranslate2", "float32", 1, 3e-4, 0, output_dir="/tmp/genenv-engine-sampling")
    trainer = GRPOAgentTrainer(load_policy(args.model), adapter, config)
    generators = {
        "hf": lambda: hf_engine.trl_generator(trainer.trainer, trainer.tokenizer.pad_token_id),
        "ctranslate2": lambda: trainer.engine.generator(
            SamplingConfig(config.max_new_tokens, config.temperature, config.top_p), logprobs=True
        ),
    }
    eos = trainer.trainer.eos_token_ids
    rng = np.random.default_rng(0)
    load_start = uptime()
    engines = {}
    for name, generator in generators.items():
        trainer.model.train(name == "hf")
        rewards: dict[str, list[float]] = {t.task_id: [] for t in tasks}
        tokens, ends, turns = [], [], []
        start = time.perf_counter()
        for _ in range(args.episodes // BATCH):
            batch = play_episodes(adapter, [t for t in tasks for _ in range(BATCH)], trainer.tokenizer, generator(),
                                  eos_token_ids=eos, max_turns=2, max_completion_length=256, few_shot=True)  # fmt: skip
            for episode, reward, ids, mask in zip(batch.episodes, batch.rewards, batch.completion_ids, batch.env_mask):
                rewards[episode.task.task_id].append(reward)
                tokens.append(sum(mask))
                ends.append(float(ids[-1] in eos))
                turns.append(len(episode.trajectory.turns))
        engines[name] = {
            "seconds": round(time.perf_counter() - start, 1),
            "reward_per_task": {task: interval(values, rng) for task, values in rewards.items()},
            "reward": interval([r for values in rewards.values() for r in values], rng),
            "agent_tokens": interval(tokens, rng),
            "ends_with_end_token": interval(ends, rng),
            "turns": interval(turns, rng),
        }
        print(name, json.dumps(engines[name]), flush=True)
    record = {
        "command": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} python "
        f"performance/engine_sampling.py --model {args.model} --episodes {args.episodes}",
        "statistic": "[mean, 95% bootstrap low, high] over episodes",
        "load_start": load_start,
        "load_end": uptime(),
        "tasks": [t.task_id for t in tasks],
        "engines": engines,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "engine_sampling.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
