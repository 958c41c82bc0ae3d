"""experiments/simulator_aim/aim_calibration.py: the verdict on every branch, the summary's numbers from synthetic
rounds, and run names."""

from __future__ import annotations

import json

import aim_calibration as cal
import pytest

GOAL = "the goal is met"
SHORT = "GenEnv aims above Random, short of the goal"
NULL = "no aim shown"
WORSE = "GenEnv aims worse than Random"


def above(low: float = 0.05, high: float = 0.2) -> dict:
    return {"low": low, "high": high}


@pytest.mark.parametrize(
    ("genenv", "learnability", "random", "interval", "starts", "names"),
    [
        (0.45, 0.40, 0.25, above(), GOAL, []),
        (0.45, 0.45, 0.30, above(), GOAL, []),  # boundaries: equal to Learnability, exactly 1.5x Random
        (0.40, 0.45, 0.25, above(), SHORT, ["below Learnability's share"]),
        (0.40, 0.35, 0.30, above(), SHORT, ["under 1.5x Random's share"]),
        (0.40, 0.45, 0.30, above(), SHORT, ["below Learnability's share", "under 1.5x Random's share"]),
        (0.60, 0.30, 0.20, above(low=0.0), NULL, []),  # a bound at 0 does not lie above it
        (0.60, 0.30, 0.20, above(low=-0.1, high=0.3), NULL, []),
        (0.10, 0.30, 0.20, above(low=-0.2, high=-0.01), WORSE, []),
    ],
)
def test_every_branch_of_the_verdict_fires_with_its_wording(genenv, learnability, random, interval, starts, names):
    verdict = cal.aim_verdict(genenv, learnability, random, interval)
    assert verdict.startswith(starts)
    for name in names:
        assert name in verdict
    if starts == SHORT and len(names) == 1:  # only the condition that fails is named
        other = {"below Learnability's share", "under 1.5x Random's share"} - set(names)
        assert other.pop() not in verdict


def write_rounds(folder, arm: str, seed: int, shares: list[float], aim: dict | None = None, tasks: int = 20) -> str:
    """Rounds of ``arm`` (with the levers ``aim``) and ``seed``, round r with ``shares[r] * tasks`` informative tasks,
    under the run's name; returns the variant."""
    name = cal.run_name(arm, seed, aim or {}, {})
    variant = cal.variant(name)
    lines = []
    for r, share in enumerate(shares):
        hits = round(share * tasks)
        lines.append(
            {
                "arm": arm,
                "variant": variant,
                "seed": seed,
                "round": r,
                "tasks": tasks,
                "task_ids": [f"{variant}-{seed}-{r}-{i % (tasks // 2)}" for i in range(tasks)],
                "p_per_task": [0.5] * hits + [0.0] * (tasks - hits),
                "informative_per_task": [True] * hits + [False] * (tasks - hits),
                "informative_share": hits / tasks,
                "valid_share": None if arm == "learnability" else 0.5,
                "cpu_seconds": 60.0 * (r + 1),
            }
        )
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return variant


def test_the_summary_reads_rounds_3_and_4_seed_by_seed(tmp_path, monkeypatch):
    monkeypatch.setattr(cal, "RESULTS", tmp_path)
    rounds = tmp_path / "reasoning_gym" / "rounds"
    rounds.mkdir(parents=True)
    for seed, shift in ((1, 0.0), (2, 0.05), (3, 0.1)):
        write_rounds(rounds, "random", seed, [0.2, 0.2, 0.2, 0.2 + shift, 0.2])
        write_rounds(rounds, "learnability", seed, [0.3, 0.3, 0.3, 0.4, 0.4])
        write_rounds(rounds, "genenv", seed, [0.2, 0.2, 0.3, 0.3, 0.3])
        best = write_rounds(rounds, "genenv", seed, [0.2, 0.4, 0.5, 0.6, 0.6 + shift], {"requests": "informative"})
    write_rounds(rounds, "random", 4, [0.2] * 4)  # a seed without round 4 is left out
    cal.main(["summary", "--testbed", "reasoning_gym", "--best", best])
    result = json.loads((tmp_path / "reasoning_gym" / "summary.json").read_text())
    assert result["seeds"] == [1, 2, 3] and result["rounds"] == [3, 4]
    arms = result["arms"]
    assert arms["random"]["informative_share"] == pytest.approx(0.225)
    assert arms["genenv_best"]["informative_share"] == pytest.approx(0.625)
    assert arms["learnability"]["valid_share"] is None and arms["genenv_best"]["valid_share"] == 0.5
    assert arms["genenv_best"]["distinct_tasks_per_task_played"] == pytest.approx(0.5)
    assert arms["genenv_best"]["core_minutes_per_round"] == pytest.approx(3.0)  # every round, 1 to 5 minutes
    for arm in arms.values():
        assert arm["low"] <= arm["informative_share"] <= arm["high"]
    versus = result["genenv_minus_random"]
    assert versus["per_seed"] == pytest.approx([0.4, 0.4, 0.4])
    assert versus["difference"] == pytest.approx(0.4) and versus["low"] == pytest.approx(0.4)
    assert result["verdict"].startswith(GOAL)
    assert result["verdict_genenv_rwr"].startswith(SHORT)  # 0.3: above Random in every seed, below Learnability
    assert (tmp_path / "reasoning_gym" / "informative_share.png").stat().st_size > 0
    assert (tmp_path / "reasoning_gym" / "written_success.png").stat().st_size > 0
    with pytest.raises(SystemExit, match="no rounds of genenv-reserve0.5"):
        cal.main(["summary", "--testbed", "reasoning_gym", "--best", "genenv-reserve0.5"])


