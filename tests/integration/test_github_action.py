#!/usr/bin/python3
"""The GitHub Action (action.yml) and its documented workflow, tested as far as they can
be without GitHub: the YAML parses and has the expected shape; no `run:` script splices
an input into its text (inputs travel through `env:`); every `run:` step is executed with
bash exactly as written, with `${{ ... }}` expressions evaluated from the step outputs
the earlier steps wrote to $GITHUB_OUTPUT, as the runner does. The upload step
(github/codeql-action) cannot run here; its `with:` is checked instead.

usage: test_github_action.py LEAKLINT_BIN SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import yaml

BIN = SRC = None

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from samples import LEAKY  # noqa: E402  (tests/samples.py)

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def read(path):
    with open(path) as f:
        return f.read()


def load_action():
    return yaml.safe_load(read(os.path.join(SRC, "action.yml")))


def evaluate(expr, inputs, steps):
    """The few expression forms action.yml uses: inputs.X, steps.ID.outputs.X."""
    m = re.fullmatch(r"inputs\.([\w-]+)", expr)
    if m:
        return inputs[m.group(1)]
    m = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
    if m:
        return steps.get(m.group(1), {}).get(m.group(2), "")
    raise AssertionError(f"expression not understood by this test: {expr}")


def substitute(text, inputs, steps):
    return EXPR.sub(lambda m: str(evaluate(m.group(1), inputs, steps)), text)


def run_action(workspace, overrides):
    """Runs every `run:` step of action.yml in `workspace`; returns (results, step summary)."""
    action = load_action()
    inputs = {k: v.get("default", "") for k, v in action["inputs"].items()}
    inputs.update(overrides)
    steps, results = {}, []
    summary = os.path.join(workspace, "step-summary.md")
    open(summary, "w").close()
    failed = False
    for step in action["runs"]["steps"]:
        if "run" not in step:
            continue
        if failed:
            break
        out_file = os.path.join(workspace, f"output-{len(results)}")
        open(out_file, "w").close()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_", "LEAKLINT_"))}
        env.update({k: substitute(str(v), inputs, steps) for k, v in step.get("env", {}).items()})
        env.update(GITHUB_ACTION_PATH=SRC, GITHUB_OUTPUT=out_file, GITHUB_STEP_SUMMARY=summary,
                   GITHUB_WORKSPACE=workspace, XDG_CACHE_HOME=os.path.join(workspace, ".cache"))
        p = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=workspace, env=env,
                           capture_output=True, text=True, timeout=600)
        outputs = {}
        for line in read(out_file).splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                outputs[k] = v
        if "id" in step:
            steps[step["id"]] = outputs
        results.append((step.get("name"), p))
        failed = p.returncode != 0
    return results, read(summary), steps


class ActionYaml(unittest.TestCase):
    def test_shape(self):
        a = load_action()
        self.assertEqual(a["runs"]["using"], "composite")
        for key in ("paths", "args", "sarif-file", "upload-sarif", "fail-on-findings", "cpp", "binary"):
            self.assertIn(key, a["inputs"])
            self.assertIn("description", a["inputs"][key])
        self.assertEqual(set(a["outputs"]), {"sarif-file", "exit-code"})
        for step in a["runs"]["steps"]:
            if "run" in step:
                self.assertEqual(step.get("shell"), "bash", step["name"])
                # Inputs reach scripts through env:, never through the script text.
                self.assertNotIn("${{", step["run"], step["name"])
        upload = [s for s in a["runs"]["steps"] if "uses" in s]
        self.assertEqual(len(upload), 1)
        self.assertTrue(upload[0]["uses"].startswith("github/codeql-action/upload-sarif@"))
        self.assertEqual(upload[0]["with"]["sarif_file"], "${{ steps.lint.outputs.sarif-file }}")
        self.assertIn("inputs.upload-sarif == 'true'", upload[0]["if"])

    def test_script_passes_bash_syntax_check(self):
        p = subprocess.run(["bash", "-n", os.path.join(SRC, "integrations", "github-action", "action.sh")],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_documented_workflow_uses_the_action(self):
        doc = read(os.path.join(SRC, "docs", "integrations", "github-action.md"))
        blocks = re.findall(r"```yaml\n(.*?)```", doc, re.S)
        self.assertTrue(blocks)
        wf = yaml.safe_load(blocks[0])
        job = next(iter(wf["jobs"].values()))
        self.assertEqual(job["permissions"]["security-events"], "write")
        uses = [s.get("uses", "") for s in job["steps"]]
        self.assertTrue(any(u.startswith("actions/checkout@") for u in uses))
        self.assertTrue(any(u.startswith("leaklint/leaklint@") for u in uses))


class ActionRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.ws = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, rel, text):
        path = os.path.join(self.ws, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    def test_findings_annotate_summarise_upload_and_fail(self):
        self.write("src/eval.py", LEAKY)
        results, summary, steps = run_action(self.ws, {"binary": BIN, "paths": "src"})
        names = [n for n, _ in results]
        self.assertEqual(names, ["Build leaklint", "Run leaklint", "Verdict"])
        build, lint, verdict = (p for _, p in results)
        self.assertEqual(build.returncode, 0, build.stderr)
        self.assertEqual(lint.returncode, 0, lint.stderr)
        self.assertIn("::warning file=src/eval.py,line=7", lint.stdout)
        self.assertIn("::notice title=leaklint::Found 1 finding", lint.stdout)
        self.assertEqual(steps["lint"]["exit-code"], "1")
        sarif = json.loads(read(os.path.join(self.ws, steps["lint"]["sarif-file"])))
        self.assertEqual([r["ruleId"] for r in sarif["runs"][0]["results"]], ["LL101"])
        self.assertIn("| LL101 missing-no-grad | 1 |", summary)
        self.assertIn("`src/eval.py:7`", summary)
        self.assertEqual(verdict.returncode, 1)

    def test_fail_on_findings_false_passes(self):
        self.write("src/eval.py", LEAKY)
        results, _, _ = run_action(self.ws, {"binary": BIN, "fail-on-findings": "false"})
        self.assertEqual(results[-1][1].returncode, 0, results[-1][1].stdout)

    def test_clean_tree_passes(self):
        self.write("src/ok.py", "import torch\n\nx = torch.zeros(3)\n")
        results, summary, steps = run_action(self.ws, {"binary": BIN})
        self.assertEqual([p.returncode for _, p in results], [0, 0, 0])
        self.assertEqual(steps["lint"]["exit-code"], "0")
        self.assertIn("All checks passed!", summary)

    def test_config_error_fails_and_is_not_uploaded(self):
        self.write("src/eval.py", LEAKY)
        self.write("pyproject.toml", "[tool.leaklint]\nselct = [\"LL1\"]\n")
        results, _, steps = run_action(self.ws, {"binary": BIN})
        self.assertEqual(steps["lint"]["exit-code"], "2")
        self.assertEqual(results[-1][1].returncode, 2)
        upload = next(s for s in load_action()["runs"]["steps"] if "uses" in s)
        self.assertIn("exit-code != '2'", upload["if"])

    def test_args_with_shell_metacharacters_are_not_run(self):
        self.write("src/eval.py", LEAKY)
        marker = os.path.join(self.ws, "pwned")
        results, _, steps = run_action(self.ws, {"binary": BIN, "args": f"--select LL1 $(touch {marker})"})
        self.assertFalse(os.path.exists(marker))

    def test_many_findings_keep_errors_first_and_say_how_many(self):
        for i in range(12):
            # On the GPU: an error at full severity (a CPU-only program's would be lowered).
            self.write(f"src/acc{i}.py", "import torch\n\nmodel = torch.nn.Linear(2, 2).cuda()\ntotal = 0\n"
                                         "for x in loader:\n    total += model(x.cuda())\n")
            self.write(f"src/eval{i}.py", LEAKY)
        results, summary, _ = run_action(self.ws, {"binary": BIN})
        lines = [l for l in results[1][1].stdout.splitlines() if l.startswith("::")]
        levels = [l.split(" ", 1)[0] for l in lines if not l.startswith("::notice")]
        self.assertEqual(levels, sorted(levels, key=lambda l: 0 if l == "::error" else 1))
        self.assertIn("12 error and 12 warning annotations in all", results[1][1].stdout)


if __name__ == "__main__":
    BIN, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    unittest.main(argv=sys.argv[:1], verbosity=2)
