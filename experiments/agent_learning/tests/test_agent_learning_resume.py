"""experiments/agent_learning/agent_learning.py: an interrupted signal measurement or run continues only with the
settings it began
with."""

from __future__ import annotations

import json

import agent_learning
import pytest

SETTINGS = {"tasks_per_level": 20, "families": ["chain_sum@0-4"], "warm_start": 128}


def test_a_fresh_measurement_starts_empty_and_a_kept_one_continues(tmp_path):
    partial = tmp_path / "signal.partial.json"
    assert agent_learning.resumed(partial, SETTINGS) == {"settings": SETTINGS, "done": {}}
    kept = {"settings": SETTINGS, "done": {"0.7": {"chain_sum@0": {"solved": [1.0, 0.0]}}}}
    partial.write_text(json.dumps(kept))
    assert agent_learning.resumed(partial, SETTINGS) == kept


def test_keys_kept_under_other_settings_are_refused_and_left_in_place(tmp_path):
    partial = tmp_path / "signal.partial.json"
    partial.write_text(json.dumps({"settings": {**SETTINGS, "tasks_per_level": 8}, "done": {"1.0": {}}}))
    with pytest.raises(SystemExit, match="tasks_per_level': 8"):
        agent_learning.resumed(partial, SETTINGS)
    assert json.loads(partial.read_text())["done"] == {"1.0": {}}


def killed_on_call(n: int, function):
    """``function``, interrupted (as by a kill) on its ``n``-th call."""
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise KeyboardInterrupt
        return function(*args, **kwargs)

    return wrapper


TINY_RUN = [
    "--model", "tiny", "--warm-start", "2", "--episodes", "6", "--steps-per-call", "1", "--held-out-per-level", "1",
    "--set", "agent.num_generations=2", "agent.gradient_accumulation_steps=2", "agent.max_new_tokens=8",
    "agent.max_completion_length=32",
]  # fmt: skip


def test_a_run_killed_during_grpo_continues_from_its_last_step_group(tmp_path, monkeypatch, one_torch_thread):
    from genenv.agents.grpo import GRPOAgentTrainer

    monkeypatch.setenv("GENENV_STATE_DIR", str(tmp_path / "state"))
    runs = tmp_path / "runs"
    agent_learning.main(["run", "whole", "--runs-dir", str(runs), *TINY_RUN])

    train = GRPOAgentTrainer.train
    monkeypatch.setattr(GRPOAgentTrainer, "train", killed_on_call(3, train))
    with pytest.raises(KeyboardInterrupt):
        agent_learning.main(["run", "cut", "--runs-dir", str(runs), *TINY_RUN])
    kept = tmp_path / "state" / "agent_learning" / "runs" / "cut-s0"
    assert json.loads((kept / "progress.json").read_text())["played"] == 4 and not (runs / "cut-s0.json").exists()
    with pytest.raises(SystemExit, match="other arguments"):  # another budget is another run
        agent_learning.main(["run", "cut", "--runs-dir", str(runs), *("8" if a == "6" else a for a in TINY_RUN)])

    monkeypatch.setattr(GRPOAgentTrainer, "train", train)
    agent_learning.main(["run", "cut", "--runs-dir", str(runs), *TINY_RUN])
    whole, cut = (json.loads((runs / f"{name}-s0.json").read_text()) for name in ("whole", "cut"))
    assert cut["resumes"] == 1 and whole["resumes"] == 0 and not kept.exists()
    assert cut["episodes"] == whole["episodes"] == 6 and cut["optimizer_steps"] == whole["optimizer_steps"] == 3
    assert [b["played"] for b in cut["blocks"]] == [2, 4, 6]
    assert cut["held_out_before"] == whole["held_out_before"]


