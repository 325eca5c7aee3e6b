#!/usr/bin/env python3
"""End-to-end tests of leaklint-cpp and of cli/cpp_driver.cpp (through driver_test).

Each test writes its inputs into a fresh temporary directory (no compile database above
it), runs the program and checks the JSON. Run by CTest (`cpp_cli`) when leaklint is built
with -DLEAKLINT_ENABLE_CPP=ON.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback

ARGS = None

BAD_EVAL = """#include <torch/torch.h>

double evaluate(torch::nn::Linear& model, const std::vector<torch::Tensor>& batches) {
  double total = 0;
  for (const auto& x : batches) {
    total += model(x).sum().item<double>();
  }
  return total;
}
"""

SUPPRESSED = """#include <torch/torch.h>

double evaluate(torch::nn::Linear& model, const std::vector<torch::Tensor>& batches) {
  double total = 0;
  for (const auto& x : batches) total += model(x).sum().item<double>();  // NOLINT(leaklint-LL101)
  return total;
}
"""

TRAIN_TOTAL = """#include <torch/torch.h>

void train(torch::nn::Linear& model, torch::optim::SGD& optimizer, const std::vector<torch::Tensor>& batches) {
  torch::Tensor total = torch::zeros({});
  for (const auto& x : batches) {
    optimizer.zero_grad();
    torch::Tensor loss = model(x).pow(2).mean();
    loss.backward();
    optimizer.step();
    total += loss;
  }
}
"""


def run(cmd, cwd=None, env=None, timeout=900):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(cmd, cwd=cwd, env=e, capture_output=True, text=True, timeout=timeout)
    return p


def lcpp(args, cwd, env=None):
    p = run([ARGS.leaklint_cpp] + args, cwd=cwd, env=env)
    if p.returncode != 0:
        raise AssertionError("leaklint-cpp exited %d: %s" % (p.returncode, p.stderr))
    return json.loads(p.stdout)


def write(d, name, text):
    path = os.path.join(d, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)
    return path


def rules(res):
    return sorted((f["rule"], f["line"]) for f in res["findings"] if not f.get("suppressed"))


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


# ----------------------------------------------------------------------------- tests

def test_json_shape_and_ranges(d):
    write(d, "eval.cpp", BAD_EVAL)
    [res] = lcpp(["--stats", "eval.cpp"], cwd=d)
    check(res["path"] == "eval.cpp", res["path"])
    check(res["source"] == BAD_EVAL, "source text")
    check(res["diagnostics"] == [], res["diagnostics"])
    check(res["stats"]["semantic"], res["stats"])
    check(rules(res) == [("LL101", 6)], rules(res))
    f = res["findings"][0]
    for key in ("rule", "severity", "line", "col", "end_line", "end_col", "begin", "end", "message", "notes",
                "fixes", "low_confidence", "suppressed"):
        check(key in f, "finding lacks " + key)
    check(f["severity"] == "warning" and not f["low_confidence"], f)
    # Ranges point at the forward call, exactly.
    check(BAD_EVAL[f["begin"]:f["end"]] == "model(x)", BAD_EVAL[f["begin"]:f["end"]])
    line_start = BAD_EVAL.rfind("\n", 0, f["begin"]) + 1
    check(f["col"] == f["begin"] - line_start + 1, (f["col"], f["begin"], line_start))
    check("torch::NoGradGuard" in f["message"], f["message"])
    # Flagged for its name alone with no caller in the TU: a note says callers elsewhere are not seen.
    check(len(f["notes"]) == 1 and "no caller in this translation unit" in f["notes"][0]["message"] and
          f["notes"][0]["line"] == 3, f["notes"])
    # With a caller in the TU (here without a guard), no such note.
    write(d, "called.cpp", BAD_EVAL + "\ndouble run(torch::nn::Linear& m, const std::vector<torch::Tensor>& b) {\n"
          "  return evaluate(m, b);\n}\n")
    [res2] = lcpp(["called.cpp"], cwd=d)
    check(rules(res2) == [("LL101", 6)] and res2["findings"][0]["notes"] == [], res2["findings"])
    # The C++ fix inserts a guard before the loop.
    fix = f["fixes"][0]
    check(not fix["safe"] and fix["edits"][0]["text"].strip() == "torch::NoGradGuard no_grad;", fix)


def test_fix_applies_and_silences(d):
    write(d, "eval.cpp", BAD_EVAL)
    [res] = lcpp(["eval.cpp"], cwd=d)
    text = BAD_EVAL
    for e in sorted(res["findings"][0]["fixes"][0]["edits"], key=lambda e: -e["begin"]):
        text = text[:e["begin"]] + e["text"] + text[e["end"]:]
    write(d, "fixed.cpp", text)
    [res2] = lcpp(["fixed.cpp"], cwd=d)
    check(rules(res2) == [] and res2["diagnostics"] == [], (rules(res2), res2["diagnostics"], text))


def test_cpp_spellings_in_messages_and_fixes(d):
    write(d, "train.cpp", TRAIN_TOTAL)
    [res] = lcpp(["train.cpp"], cwd=d)
    check(rules(res) == [("LL102", 10)], rules(res))
    f = res["findings"][0]
    check(".item<double>()" in f["message"], f["message"])
    edit = f["fixes"][0]["edits"][0]
    check(edit["text"] == "loss.item<double>()", edit)


def test_suppression(d):
    write(d, "s.cpp", SUPPRESSED)
    [res] = lcpp(["s.cpp"], cwd=d)
    check(rules(res) == [], rules(res))
    sup = [f for f in res["findings"] if f["suppressed"]]
    check(len(sup) == 1 and "NOLINT" in sup[0]["suppression"], res["findings"])


def test_select_ignore_and_config(d):
    write(d, "eval.cpp", BAD_EVAL)
    [res] = lcpp(["--ignore", "LL1", "eval.cpp"], cwd=d)
    check(rules(res) == [], rules(res))
    write(d, ".leaklint.toml", 'ignore = ["LL101"]\n')
    [res] = lcpp(["eval.cpp"], cwd=d)
    check(rules(res) == [], "nearest .leaklint.toml applies: %s" % rules(res))
    os.unlink(os.path.join(d, ".leaklint.toml"))


def test_without_headers_is_syntactic(d):
    # No compile database, LibTorch's default search disabled: a clear diagnostic, and the
    # syntactic lowering still finds the leak (marked low confidence).
    write(d, "eval.cpp", BAD_EVAL)
    [res] = lcpp(["eval.cpp"], cwd=d, env={"LEAKLINT_NO_TORCH_INCLUDES": "1"})
    kinds = [x["kind"] for x in res["diagnostics"]]
    check(kinds == ["missing-headers"], res["diagnostics"])
    msg = res["diagnostics"][0]["message"]
    check("torch/torch.h" in msg and "syntactically" in msg and "LEAKLINT_NO_TORCH_INCLUDES" in msg, msg)
    check(not res["diagnostics"][0]["fatal"], res["diagnostics"][0])
    check(rules(res) == [("LL101", 6)], rules(res))
    check(all(f["low_confidence"] for f in res["findings"]), res["findings"])


def test_compile_error_is_syntactic(d):
    broken = BAD_EVAL.replace("double total = 0;", "double total = 0")  # missing ';'
    write(d, "broken.cpp", broken)
    [res] = lcpp(["broken.cpp"], cwd=d)
    kinds = [x["kind"] for x in res["diagnostics"]]
    check(kinds == ["compile-error"], res["diagnostics"])
    check(res["diagnostics"][0]["line"] == 4, res["diagnostics"][0])
    check(rules(res) == [("LL101", 6)] and all(f["low_confidence"] for f in res["findings"]), res["findings"])


def test_missing_template_keyword_keeps_the_ast(d):
    # `x.item<double>()` on a value of dependent type needs `.template item<double>()` in
    # Clang; other compilers accept it as written. Clang recovers as if the keyword were there,
    # so the file is analysed on its AST: the finding is not low confidence, only unfixable,
    # and the diagnostic says why.
    templ = BAD_EVAL.replace("double evaluate(torch::nn::Linear& model, const std::vector<torch::Tensor>& batches) {",
                             "template <typename Batches>\ndouble evaluate(torch::nn::Linear& model, const Batches& batches) {")
    write(d, "templ.cpp", templ)
    [res] = lcpp(["templ.cpp"], cwd=d)
    kinds = [x["kind"] for x in res["diagnostics"]]
    check(kinds == ["compile-error"], res["diagnostics"])
    check("`template` or `typename` keyword" in res["diagnostics"][0]["message"], res["diagnostics"][0])
    check(res["diagnostics"][0]["line"] == 7, res["diagnostics"][0])
    check(rules(res) == [("LL101", 7)], rules(res))
    check(all(not f["low_confidence"] and f["fixes"] == [] for f in res["findings"]), res["findings"])
    # Any other error in the file still sends it to the syntactic lowering.
    write(d, "templ2.cpp", templ.replace("double total = 0;", "double total = 0"))
    [res] = lcpp(["templ2.cpp"], cwd=d)
    check(all(f["low_confidence"] for f in res["findings"]) and res["findings"], res["findings"])


def test_missing_header_reached_through_a_project_header_is_named(d):
    # `main.cpp` includes the project's `net.h`, whose `#include "version_gen.h"` names a
    # generated header that is not there: the diagnostic names it and the project file that
    # includes it (both inside the scanned tree), whatever a `#line` directive there says.
    os.makedirs(os.path.join(d, "proj", ".git"))
    write(d, "proj/include/net.h", '#pragma once\n#line 1 "/etc/elsewhere.h"\n#include "version_gen.h"\n'
          '#include <torch/torch.h>\n')
    write(d, "proj/main.cpp", '#include "net.h"\n' + BAD_EVAL)
    [res] = lcpp(["main.cpp"], cwd=os.path.join(d, "proj"))
    msgs = [x["message"] for x in res["diagnostics"]]
    check(any("'version_gen.h' (included by net.h)" in m for m in msgs), msgs)
    check(not any("elsewhere" in m for m in msgs), msgs)
    check(rules(res) == [("LL101", 7)], rules(res))


def test_cuda_headers_missing_from_a_cpu_libtorch(d):
    # A unit that includes LibTorch's CUDA part, on a machine with a CPU build of LibTorch and no
    # CUDA toolkit: the diagnostic says the CUDA headers are missing, not LibTorch's, and names
    # no header it did not read in the scanned file.
    write(d, "alloc.cpp", BAD_EVAL.replace("#include <torch/torch.h>\n",
                                           "#include <torch/torch.h>\n#include <c10/cuda/CUDACachingAllocator.h>\n"))
    [res] = lcpp(["alloc.cpp"], cwd=d)
    kinds = [x["kind"] for x in res["diagnostics"]]
    check(kinds == ["missing-headers"], res["diagnostics"])
    msg = res["diagnostics"][0]["message"]
    if os.path.exists("/usr/include/torch/csrc/api/include/torch/torch.h") and not os.path.exists("/usr/include/cuda_runtime_api.h"):
        check(msg.startswith("CUDA headers not found") and "LibTorch was found" in msg, msg)
    check(rules(res) == [("LL101", 7)] and all(f["low_confidence"] for f in res["findings"]), res["findings"])


def test_no_fix_for_a_file_that_does_not_compile(d):
    # Findings of the tree-sitter lowering (no headers, or errors in the file) carry no fix,
    # and `leaklint --fix --unsafe-fixes` leaves such a file as it is.
    broken = BAD_EVAL.replace("double total = 0;", "double total = 0")  # missing ';'
    path = write(d, "broken.cpp", broken)
    [res] = lcpp(["broken.cpp"], cwd=d)
    check(rules(res) == [("LL101", 6)], rules(res))
    check(all(f["low_confidence"] and f["fixes"] == [] for f in res["findings"]), res["findings"])
    write(d, "eval.cpp", BAD_EVAL)
    [res] = lcpp(["eval.cpp"], cwd=d, env={"LEAKLINT_NO_TORCH_INCLUDES": "1"})
    check(rules(res) == [("LL101", 6)] and all(f["fixes"] == [] for f in res["findings"]), res["findings"])
    p = leaklint(["--fix", "--unsafe-fixes", "broken.cpp"], cwd=d, env={"LEAKLINT_CPP": ARGS.leaklint_cpp})
    check(open(path).read() == broken, open(path).read())
    check("torch::NoGradGuard" not in open(path).read(), p.stdout + p.stderr)


# A project header standing in for LibTorch (the names the rules look for, nothing more): it
# compiles only with the compile database's -I and -D, so the test needs no LibTorch headers
# and proves that the database's command line was used.
TORCH_LITE = """#pragma once
#ifndef PROJECT_FROM_DATABASE
#error "compiled without the compile database's -D"
#endif
#include <vector>
namespace torch {
struct Tensor {
  Tensor sum() const { return *this; }
  template <typename T> T item() const { return T(); }
};
namespace nn {
struct LinearImpl {
  Tensor forward(const Tensor& x) { return x; }
};
struct Linear {
  LinearImpl* impl;
  LinearImpl* operator->() { return impl; }
  Tensor operator()(const Tensor& x) { return impl->forward(x); }
};
}  // namespace nn
}  // namespace torch
"""


def test_compile_database(d):
    src = write(d, "src/eval.cpp", BAD_EVAL.replace("<torch/torch.h>", '"torch_lite.h"'))
    write(d, "include/shim/torch_lite.h", TORCH_LITE)
    build = os.path.join(d, "build")
    os.makedirs(build)
    db = [{"directory": build, "file": src,
           "command": "/usr/bin/c++ -std=c++17 -DPROJECT_FROM_DATABASE -I%s -O2 -o eval.o -c %s"
                      % (os.path.join(d, "include", "shim"), src)}]
    with open(os.path.join(build, "compile_commands.json"), "w") as fh:
        json.dump(db, fh)
    no_torch = {"LEAKLINT_NO_TORCH_INCLUDES": "1"}  # nothing but the database can make it compile
    # Without the database: the project's header is found in the tree (include/shim), but
    # without the database's -D it stops at its #error: errors in an included file, findings
    # are low confidence.
    [res] = lcpp(["--stats", "src/eval.cpp"], cwd=d, env=no_torch)
    check(res["stats"]["pch"].endswith("+project-includes"), res["stats"])
    check([f["low_confidence"] for f in res["findings"]] == [True], res["findings"])
    # -p BUILD_DIR
    [res] = lcpp(["--stats", "-p", build, "src/eval.cpp"], cwd=d, env=no_torch)
    check(res["stats"]["semantic"] and res["stats"]["origin"] == "compile database entry", res["stats"])
    check(rules(res) == [("LL101", 6)] and not res["findings"][0]["low_confidence"], res["findings"])
    check(res["diagnostics"] == [], res["diagnostics"])
    # Found by walking up from the file.
    shutil.copy(os.path.join(build, "compile_commands.json"), os.path.join(d, "compile_commands.json"))
    [res] = lcpp(["--stats", "src/eval.cpp"], cwd=d, env=no_torch)
    check(res["stats"]["semantic"] and res["stats"]["origin"] == "compile database entry", res["stats"])
    check(rules(res) == [("LL101", 6)], rules(res))
    os.unlink(os.path.join(d, "compile_commands.json"))
    # -p to a directory without a database: a diagnostic, then the default command line.
    [res] = lcpp(["--stats", "-p", os.path.join(d, "include"), "src/eval.cpp"], cwd=d)
    kinds = [x["kind"] for x in res["diagnostics"]]
    check("compile-database" in kinds, res["diagnostics"])


def test_project_headers_found_in_the_tree(d):
    # src/train.cpp includes "net.hpp", which lives in include/: without a database the
    # default command line does not know that directory; the tree is searched for the
    # header and the file compiles (fixes are offered). A header found nowhere is skipped.
    write(d, ".git/HEAD", "ref: refs/heads/main\n")
    write(d, "include/net.hpp", "#pragma once\n#include <torch/torch.h>\n"
          "struct NetImpl : torch::nn::Module {\n  torch::nn::Linear fc{nullptr};\n"
          "  NetImpl() { fc = register_module(\"fc\", torch::nn::Linear(4, 2)); }\n"
          "  torch::Tensor forward(torch::Tensor x) { return fc(x); }\n};\nTORCH_MODULE(Net);\n")
    write(d, "src/train.cpp", '#include "net.hpp"\n\n'
          "double evaluate(Net& model, const std::vector<torch::Tensor>& batches) {\n"
          "  double total = 0;\n  for (const auto& x : batches) {\n"
          "    total += model->forward(x).sum().item<double>();\n  }\n  return total;\n}\n")
    [res] = lcpp(["--stats", "src/train.cpp"], cwd=d)
    check(res["stats"]["semantic"] and res["stats"]["pch"].endswith("+project-includes"), res["stats"])
    check(res["diagnostics"] == [], res["diagnostics"])
    check(rules(res) == [("LL101", 6)] and not res["findings"][0]["low_confidence"], res["findings"])
    check(res["findings"][0]["fixes"] != [], res["findings"])
    # The same include when no file of the tree has that name: skipped, no fix.
    os.unlink(os.path.join(d, "include", "net.hpp"))
    write(d, "src/other.cpp", BAD_EVAL.replace("#include <torch/torch.h>\n", '#include <torch/torch.h>\n#include "net.hpp"\n'))
    [res] = lcpp(["--stats", "src/other.cpp"], cwd=d)
    check(res["stats"]["semantic"] and [x["kind"] for x in res["diagnostics"]] == ["missing-headers"], res)
    check(rules(res) == [("LL101", 7)] and res["findings"][0]["fixes"] == [], res["findings"])


def test_files_that_never_name_libtorch(d):
    # A project's own framework (its headers absent, its own Tensor): skipped with one
    # not-libtorch diagnostic. A file whose types come from a project header that was found
    # (`using Tensor = torch::Tensor;` in mnist/net.h) is LibTorch code even though it never
    # spells torch and a generated header is missing: analysed, and its evaluation loop reported.
    write(d, ".git/HEAD", "ref: refs/heads/main\n")
    write(d, "own/eval.cpp", "#include <pytorchcpp/nn.h>\n#include <vector>\nusing namespace pytorchcpp;\n\n"
          "double evaluate(Net& model, const std::vector<Tensor>& test_batches) {\n  double total = 0;\n"
          "  for (const auto& x : test_batches) total += model.forward(x).sum();\n  return total;\n}\n")
    [res] = lcpp(["--stats", "own/eval.cpp"], cwd=d)
    check([x["kind"] for x in res["diagnostics"]] == ["not-libtorch"] and res["findings"] == [], res)
    write(d, "include/mnist/net.h", "#pragma once\n#include <torch/torch.h>\nnamespace mnist {\n"
          "using Tensor = torch::Tensor;\nnamespace nn = torch::nn;\n"
          "struct NetImpl : nn::Module {\n  NetImpl() : fc(register_module(\"fc\", nn::Linear(784, 10))) {}\n"
          "  Tensor forward(Tensor x) { return fc->forward(x); }\n  nn::Linear fc;\n};\nTORCH_MODULE(Net);\n}\n")
    write(d, "src/evaluate.cpp", '#include "mnist/net.h"\n#include "mnist/version.h"\n#include <vector>\n\n'
          "namespace mnist {\ndouble evaluate(Net& model, const std::vector<Tensor>& batches) {\n"
          "  model->eval();\n  double correct = 0;\n  for (const auto& x : batches) {\n"
          "    Tensor logits = model->forward(x);\n    correct += logits.argmax(1).sum().item<double>();\n"
          "  }\n  return correct;\n}\n}\n")
    [res] = lcpp(["--stats", "src/evaluate.cpp"], cwd=d)
    check([x["kind"] for x in res["diagnostics"]] == ["missing-headers"], res["diagnostics"])
    check(rules(res) == [("LL101", 10)], res["findings"])


def test_io_errors_and_garbage(d):
    write(d, "garbage.cpp", "\x01\x02}}}{{{ template < < < ((( ; int main( { return ]] \n" * 50)
    deep = "void f() {\n" + "if (x) " * 5000 + "g();\n}\n" + "int y = " + "(" * 3000 + "1" + ")" * 3000 + ";\n"
    write(d, "deep.cpp", deep)
    write(d, "unary.cpp", "int z = " + "- " * 20000 + "1;\n" + "int w = " + " + ".join(["a"] * 20000) + ";\n")
    write(d, "eval.cpp", BAD_EVAL)
    res = lcpp(["missing.cpp", "garbage.cpp", "deep.cpp", "unary.cpp", ".", "eval.cpp"], cwd=d)
    check(len(res) == 6, res)
    # The process goes on normally after a file that made Clang give up.
    check(rules(res[5]) == [("LL101", 6)] and res[5]["diagnostics"] == [], res[5])
    check(res[0]["diagnostics"][0]["kind"] == "io-error" and res[0]["diagnostics"][0]["fatal"], res[0])
    for r in res[1:4]:
        check(r["diagnostics"] and not r["diagnostics"][0]["fatal"], (r["path"], r["diagnostics"]))
    check(res[4]["diagnostics"][0]["fatal"], res[4])


def test_pch_cache_reuse(d):
    cache = os.path.join(d, "cache")
    write(d, "a.cpp", BAD_EVAL)
    write(d, "b.cpp", "// another file, same includes\n" + TRAIN_TOTAL)
    res = lcpp(["--stats", "--cache-dir", cache, "a.cpp", "b.cpp"], cwd=d)
    check([r["stats"]["pch"] for r in res] == ["built", "hit"], [r["stats"] for r in res])
    pchs = [f for f in os.listdir(os.path.join(cache, "pch-v1")) if f.endswith(".pch")]
    check(len(pchs) == 1, pchs)
    res = lcpp(["--stats", "--cache-dir", cache, "a.cpp"], cwd=d)
    check(res[0]["stats"]["pch"] == "hit", res[0]["stats"])
    # A project include directory whose *name* mentions torch (pytorch-cpp, libtorch_examples)
    # but that holds no LibTorch headers does not change the key: still the same PCH.
    inc = os.path.join(d, "my-pytorch-project", "include")
    write(d, "my-pytorch-project/include/net.h", "#pragma once\n")
    res = lcpp(["--stats", "--cache-dir", cache, "--extra-arg=-I" + inc, "a.cpp"], cwd=d)
    check(res[0]["stats"]["pch"] == "hit", res[0]["stats"])
    pchs = [f for f in os.listdir(os.path.join(cache, "pch-v1")) if f.endswith(".pch")]
    check(len(pchs) == 1, pchs)
    # A third-party header missing after <torch/torch.h> (and nowhere in the tree): skipped,
    # the rest is Clang's recovery with the PCH hit and LibTorch's real types. The finding
    # keeps its confidence; no fix is offered, since no edit could be checked by a compile.
    write(d, "c.cpp", BAD_EVAL.replace("#include <torch/torch.h>\n",
                                       "#include <torch/torch.h>\n#include <argparse/argparse.hpp>\n"))
    [rc] = lcpp(["--stats", "--cache-dir", cache, "c.cpp"], cwd=d)
    check(rc["stats"]["pch"] == "hit" and rc["stats"]["semantic"], rc["stats"])
    check([x["kind"] for x in rc["diagnostics"]] == ["missing-headers"], rc["diagnostics"])
    check("'argparse/argparse.hpp' not found" in rc["diagnostics"][0]["message"], rc["diagnostics"])
    check(rules(rc) == [("LL101", 7)], rules(rc))
    check(not rc["findings"][0]["low_confidence"] and rc["findings"][0]["fixes"] == [], rc["findings"])
    res2 = lcpp(["--stats", "--no-cache", "a.cpp"], cwd=d)
    check(res2[0]["stats"]["pch"] == "disabled" and rules(res2[0]) == rules(res[0]), res2[0]["stats"])


def test_driver(d):
    write(d, "a.cpp", BAD_EVAL)
    write(d, "b.cpp", TRAIN_TOTAL)
    write(d, "c.cpp", SUPPRESSED)
    p = run([ARGS.driver_test, "--companion", ARGS.leaklint_cpp, "--jobs", "2", "a.cpp", "b.cpp", "c.cpp"], cwd=d)
    check(p.returncode == 0, p.stderr)
    res = json.loads(p.stdout)
    check([r["path"] for r in res] == ["a.cpp", "b.cpp", "c.cpp"], res)
    check([(f["rule"], f["line"]) for f in res[0]["findings"]] == [("LL101", 6)], res[0])
    check([(f["rule"], f["line"]) for f in res[1]["findings"]] == [("LL102", 10)], res[1])
    check(res[2]["findings"][0]["suppressed"], res[2])
    check(res[0]["findings"][0]["path"] == "a.cpp" and res[0]["findings"][0]["fixes"] == 1, res[0])
    check(res[0]["source_bytes"] == len(BAD_EVAL), res[0])
    # Without the companion: one clear diagnostic per file.
    p = run([ARGS.driver_test, "--companion", "none", "a.cpp", "b.cpp"], cwd=d)
    res = json.loads(p.stdout)
    for r in res:
        check(len(r["diagnostics"]) == 1 and "-DLEAKLINT_ENABLE_CPP=ON" in r["diagnostics"][0]["message"], r)
    # A companion that crashes: a per-file internal diagnostic, no exception.
    fake = write(d, "fake-leaklint-cpp", "#!/bin/sh\nkill -SEGV $$\n")
    os.chmod(fake, 0o755)
    p = run([ARGS.driver_test, "--companion", fake, "a.cpp"], cwd=d)
    res = json.loads(p.stdout)
    check(res[0]["diagnostics"][0]["kind"] == "internal" and "signal" in res[0]["diagnostics"][0]["message"], res)


def leaklint(args, cwd, env=None):
    p = run([ARGS.leaklint] + args, cwd=cwd, env=env)
    check(p.returncode in (0, 1), "leaklint exited %d: %s" % (p.returncode, p.stderr))
    return p


def test_leaklint_mixed_project(d):
    """`leaklint DIR` sends .cpp files to leaklint-cpp and .py files to its own frontend."""
    write(d, "eval.cpp", BAD_EVAL)
    write(d, "quiet.cpp", SUPPRESSED)
    write(d, "ev.py", "import torch\n\ndef evaluate(model, loader):\n    for x in loader:\n        model(x)\n")
    p = leaklint(["--format", "json", "."], cwd=d, env={"LEAKLINT_CPP": ARGS.leaklint_cpp})
    check(p.returncode == 1, p.stdout)
    got = sorted((f["path"], f["rule"], f["line"]) for f in json.loads(p.stdout)["findings"])
    check(got == [("ev.py", "LL101", 5), ("eval.cpp", "LL101", 6)], got)
    p = leaklint(["--format", "sarif", "eval.cpp"], cwd=d, env={"LEAKLINT_CPP": ARGS.leaklint_cpp})
    res = json.loads(p.stdout)["runs"][0]["results"]
    check([r["ruleId"] for r in res] == ["LL101"], res)
    check(res[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 6, res)
    # Rule selection reaches the companion.
    p = leaklint(["--format", "json", "--ignore", "LL101", "eval.cpp"], cwd=d, env={"LEAKLINT_CPP": ARGS.leaklint_cpp})
    check(json.loads(p.stdout)["findings"] == [], p.stdout)


def test_leaklint_fix_cpp(d):
    path = write(d, "eval.cpp", BAD_EVAL)
    env = {"LEAKLINT_CPP": ARGS.leaklint_cpp}
    p = leaklint(["--diff", "--unsafe-fixes", "eval.cpp"], cwd=d, env=env)
    check("+  torch::NoGradGuard no_grad;" in p.stdout, p.stdout)
    check(open(path).read() == BAD_EVAL, "--diff wrote the file")
    # A fix whose result does not compile is rolled back: the file is unchanged. The broken
    # fix comes from a companion that wraps the real one and breaks every fix it reports
    # (the product has no switch for it); re-analysing the written file, the real
    # leaklint-cpp finds the compile error.
    wrapper = write(d, "broken-fixes-cpp",
                    "#!%s\nimport json, subprocess, sys\n"
                    "out = subprocess.run([%r] + sys.argv[1:], stdout=subprocess.PIPE).stdout\n"
                    "res = json.loads(out)\n"
                    "for r in res:\n"
                    "    for f in r.get('findings', []):\n"
                    "        for fx in f.get('fixes', []):\n"
                    "            for e in fx['edits']:\n"
                    "                e['text'] += '(:'\n"
                    "json.dump(res, sys.stdout)\n" % (sys.executable, ARGS.leaklint_cpp))
    os.chmod(wrapper, 0o755)
    p = leaklint(["--fix", "--unsafe-fixes", "eval.cpp"], cwd=d, env=dict(env, LEAKLINT_CPP=wrapper))
    check(open(path).read() == BAD_EVAL and "rolled back" in p.stderr, (p.stderr, open(path).read()))
    p = leaklint(["--fix", "--unsafe-fixes", "eval.cpp"], cwd=d, env=env)
    check(p.returncode == 0, p.stdout + p.stderr)
    text = open(path).read()
    check(text.count("torch::NoGradGuard no_grad;") == 1 and text.replace("  torch::NoGradGuard no_grad;\n", "") == BAD_EVAL,
          text)


def test_leaklint_companion_failures_stay_per_file(d):
    """One file that kills (or hangs) leaklint-cpp costs only that file's analysis."""
    write(d, "a.cpp", BAD_EVAL)
    write(d, "b.cpp", TRAIN_TOTAL)
    # (Each calls a forward, so that leaklint sends it to the companion at all.)
    write(d, "boom.cpp", "struct M { int forward(int); };\nint x(M& m) { return m.forward(0); }\n")
    write(d, "hang.cpp", "struct M { int forward(int); };\nint y(M& m) { return m.forward(1); }\n")
    fake = write(d, "flaky-leaklint-cpp", "#!/bin/sh\n"
                 "for a in \"$@\"; do case \"$a\" in *boom.cpp) kill -SEGV $$;; *hang.cpp) exec sleep 60;; esac; done\n"
                 "exec \"%s\" \"$@\"\n" % ARGS.leaklint_cpp)
    os.chmod(fake, 0o755)
    # (b.cpp's sum of back-propagated losses lives one pass: weak, shown with the flag.)
    p = leaklint(["--format", "json", "--show-low-confidence", "-j", "1", "a.cpp", "boom.cpp", "b.cpp", "hang.cpp"], cwd=d,
                 env={"LEAKLINT_CPP": fake, "LEAKLINT_CPP_TIMEOUT": "3"})
    out = json.loads(p.stdout)
    got = sorted((f["path"], f["rule"]) for f in out["findings"])
    check(got == [("a.cpp", "LL101"), ("b.cpp", "LL102")], got)
    diags = {x["path"]: x["message"] for x in out.get("errors", [])}
    check("signal" in diags.get("boom.cpp", ""), diags)
    check("longer than 3 s" in diags.get("hang.cpp", ""), diags)


