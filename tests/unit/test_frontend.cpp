// Python frontend: lowering, import resolution, error tolerance and depth bounds.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "checks/checks.hpp"
#include "cli/engine.hpp"
#include "frontend/python/python_frontend.hpp"
#include "rules/budget.hpp"
#include "rules/config.hpp"

using namespace ll;

namespace {

Module lower_src(const std::string& src, std::vector<Diagnostic>* diags = nullptr) {
  Module m;
  std::vector<Diagnostic> d;
  python::lower(src, "t.py", m, d);
  if (diags) *diags = d;
  return m;
}

const Expr* find_call(const Module& m, const std::string& qname) {
  for (const auto& e : m.exprs)
    if (e.kind == ExprKind::Call && m.exprs[e.kids[0]].qname == qname) return &e;
  return nullptr;
}

}  // namespace

TEST(PythonFrontend, ResolvesImportAliases) {
  Module m = lower_src(
      "import torch as t\n"
      "from torch import no_grad\n"
      "import torch.nn.functional as F\n"
      "from torch.utils.data import DataLoader as DL\n"
      "import torch.multiprocessing as mp\n"
      "t.no_grad()\nno_grad()\nF.cross_entropy(a, b)\nDL(ds, num_workers=2)\nmp.spawn(f)\n");
  EXPECT_NE(find_call(m, "torch.no_grad"), nullptr);
  EXPECT_NE(find_call(m, "torch.nn.functional.cross_entropy"), nullptr);
  const Expr* dl = find_call(m, "torch.utils.data.DataLoader");
  ASSERT_NE(dl, nullptr);
  ASSERT_EQ(dl->kw.size(), 1u);
  EXPECT_EQ(dl->kw[0], "num_workers");
  EXPECT_NE(find_call(m, "torch.multiprocessing.spawn"), nullptr);
}

TEST(PythonFrontend, UnrelatedNamesStayUnresolved) {
  Module m = lower_src("import requests\nno_grad = object()\nrequests.get(u)\nno_grad()\n");
  EXPECT_EQ(find_call(m, "torch.no_grad"), nullptr);
  EXPECT_NE(find_call(m, "requests.get"), nullptr);
}

TEST(PythonFrontend, AFunctionsOwnNamesAreNotTheImportsTheyShadow) {
  // Parameters and any name a function binds are its locals throughout it and in the
  // functions nested in it; outside, and in a decorator, the import stays.
  Module m = lower_src(
      "import model\nimport torch.nn.functional as F\nfrom torch import no_grad\n"
      "@model.register\n"
      "def train(model, x):\n    def inner(y):\n        return model(y)\n    return model(x)\n"
      "def act(x):\n    for F in fs:\n        F.relu(x)\n"
      "def safe(x):\n    try:\n        pass\n    except E as no_grad:\n        no_grad()\n"
      "def other(x):\n    return F.relu(model.Net()(x))\n");
  int module_calls = 0;
  for (const auto& e : m.exprs)
    if (e.kind == ExprKind::Call && m.exprs[e.kids[0]].kind == ExprKind::Name && m.exprs[e.kids[0]].text == "model")
      EXPECT_TRUE(m.exprs[e.kids[0]].qname.empty()) << "a parameter, not the module";
  for (const auto& e : m.exprs)
    if (e.kind == ExprKind::Attribute && e.text == "Net") module_calls += e.qname == "model.Net";
  EXPECT_EQ(module_calls, 1);
  bool decorator = false;
  for (const auto& e : m.exprs) decorator = decorator || (e.kind == ExprKind::Attribute && e.qname == "model.register");
  EXPECT_TRUE(decorator) << "a decorator runs outside the function";
  // `F` is a loop variable in act() only; `no_grad` a handler's name in safe() only.
  int relu = 0;
  for (const auto& e : m.exprs)
    if (e.kind == ExprKind::Call && m.exprs[e.kids[0]].text == "relu")
      relu += m.exprs[e.kids[0]].qname == "torch.nn.functional.relu";
  EXPECT_EQ(relu, 1);
  EXPECT_EQ(find_call(m, "torch.no_grad"), nullptr);
}

