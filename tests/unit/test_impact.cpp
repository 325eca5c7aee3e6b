// The impact policy (docs/impact.md): when a finding's evidence or impact is weak it is
// reported one severity step lower, marked low-confidence, and its message says why.
#include <tuple>
#include <optional>
#include <gtest/gtest.h>

#include <map>

#include "cli/engine.hpp"
#include "tests/unit/only_finding.hpp"
#include "rules/config.hpp"

using namespace ll;

namespace {

using test::only;

// A tutorial-style script: an evaluation loop at top level.
std::string script(const std::string& device_line) {
  return "import torch\n"
         "model = torch.nn.Sequential(torch.nn.Conv1d(4, 8, 1), torch.nn.ReLU(), torch.nn.Conv1d(8, 2, 1))\n" +
         device_line +
         "model.eval()\n"
         "for x in [torch.randn(1, 4) for _ in range(3)]:\n"
         "    print(model(x))\n";
}

}  // namespace

TEST(Impact, ACpuOnlyProgramGetsAWeakMemoryFinding) {
  const FileResult r = analyze_text("demo.py", script(""), Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Note);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_NE(f->message.find("nothing in this program places a tensor on a GPU"), std::string::npos) << f->message;
}

TEST(Impact, SeedingCudaAndCudnnFlagsPlaceNothingOnAGpu) {
  // Reproducibility boilerplate in a CPU-only script: the CUDA generator's seed and cuDNN's
  // flags are settings, not placement. A real placement next to them still counts.
  const std::string boilerplate =
      "torch.cuda.manual_seed(0)\ntorch.cuda.manual_seed_all(0)\n"
      "torch.backends.cudnn.benchmark = False\ntorch.backends.cudnn.deterministic = True\n";
  const FileResult r = analyze_text("demo.py", script(boilerplate), Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  const FileResult g = analyze_text("demo.py", script(boilerplate + "model = model.cuda()\n"), Config{}, EngineOptions{});
  const Finding* h = only(g, "LL101");
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(h->low_confidence) << h->message;
  // Under a test for a GPU that guards only such settings, the test chooses nothing; one that
  // also moves the model does.
  const std::string guarded = "if torch.cuda.is_available():\n    torch.cuda.manual_seed(0)\n"
                              "    torch.backends.cudnn.deterministic = True\n";
  const FileResult k = analyze_text("demo.py", script(guarded), Config{}, EngineOptions{});
  const Finding* w = only(k, "LL101");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->low_confidence) << w->message;
  const FileResult p = analyze_text("demo.py", script(guarded + "    model = model.to('cuda')\n"), Config{}, EngineOptions{});
  const Finding* v = only(p, "LL101");
  ASSERT_NE(v, nullptr);
  EXPECT_FALSE(v->low_confidence) << v->message;
}

