#include "checks/model_size.hpp"
#include "checks/flow.hpp"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "checks/common.hpp"
#include "checks/project.hpp"

namespace ll {
namespace {


// The integer values of a constructor's parameters while its __init__ runs: the call's
// arguments where visible, the parameters' literal defaults otherwise (`num_classes=10`).
using IntEnv = std::unordered_map<std::string, long>;

// A non-negative integer visible at `x`: a literal, a name bound once to one, a parameter of
// the constructor being sized (`env`), or integer arithmetic of those (`3 * 32 * 32`,
// `hidden // 2`).
long visible_int(const Facts& f, Id func, Id x, const IntEnv* env, int depth = 0) {
  if (x == kNone || depth > 8) return -1;
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::BinOp && e.kids.size() == 2) {
    return int_arithmetic(e.text, visible_int(f, func, e.kids[0], env, depth + 1),
                          visible_int(f, func, e.kids[1], env, depth + 1));
  }
  if (env && e.kind == ExprKind::Name && func != kNone && f.is_param(func, e.text)) {
    auto it = env->find(e.text);
    return it == env->end() || !f.bindings(func, e.text).empty() ? -1 : it->second;
  }
  // `int(hidden / 2)`: a true division cast back to an integer.
  if (e.kind == ExprKind::Call && e.kids.size() == 2 && python_builtin_call(f, x) && f.e(e.kids[0]).text == "int"sv) {
    const Expr& d = f.e(e.kids[1]);
    if (d.kind == ExprKind::BinOp && d.text == "/"sv && d.kids.size() == 2)
      return int_arithmetic("//", visible_int(f, func, d.kids[0], env, depth + 1),
                            visible_int(f, func, d.kids[1], env, depth + 1));
    return visible_int(f, func, e.kids[1], env, depth + 1);
  }
  const Expr* lit = f.literal_of(x, func);
  if (!lit && func != kNone) lit = f.literal_of(x, kNone);
  if (!lit && e.kind == ExprKind::Name) {
    // A name bound once to such arithmetic (`h2 = int(h1 / 2)`), here or at the top level.
    std::vector<Id> vs = f.bindings(func, e.text);
    if (vs.empty() && func != kNone && !f.is_param(func, e.text)) vs = f.bindings(kNone, e.text);
    if (vs.size() == 1 && vs[0] != x && (f.e(vs[0]).kind == ExprKind::BinOp || f.e(vs[0]).kind == ExprKind::Call))
      return visible_int(f, func == kNone || !f.bindings(func, e.text).empty() ? func : kNone, vs[0], env, depth + 1);
    return -1;
  }
  if (!lit || lit->lit != LitKind::Int) return -1;
  return int_literal_text(lit->text);
}

// A size visible at `x`, or a square one (`(3, 3)`, a kernel or window).
long square_int(const Facts& f, Id func, Id x, const IntEnv* env) {
  if (x != kNone && f.e(x).kind == ExprKind::Sequence && f.e(x).kids.size() == 2) {
    const long p = visible_int(f, func, f.e(x).kids[0], env);
    return p == visible_int(f, func, f.e(x).kids[1], env) ? p : -1;
  }
  return visible_int(f, func, x, env);
}

constexpr long kUnknown = -1;

// Sizes add up; an unknown part makes the whole unknown.
ModelSize operator+(ModelSize a, ModelSize b) {
  // The input is the first part's, or the next one's after parts that only pass it on.
  const long in = a.in_width >= 0 ? a.in_width : a.params == 0 && a.width == 0 ? b.in_width : kUnknown;
  return {a.params < 0 || b.params < 0 ? kUnknown : a.params + b.params,
          a.width < 0 || b.width < 0 ? kUnknown : a.width + b.width, in};
}

ModelSize size_of(const Facts& f, Id func, Id v, int depth, const IntEnv* env = nullptr);

// Floats per sample kept for each output feature of a fully-connected layer: its output, the
// activation after it, a dropout mask.
constexpr long kKeptPerFeature = 3;

// The size of one layer construction; params kUnknown if not a layer of visible size.
ModelSize layer_size(const Facts& f, Id func, Id v, int depth, const IntEnv* env) {
  if (depth > 12) return {};
  const std::string& q = f.callee_qual(v);
  if (q.rfind("torch.nn.", 0) != 0) return size_of(f, func, v, depth + 1, env);
  const std::string_view name = f.last_component(q);
  // Layers without parameters that keep their input's shape (counted with the layer before).
  static constexpr std::string_view kElementwise[] = {
      "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Softmax",
      "LogSoftmax", "Dropout", "Flatten", "Identity", "Softplus", "Hardswish", "Hardtanh", "SELU", "CELU", "RReLU",
      "LogSigmoid", "Hardsigmoid", "Softsign", "Tanhshrink", "Softmin", "AlphaDropout"};
  for (std::string_view k : kElementwise)
    if (name == k) return {0, 0, kUnknown};
  // Layers without parameters of feature maps.
  static constexpr std::string_view kMaps[] = {
      "Dropout1d", "Dropout2d", "Dropout3d", "Unflatten", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d",
      "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d", "Upsample"};
  for (std::string_view k : kMaps)
    if (name == k) return {0, kUnknown};
  if (name == "Sequential"sv) {
    ModelSize total{0, 0, kUnknown};
    const Expr& call = f.e(v);
    if (call.kids.size() < 2) return {};  // `nn.Sequential()` filled by add_module later
    for (size_t k = 1; k < call.kids.size(); ++k) {
      Id a = call.kids[k];
      // A layer bound to a name once (`linear1 = nn.Linear(784, 256)`, then
      // `nn.Sequential(linear1, relu, linear2)`; `self.fc1` of the constructor): one used
      // twice counts twice (an upper bound).
      // (Not a parameter, which holds what the caller hands in: `model = nn.Sequential(model,
      // nn.Softmax(1))` wraps a model of unknown size; nor the call being sized.)
      if ((f.e(a).kind == ExprKind::Name || f.e(a).kind == ExprKind::Attribute) &&
          !(func != kNone && f.e(a).kind == ExprKind::Name && f.is_param(func, f.e(a).text))) {
        const std::string& d = f.dotted(a);
        // (The bindings that reach the read: `linear3 = nn.Linear(h, 1)` written twice, the
        // second replacing the first.)
        std::vector<Id> vals = d.empty() ? std::vector<Id>{} : f.bindings_at(func, d, a);
        if (vals.empty() && func != kNone && !d.empty()) vals = f.bindings(kNone, d);
        if (vals.size() == 1 && vals[0] != v && f.e(vals[0]).kind == ExprKind::Call &&
            f.callee_qual(vals[0]).rfind("torch.nn.", 0) == 0)
          a = vals[0];
      }
      if (f.e(a).kind != ExprKind::Call) return {};  // `*layers`, a name bound otherwise
      total = total + layer_size(f, func, a, depth + 1, env);
      if (total.params < 0 && total.width < 0) return {};
    }
    return total;
  }
  auto n = [&](size_t pos, std::string_view kw) { return visible_int(f, func, f.arg(v, pos, kw), env); };
  auto square = [&](size_t pos, std::string_view kw) { return square_int(f, func, f.arg(v, pos, kw), env); };
  if (name == "Linear"sv || name == "Bilinear"sv) {
    long a = n(0, "in_features"), b = n(1, name == "Linear"sv ? "out_features" : "in2_features");
    if (name == "Bilinear"sv) {
      const long o = n(2, "out_features");
      return a < 0 || b < 0 || o < 0 ? ModelSize{} : ModelSize{a * b * o + o, kKeptPerFeature * o, a + b};
    }
    // (Its input features from data, `nn.Linear(n_features, 64)`: the parameters are not
    // visible, what its forward keeps per sample is.)
    if (a < 0 && b >= 0) return {kUnknown, kKeptPerFeature * b, kUnknown};
    return a < 0 || b < 0 ? ModelSize{} : ModelSize{a * b + b, kKeptPerFeature * b, a};
  }
  if (name == "Embedding"sv) {
    long a = n(0, "num_embeddings"), b = n(1, "embedding_dim");
    return a < 0 || b < 0 ? ModelSize{} : ModelSize{a * b, kUnknown};
  }
  if (name == "Conv1d"sv || name == "Conv2d"sv || name == "Conv3d"sv || name == "ConvTranspose2d"sv) {
    long a = n(0, "in_channels"), b = n(1, "out_channels"), k = square(2, "kernel_size");
    if (a < 0 || b < 0 || k < 0) return {};
    long area = name == "Conv1d"sv ? k : name == "Conv3d"sv ? k * k * k : k * k;
    return {a * b * area + b, kUnknown};
  }
  if (name.rfind("BatchNorm", 0) == 0 || name == "LayerNorm"sv || name == "GroupNorm"sv || name.rfind("InstanceNorm", 0) == 0) {
    long c = name == "GroupNorm"sv ? n(1, "num_channels") : n(0, name == "LayerNorm"sv ? "normalized_shape" : "num_features");
    if (c < 0) return {};
    // A 1-d norm normalizes features; the others feature maps.
    const bool features = name == "BatchNorm1d"sv || name == "LayerNorm"sv;
    return {2 * c, features ? kKeptPerFeature * c : kUnknown, features ? c : kUnknown};
  }
  return {};
}

// A parameter of `__init__` kept as a setting, not a module (`self.activation = activation`,
// `self.hidden = hidden`): its name says so.
bool settings_parameter(const Facts& f, Id init, const std::string& name) {
  if (!f.is_param(init, name)) return false;
  const auto toks = Facts::name_tokens(name);
  if (toks.empty()) return false;
  for (const auto& t : toks)
    if (in(t, {"activation"sv, "act"sv, "nonlinearity"sv, "nonlin"sv, "dim"sv, "dims"sv, "size"sv, "hidden"sv,
               "num"sv, "n"sv, "dropout"sv, "rate"sv, "eps"sv, "classes"sv, "channels"sv, "features"sv, "depth"sv,
               "width"sv, "heads"sv, "bias"sv, "momentum"sv, "scale"sv, "temperature"sv, "seed"sv}))
      return true;
  return false;
}

// The size of a same-file module class built with the parameter values `env`: every
// statement of __init__ assigns a layer of visible size, a literal, a setting or data.
ModelSize class_size(const Facts& f, Id k, const IntEnv& env, int depth) {
  if (!f.is_module_class(k)) return {};
  // Layers a base class builds in its own __init__ (`class Classifier(Backbone)`) are not
  // visible here: only a direct nn.Module subclass is sized.
  for (Id b : f.m.classes[k].bases) {
    const std::string q = f.qual(b).empty() ? f.dotted(b) : f.qual(b);
    if (!in(q, {"torch.nn.Module", "torch.nn.modules.module.Module", "nn.Module", "Module"})) return {};
  }
  Id init = f.method_in(k, "__init__");
  if (init == kNone || f.class_of(init) != k) return {};
  ModelSize total{0, 0, kUnknown};
  for (Id sid : f.m.funcs[init].body) {
    const Stmt& s = f.m.s(sid);
    if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call &&
        f.callee_attr(s.value) == "__init__"sv)
      continue;  // super().__init__()
    if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Literal) continue;
    if (s.kind == StmtKind::Pass || (s.kind == StmtKind::Return && s.value == kNone)) continue;  // `return` at the end
    // Initialising weights changes no size (`nn.init.xavier_uniform_(self.fc.weight)`).
    if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call &&
        f.callee_qual(s.value).rfind("torch.nn.init.", 0) == 0)
      continue;
    if (s.kind != StmtKind::Assign || s.value == kNone || s.targets.size() != 1) return {};
    if (f.e(s.value).kind == ExprKind::Literal) continue;  // `self.n = 3`
    if (f.e(s.value).kind == ExprKind::Name && settings_parameter(f, init, f.e(s.value).text)) continue;
    if (f.e(s.value).kind == ExprKind::Name && f.is_param(init, f.e(s.value).text) &&
        f.data_attribute(k, f.dotted(s.targets[0])))
      continue;
    if (f.e(s.value).kind != ExprKind::Call) return {};
    total = total + layer_size(f, init, s.value, depth + 1, &env);
    if (total.params < 0 && total.width < 0) return {};
  }
  return total;
}