TEST(PythonFrontend, LowersStructure) {
  Module m = lower_src(
      "class Net(nn.Module):\n"
      "    def forward(self, x):\n"
      "        return x\n"
      "@torch.no_grad()\n"
      "def evaluate(model, loader):\n"
      "    for x in loader:\n"
      "        with torch.no_grad() as g:\n"
      "            out = model(x)\n"
      "    try:\n"
      "        pass\n"
      "    except RuntimeError as e:\n"
      "        raise\n");
  ASSERT_EQ(m.classes.size(), 1u);
  EXPECT_EQ(m.classes[0].name, "Net");
  ASSERT_EQ(m.funcs.size(), 2u);
  EXPECT_EQ(m.funcs[0].cls, 0u);
  EXPECT_EQ(m.funcs[1].name, "evaluate");
  EXPECT_EQ(m.funcs[1].decorators.size(), 1u);
  EXPECT_EQ((std::vector<std::string>{"model", "loader"}), m.funcs[1].params);
  const Stmt& loop = m.s(m.funcs[1].body[0]);
  EXPECT_EQ(loop.kind, StmtKind::For);
  const Stmt& with = m.s(loop.body[0]);
  EXPECT_EQ(with.kind, StmtKind::With);
  ASSERT_EQ(with.items.size(), 1u);
  EXPECT_NE(with.targets[0], kNone);
  const Stmt& tr = m.s(m.funcs[1].body[1]);
  ASSERT_EQ(tr.kind, StmtKind::Try);
  ASSERT_EQ(tr.handlers.size(), 1u);
  EXPECT_EQ(tr.handlers[0].name, "e");
  EXPECT_EQ(m.e(tr.handlers[0].type).text, "RuntimeError");
}

// The lowering reads parts by field and named children by index for small nodes, and
// falls back to a cursor for nodes with more than 12 children: both paths, comments and
// punctuation between the parts, and `async` before a definition's name.
TEST(PythonFrontend, ChildrenByFieldAndIndexMatchTheSource) {
  std::string args;
  for (int i = 0; i < 20; ++i) args += "a" + std::to_string(i) + ", # c\n  ";
  Module m = lower_src(
      "async def fetch(x, y=1, *rest, z: int = 2, w: str, **kw):\n"
      "    async for v in src:\n"
      "        pass\n"
      "def plain(a):\n"
      "    return a\n"
      "@deco\n"
      "async def decorated():\n"
      "    pass\n"
      "f(" + args + "key=(b # c\n  .c), **extra)\n"
      "t = (x, # c\n  y)\n"
      "r = obj . attr [ 1 , 2 ]\n"
      "a = b = c\n");
  ASSERT_EQ(m.funcs.size(), 3u);
  EXPECT_EQ(m.funcs[0].name, "fetch");
  EXPECT_EQ(m.funcs[0].params, (std::vector<std::string>{"x", "y", "z", "w"}));
  EXPECT_TRUE(m.s(m.funcs[0].stmt).is_async);
  EXPECT_TRUE(m.s(m.funcs[0].body[0]).is_async);  // async for
  EXPECT_FALSE(m.s(m.funcs[1].stmt).is_async);
  EXPECT_TRUE(m.s(m.funcs[2].stmt).is_async);
  ASSERT_EQ(m.funcs[2].decorators.size(), 1u);
  const Expr* call = nullptr;
  for (const auto& e : m.exprs)
    if (e.kind == ExprKind::Call && m.e(e.kids[0]).text == "f") call = &e;
  ASSERT_NE(call, nullptr);
  ASSERT_EQ(call->kids.size(), 23u);  // callee, 20 positional, key=, **extra
  EXPECT_EQ(m.e(call->kids[1]).text, "a0");
  EXPECT_EQ(m.e(call->kids[20]).text, "a19");
  EXPECT_EQ(call->kw, (std::vector<std::string>{"key", "**"}));
  const Expr& key = m.e(call->kids[21]);
  EXPECT_EQ(key.kind, ExprKind::Attribute);
  EXPECT_EQ(key.text, "c");
  EXPECT_EQ(m.e(key.kids[0]).text, "b");
  ASSERT_GE(m.body.size(), 7u);
  const Stmt& t = m.s(m.body[4]);
  ASSERT_EQ(t.kind, StmtKind::Assign);
  EXPECT_EQ(m.e(t.value).kids.size(), 2u);  // the comment is not an element
  const Expr& sub = m.e(m.s(m.body[5]).value);
  EXPECT_EQ(sub.kind, ExprKind::Subscript);
  EXPECT_EQ(sub.kids.size(), 3u);  // value, 1, 2
  EXPECT_EQ(m.e(sub.kids[0]).text, "attr");
  const Stmt& chain = m.s(m.body[6]);
  EXPECT_EQ(chain.targets.size(), 2u);
  EXPECT_EQ(m.e(chain.value).text, "c");
}

