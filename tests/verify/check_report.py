#!/usr/bin/env python3
"""Keeps the committed verification report true.

Two checks:

* ``compare(current, committed)`` (used by ``harness.py --check-report DIR``, which the
  ``verify_cpu`` CTest test runs): today's run against the committed
  ``DIR/measured.json``: the same rows (one per rule and language), the same verdicts,
  the same lint results, and every number within the tolerance below.
  A row this run did not measure (NOT RUN: e.g. the C++ programs are not built on this
  machine) is compared only for its lint result.
* ``main()`` (the ``verify_report_consistent`` CTest test; no torch needed): the
  committed ``README.md`` is exactly what ``report.render_readme`` makes of the committed
  ``measured.json``, every plot it names exists, and each rule doc's "Measured effect"
  section is what ``fill_docs.py`` writes from it.

Tolerance: a number may drift by 50% of the larger value or by an absolute amount in its
own unit, whichever is more: 2.0 in general (MiB, counts, ratios), 16 for KiB and 16384 for
bytes (a few pages of allocator noise: a flat heap measured as +0.7 KiB in one run and
+4.0 KiB in the next is the same result); numbers that measure time (``*_ms``, growth of backward time,
bootstrap errors printed within a timeout) and wall-clock fields are not compared.

    check_report.py [DIR]      (default: docs/verification)
"""

import json
import math
import os
import re
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import report  # noqa: E402

REL_TOL = 0.5
ABS_TOL = 2.0
VOLATILE = re.compile(r"(_ms(_|$)|backward_growth|bootstrap_errors|wall|_s$)")


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


ABS_TOL_BY_UNIT = ((re.compile(r"(^|_)kib(_|$)"), 16.0), (re.compile(r"(^|_)bytes(_|$)"), 16384.0))


def abs_tol(where):
    name = where.rsplit(".", 1)[-1].split(":")[-1].split("[")[0].lower()
    for pattern, tol in ABS_TOL_BY_UNIT:
        if pattern.search(name):
            return tol
    return ABS_TOL


def close(a, b, tol=ABS_TOL):
    return abs(a - b) <= max(REL_TOL * max(abs(a), abs(b)), tol)


def _compare_value(where, a, b, out):
    if _num(a) and _num(b):
        if not close(a, b, abs_tol(where)):
            out.append(f"{where}: measured {a:.4g}, committed {b:.4g} (beyond the tolerance)")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: measured {len(a)} values, committed {len(b)}")
        else:
            for i, (x, y) in enumerate(zip(a, b)):
                _compare_value(f"{where}[{i}]", x, y, out)
    elif isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        if a != b and (_num(a) or _num(b) or isinstance(a, bool) or isinstance(b, bool)):
            out.append(f"{where}: measured {a!r}, committed {b!r}")
    # strings (error texts, file names) are not compared: verdicts decide on them


def compare(current, committed):
    """Differences between a run (``report.build_measured``) and the committed record."""
    out = []
    if current.get("device") != committed.get("device"):
        return [f"device: this run measured on {current.get('device')}, the committed report "
                f"on {committed.get('device')}"]
    cur_rows, old_rows = current["rows"], committed.get("rows", {})
    rules = {row["rule"] for row in cur_rows.values()}
    for key in sorted(set(old_rows) - set(cur_rows)):
        if old_rows[key]["rule"] in rules:
            out.append(f"{key}: row in the committed report, not in this run")
    for key in sorted(set(cur_rows) - set(old_rows)):
        out.append(f"{key}: row of this run missing from the committed report")
    for key in sorted(set(cur_rows) & set(old_rows)):
        cur, old = cur_rows[key], old_rows[key]
        # a row this run could not measure (C++ programs not built here, a deadline) does
        # not contradict the committed measurement; the reverse (committed NOT RUN, now
        # measured) is a stale report
        measured_now = cur["verdict"] != "NOT RUN" or old["verdict"] == "NOT RUN"
        if current.get("measure") and committed.get("measure") and measured_now:
            if cur["verdict"] != old["verdict"]:
                out.append(f"{key}: verdict {cur['verdict']}, committed {old['verdict']}")
            cn, on = cur.get("numbers") or {}, old.get("numbers") or {}
            for name in sorted(set(cn) | set(on)):
                if VOLATILE.search(name):
                    continue
                if name not in cn or name not in on:
                    out.append(f"{key}: number {name} only in "
                               f"{'this run' if name in cn else 'the committed report'}")
                    continue
                _compare_value(f"{key}: {name}", cn[name], on[name], out)
        if current.get("lint") and committed.get("lint"):
            cl, ol = cur.get("lint") or {}, old.get("lint") or {}
            for field in ("status", "leaky_rules", "fixed_rules"):
                if cl.get(field) != ol.get(field):
                    out.append(f"{key}: leaklint {field} {cl.get(field)}, committed "
                               f"{ol.get(field)}")
    return out


def compare_with_committed(reports, doc, directory):
    path = os.path.join(directory, "measured.json")
    try:
        with open(path) as fh:
            committed = json.load(fh)
    except (OSError, ValueError) as exc:
        return [f"cannot read {path}: {exc}"]
    return compare(report.build_measured(reports, doc), committed)


def check_files(directory, repo=REPO):
    """The committed README and rule docs against the committed measured.json."""
    out = []
    dirs = [directory]
    if os.path.exists(os.path.join(directory, "cuda", "measured.json")):
        dirs.append(os.path.join(directory, "cuda"))      # a committed GPU run (gpu.sh)
    for where in dirs:
        with open(os.path.join(where, "measured.json")) as fh:
            measured = json.load(fh)
        try:
            with open(os.path.join(where, "README.md")) as fh:
                readme = fh.read()
        except OSError:
            readme = None
        if readme != report.render_readme(measured):
            out.append(f"{where}/README.md is not what measured.json renders to "
                       f"(regenerate with harness.py --report, never edit it by hand)")
        for key, row in measured["rows"].items():
            if row.get("plot") and not os.path.exists(os.path.join(where, row["plot"])):
                out.append(f"{where}: {key}: plot {row['plot']} is missing")
    import fill_docs
    for name, want in fill_docs.sections(repo).items():
        path = os.path.join(repo, "docs", "rules", name)
        with open(path) as fh:
            have = fh.read()
        if fill_docs.replace_section(have, want) != have:
            out.append(f"docs/rules/{name}: the 'Measured effect' section does not match "
                       f"measured.json (run tests/verify/fill_docs.py)")
    return out


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    directory = argv[0] if argv else os.path.join(REPO, "docs", "verification")
    problems = check_files(directory)
    for line in problems:
        print(f"STALE {line}", file=sys.stderr)
    if problems:
        return 1
    print(f"{directory}: README.md, plots and rule docs match measured.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
