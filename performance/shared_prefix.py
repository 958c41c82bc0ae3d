"""The held-out scoring's shared prompt prefix run once (CTranslate2's static prompt) against every row's whole prompt.

    OMP_NUM_THREADS=1 GENENV_DATA_DIR=../shared/data python performance/shared_prefix.py RUN [--out FILE]

``RUN`` is a finished run of README command 1. Every stage of it (as ``performance/heldout_engines.py`` loads them) is
scored as the job scores it, on CTranslate2 float32, which passes each batch's shared prefix as a static prompt; each
of its ``generate_batch`` calls is then replayed with the whole prompts, in the same process. Recorded per stage: the
score, whether it reproduces the run's record, the rows whose tokens are the same both ways, and the CPU seconds of
the calls each way (this process's CPU time, which a busy machine inflates less than wall time).

Writes ``results/learning_curves/main_job/shared_prefix.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from heldout_engines import agent_model, main_job_setup, stages

from genenv.agents.agent import Agent
from genenv.coevolution import VALIDATION_BATCH
from genenv.evaluate import evaluate
from genenv.llm.engines import build_engine
from genenv.llm.generation import SamplingConfig
from genenv.machine import uptime

OUT = Path(__file__).resolve().parents[1] / "results" / "learning_curves" / "main_job" / "shared_prefix.json"


class RecordingGenerator:
    """A ``ctranslate2.Generator`` that keeps each call's prompts, options, tokens and CPU seconds."""

    def __init__(self, generator: Any) -> None:
        self.generator = generator
        self.calls: list[tuple[list[list[str]], dict[str, Any], list[list[int]], float]] = []

    def generate_batch(self, tokens: list[list[str]], **options: Any) -> Any:
        began = time.process_time()
        results = self.generator.generate_batch(tokens, **options)
        seconds = time.process_time() - began
        self.calls.append((tokens, options, [list(r.sequences_ids[0]) for r in results], seconds))
        return results


def replay_whole(recording: RecordingGenerator) -> tuple[int, int, float, float]:
    """Each recorded call again with every row's whole prompt: rows with the same tokens, rows, CPU seconds of the
    recorded calls and of the replays."""
    same = rows = 0
    shared_cpu = whole_cpu = 0.0
    for tokens, options, produced, seconds in recording.calls:
        options = dict(options)
        prefix = options.pop("static_prompt", None) or []
        options.pop("cache_static_prompt", None)
        began = time.process_time()
        results = recording.generator.generate_batch([prefix + row for row in tokens], **options)
        whole_cpu += time.process_time() - began
        shared_cpu += seconds
        same += sum(list(r.sequences_ids[0]) == p for r, p in zip(results, produced))
        rows += len(produced)
    return same, rows, shared_cpu, whole_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished run folder of README command 1")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    command = "OMP_NUM_THREADS=1 python performance/shared_prefix.py RUN"
    config, adapter, policy, tasks, recorded, result = main_job_setup(args.run, command)
    for stage, folder in stages(args.run):
        stage_policy = replace(policy, model=agent_model(policy.model, folder))
        engine = build_engine("ctranslate2", stage_policy, compute_type="float32")
        recording = engine._generator = RecordingGenerator(engine._generator)
        agent = Agent(stage_policy, SamplingConfig(config.agent.max_new_tokens, 0.0), few_shot=config.agent.few_shot,
                      engine=engine)  # fmt: skip
        summary, episodes = evaluate(adapter.reporting_adapter(), agent, tasks,
                                     batch_size=VALIDATION_BATCH["ctranslate2"], max_turns=config.agent.max_turns,
                                     seed=config.seed, progress=False)  # fmt: skip
        same, rows, shared_cpu, whole_cpu = replay_whole(recording)
        scores = [float(e.info.get("score", e.reward)) for e in episodes]
        row = {
            "score": summary["metrics"]["score"],
            "equals_run_record": scores == recorded.get(stage),
            "calls": len(recording.calls),
            "rows_with_the_same_tokens": f"{same}/{rows}",
            "cpu_seconds_shared_prefix": round(shared_cpu, 1),
            "cpu_seconds_whole_prompts": round(whole_cpu, 1),
        }
        result["stages"][stage] = row
        print(stage, json.dumps(row), flush=True)
        engine.unload()
        if folder is not None:
            stage_policy.model.unload()
    result["uptime_after"] = uptime()
    shared = sum(row["cpu_seconds_shared_prefix"] for row in result["stages"].values())
    whole = sum(row["cpu_seconds_whole_prompts"] for row in result["stages"].values())
    result["cpu_seconds_ratio_shared_to_whole"] = round(shared / whole, 3)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"shared prefix / whole prompts, CPU seconds: {shared:.1f} / {whole:.1f}; written to {args.out}")


if __name__ == "__main__":
    main()
