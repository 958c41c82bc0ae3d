"""Curricula x seeds statistics (experiments/curriculum/analysis.py) on metrics records written here."""

import json

import analysis
import numpy as np
import pytest

band_share = analysis.band_share
difference = analysis.difference
family_success = analysis.family_success
gain_over_warm_start = analysis.gain_over_warm_start
held_out_curves = analysis.held_out_curves
in_band_by_curriculum = analysis.in_band_by_curriculum
load_experiment = analysis.load_experiment
mix_aim = analysis.mix_aim
mix_aim_by_curriculum = analysis.mix_aim_by_curriculum
plot_experiment = analysis.plot_experiment
report = analysis.report


def _record(curriculum, seed, epoch, scores, p_hat=0.5, kl=None, generated=8, levels=None, in_band=2):
    record = {
        "epoch": epoch, "curriculum": curriculum, "seed": seed, "p_hat": p_hat, "in_band": in_band, "fresh_tasks": 4,
        "validation": {"score": float(np.mean(scores)), "task_scores": scores},
        "simulator": {} if kl is None else {"kl": kl, "examples": 4}, "generated_tasks": generated,
        "fresh_per_family": levels or {"chain_sum@0": 2, "chain_sum@1": 2}, "p_hat_per_task": [0.0, 0.5, 1.0, 1.0],
        "agent": {"episodes": 32}, "seconds": 1800.0, "stage_seconds": {"agent": 900.0, "validation": 360.0},
    }  # fmt: skip
    if epoch == 0:
        record["validation_start"] = {"task_scores": [0.0] * len(scores)}
        record["validation_warm_start"] = {"task_scores": [0.0] * len(scores)}
    return record


def _write(folder, curriculum, seed, records):
    path = folder / f"{curriculum}-s{seed}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture
def experiment(tmp_path):
    """GenEnv solves 3 of 4 held-out tasks, Random 1 of 4 (the same tasks), on 3 seeds; Random's seed 2 stopped
    after epoch 0."""
    for seed in range(3):
        _write(tmp_path, "genenv", seed, [
            _record("genenv", seed, 0, [1.0, 1.0, 0.0, 0.0], p_hat=0.1, kl=0.01),
            _record("genenv", seed, 1, [1.0, 1.0, 1.0, 0.0], p_hat=0.5, kl=0.02, generated=16, in_band=seed + 1),
        ])  # fmt: skip
        random_records = [_record("random", seed, 0, [1.0, 0.0, 0.0, 0.0], p_hat=0.05)]
        if seed < 2:
            random_records.append(_record("random", seed, 1, [1.0, 0.0, 0.0, 0.0], p_hat=0.95, generated=16, in_band=0))
        _write(tmp_path, "random", seed, random_records)
    return load_experiment(tmp_path.glob("*.jsonl"))


def test_curves_average_each_stage_over_the_seeds_that_reached_it(experiment):
    curves = held_out_curves(experiment)
    assert [p["stage"] for p in curves["genenv"]] == ["start", "warm start", "epoch 0", "epoch 1"]
    assert [p["stage"] for p in curves["random"]] == ["start", "warm start", "epoch 0", "epoch 1"]
    assert [p["seeds"] for p in curves["random"]] == [3, 3, 3, 2]  # seed 2 stopped after epoch 0
    final = curves["genenv"][-1]
    assert final["score"] == pytest.approx(0.75) and final["low"] == final["high"] == pytest.approx(0.75)
    table = report(experiment, 0.5, 0.4, 10.0, 64)
    assert "| random | [0, 1, 2] | " in table and "0.250 [0.250, 0.250] (2 seeds) |" in table
    assert "0.750 [0.750, 0.750] |" in table  # genenv's epoch 1: every seed, no count


def test_a_stage_one_seed_reached_says_one_seed(tmp_path):
    _write(tmp_path, "random", 0, [_record("random", 0, 0, [1.0, 0.0]), _record("random", 0, 1, [1.0, 1.0])])
    _write(tmp_path, "random", 1, [_record("random", 1, 0, [1.0, 0.0])])
    assert "1.000 [1.000, 1.000] (1 seed) |" in report(load_experiment(tmp_path.glob("*.jsonl")), 0.5, 0.4, 10.0, 64)


def test_difference_is_paired_by_seed_and_task_at_the_last_shared_stage(experiment):
    diff = difference(experiment, "random")
    assert diff["stage"] == "epoch 1" and diff["seeds"] == [0, 1]  # seed 2 lacks epoch 1 in random
    assert diff["difference"] == pytest.approx(0.5)
    low, high = diff["interval"]
    assert 0 <= low < 0.5 < high <= 1  # resampling tasks spreads it: each task differs by 0 or 1
    assert diff["interval_seeds"] == pytest.approx([0.5, 0.5])  # every seed differs by the same amount


