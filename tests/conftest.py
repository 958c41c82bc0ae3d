"""Shared fixtures: where the benchmark data is, and the tiny random policy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA_ROOT = Path(os.environ.get("GENENV_DATA_DIR") or REPO.parent / "shared" / "data")
if DATA_ROOT.is_dir():
    os.environ.setdefault("GENENV_DATA_DIR", str(DATA_ROOT))


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python process: this one's, with the repository first on ``PYTHONPATH`` (what
    was there stays, e.g. packages installed with ``pip --target``)."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def data_dir(benchmark: str) -> Path:
    """The benchmark's data folder; skips the test when it is not on this machine."""
    path = DATA_ROOT / benchmark
    if not path.is_dir():
        pytest.skip(f"no {benchmark} data at {path} (set GENENV_DATA_DIR)")
    return path


@pytest.fixture(scope="session")
def tiny_policy():
    from genenv.agents.models import build_tiny_policy

    return build_tiny_policy(seed=0)


@pytest.fixture(scope="module")
def two_epoch_run(tmp_path_factory):
    """A finished 2-epoch co-evolution run of the tiny model on API-Bank (needs its data)."""
    from test_train import tiny_config  # (test_train imports this module)

    from genenv.coevolution import CoEvolutionTrainer

    run_dir = tmp_path_factory.mktemp("run")
    CoEvolutionTrainer(tiny_config(run_dir, epochs=2)).train()
    return run_dir
