"""ALFWorld on the TextWorld engine: data loading, play through ToolEnv, scoring, generated tasks."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest
from conftest import ALFWORLD_MISSING, data_dir

pytest.importorskip("alfworld", reason=ALFWORLD_MISSING)
pytest.importorskip("textworld", reason=ALFWORLD_MISSING)

from genenv.benchmarks.alfworld import ALFWorldAdapter  # noqa: E402
from genenv.benchmarks.alfworld.games import (  # noqa: E402
    TASK_TYPES,
    GoalSpec,
    collect_games,
    edit_goal,
    normalize_pddl,
    read_game,
)
from genenv.benchmarks.alfworld.planner import Planner  # noqa: E402
from genenv.benchmarks.base import DataNotFoundError, Score, Task, ToolCall, Trajectory, Turn  # noqa: E402
from genenv.envs.simulator import to_proposal  # noqa: E402
from genenv.envs.tool_env import ToolEnv  # noqa: E402


@pytest.fixture(scope="module")
def adapter():
    adapter = ALFWorldAdapter(data_dir=data_dir("alfworld"))
    yield adapter
    adapter.close()


def act(command: str) -> str:
    return "<tool_call>" + json.dumps({"name": "act", "arguments": {"command": command}}) + "</tool_call>"


def smallest(adapter: ALFWorldAdapter, tasks: list[Task]) -> Task:
    """The task whose game file is smallest (the quickest to load)."""
    return min(tasks, key=lambda t: (adapter.data_dir / t.metadata["game"]).stat().st_size)


def play(env: ToolEnv, task: Task, commands: list[str]) -> tuple[float, bool, dict]:
    env.reset(options={"task": task})
    reward, terminated, info = 0.0, False, {}
    for command in commands:
        _, reward, terminated, truncated, info = env.step(act(command))
        if terminated or truncated:
            break
    return reward, terminated, info


def test_splits_hold_every_task_type(adapter):
    counts = {split: len(adapter.load_tasks(split)) for split in adapter.splits}
    assert counts["valid_seen"] == 140 and counts["valid_unseen"] == 134 and counts["train"] > 0
    for split in adapter.splits:
        tasks = adapter.load_tasks(split)
        assert {adapter.family(t) for t in tasks} == set(TASK_TYPES)
        assert all(t.gold["walkthrough"] and "Your task is to:" in t.prompt for t in tasks)
        assert all("walkthrough" not in t.prompt and "(:goal" not in t.prompt for t in tasks)
    with pytest.raises(ValueError, match="unknown split"):
        adapter.load_tasks("test")


def test_goal_edit_reproduces_every_valid_game(adapter):
    """alfworld's goal library, filled with a game's own task, gives back that game's PDDL problem."""
    for split in ("valid_seen", "valid_unseen"):
        for record in collect_games(adapter.data_dir, split):
            game = read_game(adapter.data_dir / record.game_file)
            edited = edit_goal(game, GoalSpec(record.task_type, record.object, record.receptacle))
            assert normalize_pddl(edited["pddl_problem"]) == normalize_pddl(game["pddl_problem"]), record.rel_dir
            assert "walkthrough" not in edited


@pytest.mark.slow
def test_walkthrough_wins_a_game_of_every_type_through_tool_env(adapter):
    """The expert walkthrough wins a valid_seen game of every task type; the prompt is the engine's
    own first observation and admissible commands."""
    tasks = adapter.load_tasks("valid_seen")
    env = ToolEnv(adapter, tasks=tasks, max_turns=50)
    for task_type in TASK_TYPES:
        task = smallest(adapter, [t for t in tasks if adapter.family(t) == task_type])
        env.reset(options={"task": task})
        assert task.prompt == f"{env._state.observation}\n\nAdmissible commands: {', '.join(env._state.admissible)}"
        walkthrough = task.gold["walkthrough"]
        for i, command in enumerate(walkthrough):
            observation, reward, terminated, truncated, info = env.step(act(command))
            assert info["error"] is None, (task.task_id, command, observation)
            assert terminated == (i == len(walkthrough) - 1) and not truncated
        assert reward == 1.0 and info["score_breakdown"] == {
            "won": True,
            "steps": len(walkthrough),
            "task_type": task_type,
        }


def test_expert_traces_of_train_games_win(adapter):
    """A train game of every task type: the expert trace (one act call per walkthrough command, the engine's
    observations) replays to a win; the trace is what the env recorded."""
    from genenv.envs.expert import expert_messages, replay_expert

    tasks = adapter.load_tasks("train")
    for task_type in TASK_TYPES:
        task = smallest(adapter, [t for t in tasks if adapter.family(t) == task_type])
        expert = expert_messages(adapter, task)
        messages, score = replay_expert(adapter, task)
        assert score.value == 1.0 and messages == expert, task.task_id
        assert len([m for m in expert if m["role"] == "assistant"]) == len(task.gold["walkthrough"])


