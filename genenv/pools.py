"""Persistent data pools: the agent's training pool D_train and the simulator's pool D_env.

Both are a :class:`JsonlPool`, an append-only JSON Lines file with epoch commits. A pool named
``name`` in ``directory`` keeps:

``<name>.jsonl``
    one record a line, each with ``id`` (increasing, never reused by ``append``), ``epoch`` and
    ``batch_end`` (the id after the last record of the :meth:`~JsonlPool.append` call it came from).
``<name>.meta.json``
    ``{"committed": records, "bytes": size, "epoch": last committed epoch, "next_id": id}``, replaced
    atomically (temporary file, ``fsync``, ``os.replace``, directory ``fsync``) by each commit.
``<name>.torn``
    quarantine: the bytes of an append a crash interrupted (a torn last line and the complete
    lines of an unfinished batch), found and moved here when the pool is opened.
``<name>.uncommitted.jsonl``
    the records :meth:`~JsonlPool.discard_uncommitted` moved out, appended as they were.

Guarantees, for one writing process killed at any moment (SIGKILL) or a failed write: each
``append`` writes its whole batch in one buffer and returns only after ``fsync``, so after reopening
a batch is either all in the pool or, if its append did not return, not in it at all (its bytes in
``<name>.torn``); earlier records are never touched. Records after the last commit belong to an
unfinished epoch: they are kept apart (:meth:`~JsonlPool.uncommitted`) until the caller keeps them
(:meth:`~JsonlPool.commit`) or sets them aside (:meth:`~JsonlPool.discard_uncommitted`). Nothing is
deleted; a crash during recovery or a discard can at worst copy the same bytes to a side file twice.
"""

from __future__ import annotations

import json
import logging
import operator
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np

from genenv.benchmarks.base import Task

if TYPE_CHECKING:
    from datasets import Dataset

    from genenv.agents.agent import Episode
    from genenv.envs.simulator import Proposal

logger = logging.getLogger(__name__)

RESERVED_KEYS = frozenset({"id", "epoch", "batch_end"})
Source = Literal["base", "on_policy", "history", "expert"]
SOURCES: tuple[str, ...] = ("base", "on_policy", "history", "expert")


class PoolCorruptedError(RuntimeError):
    """Committed records on disk cannot be read back; the pool refuses to repair them."""


