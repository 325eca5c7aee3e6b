#!/usr/bin/env python3
"""End-to-end tests of the leaklint command line: exit codes, formats, bad input.

usage: test_cli.py LEAKLINT_BINARY SOURCE_DIR
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

BIN = SRC = None


def run(args, cwd=None, stdin=None, timeout=120):
    p = subprocess.run([BIN, "--show-low-confidence", *args], cwd=cwd, input=stdin, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from samples import LEAKY  # noqa: E402  (tests/samples.py)

CLEAN = """import torch


@torch.no_grad()
def validate(model, val_loader):
    return [model(x).argmax(-1) for x in val_loader]
"""


class Tmp(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="leaklint-cli-")

    def tearDown(self):
        for root, dirs, _ in os.walk(self.dir):
            for d in dirs:
                try:
                    os.chmod(os.path.join(root, d), 0o755)
                except OSError:
                    pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, rel, text, mode="w"):
        path = os.path.join(self.dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as f:
            f.write(text)
        return path


class ExitCodes(Tmp):
    def test_clean_file_exits_0(self):
        self.write("ok.py", CLEAN)
        rc, out, _ = run([self.dir])
        self.assertEqual(rc, 0, out)
        self.assertIn("All checks passed", out)

    def test_findings_exit_1_and_exit_zero(self):
        self.write("bad.py", LEAKY)
        rc, out, _ = run([self.dir])
        self.assertEqual(rc, 1)
        self.assertIn("[LL101]", out)
        rc, _, _ = run(["--exit-zero", self.dir])
        self.assertEqual(rc, 0)

    def test_jobs_must_be_a_small_whole_number(self):
        for bad in ("-1", "99999999999999", "two"):
            rc, out, err = run(["-j", bad, self.dir])
            self.assertEqual(rc, 2, bad)
            self.assertIn("--jobs: must be a whole number", err)
            self.assertLess(len(err), 300, err)

    def test_help_subcommand_prints_the_main_help(self):
        rc, out, err = run(["help"])
        self.assertEqual(rc, 0, err)
        self.assertIn("Usage: leaklint", out)
        self.assertIn("--select", out)

    def test_lsp_accepts_stdio_flag(self):
        def msg(obj):
            body = json.dumps(obj).encode()
            return b"Content-Length: %d\r\n\r\n" % len(body) + body
        stream = (msg({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}) +
                  msg({"jsonrpc": "2.0", "method": "initialized", "params": {}}) +
                  msg({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None}) +
                  msg({"jsonrpc": "2.0", "method": "exit"}))
        p = subprocess.run([BIN, "lsp", "--stdio"], input=stream, capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b'"capabilities"', p.stdout)

    def test_colour_follows_no_color_force_color_and_term(self):
        self.write("bad.py", LEAKY)
        def coloured(env):
            full = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
            full.update(env)
            p = subprocess.run([BIN, "--show-low-confidence", self.dir], capture_output=True, text=True, env=full, timeout=60)
            return "\x1b[" in p.stdout
        self.assertFalse(coloured({}))                      # a pipe: no colour
        self.assertTrue(coloured({"FORCE_COLOR": "1"}))
        self.assertFalse(coloured({"FORCE_COLOR": "1", "NO_COLOR": "1"}))
        self.assertTrue(coloured({"FORCE_COLOR": "1", "NO_COLOR": ""}))  # empty NO_COLOR is unset
        self.assertFalse(coloured({"FORCE_COLOR": ""}))
        p = subprocess.run([BIN, "--show-low-confidence", "--color", "always", self.dir], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "TERM": "dumb", "NO_COLOR": "1"})
        self.assertIn("\x1b[", p.stdout)                    # an explicit --color wins

    def test_usage_errors_exit_2(self):
        self.assertEqual(run(["--format", "xml", "."])[0], 2)
        self.assertEqual(run(["--select", "E501", "."])[0], 2)
        self.assertEqual(run(["explain", "LL999"])[0], 2)

    def test_bad_config_exits_2(self):
        self.write("pyproject.toml", "[tool.leaklint]\nmax-workerz = 3\n")
        self.write("bad.py", LEAKY)
        rc, out, err = run([self.dir])
        self.assertEqual(rc, 2, out + err)
        self.assertIn("max-workerz", out + err)

    def test_config_error_is_said_once_and_fails_the_sarif_run(self):
        self.write("pyproject.toml", "[tool.leaklint]\nselct = [\"LL1\"]\n")
        for i in range(3):
            self.write(f"m{i}.py", LEAKY)
        rc, out, err = run([self.dir])
        self.assertEqual(rc, 2, out + err)
        self.assertEqual((out + err).count("unknown key `selct`"), 1, out + err)
        self.assertIn("did you mean `select`?", err)
        self.assertNotIn("All checks passed", out)
        sarif = os.path.join(self.dir, "out.sarif")
        rc, out, err = run(["--format", "sarif", "-o", sarif, self.dir])
        self.assertEqual(rc, 2)
        inv = json.load(open(sarif))["runs"][0]["invocations"][0]
        self.assertIs(inv["executionSuccessful"], False)
        self.assertTrue(any("selct" in n["message"]["text"] for n in inv["toolExecutionNotifications"]))

    def test_ignore_all_in_config_and_on_the_command_line(self):
        self.write("bad.py", LEAKY)
        self.assertEqual(run(["--ignore", "ALL", self.dir])[0], 0)
        self.assertEqual(run(["--ignore", "ALL", "--select", "LL101", self.dir])[0], 1)
        self.write("pyproject.toml", "[tool.leaklint]\nignore = [\"ALL\"]\n")
        rc, out, err = run([self.dir])
        self.assertEqual(rc, 0, out + err)
        self.assertNotIn("[LL101]", out)

    def test_quiet_prints_findings_only(self):
        self.write("bad.py", LEAKY)
        rc, out, _ = run(["-q", self.dir])
        self.assertEqual(rc, 1)
        self.assertIn("[LL101]", out)
        self.assertNotIn("Found", out)

    def test_a_failing_run_never_says_all_checks_passed(self):
        self.write("broken.py", "def f(:\n    pass\n")
        rc, out, err = run([self.dir])
        self.assertEqual(rc, 1, out + err)
        self.assertNotIn("All checks passed", out)
        self.assertIn("only partly analysed", out)

    def test_select_and_ignore(self):
        self.write("bad.py", LEAKY)
        self.assertEqual(run(["--select", "LL2", self.dir])[0], 0)
        self.assertEqual(run(["--ignore", "LL101", self.dir])[0], 0)
        self.assertEqual(run(["--select", "LL1", self.dir])[0], 1)

    def test_inline_suppressions(self):
        self.write("bad.py", LEAKY.replace("model(x).argmax(-1))", "model(x).argmax(-1))  # noqa: LL101"))
        self.assertEqual(run([self.dir])[0], 0)
        self.write("bad.py", "# leaklint: ignore-file[LL1]\n" + LEAKY)
        self.assertEqual(run([self.dir])[0], 0)
        self.write("bad.py", LEAKY.replace("model(x).argmax(-1))", "model(x).argmax(-1))  # noqa: E501"))
        self.assertEqual(run([self.dir])[0], 1)

    def test_config_file_nearest_parent_wins(self):
        self.write("pyproject.toml", "[tool.leaklint]\nignore = [\"LL101\"]\n")
        self.write("sub/.leaklint.toml", "select = [\"LL1\"]\n")
        self.write("a.py", LEAKY)
        self.write("sub/b.py", LEAKY)
        rc, out, _ = run(["--format", "json", self.dir])
        paths = {f["path"].split("/")[-1] for f in json.loads(out)["findings"]}
        self.assertEqual(paths, {"b.py"})


class Commands(unittest.TestCase):
    def test_version_and_list_rules_and_explain(self):
        rc, out, _ = run(["--version"])
        self.assertEqual(rc, 0)
        self.assertTrue(out.startswith("leaklint "))
        rc, out, _ = run(["--list-rules"])
        self.assertEqual(rc, 0)
        for rid in ["LL101", "LL102", "LL103", "LL104", "LL201", "LL202", "LL301", "LL302", "LL303", "LL304",
                    "LL401", "LL402", "LL403", "LL404", "LL501", "LL502"]:
            self.assertIn(rid, out)
            rc, doc, _ = run(["explain", rid])
            self.assertEqual(rc, 0)
            self.assertIn("## What it does", doc, rid)
            self.assertIn("## How to fix", doc, rid)
        rc, doc, _ = run(["explain", "missing-no-grad"])
        self.assertIn("LL101", doc)

    def test_stdin(self):
        rc, out, _ = run(["--stdin-filename", "x.py"], stdin=LEAKY)
        self.assertEqual(rc, 1)
        self.assertIn("x.py:7:", out)

    def test_demo_project_has_findings(self):
        rc, out, _ = run([os.path.join(SRC, "examples")])
        self.assertEqual(rc, 1)
        for rid in ["LL101", "LL102", "LL104", "LL201", "LL202", "LL401"]:
            self.assertIn(f"[{rid}]", out)


class Formats(Tmp):
    def test_machine_formats_keep_stdout_clean(self):
        self.write("bad.py", LEAKY)
        for fmt in ["json", "sarif"]:
            rc, out, _ = run(["--format", fmt, self.dir])
            self.assertEqual(rc, 1)
            json.loads(out)  # nothing but the document on stdout
        rc, out, _ = run(["--format", "github", self.dir])
        self.assertTrue(all(l.startswith("::") for l in out.splitlines() if l), out)
        self.assertIn("::warning file=", out)

    def test_output_file(self):
        self.write("bad.py", LEAKY)
        dest = os.path.join(self.dir, "report.sarif")
        rc, out, _ = run(["--format", "sarif", "-o", dest, self.dir])
        self.assertEqual(rc, 1)
        self.assertEqual(out, "")
        with open(dest) as f:
            self.assertEqual(json.load(f)["version"], "2.1.0")


class BadInput(Tmp):
    """A directory of broken files: each gets a diagnostic, the good file is analysed."""

    def test_bad_files_are_reported_and_good_ones_analysed(self):
        d = self.dir
        self.write("good.py", LEAKY)
        self.write("syntax.py", "def f(:\n    pass\n" + LEAKY)
        self.write("latin.py", b"x = '\xff\xfe'\n".decode("latin-1"), mode="w")
        with open(os.path.join(d, "invalid.py"), "wb") as f:
            f.write(b"x = '\xff\xfe'\n" + LEAKY.encode())
        with open(os.path.join(d, "nul.py"), "wb") as f:
            f.write(b"x = 1\x00\n")
        self.write("deep.py", "x = " + "(" * 50000 + "1" + ")" * 50000 + "\n")
        self.write("deep_list.py", "x = " + "[" * 50000 + "]" * 50000 + "\n")
        os.symlink(os.path.join(d, "missing_target.py"), os.path.join(d, "dangling.py"))
        os.makedirs(os.path.join(d, "loop"))
        os.symlink(os.path.join(d, "loop"), os.path.join(d, "loop", "again"))
        unreadable = self.write("locked/secret.py", LEAKY)
        os.chmod(os.path.dirname(unreadable), 0)
        # The run must end (the subprocess timeout fails the test); how fast is a benchmark's
        # business, not a test's.
        rc, out, err = run(["--format", "json", d], timeout=300)
        self.assertIn(rc, (1, 2), err)
        doc = json.loads(out)
        errors = {os.path.basename(e["path"]): e for e in doc["errors"]}
        self.assertIn("syntax.py", errors)
        self.assertIn("invalid.py", errors)
        self.assertIn("UTF-8", errors["invalid.py"]["message"])
        self.assertIn("nul.py", errors)
        self.assertIn("NUL", errors["nul.py"]["message"])
        self.assertIn("deep.py", errors)
        self.assertIn("deep_list.py", errors)
        self.assertIn("dangling.py", errors)
        self.assertTrue(any("loop" in e["path"] for e in doc["errors"]), doc["errors"])
        if os.geteuid() != 0:
            self.assertTrue(any("locked" in e["path"] for e in doc["errors"]), doc["errors"])
        flagged = {os.path.basename(f["path"]) for f in doc["findings"]}
        self.assertIn("good.py", flagged)
        self.assertIn("syntax.py", flagged)  # analysed with error recovery

    def test_a_file_that_crashes_the_analysis_costs_only_its_own_findings(self):
        # A defect that crashes leaklint on one file (simulated: LEAKLINT_TEST_CRASH_ON makes
        # the analysis of matching paths raise SIGSEGV) is a per-file diagnostic; every other
        # file, before and after it in the run, keeps its findings. Also with one worker, and
        # with two crashing files.
        for i in range(6):
            self.write(f"m{i}.py", LEAKY)
        self.write("boom_a.py", LEAKY)
        self.write("boom_b.py", LEAKY)
        for jobs in ("1", "4"):
            env = {**os.environ, "LEAKLINT_TEST_CRASH_ON": "boom"}
            p = subprocess.run([BIN, "--no-cache", "-j", jobs, "--format", "json", self.dir],
                               capture_output=True, text=True, env=env, timeout=120)
            self.assertEqual(p.returncode, 1, p.stderr)
            doc = json.loads(p.stdout)
            flagged = {os.path.basename(f["path"]) for f in doc["findings"]}
            self.assertEqual(flagged, {f"m{i}.py" for i in range(6)})
            crashed = {os.path.basename(e["path"]): e for e in doc["errors"]}
            self.assertEqual(set(crashed), {"boom_a.py", "boom_b.py"})
            for e in crashed.values():
                self.assertEqual(e["kind"], "internal-error")
                self.assertTrue(e["fatal"])
        # Nothing matching: the same run, all files flagged.
        rc, out, _ = run(["--no-cache", "--format", "json", self.dir])
        self.assertEqual(len({f["path"] for f in json.loads(out)["findings"]}), 8)

    def test_file_size_limit(self):
        self.write("big.py", "x = 1\n" * 200000)
        rc, out, _ = run(["--format", "json", "--max-file-size", "64", self.dir])
        doc = json.loads(out)
        self.assertEqual(doc["errors"][0]["kind"], "too-large")
        self.assertEqual(rc, 1)

    def test_text_output_names_each_bad_file(self):
        with open(os.path.join(self.dir, "nul.py"), "wb") as f:
            f.write(b"\x00")
        rc, out, _ = run([self.dir])
        self.assertEqual(rc, 1)
        self.assertIn("nul.py", out)


class Discovery(Tmp):
    def test_gitignore_and_skipped_dirs(self):
        os.makedirs(os.path.join(self.dir, ".git"))
        self.write(".gitignore", "generated/\n")
        self.write("generated/bad.py", LEAKY)
        self.write(".venv/lib/bad.py", LEAKY)
        self.write("node_modules/x/bad.py", LEAKY)
        self.write("build/bad.py", LEAKY)
        self.write("src/ok.py", CLEAN)
        rc, out, _ = run([self.dir])
        self.assertEqual(rc, 0, out)
        # An ignored file named explicitly is still checked.
        rc, _, _ = run([os.path.join(self.dir, "generated/bad.py")])
        self.assertEqual(rc, 1)

    def test_macos_metadata_files_are_not_source(self):
        # AppleDouble files (`._train.py`, binary, beside `train.py`) and a zip's `__MACOSX/`
        # folder are metadata a Mac leaves behind: no "not analysed" error for each.
        with open(os.path.join(self.dir, "._train.py"), "wb") as f:
            f.write(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ")
        self.write("__MACOSX/src/._x.py", "not python\n")
        self.write("src/ok.py", CLEAN)
        rc, out, _ = run(["--format", "json", "--no-cache", self.dir])
        self.assertEqual(rc, 0, out)
        self.assertEqual(json.loads(out)["errors"], [])

    def files_reported(self, args):
        rc, out, err = run(["--format", "json", "--no-cache", *args])
        return sorted({os.path.relpath(f["path"], self.dir) for f in json.loads(out)["findings"]})

    def test_exclude_and_extend_exclude(self):
        self.write("src/a.py", LEAKY)
        self.write("src/legacy/b.py", LEAKY)
        self.write("src/gen_c.py", LEAKY)
        self.write("build/d.py", LEAKY)
        root = self.dir
        self.assertEqual(self.files_reported([root]), ["src/a.py", "src/gen_c.py", "src/legacy/b.py"])
        # --extend-exclude adds to the defaults: names anywhere, and paths from the root.
        self.assertEqual(self.files_reported(["--extend-exclude", "legacy,gen_*.py", root]), ["src/a.py"])
        self.assertEqual(self.files_reported(["--extend-exclude", "src/legacy", root]),
                         ["src/a.py", "src/gen_c.py"])
        # --exclude replaces the defaults: build/ is analysed again.
        self.assertEqual(self.files_reported(["--exclude", "legacy", root]),
                         ["build/d.py", "src/a.py", "src/gen_c.py"])
        # A file named on the command line is always analysed.
        self.assertEqual(self.files_reported(["--extend-exclude", "legacy", os.path.join(root, "src/legacy/b.py")]),
                         ["src/legacy/b.py"])



class CrossFile(Tmp):
    """Facts that cross module boundaries within one run."""

    DATA = """import json

from torch.utils.data import Dataset


class Records(Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.rows = json.load(f)

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]
"""
    EVAL = """import torch


def evaluate(model, val_loader):
    return [model(x).argmax(-1) for x in val_loader]
"""
    TRAIN = """import torch
from torch.utils.data import DataLoader

from pkg.data import Records
from pkg.evaluation import evaluate


def main(model):
    loader = DataLoader(Records("train.json"), batch_size=32, num_workers=4)
    with torch.no_grad():
        print(evaluate(model, loader))
"""

    def findings(self, *paths):
        rc, out, err = run(["--format", "json", *paths])
        return {(os.path.basename(f["path"]), f["rule"]) for f in json.loads(out)["findings"]}

    def test_dataset_in_one_module_loader_in_another(self):
        self.write("pkg/__init__.py", "")
        self.write("pkg/data.py", self.DATA)
        self.write("pkg/evaluation.py", self.EVAL)
        self.write("train.py", self.TRAIN)
        got = self.findings(self.dir)
        self.assertIn(("data.py", "LL403"), got)
        # evaluate() is only called under no_grad (from train.py): no LL101.
        self.assertNotIn(("evaluation.py", "LL101"), got)

    def test_a_method_whose_returned_loss_another_module_back_propagates(self):
        # A wrapper class loads its network with from_pretrained and returns the training
        # forward's loss in a dict; the training script of another module back-propagates it.
        # The program back-propagates: the forward is no inference program's.
        models = ("import torch\nfrom transformers import BertModel\n\n\nclass EntityModel:\n"
                  "    def __init__(self, name):\n        self.bert_model = BertModel.from_pretrained(name).cuda()\n\n"
                  "    def run_batch(self, batch, training=True):\n        out = {{}}\n        if training:\n"
                  "{train}            loss = self.bert_model(**batch).last_hidden_state.pow(2).mean()\n"
                  "            out['loss'] = loss\n        else:\n            with torch.no_grad():\n"
                  "                out['pred'] = self.bert_model(**batch).last_hidden_state.argmax(-1)\n        return out\n")
        self.write("entity.py", models.format(train=""))
        self.write("run.py", "import torch\nfrom entity import EntityModel\n\nmodel = EntityModel('bert')\n"
                   "opt = torch.optim.AdamW(model.bert_model.parameters())\nfor batch in torch.load('batches.pt'):\n"
                   "    output_dict = model.run_batch(batch, training=True)\n    loss = output_dict['loss']\n"
                   "    loss.backward()\n    opt.step()\n    opt.zero_grad()\n")
        self.assertNotIn(("entity.py", "LL101"), self.findings(self.dir))
        # Alone, the file shows the model switched to train mode just before the forward.
        self.write("entity.py", models.format(train="            self.bert_model.train()\n"))
        self.assertNotIn(("entity.py", "LL101"), self.findings(os.path.join(self.dir, "entity.py")))
        # Without either, it reads as an inference program.
        self.write("entity.py", models.format(train=""))
        self.assertIn(("entity.py", "LL101"), self.findings(os.path.join(self.dir, "entity.py")))

    def test_a_same_named_dataset_in_another_package_is_not_the_one_loaded(self):
        # Two chapters of a book, each with its own dsets.LunaDataset; only ch2 trains with
        # workers. A relative import (`from .dsets`) and a script's plain import (`from
        # dsets`, found beside the script first) both name ch2's class, never ch1's.
        for ch in ("ch1", "ch2", "ch3"):
            self.write(ch + "/__init__.py", "")
            self.write(ch + "/dsets.py", self.DATA.replace("Records", "LunaDataset"))
        self.write("ch2/training.py", self.TRAIN.replace("from pkg.data import Records", "from .dsets import LunaDataset")
                   .replace("from pkg.evaluation import evaluate\n", "").replace("Records(", "LunaDataset("))
        self.write("ch3/train.py", self.TRAIN.replace("from pkg.data import Records", "from dsets import LunaDataset")
                   .replace("from pkg.evaluation import evaluate\n", "").replace("Records(", "LunaDataset("))
        rc, out, err = run(["--no-cache", "--format", "json", self.dir])
        got = {os.path.relpath(f["path"], self.dir) for f in json.loads(out)["findings"] if f["rule"] == "LL403"}
        self.assertEqual(got, {os.path.join("ch2", "dsets.py"), os.path.join("ch3", "dsets.py")}, out)

    def test_loader_workers_through_a_kwargs_dict_and_the_binding_that_reaches_the_loader(self):
        # `DataLoader(training_set, **params)` with `params = {..., "num_workers": opt.workers}`:
        # the dataset is used with workers.
        self.write("pkg/__init__.py", "")
        self.write("pkg/data.py", self.DATA)
        train = ("import torch\nfrom torch.utils.data import DataLoader\nfrom pkg.data import Records\n\n\n"
                 "def main(opt):\n    params = {'batch_size': 32, 'shuffle': True, 'num_workers': opt.workers}\n"
                 "    training_set = Records('train.json')\n    return DataLoader(training_set, **params)\n")
        self.write("train.py", train)
        self.assertIn(("data.py", "LL403"), self.findings(self.dir))
        # The loader with workers reads another dataset (a comprehension's own variable); the
        # Records built on another branch only ever goes to a loader without workers.
        train = ("import torch\nfrom torch.utils.data import DataLoader\nfrom pkg.data import Records\n\n\n"
                 "def main(cfg, datasets):\n    if cfg.kind == 'qm9':\n"
                 "        return {k: DataLoader(dataset, batch_size=32, num_workers=8) for k, dataset in datasets.items()}\n"
                 "    dataset = Records('train.json')\n    return {'train': DataLoader(dataset, batch_size=32)}\n")
        self.write("train.py", train)
        self.assertNotIn(("data.py", "LL403"), self.findings(self.dir))

    def test_without_the_caller_file_each_module_stands_alone(self):
        self.write("pkg/data.py", self.DATA)
        self.write("pkg/evaluation.py", self.EVAL)
        got = self.findings(os.path.join(self.dir, "pkg"))
        self.assertNotIn(("data.py", "LL403"), got)
        self.assertIn(("evaluation.py", "LL101"), got)

    def test_a_caller_reaching_the_function_through_star_imports(self):
        # run.py star-imports the package, whose __init__ star-imports the module that
        # defines evaluate(): the call under no_grad is that function's.
        self.write("pkg/__init__.py", "from .evaluation import *\n")
        self.write("pkg/evaluation.py", self.EVAL)
        self.write("run.py", "import torch\nfrom pkg import *\n\n\ndef go(m, l):\n"
                   "    with torch.no_grad():\n        return evaluate(m, l)\n")
        self.assertNotIn(("evaluation.py", "LL101"), self.findings(self.dir))
        # A same-named function of an unrelated module is not the one called.
        self.write("pkg/__init__.py", "\n")
        self.write("other/__init__.py", "from pkg.evaluation import *\n")
        self.assertIn(("evaluation.py", "LL101"), self.findings(self.dir))

    def test_a_guard_held_by_every_caller_of_the_caller_in_a_third_module(self):
        # run.py holds no_grad around validate() (pkg/val.py), which calls evaluate()
        # (pkg/evaluation.py) with no guard of its own: evaluate() runs with grad off, through
        # a module and a method of a class, cold and warm.
        self.write("pkg/__init__.py", "")
        self.write("pkg/evaluation.py", self.EVAL)
        self.write("pkg/val.py", "from pkg.evaluation import evaluate\n\n\ndef validate(m, l):\n"
                   "    return evaluate(m, l)\n")
        run_py = ("import torch\nfrom pkg.val import validate\n\n\nclass Trainer:\n    def fit(self, m, l):\n"
                  "        {guard}self.check(m, l)\n\n    def check(self, m, l):\n        return validate(m, l)\n")
        self.write("run.py", run_py.format(guard="with torch.no_grad():\n            "))
        for extra in (["--no-cache"], [], []):
            rc, out, err = run(["--format", "json", *extra, self.dir])
            got = {(os.path.basename(f["path"]), f["rule"]) for f in json.loads(out)["findings"]}
            self.assertNotIn(("evaluation.py", "LL101"), got)
        # The outer caller with grad on, or a caller of validate() in its own module with grad
        # on: evaluate() runs with grad.
        self.write("run.py", run_py.format(guard=""))
        self.assertIn(("evaluation.py", "LL101"), self.findings("--no-cache", self.dir))
        self.write("run.py", run_py.format(guard="with torch.no_grad():\n            "))
        self.write("pkg/val.py", "from pkg.evaluation import evaluate\n\n\ndef validate(m, l):\n"
                   "    return evaluate(m, l)\n\n\ndef report(m, l):\n    print(validate(m, l))\n")
        self.assertIn(("evaluation.py", "LL101"), self.findings("--no-cache", self.dir))

    def test_a_module_class_another_module_defines_is_a_model(self):
        # A language model's generate() runs its decoder, whose class another module of the run
        # defines: that forward (twelve transformer layers) is the one to blame, not the one
        # linear head the file can see.
        self.write("pkg/__init__.py", "")
        self.write("pkg/inner.py", "import torch.nn as nn\n\n\nclass Decoder(nn.Module):\n"
                   "    def __init__(self, vocab, dim):\n        super().__init__()\n"
                   "        self.embed = nn.Embedding(vocab, dim)\n"
                   "        self.layers = nn.ModuleList(nn.TransformerEncoderLayer(dim, 8) for _ in range(12))\n\n"
                   "    def forward(self, ids):\n        h = self.embed(ids)\n        for layer in self.layers:\n"
                   "            h = layer(h)\n        return h\n")
        self.write("pkg/lm.py", "import torch\nimport torch.nn as nn\n\nfrom pkg.inner import Decoder\n\n\n"
                   "class LanguageModel(nn.Module):\n    def __init__(self, vocab, dim):\n        super().__init__()\n"
                   "        self.decoder = Decoder(vocab, dim)\n        self.head = nn.Linear(dim, vocab)\n\n"
                   "    def forward(self, ids):\n        return self.head(self.decoder(ids))\n\n"
                   "    def generate(self, ids, length):\n        for _ in range(length):\n"
                   "            hidden = self.decoder(ids)\n"
                   "            next_ids = self.head(hidden[:, -1]).argmax(-1, keepdim=True)\n"
                   "            ids = torch.cat([ids, next_ids], dim=1)\n        return ids\n")
        rc, out, err = run(["--no-cache", "--format", "json", self.dir])
        got = [(f["line"], f["severity"]) for f in json.loads(out)["findings"] if f["rule"] == "LL101"]
        self.assertEqual(got, [(18, "warning")], out)

    def test_loss_and_metric_modules_another_module_defines_are_not_models(self):
        # `FocalLoss(nn.Module)` and `DiceScore(nn.Module)` imported from losses.py compute a loss
        # and a score from logits the validation loop made under no_grad: no forward to flag.
        for name, text in (("losses.py", "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
                                          "class FocalLoss(nn.Module):\n    def __init__(self, gamma=2.0):\n"
                                          "        super().__init__()\n        self.gamma = gamma\n\n"
                                          "    def forward(self, logits, target):\n"
                                          "        ce = F.cross_entropy(logits, target, reduction='none')\n"
                                          "        return ((1 - torch.exp(-ce)) ** self.gamma * ce).mean()\n\n\n"
                                          "class DiceScore(nn.Module):\n    def forward(self, pred, target, eps=1e-6):\n"
                                          "        inter = (pred * target).sum()\n"
                                          "        return (2 * inter + eps) / (pred.sum() + target.sum() + eps)\n"),
                           ("evaluate.py", "import torch\nfrom losses import FocalLoss, DiceScore\n\n\n"
                                           "def validate(model, val_loader):\n    loss_fn = FocalLoss(gamma=2.0)\n"
                                           "    dice = DiceScore()\n    model.eval()\n    total, score = 0.0, 0.0\n"
                                           "    for x, y in val_loader:\n        x, y = x.cuda(), y.cuda()\n"
                                           "        with torch.no_grad():\n            logits = model(x)\n"
                                           "        total += loss_fn(logits, y).item()\n"
                                           "        score += dice(logits.softmax(1)[:, 1], (y == 1).float()).item()\n"
                                           "    return total / len(val_loader), score / len(val_loader)\n")):
            self.write(name, text)
        rc, out, err = run(["--no-cache", "--format", "json", "--show-low-confidence", self.dir])
        self.assertEqual(json.loads(out)["findings"], [], out)

    def test_a_method_that_hands_back_a_loss_to_another_file_is_not_inference(self):
        # FineTuner loads its encoder and puts it in eval mode in __init__ (batch-norm frozen for
        # fine-tuning); compute_loss() returns a loss that finetune.py back-propagates. A
        # predict() of the same shape that returns a number is an inference program.
        self.write("models.py", "import torch.nn as nn\n\n\nclass Encoder(nn.Module):\n    def __init__(self):\n"
                   "        super().__init__()\n        self.body = nn.Sequential(nn.Conv2d(3, 64, 3), nn.BatchNorm2d(64), "
                   "nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))\n\n"
                   "    def forward(self, x):\n        return self.body(x)\n")
        wrapper = ("import torch\nimport torch.nn.functional as F\nfrom models import Encoder\n\n\n"
                   "class FineTuner:\n    def __init__(self, ckpt):\n        self.encoder = Encoder().cuda()\n"
                   "        self.encoder.load_state_dict(torch.load(ckpt))\n        self.encoder.eval()\n\n"
                   "    def parameters(self):\n        return self.encoder.parameters()\n\n"
                   "    def compute_loss(self, x, y):\n        z = self.encoder(x.cuda())\n"
                   "        return F.cross_entropy(z, y.cuda())\n")
        self.write("wrapper.py", wrapper)
        self.write("finetune.py", "import torch\nfrom wrapper import FineTuner\n\n\ndef main(loader):\n"
                   "    ft = FineTuner('encoder.pt')\n    opt = torch.optim.SGD(ft.parameters(), lr=1e-3)\n"
                   "    for x, y in loader:\n        loss = ft.compute_loss(x, y)\n        opt.zero_grad()\n"
                   "        loss.backward()\n        opt.step()\n")
        rc, out, err = run(["--no-cache", "--format", "json", "--show-low-confidence", self.dir])
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL101"], [], out)
        self.write("wrapper.py", wrapper.replace("compute_loss(self, x, y)", "predict(self, x, y)")
                   .replace("return F.cross_entropy(z, y.cuda())", "return z.argmax(1).tolist()"))
        rc, out, err = run(["--no-cache", "--format", "json", self.dir])
        got = [(os.path.basename(f["path"]), f["line"]) for f in json.loads(out)["findings"] if f["rule"] == "LL101"]
        self.assertEqual(got, [("wrapper.py", 16)], out)

    def test_a_module_class_wrapping_another_frameworks_model_is_not_a_model(self):
        # Embedder derives from nn.Module but builds no torch layer: its forward runs a Keras
        # speaker model and returns a NumPy array, so what a preprocessing loop keeps of it
        # carries no graph. (A class that builds layers is a model: the test above.)
        self.write("model/__init__.py", "from .speaker_embedder import Embedder\n")
        self.write("model/speaker_embedder.py", 'import torch.nn as nn\nimport deepspeaker\n\n\nclass Embedder(nn.Module):\n    def __init__(self, path):\n        super().__init__()\n        self.embedder = self._load(path)\n\n    def _load(self, path):\n        return deepspeaker.build_model(path)\n\n    def forward(self, audio):\n        return deepspeaker.predict_embedding(self.embedder, audio)\n')
        self.write("preprocessor/preprocess.py", 'import os\n\nfrom tqdm import tqdm\n\nfrom model import Embedder\n\n\nclass Preprocessor:\n    def __init__(self, config, in_dir, speakers):\n        self.in_dir = in_dir\n        self.speaker_emb = Embedder(config)\n        self.speaker_emb_dict = {s: [] for s in speakers}\n\n    def build_from_path(self, save_speaker_emb=True):\n        for speaker in self.speaker_emb_dict:\n            for wav_name in tqdm(os.listdir(os.path.join(self.in_dir, speaker))):\n                (info, spker_embed) = self.process_utterance(os.path.join(self.in_dir, speaker, wav_name), save_speaker_emb)\n                if info is not None:\n                    self.speaker_emb_dict[speaker].append(spker_embed)\n\n    def process_utterance(self, wav_path, save_speaker_emb):\n        wav = open(wav_path, "rb").read()\n        spker_embed = self.speaker_emb(wav) if save_speaker_emb else None\n        if len(wav) > 0:\n            return (len(wav), spker_embed)\n        return None, None\n')
        rc, out, err = run(["--no-cache", "--format", "json", "--show-low-confidence", self.dir])
        self.assertEqual(json.loads(out)["findings"], [], out)

    def test_a_module_class_built_from_blocks_of_another_module_is_a_model(self):
        # Decoder builds only Block and Embed, which pkg/blocks.py defines: it builds layers, so
        # it is a model where lm.py imports it, and generate() blames its forward.
        for name, text in {'pkg/__init__.py': '\n', 'pkg/blocks.py': 'import torch.nn as nn\n\n\nclass Block(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n        self.ff = nn.Linear(dim, dim)\n\n    def forward(self, x):\n        return x + self.ff(x).relu()\n\n\nclass Embed(nn.Module):\n    def __init__(self, vocab, dim):\n        super().__init__()\n        self.e = nn.Embedding(vocab, dim)\n\n    def forward(self, ids):\n        return self.e(ids)\n', 'pkg/inner.py': 'import torch.nn as nn\n\nfrom pkg.blocks import Block, Embed\n\n\nclass Decoder(nn.Module):\n    def __init__(self, vocab, dim):\n        super().__init__()\n        self.embed = Embed(vocab, dim)\n        self.block0 = Block(dim)\n        self.block1 = Block(dim)\n\n    def forward(self, ids):\n        return self.block1(self.block0(self.embed(ids)))\n', 'pkg/lm.py': 'import torch\nimport torch.nn as nn\n\nfrom pkg.inner import Decoder\n\n\nclass LanguageModel(nn.Module):\n    def __init__(self, vocab, dim):\n        super().__init__()\n        self.decoder = Decoder(vocab, dim)\n        self.head = nn.Linear(dim, vocab)\n\n    def forward(self, ids):\n        return self.head(self.decoder(ids))\n\n    def generate(self, ids, length):\n        for _ in range(length):\n            hidden = self.decoder(ids)\n            next_ids = self.head(hidden[:, -1]).argmax(-1, keepdim=True)\n            ids = torch.cat([ids, next_ids], dim=1)\n        return ids\n'}.items():
            self.write(name, text)
        rc, out, err = run(["--no-cache", "--format", "json", self.dir])
        got = [(os.path.basename(f["path"]), f["line"], f["severity"]) for f in json.loads(out)["findings"] if f["rule"] == "LL101"]
        self.assertEqual(got, [("lm.py", 18, "warning")], out)

    def test_a_caller_with_grad_enabled_keeps_the_finding(self):
        self.write("pkg/evaluation.py", self.EVAL)
        self.write("run.py", "from pkg.evaluation import evaluate\n\n\ndef go(m, l):\n    return evaluate(m, l)\n")
        self.assertIn(("evaluation.py", "LL101"), self.findings(self.dir))

    GRADCAM = """import torch