TEST(PythonFrontend, SyntaxErrorIsReportedAndRestIsLowered) {
  std::vector<Diagnostic> d;
  Module m = lower_src("def f(:\n    pass\n\ndef g():\n    return 1\n", &d);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].kind, "syntax-error");
  EXPECT_FALSE(d[0].fatal);
  bool has_g = false;
  for (const auto& f : m.funcs) has_g |= f.name == "g";
  EXPECT_TRUE(has_g);
}

TEST(PythonFrontend, SyntaxErrorPointsAtTheInnermostError) {
  // A list that lacks a comma inside a function: tree-sitter's recovery wraps the file from
  // its first import in one ERROR node. The diagnostic names the line of the missing comma.
  std::string src = "import argparse\nimport torch\n\n\ndef build(n: int, k: int):\n    sizes = [\n"
                    "        n + 1,\n        *[n for i in range(k - 2)]\n        n\n    ]\n"
                    "    for i, (a, b) for enumerate(zip(sizes, sizes[1:])):\n        pass\n    return sizes\n";
  std::vector<Diagnostic> d;
  lower_src(src, &d);
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d[0].kind, "syntax-error");
  EXPECT_GE(d[0].line, 8u) << d[0].message;
  EXPECT_LE(d[0].line, 9u) << d[0].message;
}

TEST(PythonFrontend, IndentationPythonRejectsIsASyntaxError) {
  // tree-sitter reads a tab as 8 columns and accepts what CPython rejects: tabs and spaces
  // whose order differs with tabs of 1 (TabError), a dedent between two levels
  // (IndentationError). Each is a syntax-error diagnostic at the first such line.
  struct Case {
    std::string src;
    uint32_t line;
    const char* error;
  };
  const Case bad[] = {
      {"import torch\ndef f():\n    a = 1\n\tb = 2\n    return a\n", 4, "TabError"},
      {"import torch\ntry:\n    import a\nexcept ImportError:\n    import b\n\timport c\n", 6, "TabError"},
      {"import torch\nclass A:\n    def f(self):\n\tpass\n", 4, "TabError"},
      {"import torch\nif x:\n\tif y:\n\t\ta = 1\n    b = 2\n", 5, "IndentationError"},
  };
  for (const Case& c : bad) {
    std::vector<Diagnostic> d;
    lower_src(c.src, &d);
    ASSERT_EQ(d.size(), 1u) << c.src;
    EXPECT_EQ(d[0].kind, "syntax-error") << c.src;
    EXPECT_EQ(d[0].line, c.line) << c.src;
    EXPECT_NE(d[0].message.find(c.error), std::string::npos) << d[0].message;
  }
  // Tabs used the same way throughout, and tabs inside strings and continuation lines: no
  // diagnostic.
  const std::string good[] = {
      "import torch\ndef f():\n\ta = 1\n\tif a:\n\t\treturn a\n\treturn 2\n",
      "import torch\ns = \"\"\"\n\tx\n    y\n\"\"\"\nt = [1,\n\t2,\n    3]\ndef g():\n    return s\n",
  };
  for (const std::string& src : good) {
    std::vector<Diagnostic> d;
    lower_src(src, &d);
    EXPECT_TRUE(d.empty()) << src << (d.empty() ? "" : d[0].message);
  }
}

TEST(PythonFrontend, DeepNestingIsBounded) {
  std::string src = "x = " + std::string(50000, '(') + "1" + std::string(50000, ')') + "\n";
  std::vector<Diagnostic> d;
  Module m = lower_src(src, &d);
  bool too_deep = false;
  for (const auto& x : d) too_deep |= x.kind == "too-deep";
  EXPECT_TRUE(too_deep);
}

TEST(PythonFrontend, CollectsComments) {
  Module m = lower_src("x = 1  # noqa: LL101\n# leaklint: ignore-file[LL4]\n");
  ASSERT_EQ(m.comments.size(), 2u);
  EXPECT_EQ(m.comments[0].line, 1u);
  EXPECT_EQ(m.comments[0].text, " noqa: LL101");
}

