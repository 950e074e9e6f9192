#!/usr/bin/env bash
# ON THE GPU MACHINE, sourced first by the gpu_*.sh benchmarks: where things are, the run's
# log ($out/run.log, complete before $OUT is collected), `step`, and our Python packages
# (gpu/site.sh). Expects: repo, out. Env: PYTHON (python3), ENDPOINT
# (http://127.0.0.1:8000/v1), STAGE (.gpu of this checkout), HS_SITE (~/hs-site: our
# packages), HS_WORK (~/hs-eval: unpacked task sets).
py=${PYTHON:-python3}
endpoint=${ENDPOINT:-http://127.0.0.1:8000/v1}
stage=${STAGE:-$repo/.gpu}
site=${HS_SITE:-$HOME/hs-site}
work=${HS_WORK:-$HOME/hs-eval}
mkdir -p "$out" "$work"
exec > >(tee -a "$out/run.log") 2>&1
tee_pid=$!
trap 'exec >&- 2>&-; wait $tee_pid' EXIT  # run.log complete before $OUT is collected
export PYTHONUNBUFFERED=1
step() { echo "== $(date +%T) $*"; }
source "$repo/benchmarks/gpu/site.sh" || exit 1
