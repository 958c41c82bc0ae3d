"""curriculum.aim: aimed requests and re-served written tasks, through the written source, AlphaCurriculum and the
trainer's settings."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from toy_benchmark import ToyAdapter

from genenv.curriculum import AimConfig, AlphaCurriculum, AlphaCurriculumConfig, CurriculumConfig
from genenv.curriculum.aim import WrittenAim, informative
from genenv.curriculum.sources import WrittenEachEpoch
from genenv.envs.simulator import Simulator, to_proposal


class KeyedSimulator(Simulator):
    """Writes one new toy task for each requested family (``small``: sum < 50, ``large``: sum >= 50); keeps the
    requests it was given."""

    def __init__(self, batch_size: int = 4) -> None:
        super().__init__(policy=None, batch_size=batch_size)
        self.requests: list[list[str]] = []
        self.written = 0

    def propose(self, adapter, *, rng, n=None, families=None, success=None, own_examples=None, scored=None):
        n = n or self.batch_size
        if families is None:
            families = [adapter.families()[int(rng.integers(2))] for _ in range(n)]
        self.requests.append(list(families))
        proposals = []
        for family in families:
            self.written += 1
            task = {"a": -self.written, "b": 1} if family == "small" else {"a": 1000 + self.written, "b": 1}
            proposals.append(to_proposal(adapter, family, [], json.dumps(task)))
        return proposals


def attempts(task, mixed_family: str = "small") -> list[float]:
    """G = 4 attempts: disagreeing on ``mixed_family``'s tasks, all failed on the other's."""
    return [1.0, 0.0, 1.0, 0.0] if ToyAdapter().family(task) == mixed_family else [0.0] * 4


def play(source, simulator, epochs: int, wanted: int = 8, seed: int = 0, rewards=attempts):
    rng = np.random.default_rng(seed)
    epochs_tasks = []
    for epoch in range(epochs):
        tasks = source.epoch_tasks(simulator, epoch, wanted, rng, {}).fresh
        ids = [t.task_id for t in tasks for _ in range(4)]
        source.report(ids, [r for t in tasks for r in rewards(t)])
        epochs_tasks.append(tasks)
    return epochs_tasks


def test_settings_are_checked_and_name_what_is_wrong():
    assert not AimConfig().active and AimConfig(reserve=0.5).active and AimConfig(requests="informative").active
    with pytest.raises(ValueError, match="curriculum.aim.requests"):
        AimConfig(requests="learnability")
    with pytest.raises(ValueError, match=r"curriculum.aim.reserve must lie in \[0, 1\]"):
        AimConfig(reserve=1.5)
    with pytest.raises(ValueError, match="has no setting share"):
        AimConfig.of({"share": 0.5})
    with pytest.raises(ValueError, match="curriculum=random has none to aim"):
        CurriculumConfig(name="random", aim={"reserve": 0.5})
    assert CurriculumConfig(aim={"requests": "informative"}).aim == AimConfig(requests="informative")
    with pytest.raises(ValueError, match="not the Random one"):
        WrittenEachEpoch(ToyAdapter(), None, generation_rounds=2, conditioned=False, aim=AimConfig(reserve=0.5))


def test_a_group_is_informative_when_its_attempts_disagree():
    assert informative([1.0, 0.0]) and not informative([1.0, 1.0]) and not informative([0.0, 0.5])


def test_uniform_requests_leave_the_draw_to_the_simulator():
    source = WrittenEachEpoch(ToyAdapter(), None, generation_rounds=2, conditioned=True, aim=AimConfig())
    assert source.aim is None  # neither lever on: the paper's source, with no state
    simulator = KeyedSimulator()
    play(source, simulator, 3)
    assert source.state_dict() == {}
    counts = Counter(f for batch in simulator.requests for f in batch)
    assert counts["small"] > 6 and counts["large"] > 6


def test_informative_requests_move_to_the_key_whose_groups_disagree():
    aim = AimConfig(requests="informative", exploration=0.0, window=16)
    source = WrittenEachEpoch(ToyAdapter(), None, generation_rounds=2, conditioned=True, aim=aim)
    simulator = KeyedSimulator()
    play(source, simulator, 6)
    assert all(source.aim.groups["small"]) and not any(source.aim.groups["large"])
    late = Counter(f for batch in simulator.requests[-2:] for f in batch)
    assert late["small"] / sum(late.values()) >= 0.8
    # the rewards turned around: the requests follow
    play(source, simulator, 12, seed=1, rewards=lambda t: attempts(t, mixed_family="large"))
    late = Counter(f for batch in simulator.requests[-2:] for f in batch)
    assert late["large"] / sum(late.values()) >= 0.6


def test_a_group_counts_for_the_key_its_task_was_requested_as():
    aim = WrittenAim(AimConfig(requests="informative"))
    task = ToyAdapter().parse_task({"a": 1, "b": 1})  # a small task, written for a "large" request
    aim.written([task], ["large"])
    assert aim.report({task.task_id: [1.0, 0.0], "elsewhere": [1.0, 0.0]}) == {"aim_informative": 1.0}
    assert {key: list(recent) for key, recent in aim.groups.items()} == {"large": [True]}
    assert aim.informative_rate("large") == pytest.approx(2 / 3) and aim.informative_rate("small") == 0.5


def test_reserve_serves_played_tasks_again_by_learnability_and_retires_solved_ones():
    aim = AimConfig(reserve=0.5)
    source = WrittenEachEpoch(ToyAdapter(), None, generation_rounds=2, conditioned=True, aim=aim)
    simulator = KeyedSimulator()
    rng = np.random.default_rng(0)
    first = source.epoch_tasks(simulator, 0, 8, rng, {})
    assert first.again == frozenset() and len(first.fresh) == 8  # nothing played yet: all written
    solved = {t.task_id for t in first.fresh[:4]}  # these every attempt solves; the others split

    def rewards(task):
        return [1.0] * 4 if task.task_id in solved else [1.0, 0.0, 0.0, 0.0]

    seen = {t.task_id for t in first.fresh}
    source.report([t.task_id for t in first.fresh for _ in range(4)], [r for t in first.fresh for r in rewards(t)])
    for epoch in range(1, 4):
        batch = source.epoch_tasks(simulator, epoch, 8, rng, {})
        ids = [t.task_id for t in batch.fresh]
        assert len(ids) == len(set(ids)) == 8 and len(batch.again) == 4 and batch.again <= seen
        written_now = [t for t in batch.fresh if t.task_id not in batch.again]
        assert len(written_now) == 4 and not {t.task_id for t in written_now} & seen
        assert all(p.task is None or p.task.task_id not in batch.again for p in batch.proposals)
        seen |= set(ids)
        metrics = source.report([i for i in ids for _ in range(4)], [r for t in batch.fresh for r in rewards(t)])
        assert metrics["aim_informative"] == pytest.approx(sum(t.task_id not in solved for t in batch.fresh) / 8)
    assert solved <= source.aim.sampler.retired  # solved by every attempt twice: never served again
    assert not solved & {t.task_id for t in source.epoch_tasks(simulator, 4, 8, rng, {}).fresh}


def test_the_levers_state_round_trips_and_refuses_other_settings():
    aim = AimConfig(requests="informative", reserve=0.5)
    source = WrittenEachEpoch(ToyAdapter(), None, generation_rounds=2, conditioned=True, aim=aim)
    play(source, KeyedSimulator(), 3)
    state = json.loads(json.dumps(source.state_dict()))
    copy = WrittenEachEpoch(ToyAdapter(), None, generation_rounds=2, conditioned=True, aim=aim)
    copy.load_state_dict(state)
    assert copy.state_dict() == state
    first, second = KeyedSimulator(), KeyedSimulator()
    first.written = second.written = 1000
    a = source.epoch_tasks(first, 3, 8, np.random.default_rng(5), {})
    b = copy.epoch_tasks(second, 3, 8, np.random.default_rng(5), {})
    assert [t.task_id for t in a.fresh] == [t.task_id for t in b.fresh] and first.requests == second.requests
    other = WrittenEachEpoch(ToyAdapter(), None, generation_rounds=2, conditioned=True, aim=AimConfig(reserve=0.25))
    with pytest.raises(ValueError, match="resume with the same settings"):
        other.load_state_dict(state)
    with pytest.raises(ValueError, match="holds no curriculum.aim state"):
        other.load_state_dict({})


def test_alpha_curriculum_aims_reports_and_resumes(tmp_path):
    config = AlphaCurriculumConfig(aim=AimConfig(requests="informative", exploration=0.0, reserve=0.5), seed=3)
    curriculum = AlphaCurriculum(ToyAdapter(), KeyedSimulator(), config)  # writes 4 a batch: no extras queued
    for _ in range(4):
        tasks = curriculum.next_tasks(8)
        ids = [t.task_id for t in tasks for _ in range(4)]
        metrics = curriculum.report(ids, [r for t in tasks for r in attempts(t)])
    assert "aim_informative" in metrics and any(curriculum._source.aim.groups["small"])
    curriculum.save(tmp_path / "state")
    simulator = KeyedSimulator()
    simulator.written = curriculum.simulator.written  # a simulator that goes on writing new tasks
    resumed = AlphaCurriculum(ToyAdapter(), simulator, config)
    resumed.load(tmp_path / "state")
    assert resumed._source.state_dict() == curriculum._source.state_dict()
    tasks = resumed.next_tasks(8)
    played = set(curriculum._source.aim.played)
    assert len(played) >= 16 and sum(t.task_id in played for t in tasks) == 4  # half served again
    resumed.report([t.task_id for t in tasks for _ in range(4)], [r for t in tasks for r in attempts(t)])


def test_the_trainer_serves_a_played_task_again_without_a_second_expert_trace(tmp_path):
    from scripted_simulator import ScriptedSimulator
    from test_apibank_env import CALCULATOR_TASK
    from test_train import HARD_TASK, _script_attempts, tiny_config

    from genenv.coevolution import CoEvolutionTrainer
    from genenv.pools import TracePool

    aim = {"requests": "informative", "reserve": 0.5}
    config = tiny_config(tmp_path, epochs=2, replay_tasks=0, validation_split=None, base_split=None, aim=aim)
    trainer = CoEvolutionTrainer(config)
    trainer.simulator = ScriptedSimulator([json.dumps(CALCULATOR_TASK), json.dumps(HARD_TASK)], "Calculator")
    _script_attempts(trainer)
    first, second = trainer.train()
    assert first["task_source"]["aim_informative"] == 0.5  # the calculator task's 1, 0; the hard task's 0, 0
    assert second["task_source"]["aim_informative"] == 0.5
    assert second["fresh_tasks"] == 2
    expert = TracePool(tmp_path / "pools").records(source="expert")
    assert [r["epoch"] for r in expert] == [0, 0, 1]  # epoch 1 wrote one task and served one again
    written = {r["task"]["task_id"] for r in expert[:2]}
    assert written == set(trainer.task_source.aim.played)  # the two tasks, each played and added once
    state = trainer.task_source.state_dict()["aim"]
    assert len(state["groups"]["Calculator"]) == 3  # groups of tasks written for the key: two, then one
