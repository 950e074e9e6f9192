#!/usr/bin/env bash
# Installs what `headstart aiapi generate --verify` runs besides Python, and only what is
# missing, so a second run takes a second:
#   - Debian's golang-go (gofmt, go vet): no Go module proxy is needed, the generated Go
#     package uses the standard library only;
#   - @hey-api/openapi-ts, typescript, zod and prettier from npm into .tools/aiapi-node
#     (git-ignored), at the versions of server/aiapi/node/package-lock.json;
#   - Prism (@stoplight/prism-cli), the mock the contract tests call, into
#     .tools/aiapi-mock, at the versions of server/aiapi/mock/package-lock.json;
#   - @types/node and vitest, which the TypeScript server stub and test skeleton are
#     checked and run with, into .tools/aiapi-scaffold (server/aiapi/scaffold).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOLS=${HEADSTART_TOOLS:-$ROOT/.tools}
NODE_DIR=$TOOLS/aiapi-node

step() { printf '==> %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    echo "install_tools: need root (or sudo) for: $*" >&2
    exit 1
  fi
}

if ! command -v go >/dev/null || ! command -v gofmt >/dev/null; then
  step "apt-get install golang-go"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    golang-go >/dev/null
fi

# npm_ci DIR SOURCE: the package.json and lock of SOURCE installed into DIR, unless there
npm_ci() {
  local dir=$1 source=$2
  local stamp
  stamp=$dir/.installed-$(sha256sum "$source/package-lock.json" | cut -c1-16)
  if [ -f "$stamp" ]; then
    return 0
  fi
  step "npm ci $(basename "$source") into $dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$source/package.json" "$source/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  touch "$stamp"
}

npm_ci "$NODE_DIR" "$ROOT/server/aiapi/node"
npm_ci "$TOOLS/aiapi-mock" "$ROOT/server/aiapi/mock"
npm_ci "$TOOLS/aiapi-scaffold" "$ROOT/server/aiapi/scaffold"
