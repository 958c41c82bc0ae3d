"""Does the simulator's task choice respond to the agent's success it is shown? Same draws, different histories.

    GENENV_DATA_DIR=../shared/data python experiments/curriculum/simulator_conditioning.py --output FILE.json \\
        [--arms none history 0 1] [--history CHECKPOINT] [--batches 2] \\
        [--trained CHECKPOINT | --replay-rwr RUN_DIR ... [--replay-once]] \\
        +bench=... [overrides]
    python experiments/curriculum/simulator_conditioning.py --pair FILE.json   # add the paired differences
    # one arm, across simulators
    python experiments/curriculum/simulator_conditioning.py --compare FILE.json FILE.json ...

Builds the simulator ``python -m genenv.train OVERRIDES`` builds (untrained, or with ``--trained`` the RWR adapter of
a run's checkpoint folder ``CHECKPOINT/simulator``; with ``--replay-rwr`` a fresh RWR adapter trained on runs' D_env,
pooled, as a run's epochs trained it, once per committed epoch on the accepted generations up to it (with
``--replay-once``, one update on all of them), but with the ``rwr.*`` settings of OVERRIDES: what another learning
rate, number of passes or number of examples would have made of them) and asks it for ``--batches`` batches of
proposals under each success history (arm):

* ``none``: no history, as in epoch 0 and as the random, static and offline curricula always ask;
* ``history``: the agent's success per family key saved in ``--history CHECKPOINT/state.json`` (a real run's);
* a number ``r``: the agent solves a share ``r`` of every family key.

Every arm starts from the same seed (``--seed``: the same family keys, worked examples and sampling noise), so the
arms differ only in what the prompt says about the agent. Per arm it reports the valid share, how often the written
family key is the requested one, the mean level written minus the level requested (for ``name@L`` keys), the level
mix and, for the history arm, the share of written and of requested keys whose success lies in the band
``|success - alpha| <= band_k``: a simulator that targets the agent writes more in-band keys than the uniform draw of
requested keys holds. ``paired_offsets``: each arm's level offsets minus the first arm's, draw by draw.

``--compare`` reads files written with the same draws and history by different simulators (untrained, ``--trained``,
``--replay-rwr``) and reports, for one arm, the alpha-curriculum reward ``R_env`` that the history's success of each
requested and each written key would earn, and each file's written ``R_env`` minus the first file's, draw by draw: how
far an RWR update moved the task mix toward the keys the agent solves about ``alpha`` of.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch
from simulator_response import level, summarise  # this folder is on sys.path
from simulator_validity import wilson

from genenv.checkpoints import POOLS
from genenv.curriculum import FamilyStats, RWRTrainer, alpha_reward
from genenv.envs.simulator import extract_json_object
from genenv.machine import uptime
from genenv.pools import TaskPool
from genenv.train import compose_setup


def history_rates(checkpoint: Path) -> dict[str, float]:
    """The agent's recent success per family key saved in a run's checkpoint folder."""
    state = json.loads((checkpoint / "state.json").read_text(encoding="utf-8"))
    return FamilyStats.from_dict(state["stats"]).rates()


def replay_rwr(trainer: RWRTrainer, run_dirs: list[Path], once: bool = False) -> list[dict[str, Any]]:
    """Train ``trainer`` on the D_env of ``run_dirs`` (pooled) as a run's epochs did: once per epoch, on the accepted
    generations of that epoch and the earlier ones; with ``once``, one update on all their committed accepted
    generations. Returns each update's statistics."""
    pools = []
    for run_dir in run_dirs:
        if not (run_dir / POOLS).is_dir():  # TaskPool would create the folder
            raise SystemExit(f"{run_dir} is not a run folder: it has no {POOLS}/")
        pool = TaskPool(run_dir / POOLS)
        if pool.committed_epoch is None:
            raise SystemExit(f"{run_dir / POOLS} holds no committed epoch")
        pools.append(pool)
    last = max(pool.committed_epoch for pool in pools)
    updates = []
    for epoch in [last] if once else range(last + 1):
        # min(): past a pool's last committed epoch, view() would add the records of its epoch in progress
        examples = [x for pool in pools for x in pool.rwr_examples(min(epoch, pool.committed_epoch))]
        if examples:
            updates.append(trainer.train(examples).to_dict())
    return updates


def arm_success(arm: str, families: list[str], history: dict[str, float] | None) -> dict[str, float] | None:
    if arm == "none":
        return None
    if arm == "history":
        if history is None:
            raise SystemExit("the arm 'history' needs --history CHECKPOINT")
        return history
    try:
        rate = float(arm)
    except ValueError:
        raise SystemExit(f"unknown arm {arm!r}: none, history or a success rate in [0, 1]") from None
    if not 0.0 <= rate <= 1.0:
        raise SystemExit(f"arm {arm!r}: a success rate lies in [0, 1]")
    return dict.fromkeys(families, rate)


