// LL103 loop-carried-graph: a value produced by a model forward in one iteration is fed
// back into the model in the next one without being detached, so the graph grows.
#include <functional>
#include <map>
#include <set>

#include "checks/common.hpp"

namespace ll {
namespace {

void names_in_target(const Facts& f, Id t, std::vector<std::string>& out) {
  for_each_expr(f.m, t, [&](Id x) {
    const Expr& e = f.e(x);
    if (e.kind == ExprKind::Sequence || e.kind == ExprKind::Starred) return true;
    const std::string& d = f.dotted(x);
    if (!d.empty()) out.push_back(d);
    return false;
  });
}

// What retain_graph does in a LibTorch training loop depends on the optimizer (measured with
// LibTorch 1.13): torch::optim::SGD updates the weights through .data(), which autograd's
// in-place check does not see, so the loop runs and grows; Adam, AdamW, RMSprop and Adagrad
// bump the weights' version and the next backward() fails, as in Python.
std::string cpp_retain_effect(const Facts& f, int loop) {
  std::string kind;
  for (int ci : f.loops[loop].calls) {
    Id opt = f.optimizer_of_step(f.calls[ci]);
    if (opt == kNone) continue;
    const std::string& d = f.dotted(opt);
    for (Id v : f.bindings_at(f.calls[ci].func, d, opt)) {
      std::string q = f.e(v).kind == ExprKind::Call ? f.callee_qual(v) : "";
      if (q.rfind("torch.optim.", 0) == 0) kind = q.substr(12);
    }
  }
  const std::string grow = "memory and backward time grow every iteration";
  if (kind == "SGD"sv)
    return "with it, " + grow + " (torch::optim::SGD updates the weights through .data(), which autograd's in-place "
           "check does not see)";
  if (!kind.empty())
    return "with it, backward() fails on the weights that torch::optim::" + kind + "'s step() modified in place";
  return "with it, under torch::optim::SGD (which updates the weights through .data()) " + grow +
         ", and under the other optimizers backward() fails on the weights step() modified in place";
}

bool fed_with_history(const Facts& f, Id x, const std::string& d, int depth = 0);

// Does every value a same-file helper returns drop its parameters' history (`def var_pair(x):
// a, b = Variable(x[0].data), Variable(x[1].data); return a.cuda(), b.cuda()`), following the
// names it binds to what they were bound to?
bool helper_returns_detached(const Facts& f, Id helper, int depth = 0) {
  const auto& rets = f.returned_values(helper);
  if (rets.empty() || depth > 2) return false;
  const auto& params = f.m.funcs[helper].params;
  std::function<bool(Id, int)> carries = [&](Id x, int d) -> bool {
    if (x == kNone || d > 8) return false;
    for (const auto& p : params)
      if (!p.empty() && p != "self" && fed_with_history(f, x, p, depth + 1)) return true;
    // Names the helper binds: as what they were bound to.
    std::function<bool(Id)> via_locals = [&](Id y) -> bool {
      const Expr& e = f.e(y);
      if (e.kind == ExprKind::Name && !f.is_param(helper, e.text)) {
        for (Id v : f.bindings(helper, e.text))
          if (v != y && carries(v, d + 1)) return true;
        return false;
      }
      if (e.kind == ExprKind::Attribute && e.text == "data"sv) return false;
      if (e.kind == ExprKind::Call && in(f.callee_attr(y), {"detach", "detach_", "item", "tolist", "numpy"})) return false;
      for (Id k : e.kids)
        if (via_locals(k)) return true;
      return false;
    };
    return via_locals(x);
  };
  for (Id r : rets)
    if (carries(r, 0)) return false;
  return true;
}

// Does `x` hand `d` to the call with its history: mentioned outside everything that detaches
// (`h.detach()`, `h.data`, `h.item()`, `Variable(h)`, whose legacy constructor detaches, a
// same-file helper that detaches, `tuple(t.detach() for t in h)`)?
bool fed_with_history(const Facts& f, Id x, const std::string& d, int depth) {
  if (x == kNone || depth > 32) return false;
  const Expr& e = f.e(x);
  if (f.dotted(x) == d) return true;
  if (e.kind == ExprKind::Attribute && e.text == "data"sv) return false;
  if (e.kind == ExprKind::Call) {
    const std::string& attr = f.callee_attr(x);
    if (in(attr, {"detach", "detach_", "item", "tolist", "numpy"})) return false;
    const Expr& callee = f.e(e.kids[0]);
    const std::string& q = f.callee_qual(x);
    if (q == "torch.autograd.Variable"sv || (callee.kind == ExprKind::Name && callee.text == "Variable"sv))
      return false;
    for (const auto& t : Facts::name_tokens(callee.kind == ExprKind::Name ? std::string_view(callee.text)
                                                                            : std::string_view(attr)))
      if (t == "detach"sv || t == "repackage"sv) return false;  // `repackage_hidden(h)`, `detach_states(h)`
    if (Id helper = f.same_file_target(x, f.function_at(e.range.begin)); helper != kNone && helper_returns_detached(f, helper, depth))
      return false;
  }
  if (e.kind == ExprKind::Comprehension && !e.kids.empty() && !fed_with_history(f, e.kids[0], d, depth + 1)) {
    // `tuple(t.detach() for t in hidden)`: each element is detached, whatever it iterates.
    const Expr& el = f.e(e.kids[0]);
    if (el.kind == ExprKind::Call && in(f.callee_attr(e.kids[0]), {"detach", "detach_"})) return false;
    if (el.kind == ExprKind::Attribute && el.text == "data"sv) return false;
  }
  for (Id k : e.kids)
    if (fed_with_history(f, k, d, depth + 1)) return true;
  return false;
}

}  // namespace

void check_LL103(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  std::set<Id> reported;
  auto backward = [&](const CallSite& c) { return f.is_backward(c); };
  auto retain = [&](const CallSite& c) {
    return f.is_backward(c) && f.arg(c.call, static_cast<size_t>(-1), "retain_graph") != kNone;
  };
  // Known models are forwards; a plain local callable fed its own output counts only in a
  // loop that retains graphs or when it is named like a recurrent cell (`h = cell(x, h)`).
  auto forward_call = [&](const CallSite& c, bool loop_retains) {
    if (f.is_model_call(c)) return true;
    if (python_builtin_call(f, c.call)) return false;  // `best = max(score, best)`
    const Expr& callee = f.e(f.e(c.call).kids[0]);
    if (!callee.qname.empty() || callee.kind != ExprKind::Name || f.is_function_name(c.func, callee.text)) return false;
    if (loop_retains) return true;
    for (const auto& t : Facts::name_tokens(callee.text))
      if (t == "cell"sv || t == "rnn"sv || t == "lstm"sv || t == "gru"sv) return true;
    return false;
  };
  for (int li = 0; li < static_cast<int>(f.loops.size()); ++li) {
    const Loop& L = f.loops[li];
    if (L.stmt == kNone) continue;
    bool trains = f.loop_reaches(li, backward);
    bool retains = f.loop_reaches(li, retain);
    // Unrolling inside a module's forward, and loops over layers, are the model itself.
    if (f.func_is_method_of_module(L.func) && !trains) continue;
    // A constant handful of iterations that back-propagates through everything so far with
    // retain_graph and never steps an optimizer (a receptive-field demo stacking a layer):
    // the graph is bounded and kept on purpose.
    if (retains && constant_trips(f, li, 8) > 0 &&
        !f.loop_reaches(li, [&](const CallSite& c) { return f.optimizer_of_step(c) != kNone; }))
      continue;
    std::set<std::string> loop_targets;
    for (Id t : f.m.s(L.stmt).targets)
      for_each_expr(f.m, t, [&](Id y) {
        const std::string& d = f.dotted(y);
        if (!d.empty()) loop_targets.insert(d);
        return true;
      });
    // Statement order inside the loop.
    std::vector<Id> order = L.stmts;
    auto pos = [&](Id sid) {
      for (size_t i = 0; i < order.size(); ++i)
        if (order[i] == sid) return static_cast<int>(i);
      return -1;
    };
    // Per name: the first assignment of any kind in the iteration, and forward assignments.
    std::map<std::string, int> first_assign;
    std::vector<std::pair<std::string, Id>> carried;
    std::set<std::string> reset;
    for (Id sid : order) {
      const Stmt& s = f.m.s(sid);
      auto si = f.stmt_index.find(sid);
      bool off = si != f.stmt_index.end() && f.grad_off(f.stmt_sites[si->second]);
      if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call &&
          f.callee_attr(s.value) == "detach_"sv) {
        Id r = f.callee_receiver(s.value);
        while (r != kNone && f.e(r).kind == ExprKind::Subscript) r = f.e(r).kids[0];  // hidden[0].detach_()
        reset.insert(f.dotted(r));
        continue;
      }
      if (s.kind == StmtKind::Delete) {
        for (Id t : s.targets) reset.insert(f.dotted(t));
        continue;
      }
      if (s.kind != StmtKind::Assign || s.value == kNone) continue;
      std::vector<std::string> names;
      for (Id t : s.targets) names_in_target(f, t, names);
      const Expr& v = f.e(s.value);
      bool forward = false;
      if (v.kind == ExprKind::Call && !off) {
        auto ci = f.call_index.find(s.value);
        forward = ci != f.call_index.end() && forward_call(f.calls[ci->second], retains);
      }
      // Elements the forward hands back detached (`out, hid = model(x, hid)` where the model
      // returns `hid.detach()`) carry no history.
      std::set<std::string> detached_out;
      if (forward && s.targets.size() == 1 && f.e(s.targets[0]).kind == ExprKind::Sequence) {
        const Expr& t = f.e(s.targets[0]);
        for (size_t k = 0; k < t.kids.size(); ++k)
          if (!f.dotted(t.kids[k]).empty() && f.forward_returns_detached(L.func, s.value, k))
            detached_out.insert(f.dotted(t.kids[k]));
      }
      for (const auto& n : names) {
        if (!first_assign.count(n)) first_assign[n] = pos(sid);
        if (forward && !detached_out.count(n)) carried.emplace_back(n, sid);
        else reset.insert(n);  // re-initialised or detached (`h = h.detach()`, `h = None`)
      }
    }
    if (carried.empty()) continue;
    // Only loops that train, or evaluation loops running with grad enabled, grow a graph
    // that nobody frees.
    for (int ci : L.calls) {
      const CallSite& c = f.calls[ci];
      if (f.grad_off(c) || c.in_lambda || !forward_call(c, retains)) continue;
      if (!trains && eval_loop_reason(f, c).empty()) continue;
      // One finding per mechanism and fix: in a loop that never back-propagates the cure is
      // LL101's (run it without autograd), and LL101 reports this forward's loop already.
      if (!trains && f.is_model_call(c) && ctx.enabled("LL101")) continue;
      // `for layer in layers: x = layer(x)`: a different module each iteration.
      Id callee = f.e(c.call).kids[0];
      if (loop_targets.count(f.dotted(callee))) continue;
      int use = pos(c.stmt);
      if (use < 0) continue;
      const Expr& call = f.e(c.call);
      for (const auto& [name, assign] : carried) {
        if (reset.count(name)) continue;
        bool fed = false;
        for (size_t k = 1; k < call.kids.size() && !fed; ++k) fed = fed_with_history(f, call.kids[k], name);
        // The value used must still be the previous iteration's: no assignment before the use.
        if (!fed || use > pos(assign) || first_assign[name] < use) continue;
        if (!reported.insert(c.stmt).second) continue;
        // A loop that trains fails or grows in backward(); one that never back-propagates
        // (autoregressive sampling) only chains each step's graph to the next: the cure there
        // is to run it without autograd.
        // A loop that trains fails (or grows) on any device; one that never back-propagates
        // only holds memory, which a CPU-only program pays in host RAM (impact policy).
        auto report = [&](std::string message) {
          return trains ? ctx.report("LL103", f.m.s(c.stmt).range, std::move(message))
                        : report_memory_claim(ctx, "LL103", f.m.s(c.stmt).range, std::move(message));
        };
        Finding* fd = report(
            trains && f.m.lang == Lang::Cpp
                ? "`" + name + "` comes from the previous iteration's forward and is fed back into the model "
                  "without `.detach()`: each iteration's graph is chained to every earlier one, so without "
                  "retain_graph the second iteration's backward() fails on the earlier steps' freed buffers; " +
                      cpp_retain_effect(f, li) + "; detach it each iteration (`" + name + " = " + name +
                      ".detach()`, truncated BPTT)"
            : trains ? "`" + name + "` comes from the previous iteration's forward and is fed back into the model "
                     "without `.detach()`: each iteration's graph is chained to every earlier one, so the second "
                     "iteration's backward() fails (without retain_graph=True the earlier steps' buffers are "
                     "freed; with it, step() has modified weights they saved); only where no step() runs between "
                     "backward() calls does retain_graph=True keep it running, and then memory and backward time "
                     "grow every iteration; detach it each iteration (`" + name +
                         " = " + name +
                         ".detach()`, truncated BPTT)"
                   : "`" + name + "` comes from the previous iteration's forward and is fed back into the model "
                     "with autograd enabled, in a loop that never back-propagates: each step's graph stays "
                     "chained to the next, so the memory of every step is held until the loop's result is "
                     "released; run the loop under `torch.no_grad()` (or `torch.inference_mode()`)");
        if (fd)
          for (int cj : L.calls)
            if (retain(f.calls[cj])) {
              fd->notes.push_back({f.e(f.calls[cj].call).range,
                                   "backward(retain_graph=True) keeps the growing graph alive on purpose"});
              break;
            }
        break;
      }
    }
  }
}

}  // namespace ll
