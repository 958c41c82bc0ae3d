"""genenv's import graph: no circles, and every import points down the layers (module and function level, type-only
imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "genenv"

#: genenv's parts from the bottom up: a subpackage or a top-level module (``genenv`` is the package's public names,
#: ``genenv/__init__.py``). A part imports only parts of its own layer or below.
LAYERS: list[set[str]] = [
    {"toolcalls", "machine", "run_lock", "reporting", "learning_curve", "checkpoints", "console", "significance"},
    {"llm"},
    {"benchmarks"},
    {"config", "envs"},
    {"agents"},
    {"pools"},
    {"curriculum"},
    {"evaluate"},
    {"coevolution"},
    {"run_archive", "plot", "integrations"},
    {"train", "serve"},
    {"genenv"},
]

#: (importing part, imported part) pairs allowed to point up, each with its reason: none.
UPWARD: dict[tuple[str, str], str] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The genenv modules ``path`` imports anywhere in its code (a name imported from a package counts as its
    submodule when it is one)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found |= {f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names}
    return {module for module in found if module in modules and module != name}


def graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(path) for path in paths}
    return {module_name(path): imports(path, modules) for path in paths}


def part(module: str) -> str:
    names = module.split(".")
    return names[1] if len(names) > 1 else names[0]


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            if component:
                found.append(sorted([node, *component]))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_every_part_has_a_layer():
    layered = set().union(*LAYERS)
    assert {part(module) for module in graph()} == layered
    assert sum(len(layer) for layer in LAYERS) == len(layered)


def test_no_module_imports_itself_back():
    assert circles(graph()) == []


def test_no_circles_between_parts():
    parts: dict[str, set[str]] = {}
    for module, imported in graph().items():
        parts.setdefault(part(module), set()).update(part(other) for other in imported if part(other) != part(module))
    assert circles(parts) == []


def test_imports_point_down_the_layers():
    layer = {name: rank for rank, names in enumerate(LAYERS) for name in names}
    upward = {
        (module, other)
        for module, imported in graph().items()
        for other in imported
        if layer[part(other)] > layer[part(module)] and (part(module), part(other)) not in UPWARD
    }
    assert upward == set()
    assert len(UPWARD) <= 1
