"""The persistent pools: round trips, epoch commits, crash safety (real SIGKILLs), sampling, datasets."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from conftest import child_env
from hypothesis import given, settings
from hypothesis import strategies as st

from genenv.benchmarks.base import Task
from genenv.pools import RESERVED_KEYS, JsonlPool, PoolCorruptedError, TaskPool, TracePool

BATCH, BATCHES = 6, 3  # records per append, appends per epoch in the crash child

# The crash child's records; the test process defines the same function to check them.
PAYLOAD_SOURCE = """
def payload(epoch, batch, j):
    return {"e": epoch, "b": batch, "j": j, "text": f"{epoch}-{batch}-{j} " * (200 + 997 * j % 4000),
            "nested": {"list": [j, None, True, 1.5], "s": "é漢\\n\\"q\\""}}
"""
_namespace: dict = {}
exec(PAYLOAD_SOURCE, _namespace)
payload = _namespace["payload"]

# argv: directory, mode. "fast": plain writes; "slow": short 16 KiB writes with a pause each (what
# POSIX allows write() to do), so a kill often lands mid-batch; "<k>": the k-th write stops half-way
# and the process SIGKILLs itself. It prints "ready" before its first write and "committed" after each epoch.
CHILD = (
    PAYLOAD_SOURCE
    + f"""
import os, signal, sys, time
from genenv.pools import JsonlPool

directory, mode = sys.argv[1], sys.argv[2]
real_write, writes = os.write, 0

