"""Bamboogle: answer metrics, answer extraction, search back-ends, generated tasks, the registered env."""

import json

import gymnasium as gym
import numpy as np
import pytest
from conftest import data_dir
from gymnasium.utils.env_checker import check_env
from scripted_simulator import ScriptedSimulator

import genenv  # noqa: F401  (registers the env ids)
from genenv.benchmarks.bamboogle import (
    FAMILIES,
    BamboogleAdapter,
    BM25Search,
    SimulatedSearch,
    cover_exact_match,
    exact_match,
    extract_answer,
    load_corpus,
    normalize_answer,
    question_family,
    token_f1,
    two_hop_problems,
)
from genenv.benchmarks.base import DataNotFoundError, Task, ToolCall, Trajectory, Turn, get_benchmark
from genenv.envs.simulator import Simulator
from genenv.llm.generation import SamplingConfig
from genenv.toolcalls import parse_tool_calls

# A well-formed generated task (facts unrelated to Bamboogle's questions).
DRACULA = {
    "Q1": "Who wrote the novel Dracula?",
    "A1": "Bram Stoker",
    "Q2": "Where was Bram Stoker born?",
    "A2": "Dublin",
    "question": "Where was the author of the novel Dracula born?",
}


@pytest.fixture(scope="module")
def adapter(tiny_policy):
    return BamboogleAdapter(data_dir=data_dir("bamboogle"), reward="em", search_model=tiny_policy, top_k=2)


@pytest.fixture(scope="module")
def citibank(adapter):
    return adapter.load_tasks("test")[0]


def trajectory(final=None, calls=()):
    return Trajectory(turns=[Turn(action="", calls=list(calls))], final_answer=final)


# -- metrics (hand-checked) ---------------------------------------------------------------------


def test_squad_normalisation():
    assert normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert normalize_answer("A. Lincoln") == "lincoln"  # punctuation first, then the article goes
    assert normalize_answer("Theodore, an  APPLE") == "theodore apple"  # 'the' only as a word
    assert normalize_answer("George VI\n") == "george vi"
    assert normalize_answer("10.8") == "108"


def test_exact_match_cover_em_and_f1():
    assert exact_match("the Titan IIIE.", ["Titan IIIE"]) == 1.0
    assert exact_match("Titan", ["Titan IIIE"]) == 0.0
    assert exact_match("titan iiie", ["Saturn V", "Titan IIIE"]) == 1.0  # any gold answer
    assert cover_exact_match("It was James Madison.", ["James Madison"]) == 1.0
    assert exact_match("It was James Madison.", ["James Madison"]) == 0.0
    assert token_f1("James Madison Jr", ["james madison"]) == pytest.approx(0.8)  # P 2/3, R 1
    assert token_f1("Madison", ["James Madison", "Madison"]) == 1.0  # best gold answer
    assert token_f1("Paris France", ["London"]) == 0.0
    assert token_f1("no", ["No."]) == 1.0
    assert token_f1("yes it is", ["yes"]) == 0.0  # FlashRAG/HotpotQA: yes/no must match exactly
    assert token_f1("", ["yes"]) == 0.0


def test_answer_extraction():
    text = "Follow up: When was Citibank founded?\nIntermediate answer: 1812.\nSo the final answer is: James Madison.\n"
    assert extract_answer(text) == ("James Madison.", "self_ask")
    assert extract_answer("so the final answer is Titan IIIE\nmore") == ("Titan IIIE", "self_ask")
    assert extract_answer("So the final answer is: a\nSo the final answer is: b") == ("b", "self_ask")
    assert extract_answer("<answer> x </answer> then <answer>1999</answer>") == ("1999", "answer_tag")
    assert extract_answer("  Madrid ") == ("Madrid", "full_text")
    assert extract_answer("So the final answer is:") == ("", "self_ask")


# -- adapter scoring ------------------------------------------------------------------------------


