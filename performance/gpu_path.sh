#!/usr/bin/env bash
# The GPU path on one CUDA machine: the model-touching tests on CUDA (bf16), an end-to-end run of the tiny model, and
# one timed epoch of the curriculum experiment's reasoning-gym settings with a Qwen2.5-0.5B-shaped model.
#
#   bash performance/gpu_path.sh OUT_DIR [QWEN_SHAPE_DIR]      (STAGES="tests tiny qwen" by default; "micro" times
#   the agent step at micro-batch 4 and 1)
#
# QWEN_SHAPE_DIR holds Qwen2.5-Coder-0.5B's config.json and tokenizer files (no weights): the model is built there
# with random weights, so its replies run to the token cap (set to 32, above the 8-23 tokens real Qwen replies take
# on these tasks) and the agent's reward is 0 (agent.skip_zero_advantage=false keeps GRPO computing).
set -uo pipefail
OUT=${1:?usage: gpu_path.sh OUT_DIR [QWEN_SHAPE_DIR]}
SHAPE=${2:-}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
STAGES=${STAGES:-tests tiny qwen}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  $PY -c "import torch, transformers, trl, peft; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), \
torch.cuda.get_device_name(0), 'bf16', torch.cuda.is_bf16_supported()); print('transformers', transformers.__version__, \
'trl', trl.__version__, 'peft', peft.__version__)"
  nproc
} 2>&1 | tee "$OUT/env.txt"

if [[ $STAGES == *tests* ]]; then
echo "== tests on CUDA"
SECONDS=0
timeout ${TESTS_TIMEOUT:-180} $PY -m pytest -q -m "not slow" -p no:cacheprovider --continue-on-collection-errors \
  tests/test_grpo.py tests/test_warm_start.py tests/test_rwr.py tests/test_hf_engine.py tests/test_agent_simulator.py \
  tests/test_rollout.py tests/test_train.py tests/test_resume.py tests/test_dynamic_sampling.py \
  tests/test_integration_trl.py tests/test_alpha_curriculum.py tests/test_evaluate.py 2>&1 | tee "$OUT/tests.txt" | tail -25
echo "tests: ${SECONDS}s" | tee -a "$OUT/tests.txt"
fi

if [[ $STAGES == *tiny* ]]; then
echo "== tiny model end to end on CUDA"
SECONDS=0
timeout ${TINY_TIMEOUT:-150} $PY -m genenv.train +bench=reasoning_gym model=tiny coevolution.epochs=2 run_dir="$OUT/tiny" \
  > "$OUT/tiny.log" 2>&1; echo "tiny: exit $? in ${SECONDS}s" | tee -a "$OUT/tiny.log"
tail -5 "$OUT/tiny.log"
fi

qwen_epoch() {  # TAG [OVERRIDE ...]: one co-evolution epoch of the Qwen-shaped model, logs and metrics as OUT/TAG*
  local tag=$1
  shift
  SECONDS=0
  timeout ${QWEN_TIMEOUT:-300} $PY -m genenv.train +bench=reasoning_gym model.name=/tmp/qwen-shape model.few_shot=own coevolution.epochs=1 \
    coevolution.tasks_per_epoch=32 simulator.batch_size=16 simulator.max_new_tokens=64 \
    "bench.options.families=[basic_arithmetic@0-4,chain_sum@0-4,products@0-4]" bench.options.validation_per_level=14 \
    validation.limit=42 coevolution.replay_tasks=32 agent.num_generations=8 agent.temperature=0.6 \
    agent.max_new_tokens=32 agent.max_turns=1 agent.skip_zero_advantage=false warm_start.max_examples=16 \
    agent.disable_tqdm=true "$@" run_dir="$OUT/$tag" > "$OUT/$tag.log" 2>&1
  echo "$tag: exit $? in ${SECONDS}s" | tee -a "$OUT/$tag.log"
  tail -3 "$OUT/$tag.log"
  cp "$OUT/$tag/metrics.jsonl" "$OUT/$tag-metrics.jsonl" 2>/dev/null
}

if [[ -n $SHAPE && ( $STAGES == *qwen* || $STAGES == *micro* ) ]]; then
  $PY - "$SHAPE" /tmp/qwen-shape <<'PYEOF'
import shutil, sys
import torch
from transformers import AutoConfig, AutoModelForCausalLM
src, dst = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(src), dtype=torch.bfloat16)
model.save_pretrained(dst)
for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json"):
    shutil.copy(f"{src}/{name}", dst)
print("built", sum(p.numel() for p in model.parameters()) / 1e6, "M parameters")
PYEOF
fi

if [[ -n $SHAPE && $STAGES == *qwen* ]]; then
  echo "== Qwen-shaped epoch on CUDA"
  qwen_epoch qwen-shape
  nvidia-smi --query-gpu=memory.used --format=csv | tee -a "$OUT/env.txt"
fi

# the agent step's micro-batch on CUDA: 16 episodes a step as 4 x 4 and as 1 x 16 (the default, chosen on CPU), back
# to back on half the epoch's tasks; each epoch's metrics.jsonl holds its GRPO stage seconds
if [[ -n $SHAPE && $STAGES == *micro* ]]; then
  echo "== micro-batch 4 and 1 on CUDA"
  half=(coevolution.tasks_per_epoch=16 coevolution.replay_tasks=16)
  qwen_epoch micro4 "${half[@]}" agent.per_device_train_batch_size=4 agent.gradient_accumulation_steps=4
  qwen_epoch micro1 "${half[@]}" agent.per_device_train_batch_size=1 agent.gradient_accumulation_steps=16
fi
