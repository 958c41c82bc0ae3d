"""experiments/curriculum/verdict.py: the second curriculum test's pre-registered measures and verdict."""

from __future__ import annotations

import json

import pytest
import verdict


def _record(epoch: int, p_per_task: list[float], *, episodes: int | None = None, **extra) -> dict:
    return {
        "epoch": epoch,
        "p_hat_per_task": p_per_task,
        "agent": {"episodes": episodes or 8 * len(p_per_task)},
        **extra,
    }


def _run(verdict, curriculum: str, seed: int, mixed: list[int], *, warm=None, final=None):
    """A run of 5 epochs of 8 tasks whose epoch e has ``mixed[e]`` tasks at p = 0.5, the rest at 0."""
    records = [_record(e, [0.5] * m + [0.0] * (8 - m)) for e, m in enumerate(mixed)]
    if warm is not None:
        records[0]["validation_warm_start"] = {"task_scores": warm}
        records[-1]["validation"] = {"task_scores": final}
    return verdict.Run(curriculum, seed, tuple(records))


def test_an_epochs_signal_counts_mixed_groups_per_thousand_episodes_and_the_distance_from_alpha():
    signal = verdict.epoch_signal(_record(1, [0.0, 0.25, 0.5, 1.0]))
    assert signal["informative"] == 2 and signal["share"] == 0.5
    assert signal["per_1000"] == pytest.approx(1000 * 2 / 32)
    assert signal["distance"] == pytest.approx((0.5 + 0.25 + 0 + 0.5) / 4)


#: the exact wording of each branch of the verdict: a change to any of them must be a deliberate change of this test
AT_GOAL = "GenEnv gives GRPO more informative groups per episode than Random, at the goal (+0.10 of the groups)"
SHORT = "GenEnv gives GRPO more informative groups per episode than Random, short of the goal"
AGAINST = "against GenEnv: no more informative groups per episode than Random, and its tasks no closer to alpha"
INCONCLUSIVE = "inconclusive at this budget: the interval admits both no difference and the goal"
GATE_FAILED = "gate failed: the testbed cannot tell GenEnv from Random; no verdict on GenEnv"
NOT_YET = "not yet decided: the arms have not reached epoch 4 on every paired seed"
SEEDS_DO_NOT_EXCLUDE = (
    "; the t-test over the 4 seeds does not exclude 0 (4 seeds do not resolve the spread between them)"
)
SEEDS_EXCLUDE = "; the t-test over the 4 seeds excludes 0, the bootstrap interval does not"


def _arms(verdict, genenv: list[list[int]], random: list[list[int]]) -> list:
    """GenEnv and Random runs of seeds 0, 1, ...: the seed's list gives each epoch's informative tasks of 8."""
    return [_run(verdict, arm, s, mixed) for arm, arms in (("genenv", genenv), ("random", random)) for s, mixed in
            enumerate(arms)]  # fmt: skip


FLAT = [[0, 2, 2, 2, 2]] * 4


@pytest.mark.parametrize(
    ("genenv", "expected"),
    [
        ([[0, 4, 5, 4, 5], [0, 5, 4, 5, 4], [0, 4, 4, 5, 5], [0, 5, 5, 4, 4]], AT_GOAL),
        ([[0, 3, 2, 3, 2], [0, 2, 3, 2, 3], [0, 3, 3, 2, 2], [0, 2, 2, 3, 3]], SHORT),
        ([[0, 4, 3, 4, 3], [0, 3, 2, 3, 2], [0, 2, 3, 2, 3], [0, 3, 1, 2, 2]], SHORT + SEEDS_DO_NOT_EXCLUDE),
        ([[0, 4, 1, 3, 2], [0, 3, 1, 4, 1], [0, 2, 3, 1, 3], [0, 3, 1, 2, 3]], INCONCLUSIVE + SEEDS_EXCLUDE),
        ([[0, 3, 1, 2, 2], [0, 2, 2, 3, 1], [0, 1, 3, 2, 2], [0, 2, 3, 1, 2]], AGAINST),
    ],
)
def test_the_verdict_of_four_seeds_whose_epochs_differ(genenv, expected):
    runs = _arms(verdict, genenv, FLAT)
    first, mech = verdict.primary(runs), verdict.mechanism(runs)
    per_seed = [1000 * (sum(g[1:]) - 8) / 4 / 64 for g in genenv]  # Random has 2 a epoch
    assert first["per_seed"] == pytest.approx(per_seed) and first["complete"] and first["seeds"] == [0, 1, 2, 3]
    assert first["genenv_minus_random"] == pytest.approx(sum(per_seed) / 4)
    assert first["low"] < first["genenv_minus_random"] < first["high"]  # the epochs differ: the interval has a width
    step = 1000 / 64 / 16  # the means lie on a grid: 1 task of 8 over 4 epochs and 4 seeds
    assert first["draws"] == verdict.DRAWS and first["low_mc_error"] <= step and first["high_mc_error"] <= step
    assert first["seed_level"]["seeds"] == 4 and first["seed_level"]["smallest_sign_flip_p"] == 2 / 16
    assert verdict.verdict(True, first, mech) == expected
    assert verdict.verdict(None, first, mech) == expected  # the gate not (yet) failed: the verdict stands
    assert verdict.verdict(False, first, mech) == GATE_FAILED


