// The tree-sitter C++ lowering (the fallback for files Clang cannot analyse), without
// Clang: model shapes and the C++ checks' verdicts on snippets, each of which would be
// analysed this way in a real run (no LibTorch headers, or a file that no longer compiles).
//
// usage: leaklint_cpp_ts_lowering_test            (the cases below)
//        leaklint_cpp_ts_lowering_test --dump FILE (prints the lowered model)
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/cpp/cpp_adapt.hpp"
#include "frontend/cpp/model_builder.hpp"
#include "frontend/cpp/ts_lowering.hpp"
#include "rules/config.hpp"

namespace {

int failures = 0;

struct Lowered {
  ll::Module m;
  std::vector<ll::Diagnostic> diags;
  std::vector<ll::Finding> findings;
  std::string dump;
};

Lowered lower(const std::string& src) {
  Lowered l;
  ll::cpp::lower_tree_sitter(src, l.m, l.diags);
  l.m.path = "t.cpp";
  l.m.comments = ll::cpp::scan_comments(src);
  ll::Config cfg;
  l.findings = ll::cpp::run_cpp_checks(l.m, cfg, "t.cpp", src, /*low_confidence=*/true);
  l.dump = ll::cpp::dump_module(l.m);
  return l;
}

std::string rules(const Lowered& l) {
  std::string s;
  for (const auto& f : l.findings)
    if (!f.suppressed) s += (s.empty() ? "" : " ") + f.rule + "@" + std::to_string(f.range.line);
  return s;
}

void expect_rules(const char* name, const std::string& src, const std::string& want) {
  Lowered l = lower(src);
  std::string got = rules(l);
  if (got != want) {
    ++failures;
    std::cerr << "FAIL " << name << ": findings [" << got << "], expected [" << want << "]\n" << l.dump;
  }
}

void expect_dump(const char* name, const std::string& src, const std::vector<std::string>& needles) {
  Lowered l = lower(src);
  for (const auto& n : needles)
    if (l.dump.find(n) == std::string::npos) {
      ++failures;
      std::cerr << "FAIL " << name << ": the model lacks `" << n << "`:\n" << l.dump;
    }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--dump") {
    std::ifstream in(argv[2], std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    Lowered l = lower(ss.str());
    std::cout << l.dump;
    for (const auto& f : l.findings)
      std::cout << "finding " << f.rule << "@" << f.range.line << (f.fixes.empty() ? "" : " (fix)") << ": "
                << f.message << "\n";
    return 0;
  }

  // A weak finding of the impact policy (a CPU-only C++ program) keeps its low-confidence
  // flag through the C++ adapter on a compiled file, whose own results are not low-confidence.
  {
    const std::string src = R"(#include <torch/script.h>
int main() {
  torch::jit::script::Module model = torch::jit::load("m.pt");
  for (int i = 0; i < 3; ++i) model.forward({torch::ones({1})});
  return 0;
}
)";
    Lowered l = lower(src);
    ll::Config cfg;
    std::vector<ll::Finding> out = ll::cpp::run_cpp_checks(l.m, cfg, "t.cpp", src, /*low_confidence=*/false);
    bool seen = false;
    for (const auto& f : out)
      if (f.rule == "LL101") {
        seen = true;
        if (f.severity != ll::Severity::Note || !f.low_confidence) {
          ++failures;
          std::cerr << "FAIL weak C++ finding: severity " << ll::severity_name(f.severity) << ", low_confidence "
                    << f.low_confidence << ": " << f.message << "\n";
        }
      }
    if (!seen) {
      ++failures;
      std::cerr << "FAIL weak C++ finding: no LL101 in\n" << l.dump;
    }
  }

