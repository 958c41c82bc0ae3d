"""A run killed at any write point resumes; damaged checkpoints fall back or fail naming the file; one trainer per
run folder. Kills are simulated in-process by an exception raised at the write point (the pools' durability under
a real SIGKILL is covered in test_pools.py and test_train.py)."""

import ctypes
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import REPO, child_env, lock_held_by_live_process
from scripted_simulator import ScriptedSimulator
from test_apibank_env import CALCULATOR_TASK
from test_train import tiny_config

import genenv.checkpoints as checkpoints
from genenv.agents.warm_start import WarmStartConfig, WarmStartTrainer
from genenv.checkpoints import WARM_START, checkpoint_folders, latest_checkpoint, read_metrics
from genenv.coevolution import CoEvolutionTrainer
from genenv.pools import TaskPool, TracePool
from genenv.run_archive import pack_run, unpack_run
from genenv.run_lock import LOCK_FILE, RunDirLockedError, RunLock


class Killed(Exception):
    """Stands for SIGKILL at a write point."""


def _raise(*args, **kwargs):
    raise Killed


def _kill_at(monkeypatch, point: str) -> None:
    if point == "after base data":
        monkeypatch.setattr(CoEvolutionTrainer, "_warm_start", _raise)
    elif point == "before latest":
        real = checkpoints.write_atomic
        monkeypatch.setattr(
            checkpoints, "write_atomic", lambda path, text: _raise() if path.name == "latest" else real(path, text)
        )
    elif point == "before metrics line":
        monkeypatch.setattr(CoEvolutionTrainer, "_log_metrics", _raise)
    elif point == "before traces commit":
        monkeypatch.setattr(TracePool, "commit", _raise)
    elif point == "before tasks commit":
        monkeypatch.setattr(TaskPool, "commit", _raise)
    else:
        raise ValueError(point)


KILL_POINTS = ["after base data", "before latest", "before metrics line", "before traces commit", "before tasks commit"]


@pytest.mark.parametrize("point", KILL_POINTS)
def test_killed_at_every_write_point_of_an_epoch_resumes(tmp_path, monkeypatch, point):
    config = tiny_config(tmp_path, epochs=1)
    with monkeypatch.context() as patch:
        _kill_at(patch, point)
        with pytest.raises(Killed):
            CoEvolutionTrainer(config).train()
    assert not (tmp_path / LOCK_FILE).exists()  # the lock is released on the way out
    history = CoEvolutionTrainer(config, resume=True).train()
    assert [m["epoch"] for m in read_metrics(tmp_path)] == [0]
    if point == "after base data":  # epoch 0 was re-run from scratch
        assert [m["epoch"] for m in history] == [0]
    traces, tasks = TracePool(tmp_path / "pools"), TaskPool(tmp_path / "pools")
    assert traces.committed_epoch == tasks.committed_epoch == 0 and not traces.uncommitted()
    base = traces.records(source="base")
    assert len(base) == len({r["task"]["task_id"] for r in base})  # base data never doubled
    assert latest_checkpoint(tmp_path).name == "epoch-0000"


def test_killed_in_epoch_0_a_plain_restart_starts_over(tmp_path, monkeypatch, caplog):
    config = tiny_config(tmp_path, epochs=1)
    with monkeypatch.context() as patch:
        _kill_at(patch, "after base data")
        with pytest.raises(Killed):
            CoEvolutionTrainer(config).train()
    with caplog.at_level(logging.WARNING):
        CoEvolutionTrainer(config).train()
    assert "no epoch checkpoint yet" in caplog.text and "epoch 0 starts from the beginning" in caplog.text
    assert (tmp_path / "pools" / "traces.uncommitted.jsonl").exists()  # set aside, not deleted
    assert [m["epoch"] for m in read_metrics(tmp_path)] == [0]