import torch.nn.functional as F


class GradCAM:
    def __init__(self, model, layer):
        self.model = model
        self.acts = {}
        layer.register_forward_hook(lambda m, i, o: self.acts.__setitem__("a", o))

    def forward(self, image):
        self.logits = self.model(image)
        self.probs = F.softmax(self.logits, dim=1)

    def backward(self, label):
        self.model.zero_grad()
        self.logits.backward(gradient=F.one_hot(label, self.logits.size(1)).float())

    def heatmap(self, label):
        self.backward(label)
        return self.acts["a"]
"""
    EXPLAIN = """import torch
{imp}


def explain(model, val_loader):
    model.eval()
    cam = GradCAM(model, model.layer4)
    maps = []
    for images in val_loader:
        images = images.cuda()
        cam.forward(images)
        _, label = cam.probs.topk(1, dim=1)
        {use}
    return maps
"""

    def test_forward_of_an_object_whose_class_back_propagates_it_elsewhere(self):
        # The Grad-CAM object's forward keeps its logits, and its heatmap() back-propagates
        # them: the loop needs the graph. Imported by name or by a star import.
        self.write("cam.py", self.GRADCAM)
        use = "maps.append(cam.heatmap(label[:, 0]).detach().cpu())"
        self.write("run.py", self.EXPLAIN.format(imp="from cam import GradCAM", use=use))
        self.assertEqual(self.lines_of("LL101"), set())
        self.write("run.py", self.EXPLAIN.format(imp="from cam import *", use=use))
        self.assertEqual(self.lines_of("LL101"), set())
        # A loop that only reads the probabilities keeps a graph nothing back-propagates.
        self.write("run.py", self.EXPLAIN.format(imp="from cam import *", use="maps.append(label.cpu())"))
        self.assertEqual(self.lines_of("LL101"), {("run.py", 11)})
        # The same object built and used by a helper the evaluation loop calls.
        self.write("run.py", "import torch\nfrom cam import GradCAM\n\n\ndef guided(model, image):\n"
                   "    cam = GradCAM(model, model.layer4)\n    cam.forward(image)\n    return cam.heatmap(0)\n\n\n"
                   "def explain(model, val_loader):\n    model.eval()\n"
                   "    return [guided(model, images.cuda()).cpu() for images in val_loader]\n")
        self.assertEqual(self.lines_of("LL101"), set())

    CALLABLE_CAM = """import torch


class GradCam:
    def __init__(self, model):
        self.model = model
        self.model.eval()

    def forward(self, x):
        return self.model(x)

    def __call__(self, x, training):
        out = self.model(x)
        score = torch.sum(out.max(dim=1).values)
        self.model.zero_grad()
        score.backward(retain_graph=True)
        return x.grad if training else out.detach()
"""

    def test_calling_an_object_whose_call_back_propagates(self):
        # `masks = grad_cam(images)` runs the imported class's `__call__`, which back-propagates
        # to read gradients: the loop needs autograd, `no_grad` would break it.
        self.write("gradcam.py", self.CALLABLE_CAM)
        run = ("import torch\nfrom torchvision import models\nfrom gradcam import GradCam\n\n"
               "model = models.resnet18(num_classes=10).cuda()\ngrad_cam = GradCam(model)\n"
               "test_loader = torch.utils.data.DataLoader(torch.load('t.pt'), batch_size=8)\nmodel.eval()\n"
               "for images, labels in test_loader:\n    masks = grad_cam(images.cuda(), training=True)\n"
               "    print(masks.sum().item())\n")
        self.write("run.py", run)
        self.assertEqual(self.lines_of("LL101"), set())
        # A class whose `__call__` only runs the forward keeps the finding.
        self.write("gradcam.py", self.CALLABLE_CAM.replace("score.backward(retain_graph=True)", "pass"))
        self.assertEqual(self.lines_of("LL101"), {("run.py", 10)})

    def test_a_scope_that_runs_a_project_attribution_method_on_the_model(self):
        # The model's own forward for the prediction, then `cam.generate(x)` of an imported
        # class built with the model, which back-propagates: interpretability code whose scope
        # needs autograd, as with a library's Grad-CAM.
        cam = self.CALLABLE_CAM.replace("def __call__(self, x, training):", "def generate(self, x, training=False):")
        self.write("gradcam.py", cam)
        run = ("import torch\nfrom torchvision import models\nfrom gradcam import GradCam\n\n"
               "model = models.resnet18(num_classes=10).cuda()\nmodel.load_state_dict(torch.load('m.pt'))\n"
               "model.eval()\n\n\ndef explain(loader):\n    cam = GradCam(model)\n    for images, _ in loader:\n"
               "        out = model(images.cuda())\n        heat = cam.generate(images.cuda())\n"
               "        print(out.argmax(1).tolist(), heat.shape)\n\n\n"
               "if __name__ == '__main__':\n    explain(torch.utils.data.DataLoader(torch.load('t.pt'), batch_size=8))\n")
        self.write("run.py", run)
        self.assertEqual(self.lines_of("LL101"), set())
        # A method that only runs the forward keeps the finding.
        self.write("gradcam.py", cam.replace("score.backward(retain_graph=True)", "pass"))
        self.assertEqual(self.lines_of("LL101"), {("run.py", 13)})

    # LL405 across modules: the DataLoader is built in one file, the model wrapped in DDP and
    # trained in another (and the other way round).
    LOADERS = """import torch
from torch.utils.data import DataLoader, DistributedSampler


def build_loaders(train_set, val_set):
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=64)
    return train_loader, val_loader


def build_sharded(train_set):
    return DataLoader(train_set, batch_size=32, sampler=DistributedSampler(train_set))
"""
    DDP_TRAIN = """import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from data import {builder}


