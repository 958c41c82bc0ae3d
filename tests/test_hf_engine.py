"""The HF engine's warning for a busy machine (spin-waiting OpenMP threads on shared cores)."""

from __future__ import annotations

import logging
import os

import pytest

from genenv.llm.engines import hf


@pytest.fixture
def machine(monkeypatch):
    """Set the thread count, the cores other processes keep busy now, the 1-minute load average and the wait policy;
    the check re-armed."""

    def set_machine(threads: int, others: float, policy: str | None = None, load: float | None = None) -> bool:
        monkeypatch.setattr(hf.torch, "get_num_threads", lambda: threads)
        monkeypatch.setattr(hf, "cores_busy_by_others", lambda: others)
        monkeypatch.setattr(hf.os, "cpu_count", lambda: 2)
        load = others if load is None else load
        monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
        if policy is None:
            monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
        else:
            monkeypatch.setenv("OMP_WAIT_POLICY", policy)
        hf.warn_if_contended.cache_clear()
        return hf.warn_if_contended()

    yield set_machine
    hf.warn_if_contended.cache_clear()


def test_warns_when_other_jobs_keep_the_cores_busy(machine, caplog):
    with caplog.at_level(logging.WARNING, logger="genenv.llm.engines.hf"):
        assert machine(threads=2, others=1.9)
    assert "OMP_NUM_THREADS=1" in caplog.text and "OMP_WAIT_POLICY=PASSIVE" in caplog.text


def test_silent_when_idle_single_threaded_or_passive(machine, caplog):
    with caplog.at_level(logging.WARNING, logger="genenv.llm.engines.hf"):
        assert not machine(threads=2, others=0.3)  # idle machine
        assert not machine(threads=1, others=2.0)  # one thread: nothing spins
        assert not machine(threads=2, others=2.0, policy="passive")  # threads sleep at once
    assert caplog.text == ""


def test_silent_after_a_build_whose_load_average_lingers(machine, caplog):
    """A compile that just ended leaves the 1-minute load average near 2 for a minute; the cores are idle now."""
    with caplog.at_level(logging.WARNING, logger="genenv.llm.engines.hf"):
        assert not machine(threads=2, others=0.05, load=2.4)
    assert caplog.text == ""


def test_the_check_reads_the_cores_busy_now(monkeypatch):
    monkeypatch.setattr(hf.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(hf, "cores_busy_by_others", lambda: 1.2)
    assert hf.cores_held_by_others(2) == 1.2  # 0.8 idle cores for 2 spinning threads
    monkeypatch.setattr(hf, "cores_busy_by_others", lambda: None)  # no /proc/stat
    assert hf.cores_held_by_others(2) is None