// ---- old Mac line endings ----------------------------------------------------------------

TEST(PythonFrontend, LoneCarriageReturnEndsALine) {
  // CPython reads a lone `\r` as a line end; so must the frontend (no false syntax error,
  // and statements on their own lines).
  std::vector<Diagnostic> diags;
  Module m = lower_src("import torch\r# note\rmodel = torch.load('m.pt')\rfor x in loader:\r    y = model(x)\r", &diags);
  EXPECT_TRUE(diags.empty()) << diags.front().message;
  ASSERT_EQ(m.body.size(), 3u);
  EXPECT_EQ(m.s(m.body[1]).range.line, 3u);
  EXPECT_EQ(m.s(m.body[2]).range.line, 4u);
  ASSERT_EQ(m.s(m.body[2]).body.size(), 1u);
  EXPECT_EQ(m.s(m.s(m.body[2]).body[0]).range.line, 5u);
  ASSERT_EQ(m.comments.size(), 1u);
  EXPECT_EQ(m.comments[0].line, 2u);
}

TEST(PythonFrontend, LoneCarriageReturnFileReportsAtTheRightLine) {
  const std::string src = "import torch\rmodel = torch.load('m.pt')\rfor x in loader:\r    y = model(x)\r";
  Config cfg;
  FileResult r = analyze_text("cr.py", src, cfg, EngineOptions{});
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.kind << ": " << d.message;
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].rule, "LL101");
  EXPECT_EQ(r.findings[0].range.line, 4u);
  EXPECT_EQ(r.findings[0].range.col, 9u);
  // Byte offsets are those of the original file (fixes edit it in place).
  EXPECT_EQ(src.substr(r.findings[0].range.begin, 8), "model(x)");
}

// ---- linear-time analysis ------------------------------------------------------------
// The work of a whole analysis (lowering, facts, checks) is counted by budget::tick() in
// every inner loop; doubling the input must not quadruple it. Counting work, not time,
// keeps these tests exact on any machine (and under sanitizers).

