// The size of a model the file builds from layers of literal sizes
// (`nn.Sequential(nn.Linear(429, 1024), ...)`, a same-file module whose __init__ assigns only
// such layers, a same-file builder returning one), for the impact policy: its parameter count
// (LL301: two small models side by side cost little) and, for a fully-connected model, the
// floats its forward keeps per sample (LL101: a graph that costs little).
#pragma once

#include "checks/checks.hpp"

namespace ll {

struct ModelSize {
  long params = -1;  // -1: some part is not visible (a pretrained backbone, a size from data)
  // Floats per sample the forward's graph keeps, when every layer is fully connected (Linear,
  // a 1-d norm) or holds no parameters and keeps its input's shape (activations, dropout,
  // flatten): three per output feature of each such layer (its output, the activation after
  // it, a dropout mask). -1 for any other layer (a convolution's feature maps grow with the
  // input, an embedding's with the sequence).
  long width = -1;
  // The features its first fully-connected layer takes (a Linear's in_features), -1 when not
  // known: the width of the input each sample brings.
  long in_width = -1;
};

// The size of the model value `v` builds in `func` (`Net(10).to(device)`, `nn.Sequential(...)`,
// `get_net()`, a class of another module of the project built with no arguments: parameters
// only).
ModelSize model_size(const Facts& f, Id func, Id v);

// The size of same-file module class `k` built with its defaults (FileSummary::model_sizes).
ModelSize class_size(const Facts& f, Id k);

}  // namespace ll
