"""Run archives: a run packed at its last complete epoch resumes elsewhere, even when packed while it runs."""

from __future__ import annotations

import json
import shutil
import tarfile

import pytest
from test_train import tiny_config

from genenv.checkpoints import read_metrics
from genenv.coevolution import CoEvolutionTrainer
from genenv.pools import TaskPool, TracePool
from genenv.run_archive import LEFT_OUT, STATE_DIR_ENV, pack_run, state_dir, unpack_run


def test_a_packed_run_resumes_in_another_folder(two_epoch_run, tmp_path):
    assert pack_run(two_epoch_run, tmp_path / "run.tar.xz") == 1
    with tarfile.open(tmp_path / "run.tar.xz") as tar:
        names = tar.getnames()
    assert "checkpoints/epoch-0001/state.json" in names and "checkpoints/latest" in names
    assert not any(name.startswith("checkpoints/epoch-0000") for name in names)  # the last complete epoch only
    assert not any(name.rsplit("/", 1)[-1] in LEFT_OUT for name in names)
    unpack_run(tmp_path / "run.tar.xz", tmp_path / "elsewhere")
    history = CoEvolutionTrainer(tiny_config(tmp_path / "elsewhere", epochs=3), resume=True).train()
    assert [m["epoch"] for m in history] == [2]
    assert [m["epoch"] for m in read_metrics(tmp_path / "elsewhere")] == [0, 1, 2]
    assert TracePool(tmp_path / "elsewhere" / "pools").committed_epoch == 2


def test_a_live_run_is_packed_at_its_committed_epoch(two_epoch_run, tmp_path):
    live = tmp_path / "live"
    shutil.copytree(two_epoch_run, live)
    traces = TracePool(live / "pools")
    committed = len(traces)
    first = dict(traces.records()[0])
    traces.append([{k: v for k, v in first.items() if k not in ("id", "epoch", "batch_end")}], 2)  # epoch 2 under way
    with open(live / "pools" / "traces.jsonl", "ab") as file:
        file.write(b'{"torn": ')  # an append caught half-written
    with open(live / "metrics.jsonl", "a") as file:
        file.write(json.dumps({"epoch": 2}) + "\n")
    assert pack_run(live, tmp_path / "live.tar.xz") == 1
    unpack_run(tmp_path / "live.tar.xz", tmp_path / "resumed")
    assert len(TracePool(tmp_path / "resumed" / "pools")) == committed
    assert not TracePool(tmp_path / "resumed" / "pools").uncommitted()
    assert [m["epoch"] for m in read_metrics(tmp_path / "resumed")] == [0, 1]


def test_a_pool_that_has_not_committed_the_epoch_keeps_its_records(two_epoch_run, tmp_path):
    lagging = tmp_path / "lagging"
    shutil.copytree(two_epoch_run, lagging)
    meta = lagging / "pools" / "tasks.meta.json"
    before = json.loads(meta.read_text())
    epoch_0 = [line for line in (lagging / "pools" / "tasks.jsonl").read_bytes().splitlines(keepends=True)
               if json.loads(line)["epoch"] == 0]  # fmt: skip
    # killed between the traces' and the tasks' commit of epoch 1: tasks still says epoch 0
    cut = {**before, "epoch": 0, "committed": len(epoch_0), "bytes": sum(len(line) for line in epoch_0)}
    meta.write_text(json.dumps(cut))
    assert TaskPool(lagging / "pools").uncommitted()  # (reopening a pool only reads it when nothing is torn)
    assert pack_run(lagging, tmp_path / "lagging.tar.xz") == 1
    unpack_run(tmp_path / "lagging.tar.xz", tmp_path / "resumed")
    CoEvolutionTrainer(tiny_config(tmp_path / "resumed", epochs=2), resume=True).train()  # commits them
    tasks = TaskPool(tmp_path / "resumed" / "pools")
    assert tasks.committed_epoch == 1 and len(tasks) == before["committed"]


def test_pools_ahead_of_every_checkpoint_are_refused(two_epoch_run, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(two_epoch_run, broken)
    shutil.rmtree(broken / "checkpoints" / "epoch-0001")
    with pytest.raises(FileNotFoundError, match="epoch-0001"):
        pack_run(broken, tmp_path / "broken.tar.xz")
    assert not (tmp_path / "broken.tar.xz").exists()


def test_unpacking_over_a_run_is_refused(two_epoch_run, tmp_path):
    pack_run(two_epoch_run, tmp_path / "run.tar.xz")
    with pytest.raises(FileExistsError):
        unpack_run(tmp_path / "run.tar.xz", two_epoch_run)


def test_run_state_lives_where_the_environment_says_and_outside_the_repository(tmp_path, monkeypatch):
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    assert state_dir() == tmp_path / "state"
    monkeypatch.delenv(STATE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert state_dir() == tmp_path / "cache" / "genenv" / "state"
