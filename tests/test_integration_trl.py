"""genenv.integrations.trl: benchmark tasks in TRL's real GRPOTrainer(environment_factory=...), rewards checked against
ToolEnv playing the same actions."""

from __future__ import annotations

import inspect
import json
import os

import numpy as np
import pytest
import torch
from conftest import data_dir, two_step_grpo_config
from scripted_simulator import ScriptedSimulator
from test_apibank_env import CALCULATOR_TASK
from test_train import HARD_TASK

from genenv.envs.rows import task_row
from genenv.envs.tool_env import score_actions
from genenv.integrations.trl import environment_factory, episode_reward, task_dataset
from genenv.llm.models import build_tiny_policy

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


@pytest.fixture(scope="module")
def environment():
    """The API-Bank environment class (official scoring), built once: the adapter is shared by every rollout."""
    return environment_factory("apibank", data_dir=str(data_dir("apibank")), max_turns=4)


def written_tasks(adapter) -> list:
    """Two Calculator tasks written by a (scripted) simulator and validated by the adapter."""
    simulator = ScriptedSimulator([json.dumps(CALCULATOR_TASK), json.dumps(HARD_TASK)], "Calculator")
    proposals = simulator.propose(adapter, rng=np.random.default_rng(0))
    assert all(p.task is not None and p.task.source == "generated" for p in proposals)
    return [p.task for p in proposals]


def toolenv_reward(adapter, task, completion: list[dict]) -> float:
    """ToolEnv's reward for the actions of a TRL rollout: each tool call as the benchmark writes it, then the final
    message; an episode the actions leave unfinished is scored as it stands."""
    actions = []
    for message in completion:
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            actions.append(adapter.format_call(arguments["name"], arguments["arguments"]))
    if completion and completion[-1]["role"] == "assistant" and not completion[-1].get("tool_calls"):
        actions.append(completion[-1]["content"])
    return score_actions(adapter, task, actions, max_turns=4)


def scripted_generate(model, tokenizer):
    """The tiny model's sampling replaced by a script (its forward pass, which GRPO trains, stays the model's): the
    first attempt of each group calls the Calculator with the formula the request asks for, the second with a wrong
    one; after a tool response the agent answers in plain text."""

    def generate(input_ids, attention_mask=None, generation_config=None, **kwargs):
        rows = []
        for index, ids in enumerate(input_ids):
            prompt = tokenizer.decode(ids[attention_mask[index].bool()])
            if "<tool_response>" in prompt:
                text = "Done."
            else:
                formula = prompt.rsplit("How much is ", 1)[1].split("?", 1)[0] if index % 2 == 0 else "1+1"
                call = {"name": "call_tool", "arguments": {"name": "Calculator", "arguments": {"formula": formula}}}
                text = f"<tool_call>\n{json.dumps(call)}\n</tool_call>"
            rows.append(tokenizer(text + "<|im_end|>", add_special_tokens=False)["input_ids"])
        width = max(map(len, rows))
        pad = tokenizer.pad_token_id
        completion = torch.tensor([row + [pad] * (width - len(row)) for row in rows])
        return torch.cat([input_ids, completion], dim=1)

    model.generate = generate


def train_two_steps(environment, dataset, tmp_path, scripted: bool) -> list[tuple]:
    """A user's GRPO script: the tiny model, the genenv environment and its reward, 2 steps; returns every scored
    batch (completions, tasks, rewards) as the reward function saw it, and checks TRL logged those rewards."""
    from trl import GRPOTrainer

    policy = build_tiny_policy(seed=0)
    if scripted:
        scripted_generate(policy.model, policy.tokenizer)
    seen = []

    def reward(completions, environments, task, **kwargs):
        rewards = episode_reward(completions, environments, **kwargs)
        seen.append((completions, task, rewards))
        return rewards

    args = two_step_grpo_config(tmp_path, max_completion_length=96 if scripted else 16)
    trainer = GRPOTrainer(
        model=policy.model,
        processing_class=policy.tokenizer,
        reward_funcs=reward,
        train_dataset=dataset,
        environment_factory=environment,
        args=args,
    )
    trainer.train()
    logged = [entry["rewards/reward/mean"] for entry in trainer.state.log_history if "rewards/reward/mean" in entry]
    assert logged == pytest.approx([float(np.mean(rewards)) for _, _, rewards in seen])
    assert len(seen) == 2 and trainer.state.global_step == 2
    return seen


