"""An embedded model (SmolLM2-135M by default, ``--model qwen05``) on BFCL v4: accuracy per category on a subset.

    GENENV_DATA_DIR=/work/shared/data python experiments/zero_shot/bfcl_eval_smollm2.py \
        [--per-category 16] [--multi-turn 4] [--max-new-tokens 128] [--model smollm2]

Single-turn categories: ``--per-category`` entries spread evenly over each category, one response each
(``max_turns=1``: BFCL scores the first response), greedy, through ``genenv.evaluate.evaluate``.
Multi-turn categories: ``--multi-turn`` entries each, read as bfcl-eval's runner reads them (a response it cannot
decode closes the user turn; the 21st decodable one in a turn ends the entry) and capped at
``--multi-turn-max-turns`` agent messages per entry; the default cap, ``(MAXIMUM_STEP_LIMIT + 2)`` per user turn of
the longest entry, never binds before upstream's own limit (ToolEnv answers each plain-text answer with the user's
next turn, ``adapter.next_user_message``).
Writes ``results/zero_shot/bfcl_smollm2.json``: accuracy and error types per category, the leaderboard
group scores over the subset, and timings. Episodes are journalled per category in ``--journal-dir`` (default
``runs/evaluate/bfcl-<model>``): killed, the same command continues from the entries it finished (a category's
``seconds`` then count the last invocation only).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

from genenv.agents.agent import Agent
from genenv.benchmarks.base import Score, Task
from genenv.benchmarks.bfcl import BFCLAdapter
from genenv.benchmarks.bfcl.adapter import MAXIMUM_STEP_LIMIT
from genenv.benchmarks.bfcl.data import AST_LIVE, AST_NON_LIVE, MULTI_TURN, RELEVANCE
from genenv.config import model_few_shot
from genenv.evaluate import claim_output_dir, evaluate_with_journal
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import load_policy
from genenv.machine import peak_rss_mb

RESULTS = Path(__file__).resolve().parents[2] / "results" / "zero_shot" / "bfcl_smollm2.json"
ALL_CATEGORIES = ",".join(AST_NON_LIVE + AST_LIVE + RELEVANCE + MULTI_TURN)


def spread(tasks: list[Task], n: int) -> list[Task]:
    """``n`` tasks spread evenly over the list (every K-th)."""
    return tasks[:: max(1, len(tasks) // n)][:n] if n > 0 else []


def official_message_limit(tasks: list[Task]) -> int:
    """The most agent messages bfcl-eval's runner lets any of these multi-turn entries write: per user turn,
    ``MAXIMUM_STEP_LIMIT + 1`` decodable responses (the last one force-quits) or that many and a closing answer."""
    return (MAXIMUM_STEP_LIMIT + 2) * max(len(task.metadata["turns"]) for task in tasks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--per-category", type=int, default=16)
    parser.add_argument("--multi-turn", type=int, default=4)
    parser.add_argument("--multi-turn-max-turns", type=int, default=None, help="default: upstream's own limit")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--categories", default=ALL_CATEGORIES)
    parser.add_argument("--output", default=str(RESULTS))
    parser.add_argument("--journal-dir", type=Path, help="episode journals (default runs/evaluate/bfcl-MODEL)")
    args = parser.parse_args()
    journals = args.journal_dir or Path("runs/evaluate") / f"bfcl-{args.model}"
    journals.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in vars(args).items() if k not in ("output", "journal_dir", "categories")}
    claim_output_dir(journals, settings)

    adapter = BFCLAdapter()
    start = time.perf_counter()
    policy = load_policy(args.model)
    agent = Agent(policy, SamplingConfig(max_new_tokens=args.max_new_tokens), few_shot=model_few_shot(args.model))
    all_tasks: list[Task] = []
    all_scores: list[Score] = []
    categories: dict[str, dict[str, Any]] = {}
    for category in args.categories.split(","):
        multi = category in MULTI_TURN
        tasks = spread(adapter.load_tasks(category), args.multi_turn if multi else args.per_category)
        if not tasks:
            continue
        began = time.perf_counter()
        max_turns = (args.multi_turn_max_turns or official_message_limit(tasks)) if multi else 1
        _, records = evaluate_with_journal(
            adapter,
            agent,
            tasks,
            journals / f"{category}.jsonl",
            batch_size=args.batch_size,
            max_turns=max_turns,
            progress=False,
        )
        scores = [Score(r["score"], r["breakdown"]) for r in records]
        all_tasks += tasks
        all_scores += scores
        categories[category] = {
            "n": len(tasks),
            "of": len(adapter.load_tasks(category)),
            "accuracy": sum(s.value for s in scores) / len(scores),
            "error_types": dict(Counter(s.breakdown.get("error_type") or "correct" for s in scores)),
            "seconds": time.perf_counter() - began,
            "first_actions": [r["actions"][0][:160] if r["actions"] else "" for r in records[:3]],
        }
        if multi:  # the cap on messages, and the entries it cut (upstream would have let them go on)
            categories[category].update(max_messages=max_turns, ended_by_cap=sum(bool(r["truncated"]) for r in records))
        print(
            f"{category:26} {categories[category]['accuracy']:.3f} ({len(tasks)} tasks, "
            f"{categories[category]['seconds']:.0f} s)",
            flush=True,
        )
        result = _result(args, adapter.aggregate(all_tasks, all_scores), categories, time.perf_counter() - start)
        Path(args.output).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output).write_text(json.dumps(result, indent=1) + "\n")  # rewritten after every category
    print(json.dumps(result["groups"], indent=1))
    print(f"written to {args.output} in {result['seconds']:.0f} s")


def _result(args: argparse.Namespace, metrics: dict[str, float], categories: dict, seconds: float) -> dict:
    return {
        "command": "GENENV_DATA_DIR=/work/shared/data python experiments/zero_shot/bfcl_eval_smollm2.py "
        f"--model {args.model} "
        f"--per-category {args.per_category} --multi-turn {args.multi_turn} "
        + (f"--multi-turn-max-turns {args.multi_turn_max_turns} " if args.multi_turn_max_turns else "")
        + f"--max-new-tokens {args.max_new_tokens}"
        + (f" --categories {args.categories}" if args.categories != ALL_CATEGORIES else ""),
        "model": args.model,
        "subset": f"{args.per_category} entries per single-turn category and {args.multi_turn} per multi-turn "
        "category, spread evenly (every K-th entry); greedy decoding; worked exchanges shown: "
        f"{model_few_shot(args.model)} (the model config's few_shot)",
        "groups": {k: v for k, v in metrics.items() if "/" not in k},
        "categories": categories,
        "seconds": seconds,
        "peak_rss_mb": peak_rss_mb(),
        "cpu_count": os.cpu_count(),
        "load_average_at_end": os.getloadavg(),
    }


if __name__ == "__main__":
    main()
