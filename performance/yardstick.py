"""The machine's speed at the main job's kind of work: fixed LoRA forward/backward steps of the embedded SmolLM2.

    python performance/yardstick.py     # prints {"seconds": ..., "cpu_seconds": ..., "threads": ...}

15 steps of one 132-token sequence (the warm start's mean length) through SmolLM2-135M with the main job's LoRA (the
agent's defaults: r 16 on every projection), after 3 unmeasured ones, with torch's default threads. The same command
on the same machine differs by the hour (a shared host); `performance/first_contact.sh` runs it right after its timed
command, so first-contact figures taken at different times can be told apart from changes of the code.
"""

from __future__ import annotations

import json
import time

import torch

STEPS, WARMUP, LENGTH = 15, 3, 132


def main() -> None:
    from peft import LoraConfig, get_peft_model

    from genenv.agents.grpo import GRPOAgentConfig
    from genenv.llm.models import load_policy

    torch.manual_seed(0)
    agent = GRPOAgentConfig()  # the main job's LoRA: rank, alpha and target projections
    lora = LoraConfig(r=agent.lora_r, lora_alpha=agent.lora_alpha, target_modules=agent.lora_target_modules)
    model = get_peft_model(load_policy("smollm2").model, lora)
    model.train()
    tokens = torch.randint(0, 40000, (1, LENGTH))
    for _ in range(WARMUP):
        model(input_ids=tokens, labels=tokens).loss.backward()
    began, cpu = time.perf_counter(), time.process_time()
    for _ in range(STEPS):
        model(input_ids=tokens, labels=tokens).loss.backward()
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    print(json.dumps({"seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2), "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