def test_splits_and_tasks(adapter, citibank):
    test, heldin, heldout = (adapter.load_tasks(s) for s in ("test", "heldin", "heldout"))
    assert (len(test), len(heldin), len(heldout)) == (125, 13, 112)
    assert {t.task_id for t in heldin}.isdisjoint({t.task_id for t in heldout})
    assert citibank.prompt == "Who was president of the United States in the year that Citibank was founded?"
    assert citibank.gold["answers"] == ["james madison"] and adapter.family(citibank) == "who"
    with pytest.raises(ValueError):
        adapter.load_tasks("train")


def test_score_self_ask_text_and_answer_tool(adapter, citibank):
    score = adapter.score(citibank, trajectory("Intermediate answer: 1812.\nSo the final answer is: James Madison."))
    assert score.value == 1.0 and score.breakdown["em"] == score.breakdown["f1"] == 1.0
    assert score.breakdown["extraction"] == "self_ask" and score.breakdown["answer_source"] == "final_text"
    call = ToolCall("answer", {"answer": "James Madison Jr"})
    score = adapter.score(citibank, trajectory(calls=[ToolCall("search", {"query": "Citibank"}), call]))
    assert score.value == 0.0 and score.breakdown["f1"] == pytest.approx(0.8)  # reward="em"
    assert score.breakdown["answer_source"] == "answer_tool" and score.breakdown["searches"] == 1
    soft = BamboogleAdapter(data_dir=adapter.data_dir, reward="f1", search_model="unused")
    assert soft.score(citibank, trajectory(calls=[call])).value == pytest.approx(0.8)
    with pytest.raises(ValueError):
        BamboogleAdapter(data_dir=adapter.data_dir, reward="rouge")


@pytest.mark.parametrize(
    ("final", "calls", "error"),
    [
        (None, [], "no answer"),
        ("So the final answer is: ", [], "empty after normalisation"),
        ("So the final answer is: the.", [], "empty after normalisation"),
        (42, [], "no answer"),
        (None, [ToolCall("answer", {"answer": 7}), ToolCall("answer", ["x"])], "no answer"),
    ],
)
def test_malformed_answers_score_zero_with_a_reason(adapter, citibank, final, calls, error):
    score = adapter.score(citibank, trajectory(final, calls))
    assert score.value == 0.0 and error in score.breakdown["error"]
    assert score.breakdown["em"] == score.breakdown["f1"] == score.breakdown["cover_em"] == 0.0


def test_task_without_gold_scores_zero(adapter):
    task = Task("x", "bamboogle", "Who?", gold="garbage")
    assert adapter.score(task, trajectory("Bob")).breakdown["error"] == "the task has no gold answer"


def test_aggregate_reports_em_and_f1(adapter, citibank):
    trajectories = [trajectory("James Madison"), trajectory("James Madison Jr"), trajectory(None)]
    scores = [adapter.score(citibank, t) for t in trajectories]
    metrics = adapter.aggregate([citibank] * 3, scores)
    assert metrics["n"] == 3 and metrics["em"] == pytest.approx(1 / 3) and metrics["score"] == metrics["em"]
    assert metrics["f1"] == pytest.approx(1.8 / 3) and metrics["cover_em"] == pytest.approx(2 / 3)
    assert metrics["answered"] == pytest.approx(2 / 3)


def test_few_shot_example_is_a_correct_search_episode(adapter):
    """The worked example the agent sees plays like a real episode: two search calls, then a scored answer."""
    exchanges = adapter.few_shot_exchanges()
    actions = [m["content"] for m in exchanges if m["role"] == "assistant"]
    calls = [parse_tool_calls(a) for a in actions]
    assert [[c.name for c in cs] for cs in calls] == [["search"], ["search"], []]
    task = Task("example", "bamboogle", exchanges[0]["content"], {"answers": ["1964"]}, "test", "benchmark", {})
    episode = Trajectory(turns=[Turn(action=a, calls=c) for a, c in zip(actions, calls)], final_answer=actions[-1])
    assert adapter.score(task, episode).value == 1.0


