"""experiments/agent_learning/agent_learning.py warm-inputs: each seed's warm start draws its own traces and its own
initial LoRA adapter; the same seed draws the same, and a smaller warm start trains on a prefix of a larger one's."""

from __future__ import annotations

import json

import agent_learning
import pytest

TINY = ["--model", "tiny", "--held-out-per-level", "1"]


def test_seeds_draw_their_own_traces_and_initial_adapter(tmp_path, monkeypatch, one_torch_thread):
    monkeypatch.setenv("GENENV_STATE_DIR", str(tmp_path / "state"))
    out = tmp_path / "inputs.json"
    agent_learning.main(["warm-inputs", "--seeds", "0", "1", "--warm-start", "8", "--out", str(out), *TINY])
    first = json.loads(out.read_text())
    agent_learning.main(["warm-inputs", "--seeds", "0", "--warm-start", "4", "--out", str(out), *TINY])
    again = json.loads(out.read_text())["seeds"]["0"]
    zero, one = first["seeds"]["0"], first["seeds"]["1"]
    assert len(zero["traces"]) == len(one["traces"]) == 8 and zero["traces"] != one["traces"]
    assert zero["lora_A_sha256"] != one["lora_A_sha256"] and zero["lora_A_abs_sum"] != one["lora_A_abs_sum"]
    assert zero["lora_A_matrices"] == 14 and zero["lora_B_zero"] and one["lora_B_zero"]  # 7 layers a block, 2 blocks
    assert first["pairs"]["0-1"] == {
        "shared_traces": len(set(zero["traces"]) & set(one["traces"])),
        "same_initial_adapter": False,
    }
    assert again["traces"] == zero["traces"][:4]  # the same seed's shuffle: 4 traces are a prefix of its 8
    assert again["lora_A_sha256"] == zero["lora_A_sha256"]  # and the same initial adapter


def _warm(tmp_path, stem: str, before: list[float], evaluation: str = "mean4") -> None:
    (tmp_path / f"{stem}.json").write_text(json.dumps({"held_out_before": before, "eval": evaluation}))


def test_warm_scores_tell_one_agent_rescored_from_agents_that_differ(tmp_path, capsys):
    n = 153  # 17 items a family-level, FAMILIES' nine
    half = [0.5] * n  # every item solved by 2 of 4 samples
    _warm(tmp_path, "a-s1", half)
    _warm(tmp_path, "a-s2", [0.75 if i % 2 else 0.25 for i in range(n)])  # 1 or 3 of 4: as one agent's resampling
    agent_learning.main(["warm-scores", "a-s1", "a-s2", "--draws", "2000", "--runs-dir", str(tmp_path)])
    same = json.loads(capsys.readouterr().out)
    assert same["solved"] == {"a-s1": 2 * n, "a-s2": 77 + 3 * 76} and same["items_that_differ"] == {"a-s1 a-s2": n}
    assert same["per_family_level"]["basic_arithmetic@0"] == {"a-s1": 34, "a-s2": 9 + 3 * 8}
    assert same["one_agent_test"]["p"] > 0.05 and same["one_agent_test"]["items_with_spread"] == n
    _warm(tmp_path, "b-s2", [1.0 if i % 2 else 0.0 for i in range(n)])  # every item at 0 or 4 of 4: another agent
    agent_learning.main(["warm-scores", "a-s1", "b-s2", "--draws", "2000", "--runs-dir", str(tmp_path)])
    other = json.loads(capsys.readouterr().out)
    assert other["solved"] == {"a-s1": 2 * n, "b-s2": 4 * 76} and other["one_agent_test"]["p"] == 0.0
    _warm(tmp_path, "g-s3", half, evaluation="greedy")
    with pytest.raises(SystemExit, match="mean of 4"):
        agent_learning.main(["warm-scores", "a-s1", "g-s3", "--runs-dir", str(tmp_path)])
