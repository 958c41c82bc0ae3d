"""benchmarks/agent_learning.py: an interrupted signal measurement continues only with the settings it began with."""

from __future__ import annotations

import json

import pytest
from conftest import load_script

SETTINGS = {"tasks_per_level": 20, "families": ["chain_sum@0-4"], "warm_start": 128}


def test_a_fresh_measurement_starts_empty_and_a_kept_one_continues(tmp_path):
    module = load_script("benchmarks/agent_learning.py")
    partial = tmp_path / "signal.partial.json"
    assert module.resumed(partial, SETTINGS) == {"settings": SETTINGS, "done": {}}
    kept = {"settings": SETTINGS, "done": {"0.7": {"chain_sum@0": {"solved": [1.0, 0.0]}}}}
    partial.write_text(json.dumps(kept))
    assert module.resumed(partial, SETTINGS) == kept


def test_keys_kept_under_other_settings_are_refused_and_left_in_place(tmp_path):
    module = load_script("benchmarks/agent_learning.py")
    partial = tmp_path / "signal.partial.json"
    partial.write_text(json.dumps({"settings": {**SETTINGS, "tasks_per_level": 8}, "done": {"1.0": {}}}))
    with pytest.raises(SystemExit, match="tasks_per_level': 8"):
        module.resumed(partial, SETTINGS)
    assert json.loads(partial.read_text())["done"] == {"1.0": {}}