def test_cpu_device_variable_is_no_gpu_evidence(d):
    # A program whose only device is `torch::Device device(torch::kCPU)`: the name `device`
    # places nothing on a GPU, so its memory findings are about host RAM (weak).
    prog = ("#include <torch/torch.h>\n"
            "int main() {\n"
            "  torch::Device device(torch::kCPU);\n"
            "  torch::nn::Linear model(4, 2);\n"
            "  model->to(device);\n"
            "  model->eval();\n"
            "  for (int i = 0; i < 100; ++i) std::cout << model(torch::rand({1, 4}).to(device)) << std::endl;\n"
            "}\n")
    write(d, "cpu.cpp", prog)
    [res] = lcpp(["cpu.cpp"], cwd=d)
    check(rules(res) == [("LL101", 7)] and res["findings"][0]["low_confidence"], res["findings"])
    # The same program on `torch::kCUDA`: full confidence.
    write(d, "gpu.cpp", prog.replace("torch::kCPU", "torch::kCUDA"))
    [res] = lcpp(["gpu.cpp"], cwd=d)
    check(rules(res) == [("LL101", 7)] and not res["findings"][0]["low_confidence"], res["findings"])



def test_cpu_only_project_weakens_memory_claims_in_files_without_main(d):
    # The CPU-only policy is decided per program, not per file: an evaluation helper in a file
    # without main() belongs to the project's programs. When no unit of the project places a
    # tensor on a GPU, its memory claim is weak; a unit that names CUDA (even one that never
    # reaches Clang) makes it strong again.
    p = os.path.join(d, "cpuproj")
    write(p, "classifier.cpp",
          "#include <torch/torch.h>\n#include <vector>\n"
          "int64_t predict_all(torch::nn::Linear model, const std::vector<torch::Tensor>& batches) {\n"
          "  int64_t n = 0;\n"
          "  for (const auto& x : batches) n += model->forward(x).argmax(1).sum().item<int64_t>();\n"
          "  return n;\n}\n")
    write(p, "main.cpp",
          "#include <torch/torch.h>\n"
          "int main() {\n  torch::Device device(torch::kCPU);\n  torch::nn::Linear net(4, 2);\n  net->to(device);\n"
          "  torch::optim::SGD opt(net->parameters(), 0.1);\n"
          "  for (int i = 0; i < 10; ++i) {\n    opt.zero_grad();\n"
          "    auto loss = net->forward(torch::randn({8, 4}).to(device)).sum();\n"
          "    loss.backward();\n    opt.step();\n  }\n}\n")
    env = {"LEAKLINT_CPP": ARGS.leaklint_cpp}

    def ll101():
        q = leaklint(["--format", "json", "--show-low-confidence", "--no-cache", "."], cwd=p, env=env)
        return [(f["path"], f["severity"], f["low_confidence"], "nothing in this project" in f["message"])
                for f in json.loads(q.stdout)["findings"] if f["rule"] == "LL101"]

    check(ll101() == [("classifier.cpp", "note", True, True)], ll101())
    # Hidden by default, like every weak finding.
    q = leaklint(["--format", "json", "--no-cache", "."], cwd=p, env=env)
    check(json.loads(q.stdout)["findings"] == [], q.stdout)
    # A CUDA unit that Clang never reads (no rule's pattern in it) is GPU evidence.
    write(p, "kernels/scale.cu", "__global__ void scale(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2; }\n")
    check(ll101() == [("classifier.cpp", "warning", False, False)], ll101())
    os.remove(os.path.join(p, "kernels", "scale.cu"))
    # So is a program on kCUDA.
    write(p, "main.cpp", open(os.path.join(p, "main.cpp")).read().replace("kCPU", "kCUDA"))
    check(ll101() == [("classifier.cpp", "warning", False, False)], ll101())


