"""The experiment driver end to end with the tiny model: runs, skips what finished, rebuilds the report."""

import json
import os
import subprocess
import sys
import time

import agent_learning
import driver
import pytest
from conftest import REPO, data_dir, lock_held_by_live_process
from hydra import compose, initialize_config_dir

from genenv.config import CONFIG_DIR
from genenv.train import genenv_config

TINY = [
    "model=tiny", "coevolution.epochs=1", "coevolution.tasks_per_epoch=1", "simulator.batch_size=2",
    "simulator.max_new_tokens=8", "validation.limit=2", "agent.num_generations=2",
    "agent.max_new_tokens=8", "warm_start.max_examples=2", "agent.per_device_train_batch_size=2",
    "agent.gradient_accumulation_steps=1", "coevolution.base_limit=4",
]  # fmt: skip


def _driver(tmp_path, action, *args):
    command = [sys.executable, "experiments/curriculum/driver.py", action, "reasoning_gym",
               "--runs-root", str(tmp_path / "runs"), "--archives-root", str(tmp_path / "archives"),
               "--results-root", str(tmp_path / "results"), *args]  # fmt: skip
    environment = {**os.environ, "GENENV_DATA_DIR": str(data_dir("apibank").parent)}
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, env=environment)


def test_driver_runs_skips_finished_runs_and_rebuilds_the_report(tmp_path):
    first = _driver(tmp_path, "run", "--curricula", "offline", "--seeds", "3", "--jobs", "1", "--set", *TINY)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "1 runs to go: offline-s3" in first.stdout and "offline-s3: exit 0" in first.stdout
    copied = tmp_path / "results" / "reasoning_gym" / "runs" / "offline-s3.jsonl"
    assert copied.exists() and '"seed": 3' in copied.read_text()
    again = _driver(tmp_path, "run", "--curricula", "offline", "--seeds", "3", "--set", *TINY)
    assert "0 runs to go" in again.stdout
    (tmp_path / "runs").rename(tmp_path / "gone")  # the report is rebuilt from the committed copies alone
    report = _driver(tmp_path, "report")
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "results" / "reasoning_gym" / "report.md").read_text()
    assert "| offline | [3] |" in text and (tmp_path / "results" / "reasoning_gym" / "held_out.png").exists()
    elsewhere = _driver(tmp_path, "run", "--curricula", "offline", "--seeds", "3", "--set", *TINY)
    assert "0 runs to go" in elsewhere.stdout  # a new machine: finished by its committed copy, not run again


def test_saved_runs_continue_on_a_new_machine(tmp_path):
    one = [*TINY, "coevolution.epochs=1"]
    two = [*TINY, "coevolution.epochs=2"]
    first = _driver(tmp_path, "run", "--curricula", "genenv", "--seeds", "0", "--jobs", "1", "--set", *one)
    assert first.returncode == 0, first.stdout + first.stderr
    saved = _driver(tmp_path, "save", "--set", *two)  # 1 of 2 epochs done: unfinished
    archive = tmp_path / "archives" / "reasoning_gym" / "genenv-s0.tar.xz"
    assert saved.returncode == 0 and "genenv-s0: epoch 0" in saved.stdout and archive.exists(), saved.stderr
    (tmp_path / "runs").rename(tmp_path / "wiped")  # a new machine: only the results and the archives came along
    second = _driver(tmp_path, "run", "--curricula", "genenv", "--seeds", "0", "--jobs", "1", "--set", *two)
    assert second.returncode == 0 and "genenv-s0: unpacked" in second.stdout, second.stdout + second.stderr
    log = (tmp_path / "runs" / "reasoning_gym" / "genenv-s0.log").read_text()
    assert "continuing at epoch 1" in log
    metrics = (tmp_path / "results" / "reasoning_gym" / "runs" / "genenv-s0.jsonl").read_text().splitlines()
    assert [json.loads(line)["epoch"] for line in metrics] == [0, 1]
    _driver(tmp_path, "save", "--set", *two)
    assert not archive.exists()  # finished: its archive is dropped


def test_the_repository_commits_the_experiments_metrics_copies():
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    copy = REPO / "results/curriculum/reasoning_gym/runs/genenv-s0.jsonl"
    assert not driver.ignored_by_git(copy)


