#!/usr/bin/env python3
"""leaklint leak verification suite.

For every rule ID there is a scenario pair, ``tests/verify/<ID>/leaky.py`` and
``fixed.py``. For each pair the harness

(a) lints both files with leaklint: the leaky program must be flagged with that rule,
    the fixed program must have no finding of any rule;
(b) runs both programs (each in its own process, with a timeout) and decides from their
    measurements whether the rule's message holds: CONFIRMED, NOT CONFIRMED, or GPU-ONLY
    (the effect exists only on a GPU and this run has none).

Usage (run it with the interpreter that has torch, e.g. Debian's /usr/bin/python3):

    harness.py                          # lint + measure every rule, print a table
    harness.py --rules LL101,LL102      # a selection
    harness.py --lint-only              # part (a) only (no torch needed)
    harness.py --measure-only           # part (b) only (no leaklint needed)
    harness.py --device cuda            # measure on the GPU (default: auto)
    harness.py --leaklint build/leaklint --ci        # non-zero exit on any failure
    harness.py --device cpu --report docs/verification/    # regenerate the report
    harness.py --check-report docs/verification/ --ci      # fail when it is stale
    harness.py --cpp-bin-dir build/tests/verify            # also run the C++ scenarios

One row per rule and language: where ``<ID>/leaky.cpp`` exists, leaklint lints the C++
pair too, and the built programs ``<ID>_leaky`` / ``<ID>_fixed`` (``--iters N --json
OUT``, the same keys as the Python twin) are judged by the same verdict; without the
binaries the C++ row is NOT RUN. The GPU half: ``gpu.sh``.

CI failures: leaklint misses a leaky program, flags a fixed one, or fails; a rule that
leaklint flags is NOT CONFIRMED by the measurement (with --measure-only: any NOT
CONFIRMED). GPU-ONLY never fails. Exit status: 0 fine, 1 CI failure, 2 usage/setup error.
"""

import argparse
import json
import os
import platform
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import verdicts  # noqa: E402

DEFAULT_LEAKLINT = os.path.join(REPO, "build", "leaklint")


# --------------------------------------------------------------------------- results


@dataclass
class ScenarioResult:
    path: str
    variant: str
    returncode: int = None
    timed_out: bool = False
    wall_s: float = 0.0
    stdout: str = ""
    stderr: str = ""
    doc: dict = None
    lang: str = "python"             # the scenario's language: a verdict may differ per language

    @property
    def series(self):
        return (self.doc or {}).get("series", {})

    @property
    def scalars(self):
        return (self.doc or {}).get("scalars", {})

    @property
    def errors(self):
        return (self.doc or {}).get("errors", {})


@dataclass
class LintResult:
    status: str                      # ok | error | missing
    findings: list = field(default_factory=list)
    exit_code: int = None
    message: str = ""

    @property
    def rules(self):
        return sorted({f.get("rule") for f in self.findings if f.get("rule")})


LANGS = {"python": ("py", "Python"), "cpp": ("cpp", "C++")}


@dataclass
class RuleReport:
    rule: verdicts.Rule
    lang: str = "python"             # python | cpp: one row per rule and language
    lint_leaky: LintResult = None
    lint_fixed: LintResult = None
    leaky: ScenarioResult = None
    fixed: ScenarioResult = None
    outcome: verdicts.Outcome = None
    skip_reason: str = ""

    @property
    def key(self):
        """Row identifier in results and measured.json: ``LL101/python``, ``LL101/cpp``."""
        return f"{self.rule.id}/{self.lang}"

    @property
    def ext(self):
        return LANGS[self.lang][0]

    @property
    def lang_name(self):
        return LANGS[self.lang][1]

    def scenario(self, variant):
        return f"tests/verify/{self.rule.id}/{variant}.{self.ext}"

    # ---- part (a)
    @property
    def lint_ran(self):
        return self.lint_leaky is not None

    @property
    def lint_error(self):
        if not self.lint_ran:
            return None
        for res in (self.lint_leaky, self.lint_fixed):
            if res.status != "ok":
                return res.message
        return None

    @property
    def leaky_flagged(self):
        return self.lint_ran and self.rule.id in self.lint_leaky.rules

    @property
    def fixed_clean(self):
        return self.lint_ran and not self.lint_fixed.findings

    @property
    def lint_status(self):
        if not self.lint_ran:
            return "NOT RUN"
        if self.lint_error:
            return "ERROR"
        parts = []
        if not self.leaky_flagged:
            parts.append("MISS")
        if not self.fixed_clean:
            parts.append("FALSE POSITIVE")
        return " + ".join(parts) or "OK"

    @property
    def verdict(self):
        return self.outcome.verdict if self.outcome else verdicts.NOT_RUN


