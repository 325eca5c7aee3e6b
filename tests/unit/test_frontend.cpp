// Python frontend: lowering, import resolution, error tolerance and depth bounds.
#include <gtest/gtest.h>

#include "frontend/python/python_frontend.hpp"

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
