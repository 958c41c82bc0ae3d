"""One trainer per run folder: an exclusive lock file holding the owner's pid and host.

Two trainers writing one run folder would interleave their pool records and checkpoints and leave a run that can
never be resumed, so the second one stops at once and names the holder. A lock left by a process that died on this
host (its pid no longer runs) is stale and taken over with a warning; a lock from another host cannot be checked
from here and is never taken over (delete ``run.lock`` by hand once that trainer is gone).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

LOCK_FILE = "run.lock"


class RunDirLockedError(RuntimeError):
    """Another trainer holds the run folder."""


class RunDirNotWritableError(PermissionError):
    """The run folder cannot be created or written (permissions, a read-only file system)."""


_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


def _not_writable(folder: Path, error: OSError) -> RunDirNotWritableError:
    return RunDirNotWritableError(
        f"{folder} is not writable ({error.strerror}): a run folder must be writable; choose another run_dir "
        "or fix its permissions"
    )


def make_run_dir(run_dir: str | os.PathLike[str]) -> Path:
    """Create ``run_dir`` (and its parents) if needed; a clear error when that is not allowed."""
    folder = Path(run_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        if error.errno in _NOT_WRITABLE:
            raise _not_writable(folder, error) from None
        raise
    return folder


class RunLock:
    """The exclusive lock of one run folder; :meth:`acquire` then :meth:`release` (or use it as a context)."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.path = Path(run_dir) / LOCK_FILE
        self.held = False

    def acquire(self) -> None:
        """Take the lock, or raise :class:`RunDirLockedError` naming its live holder."""
        me = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        for _ in range(20):
            try:
                descriptor = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is None and self._just_created():
                    time.sleep(0.5)  # its owner is still writing it
                    continue
                if holder is not None and self._alive(holder):
                    raise RunDirLockedError(
                        f"{self.path.parent} is in use by another trainer (pid {holder['pid']} on host "
                        f"{holder['host']}, lock file {self.path}); wait for it to finish or choose another run_dir"
                    ) from None
                logger.warning("%s: taking over a stale lock (%s)", self.path, holder or "unreadable")
                self.path.unlink(missing_ok=True)
                continue
            except OSError as error:
                if error.errno in _NOT_WRITABLE:
                    raise _not_writable(self.path.parent, error) from None
                raise
            with os.fdopen(descriptor, "w", encoding="utf-8") as out:
                out.write(json.dumps(me))
                out.flush()
                os.fsync(out.fileno())
            self.held = True
            return
        raise RunDirLockedError(f"{self.path}: could not take the lock (another trainer keeps taking it)")

    def release(self) -> None:
        """Drop the lock if this object holds it (and the file is still ours)."""
        if self.held:
            holder = self._holder()
            if holder is not None and holder.get("pid") == os.getpid():
                self.path.unlink(missing_ok=True)
            self.held = False

    def live_holder(self) -> dict[str, Any] | None:
        """The record (pid, host, since) of the live trainer that holds the folder, or None when it is free or its
        lock is stale; what :meth:`acquire` would stop on, asked without taking the lock."""
        holder = self._holder()
        return holder if holder is not None and self._alive(holder) else None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _holder(self) -> dict[str, Any] | None:
        try:
            holder = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(holder, dict) or not isinstance(holder.get("pid"), int):
            return None
        return holder

    def _just_created(self) -> bool:
        try:
            return time.time() - self.path.stat().st_mtime < 5.0
        except OSError:
            return False

    @staticmethod
    def _alive(holder: dict[str, Any]) -> bool:
        """Whether the holder may still run: any other host's lock counts as live; on this host, its pid must run
        and be another process (an earlier trainer of this very process that did not finish left it behind)."""
        if holder.get("host") != socket.gethostname():
            return True
        if holder["pid"] == os.getpid():
            return False
        try:
            os.kill(holder["pid"], 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