// The values of __init__'s parameters when class `k` is built by `call` (kNone: with no
// arguments): each argument visible in `func` (under the caller's `env`), else the literal
// default. An unpacked argument (`*args`, `**cfg`) may hold any of them: nothing is known.
IntEnv constructor_env(const Facts& f, Id k, Id call, Id func, const IntEnv* env) {
  IntEnv out;
  Id init = f.method_in(k, "__init__");
  if (init == kNone) return out;
  const Function& fn = f.m.funcs[init];
  if (call != kNone)
    for (Id a : f.e(call).kids)
      if (f.e(a).kind == ExprKind::Starred) return out;
  for (size_t i = 1; i < fn.params.size(); ++i) {
    const std::string& p = fn.params[i];
    Id a = call == kNone ? kNone : f.arg(call, i - 1, p);
    long v = -1;
    if (a != kNone) v = visible_int(f, func, a, env);
    else if (i < fn.param_defaults.size() && !fn.param_defaults[i].empty()) v = int_literal_text(fn.param_defaults[i]);
    if (v >= 0) out[p] = v;
  }
  return out;
}

// The size of the model a value builds (see above); `env`: the values of the parameters of the
// constructor whose __init__ holds the value, when sizing one.
ModelSize size_of(const Facts& f, Id func, Id v, int depth, const IntEnv* env) {
  if (v == kNone || depth > 6 || f.e(v).kind != ExprKind::Call) return {};
  while (f.e(v).kind == ExprKind::Call && in(f.callee_attr(v), {"to", "cuda", "eval", "train", "float", "double"}) &&
         f.callee_receiver(v) != kNone)
    v = f.callee_receiver(v);
  if (f.e(v).kind != ExprKind::Call) return {};
  if (f.callee_qual(v).rfind("torch.nn.", 0) == 0) return layer_size(f, func, v, depth, env);
  if (Id k = f.constructed_class(v); k != kNone) return class_size(f, k, constructor_env(f, k, v, func, env), depth);
  // A module class of another file of the project, built with no arguments, whose size that
  // file's summary gives (FileSummary::model_sizes).
  if (f.project && f.e(v).kids.size() == 1) {
    auto it = f.project->imported_model_sizes.find(f.e(f.e(v).kids[0]).qname);
    if (it != f.project->imported_model_sizes.end()) return {it->second, kUnknown};
  }
  // A same-file builder (`def get_net(): return nn.Sequential(...)`).
  if (Id g = f.same_file_target(v, func); g != kNone) {
    ModelSize most;
    bool first = true;
    auto add = [&](Id fn, Id x) {
      const ModelSize p = size_of(f, fn, x, depth + 1);
      if (p.params < 0) return false;
      most = first ? p
                   : ModelSize{std::max(most.params, p.params),
                               most.width < 0 || p.width < 0 ? kUnknown : std::max(most.width, p.width),
                               most.in_width == p.in_width ? p.in_width : kUnknown};
      first = false;
      return true;
    };
    for (Id r : f.returned_values(g)) {
      // `return model, optimizer`: the one model of the tuple is what a caller runs.
      if (f.e(r).kind == ExprKind::Sequence && f.e(r).text == "tuple"sv) {
        Id only = kNone;
        for (Id k : f.e(r).kids)
          if (f.is_model_value(g, k)) only = only == kNone ? k : r;
        if (only == kNone || only == r) return {};
        r = only;
      }
      if (f.e(r).kind != ExprKind::Name) {
        if (!add(g, r)) return {};
        continue;
      }
      // Grown after it was built (`model.add_module(...)`, `layers.append(...)`).
      for (const CallSite& c : f.calls)
        if (c.func == g && f.dotted(f.callee_receiver(c.call)) == f.e(r).text &&
            in(f.callee_attr(c.call), {"add_module", "append", "extend", "insert", "register_module"}))
          return {};
      // What reaches the return, through `net = net.to(device)` and the like.
      if (!each_model_value(f, g, r, add)) return {};
    }
    return most;
  }
  return {};
}


