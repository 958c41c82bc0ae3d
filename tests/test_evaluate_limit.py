"""``genenv.evaluate``'s task selection: ``stride`` then ``limit``, the limit spread over families in turn by default,
the same tasks every time; the first N with ``limit_spread=false``."""

from __future__ import annotations

import pytest
from toy_benchmark import ToyAdapter

from genenv.benchmarks.base import Task
from genenv.evaluate import select_tasks


class FamilyToy(ToyAdapter):
    """Families by task id prefix: ``a-0``, ``a-1``, ``b-0``, ..."""

    def family(self, task: Task) -> str:
        return task.task_id.split("-")[0]


def tasks(*ids: str) -> list[Task]:
    return [Task(task_id, "toy", "?", {"sum": 0}, "test") for task_id in ids]


def ids(selected: list[Task]) -> list[str]:
    return [task.task_id for task in selected]


# the split's order: family a first (5 tasks), then b (2), then c (3), as a split sorted by family would be
SPLIT = tasks("a-0", "a-1", "a-2", "a-3", "a-4", "b-0", "b-1", "c-0", "c-1", "c-2")


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (1, ["a-0"]),
        (3, ["a-0", "b-0", "c-0"]),
        (5, ["a-0", "a-1", "b-0", "b-1", "c-0"]),  # round 2: a, b, then c would be the 6th
        (8, ["a-0", "a-1", "a-2", "b-0", "b-1", "c-0", "c-1", "c-2"]),  # round 3: a and c only
        (10, ids(SPLIT)),
        (50, ids(SPLIT)),
    ],
)
def test_the_limit_takes_the_families_in_turn_and_keeps_the_split_order(limit, expected):
    assert ids(select_tasks(FamilyToy(), SPLIT, limit=limit)) == expected


def test_a_family_with_no_task_left_is_passed_over():
    # b has 2 tasks: after round 2 the rounds go a, c, a, c, ...
    assert ids(select_tasks(FamilyToy(), SPLIT, limit=9)) == ["a-0", "a-1", "a-2", "a-3", *ids(SPLIT[5:])]


def test_the_selection_is_the_same_every_time_and_independent_of_the_order_families_interleave():
    interleaved = [SPLIT[i] for i in (0, 5, 7, 1, 6, 8, 2, 9, 3, 4)]  # a-0 b-0 c-0 a-1 b-1 c-1 a-2 c-2 a-3 a-4
    first = ids(select_tasks(FamilyToy(), interleaved, limit=6))
    assert first == ids(select_tasks(FamilyToy(), interleaved, limit=6))
    assert first == ["a-0", "b-0", "c-0", "a-1", "b-1", "c-1"]  # split order kept, two of each family


def test_stride_comes_first_and_limit_spread_false_takes_the_first_n():
    strided = select_tasks(FamilyToy(), SPLIT, stride=2)
    assert ids(strided) == ["a-0", "a-2", "a-4", "b-1", "c-1"]
    assert ids(select_tasks(FamilyToy(), SPLIT, stride=2, limit=3)) == ["a-0", "b-1", "c-1"]
    assert ids(select_tasks(FamilyToy(), SPLIT, limit=3, spread=False)) == ["a-0", "a-1", "a-2"]


@pytest.mark.parametrize(("setting", "value"), [("stride", 0), ("limit", 0), ("limit", "3"), ("stride", True)])
def test_bad_settings_are_named(setting, value):
    with pytest.raises(ValueError, match=f"{setting} must be a positive integer"):
        select_tasks(FamilyToy(), SPLIT, **{setting: value})


def test_the_default_config_spreads_reasoning_gyms_limit_over_its_families():
    """``python -m genenv.evaluate +bench=reasoning_gym limit=9``: the test split lists its 9 families one after
    another; the 9 tasks are each family's first, where the first 9 would all be ``basic_arithmetic@0``."""
    pytest.importorskip("reasoning_gym")
    from hydra import compose, initialize_config_dir

    from genenv.benchmarks.base import get_benchmark
    from genenv.config import CONFIG_DIR

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("evaluate", overrides=["+bench=reasoning_gym", "limit=9"])
    adapter = get_benchmark("reasoning_gym")
    split = adapter.load_tasks("test")
    chosen = select_tasks(adapter, split, cfg.stride, cfg.limit, cfg.limit_spread)
    first_of_each = {}
    for task in split:
        first_of_each.setdefault(adapter.family(task), task.task_id)
    assert ids(chosen) == list(first_of_each.values()) and len(chosen) == 9
    assert {adapter.family(task) for task in select_tasks(adapter, split, 1, 9, spread=False)} == {"basic_arithmetic@0"}
