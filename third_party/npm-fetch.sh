#!/usr/bin/env bash
# Downloads one npm registry package, pinned by version AND integrity hash, and unpacks the
# named members into DEST. Shared by every fetch-*.sh here; nothing fetched is committed.
# usage: npm-fetch.sh NAME VERSION INTEGRITY DEST MEMBER...
#   INTEGRITY is npm's dist.integrity ("sha512-" + base64 of the tarball's SHA-512);
#   MEMBERs are paths inside the tarball (package/...), extracted with the leading
#   "package/" stripped. LEAKLINT_NPM_TGZ_DIR=DIR takes NAME-VERSION.tgz from DIR instead
#   of the registry (offline builds).
set -euo pipefail
name=${1:?usage: npm-fetch.sh NAME VERSION INTEGRITY DEST MEMBER...}
version=${2:?}; integrity=${3:?}; dest=${4:?}; shift 4
((${#@})) || { echo "npm-fetch: no member to extract" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flat=${name//\//-}; flat=${flat#@}
tarball="$tmp/$flat-$version.tgz"
if [ -n "${LEAKLINT_NPM_TGZ_DIR:-}" ] && [ -f "$LEAKLINT_NPM_TGZ_DIR/$flat-$version.tgz" ]; then
  cp "$LEAKLINT_NPM_TGZ_DIR/$flat-$version.tgz" "$tarball"
else
  mkdir "$tmp/pack"
  (cd "$tmp/pack" && npm pack --silent "$name@$version" >/dev/null)
  mv "$tmp"/pack/*.tgz "$tarball"
fi
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$integrity" ]; then
  echo "npm-fetch: integrity mismatch for $name@$version" >&2
  echo "  expected $integrity" >&2
  echo "  actual   $actual" >&2
  exit 1
fi
rm -rf "$dest"
mkdir -p "$dest"
tar -xzf "$tarball" -C "$dest" --strip-components=1 "$@"
