#!/usr/bin/env bash
# Obtains a tree-sitter grammar (python: the Python frontend; cpp: the C++ fallback lowering)
# from the npm registry, pinned by version AND integrity hash, and unpacks its generated
# parser into DEST. Nothing is committed.
# usage: fetch-grammar.sh [python|cpp] DEST   (the language defaults to python)
#   LEAKLINT_GRAMMAR_TGZ=FILE (python) / LEAKLINT_CPP_GRAMMAR_TGZ=FILE (cpp): use that
#   tarball, offline.
set -euo pipefail
lang=python
if [ "$#" -ge 2 ]; then lang=$1; shift; fi
DEST=${1:?usage: fetch-grammar.sh [python|cpp] DEST}
case "$lang" in
  python)
    PACKAGE=tree-sitter-python
    VERSION=0.23.6
    INTEGRITY='sha512-yIM9z0oxKIxT7bAtPOhgoVl6gTXlmlIhue7liFT4oBPF/lha7Ha4dQBS82Av6hMMRZoVnFJI8M6mL+SwWoLD3A=='
    OFFLINE=${LEAKLINT_GRAMMAR_TGZ:-}
    ;;
  cpp)
    # The newest tree-sitter-cpp whose parser is ABI 14 (Debian's libtree-sitter 0.20 loads 13-14).
    PACKAGE=tree-sitter-cpp
    VERSION=0.23.4
    INTEGRITY='sha512-qR5qUDyhZ5jJ6V8/umiBxokRbe89bCGmcq/dk94wI4kN86qfdV8k0GHIUEKaqWgcu42wKal5E97LKpLeVW8sKw=='
    OFFLINE=${LEAKLINT_CPP_GRAMMAR_TGZ:-}
    ;;
  *) echo "fetch-grammar: unknown grammar '$lang' (python or cpp)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)

stamp="$DEST/.fetched-$VERSION"
[ -f "$stamp" ] && [ -f "$DEST/src/parser.c" ] && exit 0

if [ -n "$OFFLINE" ]; then
  offline=$(mktemp -d)
  trap 'rm -rf "$offline"' EXIT
  cp "$OFFLINE" "$offline/$PACKAGE-$VERSION.tgz"
  export LEAKLINT_NPM_TGZ_DIR=$offline
fi
"$here/npm-fetch.sh" "$PACKAGE" "$VERSION" "$INTEGRITY" "$DEST" \
  package/src package/LICENSE package/package.json
grep -q "#define LANGUAGE_VERSION 14" "$DEST/src/parser.c" || {
  echo "fetch-grammar: unexpected $PACKAGE parser ABI (need 14 for tree-sitter 0.20)" >&2; exit 1; }
touch "$stamp"
