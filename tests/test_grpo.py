"""GRPO update of the agent (genenv.agents.grpo) with the tiny random policy and the toy benchmark."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import torch
from toy_benchmark import ToyAdapter

from genenv.agents.grpo import REFERENCE_ADAPTER, GRPOAgentConfig, GRPOAgentTrainer, rollout_to_trl
from genenv.agents.rollout import RolloutBatch, play_episodes
from genenv.benchmarks.base import Score, Task, Trajectory
from genenv.llm.models import build_tiny_policy

TOOL_CALL = '<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>'
ANSWER = "1 + 2 = 3."


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    """The tiny model's matrices gain nothing from threads, and on a busy 2-core machine two OpenMP threads make
    them up to 50x slower (spinning at barriers); restored after this module."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


class GradedToyAdapter(ToyAdapter):
    """The toy benchmark with a score that varies with the answer text, so GRPO groups have reward variance
    (the random tiny model never solves a task) and the rewards TRL sees can be told apart."""

    def score(self, task: Task, trajectory: Trajectory) -> Score:
        if trajectory.final_answer and str(task.gold["sum"]) in trajectory.final_answer:
            return Score(1.0)
        text = trajectory.final_answer or "".join(turn.action for turn in trajectory.turns)
        return Score((zlib.crc32(text.encode()) % 97) / 100)


def tiny_config(tmp_path, **overrides) -> GRPOAgentConfig:
    settings = dict(
        num_generations=2,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=1,
        max_new_tokens=8,
        max_completion_length=48,
        max_turns=2,
        few_shot=False,
        learning_rate=1e-2,
        temperature=1.0,
        use_lora=False,  # a full fine-tune of the tiny model; LoRA where a test asks for it (rank 8 on q/k/v/o)
        lora_r=8,
        lora_alpha=16,
        lora_target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        engine="auto",
        output_dir=str(tmp_path / "trl"),
    )
    settings.update(overrides)
    return GRPOAgentConfig(**settings)


def scripted_generator(tokenizer, eos_id: int, texts: list[str], tail: int = 3):
    """A GenerateFn answering call k (turn k, every row in lock-step) with ``texts[k]`` + eos + padding."""
    calls = [0]

    def generate(batch):
        text = texts[min(calls[0], len(texts) - 1)]
        calls[0] += 1
        ids = tokenizer(text, add_special_tokens=False)["input_ids"] + [eos_id] + [tokenizer.pad_token_id] * tail
        return [list(ids) for _ in batch], None

    return generate


# -- the multi-turn rollout and its loss mask (no training) ------------------------------------


def test_tool_response_tokens_are_masked_and_sequence_is_the_chat_rendering():
    policy = build_tiny_policy(0)
    tok = policy.tokenizer
    adapter = ToyAdapter()
    task = adapter.load_tasks("train")[1]  # 1 + 2
    batch = play_episodes(
        adapter,
        [task, task],
        tok,
        scripted_generator(tok, tok.eos_token_id, [TOOL_CALL, ANSWER]),
        eos_token_ids=[tok.eos_token_id],
        max_turns=4,
        max_completion_length=512,
        few_shot=False,
    )
    assert isinstance(batch, RolloutBatch) and batch.logprobs is None
    episode = batch.episodes[0]
    assert [turn.action for turn in episode.trajectory.turns] == [TOOL_CALL, ANSWER]
    assert batch.rewards == [1.0, 1.0] == [adapter.score(e.task, e.trajectory).value for e in batch.episodes]

    ids, mask = batch.completion_ids[0], batch.env_mask[0]
    assert len(ids) == len(mask) and mask[0] == 1 and mask[-1] == 1
    # The trained sequence is exactly the chat template's rendering of the episode (no re-tokenisation drift).
    expected = tok(
        tok.apply_chat_template(episode.messages, tools=episode.tools, tokenize=False), add_special_tokens=False
    )["input_ids"]
    assert batch.prompt_ids[0] + ids == expected[:-1]  # the template adds "\n" after the last <|im_end|>

    # mask == 1: the two assistant turns (with their end-of-turn tokens); mask == 0: the tool-response block.
    sampled = tok.decode([t for t, m in zip(ids, mask) if m], skip_special_tokens=False)
    assert sampled == TOOL_CALL + "<|im_end|>" + ANSWER + "<|im_end|>"
    masked = tok.decode([t for t, m in zip(ids, mask) if not m], skip_special_tokens=False)
    tool_block = '\n<|im_start|>user\n<tool_response>\n{"result": 3}\n</tool_response><|im_end|>\n'
    assert masked == tool_block + "<|im_start|>assistant\n"
    zeros = [k for k, m in enumerate(mask) if not m]
    assert zeros == list(range(zeros[0], zeros[-1] + 1))  # one contiguous block between the turns
    assert batch.token_counts["env_tokens"] == 2 * len(zeros)
    trl_output = rollout_to_trl(batch)
    assert trl_output["env_mask"] == batch.env_mask and trl_output["agent_reward"] == [1.0, 1.0]