def test_difference_waits_for_a_scored_epoch(tmp_path):
    """Runs of a seed share the start and the warm start: comparing them there would report a difference of 0."""
    record = _record("genenv", 0, 0, [1.0, 0.0])
    del record["validation"]["task_scores"]  # epoch 0 not scored
    _write(tmp_path, "genenv", 0, [record])
    _write(tmp_path, "static", 0, [_record("static", 0, 0, [1.0, 1.0])])
    runs = load_experiment(tmp_path.glob("*.jsonl"))
    assert difference(runs, "static") is None
    assert "| static | no scored epoch of a seed both reached |" in report(runs, 0.5, 0.4, 10.0, 64)


def test_gain_over_warm_start_pairs_each_seed_with_its_own_warm_start(experiment, tmp_path):
    gain = gain_over_warm_start(experiment, "genenv")  # warm start 0 0 0 0, epoch 1: 1 1 1 0 on every seed
    assert gain["stage"] == "epoch 1" and gain["seeds"] == [0, 1, 2]
    assert gain["difference"] == pytest.approx(0.75) and gain["interval_seeds"] == pytest.approx([0.75, 0.75])
    assert (gain["down"], gain["up"]) == (0, 9)
    random = gain_over_warm_start(experiment, "random")  # seed 2 stopped after epoch 0: the last epoch, two seeds
    assert (random["stage"], random["seeds"], random["difference"]) == ("epoch 1", [0, 1], pytest.approx(0.25))
    assert gain_over_warm_start(experiment, "offline") is None
    # a run that got worse on one task and better on another: no gain, one task down and one up
    record = _record("genenv", 0, 0, [0.0, 1.0, 1.0, 0.0])
    record["validation_warm_start"] = {"task_scores": [1.0, 0.0, 1.0, 0.0]}
    _write(tmp_path, "genenv", 0, [record])
    even = gain_over_warm_start(load_experiment([tmp_path / "genenv-s0.jsonl"]), "genenv")
    assert (
        even["difference"] == 0
        and (even["down"], even["up"]) == (1, 1)
        and even["interval"][0] < 0 < even["interval"][1]
    )


def test_gain_refuses_a_warm_start_scored_on_other_tasks(tmp_path):
    record = _record("genenv", 0, 0, [1.0, 0.0])
    record["validation_warm_start"] = {"task_scores": [1.0, 0.0, 1.0]}
    _write(tmp_path, "genenv", 0, [record])
    with pytest.raises(ValueError, match="genenv seed 0: epoch 0 and the warm start scored different held-out sets"):
        gain_over_warm_start(load_experiment(tmp_path.glob("*.jsonl")), "genenv")


def test_difference_refuses_different_held_out_sets(tmp_path):
    _write(tmp_path, "genenv", 0, [_record("genenv", 0, 0, [1.0, 0.0])])
    _write(tmp_path, "static", 0, [_record("static", 0, 0, [1.0, 0.0, 1.0])])
    with pytest.raises(ValueError, match="different held-out sets"):
        difference(load_experiment(tmp_path.glob("*.jsonl")), "static")


def test_band_share_counts_epochs_after_the_first(experiment):
    genenv = next(r for r in experiment if r.curriculum == "genenv")
    random = next(r for r in experiment if r.curriculum == "random" and r.seed == 0)
    assert band_share(genenv, 0.5, 0.2) == 1.0  # epoch 0 (p_hat 0.1) is not counted
    assert band_share(random, 0.5, 0.2) == 0.0


def test_in_band_share_counts_tasks_after_the_first_epoch_per_seed(experiment):
    shares = in_band_by_curriculum(experiment)
    assert shares["genenv"]["per_seed"] == {0: 0.25, 1: 0.5, 2: 0.75}  # epoch 0's 2 of 4 are not counted
    assert shares["genenv"]["share"] == pytest.approx(0.5)
    assert 0.25 <= shares["genenv"]["low"] < 0.5 < shares["genenv"]["high"] <= 0.75
    assert shares["random"]["per_seed"] == {0: 0.0, 1: 0.0}  # seed 2 has no epoch after the first
    assert (shares["genenv"]["none"], shares["genenv"]["all"]) == (0.25, 0.5)  # p_hat_per_task 0, 0.5, 1, 1
    assert "| 0.250 | 0.500 |" in report(experiment, 0.5, 0.4, 10.0, 64)


def test_records_without_a_seed_are_refused(tmp_path):
    record = _record("genenv", 0, 0, [1.0])
    del record["seed"]
    _write(tmp_path, "genenv", 0, [record])
    with pytest.raises(ValueError, match="no 'seed'"):
        load_experiment(tmp_path.glob("*.jsonl"))


