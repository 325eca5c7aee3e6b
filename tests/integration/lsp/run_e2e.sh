#!/usr/bin/env bash
# Runs lsp_e2e.js against a leaklint binary. The pinned client (package-lock.json) is
# installed with `npm ci` into WORKDIR (a build directory, never the source tree), and only
# again when the lock file changes.
# usage: run_e2e.sh path/to/leaklint WORKDIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
binary=${1:?usage: run_e2e.sh path/to/leaklint WORKDIR}
work=${2:?usage: run_e2e.sh path/to/leaklint WORKDIR}

command -v node >/dev/null || { echo "run_e2e: node is not installed" >&2; exit 1; }
command -v npm >/dev/null || { echo "run_e2e: npm is not installed" >&2; exit 1; }

mkdir -p "$work"
stamp="$work/node_modules/.leaklint-lock.sha256"
want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  cp "$here/package.json" "$here/package-lock.json" "$work/"
  npm ci --prefix "$work" --no-audit --no-fund --loglevel=error
  echo "$want" >"$stamp"
fi
NODE_PATH="$work/node_modules" exec node "$here/lsp_e2e.js" "$binary"
