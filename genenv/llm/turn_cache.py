"""KV-cache reuse across the turns of a batched multi-turn rollout (Hugging Face ``generate``)."""

from __future__ import annotations

import copy
from typing import Any

import torch

__all__ = ["TurnCache"]

#: new tokens a row decodes between two checks for rows that ended (:meth:`TurnCache.generate`)
CHUNK_TOKENS = 16


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    return next((k for k in range(n) if a[k] != b[k]), n)


class TurnCache:
    """The KV cache of one batched ``generate`` call, reused by the next call that continues its rows.

    A rollout's next turn sends every running episode's whole history again: the previous call's input, the part
    of its output the rollout kept, then new tokens (a tool response, the next assistant header). :meth:`inputs`
    lays the new batch out as the previous call's token matrix (same left padding, the KV cache's rows of finished
    episodes dropped, generated tokens the rollout cut masked out) followed by the new tokens, left-padded as a
    block: ``generate`` then prefills only the new tokens. Positions come from the attention mask, so a token sees
    the same keys at the same positions as without the cache, and greedy decoding gives the same tokens. A batch
    that does not continue the previous one (another rollout) starts a fresh cache; where its rows repeat a prompt
    (GRPO's G attempts at a task), each distinct prompt is prefilled once and its cache copied to its rows.
    :meth:`generate` decodes in steps of ``chunk_tokens``, after each of which the rows that ended leave the batch
    (``generate`` itself decodes padding for them until its longest row ends); ``None``: one ``generate`` call.
    """

    def __init__(self, pad_id: int, chunk_tokens: int | None = CHUNK_TOKENS) -> None:
        self.pad_id = pad_id
        self.chunk_tokens = chunk_tokens
        self.cache: Any = None
        self.ids: torch.Tensor | None = None  # the previous call's output: its input, then the new tokens
        self.mask: torch.Tensor | None = None
        self.input_width = 0  # columns of the previous call's input
        self.rows: list[tuple[list[int], list[int]]] = []  # per row: the input ids (unpadded), the new ids
        self.reused_tokens = 0  # prompt tokens not prefilled again, over all calls

    def _plan(self, batch: list[list[int]]) -> list[tuple[int, int]] | None:
        """For each new row, (previous row, new tokens it kept); ``None`` unless every row continues one."""
        plan, j = [], 0
        for ids in batch:
            while j < len(self.rows):
                old, new = self.rows[j]
                if len(ids) > len(old) and ids[: len(old)] == old:
                    kept = _common_prefix(ids[len(old) :], new)
                    if len(old) + kept < len(ids):
                        plan.append((j, kept))
                        j += 1
                        break
                j += 1
            else:
                return None
        return plan

    def inputs(self, batch: list[list[int]], model: Any) -> tuple[torch.Tensor, torch.Tensor, Any]:
        """``input_ids``, ``attention_mask`` and the cache to hand ``generate`` for ``batch``."""
        from transformers import DynamicCache

        device = model.device
        plan = self._plan(batch) if self.cache is not None else None
        if plan is None:
            width = max(len(ids) for ids in batch)
            ids = torch.tensor([[self.pad_id] * (width - len(row)) + row for row in batch], device=device)
            mask = torch.tensor([[0] * (width - len(row)) + [1] * len(row) for row in batch], device=device)
            self.cache = DynamicCache(config=model.config)
            self._prefill_shared(batch, ids, mask, model)
            return ids, mask, self.cache
        keep = [j for j, _ in plan]
        if keep != list(range(len(self.rows))):
            self.cache.batch_select_indices(torch.tensor(keep, device=device))
        old_ids, old_mask = self.ids[keep], self.mask[keep].clone()
        start = self.input_width  # first column of the previous call's new tokens
        tails = []
        for r, ((j, kept), row) in enumerate(zip(plan, batch)):
            old_mask[r, start + kept :] = 0
            tails.append(row[len(self.rows[j][0]) + kept :])
            self.reused_tokens += len(self.rows[j][0]) + kept
        width = max(len(tail) for tail in tails)
        tail_ids = torch.tensor([[self.pad_id] * (width - len(t)) + t for t in tails], device=device)
        tail_mask = torch.tensor([[0] * (width - len(t)) + [1] * len(t) for t in tails], device=device)
        return torch.cat([old_ids, tail_ids], 1), torch.cat([old_mask, tail_mask], 1), self.cache

    def _prefill_shared(self, batch: list[list[int]], ids: torch.Tensor, mask: torch.Tensor, model: Any) -> None:
        """Where rows repeat, fill the fresh cache with all but the last column of each distinct row, run once, and
        copy it to the rows that repeat it: ``generate`` then prefills the last column only."""
        first = {tuple(row): i for i, row in reversed(list(enumerate(batch)))}
        if len(first) == len(batch) or ids.shape[1] < 2:
            return
        unique = sorted(first.values())
        where = {tuple(batch[i]): k for k, i in enumerate(unique)}
        head, head_mask = ids[unique, :-1], mask[unique, :-1]
        positions = (head_mask.long().cumsum(-1) - 1).masked_fill(head_mask == 0, 0)  # as ``generate`` numbers them
        model(
            input_ids=head,
            attention_mask=head_mask,
            position_ids=positions,
            past_key_values=self.cache,
            logits_to_keep=1,
        )
        self.cache.batch_select_indices(torch.tensor([where[tuple(row)] for row in batch], device=ids.device))
        self.reused_tokens += sum(len(row) - 1 for row in batch) - sum(len(batch[i]) - 1 for i in unique)

    def generate(self, model: Any, batch: list[list[int]], max_new_tokens: int, **kwargs: Any) -> list[list[int]]:
        """``model.generate`` (``kwargs``: its settings) on ``batch`` with this cache, at most ``max_new_tokens`` new
        tokens a row; returns each row's new tokens, padding after its end. Every ``chunk_tokens`` tokens the rows
        that ended leave the batch; their cache rows wait, and the call's cache is put together again at its end, so
        the next turn reuses every row (a row's last token, never run through the model, is the next turn's to run)."""
        ids, mask, cache = self.inputs(batch, model)
        config = kwargs.get("generation_config") or model.generation_config
        ends = config.eos_token_id
        ends = torch.tensor([ends] if isinstance(ends, int) else list(ends or []), device=ids.device)
        if not self.chunk_tokens or not len(ends) or not _plain_layers(cache):
            output = _generate(model, ids, mask, cache, max_new_tokens, kwargs)
            return self.update(batch, output, mask).tolist()
        rows = torch.arange(len(batch), device=ids.device)  # the batch's rows still decoding
        new = ids.new_full((len(batch), 0), self.pad_id)
        valid = [0] * len(batch)  # per row: new tokens whose keys and values are in the cache
        waiting: list[tuple[torch.Tensor, list[list]]] = []  # rows that left, with each layer's keys and values
        step_ids, step_mask = ids, mask
        while len(rows) and new.shape[1] < max_new_tokens:
            step = min(self.chunk_tokens, max_new_tokens - new.shape[1])
            out = _generate(model, step_ids, step_mask, cache, step, kwargs)
            got = out[:, step_ids.shape[1] :]
            block = new.new_full((len(batch), got.shape[1]), self.pad_id)
            block[rows] = got
            new = torch.cat([new, block], 1)
            leave = torch.isin(got, ends).any(1)
            for r in rows.tolist():
                valid[r] = new.shape[1] - 1
            step_mask = torch.cat([step_mask, torch.ones_like(got)], 1)
            if leave.any() and new.shape[1] < max_new_tokens:
                gone = leave.nonzero().flatten()
                waiting.append((rows[gone], [[layer.keys[gone], layer.values[gone]] for layer in cache.layers]))
                stay = (~leave).nonzero().flatten()
                cache.batch_select_indices(stay)
                rows, step_ids, step_mask = rows[stay], out[stay], step_mask[stay]
            else:
                step_ids = out
        output = torch.cat([ids, new], 1)
        self.cache = _assembled(len(batch), rows, cache, waiting, output.shape[1] - 1)
        return self.update(batch, output, mask, valid).tolist()

    def update(
        self, batch: list[list[int]], output: torch.Tensor, mask: torch.Tensor, valid: list[int] | None = None
    ) -> torch.Tensor:
        """Record a call's output (its ``input_ids`` then the new tokens), of each row the first ``valid`` new tokens
        as the cache's (``None``: all); returns the new tokens."""
        new = output[:, mask.shape[1] :]
        self.ids, self.input_width = output, mask.shape[1]
        self.mask = torch.cat([mask, torch.ones_like(new)], 1)
        rows = new.tolist()
        kept = rows if valid is None else [row[:n] for row, n in zip(rows, valid)]
        self.rows = [(list(ids), row) for ids, row in zip(batch, kept)]
        return new


