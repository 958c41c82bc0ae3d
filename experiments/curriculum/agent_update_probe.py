"""Does a change to the agent's update help? A few epochs from a curriculum-experiment seed's shared warm start.

    # a probe: the testbed's settings, 2 epochs, plus overrides, from seed 0's shared warm start
    python experiments/curriculum/agent_update_probe.py run NAME --testbed reasoning_gym --curriculum random \\
        --epochs 2 --set agent.skip_zero_advantage_steps=true
    # its held-out scores against a run of the testbed (the same warm start, the testbed's update)
    python experiments/curriculum/agent_update_probe.py report NAME [NAME ...] --testbed reasoning_gym --output FILE.md

A probe is ``python -m genenv.train`` with the testbed's overrides (``driver.TESTBEDS``),
``coevolution.epochs=EPOCHS`` and ``--set`` on top, in ``$GENENV_STATE_DIR/agent_update_probe/<NAME>``, started from
the copy of the seed's warm-start checkpoint that the experiment's runs share
(``$GENENV_STATE_DIR/curriculum_experiment/runs/<testbed>/warm-start-s<S>``). So it begins from the very agent the
experiment's runs of that seed begin from, and it meets the same first tasks (the seeds are the same): its held-out
score at each stage is paired, item by item, with
the experiment's run of the same curriculum and seed. ``report`` gives per stage the held-out score, the items
that went up and down against the warm start, the paired difference from the experiment's run (with its
standard error over items), and how far the agent's LoRA update ``B @ A`` moved from the warm start's (the
Frobenius norm of the change over that of the warm start's own update, from the epoch checkpoints); then, for a probe
of the curriculum (``--set simulator.examples=in_band``), the fresh tasks inside the band per epoch beside the
experiment's runs of the probe's curriculum and of Random with the same seed.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import torch
from omegaconf import OmegaConf
from safetensors.torch import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analysis import load_experiment  # noqa: E402
from driver import (  # noqa: E402
    RESULTS,
    STATE,
    TESTBEDS,
    command,
    run_name,
    seed_overrides,
    shared_warm_start,
    warm_start_settings,
)

from genenv.checkpoints import CHECKPOINTS, WARM_START, read_metrics  # noqa: E402
from genenv.run_archive import state_dir  # noqa: E402

PROBES = state_dir() / "agent_update_probe"
EXPERIMENT_RUNS = STATE / "runs"


def start(args: argparse.Namespace) -> int:
    """Run (or continue) the probe ``args.name``; returns the trainer's exit status."""
    run_dir = PROBES / args.name
    warm_start = shared_warm_start(EXPERIMENT_RUNS / args.testbed, args.seed) / CHECKPOINTS / WARM_START
    if not (run_dir / CHECKPOINTS).exists():
        if not (warm_start / "state.json").exists():
            raise SystemExit(f"{warm_start} does not exist: run the experiment's seed {args.seed} first")
        shutil.copytree(warm_start, run_dir / CHECKPOINTS / WARM_START)
    overrides = [*TESTBEDS[args.testbed], f"coevolution.epochs={args.epochs}", *args.overrides]
    cmd = command(overrides, args.curriculum, args.seed, run_dir)
    print(" ".join(cmd), flush=True)
    return subprocess.call(cmd)


def lora_update(folder: Path) -> dict[str, torch.Tensor]:
    """The weight change ``B @ A`` of every LoRA module of the agent checkpointed in ``folder``."""
    weights = load_file(str(folder / "agent" / "adapter_model.safetensors"))
    return {k: weights[k.replace("lora_A", "lora_B")].float() @ w.float() for k, w in weights.items() if "lora_A" in k}


def moved(folder: Path, start_update: dict[str, torch.Tensor]) -> float:
    """How far ``folder``'s LoRA update is from ``start_update``, relative to the size of ``start_update``."""
    update = lora_update(folder)
    change = sum(float(((update[k] - w) ** 2).sum()) for k, w in start_update.items()) ** 0.5
    return change / sum(float((w**2).sum()) for w in start_update.values()) ** 0.5


def stages(records: list[dict]) -> dict[int, dict]:
    """Epoch -> held-out record, for every scored epoch of a run's metrics."""
    return {int(r["epoch"]): r["validation"] for r in records if (r.get("validation") or {}).get("task_scores")}


def experiment_records(testbed: str, curriculum: str, seed: int) -> list[dict]:
    """The metrics of the experiment's run of ``curriculum`` and ``seed``: its folder, else the committed copy."""
    run_dir = EXPERIMENT_RUNS / testbed / run_name(curriculum, seed)
    if (run_dir / "metrics.jsonl").exists():
        return read_metrics(run_dir)
    return [m for run in load_experiment([RESULTS / testbed / "runs" / f"{run_name(curriculum, seed)}.jsonl"])
            for m in run.metrics]  # fmt: skip


def row(label: str, note: str, epoch: int, scored: dict, warm: list[float], moved_by: str, paired: str) -> str:
    scores = scored["task_scores"]
    up, down = sum(a > b for a, b in zip(scores, warm)), sum(a < b for a, b in zip(scores, warm))
    return f"| {label} | {note} | {epoch} | {scored['score']:.3f} | {up} / {down} | {paired} | {moved_by} |"