def in_band(keys: list[str], success: dict[str, float], alpha: float, band_k: float) -> float | None:
    """The share of ``keys`` with a known success inside the band (None when none is known)."""
    known = [success[k] for k in keys if k in success]
    return sum(abs(rate - alpha) <= band_k for rate in known) / len(known) if known else None


def written_offsets(outputs: list[dict[str, Any]]) -> list[int | None]:
    """Per proposal, the level written minus the level requested (None: rejected, or keys without a level)."""
    offsets: list[int | None] = []
    for output in outputs:
        requested = level(output["family"])
        if output["reject_reason"]:
            written = None
        elif "written" in output:  # the written task's family key (its level measured, for written expressions)
            written = level(output["written"])
        else:
            written = extract_json_object(output["raw"]).get("level")
        offsets.append(None if requested is None or not isinstance(written, int) else written - requested)
    return offsets


def paired(arms: dict[str, dict[str, Any]], seed: int = 0) -> dict[str, dict[str, Any]]:
    """For each pair of arms (a later one minus an earlier one): the mean paired difference of level offsets over the
    draws valid in both, with a 95% bootstrap interval (the arms share their draws: draw i is the same request)."""
    offsets = {name: written_offsets(arm["outputs"]) for name, arm in arms.items()}
    result = {}
    for first, second in itertools.combinations(offsets, 2):
        pairs = zip(offsets[first], offsets[second])
        diffs = [b - a for a, b in pairs if a is not None and b is not None]
        if diffs:
            result[f"{second} - {first}"] = paired_mean(diffs, seed)
    return result


def paired_mean(diffs: list[float], seed: int = 0) -> dict[str, Any]:
    """n, the mean of paired differences and its 95% bootstrap interval."""
    values = np.array(diffs, dtype=float)
    means = np.random.default_rng(seed).choice(values, size=(10_000, len(values))).mean(axis=1)
    return {
        "n": len(values),
        "mean": float(values.mean()),
        "ci95": [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))],
    }


def key_rewards(keys: list[str | None], success: dict[str, float], alpha: float, beta: float) -> list[float | None]:
    """Per key, the ``R_env`` its success in ``success`` would earn (None: no key, or no success known for it)."""
    return [alpha_reward(success[k], alpha, beta) if k in success else None for k in keys]


