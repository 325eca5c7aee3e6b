#!/usr/bin/env python3
"""Runs leaklint-cpp on every tests/fixtures/<ID>/**/*.cpp and checks its findings exactly.

Each fixture declares what it expects with `// expect: LL101` (or `// expect: LL101, LL102`)
at the end of the flagged line; any finding without a marker, or a marker without a
finding, fails. `// fixture-config: key = value` lines configure the file (TOML lines of
.leaklint.toml). A fixture is analysed with the path relative to its rule folder, as the
Python fixture runner does.

Modes:
  default            Clang with LibTorch's headers: no diagnostics allowed, no finding may be
                     low confidence.
  --without-headers  LEAKLINT_NO_TORCH_INCLUDES=1 so LibTorch is unreachable: every file
                     must get a `missing-headers` diagnostic, every finding must be marked
                     low confidence, and the findings must match the markers except for the
                     differences listed in tests/cpp/syntactic_expectations.txt.
  --compile-check CLANG  Also checks that each fixture compiles (CLANG -fsyntax-only against
                     the LibTorch headers), using one shared precompiled header.
                     A fixture naming a `// fixture-missing-header:` compiles when that
                     header's "file not found" is its only error.
"""
import argparse
import atexit
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

EXPECT_RE = re.compile(r"//\s*expect:\s*((?:LL\d{3}[ ,]*)+)")
ID_RE = re.compile(r"LL\d{3}")
CONFIG_PREFIX = "// fixture-config:"
# `// fixture-missing-header: a/b.h` names a project header the fixture includes on purpose and
# that is not there: Clang's recovery must still see the rule's facts (default mode).
MISSING_PREFIX = "// fixture-missing-header:"


def discover(root, only):
    out = []
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith((".cpp", ".cc", ".cxx")):
                full = os.path.join(dirpath, f)
                rel = os.path.relpath(full, root)
                if only and not any(o in rel for o in only):
                    continue
                out.append(rel)
    return sorted(out)


# An expectation may pin the column and key words of the message, as in the Python
# fixtures: `// expect: LL101@28 "forward of `model`" "NoGradGuard", LL102`.
PIN_RE = re.compile(r'(LL\d{3})(?:@(\d+))?((?:\s*"[^"]+")*)')


def pins_of(text):
    """(rule, column or None, [key words]) of each expectation after `expect:`."""
    out = []
    for m in PIN_RE.finditer(text):
        out.append((m.group(1), int(m.group(2)) if m.group(2) else None, re.findall(r'"([^"]+)"', m.group(3))))
    return out


def expectations(path, pins=None):
    expected, toml = set(), []
    with open(path, encoding="utf-8") as fh:
        for no, line in enumerate(fh, 1):
            m = re.search(r"//\s*expect:(.*)$", line)
            if m:
                for rid, col, words in pins_of(m.group(1)):
                    expected.add((no, rid))
                    if pins is not None and (col or words):
                        pins[(no, rid)] = (col, words)
            if line.startswith(CONFIG_PREFIX):
                toml.append(line[len(CONFIG_PREFIX):].strip())
    return expected, toml


def missing_headers_of(path):
    with open(path, encoding="utf-8") as fh:
        return [l[len(MISSING_PREFIX):].strip() for l in fh if l.startswith(MISSING_PREFIX)]


def load_known_differences(path):
    """`LL101/ok_x.cpp +LL101@12` (an extra finding) / `-LL102@9` (a missing one)."""
    known = {}
    if not path or not os.path.exists(path):
        return known
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            for item in parts[1:]:
                m = re.fullmatch(r"([+-])(LL\d{3})@(\d+)", item)
                if not m:
                    raise SystemExit("bad line in %s: %s" % (path, line))
                known.setdefault(parts[0], set()).add((m.group(1), int(m.group(3)), m.group(2)))
    return known


