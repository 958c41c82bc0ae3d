"""The OpenEnv server's cost per step against ``ToolEnv.step`` in process, and steps per second with 8 clients.

    GENENV_DATA_DIR=../shared/data python performance/openenv_overhead.py [--tasks 24] [--rounds 3]

Starts ``python -m genenv.serve +bench=apibank split=level-3`` on a free localhost port and plays the same actions
(the gold actions of the first ``--tasks`` level-3 tasks whose gold episode scores 1.0, 5-9 turns each) three
ways, ``--rounds`` times each, interleaved so machine load hits all alike: in process (``ToolEnv.reset`` +
``step``), through one :class:`~genenv.integrations.openenv.GenEnvClient`, and through 8 concurrent clients (one
asyncio process, each playing every episode). Per-step times are the medians over rounds; the ratio compares
numbers of the same run. Writes ``results/performance/openenv_overhead.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from genenv.benchmarks.base import BenchmarkAdapter, Task, get_benchmark
from genenv.envs.expert import expert_messages, replay_expert
from genenv.envs.tool_env import ToolEnv
from genenv.integrations.openenv import GenEnvClient
from genenv.machine import load_average

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results" / "performance" / "openenv_overhead.json"
SPLIT, MAX_TURNS, CLIENTS = "level-3", 16, 8
Episode = tuple[Task, list[str]]


def start_server() -> tuple[subprocess.Popen, str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "genenv.serve", "+bench=apibank", f"port={port}", f"split={SPLIT}"]
    command += [f"max_turns={MAX_TURNS}", f"max_sessions={CLIENTS + 1}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(400):
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5):
                return process, url
        except OSError:
            if process.poll() is not None:
                raise SystemExit("the server exited while starting") from None
            time.sleep(0.3)
    process.kill()
    raise SystemExit("the server did not start within 2 minutes")


def in_process(adapter: BenchmarkAdapter, episodes: list[Episode]) -> tuple[float, int]:
    """Seconds spent in ``ToolEnv.step`` and the number of steps."""
    env = ToolEnv(adapter, tasks=[task for task, _ in episodes], split=SPLIT, max_turns=MAX_TURNS)
    spent, steps = 0.0, 0
    for task, actions in episodes:
        env.reset(options={"task": task})
        start = time.perf_counter()
        for action in actions:
            env.step(action)
        spent += time.perf_counter() - start
        steps += len(actions)
    return spent, steps


async def play(url: str, episodes: list[Episode]) -> tuple[float, int, float]:
    """Seconds one client spends in ``step`` round trips, its number of steps, and its wall seconds (resets too)."""
    spent, steps, begin = 0.0, 0, time.perf_counter()
    async with GenEnvClient(base_url=url) as env:
        for task, actions in episodes:
            await env.reset(task_id=task.task_id)
            start = time.perf_counter()
            for action in actions:
                result = await env.step(action)
            spent += time.perf_counter() - start
            steps += len(actions)
            assert result.done and result.reward == 1.0, f"{task.task_id}: gold episode scored {result.reward}"
    return spent, steps, time.perf_counter() - begin


async def concurrent(url: str, episodes: list[Episode]) -> tuple[float, int]:
    """Wall seconds for ``CLIENTS`` clients each playing every episode (resets included), and all their steps."""
    start = time.perf_counter()
    outcomes = await asyncio.gather(*(play(url, episodes) for _ in range(CLIENTS)))
    return time.perf_counter() - start, sum(steps for _, steps, _ in outcomes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    adapter = get_benchmark("apibank").reporting_adapter()
    episodes = []
    for task in adapter.load_tasks(SPLIT):
        expert = expert_messages(adapter, task)
        if expert and replay_expert(adapter, task)[1].value == 1.0:
            episodes.append((task, [m["content"] for m in expert if m["role"] == "assistant"]))
        if len(episodes) == args.tasks:
            break
    load_before = load_average()
    process, url = start_server()
    try:
        asyncio.run(play(url, episodes[:2]))  # warm-up: connections, lazy loads on both sides
        in_process(adapter, episodes[:2])
        local, served, alone, crowd = [], [], [], []
        for _ in range(args.rounds):
            spent, steps = in_process(adapter, episodes)
            local.append(spent / steps)
            spent, steps, wall = asyncio.run(play(url, episodes))
            served.append(spent / steps)
            alone.append(steps / wall)
            wall, total = asyncio.run(concurrent(url, episodes))
            crowd.append(total / wall)
    finally:
        process.terminate()
        process.wait(timeout=30)
    local_ms, served_ms = statistics.median(local) * 1e3, statistics.median(served) * 1e3
    result = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": f"python performance/openenv_overhead.py --tasks {args.tasks} --rounds {args.rounds}",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average": {"before": load_before, "after": load_average()},
        "workload": {
            "benchmark": "apibank",
            "split": SPLIT,
            "episodes": len(episodes),
            "steps_per_pass": sum(len(a) for _, a in episodes),
            "actions": "gold actions (expert.py), every episode scored 1.0",
            "rounds": args.rounds,
        },
        "in_process_ms_per_step": round(local_ms, 3),
        "openenv_ms_per_step": round(served_ms, 3),
        "openenv_overhead_ms_per_step": round(served_ms - local_ms, 3),
        "ratio_openenv_over_in_process": round(served_ms / local_ms, 2),
        "concurrent_clients": CLIENTS,
        "concurrent_steps_per_s": round(statistics.median(crowd), 1),
        "single_client_steps_per_s": round(statistics.median(alone), 1),
        "per_round": {
            "in_process_ms": local,
            "openenv_ms": served,
            "single_client_steps_per_s": alone,
            "concurrent_steps_per_s": crowd,
        },
        "notes": (
            "client and server on the same 2-core machine (localhost WebSocket) beside other jobs; ms per step count "
            "step calls only; steps per second are steps over wall time, resets included (8 clients: all together)"
        ),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "per_round"}, indent=2))


if __name__ == "__main__":
    main()
