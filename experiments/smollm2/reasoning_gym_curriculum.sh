#!/usr/bin/env bash
# The curriculum experiment of issue 9: GenEnv vs GenEnv-Random vs GenEnv-Static on reasoning-gym with the
# embedded SmolLM2 as agent and simulator, the same seeds and the same agent budget per epoch
# (tasks_per_epoch x num_generations episodes). The three runs go in parallel (one torch thread each) so that
# a cut-short experiment still has the same number of epochs for every curriculum.
#   bash experiments/smollm2/reasoning_gym_curriculum.sh [EPOCHS]
# Runs go to runs/rg_curriculum/<curriculum>; plots, metrics and table.md to results/smollm2/reasoning_gym_curriculum/.
set -euo pipefail
cd "$(dirname "$0")/../.."
EPOCHS=${1:-3}
OUT=runs/rg_curriculum
RESULTS=results/smollm2/reasoning_gym_curriculum
mkdir -p "$OUT" "$RESULTS"
SETTINGS=(
  +bench=reasoning_gym
  coevolution.epochs="$EPOCHS"
  coevolution.tasks_per_epoch=6
  curriculum.generation_rounds=2
  simulator.batch_size=6
  simulator.max_new_tokens=64
  validation.limit=45
  agent.num_generations=4
  agent.per_device_train_batch_size=4
  agent.gradient_accumulation_steps=1
  agent.learning_rate=1e-4
  agent.max_new_tokens=40
  agent.max_completion_length=48
  agent.max_turns=1
)
for curriculum in genenv random static; do
  OMP_NUM_THREADS=1 .venv/bin/python -m genenv.train "${SETTINGS[@]}" curriculum=$curriculum \
      run_dir="$OUT/$curriculum" resume="$([ -e "$OUT/$curriculum/checkpoints/latest" ] && echo true || echo false)" \
      > "$OUT/$curriculum.log" 2>&1 &
done
wait
.venv/bin/python -m genenv.plot "$OUT/genenv" "$OUT/random" "$OUT/static" --out "$RESULTS"
for curriculum in genenv random static; do cp "$OUT/$curriculum/metrics.jsonl" "$RESULTS/metrics_$curriculum.jsonl"; done
.venv/bin/python experiments/smollm2/curriculum_table.py "$OUT/genenv" "$OUT/random" "$OUT/static" > "$RESULTS/table.md"
