// The size of a model the file builds from layers of literal sizes
// (`nn.Sequential(nn.Linear(429, 1024), ...)`, a same-file module whose __init__ assigns only
// such layers, a same-file builder returning one), for the impact policy: its parameter count
// (LL301: two small models side by side cost little) and, for a fully-connected model, the
// floats its forward keeps per sample (LL101: a graph that costs little).
#pragma once

#include <functional>

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

// A model of visible size with at most this many parameters (40 MB in float32) is small: two
// of them side by side cost tens of MB (LL301), and its graph has a few dozen autograd nodes
// per step (LL102).
inline constexpr long kSmallModel = 10'000'000;

// A parameter count as a message shows it: "4.7M", "120k", "96".
std::string param_count(long params);

// The size of the model value `v` builds in `func` (`Net(10).to(device)`, `nn.Sequential(...)`,
// `get_net()`, a class of another module of the project built with no arguments: parameters
// only).
ModelSize model_size(const Facts& f, Id func, Id v);

// Floats per sample that the forward of the model value `v` (built in `func`) keeps for an
// input of c x h x w: the output of every layer and function it runs. For `nn.Sequential(...)`
// of visible layers, or a same-file module class of visible size whose forward is a straight
// line of its layers, elementwise functions, pooling and reshapes. -1 otherwise.
long feature_map_graph(const Facts& f, Id func, Id v, long c, long h, long w);

// The size of same-file module class `k` built with its defaults (FileSummary::model_sizes).
ModelSize class_size(const Facts& f, Id k);

// A call of a model's method that may run another forward (`backbone.forward_features(x)`),
// not one of the housekeeping methods (`.eval()`, `.to(device)`, `.parameters()`, ...): its
// graph is not the size of the model's `forward`.
bool model_method_call(const Facts& f, const CallSite& x);

// The size of each model the name `x` (read in `func`, a forward's receiver) can hold: the
// values bound to it there (`net = net.to(device)` follows back to `net = Net()`), or, for a
// parameter the function never rebinds, what every same-file caller hands in. `visit` is
// called with each size; false when a value is unknown or `visit` refuses one.
bool each_model_size(const Facts& f, Id func, Id x, const std::function<bool(const ModelSize&)>& visit);

// The same walk, handing `visit` each value (and the function it is bound in) instead.
bool each_model_value(const Facts& f, Id func, Id x, const std::function<bool(Id, Id)>& visit);

// Does every model the receiver `x` can hold have no parameters at all (a greedy CTC decoder,
// a normalisation module)? Its forward records a graph only of inputs that carry one.
bool parameter_free_model(const Facts& f, Id func, Id x);

}  // namespace ll
