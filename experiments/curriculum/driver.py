"""The curriculum experiment: GenEnv vs Random vs Static vs Offline, several seeds, one testbed at a time.

    # run (or continue) every curriculum x seed of a testbed, two at a time, committing each finished run
    python experiments/curriculum/driver.py run reasoning_gym --seeds 0 1 2 --jobs 2 --commit
    # rebuild the table and figures from whatever runs exist (run folders, or the committed metrics copies)
    python experiments/curriculum/driver.py report reasoning_gym

Each run is ``python -m genenv.train`` with the testbed's settings, ``curriculum=C`` and every seed set to S, in
``<state>/curriculum_experiment/runs/<testbed>/<C>-s<S>``; ``<state>`` is the run-state folder outside the repository
(``$GENENV_STATE_DIR``, by default ``~/.cache/genenv/state``: :func:`genenv.run_archive.state_dir`). A run that was
interrupted is continued with ``resume=true``, before any run that has not begun; a finished one (its last epoch in
``metrics.jsonl``) is skipped, so the same command continues an experiment at any later time, on any machine. After
each run ends its ``metrics.jsonl`` is copied to ``results/curriculum/<testbed>/runs/`` and
``report.md`` and the figures are rebuilt there (:mod:`analysis`); ``--commit`` also commits that folder.
``--set KEY=VALUE ...`` adds Hydra overrides to every run (e.g. ``--set coevolution.epochs=4`` to fit a smaller
budget; each run's records say what ran).

The curricula of one seed share one warm start: the first run of seed S to finish its warm start leaves a copy in
``<state>/curriculum_experiment/runs/<testbed>/warm-start-s<S>`` (with the run's settings), and every later run of
that seed with the same settings but its curriculum starts from that copy instead of redoing it. The warm start does
not depend on the curriculum (it comes before anything the curriculum changes), so the runs are paired from the same
agent and each saves the warm start and two held-out scorings. Epoch 0's record of such a run names the run it came from
(``warm_start_shared_from``) and counts 0 seconds for it; ``save`` packs the copies with the runs. A run waits while
a running run of its seed still makes that warm start (runs of other seeds start meanwhile).

A static or offline pool does not depend on the agent: the frozen simulator writes it before training, batch ``i``
from the seed's stream ``i``, so a static pool is the start of the offline pool of its seed. A static or offline run
that has not begun its pool starts from the complete pool draft of the static or offline run of its seed, in this
testbed or in another on this machine whose settings differ only in ``agent.*``, ``warm_start.*``, the curriculum and
the pool's size (``share_pool``; the run folders of other testbeds are unpacked from their archives for it): the
driver copies the draft and the trainer reads from it the batches its pool needs, writing only those it lacks (an
offline pool is about 3 hours of one core, a static one about half an hour). A run waits while the static or
offline run of its seed it could start from is still writing its pool. The driver's log names the source.

``save`` packs every unfinished run (and shared warm start) as of its last complete epoch into
``<state>/curriculum_experiment/archives/<testbed>/<run>.tar.xz`` (:mod:`genenv.run_archive`), and ``run`` unpacks an
archive whose run folder holds nothing yet. To continue an experiment on another machine, copy the archives folder
(or the whole state folder) to the same place there (or to where ``GENENV_STATE_DIR`` points) and ``run`` again. Run
state is never committed: only the metrics copies, the report and the figures are.

A run whose folder a live trainer already holds (another driver's, or one a stopped driver left running) is never
started twice: it counts against ``--jobs`` until it ends, and the driver continues it if it ended unfinished. So a
driver can be stopped and started again, with other options, while its runs go on.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from analysis import load_experiment, plot_experiment, report  # this folder is on sys.path
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from genenv.checkpoints import CHECKPOINTS, POOL_DRAFT, POOLS, WARM_START, read_metrics
from genenv.coevolution import GenEnvConfig
from genenv.config import CONFIG_DIR
from genenv.run_archive import holds_run, pack_run, state_dir, unpack_run
from genenv.run_lock import RunLock
from genenv.train import genenv_config

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parents[2] / "results" / "curriculum"
#: the experiment's run state, outside the repository: run folders (``runs/``) and archives of unfinished runs
#: (``archives/``)
STATE = state_dir() / "curriculum_experiment"
CURRICULA = ("genenv", "random", "static", "offline")
POOL_CURRICULA = ("static", "offline")  # the curricula whose tasks come from one pool written before training
#: what a pool's batches do not depend on (:func:`pool_settings`)
POOL_INDEPENDENT_KEYS = (
    "run_dir", "resume", "curriculum", "curriculum.offline_multiplier", "curriculum.static_pool_size",
    "coevolution.epochs", "coevolution.tasks_per_epoch", "curriculum.generation_rounds",
)  # fmt: skip
#: <runs>/<testbed>/warm-start-s<S>: the warm-start checkpoint the curricula of seed S share (laid out as a run folder
#: holding only that checkpoint, so that ``save`` packs it and ``run`` unpacks it as it does the runs)
SHARED_WARM_START = "warm-start-s{seed}"
#: suffix of a shared warm start still being copied (a driver killed mid-copy leaves it; the next copy replaces it)
UNFINISHED_COPY = ".tmp"

#: testbed -> the Hydra overrides shared by its runs (what they leave alone, alpha and the band among it, is
#: genenv/configs/config.yaml's). Sized as issue 18 asks: >= 32 fresh tasks per epoch, G = 8, 8 epochs, >= 200 held-out
#: items
#: spread over the difficulty levels, the same for every run.
#: the agent update of every run recorded here: genenv/configs/config.yaml's before its defaults became the measured
#: ones
#: (results/agent_learning/README.md)
AGENT_UPDATE_OF_THE_RUNS = [
    "agent.max_completion_length=512",
    "agent.lora_r=8",
    "agent.lora_alpha=16",
    "agent.lora_target_modules=[q_proj,k_proj,v_proj,o_proj]",
    "agent.dynamic_sampling=false",
    "agent.lora_dropout=0.05",
]
#: and their batch: one group of G = 8 episodes per optimizer step
BATCH_OF_THE_RUNS = ["agent.per_device_train_batch_size=4", "agent.gradient_accumulation_steps=2"]
TESTBEDS: dict[str, list[str]] = {
    "reasoning_gym": [
        "+bench=reasoning_gym",
        "model=qwen05",
        "coevolution.epochs=8",
        "coevolution.tasks_per_epoch=32",
        "simulator.batch_size=16",
        "simulator.max_new_tokens=64",
        # The ladder at the sampling temperature (results/reasoning_gym_ladder_qwen05_t06.md): levels 0-4 span
        # about 0.7 (level 0) down to 0.05-0.25 (level 4) at temperature 0.6; at 1.0 the top was only 0.45.
        "bench.options.families=[basic_arithmetic@0-4,chain_sum@0-4,products@0-4]",
        "bench.options.validation_per_level=14",  # 3 families x 5 levels x 14 = 210 held-out items
        "validation.limit=210",
        # 210 items take about 12 min of one core (a tenth of a run each); scored before training, after the
        # warm start and after epochs 1, 3, 5 and 7
        "validation.every=2",
        "agent.num_generations=8",
        # LoRA at the config's 2e-5 left held-out flat over 3 epochs (2026-11-25, 2db21f7: 0.428, 0.437, 0.425, 0.426
        # with 210 items, about +/- 0.03): 5x that, a usual LoRA rate, so that the curricula can differ at all
        "agent.learning_rate=1e-4",
        "agent.temperature=0.6",
        "agent.max_new_tokens=128",
        "agent.max_turns=1",
        # the agent update and answer format these runs were made with, pinned where genenv/configs/config.yaml and the
        # bench config have since changed their defaults (one group per step, LoRA on the attention projections)
        *AGENT_UPDATE_OF_THE_RUNS,
        *BATCH_OF_THE_RUNS,
        "bench.options.answer_format=answer",
    ],
    "apibank": [
        "+bench=apibank",
        "model=qwen05",
        "coevolution.epochs=8",
        "coevolution.tasks_per_epoch=32",
        "simulator.batch_size=16",
        "validation.limit=200",
        "validation.every=2",
        "agent.num_generations=8",
        "agent.learning_rate=1e-4",
        "agent.max_new_tokens=64",
        *AGENT_UPDATE_OF_THE_RUNS,
        *BATCH_OF_THE_RUNS,
    ],
    # Not a comparison of curricula: issue 14's longer API-Bank learning run, one GenEnv run (`--curricula genenv
    # --seeds 0`) driven here for its resume, save and report. Held-out: 100 level-1 API samples, scored before
    # training, after the warm start and after every epoch, with the zero-shot evaluation's 192 new tokens.
    "apibank_learning": [
        "+bench=apibank",
        "model=qwen05",
        "coevolution.epochs=5",
        "coevolution.tasks_per_epoch=8",
        "validation.limit=100",
        "validation.every=1",
        "agent.num_generations=4",
        "agent.learning_rate=1e-4",
        "agent.max_new_tokens=192",
        # up to 32 proposals for 8 tasks: a quarter of the untrained simulator's proposals pass validation
        # (results/curriculum/simulator_validity/)
        "curriculum.generation_rounds=4",
        # API-Bank prompts run to 1,500 tokens and Qwen's vocabulary is 151k: smaller micro-batches, the same
        # effective batch, so that the run fits beside one experiment run in 23 GB
        "agent.per_device_train_batch_size=2",
        "agent.gradient_accumulation_steps=4",
        "warm_start.per_device_train_batch_size=1",
        "warm_start.gradient_accumulation_steps=4",
        *AGENT_UPDATE_OF_THE_RUNS,
    ],
}

#: reasoning_gym with one change: the simulator writes each task's expression, not a seed that picks it (a per-task
#: difficulty handle; genenv/benchmarks/reasoning_gym_expressions.py). The longest level-4 expression needs about 70
#: new tokens (digits are single tokens), so the simulator gets 96. And a step of uniform groups leaves the agent's
#: weights alone: with TRL's update AdamW's momentum moved the LoRA update about twice as far over the first two
#: epochs, and held-out after epoch 1 was 0.032 and 0.007 lower (paired s.e. 0.014 each; two probes,
#: results/agent_update_probe/README.md). The first design's run, with TRL's update, is kept in
#: results/reasoning_gym_expressions_trl_update/.
TESTBEDS["reasoning_gym_expressions"] = [
    *(o for o in TESTBEDS["reasoning_gym"] if not o.startswith("simulator.max_new_tokens=")),
    "simulator.max_new_tokens=96",
    "bench.options.task_spec=expression",
    "agent.skip_zero_advantage_steps=true",
]

#: reasoning_gym_expressions with the agent's rollouts at temperature 1.0 (TRL's default), not 0.6. With G = 8 and
#: k = 0.4 a task is in the band exactly when its attempts disagree, and only those groups carry a GRPO advantage. At
#: 0.6 the warm-started agent answered most items the same way 8 times out of 8: 12% of 90 groups in the band, against
#: 26% at 1.0 on the same items, at the same mean success (0.54 / 0.53) and time (no level lost, 11 of 15 family-levels
#: gained; results/reasoning_gym_groups_warm_start_s0_t06.md and _t10.md). The 0.6 testbed's runs had 12-16% of
#: their groups in the band. Held-out scoring stays greedy.
TESTBEDS["reasoning_gym_expressions_t10"] = [
    *(o for o in TESTBEDS["reasoning_gym_expressions"] if not o.startswith("agent.temperature=")),
    "agent.temperature=1.0",
]


#: The second curriculum test (results/reasoning_gym_worked/README.md): the embedded SmolLM2 writes its working, then
#: <answer>; the simulator chooses family member and level (levels 0-4; no key drawn by the trainer, no level cap).
#: Rollouts at 1.0, where the gate found success graded within keys (at 0.7 it was not); the agent update is
#: experiments/agent_learning/agent_learning.py's (LoRA 16 on every linear layer, 4 groups of G = 8 a step, lr 1e-4);
#: the simulator
#: as in the calibration (hf). Held-out: 150 items, 10 per family and level, each scored as the mean of 4 episodes at
#: 1.0, before training, after the warm start and after the last epoch. The simulator's RWR steps at lr 1e-3: at the
#: library's 1e-4 the calibration's simulator stayed where it began (its KL a sixth of the cap after 5 updates), at
#: 1e-3 it moved off the level it could not solve (results/reasoning_gym_worked/README.md).
TESTBEDS["reasoning_gym_worked"] = [
    "+bench=reasoning_gym",
    "model=smollm2",
    "coevolution.epochs=5",
    "coevolution.tasks_per_epoch=32",
    "simulator.batch_size=8",
    "simulator.max_new_tokens=64",
    "simulator.engine=hf",
    "bench.options.families=[basic_arithmetic@0-4,chain_sum@0-4,products@0-4]",
    "bench.options.requests=families",
    "bench.options.answer_format=worked",
    "bench.options.validation_per_level=10",
    "validation.limit=150",
    "validation.every=5",
    "validation.samples=4",
    "validation.temperature=1.0",
    "agent.num_generations=8",
    "agent.temperature=1.0",
    "agent.learning_rate=1e-4",
    "agent.max_new_tokens=128",
    "agent.max_completion_length=320",
    "agent.max_turns=2",
    "agent.per_device_train_batch_size=1",
    "agent.gradient_accumulation_steps=32",
    "agent.few_shot=none",
    "rwr.learning_rate=1e-3",
]


def testbed_config(testbed: str) -> GenEnvConfig:
    """The training config a GenEnv run of the testbed composes to (without ``--set`` overrides)."""
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return genenv_config(compose("config", overrides=[*TESTBEDS[testbed], "curriculum=genenv"]))


def run_name(curriculum: str, seed: int) -> str:
    return f"{curriculum}-s{seed}"


def epochs_of(overrides: list[str]) -> int:
    """The epoch count the overrides set (the last ``coevolution.epochs=`` wins)."""
    values = [o.split("=", 1)[1] for o in overrides if o.startswith("coevolution.epochs=")]
    if not values:
        raise SystemExit("the testbed's overrides must set coevolution.epochs")
    return int(values[-1])


def finished(run_dir: Path, epochs: int, copy: Path | None = None) -> bool:
    """Whether the run's last epoch is recorded in its folder or in its committed metrics ``copy`` (on a new machine
    a finished run has no folder: ``save`` drops its archive)."""
    records = read_metrics(run_dir) if run_dir.exists() else []
    if copy is not None and copy.exists():
        records += [m for run in load_experiment([copy]) for m in run.metrics]
    return any(int(m["epoch"]) == epochs - 1 for m in records)


def seed_overrides(seed: int) -> list[str]:
    return [f"{key}.seed={seed}" for key in ("coevolution", "agent", "warm_start", "rwr")]


def run_overrides(overrides: list[str], curriculum: str, seed: int) -> list[str]:
    """A run's own overrides: the testbed's, its curriculum and its seeds (its folder aside)."""
    return [*overrides, f"curriculum={curriculum}", *seed_overrides(seed)]


def command(overrides: list[str], curriculum: str, seed: int, run_dir: Path) -> list[str]:
    resume = "true" if holds_run(run_dir) else "false"
    return [sys.executable, "-m", "genenv.train", *run_overrides(overrides, curriculum, seed),
            f"run_dir={run_dir}", f"resume={resume}"]  # fmt: skip


def override_key(override: str) -> str:
    """The config key a Hydra override sets (``+agent.x=1`` -> ``agent.x``)."""
    return override.split("=", 1)[0].lstrip("+")


def warm_start_settings(overrides: list[str]) -> list[str]:
    """The overrides a run's warm start depends on: all of them but its curriculum, the simulator's RWR settings (its
    update comes after the warm start) and its own folder."""
    return sorted(o for o in overrides if override_key(o) not in ("curriculum", "run_dir", "resume")
                  and not override_key(o).startswith("rwr."))  # fmt: skip


def shared_warm_start(testbed_root: Path, seed: int) -> Path:
    """The folder of seed ``seed``'s shared warm start among a testbed's run folders."""
    return testbed_root / SHARED_WARM_START.format(seed=seed)


def warm_start_state(run_dir: Path) -> Path:
    """The ``state.json`` of a run folder's warm-start checkpoint (written last: the checkpoint is complete)."""
    return run_dir / CHECKPOINTS / WARM_START / "state.json"


