"""Does the environment policy aim? A frozen-agent calibration of task sources, round by round.

Each round an arm hands out ``--tasks`` tasks, the frozen warm-started agent plays ``--group`` attempts at each, and
every attempt is reported back to the arm. Nothing updates the agent, so what changes from round to round is the
arm's aim alone. Arms (the same agent, testbed and seed):

- ``random``: the simulator, never shown the agent's success, never updated (GenEnv's Random baseline);
- ``learnability``: no simulator; the benchmark's ``train`` tasks drawn by ``p (1 - p)`` of the agent's estimated
  success (:class:`~genenv.curriculum.LearnabilityCurriculum`);
- ``genenv``: the simulator shown the agent's success per key and updated by RWR after every round, as the paper has
  it; ``--aim KEY=VALUE`` and ``--rwr KEY=VALUE`` change its levers (:class:`~genenv.curriculum.aim.AimConfig`) and
  its RWR settings (:class:`~genenv.curriculum.RWRConfig`), and the run's name carries each change
  (``genenv-s1-requestsinformative``).

    python experiments/simulator_aim/aim_calibration.py run --testbed reasoning_gym --arm genenv --seed 1
    python experiments/simulator_aim/aim_calibration.py run --testbed reasoning_gym --arm genenv --seed 1 \\
        --aim requests=informative reserve=0.5
    python experiments/simulator_aim/aim_calibration.py summary --testbed reasoning_gym \\
        --best genenv-requestsinformative

Per round (``results/simulator_aim/<testbed>/rounds/<name>.jsonl``, one line a round): every task's key, success
and whether its attempts disagreed, the informative share (tasks whose G attempts disagree, per task played), the mean
``|p_hat - alpha|``, the share of the simulator's outputs that were valid tasks, the distinct tasks, seconds and
core-seconds. The arm's state after each round (success statistics, hand-outs, levers, RWR adapter and optimizer)
is kept under ``$GENENV_STATE_DIR/simulator_aim/<testbed>/<name>/round-<r>``: ``run`` continues from the last
finished round (copy the folder to continue on another machine).

Testbeds (``TESTBEDS``): ``reasoning_gym`` (SmolLM2 agent and simulator, 15 family-level keys, worked answers) and
``bfcl`` (Qwen2.5-Coder-0.5B agent and simulator, BFCL's five single-call shapes as keys, scored by the official AST
checker; the agent warm-started on real-user queries, ``live_simple`` and ``live_multiple``, outside the pool of the
Learnability arm).

The agent plays on CTranslate2 (float32), which cannot seed its sampling: rounds are not reproducible attempt for
attempt, only in distribution. ``summary`` reads the rounds of ``--rounds`` (by default 3 and 4, counted from 0) and
writes ``summary.json`` and the figures beside the rounds, judged by the criteria in that folder's README.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "simulator_aim"
ALPHA, BETA, BAND_K = 0.5, 10.0, 0.4
ARMS = ("random", "learnability", "genenv")
#: bootstrap draws of each arm's interval (items resampled within seeds)
DRAWS = 20_000
#: the goal: GenEnv's informative share at least Learnability's and at least this many times Random's
RATIO = 1.5


@dataclass(frozen=True)
class Testbed:
    """A benchmark, its frozen agent and the simulator that writes for it."""

    bench: str
    adapter_options: dict[str, Any]
    pool_split: str
    agent_model: str
    answer_format: str
    warm_start: int
    agent_seed: int
    simulator_model: str
    simulator_max_new_tokens: int
    max_new_tokens: int
    temperature: float


TESTBEDS = {
    "reasoning_gym": Testbed(
        bench="reasoning_gym",
        adapter_options={
            "families": ["basic_arithmetic@0-4", "chain_sum@0-4", "products@0-4"],
            "answer_format": "worked",
            "requests": "levels",
            "train_per_level": 64,
        },
        pool_split="train",
        agent_model="smollm2",
        answer_format="worked",
        warm_start=128,
        agent_seed=0,
        simulator_model="smollm2",
        simulator_max_new_tokens=64,
        max_new_tokens=128,
        temperature=1.0,
    ),
    "bfcl": Testbed(
        bench="bfcl",
        adapter_options={},  # the simulator writes the five single-call shapes of BFCL's generated tasks
        pool_split="simple_python+multiple+parallel+parallel_multiple+irrelevance",
        agent_model="qwen05",
        answer_format="worked",  # reasoning-gym's setting, unused here
        warm_start=128,  # traces of live_simple and live_multiple (agent_learning.BENCHES), outside the pool
        agent_seed=0,
        simulator_model="qwen05",
        simulator_max_new_tokens=384,
        max_new_tokens=256,
        temperature=0.7,
    ),
}


def changes(pairs: Sequence[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as settings."""
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.from_dotlist(list(pairs or [])))


