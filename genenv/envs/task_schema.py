"""Simulator-written tasks checked against the adapter's own JSON schema.

The schema of a task of ``family`` is ``adapter.generation_schema(family)`` (what constrained decoding aims at), or,
for an adapter without one, its ``task_schema``. Everything the schema states is checked (types, bounds, enums,
lengths, patterns, item counts, required and extra keys) with :mod:`jsonschema`: constrained decoding does not keep
all of it (lm-format-enforcer ignores ``minimum``/``maximum``, see :mod:`genenv.llm.constrained`), and an
unconstrained engine keeps none of it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from jsonschema import exceptions, validators

from genenv.benchmarks.base import BenchmarkAdapter

#: longest schema message kept in a reject reason (a message may quote the whole offending value)
MAX_REASON_CHARS = 300


def family_schema(adapter: BenchmarkAdapter, family: str) -> dict[str, Any] | None:
    """The JSON schema a written task of ``family`` must satisfy: ``generation_schema(family)``, else the adapter's
    ``task_schema``; ``None`` when the adapter declares neither."""
    schema = adapter.generation_schema(family)
    if schema is None:
        schema = adapter.task_schema or None
    return schema


@lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    """A validator for the schema serialised as ``schema_json`` (its dialect from ``$schema``, else the latest);
    ``ValueError`` when the schema itself is not a valid JSON schema."""
    schema = json.loads(schema_json)
    cls = validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except exceptions.SchemaError as error:
        raise ValueError(f"the adapter's task schema is not a valid JSON schema: {error.message}") from None
    return cls(schema)


def schema_violation(obj: Any, schema: dict[str, Any]) -> str | None:
    """Why ``obj`` breaks ``schema`` (``"<path>: <message>"``, the most relevant error), or ``None`` when it
    satisfies it. ``ValueError`` when ``schema`` is not a valid JSON schema."""
    if not isinstance(schema, dict):
        raise ValueError(f"schema must be a dict, not {type(schema).__name__}")
    validator = _validator(json.dumps(schema, sort_keys=True))
    error = exceptions.best_match(validator.iter_errors(obj))
    if error is None:
        return None
    message = error.message
    if len(message) > MAX_REASON_CHARS:
        message = message[:MAX_REASON_CHARS] + "..."
    return f"{error.json_path}: {message}"
