"""experiments/curriculum/agent_update_probe.py: the paired held-out table and how far the LoRA update moved."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import agent_update_probe
import torch
from safetensors.torch import save_file


def _adapter(folder: Path, b: torch.Tensor) -> None:
    """A one-module LoRA checkpoint whose update ``B @ A`` is ``b`` (A is the identity)."""
    (folder / "agent").mkdir(parents=True)
    key = "base_model.model.layers.0.q_proj.lora_{}.weight"
    save_file({key.format("A"): torch.eye(2), key.format("B"): b}, str(folder / "agent" / "adapter_model.safetensors"))


def _run(folder: Path, curriculum: str, scores: list[float], overrides: list[str], in_band: int = 1) -> None:
    warm = {"score": 0.5, "task_scores": [1.0, 1.0, 0.0, 0.0]}
    epoch = {"curriculum": curriculum, "seed": 0, "fresh_tasks": 4}
    records = [
        {**epoch, "epoch": 0, "in_band": 1, "validation_warm_start": warm},
        {**epoch, "epoch": 1, "in_band": in_band, "validation": {"score": sum(scores) / 4, "task_scores": scores}},
    ]
    folder.mkdir(parents=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (folder / ".hydra").mkdir()
    (folder / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))


def test_report_pairs_the_probe_with_the_experiments_run(tmp_path, monkeypatch):
    monkeypatch.setattr(agent_update_probe, "PROBES", tmp_path / "probes")
    monkeypatch.setattr(agent_update_probe, "EXPERIMENT_RUNS", tmp_path / "experiment")
    run_dir = tmp_path / "probes" / "random-s0-skip"
    _run(run_dir, "random", [1.0, 1.0, 1.0, 0.0], ["agent.skip_zero_advantage_steps=true", "curriculum=random"], 3)
    _adapter(run_dir / "checkpoints" / "warm-start", torch.tensor([[3.0, 0.0], [0.0, 4.0]]))
    _adapter(run_dir / "checkpoints" / "epoch-0001", torch.tensor([[3.0, 0.0], [0.0, 4.5]]))
    _run(tmp_path / "experiment" / "reasoning_gym" / "random-s0", "random", [1.0, 0.0, 0.0, 0.0], [])

    text = agent_update_probe.report(argparse.Namespace(names=["random-s0-skip"], testbed="reasoning_gym"))
    held_out, in_band = text.split("Fresh tasks inside the band")
    rows = [line.split(" | ") for line in held_out.splitlines() if line.startswith("| random-s0")]
    experiment, probed = rows
    assert experiment[3:5] == ["0.250", "0 / 1"]  # one item down against the warm start
    assert probed[1] == "agent.skip_zero_advantage_steps=true"
    assert probed[3:5] == ["0.750", "1 / 0"]
    assert probed[5] == "+0.500 (0.289)"  # differences (0, 1, 1, 0): mean 0.5, s.e. 0.577 / 2
    assert probed[6] == "0.10 |"  # |(0, 0.5)| / |(3, 4)| = 0.5 / 5
    assert [line for line in in_band.splitlines() if line.startswith("| random-s0")] == [
        "| random-s0-skip | 1/4, 3/4 | 3/4 = 0.750 |",
        "| random-s0 | 1/4, 1/4 | 1/4 = 0.250 |",  # the experiment's run of the probe's curriculum, Random too
    ]
