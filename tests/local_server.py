"""Real OpenAI-compatible servers on localhost for the tests, as fixtures (``conftest.py`` makes them visible):

* ``transformers_server``: ``transformers serve`` itself (transformers is a dependency; its server needs fastapi,
  uvicorn and openai, the ``openenv`` extra) on the tiny random model, saved to a folder once per session;
* ``chat_server``: ``python -m genenv.llm.local_server`` on the same folder: that server, its streams closed by
  ``data: [DONE]``, which verifiers' streaming chat harness needs;
* ``llama_server``: llama-cpp-python's server on the embedded SmolLM2 GGUF, where the opt-in ``llama-server`` extra
  is installed (skipped with the install line otherwise).

Each server runs in its own process on a free port, on one thread, and is stopped when its scope ends; a server that
dies or does not answer fails the test with its log's tail."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

#: what llama-cpp-python's server imports; the extra that brings them compiles llama.cpp, so it is opt-in
LLAMA_SERVER_PACKAGES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
LLAMA_INSTALL = (
    'llama.cpp is an opt-in extra: CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-cache-dir -e ".[llama-server]" '
    "(compiles llama.cpp, about 6 minutes on 2 cores; docs/engines.md)"
)
START_TIMEOUT_S = 180


@dataclass(frozen=True)
class LocalServer:
    base_url: str
    """The API root, ``/v1`` included."""
    model: str
    """The model name requests must carry."""
    log: Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def running(name: str, command: list[str], port: int, ready_path: str, log: Path) -> Iterator[str]:
    """``command`` (server ``name``, listening on ``port``) in a child process until the context ends; yields
    ``http://127.0.0.1:<port>``, once ``ready_path`` answers 200."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"{name} exited with {server.returncode}:\n{log.read_text()[-3000:]}")
            try:
                if httpx.get(root + ready_path, timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"{name} did not answer within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
        yield root
        if server.poll() is not None:
            pytest.fail(f"{name} died with {server.returncode}:\n{log.read_text()[-3000:]}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """The tiny random model (``load_policy("tiny")``, seed 0) as a Hugging Face folder."""
    from genenv.llm.models import build_tiny_policy

    folder = tmp_path_factory.mktemp("tiny-model")
    policy = build_tiny_policy(seed=0)
    policy.model.save_pretrained(folder)
    policy.tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def transformers_server(tiny_model_dir, tmp_path_factory) -> Iterator[LocalServer]:
    """``transformers serve`` on the tiny model (one server for the session)."""
    port, log = free_port(), tmp_path_factory.mktemp("transformers-serve") / "server.log"
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", str(tiny_model_dir),
               "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]  # fmt: skip
    with running("transformers serve", command, port, "/health", log) as root:
        yield LocalServer(f"{root}/v1", str(tiny_model_dir), log)


@pytest.fixture(scope="session")
def chat_server(tiny_model_dir, tmp_path_factory) -> Iterator[LocalServer]:
    """``python -m genenv.llm.local_server`` on the tiny model (one server for the session)."""
    port, log = free_port(), tmp_path_factory.mktemp("local-server") / "server.log"
    command = [sys.executable, "-m", "genenv.llm.local_server", str(tiny_model_dir), "--port", str(port),
               "--threads", "1"]  # fmt: skip
    with running("genenv.llm.local_server", command, port, "/health", log) as root:
        yield LocalServer(f"{root}/v1", str(tiny_model_dir), log)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> Iterator[LocalServer]:
    """``python -m llama_cpp.server`` on the embedded SmolLM2 GGUF, as ``smollm2``; skipped without the extra."""
    missing = [name for name in LLAMA_SERVER_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"llama-cpp-python's server is not installed ({', '.join(missing)} missing); {LLAMA_INSTALL}")
    from genenv.llm.models import embedded_gguf_path

    try:
        gguf = embedded_gguf_path("smollm2")
    except ModuleNotFoundError as error:
        pytest.skip(f"no SmolLM2 GGUF: {error}")
    port, log = free_port(), tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", "1", "--n_threads_batch", "1",
    ]  # fmt: skip
    with running("llama_cpp.server", command, port, "/v1/models", log) as root:
        yield LocalServer(f"{root}/v1", "smollm2", log)