def test_token_budget_ends_episode_without_tool_tokens_and_cut_turn_gets_masked_eos():
    policy = build_tiny_policy(0)
    tok = policy.tokenizer
    adapter = ToyAdapter()
    task = adapter.load_tasks("train")[1]
    call_len = len(tok(TOOL_CALL, add_special_tokens=False)["input_ids"])
    # Room for the call but not for the tool response: the episode ends after turn 1, scored, nothing appended.
    batch = play_episodes(
        adapter,
        [task],
        tok,
        scripted_generator(tok, tok.eos_token_id, [TOOL_CALL, ANSWER]),
        eos_token_ids=[tok.eos_token_id],
        max_turns=4,
        max_completion_length=call_len + 10,
        few_shot=False,
    )
    assert batch.episodes[0].truncated and len(batch.episodes[0].trajectory.turns) == 1
    assert batch.env_mask[0] == [1] * (call_len + 1) and batch.rewards == [0.0]
    assert batch.episodes[0].info["truncated_by"] == "max_completion_length"

    # A turn cut by the per-turn limit (no eos generated) gets an eos inserted, masked, before the tool block.
    def no_eos(batch_ids):
        return [tok(TOOL_CALL, add_special_tokens=False)["input_ids"] for _ in batch_ids], None

    batch = play_episodes(
        adapter,
        [task],
        tok,
        no_eos,
        eos_token_ids=[tok.eos_token_id],
        max_turns=2,
        max_completion_length=2048,
        few_shot=False,
    )
    ids, mask = batch.completion_ids[0], batch.env_mask[0]
    assert ids[call_len] == tok.eos_token_id and mask[call_len] == 0 and mask[:call_len] == [1] * call_len
    assert batch.episodes[0].truncated  # max_turns=2 reached


# -- GRPO through TRL --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Two GRPO steps (beta > 0, so the KL path runs) with spies on what TRL computes."""
    tmp = tmp_path_factory.mktemp("grpo")
    adapter = GradedToyAdapter()
    trainer = GRPOAgentTrainer(build_tiny_policy(0), adapter, tiny_config(tmp, kl_coef=0.04))
    before = {name: p.detach().clone() for name, p in trainer.model.named_parameters()}
    seen = {"rewards": [], "episodes": [], "outputs": []}
    trl = trainer.trainer
    calculate, generate_and_score = trl._calculate_rewards, trl._generate_and_score_completions

    def spy_rewards(*args, **kwargs):
        rewards = calculate(*args, **kwargs)
        seen["rewards"].append(rewards[:, 0].tolist())
        seen["episodes"].append(list(trainer.last_rollout.episodes))
        return rewards

    def spy_generate(inputs):
        output = generate_and_score(inputs)
        seen["outputs"].append(output)
        return output

    trl._calculate_rewards, trl._generate_and_score_completions = spy_rewards, spy_generate
    tasks = adapter.load_tasks("train")[:3]
    metrics = trainer.train(tasks, steps=2)
    return trainer, adapter, metrics, before, seen


