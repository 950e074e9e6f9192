#!/usr/bin/env bash
# HERE: everything a GPU session needs, in parts that each fit one device call beside the
# working tree (a call carries at most 64 MiB, the tree included), so a fresh machine is
# staged by a run of copy calls and one `gpu/setup.sh` (~400 s of device time in all).
#
# Before: ../shared/tools/gpu/stage_vllm.sh .gpu, stage_model.sh .gpu 1.5b and
# make_model_dirs.sh .gpu/models (../shared/tools/gpu/README.md), and
# benchmarks/gpu/stage_eval.sh (our wheels and the dev task set).
#   usage: benchmarks/gpu/stage_bundle.sh [STAGE_DIR]     (default: .gpu of this checkout)
# Leaves STAGE_DIR/bp/pNN (vLLM, our wheels, the task sets' archives, the tokenizer folder,
# the gguf reader, convert_gguf.py, serve_vllm.sh: one tar cut in pieces) and
# STAGE_DIR/gp/gNN (the GGUF weights), and prints the calls that carry them.
# Env: VLLM_TGZ (~/.cache/headstart-gpu/vllm.tar.gz), GGUF (the 1.5B Q4_K_M from
# fetch_model.sh), TOOLS (../shared/tools/gpu beside the checkout), PART_BYTES (what is left
# of 64 MiB beside the working tree, less 1 MiB).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
stage=$(mkdir -p "${1:-$repo/.gpu}" && cd "${1:-$repo/.gpu}" && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}
vllm_tgz=${VLLM_TGZ:-$cache/headstart-gpu/vllm.tar.gz}
gguf=${GGUF:-$cache/headstart-models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf}
tools=${TOOLS:-$repo/../shared/tools/gpu}

for need in "$vllm_tgz" "$gguf" "$stage/wheels" "$stage/eval/dev.tar.xz" \
  "$stage/models/qwen2.5-coder-1.5b/tokenizer.json" "$tools/convert_gguf.py" "$tools/serve_vllm.sh"; do
  [ -e "$need" ] || { echo "missing $need: run the staging scripts named at the top first" >&2; exit 1; }
done
whl=$(ls "$stage"/extra/gguf-*.whl 2>/dev/null | head -1)
[ -n "$whl" ] || { echo "missing $stage/extra/gguf-*.whl (stage_model.sh)" >&2; exit 1; }

if [ -z "${PART_BYTES:-}" ]; then
  tree=$(cd "$repo" && { git ls-files -z; git ls-files -z --others --exclude-standard; } \
    | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
  PART_BYTES=$((64 * 1024 * 1024 - tree - 1024 * 1024))
fi

bundle=$(mktemp -d)
trap 'rm -rf "$bundle"' EXIT
mkdir -p "$bundle/eval" "$bundle/extra" "$bundle/models"
ln -s "$vllm_tgz" "$bundle/vllm.tar.gz"
ln -s "$stage/wheels" "$bundle/wheels"
for archive in "$stage"/eval/*.tar.xz; do ln -s "$archive" "$bundle/eval/"; done
ln -s "$whl" "$bundle/extra/"
ln -s "$stage/models/qwen2.5-coder-1.5b" "$bundle/models/"
ln -s "$tools/convert_gguf.py" "$tools/serve_vllm.sh" "$bundle/"

rm -rf "$stage/bp" "$stage/gp"
mkdir -p "$stage/bp" "$stage/gp"
tar -chf - -C "$bundle" . | split -b "$PART_BYTES" -d -a 2 - "$stage/bp/p"
split -b "$PART_BYTES" -d -a 2 "$gguf" "$stage/gp/g"

rel=${stage#"$repo"/}
parts=$(ls "$stage/bp" | wc -l) chunks=$(ls "$stage/gp" | wc -l)
echo "staged $parts bundle parts and $chunks weight parts of at most $PART_BYTES bytes in $rel"
echo "device calls, back to back (each carries one part; the first call starts the machine):"
for part in "$stage"/bp/* "$stage"/gp/*; do
  dir=$([ "$(basename "$(dirname "$part")")" = bp ] && echo '~/stage/bp' || echo '~/gg')
  echo "  carry [\"$rel/${part#"$stage"/}\"]  mkdir -p ~/stage/bp ~/gg && cp $rel/${part#"$stage"/} $dir/"
done
echo "then: NG=$chunks bash benchmarks/gpu/setup.sh > ~/setup.log 2>&1; tail -n 30 ~/setup.log"
echo "and the runs with STAGE=~/b, e.g. NAME=single USERS=1 STEP=120 STAGE=~/b bash benchmarks/gpu/bench.sh"