class _PoolWriter(ScriptedSimulator):
    """Scripted proposals that note the state of the RNG each batch draws from, and die at batch ``die_at``."""

    def __init__(self, replies, family, die_at=None):
        super().__init__(replies, family)
        self.streams, self.die_at = [], die_at

    def propose(self, adapter, *, rng, n=None, families=None, success=None):
        if len(self.streams) == self.die_at:
            raise Killed
        self.streams.append(rng.bit_generator.state["state"]["state"])
        return super().propose(adapter, rng=rng, n=n, families=families, success=success)


def test_an_offline_pool_killed_while_written_continues_from_its_batches(tmp_path, monkeypatch):
    replies = [json.dumps(CALCULATOR_TASK), json.dumps(dict(CALCULATOR_TASK, request="Please compute (12+8)*3."))]
    config = tiny_config(tmp_path / "killed", epochs=1, curriculum="offline", tasks_per_epoch=2)  # 7 tasks wanted
    killed = CoEvolutionTrainer(config)
    killed.simulator = _PoolWriter(replies, "Calculator", die_at=2)
    with pytest.raises(Killed):
        killed.train()
    resumed = CoEvolutionTrainer(config, resume=True)
    resumed.simulator = _PoolWriter(replies, "Calculator")
    history = resumed.train()
    whole = CoEvolutionTrainer(tiny_config(tmp_path / "whole", epochs=1, curriculum="offline", tasks_per_epoch=2))
    whole.simulator = _PoolWriter(replies, "Calculator")
    expected = whole.train()
    # 2 valid tasks never reach the 7 wanted: all 4 rounds of 2 run, the first 2 before the kill and only 2 after it
    assert len(killed.simulator.streams) == 2 and len(resumed.simulator.streams) == 2
    assert killed.simulator.streams + resumed.simulator.streams == whole.simulator.streams  # batch i, stream i
    assert history[0]["proposals"] == expected[0]["proposals"] == 8
    assert history[0]["generated_tasks"] == expected[0]["generated_tasks"] == 2


def _pool_run(run_dir, curriculum, draft_from=None):
    """A one-epoch pool run (scripted simulator; 2 tasks per epoch, so static wants 2 tasks in 1 batch of 2 and
    offline 7 in up to 4), started from a copy of ``draft_from``'s pool draft if given; returns (run, epoch 0)."""
    replies = [json.dumps(CALCULATOR_TASK), json.dumps(dict(CALCULATOR_TASK, request="Please compute (12+8)*3."))]
    if draft_from is not None:
        (run_dir / "pools").mkdir(parents=True)
        for name in ("pool_draft.jsonl", "pool_draft.meta.json"):
            shutil.copyfile(draft_from / "pools" / name, run_dir / "pools" / name)
    config = tiny_config(run_dir, epochs=1, curriculum=curriculum, tasks_per_epoch=2)
    trainer = CoEvolutionTrainer(config, resume=draft_from is not None)
    trainer.simulator = _PoolWriter(replies, "Calculator")
    return trainer, trainer.train()[0]


def test_a_run_given_a_pool_draft_of_its_seed_reads_its_batches_from_it_and_writes_only_the_rest(tmp_path):
    """What the experiment driver's pool sharing relies on (experiments/curriculum/driver.py ``share_pool``):
    batch i of a pool is the same whatever the pool's size, so a static pool is the start of an offline one."""
    offline, offline_metrics = _pool_run(tmp_path / "offline", "offline")  # 4 batches for 7 tasks (2 distinct)
    static, static_metrics = _pool_run(tmp_path / "static", "static")  # 1 batch for 2 tasks
    assert len(offline.simulator.streams) == 4 and static.simulator.streams == offline.simulator.streams[:1]
    streams = offline.simulator.streams
    for reader, source, written, whole in [
        ("static", "offline", [], static_metrics),  # reads batch 0 only
        ("offline", "static", streams[1:], offline_metrics),  # reads batch 0, writes batches 1-3 as offline did
        ("offline", "offline", [], offline_metrics),  # reads all 4
    ]:
        given, metrics = _pool_run(tmp_path / f"{reader}-from-{source}", reader, draft_from=tmp_path / source)
        assert given.simulator.streams == written
        assert metrics["proposals"] == whole["proposals"]
        assert metrics["generated_tasks"] == whole["generated_tasks"] == 2
        # the pool's cost counts every batch it used, those timed by the draft's writer included
        writing = metrics["pool_writing"]
        assert writing["batches"] == writing["timed_batches"] == whole["pool_writing"]["batches"]
        assert writing["seconds"] > 0
    assert offline_metrics["pool_writing"]["batches"] == 4 and static_metrics["pool_writing"]["batches"] == 1


