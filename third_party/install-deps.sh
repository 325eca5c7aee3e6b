#!/usr/bin/env bash
# Installs what leaklint needs to build and test on Debian bookworm (run as root), and
# nothing that is already there. Third-party sources are never committed: the
# tree-sitter-python and tree-sitter-cpp grammars are fetched at build time by
# third_party/fetch-grammar.sh.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  nodejs npm
  libtree-sitter-dev
  libclang-19-dev llvm-19-dev clang-19 libclang-rt-19-dev clang-tidy-19
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libssl-dev libmimalloc-dev
  libgtest-dev libgmock-dev
  libtorch-dev python3-torch python3-numpy python3-matplotlib
  python3-jsonschema python3-yaml pre-commit python3-flake8 time
)

missing=()
for p in "${PKGS[@]}"; do
  # nodejs/npm may come from another source (e.g. NodeSource); the commands are enough.
  case "$p" in
    nodejs) command -v node >/dev/null 2>&1 && continue ;;
    npm) command -v npm >/dev/null 2>&1 && continue ;;
  esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages and not root; run: sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: all Debian packages present" >&2
fi