def test_the_mechanism_pairs_epochs_3_and_4_and_an_arm_short_of_epoch_4_leaves_the_verdict_open():
    runs = _arms(verdict, [[0, 4, 5, 4, 5], [0, 5, 4, 5, 4]], [[8, 2, 2, 2, 2], [8, 2, 2, 3, 2]])
    mech = verdict.mechanism(runs)  # distance = 0.5 x the share of tasks at p = 0
    assert mech["genenv_minus_random_epochs_3_4"]["difference"] == pytest.approx(-0.5 * (2.5 + 2.0) / 2 / 8)
    unfinished = [_run(verdict, "genenv", 0, [2, 2, 2]), _run(verdict, "random", 0, [2, 2, 2, 2, 2])]
    first = verdict.primary(unfinished)
    assert not first["complete"] and first["seed_level"] is None  # one seed: no seed-level test
    assert verdict.verdict(True, first, verdict.mechanism(unfinished)) == NOT_YET
    assert verdict.verdict(True, None, mech) == NOT_YET


def _decided(d: float, low: float, high: float, late_high: float | None = 0.01, seeds=None) -> dict:
    first = {"genenv_minus_random": d, "low": low, "high": high, "complete": True, "seed_level": seeds}
    mech = {"genenv_minus_random_epochs_3_4": None if late_high is None else {"high": late_high}}
    return first, mech


def test_the_verdicts_boundaries():
    goal, against = verdict.GOAL, verdict.AGAINST
    assert (goal, against) == (12.5, 3.75)  # the written thresholds
    assert verdict.verdict(True, *_decided(goal, 1e-9, 20)) == AT_GOAL
    assert verdict.verdict(True, *_decided(goal - 1e-9, 1e-9, 20)) == SHORT
    assert verdict.verdict(True, *_decided(goal, 0.0, 20)) == INCONCLUSIVE  # a lower bound at 0 is not above it
    assert verdict.verdict(True, *_decided(against, -1, goal - 1e-9)) == AGAINST
    assert verdict.verdict(True, *_decided(against + 1e-9, -1, 10)) == INCONCLUSIVE
    assert verdict.verdict(True, *_decided(0.0, -1, goal)) == INCONCLUSIVE  # the upper bound reaches the goal
    assert verdict.verdict(True, *_decided(0.0, -1, 10, late_high=0.0)) == AGAINST  # 0: not wholly below 0
    assert verdict.verdict(True, *_decided(0.0, -1, 10, late_high=-1e-9)) == INCONCLUSIVE  # tasks closer to alpha
    assert verdict.verdict(True, *_decided(0.0, -1, 10, late_high=None)) == AGAINST  # no mechanism pair yet


def test_the_verdict_says_where_the_seed_level_test_disagrees():
    from genenv.significance import seed_level

    spread, agree = seed_level([22.5, 6.8, 6.8, 0.0]), seed_level([9.0, 9.5, 8.5, 9.2])
    assert verdict.verdict(True, *_decided(9.0, 1.0, 18.8, seeds=spread)) == SHORT + SEEDS_DO_NOT_EXCLUDE
    assert verdict.verdict(True, *_decided(9.0, 1.0, 18.8, seeds=agree)) == SHORT
    assert verdict.verdict(True, *_decided(9.0, -0.5, 18.8, seeds=agree)) == INCONCLUSIVE + SEEDS_EXCLUDE
    assert verdict.verdict(True, *_decided(9.0, -0.5, 18.8, seeds=spread)) == INCONCLUSIVE


