#!/usr/bin/env python3
"""--fix never loses a user's edit, never corrupts a file, never writes outside the scanned
tree; --write-baseline never destroys the old baseline.

Concurrent runs, an edit made while leaklint runs (made deterministic with the advisory
lock leaklint takes: the test holds a file's flock and waits until /proc/locks shows
leaklint blocked on it), SIGKILL during a large run, stale temporary files, symlinks
(inside and outside the tree), owners, read-only files, non-UTF-8 file names in
baselines, notebooks' own formatting.

usage: test_fix_safety.py LEAKLINT_BINARY SOURCE_DIR
"""
import fcntl
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from proctree import descendants  # noqa: E402  (tests/proctree.py)

BIN = SRC = None

# One safe fix (LL104) and one unsafe fix (LL102) in one file.
SOURCE = """import torch
import torch.nn.functional as F


def embed(encoder, batches):
    out = []
    for b in batches:
        with torch.no_grad:
            out.append(encoder(b))
    return out


def train(model, loader, optimizer, epochs):
    total = 0.0
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss
    return total / (epochs * len(loader))
"""
FIXED = SOURCE.replace("with torch.no_grad:", "with torch.no_grad():").replace(
    "total += loss\n", "total += loss.item()\n")
ONLY_LL104 = SOURCE.replace("with torch.no_grad:", "with torch.no_grad():")
# A file that compiles: C++ fixes are offered only for files Clang analysed (a file that
# does not compile is never fixed). The LibTorch PCH is built once per test.
CPP_SOURCE = """#include <torch/torch.h>

double evaluate(torch::nn::Linear& model, const std::vector<torch::Tensor>& batches) {
  double total = 0;
  for (const auto& x : batches) {
    total += model(x).sum().item<double>();
  }
  return total;
}
"""
CPP_GUARD = "  torch::NoGradGuard no_grad;\n"


def fixed_count(out):
    m = re.search(r"(\d+) fixed", out)
    return int(m.group(1)) if m else 0



