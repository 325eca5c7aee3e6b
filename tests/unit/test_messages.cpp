// Messages are built from the same facts as their fixes, and read as English.
#include <gtest/gtest.h>

#include "checks/checks.hpp"
#include "cli/engine.hpp"
#include "tests/unit/only_finding.hpp"
#include "frontend/python/python_frontend.hpp"
#include "rules/config.hpp"
#include "rules/finding.hpp"

using namespace ll;

namespace {

using test::only;

}  // namespace

TEST(Messages, LL102ShowsTheExpressionItsFixWrites) {
  const std::string src =
      "import torch\n\n\ndef train(model, loader, opt):\n    total = 0\n    for x, y in loader:\n"
      "        loss = model(x).sum()\n        loss.backward()\n        opt.step()\n        opt.zero_grad()\n"
      "        total += loss / len(loader)\n    return total\n";
  const FileResult r = analyze_text("t.py", src, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL102");
  ASSERT_NE(f, nullptr);
  ASSERT_FALSE(f->fixes.empty());
  ASSERT_EQ(f->fixes[0].edits.size(), 1U);
  const std::string written = f->fixes[0].edits[0].text;
  EXPECT_EQ(written, "(loss / len(loader)).item()");
  EXPECT_NE(f->message.find("`" + written + "`"), std::string::npos) << f->message;
  EXPECT_EQ(f->message.find("len(loader).item()"), std::string::npos) << f->message;  // wrong precedence
}

TEST(Messages, LL403CountsWorkersInEnglish) {
  auto message_for = [](const std::string& workers) {
    const std::string src =
        "import torch\nfrom torch.utils.data import Dataset, DataLoader\n\n\nclass Frames(Dataset):\n"
        "    def __init__(self, paths):\n        self.paths = list(paths)\n\n    def __len__(self):\n"
        "        return len(self.paths)\n\n    def __getitem__(self, i):\n        return self.paths[i]\n\n\n"
        "loader = DataLoader(Frames(open('index.txt').read().split()), num_workers=" + workers + ")\n";
    const FileResult r = analyze_text("d.py", src, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL403");
    return f ? f->message : std::string("<no LL403>");
  };
  const std::string one = message_for("1"), four = message_for("4");
  EXPECT_NE(one.find("the worker ends up with a private copy"), std::string::npos) << one;
  EXPECT_NE(four.find("each of the 4 workers ends up with a private copy"), std::string::npos) << four;
  for (const std::string& m : {one, four}) {
    EXPECT_EQ(m.find("1 workers"), std::string::npos) << m;
    EXPECT_EQ(m.find("worker each"), std::string::npos) << m;
  }
}

TEST(Messages, LL103InAnInferenceLoopPointsAtNoGradNotBackward) {
  const std::string sampling =
      "import torch\n\n\ndef generate(model, tokens, steps):\n    hidden = None\n    for _ in range(steps):\n"
      "        logits, hidden = model(tokens, hidden)\n        tokens = logits.argmax(-1)\n    return tokens\n";
  // With LL101 enabled, LL101 reports this loop (same mechanism, same fix) and LL103 does not.
  EXPECT_EQ(only(analyze_text("g.py", sampling, Config{}, EngineOptions{}), "LL103"), nullptr);
  Config no_ll101;
  no_ll101.ignore = {"LL101"};
  const FileResult r = analyze_text("g.py", sampling, no_ll101, EngineOptions{});
  const Finding* f = only(r, "LL103");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("never back-propagates"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("torch.no_grad()"), std::string::npos) << f->message;
  EXPECT_EQ(f->message.find("backward()"), std::string::npos) << f->message;
  EXPECT_EQ(f->message.find("retain_graph"), std::string::npos) << f->message;
}

TEST(Messages, SizesNeverReadZeroKiB) {
  EXPECT_EQ(byte_size(0), "0 bytes");
  EXPECT_EQ(byte_size(1), "1 byte");
  EXPECT_EQ(byte_size(700), "700 bytes");
  EXPECT_EQ(byte_size(1024), "1 KiB");
  EXPECT_EQ(byte_size(1500), "2 KiB");
  EXPECT_EQ(byte_size(1024 * 1024), "1 MiB");
  EXPECT_EQ(byte_size(2516582), "2.4 MiB");
  EXPECT_EQ(too_large_message(700, 0), "file is 700 bytes, over the 0 bytes limit (--max-file-size); not analysed");
}

TEST(Messages, LL103InATrainingLoopSaysWhatWasMeasured) {
  // Measured (tests/verify/LL103): with backward() + step() every chunk the second chunk's
  // backward() fails, with or without retain_graph=True; memory and backward time grow only
  // where no step() runs between backward() calls.
  const std::string tbptt =
      "import torch\n\n\ndef train(model, chunks, opt):\n    hidden = None\n    for x, y in chunks:\n"
      "        opt.zero_grad()\n        out, hidden = model(x, hidden)\n"
      "        loss = (out - y).pow(2).mean()\n        loss.backward(retain_graph=True)\n        opt.step()\n";
  const FileResult r = analyze_text("t.py", tbptt, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL103");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("second iteration's backward() fails"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("where no step() runs between backward() calls"), std::string::npos)
      << f->message;
  EXPECT_EQ(f->message.find("without bound"), std::string::npos) << f->message;
}

TEST(Messages, LL103InALibTorchTrainingLoopSaysRetainGraphLetsItGrow) {
  // Measured (tests/verify/LL103, C++ pair): torch::optim::SGD updates the weights through
  // .data(), so with retain_graph the loop runs and grows instead of failing in chunk 2;
  // Adam & co. fail like Python. With an optimizer of unknown type the message says both.
  // The same loop, lowered by the Python frontend and checked as a C++ module.
  const std::string tbptt =
      "import torch\n\n\ndef train(model, chunks, opt):\n    hidden = None\n    for x, y in chunks:\n"
      "        opt.zero_grad()\n        out, hidden = model(x, hidden)\n"
      "        loss = (out - y).pow(2).mean()\n        loss.backward(retain_graph=True)\n        opt.step()\n";
  Module m;
  std::vector<Diagnostic> diags;
  ASSERT_TRUE(python::lower(tbptt, "t.py", m, diags));
  m.lang = Lang::Cpp;
  const std::vector<Finding> findings = run_checks(m, Config{}, "t.cpp", tbptt);
  const Finding* f = nullptr;
  for (const auto& x : findings)
    if (x.rule == "LL103") f = &x;
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("under torch::optim::SGD (which updates the weights through .data()) memory and "
                            "backward time grow every iteration"),
            std::string::npos)
      << f->message;
  EXPECT_NE(f->message.find("under the other optimizers backward() fails"), std::string::npos) << f->message;
  // A known optimizer: one effect, the measured one.
  for (const auto& [ctor, effect] : std::vector<std::pair<std::string, std::string>>{
           {"torch.optim.SGD(model.parameters(), lr=0.1)", "memory and backward time grow every iteration"},
           {"torch.optim.Adam(model.parameters())", "backward() fails on the weights that torch::optim::Adam's"}}) {
    std::string src = tbptt;
    src.replace(src.find("    hidden = None"), 0, "    opt = " + ctor + "\n");
    Module m2;
    std::vector<Diagnostic> d2;
    ASSERT_TRUE(python::lower(src, "t.py", m2, d2));
    m2.lang = Lang::Cpp;
    const Finding* g = nullptr;
    std::vector<Finding> again = run_checks(m2, Config{}, "t.cpp", src);
    for (const auto& x : again)
      if (x.rule == "LL103") g = &x;
    ASSERT_NE(g, nullptr) << ctor;
    EXPECT_NE(g->message.find(effect), std::string::npos) << g->message;
  }
}

TEST(Messages, LL402InLibTorchSpeaksOfWorkerThreadsAndMaxJobs) {
  // LibTorch's DataLoader workers are threads (each with its own copy of the dataset) and
  // it keeps up to max_jobs batches in flight; it has no prefetch_factor.
  const std::string src =
      "import torch\n\n\ndef make(ds):\n"
      "    return torch.utils.data.DataLoader(ds, batch_size=128, num_workers=10, max_jobs=40)\n";
  Module m;
  std::vector<Diagnostic> diags;
  ASSERT_TRUE(python::lower(src, "t.py", m, diags));
  m.lang = Lang::Cpp;
  const std::vector<Finding> findings = run_checks(m, Config{}, "t.cpp", src);
  const Finding* f = nullptr;
  for (const auto& x : findings)
    if (x.rule == "LL402") f = &x;
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("each worker is a thread"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("40 batches in flight"), std::string::npos) << f->message;
  EXPECT_EQ(f->message.find("separate process"), std::string::npos) << f->message;
  EXPECT_EQ(f->message.find("prefetch"), std::string::npos) << f->message;
}

TEST(Messages, LL101NamesTheEvidenceItActedOn) {
  // `.eval()` plus a test loader: the message says so, not "evaluation function `test`".
  const std::string src =
      "import torch\n\n\ndef test(model, test_loader):\n    model.eval()\n    correct = 0\n"
      "    for x, y in test_loader:\n        correct += (model(x).argmax(1) == y).sum().item()\n"
      "    return correct\n";
  const FileResult r = analyze_text("t.py", src, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("after `model.eval()`, in a loop over `test_loader`"), std::string::npos) << f->message;
  EXPECT_EQ(f->message.find("evaluation function"), std::string::npos) << f->message;
  // A description is not an identifier: no backticks around it.
  EXPECT_EQ(f->message.find("`an evaluation set`"), std::string::npos) << f->message;
}

TEST(Messages, LL101OffersNoNoGradFixOverCodeItCannotSeeThatTakesTheModel) {
  // The evaluation loop hands the model to another module's function (a saliency mask that
  // back-propagates through it): `no_grad` around the loop, or on the function, would make
  // that call raise. The finding stays; the fix is not offered. With only code the file shows,
  // it is.
  const std::string unseen =
      "import torch\nfrom cam import saliency_mask\n\n\ndef accuracy(net, batches):\n    net.eval()\n"
      "    correct = 0\n    for x, y in batches:\n        x = x.cuda() * saliency_mask(net, x.cuda())\n"
      "        correct += (net(x).argmax(1).cpu() == y).sum().item()\n    return correct\n";
  const FileResult r = analyze_text("acc.py", unseen, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->fixes.empty()) << f->fixes[0].title;
  std::string seen = unseen;
  seen.replace(seen.find("x.cuda() * saliency_mask(net, x.cuda())"), 39, "x.cuda()");
  const FileResult q = analyze_text("acc.py", seen, Config{}, EngineOptions{});
  const Finding* g = only(q, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->fixes.empty());
}

TEST(Messages, LL101PointsAtABareNoGradStatementThatDisablesNothing) {
  // `torch.no_grad()` on its own line (meant as `with torch.no_grad():`) builds a context
  // manager and drops it: the finding says so at that line.
  const std::string src =
      "import torch\nmodel = torch.load('m.pt').cuda()\nmodel.eval()\ntorch.no_grad()\n"
      "for x, y in test_loader:\n    print(model(x.cuda()).argmax(1).tolist())\n";
  const FileResult r = analyze_text("eval.py", src, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  bool noted = false;
  for (const Note& n : f->notes)
    noted = noted || (n.range.line == 4 && n.message.find("disabling nothing") != std::string::npos &&
                      n.message.find("`with torch.no_grad():`") != std::string::npos);
  EXPECT_TRUE(noted);
  // Used as a context manager, it is no note (and no finding).
  const FileResult ok = analyze_text(
      "eval.py", "import torch\nmodel = torch.load('m.pt').cuda()\nmodel.eval()\nwith torch.no_grad():\n"
                 "    for x, y in test_loader:\n        print(model(x.cuda()).argmax(1).tolist())\n",
      Config{}, EngineOptions{});
  EXPECT_EQ(only(ok, "LL101"), nullptr);
}
