#!/usr/bin/env bash
# The pre-commit integration, for real and offline, with the installed `pre-commit`
# (Debian bookworm ships 3.0.4):
#   1. a throwaway repository with a `repo: local` hook running the built binary,
#      `pre-commit install`, a `git commit` of a leaky file that must be blocked (and name
#      the rule), then the fixed file, whose commit must succeed;
#   2. `pre-commit try-repo` of this repository's .pre-commit-hooks.yaml (both hooks), from
#      a throwaway copy holding that file, and from SOURCE_DIR itself once the file is
#      committed there.
# HOME and PRE_COMMIT_HOME point into a temp dir: the user's config and cache are untouched.
# usage: test_precommit.sh path/to/leaklint SOURCE_DIR
set -euo pipefail

bin=$(realpath "${1:?usage: test_precommit.sh path/to/leaklint SOURCE_DIR}")
src=$(realpath "${2:?usage: test_precommit.sh path/to/leaklint SOURCE_DIR}")
[ -x "$bin" ] || { echo "FAIL: $bin is not an executable" >&2; exit 1; }
[ -f "$src/.pre-commit-hooks.yaml" ] || { echo "FAIL: $src/.pre-commit-hooks.yaml is missing" >&2; exit 1; }
if ! command -v pre-commit >/dev/null; then
  echo "FAIL: pre-commit is not installed (apt-get install pre-commit)" >&2
  exit 1
fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/leaklint-precommit.XXXXXX")
trap '[ -n "${KEEP_TMP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
export HOME="$tmp/home" PRE_COMMIT_HOME="$tmp/pre-commit-home" XDG_CACHE_HOME="$tmp/cache"
export GIT_CONFIG_NOSYSTEM=1 PRE_COMMIT_COLOR=never NO_COLOR=1 TERM=dumb
export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.invalid
export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.invalid
# When this runs inside a git hook, git's variables would point at the wrong repository.
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES SKIP
mkdir -p "$HOME"
git config --global init.defaultBranch main
git config --global commit.gpgsign false
git config --global safe.directory '*'
# `language: system` hooks from try-repo run `leaklint` from PATH.
mkdir -p "$tmp/bin"
printf '#!/bin/sh\nexec %s "$@"\n' "$("$PY" -c 'import shlex,sys; print(shlex.quote(sys.argv[1]))' "$bin")" \
  >"$tmp/bin/leaklint"
chmod +x "$tmp/bin/leaklint"
export PATH="$tmp/bin:$PATH"

failures=0
pass() { echo "ok   - $*"; }
fail() {
  echo "FAIL - $*" >&2
  failures=$((failures + 1))
}
show() { sed 's/^/       | /' "$1" >&2; }
run() { timeout 300 "$@"; }  # a hung hook fails the test instead of blocking CTest

write_leaky() {
  cat >"$1" <<'EOF'
import torch


def evaluate(model, val_loader):
    model.eval()
    correct = 0
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct
EOF
}
write_fixed() {
  cat >"$1" <<'EOF'
import torch


@torch.no_grad()
def evaluate(model, val_loader):
    model.eval()
    correct = 0
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
    return correct
EOF
}
# Only a safe fix (LL104): `leaklint --fix` applies it.
write_safe_fixable() {
  cat >"$1" <<'EOF'
import torch


def embed(encoder, batches):
    out = []
    for b in batches:
        with torch.no_grad:
            out.append(encoder(b))
    return out
EOF
}

# ---- 1. repo: local + pre-commit install + git commit -----------------------------------
proj="$tmp/proj"
git init -q "$proj"
cd "$proj"
entry=$("$PY" -c 'import json,shlex,sys; print(json.dumps(shlex.quote(sys.argv[1])))' "$bin")
cat >.pre-commit-config.yaml <<EOF
repos:
  - repo: local
    hooks:
      - id: leaklint
        name: leaklint
        entry: $entry
        language: system
        types_or: [python, pyi, c++, c, cuda]
        require_serial: true
EOF
git add .pre-commit-config.yaml
git commit -q -m "pre-commit config"
if run pre-commit install >"$tmp/install.out" 2>&1 && [ -x .git/hooks/pre-commit ]; then
  pass "pre-commit install"
else
  fail "pre-commit install"
  show "$tmp/install.out"
fi

echo "notes" >README.txt
git add README.txt
if run git commit -m "not Python" >"$tmp/c0.out" 2>&1 && grep -q "leaklint.*Skipped" "$tmp/c0.out"; then
  pass "a commit without Python files skips the hook"
else
  fail "a commit without Python files should skip the hook and succeed"
  show "$tmp/c0.out"
fi

mkdir -p src
write_leaky src/evaluate.py
git add src/evaluate.py
before=$(git rev-parse HEAD)
if run git commit -m "leaky" >"$tmp/c1.out" 2>&1; then
  fail "the commit of a leaky file was not blocked"
  show "$tmp/c1.out"