def _written_draft(run_dir):
    """The committed records of a finished pool run's draft."""
    draft = run_dir / "pools" / "pool_draft.jsonl"
    return [json.loads(line) for line in draft.read_text().splitlines()]


def _rewrite_draft(run_dir, records):
    """Replace a run's pool draft by ``records``, all committed (its meta file updated to match)."""
    draft = run_dir / "pools" / "pool_draft.jsonl"
    draft.write_text("".join(json.dumps(r) + "\n" for r in records))
    meta = run_dir / "pools" / "pool_draft.meta.json"
    meta.write_text(json.dumps(dict(json.loads(meta.read_text()), committed=len(records), bytes=draft.stat().st_size)))


def test_a_pool_draft_written_before_batches_were_timed_counts_its_batches_as_untimed(tmp_path):
    _pool_run(tmp_path / "writer", "offline")
    records = _written_draft(tmp_path / "writer")
    untimed = [{k: v for k, v in r.items() if k != "batch_seconds"} if r["epoch"] < 2 else r for r in records]
    _rewrite_draft(tmp_path / "writer", untimed)
    reader, metrics = _pool_run(tmp_path / "reader", "offline", draft_from=tmp_path / "writer")
    assert reader.simulator.streams == []  # every batch read from the draft
    timed = [r["batch_seconds"] for r in records if r["epoch"] >= 2 and r["id"] == r["batch_end"] - 1]
    assert metrics["pool_writing"] == {"batches": 4, "timed_batches": 2, "seconds": pytest.approx(sum(timed))}


def test_a_pool_draft_missing_a_batch_is_refused(tmp_path):
    _pool_run(tmp_path / "writer", "offline")
    _rewrite_draft(tmp_path / "writer", [r for r in _written_draft(tmp_path / "writer") if r["epoch"] != 1])
    with pytest.raises(RuntimeError, match="batch 1 is missing"):
        _pool_run(tmp_path / "reader", "offline", draft_from=tmp_path / "writer")


def _copy(run_dir, tmp_path):
    subprocess.run(["cp", "-a", f"{run_dir}/.", str(tmp_path)], check=True)
    return tmp_path


def _damage(run_dir, what: str) -> None:
    latest = run_dir / "checkpoints" / "epoch-0001"
    if what == "state.json":
        path = latest / "state.json"
        path.write_text(path.read_text()[:40])
    elif what == "torch_rng.pt":
        (latest / "torch_rng.pt").write_bytes(b"not a tensor")
    elif what == "weights":
        for path in (latest / "agent").rglob("*.safetensors"):
            path.write_bytes(path.read_bytes()[:100])
    elif what == "latest":
        (run_dir / "checkpoints" / "latest").write_text("epoch-0007")


@pytest.mark.parametrize("what", ["state.json", "torch_rng.pt", "weights"])
def test_a_damaged_checkpoint_the_pools_moved_past_fails_naming_the_file(two_epoch_run, tmp_path, what):
    run_dir = _copy(two_epoch_run, tmp_path)
    _damage(run_dir, what)
    with pytest.raises(RuntimeError, match="epoch-0001") as error:
        CoEvolutionTrainer(tiny_config(run_dir, epochs=3), resume=True)
    named = {
        "state.json": "epoch-0001/state.json",
        "torch_rng.pt": "epoch-0001/torch_rng.pt",
        "weights": "epoch-0001/agent",
    }
    assert named[what] in str(error.value) and "older than the pools' committed epoch 1" in str(error.value)
    assert not (run_dir / LOCK_FILE).exists()


