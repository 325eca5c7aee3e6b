// Relevance before analysis: a Python module is analysed as PyTorch code only if it imports
// torch, directly (`import torch`, `from torch import nn`, `import torch.nn as tnn`, a
// torch-family package such as torchvision or lightning) or through a module of the same
// project that does (`from .common import *`, `from utils import nn_helpers`, `import
// pkg.models`). Other modules (MXNet, TensorFlow, JAX, plain Python) stay silent: no
// rule's mechanism exists there.
//
// C/C++/CUDA: a translation unit goes to Clang only if its own text could hold a rule's
// pattern (cpp_may_hold_a_pattern): kernels and Python bindings are skipped in microseconds.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rules/model.hpp"

namespace ll {

// `torch`, `torch.nn.functional`, `torchvision.models`, `pytorch_lightning`, ...
bool is_torch_family(std::string_view qualified);

// Whether the module itself imports a torch-family package.
bool imports_torch(const Module& m);
// Python: calls a method only torch's tensors and modules have (`.detach()`, `.backward()`,
// `.cuda()`, `.requires_grad_()`, `.zero_grad()`, `.load_state_dict()`, `.named_parameters()`),
// in a file that imports no other tensor framework.
bool calls_tensor_api(const Module& m);

// Whether it imports another deep-learning framework itself (TensorFlow, Keras, JAX, MXNet,
// Caffe2, Paddle, ...). Such a module that reaches torch only through a project module
// (a Caffe2 model fed by the project's PyTorch data loader) runs the other framework's
// models: it is not analysed as PyTorch code.
bool imports_other_framework(const Module& m);
// A qualified name of another framework's API (`tensorflow.keras.layers.Conv2D`, `jax.numpy`).
bool in_other_framework(std::string_view qualified);

// The project modules the module may import from, as written (dotted, possibly relative
// with leading dots): for `from a.b import c` both "a.b" and "a.b.c" (c may be a module).
std::vector<std::string> imported_modules(const Module& m);

// A cheap token test on a C++ main file: does it call or name anything a C++ rule starts
// from (a forward or backward call, an optimizer step or reset, train()/eval(), a grad
// guard, a data loader, emptyCache, fork, a torch::nn module or optimizer, a TorchScript
// module)? False means no rule can fire.
bool cpp_may_hold_a_pattern(std::string_view text);

// For a unit that cpp_may_hold_a_pattern() skips: could its text place a tensor on a GPU
// (it names CUDA, a GPU, HIP, MPS or XLA, in any case)? The project-level impact policy
// counts a skipped unit as GPU evidence when it does: it is never read closely.
bool cpp_text_mentions_gpu(std::string_view text);

}  // namespace ll