class JsonlPool:
    """An append-only JSONL record store with epoch commits (see the module docstring).

    ``records()``, ``len()``, iteration and sampling see committed records only; the records of the
    epoch in progress are in :meth:`uncommitted` (and :meth:`view`) until :meth:`commit`. Returned
    records are the pool's own dicts: treat them as read-only. One process writes a pool.

    Args:
        directory: where the pool's files live (created if missing).
        name: file stem (default: the class's ``default_name``).
    """

    default_name: ClassVar[str] = "pool"
    #: fields :meth:`stats` counts values of, when records have them.
    stat_fields: ClassVar[tuple[str, ...]] = ("kind", "family")
    #: fields :meth:`to_dataset` keeps as Arrow structures instead of JSON strings.
    structured_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, directory: str | os.PathLike[str], name: str | None = None) -> None:
        self.directory = Path(directory)
        self.name = name or self.default_name
        self.path = self.directory / f"{self.name}.jsonl"
        self.meta_path = self.directory / f"{self.name}.meta.json"
        self.torn_path = self.directory / f"{self.name}.torn"
        self.side_path = self.directory / f"{self.name}.uncommitted.jsonl"
        self.directory.mkdir(parents=True, exist_ok=True)
        meta = json.loads(self.meta_path.read_bytes()) if self.meta_path.exists() else {}
        self._committed: int = meta.get("committed", 0)
        self._committed_bytes: int = meta.get("bytes", 0)
        self._epoch: int | None = meta.get("epoch")
        self._records, self._size = self._recover()
        self._next_id: int = max(meta.get("next_id", 0), self._records[-1]["id"] + 1 if self._records else 0)
        self._recovered = len(self._records) - self._committed
        if self._recovered:
            logger.warning(
                "%s: %d records of an unfinished epoch; commit() or discard_uncommitted() them",
                self.path,
                self._recovered,
            )

    def _recover(self) -> tuple[list[dict[str, Any]], int]:
        """Read the file; quarantine an interrupted append's bytes to ``<name>.torn`` and cut them off."""
        if not self.path.exists():
            self.path.touch()
            _fsync_dir(self.directory)
        data = self.path.read_bytes()
        records, size = _scan(data)
        if len(records) < self._committed or size < self._committed_bytes:
            raise PoolCorruptedError(
                f"{self.path}: {self._committed} records ({self._committed_bytes} bytes) are committed but only "
                f"{len(records)} ({size} bytes) can be read back; the file was damaged outside this pool"
            )
        if size < len(data):
            tail = data[size:]
            _append_durably(self.torn_path, tail if tail.endswith(b"\n") else tail + b"\n")
            _truncate_durably(self.path, size)
            logger.warning("%s: moved %d bytes of an interrupted append to %s", self.path, len(tail), self.torn_path)
        return records, size

    # -- writing ---------------------------------------------------------------------------
    def append(self, records: Iterable[Mapping[str, Any]], epoch: int) -> list[dict[str, Any]]:
        """Durably append one batch of JSON-serialisable records of ``epoch``; returns them as stored.

        Raises ``ValueError`` for a committed epoch, for a record using a reserved key (``id``,
        ``epoch``, ``batch_end``) or that JSON cannot hold (NaN included), and ``RuntimeError`` while
        records of an unfinished earlier run await :meth:`commit` or :meth:`discard_uncommitted`.
        """
        epoch = operator.index(epoch)
        if self._recovered:
            raise RuntimeError(
                f"{self.path} holds {self._recovered} uncommitted records of an unfinished run: "
                "commit(epoch) keeps them, discard_uncommitted() sets them aside"
            )
        if self._epoch is not None and epoch <= self._epoch:
            raise ValueError(f"epoch {epoch} is committed already (last committed epoch: {self._epoch})")
        if len(self._records) > self._committed and self._records[-1]["epoch"] != epoch:
            raise ValueError(
                f"epoch {self._records[-1]['epoch']} is in progress; commit it before appending epoch {epoch}"
            )
        records = list(records)
        end = self._next_id + len(records)
        lines = []
        for offset, record in enumerate(records):
            if clash := RESERVED_KEYS & record.keys():
                raise ValueError(f"record uses reserved keys {sorted(clash)}")
            lines.append(_json_line({"id": self._next_id + offset, "epoch": epoch, "batch_end": end, **record}))
        if not lines:
            return []
        blob = b"".join(lines)
        try:
            _append_durably(self.path, blob)
        except BaseException:  # a failed write must not leave a partial batch before the next one
            _truncate_durably(self.path, self._size)
            raise
        stored = [json.loads(line) for line in lines]
        self._records.extend(stored)
        self._size += len(blob)
        self._next_id = end
        return stored

    def commit(self, epoch: int) -> None:
        """Mark every record appended so far as committed, as of ``epoch`` (atomic, durable).

        The uncommitted records must all be of ``epoch``. Committing the epoch a crashed run left
        unfinished keeps its records (recovery); committing an epoch with no records is allowed.
        """
        epoch = operator.index(epoch)
        if self._epoch is not None and epoch < self._epoch:
            raise ValueError(f"epoch {epoch} is older than the last committed epoch {self._epoch}")
        if others := {record["epoch"] for record in self.uncommitted()} - {epoch}:
            raise ValueError(f"uncommitted records of epoch(s) {sorted(others)} cannot be committed as epoch {epoch}")
        self._committed, self._committed_bytes, self._epoch = len(self._records), self._size, epoch
        self._write_meta()
        self._recovered = 0

    def discard_uncommitted(self) -> list[dict[str, Any]]:
        """Move the uncommitted records to ``<name>.uncommitted.jsonl`` (appended); returns them."""
        moved = self.uncommitted()
        if moved:
            with open(self.path, "rb") as file:
                file.seek(self._committed_bytes)
                blob = file.read(self._size - self._committed_bytes)
            _append_durably(self.side_path, blob)
            self._write_meta()  # persists next_id first, so the moved ids are never handed out again
            _truncate_durably(self.path, self._committed_bytes)
            del self._records[self._committed :]
            self._size = self._committed_bytes
            logger.info("%s: moved %d uncommitted records to %s", self.path, len(moved), self.side_path)
        self._recovered = 0
        return moved

    def _write_meta(self) -> None:
        meta = {
            "committed": self._committed,
            "bytes": self._committed_bytes,
            "epoch": self._epoch,
            "next_id": self._next_id,
        }
        temporary = self.meta_path.with_name(self.meta_path.name + ".tmp")
        with open(temporary, "wb") as file:
            file.write(_json_line(meta))
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.meta_path)
        _fsync_dir(self.directory)

    # -- reading ---------------------------------------------------------------------------
    @property
    def committed_epoch(self) -> int | None:
        """The last committed epoch (``None`` before the first commit)."""
        return self._epoch

    def records(
        self, epoch: int | None = None, *, include_uncommitted: bool = False, **filters: Any
    ) -> list[dict[str, Any]]:
        """Committed records (and uncommitted ones if asked), of ``epoch`` if given, with ``field == value`` filters."""
        pool = self._records if include_uncommitted else self._records[: self._committed]
        return [
            record
            for record in pool
            if (epoch is None or record["epoch"] == epoch) and all(record.get(k) == v for k, v in filters.items())
        ]

    def uncommitted(self) -> list[dict[str, Any]]:
        """Records appended after the last commit: the epoch in progress, or one a crash left unfinished."""
        return self._records[self._committed :]

    def view(self, epoch: int | None = None) -> list[dict[str, Any]]:
        """Committed records of epochs up to ``epoch`` plus the uncommitted ones of ``epoch`` (the one in progress).

        ``epoch=None`` is every committed record.
        """
        if epoch is None:
            return self.records()
        return [
            record
            for index, record in enumerate(self._records)
            if record["epoch"] == epoch or (record["epoch"] < epoch and index < self._committed)
        ]

    def __len__(self) -> int:
        return self._committed

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._records[: self._committed])

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({str(self.path)!r}, committed={self._committed}, "
            f"uncommitted={len(self._records) - self._committed}, epoch={self._epoch})"
        )

    def sample(
        self, n: int, rng: np.random.Generator | int | None = None, weight_key: str | None = None, **filters: Any
    ) -> list[dict[str, Any]]:
        """``n`` committed records (matching ``filters``), uniformly or in proportion to ``record[weight_key]``.

        Draws without replacement when ``n <= len(population)``, with replacement otherwise.
        """
        population = self.records(**filters)
        if not population:
            raise ValueError("no records to sample from")
        probabilities = None
        if weight_key is not None:
            weights = np.asarray([record[weight_key] for record in population], dtype=float)
            if not np.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
                raise ValueError(f"'{weight_key}' must hold finite non-negative weights with a positive sum")
            probabilities = weights / weights.sum()
        rng = np.random.default_rng(rng)
        indices = rng.choice(len(population), size=n, replace=n > len(population), p=probabilities)
        return [population[index] for index in indices]

    def to_dataset(self, records: Sequence[Mapping[str, Any]] | None = None) -> Dataset:
        """A :class:`datasets.Dataset` of ``records`` (default: the committed ones), one column per field.

        Columns in ``structured_fields`` stay Arrow structures; other columns holding dicts, lists or
        mixed types become JSON strings (``None`` stays null), so ragged fields fit Arrow.
        """
        from datasets import Dataset

        rows = self.records() if records is None else records
        columns = list(dict.fromkeys(key for row in rows for key in row))
        data = {column: [row.get(column) for row in rows] for column in columns}
        for column, values in data.items():
            if column not in self.structured_fields and not _is_flat(values):
                data[column] = [None if value is None else json.dumps(value, ensure_ascii=False) for value in values]
        return Dataset.from_dict(data)

    def stats(self) -> dict[str, Any]:
        """Counts of all records: committed/uncommitted, per epoch, and per value of each ``stat_fields`` field."""
        out: dict[str, Any] = {
            "records": len(self._records),
            "committed": self._committed,
            "uncommitted": len(self._records) - self._committed,
            "committed_epoch": self._epoch,
            "per_epoch": dict(sorted(Counter(record["epoch"] for record in self._records).items())),
        }
        for field in self.stat_fields:
            if counts := Counter(record[field] for record in self._records if field in record):
                out[f"per_{field}"] = dict(counts)
        return out