def test_a_damaged_checkpoint_newer_than_the_pools_falls_back(two_epoch_run, tmp_path, caplog):
    """Killed in epoch 1 after its checkpoint folder was renamed into place but before anything else: if that
    folder is damaged, the epoch-0 checkpoint (which the pools agree with) is used and epoch 1 is re-run."""
    run_dir = _copy(two_epoch_run, tmp_path)
    metrics = read_metrics(run_dir)
    (run_dir / "metrics.jsonl").write_text(json.dumps(metrics[0]) + "\n")
    for name in ("traces", "tasks"):  # the pools' commit back at epoch 0; epoch 1's records left uncommitted
        lines = (run_dir / "pools" / f"{name}.jsonl").read_bytes().splitlines(keepends=True)
        kept = [line for line in lines if json.loads(line)["epoch"] == 0]
        meta_path = run_dir / "pools" / f"{name}.meta.json"
        meta = json.loads(meta_path.read_text())
        meta.update(committed=len(kept), epoch=0, bytes=sum(len(line) for line in kept))
        meta_path.write_text(json.dumps(meta))
    _damage(run_dir, "torch_rng.pt")
    with caplog.at_level(logging.WARNING):
        trainer = CoEvolutionTrainer(tiny_config(run_dir, epochs=2), resume=True)
    assert trainer.start_epoch == 1 and "fell back to" in caplog.text and "torch_rng.pt" in caplog.text
    trainer.train()
    assert [m["epoch"] for m in read_metrics(run_dir)] == [0, 1]
    assert TracePool(run_dir / "pools").committed_epoch == 1


def test_latest_pointing_at_a_missing_folder_uses_the_newest_complete_one(two_epoch_run, tmp_path, caplog):
    run_dir = _copy(two_epoch_run, tmp_path)
    _damage(run_dir, "latest")
    with caplog.at_level(logging.WARNING):
        assert [f.name for f in checkpoint_folders(run_dir)] == ["epoch-0001", "epoch-0000"]
    assert "epoch-0007" in caplog.text
    trainer = CoEvolutionTrainer(tiny_config(run_dir, epochs=2), resume=True)
    assert trainer.start_epoch == 2


def test_checkpoint_keeps_the_metrics_line_and_old_checkpoints_without_it_still_resume(two_epoch_run, tmp_path):
    run_dir = _copy(two_epoch_run, tmp_path)
    state_path = run_dir / "checkpoints" / "epoch-0001" / "state.json"
    state = json.loads(state_path.read_text())
    assert state["metrics"]["epoch"] == 1
    del state["metrics"]  # a checkpoint written before metrics were kept
    state_path.write_text(json.dumps(state))
    (run_dir / "metrics.jsonl").write_text(json.dumps(read_metrics(run_dir)[0]) + "\n")
    trainer = CoEvolutionTrainer(tiny_config(run_dir, epochs=2), resume=True)
    assert trainer.start_epoch == 2


def test_a_second_trainer_on_a_run_folder_in_use_stops_naming_the_holder(tmp_path):
    with lock_held_by_live_process(tmp_path) as holder:
        for resume in (False, True):
            with pytest.raises(RunDirLockedError, match=f"pid {holder}"):
                CoEvolutionTrainer(tiny_config(tmp_path), resume=resume)
        assert not (tmp_path / "pools").exists()  # nothing was touched


def test_a_stale_lock_is_taken_over(tmp_path, caplog):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": dead.pid, "host": os.uname().nodename}))
    with caplog.at_level(logging.WARNING), RunLock(tmp_path) as lock:
        assert lock.held and json.loads((tmp_path / LOCK_FILE).read_text())["pid"] == os.getpid()
    assert "stale lock" in caplog.text and not (tmp_path / LOCK_FILE).exists()


def test_another_hosts_lock_is_never_taken_over(tmp_path):
    (tmp_path / LOCK_FILE).write_text(json.dumps({"pid": 1, "host": "elsewhere"}))
    with pytest.raises(RunDirLockedError, match="host elsewhere"):
        RunLock(tmp_path).acquire()