def test_secondary_is_the_gain_per_thousand_episodes_on_the_frontier_items_of_the_shared_warm_start():
    warm = [0.0, 0.25, 0.5, 1.0]  # frontier: items 1 and 2
    runs = [
        _run(verdict, "genenv", 0, [1] * 5, warm=warm, final=[1.0, 0.75, 0.5, 0.0]),
        _run(verdict, "random", 0, [1] * 5, warm=warm, final=[0.0, 0.25, 0.25, 1.0]),
    ]
    second = verdict.secondary(runs)  # 5 epochs x 64 episodes = 320 episodes each
    assert second["frontier_items_per_seed"] == [2]
    assert second["gain_per_1000_episodes"]["genenv"] == pytest.approx(0.25 * 1000 / 320)
    assert second["gain_per_1000_episodes"]["random"] == pytest.approx(-0.125 * 1000 / 320)
    assert second["genenv_minus_random"] == pytest.approx(0.375 * 1000 / 320)
    runs[1] = _run(verdict, "random", 0, [1] * 5, warm=[0.0] * 4, final=[0.0] * 4)
    with pytest.raises(ValueError, match="do not share their warm start"):
        verdict.secondary(runs)


def test_calibration_reads_gate_c_from_random_round_0_and_the_rwr_criterion_from_rounds_3_and_4(tmp_path):

    def write(name: str, shares: list[float], distances: list[float], success: float = 0.15) -> None:
        rows = [
            {"round": r, "success": success, "share_graded": s, "mean_distance": d, "levels": {}}
            for r, (s, d) in enumerate(zip(shares, distances))
        ]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    write("random-s0", [0.1] * 5, [0.4] * 5)
    write("conditioned-s0", [0.15] * 5, [0.38] * 5)
    write("genenv-s0", [0.1, 0.15, 0.2, 0.3, 0.3], [0.4, 0.35, 0.3, 0.25, 0.25])
    write("genenv-s0-learning_rate0.001", [0.1, 0.1, 0.1, 0.2, 0.2], [0.4] * 5)
    cal = verdict.calibration(tmp_path)
    assert cal["c_off_target"] and cal["rwr_moves_simulator"] == {  # 0.3 - 0.15 >= 0.10, 0.25 < 0.38
        "genenv-s0": True,
        "genenv-s0-learning_rate0.001": False,  # 0.2 - 0.15 < 0.10
    }
    write("conditioned-s0", [0.25] * 5, [0.3] * 5)
    assert verdict.calibration(tmp_path)["rwr_moves_simulator"]["genenv-s0"] is False  # 0.3 - 0.25 < 0.10
    write("random-s0", [0.1] * 4, [0.4] * 4, success=0.4)
    cal = verdict.calibration(tmp_path)
    assert cal["c_off_target"] is False and cal["rwr_moves_simulator"]["genenv-s0"] is None  # random lacks round 4


def test_the_summary_and_figures_of_a_testbed_folder(tmp_path):
    folder = tmp_path / "bed"
    (folder / "runs").mkdir(parents=True)
    (folder / "calibration").mkdir()
    gate = {"rows": [{"a_graded_success": {"passed": True}, "b_ladder": {"passed": True}}]}
    (folder / "gate-t10.json").write_text(json.dumps(gate))
    (folder / "calibration" / "random-s0.jsonl").write_text(
        json.dumps({"round": 0, "success": 0.14, "share_graded": 0.1, "mean_distance": 0.4, "levels": {}}) + "\n"
    )
    warm = [0.25, 0.5, 0.0]
    mixed = {("genenv", 0): [0, 6, 5, 6, 7], ("genenv", 1): [0, 7, 6, 6, 5], ("random", 0): [0, 2, 2, 3, 1]}
    mixed[("random", 1)] = [0, 2, 1, 2, 3]
    for arm, final in (("genenv", [0.5, 0.75, 0.0]), ("random", warm)):
        for seed in (0, 1):
            run = _run(verdict, arm, seed, mixed[arm, seed], warm=warm, final=final)
            lines = [json.dumps({**m, "curriculum": arm, "seed": seed}) for m in run.metrics]
            (folder / "runs" / f"{arm}-s{seed}.jsonl").write_text("\n".join(lines) + "\n")
    verdict.main(["bed", "--results-root", str(tmp_path)])
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["gate"] == {"a": True, "b": True, "c": True, "passed": True}
    assert summary["seeds"] == [0, 1] and summary["arms"] == ["genenv", "random"]
    assert summary["primary"]["genenv_minus_random"] == pytest.approx(1000 * 4 / 64)
    assert summary["secondary"]["gain_per_1000_episodes"]["random"] == 0
    assert summary["primary"]["low"] < summary["primary"]["genenv_minus_random"] < summary["primary"]["high"]
    assert summary["verdict"] == AT_GOAL  # both seeds differ by 4 tasks an epoch: the t-test agrees
    assert all(
        (folder / f).stat().st_size > 0 for f in ("informative_share.png", "written_success.png", "held_out.png")
    )
