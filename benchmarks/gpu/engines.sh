#!/usr/bin/env bash
# ON THE GPU MACHINE: vLLM at :8000 and SGLang at :8001 serving the same model on the one
# GPU, each pinned to its own cores, so that `headstart bench run --compare` (and
# gpu/bench.sh with ENDPOINT) can run the same typing load on both (docs/bench.md,
# "Choosing an engine"). Each engine is left running; one already healthy is kept.
#
# Expects (staged in earlier calls, benchmarks/README.md): vLLM's parts in $STAGE
# (vllm.partNN), SGLang's (sglang.partNN, benchmarks/gpu/stage_sglang.sh), our wheels in
# $STAGE/wheels, ~/serve_vllm.sh, and the model folder $MODEL_DIR (the real weights:
# convert_gguf.py).
# Env: MODEL_DIR (~/models/real15), SERVED (q15), STAGE (~/stage), VLLM_CPUS (0-3),
#   SGLANG_CPUS (4-7), VLLM_SHARE (0.3 of the GPU's memory), SGLANG_MEM (0.6: SGLang's
#   --mem-fraction-static counts the memory vLLM holds as used, so 0.6 leaves it a KV pool
#   about vLLM's size), LOAD_FORMAT (auto; dummy = random weights).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$repo/gpu-engines-out}
export STAGE=${STAGE:-$HOME/stage}
source "$repo/benchmarks/gpu/common.sh"
model=${MODEL_DIR:-$HOME/models/real15} served=${SERVED:-q15}

healthy() { curl -sf "http://127.0.0.1:$1/health" >/dev/null; }

if [ ! -f "$HOME/site/.unpacked" ]; then
  step "unpacking vLLM into ~/site"
  mkdir -p "$HOME/site" && cat "$STAGE"/vllm.part?? | tar -xz -C "$HOME/site" || exit 1
  touch "$HOME/site/.unpacked"
fi
if healthy 8000; then
  step "vLLM already serves at :8000"
else
  step "starting vLLM on cores ${VLLM_CPUS:-0-3}, ${VLLM_SHARE:-0.3} of the GPU's memory"
  LOAD_FORMAT=${LOAD_FORMAT:-auto} taskset -c "${VLLM_CPUS:-0-3}" bash "$HOME/serve_vllm.sh" \
    "$model" "$served" 8000 --scheduling-policy priority \
    --gpu-memory-utilization "${VLLM_SHARE:-0.3}" || exit 1
fi
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
if healthy 8001; then
  step "SGLang already serves at :8001"
else
  step "starting SGLang on cores ${SGLANG_CPUS:-4-7}, --mem-fraction-static ${SGLANG_MEM:-0.6}"
  MODEL_DIR=$model MEM=${SGLANG_MEM:-0.6} PORT=8001 LOAD_FORMAT=${LOAD_FORMAT:-auto} \
    taskset -c "${SGLANG_CPUS:-4-7}" bash "$repo/benchmarks/gpu/sglang.sh" "$served" || {
      cp "$HOME/sglang_$served.log" "$out/" 2>/dev/null; exit 1; }
fi
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
for port in 8000 8001; do
  curl -s "http://127.0.0.1:$port/v1/models" | head -c 400; echo
done
step "both engines serve"
