"""Zero-shot success of an embedded model per reasoning-gym family and level (the curriculum's difficulty ladder).

    python benchmarks/reasoning_gym_zero_shot.py [--model smollm2] [--families a,b,...] [--levels 0-2] [--items 8]
        [--temperature 0] [--samples 1] [--max-new-tokens 32] [--max-turns 2] [--batch-size 8]
        [--engine hf] [--name reasoning_gym_zero_shot]

Plays the ``test`` items (``--items`` per family and level) with the same agent, prompt (the model config's
worked exchanges) and scoring as ``python -m genenv.evaluate +bench=reasoning_gym``: greedy by default, or
``--samples`` attempts per item at ``--temperature``, the success the curriculum's p_hat measures during
training. Writes
``benchmarks/results/<name>.json`` and ``.md``: per family@level the mean score (the family's own
``score_answer``), the solve rate (full score), how often a tool call was written instead of an
answer, and which families qualify for the alpha=0.5 curriculum (mean score, or solve rate,
strictly between ``--low`` and ``--high`` at some level).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import defaultdict
from pathlib import Path

from genenv.agents.agent import Agent
from genenv.agents.engines import build_engine
from genenv.agents.generation import SamplingConfig
from genenv.agents.models import load_policy
from genenv.benchmarks.reasoning_gym import ReasoningGymAdapter
from genenv.config import model_few_shot
from genenv.evaluate import evaluate
from genenv.machine import peak_rss_mb

RESULTS = Path(__file__).resolve().parent / "results"
SHORTLIST = (
    "basic_arithmetic",
    "chain_sum",
    "products",
    "leg_counting",
    "letter_counting",
    "spell_backward",
    "family_relationships",
    "aiw",
    "calendar_arithmetic",
    "syllogism",
    "count_bits",
)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(SHORTLIST))
    parser.add_argument("--levels", default="0-2", help="'A-B' or 'L', the same for every family")
    parser.add_argument("--items", type=int, default=8, help="test items per family and level")
    parser.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    parser.add_argument("--samples", type=int, default=1, help="attempts per item (sampled when --temperature > 0)")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--max-turns", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--low", type=float, default=0.05)
    parser.add_argument("--high", type=float, default=0.8)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--name", default="reasoning_gym_zero_shot")
    parser.add_argument("--engine", default="hf", choices=["hf", "ctranslate2"], help="ctranslate2: float32")
    args = parser.parse_args(argv)

    families = [f"{name}@{args.levels}" for name in args.families.split(",") if name]
    adapter = ReasoningGymAdapter(
        families=families, test_per_level=args.items, validation_per_level=0, train_per_level=0, partial_credit=True
    )
    tasks = [task for task in adapter.load_tasks("test") for _ in range(args.samples)]
    sampling = SamplingConfig(max_new_tokens=args.max_new_tokens, temperature=args.temperature)
    policy = load_policy(args.model)
    engine = build_engine(args.engine, policy, compute_type="float32", logprob_temperature=args.temperature or 1.0)
    agent = Agent(policy, sampling, few_shot=model_few_shot(args.model), engine=engine)
    start = time.perf_counter()
    summary, episodes = evaluate(adapter, agent, tasks, batch_size=args.batch_size, max_turns=args.max_turns, seed=0)
    seconds = time.perf_counter() - start

    rows: dict[str, dict] = {}
    grouped = defaultdict(list)
    for episode in episodes:
        grouped[adapter.family(episode.task)].append(episode)
    for key, group in grouped.items():
        breakdowns = [e.info.get("score_breakdown", {}) for e in group]
        rows[key] = {
            "n": len(group),
            "score": sum(e.reward for e in group) / len(group),
            "solved": sum(b.get("solved", 0.0) for b in breakdowns) / len(group),
            "tool_call_first": sum(bool(e.trajectory.turns and e.trajectory.turns[0].calls) for e in group)
            / len(group),
            "examples": [
                {
                    "question": e.task.prompt[:120],
                    "gold": e.task.gold["answer"][:60],
                    "answer": b.get("answer", "")[:60],
                }
                for e, b in list(zip(group, breakdowns))[:2]
            ],
        }
    decoding = f"{args.samples} samples per item at temperature {args.temperature}" if args.temperature else "greedy"
    record = {
        "command": "python benchmarks/reasoning_gym_zero_shot.py " + " ".join(argv),
        "what": f"{args.model} zero-shot ({decoding}, the genenv Agent prompt, max {args.max_new_tokens} new tokens, "
        f"{args.max_turns} turns, {args.engine} engine) on {args.items} test items per family and level",
        "reasoning_gym_version": adapter.version,
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(peak_rss_mb()),
        "metrics": summary["metrics"],
        "qualifying_rule": f"strictly between {args.low} and {args.high} at some level: the mean score (what the "
        "curriculum's p_hat averages), or the solve rate",
        "qualifying": {metric: qualifying(rows, metric, args.low, args.high) for metric in ("score", "solved")},
        "per_family_level": dict(sorted(rows.items(), key=lambda kv: (kv[0].split("@")[0], int(kv[0].split("@")[1])))),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(record, indent=1) + "\n")
    (RESULTS / f"{args.name}.md").write_text(markdown(record))
    print(markdown(record))
    print(f"written to {RESULTS / args.name}.json and .md")


def qualifying(rows: dict[str, dict], metric: str, low: float, high: float) -> list[str]:
    """Families whose ``metric`` lies strictly between ``low`` and ``high`` at one of their levels at least."""
    return sorted({key.partition("@")[0] for key, row in rows.items() if low < row[metric] < high})


def markdown(record: dict) -> str:
    lines = [
        "# reasoning-gym zero-shot success of an embedded model",
        "",
        f"{record['what']}; reasoning-gym {record['reasoning_gym_version']}.",
        f"Command: `{record['command']}` ({record['seconds']:.0f} s, {record['machine']}).",
        "",
        "score = mean of the family's `score_answer`; solved = share of full scores; tool = share of episodes "
        "whose first reply was a tool call instead of an answer.",
        "",
        "| family | level | n | score | solved | tool |",
        "|---|---|---|---|---|---|",
    ]
    for key, row in record["per_family_level"].items():
        name, _, level = key.partition("@")
        cells = [name, level, row["n"], f"{row['score']:.3f}", f"{row['solved']:.3f}", f"{row['tool_call_first']:.2f}"]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    lines += ["", f"Qualifying ({record['qualifying_rule']}):", ""]
    lines += [f"- by {metric}: {', '.join(names) or 'none'}" for metric, names in record["qualifying"].items()]
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main(sys.argv[1:])
