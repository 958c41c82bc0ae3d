"""Does TRL's importance-sampling branch change the GRPO update of CTranslate2 rollouts? One batch, four gradients.

    OMP_NUM_THREADS=1 python performance/engine_grpo_gradient.py [--warm-steps 6] [--repeats 2]

``performance/engine_grpo.py`` compares whole training runs, whose outcome varies from run to run. This script removes
that variance: it trains a LoRA agent for ``--warm-steps`` GRPO steps with CTranslate2 float32 rollouts (so the
adapters are not zero), then plays **one** rollout batch and feeds that same batch to TRL ``2 x --repeats`` times,
capturing the gradient each time (the optimizer step is skipped, so the weights never move):

* ``corrected``: as genenv trains with an engine: TRL's vLLM branch recomputes the old log-probabilities with the
  trained model and weights each sequence by ``exp(old - engine)`` (``vllm_importance_sampling_correction=True``);
* ``plain``: as with ``hf`` rollouts: no old log-probabilities, no importance weight.

LoRA dropout (0.05, the default) makes two gradients of the same batch differ even on the same path; the cosine of
two ``plain`` gradients is that noise floor. If ``corrected`` vs ``plain`` is as close as ``plain`` vs ``plain``, the
correction does not change the update, and a difference between engines in learning comes from the samples.
Writes ``results/performance/engine_grpo_gradient.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
from pathlib import Path

import torch
from engine_grpo import LEVEL0, agent_config, fixed_tasks  # this folder is on sys.path

from genenv.agents.grpo import GRPOAgentTrainer
from genenv.benchmarks.base import get_benchmark
from genenv.llm.models import load_policy
from genenv.machine import uptime

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.nn.functional.cosine_similarity(a, b, dim=0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--warm-steps", type=int, default=6, help="GRPO steps before the batch is frozen")
    parser.add_argument("--repeats", type=int, default=2, help="gradients per path")
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.repeats < 2:
        raise SystemExit("--repeats must be at least 2: two gradients of one path measure the noise floor")

    adapter = get_benchmark("reasoning_gym", families=LEVEL0, partial_credit=True)
    tasks = fixed_tasks(adapter, 4)
    torch.manual_seed(args.seed)
    config = agent_config(
        "ctranslate2", "float32", 1, args.learning_rate, args.seed, output_dir="/tmp/genenv-engine-grpo-gradient"
    )
    trainer = GRPOAgentTrainer(load_policy(args.model), adapter, config)
    load_start = uptime()
    warm_rewards = []
    for step in range(args.warm_steps):
        warm_rewards.append(trainer.train([tasks[(step * 2 + k) % 4] for k in range(2)], steps=1)["reward"])
    batch_tasks = [tasks[(args.warm_steps * 2 + k) % 4] for k in range(2)]

    trl = trainer.trainer
    play = trainer._rollout_func
    frozen: dict = {}

    def replay(prompts, trl_trainer):
        """The first call plays the batch; later calls hand TRL the same episodes (engine log-probs included)."""
        if "batch" not in frozen:
            frozen["batch"] = play(prompts, trl_trainer)
            rewards, g = frozen["batch"]["agent_reward"], config.num_generations
            if all(len(set(rewards[k : k + g])) == 1 for k in range(0, len(rewards), g)):
                raise SystemExit(f"the frozen batch has no reward variance within a group ({rewards}): its GRPO "
                                 "gradient is zero; try another --seed or --warm-steps")  # fmt: skip
        elif trl_trainer.vllm_importance_sampling_correction:
            trl_trainer.correct_engine_logprobs()
        return frozen["batch"]

    trl.rollout_func = replay
    params = [p for p in trainer.model.parameters() if p.requires_grad]
    gradients: dict[str, list[torch.Tensor]] = {"corrected": [], "plain": []}
    metrics: dict[str, list[dict]] = {"corrected": [], "plain": []}
    for path in ["corrected", "plain"] * args.repeats:
        trl.vllm_importance_sampling_correction = trl.args.vllm_importance_sampling_correction = path == "corrected"
        optimizer = getattr(trl.optimizer, "optimizer", trl.optimizer)  # accelerate's wrapper, or the raw one
        captured: list[torch.Tensor] = []
        step = optimizer.__dict__.get("step")  # an LR scheduler may have wrapped it on the instance
        optimizer.step = lambda *a, captured=captured, **k: captured.append(
            torch.cat([p.grad.detach().reshape(-1).clone() for p in params])
        )
        result = trainer.train(batch_tasks, steps=1)
        if step is None:
            del optimizer.step
        else:
            optimizer.step = step
        gradients[path].append(captured[0])
        metrics[path].append({k: v for k, v in result.items() if "importance_sampling" in k or "clip_ratio" in k})

    pairs, same, across = {}, [], []
    for (a, i), (b, j) in itertools.combinations(
        [(p, k) for p in ("corrected", "plain") for k in range(args.repeats)], 2
    ):
        pairs[f"{a}{i}-{b}{j}"] = {
            "cosine": cosine(gradients[a][i], gradients[b][j]),
            "norm_ratio": float(gradients[a][i].norm() / gradients[b][j].norm()),
        }
        (same if a == b else across).append(pairs[f"{a}{i}-{b}{j}"]["cosine"])
    record = {
        "command": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} python "
        f"performance/engine_grpo_gradient.py --model {args.model} --warm-steps {args.warm_steps} "
        f"--repeats {args.repeats} --learning-rate {args.learning_rate} --seed {args.seed}",
        "load_start": load_start,
        "load_end": uptime(),
        "warm_rewards": warm_rewards,
        "batch_rewards": list(frozen["batch"]["agent_reward"]),
        "trainable_parameters": sum(p.numel() for p in params),
        "pairs": pairs,
        "cosine_same_path_mean": sum(same) / len(same),
        "cosine_across_paths_mean": sum(across) / len(across),
        "trl_metrics": metrics,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "engine_grpo_gradient.json").write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: record[k] for k in ("cosine_same_path_mean", "cosine_across_paths_mean")}))


if __name__ == "__main__":
    main()