# --------------------------------------------------------------------------- running


def run_leaklint(binary, relpath, timeout=120):
    if not binary or not os.path.exists(binary):
        return LintResult("missing", message=f"leaklint not found at {binary}")
    try:
        # Every finding, weak ones included: the verdict needs the rule's own view.
        proc = subprocess.run([binary, "--format", "json", "--show-low-confidence", relpath], cwd=REPO,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return LintResult("error", message=f"leaklint timed out on {relpath}")
    except OSError as exc:
        return LintResult("error", message=f"cannot run leaklint: {exc}")
    if proc.returncode not in (0, 1):
        return LintResult("error", exit_code=proc.returncode,
                          message=f"leaklint exit {proc.returncode} on {relpath}: "
                                  f"{(proc.stderr or proc.stdout).strip()[:300]}")
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        return LintResult("error", exit_code=proc.returncode,
                          message=f"leaklint printed no JSON for {relpath}: "
                                  f"{proc.stdout.strip()[:200]}")
    findings = doc.get("findings") or []
    errors = doc.get("errors") or []
    if errors:
        return LintResult("error", findings, proc.returncode,
                          f"leaklint reported errors for {relpath}: {json.dumps(errors)[:300]}")
    if (proc.returncode == 1) != bool(findings):
        return LintResult("error", findings, proc.returncode,
                          f"leaklint exit {proc.returncode} does not match "
                          f"{len(findings)} findings for {relpath}")
    return LintResult("ok", findings, proc.returncode)


def scenario_env():
    env = dict(os.environ)
    env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1", PYTHONHASHSEED="0")
    return env


def scenario_stem(path, variant):
    """File name stem of a scenario's kept output: LL101-leaky, LL101-cpp-leaky."""
    rid = os.path.basename(os.path.dirname(path))
    return f"{rid}-cpp-{variant}" if not path.endswith(".py") else f"{rid}-{variant}"


def run_scenario(python, path, variant, device, timeout, outdir, cmd=None):
    """Run one scenario program; ``cmd`` (a C++ binary's command line without ``--json``)
    replaces the Python interpreter command."""
    out = os.path.join(outdir, scenario_stem(path, variant) + ".json")
    if os.path.exists(out):
        os.unlink(out)
    if cmd is None:
        cmd = [python, path, "--device", device, "--json", out]
    else:
        cmd = list(cmd) + ["--json", out]
    res = ScenarioResult(path=os.path.relpath(path, REPO), variant=variant,
                         lang="cpp" if path.endswith(".cpp") else "python")
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, env=scenario_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        res.stdout, res.stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        res.timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)   # the scenario and any children it left
        except ProcessLookupError:
            pass
        res.stdout, res.stderr = proc.communicate()
    res.returncode = proc.returncode
    res.wall_s = time.perf_counter() - start
    if os.path.exists(out):
        try:
            with open(out) as fh:
                res.doc = json.load(fh)
        except ValueError:
            res.doc = None
    with open(out[:-len(".json")] + ".run.json", "w") as fh:
        json.dump({"returncode": res.returncode, "timed_out": res.timed_out,
                   "wall_s": res.wall_s, "stdout": res.stdout[-20000:],
                   "stderr": res.stderr[-20000:]}, fh)
    return res


def load_scenario(path, variant, outdir):
    """A result saved by an earlier run with --keep (for --reuse)."""
    stem = os.path.join(outdir, scenario_stem(path, variant))
    res = ScenarioResult(path=os.path.relpath(path, REPO), variant=variant,
                         lang="cpp" if path.endswith(".cpp") else "python")
    try:
        with open(stem + ".run.json") as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        res.stderr = f"no saved run in {outdir}"
        return res
    res.returncode = meta.get("returncode")
    res.timed_out = meta.get("timed_out", False)
    res.wall_s = meta.get("wall_s", 0.0)
    res.stdout, res.stderr = meta.get("stdout", ""), meta.get("stderr", "")
    try:
        with open(stem + ".json") as fh:
            res.doc = json.load(fh)
    except (OSError, ValueError):
        res.doc = None
    return res


