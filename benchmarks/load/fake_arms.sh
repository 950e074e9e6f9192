#!/usr/bin/env bash
# HERE (no GPU): real editors (`headstart bench run`) against the fake model, one run per
# arm, each arm with its own settings and each against a fresh fake; what a setting does
# without a GPU. Folds what oracle_arms.sh and under_load_ab.sh did, which differed only
# in the fake's options and in their arms:
#
#   the GPU's computed prompt tokens per setting (the fake as an oracle, tests/fake_oracle.py:
#   right at ORACLE_RIGHT of the places, so users accept and type through suggestions; each
#   run recorded and vLLM's prefix cache simulated over it, benchmarks/load/prompt_cache_sim.py):
#     ORACLE_RIGHT=0.3 SIM=1 benchmarks/load/fake_arms.sh WORKSPACE TOKENIZER.json 'base|{}|' \
#       'suffix03|{"completion":{"suffixShare":0.03}}|' 'visit20|{}|--lines-per-visit 20'
#
#   smaller prompts under load (the fake made compute-bound: tests/fake_openai.py
#   --prefill-tokens-per-s RATE):
#     RATE=4000 USERS=4 SECS=60 benchmarks/load/fake_arms.sh WORKSPACE TOKENIZER.json \
#       'off|{"completion":{"contextTokensUnderLoad":0}}|' \
#       'on|{"completion":{"contextTokensUnderLoad":2048}}|'
#
# Each arm is NAME|SETTINGS-JSON|MORE-BENCH-OPTIONS; the tokenizer goes into every arm's
# completion settings, and with the oracle prompts go as text (`backend.promptTokenIds`
# false), which it reads. Writes $OUT/NAME/out (results.json), $OUT/NAME.txt (the bench's
# table, printed), and with SIM=1 $OUT/NAME/trace and $OUT/NAME.sim.txt (printed).
# Env: ORACLE_RIGHT (unset: no oracle), RATE (unset: answers at once), SIM (0), USERS (3),
#   SECS (120), PORT (18454), OUT (/tmp/fake-arms), PYTHON (.venv/bin/python).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
usage="usage: fake_arms.sh WORKSPACE TOKENIZER.json ARM..."
workspace=$(cd "${1:?$usage}" && pwd)
tokenizer=$(realpath "${2:?$usage}")
shift 2
port=${PORT:-18454}; py=${PYTHON:-$repo/.venv/bin/python}; out=${OUT:-/tmp/fake-arms}
fake_args=(--port "$port" --quiet --default-text "$(printf 'value = compute(items)\n')")
[ -n "${ORACLE_RIGHT:-}" ] && fake_args+=(--oracle "$workspace" --oracle-right "$ORACLE_RIGHT")
[ -n "${RATE:-}" ] && fake_args+=(--prefill-tokens-per-s "$RATE")
mkdir -p "$out"
for arm in "$@"; do
  IFS='|' read -r name settings more <<< "$arm"
  settings=$("$py" -c 'import json, sys
s = json.loads(sys.argv[1] or "{}")
if sys.argv[3]:
    s.setdefault("backend", {})["promptTokenIds"] = False
s.setdefault("completion", {}).setdefault("tokenizer", sys.argv[2])
print(json.dumps(s))' "$settings" "$tokenizer" "${ORACLE_RIGHT:-}")
  "$py" "$repo/tests/fake_openai.py" "${fake_args[@]}" &
  fake=$!
  trap 'kill $fake 2>/dev/null || true' EXIT
  sleep 3
  rm -rf "${out:?}/$name"
  record=(); [ "${SIM:-0}" = 1 ] && record=(--record "$out/$name/trace")
  echo "== $name: $settings $more"
  # shellcheck disable=SC2086  # $more is options, split on purpose
  "$py" -m server bench run "$workspace" --backend-url "http://127.0.0.1:$port/v1" \
    --users "${USERS:-3}" --step-seconds "${SECS:-120}" --warmup-seconds 5 --floor-prompts 0 \
    --out "$out/$name/out" "${record[@]}" --settings "$settings" $more 2>&1 | tee "$out/$name.txt"
  kill "$fake"; wait "$fake" 2>/dev/null || true
  if [ "${SIM:-0}" = 1 ]; then
    "$py" "$repo/benchmarks/load/prompt_cache_sim.py" "$out/$name/trace" --tokenizer "$tokenizer" \
      | tee "$out/$name.sim.txt"
  fi
done