def test_execute_checks_calls_and_never_raises(adapter, citibank):
    state = adapter.start(citibank)
    cases = [
        (ToolCall("lookup", {"query": "x"}), "unknown_tool"),
        (ToolCall("search", {}), "missing_argument"),
        (ToolCall("search", {"query": "x", "k": 3}), "unknown_argument"),
        (ToolCall("search", {"query": 5}), "wrong_type"),
        (ToolCall("search", ["x"]), "wrong_type"),
        (ToolCall("search", {"query": "  "}), "empty_query"),
        (ToolCall("search", {"query": "x" * 501}), "query_too_long"),
        (ToolCall("answer", {"text": "x"}), "unknown_argument"),
        (ToolCall("answer", {"answer": ""}), "empty_answer"),
    ]
    for call, kind in cases:
        result = adapter.execute(state, call)
        assert result.error == kind and kind in result.observation and not result.done
    done = adapter.execute(state, ToolCall("answer", {"answer": "James Madison"}))
    assert done.done and done.error is None and done.output == {"answer": "James Madison"}
    assert state.queries == []


# -- search back-ends ---------------------------------------------------------------------------


@pytest.fixture
def corpus(tmp_path):
    docs = [
        {"id": "d1", "title": "Citibank", "text": "Citibank was founded in 1812 as the City Bank of New York."},
        {"id": "d2", "title": "James Madison", "text": "James Madison was the fourth president of the United States."},
        {"id": "d3", "title": "Voyager 2", "text": "Voyager 2 was launched on a Titan IIIE rocket in 1977."},
    ]
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    return path


def test_bm25_returns_the_right_document(corpus):
    engine = BM25Search(corpus, top_k=2)
    hits = engine.retrieve("In what year was Citibank founded?")
    assert hits[0][0].doc_id == "d1" and len(hits) == 1  # only documents that match at all
    assert engine.retrieve("Which rocket launched Voyager 2?")[0][0].title == "Voyager 2"
    text = engine.search("Who was the fourth president?")
    assert "[1] James Madison (id d2)" in text and "BM25" in text
    assert engine.search("zebra xylophone").startswith("No documents match")


def test_bm25_corpus_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_corpus(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "ok"}\nnot json\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        load_corpus(bad)


def test_adapter_with_corpus_searches_bm25(corpus, citibank):
    adapter = BamboogleAdapter(data_dir=data_dir("bamboogle"), corpus=str(corpus))
    result = adapter.execute(adapter.start(citibank), ToolCall("search", {"query": "Citibank founded"}))
    assert result.error is None and "City Bank of New York" in result.observation
    assert "BM25" in adapter.system_prompt(citibank)


def test_simulated_search_sees_only_the_query(tiny_policy, citibank):
    engine = SimulatedSearch(tiny_policy, top_k=2, max_new_tokens=8)
    prompt = json.dumps(engine.conversation("Citibank founding year"))
    assert "Citibank founding year" in prompt and "madison" not in prompt.lower()
    first = engine.search("Citibank founding year")
    assert "simulated" in first and first == engine.search("Citibank founding year")  # greedy, cached


# -- the env ------------------------------------------------------------------------------------


def test_env_plays_a_benchmark_task_with_simulated_search(tiny_policy):
    data_dir("bamboogle")
    env = gym.make(
        "GenEnv-Bamboogle-v0", task_source="benchmark", split="test", search_model=tiny_policy, max_turns=3, reward="em"
    )
    obs, info = env.reset(seed=0, options={"task": env.unwrapped.benchmark_tasks[0].to_dict()})
    assert "Citibank" in obs and "madison" not in obs.lower() and "simulated" in obs
    obs, reward, terminated, _, info = env.step(
        '<tool_call>{"name": "search", "arguments": {"query": "Citibank"}}</tool_call>'
    )
    assert not terminated and obs.startswith('Search results for "Citibank" (simulated')
    _, reward, terminated, _, info = env.step("Citibank was founded in 1812.\nSo the final answer is: James Madison")
    assert terminated and reward == 1.0 and info["score_breakdown"]["prediction"] == "James Madison"


