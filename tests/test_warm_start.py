"""Expert traces and the supervised warm start: the rollout's token layout, agent-only loss, learning."""

import json

import pytest
import torch
from toy_benchmark import ToyAdapter

from genenv.agents.rollout import ToolSuffix, play_envs
from genenv.agents.warm_start import IGNORE, WarmStartConfig, WarmStartTrainer, tokenize_expert
from genenv.envs.expert import ExpertTraceError, expert_conversation, expert_messages, replay_actions, replay_expert
from genenv.envs.tool_env import ToolEnv
from genenv.llm.models import build_tiny_policy


def test_expert_trace_replays_to_the_maximum_with_executed_outputs():
    adapter = ToyAdapter()
    task = adapter.load_tasks("train")[2]
    messages, score = replay_expert(adapter, task)
    assert score.value == 1.0
    assert messages == expert_messages(adapter, task)
    assert [m["role"] for m in messages] == ["assistant", "tool", "assistant"]
    assert json.loads(messages[1]["content"]) == {"result": task.gold["sum"]}  # executed, not written by hand
    conversation = expert_conversation(adapter, task)
    assert [m["role"] for m in conversation["messages"][:2]] == ["system", "user"]
    assert conversation["tools"] == adapter.tools(task)


def test_gold_actions_must_make_exactly_one_episode():
    adapter = ToyAdapter()
    task = adapter.load_tasks("train")[0]
    with pytest.raises(ExpertTraceError, match="ended at gold action 1 of 2"):
        replay_actions(adapter, task, ["It is 1.", "It is 1."])
    with pytest.raises(ExpertTraceError, match="did not end"):
        replay_actions(adapter, task, [adapter.format_call("add", {"a": 0, "b": 1})])


def test_tokenized_expert_trace_is_the_rollout_layout_with_loss_on_agent_tokens_only():
    """Replaying the expert's actions through play_envs gives the same ids; labels = the rollout's env_mask."""
    policy = build_tiny_policy(seed=0)
    tok = policy.tokenizer
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    adapter = ToyAdapter()
    task = adapter.load_tasks("train")[1]
    conversation = expert_conversation(adapter, task)
    actions = iter([m["content"] for m in conversation["messages"] if m["role"] == "assistant"])

    def generate(batch):
        return [tok(next(actions), add_special_tokens=False)["input_ids"] + [eos] for _ in batch], None

    env = ToolEnv(adapter, tasks=[task], max_turns=4)
    env.reset(options={"task": task})
    batch = play_envs([env], tok, generate, eos_token_ids=[eos], few_shot=False)
    row = tokenize_expert(
        tok,
        conversation["messages"],
        conversation["tools"],
        exchanges=None,
        suffix=ToolSuffix(tok, eos),
        eos_token_id=eos,
    )
    assert batch.rewards == [1.0]
    assert row["input_ids"] == batch.prompt_ids[0] + batch.completion_ids[0]
    trained = [label != IGNORE for label in row["labels"]]
    assert trained == [False] * len(batch.prompt_ids[0]) + [bool(m) for m in batch.env_mask[0]]
    assert [label for label in row["labels"] if label != IGNORE].count(eos) == 2  # each turn learns to end


def _toy_conversations():
    adapter = ToyAdapter()
    return [expert_conversation(adapter, t) for t in adapter.load_tasks("train")]


def test_warm_start_lowers_the_loss_on_expert_traces(tmp_path):
    policy = build_tiny_policy(seed=0)
    config = WarmStartConfig(epochs=20, learning_rate=1e-2, per_device_train_batch_size=5, max_length=4096)
    trainer = WarmStartTrainer(policy.model, policy.tokenizer, config, output_dir=str(tmp_path))
    stats = trainer.train(_toy_conversations())
    assert stats["steps"] == 20 and stats["examples"] == 5 and stats["too_long"] == 0
    assert stats["loss_last"] < 0.7 * stats["loss_first"]
    assert not policy.model.training


def test_warm_start_of_a_lora_model_trains_the_adapter_only(tmp_path):
    from peft import LoraConfig, get_peft_model

    policy = build_tiny_policy(seed=0)
    model = get_peft_model(policy.model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    config = WarmStartConfig(epochs=2, learning_rate=1e-2, per_device_train_batch_size=5, max_length=4096)
    WarmStartTrainer(model, policy.tokenizer, config, output_dir=str(tmp_path)).train(_toy_conversations())
    after = {k: v.to(before[k].device) for k, v in model.state_dict().items()}  # the trainer may have moved it to CUDA
    changed = {k for k, v in before.items() if not torch.equal(v, after[k])}
    assert changed and all("lora_B" in k or "lora_A" in k for k in changed)


def test_the_micro_batch_leaves_the_update_unchanged(tmp_path):
    """4 traces of different lengths a step, as one padded micro-batch or as 4 of one: the same SGD update."""
    from peft import LoraConfig, get_peft_model

    conversations = _toy_conversations()[:4]
    for i, conversation in enumerate(conversations):  # requests of different lengths
        user = next(m for m in conversation["messages"] if m["role"] == "user")
        user["content"] += " please" * (7 * i)
    weights = []
    for batch, accumulation in ((4, 1), (1, 4)):
        policy = build_tiny_policy(seed=0)
        torch.manual_seed(0)  # the same random adapter both times
        lora = LoraConfig(r=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM", init_lora_weights=False)
        model = get_peft_model(policy.model, lora)  # random A and B: the first step's gradient reaches both
        config = WarmStartConfig(epochs=2, learning_rate=1e-2, per_device_train_batch_size=batch,
                                 gradient_accumulation_steps=accumulation, max_length=4096,
                                 sft_kwargs={"optim": "sgd"})  # plain SGD: a scaled loss would show  # fmt: skip
        trainer = WarmStartTrainer(model, policy.tokenizer, config, output_dir=str(tmp_path / str(batch)))
        assert trainer.train(conversations)["steps"] == 2
        weights.append({k: v.detach().cpu() for k, v in model.state_dict().items() if "lora_" in k})
    lengths = {len(r["input_ids"]) for r in trainer.examples(conversations)[0]}
    assert len(lengths) > 1  # the single micro-batch pads
    for key, value in weights[0].items():
        torch.testing.assert_close(value, weights[1][key], rtol=1e-4, atol=1e-6, msg=key)


def test_long_traces_are_left_out_not_cut():
    policy = build_tiny_policy(seed=0)
    trainer = WarmStartTrainer(policy.model, policy.tokenizer, WarmStartConfig(max_length=50))
    rows, too_long = trainer.examples(_toy_conversations())
    assert rows == [] and too_long == 5


@pytest.mark.parametrize("bad", [{"max_examples": -1}, {"epochs": 0}, {"mix_per_epoch": -2}, {"learning_rate": -1.0}])
def test_warm_start_config_is_checked(bad):
    with pytest.raises(ValueError):
        WarmStartConfig(**bad)