def test_two_grpo_steps_update_the_policy_and_report_finite_metrics(trained):
    trainer, _, metrics, before, _ = trained
    assert metrics["steps"] == 2 and metrics["episodes"] == 4 == len(trainer.episodes)
    for key in (
        "reward",
        "reward_std",
        "loss",
        "kl",
        "step_time",
        "train_time",
        "prompt_tokens",
        "completion_tokens",
        "env_tokens",
        "turns",
    ):
        assert math.isfinite(metrics[key]), key
    assert metrics["completion_tokens"] > 0 and metrics["step_time"] > 0
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p, before[n])]
    assert changed, "no parameter changed after two GRPO steps"
    assert trainer.optimizer_steps == 2 and not trainer.model.training


def test_rewards_reaching_trl_are_the_adapter_scores(trained):
    _, adapter, metrics, _, seen = trained
    assert len(seen["rewards"]) == 2
    for rewards, episodes in zip(seen["rewards"], seen["episodes"]):
        scores = [adapter.score(e.task, e.trajectory).value for e in episodes]
        assert rewards == pytest.approx(scores) and rewards == pytest.approx([e.reward for e in episodes])
    every = [r for rewards in seen["rewards"] for r in rewards]
    assert metrics["reward"] == pytest.approx(sum(every) / len(every))
    # each step played one task G=2 times, and the two rows of a group are the same task
    for episodes in seen["episodes"]:
        assert episodes[0].task.task_id == episodes[1].task.task_id


def test_env_mask_reaches_trl_as_tool_mask(tmp_path):
    """A scripted multi-turn rollout (tool call, then answer) through TRL: TRL's tool_mask is our env_mask."""
    adapter = ToyAdapter()
    trainer = GRPOAgentTrainer(build_tiny_policy(1), adapter, tiny_config(tmp_path, max_completion_length=256))
    tok = trainer.tokenizer
    trainer._generator = lambda: scripted_generator(tok, tok.eos_token_id, [TOOL_CALL, ANSWER])
    outputs = []
    generate_and_score = trainer.trainer._generate_and_score_completions

    def spy(inputs):
        outputs.append(generate_and_score(inputs))
        return outputs[-1]

    trainer.trainer._generate_and_score_completions = spy
    metrics = trainer.train([adapter.load_tasks("train")[1]], steps=1)
    assert metrics["reward"] == 1.0 and metrics["turns"] == 2.0 and metrics["env_tokens"] > 0
    rollout = trainer.last_rollout
    tool_mask = outputs[0]["tool_mask"]
    for row, mask in enumerate(rollout.env_mask):
        assert tool_mask[row, : len(mask)].tolist() == mask
        assert outputs[0]["completion_ids"][row, : len(mask)].tolist() == rollout.completion_ids[row]
    assert (tool_mask == 0).any()


class HalfSolvableToyAdapter(GradedToyAdapter):
    """Every other task scores 0 whatever the agent does (its GRPO group has zero advantages); the rest are graded."""

    @staticmethod
    def unsolvable(task: Task) -> bool:
        return int(task.task_id.split("-")[1]) % 2 == 0

    def score(self, task: Task, trajectory: Trajectory) -> Score:
        if self.unsolvable(task):
            return Score(0.0)
        return super().score(task, trajectory)

    def uniform_and_graded(self) -> tuple[list[Task], list[Task]]:
        """The training tasks whose groups always score 0, and the others."""
        tasks = self.load_tasks("train")
        return [t for t in tasks if self.unsolvable(t)], [t for t in tasks if not self.unsolvable(t)]


def rowwise_generator(tokenizer):
    """A GenerateFn answering row k of every batch with its own text (graded scores differ within a group)."""

    def generate(batch):
        rows = [tokenizer(f"answer {k}", add_special_tokens=False)["input_ids"] for k in range(len(batch))]
        return [ids + [tokenizer.eos_token_id] for ids in rows], None

    return generate


def train_three_steps(tmp_path, adapter, tasks, skip: bool, generator=rowwise_generator, **overrides):
    """GRPO steps on ``tasks`` with scripted episodes: the trainer, its metrics and its training forward passes."""
    folder = tmp_path / f"{skip}-{len(tasks)}-{sorted(overrides.items())}"
    config = tiny_config(folder, skip_zero_advantage=skip, shuffle_tasks=False, **overrides)
    trainer = GRPOAgentTrainer(build_tiny_policy(0), adapter, config)
    tokenizer = trainer.tokenizer
    trainer._generator = lambda: generator(tokenizer)  # the same episodes in both runs
    forwards = []
    handle = trainer.model.register_forward_hook(lambda *_: forwards.append(torch.is_grad_enabled()))
    metrics = trainer.train(tasks, steps=len(tasks))
    handle.remove()
    return trainer, metrics, sum(forwards)


