"""Does GRPO make the agent better than its warm start? Warm start, then GRPO on a fixed pool of base tasks.

    # one run: the shared warm start of (model, seed), then GRPO with these agent settings, held-out before and after
    python experiments/agent_learning/agent_learning.py run NAME --seed 0 --episodes 512 --set agent.learning_rate=3e-4
    # the table of runs (held-out rise with its paired 95% interval, seconds per step, peak RSS, load)
    python experiments/agent_learning/agent_learning.py report NAME [NAME ...] --output results/agent_learning/sweep.md
    # one setting over its seeds: the mean rise, its intervals and the verdict of the criteria in results/README.md
    python experiments/agent_learning/agent_learning.py summary NAME --output results/agent_learning/summary.json
    # two runs item by item: each one's movement by warm-start score, the difference of their rises with its interval
    python experiments/agent_learning/agent_learning.py compare NAME-s0 OTHER-s0
    # what each seed's warm start is built from: its traces' tasks and its initial LoRA adapter, pair by pair
    python experiments/agent_learning/agent_learning.py warm-inputs --model qwen05 --seeds 0 11 12 13
    # GRPO's agents against warm starts on more traces, same seeds and items: the verdict of its written criteria
    python experiments/agent_learning/agent_learning.py grpo-vs-sft --grpo qwen-n32 --sft qwen-n128 \
        --output results/agent_learning/grpo_vs_sft.json
    # what sharpening can reach: K episodes of every held-out item from the warm start, pass@K and the mean success
    python experiments/agent_learning/agent_learning.py reach --model qwen05 --seed 0 --held-out-per-level 17 \
        --samples 16

No simulator: GRPO plays tasks of the benchmark's ``train`` split (the base data), so what is measured is the agent's
update alone. ``--bench reasoning_gym`` (the default) scores the ``validation`` split's items, ``--held-out-per-level``
per family and level of FAMILIES, or of ``--families`` (which also picks the train pool; the warm start stays
FAMILIES'); ``--bench apibank`` scores the API-Bank learning run's held-out samples (the first
``--held-out-limit`` level-1 API samples in the order ``genenv.coevolution.held_out_tasks`` fixes, 100 by default:
``results/curriculum/apibank_learning``) with the official scoring, and trains on the expert traces and
tasks of API-Bank's training split (``--model qwen05`` there, as in that run). The warm start (SFT on ``--warm-start``
expert traces of the same split) is computed once per benchmark, model, seed, answer format, LoRA shape and worked
exchanges shown (``agent.few_shot``) and kept under ``$GENENV_STATE_DIR/agent_learning`` (run state, never in git);
runs of one seed start from the very same weights, so their held-out scores are paired item by item. A run stops after
the optimizer step in which it has played ``--episodes`` episodes (dynamic sampling's refills, further tasks of the
pool, count), and writes ``<NAME>-s<SEED>.json`` into ``--runs-dir`` (default: ``runs/`` beside this file's results):
the settings, every held-out item's score before and after (and every ``--eval-every`` episodes), the agent's metrics
per step group, seconds, peak RSS and the load average. After every step group the run keeps its adapter, optimizer
and progress under ``$GENENV_STATE_DIR/agent_learning/runs/<NAME>-s<SEED>``: started again with the same arguments, a
killed run continues from its last group (its result counts the resumes); the folder goes once the result is written.

Held-out scoring: ``--eval greedy`` (one greedy episode per item) or ``--eval mean4`` (the mean of 4 episodes at
``--eval-temperature``, by default the rollouts' temperature: less noisy, and it sees a shift of probability that has
not yet flipped the top answer). Runs compared with each other must be scored at the same temperature.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from genenv.benchmarks.base import Task

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results" / "agent_learning"
FAMILIES = ["basic_arithmetic@0-2", "chain_sum@0-2", "products@0-2"]
#: the agent settings every run starts from (``--set agent.KEY=VALUE`` overrides them)
AGENT = {
    "num_generations": 8,
    "learning_rate": 3e-4,
    "max_new_tokens": 128,
    "max_completion_length": 320,
    "max_turns": 2,
    "per_device_train_batch_size": 1,  # the same update as 8 x 4 without padding: steps 2.2x faster at 1/4.6 the peak
    "gradient_accumulation_steps": 32,  # memory (results/performance/training_memory.json)
    "temperature": 1.0,
    "use_lora": True,
    "lora_r": 16,
    "lora_alpha": 32,
    "lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    "engine": "hf",
    "few_shot": "none",
}
LORA_KEYS = ("lora_r", "lora_alpha", "lora_target_modules")
#: per ``--bench``: the held-out split, and the benchmark's episode settings over AGENT's (API-Bank's are the learning
#: run's: four turns, API-Bank's episode length, 192 new tokens a turn with 512 in all, and the benchmark's
#: own worked exchange before each request, as genenv/configs/model/qwen05.yaml shows it)
BENCHES: dict[str, dict[str, Any]] = {
    "reasoning_gym": {"held_out": "validation", "agent": {}},
    "apibank": {
        "held_out": "level-1-api",
        "agent": {"max_turns": 4, "max_new_tokens": 192, "max_completion_length": 512, "few_shot": "own"},
    },
    # BFCL has no train split: the warm start's traces are its real-user queries of single calls (the frozen agent
    # of experiments/simulator_aim, whose tasks come from the other categories); no GRPO run here (no held-out)
    "bfcl": {
        "held_out": None,
        "warm_split": "live_simple+live_multiple",
        "agent": {"max_turns": 1, "max_new_tokens": 256, "max_completion_length": 512},
    },
}


def state_root() -> Path:
    from genenv.run_archive import state_dir

    return state_dir() / "agent_learning"


def settings_of(args: argparse.Namespace, overrides: dict[str, Any]) -> dict[str, Any]:
    """The agent settings of a run: AGENT, the benchmark's episode settings, then ``--set agent.*``."""
    return {**AGENT, **BENCHES[args.bench]["agent"], **overrides.get("agent", {})}


def held_out_name(args: argparse.Namespace) -> str:
    """What identifies a run's held-out items within its warm start's folder."""
    if args.bench == "reasoning_gym":
        return str(args.held_out_per_level) + ("-" + "+".join(args.families) if args.families else "")
    return f"{BENCHES[args.bench]['held_out']}-{args.held_out_limit}"


#: expert traces of the warm start unless ``--warm-start`` says otherwise
WARM_START = 128

#: the agent settings that shape a held-out episode besides its temperature
EPISODE_KEYS = ("max_new_tokens", "max_turns", "few_shot")


def overridden(args: argparse.Namespace, settings: dict[str, Any], keys: tuple[str, ...]) -> str:
    """``-key value`` for each of ``keys`` whose value in ``settings`` differs from the benchmark's ("" for none)."""
    defaults = settings_of(args, {})
    return "".join(f"-{key}{settings[key]}" for key in keys if settings[key] != defaults[key])


def held_out_cache_name(args: argparse.Namespace, settings: dict[str, Any], temperature: float) -> str:
    """The file, in the warm start's folder, of its held-out score: how it is scored (``--eval``, temperature), the
    episode settings of ``settings`` that differ from the benchmark's, the items. Only runs that would score the warm
    start alike share it."""
    scored_at = "" if args.eval == "greedy" else f"-t{temperature}"
    return f"held_out-{args.eval}{scored_at}{overridden(args, settings, EPISODE_KEYS)}-{held_out_name(args)}.json"