class FixSafety(unittest.TestCase):
    def setUp(self):
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix="leaklint-fixsafety-"))
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.dir, ".cache"))
        self.tree = os.path.join(self.dir, "tree")
        os.mkdir(self.tree)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def lint(self, *args, **kw):
        return subprocess.run([BIN, "--no-cache", *args], capture_output=True, text=True, timeout=300,
                              env=self.env, **kw)

    def start(self, *args):
        return subprocess.Popen([BIN, "--no-cache", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=self.env)

    def write(self, name, text, mode="w"):
        path = os.path.join(self.tree, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as f:
            f.write(text)
        return path

    def read(self, path):
        with open(path) as f:
            return f.read()

    def make_files(self, n, text=SOURCE, width=4):
        return [self.write(f"m{i:0{width}d}.py", text) for i in range(n)]

    def temps(self, d=None):
        found = []
        for root, _, files in os.walk(d or self.dir):
            found += [os.path.join(root, f) for f in files if f.startswith(".leaklint-fix-")]
        return found

    def wait_blocked_on(self, proc, path, limit=120):
        """Waits until `proc` waits for the flock of `path` (per /proc/locks); False if it
        exited first. The limit only bounds a failure."""
        ino = os.stat(path).st_ino
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            # leaklint works in a child process of its own (the crash guard).
            pids = {str(proc.pid)} | {str(p) for p in descendants(proc.pid)}
            with open("/proc/locks") as f:
                for line in f:
                    parts = line.split()
                    if "->" in parts:
                        rest = parts[parts.index("->") + 1:]
                        if (len(rest) >= 5 and rest[0] == "FLOCK" and rest[3] in pids
                                and rest[4].split(":")[-1] == str(ino)):
                            return True
            time.sleep(0.01)
        return False

    # --- 1. lost edits --------------------------------------------------------------------

    def test_concurrent_runs_with_different_fixes_keep_both(self):
        files = self.make_files(300)
        a = self.start("--fix", "--select", "LL104", self.tree)
        b = self.start("--fix", "--unsafe-fixes", "--select", "LL102", self.tree)
        out_a, err_a = a.communicate(timeout=300)
        out_b, err_b = b.communicate(timeout=300)
        lost = [f for f in files if self.read(f) != FIXED]
        self.assertEqual(lost, [], f"{len(lost)} file(s) lost a fix\n{err_a}\n{err_b}")
        self.assertEqual(fixed_count(out_a), 300, out_a)
        self.assertEqual(fixed_count(out_b), 300, out_b)
        r = self.lint("--diff", "--unsafe-fixes", self.tree)
        self.assertIn("No fixes available", r.stderr)
        self.assertEqual(self.temps(), [])

    def test_concurrent_identical_runs_count_each_fix_once(self):
        files = self.make_files(300)
        a = self.start("--fix", "--unsafe-fixes", self.tree)
        b = self.start("--fix", "--unsafe-fixes", self.tree)
        out_a, err_a = a.communicate(timeout=300)
        out_b, err_b = b.communicate(timeout=300)
        self.assertEqual([f for f in files if self.read(f) != FIXED], [], err_a + err_b)
        # 2 fixes per file, each written (and reported) by exactly one of the runs.
        self.assertEqual(fixed_count(out_a) + fixed_count(out_b), 600, out_a + out_b)
        self.assertNotIn("error", err_a + err_b)

    def test_edits_made_while_leaklint_waits_are_kept_and_fixed(self):
        files = self.make_files(40, width=2)
        locked, edited, replaced = files[0], files[20], files[39]
        fd = os.open(locked, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX)  # another writer holds the first file
        try:
            p = self.start("--fix", "--select", "LL104", self.tree)
            blocked = self.wait_blocked_on(p, locked)
            self.assertTrue(blocked, "leaklint must wait for the lock of a file another writer holds")
            self.assertEqual(self.read(locked), SOURCE)  # not written while locked
            # Edits after leaklint analysed everything: in place, and as an editor saves
            # (a new file renamed over the old one). The second is the fix done by hand.
            with open(locked, "a") as f:
                f.write("# edited in place\n")
            with open(edited, "a") as f:
                f.write("# edited too\n")
            tmp = replaced + ".swp"
            with open(tmp, "w") as f:
                f.write(ONLY_LL104 + "# fixed by hand\n")
            os.replace(tmp, replaced)
        finally:
            os.close(fd)
        out, err = p.communicate(timeout=300)
        self.assertEqual(self.read(locked), ONLY_LL104 + "# edited in place\n", err)
        self.assertEqual(self.read(edited), ONLY_LL104 + "# edited too\n", err)
        self.assertEqual(self.read(replaced), ONLY_LL104 + "# fixed by hand\n", err)
        for f in files:
            if f not in (locked, edited, replaced):
                self.assertEqual(self.read(f), ONLY_LL104)
        self.assertEqual(fixed_count(out), 39, out)  # the file fixed by hand is not counted

    def test_cpp_fix_rounds_hold_the_lock_and_keep_edits(self):
        """C++ is fixed through the file on disk (written, re-analysed by leaklint-cpp): the
        same lock, re-analysis and counting."""
        cpp = os.environ.get("LEAKLINT_CPP", "")
        if not (cpp and os.access(cpp, os.X_OK)):
            self.skipTest("leaklint-cpp is not built (LEAKLINT_CPP unset)")
        files = [self.write(f"e{i}.cpp", CPP_SOURCE) for i in range(3)]
        fd = os.open(files[0], os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            p = self.start("--fix", "--unsafe-fixes", self.tree)
            self.assertTrue(self.wait_blocked_on(p, files[0]), "leaklint must wait for the lock")
            with open(files[0], "a") as f:
                f.write("// edited\n")
        finally:
            os.close(fd)
        out, err = p.communicate(timeout=600)
        text = self.read(files[0])
        self.assertEqual(text.count(CPP_GUARD), 1, text + err)
        self.assertEqual(text.replace(CPP_GUARD, ""), CPP_SOURCE + "// edited\n")
        self.assertEqual(fixed_count(out), 3, out + err)
        for f in files:
            with open(f, "w") as fh:
                fh.write(CPP_SOURCE)
        a = self.start("--fix", "--unsafe-fixes", self.tree)
        b = self.start("--fix", "--unsafe-fixes", self.tree)
        out_a, err_a = a.communicate(timeout=600)
        out_b, err_b = b.communicate(timeout=600)
        for f in files:
            text = self.read(f)
            self.assertEqual(text.count(CPP_GUARD), 1, text + err_a + err_b)
            self.assertEqual(text.replace(CPP_GUARD, ""), CPP_SOURCE)
        self.assertEqual(fixed_count(out_a) + fixed_count(out_b), 3, out_a + out_b)
        self.assertEqual(self.temps(), [])

    # --- 3. temporary files, kills --------------------------------------------------------

    def test_kill_leaves_old_or_new_bytes_and_no_temp_file(self):
        pad = "".join(f"# padding line {i} " + "x" * 60 + "\n" for i in range(1500))
        src, fixed = SOURCE + pad, FIXED + pad
        files = self.make_files(120, text=src)
        rng = random.Random()
        for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGKILL, signal.SIGINT):
            for f in files:
                with open(f, "w") as fh:
                    fh.write(src)
            before = {f: os.stat(f).st_mtime_ns for f in files}
            leftover = set(self.temps())  # a previous SIGKILL's, if any (see below)
            k = rng.randint(1, 60)
            p = self.start("--fix", "--unsafe-fixes", self.tree)
            while p.poll() is None:
                if sum(1 for f in files if os.stat(f).st_mtime_ns != before[f]) >= k:
                    break
            if p.poll() is None:
                p.send_signal(sig)
            p.communicate()
            # SIGTERM and SIGINT remove the temporary file; nothing can after a SIGKILL, which
            # leaves one only if it lands between linkat() and rename() (cli/fix.cpp): at most
            # one, and the next run removes it (checked below and by the stale-temp test).
            left = sorted(set(self.temps()) - leftover)
            if sig == signal.SIGKILL:
                self.assertLessEqual(len(left), 1, left)
            else:
                self.assertEqual(left, [])
            contents = [self.read(f) for f in files]
            bad = [f for f, c in zip(files, contents) if c not in (src, fixed)]
            self.assertEqual(bad, [], "a file is neither its old nor its new content")
        r = self.lint("--fix", "--unsafe-fixes", self.tree)
        self.assertEqual([f for f in files if self.read(f) != fixed], [], r.stderr)
        self.assertEqual(self.temps(), [])

    def test_stale_temp_files_of_a_killed_run_are_removed_others_kept(self):
        path = self.write("a.py", SOURCE)
        stale = self.write(".leaklint-fix-Ab12Cd", "leftover")
        live = self.write(".leaklint-fix-Zz99Zz", "a writer still holds it")
        notes = self.write(".leaklint-fix-notes.txt", "user file")
        short = self.write(".leaklint-fix-Ab12C", "user file")
        fd = os.open(live, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            r = self.lint("--fix", path)
        finally:
            os.close(fd)
        self.assertEqual(self.read(path), ONLY_LL104, r.stderr)
        self.assertFalse(os.path.exists(stale))
        for keep in (live, notes, short):
            self.assertTrue(os.path.exists(keep), keep)

    # --- 3./4. symlinks, owner, read-only ------------------------------------------------

    def test_symlink_inside_tree_is_written_through(self):
        target = self.write("sub/real.py", SOURCE)
        link = os.path.join(self.tree, "link.py")
        os.symlink("sub/real.py", link)
        r = self.lint("--fix", link)
        self.assertTrue(os.path.islink(link), "the symlink was replaced by a regular file")
        self.assertEqual(os.readlink(link), "sub/real.py")
        self.assertEqual(self.read(target), ONLY_LL104, r.stderr)
        # The whole tree (link and target both discovered): fixed once, link kept.
        self.write("sub/real.py", SOURCE)
        r = self.lint("--fix", self.tree)
        self.assertTrue(os.path.islink(link))
        self.assertEqual(self.read(target), ONLY_LL104, r.stderr)
        self.assertEqual(fixed_count(r.stdout), 1, r.stdout)

    def test_file_outside_the_scanned_tree_is_never_written(self):
        outside = os.path.join(self.dir, "outside", "x.py")
        os.makedirs(os.path.dirname(outside))
        with open(outside, "w") as f:
            f.write(SOURCE)
        link = os.path.join(self.tree, "out.py")
        os.symlink(outside, link)
        self.write("in.py", SOURCE)
        runs = [self.lint("--fix", self.tree)]
        if "--follow-external-symlinks" in self.lint("--help").stdout:
            # Discovery follows the link on request; the writer still refuses it.
            r = self.lint("--fix", "--follow-external-symlinks", self.tree)
            self.assertIn("outside the paths being fixed", r.stderr)
            self.assertEqual(r.returncode, 1)
            runs.append(r)
        self.assertEqual(self.read(outside), SOURCE, "".join(r.stderr for r in runs))
        self.assertTrue(os.path.islink(link))
        self.assertEqual(self.read(os.path.join(self.tree, "in.py")), ONLY_LL104)

    @unittest.skipUnless(os.geteuid() == 0, "changing a file's owner needs root")
    def test_owner_is_preserved(self):
        path = self.write("a.py", SOURCE)
        os.chown(path, 65534, 65534)
        os.chmod(path, 0o640)
        r = self.lint("--fix", path)
        st = os.stat(path)
        self.assertEqual(self.read(path), ONLY_LL104, r.stderr)
        self.assertEqual((st.st_uid, st.st_gid), (65534, 65534))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o640)

    def test_read_only_file_is_refused_unless_forced(self):
        path = self.write("a.py", SOURCE)
        os.chmod(path, 0o444)
        r = self.lint("--fix", path)  # as root too: leaklint's own check
        self.assertEqual(self.read(path), SOURCE)
        self.assertIn("read-only", r.stderr)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(fixed_count(r.stdout), 0, r.stdout)
        if os.geteuid() == 0 or os.access(self.tree, os.W_OK):
            r = self.lint("--fix", "--fix-read-only", path)
            self.assertEqual(self.read(path), ONLY_LL104, r.stderr)
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o444)
        self.assertIn("--fix-read-only", self.lint("--help").stdout)

    # --- 2. baselines ----------------------------------------------------------------------

    def test_baseline_with_non_utf8_file_name(self):
        name = b"caf\xe9_\xff.py"
        path = os.path.join(os.fsencode(self.tree), name)
        with open(path, "w") as f:
            f.write(SOURCE)
        base = os.path.join(self.dir, "base.json")
        with open(base, "w") as f:
            f.write('{"version": 1, "tool": "leaklint", "findings": []}\n')
        r = subprocess.run([BIN, "--no-cache", "--write-baseline", base, os.fsencode(self.tree)],
                           capture_output=True, env=self.env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(base, "rb") as f:
            data = json.loads(f.read().decode("utf-8"))  # valid UTF-8 JSON
        entries = data["findings"]
        self.assertEqual(len(entries), 2)
        for e in entries:
            self.assertEqual(os.path.basename(bytes.fromhex(e["path_hex"])), name)  # lossless
            self.assertIn("\ufffd", e["path"])
        r = subprocess.run([BIN, "--no-cache", "--baseline", base, os.fsencode(self.tree)],
                           capture_output=True, env=self.env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout)  # both findings matched the same file

    def test_baseline_is_replaced_atomically_and_through_a_symlink(self):
        self.write("a.py", SOURCE)
        real = os.path.join(self.dir, "baselines", "base.json")
        os.makedirs(os.path.dirname(real))
        with open(real, "w") as f:
            f.write("old\n")
        os.chmod(real, 0o640)
        link = os.path.join(self.dir, "base.json")
        os.symlink(real, link)
        r = self.lint("--write-baseline", link, self.tree)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.islink(link))
        with open(real) as f:
            self.assertEqual(len(json.load(f)["findings"]), 2)
        self.assertEqual(stat.S_IMODE(os.stat(real).st_mode), 0o640)
        self.assertEqual(self.temps(), [])
        # A baseline that cannot be written leaves the old one whole.
        os.chmod(os.path.dirname(real), 0o500)
        try:
            if os.geteuid() != 0:
                before = self.read(real)
                r = self.lint("--write-baseline", link, self.tree)
                self.assertEqual(r.returncode, 2)
                self.assertEqual(self.read(real), before)
        finally:
            os.chmod(os.path.dirname(real), 0o700)

    # --- 3. notebooks keep their own formatting -------------------------------------------

    def notebook_case(self, text, old, new):
        path = self.write("nb.ipynb", text)
        r = self.lint("--fix", path)
        after = self.read(path)
        self.assertEqual(after, text.replace(old, new), r.stdout + r.stderr)
        self.assertEqual(fixed_count(r.stdout), 1, r.stdout)

    CELL0 = ["import torch\n"]
    CELL1 = ["def f(m, xs):\n", "    with torch.no_grad:\n", "        return [m(x) for x in xs]"]

    def notebook(self, sources):
        cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "text"]}]
        for s in sources:
            cells.append({"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                          "source": s})
        return {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4,
                "nbformat_minor": 5}

    def test_notebook_one_space_indent_list_sources(self):
        text = json.dumps(self.notebook([self.CELL0, self.CELL1]), indent=1) + "\n"
        self.notebook_case(text, '"    with torch.no_grad:\\n"', '"    with torch.no_grad():\\n"')

    def test_notebook_string_sources(self):
        text = json.dumps(self.notebook(["".join(self.CELL0), "".join(self.CELL1)]), indent=2)
        self.notebook_case(text, "with torch.no_grad:\\n", "with torch.no_grad():\\n")

    def test_notebook_minified(self):
        text = json.dumps(self.notebook([self.CELL0, self.CELL1]), separators=(",", ":"))
        self.notebook_case(text, '"    with torch.no_grad:\\n"', '"    with torch.no_grad():\\n"')

    def test_notebook_trailing_empty_source_line_is_kept(self):
        cell = ["def f(m, xs):\n", "    with torch.no_grad:\n", "        return [m(x) for x in xs]\n", ""]
        text = json.dumps(self.notebook([self.CELL0, cell, ["print(1)\n", ""]]), indent=1) + "\n"
        self.notebook_case(text, '"    with torch.no_grad:\\n"', '"    with torch.no_grad():\\n"')


if __name__ == "__main__":
    BIN, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    unittest.main(verbosity=2)