def test_skipping_zero_advantage_batches_gives_trls_update(tmp_path):
    """Three steps (uniform group, graded group, uniform group) with and without the skip: the same parameters and
    optimizer state to the last bit, while the skipped micro-batches never ran the model."""
    adapter = HalfSolvableToyAdapter()
    uniform, graded = adapter.uniform_and_graded()
    order = [uniform[0], graded[0], uniform[1]]
    skipping, metrics, forwards = train_three_steps(tmp_path, adapter, order, skip=True)
    plain, plain_metrics, plain_forwards = train_three_steps(tmp_path, adapter, order, skip=False)
    rewards = [e.reward for e in skipping.episodes]
    assert rewards[:2] == [0.0, 0.0] and rewards[4:] == [0.0, 0.0] and rewards == [e.reward for e in plain.episodes]
    assert len(set(rewards[2:4])) == 2, "the graded group needs reward variance for this test"
    assert metrics["skipped_batches"] == 2 and plain_metrics["skipped_batches"] == 0
    assert forwards == plain_forwards - 2  # two training forward passes (with grad) fewer
    for (name, p), q in zip(skipping.model.named_parameters(), plain.model.parameters()):
        assert torch.equal(p, q), name
    state, plain_state = (t.trainer.optimizer.state_dict()["state"] for t in (skipping, plain))
    assert state.keys() == plain_state.keys()
    for key in state:
        for moment in ("exp_avg", "exp_avg_sq"):
            assert torch.equal(state[key][moment], plain_state[key][moment])
        assert state[key]["step"] == plain_state[key]["step"] == 3


def test_the_micro_batch_leaves_the_update_unchanged(tmp_path):
    """Steps of two groups (4 episodes of different lengths), as one micro-batch of 4 or as 4 of one: the same SGD
    update (TRL's loss is normalised over the step's tokens, not per micro-batch)."""
    adapter = HalfSolvableToyAdapter()
    _, graded = adapter.uniform_and_graded()
    tasks = graded[:4]

    def uneven(tokenizer):  # row k answers with k extra words: the micro-batch of 4 pads
        def generate(batch):
            rows = [
                tokenizer(f"answer {k}" + " so" * k, add_special_tokens=False)["input_ids"] for k in range(len(batch))
            ]
            return [ids + [tokenizer.eos_token_id] for ids in rows], None

        return generate

    runs = [
        train_three_steps(tmp_path, adapter, tasks, skip=False, generator=uneven, per_device_train_batch_size=batch,
                          gradient_accumulation_steps=accumulation, grpo_kwargs={"optim": "sgd"},
                          bf16=False)[0]
        for batch, accumulation in ((4, 1), (1, 4))
    ]  # fmt: skip
    assert runs[0].optimizer_steps == runs[1].optimizer_steps == 2
    assert len({e.reward for e in runs[0].episodes}) > 1  # graded groups: the steps have a gradient
    start = dict(build_tiny_policy(0).model.named_parameters())
    moved = [
        torch.cat([(p.detach() - start[n].to(p.device)).flatten() for n, p in run.model.named_parameters()])
        for run in runs
    ]
    assert moved[0].norm() > 0
    assert (moved[0] - moved[1]).norm() < 1e-4 * moved[0].norm()  # plain SGD: a scaled loss would show


