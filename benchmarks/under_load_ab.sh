#!/usr/bin/env bash
# HERE (no GPU): what `completion.contextTokensUnderLoad` does to real editors against the
# fake model made compute-bound (tests/fake_openai.py --prefill-tokens-per-s RATE): one
# `headstart bench run` with it off (0) and one with it at UNDER_LOAD, each against a
# fresh fake. Writes $OUT/off and $OUT/on (results.json; the table is printed).
#
#   RATE=4000 benchmarks/under_load_ab.sh WORKSPACE TOKENIZER.json
#
# Env: RATE (4000 prompt tokens a second), UNDER_LOAD (2048), USERS (4), SECS (60),
#   PORT (18451), OUT (/tmp/under-load-RATE), PYTHON (.venv/bin/python).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
workspace=${1:?usage: under_load_ab.sh WORKSPACE TOKENIZER.json}
tokenizer=${2:?usage: under_load_ab.sh WORKSPACE TOKENIZER.json}
rate=${RATE:-4000}; port=${PORT:-18451}; py=${PYTHON:-$repo/.venv/bin/python}
out=${OUT:-/tmp/under-load-$rate}
for arm in off:0 on:${UNDER_LOAD:-2048}; do
  name=${arm%%:*}
  "$py" "$repo/tests/fake_openai.py" --port "$port" --prefill-tokens-per-s "$rate" --quiet \
    --default-text "$(printf 'value = compute(items)\n')" &
  fake=$!
  trap 'kill $fake 2>/dev/null || true' EXIT
  sleep 3
  echo "== contextTokensUnderLoad ${arm#*:}"
  "$py" -m server bench run "$workspace" --backend-url "http://127.0.0.1:$port/v1" \
    --users "${USERS:-4}" --step-seconds "${SECS:-60}" --warmup-seconds 5 --floor-prompts 0 \
    --out "$out/$name" \
    --settings "{\"completion\":{\"tokenizer\":\"$tokenizer\",\"contextTokensUnderLoad\":${arm#*:}}}"
  kill "$fake"; wait "$fake" 2>/dev/null || true
done