// Sizes beyond these are not followed (no product of them overflows).
constexpr long kMaxSide = 1L << 16, kMaxChannels = 1L << 20;

// The shape of one sample flowing through a forward: feature maps (c x h x w), or `flat`
// features after a reshape or a fully-connected layer.
struct MapShape {
  long c = 0, h = 0, w = 0, n = 0;
  bool flat = false;
  long size() const { return flat ? n : c * h * w; }
};

// Slides a window of `k` (stride, padding) over the feature maps of `s`: a convolution's or a
// pooling's output size. False when it does not fit or a size is out of range.
bool slide(MapShape& s, long k, long stride, long pad) {
  if (k <= 0 || stride <= 0 || pad < 0 || s.flat || k > kMaxSide || pad > kMaxSide) return false;
  s.h = (s.h + 2 * pad - k) / stride + 1;
  s.w = (s.w + 2 * pad - k) / stride + 1;
  return s.h > 0 && s.w > 0;
}

// Applies one layer construction `v` (built in `func` under `env`) to `s`, adding the floats its
// output keeps per sample to `kept`. False when the layer or its sizes are not visible.
bool apply_layer(const Facts& f, Id func, Id v, const IntEnv* env, MapShape& s, long& kept, int depth = 0) {
  if (depth > 8 || v == kNone || f.e(v).kind != ExprKind::Call) return false;
  const std::string& q = f.callee_qual(v);
  if (q.rfind("torch.nn.", 0) != 0) return false;
  const std::string_view name = f.last_component(q);
  auto n = [&](size_t pos, std::string_view kw, long dflt) {
    const Id a = f.arg(v, pos, kw);
    return a == kNone ? dflt : square_int(f, func, a, env);
  };
  if (name == "Sequential"sv) {
    const Expr& call = f.e(v);
    if (call.kids.size() < 2) return false;
    for (size_t k = 1; k < call.kids.size(); ++k)
      if (!apply_layer(f, func, call.kids[k], env, s, kept, depth + 1)) return false;
    return true;
  }
  if (name == "Conv2d"sv) {
    const long out = n(1, "out_channels", -1), k = n(2, "kernel_size", -1), stride = n(3, "stride", 1);
    long pad = n(4, "padding", 0);
    const Id pa = f.arg(v, 4, "padding");
    if (pa != kNone && f.e(pa).kind == ExprKind::Literal && f.e(pa).lit == LitKind::String) {
      if (f.e(pa).text.find("same") == std::string::npos) return false;
      pad = k > 0 ? (k - 1) / 2 : -1;
    }
    if (n(5, "dilation", 1) != 1) return false;  // a dilated kernel spans more than its size
    if (out <= 0 || out > kMaxChannels || !slide(s, k, stride, pad)) return false;
    s.c = out;
  } else if (name == "MaxPool2d"sv || name == "AvgPool2d"sv) {
    const long k = n(0, "kernel_size", -1);
    if (!slide(s, k, n(1, "stride", k), n(2, "padding", 0))) return false;
  } else if (name == "AdaptiveAvgPool2d"sv || name == "AdaptiveMaxPool2d"sv) {
    const long o = n(0, "output_size", -1);
    if (o <= 0 || o > kMaxSide || s.flat) return false;
    s.h = s.w = o;
  } else if (name == "Flatten"sv) {
    if (!s.flat) s = {0, 0, 0, s.size(), true};
    return true;  // a view: nothing new is kept
  } else if (name == "Linear"sv) {
    const long in = n(0, "in_features", -1), out = n(1, "out_features", -1);
    if (!s.flat || in != s.n || out <= 0 || out > kMaxChannels) return false;
    s.n = out;
  } else if (name.rfind("BatchNorm", 0) == 0 || name.rfind("Dropout", 0) == 0 ||
             in(name, {"ReLU"sv, "ReLU6"sv, "LeakyReLU"sv, "ELU"sv, "GELU"sv, "SiLU"sv, "Sigmoid"sv, "Tanh"sv,
                       "Softmax"sv, "LogSoftmax"sv, "Identity"sv, "Hardswish"sv, "Mish"sv})) {
    // Keeps the shape.
  } else {
    return false;
  }
  kept += s.size();
  return kept < (1L << 50);  // a graph this large is no small one; stop before any overflow
}

}  // namespace