def test_bad_input_costs_a_turn_and_never_raises(adapter):
    task = smallest(adapter, adapter.load_tasks("valid_seen"))
    env = ToolEnv(adapter, tasks=[task], max_turns=50)
    env.reset(options={"task": task})
    cases = [
        ('<tool_call>{"name": "fly", "arguments": {"command": "look"}}</tool_call>', "unknown_tool"),
        ('<tool_call>{"name": "act", "arguments": {}}</tool_call>', "missing_argument"),
        ('<tool_call>{"name": "act", "arguments": {"command": 3}}</tool_call>', "wrong_type"),
        ('<tool_call>{"name": "act", "arguments": {"command": "look", "x": 1}}</tool_call>', "unknown_argument"),
        (act("fly to the moon"), "inadmissible_command"),
        (act(""), "inadmissible_command"),
    ]
    for turn, (action, kind) in enumerate(cases, start=1):
        observation, reward, terminated, truncated, info = env.step(action)
        assert info["error"] == kind and info["turn"] == turn and not terminated and reward == 0.0
    assert observation.startswith("Nothing happens.")
    assert env._state.steps == 2  # only the two well-formed act calls reached the game
    _, reward, terminated, _, info = env.step("I give up.")  # text without a tool call ends the episode
    assert terminated and reward == 0.0 and info["score_breakdown"]["won"] is False


def test_a_copied_env_goes_on_from_where_the_episode_was(adapter):
    """``copy.deepcopy`` and ``pickle`` copy an episode in progress: each copy gets a new engine on its next step (the
    game replayed), and original and copies, stepped apart, answer the same actions the same way."""
    task = smallest(adapter, adapter.load_tasks("valid_seen"))
    walkthrough = task.gold["walkthrough"]
    env = ToolEnv(adapter, tasks=[task], max_turns=50)
    env.reset(options={"task": task})
    played = ["look", "fly to the moon", *walkthrough[:-2]]
    for command in played:
        env.step(act(command))
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    assert all(twin._state.engine is None and twin.adapter.engines is not adapter.engines for twin in copies)
    rest = ["inventory", *walkthrough[-2:]]
    runs = [[twin.step(act(command))[:4] for command in rest] for twin in (env, *copies)]
    assert runs[0] == runs[1] == runs[2] and runs[0][-1][1:3] == (1.0, True)  # the last step wins the game
    assert [twin._state.commands for twin in (env, *copies)] == [[*played, *rest]] * 3
    assert all(twin._state.steps == len(played) + len(rest) for twin in (env, *copies))


def test_step_limit_ends_the_game(adapter):
    short = ALFWorldAdapter(data_dir=adapter.data_dir, max_steps=2, admissible_commands=False)
    task = smallest(short, short.load_tasks("valid_seen"))
    env = ToolEnv(short, tasks=[task], max_turns=50)
    assert "Admissible commands" not in env.reset(options={"task": task})[0]
    env.step(act("look"))
    observation, reward, terminated, _, info = env.step(act(task.gold["walkthrough"][0]))
    assert terminated and reward == 0.0 and "step limit of 2" in observation
    assert info["score_breakdown"]["steps"] == 2
    short.close()


def test_score_replays_a_trajectory_without_results(adapter):
    task = smallest(adapter, adapter.load_tasks("valid_seen"))
    calls = [ToolCall("act", {"command": c}) for c in task.gold["walkthrough"]]
    trajectory = Trajectory(turns=[Turn(action="replay", calls=calls)])  # no results: score replays the calls
    assert adapter.score(task, trajectory).value == 1.0
    trajectory.turns[0].calls = calls[:-1]
    assert adapter.score(task, trajectory).value == 0.0


def test_aggregate_reports_success_per_task_type(adapter):
    tasks = [
        Task(f"t{i}", "alfworld", "", {}, metadata={"task_type": task_type})
        for i, task_type in enumerate(["pick_and_place_simple", "pick_and_place_simple", "look_at_obj_in_light"])
    ]
    scores = [Score(1.0, {"steps": 4}), Score(0.0, {"steps": 50}), Score(1.0, {"steps": 3})]
    metrics = adapter.aggregate(tasks, scores)
    assert metrics["success"] == pytest.approx(2 / 3) and metrics["success/pick"] == 0.5
    assert metrics["success/look"] == 1.0 and "success/heat" not in metrics and metrics["n/pick"] == 2.0


def test_missing_data_names_the_files_and_the_setting(tmp_path):
    adapter = ALFWorldAdapter(data_dir=tmp_path)
    with pytest.raises(DataNotFoundError) as error:
        adapter.load_tasks("valid_unseen")
    assert "json_2.1.1/valid_unseen" in str(error.value) and "GENENV_DATA_DIR" in str(error.value)


