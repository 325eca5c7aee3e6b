// LL303 empty-cache-in-hot-loop: empty_cache() inside a per-batch loop body.
#include <set>
#include "checks/common.hpp"
#include "checks/dataloader.hpp"

namespace ll {
namespace {

// A condition that holds on every batch of a CUDA run: a device or availability test
// (`if torch.cuda.is_available():`, `if device.type == "cuda":`, `if args.cuda:`), or a step
// test whose divisor is 1 (`if index % disc_steps == 0:` with `disc_steps = 1`). Any other
// condition selects some batches only (periodic, on a threshold, on an error flag).
bool holds_every_batch(const Facts& f, Id cond, Id func) {
  bool other = false, device = false;
  for_each_expr(f.m, cond, [&](Id x) {
    const Expr& e = f.e(x);
    if (modulus_by_one(f, x, func)) {
      device = true;
      return false;
    }
    if (e.kind == ExprKind::Call) {
      const std::string& q = f.callee_qual(x);
      if (q == "torch.cuda.is_available"sv || q == "torch.cuda.is_initialized"sv || q == "torch.cuda.device_count"sv) {
        device = true;
        return false;
      }
      other = true;
      return false;
    }
    if (e.kind == ExprKind::Name || e.kind == ExprKind::Attribute) {
      bool dev = false;
      for (const auto& t : Facts::name_tokens(e.text))
        dev = dev || t == "cuda"sv || t == "gpu"sv || t == "device"sv || t == "type"sv;
      (dev ? device : other) = true;
      return false;
    }
    if (e.kind == ExprKind::BinOp) other = true;
    if (e.kind == ExprKind::Literal && e.lit == LitKind::String && e.text.rfind("cuda", 0) != 0) other = true;
    return true;
  });
  return device && !other;
}

// Does each iteration build a model and release it (`model = build(cfg)` ... `del model`)?
// Then the loop walks models (a batch-size probe, a sweep), and emptying the cache between
// them is the phase boundary the rule recommends.
bool releases_a_model_per_iteration(const Facts& f, const CallSite& c) {
  for (Id sid : f.loops[c.loop].stmts) {
    const Stmt& st = f.m.s(sid);
    if (st.kind != StmtKind::Delete) continue;
    for (Id t : st.targets) {
      std::vector<Id> names{t};
      if (f.e(t).kind == ExprKind::Sequence) names = f.e(t).kids;
      for (Id n : names)
        if (assigned_in_loop(f, c.loop, f.dotted(n)) && f.is_model_value(c.func, n)) return true;
    }
  }
  return false;
}

// Does each iteration of `loop` build its own DataLoader and walk it in a nested loop (`for
// seq in dataset: loader = DataLoader(seq); for frame in loader: ...`)? Then `loop` walks
// phases (sequences, splits), and a call in its own body runs once per phase. (A nested loop
// over micro-batches or inner steps of one batch does not make the batch loop a phase loop.)
bool builds_a_loader_per_iteration(const Facts& f, int loop) {
  for (int l = 0; l < static_cast<int>(f.loops.size()); ++l) {
    if (l == loop || f.loops[l].func != f.loops[loop].func || f.loops[l].iter == kNone) continue;
    bool inside = false;
    for (int p = f.loops[l].parent; p >= 0 && !inside; p = f.loops[p].parent) inside = p == loop;
    if (!inside) continue;
    bool fresh_loader = false;
    for_each_expr(f.m, f.loops[l].iter, [&](Id x) {
      if (f.e(x).kind == ExprKind::Call && is_dataloader_call(f, x)) fresh_loader = true;
      if (f.e(x).kind == ExprKind::Name)
        for (Id sid : f.loops[loop].stmts) {
          const Stmt& st = f.m.s(sid);
          if (st.kind != StmtKind::Assign || st.value == kNone || f.e(st.value).kind != ExprKind::Call ||
              !is_dataloader_call(f, st.value))
            continue;
          for (Id t : st.targets) fresh_loader = fresh_loader || f.dotted(t) == f.e(x).text;
        }
      return !fresh_loader;
    });
    if (fresh_loader) return true;
  }
  return false;
}

// A `while` loop whose condition reads a counter the body multiplies (`while bs <= max_bs:
// ... bs *= 2`): a search over sizes (a batch-size probe), a handful of differently sized
// attempts, each a phase of its own, not batches of one run.
bool geometric_search(const Facts& f, int loop) {
  const Loop& L = f.loops[loop];
  if (L.stmt == kNone || f.m.s(L.stmt).kind != StmtKind::While || f.m.s(L.stmt).value == kNone) return false;
  std::set<std::string> tested;
  for_each_expr(f.m, f.m.s(L.stmt).value, [&](Id x) {
    if (f.e(x).kind == ExprKind::Name) tested.insert(f.e(x).text);
    return true;
  });
  for (Id sid : L.stmts) {
    const Stmt& st = f.m.s(sid);
    if (st.targets.size() != 1 || st.value == kNone || f.e(st.targets[0]).kind != ExprKind::Name ||
        !tested.count(f.e(st.targets[0]).text))
      continue;
    const std::string& n = f.e(st.targets[0]).text;
    if (st.kind == StmtKind::AugAssign && (st.text == "*="sv || st.text == "<<="sv) && int_literal_value(f.e(st.value)) >= 1)
      return st.text == "<<="sv || int_literal_value(f.e(st.value)) >= 2;
    const Expr& v = f.e(st.value);
    if (st.kind == StmtKind::Assign && v.kind == ExprKind::BinOp && v.text == "*"sv &&
        ((f.e(v.kids[0]).kind == ExprKind::Name && f.e(v.kids[0]).text == n && int_literal_value(f.e(v.kids[1])) >= 2) ||
         (f.e(v.kids[1]).kind == ExprKind::Name && f.e(v.kids[1]).text == n && int_literal_value(f.e(v.kids[0])) >= 2)))
      return true;
  }
  return false;
}

// Under a periodic or otherwise selective condition (`if step % 100 == 0:`, `if oom:`, at any
// depth of nested `if`s inside its loop or function)? Only device tests (`if
// torch.cuda.is_available():`) hold on every batch.
bool selective(const Facts& f, const CallSite& c) {
  for (Id g : f.guards(c))
    if (!holds_every_batch(f, g, c.func)) return true;
  return false;
}

// Is statement `sid` of `body` (at any depth) under an `if` or `while` whose condition is not a
// device test, or in an `else` branch? (The `if`s of a function around a call outside its loops.)
bool under_selective_branch(const Facts& f, Id func, const std::vector<Id>& body, Id sid, bool guarded = false,
                            int depth = 0) {
  if (depth > 64) return true;
  for (Id s : body) {
    if (s == sid) return guarded;
    const Stmt& st = f.m.s(s);
    if (st.kind == StmtKind::FunctionDef || st.kind == StmtKind::ClassDef) continue;
    const bool cond = (st.kind == StmtKind::If || st.kind == StmtKind::While) && st.value != kNone;
    const bool sel = guarded || (cond && !holds_every_batch(f, st.value, func));
    for (const std::vector<Id>* b : {&st.body, &st.orelse, &st.finalbody}) {
      const bool here = b == &st.orelse && st.kind == StmtKind::If ? true : sel;
      if (std::find(b->begin(), b->end(), sid) != b->end()) return here;
      if (under_selective_branch(f, func, *b, sid, here, depth + 1)) return true;
    }
    for (const Handler& h : st.handlers)
      if (under_selective_branch(f, func, h.body, sid, true, depth + 1)) return true;
  }
  return false;
}

// Does each iteration of `loop`, a count (`for b in range(num_batches):`) that never
// back-propagates, run a whole loop of forwards before `c` (an autoregressive generation of
// thousands of steps, directly or in a function of the file it calls)? Then an iteration is a
// phase of its own, and emptying the cache after it is the boundary the rule recommends.
bool generates_per_iteration(const Facts& f, int loop, const CallSite& c) {
  const Id iter = f.loops[loop].iter;
  if (iter == kNone || f.e(iter).kind != ExprKind::Call || !python_builtin_call(f, iter) ||
      f.e(f.e(iter).kids[0]).text != "range"sv)
    return false;
  for (int ci : f.loops[loop].calls)
    if (f.is_backward(f.calls[ci])) return false;
  auto forwards_in_a_loop = [&](Id g) {
    for (const Loop& l : f.loops)
      if (l.func == g && g != kNone)
        for (int ci : l.calls)
          if (f.is_model_call(f.calls[ci])) return true;
    return false;
  };
  const uint32_t at = f.e(c.call).range.begin;
  for (int l = 0; l < static_cast<int>(f.loops.size()); ++l) {
    if (f.loops[l].func != f.loops[loop].func || f.loops[l].range.end > at) continue;
    bool inside = false;
    for (int p = f.loops[l].parent; p >= 0 && !inside; p = f.loops[p].parent) inside = p == loop;
    if (!inside) continue;
    for (int ci : f.loops[l].calls) {
      const CallSite& x = f.calls[ci];
      if (f.is_model_call(x) || (x.target_func != kNone && forwards_in_a_loop(x.target_func))) return true;
    }
  }
  return false;
}

constexpr long kFewCacheRefills = 16;

bool hot_loop(const Facts& f, int loop) {
  // A loop the code runs a few times (a sanity check that breaks after its first batch,
  // `range(3)`, ten shares of a list: `range(0, n, n // 10)`) is no per-batch loop: a few trips
  // cost a few refills, next to the work of each.
  if (constant_trips(f, loop, kFewCacheRefills) > 0) return false;
  if (iterates_batches(f, loop)) return true;
  for (int ci : f.loops[loop].calls)
    if (f.calls[ci].loop == loop && f.is_backward(f.calls[ci])) return true;
  // A forward in the loop's own body (not in a loop nested in it, nor a helper that loops) of a
  // model the loop does not build: each iteration runs one batch, whatever the loop walks
  // (lines of a file gathered into a batch, image paths, records).
  // So does a call of a same-file function that runs one forward (a diffusion loop's `x =
  // p_sample(model, x, t)` per timestep): a forward at its top level, and no loop in it (a
  // helper that walks a loader, `evaluate(model, loader)`, is a phase).
  auto one_step_helper = [&](Id g) {
    for (const Loop& L : f.loops)
      if (L.func == g) return false;
    bool forward = false;
    for (int gi : f.calls_in(g)) {
      const CallSite& y = f.calls[gi];
      if (y.in_lambda && f.is_model_call(y)) return false;  // a comprehension of forwards
      forward = forward || (!y.in_lambda && y.loop < 0 && f.is_model_call(y));
    }
    return forward;
  };
  for (int ci : f.loops[loop].calls) {
    const CallSite& x = f.calls[ci];
    if (x.loop != loop || x.in_lambda) continue;
    if (f.is_model_call(x)) {
      const std::string& model = f.dotted(f.forward_receiver(x.call));
      if (!model.empty() && !assigned_in_loop(f, loop, model) && !f.model_by_name(x.func, f.forward_receiver(x.call)))
        return true;
    } else if (x.target_func != kNone && one_step_helper(x.target_func)) {
      return true;
    }
  }
  return false;
}

// Does function `g` run once per batch: a module's `forward()` or a Lightning step method, or a
// function of the file called, on every iteration, in a loop over batches or from such a
// function (two calls deep)? Says how, for the message ("" when not), and `*via` is the call
// that makes it so (kNone for a forward).
std::string per_batch_function(const Facts& f, Id g, Id* via, int depth = 0) {
  *via = kNone;
  if (g == kNone || depth > 2) return "";
  const Function& fn = f.m.funcs[g];
  if (fn.cls != kNone && f.is_module_class(fn.cls) &&
      in(std::string_view(fn.name), {"forward", "training_step", "validation_step", "test_step", "predict_step"}))
    return "in `" + fn.name + "()`, which runs on every batch";
  for (int ci : f.callers(g)) {
    const CallSite& x = f.calls[ci];
    if (x.in_lambda || x.try_handler >= 0 || selective(f, x) || x.stmt == kNone ||
        (x.loop < 0 && (x.func == kNone || under_selective_branch(f, x.func, f.m.funcs[x.func].body, x.stmt))))
      continue;
    Id deeper = kNone;
    if (x.loop >= 0 ? hot_loop(f, x.loop) : !per_batch_function(f, x.func, &deeper, depth + 1).empty()) {
      *via = x.call;
      return "in `" + fn.name + "()`, called on every batch";
    }
  }
  return "";
}

}  // namespace

void check_LL303(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  for (const CallSite& c : f.calls) {
    // In an except clause it is OOM recovery, not per-batch work. (The callee's own name first:
    // most calls are not this one.)
    if (c.in_lambda || c.try_handler >= 0) continue;
    if (const std::string_view nm = f.e(f.e(c.call).kids[0]).text; nm != "empty_cache"sv && nm != "emptyCache"sv)
      continue;
    if (!f.is_torch_call(c.call, {"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache",
                                  "c10.cuda.CUDACachingAllocator.emptyCache"}))
      continue;
    if (selective(f, c)) continue;
    if (c.loop < 0) {
      // Outside any loop of its function: a function that itself runs once per batch.
      if (c.func == kNone || c.stmt == kNone || under_selective_branch(f, c.func, f.m.funcs[c.func].body, c.stmt)) continue;
      Id via = kNone;
      const std::string how = per_batch_function(f, c.func, &via);
      if (how.empty()) continue;
      Finding* fd = ctx.report("LL303", f.e(c.call).range,
                               "`empty_cache()` runs on every batch (" + how + "): it forces the caching allocator to "
                               "give memory back to the driver and request it again on the next batch, which costs "
                               "time and does not lower peak memory; call it at phase boundaries (after evaluation, "
                               "between models), not per batch");
      if (fd && via != kNone) fd->notes.push_back({f.e(via).range, "called here, on every batch"});
      continue;
    }
    if (!hot_loop(f, c.loop) || (!iterates_batches(f, c.loop) && releases_a_model_per_iteration(f, c))) continue;
    if (builds_a_loader_per_iteration(f, c.loop) || generates_per_iteration(f, c.loop, c)) continue;
    if (!iterates_batches(f, c.loop) && geometric_search(f, c.loop)) continue;
    ctx.report("LL303", f.e(c.call).range,
               "`empty_cache()` runs on every batch: it forces the caching allocator to give memory back to the "
               "driver and request it again on the next iteration, which costs time and does not lower peak "
               "memory; call it at phase boundaries (after evaluation, between models), not per batch");
  }
}

}  // namespace ll