def compare(paths: list[Path], arm: str, seed: int = 0) -> dict[str, Any]:
    """One arm of several files that share their draws, history and ``R_env`` (see the module docstring)."""
    records = {str(path): json.loads(path.read_text(encoding="utf-8")) for path in paths}
    first = next(iter(records.values()))
    requested = [o["family"] for o in first["arms"][arm]["outputs"]]
    for path, record in records.items():
        if "r_env" not in record:
            raise SystemExit(f"{path}: no 'r_env' (alpha, beta) recorded; write it again with this script")
        if record["history"] != first["history"] or [o["family"] for o in record["arms"][arm]["outputs"]] != requested:
            raise SystemExit(f"{path}: its history or its requested keys differ from {paths[0]}'s")
        if record["r_env"] != first["r_env"]:
            raise SystemExit(f"{path}: its R_env {record['r_env']} differs from {paths[0]}'s {first['r_env']}")
    history, alpha, beta = first["history"] or {}, first["r_env"]["alpha"], first["r_env"]["beta"]
    result, baseline = {}, None
    for path, record in records.items():
        outputs = record["arms"][arm]["outputs"]
        written = key_rewards([o.get("written") for o in outputs], history, alpha, beta)
        asked = [r for r, w in zip(key_rewards(requested, history, alpha, beta), written) if w is not None]
        valid = [w for w in written if w is not None]
        row = {
            "valid": len(valid),
            "levels_written": record["arms"][arm]["levels_written"],
            "r_env_requested": float(np.mean(asked)) if asked else None,
            "r_env_written": float(np.mean(valid)) if valid else None,
        }
        if baseline is None:
            baseline = written
        else:
            diffs = [w - b for b, w in zip(baseline, written) if b is not None and w is not None]
            row["r_env_written_minus_first"] = paired_mean(diffs, seed) if diffs else None
        result[path] = row
    return {"arm": arm, "alpha": alpha, "beta": beta, "files": result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--arms", nargs="+", default=["none", "0", "1"])
    parser.add_argument("--history", type=Path, help="a run's checkpoint folder whose success history 'history' shows")
    trained = parser.add_mutually_exclusive_group()
    trained.add_argument("--trained", type=Path, help="a run's checkpoint folder whose simulator adapter to load")
    trained.add_argument(
        "--replay-rwr", type=Path, nargs="+", help="run folders whose D_env (pooled) to train a fresh RWR adapter on"
    )
    parser.add_argument("--replay-once", action="store_true", help="one update on all replayed examples")
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pair", type=Path, help="only add the paired differences to this existing output file")
    parser.add_argument("--compare", type=Path, nargs="+", help="only compare these output files' --compare-arm")
    parser.add_argument("--compare-arm", default="history")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    if args.compare is not None:
        print(json.dumps(compare(args.compare, args.compare_arm, args.seed), indent=1))
        return
    if args.pair is not None:
        record = json.loads(args.pair.read_text(encoding="utf-8"))
        record["paired_offsets"] = paired(record["arms"], args.seed)
        args.pair.write_text(json.dumps(record, indent=1) + "\n")
        print(json.dumps(record["paired_offsets"], indent=1))
        return
    if args.output is None:
        parser.error("--output is required (unless --pair or --compare)")
    if args.replay_once and not args.replay_rwr:
        parser.error("--replay-once needs --replay-rwr")
    config, adapter, policy = compose_setup(args.overrides)
    if args.trained is not None:
        RWRTrainer(policy, config.rwr).load(args.trained / "simulator")
    rwr_updates = (
        replay_rwr(RWRTrainer(policy, config.rwr), args.replay_rwr, args.replay_once) if args.replay_rwr else None
    )
    simulator = config.simulator.build(policy, config.curriculum.alpha)
    history = history_rates(args.history) if args.history else None
    successes = {arm: arm_success(arm, adapter.families(), history) for arm in args.arms}
    record: dict[str, Any] = {
        "command": "python experiments/curriculum/simulator_conditioning.py "
        + " ".join(
            [f"--arms {' '.join(args.arms)}", f"--batches {args.batches}", f"--seed {args.seed}"]
            + [
                f"--{name.replace('_', '-')} {getattr(args, name)}"
                for name in ("history", "trained")
                if getattr(args, name)
            ]
            + ([f"--replay-rwr {' '.join(map(str, args.replay_rwr))}"] if args.replay_rwr else [])
            + (["--replay-once"] if args.replay_once else [])
            + args.overrides
        ),
        "machine": f"{platform.machine()}, Python {platform.python_version()}, "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}",
        "load_start": uptime(),
        "history": history,
        "r_env": {"alpha": config.curriculum.alpha, "beta": config.curriculum.beta},
        "rwr_updates": rwr_updates,
        "arms": {},
    }
    for arm, success in successes.items():
        rng = np.random.default_rng(args.seed)
        torch.manual_seed(args.seed)
        start, proposals = time.perf_counter(), []
        for _ in range(args.batches):
            proposals.extend(simulator.propose(adapter, rng=rng, success=success))
        seconds = time.perf_counter() - start
        written = [(p.family, adapter.family(p.task), arm) for p in proposals if p.task is not None]
        result = {
            "seconds": seconds,
            "proposals": len(proposals),
            "valid": len(written),
            "valid_share_ci95": wilson(len(written), len(proposals)),
            **(summarise(written) if written else {}),
            "levels_requested": dict(sorted(Counter(level(p.family) for p in proposals).items(), key=str)),
            "levels_written": dict(sorted(Counter(level(w) for _, w, _ in written).items(), key=str)),
            "outputs": [
                {"family": p.family, "raw": p.raw, "reject_reason": p.reject_reason}
                | ({"written": adapter.family(p.task)} if p.task is not None else {})
                for p in proposals
            ],
        }
        if history is not None:
            result["in_band_requested"] = in_band(
                [r for r, _, _ in written], history, config.curriculum.alpha, config.curriculum.band_k
            )
            result["in_band_written"] = in_band(
                [w for _, w, _ in written], history, config.curriculum.alpha, config.curriculum.band_k
            )
        record["arms"][arm] = result
        print(
            f"{arm:>8}: {len(written)}/{len(proposals)} valid, at request {result.get('at_request', 0):.2f}, "
            f"mean offset {result.get('mean_offset')}, levels {result['levels_written']}"
            + (f", in band {result['in_band_requested']} -> {result['in_band_written']}" if history else "")
            + f" ({seconds:.0f} s)",
            flush=True,
        )
    record["load_end"] = uptime()
    record["paired_offsets"] = paired(record["arms"], args.seed)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
