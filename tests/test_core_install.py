"""The core install (``pip install genenv``, no extras): every module imports without the extras' packages, except
the modules that exist to use one, which name the extra to install; so does the openai engine without httpx."""

from __future__ import annotations

import subprocess
import sys
import textwrap

#: top-level modules that only an extra of pyproject.toml installs
EXTRA_MODULES = {
    "httpx", "ctranslate2", "llama_cpp", "reasoning_gym", "alfworld", "textworld", "tree_sitter", "tree_sitter_java",
    "tree_sitter_javascript", "bfcl_eval", "fastapi", "uvicorn", "websockets", "fastmcp", "openai", "openenv",
    "verifiers", "tensorboard", "vllm", "tomli_w",
}  # fmt: skip

#: genenv modules that need an extra to import: the module -> the install command its error names
NEEDS_EXTRA = {
    "genenv.integrations.openenv": "pip install 'genenv[openenv]'",
    "genenv.integrations.verifiers": "pip install 'genenv[verifiers]'",
}

HIDE_EXTRAS = """
import importlib.util, sys
HIDDEN = set({hidden!r})

class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Hide())
_find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: (
    None if name.split(".")[0] in HIDDEN else _find_spec(name, package))
"""


def run_without_extras(code: str) -> subprocess.CompletedProcess[str]:
    script = HIDE_EXTRAS.format(hidden=sorted(EXTRA_MODULES)) + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)


def test_every_module_but_the_extras_own_imports_on_the_core_install():
    result = run_without_extras("""
        import importlib, pkgutil
        import genenv
        for module in pkgutil.walk_packages(genenv.__path__, "genenv."):
            try:
                importlib.import_module(module.name)
            except ImportError as error:
                print("FAILED", module.name, error)
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    failed = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("FAILED")}
    assert set(failed) == set(NEEDS_EXTRA), result.stdout
    for module, install in NEEDS_EXTRA.items():
        assert install in failed[module], failed[module]


def test_a_benchmark_without_its_extra_is_registered_and_names_the_extra_when_built():
    result = run_without_extras("""
        import gymnasium as gym
        import genenv
        print(gym.spec("GenEnv-ReasoningGym-v0").max_episode_steps)
        try:
            genenv.get_benchmark("reasoning_gym")
        except ImportError as error:
            print(error)
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "pip install 'genenv[reasoning-gym]'" in result.stdout and result.stdout.split()[0] == "2"


def test_openai_engine_without_httpx_names_its_extra():
    result = run_without_extras("""
        from genenv.llm.engines import OpenAIConfig, build_engine
        try:
            build_engine("openai", None, openai=OpenAIConfig())
        except ImportError as error:
            print(error)
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "pip install 'genenv[openai]'" in result.stdout
