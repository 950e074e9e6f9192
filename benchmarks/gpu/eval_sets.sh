#!/usr/bin/env bash
# ON THE GPU MACHINE: benchmarks/gpu/eval.sh on several task sets at once, one process per
# set against the same vLLM (a set's Headstart runs take a minute or two and leave the GPU
# idle between requests, so three sets take about as long as the slowest one). Every
# quality change is decided on all sets together (docs/results.md).
#
#   SETS="dev heldout unseen" STRATEGIES="in-file bm25 oracle headstart" \
#     bash benchmarks/gpu/eval_sets.sh
#
# Each set runs with its own work folder ($HS_WORK-SET: results, server logs) and writes
# its scores under $OUT/SET; its full log is $OUT/SET.log. The archives
# (.gpu/eval/SET.tar.xz) must have been carried or copied to $STAGE/eval before; the
# wheels are installed once, here, before the sets start. Waits for the sets by their
# process ids and exits non-zero when any failed.
# Env: SETS (dev heldout unseen), and gpu/eval.sh's (STRATEGIES, LIMIT, MODEL, RESUME, ...).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$repo/gpu-eval-out}
sets=${SETS:-dev heldout unseen}
source "$repo/benchmarks/gpu/common.sh"  # installs our packages once, for all the sets
base_work=$work

declare -A pids
for set_name in $sets; do
  step "task set $set_name"
  TASK_SET=$set_name OUT="$out/$set_name" HS_WORK="$base_work-$set_name" \
    bash "$repo/benchmarks/gpu/eval.sh" > "$out/$set_name.log" 2>&1 &
  pids[$set_name]=$!
done
failed=0
for set_name in $sets; do
  wait "${pids[$set_name]}" || { echo "task set $set_name failed: see $out/$set_name.log"; failed=1; }
done
for set_name in $sets; do
  step "scores, $set_name"
  sed -n '1,/^$/p' "$out/$set_name/scores.txt" 2>/dev/null || tail -n 20 "$out/$set_name.log"
done
exit "$failed"
