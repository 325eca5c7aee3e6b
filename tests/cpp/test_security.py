#!/usr/bin/env python3
"""leaklint-cpp on an untrusted tree: regression tests of the security review.

A scanned tree may be a stranger's (CI on pull requests, pre-commit, editors). These tests
plant hostile inputs in a fresh temporary directory and run the real binaries:

* compile_commands.json flags that write files, load plugins or read options from elsewhere
  never take effect (the allowlist in frontend/cpp/arg_policy.cpp);
* #include / #embed of files outside the tree, and .cpp symlinks out of the tree, never put
  those files' bytes into a report (frontend/cpp/contained_fs.cpp, no Clang message text);
* a macro bomb ends in a per-file `resource-limit` diagnostic, the other files still report;
* leaklint-cpp dies with a killed leaklint; leaklint never runs a leaklint-cpp found through a
  relative PATH entry.

Run by CTest (`cpp_security`) when leaklint is built with -DLEAKLINT_ENABLE_CPP=ON.
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from proctree import descendants  # noqa: E402  (tests/proctree.py)

ARGS = None
MARKER = "LLSECRET_7f3a9c"

GOOD_TRAIN = """void train(torch::nn::Linear& model, torch::optim::SGD& optimizer, const std::vector<torch::Tensor>& batches) {
  torch::Tensor total = torch::zeros({});
  for (const auto& x : batches) {
    optimizer.zero_grad();
    torch::Tensor loss = model(x).pow(2).mean();
    loss.backward();
    optimizer.step();
    total += loss;
  }
}
"""


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


# leaklint sends a C/C++ unit to leaklint-cpp only when its text holds something a rule
# starts from (checks/relevance.hpp). The hostile sources below must reach Clang through
# leaklint too, so each .cpp gets a member forward call appended (after its own lines, so
# their line numbers do not move); the skipping itself is tested in tests/cli/test_cli.py.
PROBE = "\nstruct LeaklintProbe { int forward(int); };\nint leaklint_probe(LeaklintProbe& p) { return p.forward(0); }\n"


def write(path, text, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if path.endswith(".cpp") and ".forward(" not in text:
        text += PROBE
    with open(path, "w") as fh:
        fh.write(text)
    if mode is not None:
        os.chmod(path, mode)
    return path


def env_for(extra=None, drop=()):
    e = dict(os.environ)
    e["LEAKLINT_CPP"] = ARGS.leaklint_cpp
    for k in drop:
        e.pop(k, None)
    if extra:
        e.update(extra)
    return e


def run(cmd, cwd, env=None, timeout=600):
    return subprocess.run(cmd, cwd=cwd, env=env if env is not None else env_for(), capture_output=True, text=True,
                          errors="replace", timeout=timeout)


def lcpp(args, cwd, env=None):
    p = run([ARGS.leaklint_cpp, "--no-cache"] + args, cwd, env)
    check(p.returncode == 0, "leaklint-cpp exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    return p, json.loads(p.stdout)


def leaklint(args, cwd, env=None, fmt="json"):
    p = run([ARGS.leaklint, "--no-cache", "--show-low-confidence", "--format", fmt] + args, cwd, env)
    check(p.returncode in (0, 1), "leaklint exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    return p


def snapshot(root):
    """Every path under root with its type, size, mtime and content hash."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            h = ""
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as fh:
                    h = hashlib.sha256(fh.read()).hexdigest()
            out[os.path.relpath(p, root)] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, h)
    return out


def kinds(res):
    return [d["kind"] for d in res["diagnostics"]]


def db(tree, args, file="a.cpp"):
    write(os.path.join(tree, "compile_commands.json"),
          json.dumps([{"directory": tree, "file": file, "arguments": ["clang++"] + args + ["-c", file]}]))


def no_marker(p, what, markers=(MARKER,)):
    for m in markers:
        check(m not in p.stdout and m not in p.stderr, "%s: %r leaked into the output:\n%s\n%s" %
              (what, m, p.stdout[-3000:], p.stderr[-2000:]))


# ---------------------------------------------------------------- compile database flags