def test_report_and_figures(experiment, tmp_path):
    text = report(experiment, alpha=0.5, band_k=0.2, beta=10.0, stats_window=64)
    assert "| random | epoch 1 | [0, 1] | +0.500 |" in text
    assert (
        "| genenv | epoch 1 | [0, 1, 2] | +0.750 | [+0.500, +1.000] | [+0.750, +0.750] | +0.750, +0.750, +0.750 |"
        in text
    )
    assert "| random | epoch 1 | [0, 1] | +0.250 |" in text
    assert "| genenv s0 | 0.10, 0.50 | 100% | 2/4, 1/4 | 16 | 0.0200 |" in text
    assert "| random | [0, 1] | 0.000 [0.000, 0.000] | 0.000, 0.000 |" in text
    assert "| run | epochs | agent episodes | hours | load | agent h | validation h |" in text
    assert "| random s2 | 1 | 32 | 0.50 | - | 0.25 | 0.10 |" in text  # written before epochs recorded the load
    assert "| genenv s0 | 2 | 64 | 1.00 | - | 0.50 | 0.20 |" in text
    paths = plot_experiment(experiment, tmp_path / "figures", alpha=0.5, band_k=0.2, beta=10.0, stats_window=64)
    assert [p.name for p in paths] == [
        "held_out.png",
        "p_hat.png",
        "level_mix.png",
        "kl_and_data_efficiency.png",
        "mix_aim.png",
    ]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_epoch_axes_tick_whole_epochs_also_for_a_one_epoch_run(experiment, tmp_path, monkeypatch):
    module = analysis
    saved = {}

    def keep(fig, path):
        saved[path.name] = fig
        return path

    monkeypatch.setattr(module, "save_figure", keep)
    one_epoch = experiment + load_experiment([_write(tmp_path, "static", 0, [_record("static", 0, 0, [1.0] * 4)])])
    plot_experiment(one_epoch, tmp_path / "figures", alpha=0.5, band_k=0.2, beta=10.0, stats_window=64)
    (static_panel,) = [ax for ax in saved["level_mix.png"].axes if ax.get_title() == "static"]
    low, high = static_panel.get_xlim()
    assert [t for t in static_panel.get_xticks() if low <= t <= high] == [0]
    p_hat_axis = saved["p_hat.png"].axes[0]
    assert all(float(t).is_integer() for t in p_hat_axis.get_xticks())


def test_budget_states_the_load_the_epochs_recorded(tmp_path):
    """The 15-minute load average at each epoch's end, averaged over the epochs that recorded it, beside the hours."""
    loaded = [_record("genenv", 0, epoch, [1.0, 0.0]) | {"load_average": [9.0, 9.0, load]}
              for epoch, load in enumerate([2.0, 3.0])]  # fmt: skip
    resumed = [_record("random", 0, 0, [1.0, 0.0]), _record("random", 0, 1, [1.0, 0.0]) | {"load_average": [1, 1, 2.5]}]
    _write(tmp_path, "genenv", 0, loaded)
    _write(tmp_path, "random", 0, resumed)
    text = report(load_experiment(tmp_path.glob("*.jsonl")), alpha=0.5, band_k=0.2, beta=10.0, stats_window=64)
    assert "| genenv s0 | 2 | 64 | 1.00 | 2.5 | 0.50 | 0.20 | - |" in text
    assert "| random s0 | 2 | 64 | 1.00 | 2.5 (1 of 2 epochs) | 0.50 | 0.20 | - |" in text


def test_budget_states_what_the_pool_cost_wherever_its_batches_were_written(tmp_path):
    """A static or offline run's epoch 0 records its pool's writing time, batches written by another run included."""
    for seed, timed in [(0, 4), (1, 3)]:
        pooled = _record("offline", seed, 0, [1.0, 0.0]) | {"pool_writing": {"batches": 4, "timed_batches": timed,
                                                                              "seconds": 1800.0 * timed}}  # fmt: skip
        _write(tmp_path, "offline", seed, [pooled])
    text = report(load_experiment(tmp_path.glob("*.jsonl")), alpha=0.5, band_k=0.2, beta=10.0, stats_window=64)
    assert "| offline s0 | 1 | 32 | 0.50 | - | 0.25 | 0.10 | 2.00 |" in text
    assert "| offline s1 | 1 | 32 | 0.50 | - | 0.25 | 0.10 | 1.50 (3 of 4 batches timed) |" in text