def keep_warm_start(run_dir: Path, seed: int) -> Path | None:
    """Copy ``run_dir``'s warm-start checkpoint, once it exists, to the seed's shared copy beside it (if there is none
    yet), with the run's settings; returns the copy. The trainer writes that checkpoint by renaming a complete folder,
    so a live run is copied safely."""
    source = run_dir / CHECKPOINTS / WARM_START
    copy = shared_warm_start(run_dir.parent, seed)
    overrides = run_dir / ".hydra" / "overrides.yaml"  # written by the trainer as it starts
    if (copy / CHECKPOINTS).exists() or not warm_start_state(run_dir).exists() or not overrides.exists():
        return None
    temporary = copy.with_name(copy.name + UNFINISHED_COPY)
    shutil.rmtree(temporary, ignore_errors=True)
    shutil.copytree(source, temporary / CHECKPOINTS / WARM_START)
    state_file = warm_start_state(temporary)
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state["metrics"]["warm_start_shared_from"] = run_dir.name
    state["seconds"] = 0.0  # a run that starts from the copy spends no time on its warm start
    state["settings"] = warm_start_settings(list(OmegaConf.load(overrides)))
    state_file.write_text(json.dumps(state), encoding="utf-8")
    temporary.rename(copy)
    print(f"{run_dir.name}: warm start kept for seed {seed} in {copy}", flush=True)
    return copy


