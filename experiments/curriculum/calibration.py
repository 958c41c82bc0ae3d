"""Simulator calibration with the agent frozen: can the simulator learn to write tasks at the agent's frontier?

The simulator writes ``--tasks`` tasks a round (:class:`~genenv.curriculum.alpha.AlphaCurriculum`), the frozen
warm-started agent plays G attempts of each, and their success is reported back: it updates the success shown to a
conditioned simulator and, for ``genenv``, rewards each output with ``R_env`` and trains the simulator by RWR on the
outputs inside the band. Arms (the same simulator and agent, the same seed):

- ``random``: never shown the agent's success, never updated (GenEnv's Random baseline);
- ``conditioned``: shown the agent's success per level, never updated;
- ``genenv``: shown it and updated by RWR after every round.

Per round: the share of written tasks whose success lies in [0.25, 0.75], the mean ``|p - alpha|`` and the level mix.

    python experiments/curriculum/calibration.py run --arm genenv --seed 0 --rounds 5 --tasks 64
    python experiments/curriculum/calibration.py run --arm genenv --seed 0 --rwr learning_rate=1e-3   # a variant
    python experiments/curriculum/calibration.py report

``--rwr KEY=VALUE`` changes a field of the simulator's :class:`~genenv.curriculum.rwr.RWRConfig` (``genenv`` only); the
run's files then carry the change in their name (``genenv-s0-learning_rate0.001``), beside the library's settings.

The testbed is ``reasoning_gym_worked`` (``results/reasoning_gym_worked/README.md``): SmolLM2-135M as agent (the
warm start of ``experiments/agent_learning/agent_learning.py``, seed ``--seed``) and as simulator, reasoning-gym
``requests=families``
(the simulator chooses the level). Each finished round appends a line to
``results/reasoning_gym_worked/calibration/<arm>-s<seed>.jsonl`` and leaves the curriculum's state (success
statistics, RWR adapter and optimizer, sampling state) in ``$GENENV_STATE_DIR/curriculum_calibration/<arm>-s<seed>/``;
``run`` continues from the last finished round (copy that folder to continue on another machine).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "curriculum" / "reasoning_gym_worked" / "calibration"
FAMILIES = ["basic_arithmetic@0-4", "chain_sum@0-4", "products@0-4"]
ARMS = ("random", "conditioned", "genenv")
ALPHA, BETA, BAND_K = 0.5, 10.0, 0.4
GRADED = (0.25, 0.75)


def state_root() -> Path:
    from genenv.run_archive import state_dir

    return state_dir() / "curriculum_calibration"


def curriculum_for(args: argparse.Namespace, adapter: Any):
    """The arm's curriculum: the simulator (SmolLM2, seed + 1) conditioned and updated as the arm says."""
    from genenv.curriculum import AlphaCurriculum, AlphaCurriculumConfig, RWRConfig
    from genenv.envs.simulator import Simulator
    from genenv.llm.generation import SamplingConfig
    from genenv.llm.models import load_policy

    simulator = Simulator(
        load_policy(args.simulator_model, seed=args.seed + 1),
        batch_size=args.simulator_batch,
        sampling=SamplingConfig(max_new_tokens=64, temperature=0.8, top_p=0.95),
        alpha=ALPHA,
        engine="hf",
    )
    config = AlphaCurriculumConfig(
        alpha=ALPHA,
        beta=BETA,
        band_k=BAND_K,
        conditioned=args.arm != "random",
        rwr=RWRConfig(**{**rwr_changes(args), "seed": args.seed}) if args.arm == "genenv" else None,
        seed=args.seed,
    )
    return AlphaCurriculum(adapter, simulator, config)


def play(adapter: Any, policy: Any, tasks: list, args: argparse.Namespace, round_: int) -> list[float]:
    """The frozen agent's G attempts at each task as the testbed plays them (rewards in task order, G per task)."""
    from agent_learning import play_groups  # experiments/agent_learning/ is on sys.path (run)

    from genenv.llm.generation import SamplingConfig

    sampling = SamplingConfig(args.max_new_tokens, args.temperature)
    seed = args.seed * 1000 + round_ * 100
    batches = play_groups(adapter, policy, tasks, sampling, group=args.group, seed=seed, chunk=args.chunk)
    return [float(r >= 1.0) for batch in batches for r in batch.rewards]


def round_record(adapter: Any, tasks: list, rewards: list[float], group: int, metrics: dict[str, Any]) -> dict:
    """What a round shows: each task's success, the share in [0.25, 0.75], the distance from alpha, the levels."""
    p = [statistics.fmean(rewards[i * group : (i + 1) * group]) for i in range(len(tasks))]
    return {
        "tasks": len(tasks),
        "p_per_task": p,
        "keys": [adapter.family(t) for t in tasks],
        "share_graded": statistics.fmean(GRADED[0] <= x <= GRADED[1] for x in p),
        "mean_distance": statistics.fmean(abs(x - ALPHA) for x in p),
        "success": statistics.fmean(p),
        "mixed_groups": statistics.fmean(0 < x < 1 for x in p),
        "levels": dict(sorted(Counter(adapter.family(t).rsplit("@", 1)[1] for t in tasks).items())),
        "in_band": metrics["in_band"],
        "r_env": metrics["r_env"],
        "simulator": metrics.get("simulator"),
    }