long feature_map_graph(const Facts& f, Id func, Id v, long c, long h, long w) {
  if (f.m.lang != Lang::Python || v == kNone || c <= 0 || h <= 0 || w <= 0 || c > kMaxChannels || h > kMaxSide ||
      w > kMaxSide)
    return -1;
  v = f.unplaced(v);
  if (f.e(v).kind != ExprKind::Call) return -1;
  MapShape s{c, h, w, 0, false};
  long kept = 0;
  if (f.callee_qual(v) == "torch.nn.Sequential"sv) return apply_layer(f, func, v, nullptr, s, kept) ? kept : -1;
  // A same-file module class whose every part is visible (class_size), run by a forward that
  // is a straight line: `x = self.pool(F.relu(self.conv1(x)))`, ..., `return self.fc(x)`.
  const Id k = f.constructed_class(v);
  if (k == kNone || model_size(f, func, v).params < 0) return -1;
  const Id init = f.method_in(k, "__init__"), fw = f.method_in(k, "forward");
  if (init == kNone || fw == kNone || f.class_of(fw) != k) return -1;
  const IntEnv env = constructor_env(f, k, v, func, nullptr);
  for (Id sid : f.m.funcs[fw].body) {
    const Stmt& st = f.m.s(sid);
    const bool line = (st.kind == StmtKind::Assign && st.targets.size() == 1 && f.e(st.targets[0]).kind == ExprKind::Name) ||
                      st.kind == StmtKind::Return ||
                      (st.kind == StmtKind::Expr && st.value != kNone && f.e(st.value).kind == ExprKind::Literal);
    if (!line) return -1;
  }
  // The layer each `self.<name>` holds: its one assignment in __init__.
  auto layer_of = [&](const std::string& d) -> Id {
    Id found = kNone;
    for (Id sid : f.m.funcs[init].body) {
      const Stmt& st = f.m.s(sid);
      if (st.kind != StmtKind::Assign || st.targets.size() != 1 || f.dotted(st.targets[0]) != d) continue;
      if (found != kNone) return kNone;
      found = st.value;
    }
    return found;
  };
  // The forward's calls in the order they run: an inner call ends before the one around it.
  std::vector<Id> order;
  for (int ci : f.calls_in(fw)) order.push_back(f.calls[ci].call);
  std::sort(order.begin(), order.end(), [&](Id a, Id b) { return f.e(a).range.end < f.e(b).range.end; });
  for (Id x : order) {
    const std::string& q = f.callee_qual(x);
    const std::string_view attr = f.callee_attr(x);
    const std::string& d = f.dotted(f.e(x).kids[0]);
    const std::string_view last = q.empty() ? attr : f.last_component(q);
    const bool functional = starts_with(q, "torch.nn.functional.") || (starts_with(q, "torch.") && q.find('.', 6) == std::string::npos);
    if (starts_with(d, "self.") && d.find('.', 5) == std::string::npos) {
      if (!apply_layer(f, init, layer_of(d), &env, s, kept)) return -1;
    } else if ((functional || (q.empty() && !attr.empty())) &&
               in(last, {"relu"sv, "relu6"sv, "leaky_relu"sv, "elu"sv, "gelu"sv, "silu"sv, "sigmoid"sv, "tanh"sv,
                         "dropout"sv, "dropout2d"sv, "softmax"sv, "log_softmax"sv})) {
      kept += s.size();
    } else if (functional && in(last, {"max_pool2d"sv, "avg_pool2d"sv})) {
      const Id ka = f.arg(x, 1, "kernel_size"), sa = f.arg(x, 2, "stride");
      const long kk = square_int(f, fw, ka, nullptr), ss = sa == kNone ? kk : square_int(f, fw, sa, nullptr);
      if (!slide(s, kk, ss, 0)) return -1;
      kept += s.size();
    } else if (q == "torch.flatten"sv || (q.empty() && in(attr, {"view"sv, "reshape"sv, "flatten"sv}))) {
      if (!s.flat) s = {0, 0, 0, s.size(), true};
    } else if ((q.empty() && in(attr, {"size"sv, "dim"sv, "nelement"sv, "numel"sv})) ||
               (f.e(f.e(x).kids[0]).kind == ExprKind::Name && q.empty() &&
                in(d, {"print"sv, "len"sv, "int"sv, "float"sv}))) {
      // Reads a shape.
    } else {
      return -1;
    }
    if (kept >= (1L << 50)) return -1;  // no small graph; stop before any overflow
  }
  return kept;
}