def writing_flag_cases(d):
    out = os.path.join(d, "outside")
    sentinel = os.path.join(out, "victim.sh")
    return [
        ("-Xclang -dependency-file", ["-Xclang", "-dependency-file", "-Xclang", sentinel, "-Xclang", "-MT",
                                      "-Xclang", "touch pwned"]),
        ("-MD -MF", ["-MD", "-MF", os.path.join(out, "dep.d")]),
        ("-MMD -MF in tree", ["-MMD", "-MF", "dep-in-tree.d"]),
        ("-Wp,-MD", ["-Wp,-MD," + os.path.join(out, "wp.d")]),
        ("--serialize-diagnostics", ["--serialize-diagnostics", os.path.join(out, "diag.dia")]),
        ("-Xclang -header-include-file", ["-H", "-Xclang", "-header-include-file", "-Xclang",
                                          os.path.join(out, "headers.txt")]),
        ("-fmodules-cache-path", ["-fmodules", "-fcxx-modules", "-fmodules-cache-path=" + os.path.join(out, "mc")]),
        ("-o", ["-o", sentinel]),
        ("-save-temps", ["-save-temps=obj", "-o", os.path.join(out, "st.o")]),
        ("-ftime-trace", ["-ftime-trace=" + os.path.join(out, "trace.json")]),
        ("-fproc-stat-report", ["-fproc-stat-report=" + os.path.join(out, "stat.csv")]),
        ("-Xclang -MT via -Xpreprocessor", ["-Xpreprocessor", "-MD", "-Xpreprocessor", "-MF", "-Xpreprocessor",
                                            os.path.join(out, "xp.d")]),
    ]


def test_database_flags_write_no_file(d):
    """Each file-writing flag of a planted compile_commands.json: nothing under the temporary
    directory (the tree and a sentinel beside it) is created or changed, in a plain scan."""
    out = os.path.join(d, "outside")
    write(os.path.join(out, "victim.sh"), "#!/bin/sh\necho harmless\n", 0o755)
    for name, flags in writing_flag_cases(d):
        tree = os.path.join(d, "tree")
        shutil.rmtree(tree, ignore_errors=True)
        write(os.path.join(tree, "inc", "local.h"), "int helper();\n")
        write(os.path.join(tree, "a.cpp"), '#include "inc/local.h"\nint main() { return helper(); }\n')
        db(tree, flags)
        before = snapshot(d)
        p, res = lcpp(["a.cpp"], tree)
        check(snapshot(d) == before, "%s: leaklint-cpp changed files: %s" % (name, sorted(set(snapshot(d)) ^ set(before))))
        check("compile-flags-dropped" not in kinds(res[0]), "%s: dropped flags reported without --verbose" % name)
        p = leaklint(["tree"], d)
        check(snapshot(d) == before, "%s: leaklint changed files: %s" % (name, sorted(set(snapshot(d)) ^ set(before))))
        check("compile-flags-dropped" not in p.stdout, "%s: dropped flags reported without --verbose" % name)
        p = leaklint(["-v", "tree"], d)
        check("compile-flags-dropped" in p.stdout, "%s: leaklint -v does not report dropped flags" % name)
        check(snapshot(d) == before, "%s: leaklint -v changed files" % name)
        p, res = lcpp(["--verbose", "a.cpp"], tree)
        check("compile-flags-dropped" in kinds(res[0]), "%s: --verbose does not report dropped flags: %s" % (name, res))
        check(snapshot(d) == before, "%s: leaklint-cpp --verbose changed files" % name)


def compiler():
    for c in ("cc", "gcc", "clang", "clang-19"):
        if shutil.which(c):
            return shutil.which(c)
    raise AssertionError("no C compiler to build the test plugin")


