"""ALFWorld scripted play: every game's expert walkthrough replayed through ToolEnv, no model involved.

    GENENV_DATA_DIR=../shared/data python experiments/parity/alfworld_scripted.py [--splits valid_seen] [--stride 1]

For each game: ``ToolEnv.reset`` (loads the game into the TextWorld engine), then one ``step`` per
walkthrough command as ``<tool_call>`` text. Records whether the walkthrough wins (it must, for
every game), whether the prompt equals the engine's own first observation and admissible commands,
the latency of a reset and of a step, and games per second. With ``--plan-games N`` it also times
what validating a generated task costs: fast-downward planning (and replaying the plan) for N train
games spread over the split, each with its own goal. Writes ``results/parity/alfworld_scripted.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from genenv.benchmarks.alfworld.games import read_game, room_kind
from genenv.benchmarks.alfworld.planner import Planner
from genenv.benchmarks.base import get_benchmark
from genenv.envs.tool_env import ToolEnv
from genenv.machine import peak_rss_mb

RESULTS = Path(__file__).resolve().parents[2] / "results" / "parity" / "alfworld_scripted.json"


def act(command: str) -> str:
    return "<tool_call>" + json.dumps({"name": "act", "arguments": {"command": command}}) + "</tool_call>"


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "n": len(values),
        "mean_ms": 1000 * statistics.fmean(values),
        "median_ms": 1000 * statistics.median(values),
        "p90_ms": 1000 * ordered[int(0.9 * (len(ordered) - 1))],
        "max_ms": 1000 * ordered[-1],
    }


def plan_games(adapter, n: int, timeout: float) -> dict:
    """Plan ``n`` train games (their own goals) in the planner worker; latency per room kind."""
    tasks = adapter.load_tasks("train")
    tasks = tasks[:: max(1, len(tasks) // n)][:n]
    planner = Planner(timeout)
    planner.solve(read_game(adapter.data_dir / tasks[0].metadata["game"]))  # start the worker
    per_room: dict[str, list[float]] = defaultdict(list)
    games = []
    for task in tasks:
        start = time.perf_counter()
        result = planner.solve(read_game(adapter.data_dir / task.metadata["game"]))
        seconds = time.perf_counter() - start
        room = room_kind(task.metadata["scene"])
        per_room[room].append(seconds)
        games.append(
            {
                "task_id": task.task_id,
                "room": room,
                "seconds": seconds,
                "plan_length": len(result.plan or []),
                "walkthrough_length": len(task.gold["walkthrough"]),
                "wins": result.plan is not None,
                "reason": result.reason,
            }
        )
    planner.close()
    return {
        "games": len(games),
        "plans_that_win": sum(g["wins"] for g in games),
        "timeout_seconds": timeout,
        "latency": summary([g["seconds"] for g in games]),
        "latency_per_room": {room: summary(v) for room, v in sorted(per_room.items())},
        "per_game": games,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", nargs="+", default=["valid_seen", "valid_unseen"])
    parser.add_argument("--stride", type=int, default=1, help="play every K-th game of each split")
    parser.add_argument("--plan-games", type=int, default=0, help="train games to plan with fast-downward")
    parser.add_argument("--planner-timeout", type=float, default=300.0)
    args = parser.parse_args()
    adapter = get_benchmark("alfworld")
    load_average = os.getloadavg()
    report: dict = {
        "command": "python " + " ".join(sys.argv),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load_average_at_start": load_average},
        "splits": {},
    }
    for split in args.splits:
        start = time.perf_counter()
        tasks = adapter.load_tasks(split)[:: args.stride]
        load_seconds = time.perf_counter() - start
        env = ToolEnv(adapter, tasks=tasks, max_turns=adapter.max_steps)
        resets: dict[str, list[float]] = defaultdict(list)
        steps: list[float] = []
        won: dict[str, list[bool]] = defaultdict(list)
        prompt_matches, failures = 0, []
        start = time.perf_counter()
        for task in tasks:
            t0 = time.perf_counter()
            env.reset(options={"task": task})
            resets[room_kind(task.metadata["scene"])].append(time.perf_counter() - t0)
            state = env._state
            engine_prompt = f"{state.observation}\n\nAdmissible commands: {', '.join(state.admissible)}"
            prompt_matches += engine_prompt == task.prompt
            reward = 0.0
            for command in task.gold["walkthrough"]:
                t0 = time.perf_counter()
                _, reward, terminated, truncated, _ = env.step(act(command))
                steps.append(time.perf_counter() - t0)
                if terminated or truncated:
                    break
            won[adapter.family(task)].append(reward == 1.0)
            if reward != 1.0:
                failures.append(task.task_id)
        seconds = time.perf_counter() - start
        all_resets = [r for values in resets.values() for r in values]
        report["splits"][split] = {
            "games": len(tasks),
            "walkthrough_success": sum(sum(v) for v in won.values()) / len(tasks),
            "walkthrough_success_per_type": {k: sum(v) / len(v) for k, v in sorted(won.items())},
            "failures": failures,
            "prompt_equals_engine_first_observation": prompt_matches,
            "load_tasks_seconds": load_seconds,
            "seconds": seconds,
            "games_per_second": len(tasks) / seconds,
            "steps_per_second": len(steps) / seconds,
            "reset_latency": summary(all_resets),
            "reset_latency_per_room": {room: summary(v) for room, v in sorted(resets.items())},
            "step_latency": summary(steps),
        }
        print(json.dumps({split: report["splits"][split]}, indent=1))
    if args.plan_games:
        report["planner"] = plan_games(adapter, args.plan_games, args.planner_timeout)
        print(json.dumps({"planner": report["planner"]}, indent=1))
    report["peak_rss_mb"] = peak_rss_mb()
    report["load_average_at_end"] = os.getloadavg()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
