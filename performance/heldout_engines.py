"""The main job's held-out scoring on each engine: every stage's weights, the same held-out tasks, greedy.

    OMP_NUM_THREADS=2 GENENV_DATA_DIR=../shared/data python performance/heldout_engines.py RUN [--engines ...]

``RUN`` is a finished run of README command 1 (``python -m genenv.train +bench=reasoning_gym run_dir=RUN``). Its
stages: the untrained agent, the agent of ``checkpoints/warm-start`` and of every ``checkpoints/epoch-NNNN`` (LoRA
adapters loaded onto the embedded model, unmerged, as the job scores them). Each stage is scored as the job scores it
(:func:`genenv.evaluate.evaluate` through :class:`~genenv.agents.agent.Agent`, the job's sampling, few-shot and
episode length) by every engine of ``--engines``, one after the other in this process (``uptime`` before and after):
``hf`` (HF ``generate``, 8 tasks a batch, the job's scoring before CTranslate2 took it over), ``ctranslate2-float32``
and ``ctranslate2-int8`` (24 a batch, as the job plays them). Recorded per stage and engine: the score, wall and CPU
seconds (the engine's weight conversion included; CPU seconds of one thread tell what a busy machine's wall time
cannot), and against the first engine the tasks whose answer text differs and whose score
differs; and the task scores the run itself recorded (``metrics.jsonl``), which the same engine must reproduce.

Writes ``results/learning_curves/main_job/heldout_engines.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from genenv.agents.agent import Agent
from genenv.checkpoints import WARM_START, read_metrics
from genenv.coevolution import VALIDATION_BATCH, held_out_tasks
from genenv.evaluate import evaluate
from genenv.learning_curve import held_out_curve
from genenv.llm.engines import build_engine
from genenv.llm.generation import SamplingConfig
from genenv.machine import peak_rss_mb, uptime
from genenv.train import compose_setup

OUT = Path(__file__).resolve().parents[1] / "results" / "learning_curves" / "main_job" / "heldout_engines.json"
ENGINES = ("hf", "ctranslate2-float32", "ctranslate2-int8")


def stages(run: Path) -> list[tuple[str, Path | None]]:
    """The run's stages in order: label and agent checkpoint folder (``None``: the untrained agent)."""
    folders = [("warm start", run / "checkpoints" / WARM_START / "agent")]
    folders += [
        (f"epoch {int(path.parent.name.split('-')[1])}", path)
        for path in sorted((run / "checkpoints").glob("epoch-*/agent"))
    ]
    missing = [str(path) for _, path in folders if not (path / "adapter_model.safetensors").is_file()]
    if missing:
        raise FileNotFoundError(f"{run} is not a finished main-job run: no LoRA adapter in {', '.join(missing)}")
    return [("start", None), *folders]


def agent_model(base: Any, adapter: Path | None) -> Any:
    """The embedded model with the stage's LoRA adapter applied (not merged), or the base model itself."""
    if adapter is None:
        return base
    from peft import PeftModel

    return PeftModel.from_pretrained(base, str(adapter)).eval()


def score(spec: str, policy: Any, config: Any, adapter: Any, tasks: list[Any]) -> dict[str, Any]:
    """One engine's scoring of ``tasks`` with ``policy``'s weights: score, seconds, answers, task scores."""
    name, _, compute_type = spec.partition("-")
    began, cpu = time.perf_counter(), time.process_time()
    engine = build_engine(name, policy, compute_type=compute_type or "float32")
    agent = Agent(policy, SamplingConfig(config.agent.max_new_tokens, 0.0), few_shot=config.agent.few_shot,
                  engine=engine)  # fmt: skip
    summary, episodes = evaluate(adapter, agent, tasks, batch_size=VALIDATION_BATCH[name],
                                 max_turns=config.agent.max_turns, seed=config.seed, progress=False)  # fmt: skip
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    return {
        "score": summary["metrics"]["score"],
        "seconds": round(seconds, 1),
        "cpu_seconds": round(cpu, 1),
        "answers": [[turn.action for turn in e.trajectory.turns] for e in episodes],
        "task_scores": [float(e.info.get("score", e.reward)) for e in episodes],
    }


def main_job_setup(run: Path, command: str) -> tuple[Any, Any, Any, list[Any], dict[str, list[float]], dict[str, Any]]:
    """The main job's config, benchmark adapter, embedded policy and held-out tasks; ``run``'s recorded task scores
    by stage; and the head of a result record (``command``, the run, the threads and the load before)."""
    from genenv.llm.models import load_policy

    config, adapter, _ = compose_setup(["+bench=reasoning_gym"])
    config = config.for_benchmark(adapter)
    policy = load_policy(config.agent_model, seed=config.seed)
    tasks = held_out_tasks(adapter, config.validation.split, config.validation.limit)
    recorded = {point.stage: list(point.task_scores) for point in held_out_curve(read_metrics(run))}
    result: dict[str, Any] = {
        "command": command,
        "run": str(run),
        "tasks": len(tasks),
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "uptime_before": uptime(),
        "stages": {},
    }
    return config, adapter, policy, tasks, recorded, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a finished run folder of README command 1")
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    command = "python performance/heldout_engines.py RUN --engines " + " ".join(args.engines)
    config, adapter, policy, tasks, recorded, result = main_job_setup(args.run, command)
    reporting = adapter.reporting_adapter()
    for stage, folder in stages(args.run):
        stage_policy = replace(policy, model=agent_model(policy.model, folder))
        runs = {spec: score(spec, stage_policy, config, reporting, tasks) for spec in args.engines}
        reference = runs[args.engines[0]]
        row: dict[str, Any] = {}
        for spec, run in runs.items():
            row[spec] = {
                "score": run["score"],
                "seconds": run["seconds"],
                "cpu_seconds": run["cpu_seconds"],
                "answers_differ": [i for i, (a, b) in enumerate(zip(run["answers"], reference["answers"])) if a != b],
                "scores_differ": [
                    i for i, (a, b) in enumerate(zip(run["task_scores"], reference["task_scores"])) if a != b
                ],
                "equals_run_record": run["task_scores"] == recorded.get(stage),
            }
            print(f"{stage:<10} {spec:<20} score {run['score']:.3f} {run['seconds']:6.1f} s; vs {args.engines[0]}: "
                  f"{len(row[spec]['answers_differ'])} answers and {len(row[spec]['scores_differ'])} scores differ; "
                  f"the run's record {'reproduced' if row[spec]['equals_run_record'] else 'NOT reproduced'}",
                  flush=True)  # fmt: skip
        result["stages"][stage] = row
        if folder is not None:
            stage_policy.model.unload()  # the base model without this stage's adapter, for the next stage
    result["uptime_after"] = uptime()
    result["peak_rss_mb"] = round(peak_rss_mb())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