PROBE = r"""
import json, platform, os, torch
info = {"torch": torch.__version__, "python": platform.python_version(),
        "cuda_available": torch.cuda.is_available(),
        "cuda_device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "cuda_version": torch.version.cuda}
print(json.dumps(info))
"""


def probe(python):
    try:
        proc = subprocess.run([python, "-c", PROBE], capture_output=True, text=True,
                              timeout=120, env=scenario_env())
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def debian_version(package):
    try:
        proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                              capture_output=True, text=True, timeout=20)
        return proc.stdout.strip() or None if proc.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None


# --------------------------------------------------------------------------- main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leaklint", default=DEFAULT_LEAKLINT,
                    help="path of the leaklint binary (default: build/leaklint)")
    ap.add_argument("--rules", default="", help="comma-separated rule IDs (default: all)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--lint-only", action="store_true", help="part (a) only")
    mode.add_argument("--measure-only", action="store_true", help="part (b) only")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"],
                    help="where the scenarios measure (auto: cuda if available)")
    ap.add_argument("--ci", action="store_true", help="exit 1 on any failure (see above)")
    ap.add_argument("--report", metavar="DIR", help="write README.md, measured.json and "
                    "plots/<ID>.png into DIR (a CUDA run: its own DIR, e.g. "
                    "docs/verification/cuda/)")
    ap.add_argument("--check-report", metavar="DIR", help="compare this run with the "
                    "committed DIR/measured.json (rows, verdicts, lint results; numbers "
                    "within the tolerance of check_report.py); with --ci a difference fails")
    ap.add_argument("--langs", default="python,cpp",
                    help="which rows to run: python, cpp or both (default); with --keep, "
                         "a later --reuse of the same directory reports every row kept there")
    ap.add_argument("--cpp-bin-dir", metavar="DIR", help="where CMake built the C++ "
                    "scenario programs (<ID>_leaky, <ID>_fixed); without it, or without the "
                    "binaries, C++ rows are NOT RUN")
    ap.add_argument("--json", metavar="PATH", help="write all results as JSON")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter for the scenarios (needs torch; default: this one)")
    ap.add_argument("--timeout-scale", type=float, default=1.0,
                    help="multiply every scenario's timeout")
    ap.add_argument("--deadline-s", type=float, default=None,
                    help="stop starting scenarios after this many seconds (the rows left "
                         "are NOT RUN) and cut each scenario's timeout to the time left, so "
                         "that a bounded run still ends with a report (gpu.sh)")
    ap.add_argument("--keep", metavar="DIR", help="keep each scenario's JSON output here")
    ap.add_argument("--reuse", metavar="DIR", help="evaluate the outputs kept in DIR by an "
                    "earlier --keep run instead of running the scenarios again")
    return ap.parse_args(argv)


def select_rules(spec):
    if not spec:
        return list(verdicts.RULES)
    wanted = [s.strip().upper() for s in spec.split(",") if s.strip()]
    unknown = [w for w in wanted if w not in verdicts.BY_ID]
    if unknown:
        raise SystemExit(f"harness: unknown rule ID(s): {', '.join(unknown)}")
    return [verdicts.BY_ID[w] for w in wanted]


def python_iters(rule_id):
    """The iteration count the Python twin runs with by default (its ``iters=N``)."""
    try:
        with open(os.path.join(HERE, rule_id, "leaky.py")) as fh:
            text = fh.read()
    except OSError:
        return None
    found = re.findall(r"measure\.main\([^)]*\biters=(\d+)", text)
    return int(found[-1]) if found else None


def cpp_binaries(bin_dir, rule_id):
    """(leaky, fixed) paths of the built C++ scenario programs, or None if absent."""
    if not bin_dir:
        return None
    paths = tuple(os.path.join(bin_dir, f"{rule_id}_{v}") for v in ("leaky", "fixed"))
    if all(os.path.isfile(p) and os.access(p, os.X_OK) for p in paths):
        return paths
    return None


def not_run(rep, why):
    rep.skip_reason = why
    rep.outcome = verdicts.Outcome(verdicts.NOT_RUN, "-", "-", "-", "-",
                                   details=[f"not measured: {why}"])


