#!/usr/bin/python3
"""Benchmark driver for bench/run_bench.sh (see that script for usage).

Times, over one corpus of Python files on one machine:
  * leaklint_parse_only (tree-sitter parse of every file, one thread: the floor),
  * leaklint --no-cache -j1 and -j2,
  * leaklint with a result cache: a cold run that fills an empty cache, then warm runs,
  * flake8 --select=F (pyflakes checks only) with 1 and 2 jobs,
each under /usr/bin/time -v (CPU = user + sys, peak RSS), repeated; prints a dated
markdown report (corpus, machine, table, ratios against the targets) on stdout.
Standard library only; run with Debian's /usr/bin/python3.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# Same directories leaklint's discovery never descends into (cli/discover.cpp).
SKIP_DIRS = {
    ".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", "site-packages", ".eggs", ".direnv", "node_modules", "build", ".venv",
    "venv", "env",
}

TARGETS = {
    "cpu_vs_parse": 1.3,    # leaklint -j1 CPU / parse-only CPU, at most
    "scaling": 1.8,         # -j1 wall / -j2 wall, at least
    "vs_flake8": 15.0,      # flake8 wall / leaklint wall, at least
    "rss_mib": 150.0,       # peak RSS, below
    "cache": 5.0,           # cold / warm wall, at least
}


def discover(corpus):
    files = []
    for root, dirs, names in os.walk(corpus):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for n in names:
            if n.endswith(".py") or n.endswith(".pyi"):
                files.append(os.path.join(root, n))
    files.sort()
    return files


def describe_corpus(corpus, files):
    sources = {}
    sp = os.path.join(corpus, "SOURCES.txt")
    if os.path.exists(sp):
        with open(sp) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and not line.startswith("#"):
                    sources[parts[0]] = (parts[1], parts[2])
    per = {}
    total_lines = total_bytes = 0
    for p in files:
        top = os.path.relpath(p, corpus).split(os.sep)[0]
        with open(p, "rb") as f:
            data = f.read()
        lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        e = per.setdefault(top, [0, 0, 0])
        e[0] += 1
        e[1] += lines
        e[2] += len(data)
        total_lines += lines
        total_bytes += len(data)
    return per, sources, total_lines, total_bytes


def parse_time_v(path):
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if ": " not in line:
                continue
            k, v = line.rsplit(": ", 1)
            out[k.strip()] = v.strip()
    return {
        "user": float(out.get("User time (seconds)", "nan")),
        "sys": float(out.get("System time (seconds)", "nan")),
        "rss_kib": int(out.get("Maximum resident set size (kbytes)", "0")),
        "exit": int(out.get("Exit status", "0")),
    }


class Runner:
    def __init__(self, tmp, verbose):
        self.tmp = tmp
        self.verbose = verbose
        self.n = 0

    def run(self, name, cmd, env=None, cwd=None, ok_codes=(0,), stdout_path=None, before=None):
        """One timed run; `before` (if given) runs untimed first (e.g. to empty a cache)."""
        if before:
            before()
        self.n += 1
        tv = os.path.join(self.tmp, "time%d.txt" % self.n)
        out = open(stdout_path or os.devnull, "wb")
        err_path = os.path.join(self.tmp, "stderr%d.txt" % self.n)
        err = open(err_path, "wb")
        t0 = time.perf_counter()
        rc = subprocess.call(["/usr/bin/time", "-v", "-o", tv] + cmd, stdout=out, stderr=err,
                             env=env, cwd=cwd)
        wall = time.perf_counter() - t0
        out.close()
        err.close()
        m = parse_time_v(tv)
        if rc not in ok_codes:
            with open(err_path, "rb") as f:
                tail = f.read()[-2000:].decode("utf-8", "replace")
            raise SystemExit("bench: %s failed (exit %d): %s\n%s" % (name, rc, " ".join(cmd[:6]), tail))
        m["wall"] = wall
        m["cpu"] = m["user"] + m["sys"]
        if self.verbose:
            print("  %-28s wall %7.2f s  cpu %7.2f s  rss %6.1f MiB" %
                  (name, wall, m["cpu"], m["rss_kib"] / 1024.0), file=sys.stderr)
        return m

    def repeat(self, name, n, cmd, **kw):
        return self.summary(name, [self.run(name, cmd, **kw) for _ in range(n)])

    @staticmethod
    def summary(name, runs):
        n = len(runs)
        best = min(runs, key=lambda r: r["wall"])
        return {
            "name": name,
            "n": n,
            "wall": best["wall"],
            "wall_median": statistics.median(r["wall"] for r in runs),
            "cpu": min(r["cpu"] for r in runs),
            "rss_mib": max(r["rss_kib"] for r in runs) / 1024.0,
            "runs": runs,
        }


SPIN = "x = 0\nfor i in range(15_000_000):\n    x += i\n"


def parallel_capacity(tmp, rounds=3):
    spin = os.path.join(tmp, "spin.py")
    with open(spin, "w") as f:
        f.write(SPIN)
    cmd = ["/usr/bin/python3", spin]
    best = None
    for _ in range(rounds):
        t0 = time.perf_counter()
        subprocess.check_call(cmd)
        one = time.perf_counter() - t0
        t0 = time.perf_counter()
        ps = [subprocess.Popen(cmd) for _ in range(2)]
        for p in ps:
            p.wait()
        two = time.perf_counter() - t0
        c = 2.0 * one / two
        best = c if best is None else max(best, c)
    return best


def count_instructions(cmd, env):
    """Instructions executed by `cmd` (valgrind cachegrind, no cache simulation)."""
    r = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                        "--cachegrind-out-file=/dev/null"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    for line in r.stderr.splitlines():
        if "I   refs:" in line or "I refs:" in line:
            return int(line.split(":", 1)[1].strip().replace(",", ""))
    raise SystemExit("bench: valgrind failed: " + r.stderr[-1000:])


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kib = int(f.readline().split()[1])
            mem = "%.0f GiB RAM" % (kib / 1024 / 1024)
    except (OSError, ValueError, IndexError):
        pass
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    return model, nproc, mem, platform.release()


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " / ".join(f.read().split()[:3])
    except OSError:
        return "?"


def git_desc(repo):
    def g(*a):
        r = subprocess.run(["git", "-C", repo] + list(a), capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else ""
    head = g("rev-parse", "--short=12", "HEAD")
    if not head:
        return "unknown"
    dirty = g("status", "--porcelain", "--untracked-files=no")
    return head + (" + uncommitted changes" if dirty else "")


def fmt_ratio(v, target, at_least):
    ok = (v >= target) if at_least else (v <= target)
    return "%.2f" % v, ("%s %.1f" % ("≥" if at_least else "≤", target)), ("yes" if ok else "**no**")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--leaklint", required=True)
    ap.add_argument("--parse-only", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--flake8-repeat", type=int, default=1)
    ap.add_argument("--no-flake8", action="store_true")
    ap.add_argument("--instructions-every", type=int, default=0, metavar="K",
                    help="also count instructions (valgrind cachegrind) of parse-only and "
                         "leaklint -j1 over every K-th file: a CPU ratio that other load on "
                         "the machine cannot disturb")
    ap.add_argument("--markdown-out")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()

    corpus = os.path.abspath(a.corpus)
    files = discover(corpus)
    if not files:
        raise SystemExit("bench: no Python files under %s" % corpus)
    per, sources, total_lines, total_bytes = describe_corpus(corpus, files)

    tmp = tempfile.mkdtemp(prefix="leaklint-bench-")
    try:
        listfile = os.path.join(tmp, "files.txt")
        with open(listfile, "w") as f:
            f.write("\n".join(files) + "\n")

        help_text = subprocess.run([a.leaklint, "--help"], capture_output=True, text=True).stdout
        has_no_cache = "--no-cache" in help_text
        has_cache_dir = "--cache-dir" in help_text

        # Never touch the user's cache: every leaklint run gets a private cache location.
        cache_dir = os.path.join(tmp, "cache")
        env = dict(os.environ)
        env["LEAKLINT_CACHE_DIR"] = cache_dir
        env["XDG_CACHE_HOME"] = os.path.join(tmp, "xdg")

        def clear_cache():
            shutil.rmtree(cache_dir, ignore_errors=True)
            shutil.rmtree(env["XDG_CACHE_HOME"], ignore_errors=True)

        def ll(jobs, no_cache, out=None):
            cmd = [a.leaklint, "-j%d" % jobs, "--exit-zero", "--format", "json"]
            if no_cache and has_no_cache:
                cmd.append("--no-cache")
            if not no_cache and has_cache_dir:
                cmd += ["--cache-dir", cache_dir]
            return cmd + [corpus]

        r = Runner(tmp, a.verbose)
        load_start = loadavg()
        if a.verbose:
            print("bench: %d files, %d lines; load %s" % (len(files), total_lines, load_start),
                  file=sys.stderr)

        # Warm the page cache and check that leaklint sees the same files as the list.
        first_json = os.path.join(tmp, "first.json")
        r.run("warm-up", ll(2, True), env=env, stdout_path=first_json, before=clear_cache)
        ll_files = None
        try:
            with open(first_json) as f:
                ll_files = json.load(f).get("summary", {}).get("files")
        except (OSError, ValueError):
            pass
        r.run("warm-up parse-only", [a.parse_only, listfile])

        # How much parallel CPU the machine gives right now (other tenants, SMT, steal):
        # two copies of a CPU-bound loop at once vs one alone. 2.0 = two full cores; the
        # -j1/-j2 wall ratio cannot exceed this.
        capacity = parallel_capacity(tmp)

        # Without --no-cache every "uncached" run starts from an empty cache.
        nc_before = None if has_no_cache else clear_cache
        res = {}
        po_out = os.path.join(tmp, "parse_only.txt")
        # parse-only and leaklint -j1 alternate, and their CPU ratio is the median of the
        # pairs: on shared vCPUs the machine's speed drifts by tens of percent within
        # minutes (seen here: parse-only 2.1 s, then 3.4 s), which a ratio of two minima
        # taken minutes apart turns into noise.
        pr, jr = [], []
        for _ in range(a.repeat):
            pr.append(r.run("parse-only", [a.parse_only, listfile], stdout_path=po_out))
            jr.append(r.run("leaklint -j1", ll(1, True), env=env, before=nc_before))
        res["parse"] = Runner.summary("parse-only", pr)
        res["j1"] = Runner.summary("leaklint -j1", jr)
        res["cpu_pairs"] = [j["cpu"] / p["cpu"] for p, j in zip(pr, jr)]
        res["j2"] = r.repeat("leaklint -j2", a.repeat, ll(2, True), env=env, before=nc_before)
        res["cold"] = r.repeat("leaklint -j2 cold cache", a.repeat, ll(2, False), env=env,
                               before=clear_cache)
        res["warm"] = r.repeat("leaklint -j2 warm cache", a.repeat, ll(2, False), env=env)
        if not a.no_flake8:
            f8 = ["/usr/bin/python3", "-m", "flake8", "--isolated", "--select=F", "--exit-zero"]
            res["f8j1"] = r.repeat("flake8 -j1", a.flake8_repeat, f8 + ["--jobs=1"] + files, cwd=tmp)
            res["f8j2"] = r.repeat("flake8 -j2", a.flake8_repeat, f8 + ["--jobs=2"] + files, cwd=tmp)
        if a.instructions_every > 0:
            sub = files[a.instructions_every - 1::a.instructions_every]
            sublist = os.path.join(tmp, "subset.txt")
            with open(sublist, "w") as f:
                f.write("\n".join(sub) + "\n")
            # leaklint gets the subset as explicit paths (cross-file facts stay within it).
            res["ir"] = {
                "files": len(sub),
                "parse": count_instructions([a.parse_only, sublist], env),
                "j1": count_instructions(ll(1, True)[:-1] + sub, env),
            }
        load_end = loadavg()
        with open(po_out) as f:
            po_line = f.read().strip()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    model, nproc, mem, kernel = machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    o = []
    o.append("## Benchmark run %s" % now)
    o.append("")
    o.append("- Machine: %s, `nproc` = %s, %s, Linux %s; load average (1/5/15 min) %s at the "
             "start, %s at the end." % (model, nproc, mem, kernel, load_start, load_end))
    o.append("- leaklint: `%s` at commit %s; cache flags: `--no-cache` %s, `--cache-dir` %s." %
             (os.path.relpath(a.leaklint, a.repo) if a.leaklint.startswith(a.repo) else a.leaklint,
              git_desc(a.repo), "yes" if has_no_cache else "absent (empty cache per run instead)",
              "yes" if has_cache_dir else "absent ($LEAKLINT_CACHE_DIR instead)"))
    o.append("- Corpus: %d Python files, %d lines, %.1f MiB%s." %
             (len(files), total_lines, total_bytes / 1048576.0,
              "" if ll_files in (None, len(files)) else
              " (**leaklint analysed %s files: its discovery differs from the list**)" % ll_files))
    o.append("- Each run repeated %d times (flake8: %d); wall = fastest run (median beside it), "
             "CPU = user + sys of the cheapest run, RSS = largest peak." % (a.repeat, a.flake8_repeat))
    o.append("")
    o.append("| corpus part | source | commit | files | lines |")
    o.append("| --- | --- | --- | ---: | ---: |")
    for top in sorted(per):
        src, commit = sources.get(top, ("?", "?"))
        o.append("| %s | %s | `%s` | %d | %d |" % (top, src, commit[:12], per[top][0], per[top][1]))
    o.append("| **total** | | | %d | %d |" % (len(files), total_lines))
    o.append("")
    o.append("| run | wall s | wall s (median) | CPU s | peak RSS MiB |")
    o.append("| --- | ---: | ---: | ---: | ---: |")
    labels = [
        ("parse", "parse-only (`leaklint_parse_only`, 1 thread)"),
        ("j1", "leaklint --no-cache -j1"),
        ("j2", "leaklint --no-cache -j2"),
        ("cold", "leaklint -j2, cold cache (fills it)"),
        ("warm", "leaklint -j2, warm cache"),
        ("f8j1", "flake8 --select=F --jobs=1"),
        ("f8j2", "flake8 --select=F --jobs=2"),
    ]
    for key, label in labels:
        if key in res:
            x = res[key]
            o.append("| %s | %.2f | %.2f | %.2f | %.1f |" %
                     (label, x["wall"], x["wall_median"], x["cpu"], x["rss_mib"]))
    o.append("")
    o.append("`leaklint_parse_only`: `%s`" % po_line)
    o.append("")
    o.append("| ratio | value | target | met |")
    o.append("| --- | ---: | ---: | --- |")
    v = statistics.median(res["cpu_pairs"])
    o.append("| leaklint -j1 CPU / parse-only CPU (median of %d interleaved pairs: %s) | %s | %s | %s |" %
             ((len(res["cpu_pairs"]), ", ".join("%.2f" % x for x in res["cpu_pairs"])) +
              fmt_ratio(v, TARGETS["cpu_vs_parse"], False)))
    v = res["j1"]["wall"] / res["j2"]["wall"]
    val, tgt, met = fmt_ratio(v, TARGETS["scaling"], True)
    if met != "yes" and capacity < TARGETS["scaling"]:
        met = "cannot tell: the machine gave %.2f, not 2 cores" % capacity
    o.append("| leaklint -j1 wall / -j2 wall | %s | %s | %s |" % (val, tgt, met))
    o.append("| machine parallel capacity: 2 CPU-bound processes vs 1 (ceiling of the line "
             "above; 2.00 = two free cores) | %.2f | | |" % capacity)
    o.append("| scaling relative to that capacity (information) | %.2f | | |" % (v / capacity))
    if "f8j1" in res:
        v = res["f8j1"]["wall"] / res["j1"]["wall"]
        o.append("| flake8 -j1 wall / leaklint -j1 wall | %s | %s | %s |" % fmt_ratio(v, TARGETS["vs_flake8"], True))
        v = res["f8j2"]["wall"] / res["j2"]["wall"]
        o.append("| flake8 -j2 wall / leaklint -j2 wall | %s | %s | %s |" % fmt_ratio(v, TARGETS["vs_flake8"], True))
    rss = max(res[k]["rss_mib"] for k in ("j1", "j2", "cold", "warm"))
    ok = rss < TARGETS["rss_mib"]
    o.append("| leaklint peak RSS (MiB, any run) | %.1f | < %.0f | %s |" % (rss, TARGETS["rss_mib"], "yes" if ok else "**no**"))
    v = res["cold"]["wall"] / res["warm"]["wall"]
    o.append("| cold cache wall / warm cache wall | %s | %s | %s |" % fmt_ratio(v, TARGETS["cache"], True))
    v = res["j2"]["wall"] / res["warm"]["wall"]
    o.append("| --no-cache -j2 wall / warm cache wall (information) | %.2f | | |" % v)
    if "ir" in res:
        ir = res["ir"]
        v = ir["j1"] / ir["parse"]
        o.append("| leaklint -j1 / parse-only, instructions (valgrind; %d files, every %d-th) | "
                 "%s | %s | %s |" % ((ir["files"], a.instructions_every) +
                                     fmt_ratio(v, TARGETS["cpu_vs_parse"], False)))
    o.append("")
    text = "\n".join(o) + "\n"
    sys.stdout.write(text)
    if a.markdown_out:
        with open(a.markdown_out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
