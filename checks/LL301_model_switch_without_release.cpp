// LL301 model-switch-without-release: a name holding a model is rebound to a new model
// (in a loop, or replacing self.<model> in a method) without releasing the old one first.
#include <algorithm>
#include <functional>
#include <cctype>

#include "checks/common.hpp"
#include "checks/flow.hpp"
#include "checks/model_size.hpp"
#include "checks/project.hpp"
#include "checks/relevance.hpp"

namespace ll {
namespace {

bool mentions(const Facts& f, Id x, const std::string& d) {
  bool hit = false;
  for_each_expr(f.m, x, [&](Id y) {
    if (f.dotted(y) == d) hit = true;
    return !hit;
  });
  return hit;
}

// A Lightning Trainer's run (`trainer.fit(module)`, also `validate`, `test`, `predict`) of the
// model, or of a LightningModule built around it in these statements (`ModelWrapper(model=
// model)`): its teardown moves the module to the CPU (Strategy.teardown), which releases the
// model's GPU memory.
bool lightning_run_of(const Facts& f, const std::vector<Id>& stmts, Id call, const std::string& d) {
  if (!in(f.callee_attr(call), {"fit", "validate", "test", "predict"})) return false;
  const Id trainer = f.callee_receiver(call);
  if (trainer == kNone || f.e(trainer).kind != ExprKind::Name) return false;
  const std::vector<Id> ts = f.bindings_at(f.function_at(f.e(call).range.begin), f.e(trainer).text, trainer);
  if (ts.empty()) return false;
  for (Id t : ts)
    if (!in(f.callee_qual(t), {"pytorch_lightning.Trainer", "pytorch_lightning.trainer.Trainer", "lightning.Trainer",
                               "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer"}))
      return false;
  const Id m = f.arg(call, 0, "model");
  if (m == kNone) return false;
  const std::string& md = f.dotted(m);
  if (md == d) return true;
  if (md.empty()) return false;
  // A module built in these statements with the model among its arguments.
  for (Id sid : stmts) {
    const Stmt& s = f.m.s(sid);
    if (s.kind != StmtKind::Assign || s.value == kNone || f.e(s.value).kind != ExprKind::Call || s.targets.size() != 1 ||
        f.dotted(s.targets[0]) != md)
      continue;
    const Expr& built = f.e(s.value);
    for (size_t k = 1; k < built.kids.size(); ++k)
      if (f.dotted(built.kids[k]) == d) return true;
  }
  return false;
}

// `del x`, `x = None`, `x.cpu()`, `x.to("cpu")` (also through a device bound to the CPU) among
// the statements, or a Lightning run of the model (lightning_run_of).
bool releases(const Facts& f, const std::vector<Id>& stmts, const std::string& d, uint32_t before) {
  for (Id sid : stmts) {
    const Stmt& s = f.m.s(sid);
    if (s.range.begin >= before) continue;
    if (s.kind == StmtKind::Delete)
      for (Id t : s.targets)
        if (f.dotted(t) == d) return true;
    if (s.kind == StmtKind::Assign && s.value != kNone && f.e(s.value).kind == ExprKind::Literal &&
        f.e(s.value).lit == LitKind::None)
      for (Id t : s.targets)
        if (f.dotted(t) == d) return true;
    if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call) {
      const std::string& a = f.callee_attr(s.value);
      if (f.dotted(f.callee_receiver(s.value)) == d &&
          (a == "cpu"sv || (a == "to"sv && f.arg(s.value, 0, "device") != kNone &&
                            f.cpu_device_at(f.arg(s.value, 0, "device")))))
        return true;
      if (lightning_run_of(f, stmts, s.value, d)) return true;
    }
  }
  return false;
}

// The value is `d`, or a tuple, list or dict display that holds it (`(control_net, ratio)`).
bool holds(const Facts& f, Id x, const std::string& d, int depth = 0) {
  // `net.to(device)`, `net.eval()`: the same module.
  while (f.e(x).kind == ExprKind::Call && f.callee_receiver(x) != kNone &&
         in(f.callee_attr(x), {"to", "cuda", "cpu", "eval", "train", "half", "float", "double", "bfloat16"}))
    x = f.callee_receiver(x);
  if (f.dotted(x) == d) return true;
  if (depth > 3 || f.e(x).kind != ExprKind::Sequence) return false;
  for (Id k : f.e(x).kids)
    if (holds(f, k, d, depth + 1)) return true;
  return false;
}

// Is the model kept on purpose (appended to a list, stored in a dict)?
bool stored(const Facts& f, const std::vector<Id>& stmts, const std::string& d) {
  for (Id sid : stmts) {
    const Stmt& s = f.m.s(sid);
    if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call) {
      // `models.append(net)`, `ensemble.add_member(net)`, `registry.register_model(net)`.
      const std::string& a = f.callee_attr(s.value);
      const auto toks = Facts::name_tokens(a);
      if (!toks.empty() && in(toks.front(), {"append"sv, "add"sv, "insert"sv, "extend"sv, "register"sv, "push"sv,
                                              "put"sv, "store"sv}))
        for (size_t k = 1; k < f.e(s.value).kids.size(); ++k)
          if (holds(f, f.e(s.value).kids[k], d)) return true;
    }
    if (s.kind == StmtKind::Assign && s.value != kNone && holds(f, s.value, d))
      for (Id t : s.targets)
        if (f.e(t).kind == ExprKind::Subscript) return true;
  }
  return false;
}

// Is a device among the call's arguments (`device`, `"cuda:0"`, `use_gpu`, `device_map=`)?
bool names_a_device(const Facts& f, Id call) {
  bool device = false;
  for (size_t i = 1; i < f.e(call).kids.size() && !device; ++i)
    for_each_expr(f.m, f.e(call).kids[i], [&](Id x) {
      const Expr& e = f.e(x);
      std::string_view text = e.kind == ExprKind::Literal || e.kind == ExprKind::Name || e.kind == ExprKind::Attribute
                                  ? std::string_view(e.text)
                                  : std::string_view();
      for (const auto& t : Facts::name_tokens(text))
        if (in(t, {"cuda", "device", "gpu"})) device = true;
      return !device;
    });
  for (const std::string& k : f.e(call).kw) device = device || in(k, {"device", "device_map"});
  return device;
}

// A module built by its constructor (a same-file nn.Module class, a torch.nn or
// torchvision model), or loaded with `from_pretrained(...)` (which loads on the CPU unless
// told otherwise), with no device among its arguments: its parameters are on the CPU.
bool constructed_on_cpu(const Facts& f, Id func, Id value, int depth = 0) {
  if (f.e(value).kind != ExprKind::Call || depth > 3) return false;
  // A builder of the file (`def get_net(n): return nn.Linear(n, 1)`) whose every return is
  // built on the CPU.
  if (Id g = f.same_file_target(value, func); g != kNone && g != func) {
    const std::vector<Id> rs = f.returned_values(g);
    bool all = !rs.empty();
    for (Id r : rs) all = all && constructed_on_cpu(f, g, r, depth + 1);
    if (all) return true;
  }
  const Expr& callee = f.e(f.e(value).kids[0]);
  const std::string& q = f.callee_qual(value);
  bool ctor = q.rfind("torch.nn.", 0) == 0 || torchvision_model_builder(q) ||
              f.callee_attr(value) == "from_pretrained"sv;
  if (!ctor && callee.kind == ExprKind::Name && q.empty()) {
    Id k = f.class_at(callee.text, callee.range.begin);
    ctor = k != kNone && f.is_module_class(k);
  }
  // A project's model class from another module (`from gpt import GPTModel`; `GPTModel(...)`,
  // `models.Net(...)`, `import_module(name).Net(...)`): instantiated by its capitalised class
  // name, not a factory function.
  // A capitalised name from a star import (`from models import *; ResNet18(...)`) too, unless
  // the file defines a function of that name.
  const std::string_view last = callee.kind == ExprKind::Attribute ? std::string_view(callee.text)
                                : callee.kind == ExprKind::Name && (!q.empty() || !f.is_function_name(func, callee.text))
                                    ? std::string_view(callee.text)
                                    : std::string_view();
  if (!ctor && !last.empty() && q.rfind("torch", 0) != 0 && std::isupper(static_cast<unsigned char>(last[0])))
    ctor = true;
  if (!ctor) return false;
  bool device = names_a_device(f, value);
  // Assembled from modules that exist already (`from_pretrained(name, unet=unet)`): those
  // may be on a GPU.
  // (A layer built right there, `nn.Sequential(nn.Linear(n, 64), ...)`, is on the CPU too.)
  for (size_t i = 1; i < f.e(value).kids.size() && !device; ++i) {
    const Id a = f.e(value).kids[i];
    device = f.is_model_value(func, a) && !(f.e(a).kind == ExprKind::Call && constructed_on_cpu(f, func, a, depth + 1));
  }
  return !device;
}

