#!/usr/bin/env bash
# Obtains the tree-sitter-python grammar from the npm registry, pinned by version AND
# integrity hash, and unpacks its generated parser into DEST. Nothing is committed.
# usage: fetch-grammar.sh DEST
set -euo pipefail
VERSION=0.23.6
INTEGRITY='sha512-yIM9z0oxKIxT7bAtPOhgoVl6gTXlmlIhue7liFT4oBPF/lha7Ha4dQBS82Av6hMMRZoVnFJI8M6mL+SwWoLD3A=='
DEST=${1:?usage: fetch-grammar.sh DEST}

stamp="$DEST/.fetched-$VERSION"
[ -f "$stamp" ] && [ -f "$DEST/src/parser.c" ] && exit 0

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tarball="$tmp/tree-sitter-python-$VERSION.tgz"
if [ -n "${LEAKLINT_GRAMMAR_TGZ:-}" ]; then
  cp "$LEAKLINT_GRAMMAR_TGZ" "$tarball"
else
  (cd "$tmp" && npm pack --silent "tree-sitter-python@$VERSION" >/dev/null)
fi
# npm's integrity field is "sha512-" + base64 of the SHA-512 digest of the tarball.
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$INTEGRITY" ]; then
  echo "fetch-grammar: integrity mismatch for tree-sitter-python@$VERSION" >&2
  echo "  expected $INTEGRITY" >&2
  echo "  actual   $actual" >&2
  exit 1
fi
rm -rf "$DEST"
mkdir -p "$DEST"
tar -xzf "$tarball" -C "$DEST" --strip-components=1 package/src package/LICENSE package/package.json
grep -q "#define LANGUAGE_VERSION 14" "$DEST/src/parser.c" || {
  echo "fetch-grammar: unexpected parser ABI (need 14 for tree-sitter 0.20)" >&2; exit 1; }
touch "$stamp"