TEST(Impact, HuggingFaceModelsLoadOnTheCpuButItsTrainerPlacesTheModel) {
  // A decoding exercise: GPT-2 from the hub on the CPU, one forward per step in a helper.
  // Importing transformers places nothing; its Trainer does.
  const std::string notebook =
      "import torch\n"
      "from transformers import GPT2LMHeadModel, GPT2Tokenizer\n"
      "model = GPT2LMHeadModel.from_pretrained('gpt2')\n"
      "def greedy(model, ids, steps):\n"
      "    for _ in range(steps):\n"
      "        logits = model(ids).logits\n"
      "        ids = torch.cat([ids, logits[:, -1:].argmax(-1)], 1)\n"
      "    return ids\n"
      "print(greedy(model, torch.tensor([[50256]]), 20))\n";
  const FileResult r2 = analyze_text("decoding.py", notebook + "for i in range(3):\n    print(i)\n", Config{}, EngineOptions{});
  const Finding* f = only(r2, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  const FileResult g = analyze_text(
      "decoding.py", "from transformers import Trainer\n" + notebook + "for i in range(3):\n    print(i)\n", Config{},
      EngineOptions{});
  const Finding* h = only(g, "LL101");
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(h->low_confidence) << h->message;
}

TEST(Impact, ALightningTrainerToldToRunOnTheCpuPlacesNothingOnAGpu) {
  // A cookbook chapter trains with `pl.Trainer(accelerator="cpu")`, then evaluates by hand.
  auto program = [](const std::string& accelerator) {
    return "import torch\nimport lightning.pytorch as pl\nfrom models import Classifier\n"
           "model = Classifier()\n"
           "trainer = pl.Trainer(max_epochs=10, " + accelerator + ")\n"
           "trainer.fit(model, datamodule)\n"
           "model.eval()\n"
           "for x, y in datamodule.test_dataloader():\n"
           "    print(model(x).argmax(1).tolist())\n";
  };
  const FileResult cpu = analyze_text("tsc.py", program("accelerator=\"cpu\""), Config{}, EngineOptions{});
  const Finding* f = only(cpu, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  for (const std::string acc : {"accelerator=\"gpu\"", "accelerator=\"auto\"", "devices=1"}) {
    const FileResult g = analyze_text("tsc.py", program(acc), Config{}, EngineOptions{});
    const Finding* h = only(g, "LL101");
    ASSERT_NE(h, nullptr) << acc;
    EXPECT_FALSE(h->low_confidence) << acc << h->message;
  }
}

TEST(Impact, AnyGpuPlacementKeepsTheFullSeverity) {
  for (const std::string line : {"model = model.cuda()\n", "device = torch.device(dev_name)\nmodel.to(device)\n",
                                 "model.to('cuda:0')\n", "if torch.cuda.is_available():\n    pass\n"}) {
    const FileResult r = analyze_text("demo.py", script(line), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << line;
    EXPECT_EQ(f->severity, Severity::Warning) << line;
    EXPECT_FALSE(f->low_confidence) << line;
  }
}

TEST(Impact, AModuleOfDefinitionsIsNeverACpuOnlyProgram) {
  // Its callers may run it on a GPU.
  const std::string lib =
      "import torch\n"
      "def evaluate(model, loader):\n"
      "    model.eval()\n"
      "    for x in loader:\n"
      "        model(x)\n";
  const FileResult r = analyze_text("lib.py", lib, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Warning);
}

TEST(Impact, APerSampleContainerOfUnknownSizeIsWeakToo) {
  // One element per sample, but nothing shows how many samples: a tutorial's thousand
  // annotations cost a few MB per worker, a 550k-entry candidate list gigabytes.
  const std::string ds =
      "import json\nimport torch.utils.data\n"
      "class Lines(torch.utils.data.Dataset):\n"
      "    def __init__(self, path):\n"
      "        self.lines = json.load(open(path))\n"
      "    def __len__(self):\n"
      "        return len(self.lines)\n"
      "    def __getitem__(self, i):\n"
      "        return self.lines[i]\n"
      "loader = torch.utils.data.DataLoader(Lines('x'), num_workers=4)\n";
  const FileResult r = analyze_text("d.py", ds, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL403");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_EQ(f->severity, Severity::Note);
  EXPECT_NE(f->message.find("dataset's size is not visible"), std::string::npos) << f->message;
}

TEST(Impact, ACpuSectionBeforeTheFirstGpuUseIsWeak) {
  // A tutorial notebook: the first sections train and test on the CPU, the last one moves a
  // model to CUDA. The CPU sections' test loops ran before anything could use a GPU; the
  // CUDA section's loop, and a function (which later code may call with a GPU model), keep
  // the full severity.
  const std::string nb =
      "import torch\n"
      "model = torch.nn.Sequential(torch.nn.Conv1d(4, 8, 1), torch.nn.ReLU(), torch.nn.Conv1d(8, 2, 1))\n"
      "model.eval()\n"
      "for x in test_loader:\n"
      "    print(model(x).argmax(-1))\n"
      "def evaluate(net, loader):\n"
      "    net.eval()\n"
      "    return [net(x).argmax(-1) for x in loader]\n"
      "device = torch.device('cuda')\n"
      "model = torch.nn.Sequential(torch.nn.Conv1d(4, 8, 1), torch.nn.ReLU(), torch.nn.Conv1d(8, 2, 1)).to(device)\n"
      "model.eval()\n"
      "for x in test_loader:\n"
      "    print(model(x.to(device)).argmax(-1))\n";
  const FileResult r = analyze_text("sections.ipynb.py", nb, Config{}, EngineOptions{});
  std::map<uint32_t, bool> weak_by_line;
  for (const Finding& f : r.findings)
    if (f.rule == "LL101") weak_by_line[f.range.line] = f.low_confidence;
  ASSERT_EQ(weak_by_line.count(5), 1u) << r.findings.size();
  EXPECT_TRUE(weak_by_line[5]);
  ASSERT_EQ(weak_by_line.count(8), 1u);
  EXPECT_FALSE(weak_by_line[8]);
  ASSERT_EQ(weak_by_line.count(13), 1u);
  EXPECT_FALSE(weak_by_line[13]);
  for (const Finding& f : r.findings) {
    if (f.range.line == 5) {
      EXPECT_NE(f.message.find("nothing before this point of the program places a tensor on a GPU"), std::string::npos)
          << f.message;
    }
  }
}

TEST(Impact, AModelSwapInACpuOnlyProgramIsWeak) {
  // k-fold cross-validation in a notebook: a fresh model per fold from a factory the file does
  // not show (a builder of the file that builds on the CPU is no switch at all:
  // LL301/ok_models_from_a_builder_that_builds_on_the_cpu.py), all on the CPU.
  const std::string nb =
      "import torch\n"
      "def get_net():\n"
      "    return make_model(n_features)\n"
      "for k in range(5):\n"
      "    net = get_net()\n"
      "    train(net, k)\n";
  const FileResult cpu = analyze_text("kfold.py", nb, Config{}, EngineOptions{});
  const Finding* f = only(cpu, "LL301");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  // (The device must be used: one chosen and never read places nothing.)
  std::string gpu_nb = "import torch\ndevice = 'cuda'\n" + nb.substr(nb.find('\n') + 1);
  gpu_nb.replace(gpu_nb.find("train(net, k)"), 13, "train(net, k, device)");
  const FileResult gpu = analyze_text("kfold.py", gpu_nb, Config{}, EngineOptions{});
  const Finding* g = only(gpu, "LL301");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence);
}

TEST(Impact, ASmallModelOfVisibleSizeSwappedOnTheGpuIsWeak) {
  // A per-seed MLP of 4.7M parameters, built from layers of literal sizes: two of them cost
  // tens of MB. A model whose size is not visible (a width read from data, a pretrained
  // backbone), or a large one, keeps the full severity.
  auto program = [](const std::string& layers) {
    return "import torch\n"
           "import torch.nn as nn\n"
           "class Classifier(nn.Module):\n"
           "    def __init__(self):\n"
           "        super().__init__()\n" +
           layers +
           "        self.act = nn.Sigmoid()\n"
           "    def forward(self, x):\n"
           "        return self.out(self.act(self.l1(x)))\n"
           "for seed in range(3):\n"
           "    model = Classifier().to('cuda')\n"
           "    train(model, seed)\n";
  };
  {
    const FileResult r = analyze_text("seeds.py", program("        self.l1 = nn.Linear(429, 2048)\n"
                                                          "        self.out = nn.Sequential(nn.Linear(2048, 2048), nn.ReLU(), nn.Linear(2048, 39))\n"),
                                      Config{}, EngineOptions{});
    const Finding* f = only(r, "LL301");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
    EXPECT_NE(f->message.find("5.2M parameters (about 21 MB in float32)"), std::string::npos) << f->message;
  }
  for (const std::string& layers : {std::string("        self.l1 = nn.Linear(width, 2048)\n        self.out = nn.Linear(2048, 39)\n"),
                                    std::string("        self.l1 = nn.Linear(4096, 4096)\n        self.out = nn.Linear(4096, 4096)\n"),
                                    std::string("        self.l1 = timm.create_model('resnet50')\n        self.out = nn.Linear(2048, 39)\n"),
                                    std::string("        self.l1 = nn.Sequential()\n        self.out = nn.Linear(2048, 39)\n"
                                                "        self.l1.add_module('h', nn.Linear(width, 2048))\n")}) {
    const FileResult r = analyze_text("seeds.py", program(layers), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL301");
    ASSERT_NE(f, nullptr) << layers;
    EXPECT_FALSE(f->low_confidence) << layers << f->message;
  }
  // A builder that grows an empty Sequential with add_module: its size is not visible.
  const std::string grown =
      "import torch\nimport torch.nn as nn\n"
      "def build_model(n):\n"
      "    model = nn.Sequential()\n"
      "    model.add_module('h1', nn.Linear(4, 8))\n"
      "    for i in range(n):\n"
      "        model.add_module('h%d' % i, nn.Linear(8, 8))\n"
      "    return model\n"
      "for i in range(3):\n"
      "    model = build_model(i).to('cuda')\n"
      "    train(model)\n";
  const FileResult gr = analyze_text("grown.py", grown, Config{}, EngineOptions{});
  const Finding* g = only(gr, "LL301");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence) << g->message;
}

TEST(Impact, AWorkerCountWithinTheInflightBudgetIsWeak) {
  // num_workers=16 with the default prefetch_factor=2: 32 batches in flight, within the
  // budget; only the worker count is above max-workers. 24 workers: 48 in flight, a count GPU
  // hosts commonly give one process, weak too. 48 workers: 96 in flight, full.
  auto ll402 = [](int workers) {
    const std::string src = "import torch\n\ndef make(ds):\n"
                            "    return torch.utils.data.DataLoader(ds, batch_size=64, num_workers=" +
                            std::to_string(workers) + ")\n";
    const FileResult r = analyze_text("loader.py", src, Config{}, EngineOptions{});
    return r;
  };
  const FileResult sixteen = ll402(16);
  const Finding* weak = only(sixteen, "LL402");
  ASSERT_NE(weak, nullptr);
  EXPECT_TRUE(weak->low_confidence);
  EXPECT_NE(weak->message.find("32 batches in flight (16 workers x prefetch_factor 2) are within max-inflight-batches"),
            std::string::npos)
      << weak->message;
  const FileResult common = ll402(24);
  const Finding* usual = only(common, "LL402");
  ASSERT_NE(usual, nullptr);
  EXPECT_TRUE(usual->low_confidence);
  EXPECT_NE(usual->message.find("24 workers is a count GPU hosts commonly give one process"), std::string::npos)
      << usual->message;
  const FileResult many = ll402(48);
  const Finding* full = only(many, "LL402");
  ASSERT_NE(full, nullptr);
  EXPECT_FALSE(full->low_confidence);
  EXPECT_EQ(full->severity, Severity::Warning);
}

TEST(Impact, AOneShotForwardAtTheTopLevelIsWeakButAServingFunctionIsNot) {
  // A demo: load a model on the GPU, run one image, print the class. Once, then exit.
  const std::string top = "import torch\nmodel = torch.jit.load('m.pt').cuda()\n"
                          "x = torch.load('img.pt').cuda()\nprint(model(x).argmax())\n";
  const FileResult demo = analyze_text("demo.py", top, Config{}, EngineOptions{});
  const Finding* weak = only(demo, "LL101");
  ASSERT_NE(weak, nullptr);
  EXPECT_TRUE(weak->low_confidence);
  EXPECT_NE(weak->message.find("a single forward at the top level"), std::string::npos) << weak->message;
  // The same forward in a function that serves requests runs once per request.
  const std::string fn = "import torch\nmodel = torch.jit.load('m.pt').cuda()\n"
                         "def predict(x):\n    return model(x.cuda()).argmax()\n";
  const FileResult serve = analyze_text("serve.py", fn, Config{}, EngineOptions{});
  const Finding* full = only(serve, "LL101");
  ASSERT_NE(full, nullptr);
  EXPECT_FALSE(full->low_confidence);
}

TEST(Impact, ASmallContainerIsALowConfidenceNote) {
  const std::string ds =
      "import glob\nimport torch.utils.data\n"
      "class D(torch.utils.data.Dataset):\n"
      "    def __init__(self, root):\n"
      "        self.shards = sorted(glob.glob(root))\n"
      "        self.n = 1000\n"
      "    def __len__(self):\n"
      "        return self.n\n"
      "    def __getitem__(self, i):\n"
      "        return self.shards[0], i\n"
      "loader = torch.utils.data.DataLoader(D('x'), num_workers=4)\n";
  const FileResult r = analyze_text("d.py", ds, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL403");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_NE(f->message.find("low confidence:"), std::string::npos);
}

TEST(Impact, AFewBackpropagatedLossesKeptInAConstantLoopAreWeak) {
  // 50 steps of a toy regression keep 50 scalars whose saved tensors backward() freed; the
  // same append in a loop over batches, or of a loss never back-propagated, stays an error.
  auto program = [](const std::string& loop, const std::string& backward) {
    return "import torch\n"
           "model = torch.nn.Linear(2, 1).cuda()\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
           "history = []\n"
           "epochs = 50\n" +
           loop +
           "    loss = ((model(x) - y) ** 2).mean()\n" + backward +
           "    opt.step()\n"
           "    history.append(loss)\n";
  };
  const std::string backward = "    loss.backward()\n";
  {
    const FileResult r = analyze_text("toy.py", program("for _ in range(50):\n", backward), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
    EXPECT_NE(f->message.find("run at most 50 times"), std::string::npos) << f->message;
  }
  // Behind a progress bar: `trange(epochs, desc=...)`, `tqdm(range(50))`, through a name.
  for (const std::string loop : {"for _ in trange(epochs, desc='loss'):\n", "for _ in tqdm(range(50)):\n",
                                 "bar = trange(epochs, leave=True)\nfor _ in bar:\n"}) {
    const FileResult r = analyze_text("toy.py", "from tqdm import tqdm, trange\n" + program(loop, backward), Config{},
                                      EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << loop;
    EXPECT_TRUE(f->low_confidence) << loop << f->message;
    EXPECT_NE(f->message.find("run at most 50 times"), std::string::npos) << f->message;
  }
  {
    const FileResult r = analyze_text("toy.py", "from tqdm import tqdm\n" + program("for x, y in tqdm(loader):\n", backward),
                                      Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->low_confidence) << f->message;
  }
  {
    const FileResult r = analyze_text("toy.py", program("for _ in range(epochs):\n", backward), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
  }
  for (const auto& [loop, bw] : std::vector<std::pair<std::string, std::string>>{
           {"for x, y in loader:\n", backward},
           {"for _ in range(100000):\n", backward},
           {"for _ in range(50):\n", "    loss.backward(retain_graph=True)\n"},
           {"for _ in range(50):\n", "    (loss * 2).backward()\n"}}) {
    const FileResult r = analyze_text("toy.py", program(loop, bw), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << loop << bw;
    EXPECT_FALSE(f->low_confidence) << loop << bw;
    EXPECT_EQ(f->severity, Severity::Error) << loop << bw;
  }
}

TEST(Impact, AGradOffConstructorIsWeakEvidenceOnlyOnItsOwnThread) {
  // An inference wrapper whose __init__ switches grad off: weak on the thread that built it.
  // A file that starts threads, a method the constructor calls, or a class method keeps the
  // error.
  auto program = [](const std::string& head, const std::string& init_tail, const std::string& deco,
                    const std::string& main) {
    return "import torch\n" + head +
           "class Predictor:\n"
           "    def __init__(self, path):\n"
           "        torch.set_grad_enabled(False)\n"
           "        self.model = torch.jit.load(path).cuda().eval()\n" +
           init_tail + deco +
           "    def predict(self, batch):\n"
           "        return self.model(batch.cuda()).argmax(1).cpu()\n"
           "def main(paths):\n" +
           main;
  };
  const std::string serial = "    p = Predictor('m.pt')\n    for path in paths:\n        print(p.predict(torch.load(path)))\n";
  {
    const FileResult r = analyze_text("serve.py", program("", "", "", serial), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence) << f->message;
    EXPECT_NE(f->message.find("switches grad off for the thread"), std::string::npos) << f->message;
  }
  for (const auto& [head, tail, deco, main] : std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"import threading\n", "", "", serial},
           {"from concurrent.futures import ThreadPoolExecutor\n", "", "",
            "    p = Predictor('m.pt')\n    with ThreadPoolExecutor(4) as ex:\n"
            "        list(ex.map(p.predict, [torch.load(x) for x in paths]))\n"},
           {"from flask import Flask\n", "", "", serial},
           {"", "        self.warm = self.predict(torch.zeros(1, 3))\n", "", serial},
           {"", "", "    @classmethod\n", serial}}) {
    const FileResult r = analyze_text("serve.py", program(head, tail, deco, main), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << head << tail << deco;
    EXPECT_FALSE(f->low_confidence) << head << tail << deco << f->message;
  }
}

TEST(Impact, AnElementOfAFewBackpropagatedValuesIsWeak) {
  // Three reconstructions, each optimised by an inner loop that back-propagates through the
  // image; an element of the last image is kept for display. Its graph's saved tensors were
  // freed by backward(): three elements and their autograd nodes. Over batches, an error.
  auto program = [](const std::string& loop) {
    return "import torch\n"
           "kept = []\n" +
           loop +
           "    net = torch.nn.Conv2d(3, 3, 3).cuda()\n"
           "    opt = torch.optim.Adam(net.parameters())\n"
           "    for j in range(3000):\n"
           "        x_hat = net(z)[:, :, :60, :60]\n"
           "        loss = torch.nn.functional.mse_loss(x_hat, target)\n"
           "        opt.zero_grad()\n"
           "        loss.backward()\n"
           "        opt.step()\n"
           "    kept.append(x_hat[0])\n";
  };
  {
    const FileResult r = analyze_text("dip.py", program("for i in range(3):\n"), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence) << f->message;
    EXPECT_NE(f->message.find("run at most 3 times"), std::string::npos) << f->message;
  }
  {
    const FileResult r = analyze_text("dip.py", program("for z, target in loader:\n"), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->low_confidence) << f->message;
  }
}

TEST(Impact, AFewValuesBackpropagatedThroughWhatTheyComputeAreWeak) {
  // Ten gradient steps on a latent keep ten generated images for display; each iteration
  // back-propagates a score computed from the image, which frees its saved tensors. In a
  // loop over batches the same list is an error, and its fix detaches the element.
  auto program = [](const std::string& loop) {
    return "import torch\n"
           "gen = torch.nn.Linear(2, 4).cuda()\n"
           "critic = torch.nn.Linear(4, 1).cuda()\n"
           "noise = torch.randn(8, 2, device='cuda').requires_grad_()\n"
           "history = []\n" +
           loop +
           "    fake = gen(noise)\n"
           "    history += [fake]\n"
           "    score = critic(fake).mean()\n"
           "    score.backward()\n";
  };
  {
    const FileResult r = analyze_text("steer.py", program("for i in range(10):\n"), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence) << f->message;
    EXPECT_NE(f->message.find("run at most 10 times"), std::string::npos) << f->message;
  }
  {
    const FileResult r = analyze_text("steer.py", program("for batch in loader:\n"), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->low_confidence) << f->message;
    EXPECT_NE(f->message.find("store `fake.detach()`"), std::string::npos) << f->message;
    ASSERT_EQ(f->fixes.size(), 1u);
    ASSERT_EQ(f->fixes[0].edits.size(), 1u);
    EXPECT_EQ(f->fixes[0].edits[0].text, "fake.detach()");
  }
}

TEST(Impact, AnEvaluationLoopThatRunsAFewTimesIsWeak) {
  // A loop that breaks after its first batch, or a constant two iterations, is a demo: a few
  // single forwards. A loop over the whole loader keeps the full severity.
  auto program = [](const std::string& loop, const std::string& tail) {
    return "import torch\n"
           "model = torch.load('ae.pt').cuda()\n"
           "model.eval()\n" +
           loop + "    out = model(x.cuda())\n" + tail;
  };
  struct Case { std::string loop, tail, reason; };
  for (const Case& c : {Case{"for x, _ in test_loader:\n", "    break\n", "the loop runs once"},
                        Case{"for i in range(2):\n    x = test_set[i][0]\n", "", "the loop runs 2 times"},
                        // (The test at the top of the body stops the fourth pass before its forward.)
                        Case{"for ix, (x, _) in enumerate(test_loader):\n    if ix == 3:\n        break\n", "",
                             "the loop runs 3 times"},
                        // A written-out list, bound again later (a notebook's next cell): the
                        // binding that reaches the loop counts.
                        Case{"sizes = [100, 600, 1000]\nfor n in sizes:\n    x = subset(n)\n",
                             "sizes = [100, 600, 1000, 3000]\n", "the loop runs 3 times"}}) {
    const FileResult r = analyze_text("demo.py", program(c.loop, c.tail), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << c.loop;
    EXPECT_TRUE(f->low_confidence) << c.loop;
    EXPECT_NE(f->message.find(c.reason), std::string::npos) << f->message;
  }
  const FileResult r = analyze_text("demo.py", program("for x, _ in test_loader:\n", ""), Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence);
}

TEST(Impact, OneItemPerForwardWhoseOutputsDieInTheIterationIsWeak) {
  // A greedy decoding of one sentence: a batch of one, its output turned into a number in the
  // iteration. Kept outputs, a carried state or batches keep the full severity.
  auto program = [](const std::string& input, const std::string& body) {
    // (The target starts as one token, one item, unless the source is a batch.)
    const bool batch = input.find("unsqueeze(1)") != std::string::npos || input.find("batch") != std::string::npos;
    return "import torch\n"
           "model = torch.load('nmt.pt').cuda()\n"
           "model.eval()\n"
           "src = " + input + "\n"
           "tgt = " + (batch ? "starts.cuda()" : "torch.tensor([1]).unsqueeze(0).cuda()") + "\n"
           "kept = []\n"
           "for i in range(int(input())):\n"
           "    out = model(src, tgt)\n" + body;
  };
  const std::string decode = "    tok = out[:, -1].argmax(-1).item()\n"
                             "    tgt = torch.cat((tgt, torch.tensor([[tok]]).cuda()), dim=1)\n";
  for (const std::string input : {"torch.tensor(ids).unsqueeze(0).cuda()", "torch.from_numpy(np.reshape(a, (1, -1))).cuda()",
                                  "x[None].cuda()", "torch.tensor([ids]).cuda()"}) {
    const FileResult r = analyze_text("demo.py", program(input, decode), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << input;
    EXPECT_TRUE(f->low_confidence) << input;
    EXPECT_NE(f->message.find("a batch of one"), std::string::npos) << f->message;
  }
  struct Case { std::string input, body; };
  for (const Case& c : {Case{"torch.tensor(ids).unsqueeze(0).cuda()", "    kept.append(out)\n"},
                        Case{"torch.tensor(ids).unsqueeze(0).cuda()", decode + "print(out.sum().item())\n"},
                        Case{"torch.tensor(ids).unsqueeze(0).cuda()", "    tgt = out\n"},
                        Case{"torch.tensor(ids).unsqueeze(1).cuda()", decode},
                        Case{"batch.cuda()", decode}}) {
    const FileResult r = analyze_text("demo.py", program(c.input, c.body), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << c.input << c.body;
    EXPECT_FALSE(f->low_confidence) << c.input << c.body << f->message;
  }
}

TEST(Impact, AFixedLoopOfUpTo16ForwardsInCodeThatRunsOnceIsADemo) {
  // At a script's top level (or in a function the program runs once) a loop of a fixed count
  // of at most 16 forwards over data (five predictions drawn for a figure) is weak; 17 are not,
  // nor are 5 in a function called once per batch.
  auto top = [](const std::string& count) {
    return "import torch\nimport matplotlib.pyplot as plt\n"
           "net = torch.load('net.pt').cuda()\nnet.eval()\n"
           "images = torch.load('images.pt')\n"
           "for k in range(" + count + "):\n"
           "    logits = net(images[k].unsqueeze(0).cuda())\n"
           "    plt.title(str(logits.argmax(1).item()))\n";
  };
  for (const std::string& count : {std::string("5"), std::string("16")}) {
    const FileResult r = analyze_text("demo.py", top(count), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << count;
    EXPECT_TRUE(f->low_confidence) << count;
    EXPECT_NE(f->message.find("the loop runs " + count + " times"), std::string::npos) << f->message;
  }
  // (Each forward takes one image; the outputs kept here keep the one-item rule out of it.)
  const FileResult many = analyze_text("demo.py", top("17") + "    kept.append(logits)\n", Config{}, EngineOptions{});
  ASSERT_NE(only(many, "LL101"), nullptr);
  EXPECT_FALSE(only(many, "LL101")->low_confidence);
  const FileResult per_batch = analyze_text(
      "serve.py",
      "import torch\nnet = torch.load('net.pt').cuda()\nnet.eval()\n\n\n"
      "def show(batch):\n    outs = []\n    for k in range(5):\n        out = net(batch[k].unsqueeze(0).cuda())\n"
      "        outs.append(out)\n    return outs\n\n\n"
      "for batch in loader:\n    show(batch)\n",
      Config{}, EngineOptions{});
  ASSERT_NE(only(per_batch, "LL101"), nullptr);
  EXPECT_FALSE(only(per_batch, "LL101")->low_confidence);
}

TEST(Impact, ALinearProbeOnABackboneWithGradOnIsNotOneLinearLayer) {
  // `probe(backbone(x))`: the probe is one linear layer, but the backbone's activations are
  // kept every batch (the loop's one finding is the probe's forward).
  const std::string head = "import torch\nimport torch.nn as nn\nbackbone = torch.hub.load('pytorch/vision', 'resnet152').cuda()\n"
                           "probe = nn.Linear(2048, 10).cuda()\n\n\ndef evaluate(loader):\n    correct = 0\n    for x, y in loader:\n";
  const FileResult both = analyze_text("e.py", head + "        correct += (probe(backbone(x.cuda())).argmax(1) == y.cuda()).sum().item()\n    return correct\n",
                                       Config{}, EngineOptions{});
  ASSERT_NE(only(both, "LL101"), nullptr);
  EXPECT_FALSE(only(both, "LL101")->low_confidence) << only(both, "LL101")->message;
  const FileResult alone = analyze_text("e.py", head + "        correct += (probe(x.cuda()).argmax(1) == y.cuda()).sum().item()\n    return correct\n",
                                        Config{}, EngineOptions{});
  ASSERT_NE(only(alone, "LL101"), nullptr);
  EXPECT_TRUE(only(alone, "LL101")->low_confidence) << only(alone, "LL101")->message;
}

TEST(Impact, HooksPiledPerPassKeepingOnlyTheirOutputContainerAreWeak) {
  // An epoch function registers a feature hook per call (once per epoch, each call a whole pass):
  // a closure keeping only the dict it writes outputs into is weak; one keeping a tensor made in
  // the pass (a mask) stays full, and so does the same dict hook registered once per batch.
  auto program = [](const std::string& hook, bool per_batch) {
    return std::string("import torch\n\n\ndef capture(store, key):\n    def hook(m, i, o):\n        store[key] = o\n"
                       "    return hook\n\n\ndef one_epoch(model, loader, opt):\n    feats = {}\n"
                       "    mask = (model.fc.weight.abs() > 0.1).float()\n") +
           (per_batch ? "    for x, y in loader:\n        model.fc.register_forward_hook(" + hook + ")\n"
                      : "    model.fc.register_forward_hook(" + hook + ")\n    for x, y in loader:\n") +
           "        opt.zero_grad()\n        model(x.cuda()).sum().backward()\n        opt.step()\n\n\n"
           "def fit(model, loader, opt, epochs):\n    for epoch in range(epochs):\n        one_epoch(model, loader, opt)\n";
  };
  // The finding's low_confidence, or nothing when there is no LL105 finding (the FileResult
  // that holds the finding dies with the lambda: copy the fact out).
  auto ll105 = [&](const std::string& hook, bool per_batch) -> std::optional<bool> {
    const FileResult r = analyze_text("fit.py", program(hook, per_batch), Config{}, EngineOptions{});
    const Finding* fd = only(r, "LL105");
    return fd ? std::optional<bool>(fd->low_confidence) : std::nullopt;
  };
  EXPECT_EQ(ll105("capture(feats, 'fc')", false), std::optional<bool>(true));
  EXPECT_EQ(ll105("capture(mask, 'fc')", false), std::optional<bool>(false));
  EXPECT_EQ(ll105("capture(feats, 'fc')", true), std::optional<bool>(false));
  // A list (a hook that appends grows it every forward) and a dict the function fills with a
  // tensor of its own (each piled hook keeps one) stay full.
  for (const std::string& change : {std::string("    feats = []\n"), std::string("    feats = {}\n    feats['ref'] = model(x0)\n")}) {
    std::string src = program("capture(feats, 'fc')", false);
    src.replace(src.find("    feats = {}\n"), std::string("    feats = {}\n").size(), change);
    const FileResult r = analyze_text("fit.py", src, Config{}, EngineOptions{});
    ASSERT_NE(only(r, "LL105"), nullptr) << change;
    EXPECT_FALSE(only(r, "LL105")->low_confidence) << change;
  }
}

TEST(Impact, VolatileIsWeakOnlyInCodeWrittenForAPyTorchThatHonouredIt) {
  // `Variable(x, volatile=True)` disabled autograd before 0.4. Code that also reads `.item()`
  // (or uses another API 0.4 introduced) runs where volatile is ignored: the graph is recorded.
  auto program = [](const std::string& read) {
    return "import torch\nfrom torch.autograd import Variable\n\n\n"
           "def validate(model, val_loader, criterion):\n"
           "    model.eval()\n"
           "    total = 0.0\n"
           "    for images, target in val_loader:\n"
           "        images = Variable(images.cuda(), volatile=True)\n"
           "        output = model(images)\n"
           "        total += " + read + "\n"
           "    return total\n";
  };
  const FileResult old = analyze_text("v.py", program("criterion(output, target).data[0]"), Config{}, EngineOptions{});
  const Finding* f = only(old, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_NE(f->message.find("volatile"), std::string::npos) << f->message;
  const FileResult ported = analyze_text("v.py", program("criterion(output, target).item()"), Config{}, EngineOptions{});
  f = only(ported, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence) << f->message;
  // `.item()` is NumPy's too: a checkpoint's setting read with it says nothing in a file whose
  // losses are read as `.data[0]`.
  const FileResult numpy_item = analyze_text(
      "v.py", program("criterion(output, target).data[0]") + "\n\nwidth = torch.load('c.pt')['filters'].item()\n",
      Config{}, EngineOptions{});
  f = only(numpy_item, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  // A project helper handed the flag (`utils.variable(x, volatile=True)`) builds the same Variable.
  std::string helper = program("criterion(output, target).data[0]");
  helper.replace(helper.find("Variable(images.cuda(), volatile=True)"), 38, "utils.variable(images, volatile=True)");
  helper.replace(helper.find("from torch.autograd import Variable\n"), 36, "from torch.autograd import Variable\nimport utils\n");
  const FileResult via_helper = analyze_text("v.py", helper, Config{}, EngineOptions{});
  f = only(via_helper, "LL101");
  ASSERT_NE(f, nullptr) << helper;
  EXPECT_TRUE(f->low_confidence) << f->message;
  EXPECT_NE(f->message.find("volatile"), std::string::npos) << f->message;
}

TEST(Impact, FindingsInTestCodeAreWeak) {
  // A test file's loop of forwards and a TestCase's model swap check behaviour once; the same
  // code in a training script keeps the full severity.
  const std::string loop =
      "import torch\n"
      "class TestGenerate:\n"
      "    def test_batch_sizes(self):\n"
      "        model = torch.load('m.pt')\n"
      "        model.eval()\n"
      "        for bs in range(1, 50):\n"
      "            model(torch.zeros(bs, 4).cuda())\n";
  const std::string swap =
      "import torch\n"
      "def run(names):\n"
      "    for name in names:\n"
      "        model = torch.load(name).cuda()\n"
      "        with torch.no_grad():\n"
      "            print(model(torch.zeros(1, 4).cuda()).sum())\n";
  for (const auto& [path, text, rule] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"pkg/gen.py", loop, "LL101"}, {"tests/test_swap.py", swap, "LL301"}}) {
    const FileResult r = analyze_text(path, text, Config{}, EngineOptions{});
    const Finding* f = only(r, rule);
    ASSERT_NE(f, nullptr) << path;
    EXPECT_TRUE(f->low_confidence) << path;
    EXPECT_NE(f->message.find("test code runs once"), std::string::npos) << f->message;
  }
  const FileResult r = analyze_text("train.py", swap, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL301");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence);
}

TEST(Impact, EveryRuleWhoseCostGrowsWithARunIsWeakInTestCode) {
  // A smoke test under test/ that trains some steps without zero_grad (LL201) and empties the
  // cache every step (LL303): the test checks that a step runs, not what a hundred steps compute
  // or cost. (Ten steps would be a few cache refills anywhere: LL303 counts loops of more than
  // 16 trips.) The same text as a training script keeps the full severity; a pattern that fails at
  // once (`with torch.no_grad:`, LL104) keeps it in tests too.
  const std::string smoke =
      "import torch\n"
      "model = torch.nn.Sequential(torch.nn.Conv1d(4, 8, 1), torch.nn.ReLU(), torch.nn.Conv1d(8, 2, 1)).cuda()\n"
      "optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)\n"
      "for i in range(100):\n"
      "    loss = model(torch.rand(3, 4).cuda()).sum()\n"
      "    loss.backward()\n"
      "    optimizer.step()\n"
      "    torch.cuda.empty_cache()\n"
      "with torch.no_grad:\n"
      "    model(torch.rand(3, 4).cuda())\n";
  for (const std::string rule : {"LL201", "LL303"}) {
    const FileResult t = analyze_text("test/test_smoke.py", smoke, Config{}, EngineOptions{});
    const Finding* f = only(t, rule);
    ASSERT_NE(f, nullptr) << rule;
    EXPECT_TRUE(f->low_confidence) << rule;
    EXPECT_NE(f->message.find("test code runs once"), std::string::npos) << f->message;
    const FileResult r = analyze_text("train.py", smoke, Config{}, EngineOptions{});
    const Finding* g = only(r, rule);
    ASSERT_NE(g, nullptr) << rule;
    EXPECT_FALSE(g->low_confidence) << rule;
  }
  const FileResult t = analyze_text("test/test_smoke.py", smoke, Config{}, EngineOptions{});
  const Finding* f = only(t, "LL104");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence);
}

TEST(Impact, ATestLikeNameAloneDoesNotMakeAProgramTestCode) {
  // `u2net_test.py`: a main guard runs a loaded model over a folder on CUDA, and nothing in the
  // file is a test. The same text with a test function, a pytest import, or under tests/, is
  // test code.
  const std::string script =
      "import torch\n"
      "def main(paths):\n"
      "    net = torch.load('seg.pth').cuda()\n"
      "    net.eval()\n"
      "    for p in paths:\n"
      "        torch.save(net(torch.load(p).cuda()).cpu(), p + '.out')\n"
      "if __name__ == '__main__':\n"
      "    main([])\n";
  for (const std::string path : {"u2net_test.py", "scripts/test_segmentation.py"}) {
    const FileResult r = analyze_text(path, script, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << path;
    EXPECT_FALSE(f->low_confidence) << path << ": " << f->message;
  }
  for (const auto& [path, text] : std::vector<std::pair<std::string, std::string>>{
           {"u2net_test.py", "import pytest\n" + script},
           {"u2net_test.py", script + "def test_runs():\n    main([])\n"},
           {"tests/u2net_test.py", script}}) {
    const FileResult r = analyze_text(path, text, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << path;
    EXPECT_TRUE(f->low_confidence) << path;
  }
  // A command-line program (a main guard parsing arguments) is no test module, even with a
  // function named `test` (its evaluation): `train_ddp_test.py`. A test framework (absltest
  // too) or a `test_*` function keeps it test code, command line or not.
  const std::string cli = "import argparse\n" + script + "def test(net, loader):\n    pass\n" +
                          "if __name__ == '__main__':\n    argparse.ArgumentParser().parse_args()\n";
  {
    const FileResult r = analyze_text("train_ddp_test.py", cli, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->low_confidence) << f->message;
  }
  for (const std::string& text : {"from absl.testing import absltest\n" + cli, cli + "def test_runs():\n    main([])\n"}) {
    const FileResult r = analyze_text("train_ddp_test.py", text, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence) << text;
  }
  // `test_time_augmentation.py`: a module of definitions (no main guard, no top-level loop)
  // whose name reads like a test; nothing in it is one, so its findings keep their severity.
  const std::string tta =
      "import torch\n"
      "class ModelWithTTA:\n"
      "    def __init__(self, model):\n"
      "        self.model = model.cuda()\n"
      "    def batch_inference(self, batches):\n"
      "        outputs = []\n"
      "        for b in batches:\n"
      "            outputs.append(self.model(b.cuda()))\n"
      "        return outputs\n";
  const FileResult r = analyze_text("pkg/test_time_augmentation.py", tta, Config{}, EngineOptions{});
  ASSERT_FALSE(r.findings.empty());
  for (const Finding& f : r.findings) EXPECT_FALSE(f.low_confidence) << f.rule << ": " << f.message;
  // A job class named `Test*` with a non-test base (`TestCheckpointsTask(Task)` evaluating
  // checkpoints) is production code; with no base (as pytest collects it), a TestCase base
  // or `test*` methods it is a test.
  const std::string job =
      "import torch\n"
      "from transformers import AutoModel\n"
      "class TestCheckpointsTask(Task):\n"
      "    def run(self, tensors):\n"
      "        model = AutoModel.from_pretrained('ckpt/best').to('cuda')\n"
      "        model.eval()\n"
      "        preds = []\n"
      "        for t in tensors:\n"
      "            preds.append(model(t.to('cuda')).cpu()[0])\n"
      "        return preds\n";
  const FileResult jr = analyze_text("tasks/checkpoints.py", job, Config{}, EngineOptions{});
  const Finding* jf = only(jr, "LL101");
  ASSERT_NE(jf, nullptr);
  EXPECT_FALSE(jf->low_confidence) << jf->message;
  for (const std::string base : {"", "(unittest.TestCase)"}) {
    std::string t = job;
    t.replace(t.find("(Task)"), 6, base);
    const FileResult tr = analyze_text("tasks/checkpoints.py", t, Config{}, EngineOptions{});
    const Finding* tf = only(tr, "LL101");
    ASSERT_NE(tf, nullptr) << base;
    EXPECT_TRUE(tf->low_confidence) << base;
  }
}

TEST(Impact, AHookInAProgramWhoseModelRunsOnceIsWeak) {
  // Grad-CAM: a forward hook keeps the layer's output; the script runs one forward and one
  // backward. The same hook under a training loop keeps every batch's activations.
  auto program = [](const std::string& run) {
    return "import torch\n"
           "import torchvision\n"
           "feature_maps = []\n"
           "def keep(module, inputs, output):\n"
           "    feature_maps.append(output)\n"
           "model = torchvision.models.resnet18().cuda()\n"
           "model.layer4.register_forward_hook(keep)\n" +
           run;
  };
  {
    const FileResult r = analyze_text(
        "cam.py", program("out = model(torch.randn(1, 3, 224, 224).cuda())\nout[0, 3].backward()\n"), Config{},
        EngineOptions{});
    const Finding* f = only(r, "LL106");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
  }
  {
    const FileResult r = analyze_text(
        "train.py",
        program("for x, y in loader:\n    loss = model(x.cuda()).sum()\n    loss.backward()\n"), Config{},
        EngineOptions{});
    const Finding* f = only(r, "LL106");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->low_confidence);
  }
}

TEST(Impact, AnImportedNameCountsByWhatItIsNotHowItIsSpelled) {
  // `dist` from a probabilistic-programming library or from torch.distributions is no
  // evidence of a GPU or of distributed training; `dist` from torch.distributed is.
  for (const std::string imp : {"import pyro.distributions as dist\n", "import torch.distributions as dist\n"}) {
    const FileResult r =
        analyze_text("bnn.py", imp + script("prior = dist.Normal(0.0, 1.0)\n"), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << imp;
    EXPECT_TRUE(f->low_confidence) << imp;
  }
  {
    // A local name spelled with `dist` (a distance, a distribution) is no evidence either.
    const FileResult r = analyze_text("rnn.py", script("output_dist = torch.ones(3).div(0.8).exp()\n"), Config{},
                                      EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
  }
  const FileResult r = analyze_text("ddp.py", "import torch.distributed as dist\n" + script("dist.barrier()\n"),
                                    Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence);
}

TEST(Impact, ADeviceChosenButNeverUsedPlacesNothing) {
  // `args.device` is picked from torch.cuda.is_available() and never read: nothing is placed
  // on a GPU, also when it is only shown (`print("device:", args.device)`, a logger's info).
  // Reading it (`model.to(args.device)`) is evidence again.
  const std::string chosen = "args.device = 'cuda' if torch.cuda.is_available() else 'cpu'\n";
  for (const std::string& shown : {"", "print('device:', args.device)\n", "logger.info(f'on {args.device}')\n"}) {
    const FileResult r = analyze_text("bn.py", script(chosen + shown), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << shown;
    EXPECT_TRUE(f->low_confidence) << shown;
  }
  // (Also a move inside a print's argument: the call runs.)
  for (const std::string& used : {"model.to(args.device)\n", "print(summary(model.to(args.device)))\n"}) {
    const FileResult r = analyze_text("bn.py", script(chosen + used), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << used;
    EXPECT_FALSE(f->low_confidence) << used;
  }
}

TEST(Impact, AForkWhoseChildAloneInitialisesCudaIsWeak) {
  // The parent never touches CUDA before starting the process: the child initialises CUDA
  // itself, which works until a CUDA call is added before the fork.
  const std::string child =
      "import torch\n"
      "from torch.multiprocessing import Process\n"
      "def run(rank):\n"
      "    torch.cuda.set_device(rank)\n"
      "    torch.zeros(1).cuda()\n"
      "def main():\n";
  const std::string start = "    p = Process(target=run, args=(0,))\n    p.start()\n";
  const FileResult weak = analyze_text("demo.py", child + start, Config{}, EngineOptions{});
  const Finding* f = only(weak, "LL501");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_NE(f->message.find("initialises CUDA itself"), std::string::npos) << f->message;
  // CUDA in the parent before the fork: the child fails, full severity.
  const FileResult full =
      analyze_text("demo.py", child + "    torch.cuda.init()\n" + start, Config{}, EngineOptions{});
  const Finding* g = only(full, "LL501");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence);
  EXPECT_EQ(g->severity, Severity::Error);
  // A child that never reaches CUDA is safe even after the parent's CUDA calls.
  const FileResult safe = analyze_text(
      "demo.py",
      "import torch\nfrom multiprocessing import Pool\n"
      "def tok(lines):\n    return [len(l) for l in lines]\n"
      "def main(shards):\n    torch.cuda.init()\n    with Pool(4) as pool:\n        return pool.map(tok, shards)\n",
      Config{}, EngineOptions{});
  EXPECT_EQ(only(safe, "LL501"), nullptr);
}

TEST(Impact, AOneShotForwardInAFunctionTheProgramRunsOnceIsWeak) {
  const std::string defs =
      "import torch\n"
      "def load_demo():\n"
      "    model = torch.load('mnist.pt', map_location='cuda')\n"
      "    out = model(torch.load('digit.pt', map_location='cuda'))\n"
      "    print(out.shape)\n";
  // Called once from the main guard, or not at all in a script: one input's graph, once.
  for (const std::string tail : {"if __name__ == '__main__':\n    load_demo()\n",
                                 "if __name__ == '__main__':\n    pass  # load_demo()\n"}) {
    const FileResult r = analyze_text("demo.py", defs + tail, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << tail;
    EXPECT_TRUE(f->low_confidence) << tail;
    EXPECT_NE(f->message.find("which the program runs at most once"), std::string::npos) << f->message;
  }
  // Called per request, a library's function nobody in the file calls, or handed to what calls
  // it per element (`dataset.map(load_demo)`, once per row): full severity.
  for (const std::string tail : {"if __name__ == '__main__':\n    for _ in range(100):\n        load_demo()\n", "",
                                 "if __name__ == '__main__':\n    print(dataset.map(load_demo))\n"}) {
    const FileResult r = analyze_text("demo.py", defs + tail, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << tail;
    EXPECT_FALSE(f->low_confidence) << tail;
  }
  // A notebook defines it again in a later cell and maps that one: the first keeps its reading.
  const std::string redefined = defs + "load_demo()\n" + defs.substr(defs.find("def load_demo")) +
                                "print(dataset.map(load_demo))\n";
  const FileResult r = analyze_text("demo.py", redefined + "if __name__ == '__main__':\n    pass\n", Config{}, EngineOptions{});
  ASSERT_EQ(r.findings.size(), 2U);
  EXPECT_TRUE(r.findings[0].low_confidence) << r.findings[0].message;
  EXPECT_FALSE(r.findings[1].low_confidence) << r.findings[1].message;
}

TEST(Impact, ADeviceThatOnlyHoldsTheCpuPlacesNothingOnAGpu) {
  for (const std::string line : {"device = torch.device('cpu')\nmodel.to(device)\n",
                                 "device = 'cpu'\nmodel = model.to(device)\n"}) {
    const FileResult r = analyze_text("demo.py", script(line), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << line;
    EXPECT_TRUE(f->low_confidence) << line;
  }
  // A device that may be CUDA on some path keeps the full severity; so does one another module
  // chooses, spelled as a constant (`DEVICE = config.DEVICE`: one word, not six letters).
  for (const std::string line : {"device = torch.device('cpu')\nif args.gpu:\n    device = torch.device('cuda')\nmodel.to(device)\n",
                                 "import config\nDEVICE = config.DEVICE\nmodel.to(DEVICE)\n"}) {
    const FileResult r = analyze_text("demo.py", script(line), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << line;
    EXPECT_FALSE(f->low_confidence) << line;
  }
}

TEST(Impact, UnscaledAccumulationWithAnOptimizerOfUnknownTypeIsWeak) {
  const std::string loop =
      "import torch\n"
      "def train(model, loader, optimizer, accum=4):\n"
      "    for i, (x, y) in enumerate(loader):\n"
      "        torch.nn.functional.cross_entropy(model(x), y).backward()\n"
      "        if (i + 1) % accum == 0:\n"
      "            optimizer.step()\n"
      "            optimizer.zero_grad()\n";
  // Nothing in the file says which optimizer this is (a factory, a config name): weak.
  for (const std::string caller :
       {std::string(""), std::string("def main(model, loader, cfg):\n"
                                     "    opt = getattr(torch.optim, cfg.name)(model.parameters())\n"
                                     "    train(model, loader, opt)\n")}) {
    const FileResult r = analyze_text("train.py", loop + caller, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL206");
    ASSERT_NE(f, nullptr) << caller;
    EXPECT_TRUE(f->low_confidence) << caller;
    EXPECT_NE(f->message.find("the optimizer's type is not visible here"), std::string::npos) << f->message;
  }
  // The file's caller hands in SGD: full severity. Adam: silent.
  const FileResult sgd = analyze_text(
      "train.py", loop + "def main(model, loader):\n    train(model, loader, torch.optim.SGD(model.parameters(), lr=0.1))\n",
      Config{}, EngineOptions{});
  const Finding* g = only(sgd, "LL206");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence);
  // Chosen from a table of SGD-like classes (`opts[args.optimizer](...)`): full. A table that
  // also holds an Adam-family one leaves the choice to the configuration: weak.
  const FileResult table = analyze_text(
      "train.py",
      loop + "def main(model, loader, name):\n"
             "    opts = {'sgd': torch.optim.SGD, 'asgd': torch.optim.ASGD}\n"
             "    train(model, loader, opts[name](model.parameters(), lr=0.1))\n",
      Config{}, EngineOptions{});
  const Finding* t = only(table, "LL206");
  ASSERT_NE(t, nullptr);
  EXPECT_FALSE(t->low_confidence);
  const FileResult mixed = analyze_text(
      "train.py",
      loop + "def main(model, loader, name):\n"
             "    opts = {'sgd': torch.optim.SGD, 'adagrad': torch.optim.Adagrad}\n"
             "    train(model, loader, opts[name](model.parameters(), lr=0.1))\n",
      Config{}, EngineOptions{});
  const Finding* x = only(mixed, "LL206");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(x->low_confidence);
  EXPECT_NE(x->message.find("chooses between an SGD-like and an Adam-family optimizer"), std::string::npos) << x->message;
  const FileResult adam = analyze_text(
      "train.py", loop + "def main(model, loader):\n    opt = torch.optim.Adam(model.parameters())\n    train(model, loader, opt)\n",
      Config{}, EngineOptions{});
  EXPECT_EQ(only(adam, "LL206"), nullptr);
}

TEST(Impact, AccumulationToANominalBatchOfAMeanLossIsWeak) {
  // `accumulate = nbs / batch_size`: the loop gathers a fixed number of samples per update.
  // With a mean loss the sum still grows with the count, but the design may be a summed loss
  // the learning rate was tuned for: weak. A loss visibly multiplied by the batch size: silent.
  auto loop = [](const std::string& loss) {
    return "import torch\n"
           "def train(model, loader, batch_size):\n"
           "    nbs = 64\n"
           "    accumulate = max(round(nbs / batch_size), 1)\n"
           "    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n"
           "    for i, (x, y) in enumerate(loader):\n"
           "        bs = x.shape[0]\n"
           "        loss = " + loss + "\n"
           "        loss.backward()\n"
           "        if i % accumulate == 0:\n"
           "            optimizer.step()\n"
           "            optimizer.zero_grad()\n";
  };
  const FileResult mean = analyze_text("train.py", loop("torch.nn.functional.mse_loss(model(x), y)"), Config{},
                                       EngineOptions{});
  const Finding* f = only(mean, "LL206");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_NE(f->message.find("nominal batch size"), std::string::npos) << f->message;
  const FileResult summed = analyze_text("train.py", loop("torch.nn.functional.mse_loss(model(x), y) * bs"),
                                         Config{}, EngineOptions{});
  EXPECT_EQ(only(summed, "LL206"), nullptr);
}

TEST(Impact, AFileWhoseIndentationPythonRefusesIsWeak) {
  // The same evaluation loop twice: with its indentation in spaces it keeps its severity; with
  // one line indented by a tab where the others use spaces, Python raises TabError and never
  // runs the file, and the finding is weak and says why.
  auto program = [](const std::string& indent) {
    return "import torch\nmodel = torch.load('m.pt').cuda()\ndef predict(loader):\n    out = []\n"
           "    for x in loader:\n" + indent + "out.append(model(x.cuda()).argmax(1))\n    return out\n";
  };
  const FileResult spaces = analyze_text("predict.py", program("        "), Config{}, EngineOptions{});
  const Finding* f = only(spaces, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence);
  const FileResult tab = analyze_text("predict.py", program("\t"), Config{}, EngineOptions{});
  const Finding* g = only(tab, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->low_confidence);
  EXPECT_NE(g->message.find("Python refuses this file's indentation (line 6)"), std::string::npos) << g->message;
}

TEST(Impact, ARetryInABroadExceptThatNeverMentionsMemoryIsWeak) {
  // `except Exception:` around a forward may be a fallback for any error; only a handler that
  // names an out-of-memory error (its type, or its message) is known to be an OOM retry.
  auto code = [](const std::string& handler) {
    return "import torch\n"
           "def run(model, x):\n"
           "    try:\n"
           "        return model(x)\n"
           "    " + handler + "\n"
           "        return model(x[:1])\n";
  };
  const FileResult broad = analyze_text("serve.py", code("except Exception:"), Config{}, EngineOptions{});
  const Finding* f = only(broad, "LL304");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_NE(f->message.find("out-of-memory one"), std::string::npos) << f->message;
  // Its note on the handler says no more than the handler does.
  ASSERT_EQ(f->notes.size(), 1u);
  EXPECT_EQ(f->notes[0].message, "error caught here, out of memory among others");
  const FileResult oom = analyze_text("serve.py", code("except torch.cuda.OutOfMemoryError:"), Config{}, EngineOptions{});
  const Finding* g = only(oom, "LL304");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence);
  ASSERT_EQ(g->notes.size(), 1u);
  EXPECT_EQ(g->notes[0].message, "out-of-memory error caught here");
}

TEST(Impact, FewSamplesInFlightAreWeak) {
  // 48 workers x prefetch 2 x batch_size 1 = 96 samples in flight: little host memory whatever a
  // sample is. The same loader with batch_size=64 holds 6,144 samples: full severity. A batch
  // size the file does not show: full.
  auto ll402 = [](const std::string& bs) {
    return analyze_text("loader.py",
                        "import torch\n\ndef make(ds, n):\n"
                        "    return torch.utils.data.DataLoader(ds, batch_size=" + bs + ", num_workers=48)\n",
                        Config{}, EngineOptions{});
  };
  const FileResult one = ll402("1");
  const Finding* weak = only(one, "LL402");
  ASSERT_NE(weak, nullptr);
  EXPECT_TRUE(weak->low_confidence);
  EXPECT_NE(weak->message.find("hold 96 samples in all"), std::string::npos) << weak->message;
  for (const std::string bs : {std::string("64"), std::string("n")}) {
    const FileResult r = ll402(bs);
    const Finding* full = only(r, "LL402");
    ASSERT_NE(full, nullptr) << bs;
    EXPECT_FALSE(full->low_confidence) << bs;
  }
}

TEST(Impact, OneWorkerPerCoreWithBatchesOfOneIsWeakNotAMultipleOfTheCores) {
  // `num_workers=os.cpu_count()` with batch_size=1 keeps at most 128 x 2 x 1 = 256 samples on a
  // 128-core host: weak. A multiple of the core count (`os.cpu_count() * 8`) is 1,024 workers
  // there: full, and so is batch_size=2.
  auto ll402 = [](const std::string& workers, const std::string& bs) {
    const FileResult r = analyze_text("loader.py",
                                      "import os\nimport torch\n\ndef make(ds):\n"
                                      "    return torch.utils.data.DataLoader(ds, batch_size=" + bs + ", num_workers=" + workers + ")\n",
                                      Config{}, EngineOptions{});
    const Finding* fd = only(r, "LL402");
    return fd ? std::optional<bool>(fd->low_confidence) : std::nullopt;
  };
  EXPECT_EQ(ll402("os.cpu_count()", "1"), std::optional<bool>(true));
  EXPECT_EQ(ll402("os.cpu_count() or 1", "1"), std::optional<bool>(true));
  EXPECT_EQ(ll402("os.cpu_count() * 8", "1"), std::optional<bool>(false));
  EXPECT_EQ(ll402("os.cpu_count()", "2"), std::optional<bool>(false));
}

TEST(Impact, AnEvaluationWithLegacyVolatileInputsIsWeak) {
  // PyTorch before 0.4 disabled autograd with `Variable(x, volatile=True)`; since 0.4 the flag
  // is ignored. The loop records graphs on a current PyTorch, but it was written not to: weak.
  const std::string src =
      "import torch\nfrom torch.autograd import Variable\n\n"
      "def test(model, loader):\n"
      "    model.eval()\n"
      "    correct = 0\n"
      "    for data, target in loader:\n"
      "        data = Variable(data.cuda(), volatile=VOLATILE)\n"
      "        output = model(data)\n"
      "        correct += int(output.max(1)[1].eq(target.cuda()).sum())\n"
      "    return correct\n";
  auto with = [&](const std::string& flag) {
    std::string s = src;
    s.replace(s.find("VOLATILE"), 8, flag);
    return analyze_text("main.py", s, Config{}, EngineOptions{});
  };
  const FileResult legacy = with("True");
  const Finding* f = only(legacy, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_NE(f->message.find("volatile=True"), std::string::npos) << f->message;
  const FileResult plain = with("False");
  const Finding* g = only(plain, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence);
  // A flag the evaluation pass sets (flownet2's `volatile=is_validate` in a shared epoch
  // function) was written the same way.
  const FileResult flagged = with("is_eval");
  const Finding* h = only(flagged, "LL101");
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(h->low_confidence);
}

TEST(Impact, AForwardInARouteHandlerRunsOncePerRequest) {
  // A script's function that nothing in the file calls is one its main guard dropped, unless
  // an object's decorator registers it (`@app.route`): the framework calls it per request.
  auto src = [](const std::string& deco) {
    return "import torch\nfrom flask import Flask\n\napp = Flask(__name__)\n"
           "model = torch.load('m.pt', weights_only=False).cuda()\n\n" +
           deco +
           "def predict(x):\n    return model(x)\n\n\n"
           "if __name__ == '__main__':\n    app.run()\n";
  };
  const FileResult route = analyze_text("serve.py", src("@app.route('/predict')\n"), Config{}, EngineOptions{});
  const Finding* f = only(route, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence) << f->message;
  const FileResult unused = analyze_text("serve.py", src(""), Config{}, EngineOptions{});
  const Finding* g = only(unused, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->low_confidence) << g->message;
}

TEST(Impact, AForwardOnTensorsTheProgramMakesIsAShapeOrTimingCheck) {
  // A model file's self-check of its own model (`net(torch.randn(2, 3, 32, 32))`, a timing
  // loop of a fixed count under the main guard): weak. The same model over a loader keeps the
  // full severity, and so does a loop on made tensors with no fixed count, and a benchmark of
  // a model the file does not define.
  auto program = [](const std::string& body) {
    return "import torch\n"
           "import torch.nn as nn\n"
           "class Seg(nn.Module):\n"
           "    def __init__(self):\n"
           "        super().__init__()\n"
           "        self.conv = nn.Conv2d(3, 19, 3)\n"
           "    def forward(self, x):\n"
           "        return self.conv(x)\n"
           "net = Seg().cuda()\n"
           "net.eval()\n" + body;
  };
  for (const std::string body : {std::string("for i in range(10):\n    x = torch.randn(1, 3, 512, 512).cuda()\n"
                                             "    out = net(x)\n"),
                                 std::string("for k in range(5):\n    out = net(torch.rand(2, 3, 32, 32))\n")}) {
    const FileResult r = analyze_text("seg.py", program(body), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << body;
    EXPECT_TRUE(f->low_confidence) << body;
    EXPECT_NE(f->message.find("a self-check of the model"), std::string::npos) << f->message;
  }
  for (const std::string body : {std::string("for x, _ in test_loader:\n    out = net(x.cuda())\n"),
                                 std::string("while True:\n    out = net(torch.randn(1, 3, 512, 512).cuda())\n")}) {
    const FileResult r = analyze_text("seg.py", program(body), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << body;
    EXPECT_FALSE(f->low_confidence) << body;
  }
  const FileResult bench = analyze_text("bench.py",
                                        "import torch\nfrom torchvision.models import vgg11_bn\n"
                                        "model = vgg11_bn().cuda()\nmodel.eval()\n"
                                        "x = torch.ones(32, 3, 224, 224).cuda()\n"
                                        "for _ in range(5):\n    out = model(x)\n",
                                        Config{}, EngineOptions{});
  const Finding* b = only(bench, "LL101");
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(b->low_confidence) << b->message;
}

TEST(Impact, AModelSizedByArithmeticAndKeepingItsSettingsIsOfVisibleSize) {
  // `nn.Linear(3 * 32 * 32, 128)` and `self.activation = activation` (a setting handed in):
  // the size is visible, 402k parameters. A module handed in (`self.backbone = backbone`)
  // hides it. A class that builds no layer (an exercise left blank) costs nothing.
  auto program = [](const std::string& init, const std::string& extra) {
    return "import torch\n"
           "import torch.nn as nn\n"
           "class SimpleNN(nn.Module):\n"
           "    def __init__(self, " + init + "):\n"
           "        super().__init__()\n" + extra +
           "    def forward(self, x):\n"
           "        return self.fc2(self.activation(self.fc1(x.view(-1, 3 * 32 * 32))))\n"
           "for act in [nn.ReLU(), nn.Tanh(), nn.Sigmoid()]:\n"
           "    model = SimpleNN(act).to('cuda')\n"
           "    train(model)\n";
  };
  const std::string layers = "        self.fc1 = nn.Linear(3 * 32 * 32, 128)\n        self.fc2 = nn.Linear(128, 10)\n";
  {
    const FileResult r = analyze_text("acts.py", program("activation", layers + "        self.activation = activation\n"),
                                      Config{}, EngineOptions{});
    const Finding* f = only(r, "LL301");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
    EXPECT_NE(f->message.find("394.6k parameters"), std::string::npos) << f->message;
  }
  {
    const FileResult r = analyze_text("acts.py", program("activation", "        self.activation = activation\n"),
                                      Config{}, EngineOptions{});
    const Finding* f = only(r, "LL301");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
    EXPECT_NE(f->message.find("builds no layer with parameters"), std::string::npos) << f->message;
  }
  {
    const FileResult r = analyze_text("acts.py", program("backbone", layers + "        self.activation = backbone\n"),
                                      Config{}, EngineOptions{});
    const Finding* f = only(r, "LL301");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->low_confidence) << f->message;
  }
}

TEST(Impact, AnEvaluationInAFileWrittenForPyTorchBefore04IsWeak) {
  // `Variable` inputs and sums of `loss.data[0]` (which raises on the 0-dim losses of 0.5 and
  // later): code for a PyTorch that had no torch.no_grad(). A current file that sums
  // `loss.item()`, or reads `.data[0]` without `Variable`, keeps the full severity.
  auto program = [](const std::string& imports, const std::string& sum) {
    return "import torch\n" + imports +
           "def test(model, loader):\n"
           "    model.eval()\n"
           "    total = 0\n"
           "    for data, target in loader:\n"
           "        output = model(data.cuda())\n"
           "        loss = torch.nn.functional.cross_entropy(output, target.cuda())\n"
           "        total += " + sum + "\n"
           "    return total\n";
  };
  const std::string variable = "from torch.autograd import Variable\n";
  // Also read inside a larger sum (`avg_psnr += 10 * log10(1 / mse.data[0])`).
  for (const std::string sum : {"loss.data[0]", "10 * torch.log10(1 / loss.data[0])"}) {
    const FileResult r = analyze_text("old.py", program(variable, sum), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence) << sum;
    EXPECT_NE(f->message.find("before 0.4"), std::string::npos) << f->message;
  }
  for (const auto& [imports, sum] : {std::pair<std::string, std::string>{variable, "loss.item()"},
                                     std::pair<std::string, std::string>{"", "loss.data[0]"}}) {
    const FileResult r = analyze_text("new.py", program(imports, sum), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << sum;
    EXPECT_FALSE(f->low_confidence) << imports << sum;
  }
  // A file that also disables grad the 0.4 way (`with torch.no_grad():` elsewhere) is written
  // for 0.4 or later, whatever else it keeps from older code.
  const FileResult r = analyze_text("mixed.py",
                                    program(variable, "loss.data[0]") +
                                        "def predict(model, x):\n    with torch.no_grad():\n        return model(x)\n",
                                    Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence) << f->message;
}

TEST(Impact, ATripCountEverySameFileCallerPassesAsALiteralIsKnown) {
  // `def train(model, steps, ...)` called only as `train(model, 100, ...)`: the epoch loop
  // runs at most 100 times. A caller passing a name, or a huge count, leaves it unknown or large.
  auto program = [](const std::string& calls) {
    return "import torch\n"
           "def train(model, steps, x, y, opt):\n"
           "    history = []\n"
           "    for step in range(steps):\n"
           "        loss = ((model(x) - y) ** 2).mean()\n"
           "        opt.zero_grad()\n"
           "        loss.backward()\n"
           "        opt.step()\n"
           "        history.append(loss)\n"
           "    return history\n"
           "model = torch.nn.Linear(2, 1).cuda()\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + calls;
  };
  {
    const FileResult r = analyze_text("toy.py", program("h = train(model, 100, x, y, opt)\nh = train(model, 20, x, y, opt)\n"),
                                      Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
    EXPECT_NE(f->message.find("run at most 100 times"), std::string::npos) << f->message;
  }
  for (const std::string calls : {"h = train(model, n_steps, x, y, opt)\n", "h = train(model, 100000, x, y, opt)\n",
                                  "h = train(model, 100, x, y, opt)\nh = train(model, steps=n, x=x, y=y, opt=opt)\n"}) {
    const FileResult r = analyze_text("toy.py", program(calls), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << calls;
    EXPECT_FALSE(f->low_confidence) << calls;
  }
}

TEST(Impact, AnEvaluationOfAModelMovedToTheCpuIsWeak) {
  // `model = model.cpu()` (or `model.to("cpu")`) before the validation loop, in a program that
  // uses the GPU elsewhere: the graph costs host memory. Moved back to the GPU before the loop,
  // or to another device, the full severity stays.
  auto program = [](const std::string& placement) {
    return "import torch\n"
           "def validate(model, loader):\n"
           "    model.eval()\n" + placement +
           "    acc = 0\n"
           "    for x, y in loader:\n"
           "        acc += (model(x).argmax(1) == y).float().mean().item()\n"
           "    model = model.cuda()\n"
           "    return acc\n";
  };
  for (const std::string p : {"    model = model.cpu()\n", "    model.to('cpu')\n"}) {
    const FileResult r = analyze_text("train.py", program(p), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << p;
    EXPECT_TRUE(f->low_confidence) << p;
    EXPECT_NE(f->message.find("moved to the CPU"), std::string::npos) << f->message;
  }
  // A move to the CPU on one branch only (`if use_cuda: model = model.cuda() else: model =
  // model.cpu()`, or the bare calls) is no move on every path to the forward.
  for (const std::string p : {"    model = model.cpu()\n    model = model.cuda()\n", "    model.to('cuda:1')\n",
                              "    if torch.cuda.is_available():\n        model = model.cuda()\n"
                              "    else:\n        model = model.cpu()\n",
                              "    if torch.cuda.is_available():\n        model.cuda()\n    else:\n        model.cpu()\n"}) {
    const FileResult r = analyze_text("train.py", program(p), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << p;
    EXPECT_FALSE(f->low_confidence) << p;
  }
}

TEST(Impact, ABackpropagatedLossKeptOncePerEpochIsWeak) {
  // A full-batch loop over `range(args.epochs)` keeps one back-propagated loss per epoch: a
  // few hundred values and their autograd nodes. The same append in a loop over batches or
  // steps, or of a value whose graph backward() kept (retain_graph=True), stays at full severity.
  auto program = [](const std::string& loop, const std::string& backward) {
    return "import torch\n"
           "def fit(model, x, y, opt, args, loader):\n"
           "    history = []\n" +
           loop +
           "        loss = ((model(x.cuda()) - y.cuda()) ** 2).mean()\n"
           "        opt.zero_grad()\n" + backward +
           "        opt.step()\n"
           "        history.append(loss)\n"
           "    return history\n";
  };
  const std::string backward = "        loss.backward()\n";
  for (const std::string loop : {"    for epoch in range(args.epochs):\n", "    for i in range(n_epochs):\n"}) {
    const FileResult r = analyze_text("fit.py", program(loop, backward), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << loop;
    EXPECT_TRUE(f->low_confidence) << loop;
    EXPECT_NE(f->message.find("one value per epoch"), std::string::npos) << f->message;
  }
  for (const auto& [loop, bw] : std::vector<std::pair<std::string, std::string>>{
           {"    for x, y in loader:\n", backward},
           {"    for step in range(args.steps):\n", backward},
           {"    for epoch in range(args.epochs):\n", "        loss.backward(retain_graph=True)\n"}}) {
    const FileResult r = analyze_text("fit.py", program(loop, bw), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << loop << bw;
    EXPECT_FALSE(f->low_confidence) << loop << bw;
  }
}

TEST(Impact, AHistoryTupleWithALossNeverBackPropagatedKeepsItsGraph) {
  // `history.append((loss, loss_test, acc))` once per full-batch epoch: `loss` was
  // back-propagated, but the test loss never was, and its whole graph stays. Only a tuple whose
  // every element with history was freed (or carries none: an accuracy of a comparison) is
  // one value per epoch.
  auto program = [](const std::string& kept) {
    return "import torch\n"
           "def fit(model, x, y, xt, yt, opt, args):\n"
           "    history = []\n"
           "    for epoch in range(args.epochs):\n"
           "        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n"
           "        loss_test = torch.nn.functional.cross_entropy(model(xt.cuda()), yt.cuda())\n"
           "        acc = (model(xt.cuda()).argmax(1) == yt.cuda()).float().mean()\n"
           "        history.append(" + kept + ")\n"
           "        opt.zero_grad()\n"
           "        loss.backward()\n"
           "        opt.step()\n"
           "    return history\n";
  };
  {
    const FileResult r = analyze_text("fit.py", program("(loss, loss_test, acc)"), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->low_confidence) << f->message;
  }
  {
    const FileResult r = analyze_text("fit.py", program("(loss, acc)"), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
    EXPECT_NE(f->message.find("one value per epoch"), std::string::npos) << f->message;
  }
}

TEST(Impact, ALossAHelperBackPropagatedAndReturnedKeptOncePerEpochIsWeak) {
  // `loss = train(...)` once per epoch, where `train()` back-propagates the loss it returns:
  // after its loop over batches (the last batch's loss), or once for a full batch. What stays is
  // one value per epoch and its autograd nodes. A helper that may skip the backward of the
  // value it returns (`continue` past it, a backward under `if`), or a loop over steps, keeps
  // the full severity.
  auto program = [](const std::string& helper, const std::string& loop) {
    return "import torch\n"
           "def train(model, loader, opt):\n" + helper +
           "def fit(model, loader, opt, args):\n"
           "    losses = []\n" + loop +
           "        loss = train(model, loader, opt)\n"
           "        losses.append(loss)\n"
           "    return losses\n";
  };
  const std::string batches =
      "    for x, y in loader:\n"
      "        opt.zero_grad()\n"
      "        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n"
      "        loss.backward()\n"
      "        opt.step()\n"
      "    return loss\n";
  const std::string full_batch =
      "    x, y = loader\n"
      "    opt.zero_grad()\n"
      "    loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n"
      "    loss.backward()\n"
      "    opt.step()\n"
      "    return loss\n";
  const std::string epochs = "    for epoch in range(args.epochs):\n";
  for (const auto& [helper, loop] : std::vector<std::pair<std::string, std::string>>{
           {batches, epochs}, {full_batch, epochs}, {full_batch, "    for epoch in range(2000):\n"}}) {
    const FileResult r = analyze_text("fit.py", program(helper, loop), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << helper << loop;
    EXPECT_TRUE(f->low_confidence) << helper << loop;
    EXPECT_NE(f->message.find("one value per epoch"), std::string::npos) << f->message;
  }
  std::string skipping = batches;
  skipping.replace(skipping.find("        loss.backward()"), 0, "        if loss.isnan():\n            continue\n");
  for (const auto& [helper, loop] : std::vector<std::pair<std::string, std::string>>{
           {batches, "    for step in range(args.steps):\n"},
           {skipping, epochs},
           {"    loss = model(loader).mean()\n    if opt:\n        loss.backward()\n    return loss\n", epochs}}) {
    const FileResult r = analyze_text("fit.py", program(helper, loop), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << helper << loop;
    EXPECT_FALSE(f->low_confidence) << helper << loop;
  }
}

TEST(Impact, AFindingInAFunctionWhoseCallsAreCommentedOutIsWeak) {
  // `# self.db_index(x, labels)`: the author switched the call off, and nothing else in the
  // file names the method. A live call (or a reference handed on) keeps the full severity.
  auto program = [](const std::string& call) {
    return "import torch\n"
           "class Attack:\n"
           "    def __init__(self, model):\n"
           "        self.model = model.cuda()\n"
           "    def step(self, x, labels):\n" + call +
           "        return x\n"
           "    def db_index(self, loader, labels):\n"
           "        self.model.eval()\n"
           "        feats = []\n"
           "        for x in loader:\n"
           "            feats.append(self.model(x.cuda()))\n"
           "        return feats\n";
  };
  {
    const FileResult r = analyze_text("attack.py", program("        # self.db_index(x, labels)\n"), Config{}, EngineOptions{});
    ASSERT_FALSE(r.findings.empty());
    for (const Finding& f : r.findings) {
      EXPECT_TRUE(f.low_confidence) << f.rule << f.message;
      EXPECT_NE(f.message.find("commented-out"), std::string::npos) << f.message;
    }
  }
  for (const std::string call : {"        # db = self.db_index(x, labels)\n", "        #print(db_index(x, labels))\n",
                                 "        # acc = 100.0 * self.db_index(x, labels)\n",
                                 "        # print(f\"{self.db_index(x, labels)}\")\n",
                                 "        # if e % 5 == 0: self.db_index(x, labels)\n",
                                 "        # return db_index(x, labels)\n"}) {
    const FileResult r = analyze_text("attack.py", program(call), Config{}, EngineOptions{});
    for (const Finding& f : r.findings) EXPECT_TRUE(f.low_confidence) << call << f.rule;
  }
  // Prose that names the method is no switched-off call: in backticks, after a word, or inside
  // another name (`benefit(` is not `fit(`).
  for (const std::string call : {"        self.db_index(x, labels)\n", "        fn = self.db_index  # self.db_index(x, labels)\n",
                                 "        # see `db_index()` for the clustering score\n",
                                 "        # call db_index() once training ends\n",
                                 "        # the old_db_index(x) was slower\n"}) {
    const FileResult r = analyze_text("attack.py", program(call), Config{}, EngineOptions{});
    ASSERT_FALSE(r.findings.empty()) << call;
    for (const Finding& f : r.findings) EXPECT_FALSE(f.low_confidence) << call << f.rule;
  }
}

TEST(Impact, CodeSwitchedOffByAValueTheFileBindsIsWeak) {
  // `RUN_PPL = False` bound once at module level, then `if RUN_PPL:` around a checkpoint sweep
  // (or `if False:`): as written the block never runs. The same block under a flag the file
  // does not decide (`if args.ppl:`), or bound to True, keeps the full severity; so does a
  // flag a function may set as a global.
  auto src = [](const std::string& flag, const std::string& test, const std::string& extra = "") {
    return "import torch\nfrom transformers import AutoModel\n\n" + flag + extra + "\n\ndef sweep(paths, args):\n"
           "    if " + test + ":\n        for p in paths:\n"
           "            model = AutoModel.from_pretrained(p).to('cuda')\n            print(model.config)\n";
  };
  const FileResult off_r = analyze_text("gen.py", src("RUN_PPL = False", "RUN_PPL"), Config{}, EngineOptions{});
  const Finding* off = only(off_r, "LL301");
  ASSERT_NE(off, nullptr);
  EXPECT_TRUE(off->low_confidence);
  EXPECT_NE(off->message.find("`RUN_PPL` is true"), std::string::npos) << off->message;
  const FileResult lit_r = analyze_text("gen.py", src("", "False"), Config{}, EngineOptions{});
  const Finding* lit = only(lit_r, "LL301");
  ASSERT_NE(lit, nullptr);
  EXPECT_TRUE(lit->low_confidence);
  // A tuple of switches bound at once (`PPL, generation = False, True`).
  const FileResult pair_r = analyze_text("gen.py", src("RUN_PPL, GEN = False, True", "RUN_PPL"), Config{}, EngineOptions{});
  const Finding* pair = only(pair_r, "LL301");
  ASSERT_NE(pair, nullptr);
  EXPECT_TRUE(pair->low_confidence);
  // A name bound another way too (a tuple target, in a function or at module level) is not
  // decided by its one plain assignment.
  const std::string local =
      "import torch\nfrom transformers import AutoModel\n\n\ndef sweep(paths, check):\n"
      "    if check:\n        ok, logd = check()\n    else:\n        logd = None\n"
      "    if logd is not None:\n        for p in paths:\n"
      "            model = AutoModel.from_pretrained(p).to('cuda')\n            print(model.config)\n";
  for (const std::string& s : {src("RUN_PPL = True", "RUN_PPL"), src("", "args.ppl"),
                               src("RUN_PPL = False", "RUN_PPL", "\n\ndef enable():\n    global RUN_PPL\n    RUN_PPL = True\n"),
                               src("RUN_PPL = False", "RUN_PPL", "\nRUN_PPL, other = True, 1\n"), local}) {
    const FileResult on_r = analyze_text("gen.py", s, Config{}, EngineOptions{});
    const Finding* on = only(on_r, "LL301");
    ASSERT_NE(on, nullptr) << s;
    EXPECT_FALSE(on->low_confidence) << s;
  }
}

TEST(Impact, AMethodCalledOnlyUnderAnAttributeFlagTheClassBindsFalseIsWeak) {
  // `self.DBval = False` in `__init__`, the one store of that attribute in the file: a block
  // under `if self.DBval:` never runs, and neither does a method called only there.
  auto src = [](const std::string& extra) {
    return "import torch\nimport torch.nn as nn\n\n\nclass Baseline(nn.Module):\n"
           "    def __init__(self, feature):\n        super().__init__()\n        self.feature = feature\n"
           "        self.DBval = False\n\n"
           "    def test_loop(self, val_loader):\n        if self.DBval:\n"
           "            return self.analysis_loop(val_loader)\n        return -1\n\n"
           "    def analysis_loop(self, val_loader):\n        self.feature.eval()\n        out = []\n"
           "        for x, y in val_loader:\n            out.append(self.feature(x.cuda()).argmax(1).tolist())\n"
           "        return out\n" + extra;
  };
  {
    const FileResult r = analyze_text("methods.py", src(""), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
    EXPECT_NE(f->message.find("`analysis_loop()` is called only under `self.DBval`"), std::string::npos) << f->message;
  }
  // Set elsewhere in the file (through another object, or another method), or called also
  // outside the flag: full severity.
  for (const std::string extra :
       {std::string("\n\ndef enable(model):\n    model.DBval = True\n"),
        std::string("\n    def use_cub(self):\n        self.DBval = True\n"),
        std::string("\n    def always(self, loader):\n        return self.analysis_loop(loader)\n")}) {
    const FileResult r = analyze_text("methods.py", src(extra), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << extra;
    EXPECT_FALSE(f->low_confidence) << extra << f->message;
  }
}

TEST(Impact, AModeSwitchWithAnArgumentDoesNotMakeASweepATrainingSweep) {
  // A sweep whose models train themselves is weak for LL301 (`model.train_model(loader)`); the
  // mode switch `model.train(False)` / `model.train(mode=False)` trains nothing: full severity.
  auto run = [](const std::string& call) {
    const std::string src =
        "import torch\nfrom mypkg import MyModel\n\n"
        "def evaluate_all(ckpts, x):\n"
        "    outs = []\n"
        "    for ckpt in ckpts:\n"
        "        model = MyModel().cuda()\n"
        "        model.load_state_dict(torch.load(ckpt))\n"
        "        model." + call + "\n"
        "        with torch.no_grad():\n"
        "            outs.append(model(x).cpu())\n"
        "    return outs\n";
    return analyze_text("sweep.py", src, Config{}, EngineOptions{});
  };
  for (const std::string call : {"train(False)", "train(mode=False)"}) {
    const FileResult r = run(call);
    const Finding* f = only(r, "LL301");
    ASSERT_NE(f, nullptr) << call;
    EXPECT_FALSE(f->low_confidence) << call << ": " << f->message;
  }
  const FileResult trained = run("train_model(ckpts)");
  const Finding* g = only(trained, "LL301");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->low_confidence) << g->message;
}

// LL405: DistributedDataParallel driving several devices from one process (the
// single-process multi-device mode) runs one process per node; one per device keeps the
// full severity.
TEST(Impact, ADistributedWrapOverSeveralDevicesOfOneProcessIsWeak) {
  auto program = [](const std::string& wrap) {
    return "import torch\nimport torch.distributed as dist\nfrom torch.utils.data import DataLoader\n\n"
           "args = parse()\ndist.init_process_group(backend='nccl', init_method='env://')\n"
           "model = Net().cuda()\n" + wrap +
           "train_loader = DataLoader(train_set, batch_size=64, shuffle=True, num_workers=4)\n"
           "for epoch in range(10):\n    for x, y in train_loader:\n        loss = model(x).sum()\n"
           "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n";
  };
  for (const std::string wrap :
       {"if len(args.gpu_ids) > 1:\n    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=args.gpu_ids)\n",
        "model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0, 1, 2, 3])\n"}) {
    const FileResult r = analyze_text("train.py", program(wrap), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL405");
    ASSERT_NE(f, nullptr) << wrap;
    EXPECT_TRUE(f->low_confidence) << wrap;
    EXPECT_NE(f->message.find("several devices from one process"), std::string::npos) << f->message;
  }
  const FileResult r = analyze_text(
      "train.py", program("model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.local_rank])\n"),
      Config{}, EngineOptions{});
  const Finding* f = only(r, "LL405");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence) << f->message;
}

// One forward, outside any loop, on tensors the program makes, of a model the file imports
// or loads: a probe of its output shapes before the real (no_grad) evaluation. A loop of them
// (a benchmark) keeps the full severity (AForwardOnTensorsTheProgramMakesIsAShapeOrTimingCheck).
TEST(Impact, OneForwardOnMadeTensorsOfAnImportedModelIsAShapeProbe) {
  const std::string program =
      "import torch\nfrom model import Net\n\n\ndef evaluate(path, loader, device):\n"
      "    model = Net()\n    model.load_state_dict(torch.load(path))\n    model.to(device)\n    model.eval()\n"
      "    x = torch.zeros([2, 64, 128, 3]).to(device)\n"
      "    sat, grd = model(x)\n    s_height, s_width, s_channel = list(sat.size())[1:]\n"
      "    with torch.no_grad():\n        for xb in loader:\n            print(model(xb.to(device)).sum().item())\n";
  const std::string once = "\n\nif __name__ == '__main__':\n    evaluate('m.pt', make_loader(), 'cuda')\n";
  const FileResult r = analyze_text("evaluate.py", program + once, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  // Called once per request or item (a sampler of a generator served in a loop): full.
  const std::string per_item = "\n\nfor path in paths:\n    evaluate(path, make_loader(), 'cuda')\n";
  const FileResult loop = analyze_text("evaluate.py", program + per_item, Config{}, EngineOptions{});
  const Finding* g = only(loop, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence) << g->message;
}

// A `test_*.py` script with no pytest and no test functions is test code when its top-level
// code asserts what it computed (two models compared over a loader, then `assert max_error <
// 1e-4`); without the assert it is a script named like a test (a test-set inference run).
TEST(Impact, ATestNamedScriptThatAssertsItsResultIsTestCode) {
  auto program = [](const std::string& tail) {
    return "import torch\nimport models\n\nbase = models.Net().cuda()\nbase.load_state_dict(torch.load('a.pt'))\n"
           "base.eval()\nmax_error = 0.0\nfor x, _ in loader:\n    out = base(x.cuda())\n"
           "    max_error = max(max_error, (out - x).abs().max().item())\n" + tail;
  };
  const FileResult checked = analyze_text("test_curve.py", program("assert max_error < 1e-4\n"), Config{}, EngineOptions{});
  const Finding* f = only(checked, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  // An argument check is not a test of what the script computed.
  const FileResult args_check = analyze_text("test_curve.py", "import os\nassert os.path.isfile('a.pt')\n" + program("print(max_error)\n"),
                                             Config{}, EngineOptions{});
  const Finding* h = only(args_check, "LL101");
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(h->low_confidence) << h->message;
  const FileResult script = analyze_text("test_curve.py", program("print(max_error)\n"), Config{}, EngineOptions{});
  const Finding* g = only(script, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence) << g->message;
}

TEST(Impact, AFrozenBackboneWithANewHeadIsWeak) {
  // The builder freezes a pretrained backbone and attaches a head: only the head records a
  // graph in the evaluation loop. Unfrozen again, the whole model does.
  const std::string src =
      "import torch\nimport torch.nn as nn\nfrom torchvision import models\n"
      "def Net(num_classes):\n"
      "    model = models.resnet50(pretrained=True)\n"
      "    for param in model.parameters():\n"
      "        param.requires_grad = False\n"
      "    model.fc = nn.Linear(2048, num_classes)\n"
      "    return model\n"
      "MODEL_LINE\n"
      "def evaluate(loader):\n"
      "    model.eval()\n"
      "    for x, y in loader:\n"
      "        print(model(x.cuda()).argmax(1))\n";
  auto with = [&](const std::string& line) {
    std::string s = src;
    s.replace(s.find("MODEL_LINE"), 10, line);
    return s;
  };
  const FileResult r = analyze_text("landmark.py", with("model = Net(10).cuda()"), Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  EXPECT_NE(f->message.find("frozen but for `model.fc`"), std::string::npos) << f->message;
  const FileResult g = analyze_text(
      "landmark.py", with("model = Net(10).cuda()\nfor p in model.parameters():\n    p.requires_grad = True"), Config{},
      EngineOptions{});
  const Finding* h = only(g, "LL101");
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(h->low_confidence) << h->message;
  // Unfrozen by a helper of the file, or given a new first layer (every frozen layer after it
  // then records its activations): full.
  for (const std::string variant :
       {std::string("def unfreeze(m):\n    for p in m.parameters():\n        p.requires_grad = True\n"
                    "model = Net(10).cuda()\nunfreeze(model)"),
        std::string("model = Net(10).cuda()")}) {
    std::string text = with(variant);
    if (variant == "model = Net(10).cuda()") text.replace(text.find("model.fc = "), 11, "model.conv1 = ");
    const FileResult k = analyze_text("landmark.py", text, Config{}, EngineOptions{});
    const Finding* l = only(k, "LL101");
    ASSERT_NE(l, nullptr) << text;
    EXPECT_FALSE(l->low_confidence) << text << l->message;
  }
}

TEST(Impact, PredictionsDrawnIntoAFiguresGridAreAFewForwards) {
  // A notebook's last cell draws six predictions into a 2 x 3 grid of axes: zip() stops at
  // the grid's six axes, however long the other iterable is.
  const std::string src =
      "import torch\nimport matplotlib.pyplot as plt\n"
      "model = torch.load('sod.pt').cuda()\n"
      "model.eval()\n"
      "fig, axes = plt.subplots(2, 3)\n"
      "for ax, idx in zip(AXES, range(len(test_ds))):\n"
      "    img, bbox = test_ds[idx]\n"
      "    output = model(img.cuda().unsqueeze(0))\n"
      "    ax.imshow(img.permute(1, 2, 0))\n"
      "    ax.set_title(str(output.squeeze().tolist()))\n";
  for (const std::string axes : {"axes.flatten()", "axes.flat", "axes.ravel()"}) {
    std::string s = src;
    s.replace(s.find("AXES"), 4, axes);
    const FileResult r = analyze_text("sandbox.py", s, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << axes;
    EXPECT_TRUE(f->low_confidence) << axes << f->message;
    EXPECT_NE(f->message.find("runs 6 times"), std::string::npos) << f->message;
  }
  // A notebook draws other grids under the same name, before and after: the one the loop
  // reads is the last before it.
  {
    std::string s = src;
    s.replace(s.find("AXES"), 4, "axes.flatten()");
    s.replace(s.find("fig, axes = plt.subplots(2, 3)\n"), 0, "fig, axes = plt.subplots(8, 8)\naxes[0].plot([1])\n");
    s += "fig, axes = plt.subplots(8, 8)\n";
    const FileResult r = analyze_text("sandbox.py", s, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence) << f->message;
  }
  // A grid of 8 x 8 axes is 64 passes over data, whose outputs are kept: full.
  std::string s = src;
  s.replace(s.find("    ax.set_title"), 0, "    kept.append(output)\n");
  s.replace(s.find("AXES"), 4, "axes.flatten()");
  s.replace(s.find("subplots(2, 3)"), 14, "subplots(8, 8)");
  const FileResult g = analyze_text("sandbox.py", s, Config{}, EngineOptions{});
  const Finding* h = only(g, "LL101");
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(h->low_confidence) << h->message;
}

TEST(Impact, AModuleThatBuildsItsOptimizerAtImportIsAProgram) {
  // A course's train.py: the model and its optimizer at the top, train() and test() below,
  // no main guard. A library never builds an optimizer for its users at import: this is a
  // program, and nothing in it places a tensor on a GPU.
  const std::string src =
      "import torch\nfrom model import GCN\n"
      "model = GCN()\n"
      "OPT\n"
      "def test(loader):\n"
      "    model.eval()\n"
      "    correct = 0\n"
      "    for data in loader:\n"
      "        out = model(data.x, data.edge_index)\n"
      "        correct += int((out.argmax(1) == data.y).sum())\n"
      "    return correct\n";
  auto with = [&](const std::string& line) {
    std::string s = src;
    s.replace(s.find("OPT"), 3, line);
    return s;
  };
  const FileResult r =
      analyze_text("train.py", with("optimizer = torch.optim.Adam(model.parameters(), lr=0.01)"), Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  // A scheduler alone, or no optimizer, leaves a module of definitions.
  for (const std::string line : {"sched = torch.optim.lr_scheduler.StepLR", "criterion = torch.nn.CrossEntropyLoss()"}) {
    const FileResult g = analyze_text("train.py", with(line), Config{}, EngineOptions{});
    const Finding* h = only(g, "LL101");
    ASSERT_NE(h, nullptr) << line;
    EXPECT_FALSE(h->low_confidence) << line << h->message;
  }
}

TEST(Impact, AGpuFlagThatIsOnlyEverFalsePlacesNothing) {
  // An old tutorial hard-codes `use_cuda = False`: reading it picks the CPU branch. A flag
  // set from the machine (`torch.cuda.is_available()`) or taken as a parameter is evidence.
  const std::string src =
      "import torch\nimport torchvision\n"
      "net = torchvision.models.resnet18()\n"
      "FLAG\n"
      "if use_cuda:\n"
      "    net.cuda()\n"
      "net.eval()\n"
      "for x, y in loader:\n"
      "    print(net(x).argmax(1))\n";
  auto with = [&](const std::string& line) {
    std::string s = src;
    s.replace(s.find("FLAG"), 4, line);
    return s;
  };
  const FileResult r = analyze_text("cifar10.py", with("use_cuda = False"), Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  const FileResult g = analyze_text("cifar10.py", with("use_cuda = torch.cuda.is_available()"), Config{}, EngineOptions{});
  const Finding* h = only(g, "LL101");
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(h->low_confidence) << h->message;
  const FileResult k = analyze_text("cifar10.py", with("use_cuda = False\nuse_cuda = args.gpu"), Config{}, EngineOptions{});
  const Finding* l = only(k, "LL101");
  ASSERT_NE(l, nullptr);
  EXPECT_FALSE(l->low_confidence) << l->message;
}

TEST(Impact, ALoopThatEndsWhenACounterReachesAFewIsAFewForwards) {
  // The transfer-learning tutorial's visualize_model(): it counts each image it draws and
  // returns at the sixth, so the loop over the loader runs at most six times.
  const std::string src =
      "import torch\nimport matplotlib.pyplot as plt\n"
      "model = torch.load('best.pt').cuda()\n"
      "def visualize_model(model, num_images=6):\n"
      "    images_so_far = 0\n"
      "    model.eval()\n"
      "    for i, (inputs, labels) in enumerate(val_loader):\n"
      "        outputs = model(inputs.cuda())\n"
      "        _, preds = torch.max(outputs, 1)\n"
      "        for j in range(inputs.size()[0]):\n"
      "            images_so_far += 1\n"
      "            ax = plt.subplot(2, num_images // 2, images_so_far)\n"
      "            ax.set_title(str(preds[j].item()))\n"
      "            if images_so_far == num_images:\n"
      "                return\n"
      "visualize_model(model)\n";
  const FileResult r = analyze_text("show.py", src, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  // An exit only under another condition (`if debug:`), or a count passed through `**cfg`,
  // bounds nothing.
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"            if images_so_far == num_images:\n", "            if debug and images_so_far == num_images:\n"},
           {"visualize_model(model)\n", "visualize_model(model, **cfg)\n"}}) {
    std::string s = src;
    s.replace(s.find(from), from.size(), to);
    if (to.find("debug and") != std::string::npos) {
      s.replace(s.find("            if debug and images_so_far == num_images:\n"), 0, "            if debug:\n    ");
      s.replace(s.find("                return\n"), 0, "    ");
      s.replace(s.find("if debug and images_so_far"), 13, "if ");
    }
    const FileResult g = analyze_text("show.py", s, Config{}, EngineOptions{});
    const Finding* h = only(g, "LL101");
    ASSERT_NE(h, nullptr) << s;
    EXPECT_FALSE(h->low_confidence) << s << h->message;
  }
  // Counting only the misclassified images runs until enough are found: no bound.
  std::string wrong = src;
  wrong.replace(wrong.find("            images_so_far += 1\n"), 30,
                "            if preds[j] != labels[j]:\n                images_so_far += 1\n");
  const FileResult g = analyze_text("show.py", wrong, Config{}, EngineOptions{});
  const Finding* h = only(g, "LL101");
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(h->low_confidence) << h->message;
}

TEST(Impact, AFrozenBackboneHandedToAnEvaluationFunctionIsWeak) {
  // The model reaches the loop as a parameter: every caller hands in the model Net() froze
  // and gave a head.
  const std::string src =
      "import torch\nimport torch.nn as nn\nfrom torchvision import models\n"
      "def Net(num_classes):\n"
      "    model = models.resnet50(pretrained=True)\n"
      "    for param in model.parameters():\n"
      "        param.requires_grad = False\n"
      "    model.fc = nn.Linear(2048, num_classes)\n"
      "    return model\n"
      "def test_one_epoch(model, loader):\n"
      "    model.eval()\n"
      "    for x, y in loader:\n"
      "        print(model(x.cuda()).argmax(1))\n"
      "model = Net(10)\n"
      "model.cuda()\n"
      "for epoch in range(10):\n"
      "    test_one_epoch(CALLED, val_loader)\n";
  auto with = [&](const std::string& arg) {
    std::string s = src;
    s.replace(s.find("CALLED"), 6, arg);
    return s;
  };
  const FileResult r = analyze_text("landmark.py", with("model"), Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  const FileResult g = analyze_text("landmark.py", with("models.resnet50(pretrained=True).cuda()"), Config{}, EngineOptions{});
  const Finding* h = only(g, "LL101");
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(h->low_confidence) << h->message;
}

TEST(Impact, ATimedLoopOfAFewTrainingStepsIsAMeasurement) {
  // A loop that trains for a constant handful of steps while the code reads a clock (a demo of
  // a device's speed that stops after four batches) measures; what the missing or misplaced
  // reset does to the update is not at stake. Without a clock a few steps are a demo whose
  // printed loss is the point, and a timed loop over a whole loader, or more than ten steps,
  // trains: both full.
  auto program = [](const std::string& loops, const std::string& indent, const std::string& body_end,
                    const std::string& reset_before_step, bool clock) {
    return "import time\nimport torch\nimport torch.nn as nn\n"
           "model = nn.Linear(4, 1).cuda()\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n" +
           loops + indent + (clock ? "start = time.time()\n" + indent : std::string()) +
           "loss = model(x.cuda()).sum()\n" + indent + "loss.backward()\n" + reset_before_step + indent +
           "opt.step()\n" + body_end;
  };
  struct Case { std::string loops, indent, end, reason; };
  for (const std::string& rule : {std::string("LL201"), std::string("LL202")}) {
    const std::string reset = rule == "LL202" ? std::string("    opt.zero_grad()\n") : std::string();
    for (const Case& c :
         {Case{"for i, (x, y) in enumerate(loader):\n", "    ", "    if i == 3:\n        break\n", "runs 4 times"},
          Case{"for i in range(3):\n    x = torch.load('x.pt')\n", "    ", "", "runs 3 times"},
          Case{"for device in ['cpu', 'cuda']:\n    for i, (x, y) in enumerate(loader):\n", "        ",
               "        if i == 3:\n            break\n", "runs 8 times"}}) {
      const std::string r2 = !reset.empty() && c.indent.size() == 8 ? "    " + reset : reset;
      const FileResult r = analyze_text("demo.py", program(c.loops, c.indent, c.end, r2, true), Config{}, EngineOptions{});
      const Finding* f = only(r, rule);
      ASSERT_NE(f, nullptr) << rule << c.loops;
      EXPECT_TRUE(f->low_confidence) << rule << " " << f->message;
      EXPECT_NE(f->message.find(c.reason), std::string::npos) << f->message;
      const FileResult u = analyze_text("demo.py", program(c.loops, c.indent, c.end, r2, false), Config{}, EngineOptions{});
      const Finding* g = only(u, rule);
      ASSERT_NE(g, nullptr) << rule << c.loops;
      EXPECT_FALSE(g->low_confidence) << rule << " " << g->message;
    }
    for (const std::string& loops : {std::string("for x, y in loader:\n"),
                                     std::string("for i in range(11):\n    x = torch.load('x.pt')\n")}) {
      const FileResult r = analyze_text("demo.py", program(loops, "    ", "", reset, true), Config{}, EngineOptions{});
      const Finding* f = only(r, rule);
      ASSERT_NE(f, nullptr) << rule << loops;
      EXPECT_FALSE(f->low_confidence) << rule << " " << f->message;
    }
    // Ten timed epochs of a full-batch fit whose model is saved afterwards: training. Full.
    const FileResult saved = analyze_text(
        "demo.py",
        program("for i in range(10):\n    x = torch.load('x.pt')\n", "    ", "", reset, true) +
            "torch.save(model.state_dict(), 'gcn.pt')\n",
        Config{}, EngineOptions{});
    ASSERT_NE(only(saved, rule), nullptr) << rule;
    EXPECT_FALSE(only(saved, rule)->low_confidence) << rule << " " << only(saved, rule)->message;
  }
}

TEST(Impact, ATimedTrainingLoopOnTensorsTheProgramMakesIsABenchmark) {
  // A loop that trains on tensors the program makes while the function reads a clock or the
  // memory counters measures speed or memory: the parameters it computes are thrown away. The
  // same loop without a clock is a toy fit (what it learns is its point), and a timed loop over
  // a loader trains on data: both full.
  auto program = [](const std::string& input, const std::string& clock) {
    return "import time\nimport torch\n"
           "def bench(n):\n"
           "    layer = torch.nn.TransformerEncoderLayer(512, 8).cuda()\n"
           "    opt = torch.optim.Adam(layer.parameters(), 1e-4)\n"
           "    hidden = torch.ones(4, n, 512).cuda()\n"
           "    target = torch.zeros(4, n, 512).cuda()\n" +
           clock + "    for i in range(1000):\n" + input +
           "        result = layer(x)\n"
           "        loss = ((target - result) ** 2).mean()\n"
           "        loss.backward()\n"
           "        opt.step()\n";
  };
  const std::string made = "        x = hidden\n", data = "        x = next(batches).cuda()\n";
  for (const std::string& clock : {std::string("    start = time.time()\n"),
                                   std::string("    used = torch.cuda.max_memory_allocated()\n")}) {
    const FileResult r = analyze_text("bench.py", program(made, clock), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL201");
    ASSERT_NE(f, nullptr) << clock;
    EXPECT_TRUE(f->low_confidence) << f->message;
    EXPECT_NE(f->message.find("benchmark"), std::string::npos) << f->message;
  }
  for (const auto& [input, clock] : {std::pair{made, std::string()}, std::pair{data, std::string("    t0 = time.time()\n")}}) {
    const FileResult r = analyze_text("bench.py", program(input, clock), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL201");
    ASSERT_NE(f, nullptr) << input << clock;
    EXPECT_FALSE(f->low_confidence) << f->message;
  }
  // A fit on generated data (a sine, a linear regression) that times its epochs keeps what it
  // learns: the model is saved, returned or read after the loop. Full.
  for (const std::string& after : {std::string("    torch.save(layer.state_dict(), 'fit.pt')\n"),
                                   std::string("    return layer\n"),
                                   std::string("    print(layer(hidden).mean())\n")}) {
    const FileResult r =
        analyze_text("fit.py", program(made, "    start = time.time()\n") + after, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL201");
    ASSERT_NE(f, nullptr) << after;
    EXPECT_FALSE(f->low_confidence) << after << f->message;
  }
  // A model of the module trained by a function (the module saves or prints it after the call):
  // full.
  const FileResult glob = analyze_text(
      "fit.py",
      "import time\nimport torch\nnet = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(net.parameters(), lr=0.03)\n"
      "X = torch.randn(1000, 2)\n"
      "def train(n):\n    t0 = time.perf_counter()\n    for epoch in range(n):\n        loss = net(X).sum()\n"
      "        loss.backward()\n        opt.step()\n    print(time.perf_counter() - t0)\n"
      "train(300)\nprint(net.weight)\n",
      Config{}, EngineOptions{});
  ASSERT_NE(only(glob, "LL201"), nullptr);
  EXPECT_FALSE(only(glob, "LL201")->low_confidence) << only(glob, "LL201")->message;
  // Rebound before it is read again: the benchmark's model is thrown away.
  const FileResult g = analyze_text(
      "bench.py",
      program(made, "    start = time.time()\n") + "    layer = torch.nn.Linear(2, 2)\n    print(layer)\n",
      Config{}, EngineOptions{});
  ASSERT_NE(only(g, "LL201"), nullptr);
  EXPECT_TRUE(only(g, "LL201")->low_confidence) << only(g, "LL201")->message;
}

TEST(Impact, AFullyConnectedModelOfVisibleSizeKeepsASmallGraph) {
  // An evaluation loop of a model built from Linear layers of literal sizes (an MLP on
  // flattened CIFAR images) keeps a few thousand floats per sample in its graph: weak, and the
  // message says how many. Built in the loop's scope, by a same-file class, or handed in by
  // every same-file caller. A convolution's feature maps, or layers wide enough to keep more
  // than 16k floats per sample, keep the full severity.
  auto program = [](const std::string& build) {
    return "import torch\nimport torch.nn as nn\n" + build +
           "def evaluate(model, loader):\n"
           "    model.eval()\n"
           "    correct = 0\n"
           "    for x, y in loader:\n"
           "        out = model(x.cuda())\n"
           "        correct += (out.argmax(1) == y.cuda()).sum().item()\n"
           "    return correct\n"
           "evaluate(net, test_loader)\n";
  };
  const std::string mlp_class =
      "class MLP(nn.Module):\n"
      "    def __init__(self, hidden=1000):\n"
      "        super().__init__()\n"
      "        self.fc1 = nn.Linear(3 * 32 * 32, hidden)\n"
      "        self.drop = nn.Dropout(0.5)\n"
      "        self.fc2 = nn.Linear(hidden, 10)\n"
      "    def forward(self, x):\n"
      "        return self.fc2(self.drop(torch.relu(self.fc1(x))))\n";
  for (const std::string& build :
       {std::string("net = nn.Sequential(nn.Linear(3 * 32 * 32, 1000), nn.ReLU(), nn.Linear(1000, 10)).cuda()\n"),
        mlp_class + "net = MLP().to('cuda')\n"}) {
    const FileResult r = analyze_text("mlp.py", program(build), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << build;
    EXPECT_TRUE(f->low_confidence) << f->message;
    EXPECT_NE(f->message.find("fully-connected model whose forward keeps about 3,030 floats (12 KB) per sample"),
              std::string::npos)
        << f->message;
  }
  for (const std::string& build :
       {std::string("net = nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.Flatten(), nn.Linear(14400, 10)).cuda()\n"),
        std::string("net = nn.Sequential(nn.Linear(4096, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),\n"
                    "                    nn.Linear(4096, 1000)).cuda()\n"),
        std::string("net = torch.load('mlp.pt').cuda()\n")}) {
    const FileResult r = analyze_text("mlp.py", program(build), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << build;
    EXPECT_FALSE(f->low_confidence) << f->message;
  }
  // Another caller hands in a model the file does not size: full.
  const FileResult r = analyze_text(
      "mlp.py",
      program("net = nn.Sequential(nn.Linear(3 * 32 * 32, 1000), nn.ReLU(), nn.Linear(1000, 10)).cuda()\n") +
          "evaluate(torch.load('big.pt').cuda(), test_loader)\n",
      Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence) << f->message;
}

TEST(Impact, AnAppendOnAnObjectOfAClassTheFileDoesNotShowIsWeak) {
  // `run_loss = CumulativeAverage()` (MONAI's metric, which detaches what it is given):
  // `.append` is that class's method, not a list's, so what it keeps is not known. A list, a
  // deque, or a class of the file keep the full severity.
  auto program = [](const std::string& made, const std::string& head) {
    return "import torch\n" + head +
           "model = torch.load('m.pt').cuda()\n"
           "for epoch in range(100):\n"
           "    run_loss = " + made + "\n"
           "    for x, y in train_loader:\n"
           "        loss = criterion(model(x.cuda()), y.cuda())\n"
           "        run_loss.append(loss)\n";
  };
  for (const auto& [made, head] : {std::pair<std::string, std::string>{"CumulativeAverage()", "from monai.metrics import CumulativeAverage\n"},
                                   {"CumulativeAverage()", ""}, {"metrics.RunningMean(window=10)", "import metrics\n"}}) {
    const FileResult r = analyze_text("train.py", program(made, head), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << made;
    EXPECT_TRUE(f->low_confidence) << f->message;
    EXPECT_NE(f->message.find("a class this file does not show"), std::string::npos) << f->message;
  }
  for (const auto& [made, head] : {std::pair<std::string, std::string>{"[]", ""}, {"list()", ""},
                                   {"deque(maxlen=100000)", "from collections import deque\n"},
                                   {"Buffer()", "class Buffer(list):\n    pass\n"}}) {
    const FileResult r = analyze_text("train.py", program(made, head), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << made;
    EXPECT_FALSE(f->low_confidence) << made << ": " << f->message;
  }
}

TEST(Impact, ALambdaThatUsesCudaInitialisesNothingWhereItIsDefined) {
  // `cuda = lambda arr, gpu: arr.cuda(gpu)` at module level defines a function: its body runs
  // when it is called, not at import. A child that initialises CUDA itself, started by a method
  // after that definition, is the weak "fragile" case; a module-level CUDA call that runs at
  // import keeps the error.
  auto program = [](const std::string& module_line) {
    return "import torch\nimport torch.multiprocessing as mp\n" + module_line +
           "def async_update(args, queue):\n"
           "    while True:\n"
           "        idx, values = queue.get()\n"
           "        values.cuda(0)\n"
           "class Embedding:\n"
           "    def create_async_update(self):\n"
           "        self.q = mp.Queue(1)\n"
           "        self.p = mp.Process(target=async_update, args=(self.args, self.q))\n"
           "        self.p.start()\n";
  };
  const FileResult r = analyze_text("emb.py", program("cuda = lambda arr, gpu: arr.cuda(gpu)\n"), Config{}, EngineOptions{});
  const Finding* f = only(r, "LL501");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  EXPECT_NE(f->message.find("initialises CUDA itself"), std::string::npos) << f->message;
  const FileResult g = analyze_text("emb.py", program("table = torch.arange(10).cuda()\n"), Config{}, EngineOptions{});
  const Finding* h = only(g, "LL501");
  ASSERT_NE(h, nullptr);
  EXPECT_FALSE(h->low_confidence) << h->message;
  // Called at module level, the lambda (or a function of the file) does run CUDA there: error.
  for (const std::string& helper : {std::string("to_device = lambda x: x.cuda()\n"),
                                    std::string("def to_device(x):\n    return x.cuda()\n")}) {
    const FileResult r =
        analyze_text("emb.py", program(helper + "table = to_device(torch.arange(10))\n"), Config{}, EngineOptions{});
    const Finding* k = only(r, "LL501");
    ASSERT_NE(k, nullptr) << helper;
    EXPECT_FALSE(k->low_confidence) << helper << k->message;
  }
}

TEST(Impact, BatchesOfAVisibleSampleSizeThatStaySmallInFlightAreWeak) {
  // `num_workers=os.cpu_count()` over images the transform resizes to 64x64, batch 32: on a
  // 128-core host 256 batches of 32 x 3 x 64 x 64 floats are about 403 MB: weak, with the size.
  // CIFAR-10 (3 x 32 x 32 by default) the same. Upscaled to 224 with batch 128 they are about
  // 20 GB: full. An image folder whose transform sets no size: full.
  auto program = [](const std::string& dataset, const std::string& transform, const std::string& bs) {
    return "import os\nimport torch\nfrom torchvision import datasets, transforms\n"
           "tf = transforms.Compose([" + transform + "transforms.ToTensor()])\n"
           "train_data = " + dataset + "\n"
           "train_loader = torch.utils.data.DataLoader(train_data, batch_size=" + bs +
           ", shuffle=True, num_workers=os.cpu_count())\n"
           "for x, y in train_loader:\n    pass\n";
  };
  struct Case { std::string dataset, transform, bs, size; };
  for (const Case& c : {Case{"datasets.ImageFolder('data/train', transform=tf)", "transforms.Resize((64, 64)), ", "32",
                             "32 x 3 x 64 x 64 floats"},
                        Case{"datasets.CIFAR10('data', train=True, transform=tf, download=True)", "", "128",
                             "128 x 3 x 32 x 32 floats"},
                        Case{"datasets.MNIST('data', transform=tf)", "transforms.Normalize((0.5,), (0.5,)), ", "64",
                             "64 x 1 x 28 x 28 floats"}}) {
    const FileResult r = analyze_text("train.py", program(c.dataset, c.transform, c.bs), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL402");
    ASSERT_NE(f, nullptr) << c.dataset;
    EXPECT_TRUE(f->low_confidence) << f->message;
    EXPECT_NE(f->message.find(c.size), std::string::npos) << f->message;
  }
  // A part of such a dataset, from `random_split` (unpacked) or `Subset`, has its samples.
  for (const std::string& part : {std::string("train_data, val_data = torch.utils.data.random_split(full, [55000, 5000])\n"),
                                  std::string("train_data = torch.utils.data.Subset(full, range(1000))\n")}) {
    std::string src = program("datasets.MNIST('data', transform=tf)", "", "128");
    src.replace(src.find("train_data = "), std::string("train_data = ").size(), "full = ");
    src.insert(src.find("train_loader = "), part);
    const FileResult r = analyze_text("train.py", src, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL402");
    ASSERT_NE(f, nullptr) << part;
    EXPECT_TRUE(f->low_confidence) << part << f->message;
    EXPECT_NE(f->message.find("128 x 1 x 28 x 28 floats"), std::string::npos) << f->message;
  }
  // A transform handed by position, or assigned to the dataset later, is one the shape does not
  // follow: full.
  for (const std::string& later :
       {std::string("train_data = datasets.CIFAR10('data', True, transforms.Compose([transforms.Resize(224)]))\n"),
        std::string("train_data.transform = transforms.Compose([transforms.Resize(224), transforms.ToTensor()])\n")}) {
    std::string src = program("datasets.CIFAR10('data', train=True, download=True)", "", "128");
    src.insert(src.find("train_loader = "), later);
    const FileResult r = analyze_text("train.py", src, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL402");
    ASSERT_NE(f, nullptr) << later;
    EXPECT_FALSE(f->low_confidence) << later << f->message;
  }
  for (const Case& c : {Case{"datasets.CIFAR10('data', transform=tf)", "transforms.Resize(224), ", "128", ""},
                        Case{"datasets.ImageFolder('data/train', transform=tf)", "transforms.RandomHorizontalFlip(), ", "32", ""},
                        Case{"datasets.ImageFolder('data/train', transform=tf)", "transforms.Resize((64, 64)), ", "n", ""}}) {
    const FileResult r = analyze_text("train.py", program(c.dataset, c.transform, c.bs), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL402");
    ASSERT_NE(f, nullptr) << c.dataset << c.transform;
    EXPECT_FALSE(f->low_confidence) << f->message;
  }
}

TEST(Impact, AFullyConnectedHeadOnAnUnsizedBackboneOrOnWideInputsKeepsItsSeverity) {
  // The sized head's input comes from a backbone's method (`forward_features`), whose graph the
  // head's width does not count; a PointNet-style MLP of 3 input features runs per point, and a
  // tabular MLP of 8 features keeps far more than its input: full. An MLP whose graph keeps
  // about what its input holds stays weak, and so does a toy network keeping a few floats.
  auto program = [](const std::string& build, const std::string& forward) {
    return "import torch\nimport torch.nn as nn\nimport timm\n" + build +
           "def evaluate(loader):\n"
           "    head.eval()\n"
           "    correct = 0\n"
           "    for x, y in loader:\n" + forward +
           "        correct += (out.argmax(1) == y.cuda()).sum().item()\n"
           "    return correct\n";
  };
  const std::string head3 = "head = nn.Sequential(nn.Linear(768, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()\n";
  struct Case { std::string build, forward; bool weak; };
  for (const Case& c :
       {Case{"backbone = timm.create_model('vit_base_patch16_224').cuda()\n" + head3,
             "        feats = backbone.forward_features(x.cuda())[:, 0]\n        out = head(feats)\n", false},
        Case{"head = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1024)).cuda()\n",
             "        out = head(x.cuda()).max(1)[0]\n", false},
        Case{"head = nn.Sequential(nn.Linear(8, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 2)).cuda()\n",
             "        out = head(x.cuda())\n", false},
        Case{head3, "        out = head(x.cuda())\n", true},
        Case{"head = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2)).cuda()\n", "        out = head(x.cuda())\n", true}}) {
    const FileResult r = analyze_text("eval.py", program(c.build, c.forward), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << c.build << c.forward;
    EXPECT_EQ(f->low_confidence, c.weak) << c.build << c.forward << f->message;
  }
}

TEST(Impact, OnlyGradientAttributionsInTheForwardsOwnScopeSilenceLL101) {
  // Silent: the evaluation loop hands the model to a gradient attribution in the loop. Kept:
  // a plotting helper of monai.visualize, a perturbation method (Occlusion runs forwards only),
  // and integrated gradients run on one batch after a loop over the whole test set.
  auto program = [](const std::string& head, const std::string& in_loop, const std::string& after) {
    return "import torch\n" + head +
           "def main(test_loader):\n"
           "    model = torch.load('resnet.pt').cuda()\n"
           "    model.eval()\n"
           "    for images, labels in test_loader:\n"
           "        preds = model(images.cuda()).argmax(1)\n" + in_loop + after;
  };
  const std::string ig = "from captum.attr import IntegratedGradients, Occlusion\n";
  struct Case { std::string head, in_loop, after; bool silent; };
  for (const Case& c :
       {Case{ig, "        IntegratedGradients(model).attribute(images.cuda(), target=preds)\n", "", true},
        Case{"from monai.visualize import plot_2d_or_3d_image\n",
             "        plot_2d_or_3d_image(preds, 0, writer, tag='pred')\n", "", false},
        Case{ig, "        Occlusion(model).attribute(images.cuda(), target=preds, sliding_window_shapes=(3, 15, 15))\n", "",
             false},
        Case{ig, "",
             "    images, labels = next(iter(test_loader))\n"
             "    IntegratedGradients(model).attribute(images[:4].cuda(), target=labels[:4].cuda())\n",
             false}}) {
    const FileResult r = analyze_text("explain.py", program(c.head, c.in_loop, c.after), Config{}, EngineOptions{});
    EXPECT_EQ(only(r, "LL101") == nullptr, c.silent) << c.head << c.in_loop << c.after;
  }
}

TEST(Impact, AMainThatForksBeforeItsOwnCudaIsNotCudaAtImport) {
  // `main()`, called by the main guard, starts a worker process and only then builds its model
  // on CUDA: the fork comes first in its own order, so the child that never touches CUDA is
  // safe and a child that does is the weak fragile case, not an error.
  const std::string src =
      "import torch\nimport torch.multiprocessing as mp\n"
      "def worker(q):\n    torch.zeros(1).cuda()\n"
      "def main():\n    q = mp.Queue()\n    p = mp.Process(target=worker, args=(q,))\n    p.start()\n"
      "    model = torch.nn.Linear(2, 2).cuda()\n"
      "if __name__ == '__main__':\n    main()\n";
  const FileResult r = analyze_text("run.py", src, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL501");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
}

TEST(Impact, ALocalSumOverTheElementsOfOneInputInAPerItemHelperIsWeak) {
  // A seq2seq evaluation helper, called once per sentence pair, sums the decoder's loss over
  // the target's tokens (`for di in range(target_tensor.size(0))`) into a local it returns as a
  // number: it holds one sentence's graphs until the call returns (LL101 reports the forward's
  // missing no_grad there). Weak. Called once outside any loop, or summing over a whole
  // dataset (`range(len(dataset))`), it stays an error.
  auto program = [](const std::string& bound, const std::string& caller) {
    return "import torch\n"
           "def eval_onepair(input_tensor, target_tensor, encoder, decoder, criterion):\n"
           "    target_length = " + bound + "\n"
           "    loss = 0\n"
           "    hidden = encoder(input_tensor)\n"
           "    for di in range(target_length):\n"
           "        out, hidden = decoder(target_tensor[di], hidden)\n"
           "        loss += criterion(out, target_tensor[di])\n"
           "    return loss.item() / target_length\n" + caller;
  };
  const std::string per_pair = "def evaluate(pairs, encoder, decoder, criterion):\n"
                               "    return [eval_onepair(i.cuda(), t.cuda(), encoder, decoder, criterion) for i, t in pairs]\n";
  const FileResult r = analyze_text("seq2seq.py", program("target_tensor.size(0)", per_pair), Config{}, EngineOptions{});
  const Finding* f = only(r, "LL102");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  EXPECT_NE(f->message.find("one input"), std::string::npos) << f->message;
  for (const auto& [bound, caller] :
       {std::pair<std::string, std::string>{"target_tensor.size(0)", "print(eval_onepair(x.cuda(), y.cuda(), enc, dec, crit))\n"},
        {"len(dataset)", per_pair}}) {
    const FileResult g = analyze_text("seq2seq.py", program(bound, caller), Config{}, EngineOptions{});
    const Finding* h = only(g, "LL102");
    ASSERT_NE(h, nullptr) << bound << caller;
    EXPECT_FALSE(h->low_confidence) << bound << caller << h->message;
  }
}

TEST(Impact, AForwardInALoopThatWaitsForTypedInputIsWeak) {
  // `while True: text = input(...)`, then one forward of what was typed: an interactive demo,
  // one item per iteration. A folder typed once and then walked is a pass over data, and an
  // `input` the file defines is not the builtin.
  auto program = [](const std::string& pre, const std::string& loop) {
    return "import torch\n" + pre +
           "model = torch.load('m.pt').cuda()\n"
           "model.eval()\n" + loop;
  };
  const std::string typed = "while True:\n"
                            "    text = input('> ')\n"
                            "    x = torch.tensor([len(text)]).float().cuda()\n"
                            "    print(model(x).sigmoid().item())\n";
  {
    const FileResult r = analyze_text("demo.py", program("", typed), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
    EXPECT_NE(f->message.find("`input()`"), std::string::npos) << f->message;
  }
  const std::string folder = "while True:\n"
                             "    folder = input('folder: ')\n"
                             "    for path in sorted(os.listdir(folder)):\n"
                             "        x = torch.load(os.path.join(folder, path)).cuda()\n"
                             "        print(model(x).argmax().item())\n";
  // A chat that carries the forward's state to the next turn (its graph grows turn after
  // turn), and a pass over a loader that pauses only when a flag asks for it.
  const std::string chat = "past = None\n"
                           "while True:\n"
                           "    ids = torch.tensor([[len(input('> '))]]).cuda()\n"
                           "    out = model(ids, past_key_values=past)\n"
                           "    past = out.past_key_values\n"
                           "    print(out.logits.argmax(-1))\n";
  const std::string paused = "step_through = False\n"
                             "for x, y in loader:\n"
                             "    print(model(x.cuda()).argmax(1))\n"
                             "    if step_through:\n"
                             "        input('next? ')\n";
  for (const auto& [pre, loop] : std::vector<std::pair<std::string, std::string>>{
           {"import os\n", folder}, {"def input(prompt):\n    return open('q.txt').read()\n", typed},
           {"", chat}, {"", paused}}) {
    const FileResult r = analyze_text("demo.py", program(pre, loop), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << loop;
    EXPECT_FALSE(f->low_confidence) << pre << loop;
  }
}

TEST(Impact, ABackpropagatedLossKeptOnOneStepInSoManyIsWeak) {
  // `if batch_idx % 500 == 0: losses.append(loss)` after `loss.backward()`: one value and its
  // autograd nodes per 500 steps. Every step (the `else` of that test), a value backward()
  // did not free (retain_graph=True), or no backward at all keeps the full severity.
  auto program = [](const std::string& backward, const std::string& keep) {
    return "import torch\n"
           "def fit(model, loader, opt):\n"
           "    losses = []\n"
           "    for batch_idx, (x, y) in enumerate(loader):\n"
           "        loss = ((model(x.cuda()) - y.cuda()) ** 2).mean()\n"
           "        opt.zero_grad()\n" + backward +
           "        opt.step()\n" + keep +
           "    return losses\n";
  };
  const std::string backward = "        loss.backward()\n";
  const std::string periodic = "        if batch_idx % 500 == 0:\n            losses.append(loss)\n";
  {
    const FileResult r = analyze_text("fit.py", program(backward, periodic), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence);
    EXPECT_NE(f->message.find("batch_idx % 500 == 0"), std::string::npos) << f->message;
  }
  for (const auto& [bw, keep] : std::vector<std::pair<std::string, std::string>>{
           {backward, "        if batch_idx % 500 == 0:\n            print(batch_idx)\n        else:\n"
                      "            losses.append(loss)\n"},
           {"        loss.backward(retain_graph=True)\n", periodic},
           {"        pass\n", periodic},
           // **kwargs that may hold retain_graph, create_graph=True (the graph is kept)
           {"        loss.backward(**backward_kwargs)\n", periodic},
           {"        loss.backward(create_graph=True)\n", periodic},
           // `loss` rebound to a validation loss under the test: another value, never freed
           {backward, "        if batch_idx % 500 == 0:\n            loss = ((model(vx.cuda()) - vy.cuda()) ** 2).mean()\n"
                      "            losses.append(loss)\n"},
           // a test of an enclosing loop's counter keeps every step of one epoch in so many
           {backward, "        if epoch % 10 == 0:\n            losses.append(loss)\n"}}) {
    const FileResult r = analyze_text("fit.py", program(bw, keep), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << bw << keep;
    EXPECT_FALSE(f->low_confidence) << bw << keep;
  }
}

TEST(Impact, ABackpropagatedLossSummedForOnePassIsWeak) {
  // `total += loss` after `loss.backward()`, in `train_one_epoch()` (a local, one pass over
  // the loader per call) or reset by the epoch loop: a sum holds one tensor and each step's
  // autograd nodes (host memory, about a kilobyte per operation of the forward, measured),
  // whatever the model. An accumulator that lives across epochs, a value that is not the
  // back-propagated scalar, or retain_graph=True keeps the error. (A container keeps each
  // step's tensor too: there the model's size decides, below.)
  const std::string net = "import torch\nimport torch.nn as nn\nimport torchvision\n"
                          "class Net(nn.Module):\n"
                          "    def __init__(self):\n"
                          "        super().__init__()\n"
                          "        self.fc1 = nn.Linear(784, 128)\n"
                          "        self.fc2 = nn.Linear(128, 10)\n"
                          "    def forward(self, x):\n"
                          "        return self.fc2(torch.relu(self.fc1(x)))\n";
  auto epoch_fn = [&](const std::string& model, const std::string& keep, const std::string& backward) {
    return net +
           "def train_one_epoch(model, loader, opt, criterion):\n"
           "    total = 0\n"
           "    for x, y in loader:\n"
           "        out = model(x.cuda())\n"
           "        loss = criterion(out, y.cuda())\n"
           "        opt.zero_grad()\n" + backward +
           "        opt.step()\n" + keep +
           "    return total / len(loader)\n"
           "model = " + model + ".cuda()\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
           "for epoch in range(10):\n"
           "    print(train_one_epoch(model, loader, opt, nn.CrossEntropyLoss()))\n";
  };
  const std::string bw = "        loss.backward()\n";
  const std::string keep = "        total += loss\n";
  auto reset_by_epochs = [&](const std::string& init_outside) {
    return net + "model = Net().cuda()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n" + init_outside +
           "for epoch in range(10):\n" + (init_outside.empty() ? "    total = 0\n" : "") +
           "    for x, y in loader:\n"
           "        loss = nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n"
           "        opt.zero_grad()\n"
           "        loss.backward()\n"
           "        opt.step()\n"
           "        total += loss\n"
           "    print(total)\n";
  };
  for (const std::string& program : {epoch_fn("Net()", keep, bw), epoch_fn("Net()", "        total += loss * x.size(0)\n", bw),
                                     reset_by_epochs(""), epoch_fn("torchvision.models.resnet18()", keep, bw),
                                     // (a notebook's other cell binding `total` at module level: without
                                     // `global`, the function's `total` is its own local)
                                     "total = 0\n" + epoch_fn("Net()", keep, bw)}) {
    const FileResult r = analyze_text("train.py", program, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << program;
    EXPECT_TRUE(f->low_confidence) << program;
    EXPECT_NE(f->message.find("`total` is a sum that lives one pass over the data: it holds one tensor and each "
                              "step's autograd nodes"),
              std::string::npos)
        << f->message;
  }
  auto epoch_fn_loop = [&](const std::string& loop, const std::string& body_end) {
    std::string p = epoch_fn("Net()", body_end, bw);
    const std::string walk = "    for x, y in loader:\n";
    p.replace(p.find(walk), walk.size(), loop);
    return p;
  };
  for (const std::string& program :
       {reset_by_epochs("total = 0\n"),
        epoch_fn("Net()", "        total += out.sum()\n", bw),
        epoch_fn("Net()", keep, "        loss.backward(retain_graph=True)\n"),
        // `loss` rebound after the step to a validation loss nothing back-propagates
        epoch_fn("Net()", "        loss = criterion(model(vx.cuda()), vy.cuda())\n" + keep, bw),
        // a backward that runs only when training: the same function walks the validation set
        epoch_fn("Net()", keep, "        if train:\n            loss.backward()\n"),
        // an endless generator over the loader: the whole training is one 'pass'
        epoch_fn_loop("    for x, y in forever(loader):\n", keep),
        // a name the module binds too, declared global in the function
        [&] {
          std::string p = "total = 0\n" + epoch_fn("Net()", keep, bw);
          const std::string def = "def train_one_epoch(model, loader, opt, criterion):\n    total = 0\n";
          p.replace(p.find(def), def.size(), "def train_one_epoch(model, loader, opt, criterion):\n    global total\n    total = 0\n");
          return p;
        }()}) {
    const FileResult r = analyze_text("train.py", program, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << program;
    EXPECT_FALSE(f->low_confidence) << program;
  }
}

TEST(Impact, ComputedMethodNamesWithManyFieldsStayLinear) {
  // `getattr(self, f"{a}{b}...{z}_x")` against many long method names: the name patterns are
  // matched greedily (no backtracking over every split of the fields), and the file is
  // analysed within its budget, without a timeout diagnostic.
  std::string fields;
  for (int i = 0; i < 40; ++i) fields += "{p" + std::to_string(i) + "}";
  std::string program = "import torch\n\n\nclass Runner:\n    def __init__(self, model):\n        self.model = model\n\n";
  for (int m = 0; m < 200; ++m)
    program += "    def " + std::string(60, 'a') + std::to_string(m) + "(self, loader):\n"
               "        return [self.model(x.cuda()) for x in loader]\n\n";
  program += "    def run(self, loader, " + std::string("p0") + "):\n        with torch.no_grad():\n"
             "            return getattr(self, f\"" + fields + "_x\")(loader)\n";
  const FileResult r = analyze_text("runner.py", program, Config{}, EngineOptions{});
  EXPECT_TRUE(r.diagnostics.empty()) << (r.diagnostics.empty() ? "" : r.diagnostics[0].message);
}

TEST(Impact, AModelOfNamedLayersOrInitialisedWeightsHasAVisibleSize) {
  // The back-propagated one-pass list of a model the file sizes is weak, also when the
  // model is an `nn.Sequential` of layers bound to names (module-level, or `self.fc1` in the
  // constructor), its constructor initialises weights with `nn.init`, or it uses SELU. A name
  // bound to something not sized (a layer from another module, two bindings) keeps the error.
  auto program = [](const std::string& layers, const std::string& model) {
    return "import torch\nimport torch.nn as nn\n" + layers +
           "model = " + model + ".cuda()\n"
           "opt = torch.optim.Adam(model.parameters())\n"
           "for epoch in range(10):\n"
           "    costs = []\n"
           "    for x, y in loader:\n"
           "        opt.zero_grad()\n"
           "        cost = nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n"
           "        cost.backward()\n"
           "        opt.step()\n"
           "        costs.append(cost)\n"
           "    print(sum(costs) / len(costs))\n";
  };
  const std::string named = "linear1 = nn.Linear(784, 256)\nlinear2 = nn.Linear(256, 10)\nact = nn.SELU()\n"
                            "nn.init.xavier_uniform_(linear1.weight)\n";
  const std::string cls = "class CNN(nn.Module):\n"
                          "    def __init__(self):\n"
                          "        super().__init__()\n"
                          "        self.conv = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))\n"
                          "        self.fc1 = nn.Linear(14 * 14 * 32, 625)\n"
                          "        nn.init.xavier_uniform_(self.fc1.weight)\n"
                          "        self.head = nn.Sequential(self.fc1, nn.ReLU(), nn.Dropout(0.5))\n"
                          "        self.fc2 = nn.Linear(625, 10)\n"
                          "    def forward(self, x):\n"
                          "        return self.fc2(self.head(self.conv(x).flatten(1)))\n";
  for (const std::string& p : {program(named, "nn.Sequential(linear1, act, linear2)"), program(cls, "CNN()")}) {
    const FileResult r = analyze_text("train.py", p, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << p;
    EXPECT_TRUE(f->low_confidence) << p;
    EXPECT_NE(f->message.find("model of visible size"), std::string::npos) << f->message;
  }
  for (const std::string& p :
       {program("from blocks import Backbone\nbody = Backbone()\nhead = nn.Linear(256, 10)\n", "nn.Sequential(body, head)"),
        program(named + "if big:\n    linear2 = nn.Linear(256, 4096)\n", "nn.Sequential(linear1, act, linear2)")}) {
    const FileResult r = analyze_text("train.py", p, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << p;
    EXPECT_FALSE(f->low_confidence) << p;
  }
}

TEST(Impact, ALossAHelperBackPropagatedAndReturnedIsKeptLikeItsOwn) {
  // `loss, preds = self._run_batch(x, y)`, a same-file helper that runs the forward, calls
  // `loss.backward()` and returns the loss (or a value computed from it alone), summed into a
  // per-epoch local over `enumerate(self.train_data)`, with a model the file sizes: weak, as
  // when the loop back-propagates itself. A helper that returns what it did not
  // back-propagate, or a loop over a count of steps, keeps the error.
  auto program = [](const std::string& ret, const std::string& loop) {
    return "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
           "class Net(nn.Module):\n"
           "    def __init__(self):\n"
           "        super().__init__()\n"
           "        self.conv = nn.Conv1d(12, 64, kernel_size=3)\n"
           "        self.fc = nn.Linear(64, 2)\n"
           "    def forward(self, x):\n"
           "        return self.fc(self.conv(x).mean(-1))\n"
           "class Trainer:\n"
           "    def __init__(self, train_data, gpu_id):\n"
           "        self.train_data = train_data\n"
           "        self.model = Net().to(gpu_id)\n"
           "        self.model = nn.parallel.DistributedDataParallel(self.model, device_ids=[gpu_id])\n"
           "        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)\n"
           "    def _run_batch(self, source, targets):\n"
           "        output = self.model(source)\n"
           "        loss = F.cross_entropy(output, targets)\n"
           "        reduced = loss.clone() / 2\n"
           "        self.optimizer.zero_grad()\n"
           "        loss.backward()\n"
           "        self.optimizer.step()\n"
           "        return " + ret + ", output.argmax(1)\n"
           "    def _run_epoch(self):\n"
           "        total = 0\n" + loop +
           "            loss, preds = self._run_batch(source.cuda(), targets.cuda())\n"
           "            total += loss\n"
           "        return total\n";
  };
  const std::string walk = "        for i, (source, targets) in enumerate(self.train_data):\n";
  for (const std::string ret : {"loss", "reduced"}) {
    const FileResult r = analyze_text("engine.py", program(ret, walk), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << ret;
    EXPECT_TRUE(f->low_confidence) << ret;
    EXPECT_NE(f->message.find("`_run_batch()` back-propagates the loss it returns"), std::string::npos) << f->message;
  }
  for (const auto& [ret, loop] : std::vector<std::pair<std::string, std::string>>{
           {"output.sum()", walk},
           {"loss if self.training_step_flag else output.sum()", walk},
           {"loss", "        for i in range(self.steps):\n            source, targets = next(self.it)\n"}}) {
    const FileResult r = analyze_text("engine.py", program(ret, loop), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << ret << loop;
    EXPECT_FALSE(f->low_confidence) << ret << loop;
  }
  // The helper's backward under a flag (the same helper serves validation), and a list of
  // the losses the function returns (its caller may extend a curve with it every epoch).
  std::string flagged = program("loss", walk);
  const std::string bw = "        loss.backward()\n";
  flagged.replace(flagged.find(bw), bw.size(), "        if self.train_mode:\n            loss.backward()\n");
  std::string listed = program("loss", walk);
  listed.replace(listed.find("        total = 0\n"), 18, "        total = []\n");
  listed.replace(listed.find("            total += loss\n"), 26, "            total.append(loss)\n");
  for (const std::string& p : {flagged, listed}) {
    const FileResult r = analyze_text("engine.py", p, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL102");
    ASSERT_NE(f, nullptr) << p;
    EXPECT_FALSE(f->low_confidence) << p;
  }
}

TEST(Impact, AValueWhoseOnlyHistoryIsAReportedAccumulatorIsWeak) {
  // `history.append((total_loss / total).cpu())` once per epoch after `total_loss += loss`:
  // the accumulation is the finding; accumulating a number there leaves the appended value no
  // history. A value with history of its own, or an accumulator no finding names, keeps the
  // full severity.
  auto program = [](const std::string& accumulate, const std::string& keep) {
    return "import torch\n"
           "def fit(model, loader, opt, epochs):\n"
           "    history = []\n"
           "    for epoch in range(epochs):\n"
           "        total_loss, total = 0, 0\n"
           "        for x, y in loader:\n"
           "            loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n"
           "            opt.zero_grad()\n"
           "            loss.backward(retain_graph=True)\n"
           "            opt.step()\n" + accumulate +
           "            total += len(y)\n" + keep +
           "    return history\n";
  };
  const std::string sum = "            total_loss += loss\n";
  auto at_line = [](const FileResult& r, int line) -> const Finding* {
    for (const auto& f : r.findings)
      if (f.rule == "LL102" && static_cast<int>(f.range.line) == line) return &f;
    return nullptr;
  };
  // (Directly, or through a name computed from it: `epoch_loss = total_loss / total`.)
  for (const std::string keep : {std::string("        history.append((total_loss / total).cpu())\n"),
                                 std::string("        history.append(total_loss / total)\n")}) {
    for (const bool through_a_name : {false, true}) {
      std::string k = keep;
      if (through_a_name) k = "        epoch_loss = " + keep.substr(23, keep.size() - 25) + "\n        history.append(epoch_loss)\n";
      const FileResult r = analyze_text("fit.py", program(sum, k), Config{}, EngineOptions{});
      ASSERT_EQ(r.findings.size(), 2u) << k;
      ASSERT_NE(at_line(r, 11), nullptr) << k;
      EXPECT_FALSE(at_line(r, 11)->low_confidence) << k;
      const Finding* kept = at_line(r, through_a_name ? 14 : 13);
      ASSERT_NE(kept, nullptr) << k;
      EXPECT_TRUE(kept->low_confidence) << k;
      EXPECT_NE(kept->message.find("only history is `total_loss`'s"), std::string::npos) << kept->message;
    }
  }
  for (const auto& [acc, keep] : std::vector<std::pair<std::string, std::string>>{
           // history of its own beside the accumulator's
           {sum, "        history.append(total_loss / total + model(x.cuda()).sum())\n"},
           // the accumulator keeps numbers: no finding names it, the appended loss is its own
           {"            total_loss += loss.item()\n", "        history.append(loss)\n"},
           // the name rebound to a value with history of its own (a validation loss) before it
           {sum, "        total_loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())\n"
                 "        history.append(total_loss)\n"}}) {
    const FileResult r = analyze_text("fit.py", program(acc, keep), Config{}, EngineOptions{});
    const Finding* kept = nullptr;
    for (const auto& f : r.findings)
      if (f.message.rfind("`history` keeps", 0) == 0) kept = &f;
    ASSERT_NE(kept, nullptr) << acc << keep;
    EXPECT_FALSE(kept->low_confidence) << acc << keep;
  }
}

TEST(Impact, AValueFromAWeakAccumulatorKeepsItsOwnFinding) {
  // `epoch_loss += loss` of a small visible model, re-created each epoch, is weak (it lives one
  // pass); `history.append(epoch_loss / n)` keeps every epoch's graph for the whole run, and a
  // hidden finding cannot stand for it: it stays an error.
  const std::string program =
      "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
      "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
      "        self.fc1 = nn.Linear(784, 2048)\n        self.fc2 = nn.Linear(2048, 10)\n\n"
      "    def forward(self, x):\n        return self.fc2(F.relu(self.fc1(x)))\n\n\n"
      "def main(loader, epochs=100):\n    model = Net().cuda()\n"
      "    opt = torch.optim.SGD(model.parameters(), lr=0.01)\n    history = []\n"
      "    for epoch in range(epochs):\n        epoch_loss = 0.0\n        for x, y in loader:\n"
      "            x, y = x.cuda(), y.cuda()\n            loss = F.cross_entropy(model(x), y)\n"
      "            opt.zero_grad()\n            loss.backward()\n            opt.step()\n"
      "            epoch_loss += loss\n        history.append(epoch_loss / len(loader))\n    return history\n";
  const FileResult r = analyze_text("train.py", program, Config{}, EngineOptions{});
  ASSERT_EQ(r.findings.size(), 2u);
  for (const auto& f : r.findings) {
    ASSERT_EQ(f.rule, "LL102");
    EXPECT_EQ(f.low_confidence, f.range.line == 28) << f.range.line << " " << f.message;
  }
}

TEST(Impact, AStepTestWhoseDivisorIsOneKeepsEveryStep) {
  // `step % log_every == 0` samples one step in so many only when `log_every` is more than
  // 1: bound once to 1, it keeps every step's loss, and the finding is not weakened.
  auto loop = [](const std::string& every) {
    return "import torch\n"
           "def train(model, loader, optimizer):\n"
           "    log_every = " + every + "\n"
           "    history = []\n"
           "    for step, (x, y) in enumerate(loader):\n"
           "        loss = torch.nn.functional.cross_entropy(model(x), y)\n"
           "        optimizer.zero_grad()\n"
           "        loss.backward()\n"
           "        optimizer.step()\n"
           "        if step % log_every == 0:\n"
           "            history.append(loss)\n"
           "    return history\n";
  };
  const FileResult every = analyze_text("train.py", loop("1"), Config{}, EngineOptions{});
  const Finding* f = only(every, "LL102");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence) << f->message;
  const FileResult sampled = analyze_text("train.py", loop("50"), Config{}, EngineOptions{});
  const Finding* g = only(sampled, "LL102");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->low_confidence) << g->message;
  EXPECT_NE(g->message.find("one in so many"), std::string::npos) << g->message;
}

TEST(Impact, ACocoAnnotationIndexReadByWorkersIsLargeByWhatItIs) {
  // LL403 cannot see a container's size and reports it weak, but pycocotools' `COCO(...)` holds
  // a dict per image and per annotation whatever the dataset: that finding keeps its severity.
  // The ids it lists are one per sample, whose count the code does not show: weak.
  const std::string src =
      "import os\n"
      "from pycocotools.coco import COCO\n"
      "from torch.utils.data import DataLoader, Dataset\n"
      "class COCODataset(Dataset):\n"
      "    def __init__(self, root, ann):\n"
      "        self.coco = COCO(os.path.join(root, ann))\n"
      "        self.ids = self.coco.getImgIds()\n"
      "    def __len__(self):\n"
      "        return len(self.ids)\n"
      "    def __getitem__(self, index):\n"
      "        return self.coco.loadAnns(self.coco.getAnnIds(imgIds=[self.ids[index]]))\n"
      "loader = DataLoader(COCODataset('coco', 'train.json'), batch_size=16, num_workers=4)\n";
  const FileResult r = analyze_text("data/coco.py", src, Config{}, EngineOptions{});
  std::map<uint32_t, bool> weak;
  for (const Finding& f : r.findings)
    if (f.rule == "LL403") weak[f.range.line] = f.low_confidence;
  EXPECT_EQ(weak, (std::map<uint32_t, bool>{{6, false}, {7, true}}));
}

TEST(Impact, ACorpusHeldAsRecordsParsedFromItsTextIsLargeByWhatItIs) {
  // Every line of a data file parsed into a dict of tokens and fields (`eval(line)`,
  // `json.loads(line)`) and kept in a list: the corpus itself, held as Python objects, however
  // `__len__` counts samples. A list of the file names it reads stays weak: its size is unknown.
  const std::string src =
      "import json\n"
      "from torch.utils.data import DataLoader, Dataset\n"
      "class Sentences(Dataset):\n"
      "    def __init__(self, path, names_file):\n"
      "        self.data = []\n"
      "        for line in open(path).readlines():\n"
      "            if line.strip():\n"
      "                self.data.append(eval(line))\n"
      "        self.parsed = []\n"
      "        for line in open(path):\n"
      "            item = json.loads(line)\n"
      "            self.parsed.append(item)\n"
      "        self.names = [n.strip() for n in open(names_file)]\n"
      "    def __len__(self):\n"
      "        return len(self.names)\n"
      "    def __getitem__(self, index):\n"
      "        return self.data[index]['tokens'], self.parsed[index], open(self.names[index]).read()\n"
      "    def eval(self, predictions):\n"
      "        return sum(p == d['relation'] for p, d in zip(predictions, self.data))\n"
      "loader = DataLoader(Sentences('train.txt', 'names.txt'), batch_size=16, num_workers=8)\n";
  const FileResult r = analyze_text("data/sentences.py", src, Config{}, EngineOptions{});
  std::map<uint32_t, bool> weak;
  for (const Finding& f : r.findings)
    if (f.rule == "LL403") weak[f.range.line] = f.low_confidence;
  EXPECT_EQ(weak, (std::map<uint32_t, bool>{{5, false}, {9, false}, {13, true}}));
}

TEST(Impact, AContainerKeyedByAFieldOfTheSampleIsNoPerSampleContainer) {
  // `self.classes[self.datapath[index][0]]`: the key is the sample's category, shared by many
  // samples; the dict has an entry per class, not per sample. `self.order[index]` (a
  // permutation of indices) still reads a container one element per sample.
  const std::string src =
      "import json\n"
      "from torch.utils.data import DataLoader, Dataset\n"
      "class Shapes(Dataset):\n"
      "    def __init__(self, files, order):\n"
      "        self.datapath = [(f.split('/')[0], f) for f in files]\n"
      "        self.classes = dict(zip(sorted({c for c, _ in self.datapath}), range(16)))\n"
      "        self.order = list(order)\n"
      "    def __len__(self):\n"
      "        return 1000\n"
      "    def __getitem__(self, index):\n"
      "        fn = self.datapath[self.order[index]]\n"
      "        return fn[1], self.classes[self.datapath[index][0]]\n"
      "loader = DataLoader(Shapes(json.load(open('f.json')), range(10)), batch_size=16, num_workers=4)\n";
  const FileResult r = analyze_text("data/shapes.py", src, Config{}, EngineOptions{});
  std::map<uint32_t, bool> per_sample;
  for (const Finding& f : r.findings)
    if (f.rule == "LL403") per_sample[f.range.line] = f.message.find("one element per sample") != std::string::npos;
  EXPECT_EQ(per_sample, (std::map<uint32_t, bool>{{5, true}, {6, false}, {7, true}}));
}

TEST(Impact, AScriptWhoseTopLevelRunsTheWorkItDefinesIsAProgram) {
  // No main guard and no top-level loop: the top level builds an object of the file's class and
  // calls its training and test methods, which loop. On the CPU that is a CPU-only program.
  const std::string cls =
      "import torch\n"
      "class Runner:\n"
      "    def __init__(self, epochs):\n"
      "        self.epochs = epochs\n"
      "    def test(self, xs, model):\n"
      "        model.eval()\n"
      "        preds = []\n"
      "        for x in xs:\n"
      "            preds.append(torch.argmax(model(torch.tensor([x]).float())))\n"
      "        return preds\n";
  const std::string top = "runner = Runner(20)\nprint(runner.test(load_points(), torch.load('net.pt')))\n";
  {
    const FileResult r = analyze_text("rbfn.py", cls + top, Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr);
    EXPECT_TRUE(f->low_confidence) << f->message;
    EXPECT_NE(f->message.find("nothing in this program places a tensor on a GPU"), std::string::npos) << f->message;
  }
  // A module of definitions that only configures at import (`runner = Runner(20)`, a call of a
  // function without loops) is no program: its callers may run it on a GPU.
  {
    const FileResult r = analyze_text("rbfn.py", cls + "runner = Runner(20)\nprint(runner.epochs)\n", Config{},
                                      EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr);
    EXPECT_FALSE(f->low_confidence) << f->message;
  }
}

TEST(Impact, AnEpochSumOfAFewBackpropagatedLossesKeptPerEpochIsWeak) {
  // A toy of six points, 50 epochs: each epoch sums six losses after their backward() and
  // appends the sum for a plot. 300 scalars and their autograd nodes in all.
  auto program = [](const std::string& points, const std::string& backward) {
    return "import torch\n"
           "model = torch.nn.Linear(2, 1).cuda()\n"
           "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
           "train_set = " + points + "\n"
           "history = []\n"
           "for epoch in range(50):\n"
           "    epoch_loss = 0\n"
           "    for x, y in train_set:\n"
           "        opt.zero_grad()\n"
           "        loss = ((model(torch.tensor([x]).cuda()) - y) ** 2).mean()\n" + backward +
           "        opt.step()\n"
           "        epoch_loss += loss\n"
           "    history.append(epoch_loss)\n";
  };
  const std::string six = "[((0.0, 1.0), 1.0), ((1.0, 0.0), 0.0), ((1.0, 1.0), 1.0), ((0.0, 0.0), 0.0), "
                          "((2.0, 1.0), 1.0), ((1.0, 2.0), 0.0)]";
  {
    const FileResult r = analyze_text("toy.py", program(six, "        loss.backward()\n"), Config{}, EngineOptions{});
    std::map<uint32_t, bool> weak;
    for (const Finding& f : r.findings)
      if (f.rule == "LL102") weak[f.range.line] = f.low_confidence;
    EXPECT_EQ(weak, (std::map<uint32_t, bool>{{13, true}, {14, true}}));
  }
  // Never back-propagated: each sum keeps its graphs' saved activations, an error.
  {
    const FileResult r = analyze_text("toy.py", program(six, ""), Config{}, EngineOptions{});
    for (const Finding& f : r.findings)
      if (f.rule == "LL102" && f.range.line == 14) EXPECT_FALSE(f.low_confidence) << f.message;
  }
  // Over a loader of unknown length, the sums are not few: the append keeps its severity.
  {
    const FileResult r =
        analyze_text("toy.py", program("torch.utils.data.DataLoader(torch.load('d.pt'))", "        loss.backward()\n"),
                     Config{}, EngineOptions{});
    std::map<uint32_t, bool> weak;
    for (const Finding& f : r.findings)
      if (f.rule == "LL102") weak[f.range.line] = f.low_confidence;
    EXPECT_EQ(weak.count(14), 1u);
    EXPECT_FALSE(weak[14]);
  }
}

TEST(Impact, AModelReboundAfterItsCpuMoveIsWhereItsNewValuePutsIt) {
  // A notebook moves its first model to the CPU to plot its weights (`w = net.to("cpu")`), then
  // rebinds `net` to a new model on the device: the evaluation loop's forward runs that one, not
  // a model on the CPU. A rebinding that is the same move (`net = net.to("cpu")`) stays on the CPU.
  auto program = [](const std::string& rebinding) {
    return "import torch\nimport torch.nn as nn\nfrom models import Net, Net2\n"
           "device = torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')\n"
           "net = Net(n_input, n_output).to(device)\n"
           "w = net.to('cpu').l1.weight.data.numpy()\n" + rebinding +
           "net.eval()\n"
           "for images, labels in test_loader:\n"
           "    outputs = net(images.to(device))\n"
           "    print((outputs.argmax(1) == labels.to(device)).sum().item())\n";
  };
  const FileResult fresh = analyze_text("nb.py", program("net = Net2(n_input, n_output).to(device)\n"), Config{}, EngineOptions{});
  const Finding* f = only(fresh, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->low_confidence) << f->message;
  const FileResult same = analyze_text("nb.py", program("net = net.to('cpu')\n"), Config{}, EngineOptions{});
  const Finding* g = only(same, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->low_confidence);
  EXPECT_NE(g->message.find("moved to the CPU"), std::string::npos) << g->message;
}

TEST(Impact, AModelThatRunsOnlyLinearLayersPastItsGradOffBackboneIsWeak) {
  // `with torch.no_grad(): f = self.backbone(x)`, then `return self.linear(f.flatten(1))`: the
  // graph is the linear layer's. A convolution after the backbone with grad on keeps the error.
  auto program = [](const std::string& head, const std::string& after) {
    return "import torch\nimport torch.nn as nn\nfrom torchvision import models\n"
           "class Encoder(nn.Module):\n"
           "    def __init__(self):\n"
           "        super().__init__()\n"
           "        self.backbone = nn.Sequential(*list(models.resnet152(weights='DEFAULT').children())[:-2])\n"
           "        self.head = " + head + "\n"
           "    def forward(self, imgs):\n"
           "        with torch.no_grad():\n"
           "            features = self.backbone(imgs)\n"
           "        return " + after + "\n"
           "encoder = Encoder().cuda()\nencoder.eval()\n"
           "for img in images:\n"
           "    print(encoder(img.cuda()).norm().item())\n";
  };
  const FileResult weak = analyze_text("demo.py", program("nn.Linear(2048, 512)", "self.head(features.mean((2, 3)))"),
                                       Config{}, EngineOptions{});
  const Finding* f = only(weak, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_NE(f->message.find("records a graph only in linear layers"), std::string::npos) << f->message;
  const FileResult full = analyze_text("demo.py", program("nn.Conv2d(2048, 512, 1)", "self.head(features).mean((2, 3))"),
                                       Config{}, EngineOptions{});
  const Finding* g = only(full, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence) << g->message;
  // Linear layers with nothing under no_grad are a fully-connected model: the size policy
  // decides, not this one (a backbone of unknown size run with grad on, here).
  std::string mlp = program("nn.Linear(2048, 512)", "self.head(self.backbone(imgs).mean((2, 3)))");
  mlp.replace(mlp.find("        with torch.no_grad():\n            features = self.backbone(imgs)\n"), 73, "");
  const FileResult stack = analyze_text("demo.py", mlp, Config{}, EngineOptions{});
  const Finding* h = only(stack, "LL101");
  ASSERT_NE(h, nullptr) << mlp;
  EXPECT_EQ(h->message.find("records a graph only in linear layers"), std::string::npos) << h->message;
}

TEST(Impact, VolatileEvaluationOfAFileWhoseOnlyItemIsNumpysIsLegacyCode) {
  // Code for PyTorch 0.3: `Variable(x, volatile=True)` in validation. `pred.cpu().numpy().item()`
  // is NumPy's item, no sign of 0.4; a tensor's `.item()` is, unless the file reads a loss as
  // `loss.data[0]` (in a meter's update, not only in a sum), which raises on 0.5 and later.
  // Where `volatile` is ignored, the full finding.
  auto program = [](const std::string& read, const std::string& meter) {
    return "import torch\nfrom torch.autograd import Variable\n"
           "def validate(loader, model, criterion, meter):\n"
           "    model.eval()\n"
           "    for images, labels in loader:\n"
           "        images, labels = Variable(images.cuda(), volatile=True), Variable(labels.cuda())\n"
           "        outputs = model(images)\n"
           "        loss = criterion(outputs, labels)\n"
           "        meter.update(" + meter + ", images.size(0))\n"
           "def predict(model, x):\n"
           "    p = model(Variable(x.cuda())).data\n"
           "    return " + read + "\n";
  };
  auto weak = [&](const std::string& read, const std::string& meter) {
    const FileResult r = analyze_text("train.py", program(read, meter), Config{}, EngineOptions{});
    for (const auto& x : r.findings)
      if (x.rule == "LL101" && x.range.line == 7) {
        EXPECT_NE(x.message.find(x.low_confidence ? "volatile" : ""), std::string::npos) << x.message;
        return std::optional<bool>(x.low_confidence);
      }
    return std::optional<bool>();
  };
  EXPECT_EQ(weak("p.cpu().numpy().item()", "float(loss)"), std::optional<bool>(true));
  EXPECT_EQ(weak("p.cpu().item()", "loss.data[0]"), std::optional<bool>(true));
  EXPECT_EQ(weak("p.cpu().item()", "float(loss)"), std::optional<bool>(false));
}

TEST(Impact, ARowScoredAtATimeThroughASmallFullyConnectedModelIsWeak) {
  // A tabular net whose first layer takes the features the data has (`nn.Linear(N_FEATURES,
  // h1)`, sizes such as `int(h1 / 2)`, a layer bound twice), scoring a table row by row: one
  // row's graph is a few KB. The same model on whole batches of unknown size keeps the error.
  auto program = [](const std::string& input) {
    return "import torch\nimport torch.nn as nn\nimport pandas as pd\n"
           "df = pd.read_csv('train.csv')\nN_FEATURES = df.shape[1]\n"
           "h1 = 64\nh2 = int(h1 / 2)\n"
           "linear1 = nn.Linear(N_FEATURES, h1)\nlinear2 = nn.Linear(h1, h2)\n"
           "linear3 = nn.Linear(h2, 1)\nlinear3 = nn.Linear(h2, 1)\n"
           "net = nn.Sequential(linear1, nn.BatchNorm1d(h1), nn.ReLU(), linear2, nn.ReLU(), linear3, nn.Sigmoid())\n"
           "net.cuda()\nnet.eval()\nrows = []\n"
           "for index, row in pd.read_csv('test.csv').iterrows():\n"
           "    x = torch.from_numpy(row.values).cuda()" + input + "\n"
           "    p = net(x).data.float()\n"
           "    rows.append(p.cpu().item())\n";
  };
  const FileResult row = analyze_text("nb.py", program(".view(1, N_FEATURES)"), Config{}, EngineOptions{});
  const Finding* f = only(row, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_NE(f->message.find("one item (a batch of one) through a fully-connected model"), std::string::npos)
      << f->message;
  const FileResult batch = analyze_text("nb.py", program(""), Config{}, EngineOptions{});
  const Finding* g = only(batch, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence) << g->message;
}

TEST(Impact, AnActionTurnedIntoANumberInItsOwnStatementDiesWithTheStep) {
  // Showing a trained policy: `model(obs).argmax().item()` each step of one environment. An
  // output kept across steps keeps the full severity.
  auto program = [](const std::string& act) {
    return "import gymnasium as gym\nimport torch\nfrom nets import MLP\n"
           "device = torch.device('cuda')\n"
           "def show(path, episodes):\n"
           "    env = gym.make('CartPole-v1', render_mode='human')\n"
           "    model = MLP(4, 2)\n"
           "    model.load_state_dict(torch.load(path))\n"
           "    model = model.eval().to(device)\n"
           "    kept = []\n"
           "    for episode in range(episodes):\n"
           "        state = env.reset()[0]\n"
           "        done = False\n"
           "        while not done:\n" + act +
           "            state, _, done, _, _ = env.step(action)\n"
           "    return kept\n"
           "if __name__ == '__main__':\n"
           "    show('dqn.pt', 10)\n";
  };
  const FileResult dies = analyze_text(
      "main.py", program("            action = model(torch.tensor(state).float().to(device)).argmax().item()\n"),
      Config{}, EngineOptions{});
  const Finding* f = only(dies, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_NE(f->message.find("steps one environment"), std::string::npos) << f->message;
  const FileResult kept = analyze_text("main.py",
                                       program("            q = model(torch.tensor(state).float().to(device))\n"
                                               "            kept.append(q)\n"
                                               "            action = q.argmax().item()\n"),
                                       Config{}, EngineOptions{});
  const Finding* g = only(kept, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence) << g->message;
}

TEST(Impact, AHelpersForwardIsJudgedByTheLoopThatCallsIt) {
  // `predict_nationality(surname, classifier, vectorizer)` runs the model once per call. Called
  // for four names written out, it is four forwards; for a list the program reads, a pass over
  // data, unless the caller moved the model it hands in to the CPU.
  auto program = [](const std::string& before, const std::string& names) {
    return "import torch\nfrom models import Classifier\n"
           "classifier = Classifier().cuda()\n"
           "classifier.load_state_dict(torch.load('best.pt'))\n"
           "classifier.eval()\n"
           "def predict_nationality(surname, classifier, vectorizer):\n"
           "    x = torch.tensor(vectorizer.vectorize(surname)).unsqueeze(dim=0)\n"
           "    result = classifier(x.cuda(), apply_softmax=True)\n"
           "    return result.max(dim=1)[1].item()\n" +
           before + "for surname in " + names + ":\n"
           "    print(predict_nationality(surname, classifier, vectorizer))\n";
  };
  auto judge = [&](const std::string& before, const std::string& names) {
    const FileResult r = analyze_text("nb.py", program(before, names), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    return f ? std::optional<std::pair<bool, std::string>>({f->low_confidence, f->message}) : std::nullopt;
  };
  const auto few = judge("", "['McMahan', 'Nakamoto', 'Wan', 'Cho']");
  ASSERT_TRUE(few);
  EXPECT_TRUE(few->first);
  EXPECT_NE(few->second.find("its callers run `predict_nationality()` 4 times"), std::string::npos) << few->second;
  const auto data = judge("", "open('names.txt').read().split()");
  ASSERT_TRUE(data);
  EXPECT_FALSE(data->first) << data->second;
  const auto cpu = judge("classifier = classifier.to('cpu')\n", "open('names.txt').read().split()");
  ASSERT_TRUE(cpu);
  EXPECT_TRUE(cpu->first);
  EXPECT_NE(cpu->second.find("moves the model it hands in to the CPU"), std::string::npos) << cpu->second;
  // In a notebook that also trains, the call in the loop is what is reported: the same policy.
  const std::string trains = "opt = torch.optim.Adam(classifier.parameters())\n"
                             "for x, y in loader:\n    classifier(x).sum().backward()\n    opt.step()\n";
  const auto few_trained = judge(trains, "['McMahan', 'Nakamoto', 'Wan', 'Cho']");
  ASSERT_TRUE(few_trained);
  EXPECT_TRUE(few_trained->first) << few_trained->second;
  const auto data_trained = judge(trains, "open('names.txt').read().split()");
  ASSERT_TRUE(data_trained);
  EXPECT_FALSE(data_trained->first) << data_trained->second;
  const auto cpu_trained = judge(trains + "classifier = classifier.to('cpu')\n", "open('names.txt').read().split()");
  ASSERT_TRUE(cpu_trained);
  EXPECT_TRUE(cpu_trained->first) << cpu_trained->second;
}

TEST(Impact, OneItemPerDecodingStepThroughAHelperOrARecurrentStateIsWeak) {
  // Character-level sampling: one character per step, encoded by a same-file helper or built
  // with a device-chosen `LongTensor`; the LSTM's state goes on to the next step. A batch read
  // from data keeps the full severity.
  const std::string helper =
      "import torch\nfrom models import CharRNN\n"
      "device = torch.device('cuda')\n"
      "def one_hot_encode(ids, n):\n"
      "    out = torch.zeros((ids.numel(), n))\n"
      "    return out.reshape((*ids.shape, n))\n"
      "def predict_next_char(model, char, h):\n"
      "    x = torch.tensor([[model.char2int[char]]])\n"
      "    x = one_hot_encode(x, len(model.chars)).to(device)\n"
      "    h = tuple([each.data for each in h])\n"
      "    out, h = model(x, h)\n"
      "    p = torch.softmax(out, dim=1).data.cpu()\n"
      "    return model.int2char[p.argmax().item()], h\n"
      "def sample(model, size, prime='The'):\n"
      "    model.to(device)\n"
      "    model.eval()\n"
      "    h = model.init_hidden(1)\n"
      "    for ch in prime:\n"
      "        char, h = predict_next_char(model, ch, h)\n"
      "    chars = [char]\n"
      "    for ii in range(size):\n"
      "        char, h = predict_next_char(model, chars[-1], h)\n"
      "        chars.append(char)\n"
      "    return ''.join(chars)\n"
      "net = CharRNN(open('chars.txt').read())\n"
      "net.load_state_dict(torch.load('rnn.pt'))\n"
      "print(sample(net, 1000, prime='Anna'))\n";
  const FileResult r = analyze_text("nb.py", helper, Config{}, EngineOptions{});
  const Finding* f = only(r, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence);
  EXPECT_NE(f->message.find("one item (a batch of one) per decoding step"), std::string::npos) << f->message;
  std::string from_data = helper;
  from_data.replace(from_data.find("for ch in prime:"), 16, "for ch in open('book.txt').read():");
  const FileResult d = analyze_text("nb.py", from_data, Config{}, EngineOptions{});
  const Finding* g = only(d, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence) << g->message;

  auto recurrent = [](const std::string& input) {
    return "import torch\nimport torch.nn.functional as F\nfrom models import CharLM\n"
           "CUDA = torch.cuda.is_available()\n"
           "if CUDA:\n    LongTensor = torch.cuda.LongTensor\nelse:\n    LongTensor = torch.LongTensor\n"
           "def generate_text(n_chars, model, dataset, prompt_text='Hello'):\n"
           "    resulting_string = prompt_text\n"
           "    model.eval()\n"
           "    h, c = None, None\n"
           "    for _ in range(n_chars):\n"
           "        input_ints = " + input + "\n"
           "        logits, h, c = model(input_ints, h, c)\n"
           "        top_k_logits, top_k_indices = torch.topk(logits[0], 2)\n"
           "        next_token = top_k_indices.gather(-1, torch.multinomial(F.softmax(top_k_logits, dim=-1), 1))\n"
           "        resulting_string += dataset.vocab[next_token]\n"
           "    return resulting_string\n"
           "model = CharLM(100).cuda()\nmodel.load_state_dict(torch.load('lm.pt'))\n"
           "print(generate_text(100, model, dataset))\n";
  };
  const FileResult one = analyze_text("nb.py", recurrent("LongTensor([[dataset.char2int[resulting_string[-1]]]])"),
                                      Config{}, EngineOptions{});
  const Finding* h = only(one, "LL101");
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(h->low_confidence);
  EXPECT_NE(h->message.find("only its recurrent state goes on"), std::string::npos) << h->message;
  const FileResult many = analyze_text("nb.py", recurrent("LongTensor(dataset.batch_of_prompts())"), Config{}, EngineOptions{});
  const Finding* k = only(many, "LL101");
  ASSERT_NE(k, nullptr);
  EXPECT_FALSE(k->low_confidence) << k->message;
}

TEST(Impact, ASmallCnnOverALoaderIsSizedWhenTheLoopBindsTheWholePair) {
  // The CIFAR-10 tutorial's test pass: `for data in testloader:` (or `for i, data in
  // enumerate(testloader, 0):`), then `images = data[0].to(device)`. The sample is the pair's
  // first element, as in `for images, labels in testloader:`. In batches of 4 the graph is
  // 1 MB (weak); in batches of 4,096 it is about 240 MB (full severity).
  auto program = [](const std::string& batch, const std::string& loop) {
    return "import torch\nimport torchvision\nimport torchvision.transforms as transforms\n"
           "import torch.nn as nn\nimport torch.nn.functional as F\n"
           "transform = transforms.Compose([transforms.ToTensor()])\n"
           "testset = torchvision.datasets.CIFAR10(root='./data', train=False, download=True, transform=transform)\n"
           "testloader = torch.utils.data.DataLoader(testset, batch_size=" + batch + ", shuffle=False)\n"
           "device = torch.device('cuda:0')\n"
           "class Net(nn.Module):\n"
           "    def __init__(self):\n"
           "        super().__init__()\n"
           "        self.conv1 = nn.Conv2d(3, 6, 5)\n        self.pool = nn.MaxPool2d(2, 2)\n"
           "        self.conv2 = nn.Conv2d(6, 16, 5)\n        self.fc1 = nn.Linear(16 * 5 * 5, 120)\n"
           "        self.fc2 = nn.Linear(120, 84)\n        self.fc3 = nn.Linear(84, 10)\n"
           "    def forward(self, x):\n"
           "        x = self.pool(F.relu(self.conv1(x)))\n        x = self.pool(F.relu(self.conv2(x)))\n"
           "        x = torch.flatten(x, 1)\n        x = F.relu(self.fc1(x))\n        x = F.relu(self.fc2(x))\n"
           "        return self.fc3(x)\n"
           "net = Net().to(device)\nnet.load_state_dict(torch.load('cifar_net.pth'))\nnet.eval()\ncorrect = 0\n" +
           loop +
           "    images, labels = data[0].to(device), data[1].to(device)\n"
           "    outputs = net(images)\n"
           "    correct += (outputs.argmax(1) == labels).sum().item()\n";
  };
  for (const std::string loop : {"for data in testloader:\n", "for i, data in enumerate(testloader, 0):\n"}) {
    const FileResult small = analyze_text("cifar.py", program("4", loop), Config{}, EngineOptions{});
    const Finding* f = only(small, "LL101");
    ASSERT_NE(f, nullptr) << loop;
    EXPECT_TRUE(f->low_confidence) << loop;
    EXPECT_NE(f->message.find("per 3 x 32 x 32 sample, 229 KB for a batch of 4"), std::string::npos) << f->message;
    const FileResult large = analyze_text("cifar.py", program("4096", loop), Config{}, EngineOptions{});
    const Finding* g = only(large, "LL101");
    ASSERT_NE(g, nullptr) << loop;
    EXPECT_FALSE(g->low_confidence) << g->message;
  }
}

TEST(Impact, AHelperCalledOncePerTypedLineIsInteractive) {
  // A chatbot cell: `while True:` a typed question, greedily decoded by a same-file helper that
  // runs the model's methods, after `model.eval()`. One question's graph at a time, like the
  // helper's forward in its own interactive loop. The same helper over a loader keeps the error.
  auto program = [](const std::string& loop) {
    return "import torch\nfrom model import Seq2Seq\n"
           "device = torch.device('cuda')\n"
           "model = Seq2Seq().to(device)\nmodel.load_state_dict(torch.load('bot.pt'))\n"
           "def greedy_decode(model, src, max_len):\n"
           "    memory = model.encode(src)\n"
           "    ys = torch.ones(1, 1).long().to(device)\n"
           "    for i in range(max_len):\n"
           "        prob = model.generator(model.decode(memory, ys)[:, -1])\n"
           "        ys = torch.cat([ys, prob.argmax(1, keepdim=True)], dim=1)\n"
           "    return ys\n"
           "model.eval()\n" + loop;
  };
  const FileResult chat = analyze_text(
      "bot.py", program("while True:\n    q = input('> ')\n    print(greedy_decode(model, encode(q).to(device), 20))\n"),
      Config{}, EngineOptions{});
  const Finding* f = only(chat, "LL101");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->low_confidence) << f->message;
  EXPECT_NE(f->message.find("`input()`"), std::string::npos) << f->message;
  const FileResult data = analyze_text(
      "bot.py", program("for src, tgt in val_loader:\n    print(greedy_decode(model, src.to(device), 20))\n"),
      Config{}, EngineOptions{});
  const Finding* g = only(data, "LL101");
  ASSERT_NE(g, nullptr);
  EXPECT_FALSE(g->low_confidence) << g->message;
}

TEST(Impact, ASamplingStepWrittenAsOneStatementIsAChainToo) {
  // A sampler that writes its step in one statement (`x = (x - k * model(x, t)) / a`) or counts
  // its steps down in a `while` feeds each forward's result to the next as well.
  auto program = [](const std::string& loop) {
    return "import torch\nfrom nets import Denoiser\n"
           "model = Denoiser().cuda()\nopt = torch.optim.Adam(model.parameters())\n"
           "for step in range(1000):\n"
           "    x0 = torch.randn(256, 2).cuda()\n"
           "    loss = ((model(x0, torch.rand(256).cuda()) - x0) ** 2).mean()\n"
           "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n"
           "x = torch.randn(8192, 2).cuda()\n" + loop + "print(x.mean(0))\n";
  };
  for (const std::string loop :
       {"for t in reversed(range(100)):\n    x = (x - 0.01 * model(x, torch.full((8192,), t / 100).cuda())) / 0.99\n",
        "t = 99\nwhile t >= 0:\n    eps = model(x, torch.full((8192,), t / 100).cuda())\n    x -= 0.01 * eps\n    t -= 1\n"}) {
    const FileResult r = analyze_text("sample.py", program(loop), Config{}, EngineOptions{});
    const Finding* f = only(r, "LL101");
    ASSERT_NE(f, nullptr) << loop;
    EXPECT_NE(f->message.find("feeds what it returns back into it"), std::string::npos) << f->message;
  }
  // Detached each step, nothing is chained: silent.
  const FileResult cut = analyze_text(
      "sample.py", program("for t in reversed(range(100)):\n    x = (x - 0.01 * model(x, t).detach()) / 0.99\n"),
      Config{}, EngineOptions{});
  EXPECT_EQ(only(cut, "LL101"), nullptr);
}

TEST(Impact, AModelAFactoryMovesBeforeReturningItIsSized) {
  // `def build(): net = MLP(); net = net.to(device); return net` (or `if cuda: net =
  // net.cuda()`, or `return net, optimizer` unpacked by the caller): what the factory returns is
  // the small model it built, moved. The same factory returning a model of unknown size keeps
  // the error.
  auto program = [](const std::string& layers, const std::string& move, bool pair) {
    return "import torch\nimport torch.nn as nn\n"
           "device = torch.device('cuda')\n"
           "class MLP(nn.Module):\n"
           "    def __init__(self):\n"
           "        super().__init__()\n"
           "        self.layers = nn.Sequential(" + layers + ")\n"
           "    def forward(self, x):\n"
           "        return self.layers(x)\n"
           "def build_model():\n"
           "    net = MLP()\n" + move
           + (pair ? "    return net, torch.optim.SGD(net.parameters(), lr=0.1)\n" : "    return net\n") +
           "def test(model, loader):\n"
           "    correct = 0\n"
           "    for x, y in loader:\n"
           "        out = model(x.to(device))\n"
           "        correct += (out.argmax(1) == y.to(device)).sum().item()\n"
           "    return correct\n"
           "def main(train_loader, test_loader):\n"
           + (pair ? "    model, opt = build_model()\n"
                   : "    model = build_model()\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n") +
           "    for epoch in range(3):\n"
           "        for x, y in train_loader:\n"
           "            loss = nn.functional.cross_entropy(model(x.to(device)), y.to(device))\n"
           "            opt.zero_grad()\n"
           "            loss.backward()\n"
           "            opt.step()\n"
           "        print(test(model, test_loader))\n";
  };
  const std::string small = "nn.Flatten(), nn.Linear(784, 200), nn.ReLU(), nn.Linear(200, 10)";
  for (const auto& [move, pair] : std::vector<std::pair<std::string, bool>>{
           {"    net = net.to(device)\n", false},
           {"    if torch.cuda.is_available():\n        net = net.cuda()\n", false},
           {"    net = net.to(device)\n", true}}) {
    const FileResult sized = analyze_text("mnist.py", program(small, move, pair), Config{}, EngineOptions{});
    const Finding* f = only(sized, "LL101");
    ASSERT_NE(f, nullptr) << move;
    EXPECT_TRUE(f->low_confidence) << move;
    EXPECT_NE(f->message.find("fully-connected model"), std::string::npos) << f->message;
    const FileResult unknown = analyze_text("mnist.py", program("*make_layers(cfg)", move, pair), Config{}, EngineOptions{});
    const Finding* g = only(unknown, "LL101");
    ASSERT_NE(g, nullptr) << move;
    EXPECT_FALSE(g->low_confidence) << g->message;
  }
}