def main(rank, net, train_set, val_set):
    model = DDP(net.to(rank), device_ids=[rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    {bind}
    for epoch in range(10):
        for x, y in train_loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

    def lines_of(self, rule):
        rc, out, err = run(["--no-cache", "--format", "json", self.dir])
        return {(os.path.basename(f["path"]), f["line"]) for f in json.loads(out)["findings"] if f["rule"] == rule}

    DECODER = ("import torch\nimport torch.nn as nn\n\n\nclass Decoder(nn.Module):\n"
               "    def __init__(self):\n        super().__init__()\n        self.out = nn.Linear(8, 8)\n\n"
               "    def forward(self, x):\n        return self.out(x)\n\n"
               "    def generate(self, x, steps):\n        outs = [x]\n        for _ in range(steps):\n"
               "            outs.append(self(outs[-1]))\n        return torch.stack(outs)\n")

    def test_method_called_by_name_from_other_files(self):
        # Decoder.generate has no caller in its own file; the run's other files call it on a
        # value whose class they do not show. All of them under no_grad: its loop runs
        # without grad. One with grad: the finding stays.
        self.write("model.py", self.DECODER)
        self.assertEqual(self.lines_of("LL101"), {("model.py", 16)})
        self.write("evaluate.py", "import torch\n\n\ndef evaluate(decoder, xs):\n    with torch.no_grad():\n"
                   "        return [decoder.generate(x, 10) for x in xs]\n")
        self.write("translate.py", "import torch\n\n\n@torch.no_grad()\ndef main(decoder, x):\n"
                   "    print(decoder.generate(x, 50))\n")
        self.assertEqual(self.lines_of("LL101"), set())
        rc, out, err = run(["--format", "json", self.dir])       # cached: the same answer
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL101"], [])
        self.write("sample.py", "def sample(decoder, x):\n    return decoder.generate(x, 100)\n")
        self.assertEqual(self.lines_of("LL101"), {("model.py", 16)})

    CONTROLLER = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
                  "class Controller(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                  "        self.cell = nn.LSTMCell(8, 8)\n        self.head = nn.Linear(8, 4)\n\n"
                  "    def forward(self, x, h):\n        h = self.cell(x, h)\n        return self.head(h[0]), h\n\n"
                  "    def sample(self, steps):\n        x = torch.zeros(1, 8)\n        h = None\n"
                  "        log_probs = []\n        for _ in range(steps):\n"
                  "            logits, h = self.forward(x, h)\n"
                  "            log_probs.append(F.log_softmax(logits, dim=-1)[:, 0])\n"
                  "        return torch.cat(log_probs)\n")

    def test_sampler_whose_result_another_file_back_propagates_is_not_evaluation(self):
        # Controller.sample is named like an evaluation function; a trainer in another file
        # back-propagates through what it returns (a policy gradient), so grad is wanted there
        # and no `@torch.no_grad()` is offered. A caller that only prints it leaves the finding.
        self.write("controller.py", self.CONTROLLER)
        self.write("report.py", "def report(controller):\n    print(controller.sample(5).sum().item())\n")
        self.assertEqual(self.lines_of("LL101"), {("controller.py", 21)})
        self.write("trainer.py", "def train_controller(controller, optimizer, reward):\n"
                   "    for step in range(100):\n        log_probs = controller.sample(5)\n"
                   "        loss = -log_probs * reward\n        loss = loss.sum()\n"
                   "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n")
        self.assertEqual(self.lines_of("LL101"), set())
        rc, out, err = run(["--format", "json", self.dir])       # cached: the same answer
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL101"], [])

    def test_calls_by_name_reach_the_definition_their_file_imports(self):
        # Two chapters of a tutorial, each with its own model.py defining Decoder.generate. One
        # chapter's script calls it with grad on, the other's under no_grad: each call reaches
        # the definition its file imports (the module beside it), not the other chapter's.
        for ch in ("ch1", "ch2"):
            self.write(ch + "/model.py", self.DECODER)
        self.write("ch1/demo.py", "from model import Decoder\n\n\ndef demo(x):\n    decoder = Decoder()\n"
                   "    return decoder.generate(x, 100)\n")
        self.write("ch2/show.py", "import torch\nfrom model import Decoder\n\n\ndef show(x):\n    decoder = Decoder()\n"
                   "    with torch.no_grad():\n        return decoder.generate(x, 100)\n")
        rc, out, err = run(["--no-cache", "--format", "json", self.dir])
        got = {(os.path.relpath(f["path"], self.dir), f["line"]) for f in json.loads(out)["findings"] if f["rule"] == "LL101"}
        self.assertEqual(got, {(os.path.join("ch1", "model.py"), 16)})
        # A caller whose imports reach no definition still reaches both.
        self.write("ch3/report.py", "def report(decoder, x):\n    return decoder.generate(x, 3)\n")
        rc, out, err = run(["--no-cache", "--format", "json", self.dir])
        got = {(os.path.relpath(f["path"], self.dir), f["line"]) for f in json.loads(out)["findings"] if f["rule"] == "LL101"}
        self.assertEqual(got, {(os.path.join("ch1", "model.py"), 16), (os.path.join("ch2", "model.py"), 16)})

    def test_method_turned_off_by_its_own_file_is_turned_back_on_by_another(self):
        self.write("model.py", self.DECODER + "\n\ndef demo(decoder, x):\n    with torch.no_grad():\n"
                   "        return decoder.generate(x, 5)\n")
        self.assertEqual(self.lines_of("LL101"), set())
        self.write("sample.py", "def sample(decoder, x):\n    return decoder.generate(x, 100)\n")
        self.assertEqual(self.lines_of("LL101"), {("model.py", 16)})

    FLOWS = ("import torch\nimport torch.nn as nn\n\n\nclass Step(nn.Module):\n"
             "    def __init__(self):\n        super().__init__()\n        self.cell = nn.LSTMCell(8, 8)\n\n"
             "    def forward(self, x):\n        return self.cell(x)[0]\n\n"
             "    def infer(self, x):\n        outs = []\n        for t in range(x.shape[0]):\n"
             "            outs.append(self.cell(x[t])[0])\n        return torch.stack(outs)\n\n\n"
             "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.flows = nn.ModuleList([Step(), Step()])\n\n"
             "    def forward(self, x):\n        for flow in self.flows:\n            x = flow(x)\n        return x\n\n"
             "    def synthesize(self, x):\n        for flow in reversed(self.flows):\n"
             "            x = flow.infer(x)\n        return x\n")

    def test_method_reached_through_a_method_that_other_files_call_under_no_grad(self):
        # Step.infer holds the loop; no file calls it but Net.synthesize, which no call in
        # model.py resolves to. Whether it runs with grad is decided by the files that call
        # `synthesize`: the join is asked about the method chain, not only the method holding
        # the finding.
        self.write("model.py", self.FLOWS)
        self.assertEqual(self.lines_of("LL101"), {("model.py", 16)})
        self.write("synth.py", "import torch\n\n\n@torch.no_grad()\ndef main(net, x):\n"
                   "    return net.synthesize(x)\n")
        self.assertEqual(self.lines_of("LL101"), set())
        self.write("demo.py", "def demo(net, x):\n    return net.synthesize(x)\n")
        self.assertEqual(self.lines_of("LL101"), {("model.py", 16)})

    def test_method_called_only_from_another_modules_forward_runs_in_its_callers_mode(self):
        # Decoder.generate's only call across the run sits in another module's forward: part of
        # that module's computation, whose grad mode is its caller's (judged there). A call
        # from plain code with grad still decides.
        self.write("model.py", self.DECODER)
        self.assertEqual(self.lines_of("LL101"), {("model.py", 16)})
        self.write("captioner.py", "import torch.nn as nn\n\n\nclass Captioner(nn.Module):\n"
                   "    def __init__(self, decoder):\n        super().__init__()\n        self.decoder = decoder\n\n"
                   "    def forward(self, x):\n        if self.training:\n            return self.decoder(x)\n"
                   "        return self.decoder.generate(x, 20)\n")
        self.assertEqual(self.lines_of("LL101"), set())
        self.write("sample.py", "def sample(decoder, x):\n    return decoder.generate(x, 100)\n")
        self.assertEqual(self.lines_of("LL101"), {("model.py", 16)})

    def test_meter_class_of_another_module_that_keeps_its_argument(self):
        # utils/meters.py's AverageMeter.update does `self.sum += val * n`: handing it the loss
        # keeps every batch's graph, wherever the class is defined. A meter that converts with
        # .item() keeps numbers.
        self.write("utils/__init__.py", "")
        meter = ("class AverageMeter:\n    def __init__(self):\n        self.sum = 0\n        self.count = 0\n\n"
                 "    def update(self, val, n=1):\n        self.sum += {} * n\n        self.count += n\n")
        self.write("utils/meters.py", meter.format("val"))
        self.write("train.py", "import torch.nn.functional as F\nfrom utils.meters import AverageMeter\n\n\n"
                   "def train(model, loader, opt):\n    losses = AverageMeter()\n    for x, y in loader:\n"
                   "        loss = F.cross_entropy(model(x.cuda()), y.cuda())\n        opt.zero_grad()\n"
                   "        loss.backward()\n        opt.step()\n        losses.update(loss, x.size(0))\n"
                   "    return losses.sum / losses.count\n")
        self.assertEqual(self.lines_of("LL102"), {("train.py", 12)})
        self.write("utils/meters.py", meter.format("val.item()"))
        self.assertEqual(self.lines_of("LL102"), set())

    def test_loss_helpers_of_other_modules_that_return_python_numbers(self):
        # stats.py's calc_dataset_loss sums `loss.item()` and a trainer's get_current_loss()
        # returns `self.loss.item()`: the numbers they return carry no history, so the lists
        # that keep them per epoch keep floats. A definition that returns the tensor (even one
        # of two of that name) leaves the call a loss, which does carry history.
        self.write("stats.py", "def calc_dataset_loss(loader, net, loss_fn):\n    running = 0.0\n"
                   "    for x, y in loader:\n        running += loss_fn(net(x), y).item()\n"
                   "    return running / len(loader)\n")
        getter = ("import torch\n\n\nclass Trainer:\n    def __init__(self, net):\n        self.net = net\n\n"
                  "    def step(self, x, y):\n        self.loss = torch.nn.functional.mse_loss(self.net(x), y)\n"
                  "        self.loss.backward()\n\n    def get_current_loss(self):\n        return {}\n")
        self.write("trainer.py", getter.format("self.loss.item()"))
        self.write("train.py", "import torch\nfrom stats import calc_dataset_loss\n\n\n"
                   "def main(model, net, loader, val_loader, loss_fn, epochs):\n    history, seen = [], []\n"
                   "    for epoch in range(epochs):\n        for x, y in loader:\n            model.step(x.cuda(), y.cuda())\n"
                   "            seen.append(model.get_current_loss())\n"
                   "        history.append(calc_dataset_loss(val_loader, net, loss_fn))\n    return history, seen\n")
        self.assertEqual(self.lines_of("LL102"), set())
        self.write("trainer.py", getter.format("self.loss"))
        self.assertEqual(self.lines_of("LL102"), {("train.py", 10)})
        self.write("trainer.py", getter.format("self.loss.item()"))
        self.write("old_trainer.py", getter.format("self.loss"))
        self.assertEqual(self.lines_of("LL102"), {("train.py", 10)})
        # An abstract definition (its body only raises) says nothing; `math.exp(...)` of a
        # number is a number.
        os.remove(os.path.join(self.dir, "old_trainer.py"))
        self.write("base.py", "class BaseTrainer:\n    def get_current_loss(self):\n"
                   "        \"\"\"The loss.\"\"\"\n        raise NotImplementedError\n")
        self.write("trainer.py", "import math\n" + getter.format("math.exp(self.loss.item())"))
        self.assertEqual(self.lines_of("LL102"), set())

    def test_a_loss_helper_imported_by_its_name_into_a_package_module(self):
        # `from .evaluation import evaluate_loss` inside a function of a package module: the
        # import names the helper, which returns a Python number, so the rows kept per epoch
        # keep numbers.
        self.write("pkg/__init__.py", "")
        self.write("pkg/evaluation.py", "import math\n\n\ndef evaluate_loss(model, loader, loss_fn):\n"
                   "    total = 0.0\n    for x, y in loader:\n        total += loss_fn(model(x), y).item()\n"
                   "    return math.exp(total / len(loader))\n")
        self.write("pkg/run.py", "import torch\n\n\ndef main(model, loader, val_loader, loss_fn, opt, epochs):\n"
                   "    from .evaluation import evaluate_loss\n    rows = []\n    for epoch in range(epochs):\n"
                   "        for x, y in loader:\n            opt.zero_grad()\n            loss_fn(model(x.cuda()), y.cuda()).backward()\n"
                   "            opt.step()\n        val_loss = evaluate_loss(model, val_loader, loss_fn)\n"
                   "        row = {\"epoch\": epoch}\n        row.update({\"loss\": val_loss})\n        rows.append(val_loss)\n"
                   "    return rows\n")
        self.assertEqual(self.lines_of("LL102"), set())

    def test_loss_helpers_that_sum_tensors_or_belong_to_another_class(self):
        # `loss = 0; loss += w * F.mse_loss(...)` returns a tensor, not the literal it started
        # from; and a validator's `compute_loss` that returns a float says nothing of the model
        # class's `compute_loss` in another module, which returns the loss tensor.
        self.write("losses.py", "import torch.nn.functional as F\n\n\ndef multitask_loss(outputs, batch, weights):\n"
                   "    loss = 0\n    for name, w in weights.items():\n"
                   "        loss += w * F.mse_loss(outputs[name], batch[name])\n    return loss / len(weights)\n")
        self.write("model.py", "import torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass Regressor(nn.Module):\n"
                   "    def forward(self, x):\n        return x\n\n"
                   "    def compute_loss(self, pred, y):\n        return F.mse_loss(pred, y)\n")
        self.write("train.py", "import torch\nfrom losses import multitask_loss\n\n\nclass Validator:\n"
                   "    @torch.no_grad()\n    def compute_loss(self, model, loader):\n        total = 0.0\n"
                   "        for x, y in loader:\n            total += model.compute_loss(model(x), y).item()\n"
                   "        return float(total / len(loader))\n\n\n"
                   "def train(model, loader, opt, weights, epochs):\n    history, seen = [], []\n"
                   "    for epoch in range(epochs):\n        for batch in loader:\n"
                   "            outputs = model(batch['x'].cuda())\n"
                   "            loss = multitask_loss(outputs, batch, weights)\n"
                   "            opt.zero_grad()\n            loss.backward()\n            opt.step()\n"
                   "            history.append(loss)\n"
                   "            seen.append(model.compute_loss(outputs, batch['y'].cuda()))\n"
                   "    return history, seen\n")
        self.assertEqual(self.lines_of("LL102"), {("train.py", 23), ("train.py", 24)})

    def test_evaluation_function_of_another_module_that_leaves_the_model_in_eval_mode(self):
        # evaluate.py's evaluate() calls model.eval() and never model.train(): the training loop
        # that calls it trains in eval mode from the second epoch on. Once evaluate() restores
        # the mode, nothing is left to report.
        body = ("import torch\n\n\ndef evaluate(model, loader):\n    model.eval()\n    total = 0.0\n"
                "    with torch.no_grad():\n        for x, y in loader:\n"
                "            total += (model(x) - y).abs().mean().item()\n{}    return total\n")
        self.write("evaluate.py", body.format(""))
        self.write("train.py", "import torch\nimport torch.nn as nn\nfrom evaluate import evaluate\n\n\n"
                   "def main(train_loader, valid_loader, epochs):\n"
                   "    net = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 1))\n"
                   "    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n    net.train()\n"
                   "    for epoch in range(epochs):\n        for x, y in train_loader:\n"
                   "            loss = (net(x) - y).pow(2).mean()\n            opt.zero_grad()\n"
                   "            loss.backward()\n            opt.step()\n        evaluate(net, valid_loader)\n")
        self.assertEqual(self.lines_of("LL205"), {("train.py", 16)})
        self.write("evaluate.py", body.format("    model.train()\n"))
        self.assertEqual(self.lines_of("LL205"), set())

    def test_imported_model_class_whose_forward_disables_grad(self):
        # sampler.py's class decorates its own forward with no_grad: an instance built in
        # another file records no graph when called there.
        self.write("sampler.py", "import torch\nimport torch.nn as nn\n\n\nclass Sampler(nn.Module):\n"
                   "    def __init__(self, net):\n        super().__init__()\n        self.net = net\n\n"
                   "    @torch.no_grad()\n    def forward(self, x):\n        return self.net(x)\n")
        evaluate = ("import torch\nfrom sampler import Sampler\n\n\ndef evaluate(net, val_loader):\n"
                    "    model = Sampler(net).cuda().eval()\n    outs = []\n    for x in val_loader:\n"
                    "        outs.append(model(x.cuda()))\n    return outs\n")
        self.write("evaluate.py", evaluate)
        self.assertEqual(self.lines_of("LL101") | self.lines_of("LL102"), set())
        # Without the decorator, the same call is an evaluation forward with grad.
        self.write("sampler.py", "import torch\nimport torch.nn as nn\n\n\nclass Sampler(nn.Module):\n"
                   "    def __init__(self, net):\n        super().__init__()\n        self.net = net\n\n"
                   "    def forward(self, x):\n        return self.net(x)\n")
        self.assertEqual(self.lines_of("LL101"), {("evaluate.py", 9)})

    def test_constructor_hooks_a_part_of_the_network_it_loads_itself(self):
        # run.py builds a PatchCore per class; each constructor loads its own backbone and hooks
        # `self.model.layer2[-1]`: the hooks die with that network. Handed the backbone instead,
        # the constructor hooks what lives on, and the hooks pile up.
        core = ("import torch\n\n\nclass PatchCore(torch.nn.Module):\n    def __init__(self, backbone=None):\n"
                "        super().__init__()\n        self.features = []\n\n        def hook(module, inp, out):\n"
                "            self.features.append(out)\n\n"
                "        self.model = torch.hub.load('pytorch/vision', 'wide_resnet50_2', pretrained=True)\n"
                "        self.model.layer2[-1].register_forward_hook(hook)\n\n    def forward(self, x):\n"
                "        self.features = []\n        with torch.no_grad():\n            self.model(x)\n"
                "        return self.features\n")
        self.write("core.py", core)
        self.write("run.py", "from core import PatchCore\n\n\ndef run(classes, loaders):\n    for cls in classes:\n"
                   "        patch_core = PatchCore()\n        for x in loaders[cls]:\n            patch_core(x)\n")
        self.assertEqual(self.lines_of("LL105"), set())
        self.write("core.py", core.replace("torch.hub.load('pytorch/vision', 'wide_resnet50_2', pretrained=True)",
                                           "backbone"))
        self.assertEqual(self.lines_of("LL105"), {("core.py", 13)})

    def test_a_loss_named_factory_of_meters_through_a_star_import_returns_no_loss(self):
        # `loss_average_meter_setup()` of utils.py, star-imported, hands back fresh meter
        # objects, not a loss: what the meters average was fed `.item()` numbers.
        self.write("utils.py", "class Meter(object):\n    def __init__(self):\n        self.avg = 0\n"
                   "        self.sum = 0\n        self.count = 0\n\n    def update(self, val, n=1):\n"
                   "        self.sum += val * n\n        self.count += n\n        self.avg = self.sum / self.count\n\n\n"
                   "def loss_average_meter_setup():\n    train_loss_meter = Meter()\n"
                   "    val_loss_meters = {'emd': Meter(), 'cd': Meter()}\n    return train_loss_meter, val_loss_meters\n")
        self.write("train.py", "import torch\nfrom utils import *\n\n\ndef train(net, loader, opt, epochs):\n"
                   "    train_loss_meter, val_loss_meters = loss_average_meter_setup()\n    curve, val_curve = [], []\n"
                   "    for epoch in range(epochs):\n        for x, y in loader:\n            opt.zero_grad()\n"
                   "            loss = (net(x.cuda()) - y.cuda()).pow(2).mean()\n            loss.backward()\n"
                   "            opt.step()\n            train_loss_meter.update(loss.item())\n"
                   "        curve.append(train_loss_meter.avg)\n        val_curve.append(val_loss_meters['emd'].avg)\n")
        self.assertEqual(self.lines_of("LL102"), set())

    def test_imported_class_whose_forward_disables_grad_rebound_to_itself_when_moved(self):
        # `gen = gen.cuda().eval()` moves the same object: what it was built as decides, also
        # for an explicit `gen.forward(...)`. Before, the rebinding hid the class.
        self.write("sampler.py", "import torch\nimport torch.nn as nn\n\n\nclass Sampler(nn.Module):\n"
                   "    def __init__(self, net):\n        super().__init__()\n        self.net = net\n\n"
                   "    @torch.no_grad()\n    def forward(self, x):\n        return self.net(x)\n")
        self.write("infer.py", "import torch\nfrom sampler import Sampler\n\n\ndef infer(net, loader):\n"
                   "    gen = Sampler(net)\n    gen = gen.cuda().eval()\n    outs = []\n    for x in loader:\n"
                   "        outs.append(gen.forward(x.cuda()))\n        outs.append(gen(x.cuda()))\n    return outs\n")
        self.assertEqual(self.lines_of("LL101") | self.lines_of("LL102"), set())

    def test_parameter_typed_with_an_imported_class_whose_forward_disables_grad(self):
        # gen.py never constructs the model: it is handed one typed with model.py's class,
        # whose forward runs under inference_mode. Without the decorator it records a graph.
        decorated = ("import torch\nimport torch.nn as nn\n\n\nclass Transformer(nn.Module):\n"
                     "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(8, 8)\n\n"
                     "    @torch.inference_mode()\n    def forward(self, x):\n        return self.fc(x)\n")
        self.write("model.py", decorated)
        self.write("gen.py", "from model import Transformer\n\n\nclass Generator:\n"
                   "    def __init__(self, model: Transformer):\n        self.model = model\n\n"
                   "    def generate(self, x, steps):\n        outs = []\n        for _ in range(steps):\n"
                   "            x = self.model(x.cuda())\n            outs.append(x)\n        return outs\n")
        self.assertEqual(self.lines_of("LL101") | self.lines_of("LL102"), set())
        self.write("model.py", decorated.replace("    @torch.inference_mode()\n", ""))
        self.assertEqual(self.lines_of("LL101"), {("gen.py", 11)})

    def test_an_import_resolves_to_the_module_beside_the_importer(self):
        # Two chapters each with a train.py: only week05's create_model() wraps the model in
        # DDP. A script in week02 imports create_model from the train.py beside it, which wraps
        # nothing: no LL405.
        wrapper = ("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"
                   "def create_model():\n    return DDP(torch.nn.Linear(784, 10).cuda())\n")
        self.write("week05/train.py", wrapper)
        self.write("week02/train.py", "import torch\n\n\ndef create_model():\n    return torch.nn.Linear(784, 10).cuda()\n")
        self.write("week02/run.py", "import torch\nfrom train import create_model\n\nif __name__ == '__main__':\n"
                   "    loader = torch.utils.data.DataLoader(torch.load('mnist.pt'), batch_size=64, shuffle=True)\n"
                   "    model = create_model()\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                   "    for x, y in loader:\n        opt.zero_grad()\n"
                   "        torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).backward()\n        opt.step()\n")
        self.assertEqual(self.lines_of("LL405"), set())
        # With no train.py beside it, the longest module suffix decides.
        os.remove(os.path.join(self.dir, "week02", "train.py"))
        self.assertEqual(self.lines_of("LL405"), {("run.py", 5)})

    def test_loader_built_in_another_module_for_a_ddp_training_loop(self):
        self.write("data.py", self.LOADERS)
        self.write("train.py", self.DDP_TRAIN.format(
            builder="build_loaders", bind="train_loader, val_loader = build_loaders(train_set, val_set)"))
        # The training loader (element 0) is reported where it is built; the validation
        # loader is never iterated by the training loop.
        self.assertEqual(self.lines_of("LL405"), {("data.py", 6)})
        # The message names the training file as the run names it (an absolute root gives an
        # absolute path, never a dotted module made of the root's directories).
        rc, out, err = run(["--no-cache", "--format", "json", os.path.abspath(self.dir)])
        [msg] = [f["message"] for f in json.loads(out)["findings"] if f["rule"] == "LL405"]
        self.assertIn("model in `" + os.path.join(os.path.abspath(self.dir), "train.py") + "`", msg)
        # Alone, data.py says nothing about distributed training.
        rc, out, err = run(["--no-cache", "--format", "json", os.path.join(self.dir, "data.py")])
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL405"], [])

    def test_loader_with_a_distributed_sampler_in_another_module_is_silent(self):
        self.write("data.py", self.LOADERS)
        self.write("train.py", self.DDP_TRAIN.format(
            builder="build_sharded", bind="train_loader = build_sharded(train_set)"))
        self.assertEqual(self.lines_of("LL405"), set())

    def test_loader_builder_called_only_where_the_model_is_not_wrapped(self):
        # The plain builder runs on the branch without DDP, the sharded one on the other.
        self.write("data.py", self.LOADERS)
        self.write("train.py", "import torch\nimport torch.nn.functional as F\n"
                   "from torch.nn.parallel import DistributedDataParallel as DDP\n"
                   "from data import build_loaders, build_sharded\n\n\n"
                   "def main(args, net, train_set, val_set):\n    model = net.cuda()\n"
                   "    if args.local_rank != -1:\n        model = DDP(model, device_ids=[args.local_rank])\n"
                   "    if args.local_rank == -1:\n"
                   "        train_loader, val_loader = build_loaders(train_set, val_set)\n"
                   "    else:\n        train_loader = build_sharded(train_set)\n"
                   "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                   "    for x, y in train_loader:\n        loss = F.cross_entropy(model(x), y)\n"
                   "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n")
        self.assertEqual(self.lines_of("LL405"), set())

    def test_loader_builder_branch_on_an_argument_the_ddp_caller_passes(self):
        # The builder's `if args is None:` branch serves the callers that pass no args; the
        # DDP trainer passes them, so only the other branch's loader feeds its loop.
        self.write("data.py", "from torch.utils.data import DataLoader\n\n\n"
                   "def make_loader(ds, args=None):\n    if args is None:\n"
                   "        loader = DataLoader(ds, batch_size=256, shuffle=True)\n    else:\n"
                   "        loader = DataLoader(ds, batch_size=args.batch_size, shuffle=True)\n    return loader\n")
        train = ("import torch\nimport torch.nn.functional as F\n"
                 "from torch.nn.parallel import DistributedDataParallel as DDP\nfrom data import make_loader\n\n\n"
                 "def main(rank, net, ds, args):\n    model = DDP(net.to(rank), device_ids=[rank])\n"
                 "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                 "    train_loader = make_loader(ds, {passed})\n    for x, y in train_loader:\n"
                 "        loss = F.cross_entropy(model(x), y)\n        optimizer.zero_grad()\n"
                 "        loss.backward()\n        optimizer.step()\n")
        self.write("train.py", train.format(passed="args"))
        self.assertEqual(self.lines_of("LL405"), {("data.py", 8)})
        self.write("train.py", train.format(passed="args=args"))
        self.assertEqual(self.lines_of("LL405"), {("data.py", 8)})
        # Passing None, or nothing, takes the first branch; a splat may pass anything.
        self.write("train.py", train.format(passed="None"))
        self.assertEqual(self.lines_of("LL405"), {("data.py", 6)})
        self.write("train.py", train.format(passed="*rest").replace("ds, args)", "ds, args, *rest)"))
        self.assertEqual(self.lines_of("LL405"), {("data.py", 6), ("data.py", 8)})

    def test_loader_factory_choosing_a_sampler_by_configuration_is_silent(self):
        # data.py builds a batch-sampled loader when distributed and a plain one otherwise;
        # train.py wraps in DDP only when a process group exists and asks for the matching
        # loader. The plain loader is the single-process path.
        self.write("data.py", "from torch.utils.data import BatchSampler, DataLoader, DistributedSampler\n\n\n"
                   "def get_loader(ds, bs, distributed=True):\n    if distributed:\n"
                   "        sampler = BatchSampler(DistributedSampler(ds), bs, drop_last=True)\n"
                   "        dl = DataLoader(ds, batch_sampler=sampler)\n    else:\n"
                   "        dl = DataLoader(ds, batch_size=bs, shuffle=True)\n    return dl\n")
        self.write("train.py", "import torch\nimport torch.distributed as dist\nimport torch.nn.functional as F\n"
                   "from torch.nn.parallel import DistributedDataParallel as DDP\nfrom data import get_loader\n\n\n"
                   "def main(rank, net, ds):\n    model = DDP(net.to(rank), device_ids=[rank])\n"
                   "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                   "    dl = get_loader(ds, 16, distributed=dist.is_initialized())\n    for x, y in dl:\n"
                   "        loss = F.cross_entropy(model(x), y)\n        optimizer.zero_grad()\n"
                   "        loss.backward()\n        optimizer.step()\n")
        self.assertEqual(self.lines_of("LL405"), set())
        # Without the sampled branch, the same factory feeds every rank the whole dataset.
        self.write("data.py", "from torch.utils.data import DataLoader\n\n\n"
                   "def get_loader(ds, bs, distributed=True):\n"
                   "    dl = DataLoader(ds, batch_size=bs, shuffle=True)\n    return dl\n")
        self.assertEqual(self.lines_of("LL405"), {("data.py", 5)})

    def test_dataset_class_of_another_module_that_shards_by_rank_is_silent(self):
        # The dataset class lives in another project module and keeps only this rank's items
        # (an IterableDataset that reads the rank): the loader needs no sampler.
        self.write("streams.py", "import torch.distributed as dist\nfrom torch.utils.data import IterableDataset\n\n\n"
                   "class Stream(IterableDataset):\n    def __init__(self, items):\n        self.items = items\n\n"
                   "    def __iter__(self):\n        rank, world = dist.get_rank(), dist.get_world_size()\n"
                   "        for i, x in enumerate(self.items):\n            if i % world == rank:\n"
                   "                yield x\n")
        train = ("import torch\nimport torch.nn.functional as F\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                 "from torch.utils.data import DataLoader\nfrom streams import Stream\n\n\n"
                 "def main(rank, net, items):\n    model = DDP(net.to(rank), device_ids=[rank])\n"
                 "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                 "    loader = DataLoader(Stream(items), batch_size=8)\n    for x, y in loader:\n"
                 "        loss = F.cross_entropy(model(x), y)\n        opt.zero_grad()\n        loss.backward()\n"
                 "        opt.step()\n")
        self.write("train.py", train)
        self.assertEqual(self.lines_of("LL405"), set())
        # A map-style class of that module that does not shard keeps the finding.
        self.write("streams.py", "from torch.utils.data import Dataset\n\n\nclass Stream(Dataset):\n"
                   "    def __init__(self, items):\n        self.items = items\n\n"
                   "    def __len__(self):\n        return len(self.items)\n\n"
                   "    def __getitem__(self, i):\n        return self.items[i]\n")
        self.assertEqual(self.lines_of("LL405"), {("train.py", 11)})

    def test_sharding_dataset_class_reexported_by_a_package_is_silent(self):
        # `from pkg.datasets import Stream`, where pkg/datasets/__init__.py re-exports the class
        # by name from pkg/datasets/streams.py (an IterableDataset): the loader needs no sampler.
        self.write("pkg/__init__.py", "")
        self.write("pkg/datasets/__init__.py", "from .streams import Stream\n")
        self.write("pkg/datasets/streams.py", "from torch.utils.data import IterableDataset\n\n\n"
                   "class Stream(IterableDataset):\n    def __init__(self, items):\n        self.items = items\n\n"
                   "    def __iter__(self):\n        yield from self.items\n")
        train = ("import torch\nimport torch.nn.functional as F\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                 "from torch.utils.data import DataLoader\nfrom pkg.datasets import Stream\n\n\n"
                 "def main(rank, net, items):\n    model = DDP(net.to(rank), device_ids=[rank])\n"
                 "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                 "    loader = DataLoader(Stream(items), batch_size=8)\n    for x, y in loader:\n"
                 "        loss = F.cross_entropy(model(x), y)\n        opt.zero_grad()\n        loss.backward()\n"
                 "        opt.step()\n")
        self.write("train.py", train)
        self.assertEqual(self.lines_of("LL405"), set())
        # The package re-exports another module's class under that name: the finding stays.
        self.write("pkg/datasets/__init__.py", "from .frames import Stream\n")
        self.write("pkg/datasets/frames.py", "from torch.utils.data import Dataset\n\n\nclass Stream(Dataset):\n"
                   "    def __init__(self, items):\n        self.items = items\n\n"
                   "    def __len__(self):\n        return len(self.items)\n\n"
                   "    def __getitem__(self, i):\n        return self.items[i]\n")
        self.assertEqual(self.lines_of("LL405"), {("train.py", 11)})

    def test_synthetic_dataset_class_of_another_module_is_weak(self):
        # The dataset class lives in another module and makes its items on the fly, ignoring
        # the index (a benchmark's toy data): the missing sampler is weak evidence there.
        self.write("toy.py", "import torch\nfrom torch.utils.data import Dataset\n\n\nclass Toy(Dataset):\n"
                   "    def __len__(self):\n        return 1000\n\n"
                   "    def __getitem__(self, i):\n        return torch.randn(16), torch.randint(0, 4, ())\n")
        train = ("import torch\nimport torch.nn.functional as F\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                 "from torch.utils.data import DataLoader\nfrom toy import Toy\n\n\n"
                 "def main(rank, net):\n    model = DDP(net.to(rank), device_ids=[rank])\n"
                 "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                 "    loader = DataLoader(Toy(), batch_size=8)\n    for x, y in loader:\n"
                 "        loss = F.cross_entropy(model(x), y)\n        opt.zero_grad()\n        loss.backward()\n"
                 "        opt.step()\n")
        self.write("train.py", train)
        rc, out, err = run(["--no-cache", "--format", "json", self.dir])
        found = [f for f in json.loads(out)["findings"] if f["rule"] == "LL405"]
        self.assertEqual([(f["line"], f.get("low_confidence")) for f in found], [(11, True)])

    def test_builder_parameter_is_not_a_module_level_name(self):
        # The builder's `dataset` parameter shadows the module's `dataset = Stream()` of its
        # self-check: what the parameter holds comes from the caller, not from that binding.
        self.write("data.py", "import torch.distributed as dist\nfrom torch.utils.data import DataLoader, IterableDataset\n\n\n"
                   "class Stream(IterableDataset):\n    def __iter__(self):\n"
                   "        yield from range(dist.get_rank(), 100, dist.get_world_size())\n\n\n"
                   "def get_loader(dataset):\n    loader = DataLoader(dataset, batch_size=8, shuffle=True)\n"
                   "    return loader\n\n\nif __name__ == \"__main__\":\n    dataset = Stream()\n")
        self.write("train.py", self.DDP_TRAIN.format(builder="get_loader", bind="train_loader = get_loader(train_set)"))
        self.assertEqual(self.lines_of("LL405"), {("data.py", 11)})

    def test_model_wrapped_in_another_module(self):
        self.write("dist_utils.py", "import torch\nfrom torch.nn.parallel import DistributedDataParallel\n\n\n"
                   "def wrap(net, rank):\n    model = DistributedDataParallel(net.to(rank), device_ids=[rank])\n"
                   "    return model\n")
        self.write("train.py", "import torch\nimport torch.nn.functional as F\nfrom torch.utils.data import DataLoader\n"
                   "from dist_utils import wrap\n\n\ndef main(rank, net, ds):\n    model = wrap(net, rank)\n"
                   "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                   "    loader = DataLoader(ds, batch_size=8, shuffle=True)\n    for x, y in loader:\n"
                   "        loss = F.cross_entropy(model(x), y)\n        opt.zero_grad()\n        loss.backward()\n"
                   "        opt.step()\n")
        self.assertEqual(self.lines_of("LL405"), {("train.py", 10)})
        rc, out, err = run(["--no-cache", "--format", "json", os.path.join(self.dir, "train.py")])
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL405"], [])

    def test_manual_data_parallel_training_of_a_model_class_from_another_module(self):
        # LL203: the model is a class another module of the run defines, built in the training
        # function: nothing elsewhere wrapped it, and no all_reduce runs before the step.
        self.write("models.py", "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
                   "        super().__init__()\n        self.fc = nn.Linear(10, 2)\n\n"
                   "    def forward(self, x):\n        return self.fc(x)\n")
        train = ("import torch\nimport torch.distributed as dist\nimport torch.nn.functional as F\n"
                 "from models import Net\n\n\ndef run(rank, world, loader):\n"
                 "    dist.init_process_group('gloo', rank=rank, world_size=world)\n"
                 "    model = Net().cuda(rank)\nWRAP"
                 "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                 "    for x, y in loader:\n        optimizer.zero_grad()\n"
                 "        loss = F.cross_entropy(model(x.cuda(rank)), y.cuda(rank))\n"
                 "        loss.backward()\n        optimizer.step()\n")
        self.write("train.py", train.replace("WRAP", ""))
        rc, out, err = run(["--format", "json", "--no-cache", self.dir])
        self.assertEqual([(os.path.basename(f["path"]), f["line"]) for f in json.loads(out)["findings"]
                          if f["rule"] == "LL203"], [("train.py", 15)], out)
        self.write("train.py", train.replace(
            "WRAP", "    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])\n"))
        rc, out, err = run(["--format", "json", "--no-cache", self.dir])
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL203"], [])
        # The loop trains what another module's helper built from it (which may be a DDP wrap).
        self.write("dist_utils.py", "from torch.nn.parallel import DistributedDataParallel\n\n\n"
                   "def wrap_model(model, rank):\n    return DistributedDataParallel(model, device_ids=[rank])\n")
        self.write("train.py", train.replace("WRAP", "    ddp = wrap_model(model, rank)\n")
                   .replace("model(x.cuda(rank))", "ddp(x.cuda(rank))")
                   .replace("from models import Net\n", "from models import Net\nfrom dist_utils import wrap_model\n"))
        rc, out, err = run(["--format", "json", "--no-cache", self.dir])
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL203"], [], out)
        # A class of a module that synchronises ranks itself (a method all-reduces the gradients,
        # or another class of that module communicates in its forward).
        os.remove(os.path.join(self.dir, "dist_utils.py"))
        self.write("train.py", train.replace("WRAP", ""))
        self.write("models.py", "import torch.distributed as dist\nimport torch.nn as nn\n\n\n"
                   "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                   "        self.fc = nn.Linear(10, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\n"
                   "    def sync(self):\n        for p in self.parameters():\n            dist.all_reduce(p.grad)\n")
        rc, out, err = run(["--format", "json", "--no-cache", self.dir])
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL203"], [], out)
        # A gradient exchange of another module, built from the model, that the loop runs between
        # backward() and step() (`dgc = Compressor(model=model)`; `dgc.exchange(it)`).
        self.write("models.py", "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
                   "        super().__init__()\n        self.fc = nn.Linear(10, 2)\n\n"
                   "    def forward(self, x):\n        return self.fc(x)\n")
        self.write("compress.py", "import torch.distributed as dist\nimport torch.nn as nn\n\n\n"
                   "class Compressor(nn.Module):\n    def __init__(self, model):\n        super().__init__()\n"
                   "        self.model = model\n\n    def exchange(self, it):\n"
                   "        for p in self.model.parameters():\n            dist.all_reduce(p.grad)\n")
        dgc = (train.replace("WRAP", "    dgc = Compressor(model=model)\n")
               .replace("from models import Net\n", "from models import Net\nfrom compress import Compressor\n")
               .replace("        loss.backward()\n", "        loss.backward()\n        dgc.exchange(0)\n"))
        self.write("train.py", dgc)
        rc, out, err = run(["--format", "json", "--no-cache", self.dir])
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL203"], [], out)
        # The same helper of a module that does not communicate synchronises nothing.
        self.write("compress.py", "import torch.nn as nn\n\n\n"
                   "class Compressor(nn.Module):\n    def __init__(self, model):\n        super().__init__()\n"
                   "        self.model = model\n\n    def exchange(self, it):\n"
                   "        for p in self.model.parameters():\n            p.grad.mul_(0.5)\n")
        rc, out, err = run(["--format", "json", "--no-cache", self.dir])
        self.assertEqual(len([f for f in json.loads(out)["findings"] if f["rule"] == "LL203"]), 1, out)
        # Pipeline stages exchanging activations and gradients point to point, through a function
        # of another module (`dist.batch_isend_irecv`): each rank holds other layers, nothing to
        # average.
        os.remove(os.path.join(self.dir, "compress.py"))
        self.write("p2p.py", "import torch.distributed as dist\n\n\ndef communicate(tensor, peer, send):\n"
                   "    op = dist.P2POp(dist.isend if send else dist.irecv, tensor, peer)\n"
                   "    [r.wait() for r in dist.batch_isend_irecv([op])]\n")
        self.write("train.py", train.replace("WRAP", "")
                   .replace("from models import Net\n", "from models import Net\nfrom p2p import communicate\n")
                   .replace("        loss.backward()\n", "        loss.backward()\n        communicate(loss, rank + 1, True)\n"))
        rc, out, err = run(["--format", "json", "--no-cache", self.dir])
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL203"], [], out)

    def test_extensionless_python_script_is_python(self):
        script = self.write("bin/evaluate", "#!/usr/bin/env python3\n" + LEAKY)
        other = self.write("bin/tool", "#!/bin/sh\necho hi\n")
        rc, out, err = run(["--no-cache", script])
        self.assertEqual(rc, 1, out + err)
        self.assertIn("[LL101]", out)
        self.assertNotIn("leaklint-cpp", out + err)


class CpuOnlyProject(Tmp):
    """The impact policy's CPU-only test is decided per program, not per file: an evaluation
    helper in a module of definitions is weak when no file of the project places a tensor on
    a GPU, and keeps full strength when one does, or when no program of the project shows
    where it runs (a library)."""
    MODEL = ("import torch\n\n\ndef evaluate(model, batches):\n    correct = 0\n    for x, y in batches:\n"
             "        correct += (model(x).argmax(1) == y).sum().item()\n    return correct\n")
    TRAIN = ("import torch\nfrom model import evaluate\n\nmodel = torch.nn.Linear(4, 2)\n"
             "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
             "batches = [(torch.randn(8, 4), torch.randint(0, 2, (8,))) for _ in range(10)]\n"
             "for x, y in batches:\n    opt.zero_grad()\n"
             "    torch.nn.functional.cross_entropy(model(x), y).backward()\n    opt.step()\n"
             "print(evaluate(model, batches))\n")

    def ll101(self, *extra):
        rc, out, err = run(["--format", "json", "--show-low-confidence", *extra, self.dir])
        return [(os.path.relpath(f["path"], self.dir), f["severity"],
                 "nothing in this project places a tensor on a GPU" in f["message"])
                for f in json.loads(out)["findings"] if f["rule"] == "LL101"]

    # A class of the project whose method runs `model.py`'s evaluation.
    TRAINER = ("import torch\nfrom model import evaluate\n\n\nclass Trainer:\n    def __init__(self):\n"
               "        self.model = torch.nn.Linear(4, 2)\n\n    def score(self, batches):\n"
               "        return evaluate(self.model, batches)\n")

    def test_a_launcher_without_torch_of_its_own_is_a_program(self):
        # `main.py` imports no torch: it runs the trainer of a module that does. It is the
        # project's program, and nothing places a tensor on a GPU.
        self.write("model.py", self.MODEL)
        self.write("trainer.py", self.TRAINER)
        self.assertEqual(self.ll101("--no-cache"), [("model.py", "warning", False)])   # a library alone
        self.write("main.py", "from trainer import Trainer\n\nif __name__ == '__main__':\n"
                   "    print(Trainer().score([]))\n")
        for extra in (("--no-cache",), (), ()):                                       # uncached, cold, warm
            self.assertEqual(self.ll101(*extra), [("model.py", "note", True)])
        # A script of the tree that reaches no torch is not one of the library's programs.
        self.write("main.py", "import json\n\nif __name__ == '__main__':\n    print(json.dumps({}))\n")
        self.assertEqual(self.ll101("--no-cache"), [("model.py", "warning", False)])

    def test_a_script_that_wires_imported_objects_under_a_top_level_if_is_a_program(self):
        # A research script that defines nothing: under `if 1:` it builds the project's objects
        # and runs them (`setting.run(...)`), importing torch only to seed it. It is the
        # project's program, and nothing places a tensor on a GPU.
        self.write("model.py", self.MODEL)
        self.write("trainer.py", self.TRAINER)
        self.write("script_run.py", "import torch\nfrom trainer import Trainer\n\ntorch.manual_seed(1)\n"
                   "if 1:\n    trainer_obj = Trainer()\n    print(trainer_obj.score([]))\n")
        for extra in (("--no-cache",), (), ()):                                       # uncached, cold, warm
            self.assertEqual(self.ll101(*extra), [("model.py", "note", True)])
        # A module that defines a function is a module of definitions, whatever its top level calls.
        self.write("script_run.py", "import torch\nfrom trainer import Trainer\n\n\ndef helper():\n    return 1\n\n\n"
                   "trainer_obj = Trainer()\nprint(trainer_obj.score([]))\n")
        self.assertEqual(self.ll101("--no-cache"), [("model.py", "warning", False)])

    def test_a_helper_of_a_cpu_only_program_is_weak(self):
        self.write("model.py", self.MODEL)
        self.assertEqual(self.ll101("--no-cache"), [("model.py", "warning", False)])   # a library alone
        self.write("train.py", self.TRAIN)
        for extra in (("--no-cache",), (), ()):                                       # uncached, cold, warm
            self.assertEqual(self.ll101(*extra), [("model.py", "note", True)])
        p = subprocess.run([BIN, "--format", "json", self.dir], capture_output=True, text=True, timeout=120)
        self.assertEqual(json.loads(p.stdout)["findings"], [])                        # hidden by default
        self.assertEqual(json.loads(p.stdout)["summary"]["low_confidence_hidden"], 1)
        # --fix acts on what is shown: the weak finding's fix is left alone.
        subprocess.run([BIN, "--fix", "--unsafe-fixes", self.dir], capture_output=True, text=True, timeout=120)
        with open(os.path.join(self.dir, "model.py")) as f:
            self.assertEqual(f.read(), self.MODEL)
        # One file that places a tensor on a GPU makes the whole project's claims strong (here
        # one that may run `evaluate` on a GPU).
        self.write("place.py", "import torch\nfrom model import evaluate\n\n\ndef place(model):\n    return model.cuda()\n")
        self.assertEqual(self.ll101(), [("model.py", "warning", False)])

    def gpu_train(self):  # a program on a GPU that imports none of the others
        return self.TRAIN.replace("Linear(4, 2)", "Linear(4, 2).cuda()").replace("from model import evaluate\n", "")

    def placements(self, *extra):
        rc, out, err = run(["--format", "json", "--show-low-confidence", "--no-cache", *extra, self.dir])
        return sorted((os.path.relpath(f["path"], self.dir), f["severity"],
                       "the programs that import this module" in f["message"])
                      for f in json.loads(out)["findings"] if f["rule"] == "LL101")

    def test_a_module_only_cpu_only_programs_import_is_weak(self):
        # Two chapters of a course: the first trains on the CPU, the second on a GPU. The
        # project places tensors on a GPU, but the first chapter's helper only runs in the first.
        self.write("ch1/model.py", self.MODEL)
        self.write("ch1/train.py", self.TRAIN)
        self.write("ch2/model.py", self.MODEL)
        self.write("ch2/train.py", self.TRAIN.replace("Linear(4, 2)", "Linear(4, 2).cuda()"))
        want = [("ch1/model.py", "note", True), ("ch2/model.py", "warning", False)]
        self.assertEqual(self.placements(), want)
        rc, out, err = run(["--format", "json", "--show-low-confidence", self.dir])   # cold cache
        rc, out, err = run(["--format", "json", "--show-low-confidence", self.dir])   # warm cache
        self.assertEqual(sorted((os.path.relpath(f["path"], self.dir), f["severity"]) for f in json.loads(out)["findings"]
                                if f["rule"] == "LL101"), [w[:2] for w in want])
        msg = [f["message"] for f in json.loads(out)["findings"] if f["path"].endswith("ch1/model.py")][0]
        self.assertIn("(`" + os.path.join(self.dir, "ch1/train.py") + "`) never place a tensor on a GPU", msg)
        # Single files named: other importers may be outside the run.
        rc, out, err = run(["--format", "json", "--show-low-confidence", "--no-cache",
                            os.path.join(self.dir, "ch1/model.py"), os.path.join(self.dir, "ch1/train.py"),
                            os.path.join(self.dir, "ch2/train.py")])
        self.assertEqual([f["severity"] for f in json.loads(out)["findings"] if f["rule"] == "LL101"], ["warning"])

    def test_gpu_evidence_in_what_a_program_imports_places_its_helpers_on_the_gpu(self):
        self.write("ch1/model.py", self.MODEL)
        self.write("ch1/train.py", "from device import place\n" + self.TRAIN.replace("opt =", "model = place(model)\nopt ="))
        self.write("ch1/device.py", "import torch\n\n\ndef place(m):\n    return m.cuda()\n")
        self.write("ch2/train.py", self.gpu_train())
        self.assertEqual(self.placements(), [("ch1/model.py", "warning", False)])
        # (and through a module that module imports)
        self.write("ch1/train.py", "from helpers import place\n" + self.TRAIN.replace("opt =", "model = place(model)\nopt ="))
        self.write("ch1/helpers.py", "from device import place\n")
        self.write("ch2/train.py", self.gpu_train())
        self.assertEqual(self.placements(), [("ch1/model.py", "warning", False)])

    def test_a_device_the_module_is_handed_is_the_callers_choice(self):
        # A trainer that moves batches to the device its constructor is handed (`self.device =
        # device`): where that points is the program's choice. A program that hands it the CPU
        # runs it on the CPU; one that hands it CUDA, or a library with no program, keeps it.
        trainer = ("import torch\n\n\nclass Trainer:\n    def __init__(self, model, device='cpu'):\n"
                   "        self.model = model\n        self.device = device\n\n"
                   "    def evaluate(self, batches):\n        self.model.eval()\n        correct = 0\n"
                   "        for x, y in batches:\n            x = x.to(self.device)\n"
                   "            correct += (self.model(x).argmax(1) == y).sum().item()\n        return correct\n\n"
                   "\ndef score(model, batches, device):\n    model.eval()\n    total = 0\n    for x, y in batches:\n"
                   "        total += (model(x.to(device)).argmax(1) == y).sum().item()\n    return total\n")
        self.write("ch1/trainer.py", trainer)
        self.write("ch2/train.py", self.gpu_train())  # the project places tensors on a GPU elsewhere
        self.write("ch1/train.py", "import torch\nfrom trainer import Trainer, score\n\n"
                   "model = torch.nn.Linear(4, 2).to('cpu')\nbatches = [(torch.randn(8, 4), torch.zeros(8))]\n"
                   "if __name__ == '__main__':\n    print(Trainer(model, device='cpu').evaluate(batches), score(model, batches, 'cpu'))\n")
        self.assertEqual(self.placements(), [("ch1/trainer.py", "note", True)] * 2)
        self.write("ch1/train.py", "import torch\nfrom trainer import Trainer, score\n\n"
                   "model = torch.nn.Linear(4, 2).to('cuda')\nbatches = [(torch.randn(8, 4), torch.zeros(8))]\n"
                   "if __name__ == '__main__':\n    print(Trainer(model, device='cuda').evaluate(batches), score(model, batches, 'cuda'))\n")
        self.assertEqual(self.placements(), [("ch1/trainer.py", "warning", False)] * 2)
        # A device the method picks itself, not one it is handed, is evidence of its own.
        self.write("ch1/train.py", "import torch\nfrom trainer import Trainer, score\n\n"
                   "model = torch.nn.Linear(4, 2).to('cpu')\nbatches = [(torch.randn(8, 4), torch.zeros(8))]\n"
                   "if __name__ == '__main__':\n    print(Trainer(model, device='cpu').evaluate(batches), score(model, batches, 'cpu'))\n")
        self.write("ch1/trainer.py", trainer.replace("        self.device = device\n", "        self.device = pick_device()\n"))
        self.assertEqual(self.placements(), [("ch1/trainer.py", "warning", False)] * 2)

    def test_a_module_another_entry_point_reaches_keeps_its_severity(self):
        self.write("ch1/model.py", self.MODEL)
        self.write("ch1/train.py", self.TRAIN)
        self.write("ch2/train.py", self.gpu_train())
        self.assertEqual(self.placements(), [("ch1/model.py", "note", True)])
        # A module of definitions nothing imports (another project may): it reaches model.py.
        self.write("ch1/api.py", "from model import evaluate\n\n\ndef score(m, b):\n    return evaluate(m, b)\n")
        self.assertEqual(self.placements(), [("ch1/model.py", "warning", False)])

    def test_a_package_reached_through_its_init_and_installed_or_not(self):
        self.write("pkg/__init__.py", "")
        self.write("pkg/model.py", self.MODEL)
        self.write("examples/train.py", self.TRAIN.replace("from model import", "from pkg.model import"))
        self.write("gpu/train.py", self.gpu_train())
        self.assertEqual(self.placements(), [("pkg/model.py", "note", True)])
        # The package's __init__.py runs on import: what it imports, its importers reach.
        self.write("pkg/__init__.py", "from .device import place\n")
        self.write("pkg/device.py", "import torch\n\n\ndef place(m):\n    return m.cuda()\n")
        self.assertEqual(self.placements(), [("pkg/model.py", "warning", False)])
        # An installable package is another project's library: its users may use a GPU.
        self.write("pkg/__init__.py", "")
        self.write("pyproject.toml", "[project]\nname = 'pkg'\n")
        os.makedirs(os.path.join(self.dir, ".git"), exist_ok=True)
        self.assertEqual(self.placements(), [("pkg/model.py", "warning", False)])

    def test_a_program_whose_imports_place_tensors_on_a_gpu_is_no_cpu_only_program(self):
        # The script itself names no device; the module it imports moves the model to CUDA.
        self.write("ch1/place.py", "import torch\n\n\ndef place(m):\n    return m.cuda()\n")
        program = ("import torch\nimport torchvision\n{imp}\nmodel = {build}\nmodel.eval()\n"
                   "for x in [torch.randn(8, 3, 224, 224) for _ in range(10)]:\n    print(model(x).argmax(1))\n")
        self.write("ch1/evaluate.py", program.format(imp="from place import place\n",
                                                     build="place(torchvision.models.resnet18())"))
        self.write("ch2/cpu.py", program.format(imp="", build="torchvision.models.resnet18()"))
        for extra in (("--no-cache",), (), ()):
            rc, out, err = run(["--format", "json", "--show-low-confidence", *extra, self.dir])
            self.assertEqual(sorted((os.path.relpath(f["path"], self.dir), f["severity"],
                                     "nothing in this program places a tensor on a GPU" in f["message"])
                                    for f in json.loads(out)["findings"] if f["rule"] == "LL101"),
                             [("ch1/evaluate.py", "warning", False), ("ch2/cpu.py", "note", True)])

    def test_a_file_that_could_not_be_read_could_hold_gpu_evidence(self):
        self.write("model.py", self.MODEL)
        self.write("train.py", self.TRAIN)
        self.write("big.py", "import torch\nx = 'cuda'\n" + "# padding\n" * 200)
        self.assertEqual(self.ll101("--no-cache", "--max-file-size", "1"), [("model.py", "warning", False)])


class UncalledCode(Tmp):
    """The impact policy's code nothing calls: in a run over whole directories, a method, or a
    function of a program, whose name no file of the run reads is weak (nothing runs it as
    written). A module-level function of a module that is not a program keeps its severity
    (a library's interface, a web framework's handler), and so does everything when the run
    names single files (pre-commit, editors): their callers may be elsewhere."""
    TRAINER = ("import torch\n\n\nclass Trainer:\n    def __init__(self, model):\n        self.model = model.cuda()\n\n"
               "    def test(self, loader):\n        self.model.eval()\n        outs = []\n        for x in loader:\n"
               "            outs.append(self.model(x.cuda()).argmax(1))\n        return outs\n\n"
               "    def validate(self, loader):\n        self.model.eval()\n        outs = []\n        for x in loader:\n"
               "            outs.append(self.model(x.cuda()).argmax(1))\n        return outs\n")
    MAIN = ("import torch\nfrom trainer import Trainer\n\nif __name__ == '__main__':\n"
            "    t = Trainer(torch.nn.Linear(2, 2))\n    print(t.validate([torch.zeros(1, 2)]))\n")
    LIB = ("import torch\n\n\ndef predict(model, loader):\n    model.eval()\n"
           "    return [model(x.cuda()).argmax(1) for x in loader]\n")

    def ll101(self, *paths):
        rc, out, err = run(["--format", "json", "--show-low-confidence", "--no-cache", *paths])
        return sorted((os.path.basename(f["path"]), f["line"], f["severity"],
                       "nothing in the scanned tree calls" in f["message"])
                      for f in json.loads(out)["findings"] if f["rule"] == "LL101")

    WORKER = ("import torch\n\n\nclass Worker{base}:\n    def __init__(self, model):\n        self.model = model.cuda()\n\n"
              "    def _evaluate_model(self, loader):\n        self.model.eval()\n        outs = []\n        for x in loader:\n"
              "            outs.append(self.model(x.cuda()).argmax(1))\n        return outs\n")
    EVALUATOR = ("import torch\n\n\nclass {name}{base}:\n    def run(self, loader):\n"
                 "        return self._evaluate_model(loader)\n\n"
                 "    def _evaluate_model(self, loader):\n        return [x.sum() for x in loader]\n")

    def test_a_method_read_only_through_self_of_an_unrelated_class_is_uncalled(self):
        # `self._evaluate_model(...)` in the evaluator's class reaches its own method, not the
        # worker's namesake, which nothing calls.
        self.write("worker.py", self.WORKER.format(base=""))
        self.write("evaluator.py", self.EVALUATOR.format(name="Evaluator", base=""))
        self.write("main.py", "import torch\nfrom worker import Worker\nfrom evaluator import Evaluator\n\n"
                   "if __name__ == '__main__':\n    Worker(torch.nn.Linear(2, 2))\n    Evaluator().run([])\n")
        self.assertEqual(self.ll101(self.dir), [("worker.py", 12, "note", True)])
        # A base of the worker whose method calls it on `self`: the worker's own is what runs.
        self.write("evaluator.py", self.EVALUATOR.format(name="Evaluator", base=""))
        self.write("worker.py", "from evaluator import Evaluator\n" + self.WORKER.format(base="(Evaluator)"))
        self.assertEqual(self.ll101(self.dir), [("worker.py", 13, "warning", False)])
        # Mixins: a sibling base's method calls it on `self`, related through a shared subclass.
        self.write("evaluator.py", self.EVALUATOR.format(name="Runner", base=""))
        self.write("worker.py", self.WORKER.format(base=""))
        self.write("main.py", "import torch\nfrom worker import Worker\nfrom evaluator import Runner\n\n\n"
                   "class Job(Runner, Worker):\n    pass\n\n\nif __name__ == '__main__':\n    Job(torch.nn.Linear(2, 2)).run([])\n")
        self.assertEqual(self.ll101(self.dir), [("worker.py", 12, "warning", False)])
        # Siblings: the worker and the evaluator derive from one base the run defines. The
        # evaluator's read reaches its own method and the base's, not the worker's.
        self.write("base.py", "class NNTrainer(object):\n    def __init__(self):\n        self.steps = 0\n")
        self.write("evaluator.py", "from base import NNTrainer\n" + self.EVALUATOR.format(name="Evaluator", base="(NNTrainer)"))
        self.write("worker.py", "from base import NNTrainer\n" + self.WORKER.format(base="(NNTrainer)"))
        self.write("main.py", "import torch\nfrom worker import Worker\nfrom evaluator import Evaluator\n\n"
                   "if __name__ == '__main__':\n    Worker(torch.nn.Linear(2, 2))\n    Evaluator().run([])\n")
        self.assertEqual(self.ll101(self.dir), [("worker.py", 13, "note", True)])
        # A base the run does not define (a library's `Thread`, whose `start()` runs `run()`) may
        # call any method by dispatch: the worker's method is not code nothing calls.
        self.write("worker.py", "from threading import Thread\n" + self.WORKER.format(base="(Thread)"))
        self.assertEqual(self.ll101(self.dir), [("worker.py", 13, "warning", False)])
        os.remove(os.path.join(self.dir, "base.py"))

    def test_a_method_nothing_calls_is_weak_in_a_whole_tree_run(self):
        self.write("trainer.py", self.TRAINER)
        self.write("main.py", self.MAIN)
        self.write("lib.py", self.LIB)
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "warning", False), ("trainer.py", 12, "note", True),
                                                ("trainer.py", 19, "warning", False)])
        # Single files named: their callers may be outside what was named.
        self.assertEqual(self.ll101(os.path.join(self.dir, "trainer.py")),
                         [("trainer.py", 12, "warning", False), ("trainer.py", 19, "warning", False)])
        # A name read anywhere (a string handed to getattr) is a caller.
        self.write("main.py", self.MAIN + "    getattr(t, 'test')([])\n")
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "warning", False), ("trainer.py", 12, "warning", False),
                                                ("trainer.py", 19, "warning", False)])
        # Cached runs decide the same (the names a file reads travel in its cache entry).
        self.write("main.py", self.MAIN)
        for _ in range(2):
            rc, out, err = run(["--format", "json", "--show-low-confidence", self.dir])
            weak = [f["line"] for f in json.loads(out)["findings"] if "nothing in the scanned tree calls" in f["message"]]
            self.assertEqual(weak, [12])

    def test_names_are_read_as_python_scopes_them(self):
        # A program with two copies of an evaluation function: its entry imports one of them by
        # name, so the other copy is code nothing calls; a parameter named like a function of
        # the program is a local, not a read of that function.
        evaluate = ("import torch\n\n\ndef evaluate(model, loader, report=False):\n    model.eval()\n"
                    "    outs = [model(x.cuda()).argmax(1) for x in loader]\n    if report:\n        print(len(outs))\n"
                    "    return outs\n\n\ndef report(model, loader):\n    model.eval()\n"
                    "    return [model(x.cuda()).sum() for x in loader]\n")
        self.write("old_tools.py", evaluate)
        self.write("tools.py", evaluate)
        # (Both modules are helpers of the program, which imports them.)
        self.write("main.py", "import torch\nimport old_tools\nfrom tools import evaluate\n\nif __name__ == '__main__':\n"
                   "    print(evaluate(torch.nn.Linear(2, 2).cuda(), [torch.zeros(1, 2)]), old_tools.__name__)\n")
        found = self.ll101(self.dir)
        self.assertEqual([(p, l, uncalled) for p, l, sev, uncalled in found],
                         [("old_tools.py", 6, True), ("old_tools.py", 14, True),
                          ("tools.py", 6, False), ("tools.py", 14, True)], found)
        # Read through the module (`old_tools.evaluate(...)`): called.
        self.write("main.py", "import torch\nimport old_tools\nfrom tools import evaluate\n\nif __name__ == '__main__':\n"
                   "    print(evaluate(torch.nn.Linear(2, 2).cuda(), [torch.zeros(1, 2)]))\n"
                   "    print(old_tools.evaluate(torch.nn.Linear(2, 2).cuda(), [torch.zeros(1, 2)]))\n")
        self.assertEqual([(p, l, uncalled) for p, l, sev, uncalled in self.ll101(self.dir)],
                         [("old_tools.py", 6, False), ("old_tools.py", 14, True),
                          ("tools.py", 6, False), ("tools.py", 14, True)])

    def caller_case(self, name, text):
        # trainer.py's test() (line 12) is called only from `name`; validate() from main.py.
        self.write("trainer.py", self.TRAINER)
        self.write("main.py", self.MAIN)
        self.write(name, text)
        return [f for f in self.ll101(self.dir) if f[0] == "trainer.py"]

    def test_a_caller_without_torch_of_its_own_is_a_caller(self):
        # A launcher that imports the trainer but not torch reaches no rule, yet it calls test().
        self.assertEqual(self.caller_case("launch.py", "from trainer import Trainer\nTrainer(None).test([])\n"),
                         [("trainer.py", 12, "warning", False), ("trainer.py", 19, "warning", False)])

    def test_a_file_that_could_not_be_read_may_be_the_caller(self):
        # Undecodable: not analysed, so what it calls is unknown, and nothing is judged uncalled.
        found = self.caller_case("launch.py", "")
        with open(os.path.join(self.dir, "launch.py"), "wb") as fh:
            fh.write(b"import torch\n# \xff\nfrom trainer import Trainer\nTrainer(None).test([])\n")
        self.assertEqual([f for f in self.ll101(self.dir) if f[0] == "trainer.py"],
                         [("trainer.py", 12, "warning", False), ("trainer.py", 19, "warning", False)])
        self.assertEqual(found, [("trainer.py", 12, "note", True), ("trainer.py", 19, "warning", False)])

    def test_names_dispatched_at_run_time_are_callers(self):
        # `getattr(self, mode)()` reaches every method of the class; `fire.Fire()` every function of
        # the file; `globals()[name]()` every module-level function.
        runner = ("import torch\n\n\nclass Runner:\n    def __init__(self, model):\n        self.model = model.cuda()\n\n"
                  "    def score(self, loader):\n        self.model.eval()\n        outs = []\n        for x in loader:\n"
                  "            outs.append(self.model(x.cuda()).argmax(1))\n        return outs\n\n"
                  "    def run(self, mode, loader):\n        return getattr(self, mode)(loader)\n\n\n"
                  "if __name__ == '__main__':\n    Runner(torch.nn.Linear(2, 2)).run('score', [])\n")
        # (the literal 'score' is read too: drop it to see getattr decide)
        self.write("runner.py", runner.replace("run('score', [])", "run(input(), [])"))
        self.assertEqual([f[3] for f in self.ll101(self.dir)], [False])
        # A name built around a literal reaches only the names with that end or start:
        # `getattr(self, mode + "_writer")` (a TensorBoard writer) calls no `score`.
        self.write("runner.py", runner.replace("run('score', [])", "run(input(), [])")
                   .replace("getattr(self, mode)(loader)", "getattr(self, mode + '_writer')(loader)"))
        self.assertEqual([f[3] for f in self.ll101(self.dir)], [True])
        self.write("runner.py", runner.replace("run('score', [])", "run(input(), [])")
                   .replace("getattr(self, mode)(loader)", "getattr(self, 'sco' + mode)(loader)"))
        self.assertEqual([f[3] for f in self.ll101(self.dir)], [False])
        os.remove(os.path.join(self.dir, "runner.py"))
        cli = ("import fire\nimport torch\n\n\ndef evaluate(loader):\n    model = torch.load('m.pt').cuda()\n"
               "    model.eval()\n    return [model(x.cuda()).argmax(1) for x in loader]\n\n\n"
               "if __name__ == '__main__':\n    fire.Fire()\n")
        self.write("cli.py", cli)
        self.assertEqual([f[3] for f in self.ll101(self.dir)], [False])
        self.write("cli.py", cli.replace("import fire\n", "").replace("fire.Fire()", "globals()[input()]([])"))
        self.assertEqual([f[3] for f in self.ll101(self.dir)], [False])
        self.write("cli.py", cli.replace("import fire\n", "").replace("fire.Fire()", "print(1)"))
        self.assertEqual([f[3] for f in self.ll101(self.dir)], [True])
        # `vars(args)` reads an object's fields: no dispatch.
        self.write("cli.py", cli.replace("import fire\n", "").replace("fire.Fire()", "print(vars(input()))"))
        self.assertEqual([f[3] for f in self.ll101(self.dir)], [True])

    def test_an_import_nothing_uses_calls_nothing(self):
        # `from .lib import predict` whose one call is commented out reads nothing of
        # lib.predict: in a package the tree never installs, it is dead. A package's __init__.py
        # re-exports what it imports, and a real call keeps it live.
        os.makedirs(os.path.join(self.dir, "pkg"))
        self.write("pkg/__init__.py", "")
        self.write("pkg/lib.py", self.LIB)
        main = ("import torch\nfrom .lib import predict\n\n\ndef main(model):\n"
                "    # print(predict(model, []))\n    print(model)\n\n\n"
                "if __name__ == '__main__':\n    main(torch.nn.Linear(2, 2))\n")
        self.write("pkg/main.py", main)
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "note", True)])
        self.write("pkg/__init__.py", "from .lib import predict\n")
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "warning", False)])
        self.write("pkg/__init__.py", "")
        self.write("pkg/main.py", main + "    print(predict(torch.nn.Linear(2, 2), []))\n")
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "warning", False)])

    def test_a_package_installed_from_above_the_run_root_is_an_interface(self):
        # `leaklint src/` in a repository whose pyproject.toml is at its top: the package is
        # installed, so its functions nobody in src/ calls are its interface.
        os.makedirs(os.path.join(self.dir, "src", "mylib"))
        self.write("pyproject.toml", "[project]\nname = 'mylib'\n")
        self.write("src/mylib/__init__.py", "")
        self.write("src/mylib/infer.py", self.LIB)
        self.write("src/mylib/cli.py", "import torch\n\nif __name__ == '__main__':\n    print(torch.ones(1))\n")
        self.assertEqual(self.ll101(os.path.join(self.dir, "src")), [("infer.py", 6, "warning", False)])
        # Without it (and with the repository's root at the top), the package is the tree's own.
        os.remove(os.path.join(self.dir, "pyproject.toml"))
        os.makedirs(os.path.join(self.dir, ".git"))
        self.assertEqual(self.ll101(os.path.join(self.dir, "src")), [("infer.py", 6, "note", True)])

    def test_a_helper_module_of_the_programs_is_no_interface(self):
        # A loose module (no __init__.py beside it) that a program of the run imports is the
        # programs' helper (a vendored `d2l_torch.py` beside a notebook): its module-level
        # functions nobody names are dead code, as a program's are. In a package, or imported by
        # no program, it stays an interface; a function the program calls stays live.
        helper = self.LIB + ("\n\ndef evaluate(model, loader):\n    model.eval()\n"
                             "    return [model(x.cuda()).argmax(1) for x in loader]\n")
        self.write("lib.py", helper)
        program = ("import torch\nimport lib as L\n\nif __name__ == '__main__':\n"
                   "    print(L.evaluate(torch.nn.Linear(2, 2).cuda(), []))\n")
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "warning", False), ("lib.py", 11, "warning", False)])
        self.write("main.py", program)
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "note", True), ("lib.py", 11, "warning", False)])
        # Single files named: the callers may be elsewhere.
        self.assertEqual(self.ll101(os.path.join(self.dir, "lib.py")),
                         [("lib.py", 6, "warning", False), ("lib.py", 11, "warning", False)])
        # A module that is not a program (no main guard, no loop at the top) is no program's caller.
        self.write("main.py", program.replace("if __name__ == '__main__':\n    print", "def run():\n    print"))
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "warning", False), ("lib.py", 11, "warning", False)])
        # In a package the tree installs (a pyproject.toml, setup.py or setup.cfg at or above its
        # top directory), the module may be imported from outside the tree; in one it never
        # installs, only the tree's own code imports it.
        self.write("main.py", program)
        self.write("__init__.py", "")
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "note", True), ("lib.py", 11, "warning", False)])
        for meta in ("pyproject.toml", "setup.cfg"):
            self.write(meta, "")
            self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "warning", False), ("lib.py", 11, "warning", False)])
            os.remove(os.path.join(self.dir, meta))
        os.remove(os.path.join(self.dir, "__init__.py"))
        # Called only by a function that nothing calls, it is still dead; reached from a live one
        # (through the module's own name, as a vendored library calls itself), it is live.
        self.write("lib.py", helper + "\n\ndef report(model, loader):\n    return L.predict(model, loader)\n")
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "note", True), ("lib.py", 11, "warning", False)])
        self.write("main.py", program.replace("L.evaluate(", "L.report("))
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "warning", False), ("lib.py", 11, "note", True)])
        # What a program reaches by a computed name is live: a function of the module looked up
        # by name, any module loaded by name.
        for call in ("getattr(L, input())(None, [])", "__import__(input()).predict(None, [])",
                     "importlib.import_module(input())"):
            self.write("main.py", "import importlib\n" + program + "    " + call + "\n")
            self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "warning", False), ("lib.py", 11, "warning", False)])
        # Python finds a single-name import beside the program: another directory's lib.py is not it.
        self.write("main.py", program)
        os.makedirs(os.path.join(self.dir, "other"))
        os.rename(os.path.join(self.dir, "lib.py"), os.path.join(self.dir, "other", "lib.py"))
        self.assertEqual(self.ll101(self.dir), [("lib.py", 6, "warning", False), ("lib.py", 11, "warning", False)])
        os.rename(os.path.join(self.dir, "other", "lib.py"), os.path.join(self.dir, "lib.py"))
        # Cached runs decide the same (the flag travels in the cache entry).
        for _ in range(2):
            rc, out, err = run(["--format", "json", "--show-low-confidence", self.dir])
            weak = [f["line"] for f in json.loads(out)["findings"] if "nothing in the scanned tree calls" in f["message"]]
            self.assertEqual(weak, [6])

    def test_a_method_torchscript_exports_is_called_by_name_elsewhere(self):
        # `@torch.jit.export` exposes the method to TorchScript callers (`run_method("score")` in
        # C++), whose names are not read; a grad switch decorator does not.
        model = ("import torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                 "        self.fc = torch.nn.Linear(2, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\n"
                 "    @DECORATOR\n    def score(self, xs):\n        self.eval()\n        outs = []\n        for x in xs:\n"
                 "            outs.append(self(x))\n        return outs\n\n\n"
                 "if __name__ == '__main__':\n    torch.jit.script(Net().cuda()).save('net.pt')\n")
        self.write("net.py", model.replace("DECORATOR", "torch.jit.export"))
        self.assertEqual([f[3] for f in self.ll101(self.dir)], [False])
        self.write("net.py", model.replace("DECORATOR", "torch.autocast('cuda')"))
        self.assertEqual([f[3] for f in self.ll101(self.dir)], [True])

    def test_the_fix_loop_keeps_the_runs_decision(self):
        # --fix re-lints each file after every edit; a method the run found nothing calls stays
        # weak there, so its fix is not applied on the second pass while the live one's is.
        self.write("trainer.py", self.TRAINER)
        self.write("main.py", self.MAIN)
        # (run() shows low-confidence findings, and --fix acts on what is shown: not here)
        subprocess.run([BIN, "--fix", "--unsafe-fixes", "--no-cache", self.dir], capture_output=True, timeout=120)
        with open(os.path.join(self.dir, "trainer.py")) as fh:
            lines = fh.read().splitlines()
        decorated = [lines[i + 1].strip() for i, l in enumerate(lines[:-1]) if "no_grad" in l]
        self.assertEqual(decorated, ["def validate(self, loader):"], "\n".join(lines))

    def write_trainer_notebook(self):
        cells = [self.TRAINER, "t = Trainer(torch.nn.Linear(2, 2))\nprint(t.validate([torch.zeros(1, 2)]))\n"]
        self.write("trainer.ipynb", json.dumps({
            "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                       "source": c.splitlines(True)} for c in cells],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1))

    def test_a_notebook_method_nothing_calls_is_weak_and_stays_so_when_fixed(self):
        # A notebook's findings are placed in the .ipynb file's bytes: the functions holding
        # them must be too, or the policy misses them (or weakens another function's).
        self.write_trainer_notebook()
        self.assertEqual([weak for _, _, _, weak in self.ll101(self.dir)], [True, False])  # test(), validate()
        p = subprocess.run([BIN, "--fix", "--unsafe-fixes", "--no-cache", self.dir], capture_output=True, text=True,
                           timeout=120)
        # What is left after fixing is reported as the run decided: the dead method stays hidden.
        self.assertIn("No findings; 1 fixed; 1 low-confidence finding hidden", p.stdout)
        with open(os.path.join(self.dir, "trainer.ipynb")) as fh:
            src = "".join(json.load(fh)["cells"][0]["source"]).splitlines()
        decorated = [src[i + 1].strip() for i, l in enumerate(src[:-1]) if "no_grad" in l]
        self.assertEqual(decorated, ["def validate(self, loader):"])

    def test_a_notebook_method_is_reached_only_from_the_notebook(self):
        # No file imports a notebook: another file's call of its own `test()` does not reach
        # the notebook's `Trainer.test`, which the notebook never calls.
        self.write_trainer_notebook()
        self.write("runner.py", "import torch\n\n\nclass Suite:\n    def test(self, xs):\n        return len(xs)\n\n\n"
                   "if __name__ == '__main__':\n    print(Suite().test([torch.zeros(1)]))\n")
        self.assertEqual([weak for _, _, _, weak in self.ll101(self.dir)], [True, False])  # test(), validate()


class VendoredCode(Tmp):
    """The impact policy for vendored code: below the run's root, a folder named as vendored
    code (`third_party/`, `vendor/`, `external/`, ...) or one with a license file of its own
    inside a project with a license file holds another project's copy, whose defects are fixed
    upstream: its findings are weak. A folder the user names is checked at full severity."""
    EVAL = ("import torch\n\n\ndef evaluate(model, loader):\n    outs = []\n    for x in loader:\n"
            "        outs.append(model(x.cuda()).argmax(1))\n    return outs\n")

    def tree(self):
        self.write("LICENSE", "MIT\n")
        self.write("baselines/other/LICENSE", "BSD\n")
        for rel in ("baselines/other/models/ev.py", "third_party/lib/ev.py", "External/ev.py", "mine/ev.py",
                    "baselines/ours/ev.py"):
            self.write(rel, self.EVAL)

    def weak(self, path):
        rc, out, err = run(["--format", "json", "--show-low-confidence", "--no-cache", path])
        self.assertEqual(rc, 1, err)
        return sorted((f["path"].replace(os.sep, "/"), f["low_confidence"], "vendored" in f["message"])
                      for f in json.loads(out)["findings"] if f["rule"] == "LL101")

    def test_findings_in_vendored_folders_are_weak(self):
        self.tree()
        got = self.weak(self.dir)
        rel = [(os.path.relpath(p, self.dir).replace(os.sep, "/"), w, v) for p, w, v in got]
        self.assertEqual(rel, [("External/ev.py", True, True), ("baselines/other/models/ev.py", True, True),
                               ("baselines/ours/ev.py", False, False), ("mine/ev.py", False, False),
                               ("third_party/lib/ev.py", True, True)])
        # The message names the folder and why.
        rc, out, err = run(["--no-cache", "--show-low-confidence", self.dir])
        self.assertIn("`baselines/other/` is another project vendored into this one", out)
        self.assertIn("`third_party/` holds vendored third-party code", out)

    def test_a_license_only_inside_is_the_projects_own(self):
        # No license above it: the folder's license is the repository's own (a project kept
        # in a subfolder), not a copy of another project.
        self.tree()
        os.remove(os.path.join(self.dir, "LICENSE"))
        got = [(os.path.relpath(p, self.dir).replace(os.sep, "/"), w) for p, w, v in self.weak(self.dir)]
        self.assertIn(("baselines/other/models/ev.py", False), got)

    def test_a_folder_the_user_names_is_checked_in_full(self):
        self.tree()
        for named in ("third_party", os.path.join("baselines", "other")):
            got = self.weak(os.path.join(self.dir, named))
            self.assertTrue(got and not any(w for _, w, _ in got), (named, got))

    def test_the_repository_root_above_the_run_counts(self):
        # `leaklint baselines/` inside a repository whose license is at its top.
        self.tree()
        os.makedirs(os.path.join(self.dir, ".git"))
        got = [(os.path.relpath(p, self.dir).replace(os.sep, "/"), w) for p, w, v in self.weak(os.path.join(self.dir, "baselines"))]
        self.assertEqual(got, [("baselines/other/models/ev.py", True), ("baselines/ours/ev.py", False)])

    def test_a_submodule_or_a_clone_inside_a_repository(self):
        self.write("train.py", self.EVAL)
        self.write("deps/lib/ev.py", self.EVAL)
        self.write("deps/lib/.git", "gitdir: ../../.git/modules/lib\n")  # a submodule's checkout
        rel = lambda got: [(os.path.relpath(p, self.dir).replace(os.sep, "/"), w) for p, w, v in got]
        # Not a repository itself: a folder of clones, each checked in full.
        self.assertEqual(rel(self.weak(self.dir)), [("deps/lib/ev.py", False), ("train.py", False)])
        os.makedirs(os.path.join(self.dir, ".git"))
        self.assertEqual(rel(self.weak(self.dir)), [("deps/lib/ev.py", True), ("train.py", False)])
        rc, out, err = run(["--no-cache", "--show-low-confidence", self.dir])
        self.assertIn("`deps/lib/` is another repository inside this one", out)

    def test_a_module_named_like_a_license_is_no_license(self):
        # A license-plate reader's `license_plate_dataset.py` is code, not a license file.
        self.write("LICENSE", "MIT\n")
        self.write("plate_reader/license_plate_dataset.py", self.EVAL)
        self.write("plate_reader/evaluate.py", self.EVAL)
        self.assertEqual([w for _, w, _ in self.weak(self.dir)], [False, False])

    def test_a_file_the_user_names_is_checked_in_full(self):
        self.tree()
        got = self.weak(self.dir)
        named = os.path.join(self.dir, "third_party", "lib", "ev.py")
        rc, out, err = run(["--format", "json", "--show-low-confidence", "--no-cache", self.dir, named])
        weak = {os.path.relpath(f["path"], self.dir).replace(os.sep, "/"): f["low_confidence"]
                for f in json.loads(out)["findings"] if f["rule"] == "LL101"}
        self.assertEqual(weak["third_party/lib/ev.py"], False, out)
        self.assertEqual(weak["External/ev.py"], True, out)

    def test_fix_leaves_vendored_code_alone(self):
        self.tree()
        subprocess.run([BIN, "--fix", "--unsafe-fixes", "--no-cache", self.dir], capture_output=True, timeout=120)
        for rel, fixed in (("mine/ev.py", True), ("third_party/lib/ev.py", False), ("baselines/other/models/ev.py", False)):
            with open(os.path.join(self.dir, rel)) as fh:
                self.assertEqual("no_grad" in fh.read(), fixed, rel)


class ModelSweepAcrossModules(Tmp):
    """LL301's impact facts cross modules: a model class of another module of the project whose
    layers all have visible sizes, built with no arguments, is small (weak, its count in the
    message); a trainer of another module that back-propagates makes a sweep that hands it
    each model a training sweep (weak). Otherwise the finding keeps its severity."""
    NETS = ("import torch\nimport torch.nn as nn\n\n\nclass SmallNet(nn.Module):\n    def __init__(self, classes=10):\n"
            "        super().__init__()\n        self.c1 = nn.Conv2d(1, 16, 3)\n        self.head = nn.Linear(16 * 26 * 26, classes)\n\n"
            "    def forward(self, x):\n        return self.head(self.c1(x).relu().flatten(1))\n\n\n"
            "class BigNet(nn.Module):\n    def __init__(self, width):\n        super().__init__()\n"
            "        self.fc = nn.Linear(width, width)\n\n    def forward(self, x):\n        return self.fc(x)\n\n\n"
            "def finetune(model, loader):\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    for x, y in loader:\n"
            "        opt.zero_grad()\n        nn.functional.cross_entropy(model(x.cuda()), y.cuda()).backward()\n"
            "        opt.step()\n\n\ndef score(model, loader):\n    with torch.no_grad():\n"
            "        return sum((model(x.cuda()).argmax(1) == y.cuda()).sum().item() for x, y in loader)\n")
    SWEEP = ("import torch\nfrom nets import {cls}, {fn}\n\n\ndef sweep(paths, loader):\n    for p in paths:\n"
             "        model = {cls}({args}).cuda()\n        model.load_state_dict(torch.load(p, map_location='cuda'))\n"
             "        {fn}(model, loader)\n")

    def ll301(self, *extra):
        rc, out, err = run(["--format", "json", *extra, self.dir])
        return [(os.path.basename(f["path"]), f["line"], f["severity"], f["message"].split("(low confidence: ")[-1][:40]
                 if f.get("low_confidence") else "")
                for f in json.loads(out)["findings"] if f["rule"] == "LL301"]

    def test_small_model_class_of_another_module(self):
        self.write("nets.py", self.NETS)
        self.write("sweep.py", self.SWEEP.format(cls="SmallNet", fn="score", args=""))
        for extra in (("--no-cache",), (), ()):   # uncached, cold, warm: the size travels in the cache entry
            self.assertEqual(self.ll301(*extra), [("sweep.py", 7, "note", "the model has 108.3k parameters (about 1")])
        # Arguments: the other module's sizes under them are not known here.
        self.write("sweep.py", self.SWEEP.format(cls="SmallNet", fn="score", args="3"))
        self.assertEqual(self.ll301("--no-cache"), [("sweep.py", 7, "warning", "")])
        self.write("sweep.py", self.SWEEP.format(cls="BigNet", fn="score", args="4096"))
        self.assertEqual(self.ll301("--no-cache"), [("sweep.py", 7, "warning", "")])

    def test_sweep_trained_by_a_function_of_another_module(self):
        self.write("nets.py", self.NETS)
        self.write("sweep.py", self.SWEEP.format(cls="BigNet", fn="finetune", args="4096"))
        self.assertEqual(self.ll301("--no-cache"), [("sweep.py", 7, "note", "each iteration trains with the model it ")])
        # Named alone, the sweep's trainer is unknown.
        rc, out, err = run(["--format", "json", "--no-cache", os.path.join(self.dir, "sweep.py")])
        self.assertEqual([f["severity"] for f in json.loads(out)["findings"] if f["rule"] == "LL301"], ["warning"])

    def test_a_project_template_class_named_like_a_pipeline_is_no_model(self):
        # `pipeline = FullPipeline(model, ...)` per seed, where the run defines FullPipeline as a
        # plain class holding a scikit-learn-style template: no torch module is built. A
        # project module class named so still is one.
        self.write("pipe.py", "class FullPipeline:\n    def __init__(self, model, name):\n        self.model = model\n"
                   "        self.name = name\n\n    def fit(self, df):\n        return self.model.fit(df)\n\n\n"
                   "class PipelineCV:\n    def __init__(self, pipeline):\n        self.pipeline = pipeline\n\n"
                   "    def fit(self, df):\n        return self.pipeline.fit(df)\n")
        self.write("nn_model.py", "import torch\n\n\nclass NN:\n    def __init__(self, hidden, seed):\n"
                   "        self.hidden = hidden\n        self.model = None\n\n    def fit(self, df):\n"
                   "        self.model = torch.nn.Linear(len(df), self.hidden).cuda()\n        return self\n")
        self.write("run.py", "import torch\nfrom pipe import FullPipeline, PipelineCV\nfrom nn_model import NN\n\n"
                   "for seed in range(3):\n    template = NN(500, seed)\n    pipeline = FullPipeline(template, name=str(seed))\n"
                   "    cv = PipelineCV(pipeline)\n    cv.fit(torch.load('df.pt'))\n")
        self.assertEqual(self.ll301("--no-cache"), [])
        self.write("pipe.py", "import torch\nimport torch.nn as nn\n\n\nclass FullPipeline(nn.Module):\n"
                   "    def __init__(self, model, name):\n        super().__init__()\n        self.head = nn.Linear(500, 10)\n\n"
                   "    def forward(self, x):\n        return self.head(x)\n")
        self.write("run.py", "import torch\nfrom pipe import FullPipeline\nfrom nn_model import NN\n\n"
                   "for seed in range(3):\n    template = NN(500, seed)\n"
                   "    pipeline = FullPipeline(template, name=str(seed)).cuda()\n    pipeline(torch.load('x.pt').cuda())\n")
        self.assertEqual([line for _, line, _, _ in self.ll301("--no-cache")], [7])

    def test_sweep_trained_by_a_module_that_reaches_torch_through_a_star_import(self):
        # The trainer's module imports torch only through a project module (`from helpers import
        # *`), and the runner builds an optimizer and hands it on to the loop of yet another
        # module (MAML-style `main`): both train. `model = load_model(path, model)` hands the
        # same object back to the name, which keeps no old model.
        self.write("helpers.py", "import torch\n")
        self.write("fitmod.py", "from helpers import *\n\n\ndef fit(model, optimiser, loader):\n"
                   "    for x, y in loader:\n        loss = (model(x) - y).pow(2).mean()\n"
                   "        optimiser.zero_grad()\n        loss.backward()\n        optimiser.step()\n")
        self.write("runner.py", "import torch.optim as optim\nfrom fitmod import fit\n\n\ndef main(model, loader):\n"
                   "    opt = optim.Adam(model.parameters(), lr=1e-3)\n    fit(model, opt, loader)\n")
        sweep = ("import torch\nfrom zoo import grab_model\nfrom {mod} import {fn} as run_one\n\n\n"
                 "def load_model(path, model):\n    model.load_state_dict(torch.load(path))\n    return model\n\n\n"
                 "def sweep(names, loader):\n    for name in names:\n        model = grab_model(name).cuda()\n"
                 "        model = load_model('best.pt', model)\n        run_one(model=model, loader=loader)\n")
        self.write("sweep.py", sweep.format(mod="runner", fn="main"))
        self.assertEqual(self.ll301("--no-cache"), [("sweep.py", 13, "note", "each iteration trains with the model it ")])
        # A runner that only builds the optimizer (with a scheduler over it) and returns it
        # trains nothing.
        self.write("runner.py", "import torch.optim as optim\n\n\ndef main(model, loader):\n"
                   "    opt = optim.SGD(model.parameters(), lr=0.1)\n"
                   "    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)\n    return opt, sched\n")
        self.assertEqual(self.ll301("--no-cache"), [("sweep.py", 13, "warning", "")])

    def test_a_notebook_sweep_trained_by_a_function_of_another_module(self):
        # A notebook's cells import the trainer from the module beside it: the cross-module
        # facts reach notebooks too, and the finding stays on the notebook's own line. Cached
        # runs (cold, warm) decide the same.
        self.write("nets.py", self.NETS)
        code = self.SWEEP.format(cls="BigNet", fn="finetune", args="4096").replace("def sweep(paths, loader):\n", "")
        code = "\n".join(line[4:] if line.startswith("    ") else line for line in code.splitlines()) + "\n"
        cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Sweep\n"]},
                 {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [],
                  "source": code.splitlines(True)}]
        self.write("sweep.ipynb", json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
        for extra in (("--no-cache",), (), ()):
            rc, out, err = run(["--format", "json", *extra, self.dir])
            found = [(f["path"].endswith("sweep.ipynb"), f["severity"], f.get("low_confidence", False))
                     for f in json.loads(out)["findings"] if f["rule"] == "LL301"]
            self.assertEqual(found, [(True, "note", True)], out)
        self.write("sweep.ipynb", json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
                   .replace("finetune(model, loader)", "score(model, loader)"))
        rc, out, err = run(["--format", "json", "--no-cache", self.dir])
        self.assertEqual([f["severity"] for f in json.loads(out)["findings"] if f["rule"] == "LL301"], ["warning"])

    def test_sweep_trained_through_a_local_function_that_calls_another_modules_trainer(self):
        # `prune_and_finetune(model, ...)` of the sweep's own file trains through `nets.finetune`.
        self.write("nets.py", self.NETS)
        self.write("sweep.py", "import torch\nimport nets\n\n\ndef prune_and_finetune(model, loader):\n"
                   "    nets.finetune(model, loader)\n\n\ndef sweep(paths, loader):\n    for p in paths:\n"
                   "        model = nets.BigNet(4096).cuda()\n        model.load_state_dict(torch.load(p, map_location='cuda'))\n"
                   "        prune_and_finetune(model, loader)\n")
        self.assertEqual(self.ll301("--no-cache"), [("sweep.py", 11, "note", "each iteration trains with the model it ")])
        # A local function that trains a probe it builds, not the model it is handed: full.
        self.write("sweep.py", "import torch\nimport nets\n\n\ndef linear_probe(model, loader):\n"
                   "    probe = torch.nn.Linear(10, 2).cuda()\n    nets.finetune(probe, loader)\n\n\ndef sweep(paths, loader):\n"
                   "    for p in paths:\n        model = nets.BigNet(4096).cuda()\n"
                   "        model.load_state_dict(torch.load(p, map_location='cuda'))\n        linear_probe(model, loader)\n")
        self.assertEqual(self.ll301("--no-cache"), [("sweep.py", 12, "warning", "")])


    def test_sweep_trained_by_a_trainer_class_of_another_module(self):
        # `trainer = Trainer(model, lr); trainer.fit(loader)`: another module's class whose method
        # back-propagates, rebuilt every iteration. The sweep's program places nothing on a GPU
        # itself; the trainer's constructor does, so it is no CPU-only program either.
        self.write("trainer.py", "import torch\n\n\nclass Trainer:\n    def __init__(self, model, lr):\n"
                   "        self.model = model.cuda()\n        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr)\n\n"
                   "    def fit(self, loader):\n        for x, y in loader:\n            self.opt.zero_grad()\n"
                   "            torch.nn.functional.cross_entropy(self.model(x.cuda()), y.cuda()).backward()\n"
                   "            self.opt.step()\n")
        sweep = ("import torchvision\nfrom trainer import Trainer\n\nif __name__ == '__main__':\n"
                 "    loader = []\n    for lr in [0.1, 0.01, 0.001]:\n        model = torchvision.models.resnet50()\n"
                 "        trainer = Trainer(model, lr)\n        trainer.fit(loader)\n{keep}")
        self.write("sweep.py", sweep.format(keep=""))
        for extra in (("--no-cache",), (), ()):
            self.assertEqual(self.ll301(*extra), [("sweep.py", 7, "note", "each iteration trains with the model it ")])
        # The trainer kept past its iteration keeps the old model through the next training.
        self.write("sweep.py", sweep.format(keep="        if lr == 0.1:\n            best = trainer\n"))
        self.assertEqual(self.ll301("--no-cache"), [("sweep.py", 7, "warning", "")])
        # A trainer only asked to evaluate (a method that does not back-propagate) trains nothing.
        with open(os.path.join(self.dir, "trainer.py")) as f:
            trainer = f.read()
        self.write("trainer.py", trainer + "\n    def evaluate(self, loader):\n"
                   "        with torch.no_grad():\n            return [self.model(x.cuda()) for x in loader]\n")
        self.write("sweep.py", sweep.format(keep="").replace("trainer.fit(loader)", "trainer.evaluate(loader)"))
        self.assertEqual(self.ll301("--no-cache"), [("sweep.py", 7, "warning", "")])


class ForwardTupleAcrossModules(Tmp):
    """LL102 across modules: a model class of another module whose forward hands back a Python
    number beside its logits (a mixup weight drawn with NumPy, or a constructor's float
    hyperparameter). The defining module's summary says which elements of the tuple carry no
    history; it travels in the cache."""
    MODEL = ("import numpy as np\nimport torch\nimport torch.nn as nn\n\n\nclass MixNet(nn.Module):\n"
             "    def __init__(self, alpha=0.99):\n        super().__init__()\n        self.fc = nn.Linear(8, 4)\n"
             "        self.alpha = alpha\n\n    def forward(self, x):\n        if self.alpha > 0:\n"
             "            lam = np.random.beta(self.alpha, self.alpha)\n        else:\n            lam = self.alpha\n"
             "        index = torch.randperm(x.size(0))\n        x = lam * x + (1 - lam) * x[index]\n"
             "        return self.fc(x), index, {third}\n")
    TRAIN = ("import torch\nimport torch.nn as nn\nfrom model import MixNet\n\n\ndef train(loader, epochs):\n"
             "    model = MixNet(alpha=0.5).cuda()\n    model = nn.DataParallel(model)\n"
             "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    for epoch in range(epochs):\n"
             "        correct = 0\n        for x, y in loader:\n            logits, index, lam = model(x.cuda())\n"
             "            loss = lam * nn.functional.cross_entropy(logits, y.cuda())\n            opt.zero_grad()\n"
             "            loss.backward()\n            opt.step()\n            pred = logits.argmax(1)\n"
             "            correct += lam * pred.eq(y.cuda()).sum()\n        print(correct)\n")

    def ll102(self, *extra):
        rc, out, err = run(["--format", "json", *extra, self.dir])
        return [(os.path.basename(f["path"]), f["line"]) for f in json.loads(out)["findings"] if f["rule"] == "LL102"]

    def test_a_number_the_forward_of_another_module_returns(self):
        self.write("model.py", self.MODEL.format(third="lam"))
        self.write("train.py", self.TRAIN)
        for extra in (("--no-cache",), (), ()):   # uncached, cold, warm: the summary is cached
            self.assertEqual(self.ll102(*extra), [])

    def test_an_element_with_history_still_counts(self):
        # The third element is the mixed input's mean: it carries the batch's graph.
        self.write("model.py", self.MODEL.format(third="x.mean() * lam"))
        self.write("train.py", self.TRAIN)
        for extra in (("--no-cache",), (), ()):
            self.assertEqual(self.ll102(*extra), [("train.py", 19)])
        # Named alone, the training file cannot see the model's forward.
        self.write("model.py", self.MODEL.format(third="lam"))
        rc, out, err = run(["--format", "json", "--no-cache", os.path.join(self.dir, "train.py")])
        self.assertEqual([f["line"] for f in json.loads(out)["findings"] if f["rule"] == "LL102"], [19])


class MethodReturningHistoryAcrossModules(Tmp):
    """LL102 across modules: a method of another module's class (not its forward) whose result
    carries history, `train_step()` returning `loss * x.size(0)` after its own backward. A
    caller keeping each step's result keeps each step's autograd nodes; the defining module's
    summary names the method, and it travels in the cache."""
    MODEL = ("import torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass Net(nn.Module):\n"
             "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(32, 10)\n\n"
             "    def forward(self, x):\n        return self.fc(x)\n\n"
             "    def train_step(self, x, y, opt):\n        opt.zero_grad()\n"
             "        loss = F.cross_entropy(self(x), y)\n        loss.backward()\n        opt.step()\n"
             "        return {ret}\n")
    TRAIN = ("import torch\nfrom model import Net\n\ndevice = torch.device('cuda')\nmodel = Net().to(device)\n"
             "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
             "loader = torch.utils.data.DataLoader(torch.load('train.pt'), batch_size=64)\n"
             "for epoch in range(10):\n    losses = []\n    for x, y in loader:\n"
             "        out = model.train_step(x.to(device), y.to(device), opt)\n        losses.append(out)\n"
             "    print(sum(losses))\n")

    def ll102(self, *extra):
        rc, out, err = run(["--format", "json", *extra, self.dir])
        return [(os.path.basename(f["path"]), f["line"]) for f in json.loads(out)["findings"] if f["rule"] == "LL102"]

    def test_a_method_of_another_module_returning_history(self):
        self.write("model.py", self.MODEL.format(ret="loss * x.size(0)"))
        self.write("train.py", self.TRAIN)
        for extra in (("--no-cache",), (), ()):   # uncached, cold, warm: the summary is cached
            self.assertEqual(self.ll102(*extra), [("train.py", 12)])

    def test_a_method_returning_a_number(self):
        self.write("model.py", self.MODEL.format(ret="loss.item() * x.size(0)"))
        self.write("train.py", self.TRAIN)
        self.assertEqual(self.ll102("--no-cache"), [])


class AccumulationFactsAcrossModules(Tmp):
    """LL206 across modules: an optimizer factory of another module says which optimizer the
    loop steps, and a loss function of another module that multiplies by the batch size says
    the loss is a sum over the samples."""
    FACTORY = ("import torch\nfrom torch.optim import Adam, Adamax\n\n\ndef build_optimizer(model, opts):\n"
               "    if opts.optim == 'adam':\n        cls = Adam\n    elif opts.optim == 'other':\n        cls = {other}\n"
               "    else:\n        raise ValueError(opts.optim)\n    return cls(model.parameters(), lr=opts.lr)\n")
    TRAIN = ("import torch\nfrom optim import build_optimizer\n\n\ndef main(model, loader, opts):\n"
             "    optimizer = build_optimizer(model, opts)\n    for step, batch in enumerate(loader):\n"
             "        loss = model(batch)\n        loss.backward()\n"
             "        if (step + 1) % opts.gradient_accumulation_steps == 0:\n"
             "            optimizer.step()\n            optimizer.zero_grad()\n")
    LOSS = ("import torch\n\n\ndef compute_loss(p, targets):\n    bs = p.shape[0]  # batch size\n"
            "    loss = (p - targets).abs().mean()\n    return {ret}, loss.detach()\n")
    YOLO = ("import torch\nfrom utils.loss import compute_loss\n\n\n"
            "def train(model, loader, total_batch_size, lr):\n    nbs = 64\n"
            "    accumulate = max(round(nbs / total_batch_size), 1)\n"
            "    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)\n"
            "    for i, (imgs, targets) in enumerate(loader):\n        loss, items = compute_loss(model(imgs), targets)\n"
            "        loss.backward()\n        if i % accumulate == 0:\n            optimizer.step()\n"
            "            optimizer.zero_grad()\n")

    def ll206(self, *extra):
        rc, out, err = run(["--format", "json", *extra, self.dir])
        return [(os.path.basename(f["path"]), f["line"], bool(f.get("low_confidence")))
                for f in json.loads(out)["findings"] if f["rule"] == "LL206"]

    def test_an_adam_family_factory_of_another_module(self):
        self.write("optim/__init__.py", "from .misc import build_optimizer\n")
        self.write("optim/misc.py", self.FACTORY.format(other="Adamax"))
        self.write("train.py", self.TRAIN)
        for extra in (("--no-cache",), (), ()):   # uncached, cold, warm
            self.assertEqual(self.ll206(*extra), [])
        # A factory that may build SGD: the configuration chooses, so the finding is weak.
        self.write("optim/misc.py", self.FACTORY.format(other="torch.optim.SGD"))
        self.assertEqual(self.ll206("--no-cache"), [("train.py", 9, True)])

    def test_a_loss_of_another_module_summed_over_the_batch(self):
        self.write("utils/loss.py", self.LOSS.format(ret="loss * bs"))
        self.write("train.py", self.YOLO)
        for extra in (("--no-cache",), (), ()):
            self.assertEqual(self.ll206(*extra), [])
        self.write("utils/loss.py", self.LOSS.format(ret="loss"))
        self.assertEqual(self.ll206("--no-cache"), [("train.py", 11, True)])

    def test_a_loss_summed_over_the_batch_brought_by_a_star_import(self):
        # YOLOv5's early trainers: `from utils.utils import *`, then `compute_loss(pred, targets)`.
        self.write("utils/__init__.py", "")
        self.write("utils/utils.py", self.LOSS.format(ret="loss * bs"))
        self.write("train.py", self.YOLO.replace("from utils.loss import compute_loss", "from utils.utils import *"))
        for extra in (("--no-cache",), (), ()):
            self.assertEqual(self.ll206(*extra), [])
        self.write("utils/utils.py", self.LOSS.format(ret="loss"))
        self.assertEqual(self.ll206("--no-cache"), [("train.py", 11, True)])


class HooksAcrossModules(Tmp):
    """LL105 across modules: a class of one module registers a hook in its constructor (or in a
    method) and never removes it; a loop of another module builds it (or calls the method) once
    per iteration, so the hooks pile up on the model it was handed."""
    CAM = ("import torch\n\n\nclass GradCAM:\n    def __init__(self, model, layer):\n        self.model = model\n"
           "        self.acts = None\n        {register}\n\n"
           "    def save(self, module, inp, out):\n        self.acts = out\n\n"
           "    def attach(self, layer):\n        layer.register_forward_hook(self.save)\n\n"
           "    def __call__(self, x):\n        return self.model(x)\n{extra}")
    RUN = ("import torch\nfrom cam import GradCAM\n\n\ndef explain_all(model, loader):\n    maps = []\n"
           "    {before}\n    for x, y in {loop}:\n        {body}\n        maps.append(cam(x).detach())\n    return maps\n")

    def ll105(self, *extra):
        rc, out, err = run(["--format", "json", *extra, self.dir])
        return [(os.path.basename(f["path"]), f["line"], bool(f.get("low_confidence")), f["message"])
                for f in json.loads(out)["findings"] if f["rule"] == "LL105"]

    def project(self, register="layer.register_forward_hook(self.save)", extra="", before="pass",
                loop="loader", body="cam = GradCAM(model, model.layer4)"):
        self.write("cam.py", self.CAM.format(register=register, extra=extra))
        self.write("run.py", self.RUN.format(before=before, loop=loop, body=body))

    def test_a_class_built_once_per_batch_in_another_module(self):
        self.project()
        for extra in (("--no-cache",), (), ()):   # uncached, cold, warm
            found = self.ll105(*extra)
            self.assertEqual([(p, l, w) for p, l, w, _ in found], [("cam.py", 8, False)], found)
            self.assertIn("constructor of `GradCAM`, built once per batch in `", found[0][3])

    def test_a_method_called_once_per_batch_in_another_module(self):
        self.project(register="pass", before="cam = GradCAM(model, model.layer4)", body="cam.attach(model.layer4)")
        found = self.ll105("--no-cache")
        self.assertEqual([(p, l, w) for p, l, w, _ in found], [("cam.py", 14, False)], found)
        self.assertIn("in `attach`, called once per batch in `", found[0][3])

    def test_silent_when_the_class_removes_its_handle(self):
        self.project(register="self.handle = layer.register_forward_hook(self.save)",
                     extra="\n    def close(self):\n        self.handle.remove()\n")
        self.assertEqual(self.ll105("--no-cache"), [])

    def test_silent_when_built_once_before_the_loop(self):
        self.project(before="cam = GradCAM(model, model.layer4)", body="pass")
        self.assertEqual(self.ll105("--no-cache"), [])

    def test_silent_when_built_as_a_with_item(self):
        self.project(body="with GradCAM(model, model.layer4) as cam:\n            pass")
        self.assertEqual(self.ll105("--no-cache"), [])

    def test_a_loop_over_rounds_is_weak(self):
        self.project(loop="zip(rounds, rounds)")
        found = self.ll105("--no-cache")
        self.assertEqual([(p, l, w) for p, l, w, _ in found], [("cam.py", 8, True)], found)


class ModeFreeModelAcrossModules(Tmp):
    """LL205 across modules: a validation that leaves the model in eval mode matters only if
    the model has a layer that behaves differently in eval(): a class of another module of the
    project, built from linear layers and a normalisation of a third module, does not."""
    NORM = ("import torch\nimport torch.nn as nn\n\n\nclass RMSNorm(nn.Module):\n"
            "    def __init__(self, d):\n        super().__init__()\n        self.w = nn.Parameter(torch.ones(d))\n\n"
            "    def forward(self, x):\n        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w\n")
    LM = ("import torch.nn as nn\nfrom norms import RMSNorm\n\n\nclass TinyLM(nn.Module):\n"
          "    def __init__(self, vocab, d):\n        super().__init__()\n        self.emb = nn.Embedding(vocab, d)\n"
          "        self.norm = RMSNorm(d)\n        self.out = nn.Linear(d, vocab){extra}\n\n"
          "    def forward(self, x):\n        return self.out({inner})\n")
    TRAIN = ("import torch\nfrom lm import TinyLM\n\n\ndef evaluate(model, loader):\n    model.eval()\n"
             "    with torch.no_grad():\n        return sum(model(x).mean().item() for x, y in loader)\n\n\n"
             "def main(train_loader, val_loader, epochs):\n    model = TinyLM(100, 32).cuda()\n"
             "    opt = torch.optim.AdamW(model.parameters())\n    model.train()\n    for epoch in range(epochs):\n"
             "        for x, y in train_loader:\n            loss = torch.nn.functional.cross_entropy(model(x), y)\n"
             "            opt.zero_grad()\n            loss.backward()\n            opt.step()\n"
             "        print(evaluate(model, val_loader))\n")

    def ll205(self, *extra):
        rc, out, err = run(["--format", "json", *extra, self.dir])
        return [(os.path.basename(f["path"]), f["line"]) for f in json.loads(out)["findings"] if f["rule"] == "LL205"]

    def test_silent_on_a_mode_free_model_of_another_module(self):
        self.write("norms.py", self.NORM)
        self.write("lm.py", self.LM.format(extra="", inner="self.norm(self.emb(x))"))
        self.write("train.py", self.TRAIN)
        for extra in (("--no-cache",), (), ()):   # uncached, cold, warm
            self.assertEqual(self.ll205(*extra), [])

    def test_a_dropout_anywhere_down_the_chain_counts(self):
        self.write("norms.py", self.NORM.replace("return x *", "return nn.functional.dropout(x, 0.1, self.training) *"))
        self.write("lm.py", self.LM.format(extra="", inner="self.norm(self.emb(x))"))
        self.write("train.py", self.TRAIN)
        found = self.ll205("--no-cache")
        self.assertEqual(len(found), 1, found)
        # A layer of another library the run does not show: unknown, so the finding stays.
        self.write("norms.py", self.NORM)
        self.write("lm.py", self.LM.format(extra="\n        import timm\n        self.drop = timm.layers.DropPath(0.1)",
                                           inner="self.drop(self.norm(self.emb(x)))"))
        self.assertEqual(len(self.ll205("--no-cache")), 1)
        # Named alone, the training file cannot see the model's layers.
        self.write("lm.py", self.LM.format(extra="", inner="self.norm(self.emb(x))"))
        rc, out, err = run(["--format", "json", "--no-cache", os.path.join(self.dir, "train.py")])
        self.assertEqual(len([f for f in json.loads(out)["findings"] if f["rule"] == "LL205"]), 1)


class EvaluationMethodAcrossModules(Tmp):
    """LL101 one call away across modules: an evaluation loop calls a method of an imported plain
    class (a trainer, an engine) whose method runs its model attribute with grad on and never
    back-propagates. The loop is where no_grad belongs; the method's summary travels in the cache."""
    ENGINE = ("import torch\nimport torch.nn as nn\nfrom model import Net\n\n\nclass trainer():\n"
              "    def __init__(self, device):\n        self.model = Net().to(device)\n"
              "        self.optimizer = torch.optim.Adam(self.model.parameters())\n\n"
              "    def train(self, input, real):\n        self.model.train()\n        self.optimizer.zero_grad()\n"
              "        loss = nn.functional.l1_loss(self.model(input), real)\n        loss.backward()\n"
              "        self.optimizer.step()\n        return loss.item()\n\n"
              "    def {name}(self, input, real):\n{body}")
    EVAL = ("        self.model.eval()\n        output = self.model(input)\n"
            "        return nn.functional.l1_loss(output, real).item()\n")
    MODEL = ("import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
             "        self.fc = nn.Conv2d(2, 12, 1)\n\n    def forward(self, x):\n        return self.fc(x)\n")
    TRAIN = ("import torch\nfrom engine import trainer\n\n\ndef main(dataloader, epochs):\n"
             "    device = torch.device('cuda')\n    engine = trainer(device)\n    for i in range(epochs):\n"
             "        for x, y in dataloader['train_loader']:\n            engine.train(x.to(device), y.to(device))\n"
             "        for x, y in {loop}:\n            m = engine.{name}(x.to(device), y.to(device))\n"
             "        print(m)\n\n\nif __name__ == '__main__':\n    main(None, 10)\n")

    def ll101(self, *extra):
        rc, out, err = run(["--format", "json", *extra, self.dir])
        return [(os.path.basename(f["path"]), f["line"], f["message"][:60]) for f in json.loads(out)["findings"]
                if f["rule"] == "LL101"]

    def test_evaluation_method_of_an_imported_trainer(self):
        self.write("model.py", self.MODEL)
        self.write("engine.py", self.ENGINE.format(name="eval", body=self.EVAL))
        self.write("train.py", self.TRAIN.format(loop="dataloader['val_loader']", name="eval"))
        for extra in (("--no-cache",), (), ()):   # uncached, cold, warm: the method's summary is cached
            self.assertEqual(self.ll101(*extra),
                             [("train.py", 12, "forward of `engine.model` in `trainer.eval()` runs with auto")])
        # The loop's data says nothing, but the method switches its model to eval mode itself.
        self.write("train.py", self.TRAIN.format(loop="batches", name="eval"))
        self.assertEqual(len(self.ll101("--no-cache")), 1)

    def test_a_wrappers_own_eval_called_on_the_object(self):
        # A plain wrapper with its own `eval()` (a switch of the network it holds), `load_model()`
        # and `inference()`; a benchmark of another module calls `model.eval()`, then
        # `model.inference(...)` over a test set: the evaluation loop of `model.flownet`.
        self.write("model.py", self.MODEL)
        self.write("wrapper.py", "import torch\nfrom model import Net\n\n\nclass Model:\n"
                   "    def __init__(self):\n        self.flownet = Net().cuda()\n\n"
                   "    def eval(self):\n        self.flownet.eval()\n\n"
                   "    def load_model(self, path):\n        self.flownet.load_state_dict(torch.load(path))\n\n"
                   "    def inference(self, a, b):\n        return self.flownet(torch.cat((a, b), 1))\n")
        bench = ("import torch\nfrom wrapper import Model\n\nmodel = Model()\nmodel.load_model('w.pkl')\n{eval}"
                 "scores = []\nfor name in open('list.txt').read().split():\n"
                 "    i0, i2 = torch.load(name).cuda(), torch.load(name + '2').cuda()\n"
                 "    scores.append(model.inference(i0, i2).mean().item())\nprint(scores)\n")
        self.write("bench.py", bench.format(eval="model.eval()\n"))
        self.assertEqual(self.ll101("--no-cache"),
                         [("bench.py", 10, "forward of `model.flownet` in `Model.inference()` runs with ")])
        # Without the switch, nothing says the loop only evaluates.
        self.write("bench.py", bench.format(eval=""))
        self.assertEqual(self.ll101("--no-cache"), [])

    def test_silent_where_the_method_or_the_loop_says_otherwise(self):
        self.write("model.py", self.MODEL)
        # Grad off in the method, or a method that back-propagates: nothing to add.
        self.write("engine.py", self.ENGINE.format(name="eval", body="        with torch.no_grad():\n" +
                                                   "".join("    " + l + "\n" for l in self.EVAL.splitlines())))
        self.write("train.py", self.TRAIN.format(loop="dataloader['val_loader']", name="eval"))
        self.assertEqual(self.ll101("--no-cache"), [])
        self.write("engine.py", self.ENGINE.format(name="eval", body=self.EVAL))
        # The loop trains through another method of the object: no evidence it only evaluates.
        self.write("train.py", self.TRAIN.format(loop="batches", name="eval").replace(
            "            m = engine.eval(", "            engine.train(x, y)\n            m = engine.eval("))
        self.assertEqual(self.ll101("--no-cache"), [])
        # Named alone, the caller cannot see the method.
        rc, out, err = run(["--format", "json", "--no-cache", os.path.join(self.dir, "train.py")])
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL101"], [])


    def test_silent_where_the_method_asks_for_gradients_of_its_input(self):
        # A saliency method of another module: it switches the model to eval mode, asks for the
        # input's gradients (`image.requires_grad_()`) and hands the score to an extractor that
        # takes them in a third module. Its callers' loops (noise samples) need grad on.
        self.write("model.py", self.MODEL)
        method = ("        self.model.eval()\n        image = input.requires_grad_()\n"
                  "        out = self.model(image)\n        return self.ext.gradients(image, out.sum())\n")
        self.write("engine.py", self.ENGINE.format(name="eval", body=method).replace(
            "        self.model = Net().to(device)\n",
            "        self.model = Net().to(device)\n        self.ext = Extractor(self.model)\n").replace(
            "from model import Net\n", "from model import Net\nfrom extractor import Extractor\n"))
        self.write("train.py", self.TRAIN.format(loop="dataloader['val_loader']", name="eval"))
        self.assertEqual(self.ll101("--no-cache"), [])
        # `x.requires_grad = True` says the same; `requires_grad_(False)` does not.
        self.write("engine.py", self.ENGINE.format(name="eval", body=method.replace(
            "image = input.requires_grad_()", "input.requires_grad = True\n        image = input")))
        self.assertEqual(self.ll101("--no-cache"), [])
        self.write("engine.py", self.ENGINE.format(name="eval", body=method.replace(
            "input.requires_grad_()", "input.requires_grad_(False)")))
        self.assertEqual(len(self.ll101("--no-cache")), 1)

    def test_function_of_another_module_handed_the_model(self):
        # `val_outputs = inference(val_inputs, model)` after `model.eval()`, the helper in a
        # module of its own; the same helper in the training loop, or under no_grad, is silent.
        self.write("utils.py", "def inference(input, model):\n    return model(input)\n")
        train = ("import torch\nfrom utils import inference\n\n\ndef train(model, train_loader, val_loader, opt):\n"
                 "    for epoch in range(10):\n        model.train()\n        for x, y in train_loader:\n"
                 "            loss = (inference(x.cuda(), model) - y.cuda()).pow(2).mean()\n"
                 "            opt.zero_grad()\n            loss.backward()\n            opt.step()\n"
                 "        model.eval()\n{guard}        for x, y in val_loader:\n"
                 "        {pad}    print(inference(x.cuda(), model).mean().item())\n")
        self.write("train.py", train.format(guard="", pad=""))
        for extra in (("--no-cache",), (), ()):
            self.assertEqual(self.ll101(*extra),
                             [("train.py", 15, "forward of `model` in `inference()` runs with autograd enabl")])
        self.write("train.py", train.format(guard="        with torch.no_grad():\n", pad="    ").replace(
            "        for x, y in val_loader:", "            for x, y in val_loader:"))
        self.assertEqual(self.ll101("--no-cache"), [])
        # A model whose parameters were switched off records no graph through a helper either,
        # nor through an object built around it.
        self.write("train.py", train.format(guard="", pad="").replace("        model.eval()\n",
                                                                       "        model.eval()\n        model.requires_grad_(False)\n"))
        self.assertEqual(self.ll101("--no-cache"), [])
        # A helper that rebinds its parameter runs something else.
        self.write("utils.py", "def inference(input, model):\n    model = model.module\n    return model(input)\n")
        self.write("train.py", train.format(guard="", pad=""))
        self.assertEqual(self.ll101("--no-cache"), [])


class TestHelpersCalledFromAnotherModule(Tmp):
    """A `test_*` function that another module's program calls (`from test_util import
    test_single_case` in an evaluation script) is a helper of that program, not a test pytest
    collects; nor is its file, named `test_util.py`, test code for it. Only pytest calls tests."""
    UTIL = ("import torch\n\n\ndef test_single_case(net, image, patches):\n    out = []\n"
            "    for p in patches:\n        out.append(net(image[p]).argmax(1))\n    return out\n")
    NET = ("import torch\n\n\nclass VNet(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.conv = torch.nn.Conv3d(1, 2, 3)\n\n    def forward(self, x):\n        return self.conv(x)\n")
    SCRIPT = ("import torch\nfrom networks import VNet\n{imp}\n\n\ndef main():\n    net = VNet().cuda()\n"
              "    net.load_state_dict(torch.load('best.pth'))\n    net.eval()\n"
              "    image = torch.randn(40, 1, 64, 64, 64).cuda()\n    {call}\n\n\n"
              "if __name__ == '__main__':\n    main()\n")

    def ll101(self, *extra):
        rc, out, err = run(["--format", "json", *extra, self.dir])
        return [(os.path.basename(f["path"]), f["line"], bool(f.get("low_confidence")))
                for f in json.loads(out)["findings"] if f["rule"] == "LL101"]

    def test_a_test_function_another_module_calls_is_an_evaluation_helper(self):
        self.write("networks.py", self.NET)
        self.write("test_util.py", self.UTIL)
        self.write("test_LA.py", self.SCRIPT.format(imp="from test_util import test_single_case",
                                                    call="print(test_single_case(net, image, range(40)))"))
        for extra in (("--no-cache",), (), ()):   # uncached, cold, warm
            self.assertEqual(self.ll101("--show-low-confidence", *extra), [("test_util.py", 7, False)])

    def test_an_uncalled_test_function_stays_a_test(self):
        self.write("networks.py", self.NET)
        self.write("test_util.py", self.UTIL)
        self.write("test_LA.py", self.SCRIPT.format(imp="import test_util", call="print(net(image).shape)"))
        self.assertEqual([f for f in self.ll101("--show-low-confidence", "--no-cache") if f[0] == "test_util.py"], [])


class FrozenByAFunctionOfAnotherModule(Tmp):
    """A model frozen by a function of another module of the project (the fine-tuning tutorial's
    `set_parameter_requires_grad(model, feature_extract)` in utils.py) records no graph: its
    forward is neither an evaluation nor a kept history. The function's summary travels in the
    cache; a function that also switches the parameters back on freezes nothing."""
    UTILS = ("def set_parameter_requires_grad(model, feature_extracting):\n    if feature_extracting:\n"
             "        for param in model.parameters():\n            param.requires_grad = False\n{extra}")
    MAIN = ("import torch\nimport torchvision\n\nfrom utils import set_parameter_requires_grad\n\n"
            "model = torchvision.models.resnet18(pretrained=True).cuda()\n{freeze}features = []\n"
            "for images, _ in torch.utils.data.DataLoader(dataset, batch_size=64):\n"
            "    features.append(model(images.cuda()).cpu())\n")

    def rules(self, *extra):
        rc, out, err = run(["--format", "json", *extra, self.dir])
        return sorted({f["rule"] for f in json.loads(out)["findings"]})

    def test_frozen_through_an_imported_function(self):
        self.write("utils.py", self.UTILS.format(extra=""))
        self.write("extract.py", self.MAIN.format(freeze="set_parameter_requires_grad(model, True)\n"))
        for extra in (("--no-cache",), (), ()):  # uncached, cold, warm
            self.assertEqual(self.rules(*extra), [])

    def test_not_frozen_without_the_call_or_when_switched_back_on(self):
        self.write("utils.py", self.UTILS.format(extra=""))
        self.write("extract.py", self.MAIN.format(freeze=""))
        self.assertEqual(self.rules("--no-cache"), ["LL102"])
        self.write("utils.py", self.UTILS.format(extra="    for param in model.parameters():\n"
                                                       "        param.requires_grad = True\n"))
        self.write("extract.py", self.MAIN.format(freeze="set_parameter_requires_grad(model, True)\n"))
        self.assertEqual(self.rules("--no-cache"), ["LL102"])

    def test_frozen_by_a_function_that_takes_the_switch_as_a_flag(self):
        # `set_requires_grad(nets, requires_grad=False)` sets each parameter's switch to its
        # flag: a call passing False (or leaving out the False default) freezes the model, one
        # passing True or a value the file cannot read does not. The form travels in the cache.
        self.write("utils.py", "def set_requires_grad(nets, requires_grad={default}):\n"
                   "    if not isinstance(nets, list):\n        nets = [nets]\n    for net in nets:\n"
                   "        for param in net.parameters():\n            param.requires_grad = requires_grad\n"
                   .format(default="False"))
        MAIN = self.MAIN.replace("set_parameter_requires_grad", "set_requires_grad")
        for call in ("set_requires_grad(model, False)\n", "set_requires_grad([model], requires_grad=False)\n",
                     "set_requires_grad(model)\n"):
            self.write("extract.py", MAIN.format(freeze=call))
            for extra in (("--no-cache",), (), ()):
                self.assertEqual(self.rules(*extra), [], call)
        for call in ("set_requires_grad(model, True)\n", "set_requires_grad(model, trainable)\n"):
            self.write("extract.py", MAIN.format(freeze=call))
            for extra in (("--no-cache",), (), ()):
                self.assertEqual(self.rules(*extra), ["LL102"], call)
        self.write("utils.py", "def set_requires_grad(net, requires_grad=True):\n    net.requires_grad_(requires_grad)\n")
        self.write("extract.py", MAIN.format(freeze="set_requires_grad(model)\n"))
        self.assertEqual(self.rules("--no-cache"), ["LL102"])
        self.write("extract.py", MAIN.format(freeze="set_requires_grad(model, requires_grad=False)\n"))
        self.assertEqual(self.rules("--no-cache"), [])

    def test_not_frozen_when_the_call_switches_the_flag_off(self):
        # The helper freezes only under `if feature_extracting:`; the call passes it off.
        self.write("utils.py", self.UTILS.format(extra=""))
        for call in ("set_parameter_requires_grad(model, False)\n",
                     "set_parameter_requires_grad(model, feature_extracting=None)\n"):
            self.write("extract.py", self.MAIN.format(freeze=call))
            for extra in (("--no-cache",), (), ()):  # the flag's position travels in the cache
                self.assertEqual(self.rules(*extra), ["LL102"], call)


class MethodKeepingHistoryCalledAcrossModules(Tmp):
    """LL102 once per batch across modules: a method that keeps a value with autograd history on
    its object (`self.losses.append(loss)`) is called in a loop of another module on an instance
    of its class. The loop runs once per batch by that module's facts, or the method trains (one
    step per call); a loop that also calls a method resetting the attribute keeps nothing."""
    AGENT = ("import torch\nimport torch.nn as nn\n\n\nclass Agent:\n    def __init__(self, n):\n"
             "        self.net = nn.Linear(n, 2).cuda()\n        self.optimizer = torch.optim.Adam(self.net.parameters())\n"
             "        self.losses = []\n\n    def reset(self):\n        self.losses = []\n\n"
             "    def update(self, obs, target):\n        loss = nn.functional.mse_loss(self.net(obs), target)\n"
             "        self.optimizer.zero_grad()\n        loss.backward()\n        self.optimizer.step()\n"
             "        self.losses.append({kept})\n")
    MAIN = ("from agent import Agent\n\n\ndef run(env, steps):\n    agent = Agent(4)\n    obs = env.reset()\n"
            "    for t in range(steps):\n        obs, target = env.step(0)\n        agent.update(obs, target)\n{extra}")

    def ll102(self, *extra):
        rc, out, err = run(["--format", "json", *extra, self.dir])
        return [(os.path.basename(f["path"]), f["line"], f["message"]) for f in json.loads(out)["findings"]
                if f["rule"] == "LL102"]

    def test_training_method_called_in_another_modules_loop(self):
        self.write("agent.py", self.AGENT.format(kept="loss"))
        self.write("main.py", self.MAIN.format(extra=""))
        for extra in (("--no-cache",), (), ()):   # uncached, cold, warm
            found = self.ll102(*extra)
            self.assertEqual([(p, l) for p, l, _ in found], [("agent.py", 19)])
            self.assertIn("once per batch (in a loop of", found[0][2])

    def test_silent_on_numbers_resets_and_lone_files(self):
        self.write("agent.py", self.AGENT.format(kept="loss.item()"))
        self.write("main.py", self.MAIN.format(extra=""))
        self.assertEqual(self.ll102("--no-cache"), [])
        self.write("agent.py", self.AGENT.format(kept="loss"))
        # The loop also resets what the method keeps.
        self.write("main.py", self.MAIN.format(extra="        agent.reset()\n"))
        self.assertEqual(self.ll102("--no-cache"), [])
        # Named alone, the defining module knows no caller.
        self.write("main.py", self.MAIN.format(extra=""))
        rc, out, err = run(["--format", "json", "--no-cache", os.path.join(self.dir, "agent.py")])
        self.assertEqual([f for f in json.loads(out)["findings"] if f["rule"] == "LL102"], [])
        # The caller's loop reads (and clears) what the method keeps: REINFORCE's saved
        # log-probabilities, back-propagated by the episode loop itself.
        self.write("main.py", self.MAIN.format(extra="        print(len(agent.losses))\n"))
        self.assertEqual(self.ll102("--no-cache"), [])


class LinearProbeAcrossModules(Tmp):
    """A linear probe's class defined in another module of the run (`from model import
    LogisticRegression`, one nn.Linear in its forward) is one linear layer: its evaluation with
    grad on keeps nothing beyond the output (LL101 weak). A probe with a hidden layer, or the
    file named alone (the class unseen), keeps the full severity; the fact travels in the cache."""
    MODEL = ("import torch\n\n\nclass LogisticRegression(torch.nn.Module):\n    def __init__(self, d, k):\n"
             "        super().__init__()\n        self.linear = torch.nn.Linear(d, k)\n\n    def forward(self, x):\n"
             "        return self.linear(x)\n\n\nclass Mlp(torch.nn.Module):\n    def __init__(self, d, k):\n"
             "        super().__init__()\n        self.net = torch.nn.Sequential(torch.nn.Linear(d, 64), torch.nn.ReLU(), torch.nn.Linear(64, k))\n\n"
             "    def forward(self, x):\n        return self.net(x)\n")
    RUN = ("import torch\nfrom model import {cls}\n\ndevice = 'cuda'\nprobe = {cls}(512, 10)\nprobe = probe.to(device)\n"
           "probe.eval()\nhits = 0\nfor feats, y in test_loader:\n    logits = probe(feats.to(device))\n"
           "    hits += (logits.argmax(1) == y.to(device)).sum().item()\n")

    def ll101(self, *args):
        rc, out, err = run(["--format", "json", *args])
        return [(os.path.basename(f["path"]), f["line"], f["severity"]) for f in json.loads(out)["findings"] if f["rule"] == "LL101"]

    def test_a_probe_class_of_another_module_is_one_linear_layer(self):
        self.write("model.py", self.MODEL)
        self.write("run.py", self.RUN.format(cls="LogisticRegression"))
        for extra in (("--no-cache",), (), ()):   # uncached, cold, warm
            self.assertEqual(self.ll101(*extra, self.dir), [("run.py", 10, "note")])
        self.assertEqual(self.ll101("--no-cache", os.path.join(self.dir, "run.py")), [("run.py", 10, "warning")])
        self.write("run.py", self.RUN.format(cls="Mlp"))
        self.assertEqual(self.ll101("--no-cache", self.dir), [("run.py", 10, "warning")])


class OomHandlerSeverity(Tmp):
    """LL304 reports at full severity a retry that only an out-of-memory error reaches, even in a
    broad `except Exception`: after `if not isinstance(e, torch.cuda.OutOfMemoryError): raise`, or
    inside `if isinstance(e, ...)`. (Fixture files sit under tests/, which is test code: weak there.)"""
    def test_retries_that_only_an_oom_error_reaches_are_full(self):
        fixtures = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "LL304")
        with open(os.path.join(fixtures, "bad_oom_retry_after_other_errors_are_reraised.py")) as fh:
            self.write("retry.py", fh.read())
        rc, out, err = run(["--format", "json", "--no-cache", self.dir])
        found = [(f["line"], f["severity"]) for f in json.loads(out)["findings"] if f["rule"] == "LL304"]
        self.assertEqual(found, [(14, "warning"), (23, "warning"), (32, "warning")])


class InheritedSelfCalls(Tmp):
    """A base class that calls `self.eval_step(batch)` under no_grad runs a subclass's override
    with grad disabled, also when the subclass lives in another module (a framework's agent and
    the generator agent that overrides its step). Calls from a method of the same name
    (`super().eval_step(batch)` in another override) run in that method's mode, so they do not
    decide it."""
    BASE = ("import torch\n\n\nclass Agent:\n    def __init__(self, model):\n        self.model = model.cuda()\n\n"
            "    def batch_act(self, batch):\n        if self.training:\n            return self.train_step(batch)\n"
            "        with torch.no_grad():\n            return self.eval_step(batch)\n\n"
            "    def eval_step(self, batch):\n        raise NotImplementedError\n")
    GEN = ("import torch\nfrom base import {base}\n\n\nclass Generator({base}):\n    def eval_step(self, batch):\n"
           "        self.model.eval()\n        outs = []\n        for x in batch:\n"
           "            outs.append(self.model(x.cuda()).argmax(-1))\n        return outs\n")

    def ll101(self, *extra, path=None):
        rc, out, err = run(["--format", "json", *extra, path or self.dir])
        return [(os.path.basename(f["path"]), f["line"]) for f in json.loads(out)["findings"] if f["rule"] == "LL101"]

    def test_an_override_in_another_module_runs_as_the_base_calls_it(self):
        self.write("base.py", self.BASE)
        self.write("gen.py", self.GEN.format(base="Agent"))
        for extra in (("--no-cache",), (), ()):   # uncached, cold, warm: the facts travel in the cache
            self.assertEqual(self.ll101(*extra), [])
        # Named alone, nothing shows who calls it.
        self.assertEqual(self.ll101("--no-cache", path=os.path.join(self.dir, "gen.py")), [("gen.py", 10)])
        # Through a class in between, in a third module.
        self.write("mid.py", "from base import Agent\n\n\nclass Mid(Agent):\n    pass\n")
        self.write("gen.py", self.GEN.format(base="Mid").replace("from base import", "from mid import"))
        self.assertEqual(self.ll101("--no-cache"), [])
        # Another subclass's `super().eval_step(batch)` runs in its own override's mode.
        self.write("other.py", "from gen import Generator\n\n\nclass Beam(Generator):\n"
                   "    def eval_step(self, batch):\n        return super().eval_step(batch)\n")
        self.assertEqual(self.ll101("--no-cache"), [])

    def test_a_base_that_calls_it_with_grad_keeps_the_finding(self):
        self.write("base.py", self.BASE.replace("        with torch.no_grad():\n            return self.eval_step",
                                                "        return self.eval_step"))
        self.write("gen.py", self.GEN.format(base="Agent"))
        self.assertEqual(self.ll101("--no-cache"), [("gen.py", 10)])
        # A class that derives from nothing there gets nothing from it.
        self.write("base.py", self.BASE)
        self.write("gen.py", self.GEN.format(base="Agent").replace("class Generator(Agent)", "class Generator(object)"))
        self.assertEqual(self.ll101("--no-cache"), [("gen.py", 10)])


class ReviewedHiddenLeaks(Tmp):
    """Defects an attacker's review found in the cross-module facts and the helper-module policy:
    each case hid a real leak (a weak or missing finding). Each tree is written out and scanned
    whole; the findings (file, line, severity) must be as listed."""
    CASES = {
        "ll301e": {
                "nets.py": "import torch.nn as nn\nimport torchvision\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.body = torchvision.models.resnet152()\n\n    def forward(self, x):\n        return self.body(x)\n",
                "sweep.py": "import torch\nfrom nets import Net\n\n\ndef sweep(paths, loader):\n    for p in paths:\n        model = Net().cuda()\n        model.load_state_dict(torch.load(p, map_location=\"cuda\"))\n        print(sum(model(x.cuda()).sum().item() for x in loader))\n",
                "old/nets.py": "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(10, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n"
        },
        "ll301d": {
                "sweep.py": "import torch\nimport torchvision\nfrom utils import train\n\n\ndef sweep(paths, loader):\n    for p in paths:\n        model = torchvision.models.resnet152().cuda()\n        model.load_state_dict(torch.load(p, map_location=\"cuda\"))\n        print(train(model, loader))\n",
                "utils.py": "import torch\n\n\ndef train(model, loader):\n    model.eval()\n    with torch.no_grad():\n        return sum(model(x.cuda()).sum().item() for x in loader)\n",
                "old/utils.py": "import torch\n\n\ndef train(model, loader):\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    for x, y in loader:\n        opt.zero_grad()\n        torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).backward()\n        opt.step()\n"
        },
        "ll301c": {
                "nets.py": "import torch\nimport torch.nn as nn\n\n\nclass Backbone(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.body = nn.Sequential(*[nn.Linear(4096, 4096) for _ in range(8)])\n\n    def forward(self, x):\n        return self.body(x)\n\n",
                "sweep.py": "import torch\nimport torch.nn as nn\nfrom nets import Backbone\n\n\nclass Classifier(Backbone):\n    def __init__(self, num_classes=10):\n        super().__init__()\n        self.head = nn.Linear(4096, num_classes)\n\n    def forward(self, x):\n        return self.head(super().forward(x))\n\n\ndef sweep(paths, loader):\n    for p in paths:\n        model = Classifier().cuda()\n        model.load_state_dict(torch.load(p, map_location=\"cuda\"))\n        print(sum(model(x.cuda()).sum().item() for x in loader))\n"
        },
        "inh": {
                "gen.py": "import torch\nfrom base import Agent\n\n\nclass Generator(Agent):\n    def eval_step(self, batch):\n        return self.model(batch.cuda()).argmax(-1)\n\n\nclass Scorer:\n    def __init__(self, model):\n        self.model = model.cuda()\n\n    def eval_step(self, batch):\n        self.model.eval()\n        outs = []\n        for x in batch:\n            outs.append(self.model(x.cuda()).argmax(-1))\n        return outs\n",
                "base.py": "import torch\n\n\nclass Agent:\n    def __init__(self, model):\n        self.model = model.cuda()\n\n    def batch_act(self, batch):\n        with torch.no_grad():\n            return self.eval_step(batch)\n\n    def eval_step(self, batch):\n        raise NotImplementedError\n",
                "main.py": "import torch\nfrom gen import Scorer\n\nif __name__ == \"__main__\":\n    print(Scorer(torch.nn.Linear(3, 3)).eval_step([torch.ones(3)]))\n"
        },
        "ns": {
                "gen.py": "import torch\n\n\nclass Generator:\n    def __init__(self, model):\n        self.model = model.cuda()\n\n    def eval_step(self, batch):\n        self.model.eval()\n        outs = []\n        for x in batch:\n            outs.append(self.model(x.cuda()).argmax(-1))\n        return outs\n",
                "main.py": "import torch\nfrom gen import Generator\nfrom wrapper import Wrapper\n\nif __name__ == \"__main__\":\n    print(Wrapper(Generator(torch.nn.Linear(3, 3))).run([[torch.ones(3)]]))\n",
                "wrapper.py": "class Wrapper:\n    def __init__(self, inner):\n        self.inner = inner\n\n    def eval_step(self, batch):\n        return self.inner.eval_step(batch)\n\n    def run(self, loader):\n        return [self.eval_step(b) for b in loader]\n",
                "other.py": "import torch\n\n\ndef score(agent, loader):\n    with torch.no_grad():\n        return [agent.eval_step(b) for b in loader]\n"
        },
        "h_registry": {
                "main.py": "import sys\nimport torch\nimport lib\n\nif __name__ == \"__main__\":\n    model = torch.nn.Linear(2, 2).cuda()\n    print(lib.TASKS[sys.argv[1]](model, []))\n",
                "lib.py": "import torch\n\nTASKS = {}\n\n\ndef register(fn):\n    TASKS[fn.__name__] = fn\n    return fn\n\n\ndef _evaluate(model, loader):\n    model.eval()\n    return [model(x.cuda()).argmax(1) for x in loader]\n\n\n@register\ndef classify(model, loader):\n    return _evaluate(model, loader)\n"
        },
        "h_globals": {
                "main.py": "import sys\nimport torch\nimport lib\n\nif __name__ == \"__main__\":\n    model = torch.nn.Linear(2, 2).cuda()\n    print(lib.dispatch(sys.argv[1], model, []))\n",
                "lib.py": "import torch\n\n\ndef run_predict(model, loader):\n    model.eval()\n    return [model(x.cuda()).argmax(1) for x in loader]\n\n\ndef run_score(model, loader):\n    model.eval()\n    return [model(x.cuda()).sum() for x in loader]\n\n\ndef dispatch(mode, model, loader):\n    return globals()[\"run_\" + mode](model, loader)\n"
        },
        "h_sysmod": {
                "main.py": "import sys\nimport torch\nimport lib\n\nif __name__ == \"__main__\":\n    model = torch.nn.Linear(2, 2).cuda()\n    print(lib.dispatch(sys.argv[1], model, []))\n",
                "lib.py": "import sys\nimport torch\n\n\ndef run_predict(model, loader):\n    model.eval()\n    return [model(x.cuda()).argmax(1) for x in loader]\n\n\ndef run_score(model, loader):\n    model.eval()\n    return [model(x.cuda()).sum() for x in loader]\n\n\ndef dispatch(mode, model, loader):\n    return getattr(sys.modules[__name__], \"run_\" + mode)(model, loader)\n"
        },
        "h_entry": {
                "demo.py": "import torch\nimport lib\n\nif __name__ == \"__main__\":\n    print(lib.helper_value(), torch.ones(1))\n",
                "setup.py": "from setuptools import setup\n\nsetup(\n    name=\"lib\",\n    py_modules=[\"lib\"],\n    entry_points={\"console_scripts\": [\"lib-predict = lib:main\"]},\n)\n",
                "lib.py": "import sys\nimport torch\n\n\ndef main():\n    model = torch.nn.Sequential(torch.nn.Conv1d(2, 8, 1), torch.nn.ReLU(), torch.nn.Conv1d(8, 2, 1)).cuda()\n    model.eval()\n    return [model(torch.load(p).cuda()).argmax(1) for p in sys.argv[1:]]\n\n\ndef helper_value():\n    return 3\n"
        }
}

    def findings(self, name, extra_files=None):
        d = os.path.join(self.dir, name)
        for rel, text in dict(self.CASES.get(name, {}), **(extra_files or {})).items():
            self.write(os.path.join(name, rel), text)
        rc, out, err = run(["--format", "json", "--no-cache", d])
        return sorted((os.path.relpath(f["path"], d), f["line"], f["severity"]) for f in json.loads(out)["findings"])

    def test_ll301_size_and_trainer_come_from_the_module_python_imports(self):
        # (Line 9: LL101, each checkpoint's weights scored over the loader with grad on.)
        self.assertEqual(self.findings('ll301e'), [('sweep.py', 7, 'warning'), ('sweep.py', 9, 'warning')])
        self.assertEqual(self.findings('ll301d'), [('sweep.py', 8, 'warning')])

    def test_ll301_layers_of_a_base_class_are_not_visible(self):
        # (Line 19: LL101, as in ll301e.)
        self.assertEqual(self.findings('ll301c'), [('sweep.py', 17, 'warning'), ('sweep.py', 19, 'warning')])

    def test_inherited_calls_on_self_decide_per_class(self):
        self.assertEqual(self.findings('inh'), [('gen.py', 18, 'warning')])

    def test_a_namesake_whose_own_mode_is_known_counts(self):
        self.assertEqual(self.findings('ns'), [('gen.py', 12, 'warning')])

    def test_a_helper_function_reached_from_a_registered_one_is_live(self):
        self.assertEqual(self.findings('h_registry'), [('lib.py', 13, 'warning')])

    def test_a_helper_that_dispatches_by_a_computed_name_is_live(self):
        self.assertEqual(self.findings('h_globals'), [('lib.py', 6, 'warning'), ('lib.py', 11, 'warning')])
        self.assertEqual(self.findings('h_sysmod'), [('lib.py', 7, 'warning'), ('lib.py', 12, 'warning')])

    def test_an_append_of_a_class_of_another_module_that_keeps_its_argument_stays_an_error(self):
        # `history = LossHistory()` from the project's utils.py, whose `append` keeps the value in
        # a list: the class is shown in the run, so the finding keeps its severity. A class the
        # run does not show (a library's metric) is weak (a warning, marked low-confidence).
        utils = "class LossHistory:\n    def __init__(self):\n        self.values = []\n\n    def append(self, v):\n        self.values.append(v)\n"
        train = ("import torch\nfrom utils import LossHistory\nfrom metrics import RunningMean\n\n\n"
                 "def train(model, loader, opt, criterion):\n    history = HOLDER\n    for x, y in loader:\n"
                 "        opt.zero_grad()\n        loss = criterion(model(x.cuda()), y.cuda())\n        loss.backward()\n"
                 "        opt.step()\n        history.append(loss)\n    return history\n")
        self.assertEqual(self.findings("keeps", {"utils.py": utils, "train.py": train.replace("HOLDER", "LossHistory()")}),
                         [("train.py", 13, "error")])
        self.assertEqual(self.findings("unseen", {"utils.py": utils, "train.py": train.replace("HOLDER", "RunningMean()")}),
                         [("train.py", 13, "warning")])

    def test_a_module_installed_by_a_setup_py_beside_it_is_an_interface(self):
        self.assertEqual(self.findings('h_entry'), [('lib.py', 8, 'warning')])

    def test_a_helper_module_handed_on_as_a_value_is_live(self):
        lib = 'import torch\n\n\ndef run_predict(model, loader):\n    model.eval()\n    return [model(x.cuda()).argmax(1) for x in loader]\n\n\ndef run_score(model, loader):\n    model.eval()\n    return [model(x.cuda()).sum() for x in loader]\n'
        main = "import sys\nimport fire\nimport torch\nimport lib\n\nif __name__ == \"__main__\":\n    CALL\n"
        for i, call in enumerate(("fire.Fire(lib)", "vars(lib)[sys.argv[1]](None, [])", "print(dir(lib))")):
            self.assertEqual(self.findings(f"alias{i}", {"lib.py": lib, "main.py": main.replace("CALL", call)}),
                             [("lib.py", 6, "warning"), ("lib.py", 11, "warning")])
        # Read only through its attributes, the same helper's unnamed functions are dead.
        self.assertEqual(self.findings("attr", {"lib.py": lib, "main.py": main.replace("CALL", "print(lib.run_score(None, []))")}),
                         [("lib.py", 6, "note"), ("lib.py", 11, "warning")])

    def test_a_helper_function_called_by_one_a_program_imports_by_name_is_live(self):
        # `from lib import run` in the program: `run` is credited to lib, and what `run` calls
        # (`train(...)` inside lib) is reached through it, not "called by nothing".
        lib = ('import torch\n\n\ndef train(model, loader, opt):\n    losses = []\n    for x, y in loader:\n'
               '        opt.zero_grad()\n        loss = (model(x.cuda()) - y.cuda()).pow(2).mean()\n'
               '        loss.backward()\n        opt.step()\n        losses.append(loss)\n    return losses\n\n\n'
               'def run(model, loader, opt, epochs):\n    for _ in range(epochs):\n        train(model, loader, opt)\n')
        main = ("import torch\nfrom lib import run\n\nif __name__ == \"__main__\":\n"
                "    model = torch.nn.Linear(2, 2).cuda()\n    run(model, [], torch.optim.SGD(model.parameters(), 0.1), 3)\n")
        self.assertEqual(self.findings("imported", {"lib.py": lib, "main.py": main}), [("lib.py", 11, "error")])
        # With the program importing another of its functions, both are dead.
        self.assertEqual(self.findings("dead", {"lib.py": lib + "\n\ndef version():\n    return 1\n",
                                               "main.py": main.replace("import run", "import version")
                                               .replace("    run(", "    print(version(), ")}),
                         [("lib.py", 11, "warning")])  # (weak: a warning, not an error)

    def test_a_loss_object_of_another_module_that_back_propagates_trains_the_program(self):
        # `loss_func = SimpleLossCompute(...)` from the project's utils, whose `__call__` runs
        # `loss.backward()` and the optimizer step and hands back `loss.item() * norm`: the
        # notebook trains (no "never back-propagates" for its loop, though it loads weights
        # later), and the sum of what the object returns is weak, not an error.
        utils = ("import torch\n\n\nclass SimpleLossCompute:\n    def __init__(self, generator, criterion, opt=None):\n"
                 "        self.generator = generator\n        self.criterion = criterion\n        self.opt = opt\n\n"
                 "    def __call__(self, x, y, norm):\n        x = self.generator(x)\n"
                 "        loss = self.criterion(x.view(-1, x.size(-1)), y.view(-1)) / norm\n        loss.backward()\n"
                 "        if self.opt is not None:\n            self.opt.step()\n            self.opt.zero_grad()\n"
                 "        return loss.data.item() * norm.float()\n")
        train = ("import torch\nfrom utils import SimpleLossCompute\n\n"
                 "model = torch.load('transformer.pt').cuda()\n"
                 "loss_func = SimpleLossCompute(model.generator, torch.nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters()))\n"
                 "for epoch in range(10):\n    tloss = 0\n    for src, tgt, y, ntokens in loader:\n"
                 "        out = model(src.cuda(), tgt.cuda())\n        loss = loss_func(out, y.cuda(), ntokens)\n"
                 "        tloss += loss\n    print(epoch, tloss)\n")
        self.assertEqual(self.findings("lossobj", {"utils.py": utils, "train.py": train}), [("train.py", 11, "warning")])
        # Alone (its class unseen), the same program is an inference program with an error sum.
        self.assertEqual(self.findings("alone", {"train.py": train}),
                         [("train.py", 9, "warning"), ("train.py", 11, "error")])
        # The class brought by a star import (`from utils import *`), as a tutorial's notebook
        # takes it: the same facts. A class of that name defined in the file itself is its own.
        star = train.replace("from utils import SimpleLossCompute", "from utils import *")
        self.assertEqual(self.findings("star", {"utils.py": utils, "train.py": star}), [("train.py", 11, "warning")])
        # Through a module that star-imports the defining one (`from model import *`, where
        # model.py does `from utils import *`).
        via = star.replace("from utils import *", "from model import *")
        self.assertEqual(self.findings("via", {"utils.py": utils, "model.py": "from utils import *\n", "train.py": via}),
                         [("train.py", 11, "warning")])
        own = star.replace("\nmodel = ", "\nclass SimpleLossCompute:\n    pass\n\nmodel = ")
        self.assertIn(("train.py", 14, "error"), self.findings("own", {"utils.py": utils, "train.py": own}))

    def test_fix_keeps_a_methods_decision_apart_from_a_helper_function_of_the_same_name(self):
        # A dead helper function `evaluate` and a live method `Runner.evaluate`: the fix loop's
        # re-lint must not hide the method's finding that the plain run reports.
        files = {
            "main.py": "import torch\nimport lib\n\nif __name__ == \"__main__\":\n    model = torch.nn.Linear(2, 2).cuda()\n    print(lib.Runner, lib.predict(model, []))\n",
            "lib.py": "import torch\n\n\nclass Runner:\n    def evaluate(self, model, x):\n        try:\n            return model(x)\n        except torch.cuda.OutOfMemoryError:\n            return model(x)\n\n\ndef evaluate(model, loader):\n    model.eval()\n    return [model(x.cuda()).sum() for x in loader]\n\n\ndef use_runner(model, x):\n    return Runner().evaluate(model, x)\n\n\ndef predict(model, loader):\n    model.eval()\n    return [model(x.cuda()).argmax(1) for x in loader]\n"
}
        for rel, text in files.items():
            self.write(rel, text)
        p = subprocess.run([BIN, "--fix", "--unsafe-fixes", "--no-cache", "--format", "json", self.dir],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual([(f["rule"], f["line"], f["severity"]) for f in json.loads(p.stdout)["findings"]],
                         [("LL304", 9, "warning")])


class Relevance(Tmp):
    LOOP = ("\n\ndef validate(model, val_loader):\n    outs = []\n    for x in val_loader:\n"
            "        outs.append(model(x).argmax(-1))\n    return outs\n")

    def findings_by_file(self, extra=()):
        rc, out, err = run(["--format", "json", *extra, self.dir])
        by = {}
        for f in json.loads(out)["findings"]:
            by.setdefault(os.path.relpath(f["path"], self.dir), set()).add(f["rule"])
        return by

    def test_torch_reached_through_project_modules_and_other_frameworks_silent(self):
        self.write("pkg/__init__.py", "")
        self.write("pkg/common.py", "import torch\nimport torch.nn as nn\n")
        self.write("pkg/evaluate.py", "from .common import *" + self.LOOP)        # star import of a torch module
        self.write("pkg/chain.py", "from pkg import evaluate" + self.LOOP)        # through evaluate -> common
        self.write("pkg/helpers.py", "from pkg.common import nn" + self.LOOP)     # a name re-exported from common
        self.write("pkg/tf_eval.py", "import tensorflow as tf" + self.LOOP)       # another framework
        self.write("pkg/plain.py", "import statistics" + self.LOOP)               # plain Python
        # Another framework's model fed by the project's torch module: not PyTorch code.
        self.write("pkg/caffe2_model.py", "from caffe2.python import workspace\nfrom pkg import common" + self.LOOP)
        self.write("pkg/direct.py", "import torch as T" + self.LOOP)              # an alias
        for extra in ((), ("--no-cache",), ()):                                   # cold, uncached, warm
            by = self.findings_by_file(extra)
            for f in ("evaluate.py", "chain.py", "helpers.py", "direct.py"):
                self.assertIn("LL101", by.get(os.path.join("pkg", f), set()), (f, by))
            for f in ("tf_eval.py", "plain.py", "common.py", "__init__.py", "caffe2_model.py"):
                self.assertNotIn(os.path.join("pkg", f), by, (f, by))

    def test_a_module_without_torch_that_runs_what_torch_code_hands_it(self):
        # `main.py` imports torch and `from utility.batch_test import *`; batch_test.py imports
        # no torch but runs the model it is handed and calls `.detach()` on its outputs (and hands
        # a scorer to a pool, which makes it the program's code, not a pytest module).
        helper = ("import multiprocessing\n\n\ndef test_one_user(x):\n    return x\n\n\n"
                  "def test(model, users):\n    pool = multiprocessing.Pool(4)\n    out = []\n"
                  "    for batch in users:\n        rating = model(batch).detach().cpu()\n"
                  "        out.extend(pool.map(test_one_user, rating))\n    return out\n")
        self.write("utility/batch_test.py", helper)
        self.write("main.py", "import torch\nfrom utility.batch_test import *\n\nmodel = torch.nn.Linear(4, 2).cuda()\n"
                   "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(10):\n"
                   "    opt.zero_grad()\n    model(torch.randn(8, 4).cuda()).sum().backward()\n    opt.step()\n"
                   "    print(test(model, [torch.randn(8, 4).cuda()]))\n")
        for extra in ((), ("--no-cache",), ()):                                   # cold, uncached, warm
            self.assertIn("LL101", self.findings_by_file(extra).get(os.path.join("utility", "batch_test.py"), set()))
        # Nothing of torch's in it: plain Python, silent; nor when no torch file imports it.
        self.write("utility/batch_test.py", helper.replace(".detach().cpu()", ".tolist()"))
        self.assertNotIn(os.path.join("utility", "batch_test.py"), self.findings_by_file(("--no-cache",)))
        self.write("utility/batch_test.py", helper)
        self.write("main.py", "import json\nfrom utility.batch_test import *\n\nprint(json.dumps(test(None, [])))\n")
        self.assertNotIn(os.path.join("utility", "batch_test.py"), self.findings_by_file(("--no-cache",)))

    def test_an_import_reaches_the_module_beside_the_importer_not_a_namesake_elsewhere(self):
        # A NumPy book chapter's `from utils import im2col` is the utils.py beside it, which
        # imports no torch; a torch project's utils.py elsewhere in the tree is not what it
        # imports. Without a module beside it, the name still reaches the one in the tree.
        self.write("book/common/utils.py", "import numpy as np\n")
        self.write("book/common/layers.py", "import numpy as np\nfrom utils import im2col" + self.LOOP)
        self.write("book/common/helpers.py", "from .utils import im2col" + self.LOOP)
        self.write("project/utils/utils.py", "import torch\n")
        for extra in ((), ("--no-cache",), ()):
            by = self.findings_by_file(extra)
            self.assertNotIn(os.path.join("book", "common", "layers.py"), by, by)
            self.assertNotIn(os.path.join("book", "common", "helpers.py"), by, by)
        os.remove(os.path.join(self.dir, "book/common/utils.py"))
        self.assertIn("LL101", self.findings_by_file(("--no-cache",)).get(os.path.join("book", "common", "layers.py"), set()))
        # A package's `__init__.py` resolves its relative imports against the package itself:
        # `from .bart import Model` there is pkg/modeling/bart.py, which brings torch to the task
        # module that imports the package.
        self.write("pkg/__init__.py", "")
        self.write("pkg/modeling/__init__.py", "from .bart import Model\n")
        self.write("pkg/modeling/bart.py", "import torch\n\n\nclass Model(torch.nn.Module):\n    pass\n")
        self.write("pkg/tasks/predict.py", "from pkg.modeling import Model" + self.LOOP)
        self.assertIn("LL101", self.findings_by_file(("--no-cache",)).get(os.path.join("pkg", "tasks", "predict.py"), set()))


    def test_cpp_kernels_and_bindings_never_reach_the_cpp_analyser(self):
        log = os.path.join(self.dir, "analysed.log")
        fake = self.write("bin/leaklint-cpp", "#!/bin/sh\nfor a in \"$@\"; do echo \"$a\" >> %s; done\nexit 3\n" % log)
        os.chmod(fake, 0o755)
        self.write("src/ops/relu_kernel.cu", "__global__ void relu_forward(const float* x, float* y, int n) {\n"
                   "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = x[i] > 0 ? x[i] : 0;\n}\n")
        self.write("src/ops/bindings.cpp", "#include <torch/extension.h>\ntorch::Tensor relu_forward_cuda(torch::Tensor x);\n"
                   "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def(\"forward\", &relu_forward_cuda); }\n")
        self.write("src/serve.cpp", "#include <torch/script.h>\nint main() {\n  auto m = torch::jit::load(\"m.pt\");\n"
                   "  for (int i = 0; i < 3; ++i) m.forward({torch::ones({1})});\n}\n")
        env = {**os.environ, "LEAKLINT_CPP": fake}
        p = subprocess.run([BIN, "--show-low-confidence", "--no-cache", "-v", os.path.join(self.dir, "src")], capture_output=True, text=True,
                           env=env, timeout=120)
        with open(log) if os.path.exists(log) else open(os.devnull) as f:
            analysed = f.read()
        self.assertIn("serve.cpp", analysed)              # a unit with a forward call goes to the analyser
        self.assertNotIn("relu_kernel.cu", analysed)      # a kernel does not
        self.assertNotIn("bindings.cpp", analysed)        # nor do Python bindings
        self.assertIn("relu_kernel.cu: skipped: nothing a C++ rule looks for", p.stderr)


    def test_without_leaklint_cpp_a_cpp_file_fails_the_run(self):
        alone = os.path.join(self.dir, "alone")
        os.makedirs(alone)
        shutil.copy(BIN, os.path.join(alone, "leaklint"))   # no leaklint-cpp beside this copy
        self.write("src/serve.cpp", "#include <torch/script.h>\nint main() {\n  auto m = torch::jit::load(\"m.pt\");\n"
                   "  m.forward({torch::ones({1})});\n}\n")
        env = {k: v for k, v in os.environ.items() if k != "LEAKLINT_CPP"}
        env["PATH"] = "/usr/bin:/bin"
        p = subprocess.run([os.path.join(alone, "leaklint"), "--show-low-confidence", "--no-cache", os.path.join(self.dir, "src")],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("needs leaklint-cpp", p.stdout)
        self.assertIn("could not be analysed", p.stdout)
        self.assertNotIn("All checks passed", p.stdout)


class StdinContract(Tmp):
    """An editor's fix-on-save: stdout is always the whole buffer, findings go to stderr."""

    SAFE = ("import torch\n\n\ndef embed(enc, bs):\n    out = []\n    for b in bs:\n"
            "        with torch.no_grad:\n            out.append(enc(b))\n    return out\n")

    def fix(self, name, text, *extra):
        p = subprocess.run([BIN, "--show-low-confidence", "--fix", *extra, "--stdin-filename", os.path.join(self.dir, name)], input=text,
                           capture_output=True, text=True, cwd=self.dir, timeout=120)
        return p.returncode, p.stdout, p.stderr

    def test_clean_buffer_comes_back_unchanged(self):
        rc, out, err = self.fix("ok.py", CLEAN)
        self.assertEqual((rc, out), (0, CLEAN), err)

    def test_safe_fix_is_applied_to_the_buffer_and_nothing_is_written(self):
        rc, out, err = self.fix("embed.py", self.SAFE)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, self.SAFE.replace("torch.no_grad:", "torch.no_grad():"))
        self.assertIn("1 fixed", err)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "embed.py")))

    def test_findings_left_go_to_stderr_and_the_buffer_to_stdout(self):
        rc, out, err = self.fix("leaky.py", LEAKY)
        self.assertEqual(rc, 1)
        self.assertEqual(out, LEAKY)            # only an unsafe fix exists: the buffer is unchanged
        self.assertIn("[LL101]", err)
        rc, out, err = self.fix("leaky.py", LEAKY, "--unsafe-fixes")
        self.assertNotEqual(out, LEAKY)
        self.assertIn("torch.no_grad()", out)

    def test_notebook_buffer_is_printed_not_written(self):
        nb = json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                    "source": self.SAFE.splitlines(keepends=True)}],
                         "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)
        rc, out, err = self.fix("nb.ipynb", nb)
        self.assertEqual(rc, 0, err)
        self.assertIn("torch.no_grad()", json.loads(out)["cells"][0]["source"][6])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "nb.ipynb")))
        rc, out, err = self.fix("nb.ipynb", nb.replace("torch.no_grad:", "torch.no_grad():"))
        self.assertEqual(out, nb.replace("torch.no_grad:", "torch.no_grad():"))


