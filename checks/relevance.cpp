#include "checks/relevance.hpp"

#include <cctype>
#include <algorithm>

namespace ll {

namespace {

std::string_view root_of(std::string_view q) {
  while (!q.empty() && q.front() == '.') q.remove_prefix(1);  // relative: not torch itself
  return q.substr(0, q.find('.'));
}

}  // namespace

bool is_torch_family(std::string_view qualified) {
  if (!qualified.empty() && qualified.front() == '.') return false;  // a project module
  const std::string_view root = root_of(qualified);
  // torch, torchvision, torchaudio, torchtext, torchdata, torchmetrics, ...
  if (root.rfind("torch", 0) == 0) return true;
  static constexpr std::string_view kFamily[] = {"pytorch_lightning", "lightning", "lightning_fabric"};
  return std::find(std::begin(kFamily), std::end(kFamily), root) != std::end(kFamily);
}

bool in_other_framework(std::string_view q) {
  static constexpr std::string_view kOthers[] = {"tensorflow", "keras", "jax", "flax", "mxnet", "caffe2",
                                                 "paddle", "mindspore", "oneflow", "chainer", "theano", "tf_keras"};
  if (q.empty() || q.front() == '.') return false;
  const std::string_view root = root_of(q);
  return std::find(std::begin(kOthers), std::end(kOthers), root) != std::end(kOthers);
}

bool imports_other_framework(const Module& m) {
  auto other = [](std::string_view q) { return in_other_framework(q); };
  for (const auto& [local, qualified] : m.aliases)
    if (other(qualified)) return true;
  for (const auto& mod : m.star_imports)
    if (other(mod)) return true;
  return false;
}

bool imports_torch(const Module& m) {
  for (const auto& [local, qualified] : m.aliases)
    if (is_torch_family(qualified)) return true;
  for (const auto& mod : m.star_imports)
    if (is_torch_family(mod)) return true;
  // Code written for a namespace that already holds torch (a notebook exported cell by cell,
  // a script run with `%run` or exec): `torch` read as a global that nothing in the module
  // binds, which the frontend resolves to torch itself.
  if (m.lang != Lang::Python || m.aliases.count("torch") || imports_other_framework(m)) return false;
  for (const Expr& x : m.exprs)
    if (x.kind == ExprKind::Name && x.qname == "torch") return true;
  return false;
}

bool calls_tensor_api(const Module& m) {
  if (m.lang != Lang::Python || imports_other_framework(m)) return false;
  static constexpr std::string_view kTorchOnly[] = {"detach", "backward", "cuda", "requires_grad_", "zero_grad",
                                                    "load_state_dict", "named_parameters"};
  for (const Expr& x : m.exprs) {
    if (x.kind != ExprKind::Call || x.kids.empty()) continue;
    const Expr& callee = m.exprs[x.kids[0]];
    if (callee.kind == ExprKind::Attribute &&
        std::find(std::begin(kTorchOnly), std::end(kTorchOnly), callee.text) != std::end(kTorchOnly))
      return true;
  }
  return false;
}

std::vector<std::string> imported_modules(const Module& m) {
  std::vector<std::string> out;
  for (const auto& [local, qualified] : m.aliases) {
    if (is_torch_family(qualified)) continue;
    out.push_back(qualified);  // the module itself, or module.name (name may be a submodule)
    const auto dot = qualified.rfind('.');
    if (dot != std::string::npos) out.push_back(qualified.substr(0, dot));  // from module import name
  }
  for (const auto& mod : m.star_imports)
    if (!is_torch_family(mod)) out.push_back(mod);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool cpp_may_hold_a_pattern(std::string_view text) {
  // Calls through an object (`.forward(`, `->step(`), so that a kernel named my_forward or a
  // binding m.def("forward", ...) does not count; types and free functions by name.
  static constexpr std::string_view kTokens[] = {
      ".forward(", "->forward(", ".backward(", "->backward(", "backward();",
      ".step(", "->step(", "zero_grad(", ".eval()", "->eval()", ".train(", "->train(",
      "NoGradGuard", "InferenceMode", "AutoGradMode", "GradMode",
      "DataLoader", "data_loader", "emptyCache", "empty_cache", "fork(",
      "jit::load", "torch::load", "register_hook",
      // A scripted or native module or an optimizer in hand: its forward may run as
      // method.run(stack) or model(x) (torch::nn::Linear, a TORCH_MODULE holder).
      "get_method(", "run_method(", "jit::", "nn::", "TORCH_MODULE", "optim::"};
  for (const std::string_view t : kTokens)
    if (text.find(t) != std::string_view::npos) return true;
  return false;
}

bool cpp_text_mentions_gpu(std::string_view text) {
  static constexpr std::string_view kTokens[] = {"cuda", "gpu", "hip", "mps", "xla"};
  auto alpha = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  auto lower = [](char c) { return std::islower(static_cast<unsigned char>(c)) != 0; };
  auto upper = [](char c) { return std::isupper(static_cast<unsigned char>(c)) != 0; };
  // Code only (comments skipped: `// from ChipsSpectre/chipstorch` names no GPU), and a token
  // only where a word or an identifier's part starts (`kCUDA`, `cudaMalloc`, `use_gpu`,
  // `hipMalloc`, `gpus`; not `chips`, `timestamps`, `xlarge`).
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      i = text.find('\n', i);
      if (i == std::string_view::npos) break;
      continue;
    }
    if (c == '/' && i + 1 < text.size() && text[i + 1] == '*') {
      i = text.find("*/", i + 2);
      if (i == std::string_view::npos) break;
      i += 2;
      continue;
    }
    const bool starts_part = alpha(c) && (i == 0 || !alpha(text[i - 1]) || (upper(c) && lower(text[i - 1])));
    if (starts_part)
      for (const std::string_view t : kTokens) {
        if (i + t.size() > text.size()) continue;
        bool match = true;
        for (size_t k = 0; k < t.size() && match; ++k)
          match = std::tolower(static_cast<unsigned char>(text[i + k])) == t[k];
        if (!match) continue;
        // The part ends there, or goes on as a plural or a new capitalised part.
        const size_t e = i + t.size();
        if (e == text.size() || !alpha(text[e]) || text[e] == 's' || upper(text[e])) return true;
      }
    ++i;
  }
  return false;
}

}  // namespace ll
