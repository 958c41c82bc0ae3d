"""experiments/curriculum/simulator_response.py: how the simulator's written family keys relate to the requested
ones."""

import dataclasses
import json
import math

import simulator_response

from genenv.benchmarks.reasoning_gym import ReasoningGymAdapter
from genenv.envs.simulator import difficulty_instruction


def _proposal(adapter, requested, level, success, epoch):
    name = requested.split("@")[0]
    task = adapter.parse_task({"family": name, "level": level, "seed": 5}, requested)
    prompt = f"...\n\n{difficulty_instruction(success, 0.5)}\nWrite one new task of kind '{requested}' as JSON."
    return {"epoch": epoch, "family": requested, "messages": [{"role": "user", "content": prompt}],
            "task": dataclasses.asdict(task)}  # fmt: skip


def test_offsets_per_instruction_and_per_epoch_and_attempt_outcomes_per_level(tmp_path):
    adapter = ReasoningGymAdapter(families=["chain_sum@0-2"], test_per_level=1, validation_per_level=1,
                                  train_per_level=2)  # fmt: skip
    pools = tmp_path / "run" / "pools"
    pools.mkdir(parents=True)
    records = [
        _proposal(adapter, "chain_sum@1", 2, 0.9, 0),  # told "harder", went up
        _proposal(adapter, "chain_sum@1", 1, 0.9, 0),  # told "harder", copied
        _proposal(adapter, "chain_sum@1", 0, 0.1, 1),  # told "easier", went down
        _proposal(adapter, "chain_sum@0", 0, None, 1),  # no history, copied
        {"epoch": 1, "family": "chain_sum@0", "messages": [], "task": None},  # a rejected proposal: not counted
    ]
    (pools / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    traces = [("a", "chain_sum@1", r, "on_policy") for r in (1.0, 0.0)]
    traces += [("b", "chain_sum@2", r, "on_policy") for r in (0.0, 0.0)] + [("c", "chain_sum@2", 1.0, "base")]
    lines = [{"epoch": 0, "source": source, "family": key, "task": {"task_id": task}, "reward": reward}
             for task, key, reward, source in traces]  # fmt: skip
    (pools / "traces.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = simulator_response.response(tmp_path / "run")
    assert result["instruction harder"] == {"n": 2, "at_request": 0.5, "mean_offset": 0.5, "offsets": {0: 1, 1: 1}}
    assert result["instruction easier"]["offsets"] == {-1: 1} and result["instruction none"]["at_request"] == 1.0
    assert result["epoch 0"]["n"] == 2 and result["epoch 1"]["mean_offset"] == -0.5
    assert result["requested level 1, harder"]["offsets"] == {0: 1, 1: 1}
    assert result["requested level 1, easier"]["offsets"] == {-1: 1} and result["requested level 0, none"]["n"] == 1
    outcomes = simulator_response.outcomes(simulator_response.played(tmp_path / "run"))
    assert outcomes == {
        "level 1": {"tasks": 1, "mean_p_hat": 0.5, "p_hat_0": 0.0, "p_hat_1": 0.0, "disagree": 1.0},
        "level 2": {"tasks": 1, "mean_p_hat": 0.0, "p_hat_0": 1.0, "p_hat_1": 0.0, "disagree": 0.0},
    }
    table = simulator_response.table("run", result, outcomes)
    assert "| instruction harder | 2 | 0.500 | +0.500 | +0: 1, +1: 1 |" in table


def test_pay_prices_each_played_key_by_the_rwr_weight_relative_to_a_task_at_alpha(tmp_path):
    run = tmp_path / "run"
    (run / "pools").mkdir(parents=True)
    (run / ".hydra").mkdir()
    (run / ".hydra" / "config.yaml").write_text("coevolution:\n  alpha: 0.5\n  beta: 10.0\n  band_k: 0.4\n  lam: 1.0\n")
    attempts = {("a", "chain_sum@1"): [1.0, 0.0], ("b", "chain_sum@2"): [0.0] * 8}
    attempts[("c", "chain_sum@2")] = [1.0] + [0.0] * 7  # p_hat 0.125: in the band, R_env = exp(-10 * 0.375**2)
    lines = [{"epoch": 0, "source": "on_policy", "family": key, "task": {"task_id": task}, "reward": reward}
             for (task, key), rewards in attempts.items() for reward in rewards]  # fmt: skip
    lines.append({"epoch": 0, "source": "expert", "family": "chain_sum@1", "task": {"task_id": "a"}, "reward": 1.0})
    (run / "pools" / "traces.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    asked = [{"epoch": 0, "family": "chain_sum@1", "messages": [{}], "task": {"task_id": task}} for task in "ac"]
    asked.append({"epoch": 1, "family": "chain_sum@2", "messages": [{}], "task": {"task_id": "b"}})  # not played then
    (run / "pools" / "tasks.jsonl").write_text("".join(json.dumps(record) + "\n" for record in asked))
    paid = simulator_response.pay(run, simulator_response.played(run), lams=(5.0,))
    assert list(paid) == ["chain_sum@1", "chain_sum@2", "at the requested key", "at another key"]
    assert paid["at the requested key"] == paid["chain_sum@1"]
    assert paid["at another key"]["tasks"] == 1 and paid["at another key"]["in_band"] == 1.0
    assert paid["chain_sum@1"] == {"tasks": 1, "in_band": 1.0, "pay": {1.0: (1.0, 1.0, 1.0), 5.0: (1.0, 1.0, 1.0)}}
    second = paid["chain_sum@2"]
    r_env = math.exp(-10 * 0.375**2)
    assert second["tasks"] == 2 and second["in_band"] == 0.5
    assert math.isclose(second["pay"][1.0][0], math.exp(r_env - 1) / 2)
    assert math.isclose(second["pay"][5.0][0], math.exp(5 * (r_env - 1)) / 2)
    low, high = second["pay"][1.0][1:]
    assert low == 0.0 and math.isclose(high, math.exp(r_env - 1))
    assert "| chain_sum@2 | 2 | 0.50 | 0.24 [0.00, 0.47] | 0.01 [0.00, 0.02] |" in simulator_response.pay_table(paid)