def _generate(model: Any, ids: torch.Tensor, mask: torch.Tensor, cache: Any, tokens: int, kwargs: dict) -> Any:
    """``model.generate`` of at most ``tokens`` new tokens, with ``kwargs``' settings or its ``generation_config``."""
    if "generation_config" in kwargs:
        kwargs = {**kwargs, "generation_config": copy.copy(kwargs["generation_config"])}
        kwargs["generation_config"].max_new_tokens = tokens
    else:
        kwargs = {**kwargs, "max_new_tokens": tokens}
    return model.generate(input_ids=ids, attention_mask=mask, past_key_values=cache, **kwargs)


def _plain_layers(cache: Any) -> bool:
    """Whether every layer of ``cache`` is a plain growing one (no sliding window), whose rows can be taken apart."""
    from transformers.cache_utils import DynamicLayer

    return all(type(layer) is DynamicLayer for layer in cache.layers)


def _assembled(
    size: int, rows: torch.Tensor, cache: Any, waiting: list[tuple[torch.Tensor, list[list]]], width: int
) -> Any:
    """``cache`` (of ``rows``) made whole again: ``size`` rows of ``width`` columns, the rows that left it earlier
    (``waiting``) among them with zeros in the columns they did not reach (masked: past the tokens of theirs the next
    turn keeps). One layer at a time, each part freed once copied, so the whole cache is never held twice."""
    if not waiting:
        return cache
    for index, layer in enumerate(cache.layers):
        parts = [(rows, layer.keys, layer.values)] if len(rows) else []
        parts += [(group_rows, *kv[index]) for group_rows, kv in waiting]
        keys, values = parts[-1][1], parts[-1][2]
        shape = (size, keys.shape[1], width, keys.shape[3])
        layer.keys, layer.values = keys.new_zeros(shape), values.new_zeros(shape)
        for group_rows, k, v in parts:
            layer.keys[group_rows, :, : k.shape[2]] = k
            layer.values[group_rows, :, : v.shape[2]] = v
        del parts, keys, values, k, v
        for _, kv in waiting:
            kv[index] = None
    return cache
