"""The batched token-level rollout: lock-step batching changes nothing under greedy decoding."""

import pytest
import torch
from toy_benchmark import ToyAdapter

from genenv.agents.agent import Agent
from genenv.envs.tool_env import ToolEnv
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import build_tiny_policy


@pytest.fixture(scope="module")
def lively_policy():
    """The tiny random model with its weights scaled up: at init scale it greedily repeats a newline."""
    policy = build_tiny_policy(seed=1)
    with torch.no_grad():
        for name, weight in policy.model.named_parameters():
            if "norm" not in name:
                weight.mul_(5.0)
    return policy


def _envs(adapter, tasks):
    # max_action_chars=1 refuses every action of the random model, so each episode runs all its turns and
    # every turn continues a longer, row-specific history (the refusal names the action's length).
    return [ToolEnv(adapter, tasks=tasks, max_turns=3, max_action_chars=1) for _ in tasks]


def test_batched_rollout_equals_one_at_a_time_under_greedy_decoding(lively_policy):
    adapter = ToyAdapter()
    tasks = adapter.load_tasks("train")[:4]
    agent = Agent(lively_policy, SamplingConfig(max_new_tokens=12))
    batched = agent.rollout(_envs(adapter, tasks), tasks, seed=0)
    single = [agent.rollout(_envs(adapter, [task]), [task], seed=0)[0] for task in tasks]
    actions = [[turn.action for turn in episode.trajectory.turns] for episode in batched]
    assert len({tuple(a) for a in actions}) > 1, "rows should differ, or the test proves nothing about padding"
    for b, s in zip(batched, single):
        assert [t.error for t in b.trajectory.turns] == ["action_too_long"] * 3
        assert [t.action for t in b.trajectory.turns] == [t.action for t in s.trajectory.turns]
        assert b.messages == s.messages and b.reward == s.reward and b.truncated and s.truncated


class ConversationAdapter(ToyAdapter):
    """The toy task with a second user turn: the first plain answer brings one more request."""

    def start(self, task):
        return {"calls": 0, "follow_ups": ["Thanks. And what is that plus 1?"]}

    def next_user_message(self, state, answer):
        return state["follow_ups"].pop() if state["follow_ups"] else None


