"""Self-test of the verification harness's lint and CI logic (no torch needed).

    python3 tests/verify/test_harness.py        (or: python3 -m pytest tests/verify/test_harness.py)

A fake leaklint (a small Python script written to a temporary directory) stands in for
the real binary, so part (a) and the CI exit status can be checked without a build;
part (b) verdicts are exercised with hand-made scenario results.
"""

import os
import stat
import sys
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
    m = re.search(r"(LL\\d+)/(leaky|fixed)\\.py$", path)
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

    def test_ll101_growth(self):
        leaky = result({"main": {"saved_mib": [5.0 * (i + 1) for i in range(8)]}},
                       {"peak_above_start_mib": 45.0})
        fixed = result({"main": {"saved_mib": [0.0] * 8}}, {"peak_above_start_mib": 8.0})
        self.assertEqual(verdicts.eval_ll101(leaky, fixed, "cpu").verdict, verdicts.CONFIRMED)
        self.assertEqual(verdicts.eval_ll101(fixed, fixed, "cpu").verdict,
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


if __name__ == "__main__":
    unittest.main()
