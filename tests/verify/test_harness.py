"""Self-test of the verification harness's lint and CI logic (no torch needed).

    python3 tests/verify/test_harness.py        (or: python3 -m pytest tests/verify/test_harness.py)

A fake leaklint (a small Python script written to a temporary directory) stands in for
the real binary, so part (a) and the CI exit status can be checked without a build;
part (b) verdicts are exercised with hand-made scenario results.
"""

import json
import os
import stat
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import verdicts  # noqa: E402

FAKE = textwrap.dedent("""\
    #!{python}
    import json, os, re, sys
    mode = os.environ.get("FAKE_LEAKLINT_MODE", "good")
    path = sys.argv[-1]
    m = re.search(r"(LL\\d+)/(leaky|fixed)\\.(?:py|cpp)$", path)
    rule, variant = m.group(1), m.group(2)
    if mode == "crash":
        print("boom", file=sys.stderr)
        sys.exit(2)
    findings = []
    if variant == "leaky" and mode != "miss:" + rule:
        findings.append({{"rule": rule, "severity": "warning", "path": path, "line": 1,
                         "column": 1, "message": "fake"}})
    if variant == "fixed" and mode == "fp:" + rule:
        findings.append({{"rule": "LL102", "severity": "error", "path": path, "line": 7,
                         "column": 1, "message": "fake"}})
    print(json.dumps({{"version": "fake", "findings": findings, "errors": []}}))
    sys.exit(1 if findings else 0)
""")


def result(series=None, scalars=None, errors=None, stderr=""):
    res = harness.ScenarioResult(path="x", variant="leaky", returncode=0, stderr=stderr)
    res.doc = {"series": series or {}, "scalars": scalars or {}, "errors": errors or {},
               "error": None, "skipped": None, "iters": 8}
    return res


