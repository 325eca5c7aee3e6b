#!/usr/bin/env bash
# Extra CI stage, run after the main ctest:
#   1. an ASan + UBSan build (-DLEAKLINT_SANITIZE=ON, RelWithDebInfo) and its whole ctest,
#      with leak detection on and UBSan fatal;
#   2. the libFuzzer target built with clang-19 (-DLEAKLINT_FUZZ=ON) and a 60 s smoke run.
#
#   tests/ci_extra.sh BUILD_ROOT        (builds in BUILD_ROOT/asan and BUILD_ROOT/fuzz)
#
# Environment: JOBS (default nproc), FUZZ_SECONDS (default 60), SKIP_FUZZ=1, SKIP_ASAN=1,
# ASAN_CTEST_EXCLUDE (ctest -E regex, empty for none; default '^verify_cpu$': that test measures real
# PyTorch programs for minutes, is timing-sensitive, and the main ctest already runs it).
# Needs clang-19 and libclang-rt-19-dev (third_party/install-deps.sh).
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="${1:?usage: $0 BUILD_ROOT}"
mkdir -p "$root"
root="$(cd "$root" && pwd)"
jobs="${JOBS:-$(nproc)}"
t0=$SECONDS
phase() { echo "== ci_extra [$((SECONDS - t0))s]: $*" >&2; }

if [[ "${SKIP_ASAN:-0}" != 1 ]]; then
  phase "configure + build ASan/UBSan ($root/asan)"
  cmake -S "$src" -B "$root/asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DLEAKLINT_SANITIZE=ON -DLEAKLINT_BUILD_TESTS=ON -DLEAKLINT_ENABLE_CPP=OFF >/dev/null
  ninja -C "$root/asan" -j "$jobs"
  phase "ctest under ASan/UBSan"
  exclude="${ASAN_CTEST_EXCLUDE-^verify_cpu\$}"
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    ctest --test-dir "$root/asan" --output-on-failure -j "$jobs" --timeout 900 \
          ${exclude:+-E "$exclude"}
fi

if [[ "${SKIP_FUZZ:-0}" != 1 ]]; then
  phase "configure + build the fuzzer with clang-19 ($root/fuzz)"
  cmake -S "$src" -B "$root/fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
        -DLEAKLINT_FUZZ=ON -DLEAKLINT_BUILD_TESTS=OFF -DLEAKLINT_ENABLE_CPP=OFF >/dev/null
  ninja -C "$root/fuzz" -j "$jobs" leaklint_fuzz_python
  phase "fuzz smoke run (${FUZZ_SECONDS:-60}s)"
  "$src/tests/fuzz/smoke.sh" "$root/fuzz" "${FUZZ_SECONDS:-60}"
fi
phase "done"
