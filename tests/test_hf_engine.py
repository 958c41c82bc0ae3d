"""The HF engine's warning for a busy machine (spin-waiting OpenMP threads on shared cores)."""

from __future__ import annotations

import logging

import pytest

from genenv.llm.engines import hf


@pytest.fixture
def machine(monkeypatch):
    """Set the thread count, 1-minute load, this process's own CPU use and the wait policy; the check re-armed."""

    def set_machine(threads: int, load: float, own: float = 0.0, policy: str | None = None) -> bool:
        monkeypatch.setattr(hf.torch, "get_num_threads", lambda: threads)
        monkeypatch.setattr(hf.os, "getloadavg", lambda: (load, load, load))
        monkeypatch.setattr(hf.os, "cpu_count", lambda: 2)
        monkeypatch.setattr(hf, "_own_cpu_rate", lambda: own)
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
        assert machine(threads=2, load=2.1)
    assert "OMP_NUM_THREADS=1" in caplog.text and "OMP_WAIT_POLICY=PASSIVE" in caplog.text


def test_silent_when_idle_single_threaded_passive_or_busy_with_its_own_work(machine, caplog):
    with caplog.at_level(logging.WARNING, logger="genenv.llm.engines.hf"):
        assert not machine(threads=2, load=0.3)  # idle machine
        assert not machine(threads=1, load=3.0)  # one thread: nothing spins
        assert not machine(threads=2, load=3.0, policy="passive")  # threads sleep at once
        assert not machine(threads=2, load=2.0, own=1.9)  # the load is this process's own work
    assert caplog.text == ""


def test_own_cpu_rate_is_a_plausible_share_of_the_cores():
    assert 0.0 <= hf._own_cpu_rate() <= 64