class FakeLeaklint(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.binary = os.path.join(cls.tmp.name, "leaklint")
        with open(cls.binary, "w") as fh:
            fh.write(FAKE.format(python=sys.executable))
        os.chmod(cls.binary, os.stat(cls.binary).st_mode | stat.S_IEXEC)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_main(self, mode, *extra):
        os.environ["FAKE_LEAKLINT_MODE"] = mode
        try:
            with open(os.devnull, "w") as null:
                old = sys.stdout, sys.stderr
                sys.stdout = sys.stderr = null
                try:
                    return harness.main(["--lint-only", "--ci", "--leaklint", self.binary,
                                         "--rules", "LL101,LL104", *extra])
                finally:
                    sys.stdout, sys.stderr = old
        finally:
            del os.environ["FAKE_LEAKLINT_MODE"]

    def test_all_good(self):
        self.assertEqual(self.run_main("good"), 0)

    def test_miss_fails(self):
        self.assertEqual(self.run_main("miss:LL104"), 1)

    def test_fixed_flagged_fails(self):
        self.assertEqual(self.run_main("fp:LL101"), 1)

    def test_leaklint_error_fails(self):
        self.assertEqual(self.run_main("crash"), 1)

    def test_missing_binary_is_setup_error(self):
        code = harness.main(["--lint-only", "--ci", "--leaklint", "/nonexistent/leaklint",
                             "--rules", "LL101"])
        self.assertEqual(code, 2)

    def test_json_and_exit_code_consistency(self):
        os.environ["FAKE_LEAKLINT_MODE"] = "good"
        try:
            lint = harness.run_leaklint(self.binary, "tests/verify/LL101/leaky.py")
        finally:
            del os.environ["FAKE_LEAKLINT_MODE"]
        self.assertEqual(lint.status, "ok")
        self.assertEqual(lint.rules, ["LL101"])


class CiLogic(unittest.TestCase):
    def report(self, flagged, clean, verdict):
        rep = harness.RuleReport(verdicts.BY_ID["LL101"])
        leaky = [{"rule": "LL101", "line": 1}] if flagged else []
        fixed = [] if clean else [{"rule": "LL102", "line": 3}]
        rep.lint_leaky = harness.LintResult("ok", leaky, 1 if leaky else 0)
        rep.lint_fixed = harness.LintResult("ok", fixed, 1 if fixed else 0)
        rep.outcome = verdicts.Outcome(verdict, "m", "a", "b", "t")
        return rep

    def test_flagged_but_not_confirmed(self):
        fails = harness.ci_failures([self.report(True, True, verdicts.NOT_CONFIRMED)],
                                    True, True)
        self.assertEqual(len(fails), 1)
        self.assertIn("NOT CONFIRMED", fails[0])

    def test_gpu_only_never_fails(self):
        self.assertEqual(harness.ci_failures([self.report(True, True, verdicts.GPU_ONLY)],
                                             True, True), [])

    def test_measure_only_not_confirmed_fails(self):
        rep = harness.RuleReport(verdicts.BY_ID["LL101"])
        rep.outcome = verdicts.Outcome(verdicts.NOT_CONFIRMED, "m", "a", "b", "t")
        self.assertEqual(len(harness.ci_failures([rep], False, True)), 1)

    def test_miss_is_reported_once(self):
        fails = harness.ci_failures([self.report(False, True, verdicts.NOT_CONFIRMED)],
                                    True, True)
        self.assertEqual(len(fails), 1)
        self.assertIn("does not flag", fails[0])


class Verdicts(unittest.TestCase):
    def test_ll104(self):
        leaky = result(errors={"evaluate": {"type": "TypeError", "message": "x",
                                            "where": {"file": "leaky.py", "line": 30,
                                                      "code": "with torch.no_grad:"}}},
                       scalars={"batches_evaluated": 0})
        fixed = result(scalars={"batches_evaluated": 8})
        self.assertEqual(verdicts.eval_ll104(leaky, fixed, "cpu").verdict, verdicts.CONFIRMED)
        self.assertEqual(verdicts.eval_ll104(fixed, fixed, "cpu").verdict,
                         verdicts.NOT_CONFIRMED)

    def test_ll101_pure_loop_is_judged_on_peak(self):
        # regression: a loop that keeps nothing holds ~10 MiB at peak against 0 for the
        # fixed program; the old verdict (held after the loop) called it NOT CONFIRMED
        leaky = result({"main": {"saved_mib": [5.14] * 16}},
                       {"saved_peak_mib": 10.3, "peak_above_start_mib": 17.1})
        fixed = result({"main": {"saved_mib": [0.0] * 16}},
                       {"saved_peak_mib": 0.0, "peak_above_start_mib": 7.5})
        self.assertEqual(verdicts.eval_ll101(leaky, fixed, "cpu").verdict, verdicts.CONFIRMED)
        self.assertEqual(verdicts.eval_ll101(fixed, leaky, "cpu").verdict,
                         verdicts.NOT_CONFIRMED)
        # the peak must show in process memory too, not only in autograd's count
        flat = result({"main": {"saved_mib": [5.14] * 16}},
                      {"saved_peak_mib": 10.3, "peak_above_start_mib": 8.0})
        self.assertEqual(verdicts.eval_ll101(flat, fixed, "cpu").verdict,
                         verdicts.NOT_CONFIRMED)

    def test_crashed_scenario_is_not_confirmed(self):
        leaky = result()
        leaky.doc["error"] = {"type": "ValueError", "message": "boom", "where": None}
        out = verdicts.eval_ll101(leaky, result(), "cpu")
        self.assertEqual(out.verdict, verdicts.NOT_CONFIRMED)
        self.assertIn("crashed", out.details[0])

    def test_children(self):
        leaky = result(scalars={"exitcodes": [1, 1], "results": [], "pool_done": False},
                       stderr="RuntimeError: ... finished its bootstrapping phase.")
        fixed = result(scalars={"exitcodes": [0, 0], "results": [[0, 0], [1, 1]],
                                "pool_done": True})
        self.assertEqual(verdicts.eval_ll502(leaky, fixed, "cpu").verdict, verdicts.CONFIRMED)

    def test_slope(self):
        self.assertAlmostEqual(verdicts.slope([1, 3, 5, 7]), 2.0)
        self.assertEqual(verdicts.slope([4]), 0.0)


# --------------------------------------------------------------------------- swap tests


def synthetic_result(rule_id, variant, device, swap=False):
    import synthetic
    if swap:
        variant = "fixed" if variant == "leaky" else "leaky"
    doc, stderr = synthetic.doc(rule_id, variant, device)
    res = harness.ScenarioResult(path=f"{rule_id}/{variant}.py", variant=variant,
                                 returncode=0, stderr=stderr)
    res.doc = doc
    return res


def judge(rule, device, swap=False, mutate=None):
    leaky = synthetic_result(rule.id, "leaky", device, swap)
    fixed = synthetic_result(rule.id, "fixed", device, swap)
    if mutate:
        mutate(leaky.doc, fixed.doc)
    return rule.evaluate(leaky, fixed, device).verdict


class SwapTest(unittest.TestCase):
    """Every verdict can fail: leaky <-> fixed swapped must fail every rule, CPU and CUDA."""

    def check(self, device):
        rules = [r for r in verdicts.RULES if device == "cuda" or not r.gpu_only]
        self.assertGreaterEqual(len(rules), 12)
        for rule in rules:
            with self.subTest(rule=rule.id, device=device):
                self.assertEqual(judge(rule, device), verdicts.CONFIRMED)
                self.assertEqual(judge(rule, device, swap=True), verdicts.NOT_CONFIRMED)

    def test_cpu(self):
        self.check("cpu")

    def test_cuda(self):
        self.check("cuda")


def _set(which, path, value):
    """Mutation: set doc[path...] = value in the leaky (0) or fixed (1) document."""
    def mutate(leaky, fixed):
        doc = (leaky, fixed)[which]
        for key in path[:-1]:
            doc = doc.setdefault(key, {})
        doc[path[-1]] = value(doc.get(path[-1])) if callable(value) else value
    return mutate


class CudaThresholdsCanFail(unittest.TestCase):
    """Each CUDA-only threshold fails on its own (regressions: thresholds that could not)."""

    CASES = [
        # LL404 was CONFIRMED with 0 MiB of worker GPU memory
        ("LL404", "spawn: workers hold no device memory",
         _set(0, ("series", "spawn", "device_memory_outside_allocator_mib"),
              lambda v: [0.0] * len(v))),
        ("LL404", "spawn: the fixed program's workers hold as much",
         _set(1, ("series", "spawn", "device_memory_outside_allocator_mib"),
              lambda v: [1000.0] * len(v))),
        # LL402 was CONFIRMED with 5,000 MiB allocated
        ("LL402", "GPU memory grows with the leaky loader",
         _set(0, ("scalars", "cuda_allocated_mib"), 5000.0)),
        # LL303's peak check never failed
        ("LL303", "empty_cache() lowered the peak",
         _set(0, ("scalars", "max_reserved_mib"), 10.0)),
        ("LL303", "no cudaFree per iteration",
         _set(0, ("series", "main", "segments_freed"), lambda v: [0] * len(v))),
        ("LL303", "the fixed program frees every iteration too",
         _set(1, ("series", "main", "segments_freed"), lambda v: list(range(0, 4 * len(v), 4)))),
        ("LL303", "not slower",
         _set(0, ("series", "main", "iter_ms"), lambda v: [1.9] * len(v))),
        ("LL301", "the fixed program keeps the cache",
         _set(1, ("scalars", "reserved_minus_allocated_mib"), 64.0)),
        ("LL301", "the leaky program keeps no cache",
         _set(0, ("scalars", "reserved_minus_allocated_mib"), 0.0)),
        ("LL302", "the leaky release returns the model's blocks",
         _set(0, ("series", "main", "reserved_after_release_mib"), lambda v: [2.0] * len(v))),
        ("LL501", "the children succeed",
         _set(0, ("scalars", "exitcodes"), lambda v: [0] * len(v))),
    ]

    def test_each_threshold_fails(self):
        for rid, what, mutate in self.CASES:
            rule = verdicts.BY_ID[rid]
            with self.subTest(rule=rid, case=what):
                self.assertEqual(judge(rule, "cuda"), verdicts.CONFIRMED)
                self.assertEqual(judge(rule, "cuda", mutate=mutate), verdicts.NOT_CONFIRMED)


class ClaimsThatWereWrong(unittest.TestCase):
    def test_ll103_requires_the_crash_in_chunk_two(self):
        rule = verdicts.BY_ID["LL103"]
        # regression: the verdict ignored that the usual loop crashes
        no_crash = _set(0, ("errors",), {})
        self.assertEqual(judge(rule, "cpu", mutate=no_crash), verdicts.NOT_CONFIRMED)
        later = _set(0, ("series", "step_each_chunk", "step"), [0, 1, 2])
        self.assertEqual(judge(rule, "cpu", mutate=later), verdicts.NOT_CONFIRMED)

    def test_ll103_cpp_claim_is_growth_with_retain_graph(self):
        # LibTorch's SGD updates weights through .data(): with retain_graph the usual
        # loop runs and grows instead of failing in chunk 2 (measured by the C++ pair)
        rule = verdicts.BY_ID["LL103"]

        def cpp_shape(leaky, fixed):
            leaky["errors"].pop("step_each_chunk_retain_graph")
            leaky["series"]["step_each_chunk_retain_graph"] = {
                "step": [0, 1, 2, 3], "saved_mib": [0.3, 0.52, 0.75, 0.97]}

        def as_cpp(mutate=None):
            leaky = synthetic_result("LL103", "leaky", "cpu")
            fixed = synthetic_result("LL103", "fixed", "cpu")
            if mutate:
                mutate(leaky.doc, fixed.doc)
            leaky.lang = fixed.lang = "cpp"
            return leaky, fixed
        self.assertEqual(rule.evaluate(*as_cpp(cpp_shape), "cpu").verdict, verdicts.CONFIRMED)
        self.assertEqual(rule.evaluate(*as_cpp(), "cpu").verdict, verdicts.NOT_CONFIRMED)
        leaky, fixed = as_cpp(cpp_shape)
        self.assertEqual(rule.evaluate(fixed, leaky, "cpu").verdict, verdicts.NOT_CONFIRMED)
        # the Python claim does not accept the C++ shape
        self.assertEqual(judge(rule, "cpu", mutate=cpp_shape), verdicts.NOT_CONFIRMED)

    def test_ll403_scenarios_do_not_freeze_the_collector(self):
        # regression: the verdict depended on gc.freeze(), a line users do not write
        for variant in ("leaky", "fixed"):
            with open(os.path.join(harness.HERE, "LL403", f"{variant}.py")) as fh:
                self.assertNotIn("gc.freeze", fh.read())

    def test_ll403_tolerates_collector_copies_in_both(self):
        rule = verdicts.BY_ID["LL403"]
        both = _set(1, ("series", "main", "worker_private_dirty_mib"),
                    lambda v: [x + 20.0 for x in v])
        plus = _set(0, ("series", "main", "worker_private_dirty_mib"),
                    lambda v: [x + 20.0 for x in v])

        def mutate(leaky, fixed):
            both(leaky, fixed)
            plus(leaky, fixed)
        self.assertEqual(judge(rule, "cpu", mutate=mutate), verdicts.CONFIRMED)
        self.assertEqual(judge(rule, "cpu", mutate=both), verdicts.NOT_CONFIRMED)

    def test_display_strings_come_from_the_measurement(self):
        # regression: "no error" and "Pool.map hangs" were printed whatever happened
        o = verdicts.BY_ID["LL104"].evaluate(
            synthetic_result("LL104", "leaky", "cpu"), synthetic_result("LL104", "leaky", "cpu"),
            "cpu")
        self.assertNotIn("no error", o.fixed)
        leaky = synthetic_result("LL502", "leaky", "cpu")
        leaky.doc["scalars"]["pool_done"] = True
        o = verdicts.BY_ID["LL502"].evaluate(leaky, synthetic_result("LL502", "fixed", "cpu"),
                                              "cpu")
        self.assertNotIn("not done", o.leaky)
        fixed = synthetic_result("LL404", "fixed", "cuda")
        fixed.doc["errors"]["fork"] = {"type": "RuntimeError", "message": "x", "where": None}
        o = verdicts.BY_ID["LL404"].evaluate(synthetic_result("LL404", "leaky", "cuda"), fixed,
                                              "cuda")
        self.assertNotIn("no error", o.fixed)


# --------------------------------------------------------------------------- C++ rows

FAKE_PYTHON = textwrap.dedent("""\
    #!{python}
    # Stands in for an interpreter with torch (and, with FAKE_CUDA=1, a GPU): answers the
    # harness's probe and runs a scenario by writing synthetic.py's document for it.
    import json, os, re, sys
    sys.path.insert(0, {here!r})
    cuda = os.environ.get("FAKE_CUDA") == "1"
    if sys.argv[1] == "-c":
        print(json.dumps({{"torch": "synthetic", "python": "3", "cuda_available": cuda,
                          "cuda_device": "synthetic GPU" if cuda else None,
                          "cuda_version": "12" if cuda else None}}))
        sys.exit(0)
    import synthetic
    found = re.search(r"(LL\\d+)/(leaky|fixed)\\.py$", sys.argv[1])
    if not found:                                   # harness.py itself: the real python
        os.execv(sys.executable, [sys.executable] + sys.argv[1:])
    rule, variant = found.groups()
    if os.environ.get("FAKE_SWAP") == "1":
        variant = "fixed" if variant == "leaky" else "leaky"
    device = sys.argv[sys.argv.index("--device") + 1]
    doc, stderr = synthetic.doc(rule, variant, device)
    sys.stderr.write(stderr)
    with open(sys.argv[sys.argv.index("--json") + 1], "w") as fh:
        json.dump(doc, fh)
""")

FAKE_CPP = textwrap.dedent("""\
    #!{python}
    # A built C++ scenario program: --iters N --json OUT, the keys of its Python twin.
    import json, sys
    sys.path.insert(0, {here!r})
    import synthetic
    doc, stderr = synthetic.doc({rule!r}, {variant!r}, "cpu")
    doc["argv"] = sys.argv[1:]
    doc["iters"] = int(sys.argv[sys.argv.index("--iters") + 1])
    with open(sys.argv[sys.argv.index("--json") + 1], "w") as fh:
        json.dump(doc, fh)
""")


def write_exe(path, text):
    with open(path, "w") as fh:
        fh.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)