  // `float` accumulators in a file that does not compile (an undeclared name, a missing
  // semicolon): numbers, never tensors carrying history.
  expect_rules("float accumulators", R"(#include <torch/torch.h>
float train_epoch(Net& model, torch::optim::SGD& opt, Loader& loader) {
  float total_loss = 0;
  double correct = 0.0;
  auto seen = 0.0f;
  for (auto& batch : *loader) {
    opt.zero_grad();
    auto out = model->forward(batch.data);
    auto loss = torch::nll_loss(out, batch.target);
    loss.backward();
    opt.step();
    total_loss += loss.item<float>();
    correct += out.argmax(1).eq(batch.target).sum().item<double>()
    seen += batch.data.size(0);
    undeclared_helper(total_loss);
    total_loss += compute_loss(out, batch.target);
  }
  return total_loss / seen;
}
)",
               "");
  // A float accumulator assigned from a float named `loss`.
  expect_rules("float declared values", R"(void run(Net& net, Loader& loader, torch::optim::Adam& opt) {
  float sum = 0;
  for (auto& b : *loader) {
    opt.zero_grad();
    torch::Tensor l = torch::mse_loss(net->forward(b.data), b.target);
    l.backward();
    opt.step();
    float loss = l.item<float>();
    sum += loss;
    sum = sum + static_cast<float>(loss);
  }
}
)",
               "");
  // A tensor accumulator in the same shape is still flagged.
  expect_rules("tensor accumulator", R"(void run(Net& net, Loader& loader, torch::optim::Adam& opt) {
  torch::Tensor sum = torch::zeros({1});
  for (auto& b : *loader) {
    opt.zero_grad();
    torch::Tensor l = torch::mse_loss(net->forward(b.data), b.target);
    l.backward();
    opt.step();
    sum += l;
  }
}
)",
               "LL102@8");
  // A dlib program (no LibTorch): `classifier` is not a model.
  expect_rules("dlib classifier", R"(#include <dlib/svm.h>
using namespace dlib;
typedef matrix<double, 2, 1> sample_type;
void evaluate(const std::vector<sample_type>& test_samples, decision_function<radial_basis_kernel<sample_type>>& classifier) {
  for (const auto& s : test_samples) {
    double score = classifier(s);
    std::cout << score << std::endl;
  }
}
struct Detector {
  svm_c_trainer<radial_basis_kernel<sample_type>> trainer;
  decision_function<radial_basis_kernel<sample_type>> classifier;
  void evaluate(const std::vector<sample_type>& test_set) {
    for (const auto& x : test_set) std::cout << classifier(x);
  }
};
)",
               "");
  // A model class from a project header stays a possible model (its type is unknown here).
  expect_rules("project header model", R"(#include "model.h"
void evaluate(Net& net, const std::vector<torch::Tensor>& test_batches) {
  net->eval();
  for (const auto& x : test_batches) net->forward(x);
}
)",
               "LL101@4");
  // push_back(std::get<1>(ac->forward(x))): the forward's second output carries history.
  expect_rules("push_back std::get forward", R"(void rollout(ActorCritic& ac, Env& env, torch::optim::Adam& opt) {
  std::vector<torch::Tensor> values;
  for (int t = 0; t < 100; ++t) {
    torch::Tensor x = env.state();
    values.push_back(std::get<1>(ac->forward(x)));
  }
}
)",
               "LL102@5");
  // The same value through a structured binding is flagged as before.
  expect_rules("structured binding forward", R"(void rollout(ActorCritic& ac, Env& env) {
  std::vector<torch::Tensor> values;
  for (int t = 0; t < 100; ++t) {
    auto [act, val] = ac->forward(env.state());
    values.push_back(val);
  }
}
)",
               "LL102@5");
  // A vector of floats keeps numbers.
  expect_rules("vector of floats", R"(void rollout(ActorCritic& ac, Env& env) {
  std::vector<float> values;
  for (int t = 0; t < 100; ++t) {
    auto [act, val] = ac->forward(env.state());
    values.push_back(val.item<float>());
    values.push_back(val.sum().item<float>() * 2);
  }
}
)",
               "");
  // Rebinding order: `score` is a float in the first loop and a tensor in a later block;
  // only the tensor accumulation is flagged.
  expect_rules("rebinding order", R"(void evaluate(Net& net, std::vector<torch::Tensor>& xs) {
  {
    float score = 0;
    for (auto& x : xs) score += net->forward(x).sum().item<float>();
  }
  {
    torch::Tensor score = torch::zeros({1});
    for (auto& x : xs) score += net->forward(x).sum();
  }
}
)",
               "LL101@4 LL102@8 LL101@8");
  // Findings of this lowering never carry a fix.
  {
    Lowered l = lower(R"(void evaluate(torch::nn::Linear& model, const std::vector<torch::Tensor>& batches) {
  torch::Tensor total = torch::zeros({1});
  for (const auto& x : batches) {
    total += model(x).sum();
  }
}
)");
    bool any = false;
    for (const auto& f : l.findings) {
      any = true;
      if (!f.fixes.empty() || !f.low_confidence) {
        ++failures;
        std::cerr << "FAIL no fixes: " << f.rule << " carries a fix or is not low confidence\n";
      }
    }
    if (!any) {
      ++failures;
      std::cerr << "FAIL no fixes: expected findings\n" << l.dump;
    }
  }
  // Model shapes.
  expect_dump("shapes", R"(using namespace torch;
namespace F = torch::nn::functional;
struct NetImpl : nn::Module {
  NetImpl() : fc(register_module("fc", nn::Linear(4, 2))) {}
  Tensor forward(Tensor x) { return F::relu(fc->forward(x)); }
  nn::Linear fc{nullptr};
};
TORCH_MODULE(Net);
void eval(Net& model, std::vector<Tensor>& xs) {
  NoGradGuard g;
  for (auto& x : xs) model->forward(x);
  auto opt = std::make_shared<optim::SGD>(model->parameters(), 0.1);
  std::tie(h, c) = lstm->forward(x, {h, c});
  try { f(); } catch (const std::exception& e) { throw; }
  auto fn = [&](int k) { return model(k); };
}
)",
              {"class NetImpl(Module{torch.nn.Module})", "self.fc = Linear{torch.nn.Linear}(register_module",
               "relu{torch.nn.functional.relu}(self.fc.forward(x))", "class Net(NetImpl)", "model : Net()",
               "with NoGradGuard{torch.no_grad}() as g:", "    for x in xs:", "      model.forward(x)",
               "opt = SGD{torch.optim.SGD}(model.parameters(), 0.1)", "] = lstm{torch.lstm}.forward(",
               "except exception{std.exception} as e:", "def fn(k) [in eval]"});
  if (failures) {
    std::cerr << failures << " failure(s)\n";
    return 1;
  }
  std::cout << "ts_lowering: all cases passed\n";
  return 0;
}
