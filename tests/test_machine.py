"""The peak memory and load that genenv records beside its timings, and the cores other processes keep busy now
(genenv.machine)."""

import ctypes
import ctypes.util
import os
import subprocess
import sys
import time

import pytest

from genenv import machine
from genenv.machine import cores_busy_by_others, load_average, peak_rss_mb, release_freed_memory


def test_peak_rss_of_this_process_and_of_a_child():
    child = "bytearray(200 * 2**20)"  # a child that touched 200 MiB
    subprocess.run([sys.executable, "-c", child], check=True)
    assert peak_rss_mb(children=True) >= 200
    assert peak_rss_mb() > 10  # this interpreter with pytest loaded


def test_load_average_is_three_non_negative_numbers():
    load = load_average()
    assert len(load) == 3 and all(value >= 0 for value in load)


def stat_line(busy: int, idle: int) -> str:
    """A /proc/stat whose all-core line spent ``busy`` jiffies in user time and ``idle`` idle."""
    return f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n"


def test_cores_busy_by_others_leaves_out_this_process(monkeypatch):
    """Over one second on 2 cores the system spent 150 of 200 jiffies busy (1.5 cores), 0.5 s of it this
    process's own: other processes kept 1.0 core busy."""
    stats = iter([stat_line(1000, 1000), stat_line(1150, 1050)])
    times = iter([os.times_result((1.0, 0.0, 0.0, 0.0, 0.0)), os.times_result((1.5, 0.0, 0.0, 0.0, 0.0))])
    clock = iter([10.0, 11.0])
    monkeypatch.setattr(machine.Path, "read_text", lambda self: next(stats))
    monkeypatch.setattr(machine.os, "times", lambda: next(times))
    monkeypatch.setattr(machine.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(machine.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(machine.time, "sleep", lambda seconds: None)
    assert cores_busy_by_others(1.0) == pytest.approx(1.0)


def test_cores_busy_by_others_without_proc_stat(monkeypatch):
    def missing(self):
        raise FileNotFoundError(self)

    monkeypatch.setattr(machine.Path, "read_text", missing)
    assert cores_busy_by_others(0.01) is None
    with pytest.raises(ValueError, match="interval"):
        cores_busy_by_others(0)


def test_cores_busy_by_others_sees_a_spinning_child():
    """A child spinning one core counts (with whatever else runs on a shared machine, it reads at least 0.5 core)."""
    spin = "import time\nend = time.time() + 5\nwhile time.time() < end: pass"
    child = subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.5)
        busy = cores_busy_by_others(1.0)
    finally:
        child.kill()
        child.wait()
    assert busy is not None and 0.5 <= busy <= (os.cpu_count() or 1)


def resident_mb() -> float:
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_release_freed_memory_returns_a_freed_heap_to_the_system():
    """100 MB of small C allocations freed under one that stays (so the heap cannot shrink from its top) stay
    resident until the release."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(2048) for _ in range(50_000)]
    for block in blocks:
        ctypes.memset(block, 1, 2048)
    for block in blocks[:-1]:
        libc.free(block)
    before = resident_mb()
    assert release_freed_memory()
    assert before - resident_mb() > 50
    libc.free(blocks[-1])
