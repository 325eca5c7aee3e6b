#!/usr/bin/env python3
"""Fix tests: every tests/fixes/<ID>_<name>.py becomes <name>.py.expected under
`leaklint --fix --unsafe-fixes`; a second --fix changes nothing; line endings, encoding
and permissions are preserved; a fix that would break syntax is rolled back.

usage: test_fixes.py LEAKLINT_BINARY SOURCE_DIR
"""
import glob
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

BIN = SRC = None


def lint(args, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run([BIN, "--show-low-confidence", *args], capture_output=True, text=True, timeout=120, env=e)


class FixCases(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="leaklint-fix-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def copy(self, src, name=None, transform=None):
        dst = os.path.join(self.dir, name or os.path.basename(src))
        data = open(src, "rb").read()
        if transform:
            data = transform(data)
        with open(dst, "wb") as f:
            f.write(data)
        return dst

    def cases(self):
        return sorted(glob.glob(os.path.join(SRC, "tests", "fixes", "*.py")))

    def test_input_becomes_expected_and_converges(self):
        cases = self.cases()
        self.assertGreaterEqual(len(cases), 6)
        for case in cases:
            with self.subTest(case=os.path.basename(case)):
                expected = open(case + ".expected", "rb").read()
                path = self.copy(case)
                r = lint(["--fix", "--unsafe-fixes", path])
                self.assertEqual(open(path, "rb").read().decode(), expected.decode(), r.stdout + r.stderr)
                rule = os.path.basename(case)[:5]
                self.assertNotIn(f"[{rule}]", r.stdout, r.stdout)
                # Convergence: a second run changes nothing.
                before = open(path, "rb").read()
                lint(["--fix", "--unsafe-fixes", path])
                self.assertEqual(open(path, "rb").read(), before)

    def test_safe_fixes_only_without_unsafe_flag(self):
        case = os.path.join(SRC, "tests", "fixes", "LL102_item.py")
        path = self.copy(case)
        lint(["--fix", path])
        self.assertEqual(open(path, "rb").read(), open(case, "rb").read())
        case = os.path.join(SRC, "tests", "fixes", "LL104_with_no_grad.py")
        path = self.copy(case)
        lint(["--fix", path])
        self.assertEqual(open(path, "rb").read(), open(case + ".expected", "rb").read())

    def test_diff_does_not_write(self):
        case = os.path.join(SRC, "tests", "fixes", "LL104_with_no_grad.py")
        path = self.copy(case)
        r = lint(["--diff", path])
        self.assertIn("-        with torch.no_grad:", r.stdout)
        self.assertIn("+        with torch.no_grad():", r.stdout)
        self.assertTrue(r.stdout.startswith("--- a/"))
        self.assertEqual(open(path, "rb").read(), open(case, "rb").read())

    def test_crlf_preserved(self):
        for case in self.cases():
            with self.subTest(case=os.path.basename(case)):
                crlf = lambda b: b.replace(b"\n", b"\r\n")
                path = self.copy(case, transform=crlf)
                lint(["--fix", "--unsafe-fixes", path])
                got = open(path, "rb").read()
                self.assertEqual(got, crlf(open(case + ".expected", "rb").read()))

    def test_permissions_preserved(self):
        case = os.path.join(SRC, "tests", "fixes", "LL104_with_no_grad.py")
        path = self.copy(case)
        os.chmod(path, 0o751)
        # As root, an owner other than the one running leaklint (the file is replaced by a
        # new inode, which must get the old owner back); otherwise our own.
        owner = (65534, 65534) if os.geteuid() == 0 else (os.getuid(), os.stat(path).st_gid)
        if os.geteuid() == 0:
            os.chown(path, *owner)
        ino = os.stat(path).st_ino
        r = lint(["--fix", path])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("fixed)", r.stdout)
        with open(path, "rb") as got, open(case + ".expected", "rb") as want:
            self.assertEqual(got.read(), want.read())  # the fix was applied ...
        st = os.stat(path)
        self.assertNotEqual(st.st_ino, ino)  # ... by replacing the file (not rewriting it in place) ...
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o751)  # ... with its mode ...
        self.assertEqual((st.st_uid, st.st_gid), owner)  # ... and owner kept
        self.assertEqual(os.listdir(self.dir), [os.path.basename(path)])  # no temp files left

    def test_non_utf8_declared_file_is_preserved(self):
        path = os.path.join(self.dir, "latin.py")
        src = "# -*- coding: latin-1 -*-\nimport torch\nNAME = 'caf\xe9'\n\n\ndef f(m, xs):\n    with torch.no_grad:\n        return [m(x) for x in xs]\n"
        with open(path, "wb") as f:
            f.write(src.encode("latin-1"))
        r = lint(["--fix", path])
        self.assertIn("[LL104]", r.stdout)  # analysed through its declared encoding
        self.assertEqual(open(path, "rb").read(), src.encode("latin-1"))  # bytes untouched

    def test_notebook_fix_round_trip(self):
        src = os.path.join(SRC, "tests", "notebooks", "training.ipynb")
        path = self.copy(src)
        r = lint(["--fix", "--unsafe-fixes", path])
        self.assertIn("3 fixed", r.stdout)
        self.assertEqual(open(path, "rb").read(), open(src + ".expected", "rb").read())
        import json
        before, after = json.load(open(src)), json.load(open(path))
        for a, b in zip(before["cells"], after["cells"]):
            self.assertEqual(a.get("outputs"), b.get("outputs"))
            self.assertEqual(a.get("metadata"), b.get("metadata"))
        self.assertEqual(before["metadata"], after["metadata"])
        self.assertIn("%matplotlib inline\n", after["cells"][1]["source"])  # magics kept
        snapshot = open(path, "rb").read()
        lint(["--fix", "--unsafe-fixes", path])
        self.assertEqual(open(path, "rb").read(), snapshot)  # converged

    def test_no_environment_variable_changes_what_fix_writes(self):
        # The product has no test switch that corrupts fixes (the rollback of a fix that
        # breaks the syntax is tested in FixWrite.*RolledBack with a broken fix handed to the
        # fixer): a variable a former build read changes nothing.
        case = os.path.join(SRC, "tests", "fixes", "LL104_with_no_grad.py")
        path = self.copy(case)
        r = lint(["--fix", path], env={"LEAKLINT_TEST_CORRUPT_FIXES": "1"})
        self.assertNotIn("rolled back", r.stderr)
        with open(path, "rb") as got, open(case + ".expected", "rb") as want:
            self.assertEqual(got.read(), want.read())


if __name__ == "__main__":
    BIN, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    unittest.main(verbosity=2)