class TracePool(JsonlPool):
    """D_train: agent episodes (base data, history, on-policy traces), invalid ones kept but flagged."""

    default_name = "traces"
    stat_fields = ("kind", "family", "source", "valid")
    structured_fields = ("messages",)

    def add_episodes(
        self,
        episodes: Iterable[Episode | Mapping[str, Any]],
        epoch: int,
        source: Source,
        valid: Sequence[bool] | None = None,
    ) -> list[dict[str, Any]]:
        """Append episodes (see :func:`episode_record`) as one batch.

        ``valid`` flags each episode (default: valid unless truncated); invalid episodes are stored
        with ``valid=False`` and left out of :meth:`training_set`.
        """
        if source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
        records = [episode_record(episode) for episode in episodes]
        flags = [not record["truncated"] for record in records] if valid is None else list(valid)
        if len(flags) != len(records):
            raise ValueError(f"{len(flags)} valid flags for {len(records)} episodes")
        pairs = zip(records, flags, strict=True)
        return self.append([{**record, "source": source, "valid": bool(flag)} for record, flag in pairs], epoch)

    def training_set(self, epoch: int, *, history_epochs: int | None = None) -> list[dict[str, Any]]:
        """D_train for ``epoch``: base records, valid traces of committed epochs, and ``epoch``'s fresh valid ones.

        ``history_epochs`` keeps only the history of the last that many epochs before ``epoch``.
        """
        oldest = None if history_epochs is None else epoch - history_epochs
        return [
            record
            for record in self.view(epoch)
            if record["valid"] and (record["source"] == "base" or oldest is None or record["epoch"] >= oldest)
        ]


