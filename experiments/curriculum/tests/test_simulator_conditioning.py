"""experiments/curriculum/simulator_conditioning.py: a fresh RWR adapter trained on runs' D_env as the runs' epochs
trained it."""

import json
import math

import pytest
import simulator_conditioning
import torch

from genenv.curriculum import RWRConfig, RWRTrainer
from genenv.llm.models import build_tiny_policy
from genenv.pools import TaskPool

PROMPT = [{"role": "user", "content": "Write one task as JSON."}]


def _proposal(raw: str, task: dict | None) -> dict:
    return {"family": "add", "messages": PROMPT, "raw": raw, "task": task, "reject_reason": "" if task else "bad"}


def test_replay_trains_once_per_committed_epoch_on_the_accepted_generations_up_to_it(tmp_path):
    pool = TaskPool(tmp_path / "pools")
    task = {"task_id": "t", "benchmark": "toy", "prompt": "p"}
    pool.add_proposals([_proposal('{"a": 1}', task), _proposal("??", None)], 0, 1.0, 2.7, True)
    pool.add_proposals([_proposal('{"a": 9}', task)], 0, 0.0, 1.0, False)  # outside the band: never trained on
    pool.commit(0)
    pool.add_proposals([_proposal('{"a": 2}', task)], 1, 0.5, 1.6, True)
    pool.commit(1)
    pool.add_proposals([_proposal('{"a": 3}', task)], 2, 0.5, 1.6, True)  # epoch 2 never finished
    torch.manual_seed(0)
    trainer = RWRTrainer(build_tiny_policy(seed=0), RWRConfig(learning_rate=1e-2, batch_size=1))
    updates = simulator_conditioning.replay_rwr(trainer, [tmp_path])
    assert [u["examples"] for u in updates] == [1, 2] and [u["steps"] for u in updates] == [1, 2]
    assert trainer.kl_to_reference(pool.rwr_examples(1)) > 0.0


def test_replay_refuses_a_folder_without_pools_or_without_a_committed_epoch(tmp_path):
    with pytest.raises(SystemExit, match="not a run folder"):
        simulator_conditioning.replay_rwr(RWRTrainer(build_tiny_policy(seed=0), RWRConfig()), [tmp_path / "typo"])
    assert not (tmp_path / "typo").exists()
    TaskPool(tmp_path / "pools").add_proposals([_proposal('{"a": 1}', {"task_id": "t"})], 0, 1.0, 2.7, True)
    with pytest.raises(SystemExit, match="no committed epoch"):
        simulator_conditioning.replay_rwr(RWRTrainer(build_tiny_policy(seed=0), RWRConfig()), [tmp_path])


def _two_runs(tmp_path):
    """Run a: epochs 0 and 1 committed, one accepted generation each; run b: epoch 0 committed with two, and an
    uncommitted epoch 1 with one more."""
    task = {"task_id": "t", "benchmark": "toy", "prompt": "p"}
    a, b = TaskPool(tmp_path / "a" / "pools"), TaskPool(tmp_path / "b" / "pools")
    a.add_proposals([_proposal('{"a": 1}', task)], 0, 0.5, 1.6, True)
    a.commit(0)
    a.add_proposals([_proposal('{"a": 2}', task)], 1, 0.5, 1.6, True)
    a.commit(1)
    b.add_proposals([_proposal('{"b": 1}', task), _proposal('{"b": 2}', task)], 0, 0.5, 1.6, True)
    b.commit(0)
    b.add_proposals([_proposal('{"b": 3}', task)], 1, 0.5, 1.6, True)  # b's epoch 1 never finished
    return [tmp_path / "a", tmp_path / "b"]


def test_replay_pools_the_runs_accepted_generations_per_epoch_leaving_out_unfinished_epochs(tmp_path):
    trainer = RWRTrainer(build_tiny_policy(seed=0), RWRConfig(learning_rate=1e-2, batch_size=1))
    updates = simulator_conditioning.replay_rwr(trainer, _two_runs(tmp_path))
    assert [u["examples"] for u in updates] == [3, 4]  # epoch 0: a 1 + b 2; epoch 1: a 2 + b 2 (not b's unfinished)


def test_replay_once_makes_one_update_on_every_committed_accepted_generation(tmp_path):
    trainer = RWRTrainer(build_tiny_policy(seed=0), RWRConfig(learning_rate=1e-2, batch_size=1))
    updates = simulator_conditioning.replay_rwr(trainer, _two_runs(tmp_path), once=True)
    assert [u["examples"] for u in updates] == [4] and [u["steps"] for u in updates] == [4]


def _conditioning_file(path, written, history, requested=("f@0", "f@1", "f@2"), r_env=None):
    outputs = [
        {"family": r, "raw": "{}", "reject_reason": ""} | ({"written": w} if w else {})
        for r, w in zip(requested, written)
    ]
    arm = {"outputs": outputs, "levels_written": {}}
    r_env = r_env or {"alpha": 0.5, "beta": 10.0}
    path.write_text(json.dumps({"history": history, "r_env": r_env, "arms": {"history": arm}}))
    return path


def test_compare_scores_requested_and_written_keys_by_the_reward_their_success_would_earn(tmp_path):
    history = {"f@0": 1.0, "f@1": 0.5, "f@2": 0.0}
    first = _conditioning_file(tmp_path / "a.json", ["f@0", "f@1", None], history)
    second = _conditioning_file(tmp_path / "b.json", ["f@1", "f@1", "f@1"], history)
    result = simulator_conditioning.compare([first, second], "history")["files"]
    low = math.exp(-2.5)
    assert result[str(first)]["r_env_requested"] == pytest.approx((low + 1.0) / 2)  # the valid draws' requests
    assert result[str(first)]["r_env_written"] == pytest.approx((low + 1.0) / 2)
    assert result[str(second)]["r_env_written"] == pytest.approx(1.0)
    paired = result[str(second)]["r_env_written_minus_first"]
    assert paired["n"] == 2 and paired["mean"] == pytest.approx((1.0 - low) / 2)
    other = _conditioning_file(tmp_path / "c.json", ["f@0"] * 3, history, requested=("f@0", "f@0", "f@0"))
    with pytest.raises(SystemExit, match="requested keys differ"):
        simulator_conditioning.compare([first, other], "history")
    steeper = _conditioning_file(tmp_path / "d.json", ["f@0", "f@1", None], history, r_env={"alpha": 0.5, "beta": 20.0})
    with pytest.raises(SystemExit, match="R_env"):
        simulator_conditioning.compare([first, steeper], "history")
    written = simulator_conditioning.compare([steeper], "history")["files"][str(steeper)]["r_env_written"]
    assert written == pytest.approx((math.exp(-5.0) + 1.0) / 2)
