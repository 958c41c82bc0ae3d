"""The co-evolution loop end to end with the tiny model: epochs, pools, checkpoints, resume, ablations."""

import json
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, child_env, data_dir
from scripted_simulator import ScriptedSimulator
from test_apibank_env import CALCULATOR_TASK

from genenv.agents.grpo import GRPOAgentConfig
from genenv.agents.rollout import Episode
from genenv.agents.warm_start import WarmStartConfig
from genenv.benchmarks.base import Trajectory
from genenv.checkpoints import latest_checkpoint, read_metrics
from genenv.coevolution import CoEvolutionTrainer, GenEnvConfig
from genenv.curriculum import CurriculumConfig, RWRConfig
from genenv.learning_curve import held_out_curve
from genenv.pools import TaskPool, TracePool

AGENT = GRPOAgentConfig(
    num_generations=2,
    max_new_tokens=8,
    max_turns=2,
    per_device_train_batch_size=2,
    gradient_accumulation_steps=1,
    max_completion_length=128,
    use_lora=True,
)


def grouped(settings: dict) -> dict:
    """GenEnvConfig keyword arguments from ``settings``: its own fields as they are, ``curriculum`` (a name) and the
    curriculum's settings into ``curriculum``, ``validation_X`` and ``simulator_X`` into those groups."""
    top = {name for name in GenEnvConfig.__dataclass_fields__} - set(GenEnvConfig.groups())
    groups: dict = {"curriculum": {}, "validation": {}, "simulator": {}}
    out = {}
    for key, value in settings.items():
        if key in top or (key in GenEnvConfig.groups() and not isinstance(value, (str, dict))):
            out[key] = value
        elif key == "curriculum":
            groups["curriculum"]["name"] = value
        elif key in CurriculumConfig.__dataclass_fields__:
            groups["curriculum"][key] = value
        elif key.startswith(("validation_", "simulator_")):
            group, _, name = key.partition("_")
            groups[group][name] = value
        else:
            raise TypeError(f"tiny_config: no setting {key!r}")
    return {**out, **{name: group for name, group in groups.items() if group}}


def tiny_config(run_dir: Path, **overrides) -> GenEnvConfig:
    settings = dict(
        benchmark="apibank",
        data_dir=str(data_dir("apibank")),
        run_dir=str(run_dir),
        epochs=2,
        tasks_per_epoch=2,
        generation_rounds=1,
        simulator_batch_size=2,
        simulator_max_new_tokens=8,
        replay_tasks=2,
        base_split="train",
        validation_split="level-1-api",
        validation_limit=2,
        warm_start=WarmStartConfig(max_examples=0),
        agent_model="tiny",
        simulator_model="tiny",
        agent=AGENT,
        rwr=RWRConfig(batch_size=2),
    )
    return GenEnvConfig(**grouped({**settings, **overrides}))


def test_two_epochs_with_unparsable_simulator_output(tmp_path):
    trainer = CoEvolutionTrainer(tiny_config(tmp_path))
    history = trainer.train()
    assert [m["epoch"] for m in history] == [0, 1] == [m["epoch"] for m in read_metrics(tmp_path)]
    for metrics in history:
        # the random tiny simulator writes no valid task: every output is rejected with its reason
        assert metrics["fresh_tasks"] == 0 and metrics["rejects"] == metrics["proposals"] == 2
        assert metrics["agent"]["steps"] >= 1 and metrics["replay_tasks"] == 2
        assert "api_call_accuracy" in metrics["validation"] and metrics["peak_rss_mb"] > 0
        assert len(metrics["load_average"]) == 3 and min(metrics["load_average"]) >= 0  # the load beside the times
    tasks, traces = TaskPool(tmp_path / "pools"), TracePool(tmp_path / "pools")
    assert tasks.committed_epoch == traces.committed_epoch == 1
    assert len(tasks.rejects()) == 4 and all(r["reject_reason"] for r in tasks.rejects())
    assert {r["epoch"] for r in traces.records(source="on_policy")} == {0, 1}
    assert latest_checkpoint(tmp_path).name == "epoch-0001"
    with pytest.raises(FileExistsError):
        CoEvolutionTrainer(tiny_config(tmp_path))


