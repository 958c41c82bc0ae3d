"""Cost of one ``ToolEnv.step`` under hostile actions, on all six benchmarks, no model involved.

    GENENV_DATA_DIR=../shared/data OMP_NUM_THREADS=1 python performance/step_fuzz.py [--random 300]

Every env steps through the same corpus of hostile actions up to ``max_action_chars`` (32,768): runs of
every character the parsers treat specially, repeated call fragments, deep nesting, thousands of calls in
one action, huge literal arithmetic, random text, plus each benchmark's own tools called with huge
arguments. Each step is timed, and the process's resident memory is read before and after it. Bamboogle
searches a small BM25 corpus written on the fly (its model-backed simulated search is bounded by the
per-action call limit instead). Writes ``results/performance/step_fuzz.json``: per env the step count,
median / 99th percentile / maximum step time, the slowest action, the steps over one second, resident
memory before / after / the largest growth in one step, the error kinds, and any exception ``step``
raised (the goal: none, and every step under one second).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import psutil

from genenv.envs.tool_env import ToolEnv
from genenv.machine import peak_rss_mb

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance" / "step_fuzz.json"
LIMIT = 32_768

# (env label, benchmark, env kwargs); ALFWorld plays fewer random actions: each one ends the episode, and starting a
# game takes seconds
ENVS: list[tuple[str, str, dict[str, Any]]] = [
    ("apibank/level-1", "apibank", {"split": "level-1"}),
    ("apibank/level-3", "apibank", {"split": "level-3"}),
    ("bfcl/simple_python", "bfcl", {"split": "simple_python"}),
    ("bfcl/irrelevance", "bfcl", {"split": "irrelevance"}),
    ("bfcl/multi_turn_base", "bfcl", {"split": "multi_turn_base"}),
    ("bamboogle/heldout (BM25)", "bamboogle", {"split": "heldout"}),
    ("alfworld/valid_seen", "alfworld", {"split": "valid_seen"}),
    ("travelplanner/sole-planning", "travelplanner", {"split": "validation"}),
    ("travelplanner/two-stage", "travelplanner", {"split": "validation", "mode": "two-stage"}),
    ("reasoning_gym/test", "reasoning_gym", {"split": "test"}),
]


def fill(piece: str, limit: int = LIMIT) -> str:
    """``piece`` repeated up to ``limit`` characters."""
    return (piece * (limit // max(len(piece), 1) + 1))[:limit]


def generic_actions(rng: random.Random, random_count: int) -> list[tuple[str, str]]:
    """(label, action) pairs that attack the shared parser and the scorers."""
    actions: list[tuple[str, str]] = []
    for char in "[]{}()<>\"'`=,:;. \n\\-*#0a":
        actions.append((f"run of {char!r}", fill(char)))
    for piece in (
        "[a(",
        "a=[",
        "a='",
        "[f(a=1)]",
        "<tool_call>",
        "<tool_call>{",
        '{"name":',
        '[{"name": "f", ',
        "Day 1:",
        "Day 1:\nBreakfast: ",
        "current_city: ",
        "act(",
        "search(",
        "answer(",
        "So the final answer is: ",
        "10**",
        "'ab'*",
        "((",
        "[[",
        "{'a': ",
        "f(a=f(a=",
        "\\u00e9",
        "é",
        "🙂",
    ):
        actions.append((f"repeated {piece!r}", fill(piece)))
    actions += [
        ("nested lists in a call", "[f(a=" + "[" * 5000 + "]" * 5000 + ")]"),
        ("nested JSON arguments", '{"name": "f", "arguments": ' + '{"a": ' * 3000 + "1" + "}" * 3000 + "}"),
        ("4,000 calls in one list", "[" + ", ".join("f(a=1)" for _ in range(4000)) + "]"),
        ("1,000 tagged calls", '<tool_call>{"name": "f", "arguments": {}}</tool_call>' * 600),
        ("huge power", "[f(a=((3**512)**512)**512)]"),
        ("huge repetition", "[cd(folder=[[0]*100000]*100000)]"),
        ("huge string product", "[f(a='ab' * 600000)]"),
        ("long word then space", "[f(" + "a" * 32000 + " b)]"),
        ("bracket then spaces", "[" + " " * 32000),
        ("brace, spaces, then a key", "{" + " " * 32000 + '"name"'),
        ("call starts without ends", "[a(" * 10000),
        ("a call among many closing brackets", "[f(a=1)]" + " then g(x)]" * 3000),
        ("nested empty lists", "[" * 32 + "[]" * 15000),
        ("nested JSON keys", "{" * 32 + '"a": [' * 5000),
        ("blank lines", "\n" * 16000 + "x"),
        ("a plan field then spaces", "Day 1:\nLunch" + " " * 32000 + "x"),
        ("a day header then spaces", "Day 1" + " " * 32000 + "x"),
        ("a bullet then stars", "- " + "*" * 32000),
        ("nested plan brackets", "[" * 32 + "a," * 15000 + "]" * 32),
        ("python list of dicts", "[" + ", ".join(f"{{'day': {i}, 'current_city': 'x'}}" for i in range(900)) + "]"),
    ]
    for index in range(random_count):
        size = rng.choice([16, 256, 4096, LIMIT])
        alphabet = rng.choice(["[](){}=,'\" a1\n", "".join(map(chr, range(32, 127))), '<>/tool_call{}"name:'])
        actions.append((f"random {index} ({size} chars)", "".join(rng.choice(alphabet) for _ in range(size))))
    return actions


def tool_actions(env: ToolEnv) -> list[tuple[str, str]]:
    """Each of the env's tools called with every parameter set to something huge."""
    actions: list[tuple[str, str]] = []
    for tool in env.adapter.tools(env.task):
        function = tool.get("function", tool)
        name, parameters = function["name"], list(function.get("parameters", {}).get("properties", {}))
        for label, value in (
            ("30 kB text", "x" * 30_000),
            ("huge int", 10**4000),
            ("deep list", [[[[0] * 50] * 50] * 3]),
        ):
            arguments = {parameter: value for parameter in parameters} or {"a": value}
            text = (
                json.dumps({"name": name, "arguments": arguments})
                if label != "huge int"
                else ("[" + name + "(" + ", ".join(f"{p}=10**4000" for p in arguments) + ")]")
            )
            actions.append((f"{name} with {label}", text[:LIMIT]))
        actions.append(
            (
                f"20 calls of {name}",
                "<tool_call>"
                + "</tool_call><tool_call>".join(
                    json.dumps({"name": name, "arguments": {p: "a" for p in parameters}}) for _ in range(20)
                )
                + "</tool_call>",
            )
        )
    return actions