def _bathroom_game(adapter: ALFWorldAdapter) -> str:
    train = adapter._train_games()
    return min((t for t, g in train.items() if g.scene >= 400), key=lambda t: train[t].rel_dir)


def test_generated_task_round_trip(adapter):
    """Goal edit -> planner -> playable -> the planner's walkthrough wins through ToolEnv."""
    trial = _bathroom_game(adapter)
    # lower case, as the family's schema states the types (the simulator's output is checked against it)
    proposal = {"task_type": "pick_and_place_simple", "game": trial, "object": "candle", "receptacle": "countertop"}
    raw = json.dumps(proposal)
    result = to_proposal(adapter, "pick_and_place_simple", [], raw)
    assert result.task is not None, result.reject_reason
    task = result.task
    assert task.source == "generated" and adapter.family(task) == "pick_and_place_simple"
    assert "candle" in task.prompt.split("Your task is to:")[1].split("\n")[0]
    walkthrough = task.gold["walkthrough"]
    assert walkthrough and walkthrough[-1].startswith("move candle")
    stored = Task.from_dict(json.loads(json.dumps(task.to_dict())))  # as pools keep it
    env = ToolEnv(adapter, tasks=[stored], max_turns=50)
    reward, terminated, info = play(env, stored, walkthrough)
    assert reward == 1.0 and terminated
    assert task.prompt.startswith(env._state.observation + "\n\nAdmissible commands: ")


def test_unplayable_proposals_are_rejected_with_a_reason(adapter):
    trial = _bathroom_game(adapter)
    family = "pick_and_place_simple"
    bad = {
        "garbage": "not json",
        "absent object": json.dumps({"task_type": family, "game": trial, "object": "fridge", "receptacle": "toilet"}),
        "unknown game": json.dumps(
            {"task_type": family, "game": "trial_X", "object": "candle", "receptacle": "toilet"}
        ),
        "wrong family": json.dumps(
            {"task_type": "look_at_obj_in_light", "game": trial, "object": "candle", "receptacle": "toilet"}
        ),
        "cannot contain": json.dumps(
            {"task_type": family, "game": trial, "object": "candle", "receptacle": "bathtubbasin"}
        ),
    }
    for case, raw in bad.items():
        result = to_proposal(adapter, family, [], raw)
        assert result.task is None and result.reject_reason.startswith("unparsable"), case
    with pytest.raises(ValueError, match="object"):
        adapter.parse_task(["not", "a", "dict"])
    # the goal already holds at the start: the planner worker says so
    scene = adapter._scene(trial)
    problem = read_game(adapter.data_dir / adapter._train_games()[trial].game_file)["pddl_problem"]
    counters = scene.receptacles["CounterTop"]
    on_counter = next(
        t
        for t in scene.candidates(family)[0]
        if scene.check(family, t, "CounterTop") is None
        and any(f"(inReceptacle {i} {c})" in problem for i in scene.objects[t] for c in counters)
    )
    task = adapter.parse_task({"task_type": family, "game": trial, "object": on_counter, "receptacle": "countertop"})
    ok, reason = adapter.validate_task(task)
    assert not ok and "already holds" in reason and task.gold["walkthrough"] is None


def test_generation_hooks_agree_with_parse_task(adapter):
    rng = np.random.default_rng(0)
    for family in adapter.families():
        schema = adapter.generation_schema(family)
        enums = {key: set(prop["enum"]) for key, prop in schema["properties"].items() if "enum" in prop}
        context = adapter.generation_context(family, rng)
        game = context.split("\n")[0].split()[1]
        assert len(game) <= schema["properties"]["game"]["maxLength"] and family in context
        assert adapter._scene(game).candidates(family)[0]  # the room shown supports the family
        for example in adapter.generation_examples(family, 2, rng):
            assert all(example[key] in enums[key] for key in enums), example
            assert adapter.parse_task(example, family).metadata["task_type"] == family


def test_planner_time_limit_stops_the_search(adapter):
    kitchen = next(t for t in adapter.load_tasks("valid_seen") if t.metadata["scene"] < 100)
    planner = Planner(timeout=0.01)
    result = planner.solve(read_game(adapter.data_dir / kitchen.metadata["game"]))
    assert result.plan is None and "within 0.01 s" in result.reason
    assert planner._proc is None  # killed; the next request starts a new worker


def test_gym_make_plays_benchmark_tasks(adapter):
    import gymnasium as gym

    import genenv  # noqa: F401 - registers the ids

    task = smallest(adapter, adapter.load_tasks("valid_unseen"))
    env = gym.make("GenEnv-ALFWorld-v0", task_source="benchmark", split="valid_unseen", max_turns=50)
    observation, info = env.reset(seed=0, options={"task": task})
    assert "Your task is to:" in observation and info["tools"][0]["function"]["name"] == "act"
    for command in task.gold["walkthrough"]:
        observation, reward, terminated, truncated, info = env.step(act(command))
    assert terminated and reward == 1.0
    env.close()