class TaskPool(JsonlPool):
    """D_env: every simulator generation with its conditioning prompt, outcome and RWR weight.

    ``status`` is ``"accepted"`` (parsed and in a batch the difficulty band kept), ``"filtered"``
    (parsed, batch filtered out) or ``"rejected"`` (unparsable or invalid, ``reject_reason`` says why).
    """

    default_name = "tasks"
    stat_fields = ("kind", "family", "status")
    structured_fields = ("messages",)

    def add_proposals(
        self,
        proposals: Iterable[Proposal | Mapping[str, Any]],
        epoch: int,
        r_env: float | Sequence[float],
        weight: float | Sequence[float],
        kept: bool | Sequence[bool],
        p_hat: float | None | Sequence[float | None] = None,
    ) -> list[dict[str, Any]]:
        """Append simulator outputs (:class:`~genenv.envs.simulator.Proposal` or its ``to_dict()``) as one batch.

        ``r_env``, ``weight`` (``exp(lambda * R_env)``), ``kept`` and ``p_hat`` (the agent's success on the task, or
        ``None`` where it was not played) are one value for the batch or one per proposal.
        """
        items = [dict(proposal) if isinstance(proposal, Mapping) else proposal.to_dict() for proposal in proposals]
        r_envs, weights, kepts, p_hats = (
            _per_item(value, len(items), name)
            for value, name in ((r_env, "r_env"), (weight, "weight"), (kept, "kept"), (p_hat, "p_hat"))
        )
        records = []
        for item, item_r_env, item_weight, item_kept, item_p_hat in zip(
            items, r_envs, weights, kepts, p_hats, strict=True
        ):
            task = item.get("task")
            task = task.to_dict() if isinstance(task, Task) else task
            records.append(
                {
                    "family": item["family"],
                    "messages": item["messages"],
                    "raw": item["raw"],
                    "task": task,
                    "reject_reason": item.get("reject_reason", ""),
                    "r_env": float(item_r_env),
                    "p_hat": None if item_p_hat is None else float(item_p_hat),
                    "weight": float(item_weight),
                    "kept": bool(item_kept),
                    "status": "rejected" if task is None else "accepted" if item_kept else "filtered",
                }
            )
        return self.append(records, epoch)

    def weighted_examples(self, epoch: int | None = None) -> list[dict[str, Any]]:
        """Accepted generations (with ``weight``) for weighted SFT of the simulator; see :meth:`view` for ``epoch``."""
        return [record for record in self.view(epoch) if record["status"] == "accepted"]

    def rwr_examples(self, epoch: int | None = None) -> list[dict[str, Any]]:
        """:meth:`weighted_examples` as the simulator's RWR update reads them: ``messages``, ``completion`` (the
        generation) and ``weight``."""
        return [
            {"messages": r["messages"], "completion": r["raw"], "weight": r["weight"]}
            for r in self.weighted_examples(epoch)
        ]

    def in_band_outputs(self, per_family: int) -> dict[str, list[str]]:
        """Each family's latest ``per_family`` accepted generations (tasks whose attempts the agent's success put
        inside the band), as the simulator wrote them, oldest first; committed epochs only. A task written more
        than once counts once, at its latest generation."""
        accepted = self.records(status="accepted")
        return _latest_per_family(((r["family"], r["task"]["task_id"], r["raw"]) for r in accepted), per_family)

    def scored_outputs(
        self, family_of: Callable[[dict[str, Any]], str], per_family: int
    ) -> dict[str, list[tuple[str, float]]]:
        """The latest ``per_family`` generations whose tasks the agent played, as the simulator wrote them with the
        agent's success on each (``p_hat``), oldest first, grouped by the played task's family (``family_of`` maps a
        stored task to it); committed epochs only. A task written more than once (its copies share one ``p_hat``
        when written in the same epoch) counts once, at its latest generation."""
        played = (r for r in self.records() if r.get("p_hat") is not None)  # records stored before p_hat have none
        return _latest_per_family(
            ((family_of(r["task"]), r["task"]["task_id"], (r["raw"], r["p_hat"])) for r in played), per_family
        )

    def rejects(self, epoch: int | None = None) -> list[dict[str, Any]]:
        """Rejected generations, with ``reject_reason``; see :meth:`view` for ``epoch``."""
        return [record for record in self.view(epoch) if record["status"] == "rejected"]


