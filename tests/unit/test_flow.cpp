// The flow-sensitive core (checks/flow.*): reaching bindings and liveness over each
// function's control-flow graph, and the questions Facts answers with them.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "checks/facts.hpp"
#include "checks/flow.hpp"
#include "frontend/python/python_frontend.hpp"
#include "rules/config.hpp"

using namespace ll;

namespace {

struct Fixture {
  Module m;
  Config cfg;
  std::unique_ptr<Facts> f;
  explicit Fixture(const std::string& src) {
    std::vector<Diagnostic> d;
    python::lower(src, "t.py", m, d);
    f = std::make_unique<Facts>(m, cfg, "t.py");
  }
  // The statement that starts on 1-based line `line` (the innermost one).
  Id stmt_at(uint32_t line) const {
    Id best = kNone;
    for (Id s = 0; s < m.stmts.size(); ++s)
      if (m.stmts[s].range.line == line) best = s;
    return best;
  }
  // Source text of the values of the bindings of `name` reaching line `line`.
  std::vector<std::string> reaching(uint32_t line, const std::string& name, bool* outside) const {
    std::vector<std::string> out;
    for (const Def& d : f->flow().reaching(stmt_at(line), name, outside))
      out.push_back(d.value == kNone ? "?" : std::to_string(m.exprs[d.value].range.line));
    return out;
  }
};

}  // namespace

TEST(Flow, StraightLineRebindingHidesTheEarlierBinding) {
  Fixture t(
      "def f(x):\n"        // 1
      "    m = Net()\n"    // 2
      "    y = m(x)\n"     // 3
      "    m = load()\n"   // 4
      "    z = m(x)\n");   // 5
  bool outside = true;
  EXPECT_EQ(t.reaching(3, "m", &outside), std::vector<std::string>{"2"});
  EXPECT_FALSE(outside);
  EXPECT_EQ(t.reaching(5, "m", &outside), std::vector<std::string>{"4"});
  EXPECT_FALSE(outside);
  // A parameter reaches from outside.
  t.reaching(3, "x", &outside);
  EXPECT_TRUE(outside);
}

TEST(Flow, BranchesJoinAndLoopsCarryBindingsAround) {
  Fixture t(
      "def f(c, xs):\n"          // 1
      "    if c:\n"              // 2
      "        m = A()\n"        // 3
      "    else:\n"              // 4
      "        m = B()\n"        // 5
      "    for x in xs:\n"       // 6
      "        y = m(x)\n"       // 7
      "        m = C()\n"        // 8
      "    return m\n");         // 9
  bool outside = true;
  auto at7 = t.reaching(7, "m", &outside);
  std::sort(at7.begin(), at7.end());
  EXPECT_EQ(at7, (std::vector<std::string>{"3", "5", "8"}));  // C() comes round the back edge
  EXPECT_FALSE(outside);
  auto at9 = t.reaching(9, "m", &outside);
  std::sort(at9.begin(), at9.end());
  EXPECT_EQ(at9, (std::vector<std::string>{"3", "5", "8"}));  // the loop may run zero times
}

TEST(Flow, DeleteUnbindsAndBreakLeavesTheLoop) {
  Fixture t(
      "def f(xs):\n"             // 1
      "    m = A()\n"            // 2
      "    del m\n"              // 3
      "    n = 1\n"              // 4
      "    for x in xs:\n"       // 5
      "        n = 2\n"          // 6
      "        break\n"          // 7
      "        n = 3\n"          // 8
      "    return n\n");         // 9
  bool outside = true;
  EXPECT_TRUE(t.reaching(4, "m", &outside).empty());
  EXPECT_FALSE(outside);
  auto at9 = t.reaching(9, "n", &outside);
  std::sort(at9.begin(), at9.end());
  EXPECT_EQ(at9, (std::vector<std::string>{"4", "6"}));  // n = 3 is unreachable
}

TEST(Flow, ExceptHandlersSeeBindingsOfTheTryBody) {
  Fixture t(
      "def f(x):\n"              // 1
      "    m = A()\n"            // 2
      "    try:\n"               // 3
      "        m = B()\n"        // 4
      "        m(x)\n"           // 5
      "    except E:\n"          // 6
      "        m(x)\n"           // 7
      "    finally:\n"           // 8
      "        m(x)\n");         // 9
  bool outside = true;
  auto at7 = t.reaching(7, "m", &outside);
  std::sort(at7.begin(), at7.end());
  EXPECT_EQ(at7, (std::vector<std::string>{"2", "4"}));
  auto at9 = t.reaching(9, "m", &outside);
  std::sort(at9.begin(), at9.end());
  EXPECT_EQ(at9, (std::vector<std::string>{"2", "4"}));
}