def test_a_held_out_scoring_during_a_run_is_kept_before_the_next_step(tmp_path, monkeypatch, one_torch_thread):
    from genenv.agents.grpo import GRPOAgentTrainer

    monkeypatch.setenv("GENENV_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(GRPOAgentTrainer, "train", killed_on_call(2, GRPOAgentTrainer.train))
    with pytest.raises(KeyboardInterrupt):
        agent_learning.main(["run", "scored", "--runs-dir", str(tmp_path / "runs"), "--eval-every", "2", *TINY_RUN])
    progress = json.loads((tmp_path / "state" / "agent_learning" / "runs" / "scored-s0" / "progress.json").read_text())
    assert progress["played"] == 2 and [d["played"] for d in progress["during"]] == [2]
    assert len(progress["during"][0]["scores"]) == 9


def test_progress_written_but_not_yet_swapped_in_is_the_one_kept(tmp_path):
    folder, fresh = tmp_path / "cut-s0", tmp_path / "cut-s0.new"
    fresh.mkdir()
    (folder / "trainer").mkdir(parents=True)  # the old copy, killed half removed: its progress.json already gone
    (fresh / "progress.json").write_text(json.dumps({"arguments": {"seed": 0}, "played": 64}))
    assert agent_learning.kept_progress(folder, {"seed": 0})["played"] == 64
    assert (folder / "progress.json").exists() and not fresh.exists() and not (folder / "trainer").exists()
    assert agent_learning.kept_progress(tmp_path / "other-s0", {"seed": 0}) is None


def test_dynamic_sampling_refills_a_step_from_further_tasks_of_the_pool(tmp_path, monkeypatch, one_torch_thread):
    """A random tiny model solves nothing: every group is uniform, so each step plays all its rounds, and every round
    takes tasks of the pool that no earlier round played."""
    from genenv.agents.grpo import GRPOAgentTrainer

    monkeypatch.setenv("GENENV_STATE_DIR", str(tmp_path / "state"))
    train, played = GRPOAgentTrainer.train, []

    def recorded(self, *args, **kwargs):
        metrics = train(self, *args, **kwargs)
        played.append([e.task.task_id for e in self.episodes[:: self.config.num_generations]])
        return metrics

    monkeypatch.setattr(GRPOAgentTrainer, "train", recorded)
    dynamic = ["agent.dynamic_sampling=true", "agent.dynamic_sampling_max_rounds=3"]
    agent_learning.main(["run", "dyn", "--runs-dir", str(tmp_path / "runs"), *TINY_RUN, *dynamic])
    result = json.loads((tmp_path / "runs" / "dyn-s0.json").read_text())
    assert result["optimizer_steps"] == 1 and result["episodes"] == 6  # one step: 3 rounds of 1 group of 2 episodes
    assert [block["groups/refill_rounds"] for block in result["blocks"]] == [2.0]
    assert len(played) == 1 and len(played[0]) == 3 and len(set(played[0])) == 3


def test_reach_counts_each_items_successes_and_an_interrupted_one_continues(tmp_path, monkeypatch, one_torch_thread):
    monkeypatch.setenv("GENENV_STATE_DIR", str(tmp_path / "state"))
    out = tmp_path / "reach.json"
    tiny = ["--model", "tiny", "--warm-start", "2", "--held-out-per-level", "1", "--samples", "3", "--out", str(out)]
    sampled = agent_learning.sampled_episodes
    monkeypatch.setattr(agent_learning, "sampled_episodes", killed_on_call(3, sampled))
    with pytest.raises(KeyboardInterrupt):
        agent_learning.main(["reach", *tiny])
    partial = json.loads(out.with_suffix(".partial.json").read_text())
    assert len(partial["done"]) == 2 and not out.exists()

    monkeypatch.setattr(agent_learning, "sampled_episodes", sampled)
    agent_learning.main(["reach", *tiny])
    result = json.loads(out.read_text())
    assert result["items"] == len(result["per_key"]) == 9 and not out.with_suffix(".partial.json").exists()
    counts = [item["solved"] for item in result["per_item"]]
    assert all(0 <= c <= 3 for c in counts) and all(len(item["answers"]) == 3 for item in result["per_item"])
    assert result["none"] + result["some"] + result["all"] == 9
    assert result["pass_at_k"] == sum(c > 0 for c in counts) / 9 and result["mean"] == sum(counts) / 27


def test_reach_refuses_fewer_than_one_sample_before_loading_anything(tmp_path):
    with pytest.raises(SystemExit, match="--samples must be at least 1, got 0"):
        agent_learning.main(["reach", "--model", "tiny", "--samples", "0", "--out", str(tmp_path / "reach.json")])
    assert not list(tmp_path.iterdir())


def test_a_run_on_chosen_families_holds_out_and_trains_on_them_from_the_same_warm_start(
    tmp_path, monkeypatch, one_torch_thread
):
    from genenv.agents.grpo import GRPOAgentTrainer

    monkeypatch.setenv("GENENV_STATE_DIR", str(tmp_path / "state"))
    train, played = GRPOAgentTrainer.train, []

    def recorded(self, *args, **kwargs):
        metrics = train(self, *args, **kwargs)
        played.extend(self.adapter.family(e.task) for e in self.episodes)
        return metrics

    monkeypatch.setattr(GRPOAgentTrainer, "train", recorded)
    runs = tmp_path / "runs"
    agent_learning.main(["run", "all", "--runs-dir", str(runs), *TINY_RUN])
    played.clear()
    chosen = ["basic_arithmetic@2", "chain_sum@1-2"]
    agent_learning.main(["run", "some", "--runs-dir", str(runs), "--families", *chosen, *TINY_RUN])
    result = json.loads((runs / "some-s0.json").read_text())
    assert result["families"] == chosen and len(result["held_out_before"]) == len(result["held_out_after"]) == 3
    assert set(played) <= {"basic_arithmetic@2", "chain_sum@1", "chain_sum@2"} and len(played) == 6
    (warm,) = (tmp_path / "state" / "agent_learning").glob("warm-*")  # one warm start for both
    monkeypatch.setenv("GENENV_STATE_DIR", str(tmp_path / "other"))  # the chosen families' run computes it alone
    agent_learning.main(["run", "some", "--runs-dir", str(tmp_path / "other-runs"), "--families", *chosen, *TINY_RUN])
    (alone,) = (tmp_path / "other" / "agent_learning").glob("warm-*")
    assert alone.name == warm.name
    assert (alone / "adapter_model.safetensors").read_bytes() == (warm / "adapter_model.safetensors").read_bytes()
    assert len(agent_learning.held_out_questions(result)) == 3
    with pytest.raises(SystemExit, match="--bench apibank has none"):
        agent_learning.main(["run", "api", "--bench", "apibank", "--families", "chain_sum@1", *TINY_RUN])


def test_a_run_with_longer_turns_scores_its_warm_start_afresh(tmp_path, monkeypatch, one_torch_thread):
    monkeypatch.setenv("GENENV_STATE_DIR", str(tmp_path / "state"))
    short = ["2" if a == "6" else a for a in TINY_RUN]  # one step: the warm start's scoring is what is tested
    longer = [a.replace("max_new_tokens=8", "max_new_tokens=12") for a in short]
    for name, arguments in (("short", short), ("long", longer)):
        agent_learning.main(["run", name, "--runs-dir", str(tmp_path / "runs"), *arguments])
    (warm,) = (tmp_path / "state" / "agent_learning").glob("warm-*")
    cached = sorted(p.name for p in warm.glob("held_out-*"))
    assert cached == ["held_out-greedy-max_new_tokens12-1.json", "held_out-greedy-max_new_tokens8-1.json"]


def test_a_run_shown_other_exchanges_trains_its_own_warm_start(tmp_path, monkeypatch, one_torch_thread):
    monkeypatch.setenv("GENENV_STATE_DIR", str(tmp_path / "state"))
    short = ["2" if a == "6" else a for a in TINY_RUN]
    agent_learning.main(["run", "bare", "--runs-dir", str(tmp_path / "runs"), *short])
    agent_learning.main(["run", "shown", "--runs-dir", str(tmp_path / "runs"), *short, "agent.few_shot=generic"])
    warm = sorted(p.name for p in (tmp_path / "state" / "agent_learning").glob("warm-*"))
    assert len(warm) == 2 and warm[0].replace("-few_shotgeneric", "") == warm[1]