def _mix_record(curriculum, seed, epoch, fresh, played, shown=None):
    """An epoch of 8-attempt tasks: ``fresh`` family key -> tasks written, ``played`` key -> its p_hat there."""
    record = _record(curriculum, seed, epoch, [1.0], levels=fresh) | {
        "fresh_tasks": sum(fresh.values()), "agent": {"episodes": 8 * sum(fresh.values())},
        "p_hat_per_family": played, "p_hat_per_task": [played[k] for k, n in fresh.items() for _ in range(n)],
    }  # fmt: skip
    if shown is not None:
        record["family_success"] = shown
    return record


def test_family_success_is_the_recorded_one_or_rebuilt_from_the_last_window_of_episodes(tmp_path):
    records = [
        _mix_record("genenv", 0, 0, {"a@0": 4}, {"a@0": 0.25}),  # 32 episodes at 0.25
        _mix_record("genenv", 0, 1, {"a@0": 8, "a@1": 1}, {"a@0": 0.75, "a@1": 0.0}),  # 64 at 0.75, 8 at 0
        _mix_record("genenv", 0, 2, {"a@0": 1}, {"a@0": 1.0}, shown={"a@0": 0.7, "a@1": 0.1}),
    ]
    (run,) = load_experiment([_write(tmp_path, "genenv", 0, records)])
    assert family_success(run, 0, 64) == ({}, False)
    assert family_success(run, 1, 64) == ({"a@0": 0.25}, False)
    assert family_success(run, 2, 64) == ({"a@0": 0.7, "a@1": 0.1}, True)
    del records[2]["family_success"]
    (run,) = load_experiment([_write(tmp_path, "genenv", 0, records)])
    assert family_success(run, 2, 64) == ({"a@0": 0.75, "a@1": 0.0}, False)  # the window holds epoch 1's 64 only
    rates, exact = family_success(run, 2, 96)  # 64 episodes at 0.75 and the last 32 of epoch 0 at 0.25
    assert rates["a@0"] == pytest.approx((64 * 0.75 + 32 * 0.25) / 96) and not exact


def test_mix_aim_tells_a_mix_that_follows_the_agent_from_one_that_does_not(tmp_path, monkeypatch):
    """The agent solves a@0 half the time and a@1 never. GenEnv writes a@0 after epoch 0, Random a@1: both land where
    they aimed at the level of keys, yet each of GenEnv's tasks is solved by all or none of its attempts."""
    shown = {"a@0": 0.5, "a@1": 0.0}
    for seed in range(2):
        first = {"a@0": 1, "a@1": 1}, {"a@0": 0.5, "a@1": 0.0}
        _write(tmp_path, "genenv", seed, [_mix_record("genenv", seed, 0, *first),
                                          _mix_record("genenv", seed, 1, {"a@0": 2}, {"a@0": 0.5}, shown)])  # fmt: skip
        _write(tmp_path, "random", seed, [_mix_record("random", seed, 0, *first),
                                          _mix_record("random", seed, 1, {"a@1": 2}, {"a@1": 0.0}, shown)])  # fmt: skip
    runs = load_experiment(tmp_path.glob("*.jsonl"))
    genenv = next(r for r in runs if r.curriculum == "genenv")
    genenv.metrics[1]["p_hat_per_task"][:] = [0.0, 1.0]  # key a@0 at 0.5 over two unanimous tasks
    aim = mix_aim(genenv, alpha=0.5, beta=10.0, stats_window=64)
    assert aim["written"] == aim["played"] == pytest.approx(1.0) and aim["exact"]
    assert aim["tasks"] == pytest.approx(np.exp(-2.5))
    by_curriculum = mix_aim_by_curriculum(runs, alpha=0.5, beta=10.0, stats_window=64)
    assert by_curriculum["random"]["written"] == pytest.approx((np.exp(-2.5),) * 3)
    minus = by_curriculum["random"]["minus"]
    assert minus["written"] == pytest.approx((1 - np.exp(-2.5),) * 3) and by_curriculum["random"]["paired_seeds"] == [
        0,
        1,
    ]
    text = report(runs, alpha=0.5, band_k=0.4, beta=10.0, stats_window=64)
    assert (
        "## Does the task mix follow the agent?" in text
        and "| genenv minus random | [0, 1] | +0.918 [+0.918, +0.918]" in text
    )
    module = analysis
    saved = {}
    monkeypatch.setattr(module, "save_figure", lambda fig, path: saved.setdefault(path.name, fig) and path)
    plot_experiment(runs, tmp_path / "figures", alpha=0.5, band_k=0.4, beta=10.0, stats_window=64)
    shown_panel = saved["mix_aim.png"].axes[0]
    lines = {line.get_label(): list(line.get_ydata()) for line in shown_panel.get_lines()}
    assert lines == {"genenv": [pytest.approx(1.0)], "random": [pytest.approx(np.exp(-2.5))]}  # epoch 1, both seeds