TEST(Flow, AttributeRebindingEndsWhatWasKnownOfItsAttributes) {
  Fixture t(
      "def f(self):\n"             // 1
      "    self.m.head = H()\n"    // 2
      "    self.m = M()\n"         // 3
      "    self.m.head(1)\n");     // 4
  bool outside = false;
  EXPECT_TRUE(t.reaching(4, "self.m.head", &outside).empty());
  EXPECT_TRUE(outside);  // whatever M() holds: known only from outside this function
}

TEST(Flow, ReadAfterFollowsPathsUntilTheNameIsBoundAgain) {
  Fixture t(
      "def f(p, xs):\n"                   // 1
      "    torch.cuda.empty_cache()\n"    // 2
      "    out = p(xs)\n"                 // 3
      "    del p\n"                       // 4
      "    q = 1\n"                       // 5
      "    torch.cuda.empty_cache()\n"    // 6
      "    q = 2\n"                       // 7
      "    return q\n");                  // 8
  EXPECT_TRUE(t.f->flow().read_after(t.stmt_at(2), "p"));   // used on line 3
  EXPECT_FALSE(t.f->flow().read_after(t.stmt_at(3), "p"));  // only deleted
  EXPECT_FALSE(t.f->flow().read_after(t.stmt_at(6), "q"));  // rebound before it is read
  EXPECT_TRUE(t.f->flow().read_after(t.stmt_at(2), "xs"));
}

TEST(Flow, ReadAfterGoesRoundLoops) {
  Fixture t(
      "def f(m, xs):\n"              // 1
      "    for x in xs:\n"           // 2
      "        y = m(x)\n"           // 3
      "        cleanup()\n");        // 4
  EXPECT_TRUE(t.f->flow().read_after(t.stmt_at(4), "m"));  // the next iteration's forward
}

TEST(Flow, FactsAnswerWhatAValueIsAtThatPoint) {
  // The forward before the rebinding is not a loaded model's; the one after is.
  Fixture t(
      "import torch\n"                            // 1
      "def f(x):\n"                               // 2
      "    model = Net()\n"                       // 3
      "    a = model(x)\n"                        // 4
      "    model = torch.jit.load('m.pt')\n"      // 5
      "    b = model(x)\n");                      // 6
  auto callee_on = [&](uint32_t line) {
    for (const CallSite& c : t.f->calls)
      if (t.m.exprs[c.call].range.line == line && t.m.exprs[t.m.exprs[c.call].kids[0]].text == "model")
        return t.m.exprs[c.call].kids[0];
    return kNone;
  };
  Id fn = t.m.funcs[0].stmt == kNone ? kNone : 0;
  ASSERT_NE(callee_on(4), kNone);
  EXPECT_FALSE(t.f->is_loaded_model(fn, callee_on(4)));
  EXPECT_TRUE(t.f->is_loaded_model(fn, callee_on(6)));
}

TEST(Flow, GraphsAreBuiltOnlyForFunctionsAskedAbout) {
  Fixture t(
      "def a():\n    x = 1\n    return x\n"
      "def b():\n    y = 2\n    return y\n");
  EXPECT_EQ(t.f->flow().nodes_built(), 0u);
  bool outside = false;
  t.f->flow().reaching(t.stmt_at(3), "x", &outside);
  EXPECT_EQ(t.f->flow().nodes_built(), 4u);  // entry, exit, two statements of a()
}

TEST(Flow, NameHeuristicsAreALastResortThatFindingsCanName) {
  Fixture t(
      "import torch\n"                                  // 1
      "def evaluate(net, model_path, loader):\n"        // 2
      "    scripted = torch.jit.load(model_path)\n"     // 3
      "    for x in loader:\n"                          // 4
      "        net(x)\n"                                // 5
      "        scripted(x)\n");                         // 6
  auto callee_on = [&](uint32_t line) {
    for (const CallSite& c : t.f->calls)
      if (t.m.exprs[c.call].range.line == line) return t.m.exprs[c.call].kids[0];
    return kNone;
  };
  EXPECT_TRUE(t.f->is_model_value(0, callee_on(5)));
  EXPECT_TRUE(t.f->model_by_name(0, callee_on(5)));       // only its name says `net` is a model
  EXPECT_TRUE(t.f->is_model_value(0, callee_on(6)));
  EXPECT_FALSE(t.f->model_by_name(0, callee_on(6)));      // bound to torch.jit.load(...)
}