def run_name(arm: str, seed: int, aim: dict[str, Any], rwr: dict[str, Any]) -> str:
    """``<arm>-s<seed>``, then each lever change and each RWR change (``-requestsinformative-learning_rate0.001``)."""
    return f"{arm}-s{seed}" + "".join(f"-{k}{v}" for k, v in [*sorted(aim.items()), *sorted(rwr.items())])


def variant(name: str) -> str:
    """A run's name without its seed: the arm and its changes (``genenv-requestsinformative``)."""
    arm, _, rest = name.partition("-s")
    _, _, tail = rest.partition("-")
    return f"{arm}-{tail}" if tail else arm


def counting_simulator_class() -> type:
    """:class:`~genenv.envs.simulator.Simulator` that counts its outputs and the valid tasks among them."""
    from genenv.envs.simulator import Simulator

    class CountingSimulator(Simulator):
        valid = outputs = 0

        def propose(self, adapter: Any, **options: Any) -> list:
            batch = super().propose(adapter, **options)
            self.outputs += len(batch)
            self.valid += sum(p.task is not None for p in batch)
            return batch

    return CountingSimulator


def build_arm(args: argparse.Namespace, testbed: Testbed, adapter: Any) -> Any:
    """The arm's task source: a :class:`~genenv.curriculum.LearnabilityCurriculum` or an
    :class:`~genenv.curriculum.AlphaCurriculum` over the testbed's simulator (seed + 1)."""
    from genenv.curriculum import AimConfig, AlphaCurriculum, AlphaCurriculumConfig, LearnabilityCurriculum, RWRConfig
    from genenv.llm.generation import SamplingConfig
    from genenv.llm.models import load_policy

    aim, rwr = changes(args.aim), changes(args.rwr)
    if (aim or rwr) and args.arm != "genenv":
        raise SystemExit(f"--aim and --rwr change the genenv arm, not {args.arm}")
    if args.arm == "learnability":
        return LearnabilityCurriculum(adapter, testbed.pool_split, seed=args.seed)
    simulator = counting_simulator_class()(
        load_policy(testbed.simulator_model, seed=args.seed + 1),
        batch_size=args.simulator_batch,
        sampling=SamplingConfig(max_new_tokens=testbed.simulator_max_new_tokens, temperature=0.8, top_p=0.95),
        alpha=ALPHA,
        engine="hf",
    )
    config = AlphaCurriculumConfig(
        alpha=ALPHA,
        beta=BETA,
        band_k=BAND_K,
        conditioned=args.arm == "genenv",
        rwr=RWRConfig(**{**rwr, "seed": args.seed}) if args.arm == "genenv" else None,
        aim=AimConfig(**aim),
        seed=args.seed,
    )
    return AlphaCurriculum(adapter, simulator, config)


def frozen_agent(testbed: Testbed) -> Any:
    """The testbed's warm-started agent (``experiments/agent_learning``'s warm start, kept in the run state) on a
    CTranslate2 float32 engine; returns (policy, engine)."""
    import agent_learning  # experiments/agent_learning/ is on sys.path (main)

    from genenv.llm.engines.ctranslate2 import CTranslate2Engine

    build = argparse.Namespace(
        seed=testbed.agent_seed,
        model=testbed.agent_model,
        bench=testbed.bench,
        answer_format=testbed.answer_format,
        warm_start=testbed.warm_start,
        held_out_per_level=16,
        families=None,
        eval="mean4",
    )
    _, policy, trainer, _ = agent_learning.build(build, agent_learning.settings_of(build, {}))
    policy = replace(policy, model=trainer.model)  # the warm start's LoRA adapter, merged by the conversion
    return policy, CTranslate2Engine(policy, compute_type="float32")


