"""Where the main job's CPU time goes: a py-spy profile of README command 1's job, by stage and within GRPO.

    python -m pip install --target /tmp/py-spy py-spy
    GENENV_DATA_DIR=../shared/data /tmp/py-spy/bin/py-spy record -r 20 -f raw -o /tmp/job.prof -- \\
        .venv/bin/python -m genenv.train +bench=reasoning_gym
    python performance/job_profile.py /tmp/job.prof [--out FILE]

py-spy samples the Python threads that are running, not those waiting: CTranslate2 scores the held-out tasks in its
own native threads while the calling thread waits, so the held-out scoring is under-counted here (the run's
``metrics.jsonl`` has every stage's seconds). The stages are told apart by the genenv module on the stack; GRPO's
samples are split into its rollouts (HF ``generate``: the prompt's prefill, the decoding steps' linear layers,
attention and KV-cache updates, the sampling loop itself) and its loss's forward and backward passes.

Writes ``results/performance/main_job_profile.json`` (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "results" / "performance" / "main_job_profile.json"
#: a stage, by the genenv module on the stack (the first match counts)
STAGES = (
    ("GRPO", "genenv/agents/grpo.py"),
    ("warm start", "genenv/agents/warm_start.py"),
    ("simulator RWR", "genenv/curriculum/rwr.py"),
    ("simulator writing", "genenv/envs/simulator.py"),
    ("held-out scoring", "genenv/evaluate.py"),
)


def read_raw(path: Path) -> list[tuple[list[str], int]]:
    """py-spy's raw output: each line a stack (frames ``function (file:line)`` joined by ``;``) and its samples."""
    stacks = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack:
            stacks.append((stack.split(";"), int(count)))
    return stacks


def stage(frames: list[str]) -> str:
    text = ";".join(frames)
    return next((name for name, module in STAGES if module in text), "other (start-up, checkpoints, reporting)")


def grpo_part(frames: list[str]) -> str:
    """What a GRPO sample was doing."""
    names = [frame.split(" (")[0] for frame in frames]
    if "GenerationMixin.generate" in names:
        if "GenerationMixin._prefill" in names:
            return "rollouts: prefill"
        leaf = names[-1]
        if leaf == "Linear.forward":
            return "rollouts: decoding, linear layers"
        if "Cache.update" in names or "DynamicLayer.update" in names:
            return "rollouts: decoding, KV cache update"
        if "sdpa_attention_forward" in names:
            return "rollouts: decoding, attention"
        if leaf == "GenerationMixin._sample" or names[-2:-1] == ["GenerationMixin._sample"]:
            return "rollouts: sampling loop"
        return "rollouts: other"
    text = ";".join(names)
    if "backward" in text:
        return "loss: backward"
    if "compute_loss" in text or "_get_per_token_logps" in text:
        return "loss: forward"
    return "other"


def shares(counter: Counter[str]) -> dict[str, dict[str, float]]:
    total = sum(counter.values())
    return {key: {"samples": n, "share": round(n / total, 3)} for key, n in counter.most_common()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path, help="py-spy record -f raw output of the main job")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    stacks = read_raw(args.profile)
    stages: Counter[str] = Counter()
    grpo: Counter[str] = Counter()
    for frames, count in stacks:
        name = stage(frames)
        stages[name] += count
        if name == "GRPO":
            grpo[grpo_part(frames)] += count
    result = {
        "profile": str(args.profile),
        "samples": sum(stages.values()),
        "stages": shares(stages),
        "within_grpo": shares(grpo),
        "note": "py-spy counts running Python threads only: held-out scoring on CTranslate2 is under-counted",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for section in ("stages", "within_grpo"):
        for key, row in result[section].items():
            print(f"{section:12s} {key:42s} {row['share']:6.1%}")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