def test_skipping_zero_advantage_steps_leaves_weights_and_moments_alone(tmp_path):
    """With ``skip_zero_advantage_steps`` a step of uniform groups changes nothing: (uniform, graded, uniform) ends
    where (graded) alone does, AdamW's step count included (up to float rounding: TRL batches the two runs'
    tensors differently), while in TRL's update AdamW's momentum moves every weight on by about the learning rate."""
    adapter = HalfSolvableToyAdapter()
    uniform, graded = adapter.uniform_and_graded()
    exact = {"bf16": False}  # on CUDA, bfloat16 autocast rounds by more than the tolerance below
    filtered, metrics, forwards = train_three_steps(
        tmp_path, adapter, [uniform[0], graded[0], uniform[1]], skip=True, skip_zero_advantage_steps=True, **exact
    )
    alone, _, _ = train_three_steps(tmp_path, adapter, [graded[0]], skip=True, skip_zero_advantage_steps=True, **exact)
    trl, _, _ = train_three_steps(tmp_path, adapter, [uniform[0], graded[0], uniform[1]], skip=True, **exact)
    assert metrics["skipped_batches"] == 2 and metrics["steps"] == 3
    for (name, p), q in zip(filtered.model.named_parameters(), alone.model.parameters()):
        # AdamW's first step is about lr * sign(gradient), so a rounding difference in a near-zero gradient entry
        # shows up enlarged: up to 1.3e-5 on an AMD EPYC (2026-11-28, 4a22b90), against the 1e-2 of a step
        assert torch.allclose(p, q, rtol=0, atol=1e-4), name
    drift = max((p - q).abs().max().item() for p, q in zip(trl.model.parameters(), filtered.model.parameters()))
    assert drift > 1e-3  # learning rate 1e-2: the momentum step is of that order, ten times the rounding allowed
    state, alone_state = (t.trainer.optimizer.state_dict()["state"] for t in (filtered, alone))
    assert state.keys() == alone_state.keys() and state
    for key in state:
        assert state[key]["step"] == alone_state[key]["step"] == 1
        assert torch.allclose(state[key]["exp_avg"], alone_state[key]["exp_avg"], rtol=1e-3, atol=1e-9)


DDP_SKIP_SCRIPT = """
import json, os, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_grpo import HalfSolvableToyAdapter, rowwise_generator, tiny_config
from genenv.agents.grpo import GRPOAgentTrainer
from genenv.llm.models import build_tiny_policy

adapter = HalfSolvableToyAdapter()
uniform, graded = adapter.uniform_and_graded()
config = tiny_config(Path({out!r}) / os.environ["RANK"], shuffle_tasks=False, engine="hf")
trainer = GRPOAgentTrainer(build_tiny_policy(0), adapter, config)
tokenizer = trainer.tokenizer
trainer._generator = lambda: rowwise_generator(tokenizer)
metrics = trainer.train([uniform[0], uniform[1], graded[0], uniform[0], uniform[1], uniform[0]], steps=3)
total = sum(p.double().sum().item() for p in trainer.model.parameters())
result = {{"skipped": metrics["skipped_batches"], "weights": total}}
(Path({out!r}) / ("rank" + os.environ["RANK"] + ".json")).write_text(json.dumps(result))
"""


@pytest.mark.slow
def test_two_processes_skip_together_or_not_at_all(tmp_path):
    """Under DDP (torchrun, gloo) one task per process per step: steps where both groups are uniform skip on both
    processes; the step where one process has a graded group computes on both (a process skipping alone would leave
    the other waiting in its gradient all-reduce); the processes end with the same weights."""
    script = tmp_path / "ddp_skip.py"
    script.write_text(DDP_SKIP_SCRIPT.format(tests=str(Path(__file__).parent), out=str(tmp_path)))
    launch = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29541"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).parents[1])}
    result = subprocess.run([*launch, str(script)], env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in (0, 1)]  # files: no interleaving
    assert [r["skipped"] for r in ranks] == [2.0, 2.0]
    assert ranks[0]["weights"] == ranks[1]["weights"]


def test_no_skip_when_the_kl_term_has_a_gradient(tmp_path):
    adapter = HalfSolvableToyAdapter()
    uniform, _ = adapter.uniform_and_graded()
    trainer = GRPOAgentTrainer(build_tiny_policy(0), adapter, tiny_config(tmp_path, kl_coef=0.04))
    assert trainer.train(uniform[:1], steps=1)["skipped_batches"] == 0


# -- checkpoints -------------------------------------------------------------------------------


