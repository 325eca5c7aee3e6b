#include "frontend/cpp/cpp_names.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace ll::cpp {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Drops a leading "::", template arguments and inline namespaces (std::__cxx11::, std::__1::).
std::string normalize(std::string_view cxx) {
  std::string out;
  int angle = 0;
  for (size_t i = 0; i < cxx.size(); ++i) {
    char c = cxx[i];
    if (c == '<') { ++angle; continue; }
    if (c == '>') { if (angle > 0) --angle; continue; }
    if (angle == 0 && c != ' ') out.push_back(c);
  }
  if (starts_with(out, "::")) out.erase(0, 2);
  for (const char* inl : {"__cxx11::", "__1::", "inline::"}) {
    size_t p;
    while ((p = out.find(inl)) != std::string::npos) out.erase(p, std::string_view(inl).size());
  }
  return out;
}

std::string dots(std::string_view cxx) {
  std::string out;
  for (size_t i = 0; i < cxx.size(); ++i) {
    if (cxx[i] == ':' && i + 1 < cxx.size() && cxx[i + 1] == ':') {
      out.push_back('.');
      ++i;
    } else {
      out.push_back(cxx[i]);
    }
  }
  return out;
}

std::string last_of(std::string_view cxx) {
  size_t p = cxx.rfind("::");
  return std::string(p == std::string_view::npos ? cxx : cxx.substr(p + 2));
}

}  // namespace

bool mentions_libtorch(std::string_view text, bool bare_tensor) {
  // Where a word starts: `pytorchcpp/tensor.h` names another library, `MyTensor` another type.
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::string_view w : {"torch", "at::", "c10", "ATen", "TORCH_", "Tensor"}) {
    if (w == "Tensor" && !bare_tensor) break;
    for (size_t at = text.find(w); at != std::string_view::npos; at = text.find(w, at + 1))
      if (at == 0 || !word(text[at - 1])) return true;
  }
  return false;
}

std::vector<std::string> split_qualified(std::string_view cxx) {
  std::vector<std::string> out;
  std::string n = normalize(cxx);
  size_t i = 0;
  while (i <= n.size()) {
    size_t p = n.find("::", i);
    out.push_back(n.substr(i, p == std::string::npos ? std::string::npos : p - i));
    if (p == std::string::npos) break;
    i = p + 2;
  }
  return out;
}

