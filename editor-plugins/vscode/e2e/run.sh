#!/usr/bin/env bash
# The owt extension in a real VS Code: installs what it needs once
# (install.sh: Chromium, Node 24, code-server; npm ci of the driver), builds
# the .vsix unless $OWT_VSIX names one, then runs every scenario against the
# real `owt` ($OWT_BIN, else target/debug/owt). Screenshots go to
# $OWT_E2E_ARTIFACTS (default target/vscode-e2e). Last line: node's test
# summary. Arguments are passed to `node --test` (e.g. --test-name-pattern).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ext="$(dirname "$here")"
root="$(cd "$ext/../.." && pwd)"

# Tools: code-server, Node 24, Chromium (cached under .test-deps/vscode-e2e).
while IFS='=' read -r key value; do
  export "$key=$value"
done < <("$here/install.sh")

# The driver (puppeteer-core), reinstalled only when its lock changes.
stamp="$here/node_modules/.owt-lock-stamp"
lock_sum="$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$lock_sum" ]; then
  echo "vscode-e2e: npm ci (puppeteer-core)" >&2
  (cd "$here" && "$root/scripts/retry" 3 npm ci --loglevel=error --no-audit --no-fund --ignore-scripts)
  echo "$lock_sum" >"$stamp"
fi

if [ -z "${OWT_BIN:-}" ]; then
  (cd "$root" && cargo build -q -p owt)
  OWT_BIN="$root/target/debug/owt"
fi
export OWT_BIN

cd "$ext"
# The extension's own dependencies (esbuild, vsce), reinstalled when its lock changes.
ext_stamp="node_modules/.owt-lock-stamp"
ext_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat "$ext_stamp" 2>/dev/null)" != "$ext_sum" ]; then
  "$root/scripts/retry" 3 npm ci --loglevel=error --no-audit --no-fund
  echo "$ext_sum" >"$ext_stamp"
fi
if [ -z "${OWT_VSIX:-}" ]; then
  npm run --silent package >/dev/null
  OWT_VSIX="$ext/$(node -p "const p=require('./package.json'); p.name+'-'+p.version+'.vsix'")"
fi
export OWT_VSIX
export OWT_E2E_ARTIFACTS="${OWT_E2E_ARTIFACTS:-$root/target/vscode-e2e}"
# This run's pictures only (every suite adds to the folder).
rm -rf "$OWT_E2E_ARTIFACTS" && mkdir -p "$OWT_E2E_ARTIFACTS"

node -e "require('fs').rmSync('e2e/out',{recursive:true,force:true})"
node_modules/.bin/tsc -p e2e
echo "vscode-e2e: VS Code $(node -p "require('$(dirname "$(dirname "$(readlink -f "$CODE_SERVER")")")/lib/vscode/package.json').version" 2>/dev/null || echo '?'), owt $("$OWT_BIN" --version), screenshots in $OWT_E2E_ARTIFACTS" >&2
# Neovim (scripts/test installs 0.11 into .venv-nvim) always; Helix only
# when $OWT_HELIX names a binary (nothing here installs Helix 25.07+).
export NVIM="${NVIM:-$root/.venv-nvim/bin/nvim}"
suites=(e2e/out/e2e/src/vscode.test.js e2e/out/e2e/src/neovim.test.js)
if [ -n "${OWT_HELIX:-}" ]; then
  suites+=(e2e/out/e2e/src/helix.test.js)
else
  echo "vscode-e2e: no \$OWT_HELIX: the Helix suite does not run" >&2
fi
exec node --test --test-concurrency=1 "$@" "${suites[@]}"