def share_warm_start(run_dir: Path, seed: int, overrides: list[str]) -> str | None:
    """Start a run that holds nothing yet from its seed's shared warm start, if there is one made with the same
    settings (``overrides``: the run's own, as the testbed and seed give them); returns the run it came from."""
    copy = warm_start_state(shared_warm_start(run_dir.parent, seed))
    if holds_run(run_dir) or not copy.exists():
        return None
    state = json.loads(copy.read_text(encoding="utf-8"))
    source = state["metrics"]["warm_start_shared_from"]
    # the stored list goes through today's filter too: a copy kept while the filter still counted rwr.* is shared
    if warm_start_settings(state["settings"]) != warm_start_settings(overrides):
        print(f"{run_dir.name}: not sharing {source}'s warm start (other settings); it does its own", flush=True)
        return None
    shutil.copytree(copy.parent, run_dir / CHECKPOINTS / WARM_START)
    print(f"{run_dir.name}: starts from {source}'s warm start", flush=True)
    return source


def pool_settings(overrides: list[str]) -> list[str]:
    """The overrides a static or offline pool's batches depend on: the frozen simulator writes them before the agent
    plays, and batch ``i`` draws from the seed's stream ``i`` whatever the pool's size, so all of them but the
    agent's and its warm start's, the curriculum and the pool's size (a static pool is the start of the offline pool
    of its seed), and the run's folder."""
    return sorted(o for o in overrides if override_key(o) not in POOL_INDEPENDENT_KEYS
                  and not override_key(o).startswith(("agent.", "warm_start.")))  # fmt: skip