namespace {

std::string scaling_source(const std::string& shape, int n) {
  std::string s = "import torch\nmodel = torch.nn.Linear(2, 2)\n"
                  "opt = torch.optim.SGD(model.parameters(), lr=0.1)\ndef f(x):\n    return x\n";
  if (shape == "loop") {
    // One loop body with n calls: forwards, steps, backwards and plain calls.
    static const char* kBody[] = {"    y = model(x)\n", "    opt.step()\n", "    loss.backward()\n",
                                  "    y = f(x)\n"};
    s += "for x in loader:\n";
    for (int i = 0; i < n; ++i) s += kBody[i % 4];
  } else if (shape == "eval-loop") {
    s = "import torch\nmodel = torch.load('m.pt')\nfor x in loader:\n";
    for (int i = 0; i < n; ++i) s += "    y = model(x)\n";
  } else if (shape == "loaded-statements") {
    // A script of top-level forwards of a loaded model, each reported: what the check asks
    // of the file (its PyTorch era) or of the forward's scope must not rescan every call.
    s = "import torch\nmodel = torch.load('m.pt')\nmodel.eval()\n";
    for (int i = 0; i < n; ++i) s += "y" + std::to_string(i) + " = model(torch.load('x.pt'))\n";
  } else if (shape == "mlp-eval-loop") {
    // One evaluation loop of n forwards of a fully-connected model of visible size: its graph's
    // width is asked once for the loop, not once per forward.
    s = "import torch\nimport torch.nn as nn\nmodel = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 2)).cuda()\n"
        "def evaluate(loader):\n    model.eval()\n    for x in loader:\n";
    for (int i = 0; i < n; ++i) s += "        y" + std::to_string(i) + " = model(x)\n";
  } else if (shape == "eval-loops") {
    // n evaluation loops in one function of a file that imports an attribution library: the
    // attribution question is asked per loop, of that loop's calls.
    s = "import torch\nfrom captum.attr import Saliency\nmodel = torch.load('m.pt')\ndef evaluate(loader):\n    model.eval()\n";
    for (int i = 0; i < n; ++i) s += "    for x in loader:\n        y = model(x)\n";
  } else if (shape == "statements") {
    for (int i = 0; i < n; ++i) s += "y" + std::to_string(i) + " = model(x)\n";
  } else if (shape == "functions") {
    for (int i = 0; i < n; ++i)
      s += "def g" + std::to_string(i) + "(x):\n    return model(x)\ng" + std::to_string(i) + "(1)\n";
  } else if (shape == "methods") {
    s += "class Net(torch.nn.Module):\n";
    for (int i = 0; i < n; ++i)
      s += "    def m" + std::to_string(i) + "(self, v):\n        self.total += v\n        return self.m0(v)\n";
  } else if (shape == "helper-class") {
    // A plain class of n methods, each running its model attribute and keeping the output on
    // the object: what is asked of each method about its class (does another method load,
    // freeze, switch to eval mode or rebind the attribute; who calls it; which loops are
    // its own) must be asked of the class once, not by walking every method again.
    s += "class Engine:\n    def __init__(self, model):\n        self.model = model\n        self.hist = []\n";
    for (int i = 0; i < n; ++i)
      s += "    def m" + std::to_string(i) + "(self, x):\n        y = self.model(x)\n        self.hist.append(y)\n"
           "        return y\n";
  } else if (shape == "elif") {
    s += "if a == 0:\n    model(x)\n";
    for (int i = 1; i < n; ++i) s += "elif a == " + std::to_string(i) + ":\n    model(x)\n";
  } else if (shape == "with") {
    for (int i = 0; i < n; ++i) s += "with torch.no_grad():\n    y = model(x)\n";
  } else if (shape == "names") {
    // One function whose every statement brings new names, each asked about (the flow
    // core answers per name): one dataflow per name over the function would be quadratic.
    s += "def g(x, c):\n";
    for (int i = 0; i < n; ++i) {
      std::string m = "m" + std::to_string(i);
      s += "    " + m + " = torch.jit.load('p')\n    y = " + m + "(x)\n";
    }
  } else if (shape == "names-branches") {
    // The same with every name bound on two branches: dense per-name dataflow, bounded.
    s += "def g(x, c):\n";
    for (int i = 0; i < n; ++i) {
      std::string m = "m" + std::to_string(i);
      s += "    if c:\n        " + m + " = torch.jit.load('p')\n    else:\n        " + m +
           " = torch.jit.load('q')\n    y = " + m + "(x)\n";
    }
  } else if (shape == "helper-chain" || shape == "mode-chain") {
    // Three helpers, each calling the next n times, called from a training loop: LL205 follows
    // the loop's calls into same-file helpers, which must not walk every path of the chain
    // (n^3 calls), whether the chain switches modes (`t.eval()` at its end) or not.
    const std::string leaf = shape == "mode-chain" ? "    t.eval()\n" : "    t.add_(1)\n";
    for (const std::string g : {"f3", "f2", "f1"}) {
      s += "def " + g + "(t):\n";
      const std::string line = g == "f3" ? leaf : g == "f2" ? "    f3(t)\n" : "    f2(t)\n";
      for (int i = 0; i < n; ++i) s += line;
    }
    s += "def train(loader, model, optimizer):\n    for x, y in loader:\n        loss = model(x).sum()\n"
         "        optimizer.zero_grad()\n        loss.backward()\n        f1(model)\n        optimizer.step()\n";
  } else if (shape == "sampling-loop") {
    // A loop of steps that never trains, each forward fed what the loop computed from the one
    // before: whether a forward reads a chained name is asked per forward, of one answer per loop.
    s += "model = torch.jit.load('m.pt')\nx = torch.randn(8, 2)\nfor t in range(100):\n";
    for (int i = 0; i < n; ++i) s += "    y = model(x, t)\n    x = x - 0.1 * y\n";
  } else if (shape == "one-forward-function") {
    // A function of n forwards outside loops, called by a training loop (the one-forward
    // evaluation; LL205's question whether a forward's function trains), beside a factory of n
    // closures used under no_grad: each question is asked once per function.
    s += "def evaluate(model, x, flag=True):\n    model.eval()\n";
    for (int i = 0; i < n; ++i) s += "    y" + std::to_string(i) + " = model(x) if flag else x\n";
    s += "    return y0\ndef get_fns(model):\n";
    for (int i = 0; i < n; ++i) s += "    def f" + std::to_string(i) + "(z):\n        return model(z)\n";
    s += "    return f0, f1\ndef main(loader, model, opt):\n    for epoch in range(100):\n"
         "        for x in loader:\n            loss = model(x).sum()\n            opt.zero_grad()\n"
         "            loss.backward()\n            opt.step()\n        evaluate(model, x)\n"
         "        with torch.no_grad():\n            fns = get_fns(model)\n            print(fns[0](x))\n";
  } else if (shape == "findings") {
    // Many findings in one file (one per line): reporting each must not scan the others.
    s += "total = 0\nfor x in loader:\n    loss = model(x).sum()\n    loss.backward()\n";
    for (int i = 0; i < n; ++i) s += "    total += loss\n";
  }
  return s;
}

uint64_t analysis_work(const std::string& shape, int n) {
  Config cfg;
  const std::string src = scaling_source(shape, n);
  const uint64_t before = budget::steps();
  // (Work is counted in steps, exact on any machine; the time budget is lifted so that a slow
  // build, ASan's, measures the same shape instead of stopping at the deadline.)
  EngineOptions opts;
  opts.parse_timeout_ms = 600'000;
  FileResult r = analyze_text(shape + ".py", src, cfg, opts);
  for (const auto& d : r.diagnostics) ADD_FAILURE() << shape << ": " << d.kind << ": " << d.message;
  return budget::steps() - before;
}

}  // namespace

