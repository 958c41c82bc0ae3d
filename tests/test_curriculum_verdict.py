"""experiments/curriculum/verdict.py: the second curriculum test's pre-registered measures and verdict."""

from __future__ import annotations

import json

import pytest
from conftest import load_script


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
    verdict = load_script("experiments/curriculum/verdict.py")
    signal = verdict.epoch_signal(_record(1, [0.0, 0.25, 0.5, 1.0]))
    assert signal["informative"] == 2 and signal["share"] == 0.5
    assert signal["per_1000"] == pytest.approx(1000 * 2 / 32)
    assert signal["distance"] == pytest.approx((0.5 + 0.25 + 0 + 0.5) / 4)


def test_primary_pairs_seeds_and_epochs_1_to_4_and_the_verdict_follows_the_written_rules():
    verdict = load_script("experiments/curriculum/verdict.py")
    # GenEnv has 3 more informative tasks of 8 in every epoch after the first (epoch 0 differs and is left out)
    runs = [_run(verdict, "genenv", s, [0, 5, 5, 5, 5]) for s in (0, 1)]
    runs += [_run(verdict, "random", s, [8, 2, 2, 2, 2]) for s in (0, 1)]
    first = verdict.primary(runs)
    assert first["genenv_minus_random"] == pytest.approx(1000 * 3 / 64) and first["complete"]
    assert first["low"] == first["high"] == pytest.approx(1000 * 3 / 64) and first["seeds"] == [0, 1]
    mech = verdict.mechanism(runs)
    assert mech["genenv_minus_random_epochs_3_4"]["difference"] == pytest.approx(-3 / 8 * 0.5)
    assert verdict.verdict(True, first, mech).startswith("GenEnv gives GRPO more informative groups")
    assert verdict.verdict(False, first, mech).startswith("gate failed")
    same = [_run(verdict, arm, s, [2, 2, 2, 2, 2]) for arm in ("genenv", "random") for s in (0, 1)]
    assert verdict.verdict(True, verdict.primary(same), verdict.mechanism(same)).startswith("against GenEnv")
    unfinished = [_run(verdict, "genenv", 0, [2, 2, 2]), _run(verdict, "random", 0, [2, 2, 2, 2, 2])]
    assert not verdict.primary(unfinished)["complete"]
    assert verdict.verdict(True, verdict.primary(unfinished), verdict.mechanism(unfinished)).startswith("not yet")


def test_secondary_is_the_gain_per_thousand_episodes_on_the_frontier_items_of_the_shared_warm_start():
    verdict = load_script("experiments/curriculum/verdict.py")
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
    verdict = load_script("experiments/curriculum/verdict.py")

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
    verdict = load_script("experiments/curriculum/verdict.py")
    folder = tmp_path / "bed"
    (folder / "runs").mkdir(parents=True)
    (folder / "calibration").mkdir()
    gate = {"rows": [{"a_graded_success": {"passed": True}, "b_ladder": {"passed": True}}]}
    (folder / "gate-t10.json").write_text(json.dumps(gate))
    (folder / "calibration" / "random-s0.jsonl").write_text(
        json.dumps({"round": 0, "success": 0.14, "share_graded": 0.1, "mean_distance": 0.4, "levels": {}}) + "\n"
    )
    warm = [0.25, 0.5, 0.0]
    for arm, mixed, final in (("genenv", [0, 6, 6, 6, 6], [0.5, 0.75, 0.0]), ("random", [0, 2, 2, 2, 2], warm)):
        for seed in (0, 1):
            run = _run(verdict, arm, seed, mixed, warm=warm, final=final)
            lines = [json.dumps({**m, "curriculum": arm, "seed": seed}) for m in run.metrics]
            (folder / "runs" / f"{arm}-s{seed}.jsonl").write_text("\n".join(lines) + "\n")
    verdict.main(["bed", "--results-root", str(tmp_path)])
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["gate"] == {"a": True, "b": True, "c": True, "passed": True}
    assert summary["seeds"] == [0, 1] and summary["arms"] == ["genenv", "random"]
    assert summary["primary"]["genenv_minus_random"] == pytest.approx(1000 * 4 / 64)
    assert summary["secondary"]["gain_per_1000_episodes"]["random"] == 0
    assert summary["verdict"].startswith("GenEnv gives GRPO more informative groups per episode than Random, at the")
    assert all(
        (folder / f).stat().st_size > 0 for f in ("informative_share.png", "written_success.png", "held_out.png")
    )