def _reference_weights(trainer: GRPOAgentTrainer) -> dict[str, torch.Tensor]:
    if trainer.config.use_lora:
        return {n: p.detach().clone() for n, p in trainer.model.named_parameters() if f".{REFERENCE_ADAPTER}." in n}
    return {n: p.detach().clone() for n, p in trainer.trainer.ref_model.named_parameters()}


@pytest.mark.parametrize("use_lora", [False, True])
def test_the_kl_reference_is_the_policy_anchored_after_a_warm_start_and_survives_a_resume(tmp_path, use_lora):
    adapter = GradedToyAdapter()
    config = tiny_config(tmp_path, use_lora=use_lora, lora_r=4, kl_coef=0.04)
    tasks = adapter.load_tasks("train")[:1]
    kl = {}
    for anchored in (False, True):
        trainer = GRPOAgentTrainer(build_tiny_policy(0), adapter, config)
        torch.manual_seed(0)
        with torch.no_grad():  # what a warm start does to the trained weights
            for param in trainer.model.parameters():
                if param.requires_grad:
                    param.add_(0.05 * torch.randn_like(param))
        if anchored:
            trainer.anchor_reference()
            reference = _reference_weights(trainer)
        kl[anchored] = trainer.train(tasks, steps=1)["kl"]
    assert kl[False] > 1e-4 and kl[True] == pytest.approx(0.0, abs=1e-6)  # the first step starts at its reference
    assert all(not p.requires_grad for p in _reference_weights(trainer).values())
    for name, weight in _reference_weights(trainer).items():  # training moved the policy, not its reference
        assert torch.equal(weight, reference[name]), name
    restored = GRPOAgentTrainer(build_tiny_policy(0), adapter, config)
    restored.load(trainer.save(tmp_path / "ckpt"))
    kept = _reference_weights(restored)
    assert kept.keys() == reference.keys() and all(torch.equal(kept[n], w) for n, w in reference.items())
    if use_lora:
        assert all(f".{REFERENCE_ADAPTER}." not in n for n, p in restored.model.named_parameters() if p.requires_grad)


def test_without_a_kl_term_anchoring_adds_nothing(tmp_path):
    trainer = GRPOAgentTrainer(build_tiny_policy(0), GradedToyAdapter(), tiny_config(tmp_path, use_lora=True, lora_r=4))
    trainer.anchor_reference()
    assert list(trainer.model.peft_config) == ["default"]


@pytest.mark.parametrize("use_lora", [False, True])
def test_save_load_round_trip(tmp_path, use_lora):
    adapter = GradedToyAdapter()
    config = tiny_config(tmp_path, use_lora=use_lora, learning_rate=1e-2, lora_r=4)
    original = GRPOAgentTrainer(build_tiny_policy(0), adapter, config)
    for _ in range(2):  # two GenEnv epochs: the optimizer carries over from one train() call to the next
        original.train(adapter.load_tasks("train")[:1], steps=1)
    assert isinstance(original.trainer.optimizer.optimizer, torch.optim.AdamW)  # wrapped once, not twice
    assert {int(s["step"]) for s in original.trainer.optimizer.state_dict()["state"].values()} == {2}
    path = original.save(tmp_path / "ckpt")
    assert (path / ("adapter_model.safetensors" if use_lora else "model.safetensors")).exists()
    assert (path / "optimizer.pt").exists()

    restored = GRPOAgentTrainer(build_tiny_policy(0), adapter, config)
    restored.load(path)
    want = dict(original.model.named_parameters())
    for name, param in restored.model.named_parameters():
        assert torch.equal(param, want[name]), name
    if use_lora:
        assert all("lora_" in n for n, p in restored.model.named_parameters() if p.requires_grad)
    a, b = original.trainer.optimizer.state_dict(), restored.trainer.optimizer.state_dict()
    assert a["state"].keys() == b["state"].keys() and a["state"]
    for key, state in a["state"].items():
        for name, value in state.items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(b["state"][key][name])), (key, name)
    assert restored.optimizer_steps == 2 and restored.train_calls == 2
    # training resumes from the restored optimizer
    assert restored.train(adapter.load_tasks("train")[:1], steps=1)["steps"] == 1
    assert restored.optimizer_steps == 3
    assert {int(s["step"]) for s in restored.trainer.optimizer.state_dict()["state"].values()} == {3}