def test_generated_tasks_train_both_policies_and_kl_cap_stops(tmp_path, caplog):
    rwr = RWRConfig(batch_size=2, learning_rate=0.5, max_kl=1e-9)
    config = tiny_config(tmp_path, epochs=1, replay_tasks=0, band_k=0.5, rwr=rwr, report_to=["tensorboard"])
    trainer = CoEvolutionTrainer(config)
    trainer.simulator = ScriptedSimulator([json.dumps(CALCULATOR_TASK), "{broken"], "Calculator")
    (metrics,) = trainer.train()
    assert metrics["fresh_tasks"] == 1 and metrics["rejects"] == 1 and metrics["p_hat"] is not None
    assert metrics["p_hat_per_family"].keys() == {"Calculator"}
    assert metrics["r_env"] > 0 and metrics["agent"]["episodes"] == 2 and metrics["in_band"]
    # the simulator update ran on the accepted task, and the KL cap cut it short
    assert metrics["simulator"]["examples"] == 1 and metrics["simulator"]["stopped_early"] and "KL cap" in caplog.text
    # metrics.jsonl mirrored to TensorBoard
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "tensorboard"))
    events.Reload()
    assert events.Scalars("p_hat")[0].value == pytest.approx(metrics["p_hat"])
    assert "p_hat_per_family/Calculator" in events.Tags()["scalars"]
    accepted = TaskPool(tmp_path / "pools").records(status="accepted")
    assert len(accepted) == 1 and accepted[0]["weight"] == pytest.approx(2.718281828 ** metrics["r_env"])


HARD_TASK = dict(
    CALCULATOR_TASK, request="How much is 7*6?", gold_call={"name": "Calculator", "arguments": {"formula": "7*6"}}
)


def _script_attempts(trainer: CoEvolutionTrainer) -> None:
    """The agent's G = 2 attempts score 1, 0 on CALCULATOR_TASK (inside the band) and 0, 0 on HARD_TASK (outside)."""
    scripted = {"(12+8)*3": [1.0, 0.0], "7*6": [0.0, 0.0]}

    def train(tasks, steps=None, refill=None):
        assert refill is None  # dynamic sampling is off: the epoch's tasks are all its tasks
        trainer.agent_trainer.episodes = [
            Episode(task, Trajectory(), reward, [], [])
            for task in tasks
            for reward in next(r for q, r in scripted.items() if q in task.prompt)
        ]
        return {"episodes": len(trainer.agent_trainer.episodes)}

    trainer.agent_trainer.train = train


def test_each_generated_task_is_rewarded_by_its_own_attempts(tmp_path):
    """R_env and the band are per task (the G attempts on it): one task in the band, one outside."""
    config = tiny_config(tmp_path, epochs=1, replay_tasks=0, validation_split=None, base_split=None)
    trainer = CoEvolutionTrainer(config)
    trainer.simulator = ScriptedSimulator([json.dumps(CALCULATOR_TASK), json.dumps(HARD_TASK), "{broken"], "Calculator")
    _script_attempts(trainer)
    (metrics,) = trainer.train()
    assert metrics["p_hat"] == pytest.approx(0.25) and metrics["p_hat_per_task"] == [0.0, 0.5]
    assert metrics["in_band"] == 1 and metrics["filtered"] == 1 and metrics["rejects"] == 1
    assert metrics["r_env"] == pytest.approx((1.0 + math.exp(-10 * 0.25)) / 2)
    records = {r["raw"]: r for r in TaskPool(tmp_path / "pools").records()}
    kept, outside = records[json.dumps(CALCULATOR_TASK)], records[json.dumps(HARD_TASK)]
    assert kept["status"] == "accepted" and kept["r_env"] == 1.0 and kept["weight"] == pytest.approx(math.e)
    assert outside["status"] == "filtered" and outside["r_env"] == pytest.approx(math.exp(-2.5))
    assert metrics["simulator"]["examples"] == 1  # only the task in the band trains the simulator


def _first_prompts_of_two_epochs(tmp_path, curriculum: str, examples: str) -> tuple[list[dict], list[dict]]:
    """The first simulator prompt of epochs 0 and 1 of a run with ``simulator.examples=examples``: epoch 0 writes
    CALCULATOR_TASK (attempts 1, 0: in the band) and HARD_TASK (0, 0: outside)."""
    config = tiny_config(
        tmp_path, epochs=2, replay_tasks=0, validation_split=None, base_split=None, curriculum=curriculum,
        simulator_examples=examples,
    )  # fmt: skip
    trainer = CoEvolutionTrainer(config)
    trainer.simulator = ScriptedSimulator([json.dumps(CALCULATOR_TASK), json.dumps(HARD_TASK)], "Calculator")
    _script_attempts(trainer)
    trainer.train()
    (epoch_0, *_), (epoch_1, *_) = trainer.simulator.prompts  # one batch an epoch; its first prompt
    return epoch_0, epoch_1


