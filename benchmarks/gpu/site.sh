#!/usr/bin/env bash
# ON THE GPU MACHINE, sourced by the gpu_*.sh benchmarks: our Python packages, the whole
# pinned closure from the carried $stage/wheels (benchmarks/gpu/stage_eval.sh), into one
# folder of their own ($site) put first on PYTHONPATH for our processes only (vLLM runs
# with its own site). Skipped when the same wheels were installed already on this machine.
# Expects: repo, py, stage, site, and a `step` function.
stamp="$site/.headstart-wheels"
if [ -d "$stage/wheels" ]; then
  wanted=$(cd "$stage/wheels" && ls -- *.whl | sort)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    step "installing $(echo "$wanted" | wc -l) wheels into $site"
    rm -rf "$site"
    if ! "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --target "$site" "$stage"/wheels/*.whl; then
      step "pip failed; unpacking the wheels instead"
      rm -rf "$site" && mkdir -p "$site"
      for wheel in "$stage"/wheels/*.whl; do "$py" -m zipfile -e "$wheel" "$site" || return 1; done
    fi
    echo "$wanted" > "$stamp"
  fi
elif [ ! -f "$stamp" ]; then
  echo "no $stage/wheels carried and nothing installed in $site yet"; return 1
fi
export PYTHONPATH="$site"
PYTHONPATH="$site:$repo" "$py" - <<'EOF' || { echo "the server cannot be imported"; return 1; }
import importlib.metadata as md, sys
import server.lsp.handlers, cache.index, tree_sitter_language_pack as pack
pack.get_parser("python")
names = ["pygls", "lsprotocol", "pydantic", "httpx", "anyio", "typing_extensions", "tree-sitter"]
print(sys.version.split()[0], ", ".join(f"{n} {md.version(n)}" for n in names))
EOF