def test_env_generated_task_is_validated_and_played(tiny_policy):
    data_dir("bamboogle")
    bad = dict(DRACULA, Q2="Where was he born?")
    simulator = ScriptedSimulator([json.dumps(DRACULA), json.dumps(bad)], "where")
    env = gym.make("GenEnv-Bamboogle-v0", simulator=simulator, search_model=tiny_policy, max_turns=2)
    obs, info = env.reset(seed=0)
    assert info["task_origin"] == "simulator" and info["family"] == "where" and DRACULA["question"] in obs
    rejected = [r for r in env.unwrapped.generation_log if r["task"] is None]
    assert len(rejected) == 1 and "Q2 does not mention the bridge answer A1" in rejected[0]["reject_reason"]
    _, reward, terminated, _, info = env.step(
        '<tool_call>{"name": "answer", "arguments": {"answer": "Dublin, Ireland"}}</tool_call>'
    )
    assert terminated and reward == pytest.approx(2 / 3) and info["score_breakdown"]["em"] == 0.0  # reward="f1"


def test_check_env_with_tiny_simulator(tiny_policy):
    data_dir("bamboogle")
    simulator = Simulator(tiny_policy, batch_size=2, sampling=SamplingConfig(max_new_tokens=8, temperature=1.0))
    env = gym.make("GenEnv-Bamboogle-v0", simulator=simulator, simulator_attempts=1, search_model=tiny_policy)
    check_env(env.unwrapped, skip_render_check=True)
    assert env.unwrapped.generation_log


# -- generated tasks ------------------------------------------------------------------------------


def test_question_family_rules(adapter):
    cases = {
        "Who was president of the U.S. when superconductivity was discovered?": "who",
        "In what year was the tallest lighthouse completed?": "when",
        "In 2016, who was the host of the longest running talk show?": "who",
        "The Filipino statesman who established the government-in-exile was also the mayor of what city?": "where",
        "The most populous city in Punjab is how large (area wise)?": "quantity",
        "For which club did the winner of the 2007 Ballon d'Or play for in 2012?": "what",
        "Can people who have celiac eat camel meat?": "yes_no",
        "Name the capital of France.": "other",
    }
    assert {q: question_family(q) for q in cases} == cases
    counts = {}
    for task in adapter.load_tasks("test"):
        counts[adapter.family(task)] = counts.get(adapter.family(task), 0) + 1
    assert counts == {"what": 40, "who": 38, "when": 36, "where": 7, "quantity": 3, "yes_no": 1}
    assert set(counts) <= set(FAMILIES) and set(adapter.families()) <= set(FAMILIES)


def test_two_hop_rules():
    assert two_hop_problems(**_fields(DRACULA)) == []
    assert two_hop_problems(**_fields(dict(DRACULA, Q2="Who was Bram Stoker's father?", A2="Abraham Stoker"))) == []
    checks = {
        "Q2 does not mention the bridge answer A1": dict(DRACULA, Q2="Where was he born?"),
        "the question names the bridge answer A1": dict(
            DRACULA, question="Where was Bram Stoker, who wrote Dracula, born?"
        ),
        "the question does not contain hop 1": dict(DRACULA, question="Where was the famous writer born?"),
        "the answer A2 appears in Q2": dict(DRACULA, Q2="Was Bram Stoker born in Dublin?"),
        "A1 and A2 are the same": dict(DRACULA, A2="bram stoker."),
        "empty A2": dict(DRACULA, A2=" . "),
        "question does not end with '?'": dict(DRACULA, question="Where was the author of the novel Dracula born"),
        "A2 has more than 12 tokens": dict(DRACULA, A2=" ".join(["word"] * 13)),
    }
    for reason, fields in checks.items():
        assert any(reason in p for p in two_hop_problems(**_fields(fields))), reason


