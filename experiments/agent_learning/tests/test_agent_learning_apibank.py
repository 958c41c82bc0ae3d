"""experiments/agent_learning/agent_learning.py on API-Bank: the learning run's held-out samples, officially scored;
warm start kept."""

from __future__ import annotations

import json

import agent_learning
from conftest import data_dir

TINY = [
    "--model", "tiny", "--seed", "3", "--warm-start", "2", "--episodes", "4", "--steps-per-call", "1",
    "--held-out-limit", "3",
    "--set", "agent.num_generations=2", "agent.gradient_accumulation_steps=2", "agent.max_new_tokens=8",
    "agent.max_completion_length=32", "agent.max_turns=2",
]  # fmt: skip


def test_an_apibank_run_scores_the_learning_runs_samples_and_shares_its_warm_start(
    tmp_path, monkeypatch, one_torch_thread
):
    data_dir("apibank")
    monkeypatch.setenv("GENENV_STATE_DIR", str(tmp_path / "state"))
    runs = tmp_path / "runs"
    agent_learning.main(["run", "first", "--bench", "apibank", "--runs-dir", str(runs), *TINY])
    first = json.loads((runs / "first-s3.json").read_text())
    assert first["bench"] == "apibank" and first["answer_format"] is None
    assert first["agent"]["few_shot"] == "own" and first["agent"]["max_turns"] == 2  # --set over the bench's 4
    assert len(first["held_out_before"]) == len(first["held_out_after"]) == 3
    assert all(score in (0.0, 1.0) for score in first["held_out_before"] + first["held_out_after"])
    assert first["episodes"] >= 4 and first["optimizer_steps"] >= 1
    warm = list((tmp_path / "state" / "agent_learning").glob("warm-tiny-apibank-n2-*-s3"))
    assert len(warm) == 1 and (warm[0] / "held_out-greedy-max_new_tokens8-max_turns2-level-1-api-3.json").exists()

    agent_learning.main(["run", "second", "--bench", "apibank", "--runs-dir", str(runs), *TINY])
    second = json.loads((runs / "second-s3.json").read_text())
    assert second["held_out_before"] == first["held_out_before"]  # the same warm start, scored once


def test_a_smaller_held_out_set_is_the_start_of_the_larger_one():
    """Held-out sets of any size come in one fixed order, so 100 samples are the learning run's whatever the seed."""
    from genenv.benchmarks.base import get_benchmark
    from genenv.coevolution import held_out_tasks

    data_dir("apibank")
    adapter = get_benchmark("apibank")
    hundred = held_out_tasks(adapter, "level-1-api", 100)
    three = held_out_tasks(adapter, "level-1-api", 3)
    everything = adapter.load_tasks("level-1-api")
    assert len(hundred) == 100 and len({t.task_id for t in hundred}) == 100
    assert [t.task_id for t in three] == [t.task_id for t in hundred[:3]]
    assert [t.task_id for t in hundred] != [t.task_id for t in everything[:100]]  # shuffled, not the split's head
