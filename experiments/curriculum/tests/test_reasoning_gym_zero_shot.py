"""experiments/curriculum/reasoning_gym_zero_shot.py: each item's samples read as one GRPO group."""

from types import SimpleNamespace

import pytest
import reasoning_gym_zero_shot


def _episodes(task_id, solved):
    task = SimpleNamespace(task_id=task_id)
    return [SimpleNamespace(task=task, info={"score_breakdown": {"solved": float(s)}}) for s in solved]


def test_groups_are_in_band_exactly_when_their_samples_disagree_for_g_8_and_k_04():
    episodes = (
        _episodes("a", [1] * 8)  # solved by all: no advantage
        + _episodes("b", [0] * 8)  # solved by none
        + _episodes("c", [1] + [0] * 7)  # 1/8 = 0.125: in band (|0.125 - 0.5| <= 0.4)
        + _episodes("d", [1] * 7 + [0])  # 7/8
    )
    shares = reasoning_gym_zero_shot.group_shares(episodes, alpha=0.5, k=0.4)
    assert shares == {"n": 4, "in_band": 0.5, "none": 0.25, "all": 0.25}
    narrow = reasoning_gym_zero_shot.group_shares(episodes, alpha=0.5, k=0.2)  # 1/8 and 7/8 now fall outside
    assert narrow["in_band"] == 0.0


def test_the_report_shows_group_columns_only_with_several_samples():
    row = {"n": 16, "score": 0.5, "solved": 0.5, "tool_call_first": 0.0}
    record = {"what": "x", "reasoning_gym_version": "v", "command": "c", "seconds": 1.0, "machine": "m",
              "qualifying_rule": "r", "qualifying": {"score": [], "solved": []}}  # fmt: skip
    single = reasoning_gym_zero_shot.markdown({**record, "per_family_level": {"chain_sum@1": row}})
    assert "in band" not in single and "| chain_sum | 1 | 16 | 0.500 | 0.500 | 0.00 |" in single
    groups = {"n": 2, "in_band": 0.5, "none": 0.5, "all": 0.0}
    grouped = reasoning_gym_zero_shot.markdown({**record, "band": {"alpha": 0.5, "k": 0.4}, "groups": groups,
                               "per_family_level": {"chain_sum@1": {**row, "groups": groups}}})  # fmt: skip
    assert "| chain_sum | 1 | 16 | 0.500 | 0.500 | 0.00 | 2 | 0.50 | 0.50 | 0.00 |" in grouped
    assert "All items: 2 groups, in band 0.50" in grouped


def test_a_folder_without_a_lora_adapter_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no LoRA adapter"):
        reasoning_gym_zero_shot.with_adapter(None, tmp_path)