@pytest.mark.parametrize("curriculum", ["genenv", "random"])
def test_an_in_band_genenv_simulator_is_shown_its_own_tasks_that_landed_inside_the_band(tmp_path, curriculum):
    epoch_0, epoch_1 = _first_prompts_of_two_epochs(tmp_path, curriculum, "in_band")
    first, second = ([m["content"] for m in prompt if m["role"] == "assistant"] for prompt in (epoch_0, epoch_1))
    assert json.dumps(CALCULATOR_TASK) not in first  # epoch 0: the benchmark's examples only
    if curriculum == "genenv":
        assert second[-1] == json.dumps(CALCULATOR_TASK) and json.dumps(HARD_TASK) not in second
    else:
        assert json.dumps(CALCULATOR_TASK) not in second


@pytest.mark.parametrize("curriculum", ["genenv", "random"])
def test_a_scored_genenv_simulator_is_shown_its_played_tasks_with_the_agents_success(tmp_path, curriculum):
    epoch_0, epoch_1 = _first_prompts_of_two_epochs(tmp_path, curriculum, "scored")
    assert "Your latest tasks" not in epoch_0[-1]["content"]  # epoch 0: nothing played yet
    assert json.dumps(CALCULATOR_TASK) not in [m["content"] for m in epoch_1 if m["role"] == "assistant"]
    if curriculum == "genenv":
        # both of epoch 0's tasks are Calculator's: the one solved in 1 of 2 attempts, the one in neither
        listed = epoch_1[-1]["content"].split("(target 50%):\n")[1].split("\n\n")[0].splitlines()
        assert listed == [f"- {json.dumps(CALCULATOR_TASK)} -> 50%", f"- {json.dumps(HARD_TASK)} -> 0%"]
    else:
        assert "Your latest tasks" not in epoch_1[-1]["content"]


def test_warm_start_mixing_and_expert_traces_of_generated_tasks(tmp_path):
    """Epoch 0 scores the held-out tasks before training and after the warm start; D_train holds the training
    split's expert traces and each validated generated task's; mix_per_epoch replays expert traces."""
    warm = WarmStartConfig(max_examples=3, max_length=8192, per_device_train_batch_size=3, mix_per_epoch=2)
    config = tiny_config(tmp_path, epochs=1, replay_tasks=0, warm_start=warm)
    trainer = CoEvolutionTrainer(config)
    trainer.simulator = ScriptedSimulator([json.dumps(CALCULATOR_TASK), "{broken"], "Calculator")
    (metrics,) = trainer.train()
    assert metrics["warm_start"]["examples"] == 3 and metrics["warm_start"]["steps"] == 1
    assert metrics["expert_mix"]["examples"] == 2
    for stage in ("validation_start", "validation_warm_start", "validation"):
        assert len(metrics[stage]["task_scores"]) == 2 and "api_call_accuracy" in metrics[stage]
    traces = TracePool(tmp_path / "pools")
    base = traces.records(source="base")
    assert len(base) == 853 and all(r["messages"][0]["role"] == "system" for r in base)
    (expert,) = traces.records(source="expert")
    assert expert["task"]["source"] == "generated" and "Calculator" in expert["messages"][2]["content"]
    assert read_metrics(tmp_path)[0]["warm_start"] == metrics["warm_start"]


def test_base_data_never_overlaps_the_held_out_split(tmp_path):
    with pytest.raises(ValueError, match="shares .* tasks with the held-out split"):
        CoEvolutionTrainer(tiny_config(tmp_path, base_split="level-1", validation_split="level-1-api"))


def test_held_out_every_second_epoch_and_the_last(tmp_path):
    history = CoEvolutionTrainer(tiny_config(tmp_path, epochs=4, validation_every=3, replay_tasks=1)).train()
    assert [bool(m["validation"]) for m in history] == [False, False, True, True]  # epochs 2 (3rd) and 3 (last)
    assert history[0]["validation_start"] and "validation_warm_start" not in history[0]  # no warm start here
    assert [p.stage for p in held_out_curve(read_metrics(tmp_path))] == ["start", "epoch 2", "epoch 3"]
    with pytest.raises(ValueError, match="validation.every must be at least 1"):
        tiny_config(tmp_path / "x", validation_every=0)