TEST(Flow, StatementsWithABodyRunItInline) {
  // C++ blocks arrive as statements with a body; their statements are part of the graph.
  Module m;
  std::vector<Diagnostic> d;
  python::lower("def f(m):\n    g()\n    x = 1\n    return x\n", "t.py", m, d);
  // Wrap `x = 1` into a block statement after lowering, as the C++ frontend makes them.
  Id assign = kNone;
  for (Id s = 0; s < m.stmts.size(); ++s)
    if (m.stmts[s].kind == StmtKind::Assign) assign = s;
  ASSERT_NE(assign, kNone);
  Stmt block;
  block.kind = StmtKind::Other;
  block.range = m.stmts[assign].range;
  block.body = {assign};
  m.stmts.push_back(block);
  for (Id& s : m.funcs[0].body)
    if (s == assign) s = static_cast<Id>(m.stmts.size() - 1);
  Config cfg;
  Facts f(m, cfg, "t.py");
  Id ret = m.funcs[0].body.back();
  bool outside = true;
  auto defs = f.flow().reaching(ret, "x", &outside);
  ASSERT_EQ(defs.size(), 1u);
  EXPECT_EQ(defs[0].stmt, assign);
  EXPECT_FALSE(outside);
}

TEST(Flow, WorkStaysLinearWithManyNamesInOneFunction) {
  // Every name bound on two branches needs a dense dataflow of its own: without a bound that
  // is names x statements. The graph's work budget keeps it linear (over budget a name is
  // answered flow-insensitively).
  auto work_for = [](int n) {
    std::string src = "import torch\ndef f(x, c):\n";
    for (int i = 0; i < n; ++i) {
      std::string m = "m" + std::to_string(i);
      src += "    if c:\n        " + m + " = torch.jit.load('p')\n    else:\n        " + m +
             " = torch.jit.load('q')\n    y = " + m + "(x)\n";
    }
    Fixture t(src);
    for (const CallSite& c : t.f->calls) t.f->is_loaded_model(c.func, t.m.exprs[c.call].kids[0]);
    return t.f->flow().work_done();
  };
  size_t a = work_for(1000), b = work_for(2000);
  EXPECT_GT(a, 0u);
  EXPECT_LE(b, a * 5 / 2) << a << " -> " << b;
}

TEST(Flow, OneDominatingBindingNeedsNoDataflow) {
  std::string src = "import torch\ndef f(x):\n";
  for (int i = 0; i < 500; ++i)
    src += "    m" + std::to_string(i) + " = torch.jit.load('p')\n    y = m" + std::to_string(i) + "(x)\n";
  Fixture t(src);
  for (const CallSite& c : t.f->calls) {
    if (t.m.exprs[t.m.exprs[c.call].kids[0]].kind == ExprKind::Name &&
        t.m.exprs[t.m.exprs[c.call].kids[0]].text[0] == 'm') {
      EXPECT_TRUE(t.f->is_loaded_model(c.func, t.m.exprs[c.call].kids[0]));
    }
  }
  EXPECT_EQ(t.f->flow().work_done(), 0u);
}

TEST(Names, ALossNameIsTheSameWordTestAsTheNamesTokens) {
  // named_like_a_loss() scans in place; it must agree with name_tokens(), which splits at `_`,
  // `.`, digits, a capital after a small letter, and the last capital of a run before a small
  // letter (`MSELoss` is mse, loss; `DEVICE` is one word).
  auto by_tokens = [](std::string_view n) {
    for (const auto& t : ll::Facts::name_tokens(n))
      if (t == "loss" || t == "criterion" || t == "losses" || t == "nll" || t == "objective") return true;
    return false;
  };
  for (std::string_view n :
       {"loss", "Loss", "LOSS", "MSELoss", "NLLLoss", "VGGLoss", "computeMSELoss", "getBatchMSELoss", "NLLCriterion",
        "s_ALoss", "calc_dataset_loss", "get_current_loss", "cal_nll_with_label", "lossy", "gloss", "closs_fn",
        "bce_losses", "train_objective2", "Objective", "myLossFn", "a.loss", "loss3d", "nll_loss", "NllLoss",
        "criterion", "lossLOSS", "x", "", "L", "forward", "append", "Nll", "iouLoss", "LOSS_FN", "GANLoss",
        "LOSSES", "NLLloss", "TOTALLoss"})
    EXPECT_EQ(ll::Facts::named_like_a_loss(n), by_tokens(n)) << n;
}