def check_against_toolenv(environment, seen) -> list[float]:
    """Every reward TRL trained on equals ToolEnv's on the same actions; all G attempts of a group played one task."""
    from genenv.benchmarks.base import Task

    rewards = []
    for completions, tasks, batch_rewards in seen:
        assert tasks[0] == tasks[1] and tasks[2] == tasks[3]  # G = 2 attempts per group, read from the row
        for completion, task, reward in zip(completions, tasks, batch_rewards, strict=True):
            task = Task.from_dict(json.loads(task))
            assert reward == toolenv_reward(environment.adapter, task, completion)
            rewards.append(reward)
    return rewards


def test_grpo_on_benchmark_tasks(environment, tmp_path):
    adapter = environment.adapter
    tasks = sorted(adapter.load_tasks("level-1-api"), key=lambda t: len(task_row(adapter, t)["prompt"][0]["content"]))
    seen = train_two_steps(environment, task_dataset(adapter, tasks[:2]), tmp_path, scripted=False)
    check_against_toolenv(environment, seen)


def test_grpo_on_simulator_written_tasks(environment, tmp_path):
    dataset = task_dataset(environment.adapter, written_tasks(environment.adapter))
    seen = train_two_steps(environment, dataset, tmp_path, scripted=True)
    rewards = check_against_toolenv(environment, seen)
    assert sorted(set(rewards)) == [0.0, 1.0]  # the right call scores 1, the wrong one 0
    tool_calls = [m for completions, _, _ in seen for c in completions for m in c if m.get("tool_calls")]
    assert len(tool_calls) == 8  # every rollout called its tool through call_tool


def test_the_environment_class_is_in_trls_contract(environment):
    assert len(inspect.signature(environment).parameters) == 0
    public = [name for name, _ in inspect.getmembers(environment, inspect.isfunction) if not name.startswith("_")]
    assert public == ["call_tool", "reset"]  # TRL's tools: every public method but reset
    from transformers.utils import get_json_schema

    schema = get_json_schema(environment().call_tool)["function"]["parameters"]
    assert schema["properties"]["arguments"]["type"] == "object" and schema["required"] == ["name", "arguments"]


def test_call_tool_plays_toolenv_actions(environment):
    (task, _) = written_tasks(environment.adapter)
    env = environment()
    with pytest.raises(RuntimeError, match="before reset"):
        env.call_tool("Calculator", {"formula": "1"})
    with pytest.raises(ValueError, match="no 'task' column"):
        env.reset(prompt=[])
    env.reset(**task_row(environment.adapter, task))
    assert "60" in env.call_tool("Calculator", {"formula": "(12+8)*3"})
    assert env.call_tool("Calculator", {"formula": "1"}) == "The episode is over."  # API-Bank level 1: one turn
    assert episode_reward([[{"role": "assistant", "content": "It is 60."}]], [env]) == [1.0]
    with pytest.raises(ValueError, match="arguments"):
        env.call_tool("Calculator", "formula=1")
    env.reset(**task_row(environment.adapter, task))  # a plain answer ends a level-1 API task unsolved
    assert episode_reward(["It is 60."], [env]) == [0.0]
    # a response task is scored on the final answer (ROUGE-L against the gold reply)
    tasks = environment.adapter.load_tasks("level-1-response")
    (task,) = [t for t in tasks if t.task_id == "apibank-l1-response-0170"]  # "Can you tell me today's date?"
    env.reset(**task_row(environment.adapter, task))
    assert episode_reward([[{"role": "assistant", "content": task.gold["response"]}]], [env]) == [1.0]
    env.reset(**task_row(environment.adapter, task))
    assert episode_reward([[{"role": "tool", "content": "2023-03-31"}]], [env]) == [0.0]  # no answer: as it stands


def test_bad_input_is_refused(environment):
    with pytest.raises(ValueError, match="at least one task"):
        task_dataset(environment.adapter, [])
    with pytest.raises(ValueError, match="none given"):
        episode_reward([[]], None)
    with pytest.raises(ValueError, match="adapter instance"):
        environment_factory(environment.adapter, scoring="official")
    with pytest.raises(ValueError, match="max_turns"):
        environment_factory(environment.adapter, max_turns=0)
