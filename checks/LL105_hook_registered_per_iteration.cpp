// LL105 hook-registered-per-iteration: a module or tensor hook registered once per batch
// (inside a training/evaluation loop, or in a function such a loop calls) whose handle is
// never removed. Each registration adds one more hook to a long-lived object: every pass
// runs all of them, and each closure keeps what it captured.
#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "checks/common.hpp"

namespace ll {
namespace {

bool is_module_hook(std::string_view a) {
  return a == "register_forward_hook"sv || a == "register_forward_pre_hook"sv || a == "register_full_backward_hook"sv ||
         a == "register_backward_hook"sv || a == "register_full_backward_pre_hook"sv;
}

// Is there a `.remove()` call (a handle's) in `func` or a function it reaches?
bool removes_in(const Facts& f, Id func) {
  return f.reaches(func, [&](const CallSite& x) {
    if (f.callee_attr(x.call) == "remove_hook"sv) return true;  // C++: tensor.remove_hook(pos)
    if (f.callee_attr(x.call) != "remove"sv) return false;
    // `list.remove(item)` takes an argument; a handle's remove() takes none.
    return f.e(x.call).kids.size() == 1;
  });
}

bool is_constructor(const Facts& f, Id func) {
  return func != kNone && f.class_of(func) != kNone && f.m.funcs[func].name == "__init__"sv;
}

// Does `func` (or what it reaches) call, on any receiver, a method of `cls` that removes a
// hook handle?
bool calls_remover_of(const Facts& f, Id cls, Id func) {
  std::set<std::string> removers;
  for (Id mf : f.m.classes[cls].methods)
    if (!is_constructor(f, mf) && removes_in(f, mf)) removers.insert(f.m.funcs[mf].name);
  if (removers.empty()) return false;
  return f.reaches(func, [&](const CallSite& x) {
    const std::string& a = f.callee_attr(x.call);
    return !a.empty() && removers.count(a) != 0;
  });
}

// Is the object built as a `with` item (`with GradCAM(model, layer) as cam:`) of a class whose
// `__exit__` removes its handles? Leaving the block removes the hook.
bool exit_removes(const Facts& f, Id cls, const CallSite& built) {
  if (built.stmt == kNone || f.m.s(built.stmt).kind != StmtKind::With) return false;
  const auto& items = f.m.s(built.stmt).items;
  if (std::find(items.begin(), items.end(), built.call) == items.end()) return false;
  for (Id mf : f.m.classes[cls].methods)
    if (f.m.funcs[mf].name == "__exit__"sv && removes_in(f, mf)) return true;
  return false;
}

// A loop variable bound by iterating `.parameters()` / `.named_parameters()` of something:
// the tensor is a parameter that lives as long as the model.
bool is_parameter_loop_target(const Facts& f, Id func, const std::string& name) {
  for (const Loop& l : f.loops) {
    if (l.func != func || l.stmt == kNone || l.iter == kNone) continue;
    const Stmt& s = f.m.s(l.stmt);
    bool binds = false;
    for (Id t : s.targets)
      for_each_expr(f.m, t, [&](Id x) {
        if (f.dotted(x) == name) binds = true;
        return !binds;
      });
    if (!binds) continue;
    if (iterates_parameters(f, l.iter)) return true;
  }
  return false;
}

// Is the hooked object created inside the loop (a fresh module or an intermediate tensor,
// or a module of one), so that its hooks die with it at the end of the iteration?
std::string root_name(const std::string& dotted);

// A call that looks up a part of the module it is called on: `model.get_submodule("layer4")`,
// `model._modules.get("layer4")`, `model.__getattr__("fc")`.
bool part_lookup(const Facts& f, Id call) {
  if (f.e(call).kind != ExprKind::Call || f.callee_receiver(call) == kNone) return false;
  const std::string& a = f.callee_attr(call);
  return a == "get_submodule"sv || a == "__getattr__"sv ||
         (a == "get"sv && f.last_component(f.dotted(f.callee_receiver(call))) == "_modules"sv);
}

// The object an expression is a part of: `net` of `net[0]`, `model` of `model.layer4[-1].conv3`,
// `self.net` of `self.net.fc`, `model` of `model._modules.get("layer4")`.
std::string root_of(const Facts& f, Id x) {
  std::string root;
  while (root.empty() && x != kNone) {
    root = root_name(f.dotted(x));
    const Expr& ex = f.e(x);
    if (!root.empty()) break;
    if ((ex.kind == ExprKind::Subscript || ex.kind == ExprKind::Attribute) && !ex.kids.empty()) {
      x = ex.kids[0];
    } else if (ex.kind == ExprKind::Call && ex.kids.size() >= 3 && f.e(ex.kids[0]).kind == ExprKind::Name &&
               f.e(ex.kids[0]).text == "getattr"sv && f.qual(ex.kids[0]).empty()) {
      x = ex.kids[1];  // `getattr(model, name)`: a part of `model`
    } else if (part_lookup(f, x)) {
      x = f.callee_receiver(x);
    } else {
      x = kNone;
    }
  }
  return root;
}

bool receiver_fresh_in_loop(const Facts& f, int loop, Id func, const std::string& root, int depth = 0) {
  if (loop < 0 || root.empty() || depth > 3) return false;
  // Bound by a `for` header: the loop's own target (`for net in build_nets():` hooks a
  // different object every iteration, once each), or an inner loop's over the modules of a
  // fresh object (`for m in net.modules():`).
  auto binds_root = [&](const Loop& l) {
    bool hit = false;
    for (Id t : f.m.s(l.stmt).targets)
      for_each_expr(f.m, t, [&](Id x) {
        if (f.dotted(x) == root) hit = true;
        return !hit;
      });
    return hit;
  };
  for (int li = 0; li < static_cast<int>(f.loops.size()); ++li) {
    const Loop& l = f.loops[li];
    if (l.func != f.loops[loop].func || l.stmt == kNone || l.iter == kNone || !binds_root(l)) continue;
    if (li == loop) {
      // Objects a function makes as the loop asks (`for net in sample_archs(space):`); a
      // stored list (`for net in nets:`) hands out the same objects every pass.
      const Expr& it = f.e(l.iter);
      return it.kind == ExprKind::Call && f.e(it.kids[0]).kind == ExprKind::Name;
    }
    bool inside = false;
    for (int p = l.parent; p >= 0 && !inside; p = f.loops[p].parent) inside = p == loop;
    if (!inside) continue;
    bool fresh = false;
    for_each_expr(f.m, l.iter, [&](Id x) {
      const std::string& d = f.dotted(x);
      if (!d.empty() && f.e(x).kind == ExprKind::Name)
        fresh = fresh || receiver_fresh_in_loop(f, loop, func, d, depth + 1);
      return !fresh;
    });
    if (fresh) return true;
  }
  for (Id sid : f.loops[loop].stmts) {
    const Stmt& s = f.m.s(sid);
    if ((s.kind != StmtKind::Assign && s.kind != StmtKind::AnnAssign) || s.value == kNone) continue;
    bool hit = false;
    for (Id t : s.targets)
      for_each_expr(f.m, t, [&](Id x) {
        if (f.dotted(x) == root) hit = true;
        return !hit && (f.e(x).kind == ExprKind::Sequence || f.e(x).kind == ExprKind::Starred);
      });
    if (!hit) continue;
    ExprKind k = f.e(s.value).kind;
    // `layer = model.layer4` (or `model.get_submodule(name)`, `net[0]`) aliases a part of
    // `model`: fresh when `model` is, long-lived otherwise. A call or arithmetic makes a new object.
    const Expr& ve = f.e(s.value);
    const bool by_getattr = k == ExprKind::Call && ve.kids.size() >= 3 && f.e(ve.kids[0]).kind == ExprKind::Name &&
                            f.e(ve.kids[0]).text == "getattr"sv && f.qual(ve.kids[0]).empty();
    const bool part = k == ExprKind::Attribute || k == ExprKind::Subscript || by_getattr ||
                      part_lookup(f, s.value);
    if (part) {
      const std::string whole =
          root_of(f, k == ExprKind::Call && !by_getattr ? f.callee_receiver(s.value) : s.value);
      if (!whole.empty() && whole != root && receiver_fresh_in_loop(f, loop, func, whole, depth + 1)) return true;
      continue;
    }
    if (k == ExprKind::Call || k == ExprKind::BinOp || k == ExprKind::UnaryOp || k == ExprKind::Conditional)
      return true;
  }
  (void)func;
  return false;
}

std::string root_name(const std::string& dotted) {
  if (dotted.rfind("self.", 0) == 0) {
    size_t p = dotted.find('.', 5);
    return p == std::string::npos ? dotted : dotted.substr(0, p);
  }
  return dotted.substr(0, dotted.find('.'));
}

// Is `root` (`self.conv`, or a local) a new object made by the constructor itself
// (`nn.Conv2d(...)`, `nn.Sequential(...)`, `copy.deepcopy(model)`, or a network it loads:
// `torch.hub.load(...)`, `clip.load(...)`, `from_pretrained(...)`, a torchvision builder),
// rather than something its caller handed in (`model`, `model.layer4`, `getattr(model, name)`,
// `model.to(device)`)?
bool built_by_constructor(const Facts& f, Id ctor, const std::string& root) {
  if (root.empty()) return false;
  std::vector<Id> values = f.bindings(ctor, root);
  if (values.empty()) return false;
  for (Id v : values) {
    if (f.e(v).kind != ExprKind::Call) return false;
    const std::string& d = f.dotted(f.e(v).kids[0]);
    std::string_view last = f.last_component(d);
    if (last.empty()) return false;
    if (!std::isupper(static_cast<unsigned char>(last[0])) &&
        !in(last, {"deepcopy"sv, "load"sv, "from_pretrained"sv, "create_model"sv}) &&
        !torchvision_model_builder(f.callee_qual(v)))
      return false;
  }
  return true;
}

// A call whose only per-batch loop is a sweep over a short list written out in the code (`for
// name in ["conv1", "conv2", "conv3"]: cam = GradCAM(model, name)`, each round a whole pass of
// its own inner loop): it runs a handful of times, once per item, not once per batch.
static bool in_a_sweep_only(const Facts& f, const CallSite& x) {
  constexpr size_t kSweepItems = 16;
  bool sweep = false;
  for (int l = x.loop; l >= 0; l = f.loops[l].parent) {
    const Id it = f.loops[l].iter;
    const bool literal = it != kNone && f.e(it).kind == ExprKind::Sequence && f.e(it).kids.size() <= kSweepItems;
    if (!literal && per_batch_loop(f, l)) return false;
    sweep = sweep || literal;
  }
  return sweep;
}

// How often loop `loop` runs its body, for the message: once per batch when the loop itself
// iterates batches or an evaluation set, or its own body (not a loop nested in it) runs a
// forward, a backward or an optimizer step; otherwise each iteration runs a whole pass through
// a function or a loop nested in it (a pruning round, an epoch), and the hook piles up once per
// such round.
std::string how_often(const Facts& f, int loop) {
  if (iterates_batches(f, loop) || f.is_eval_source(f.loops[loop].iter)) return "once per batch";
  std::string through;
  for (int ci : f.loops[loop].calls) {
    const CallSite& x = f.calls[ci];
    if (x.in_lambda || x.loop != loop) continue;
    if (f.is_model_call(x) || f.is_backprop(x) || f.optimizer_of_step(x) != kNone) return "once per batch";
    if (through.empty() && x.target_func != kNone && x.target_func != x.func &&
        f.reaches(x.target_func, [&](const CallSite& y) { return f.is_backprop(y) || f.is_model_call(y); }))
      through = f.m.funcs[x.target_func].name;
  }
  return "once per iteration of the loop around it (each a whole pass" +
         (through.empty() ? std::string(" over the batches") : " through `" + through + "()`") + "),";
}

// What the hook's closure keeps, when every piece of it is plainly not a tensor: the hook is a
// factory's result (`capture(feats, "student")`) handed literals and names bound in the
// function only to an empty dict (the dict the hook writes outputs into, by key, so each hook
// holds the latest output) that nothing else in the function stores into. A list grows with
// every forward (`store.append(output)`), and a dict the function fills (`cache["ref"] = t`)
// keeps that per hook. The names of those dicts, else empty.
std::string containers_only(const Facts& f, const CallSite& c) {
  const Expr& call = f.e(c.call);
  if (call.kids.size() < 2) return {};
  const Expr& hook = f.e(call.kids[1]);
  if (hook.kind != ExprKind::Call || f.e(hook.kids[0]).kind != ExprKind::Name) return {};
  const std::vector<Id> kept(hook.kids.begin() + 1, hook.kids.end());
  // Does a statement of the function store into `name` (`name[k] = v`, `name.update(...)`)?
  auto filled = [&](const std::string& name) {
    for (Id sid : f.stmts_in(c.func)) {
      const Stmt& st = f.m.s(sid);
      if (st.kind == StmtKind::Assign || st.kind == StmtKind::AugAssign)
        for (Id t : st.targets) {
          bool hit = false;
          for_each_expr(f.m, t, [&](Id y) {
            const Expr& e = f.e(y);
            hit = hit || (e.kind == ExprKind::Subscript && !e.kids.empty() && f.dotted(e.kids[0]) == name);
            return !hit;
          });
          if (hit) return true;
        }
      if (st.kind == StmtKind::Expr && st.value != kNone && f.e(st.value).kind == ExprKind::Call &&
          f.dotted(f.callee_receiver(st.value)) == name &&
          in(f.callee_attr(st.value), {"update", "setdefault", "__setitem__"}))
        return true;
    }
    return false;
  };
  std::string names;
  for (Id k : kept) {
    const Expr& v = f.e(k);
    if (v.kind == ExprKind::Literal) continue;
    if (v.kind != ExprKind::Name) return {};
    const std::vector<Id> vals = f.bindings(c.func, v.text);
    if (vals.empty()) return {};
    for (Id b : vals) {
      const Expr& d = f.e(b);
      const bool empty_display = d.kind == ExprKind::Sequence && d.kids.empty() && d.text == "dict"sv;
      const bool empty_call = d.kind == ExprKind::Call && d.kids.size() == 1 && f.e(d.kids[0]).kind == ExprKind::Name &&
                              f.e(d.kids[0]).text == "dict"sv;
      if (!empty_display && !empty_call) return {};
    }
    if (filled(v.text)) return {};
    names += (names.empty() ? "`" : ", `") + v.text + "`";
  }
  return names;
}

// A registration in a method of one of the file's classes that keeps no way to undo it: the
// handle is discarded, or kept and never removed in the method nor handed back, and the class
// offers no method that removes it. Such a method (or constructor), called once per iteration by a loop
// of another file, piles the hooks up there (FileSummary::hooking_methods).
bool hooks_for_good(const Facts& f, const CallSite& c) {
  const Id cls = c.func == kNone ? kNone : f.class_of(c.func);
  if (cls == kNone || c.in_lambda || c.stmt == kNone) return false;
  const Stmt& st = f.m.s(c.stmt);
  if (st.kind == StmtKind::With || st.kind == StmtKind::Return) return false;
  if (!(st.kind == StmtKind::Expr && st.value == c.call) && removes_in(f, c.func)) return false;
  for (Id mf : f.m.classes[cls].methods)
    if (mf != c.func && removes_in(f, mf)) return false;
  return true;
}

}  // namespace

void summarize_LL105(const Facts& f, FileSummary& out) {
  // (Only the calls of methods: a registration outside a class's methods hooks nothing of it.)
  std::vector<int> in_methods;
  for (const Class& k : f.m.classes)
    for (Id mi : k.methods) in_methods.insert(in_methods.end(), f.calls_in(mi).begin(), f.calls_in(mi).end());
  for (int ci : in_methods) {
    const CallSite& c = f.calls[ci];
    const std::string& attr = f.callee_attr(c.call);
    if (attr.size() < 13 || attr.compare(0, 9, "register_") != 0) continue;  // (most calls)
    if (!is_module_hook(attr) && attr != "register_hook"sv) continue;
    const Id recv = f.callee_receiver(c.call);
    if (recv == kNone || !f.qual(recv).empty() || batch_loop_of(f, c) >= 0 || !hooks_for_good(f, c)) continue;
    const std::string key = f.m.classes[f.class_of(c.func)].name + "." + f.m.funcs[c.func].name;
    if (std::find(out.hooking_methods.begin(), out.hooking_methods.end(), key) == out.hooking_methods.end())
      out.hooking_methods.push_back(key);
  }
}

namespace {

// A loop of another file of the run (ProjectView::loop_called_hooks) that calls the method
// holding the registration, or builds its class, once per iteration: the caller's path and
// whether that loop runs once per batch, or nothing.
std::optional<std::pair<std::string, bool>> caller_elsewhere(const Facts& f, const CallSite& c) {
  if (!f.project || f.project->loop_called_hooks.empty() || !hooks_for_good(f, c)) return std::nullopt;
  auto it = f.project->loop_called_hooks.find(f.m.classes[f.class_of(c.func)].name + "." + f.m.funcs[c.func].name);
  if (it == f.project->loop_called_hooks.end()) return std::nullopt;
  std::optional<std::pair<std::string, bool>> out;
  for (const auto& [call, path] : it->second)
    if (!out || (call->batch_loop && !out->second)) out = std::make_pair(path, call->batch_loop);
  return out;
}

}  // namespace

void check_LL105(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  for (const CallSite& c : f.calls) {
    if (c.in_lambda) continue;
    const std::string& attr = f.callee_attr(c.call);
    const bool module_hook = is_module_hook(attr);
    if (!module_hook && attr != "register_hook"sv) continue;
    Id recv = f.callee_receiver(c.call);
    if (recv == kNone) continue;
    const std::string& rd = f.dotted(recv);
    // Not torch: `atexit.register`, `signal`... (their callee names differ anyway);
    // an imported module's function named register_hook (`pkg.register_hook(fn)`).
    if (!f.qual(recv).empty()) continue;

    // Where it runs once per batch: a loop in its own function, or a loop that calls its
    // function (one level up).
    int loop = batch_loop_of(f, c);
    const CallSite* caller = nullptr;
    // A loop of another file that calls the method (or builds the class) once per iteration.
    std::optional<std::pair<std::string, bool>> elsewhere;
    if (loop < 0) {
      // (Also from a setup loop of the function, over modules or parameters: each call of the
      // function registers a hook on every one of them, `for m in self.convs:
      // m.register_forward_hook(h)` in a pruning helper's method called once per round.)
      if (c.func == kNone) continue;
      // A constructor runs where its class is instantiated: `cam = GradCAM(model, layer)`.
      const Id ctor_of = is_constructor(f, c.func) ? f.class_of(c.func) : kNone;
      // (A caller that hands in a part of a network its loop builds afresh each iteration,
      // `GradCAM(model, model.layer4[-1])` after `model = resnet50(...)`, hooks what dies with
      // the network; any other per-batch caller is the one that leaks.)
      const std::string handed = root_of(f, recv);
      auto hands_fresh = [&](const CallSite& x) {
        if (!f.is_param(c.func, handed)) return false;
        const Id given = f.argument_for(x.call, c.func, handed);
        return given != kNone && receiver_fresh_in_loop(f, batch_loop_of(f, x), x.func, root_of(f, given));
      };
      // (Likewise a method of a helper object the loop builds afresh around a network it also
      // builds afresh, `model = VGG(cfg); pruner = Pruning(model); pruner.thinet(rate)`: the
      // hooks die with that network. Around a network that lives on, they pile up.)
      auto helper_over_fresh = [&](const CallSite& x) {
        const Id cls = f.class_of(c.func);
        const Id obj = f.callee_receiver(x.call);
        if (cls == kNone || ctor_of != kNone || obj == kNone || f.e(obj).kind != ExprKind::Name) return false;
        // (Fresh in the loop right around the call: an inner round loop over the same network,
        // `for rate in rates: Pruning(model).thinet(rate)`, piles up hooks on it.)
        const int lx = x.loop;
        bool any = false;
        for (Id v : f.bindings(x.func, f.e(obj).text)) {
          if (f.e(v).kind != ExprKind::Call || f.constructed_class(v) != cls) return false;
          for (size_t k = 1; k < f.e(v).kids.size(); ++k) {
            const std::string r = root_of(f, f.e(v).kids[k]);
            if (r.empty() || !receiver_fresh_in_loop(f, lx, x.func, r)) return false;
            any = true;
          }
        }
        return any;
      };
      for (const CallSite& x : f.calls)
        if ((x.target_func == c.func || (ctor_of != kNone && f.constructed_class(x.call) == ctor_of)) &&
            x.func != c.func && !x.in_lambda && batch_loop_of(f, x) >= 0 && !hands_fresh(x) && !helper_over_fresh(x) &&
            !in_a_sweep_only(f, x)) {
          caller = &x;
          break;
        }
      if (!caller) elsewhere = caller_elsewhere(f, c);
      if (!caller && !elsewhere) continue;
      // An object built per batch hooks its own new submodules (`self.conv = nn.Conv2d(...)`):
      // they die with it. What it was handed (`model`, `self.model = model`) lives on.
      if (ctor_of != kNone && built_by_constructor(f, c.func, root_of(f, recv))) continue;
    }

    // The handle: discarded, kept in a `with`, or stored/returned and removed somewhere.
    const Stmt& st = f.m.s(c.stmt);
    bool discarded = st.kind == StmtKind::Expr && st.value == c.call;
    if (st.kind == StmtKind::With) continue;  // `with m.register_forward_hook(h):` removes on exit
    if (!discarded) {
      if (removes_in(f, c.func)) continue;
      if (loop >= 0 && f.loop_reaches(loop, [&](const CallSite& x) {
            return (f.callee_attr(x.call) == "remove"sv && f.e(x.call).kids.size() == 1) ||
                   f.callee_attr(x.call) == "remove_hook"sv;
          }))
        continue;
      if (caller && removes_in(f, caller->func)) continue;
      // A hook object built per batch that keeps its handle (`self.hook = ...`) and offers a
      // method removing it (`def close(self): self.hook.remove()`): calling that method,
      // whatever holds the object (`for h in hooks: h.close()`), removes the hook.
      if (caller && is_constructor(f, c.func) && calls_remover_of(f, f.class_of(c.func), caller->func)) continue;
      if (caller && is_constructor(f, c.func) && exit_removes(f, f.class_of(c.func), *caller)) continue;
      // Returned to a caller in another file, or kept for later: nothing here says it leaks.
      if (st.kind == StmtKind::Return) continue;
    }

    // The hooked object must outlive the iteration. (Its root through indexing too: `net[0]`,
    // `model.blocks[3].attn` hook a part of `net`, of `model`.)
    std::string root = root_of(f, recv);
    if (loop >= 0 && receiver_fresh_in_loop(f, loop, c.func, root)) continue;
    if (!module_hook) {
      // A tensor hook on an intermediate tensor dies with it; one on a parameter (or a
      // tensor made before the loop) stays.
      std::string last(f.last_component(rd));
      bool param = is_parameter_loop_target(f, c.func, rd) || last == "weight"sv || last == "bias"sv ||
                   rd.rfind("self.", 0) == 0;
      if (!param) {
        if (caller || elsewhere) continue;  // a parameter of the per-batch function: an activation, most likely
        if (rd.empty() || assigned_in_loop(f, loop, root)) continue;
        // A name bound before the loop in the same function: a leaf tensor that lives on.
        bool torch_tensor = false;
        for (Id v : f.bindings(c.func, root))
          if (f.e(v).kind == ExprKind::Call && f.callee_qual(v).rfind("torch.", 0) == 0) torch_tensor = true;
        if (!torch_tensor) continue;
      }
    }

    std::string what = "`" + (rd.empty() ? ctx.brief(recv) : rd) + "`";
    if (!module_hook && is_parameter_loop_target(f, c.func, rd)) what = "every parameter";
    std::string where = loop >= 0 ? how_often(f, loop) : "once per batch";
    // A function called once per round of a loop whose rounds are whole passes (an epoch loop
    // calling `train_one_epoch()`, which walks the batches itself): the hook piles up once per
    // call, not once per batch.
    bool per_pass = false;
    if (caller && !is_constructor(f, c.func)) {
      for (size_t l = 0; l < f.loops.size() && !per_pass; ++l)
        per_pass = f.loops[l].func == c.func && iterates_batches(f, static_cast<int>(l));
      per_pass = per_pass || how_often(f, batch_loop_of(f, *caller)) != "once per batch";
    }
    if (elsewhere) {
      const std::string per = elsewhere->second ? "once per batch" : "once per iteration of a loop";
      where = is_constructor(f, c.func)
                  ? "in the constructor of `" + f.m.classes[f.class_of(c.func)].name + "`, built " + per + " in `" +
                        elsewhere->first + "`,"
                  : "in `" + f.m.funcs[c.func].name + "`, called " + per + " in `" + elsewhere->first + "`,";
    } else if (caller && is_constructor(f, c.func))
      where = "in the constructor of `" + f.m.classes[f.class_of(c.func)].name + "`, built once per batch,";
    else if (per_pass)
      where = "in `" + f.m.funcs[c.func].name +
              "`, called once per iteration of the loop around the call (each call a whole pass over the batches),";
    else if (caller)
      where = "in `" + f.m.funcs[c.func].name + "`, called once per batch,";
    const bool cpp = f.m.lang == Lang::Cpp;
    std::string handle_state = discarded ? (cpp ? "the index it returns is dropped" : "its handle is discarded")
                                         : (cpp ? "it is never `remove_hook()`ed" : "its handle is never `remove()`d");
    const char* pass = attr.find("forward") != std::string::npos ? "forward" : "backward";
    // A name bound to another module each iteration (`module = model.get_submodule(name)`): the
    // hooks stay behind on every module it held, not on one.
    // (In a function called per round: a name its own setup loop walks, `for m in convs:`.)
    auto walked = [&](int l) {
      for (; l >= 0; l = f.loops[l].parent) {
        const Id ls = f.loops[l].stmt;
        if (ls == kNone || f.m.s(ls).kind != StmtKind::For) continue;
        for (Id t : f.m.s(ls).targets)
          if (t != kNone && f.dotted(t) == root) return true;
      }
      return false;
    };
    const std::string pile = !root.empty() && root == rd &&
                                     (loop >= 0 ? assigned_in_loop(f, loop, root) : caller && walked(c.loop))
                                 ? "hooks stay behind on every module " + what + " holds in turn"
                                 : "hooks pile up on " + what;
    std::string message = "`" + attr + "` on " + what + " runs " + where + " and " + handle_state +
                          ": " + pile + " (every " + pass +
                          " runs all of them) and each keeps what its closure captured alive; register it once "
                          "before the loop, or " +
                          (f.m.lang == Lang::Cpp ? std::string("keep the index it returns and call `remove_hook(index)`")
                                                 : std::string("keep the handle and call `handle.remove()`")) +
                          " in the same iteration";
    // Impact: hooks that pile up once per pass (an epoch, a round), not per batch, whose closures
    // keep only the containers they write outputs into: every one of them stores the same
    // output there, so what grows is a call per hook per forward, once per pass.
    const std::string containers = where != "once per batch" ? containers_only(f, c) : std::string();
    Finding* fd = elsewhere && !elsewhere->second
                      ? ctx.report_weak("LL105", f.e(c.call).range, message,
                                        "the loop of `" + elsewhere->first +
                                            "` that reaches it does not iterate batches: the hooks pile up once per "
                                            "round of that loop, as many times as it has rounds")
                  : containers.empty()
                      ? ctx.report("LL105", f.e(c.call).range, message)
                      : ctx.report_weak("LL105", f.e(c.call).range, message,
                                        "it piles up once per pass, not per batch, and each hook keeps only " + containers +
                                            ", which all of them fill with the same output: what grows is one call "
                                            "per forward per pass");
    if (fd && loop >= 0 && where != "once per batch")
      fd->notes.push_back({f.loops[loop].range, "each iteration of this loop runs a whole pass"});
    if (fd && caller)
      fd->notes.push_back({f.e(caller->call).range, is_constructor(f, c.func) ? "built once per batch here"
                                                    : per_pass ? "called here, once per iteration of this loop"
                                                               : "called once per batch here"});
  }
}

}  // namespace ll