ModelSize model_size(const Facts& f, Id func, Id v) { return size_of(f, func, v, 0); }

ModelSize class_size(const Facts& f, Id k) { return class_size(f, k, constructor_env(f, k, kNone, kNone, nullptr), 0); }

std::string param_count(long params) {
  auto tenths = [](long v, long unit) {
    const long t = (v * 10 + unit / 2) / unit;
    return std::to_string(t / 10) + (t % 10 ? "." + std::to_string(t % 10) : "");
  };
  return params >= 1'000'000 ? tenths(params, 1'000'000) + "M"
         : params >= 1'000   ? tenths(params, 1'000) + "k"
                             : std::to_string(params);
}

bool model_method_call(const Facts& f, const CallSite& x) {
  const Id recv = f.callee_receiver(x.call);
  return recv != kNone && f.is_model_value(x.func, recv) &&
         !in(f.callee_attr(x.call), {"eval"sv, "train"sv, "to"sv, "cuda"sv, "cpu"sv, "float"sv, "half"sv, "double"sv,
                                     "parameters"sv, "named_parameters"sv, "state_dict"sv, "load_state_dict"sv,
                                     "zero_grad"sv, "modules"sv, "children"sv, "requires_grad_"sv});
}

bool each_model_size(const Facts& f, Id func, Id x, const std::function<bool(const ModelSize&)>& visit) {
  return each_model_value(f, func, x, [&](Id fn, Id v) { return visit(model_size(f, fn, v)); });
}