def pool_draft(run_dir: Path) -> Path:
    return run_dir / POOLS / f"{POOL_DRAFT}.jsonl"


def pool_batches(run_dir: Path) -> int:
    """Batches committed to a run's pool draft (0 without one)."""
    meta = run_dir / POOLS / f"{POOL_DRAFT}.meta.json"
    if not meta.exists():
        return 0
    last = json.loads(meta.read_text(encoding="utf-8")).get("epoch")
    return 0 if last is None else int(last) + 1


def pool_source(run_dir: Path, seed: int, overrides: list[str]) -> Path | None:
    """The complete pool draft a static or offline run of seed ``seed`` can start from: the static or offline run of
    that seed, in this testbed or another, whose :func:`pool_settings` are the run's (``overrides``: its own,
    curriculum and seeds included) and that has recorded epoch 0 (its pool is complete then); of several, the one
    with the most batches. None when there is none or the run has begun its own pool."""
    if pool_draft(run_dir).exists() or (run_dir.exists() and read_metrics(run_dir)):
        return None
    wanted = pool_settings(overrides)
    testbeds = run_dir.parent.parent
    candidates = itertools.chain(*(testbeds.glob(f"*/{run_name(c, seed)}") for c in POOL_CURRICULA))
    sources = [source for source in candidates
               if source != run_dir and pool_draft(source).exists()
               and (source / ".hydra" / "overrides.yaml").exists()
               and any(int(m["epoch"]) == 0 for m in read_metrics(source))
               and pool_settings(list(OmegaConf.load(source / ".hydra" / "overrides.yaml"))) == wanted]  # fmt: skip
    return max(sorted(sources), key=pool_batches, default=None)


