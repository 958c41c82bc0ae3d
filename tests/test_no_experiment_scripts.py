"""The library's tests (tests/ and the root conftest.py) neither import nor read a script of experiments/ or
performance/: an experiment's tests live beside it (experiments/<name>/tests/), and what the library's tests need
lives in genenv."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: the folders of scripts that are not the library. This file names them to look for them, so it is not checked.
SCRIPT_FOLDERS = ("experiments", "performance")


def script_modules() -> set[str]:
    """The names the scripts of SCRIPT_FOLDERS are imported by: each script's stem (its folder goes on sys.path)."""
    return {path.stem for folder in SCRIPT_FOLDERS for path in (REPO / folder).rglob("*.py")}


def names_a_script_folder(text: str) -> bool:
    """Whether ``text`` is one of SCRIPT_FOLDERS or a path into one."""
    return any(text == folder or text.startswith(f"{folder}/") or f"/{folder}/" in text for folder in SCRIPT_FOLDERS)


def docstrings(tree: ast.Module) -> set[int]:
    """The ids of the docstring nodes of ``tree``'s module, classes and functions."""
    owners = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, owners)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
        and isinstance(node.body[0].value.value, str)
    }


def script_uses(source: str) -> list[str]:
    """Where ``source`` uses a script: each import of a script's module, and each string of its code (docstrings and
    comments aside) that names a script folder or a path into one."""
    tree = ast.parse(source)
    modules, skipped = script_modules(), docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"import {alias.name}" for alias in node.names if alias.name.split(".")[0] in modules]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in modules:
            found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            if names_a_script_folder(node.value):
                found.append(repr(node.value))
    return found


def test_no_library_test_imports_or_reads_a_script():
    checked = [*sorted((REPO / "tests").rglob("*.py")), REPO / "conftest.py"]
    uses = {
        str(path.relative_to(REPO)): found
        for path in checked
        if path != Path(__file__).resolve() and (found := script_uses(path.read_text(encoding="utf-8")))
    }
    assert uses == {}, "move these tests beside their experiment (experiments/<name>/tests/) or the logic into genenv"


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('driver = load_script("experiments/curriculum/driver.py")', ["'experiments/curriculum/driver.py'"]),
        ("import driver", ["import driver"]),
        ("from agent_learning import AGENT", ["from agent_learning import ..."]),
        ('script = REPO / "performance" / "step_fuzz.py"', ["'performance'"]),
        ('run([sys.executable, f"{REPO}/experiments/curriculum/driver.py"])', ["'/experiments/curriculum/driver.py'"]),
        ('"""Beside experiments/curriculum/driver.py."""\n# performance/step_fuzz.py measures it', []),
        ("from genenv.llm import turn_cache", []),
    ],
)
def test_each_way_of_using_a_script_is_found(source, found):
    assert script_uses(source) == found


def test_the_root_conftest_is_the_only_one():
    """Test modules import the shared helpers as ``conftest``: a second conftest.py would be a second module of that
    name, and which one an import got would depend on the order pytest collected them in."""
    folders = ("tests", "genenv", "examples", *SCRIPT_FOLDERS)
    others = [path.relative_to(REPO) for folder in folders for path in (REPO / folder).rglob("conftest.py")]
    assert others == []
    assert (REPO / "conftest.py").is_file()