def measure_rule(rep, args, device, outdir):
    rule = rep.rule
    if rule.gpu_only and device != "cuda":
        rep.skip_reason = rule.gpu_reason
        rep.outcome = verdicts.Outcome(verdicts.GPU_ONLY, "-", "-", "-", "-",
                                       details=[f"not measured on the CPU: {rule.gpu_reason}"])
        return
    base = os.path.join(HERE, rule.id)
    timeout = rule.timeout_s * args.timeout_scale
    deadline = getattr(args, "deadline_at", None)
    if deadline is not None and not args.reuse:
        left = deadline - time.monotonic()
        if left < 10:
            not_run(rep, f"the suite's deadline ({args.deadline_s:.0f} s) was reached "
                         f"before this rule")
            return
        timeout = min(timeout, left / 2)      # two programs, leaky and fixed
    if rep.lang == "cpp":
        if device == "cuda":
            not_run(rep, "the C++ scenario programs take no --device; they are measured "
                         "in the CPU run")
            return
        if args.reuse:
            rep.leaky = load_scenario(os.path.join(base, "leaky.cpp"), "leaky", args.reuse)
            rep.fixed = load_scenario(os.path.join(base, "fixed.cpp"), "fixed", args.reuse)
            if rep.leaky.doc is None and rep.leaky.returncode is None:
                not_run(rep, f"no kept C++ run in {args.reuse}")
                return
        else:
            bins = cpp_binaries(args.cpp_bin_dir, rule.id)
            if bins is None:
                not_run(rep, f"C++ binaries {rule.id}_leaky / {rule.id}_fixed not built"
                             + (f" in {args.cpp_bin_dir}" if args.cpp_bin_dir else
                                " (no --cpp-bin-dir)"))
                return
            iters = python_iters(rule.id)
            extra = ["--iters", str(iters)] if iters else []
            rep.leaky = run_scenario(None, os.path.join(base, "leaky.cpp"), "leaky", device,
                                     timeout, outdir, cmd=[bins[0], *extra])
            rep.fixed = run_scenario(None, os.path.join(base, "fixed.cpp"), "fixed", device,
                                     timeout, outdir, cmd=[bins[1], *extra])
        evaluate(rep, device)
        return
    if args.reuse:
        rep.leaky = load_scenario(os.path.join(base, "leaky.py"), "leaky", args.reuse)
        rep.fixed = load_scenario(os.path.join(base, "fixed.py"), "fixed", args.reuse)
    else:
        rep.leaky = run_scenario(args.python, os.path.join(base, "leaky.py"), "leaky",
                                 device, timeout, outdir)
        rep.fixed = run_scenario(args.python, os.path.join(base, "fixed.py"), "fixed",
                                 device, timeout, outdir)
    evaluate(rep, device)


def evaluate(rep, device):
    rule = rep.rule
    try:
        rep.outcome = rule.evaluate(rep.leaky, rep.fixed, device)
    except Exception as exc:  # noqa: BLE001 - a broken evaluation is a NOT CONFIRMED
        rep.outcome = verdicts.Outcome(
            verdicts.NOT_CONFIRMED, "-", "-", "-", "-",
            details=[f"evaluation failed: {type(exc).__name__}: {exc}",
                     traceback.format_exc(limit=3)])


def ci_failures(reports, lint_mode, measure_mode):
    failures = []
    for rep in reports:
        rid = rep.rule.id if rep.lang == "python" else f"{rep.rule.id} (C++)"
        if lint_mode:
            if rep.lint_error:
                failures.append(f"{rid}: leaklint failed: {rep.lint_error}")
                continue
            if not rep.leaky_flagged:
                failures.append(f"{rid}: leaklint does not flag {rep.scenario('leaky')} with "
                                f"{rep.rule.id} (findings: "
                                f"{', '.join(rep.lint_leaky.rules) or 'none'})")
            if not rep.fixed_clean:
                where = ", ".join(f"{f.get('rule')}@{f.get('line')}"
                                  for f in rep.lint_fixed.findings)
                failures.append(f"{rid}: leaklint flags the fixed program "
                                f"{rep.scenario('fixed')}: {where}")
        if measure_mode and rep.verdict == verdicts.NOT_CONFIRMED:
            if not lint_mode:
                failures.append(f"{rid}: the measurement does NOT CONFIRM the rule's claim")
            elif rep.leaky_flagged:
                failures.append(f"{rid}: flagged by leaklint but NOT CONFIRMED by the "
                                f"measurement")
    return failures


