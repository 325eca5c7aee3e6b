#!/usr/bin/env bash
# The GPU half of the leak verification suite: one command, bounded to 8 minutes on one GPU.
#
#   OUT=/some/dir tests/verify/gpu.sh
#
# Measures every rule with --device cuda (harness.py --measure-only: leaklint's lint half
# stays in the CPU run, the GPU machine need not have leaklint's Debian libraries) and
# writes into $OUT (default: ./verify-cuda-out):
#   verify-cuda/raw/<ID>-{leaky,fixed}.json (+ .run.json)   every scenario's raw output
#   verify-cuda/results.json                                all rows, verdicts and numbers
#   verify-cuda/docs/verification/cuda/                     README.md, measured.json, plots/
#   verify-cuda/harness.log, verify-cuda/device.txt
#   verify-cuda.tar.gz                                      all of the above, one archive
# To publish: unpack, copy verify-cuda/docs/verification/cuda/ to docs/verification/cuda/,
# run tests/verify/fill_docs.py, commit.
#
# Environment: PYTHON   interpreter with a CUDA build of torch (default: python3)
#              VERIFY_GPU_LIMIT_S   the whole run's limit in seconds (default: 480)
# Exit status: the harness's (0 every measured rule CONFIRMED, 1 a NOT CONFIRMED rule,
# 2 no CUDA / setup error), 124 when the limit killed it; the archive is written anyway.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-$PWD/verify-cuda-out}
py=${PYTHON:-python3}
limit=${VERIFY_GPU_LIMIT_S:-480}
# the harness stops starting scenarios 45 s before the limit, so that it still writes
# its report; `timeout` is the hard bound behind it
deadline=$((limit > 90 ? limit - 45 : limit / 2))

work="$out/verify-cuda"
rm -rf "$work" "$out/verify-cuda.tar.gz"
mkdir -p "$work/raw" "$work/docs/verification/cuda"

{
  date -u '+%Y-%m-%dT%H:%M:%SZ'
  "$py" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"available", torch.cuda.is_available(),
"device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)' 2>&1
  command -v nvidia-smi >/dev/null && nvidia-smi 2>&1
} >"$work/device.txt"

timeout --kill-after=15 "$limit" "$py" "$here/harness.py" --measure-only --device cuda \
  --python "$py" --ci --deadline-s "$deadline" --keep "$work/raw" --json "$work/results.json" \
  --report "$work/docs/verification/cuda" >"$work/harness.log" 2>&1
rc=$?

tar -czf "$out/verify-cuda.tar.gz" -C "$out" verify-cuda
sed -n '/^rule /,$p' "$work/harness.log" | head -60
[ "$rc" -eq 0 ] || tail -20 "$work/harness.log"
echo "gpu.sh: exit $rc; archive $out/verify-cuda.tar.gz"
exit "$rc"