def test_the_cli_refuses_a_run_folder_in_use(tmp_path):
    with lock_held_by_live_process(tmp_path) as holder:
        result = subprocess.run(
            [sys.executable, "-m", "genenv.train", "+bench=reasoning_gym", "model=tiny", f"run_dir={tmp_path}"],
            cwd=REPO,
            capture_output=True,
            text=True,
            env=child_env(),
        )
        assert result.returncode != 0 and f"pid {holder}" in result.stderr


@pytest.mark.parametrize("target", ["run", "run/new"])
def test_a_read_only_run_folder_says_so(target):
    """Checked in a process that obeys the permission bits (root's override of them dropped before it starts)."""
    base = Path(tempfile.mkdtemp(prefix="genenv-ro-"))
    try:
        (base / "run").mkdir()
        for folder in (base, base / "run"):
            folder.chmod(0o555)
        code = (
            "from genenv.run_lock import RunLock, make_run_dir\n"
            f"RunLock(make_run_dir({str(base / target)!r})).acquire()"
        )
        result = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            preexec_fn=_obey_permission_bits,
            cwd=REPO,
        )
        assert result.returncode != 0
        assert "RunDirNotWritableError" in result.stderr and "is not writable" in result.stderr
        assert not (base / "run" / LOCK_FILE).exists()
    finally:
        for folder in (base, base / "run"):
            folder.chmod(0o755)
        shutil.rmtree(base)


def _obey_permission_bits() -> None:
    """In a child about to exec: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set, so a root
    process reads and writes only where the permission bits allow it."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _warm_config(run_dir):
    warm = WarmStartConfig(max_examples=3, max_length=8192, per_device_train_batch_size=3)
    return tiny_config(run_dir, epochs=1, replay_tasks=2, warm_start=warm)


def test_a_run_killed_after_its_warm_start_resumes_from_it(tmp_path, monkeypatch, caplog):
    """The held-out scores before and after the warm start and the warm-started agent survive a kill in epoch 0;
    the resumed epoch (on another machine: packed and unpacked) equals an uninterrupted one. A damaged warm-start
    checkpoint fails naming the folder."""
    whole = CoEvolutionTrainer(_warm_config(tmp_path / "whole")).train()[0]
    killed = tmp_path / "killed"
    with monkeypatch.context() as patch:
        patch.setattr(CoEvolutionTrainer, "_epoch_tasks", _raise)
        with pytest.raises(Killed):
            CoEvolutionTrainer(_warm_config(killed)).train()
    saved = killed / "checkpoints" / WARM_START
    assert (saved / "state.json").exists() and not checkpoint_folders(killed)
    with pytest.raises(FileExistsError, match="resume=true"):
        CoEvolutionTrainer(_warm_config(killed))
    damaged = _copy(killed, tmp_path / "damaged")
    (damaged / "checkpoints" / WARM_START / "torch_rng.pt").write_bytes(b"torn")
    with pytest.raises(RuntimeError, match="warm-start checkpoint .* delete that folder"):
        CoEvolutionTrainer(_warm_config(damaged), resume=True)
    assert pack_run(killed, tmp_path / "run.tar.xz") is None  # no epoch complete: config and the warm start
    unpack_run(tmp_path / "run.tar.xz", tmp_path / "elsewhere")
    with monkeypatch.context() as patch, caplog.at_level(logging.WARNING):
        patch.setattr(WarmStartTrainer, "train", _raise)  # the warm start is not done again
        (resumed,) = CoEvolutionTrainer(_warm_config(tmp_path / "elsewhere"), resume=True).train()
    assert "epoch 0 starts after the restored warm start" in caplog.text
    for key in ("validation_start", "validation_warm_start", "validation", "p_hat_per_task"):
        assert resumed[key] == whole[key], key
    assert {k: v for k, v in resumed["warm_start"].items() if k != "seconds"} == {
        k: v for k, v in whole["warm_start"].items() if k != "seconds"
    }
    assert resumed["agent"]["reward"] == whole["agent"]["reward"] and resumed["agent"]["loss"] == whole["agent"]["loss"]
    assert resumed["stage_seconds"]["warm_start"] == json.loads((saved / "state.json").read_text())["seconds"]
