#!/usr/bin/env python3
"""Checks the LibTorch (C++) twins of the verification scenarios.

For each rule with ``<ID>/leaky.cpp`` and ``<ID>/fixed.cpp``:

1. lint: leaklint flags ``leaky.cpp`` with the rule and reports nothing at all (no
   finding, no diagnostic) for ``fixed.cpp``; both must be analysed with type information
   (a finding from the syntactic fallback, or a file leaklint could not compile, fails);
2. measure: runs the built programs ``<bin-dir>/<ID>_leaky`` and ``<ID>_fixed`` (ordinary
   build targets; nothing is built here) with ``--device cpu --json OUT`` (the GPU-only
   scenarios with ``--device D``: the C++ meters read host memory);
3. verdict: the rule's verdict function from ``verdicts.py``, the same that judges the
   Python pair, must say CONFIRMED; GPU-only rules on a CPU run must report ``skipped``
   from both programs (the lint half still runs);
4. swap: the same verdict fed the leaky results as the fixed ones and vice versa must not
   say CONFIRMED (a verdict that passes either way proves nothing).

    /usr/bin/python3 tests/verify/cpp_check.py --leaklint build/leaklint \\
        --bin-dir build/tests/verify [--rules LL101,LL102] [--device cpu] [--keep DIR]

Exit status: 0 all checks passed, 1 a check failed, 2 a setup problem.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import verdicts  # noqa: E402
from harness import ScenarioResult  # noqa: E402


def rules_with_cpp():
    return sorted(name for name in os.listdir(HERE)
                  if name.startswith("LL") and os.path.isfile(os.path.join(HERE, name, "leaky.cpp"))
                  and os.path.isfile(os.path.join(HERE, name, "fixed.cpp")))


def lint(leaklint, paths):
    """{path: (findings, errors)} from one leaklint run in JSON."""
    # --show-low-confidence: a result of the syntactic fallback must be seen to fail the check.
    proc = subprocess.run([leaklint, "--format", "json", "--no-cache", "--show-low-confidence", *paths],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"leaklint exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    report = json.loads(proc.stdout)
    out = {p: ([], []) for p in paths}
    for f in report.get("findings", []):
        for p in paths:
            if os.path.abspath(f.get("path", "")) == os.path.abspath(p):
                out[p][0].append(f)
    for e in report.get("errors", []):
        for p in paths:
            if os.path.abspath(e.get("path", "")) == os.path.abspath(p):
                out[p][1].append(e)
    if report.get("summary", {}).get("files_not_analysed"):
        raise RuntimeError(f"leaklint did not analyse every file: {report.get('errors')}")
    return out


def check_lint(rule, findings, errors, variant):
    problems = []
    rel = f"{rule}/{variant}.cpp"
    if errors:
        problems.append(f"{rel}: leaklint reported {errors}")
    # Low confidence from the syntactic fallback fails; a finding the impact policy made weak
    # (a CPU-only program: its message says why, docs/impact.md) was analysed with types.
    low = [f["rule"] for f in findings if f.get("low_confidence") and "(low confidence: " not in f.get("message", "")]
    if low:
        problems.append(f"{rel}: analysed without type information (low-confidence {low})")
    rules = sorted({f["rule"] for f in findings})
    if variant == "leaky" and rule not in rules:
        problems.append(f"{rel}: not flagged with {rule} (findings: {rules or 'none'})")
    if variant == "fixed" and findings:
        where = ", ".join(f"{f['rule']} line {f['line']}" for f in findings)
        problems.append(f"{rel}: expected no finding, got {where}")
    return problems


def run_program(binary, variant, device, timeout_s, keep):
    out_dir = keep or tempfile.mkdtemp(prefix="leaklint-verify-cpp-")
    json_path = os.path.join(out_dir, os.path.basename(binary) + ".json")
    if os.path.exists(json_path):
        os.unlink(json_path)
    res = ScenarioResult(path=binary, variant=variant, lang="cpp")
    start = time.perf_counter()
    try:
        proc = subprocess.run([binary, "--device", device, "--json", json_path],
                              capture_output=True, text=True, timeout=timeout_s)
        res.returncode, res.stdout, res.stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        res.timed_out = True
        err = exc.stderr or ""
        res.stderr = err.decode("utf-8", "replace") if isinstance(err, bytes) else err
    res.wall_s = time.perf_counter() - start
    try:
        with open(json_path) as fh:
            res.doc = json.load(fh)
    except (OSError, ValueError):
        res.doc = None
    if not keep:
        try:
            os.unlink(json_path)
            os.rmdir(out_dir)
        except OSError:
            pass
    return res


def check_rule(rule_id, args, lint_results):
    rule = verdicts.BY_ID[rule_id]
    problems = []
    lines = []
    if lint_results is not None:
        for variant in ("leaky", "fixed"):
            path = os.path.join(HERE, rule_id, f"{variant}.cpp")
            findings, errors = lint_results[path]
            problems += check_lint(rule_id, findings, errors, variant)
            lines.append(f"  lint {variant}: {sorted({f['rule'] for f in findings}) or 'clean'}")

    results = {}
    for variant in ("leaky", "fixed"):
        binary = os.path.join(args.bin_dir, f"{rule_id}_{variant}")
        if not os.access(binary, os.X_OK):
            problems.append(f"{binary} is not built (build target {rule_id}_{variant})")
            return problems, lines
        # the C++ meters read host memory: only the GPU-only scenarios run on CUDA
        device = args.device if rule.gpu_only else "cpu"
        results[variant] = run_program(binary, variant, device, rule.timeout_s, args.keep)
    leaky, fixed = results["leaky"], results["fixed"]
    for res in (leaky, fixed):
        doc = res.doc or {}
        if res.doc is not None and (doc.get("rule"), doc.get("variant")) != (rule_id, res.variant):
            problems.append(f"{res.path} wrote rule/variant {doc.get('rule')}/{doc.get('variant')}")

    device = (leaky.doc or {}).get("device", "cpu")
    if rule.gpu_only and device != "cuda":
        for res in (leaky, fixed):
            if not (res.doc or {}).get("skipped"):
                problems.append(f"{res.path}: a GPU-only scenario must report 'skipped' on "
                                f"{device}, "
                                f"got {verdicts.broken(res) or 'a measurement'}")
        lines.append(f"  measure: GPU-ONLY ({rule.gpu_reason})")
        return problems, lines

    outcome = rule.evaluate(leaky, fixed, device)
    lines.append(f"  {outcome.metric}: leaky {outcome.leaky} | fixed {outcome.fixed} "
                 f"-> {outcome.verdict} ({outcome.threshold})")
    for detail in outcome.details:
        lines.append(f"    {detail}")
    if outcome.verdict != verdicts.CONFIRMED:
        problems.append(f"{rule_id}: the C++ pair is {outcome.verdict}")
        for res in (leaky, fixed):
            if res.returncode not in (0, None) or res.timed_out:
                problems.append(f"  {res.variant} exited {res.returncode}: "
                                f"{res.stderr.strip()[-1500:]}")
    swapped = rule.evaluate(fixed, leaky, device)
    lines.append(f"  swapped (fixed judged as leaky): {swapped.verdict}")
    if swapped.verdict == verdicts.CONFIRMED:
        problems.append(f"{rule_id}: the verdict also confirms with leaky and fixed swapped")
    return problems, lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--leaklint", help="leaklint binary (needs leaklint-cpp beside it)")
    parser.add_argument("--measure-only", action="store_true", help="skip the lint half")
    parser.add_argument("--bin-dir", required=True, help="directory with <ID>_leaky / <ID>_fixed")
    parser.add_argument("--rules", default="", help="comma-separated IDs (default: all with .cpp)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                        help="where the GPU-only scenarios run (the others run on the CPU)")
    parser.add_argument("--keep", help="keep each program's JSON in this directory")
    args = parser.parse_args(argv)

    available = rules_with_cpp()
    ids = [r.strip() for r in args.rules.split(",") if r.strip()] or available
    unknown = [r for r in ids if r not in available or r not in verdicts.BY_ID]
    if unknown:
        print(f"cpp_check: no C++ scenario pair or verdict for {', '.join(unknown)}",
              file=sys.stderr)
        return 2
    if not args.measure_only and not args.leaklint:
        print("cpp_check: --leaklint BIN or --measure-only", file=sys.stderr)
        return 2
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)

    lint_results = None
    if not args.measure_only:
        paths = [os.path.join(HERE, r, f"{v}.cpp") for r in ids for v in ("leaky", "fixed")]
        try:
            lint_results = lint(args.leaklint, paths)
        except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
            print(f"cpp_check: leaklint failed: {exc}", file=sys.stderr)
            return 2

    failed = False
    for rule_id in ids:
        problems, lines = check_rule(rule_id, args, lint_results)
        print(f"{rule_id}: {'FAIL' if problems else 'ok'}")
        for line in lines:
            print(line)
        for p in problems:
            print(f"  FAIL: {p}")
        failed = failed or bool(problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
