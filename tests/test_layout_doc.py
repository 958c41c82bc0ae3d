"""docs/layout.md names every module of genenv/ by its repository path, in its own layer's table, and names no path
that does not exist."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from test_layers import LAYERS, part

REPO = Path(__file__).resolve().parents[1]
LAYOUT = REPO / "docs" / "layout.md"
#: ``## Layer 3: `benchmarks``` opens layer 3's table; any other ``## `` heading ends the layers
LAYER_HEADING = re.compile(r"^## Layer (\d+): (.+)$")
#: a table row's first cell: one path in backticks
ROW = re.compile(r"^\| `([^`]+)` \|")
#: a path in backticks anywhere in the text
TICKED_PATH = re.compile(r"`([\w.-]+/[\w./-]*)`")


def module_paths() -> set[str]:
    """Every module of genenv/ by repository path; a package's ``__init__.py`` is its folder (``genenv/llm/``)."""
    paths = set()
    for path in (REPO / "genenv").rglob("*.py"):
        relative = path.relative_to(REPO)
        paths.add(f"{relative.parent.as_posix()}/" if path.name == "__init__.py" else relative.as_posix())
    return paths


def module_name(path: str) -> str:
    """``genenv/llm/engines/hf.py`` -> ``genenv.llm.engines.hf``; ``genenv/agents/`` -> ``genenv.agents``."""
    return path.removesuffix("/").removesuffix(".py").replace("/", ".")


def layout() -> tuple[list[tuple[int | None, str]], list[tuple[int, str]]]:
    """The rows of docs/layout.md as (layer number or None outside the layers, path), and its layer headings as
    (number, the parts they name)."""
    rows: list[tuple[int | None, str]] = []
    headings: list[tuple[int, str]] = []
    layer: int | None = None
    for line in LAYOUT.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            heading = LAYER_HEADING.match(line)
            layer = int(heading.group(1)) if heading else None
            if heading:
                headings.append((layer, heading.group(2)))
        elif row := ROW.match(line):
            rows.append((layer, row.group(1)))
    return rows, headings


def test_every_module_has_a_row():
    rows, _ = layout()
    missing = sorted(module_paths() - {path for _, path in rows})
    assert missing == [], f"modules with no row in docs/layout.md: {missing}"


def test_each_path_has_one_row():
    rows, _ = layout()
    repeated = sorted(path for path, count in Counter(path for _, path in rows).items() if count > 1)
    assert repeated == []


def test_layers_follow_test_layers():
    _, headings = layout()
    assert [number for number, _ in headings] == list(range(1, len(LAYERS) + 1))
    for number, names in headings:
        assert set(re.findall(r"`(\w+)`", names)) == LAYERS[number - 1], f"layer {number}'s heading"


def test_each_module_sits_in_its_layer():
    rows, _ = layout()
    modules = module_paths()
    misplaced = [
        (path, layer)
        for layer, path in rows
        if path in modules and (layer is None or part(module_name(path)) not in LAYERS[layer - 1])
    ]
    assert misplaced == []


def test_every_path_named_exists():
    rows, _ = layout()
    text = LAYOUT.read_text(encoding="utf-8")
    top_level = {entry.name for entry in REPO.iterdir()}
    named = {path for _, path in rows} | {path for path in TICKED_PATH.findall(text) if path.split("/")[0] in top_level}
    assert sorted(path for path in named if not (REPO / path).exists()) == []
