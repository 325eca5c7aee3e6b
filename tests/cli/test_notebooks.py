#!/usr/bin/env python3
"""Notebooks end to end: positions through JSON escapes and in minified files, the cell's
source line in text output, fixes in JSON output, --diff cell by cell, IPython magics.

usage: test_notebooks.py LEAKLINT_BINARY
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
import unittest

BIN = None

# A line whose flagged text comes after, and contains, characters that JSON escapes.
CELL = '''import torch


def evaluate(model, val_loader):
    model.eval()
    outs = []
    for x in val_loader:
        tag = "é\\"\\\\ü😀"; outs.append(model(x, tag="\\"é"))
    return outs
'''
FLAGGED = 'outs.append(model(x, tag="\\"é"))'  # LL102's range in the cell
FORWARD = 'model(x, tag="\\"é")'               # LL101's

# LL303 has no fix.
EMPTY_CACHE = """

def train(model, loader, opt):
    for x in loader:
        torch.cuda.empty_cache()
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
"""

IMAGE = "iVBORw0KGgo" + "A" * 5000


def notebook(source, fmt):
    """fmt: 'indented' (array source, \\u escapes), 'minified' (one line), 'string' (one string, raw UTF-8)."""
    lines = source.splitlines(True)
    code = {"cell_type": "code", "execution_count": 1, "metadata": {},
            "outputs": [{"output_type": "display_data", "data": {"image/png": IMAGE}, "metadata": {}}],
            "source": source if fmt == "string" else lines}
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# T\u00e9st \"x\"\n"]}, code],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    if fmt == "minified":
        return json.dumps(nb, separators=(",", ":"))
    return json.dumps(nb, indent=1, ensure_ascii=fmt != "string")


def decode_fragment(raw):
    """The text a slice of a JSON string's body stands for."""
    return json.loads('"' + raw + '"')