bool each_model_value(const Facts& f, Id func, Id x, const std::function<bool(Id, Id)>& visit) {
  std::function<bool(Id, Id, int)> walk = [&](Id fn, Id y, int depth) {
    const std::string& d = f.dotted(y);
    if (d.empty() || depth > 2 || f.m.lang != Lang::Python) return false;
    if (fn != kNone && f.is_param(fn, d) && f.own_bindings(fn, d).empty()) {
      const auto handed = f.argument_values(fn, d);
      if (handed.empty()) return false;
      for (const auto& [caller, a] : handed)
        if (!walk(caller, a, depth + 1)) return false;
      return true;
    }
    // `net = net.to(device)` moves the same object (`DDP(net)` wraps it): what reached that
    // binding's own read of the name counts, a few rebindings deep (not every binding of the
    // name: a notebook rebinds `model` to other classes in other cells).
    std::vector<Id> vals, work = f.bindings_at(fn, d, y);
    // `model, opt = get_model()`: a same-file builder's tuple, whose one model is the name's
    // (size_of picks it).
    if (work.empty() && f.stmt_of(y) != kNone) {
      bool outside = false;
      for (const Def& df : f.flow().reaching(f.stmt_of(y), d, &outside))
        if (df.kind == DefKind::Unpacked && df.value != kNone && f.e(df.value).kind == ExprKind::Call &&
            f.same_file_target(df.value, fn) != kNone)
          work.push_back(df.value);
      if (outside) work.clear();
    }
    std::set<Id> seen;
    while (!work.empty()) {
      const Id v = work.back();
      work.pop_back();
      if (!seen.insert(v).second) continue;
      if (!f.same_object(v, d)) {
        vals.push_back(v);
        continue;
      }
      Id read = kNone;
      for_each_expr(f.m, v, [&](Id z) {
        if (read == kNone && f.dotted(z) == d) read = z;
        return read == kNone;
      });
      if (read == kNone || seen.size() > 16) return false;
      for (Id w : f.bindings_at(fn, d, read)) work.push_back(w);
    }
    if (vals.empty()) return false;
    for (Id v : vals)
      if (!visit(fn, v)) return false;
    return true;
  };
  return walk(func, x, 0);
}

bool parameter_free_model(const Facts& f, Id func, Id x) {
  return each_model_size(f, func, x, [](const ModelSize& size) { return size.params == 0; });
}

}  // namespace ll
