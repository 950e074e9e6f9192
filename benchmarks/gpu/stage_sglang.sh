#!/bin/bash
# Build SGLang 0.5.17 (+ the packages the GPU machine lacks) as gzip chunks small enough to
# carry to the GPU machine one call at a time (each call carries at most 64 MiB), for the
# engine comparison (vLLM / SGLang / TensorRT-LLM, see server/backend/engines.py).
# 0.5.17 is the last SGLang on torch 2.11.0, the device's torch (0.5.18+ want 2.13/2.14).
#   usage: benchmarks/gpu/stage_sglang.sh OUTDIR     (e.g. .gpu inside your checkout, ignored by git)
# Produces OUTDIR/sglang.partNN: one gzipped tar of a site folder, to unpack on the device into
# ~/sgsite and put in front of its own packages (PYTHONPATH=~/sgsite; benchmarks/gpu/sglang.sh).
# The wheels are the pinned closure in benchmarks/gpu/sglang_requirements.txt (the device's torch,
# triton, CUDA libraries etc. left out). Cached in ~/.cache/headstart-gpu/sglang: a rerun is
# instant; delete sglang.tar.gz there after editing the requirements.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: gpu/stage_sglang.sh OUTDIR}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/headstart-gpu/sglang
mkdir -p "$cache/wheels" "$out"
if [ ! -f "$cache/sglang.tar.gz" ]; then
  # sglang 0.5.17 itself is cp312 manylinux_2_34 (the device needs glibc >= 2.34).
  plat=""
  for p in manylinux_2_34 manylinux_2_31 manylinux_2_28 manylinux_2_27 manylinux_2_26 manylinux_2_24 \
           manylinux_2_17 manylinux2014 manylinux_2_12 manylinux2010 manylinux_2_5 manylinux1; do
    plat="$plat --platform ${p}_x86_64"
  done
  # The machine-wide constraints file (if any) must not veto these pins.
  PIP_CONSTRAINT= python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp $plat -d "$cache/wheels" -r "$here/sglang_requirements.txt" 2>&1 \
    | grep -v "^WARNING: Location" || true
  # Exactly the pinned wheels: an older cached version of a package must not slip in.
  wheels=()
  while read -r req; do
    name=${req%%==*}; version=${req#*==}
    stem=$(echo "$name" | tr '-' '_')
    found=$(ls "$cache"/wheels/ | grep -i "^${stem}-${version}-" | head -1 || true)
    [ -n "$found" ] || { echo "missing wheel for $req" >&2; exit 1; }
    wheels+=("$cache/wheels/$found")
  done < <(grep -v '^#' "$here/sglang_requirements.txt" | grep '==')
  site=$(mktemp -d)
  # Unzip keeping the files' modes: nvcc, cicc and ptxas (flashinfer's and triton's JIT) must
  # stay executable, which `python3 -m zipfile -e` would lose.
  python3 - "$site" "${wheels[@]}" <<'PY'
import os, sys, zipfile
site = sys.argv[1]
for wheel in sys.argv[2:]:
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            path = z.extract(info, site)
            mode = (info.external_attr >> 16) & 0o777
            if mode and not info.is_dir():
                os.chmod(path, mode | 0o644)
PY
  # Not needed on an H200 (driver 580 = CUDA 13) with Python 3.12: CUTLASS DSL's CUDA 12 flavour
  # (it picks the newest flavour the driver supports, cu13), wheels' .data folders (console
  # scripts, z3's binary), compiled bytecode.
  rm -rf "$site"/nvidia_cutlass_dsl/cu12 "$site"/nvidia_cutlass_dsl/dsl_packages/cutlass/_mlir/_mlir_libs/_cutlass_ir.cu12.*.so
  rm -rf "$site"/*.data
  find "$site" -name __pycache__ -type d -prune -exec rm -rf {} +
  # PYTHONPATH does not run .pth files: nvidia_cutlass_dsl_packages.pth puts
  # nvidia_cutlass_dsl/dsl_packages on sys.path (the `cutlass` package), so the device
  # needs PYTHONPATH=~/sgsite:~/sgsite/nvidia_cutlass_dsl/dsl_packages (gpu/sglang.sh does).
  tar -C "$site" -cf - . | gzip -1 > "$cache/sglang.tar.gz.tmp" && mv "$cache/sglang.tar.gz.tmp" "$cache/sglang.tar.gz"
  rm -rf "$site"
fi
rm -f "$out"/sglang.part*
split -b 52M -d "$cache/sglang.tar.gz" "$out/sglang.part"  # + the working tree <= 64 MiB
ls -la "$out"/sglang.part*