def run_group(args, root, rule_dir, rels, toml, env):
    """One leaklint-cpp process for the files of one rule folder (same config)."""
    cwd = os.path.join(root, rule_dir)
    cmd = [args.leaklint_cpp, "--no-source", "--stats"]
    cfg_file = None
    if toml:
        fd, cfg_file = tempfile.mkstemp(suffix=".toml")
        with os.fdopen(fd, "w") as fh:
            fh.write("\n".join(toml) + "\n")
        cmd += ["--config", cfg_file]
    cmd += ["--"] + [os.path.relpath(os.path.join(root, r), cwd) for r in rels]
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=args.timeout)
    finally:
        if cfg_file:
            os.unlink(cfg_file)
    if p.returncode != 0:
        return {r: {"error": "leaklint-cpp exited %d: %s" % (p.returncode, p.stderr[-2000:])} for r in rels}
    try:
        data = json.loads(p.stdout)
    except json.JSONDecodeError as e:
        return {r: {"error": "bad JSON (%s): %s" % (e, p.stdout[:500])} for r in rels}
    return {r: d for r, d in zip(rels, data)}


def compile_check(clang, root, rels, jobs):
    inc = "/usr/include/torch/csrc/api/include"
    for cand in [os.environ.get("LIBTORCH", "") + "/include/torch/csrc/api/include", inc]:
        if os.path.isdir(cand):
            inc = cand
            break
    tmp = tempfile.mkdtemp(prefix="leaklint-compile-check-")
    atexit.register(shutil.rmtree, tmp, True)
    hdr = os.path.join(tmp, "torch_all.h")
    with open(hdr, "w") as fh:
        fh.write("#include <torch/torch.h>\n")
    flags = ["-std=c++17", "-isystem", inc, "-w"]
    pch = hdr + ".pch"
    p = subprocess.run([clang, "-x", "c++-header", hdr, "-o", pch] + flags, capture_output=True, text=True)
    if p.returncode != 0:
        return {"<pch>": p.stderr[-3000:]}

    def one(rel):
        q = subprocess.run([clang, "-fsyntax-only", "-include-pch", pch, os.path.join(root, rel)] + flags,
                           capture_output=True, text=True)
        return rel, (q.stderr[-3000:] if q.returncode != 0 else None)

    bad = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        for rel, err in ex.map(one, rels):
            if err:
                bad[rel] = err
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--leaklint-cpp", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--without-headers", action="store_true")
    ap.add_argument("--known", default=os.path.join(os.path.dirname(__file__), "syntactic_expectations.txt"))
    ap.add_argument("--compile-check", metavar="CLANG")
    ap.add_argument("--only-compile", action="store_true", help="with --compile-check: skip the analysis")
    ap.add_argument("--timeout", type=int, default=1500)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("only", nargs="*", help="only fixtures whose path contains one of these")
    args = ap.parse_args()
    args.leaklint_cpp = os.path.abspath(args.leaklint_cpp)

    root = os.path.abspath(args.fixtures)
    rels = discover(root, args.only)
    if not rels:
        print("no C++ fixtures found under", root)
        return 1
    env = dict(os.environ)
    if args.without_headers:
        env["LEAKLINT_NO_TORCH_INCLUDES"] = "1"
    known = load_known_differences(args.known) if args.without_headers else {}

    # One process per (rule folder, config); folders run in parallel.
    groups = {}
    meta = {}
    missing_of = {}  # rel -> project headers the fixture includes on purpose and that are absent
    pins = {}  # rel -> {(line, rule): (column or None, [key words])}
    for rel in rels:
        expected, toml = expectations(os.path.join(root, rel), pins.setdefault(rel, {}))
        meta[rel] = expected
        missing_of[rel] = missing_headers_of(os.path.join(root, rel))
        rule_dir = rel.split(os.sep, 1)[0]
        groups.setdefault((rule_dir, "\n".join(toml)), []).append(rel)
    results = {}
    if args.only_compile:
        groups = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
        futs = [ex.submit(run_group, args, root, rd, files, toml.split("\n") if toml else [], env)
                for (rd, toml), files in groups.items()]
        for f in futs:
            results.update(f.result())

    failures = 0
    total_seconds = 0.0
    for rel in ([] if args.only_compile else rels):
        res = results.get(rel, {"error": "no result"})
        problems = []
        if "error" in res:
            problems.append(res["error"])
        else:
            stats = res.get("stats", {})
            total_seconds += stats.get("seconds", 0.0)
            kinds = [d["kind"] for d in res.get("diagnostics", [])]
            if "not-libtorch" in kinds:
                # A file that never names LibTorch, whose own headers are absent: skipped with
                # that one diagnostic in both modes, and nothing reported.
                if kinds != ["not-libtorch"]:
                    problems.append("expected only the not-libtorch diagnostic, got %s" % kinds)
            elif args.without_headers:
                if "missing-headers" not in kinds:
                    problems.append("expected a missing-headers diagnostic, got %s" % res.get("diagnostics"))
                for d in res.get("diagnostics", []):
                    if d["kind"] != "missing-headers":
                        problems.append("diagnostic: %s: %s" % (d["kind"], d["message"]))
            else:
                missing = missing_of[rel]
                for d in res.get("diagnostics", []):
                    if d["kind"] == "missing-headers" and missing and all("'%s'" % h in d["message"] for h in missing):
                        continue
                    problems.append("diagnostic %s at %s:%s: %s" % (d["kind"], d["line"], d["col"], d["message"]))
                if missing and "missing-headers" not in kinds:
                    problems.append("expected a missing-headers diagnostic for %s" % ", ".join(missing))
                if not stats.get("semantic", False):
                    problems.append("not analysed semantically")
            got = set()
            for f in res.get("findings", []):
                if f.get("suppressed"):
                    continue
                got.add((f["line"], f["rule"]))
                # With headers a finding is low-confidence only when the impact policy made it weak,
                # and then its message says why (docs/impact.md).
                weak = "(low confidence: " in f.get("message", "")
                if f.get("low_confidence") != (args.without_headers or weak):
                    problems.append("%s at line %d: low_confidence=%s" % (f["rule"], f["line"], f.get("low_confidence")))
                # Without headers every finding is low-confidence, and its message says why.
                if args.without_headers and not weak:
                    problems.append("%s at line %d: low-confidence message without its reason" % (f["rule"], f["line"]))
            expected = set(meta[rel])
            allowed = known.get(rel.replace(os.sep, "/"), set())
            for sign, line, rule in allowed:
                if sign == "+":
                    expected.add((line, rule))
                else:
                    expected.discard((line, rule))
            for line, rule in sorted(got - expected):
                msg = next((f["message"] for f in res["findings"] if f["line"] == line and f["rule"] == rule), "")
                problems.append("unexpected %s at line %d: %s" % (rule, line, msg))
            for line, rule in sorted(expected - got):
                problems.append("expected %s at line %d but found none" % (rule, line))
            # Pinned column and key words: checked on the semantic analysis (without headers
            # the syntactic lowering may place and word a finding differently).
            if not args.without_headers:
                for (line, rule), (col, words) in sorted(pins.get(rel, {}).items()):
                    cands = [f for f in res.get("findings", []) if f["line"] == line and f["rule"] == rule]
                    if cands and not any((col is None or f["col"] == col) and all(w in f["message"] for w in words)
                                         for f in cands):
                        problems.append("%s at line %d does not match its pinned column %s and key words %s: %s"
                                        % (rule, line, col, words, [(f["col"], f["message"]) for f in cands]))
        if problems:
            failures += 1
            print("FAIL", rel)
            for p in problems:
                print("    ", p)
        else:
            detail = ""
            if args.verbose and "stats" in res:
                s = res["stats"]
                detail = "  (%.2fs, pch %s)" % (s.get("seconds", 0), s.get("pch"))
            print("ok  ", rel + detail)

    if args.compile_check:
        bad = compile_check(args.compile_check, root, rels, args.jobs)
        # A fixture that includes a missing project header on purpose compiles up to it: its
        # only error must be that header's "file not found".
        for rel in list(bad):
            missing = missing_of[rel]
            errors = [l for l in bad[rel].splitlines() if " error: " in l]
            if missing and errors and all(any("'%s' file not found" % h in l for h in missing) for l in errors):
                del bad[rel]
        for rel, err in sorted(bad.items()):
            failures += 1
            print("FAIL (does not compile)", rel)
            print("    " + err.replace("\n", "\n    "))
        if not bad:
            print("all %d fixtures compile with %s" % (len(rels), args.compile_check))

    mode = "without LibTorch headers" if args.without_headers else "with LibTorch headers"
    print("%d/%d C++ fixtures pass (%s); analysis time %.1fs" % (len(rels) - failures, len(rels), mode, total_seconds))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