TEST(Scaling, AnalysisWorkIsLinearInTheInput) {
  for (const char* shape : {"loop", "eval-loop", "mlp-eval-loop", "eval-loops", "statements", "loaded-statements",
                            "functions", "methods", "helper-class", "elif", "with", "findings", "names", "names-branches",
                            "helper-chain", "mode-chain", "sampling-loop", "one-forward-function"}) {
    const uint64_t small = analysis_work(shape, 1000);
    const uint64_t large = analysis_work(shape, 2000);
    ASSERT_GT(small, 1000u) << shape;
    // Linear: ~2x. Quadratic parts make it ~4x (they dominate at this size).
    EXPECT_LT(static_cast<double>(large), 2.5 * static_cast<double>(small)) << shape << ": " << small << " -> " << large;
  }
}

// ---- the per-file budget covers the whole analysis -----------------------------------

TEST(Budget, ChecksStopAtTheDeadline) {
  Module m = lower_src(scaling_source("loop", 4000));
  Config cfg;
  budget::Scope expired(0);
  EXPECT_THROW(run_checks(m, cfg, "t.py", ""), budget::Exceeded);
}

TEST(Budget, AFileOverItIsATimeoutAndTheOthersStillReport) {
  const std::string dir = testing::TempDir() + "leaklint-budget-" + std::to_string(::getpid());
  ASSERT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
  const std::string big = dir + "/big.py", small = dir + "/small.py";
  {
    FILE* f = std::fopen(big.c_str(), "wb");
    const std::string s = scaling_source("loop", 20000);
    std::fwrite(s.data(), 1, s.size(), f);
    std::fclose(f);
    f = std::fopen(small.c_str(), "wb");
    const std::string t = "import torch\nmodel = torch.load('m.pt')\nfor x in loader:\n    y = model(x)\n";
    std::fwrite(t.data(), 1, t.size(), f);
    std::fclose(f);
  }
  ConfigResolver configs("", {}, {});
  EngineOptions opts;
  opts.jobs = 2;
  opts.max_work = 50'000;  // the budget as work, not time: exact on any machine
  std::string err;
  FileResult r_big = analyze_file(big, *configs.for_file(big, &err), opts);
  ASSERT_EQ(r_big.diagnostics.size(), 1u);
  EXPECT_EQ(r_big.diagnostics[0].kind, "timeout");
  EXPECT_TRUE(r_big.diagnostics[0].fatal);
  EXPECT_TRUE(r_big.findings.empty());
  std::vector<FileResult> all = analyze_all({big, small}, configs, opts);
  ASSERT_EQ(all.size(), 2u);
  ASSERT_EQ(all[0].diagnostics.size(), 1u);
  EXPECT_EQ(all[0].diagnostics[0].kind, "timeout");
  ASSERT_EQ(all[1].findings.size(), 1u);
  EXPECT_EQ(all[1].findings[0].rule, "LL101");
  std::remove(big.c_str());
  std::remove(small.c_str());
  std::remove(dir.c_str());
}
