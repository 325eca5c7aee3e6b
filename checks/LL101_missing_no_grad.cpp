// LL101 missing-no-grad: a model forward in an evaluation/inference loop (or in an
// inference-only program, on a loaded model) runs with grad mode enabled.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "checks/common.hpp"
#include "checks/dataloader.hpp"
#include "checks/model_size.hpp"
#include "checks/flow.hpp"

namespace ll {
namespace {

constexpr long kFewForwards = 4;
// The same in code that runs once, where a loop of a fixed count is a demo.
constexpr long kFewDemoForwards = 16;
// A decoding loop (one item per step) inside loops over at most this many items is a demo.
constexpr long kFewDecodedItems = 64;
constexpr const char* kInteractiveReason =
    "the loop waits for a line the user types (`input()`) each time: one item per iteration, whose graph goes "
    "when the next replaces it";
// "the loop runs 4 times, the same as that many single forwards"
std::string few_trips_reason(long trips) {
  return trips == 1 ? "the loop runs once, the same as a single forward"
                    : "the loop runs " + std::to_string(trips) + " times, the same as that many single forwards";
}
constexpr const char* kActingReason =
    "every iteration steps one environment: the forward acts on one observation and nothing it returns outlives "
    "the step, so one observation's graph is kept at a time";
// Runs of a check on made tensors (a timing loop of `range(10)`, a loop over five models).
constexpr long kFewChecks = 100;

std::string no_grad_message(const std::string& model, const std::string& why,
                            const std::string& remedy = "run it under `torch.no_grad()` (or `torch.inference_mode()`)") {
  return "forward of " + model + " runs with autograd enabled " + why +
         ": activations of every forward pass are kept for a backward pass that never comes, raising "
         "peak memory, and any output kept beyond the iteration keeps its whole graph; " + remedy;
}

// The forward `c` runs in its loop after every backward and optimizer step of the loop's own
// iterations (at least one), and after an `eval()` of its model in the same loop that no
// `train()` undid: the validation part of a training iteration. (Per loop, asked once: where
// its last step is, and its mode switches by model.)
struct LoopSteps {
  bool nested_step = false;  // a step in a loop inside it
  uint32_t last_step = 0;    // 0: none
  std::map<std::string, std::vector<std::pair<uint32_t, bool>>> modes;  // model -> (where, eval?)
};
bool validation_after_step(const Facts& f, const CallSite& c, std::map<int, LoopSteps>& memo) {
  const std::string& d = f.dotted(f.forward_receiver(c.call));
  if (c.loop < 0 || d.empty()) return false;
  auto [it, fresh] = memo.try_emplace(c.loop);
  LoopSteps& ls = it->second;
  if (fresh)
    for (int ci : f.loops[c.loop].calls) {
      const CallSite& x = f.calls[ci];
      const uint32_t pos = f.e(x.call).range.begin;
      if (f.is_backprop(x) || f.optimizer_of_step(x) != kNone) {
        if (x.loop != c.loop) ls.nested_step = true;
        ls.last_step = std::max(ls.last_step, pos + 1);
      }
      const std::string_view a = f.callee_attr(x.call);
      if (x.loop == c.loop && (a == "eval"sv || a == "train"sv))
        ls.modes[f.dotted(f.callee_receiver(x.call))].emplace_back(pos, a == "eval"sv);
    }
  const uint32_t at = f.e(c.call).range.begin;
  if (ls.nested_step || ls.last_step == 0 || ls.last_step > at) return false;
  auto m = ls.modes.find(d);
  if (m == ls.modes.end()) return false;
  bool eval = false;
  for (const auto& [pos, is_eval] : m->second)
    if (pos < at) eval = is_eval;
  return eval;
}

// The outermost loop around `loop` that does not train (one finding per such loop).
int outermost_eval_loop(const Facts& f, int loop) {
  int outer = loop;
  while (outer >= 0 && f.loops[outer].parent >= 0 && !f.loop_trains(f.loops[outer].parent))
    outer = f.loops[outer].parent;
  return outer;
}

// The loop (or function) hands the model to code this file does not show (`x = saliency_mask(net, x)` from
// another module, `cam.explain(net, x)`): it may differentiate through the model, and
// `no_grad` around the loop would make it raise. Torch functions and Python builtins are seen.
bool hands_model_to_unseen_code(const Facts& f, const std::vector<int>& calls, const std::string& model) {
  if (model.empty()) return false;
  for (int ci : calls) {
    const CallSite& c = f.calls[ci];
    if (c.target_func != kNone || f.is_model_call(c) || python_builtin_call(f, c.call) ||
        starts_with(f.callee_qual(c.call), "torch."))
      continue;
    const Expr& x = f.e(c.call);
    for (size_t k = 1; k < x.kids.size(); ++k)
      if (f.dotted(f.unplaced(x.kids[k])) == model) return true;
  }
  return false;
}

Fix wrap_loop_fix(CheckContext& ctx, int outer, Id fallback_stmt, const std::string& no_grad) {
  Id st = ctx.facts.loops[outer].stmt != kNone ? ctx.facts.loops[outer].stmt : fallback_stmt;
  return wrap_statement_fix(ctx, st, "with " + no_grad + "():", "Wrap the loop in `with " + no_grad + "():`");
}

// Offers `fd` the fix that wraps evaluation loop `outer` in no_grad (with the file's spelling
// of it), when the file has one and the edit applies.
void offer_wrap_loop_fix(CheckContext& ctx, Finding* fd, int outer, Id fallback_stmt) {
  const std::string no_grad = spelling_of(ctx.facts.m, "torch.no_grad");
  if (no_grad.empty()) return;
  Fix fix = wrap_loop_fix(ctx, outer, fallback_stmt, no_grad);
  if (!fix.edits.empty()) fd->fixes.push_back(std::move(fix));
}

// A class that is certainly not a module: no base, `object`, or same-file such classes (a
// trainer, a runner). A method of it that runs `self.model(x)` runs its attribute.
bool plain_class(const Facts& f, Id cls, int depth = 0) {
  if (cls == kNone || depth > 8) return false;
  for (Id b : f.m.classes[cls].bases) {
    if (f.e(b).kind == ExprKind::Name && f.e(b).text == "object"sv && f.e(b).qname.empty()) continue;
    if (f.e(b).kind != ExprKind::Name) return false;
    const Id k = f.class_at(f.e(b).text, f.m.classes[cls].range.begin);
    if (k == kNone || k == cls || !plain_class(f, k, depth + 1)) return false;
  }
  return true;
}

// A pass of the trained model over the data beside the training loop, which never
// back-propagates: in an epoch loop that trains through a sibling loop running the same model,
// a loop over the same data (the same iterable, or a C++ loop of the same condition) or over
// data, computing accuracy or a loss it only reads as a number. "" when it is not one.
std::string evaluation_pass(const CheckContext& ctx, const CallSite& c) {
  const Facts& f = ctx.facts;
  const int l = c.loop;
  if (l < 0 || f.loops[l].parent < 0 || f.loop_trains(l) || f.loop_reaches_backprop(l)) return "";
  const int parent = f.loops[l].parent;
  if (!f.loop_trains(parent)) return "";
  const std::string& model = f.dotted(f.forward_receiver(c.call));
  if (model.empty()) return "";
  const Id iter = f.loops[l].iter;
  const bool data = walks_data(f, l, c.func);
  for (int s = 0; s < static_cast<int>(f.loops.size()); ++s) {
    if (s == l || f.loops[s].parent != parent || !f.loop_trains(s)) continue;
    const bool same_data = iter != kNone && f.loops[s].iter != kNone &&
                           ctx.text(f.e(iter).range) == ctx.text(f.e(f.loops[s].iter).range);
    if (!data && !same_data) continue;
    for (int ci : f.loops[s].calls)
      if (f.is_model_call(f.calls[ci]) && f.dotted(f.forward_receiver(f.calls[ci].call)) == model)
        return same_data ? "in a second pass over the training data, beside the training loop, that never "
                           "back-propagates"
                         : "in a pass over data beside the training loop that never back-propagates";
  }
  // Nested in the training loop's own body (`if step % 20 == 0:`, then a pass over the loaders)
  // that trains the same model outside it. Here the pass itself must walk data: its own
  // iterable is the training loop's, a loader or batches (not an inner loop of the step, which
  // every loop in a loader's loop would pass for).
  const Loop& P = f.loops[parent];
  const bool same_as_parent = iter != kNone && P.iter != kNone && ctx.text(f.e(iter).range) == ctx.text(f.e(P.iter).range);
  const std::string& own_iter = f.dotted(iter);
  const bool walks = same_as_parent || f.is_eval_source(iter) || iterates_batches(f, l) ||
                     own_iter.find("loader") != std::string::npos;
  if (!walks) return "";
  const Range& inner = f.loops[l].range;
  for (int ci : P.calls) {
    const CallSite& x = f.calls[ci];
    const Range& at = f.e(x.call).range;
    if (at.begin >= inner.begin && at.end <= inner.end) continue;
    if (f.is_model_call(x) && f.dotted(f.forward_receiver(x.call)) == model)
      return same_as_parent ? "in a second pass over the training data, inside the training loop, that never "
                              "back-propagates"
                            : "in a pass over data inside the training loop that never back-propagates";
  }
  return "";
}

// An evaluation in one forward: a function with no loop of forwards of its own that switches the
// model to eval mode (or is named like an evaluation) and runs it once (over a whole split, `out =
// model(X_test)`, a full-batch graph network's `test()`), never trains, and is
// called by a training loop of the file (every epoch). Its activations are kept for a backward
// that never comes, a peak of the whole split's graph each time. "" when it is not one.
// A closure a factory hands back (`def get_transforms(model): def sample_fn(z): return model(z)
// ...; return sample_fn, density_fn`) runs where what the factory returned is called. Grad is
// off there when every call of the factory sits under `no_grad`, and every use of the names its
// result is bound to does too (handed to plotting helpers inside the same `with` block).
bool closure_used_under_no_grad(const Facts& f, Id g) {
  const Id factory = f.m.funcs[g].parent;
  if (factory == kNone || !f.callers(g).empty()) return false;
  bool returned = false;
  for (Id r : f.returned_values(factory))
    for_each_expr(f.m, r, [&](Id x) {
      returned = returned || (f.e(x).kind == ExprKind::Name && f.e(x).text == f.m.funcs[g].name);
      return !returned;
    });
  if (!returned || f.callers(factory).empty()) return false;
  for (int ci : f.callers(factory)) {
    const CallSite& call = f.calls[ci];
    if (!f.grad_off(call) || call.stmt == kNone) return false;
    const Stmt& st = f.m.s(call.stmt);
    if (st.kind != StmtKind::Assign || st.value != call.call) return false;
    std::set<std::string> names;
    for (Id t : st.targets)
      for_each_expr(f.m, t, [&](Id x) {
        if (f.e(x).kind == ExprKind::Name) names.insert(f.e(x).text);
        return true;
      });
    // Every statement of the caller's scope that reads one of the names runs with grad off.
    for (Id sid : f.stmts_in(call.func)) {
      if (sid == call.stmt) continue;
      const Stmt& s = f.m.s(sid);
      bool reads = false;
      auto scan = [&](Id root) {
        for_each_expr(f.m, root, [&](Id x) {
          reads = reads || (f.e(x).kind == ExprKind::Name && names.count(f.e(x).text));
          return !reads;
        });
      };
      scan(s.value);
      for (Id t : s.targets) scan(t);
      for (Id it : s.items) scan(it);
      if (!reads) continue;
      const auto si = f.stmt_index.find(sid);
      if (si == f.stmt_index.end() || !f.grad_off(f.stmt_sites[si->second])) return false;
    }
  }
  return true;
}

// Per function of the file, asked once each: whether a loop of it runs a model, it trains, a
// caller back-propagates its result, or an evaluation loop calls it (which reports it at that
// call); else the training loops' calls of it. `asked` bounds the forwards judged per function.
struct SinglePassFunc {
  int verdict = 0;  // 0 not asked, 1 no, 2 judged per forward
  std::vector<int> callers;
  int asked = 0;
};
using SinglePassMemo = std::vector<SinglePassFunc>;

// The parameters of `func` whose value a call of it shows: a literal argument, else the
// parameter's literal default. A parameter the function rebinds (`train = train and not
// args.debug`) is not the argument.
Env literal_arguments(const Facts& f, const CallSite& caller, Id func) {
  const Function& fn = f.m.funcs[func];
  Env env;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const Id a = f.argument_for(caller.call, func, fn.params[i]);
    std::optional<Known> v;
    if (a != kNone) {
      if (const Expr* lit = f.literal_of(a, caller.func)) v = known_literal(*lit);
    } else if (i < fn.param_defaults.size()) {
      v = known_default(fn.param_defaults[i]);
    }
    if (v && f.own_bindings(func, fn.params[i]).empty()) env[fn.params[i]] = *v;
  }
  return env;
}

// Does `caller` run the forward `c` of the function it calls: no `if` on the way to it is
// decided against it by the literal arguments (or defaults) the call hands in
// (`accuracy(logits, y)` with `is_logits=True` skips `logits = model(x)` under `if not is_logits`).
bool call_runs_forward(const Facts& f, const CallSite& caller, const CallSite& c) {
  if (c.stmt == kNone) return true;
  const Function& fn = f.m.funcs[c.func];
  const Env env = literal_arguments(f, caller, c.func);
  if (env.empty()) return true;
  std::vector<std::pair<Id, bool>> conds;
  if (!conditions_to(f, fn.body, c.stmt, f.e(c.call).range.begin, conds)) return true;
  // And a conditional expression around it (`y_hat = X if logits else model(X)`).
  const Range& at = f.e(c.call).range;
  for_each_expr(f.m, f.m.s(c.stmt).value, [&](Id x) {
    const Expr& v = f.e(x);
    if (v.range.begin > at.begin || v.range.end < at.end) return false;  // not around the call
    if (v.kind == ExprKind::Conditional && v.kids.size() == 3) {
      const Range& body = f.e(v.kids[0]).range;
      const Range& other = f.e(v.kids[2]).range;
      if (body.begin <= at.begin && at.end <= body.end) conds.emplace_back(v.kids[1], true);
      else if (other.begin <= at.begin && at.end <= other.end) conds.emplace_back(v.kids[1], false);
    }
    return true;
  });
  for (const auto& [cond, branch] : conds)
    if (auto v = decide(f, c.func, cond, env); v && truthy(*v) != branch) return false;
  return true;
}

bool loop_batch(const Facts& f, const CallSite& caller, Id a, int depth);

// The most samples a written-out batch of made tensors holds and still counts as one batch
// (a grid of samples to draw: 64 latents).
constexpr long kWrittenOutBatch = 256;

// Does `x`, read in `func`, hold one batch: drawn with `next(...)` (`x, y = next(iter(val_loader))`),
// or, for a parameter, what each of `callers` hands in is the batch its training loop walks
// (`for x, y in loader: ... show(model, x)`)? Through moves, casts and reshapes, and the
// bindings that reach the read.
bool holds_one_batch(const Facts& f, Id func, Id x, const std::vector<int>* callers, long* made, int depth = 0) {
  if (x == kNone || depth > 6) return false;
  for (int hops = 0; hops < 8 && f.e(x).kind == ExprKind::Call; ++hops) {
    const Expr& callee = f.e(f.e(x).kids[0]);
    if (callee.kind == ExprKind::Name && callee.text == "next"sv && f.callee_qual(x).empty() &&
        f.bindings(kNone, "next").empty())
      return true;
    // `loader.__iter__().next()` (Python 2's spelling), `it.__next__()`.
    if (f.e(x).kids.size() == 1 && in(f.callee_attr(x), {"next", "__next__"})) return true;
    // A batch the program makes, of a written-out size (`torch.randn(64, z_dim, 1, 1)`: latents
    // to sample from).
    if (in(f.callee_qual(x), {"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty"}) &&
        f.e(x).kids.size() > 1) {
      Id first = f.e(x).kids[1];
      if (f.e(first).kind == ExprKind::Sequence && !f.e(first).kids.empty()) first = f.e(first).kids[0];
      const Expr& n = f.e(first);
      if (n.kind != ExprKind::Literal || n.lit != LitKind::Int) return false;
      const long v = std::strtol(n.text.c_str(), nullptr, 10);
      if (v <= 0 || v > kWrittenOutBatch) return false;
      *made = std::max(*made, v);
      return true;
    }
    if (!in(f.callee_attr(x), {"to", "cuda", "float", "half", "double", "long", "contiguous", "permute", "view",
                               "reshape", "unsqueeze", "squeeze"}))
      return false;
    x = f.callee_receiver(x);
    if (x == kNone) return false;
  }
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::Subscript && !e.kids.empty()) return holds_one_batch(f, func, e.kids[0], callers, made, depth + 1);
  if (e.kind != ExprKind::Name) return false;
  const Id st = f.stmt_of(x);
  if (st == kNone) return false;
  bool outside = false;
  const std::vector<Def> defs = f.flow().reaching(st, e.text, &outside);
  if (outside) {
    // A parameter: the batch each training loop hands in.
    if (!defs.empty() || func == kNone || !callers || callers->empty() || !f.is_param(func, e.text)) return false;
    for (int ci : *callers) {
      const CallSite& caller = f.calls[ci];
      const Id a = f.argument_for(caller.call, func, e.text);
      if (a == kNone || !loop_batch(f, caller, a, depth + 1)) return false;
    }
    return true;
  }
  if (defs.empty()) return false;
  for (const Def& df : defs) {
    if (df.value == kNone) return false;
    if (df.kind == DefKind::Unpacked || df.kind == DefKind::Assign) {
      if (!holds_one_batch(f, func, df.value, nullptr, made, depth + 1)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// Is `a`, an argument of `caller` (in a training loop), that loop's batch: bound by the target
// of a loop around the call (`for x, y in loader`), or from it through moves and unpacking?
bool loop_batch(const Facts& f, const CallSite& caller, Id a, int depth) {
  if (a == kNone || depth > 8) return false;
  for (int hops = 0; hops < 8 && f.e(a).kind == ExprKind::Call; ++hops) {
    if (!in(f.callee_attr(a), {"to", "cuda", "float", "half", "double", "contiguous"})) return false;
    a = f.callee_receiver(a);
    if (a == kNone) return false;
  }
  const Expr& e = f.e(a);
  if (e.kind == ExprKind::Subscript && !e.kids.empty()) return loop_batch(f, caller, e.kids[0], depth + 1);
  if (e.kind != ExprKind::Name) return false;
  const Id st = f.stmt_of(a);
  if (st == kNone) return false;
  bool outside = false;
  const std::vector<Def> defs = f.flow().reaching(st, e.text, &outside);
  if (outside || defs.empty()) return false;
  for (const Def& df : defs) {
    if (df.kind == DefKind::LoopTarget) {
      bool around = false;
      for (int l = caller.loop; l >= 0 && !around; l = f.loops[l].parent) around = f.loops[l].stmt == df.stmt;
      if (!around) return false;
    } else if ((df.kind == DefKind::Assign || df.kind == DefKind::Unpacked) && df.value != kNone) {
      if (!loop_batch(f, caller, df.value, depth + 1)) return false;
    } else {
      return false;
    }
  }
  return true;
}

std::string single_pass_evaluation(const Facts& f, const CallSite& c, SinglePassMemo& memo, Range* called_at,
                                   std::string* one_batch, bool* per_pass_of_an_outer_loop) {
  if (c.loop >= 0 || c.func == kNone || c.in_lambda) return "";
  const std::string& d = f.dotted(f.forward_receiver(c.call));
  if (d.empty()) return "";
  if (memo.empty()) {
    memo.resize(f.m.funcs.size());
    // (A comprehension over the masks that reads the one prediction is no loop of forwards.)
    for (const Loop& l : f.loops)
      if (l.func != kNone && memo[l.func].verdict != 1 &&
          std::any_of(l.calls.begin(), l.calls.end(), [&](int ci) { return f.is_model_call(f.calls[ci]); }))
        memo[l.func].verdict = 1;
  }
  SinglePassFunc& m = memo[c.func];
  if (m.verdict == 0) {
    m.verdict = 1;
    const bool trains =
        f.reaches(c.func, [&](const CallSite& x) { return f.is_backprop(x) || f.optimizer_of_step(x) != kNone; }) ||
        f.called_from_training(c.func);
    for (int ci : trains ? std::vector<int>{} : f.callers(c.func)) {
      const CallSite& caller = f.calls[ci];
      if (caller.loop < 0 || caller.in_lambda || f.grad_off(caller) || caller.grad_set) continue;
      if (!f.loop_trains(caller.loop)) {
        m.callers.clear();
        break;
      }
      m.callers.push_back(ci);
    }
    if (!m.callers.empty()) m.verdict = 2;
  }
  if (m.verdict != 2 || ++m.asked > 256) return "";
  const std::string& name = f.m.funcs[c.func].name;
  const bool evals = f.eval_called_before(c.func, d, f.e(c.call).range.begin);
  if (!evals && (!f.is_eval_function_name(name) || f.is_test_file || f.part_of_forward(c.func))) return "";
  for (int ci : m.callers) {
    if (!call_runs_forward(f, f.calls[ci], c)) continue;
    *called_at = f.e(f.calls[ci].call).range;
    // (Called from a loop whose own body does not back-propagate, an epoch loop around the
    // batches: once per pass of it, not per batch.)
    const int at = f.calls[ci].loop;
    // (A full-batch step in a function the loop calls, `loss = train()`, trains in its body.)
    auto steps = [&](const CallSite& x) { return f.is_backprop(x) || f.optimizer_of_step(x) != kNone; };
    *per_pass_of_an_outer_loop = std::none_of(f.loops[at].calls.begin(), f.loops[at].calls.end(), [&](int x) {
      const CallSite& y = f.calls[x];
      return y.loop == at && (steps(y) || (y.target_func != kNone && f.reaches(y.target_func, steps)));
    });
    // Impact: one batch (no larger than a training step's), whose graph dies when the function
    // returns, does not raise the peak the training step sets.
    const Expr& fwd = f.e(c.call);
    long made = 0;
    const std::string& input = fwd.kids.size() > 1 ? f.dotted(fwd.kids[1]) : std::string();
    const std::string shown = input.empty() ? "" : "`" + input + "`, ";
    if (fwd.kids.size() > 1 && holds_one_batch(f, c.func, fwd.kids[1], &m.callers, &made))
      *one_batch = made > 0 ? "its input, " + shown + "is a batch of " + std::to_string(made) +
                                  " samples the program makes, and the graph dies when `" + name +
                                  "()` returns: one small forward per call"
                            : "its input is one batch, " + shown + "no larger than a training step's, and the graph "
                              "dies when `" + name + "()` returns: below the peak the training step sets";
    return (evals ? "after `" + d + ".eval()` in `" + name + "()`" : "in evaluation function `" + name + "`") +
           ", which a training loop calls (one forward over everything it is handed)";
  }
  return "";
}

// Does a method of class `cls`, or of a same-file base of it, bind attribute `d` (`self.model =
// ...`)?
bool binds_attribute(const Facts& f, Id cls, const std::string& d, int depth = 0) {
  if (cls == kNone || depth > 8) return false;
  for (Id fn : f.m.classes[cls].methods)
    for (Id sid : f.stmts_in(fn)) {
      const Stmt& st = f.m.s(sid);
      if (st.kind == StmtKind::Assign || st.kind == StmtKind::AnnAssign)
        for (Id t : st.targets)
          if (f.dotted(t) == d) return true;
    }
  for (Id b : f.m.classes[cls].bases)
    if (f.e(b).kind == ExprKind::Name)
      if (const Id k = f.class_at(f.e(b).text, f.m.classes[cls].range.begin); k != kNone && k != cls)
        if (binds_attribute(f, k, d, depth + 1)) return true;
  return false;
}

// Does the function ask autograd for gradients of a tensor it works on (`image =
// image.requires_grad_()`, `x.requires_grad = True`)? Then it runs its forward to take them,
// through code this file may not show (a saliency method's `self.extractor.grads(image, out)`
// calling `torch.autograd.grad` in another module), and grad mode must stay on.
bool asks_for_gradients(const Facts& f, Id g) {
  // (At the function's top level: `if adversarial: x.requires_grad_()` is one path of several.)
  const std::vector<Id>& top = f.m.funcs[g].body;
  auto at_top = [&](Id sid) { return std::find(top.begin(), top.end(), sid) != top.end(); };
  for (int ci : f.calls_in(g)) {
    const CallSite& c = f.calls[ci];
    if (f.callee_attr(c.call) != "requires_grad_"sv || !at_top(f.stmt_of(c.call))) continue;
    const Id a = f.arg(c.call, 0, "requires_grad");
    if (a == kNone || (f.e(a).kind == ExprKind::Literal && f.e(a).lit == LitKind::True)) return true;
  }
  for (Id sid : top) {
    const Stmt& s = f.m.s(sid);
    if (s.kind != StmtKind::Assign || s.value == kNone || f.e(s.value).kind != ExprKind::Literal ||
        f.e(s.value).lit != LitKind::True)
      continue;
    for (Id t : s.targets)
      if (f.e(t).kind == ExprKind::Attribute && f.e(t).text == "requires_grad"sv) return true;
  }
  return false;
}

// Methods of a model that run no forward: registrations, settings, queries, save and load.
constexpr std::string_view kQueryPrefixes[] = {"register_", "set_", "get_", "num_", "is_", "save", "load"};

// The model a helper's forward runs: the receiver of its forward (`model(x)`, `model.forward(x)`),
// or of a method of the model it calls (`model.encode(src)`).
Id helper_model(const Facts& f, const CallSite& fw) {
  return f.is_model_call(fw) ? f.forward_receiver(fw.call) : f.callee_receiver(fw.call);
}

// The forward a same-file helper always runs, for an evaluation loop that calls it
// (`dev_loss += batch_loss(x, y).item()`, where the training step calls `batch_loss` too):
// one at the helper's top level, with grad not disabled there, in a helper that sets no grad
// mode itself and never back-propagates. kNone when there is none.
const CallSite* helper_forward(const Facts& f, Id g, std::map<Id, const CallSite*>& memo) {
  auto it = memo.find(g);
  if (it != memo.end()) return it->second;
  const CallSite* fw = nullptr;
  bool ok = !f.decorated_off(g) && !asks_for_gradients(f, g) &&
            !f.reaches(g, [&](const CallSite& x) { return f.is_backprop(x) || f.optimizer_of_step(x) != kNone; });
  for (int ci : f.calls_in(g)) {
    if (!ok) break;
    const CallSite& c = f.calls[ci];
    const std::string& q = f.callee_qual(c.call);
    if (in(q, {"torch.set_grad_enabled", "torch.no_grad", "torch.inference_mode", "torch.enable_grad"}) || c.local_off)
      ok = false;
    else if (!fw && c.loop < 0 && !c.in_lambda && f.is_model_call(c))
      fw = &c;
  }
  // Else a method of the model it is handed, at its top level (`memory = model.encode(src)` of a
  // greedy decoder, before its loop of `model.decode(...)` steps): another forward of it.
  if (!fw && ok)
    for (int ci : f.calls_in(g)) {
      const CallSite& c = f.calls[ci];
      if (c.loop >= 0 || c.in_lambda || !model_method_call(f, c)) continue;
      const Id r = f.callee_receiver(c.call);
      // (Not `self`: a module's own method calling another is its computation.)
      if (f.e(r).kind == ExprKind::Name && f.e(r).text != "self"sv && f.e(r).text != "cls"sv &&
          f.is_param(g, f.e(r).text) && f.own_bindings(g, f.e(r).text).empty() &&
          !in(f.callee_attr(c.call), {"forward"sv, "apply"sv, "add_module"sv, "named_modules"sv, "buffers"sv}) &&
          std::none_of(std::begin(kQueryPrefixes), std::end(kQueryPrefixes),
                       [&](std::string_view p) { return starts_with(f.callee_attr(c.call), p); })) {
        fw = &c;
        break;
      }
    }
  if (fw) {
    Id callee = helper_model(f, *fw);
    const std::string& d = f.dotted(callee);
    // `self.<layer>(x)` runs the object's own model: in a method of a module class, the module
    // itself (`agent.get_action(obs)`: the caller's `agent`); in a method of a plain class, its
    // attribute (`self.infer_batch(batch)` of a trainer: `self.model`). Elsewhere (a class whose
    // base the file does not show may be a module) `self` is something else.
    if (d.empty() || (starts_with(d, "self.") && (f.class_of(g) == kNone || f.class_freezes(f.class_of(g), d))) ||
        f.frozen_at(g, d, f.e(fw->call).range.begin) ||
        f.forward_grad_off(g, callee) || f.output_read_as_numpy(*fw))
      fw = nullptr;
  }
  return memo[g] = ok ? fw : nullptr;
}

// The file uses an API that PyTorch 0.4 introduced: `x.item()`, `torch.no_grad()` (or its
// relatives), `torch.device(...)`, `torch.cuda.amp` / `torch.amp`, a loss's `reduction=`. It
// runs on a PyTorch that ignores `volatile` and has no `.data[0]` on 0-dim losses.
bool legacy_scalar_reads(const Facts& f);
bool legacy_loss_reads(const Facts& f);

// `x.data[0]` (how PyTorch before 0.4 read a scalar): `x`, else kNone.
Id data_0_receiver(const Facts& f, Id x) {
  const Expr& v = f.e(x);
  if (v.kind != ExprKind::Subscript || v.kids.size() != 2 || f.e(v.kids[1]).kind != ExprKind::Literal ||
      f.e(v.kids[1]).text != "0"sv || f.e(v.kids[0]).kind != ExprKind::Attribute || f.e(v.kids[0]).text != "data"sv ||
      f.e(v.kids[0]).kids.empty())
    return kNone;
  return f.e(v.kids[0]).kids[0];
}

// A NumPy value made in the expression itself: `pred.cpu().numpy()`, `np.float32(x)`, and what
// is taken of them (`pred.cpu().numpy()[0]`, `.squeeze()`). Its `.item()` is NumPy's.
bool numpy_value(const Facts& f, Id x) {
  for (int depth = 0; x != kNone && depth < 8; ++depth) {
    const Expr& e = f.e(x);
    if (e.kind == ExprKind::Subscript && !e.kids.empty()) {
      x = e.kids[0];
      continue;
    }
    if (e.kind != ExprKind::Call) return false;
    if (f.callee_attr(x) == "numpy"sv || starts_with(f.callee_qual(x), "numpy.")) return true;
    x = f.callee_receiver(x);
  }
  return false;
}

// Why a forward of code written for PyTorch before 0.4 is weak: a `volatile` input, or the
// file's 0.3 idioms.
constexpr const char* kVolatileReason =
    "the function builds `Variable(..., volatile=True)`, how PyTorch before 0.4 disabled autograd; since 0.4 "
    "`volatile` is ignored and the graph is recorded, which matters once this code is ported";
constexpr const char* kPre04Reason =
    "the file is written for PyTorch before 0.4 (`Variable` inputs, sums of `x.data[0]`, which raises on the 0-dim "
    "losses of later versions), which had no `torch.no_grad()`; this matters once the code is ported";

bool written_for_0_4_or_later(const Facts& f) {
  bool item = false;
  for (const CallSite& c : f.calls) {
    const std::string& q = f.callee_qual(c.call);
    if (in(q, {"torch.no_grad", "torch.inference_mode", "torch.set_grad_enabled", "torch.device"}) ||
        starts_with(q, "torch.cuda.amp.") || starts_with(q, "torch.amp."))
      return true;
    const Expr& x = f.e(c.call);
    if (f.callee_attr(c.call) == "item"sv && x.kids.size() == 1 && !numpy_value(f, f.callee_receiver(c.call)))
      item = true;
    for (const auto& k : x.kw)
      if (k == "reduction"sv) return true;
  }
  // `.item()` is NumPy's too (`checkpoint['filter_sizes'].item()`): no evidence in a file that
  // reads its losses as `loss.data[0]`, which raises on the 0-dim losses of 0.5 and later.
  return item && !legacy_scalar_reads(f) && !legacy_loss_reads(f);
}

// Reads of a loss as `loss.data[0]` anywhere (`losses.update(loss.data[0], n)`,
// `print(cost.data[0])`): a name the file back-propagates or named for a loss. (Elsewhere
// `out.data[0]` may be the first row of a batch.)
bool legacy_loss_reads(const Facts& f) {
  // The names read as `name.data[0]` (cheap first: most files have none).
  std::vector<std::string_view> read;
  for (Id x = 0; x < static_cast<Id>(f.m.exprs.size()); ++x)
    if (const Id r = data_0_receiver(f, x); r != kNone && f.e(r).kind == ExprKind::Name) read.push_back(f.e(r).text);
  if (read.empty()) return false;
  std::set<std::string_view> backpropagated;
  for (const CallSite& c : f.calls)
    if (f.is_backward(c))
      if (const Id r = f.callee_receiver(c.call); r != kNone && f.e(r).kind == ExprKind::Name)
        backpropagated.insert(f.e(r).text);
  return std::any_of(read.begin(), read.end(), [&](std::string_view n) {
    return backpropagated.count(n) || Facts::named_like_a_loss(n);
  });
}

// The function wraps inputs in `Variable(x, volatile=True)` (or `volatile=<flag>`): PyTorch before 0.4 ran such a
// forward without autograd. Since 0.4 `volatile` is ignored (with a warning) and the graph is
// recorded, but the code was written not to record one, for a PyTorch that no longer runs it.
// (Not in a file written for 0.4 or later, which runs where `volatile` is ignored.)
bool legacy_volatile(const Facts& f, Id func, bool modern) {
  if (modern) return false;
  for (int ci : f.calls_in(func)) {
    Id call = f.calls[ci].call;
    const std::string& q = f.callee_qual(call);
    if (q != "torch.autograd.Variable"sv && q != "torch.autograd.variable.Variable"sv) continue;
    // `volatile=True`, or a flag the evaluation pass sets (`volatile=is_validate`).
    Id v = f.arg(call, static_cast<size_t>(-1), "volatile");
    if (v != kNone && !(f.e(v).kind == ExprKind::Literal && f.e(v).lit != LitKind::True)) return true;
  }
  // A helper of the project handed the flag (`utils.variable(x, volatile=True)`, which wraps
  // `Variable(x, volatile=volatile)`): `volatile` names nothing else in PyTorch.
  for (int ci : f.calls_in(func)) {
    const Id call = f.calls[ci].call;
    if (starts_with(f.callee_qual(call), "torch")) continue;
    const Id v = f.arg(call, static_cast<size_t>(-1), "volatile");
    if (v != kNone && f.e(v).kind == ExprKind::Literal && f.e(v).lit == LitKind::True) return true;
  }
  return false;
}

// The model is one this file defines: built from a same-file module class (or a same-file
// builder), directly or as an element of a written-out list the loop walks
// (`for net in [ResNet18(10), ResNet34(10)]:`). A file's self-check of its own models, not
// a benchmark of someone else's.
bool own_model(const Facts& f, const CallSite& c) {
  Id callee = f.forward_receiver(c.call);
  if (callee == kNone || f.e(callee).kind != ExprKind::Name) return false;
  auto built_here = [&](Id v) {
    v = f.unplaced(v);
    if (f.e(v).kind != ExprKind::Call) return false;
    const Id k = f.constructed_class(v);
    if (k != kNone) return f.is_module_class(k);
    return f.same_file_target(v, c.func) != kNone;
  };
  std::vector<Id> vals = f.bindings(c.func, f.e(callee).text);
  // A loop target: the elements of the written-out list it walks.
  for (int l = c.loop; l >= 0 && vals.empty(); l = f.loops[l].parent) {
    const Loop& L = f.loops[l];
    if (L.stmt == kNone || L.iter == kNone || f.m.s(L.stmt).targets.size() != 1 ||
        f.dotted(f.m.s(L.stmt).targets[0]) != f.e(callee).text || f.e(L.iter).kind != ExprKind::Sequence)
      continue;
    vals = f.e(L.iter).kids;
  }
  if (vals.empty()) return false;
  for (Id v : vals)
    if (!built_here(v)) return false;
  return true;
}

// Do the forward's outputs flow, after its loop, into a value that its function (or a function
// nested in it) back-propagates? `sum_fx += mu.sum(0)` over a test set, then a statistic of the
// sums handed to `backward()` (a two-sample test's attribution; a pruning criterion's gradient
// of a loss summed over a few batches): the graph is wanted. A binding of the value
// back-propagated that reaches the backward must come from the outputs' chain, not from the
// backward's own loop (a training loop that reuses the names of an evaluation before it
// computes a new loss each step).
// `backprops`: the file's backward calls by the function holding them and each function it is
// nested in (BackpropsByFunction).
using BackpropsByFunction = std::map<Id, std::vector<int>>;
BackpropsByFunction backprops_by_function(const Facts& f) {
  BackpropsByFunction out;
  for (int i = 0; i < static_cast<int>(f.calls.size()); ++i) {
    const CallSite& b = f.calls[i];
    if (b.stmt == kNone || !f.is_backprop(b)) continue;
    out[b.func].push_back(i);
    for (Id g = b.func, hops = 0; g != kNone && hops < 16; ++hops) {
      g = f.m.funcs[g].parent;
      if (g != kNone) out[g].push_back(i);
    }
  }
  return out;
}

// Does statement `stmt` let go of its value: a bare expression (when `bare` counts) or an
// assignment to `_` alone? Nothing keeps a forward's output there (`_ = model(dummy)`).
bool kept_nowhere(const Facts& f, Id stmt, bool bare) {
  const Stmt& st = f.m.s(stmt);
  return (st.kind == StmtKind::Expr && bare) ||
         (st.kind == StmtKind::Assign && st.targets.size() == 1 && f.dotted(st.targets[0]) == "_"sv);
}

// The forward of an object of another module's class (`cam.forward(x)`) in a loop (else a
// function) that also calls a method of that class that back-propagates (`cam.heatmap(label)`,
// which runs `self.logits.backward(...)` on what the forward kept on the object): the graph is
// used (FileSummary::backprop_methods).
bool backpropagated_by_its_object(const Facts& f, const CallSite& c) {
  if (!f.project || f.project->backprop_method_imports.empty() || (c.loop < 0 && c.func == kNone)) return false;
  const Id recv = f.forward_receiver(c.call);
  const std::string& owner = f.dotted(recv);
  if (owner.empty()) return false;
  const std::vector<Id> values = f.bindings_at(c.func, owner, recv);
  std::string q = f.imported_class_built_by(values);
  // A class a star import brings: named as defined, where the file defines no such class.
  if (q.empty() && !values.empty()) {
    std::string name;
    for (Id v : values) {
      const Expr& callee = f.e(f.e(v).kind == ExprKind::Call ? f.e(v).kids[0] : kNone);
      if (callee.kind != ExprKind::Name || !callee.qname.empty() || (!name.empty() && callee.text != name)) {
        name.clear();
        break;
      }
      name = callee.text;
    }
    if (!name.empty() && f.class_at(name, UINT32_MAX) == kNone) q = name;
  }
  if (q.empty()) return false;
  // Calling the object itself runs its class's `__call__` (`masks = grad_cam(images)`, whose
  // `__call__` back-propagates to read the gradients): that call is the back-propagation.
  if (f.e(f.e(c.call).kids[0]).kind == ExprKind::Name && f.e(f.e(c.call).kids[0]).text == owner &&
      f.project->backprop_method_imports.count(q + ".__call__"))
    return true;
  for (int ci : c.loop >= 0 ? f.loops[c.loop].calls : f.calls_in(c.func)) {
    const CallSite& x = f.calls[ci];
    if (f.dotted(f.callee_receiver(x.call)) == owner &&
        f.project->backprop_method_imports.count(q + "." + f.callee_attr(x.call)))
      return true;
  }
  return false;
}

bool outputs_backpropagated_later(const Facts& f, const CallSite& c, const BackpropsByFunction& backprops) {
  if (c.loop < 0 || c.stmt == kNone) return false;
  const auto candidates = backprops.find(c.func);
  if (candidates == backprops.end()) return false;
  const Stmt& s = f.m.s(c.stmt);
  if (s.kind != StmtKind::Assign && s.kind != StmtKind::AugAssign) return false;
  std::set<std::string> names;
  for (Id t : s.targets)
    for_each_expr(f.m, t, [&](Id y) {
      if (const std::string& d = f.dotted(y); !d.empty()) names.insert(d);
      return f.e(y).kind == ExprKind::Sequence || f.e(y).kind == ExprKind::Starred;
    });
  if (names.empty()) return false;
  follow_flow(f, f.stmts_in(c.func), names, 16, true);
  const uint32_t after = f.loops[c.loop].range.end;
  auto nested = [&](Id g) {
    for (int hops = 0; g != kNone && hops < 16; ++hops, g = f.m.funcs[g].parent)
      if (f.m.funcs[g].parent == c.func && c.func != kNone) return true;
    return false;
  };
  auto in_loop_with = [&](Id func, Id stmt, Id def) {  // the definition is in a loop around the call
    for (const Loop& L : f.loops)
      if (L.func == func && L.range.begin <= f.m.s(stmt).range.begin &&
          f.m.s(stmt).range.end <= L.range.end && L.range.begin <= f.m.s(def).range.begin &&
          f.m.s(def).range.end <= L.range.end)
        return true;
    return false;
  };
  const Range& loop_range = f.loops[c.loop].range;
  // Does the value `d` holds just before statement `at` of function `func` come from the loop's
  // outputs, binding by binding (flow-sensitive: a later `out = model(xb)` after the loop is
  // not the loop's)? A name a nested function reads without binding it (not a parameter) is a
  // closure cell: its value where the nested function is defined counts.
  std::function<bool(const std::string&, Id, Id, int)> from_loop = [&](const std::string& d, Id at, Id func,
                                                                         int depth) -> bool {
    if (depth > 12 || !names.count(d)) return false;
    bool outside = false;
    const std::vector<Def> defs = f.flow().reaching(at, d, &outside);
    if (defs.empty() && func != c.func && func != kNone && !f.is_param(func, d) && f.m.funcs[func].stmt != kNone)
      return from_loop(d, f.m.funcs[func].stmt, f.m.funcs[func].parent, depth + 1);
    for (const Def& df : defs) {
      if (df.stmt == kNone || df.value == kNone || in_loop_with(func, at, df.stmt)) continue;
      const Range& r = f.m.s(df.stmt).range;
      if (func == c.func && loop_range.begin <= r.begin && r.end <= loop_range.end) return true;
      bool hit = false;
      for_each_expr(f.m, df.value, [&](Id y) {
        const std::string& m = f.dotted(y);
        if (!m.empty() && names.count(m) && from_loop(m, df.stmt, func, depth + 1)) hit = true;
        return !hit;
      });
      if (hit) return true;
    }
    return false;
  };
  for (int bi : candidates->second) {
    const CallSite& b = f.calls[bi];
    const bool here = b.func == c.func;
    if (!(here && f.e(b.call).range.begin >= after) && !nested(b.func)) continue;
    bool wanted = false;
    for_each_expr(f.m, b.call, [&](Id y) {
      const std::string& d = f.dotted(y);
      if (!d.empty() && from_loop(d, b.stmt, b.func, 0)) wanted = true;
      return !wanted;
    });
    if (wanted) return true;
  }
  return false;
}

// A model that is one linear layer: `nn.Linear(d, k)` itself, or a module whose forward
// returns one such layer applied to its input (a linear probe on features), of this file or
// imported from another of the run. Its graph saves the input and the weight, both alive
// anyway: nothing beyond the output is kept.
bool linear_receiver(const Facts& f, const CallSite& c) {
  const Id callee = f.forward_receiver(c.call);
  if (callee == kNone || f.dotted(callee).empty()) return false;
  const std::string& name = f.dotted(callee);
  std::vector<Id> vals = f.bindings_at(c.func, name, c.call);
  // `logreg = logreg.to(device)` moves the same object: what it was bound to before counts.
  auto moved_self = [&](Id v) { return f.dotted(f.unplaced(v)) == name; };
  if (std::any_of(vals.begin(), vals.end(), moved_self)) vals = f.bindings(c.func, name);
  vals.erase(std::remove_if(vals.begin(), vals.end(), moved_self), vals.end());
  if (vals.empty()) return false;
  for (Id v : vals) {
    if (f.linear_layer(v)) continue;
    v = f.unplaced(v);
    if (f.e(v).kind != ExprKind::Call) return false;
    if (const Id k = f.constructed_class(v); k != kNone) {
      if (!f.one_linear_class(k)) return false;
      continue;
    }
    const std::string& q = f.e(f.e(v).kids[0]).qname;
    if (q.empty() || !f.project || !f.project->linear_classes.count(q)) return false;
  }
  return true;
}

// The forward's own loop (not an enclosing one: a folder typed once, then walked, is a pass
// over data) waits for a line the user types each time (Python's builtin `input()`, not a
// function of that name the file defines or imports): an interactive demo, one item per
// iteration, whose graph goes when the next replaces it.
// The `input()` must run on every iteration (not under `if step_through:` in a pass over a
// loader), and nothing the forward made may be carried to the next iteration (a chat's
// `past = out.past_key_values`: its graph grows turn after turn).
bool interactive_loop(const Facts& f, const CallSite& c) {
  if (f.m.lang != Lang::Python || c.loop < 0 || iterates_batches(f, c.loop)) return false;
  bool waits = false;
  for (int ci : f.loops[c.loop].calls) {
    const CallSite& x = f.calls[ci];
    const Expr& callee = f.e(f.e(x.call).kids[0]);
    if (x.loop == c.loop && x.func == c.func && x.guard_chain < 0 && callee.kind == ExprKind::Name &&
        callee.text == "input"sv && callee.qname.empty() && x.target_func == kNone &&
        f.bindings(c.func, "input").empty())
      waits = true;
  }
  if (!waits) return false;
  // What the forward's result flows into in the loop (its statement's targets, and on).
  std::set<std::string> made;
  follow_flow(f, f.loops[c.loop].stmts, made, 3, true, c.call);
  for (const std::string& d : made)
    if (carried_in_loop(f, c.loop, d)) return false;
  return true;
}

// ... and every other forward with grad on in its loop (or its statement, outside loops) is
// one too: `probe(backbone(x))` keeps the backbone's activations.
// Python only, for now: a LibTorch program's lone `torch::nn::Linear` keeps its severity
// (docs/rules/LL101-missing-no-grad.md, Impact).
bool one_linear_layer(const Facts& f, const CallSite& c) {
  if (f.m.lang != Lang::Python || !linear_receiver(f, c)) return false;
  const std::vector<int>& around = c.loop >= 0 ? f.loops[c.loop].calls : f.calls_in_stmt[c.stmt];
  for (int xi : around) {
    const CallSite& x = f.calls[xi];
    if (x.call == c.call || x.in_lambda || f.grad_off(x) || !f.is_model_call(x)) continue;
    if (!linear_receiver(f, x)) return false;
  }
  return true;
}

// Does every value the receiver `x` (read in `func`) can hold come from a same-file Python class
// that derives from nothing (no torch module, no framework base) and whose methods never ask
// for gradients: no `requires_grad`, `nn.Parameter`, torch.nn layer or autograd call (a
// perceptron written with plain tensors, `self.weights = torch.zeros(n)`)? Its `forward`
// computes on tensors that record no graph.
bool plain_tensor_object(const Facts& f, Id func, Id x) {
  if (f.m.lang != Lang::Python ||
      std::none_of(f.m.classes.begin(), f.m.classes.end(), [](const Class& k) { return k.bases.empty(); }))
    return false;
  return each_model_value(f, func, x, [&](Id, Id v) {
    const Id k = f.constructed_class(f.unplaced(v));
    // (A class with no base at all: Facts::is_module_class also takes a class with a `forward`
    // for a module whose base it cannot see.)
    if (k == kNone || !f.m.classes[k].bases.empty() || !f.m.classes[k].decorators.empty()) return false;
    for (Id fn : f.m.classes[k].methods)
      for (int ci : f.calls_in(fn)) {
        const Id call = f.calls[ci].call;
        const std::string& q = f.callee_qual(call);
        if (starts_with(q, "torch.nn.") || starts_with(q, "torch.autograd") || f.callee_attr(call) == "requires_grad_"sv ||
            f.arg(call, static_cast<size_t>(-1), "requires_grad") != kNone)
          return false;
      }
    // (`self.w.requires_grad = True`, an attribute set rather than a call.)
    bool asks = false;
    for (Id e = 0; e < f.m.exprs.size() && !asks; ++e)
      asks = f.m.exprs[e].kind == ExprKind::Attribute && f.m.exprs[e].text == "requires_grad"sv &&
             f.m.exprs[e].range.begin >= f.m.classes[k].range.begin && f.m.exprs[e].range.end <= f.m.classes[k].range.end;
    return !asks;
  });
}

// Is every model the forward's receiver holds one linear layer itself (`nn.Linear(...)`, or a
// same-file probe class whose forward returns `self.fc(x)`), rather than a class that may run
// other parts under no_grad (Facts::linear_past_grad_off; a class of another module, whose
// form the file does not show)? For the message of one_linear_layer().
bool linear_layer_itself(const Facts& f, const CallSite& c) {
  const Id callee = f.forward_receiver(c.call);
  if (callee == kNone || f.dotted(callee).empty()) return false;
  for (Id v : f.bindings(c.func, f.dotted(callee))) {
    if (f.dotted(f.unplaced(v)) == f.dotted(callee) || f.linear_layer(v)) continue;
    const Id k = f.constructed_class(f.unplaced(v));
    if (k == kNone || !f.linear_probe_class(k)) return false;
  }
  return true;
}

// Impact: a fully-connected model of visible size keeps at most this many floats per sample
// in its graph (64 KB), and at most kInputMultiple times the features each sample brings: its
// graph is about the size of the batch itself.
constexpr long kSmallGraphWidth = 16384;
constexpr long kInputMultiple = 4;
// ... or at most this many floats (1 KB) per sample, whatever the input: a 2-2-2 toy network.
constexpr long kTinyGraphWidth = 256;

// The floats per sample the forward's model keeps (ModelSize::width), when every value that
// reaches the call is a fully-connected model of visible size keeping at most kInputMultiple
// times the features it takes (ModelSize::in_width), or at most kTinyGraphWidth floats: the
// bindings that reach it, or what every same-file caller hands in. -1 otherwise.
long fully_connected_width(const Facts& f, Id func, Id x) {
  long most = -1;
  const bool known = each_model_size(f, func, x, [&](const ModelSize& size) {
    if (size.width > kTinyGraphWidth && (size.in_width <= 0 || size.width > kInputMultiple * size.in_width)) return false;
    if (size.width < 0) return false;
    most = std::max(most, size.width);
    return true;
  });
  return known ? most : -1;
}

enum class OneItem { No, Yes, Cycle };
OneItem one_item(const Facts& f, Id func, Id x, std::set<Id>& seen, int depth = 0);

bool one_environment_step(const Facts& f, Id call);

// For sampling_chain (below), per loop, asked once: the names the loop binds from what its
// forwards return, each with the end of its last such binding in the loop's body; empty when the
// loop is no loop of steps.
using LoopChains = std::map<int, std::map<std::string, uint32_t>>;
const std::map<std::string, uint32_t>& chained_names(const Facts& f, int loop, LoopChains& memo) {
  auto [it, fresh] = memo.try_emplace(loop);
  if (!fresh) return it->second;
  std::map<std::string, uint32_t>& out = it->second;
  const Loop& L = f.loops[loop];
  if (L.stmt == kNone) return out;
  if (f.m.s(L.stmt).kind == StmtKind::For) {
    Id x = L.iter;
    for (int hops = 0; x != kNone && hops < 3 && f.e(x).kind == ExprKind::Call; ++hops) {
      if (python_builtin_call(f, x) && f.e(f.e(x).kids[0]).text == "range"sv) break;
      if (!(python_builtin_call(f, x) && in(f.e(f.e(x).kids[0]).text, {"reversed", "list", "enumerate"})) &&
          !starts_with(f.callee_qual(x), "tqdm"))
        return out;
      x = f.e(x).kids.size() >= 2 ? f.e(x).kids[1] : kNone;
    }
    if (x == kNone || f.e(x).kind != ExprKind::Call || !python_builtin_call(f, x) || f.e(f.e(x).kids[0]).text != "range"sv)
      return out;
  } else if (f.m.s(L.stmt).kind != StmtKind::While) {
    return out;
  }
  for (int ci : L.calls)
    if (one_environment_step(f, f.calls[ci].call)) return out;
  // What cuts a chain: draws and reductions to indices, `.detach()`, numbers.
  auto cuts = [&](Id x) {
    const Expr& e = f.e(x);
    if (e.kind != ExprKind::Call) return e.kind == ExprKind::Lambda || e.kind == ExprKind::Literal;
    const std::string& a = f.callee_attr(x);
    const std::string& q = f.callee_qual(x);
    return in(a, {"detach", "detach_", "item", "tolist", "numpy", "argmax", "argmin", "multinomial", "sample", "size",
                  "dim", "numel", "long", "int", "bool"}) ||
           in(q, {"torch.argmax", "torch.argmin", "torch.multinomial", "numpy.array", "numpy.asarray"}) ||
           (f.e(e.kids[0]).kind == ExprKind::Name && python_builtin_call(f, x));
  };
  // Does `x` hold the forward `call`'s result, through what keeps history?
  std::function<bool(Id, Id, int)> holds = [&](Id x, Id call, int depth) -> bool {
    if (x == kNone || depth > 32) return false;
    if (x == call) return true;
    if (cuts(x)) return false;
    for (Id k : f.e(x).kids)
      if (holds(k, call, depth + 1)) return true;
    return false;
  };
  // Seeds: what the loop's forwards' statements bind (`eps = model(x, t)`; also a forward
  // inside the value, `x = (x - k * model(x, t)) / a`, whose binding is itself fed back).
  std::set<std::string> derived;
  for (int ci : L.calls) {
    const CallSite& c = f.calls[ci];
    if (c.stmt == kNone || c.in_lambda || f.grad_off(c) || !f.is_model_call(c)) continue;
    const Stmt& st = f.m.s(c.stmt);
    if ((st.kind != StmtKind::Assign && st.kind != StmtKind::AugAssign) || st.value == kNone ||
        !holds(st.value, c.call, 0))
      continue;
    for (Id t : st.targets) {
      std::vector<Id> ts{t};
      if (f.e(t).kind == ExprKind::Sequence) ts = f.e(t).kids;
      for (Id n : ts)
        if (f.e(n).kind == ExprKind::Name) {
          derived.insert(f.e(n).text);
          if (st.value != c.call) {  // (the forward's own output bound by its statement is no chain yet)
            uint32_t& end = out[f.e(n).text];
            end = std::max(end, st.range.end);
          }
        }
    }
  }
  if (derived.empty()) return out;
  // Does `x` compute from a derived name through what keeps history?
  std::function<bool(Id, int)> carries = [&](Id x, int depth) -> bool {
    if (x == kNone || depth > 32) return false;
    const Expr& e = f.e(x);
    if (e.kind == ExprKind::Name) return derived.count(e.text) > 0;
    if (cuts(x)) return false;
    for (Id k : e.kids)
      if (carries(k, depth + 1)) return true;
    return false;
  };
  // Two passes: a name bound late in the body from one bound early.
  for (int pass = 0; pass < 2; ++pass)
    for (Id sid : L.stmts) {
      const Stmt& s = f.m.s(sid);
      if ((s.kind != StmtKind::Assign && s.kind != StmtKind::AugAssign) || s.value == kNone) continue;
      const Expr& v = f.e(s.value);
      if (v.kind == ExprKind::Call) {  // (the forwards' own statements seed the set)
        auto ci = f.call_index.find(s.value);
        if (ci != f.call_index.end() && f.is_model_call(f.calls[ci->second])) continue;
      }
      if (!carries(s.value, 0)) continue;
      for (Id t : s.targets)
        if (f.e(t).kind == ExprKind::Name) {
          derived.insert(f.e(t).text);
          uint32_t& end = out[f.e(t).text];
          end = std::max(end, s.range.end);
        }
    }
  return out;
}

// Does the forward `c` run in a loop of steps (`range(...)`, `reversed(range(T))`, a progress
// bar around them, a `while`) that never trains, and read what the loop computed from a
// forward's result after it, in the previous iteration, through tensor arithmetic (`eps =
// model(x, t)`, then `x = (x - k * eps) / a`)? Each step's graph then stays chained to the
// next: a sampling loop (a diffusion model's, an ODE's), whatever else it says. Draws and
// reductions to indices (`argmax`, `multinomial`, `.item()`) and `.detach()` cut the chain.
// Not in a module's own methods, nor in a function whose result a caller back-propagates (an
// unrolled recurrence), nor a loop that steps an environment.
bool sampling_chain(const Facts& f, const CallSite& c, LoopChains& memo) {
  if (c.loop < 0 || c.stmt == kNone || f.loop_trains(c.loop)) return false;
  if (c.func != kNone && (f.func_is_method_of_module(c.func) || f.part_of_forward(c.func) ||
                          f.in_module_forward(c.func) || f.called_from_training(c.func)))
    return false;
  const std::map<std::string, uint32_t>& chained = chained_names(f, c.loop, memo);
  if (chained.empty()) return false;
  // (A binding by the forward's own statement, `x = x - k * model(x, t)`, goes to the next step.)
  const uint32_t at = f.m.s(c.stmt).range.end;
  const Expr& call = f.e(c.call);
  for (size_t k = 1; k < call.kids.size(); ++k) {
    bool reads = false;
    for_each_expr(f.m, call.kids[k], [&](Id y) {
      if (f.e(y).kind == ExprKind::Name)
        if (auto it = chained.find(f.e(y).text); it != chained.end() && it->second >= at) reads = true;
      return !reads;
    });
    if (reads) return true;
  }
  return false;
}

// Is the call `at` handed back what its own statement bound in the previous iteration, a step
// of a decoding: `char, h = predict_next_char(model, chars[-1], h)` (the state `h`, or the last
// of the characters the loop appends each call's result to)? Not a pass over frames or items.
bool feeds_back(const Facts& f, const CallSite& at) {
  if (at.stmt == kNone || at.loop < 0 || f.m.s(at.stmt).kind != StmtKind::Assign || f.m.s(at.stmt).value != at.call)
    return false;
  std::set<std::string> bound;
  for (Id t : f.m.s(at.stmt).targets) {
    std::vector<Id> ts{t};
    if (f.e(t).kind == ExprKind::Sequence) ts = f.e(t).kids;
    for (Id n : ts)
      if (f.e(n).kind == ExprKind::Name) bound.insert(f.e(n).text);
  }
  // Lists the loop appends a bound name to (`chars.append(char)`).
  std::set<std::string> grown;
  for (int ci : f.loops[at.loop].calls) {
    const Id x = f.calls[ci].call;
    if (f.callee_attr(x) != "append"sv || f.e(x).kids.size() != 2) continue;
    const Expr& a = f.e(f.e(x).kids[1]);
    if (a.kind == ExprKind::Name && bound.count(a.text)) grown.insert(f.dotted(f.callee_receiver(x)));
  }
  const Expr& call = f.e(at.call);
  for (size_t k = 1; k < call.kids.size(); ++k) {
    const Expr& a = f.e(call.kids[k]);
    if (a.kind == ExprKind::Name && bound.count(a.text)) return true;
    if (a.kind == ExprKind::Subscript && !a.kids.empty() && grown.count(f.dotted(a.kids[0]))) return true;
  }
  return false;
}

// Does the forward `c` take one item (a batch of one) in one of its arguments?
bool takes_one_item(const Facts& f, const CallSite& c) {
  const Expr& call = f.e(c.call);
  for (size_t k = 1; k < call.kids.size(); ++k) {
    std::set<Id> seen;
    if (one_item(f, c.func, call.kids[k], seen) == OneItem::Yes) return true;
  }
  return false;
}


// What the fully-connected model of a forward on one item (a batch of one: a table's row scored
// row by row) keeps in its graph, in floats, whatever the features it takes; -1 when its input is
// not one item or the model is not such a model. (One item's graph is the whole cost, not a
// multiple of a batch.)
long one_item_graph_width(const Facts& f, const CallSite& c) {
  if (f.m.lang != Lang::Python) return -1;
  if (!takes_one_item(f, c)) return -1;
  long most = -1;
  const bool known = each_model_size(f, c.func, f.forward_receiver(c.call), [&](const ModelSize& size) {
    if (size.width < 0) return false;
    most = std::max(most, size.width);
    return true;
  });
  return known ? most : -1;
}

// ... summed over every forward with grad on in the call's loop (or its statement, outside
// loops), each keeping at most kInputMultiple times its input: `probe(backbone(x))` keeps the
// backbone's activations too. -1 when any is not such a model, or when the scope also runs a
// model some other way (`backbone.forward_features(x)`, a same-file helper that runs a
// forward), whose graph the widths do not count. Asked once per scope (`memo`).
long loop_graph_width(const Facts& f, const CallSite& c, std::map<const std::vector<int>*, long>& memo,
                      std::map<Id, const CallSite*>& helpers) {
  if (f.m.lang != Lang::Python) return -1;
  const std::vector<int>& around = c.loop >= 0 ? f.loops[c.loop].calls : f.calls_in_stmt[c.stmt];
  auto [it, fresh] = memo.try_emplace(&around, -1);
  if (!fresh) return it->second;
  long total = 0;
  for (int xi : around) {
    const CallSite& x = f.calls[xi];
    if (x.in_lambda || f.grad_off(x)) continue;
    if (!f.is_model_call(x)) {
      if (model_method_call(f, x)) return -1;  // `backbone.forward_features(x)`
      if (x.target_func != kNone && x.target_func != x.func && helper_forward(f, x.target_func, helpers)) return -1;
      continue;
    }
    const long w = fully_connected_width(f, x.func, f.forward_receiver(x.call));
    if (w < 0) return -1;
    total += w;
  }
  it->second = total;
  return total;
}

// Impact: one batch's graph of visible size at most this many floats (64 MB) is small next to
// a GPU's memory: a small CNN on MNIST or CIFAR-10 images.
constexpr long kSmallBatchGraph = 16L * 1024 * 1024;

// The graph one batch keeps when every forward with grad on in the call's loop runs a model of
// visible layers (feature_map_graph) on the loop's samples, drawn from a DataLoader over a
// torchvision dataset of known shape (sample_shape) in batches of visible size: its floats,
// and what they rest on. -1 when any part is not visible.
struct BatchGraph {
  long floats = -1, per_sample = 0, batch = 0;
  SampleShape shape;
};
BatchGraph batch_graph(const Facts& f, const CallSite& c) {
  BatchGraph out;
  if (f.m.lang != Lang::Python || c.loop < 0) return out;
  const Loop& L = f.loops[c.loop];
  if (L.stmt == kNone || L.iter == kNone) return out;
  // Also through `enumerate(loader)` (`for i, data in enumerate(testloader, 0)`).
  Id iter = L.iter;
  const bool enumerated = f.e(iter).kind == ExprKind::Call && python_builtin_call(f, iter) &&
                          f.e(f.e(iter).kids[0]).text == "enumerate"sv && f.e(iter).kids.size() >= 2;
  if (enumerated) iter = f.e(iter).kids[1];
  if (f.e(iter).kind != ExprKind::Name) return out;
  const std::vector<Id> made = f.bindings_at(L.func, f.e(iter).text, iter);
  if (made.size() != 1 || f.e(made[0]).kind != ExprKind::Call || !is_dataloader_call(f, made[0])) return out;
  auto li = f.call_index.find(made[0]);
  if (li == f.call_index.end()) return out;
  const auto shape = sample_shape(f, f.calls[li->second]);
  if (!shape || shape->c <= 0 || shape->h <= 0 || shape->w <= 0) return out;
  long batch = 1;  // DataLoader's default
  if (const Id b = f.arg(made[0], 1, "batch_size"); b != kNone) {
    const Expr* lit = f.literal_of(b, L.func);
    if (!lit && L.func != kNone) lit = f.literal_of(b, kNone);
    if (!lit || lit->lit != LitKind::Int) return out;
    batch = int_literal_text(lit->text);
  }
  if (batch <= 0 || batch > (1L << 24)) return out;
  // The loop's sample: the first name it binds (`for data, target in loader`), or the first
  // element of the pair it binds (`for data in testloader:`, then `images = data[0]`).
  const Stmt& loop = f.m.s(L.stmt);
  if (loop.targets.size() != 1) return out;
  Id t = loop.targets[0];
  if (enumerated) {
    if (f.e(t).kind != ExprKind::Sequence || f.e(t).kids.size() != 2) return out;
    t = f.e(t).kids[1];
  }
  const bool pair = f.e(t).kind == ExprKind::Name;
  if (f.e(t).kind == ExprKind::Sequence && !f.e(t).kids.empty()) t = f.e(t).kids[0];
  if (f.e(t).kind != ExprKind::Name) return out;
  const std::string& sample = f.e(t).text;
  auto is_sample = [&](Id v) {
    v = f.unplaced(v);
    if (f.dotted(v) == sample) return true;
    const Expr& e = f.e(v);
    return pair && e.kind == ExprKind::Subscript && e.kids.size() == 2 && f.dotted(e.kids[0]) == sample &&
           int_literal_value(f.e(e.kids[1])) == 0 && f.e(e.kids[1]).text == "0"sv;
  };
  long total = 0;
  for (int xi : L.calls) {
    const CallSite& x = f.calls[xi];
    if (x.in_lambda || f.grad_off(x)) continue;
    if (!f.is_model_call(x)) {
      if (model_method_call(f, x)) return out;
      continue;
    }
    // Fed the sample itself, perhaps moved (`model(data.to(device))`, `data = data.cuda()`).
    Id a = f.e(x.call).kids.size() > 1 ? f.unplaced(f.e(x.call).kids[1]) : kNone;
    if (a == kNone || f.e(a).kind != ExprKind::Name) return out;
    if (f.e(a).text != sample || pair) {
      const std::vector<Id> vs = f.bindings_at(x.func, f.e(a).text, a);
      if (vs.empty()) return out;
      for (Id v : vs)
        if (!is_sample(v)) return out;
    }
    long most = -1;
    const bool known = each_model_value(f, x.func, f.forward_receiver(x.call), [&](Id fn, Id v) {
      const long g = feature_map_graph(f, fn, v, shape->c, shape->h, shape->w);
      most = std::max(most, g);
      return g >= 0;
    });
    if (!known || most < 0 || most > (1L << 36)) return out;
    total += most;
    if (total > (1L << 36)) return out;
  }
  out = {total * batch, total, batch, *shape};
  return out;
}

// "3,030"
std::string with_commas(long v) {
  std::string s = std::to_string(v);
  for (int k = static_cast<int>(s.size()) - 3; k > 0; k -= 3) s.insert(static_cast<size_t>(k), ",");
  return s;
}

// `for layer in self.hidden:` (`self.blocks.children()`) in a module's own method, feeding
// each layer's output to the next: one pass through the module, not a repetition. The
// module's name (`self.hidden`), or "" when the loop is not such a walk.
std::string own_layers_walked(const Facts& f, int loop) {
  const Loop& L = f.loops[loop];
  if (L.iter == kNone || !f.func_is_method_of_module(L.func)) return "";
  Id it = L.iter;
  if (f.e(it).kind == ExprKind::Call && in(f.callee_attr(it), {"children", "modules"}) && f.e(it).kids.size() == 1)
    it = f.callee_receiver(it);
  const std::string& d = f.dotted(it);
  if (!starts_with(d, "self.") || d.find('.', 5) != std::string::npos) return "";
  // Each forward in the loop is a layer's: the loop target's.
  if (L.stmt == kNone || f.m.s(L.stmt).targets.size() != 1) return "";
  const std::string& layer = f.dotted(f.m.s(L.stmt).targets[0]);
  if (layer.empty()) return "";
  for (int ci : L.calls) {
    const CallSite& c = f.calls[ci];
    if (c.loop == loop && f.is_model_call(c) && f.dotted(f.forward_receiver(c.call)) != layer) return "";
  }
  return d;
}

// The last placement of the model before the forward, in its function and on every path to it,
// is `model.cpu()` or `model.to("cpu")` (`model.eval(); model = model.cpu()` before a validation loop): the
// forward runs on the CPU.
// (Of the model `name` read in `func` by the expression `read`.)
bool placed_on_cpu(const Facts& f, Id func, const std::string& name, Id read) {
  if (name.empty() || name == "self"sv) return false;
  const uint32_t at = f.e(read).range.begin;
  int last = -1;  // 1 CPU, 0 another device
  uint32_t last_pos = 0;
  for (int ci : f.calls_in(func)) {
    const Id x = f.calls[ci].call;
    const uint32_t pos = f.e(x).range.begin;
    if (pos >= at || pos < last_pos) continue;
    const std::string& a = f.callee_attr(x);
    if (!in(a, {"cpu"sv, "cuda"sv, "to"sv}) || f.dotted(f.callee_receiver(x)) != name) continue;
    // Only a move on every path to the forward (not one branch of `if cuda: ... else:
    // model = model.cpu()`).
    if (!f.precedes_in_its_block(func, f.stmt_of(x), at)) continue;
    const Id dev = a == "to"sv ? f.arg(x, 0, "device") : kNone;
    last = a == "cpu"sv || (dev != kNone && f.cpu_device_value(dev)) ? 1 : 0;
    last_pos = pos;
  }
  if (last != 1) return false;
  // The name rebound after that move to another model (`net = Net2(...).to(device)` in a later
  // cell) holds an object the move never touched: placed where its own value puts it.
  for (Id v : f.bindings_at(func, name, read)) {
    if (f.e(v).range.begin < last_pos) continue;
    Id root = v;
    bool cpu = false;
    while (f.e(root).kind == ExprKind::Call && in(f.callee_attr(root), {"cpu"sv, "cuda"sv, "to"sv, "eval"sv, "train"sv})) {
      const Id dev = f.callee_attr(root) == "to"sv ? f.arg(root, 0, "device") : kNone;
      cpu = cpu || f.callee_attr(root) == "cpu"sv || (dev != kNone && f.cpu_device_value(dev));
      root = f.callee_receiver(root);
      if (root == kNone) break;
    }
    if (root != kNone && f.dotted(root) == name) continue;  // `net = net.to("cpu")`: the move above
    if (!cpu) return false;
  }
  return true;
}

bool placed_on_cpu(const Facts& f, const CallSite& c) {
  return placed_on_cpu(f, c.func, f.dotted(f.forward_receiver(c.call)), c.call);
}

// Every argument of the forward is a tensor the program makes from nothing.
bool made_inputs(const Facts& f, const CallSite& c) {
  const Expr& call = f.e(c.call);
  if (call.kids.size() < 2) return false;
  for (size_t k = 1; k < call.kids.size(); ++k)
    if (!made_tensor(f, c.func, call.kids[k])) return false;
  return true;
}

// Is `x` one item, a batch of one: `t.unsqueeze(0)`, `t[None]`, `t.view(1, ...)`,
// `np.reshape(a, (1, -1))`, `np.expand_dims(a, 0)`, a display of one element (`[ids]`), through
// what keeps the batch (`.to(device)`, `torch.from_numpy`, `torch.tensor`, a concatenation
// along another axis, `np.append(x, [[w]], axis=1)`), and through names, whose every binding
// that reaches the read must be one.
OneItem one_item(const Facts& f, Id func, Id x, std::set<Id>& seen, int depth) {
  if (x == kNone || depth > 12) return OneItem::No;
  // (A binding met again on the way, `x = np.append(x, ...)`, is what is being decided: the
  // other bindings decide, and at least one must be one item by itself.)
  if (!seen.insert(x).second) return OneItem::Cycle;
  const Expr& e = f.e(x);
  auto is_one = [&](Id y) {
    long v = -1;
    return y != kNone && int_constant(f, func, y, &v) && v == 1;
  };
  auto one = [&](Id y) {
    const Expr& d = f.e(y);
    if (is_one(y)) return true;
    return d.kind == ExprKind::Sequence && (d.text == "tuple"sv || d.text == "list"sv) && !d.kids.empty() &&
           is_one(d.kids[0]);
  };
  auto yes = [](bool b) { return b ? OneItem::Yes : OneItem::No; };
  switch (e.kind) {
    case ExprKind::Name: {
      const std::vector<Id> vs = f.bindings_at(func, e.text, x);
      // A parameter whose entry value reaches the read (`idx` of `generate(self, idx, n)`, or
      // the `idx` that `idx = torch.cat((idx, nxt), dim=1)` extends): what every same-file
      // caller hands in (`m.generate(torch.zeros((1, 1)), 500)`).
      bool from_param = false;
      if (func != kNone && f.is_param(func, e.text)) {
        from_param = vs.empty();
        if (const Id st = f.stmt_of(x); !from_param && st != kNone) f.flow().reaching(st, e.text, &from_param);
      }
      if ((vs.empty() && !from_param) || vs.size() > 4) return OneItem::No;
      bool based = false;
      for (Id v : vs) {
        const OneItem r = v == x ? OneItem::No : one_item(f, func, v, seen, depth + 1);
        if (r == OneItem::No) return OneItem::No;
        based = based || r == OneItem::Yes;
      }
      if (from_param) {
        const std::vector<std::pair<Id, Id>> args = f.argument_values(func, e.text);
        if (args.empty() || args.size() > 4) return OneItem::No;
        for (const auto& [caller, a] : args) {
          const OneItem r = one_item(f, caller, a, seen, depth + 1);
          if (r == OneItem::No) return OneItem::No;
          based = based || r == OneItem::Yes;
        }
      }
      return based ? OneItem::Yes : OneItem::Cycle;
    }
    case ExprKind::Subscript: {
      if (e.kids.size() >= 2 && f.e(e.kids[1]).kind == ExprKind::Literal && f.e(e.kids[1]).lit == LitKind::None)
        return OneItem::Yes;
      // Sliced along later axes only (`idx[:, -block_size:]`, `x[:, -1, :]`): the batch stays
      // the value's.
      const Expr& first = e.kids.size() >= 3 ? f.e(e.kids[1]) : e;
      if (&first != &e && first.kind == ExprKind::Other && first.kids.empty() && first.range.end == first.range.begin + 1)
        return one_item(f, func, e.kids[0], seen, depth + 1);
      return OneItem::No;
    }
    case ExprKind::Sequence:
      return yes(e.text == "list"sv && e.kids.size() == 1 && f.e(e.kids[0]).kind != ExprKind::Starred);
    case ExprKind::Call: {
      if (e.kids.empty()) return OneItem::No;
      const std::string& q = f.callee_qual(x);
      const std::string& a = f.callee_attr(x);
      if (q == "numpy.reshape"sv) return yes(e.kids.size() >= 3 && one(e.kids[2]));
      if (q == "numpy.expand_dims"sv) return yes(e.kids.size() >= 3 && int_literal_value(f.e(e.kids[2])) == 0);
      if (in(q, {"numpy.append", "numpy.concatenate", "torch.cat", "torch.concat"})) {
        // Along an axis other than the first: the batch stays what the first part's was.
        const bool np = q.rfind("numpy", 0) == 0;
        const Id ax = f.arg(x, q == "numpy.append"sv ? 2 : 1, np ? "axis" : "dim");
        if (ax == kNone || int_literal_value(f.e(ax)) == 0) return OneItem::No;
        Id first = f.arg(x, 0);
        if (first != kNone && f.e(first).kind == ExprKind::Sequence && !f.e(first).kids.empty()) first = f.e(first).kids[0];
        return one_item(f, func, first, seen, depth + 1);
      }
      // A typed constructor, also through a name bound to one for the device
      // (`LongTensor = torch.cuda.LongTensor if CUDA else torch.LongTensor`).
      auto typed_tensor = [&](const std::string& qual) {
        return starts_with(qual, "torch.") && qual.size() > 6 && qual.compare(qual.size() - 6, 6, "Tensor") == 0;
      };
      auto typed_constructor = [&] {
        const Id callee = e.kids[0];
        if (f.e(callee).kind != ExprKind::Name || !q.empty()) return typed_tensor(q);
        const std::vector<Id> vs = f.bindings(kNone, f.e(callee).text);
        if (vs.empty() || vs.size() > 4) return false;
        for (Id v : vs) {
          std::vector<Id> parts{v};
          if (f.e(v).kind == ExprKind::Conditional && f.e(v).kids.size() == 3) parts = {f.e(v).kids[0], f.e(v).kids[2]};
          for (Id p : parts)
            if (f.e(p).kind != ExprKind::Attribute || !typed_tensor(f.qual(p))) return false;
        }
        return true;
      };
      if (in(q, {"torch.from_numpy", "torch.tensor", "torch.as_tensor", "torch.autograd.Variable", "numpy.array",
                 "numpy.asarray"}) ||
          typed_constructor())
        return one_item(f, func, f.arg(x, 0), seen, depth + 1);
      // A sequence's seed made with a leading dimension of one: `torch.zeros((num_samples, 1))`
      // with `num_samples=1`, `torch.full((1, 1), bos)`, `torch.zeros(1, 5)`. (Not random
      // inputs: a loop of forwards on `torch.randn(...)` times the model.)
      if (in(q, {"torch.zeros", "torch.ones", "torch.empty", "torch.full"}) && e.kids.size() >= 2) {
        const Id shape = e.kids[1];
        const Expr& sh = f.e(shape);
        if (sh.kind == ExprKind::Sequence) return yes(one(shape) && sh.kids.size() >= 2);
        return yes(q != "torch.full"sv && e.kids.size() >= 3 && e.kw.size() + 2 < e.kids.size() && is_one(shape));
      }
      if (a == "unsqueeze"sv) return yes(e.kids.size() == 2 && int_literal_value(f.e(e.kids[1])) == 0);
      if (a == "view"sv || a == "reshape"sv) return yes(e.kids.size() >= 2 && one(e.kids[1]));
      if (in(a, {"to", "cuda", "float", "long", "int", "half", "double", "contiguous", "clone", "type"}))
        return one_item(f, func, f.callee_receiver(x), seen, depth + 1);
      // A same-file function encoding the item (`one_hot_encode(x, n_labels)`, `preprocess(img)`),
      // not a model: what it returns is of its first argument's batch.
      if (e.kids.size() >= 2 && f.e(e.kids[1]).kind != ExprKind::Starred) {
        const Id g = f.same_file_target(x, func);
        if (g != kNone && f.m.funcs[g].cls == kNone && f.constructed_class(x) == kNone)
          return one_item(f, func, e.kids[1], seen, depth + 1);
      }
      return OneItem::No;
    }
    default:
      return OneItem::No;
  }
}

// `env.step(action)` of one environment (not a vector of them): a receiver named for one
// (`env`, `self.env`, `eval_env`, `environment`), or bound to `gym.make(...)` /
// `gymnasium.make(...)`. It takes the action as numbers and returns the next observation.
bool one_environment_step(const Facts& f, Id call) {
  if (f.callee_attr(call) != "step"sv) return false;
  const Id r = f.callee_receiver(call);
  const std::string& d = f.dotted(r);
  if (d.empty()) return false;
  bool env = false;
  for (const auto& t : Facts::name_tokens(f.last_component(d))) {
    if (in(t, {"envs", "vec", "vector", "venv", "vecenv"})) return false;
    env = env || t == "env"sv || t == "environment"sv;
  }
  if (env) return true;
  const std::vector<Id> vs = f.bindings_at(f.function_at(f.e(call).range.begin), d, r);
  return !vs.empty() && std::all_of(vs.begin(), vs.end(), [&](Id v) {
    const std::string& q = f.callee_qual(v);
    return q == "gym.make"sv || q == "gymnasium.make"sv;
  });
}

// Does every iteration of `loop` step one environment (an episode of acting)?
bool steps_one_environment(const Facts& f, int loop) {
  if (loop < 0) return false;
  for (int ci : f.loops[loop].calls)
    if (one_environment_step(f, f.calls[ci].call)) return true;
  return false;
}

// Does nothing the forward `c` returns outlive the iteration of loop `outer` it runs in? Its
// names (and those of forwards fed with them, `states = encoder(x)`, then `out = decoder(y,
// states)`) are read in the loop only after they are bound and only to be turned into numbers
// (`.item()`, `.tolist()`, `.detach()`, `.argmax()`, `.data`, a comparison, `print`), and after
// the loop not at all.
// With `recurrent`, what the forward returns may also be handed back to the same forward in the
// next iteration (`logits, h, c = model(x, h, c)`): a recurrent state, whose graph then spans the
// iterations of one sequence.
bool outputs_die_in_iteration(const Facts& f, const CallSite& c, int outer, bool recurrent = false) {
  if (outer < 0 || c.stmt == kNone) return false;
  // Every read of what it returns detaches it (`value, logits = net(s)`, then `value.data`,
  // `softmax(logits).data`): no graph outlives the statement.
  if (!recurrent && detached_later(f, c) != kNone) return true;
  const Loop& L = f.loops[outer];
  std::map<std::string, uint32_t> names;  // name -> end of the statement binding it
  std::set<Id> producers;                 // the calls whose values they hold
  auto bind = [&](Id stmt) {
    const Stmt& st = f.m.s(stmt);
    if (st.kind != StmtKind::Assign) return false;
    for (Id t : st.targets) {
      std::vector<Id> ts{t};
      if (f.e(t).kind == ExprKind::Sequence) ts = f.e(t).kids;
      for (Id n : ts) {
        if (f.e(n).kind != ExprKind::Name) return false;
        // (The first binding in the iteration: a read after it is of this iteration's value,
        // also where the name is rebound from itself, `logits = logits[:, -1, :]`.)
        auto [it, fresh] = names.try_emplace(f.e(n).text, st.range.end);
        if (!fresh) it->second = std::min(it->second, st.range.end);
      }
    }
    producers.insert(st.value);
    return true;
  };
  // Turned into numbers in its own statement (`action = policy(obs).argmax().item()`): nothing
  // of the forward's output outlives it.
  {
    Id v = f.m.s(c.stmt).value;
    if (v != c.call && v != kNone && f.e(v).kind == ExprKind::Call && in(f.callee_attr(v), {"item", "tolist"}) &&
        f.e(v).kids.size() == 1) {
      for (int depth = 0; v != kNone && v != c.call && depth < 8; ++depth)
        v = f.e(v).kind == ExprKind::Call ? f.callee_receiver(v)
            : f.e(v).kind == ExprKind::Subscript && !f.e(v).kids.empty() ? f.e(v).kids[0]
                                                                          : kNone;
      if (v == c.call) return true;
    }
  }
  if (f.m.s(c.stmt).value != c.call || !bind(c.stmt)) return false;
  // A recurrent state: a later element of the tuple the forward's own statement unpacks (`h`
  // and `c` of `logits, h, c = model(x, h, c)`), in a `for` loop (a `while` may run on without
  // end). Not the output itself fed back (`tgt = out`), nor a cache taken from it.
  auto recurrent_state = [&](const std::string& name) {
    if (f.loops[outer].stmt == kNone || f.m.s(f.loops[outer].stmt).kind != StmtKind::For) return false;
    for (Id t : f.m.s(c.stmt).targets)
      if (f.e(t).kind == ExprKind::Sequence)
        for (size_t k = 1; k < f.e(t).kids.size(); ++k)
          if (f.e(f.e(t).kids[k]).kind == ExprKind::Name && f.e(f.e(t).kids[k]).text == name) return true;
    return false;
  };
  // A value computed from them and bound to plain names (`logits = logits[:, -1, :]`, `probs =
  // F.softmax(logits, dim=-1)`): followed as they are, to where it becomes numbers.
  auto derive = [&](Id sid) { return f.m.s(sid).kind == StmtKind::Assign && f.m.s(sid).value != kNone && bind(sid); };
  for (int round = 0; round < 6; ++round) {
    bool grew = false, bad = false;
    for (Id sid : L.stmts) {
      const Stmt& st = f.m.s(sid);
      std::vector<Id> roots;
      if (st.value != kNone) roots.push_back(st.value);
      for (Id t : st.targets)
        if (f.e(t).kind != ExprKind::Name && f.e(t).kind != ExprKind::Sequence) roots.push_back(t);
      std::function<void(Id, bool)> walk = [&](Id x, bool numbers) {
        if (x == kNone || bad) return;
        const Expr& e = f.e(x);
        if (e.kind == ExprKind::Name) {
          auto it = names.find(e.text);
          if (it == names.end() || numbers) return;
          if (e.range.begin < it->second && e.range.begin >= L.range.begin) {  // carried
            const Expr& fw = f.e(c.call);
            bool state = false;
            for (size_t k = 1; k < fw.kids.size() && recurrent; ++k) state = state || fw.kids[k] == x;
            bad = !state || !recurrent_state(e.text);
          }
          // Fed to another forward whose statement binds names: those are followed instead.
          else if (st.value != kNone && f.e(st.value).kind == ExprKind::Call && !producers.count(st.value)) {
            const Expr& call = f.e(st.value);
            bool direct = false;
            for (size_t k = 1; k < call.kids.size(); ++k) direct = direct || call.kids[k] == x;
            int site = -1;
            for (int ci : L.calls)
              if (f.calls[ci].call == st.value) site = ci;
            if (direct && site >= 0 && f.is_model_call(f.calls[site]) && bind(sid)) grew = true;
            else if (derive(sid)) grew = true;
            else bad = true;
          } else if (!producers.count(st.value)) {
            if (derive(sid)) grew = true;
            else bad = true;
          }
          return;
        }
        bool inner = numbers || e.kind == ExprKind::Compare;
        if (e.kind == ExprKind::Attribute && in(e.text, {"data", "indices"})) inner = true;
        // The indices of a reduction, `q.max(1)[1]`: integers without history.
        if (e.kind == ExprKind::Subscript && e.kids.size() >= 2 && int_literal_value(f.e(e.kids[1])) == 1 &&
            f.e(e.kids[0]).kind == ExprKind::Call &&
            in(f.callee_attr(e.kids[0]), {"max", "min", "topk", "sort", "kthvalue", "mode"}))
          inner = true;
        // An index is integers or a mask, which carry no history into what they pick
        // (`dataset.vocab[next_token]`): only the indexed value may.
        if (e.kind == ExprKind::Subscript && e.kids.size() >= 2) {
          walk(e.kids[0], inner);
          for (size_t k = 1; k < e.kids.size(); ++k) walk(e.kids[k], true);
          return;
        }
        if (e.kind == ExprKind::Call) {
          const std::string& a = f.callee_attr(x);
          const std::string& q = f.callee_qual(x);
          // (An environment's step takes the action as numbers: `env.step(action)`.)
          if (one_environment_step(f, x)) {
            for (Id k : e.kids) walk(k, true);
            return;
          }
          // (`dist.sample()` and `probs.multinomial(1)` draw indices or values without history;
          // `rsample()` keeps it.)
          if (in(a, {"item", "tolist", "detach", "argmax", "argmin", "size", "dim", "numel", "sample", "multinomial"}) ||
              in(q, {"torch.argmax", "torch.argmin", "torch.multinomial"}) ||
              (f.e(e.kids[0]).kind == ExprKind::Name && python_builtin_call(f, x) &&
               in(f.e(e.kids[0]).text, {"print", "len", "str", "repr", "format"}))) {
            for (Id k : e.kids) walk(k, true);
            return;
          }
        }
        for (Id k : e.kids) walk(k, inner);
      };
      for (Id r : roots) walk(r, false);
      if (bad) return false;
    }
    if (!grew) break;
  }
  // After the loop: no read that one of the producing statements' bindings reaches. (A name
  // rebound there, `action = ...` in a second episode, is a store, not a read.)
  auto stored = [&](Id i) {
    const Id st = f.stmt_of(i);
    if (st == kNone || f.m.s(st).kind != StmtKind::Assign) return false;
    for (Id t : f.m.s(st).targets) {
      bool in_target = false;
      for_each_expr(f.m, t, [&](Id y) {
        in_target = in_target || (y == i && (f.e(t).kind == ExprKind::Name || f.e(t).kind == ExprKind::Sequence));
        return !in_target;
      });
      if (in_target) return true;
    }
    return false;
  };
  for (Id i = 0; i < f.m.exprs.size(); ++i) {
    const Expr& e = f.m.exprs[i];
    if (e.kind != ExprKind::Name || e.range.begin < L.range.end || !names.count(e.text)) continue;
    if (f.function_at(e.range.begin) != L.func || stored(i)) continue;
    for (Id v : f.bindings_at(L.func, e.text, i))
      if (producers.count(v)) return false;
  }
  return true;
}

// A statement that is only `torch.no_grad()` (or `torch.inference_mode()`), in the forward's
// scope (its function, else the module's top level) and before it: a no-op.
Id bare_no_grad_before(const Facts& f, const CallSite& c) {
  const uint32_t at = f.e(c.call).range.begin;
  for (const StmtSite& ss : f.stmt_sites) {
    const Stmt& st = f.m.s(ss.stmt);
    if (st.kind != StmtKind::Expr || st.value == kNone || st.range.begin >= at || f.e(st.value).kind != ExprKind::Call)
      continue;
    if (f.function_at(st.range.begin) != c.func) continue;
    const std::string& q = f.callee_qual(st.value);
    if ((q == "torch.no_grad"sv || q == "torch.inference_mode"sv || q == "torch.autograd.no_grad"sv) &&
        f.e(st.value).kids.size() == 1)
      return st.value;
  }
  return kNone;
}

// The file reads scalars the way PyTorch before 0.4 required (`loss.data[0]`, which raises
// on the 0-dim losses of 0.5 and later) and wraps inputs in `Variable`: code for a PyTorch
// that had no `torch.no_grad()`.
bool pre_0_4_file(const Facts& f, bool modern) {
  bool variable = false;
  for (const auto& [local, q] : f.m.aliases)
    variable = variable || q == "torch.autograd.Variable"sv || q == "torch.autograd.variable.Variable"sv;
  if (!variable) return false;
  if (modern) return false;
  return legacy_scalar_reads(f);
}

// Sums of `x.data[0]` (`total += loss.data[0]`): how PyTorch before 0.4 read a loss.
bool legacy_scalar_reads(const Facts& f) {
  for (const StmtSite& ss : f.stmt_sites) {
    const Stmt& st = f.m.s(ss.stmt);
    if (st.kind != StmtKind::AugAssign || st.value == kNone) continue;
    // `total += loss.data[0]`, `avg_psnr += 10 * log10(1 / mse.data[0])`
    bool legacy_read = false;
    for_each_expr(f.m, st.value, [&](Id x) {
      legacy_read = data_0_receiver(f, x) != kNone;
      return !legacy_read;
    });
    if (legacy_read) return true;
  }
  return false;
}


// ---- Training gated by a mode that an evaluation pass turns off.
// `for phase in ["train", "val"]: ... out = model(x) ... if phase == "train": loss.backward()`,
// or `def run_epoch(..., is_training=False): ... if is_training: loss.backward()` called with
// the flag off: the loop trains in one pass and evaluates, with grad on, in the other.

// The author manages grad mode around the call: a `with` whose context names a grad-mode
// switch (`torch.set_grad_enabled(phase == "train")`, `torch.no_grad() if ... else
// nullcontext()`), or a `torch.set_grad_enabled(x)` statement earlier in the function.
bool grad_mode_managed(const Facts& f, const CallSite& c) {
  auto switch_call = [&](Id root) {
    bool found = false;
    for_each_expr(f.m, root, [&](Id x) {
      const std::string& q = f.e(x).kind == ExprKind::Call ? f.callee_qual(x) : f.qual(x);
      if (in(q, {"torch.set_grad_enabled", "torch.no_grad", "torch.inference_mode", "torch.enable_grad",
                 "torch.autograd.set_grad_enabled", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad",
                 "torch.autograd.grad_mode.set_grad_enabled"}))
        found = true;
      return !found;
    });
    return found;
  };
  const uint32_t at = f.e(c.call).range.begin;
  for (Id sid : f.stmts_in(c.func)) {
    const Stmt& s = f.m.s(sid);
    if (s.kind == StmtKind::With && s.range.begin <= at && at < s.range.end) {
      for (Id item : s.items) {
        if (switch_call(item)) return true;
        // The context chosen before (`ctx = torch.enable_grad if training else torch.no_grad`,
        // then `with ctx():`): the name's values at the `with` name the switch.
        const Id callee = f.e(item).kind == ExprKind::Call ? f.e(item).kids[0] : item;
        if (f.e(callee).kind == ExprKind::Name)
          for (Id v : f.bindings_at(c.func, f.e(callee).text, callee))
            if (switch_call(v)) return true;
      }
    } else if (s.kind == StmtKind::Expr && s.range.end <= at && s.value != kNone &&
               f.e(s.value).kind == ExprKind::Call && switch_call(s.value)) {
      return true;
    }
  }
  return false;
}

struct GatedPass {
  std::string why;      // "when `phase` is \"val\" (...)"
  Id cond = kNone;      // the condition that switches training off in that pass
  bool positive = true; // training runs when `cond` holds (false: in its else branch)
  Range note;           // the pass: the loop over phases, or the call that turns training off
  std::string note_text;
};

std::string source_text(const CheckContext& ctx, Id x) {
  const Range& r = ctx.facts.e(x).range;
  if (r.end <= r.begin || r.end > ctx.source.size()) return "";
  return std::string(ctx.source.substr(r.begin, r.end - r.begin));
}

// The passes in which a training loop only evaluates: every backward and optimizer step of
// the loop (directly or through a same-file helper) sits under a condition that the pass
// decides false. Computed once per loop; a forward of the loop then only needs to run in the
// pass.
struct GatedCandidate {
  Env env;
  GatedPass pass;
};
using GatedMemo = std::map<int, std::vector<GatedCandidate>>;

// A call site of the loop's own function that trains: a backward or an optimizer step, or a
// call of a same-file helper that reaches one.
bool training_call(const Facts& f, const CallSite& x, Id func) {
  auto trains = [&](const CallSite& y) { return f.is_backprop(y) || f.optimizer_of_step(y) != kNone; };
  if (x.func != func || x.in_lambda) return false;
  return trains(x) || (x.target_func != kNone && x.target_func != x.func && f.reaches(x.target_func, trains));
}

std::vector<GatedCandidate> gated_candidates(const CheckContext& ctx, int loop) {
  const Facts& f = ctx.facts;
  std::vector<GatedCandidate> out;
  const Id func = f.loops[loop].func;
  const std::vector<Id>& top = func == kNone ? f.m.body : f.m.funcs[func].body;
  std::vector<std::vector<std::pair<Id, bool>>> paths;
  for (int ci : f.loops[loop].calls) {
    const CallSite& x = f.calls[ci];
    if (!training_call(f, x, func)) continue;
    // Training outside any `if` of the loop: it runs in every pass.
    if (x.guard_chain < 0) return out;
    std::vector<std::pair<Id, bool>> conds;
    if (!conditions_to(f, top, x.stmt, f.e(x.call).range.begin, conds) || conds.empty()) return out;
    paths.push_back(std::move(conds));
  }
  if (paths.empty()) return out;
  // Does `env` turn every training call off? The first condition that does, with its branch.
  auto all_off = [&](const Env& env, GatedPass& pass) {
    Id first = kNone;
    bool first_positive = true;
    for (const auto& conds : paths) {
      Id hit = kNone;
      for (const auto& [cond, branch] : conds) {
        auto v = decide(f, func, cond, env);
        if (v && truthy(*v) != branch) {
          hit = cond;
          if (first == kNone) first_positive = branch;
          break;
        }
      }
      if (hit == kNone) return false;
      if (first == kNone) first = hit;
    }
    pass.cond = first;
    pass.positive = first_positive;
    return true;
  };
  auto shown = [](const Known& v) {
    return v.k == Known::Str ? "\"" + v.s + "\"" : v.k == Known::NoneV ? std::string("None")
                                                : v.k == Known::Bool ? std::string(v.i ? "True" : "False")
                                                                     : std::to_string(v.i);
  };
  // 1. A loop over written-out phases around the training loop: `for phase in ["train", "val"]:`.
  for (int l = f.loops[loop].parent; l >= 0; l = f.loops[l].parent) {
    const Loop& L = f.loops[l];
    if (L.stmt == kNone || L.iter == kNone || f.m.s(L.stmt).targets.size() != 1) continue;
    const Id target = f.m.s(L.stmt).targets[0];
    if (f.e(target).kind != ExprKind::Name) continue;
    Id seq = L.iter;
    if (f.e(seq).kind == ExprKind::Name) {
      const std::vector<Id> vals = f.bindings_at(func, f.e(seq).text, seq);
      if (vals.size() != 1) continue;
      seq = vals[0];
    }
    const Expr& s = f.e(seq);
    if (s.kind != ExprKind::Sequence) continue;
    const bool dict = s.text == "dict"sv;
    if (dict && s.kids.size() % 2) continue;
    for (size_t k = 0; k < s.kids.size(); k += dict ? 2 : 1) {
      auto v = known_literal(f.e(s.kids[k]));
      if (!v) break;
      GatedCandidate c{{{f.e(target).text, *v}}, {}};
      if (!all_off(c.env, c.pass)) continue;
      c.pass.why = "when `" + f.e(target).text + "` is " + shown(*v);
      c.pass.note = f.e(L.iter).range;
      c.pass.note_text = "the pass over " + shown(*v) + " back-propagates nothing";
      out.push_back(std::move(c));
    }
  }
  // 2. A function whose training is switched by its parameters, called in this file with
  // them off (`run_epoch(model, val_loader)`, `processing(loader, "val")`).
  if (func == kNone) return out;
  const Function& fn = f.m.funcs[func];
  for (int ci : f.callers(func)) {
    const CallSite& caller = f.calls[ci];
    if (caller.func == func || f.grad_off(caller) || f.has_kwargs_splat(caller.call)) continue;
    bool starred = false;
    for (size_t k = 1; k < f.e(caller.call).kids.size(); ++k)
      starred = starred || f.e(f.e(caller.call).kids[k]).kind == ExprKind::Starred;
    if (starred) continue;
    GatedCandidate c;
    c.env = literal_arguments(f, caller, func);
    if (c.env.empty() || !all_off(c.env, c.pass)) continue;
    const std::string cond = source_text(ctx, c.pass.cond);
    c.pass.why = "when `" + fn.name + "()` is called with `" + cond + "` " + (c.pass.positive ? "false" : "true") +
                 " (see the note)";
    c.pass.note = f.e(caller.call).range;
    c.pass.note_text = "this call turns training off: `" + cond + "` is " + (c.pass.positive ? "false" : "true");
    out.push_back(std::move(c));
  }
  return out;
}

// The pass in which the training loop around the forward `fw` only evaluates, with the
// forward running in it and grad mode not managed around it.
std::optional<GatedPass> gated_pass(const CheckContext& ctx, const CallSite& fw, GatedMemo& memo) {
  const Facts& f = ctx.facts;
  auto it = memo.find(fw.loop);
  if (it == memo.end()) it = memo.emplace(fw.loop, gated_candidates(ctx, fw.loop)).first;
  if (it->second.empty()) return std::nullopt;
  std::vector<std::pair<Id, bool>> fw_path;
  const std::vector<Id>& top = fw.func == kNone ? f.m.body : f.m.funcs[fw.func].body;
  if (!conditions_to(f, top, fw.stmt, f.e(fw.call).range.begin, fw_path)) return std::nullopt;
  for (const GatedCandidate& c : it->second) {
    bool runs = true;
    for (const auto& [cond, branch] : fw_path) {
      auto v = decide(f, fw.func, cond, c.env);
      if (v && truthy(*v) != branch) runs = false;
    }
    if (!runs) continue;
    if (grad_mode_managed(f, fw)) return std::nullopt;
    return c.pass;
  }
  return std::nullopt;
}

// `torch.set_grad_enabled(<condition>)` around the loop computes what the loop computes: the
// condition is the one every backward and step of the loop runs under, and nothing in the
// loop rebinds its names, so its value at the loop's start holds in every iteration.
bool mode_fix_applies(const Facts& f, int loop, const GatedPass& g) {
  const Loop& L = f.loops[loop];
  if (L.stmt == kNone) return false;
  const std::vector<Id>& top = L.func == kNone ? f.m.body : f.m.funcs[L.func].body;
  for (int ci : L.calls) {
    const CallSite& x = f.calls[ci];
    if (!training_call(f, x, L.func)) continue;
    std::vector<std::pair<Id, bool>> conds;
    conditions_to(f, top, x.stmt, f.e(x.call).range.begin, conds);
    bool under = false;
    for (const auto& [cond, branch] : conds) under = under || (cond == g.cond && branch == g.positive);
    if (!under) return false;
  }
  std::set<std::string> names;
  for_each_expr(f.m, g.cond, [&](Id x) {
    if (f.e(x).kind == ExprKind::Name) names.insert(f.e(x).text);
    return true;
  });
  bool rebound = false;
  for (Id sid : L.stmts)
    for (Id t : f.m.s(sid).targets)
      for_each_expr(f.m, t, [&](Id x) {
        rebound = rebound || (f.e(x).kind == ExprKind::Name && names.count(f.e(x).text));
        return !rebound;
      });
  return !rebound;
}

// Does the scope (its call sites) call a callable it was handed or holds (a parameter, a local:
// `attack(x, y)`), which no call of the file resolves, in a file where some code back-propagates
// or takes `torch.autograd.grad` outside a training loop? That callable may be it.
bool calls_code_that_may_need_grad(const Facts& f, const std::vector<int>& calls, int& file_needs_grad) {
  if (file_needs_grad < 0) {  // (asked once per file)
    file_needs_grad = 0;
    for (const CallSite& x : f.calls)
      if (f.callee_qual(x.call) == "torch.autograd.grad"sv) file_needs_grad = 1;
  }
  if (!file_needs_grad) return false;
  for (int ci : calls) {
    const CallSite& x = f.calls[ci];
    const Expr& callee = f.e(f.e(x.call).kids[0]);
    if (x.target_func != kNone || f.is_model_call(x) || callee.kind != ExprKind::Name || !callee.qname.empty()) continue;
    if (x.func != kNone && (f.is_param(x.func, callee.text) || !f.bindings(x.func, callee.text).empty())) return true;
  }
  return false;
}

// A call of an interpretability library's gradient attribution, which back-propagates through
// the model it was handed (Grad-CAM and its gradient variants, integrated gradients, saliency,
// smoothed or guided gradients): the class's own call (`IntegratedGradients(model).attribute(x)`),
// or a call or method of an object the function or the module built with one (`cam(x)`,
// `ig.attribute(x)`). Perturbation methods (captum's Occlusion, FeatureAblation, Lime, Shapley
// values; Score-CAM, Ablation-CAM) run forwards only, and the libraries' plotting helpers none.
bool attribution_call(const Facts& f, const CallSite& x) {
  auto gradient_method = [&](const std::string& full) {
    // (A class's own constructor method: `GradCAMpp.from_config(**config)`.)
    const std::string q = ends_with(full, ".from_config") ? full.substr(0, full.size() - 12) : full;
    const std::string_view name = f.last_component(q);
    if (starts_with(q, "captum."))
      return in(name, {"IntegratedGradients"sv, "Saliency"sv, "DeepLift"sv, "DeepLiftShap"sv, "GradientShap"sv,
                       "InputXGradient"sv, "GuidedBackprop"sv, "GuidedGradCam"sv, "Deconvolution"sv, "LayerGradCam"sv,
                       "LayerIntegratedGradients"sv, "LayerConductance"sv, "NeuronConductance"sv, "NoiseTunnel"sv,
                       "LRP"sv, "LayerLRP"sv, "LayerDeepLift"sv, "LayerGradientXActivation"sv, "InternalInfluence"sv,
                       "NeuronGradient"sv, "NeuronIntegratedGradients"sv, "NeuronGuidedBackprop"sv,
                       "LayerGradientShap"sv, "LayerDeepLiftShap"sv, "NeuronDeepLift"sv, "NeuronGradientShap"sv});
    if (starts_with(q, "pytorch_grad_cam."))
      return in(name, {"GradCAM"sv, "HiResCAM"sv, "GradCAMPlusPlus"sv, "XGradCAM"sv, "LayerCAM"sv, "FullGrad"sv,
                       "GradCAMElementWise"sv, "EigenGradCAM"sv, "GuidedBackpropReLUModel"sv});
    if (starts_with(q, "monai.visualize."))
      return in(name, {"GradCAM"sv, "GradCAMpp"sv, "VanillaGrad"sv, "SmoothGrad"sv, "GuidedBackpropGrad"sv,
                       "GuidedBackpropSmoothGrad"sv});
    if (starts_with(q, "torchcam."))
      return in(name, {"GradCAM"sv, "GradCAMpp"sv, "SmoothGradCAMpp"sv, "XGradCAM"sv, "LayerCAM"sv});
    // PAIR's `saliency` (`import saliency.core as saliency`): its masks call back into the
    // model for gradients (XRAI through integrated gradients); not its Occlusion.
    if (starts_with(q, "saliency."))
      return in(name, {"GradientSaliency"sv, "IntegratedGradients"sv, "GuidedIG"sv, "BlurIG"sv, "GradCam"sv,
                       "XRAI"sv, "GuidedBackprop"sv});
    // Another package's class named for a gradient method (`from gradcam import GradCAMpp`):
    // the name says it takes gradients. (One the run defines is read where it is defined.)
    if (!q.empty() && !starts_with(q, "torch") && named_for_a_gradient_method(name))
      return !(f.project && f.project->run_gradient_named_classes.count(q));
    return false;
  };
  Id callee = f.e(x.call).kids[0];
  for (int hops = 0; hops < 4; ++hops) {
    const Expr& e = f.e(callee);
    if (e.kind == ExprKind::Call) {
      if (gradient_method(f.callee_qual(callee))) return true;
      callee = e.kids[0];
    } else if (e.kind == ExprKind::Attribute) {
      callee = e.kids[0];
    } else {
      break;
    }
  }
  if (gradient_method(f.callee_qual(x.call))) return true;
  const Expr& root = f.e(callee);
  if (root.kind != ExprKind::Name) return false;
  for (Id func : {x.func, kNone}) {
    for (Id v : f.bindings(func, root.text))
      if (f.e(v).kind == ExprKind::Call && gradient_method(f.callee_qual(v))) return true;
    if (func == kNone) break;
  }
  // A method of an object of a project class, defined in another module, that back-propagates
  // (`cam = GradCAM(model, layer)`, then `cam.generate(x)` calling `score.backward()`): the
  // project's own attribution method.
  if (f.project && !f.project->backprop_method_imports.empty() && f.e(f.e(x.call).kids[0]).kind == ExprKind::Attribute &&
      f.callee_receiver(x.call) == callee) {
    const std::string q = f.imported_class_built_by(f.bindings_at(x.func, root.text, callee));
    if (!q.empty() && f.project->backprop_method_imports.count(q + "." + f.callee_attr(x.call))) return true;
  }
  return false;
}

bool calls_attribution(const Facts& f, const std::vector<int>& calls) {
  return std::any_of(calls.begin(), calls.end(), [&](int ci) { return attribution_call(f, f.calls[ci]); });
}

// The model attribute a helper method of a plain class runs (`self.model(x)` -> "model"): the
// method's forward found by helper_forward, when its receiver is one attribute of `self`.
std::string helper_method_model(const Facts& f, Id g, std::map<Id, const CallSite*>& memo) {
  if (g == kNone || f.m.funcs[g].cls == kNone || !plain_class(f, f.m.funcs[g].cls)) return "";
  const CallSite* fw = helper_forward(f, g, memo);
  if (!fw) return "";
  const std::string& d = f.dotted(f.forward_receiver(fw->call));
  if (!starts_with(d, "self.") || d.find('.', 5) != std::string::npos) return "";
  return d.substr(5);
}

}  // namespace

void summarize_LL101(const Facts& f, FileSummary& out) {
  std::map<Id, const CallSite*> memo;
  // Module-level functions running the model handed in as a parameter.
  for (Id g = 0; g < f.m.funcs.size(); ++g) {
    const Function& fn = f.m.funcs[g];
    if (fn.cls != kNone || fn.parent != kNone || fn.params.empty() ||
        std::none_of(f.calls_in(g).begin(), f.calls_in(g).end(), [&](int ci) { return f.is_model_call(f.calls[ci]); }))
      continue;
    const CallSite* fw = helper_forward(f, g, memo);
    if (!fw || calls_attribution(f, f.calls_in(g))) continue;
    const std::string& d = f.dotted(f.forward_receiver(fw->call));
    // (Never rebound in the function: the caller's model is what runs.)
    auto p = std::find(fn.params.begin(), fn.params.end(), d);
    if (p == fn.params.end() || f.bindings(g, d).size() > 0) continue;
    out.helper_methods.push_back({fn.name, d, f.eval_called_before(g, d, f.e(fw->call).range.begin),
                                  static_cast<int>(p - fn.params.begin())});
  }
  for (Id c = 0; c < f.m.classes.size(); ++c) {
    if (!plain_class(f, c)) continue;
    for (Id g : f.m.classes[c].methods) {
      const std::string& name = f.m.funcs[g].name;
      if (starts_with(name, "__") || f.m.funcs[g].parent != kNone) continue;
      // (Cheap first: a method without a forward of a model is none.)
      if (std::none_of(f.calls_in(g).begin(), f.calls_in(g).end(),
                       [&](int ci) { return f.is_model_call(f.calls[ci]); }))
        continue;
      std::string model = helper_method_model(f, g, memo);
      if (model.empty() || calls_attribution(f, f.calls_in(g)) || f.class_freezes(c, "self." + model)) continue;
      const std::string self_model = "self." + model;
      const CallSite* fw = memo[g];
      out.helper_methods.push_back(
          {f.m.classes[c].name + "." + name, model, f.eval_called_before(g, self_model, f.e(fw->call).range.begin)});
    }
  }
}

// Is the model `d` switched to train mode (`d.train()`, `d.train(True)`) by a statement before
// `stmt` in the block of `func` that holds it?
bool train_mode_set_before(const Facts& f, Id func, Id stmt, const std::string& d) {
  if (stmt == kNone || d.empty()) return false;
  std::vector<Id> top;
  const std::vector<Id>* b = &f.block_holding(func, stmt, &top);
  for (Id sid : *b) {
    if (sid == stmt) break;
    const Stmt& s = f.m.s(sid);
    if (s.kind != StmtKind::Expr || s.value == kNone || f.e(s.value).kind != ExprKind::Call) continue;
    if (f.callee_attr(s.value) != "train"sv || f.dotted(f.callee_receiver(s.value)) != d) continue;
    const Id mode = f.arg(s.value, 0, "mode");
    if (mode == kNone || (f.e(mode).kind == ExprKind::Literal && f.e(mode).lit == LitKind::True)) return true;
  }
  return false;
}

// The forward `c` is the receiver of `.detach()` (`outp = teacher(x).detach()`), with grad on:
// its activations are saved for a backward that no output can reach. Reports it, with a fix
// that runs the assignment under no_grad when the statement is just that assignment.
bool detached_at_once(CheckContext& ctx, const CallSite& c, std::set<Id>& reported) {
  const Facts& f = ctx.facts;
  Id detach = f.detach_of(c);
  const bool later = detach == kNone;
  if (later) detach = detached_later(f, c);
  if (detach == kNone || !reported.insert(c.call).second) return false;
  const Id callee = f.forward_receiver(c.call);
  std::string model = f.dotted(callee);
  model = model.empty() ? "the model" : "`" + model + "`";
  std::string msg = "forward of " + model + " runs with autograd enabled, but its output is " +
                    (later ? "read only through `" + ctx.text(f.e(detach).range) + "`" : std::string("detached at once")) +
                    ": "
                    "the activations it saves for backward are never used by any backward pass, yet they raise "
                    "peak memory while it runs; " +
                    std::string(f.m.lang == Lang::Cpp ? "run it under a `torch::NoGradGuard` instead of detaching"
                                                      : "run it under `torch.no_grad()` instead of detaching");
  if (f.model_by_name(c.func, callee)) msg += " (" + model + " is taken for a model from its name only)";
  // (Code for PyTorch before 0.4, as for the other forwards: weak, and why.)
  const bool modern = written_for_0_4_or_later(f);
  Finding* fd = legacy_volatile(f, c.func, modern) ? ctx.report_weak("LL101", f.e(c.call).range, msg, kVolatileReason)
                : pre_0_4_file(f, modern)         ? ctx.report_weak("LL101", f.e(c.call).range, msg, kPre04Reason)
                                                  : report_memory_claim(ctx, "LL101", f.e(c.call).range, std::move(msg));
  if (!fd) return true;
  const Stmt& st = f.m.s(c.stmt);
  const std::string no_grad = spelling_of(f.m, "torch.no_grad");
  // (wrap_statement_fix offers nothing for a statement that shares its line.)
  if (!no_grad.empty() && st.kind == StmtKind::Assign && (st.value == detach || (later && st.value == c.call))) {
    Fix fix = wrap_statement_fix(ctx, c.stmt, "with " + no_grad + "():", "Run the forward under `" + no_grad + "()`");
    if (!fix.edits.empty()) fd->fixes.push_back(std::move(fix));
  }
  return true;
}

// How the model a forward runs (`x`, in `func`) was frozen: 1 every parameter (silent), 0 all
// but the parts attached after the freeze (named in `*part`), -1 neither or unknown. Read at
// the forward, through the bindings that reach it (`model = Net(10).cuda()`, where the file's
// `Net()` froze a backbone and attached a head) and, for a parameter, through what every
// same-file caller hands in.
int frozen_state(const Facts& f, Id func, Id x, std::string* part, int depth = 0) {
  const std::string& d = f.dotted(x);
  if (d.empty() || depth > 2) return -1;
  int all = -2;
  auto meet = [&](int r) { all = all == -2 || all == r ? r : -1; };
  if (std::string p = f.frozen_but_for_at(func, d, f.e(x).range.begin); !p.empty()) {
    *part = p;
    all = 0;
  } else if (func != kNone && f.is_param(func, d) && f.own_bindings(func, d).empty()) {
    for (const auto& [caller, a] : f.argument_values(func, d)) meet(frozen_state(f, caller, a, part, depth + 1));
  } else {
    for (Id v : f.bindings_at(func, d, x)) {
      v = f.unplaced(v);  // `Net(10).to(device)`
      meet(f.e(v).kind == ExprKind::Call ? f.returns_frozen(v, part) : -1);
    }
  }
  if (all >= 0 && f.unfrozen_in(func, d)) return -1;
  // Only a head (the model's last layers: `fc`, `classifier`, `head`) records little: a new
  // first layer (`model.conv1 = ...`) feeds every frozen layer after it, which then records
  // its activations too.
  if (all == 0) {
    const std::string_view last = f.last_component(*part);
    if (!in(last, {"fc"sv, "classifier"sv, "head"sv, "heads"sv, "last_linear"sv, "logits"sv, "fc_out"sv,
                   "out"sv, "output"sv, "linear"sv, "cls_head"sv}))
      return -1;
  }
  return all == -2 ? -1 : all;
}

// Is `loop` (in `func`, within the evaluation loop `outer`) a loop of decoding steps: `range(n)`
// or a `while`, not a pass over a data set by index, inside loops of a few trips at most? Or a
// loop over the characters of a prompt written out (`for ch in prime:`, with `prime="The"` and
// every same-file caller handing a string literal)?
bool decoding_steps(const Facts& f, int loop, int outer, Id func) {
  const Loop& L = f.loops[loop];
  auto literal_string = [&](Id x) {
    return x != kNone && f.e(x).kind == ExprKind::Literal && f.e(x).lit == LitKind::String;
  };
  bool prompt = false;
  if (L.stmt != kNone && f.m.s(L.stmt).kind == StmtKind::For && L.iter != kNone && f.e(L.iter).kind == ExprKind::Name &&
      func != kNone && f.is_param(func, f.e(L.iter).text) && f.own_bindings(func, f.e(L.iter).text).empty()) {
    const Function& fn = f.m.funcs[func];
    const std::string& name = f.e(L.iter).text;
    for (size_t i = 0; i < fn.params.size() && i < fn.param_defaults.size(); ++i)
      if (fn.params[i] == name) {
        const std::string& d = fn.param_defaults[i];
        prompt = !d.empty() && (d[0] == '"' || d[0] == '\'');
      }
    for (const auto& [caller, arg] : f.argument_values(func, name)) prompt = prompt && literal_string(arg);
  }
  const bool steps = prompt || (L.stmt != kNone && (f.m.s(L.stmt).kind == StmtKind::While ||
                                                    (L.iter != kNone && f.e(L.iter).kind == ExprKind::Call &&
                                                     python_builtin_call(f, L.iter) &&
                                                     f.e(f.e(L.iter).kids[0]).text == "range"sv)));
  if (!steps) return false;
  // (`range(len(test_dataset))`, `range(data_len)` with `data_len = len(test_dataset)`: a
  // pass over a data set by index, not steps of a decoding.)
  if (L.iter != kNone && f.e(L.iter).kind == ExprKind::Call)
    for (size_t k = 1; k < f.e(L.iter).kids.size(); ++k) {
      Id bound = f.e(L.iter).kids[k];
      if (size_read_of(f, bound) != kNone) return false;
      if (f.e(bound).kind == ExprKind::Name)
        for (Id v : f.bindings_at(func, f.e(bound).text, bound))
          if (size_read_of(f, v) != kNone) return false;
    }
  for (int l = loop; l != outer && l >= 0;) {
    l = f.loops[l].parent;
    if (l >= 0 && constant_trips(f, l, kFewDecodedItems) == 0) return false;
  }
  return true;
}

// The product of the constant trips of `loop` and the loops around it, up to and including
// `outermost` (-1: all), at most `limit`; 0 when one is unknown or the product exceeds it.
long nest_trips(const Facts& f, int loop, int outermost, long limit) {
  long trips = 1;
  for (int l = loop; l >= 0 && trips > 0; l = l == outermost ? -1 : f.loops[l].parent)
    if (trips *= constant_trips(f, l, limit); trips > limit) trips = 0;
  return trips;
}

// How many times the same-file callers of `func` run it, when every call site sits in code that
// runs at most once, within loops of constant trips: the sum over the sites (0 when unknown or
// beyond `limit`).
long caller_trips(const Facts& f, Id func, long limit) {
  if (func == kNone || f.handed_on(func) || f.callers(func).empty()) return 0;
  long total = 0;
  for (int ci : f.callers(func)) {
    const CallSite& at = f.calls[ci];
    if (at.in_lambda || at.func == func || (at.func != kNone && !f.runs_at_most_once(at.func))) return 0;
    const long trips = nest_trips(f, at.loop, -1, limit);
    if (trips == 0 || (total += trips) > limit) return 0;
  }
  return total;
}

// The model a function runs is a parameter it never rebinds, and every same-file caller hands
// in one it moved to the CPU before the call.
bool handed_in_on_cpu(const Facts& f, Id func, const std::string& name) {
  if (func == kNone || name.empty() || !f.is_param(func, name) || !f.own_bindings(func, name).empty()) return false;
  const auto args = f.argument_values(func, name);
  if (args.empty()) return false;
  for (const auto& [caller, a] : args)
    if (!placed_on_cpu(f, caller, f.dotted(f.unplaced(a)), a)) return false;
  return true;
}

void check_LL101(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  std::set<int> reported_loops;
  std::set<int> decided_loops;  // evaluation loops whose outputs' fate was asked
  std::optional<BackpropsByFunction> backprops;
  std::map<Id, size_t> decorated_funcs;  // function -> the finding whose fix decorates it
  int file_needs_grad = -1;  // does the file take torch.autograd.grad (-1: not asked yet)
  std::set<Id> reported_forwards;
  GatedMemo gated_memo;
  std::optional<bool> modern;   // the file is written for PyTorch 0.4 or later (asked once)
  std::optional<bool> pre_0_4;  // the file reads `x.data[0]` sums with Variables (asked once)
  std::map<Id, bool> volatile_funcs;  // function -> builds legacy `Variable(..., volatile=True)` (asked once)
  std::map<const std::vector<int>*, long> graph_widths;  // scope's calls -> loop_graph_width
  std::map<Id, const CallSite*> helpers_for_width;       // helper_forward's memo
  std::map<const std::vector<int>*, bool> attribution_scopes;  // scope's calls -> hands the model to an attribution
  LoopChains loop_chains;                                       // sampling_chain's memo
  SinglePassMemo single_pass;                                   // single_pass_evaluation's memo
  std::map<Id, bool> closures_off;                              // closure_used_under_no_grad, per closure
  std::map<int, LoopSteps> loop_steps;                          // validation_after_step's memo
  // The fix that decorates a whole evaluation function `func` (top level, never
  // back-propagating, named for evaluation or serving, not handing `model` to code the file
  // does not show): offered on `fd`, which then stands for the function's other forwards.
  auto decorate_whole_function = [&](Finding* fd, Id func, const std::string& model, bool serving) {
    if (func == kNone || f.m.funcs[func].parent != kNone ||
        f.reaches(func, [&](const CallSite& x) { return f.is_backprop(x); }) ||
        !(f.is_eval_function_name(f.m.funcs[func].name) || serving) ||
        hands_model_to_unseen_code(f, f.calls_in(func), model))
      return false;
    const std::string no_grad = spelling_of(f.m, "torch.no_grad");
    if (no_grad.empty()) return false;
    const Function& fn = f.m.funcs[func];
    uint32_t at = ctx.line_start(fn.range.begin);
    Fix fix;
    fix.title = "Decorate `" + fn.name + "` with `@" + no_grad + "()`";
    fix.safe = false;
    fix.edits.push_back({at, at, ctx.indent_at(fn.range.begin) + "@" + no_grad + "()" + ctx.newline()});
    fd->fixes.push_back(std::move(fix));
    decorated_funcs.emplace(func, ctx.handle(fd));
    return true;
  };
  // (Asked of a forward, or of a call of a helper that runs one, in loop `outer`.)
  auto acting_on_one_environment = [&](const CallSite& at, int outer) {
    return at.loop >= 0 && outer >= 0 && steps_one_environment(f, at.loop) && outputs_die_in_iteration(f, at, outer);
  };
  // A helper's forward `fw`, called at `at` in the evaluation loop `outer`: weak in an episode
  // of acting, in loops of a few trips, on a model the caller moved to the CPU, or on one item
  // per decoding step; else a memory claim. (The impact of the forward's own loop, asked of the
  // helper's call.)
  auto report_helper = [&](const CallSite& at, int outer, std::string msg, const CallSite* fw) {
    const bool gpu = !f.cpu_only_program() && !f.cpu_only_at(f.e(at.call).range.begin);
    if (gpu && acting_on_one_environment(at, outer))
      return ctx.report_weak("LL101", f.e(at.call).range, std::move(msg), kActingReason);
    const long trips = nest_trips(f, at.loop, outer, kFewDemoForwards);
    const bool runs_once = at.func == kNone || f.runs_at_most_once(at.func);
    if (trips > 0 && (trips <= kFewForwards || runs_once))
      return ctx.report_weak("LL101", f.e(at.call).range, std::move(msg), few_trips_reason(trips));
    if (interactive_loop(f, at)) return ctx.report_weak("LL101", f.e(at.call).range, std::move(msg), kInteractiveReason);
    if (!fw) return report_memory_claim(ctx, "LL101", f.e(at.call).range, std::move(msg));
    // The model the helper runs is a parameter it never rebinds: the caller's argument.
    const std::string& inner = f.dotted(helper_model(f, *fw));
    if (!inner.empty() && fw->func != kNone && f.is_param(fw->func, inner) && f.own_bindings(fw->func, inner).empty())
      if (const Id given = f.argument_for(at.call, fw->func, inner);
          given != kNone && placed_on_cpu(f, at.func, f.dotted(f.unplaced(given)), at.call))
        return ctx.report_weak("LL101", f.e(at.call).range, std::move(msg),
                               "the model was moved to the CPU before this call, so the graph costs host memory "
                               "of a CPU run");
    if (fw->loop < 0 && at.loop >= 0 && feeds_back(f, at) && decoding_steps(f, at.loop, outer, at.func) &&
        takes_one_item(f, *fw))
      return ctx.report_weak("LL101", f.e(at.call).range, std::move(msg),
                             "each call runs the forward on one item (a batch of one) per decoding step: one "
                             "sequence's graph at most, what one training sample costs");
    return report_memory_claim(ctx, "LL101", f.e(at.call).range, std::move(msg));
  };
  auto hands_to_attribution = [&](const std::vector<int>& scope) {
    auto [it, fresh] = attribution_scopes.try_emplace(&scope, false);
    if (fresh) it->second = calls_attribution(f, scope);
    return it->second;
  };
  for (const CallSite& c : f.calls) {
    // A forward under a grad switch the author wrote (`with torch.enable_grad():`,
    // `with torch.set_grad_enabled(train):`) runs with the grad mode chosen on purpose.
    if (c.in_lambda || f.grad_off(c) || c.grad_set || !f.is_model_call(c)) continue;
    if (c.func != kNone && f.m.funcs[c.func].parent != kNone) {
      auto [it, fresh] = closures_off.try_emplace(c.func, false);
      if (fresh) it->second = closure_used_under_no_grad(f, c.func);
      if (it->second) continue;
    }
    Id callee = f.forward_receiver(c.call);
    // A module whose parameters were all switched off records no graph from them: there are
    // no activations to keep (its inputs come from data, or from forwards judged on their own).
    if (f.frozen_at(c.func, f.dotted(callee), f.e(c.call).range.begin)) continue;
    // Frozen as a whole and then given a new part (a pretrained backbone with a new head),
    // here or in the function of the file that built it: only that part records a graph.
    std::string frozen_part;
    if (const int frozen = frozen_state(f, c.func, callee, &frozen_part); frozen == 1) continue;
    else if (frozen < 0) frozen_part.clear();
    if (f.forward_grad_off(c.func, callee)) continue;
    // A module without parameters (a greedy CTC decoder, a normalisation step) records a graph
    // only of inputs that carry one, and the forward that made them is the one to guard.
    if (parameter_free_model(f, c.func, callee)) continue;
    if (plain_tensor_object(f, c.func, callee)) continue;
    std::string why = eval_loop_reason(f, c);
    if (why.empty()) why = evaluation_pass(ctx, c);
    bool serving = false;
    // A loop that trains in one pass and only evaluates in another (`phase == "val"`, a caller
    // that turns the training flag off).
    std::optional<GatedPass> gated;
    if (why.empty() && c.loop >= 0 && !reported_loops.count(c.loop) && f.loop_trains(c.loop)) {
      gated = gated_pass(ctx, c, gated_memo);
      if (gated) why = gated->why;
      // Its output detached at once (`t = teacher(x).detach()`, a distillation teacher in a
      // loop that trains in one pass): no backward reaches its graph in any pass, so the fix is
      // no_grad around that forward, not grad switched by the pass.
      if (gated && detached_at_once(ctx, c, reported_forwards)) continue;
      // The same in a loop that only trains: a frozen teacher's `teacher(x).detach()` next to
      // the student's step, or a GAN's `netG(z).detach()` for the discriminator's step alone.
      if (!gated && detached_at_once(ctx, c, reported_forwards)) continue;
    }
    // A validation inside a training iteration: after the iteration's backward and step, the
    // model switched to eval mode in the same iteration (`model.eval(); out = model(x, edges)`
    // in a full-batch graph training loop), its outputs back-propagated nowhere (asked below).
    bool validation_in_step = false;
    if (why.empty() && !gated && c.loop >= 0 && f.loop_trains(c.loop) && validation_after_step(f, c, loop_steps)) {
      why = "after `" + f.dotted(callee) + ".eval()`, after the training step of its iteration";
      validation_in_step = true;
    }
    Range single_pass_call{};
    std::string single_pass_batch;
    bool single_pass_per_epoch = false;
    if (why.empty() && c.loop < 0)
      why = single_pass_evaluation(f, c, single_pass, &single_pass_call, &single_pass_batch, &single_pass_per_epoch);
    if (why.empty() && sampling_chain(f, c, loop_chains))
      why = "in a loop that feeds what it returns back into it (a sampling loop): each step's graph stays chained "
            "to the next";
    if (why.empty()) {
      // Inference-only programs: a loaded model's forward, loop or not; or a model whose
      // weights the program loads, run over a loader (a prediction script that never calls
      // `eval()`).
      // (Or, in a program, a model the program gives weights at all: an inference notebook that
      // loads a generator's weights and samples it, with no eval() and no loader.)
      if (f.file_trains() ||
          !(f.is_loaded_model(c.func, callee) ||
            (f.weights_loaded_into(c.func, callee) &&
             ((c.loop >= 0 && walks_data(f, c.loop, c.func)) || f.is_program()))))
        continue;
      // Inside a module's own methods, calling submodules is the module's forward.
      if (f.func_is_method_of_module(c.func) && f.dotted(callee).rfind("self.", 0) == 0) continue;
      // Impact: a single forward in a test (a pytest function, a TestCase method, a test
      // file) is a one-shot check, not an inference program; its activations are freed
      // when the test returns.
      if (c.loop < 0 && f.in_test_code(c.func, /*by_name=*/true)) continue;
      // A warm-up outside loops whose output nothing keeps (`_ = model(img)  # run once`, a bare
      // `model(x)`): its graph goes with the statement, a passing peak, not a program's waste.
      // (Not a bare expression in a notebook, whose value the kernel keeps in `Out` and `_`.)
      auto is_result = [&](Id v) {  // the call, or a branch of a conditional around it
        return v == c.call || (v != kNone && f.e(v).kind == ExprKind::Conditional && f.e(v).kids.size() == 3 &&
                               (f.e(v).kids[0] == c.call || f.e(v).kids[2] == c.call));
      };
      if (c.loop < 0 && c.stmt != kNone && is_result(f.m.s(c.stmt).value) &&
          kept_nowhere(f, c.stmt, !f.is_notebook()))
        continue;
      if (c.loop >= 0 && f.loop_reaches_backprop(c.loop)) continue;
      // Training code whose backward is elsewhere: the model switched to train mode just before
      // (`self.bert_model.train()`, then the forward whose loss the method returns), or a
      // function whose result a caller back-propagates, in this file or another.
      if (train_mode_set_before(f, c.func, c.stmt, f.dotted(callee)) || f.called_from_training(c.func)) continue;
      why = "in a program that never back-propagates, on a loaded model";
      serving = true;
    }
    if (f.output_read_as_numpy(c)) continue;
    // Interpretability code: the scope hands the model to attribution methods that
    // back-propagate through it, which no_grad would break.
    // The scope is the forward's outermost evaluation loop (an attribution after a loop over
    // the whole test set does not need that loop's graphs), else its function, else its
    // statement. (Asked once per scope: a loop of thousands of forwards asks the same question.)
    if (hands_to_attribution(c.loop >= 0       ? f.loops[outermost_eval_loop(f, c.loop)].calls
                             : c.func != kNone ? f.calls_in(c.func)
                                               : f.calls_in_stmt[c.stmt]))
      continue;
    // One finding per outermost evaluation loop, and one decision whether its outputs are
    // back-propagated after it (the first forward's).
    int outer = outermost_eval_loop(f, c.loop);
    if (outer >= 0 && !decided_loops.insert(outer).second) continue;
    if (!backprops) backprops = backprops_by_function(f);
    if (outputs_backpropagated_later(f, c, *backprops) || backpropagated_by_its_object(f, c)) continue;
    if (outer >= 0 && !reported_loops.insert(outer).second) continue;
    // One finding per function the fix decorates: its other forwards (a warm-up loop before the
    // prediction loop) are notes on it.
    if (c.func != kNone && decorated_funcs.count(c.func)) {
      if (outer >= 0)
        ctx.at(decorated_funcs[c.func]).notes.push_back({f.e(c.call).range, "another forward of `" + f.dotted(callee) +
                                                                              "` with autograd enabled, in the same function"});
      continue;
    }

    std::string model = f.dotted(callee);
    if (model.empty()) model = "the model";
    else model = "`" + model + "`";
    std::string mode;  // the training condition, for `torch.set_grad_enabled(...)`
    if (gated) {
      mode = source_text(ctx, gated->cond);
      if (!gated->positive) mode = "not (" + mode + ")";
    }
    std::string msg = (gated ? no_grad_message(model, why,
                                               "the loop back-propagates only when `" + mode +
                                                   "`: run it under `torch.set_grad_enabled(" + mode + ")`")
                             : no_grad_message(model, why)) +
                      (f.model_by_name(c.func, callee) ? " (" + model + " is taken for a model from its name only)"
                                                      : std::string());
    // Impact: one forward at the top level of a script or notebook (a demo cell, a one-image
    // run) keeps one input's graph until its output is dropped, once; a function serving
    // requests (or any loop) repeats it.
    // A loop that runs a constant handful of times (a demo showing two images, a loop that
    // breaks after its first batch) is the same as a few single forwards.
    long trips = c.loop >= 0 ? 1 : 0;
    std::string layers;  // the module whose layers a loop walks
    for (int l = c.loop; l >= 0 && trips > 0; l = l == outer ? -1 : f.loops[l].parent) {
      if (std::string walked = own_layers_walked(f, l); !walked.empty()) layers = std::move(walked);
      else if (trips *= constant_trips(f, l, kFewDemoForwards); trips > kFewDemoForwards) trips = 0;
    }
    // In code that runs once (a script's or notebook's top level, a function the program runs
    // at most once) a few more over data are still a demo: five predictions drawn for a figure.
    // (A loop over tensors the program makes times the model: decided below.)
    const bool runs_once = c.func == kNone || f.runs_at_most_once(c.func);
    const bool made = made_inputs(f, c);
    bool few_trips =
        trips > 0 && (trips <= kFewForwards || (runs_once && !made && trips <= kFewDemoForwards));
    // A helper's single forward, which its callers run a few times (`for surname in ['McMahan',
    // 'Nakamoto']: print(predict(surname, model))`): that many single forwards.
    bool by_callers = false;
    if (!few_trips && c.loop < 0 && c.func != kNone && !runs_once)
      if (const long n = caller_trips(f, c.func, kFewDemoForwards); n > 0) {
        trips = n;
        few_trips = by_callers = true;
      }
    // (Test code: the impact pass after the checks makes the finding weak; run_checks.)
    // A forward on tensors the program makes (`net(torch.randn(2, 3, 32, 32))`), once or a
    // fixed number of times: a shape or timing check of the model, not a pass over data.
    long made_trips = 1;
    for (int l = c.loop; l >= 0 && made_trips > 0; l = f.loops[l].parent)
      made_trips *= constant_trips(f, l, kFewChecks);
    const bool smoke = made && made_trips > 0 && made_trips <= kFewChecks && own_model(f, c);
    // The same with whatever model, a handful of times, when nothing keeps the output and the
    // runs that follow in the function go under no_grad (`for _ in range(5): _ = model(dummy)`,
    // then the timed loop in `with torch.no_grad():`): a warm-up, one pass's graph at a time,
    // outside what is measured.
    auto warms_up = [&] {
      if (c.stmt == kNone || c.func == kNone || f.m.s(c.stmt).value != c.call || !kept_nowhere(f, c.stmt, true))
        return false;
      const std::string& model = f.dotted(callee);
      for (int ci : f.calls_in(c.func)) {
        const CallSite& x = f.calls[ci];
        if (f.e(x.call).range.begin > f.e(c.call).range.end && f.grad_off(x) && f.is_model_call(x) &&
            f.dotted(f.forward_receiver(x.call)) == model)
          return true;
      }
      return false;
    };
    const bool warm_up = !smoke && made && made_trips > 0 && made_trips <= kFewDemoForwards && warms_up();
    // Once, outside any loop, on tensors the program makes, in code that runs at most once
    // (not a sampler called per request): whatever model it is (one the file imports or
    // loads), a probe of its output shapes (`out = model(torch.zeros(2, 3,
    // h, w)); c, h, w = out.size()[1:]`). A loop of such forwards times it and stays full.
    const bool probe = made && !smoke && c.loop < 0 && (c.func == kNone || f.runs_at_most_once(c.func));
    const long width = loop_graph_width(f, c, graph_widths, helpers_for_width);
    BatchGraph graph;  // asked only where the reasons before it do not hold
    long item_width = -1;  // likewise
    // One item per forward, nothing of it kept: a greedy decoding of a sentence, a caption for
    // each of a few images (the missing no_grad costs one item's activations at a time).
    // Only in a loop of decoding steps (`range(max_len)`, a `while`), within at most a few
    // items: a pass over a data set one item at a time keeps the full severity (an item may be
    // a video frame pair or a volume, and the whole set is walked).
    bool batch_of_one = false;
    bool recurrent_item = false;  // ... whose recurrent state alone goes on to the next step
    if (c.loop >= 0 && !few_trips && decoding_steps(f, c.loop, outer, c.func)) {
      if (takes_one_item(f, c)) {
        batch_of_one = outputs_die_in_iteration(f, c, outer);
        recurrent_item = !batch_of_one && outputs_die_in_iteration(f, c, outer, true);
      }
    }

    // One environment stepped every iteration (an episode of acting, a replay recorded for a
    // video): each forward acts on one observation, and what it returns dies with the step.
    const bool acting = !batch_of_one && !recurrent_item && !few_trips && acting_on_one_environment(c, outer);
    // (File-wide facts, asked once: a file of thousands of forwards asks them for each.)
    if (!modern) modern = written_for_0_4_or_later(f);
    if (!pre_0_4) pre_0_4 = pre_0_4_file(f, *modern);
    auto [volatile_it, fresh_func] = volatile_funcs.try_emplace(c.func, false);
    if (fresh_func) volatile_it->second = legacy_volatile(f, c.func, *modern);
    Finding* fd = volatile_it->second
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg, kVolatileReason)
                  : *pre_0_4
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg, kPre04Reason)
                  : !single_pass_batch.empty() ? ctx.report_weak("LL101", f.e(c.call).range, msg, single_pass_batch)
                  : serving && c.loop < 0 && c.func == kNone
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "a single forward at the top level of a script or notebook keeps one "
                                        "input's graph, once")
                  : serving && c.loop < 0 && f.runs_at_most_once(c.func)
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "a single forward in `" + f.m.funcs[c.func].name +
                                            "()`, which the program runs at most once, keeps one input's graph, "
                                            "once")
                  : f.constructor_grad_off(c.func)
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "the constructor of `" + f.m.classes[f.m.funcs[c.func].cls].name +
                                            "` switches grad off for the thread, so on the thread that built the "
                                            "object this forward records nothing; another thread (a server's "
                                            "handler, a pool's worker) still records the graph")
                  : smoke ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                            "the forward runs a model this file defines on tensors the program makes, "
                                            "a fixed number of times: a self-check of the model, not a pass over data")
                  : warm_up ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                              "nothing keeps the output of this forward on tensors the program makes, "
                                              "run a fixed number of times: a warm-up, one pass's graph at a time")
                  : probe ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                            "the forward runs once, outside any loop, on tensors the program makes: "
                                            "a probe of the model's output shapes, not a pass over data")
                  // (A CPU-only program is the stronger reason, given below.)
                  : !f.cpu_only_program() && !f.cpu_only_at(f.e(c.call).range.begin) && one_linear_layer(f, c)
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        linear_layer_itself(f, c)
                                            ? model + " is one linear layer: its graph saves the input and the weight, "
                                                      "both alive anyway, so nothing beyond the output is kept"
                                            : model + " records a graph only in linear layers (its other parts, if "
                                                      "any, run under `torch.no_grad()`): the graph saves their inputs "
                                                      "and weights, a small share of a forward's activations")
                  : !f.cpu_only_program() && !f.cpu_only_at(f.e(c.call).range.begin) && width >= 0 &&
                          width <= kSmallGraphWidth
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        model + " is a fully-connected model whose forward keeps about " +
                                            with_commas(width) + " floats (" +
                                            std::to_string((width * 4 + 1023) / 1024) +
                                            " KB) per sample, a graph of the order of the batch itself")
                  : !f.cpu_only_program() && !f.cpu_only_at(f.e(c.call).range.begin) && width < 0 &&
                          (graph = batch_graph(f, c)).floats >= 0 && graph.floats <= kSmallBatchGraph
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "the forward keeps about " + with_commas(graph.per_sample) + " floats per " +
                                            std::to_string(graph.shape.c) + " x " + std::to_string(graph.shape.h) +
                                            " x " + std::to_string(graph.shape.w) + " sample, " +
                                            (graph.floats * 4 < (1 << 20)
                                                 ? std::to_string((graph.floats * 4 + 1023) / 1024) + " KB"
                                                 : std::to_string((graph.floats * 4 + (1 << 19)) >> 20) + " MB") +
                                            " for a batch of " + std::to_string(graph.batch) +
                                            ": a small graph next to a GPU's memory")
                  : !f.cpu_only_program() && !f.cpu_only_at(f.e(c.call).range.begin) && width < 0 &&
                          (item_width = one_item_graph_width(f, c)) >= 0 && item_width <= kSmallGraphWidth
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "the forward takes one item (a batch of one) through a fully-connected "
                                        "model that keeps about " +
                                            with_commas(item_width) + " floats (" +
                                            std::to_string((item_width * 4 + 1023) / 1024) +
                                            " KB) of graph for it")
                  : placed_on_cpu(f, c)
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "the model was moved to the CPU before this forward, so the graph costs host "
                                        "memory of a CPU run")
                  : handed_in_on_cpu(f, c.func, f.dotted(callee))
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "every caller moves the model it hands in to the CPU before the call, so the "
                                        "graph costs host memory of a CPU run")
                  : !frozen_part.empty()
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "the model's parameters were frozen but for `" + frozen_part +
                                            "`: only that part records a graph, a small share of "
                                            "the forward's activations")
                  : interactive_loop(f, c) ? ctx.report_weak("LL101", f.e(c.call).range, msg, kInteractiveReason)
                  : batch_of_one
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "the forward takes one item (a batch of one) and nothing it returns outlives "
                                        "the iteration: one item's graph at a time")
                  : recurrent_item
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "the forward takes one item (a batch of one) per decoding step and only "
                                        "its recurrent state goes on to the next step: one sequence's graph at "
                                        "most, what one training sample costs")
                  : acting ? ctx.report_weak("LL101", f.e(c.call).range, msg, kActingReason)
                  : few_trips
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        by_callers
                                            ? "its callers run `" + f.m.funcs[c.func].name + "()` " +
                                                  (trips == 1 ? std::string("once") : std::to_string(trips) + " times") +
                                                  ", the same as that many single forwards"
                                        : trips == 1 && !layers.empty()
                                            ? "the loop walks the layers of `" + layers +
                                                  "` once, the same as a single forward"
                                            : few_trips_reason(trips))
                      : report_memory_claim(ctx, "LL101", f.e(c.call).range, msg);
    reported_forwards.insert(c.call);
    if (!fd) continue;
    // A bare `torch.no_grad()` statement before the forward in its scope: it builds a context
    // manager and drops it, disabling nothing (the author meant `with torch.no_grad():`).
    if (const Id bare = bare_no_grad_before(f, c); bare != kNone)
      fd->notes.push_back({f.e(bare).range, "`" + source_text(ctx, bare) +
                                                "` on its own line builds a context manager and drops it, "
                                                "disabling nothing: write `with " +
                                                source_text(ctx, bare) + ":` around the forward"});
    if (single_pass_call.end > 0)
      fd->notes.push_back({single_pass_call, single_pass_per_epoch
                                                 ? "called here once per pass of the loop around the training loop"
                                                 : "the training loop calls it here, every iteration"});
    if (gated) {
      fd->notes.push_back({gated->note, gated->note_text});
      const std::string sge = spelling_of(f.m, "torch.set_grad_enabled");
      if (!sge.empty() && mode_fix_applies(f, c.loop, *gated)) {
        Fix fix = wrap_statement_fix(ctx, f.loops[c.loop].stmt, "with " + sge + "(" + mode + "):",
                                     "Wrap the loop in `with " + sge + "(" + mode + "):`");
        if (!fix.edits.empty()) fd->fixes.push_back(std::move(fix));
      }
      continue;
    }

    // Fix: decorate a whole-inference function, else wrap the outermost loop statement.
    std::string no_grad = spelling_of(f.m, "torch.no_grad");
    if (no_grad.empty() && f.m.aliases.count("torch") == 0) no_grad = "";
    if (no_grad.empty()) continue;
    // In a training loop only the forward's statement is wrapped: the loop's step needs grad.
    if (validation_in_step) {
      Fix fix = wrap_statement_fix(ctx, c.stmt, "with " + no_grad + "():",
                                   "Wrap the forward's statement in `with " + no_grad + "():`");
      if (!fix.edits.empty()) fd->fixes.push_back(std::move(fix));
      continue;
    }
    // The scope also calls something it was handed (`attack(x, y)`) while the file has code
    // that needs autograd outside training (an adversarial attack's `torch.autograd.grad`):
    // disabling grad around it could break it. Only the forward's own statement is wrapped.
    if (calls_code_that_may_need_grad(f, c.func != kNone ? f.calls_in(c.func)
                                         : outer >= 0    ? f.loops[outer].calls
                                                         : std::vector<int>{},
                                      file_needs_grad)) {
      Fix fix = wrap_statement_fix(ctx, c.stmt, "with " + no_grad + "():",
                                   "Wrap the forward's statement in `with " + no_grad + "():`");
      if (!fix.edits.empty()) fd->fixes.push_back(std::move(fix));
      continue;
    }
    if (!decorate_whole_function(fd, c.func, f.dotted(callee), serving) && outer >= 0 &&
        !hands_model_to_unseen_code(f, f.loops[outer].calls, f.dotted(callee))) {
      Fix fix = wrap_loop_fix(ctx, outer, c.stmt, no_grad);
      if (!fix.edits.empty()) fd->fixes.push_back(std::move(fix));
    }
  }

  // Forwards one call away: an evaluation loop that calls a same-file helper running the model.
  std::map<Id, const CallSite*> helpers;
  for (const CallSite& h : f.calls) {
    if (h.loop < 0 || h.in_lambda || h.target_func == kNone || h.target_func == h.func || f.grad_off(h) ||
        h.grad_set || f.is_model_call(h))
      continue;
    const CallSite* fw = helper_forward(f, h.target_func, helpers);
    // A helper whose own forward is reported (a loaded model's serving helper) is fixed there.
    if (!fw || reported_forwards.count(fw->call) || f.loop_trains(h.loop) || feeds_enclosing_training(f, h) ||
        hands_to_attribution(f.calls_in(h.target_func)) || backpropagated_by_its_object(f, *fw))
      continue;
    Id callee = helper_model(f, *fw);
    std::string d = f.dotted(callee);
    bool unshown_base = false;
    // A method of a module class runs the caller's module: `agent.get_action(obs)` runs `agent`.
    // (Called from another module's own method, `mtp_head.prefill_inference(x)` while a model
    // walks its heads, it is that module's computation, judged where the model is called.)
    // Another class's helper runs its attribute: `self.infer_batch(b)` from a method of the
    // same object runs `self.model`, `trainer.infer_batch(b)` runs `trainer.model`.
    if (starts_with(d, "self.")) {
      const std::string& owner = f.dotted(f.callee_receiver(h.call));
      if (plain_class(f, f.class_of(h.target_func))) {
        if (owner.empty() || (owner == "self"sv && f.class_of(h.func) != f.class_of(h.target_func))) continue;
        if (owner != "self"sv) d = owner + d.substr(4);
      } else if (f.func_is_method_of_module(h.target_func)) {
        if (owner.empty() || owner == "self"sv || f.func_is_method_of_module(h.func)) continue;
        d = owner;
      } else {
        // A class whose base the file does not show (`class Estimator(BaseEstimator)`): it may be
        // a module, whose forward runs `self.<layer>` for its caller. Only a loop of another of
        // its own methods that walks data (`for x, y in val_loader:` in `fit()`) is an
        // evaluation loop of the object's attribute model.
        // The attribute must be one the class binds (`self.model = model.cuda()`), not a method
        // it may inherit (`self.generate_target_net(x)`), and the loop one by its data or by the
        // model's eval(), not by the method's name alone (a generator's `sample()` feeds training).
        if (owner != "self"sv || f.class_of(h.func) != f.class_of(h.target_func) || f.part_of_forward(h.func) ||
            f.m.funcs[h.func].name == "forward"sv || !walks_data(f, h.loop, h.func) ||
            !binds_attribute(f, f.class_of(h.target_func), d))
          continue;
        unshown_base = true;
      }
    }
    std::string why = f.eval_called_before(h.func, d, f.e(h.call).range.begin)
                          ? "after `" + f.eval_switch(h.func, d, f.e(h.call).range.begin) + "`"
                                                                                : eval_loop_reason(f, h);
    // The helper switches the model it runs to eval mode itself (`def prediction(model, ...):
    // model.eval(); output = model(data)`), in a loop that does not train: the loop evaluates.
    if (const std::string& inner = f.dotted(helper_model(f, *fw));
        why.empty() && !inner.empty() && f.eval_called_before(h.target_func, inner, f.e(fw->call).range.begin))
      why = "after `" + inner + ".eval()` in `" + f.m.funcs[h.target_func].name + "()`";
    // A plain wrapper's own `eval()` called on the object (it has one only because it defines it).
    if (const std::string& owner = f.dotted(f.callee_receiver(h.call));
        why.empty() && !owner.empty() && owner != "self"sv && plain_class(f, f.class_of(h.target_func)) &&
        f.eval_called_before(h.func, owner, f.e(h.call).range.begin))
      why = "after `" + owner + ".eval()`";
    if (why.empty() || (unshown_base && starts_with(why, "in evaluation function"))) continue;
    const int outer = outermost_eval_loop(f, h.loop);
    if (!reported_loops.insert(outer).second) continue;
    const std::string& helper = f.m.funcs[h.target_func].name;
    // One finding per function the fix decorates (a priming loop before a sampling loop).
    if (auto it = decorated_funcs.find(h.func); it != decorated_funcs.end()) {
      ctx.at(it->second).notes.push_back(
          {f.e(h.call).range, "another forward of `" + d + "` in `" + helper + "()` with autograd enabled, in the same function"});
      continue;
    }
    std::string msg = no_grad_message("`" + d + "` in `" + helper + "()`", why);
    Finding* fd = report_helper(h, outer, msg, fw);
    if (!fd) continue;
    fd->notes.push_back({f.e(fw->call).range, "the forward `" + helper + "()` runs"});
    if (h.func == kNone || calls_code_that_may_need_grad(f, f.calls_in(h.func), file_needs_grad) ||
        !decorate_whole_function(fd, h.func, d, false))
      offer_wrap_loop_fix(ctx, fd, outer, h.stmt);
  }

  // Forwards one call away in another module: `engine.eval(x, y)` in an evaluation loop, on an
  // instance of a plain class the file imports (`engine = trainer(...)`, `from engine import
  // trainer`) whose method runs its model attribute with grad on (FileSummary::helper_methods).
  if (!f.project || f.project->helper_method_imports.empty()) return;
  // Does a loop call anything else on the object? Asked once per (loop, object): the count of
  // its calls on the object.
  std::map<std::pair<int, std::string>, size_t> calls_on;
  for (const CallSite& h : f.calls) {
    if (h.loop < 0 || h.in_lambda || h.target_func != kNone || f.grad_off(h) || h.grad_set || f.is_model_call(h) ||
        f.loop_trains(h.loop) || feeds_enclosing_training(f, h))
      continue;
    // A function of another module handed the model: `val_outputs = inference(val_inputs, model)`.
    if (const std::string& q = f.callee_qual(h.call); !q.empty()) {
      auto it = f.project->helper_method_imports.find(q);
      if (it == f.project->helper_method_imports.end() || it->second.param < 0) continue;
      const FileSummary::HelperMethod& helper = it->second;
      const Id given = f.arg(h.call, static_cast<size_t>(helper.param), helper.model);
      const std::string d = given == kNone ? std::string() : f.dotted(f.unplaced(given));
      // (A model whose parameters were switched off records no graph, here or in the helper.)
      if (d.empty() || f.frozen_at(h.func, d, f.e(h.call).range.begin)) continue;
      std::string why = f.eval_called_before(h.func, d, f.e(h.call).range.begin)
                          ? "after `" + f.eval_switch(h.func, d, f.e(h.call).range.begin) + "`"
                                                                                  : eval_loop_reason(f, h);
      if (why.empty()) continue;
      const int outer = outermost_eval_loop(f, h.loop);
      if (!reported_loops.insert(outer).second) continue;
      Finding* fd = report_helper(h, outer, no_grad_message("`" + d + "` in `" + std::string(f.last_component(q)) + "()`", why), nullptr);
      if (!fd) continue;
      offer_wrap_loop_fix(ctx, fd, outer, h.stmt);
      continue;
    }
    const std::string& attr = f.callee_attr(h.call);
    const Id recv = f.callee_receiver(h.call);
    const std::string& owner = f.dotted(recv);
    if (attr.empty() || owner.empty() || owner == "self"sv) continue;
    // Every binding of the receiver an instance of the class (ambiguity decides nothing).
    const std::vector<Id> values = f.bindings_at(h.func, owner, recv);
    const std::string q = f.imported_class_built_by(values);
    auto it = q.empty() ? f.project->helper_method_imports.end() : f.project->helper_method_imports.find(q + "." + attr);
    if (it == f.project->helper_method_imports.end()) continue;
    const FileSummary::HelperMethod* helper = &it->second;
    const Expr& callee = f.e(f.e(values.front()).kids[0]);
    const std::string cls = callee.kind == ExprKind::Name ? callee.text : q;
    // Built around a model whose parameters were switched off (`Engine(net)` after
    // `net.requires_grad_(False)`): what it runs records no graph.
    for (Id v : values)
      for (size_t k = 1; k < f.e(v).kids.size() && helper; ++k)
        if (const std::string& a = f.dotted(f.unplaced(f.e(v).kids[k])); !a.empty() && f.frozen_at(h.func, a, f.e(v).range.begin))
          helper = nullptr;
    if (!helper) continue;
    const std::string d = owner + "." + helper->model;
    std::string why = f.eval_called_before(h.func, d, f.e(h.call).range.begin)
                          ? "after `" + f.eval_switch(h.func, d, f.e(h.call).range.begin) + "`"
                                                                                : eval_loop_reason(f, h);
    // The wrapper's own `eval()` called on the object (`model.eval()` on a plain class, which has
    // one only because it defines it: a switch of the network it holds).
    if (why.empty() && f.eval_called_before(h.func, owner, f.e(h.call).range.begin))
      why = "after `" + owner + ".eval()`";
    // The method switches its model to eval mode itself: evidence enough, in a loop that makes no
    // other call on the object (not one that also trains it through another method).
    if (why.empty() && helper->evaluates) {
      auto [n, fresh] = calls_on.try_emplace({h.loop, owner}, 0);
      if (fresh)
        for (int ci : f.loops[h.loop].calls) n->second += f.dotted(f.callee_receiver(f.calls[ci].call)) == owner;
      if (n->second == 1) why = "after `" + d + ".eval()` in `" + attr + "()`";
    }
    if (why.empty()) continue;
    const int outer = outermost_eval_loop(f, h.loop);
    if (!reported_loops.insert(outer).second) continue;
    std::string msg = no_grad_message("`" + d + "` in `" + cls + "." + attr + "()`", why);
    Finding* fd = report_helper(h, outer, msg, nullptr);
    if (!fd) continue;
    if (!hands_model_to_unseen_code(f, f.loops[outer].calls, owner)) offer_wrap_loop_fix(ctx, fd, outer, h.stmt);
  }
}

}  // namespace ll
