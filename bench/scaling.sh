#!/usr/bin/env bash
# How analysis time grows with the size of one construct, run by hand (not a CTest test:
# timings depend on the machine). For each shape and N it generates one Python file and
# prints leaklint's CPU time (user + sys, best of --repeat runs, -j1, --no-cache). Linear
# analysis doubles the time when N doubles; quadratic quadruples it. The tests assert the
# same property exactly, as counted work (tests/unit/test_frontend.cpp, Scaling.*).
#
#   bench/scaling.sh [--build DIR] [--repeat R] [--shapes "loop elif ..."] [N...]
#
# Shapes: loop (one `for` body of N calls: model(x), opt.step(), loss.backward(), y = f(x)),
# loaded (N top-level forwards of a loaded model, each a finding),
# statements, functions, methods, elif, with, names (one loop body of N statements inside a
# function, each with names of its own: `y7 = model(x7)`, `z7 = f7(y7)`, so the flow core
# answers questions about 3N distinct names). Default N: 1000 2000 4000 8000 16000.
# Needs /usr/bin/time (Debian package `time`) and python3.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(dirname "$here")/build"
repeat=3
shapes="loop loaded statements functions methods elif with names"
sizes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --repeat) repeat="$2"; shift 2 ;;
    --shapes) shapes="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) sizes+=("$1"); shift ;;
  esac
done
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 2000 4000 8000 16000)
bin="$build/leaklint"
[ -x "$bin" ] || { echo "scaling.sh: no $bin (build it first)" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

generate() {  # shape n file
  python3 - "$1" "$2" "$3" <<'PY'
import sys
shape, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = ["import torch", "model = torch.nn.Linear(2, 2)", "opt = torch.optim.SGD(model.parameters(), lr=0.1)",
     "def f(x):", "    return x"]
if shape == "loop":
    body = ["    y = model(x)", "    opt.step()", "    loss.backward()", "    y = f(x)"]
    s += ["for x in loader:"] + [body[i % 4] for i in range(n)]
elif shape == "statements":
    s += [f"y{i} = model(x)" for i in range(n)]
elif shape == "functions":
    for i in range(n):
        s += [f"def g{i}(x):", "    return model(x)", f"g{i}(1)"]
elif shape == "methods":
    s.append("class Net(torch.nn.Module):")
    for i in range(n):
        s += [f"    def m{i}(self, v):", "        self.total += v", "        return self.m0(v)"]
elif shape == "elif":
    s += ["if a == 0:", "    model(x)"] + [f"elif a == {i}:\n    model(x)" for i in range(1, n)]
elif shape == "with":
    s += ["with torch.no_grad():\n    y = model(x)" for _ in range(n)]
elif shape == "loaded":
    s = ["import torch", "model = torch.load('m.pt')", "model.eval()"]
    s += [f"y{i} = model(torch.load('x.pt'))" for i in range(n)]
elif shape == "names":
    s += ["def main(loader):", "    for x in loader:"]
    s += [f"        y{i} = model(x{i})" if i % 2 == 0 else f"        z{i} = f{i}(y{i - 1})" for i in range(n)]
else:
    sys.exit(f"unknown shape {shape}")
open(out, "w").write("\n".join(s) + "\n")
PY
}

printf '%-11s %7s %9s %7s\n' shape N cpu_s ratio
for shape in $shapes; do
  prev=""
  for n in "${sizes[@]}"; do
    f="$tmp/${shape}_$n.py"
    generate "$shape" "$n" "$f"
    best=""
    for _ in $(seq "$repeat"); do
      t=$( { /usr/bin/time -f '%U %S' "$bin" --no-cache -q -j1 --exit-zero "$f" >/dev/null; } 2>&1 | tail -1 |
           awk '{printf "%.2f", $1 + $2}')
      if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a < b)}'; then best="$t"; fi
    done
    ratio="-"
    [ -n "$prev" ] && ratio=$(awk -v a="$best" -v b="$prev" 'BEGIN{ if (b > 0) printf "%.1fx", a / b; else print "-" }')
    printf '%-11s %7s %9s %7s\n' "$shape" "$n" "$best" "$ratio"
    prev="$best"
  done
done
