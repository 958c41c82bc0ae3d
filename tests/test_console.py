"""What genenv.train shows first: how long the job takes, where genenv has measured it (genenv.console)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import child_env

from genenv.console import MEASURED_JOBS, measured_duration


def test_the_main_job_has_a_measured_duration_whatever_its_run_folder():
    expected = MEASURED_JOBS[("+bench=reasoning_gym",)]
    assert "minutes on 2 idle cores" in expected and "first_contact.json" in expected
    assert measured_duration(["+bench=reasoning_gym"]) == expected
    assert measured_duration(["run_dir=/tmp/x", "+bench=reasoning_gym", "data_root=/data"]) == expected


def test_other_jobs_have_none():
    assert measured_duration(["+bench=apibank"]) is None
    assert measured_duration(["+bench=reasoning_gym", "coevolution.epochs=4"]) is None  # other work
    assert measured_duration(["+bench=reasoning_gym", "resume=true"]) is None
    assert measured_duration([]) is None


def quiet_console_output(overrides: list[str], config: str = "config") -> str:
    """What ``quiet_console`` prints inside a Hydra job of ``config`` with ``overrides`` (in a child process: it
    rewires logging and warnings for good)."""
    code = textwrap.dedent(f"""
        from hydra import compose, initialize_config_dir
        from hydra.core.hydra_config import HydraConfig
        import genenv.train  # the config's nodes, as the command line has them
        from genenv.config import CONFIG_DIR
        from genenv.console import quiet_console
        with initialize_config_dir(str(CONFIG_DIR), version_base="1.3"):
            cfg = compose({config!r}, overrides={overrides!r}, return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)
        quiet_console()
        print("after")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_the_main_job_says_first_how_long_it_takes():
    lines = quiet_console_output(["+bench=reasoning_gym", "run_dir=/tmp/unused"]).splitlines()
    assert lines == ["this job takes " + MEASURED_JOBS[("+bench=reasoning_gym",)], "after"]


def test_another_job_prints_no_estimate():
    assert quiet_console_output(["+bench=reasoning_gym", "coevolution.epochs=3", "run_dir=/tmp/unused"]) == "after\n"
