"""genenv.evaluate: official scoring of a played split, journalled so that an interrupted evaluation continues."""

import json

import pytest
from hydra import compose, initialize_config_dir
from toy_benchmark import ToyAdapter

from genenv.agents.agent import Agent
from genenv.config import CONFIG_DIR
from genenv.evaluate import CONFIG_FILE, JOURNAL, claim_output_dir, evaluate, evaluate_with_journal, run
from genenv.llm.generation import SamplingConfig


class CountingAgent(Agent):
    """The tiny policy's agent, counting the tasks it plays; ``fail_at``: the rollout call that raises (a kill)."""

    def __init__(self, policy, fail_at=None):
        super().__init__(policy, SamplingConfig(max_new_tokens=6), few_shot=False)
        self.played, self.calls, self.fail_at = [], 0, fail_at

    def rollout(self, envs, tasks, seed=None):
        if self.calls == self.fail_at:
            raise KeyboardInterrupt("killed")
        self.calls += 1
        self.played += [task.task_id for task in tasks]
        return super().rollout(envs, tasks, seed=seed)


def test_an_interrupted_evaluation_continues_from_its_journal(tiny_policy, tmp_path):
    adapter, journal = ToyAdapter(), tmp_path / JOURNAL
    tasks = adapter.load_tasks("test")
    summary, episodes = evaluate(adapter, CountingAgent(tiny_policy), tasks, batch_size=2, max_turns=2)
    with pytest.raises(KeyboardInterrupt):
        evaluate_with_journal(adapter, CountingAgent(tiny_policy, fail_at=1), tasks, journal, batch_size=2, max_turns=2)
    first_batch = [json.loads(line)["task_id"] for line in journal.read_text().splitlines()]
    assert len(first_batch) == 2
    with journal.open("a") as file:
        file.write('{"task_id": "' + tasks[-1].task_id)  # a write torn by the kill
    agent = CountingAgent(tiny_policy)
    continued, records = evaluate_with_journal(adapter, agent, tasks, journal, batch_size=2, max_turns=2)
    assert sorted(agent.played) == sorted(set(t.task_id for t in tasks) - set(first_batch))  # the torn one again
    assert continued == summary
    assert [r["task_id"] for r in records] == [t.task_id for t in tasks]
    assert [r["actions"] for r in records] == [[turn.action for turn in e.trajectory.turns] for e in episodes]
    assert [r["score"] for r in records] == [e.info["score"] for e in episodes]
    assert len(journal.read_text().splitlines()) == len(tasks)


def test_a_journal_of_other_tasks_is_refused(tiny_policy, tmp_path):
    adapter, journal = ToyAdapter(), tmp_path / JOURNAL
    evaluate_with_journal(adapter, CountingAgent(tiny_policy), adapter.load_tasks("train")[:2], journal, max_turns=1)
    before = journal.read_bytes()
    with pytest.raises(ValueError, match="another evaluation"):
        evaluate_with_journal(adapter, CountingAgent(tiny_policy), adapter.load_tasks("test"), journal, max_turns=1)
    assert journal.read_bytes() == before


def _config(out, *overrides):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose("evaluate", overrides=["+bench=reasoning_gym", "model=tiny", "engine=hf", "max_new_tokens=4",
                                              f"output_dir={out}", *overrides])  # fmt: skip


def test_the_command_continues_in_its_output_dir_and_refuses_other_settings(tmp_path):
    out = tmp_path / "eval"
    run(_config(out, "limit=3"))
    results = json.loads((out / "results.json").read_text())
    assert results["n_tasks"] == 3 and len(results["episodes"]) == 3
    assert [e["score"] for e in results["episodes"]] == [e["reward"] for e in results["episodes"]]
    cost = results["cost"]
    assert not cost["continued"] and cost["seconds_per_task"] == pytest.approx(cost["seconds"] / 3)
    assert cost["seconds"] > 0 and cost["peak_rss_mb"] > 0
    journal = (out / JOURNAL).read_text()
    run(_config(out, "limit=3"))  # finished: nothing is played again, the same results are written
    assert (out / JOURNAL).read_text() == journal
    again = json.loads((out / "results.json").read_text())
    assert again["metrics"] == results["metrics"]
    assert again["cost"]["continued"] and again["cost"]["seconds_per_task"] is None
    with pytest.raises(ValueError, match="limit differ"):
        run(_config(out, "limit=4"))
    assert (out / JOURNAL).read_text() == journal and json.loads((out / CONFIG_FILE).read_text())["limit"] == 3


@pytest.mark.parametrize("journal", [JOURNAL, "simple_python.jsonl"])
def test_journals_of_unknown_settings_are_not_adopted(tmp_path, journal):
    (tmp_path / journal).write_text("{}\n")
    with pytest.raises(FileExistsError, match=journal):
        claim_output_dir(tmp_path, {"limit": 3})
    assert not (tmp_path / CONFIG_FILE).exists()