// Does function `g` move its parameter `p` to a device (`p.to(...)`, `p.cuda()`)?
bool moves_param(const Facts& f, Id g, const std::string& p) {
  for (const CallSite& c : f.calls)
    if (c.func == g && in(f.callee_attr(c.call), {"to", "cuda"})) {
      const std::string& r = f.dotted(f.callee_receiver(c.call));
      if (r == p || r.rfind(p + ".", 0) == 0) return true;
    }
  return false;
}

// Does same-file function `g`, handed the model as positional argument `a` (0-based) of `call`,
// move the parameter that receives it? An argument past the positional ones, or a parameter
// the function does not name, counts as moved.
bool same_file_callee_moves_arg(const Facts& f, Id call, Id g, size_t a) {
  const Expr& x = f.e(call);
  const Function& fn = f.m.funcs[g];
  const size_t first = fn.cls != kNone && !fn.params.empty() && fn.params[0] == "self"sv ? 1 : 0;
  const size_t pi = first + a;
  return a >= x.kids.size() - 1 - x.kw.size() || pi >= fn.params.size() || moves_param(f, g, fn.params[pi]);
}

// Does a module class of the file, built with the model as argument `i` (`Pruning(model)`),
// move it: its `__init__` moves that parameter, hands it to code that may, or a method moves
// the attribute it is kept in (`self.model = model`, then `self.model.cuda()`)? An object that
// keeps the model and works on it in place moves nothing.
bool class_moves_arg(const Facts& f, Id k, size_t i) {
  const Id init = f.method_in(k, "__init__");
  if (init == kNone || f.class_of(init) != k) return true;
  const Function& fn = f.m.funcs[init];
  if (1 + i >= fn.params.size()) return true;
  const std::string& p = fn.params[1 + i];
  auto hands_on = [&](Id g, const std::string& name) {
    if (moves_param(f, g, name)) return true;
    // Through an element of a kept container: `self.models[0].cuda()`.
    for (int ci : f.calls_in(g)) {
      const Id x = f.calls[ci].call;
      if (!in(f.callee_attr(x), {"to", "cuda"})) continue;
      Id r = f.callee_receiver(x);
      while (r != kNone && f.e(r).kind == ExprKind::Subscript && !f.e(r).kids.empty()) r = f.e(r).kids[0];
      if (r != kNone && f.dotted(r) == name) return true;
    }
    for (int ci : f.calls_in(g)) {
      const Id x = f.calls[ci].call;
      const Expr& call = f.e(x);
      for (size_t a = 1; a < call.kids.size(); ++a) {
        if (f.dotted(call.kids[a]) != name) continue;
        const Expr& callee = f.e(call.kids[0]);
        if (callee.kind == ExprKind::Name && callee.qname.empty() &&
            in(callee.text, {"print", "len", "str", "repr", "isinstance", "type", "id", "hasattr", "getattr"}))
          continue;
        const Id h = f.same_file_target(x, g);
        if (h == kNone || h == g || same_file_callee_moves_arg(f, x, h, a - 1)) return true;
      }
    }
    return false;
  };
  if (hands_on(init, p)) return true;
  // The attributes that keep it (`self.model = model`, `self.models = [model]`): any value
  // that mentions the parameter.
  std::vector<std::string> kept;
  for (Id sid : f.stmts_in(init)) {
    const Stmt& st = f.m.s(sid);
    if (st.kind != StmtKind::Assign || st.value == kNone) continue;
    bool mentions_p = false;
    for_each_expr(f.m, st.value, [&](Id y) {
      mentions_p = mentions_p || f.dotted(y) == p;
      return !mentions_p;
    });
    if (!mentions_p) continue;
    for (Id t : st.targets)
      if (const std::string& d = f.dotted(t); starts_with(d, "self.")) kept.push_back(d);
  }
  // Every method of the class and of its same-file bases, with the names a method binds to
  // a kept attribute (`net = self.model; net.cuda()`).
  std::set<Id> classes;
  for (Id c = k; c != kNone && classes.insert(c).second;) c = f.same_file_base(c);
  for (Id c : classes)
    for (Id m : f.m.classes[c].methods) {
      if (m == init) continue;
      std::vector<std::string> names = kept;
      for (Id sid : f.stmts_in(m)) {
        const Stmt& st = f.m.s(sid);
        if (st.kind != StmtKind::Assign || st.value == kNone) continue;
        const std::string& v = f.dotted(f.unplaced(st.value));
        if (std::find(kept.begin(), kept.end(), v) == kept.end()) continue;
        for (Id t : st.targets)
          if (const std::string& d = f.dotted(t); !d.empty()) names.push_back(d);
      }
      for (const std::string& d : names)
        if (hands_on(m, d)) return true;
    }
  return false;
}

// Does a statement bind something other than `d` to a value built from `d` (`opt =
// SGD(model.parameters())`, `self.net = model`, `engine = Wrapper(model)`)? With
// `but_optimizers`, an optimizer built over it does not count (`func` is the function).
// `rebuilt`: a loop's body, whose own statements rebind their names every iteration: a local
// name it binds with the model (`trainer = Trainer(model, cfg)` after `model = build(cfg)`)
// lets the old model go with the rest of the iteration's training state, as the optimizer does.
bool aliased_in(const Facts& f, const std::vector<Id>& stmts, const std::string& d, bool but_optimizers = false,
                Id func = kNone, const std::vector<Id>* rebuilt = nullptr, int depth = 0) {
  for (Id sid : stmts) {
    const Stmt& s = f.m.s(sid);
    if ((s.kind != StmtKind::Assign && s.kind != StmtKind::AnnAssign) || s.value == kNone) continue;
    bool to_d = false;
    for (Id t : s.targets) to_d = to_d || f.dotted(t) == d || (but_optimizers && f.is_optimizer(func, t));
    if (to_d) continue;
    // (Unless that name is kept in turn under one that outlives the iteration: `best =
    // trainer`; `history = trainer.train()`, rebound every iteration too, is not.)
    if (rebuilt && depth < 3 && std::find(rebuilt->begin(), rebuilt->end(), sid) != rebuilt->end() &&
        std::all_of(s.targets.begin(), s.targets.end(), [&](Id t) {
          return f.e(t).kind == ExprKind::Name && f.dotted(t) != d &&
                 !aliased_in(f, stmts, f.dotted(t), false, func, rebuilt, depth + 1);
        }))
      continue;
    Id v = f.unplaced(s.value);
    if (f.dotted(v) == d) return true;  // `net = model`, `self.model = model.cuda()`
    if (f.e(v).kind != ExprKind::Call) continue;
    // A constructor (`SGD(model.parameters())`, `Engine(model)`) given the model or its
    // parameters keeps them; a function's result (`acc = evaluate(model)`) and a forward's
    // output (`out = model(x)`) hold values computed from it, not the model.
    std::string callee(f.last_component(f.dotted(f.e(v).kids[0])));
    if (callee.empty() || !std::isupper(static_cast<unsigned char>(callee[0]))) continue;
    for (size_t k = 1; k < f.e(v).kids.size(); ++k) {
      Id a = f.e(v).kids[k];
      if (f.e(a).kind == ExprKind::Call && in(f.callee_attr(a), {"parameters", "named_parameters"}))
        a = f.callee_receiver(a);
      if (a != kNone && f.dotted(f.unplaced(a)) == d) return true;
    }
  }
  return false;
}