def play(adapter: Any, policy: Any, engine: Any, tasks: list, args: argparse.Namespace, testbed: Testbed) -> list:
    """The frozen agent's ``--group`` attempts at each task: per task its rewards."""
    import agent_learning

    from genenv.llm.generation import SamplingConfig

    sampling = SamplingConfig(testbed.max_new_tokens, testbed.temperature)
    batches = agent_learning.play_groups(
        adapter, policy, tasks, sampling, group=args.group, seed=0, chunk=args.chunk, engine=engine
    )
    rewards = [float(r >= 1.0) for batch in batches for r in batch.rewards]
    return [rewards[i * args.group : (i + 1) * args.group] for i in range(len(tasks))]


def round_record(adapter: Any, tasks: list, groups: list[list[float]], outputs: tuple[int, int]) -> dict[str, Any]:
    """What a round shows (``outputs``: the simulator's valid and total outputs in the round; (0, 0) without one)."""
    from genenv.curriculum.aim import informative

    p = [statistics.fmean(g) for g in groups]
    valid, total = outputs
    return {
        "tasks": len(tasks),
        "keys": [adapter.family(t) for t in tasks],
        "task_ids": [t.task_id for t in tasks],
        "p_per_task": p,
        "informative_per_task": [informative(g) for g in groups],
        "informative_share": statistics.fmean(informative(g) for g in groups),
        "mean_distance": statistics.fmean(abs(x - ALPHA) for x in p),
        "success": statistics.fmean(p),
        "distinct_tasks": len({t.task_id for t in tasks}),
        "valid_outputs": valid,
        "outputs": total,
        "valid_share": valid / total if total else None,
    }


