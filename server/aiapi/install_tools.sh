#!/usr/bin/env bash
# Installs what `headstart aiapi generate --verify` runs besides Python, and only what is
# missing, so a second run takes a second:
#   - Debian's golang-go (gofmt, go vet): no Go module proxy is needed, the generated Go
#     package uses the standard library only;
#   - @hey-api/openapi-ts, typescript and zod from npm into .tools/aiapi-node (git-ignored),
#     at the versions of server/aiapi/node/package-lock.json.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOLS=${HEADSTART_TOOLS:-$ROOT/.tools}
NODE_DIR=$TOOLS/aiapi-node
LOCK=$ROOT/server/aiapi/node/package-lock.json

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

stamp=$NODE_DIR/.installed-$(sha256sum "$LOCK" | cut -c1-16)
if [ -f "$stamp" ] && [ -x "$NODE_DIR/node_modules/.bin/openapi-ts" ]; then
  exit 0
fi
step "@hey-api/openapi-ts, typescript and zod into $NODE_DIR"
rm -rf "$NODE_DIR"
mkdir -p "$NODE_DIR"
cp "$ROOT/server/aiapi/node/package.json" "$LOCK" "$NODE_DIR/"
(cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error)
touch "$stamp"
