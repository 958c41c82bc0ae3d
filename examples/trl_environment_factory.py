"""Benchmark tasks in TRL's ``GRPOTrainer(environment_factory=...)``: API-Bank, scored by its official evaluator.

    GENENV_DATA_DIR=../shared/data python examples/trl_environment_factory.py [--model smollm2|qwen05|tiny] [--steps 2]

Every rollout plays one task in a genenv ``ToolEnv``; the agent's tool calls go through the environment's one tool,
``call_tool(name, arguments)``, and ``episode_reward`` is the episode's official score.
"""

import argparse

from trl import GRPOConfig, GRPOTrainer

from genenv.integrations.trl import environment_factory, episode_reward, task_dataset
from genenv.llm.models import load_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--output-dir", default="runs/trl-apibank")
    args = parser.parse_args()

    Env = environment_factory("apibank")  # the benchmark's episode length and official scoring
    tasks = Env.adapter.load_tasks("level-1-api")[:8]
    policy = load_policy(args.model)
    trainer = GRPOTrainer(
        model=policy.model,
        processing_class=policy.tokenizer,
        reward_funcs=episode_reward,
        train_dataset=task_dataset(Env.adapter, tasks),
        environment_factory=Env,
        args=GRPOConfig(
            output_dir=args.output_dir,
            num_generations=2,
            per_device_train_batch_size=2,
            max_completion_length=64,
            max_steps=args.steps,
            use_cpu=True,  # on a GPU machine: drop use_cpu and bf16
            bf16=False,
            report_to=[],
            save_strategy="no",
        ),
    )
    trainer.train()
    for record in trainer.state.log_history:
        if "reward" in record:
            print(f"step {record['step']}: mean episode reward {record['reward']:.3f}")


if __name__ == "__main__":
    main()
