#!/usr/bin/env bash
# HERE (no GPU): what prompt settings would make the GPU compute, from real editors typing
# against the fake model as an oracle (tests/fake_oracle.py: right at ORACLE_RIGHT of the
# places, else right for a few words) and vLLM's prefix cache simulated over each arm's
# recording (benchmarks/prompt_cache_sim.py). One `headstart bench run --record` per arm,
# each against a fresh fake; prompts go as text, which the oracle reads.
#
#   benchmarks/oracle_arms.sh WORKSPACE TOKENIZER.json 'base|{}|' \
#     'suffix03|{"completion":{"suffixShare":0.03}}|' 'visit20|{}|--lines-per-visit 20'
#
# Each arm is NAME|COMPLETION-AND-OTHER-SETTINGS-JSON|MORE-BENCH-OPTIONS. Writes
# $OUT/NAME/{out,trace} and $OUT/NAME.sim.txt, and prints each arm's bench line and sim.
# Env: USERS (3), SECS (120), ORACLE_RIGHT (0.3), PORT (18454), OUT (/tmp/oracle-arms),
#   PYTHON (.venv/bin/python).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
workspace=$(cd "${1:?usage: oracle_arms.sh WORKSPACE TOKENIZER.json ARM...}" && pwd)
tokenizer=$(realpath "${2:?usage: oracle_arms.sh WORKSPACE TOKENIZER.json ARM...}")
shift 2
port=${PORT:-18454}; py=${PYTHON:-$repo/.venv/bin/python}; out=${OUT:-/tmp/oracle-arms}
for arm in "$@"; do
  IFS='|' read -r name settings more <<< "$arm"
  settings=$("$py" -c 'import json, sys
s = json.loads(sys.argv[1] or "{}")
s.setdefault("backend", {})["promptTokenIds"] = False
s.setdefault("completion", {}).setdefault("tokenizer", sys.argv[2])
print(json.dumps(s))' "$settings" "$tokenizer")
  "$py" "$repo/tests/fake_openai.py" --port "$port" --quiet --oracle "$workspace" \
    --oracle-right "${ORACLE_RIGHT:-0.3}" --default-text "$(printf 'value = compute(items)\n')" &
  fake=$!
  trap 'kill $fake 2>/dev/null || true' EXIT
  sleep 3
  rm -rf "${out:?}/$name"
  echo "== $name: $settings $more"
  # shellcheck disable=SC2086  # $more is options, split on purpose
  "$py" -m server bench run "$workspace" --backend-url "http://127.0.0.1:$port/v1" \
    --users "${USERS:-3}" --step-seconds "${SECS:-120}" --warmup-seconds 5 --floor-prompts 0 \
    --out "$out/$name/out" --record "$out/$name/trace" --settings "$settings" $more 2>&1 \
    | grep -A1 "^users" | tail -1
  kill "$fake"; wait "$fake" 2>/dev/null || true
  "$py" "$repo/benchmarks/prompt_cache_sim.py" "$out/$name/trace" --tokenizer "$tokenizer" \
    | tee "$out/$name.sim.txt"
done