def test_validation_limit_zero_trains_without_held_out_scoring(tmp_path):
    """docs/distributed.md's advice under ZeRO-3, ``validation.limit=0``: no held-out task is scored,
    and the run's report says so."""
    data_dir("apibank")
    command = _train_command(tmp_path, "coevolution.epochs=1", "validation.limit=0")
    result = subprocess.run(command, cwd=REPO, env=child_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    (metrics,) = read_metrics(tmp_path)
    assert metrics["validation"] == {} and metrics["validation_start"] == {}
    assert "held-out=-" in result.stdout and "no held-out scores" in result.stdout
    with pytest.raises(ValueError, match="validation.limit must be >= 0, got -1"):
        tiny_config(tmp_path / "x", validation_limit=-1)


@pytest.mark.parametrize("curriculum", ["random", "static", "offline"])
def test_ablations_never_update_the_simulator(tmp_path, curriculum):
    pool = {"static": 2, "offline": None}.get(curriculum)
    trainer = CoEvolutionTrainer(tiny_config(tmp_path, curriculum=curriculum, tasks_per_epoch=1, static_pool_size=pool))
    assert trainer.simulator_trainer is None
    other = dict(
        CALCULATOR_TASK, request="How much is 7*6?", gold_call={"name": "Calculator", "arguments": {"formula": "7*6"}}
    )
    trainer.simulator = ScriptedSimulator([json.dumps(CALCULATOR_TASK), json.dumps(other)], "Calculator")
    history = trainer.train()
    assert all(m["simulator"] == {} for m in history)
    assert all(m["fresh_tasks"] == 1 for m in history)  # the same agent budget per epoch in every curriculum
    if curriculum == "static":  # a pool of 2 generated once, then drawn from
        assert history[0]["proposals"] == 2 and history[1]["proposals"] == 0
    if curriculum == "offline":  # 3.3 x the 2 tasks a GenEnv run of 2 epochs trains on: 7 wanted, 4 batches of 2
        assert trainer.pool_size() == 7
        assert history[0]["proposals"] == 8 and history[1]["proposals"] == 0
    assert history[-1]["generated_tasks"] == 2  # the scripted simulator writes 2 distinct valid tasks


def _train_command(run_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "genenv.train",
        "+bench=apibank",
        "model=tiny",
        f"run_dir={run_dir}",
        "coevolution.epochs=3",
        "coevolution.base_split=train",
        "warm_start.max_examples=0",
        "coevolution.replay_tasks=2",
        "validation.limit=1",
        "simulator.max_new_tokens=8",
        "curriculum.generation_rounds=1",
        "agent.max_new_tokens=8",
        "agent.num_generations=2",
        "agent.per_device_train_batch_size=2",
        "agent.gradient_accumulation_steps=1",
        *extra,
    ]


def test_the_console_shows_one_display_and_a_line_per_epoch_and_the_log_file_the_steps(tmp_path):
    """``genenv.train`` prints one line per epoch and one progress display; TRL's per-step log dicts and
    third-party deprecation warnings are kept out of the console, and the steps are in ``train.log``."""
    data_dir("apibank")
    command = _train_command(tmp_path, "coevolution.epochs=2", "warm_start.max_examples=2")
    result = subprocess.run(command, cwd=REPO, env=child_env(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    epochs = [line for line in result.stdout.splitlines() if line.startswith("epoch ")]
    assert [line.split(":")[0] for line in epochs] == ["epoch 0", "epoch 1"]
    assert all(f in line for line in epochs for f in ("p_hat=", "in band=", "agent reward=", "held-out="))
    console = result.stdout + result.stderr
    assert "'loss'" not in console and '"loss"' not in console and "learning_rate" not in console
    assert "FutureWarning" not in console and "DeprecationWarning" not in console
    assert "co-evolution" in result.stderr and "%|" not in result.stderr  # no tqdm bar but the run's display
    log = (tmp_path / "train.log").read_text(encoding="utf-8")
    assert "agent GRPO step 1: {" in log and "warm start step 1: {" in log and "epoch 1: p_hat=" in log


def test_sigkill_mid_epoch_then_resume(tmp_path):
    data_dir("apibank")
    run_dir = tmp_path / "run"
    env = child_env()
    process = subprocess.Popen(
        _train_command(run_dir), cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 300
    while latest_checkpoint(run_dir) is None and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
    time.sleep(1.5)  # into epoch 1
    process.send_signal(signal.SIGKILL)
    process.wait()
    checkpoint = latest_checkpoint(run_dir)
    assert checkpoint is not None, "no checkpoint before the kill"
    done = int(checkpoint.name.split("-")[1])
    traces_before = [r for r in TracePool(run_dir / "pools").records() if r["epoch"] <= done]
    assert traces_before, "committed records exist"

    result = subprocess.run(_train_command(run_dir, "resume=true"), cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    traces = TracePool(run_dir / "pools")
    assert traces.committed_epoch == 2
    assert [r for r in traces.records() if r["epoch"] <= done] == traces_before  # nothing lost or changed
    assert sorted(m["epoch"] for m in read_metrics(run_dir)) == [0, 1, 2]


@pytest.mark.slow
def test_two_processes_share_tasks_gather_episodes_and_resume(tmp_path):
    """``torchrun --nproc_per_node 2`` on CPU (gloo): what ``accelerate launch`` does on several GPUs."""
    data_dir("apibank")
    run_dir = tmp_path / "run"
    env = child_env(OMP_NUM_THREADS="1")
    launch = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29533"]
    first = _train_command(run_dir, "coevolution.epochs=1", "coevolution.replay_tasks=3")
    result = subprocess.run([*launch, *first[1:]], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count("epoch 0: p_hat=") == 1  # only the main process reports
    second = _train_command(run_dir, "coevolution.epochs=2", "coevolution.replay_tasks=3", "resume=true")
    result = subprocess.run([*launch, *second[1:]], cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    history = read_metrics(run_dir)
    assert [m["epoch"] for m in history] == [0, 1]
    traces = TracePool(run_dir / "pools")
    assert traces.committed_epoch == 1
    for epoch, metrics in enumerate(history):
        # 3 replayed tasks -> 2 optimizer steps of 2 tasks x G=2 episodes, played half on each process,
        # all gathered into the pool by the main process
        on_policy = [r for r in traces.records(source="on_policy") if r["epoch"] == epoch]
        assert metrics["agent"]["episodes"] == len(on_policy) == 8


def test_base_limit_keeps_an_even_spread_of_the_training_split(tmp_path):
    trainer = CoEvolutionTrainer(tiny_config(tmp_path, base_limit=5))
    base = TracePool(tmp_path / "pools").records(source="base", include_uncommitted=True)
    ids = [r["task"]["task_id"] for r in base]
    every = [t.task_id for t in trainer.adapter.load_tasks("train")]
    assert len(ids) == 5 and ids[0] == every[0] and ids[-1] == every[-1] and ids == sorted(ids, key=every.index)
    trainer.lock.release()


def test_lenient_training_is_validated_with_official_scoring(tmp_path, monkeypatch):
    """API-Bank trained with ``scoring: genenv`` reports validation scored by the official text-to-call step."""
    trainer = CoEvolutionTrainer(tiny_config(tmp_path, adapter_options={"scoring": "genenv"}))
    assert trainer.adapter.scoring.mode == "genenv"
    used = []

    def evaluate(adapter, agent, tasks, **_):
        used.append(adapter)
        return {"metrics": {"n": float(len(tasks))}}, []

    monkeypatch.setattr("genenv.coevolution.evaluate", evaluate)
    validation = trainer._validate()
    assert validation.pop("engine") and validation == {"n": 2.0, "samples": 1, "task_scores": []}
    assert [adapter.scoring.mode for adapter in used] == ["official"]


def test_held_out_scored_as_the_mean_of_several_samples(tmp_path, monkeypatch):
    """``validation_samples=3`` at ``validation_temperature=1.0``: each held-out task is played 3 times at that
    temperature, in a row, and its score is the mean of the 3."""
    trainer = CoEvolutionTrainer(tiny_config(tmp_path, validation_samples=3, validation_temperature=1.0))
    held_out = trainer.validation_tasks
    played = []

    def evaluate(adapter, agent, tasks, **_):
        played.append((agent.sampling.temperature, [t.task_id for t in tasks]))
        rewards = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
        return {"metrics": {"n": 6.0}}, [Episode(t, Trajectory(), r, [], []) for t, r in zip(tasks, rewards)]

    monkeypatch.setattr("genenv.coevolution.evaluate", evaluate)
    scored = trainer._validate()
    assert played == [(1.0, [t.task_id for t in held_out for _ in range(3)])]
    assert scored["samples"] == 3 and scored["task_scores"] == pytest.approx([2 / 3, 1 / 3])
    trainer.lock.release()
    with pytest.raises(ValueError, match="validation.samples=3 at validation.temperature 0 plays the same greedy"):
        tiny_config(tmp_path / "x", validation_samples=3)
