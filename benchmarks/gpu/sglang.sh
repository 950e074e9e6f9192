#!/bin/bash
# On the GPU machine: start SGLang 0.5.17's OpenAI-compatible server detached (it outlives the
# call while the machine stays warm), wait until healthy, leave its pid in $HOME/sglang.pid.
# The counterpart of serve_vllm.sh for the engine comparison; the flags come from
# server/backend/engines.py's sglang_args(), so they are those `headstart backend start
# --engine sglang` uses (our packages must be installed in $HS_SITE: benchmarks/gpu/site.sh).
#   usage: benchmarks/gpu/sglang.sh [NAME] [extra sglang args...]
#   env:   MODEL_DIR ($HOME/models/real15)  PORT (8001)  MEM (0.6, --mem-fraction-static)
#          MAX_LEN (16384)  LOAD_FORMAT (auto; dummy = random weights)  STAGE ($HOME/stage)
#          HS_SITE ($HOME/hs-site: our packages)
#          SAMPLING_BACKEND (pytorch, as vLLM runs with VLLM_USE_FLASHINFER_SAMPLER=0;
#          flashinfer would JIT-compile its sampling kernels with nvcc on first use)
# Expects the parts of benchmarks/gpu/stage_sglang.sh in $STAGE (sglang.part00, ...): unpacks them
# into $HOME/sgsite once, which sits in front of the machine's own packages (torch etc.).
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
site=$HOME/sgsite stage=${STAGE:-$HOME/stage}
model=${MODEL_DIR:-$HOME/models/real15}; name=${1:-$(basename "$model")}; shift $(( $# > 0 ? 1 : 0 ))
port=${PORT:-8001}
if [ ! -f "$site/.unpacked" ]; then
  ls "$stage"/sglang.part?? >/dev/null || { echo "no $stage/sglang.partNN"; exit 1; }
  rm -rf "$site" && mkdir -p "$site"
  cat "$stage"/sglang.part?? | tar -xzf - -C "$site" || { echo "unpacking failed"; exit 1; }
  touch "$site/.unpacked"; du -sh "$site"
fi
# A CUDA_HOME for JIT builds (flashinfer): nvcc/nvvm/cccl from the site, the CUDA 13.0
# runtime headers and libraries from the machine's torch.
cuda=$HOME/sgcuda
if [ ! -d "$cuda" ]; then
  dev=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')/nvidia/cu13
  mkdir -p "$cuda/include" "$cuda/lib64"
  ln -sfn "$site/nvidia/cu13/bin" "$cuda/bin"; ln -sfn "$site/nvidia/cu13/nvvm" "$cuda/nvvm"
  for f in "$dev"/include/* "$site"/nvidia/cu13/include/*; do ln -sfn "$f" "$cuda/include/"; done
  for f in "$dev"/lib/* "$site"/nvidia/cu13/lib/*; do ln -sfn "$f" "$cuda/lib64/"; done
  [ -e "$cuda/lib64/libcudart.so" ] || ln -sfn libcudart.so.13 "$cuda/lib64/libcudart.so"
  # nvcc adds the include folder beside its real self (the site's), not $CUDA_HOME's: the
  # runtime headers go there too, else JIT kernels fail on cuda_runtime.h.
  for f in "$dev"/include/*; do
    [ -e "$site/nvidia/cu13/include/${f##*/}" ] || ln -s "$f" "$site/nvidia/cu13/include/"
  done
fi
# The flags `headstart backend start --engine sglang` gives SGLang, from our own code.
flags=$(PYTHONPATH=${HS_SITE:-$HOME/hs-site}:$repo python3 - "$model" "$name" "$port" \
    "${MAX_LEN:-16384}" "${MEM:-0.6}" "${LOAD_FORMAT:-auto}" <<'PY'
import shlex, sys
from server.backend.engines import ServeArgs, sglang_args
model, name, port, max_len, share, load_format = sys.argv[1:]
serve = ServeArgs(model, name, "127.0.0.1", int(port), int(max_len), float(share),
                  dummy_weights=load_format == "dummy")
print(shlex.join(sglang_args(serve)))
PY
) || { echo "cannot import server.backend.engines: are our packages in ${HS_SITE:-$HOME/hs-site}?"; exit 1; }
eval "flags=($flags)"
# PYTHONPATH skips .pth files: the second entry is what nvidia_cutlass_dsl_packages.pth adds.
export PYTHONPATH=$site:$site/nvidia_cutlass_dsl/dsl_packages CUDA_HOME=$cuda \
       CPATH=$cuda/include${CPATH:+:$CPATH} LIBRARY_PATH=$cuda/lib64${LIBRARY_PATH:+:$LIBRARY_PATH} \
       HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DO_NOT_TRACK=1
setsid nohup python3 -m sglang.launch_server "${flags[@]}" \
  --sampling-backend "${SAMPLING_BACKEND:-pytorch}" "$@" > "$HOME/sglang_$name.log" 2>&1 < /dev/null &
echo $! > "$HOME/sglang.pid"
for i in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && { echo "SGLang healthy after ${i}s (pid $(cat "$HOME/sglang.pid"))"; exit 0; }
  kill -0 "$(cat "$HOME/sglang.pid")" 2>/dev/null || { echo "SGLang died:"; tail -60 "$HOME/sglang_$name.log"; exit 1; }
  sleep 1
done
echo "SGLang not healthy after 300s"; tail -40 "$HOME/sglang_$name.log"; exit 1
