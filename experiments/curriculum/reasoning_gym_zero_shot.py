"""Zero-shot success of an embedded model per reasoning-gym family and level (the curriculum's difficulty ladder).

    python experiments/curriculum/reasoning_gym_zero_shot.py [--model smollm2] [--families a,b,...] [--levels 0-2]
        [--items 8] [--temperature 0] [--samples 1] [--max-new-tokens 32] [--max-turns 2] [--batch-size 8]
        [--engine hf] [--task-spec seed] [--agent-checkpoint DIR] [--alpha 0.5 --band-k 0.4]
        [--name reasoning_gym_zero_shot]

Plays the ``test`` items (``--items`` per family and level) with the same agent, prompt (the model config's
worked exchanges) and scoring as ``python -m genenv.evaluate +bench=reasoning_gym``: greedy by default, or
``--samples`` attempts per item at ``--temperature``, the success the curriculum's p_hat measures during
training. ``--agent-checkpoint`` plays a trained agent instead: the LoRA adapter folder a genenv run checkpoints
(``<run>/checkpoints/<name>/agent``) on top of ``--model``. With several samples each item is also a GRPO group:
the share of items whose samples' solve rate lies in the curriculum's band ``|p - alpha| <= k`` (with G = 8 and
k = 0.4, exactly the groups whose attempts disagree, the only ones that carry an advantage). Writes
``results/curriculum/<name>.json`` and ``.md``: per family@level the mean score (the family's own
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
from typing import Any

from genenv.agents.agent import Agent
from genenv.benchmarks.reasoning_gym import ReasoningGymAdapter
from genenv.config import model_few_shot
from genenv.curriculum.reward import DifficultyFilter
from genenv.evaluate import evaluate
from genenv.llm.engines import build_engine
from genenv.llm.generation import SamplingConfig
from genenv.llm.models import load_policy
from genenv.machine import peak_rss_mb

RESULTS = Path(__file__).resolve().parents[2] / "results" / "curriculum"
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
    parser.add_argument("--task-spec", default="seed", help="the adapter's task_spec (seed or expression)")
    parser.add_argument("--agent-checkpoint", default=None, help="a genenv checkpoint's LoRA folder (.../agent)")
    parser.add_argument("--alpha", type=float, default=0.5, help="the curriculum's target success (groups in band)")
    parser.add_argument("--band-k", type=float, default=0.4, help="the band's half-width (groups in band)")
    args = parser.parse_args(argv)

    families = [f"{name}@{args.levels}" for name in args.families.split(",") if name]
    adapter = ReasoningGymAdapter(
        families=families,
        test_per_level=args.items,
        validation_per_level=0,
        train_per_level=0,
        partial_credit=True,
        task_spec=args.task_spec,
    )
    tasks = [task for task in adapter.load_tasks("test") for _ in range(args.samples)]
    sampling = SamplingConfig(max_new_tokens=args.max_new_tokens, temperature=args.temperature)
    policy = load_policy(args.model)
    if args.agent_checkpoint:
        policy.model = with_adapter(policy.model, Path(args.agent_checkpoint))
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
        if args.samples > 1:
            rows[key]["groups"] = group_shares(group, args.alpha, args.band_k)
    decoding = f"{args.samples} samples per item at temperature {args.temperature}" if args.temperature else "greedy"
    agent_name = args.model + (f" with the LoRA adapter {args.agent_checkpoint}" if args.agent_checkpoint else "")
    record = {
        "command": "python experiments/curriculum/reasoning_gym_zero_shot.py " + " ".join(argv),
        "what": f"{agent_name} zero-shot ({decoding}, the genenv Agent prompt, max {args.max_new_tokens} new tokens, "
        f"{args.max_turns} turns, {args.engine} engine) on {args.items} test items per family and level",
        "reasoning_gym_version": adapter.version,
        "machine": f"{platform.machine()}, Python {platform.python_version()}",
        "seconds": round(seconds, 1),
        "peak_rss_mb": round(peak_rss_mb()),
        "metrics": summary["metrics"],
        "qualifying_rule": f"strictly between {args.low} and {args.high} at some level: the mean score (what the "
        "curriculum's p_hat averages), or the solve rate",
        "qualifying": {metric: qualifying(rows, metric, args.low, args.high) for metric in ("score", "solved")},
        "band": {"alpha": args.alpha, "k": args.band_k} if args.samples > 1 else None,
        "groups": group_shares(episodes, args.alpha, args.band_k) if args.samples > 1 else None,
        "per_family_level": dict(sorted(rows.items(), key=lambda kv: (kv[0].split("@")[0], int(kv[0].split("@")[1])))),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(record, indent=1) + "\n")
    (RESULTS / f"{args.name}.md").write_text(markdown(record))
    print(markdown(record))
    print(f"written to {RESULTS / args.name}.json and .md")


def with_adapter(model: Any, folder: Path) -> Any:
    """``model`` with the LoRA adapter saved in ``folder`` merged into its weights."""
    from peft import PeftModel

    if not (folder / "adapter_config.json").exists():
        raise SystemExit(f"{folder} holds no LoRA adapter (adapter_config.json): give a checkpoint's agent folder")
    return PeftModel.from_pretrained(model, str(folder)).merge_and_unload().eval()


def group_shares(episodes: list[Any], alpha: float, k: float) -> dict[str, float]:
    """Each item's samples as one GRPO group, scored by the training reward (solved or not): the share of groups
    whose solve rate lies in the trainer's band ``|p - alpha| <= k``, solved by none and solved by all."""
    solved: dict[str, list[float]] = defaultdict(list)
    for episode in episodes:
        solved[episode.task.task_id].append(float(episode.info.get("score_breakdown", {}).get("solved", 0.0)))
    rates = [sum(s) / len(s) for s in solved.values()]
    return {
        "n": len(rates),
        "in_band": sum(map(DifficultyFilter(alpha, k), rates)) / len(rates),
        "none": sum(p == 0.0 for p in rates) / len(rates),
        "all": sum(p == 1.0 for p in rates) / len(rates),
    }


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
    ]
    band = record.get("band")
    if band:
        lines += [
            f"groups: each item's samples as one GRPO group, by the training reward (solved); in band: solve rate "
            f"within {band['k']} of {band['alpha']} (the groups that carry an advantage when they disagree); none / "
            "all: solved by none / all of them.",
            "",
            "All items: {n} groups, in band {in_band:.2f}, none {none:.2f}, all {all:.2f}.".format(**record["groups"]),
            "",
        ]
    group_header = " groups | in band | none | all |" if band else ""
    lines += [
        "| family | level | n | score | solved | tool |" + group_header,
        "|---|---|---|---|---|---|" + ("---|---|---|---|" if band else ""),
    ]
    for key, row in record["per_family_level"].items():
        name, _, level = key.partition("@")
        cells = [name, level, row["n"], f"{row['score']:.3f}", f"{row['solved']:.3f}", f"{row['tool_call_first']:.2f}"]
        if band:
            groups = row["groups"]
            cells += [groups["n"], f"{groups['in_band']:.2f}", f"{groups['none']:.2f}", f"{groups['all']:.2f}"]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    lines += ["", f"Qualifying ({record['qualifying_rule']}):", ""]
    lines += [f"- by {metric}: {', '.join(names) or 'none'}" for metric, names in record["qualifying"].items()]
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main(sys.argv[1:])