class Cache(Tmp):
    def test_results_are_cached_and_invalidated_by_content_and_config(self):
        cache = os.path.join(self.dir, "cache")
        self.write("src/a.py", LEAKY)
        src = os.path.join(self.dir, "src")
        first = run(["--cache-dir", cache, "--format", "json", src])
        self.assertTrue(os.listdir(cache))
        second = run(["--cache-dir", cache, "--format", "json", src])
        self.assertEqual(first, second)
        self.write("src/a.py", CLEAN)  # content change
        self.assertEqual(run(["--cache-dir", cache, src])[0], 0)
        self.write("src/a.py", LEAKY)
        self.assertEqual(run(["--cache-dir", cache, src])[0], 1)
        self.write("src/.leaklint.toml", "ignore = [\"LL101\"]\n")  # config change
        self.assertEqual(run(["--cache-dir", cache, src])[0], 0)

    def test_no_cache_writes_nothing(self):
        cache = os.path.join(self.dir, "cache")
        self.write("src/a.py", LEAKY)
        rc, out, err = run(["--no-cache", "--cache-dir", cache, os.path.join(self.dir, "src")])
        self.assertEqual(rc, 1, err)
        self.assertIn("[LL101]", out)
        self.assertFalse(os.path.exists(cache) and os.listdir(cache))

    def test_concurrent_runs_share_a_cache(self):
        cache = os.path.join(self.dir, "cache")
        for i in range(30):
            self.write(f"src/m{i}.py", LEAKY if i % 2 else CLEAN)
        src = os.path.join(self.dir, "src")
        procs = [subprocess.Popen([BIN, "--show-low-confidence", "--cache-dir", cache, "--format", "json", src], stdout=subprocess.PIPE,
                                  text=True) for _ in range(4)]
        outs = {p.communicate(timeout=120)[0] for p in procs}
        self.assertEqual(len(outs), 1)
        self.assertEqual(outs.pop(), run(["--no-cache", "--format", "json", src])[1])
        self.assertFalse([n for _, _, files in os.walk(cache) for n in files if n.endswith(".tmp")])

    def test_unwritable_cache_dir_is_ignored(self):
        self.write("src/a.py", LEAKY)
        self.write("file", "")
        rc, out, err = run(["--cache-dir", os.path.join(self.dir, "file", "sub"), os.path.join(self.dir, "src")])
        self.assertEqual(rc, 1)
        self.assertIn("[LL101]", out)