def reasoning_gym_adapter(answer_format: str, held_out_per_level: int, families: list[str] | None = None):
    """The reasoning-gym testbed: ``families`` (default FAMILIES) in ``answer_format``, ``held_out_per_level``
    validation items a key."""
    from genenv.benchmarks.base import get_benchmark

    return get_benchmark(
        "reasoning_gym",
        families=families or FAMILIES,
        answer_format=answer_format,
        validation_per_level=held_out_per_level,
    )


def fresh_trainer(args: argparse.Namespace, agent_settings: dict[str, Any]):
    """The adapter, the policy and its GRPO trainer, the LoRA adapter freshly initialised: torch seeded with the run's
    seed, then the trainer (TRL seeds it again with ``agent.seed``, the run's seed, before it adds the adapter). On
    reasoning-gym the adapter holds ``args.families`` (default FAMILIES)."""
    import torch

    from genenv.agents.grpo import GRPOAgentConfig, GRPOAgentTrainer
    from genenv.benchmarks.base import get_benchmark
    from genenv.llm.models import load_policy

    if args.bench == "reasoning_gym":
        adapter = reasoning_gym_adapter(args.answer_format, args.held_out_per_level, args.families)
    elif args.families:
        raise SystemExit(f"--families picks reasoning-gym family-levels; --bench {args.bench} has none")
    else:
        adapter = get_benchmark(args.bench)
    torch.manual_seed(args.seed)
    policy = load_policy(args.model, device="cpu", seed=args.seed)
    config = GRPOAgentConfig(**{**agent_settings, "seed": args.seed, "output_dir": str(state_root() / "trl")})
    return adapter, policy, GRPOAgentTrainer(policy, adapter, config)


def warm_start_tasks(args: argparse.Namespace, adapter) -> tuple[Any, list[Task]]:
    """The adapter of the warm start's traces (FAMILIES' on reasoning-gym when ``--families`` picks others) and the
    tasks whose expert traces it trains on: the first ``--warm-start`` of its ``train`` split (``warm_split`` in
    ``BENCHES`` for a benchmark without one) shuffled with the run's seed (so a seed's smaller warm start trains on a
    prefix of its larger one's tasks)."""
    warm_adapter = reasoning_gym_adapter(args.answer_format, args.held_out_per_level) if args.families else adapter
    tasks = warm_adapter.load_tasks(BENCHES[args.bench].get("warm_split", "train"))
    random.Random(args.seed).shuffle(tasks)
    return warm_adapter, tasks[: args.warm_start]


def build(args: argparse.Namespace, agent_settings: dict[str, Any]):
    """The adapter, the policy and its GRPO trainer, the warm start restored or computed. On reasoning-gym the
    adapter holds ``args.families`` (default FAMILIES) and the warm start is always FAMILIES' (one warm start a seed
    for every testbed)."""
    from genenv.agents.grpo import GRPOAgentConfig
    from genenv.agents.rollout import shown_exchanges
    from genenv.agents.warm_start import WarmStartConfig, WarmStartTrainer
    from genenv.envs.expert import expert_conversation

    adapter, policy, trainer = fresh_trainer(args, agent_settings)
    lora_dropout = agent_settings.get("lora_dropout", GRPOAgentConfig.lora_dropout)
    lora = "-".join(
        str(agent_settings[k]) if k != "lora_target_modules" else str(len(agent_settings[k])) for k in LORA_KEYS
    ) + (f"-d{lora_dropout}" if lora_dropout else "")
    data = args.answer_format if args.bench == "reasoning_gym" else args.bench
    shown = overridden(args, agent_settings, ("few_shot",))  # the exchanges shown before each trace
    folder = state_root() / f"warm-{args.model}-{data}-n{args.warm_start}-lora{lora}{shown}-s{args.seed}"
    if (folder / "genenv_grpo.json").exists():
        trainer.load(folder)
    else:
        warm_adapter, tasks = warm_start_tasks(args, adapter)
        conversations = [c for c in (expert_conversation(warm_adapter, t) for t in tasks) if c]
        sft = WarmStartTrainer(
            trainer.model,
            policy.tokenizer,
            WarmStartConfig(max_examples=len(conversations), seed=args.seed),
            exchanges=shown_exchanges(adapter, agent_settings["few_shot"]),
            output_dir=str(state_root() / "trl-sft"),
        )
        sft.train(conversations)
        trainer.save(folder)
    trainer.anchor_reference()  # a KL term (agent.kl_coef > 0) keeps GRPO near the warm start
    return adapter, policy, trainer, folder


def warm_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """What each seed's warm start is built from, without training it: the ``train`` tasks of its expert traces and
    a fingerprint of its freshly initialised LoRA adapter (sha256 of every ``lora_A`` matrix's bytes, the sum of
    their absolute values, whether every ``lora_B`` is 0); and for each pair of seeds the traces they share and
    whether their initial adapters are the same."""
    import gc
    import hashlib

    seeds: dict[int, dict[str, Any]] = {}
    for seed in args.seeds:
        one = argparse.Namespace(**{**vars(args), "seed": seed})
        adapter, policy, trainer = fresh_trainer(one, settings_of(one, {}))
        _, tasks = warm_start_tasks(one, adapter)
        lora = [(n, p.detach()) for n, p in trainer.model.named_parameters() if "lora_" in n]
        first = [p for n, p in lora if "lora_A" in n]
        seeds[seed] = {
            "traces": [t.task_id for t in tasks],
            "lora_A_sha256": hashlib.sha256(b"".join(p.float().numpy().tobytes() for p in first)).hexdigest(),
            "lora_A_abs_sum": float(sum(p.abs().sum() for p in first)),
            "lora_A_matrices": len(first),
            "lora_B_zero": all(bool((p == 0).all()) for n, p in lora if "lora_B" in n),
        }
        del adapter, policy, trainer, lora, first
        gc.collect()
    pairs = {
        f"{a}-{b}": {
            "shared_traces": len(set(seeds[a]["traces"]) & set(seeds[b]["traces"])),
            "same_initial_adapter": seeds[a]["lora_A_sha256"] == seeds[b]["lora_A_sha256"],
        }
        for i, a in enumerate(seeds)
        for b in list(seeds)[i + 1 :]
    }
    result = {"model": args.model, "warm_start": args.warm_start, "seeds": seeds, "pairs": pairs}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(
        json.dumps(
            {"pairs": pairs, **{str(s): {k: v for k, v in r.items() if k != "traces"} for s, r in seeds.items()}}
        )
    )
    return result


def held_out(adapter, policy, trainer, args, temperature: float) -> list[float]:
    """Per held-out item: solved (1/0) greedily, or the mean of 4 episodes at ``temperature`` (``--eval``), as the
    benchmark's reported score counts it (``reporting_adapter``: API-Bank's official scoring)."""
    from genenv.coevolution import held_out_tasks

    split = BENCHES[args.bench]["held_out"]
    tasks = (
        adapter.load_tasks(split)
        if args.bench == "reasoning_gym"
        else held_out_tasks(adapter, split, args.held_out_limit)
    )
    k, temp = (1, 0.0) if args.eval == "greedy" else (4, temperature)
    played = sampled_episodes(adapter, policy, trainer, tasks, k, temp, seed=args.seed)
    return [statistics.fmean(solved(e) for e in episodes) for episodes in played]