def test_metrics_that_git_would_ignore_stop_the_driver_before_it_deletes_an_archive(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("runs/\n")  # unanchored: also matches results/<testbed>/runs/
    run_dir = tmp_path / "work" / "reasoning_gym" / "genenv-s0"
    run_dir.mkdir(parents=True)
    (run_dir / "metrics.jsonl").write_text(json.dumps({"epoch": 0}) + "\n")
    archive = tmp_path / "archives" / "reasoning_gym" / "genenv-s0.tar.xz"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"the run")
    with pytest.raises(SystemExit, match="git ignores"):
        driver.save("reasoning_gym", tmp_path / "work", tmp_path / "results", tmp_path / "archives", epochs=1)
    assert archive.exists()
    (tmp_path / ".gitignore").write_text("/runs\n")
    driver.save("reasoning_gym", tmp_path / "work", tmp_path / "results", tmp_path / "archives", epochs=1)
    assert not archive.exists() and (tmp_path / "results" / "reasoning_gym" / "runs" / "genenv-s0.jsonl").exists()


@pytest.mark.parametrize("testbed", ["reasoning_gym", "reasoning_gym_expressions", "reasoning_gym_expressions_t10",
                                     "reasoning_gym_worked", "apibank", "apibank_learning"])  # fmt: skip
def test_every_testbed_composes_into_a_training_config(testbed):
    config = driver.testbed_config(testbed)  # what the report reads alpha, the band, beta and the window from
    assert config.epochs == driver.epochs_of(driver.TESTBEDS[testbed]) and config.agent.num_generations >= 4
    assert config.curriculum.name == "genenv" and (
        config.curriculum.alpha,
        config.curriculum.band_k,
        config.curriculum.stats_window,
    ) == (0.5, 0.4, 64)


def test_the_temperature_testbed_differs_from_the_expression_testbed_in_the_rollout_temperature_only():
    composed = {}
    for testbed in ("reasoning_gym_expressions", "reasoning_gym_expressions_t10"):
        overrides = driver.TESTBEDS[testbed]
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            composed[testbed] = genenv_config(compose("config", overrides=[*overrides, "run_dir=/tmp/unused"]))
    old, new = composed.values()
    assert (old.agent.temperature, new.agent.temperature) == (0.6, 1.0)
    new.agent.temperature = old.agent.temperature
    assert new.to_dict() == old.to_dict()


def test_the_worked_testbed_trains_the_agent_as_the_agent_learning_benchmark_does_at_the_gates_temperature():
    config = driver.testbed_config("reasoning_gym_worked")
    settings = {**agent_learning.AGENT, "learning_rate": 1e-4, "temperature": 1.0}
    assert {key: getattr(config.agent, key) for key in settings} == settings
    assert config.adapter_options["requests"] == "families" and config.adapter_options["answer_format"] == "worked"
    assert (config.validation.samples, config.validation.temperature) == (4, 1.0)
    assert config.simulator.engine == "hf" and config.agent_model == config.simulator_model == "smollm2"
    assert config.rwr.learning_rate == 1e-3


def test_the_curricula_of_a_seed_share_one_warm_start_and_it_travels_with_save(tmp_path):
    first = _driver(tmp_path, "run", "--curricula", "genenv", "random", "--seeds", "0", "--jobs", "1", "--set", *TINY)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "genenv-s0: warm start kept for seed 0" in first.stdout
    assert "random-s0: starts from genenv-s0's warm start" in first.stdout
    assert "after the restored warm start" in (tmp_path / "runs" / "reasoning_gym" / "random-s0.log").read_text()
    results = tmp_path / "results" / "reasoning_gym"
    genenv, random = (json.loads((results / "runs" / f"{name}.jsonl").read_text().splitlines()[0])
                      for name in ("genenv-s0", "random-s0"))  # fmt: skip
    assert "warm_start_shared_from" not in genenv and random["warm_start_shared_from"] == "genenv-s0"
    assert random["warm_start"] == genenv["warm_start"] and random["stage_seconds"]["warm_start"] == 0.0
    assert random["validation_warm_start"] == genenv["validation_warm_start"]
    assert "random s0 from genenv-s0" in (results / "report.md").read_text()

    saved = _driver(tmp_path, "save", "--set", *TINY, "coevolution.epochs=2")
    archives = tmp_path / "archives" / "reasoning_gym"
    assert saved.returncode == 0 and (archives / "warm-start-s0.tar.xz").exists(), saved.stderr
    (tmp_path / "runs").rename(tmp_path / "wiped")  # a new machine: the static run still starts from the copy
    static = _driver(tmp_path, "run", "--curricula", "static", "--seeds", "0", "--jobs", "1", "--set", *TINY)
    assert static.returncode == 0, static.stdout + static.stderr
    assert "warm-start-s0: unpacked" in static.stdout
    assert "static-s0: starts from genenv-s0's warm start" in static.stdout


