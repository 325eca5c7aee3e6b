// What the C++ frontend knows about LibTorch names, in one place: how a C++ qualified
// name is spelled in the shared model (Python spellings, so the checks' tables hold one
// spelling), which classes are grad-mode guards, modules, optimizers, schedulers.
// Both lowerings (Clang AST and the syntactic fallback) read these tables.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ll::cpp {

// A C++ qualified name without a leading `::` and without template arguments,
// e.g. "c10::cuda::CUDACachingAllocator::emptyCache".
// Returns the model's qualified name: "torch.cuda.empty_cache", "torch.jit.load",
// "torch.utils.data.DataLoader", "os.fork", "torch.Tensor", "std.vector", ...
std::string model_qname(std::string_view cxx);

enum class GuardKind { None, NoGrad, InferenceMode, AutoGradMode };
// A class that switches grad mode for its lifetime (`c10::NoGradGuard`, `torch::NoGradGuard`,
// `c10::InferenceMode`, `torch::AutoGradMode`, ...).
GuardKind guard_kind(std::string_view cxx);

// What a value of a class type is, for the checks: only the kinds that change a verdict.
enum class ValueKind {
  None,
  Module,        // torch::nn::Module (subclass), a ModuleHolder, torch::jit::Module, jit::Method
  Optimizer,     // torch::optim::Optimizer subclass
  Scheduler,     // torch::optim::LRScheduler subclass, ReduceLROnPlateauScheduler
  Tensor,        // at::Tensor
  Device,        // c10::Device
  SmartPtr,      // std::shared_ptr / unique_ptr (released by .reset())
  Container,     // std::vector / deque / list / map ... (push_back == append)
  JitMethod,     // torch::jit::Method (method.run(stack) is a forward)
};

// Classification of a class by its qualified name alone (library classes; the AST
// lowering also walks base classes, the syntactic one also knows this file's classes).
ValueKind value_kind_by_name(std::string_view cxx);

// The model spelling of a class whose values the checks should treat as `kind`:
// "torch.nn.Linear", "torch.optim.SGD", "torch.optim.lr_scheduler.StepLR", ...
// `cxx` is the class's own qualified name.
std::string class_qname(std::string_view cxx, ValueKind kind);

// Container methods that keep their argument, mapped to the model's Python spelling:
// push_back/emplace_back -> append, push_front/emplace_front -> appendleft, insert/emplace -> insert.
std::string container_method(std::string_view method);

// `torch::kCUDA`, `at::kCUDA`, `c10::DeviceType::CUDA`, `torch::DeviceType::CUDA`: a CUDA device
// constant (lowered as the string literal "cuda" so device checks read one spelling).
bool is_cuda_device_constant(std::string_view cxx);

// Does a file's text spell LibTorch anywhere (`torch`, `at::`, `c10`, `ATen`, `TORCH_`, and
// with `bare_tensor` a `Tensor` of any namespace), each where a word starts? A file that never
// does, whose own headers were not found, is another framework's code as far as anything shows
// (a project's own `pytorchcpp/nn.h`, whose `Tensor` and `Variable` are its own).
bool mentions_libtorch(std::string_view text, bool bare_tensor);

// Splits "a::b::c" into {"a", "b", "c"} (ignores a leading "::").
std::vector<std::string> split_qualified(std::string_view cxx);
std::string join_qualified(const std::vector<std::string>& parts, std::string_view sep);

}  // namespace ll::cpp