// Does loop `loop` train without `d` while the model `d` holds sits idle on the GPU: a
// statement of the loop's body that back-propagates and never mentions `d`, before the
// rebinding (`value` is the new model) or after the body's last mention of `d`?
bool idle_through_training(const Facts& f, int loop, const std::string& d, Id value) {
  const Loop& L = f.loops[loop];
  if (L.stmt == kNone) return false;
  const Id rebinding = f.stmt_of(value);
  if (rebinding == kNone) return false;
  const std::vector<Id>& body = f.m.s(L.stmt).body;
  uint32_t last_use = 0;
  for (Id sid : body)
    if (sid != rebinding) {
      bool hit = false;
      for (int ci : L.calls)
        if (!hit && f.calls[ci].func == L.func) {
          const Range& r = f.e(f.calls[ci].call).range;
          if (r.begin >= f.m.s(sid).range.begin && r.end <= f.m.s(sid).range.end && mentions(f, f.calls[ci].call, d))
            hit = true;
        }
      if (hit) last_use = std::max(last_use, f.m.s(sid).range.begin);
    }
  auto backprop = [&](const CallSite& x) { return f.is_backprop(x); };
  const uint32_t at = f.m.s(rebinding).range.begin;
  for (Id sid : body) {
    const Range& sr = f.m.s(sid).range;
    if (sid == rebinding || !(sr.begin < at || sr.begin > last_use)) continue;
    bool trains = false, uses = false;
    for (int ci : L.calls) {
      const CallSite& c = f.calls[ci];
      const Range& r = f.e(c.call).range;
      if (r.begin < sr.begin || r.end > sr.end) continue;
      uses = uses || mentions(f, c.call, d);
      trains = trains || f.is_backprop(c) || (c.target_func != kNone && f.reaches(c.target_func, backprop));
    }
    if (trains && !uses) return true;
  }
  return false;
}

// Does a statement bind the result of a same-file function that returns the model it is
// handed (`val_acc, _, trained = main(args, model)` where `main` ends `return acc, loss,
// model`)? That result outlives the rebinding of `d`.
// Does the function keep one of its parameters somewhere that outlives the call: appended or
// inserted into a container, or stored into an attribute or a subscript?
bool keeps_its_argument(const Facts& f, Id g) {
  const std::vector<std::string>& params = f.m.funcs[g].params;
  auto is_param = [&](Id x) {
    const std::string& d = f.dotted(f.unplaced(x));
    return !d.empty() && std::find(params.begin(), params.end(), d) != params.end() && d != "self"sv;
  };
  for (int ci : f.calls_in(g)) {
    const Expr& x = f.e(f.calls[ci].call);
    if (!in(f.callee_attr(f.calls[ci].call), {"append", "extend", "insert", "add", "setdefault", "__setitem__", "put"}))
      continue;
    for (size_t k = 1; k < x.kids.size(); ++k)
      if (is_param(x.kids[k])) return true;
  }
  for (Id sid : f.stmts_in(g)) {
    const Stmt& st = f.m.s(sid);
    if (st.kind != StmtKind::Assign || st.value == kNone || !is_param(st.value)) continue;
    for (Id t : st.targets)
      if (t != kNone && f.e(t).kind != ExprKind::Name) return true;
  }
  return false;
}

bool handed_back_in(const Facts& f, Id func, const std::vector<Id>& stmts, const std::string& d) {
  for (Id sid : stmts) {
    const Stmt& s = f.m.s(sid);
    if ((s.kind != StmtKind::Assign && s.kind != StmtKind::AnnAssign) || s.value == kNone) continue;
    const Id v = f.unplaced(s.value);
    if (f.e(v).kind != ExprKind::Call) continue;
    const Id g = f.same_file_target(v, func);
    // Handed back to the name itself (`model = load_model(path, model)`): the same object,
    // which nothing else holds, unless the file shows the function keeping it (`registry.append
    // (model)`, `self.models[k] = model`).
    if (s.targets.size() == 1 && f.dotted(s.targets[0]) == d && !(g != kNone && keeps_its_argument(f, g))) continue;
    const Expr& call = f.e(v);
    for (size_t k = 1; k < call.kids.size(); ++k) {
      if (f.dotted(f.unplaced(call.kids[k])) != d) continue;
      if (g == kNone) break;  // another library's function: what it returns is not visible
      std::string param;
      for (const std::string& p : f.m.funcs[g].params)
        if (f.argument_for(v, g, p) == call.kids[k]) param = p;
      if (param.empty()) return true;
      for (Id r : f.returned_values(g)) {
        bool hit = false;
        for_each_expr(f.m, r, [&](Id y) {
          const std::string& yd = f.dotted(f.unplaced(y));
          if (yd == param) hit = true;
          return !hit && (f.e(y).kind == ExprKind::Sequence || f.e(y).kind == ExprKind::Call);
        });
        // Rebound inside before it is returned (`model = model.to(device)` keeps the object).
        if (!hit && f.e(r).kind == ExprKind::Name)
          for (Id b : f.own_bindings(g, f.e(r).text))
            if (f.dotted(f.unplaced(b)) == param) hit = true;
        if (hit) return true;
      }
    }
  }
  return false;
}

