"""Peak memory of HF rollouts with ended rows leaving the batch, against one ``generate`` call a turn, on long prompts.

    OMP_NUM_THREADS=1 GENENV_DATA_DIR=../shared/data python performance/ended_rows_memory.py

:class:`~genenv.llm.turn_cache.TurnCache` keeps the rows that left a turn's batch aside and puts the turn's KV cache
together again at its end. Each setting plays, in a fresh process, G = 8 sampled attempts at each of 2 API-Bank
level-1 tasks (prompts of about 970 tokens with the embedded SmolLM2), 64 new tokens a turn, at most 2 turns, and
reports its peak resident set. Writes ``results/performance/ended_rows_memory.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from genenv.machine import uptime

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"
SETTINGS = {"one call a turn": None, "ended rows leave every 16 tokens": 16}


def play(chunk: int | None) -> dict[str, float]:
    """One setting's rollout in this process: its seconds, new and prompt tokens, and the process's peak RSS (MB)."""
    from conversion_memory import status_mb
    from ended_rows import rollout

    from genenv.benchmarks.base import get_benchmark
    from genenv.llm.generation import SamplingConfig
    from genenv.llm.models import load_policy

    policy = load_policy("smollm2", seed=0)
    adapter = get_benchmark("apibank")
    tasks = [t for t in adapter.load_tasks("level-1")[:2] for _ in range(8)]
    before = status_mb("VmHWM")
    seconds, batch = rollout(
        policy, adapter, tasks, SamplingConfig(max_new_tokens=64, temperature=1.0), 0, chunk, max_turns=2
    )
    return {
        "seconds": round(seconds, 1),
        "new_tokens": sum(sum(mask) for mask in batch.env_mask),
        "prompt_tokens": sum(len(ids) for ids in batch.prompt_ids),
        "peak_rss_mb_before": before,
        "peak_rss_mb": status_mb("VmHWM"),
    }


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--setting":
        print(json.dumps(play(SETTINGS[sys.argv[2]])))
        return
    record: dict = {
        "command": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')} python "
        "performance/ended_rows_memory.py",
        "load_start": uptime(),
        "settings": {},
    }
    for name in SETTINGS:
        out = subprocess.run(
            [sys.executable, __file__, "--setting", name], check=True, capture_output=True, text=True
        ).stdout
        record["settings"][name] = json.loads(out.strip().splitlines()[-1])
        print(name, record["settings"][name], flush=True)
    record["load_end"] = uptime()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ended_rows_memory.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
