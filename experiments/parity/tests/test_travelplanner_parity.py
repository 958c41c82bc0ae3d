"""experiments/parity/travelplanner_parity.py on the official TravelPlanner code: the verdicts that
tests/test_travelplanner.py records for answers with more or fewer entries than the trip's days are the official
code's own. Runs where TRAVELPLANNER_OFFICIAL_DIR names a copy of that code (da7c1d4)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import travelplanner_parity
from conftest import data_dir
from test_travelplanner import (
    OFFICIAL_COMMONSENSE_KEYS,
    OFFICIAL_DAY_COUNT_VERDICTS,
    OFFICIAL_HARD_KEYS,
    day_count_answers,
)

from genenv.benchmarks.travelplanner import TravelPlannerAdapter

OFFICIAL_DIR = os.environ.get("TRAVELPLANNER_OFFICIAL_DIR")


@pytest.mark.skipif(not OFFICIAL_DIR, reason="TRAVELPLANNER_OFFICIAL_DIR (the official code, da7c1d4) is not set")
def test_recorded_day_count_verdicts_match_the_official_code():
    train = TravelPlannerAdapter(data_dir("travelplanner")).load_tasks("train")
    official = Path(OFFICIAL_DIR).resolve()
    travelplanner_parity.prepare_official_dir(official, data_dir("travelplanner").parent)
    keys = list(OFFICIAL_DAY_COUNT_VERDICTS)
    plans = [day_count_answers(train[i].gold["plan"], train[i].gold["query"]["days"])[case] for i, case in keys]
    verdicts, _ = travelplanner_parity.run_official(
        official, [{"query": train[i].gold["query"], "plan": p} for (i, _), p in zip(keys, plans)], False
    )
    for key, verdict in zip(keys, verdicts):
        commonsense = tuple(verdict["commonsense"][k][0] for k in OFFICIAL_COMMONSENSE_KEYS)
        hard = tuple(verdict["hard"][k][0] for k in OFFICIAL_HARD_KEYS) if "hard" in verdict else None
        recorded = (verdict["delivered"], commonsense, hard, travelplanner_parity.official_final(verdict))
        assert recorded == OFFICIAL_DAY_COUNT_VERDICTS[key], key