def drift(run_dir: Path, epoch: int, start_update: dict[str, torch.Tensor]) -> str:
    checkpoint = run_dir / CHECKPOINTS / f"epoch-{epoch:04d}"
    return f"{moved(checkpoint, start_update):.2f}" if checkpoint.exists() else "-"


def report(args: argparse.Namespace) -> str:
    lines = [
        f"Written by `python experiments/curriculum/agent_update_probe.py report {' '.join(args.names)} "
        f"--testbed {args.testbed}`.",
        "",
        "| run | settings | epoch | held-out | items up / down against the warm start | minus the experiment's run "
        "(paired s.e.) | LoRA update moved (relative to the warm start's) |",
        "|---|---|---|---|---|---|---|",
    ]
    probes = {name: read_metrics(PROBES / name) for name in args.names}
    for name, records in probes.items():
        run_dir = PROBES / name
        curriculum, seed = records[0]["curriculum"], int(records[0]["seed"])
        warm = records[0]["validation_warm_start"]
        start_update = lora_update(run_dir / CHECKPOINTS / WARM_START)
        probe = stages(records)
        reference = stages(experiment_records(args.testbed, curriculum, seed))
        reference_dir = EXPERIMENT_RUNS / args.testbed / run_name(curriculum, seed)
        shared = {*TESTBEDS[args.testbed], *seed_overrides(seed)}
        overrides = warm_start_settings(list(OmegaConf.load(run_dir / ".hydra" / "overrides.yaml")))
        note = ", ".join(o for o in overrides if o not in shared)  # what the probe set on top of the testbed
        lines.append(f"| warm start (seed {seed}) | | - | {warm['score']:.3f} | | | 0 |")
        for epoch in sorted(e for e in reference if e <= max(probe)):
            moved_by = drift(reference_dir, epoch, start_update)
            lines.append(row(run_name(curriculum, seed), "the testbed's", epoch, reference[epoch], warm["task_scores"],
                             moved_by, ""))  # fmt: skip
        for epoch, scored in sorted(probe.items()):
            paired = ""
            if epoch in reference:
                d = [a - b for a, b in zip(scored["task_scores"], reference[epoch]["task_scores"])]
                paired = f"{statistics.mean(d):+.3f} ({statistics.stdev(d) / len(d) ** 0.5:.3f})"
            lines.append(
                row(name, note, epoch, scored, warm["task_scores"], drift(run_dir, epoch, start_update), paired)
            )
    return "\n".join(lines + in_band_lines(args.testbed, probes)) + "\n"


def in_band_lines(testbed: str, probes: dict[str, list[dict]]) -> list[str]:
    """Fresh tasks inside the band per epoch: each probe (name -> metrics), the experiment's run of its curriculum and
    seed, and the experiment's Random run of that seed (what a curriculum must beat), over the epochs the probe ran."""
    runs: dict[str, list[dict]] = {}
    for name, records in probes.items():
        runs[name] = records
        seed = int(records[0]["seed"])
        for curriculum in (records[0]["curriculum"], "random"):
            label = run_name(curriculum, seed)
            if label not in runs and has_run(testbed, label):
                runs[label] = experiment_records(testbed, curriculum, seed)[: len(records)]
    lines = ["", "Fresh tasks inside the band, per epoch and over the epochs after the first:", "",
             "| run | per epoch | after epoch 0 |", "|---|---|---|"]  # fmt: skip
    for label, metrics in runs.items():
        inside, played = (sum(m[key] for m in metrics[1:]) for key in ("in_band", "fresh_tasks"))
        share = f"{inside}/{played} = {inside / played:.3f}" if played else "-"
        per_epoch = ", ".join(f"{m['in_band']}/{m['fresh_tasks']}" for m in metrics)
        lines.append(f"| {label} | {per_epoch} | {share} |")
    return lines


def has_run(testbed: str, label: str) -> bool:
    """Whether the experiment's run ``label`` has metrics: in its folder or as the committed copy."""
    return (EXPERIMENT_RUNS / testbed / label / "metrics.jsonl").exists() or (
        RESULTS / testbed / "runs" / f"{label}.jsonl"
    ).exists()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run_parser = sub.add_parser("run")
    run_parser.add_argument("name")
    run_parser.add_argument("--curriculum", default="random")
    run_parser.add_argument("--seed", type=int, default=0)
    run_parser.add_argument("--epochs", type=int, default=2)
    run_parser.add_argument("--set", dest="overrides", nargs="+", default=[], metavar="KEY=VALUE")
    report_parser = sub.add_parser("report")
    report_parser.add_argument("names", nargs="+")
    report_parser.add_argument("--output", type=Path)
    for p in (run_parser, report_parser):
        p.add_argument("--testbed", default="reasoning_gym", choices=sorted(TESTBEDS))
    args = parser.parse_args()
    if args.command == "run":
        raise SystemExit(start(args))
    text = report(args)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    print(text, end="")


if __name__ == "__main__":
    main()