def test_plugins_response_and_config_files_ignored(d):
    """-fplugin, -Xclang -load, -fpass-plugin, @file, --config and a clang++.cfg in the tree:
    nothing is loaded or read (the plugin's constructor would create a sentinel)."""
    sentinel = os.path.join(d, "outside", "plugin-ran")
    os.makedirs(os.path.dirname(sentinel))
    src = write(os.path.join(d, "plugin.c"),
                '#include <stdio.h>\n__attribute__((constructor)) static void ran(void) {\n'
                '  FILE* f = fopen("%s", "w"); if (f) fclose(f);\n}\n' % sentinel)
    so = os.path.join(d, "outside", "libevil.so")
    p = subprocess.run([compiler(), "-shared", "-fPIC", "-o", so, src], capture_output=True, text=True)
    check(p.returncode == 0, "cannot build the test plugin: %s" % p.stderr)
    tree = os.path.join(d, "tree")
    write(os.path.join(tree, "a.cpp"), "int main() { return 0; }\n")
    dep = os.path.join(d, "outside", "rsp.d")
    write(os.path.join(tree, "flags.rsp"), "-MD -MF %s -Xclang -load -Xclang %s\n" % (dep, so))
    write(os.path.join(tree, "evil.cfg"), "-MD -MF %s\n-fplugin=%s\n" % (dep, so))
    write(os.path.join(tree, "clang++.cfg"), "-MD -MF %s\n-fplugin=%s\n" % (dep, so))
    write(os.path.join(tree, "clang.cfg"), "-MD -MF %s\n-fplugin=%s\n" % (dep, so))
    for flags in (["-fplugin=" + so], ["-Xclang", "-load", "-Xclang", so], ["-fpass-plugin=" + so],
                  ["-Xclang", "-plugin", "-Xclang", "x", "-Xclang", "-load", "-Xclang", so],
                  ["@flags.rsp"], ["@" + os.path.join(tree, "flags.rsp")], ["--config", "evil.cfg"],
                  ["--config=" + os.path.join(tree, "evil.cfg")], ["-mllvm", "-load=" + so]):
        db(tree, flags)
        lcpp(["a.cpp"], tree)
        leaklint(["."], tree)
        check(not os.path.exists(sentinel), "%s: the plugin was loaded" % flags)
        check(not os.path.exists(dep), "%s: flags from elsewhere were used" % flags)


def test_kept_flags_still_apply(d):
    """The allowlist keeps what the analysis needs: -I, -D, -std, -include of a tree file."""
    tree = os.path.join(d, "tree")
    write(os.path.join(tree, "inc", "cfg.h"), "#define FROM_HEADER 1\n")
    write(os.path.join(tree, "pre.h"), "#define FROM_FORCED 1\n")
    write(os.path.join(tree, "a.cpp"), '#include "cfg.h"\n#if !FROM_HEADER || !FROM_FORCED || !FROM_D || '
          '__cplusplus < 201703L\n#error flags lost\n#endif\nint main() { return 0; }\n')
    db(tree, ["-Iinc", "-DFROM_D=1", "-std=c++17", "-include", "pre.h", "-fno-exceptions", "-Werror",
              "-o", "a.o"])
    p, res = lcpp(["a.cpp", "--stats"], tree)
    check(res[0]["diagnostics"] == [], "flags the analysis needs were dropped: %s" % res[0]["diagnostics"])
    check(res[0]["stats"]["semantic"], res[0])
    # A forced include from outside the tree is not used.
    write(os.path.join(d, "outside.h"), "#define FROM_FORCED 1\n")
    db(tree, ["-Iinc", "-DFROM_D=1", "-std=c++17", "-include", os.path.join(d, "outside.h")])
    p, res = lcpp(["a.cpp"], tree)
    check("compile-error" in kinds(res[0]), "-include of a file outside the tree was used: %s" % res[0])


def test_gcc_openmp_flag_is_adapted(d):
    """GCC databases carry -fopenmp; with it Clang defines _OPENMP and LibTorch's headers then
    include <omp.h>, which is GCC's: every file failed over to the syntactic fallback and
    re-parsed LibTorch without the preamble (22 s for two files on a warm cache)."""
    tree = os.path.join(d, "tree")
    write(os.path.join(tree, "a.cpp"), "#ifdef _OPENMP\n#include <omp_from_gcc_only.h>\n#endif\n"
          "int main() { return 0; }\n")
    db(tree, ["-std=gnu++17", "-fopenmp", "-c", "a.cpp", "-o", "a.o"])
    p, res = lcpp(["a.cpp", "--stats", "--verbose"], tree)
    # (The file names no LibTorch: with --verbose it also says it was not analysed for rules.)
    check([x for x in res[0]["diagnostics"] if x["kind"] not in ("compile-flags-dropped", "not-libtorch")] == [],
          "-fopenmp was passed to Clang: %s" % res[0]["diagnostics"])
    check(res[0]["stats"]["semantic"], res[0])
    check(any("-fopenmp" in x["message"] for x in res[0]["diagnostics"]), "-v does not name -fopenmp: %s" % res)