def rwr_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--rwr KEY=VALUE`` changes to the library's RWR settings."""
    from omegaconf import OmegaConf

    changes = OmegaConf.to_container(OmegaConf.from_dotlist(args.rwr or []))
    if changes and args.arm != "genenv":
        raise SystemExit(f"--rwr changes the RWR update, which only the genenv arm runs (not {args.arm})")
    return changes


def run_name(args: argparse.Namespace) -> str:
    """``<arm>-s<seed>``, followed by each RWR change (``-learning_rate0.001``)."""
    return f"{args.arm}-s{args.seed}" + "".join(f"-{k}{v}" for k, v in sorted(rwr_changes(args).items()))


def finished_rounds(log: Path, settings: dict[str, Any]) -> list[dict]:
    """The rounds ``log`` holds, refused (``SystemExit``) when one was run with other ``settings``."""
    done = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    for record in done:
        differing = {k: (record.get(k), v) for k, v in settings.items() if record.get(k) != v}
        if differing:
            raise SystemExit(
                f"{log} round {record['round']} was run with other settings (recorded, asked): {differing}; "
                "continue with those settings or move the file away"
            )
    return done


def run(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT / "experiments" / "agent_learning"))
    import agent_learning

    from genenv.benchmarks.base import get_benchmark
    from genenv.machine import load_average, peak_rss_mb

    name = run_name(args)
    log, state = RESULTS / f"{name}.jsonl", state_root() / name
    done = finished_rounds(log, {"tasks": args.tasks, "group": args.group, "temperature": args.temperature})
    adapter = get_benchmark(
        "reasoning_gym", families=FAMILIES, answer_format="worked", requests="families", train_per_level=64
    )
    build = argparse.Namespace(
        seed=args.seed, model="smollm2", answer_format="worked", warm_start=128, held_out_per_level=16
    )
    _, agent, _, _ = agent_learning.build(build, dict(agent_learning.AGENT))
    agent.model.eval()
    curriculum = curriculum_for(args, adapter)
    if done:
        last = state / f"round-{len(done) - 1}"
        if not last.exists():
            raise SystemExit(f"{log} has {len(done)} rounds but {last} is missing: copy the state folder or start over")
        curriculum.load(last)
    for round_ in range(len(done), args.rounds):
        start = time.perf_counter()
        tasks = curriculum.next_tasks(args.tasks)
        written = time.perf_counter() - start
        rewards = play(adapter, agent, tasks, args, round_)
        ids = [t.task_id for t in tasks for _ in range(args.group)]
        metrics = curriculum.report(ids, rewards)
        record = {
            "arm": args.arm,
            "seed": args.seed,
            "rwr": rwr_changes(args),
            "round": round_,
            "group": args.group,
            "temperature": args.temperature,
            **round_record(adapter, tasks, rewards, args.group, metrics),
            "seconds": time.perf_counter() - start,
            "writing_seconds": written,
            "peak_rss_mb": peak_rss_mb(),
            "load_average": load_average(),
        }
        curriculum.save(state / f"round-{round_}")
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as out:
            out.write(json.dumps(record) + "\n")
        summary = {k: record[k] for k in ("round", "share_graded", "mean_distance", "success", "levels", "seconds")}
        print(json.dumps(summary), flush=True)


def report(args: argparse.Namespace) -> None:
    rows = ["| arm | seed | round | tasks | success | share in [0.25, 0.75] | mean abs(p - alpha) | levels 0-4 |",
            "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for path in sorted(RESULTS.glob("*.jsonl")):
        for r in map(json.loads, path.read_text().splitlines()):
            levels = " / ".join(str(r["levels"].get(str(level), 0)) for level in range(5))
            arm = " ".join([r["arm"], *(f"{k}={v}" for k, v in r.get("rwr", {}).items())])
            rows.append(
                f"| {arm} | {r['seed']} | {r['round']} | {r['tasks']} | {r['success']:.3f} | "
                f"{r['share_graded']:.3f} | {r['mean_distance']:.3f} | {levels} |"
            )
    text = "\n".join(rows) + "\n"
    if args.output:
        Path(args.output).write_text(text)
    print(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run", help="run (or continue) one arm and seed")
    one.add_argument("--arm", choices=ARMS, required=True)
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--rounds", type=int, default=5)
    one.add_argument("--tasks", type=int, default=64, help="tasks written and played a round")
    one.add_argument("--group", type=int, default=8, help="the agent's attempts at each task (G)")
    one.add_argument("--temperature", type=float, default=1.0, help="the agent's sampling temperature (the gate's)")
    one.add_argument("--max-new-tokens", type=int, default=128)
    one.add_argument("--chunk", type=int, default=10, help="tasks played in one batch")
    one.add_argument("--simulator-model", default="smollm2")
    one.add_argument("--simulator-batch", type=int, default=8)
    one.add_argument("--rwr", nargs="+", metavar="KEY=VALUE", help="changes to the RWR settings (genenv)")
    table = sub.add_parser("report", help="a markdown table of every arm, seed and round")
    table.add_argument("--output")
    args = parser.parse_args(argv)
    {"run": run, "report": report}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