class Tmp(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="leaklint-nb-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def run_ll(self, *args):
        p = subprocess.run([BIN, "--show-low-confidence", "--no-cache", *args], capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr


class Positions(Tmp):
    def check(self, fmt):
        text = notebook(CELL, fmt)
        path = self.write(f"nb_{fmt}.ipynb", text)
        raw_lines = text.encode().split(b"\n")
        rc, out, err = self.run_ll("--format", "json", path)
        self.assertEqual(rc, 1, err)
        doc = json.loads(out)
        self.assertEqual(doc["errors"], [])
        got = {}
        for f in doc["findings"]:
            self.assertEqual(f["line"], f["end_line"], f)
            raw = raw_lines[f["line"] - 1][f["column"] - 1:f["end_column"] - 1].decode()
            got[f["rule"]] = (decode_fragment(raw), f["notebook"])
        # JSON columns are UTF-8 bytes of the .ipynb line; the cell column counts bytes of the cell line.
        cell_line = CELL.splitlines()[7]
        self.assertEqual(got["LL102"], (FLAGGED, {"cell": 2, "line": 8,
                                                  "column": len(cell_line[:cell_line.index("outs")].encode()) + 1}))
        self.assertEqual(got["LL101"][0], FORWARD)
        if fmt == "minified":
            self.assertEqual({f["line"] for f in doc["findings"]}, {1})
        # SARIF: the same text, its columns in UTF-16 code units.
        rc, out, _ = self.run_ll("--format", "sarif", path)
        lines16 = text.split("\n")
        for res in json.loads(out)["runs"][0]["results"]:
            region = res["locations"][0]["physicalLocation"]["region"]
            line = lines16[region["startLine"] - 1].encode("utf-16-le")
            raw = line[2 * (region["startColumn"] - 1):2 * (region["endColumn"] - 1)].decode("utf-16-le")
            self.assertEqual(raw, region["snippet"]["text"])
            self.assertIn(decode_fragment(raw), (FLAGGED, FORWARD))
            self.assertEqual(res["properties"]["notebook"]["cell"], 2)
        # github: the JSON format's line and column, and the cell in the message.
        rc, out, _ = self.run_ll("--format", "github", path)
        self.assertIn(",title=LL102 ", out)
        self.assertIn("::cell 2, line 8, column ", out)
        return text, path

    def test_escapes_in_an_indented_notebook(self):
        self.check("indented")

    def test_minified_notebook(self):
        self.check("minified")

    def test_source_as_one_string(self):
        self.check("string")

    def test_text_output_shows_the_cells_line_not_the_json(self):
        for fmt in ("indented", "minified", "string"):
            path = self.write(f"t_{fmt}.ipynb", notebook(CELL, fmt))
            rc, out, _ = self.run_ll(path)
            self.assertEqual(rc, 1)
            self.assertIn(f"t_{fmt}.ipynb:cell 2:8:", out)
            self.assertNotIn("iVBORw0KGgo", out, fmt)
            self.assertNotIn('"source"', out, fmt)
            self.assertNotIn("\\u00e9", out, fmt)
            src_lines = [l for l in out.splitlines() if l.startswith("        tag = ")]
            self.assertEqual(src_lines, [CELL.splitlines()[7]] * 2, out)
            # The caret sits under the flagged text of the cell's line.
            caret = out.splitlines()[out.splitlines().index(src_lines[0]) + 1]
            prefix = src_lines[0][:src_lines[0].index(FLAGGED)]
            width = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in prefix)  # the emoji: 2 cells
            self.assertEqual(caret.index("^"), width, fmt)
            self.assertEqual(len(caret.strip()), len(FLAGGED), fmt)


class Fixes(Tmp):
    def test_json_fixes_are_edits_of_the_ipynb_and_empty_lists_where_none(self):
        for fmt in ("indented", "minified", "string"):
            text = notebook(CELL + EMPTY_CACHE, fmt)
            path = self.write(f"f_{fmt}.ipynb", text)
            rc, out, _ = self.run_ll("--format", "json", path)
            doc = json.loads(out)
            for f in doc["findings"]:
                self.assertIn("fixes", f)
                self.assertIsInstance(f["fixes"], list)
                for fx in f["fixes"]:
                    self.assertEqual(len(fx["edits"]), 1)
                    e = fx["edits"][0]
                    raw = text.encode()
                    fixed = json.loads(raw[:e["begin"]] + e["text"].encode() + raw[e["end"]:])
                    src = fixed["cells"][1]["source"]
                    src = src if isinstance(src, str) else "".join(src)
                    self.assertIn("detach()" if f["rule"] == "LL102" else "@torch.no_grad()", src, (fmt, f["rule"]))
                    self.assertEqual(fixed["cells"][1]["outputs"][0]["data"]["image/png"], IMAGE)
            by_rule = {f["rule"]: f for f in doc["findings"]}
            self.assertTrue(by_rule["LL102"]["fixes"], fmt)
            self.assertTrue(by_rule["LL101"]["fixes"], fmt)
            self.assertEqual(by_rule["LL303"]["fixes"], [], fmt)  # no fix: an empty list, as for .py

    def test_diff_shows_changed_cells_only(self):
        for fmt in ("indented", "minified"):
            path = self.write(f"d_{fmt}.ipynb", notebook(CELL, fmt))
            rc, out, err = self.run_ll("--diff", "--unsafe-fixes", path)
            self.assertEqual(rc, 1, err)
            self.assertNotIn("iVBORw0KGgo", out)
            self.assertLess(len(out.splitlines()), 25, out)
            lines = out.splitlines()
            self.assertEqual(lines[0], f"--- a/{path}:cell 2")
            old = "-" + CELL.splitlines()[7]
            self.assertIn(old, lines)
            self.assertEqual(lines[lines.index(old) + 1], "+" + CELL.splitlines()[7].replace(
                'tag="\\"é"))', 'tag="\\"é").detach())'))


MAGICS = [
    ["!pip install torch \\\n", "    torchvision \\\n", "    tqdm\n"],
    ["import torch\n", "files = !ls\n", "%matplotlib inline\n"],
    ["%%time\n", "def evaluate(model, val_loader):\n", "    model.eval()\n",
     "    return [model(x) for x in val_loader]\n"],
    ["%%bash\n", "for f in *; do\n", "  echo $f\n", "done\n"],
    ["for x in range(3):\n", "    !echo {x}\n"],
    ["%%writefile helper.py\n", "def broken(:\n"],
    ["%time y = \\\n", "    1\n", "print(y)?\n"],
    # IPython's automagic: magics named without `%`; `cd = 3` and `ls if cd else pwd` stay Python.
    ["pip install torchinfo\n", "conda install -y numpy\n", "cd data/train\n", "ls -la\n", "cd = 3\n",
     "x = ls if cd else pwd\n"],
]


class Magics(Tmp):
    def nb(self):
        return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                      "source": c} for c in MAGICS],
                           "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)

    def test_no_false_syntax_error_and_python_cell_magics_are_analysed(self):
        path = self.write("magic.ipynb", self.nb())
        rc, out, err = self.run_ll("--format", "json", path)
        doc = json.loads(out)
        self.assertEqual(doc["errors"], [], out)
        self.assertEqual([(f["rule"], f["notebook"]["cell"], f["notebook"]["line"]) for f in doc["findings"]],
                         [("LL101", 3, 4)])  # the body of %%time is Python; %%bash and %%writefile are not

    def test_fix_keeps_magic_lines(self):
        path = self.write("magic.ipynb", self.nb())
        rc, out, err = self.run_ll("--fix", "--unsafe-fixes", path)
        self.assertEqual(rc, 0, out + err)
        with open(path) as f:
            cells = [c["source"] for c in json.load(f)["cells"]]
        expected = [list(c) for c in MAGICS]
        expected[2].insert(1, "@torch.no_grad()\n")
        self.assertEqual(cells, expected)


    def test_rows_inside_multi_line_strings_are_text(self):
        # `a?` ending the opening row of a string, `%`/`!` rows and `why?` inside one: text,
        # not IPython help or magics; the real magic and help rows around them still are.
        cells = [["s = \"\"\"a?\n", "b\"\"\"\n", "print(s)\n"],
                 ["doc = '''\n", "%not a magic\n", "!nor this\n", "why?\n", "'''\n", "%matplotlib inline\n",
                  "len?\n"],
                 ["x = 1\n", ""]]
        path = self.write("strings.ipynb", json.dumps({"cells": [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": c} for c in cells],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
        rc, out, err = self.run_ll("--format", "json", path)
        self.assertEqual(json.loads(out)["errors"], [], out)

INDENTED = [
    ["import torch\n", "for x in loader:\n", "    print(x.shape)\n"],
    ["    class Tiny(torch.nn.Module):\n", "        def __init__(self):\n", "            super().__init__()\n",
     "            self.fc = torch.nn.Linear(2, 2)\n", "\n", "        def forward(self, x):\n",
     "            return self.fc(x) * 2\n", "\n", "    model = Tiny().cuda()\n"],
    ["    model.eval()\n", "    for x in val_loader:\n", "        out = model(x)\n", "        print(out.sum().item())"],
]


class IndentedCells(Tmp):
    """IPython runs a cell whose first line is indented with that indentation removed; it
    never continues the previous cell's block."""

    def nb(self, cells):
        return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                      "source": c} for c in cells],
                           "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)

    def test_an_indented_cell_is_its_own_block(self):
        path = self.write("indented.ipynb", self.nb(INDENTED))
        rc, out, err = self.run_ll("--format", "json", path)
        doc = json.loads(out)
        self.assertEqual(doc["errors"], [], out)
        # The model is built once, at the top level of cell 2 (not inside cell 1's loop), and
        # the finding in cell 3 points at the cell's own text.
        self.assertEqual([(f["rule"], f["notebook"]["cell"], f["notebook"]["line"], f["notebook"]["column"])
                          for f in doc["findings"]], [("LL101", 3, 3, 15)])
        with open(path) as fh:
            raw_lines = fh.read().splitlines()
        f = doc["findings"][0]
        self.assertTrue(raw_lines[f["line"] - 1][f["column"] - 1:].startswith("model(x)"), raw_lines[f["line"] - 1])

    def test_no_fix_rewrites_an_indented_cell(self):
        text = self.nb(INDENTED)
        path = self.write("indented.ipynb", text)
        rc, out, err = self.run_ll("--format", "json", path)
        self.assertEqual([f.get("fixes", []) for f in json.loads(out)["findings"]], [[]])
        rc, out, err = self.run_ll("--fix", "--unsafe-fixes", path)
        with open(path) as fh:
            self.assertEqual(fh.read(), text)
        # The same cell without its indentation gets the fix.
        flat = [INDENTED[0], INDENTED[1], ["model.eval()\n", "for x in val_loader:\n", "    out = model(x)\n",
                                           "    print(out.sum().item())"]]
        path = self.write("flat.ipynb", self.nb(flat))
        rc, out, err = self.run_ll("--format", "json", path)
        self.assertEqual([len(f.get("fixes", [])) for f in json.loads(out)["findings"]], [1])


class MessagesAndNotes(Tmp):
    def test_a_message_names_no_line_of_the_extracted_code_and_its_note_points_into_the_ipynb(self):
        # Line numbers inside a message would count lines of the code extracted from the cells,
        # not of the file the user opens: the call that makes `evaluate` run every epoch is a
        # note, whose position is mapped onto the .ipynb like the finding's.
        import re
        cells = [["import torch\n", "import torch.nn as nn\n"],
                 ["def evaluate(model, X_test, y_test):\n", "    model.eval()\n", "    out = model(X_test.cuda())\n",
                  "    return (out.argmax(1) == y_test.cuda()).float().mean().item()\n"],
                 ["model = nn.Sequential(nn.Conv2d(3, 64, 3), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10)).cuda()\n",
                  "opt = torch.optim.Adam(model.parameters())\n", "for epoch in range(100):\n",
                  "    for x, y in loader:\n", "        loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n",
                  "        opt.zero_grad()\n", "        loss.backward()\n", "        opt.step()\n",
                  "    print(evaluate(model, X_test, y_test))\n"]]
        nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# Evaluation\n"]}] +
                       [{"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [], "source": c}
                        for c in cells],
              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        text = json.dumps(nb, indent=1)
        path = self.write("single_pass.ipynb", text)
        rc, out, err = self.run_ll("--format", "json", path)
        findings = [f for f in json.loads(out)["findings"] if f["rule"] == "LL101"]
        self.assertEqual(len(findings), 1, out)
        f = findings[0]
        self.assertIsNone(re.search(r"line \d", f["message"]), f["message"])
        self.assertEqual(f["notebook"]["cell"], 3)
        raw_lines = text.split("\n")
        self.assertEqual(len(f["notes"]), 1, f)
        self.assertIn("print(evaluate(model, X_test, y_test))", raw_lines[f["notes"][0]["line"] - 1])


if __name__ == "__main__":
    BIN = os.path.abspath(sys.argv[1])
    del sys.argv[1:2]
    unittest.main(verbosity=2)
