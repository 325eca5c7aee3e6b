#!/usr/bin/env bash
# The steps of leaklint's GitHub Action (action.yml at the repository root), kept in one
# script so that the test suite runs exactly what the Action runs.
#
#   action.sh build   put a leaklint binary in place (INPUT_BINARY, or build this checkout)
#   action.sh lint    run it: SARIF file, pull-request annotations, step summary
#   action.sh verdict fail the job on findings (INPUT_FAIL_ON_FINDINGS) or errors
#
# Inputs come as environment variables (never spliced into the script text): INPUT_PATHS,
# INPUT_ARGS, INPUT_SARIF_FILE, INPUT_BINARY, INPUT_CPP, INPUT_FAIL_ON_FINDINGS; GitHub
# sets GITHUB_ACTION_PATH, GITHUB_OUTPUT, GITHUB_ENV and GITHUB_STEP_SUMMARY.
set -euo pipefail

action_path=${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set (run by GitHub Actions)}
output=${GITHUB_OUTPUT:?GITHUB_OUTPUT is not set}

words() {  # words STRING: split on whitespace into the array `split`, no globbing
  split=()
  local -
  set -f
  # shellcheck disable=SC2206
  split=($1)
}

case "${1:-}" in
  build)
    if [ -n "${INPUT_BINARY:-}" ]; then
      [ -x "$INPUT_BINARY" ] || { echo "::error title=leaklint::binary '$INPUT_BINARY' is not executable"; exit 2; }
      bin=$INPUT_BINARY
    else
      cpp=0
      [ "${INPUT_CPP:-false}" = true ] && cpp=1
      LEAKLINT_ENABLE_CPP=$cpp bash "$action_path/run" build >&2
      bin="${LEAKLINT_BUILD_DIR:-$action_path/build}/leaklint"
    fi
    echo "binary=$bin" >>"$output"
    "$bin" --version
    ;;
  lint)
    bin=${LEAKLINT_BINARY:?LEAKLINT_BINARY is not set (output of the build step)}
    sarif=${INPUT_SARIF_FILE:-leaklint.sarif}
    words "${INPUT_PATHS:-.}"; paths=("${split[@]}")
    words "${INPUT_ARGS:-}"; args=("${split[@]}")
    # One analysis: the SARIF log and the exit status ...
    set +e
    "$bin" --format sarif -o "$sarif" "${args[@]}" "${paths[@]}"
    rc=$?
    # ... then the annotations and the step summary, from the warm result cache.
    "$bin" --format github --exit-zero "${args[@]}" "${paths[@]}"
    set -e
    echo "sarif-file=$sarif" >>"$output"
    echo "exit-code=$rc" >>"$output"
    ;;
  verdict)
    rc=${LEAKLINT_EXIT_CODE:?LEAKLINT_EXIT_CODE is not set (output of the lint step)}
    case "$rc" in
      0) echo "leaklint: no findings" ;;
      1) if [ "${INPUT_FAIL_ON_FINDINGS:-true}" = true ]; then
           echo "leaklint: findings reported (fail-on-findings: true)"; exit 1
         fi
         echo "leaklint: findings reported (fail-on-findings: false)" ;;
      *) echo "::error title=leaklint::leaklint failed (exit $rc): see the log of the lint step"; exit "$rc" ;;
    esac
    ;;
  *)
    echo "usage: action.sh build|lint|verdict" >&2
    exit 2
    ;;
esac
