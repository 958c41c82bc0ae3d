"""API-Bank's evaluation: a sample's score as the official evaluators (``evaluator_by_json.py``,
``lv3_evaluator.py``) compute it, and the paper's aggregate figures.

Each gold call is compared with the call made at its position: same API name, then the gold API's correctness rule
(:mod:`.checks`) on the executed result and the gold result; value = correct / gold calls, each call in one of the
official buckets (NO_API_CALL, API_NAME_MISMATCH, INVALID_INPUT_PARAMETER, MISS_INPUT_ARGUMENT, KEY_ERROR,
HAS_EXCEPTION, OUTPUT_MISMATCH, INPUT_MISMATCH) or CORRECT, INVALID_PARAMETER_TYPE (upstream: an uncaught
AssertionError), CHECK_ERROR (a rule raising something else than KeyError) and OTHER_MISMATCH. A response sample
scores ROUGE-L F1 of the final answer.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from typing import Any

from ..base import Score, Task, ToolCall
from .checks import get_check
from .scoring import Scoring
from .training import TRAIN_LEVEL, call_matches

#: one call of an episode: the call, its result (``None`` when it did not run) and its error
Executed = tuple[ToolCall, Any, str | None]


def score_sample(task: Task, executed: list[Executed], final_answer: str | None, scoring: Scoring) -> Score:
    """A sample's score as the official evaluators compute it: each gold call against the call made at its position
    (``executed``: the episode's calls with their results and errors), then ROUGE-L of ``final_answer`` against a
    gold response."""
    gold = task.gold if isinstance(task.gold, dict) else {}
    gold_calls = gold.get("calls") or []
    level = task.metadata.get("level", "level-1")
    breakdown: dict[str, Any] = {}
    value = 0.0
    if gold_calls:
        buckets = [
            bucket(level, g, executed[i] if i < len(executed) else None, scoring) for i, g in enumerate(gold_calls)
        ]
        if level == TRAIN_LEVEL:  # no implementation to execute: exact match with the gold request
            buckets = [
                "CORRECT"
                if b == "CHECK_ERROR" and call_matches(g, executed[i][0].name, executed[i][0].arguments)
                else ("INPUT_MISMATCH" if b == "CHECK_ERROR" else b)
                for i, (g, b) in enumerate(zip(gold_calls, buckets))
            ]
        correct = buckets.count("CORRECT")
        value = correct / len(gold_calls)
        breakdown.update(
            api_correct=correct,
            api_total=len(gold_calls),
            api_accuracy=value,
            buckets=buckets,
            errors=dict(Counter(b for b in buckets if b != "CORRECT")),
            sample_correct=correct == len(gold_calls),
        )
    response = gold.get("response")
    if response:
        rouge = rouge_l(response, final_answer or "")
        breakdown["rouge_l"] = rouge
        if not gold_calls:
            value = rouge
    return Score(value=min(1.0, max(0.0, value)), breakdown=breakdown)


def paper_metrics(tasks: list[Task], scores: list[Score]) -> dict[str, float]:
    """The API-Bank paper's figures: API-call accuracy (correct calls / gold calls), response ROUGE-L (mean over
    response samples), level-3 sample accuracy, and error-bucket counts."""
    metrics: dict[str, float] = {}
    api = [s.breakdown for s in scores if s.breakdown.get("api_total")]
    if api:
        metrics["api_samples"] = float(len(api))
        metrics["api_call_accuracy"] = sum(b["api_correct"] for b in api) / sum(b["api_total"] for b in api)
        errors = Counter(name for b in api for name, count in b["errors"].items() for _ in range(count))
        metrics.update({f"errors/{name}": float(count) for name, count in sorted(errors.items())})
    chains = [s.breakdown for t, s in zip(tasks, scores) if t.metadata.get("kind") == "chain"]
    if chains:
        metrics["sample_accuracy"] = sum(bool(b.get("sample_correct")) for b in chains) / len(chains)
    responses = [s.breakdown["rouge_l"] for t, s in zip(tasks, scores) if t.metadata.get("kind") == "response"]
    if responses:
        metrics["response_samples"] = float(len(responses))
        metrics["response_rouge_l"] = sum(responses) / len(responses)
    return metrics


def bucket(level: str, gold_call: dict[str, Any], executed: Executed | None, scoring: Scoring) -> str:
    """``evaluator_by_json.py``'s verdict on one gold call given the call made at its position (``None``: none)."""
    if executed is None:
        return "NO_API_CALL"
    call, result, error = executed
    if getattr(call, "name", None) != gold_call.get("name"):
        return "API_NAME_MISMATCH"
    if error == "unknown_argument":
        return "INVALID_INPUT_PARAMETER"
    if error == "missing_argument":
        return "MISS_INPUT_ARGUMENT"
    if error == "wrong_type":
        return "INVALID_PARAMETER_TYPE"
    if not isinstance(result, dict):
        return "CHECK_ERROR"
    gold_result = gold_call.get("result")
    if not isinstance(gold_result, dict):
        return "CHECK_ERROR"
    check = get_check(
        gold_call["name"],
        level,
        delete_meeting_rule=scoring.on("delete_meeting_rule"),
        query_scene_case=scoring.on("query_scene_case"),
    )
    if check is None:
        return "CHECK_ERROR"
    try:
        ok = bool(check(copy.deepcopy(result), copy.deepcopy(gold_result)))
    except KeyError:
        return "KEY_ERROR"
    except Exception:  # noqa: BLE001 - a rule crashing on odd input = incorrect
        return "CHECK_ERROR"
    if ok:
        return "CORRECT"
    if result.get("exception"):
        return "HAS_EXCEPTION"
    if result.get("output") != gold_result.get("output"):
        return "OUTPUT_MISMATCH"
    if result.get("input") != gold_result.get("input"):
        return "INPUT_MISMATCH"
    return "OTHER_MISMATCH"


_ROLE_PREFIX = re.compile(r"^\s*(?:AI|User)\s*:\s*")
_SCORER = None


def rouge_l(reference: str, hypothesis: str) -> float:
    """ROUGE-L F1 between the gold reply and the answer (leading 'AI:'/'User:' removed)."""
    global _SCORER
    hyp = hypothesis or ""
    while _ROLE_PREFIX.match(hyp):
        hyp = _ROLE_PREFIX.sub("", hyp, count=1)
    hyp = hyp.strip()
    if not hyp or not (reference or "").strip():
        return 0.0
    if _SCORER is None:
        from rouge_score import rouge_scorer

        _SCORER = rouge_scorer.RougeScorer(["rougeL"])
    return float(_SCORER.score(reference, hyp)["rougeL"].fmeasure)