def share_pool(run_dir: Path, seed: int, overrides: list[str]) -> str | None:
    """Copy the :func:`pool_source` of a static or offline run that has not begun its pool into its folder; returns
    that run (``testbed/run``). The trainer then reads its batches from the draft, as after a kill, up to the pool's
    size, and writes only those the draft lacks: the pool is the one it would have written (batch ``i`` draws from its
    own seeded stream), without the hours of simulator calls."""
    if (source := pool_source(run_dir, seed, overrides)) is None:
        return None
    (run_dir / POOLS).mkdir(parents=True, exist_ok=True)
    # each file whole (copied, then renamed), the records first: without their meta the trainer reads them as
    # uncommitted whole batches and keeps them
    for name in (f"{POOL_DRAFT}.jsonl", f"{POOL_DRAFT}.meta.json"):
        temporary = run_dir / POOLS / (name + UNFINISHED_COPY)
        shutil.copyfile(source / POOLS / name, temporary)
        temporary.rename(run_dir / POOLS / name)
    name = f"{source.parent.name}/{source.name}"
    print(f"{run_dir.name}: starts from {name}'s pool ({pool_batches(source)} batches)", flush=True)
    return name


def writing_pool(run_dir: Path) -> bool:
    """Whether a busy run is still before its pool is complete (no epoch recorded)."""
    return not read_metrics(run_dir)


