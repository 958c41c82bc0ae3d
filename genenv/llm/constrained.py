"""JSON-schema-constrained generation with lm-format-enforcer (for the simulator's task JSON).

``prefix_allowed_tokens_fn`` for ``model.generate`` that keeps every sequence of a batch inside its
own JSON schema (insignificant whitespace between tokens stays allowed, so budget enough new
tokens).

What decoding keeps: the object's keys (its properties, the required ones), JSON types, ``enum``/``const``,
string ``minLength``/``maxLength`` and ``pattern`` (not both on one string), array ``minItems``/``maxItems``. What it
does not: numeric bounds (``minimum``, ``maximum``, their exclusive forms, ``multipleOf``; 0.11.3's parser reads none
of them), and an ``integer`` may come out in exponent form (``0e+7233``). Every simulator output is therefore checked
against the whole schema afterwards (:mod:`genenv.envs.task_schema`): that check is the guarantee, decoding only
makes it likely to pass.

lm-format-enforcer 0.11 imports ``PreTrainedTokenizerBase`` from
``transformers.tokenization_utils``, a module transformers 5 removed; it is aliased to the module
that holds the class now before the integration is imported.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import transformers.tokenization_utils_base as _tokenization_utils_base

sys.modules.setdefault("transformers.tokenization_utils", _tokenization_utils_base)

from lmformatenforcer import JsonSchemaParser  # noqa: E402
from lmformatenforcer.integrations.transformers import (  # noqa: E402
    build_token_enforcer_tokenizer_data,
    build_transformers_prefix_allowed_tokens_fn,
)


@lru_cache(maxsize=4)
def _tokenizer_data(tokenizer: Any) -> Any:
    """The per-tokenizer vocabulary tree (a pass over the vocabulary: built once per tokenizer)."""
    return build_token_enforcer_tokenizer_data(tokenizer)


def json_schema_constraint(tokenizer: Any, schemas: list[dict[str, Any]]) -> Callable[[int, Any], list[int]]:
    """``prefix_allowed_tokens_fn`` constraining batch row ``i`` to ``schemas[i]``. A row whose parser admits no next
    token (lm-format-enforcer can reach a dead end inside a long schema) is ended there (:func:`ended_when_stuck`):
    its text stays incomplete, so the caller rejects it, and the batch's other rows go on."""
    data = _tokenizer_data(tokenizer)
    row_functions = [build_transformers_prefix_allowed_tokens_fn(data, JsonSchemaParser(schema)) for schema in schemas]
    return ended_when_stuck(lambda batch_id, input_ids: row_functions[batch_id](batch_id, input_ids),
                            [tokenizer.eos_token_id])  # fmt: skip


def ended_when_stuck(allowed: Callable[[int, Any], list[int]], end: list[int]) -> Callable[[int, Any], list[int]]:
    """``allowed``, except that where it allows no token at all the row may only end (``end``): HF ``generate``
    raises on an empty list, which would lose the whole batch."""

    def allowed_tokens(batch_id: int, input_ids: Any) -> list[int]:
        return allowed(batch_id, input_ids) or end

    return allowed_tokens
