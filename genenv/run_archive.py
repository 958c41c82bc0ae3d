"""A run folder as one archive, to continue the run on another machine (or after this one is wiped).

:func:`pack_run` writes what :class:`~genenv.coevolution.CoEvolutionTrainer` needs to resume at the run's last complete
epoch: that epoch's checkpoint, the pools cut at that epoch, the metrics lines up to it, the Hydra config, and a
static/offline pool draft. It reads a live run safely (a trainer may be writing the folder): checkpoints are written
before the pools commit their epoch, pool files only grow past their committed bytes, and only complete lines are
taken. Tokenizer files are left out of the checkpoint (the base model's own; resuming reads only weights and optimizer
state). :func:`unpack_run` lays the archive out as a run folder; ``genenv.train ... resume=true`` then continues it.

Run state (run folders, their checkpoints, archives of unfinished runs) stays out of the repository, in
:func:`state_dir`: ``$GENENV_STATE_DIR``, by default ``~/.cache/genenv/state``. To continue runs on another machine,
copy that folder (or its archives) there.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

from genenv.checkpoints import CHECKPOINTS, LATEST, METRICS_FILE, POOL_DRAFT, POOLS, WARM_START

#: the environment variable naming the folder of run state (default ``~/.cache/genenv/state``)
STATE_DIR_ENV = "GENENV_STATE_DIR"
#: the training pools (cut at the epoch packed) and the static/offline draft (taken whole)
EPOCH_POOLS = ("traces", "tasks")
#: files of a checkpoint that resuming does not read (the base model's tokenizer, saved with every adapter)
LEFT_OUT = frozenset({"tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "vocab.json", "merges.txt"})


def state_dir() -> Path:
    """The folder of run state kept out of the repository: ``$GENENV_STATE_DIR``, else ``genenv/state`` in the user
    cache folder (``$XDG_CACHE_HOME``, by default ``~/.cache``)."""
    if folder := os.environ.get(STATE_DIR_ENV):
        return Path(folder).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "genenv" / "state"


def pack_run(run_dir: str | os.PathLike[str], archive: str | os.PathLike[str]) -> int | None:
    """Write ``archive`` (``.tar.xz``) holding ``run_dir`` as of its last complete epoch; returns that epoch (``None``:
    no epoch complete yet, the archive then holds only the config, a pool draft and the warm-start checkpoint).

    Raises ``FileNotFoundError`` when the pools have committed an epoch whose checkpoint is missing."""
    run_dir, archive = Path(run_dir), Path(archive)
    pools = run_dir / POOLS
    metas = {name: _meta(pools / f"{name}.meta.json") for name in EPOCH_POOLS}
    epochs = [meta["epoch"] for meta in metas.values() if meta.get("epoch") is not None]
    epoch = max(epochs) if epochs else None
    files: dict[str, bytes] = {}
    for path in sorted((run_dir / ".hydra").glob("*.yaml")):
        files[f".hydra/{path.name}"] = path.read_bytes()
    if (pools / f"{POOL_DRAFT}.jsonl").exists():
        files.update(_pool_files(pools, POOL_DRAFT, whole=True))
    warm_start = run_dir / CHECKPOINTS / WARM_START
    if epoch is None and (warm_start / "state.json").exists():
        files.update(_checkpoint_files(run_dir, warm_start))
    elif epoch is not None:
        checkpoint = run_dir / CHECKPOINTS / f"epoch-{epoch:04d}"
        if not (checkpoint / "state.json").exists():
            raise FileNotFoundError(f"{run_dir}: the pools have committed epoch {epoch} but {checkpoint} is missing")
        for name, meta in metas.items():
            files.update(_pool_files(pools, name, whole=meta.get("epoch") != epoch))
        files.update(_checkpoint_files(run_dir, checkpoint))
        files[f"{CHECKPOINTS}/{LATEST}"] = checkpoint.name.encode()
        files[METRICS_FILE] = b"".join(
            line for line in _complete_lines(run_dir / METRICS_FILE) if json.loads(line)["epoch"] <= epoch
        )
    archive.parent.mkdir(parents=True, exist_ok=True)
    temporary = archive.with_name(archive.name + ".tmp")
    with tarfile.open(temporary, "w:xz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    os.replace(temporary, archive)
    return epoch


def holds_run(run_dir: str | os.PathLike[str]) -> bool:
    """Whether ``run_dir`` holds a run (checkpoints or pools), started or finished."""
    return (Path(run_dir) / CHECKPOINTS).exists() or (Path(run_dir) / POOLS).exists()


def unpack_run(archive: str | os.PathLike[str], run_dir: str | os.PathLike[str]) -> None:
    """Lay ``archive`` (from :func:`pack_run`) out as ``run_dir``, which must not hold a run yet."""
    run_dir = Path(run_dir)
    if holds_run(run_dir):
        raise FileExistsError(f"{run_dir} already holds a run; unpack into an empty folder")
    run_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:xz") as tar:
        tar.extractall(run_dir, filter="data")


def _meta(path: Path) -> dict:
    return json.loads(path.read_bytes()) if path.exists() else {}


def _checkpoint_files(run_dir: Path, checkpoint: Path) -> dict[str, bytes]:
    return {
        path.relative_to(run_dir).as_posix(): path.read_bytes()
        for path in sorted(checkpoint.rglob("*"))
        if path.is_file() and path.name not in LEFT_OUT
    }


def _pool_files(pools: Path, name: str, *, whole: bool) -> dict[str, bytes]:
    """A pool's file cut at its committed bytes (``whole``: every complete line, for a pool that has not committed the
    epoch yet: resuming commits those records), and its meta file."""
    meta_path = pools / f"{name}.meta.json"
    meta = _meta(meta_path)
    if whole:
        data = b"".join(_complete_lines(pools / f"{name}.jsonl"))
    else:
        with open(pools / f"{name}.jsonl", "rb") as file:
            data = file.read(meta["bytes"])
    files = {f"{POOLS}/{name}.jsonl": data}
    if meta:
        files[f"{POOLS}/{name}.meta.json"] = meta_path.read_bytes()
    return files


def _complete_lines(path: Path) -> list[bytes]:
    if not path.exists():
        return []
    lines = path.read_bytes().splitlines(keepends=True)
    return lines if not lines or lines[-1].endswith(b"\n") else lines[:-1]
