#!/usr/bin/env bash
# ON THE GPU MACHINE, once the parts of gpu/stage_bundle.sh are in ~/stage/bp and ~/gg:
# unpack the bundle into ~/b (STAGE=~/b for the other gpu/ scripts: our wheels, the task
# sets), vLLM into ~/site, dequantize the GGUF into ~/models/real15, and start vLLM on it as
# the bench runs it: `--scheduling-policy priority`, `--gpu-memory-utilization` UTIL (0.9),
# and VLLM_SERVER_DEV_MODE=1 so a run can empty the prefix cache first
# (`curl -X POST http://127.0.0.1:8000/reset_prefix_cache`).
# Env: NG (the number of weight parts stage_bundle.sh printed), UTIL (0.9), EXTRA (more
# vLLM flags). Restart vLLM alone (another UTIL or EXTRA): SERVE_ONLY=1.
set -uo pipefail
if [ -z "${SERVE_ONLY:-}" ]; then
  ng=${NG:?NG: the number of weight parts}
  have=$(ls ~/gg | wc -l)
  [ "$have" = "$ng" ] || { echo "weight parts: $have of $ng in ~/gg; send the missing ones again"; exit 1; }
  rm -rf ~/b && mkdir -p ~/b ~/site ~/gguf
  cat ~/stage/bp/p* | tar -x -C ~/b || { echo "the bundle's parts do not join; send them again"; exit 1; }
  tar -xzf ~/b/vllm.tar.gz -C ~/site || exit 1
  rm -rf ~/ggufsite && python3 -m zipfile -e ~/b/extra/gguf-*.whl ~/ggufsite || exit 1
  cat ~/gg/g* > ~/gguf/model.gguf
  echo "weights sha256 $(sha256sum ~/gguf/model.gguf | cut -c1-16)"
  # the parts stay until the conversion has worked: a failed one can be run again
  PYTHONPATH=~/ggufsite:~/site python3 ~/b/convert_gguf.py ~/gguf model.gguf \
    ~/b/models/qwen2.5-coder-1.5b ~/models/real15 || exit 1
  rm -rf ~/gguf ~/gg ~/stage
fi
[ -f ~/vllm.pid ] && kill "$(cat ~/vllm.pid)" 2>/dev/null && sleep 5
# shellcheck disable=SC2086  # EXTRA is a list of flags
VLLM_SERVER_DEV_MODE=1 LOAD_FORMAT=auto bash ~/b/serve_vllm.sh ~/models/real15 q15 8000 \
  --scheduling-policy priority --gpu-memory-utilization "${UTIL:-0.9}" ${EXTRA:-} || exit 1
grep -m1 "KV cache size" ~/vllm_q15.log
