#!/usr/bin/env bash
# The server's stop rules and filters, of this checkout and of a baseline revision, on the
# same recorded raw model outputs, scored side by side by benchmarks/quality/fim_score.py.
# Runs on this machine in a minute or two: the model ran once, when the outputs were
# recorded (docs/results/fim_raw/, or RECORD=1 against ENDPOINT; see benchmarks/README.md).
#
#   benchmarks/quality/fim_replay.sh [BASE_REV]     # BASE_REV: a commit, tag or branch (default HEAD~1)
# Env: SETS ("multi single safim-block"), RAW (docs/results/fim_raw), OUT (a temporary
#   folder), RECORD=1 to record the raw outputs first (ENDPOINT, default :8012, the CPU model
#   of ../shared/tools/model; one at a time, 128 tokens, every STRIDE_<set>th problem).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-$repo/.venv/bin/python}
data=$repo/benchmarks/quality/fim/data
raw=${RAW:-$repo/docs/results/fim_raw}
out=${OUT:-$(mktemp -d)}
base_rev=${1:-HEAD~1}
declare -A file=([single]=HumanEval-SingleLineInfilling [multi]=HumanEval-MultiLineInfilling
  [safim-block]=safim_python_block [safim-control]=safim_python_control)
declare -A stride=([single]=${STRIDE_single:-12} [multi]=${STRIDE_multi:-50}
  [safim-block]=${STRIDE_safim_block:-10} [safim-control]=${STRIDE_safim_control:-10})

base=$out/base
git -C "$repo" worktree add -q --detach "$base" "$base_rev"
trap 'git -C "$repo" worktree remove --force "$base"' EXIT
mkdir -p "$base/benchmarks/quality"  # the same harness for both, at its path of this checkout
cp "$repo/benchmarks/quality/fim_server_eval.py" "$base/benchmarks/quality/"
mkdir -p "$out/data" "$raw"
printf '%-14s %-10s %5s %8s %8s\n' set rules n 'pass@1' 'EM'
for set in ${SETS:-multi single safim-block}; do
  # the sample: every Nth problem, as the scorer's data, so only it is scored
  "$py" - "$data/${file[$set]}.jsonl.gz" "$out/data/${file[$set]}.jsonl.gz" "${stride[$set]}" <<'EOF'
import gzip, sys
rows = [line for line in gzip.open(sys.argv[1], "rt") if line.strip()][:: int(sys.argv[3])]
with gzip.open(sys.argv[2], "wt") as f:
    f.writelines(rows)
EOF
  if [ "${RECORD:-0}" = 1 ]; then
    "$py" "$repo/benchmarks/quality/fim_server_eval.py" --dataset "$set" --stride "${stride[$set]}" \
      --endpoint "${ENDPOINT:-http://127.0.0.1:8012/v1}" --raw "$raw/$set.jsonl" \
      --max-tokens 128 --concurrency 1
  fi
  raw_file=$raw/$set.jsonl; [ -f "$raw_file" ] || raw_file=$raw_file.xz
  for rules in base this; do
    tree=$repo; [ "$rules" = base ] && tree=$base
    (cd "$tree" && "$py" benchmarks/quality/fim_server_eval.py --dataset "$set" --data "$out/data" \
      --replay "$raw_file" --out "$out/$set-$rules.jsonl")
    "$py" "$repo/benchmarks/quality/fim_score.py" --dataset "$set" --data-dir "$out/data" --quiet \
      --completions "$out/$set-$rules.jsonl" --summary "$out/$set-$rules.json" > /dev/null
    python3 - "$out/$set-$rules.json" "$set" "$rules" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
label = sys.argv[3] if sys.argv[3] == "this" else "base"
print(f"{sys.argv[2]:<14} {label:<10} {s['n']:>5} {100 * s['pass@1']:>7.1f}% {100 * s['exact_match_stripped']:>7.1f}%")
EOF
  done
done
echo "base: $(git -C "$repo" rev-parse --short "$base_rev"), this: the working tree; outputs in $out"
