#!/usr/bin/env python3
"""C++ buffers that are not on disk: `--stdin-filename F.cpp` and `leaklint lsp`; and
`--diff-base` scoping on C++ (a removed guard reports the forward it guarded).

The buffer is analysed through a temporary copy beside the file, so that its includes, its
compile command (compile_commands.json) and its configuration resolve as for the file; the
copy is always removed, also when the run is stopped by a signal.

usage: test_cpp_buffers.py LEAKLINT_BINARY   (leaklint-cpp beside it)
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

BIN = None

NET_H = """#pragma once
#include <torch/torch.h>
struct NetImpl : torch::nn::Module {
  NetImpl() : fc(register_module("fc", torch::nn::Linear(784, 10))) {}
  torch::Tensor forward(torch::Tensor x) { return fc->forward(x.view({x.size(0), 784})); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);
"""

# Compiles only with the project's header beside it and the -D of its compile command.
BUFFER = """#include "net.h"
#ifndef FROM_COMPILE_COMMANDS
#error "the compile command of src/eval.cpp was not used"
#endif

double evaluate(Net& model, const std::vector<std::pair<torch::Tensor, torch::Tensor>>& batches) {
  model->eval();
  int64_t correct = 0;
  for (const auto& batch : batches) {
    torch::Tensor logits = model->forward(batch.first);
    correct += logits.argmax(1).eq(batch.second).sum().item<int64_t>();
  }
  return static_cast<double>(correct) / static_cast<double>(batches.size());
}
"""

ON_DISK = '#include "net.h"\nint unrelated() { return 0; }\n'


def listing(d):
    return sorted(os.path.relpath(os.path.join(r, f), d) for r, _, fs in os.walk(d) for f in fs)


class CppBuffers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="leaklint-cpp-buffers-")
        cls.cache = os.path.join(cls.tmp, "cache")  # the precompiled preamble, shared by the tests
        cls.proj = os.path.join(cls.tmp, "proj")
        os.makedirs(os.path.join(cls.proj, "src"))
        os.mkdir(os.path.join(cls.proj, ".git"))
        with open(os.path.join(cls.proj, "src", "net.h"), "w") as f:
            f.write(NET_H)
        with open(os.path.join(cls.proj, "src", "eval.cpp"), "w") as f:
            f.write(ON_DISK)
        with open(os.path.join(cls.proj, "compile_commands.json"), "w") as f:
            json.dump([{"directory": cls.proj, "file": os.path.join(cls.proj, "src", "eval.cpp"),
                        "arguments": ["clang++", "-std=c++17", "-DFROM_COMPILE_COMMANDS", "-c", "src/eval.cpp"]}], f)
        cls.before = listing(cls.proj)

    @classmethod
    def tearDownClass(cls):
        for root, dirs, _ in os.walk(cls.tmp):
            for d in dirs:
                os.chmod(os.path.join(root, d), 0o755)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def leaklint(self, args, stdin, cwd=None):
        p = subprocess.run([BIN, "--show-low-confidence", "--cache-dir", os.path.join(self.cache, "leaklint"), *args], input=stdin,
                           capture_output=True, text=True, timeout=600, cwd=cwd or self.proj)
        return p.returncode, p.stdout, p.stderr

    def assert_nothing_left(self):
        self.assertEqual(listing(self.proj), self.before, "a temporary copy was left behind")

    def test_stdin_buffer_uses_the_files_includes_and_compile_command(self):
        rc, out, err = self.leaklint(["--format", "json", "--stdin-filename", "src/eval.cpp"], BUFFER)
        self.assertEqual(rc, 1, err)
        doc = json.loads(out)
        self.assertEqual(doc["errors"], [], "the buffer did not compile: header or compile command not found")
        self.assertEqual([(f["rule"], f["path"], f["line"], f["low_confidence"]) for f in doc["findings"]],
                         [("LL101", "src/eval.cpp", 10, False)])
        self.assertNotIn("leaklint-", out.replace("leaklint-LL", ""), "a temporary name leaked into the report")
        self.assert_nothing_left()

    def test_stdin_buffer_not_the_file_on_disk(self):
        # The file on disk holds no forward: only the buffer's text can give the finding.
        rc, out, err = self.leaklint(["--stdin-filename", "src/eval.cpp"], BUFFER)
        self.assertEqual(rc, 1, err)
        self.assertRegex(out, r"src/eval.cpp:10:28: warning: .*\[LL101\]")
        rc, out, err = self.leaklint(["--stdin-filename", "src/eval.cpp"], ON_DISK.replace("net.h", "nope.h"))
        self.assertEqual(rc, 0, out + err)  # nothing a C++ rule looks for: never reaches Clang
        self.assert_nothing_left()

    def test_stdin_fix_prints_the_fixed_buffer(self):
        rc, out, err = self.leaklint(["--fix", "--unsafe-fixes", "--stdin-filename", "src/eval.cpp"], BUFFER)
        self.assertIn("  torch::NoGradGuard no_grad;\n  for (const auto& batch : batches) {", out, err)
        self.assertEqual(out.replace("  torch::NoGradGuard no_grad;\n", ""), BUFFER)
        self.assertNotIn("LL101", err)  # fixed, and re-analysed through a copy of the fixed text
        self.assertEqual(rc, 0, err)
        with open(os.path.join(self.proj, "src", "eval.cpp")) as f:
            self.assertEqual(f.read(), ON_DISK)  # nothing written
        self.assert_nothing_left()

    def test_unwritable_directory_falls_back_and_says_so(self):
        ro = os.path.join(self.tmp, "ro")
        os.makedirs(ro, exist_ok=True)
        with open(os.path.join(ro, "net.h"), "w") as f:
            f.write(NET_H)
        os.chmod(ro, 0o555)
        try:
            if os.access(ro, os.W_OK):  # root writes anywhere: a directory that does not exist instead
                name = os.path.join(self.tmp, "missing", "eval.cpp")
            else:
                name = os.path.join(ro, "eval.cpp")
            rc, out, err = self.leaklint(["--format", "json", "--stdin-filename", name], BUFFER, cwd=self.tmp)
            doc = json.loads(out)
            kinds = [e["kind"] for e in doc["errors"]]
            self.assertIn("buffer-copy", kinds, out)
            self.assertIn("LL101", [f["rule"] for f in doc["findings"]])  # still analysed (syntactically)
            self.assertEqual(listing(ro), ["net.h"])
        finally:
            os.chmod(ro, 0o755)

    def test_signal_removes_the_copy(self):
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.tmp, "cold-cache"))  # cold: slow enough to stop
        p = subprocess.Popen([BIN, "--show-low-confidence", "--stdin-filename", "src/eval.cpp"], cwd=self.proj, env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdin.write(BUFFER.encode())
        p.stdin.close()
        src = os.path.join(self.proj, "src")
        seen = None
        for _ in range(3000):  # until the copy exists (or the run ended)
            seen = [f for f in os.listdir(src) if ".leaklint-" in f]
            if seen or p.poll() is not None:
                break
            time.sleep(0.01)
        self.assertTrue(seen, "no temporary copy beside the file was seen")
        self.assertRegex(seen[0], r"^eval\.leaklint-[A-Za-z0-9]{6}\.cpp$")
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
        p.stdout.close()
        p.stderr.close()
        self.assertEqual(p.returncode, -signal.SIGTERM)
        self.assert_nothing_left()

    def test_signal_removes_the_private_directory_too(self):
        # A buffer whose directory cannot take the copy goes to a private directory under
        # $TMPDIR: a signal removes the copy and that directory.
        tmpdir = os.path.join(self.tmp, "tmpdir")
        os.makedirs(tmpdir, exist_ok=True)
        env = dict(os.environ, TMPDIR=tmpdir, XDG_CACHE_HOME=os.path.join(self.tmp, "cold-cache-2"))
        p = subprocess.Popen([BIN, "--show-low-confidence", "--stdin-filename", os.path.join(self.tmp, "missing", "eval.cpp")], cwd=self.tmp,
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        p.stdin.write(BUFFER.encode())
        p.stdin.close()
        seen = []
        for _ in range(3000):
            seen = [os.path.join(r, f) for r, _, fs in os.walk(tmpdir) for f in fs]
            if seen or p.poll() is not None:
                break
            time.sleep(0.01)
        self.assertTrue(seen, "no temporary copy was seen")
        self.assertRegex(os.path.relpath(seen[0], tmpdir), r"^leaklint-buffer-[A-Za-z0-9]{6}/eval\.leaklint-[A-Za-z0-9]{6}\.cpp$")
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)
        p.stdout.close()
        p.stderr.close()
        self.assertEqual(p.returncode, -signal.SIGTERM)
        self.assertEqual(os.listdir(tmpdir), [])

    def test_lsp_publishes_findings_for_a_cpp_buffer(self):
        env = dict(os.environ, XDG_CACHE_HOME=self.cache)
        p = subprocess.Popen([BIN, "lsp", "--stdio"], cwd=self.proj, env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)

        def send(msg):
            body = json.dumps(msg).encode()
            p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            p.stdin.flush()

        def receive():
            length = None
            while True:
                line = p.stdout.readline()
                if not line:
                    raise EOFError("server closed")
                if line in (b"\r\n", b"\n"):
                    break
                k, _, v = line.decode().partition(":")
                if k.lower() == "content-length":
                    length = int(v)
            return json.loads(p.stdout.read(length))

        uri = "file://" + os.path.join(self.proj, "src", "eval.cpp")
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        send({"jsonrpc": "2.0", "method": "textDocument/didOpen",
              "params": {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1, "text": BUFFER}}})
        diags = None
        try:
            while diags is None:
                m = receive()
                if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri:
                    diags = m["params"]["diagnostics"]
            send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
            send({"jsonrpc": "2.0", "method": "exit"})
            p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        self.assertEqual([(d["code"], d["range"]["start"]) for d in diags],
                         [("LL101", {"line": 9, "character": 27})], diags)
        self.assertEqual(p.returncode, 0)
        self.assert_nothing_left()


GUARDED = """#include <torch/torch.h>

double evaluate(torch::nn::Linear& model, const std::vector<torch::Tensor>& batches) {
  torch::NoGradGuard no_grad;
  model->eval();
  double total = 0;
  for (const auto& x : batches) total += model->forward(x).sum().item<double>();
  return total;
}

double untouched(torch::nn::Linear& model, const std::vector<torch::Tensor>& batches) {
  model->eval();
  double total = 0;
  for (const auto& x : batches) total += model->forward(x).sum().item<double>();
  return total;
}
"""


class CppDiffBase(unittest.TestCase):
    """--diff-base on C++: removing a NoGradGuard line reports the untouched forward it guarded."""

    def test_removed_guard_reports_the_forward_of_its_function_only(self):
        tmp = tempfile.mkdtemp(prefix="leaklint-cpp-diffbase-")
        try:
            env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                   "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
            path = os.path.join(tmp, "eval.cpp")
            with open(path, "w") as f:
                f.write(GUARDED)
            for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
                subprocess.run(["git", "-C", tmp, *args], check=True, capture_output=True, env=env)
            with open(path, "w") as f:
                f.write(GUARDED.replace("  torch::NoGradGuard no_grad;\n", ""))
            cache = ["--cache-dir", os.path.join(tmp, "cache")]
            p = subprocess.run([BIN, "--show-low-confidence", *cache, "--format", "json", "."], cwd=tmp, capture_output=True, text=True,
                               timeout=600)
            everything = sorted((f["rule"], f["line"]) for f in json.loads(p.stdout)["findings"])
            self.assertIn(("LL101", 6), everything, p.stdout + p.stderr)
            self.assertIn(("LL101", 13), everything, p.stdout + p.stderr)
            p = subprocess.run([BIN, "--show-low-confidence", *cache, "--diff-base", "HEAD", "--format", "json", "."], cwd=tmp,
                               capture_output=True, text=True, timeout=600)
            got = sorted((f["rule"], f["line"]) for f in json.loads(p.stdout)["findings"])
            self.assertEqual(got, [f for f in everything if f[1] < 10], p.stderr)  # evaluate's, not untouched's
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    BIN = os.path.abspath(sys.argv[1])
    del sys.argv[1:2]
    unittest.main(verbosity=2)