def bm25_corpus(folder: str) -> str:
    path = os.path.join(folder, "corpus.jsonl")
    with open(path, "w") as handle:
        for index in range(200):
            handle.write(
                json.dumps({"id": str(index), "title": f"Title {index}", "text": f"Passage {index} " * 30}) + "\n"
            )
    return path


RANDOM_CAP = {"alfworld": 20}


def fuzz_env(
    label: str,
    benchmark: str,
    kwargs: dict[str, Any],
    corpus: str,
    actions: list[tuple[str, str]],
    seconds_limit: float,
) -> dict[str, Any]:
    if benchmark == "bamboogle":
        kwargs = {**kwargs, "corpus": corpus}
    process = psutil.Process()
    env = ToolEnv(benchmark, max_turns=1_000_000, **kwargs)
    env.reset(seed=0)
    rss_start = process.memory_info().rss
    cap = RANDOM_CAP.get(benchmark)
    if cap is not None:
        crafted = [a for a in actions if not a[0].startswith("random ")]
        actions = crafted + [a for a in actions if a[0].startswith("random ")][:cap]
    corpus_actions = actions + tool_actions(env)
    times: list[float] = []
    slowest: tuple[float, str] = (0.0, "")
    over: list[dict[str, Any]] = []
    errors: Counter[str] = Counter()
    raised: list[dict[str, str]] = []
    growth = 0
    resets = 0
    for index, (name, action) in enumerate(corpus_actions):
        before = process.memory_info().rss
        started = time.perf_counter()
        try:
            _, _, terminated, truncated, info = env.step(action)
        except Exception as error:  # the benchmark's point: count what escapes step()
            raised.append(
                {
                    "action": name,
                    "error": f"{type(error).__name__}: {error}"[:300],
                    "trace": traceback.format_exc()[-600:],
                }
            )
            terminated, truncated, info = True, False, {}
        seconds = time.perf_counter() - started
        growth = max(growth, process.memory_info().rss - before)
        times.append(seconds)
        errors[info.get("error") or "none"] += 1
        slowest = max(slowest, (seconds, name))
        if seconds > seconds_limit:
            over.append({"action": name, "seconds": round(seconds, 3)})
        if terminated or truncated:
            env.reset(seed=index + 1)
            resets += 1
    times.sort()
    return {
        "env": label,
        "steps": len(times),
        "resets": resets,
        "seconds_median": round(statistics.median(times), 5),
        "seconds_p99": round(times[int(0.99 * (len(times) - 1))], 4),
        "seconds_max": round(slowest[0], 4),
        "slowest_action": slowest[1],
        f"steps_over_{seconds_limit:g}s": over,
        "rss_mb_start": round(rss_start / 2**20),
        "rss_mb_end": round(process.memory_info().rss / 2**20),
        "rss_mb_max_growth_in_one_step": round(growth / 2**20, 1),
        "errors": dict(errors.most_common()),
        "raised": raised,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--random", type=int, default=300, help="random actions besides the crafted ones")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds-limit", type=float, default=1.0)
    parser.add_argument(
        "--only", nargs="*", help="env labels to run (default: all; a partial run writes no results file)"
    )
    args = parser.parse_args()
    actions = generic_actions(random.Random(args.seed), args.random)
    load_before = os.getloadavg()
    started = time.perf_counter()
    results = []
    with tempfile.TemporaryDirectory() as folder:
        corpus = bm25_corpus(folder)
        for label, benchmark, kwargs in ENVS:
            if args.only and label not in args.only:
                continue
            result = fuzz_env(label, benchmark, kwargs, corpus, actions, args.seconds_limit)
            results.append(result)
            print(
                json.dumps(
                    {
                        k: result[k]
                        for k in (
                            "env",
                            "steps",
                            "seconds_p99",
                            "seconds_max",
                            "slowest_action",
                            "rss_mb_max_growth_in_one_step",
                        )
                    }
                ),
                flush=True,
            )
    payload = {
        "command": "python performance/step_fuzz.py "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v is not None),
        "actions_per_env": f"{len(actions)} shared + each env's tools called with huge arguments",
        "max_action_chars": LIMIT,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "peak_rss_mb": round(peak_rss_mb()),
        "envs": results,
    }
    if not args.only:
        RESULTS.write_text(json.dumps(payload, indent=1) + "\n")
    print(json.dumps({k: v for k, v in payload.items() if k != "envs"}, indent=1))


if __name__ == "__main__":
    main()
