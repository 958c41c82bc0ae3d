"""Wall time and peak RSS of co-evolution epochs with the default config (embedded SmolLM2).

    GENENV_DATA_DIR=../shared/data python performance/train_epoch.py [--name NAME] [+bench=apibank] [overrides ...]

Composes ``genenv/configs/config.yaml`` exactly as ``python -m genenv.train`` does, runs it in a fresh run
folder, and writes ``results/performance/train_epoch_<bench>.json`` (``train_epoch_<bench>_<NAME>.json`` with
``--name``), with ``uptime`` before and after.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from hydra import compose, initialize_config_dir

from genenv.coevolution import CoEvolutionTrainer
from genenv.config import CONFIG_DIR
from genenv.machine import peak_rss_mb, uptime
from genenv.train import genenv_config

RESULTS = Path(__file__).resolve().parents[1] / "results" / "performance"


def main(overrides: list[str]) -> None:
    name = ""
    if overrides[:1] == ["--name"]:
        name, overrides = f"_{overrides[1]}", overrides[2:]
    overrides = overrides or ["+bench=apibank"]
    load_start = uptime()
    with tempfile.TemporaryDirectory() as run_dir, initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[*overrides, f"run_dir={run_dir}"])
        config = genenv_config(cfg)
        start = time.perf_counter()
        trainer = CoEvolutionTrainer(config)
        setup_seconds = time.perf_counter() - start
        history = trainer.train()
    record = {
        "command": "GENENV_DATA_DIR=../shared/data python performance/train_epoch.py "
        + (f"--name {name[1:]} " if name else "")
        + " ".join(overrides),
        "machine": f"{platform.machine()}, Python {platform.python_version()}, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}",
        "load_start": load_start,
        "load_end": uptime(),
        "setup_seconds": setup_seconds,
        "epochs": [
            {key: m[key] for key in ("epoch", "seconds", "peak_rss_mb", "fresh_tasks", "proposals", "rejects", "p_hat")}
            | {"agent_step_seconds": m["agent"].get("step_time"), "validation": m["validation"].get("score")}
            for m in history
        ],
        "peak_rss_mb": peak_rss_mb(),
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"train_epoch_{config.benchmark}{name}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))
    print(f"written to {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
