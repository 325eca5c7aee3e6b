#!/usr/bin/env python3
"""End-to-end tests: the result cache is never trusted for code, and a damaged, hostile or
full cache never changes leaklint's output (cli/cache.hpp).

Each test fills a private cache (--cache-dir in a temporary directory) with a real run,
damages it the way a restored CI cache, a bit flip or a full disk would, and checks that
the next run gives exactly what a run without the cache gives.

usage: test_cache_safety.py LEAKLINT_BINARY SOURCE_DIR
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import unittest

BIN = SRC = None

# Code an attacker would like `--fix` to write into the user's files.
EVIL = "import os; os.system('touch /tmp/leaklint-pwned')\n"

# Files whose findings have fixes (tests/fixes), and one that has a finding and no fix.
FIXABLE = ["LL101_decorate.py", "LL102_item.py"]

# Files under 512 bytes are not cached (cheaper to analyse than to look up): every source
# here is padded past that with a trailing comment block.
PAD = "".join(f"# padding line {i:02d} keeps this file above the cache's minimum size\n" for i in range(12))

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from samples import LEAKY  # noqa: E402  (tests/samples.py)

LEAKY = LEAKY + PAD


def run(args, timeout=120, env=None, preexec_fn=None):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout, env=env,
                       preexec_fn=preexec_fn)
    return p.returncode, p.stdout, p.stderr


def cache_files(cache):
    """Every path under the cache directory that is not a directory."""
    out = []
    for root, dirs, files in os.walk(cache):
        out.extend(os.path.join(root, n) for n in files)
    return sorted(out)


def entries(cache):
    """Regular files under the cache that are not temporary files."""
    return [p for p in cache_files(cache) if os.path.isfile(p) and not p.endswith(".tmp")]


class CacheSafety(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="leaklint-cache-safety-")
        self.cache = os.path.join(self.dir, "cache")
        self.src = os.path.join(self.dir, "src")
        os.makedirs(self.src)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, rel, text):
        path = os.path.join(self.src, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def copy_fixable(self, dest=None):
        dest = dest or self.src
        os.makedirs(dest, exist_ok=True)
        for name in FIXABLE:
            with open(os.path.join(SRC, "tests", "fixes", name)) as f:
                text = f.read()
            with open(os.path.join(dest, name), "w") as f:
                f.write(text + PAD)

    def read_tree(self, root):
        out = {}
        for name in sorted(os.listdir(root)):
            with open(os.path.join(root, name)) as f:
                out[name] = f.read()
        return out

    def edit_texts(self):
        """The replacement texts of every fix leaklint offers for FIXABLE (from the source)."""
        rc, out, err = run(["--no-cache", "--format", "json", self.src])
        texts = set()
        for f in json.loads(out)["findings"]:
            for fx in f.get("fixes", []):
                for e in fx["edits"]:
                    if e["text"].strip():
                        texts.add(e["text"])
        self.assertTrue(texts, "the fixtures must offer fixes")
        return texts

    def uncached(self, args):
        return run(["--no-cache", *args])

    def cached(self, args, **kw):
        return run(["--cache-dir", self.cache, *args], **kw)

    def fill(self, *formats):
        for fmt in formats or ("text",):
            self.cached(["--format", fmt, self.src])
        self.assertTrue(entries(self.cache), "the run must have cached something")

    # --- fixes are never taken from the cache -------------------------------------------

    def test_poisoned_fix_edit_is_never_applied(self):
        self.copy_fixable()
        texts = self.edit_texts()
        expected_dir = os.path.join(self.dir, "expected")
        self.copy_fixable(expected_dir)
        self.uncached(["--fix", "--unsafe-fixes", expected_dir])
        expected = self.read_tree(expected_dir)
        self.assertNotEqual(expected, self.read_tree(self.src), "the fixes must change the files")
        expected_diff = self.uncached(["--diff", "--unsafe-fixes", self.src])

        self.fill("text", "json", "sarif")
        # Whoever can write the cache replaces every fix edit it finds with hostile code.
        for path in entries(self.cache):
            with open(path, "rb") as f:
                data = f.read()
            for t in texts:
                data = data.replace(json.dumps(t).encode(), json.dumps(EVIL).encode())
            with open(path, "wb") as f:
                f.write(data)

        self.assertEqual(self.cached(["--diff", "--unsafe-fixes", self.src]), expected_diff)
        self.assertNotIn("pwned", self.cached(["--format", "sarif", self.src])[1])
        self.assertNotIn("pwned", self.cached(["--format", "json", self.src])[1])
        self.cached(["--fix", "--unsafe-fixes", self.src])
        got = self.read_tree(self.src)
        self.assertEqual(got, expected)
        self.assertFalse(any("pwned" in t for t in got.values()))

    def test_cache_holds_no_code(self):
        self.copy_fixable()
        texts = self.edit_texts()
        self.fill("text", "json", "sarif", "github")
        self.cached(["--diff", "--unsafe-fixes", self.src])
        for path in entries(self.cache):
            with open(path, "rb") as f:
                data = f.read()
            for t in texts:
                self.assertNotIn(json.dumps(t).encode(), data, f"{path} holds the fix edit {t!r}")

    def test_fix_hint_survives_a_warm_run(self):
        self.copy_fixable()
        cold = self.uncached([self.src])
        self.assertIn("fix available", cold[1])
        self.fill("text")
        self.assertEqual(self.cached([self.src]), cold)
        self.assertEqual(self.cached(["--format", "json", self.src]), self.uncached(["--format", "json", self.src]))
        self.assertEqual(self.cached(["--format", "github", self.src]),
                         self.uncached(["--format", "github", self.src]))

    # --- integrity ---------------------------------------------------------------------

    def test_flipped_digit_is_a_miss_and_the_entry_is_replaced(self):
        self.write("a.py", LEAKY)
        expected = self.uncached([self.src])
        self.fill("text")
        flipped = 0
        for path in entries(self.cache):
            with open(path, "rb") as f:
                data = bytearray(f.read())
            at = data.find(b'"g":[')
            if at < 0:
                continue
            i = at + len(b'"g":[')
            self.assertTrue(chr(data[i]).isdigit())
            data[i] = ord("8") if data[i] == ord("9") else data[i] + 1
            with open(path, "wb") as f:
                f.write(data)
            flipped += 1
            tampered = (path, bytes(data))
        self.assertEqual(flipped, 1, "one entry with a finding")
        self.assertEqual(self.cached([self.src]), expected)
        path, data = tampered
        with open(path, "rb") as f:
            self.assertNotEqual(f.read(), data, "the damaged entry must be rewritten")
        self.assertEqual(self.cached([self.src]), expected)

    def test_truncated_and_garbage_entries_are_misses(self):
        self.write("a.py", LEAKY)
        self.write("b.py", LEAKY.replace("outs", "results"))
        expected = self.uncached([self.src])
        self.fill("text")
        paths = entries(self.cache)
        self.assertEqual(len(paths), 2)
        with open(paths[0], "r+b") as f:
            f.truncate(os.path.getsize(paths[0]) // 2)
        with open(paths[1], "wb") as f:
            f.write(b'{"f":[],"d":[],"p":{"mod":"","du":[],"cl":[],"fn":[],"co":[],"ic":[]}}')
        self.assertEqual(self.cached([self.src]), expected)

    # --- entries that are not regular files --------------------------------------------

    def replace_entries(self, make):
        paths = entries(self.cache)
        self.assertTrue(paths)
        for path in paths:
            os.unlink(path)
            make(path)

    def check_completes(self, make):
        self.write("a.py", LEAKY)
        self.write("pkg/b.py", "import torch\n" + PAD)
        expected = self.uncached([self.src])
        self.fill("text")
        self.replace_entries(make)
        for _ in range(2):  # the damaged entries stay, or are replaced; either way the same output
            try:
                got = self.cached([self.src], timeout=60)
            except subprocess.TimeoutExpired:
                self.fail("leaklint hung on a cache entry that is not a regular file")
            self.assertEqual(got, expected)

    def test_directory_entry_is_skipped(self):
        self.check_completes(os.mkdir)

    def test_fifo_entry_is_skipped(self):
        self.check_completes(os.mkfifo)

    def test_symlink_entry_is_not_followed(self):
        secret = os.path.join(self.dir, "elsewhere.json")
        with open(secret, "w") as f:
            f.write("{}")
        self.check_completes(lambda p: os.symlink(secret, p))
        with open(secret) as f:
            self.assertEqual(f.read(), "{}")

    # --- write failures ----------------------------------------------------------------

    def test_write_failure_commits_nothing(self):
        for i in range(5):
            self.write(f"m{i}.py", LEAKY if i % 2 else "import torch\n" + PAD)
        expected = self.uncached([self.src])
        limit = 64  # bytes: smaller than any complete entry, so every entry write fails

        def small_files():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        got = self.cached([self.src], preexec_fn=small_files)
        self.assertEqual(got, expected, "a failing cache write must not change the run")
        self.assertEqual(cache_files(self.cache), [], "no empty, partial or temporary entry may remain")
        self.assertEqual(self.cached([self.src]), expected)
        self.assertEqual(self.cached([self.src]), expected)

    # --- size cap ----------------------------------------------------------------------

    def test_small_files_are_not_cached(self):
        self.write("a.py", "import torch\n")
        self.write("b.py", LEAKY[:300])
        self.cached([self.src])
        self.assertEqual(entries(self.cache), [])

    def test_size_cap_is_enforced(self):
        body = LEAKY * 2
        for i in range(400):
            self.write(f"pkg{i // 100}/m{i}.py", body.replace("outs", f"outs{i}"))
        env = dict(os.environ, LEAKLINT_RESULT_CACHE_MAX_MB="1")
        expected = self.uncached(["--format", "json", self.src])

        def usage():
            total = 0
            for p in cache_files(self.cache):
                st = os.lstat(p)
                total += max(st.st_size, st.st_blocks * 512)
            return total

        self.assertEqual(self.cached(["--format", "json", self.src], env=env), expected)
        self.assertLessEqual(usage(), 1 << 20)
        self.assertTrue(entries(self.cache), "the cache still keeps the newest entries")
        self.assertEqual(self.cached(["--format", "json", self.src], env=env), expected)
        self.assertLessEqual(usage(), 1 << 20)


if __name__ == "__main__":
    os.environ["LEAKLINT_CACHE_DIR"] = tempfile.mkdtemp(prefix="leaklint-cache-safety-default-")
    BIN, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    try:
        unittest.main(verbosity=2)
    finally:
        shutil.rmtree(os.environ["LEAKLINT_CACHE_DIR"], ignore_errors=True)
