"""A truncated benchmark data file is named, with the setting that points at it and where to get the data again."""

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import ALFWORLD_MISSING, data_dir

from genenv.benchmarks.base import DataFileError, DataNotFoundError, get_benchmark

DAMAGED = {
    "apibank": ("test-data/level-1-api.json", {}, "level-1"),
    "bfcl": ("BFCL_v4_simple_python.json", {}, "simple_python"),
    "bamboogle": ("bamboogle_test.jsonl", {"search_model": "unused"}, "test"),
    "travelplanner": ("train/std_travelplanner_sft.jsonl", {}, "train"),
    "alfworld": (None, {}, "valid_seen"),  # the first game's traj_data.json
}


def _mirror(source: Path, target: Path, damaged: str) -> None:
    """``target`` mirrors ``source`` by symbolic links, with ``damaged`` a truncated copy."""
    head, _, rest = damaged.partition("/")
    target.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.name != head:
            os.symlink(entry, target / entry.name)
        elif rest:
            _mirror(entry, target / head, rest)
        else:
            text = entry.read_text(encoding="utf-8")
            (target / head).write_text(text[: len(text) // 2], encoding="utf-8")


@pytest.mark.parametrize("name", sorted(DAMAGED))
def test_a_truncated_data_file_is_named_with_the_setting_and_the_source(name, tmp_path):
    relpath, options, split = DAMAGED[name]
    source = data_dir(name)
    if name == "alfworld":
        pytest.importorskip("alfworld", reason=ALFWORLD_MISSING)
        relpath = str(next((source / "json_2.1.1" / "valid_seen").rglob("traj_data.json")).relative_to(source))
    _mirror(source, tmp_path / name, relpath)
    adapter = get_benchmark(name, data_dir=tmp_path / name, **options)
    with pytest.raises(DataFileError) as error:
        adapter.load_tasks(split)
    message = str(error.value)
    assert str(tmp_path / name / relpath) in message and "GENENV_DATA_DIR" in message and "How to get" in message


def test_alfworld_names_a_missing_game_file_and_the_setting(tmp_path):
    pytest.importorskip("alfworld", reason=ALFWORLD_MISSING)
    source = data_dir("alfworld")
    game = next((source / "json_2.1.1" / "valid_seen").rglob("game.tw-pddl")).relative_to(source)
    _mirror(source, tmp_path, str(game))
    (tmp_path / game).unlink()
    adapter = get_benchmark("alfworld", data_dir=tmp_path)
    with pytest.raises(DataNotFoundError) as error:
        adapter.load_tasks("valid_seen")
    message = str(error.value)
    assert str(tmp_path / game) in message and "GENENV_DATA_DIR" in message and "How to get" in message
    adapter.load_tasks("valid_unseen")  # the other splits are whole


def test_alfworld_leaves_out_a_trial_of_another_task_type_as_alfworld_does(tmp_path):
    pytest.importorskip("alfworld", reason=ALFWORLD_MISSING)
    source = data_dir("alfworld")
    split = tmp_path / "json_2.1.1" / "valid_unseen"
    task_dir = min((source / "json_2.1.1" / "valid_unseen").iterdir())
    shutil.copytree(task_dir, split / task_dir.name)
    other = split / "pick_two_obj_then_slice-Apple-None-Fridge-1" / "trial_T0"
    other.mkdir(parents=True)
    (other / "traj_data.json").write_text(json.dumps({"task_type": "pick_two_obj_then_slice"}), encoding="utf-8")
    tasks = get_benchmark("alfworld", data_dir=tmp_path).load_tasks("valid_unseen")
    assert tasks and [task.metadata["game"] for task in tasks] == [
        path.relative_to(tmp_path).as_posix() for path in sorted(split.rglob("game.tw-pddl"))
    ]