def finished_rounds(log: Path, settings: dict[str, Any]) -> list[dict[str, Any]]:
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
    from genenv.benchmarks.base import get_benchmark
    from genenv.machine import load_average, peak_rss_mb
    from genenv.run_archive import state_dir

    testbed = TESTBEDS[args.testbed]
    name = run_name(args.arm, args.seed, changes(args.aim), changes(args.rwr))
    log = RESULTS / args.testbed / "rounds" / f"{name}.jsonl"
    state = state_dir() / "simulator_aim" / args.testbed / name
    settings = {"tasks": args.tasks, "group": args.group, "simulator_batch": args.simulator_batch}
    done = finished_rounds(log, settings)
    adapter = get_benchmark(testbed.bench, **testbed.adapter_options)
    arm = build_arm(args, testbed, adapter)
    if done:
        last = state / f"round-{len(done) - 1}"
        if not last.exists():
            raise SystemExit(f"{log} has {len(done)} rounds but {last} is missing: copy the state folder or start over")
        arm.load(last)
    if len(done) >= args.rounds:
        print(f"{name}: {len(done)} rounds already", flush=True)
        return
    policy, engine = frozen_agent(testbed)
    for round_ in range(len(done), args.rounds):
        start, cpu = time.perf_counter(), time.process_time()
        counted = counts(arm)
        tasks = arm.next_tasks(args.tasks)
        written = time.perf_counter() - start
        groups = play(adapter, policy, engine, tasks, args, testbed)
        metrics = arm.report([t.task_id for t, g in zip(tasks, groups) for _ in g], [r for g in groups for r in g])
        outputs = tuple(now - before for now, before in zip(counts(arm), counted, strict=True))
        record = {
            "arm": args.arm,
            "variant": variant(name),
            "seed": args.seed,
            "aim": changes(args.aim),
            "rwr": changes(args.rwr),
            "round": round_,
            **settings,
            **round_record(adapter, tasks, groups, outputs),
            "simulator": metrics.get("simulator"),
            "seconds": time.perf_counter() - start,
            "writing_seconds": written,
            "cpu_seconds": time.process_time() - cpu,
            "peak_rss_mb": peak_rss_mb(),
            "load_average": load_average(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        }
        arm.save(state / f"round-{round_}")
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a") as out:
            out.write(json.dumps(record) + "\n")
        shown = ("round", "informative_share", "mean_distance", "success", "valid_share", "seconds")
        print(json.dumps({k: record[k] for k in shown}), flush=True)


def counts(arm: Any) -> tuple[int, int]:
    """The valid and total outputs the arm's simulator has written so far ((0, 0) without one)."""
    simulator = getattr(arm, "simulator", None)
    return (simulator.valid, simulator.outputs) if simulator is not None else (0, 0)


def read_rounds(testbed: str) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """Every finished round of ``testbed``: variant -> seed -> its rounds in order."""
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for path in sorted((RESULTS / testbed / "rounds").glob("*.jsonl")):
        records = [json.loads(line) for line in path.read_text().splitlines()]
        if records:
            runs.setdefault(records[0]["variant"], {})[records[0]["seed"]] = records
    return runs


def per_seed(runs: dict[int, list[dict[str, Any]]], rounds: Sequence[int], field: str) -> dict[int, list[float]]:
    """Per seed, ``field`` of every task played in ``rounds`` (a seed missing one of them is left out)."""
    out = {}
    for seed, records in runs.items():
        chosen = [r for r in records if r["round"] in rounds]
        if len(chosen) == len(rounds):
            out[seed] = [float(x) for r in chosen for x in r[field]]
    return out


def arm_summary(runs: dict[int, list[dict[str, Any]]], rounds: Sequence[int], seeds: list[int]) -> dict[str, Any]:
    """An arm's informative share over ``rounds`` (the mean of its seeds' shares) with its 95% bootstrap interval
    (tasks resampled within seeds), the secondary measures, and the CPU minutes a round took (every round)."""
    from genenv.significance import percentile_interval, stratified_means

    shares = per_seed(runs, rounds, "informative_per_task")
    success = per_seed(runs, rounds, "p_per_task")
    strata = [shares[s] for s in seeds]
    interval = percentile_interval(stratified_means(strata, DRAWS, seed=0))
    chosen = [r for s in seeds for r in runs[s] if r["round"] in rounds]
    valid = [r["valid_share"] for r in chosen if r["valid_share"] is not None]
    return {
        "informative_share": statistics.fmean(statistics.fmean(x) for x in strata),
        "low": interval["low"],
        "high": interval["high"],
        "low_mc_error": interval["low_mc_error"],
        "high_mc_error": interval["high_mc_error"],
        "per_seed": {str(s): statistics.fmean(shares[s]) for s in seeds},
        "mean_distance": statistics.fmean(statistics.fmean(abs(p - ALPHA) for p in success[s]) for s in seeds),
        "success": statistics.fmean(statistics.fmean(success[s]) for s in seeds),
        "valid_share": statistics.fmean(valid) if valid else None,
        "distinct_tasks_per_task_played": statistics.fmean(
            len({i for r in runs[s] if r["round"] in rounds for i in r["task_ids"]})
            / sum(r["tasks"] for r in runs[s] if r["round"] in rounds)
            for s in seeds
        ),
        "core_minutes_per_round": statistics.fmean(r["cpu_seconds"] / 60 for s in seeds for r in runs[s]),
        "per_round": {
            str(r): statistics.fmean(
                statistics.fmean(x["informative_per_task"]) for s in seeds for x in runs[s] if x["round"] == r
            )
            for r in sorted({x["round"] for s in seeds for x in runs[s]})
        },
    }


def difference(a: dict[str, Any], b: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    """``a``'s informative share minus ``b``'s, seed by seed: the mean, its 95% t-interval over seeds (``low``,
    ``high``) and the seed-level tests."""
    from genenv.significance import seed_level

    values = [a["per_seed"][str(s)] - b["per_seed"][str(s)] for s in seeds]
    tests = seed_level(values)
    low, high = tests["t_interval"]
    return {"difference": statistics.fmean(values), "low": low, "high": high, "per_seed": values, "seed_level": tests}


def aim_verdict(genenv: float, learnability: float, random: float, versus_random: dict[str, Any]) -> str:
    """The verdict of the criteria in ``results/simulator_aim/<testbed>/README.md``, by the numbers alone: GenEnv's
    and the other arms' informative shares, and GenEnv minus Random's seed-level interval."""
    low, high = versus_random["low"], versus_random["high"]
    if high < 0:
        return "GenEnv aims worse than Random: the seed-level interval of GenEnv minus Random lies below 0"
    if low <= 0:
        return "no aim shown: the seed-level interval of GenEnv minus Random contains 0"
    short = []
    if genenv < learnability:
        short.append(f"below Learnability's share ({genenv:.3f} < {learnability:.3f})")
    if genenv < RATIO * random:
        short.append(f"under {RATIO}x Random's share ({genenv:.3f} < {RATIO * random:.3f})")
    if short:
        return "GenEnv aims above Random, short of the goal: " + " and ".join(short)
    return f"the goal is met: GenEnv's share is at least Learnability's and at least {RATIO}x Random's, above Random"


def summary(args: argparse.Namespace) -> None:
    """``summary.json`` and the figures of ``--testbed``: the arms Random, Learnability, GenEnv as the paper has it
    (``genenv``) and ``--best``, over ``--rounds``, on the seeds every arm has."""
    runs = read_rounds(args.testbed)
    arms = {"random": "random", "learnability": "learnability", "genenv_rwr": "genenv", "genenv_best": args.best}
    if missing := [v for v in arms.values() if v not in runs]:
        raise SystemExit(f"{args.testbed} has no rounds of {', '.join(missing)} (it has {', '.join(sorted(runs))})")
    complete = [set(per_seed(runs[v], args.rounds, "informative_per_task")) for v in arms.values()]
    seeds = sorted(set.intersection(*complete) - set(args.exclude_seeds))
    if len(seeds) < 2:
        raise SystemExit(f"the arms share {len(seeds)} seeds with rounds {args.rounds}; a summary needs at least 2")
    table = {arm: arm_summary(runs[v], args.rounds, seeds) | {"variant": v} for arm, v in arms.items()}
    best, learn, rand = (table[k]["informative_share"] for k in ("genenv_best", "learnability", "random"))
    versus = difference(table["genenv_best"], table["random"], seeds)
    paper = difference(table["genenv_rwr"], table["random"], seeds)
    result = {
        "testbed": args.testbed,
        "rounds": list(args.rounds),
        "seeds": seeds,
        "draws": DRAWS,
        "arms": table,
        "genenv_minus_random": versus,
        "genenv_minus_learnability": difference(table["genenv_best"], table["learnability"], seeds),
        "genenv_rwr_minus_random": paper,
        "verdict": aim_verdict(best, learn, rand, versus),
        "verdict_genenv_rwr": aim_verdict(table["genenv_rwr"]["informative_share"], learn, rand, paper),
    }
    folder = RESULTS / args.testbed
    (folder / "summary.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(runs, arms, seeds, folder)
    print(json.dumps({k: result[k] for k in ("seeds", "verdict", "verdict_genenv_rwr")}, indent=1))


def screening(args: argparse.Namespace) -> None:
    """``screening.json`` of ``--testbed``: every variant's informative share over ``--rounds`` on the screening
    ``--seed`` with its 95% bootstrap interval over tasks, each lever's effect (a ``genenv`` variant minus ``genenv``,
    tasks resampled within each), and the variant the README's rule picks (the highest share; on a tie, fewer
    changes)."""
    from genenv.significance import percentile_interval, stratified_means

    runs = read_rounds(args.testbed)
    shares = {v: per_seed(seeds, args.rounds, "informative_per_task").get(args.seed) for v, seeds in runs.items()}
    shares = {v: x for v, x in shares.items() if x}
    table = {}
    for v, values in sorted(shares.items()):
        interval = percentile_interval(stratified_means([values], DRAWS, seed=0))
        table[v] = {"informative_share": statistics.fmean(values), "low": interval["low"], "high": interval["high"]}
        if v.startswith("genenv-") and "genenv" in shares:
            effect = percentile_interval(
                stratified_means([values], DRAWS, seed=1) - stratified_means([shares["genenv"]], DRAWS, seed=2)
            )
            difference = statistics.fmean(values) - statistics.fmean(shares["genenv"])
            table[v]["minus_genenv"] = {"difference": difference, "low": effect["low"], "high": effect["high"]}
    candidates = [v for v in table if v == "genenv" or v.startswith("genenv-")]
    best = max(candidates, key=lambda v: (table[v]["informative_share"], -v.count("-"))) if candidates else None
    result = {"testbed": args.testbed, "seed": args.seed, "rounds": list(args.rounds), "variants": table, "best": best}
    (RESULTS / args.testbed / "screening.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


def plot(
    runs: dict[str, dict[int, list[dict[str, Any]]]], arms: dict[str, str], seeds: list[int], folder: Path
) -> None:
    """``informative_share.png`` (per round and arm, the mean over seeds) and ``written_success.png`` (per round and
    arm, the histogram of the tasks' success)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for arm, v in arms.items():
        rounds = sorted({r["round"] for s in seeds for r in runs[v][s]})
        means = [statistics.fmean(r["informative_share"] for s in seeds for r in runs[v][s] if r["round"] == x)
                 for x in rounds]  # fmt: skip
        ax.plot(rounds, means, marker="o", label=f"{arm} ({v})")
    ax.set(xlabel="round", ylabel="informative share (tasks whose attempts disagree)", ylim=(0, 1), xticks=rounds)
    ax.set_title(f"Informative share per round, mean of seeds {', '.join(map(str, seeds))}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(folder / "informative_share.png", dpi=120)
    plt.close(fig)
    rounds = sorted({r["round"] for v in arms.values() for s in seeds for r in runs[v][s]})
    fig, axes = plt.subplots(len(arms), len(rounds), figsize=(2.2 * len(rounds), 1.8 * len(arms)), squeeze=False)
    bins = np.linspace(0, 1, 10)
    for row, (arm, v) in enumerate(arms.items()):
        for col, x in enumerate(rounds):
            values = [p for s in seeds for r in runs[v][s] if r["round"] == x for p in r["p_per_task"]]
            axes[row][col].hist(values, bins=bins, color="tab:blue")
            axes[row][col].axvline(ALPHA, color="tab:red", lw=0.8)
            axes[row][col].set_title(f"{arm}, round {x}", fontsize=7)
            axes[row][col].tick_params(labelsize=6)
    fig.suptitle("Success of the tasks handed out (the agent's G attempts), per round and arm", fontsize=8)
    fig.tight_layout()
    fig.savefig(folder / "written_success.png", dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    sys.path.insert(0, str(ROOT / "experiments" / "agent_learning"))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run", help="run (or continue) one arm and seed")
    one.add_argument("--testbed", choices=sorted(TESTBEDS), required=True)
    one.add_argument("--arm", choices=ARMS, required=True)
    one.add_argument("--seed", type=int, required=True)
    one.add_argument("--rounds", type=int, default=5)
    one.add_argument("--tasks", type=int, default=64, help="tasks handed out and played a round")
    one.add_argument("--group", type=int, default=8, help="the agent's attempts at each task (G)")
    one.add_argument("--chunk", type=int, default=16, help="tasks played in one batch")
    one.add_argument("--simulator-batch", type=int, default=8)
    one.add_argument("--aim", nargs="+", metavar="KEY=VALUE", help="the genenv arm's levers (curriculum.aim)")
    one.add_argument("--rwr", nargs="+", metavar="KEY=VALUE", help="the genenv arm's RWR settings")
    table = sub.add_parser("summary", help="summary.json and the figures of a testbed")
    table.add_argument("--testbed", choices=sorted(TESTBEDS), required=True)
    table.add_argument("--best", required=True, help="the variant judged as GenEnv at its best (genenv-...)")
    table.add_argument("--rounds", type=int, nargs="+", default=[3, 4], help="the rounds read (from 0)")
    table.add_argument("--exclude-seeds", type=int, nargs="*", default=[], help="seeds left out (screening seeds)")
    screen = sub.add_parser("screening", help="screening.json: the variants of the screening seed")
    screen.add_argument("--testbed", choices=sorted(TESTBEDS), required=True)
    screen.add_argument("--seed", type=int, default=0)
    screen.add_argument("--rounds", type=int, nargs="+", default=[3, 4])
    args = parser.parse_args(argv)
    {"run": run, "summary": summary, "screening": screening}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
