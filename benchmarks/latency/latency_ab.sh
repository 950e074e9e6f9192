#!/usr/bin/env bash
# HERE (no GPU): the server's own share of a keystroke's latency in two checkouts, run in
# turns (before, after, before, after, ...) so the machine's drift falls on both. Each run
# is `headstart bench run` (USERS 1,4, SECS 60 a step, seed 0: the same keys every run)
# against the fake model as an oracle (tests/fake_oracle.py), which answers at once, so
# what is left is Headstart's: every key, the suggestion-cache answers, model requests,
# and the transport (round trip less the server's own time) at p50/p99.
#
#   git worktree add /tmp/before HEAD~1
#   benchmarks/latency/latency_ab.sh /tmp/before . WORKSPACE TOKENIZER.json
#
# Env: USERS (1,4), SECS (60), ROUNDS (2), PORT (18462), OUT (/tmp/latency-ab),
#   PYTHON (.venv/bin/python).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
usage="usage: latency/latency_ab.sh BEFORE_TREE AFTER_TREE WORKSPACE TOKENIZER.json"
before=$(cd "${1:?$usage}" && pwd); after=$(cd "${2:?$usage}" && pwd)
workspace=$(cd "${3:?$usage}" && pwd); tokenizer=$(realpath "${4:?$usage}")
py=${PYTHON:-$repo/.venv/bin/python}; port=${PORT:-18462}; out=${OUT:-/tmp/latency-ab}
settings=$("$py" -c 'import json, sys
print(json.dumps({"completion": {"tokenizer": sys.argv[1]}, "backend": {"promptTokenIds": False}}))' \
  "$tokenizer")
rm -rf "$out" && mkdir -p "$out"
for round in $(seq "${ROUNDS:-2}"); do
  for arm in before after; do
    tree=$before; [ "$arm" = after ] && tree=$after
    name=$arm-$round
    (cd "$tree" && "$py" tests/fake_openai.py --port "$port" --quiet --oracle "$workspace" \
      --default-text "$(printf 'value = compute(items)\n')") > "$out/$name.fake.log" 2>&1 &
    fake=$!
    trap 'kill $fake 2>/dev/null || true' EXIT
    sleep 3
    # each checkout's own server: `python -m server` from its folder
    (cd "$tree" && "$py" -m server bench run "$workspace" --backend-url "http://127.0.0.1:$port/v1" \
      --users "${USERS:-1,4}" --step-seconds "${SECS:-60}" --warmup-seconds 5 --floor-prompts 0 \
      --out "$out/$name" --settings "$settings") > "$out/$name.log" 2>&1
    kill "$fake"; wait "$fake" 2>/dev/null || true
    "$py" - "$out/$name/results.json" "$name" <<'PY'
import json, sys
for step in json.load(open(sys.argv[1]))["steps"]:
    def q(d): return f"{d['p50']:.2f} / {d['p99']:.1f}"
    print(f"{sys.argv[2]:9} {step['users']:>2} users, {step['keys']} keys: every key {q(step['keystrokeToSuggestionMs'])}"
          f"  cache answers {q(step['cacheHitsMs'])}  model requests {q(step['modelRequestsMs'])}"
          f"  transport {q(step['stagesMs']['transport'])} ms")
PY
  done
done | tee "$out/summary.txt"
