#!/usr/bin/env bash
# ON THE GPU MACHINE: vLLM's settings for many typing users, chosen by measurement. For each
# flag set in FLAGSETS ("|" between sets; an empty set is vLLM's defaults), the vLLM that
# serve_vllm.sh started is restarted with those flags added to `--scheduling-policy
# priority`, and the traces that `MODE=replay benchmarks/gpu/bench.sh` recorded are replayed as
# REPLAY_USERS users beside EDITORS real editors (benchmarks/gpu/bench.sh). The same traces
# for every set, so the sets differ only in their flags. Without TRACES, real editors alone
# type in steps of USERS (1,10,25,50), the same keys for every set: for flags that change
# latency more than capacity. Each set starts on a fresh vLLM, so no set finds another's
# prompts in the prefix cache. Writes $OUT/$NAME-<n>/ per set and $OUT/$NAME-flags.txt (n,
# then the set's flags). The last set's vLLM is left running.
#
#   TRACES=~/traces-defaults FLAGSETS="|--stream-interval 4" bash benchmarks/gpu/vllm_flags.sh
#   FLAGSETS='|--speculative-config {"method":"ngram","num_speculative_tokens":4,"prompt_lookup_min":2,"prompt_lookup_max":4}' \
#     bash benchmarks/gpu/vllm_flags.sh
#
# A restart with real weights takes ~1-2 minutes: two or three sets fit in one call.
# Env: TRACES, USERS (without TRACES), FLAGSETS, NAME (flags), FIRST (1: the number of the
#   first set, to go on in a later call), REPLAY_USERS (300), EDITORS (5), DRIVERS (4),
#   STEP (20), WARMUP (5), MODEL_DIR (~/models/real15), SERVED (q15), PORT (8000),
#   LOAD_FORMAT (auto), SERVE_VLLM (~/serve_vllm.sh), and gpu/bench.sh's (SETTINGS, CPUS, ...).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
name=${NAME:-flags}
traces=${TRACES:-}
out=${OUT:-$repo/gpu-bench-out}
serve=${SERVE_VLLM:-$HOME/serve_vllm.sh}
port=${PORT:-8000}
mkdir -p "$out"
users=${USERS:-1,10,25,50} replay=""
if [ -n "$traces" ]; then
  [ -d "$traces" ] || { echo "no traces in $traces: run MODE=replay benchmarks/gpu/bench.sh first"; exit 1; }
  users=${EDITORS:-5}
  replay="--replay $traces --replay-users ${REPLAY_USERS:-300} --replay-drivers ${DRIVERS:-4}"
fi

stop_vllm() {
  local pid
  pid=$(cat "$HOME/vllm.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null
  for _ in $(seq 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -9 "$pid" 2>/dev/null
  for _ in $(seq 60); do curl -sf "http://127.0.0.1:$port/health" > /dev/null || break; sleep 0.5; done
  rm -f "$HOME/vllm.pid"
}

n=${FIRST:-1}
IFS='|' read -r -a sets <<< "${FLAGSETS-|--stream-interval 4|--max-num-batched-tokens 16384}"
for flags in "${sets[@]}"; do
  echo "== $(date +%T) set $n: vLLM with --scheduling-policy priority ${flags:-(defaults)}"
  stop_vllm
  # shellcheck disable=SC2086  # the set's flags are words
  if ! LOAD_FORMAT=${LOAD_FORMAT:-auto} bash "$serve" "${MODEL_DIR:-$HOME/models/real15}" \
      "${SERVED:-q15}" "$port" --scheduling-policy priority $flags; then
    echo "set $n: vLLM did not start with: $flags"
    n=$((n + 1))
    continue
  fi
  printf '%s\t%s\n' "$n" "${flags:-(defaults)}" >> "$out/$name-flags.txt"
  NAME=$name-$n USERS=$users STEP=${STEP:-20} WARMUP=${WARMUP:-5} FLOOR=0 BENCH_ARGS=$replay \
    bash "$repo/benchmarks/gpu/bench.sh"
  n=$((n + 1))
done