def sampled_episodes(adapter, policy, trainer, tasks: list, k: int, temperature: float, *, seed: int) -> list[list]:
    """``k`` episodes of each of ``tasks`` at ``temperature`` (0: greedy) on the trainer's engine, scored as the
    benchmark's reported score counts it (``reporting_adapter``: API-Bank's official scoring); per task its episodes,
    the batches of 32 seeded ``seed``, ``seed + 32``, ..."""
    from genenv.agents.agent import Agent
    from genenv.evaluate import evaluate
    from genenv.llm.generation import SamplingConfig

    agent = Agent(
        policy,
        SamplingConfig(trainer.config.max_new_tokens, temperature),
        few_shot=trainer.config.few_shot,
        engine=trainer.engine,
    )
    repeated = [t for t in tasks for _ in range(k)]
    max_turns = trainer.config.max_turns
    _, episodes = evaluate(
        adapter.reporting_adapter(), agent, repeated, batch_size=32, max_turns=max_turns, seed=seed, progress=False
    )
    return [episodes[i * k : (i + 1) * k] for i in range(len(tasks))]


def solved(episode) -> float:
    """1.0 when an episode's score (``info["score"]``, else its reward) is full marks, else 0.0."""
    return float(episode.info.get("score", episode.reward) >= 1.0)


#: the files of a run's kept progress (``progress_folder``): the trainer as ``GRPOAgentTrainer.save`` writes it, and
#: the run's counters and records, written last (a folder without it is incomplete)
TRAINER, PROGRESS = "trainer", "progress.json"


def progress_folder(args: argparse.Namespace) -> Path:
    """Where a run keeps its progress while it trains (run state, never in git)."""
    return state_root() / "runs" / f"{args.name}-s{args.seed}"


def run_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The arguments a continued run must share with the run it continues (all but where the result goes; the
    families only when given, as runs on the default testbed were kept without them)."""
    skipped = {"runs_dir"} | ({"families"} if args.families is None else set())
    return {k: str(v) if isinstance(v, Path) else v for k, v in sorted(vars(args).items()) if k not in skipped}


def fresh_copy(folder: Path) -> Path:
    """Where ``keep_progress`` writes the next copy of a run's progress before swapping it in."""
    return folder.with_name(folder.name + ".new")


def keep_progress(folder: Path, trainer: Any, progress: dict[str, Any]) -> None:
    """Replace the kept progress by ``trainer`` and ``progress``: written beside it, then swapped in, so a kill at
    any moment leaves one complete copy (``kept_progress`` picks it)."""
    fresh = fresh_copy(folder)
    shutil.rmtree(fresh, ignore_errors=True)
    trainer.save(fresh / TRAINER)
    (fresh / PROGRESS).write_text(json.dumps(progress))
    shutil.rmtree(folder, ignore_errors=True)
    fresh.rename(folder)


