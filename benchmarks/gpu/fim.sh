#!/usr/bin/env bash
# ON THE GPU MACHINE: HumanEval infilling through `headstart serve` (quality/fim_server_eval.py),
# scored there by quality/fim_score.py. Writes under $OUT: <set>.jsonl (completions),
# <set>_summary.json, and with RAW=1 the model's raw outputs for the server's prompts
# (<set>_raw.jsonl, to replay the filters offline), run.log.
#
# Before (here): benchmarks/gpu/stage_eval.sh. The sets are the repository's own
# (benchmarks/quality/fim/data), so they travel with the working tree.
# On the device, once vLLM serves the model at $ENDPOINT (../shared/tools/gpu/README.md):
#   carry [".gpu/wheels"]:  SETS="single multi" bash benchmarks/gpu/fim.sh
# Env: ENDPOINT, SETS (single multi), RAW (0), SERVER (1: through the server), CONCURRENCY
#   (32 documents in flight), STRIDE (1: every problem), SETTINGS (completion settings JSON).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$repo/gpu-fim-out}
source "$repo/benchmarks/gpu/common.sh"
export PYTHONPATH="$site:$repo"
for set in ${SETS:-single multi}; do
  if [ "${RAW:-0}" = 1 ]; then
    step "$set: raw model output for the server's prompts"
    "$py" "$repo/benchmarks/quality/fim_server_eval.py" --dataset "$set" \
      --endpoint "$endpoint" --raw "$out/${set}_raw.jsonl" --concurrency 64 \
      --stride "${STRIDE:-1}"
  fi
  if [ "${SERVER:-1}" = 1 ]; then
    step "$set: through the server"
    "$py" "$repo/benchmarks/quality/fim_server_eval.py" --dataset "$set" \
      --endpoint "$endpoint" --out "$out/$set.jsonl" --concurrency "${CONCURRENCY:-32}" \
      --stride "${STRIDE:-1}" ${SETTINGS:+--settings "$SETTINGS"} \
      --server-log "$out/${set}_server.log"
    step "$set: scoring"
    "$py" "$repo/benchmarks/quality/fim_score.py" --dataset "$set" --completions "$out/$set.jsonl" \
      --workers "$(nproc)" --summary "$out/${set}_summary.json" > /dev/null
    "$py" -c "import json,sys; s=json.load(open(sys.argv[1])); print({k: s[k] for k in s if k in ('dataset','n','pass@1','exact_match','missing_completions')})" "$out/${set}_summary.json"
  fi
done
