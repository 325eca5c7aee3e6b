// LL201 zero-grad-missing: a training loop that steps an optimizer without ever resetting
// its gradients per update.
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "checks/common.hpp"

namespace ll {
namespace {

// The modules whose parameters an optimizer holds, when its construction shows them all:
// `Adam(chain(G.parameters(), D.parameters()))` -> {G, D}. Empty when anything else is in
// its parameter argument (tensors, param-group dicts, a name bound elsewhere).
std::set<std::string> param_modules(const Facts& f, Id func, const std::string& opt) {
  std::set<std::string> out;
  for (Id v : f.bindings(func, opt)) {
    if (f.e(v).kind != ExprKind::Call || f.callee_qual(v).rfind("torch.optim.", 0) != 0) return {};
    Id params = f.arg(v, 0, "params");
    if (params == kNone) return {};
    bool other = false;
    std::function<void(Id, int)> walk = [&](Id x, int depth) {
      const Expr& e = f.e(x);
      if (other || depth > 8) {
        other = true;
        return;
      }
      if (e.kind == ExprKind::Call && f.callee_attr(x) == "parameters"sv) {
        const std::string& d = f.dotted(f.callee_receiver(x));
        if (d.empty()) other = true;
        else out.insert(d);
      } else if (e.kind == ExprKind::Call && !e.kids.empty() && e.kw.empty() &&
                 (in(f.callee_qual(x), {"itertools.chain", "list"}) ||
                  (f.e(e.kids[0]).kind == ExprKind::Name && in(f.e(e.kids[0]).text, {"list", "chain"})))) {
        for (size_t k = 1; k < e.kids.size(); ++k) walk(e.kids[k], depth + 1);
      } else if ((e.kind == ExprKind::Sequence && e.text != "dict"sv) || (e.kind == ExprKind::BinOp && e.text == "+")) {
        for (Id k : e.kids) walk(k, depth + 1);
      } else {
        other = true;  // tensors, param-group dicts, names bound elsewhere
      }
    };
    walk(params, 0);
    if (other) return {};
  }
  return out;
}

// Is there a reset of `opt` (or of a model's gradients) among the call sites, nested
// functions defined in the loop, or same-file functions they call? Another optimizer's
// zero_grad() resets `opt`'s gradients too when, between them, they hold the same modules:
// `opt_info` over G and D is reset by `opt_G.zero_grad(); opt_D.zero_grad()`.
// Attribute names that hold the same optimizer as `self.<attr>`: `self.Discriminator_opt =
// optimizer_D` in a constructor that also hands `optimizer_D` to `super().__init__(...)`, where
// the base class (often in another file) keeps it as `self.optimizer_D`.
// The module-level name every same-file call of `func` passes for its parameter `p`, through
// callers' own parameters a few levels up (`train_loop(model, opt)` handing its `optimizer` to
// `train_model(model, optimizer)`): "" when the calls pass different things, something else, or
// nothing (a default), or when nothing calls it.
std::string global_passed_for(const Facts& f, Id func, const std::string& p, int depth = 0) {
  if (func == kNone || depth > 3 || f.m.funcs[func].cls != kNone || f.callers(func).empty() ||
      f.callers(func).size() > 32)
    return "";
  const auto& params = f.m.funcs[func].params;
  const auto at = std::find(params.begin(), params.end(), p);
  if (at == params.end()) return "";
  std::string global;
  for (int ci : f.callers(func)) {
    const CallSite& c = f.calls[ci];
    const Id a = f.arg(c.call, static_cast<size_t>(at - params.begin()), p);
    if (a == kNone || f.e(a).kind != ExprKind::Name) return "";
    const std::string& name = f.e(a).text;
    std::string g;
    if (c.func != kNone && f.is_param(c.func, name)) g = global_passed_for(f, c.func, name, depth + 1);
    else if (c.func == kNone || f.bindings(c.func, name).empty()) g = name;
    if (g.empty() || (!global.empty() && g != global)) return "";
    global = g;
  }
  return global;
}

std::set<std::string> same_optimizer(const Facts& f, Id func, const std::string& opt) {
  std::set<std::string> out{opt};
  // A parameter every caller hands the same module-level optimizer: that one by its own name
  // (`opt.zero_grad()` on the global beside `optimizer.step()` on the parameter).
  if (func != kNone && f.is_param(func, opt) && f.bindings(func, opt).empty())
    if (std::string g = global_passed_for(f, func, opt); !g.empty()) out.insert(g);
  if (opt.rfind("self.", 0) != 0 || f.class_of(func) == kNone) return out;
  for (Id v : f.bindings(func, opt)) {
    if (f.e(v).kind != ExprKind::Name) continue;
    const std::string& p = f.e(v).text;
    const Id init = f.function_at(f.e(v).range.begin);
    if (init == kNone || !f.is_param(init, p)) continue;
    for (int ci : f.calls_in(init)) {
      const Id x = f.calls[ci].call;
      if (f.callee_attr(x) != "__init__"sv) continue;
      const Expr& call = f.e(x);
      for (size_t k = 1; k < call.kids.size(); ++k)
        if (f.dotted(call.kids[k]) == p && f.bindings(func, "self." + p).empty()) out.insert("self." + p);
    }
  }
  return out;
}

bool loop_resets(const Facts& f, int loop, const std::string& opt, Id func) {
  const std::set<std::string> names = same_optimizer(f, func, opt);
  std::set<std::string> others;  // modules whose gradients other optimizers reset
  auto resets = [&](const CallSite& c) {
    Id o = kNone;
    if (!f.is_grad_reset(c, &o)) return false;
    if (o == kNone) return true;  // model.zero_grad(), p.grad.zero_()
    const std::string& d = f.dotted(f.e(o).kind == ExprKind::Subscript ? f.e(o).kids[0] : o);
    if (names.count(d) || opt.empty()) return true;
    // An optimizer the stepped one holds (`wrapper.opt.zero_grad()` beside `wrapper.step()`,
    // whose step runs `self.opt.step()`): it holds the same parameters.
    for (const std::string& n : names)
      if (d.size() > n.size() && d.compare(0, n.size(), n) == 0 && d[n.size()] == '.') return true;
    if (!d.empty())
      for (const std::string& m : param_modules(f, c.func, d)) others.insert(m);
    return false;
  };
  if (f.loop_reaches(loop, resets)) return true;
  if (!others.empty()) {
    std::set<std::string> mine = param_modules(f, func, opt);
    if (!mine.empty() && std::includes(others.begin(), others.end(), mine.begin(), mine.end())) return true;
  }
  // `p.grad = None` assignments in the loop, or in a same-file function it calls
  // (`def efficient_zero_grad(model): for p in model.parameters(): p.grad = None`).
  // Only a reset counts: `None`, zero, or a tensor of zeros (`torch.zeros_like(p)`); an edited
  // gradient (`p.grad = p.grad.clamp(-1, 1)`) or a statistic named `grad` resets nothing.
  auto resetting_value = [&](Id v) {
    if (v == kNone) return false;
    const Expr& x = f.e(v);
    if (x.kind == ExprKind::Literal) return x.lit == LitKind::None || x.text == "0"sv || x.text == "0.0"sv;
    if (x.kind != ExprKind::Call) return false;
    const std::string& q = f.qual(x.kids[0]);
    return in(q, {"torch.zeros_like", "torch.zeros"}) || in(f.callee_attr(v), {"zero_"sv, "zeros_like"sv});
  };
  auto sets_grad = [&](Id sid) {
    const Stmt& s = f.m.s(sid);
    if (s.kind == StmtKind::Assign && resetting_value(s.value))
      for (Id t : s.targets)
        if (f.e(t).kind == ExprKind::Attribute && f.e(t).text == "grad"sv) return true;
    return false;
  };
  auto helper_sets_grad = [&](const CallSite& c) {
    if (c.target_func == kNone) return false;
    for (Id sid : f.stmts_in(c.target_func))
      if (sets_grad(sid)) return true;
    return false;
  };
  if (f.loop_reaches(loop, helper_sets_grad)) return true;
  for (Id sid : f.loops[loop].stmts) {
    const Stmt& s = f.m.s(sid);
    if (sets_grad(sid)) return true;
    // Closures defined in the loop (LBFGS `def closure(): opt.zero_grad() ...`).
    if (s.kind == StmtKind::FunctionDef && f.reaches(s.func, resets)) return true;
  }
  return false;
}

}  // namespace

// A call in the loop that is handed the optimizer and that the file cannot resolve: neither a
// same-file function nor a torch one (`scaler.step(opt)`, `clip_grad_norm_` are known not to
// reset). Its callee's text, or "" when there is none.
std::string handed_to_unseen_call(const Facts& f, int loop, const std::string& name) {
  for (int ci : f.loops[loop].calls) {
    const CallSite& x = f.calls[ci];
    if (x.target_func != kNone || f.callee_qual(x.call).rfind("torch", 0) == 0 || python_builtin_call(f, x.call)) continue;
    if (in(f.callee_attr(x.call), {"step"sv, "unscale_"sv, "update"sv, "scale"sv, "append"sv, "log"sv})) continue;
    const Expr& call = f.e(x.call);
    for (size_t k = 1; k < call.kids.size(); ++k)
      if (f.dotted(call.kids[k]) == name) {
        const std::string& callee = f.dotted(call.kids[0]);
        return callee.empty() ? std::string("a call") : callee;
      }
  }
  return "";
}

// A comment in `text` that holds a reset the author took out (`# optimizer.zero_grad()`,
// `// optimizer.zero_grad();`): the author knows gradients accumulate there.
bool commented_out_reset(std::string_view text) {
  for (size_t at = text.find("zero_grad"); at != std::string_view::npos; at = text.find("zero_grad", at + 1)) {
    const size_t line = text.rfind('\n', at);
    const std::string_view before = text.substr(line == std::string_view::npos ? 0 : line + 1,
                                                at - (line == std::string_view::npos ? 0 : line + 1));
    const size_t lead = before.find_first_not_of(" \t");
    if (lead != std::string_view::npos && (before[lead] == '#' || before.substr(lead, 2) == "//")) return true;
  }
  return false;
}

void check_LL201(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  auto backward = [&](const CallSite& c) { return f.is_backward(c); };
  std::set<std::pair<int, std::string>> seen;
  // (loop, optimizer) -> 0 skip, 1 no finding, 2 finding: many steps of one optimizer in one
  // loop ask the same question, answered once (each answer walks the whole loop).
  std::map<std::pair<int, std::string>, int> in_loop;
  TrainingStakeMemo stake;
  for (const CallSite& c : f.calls) {
    Id opt = f.optimizer_of_step(c);
    if (opt == kNone || c.in_lambda) continue;
    // A step on the loop's last iteration only (`if i == len(batches) - 1:`): the loop
    // accumulates every batch's gradients into one update on purpose.
    if (c.loop >= 0 && last_iteration_test(f, c.guard, c.func)) continue;
    const std::string& name = f.dotted(f.e(opt).kind == ExprKind::Subscript ? f.e(opt).kids[0] : opt);
    // The training loop: the innermost loop around the step that reaches backward().
    int loop = c.loop;
    while (loop >= 0 && !f.loop_reaches_backward(loop)) loop = f.loops[loop].parent;
    bool fire = false;
    if (loop >= 0) {
      auto [it, fresh] = in_loop.try_emplace({loop, name}, 0);
      // An optimizer constructed inside the loop starts fresh every iteration (per-step
      // guidance, per-configuration sweeps): nothing accumulates across updates it sees.
      // Distributed autograd (`with dist_autograd.context() as cid: dist_autograd.backward(cid,
      // [loss])`) keeps each iteration's gradients in its own context, not in `.grad`.
      if (fresh)
        it->second = assigned_in_loop(f, loop, name) || f.loop_reaches(loop, [&](const CallSite& x) {
                       return f.callee_qual(x.call) == "torch.distributed.autograd.backward"sv;
                     })
                         ? 0
                         : !loop_resets(f, loop, name, c.func) ? 2 : 1;
      if (it->second == 0) continue;
      fire = it->second == 2;
    } else if (c.func != kNone && f.reaches(c.func, backward)) {
      // A step function without a loop: look at loops that call it (one level up).
      bool own_reset = f.reaches(c.func, [&](const CallSite& x) {
        Id o = kNone;
        return f.is_grad_reset(x, &o) && (o == kNone || f.dotted(o) == name);
      });
      if (own_reset) continue;
      for (const CallSite& caller : f.calls)
        if (caller.target_func == c.func && caller.loop >= 0 && !loop_resets(f, caller.loop, name, c.func)) fire = true;
    }
    if (!fire || !seen.insert({loop, name}).second) continue;
    std::string message =
        "`" + name + ".step()` runs every iteration but gradients are never reset: backward() adds into `.grad`, "
        "so each step applies the sum of all earlier gradients and training is wrong (memory does not grow); "
        "call `" + name + ".zero_grad()` once per update";
    // The optimizer is handed to a call this file cannot see into (`self.objective.step_loss(net,
    // opt, x, y)` of another module): that call may reset it.
    const std::string unseen = loop >= 0 ? handed_to_unseen_call(f, loop, name) : std::string();
    // Impact: a few steps, or a benchmark: what the update computes is not at stake.
    const Id where = loop >= 0 ? f.loops[loop].stmt : c.func != kNone ? f.m.funcs[c.func].stmt : kNone;
    if (const std::string why = training_not_at_stake(f, loop, stake); !why.empty())
      ctx.report_weak("LL201", f.e(c.call).range, std::move(message), why);
    else if (where != kNone && commented_out_reset(ctx.text(f.m.s(where).range)))
      ctx.report_weak("LL201", f.e(c.call).range, std::move(message),
                      "a reset is commented out in the " + std::string(loop >= 0 ? "loop" : "function") +
                          ", so gradients are left to accumulate on purpose, as in a demonstration or an experiment");
    else if (!unseen.empty())
      ctx.report_weak("LL201", f.e(c.call).range, std::move(message),
                      "`" + name + "` is handed to `" + unseen + "(...)`, which this file cannot see into and which may "
                      "reset its gradients");
    else
      ctx.report("LL201", f.e(c.call).range, std::move(message));
  }
}

}  // namespace ll
