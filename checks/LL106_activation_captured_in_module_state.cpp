// LL106 activation-captured-in-module-state: a forward() or a hook appends a tensor that
// carries autograd history to a container that outlives the batch (`self.<attr>`, a
// module-level list, a closure variable): every batch's graph stays reachable from the
// model through that container.
#include <optional>
#include <set>

#include "checks/common.hpp"

namespace ll {
namespace {

// Forward hooks see the module's inputs and outputs, which carry history. Backward hooks and
// tensor hooks see gradients, which carry none unless backward(create_graph=True) ran.
bool is_hook_registration(std::string_view a) {
  return a == "register_forward_hook"sv || a == "register_forward_pre_hook"sv;
}

// A string literal or f-string.
bool string_literal(const Facts& f, Id x) {
  const Expr& e = f.e(x);
  return e.kind == ExprKind::FString || (e.kind == ExprKind::Literal && e.lit == LitKind::String);
}

// Does the expression drop autograd history (detach, item, tolist, numpy, float, shapes, text)?
bool detached(const Facts& f, Id v) {
  bool yes = false;
  for_each_expr(f.m, v, [&](Id x) {
    const Expr& e = f.e(x);
    // Text built from it (`"Used: " + ", ".join(names)`, `"%s" % x`, `"{}".format(x)`): a string.
    if (e.kind == ExprKind::BinOp && (e.text == "+"sv || e.text == "%"sv) && e.kids.size() == 2 &&
        (string_literal(f, e.kids[0]) || string_literal(f, e.kids[1])))
      yes = true;
    if (e.kind == ExprKind::Call && in(f.callee_attr(x), {"join", "format"}) && f.callee_receiver(x) != kNone &&
        string_literal(f, f.callee_receiver(x)))
      yes = true;
    if (yes) return false;
    if (e.kind == ExprKind::Call) {
      const std::string& a = f.callee_attr(x);
      if (a == "detach"sv || a == "item"sv || a == "tolist"sv || a == "numpy"sv || a == "detach_"sv || a == "size"sv ||
          a == "dim"sv || a == "numel"sv || registers_a_hook(a))
        yes = true;
      Id callee = e.kids[0];
      // A helper that converts to a host array, by its name (`torch_to_numpy(y)`, `to_np(y)`).
      if (f.e(callee).kind == ExprKind::Name || f.e(callee).kind == ExprKind::Attribute) {
        const auto toks = Facts::name_tokens(f.e(callee).text);
        if (!toks.empty() && (toks.back() == "numpy"sv || toks.back() == "np"sv) && toks.size() >= 2) yes = true;
      }
      if (f.e(callee).kind == ExprKind::Name &&
          (f.e(callee).text == "float"sv || f.e(callee).text == "int"sv || f.e(callee).text == "len"sv ||
           f.e(callee).text == "str"sv || f.e(callee).text == "bool"sv || f.e(callee).text == "type"sv ||
           f.e(callee).text == "id"sv || f.e(callee).text == "tuple"sv || f.e(callee).text == "isinstance"sv))
        yes = true;
    }
    if (e.kind == ExprKind::Attribute && (e.text == "data"sv || e.text == "shape"sv || e.text == "dtype"sv ||
                                          e.text == "device"sv || e.text == "__class__"sv || e.text == "__name__"sv))
      yes = true;
    if (e.kind == ExprKind::Literal || e.kind == ExprKind::FString) yes = yes || x == v;
    return !yes;
  });
  return yes;
}

// The parameters (and names assigned from them, transitively) of a function: the tensors a
// forward or a hook receives and what it computes from them.
bool from_inputs(const Facts& f, Id func, Id v, const std::vector<std::string>& params, int depth = 0) {
  if (v == kNone || depth > 5) return false;
  bool hit = false;
  for_each_expr(f.m, v, [&](Id x) {
    const Expr& e = f.e(x);
    if (e.kind == ExprKind::Call) {
      // A model or layer call inside forward: `self.block(x)`.
      Id callee = e.kids[0];
      const std::string& d = f.dotted(callee);
      if (d.rfind("self.", 0) == 0 && func != kNone && f.func_is_method_of_module(func)) hit = true;
    }
    if (e.kind == ExprKind::Name) {
      for (const auto& p : params)
        if (p == e.text && p != "self"sv && p != "module"sv && p != "m"sv && p != "name"sv) hit = true;
      if (!hit && depth < 5)
        for (const StmtSite& ss : f.stmt_sites) {
          if (ss.func != func) continue;
          const Stmt& st = f.m.s(ss.stmt);
          if ((st.kind != StmtKind::Assign && st.kind != StmtKind::AugAssign && st.kind != StmtKind::AnnAssign) ||
              st.value == kNone || st.value == v)
            continue;
          bool binds = false;
          for (Id t : st.targets)
            if (t != kNone)
              for_each_expr(f.m, t, [&](Id y) {
                if (f.e(y).kind == ExprKind::Name && f.e(y).text == e.text) binds = true;
                return !binds && (f.e(y).kind == ExprKind::Sequence || f.e(y).kind == ExprKind::Starred);
              });
          if (binds && from_inputs(f, func, st.value, params, depth + 1)) { hit = true; break; }
        }
    }
    return !hit;
  });
  return hit;
}

struct Store {
  Id call;            // the append/extend call
  std::string target; // dotted container
  Id value;
};

std::vector<Store> stores_in(const Facts& f, Id func) {
  std::vector<Store> out;
  for (const CallSite& c : f.calls) {
    if (c.func != func || c.in_lambda) continue;
    const std::string& a = f.callee_attr(c.call);
    if (a != "append"sv && a != "extend"sv && a != "insert"sv) continue;
    Id recv = f.callee_receiver(c.call);
    Id v = f.arg(c.call, a == "insert"sv ? 1 : 0);
    if (recv == kNone || v == kNone) continue;
    // `self.store[name].append(o)` -> container `self.store`
    Id base = recv;
    for (int hops = 0; hops < 8; ++hops) {
      if (f.e(base).kind == ExprKind::Subscript) base = f.e(base).kids[0];
      else if (f.e(base).kind == ExprKind::Call &&
               (f.callee_attr(base) == "setdefault"sv || f.callee_attr(base) == "get"sv) && f.callee_receiver(base) != kNone)
        base = f.callee_receiver(base);
      else break;
    }
    const std::string& d = f.dotted(base);
    if (d.empty()) continue;
    out.push_back({c.call, d, v});
  }
  return out;
}

// Is the container emptied somewhere other than where it is created (`x.clear()`,
// `x = []` outside __init__, `del x[:]`)? With `any_owner`, `d` is an attribute of a module
// a hook receives (`module.feats`): the same attribute emptied through any name
// (`model.layer4.feats = []`) counts.
bool cleared_somewhere(const Facts& f, const std::string& d, Id owner_cls, bool any_owner = false,
                       Id creator = kNone) {
  const std::string suffix = "." + std::string(f.last_component(d));
  auto same = [&](const std::string& x) {
    return x == d || (any_owner && x.size() > suffix.size() && x.compare(x.size() - suffix.size(), suffix.size(), suffix) == 0);
  };
  // A reset in a method of the owner class that nothing calls, of a plain class this file
  // builds and uses itself (`def clear(self): self.outputs = []` on a hook object, never
  // called): it never runs. (A class the file does not build may be used, and reset,
  // elsewhere; Python calls the special methods, `__call__`, itself; a module's `forward`
  // runs when the module is called, and frameworks call its other methods, a Lightning
  // module's `on_validation_epoch_start`.)
  auto runs = [&](Id fn) {
    if (fn == kNone || owner_cls == kNone || f.class_of(fn) != owner_cls || f.constructions_of(owner_cls).empty() ||
        f.is_module_class(owner_cls))
      return true;
    if (const std::string& n = f.m.funcs[fn].name; n.size() > 4 && n.rfind("__", 0) == 0 && n.compare(n.size() - 2, 2, "__") == 0)
      return true;
    if (!f.callers(fn).empty()) return true;
    const std::string& name = f.m.funcs[fn].name;  // (a call the file does not resolve: `h.clear()`)
    return std::any_of(f.calls.begin(), f.calls.end(), [&](const CallSite& c) { return f.callee_attr(c.call) == name; });
  };
  for (const CallSite& c : f.calls) {
    const std::string& a = f.callee_attr(c.call);
    if ((a == "clear"sv || a == "pop"sv || a == "popleft"sv) && same(f.dotted(f.callee_receiver(c.call))) &&
        runs(c.func))
      return true;
  }
  for (const StmtSite& s : f.stmt_sites) {
    const Stmt& st = f.m.s(s.stmt);
    if (st.kind == StmtKind::Delete) {
      for (Id t : st.targets) {
        Id b = t;
        while (f.e(b).kind == ExprKind::Subscript) b = f.e(b).kids[0];
        if (same(f.dotted(b))) return true;
      }
    }
    if (st.kind != StmtKind::Assign && st.kind != StmtKind::AnnAssign) continue;
    if (st.kind == StmtKind::AnnAssign && st.text == "declared-type"sv) continue;  // C++: a declaration, not a reset
    if (s.func == kNone && d.rfind("self.", 0) != 0) continue;  // the module-level creation
    // The creation next to the registration (`model.layer4.feats = []` before the loop).
    if (any_owner && s.func == creator && s.loop < 0) continue;
    // The creation in the constructor (`__init__`; C++: the class's own constructor).
    if (s.func != kNone && f.class_of(s.func) == owner_cls && owner_cls != kNone &&
        (f.m.funcs[s.func].name == "__init__"sv || f.m.funcs[s.func].name == f.m.classes[owner_cls].name))
      continue;
    // `self.a = []`, and each name of a tuple target (`self.a, self.b = [], []`).
    bool hit = false;
    for (Id t : st.targets)
      if (t != kNone)
        for_each_expr(f.m, t, [&](Id x) {
          if (same(f.dotted(x))) hit = true;
          return !hit && (f.e(x).kind == ExprKind::Sequence || f.e(x).kind == ExprKind::Starred);
        });
    if (hit && runs(s.func)) return true;
  }
  return false;
}

// Is `d` a container that outlives a call of `func`: an attribute of self, a module-level
// name, a name of an enclosing function (a closure cell), or an attribute of the module a
// hook is registered on (`hooked`, the hook's module parameter)?
bool long_lived(const Facts& f, Id func, const std::string& d, const std::string& hooked = {}) {
  if (d.rfind("self.", 0) == 0) return true;
  std::string root = d.substr(0, d.find('.'));
  if (!hooked.empty() && root == hooked && d.size() > root.size()) return true;
  if (func == kNone) return false;
  for (const auto& p : f.m.funcs[func].params)
    if (p == root) return false;  // a container handed in by the caller
  // Bound locally? Then it dies with the call.
  for (const StmtSite& s : f.stmt_sites) {
    if (s.func != func) continue;
    const Stmt& st = f.m.s(s.stmt);
    if (st.kind == StmtKind::Assign || st.kind == StmtKind::AnnAssign || st.kind == StmtKind::For)
      for (Id t : st.targets) {
        bool hit = false;
        if (t != kNone)
          for_each_expr(f.m, t, [&](Id x) {
            if (f.e(x).kind == ExprKind::Name && f.e(x).text == root) hit = true;
            return !hit;
          });
        if (hit) return false;
      }
  }
  return !f.bindings(func, root).empty();
}

// Can a forward with grad enabled run after the hook is registered? The calls that follow the
// registration in its function, and those that follow a call of that function in its callers
// of the file, are searched (same-file callees followed through) for a forward or a backward
// outside no_grad. A hook installed after training, for a pruning pass whose forwards all run
// under no_grad, stores inputs that carry no graph. A function no call of the file reaches
// (an entry point, a method called from another file) is taken to be followed by one.
bool grad_forward_after(const Facts& f, const CallSite& reg) {
  // A forward or backward outside no_grad; or a call the file cannot follow that is handed a
  // model (`fit(model, loader)` of a library: it may train).
  auto grad_pass = [&](const CallSite& c) {
    if (f.grad_off(c)) return false;
    if (f.is_model_call(c) || f.is_backprop(c)) return true;
    if (c.target_func != kNone) return false;
    // A class of the file: its constructor is followed like a function (runs_grad).
    if (f.constructed_class(c.call) != kNone) return false;
    const Expr& call = f.e(c.call);
    for (size_t k = 1; k < call.kids.size(); ++k)
      if (f.is_model_value(c.func, call.kids[k])) return true;
    return false;
  };
  auto runs_grad = [&](const CallSite& c, Id skip) {
    if (grad_pass(c)) return true;
    if (f.grad_off(c)) return false;
    Id callee = c.target_func;
    if (callee == kNone)
      if (Id k = f.constructed_class(c.call); k != kNone) callee = f.method_in(k, "__init__");
    return callee != kNone && callee != skip && f.reaches(callee, grad_pass);
  };
  auto after = [&](Id func, uint32_t pos) {
    for (int ci : f.calls_in(func)) {
      const CallSite& c = f.calls[ci];
      if (f.e(c.call).range.begin > pos && runs_grad(c, func)) return true;
    }
    return false;
  };
  // A forward in a loop around a call runs after it, too (the next iteration).
  auto in_loop = [&](int loop, Id skip) {
    if (loop < 0) return false;
    for (int ci : f.loops[loop].calls)
      if (runs_grad(f.calls[ci], skip)) return true;
    return false;
  };
  // Every loop around the registration (`for m in model.modules():` inside the epoch loop).
  for (int l = reg.loop; l >= 0; l = f.loops[l].parent)
    if (in_loop(l, reg.func)) return true;
  if (after(reg.func, f.e(reg.call).range.begin)) return true;
  if (reg.func == kNone) return false;
  // Up the file's call chain, a few levels: what follows each call of the function, and the
  // innermost loop around that call (an outer one, over architectures, builds the next model,
  // whose modules carry none of these hooks). A function no call of the file reaches (called
  // from another file, or an entry point of the run) leaves what follows unknown.
  std::vector<Id> level{reg.func};
  std::set<Id> done{reg.func};
  for (int depth = 0; depth < 4 && !level.empty(); ++depth) {
    std::vector<Id> next;
    for (Id g : level) {
      if (f.callers(g).empty()) return true;
      for (int ci : f.callers(g)) {
        const CallSite& c = f.calls[ci];
        if (f.grad_off(c)) continue;
        if (c.func == g || in_loop(c.loop, reg.func) || after(c.func, f.e(c.call).range.begin)) return true;
        if (c.func != kNone && done.insert(c.func).second) next.push_back(c.func);
      }
    }
    level = std::move(next);
  }
  // Still more callers above: not searched.
  return !level.empty();
}

// Does the function that registered a hook remove it again (`handle.remove()`)? Then what
// the hook stores lives only as long as that call.
bool hook_removed(const Facts& f, const CallSite* reg) {
  if (!reg) return false;
  return f.reaches(reg->func, [&](const CallSite& x) {
    return f.callee_attr(x.call) == "remove"sv && f.e(x.call).kids.size() == 1;
  });
}

}  // namespace

void check_LL106(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  // Python and C++ (a LibTorch module's forward storing into a member container).
  // Functions that run once per batch with the model's tensors: forward() of a module
  // class, and hooks registered on modules or tensors.
  struct Site { Id func; std::string role; const CallSite* reg; };
  std::vector<Site> sites;
  std::set<Id> seen;
  bool grad_forward_in_file = f.file_trains();
  for (const CallSite& c : f.calls)
    if (!grad_forward_in_file && !f.grad_off(c) && f.is_model_call(c) && c.loop >= 0) grad_forward_in_file = true;
  for (Id fn = 0; fn < f.m.funcs.size(); ++fn)
    if (f.m.funcs[fn].name == "forward"sv && f.func_is_method_of_module(fn) && seen.insert(fn).second)
      sites.push_back({fn, "forward", nullptr});
  std::vector<std::pair<Id, const CallSite*>> lambda_hooks;
  if (grad_forward_in_file)
    for (const CallSite& c : f.calls) {
      if (!is_hook_registration(f.callee_attr(c.call))) continue;
      Id hook = f.arg(c.call, 0, "hook");
      if (hook == kNone) continue;
      const Expr& h = f.e(hook);
      if (h.kind == ExprKind::Lambda) {
        lambda_hooks.push_back({hook, &c});
        continue;
      }
      // A callable object (`save = SaveOutput(); layer.register_forward_hook(save)`) runs its
      // class's __call__.
      Id obj_cls = f.e(hook).kind == ExprKind::Call ? f.constructed_class(hook) : f.instance_class(c.func, hook);
      if (obj_cls != kNone) {
        Id call = f.method_in(obj_cls, "__call__");
        if (call != kNone && seen.insert(call).second) sites.push_back({call, "hook", &c});
        continue;
      }
      std::string name;
      Id cls = kNone;
      if (h.kind == ExprKind::Name) name = h.text;
      if (h.kind == ExprKind::Attribute && f.dotted(h.kids[0]) == "self"sv) { name = h.text; cls = f.class_of(c.func); }
      if (name.empty()) continue;
      for (Id fn = 0; fn < f.m.funcs.size(); ++fn)
        if (f.m.funcs[fn].name == name && (cls == kNone ? f.m.funcs[fn].cls == kNone : f.m.funcs[fn].cls == cls) &&
            seen.insert(fn).second)
          sites.push_back({fn, "hook", &c});
    }

  // Impact: a hook in a program whose model never runs in a loop (a Grad-CAM script: one
  // forward, one backward) stores one pass's tensors, once.
  // Asked only when a hook finding is reported.
  std::optional<bool> forward_in_loop;
  auto runs_in_a_loop = [&] {
    if (!forward_in_loop) {
      forward_in_loop = false;
      for (const CallSite& c : f.calls)
        if (c.loop >= 0 && (f.is_model_call(c) || f.loop_reaches_backward(c.loop))) {
          forward_in_loop = true;
          break;
        }
    }
    return *forward_in_loop;
  };
  // A hook registered at the top level of a script or notebook, outside any loop, sees only
  // the forwards that run after it: one in a loop at the top level after it, or in a function
  // of the file called there. (The training cells before a hook added for a last look at the
  // activations never run it.)
  auto runs_in_a_loop_after = [&](const CallSite* reg) {
    if (!reg || reg->func != kNone || reg->loop >= 0) return runs_in_a_loop();
    const uint32_t pos = f.e(reg->call).range.begin;
    auto loop_forward = [&](const CallSite& x) { return x.loop >= 0 && f.is_model_call(x); };
    for (const CallSite& c : f.calls) {
      if (c.func != kNone || f.e(c.call).range.begin <= pos) continue;
      if (c.loop >= 0 && (f.is_model_call(c) || f.loop_reaches_backward(c.loop))) return true;
      if (c.target_func != kNone && f.reaches(c.target_func, loop_forward)) return true;
    }
    return false;
  };
  auto report = [&](const CallSite* hook, const Range& where, std::string message) {
    if (hook && !runs_in_a_loop_after(hook))
      return ctx.report_weak("LL106", where, std::move(message),
                             "no forward runs in a loop in this program after the hook is registered, so it "
                             "stores one pass's tensors, once");
    return report_memory_claim(ctx, "LL106", where, std::move(message));
  };
  for (const Site& s : sites) {
    const Function& fn = f.m.funcs[s.func];
    if (f.func_entry_off(s.func) || hook_removed(f, s.reg)) continue;
    if (s.role == "hook"sv && s.reg && !grad_forward_after(f, *s.reg)) continue;
    // A hook's first argument (after self) is the module it is registered on.
    std::string hooked;
    if (s.role == "hook"sv) {
      size_t first = (!fn.params.empty() && fn.params[0] == "self"sv) ? 1 : 0;
      if (first < fn.params.size()) hooked = fn.params[first];
    }
    for (const Store& st : stores_in(f, s.func)) {
      const CallSite& c = f.calls[f.call_index.at(st.call)];
      if (f.grad_off(c)) continue;
      if (!long_lived(f, s.func, st.target, hooked)) continue;
      // (A record of plain values computed from the tensors, `self._make_fragment(m, x, out)`
      // returning a dataclass of counts and names, holds none of them.)
      if (detached(f, st.value) || f.builds_plain_record(st.value, s.func)) continue;
      if (!from_inputs(f, s.func, st.value, fn.params)) continue;
      const bool on_hooked = !hooked.empty() && st.target.rfind(hooked + ".", 0) == 0;
      if (cleared_somewhere(f, st.target, f.class_of(s.func), on_hooked, s.reg ? s.reg->func : kNone)) continue;
      std::string v = ctx.text(st.value);
      std::string owner = fn.cls != kNone && fn.name == "__call__"sv ? f.m.classes[fn.cls].name + "." : "";
      std::string where = s.role == "forward"sv ? "`forward`" : "hook `" + owner + fn.name + "`";
      std::string message = "`" + ctx.text(f.e(st.call).kids[0]) + "(" + v + ")` in " + where +
                            " keeps every batch's `" + v + "`, and the autograd graph behind it, reachable from `" +
                            st.target +
                            "`: it grows every batch and each graph's saved activations stay alive until "
                            "backward() frees them (forever in passes without backward()); store `" + v +
                            ".detach()`, or clear it every iteration";
      Finding* fd = report(s.role == "hook"sv ? s.reg : nullptr, f.e(st.call).range, message);
      if (!fd) continue;
      ExprKind k = f.e(st.value).kind;
      if (k == ExprKind::Name || k == ExprKind::Attribute || k == ExprKind::Subscript || k == ExprKind::Call) {
        Fix fix;
        fix.title = "Store `" + v + ".detach()`";
        fix.safe = false;
        fix.edits.push_back({f.e(st.value).range.end, f.e(st.value).range.end, ".detach()"});
        fd->fixes.push_back(std::move(fix));
      }
    }
  }
  // Lambda hooks: `layer.register_forward_hook(lambda m, i, o: feats.append(o))`.
  for (const auto& [lam, reg] : lambda_hooks) {
    const Expr& l = f.e(lam);
    if (l.kids.empty() || hook_removed(f, reg)) continue;
    Id body = l.kids[0];
    if (f.e(body).kind != ExprKind::Call) continue;
    const std::string& a = f.callee_attr(body);
    if (a != "append"sv && a != "extend"sv) continue;
    Id recv = f.callee_receiver(body);
    Id v = f.arg(body, 0);
    if (recv == kNone || v == kNone || detached(f, v) || f.e(v).kind == ExprKind::Lambda) continue;
    const std::string& d = f.dotted(recv);
    if (d.empty() || cleared_somewhere(f, d, kNone)) continue;
    // The appended value must be one of the lambda's own arguments (the module's output,
    // inputs or gradients), or computed from them.
    bool outside_name = false;
    const Id reg_func = reg->func;  // a structured binding is not captured by lambdas before C++20
    for_each_expr(f.m, v, [&](Id x) {
      if (f.e(x).kind == ExprKind::Name && !f.bindings(reg_func, f.e(x).text).empty()) outside_name = true;
      return !outside_name;
    });
    if (outside_name) continue;
    std::string vt = ctx.text(v);
    std::string message = "`" + ctx.text(f.e(body).kids[0]) + "(" + vt + ")` in a hook keeps every batch's `" + vt +
                          "`, and the autograd graph behind it, reachable from `" + d +
                          "`: it grows every batch and each graph's saved activations stay alive until "
                          "backward() frees them (forever in passes without backward()); store `" + vt +
                          ".detach()`, or clear it every iteration";
    Finding* fd = report(reg, f.e(body).range, message);
    if (!fd) continue;
    ExprKind k = f.e(v).kind;
    if (k == ExprKind::Name || k == ExprKind::Attribute || k == ExprKind::Subscript || k == ExprKind::Call) {
      Fix fix;
      fix.title = "Store `" + vt + ".detach()`";
      fix.safe = false;
      fix.edits.push_back({f.e(v).range.end, f.e(v).range.end, ".detach()"});
      fd->fixes.push_back(std::move(fix));
    }
  }
}

}  // namespace ll