class Notebooks(unittest.TestCase):
    NB = None

    def setUp(self):
        self.nb = os.path.join(SRC, "tests", "notebooks", "training.ipynb")

    def test_findings_in_several_cells_with_cell_locations(self):
        rc, out, _ = run([self.nb])
        self.assertEqual(rc, 1)
        # Positions in the cells and rules; the severity follows the impact policy (a CPU-only
        # notebook lowers some), which is not what this test is about.
        self.assertRegex(out, r"training.ipynb:cell 3:5:22: (error|warning|note): .*\[LL101\]")
        self.assertRegex(out, r"training.ipynb:cell 5:7:5: (error|warning|note): .*\[LL102\]")
        self.assertRegex(out, r"training.ipynb:cell 6:1:6: error: .*\[LL104\]")

    def test_sarif_points_into_the_ipynb_file(self):
        rc, out, _ = run(["--format", "sarif", self.nb])
        lines = open(self.nb).read().split("\n")
        results = json.loads(out)["runs"][0]["results"]
        self.assertGreaterEqual(len(results), 3)
        for res in results:
            region = res["locations"][0]["physicalLocation"]["region"]
            line = lines[region["startLine"] - 1]
            start = region["startColumn"] - 1
            self.assertEqual(line[start:region["endColumn"] - 1], region["snippet"]["text"], res["ruleId"])

    def test_a_bare_forward_at_the_end_of_a_cell_keeps_its_output(self):
        # A script's bare `model(x)` keeps nothing (a warm-up); a notebook keeps the value of a
        # cell's last expression in `Out` and `_`, graph and all.
        code = ["import torch\n", "model = torch.jit.load('model.pt').cuda()\n", "x = torch.randn(8, 3, device='cuda')\n",
                "model(x)\n"]
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with open(os.path.join(d, "demo.ipynb"), "w") as fh:
            json.dump({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                  "source": code}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, fh)
        with open(os.path.join(d, "demo.py"), "w") as fh:
            fh.write("".join(code))
        rc, out, _ = run(["--no-cache", "--format", "json", d])
        found = sorted(os.path.basename(f["path"]) for f in json.loads(out)["findings"] if f["rule"] == "LL101")
        self.assertEqual(found, ["demo.ipynb"], out)

    def test_magics_are_not_syntax_errors(self):
        rc, out, _ = run(["--format", "json", self.nb])
        self.assertEqual(json.loads(out)["errors"], [])

    def test_a_line_continuing_brackets_is_python_not_a_magic(self):
        # IPython reads a magic only at the start of a logical line: `%(epoch, cost)` on the
        # line after an open `print(` is the string formatting of the call, as is a line after
        # a backslash. A `%` line after the brackets close is a magic again.
        code = ["import torch\n", "for epoch in range(3):\n", "    cost = torch.ones(1)\n",
                "    print ('Epoch: %03d | Cost: %.4f'\n", "           %(epoch, cost))\n",
                "    text = 'Epoch %d' \\\n", "        %(epoch)\n", "%matplotlib inline\n"]
        nb = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                         "source": code}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with open(os.path.join(d, "log.ipynb"), "w") as fh:
            json.dump(nb, fh)
        rc, out, _ = run(["--no-cache", "--format", "json", d])
        self.assertEqual(json.loads(out)["errors"], [], out)

    def test_spawn_in_a_notebook_is_about_its_target_not_a_main_guard(self):
        # Spawned children re-import a script's main module, never a notebook's cells: a
        # script needs the main guard. In a notebook what breaks is a target defined in a
        # cell (pickled by reference to `__main__`, which the child does not have); an
        # imported target works.
        def notebook(code):
            return {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                               "source": code}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        code = ["import torch.multiprocessing as mp\n", "\n", "def work(rank):\n", "    print(rank)\n", "\n",
                "mp.spawn(work, nprocs=2)\n"]
        imported = ["import torch.multiprocessing as mp\n", "from workers import work\n", "\n",
                    "mp.spawn(work, nprocs=2)\n"]
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        for name, text in (("spawn.ipynb", notebook(code)), ("imported.ipynb", notebook(imported))):
            with open(os.path.join(d, name), "w") as fh:
                json.dump(text, fh)
        with open(os.path.join(d, "spawn.py"), "w") as fh:
            fh.write("".join(code))
        rc, out, _ = run(["--no-cache", "--format", "json", d])
        found = {os.path.basename(f["path"]): f["message"] for f in json.loads(out)["findings"] if f["rule"] == "LL502"}
        self.assertIn("__main__", found["spawn.py"])
        self.assertIn("is defined in a cell", found["spawn.ipynb"])
        self.assertIn("move `work` into a .py module", found["spawn.ipynb"])
        self.assertNotIn("imported.ipynb", found)


