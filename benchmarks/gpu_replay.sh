#!/usr/bin/env bash
# ON THE GPU MACHINE: record real editors, then replay their traces as many users beside a
# few real editors, all with the same settings, in one call (benchmarks/gpu_bench.sh
# twice). Writes $OUT/$NAME-record and $OUT/$NAME-replay (results.json, table.txt, run.log);
# the traces stay in $TRACES (~/traces-$NAME) for later replays.
#
#   NAME=fim64 SETTINGS='{"completion":{"fimSuffixTokens":64}}' bash benchmarks/gpu_replay.sh
#
# Env: NAME (replay), RECORD_USERS (10), EDITORS (5: real editors beside the replay),
#   REPLAY_USERS (100,300,1000), STEP (20), RECORD_STEP (STEP: the recording's, as long as
#   a replayed user's loop; longer than a stay in a file when users stay long), WARMUP
#   (5), DRIVERS (4), TRACES, BENCH_ARGS
#   (more `headstart bench run` options for both runs, e.g. "--lines-per-visit 20"), and
#   gpu_bench.sh's (SETTINGS, ENDPOINT, CPUS, REPO, ...). FLOOR is 0 for both runs.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
name=${NAME:-replay}
traces=${TRACES:-$HOME/traces-$name}
rm -rf "$traces"
more=${BENCH_ARGS:-}
export STEP=${STEP:-20} WARMUP=${WARMUP:-5} FLOOR=0
NAME=$name-record USERS=${RECORD_USERS:-10} STEP=${RECORD_STEP:-$STEP} BENCH_ARGS="$more --record $traces" \
  bash "$repo/benchmarks/gpu_bench.sh" || exit 1
NAME=$name-replay USERS=${EDITORS:-5} \
  BENCH_ARGS="$more --replay $traces --replay-users ${REPLAY_USERS:-100,300,1000} --replay-drivers ${DRIVERS:-4}" \
  bash "$repo/benchmarks/gpu_bench.sh"
