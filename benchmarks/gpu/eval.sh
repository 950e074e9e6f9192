#!/usr/bin/env bash
# ON THE GPU MACHINE: the repository-level benchmark (benchmarks/quality) for the in-file,
# BM25 and oracle prompts and for Headstart through `headstart serve`, all against the same
# vLLM; scores them side by side. Writes under $OUT: results.jsonl, scores.txt, run.log,
# server_logs.tar.gz.
#
# Before (here, PyPI reachable; see benchmarks/README.md):
#   benchmarks/gpu/stage_eval.sh          # -> .gpu/wheels (~35 MB), .gpu/eval/dev.tar.xz (~7 MB)
# On the device, once vLLM serves the model at $ENDPOINT (../shared/tools/gpu/README.md):
#   carry [".gpu/wheels", ".gpu/eval/dev.tar.xz"], timeout_s 600:
#   bash benchmarks/gpu/eval.sh
# Env: ENDPOINT (http://127.0.0.1:8000/v1), MODEL (default: first of GET /models),
#   LIMIT (first N tasks only), STRATEGIES ("in-file bm25 oracle headstart"; a variant of
#   Headstart's settings runs as "NAME@key=value,key=value", e.g.
#   "headstart-4k@contextTokens=4096"),
#   PYTHON (python3), STAGE (.gpu of this checkout), HS_SITE (~/hs-site: our packages),
#   HS_WORK (~/hs-eval: unpacked tasks), TASK_SET (dev: the carried .gpu/eval/$TASK_SET.tar.xz,
#   e.g. heldout for packages never looked at while building), RESUME=1 (keep $HS_WORK/results.jsonl and run only
#   the tasks missing from it, e.g. after a call was cut short; the machine must still be warm).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$repo/gpu-eval-out}
strategies=${STRATEGIES:-in-file bm25 oracle headstart}
set_name=${TASK_SET:-dev}
source "$repo/benchmarks/gpu/common.sh"  # 1. our Python packages (gpu/site.sh), the log
limit=(); [ -n "${LIMIT:-}" ] && limit=(--limit "$LIMIT")
model=(); [ -n "${MODEL:-}" ] && model=(--model "$MODEL")

# 2. The tasks (the scripts are the checkout's benchmarks/quality).
unpacked="$work/.unpacked-$set_name"
archive="$stage/eval/$set_name.tar.xz"
if [ -f "$archive" ] && [ "$archive" -nt "$unpacked" ]; then
  step "unpacking the task set $set_name into $work"
  rm -rf "${work:?}/$set_name" "$work/tools"
  "$py" -W ignore::DeprecationWarning -m tarfile -e "$archive" "$work" || exit 1
  touch "$unpacked"
elif [ ! -f "$unpacked" ]; then
  echo "no $archive carried and no task set $set_name unpacked in $work yet"; exit 1
fi
tasks="$work/$set_name/tasks.jsonl"
echo "$(wc -l < "$tasks") tasks; ${LIMIT:+first $LIMIT of them}"

# 3. The backend must answer before anything is spent on it.
"$py" - "$endpoint" <<'EOF' || exit 1
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/models", timeout=10) as r:
    print("backend serves", [m["id"] for m in json.load(r)["data"]])
EOF

# 4. Every strategy against the same model, into one results file.
results="$work/results-$set_name.jsonl"
[ "${RESUME:-0}" = 1 ] || rm -f "$results"
[ "${RESUME:-0}" = 1 ] || rm -rf "$work/server-logs"
failed=0
for strategy in $strategies; do
  step "$strategy"
  started=$SECONDS
  if [[ "$strategy" == headstart* ]]; then
    # "headstart-4k@contextTokens=4096,suffixShare=0.1": a variant under its own name
    name=${strategy%%@*}; sets=()
    if [[ "$strategy" == *@* ]]; then
      IFS=, read -ra pairs <<< "${strategy#*@}"
      for pair in "${pairs[@]}"; do sets+=(--set "$pair"); done
    fi
    "$py" "$repo/benchmarks/quality/repo_eval.py" --tasks "$tasks" --endpoint "$endpoint" \
      --out "$results" --server-log-dir "$work/server-logs/$name" --strategy "$name" \
      "${sets[@]}" "${limit[@]}" "${model[@]}" || failed=1
  else
    "$py" "$repo/benchmarks/quality/run_baselines.py" --tasks "$tasks" --endpoint "$endpoint" \
      --strategy "$strategy" --out "$results" "${limit[@]}" "${model[@]}" \
      || failed=1
  fi
  echo "$strategy: $((SECONDS - started)) s"
  cp "$results" "$out/results.jsonl" 2>/dev/null
done

# 5. Scores, all strategies on the same tasks.
step "scores"
[ -s "$results" ] || { echo "no results"; exit 1; }
{
  "$py" "$repo/benchmarks/quality/score.py" "$results" --paired
  echo
  "$py" "$repo/benchmarks/quality/score.py" "$results" --paired --by-package
} > "$out/scores.txt"
cat "$out/scores.txt"
[ -d "$work/server-logs" ] && tar -czf "$out/server_logs.tar.gz" -C "$work" server-logs
# vLLM's counters after the run (prefix-cache queries and hits among them)
curl -sf "${endpoint%/v1}/metrics" > "$out/vllm_metrics.txt" || echo "no /metrics at ${endpoint%/v1}"
exit $failed
