#!/usr/bin/env bash
# The same `headstart bench run` (3 editors, 60 s, seed 0) against the fake model for two
# checkouts, one after the other, and each run's backend requests counted by priority
# (0 keystroke, 2 prefetch) from its request traces: what a change does to the requests a
# typing user sends, without a GPU. The fake's suggestions are never the real text, so no
# suggestion is ever accepted.
#   usage: benchmarks/load/requests_ab.sh BEFORE_TREE AFTER_TREE [OUT]   (e.g. a `git worktree`)
set -u
before=${1:?checkout before}; after=${2:?checkout after}; out=${3:-/tmp/requests-ab}
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-$repo/.venv/bin/python}
rm -rf "$out" && mkdir -p "$out"
port=18433
"$py" "$repo/tests/fake_openai.py" --port "$port" --quiet > "$out/fake.log" 2>&1 &
fake=$!
trap 'kill $fake' EXIT
sleep 2
for tree in "$before" "$after"; do
  name=$(basename "$tree")
  (cd "$tree" && PYTHONPATH="$tree" "$py" -m server bench run \
     --backend-url "http://127.0.0.1:$port/v1" --users 3 --step-seconds 60 --warmup-seconds 5 \
     --floor-prompts 0 --record "$out/$name-traces" --out "$out/$name" > "$out/$name.txt" 2>&1)
  "$py" - "$out/$name-traces" "$name" <<'PY'
import collections, json, pathlib, sys
count = collections.Counter()
for trace in pathlib.Path(sys.argv[1]).glob("*.jsonl"):
    for line in trace.read_text().splitlines():
        count[json.loads(line)["body"].get("priority", 0)] += 1
total = sum(count.values())
print(f"{sys.argv[2]}: {total} requests, by priority {dict(sorted(count.items()))}, "
      f"prefetches {100 * count[2] / max(total, 1):.1f}%")
PY
  tail -2 "$out/$name.txt" | head -1
done
