"""Supervised warm start of the agent on expert traces (TRL ``SFTTrainer``), before and between GRPO epochs, and its
data: D_train's expert traces (the training split's tasks as base data, and every validated generated task).

An expert trace (:func:`~genenv.envs.expert.expert_messages`) is tokenised exactly as a
rollout lays out an episode (:mod:`genenv.agents.rollout`): the prompt rendered by the chat template (system +
tools, the worked exchanges the agent is shown, the user request, the assistant header), then each assistant turn
followed by its end-of-turn token, then the tool-response (or follow-up user) block up to the next assistant
header. The loss is on the agent's own tokens only (its turns and their end-of-turn tokens); the prompt and what
the environment wrote are labelled -100. The model trained is the agent trainer's (its LoRA adapter with
``use_lora``), so the warm start lives in the same weights the checkpoints save and GRPO continues from.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from genenv.agents.rollout import ToolSuffix, few_shot_conversation
from genenv.benchmarks.base import BenchmarkAdapter, Task
from genenv.config import check_types
from genenv.console import step_log_callback
from genenv.envs.expert import expert_conversation
from genenv.llm.generation import render_chat

__all__ = [
    "EXPERT_SOURCES",
    "WarmStartConfig",
    "WarmStartTrainer",
    "base_tasks",
    "draw_conversations",
    "expert_record",
    "tokenize_expert",
]

IGNORE = -100
#: the sources of D_train records that hold expert traces: the base split's tasks and the generated ones
EXPERT_SOURCES = ("base", "expert")


@dataclass
class WarmStartConfig:
    """Settings of the supervised warm start (TRL ``SFTConfig`` fields where they map).

    Args:
        max_examples: expert traces used before epoch 0 (a seeded sample of D_train's expert traces; ``None``:
            all, ``0``: no warm start).
        epochs: passes over those traces.
        learning_rate: AdamW learning rate (1e-4 suits LoRA; use about 1e-5 for a full fine-tune).
        per_device_train_batch_size: traces per micro-batch. The update does not depend on it (the loss is
            normalised over the step's tokens); on a CPU 1 is fastest and smallest, as no padding is computed.
        gradient_accumulation_steps: micro-batches per optimizer step.
        max_length: traces longer than this many tokens are left out (never cut: a cut trace teaches a turn
            without its end).
        mix_per_epoch: expert traces replayed as supervised steps after every co-evolution epoch's GRPO update
            (0: warm start only). The knob that keeps the agent anchored to expert behaviour while it learns from
            its own episodes; the traces are drawn from D_train, so they include generated tasks' expert traces.
        seed: order of the traces and the sample drawn.
        sft_kwargs: any other :class:`trl.SFTConfig` field; they override the values set here.
    """

    max_examples: int | None = 128
    epochs: float = 1.0
    learning_rate: float = 1e-4
    per_device_train_batch_size: int = 1
    gradient_accumulation_steps: int = 4
    max_length: int = 2048
    mix_per_epoch: int = 0
    seed: int = 0
    sft_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_types(self, "warm_start")
        if self.max_examples is not None and self.max_examples < 0:
            raise ValueError(f"warm_start.max_examples must be >= 0 or null, got {self.max_examples}")
        if self.epochs <= 0 or self.learning_rate <= 0:
            raise ValueError("warm_start.epochs and warm_start.learning_rate must be > 0")
        if self.per_device_train_batch_size < 1 or self.gradient_accumulation_steps < 1:
            raise ValueError("warm_start batch sizes must be >= 1")
        if self.mix_per_epoch < 0:
            raise ValueError(f"warm_start.mix_per_epoch must be >= 0, got {self.mix_per_epoch}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tokenize_expert(
    tokenizer: Any,
    messages: Sequence[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    *,
    exchanges: list[dict[str, Any]] | None,
    suffix: ToolSuffix,
    eos_token_id: int,
) -> dict[str, list[int]]:
    """``input_ids`` and ``labels`` of one expert conversation (opening + expert messages) in the rollout layout.

    ``exchanges`` are the worked exchanges shown before the request (``None``: none), as the agent sees them.
    """
    opening = list(messages[:2])
    if len(opening) < 2 or opening[0]["role"] != "system" or opening[1]["role"] != "user":
        raise ValueError("an expert conversation starts with the system prompt and the user request")
    shown = few_shot_conversation(opening, exchanges) if exchanges else opening
    ids = tokenizer(render_chat(tokenizer, shown, tools), add_special_tokens=False)["input_ids"]
    labels = [IGNORE] * len(ids)
    for message in messages[2:]:
        if message["role"] == "assistant":
            turn = tokenizer(message["content"], add_special_tokens=False)["input_ids"] + [eos_token_id]
            ids += turn
            labels += turn
        else:  # a tool output or a follow-up user turn: the environment's tokens, up to the next assistant header
            env = suffix([message])
            ids += env
            labels += [IGNORE] * len(env)
    return {"input_ids": ids, "labels": labels}


class WarmStartTrainer:
    """Supervised fine-tuning of the agent trainer's model on expert traces with TRL's ``SFTTrainer``.

    Args:
        model: the model to train in place (the GRPO trainer's: a PEFT model with LoRA, else the policy's model).
        tokenizer: the policy's tokenizer.
        config: :class:`WarmStartConfig`.
        exchanges: the worked exchanges the agent is shown before a request (``None``: none), so the supervised
            prompts equal the rollout prompts.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        config: WarmStartConfig | None = None,
        exchanges: list[dict[str, Any]] | None = None,
        output_dir: str = "outputs/warm_start",
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.config = config or WarmStartConfig()
        self.exchanges = exchanges
        self.output_dir = output_dir
        self.eos_token_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
        if self.eos_token_id is None or self.eos_token_id == tokenizer.unk_token_id:
            self.eos_token_id = tokenizer.eos_token_id
        self.suffix = ToolSuffix(tokenizer, self.eos_token_id)

    def examples(self, conversations: Sequence[dict[str, Any]]) -> tuple[list[dict[str, list[int]]], int]:
        """Tokenised traces that fit ``max_length``, and how many were left out for length."""
        rows, too_long = [], 0
        for conversation in conversations:
            row = tokenize_expert(
                self.tokenizer,
                conversation["messages"],
                conversation.get("tools") or None,
                exchanges=self.exchanges,
                suffix=self.suffix,
                eos_token_id=self.eos_token_id,
            )
            if len(row["input_ids"]) > self.config.max_length:
                too_long += 1
                continue
            rows.append(row)
        return rows, too_long

    def train(self, conversations: Sequence[dict[str, Any]], *, epochs: float | None = None) -> dict[str, float]:
        """Fine-tune on ``conversations`` (``{"messages": opening + expert, "tools": [...]}``); returns the steps,
        the traces and tokens trained on, the mean loss of the first and last logged steps, and the time."""
        from datasets import Dataset
        from trl import SFTConfig, SFTTrainer
        from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

        rows, too_long = self.examples(conversations)
        if not rows:
            return {"steps": 0.0, "examples": 0.0, "too_long": float(too_long)}
        config = self.config
        cuda = torch.cuda.is_available()
        kwargs: dict[str, Any] = dict(
            output_dir=self.output_dir,
            num_train_epochs=epochs if epochs is not None else config.epochs,
            learning_rate=config.learning_rate,
            lr_scheduler_type="constant",
            per_device_train_batch_size=config.per_device_train_batch_size,
            gradient_accumulation_steps=config.gradient_accumulation_steps,
            max_length=None,  # examples() already left out the long traces; nothing is cut
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            use_cpu=not cuda,
            bf16=bool(cuda and torch.cuda.is_bf16_supported()),
            activation_checkpointing=False,
            seed=config.seed,
            disable_tqdm=True,
            dataset_kwargs={"skip_prepare_dataset": True},
            remove_unused_columns=False,
            dataloader_num_workers=0,
        )
        kwargs.update(config.sft_kwargs)
        trainer = SFTTrainer(
            model=self.model,
            args=SFTConfig(**kwargs),
            train_dataset=Dataset.from_list(rows),
            processing_class=self.tokenizer,
            data_collator=DataCollatorForLanguageModeling(pad_token_id=self.tokenizer.pad_token_id),
            callbacks=[step_log_callback("warm start")],
        )
        from transformers import PrinterCallback

        trainer.remove_callback(PrinterCallback)
        start = time.perf_counter()
        self.model.train()
        try:
            trainer.train()
        finally:
            self.model.eval()
        losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
        head = losses[: max(1, len(losses) // 5)]
        tail = losses[-max(1, len(losses) // 5) :]
        return {
            "steps": float(trainer.state.global_step),
            "examples": float(len(rows)),
            "too_long": float(too_long),
            "tokens": float(sum(len(r["input_ids"]) for r in rows)),
            "trained_tokens": float(sum(sum(t != IGNORE for t in r["labels"]) for r in rows)),
            "loss_first": sum(head) / len(head) if losses else math.nan,
            "loss_last": sum(tail) / len(tail) if losses else math.nan,
            "seconds": time.perf_counter() - start,
        }


# -- the warm start's data ------------------------------------------------------------------------------------------
def base_tasks(
    adapter: BenchmarkAdapter, split: str, limit: int | None, held_out: Sequence[Task], held_out_split: str | None
) -> list[Task]:
    """D_train's base data: the tasks of the training ``split``, at most ``limit`` of them evenly spread over it
    (``None``: all). Raises ``ValueError`` when one of them is a ``held_out`` task (the same id or prompt): base data
    must never be evaluated on."""
    tasks = adapter.load_tasks(split)
    if limit is not None and len(tasks) > limit:
        picks = np.linspace(0, len(tasks) - 1, limit).round().astype(int)
        tasks = [tasks[int(i)] for i in picks]
    held = {t.task_id for t in held_out} | {t.prompt for t in held_out}
    shared = [t.task_id for t in tasks if t.task_id in held or t.prompt in held]
    if shared:
        raise ValueError(
            f"base_split {split!r} shares {len(shared)} tasks with the held-out split {held_out_split!r} "
            f"(e.g. {shared[0]}): base data must never be evaluated on"
        )
    return tasks


def expert_record(adapter: BenchmarkAdapter, task: Task, source: str) -> dict[str, Any]:
    """``task``'s D_train record holding its expert trace (:func:`~genenv.envs.expert.expert_conversation`; no
    messages and reward 0 where it has none); ``source``: one of :data:`EXPERT_SOURCES`."""
    conversation = expert_conversation(adapter, task) or {"messages": [], "tools": []}
    return {
        "task": task.to_dict(),
        "family": adapter.family(task),
        "messages": conversation["messages"],
        "tools": conversation["tools"],
        "reward": 1.0 if conversation["messages"] else 0.0,
        "truncated": False,
        "info": {},
        "source": source,
        "valid": True,
    }


def draw_conversations(records: Sequence[dict[str, Any]], k: int | None, rng: np.random.Generator) -> list[dict]:
    """``k`` of the expert traces among D_train ``records`` (all with ``None``) in an order drawn with ``rng``, as
    :meth:`WarmStartTrainer.train` takes them."""
    traces = [r for r in records if r["source"] in EXPERT_SOURCES and r["messages"]]
    picks = rng.permutation(len(traces))[: len(traces) if k is None else k]
    return [{"messages": traces[i]["messages"], "tools": traces[i]["tools"]} for i in picks]
