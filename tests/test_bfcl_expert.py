"""BFCL expert traces: the ground truth as the agent's responses scores 1 through ToolEnv on every entry that has a
trace; the entries without one are exactly those with no ground truth or with gold bfcl-eval itself rejects."""

import pytest
from conftest import data_dir
from test_bfcl import KNOWN_GOLD_FAILURES

from genenv.benchmarks.bfcl import BFCLAdapter
from genenv.benchmarks.bfcl.expert import IRRELEVANT_ANSWER, TURN_DONE
from genenv.envs.expert import expert_messages, replay_expert

#: gold answers that fail in every format (the others of KNOWN_GOLD_FAILURES pass in one of the two)
NO_TRACE = {task_id for task_id, formats in KNOWN_GOLD_FAILURES.items() if formats == {"python", "json"}}


@pytest.fixture(scope="module")
def adapter():
    return BFCLAdapter(data_dir=data_dir("bfcl"))


def test_every_expert_trace_scores_one_and_only_gold_failures_lack_one(adapter):
    missing = set()
    for task in adapter.load_tasks("all"):
        expert = expert_messages(adapter, task)
        if expert is None:
            missing.add(task.task_id)
            continue
        messages, score = replay_expert(adapter, task)
        assert score.value == 1.0 and messages == expert, (task.task_id, score.breakdown)
    relevance = {t.task_id for t in adapter.load_tasks("live_relevance")}  # no ground truth to write
    assert missing == relevance | NO_TRACE


def test_trace_forms(adapter):
    simple = adapter.load_tasks("simple_python")[0]
    assert expert_messages(adapter, simple)[0]["content"] == (
        "[calculate_triangle_area(base=10, height=5, unit='units')]"
    )
    irrelevant = expert_messages(adapter, adapter.load_tasks("irrelevance")[0])
    assert [m["content"] for m in irrelevant] == [IRRELEVANT_ANSWER]
    task = adapter.load_tasks("multi_turn_base")[0]
    actions = [m["content"] for m in expert_messages(adapter, task) if m["role"] == "assistant"]
    assert (
        actions[0]
        == "[cd(folder='document'), mkdir(dir_name='temp'), mv(source='final_report.pdf', destination='temp')]"
    )
    assert actions.count(TURN_DONE) == len(task.gold)
    assert "[sort(file_name='final_report.pdf')]" in actions  # a positional ground-truth argument, named
