"""``uv pip install ARGS`` with pip's own index settings: the set-up installs with uv (several times faster than pip),
which reads neither pip's configuration files nor its ``PIP_*`` variables; so the packages come from where
``pip install`` would take them.

    python scripts/uv_install.py -q torch==2.13.0     # in the activated environment that has uv

pip's settings are read as ``pip config list`` shows them (the ``global`` and ``install`` sections of its files,
then ``PIP_*`` variables, each overriding the one before, as pip does). uv is told to pick the best version found on
any index (``--index-strategy unsafe-best-match``), which is what pip does; uv's default takes the first index that
has the package. Like pip, it compiles the installed modules' bytecode (``--compile-bytecode``): otherwise their first
import does, slower, and prints the compiler's warnings to the user.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys

#: pip's list settings and the uv option that takes each of their values
LISTS = {"index-url": "--default-index", "extra-index-url": "--index", "find-links": "--find-links",
         "constraint": "--constraint"}  # fmt: skip
#: pip's single settings and the variable uv reads for them
VARIABLES = {"cert": "SSL_CERT_FILE", "timeout": "UV_HTTP_TIMEOUT", "default-timeout": "UV_HTTP_TIMEOUT"}
#: pip's configuration scopes, the later overriding the earlier
SCOPES = ("global", "install", ":env:")


def pip_settings(listing: str) -> dict[str, str]:
    """The settings of ``pip config list`` output, each from the scope that overrides the others."""
    found: dict[tuple[str, str], str] = {}
    for line in listing.splitlines():
        name, sep, value = line.partition("=")
        scope, _, key = name.rpartition(".")
        if sep and scope in SCOPES:
            found[scope, key] = ast.literal_eval(value)  # pip prints each value as a Python string literal
    return {key: value for scope in SCOPES for (where, key), value in found.items() if where == scope}


def uv_command(settings: dict[str, str], args: list[str]) -> tuple[list[str], dict[str, str]]:
    """The ``uv pip install`` command line and the variables that carry ``settings``."""
    options = ["--index-strategy", "unsafe-best-match", "--compile-bytecode"]
    for key, option in LISTS.items():
        for value in settings.get(key, "").split():
            options += [option, value]
    env = {variable: settings[key] for key, variable in VARIABLES.items() if key in settings}
    return ["uv", "pip", "install", *options, *args], env


def main() -> None:
    if not shutil.which("uv"):
        sys.exit("uv_install.py: no uv on PATH (pip install uv)")
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    )
    command, env = uv_command(pip_settings(listing.stdout), sys.argv[1:])
    os.execvpe(command[0], command, {**env, **os.environ})  # a variable the user set wins


if __name__ == "__main__":
    main()
