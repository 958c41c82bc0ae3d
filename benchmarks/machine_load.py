"""The machine's load, recorded next to every timing the benchmark scripts write."""

from __future__ import annotations

import subprocess


def uptime() -> str:
    """``uptime``'s line: the time and the 1, 5 and 15 minute load averages."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