def held_elsewhere(run_dir: Path) -> bool:
    """Whether a live trainer holds the run's folder: one another driver started, or one a stopped driver left
    running. The driver counts it as busy and never starts a second trainer on that folder (nor a third run)."""
    return RunLock(run_dir).live_holder() is not None


def making_warm_start(run_dir: Path) -> bool:
    """Whether a busy run is still before its warm-start checkpoint (no such checkpoint and no epoch recorded)."""
    return not warm_start_state(run_dir).exists() and not read_metrics(run_dir)


def next_startable(
    pending: list[tuple[str, int]], root: Path, busy: list[tuple[str, int]], overrides: list[str]
) -> tuple[str, int] | None:
    """The first pending (curriculum, seed) that may start beside the ``busy`` (run name, seed) runs.

    A run waits while its seed has no shared warm start and a busy run of that seed is still making one: started
    now, it would make the same warm start a second time. Likewise a static or offline run with no pool to start
    from waits while a busy static or offline run of its seed is still writing one. Runs of other seeds go first
    meanwhile. ``overrides``: the testbed's.
    """
    for curriculum, seed in pending:
        made = warm_start_state(shared_warm_start(root, seed)).exists()
        if not made and any(s == seed and making_warm_start(root / name) for name, s in busy):
            continue
        run_dir = root / run_name(curriculum, seed)
        if curriculum in POOL_CURRICULA and not pool_draft(run_dir).exists():
            own = run_overrides(overrides, curriculum, seed)
            writers = [name for name, s in busy if s == seed and name.split("-s")[0] in POOL_CURRICULA]
            if pool_source(run_dir, seed, own) is None and any(writing_pool(root / name) for name in writers):
                continue
        return curriculum, seed
    return None


def begun_first(pending: list[tuple[str, int]], root: Path) -> list[tuple[str, int]]:
    """``pending`` (curriculum, seed) runs with those that have begun (a checkpoint on disk, also one unpacked from a
    save) first, each group in its order: a continued experiment finishes what it started before it starts more."""
    return sorted(pending, key=lambda entry: not (root / run_name(*entry) / CHECKPOINTS).is_dir())


def ignored_by_git(path: Path) -> bool:
    """Whether git would leave ``path`` out of a commit (False outside a git work tree)."""
    where = next(folder for folder in path.absolute().parents if folder.is_dir())
    check = subprocess.run(["git", "check-ignore", "-q", str(path.absolute())], cwd=where, capture_output=True)
    return check.returncode == 0


def copy_metrics(testbed: str, runs_root: Path, results_root: Path) -> None:
    """Copy every run's ``metrics.jsonl`` to ``<results>/<testbed>/runs/<run>.jsonl``.

    Raises when git ignores the copies: they are the experiment's record (a finished run's archive is deleted), and
    an ignore rule once kept a finished run's metrics out of every commit without a word.
    """
    out = results_root / testbed / "runs"
    out.mkdir(parents=True, exist_ok=True)
    for metrics in sorted((runs_root / testbed).glob("*/metrics.jsonl")):
        copy = out / f"{metrics.parent.name}.jsonl"
        if ignored_by_git(copy):
            raise SystemExit(f"git ignores {copy} (see `git check-ignore -v`): fix the ignore rule, or the run's "
                             "metrics are never committed")  # fmt: skip
        shutil.copyfile(metrics, copy)


