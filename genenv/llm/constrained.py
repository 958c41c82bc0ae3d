"""JSON-schema-constrained generation with lm-format-enforcer (for the simulator's task JSON).

``prefix_allowed_tokens_fn`` for ``model.generate`` that keeps every sequence of a batch inside its
own JSON schema (insignificant whitespace between tokens stays allowed, so budget enough new
tokens).

What decoding keeps: the object's keys (its properties, the required ones), JSON types, ``enum``/``const``,
string ``minLength``/``maxLength`` and ``pattern`` (not both on one string), array ``minItems``/``maxItems``. What it
does not: numeric bounds (``minimum``, ``maximum``, their exclusive forms, ``multipleOf``; 0.11.3's parser reads none
of them), and an ``integer`` may come out in exponent form (``0e+7233``) or run on for as many digits as the token
budget allows. Where every number of a schema is a bounded integer (:func:`integer_bounds`), decoding writes its
numbers as plain integers of at most as many digits as the bounds have, without a sign where no bound is negative
(:class:`BoundedIntegers`). Every simulator output is still checked against the whole schema afterwards
(:mod:`genenv.envs.task_schema`): that check is the guarantee, decoding only makes it likely to pass.

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

from lmformatenforcer import CharacterLevelParser, JsonSchemaParser  # noqa: E402
from lmformatenforcer.integrations.transformers import (  # noqa: E402
    build_token_enforcer_tokenizer_data,
    build_transformers_prefix_allowed_tokens_fn,
)
from lmformatenforcer.jsonschemaparser import NumberParsingState  # noqa: E402

DIGITS = "0123456789"


@lru_cache(maxsize=4)
def _tokenizer_data(tokenizer: Any) -> Any:
    """The per-tokenizer vocabulary tree (a pass over the vocabulary: built once per tokenizer)."""
    return build_token_enforcer_tokenizer_data(tokenizer)


def json_schema_constraint(tokenizer: Any, schemas: list[dict[str, Any]]) -> Callable[[int, Any], list[int]]:
    """``prefix_allowed_tokens_fn`` constraining batch row ``i`` to ``schemas[i]``. A row whose parser admits no next
    token (lm-format-enforcer can reach a dead end inside a long schema) is ended there (:func:`ended_when_stuck`):
    its text stays incomplete, so the caller rejects it, and the batch's other rows go on."""
    data = _tokenizer_data(tokenizer)
    row_functions = [build_transformers_prefix_allowed_tokens_fn(data, schema_parser(schema)) for schema in schemas]
    return ended_when_stuck(lambda batch_id, input_ids: row_functions[batch_id](batch_id, input_ids),
                            [tokenizer.eos_token_id])  # fmt: skip


def ended_when_stuck(allowed: Callable[[int, Any], list[int]], end: list[int]) -> Callable[[int, Any], list[int]]:
    """``allowed``, except that where it allows no token at all the row may only end (``end``): HF ``generate``
    raises on an empty list, which would lose the whole batch."""

    def allowed_tokens(batch_id: int, input_ids: Any) -> list[int]:
        return allowed(batch_id, input_ids) or end

    return allowed_tokens


def schema_parser(schema: dict[str, Any]) -> CharacterLevelParser:
    """lm-format-enforcer's parser of ``schema``, its integers kept to their bounds' digits where they all have
    bounds."""
    parser = JsonSchemaParser(schema)
    bounds = integer_bounds(schema)
    return parser if bounds is None else BoundedIntegers(parser, *bounds)


def integer_bounds(schema: Any) -> tuple[int, bool] | None:
    """``(digits, signed)`` where every number in ``schema`` is an ``integer`` with both ``minimum`` and
    ``maximum``, or a numeric ``enum``: the most digits any of them can have, and whether any may be negative.
    ``None`` where some number is unbounded (or a ``number``), or there is none."""
    found: list[int] = []
    unbounded = False

    def visit(node: Any) -> None:
        nonlocal unbounded
        if isinstance(node, list):
            for item in node:
                visit(item)
            return
        if not isinstance(node, dict):
            return
        kind = node.get("type")  # a JSON type or a list of them, unless a property is called "type"
        kinds = {k for k in (kind if isinstance(kind, list) else [kind]) if isinstance(k, str)}
        if kinds & {"integer", "number"}:
            enum = node.get("enum")
            if isinstance(enum, list) and enum and all(isinstance(v, int) and not isinstance(v, bool) for v in enum):
                found.extend(enum)
            elif kinds == {"integer"} and all(
                isinstance(node.get(key), int) and not isinstance(node.get(key), bool) for key in ("minimum", "maximum")
            ):
                found.extend((node["minimum"], node["maximum"]))
            else:
                unbounded = True
        for value in node.values():
            visit(value)

    visit(schema)
    if unbounded or not found:
        return None
    return max(len(str(abs(v))) for v in found), min(found) < 0


class BoundedIntegers(CharacterLevelParser):
    """A :class:`JsonSchemaParser` whose numbers are plain integers of at most ``digits`` digits (no fraction, no
    exponent), unsigned unless ``signed``; every other character is left to the parser."""

    def __init__(self, parser: CharacterLevelParser, digits: int, signed: bool) -> None:
        super().__init__(parser.config)
        self.parser, self.digits, self.signed = parser, digits, signed

    def add_character(self, new_character: str) -> CharacterLevelParser:
        return BoundedIntegers(self.parser.add_character(new_character), self.digits, self.signed)

    def get_allowed_characters(self) -> str:
        allowed = self.parser.get_allowed_characters()
        number = self._number()
        if number is None:
            return allowed
        banned = ".eE" + ("" if self.signed else "-")
        if sum(c in DIGITS for c in number.parsed_string) >= self.digits:
            banned += DIGITS
        return "".join(c for c in allowed if c not in banned)

    def can_end(self) -> bool:
        return self.parser.can_end()

    def shortcut_key(self) -> Any:
        return self.parser.shortcut_key()

    def cache_key(self) -> Any:
        key = self.parser.cache_key()
        return None if key is None or self._number() is not None else ("bounded integers", key)

    def _number(self) -> NumberParsingState | None:
        """The number being written, if the parser is inside one."""
        stack = getattr(self.parser, "object_stack", None)
        return stack[-1] if stack and isinstance(stack[-1], NumberParsingState) else None