def print_table(reports, lint_mode, measure_mode, out=sys.stdout):
    head = f"{'rule':10} {'lint leaky':18} {'lint fixed':18} {'verdict':14} metric: leaky | fixed"
    print(head, file=out)
    print("-" * len(head), file=out)
    for rep in reports:
        if lint_mode:
            if rep.lint_error:
                ll = lf = "error"
            else:
                ll = ("flagged" if rep.leaky_flagged else "MISSED") + (
                    f" (+{','.join(r for r in rep.lint_leaky.rules if r != rep.rule.id)})"
                    if len(rep.lint_leaky.rules) > (1 if rep.leaky_flagged else 0) else "")
                lf = "clean" if rep.fixed_clean else "FLAGGED " + ",".join(rep.lint_fixed.rules)
        else:
            ll = lf = "-"
        o = rep.outcome
        if o is None:
            detail = ""
        elif o.verdict in (verdicts.GPU_ONLY, verdicts.NOT_RUN):
            detail = f"skipped: {rep.skip_reason}"
        else:
            detail = f"{o.metric}: {o.leaky} | {o.fixed}"
        name = rep.rule.id + ("" if rep.lang == "python" else " C++")
        print(f"{name:10} {ll[:18]:18} {lf[:18]:18} {rep.verdict:14} {detail}", file=out)
        if o is not None and o.verdict == verdicts.NOT_CONFIRMED:
            for line in o.details[:3]:
                print(f"{'':8}{line}", file=out)
        if lint_mode and rep.lint_error:
            print(f"{'':8}{rep.lint_error}", file=out)


def results_json(reports, env, device, lint_mode, measure_mode, total_s):
    rows = {}
    for rep in reports:
        o = rep.outcome
        entry = {"rule": rep.rule.id, "lang": rep.lang, "slug": rep.rule.slug,
                 "claim": rep.rule.claim, "verdict": rep.verdict,
                 "gpu_only": rep.rule.gpu_only}
        if lint_mode:
            entry["lint"] = {
                "status": rep.lint_status, "error": rep.lint_error,
                "leaky_rules": rep.lint_leaky.rules, "fixed_rules": rep.lint_fixed.rules,
                "leaky_findings": rep.lint_leaky.findings,
                "fixed_findings": rep.lint_fixed.findings}
        if o is not None:
            entry.update(metric=o.metric, leaky=o.leaky, fixed=o.fixed, threshold=o.threshold,
                         numbers=o.numbers, details=o.details, claim_notes=o.claim_notes)
        if rep.skip_reason:
            entry["skipped"] = rep.skip_reason
        for name, res in (("leaky_run", rep.leaky), ("fixed_run", rep.fixed)):
            if res is not None:
                entry[name] = {"exit": res.returncode, "timed_out": res.timed_out,
                               "wall_s": round(res.wall_s, 2)}
        rows[rep.key] = entry
    return {"env": env, "device": device, "lint": lint_mode, "measure": measure_mode,
            "total_s": round(total_s, 1), "rows": rows}


