"""GRPO step time of genenv's multi-turn ToolEnv trainer vs a bare TRL ``GRPOTrainer``, same prompts.

    GENENV_DATA_DIR=../shared/data python performance/grpo_overhead.py [--model smollm2] [--steps 3]

Both train the same model (LoRA, the default config's agent settings) on the same API-Bank level-1
prompts (the agent's chat prompt: tools, few-shot exchanges, the request) for ``--steps`` optimizer
steps after one warm-up step. The bare trainer generates one completion per prompt and gets a
constant reward; genenv plays ToolEnv episodes (parse, execute, score; API-call tasks end after one
call). Writes ``results/performance/grpo_overhead.json`` with the mean step times and their ratio.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import asdict
from pathlib import Path

from genenv.agents.agent import Agent
from genenv.agents.grpo import GRPOAgentConfig, GRPOAgentTrainer
from genenv.benchmarks.base import get_benchmark
from genenv.envs.tool_env import ToolEnv
from genenv.llm.generation import render_chat
from genenv.llm.models import load_policy

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance" / "grpo_overhead.json"
AGENT = GRPOAgentConfig(
    num_generations=2,
    max_new_tokens=64,
    max_completion_length=64,
    max_turns=2,
    per_device_train_batch_size=2,
    gradient_accumulation_steps=1,
    use_lora=True,
    output_dir="/tmp/genenv-grpo-overhead",
)


def genenv_step_seconds(model: str, tasks, adapter, steps: int) -> float:
    trainer = GRPOAgentTrainer(load_policy(model), adapter, AGENT)
    trainer.train(tasks[:1], steps=1)  # warm-up
    return trainer.train(tasks, steps=steps)["step_time"]


def bare_trl_step_seconds(model: str, prompts: list[str], steps: int) -> float:
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    policy = load_policy(model)
    times: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            times.append(time.perf_counter() - self.start)

    config = GRPOConfig(
        output_dir=AGENT.output_dir,
        per_device_train_batch_size=AGENT.per_device_train_batch_size,
        gradient_accumulation_steps=AGENT.gradient_accumulation_steps,
        num_generations=AGENT.num_generations,
        learning_rate=AGENT.learning_rate,
        beta=AGENT.kl_coef,
        temperature=AGENT.temperature,
        max_completion_length=AGENT.max_new_tokens,
        max_steps=steps + 1,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        bf16=False,
        activation_checkpointing=False,
        disable_tqdm=True,
        seed=AGENT.seed,
        shuffle_dataset=False,
    )
    lora = LoraConfig(
        r=AGENT.lora_r,
        lora_alpha=AGENT.lora_alpha,
        lora_dropout=AGENT.lora_dropout,
        target_modules=list(AGENT.lora_target_modules),
        task_type="CAUSAL_LM",
    )
    trainer = GRPOTrainer(
        model=policy.model,
        processing_class=policy.tokenizer,
        args=config,
        peft_config=lora,
        reward_funcs=lambda completions, **kwargs: [0.0] * len(completions),
        train_dataset=Dataset.from_dict({"prompt": prompts * (steps + 1)}),
        callbacks=[StepTimer()],
    )
    trainer.train()
    return sum(times[1:]) / len(times[1:])  # the first step is the warm-up


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    adapter = get_benchmark("apibank")
    tasks = adapter.load_tasks("level-1-api")[::40][: args.steps]
    tokenizer = load_policy(args.model).tokenizer
    agent = Agent(policy=None)  # only its prompt layout (few-shot exchanges) is used
    env = ToolEnv(adapter, tasks=tasks)
    prompts = []
    for task in tasks:
        _, info = env.reset(options={"task": task})
        prompts.append(render_chat(tokenizer, agent.conversation(env.messages, env.adapter), info["tools"]))
    bare = bare_trl_step_seconds(args.model, prompts, args.steps)
    ours = genenv_step_seconds(args.model, tasks, adapter, args.steps)
    record = {
        "command": f"GENENV_DATA_DIR=../shared/data python performance/grpo_overhead.py --model {args.model} "
        f"--steps {args.steps}",
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "settings": {k: v for k, v in asdict(AGENT).items() if k != "grpo_kwargs"},
        "bare_trl_step_seconds": bare,
        "genenv_step_seconds": ours,
        "ratio": ours / bare,
    }
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: record[k] for k in ("bare_trl_step_seconds", "genenv_step_seconds", "ratio")}))
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
