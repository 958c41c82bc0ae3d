"""benchmarks/in_band_by_level.py: outcomes per written level, the level-choice ceiling, requested vs written."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from genenv.pools import TaskPool, TracePool

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def in_band(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    spec = importlib.util.spec_from_file_location("in_band_by_level", REPO / "benchmarks/in_band_by_level.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _task(family: str, level: int, expression: str) -> dict:
    return {
        "task_id": f"{family}@{level}-{expression}",
        "gold": {"family": family, "level": level, "expression": expression},
    }


def _epoch(run: Path, epoch: int, tasks: list[tuple[str, dict, list[float]]], *, commit: bool = True) -> None:
    """One epoch's generations (requested key, task) and the agent's attempts at each, written as the trainer does."""
    traces, pool = TracePool(run / "pools"), TaskPool(run / "pools")
    records = [{"source": "on_policy", "task": task, "reward": r} for _, task, rewards in tasks for r in rewards]
    records += [{"source": "expert", "task": task, "reward": 1.0} for _, task, _ in tasks]  # never counted
    traces.append(records, epoch)
    pool.add_proposals(
        [{"family": f, "messages": [], "raw": "", "task": t} for f, t, _ in tasks], epoch, 0.5, 1.0, True
    )
    if commit:
        traces.commit(epoch)
        pool.commit(epoch)


def test_shares_per_level_the_ceiling_and_requested_levels(in_band, tmp_path):
    root = tmp_path / "reasoning_gym_expressions"
    # band |p - 0.5| <= 0.4 over 4 attempts: 1-3 successes are in it
    _epoch(root / "genenv-s0", 0, [
        ("chain_sum@1", _task("chain_sum", 1, "1 + 2"), [1, 1, 1, 1]),      # all
        ("chain_sum@1", _task("chain_sum", 2, "10 + 20"), [1, 0, 0, 0]),    # band, written above the request
        ("products@2", _task("products", 1, "3 * 4"), [0, 0, 0, 0]),       # none, written below
    ])  # fmt: skip
    _epoch(root / "genenv-s0", 1, [
        ("chain_sum@2", _task("chain_sum", 2, "10 + 20"), [0, 0, 0, 0]),    # met before: not counted again
        ("chain_sum@2", _task("chain_sum", 2, "11 + 22"), [1, 1, 0, 0]),    # band
    ])  # fmt: skip
    _epoch(root / "genenv-s0", 2, [("products@1", _task("products", 1, "5 * 6"), [1, 1, 1, 1])], commit=False)
    _epoch(root / "random-s0", 0, [
        ("products@1", _task("products", 1, "7 * 8"), [1, 0, 1, 0]),       # band
        ("chain_sum@2", _task("chain_sum", 2, "12 + 23"), [0, 0, 0, 0]),    # none
    ])  # fmt: skip

    assert in_band.first_attempts(root / "genenv-s0") == [
        ("chain_sum@1", 1.0), ("chain_sum@2", 0.25), ("products@1", 0.0), ("chain_sum@2", 0.5)
    ]  # fmt: skip
    offsets, distinct, count = in_band.level_requests(root / "genenv-s0")
    assert sorted(offsets) == [-1, 0, 0, 0, 1] and (distinct, count) == (4, 5)

    table = in_band.build("reasoning_gym_expressions", tmp_path)
    # pooled chain_sum@2: genenv 0.25, 0.5 and random 0.0 -> 3 tasks, 1/3 none, 2/3 in the band
    assert "| chain_sum@2 | 2 | 0.00 / 0.00 / 1.00 | 1 | 1.00 / 0.00 / 0.00 | 3 | 0.33 / 0.00 / 0.67 |" in table
    assert "| genenv (its own level mix, 4 tasks) | 0.500 |" in table
    assert "| random (its own level mix, 2 tasks) | 0.500 |" in table
    # keys: chain_sum@1 0, chain_sum@2 2/3, products@1 1/2 -> uniform 0.389; best per family 2/3 and 1/2 -> 0.583
    assert "| uniform over the 3 written keys | 0.389 |" in table
    assert "(chain_sum@2 0.67, products@1 0.50), families equally | 0.583 |" in table
    assert "| genenv | 5 | 0.60 | 0.20 | 0.20 | +0.00 | 0.80 |" in table  # '10 + 20' written twice
