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


def uv_install_module():
    spec = importlib.util.spec_from_file_location("uv_install", REPO / "scripts" / "uv_install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_uv_install_takes_pip_settings_from_its_files_and_variables_the_variables_winning(tmp_path):
    uv_install = uv_install_module()
    config = tmp_path / "pip.conf"
    config.write_text(
        "[global]\nfind-links = /from/file\ncert = /certs/bundle.pem\n"
        "[install]\nextra-index-url =\n    file:///one/simple\n    file:///two/simple\n"
    )
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=str(config), PIP_FIND_LINKS="/from/variable")
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, env=env, check=True
    ).stdout
    settings = uv_install.pip_settings(listing)
    assert settings["find-links"] == "/from/variable"
    assert settings["extra-index-url"].split() == ["file:///one/simple", "file:///two/simple"]
    command, variables = uv_install.uv_command(settings, ["-q", "torch==2.13.0"])
    assert command[:6] == ["uv", "pip", "install", "--index-strategy", "unsafe-best-match", "--compile-bytecode"]
    assert command[-2:] == ["-q", "torch==2.13.0"]
    pairs = list(zip(command[6:-2:2], command[7:-2:2]))
    assert ("--index", "file:///one/simple") in pairs and ("--index", "file:///two/simple") in pairs
    assert ("--find-links", "/from/variable") in pairs and ("--find-links", "/from/file") not in pairs
    assert variables["SSL_CERT_FILE"] == "/certs/bundle.pem"


def test_uv_install_passes_nothing_where_pip_has_no_settings():
    command, variables = uv_install_module().uv_command({}, ["-e", "."])
    assert command == ["uv", "pip", "install", "--index-strategy", "unsafe-best-match", "--compile-bytecode", "-e", "."]
    assert variables == {}