def patched_write(fd, data):
    global writes
    writes += 1
    if mode == "slow":
        time.sleep(0.002)
        return real_write(fd, bytes(data[:16384]))
    if writes == int(mode):
        real_write(fd, bytes(data[: len(data) // 2]))
        os.kill(os.getpid(), signal.SIGKILL)
    return real_write(fd, data)

if mode != "fast":
    os.write = patched_write
pool = JsonlPool(directory, "crash")
pool.discard_uncommitted()
epoch = 0 if pool.committed_epoch is None else pool.committed_epoch + 1
print("ready", flush=True)
while True:
    for batch in range({BATCHES}):
        pool.append([payload(epoch, batch, j) for j in range({BATCH})], epoch)
    pool.commit(epoch)
    print("committed", flush=True)
    epoch += 1
"""
)


def start_child(directory: Path, mode: str) -> subprocess.Popen:
    env = child_env()
    return subprocess.Popen([sys.executable, "-c", CHILD, str(directory), mode], stdout=subprocess.PIPE, env=env)


def user_fields(record: dict) -> dict:
    return {key: value for key, value in record.items() if key not in RESERVED_KEYS}


def read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def check_after_crash(directory: Path, committed_before: list[dict]) -> tuple[JsonlPool, bool]:
    """Reopen after a kill and check every guarantee; returns the pool and whether a tail was torn."""
    data_path, torn_path = directory / "crash.jsonl", directory / "crash.torn"
    before, torn_before = read(data_path), read(torn_path)
    pool = JsonlPool(directory, "crash")
    after = read(data_path)
    assert before.startswith(after)  # recovery only cuts a tail ...
    cut = before[len(after) :]
    assert read(torn_path) == torn_before + cut + (b"\n" if cut and not cut.endswith(b"\n") else b"")  # ... kept
    assert not after or after.endswith(b"\n")
    on_disk = [json.loads(line) for line in after.splitlines()]  # every line left is valid JSON
    assert on_disk == pool.records(include_uncommitted=True)
    assert all(a["id"] < b["id"] for a, b in zip(on_disk, on_disk[1:], strict=False))
    assert all(user_fields(r) == payload(r["e"], r["b"], r["j"]) and r["epoch"] == r["e"] for r in on_disk)
    assert pool.records()[: len(committed_before)] == committed_before  # committed records are intact
    assert set(Counter(r["epoch"] for r in pool.records()).values()) <= {BATCH * BATCHES}  # whole epochs
    assert len(pool.uncommitted()) % BATCH == 0  # whole batches
    return pool, bool(cut)


# -- round trips and commits -------------------------------------------------------------------
def test_append_reopen_round_trip_and_monotonic_ids(tmp_path):
    pool = JsonlPool(tmp_path, "p")
    first = pool.append([{"a": 1}, {"a": 2, "nested": {"x": [1, 2]}}], epoch=0)
    assert [r["id"] for r in first] == [0, 1] and all(r["epoch"] == 0 and r["batch_end"] == 2 for r in first)
    pool.commit(0)
    reopened = JsonlPool(tmp_path, "p")
    assert reopened.records() == first == list(reopened) and len(reopened) == 2 and reopened.committed_epoch == 0
    second = reopened.append([{"a": 3}], epoch=1)
    reopened.commit(1)
    assert second[0]["id"] == 2
    again = JsonlPool(tmp_path, "p")
    assert [r["id"] for r in again] == [0, 1, 2]
    assert again.records(epoch=1) == second and again.records(a=2) == [first[1]]
    assert again.append([], epoch=2) == [] and not (tmp_path / "p.torn").exists()


def test_commit_and_uncommitted_semantics(tmp_path):
    pool = JsonlPool(tmp_path, "p")
    pool.append([{"a": 0}], 0)
    pool.commit(0)
    fresh = pool.append([{"a": 1}, {"a": 2}], 1)
    assert len(pool) == 1 and pool.uncommitted() == fresh
    assert pool.records(include_uncommitted=True)[1:] == fresh and pool.view(1)[1:] == fresh
    with pytest.raises(ValueError, match="in progress"):
        pool.append([{"a": 3}], 2)
    with pytest.raises(ValueError, match="committed already"):
        pool.append([{"a": 3}], 0)
    with pytest.raises(ValueError, match="cannot be committed"):
        pool.commit(2)
    with pytest.raises(ValueError, match="reserved"):
        pool.append([{"id": 7}], 1)
    with pytest.raises(ValueError):
        pool.append([{"reward": float("nan")}], 1)

    # a new process finds epoch 1 unfinished: excluded, and no appends until it is resolved
    resumed = JsonlPool(tmp_path, "p")
    assert len(resumed) == 1 and resumed.uncommitted() == fresh and resumed.view(0) == resumed.records()
    with pytest.raises(RuntimeError, match="unfinished"):
        resumed.append([{"a": 3}], 1)
    resumed.commit(1)  # recovery: keep the finished-but-uncommitted epoch
    assert len(resumed) == 3 and JsonlPool(tmp_path, "p").records() == resumed.records()
    resumed.commit(1)  # idempotent
    with pytest.raises(ValueError, match="older"):
        resumed.commit(0)
    assert resumed.stats()["per_epoch"] == {0: 1, 1: 2}


def test_discard_moves_records_to_side_file(tmp_path):
    pool = JsonlPool(tmp_path, "p")
    pool.append([{"a": 0}], 0)
    pool.commit(0)
    lost = pool.append([{"a": 1}, {"a": 2}], 1)
    resumed = JsonlPool(tmp_path, "p")
    assert resumed.discard_uncommitted() == lost
    assert [json.loads(line) for line in read(tmp_path / "p.uncommitted.jsonl").splitlines()] == lost
    assert resumed.uncommitted() == [] and resumed.discard_uncommitted() == []
    later = JsonlPool(tmp_path, "p")
    assert [r["a"] for r in later.records(include_uncommitted=True)] == [0]
    redo = later.append([{"a": 3}], 1)
    assert redo[0]["id"] == 3  # ids handed out before are never reused
    later.discard_uncommitted()  # appends to the side file
    assert [json.loads(line)["id"] for line in read(tmp_path / "p.uncommitted.jsonl").splitlines()] == [1, 2, 3]


# -- crash safety ------------------------------------------------------------------------------
def test_torn_line_written_by_hand_is_quarantined(tmp_path):
    pool = JsonlPool(tmp_path, "p")
    pool.append([{"a": 0}], 0)
    pool.commit(0)
    kept = pool.append([{"a": 1}], 1)
    fragment = b'{"id": 2, "epoch": 1, "batch_end": 3, "a": "to'
    with open(tmp_path / "p.jsonl", "ab") as file:
        file.write(fragment)
    reopened = JsonlPool(tmp_path, "p")
    assert read(tmp_path / "p.torn") == fragment + b"\n"
    assert reopened.uncommitted() == kept and read(tmp_path / "p.jsonl").endswith(b"\n")
    assert all(json.loads(line) for line in read(tmp_path / "p.jsonl").splitlines())
    reopened.commit(1)
    assert reopened.append([{"a": 2}], 2)[0]["id"] == 2


def test_incomplete_batch_is_quarantined(tmp_path):
    pool = JsonlPool(tmp_path, "p")
    pool.append([{"a": 0}], 0)
    pool.commit(0)
    half = b'{"id": 1, "epoch": 1, "batch_end": 3, "a": 1}\n'  # first of a two-record batch, complete line
    with open(tmp_path / "p.jsonl", "ab") as file:
        file.write(half + b'{"id": 2, "ep')
    reopened = JsonlPool(tmp_path, "p")
    assert reopened.uncommitted() == [] and len(reopened) == 1
    assert read(tmp_path / "p.torn") == half + b'{"id": 2, "ep\n'


def test_damaged_committed_records_raise_and_are_left_alone(tmp_path):
    pool = JsonlPool(tmp_path, "p")
    pool.append([{"a": 0}, {"a": 1}], 0)
    pool.commit(0)
    data = read(tmp_path / "p.jsonl")
    damaged = data[:-10]
    (tmp_path / "p.jsonl").write_bytes(damaged)
    with pytest.raises(PoolCorruptedError):
        JsonlPool(tmp_path, "p")
    assert read(tmp_path / "p.jsonl") == damaged and not (tmp_path / "p.torn").exists()


def test_failed_write_leaves_the_file_as_it_was(tmp_path, monkeypatch):
    pool = JsonlPool(tmp_path, "p")
    pool.append([{"a": 0}], 0)
    before = read(tmp_path / "p.jsonl")
    real_write = os.write

    def full_disk(fd, data):
        real_write(fd, bytes(data[:10]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(OSError):
        pool.append([{"a": 1}, {"a": 2}], 0)
    monkeypatch.undo()
    assert read(tmp_path / "p.jsonl") == before
    pool.append([{"a": 3}], 0)
    assert [r["a"] for r in JsonlPool(tmp_path, "p").uncommitted()] == [0, 3]


def test_sigkill_at_random_moments(tmp_path):
    rng = random.Random(0)
    committed: list[dict] = []
    for mode in ("fast", "slow", "fast", "slow", "fast", "slow"):
        child = start_child(tmp_path, mode)
        assert child.stdout.readline() == b"ready\n"
        if mode == "fast":  # at least one commit per fast run, however slowly a loaded machine runs the child
            assert child.stdout.readline() == b"committed\n"
        time.sleep(rng.uniform(0.02, 0.3))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        pool, _ = check_after_crash(tmp_path, committed)
        committed = pool.records()
    assert len(committed) > 0
    side = [json.loads(line) for line in read(tmp_path / "crash.uncommitted.jsonl").splitlines()]
    assert all(user_fields(r) == payload(r["e"], r["b"], r["j"]) for r in side)
    assert {r["id"] for r in side}.isdisjoint(r["id"] for r in committed)


def test_sigkill_in_the_middle_of_a_write(tmp_path):
    # writes 1-3 fill epoch 0 (committed), 4-6 epoch 1, write 7 (epoch 2, batch 0) dies half-way
    child = start_child(tmp_path, "7")
    assert child.stdout.readline() == b"ready\n"
    assert child.wait(timeout=30) == -signal.SIGKILL
    child.stdout.close()
    pool, torn = check_after_crash(tmp_path, [])
    assert torn and pool.committed_epoch == 1 and len(pool) == 2 * BATCHES * BATCH and pool.uncommitted() == []
    quarantined = read(tmp_path / "crash.torn").splitlines()
    assert len(quarantined) >= 2  # complete lines of the unfinished batch and the torn one
    assert json.loads(quarantined[0])["epoch"] == 2


# -- reading -----------------------------------------------------------------------------------
def test_weighted_sampling_follows_weights(tmp_path):
    pool = JsonlPool(tmp_path, "p")
    pool.append([{"name": "light", "w": 1.0}, {"name": "heavy", "w": 3.0}, {"name": "never", "w": 0.0}], 0)
    pool.commit(0)
    rng = np.random.default_rng(0)
    draws = Counter(pool.sample(1, rng, weight_key="w")[0]["name"] for _ in range(4000))
    assert draws["never"] == 0 and 0.70 < draws["heavy"] / 4000 < 0.80
    pairs = Counter(tuple(sorted(r["name"] for r in pool.sample(2, rng, weight_key="w"))) for _ in range(500))
    assert set(pairs) == {("heavy", "light")}  # without replacement
    uniform = Counter(r["name"] for _ in range(3000) for r in pool.sample(1, rng))
    assert all(900 < count < 1100 for count in uniform.values())
    assert len({r["id"] for r in pool.sample(3, 0)}) == 3 and len(pool.sample(7, 0)) == 7
    assert pool.sample(2, 1, name="light")[0]["name"] == "light"
    with pytest.raises(ValueError):
        pool.sample(1, 0, weight_key="w", name="never")


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=())),  # lone surrogates included
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=16,
)
json_records = st.dictionaries(
    st.text(max_size=10).filter(lambda key: key not in RESERVED_KEYS), json_values, max_size=6
)


@settings(max_examples=60, deadline=None)
@given(st.lists(json_records, min_size=1, max_size=3))
def test_any_json_record_round_trips(records):
    with tempfile.TemporaryDirectory() as directory:
        JsonlPool(directory).append(records, 0)
        assert [user_fields(r) for r in JsonlPool(directory).uncommitted()] == records


# -- D_train and D_env -------------------------------------------------------------------------
def make_task(i: int) -> Task:
    return Task(f"t{i}", "toy", f"do {i}", gold={"calls": [{"name": "Add", "arguments": {"a": i}}]}, split="train")


def episode(i: int, family: str = "add", truncated: bool = False) -> dict:
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": f"do {i}"},
        {"role": "assistant", "content": "done"},
    ]
    tools = [{"type": "function", "function": {"name": "Add", "parameters": {"type": "object", "properties": {}}}}]
    info = {"family": family, "score": 1.0, "score_breakdown": {"em": i % 2}, "task": make_task(i).to_dict()}
    return {
        "task": make_task(i),
        "messages": messages,
        "tools": tools,
        "reward": float(i % 2),
        "info": info,
        "truncated": truncated,
    }


def test_trace_pool_training_set_and_dataset(tmp_path):
    pool = TracePool(tmp_path)
    pool.add_episodes([episode(0), episode(1)], 0, "base")
    pool.commit(0)
    pool.add_episodes([episode(2), episode(3, truncated=True)], 1, "on_policy")
    pool.commit(1)
    pool.add_episodes([episode(4), episode(5, family="mul")], 2, "on_policy", valid=[True, False])
    pool.commit(2)
    fresh = pool.add_episodes([episode(6)], 3, "on_policy")
    stored = fresh[0]
    assert stored["task"] == make_task(6).to_dict() and stored["family"] == "add" and stored["valid"]
    assert "task" not in stored["info"] and stored["info"]["score"] == 1.0

    def prompts(records):
        return sorted(r["task"]["prompt"] for r in records)

    assert prompts(pool.training_set(3)) == ["do 0", "do 1", "do 2", "do 4", "do 6"]
    assert prompts(pool.training_set(3, history_epochs=1)) == ["do 0", "do 1", "do 4", "do 6"]
    assert prompts(pool.training_set(1)) == ["do 0", "do 1", "do 2"]
    assert len(pool.records(valid=False)) == 2  # invalid traces stay in the file
    with pytest.raises(ValueError):
        pool.add_episodes([episode(7)], 3, "made_up")
    stats = pool.stats()
    assert stats["per_source"] == {"base": 2, "on_policy": 5} and stats["per_family"] == {"add": 6, "mul": 1}
    assert stats["uncommitted"] == 1 and "per_kind" not in stats

    dataset = pool.to_dataset(pool.training_set(3))
    assert len(dataset) == 5 and dataset[0]["messages"][0] == {"role": "system", "content": "sys"}
    assert json.loads(dataset[0]["tools"])[0]["function"]["name"] == "Add"
    assert Task.from_dict(json.loads(dataset[0]["task"])) == make_task(0)
    assert pool.to_dataset().num_rows == len(pool) == 6


def test_task_pool_weighted_examples_and_rejects(tmp_path):
    pool = TaskPool(tmp_path)
    prompt = [{"role": "user", "content": "write a task"}]
    good = [
        {"family": "add", "messages": prompt, "raw": '{"a": 1}', "task": make_task(1), "reject_reason": ""},
        {"family": "add", "messages": prompt, "raw": "???", "task": None, "reject_reason": "unparsable: no JSON"},
    ]
    pool.add_proposals(good, 0, r_env=0.9, weight=np.exp(0.9), kept=True)
    pool.add_proposals([{**good[0], "raw": "filtered"}], 0, r_env=[0.1], weight=[np.exp(0.1)], kept=[False])
    pool.commit(0)
    pool.add_proposals([{**good[0], "raw": "fresh", "task": make_task(2).to_dict()}], 1, 0.5, np.exp(0.5), True)
    assert [r["raw"] for r in pool.weighted_examples()] == ['{"a": 1}']
    assert [r["raw"] for r in pool.weighted_examples(1)] == ['{"a": 1}', "fresh"]
    assert pool.weighted_examples()[0]["weight"] == pytest.approx(np.exp(0.9))
    assert pool.rwr_examples(1) == [
        {"messages": prompt, "completion": raw, "weight": pytest.approx(np.exp(w))}
        for raw, w in (('{"a": 1}', 0.9), ("fresh", 0.5))
    ]
    assert [r["reject_reason"] for r in pool.rejects()] == ["unparsable: no JSON"]
    assert pool.stats()["per_status"] == {"accepted": 2, "rejected": 1, "filtered": 1}
    with pytest.raises(ValueError, match="r_env"):
        pool.add_proposals(good, 1, r_env=[0.1], weight=1.0, kept=True)
    dataset = pool.to_dataset()
    assert dataset.column_names[-1] == "status" and dataset["task"][1] is None


def written(family: str, raw: str, task: Task | None) -> dict:
    """A simulator proposal as :meth:`TaskPool.add_proposals` takes it: ``raw`` written when asked for ``family``."""
    prompt = [{"role": "user", "content": "write a task"}]
    return {"family": family, "messages": prompt, "raw": raw, "task": task, "reject_reason": ""}


def test_in_band_outputs_are_each_familys_latest_committed_accepted_generations(tmp_path):
    pool = TaskPool(tmp_path)

    def proposal(family: str, raw: str) -> dict:
        return written(family, raw, Task(f"t-{raw}", "toy", raw, {"calls": []}))

    pool.add_proposals([proposal("add", "a0"), proposal("add", "a1"), proposal("mul", "m0")], 0, 1.0, np.e, True)
    pool.add_proposals([proposal("add", "outside")], 0, 0.1, 1.1, False)
    pool.add_proposals([{**proposal("add", "broken"), "task": None}], 0, 0.0, 1.0, False)
    pool.commit(0)
    pool.add_proposals([proposal("add", "a2")], 1, 1.0, np.e, True)
    assert pool.in_band_outputs(2) == {"add": ["a0", "a1"], "mul": ["m0"]}  # epoch 1 is not committed yet
    pool.commit(1)
    assert pool.in_band_outputs(2) == {"add": ["a1", "a2"], "mul": ["m0"]}
    assert pool.in_band_outputs(0) == {}


def test_in_band_outputs_count_a_task_written_twice_once_at_its_latest_generation(tmp_path):
    pool = TaskPool(tmp_path)
    first, second = make_task(1), make_task(2)
    pool.add_proposals([written("add", "one", first), written("add", "two", second)], 0, 1.0, np.e, True)
    pool.commit(0)
    pool.add_proposals([written("add", "one again", first)], 1, 1.0, np.e, True)
    pool.commit(1)
    assert pool.in_band_outputs(2) == {"add": ["two", "one again"]}
    assert pool.in_band_outputs(1) == {"add": ["one again"]}


def test_scored_outputs_are_each_played_familys_latest_committed_generations_with_their_success(tmp_path):
    pool = TaskPool(tmp_path)

    def proposal(raw: str, level: int | None) -> dict:
        task = None if level is None else Task(f"t-{raw}", "toy", raw, {"level": level}, source="generated")
        return written("asked", raw, task)

    def level_of(task: dict) -> str:
        return f"level {task['gold']['level']}"

    batch = [proposal("easy", 1), proposal("hard", 2), proposal("unplayed", 1), proposal("broken", None)]
    pool.add_proposals(batch, 0, [0.1, 0.1, 0.0, 0.0], 1.0, False, p_hat=[1.0, 0.0, None, None])
    pool.commit(0)
    pool.add_proposals([proposal("fair", 1)], 1, 1.0, np.e, True, p_hat=0.5)
    # grouped by the family of the task played, not the one asked for; unplayed and broken ones are left out
    assert pool.scored_outputs(level_of, 2) == {"level 1": [("easy", 1.0)], "level 2": [("hard", 0.0)]}
    pool.commit(1)
    assert pool.scored_outputs(level_of, 2)["level 1"] == [("easy", 1.0), ("fair", 0.5)]
    assert pool.scored_outputs(level_of, 1)["level 1"] == [("fair", 0.5)]
    assert pool.scored_outputs(level_of, 0) == {}
    assert [r["p_hat"] for r in pool.records()] == [1.0, 0.0, None, None, 0.5]


def test_scored_outputs_count_a_task_written_twice_in_one_epoch_once(tmp_path):
    pool = TaskPool(tmp_path)
    same = Task("t-same", "toy", "1+1", {"level": 1}, source="generated")
    other = Task("t-other", "toy", "2+2", {"level": 1}, source="generated")
    batch = [written("asked", raw, task) for raw, task in (("same", same), ("other", other), ("same, reworded", same))]
    pool.add_proposals(batch, 0, 0.5, 1.0, False, p_hat=[0.25, 0.75, 0.25])
    pool.commit(0)
    assert pool.scored_outputs(lambda task: "level 1", 3) == {"level 1": [("other", 0.75), ("same, reworded", 0.25)]}


def test_real_episode_and_proposal_objects(tmp_path):
    from genenv.agents.agent import Episode
    from genenv.benchmarks.base import Trajectory
    from genenv.envs.simulator import Proposal

    data = episode(1)
    real = Episode(data["task"], Trajectory(), data["reward"], data["messages"], data["tools"], data["info"])
    traces = TracePool(tmp_path)
    from_object, from_mapping = traces.add_episodes([real, data], 0, "on_policy")
    assert user_fields(from_object) == user_fields(from_mapping)
    proposal = Proposal("add", [{"role": "user", "content": "write"}], '{"a": 1}', make_task(1))
    stored = TaskPool(tmp_path).add_proposals([proposal], 0, 1.0, np.e, True)[0]
    assert stored["task"] == make_task(1).to_dict() and stored["status"] == "accepted"