// Loaded with map_location="cpu" / device="cpu", or built on the CPU, and never moved to a
// GPU in the loop: not by `.to()`/`.cuda()` there, nor by a function it is handed to (a
// same-file function that does not move that parameter is fine; another one may).
// `stmts`: the loop's statements, or a method's (`loop` -1: nothing trains between two calls).
// `holders`: where another name may keep the old model (`stmts` when null).
bool stays_on_cpu(const Facts& f, Id func, Id value, const std::vector<Id>& stmts, int loop, const std::string& d,
                  bool assume_cpu = false, const std::vector<Id>* holders = nullptr) {
  Id where = f.arg(value, static_cast<size_t>(-1), "map_location");
  if (where == kNone) where = f.arg(value, static_cast<size_t>(-1), "device");
  const bool cpu = where != kNone && f.e(where).kind == ExprKind::Literal && f.e(where).text == "cpu"sv;
  if (!cpu && !assume_cpu && !constructed_on_cpu(f, func, value)) return false;
  // The new model lands on the CPU, so while it loads only the old one is on the GPU, and
  // the rebinding drops the old one before `model.to(device)` moves the new one — unless the
  // iteration binds the model to another name too (an optimizer, a wrapper, an attribute, the
  // result of a same-file function that hands the model back), which keeps the old one alive
  // past the rebinding, or the loop trains something else while the moved model sits on the
  // GPU until the rebinding (a validation pipeline built after each epoch's training). Training
  // the moved model itself in between changes nothing: the rebinding drops it before the next
  // move.
  const std::vector<Id>& held = holders ? *holders : stmts;
  if (!aliased_in(f, held, d) && !handed_back_in(f, func, held, d) &&
      (loop < 0 || !idle_through_training(f, loop, d, value)))
    return true;
  for (Id sid : stmts) {
    bool moved = false;
    for_each_expr(f.m, f.m.s(sid).value, [&](Id x) {
      if (f.e(x).kind != ExprKind::Call) return true;
      if ((f.callee_attr(x) == "cuda"sv || f.callee_attr(x) == "to"sv) && f.dotted(f.callee_receiver(x)) == d)
        moved = true;
      const Expr& call = f.e(x);
      for (size_t i = 1; i < call.kids.size() && !moved && !cpu; ++i) {
        if (f.dotted(call.kids[i]) != d) continue;
        const Expr& callee = f.e(call.kids[0]);
        if (callee.kind == ExprKind::Name && callee.qname.empty() &&
            in(callee.text, {"print", "len", "str", "repr", "isinstance", "type", "id", "sum", "list"}))
          continue;
        // Saving, or wrapping for data parallelism (the wrapper moves nothing: it expects the
        // module on its device already).
        if (in(f.callee_qual(x), {"torch.save", "torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                                  "torch.nn.parallel.DistributedDataParallel"}))
          continue;
        Id g = f.same_file_target(x, func);
        if (g == kNone) {
          // A module class of the file that keeps the model and works on it in place.
          const Id k = f.constructed_class(x);
          const size_t positional = call.kids.size() - 1 - call.kw.size();
          moved = k == kNone || i - 1 >= positional || class_moves_arg(f, k, i - 1);
          if (moved) break;
          continue;
        }
        if (same_file_callee_moves_arg(f, x, g, i - 1)) moved = true;
      }
      return !moved;
    });
    if (moved) return false;
  }
  return true;
}

// A model from a builder whose placement the file does not show (a registry or factory of
// another module, `models.get_trained_model(name)`; a same-file function that moves nothing),
// handed no device, which the iteration itself moves to the device after the rebinding
// (`model.to(device)`): the move says the builder hands it back on the CPU, though nothing shows
// it. Returns the builder's name, or "" when the placement is known or the model is not moved.
std::string placed_out_of_sight(const Facts& f, Id func, Id value, const std::vector<Id>& stmts, Id sid,
                                const std::string& d) {
  if (f.e(value).kind != ExprKind::Call || names_a_device(f, value)) return "";
  const Expr& callee = f.e(f.e(value).kids[0]);
  if (callee.kind != ExprKind::Name && callee.kind != ExprKind::Attribute) return "";
  // A checkpoint load places what it loads where the checkpoint was saved.
  const std::string& q = f.callee_qual(value);
  if (starts_with(q, "torch.")) return "";
  if (Id g = f.same_file_target(value, func); g != kNone)
    for (int ci : f.calls_in(g)) {
      const Id x = f.calls[ci].call;
      if (in(f.callee_attr(x), {"to", "cuda"}) || names_a_device(f, x)) return "";
    }
  const uint32_t after = f.m.s(sid).range.end;
  bool moved = false;
  for (Id x : stmts) {
    const Stmt& st = f.m.s(x);
    if (st.range.begin < after || (st.kind != StmtKind::Expr && st.kind != StmtKind::Assign) || st.value == kNone)
      continue;
    // (Through mode switches and casts chained on the move: `model = model.cuda().eval()`.)
    Id v = st.value;
    for (int hops = 0; hops < 6 && v != kNone && f.e(v).kind == ExprKind::Call &&
                       in(f.callee_attr(v), {"eval", "train", "half", "float", "bfloat16", "requires_grad_"});
         ++hops)
      v = f.callee_receiver(v);
    if (v != kNone && f.e(v).kind == ExprKind::Call && in(f.callee_attr(v), {"to", "cuda"}) &&
        f.dotted(f.callee_receiver(v)) == d)
      moved = true;
  }
  return moved ? std::string(callee.text) : std::string();
}

// Is `d` bound in `func` to a value of another framework (`layers.Conv2D.from_config(cfg)`,
// `keras.Sequential(...)`) anywhere, directly or through a method of one?
bool holds_other_framework(const Facts& f, Id func, const std::string& d) {
  for (Id v : f.bindings(func, d)) {
    for (int hops = 0; v != kNone && hops < 6 && f.e(v).kind == ExprKind::Call; ++hops) {
      if (in_other_framework(f.callee_qual(v))) return true;
      v = f.callee_receiver(v);
    }
    if (v != kNone && in_other_framework(f.qual(v))) return true;
  }
  return false;
}

// Is the value a torch model by what builds it, whatever else its name holds: a torch,
// torchvision or timm call, or a module class of the file (`torchvision.models.resnet50().cuda()`)?
bool evidently_torch(const Facts& f, Id v) {
  for (int hops = 0; v != kNone && hops < 6 && f.e(v).kind == ExprKind::Call; ++hops) {
    const std::string& q = f.callee_qual(v);
    if (starts_with(q, "torch.") || starts_with(q, "torchvision.") || starts_with(q, "timm.")) return true;
    if (const Id k = f.constructed_class(v); k != kNone && f.is_module_class(k)) return true;
    v = f.callee_receiver(v);
  }
  return false;
}

// Does the value create or load a model (or a pipeline holding models)?
bool loads_model(const Facts& f, Id func, Id v, const std::string& target, int depth = 0) {
  if (v == kNone || depth > 6 || f.e(v).kind != ExprKind::Call) return false;
  const std::string& q = f.callee_qual(v);
  const std::string& a = f.callee_attr(v);
  // Another framework's objects (`layers.Conv2D.from_config(cfg)` of tf.keras) hold no torch memory.
  if (in_other_framework(q)) return false;
  // Moving or switching mode keeps the same object: look through to what is moved.
  if (a == "to"sv || a == "cuda"sv || a == "eval"sv || a == "half"sv || a == "float"sv || a == "train"sv || a == "bfloat16"sv)
    return loads_model(f, func, f.callee_receiver(v), target, depth + 1);
  // Wrappers of another model are not a new model, unless what they wrap is built right
  // there (`net = nn.DataParallel(Net().cuda())`).
  if (q == "torch.compile"sv || q == "torch.jit.script"sv || q == "torch.jit.trace"sv || q == "torch.nn.DataParallel"sv ||
      q == "torch.nn.parallel.DistributedDataParallel"sv)
    return loads_model(f, func, f.arg(v, 0, "module"), target, depth + 1);
  if (a == "from_pretrained"sv || a == "from_config"sv || a == "from_single_file"sv) {
    Id r = f.callee_receiver(v);
    std::string rq = f.qual(r);
    std::string rd = rq.empty() ? f.dotted(r) : rq;
    for (std::string_view bad : {"Tokenizer", "Processor", "FeatureExtractor", "Config", "Scheduler", "Extractor"})
      if (rd.find(bad) != std::string::npos) return false;
    for (const auto& t : Facts::name_tokens(f.last_component(rd)))
      if (t == "tokenizer"sv || t == "processor"sv || t == "config"sv || t == "scheduler"sv || t == "extractor"sv) return false;
    return true;
  }
  if (q == "torch.jit.load"sv || q == "torch.hub.load"sv || q == "timm.create_model"sv || torchvision_model_builder(q))
    return true;
  bool model_named = f.is_model_value(func, v) && !target.empty();
  (void)model_named;
  // Anything else counts only when the name it is bound to is a model's (`model = build(cfg)`).
  const Expr& callee = f.e(f.e(v).kids[0]);
  std::string_view cname = callee.kind == ExprKind::Name ? std::string_view(callee.text)
                           : callee.kind == ExprKind::Attribute ? std::string_view(callee.text) : std::string_view();
  bool builder = false;
  // (A class another module of the run defines is judged by what it is, below: a project's
  // `FullPipeline(model)` of a scikit-learn-style template is no torch module.)
  const bool run_class = !q.empty() && !cname.empty() && std::isupper(static_cast<unsigned char>(cname[0])) &&
                         f.project && f.project->run_classes.count(q) && !f.project->module_classes.count(q);
  if (!run_class && last_word_names_a_model(cname))
    builder = true;  // build_model(cfg), load_pipeline(name); not model_cls()
  if (q == "torch.load"sv) builder = true;
  if (!builder && callee.kind == ExprKind::Name && q.empty())
    for (Id k = 0; k < f.m.classes.size(); ++k)
      if (f.m.classes[k].name == callee.text && f.is_module_class(k)) builder = true;
  // A class another module defines, instantiated by its capitalised name (`net =
  // VisionTransformer(...)`, `from models.vit import VisionTransformer`), that the function
  // treats as a torch module (moves it, loads a state dict into it, switches its mode), unless
  // it comes from a library of other models (scikit-learn, boosting, Keras).
  if (!builder && !q.empty() && !cname.empty() && std::isupper(static_cast<unsigned char>(cname[0])) &&
      !starts_with(q, "torch") && !target.empty()) {
    const std::string root = q.substr(0, q.find('.'));
    if (!in(root, {"sklearn", "xgboost", "lightgbm", "catboost", "tensorflow", "keras", "jax", "flax", "gensim",
                   "statsmodels", "spacy", "optuna", "ray", "gym", "gymnasium"}))
      for (int ci : f.calls_in(func))
        if (f.dotted(f.callee_receiver(f.calls[ci].call)) == target &&
            in(f.callee_attr(f.calls[ci].call), {"to", "cuda", "load_state_dict", "eval", "train", "parameters"})) {
          builder = true;
          break;
        }
  }
  if (!builder) return false;
  // Calling a model runs its forward: `logits_model = self.model(x)` binds activations.
  if ((callee.kind == ExprKind::Name || callee.kind == ExprKind::Attribute) && f.is_model_value(func, f.e(v).kids[0]))
    return false;
  // Unwrapping or assembling from models that already exist (`unwrap_model(model)`,
  // `Pipeline(unet=unet, vae=vae)`) creates nothing new.
  const Expr& call = f.e(v);
  for (size_t k = 1; k < call.kids.size(); ++k)
    if (f.is_model_value(func, call.kids[k])) return false;
  // ... and the target is a model's name (`model`, `teacher_net`; not `model_output`).
  auto toks = Facts::name_tokens(f.last_component(target));
  if (toks.empty()) return false;
  const std::string& t = toks.back();
  return t == "model"sv || t == "net"sv || t == "pipeline"sv || t == "pipe"sv || t == "network"sv || t == "generator"sv ||
         t == "encoder"sv || t == "decoder"sv || t == "backbone"sv;
}

Finding* report(CheckContext& ctx, Id sid, Id func, const std::string& d, const std::string& once = "") {
  std::string message =
      "`" + d + "` is rebound to a new model while the previous one is still referenced: the old model stays "
      "resident until the new one is fully built (peak = old + new), and its freed blocks stay in PyTorch's "
      "cache, invisible to other processes; `del " + d + "` (or set it to None), `gc.collect()` and "
      "`torch.cuda.empty_cache()` before loading the next one";
  const Range& where = ctx.facts.m.s(sid).range;
  // Impact: a replacement that happens once (at load time) costs one peak of old + new.
  if (!once.empty()) return ctx.report_weak("LL301", where, std::move(message), once);
  const long params = model_size(ctx.facts, func, ctx.facts.m.s(sid).value).params;
  // (Test code: the impact pass after the checks makes the finding weak; run_checks.)
  if (params >= 0 && params <= kSmallModel) {
    // "4.7M parameters (about 19 MB in float32)"
    const std::string count = param_count(params);
    const long mb = (params * 4 + 999'999) / 1'000'000;
    if (params == 0)
      return ctx.report_weak("LL301", where, std::move(message),
                             "the model's class builds no layer with parameters, so holding two of them costs nothing");
    return ctx.report_weak("LL301", where, std::move(message),
                           "the model has " + count + " parameters (about " + std::to_string(mb) +
                               " MB in float32), so holding two of them costs little");
  }
  return report_memory_claim(ctx, "LL301", where, std::move(message));
}

// Is `name` the counter of a loop around statement `sid`: `for i in range(...)`, or the index
// of `for i, x in enumerate(...)`, never rebound in the loop; or a name the function sets to 0
// once, outside the loop, and the loop only increases (`global_step += n`)?
bool loop_counter(const Facts& f, Id sid, const std::string& name) {
  const Range& r = f.m.s(sid).range;
  for (int l = 0; l < static_cast<int>(f.loops.size()); ++l) {
    const Loop& L = f.loops[l];
    if (L.stmt == kNone || L.range.begin > r.begin || L.range.end < r.end) continue;
    // A step counter: `step = 0` before the loop, only `step += ...` inside it.
    {
      const std::vector<Id> vals = f.own_bindings(L.func, name);
      bool zero_once = vals.size() == 1 && f.e(vals[0]).kind == ExprKind::Literal && f.e(vals[0]).text == "0"sv &&
                       !(f.e(vals[0]).range.begin >= L.range.begin && f.e(vals[0]).range.end <= L.range.end);
      bool increased = false;
      for (Id s : L.stmts) {
        const Stmt& st = f.m.s(s);
        for (Id t : st.targets) {
          if (f.dotted(t) != name) continue;
          if (st.kind == StmtKind::AugAssign && st.text == "+="sv) increased = true;
          else zero_once = false;
        }
      }
      if (zero_once && increased) return true;
    }
    if (L.iter == kNone) continue;
    const Stmt& st = f.m.s(L.stmt);
    if (st.targets.size() != 1 || f.e(L.iter).kind != ExprKind::Call) continue;
    const Expr& callee = f.e(f.e(L.iter).kids[0]);
    if (callee.kind != ExprKind::Name || !callee.qname.empty()) continue;
    Id t = st.targets[0];
    if (callee.text == "enumerate"sv && f.e(t).kind == ExprKind::Sequence && !f.e(t).kids.empty()) t = f.e(t).kids[0];
    else if (callee.text != "range"sv) continue;
    if (f.dotted(t) == name) {
      // Rebound inside the loop: no longer the counter.
      int binds = 0;
      for (Id s : L.stmts)
        for (Id tt : f.m.s(s).targets)
          if (f.dotted(tt) == name) ++binds;
      return binds == 0;
    }
  }
  return false;
}

// Is the assignment inside `if d is None:` (`if not d:`, `if d == None:`), in the body
// and not the else branch? Then nothing is referenced when the new model is built
// (lazy initialisation).
bool under_none_test(const Facts& f, Id func, Id sid, const std::string& d) {
  const Range& r = f.m.s(sid).range;
  for (const StmtSite& o : f.stmt_sites) {
    if (o.func != func) continue;
    const Stmt& st = f.m.s(o.stmt);
    if (st.kind != StmtKind::If || st.value == kNone || st.range.begin > r.begin || st.range.end < r.end) continue;
    bool in_else = false;
    for (Id e : st.orelse) in_else = in_else || (f.m.s(e).range.begin <= r.begin && f.m.s(e).range.end >= r.end);
    if (in_else) continue;
    const Expr& c = f.e(st.value);
    if (c.kind == ExprKind::Compare && c.kids.size() == 2 && (c.text == "is"sv || c.text == "==") &&
        f.dotted(c.kids[0]) == d && f.e(c.kids[1]).kind == ExprKind::Literal && f.e(c.kids[1]).lit == LitKind::None)
      return true;
    if (c.kind == ExprKind::UnaryOp && c.text == "not"sv && !c.kids.empty() && f.dotted(c.kids[0]) == d) return true;
    // `if i == 0:` on the counter of an enclosing loop: built on the first iteration only.
    if (c.kind == ExprKind::Compare && c.kids.size() == 2 && c.text == "=="sv) {
      const Id name = f.e(c.kids[1]).kind == ExprKind::Literal ? c.kids[0] : c.kids[1];
      const Id zero = name == c.kids[0] ? c.kids[1] : c.kids[0];
      if (f.e(zero).kind == ExprKind::Literal && f.e(zero).text == "0"sv && f.e(name).kind == ExprKind::Name &&
          loop_counter(f, sid, f.e(name).text))
        return true;
    }
  }
  return false;
}

// Is statement `sid` inside `if <name> == <literal>:` (or `in` a display of literals) where
// <name> is a target of loop `loop` (`for filename in os.listdir(d): if filename == "q.pt":`)?
// Then it runs on one iteration of the loop at most.
bool on_one_iteration(const Facts& f, int loop, Id sid) {
  const Stmt& ls = f.m.s(f.loops[loop].stmt);
  std::set<std::string> targets;
  for (Id t : ls.targets)
    for_each_expr(f.m, t, [&](Id x) {
      if (f.e(x).kind == ExprKind::Name) targets.insert(f.e(x).text);
      return true;
    });
  auto literal = [&](Id x) {
    const Expr& e = f.e(x);
    if (e.kind == ExprKind::Literal) return true;
    if (e.kind != ExprKind::Sequence) return false;
    for (Id k : e.kids)
      if (f.e(k).kind != ExprKind::Literal) return false;
    return true;
  };
  auto selects = [&](Id test) {
    const Expr& c = f.e(test);
    if (c.kind != ExprKind::Compare || c.kids.size() != 2 || (c.text != "=="sv && c.text != "in"sv)) return false;
    return (f.e(c.kids[0]).kind == ExprKind::Name && targets.count(f.e(c.kids[0]).text) && literal(c.kids[1])) ||
           (c.text == "=="sv && f.e(c.kids[1]).kind == ExprKind::Name && targets.count(f.e(c.kids[1]).text) &&
            literal(c.kids[0]));
  };
  std::function<bool(const std::vector<Id>&, int)> contains = [&](const std::vector<Id>& body, int depth) {
    if (depth > 16) return false;
    for (Id b : body) {
      if (b == sid) return true;
      const Stmt& st = f.m.s(b);
      if (contains(st.body, depth + 1) || contains(st.orelse, depth + 1)) return true;
    }
    return false;
  };
  for (Id x : f.loops[loop].stmts) {
    const Stmt& st = f.m.s(x);
    if (st.kind == StmtKind::If && selects(st.value) && contains(st.body, 0)) return true;
  }
  return false;
}

// Does the loop train (back-propagate, or hand `d` and an optimizer to a function that does
// it elsewhere: `training_epoch(model, loader, optimizer, criterion)`)?
bool loop_back_propagates(const Facts& f, int loop, const std::string& d) {
  if (f.loop_reaches_backprop(loop)) return true;
  for (int ci : f.loops[loop].calls) {
    const CallSite& c = f.calls[ci];
    const Expr& x = f.e(c.call);
    bool model = false, optimizer = false;
    for (size_t k = 1; k < x.kids.size(); ++k) {
      model = model || f.dotted(x.kids[k]) == d;
      optimizer = optimizer || f.is_optimizer(c.func, x.kids[k]);
    }
    if (model && optimizer) return true;
  }
  return false;
}

// `model.train(False)`, `model.train(mode=...)`: nn.Module's mode switch, which trains nothing.
bool mode_switch(const Facts& f, Id call) {
  if (f.callee_attr(call) != "train"sv) return false;
  const Expr& x = f.e(call);
  if (x.kids.size() != 2) return false;
  const Expr& a = f.e(x.kids[1]);
  return (a.kind == ExprKind::Literal && (a.lit == LitKind::True || a.lit == LitKind::False)) ||
         f.arg(call, static_cast<size_t>(-1), "mode") != kNone;
}

// Does each iteration of `loop` train the model `d` holds: an optimizer built over its
// parameters steps in the loop, or the loop hands it to a function of the file that
// back-propagates or to a training framework's fit?
bool trains_the_model(const Facts& f, int loop, const std::string& d) {
  const Loop& L = f.loops[loop];
  // A function of another module of the project that back-propagates (FileSummary::trainers).
  auto imported_trainer = [&](const CallSite& x) {
    return x.target_func == kNone && f.project && f.project->imported_trainers.count(f.e(f.e(x.call).kids[0]).qname);
  };
  auto backprop = [&](const CallSite& x) { return f.is_backprop(x); };
  // The construction of a class with a method that back-propagates, that method then called on
  // the object among `calls` (`trainer = Trainer(model, lr); trainer.fit(loader)`, or
  // `Trainer(model).fit(loader)`): another module's class, as the file imports it
  // (FileSummary::backprop_methods), or the file's own. A trainer only built to evaluate
  // (`trainer.predict(loader)`) trains nothing.
  auto trained_through_its_object = [&](const CallSite& x, const std::vector<int>& calls) {
    const std::string& q = f.callee_qual(x.call);
    Id k = kNone;
    if (const Expr& callee = f.e(f.e(x.call).kids[0]); callee.kind == ExprKind::Name && callee.qname.empty())
      k = f.class_at(callee.text, f.e(x.call).range.begin);
    if (k == kNone && (q.empty() || !f.project || f.project->backprop_method_imports.empty())) return false;
    auto backprop_method = [&](std::string_view m) {
      if (k == kNone) return f.project->backprop_method_imports.count(q + "." + std::string(m)) > 0;
      for (Id g = 0; g < f.m.funcs.size(); ++g)
        if (f.m.funcs[g].cls == k && f.m.funcs[g].name == m && f.reaches(g, backprop)) return true;
      return false;
    };
    std::string obj;
    if (x.stmt != kNone) {
      const Stmt& st = f.m.s(x.stmt);
      if (st.kind == StmtKind::Assign && st.value == x.call && st.targets.size() == 1) obj = f.dotted(st.targets[0]);
    }
    for (int yi : calls) {
      const CallSite& y = f.calls[yi];
      const Id r = f.callee_receiver(y.call);
      if (r != kNone && (r == x.call || (!obj.empty() && f.dotted(r) == obj)) && backprop_method(f.callee_attr(y.call)))
        return true;
    }
    return false;
  };
  // A same-file function handed the model that hands it, under its parameter's name, to such
  // a trainer (`prune_model(model)` fine-tuning through `utility.training.train_epoch(model)`,
  // `StepByStep(model, loss_fn, optimizer)` whose `train()` back-propagates); not one that
  // trains something else it builds (a probe over the frozen model's features).
  auto trains_through_import = [&](const CallSite& c) {
    if (c.target_func == kNone) return false;
    for (const std::string& p : f.m.funcs[c.target_func].params) {
      const Id a = f.argument_for(c.call, c.target_func, p);
      if (a == kNone || f.dotted(f.unplaced(a)) != d) continue;
      for (int xi : f.calls_in(c.target_func)) {
        const CallSite& x = f.calls[xi];
        if (!imported_trainer(x) && !trained_through_its_object(x, f.calls_in(c.target_func))) continue;
        const Expr& xe = f.e(x.call);
        for (size_t k = 1; k < xe.kids.size(); ++k)
          if (f.dotted(f.unplaced(xe.kids[k])) == p) return true;
      }
    }
    return false;
  };
  auto handed = [&](Id call) {
    const Expr& x = f.e(call);
    for (size_t k = 1; k < x.kids.size(); ++k) {
      Id a = x.kids[k];
      if (f.e(a).kind == ExprKind::Call && in(f.callee_attr(a), {"parameters", "named_parameters"}))
        a = f.callee_receiver(a);
      if (a != kNone && f.dotted(f.unplaced(a)) == d) return true;
    }
    return false;
  };
  bool optimizer_over_d = false, steps = false;
  for (int ci : L.calls) {
    const CallSite& c = f.calls[ci];
    if (c.func != L.func) continue;
    if (f.optimizer_of_step(c) != kNone) steps = true;
    // The model trains itself: a method of it that back-propagates, or one whose name says it
    // trains and that is handed what to train on (`model.train_model(epochs, loaders)`,
    // `net.fit(x, y)`; not the mode switch `model.train()`).
    if (Id r = f.callee_receiver(c.call); r != kNone && f.dotted(f.unplaced(r)) == d) {
      if (c.target_func != kNone && c.target_func != c.func && f.reaches(c.target_func, backprop)) return true;
      if (c.target_func == kNone && f.e(c.call).kids.size() > 1 && !mode_switch(f, c.call))
        for (const auto& t : Facts::name_tokens(f.callee_attr(c.call)))
          if (in(t, {"train"sv, "fit"sv})) return true;
    }
    if (!handed(c.call)) continue;
    if (starts_with(f.callee_qual(c.call), "torch.optim.")) optimizer_over_d = true;
    if (f.framework_fit(c)) return true;
    if (c.target_func != kNone && c.target_func != c.func && f.reaches(c.target_func, backprop)) return true;
    if (imported_trainer(c) || trained_through_its_object(c, L.calls) || trains_through_import(c)) return true;
  }
  return optimizer_over_d && steps;
}

}  // namespace

void summarize_LL301(const Facts& f, FileSummary& out) {
  for (Id k = 0; k < f.m.classes.size(); ++k) {
    if (!f.is_module_class(k)) continue;
    const long p = class_size(f, k).params;
    if (p >= 0) out.model_sizes.emplace_back(f.m.classes[k].name, p);
  }
  // Functions that back-propagate, directly or through the file's functions they call: one
  // pass over the reverse call graph (a walk per function is quadratic in a file of thousands).
  std::vector<char> trains(f.m.funcs.size(), 0);
  std::vector<std::vector<Id>> callers(f.m.funcs.size());
  std::vector<Id> work;
  // A function that builds an optimizer and steps it or hands it to a function (`meta_opt =
  // optim.Adam(maml.parameters()); fit(learner=maml, optimiser=meta_opt, ...)`) trains too,
  // wherever the backward runs: an optimizer is built to train. Not a builder that returns it
  // (also wrapped, with a scheduler: `return opt, sched`), nor one handed only to a class
  // (`Lookahead(opt)`, `CosineAnnealingLR(opt)`) or to torch. One pass over each function's
  // calls, whatever the number of optimizers in it.
  std::unordered_map<Id, std::unordered_set<std::string>> optimizers;  // function -> names bound to one
  for (const CallSite& c : f.calls) {
    if (c.func == kNone) continue;
    if (c.target_func != kNone && c.target_func != c.func) callers[c.target_func].push_back(c.func);
    if (!trains[c.func] && f.is_backprop(c)) {
      trains[c.func] = 1;
      work.push_back(c.func);
    }
    const std::string& q = f.callee_qual(c.call);
    if (starts_with(q, "torch.optim.") && q.find(".lr_scheduler") == std::string::npos && c.stmt != kNone &&
        f.m.s(c.stmt).kind == StmtKind::Assign && f.m.s(c.stmt).value == c.call && f.m.s(c.stmt).targets.size() == 1) {
      const std::string_view last = f.last_component(q);
      const std::string& name = f.dotted(f.m.s(c.stmt).targets[0]);
      if (!last.empty() && std::isupper(static_cast<unsigned char>(last[0])) && !name.empty())
        optimizers[c.func].insert(name);
    }
  }
  for (auto& [g, names] : optimizers) {
    if (trains[g]) continue;
    for (Id r : f.returned_values(g))  // a builder hands back what it built
      for_each_expr(f.m, r, [&](Id y) {
        if (f.e(y).kind == ExprKind::Name) names.erase(f.e(y).text);
        return !names.empty();
      });
    if (names.empty()) continue;
    for (int ci : f.calls_in(g)) {
      const CallSite& x = f.calls[ci];
      const Expr& xe = f.e(x.call);
      bool used = f.callee_attr(x.call) == "step"sv && names.count(f.dotted(f.callee_receiver(x.call)));
      const Expr& callee = f.e(xe.kids[0]);
      const std::string_view cname = callee.kind == ExprKind::Name || callee.kind == ExprKind::Attribute
                                         ? std::string_view(callee.text) : std::string_view();
      const bool function = !cname.empty() && std::islower(static_cast<unsigned char>(cname[0])) &&
                            !starts_with(f.callee_qual(x.call), "torch.") && f.callee_attr(x.call) != "load_state_dict"sv;
      for (size_t k = 1; k < xe.kids.size() && !used && function; ++k) used = names.count(f.dotted(xe.kids[k])) > 0;
      if (used) {
        trains[g] = 1;
        work.push_back(g);
        break;
      }
    }
  }
  while (!work.empty()) {
    const Id g = work.back();
    work.pop_back();
    for (Id caller : callers[g])
      if (!trains[caller]) {
        trains[caller] = 1;
        work.push_back(caller);
      }
  }
  for (Id g = 0; g < f.m.funcs.size(); ++g)
    if (trains[g] && f.m.funcs[g].parent == kNone) {
      if (f.m.funcs[g].cls == kNone) out.trainers.push_back(f.m.funcs[g].name);
      else out.backprop_methods.push_back(f.m.classes[f.m.funcs[g].cls].name + "." + f.m.funcs[g].name);
    }
}

// What the name holds when the rebinding runs: no binding that reaches it is a model (the
// empty list it starts as, the sum an earlier iteration left: `new_model = new_model + sm`),
// so there is no old model to release. Its own value from an earlier iteration counts as one.
bool plain_container(const Facts& f, Id func, Id v, int depth = 0) {
  const Expr& x = f.e(v);
  if (x.kind == ExprKind::Sequence || x.kind == ExprKind::Literal || x.kind == ExprKind::BinOp ||
      x.kind == ExprKind::Comprehension)
    return true;
  if (x.kind == ExprKind::Call)
    return (python_builtin_call(f, v) && in(f.e(x.kids[0]).text, {"list", "dict", "set", "tuple"})) ||
           in(f.callee_qual(v), {"collections.OrderedDict", "collections.defaultdict"});
  // A name holding one (`new_model = merged`, after `merged = OrderedDict(o)`).
  if (x.kind != ExprKind::Name || depth > 1) return false;
  const std::vector<Id> vs = f.bindings(func, x.text);
  if (vs.empty()) return false;
  for (Id w : vs)
    if (!plain_container(f, func, w, depth + 1)) return false;
  return true;
}

bool no_model_reaches(const Facts& f, Id func, Id target, Id sid) {
  const std::vector<Id> vs = f.bindings_at(func, f.dotted(target), target);
  if (vs.empty()) return false;
  for (Id v : vs)
    if (v == f.m.s(sid).value || !plain_container(f, func, v)) return false;
  return true;
}

void check_LL301(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  // One finding per switch: the rebindings of one name in one loop (or one method) are the
  // branches of one choice (`if arch == "a": model = A() elif ...: model = B()`); the others
  // are notes on the first.
  // (Collected first and reported after the walk: a Finding* does not outlive the next report.)
  struct Switch {
    Id sid, func;
    std::string d, once;
    std::vector<Id> others;
  };
  std::vector<Switch> switches;
  std::map<std::tuple<int, Id, std::string>, size_t> first;
  auto report_once = [&](int loop, Id sid, Id func, const std::string& d, const std::string& once = "") {
    auto [it, fresh] = first.try_emplace(std::make_tuple(loop, func, d), switches.size());
    if (!fresh) {
      switches[it->second].others.push_back(sid);
      return;
    }
    switches.push_back({sid, func, d, once, {}});
  };
  for (const StmtSite& site : f.stmt_sites) {
    const Stmt& s = f.m.s(site.stmt);
    if (s.kind != StmtKind::Assign || s.value == kNone || s.targets.size() != 1) continue;
    if (f.e(s.value).kind != ExprKind::Call) continue;
    Id t = s.targets[0];
    const std::string& d = f.dotted(t);
    if (d.empty()) continue;
    // Wrapping or moving the same model (`model = model.cuda()`, `model = DDP(model)`) is no switch.
    if (mentions(f, s.value, d)) continue;
    if (!loads_model(f, site.func, s.value, d)) continue;
    // A name that also holds another framework's objects (`new_layer = layers.Conv2D.from_config(cfg)`
    // beside `new_layer = layer.__class__.from_config(cfg)` over a Keras model's layers).
    // A value built by torch itself stays a switch (`model = torchvision.models.resnet50()` in
    // one branch, `model = keras.Sequential(...)` in another).
    if (holds_other_framework(f, site.func, d) && !evidently_torch(f, s.value)) continue;
    // A module's own methods build and replace its layers (`self.fc = nn.Identity()`).
    if (f.func_is_method_of_module(site.func)) continue;
    if (under_none_test(f, site.func, site.stmt, d)) continue;
    if (site.loop >= 0) {
      const Loop& L = f.loops[site.loop];
      if (L.stmt == kNone) continue;
      if (no_model_reaches(f, site.func, t, site.stmt)) continue;
      // Loops that all run once (`for batch in loader: ...; break`) never rebind.
      bool once = true;
      for (int l = site.loop; l >= 0 && once; l = f.loops[l].parent) once = constant_trips(f, l, 1) == 1;
      if (once) continue;
      if (stays_on_cpu(f, site.func, s.value, L.stmts, site.loop, d)) continue;
      const std::string builder = placed_out_of_sight(f, site.func, s.value, L.stmts, site.stmt, d);
      const bool likely_cpu = !builder.empty() && stays_on_cpu(f, site.func, s.value, L.stmts, site.loop, d, true);
      // Released in the iteration, or kept on purpose (an ensemble) in any enclosing loop.
      bool kept = releases(f, L.stmts, d, UINT32_MAX);
      for (int l = site.loop; l >= 0 && !kept; l = f.loops[l].parent) kept = stored(f, f.loops[l].stmts, d);
      if (kept) continue;
      // Trips of the loops around it, when all are constant (0: unknown).
      long trips = 1;
      for (int l = site.loop; l >= 0 && trips > 0; l = f.loops[l].parent) {
        const long t = constant_trips(f, l, 64);
        trips = t > 0 ? trips * t : 0;
      }
      // (Every binding of it in the loop must be selected so: an `else` branch binding it runs
      // on every other pass.)
      int bindings_here = 0, selected = 0;
      for (Id x : L.stmts)
        if (f.m.s(x).kind == StmtKind::Assign)
          for (Id t : f.m.s(x).targets)
            if (f.dotted(t) == d) {
              ++bindings_here;
              selected += on_one_iteration(f, site.loop, x) ? 1 : 0;
            }
      // Impact: an iteration that also trains (a sweep of trials, folds or seeds) holds, in its
      // training step, the parameters, gradients, optimizer state and activations of the models
      // it trains: more than the moment of old + new at the rebinding, which leaves the
      // program's peak where training puts it.
      // (Not when the old model outlives the rebinding through that training: idle while the loop
      // trains something else, handed back by the trainer, or kept under another name that is
      // not the optimizer the iteration rebuilds.)
      const bool trains = trains_the_model(f, site.loop, d) && !handed_back_in(f, site.func, L.stmts, d) &&
                          !aliased_in(f, L.stmts, d, /*but_optimizers=*/true, site.func, &f.m.s(L.stmt).body);
      const bool last = ends_the_loop_after(f, f.m.s(L.stmt).body, site.stmt) && loop_back_propagates(f, site.loop, d);
      report_once(site.loop, site.stmt, site.func, d,
                  likely_cpu
                      ? "where `" + builder + "` places the model is not shown, and the loop moves it to the device "
                        "after the rebinding: built on the CPU, the old model is dropped before the move, with no "
                        "peak of old + new"
                  : trains ? "each iteration trains with the model it builds, and a training step holds parameters, "
                           "gradients, optimizer state and activations: more than the moment of old + new at the "
                           "rebinding, so the program's peak stays where training puts it"
                  : last ? "the rebinding ends the training loop (a `break` follows it), so it runs once, and the "
                           "training before it holds parameters, gradients, optimizer state and activations: more "
                           "than the moment of old + new, so the program's peak stays where training puts it"
                  : bindings_here > 0 && selected == bindings_here
                      ? "each binding of it runs on the one iteration whose loop value the `if` around it selects, so "
                        "the old model is replaced a fixed few times at most, one peak of old + new each"
                  : trips == 2 ? "the loops around it run twice, so the old model is replaced once, one peak of old + new"
                               : "");
      continue;
    }
    // A method other than __init__ that replaces an existing self.<model>.
    if (site.func == kNone || d.rfind("self.", 0) != 0) continue;
    const Function& fn = f.m.funcs[site.func];
    if (fn.cls == kNone || fn.name == "__init__"sv) continue;
    const std::vector<Id>& method_stmts = f.stmts_in(site.func);
    if (releases(f, method_stmts, d, s.range.begin)) continue;
    // Loaded on the CPU and moved after the rebinding (`self.model = X.from_pretrained(dir)`,
    // then `self.model.to(device)`): the rebinding drops the old model before the move, unless
    // another method keeps it too (`self.opt = Adam(self.model.parameters())`).
    {
      // (Only what the object keeps: a local `trainer = Trainer(model=self.model)` dies with its call.)
      std::vector<Id> class_stmts;
      for (Id g : f.m.classes[fn.cls].methods) {
        if (g == site.func) continue;
        for (Id sid : f.stmts_in(g)) {
          const Stmt& os = f.m.s(sid);
          bool on_self = !os.targets.empty();
          for (Id t : os.targets) on_self = on_self && starts_with(f.dotted(t), "self.");
          if (on_self) class_stmts.push_back(sid);
        }
      }
      // (In the method itself, only a binding that reaches the rebinding can hold the old model:
      // an optimizer built after it, a local, holds the new one and dies with the call, and one
      // built in another branch of the `if` never runs before it.)
      std::vector<Id> before;
      for (Id sid : method_stmts) {
        const Stmt& b = f.m.s(sid);
        if (b.range.end > s.range.begin) continue;
        bool reaches = b.targets.empty();
        for (Id t : b.targets) {
          const std::string& n = f.dotted(t);
          if (n.empty()) {
            reaches = true;
            continue;
          }
          bool outside = false;
          for (const Def& df : f.flow().reaching(site.stmt, n, &outside)) reaches = reaches || df.stmt == sid;
        }
        if (reaches) before.push_back(sid);
      }
      if (!aliased_in(f, class_stmts, d) && stays_on_cpu(f, site.func, s.value, method_stmts, -1, d, false, &before))
        continue;
    }
    // Another method of the class binds it to a model too (an existing model is replaced;
    // a previous `None` is lazy initialisation, not a switch).
    bool existing = false;
    for (const StmtSite& o : f.stmt_sites) {
      if (o.func == site.func || o.func == kNone || f.m.funcs[o.func].cls != fn.cls) continue;
      const Stmt& os = f.m.s(o.stmt);
      if (os.kind == StmtKind::Assign)
        for (Id ot : os.targets)
          if (f.dotted(ot) == d && !(os.value != kNone && f.e(os.value).kind == ExprKind::Literal)) existing = true;
    }
    // Every call of the method in the file sits under `if not self.model:` (or `is None`):
    // lazy loading, which never replaces a model.
    bool calls = false, lazy = true;
    for (const CallSite& c : f.calls)
      if (c.target_func == site.func && c.func != site.func) {
        calls = true;
        lazy = lazy && c.stmt != kNone && under_none_test(f, c.func, c.stmt, d);
      }
    if (calls && lazy) continue;
    if (!existing) continue;
    // Impact: hot-swapping repeats the replacement; a method the file calls only outside loops
    // (a setup or load-time step) replaces the model once.
    bool repeated = !calls;
    for (const CallSite& c : f.calls)
      if (c.target_func == site.func && c.func != site.func && (c.loop >= 0 || c.in_lambda)) repeated = true;
    // A trainer's own reload (`load_model()` of a class whose other methods back-propagate),
    // called nowhere in the file: it loads a checkpoint around training, whose step holds
    // parameters, gradients, optimizer state and activations, more than old + new.
    std::string trainer;
    if (!calls)
      for (Id g : f.m.classes[fn.cls].methods)
        if (g != site.func && f.reaches(g, [&](const CallSite& x) { return f.is_backprop(x); })) {
          trainer = f.m.funcs[g].name;
          break;
        }
    report_once(-1, site.stmt, site.func, d,
                !trainer.empty()
                    ? "`" + fn.name + "` replaces the model of a class that trains it (`" + trainer +
                          "` back-propagates): a reload around training, whose step holds parameters, gradients, "
                          "optimizer state and activations, more than the moment of old + new"
                : repeated ? ""
                           : "every call of `" + fn.name + "` in the file runs outside loops, so the old model is "
                             "replaced once, one peak of old + new");
  }
  for (const Switch& w : switches) {
    Finding* fd = report(ctx, w.sid, w.func, w.d, w.once);
    if (!fd) continue;
    for (Id o : w.others) fd->notes.push_back({f.m.s(o).range, "`" + w.d + "` is also rebound to a new model here"});
  }
}

}  // namespace ll