def test_a_run_is_named_by_its_arm_seed_and_changes_and_read_back_as_its_variant():
    name = cal.run_name("genenv", 3, {"reserve": 0.5, "requests": "informative"}, {"learning_rate": 0.001})
    assert name == "genenv-s3-requestsinformative-reserve0.5-learning_rate0.001"
    assert cal.variant(name) == "genenv-requestsinformative-reserve0.5-learning_rate0.001"
    assert cal.variant("random-s12") == "random"


def test_the_bfcl_testbed_warm_starts_on_tasks_outside_the_pool_its_arms_draw_from():
    import argparse

    import agent_learning
    from conftest import data_dir

    from genenv.benchmarks.base import get_benchmark
    from genenv.envs.expert import expert_conversation

    testbed = cal.TESTBEDS["bfcl"]
    adapter = get_benchmark("bfcl", data_dir=str(data_dir("bfcl")), **testbed.adapter_options)
    args = argparse.Namespace(bench="bfcl", families=None, seed=testbed.agent_seed, warm_start=testbed.warm_start)
    _, warm = agent_learning.warm_start_tasks(args, adapter)
    pool = adapter.load_tasks(testbed.pool_split)
    assert len(warm) == testbed.warm_start and len(pool) > 1000
    assert not {t.task_id for t in warm} & {t.task_id for t in pool}
    assert {adapter.family(t) for t in pool} == set(adapter.families())  # the pool holds every key the simulator writes
    assert all(expert_conversation(adapter, t) for t in warm)


def test_screening_measures_each_lever_against_genenv_and_picks_by_the_written_rule(tmp_path, monkeypatch):
    monkeypatch.setattr(cal, "RESULTS", tmp_path)
    rounds = tmp_path / "reasoning_gym" / "rounds"
    rounds.mkdir(parents=True)
    write_rounds(rounds, "genenv", 0, [0.2, 0.2, 0.3, 0.3, 0.3])
    write_rounds(rounds, "genenv", 0, [0.2, 0.3, 0.4, 0.5, 0.5], {"requests": "informative"})
    write_rounds(rounds, "genenv", 0, [0.2, 0.3, 0.4, 0.5, 0.5], {"requests": "informative", "reserve": 0.5})
    write_rounds(rounds, "random", 0, [0.2] * 5)
    write_rounds(rounds, "genenv", 1, [0.9] * 5)  # another seed: not read
    cal.main(["screening", "--testbed", "reasoning_gym"])
    result = json.loads((tmp_path / "reasoning_gym" / "screening.json").read_text())
    variants = result["variants"]
    assert variants["genenv"]["informative_share"] == pytest.approx(0.3)
    assert variants["random"]["informative_share"] == pytest.approx(0.2) and "minus_genenv" not in variants["random"]
    lever = variants["genenv-requestsinformative"]["minus_genenv"]
    assert lever["difference"] == pytest.approx(0.2) and lever["low"] < 0.2 < lever["high"]
    assert result["best"] == "genenv-requestsinformative"  # tied with both levers: the fewer changes win