def test_a_warm_start_made_with_other_settings_is_not_shared(tmp_path):
    source = tmp_path / "genenv-s0"
    (source / "checkpoints" / "warm-start").mkdir(parents=True)
    (source / "checkpoints" / "warm-start" / "state.json").write_text(json.dumps({"metrics": {}, "seconds": 9.0}))
    assert driver.keep_warm_start(source, seed=0) is None  # the trainer has not written its settings yet
    (source / ".hydra").mkdir()
    (source / ".hydra" / "overrides.yaml").write_text("- model=qwen05\n- curriculum=genenv\n- run_dir=/x\n")
    assert driver.keep_warm_start(source, seed=0) == tmp_path / "warm-start-s0"
    assert driver.keep_warm_start(source, seed=0) is None  # kept once
    random = tmp_path / "random-s0"
    assert driver.share_warm_start(random, 0, ["model=tiny", "curriculum=random"]) is None
    assert not random.exists()
    other_rwr = tmp_path / "genenv-rwr-s0"  # the simulator's RWR settings act after the warm start
    assert (
        driver.share_warm_start(other_rwr, 0, ["model=qwen05", "curriculum=genenv", "rwr.learning_rate=1e-3"])
        == "genenv-s0"
    )
    assert driver.share_warm_start(random, 0, ["model=qwen05", "curriculum=random", "run_dir=/y"]) == "genenv-s0"
    state = json.loads((random / "checkpoints" / "warm-start" / "state.json").read_text())
    assert state["seconds"] == 0.0 and state["metrics"]["warm_start_shared_from"] == "genenv-s0"


def test_a_warm_start_kept_with_the_simulators_settings_is_shared(tmp_path):
    """A copy whose stored settings still list rwr.* (kept before the filter dropped them) serves every curriculum."""
    copy = tmp_path / "warm-start-s0" / "checkpoints" / "warm-start"
    copy.mkdir(parents=True)
    settings = ["model=qwen05", "rwr.seed=0"]
    copy.joinpath("state.json").write_text(
        json.dumps({"metrics": {"warm_start_shared_from": "random-s0"}, "settings": settings})
    )
    genenv = tmp_path / "genenv-s0"
    overrides = ["model=qwen05", "curriculum=genenv", "rwr.seed=0", "rwr.learning_rate=1e-3"]
    assert driver.share_warm_start(genenv, 0, overrides) == "random-s0"
    assert driver.share_warm_start(tmp_path / "static-s0", 0, ["model=tiny", "rwr.seed=0"]) is None


