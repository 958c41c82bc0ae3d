"""Peak memory of a CTranslate2 weight sync: SmolLM2-135M with LoRA adapters on every projection, float32.

    OMP_NUM_THREADS=1 python performance/conversion_memory.py [--label TEXT] [--out FILE]

A LoRA-wrapped SmolLM2 takes two training steps (its adapters then differ from zero), and the engine re-converts and
loads its weights twice, as validation does after training. Per sync, from ``/proc/self/status`` with the peak reset
(``/proc/self/clear_refs``) before each part: the process's RSS before the sync, its peak during the conversion
(LoRA merge and ``TransformersConverter``) and during the load, and its RSS after. Run it from another checkout
(``PYTHONPATH=CHECKOUT``) to measure that commit's engine. Appends one record to
``results/performance/conversion_memory.json`` (or ``--out``) under ``--label``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

OUT = Path(__file__).resolve().parents[1] / "results" / "performance" / "conversion_memory.json"


def status_mb(key: str) -> int:
    text = Path("/proc/self/status").read_text()
    return int(text.split(key + ":")[1].split()[0]) // 1024


def reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    from peft import LoraConfig, get_peft_model

    import genenv
    from genenv.agents.grpo import GRPOAgentConfig
    from genenv.llm.engines import build_engine
    from genenv.llm.engines import ctranslate2 as engine_module
    from genenv.llm.models import load_policy
    from genenv.machine import release_freed_memory, uptime

    torch.manual_seed(0)
    policy = load_policy("smollm2")
    agent = GRPOAgentConfig()  # the main job's LoRA: rank, alpha and target projections
    lora = LoraConfig(r=agent.lora_r, lora_alpha=agent.lora_alpha, target_modules=agent.lora_target_modules)
    model = get_peft_model(policy.model, lora)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    engine = build_engine("ctranslate2", replace(policy, model=model), compute_type="float32")
    engine.unload()
    parts: dict[str, tuple[int, int]] = {}
    convert, load = engine_module.convert_policy, engine_module.CTranslate2Engine._load

    def measured(name: str, function: Any) -> Any:
        def wrapper(*call_args: Any, **kwargs: Any) -> Any:
            release_freed_memory()
            reset_peak()
            before = status_mb("VmRSS")
            out = function(*call_args, **kwargs)
            parts[name] = (before, status_mb("VmHWM"))
            return out

        return wrapper

    engine_module.convert_policy = measured("conversion", convert)
    engine_module.CTranslate2Engine._load = measured("load", load)
    syncs = []
    for _ in range(2):
        model.train()
        for length in (120, 160):
            tokens = torch.randint(0, 40000, (1, length))
            model(input_ids=tokens, labels=tokens).loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        model.eval()
        release_freed_memory()
        base = status_mb("VmRSS")
        engine.sync(model)
        syncs.append({
            "rss_before_mb": base,
            "conversion_peak_mb": parts["conversion"][1],
            "load_peak_mb": parts["load"][1],
            "rss_after_mb": status_mb("VmRSS"),
            "conversion_peak_above_before_mb": parts["conversion"][1] - base,
        })  # fmt: skip
        engine.unload()
        release_freed_memory()
    source = Path(genenv.__file__).resolve().parents[1]
    commit = subprocess.run(["git", "-C", str(source), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    record = {
        "label": args.label,
        "commit": commit.stdout.strip(),
        "date": datetime.date.today().isoformat(),
        "command": "OMP_NUM_THREADS=1 python performance/conversion_memory.py",
        "uptime": uptime(),
        "syncs": syncs,
    }
    records = json.loads(args.out.read_text()) if args.out.is_file() else []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps([*records, record], indent=1) + "\n")
    print(json.dumps(record))


if __name__ == "__main__":
    main()
