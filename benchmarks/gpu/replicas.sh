#!/usr/bin/env bash
# ON THE GPU MACHINE: replace the single vLLM that serve_vllm.sh started with REPLICAS vLLMs
# behind vllm-router on the same port (`headstart backend start --replicas N`), the same
# model and the same total memory share, so `gpu/bench.sh` can compare them (docs/team.md).
# Leaves the replicas' base URLs, comma-separated, in ~/replica_urls for
# `BENCH_ARGS="--metrics-urls $(cat ~/replica_urls)"`.
#
# Before (here): the router's wheel, orjson (it imports it) and a `vllm-router` wrapper that
# runs it with vLLM's site for fastapi/uvicorn, in .gpu/router; on the device
# `pip install --no-deps --target ~/router-site .gpu/router/*.whl` and the wrapper in ~/bin.
# Env: MODEL_DIR (~/models/real15), SERVED (q15), REPLICAS (2), SHARE (0.6: the total memory
#   share, split between the replicas on one GPU), PORT (8000), MAX_LEN (16384), VLLM_ARGS
#   (more arguments for each vLLM, e.g. "--load-format dummy"); gpu_common's.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$repo/gpu-replicas-out}
source "$repo/benchmarks/gpu/common.sh"
export PYTHONPATH="$site:$repo" PATH="$HOME/bin:$PATH"
# vLLM runs from its own site, not ours (HEADSTART_VLLM_COMMAND is used as is).
export HEADSTART_VLLM_COMMAND="env PYTHONPATH=$HOME/site python3 -m vllm.entrypoints.openai.api_server"
export VLLM_USE_FLASHINFER_SAMPLER=0

if [ -f "$HOME/vllm.pid" ] && kill -0 "$(cat "$HOME/vllm.pid")" 2>/dev/null; then
  step "stopping the single vLLM (pid $(cat "$HOME/vllm.pid"))"
  kill "$(cat "$HOME/vllm.pid")"
  for _ in $(seq 60); do kill -0 "$(cat "$HOME/vllm.pid")" 2>/dev/null || break; sleep 1; done
  rm -f "$HOME/vllm.pid"
fi
"$py" -m server backend stop >/dev/null 2>&1

step "starting ${REPLICAS:-2} replicas behind vllm-router on port ${PORT:-8000}"
"$py" -m server backend start --model "${MODEL_DIR:-$HOME/models/real15}" \
  --served-model-name "${SERVED:-q15}" --port "${PORT:-8000}" --replicas "${REPLICAS:-2}" \
  --gpu-memory-utilization "${SHARE:-0.6}" --max-model-len "${MAX_LEN:-16384}" \
  ${VLLM_ARGS:+-- $VLLM_ARGS} || exit 1
"$py" -m server backend status --json > "$out/backend_status.json"
"$py" - "$out/backend_status.json" > "$HOME/replica_urls" <<'EOF' || exit 1
import json, sys
state = json.load(open(sys.argv[1]))["local"]
print(",".join(worker["url"] for worker in state["workers"]))
EOF
step "replicas: $(cat "$HOME/replica_urls")"
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