def _fields(task):
    return {"question": task["question"], "q1": task["Q1"], "a1": task["A1"], "q2": task["Q2"], "a2": task["A2"]}


def test_parse_and_validate_generated_tasks(adapter):
    task = adapter.parse_task(dict(DRACULA), "where")
    assert task.source == "generated" and task.prompt == DRACULA["question"] and task.gold["answers"] == ["Dublin"]
    assert adapter.validate_task(task) == (True, "ok") and adapter.family(task) == "where"
    assert adapter.parse_task(dict(DRACULA, A2=["Dublin", "Dublin, Ireland"])).gold["answers"] == [
        "Dublin",
        "Dublin, Ireland",
    ]
    for obj, family in [
        (dict(DRACULA), "who"),
        ({k: v for k, v in DRACULA.items() if k != "Q1"}, None),
        (dict(DRACULA, A1=[]), None),
        (dict(DRACULA, question=["x"]), None),
        (dict(DRACULA, question="x" * 301), None),
        ("not an object", None),
    ]:
        with pytest.raises(ValueError):
            adapter.parse_task(obj, family)
    ok, reason = adapter.validate_task(adapter.parse_task(dict(DRACULA, question="Where was Bram Stoker born?")))
    assert not ok and "names the bridge" in reason
    assert adapter.validate_task(Task("x", "bamboogle", "?", gold=None)) == (False, "the task has no decomposition")


def test_copies_of_bamboogle_questions_are_rejected(adapter):
    row = adapter.records()[10]
    d = row["decomposition"]
    obj = {"Q1": d["Q1"], "A1": d["A1"], "Q2": d["Q2"], "A2": d["A2"], "question": row["question"]}
    ok, reason = adapter.validate_task(adapter.parse_task(obj))
    assert not ok and reason == "the question copies a Bamboogle question"


def test_generation_hooks_draw_from_heldin_only(adapter):
    rng = np.random.default_rng(0)
    heldin = {t.prompt for t in adapter.load_tasks("heldin")}
    for family in adapter.families():
        examples = adapter.generation_examples(family, 3, rng)
        assert len(examples) == 3 and all(e["question"] in heldin for e in examples)
        assert all(set(e) == set(adapter.task_schema["required"]) for e in examples)
        assert not any(two_hop_problems(**_fields(e)) for e in examples)
        if family in ("who", "when", "what"):
            assert question_family(examples[0]["question"]) == family
        schema = adapter.generation_schema(family)
        assert set(schema["required"]) == set(schema["properties"]) and schema["additionalProperties"] is False
        context = adapter.generation_context(family, rng)
        assert "two-hop" in context and "Topic:" in context
    with pytest.raises(ValueError):
        adapter.generation_context("yes_no", rng)


def test_missing_data_is_a_clear_error(tmp_path):
    adapter = get_benchmark("bamboogle", data_dir=tmp_path, search_model="unused")
    with pytest.raises(DataNotFoundError, match="bamboogle_test.jsonl"):
        adapter.load_tasks("test")
    assert adapter.validate_task(adapter.parse_task(dict(DRACULA)))[0] is False


def test_expert_traces_search_both_hops_then_answer_with_full_em(adapter):
    from genenv.envs.expert import expert_messages, replay_expert

    for task in adapter.load_tasks("heldin"):
        messages, score = replay_expert(adapter, task)
        assert score.value == 1.0 and score.breakdown["em"] == 1.0 and score.breakdown["searches"] == 2, task.task_id
        calls = [m["content"] for m in messages if m["role"] == "assistant"][:2]
        hops = task.gold["decomposition"]
        assert [
            json.loads(c.split("<tool_call>")[1].split("</tool_call>")[0])["arguments"]["query"] for c in calls
        ] == [
            hops["Q1"].strip(),
            hops["Q2"].strip(),
        ]
        assert messages[-1]["content"].startswith("So the final answer is: ")
    assert expert_messages(adapter, Task("t", "bamboogle", "q", {"answers": ["x"]})) is None  # no decomposition