std::string join_qualified(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string model_qname(std::string_view raw) {
  std::string cxx = normalize(raw);
  static const std::unordered_map<std::string, std::string> exact = {
      {"c10::cuda::CUDACachingAllocator::emptyCache", "torch.cuda.empty_cache"},
      {"at::cuda::CUDACachingAllocator::emptyCache", "torch.cuda.empty_cache"},
      {"fork", "os.fork"},
      {"torch::data::make_data_loader", "torch.utils.data.DataLoader"},
      {"c10::GradMode::set_enabled", "torch.set_grad_enabled"},
      {"at::GradMode::set_enabled", "torch.set_grad_enabled"},
      {"torch::GradMode::set_enabled", "torch.set_grad_enabled"},
      {"torch::autograd::GradMode::set_enabled", "torch.set_grad_enabled"},
      {"c10::Device", "torch.device"},
      {"at::Device", "torch.device"},
      {"torch::Device", "torch.device"},
      {"torch::device", "torch.device"},
      {"at::device", "torch.device"},
      {"c10::TensorOptions", "torch.TensorOptions"},
      {"torch::jit::load", "torch.jit.load"},
      {"torch::load", "torch.load"},
      {"torch::save", "torch.save"},
      {"at::Tensor", "torch.Tensor"},
      {"at::TensorBase", "torch.Tensor"},
      {"torch::Tensor", "torch.Tensor"},
      {"torch::autograd::Variable", "torch.Tensor"},
      {"torch::autograd::backward", "torch.autograd.backward"},
      {"torch::autograd::grad", "torch.autograd.grad"},
  };
  auto it = exact.find(cxx);
  if (it != exact.end()) return it->second;
  for (auto [from, to] : {std::pair<const char*, const char*>{"c10::cuda::", "torch.cuda."},
                          {"at::cuda::", "torch.cuda."},
                          {"torch::cuda::", "torch.cuda."},
                          {"torch::nn::functional::", "torch.nn.functional."},
                          {"at::", "torch."},
                          {"torch::", "torch."}}) {
    if (starts_with(cxx, from)) return to + dots(std::string_view(cxx).substr(std::string_view(from).size()));
  }
  return dots(cxx);
}

GuardKind guard_kind(std::string_view raw) {
  std::string cxx = normalize(raw);
  std::string last = last_of(cxx);
  bool ns_ok = starts_with(cxx, "c10::") || starts_with(cxx, "at::") || starts_with(cxx, "torch::") ||
               cxx == last;  // unqualified spelling (syntactic fallback after `using namespace torch;`)
  if (!ns_ok) return GuardKind::None;
  if (last == "NoGradGuard") return GuardKind::NoGrad;
  if (last == "InferenceMode") return GuardKind::InferenceMode;
  if (last == "AutoGradMode") return GuardKind::AutoGradMode;
  return GuardKind::None;
}

ValueKind value_kind_by_name(std::string_view raw) {
  std::string cxx = normalize(raw);
  std::string last = last_of(cxx);
  if (cxx == "at::Tensor" || cxx == "at::TensorBase" || cxx == "torch::Tensor" || cxx == "torch::autograd::Variable")
    return ValueKind::Tensor;
  if (cxx == "c10::Device" || cxx == "at::Device" || cxx == "torch::Device") return ValueKind::Device;
  if (cxx == "torch::jit::Module" || cxx == "torch::jit::script::Module" || cxx == "torch::jit::Object" ||
      cxx == "torch::jit::script::Object")
    return ValueKind::Module;
  if (cxx == "torch::jit::Method" || cxx == "torch::jit::script::Method") return ValueKind::JitMethod;
  if (starts_with(cxx, "torch::nn::") && cxx.find("::", 11) == std::string::npos && !last.empty() &&
      std::isupper(static_cast<unsigned char>(last[0])) && !ends_with(last, "Options") &&
      !ends_with(last, "OptionsBase"))
    return ValueKind::Module;
  if (starts_with(cxx, "torch::optim::") && cxx.find("::", 14) == std::string::npos && !last.empty() &&
      std::isupper(static_cast<unsigned char>(last[0]))) {
    if (last.find("Options") != std::string::npos || last.find("Param") != std::string::npos) return ValueKind::None;
    if (last == "LRScheduler" || ends_with(last, "LR") || ends_with(last, "Scheduler")) return ValueKind::Scheduler;
    return ValueKind::Optimizer;
  }
  if (cxx == "std::shared_ptr" || cxx == "std::unique_ptr" || cxx == "c10::intrusive_ptr") return ValueKind::SmartPtr;
  if (cxx == "std::vector" || cxx == "std::deque" || cxx == "std::list" || cxx == "std::forward_list" ||
      cxx == "std::map" || cxx == "std::unordered_map" || cxx == "std::multimap" || cxx == "std::set" ||
      cxx == "std::unordered_set" || cxx == "c10::List" || cxx == "c10::Dict" || cxx == "torch::OrderedDict")
    return ValueKind::Container;
  return ValueKind::None;
}

std::string class_qname(std::string_view raw, ValueKind kind) {
  std::string cxx = normalize(raw);
  std::string last = last_of(cxx);
  switch (kind) {
    case ValueKind::Module:
    case ValueKind::JitMethod:
      if (starts_with(cxx, "torch::nn::")) return "torch.nn." + last;
      return "torch.nn.Module";
    case ValueKind::Optimizer: return "torch.optim." + last;
    case ValueKind::Scheduler: return "torch.optim.lr_scheduler." + last;
    case ValueKind::Tensor: return "torch.Tensor";
    case ValueKind::Device: return "torch.device";
    default: return model_qname(cxx);
  }
}

std::string container_method(std::string_view m) {
  if (m == "push_back" || m == "emplace_back") return "append";
  if (m == "push_front" || m == "emplace_front") return "appendleft";
  if (m == "emplace") return "insert";
  return std::string(m);
}

bool is_cuda_device_constant(std::string_view raw) {
  std::string cxx = normalize(raw);
  return cxx == "c10::kCUDA" || cxx == "at::kCUDA" || cxx == "torch::kCUDA" || cxx == "kCUDA" ||
         cxx == "c10::DeviceType::CUDA" || cxx == "at::DeviceType::CUDA" || cxx == "torch::DeviceType::CUDA" ||
         cxx == "DeviceType::CUDA";
}

}  // namespace ll::cpp