def test_garbage_database_is_reported(d):
    """A compile database that is not JSON, or the wrong shape, gives a diagnostic."""
    tree = os.path.join(d, "tree")
    write(os.path.join(tree, "a.cpp"), "int main() { return 0; }\n")
    for text in ("this is not json {", '{"directory": "/", "command": "cc"}', "[1, 2, 3]"):
        write(os.path.join(tree, "compile_commands.json"), text)
        p, res = lcpp(["a.cpp"], tree)
        msgs = [x["message"] for x in res[0]["diagnostics"] if x["kind"] == "compile-database"]
        check(msgs and "could not be read" in msgs[0], "%r: no compile-database diagnostic: %s" % (text, res))


# ---------------------------------------------------------------- reading outside the tree


def secret_sources(d):
    secret = write(os.path.join(d, "secret"), '%s = "hunter2 password";\n' % MARKER)
    tree = os.path.join(d, "tree")
    embed_tpl = ("template <char... C> struct Leak;\n"
                 "constexpr char data[] = {\n#embed \"%s\"\n};\n"
                 "Leak<" + ", ".join("data[%d]" % i for i in range(len(MARKER) + 8)) + "> leak;\n")
    write(os.path.join(tree, "embed_rel.cpp"), embed_tpl % "../secret")
    write(os.path.join(tree, "embed_abs.cpp"), embed_tpl % secret)
    write(os.path.join(tree, "include_rel.cpp"), '#include "../secret"\nint main() {}\n')
    write(os.path.join(tree, "include_abs.cpp"), '#include "%s"\nint main() {}\n' % secret)
    write(os.path.join(tree, "has_include.cpp"),
          '#if __has_include("../secret")\n#include "../secret"\n#endif\nint main() {}\n')
    os.symlink(secret, os.path.join(tree, "secret_link.h"))
    write(os.path.join(tree, "include_link.cpp"), '#include "secret_link.h"\nint main() {}\n')
    # A .git directory inside the tree is never read either.
    write(os.path.join(tree, ".git", "config"), "[remote]\n\turl = https://user:%s_GIT@example.com/x\n" % MARKER)
    write(os.path.join(tree, "sub", "embed_git.cpp"), embed_tpl % "../.git/config")
    write(os.path.join(tree, "sub", "include_git.cpp"), '#include "../.git/config"\nint main() {}\n')
    # A file that forces the marker through a -include of a database.
    return tree


def leak_markers():
    chars = ", ".join("'%s'" % c for c in MARKER[:8])
    codes = ", ".join(str(ord(c)) for c in MARKER[:8])
    return (MARKER, chars, codes, "hunter2")


def test_include_and_embed_outside_tree_never_reported(d):
    """#include / #embed / __has_include of a file outside the tree (relative, absolute, through
    a symlink) and of the tree's .git: its bytes never appear in text, JSON or SARIF output."""
    tree = secret_sources(d)
    files = sorted(os.path.relpath(os.path.join(dp, f), tree) for dp, _, fs in os.walk(tree) for f in fs
                   if f.endswith(".cpp"))
    # leaklint-cpp alone: from the tree, without and with --root.
    p, res = lcpp(files, tree)
    no_marker(p, "leaklint-cpp", leak_markers())
    p, res = lcpp(["--root", tree] + [os.path.join(tree, f) for f in files], d)
    no_marker(p, "leaklint-cpp --root", leak_markers())
    check(all(r["findings"] == [] or True for r in res), res)
    for fmt in ("text", "json", "sarif"):
        p = leaklint(["tree"], d, fmt=fmt)  # the working directory holds the secret: only the scanned tree counts
        no_marker(p, "leaklint --format " + fmt, leak_markers())
        p = leaklint(["."], tree, fmt=fmt)
        no_marker(p, "leaklint . --format " + fmt, leak_markers())
    # A database that points at the secret in every way it could.
    db(tree, ["-I..", "-isystem", d, "-include", os.path.join(d, "secret"), "--embed-dir=" + d],
       file="include_rel.cpp")
    p, res = lcpp(files, tree)
    no_marker(p, "leaklint-cpp with a database", leak_markers())