def episode_record(episode: Episode | Mapping[str, Any]) -> dict[str, Any]:
    """The stored fields of an :class:`~genenv.agents.agent.Episode` (or a mapping with the same names).

    ``task`` becomes a dict, ``family`` comes from the mapping or ``info["family"]``, and ``info``
    keeps everything but the task, messages and tools it would duplicate.
    """
    if isinstance(episode, Mapping):
        data = dict(episode)
    else:
        data = {name: getattr(episode, name) for name in ("task", "messages", "tools", "reward", "info", "truncated")}
    info = {key: value for key, value in (data.get("info") or {}).items() if key not in ("task", "messages", "tools")}
    task = data["task"]
    return {
        "task": task.to_dict() if isinstance(task, Task) else task,
        "family": data.get("family", info.get("family")),
        "messages": list(data["messages"]),
        "tools": list(data.get("tools") or []),
        "reward": float(data["reward"]),
        "truncated": bool(data.get("truncated", False)),
        "info": info,
    }


# -- file primitives -------------------------------------------------------------------------
def _json_line(obj: Any) -> bytes:
    """``obj`` as one UTF-8 JSON line; strings with lone surrogates fall back to ASCII escapes."""
    try:
        return (json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(obj, allow_nan=False) + "\n").encode("ascii")


def _scan(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """The records of the whole batches at the start of ``data``, and the bytes they span.

    Scanning stops at a line without newline, a line that is not a well-formed record following
    the previous one, or the end; records of a batch not completed by then are not returned.
    """
    records: list[dict[str, Any]] = []
    complete, size, offset = 0, 0, 0
    while (newline := data.find(b"\n", offset)) >= 0:
        try:
            record = json.loads(data[offset:newline])
        except ValueError:
            break
        if not _follows(records[-1] if records else None, record):
            break
        records.append(record)
        offset = newline + 1
        if record["id"] == record["batch_end"] - 1:
            complete, size = len(records), offset
    return records[:complete], size


def _follows(previous: dict[str, Any] | None, record: Any) -> bool:
    """Whether ``record`` is well formed and may come right after ``previous`` in a pool file."""
    if not isinstance(record, dict) or any(type(record.get(key)) is not int for key in RESERVED_KEYS):
        return False
    if record["id"] >= record["batch_end"]:
        return False
    if previous is None or previous["id"] == previous["batch_end"] - 1:  # a new batch starts
        return previous is None or record["id"] >= previous["batch_end"]
    return (record["id"], record["batch_end"], record["epoch"]) == (
        previous["id"] + 1,
        previous["batch_end"],
        previous["epoch"],
    )


def _append_durably(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` (created if missing) and ``fsync`` it before returning."""
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        _fsync_dir(path.parent)


def _truncate_durably(path: Path, size: int) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _is_flat(values: list[Any]) -> bool:
    """Whether a column's non-null values share one Arrow scalar type (str, bool, or int64/float number)."""
    kinds = {
        str
        if isinstance(value, str)
        else bool
        if isinstance(value, bool)
        else float
        if isinstance(value, float) or (isinstance(value, int) and -(2**63) <= value < 2**63)
        else object
        for value in values
        if value is not None
    }
    return len(kinds) <= 1 and object not in kinds


def _latest_per_family(items: Iterable[tuple[str, str, Any]], per_family: int) -> dict[str, list[Any]]:
    """The last ``per_family`` values of each family among ``(family, key, value)`` triples, oldest first, where
    a key seen again replaces its earlier value (which leaves its place in the order)."""
    latest: dict[str, dict[str, Any]] = {}
    for family, key, value in items:
        values = latest.setdefault(family, {})
        values.pop(key, None)
        values[key] = value
    return {family: list(values.values())[-per_family:] for family, values in latest.items() if per_family > 0}


def _per_item(value: Any, n: int, name: str) -> list[Any]:
    """``value`` repeated ``n`` times, or the ``n`` values of a sequence."""
    if not isinstance(value, Sequence | np.ndarray):
        return [value] * n
    if len(value) != n:
        raise ValueError(f"{len(value)} values of {name} for {n} proposals")
    return list(value)