def main(argv=None):
    args = parse_args(argv)
    rules = select_rules(args.rules)
    lint_mode = not args.measure_only
    measure_mode = not args.lint_only
    leaklint = os.path.abspath(args.leaklint) if args.leaklint else None
    if lint_mode and (not leaklint or not os.path.exists(leaklint)):
        msg = f"harness: leaklint not found at {leaklint} (build it, pass --leaklint, or use " \
              f"--measure-only)"
        if args.ci or args.lint_only:
            print(msg, file=sys.stderr)
            return 2
        print(msg + "; part (a) is skipped", file=sys.stderr)
        lint_mode = False

    env = {"python_harness": platform.python_version(), "cpu": cpu_model(),
           "cores": os.cpu_count(), "platform": platform.platform(),
           "date": time.strftime("%Y-%m-%d", time.gmtime()),
           "debian_python3_torch": debian_version("python3-torch")}
    device = "-"
    if measure_mode and args.reuse:
        saved = {}
        for name in sorted(os.listdir(args.reuse)):
            if name.endswith("-leaky.json"):
                with open(os.path.join(args.reuse, name)) as fh:
                    saved = json.load(fh)
                break
        senv = saved.get("env", {})
        env.update(torch=senv.get("torch"), python=senv.get("python"),
                   cuda_device=senv.get("cuda_device"), cuda_version=None)
        device = saved.get("device", "cpu").split(":")[0]
        try:
            with open(os.path.join(args.reuse, "suite.json")) as fh:
                env.update(json.load(fh).get("env", {}))
        except (OSError, ValueError):
            pass
    elif measure_mode:
        info = probe(args.python)
        if info is None:
            print(f"harness: cannot import torch with {args.python} (Debian: apt-get install "
                  f"python3-torch, then run with /usr/bin/python3)", file=sys.stderr)
            return 2
        env.update(torch=info["torch"], python=info["python"], cuda_device=info["cuda_device"],
                   cuda_version=info["cuda_version"])
        device = args.device
        if device == "auto":
            device = "cuda" if info["cuda_available"] else "cpu"
        if device == "cuda" and not info["cuda_available"]:
            print("harness: --device cuda, but torch.cuda.is_available() is False",
                  file=sys.stderr)
            return 2

    if args.report and device == "cuda" and os.path.realpath(args.report) == \
            os.path.realpath(os.path.join(REPO, "docs", "verification")):
        print("harness: a CUDA run does not overwrite the CPU report in docs/verification/; "
              "write it to docs/verification/cuda/", file=sys.stderr)
        return 2
    args.deadline_at = (time.monotonic() + args.deadline_s) if args.deadline_s else None
    langs = {x.strip() for x in args.langs.split(",") if x.strip()}
    if not langs or langs - set(LANGS):
        print(f"harness: --langs takes python and/or cpp, not {args.langs!r}", file=sys.stderr)
        return 2
    reports = []
    for rule in rules:
        if "python" in langs:
            reports.append(RuleReport(rule))
        if "cpp" in langs and os.path.exists(os.path.join(HERE, rule.id, "leaky.cpp")):
            reports.append(RuleReport(rule, lang="cpp"))
    started = time.perf_counter()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0 = children.ru_utime + children.ru_stime
    load0 = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    tmp = None
    outdir = args.keep
    if measure_mode and not outdir and not args.reuse:
        tmp = tempfile.TemporaryDirectory(prefix="leaklint-verify-")
        outdir = tmp.name
    if outdir:
        os.makedirs(outdir, exist_ok=True)
    for rep in reports:
        if lint_mode:
            rep.lint_leaky = run_leaklint(leaklint, rep.scenario("leaky"))
            rep.lint_fixed = run_leaklint(leaklint, rep.scenario("fixed"))
        if measure_mode:
            t0 = time.perf_counter()
            measure_rule(rep, args, device, outdir)
            print(f"[{rep.key}] {rep.verdict} ({time.perf_counter() - t0:.1f} s)",
                  file=sys.stderr, flush=True)
    total = time.perf_counter() - started
    if not args.reuse:
        env["suite_seconds"] = round(total, 1)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        env["suite_cpu_seconds"] = round(children.ru_utime + children.ru_stime - cpu0, 1)
        env["load_average_at_start"] = load0
    if args.keep and measure_mode and not args.reuse:
        with open(os.path.join(args.keep, "suite.json"), "w") as fh:
            json.dump({"env": env}, fh, indent=1)

    print_table(reports, lint_mode, measure_mode)
    print(f"\n{len(reports)} rows ({len(rules)} rules), device {device}, {total:.1f} s")
    doc = results_json(reports, env, device, lint_mode, measure_mode, total)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(doc, fh, indent=1, default=str)
    if args.report:
        import report
        try:
            import matplotlib  # noqa: F401 - only the plots need it
            plots = True
        except ImportError:
            plots = False
            print("harness: matplotlib is not installed; the report has no plots",
                  file=sys.stderr)
        report.write(args.report, reports, doc, plots=plots)
        print(f"report written to {args.report}")
    if tmp is not None:
        tmp.cleanup()
    stale = []
    if args.check_report:
        import check_report
        stale = check_report.compare_with_committed(reports, doc, args.check_report)
        for line in stale:
            print(f"STALE {line}", file=sys.stderr)
        if stale:
            print(f"harness: the committed report in {args.check_report} disagrees with this "
                  f"run ({len(stale)} difference(s)); regenerate it: see tests/verify/README.md",
                  file=sys.stderr)
    if args.ci:
        failures = ci_failures(reports, lint_mode, measure_mode) + stale
        for line in failures:
            print(f"FAIL {line}", file=sys.stderr)
        if failures:
            print(f"harness: {len(failures)} failure(s)", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
