#!/usr/bin/env bash
# leaklint performance benchmark, run by hand (not a CTest test: its timings depend on the
# machine and on whatever else runs on it).
#
#   bench/run_bench.sh [--build DIR] [--repeat N] [--flake8-repeat N] [--no-flake8]
#                      [--instructions-every K] [--markdown-out FILE] [-v] CORPUS_DIR
#   bench/run_bench.sh --fetch-help      how to obtain the reference corpus
#
# CORPUS_DIR holds Python files (any layout); an optional CORPUS_DIR/SOURCES.txt with lines
# "NAME SOURCE COMMIT" (NAME = a top-level folder) describes where each part came from.
# The corpus is obtained for the run and never committed.
#
# In one run, on this machine, it times (wall, CPU = user+sys, peak RSS via /usr/bin/time -v):
#   leaklint_parse_only (tree-sitter only, 1 thread), leaklint --no-cache -j1 and -j2,
#   leaklint with a cold then a warm result cache, flake8 --select=F with 1 and 2 jobs,
# and prints a dated markdown report (corpus, machine, table, ratios vs targets) on stdout;
# docs/performance.md is written from it. --instructions-every K also counts the
# instructions (valgrind) of parse-only and leaklint -j1 over every K-th file: a CPU ratio
# that other load on a shared machine cannot disturb.
#
# Needs: a build of leaklint and leaklint_parse_only (bench/CMakeLists.txt; default build
# dir: build/), /usr/bin/time (Debian package `time`), flake8 for Debian's python3
# (`python3-flake8`).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
build="$repo/build"
args=()
corpus=""

fetch_help() {
  cat <<'EOF'
Obtaining the reference corpus (never commit it; keep it outside the repository):

mkdir -p /tmp/corpus/perf && cd /tmp/corpus/perf && : > SOURCES.txt
while read -r name repo commit; do
  git init -q "/tmp/corpus/.git-$name"
  git --git-dir="/tmp/corpus/.git-$name" fetch -q --depth 1 "https://github.com/$repo" "$commit"
  mkdir -p "$name"
  git --git-dir="/tmp/corpus/.git-$name" archive FETCH_HEAD -- ':(glob)**/*.py' | tar -x -C "$name"
  echo "$name github:$repo $commit" >> SOURCES.txt
done <<'LIST'
examples             pytorch/examples                    77f55b912142e11fcfdf5b530231fb9c52f181e8
pytorch-lightning    Lightning-AI/pytorch-lightning      7f0c3436cd3f6ad3753125672024fc415cbcb414
detectron2           facebookresearch/detectron2         02b5c4e295e990042a714712c21dc79b731e8833
pytorch-image-models rwightman/pytorch-image-models      899aa9420c60223cdd30ad345badec40c9021b0f
nanoGPT              karpathy/nanoGPT                    3adf61e154c3fe3fca428ad6bc3818b27a3b8291
accelerate           huggingface/accelerate              16cb6eb80dd9aa8b4df1a63ef57863e455d53b83
ignite               pytorch/ignite                      de08e799cfb55a6cf4aa778575d6bad725385453
LIST

This is the corpus of docs/performance.md (2,126 files, 511,560 lines). Any other set of
public PyTorch repositories works too: unpack their .py files into one folder per
repository and list them in SOURCES.txt. Then:

  cmake --build build --target leaklint leaklint_parse_only
  bench/run_bench.sh -v /tmp/corpus/perf > /tmp/bench.md
EOF
}

while (($#)); do
  case "$1" in
    --fetch-help) fetch_help; exit 0 ;;
    --build) build="$(cd "$2" && pwd)"; shift 2 ;;
    --repeat|--flake8-repeat|--markdown-out|--instructions-every) args+=("$1" "$2"); shift 2 ;;
    --no-flake8|-v|--verbose) args+=("$1"); shift ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run_bench: unknown option $1" >&2; exit 2 ;;
    *) corpus="$1"; shift ;;
  esac
done
if [[ -z "$corpus" || ! -d "$corpus" ]]; then
  echo "usage: $0 [--build DIR] [--repeat N] [-v] CORPUS_DIR   (or --fetch-help)" >&2
  exit 2
fi

leaklint="$build/leaklint"
[[ -x "$leaklint" ]] || { echo "run_bench: no $leaklint; build it first" >&2; exit 2; }
parse_only=""
for p in "$build/bench/leaklint_parse_only" "$build/leaklint_parse_only"; do
  [[ -x "$p" ]] && { parse_only="$p"; break; }
done
if [[ -z "$parse_only" ]]; then
  echo "run_bench: building leaklint_parse_only" >&2
  cmake --build "$build" --target leaklint_parse_only >&2 ||
    { echo "run_bench: no leaklint_parse_only target (is add_subdirectory(bench) in CMakeLists.txt?)" >&2; exit 2; }
  for p in "$build/bench/leaklint_parse_only" "$build/leaklint_parse_only"; do
    [[ -x "$p" ]] && { parse_only="$p"; break; }
  done
fi
if [[ " ${args[*]-} " == *" --instructions-every "* ]] && ! command -v valgrind >/dev/null; then
  echo "run_bench: --instructions-every needs valgrind (apt-get install -y valgrind)" >&2
  exit 2
fi
[[ -x /usr/bin/time ]] || { echo "run_bench: needs /usr/bin/time (apt-get install -y time)" >&2; exit 2; }
if [[ " ${args[*]-} " != *" --no-flake8 "* ]] && ! /usr/bin/python3 -m flake8 --version >/dev/null 2>&1; then
  echo "run_bench: needs flake8 (apt-get install -y python3-flake8), or pass --no-flake8" >&2
  exit 2
fi

exec /usr/bin/python3 "$here/bench.py" --leaklint "$leaklint" --parse-only "$parse_only" \
  --repo "$repo" --corpus "$corpus" ${args[@]+"${args[@]}"}
