"""experiments/main_job/main_job_seeds.py: the verdict on every branch and the summary from synthetic metrics."""

from __future__ import annotations

import json

import main_job_seeds as seeds
import pytest

from genenv.significance import seed_level


@pytest.mark.parametrize(
    ("rises", "starts"),
    [
        ([0.04, 0.05, 0.06, 0.05, 0.04], "a rise over the warm start across seeds"),
        ([0.08, -0.02, 0.05, 0.00, 0.03], "null"),
        ([-0.04, -0.05, -0.06, -0.05, -0.04], "a fall below the warm start across seeds"),
    ],
)
def test_verdict_follows_the_interval_over_seeds(rises, starts):
    assert seeds.verdict(seed_level(rises), sum(rises) / len(rises)).startswith(starts)


def write_seed(folder, seed: int, warm: list[float], last: list[float]) -> None:
    """A finished job's two epoch records, holding only what the curve reads."""
    start = [0.0] * len(warm)
    records = [
        {"epoch": 0, "validation_start": {"task_scores": start}, "validation_warm_start": {"task_scores": warm},
         "validation": {"task_scores": warm}},
        {"epoch": 1, "validation": {"task_scores": last}},
    ]  # fmt: skip
    (folder / f"seed-{seed}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_summary_reads_each_seeds_rise_over_the_warm_start(tmp_path, monkeypatch):
    monkeypatch.setattr(seeds, "RESULTS", tmp_path)
    monkeypatch.setattr(seeds, "REPO", tmp_path.parent)
    warm = [0.0] * 10 + [1.0] * 10
    for seed, gained in enumerate([2, 3, 2, 4, 2]):  # tasks the last epoch solves beyond the warm start's
        write_seed(tmp_path, seed, warm, [1.0] * gained + warm[gained:])
    seeds.summary(None)
    result = json.loads((tmp_path / "seeds.json").read_text())
    assert result["seeds"] == [0, 1, 2, 3, 4]
    assert result["per_seed"]["1"]["over_warm_start"]["rise"] == pytest.approx(3 / 20)
    assert result["per_seed"]["1"]["over_start"]["rise"] == pytest.approx(13 / 20)
    assert result["over_warm_start"]["mean"] == pytest.approx(13 / 100)
    assert result["verdict"].startswith("a rise over the warm start across seeds")


def test_summary_needs_two_finished_seeds(tmp_path, monkeypatch):
    monkeypatch.setattr(seeds, "RESULTS", tmp_path)
    monkeypatch.setattr(seeds, "REPO", tmp_path.parent)
    write_seed(tmp_path, 0, [0.0, 1.0], [1.0, 1.0])
    with pytest.raises(SystemExit, match="1 finished seeds"):
        seeds.summary(None)
