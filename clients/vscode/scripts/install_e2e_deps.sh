#!/usr/bin/env bash
# Installs what the VS Code end-to-end test (tests/test_vscode_e2e.py) needs, and only
# what is missing, so a second run takes a second:
#   - Debian's chromium and ripgrep (apt);
#   - code-server from npm into .tools/code-server (git-ignored), whose install compiles
#     native modules (kerberos needs libkrb5-dev) and runs @vscode/ripgrep's postinstall,
#     which would download ripgrep from GitHub: this machine cannot reach it, so Debian's
#     rg is put where that postinstall looks first, its download cache.
# The extension's own npm packages come from `npm ci` (the Makefile's job).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
TOOLS=${HEADSTART_TOOLS:-$ROOT/.tools}
CODE_SERVER_VERSION=4.100.3  # the newest that runs on Node 20
# What code-server 4.100.3 pins (lib/vscode/npm-shrinkwrap.json) and the ripgrep-prebuilt
# release that @vscode/ripgrep 1.15.11's postinstall fetches (lib/postinstall.js: VERSION).
RIPGREP_NPM_VERSION=1.15.11
RIPGREP_RELEASE=v13.0.0-10

step() { printf '==> %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    echo "install_e2e_deps: need root (or sudo) for: $*" >&2
    exit 1
  fi
}

APT_UPDATED=
apt_install() {
  step "apt-get install $*"
  if [ -z "$APT_UPDATED" ]; then
    as_root apt-get update -qq
    APT_UPDATED=1
  fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v rg >/dev/null || missing+=(ripgrep)
if [ ${#missing[@]} -gt 0 ]; then
  apt_install "${missing[@]}"
fi

CS_DIR=$TOOLS/code-server
CS_PACKAGE=$CS_DIR/node_modules/code-server
CS_STAMP=$CS_DIR/.installed-$CODE_SERVER_VERSION
if [ -f "$CS_STAMP" ] && [ -f "$CS_PACKAGE/out/node/entry.js" ]; then
  exit 0
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" != 20 ]; then
  echo "install_e2e_deps: code-server $CODE_SERVER_VERSION needs Node 20, this is $(node --version)" >&2
  exit 1
fi

# the native modules of code-server's VS Code (node-pty, kerberos, spdlog…) are compiled here
build=()
[ -e /usr/include/gssapi/gssapi.h ] || build+=(libkrb5-dev)
command -v g++ >/dev/null || build+=(g++)
command -v make >/dev/null || build+=(make)
command -v python3 >/dev/null || build+=(python3)
if [ ${#build[@]} -gt 0 ]; then
  apt_install "${build[@]}"
fi
# node-gyp compiles against Node's headers: Debian's nodejs has them under /usr/include/node,
# so nothing is downloaded for them
if [ -z "${npm_config_nodedir:-}" ] && [ -f /usr/include/node/node_version.h ] &&
  [ "$(readlink -f "$(command -v node)")" = /usr/bin/node ]; then
  export npm_config_nodedir=/usr
fi

case "$(uname -m)" in
  x86_64) target=x86_64-unknown-linux-musl ;;
  aarch64) target=aarch64-unknown-linux-musl ;;
  *)
    echo "install_e2e_deps: no ripgrep cache recipe for $(uname -m)" >&2
    exit 1
    ;;
esac
scratch=$TOOLS/tmp
cache=$scratch/vscode-ripgrep-cache-$RIPGREP_NPM_VERSION
asset=$cache/ripgrep-$RIPGREP_RELEASE-$target.tar.gz
mkdir -p "$cache"
if [ ! -s "$asset" ]; then
  step "ripgrep for @vscode/ripgrep from $(command -v rg) ($(rg --version | head -1))"
  packing=$(mktemp -d)
  cp "$(command -v rg)" "$packing/rg"
  tar -czf "$asset" -C "$packing" rg
  rm -rf "$packing"
fi

step "code-server $CODE_SERVER_VERSION into $CS_DIR (a few minutes)"
rm -rf "$CS_DIR"
mkdir -p "$CS_DIR"
# TMPDIR: @vscode/ripgrep looks for its cache in os.tmpdir()
TMPDIR=$scratch npm_config_unsafe_perm=true npm_config_yes=true \
  npm install --prefix "$CS_DIR" --no-save --no-audit --no-fund --loglevel=error \
  "code-server@$CODE_SERVER_VERSION"
"$CS_PACKAGE/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" --version >/dev/null
node "$CS_PACKAGE/out/node/entry.js" --version
touch "$CS_STAMP"
