"""A custom RL loop over ``gym.make``: REINFORCE on reasoning-gym with a causal LM, no trainer library.

    python examples/custom_rl_loop.py [--model smollm2|qwen05|tiny|HF_PATH] [--episodes 16]

Each episode is one ``reset`` and the agent's turns until the env ends it; the reward is the benchmark's official
score. The update raises the log-probability of each turn in proportion to the episode's reward minus the running
mean reward.
"""

import argparse

import gymnasium as gym
import torch

import genenv  # noqa: F401  (registers the GenEnv-* ids)
from genenv.llm.models import load_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parser.parse_args()

    policy = load_policy(args.model)
    model, tokenizer = policy.model, policy.tokenizer
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    env = gym.make("GenEnv-ReasoningGym-v0", task_source="benchmark", split="train")  # real tasks, episode length 2
    baseline = 0.0
    for episode in range(args.episodes):
        observation, _ = env.reset(seed=episode)
        turns, done, reward = [], False, 0.0
        while not done:
            prompt = tokenizer.apply_chat_template(
                [{"role": "user", "content": observation}], add_generation_prompt=True, return_tensors="pt",
                return_dict=True,
            )["input_ids"]  # fmt: skip
            with torch.no_grad():
                out = model.generate(prompt, max_new_tokens=args.max_new_tokens, do_sample=True, top_k=0)
            action_ids = out[0, prompt.shape[1] :]
            action = tokenizer.decode(action_ids, skip_special_tokens=True)
            observation, reward, terminated, truncated, _ = env.step(action)
            turns.append((prompt, action_ids))
            done = terminated or truncated
        advantage = reward - baseline
        baseline = 0.9 * baseline + 0.1 * reward
        loss = torch.zeros(())
        for prompt, action_ids in turns:
            ids = torch.cat([prompt[0], action_ids]).unsqueeze(0)
            logits = model(ids).logits[0, prompt.shape[1] - 1 : -1]
            loss = loss - advantage * torch.log_softmax(logits, -1).gather(1, action_ids[:, None]).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(f"episode {episode}: reward {reward:.2f}, turns {len(turns)}, advantage {advantage:+.2f}", flush=True)


if __name__ == "__main__":
    main()