def test_a_follow_up_user_message_continues_the_rollout(lively_policy):
    from genenv.agents.rollout import play_envs

    tokenizer = lively_policy.tokenizer
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    replies = iter(["It is 3.", "It is 4."])

    def generate(batch):
        return [tokenizer(next(replies), add_special_tokens=False)["input_ids"] + [eos, eos] for _ in batch], None

    adapter = ConversationAdapter()
    env = ToolEnv(adapter, tasks=adapter.load_tasks("train")[:1], max_turns=4)
    env.reset(seed=0)
    batch = play_envs([env], tokenizer, generate, eos_token_ids=[eos], few_shot=False)
    (episode,) = batch.episodes
    assert [m["role"] for m in episode.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert episode.trajectory.final_answer == "It is 4." and len(episode.trajectory.turns) == 2
    sampled = [tok for tok, m in zip(batch.completion_ids[0], batch.env_mask[0]) if m]
    from_env = [tok for tok, m in zip(batch.completion_ids[0], batch.env_mask[0]) if not m]
    assert tokenizer.decode(sampled).count("It is") == 2
    assert "And what is that plus 1?" in tokenizer.decode(from_env) and "<tool_response>" not in tokenizer.decode(
        from_env
    )


def test_reusing_the_kv_cache_across_turns_changes_no_greedy_token(lively_policy):
    """Episodes of 1 to 4 turns in one batch: finished rows leave the cache, cut tokens are masked out."""
    from genenv.agents.rollout import play_envs
    from genenv.llm.engines.hf import hf_generator

    adapter = ToyAdapter()
    tasks = adapter.load_tasks("train")[:5]
    runs = {}
    for reuse in (False, True):
        envs = [ToolEnv(adapter, tasks=[t], max_turns=m, max_action_chars=1) for t, m in zip(tasks, [1, 3, 2, 4, 3])]
        for env, task in zip(envs, tasks):
            env.reset(options={"task": task})
        tokenizer = lively_policy.tokenizer
        generate = hf_generator(lively_policy.model, tokenizer, SamplingConfig(max_new_tokens=12), reuse_cache=reuse)
        batch = play_envs(envs, tokenizer, generate, eos_token_ids=[tokenizer.eos_token_id], max_completion_length=200)
        runs[reuse] = (batch.completion_ids, generate.turn_cache.reused_tokens)
    assert len({len(ids) for ids in runs[True][0]}) > 1, "episodes should end at different turns"
    assert runs[True][0] == runs[False][0]
    assert runs[False][1] == 0 and runs[True][1] > 1000


def test_rows_that_ended_leave_the_batch_and_change_no_greedy_token(lively_policy):
    """Turns decoded in steps of 3 tokens, the rows that ended leaving the batch, give the tokens of one ``generate``
    call per turn, and the next turn still reuses every row's cache. The end tokens are ones the random model writes
    at different steps of different rows."""
    from genenv.agents.rollout import play_envs
    from genenv.llm.engines.hf import hf_generator
    from genenv.llm.turn_cache import TurnCache

    adapter = ToyAdapter()
    tasks = adapter.load_tasks("train")[:5]
    model, tokenizer = lively_policy.model, lively_policy.tokenizer
    texts = ["Hello", "Paris is a city in", "12 34 56", "def f(x):", "The quick brown fox", "Q: why?\nA:"]
    prompts = [tokenizer(text)["input_ids"] for text in texts]
    rows: list[int] = []
    original = model.generate

    def counted(**kwargs):
        rows.append(kwargs["input_ids"].shape[0])
        return original(**kwargs)

    def play(chunk, ends):
        envs = [ToolEnv(adapter, tasks=[t], max_turns=m, max_action_chars=1) for t, m in zip(tasks, [1, 3, 2, 4, 3])]
        for env, task in zip(envs, tasks):
            env.reset(options={"task": task})
        generate = hf_generator(model, tokenizer, SamplingConfig(max_new_tokens=12))
        generate.turn_cache.chunk_tokens = chunk
        batch = play_envs(
            envs, tokenizer, generate, eos_token_ids=[tokenizer.eos_token_id, *ends], max_completion_length=200
        )
        return batch.completion_ids, generate.turn_cache.reused_tokens

    greedy = {"do_sample": False, "pad_token_id": tokenizer.pad_token_id}
    written = TurnCache(tokenizer.pad_token_id, None).generate(model, prompts, 12, **greedy)
    ends = sorted({ids[2 * i + 1] for i, ids in enumerate(written)})  # row i ends by its step 2 i + 2
    original_end = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = ends
    model.generate = counted
    try:
        one_cache, step_cache = TurnCache(tokenizer.pad_token_id, None), TurnCache(tokenizer.pad_token_id, 3)
        one_call = one_cache.generate(model, prompts, 12, **greedy)
        rows.clear()
        stepped = step_cache.generate(model, prompts, 12, **greedy)
        stepped_rows = list(rows)
        whole, whole_reused = play(None, ends)
        pruned, pruned_reused = play(3, ends)
    finally:
        model.generation_config.eos_token_id = original_end
        del model.generate
    steps = [next(k for k, t in enumerate(ids) if t in ends) for ids in one_call]
    assert len(set(steps)) > 2 and min(steps) < 9, "rows should end at different steps, some before the last"
    assert stepped == one_call
    # the cache put together holds, for every row, the keys and values one call computes for the tokens it keeps
    for r, (_, kept) in enumerate(step_cache.rows):
        columns = step_cache.mask[r, : step_cache.input_width + len(kept)].nonzero().flatten()
        for one, stepped_layer in zip(one_cache.cache.layers, step_cache.cache.layers):
            torch.testing.assert_close(stepped_layer.keys[r][:, columns], one.keys[r][:, columns])
            torch.testing.assert_close(stepped_layer.values[r][:, columns], one.values[r][:, columns])
    assert stepped_rows == sorted(stepped_rows, reverse=True) and stepped_rows[-1] < len(prompts)
    assert pruned == whole
    assert pruned_reused > 0 and whole_reused > 0


def test_repeated_prompts_are_prefilled_once_and_change_no_greedy_token(lively_policy):
    """G attempts at each of two tasks of different lengths: the shared prompts' cache is copied to every attempt."""
    from genenv.agents.rollout import play_envs
    from genenv.llm.engines.hf import hf_generator

    adapter = ToyAdapter()
    short, long = adapter.load_tasks("train")[0], adapter._task(123456, 7890123, "train")
    tasks = [short, long, short, long, long, short]
    runs = {}
    for reuse in (False, True):
        envs = [ToolEnv(adapter, tasks=[t], max_turns=1, max_action_chars=1) for t in tasks]
        for env, task in zip(envs, tasks):
            env.reset(options={"task": task})
        tokenizer = lively_policy.tokenizer
        generate = hf_generator(lively_policy.model, tokenizer, SamplingConfig(max_new_tokens=12), reuse_cache=reuse)
        batch = play_envs(envs, tokenizer, generate, eos_token_ids=[tokenizer.eos_token_id], max_completion_length=200)
        runs[reuse] = (batch.prompt_ids, batch.completion_ids, generate.turn_cache.reused_tokens)
    prompts = runs[True][0]
    assert len({len(p) for p in prompts}) == 2, "the two tasks' prompts should differ in length (left padding)"
    assert runs[True][1] == runs[False][1]
    shared = sum(len(p) - 1 for p in prompts) - sum(len(p) - 1 for p in {tuple(p): p for p in prompts}.values())
    assert runs[True][2] == shared > 0 and runs[False][2] == 0
