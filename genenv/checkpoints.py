"""A run folder and its checkpoints: the layout, atomic checkpoint writes, and on resume the newest loadable one.

A run folder holds ``checkpoints/`` (one folder per saved stage: ``warm-start`` after the warm start of epoch 0,
``epoch-NNNN`` after each epoch, and ``latest`` naming the newest epoch), ``pools/`` (D_train, D_env and a static or
offline pool's draft) and ``metrics.jsonl`` (one line per epoch). A checkpoint folder holds the agent (saved by every
process: sharded weights are gathered), the simulator, ``state.json`` and the torch RNG; it is written in a temporary
folder and renamed, so a folder that exists is complete.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any, Protocol

import torch

logger = logging.getLogger(__name__)

CHECKPOINTS = "checkpoints"
LATEST = "latest"
#: the agent after the warm start (and the held-out scores around it), so that a run killed in epoch 0 keeps them
WARM_START = "warm-start"
METRICS_FILE = "metrics.jsonl"
POOLS = "pools"
#: static/offline: the pool's simulator batches as they are written (pools/pool_draft.jsonl), so a run killed while
#: writing its pool continues where it stopped
POOL_DRAFT = "pool_draft"


class Saveable(Protocol):
    """A trainer whose weights and optimizer state a checkpoint holds."""

    def save(self, directory: str | os.PathLike[str]) -> None: ...

    def load(self, directory: str | os.PathLike[str]) -> None: ...


class Checkpoints:
    """The checkpoints of one run folder, written and read by every process of a run (``processes``: accelerate's
    ``PartialState``); only the main process writes anything but the agent."""

    def __init__(self, run_dir: Path, processes: Any) -> None:
        self.root = run_dir / CHECKPOINTS
        self.run_dir = run_dir
        self.processes = processes

    def save(self, name: str, state: dict[str, Any], agent: Saveable, simulator: Saveable | None = None) -> None:
        """Write checkpoint folder ``name`` atomically (temporary folder, rename): the agent, the simulator (if
        given), ``state`` as ``state.json`` and the torch RNG."""
        final = self.root / name
        tmp = self.root / f".{name}.tmp"
        is_main = self.processes.is_main_process
        if is_main:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
        self.processes.wait_for_everyone()
        agent.save(tmp / "agent")
        self.processes.wait_for_everyone()
        if not is_main:
            return
        if simulator is not None:
            simulator.save(tmp / "simulator")
        (tmp / "state.json").write_text(json.dumps(state, default=str), encoding="utf-8")
        torch.save(torch.get_rng_state(), tmp / "torch_rng.pt")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)

    def save_epoch(self, epoch: int, state: dict[str, Any], agent: Saveable, simulator: Saveable | None) -> None:
        """Write checkpoint ``epoch-NNNN`` atomically, then point ``latest`` at it."""
        name = f"epoch-{epoch:04d}"
        self.save(name, state, agent, simulator)
        if self.processes.is_main_process:
            write_atomic(self.root / LATEST, name)

    def has_epochs(self) -> bool:
        return bool(checkpoint_folders(self.run_dir))

    def has_warm_start(self) -> bool:
        return (self.root / WARM_START / "state.json").exists()

    def load_warm_start(self, agent: Saveable) -> dict[str, Any]:
        """The agent and torch RNG as the warm start of a killed epoch 0 left them; returns that checkpoint's state."""
        folder = self.root / WARM_START
        try:
            state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
            agent.load(folder / "agent")
            torch.set_rng_state(torch.load(folder / "torch_rng.pt", weights_only=True))
        except Exception as error:  # noqa: BLE001 - any damaged file
            raise RuntimeError(
                f"resume: the warm-start checkpoint {folder} cannot be loaded ({type(error).__name__}: {error}); "
                "delete that folder to redo the warm start"
            ) from error
        logger.info("resumed from %s: epoch 0 continues after the warm start", folder)
        return state

    def load_latest(self, agent: Saveable, simulator: Saveable | None, committed: int) -> tuple[Path, dict[str, Any]]:
        """Load the newest loadable epoch checkpoint into the trainers and the torch RNG; returns it and its state.

        A damaged checkpoint (unreadable ``state.json``, RNG, optimizer or weights) is skipped with a warning for the
        next older one, as long as that one is not older than ``committed`` (the pools' committed epoch); otherwise
        the error names every damaged file."""
        skipped: list[str] = []
        for checkpoint in checkpoint_folders(self.run_dir):
            try:
                state = json.loads((checkpoint / "state.json").read_text(encoding="utf-8"))
                epoch = int(state["epoch"])
            except (OSError, ValueError, KeyError, TypeError) as error:
                skipped.append(f"{checkpoint / 'state.json'}: {error}")
                continue
            if epoch < committed:
                skipped.append(f"{checkpoint}: epoch {epoch} is older than the pools' committed epoch {committed}")
                break
            part = checkpoint / "torch_rng.pt"
            try:
                rng_state = torch.load(part, weights_only=True)
                part = checkpoint / "agent"
                agent.load(part)
                if simulator is not None:
                    part = checkpoint / "simulator"
                    simulator.load(part)
            except Exception as error:  # noqa: BLE001 - any damaged file: try the next older checkpoint
                reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
                skipped.append(f"{part}: {reason}")
                logger.warning("resume: %s cannot be loaded (%s); trying an older checkpoint", part, reason)
                continue
            if skipped:
                logger.warning("resume: fell back to %s; skipped %s", checkpoint, "; ".join(skipped))
            torch.set_rng_state(rng_state)
            return checkpoint, state
        raise RuntimeError(f"resume: no loadable checkpoint in {self.run_dir}: " + "; ".join(skipped))


def checkpoint_folders(run_dir: str | Path) -> list[Path]:
    """A run's checkpoint folders holding a ``state.json``, the one ``latest`` points at first, then newest first."""
    root = Path(run_dir) / CHECKPOINTS
    if not root.is_dir():
        return []
    folders = sorted((f for f in root.glob("epoch-*") if (f / "state.json").exists()), reverse=True)
    pointer = root / LATEST
    if pointer.exists():
        target = root / pointer.read_text(encoding="utf-8").strip()
        if target in folders:
            folders.remove(target)
            folders.insert(0, target)
        else:
            logger.warning("%s points at %s, which is missing or incomplete", pointer, target.name)
    return folders


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The checkpoint a resume starts from first (see :func:`checkpoint_folders`), or ``None``."""
    folders = checkpoint_folders(run_dir)
    return folders[0] if folders else None


def read_metrics(run_dir: str | Path) -> list[dict[str, Any]]:
    """Every epoch's metrics of a run, in order (``metrics.jsonl``)."""
    path = Path(run_dir) / METRICS_FILE
    if not path.exists():
        return []
    metrics = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            metrics.append(json.loads(line))
        except ValueError:  # a line torn by a kill mid-write
            logger.warning("skipping an unreadable line of %s", path)
    return metrics


def logged_epochs(run_dir: str | Path) -> set[int]:
    return {int(m["epoch"]) for m in read_metrics(run_dir)}


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path``'s content with ``text`` (temporary file, ``fsync``, rename)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
