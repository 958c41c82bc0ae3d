"""What the machine was doing while genenv took a timing: the process's peak memory and the load average; and how many
cores other processes keep busy right now.

Every timing genenv records carries these beside it: on a shared machine a job's wall time depends on the load as
much as on the code (two jobs on two cores already slow each other; more inflate every timing many times).
:func:`cores_busy_by_others` is what the engines' busy-machine warnings read: the CPU time spent over a short
interval, not the load average, which trails by minutes (a build that just ended still shows as busy cores).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import resource
import subprocess
import time
from pathlib import Path


def peak_rss_mb(children: bool = False) -> float:
    """Peak resident memory in MiB of this process, or (``children``) of the largest of its finished child processes."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024  # KiB on Linux


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the platform has none)."""
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


def uptime() -> str:
    """``uptime``'s line: the time and the 1, 5 and 15 minute load averages (the benchmark scripts record it before
    and after every timing)."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def _cpu_jiffies(stat: str) -> tuple[int, int]:
    """The busy and total jiffies of all cores, from ``/proc/stat``'s first line (idle and iowait count as idle;
    guest time is inside user time already)."""
    fields = [int(value) for value in stat.split("\n", 1)[0].split()[1:9]]
    return sum(fields) - fields[3] - fields[4], sum(fields)


def cores_busy_by_others(interval: float = 0.3) -> float | None:
    """The cores other processes kept busy over the next ``interval`` seconds: all CPU time the system spent
    (``/proc/stat``) minus this process's own, in cores (0 to ``os.cpu_count()``); ``None`` where ``/proc/stat`` is
    missing."""
    if interval <= 0:
        raise ValueError(f"interval must be positive, got {interval}")
    stat = Path("/proc/stat")
    try:
        busy_before, total_before = _cpu_jiffies(stat.read_text())
        own_before, wall_before = os.times(), time.monotonic()
        time.sleep(interval)
        busy_after, total_after = _cpu_jiffies(stat.read_text())
        own_after, wall_after = os.times(), time.monotonic()
    except (OSError, ValueError, IndexError):
        return None
    cores = os.cpu_count() or 1
    busy = cores * (busy_after - busy_before) / max(total_after - total_before, 1)
    own = (own_after.user + own_after.system - own_before.user - own_before.system) / (wall_after - wall_before)
    return min(max(busy - own, 0.0), float(cores))


def release_freed_memory() -> bool:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``): memory freed after a large
    transient (a weight conversion) otherwise stays in this process's resident set. Returns whether any was returned
    (``False`` where the C library has no ``malloc_trim``)."""
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    trim = getattr(libc, "malloc_trim", None)
    return bool(trim(0)) if trim is not None else False
