"""The embedded SmolLM2-135M-Instruct on all 125 Bamboogle questions, with simulated search.

    GENENV_DATA_DIR=/work/shared/data [OMP_NUM_THREADS=1] python experiments/zero_shot/bamboogle_smollm2.py \\
        [overrides ...]

Runs ``python -m genenv.evaluate +bench=bamboogle`` (exact match as the score, greedy decoding, at most
3 agent turns of 64 new tokens, simulated search results of 64 new tokens from a frozen copy of the same
model: there is no Bamboogle corpus in the shared data) and writes its ``results.json`` with the command,
wall time, CPU load and a summary of how the agent answered to ``results/zero_shot/bamboogle_smollm2.json``.
Extra arguments are passed to ``genenv.evaluate`` as Hydra overrides (e.g. ``limit=8``). On a busy
shared CPU, ``OMP_NUM_THREADS=1`` is several times faster than torch's default of one thread per core.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from genenv.machine import peak_rss_mb

RESULTS = Path(__file__).resolve().parents[2] / "results" / "zero_shot" / "bamboogle_smollm2.json"
OVERRIDES = ["+bench=bamboogle", "bench.options.reward=em", "max_turns=3", "max_new_tokens=64", "batch_size=16"]


def main() -> None:
    extra = sys.argv[1:]
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "genenv.evaluate", *OVERRIDES, *extra, f"output_dir={out}"]
        shown = " ".join(["python -m genenv.evaluate", *OVERRIDES, *extra])
        env = "".join(f"{k}={os.environ[k]} " for k in ("GENENV_DATA_DIR", "OMP_NUM_THREADS") if os.environ.get(k))
        load_before = os.getloadavg()
        start = time.perf_counter()
        subprocess.run(command, check=True)
        seconds = time.perf_counter() - start
        load_after = os.getloadavg()
        result = json.loads((Path(out) / "results.json").read_text())
    episodes = result["episodes"]
    breakdowns = [e["breakdown"] for e in episodes]
    summary = {
        "episodes_with_a_search": sum(b.get("searches", 0) > 0 for b in breakdowns),
        "answer_source": dict(Counter(b.get("answer_source", "none") for b in breakdowns)),
        "extraction": dict(Counter(b.get("extraction", "none") for b in breakdowns)),
        "turn_errors": dict(Counter(err for e in episodes for err in e["errors"] if err)),
    }
    header = {
        "script": f"{env}python experiments/zero_shot/bamboogle_smollm2.py {shlex.join(extra)}".strip(),
        "command": f"{env}{shown}",
        "what": (
            "embedded SmolLM2-135M-Instruct (few-shot tool-call prompt, greedy) on Bamboogle; search results "
            "simulated by a frozen copy of SmolLM2 (no corpus); score = exact match (SQuAD normalisation)"
        ),
        "wall_time_s": round(seconds, 1),
        "cpu": f"{os.cpu_count()} CPU cores, shared: load average {load_before[0]:.1f} at the start, "
        f"{load_after[0]:.1f} at the end",
        "peak_rss_mb": round(peak_rss_mb(children=True)),
        "how_answered": summary,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({**header, **result}, indent=1, default=str))
    print(json.dumps({**header, "metrics": result["metrics"]}, indent=1))
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
