#!/usr/bin/env bash
# Obtains the SARIF 2.1.0 JSON schema for the tests from the npm registry, pinned by
# version AND integrity hash: Microsoft's @microsoft/jest-sarif ships the SchemaStore copy
# of the OASIS schema (2.1.0-rtm.5; tests/integration/validate_sarif.py adds the few
# constraints the final errata schema tightened). Writes DEST/sarif-schema-2.1.0.json.
# usage: fetch-sarif-schema.sh DEST
set -euo pipefail
NAME=@microsoft/jest-sarif
VERSION=1.0.0-beta.0
INTEGRITY='sha512-A1fOhPd6Ic5iDk4F9YPw1qNB4XF+7+IviR7xl8r2F6QzQkx5cpY9LsGk2rExiFIEcBbjpVnSmwWGBukASkiQ9A=='
MEMBER=lib/schemas/sarif-2.1.0-rtm.5.json
DEST=${1:?usage: fetch-sarif-schema.sh DEST}
here=$(cd "$(dirname "$0")" && pwd)

out="$DEST/sarif-schema-2.1.0.json"
stamp="$DEST/.fetched-$VERSION"
[ -f "$stamp" ] && [ -f "$out" ] && exit 0
"$here/npm-fetch.sh" "$NAME" "$VERSION" "$INTEGRITY" "$DEST/pkg" "package/$MEMBER" package/package.json
mv "$DEST/pkg/$MEMBER" "$out"
touch "$stamp"
