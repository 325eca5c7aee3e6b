#!/usr/bin/env bash
# Extra CI stage, run after the main ctest:
#   1. an ASan + UBSan build (-DLEAKLINT_SANITIZE=ON, RelWithDebInfo) and its whole ctest,
#      with leak detection on and UBSan fatal;
#   2. the libFuzzer target (-DLEAKLINT_FUZZ=ON, clang-19) and a 60 s smoke run.
#
#   tests/ci_extra.sh BUILD_ROOT
#
# By default both come from ONE clang-19 build in BUILD_ROOT/sanitize (sanitizers, tests
# and fuzzer together): on a 2-core machine that takes about 10 minutes, where GCC 12's
# ASan+UBSan build alone takes 16 (GCC compiles this code ~4x slower with sanitizers and
# -g). CI_EXTRA_SPLIT=1 does it the long way instead: the default compiler's ASan build in
# BUILD_ROOT/asan (what developers get from `cmake -DLEAKLINT_SANITIZE=ON`), then a
# separate clang-19 fuzzer build in BUILD_ROOT/fuzz.
#
# Environment: JOBS (default nproc), FUZZ_SECONDS (default 60), SKIP_FUZZ=1, SKIP_ASAN=1,
# CI_EXTRA_SPLIT=1, LEAKLINT_ENABLE_CPP_ASAN=OFF (leave leaklint-cpp out of the sanitizer
# build), ASAN_CTEST_EXCLUDE (ctest -E regex, empty for none; default
# '^(verify_cpu|cpp_fixtures_compile)$': verify_cpu measures real PyTorch programs for
# minutes, is timing-sensitive, and the main ctest already runs it; cpp_fixtures_compile
# runs clang++ on the fixtures, none of leaklint's code).
# Needs clang-19 and libclang-rt-19-dev (third_party/install-deps.sh).
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="${1:?usage: $0 BUILD_ROOT}"
mkdir -p "$root"
root="$(cd "$root" && pwd)"
jobs="${JOBS:-$(nproc)}"
t0=$SECONDS
phase() { echo "== ci_extra [$((SECONDS - t0))s]: $*" >&2; }

clang=(-DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19)
if [[ "${CI_EXTRA_SPLIT:-0}" == 1 ]]; then
  asan_dir="$root/asan"
  asan_cfg=(-DLEAKLINT_FUZZ=OFF)
  fuzz_dir="$root/fuzz"
else
  asan_dir="$root/sanitize"
  asan_cfg=("${clang[@]}" -DLEAKLINT_FUZZ="$([[ "${SKIP_FUZZ:-0}" == 1 ]] && echo OFF || echo ON)"
            -DLEAKLINT_ENABLE_CPP="${LEAKLINT_ENABLE_CPP_ASAN:-ON}")
  fuzz_dir="$asan_dir"
fi

if [[ "${SKIP_ASAN:-0}" != 1 ]]; then
  phase "configure + build ASan/UBSan ($asan_dir)"
  cmake -S "$src" -B "$asan_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DLEAKLINT_SANITIZE=ON -DLEAKLINT_BUILD_TESTS=ON -DLEAKLINT_ENABLE_CPP=OFF \
        "${asan_cfg[@]}" >/dev/null
  ninja -C "$asan_dir" -j "$jobs"
  phase "ctest under ASan/UBSan"
  exclude="${ASAN_CTEST_EXCLUDE-^(verify_cpu|cpp_fixtures_compile)\$}"
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    ctest --test-dir "$asan_dir" --output-on-failure -j "$jobs" --timeout 900 \
          ${exclude:+-E "$exclude"}
fi

if [[ "${SKIP_FUZZ:-0}" != 1 ]]; then
  if [[ "$fuzz_dir" != "$asan_dir" || "${SKIP_ASAN:-0}" == 1 ]]; then
    phase "configure + build the fuzzer with clang-19 ($fuzz_dir)"
    cmake -S "$src" -B "$fuzz_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${clang[@]}" \
          -DLEAKLINT_FUZZ=ON -DLEAKLINT_BUILD_TESTS=OFF -DLEAKLINT_ENABLE_CPP=OFF >/dev/null
    ninja -C "$fuzz_dir" -j "$jobs"
  fi
  # Every libFuzzer target the build has (the Python pipeline, the cache reader, the
  # compile-command policy), each for FUZZ_SECONDS.
  # A missing target is a failure, not a skip.
  targets=(leaklint_fuzz_python leaklint_fuzz_cache)
  if grep -q '^LEAKLINT_ENABLE_CPP:BOOL=ON' "$fuzz_dir/CMakeCache.txt"; then
    targets+=(leaklint_fuzz_compile_args)
  fi
  for target in "${targets[@]}"; do
    phase "fuzz smoke run: $target (${FUZZ_SECONDS:-60}s)"
    "$src/tests/fuzz/smoke.sh" "$fuzz_dir" "${FUZZ_SECONDS:-60}" "$target"
  done
fi
phase "done"