def rebuild(testbed: str, runs_root: Path, results_root: Path, commit: bool) -> Path:
    """Copy every run's metrics into the results folder, then write ``report.md`` and the figures."""
    out = results_root / testbed
    copy_metrics(testbed, runs_root, results_root)
    aim = testbed_config(testbed).curriculum
    runs = load_experiment((out / "runs").glob("*.jsonl"))
    header = [
        f"# Curriculum experiment: {testbed}",
        "",
        f"Built by `python experiments/curriculum/driver.py report {testbed}` from the metrics in `runs/`; settings "
        "in `experiments/curriculum/driver.py` (TESTBEDS) and each record's run.",
        "",
        "",
    ]
    text = report(runs, aim.alpha, aim.band_k, aim.beta, aim.stats_window)
    (out / "report.md").write_text("\n".join(header) + text, encoding="utf-8")
    if runs:
        plot_experiment(runs, out, aim.alpha, aim.band_k, aim.beta, aim.stats_window)
    if commit:
        subprocess.run(["git", "add", str(out)], cwd=ROOT, check=True)
        message = f"curriculum experiment, {testbed}: metrics, report and figures of {len(runs)} runs"
        subprocess.run(["git", "commit", "-q", "-m", message, "--", str(out)], cwd=ROOT, check=False)
    return out


def save(testbed: str, runs_root: Path, results_root: Path, archives_root: Path, epochs: int) -> None:
    """Pack every unfinished run as of its last complete epoch into ``archives_root``; a finished run keeps only its
    metrics copy in ``results_root``."""
    out = archives_root / testbed
    copy_metrics(testbed, runs_root, results_root)  # raises before any archive is deleted if git ignores them
    for run_dir in sorted(d for d in (runs_root / testbed).glob("*") if d.is_dir() and d.suffix != UNFINISHED_COPY):
        archive = out / f"{run_dir.name}.tar.xz"
        if finished(run_dir, epochs):
            archive.unlink(missing_ok=True)
            continue
        epoch = pack_run(run_dir, archive)
        at = "no epoch complete (config; pool draft and warm start if any)" if epoch is None else f"epoch {epoch}"
        print(f"{run_dir.name}: {at} -> {archive} ({archive.stat().st_size / 2**20:.1f} MiB)", flush=True)


def restore(run_dir: Path, archives_root: Path, testbed: str) -> None:
    """Unpack the run's (or shared warm start's) archive when its folder holds no run (a new machine)."""
    archive = archives_root / testbed / f"{run_dir.name}.tar.xz"
    if archive.exists() and not holds_run(run_dir):
        unpack_run(archive, run_dir)
        print(f"{run_dir.name}: unpacked {archive}", flush=True)


def restore_pools_elsewhere(testbed: str, seeds: list[int], runs_root: Path, archives_root: Path) -> None:
    """Unpack the archived static and offline runs of ``seeds`` in the other testbeds, whose pool drafts
    :func:`share_pool` may give this testbed's runs (a folder that holds a run already is left as it is)."""
    for curriculum, seed in itertools.product(POOL_CURRICULA, seeds):
        for archive in sorted(archives_root.glob(f"*/{run_name(curriculum, seed)}.tar.xz")):
            if (other := archive.parent.name) != testbed:
                restore(runs_root / other / run_name(curriculum, seed), archives_root, other)


