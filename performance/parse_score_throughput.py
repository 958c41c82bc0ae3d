"""Parse + execute + score throughput of API-Bank actions through ToolEnv, no model involved.

    GENENV_DATA_DIR=../shared/data python performance/parse_score_throughput.py [--repeats 3]

Replays every gold API call of API-Bank level-1 and level-2 as agent text (in the three accepted
formats) through ``ToolEnv.reset`` / ``step``, and separately times ``parse_tool_calls`` alone. The adapter
runs in its ``genenv`` scoring mode, the one that reads all three formats (``official`` reads only the third).
Writes ``results/performance/parse_score_throughput.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from genenv.benchmarks.base import get_benchmark
from genenv.envs.tool_env import ToolEnv
from genenv.toolcalls import parse_tool_calls

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance" / "parse_score_throughput.json"


def action_texts(name: str, arguments: dict) -> dict[str, str]:
    """The same call written in each accepted format."""
    payload = json.dumps({"name": name, "arguments": arguments})
    python = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return {
        "chatml": f"<tool_call>\n{payload}\n</tool_call>",
        "bare_json": payload,
        "python_call": f"[{name}({python})]",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    adapter = get_benchmark("apibank", scoring="genenv")
    tasks = [t for split in ("level-1-api", "level-2-api") for t in adapter.load_tasks(split)]
    episodes = [(t, action_texts(t.gold["calls"][0]["name"], t.gold["calls"][0]["arguments"])) for t in tasks]
    env = ToolEnv(adapter, tasks=tasks, max_turns=4)
    for task, actions in episodes:  # warm-up: lazy loads (ToolSearcher model, databases)
        env.reset(options={"task": task})
        env.step(actions["chatml"])

    results: dict[str, dict] = {}
    for fmt in ("chatml", "bare_json", "python_call"):
        texts = [actions[fmt] for _, actions in episodes]
        start = time.perf_counter()
        for _ in range(args.repeats):
            for text in texts:
                parse_tool_calls(text)
        parse_seconds = time.perf_counter() - start
        correct = 0
        start = time.perf_counter()
        for _ in range(args.repeats):
            for task, actions in episodes:
                env.reset(options={"task": task})
                _, reward, *_ = env.step(actions[fmt])
                correct += reward == 1.0
        env_seconds = time.perf_counter() - start
        n = len(texts) * args.repeats
        results[fmt] = {
            "actions": n,
            "parse_actions_per_s": n / parse_seconds,
            "env_actions_per_s": n / env_seconds,
            "env_ms_per_action": 1000 * env_seconds / n,
            "gold_correct_fraction": correct / n,
        }
        print(
            f"{fmt:12s} parse {n / parse_seconds:9.0f}/s   reset+step+score {n / env_seconds:7.0f}/s "
            f"({1000 * env_seconds / n:.2f} ms)   gold correct {correct / n:.3f}"
        )
    record = {
        "command": "GENENV_DATA_DIR=../shared/data python performance/parse_score_throughput.py --repeats "
        f"{args.repeats}",
        "machine": f"{platform.processor() or platform.machine()}, {platform.python_version()}",
        "tasks": len(tasks),
        "results": results,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(record, indent=1) + "\n")
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
