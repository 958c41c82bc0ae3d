"""BFCL expert actions: the ground truth written as the agent's responses.

Single-turn AST categories: the first possible answer (:func:`.candidates.gold_calls`: each parameter's first
acceptable value, optional ones accepted as absent left out, Java/JavaScript values as source text) as a Python call
list ``[f(a=1)]``, the form BFCL's prompt asks for; where that does not decode back to an accepted answer, the same
calls as ``<tool_call>`` JSON. Irrelevance: a plain answer with no call. Live relevance has no ground truth.
Multi-turn: each user turn's ground-truth calls in one action, positional arguments named
(:meth:`.multi_turn.Backends.keyword_form`), then a plain answer closing the turn. The adapter keeps a candidate
only when the official verdict accepts it.
"""

from __future__ import annotations

from typing import Any

from .candidates import gold_calls, render
from .multi_turn import Backends

__all__ = ["IRRELEVANT_ANSWER", "TURN_DONE", "multi_turn_actions", "single_turn_actions"]

IRRELEVANT_ANSWER = "None of the available functions can do this, so I cannot make a function call for it."
TURN_DONE = "Done."


def single_turn_actions(functions: list[dict[str, Any]], gold: list[dict[str, Any]], language: str) -> list[str]:
    """Candidate responses for a single-turn AST task, the preferred form first."""
    calls = gold_calls(functions, gold, language)
    return [render(calls, functions, language, fmt) for fmt in ("python", "json")]


def multi_turn_actions(gold: list[list[str]], backends: Backends) -> list[list[str]] | None:
    """Per user turn, the agent's actions: the turn's ground-truth calls as one call list (if it has any), then
    :data:`TURN_DONE`; ``None`` when a call cannot be written with keyword arguments."""
    turns = []
    for sources in gold:
        try:
            calls = [backends.keyword_form(source) for source in sources]
        except ValueError:
            return None
        written = ", ".join(f"{c.name}({', '.join(f'{k}={v!r}' for k, v in c.arguments.items())})" for c in calls)
        turns.append(([f"[{written}]"] if calls else []) + [TURN_DONE])
    return turns