def test_one_shot_forward_weak_only_in_the_programs_own_main(d):
    # The runtime calls the global main() once: a single forward there is weak. A `main()` of a
    # namespace that the real one calls in a loop runs per job: full severity.
    src = os.path.join(ARGS.source_dir, "tests", "fixtures", "LL101")
    for name, weak in (("bad_weak_one_shot_forward_in_main.cpp", [True, False]),
                       ("bad_main_of_a_namespace_called_in_a_loop.cpp", [False])):
        write(d, name, open(os.path.join(src, name)).read())
        [res] = lcpp([name], cwd=d)
        got = [f["low_confidence"] for f in res["findings"] if f["rule"] == "LL101"]
        check(got == weak, (name, got))


TESTS = [v for k, v in sorted(globals().items()) if k.startswith("test_")]


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--leaklint-cpp", required=True)
    ap.add_argument("--driver-test", required=True)
    ap.add_argument("--leaklint", required=True)
    ap.add_argument("--source-dir", default="")
    ap.add_argument("only", nargs="*")
    ARGS = ap.parse_args()
    ARGS.leaklint_cpp = os.path.abspath(ARGS.leaklint_cpp)
    ARGS.driver_test = os.path.abspath(ARGS.driver_test)
    ARGS.leaklint = os.path.abspath(ARGS.leaklint)
    failed = 0
    for t in TESTS:
        if ARGS.only and not any(o in t.__name__ for o in ARGS.only):
            continue
        d = tempfile.mkdtemp(prefix="leaklint-cpp-test-")
        try:
            t(d)
            print("ok  ", t.__name__)
        except Exception:
            failed += 1
            print("FAIL", t.__name__)
            traceback.print_exc()
        finally:
            shutil.rmtree(d, ignore_errors=True)
    print("%d failed" % failed if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
