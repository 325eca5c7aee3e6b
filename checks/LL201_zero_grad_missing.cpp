// LL201 zero-grad-missing: a training loop that steps an optimizer without ever resetting
// its gradients per update.
#include <map>
#include <set>

#include "checks/common.hpp"

namespace ll {
namespace {

// Is there a reset of `opt` (or of a model's gradients) among the call sites, nested
// functions defined in the loop, or same-file functions they call?
bool loop_resets(const Facts& f, int loop, const std::string& opt) {
  auto resets = [&](const CallSite& c) {
    Id o = kNone;
    if (!f.is_grad_reset(c, &o)) return false;
    if (o == kNone) return true;  // model.zero_grad(), p.grad.zero_()
    std::string d = f.dotted(f.e(o).kind == ExprKind::Subscript ? f.e(o).kids[0] : o);
    return d == opt || opt.empty();
  };
  if (f.loop_reaches(loop, resets)) return true;
  // `p.grad = None` assignments in the loop.
  for (Id sid : f.loops[loop].stmts) {
    const Stmt& s = f.m.s(sid);
    if (s.kind == StmtKind::Assign)
      for (Id t : s.targets)
        if (f.e(t).kind == ExprKind::Attribute && f.e(t).text == "grad") return true;
    // Closures defined in the loop (LBFGS `def closure(): opt.zero_grad() ...`).
    if (s.kind == StmtKind::FunctionDef && f.reaches(s.func, resets)) return true;
  }
  return false;
}

}  // namespace

void check_LL201(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  auto backward = [&](const CallSite& c) { return f.is_backward(c); };
  std::set<std::pair<int, std::string>> seen;
  // (loop, optimizer) -> 0 skip, 1 no finding, 2 finding: many steps of one optimizer in one
  // loop ask the same question, answered once (each answer walks the whole loop).
  std::map<std::pair<int, std::string>, int> in_loop;
  for (const CallSite& c : f.calls) {
    Id opt = f.optimizer_of_step(c);
    if (opt == kNone || c.in_lambda) continue;
    std::string name = f.dotted(f.e(opt).kind == ExprKind::Subscript ? f.e(opt).kids[0] : opt);
    // The training loop: the innermost loop around the step that reaches backward().
    int loop = c.loop;
    while (loop >= 0 && !f.loop_reaches_backward(loop)) loop = f.loops[loop].parent;
    bool fire = false;
    if (loop >= 0) {
      auto [it, fresh] = in_loop.try_emplace({loop, name}, 0);
      // An optimizer constructed inside the loop starts fresh every iteration (per-step
      // guidance, per-configuration sweeps): nothing accumulates across updates it sees.
      if (fresh) it->second = assigned_in_loop(f, loop, name) ? 0 : !loop_resets(f, loop, name) ? 2 : 1;
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
        if (caller.target_func == c.func && caller.loop >= 0 && !loop_resets(f, caller.loop, name)) fire = true;
    }
    if (!fire || !seen.insert({loop, name}).second) continue;
    Finding* fd = ctx.report(
        "LL201", f.e(c.call).range,
        "`" + name + ".step()` runs every iteration but gradients are never reset: backward() adds into `.grad`, "
        "so each step applies the sum of all earlier gradients and training is wrong (memory does not grow); "
        "call `" + name + ".zero_grad()` once per update");
    (void)fd;
  }
}

}  // namespace ll
