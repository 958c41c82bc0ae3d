"""scripts/setup.sh and its last line, scripts/ready.py: the opt-in extras it accepts, and what it reports ready."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

from conftest import REPO

SETUP = REPO / "scripts" / "setup.sh"


def ready_module():
    spec = importlib.util.spec_from_file_location("ready", REPO / "scripts" / "ready.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def test_setup_script_parses():
    assert subprocess.run(["bash", "-n", str(SETUP)], capture_output=True).returncode == 0


def test_setup_refuses_an_unknown_extra_before_installing_anything():
    result = subprocess.run(
        ["bash", str(SETUP)], capture_output=True, text=True, env={**os.environ, "GENENV_EXTRAS": "alfworld,gpu"}
    )
    assert result.returncode == 2
    assert "GENENV_EXTRAS: unknown extra 'gpu' (known: alfworld, llamacpp)" in result.stderr
    assert result.stdout == ""  # not even the first line: nothing was started


def test_ready_line_lists_what_is_ready_and_how_to_install_the_opt_in_rest():
    ready = ready_module()
    items = {item.name: item for item in ready.ITEMS}
    line = ready.ready_line(
        {items["reasoning-gym"]: True, items["ALFWorld"]: False, items["hf"]: True, items["llamacpp"]: False}
    )
    assert line.startswith("ready: benchmarks reasoning-gym; engines hf; models (none); integrations (none).")
    assert "Opt-in, not installed: ALFWorld, llamacpp (GENENV_EXTRAS=alfworld,llamacpp bash scripts/setup.sh)" in line
    assert "MISSING" not in line
    assert "MISSING: BFCL" in ready.ready_line({items["BFCL"]: False})


def test_ready_reports_this_environment_with_every_default_item():
    """The set-up installed every default item here (CI runs it first); the opt-in ones may be absent."""
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "ready.py")], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    line = result.stdout.strip()
    assert line.count("\n") == 0 and line.startswith("ready: benchmarks API-Bank, Bamboogle, TravelPlanner")
    for name in ("reasoning-gym", "BFCL", "engines hf, ctranslate2, openai", "SmolLM2-135M", "TRL", "OpenEnv"):
        assert name in line, line
