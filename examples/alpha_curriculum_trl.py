"""GenEnv's curriculum inside TRL: an LLM simulator writes reasoning-gym tasks for the agent's current success, and is
rewarded (and updated by RWR) toward the tasks the agent solves about alpha of the time.

    python examples/alpha_curriculum_trl.py [--model smollm2|qwen05|tiny] [--steps 2]

``curriculum.dataset()`` is the endless stream of written, validated tasks TRL trains on; ``curriculum.reporting``
wraps the reward function so each batch's rewards reach the curriculum (p_hat per task, R_env per written task).
"""

import argparse

from trl import GRPOConfig, GRPOTrainer

from genenv import AlphaCurriculum, AlphaCurriculumConfig
from genenv.curriculum import RWRConfig
from genenv.envs.simulator import Simulator
from genenv.integrations.trl import environment_factory, episode_reward
from genenv.llm.models import load_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--output-dir", default="runs/trl-alpha-curriculum")
    args = parser.parse_args()

    curriculum = AlphaCurriculum(
        "reasoning_gym",
        Simulator(load_policy(args.model)),  # its own weights: never the agent's
        AlphaCurriculumConfig(alpha=0.5, beta=10.0, band_k=0.4, rwr=RWRConfig()),  # rwr=None: never update it
    )
    policy = load_policy(args.model)
    trainer = GRPOTrainer(
        model=policy.model,
        processing_class=policy.tokenizer,
        reward_funcs=curriculum.reporting(episode_reward),
        train_dataset=curriculum.dataset(),
        environment_factory=environment_factory(curriculum.adapter),
        args=GRPOConfig(
            output_dir=args.output_dir,
            num_generations=2,
            per_device_train_batch_size=2,
            max_completion_length=64,
            max_steps=args.steps,
            shuffle_dataset=False,  # required: a shuffle buffer would read tasks far ahead of the agent's rewards
            use_cpu=True,
            bf16=False,
            report_to=[],
            save_strategy="no",
        ),
    )
    trainer.train()
    for record in trainer.state.log_history:
        if "curriculum/p_hat" in record:
            p_hat, r_env = record["curriculum/p_hat"], record["curriculum/r_env"]
            print(f"step {record['step']}: p_hat {p_hat:.2f}, R_env {r_env:.3f}")


if __name__ == "__main__":
    main()
