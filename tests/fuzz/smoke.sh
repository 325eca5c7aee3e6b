#!/usr/bin/env bash
# Runs one libFuzzer target for a while (default 60 s: the CI smoke run).
#
#   tests/fuzz/smoke.sh BUILD_DIR [SECONDS] [TARGET]
#
# BUILD_DIR is a build configured with clang-19 and -DLEAKLINT_FUZZ=ON (see
# tests/fuzz/CMakeLists.txt); the target is built here if it is missing. TARGET defaults
# to leaklint_fuzz_python, whose seeds are every tests/fixtures/**/*.py, tests/fixes/*.py
# and examples/**/*.py (copied into BUILD_DIR/fuzz-seeds at each run, never duplicated in
# git), tests/fuzz/seeds/ and tests/fuzz/regressions/. Another target leaklint_fuzz_NAME
# (NAME with '_' written '-') takes tests/fuzz/seeds-NAME/ and tests/fuzz/regressions-NAME/.
# New coverage goes to BUILD_DIR/fuzz-corpus[-NAME] (kept between runs), crashers to
# BUILD_DIR/fuzz-artifacts[-NAME]/. Exit status: 0 when nothing was found.
# Environment: LEAKLINT_FUZZ_STRICT_FIXES=1 also fails on fixes that break the syntax;
# FUZZ_ARGS adds libFuzzer options.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:?usage: $0 BUILD_DIR [SECONDS]}"
secs="${2:-60}"
target="${3:-leaklint_fuzz_python}"
build="$(cd "$build" && pwd)"

find_fuzzer() {
  for f in "$build/tests/fuzz/$target" "$build/$target"; do
    [[ -x "$f" ]] && { echo "$f"; return 0; }
  done
  return 1
}
fuzzer="$(find_fuzzer)" || {
  cmake --build "$build" --target "$target"
  fuzzer="$(find_fuzzer)" || { echo "smoke: no $target in $build" >&2; exit 2; }
}

dict=()
if [[ "$target" == leaklint_fuzz_python ]]; then
  seeds="$build/fuzz-seeds"
  corpus="$build/fuzz-corpus"
  artifacts="$build/fuzz-artifacts"
  handmade="$src/tests/fuzz/seeds"
  regressions="$src/tests/fuzz/regressions"
  dict=(-dict="$src/tests/fuzz/python.dict")
else
  name="${target#leaklint_fuzz_}"
  name="${name//_/-}"
  seeds="$build/fuzz-seeds-$name"
  corpus="$build/fuzz-corpus-$name"
  artifacts="$build/fuzz-artifacts-$name"
  handmade="$src/tests/fuzz/seeds-$name"
  regressions="$src/tests/fuzz/regressions-$name"
  [[ -d "$handmade" ]] || { echo "smoke: $target has no seeds folder $handmade" >&2; exit 2; }
fi
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"
inputs=("$corpus" "$seeds" "$handmade")
[[ -d "$regressions" ]] && inputs+=("$regressions")
n=0
if [[ "$target" == leaklint_fuzz_python ]]; then
  while IFS= read -r -d '' f; do
    rel="${f#"$src"/}"
    cp "$f" "$seeds/${rel//\//__}"
    n=$((n + 1))
  done < <(find "$src/tests/fixtures" "$src/tests/fixes" "$src/examples" -name '*.py' -type f -print0)
fi
echo "smoke: $target: $n seeds from the fixtures, $(ls "$handmade" | wc -l) hand-made," \
     "$( [[ -d "$regressions" ]] && find "$regressions" -type f ! -name README.md | wc -l || echo 0) regressions;" \
     "fuzzing for ${secs}s" >&2

# slow-unit-* files are libFuzzer's reports of an input that took over 10 s once (a loaded
# machine is enough); hangs are what -timeout=30 turns into timeout-* artifacts.
failures() { find "$artifacts" -type f ! -name 'slow-unit-*' | wc -l; }
before="$(failures)"
set +e
# -malloc_limit_mb catches one input that asks for 2 GB at once; the process's RSS, which
# -rss_limit_mb bounds, also holds what ASan's allocator keeps across thousands of inputs
# (1.3 GB replaying an 11,500-input corpus), so it gets more room.
nice "$fuzzer" -max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 -malloc_limit_mb=2048 -max_len=32768 \
  "${dict[@]}" -artifact_prefix="$artifacts/" -print_final_stats=1 \
  ${FUZZ_ARGS:-} "${inputs[@]}"
rc=$?
set -e
after="$(failures)"
if ((rc != 0 || after > before)); then
  echo "smoke: the fuzzer found a problem (exit $rc); inputs in $artifacts/:" >&2
  ls -t "$artifacts" | head >&2
  echo "smoke: reproduce with: $fuzzer $artifacts/<file>; once fixed, keep it under" \
       "${regressions#"$src"/}/ (a unit test runs every regression input)" >&2
  exit 1
fi
echo "smoke: $target: no crash, hang or sanitizer report in ${secs}s" >&2
