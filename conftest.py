"""Shared fixtures of the library's tests (tests/) and of the experiments' tests (experiments/*/tests/): where the
benchmark data is, the tiny random policy, a run lock held by a live process. Test modules import its helpers as
``conftest``; it is the only conftest.py, so that name means this file under ``pytest -n N`` and for one file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from local_server import chat_server, llama_server, tiny_model_dir, transformers_server  # noqa: F401 (fixtures)

REPO = Path(__file__).resolve().parent
DATA_ROOT = Path(os.environ.get("GENENV_DATA_DIR") or REPO.parent / "shared" / "data")
if DATA_ROOT.is_dir():
    os.environ.setdefault("GENENV_DATA_DIR", str(DATA_ROOT))
if os.environ.get("PYTEST_XDIST_WORKER"):
    # `pytest -n N`: each worker (and the trainers its tests start) gets its share of the cores, set before torch
    # loads; OpenMP threads that outnumber the cores spin-wait and run many times slower (hf_contention.json)
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // _workers)))


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a child Python process: this one's, with the repository first on ``PYTHONPATH`` (what
    was there stays, e.g. packages installed with ``pip --target``)."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


#: why the ALFWorld tests skip where its extra is missing, and the line that installs it
ALFWORLD_MISSING = (
    "ALFWorld is the opt-in alfworld extra (it compiles fast-downward and jericho): "
    "GENENV_EXTRAS=alfworld bash scripts/setup.sh"
)


def data_dir(benchmark: str) -> Path:
    """The benchmark's data folder; skips the test when it is not on this machine."""
    path = DATA_ROOT / benchmark
    if not path.is_dir():
        pytest.skip(f"no {benchmark} data at {path} (set GENENV_DATA_DIR)")
    return path


@contextmanager
def lock_held_by_live_process(run_dir: Path) -> Iterator[int]:
    """``run_dir``'s run lock, held as a trainer holds it by another live process of this host; yields its pid."""
    from genenv.run_lock import LOCK_FILE

    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / LOCK_FILE).write_text(json.dumps({"pid": holder.pid, "host": os.uname().nodename}))
        yield holder.pid
    finally:
        holder.kill()
        holder.wait()


@pytest.fixture
def one_torch_thread() -> Iterator[None]:
    """torch on one thread for the test (engines compared token by token, and kind to a shared machine)."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="session")
def tiny_policy():
    from genenv.llm.models import build_tiny_policy

    return build_tiny_policy(seed=0)


@pytest.fixture(scope="module")
def two_epoch_run(tmp_path_factory):
    """A finished 2-epoch co-evolution run of the tiny model on API-Bank (needs its data)."""
    from test_train import tiny_config  # (test_train imports this module)

    from genenv.coevolution import CoEvolutionTrainer

    run_dir = tmp_path_factory.mktemp("run")
    CoEvolutionTrainer(tiny_config(run_dir, epochs=2)).train()
    return run_dir


def random_lora(model, std: float = 2.0):
    """``model`` with LoRA adapters on q_proj and v_proj whose B matrices are random (seeded): weights an update
    moved, the base model untouched."""
    import torch
    from peft import LoraConfig, get_peft_model

    adapted = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():
        for name, weight in adapted.named_parameters():
            if "lora_B" in name:
                weight.normal_(0, std, generator=torch.Generator().manual_seed(0))
    return adapted


def two_step_grpo_config(output_dir, **overrides):
    """TRL's ``GRPOConfig`` for two CPU steps of the tiny model with an environment: 4 rollouts a step, 2 per task."""
    from trl import GRPOConfig

    settings = dict(
        output_dir=str(output_dir),
        use_cpu=True,
        bf16=False,
        report_to=[],
        max_steps=2,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=96,
        max_tool_calling_iterations=2,
        logging_steps=1,
        disable_tqdm=True,
        save_strategy="no",
        seed=0,
    )
    return GRPOConfig(**{**settings, **overrides})