TEST(Facts, AccessorsGivenNoExpressionAnswerNothing) {
  // `DDP(model=...)` has no positional argument: `arg` answers kNone, and every accessor
  // given kNone (or an id past the tables) reads an empty expression, never out of bounds.
  // (The fuzzer once crashed LL203 on `unplaced(arg(call, 0, "module"))`.)
  Fixture fx("import torch\nx = DDP()\ny = f(a=1)\n");
  const Facts& f = *fx.f;
  Id ddp = kNone, kwcall = kNone;
  for (Id i = 0; i < fx.m.exprs.size(); ++i)
    if (fx.m.exprs[i].kind == ExprKind::Call) (ddp == kNone ? ddp : kwcall) = i;
  ASSERT_NE(ddp, kNone);
  ASSERT_NE(kwcall, kNone);
  EXPECT_EQ(f.arg(ddp, 0, "module"), kNone);
  EXPECT_EQ(f.arg(kwcall, 0), kNone);
  EXPECT_NE(f.arg(kwcall, 0, "a"), kNone);
  EXPECT_EQ(f.unplaced(kNone), kNone);
  EXPECT_EQ(f.arg(kNone, 0, "module"), kNone);
  EXPECT_EQ(f.arg(f.arg(ddp, 0), 0), kNone);  // not a call
  EXPECT_EQ(f.dotted(f.unplaced(f.arg(ddp, 0, "module"))), "");
  EXPECT_EQ(fx.m.e(kNone).kind, ExprKind::Other);
  EXPECT_TRUE(fx.m.e(kNone).kids.empty());
  EXPECT_EQ(fx.m.s(kNone).kind, StmtKind::Other);
}

TEST(Names, AnUpperCaseNameIsOneWord) {
  // `DEVICE = config.DEVICE`, `MODEL`: a constant's spelling is one word, not one per letter;
  // camel case still splits (`trainLoader`, `HTTPServer`, `MSELoss`).
  using V = std::vector<std::string>;
  EXPECT_EQ(ll::Facts::name_tokens("DEVICE"), (V{"device"}));
  EXPECT_EQ(ll::Facts::name_tokens("MODEL_PATH"), (V{"model", "path"}));
  EXPECT_EQ(ll::Facts::name_tokens("trainLoader"), (V{"train", "loader"}));
  EXPECT_EQ(ll::Facts::name_tokens("HTTPServer"), (V{"http", "server"}));
  EXPECT_EQ(ll::Facts::name_tokens("MSELoss"), (V{"mse", "loss"}));
  EXPECT_EQ(ll::Facts::name_tokens("use_GPU2"), (V{"use", "gpu"}));
}

// for_each_expr shares one work stack per thread among nested walks: a walk started inside
// another's visit sees only its own expression, the outer walk goes on where it was, and a
// walk left by an exception leaves the next one whole.
TEST(ExprWalk, NestedWalksAndExceptionsKeepEachWalkWhole) {
  Fixture fx("y = f(a + b, g(c))\nz = h(d)\n");
  const Module& m = fx.m;
  auto names_under = [&](Id root) {
    std::vector<std::string> out;
    for_each_expr(m, root, [&](Id x) {
      if (m.exprs[x].kind == ExprKind::Name) out.push_back(m.exprs[x].text);
      return true;
    });
    return out;
  };
  const Id y = m.stmts[fx.stmt_at(1)].value, z = m.stmts[fx.stmt_at(2)].value;
  const std::vector<std::string> alone = names_under(y);
  EXPECT_EQ(alone, (std::vector<std::string>{"f", "a", "b", "g", "c"}));
  // Every call visited walks `z` inside the outer walk.
  std::vector<std::string> outer;
  for_each_expr(m, y, [&](Id x) {
    if (m.exprs[x].kind == ExprKind::Call) EXPECT_EQ(names_under(z), (std::vector<std::string>{"h", "d"}));
    if (m.exprs[x].kind == ExprKind::Name) outer.push_back(m.exprs[x].text);
    return true;
  });
  EXPECT_EQ(outer, alone);
  // A visit that throws part-way.
  EXPECT_THROW(for_each_expr(m, y, [&](Id x) -> bool {
                 if (m.exprs[x].kind == ExprKind::Name && m.exprs[x].text == "b") throw std::runtime_error("stop");
                 return true;
               }),
               std::runtime_error);
  EXPECT_EQ(names_under(z), (std::vector<std::string>{"h", "d"}));
  EXPECT_EQ(names_under(y), alone);
}
