#!/usr/bin/env bash
# Times leaklint-cpp (cold cache, warm cache) against clang-tidy-19 on the same LibTorch
# translation units, one process per tool run, sequentially (per-TU numbers), and prints a
# markdown table (docs/performance-cpp.md records one run).
#
# usage: bench/cpp_bench.sh [-b LEAKLINT_CPP] [-t CLANG_TIDY] [-n N] [FILE.cpp ...]
#   default files: the first N (default 8) C++ fixtures under tests/fixtures (all with -n 0)
#   clang-tidy runs one cheap check (bugprone-use-after-move): its cost is parsing the TU,
#   which is what both tools must do.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
bin=""
tidy="$(command -v clang-tidy-19 || command -v clang-tidy || true)"
n=8
while getopts "b:t:n:h" opt; do
  case "$opt" in
    b) bin="$OPTARG" ;;
    t) tidy="$OPTARG" ;;
    n) n="$OPTARG" ;;
    *) sed -n '2,9p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ -z "$bin" ]; then
  for cand in "$here/build-cpp/leaklint-cpp" "$here/build/leaklint-cpp" "$(command -v leaklint-cpp || true)"; do
    [ -n "$cand" ] && [ -x "$cand" ] && { bin="$cand"; break; }
  done
fi
[ -x "$bin" ] || { echo "cpp_bench: leaklint-cpp not found (build with -DLEAKLINT_ENABLE_CPP=ON, or -b PATH)" >&2; exit 2; }

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(find "$here/tests/fixtures" -name '*.cpp' | sort)
  if [ "$n" -gt 0 ] && [ ${#files[@]} -gt "$n" ]; then files=("${files[@]:0:$n}"); fi
fi
[ ${#files[@]} -gt 0 ] || { echo "cpp_bench: no files" >&2; exit 2; }

inc=/usr/include/torch/csrc/api/include
[ -n "${LIBTORCH:-}" ] && inc="$LIBTORCH/include/torch/csrc/api/include -isystem $LIBTORCH/include"
flags=(-std=c++17 -isystem $inc -w)

cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT

# run LABEL CMD... : appends "wall user sys" of one run to $tmp/LABEL
tmp="$(mktemp -d)"
run() {
  local label="$1"; shift
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/one" "$@" >/dev/null 2>"$tmp/err" || {
    echo "cpp_bench: failed: $*" >&2; tail -5 "$tmp/err" >&2; }
  cat "$tmp/one" >> "$tmp/$label"
}

echo "cpp_bench: ${#files[@]} TUs; leaklint-cpp=$bin; clang-tidy=${tidy:-none}; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# Cold: an empty cache; the first TU builds the shared LibTorch PCH.
first=1
for f in "${files[@]}"; do
  if [ $first -eq 1 ]; then run cold_first env LEAKLINT_CACHE_DIR="$cache" "$bin" --no-source "$f"; first=0
  else run cold_rest env LEAKLINT_CACHE_DIR="$cache" "$bin" --no-source "$f"; fi
done
# Warm: the same cache, a second run.
for f in "${files[@]}"; do run warm env LEAKLINT_CACHE_DIR="$cache" "$bin" --no-source "$f"; done
# No cache at all (every TU parses LibTorch itself, header function bodies skipped).
for f in "${files[@]}"; do run nocache "$bin" --no-cache --no-source "$f"; done
# Syntactic only (no Clang): the floor.
for f in "${files[@]}"; do run syntactic "$bin" --syntactic-only --no-source "$f"; done
if [ -n "$tidy" ]; then
  for f in "${files[@]}"; do run tidy "$tidy" --quiet --checks='-*,bugprone-use-after-move' "$f" -- "${flags[@]}"; done
fi

stats() {  # mean wall, mean user+sys, max RSS MiB, count
  awk '{w+=$1; c+=$2+$3; if ($4>m) m=$4; n++} END {if (n) printf "%.2f | %.2f | %.0f | %d", w/n, c/n, m/1024, n}' "$1"
}
echo
echo "| run | mean wall s/TU | mean CPU s/TU | max RSS MiB | TUs |"
echo "|---|---|---|---|---|"
echo "| leaklint-cpp, cold cache: first TU (builds the LibTorch PCH) | $(stats "$tmp/cold_first") |"
[ -f "$tmp/cold_rest" ] && echo "| leaklint-cpp, cold cache: other TUs | $(stats "$tmp/cold_rest") |"
echo "| leaklint-cpp, warm cache | $(stats "$tmp/warm") |"
echo "| leaklint-cpp --no-cache | $(stats "$tmp/nocache") |"
echo "| leaklint-cpp --syntactic-only | $(stats "$tmp/syntactic") |"
[ -f "$tmp/tidy" ] && echo "| $(basename "$tidy") (one check) | $(stats "$tmp/tidy") |"
rm -rf "$tmp"