def kept_progress(folder: Path, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The progress a killed run kept (``None``: none), after checking it was made with the same arguments."""
    fresh = fresh_copy(folder)
    if not (folder / PROGRESS).exists() and (fresh / PROGRESS).exists():  # killed while the old copy was removed
        shutil.rmtree(folder, ignore_errors=True)  # what is left of it
        fresh.rename(folder)
    if not (folder / PROGRESS).exists():
        return None
    progress = json.loads((folder / PROGRESS).read_text())
    if progress["arguments"] != arguments:
        raise SystemExit(
            f"{folder} holds a run begun with other arguments ({progress['arguments']}): start it with those, "
            "choose another name, or delete the folder"
        )
    return progress


def run(args: argparse.Namespace) -> Path:
    from omegaconf import OmegaConf

    from genenv.checkpoints import write_atomic
    from genenv.machine import load_average, peak_rss_mb

    overrides = OmegaConf.to_container(OmegaConf.from_dotlist(args.set or []))
    settings = settings_of(args, overrides)
    out = args.runs_dir / f"{args.name}-s{args.seed}.json"
    if out.exists():
        raise SystemExit(f"{out} exists: choose another name")
    start = time.perf_counter()
    adapter, policy, trainer, warm = build(args, settings)
    temperature = settings["temperature"] if args.eval_temperature is None else args.eval_temperature
    cache = warm / held_out_cache_name(args, settings, temperature)
    if cache.exists():
        before = json.loads(cache.read_text())
    else:
        before = held_out(adapter, policy, trainer, args, temperature)
        write_atomic(cache, json.dumps(before))
    tasks = adapter.load_tasks("train")
    random.Random(1000 + args.seed).shuffle(tasks)
    per_step = trainer.grpo_config.generation_batch_size
    folder, arguments = progress_folder(args), run_arguments(args)
    progress = kept_progress(folder, arguments)
    if progress is None:
        progress = {"arguments": arguments, "played": 0, "cursor": 0, "train_seconds": 0.0, "seconds": 0.0}
        progress |= {"blocks": [], "during": [], "resumes": 0}
    else:
        trainer.load(folder / TRAINER)
        progress["resumes"] += 1
        print(f"{folder}: continues after {progress['played']} episodes", flush=True)
    blocks, during = progress["blocks"], progress["during"]
    earlier = progress["seconds"]  # the wall time of the processes before this one, up to what they kept
    played, cursor, train_seconds = progress["played"], progress["cursor"], progress["train_seconds"]

    def take(n: int) -> list[Task]:
        """The pool's next ``n`` tasks: each step's own, and dynamic sampling's refills."""
        nonlocal cursor
        out = [tasks[(cursor + i) % len(tasks)] for i in range(n)]
        cursor += n
        return out

    def keep() -> None:
        counters = {"played": played, "cursor": cursor, "train_seconds": train_seconds}
        keep_progress(folder, trainer, progress | counters | {"seconds": earlier + time.perf_counter() - start})

    while played < args.episodes:
        if args.eval_every and played >= args.eval_every * (len(during) + 1):
            during.append({"played": played, "scores": held_out(adapter, policy, trainer, args, temperature)})
            keep()  # a kill in the next step loses no scoring
            print(json.dumps({"played": played, "held_out": statistics.fmean(during[-1]["scores"])}), flush=True)
        steps = max(1, min(args.steps_per_call, -(-(args.episodes - played) // per_step)))
        metrics = trainer.train(take(steps * trainer.tasks_per_step), steps=steps, refill=take)
        played += len(trainer.episodes)
        train_seconds += metrics["train_time"]
        blocks.append({k: v for k, v in metrics.items() if not k.startswith("trl/")} | {"played": played})
        keep()
        print(
            json.dumps({"played": played, "reward": metrics["reward"], "step_time": metrics["step_time"]}), flush=True
        )
    after = held_out(adapter, policy, trainer, args, temperature) if played else None  # no GRPO: the warm start
    result = {
        "name": args.name,
        "seed": args.seed,
        "bench": args.bench,
        "model": args.model,
        "answer_format": args.answer_format if args.bench == "reasoning_gym" else None,
        "families": (args.families or FAMILIES) if args.bench == "reasoning_gym" else None,
        "warm_start_examples": args.warm_start,
        "eval": args.eval,
        "eval_temperature": None if args.eval == "greedy" else temperature,
        "agent": {**asdict(trainer.config), "output_dir": None},
        "overrides": overrides,
        "episodes": played,
        "optimizer_steps": trainer.optimizer_steps,
        "held_out_before": before,
        "held_out_after": after,
        "held_out_during": during,
        "blocks": blocks,
        "seconds_per_step": train_seconds / max(trainer.optimizer_steps, 1),
        "train_seconds": train_seconds,
        "wall_seconds": earlier + time.perf_counter() - start,
        "resumes": progress["resumes"],
        "peak_rss_mb": peak_rss_mb(),
        "load_average": load_average(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps(result, indent=1))
    shutil.rmtree(folder, ignore_errors=True)
    if after is None:
        print(f"{out}: held-out {statistics.fmean(before):.3f} (the warm start; no GRPO played)")
    else:
        print(f"{out}: held-out {statistics.fmean(before):.3f} -> {statistics.fmean(after):.3f}")
    return out


def group_signal(args: argparse.Namespace) -> Path:
    """How much a GRPO group can learn from, for the warm-started agent at each ``--temperature``: G episodes of each
    of ``--tasks-per-level`` train tasks per family and level; the share of groups with mixed outcomes, the
    within-task correlation of success (ICC(1) over the groups) and the mean entropy (nats) of the sampled tokens,
    over all keys and per key. Played key by key, ``--chunk`` tasks at a time; each finished key is kept in
    ``<result>.partial.json``, from which an interrupted measurement continues."""
    import numpy as np
    import torch

    from genenv.checkpoints import write_atomic
    from genenv.llm.generation import SamplingConfig
    from genenv.machine import load_average

    settings = dict(AGENT)
    adapter, policy, trainer, _ = build(args, settings)
    group = settings["num_generations"]
    by_key: dict[str, list] = {}
    for task in adapter.load_tasks("train"):
        by_key.setdefault(adapter.family(task), []).append(task)
    rng = random.Random(args.seed)
    chosen = {key: rng.sample(by_key[key], args.tasks_per_level) for key in sorted(by_key)}
    suffix = f"-{args.tag}" if args.tag else ""
    out = RESULTS / "group_signal" / f"{args.model}-{args.answer_format}-s{args.seed}{suffix}.json"
    partial = out.with_suffix(".partial.json")
    measured = {"tasks_per_level": args.tasks_per_level, "families": args.families, "warm_start": args.warm_start}
    kept = resumed(partial, measured)
    done = kept["done"]
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for temperature in args.temperature:
        sampling = SamplingConfig(settings["max_new_tokens"], temperature)
        keys = done.setdefault(str(temperature), {})
        for key, tasks in chosen.items():
            if key in keys:
                continue
            start = time.perf_counter()
            solved, entropies, lengths = [], [], []
            for batch in play_groups(adapter, policy, tasks, sampling, group=group, seed=args.seed, chunk=args.chunk):
                solved.extend(float(r >= 1.0) for r in batch.rewards)
                lengths.extend(sum(m) for m in batch.env_mask)
                with torch.no_grad():
                    for prompt, completion, mask in zip(batch.prompt_ids, batch.completion_ids, batch.env_mask):
                        ids = torch.tensor([prompt + completion])
                        logits = trainer.model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float() / temperature
                        logp = torch.log_softmax(logits, dim=-1)
                        entropy = -(logp.exp() * logp).sum(-1)
                        entropies.extend(entropy[torch.tensor(mask, dtype=torch.bool)].tolist())
            keys[key] = {
                "solved": solved,
                "entropy_sum": float(np.sum(entropies)),
                "entropy_tokens": len(entropies),
                "completion_tokens": lengths,
                "seconds": time.perf_counter() - start,
                "load_average": load_average(),
            }
            write_atomic(partial, json.dumps(kept))  # a kill while writing loses no finished key
            print(
                json.dumps(
                    {"temperature": temperature, "key": key, **_group_stats(np.array(solved).reshape(-1, group))}
                ),
                flush=True,
            )
        per_key = {key: np.array(keys[key]["solved"]).reshape(-1, group) for key in chosen}
        everything = np.concatenate(list(per_key.values()))
        rows.append(
            {
                "temperature": temperature,
                "tasks": len(everything),
                "group_size": group,
                **_group_stats(everything),
                "token_entropy": sum(k["entropy_sum"] for k in keys.values())
                / max(1, sum(k["entropy_tokens"] for k in keys.values())),
                "completion_tokens": float(np.mean([n for k in keys.values() for n in k["completion_tokens"]])),
                "seconds": sum(k["seconds"] for k in keys.values()),
                "load_average": [k["load_average"] for k in keys.values()][-1],
                "per_key": {key: {"tasks": len(a), **_group_stats(a)} for key, a in per_key.items()},
            }
        )
        print(json.dumps({k: v for k, v in rows[-1].items() if k != "per_key"}), flush=True)
    out.write_text(json.dumps({"model": args.model, "answer_format": args.answer_format, "rows": rows}, indent=1))
    partial.unlink()
    return out


def reach(args: argparse.Namespace) -> Path:
    """How far GRPO could raise the warm start by sharpening what it already samples: ``--samples`` episodes of every
    held-out item at ``--temperature``, seeded apart from the held-out score's; per item the successes and the
    answers given, and over the items the mean success (the warm start's rate, measured afresh) and the share solved
    at least once (pass@k: above it, a rise needs answers the warm start does not yet sample). Played family-level
    key by key; each finished key is kept in ``<result>.partial.json``, from which an interrupted measurement
    continues."""
    from genenv.checkpoints import write_atomic
    from genenv.machine import load_average

    if args.samples < 1:
        raise SystemExit(f"--samples must be at least 1, got {args.samples}")
    adapter, policy, trainer, _ = build(args, settings_of(args, {}))
    tasks = adapter.load_tasks(BENCHES[args.bench]["held_out"])
    by_key: dict[str, list[int]] = {}
    for i, task in enumerate(tasks):
        by_key.setdefault(adapter.family(task), []).append(i)
    traces = "" if args.warm_start == WARM_START else f"-n{args.warm_start}"
    out = args.out or RESULTS / "reach" / f"{args.model}{traces}-s{args.seed}-t{args.temperature}-k{args.samples}.json"
    partial = out.with_suffix(".partial.json")
    measured = {"samples": args.samples, "temperature": args.temperature, "held_out_per_level": args.held_out_per_level}
    measured |= {"families": args.families} if args.families else {}
    kept = resumed(partial, measured | {"warm_start": args.warm_start})
    done = kept["done"]
    out.parent.mkdir(parents=True, exist_ok=True)
    for key, indices in by_key.items():
        if key in done:
            continue
        start = time.perf_counter()
        seed = REACH_SEED + args.seed * len(tasks) * args.samples + indices[0] * args.samples
        played = sampled_episodes(
            adapter, policy, trainer, [tasks[i] for i in indices], args.samples, args.temperature, seed=seed
        )
        done[key] = {
            "items": [
                {
                    "question": tasks[i].prompt,
                    "solved": int(sum(solved(e) for e in episodes)),
                    "answers": [e.info.get("score_breakdown", {}).get("answer", "") for e in episodes],
                }
                for i, episodes in zip(indices, played, strict=True)
            ],
            "seconds": time.perf_counter() - start,
            "load_average": load_average(),
        }
        write_atomic(partial, json.dumps(kept))  # a kill while writing loses no finished key
        print(json.dumps({"key": key, **reach_of([item["solved"] for item in done[key]["items"]], args.samples)}))
    counts = [item["solved"] for key in by_key for item in done[key]["items"]]
    result = {
        "model": args.model,
        "seed": args.seed,
        "warm_start_examples": args.warm_start,
        **measured,
        **reach_of(counts, args.samples),
        "per_key": {key: reach_of([item["solved"] for item in done[key]["items"]], args.samples) for key in by_key},
        "seconds": sum(done[key]["seconds"] for key in by_key),
        "load_average": done[next(reversed(by_key))]["load_average"],
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "per_item": [item for key in by_key for item in done[key]["items"]],
    }
    write_atomic(out, json.dumps(result, indent=1))
    partial.unlink()
    print(json.dumps({k: v for k, v in result.items() if k not in ("per_item", "per_key")}))
    return out


#: the first sampling seed of ``reach`` (the held-out scores are seeded from the run's seed upward in steps of 32)
REACH_SEED = 1_000_000


def reach_of(counts: list[int], samples: int) -> dict[str, Any]:
    """Items, their mean success over ``samples`` episodes each, and how many were solved by none, some or all."""
    return {
        "items": len(counts),
        "mean": sum(counts) / (len(counts) * samples),
        "pass_at_k": sum(c > 0 for c in counts) / len(counts),
        "none": sum(c == 0 for c in counts),
        "some": sum(0 < c < samples for c in counts),
        "all": sum(c == samples for c in counts),
    }


def resumed(partial: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """The keys an interrupted measurement kept in ``partial`` (``{"settings": ..., "done": ...}``), or a fresh record;
    an error when they were measured with other ``settings``."""
    if not partial.exists():
        return {"settings": settings, "done": {}}
    kept = json.loads(partial.read_text())
    if kept.get("settings") != settings:
        raise SystemExit(
            f"{partial} holds keys measured with {kept.get('settings')}, not {settings}: "
            "continue with those settings, choose another --tag, or delete the file"
        )
    return kept


def play_groups(
    adapter, policy, tasks: list, sampling, *, group: int, seed: int, chunk: int, engine: Any = None
) -> Iterator[Any]:
    """``group`` episodes of each task (``AGENT``'s turns, episode length and prompt) on ``engine`` (default: HF),
    ``chunk`` tasks a batch (a ``RolloutBatch`` each, its episodes in task order), the batch starting at task ``i``
    seeded ``seed + i`` (an engine that cannot seed its sampling, CTranslate2, ignores it)."""
    from genenv.agents.rollout import play_episodes
    from genenv.llm.engines.hf import HFEngine

    engine = engine or HFEngine(policy)
    for begin in range(0, len(tasks), chunk):
        yield play_episodes(
            adapter,
            [t for t in tasks[begin : begin + chunk] for _ in range(group)],
            policy.tokenizer,
            engine.generator(sampling, seed=seed + begin),
            eos_token_ids=[policy.tokenizer.eos_token_id],
            max_turns=AGENT["max_turns"],
            max_completion_length=AGENT["max_completion_length"],
            few_shot=AGENT["few_shot"],
        )


def _group_stats(solved) -> dict[str, float]:
    """Success, group outcomes and ICC(1), the within-task correlation of success, of a (tasks, G) array of 0/1."""
    group = solved.shape[1]
    mean_within = solved.var(axis=1, ddof=1).mean()
    between = solved.mean(axis=1).var(ddof=1) * group if len(solved) > 1 else 0.0
    icc = (between - mean_within) / (between + (group - 1) * mean_within) if between + mean_within > 0 else 1.0
    return {
        "solved": float(solved.mean()),
        "mixed_groups": float(((solved.min(1) == 0) & (solved.max(1) == 1)).mean()),
        "none_solved": float((solved.max(1) == 0).mean()),
        "all_solved": float((solved.min(1) == 1).mean()),
        "within_task_correlation": float(icc),
    }


def paired_interval(before: list[float], after: list[float], seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``after - before`` over items and its 95% bootstrap interval (``bootstrap_interval``)."""
    interval = bootstrap_interval([(before, after)], seed=seed)
    return interval["mean"], interval["low"], interval["high"]


def bootstrap_interval(runs: list[tuple[list[float], list[float]]], seed: int = 0) -> dict[str, float]:
    """The mean over ``runs`` (one a seed) of each one's mean paired rise ``after - before``, its 95% bootstrap
    interval (items resampled within each run, the trained agents fixed) and each bound's Monte Carlo error
    (``genenv.significance``): computed exactly where the scores lie on the grid of SCORE_GRID, else from DRAWS
    draws seeded ``seed``."""
    from genenv.significance import exact_interval, percentile_interval, stratified_means

    diffs = [[a - b for b, a in zip(before, after, strict=True)] for before, after in runs]
    mean = statistics.fmean(statistics.fmean(d) for d in diffs)
    exact = exact_interval(diffs, SCORE_GRID)
    return {"mean": mean, **(exact or percentile_interval(stratified_means(diffs, DRAWS, seed)))}


def scoring(run: dict[str, Any]) -> str:
    """How a run's held-out items were scored: ``greedy`` or ``mean of 4 at T <temperature>``."""
    temperature = run.get("eval_temperature", run["agent"]["temperature"])
    return "greedy" if run["eval"] == "greedy" else f"mean of 4 at T {temperature}"


#: the grid of held-out scores: an item's score is the share of 1 or 4 episodes solved, or the mean of up to 5 copies
#: of a question (``merged_copies``), so every score and rise is a whole multiple of 1/240, and the bootstrap's bounds
#: are computed exactly (``genenv.significance.exact_interval``)
SCORE_GRID = 240
#: bootstrap draws of an interval whose scores are off that grid (each bound's Monte Carlo error is reported)
DRAWS = 2_000_000


def merged_copies(scores: list[float], questions: list[str]) -> list[float]:
    """``scores`` with the items that ask the same question averaged into one (first-seen order): reasoning-gym can
    give one question at two levels of a family, and the copies are not independent items."""
    groups: dict[str, list[float]] = {}
    for question, score in zip(questions, scores, strict=True):
        groups.setdefault(question, []).append(score)
    return [statistics.fmean(g) for g in groups.values()]


def held_out_questions(run: dict[str, Any]) -> list[str]:
    """The question of each held-out item of a reasoning-gym ``run`` (its validation split, in scoring order)."""
    from genenv.benchmarks.reasoning_gym import parse_family_entry

    families = run.get("families") or FAMILIES
    keys = sum(len(parse_family_entry(entry)[1]) for entry in families)
    per_level, rest = divmod(len(run["held_out_before"]), keys)
    if rest:
        raise ValueError(f"{len(run['held_out_before'])} held-out items are not a whole number per family and level")
    adapter = reasoning_gym_adapter(run["answer_format"], per_level, families)
    return [task.prompt for task in adapter.load_tasks(BENCHES["reasoning_gym"]["held_out"])]


def verdict(rises: list[float], low: float, high: float, mean: float) -> str:
    """The confirmatory verdict, by the rules written in results/agent_learning/README.md before the runs."""
    if high < 0:
        return "harm: the interval lies below 0"
    if low <= 0:
        return "null: the interval contains 0"
    if min(rises) <= 0:
        return "null: above 0 on average, not on every seed"
    return "GRPO raises the agent above its warm start" + (
        "; the issue's goal (+0.05) is met" if mean >= 0.05 else "; short of the issue's goal (+0.05)"
    )


def stated_verdict(decided: str, low: float, high: float, seeds: dict[str, Any]) -> str:
    """``decided`` (a verdict of the written rules, on the bootstrap interval ``low``, ``high``) with the clause
    that says where the seed-level t-test (``genenv.significance.seed_level``) disagrees about 0."""
    from genenv.significance import disagreement

    return decided + disagreement(low > 0 or high < 0, seeds)


def read_runs(runs_dir: Path, name: str) -> list[dict[str, Any]]:
    """The runs ``<name>-s<SEED>.json`` of ``runs_dir`` (by file name), refused unless they are one setting on the
    same number of held-out items: the same overrides, scoring, model, benchmark and families."""
    runs = [json.loads(p.read_text()) for p in sorted(runs_dir.glob(f"{name}-s*.json"))]
    settings = {
        json.dumps(
            [
                r["overrides"],
                r["eval"],
                r.get("eval_temperature"),
                r["model"],
                r.get("bench", "reasoning_gym"),
                r.get("families") or FAMILIES,
            ],
            sort_keys=True,
        )
        for r in runs
    }
    if len(settings) > 1 or len({len(r["held_out_before"]) for r in runs}) > 1:
        raise SystemExit(f"the runs of {name!r} differ in settings or held-out items: not one setting")
    return runs


def summary(args: argparse.Namespace) -> None:
    """One setting over its seeds: the mean rise, its bootstrap interval over items within seeds with the bounds'
    Monte Carlo error, the seed-level tests, and the verdict."""
    from genenv.significance import seed_level

    runs = read_runs(args.runs_dir, args.name)
    if len(runs) < 2:
        raise SystemExit(f"summary needs at least 2 seeds of {args.name!r}, found {len(runs)}")
    per_seed = []
    for r in runs:
        own = bootstrap_interval([(r["held_out_before"], r["held_out_after"])])
        per_seed.append({
            "seed": r["seed"],
            "before": statistics.fmean(r["held_out_before"]),
            "after": statistics.fmean(r["held_out_after"]),
            "rise": own["mean"],
            "low": own["low"],
            "high": own["high"],
            "mc_error": max(own["low_mc_error"], own["high_mc_error"]),
            "episodes": r["episodes"],
            "seconds_per_step": r["seconds_per_step"],
            "wall_seconds": r["wall_seconds"],
            "peak_rss_mb": r["peak_rss_mb"],
            "load_average": r["load_average"],
        })  # fmt: skip
    rises = [s["rise"] for s in per_seed]
    interval = bootstrap_interval([(r["held_out_before"], r["held_out_after"]) for r in runs])
    seeds = seed_level(rises)
    first = runs[0]
    result = {
        "name": args.name,
        "bench": first.get("bench", "reasoning_gym"),
        "model": first["model"],
        "seeds": [r["seed"] for r in runs],
        "episodes": first["episodes"],
        "held_out_items": len(first["held_out_before"]),
        "held_out_scored": scoring(first),
        "settings": first["overrides"],
        "warm_start_to_final": {**interval, "interval": "bootstrap, items within seeds"},
        "between_seeds_t_interval": {"low": seeds["t_interval"][0], "high": seeds["t_interval"][1]},
        "seed_level": seeds,
        **distinct_questions(runs),
        "verdict": stated_verdict(
            verdict(rises, interval["low"], interval["high"], interval["mean"]),
            interval["low"],
            interval["high"],
            seeds,
        ),
        "per_seed": per_seed,
    }
    write_json(result, args.output)


def write_json(result: dict[str, Any], output: str | None) -> None:
    """Print ``result`` as JSON, and write it to ``output`` when given."""
    text = json.dumps(result, indent=1)
    if output:
        Path(output).write_text(text + "\n")
    print(text)


def distinct_questions(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Outside the verdict, for reasoning-gym runs: the rise and its bootstrap interval with the copies of a question
    averaged into one item (``merged_copies``)."""
    if runs[0].get("bench", "reasoning_gym") != "reasoning_gym":
        return {}
    questions = held_out_questions(runs[0])
    merged = [
        (merged_copies(r["held_out_before"], questions), merged_copies(r["held_out_after"], questions)) for r in runs
    ]
    return {"distinct_questions": {"items": len(merged[0][0]), **bootstrap_interval(merged)}}


#: GRPO from few traces and SFT on more end "at the same place" when the interval of their difference lies within this
#: margin either way (the size of the issue's goal)
SAME_PLACE = 0.05


def grpo_vs_sft_verdict(differences: list[float], low: float, high: float) -> str:
    """The verdict of GRPO from a 32-trace warm start against a 128-trace warm start on the same seeds and items, by
    the rules written in results/agent_learning/README.md before the 128-trace warm starts were scored."""
    if low > 0:
        if min(differences) > 0:
            return "GRPO from 32 traces ends above SFT on 128 traces"
        return "inconclusive: GRPO from 32 traces ends above SFT on 128 traces on average, not on every seed"
    if high < 0:
        if max(differences) < 0:
            return "SFT on 128 traces ends above GRPO from 32 traces"
        return "inconclusive: SFT on 128 traces ends above GRPO from 32 traces on average, not on every seed"
    if -SAME_PLACE <= low and high <= SAME_PLACE:
        return (
            "GRPO from 32 traces ends where SFT on 128 traces ends (the interval lies within 0.05 either way); "
            "not shown to beat more SFT"
        )
    return "inconclusive: the interval contains 0 and reaches beyond 0.05 either way"


def grpo_vs_sft(args: argparse.Namespace) -> None:
    """GRPO's agents after training (``--grpo``'s runs) against the warm starts of ``--sft``'s runs (more expert
    traces, before their GRPO), seed by seed on the same held-out items scored the same way: each seed's mean of
    ``grpo_after - sft_more`` over items, their mean, its bootstrap interval (items resampled within seeds), the
    seed-level tests and the verdict; outside it, the 2x2's fourth cell (GRPO from the larger warm start)."""
    from genenv.significance import seed_level

    grpo, sft = read_runs(args.runs_dir, args.grpo), read_runs(args.runs_dir, args.sft)
    by_seed = {r["seed"]: r for r in sft}
    seeds = [r["seed"] for r in grpo]
    if not grpo or sorted(seeds) != sorted(by_seed):
        raise SystemExit(
            f"{args.grpo!r} has seeds {sorted(seeds)} and {args.sft!r} seeds {sorted(by_seed)}: the comparison needs "
            "the same seeds, at least one"
        )
    for r in grpo:
        other = by_seed[r["seed"]]
        same = [len(r["held_out_before"]) == len(other["held_out_before"]), scoring(r) == scoring(other)]
        same += [r[k] == other[k] for k in ("model", "answer_format")] + [
            (r.get("families") or FAMILIES) == (other.get("families") or FAMILIES)
        ]
        if not all(same):
            raise SystemExit(
                f"{args.grpo}-s{r['seed']} and {args.sft}-s{r['seed']} are not scored on the same held-out items the "
                "same way"
            )
    pairs = [(by_seed[r["seed"]]["held_out_before"], r["held_out_after"]) for r in grpo]
    interval = bootstrap_interval(pairs)
    differences = [statistics.fmean(a) - statistics.fmean(b) for b, a in pairs]
    tests = seed_level(differences)
    decided = grpo_vs_sft_verdict(differences, interval["low"], interval["high"])
    result = {
        "grpo": args.grpo,
        "sft": args.sft,
        "warm_start_examples": {"grpo": grpo[0]["warm_start_examples"], "sft": sft[0]["warm_start_examples"]},
        "held_out_items": len(pairs[0][0]),
        "held_out_scored": scoring(grpo[0]),
        "grpo_after": statistics.fmean(statistics.fmean(a) for _, a in pairs),
        "sft_more": statistics.fmean(statistics.fmean(b) for b, _ in pairs),
        "difference": interval["mean"],
        "low": interval["low"],
        "high": interval["high"],
        "low_mc_error": interval["low_mc_error"],
        "high_mc_error": interval["high_mc_error"],
        "draws": interval["draws"],
        "seeds": seeds,
        "seed_level": tests,
        "verdict": stated_verdict(decided, interval["low"], interval["high"], tests),
        "per_seed": [
            {"seed": s, "grpo_after": statistics.fmean(a), "sft_more": statistics.fmean(b), "difference": d}
            for s, (b, a), d in zip(seeds, pairs, differences, strict=True)
        ],
    }
    if all(by_seed[s]["held_out_after"] is not None for s in seeds):  # the 2x2's fourth cell, where it was played
        fourth = bootstrap_interval([(r["held_out_after"], by_seed[r["seed"]]["held_out_after"]) for r in grpo])
        result["outside_the_verdict"] = {
            "grpo_from_more_sft": statistics.fmean(statistics.fmean(by_seed[s]["held_out_after"]) for s in seeds),
            "grpo_from_more_sft_minus_grpo_after": {k: fourth[k] for k in ("mean", "low", "high")},
        }
    write_json(result, args.output)


def by_warm_start_score(before: list[float], after: list[float]) -> dict[str, dict[str, float]]:
    """Where a run's items moved, grouped by their warm-start score (``none``: 0, ``some``, ``all``: 1): the items in
    each group, their mean change and its share of the run's mean rise."""
    groups: dict[str, list[float]] = {"none": [], "some": [], "all": []}
    for b, a in zip(before, after, strict=True):
        groups["none" if b == 0 else "all" if b == 1 else "some"].append(a - b)
    return {
        name: {"items": len(d), "mean": statistics.fmean(d) if d else 0.0, "of_rise": sum(d) / len(before)}
        for name, d in groups.items()
    }


def moved(before: list[float], after: list[float]) -> dict[str, Any]:
    """A run's paired rise, its interval, how many items went up and down, and where they moved."""
    rise, low, high = paired_interval(before, after)
    return {
        "rise": rise,
        "low": low,
        "high": high,
        "up": sum(a > b for b, a in zip(before, after)),
        "down": sum(a < b for b, a in zip(before, after)),
        "by_warm_start_score": by_warm_start_score(before, after),
    }


def compare(args: argparse.Namespace) -> None:
    """Two runs on the same held-out items, item by item: each run's movement and the difference of their rises."""
    paths = [args.runs_dir / f"{stem}.json" for stem in (args.run, args.reference)]
    if missing := [str(p) for p in paths if not p.exists()]:
        raise SystemExit(f"no such run: {', '.join(missing)}")
    first, second = (json.loads(p.read_text()) for p in paths)
    if len(first["held_out_before"]) != len(second["held_out_before"]) or scoring(first) != scoring(second):
        raise SystemExit(f"{args.run} and {args.reference} are not scored on the same held-out items the same way")
    rise = [a - b for b, a in zip(first["held_out_before"], first["held_out_after"])]
    reference = [a - b for b, a in zip(second["held_out_before"], second["held_out_after"])]
    difference, low, high = paired_interval(reference, rise)
    result = {
        args.run: moved(first["held_out_before"], first["held_out_after"]),
        args.reference: moved(second["held_out_before"], second["held_out_after"]),
        "rise_minus_reference": {"mean": difference, "low": low, "high": high},
        "same_warm_start_scores": first["held_out_before"] == second["held_out_before"],
    }
    print(json.dumps(result, indent=1))


def warm_scores(args: argparse.Namespace) -> dict[str, Any]:
    """The warm starts of ``args.runs`` (run file stems) as their held-out scores before GRPO show them: each one's
    solved samples in all and per family-level, the items on which two differ, and a test of whether they could be
    one agent scored with different sampling seeds: Pearson's statistic of the items' solved samples across the warm
    starts (each item's rate pooled), with its p by a parametric bootstrap (each item's samples redrawn at its pooled
    rate, ``--draws`` times)."""
    import numpy as np

    runs = {stem: json.loads((args.runs_dir / f"{stem}.json").read_text()) for stem in args.runs}
    if len(runs) < 2 or len({len(r["held_out_before"]) for r in runs.values()}) > 1:
        raise SystemExit("warm-scores needs at least 2 runs scored on the same number of held-out items")
    if {r["eval"] for r in runs.values()} != {"mean4"}:
        raise SystemExit("warm-scores reads solved samples: the runs must be scored as the mean of 4 (--eval mean4)")
    solved = np.array([[round(4 * x) for x in r["held_out_before"]] for r in runs.values()])  # (runs, items)
    keys = held_out_keys(next(iter(runs.values())))

    def pearson(counts: np.ndarray) -> np.ndarray:
        """Per draw (leading axes), the sum over items of each item's Pearson statistic across the runs."""
        rate = counts.mean(axis=-2, keepdims=True) / 4
        spread = 4 * rate * (1 - rate)
        terms = np.divide((counts - 4 * rate) ** 2, spread, out=np.zeros(counts.shape), where=spread > 0)
        return terms.sum(axis=(-2, -1))

    observed = float(pearson(solved))
    rate = solved.mean(axis=0) / 4
    rng = np.random.default_rng(0)
    null = pearson(rng.binomial(4, rate, size=(args.draws, *solved.shape)))
    names = list(runs)
    result = {
        "solved": {name: int(row.sum()) for name, row in zip(names, solved, strict=True)},
        "per_family_level": {
            key: {name: int(row[[i for i, k in enumerate(keys) if k == key]].sum()) for name, row in zip(names, solved)}
            for key in dict.fromkeys(keys)
        },
        "items_that_differ": {
            f"{a} {b}": int((solved[i] != solved[j]).sum())
            for i, a in enumerate(names)
            for j, b in enumerate(names)
            if i < j
        },
        "one_agent_test": {
            "pearson": observed,
            "items_with_spread": int(((rate > 0) & (rate < 1)).sum()),
            "p": float((null >= observed).mean()),
            "draws": args.draws,
        },
    }
    print(json.dumps(result, indent=1))
    return result


def held_out_keys(run: dict[str, Any]) -> list[str]:
    """The family-level (``family@level``) of each held-out item of a reasoning-gym ``run``, in scoring order."""
    from genenv.benchmarks.reasoning_gym import parse_family_entry

    families = run.get("families") or FAMILIES
    keys = [f"{name}@{level}" for name, levels in map(parse_family_entry, families) for level in levels]
    per_level, rest = divmod(len(run["held_out_before"]), len(keys))
    if rest:
        raise ValueError(f"{len(run['held_out_before'])} held-out items are not a whole number per family and level")
    return [key for key in keys for _ in range(per_level)]


def report(args: argparse.Namespace) -> None:
    rows = [
        "| run | seed | settings | held-out scored | episodes | steps | before | after | rise [95% CI] | s/step "
        "| peak RSS MB | load (1, 5, 15 min) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in args.names:
        for path in sorted(args.runs_dir.glob(f"{name}-s*.json")):
            r = json.loads(path.read_text())
            rise, low, high = paired_interval(r["held_out_before"], r["held_out_after"])
            settings = ", ".join(f"{k}={v}" for k, v in (r["overrides"].get("agent") or {}).items()) or "defaults"
            load = ", ".join(f"{x:.2f}" for x in r["load_average"])
            scored = f"{scoring(r)}, {len(r['held_out_before'])} items"
            rows.append(
                f"| {r['name']} | {r['seed']} | {settings} | {scored} | {r['episodes']} | {r['optimizer_steps']} | "
                f"{statistics.fmean(r['held_out_before']):.3f} | {statistics.fmean(r['held_out_after']):.3f} | "
                f"{rise:+.3f} [{low:+.3f}, {high:+.3f}] | {r['seconds_per_step']:.1f} | {r['peak_rss_mb']:.0f} "
                f"| {load} |"
            )
    text = "\n".join(rows) + "\n"
    if args.output:
        Path(args.output).write_text(text)
    print(text)


def warm_start_measurement(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` with the arguments that pick a reasoning-gym warm start (for ``signal`` and ``reach``)."""
    parser.set_defaults(bench="reasoning_gym")  # the measurements read reasoning-gym's families and levels
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--answer-format", default="worked", choices=("answer", "worked"))
    parser.add_argument("--warm-start", type=int, default=WARM_START, help="expert traces of the warm start")
    parser.add_argument("--held-out-per-level", type=int, default=16)
    parser.add_argument("--families", nargs="+", help="measure on these family@levels (the warm start stays FAMILIES')")
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("run", help="warm start (shared), GRPO, held-out before and after")
    one.add_argument("name")
    one.add_argument("--seed", type=int, default=0)
    one.add_argument("--bench", default="reasoning_gym", choices=sorted(b for b, v in BENCHES.items() if v["held_out"]))
    one.add_argument("--model", default="smollm2")
    one.add_argument("--answer-format", default="worked", choices=("answer", "worked"))
    one.add_argument("--warm-start", type=int, default=WARM_START, help="expert traces of the warm start")
    one.add_argument(
        "--episodes", type=int, default=512, help="GRPO episodes to play (refills included; 0: the warm start alone)"
    )
    one.add_argument("--steps-per-call", type=int, default=4, help="optimizer steps per train() call (a log block)")
    one.add_argument("--held-out-per-level", type=int, default=16, help="reasoning_gym: held-out items per key")
    one.add_argument("--held-out-limit", type=int, default=100, help="apibank: held-out level-1 API samples")
    one.add_argument("--families", nargs="+", help="reasoning_gym: held-out, train family@levels")
    one.add_argument("--eval", default="greedy", choices=("greedy", "mean4"))
    one.add_argument("--eval-temperature", type=float, help="mean4's sampling temperature (default: the rollouts')")
    one.add_argument("--eval-every", type=int, help="also score the held-out items after every this many episodes")
    one.add_argument("--set", nargs="*", help="overrides, e.g. agent.learning_rate=1e-4")
    one.add_argument("--runs-dir", type=Path, default=RESULTS / "runs", help="where the run's result is written")
    signal = warm_start_measurement(
        sub.add_parser("signal", help="mixed groups, within-task correlation and token entropy of the warm start")
    )
    signal.add_argument("--tasks-per-level", type=int, default=4, help="train tasks per family and level")
    signal.add_argument("--temperature", type=float, nargs="+", default=[1.0])
    signal.add_argument("--tag", help="suffix of the result file's name")
    signal.add_argument("--chunk", type=int, default=10, help="tasks played in one batch (x G episodes)")
    ceiling = warm_start_measurement(
        sub.add_parser("reach", help="pass@k of the warm start on the held-out items: what sharpening can reach")
    )
    ceiling.add_argument("--samples", type=int, default=16, help="episodes of each held-out item")
    ceiling.add_argument("--temperature", type=float, default=0.7, help="their sampling temperature")
    ceiling.add_argument("--out", type=Path, help="the result file (default: results/agent_learning/reach/...)")
    table = sub.add_parser("report", help="a markdown table of runs")
    table.add_argument("names", nargs="+")
    table.add_argument("--runs-dir", type=Path, default=RESULTS / "runs")
    table.add_argument("--output")
    pooled = sub.add_parser("summary", help="one setting over its seeds: mean rise, intervals, verdict (JSON)")
    pooled.add_argument("name")
    pooled.add_argument("--runs-dir", type=Path, default=RESULTS / "runs")
    pooled.add_argument("--output")
    pair = sub.add_parser("compare", help="two runs item by item: their movement and the difference of their rises")
    pair.add_argument("run", help="a run file's stem, e.g. qwen-kl-lr1e-4-s0")
    pair.add_argument("reference", help="the run it is read against, e.g. qwen-t07-s0")
    pair.add_argument("--runs-dir", type=Path, default=RESULTS / "runs")
    inputs = warm_start_measurement(
        sub.add_parser("warm-inputs", help="each seed's warm-start traces and initial adapter, without training")
    )
    inputs.add_argument("--seeds", type=int, nargs="+", required=True)
    inputs.add_argument("--out", type=Path, help="the result file (JSON)")
    alike = sub.add_parser("warm-scores", help="warm starts by their held-out scores: could they be one agent?")
    alike.add_argument("runs", nargs="+", help="run file stems, e.g. qwen-confirm-s11")
    alike.add_argument("--draws", type=int, default=10_000, help="parametric bootstrap draws of the test")
    alike.add_argument("--runs-dir", type=Path, default=RESULTS / "runs")
    versus = sub.add_parser("grpo-vs-sft", help="GRPO's agents against warm starts on more traces, item by item")
    versus.add_argument("--grpo", default="qwen-n32", help="the runs whose agents after GRPO are compared")
    versus.add_argument("--sft", default="qwen-n128", help="the runs whose warm starts (more traces) they meet")
    versus.add_argument("--runs-dir", type=Path, default=RESULTS / "runs")
    versus.add_argument("--output")
    args = parser.parse_args(argv)
    commands = {
        "run": run,
        "signal": group_signal,
        "reach": reach,
        "report": report,
        "summary": summary,
        "compare": compare,
        "grpo-vs-sft": grpo_vs_sft,
        "warm-inputs": warm_inputs,
        "warm-scores": warm_scores,
    }
    commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
