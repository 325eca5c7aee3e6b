#!/usr/bin/env bash
# Obtains the tree-sitter-python grammar from the npm registry, pinned by version AND
# integrity hash, and unpacks its generated parser into DEST. Nothing is committed.
# usage: fetch-grammar.sh DEST   (LEAKLINT_GRAMMAR_TGZ=FILE: use that tarball, offline)
set -euo pipefail
VERSION=0.23.6
INTEGRITY='sha512-yIM9z0oxKIxT7bAtPOhgoVl6gTXlmlIhue7liFT4oBPF/lha7Ha4dQBS82Av6hMMRZoVnFJI8M6mL+SwWoLD3A=='
DEST=${1:?usage: fetch-grammar.sh DEST}
here=$(cd "$(dirname "$0")" && pwd)

stamp="$DEST/.fetched-$VERSION"
[ -f "$stamp" ] && [ -f "$DEST/src/parser.c" ] && exit 0

if [ -n "${LEAKLINT_GRAMMAR_TGZ:-}" ]; then
  offline=$(mktemp -d)
  trap 'rm -rf "$offline"' EXIT
  cp "$LEAKLINT_GRAMMAR_TGZ" "$offline/tree-sitter-python-$VERSION.tgz"
  export LEAKLINT_NPM_TGZ_DIR=$offline
fi
"$here/npm-fetch.sh" tree-sitter-python "$VERSION" "$INTEGRITY" "$DEST" \
  package/src package/LICENSE package/package.json
grep -q "#define LANGUAGE_VERSION 14" "$DEST/src/parser.c" || {
  echo "fetch-grammar: unexpected parser ABI (need 14 for tree-sitter 0.20)" >&2; exit 1; }
touch "$stamp"