def test_symlinked_source_outside_tree_never_read(d):
    """A .cpp symlink to a file outside the tree: refused (outside-tree), its text is never
    printed, whether named on the command line or found in a directory."""
    outside = write(os.path.join(d, "private", "notes.txt"),
                    "%s this line is not C++ ( at all\nsecond line %s\n" % (MARKER, MARKER))
    tree = os.path.join(d, "tree")
    os.makedirs(tree)
    os.symlink(outside, os.path.join(tree, "link.cpp"))
    os.symlink(os.path.join(d, "private"), os.path.join(tree, "linkdir"))
    os.symlink(outside, os.path.join(d, "private", "again.cpp"))
    write(os.path.join(tree, "ok.cpp"), GOOD_TRAIN)
    p, res = lcpp(["link.cpp", "linkdir/again.cpp", "ok.cpp"], tree)
    no_marker(p, "leaklint-cpp")
    check("outside-tree" in kinds(res[0]), res[0])
    check(res[0]["source"] == "", "the outside file's text was returned")
    check([f["rule"] for f in res[2]["findings"]] == ["LL102"], res[2])
    # Absolute paths from elsewhere: the tree is --root, else the file's directory.
    p = run([ARGS.leaklint_cpp, "--no-cache", "--root", tree, os.path.join(tree, "link.cpp"),
             os.path.join(tree, "linkdir", "again.cpp")], d)
    no_marker(p, "leaklint-cpp --root (absolute path)")
    p = run([ARGS.leaklint_cpp, "--no-cache", os.path.join(tree, "link.cpp")], "/")
    no_marker(p, "leaklint-cpp (absolute path)")
    for fmt in ("text", "json", "sarif"):
        for args, cwd in ((["tree"], d), (["link.cpp", "ok.cpp"], tree), (["."], tree)):
            p = leaklint(args, cwd, fmt=fmt)
            no_marker(p, "leaklint %s --format %s" % (args, fmt))


# ---------------------------------------------------------------- resources and processes


def macro_bomb():
    lines = ["#define D(a) a a", "#define X0 1 +", "#define G(a)", "#define F(a) G(a)"]
    lines += ["#define X%d D(X%d)" % (i, i - 1) for i in range(1, 41)]
    lines += ["F(X40)", "int v = 0;"]
    return "\n".join(lines) + "\n"


def test_macro_bomb_hits_memory_limit(d):
    """A 46-line macro bomb: a `resource-limit` diagnostic in bounded time; the other files of
    the run still report."""
    tree = os.path.join(d, "tree")
    write(os.path.join(tree, "bomb.cpp"), macro_bomb())
    write(os.path.join(tree, "good.cpp"), GOOD_TRAIN)
    write(os.path.join(tree, "good2.cpp"), GOOD_TRAIN)
    env = env_for({"LEAKLINT_CPP_MEMORY_MB": "600", "LEAKLINT_CPP_TIMEOUT": "500"})
    p = run([ARGS.leaklint, "--no-cache", "--show-low-confidence", "--format", "json", "-j", "2", "."], tree, env=env)
    out = json.loads(p.stdout)
    errs = {(e["path"], e["kind"]) for e in out.get("errors", [])}
    check(("bomb.cpp", "resource-limit") in errs, "no resource-limit diagnostic: %s" % out.get("errors"))
    rules = sorted((f["path"], f["rule"]) for f in out["findings"])
    check(rules == [("good.cpp", "LL102"), ("good2.cpp", "LL102")], "other files lost findings: %s" % rules)
    # The memory limit, not the 500 s per-file timeout, stopped it: the diagnostic says which
    # (a `resource-limit`, checked above), so no clock is needed to tell.
    check(("bomb.cpp", "internal") not in errs, "stopped by the timeout, not the memory limit: %s" % out.get("errors"))
    # leaklint-cpp alone ends with status 75, and --memory-limit overrides the environment.
    p = run([ARGS.leaklint_cpp, "--no-cache", "--memory-limit", "600", "bomb.cpp"], tree,
            env=env_for({"LEAKLINT_CPP_MEMORY_MB": "0"}))
    check(p.returncode == 75, "leaklint-cpp exited %d on the macro bomb" % p.returncode)


def children_of(pid):
    """Descendants of `pid`: leaklint analyses in a child process of its own (the crash guard),
    which starts leaklint-cpp."""
    return descendants(pid)


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except OSError:
        return False