class Adoption(Tmp):
    def git(self, *args):
        subprocess.run(["git", "-C", self.dir, *args], check=True, capture_output=True,
                       env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})

    def test_baseline_hides_known_findings_only(self):
        self.write("a.py", LEAKY)
        base = os.path.join(self.dir, "baseline.json")
        rc, _, err = run(["--write-baseline", base, self.dir])
        self.assertEqual(rc, 0, err)
        self.assertEqual(run(["--baseline", base, self.dir])[0], 0)
        # Unrelated edits above the finding keep it baselined.
        self.write("a.py", "# a comment\n\n" + LEAKY)
        self.assertEqual(run(["--baseline", base, self.dir])[0], 0)
        # A new finding is reported.
        self.write("b.py", LEAKY)
        rc, out, _ = run(["--baseline", base, self.dir])
        self.assertEqual(rc, 1)
        self.assertIn("b.py", out)
        self.assertNotIn("a.py", out)
        self.assertEqual(run(["--baseline", os.path.join(self.dir, "missing.json"), self.dir])[0], 2)

    def test_diff_base_reports_only_changed_lines(self):
        self.git("init", "-q")
        self.write("old.py", LEAKY)
        self.git("add", "-A")
        self.git("commit", "-qm", "init")
        self.write("new.py", LEAKY)  # untracked: wholly new
        self.write("old.py", LEAKY + "\n\ndef predict(model, test_loader):\n    return [model(x) for x in test_loader]\n")
        rc, out, err = run(["--diff-base", "HEAD", "--format", "json", "."], cwd=self.dir)
        got = sorted((os.path.basename(f["path"]), f["line"]) for f in json.loads(out)["findings"])
        self.assertEqual(got, [("new.py", 7), ("old.py", 12)], err)
        self.assertEqual(run(["--diff-base", "no-such-rev", "."], cwd=self.dir)[0], 2)


    def test_configuration_reference_examples_parse(self):
        # docs/configuration.md: its table lists every key leaklint accepts, and its
        # examples are valid configuration.
        import re
        with open(os.path.join(SRC, "docs", "configuration.md")) as f:
            doc = f.read()
        with open(os.path.join(SRC, "rules", "config.cpp")) as f:
            known = re.search(r"kKnownKeys\[\] = \{(.*?)\};", f.read(), re.S).group(1)
        keys = set(re.findall(r'"([a-z-]+)"', known))
        documented = set(re.findall(r"^\| `([a-z-]+)` \|", doc, re.M))
        self.assertEqual(documented, keys)
        blocks = re.findall(r"^`([.\w-]+)`.*?:\n\n```toml\n(.*?)```", doc, re.S | re.M)
        self.assertEqual([name for name, _ in blocks], ["pyproject.toml", ".leaklint.toml"])
        for name, text in blocks:
            d = os.path.join(self.dir, name.strip("."))
            os.makedirs(d)
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
            with open(os.path.join(d, "a.py"), "w") as f:
                f.write(LEAKY)
            rc, out, err = run(["--format", "json", d])
            self.assertIn(rc, (0, 1), err)
            self.assertNotIn("error", err, err)

    def test_diff_base_reports_findings_whose_guard_was_removed(self):
        # Removing a decorator or a grad-mode line leaves the forward itself untouched: the
        # finding is reported because a line of its function changed; an untouched function
        # elsewhere in the file stays quiet.
        self.git("init", "-q")
        guarded = """import torch


@torch.no_grad()
def evaluate(model, val_loader):
    model.eval()
    return [model(x).argmax(-1) for x in val_loader]


def predict(model, test_loader):
    torch.set_grad_enabled(False)
    model.eval()
    return [model(x) for x in test_loader]


def untouched(model, val_loader):
    model.eval()
    return [model(x) for x in val_loader]
"""
        self.write("a.py", guarded)
        self.git("add", "-A")
        self.git("commit", "-qm", "init")
        rc, out, err = run(["--diff-base", "HEAD", "--format", "json", "."], cwd=self.dir)
        self.assertEqual((rc, json.loads(out)["findings"]), (0, []), err)  # nothing changed
        self.write("a.py", guarded.replace("@torch.no_grad()\n", "").replace("    torch.set_grad_enabled(False)\n", ""))
        rc, out, err = run(["--diff-base", "HEAD", "--format", "json", "."], cwd=self.dir)
        got = sorted((f["rule"], f["line"]) for f in json.loads(out)["findings"])
        self.assertEqual(got, [("LL101", 6), ("LL101", 11)], err)
        rc, out, err = run(["--format", "json", "."], cwd=self.dir)  # the whole file has one more
        self.assertEqual(len(json.loads(out)["findings"]), 3)

    def test_diff_base_runs_no_command_the_repository_configures(self):
        marker = os.path.join(self.dir, "..", os.path.basename(self.dir) + "-pwned")
        self.write("a.py", LEAKY)
        self.write(".gitattributes", "*.py diff=evil\n")
        self.git("init", "-q")
        self.git("add", "-A")
        self.git("commit", "-qm", "init")
        evil = "sh -c 'touch %s' #" % marker
        for key, value in (("core.fsmonitor", evil), ("diff.evil.textconv", evil), ("diff.external", evil),
                           ("core.pager", evil), ("core.hooksPath", self.dir)):
            self.git("config", key, value)
        self.write("a.py", LEAKY + "\n# changed\n")
        rc, out, err = run(["--diff-base", "HEAD", self.dir], cwd=self.dir)
        self.assertIn(rc, (0, 1), err)
        self.assertFalse(os.path.exists(marker), "git ran a command the scanned repository configured")
        if os.path.exists(marker):
            os.remove(marker)

