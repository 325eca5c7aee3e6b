#include "checks/model_size.hpp"

#include <algorithm>
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
  const Expr* lit = f.literal_of(x, func);
  if (!lit && func != kNone) lit = f.literal_of(x, kNone);
  if (!lit || lit->lit != LitKind::Int) return -1;
  return int_literal_text(lit->text);
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
        std::vector<Id> vals = d.empty() ? std::vector<Id>{} : f.bindings(func, d);
        if (vals.empty() && func != kNone && !d.empty()) vals = f.bindings(kNone, d);
        if (vals.size() == 1 && vals[0] != v && f.e(vals[0]).kind == ExprKind::Call &&
            f.callee_qual(vals[0]).rfind("torch.nn.", 0) == 0)
          a = vals[0];
      }
      if (f.e(a).kind != ExprKind::Call) return {};  // `*layers`, a name bound otherwise
      total = total + layer_size(f, func, a, depth + 1, env);
      if (total.params < 0) return {};
    }
    return total;
  }
  auto n = [&](size_t pos, std::string_view kw) { return visible_int(f, func, f.arg(v, pos, kw), env); };
  if (name == "Linear"sv || name == "Bilinear"sv) {
    long a = n(0, "in_features"), b = n(1, name == "Linear"sv ? "out_features" : "in2_features");
    if (name == "Bilinear"sv) {
      const long o = n(2, "out_features");
      return a < 0 || b < 0 || o < 0 ? ModelSize{} : ModelSize{a * b * o + o, kKeptPerFeature * o, a + b};
    }
    return a < 0 || b < 0 ? ModelSize{} : ModelSize{a * b + b, kKeptPerFeature * b, a};
  }
  if (name == "Embedding"sv) {
    long a = n(0, "num_embeddings"), b = n(1, "embedding_dim");
    return a < 0 || b < 0 ? ModelSize{} : ModelSize{a * b, kUnknown};
  }
  if (name == "Conv1d"sv || name == "Conv2d"sv || name == "Conv3d"sv || name == "ConvTranspose2d"sv) {
    long a = n(0, "in_channels"), b = n(1, "out_channels"), k = n(2, "kernel_size");
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

// Is `self.<attr>` of class `k` only data (`self.labels[i]`, `i != self.blank`): no method
// calls it, calls a method on it, or hands it to a call? A module handed to the constructor is
// run or handed on somewhere; a vocabulary or a flag is read.
bool data_attribute(const Facts& f, Id k, const std::string& attr) {
  if (!starts_with(attr, "self.") || attr.find('.', 5) != std::string::npos) return false;
  for (Id g : f.m.classes[k].methods)
    for (int ci : f.calls_in(g)) {
      const Id call = f.calls[ci].call;
      const Id callee = f.e(call).kids[0];
      if (f.dotted(callee) == attr || f.dotted(f.callee_receiver(call)) == attr) return false;
      for (size_t i = 1; i < f.e(call).kids.size(); ++i)
        if (f.dotted(f.e(call).kids[i]) == attr) return false;
    }
  return true;
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
    // Initialising weights changes no size (`nn.init.xavier_uniform_(self.fc.weight)`).
    if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call &&
        f.callee_qual(s.value).rfind("torch.nn.init.", 0) == 0)
      continue;
    if (s.kind != StmtKind::Assign || s.value == kNone || s.targets.size() != 1) return {};
    if (f.e(s.value).kind == ExprKind::Literal) continue;  // `self.n = 3`
    if (f.e(s.value).kind == ExprKind::Name && settings_parameter(f, init, f.e(s.value).text)) continue;
    if (f.e(s.value).kind == ExprKind::Name && f.is_param(init, f.e(s.value).text) &&
        data_attribute(f, k, f.dotted(s.targets[0])))
      continue;
    if (f.e(s.value).kind != ExprKind::Call) return {};
    total = total + layer_size(f, init, s.value, depth + 1, &env);
    if (total.params < 0) return {};
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
    for (Id r : f.returned_values(g)) {
      std::vector<Id> values = {r};
      if (f.e(r).kind == ExprKind::Name) {
        values = f.bindings(g, f.e(r).text);
        // Grown after it was built (`model.add_module(...)`, `layers.append(...)`).
        for (const CallSite& c : f.calls)
          if (c.func == g && f.dotted(f.callee_receiver(c.call)) == f.e(r).text &&
              in(f.callee_attr(c.call), {"add_module", "append", "extend", "insert", "register_module"}))
            return {};
      }
      for (Id x : values) {
        const ModelSize p = size_of(f, g, x, depth + 1);
        if (p.params < 0) return {};
        most = first ? p
                     : ModelSize{std::max(most.params, p.params),
                                 most.width < 0 || p.width < 0 ? kUnknown : std::max(most.width, p.width),
                                 most.in_width == p.in_width ? p.in_width : kUnknown};
        first = false;
      }
    }
    return most;
  }
  return {};
}


}  // namespace

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
    std::vector<Id> vals = f.bindings_at(fn, d, y);
    // `net = net.to(device)` moves the same object (`DDP(net)` wraps it): what it was bound
    // to before counts.
    auto moved_self = [&](Id v) { return f.same_object(v, d); };
    if (std::any_of(vals.begin(), vals.end(), moved_self)) vals = f.bindings(fn, d);
    vals.erase(std::remove_if(vals.begin(), vals.end(), moved_self), vals.end());
    if (vals.empty()) return false;
    for (Id v : vals)
      if (!visit(model_size(f, fn, v))) return false;
    return true;
  };
  return walk(func, x, 0);
}

bool parameter_free_model(const Facts& f, Id func, Id x) {
  return each_model_size(f, func, x, [](const ModelSize& size) { return size.params == 0; });
}

}  // namespace ll
