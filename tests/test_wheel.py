"""The package carries its configs: a wheel built from the repository, installed without ``-e``, runs the entry
points from a directory outside the checkout."""

import subprocess
import sys
import zipfile

import pytest
from conftest import REPO


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel built from this checkout, installed (without its dependencies, which this environment has) into a
    folder of its own; yields (wheel, that folder)."""
    root = tmp_path_factory.mktemp("wheel")
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(root)]
    subprocess.run([*build, str(REPO)], check=True, capture_output=True, timeout=600)
    (wheel,) = root.glob("genenv-*.whl")
    target = root / "site"
    install = [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)]
    subprocess.run(install, check=True, capture_output=True, timeout=600)
    return wheel, target


def test_the_wheel_holds_every_hydra_config(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"genenv/{p.relative_to(REPO / 'genenv').as_posix()}" for p in (REPO / "genenv/configs").rglob("*.yaml")}
    assert shipped and shipped <= names, sorted(shipped - names)


@pytest.mark.parametrize(
    "entry,args",
    [
        ("genenv.train", ["+bench=reasoning_gym", "model=tiny"]),
        ("genenv.evaluate", ["+bench=apibank", "model=tiny"]),
        ("genenv.serve", ["+bench=bfcl"]),
    ],
)
def test_entry_points_of_the_installed_wheel_compose_outside_the_checkout(installed, tmp_path, entry, args):
    _, target = installed
    code = (
        "import runpy, sys, genenv; "
        f"assert genenv.__file__.startswith({str(target)!r}), genenv.__file__; "
        f"sys.argv = [{entry!r}, *{args!r}, '--cfg', 'job']; runpy.run_module({entry!r}, run_name='__main__')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(target), "PATH": ""}, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    bench = args[0].split("=")[1]
    assert f"name: {bench}" in result.stdout and "max_turns:" in result.stdout