class LowConfidence(Tmp):
    """Weak findings (docs/impact.md) are hidden and counted unless asked for."""

    # A CPU-only script: its LL101 finding is weak (host RAM of a CPU run) and has a fix.
    CPU_SCRIPT = ("import torch\n\nmodel = torch.nn.Linear(4, 2)\nmodel.eval()\n"
                  "for x in [torch.randn(1, 4) for _ in range(3)]:\n    print(model(x))\n")

    def default_run(self, *args):
        p = subprocess.run([BIN, "--no-cache", *args], capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def test_hidden_and_counted_by_default(self):
        path = self.write("cpu.py", self.CPU_SCRIPT)
        rc, out, err = self.default_run(path)
        self.assertEqual(rc, 0, out + err)
        self.assertNotIn("[LL101]", out)
        self.assertIn("No findings; 1 low-confidence finding hidden (--show-low-confidence shows them).", out)
        rc, out, err = self.default_run("--format", "json", path)
        doc = json.loads(out)
        self.assertEqual(doc["findings"], [])
        self.assertEqual(doc["summary"]["low_confidence_hidden"], 1)

    def test_the_flag_and_the_configuration_key_show_them(self):
        path = self.write("cpu.py", self.CPU_SCRIPT)
        rc, out, err = self.default_run("--show-low-confidence", path)
        self.assertEqual(rc, 1, out + err)
        self.assertIn("(low confidence: nothing in this program places a tensor on a GPU", out)
        self.write(".leaklint.toml", "show-low-confidence = true\n")
        rc, out, err = self.default_run("--format", "json", path)
        doc = json.loads(out)
        self.assertEqual([(f["rule"], f["low_confidence"]) for f in doc["findings"]], [("LL101", True)])
        self.assertEqual(doc["summary"]["low_confidence_hidden"], 0)

    def test_a_backward_of_another_binding_of_the_name_frees_nothing_kept(self):
        # The epoch loop back-propagates the training `loss`, then rebinds `loss` to the last
        # test batch's loss (made with grad on) and keeps that one: its graph was never freed,
        # so the finding keeps its full severity. Keeping the training loss is the weak case.
        epoch = ("import torch\n\nmodel = torch.nn.Linear(8, 2).cuda()\ncriterion = torch.nn.CrossEntropyLoss()\n"
                 "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nkept = []\nfor epoch in range(100):\n"
                 "    for x, y in train_loader:\n        loss = criterion(model(x.cuda()), y.cuda())\n"
                 "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n"
                 "{tail}    kept.append(loss)\n")
        test = "    for x, y in test_loader:\n        out = model(x.cuda())\n    loss = criterion(out, y.cuda())\n"
        for tail, weak in ((test, False), ("", True)):
            path = self.write("epochs.py", epoch.format(tail=tail))
            rc, out, err = self.default_run("--format", "json", "--show-low-confidence", "--select", "LL102", path)
            self.assertEqual([(f["rule"], f["low_confidence"]) for f in json.loads(out)["findings"]], [("LL102", weak)],
                             out)

    def test_fix_leaves_hidden_findings_alone(self):
        path = self.write("cpu.py", self.CPU_SCRIPT)
        rc, out, err = self.default_run("--fix", "--unsafe-fixes", path)
        self.assertEqual(open(path).read(), self.CPU_SCRIPT, out + err)
        rc, out, err = self.default_run("--show-low-confidence", "--fix", "--unsafe-fixes", path)
        self.assertIn("torch.no_grad()", open(path).read(), out + err)


class Parallel(Tmp):
    def test_output_is_deterministic_across_job_counts(self):
        for i in range(40):
            self.write(f"pkg/m{i:02d}.py", LEAKY if i % 3 == 0 else CLEAN)
        outs = {run(["--format", "json", "-j", str(j), self.dir])[1] for j in (1, 2, 4)}
        self.assertEqual(len(outs), 1)


if __name__ == "__main__":
    os.environ["LEAKLINT_CACHE_DIR"] = tempfile.mkdtemp(prefix="leaklint-cli-cache-")
    atexit.register(shutil.rmtree, os.environ["LEAKLINT_CACHE_DIR"], True)
    BIN, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    del sys.argv[1:3]
    unittest.main(verbosity=2)