def _pool_run(run_dir, overrides, epoch_recorded=True, batches=1):
    (run_dir / ".hydra").mkdir(parents=True)
    (run_dir / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    (run_dir / "pools").mkdir()
    records = [{"id": i, "epoch": i, "batch_end": 1, "family": "x"} for i in range(batches)]
    (run_dir / "pools" / "pool_draft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run_dir / "pools" / "pool_draft.meta.json").write_text(json.dumps({"epoch": batches - 1, "committed": batches}))
    if epoch_recorded:
        (run_dir / "metrics.jsonl").write_text(json.dumps({"epoch": 0}) + "\n")


def test_an_offline_pool_is_shared_with_the_same_run_of_a_testbed_that_differs_in_the_agent_only(tmp_path):
    settings = ["model=qwen05", "simulator.temperature=0.8", "curriculum=offline", "coevolution.seed=0"]
    source = tmp_path / "testbed_a" / "offline-s0"
    _pool_run(source, [*settings, "agent.temperature=0.6", "agent.seed=0", "run_dir=/a", "resume=false"])
    other_agent = [*settings, "agent.temperature=1.0", "agent.seed=0", "warm_start.seed=0"]

    assert driver.share_pool(tmp_path / "testbed_b" / "offline-s1", 1, other_agent) is None  # no such run elsewhere
    simulator_differs = [o.replace("=0.8", "=1.0") for o in other_agent]
    assert driver.share_pool(tmp_path / "testbed_b" / "offline-s0", 0, simulator_differs) is None
    assert not (tmp_path / "testbed_b" / "offline-s0").exists()

    target = tmp_path / "testbed_b" / "offline-s0"
    assert driver.share_pool(target, 0, other_agent) == "testbed_a/offline-s0"
    for name in ("pool_draft.jsonl", "pool_draft.meta.json"):
        assert (target / "pools" / name).read_bytes() == (source / "pools" / name).read_bytes()
    assert sorted(p.name for p in (target / "pools").iterdir()) == ["pool_draft.jsonl", "pool_draft.meta.json"]
    assert driver.share_pool(target, 0, other_agent) is None  # it has its pool now


def test_a_pool_still_being_written_is_not_shared(tmp_path):
    overrides = ["model=qwen05", "curriculum=static", "coevolution.seed=0"]
    _pool_run(tmp_path / "testbed_a" / "static-s0", overrides, epoch_recorded=False)
    assert driver.share_pool(tmp_path / "testbed_b" / "static-s0", 0, overrides) is None


def test_static_and_offline_runs_of_a_seed_share_the_longest_pool_draft_and_wait_for_one_being_written(tmp_path):
    """A static pool is the start of the offline pool of its seed (tests/test_resume.py: the trainer reads only the
    batches it needs), so either starts from the other's, in its own testbed or another."""
    settings = ["model=qwen05", "coevolution.seed=0", "coevolution.epochs=8"]
    for curriculum, batches in [("static", 3), ("offline", 9)]:
        overrides = [*settings, f"curriculum={curriculum}", "agent.temperature=0.6"]
        _pool_run(tmp_path / "testbed_a" / f"{curriculum}-s0", overrides, batches=batches)
    testbed = tmp_path / "testbed_b"
    static = [*settings, "curriculum=static", "agent.temperature=1.0"]
    assert driver.share_pool(testbed / "static-s0", 0, static) == "testbed_a/offline-s0"  # the longest
    assert driver.pool_batches(testbed / "static-s0") == 9
    assert driver.share_pool(testbed / "static-s0", 0, static) is None  # it has its pool now
    assert driver.share_pool(testbed / "static-s1", 1, [o.replace("seed=0", "seed=1") for o in static]) is None

    # seed 1 in testbed_b alone: offline-s1 waits while static-s1 writes the pool it will start from
    seed_1 = [o.replace("seed=0", "seed=1") for o in settings]
    pending, busy = [("offline", 1), ("genenv", 1)], [("static-s1", 1)]
    warm_start = driver.warm_start_state(driver.shared_warm_start(testbed, 1))
    warm_start.parent.mkdir(parents=True)
    warm_start.write_text("{}")  # seed 1's warm start is made: only the pool holds offline-s1 back
    (testbed / "static-s1").mkdir()
    assert driver.next_startable(pending, testbed, busy, seed_1) == ("genenv", 1)
    assert driver.next_startable(pending, testbed, [("genenv-s1", 1)], seed_1) == ("offline", 1)  # nothing to wait for
    _pool_run(testbed / "static-s1", [*seed_1, "curriculum=static"], epoch_recorded=False, batches=2)
    assert driver.next_startable(pending, testbed, busy, seed_1) == ("genenv", 1)  # still writing
    (testbed / "static-s1" / "metrics.jsonl").write_text(json.dumps({"epoch": 0}) + "\n")
    assert driver.next_startable(pending, testbed, busy, seed_1) == ("offline", 1)
    assert driver.share_pool(testbed / "offline-s1", 1, [*seed_1, "curriculum=offline"]) == "testbed_b/static-s1"


def test_the_archived_pools_of_other_testbeds_are_unpacked_for_sharing(tmp_path, monkeypatch):
    for testbed, run in [
        ("a", "static-s0"),
        ("a", "genenv-s0"),
        ("b", "offline-s1"),
        ("b", "offline-s2"),
        ("t", "static-s0"),
    ]:
        (tmp_path / "archives" / testbed).mkdir(parents=True, exist_ok=True)
        (tmp_path / "archives" / testbed / f"{run}.tar.xz").write_bytes(b"")
    unpacked = []
    monkeypatch.setattr(driver, "unpack_run", lambda archive, run_dir: unpacked.append((archive.parent.name, run_dir)))
    (tmp_path / "runs" / "b" / "offline-s1" / "checkpoints" / "latest").parent.mkdir(parents=True)
    (tmp_path / "runs" / "b" / "offline-s1" / "checkpoints" / "latest").write_text("epoch-0000")  # holds a run
    driver.restore_pools_elsewhere("t", [0, 1], tmp_path / "runs", tmp_path / "archives")
    assert unpacked == [("a", tmp_path / "runs" / "a" / "static-s0")]  # not genenv, not seed 2, not its own testbed


def test_save_leaves_out_a_shared_warm_start_whose_copy_was_cut_short(tmp_path):
    unfinished = driver.shared_warm_start(tmp_path / "work" / "reasoning_gym", 0)
    unfinished = unfinished.with_name(unfinished.name + driver.UNFINISHED_COPY)
    (unfinished / "checkpoints" / "warm-start").mkdir(parents=True)  # a driver killed while copying
    driver.save("reasoning_gym", tmp_path / "work", tmp_path / "results", tmp_path / "archives", epochs=1)
    assert not (tmp_path / "archives" / "reasoning_gym").exists()


def test_a_run_another_trainer_holds_counts_as_busy_and_is_not_started_again(tmp_path):
    run_dir = tmp_path / "runs" / "reasoning_gym" / "genenv-s0"
    assert not driver.held_elsewhere(run_dir)
    out = tmp_path / "driver.out"
    with lock_held_by_live_process(run_dir):
        assert driver.held_elsewhere(run_dir)
        command = [sys.executable, "experiments/curriculum/driver.py", "run", "reasoning_gym", "--curricula",
                   "genenv", "random", "--seeds", "0", "--jobs", "1", "--runs-root", str(tmp_path / "runs"),
                   "--archives-root", str(tmp_path / "archives"), "--results-root", str(tmp_path / "results"),
                   "--set", *TINY]  # fmt: skip
        with out.open("w") as stdout:
            process = subprocess.Popen(command, cwd=REPO, stdout=stdout, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 120
            while "another trainer holds it" not in out.read_text() and process.poll() is None:
                assert time.time() < deadline, out.read_text()
                time.sleep(0.5)
            time.sleep(2)
            assert process.poll() is None, out.read_text()
        finally:
            process.kill()
            process.wait()
    text = out.read_text()
    assert "genenv-s0: another trainer holds it" in text and "started" not in text  # --jobs 1 is taken by it
    assert not driver.held_elsewhere(run_dir)  # its holder is gone: a stale lock holds nothing


def test_a_run_waits_while_a_busy_run_of_its_seed_makes_the_warm_start_it_would_share(tmp_path):
    pending = [("random", 0), ("static", 1)]
    busy = [("genenv-s0", 0)]
    assert driver.next_startable(pending, tmp_path, busy, []) == ("static", 1)  # genenv-s0 is making seed 0's
    assert driver.next_startable(pending[:1], tmp_path, busy, []) is None
    assert driver.next_startable(pending, tmp_path, [], []) == ("random", 0)
    checkpoint = tmp_path / "genenv-s0" / "checkpoints" / "warm-start"
    checkpoint.mkdir(parents=True)
    (checkpoint / "state.json").write_text("{}")
    assert driver.next_startable(pending, tmp_path, busy, []) == ("random", 0)  # made: the driver keeps a copy of it
    (checkpoint / "state.json").unlink()
    (tmp_path / "genenv-s0" / "metrics.jsonl").write_text(json.dumps({"epoch": 3}) + "\n")
    assert driver.next_startable(pending, tmp_path, busy, []) == ("random", 0)  # a resumed run made it long ago
    (tmp_path / "genenv-s0" / "metrics.jsonl").unlink()
    copy = driver.shared_warm_start(tmp_path, 0) / "checkpoints" / "warm-start"
    copy.mkdir(parents=True)
    (copy / "state.json").write_text("{}")
    assert driver.next_startable(pending, tmp_path, busy, []) == ("random", 0)  # the seed's shared copy exists


def test_runs_that_have_begun_go_before_new_ones(tmp_path):
    """A continued experiment finishes the runs it started (or unpacked from a save) before it starts others."""
    pending = [("static", 0), ("offline", 0), ("genenv", 2), ("random", 2)]
    assert driver.begun_first(pending, tmp_path) == pending
    for name in ("random-s2", "genenv-s2"):
        (tmp_path / name / "checkpoints" / "epoch-0001").mkdir(parents=True)
    (tmp_path / "offline-s0").mkdir()  # a folder without a checkpoint has not begun
    assert driver.begun_first(pending, tmp_path) == [("genenv", 2), ("random", 2), ("static", 0), ("offline", 0)]