def test_child_dies_with_killed_parent(d):
    """kill -9 of leaklint while leaklint-cpp works on a slow file: its analysis process and
    leaklint-cpp are gone soon after."""
    tree = os.path.join(d, "tree")
    write(os.path.join(tree, "slow.cpp"), macro_bomb())
    env = env_for({"LEAKLINT_CPP_MEMORY_MB": "6000", "LEAKLINT_CPP_TIMEOUT": "600"})
    parent = subprocess.Popen([ARGS.leaklint, "--no-cache", "--show-low-confidence", "--format", "json", "slow.cpp"], cwd=tree, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kids = []
    try:
        deadline = time.monotonic() + 60
        while not kids and time.monotonic() < deadline:
            kids = [k for k in children_of(parent.pid)
                    if os.path.basename(os.readlink("/proc/%d/exe" % k)).startswith("leaklint-cpp")]
            time.sleep(0.05)
        check(kids, "no leaklint-cpp child appeared")
        time.sleep(1.0)  # it is working on the file now
        check(all(alive(k) for k in kids), "the child ended before the parent was killed")
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 10
        while any(alive(k) for k in kids) and time.monotonic() < deadline:
            time.sleep(0.05)
        check(not any(alive(k) for k in kids), "leaklint-cpp outlived its killed parent")
    finally:
        for k in kids:
            if alive(k):
                os.kill(k, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_relative_path_entries_not_used(d):
    """leaklint without LEAKLINT_CPP and without a leaklint-cpp beside it never runs one found
    through a relative or empty PATH entry (the working directory may be the scanned tree)."""
    bindir = os.path.join(d, "bin")
    os.makedirs(bindir)
    ll = os.path.join(bindir, "leaklint")
    shutil.copy2(ARGS.leaklint, ll)
    tree = os.path.join(d, "tree")
    sentinel = os.path.join(d, "fake-ran")
    write(os.path.join(tree, "leaklint-cpp"), "#!/bin/sh\ntouch '%s'\necho '[]'\n" % sentinel, 0o755)
    write(os.path.join(tree, "tools", "leaklint-cpp"), "#!/bin/sh\ntouch '%s'\necho '[]'\n" % sentinel, 0o755)
    write(os.path.join(tree, "a.cpp"), GOOD_TRAIN)
    system_path = ":".join(p for p in os.environ.get("PATH", "/usr/bin:/bin").split(":")
                           if p.startswith("/") and not os.path.exists(os.path.join(p, "leaklint-cpp")))
    for path in (".:" + system_path, ":" + system_path, system_path + ":", "tools:" + system_path,
                 "./tools:" + system_path):
        env = env_for({"PATH": path}, drop=("LEAKLINT_CPP",))
        p = run([ll, "--no-cache", "--show-low-confidence", "--format", "json", "a.cpp"], tree, env=env)
        check(not os.path.exists(sentinel), "PATH=%r: a leaklint-cpp from a relative PATH entry ran" % path)
        out = json.loads(p.stdout)
        check(any(e["kind"] == "unsupported" for e in out.get("errors", [])), "PATH=%r: %s" % (path, out))
    # An absolute PATH entry is still used.
    env = env_for({"PATH": os.path.dirname(ARGS.leaklint_cpp) + ":" + system_path}, drop=("LEAKLINT_CPP",))
    p = run([ll, "--no-cache", "--show-low-confidence", "--format", "json", "a.cpp"], tree, env=env)
    out = json.loads(p.stdout)
    check([f["rule"] for f in out["findings"]] == ["LL102"], "absolute PATH entry not used: %s" % out)


TESTS = [v for k, v in sorted(globals().items()) if k.startswith("test_")]


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--leaklint-cpp", required=True)
    ap.add_argument("--leaklint", required=True)
    ap.add_argument("only", nargs="*")
    ARGS = ap.parse_args()
    ARGS.leaklint_cpp = os.path.abspath(ARGS.leaklint_cpp)
    ARGS.leaklint = os.path.abspath(ARGS.leaklint)
    failed = 0
    for t in TESTS:
        if ARGS.only and not any(o in t.__name__ for o in ARGS.only):
            continue
        d = os.path.realpath(tempfile.mkdtemp(prefix="leaklint-sec-test-"))
        t0 = time.monotonic()
        try:
            t(d)
            print("ok   %s (%.1f s)" % (t.__name__, time.monotonic() - t0))
        except Exception:
            failed += 1
            print("FAIL", t.__name__)
            traceback.print_exc()
        finally:
            shutil.rmtree(d, ignore_errors=True)
        sys.stdout.flush()
    print("%d failed" % failed if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
