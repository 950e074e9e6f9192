#!/usr/bin/env bash
# ON THE GPU MACHINE: `headstart bench run` (simulated editors typing a real package, in
# load steps) against the vLLM serving at $ENDPOINT. Writes under $OUT/$NAME:
# results.json, table.txt, and vLLM's /metrics at the end (vllm_metrics.txt); run.log.
#
# Before (here): benchmarks/gpu/stage_eval.sh (-> .gpu/wheels, .gpu/eval/dev.tar.xz).
# On the device, once vLLM serves the model (../shared/tools/gpu/README.md):
#   carry [".gpu/wheels", ".gpu/eval/dev.tar.xz"] once, then e.g.
#   NAME=real15 USERS=1,10,50,100,200,400 bash benchmarks/gpu/bench.sh
# Then here: `headstart bench plot <files_at>/real15/results.json`.
# Start vLLM with the flags `headstart backend start` gives it, `--scheduling-policy
# priority` above all (docs/architecture.md): without it keystrokes wait behind prefetches,
# vLLM 0.25.1 takes the priority field silently, and the figures are not capacity figures
# (docs/bench.md, "One H100 at 7d9eea9").
# Env: ENDPOINT (http://127.0.0.1:8000/v1), NAME (bench), USERS (1,10,50,100,200,400),
#   STEP (30 s measured a step), WARMUP (5 s), REPO (rich-15.0.0: the package typed, from
#   the dev task set), SETTINGS (server settings JSON), FLOOR (200 prompts), BENCH_ARGS
#   (more options of `headstart bench run`, e.g. `--record ~/traces` or `--replay ~/traces
#   --replay-users 100,300`), CPUS (cores for the editors and their servers, e.g. 4-15, so
#   they leave vLLM's processes the rest: start vLLM under `taskset -c 0-3`); and
#   gpu/common.sh's.
#
# MODE=replay (what gpu_replay.sh did): record real editors, then replay their traces as
# many users beside a few real editors, all with the same settings, in one call (this
# script twice). Writes $OUT/$NAME-record and $OUT/$NAME-replay; the traces stay in
# $TRACES (~/traces-$NAME) for later replays (gpu/vllm_flags.sh).
#   MODE=replay NAME=fim64 SETTINGS='{"completion":{"fimSuffixTokens":64}}' bash benchmarks/gpu/bench.sh
# Env with MODE=replay: NAME (replay), RECORD_USERS (10), EDITORS (5: real editors beside
#   the replay), REPLAY_USERS (100,300,1000), STEP (20), RECORD_STEP (STEP: the recording's,
#   as long as a replayed user's loop), WARMUP (5), DRIVERS (4), RAMP (0: seconds over
#   which a step's replayed users start, one after another; its warm-up lasts as long),
#   TRACES, BENCH_ARGS (for both runs, e.g. "--lines-per-visit 20"), EDITORS_SEED (1: the
#   replay's real editors type other keys than the recorded ones, whose prompts vLLM may
#   still hold from the recording), and the above. FLOOR is 0 for both runs.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${MODE:-}" = replay ]; then
  name=${NAME:-replay}
  traces=${TRACES:-$HOME/traces-$name}
  rm -rf "$traces"
  more=${BENCH_ARGS:-}
  export STEP=${STEP:-20} WARMUP=${WARMUP:-5} FLOOR=0
  MODE= NAME=$name-record USERS=${RECORD_USERS:-10} STEP=${RECORD_STEP:-$STEP} \
    BENCH_ARGS="$more --record $traces" bash "$0" || exit 1
  MODE= NAME=$name-replay USERS=${EDITORS:-5} \
    BENCH_ARGS="--seed ${EDITORS_SEED:-1} $more --replay $traces --replay-users ${REPLAY_USERS:-100,300,1000} --replay-drivers ${DRIVERS:-4} --replay-ramp-seconds ${RAMP:-0}" \
    bash "$0"
  exit
fi
name=${NAME:-bench}
out=${OUT:-$repo/gpu-bench-out}/$name
source "$repo/benchmarks/gpu/common.sh"
export PYTHONPATH="$site:$repo"

settings=${SETTINGS:-'{}'}
workspace="$work/dev/repos/${REPO:-rich-15.0.0}"
if [ ! -d "$workspace" ]; then
  step "unpacking the dev task set's packages into $work"
  "$py" -W ignore::DeprecationWarning -m tarfile -e "$stage/eval/dev.tar.xz" "$work" || exit 1
fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
step "headstart bench run on $workspace, users ${USERS:-1,10,50,100,200,400}"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
${CPUS:+taskset -c "$CPUS"} "$py" -m server bench run "$workspace" --backend-url "$endpoint" \
  --users "${USERS:-1,10,50,100,200,400}" --step-seconds "${STEP:-30}" \
  --warmup-seconds "${WARMUP:-5}" --floor-prompts "${FLOOR:-200}" \
  --settings "$settings" --out "$out" ${BENCH_ARGS:-} | tee "$out/table.txt"
status=${PIPESTATUS[0]}
curl -s "${endpoint%/v1}/metrics" > "$out/vllm_metrics.txt"
step "done (exit $status)"
exit "$status"