def quiet(fn, *args):
    with open(os.devnull, "w") as null:
        old = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = null
        try:
            return fn(*args)
        finally:
            sys.stdout, sys.stderr = old


class CppRows(unittest.TestCase):
    """One row per rule and language; C++ programs are judged like their Python twin."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = self.tmp.name
        self.scen = os.path.join(root, "verify")
        os.makedirs(os.path.join(self.scen, "LL104"))
        for variant in ("leaky", "fixed"):
            with open(os.path.join(self.scen, "LL104", f"{variant}.py"), "w") as fh:
                fh.write(f"sys.exit(measure.main(scenario, 'LL104', '{variant}', iters=8))\n")
            with open(os.path.join(self.scen, "LL104", f"{variant}.cpp"), "w") as fh:
                fh.write("int main() {}\n")
        self.python = os.path.join(root, "python")
        write_exe(self.python, FAKE_PYTHON.format(python=sys.executable, here=harness.HERE))
        self.bins = os.path.join(root, "bin")
        os.makedirs(self.bins)
        self.old_here = harness.HERE
        harness.HERE = self.scen

    def tearDown(self):
        harness.HERE = self.old_here
        self.tmp.cleanup()

    def build(self, swap=False):
        for variant in ("leaky", "fixed"):
            emulated = {"leaky": "fixed", "fixed": "leaky"}[variant] if swap else variant
            write_exe(os.path.join(self.bins, f"LL104_{variant}"),
                      FAKE_CPP.format(python=sys.executable, here=self.old_here, rule="LL104",
                                      variant=emulated))

    def run_harness(self, *extra):
        out = os.path.join(self.tmp.name, "results.json")
        keep = os.path.join(self.tmp.name, "keep")
        code = quiet(harness.main, ["--measure-only", "--ci", "--rules", "LL104", "--device",
                                    "cpu", "--python", self.python, "--json", out,
                                    "--keep", keep, *extra])
        with open(out) as fh:
            rows = json.load(fh)["rows"]
        return code, rows, keep

    def test_binaries_run_and_are_judged(self):
        self.build()
        code, rows, keep = self.run_harness("--cpp-bin-dir", self.bins)
        self.assertEqual(sorted(rows), ["LL104/cpp", "LL104/python"])
        self.assertEqual(rows["LL104/python"]["verdict"], verdicts.CONFIRMED)
        self.assertEqual(rows["LL104/cpp"]["verdict"], verdicts.CONFIRMED)
        self.assertEqual(code, 0)
        with open(os.path.join(keep, "LL104-cpp-leaky.json")) as fh:
            argv = json.load(fh)["argv"]
        self.assertEqual(argv[:2], ["--iters", "8"])      # the Python twin's count
        self.assertEqual(argv[2], "--json")

    def test_swapped_binaries_fail(self):
        self.build(swap=True)
        code, rows, _ = self.run_harness("--cpp-bin-dir", self.bins)
        self.assertEqual(rows["LL104/cpp"]["verdict"], verdicts.NOT_CONFIRMED)
        self.assertEqual(code, 1)

    def test_absent_binaries_are_not_run(self):
        for extra in ([], ["--cpp-bin-dir", self.bins]):
            code, rows, _ = self.run_harness(*extra)
            self.assertEqual(rows["LL104/cpp"]["verdict"], verdicts.NOT_RUN)
            self.assertNotEqual(rows["LL104/cpp"]["verdict"], verdicts.CONFIRMED)
            self.assertEqual(rows["LL104/python"]["verdict"], verdicts.CONFIRMED)

    def test_cpp_sources_are_linted(self):
        os.environ["FAKE_LEAKLINT_MODE"] = "good"
        binary = os.path.join(self.tmp.name, "leaklint")
        write_exe(binary, FAKE.format(python=sys.executable))
        seen = []
        real = harness.run_leaklint

        def spy(b, rel, timeout=120):
            seen.append(rel)
            return real(b, rel, timeout)
        harness.run_leaklint = spy
        try:
            code = quiet(harness.main, ["--lint-only", "--ci", "--leaklint", binary,
                                        "--rules", "LL104"])
        finally:
            harness.run_leaklint = real
            del os.environ["FAKE_LEAKLINT_MODE"]
        self.assertEqual(code, 0)
        self.assertIn("tests/verify/LL104/leaky.cpp", seen)
        self.assertIn("tests/verify/LL104/fixed.cpp", seen)


# --------------------------------------------------------------------------- report


class ReportStaysTrue(unittest.TestCase):
    def measured(self):
        import report
        reps = []
        for rid in ("LL104", "LL302"):
            rep = harness.RuleReport(verdicts.BY_ID[rid])
            rep.lint_leaky = harness.LintResult("ok", [{"rule": rid, "line": 1}], 1)
            rep.lint_fixed = harness.LintResult("ok", [], 0)
            if rid == "LL302":
                rep.skip_reason = "gpu"
                rep.outcome = verdicts.Outcome(verdicts.GPU_ONLY, "-", "-", "-", "-")
            else:
                rep.leaky = synthetic_result(rid, "leaky", "cpu")
                rep.fixed = synthetic_result(rid, "fixed", "cpu")
                rep.outcome = verdicts.BY_ID[rid].evaluate(rep.leaky, rep.fixed, "cpu")
            reps.append(rep)
        doc = {"env": {"date": "x"}, "device": "cpu", "lint": True, "measure": True}
        return report.build_measured(reps, doc)

    def test_same_run_matches(self):
        import check_report
        self.assertEqual(check_report.compare(self.measured(), self.measured()), [])

    def test_stale_rows_fail(self):
        import check_report
        current, committed = self.measured(), self.measured()
        # a row this run has that the report lacks (e.g. a new C++ scenario)
        current["rows"]["LL104/cpp"] = dict(current["rows"]["LL104/python"], lang="cpp")
        self.assertTrue(any("missing from the committed report" in d
                            for d in check_report.compare(current, committed)))
        # a row the report has that this run lacks
        self.assertTrue(any("not in this run" in d
                            for d in check_report.compare(committed, current)))

    def test_not_run_here_is_not_stale_but_newly_measured_is(self):
        import check_report
        committed, cur = self.measured(), self.measured()
        cur["rows"]["LL104/python"]["verdict"] = verdicts.NOT_RUN     # binaries absent here
        cur["rows"]["LL104/python"]["numbers"] = {}
        self.assertEqual(check_report.compare(cur, committed), [])
        self.assertTrue(check_report.compare(committed, cur))        # report says NOT RUN

    def test_verdict_lint_and_numbers_fail(self):
        import check_report
        committed = self.measured()
        cur = self.measured()
        cur["rows"]["LL104/python"]["verdict"] = verdicts.NOT_CONFIRMED
        self.assertTrue(check_report.compare(cur, committed))
        cur = self.measured()
        cur["rows"]["LL104/python"]["lint"]["leaky_rules"] = []   # the LL304 staleness
        self.assertTrue(check_report.compare(cur, committed))
        cur = self.measured()
        cur["rows"]["LL104/python"]["numbers"]["batches_fixed"] = 80
        self.assertTrue(check_report.compare(cur, committed))
        cur = self.measured()
        cur["rows"]["LL104/python"]["numbers"]["batches_fixed"] = 9    # within tolerance
        self.assertEqual(check_report.compare(cur, committed), [])

    def test_kib_and_bytes_have_a_page_noise_tolerance(self):
        import check_report
        committed, cur = self.measured(), self.measured()
        committed["rows"]["LL104/python"]["numbers"]["heap_growth_kib_leaky"] = 3.953
        cur["rows"]["LL104/python"]["numbers"]["heap_growth_kib_leaky"] = 0.7188   # allocator noise
        self.assertEqual(check_report.compare(cur, committed), [])
        cur["rows"]["LL104/python"]["numbers"]["heap_growth_kib_leaky"] = 40.0     # a real change
        self.assertTrue(check_report.compare(cur, committed))
        committed["rows"]["LL104/python"]["numbers"]["saved_mib"] = 3.9
        cur["rows"]["LL104/python"]["numbers"]["heap_growth_kib_leaky"] = 3.953
        cur["rows"]["LL104/python"]["numbers"]["saved_mib"] = 0.7                  # MiB: 2.0 as before
        self.assertTrue(check_report.compare(cur, committed))

    def test_plot_axes_show_noise_as_small_and_the_lines(self):
        import report
        panel = verdicts.Panel("t", "k", "MiB")
        lo, hi = report.y_limits([0.001, 0.003, 0.002], panel)
        self.assertEqual(lo, 0.0)
        self.assertGreaterEqual(hi, 1.0)                  # a few KiB stay a flat line
        panel = verdicts.Panel("t", "k", "MiB", threshold=5.0, ref=36.1)
        lo, hi = report.y_limits([0.0, 2.0], panel)
        self.assertGreater(hi, 36.1)                      # threshold and reference in view
        lo, hi = report.y_limits([-3.0, 1.0], verdicts.Panel("t", "k", "KiB"))
        self.assertLess(lo, -3.0)

    def test_readme_is_rendered_from_measured(self):
        import report
        measured = self.measured()
        text = report.render_readme(measured)
        self.assertIn("| [LL104](#ll104) `grad-mode-not-called` | Python |", text)
        self.assertIn("GPU-ONLY", text)
        self.assertIn("no plot", text)                      # a note, not an empty plot
        self.assertIn("tests/verify/gpu.sh", text)
        measured["rows"]["LL104/python"]["verdict"] = verdicts.NOT_CONFIRMED
        self.assertNotEqual(report.render_readme(measured), text)


# --------------------------------------------------------------------------- gpu.sh


class GpuScript(unittest.TestCase):
    """gpu.sh end to end on the CPU: a fake interpreter reports a GPU and writes synthetic
    CUDA results; swapped, every verdict of the CUDA run fails."""

    def run_script(self, swap):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        python = os.path.join(tmp.name, "python")
        write_exe(python, FAKE_PYTHON.format(python=sys.executable, here=harness.HERE))
        env = dict(os.environ, PYTHON=python, OUT=os.path.join(tmp.name, "out"), FAKE_CUDA="1",
                   FAKE_SWAP="1" if swap else "0", MPLBACKEND="Agg")
        proc = subprocess.run(["bash", os.path.join(harness.HERE, "gpu.sh")], env=env,
                              capture_output=True, text=True, timeout=600)
        archive = os.path.join(tmp.name, "out", "verify-cuda.tar.gz")
        self._last_out = os.path.join(tmp.name, "out")
        self.assertTrue(os.path.exists(archive), proc.stdout + proc.stderr)
        with tarfile.open(archive) as tar:
            names = tar.getnames()
            results = json.load(tar.extractfile("verify-cuda/results.json"))
        return proc, names, results

    def test_confirmed_and_swapped(self):
        proc, names, results = self.run_script(swap=False)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertEqual(results["device"], "cuda")
        self.assertIn("verify-cuda/docs/verification/cuda/README.md", names)
        self.assertIn("verify-cuda/docs/verification/cuda/measured.json", names)
        self.assertIn("verify-cuda/raw/LL404-leaky.json", names)
        py_rows = {k: v for k, v in results["rows"].items() if k.endswith("/python")}
        self.assertEqual(len(py_rows), len(verdicts.RULES))
        for key, row in py_rows.items():
            self.assertEqual(row["verdict"], verdicts.CONFIRMED, key)
        proc, names, results = self.run_script(swap=True)
        self.assertEqual(proc.returncode, 1)
        for key, row in results["rows"].items():
            if key.endswith("/python"):
                self.assertEqual(row["verdict"], verdicts.NOT_CONFIRMED, key)

    def test_published_cuda_report_is_checked(self):
        # the archive's report, published beside the CPU one, passes check_report; edited
        # by hand, it fails
        import check_report
        import shutil
        _, _, _ = self.run_script(swap=False)
        out = self._last_out
        root = os.path.join(out, "repo")
        shutil.copytree(os.path.join(harness.REPO, "docs"), os.path.join(root, "docs"))
        shutil.copytree(os.path.join(out, "verify-cuda", "docs", "verification", "cuda"),
                        os.path.join(root, "docs", "verification", "cuda"))
        import fill_docs
        fill_docs.main(["fill_docs.py", root])
        directory = os.path.join(root, "docs", "verification")
        self.assertEqual(check_report.check_files(directory, repo=root), [])
        with open(os.path.join(directory, "cuda", "README.md"), "a") as fh:
            fh.write("edited\n")
        self.assertTrue(check_report.check_files(directory, repo=root))

    def test_cuda_report_never_overwrites_the_cpu_report(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        python = os.path.join(tmp.name, "python")
        write_exe(python, FAKE_PYTHON.format(python=sys.executable, here=harness.HERE))
        readme = os.path.join(harness.REPO, "docs", "verification", "README.md")
        before = os.stat(readme).st_mtime_ns
        os.environ["FAKE_CUDA"] = "1"
        try:
            code = quiet(harness.main, ["--measure-only", "--device", "cuda", "--python",
                                        python, "--rules", "LL104", "--report",
                                        os.path.join(harness.REPO, "docs", "verification")])
        finally:
            del os.environ["FAKE_CUDA"]
        self.assertEqual(code, 2)
        self.assertEqual(os.stat(readme).st_mtime_ns, before)


if __name__ == "__main__":
    unittest.main()
