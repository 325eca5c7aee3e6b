// Relevance before analysis (checks/relevance.hpp): which Python modules are PyTorch code,
// and which C++ units could hold a rule's pattern at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "checks/relevance.hpp"
#include "frontend/python/python_frontend.hpp"

namespace fs = std::filesystem;
using namespace ll;

namespace {

bool module_imports_torch(const std::string& src) {
  Module m;
  std::vector<Diagnostic> diags;
  EXPECT_TRUE(python::lower(src, "m.py", m, diags, python::ParseOptions{}));
  return imports_torch(m);
}

std::vector<std::string> modules_of(const std::string& src) {
  Module m;
  std::vector<Diagnostic> diags;
  EXPECT_TRUE(python::lower(src, "m.py", m, diags, python::ParseOptions{}));
  return imported_modules(m);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(RelevancePython, TorchFamilyImportsInEveryForm) {
  EXPECT_TRUE(module_imports_torch("import torch\n"));
  EXPECT_TRUE(module_imports_torch("import torch as T\n"));
  EXPECT_TRUE(module_imports_torch("import torch.nn.functional as F\n"));
  EXPECT_TRUE(module_imports_torch("from torch import nn\n"));
  EXPECT_TRUE(module_imports_torch("from torch.utils.data import *\n"));
  EXPECT_TRUE(module_imports_torch("import torchvision\n"));
  EXPECT_TRUE(module_imports_torch("from torchaudio import transforms\n"));
  EXPECT_TRUE(module_imports_torch("import pytorch_lightning as pl\n"));
  EXPECT_TRUE(module_imports_torch("import lightning as L\n"));
  EXPECT_TRUE(module_imports_torch("def f():\n    import torch\n    return torch.zeros(1)\n"));
}

TEST(RelevancePython, TorchReadAsAGlobalNothingBindsIsTorch) {
  // A notebook exported cell by cell, a script meant for `%run`: torch comes from the session.
  EXPECT_TRUE(module_imports_torch("for x, y in loader:\n    torch.cuda.empty_cache()\n"));
  EXPECT_TRUE(module_imports_torch("def f(m):\n    with torch.no_grad():\n        return m(1)\n"));
  // Not when a name binds it, or beside another framework's import.
  EXPECT_FALSE(module_imports_torch("import tensorflow as tf\nx = torch.zeros(1)\n"));
  EXPECT_FALSE(module_imports_torch("def f(torch_like):\n    return torch_like.zeros(1)\n"));
  EXPECT_FALSE(module_imports_torch("x = 'torch'\n"));
}

TEST(RelevancePython, OtherFrameworksAndPlainPythonAreNotTorch) {
  EXPECT_FALSE(module_imports_torch("import tensorflow as tf\n"));
  EXPECT_FALSE(module_imports_torch("from mxnet import autograd, gluon\n"));
  EXPECT_FALSE(module_imports_torch("import jax\nimport jax.numpy as jnp\n"));
  EXPECT_FALSE(module_imports_torch("import numpy as np\nimport statistics\n"));
  EXPECT_FALSE(module_imports_torch("from .torch_utils import helper\n"));  // a project module
  EXPECT_FALSE(is_torch_family(".torch"));
  EXPECT_FALSE(is_torch_family("tensorflow.keras"));
}

TEST(RelevancePython, ImportedModulesIncludeParentsAndStarImports) {
  const auto mods = modules_of("from pkg.common import helpers\nfrom .utils import *\nimport numpy as np\nimport torch\n");
  auto has = [&](const std::string& m) { return std::find(mods.begin(), mods.end(), m) != mods.end(); };
  EXPECT_TRUE(has("pkg.common.helpers"));  // helpers may be a submodule
  EXPECT_TRUE(has("pkg.common"));          // or a name defined in pkg.common
  EXPECT_TRUE(has(".utils"));              // a star import
  EXPECT_TRUE(has("numpy"));
  EXPECT_FALSE(has("torch"));              // torch is not a project module
}

TEST(RelevanceCpp, EveryBadCppFixtureReachesClang) {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(LEAKLINT_SOURCE_DIR) / "tests" / "fixtures")) {
    if (!e.is_regular_file() || e.path().extension() != ".cpp") continue;
    if (e.path().filename().string().rfind("bad_", 0) != 0) continue;
    ++n;
    EXPECT_TRUE(cpp_may_hold_a_pattern(slurp(e.path()))) << e.path();
  }
  EXPECT_GT(n, 5);
  EXPECT_TRUE(cpp_may_hold_a_pattern(slurp(fs::path(LEAKLINT_SOURCE_DIR) / "examples" / "demo_project" / "cpp" /
                                           "inference_server.cpp")));
}

TEST(RelevanceCpp, KernelsAndBindingsAreSkipped) {
  const char* kernel = R"src(#include <torch/extension.h>
#include <cuda_runtime.h>
__global__ void my_forward_kernel(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (; i < n; i += blockDim.x * gridDim.x) y[i] = x[i] > 0 ? x[i] : 0;
}
torch::Tensor my_forward_cuda(torch::Tensor x) {
  auto y = torch::empty_like(x);
  my_forward_kernel<<<64, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
  return y;
}
)src";
  const char* binding = R"src(#include <torch/extension.h>
torch::Tensor my_forward_cuda(torch::Tensor x);
torch::Tensor my_backward_cuda(torch::Tensor g, torch::Tensor x);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &my_forward_cuda, "forward (CUDA)");
  m.def("backward", &my_backward_cuda, "backward (CUDA)");
}
)src";
  EXPECT_FALSE(cpp_may_hold_a_pattern(kernel));
  EXPECT_FALSE(cpp_may_hold_a_pattern(binding));
  EXPECT_TRUE(cpp_may_hold_a_pattern("for (auto& b : *loader) { auto y = model->forward(b.data); }"));
  EXPECT_TRUE(cpp_may_hold_a_pattern("torch::NoGradGuard g;"));
  EXPECT_TRUE(cpp_may_hold_a_pattern("c10::cuda::CUDACachingAllocator::emptyCache();"));
  // A module called through operator() (torch::nn::Linear, a TORCH_MODULE holder).
  EXPECT_TRUE(cpp_may_hold_a_pattern("double f(torch::nn::Linear& m, torch::Tensor x) { return m(x).item<double>(); }"));
}

TEST(RelevanceCpp, GpuWordsAreReadInCodeWherePartsOfNamesStart) {
  // A skipped unit is GPU evidence for the project when its code names a GPU: `kCUDA`,
  // `cudaMalloc`, `hipMalloc`, `use_gpu`, `num_gpus`, `CUDAGuard`. Not a comment, and not the
  // letters inside another word (`chipstorch`, `timestamps`, `xlarge`, `shipping`).
  for (const char* yes : {"auto d = torch::kCUDA;", "cudaMalloc(&p, n);", "hipMalloc(&p, n);", "bool use_gpu = 1;",
                          "int num_gpus = 2;", "#include <c10/cuda/CUDAGuard.h>", "x.to(torch::kMPS);",
                          "// header\nint gpu = 0;"})
    EXPECT_TRUE(cpp_text_mentions_gpu(yes)) << yes;
  for (const char* no : {"// Downloaded from ChipsSpectre/chipstorch-yolov3\nint x;", "/* runs on the GPU */ int y;",
                         "long timestamps[4];", "auto xlarge = 1;", "void shipping();", "int chips = 3;"})
    EXPECT_FALSE(cpp_text_mentions_gpu(no)) << no;
}
