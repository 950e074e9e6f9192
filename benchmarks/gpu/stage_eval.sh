#!/usr/bin/env bash
# HERE (PyPI reachable): stage what benchmarks/gpu/eval.sh needs on the GPU machine.
#   usage: benchmarks/gpu/stage_eval.sh [STAGE_DIR]     (default: .gpu of this checkout)
#   TASK_SET (dev, heldout or unseen): the packages of benchmarks/quality/${TASK_SET}_packages.txt,
#   made by benchmarks/quality/make_tasks.py with the list's seed (SEED overrides it);
#   heldout: packages never looked at while tuning; unseen: in neither other list
# STAGE_DIR must be git-ignored (.gpu/ is, through .git/info/exclude) in the checkout whose
# working tree the device tool sends. Leaves there:
#   wheels/           the cp312 manylinux wheels of benchmarks/gpu/requirements.txt (~35 MB)
#   eval/dev/         the dev task set (make_tasks.py; made once, ~29 MB unpacked)
#   eval/dev.tar.xz   the task set, to carry (~7 MB)
# Env: EVAL_PYTHON (a python with pip, for make_tasks.py's sdist downloads; default python3).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(mkdir -p "${1:-$repo/.gpu}" && cd "${1:-$repo/.gpu}" && pwd)
py=${EVAL_PYTHON:-python3}
set_name=${TASK_SET:-dev}
packages=$repo/benchmarks/quality/${set_name}_packages.txt
[ -f "$packages" ] || { echo "no $packages" >&2; exit 1; }
seed=(); [ -n "${SEED:-}" ] && seed=(--seed "$SEED")

# The checkout that holds the stage folder is the one whose working tree travels.
top=$(git -C "$(dirname "$stage")" rev-parse --show-toplevel 2>/dev/null || dirname "$stage")
if ! git -C "$top" check-ignore -q "$stage"; then
  echo "warning: $stage is not git-ignored; add it to .git/info/exclude or it travels as source" >&2
fi

# 1. The dev task set (sdists from PyPI; make_tasks.py caches them). `pip download` builds
#    each sdist's metadata, which fails offline for build backends made from source
#    (dnspython's uv_build, maturin): each archive is fetched from the simple index first.
sdists=${XDG_CACHE_HOME:-$HOME/.cache}/headstart-eval/sdists
mkdir -p "$sdists"
grep -v '^#' "$packages" | grep '==' | while read -r spec; do
  name=${spec%%==*} version=${spec##*==}
  ls "$sdists" | grep -qi "^${name//[-_.]/[-_.]}-$version\.\(tar\.gz\|zip\)$" && continue
  url=$(curl -sf "https://pypi.org/simple/$name/" | grep -io "href=\"[^\"]*/[^/\"]*-$version\.tar\.gz[#\"]" \
    | head -1 | sed 's/^href="//; s/[#"]$//') || true
  [ -n "$url" ] && (cd "$sdists" && curl -sfO "$url") || echo "no sdist link for $spec: make_tasks.py asks pip" >&2
done
if [ ! -f "$stage/eval/$set_name/tasks.jsonl" ]; then
  "$py" "$repo/benchmarks/quality/make_tasks.py" --packages "$packages" "${seed[@]}" \
    --out "$stage/eval/$set_name"
fi

# 2. One archive: the tasks and their repositories (the scripts travel with the checkout:
#    benchmarks/quality).
tar -cJf "$stage/eval/$set_name.tar.xz.tmp" -C "$stage/eval" "$set_name"
mv "$stage/eval/$set_name.tar.xz.tmp" "$stage/eval/$set_name.tar.xz"

# 3. Wheels: exactly the pinned set, one version of each (two would stop the install).
mkdir -p "$stage/wheels"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 \
  -d "$stage/wheels" -r "$repo/benchmarks/gpu/requirements.txt" 2>&1 | grep -v "^WARNING: Location" || true
python3 - "$stage/wheels" "$repo/benchmarks/gpu/requirements.txt" <<'EOF'
import re, sys
from pathlib import Path
norm = lambda name: re.sub(r"[-_.]+", "_", name).lower()
wanted = {tuple(map(str.strip, line.split("#")[0].split("=="))) for line in open(sys.argv[2])}
wanted = {(norm(n), v) for n, *v in wanted if n for v in v}
have = {}
for wheel in Path(sys.argv[1]).glob("*.whl"):
    name, version = wheel.name.split("-")[:2]
    if (norm(name), version) in wanted:
        have[norm(name)] = wheel
    else:
        print(f"removing {wheel.name}: not in gpu/requirements.txt")
        wheel.unlink()
missing = sorted(n for n, _ in wanted if n not in have)
if missing:
    sys.exit(f"missing wheels: {missing}")
EOF

wheels=$(du -sm "$stage/wheels" | cut -f1)
data=$(du -sm "$stage/eval/$set_name.tar.xz" | cut -f1)
tree=$(cd "$top" && { git ls-files -z; git ls-files -z --others --exclude-standard; } | du -cm --files0-from=- 2>/dev/null | tail -1 | cut -f1)
echo "staged in $stage: wheels ${wheels} MB, eval/$set_name.tar.xz ${data} MB; working tree ~${tree} MB"
echo "one call carries $((wheels + data + tree)) MB of at most 64 MiB:"
rel=${stage#"$top"/}
echo "  carry [\"$rel/wheels\", \"$rel/eval/$set_name.tar.xz\"]  command: TASK_SET=$set_name bash benchmarks/gpu/eval.sh"
