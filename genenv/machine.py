"""What the machine was doing while genenv took a timing: the process's peak memory and the load average.

Every timing genenv records carries these beside it: on a shared machine a job's wall time depends on the load as
much as on the code (two jobs on two cores already slow each other; more inflate every timing many times).
"""

from __future__ import annotations

import os
import resource
import subprocess


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