def run(args: argparse.Namespace) -> None:
    overrides = TESTBEDS[args.testbed] + args.overrides
    epochs = epochs_of(overrides)
    root = args.runs_root / args.testbed
    root.mkdir(parents=True, exist_ok=True)
    for curriculum, seed in itertools.product(args.curricula, args.seeds):
        restore(root / run_name(curriculum, seed), args.archives_root, args.testbed)
    if any(c in POOL_CURRICULA for c in args.curricula):
        restore_pools_elsewhere(args.testbed, args.seeds, args.runs_root, args.archives_root)
    for seed in args.seeds:
        restore(shared_warm_start(root, seed), args.archives_root, args.testbed)
        for curriculum in CURRICULA:
            keep_warm_start(root / run_name(curriculum, seed), seed)
    copies = args.results_root / args.testbed / "runs"
    pending = [(c, s) for s, c in itertools.product(args.seeds, args.curricula)
               if not finished(root / run_name(c, s), epochs, copies / f"{run_name(c, s)}.jsonl")]  # fmt: skip
    pending = begun_first(pending, root)
    print(f"{len(pending)} runs to go: {', '.join(run_name(c, s) for c, s in pending) or 'none'}", flush=True)
    # OpenMP threads that spin on cores the other run needs slow HF generate many times (performance/hf_contention.py)
    environment = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ, "OMP_NUM_THREADS": str(args.threads)}
    running: list[tuple[str, int, subprocess.Popen, float]] = []
    elsewhere: list[tuple[str, int]] = []  # pending runs a trainer this driver did not start holds
    while pending or running or elsewhere:
        for entry in [e for e in pending if held_elsewhere(root / run_name(*e))]:
            pending.remove(entry)
            elsewhere.append(entry)
            print(f"{run_name(*entry)}: another trainer holds it; it counts against --jobs until it ends", flush=True)
        for entry in [e for e in elsewhere if not held_elsewhere(root / run_name(*e))]:
            elsewhere.remove(entry)
            if finished(root / run_name(*entry), epochs):
                print(f"{run_name(*entry)}: finished by another trainer", flush=True)
                rebuild(args.testbed, args.runs_root, args.results_root, args.commit)
            else:
                pending.insert(0, entry)  # it stopped before its last epoch: this driver continues it
        busy = [(name, seed) for name, seed, _, _ in running] + [(run_name(*e), e[1]) for e in elsewhere]
        while len(busy) < args.jobs and (entry := next_startable(pending, root, busy, overrides)) is not None:
            pending.remove(entry)
            curriculum, seed = entry
            run_dir = root / run_name(curriculum, seed)
            share_warm_start(run_dir, seed, [*overrides, *seed_overrides(seed)])
            if curriculum in POOL_CURRICULA:
                share_pool(run_dir, seed, run_overrides(overrides, curriculum, seed))
            log = (root / f"{run_name(curriculum, seed)}.log").open("a")
            process = subprocess.Popen(command(overrides, curriculum, seed, run_dir), cwd=ROOT, env=environment,
                                       stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
            running.append((run_name(curriculum, seed), seed, process, time.time()))
            busy.append((run_name(curriculum, seed), seed))
            print(f"started {run_name(curriculum, seed)} (pid {process.pid}, log {log.name})", flush=True)
        time.sleep(5)
        for name, seed in busy:
            keep_warm_start(root / name, seed)
        for entry in [e for e in running if e[2].poll() is not None]:
            running.remove(entry)
            name, _, process, started = entry
            print(f"{name}: exit {process.returncode} after {(time.time() - started) / 60:.1f} min", flush=True)
            rebuild(args.testbed, args.runs_root, args.results_root, args.commit and process.returncode == 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="action", required=True)
    for name in ("run", "report", "save"):
        sub = commands.add_parser(name)
        sub.add_argument("testbed", choices=sorted(TESTBEDS))
        sub.add_argument("--runs-root", type=Path, default=STATE / "runs", help="run folders (default: %(default)s)")
        sub.add_argument(
            "--archives-root",
            type=Path,
            default=STATE / "archives",
            help="archives of unfinished runs, to copy between machines (default: %(default)s)",
        )
        sub.add_argument("--results-root", type=Path, default=RESULTS)
        sub.add_argument("--commit", action="store_true", help="commit the results folder after each finished run")
        if name in ("run", "save"):
            sub.add_argument(
                "--set",
                dest="overrides",
                nargs="+",
                default=[],
                metavar="KEY=VALUE",
                help="Hydra overrides for every run (after the testbed's own)",
            )
        if name == "run":
            sub.add_argument("--curricula", nargs="+", default=list(CURRICULA), choices=CURRICULA)
            sub.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
            sub.add_argument("--jobs", type=int, default=2, help="runs at once (2 fills a 2-core machine)")
            sub.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of each run")
    args = parser.parse_args()
    if args.action == "save":
        epochs = epochs_of(TESTBEDS[args.testbed] + args.overrides)
        save(args.testbed, args.runs_root, args.results_root, args.archives_root, epochs)
    if args.action == "run":
        run(args)
    print(rebuild(args.testbed, args.runs_root, args.results_root, args.commit) / "report.md")


if __name__ == "__main__":
    main()