elif ! grep -q "LL101" "$tmp/c1.out" || ! grep -q "leaklint.*Failed" "$tmp/c1.out"; then
  fail "the blocked commit's output should name the rule (LL101) and the failed hook"
  show "$tmp/c1.out"
elif [ "$(git rev-parse HEAD)" != "$before" ]; then
  fail "a commit was created although the hook failed"
else
  pass "git commit of a leaky file is blocked, naming LL101"
fi

write_fixed src/evaluate.py
git add src/evaluate.py
if run git commit -m "fixed" >"$tmp/c2.out" 2>&1 && grep -q "leaklint.*Passed" "$tmp/c2.out" &&
  [ "$(git rev-parse HEAD)" != "$before" ]; then
  pass "git commit of the fixed file succeeds"
else
  fail "the commit of the fixed file should succeed"
  show "$tmp/c2.out"
fi

# ---- 2. try-repo of .pre-commit-hooks.yaml ----------------------------------------------
# A throwaway hook repository holding exactly the working tree's .pre-commit-hooks.yaml
# (try-repo clones a git repository and reads the file from its HEAD).
hooks="$tmp/hooks-repo"
git init -q "$hooks"
cp "$src/.pre-commit-hooks.yaml" "$hooks/"
git -C "$hooks" add .pre-commit-hooks.yaml
git -C "$hooks" commit -q -m hooks

try_repo() {  # try_repo REPO HOOK OUT: runs in $proj on all files
  run pre-commit try-repo "$1" "$2" --all-files >"$3" 2>&1
}

if try_repo "$hooks" leaklint "$tmp/t1.out" && grep -q "leaklint.*Passed" "$tmp/t1.out"; then
  pass "try-repo leaklint --all-files passes on a clean repository"
else
  fail "try-repo leaklint --all-files should pass on the clean repository"
  show "$tmp/t1.out"
fi

write_leaky src/leaky_eval.py
git add src/leaky_eval.py
if try_repo "$hooks" leaklint "$tmp/t2.out"; then
  fail "try-repo leaklint should fail on a leaky file"
  show "$tmp/t2.out"
elif grep -q "src/leaky_eval.py:8:21: .*\[LL101\]" "$tmp/t2.out"; then
  pass "try-repo leaklint --all-files reports LL101 and fails"
else
  fail "try-repo leaklint output should locate the LL101 finding"
  show "$tmp/t2.out"
fi
git rm -q -f src/leaky_eval.py

# Notebooks are hooked too (types_or: jupyter): a leak in a code cell blocks. (The notebook
# runs its model on a GPU: a CPU-only one's finding is weak, hidden by default.)
"$PY" - src/leaky.ipynb <<'EOF'
import json, sys
cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# eval\n"]},
         {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
          "source": ["import torch\n", "\n", "def evaluate(model, val_loader):\n", "    model.eval()\n",
                     "    outs = []\n", "    for x in val_loader:\n", "        outs.append(model(x))\n",
                     "    return outs\n", "\n", "print(evaluate(net.cuda(), loader))\n"]}]
json.dump({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, open(sys.argv[1], "w"), indent=1)
EOF
git add src/leaky.ipynb
if try_repo "$hooks" leaklint "$tmp/t2n.out"; then
  fail "try-repo leaklint should fail on a leaky notebook"
  show "$tmp/t2n.out"
elif grep -q "src/leaky.ipynb:cell 2:7:.*\\[LL101\\]" "$tmp/t2n.out"; then
  pass "try-repo leaklint reports LL101 in a notebook cell and fails"
else
  fail "try-repo leaklint output should locate the LL101 finding in the notebook"
  show "$tmp/t2n.out"
fi
git rm -q -f src/leaky.ipynb

write_safe_fixable src/embed.py
git add src/embed.py
if try_repo "$hooks" leaklint-fix "$tmp/t3.out"; then
  fail "try-repo leaklint-fix should report the files it modified as a failure"
  show "$tmp/t3.out"
elif ! grep -q "files were modified by this hook" "$tmp/t3.out" ||
  ! grep -q "with torch.no_grad():" src/embed.py; then
  fail "leaklint-fix should apply the safe fix and pre-commit should say it modified files"
  show "$tmp/t3.out"
  show src/embed.py
else
  pass "try-repo leaklint-fix applies the safe fix (reported as failed: files modified)"
fi
git add src/embed.py
if try_repo "$hooks" leaklint-fix "$tmp/t4.out" && grep -q "leaklint (apply fixes).*Passed" "$tmp/t4.out"; then
  pass "try-repo leaklint-fix passes once the fix is staged"
else
  fail "leaklint-fix should pass on the fixed file"
  show "$tmp/t4.out"
fi

if [ "$failures" -ne 0 ]; then
  echo "test_precommit: $failures failure(s)" >&2
  exit 1
fi
echo "test_precommit: OK"
