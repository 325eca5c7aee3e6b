// LL206 gradient-accumulation-unscaled: gradients are accumulated over N micro-batches
// (backward() every iteration, step() and the reset every N) while the loss given to
// backward() is not divided by N, so every update is the sum, not the mean, of N gradients.
#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "checks/common.hpp"
#include "checks/flow.hpp"

namespace ll {
namespace {

bool mentions_accum(const Facts& f, Id root) {
  bool hit = false;
  for_each_expr(f.m, root, [&](Id x) {
    const Expr& e = f.e(x);
    // A name, or a configuration entry read by its key (`config["n_accumulate"]`).
    const Expr* named = e.kind == ExprKind::Name || e.kind == ExprKind::Attribute ? &e : nullptr;
    if (e.kind == ExprKind::Subscript && e.kids.size() == 2 && f.e(e.kids[1]).kind == ExprKind::Literal &&
        f.e(e.kids[1]).lit == LitKind::String)
      named = &f.e(e.kids[1]);
    if (named)
      for (const auto& t : Facts::name_tokens(named->text))
        if (t == "accum"sv || t == "accumulate"sv || t == "accumulation"sv || t == "accumulated"sv || t == "grad_accum"sv ||
            t == "accu"sv || t == "iters_to_accumulate"sv)
          hit = true;
    return !hit;
  });
  return hit;
}

// The accumulation count N in a guard `(i + 1) % N == 0` / `step % N == 0` / `count == N`.
Id accumulation_count(const Facts& f, Id guard) {
  Id n = kNone;
  for_each_expr(f.m, guard, [&](Id x) {
    const Expr& e = f.e(x);
    if (n == kNone && e.kind == ExprKind::BinOp && e.text == "%" && e.kids.size() == 2) n = e.kids[1];
    return n == kNone;
  });
  if (n != kNone) return n;
  // `if accum_count == accum_steps:` / `if n_accumulated >= grad_accum:`
  const Expr& g = f.e(guard);
  if (g.kind == ExprKind::Compare && g.kids.size() == 2 && (g.text == "==" || g.text == ">=") &&
      (mentions_accum(f, g.kids[0]) || mentions_accum(f, g.kids[1])))
    return g.kids[1];
  return kNone;
}

// The same expression, node for node (`config["steps"]` in the guard and in the division).
bool same_expr(const Facts& f, Id a, Id b, int depth = 0) {
  if (a == b) return true;
  if (a == kNone || b == kNone || depth > 8) return false;
  const Expr& x = f.e(a);
  const Expr& y = f.e(b);
  if (x.kind != y.kind || x.lit != y.lit || x.text != y.text || x.kids.size() != y.kids.size() || x.kw != y.kw ||
      !x.fors.empty() || !y.fors.empty())
    return false;
  for (size_t k = 0; k < x.kids.size(); ++k)
    if (!same_expr(f, x.kids[k], y.kids[k], depth + 1)) return false;
  return true;
}

// Does `x` stand for the accumulation count `n`: the same name, constant or expression, or a
// name about accumulation (`args.gradient_accumulation_steps`, `1 / accum_iter`)?
bool is_count(const Facts& f, Id x, Id n) {
  if (x == kNone) return false;
  // A numeric cast of the count is the count: `loss / float(accum)`.
  while (f.e(x).kind == ExprKind::Call && f.e(f.e(x).kids[0]).kind == ExprKind::Name &&
         in(f.e(f.e(x).kids[0]).text, {"float", "int"}) && f.e(x).kids.size() == 2)
    x = f.e(x).kids[1];
  if (mentions_accum(f, x)) return true;
  const Expr& a = f.e(x);
  const Expr& b = f.e(n);
  if (a.kind == ExprKind::Literal && b.kind == ExprKind::Literal) return a.text == b.text;
  const std::string& d = f.dotted(x);
  if (!d.empty()) return d == f.dotted(n);
  return a.kind == ExprKind::Subscript && same_expr(f, x, n);
}

// Is `x` a batch size (`bs`, `batch_size`, `args.total_batch_size`)?
bool is_batch_size(const Facts& f, Id x) {
  // `args.batch_size * args.world_size`: the global batch.
  if (f.e(x).kind == ExprKind::BinOp && f.e(x).text == "*"sv && f.e(x).kids.size() == 2)
    return is_batch_size(f, f.e(x).kids[0]) || is_batch_size(f, f.e(x).kids[1]);
  const std::string& d = f.dotted(x);
  if (d.empty()) return false;
  for (const auto& t : Facts::name_tokens(f.last_component(d)))
    if (t == "bs"sv || t == "batch"sv || t == "batchsize"sv) return true;
  return false;
}

// Does the value follow the bindings that reach it (and same-file callees' returns, a few
// levels deep) to an expression `hit` accepts? `x` of `loss / N`, `loss * bs`.
bool derived(const Facts& f, Id func, Id x, int depth, std::set<std::string>& seen,
             const std::function<bool(Id)>& hit) {
  if (x == kNone || depth > 5) return false;
  bool found = false;
  for_each_expr(f.m, x, [&](Id y) {
    if (found) return false;
    if (hit(y)) { found = true; return false; }
    const Expr& e = f.e(y);
    if (e.kind == ExprKind::Call) {
      auto it = f.call_index.find(y);
      const CallSite* c = it == f.call_index.end() ? nullptr : &f.calls[it->second];
      if (c && c->target_func != kNone && depth < 3)
        for (Id r : f.returned_values(c->target_func))
          if (derived(f, c->target_func, r, depth + 1, seen, hit)) { found = true; return false; }
    }
    if (e.kind == ExprKind::Name || e.kind == ExprKind::Attribute) {
      const std::string& d = f.dotted(y);
      if (!d.empty() && seen.insert(std::to_string(func) + ":" + d + "@" + std::to_string(y)).second)
        for (Id v : f.bindings_at(func, d, y))
          if (derived(f, func, v, depth + 1, seen, hit)) { found = true; return false; }
      return e.kind == ExprKind::Attribute;
    }
    return true;
  });
  return found;
}

// A count of micro-batches to a nominal batch: `accumulate = max(round(nbs / batch_size), 1)`.
// Every update then gathers the gradients of a fixed number of samples, whatever the batch size.
bool nominal_batch_count(const Facts& f, Id func, Id n) {
  std::set<std::string> seen;
  return derived(f, func, n, 0, seen, [&](Id y) {
    const Expr& e = f.e(y);
    return e.kind == ExprKind::BinOp && (e.text == "/"sv || e.text == "//"sv) && e.kids.size() == 2 &&
           is_batch_size(f, e.kids[1]);
  });
}

// Is there an augmented assignment `name op= value` in the function whose value passes `test`
// (`loss *= args.batch_size`, `loss /= N`)?
template <class Test>
bool updated_in_place(const Facts& f, Id func, const std::string& name, std::string_view op, Test test) {
  if (name.empty()) return false;
  for (const StmtSite& ss : f.stmt_sites) {
    const Stmt& st = f.m.s(ss.stmt);
    if (ss.func == func && st.kind == StmtKind::AugAssign && st.text == op && !st.targets.empty() &&
        f.dotted(st.targets[0]) == name && test(st.value))
      return true;
  }
  return false;
}

// For a name read at `at` that a reaching tuple assignment binds from a call (`loss, items =
// compute_loss(...)`): each such call, with the name's position in the tuple.
std::vector<std::pair<Id, size_t>> unpacked_calls(const Facts& f, Id func, const std::string& d, Id at) {
  std::vector<std::pair<Id, size_t>> out;
  Id st = f.stmt_of(at);
  if (st == kNone || d.find('.') != std::string::npos) return out;
  auto si = f.stmt_index.find(st);
  if (si == f.stmt_index.end() || f.stmt_sites[si->second].func != func) return out;
  bool outside = false;
  for (const Def& df : f.flow().reaching(st, d, &outside)) {
    if (df.kind != DefKind::Unpacked || df.value == kNone || f.e(df.value).kind != ExprKind::Call) continue;
    const Stmt& s = f.m.s(df.stmt);
    if (s.targets.size() != 1 || f.e(s.targets[0]).kind != ExprKind::Sequence) continue;
    const auto& names = f.e(s.targets[0]).kids;
    for (size_t k = 0; k < names.size(); ++k)
      if (f.dotted(names[k]) == d) out.emplace_back(df.value, k);
  }
  return out;
}

// A call of a loss function or class of another module that sums over the batch
// (ProjectView::batch_summed_losses): `compute_loss(p, t)`, or `compute_loss(p, t)` after
// `compute_loss = ComputeLoss(model)`.
bool imported_batch_sum(const Facts& f, Id func, Id call) {
  if (!f.project || f.project->batch_summed_losses.empty()) return false;
  // (Through a star import too: `from utils.utils import *`, then `compute_loss(p, t)`.)
  auto summed = [&](Id c) {
    if (f.project->batch_summed_losses.count(f.callee_qual(c))) return true;
    for (const std::string& q : f.star_quals(c, func))
      if (f.project->batch_summed_losses.count(q)) return true;
    return false;
  };
  if (summed(call)) return true;
  const Id callee = f.e(call).kids[0];
  if (f.e(callee).kind != ExprKind::Name) return false;
  const std::vector<Id> built = f.bindings_at(func, f.e(callee).text, callee);
  return !built.empty() && std::all_of(built.begin(), built.end(), [&](Id b) {
    return f.e(b).kind == ExprKind::Call && summed(b);
  });
}

// A loss summed over the batch's samples: multiplied by the batch size on its way.
bool summed_over_batch(const Facts& f, Id func, Id loss) {
  // `loss *= args.batch_size` in the function (YOLOv5's trainers).
  if (updated_in_place(f, func, f.dotted(loss), "*=", [&](Id v) { return is_batch_size(f, v); })) return true;
  std::set<std::string> seen;
  return derived(f, func, loss, 0, seen, [&](Id y) {
    const Expr& e = f.e(y);
    // A loss function of another module that sums over the batch (`compute_loss(p, t)`, or an
    // instance of such a loss class, `compute_loss = ComputeLoss(model)`), also as the first
    // element of the tuple it returns (`loss, items = compute_loss(pred, targets)`).
    if (e.kind == ExprKind::Call && imported_batch_sum(f, func, y)) return true;
    if (e.kind == ExprKind::Name && f.project && !f.project->batch_summed_losses.empty())
      for (const auto& [call, k] : unpacked_calls(f, func, e.text, y))
        if (k == 0 && imported_batch_sum(f, func, call)) return true;
    return e.kind == ExprKind::BinOp && e.text == "*" && e.kids.size() == 2 &&
           (is_batch_size(f, e.kids[0]) || is_batch_size(f, e.kids[1]));
  });
}

// Does every return of `g` hand back (as itself, or as the first element of a tuple) a value
// multiplied by the batch size on its way?
bool returns_batch_sum(const Facts& f, Id g) {
  const std::vector<Id> returned = f.returned_values(g);
  return !returned.empty() && std::all_of(returned.begin(), returned.end(), [&](Id r) {
    if (f.e(r).kind == ExprKind::Sequence && !f.e(r).kids.empty()) r = f.e(r).kids[0];
    return summed_over_batch(f, g, r);
  });
}

// A loss normalised to a nominal batch on its way (`loss *= batch_size / 64`, `loss * bs / nbs`):
// the author sets the update's scale against that nominal batch (each update is N * bs / 64
// times the mean gradient), not a sum the accumulation count would have to undo.
bool normalised_to_nominal_batch(const Facts& f, Id func, Id loss) {
  auto ratio = [&](Id y) {
    const Expr& e = f.e(y);
    return e.kind == ExprKind::BinOp && (e.text == "/"sv || e.text == "//"sv) && e.kids.size() == 2 &&
           is_batch_size(f, e.kids[0]);
  };
  // `loss *= batch_size / 64` in the function, on the loss or on what it is made from
  // (`with amp.scale_loss(loss, opt) as scaled: scaled.backward()`).
  auto scaled_in_place = [&](const std::string& d) { return updated_in_place(f, func, d, "*=", ratio); };
  std::set<std::string> seen;
  return derived(f, func, loss, 0, seen, [&](Id y) {
    const Expr& e = f.e(y);
    if (e.kind == ExprKind::Name || e.kind == ExprKind::Attribute) return scaled_in_place(f.dotted(y));
    if (e.kind != ExprKind::BinOp || e.kids.size() != 2) return false;
    // `loss * (bs / 64)`, or `loss * bs / 64` read as `(loss * bs) / 64`.
    if (e.text == "*"sv) return ratio(e.kids[0]) || ratio(e.kids[1]);
    return (e.text == "/"sv || e.text == "//"sv) && f.e(e.kids[0]).kind == ExprKind::BinOp &&
           f.e(e.kids[0]).text == "*"sv && f.e(e.kids[0]).kids.size() == 2 &&
           (is_batch_size(f, f.e(e.kids[0]).kids[0]) || is_batch_size(f, f.e(e.kids[0]).kids[1]));
  });
}

// A loss that is a sum over the batch's samples: `torch.sum(l)` / `l.sum()` of the whole
// tensor, or a loss call with `reduction="sum"` (`size_average=False`), through the names that
// reach it.
bool summed_loss(const Facts& f, Id func, Id x, int depth, std::set<std::string>& seen) {
  if (x == kNone || depth > 4) return false;
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::Call) {
    if (f.callee_qual(x) == "torch.sum"sv && e.kids.size() == 2 && e.kw.empty()) return true;
    if (f.callee_attr(x) == "sum"sv && e.kids.size() == 1) return true;
    const Id r = f.arg(x, SIZE_MAX, "reduction");
    if (r != kNone && f.e(r).kind == ExprKind::Literal && f.e(r).text == "sum"sv) return true;
    const Id sa = f.arg(x, SIZE_MAX, "size_average");
    if (sa != kNone && f.e(sa).kind == ExprKind::Literal && f.e(sa).lit == LitKind::False) return true;
    // A call of a criterion built to sum (`criterion = nn.MSELoss(reduction="sum")`).
    const Id callee = e.kids[0];
    if (depth == 0 && (f.e(callee).kind == ExprKind::Name || f.e(callee).kind == ExprKind::Attribute)) {
      const std::vector<Id> built = f.bindings_at(func, f.dotted(callee), callee);
      return !built.empty() && std::all_of(built.begin(), built.end(), [&](Id b) {
        return f.e(b).kind == ExprKind::Call && f.arg(b, 0) == kNone && summed_loss(f, func, b, depth + 1, seen);
      });
    }
    return false;
  }
  // `loss = torch.sum(level) + loss` over the levels of a deep supervision, from `loss = 0.0`.
  if (e.kind == ExprKind::BinOp && e.text == "+"sv && e.kids.size() == 2) {
    auto term = [&](Id t) {
      return (f.e(t).kind == ExprKind::Literal && (f.e(t).lit == LitKind::Int || f.e(t).lit == LitKind::Float)) ||
             summed_loss(f, func, t, depth + 1, seen);
    };
    return term(e.kids[0]) && term(e.kids[1]) &&
           !(f.e(e.kids[0]).kind == ExprKind::Literal && f.e(e.kids[1]).kind == ExprKind::Literal);
  }
  if (e.kind != ExprKind::Name) return false;
  // (A name met again, the loop-carried sum: nothing new, it holds as far as the rest does.)
  if (!seen.insert(std::to_string(func) + ":" + e.text).second) return true;
  // (A number the sum starts from, `loss = 0.0`, is no loss of its own.)
  bool any = false;
  for (Id v : f.bindings_at(func, e.text, x)) {
    if (f.e(v).kind == ExprKind::Literal && (f.e(v).lit == LitKind::Int || f.e(v).lit == LitKind::Float)) continue;
    if (!summed_loss(f, func, v, depth + 1, seen)) return false;
    any = true;
  }
  return any;
}

// Are the accumulated gradients divided in place before the step, anywhere in the file, by
// the count or a product holding it (`p.grad /= world_size * accumulation_steps`,
// `param.grad.data.div_(accum)`)? The same update as dividing the loss.
bool gradients_divided(const Facts& f, Id n) {
  // (Through the names the divisor is made of: `size = world_size * accumulation_steps`.)
  std::function<bool(Id, Id, int)> by_count = [&](Id func, Id v, int depth) {
    bool hit = false;
    for_each_expr(f.m, v, [&](Id y) {
      hit = hit || is_count(f, y, n);
      if (!hit && depth < 2 && f.e(y).kind == ExprKind::Name)
        for (Id b : f.bindings_at(func, f.e(y).text, y)) hit = hit || (b != v && by_count(func, b, depth + 1));
      return !hit;
    });
    return hit;
  };
  auto grad = [&](Id t) {
    const std::string& d = f.dotted(t);
    return ends_with(d, ".grad") || ends_with(d, ".grad.data");
  };
  for (const StmtSite& ss : f.stmt_sites) {
    const Stmt& st = f.m.s(ss.stmt);
    if (st.kind == StmtKind::AugAssign && st.text == "/=" && !st.targets.empty() && grad(st.targets[0]) &&
        by_count(ss.func, st.value, 0))
      return true;
  }
  for (const CallSite& c : f.calls)
    if (in(f.callee_attr(c.call), {"div_", "mul_"}) && grad(f.callee_receiver(c.call)) && by_count(c.func, c.call, 0))
      return true;
  return false;
}

// For a name read at `at` that a reaching tuple assignment binds from a same-file call
// (`loss, correct = step(...)`): the expressions that call returns in that position.
std::vector<Id> unpacked_returns(const Facts& f, Id func, const std::string& d, Id at) {
  std::vector<Id> out;
  for (const auto& [call, k] : unpacked_calls(f, func, d, at)) {
    const size_t n = f.e(f.m.s(f.stmt_of(call)).targets[0]).kids.size();
    Id g = f.same_file_target(call, func);
    if (g == kNone) continue;
    for (Id r : f.returned_values(g))
      if (f.e(r).kind == ExprKind::Sequence && f.e(r).kids.size() == n) out.push_back(f.e(r).kids[k]);
  }
  return out;
}

// Is the value divided by the accumulation count `n` (or multiplied by its reciprocal) on
// its way here? Follows names through the bindings that reach each use in the function (and
// same-file callees' returns, also an element of a returned tuple the caller unpacks), a few levels deep. A division by anything else (a mixup
// weight computed upstream, an average over heads) is not the scaling this rule asks for.
bool scaled(const Facts& f, Id func, Id x, Id n, int depth, std::set<std::string>& seen) {
  if (x == kNone || depth > 5) return false;
  bool found = false;
  for_each_expr(f.m, x, [&](Id y) {
    if (found) return false;
    const Expr& e = f.e(y);
    if (e.kind == ExprKind::BinOp && (e.text == "/"sv || e.text == "//"sv) && e.kids.size() == 2 && is_count(f, e.kids[1], n)) {
      found = true;
      return false;
    }
    if (e.kind == ExprKind::BinOp && e.text == "*" && (mentions_accum(f, y))) { found = true; return false; }
    if (e.kind == ExprKind::Call) {
      const std::string& a = f.callee_attr(y);
      if ((a == "div"sv || a == "div_"sv || a == "true_divide"sv) && is_count(f, f.arg(y, 0), n)) { found = true; return false; }
      if ((a == "mul"sv || a == "mul_"sv) && mentions_accum(f, y)) { found = true; return false; }
      const CallSite* c = nullptr;
      auto it = f.call_index.find(y);
      if (it != f.call_index.end()) c = &f.calls[it->second];
      if (c && c->target_func != kNone && depth < 3) {
        for (const StmtSite& s : f.stmt_sites)
          if (s.func == c->target_func && f.m.s(s.stmt).kind == StmtKind::Return &&
              scaled(f, c->target_func, f.m.s(s.stmt).value, n, depth + 1, seen)) {
            found = true;
            return false;
          }
      }
    }
    if (e.kind == ExprKind::Name || e.kind == ExprKind::Attribute) {
      const std::string& d = f.dotted(y);
      if (!d.empty() && seen.insert(std::to_string(func) + ":" + d + "@" + std::to_string(y)).second) {
        // The bindings that reach this use (a division in another branch, or in the
        // validation part of the function, scales nothing here).
        for (Id v : f.bindings_at(func, d, y))
          if (scaled(f, func, v, n, depth + 1, seen)) { found = true; return false; }
        // `loss, n_correct = forward_pass(...)`: the element a same-file helper returns.
        for (Id v : unpacked_returns(f, func, d, y))
          if (scaled(f, f.function_at(f.e(v).range.begin), v, n, depth + 1, seen)) { found = true; return false; }
        // `loss = loss / N`, then `loss += other / N`: a sum of scaled terms is scaled.
        if (const Id st = f.stmt_of(y); st != kNone) {
          bool outside = false;
          for (const Def& df : f.flow().reaching(st, d, &outside)) {
            const Stmt& as = f.m.s(df.stmt);
            if (df.kind != DefKind::Augmented || df.value == kNone || as.targets.empty() ||
                (as.text != "+="sv && as.text != "-="sv))
              continue;
            if (scaled(f, func, df.value, n, depth + 1, seen) && scaled(f, func, as.targets[0], n, depth + 1, seen)) {
              found = true;
              return false;
            }
          }
        }
        // `loss /= N`, `loss *= 1 / N`
        if (updated_in_place(f, func, d, "/=", [&](Id v) { return is_count(f, v, n); }) ||
            updated_in_place(f, func, d, "*=", [&](Id v) { return scaled(f, func, v, n, depth + 1, seen); }))
          { found = true; return false; }
      }
      return e.kind == ExprKind::Attribute;
    }
    return true;
  });
  return found;
}

// Is the learning rate divided by the accumulation count instead (`args.lr /= args.grad_loop`,
// `lr = base_lr / accum_steps`), anywhere in the file? With the summed gradient that is the
// same update as dividing the loss.
bool learning_rate_scaled(const Facts& f, Id n) {
  auto lr_name = [&](Id t) {
    const std::string& d = f.dotted(t);
    if (d.empty()) return false;
    auto toks = Facts::name_tokens(f.last_component(d));
    bool learning = false, rate = false;
    for (const auto& k : toks) {
      if (k == "lr"sv) return true;
      learning = learning || k == "learning"sv;
      rate = rate || k == "rate"sv;
    }
    return learning && rate;
  };
  for (const StmtSite& site : f.stmt_sites) {
    const Stmt& st = f.m.s(site.stmt);
    if (st.targets.size() != 1 || st.value == kNone || !lr_name(st.targets[0])) continue;
    if (st.kind == StmtKind::AugAssign && st.text == "/=" && is_count(f, st.value, n)) return true;
    if (st.kind == StmtKind::Assign) {
      const Expr& v = f.e(st.value);
      if (v.kind == ExprKind::BinOp && v.text == "/"sv && v.kids.size() == 2 && is_count(f, v.kids[1], n)) return true;
    }
  }
  return false;
}

// What the optimizer's construction says about its update's dependence on the gradient's
// scale. Adam-family and sign-based updates divide it out (measured: the same update with
// and without the division); SGD-like ones scale with it.
// Mixed: configuration chooses between the two (`if optim_type == "sgd": SGD(...) elif
// optim_type == "adam": Adam(...)`).
enum class OptimizerKind { ScaleInvariant, ScaleSensitive, Mixed, Unknown };

// An optimizer class by its qualified name (`torch.optim.SGD`).
OptimizerKind class_kind(const std::string& q) {
  std::string_view last = q;
  if (size_t dot = last.rfind('.'); dot != std::string_view::npos) last = last.substr(dot + 1);
  if (q.rfind("torch.optim.", 0) != 0 && q.rfind("transformers.", 0) != 0 && q.rfind("bitsandbytes.", 0) != 0 &&
      q.rfind("apex.", 0) != 0 && q.rfind("timm.optim.", 0) != 0) {
    // A factory, a class of the file, a name from a config: unknown. But a class of the
    // project's own named as an Adam-family optimizer is one (a copy of `AdamW` in `optim/`).
    for (std::string_view adam : {"Adam", "AdamW", "Adamax", "AdamP", "RAdam", "NAdam", "FusedAdam", "Lamb", "LAMB",
                                  "FusedLAMB", "Adafactor", "Lion"})
      if (last == adam) return OptimizerKind::ScaleInvariant;
    return OptimizerKind::Unknown;
  }
  if (last.find("Adam") != std::string_view::npos || last == "RMSprop"sv || last == "Adagrad"sv || last == "Adadelta"sv ||
      last == "Adafactor"sv || last == "Rprop"sv || last == "Lion"sv || last.find("Lamb") == 0 ||
      last.find("LAMB") != std::string_view::npos)
    return OptimizerKind::ScaleInvariant;
  return OptimizerKind::ScaleSensitive;
}

// Several candidates: invariant if all are; mixed if some are and some are SGD-like (the
// configuration decides); else sensitive if any may be.
OptimizerKind combine(const std::vector<OptimizerKind>& kinds) {
  if (kinds.empty()) return OptimizerKind::Unknown;
  bool sensitive = false, invariant = false, unknown = false;
  for (OptimizerKind k : kinds) {
    sensitive = sensitive || k == OptimizerKind::ScaleSensitive || k == OptimizerKind::Mixed;
    invariant = invariant || k == OptimizerKind::ScaleInvariant || k == OptimizerKind::Mixed;
    unknown = unknown || k == OptimizerKind::Unknown;
  }
  if (sensitive && invariant) return OptimizerKind::Mixed;
  if (sensitive) return OptimizerKind::ScaleSensitive;
  return invariant && !unknown ? OptimizerKind::ScaleInvariant : OptimizerKind::Unknown;
}

// The classes a constructor call may instantiate when its callee is not an import: a name
// bound to a class (`optimizer_class = torch.optim.SGD`) or a table of them
// (`opts = {"sgd": torch.optim.SGD, ...}; opts[args.optimizer](params)`).
OptimizerKind callee_kind(const Facts& f, Id func, Id callee) {
  std::vector<OptimizerKind> kinds;
  auto refs = [&](Id v) {
    const Expr& ve = f.e(v);
    if (ve.kind == ExprKind::Sequence && ve.text == "dict"sv && ve.kids.size() % 2 == 0) {
      for (size_t k = 1; k < ve.kids.size(); k += 2) kinds.push_back(class_kind(f.qual(ve.kids[k])));
    } else if (ve.kind == ExprKind::Name || ve.kind == ExprKind::Attribute) {
      kinds.push_back(class_kind(f.qual(v)));
    } else {
      kinds.push_back(OptimizerKind::Unknown);
    }
  };
  const Expr& ce = f.e(callee);
  Id table = ce.kind == ExprKind::Subscript ? ce.kids[0] : ce.kind == ExprKind::Name ? callee : kNone;
  const std::string& d = table == kNone ? std::string() : f.dotted(table);
  if (d.empty()) return OptimizerKind::Unknown;
  for (Id v : f.bindings(func, d)) refs(v);
  return combine(kinds);
}

OptimizerKind optimizer_kind(const Facts& f, Id func, Id opt, int depth);

// A function whose body does nothing: `pass`, `None`, `...`, a docstring, a bare `return`.
bool does_nothing(const Facts& f, Id fn) {
  if (fn == kNone) return false;
  for (Id sid : f.m.funcs[fn].body) {
    const Stmt& st = f.m.s(sid);
    if (st.kind == StmtKind::Pass || (st.kind == StmtKind::Return && st.value == kNone)) continue;
    if (st.kind == StmtKind::Expr && st.value != kNone && f.e(st.value).kind == ExprKind::Literal) continue;
    return false;
  }
  return true;
}

// A call handed the optimizer `d` itself that hands it back prepared or wrapped (`model,
// optimizer = amp.initialize(model, optimizer)`, `accelerator.prepare(...)`,
// `hvd.DistributedOptimizer(optimizer)`): the same optimizer's kind. (Not a constructor of a
// known optimizer class, nor a same-file function, whose body says what it returns.)
bool hands_back(const Facts& f, Id v, const std::string& d) {
  const Expr& e = f.e(v);
  if (e.kind != ExprKind::Call || d.empty() || f.call_index.count(v) == 0) return false;
  if (f.calls[f.call_index.at(v)].target_func != kNone || class_kind(f.callee_qual(v)) != OptimizerKind::Unknown)
    return false;
  for (size_t k = 1; k < e.kids.size(); ++k)
    if (f.dotted(e.kids[k]) == d) return true;
  return false;
}

// Lightning's `self.optimizers()` in a method: the kinds of the optimizers its class's
// `configure_optimizers` returns (`opt`, `[opt]`, `([opt], [scheduler])`,
// `{"optimizer": opt, ...}`); empty for any other call.
std::vector<OptimizerKind> configured_optimizers(const Facts& f, Id func, Id call, int depth) {
  std::vector<OptimizerKind> kinds;
  if (func == kNone || f.callee_attr(call) != "optimizers"sv || f.dotted(f.callee_receiver(call)) != "self"sv)
    return kinds;
  const Id k = f.m.funcs[func].cls;
  if (k == kNone) return kinds;
  std::function<void(Id, Id, int)> collect = [&](Id g, Id v, int d) {
    const Expr& e = f.e(v);
    if (d > 4) {
      kinds.push_back(OptimizerKind::Unknown);
    } else if (e.kind == ExprKind::Sequence && e.text == "dict"sv) {
      for (size_t i = 0; i + 1 < e.kids.size(); i += 2)
        if (f.e(e.kids[i]).kind == ExprKind::Literal && f.e(e.kids[i]).text == "optimizer"sv) collect(g, e.kids[i + 1], d + 1);
    } else if (e.kind == ExprKind::Sequence) {
      // `([opt_g, opt_d], [sched_g, sched_d])`: the optimizers come first, the schedulers after.
      const bool lists = !e.kids.empty() && f.e(e.kids[0]).kind == ExprKind::Sequence;
      for (size_t i = 0; i < (lists ? 1 : e.kids.size()); ++i) collect(g, e.kids[i], d + 1);
    } else if (const std::vector<Id> bs = e.kind == ExprKind::Name ? f.bindings(g, e.text) : std::vector<Id>{};
               !bs.empty() && std::all_of(bs.begin(), bs.end(), [&](Id b) { return f.e(b).kind == ExprKind::Sequence; })) {
      for (Id b : bs) collect(g, b, d + 1);
    } else {
      kinds.push_back(optimizer_kind(f, g, v, depth + 1));
    }
  };
  for (Id g : f.m.classes[k].methods)
    if (f.m.funcs[g].name == "configure_optimizers"sv)
      for (Id r : f.returned_values(g)) collect(g, r, 0);
  if (kinds.empty()) kinds.push_back(OptimizerKind::Unknown);
  return kinds;
}

OptimizerKind optimizer_kind(const Facts& f, Id func, Id opt, int depth) {
  if (opt == kNone || depth > 6) return OptimizerKind::Unknown;  // (callers of callers, a factory)
  const Expr& oe = f.e(opt);
  if (oe.kind == ExprKind::Conditional && oe.kids.size() == 3) {
    // `SGD(...) if kind == "sgd" else Adam(...)`: the configuration decides.
    return combine({optimizer_kind(f, func, oe.kids[0], depth + 1), optimizer_kind(f, func, oe.kids[2], depth + 1)});
  }
  if (oe.kind == ExprKind::Call) {
    if (const std::vector<OptimizerKind> k = configured_optimizers(f, func, opt, depth); !k.empty()) return combine(k);
    const std::string& q = f.callee_qual(opt);
    // A class of the file whose `step()` does nothing (`DummyOptimizer` for an evaluation
    // pass): it applies no update, so the gradients' scale changes nothing.
    if (const Id k = f.constructed_class(opt); k != kNone && does_nothing(f, f.method_in(k, "step")))
      return OptimizerKind::ScaleInvariant;
    // A factory of another module of the run (FileSummary::optimizer_factories).
    if (f.project && !q.empty())
      if (auto it = f.project->optimizer_factory_kinds.find(q); it != f.project->optimizer_factory_kinds.end())
        return static_cast<OptimizerKind>(it->second == 1 ? OptimizerKind::ScaleSensitive
                                          : it->second == 2 ? OptimizerKind::ScaleInvariant
                                                            : OptimizerKind::Mixed);
    if (!q.empty()) return class_kind(q);
    // A same-file factory (`optimizer = build_adamw(model, lr)`): what it returns.
    if (const Id g = f.same_file_target(opt, func); g != kNone) {
      std::vector<OptimizerKind> kinds;
      for (Id r : f.returned_values(g)) kinds.push_back(optimizer_kind(f, g, r, depth + 1));
      return combine(kinds);
    }
    const OptimizerKind k = callee_kind(f, func, oe.kids[0]);
    if (k != OptimizerKind::Unknown) return k;
    // A class a star import of an optimizer library brings (`from transformers import *`,
    // then `AdamW(...)`), named nowhere else in the file. (Only an Adam-family name decides:
    // the star import may bring factories as well as classes.)
    const Expr& ce = f.e(oe.kids[0]);
    if (ce.kind == ExprKind::Name && f.bindings(func, ce.text).empty())
      for (const std::string& mod : f.m.star_imports)
        if (class_kind(mod + "." + ce.text) == OptimizerKind::ScaleInvariant) return OptimizerKind::ScaleInvariant;
    return OptimizerKind::Unknown;
  }
  const std::string& d = f.dotted(opt);
  if (d.empty()) return OptimizerKind::Unknown;
  std::vector<std::pair<Id, Id>> values;
  for (Id v : f.bindings(func, d)) values.emplace_back(func, v);
  // A parameter: what the file's callers hand in (`train(model, loader, optimizer)`).
  // (A call that hands in no optimizer, `optim=None` by default or written out in an
  // evaluation call of a shared train/valid function, never steps it.)
  if (values.empty() && oe.kind == ExprKind::Name) values = f.argument_values(func, d, true);
  std::vector<OptimizerKind> kinds;
  for (const auto& [where, v] : values) {
    if (f.e(v).kind == ExprKind::Literal && f.e(v).lit == LitKind::None) continue;
    if (!(f.dotted(v) == d && where == func) && !(where == func && hands_back(f, v, d)))
      kinds.push_back(optimizer_kind(f, where, v, depth + 1));
  }
  return combine(kinds);
}

// A count that is a plain name the file never binds, brought by an import (`from config import
// ACCUM_STEPS`, `from config import *`): the module that sets it, else "". Its value, 1 in
// some configurations, is not visible here.
std::string count_from_another_module(const Facts& f, Id func, Id n) {
  const Expr& e = f.e(n);
  if (e.kind != ExprKind::Name || !f.bindings(func, e.text).empty() || f.is_param(func, e.text)) return "";
  if (auto a = f.m.aliases.find(e.text); a != f.m.aliases.end()) return "`" + a->second + "`";
  if (!f.m.star_imports.empty()) return "`from " + f.m.star_imports.front() + " import *`";
  return "";
}

// One backward() of an accumulating loop: report it when the loss it is handed is not
// scaled on its way there.
void report_unscaled(CheckContext& ctx, const CallSite& step, Id n, const CallSite& backward, OptimizerKind kind,
                     bool nominal, const std::string& count_from, std::set<int>& reported) {
  const Facts& f = ctx.facts;
  // The loss handed to backward().
  const Expr& bcall = f.e(backward.call);
  Id loss = kNone;
  const std::string& battr = f.callee_attr(backward.call);
  if (battr == "backward"sv && bcall.kids.size() == 1) {
    loss = f.callee_receiver(backward.call);
    // scaler.scale(loss).backward()
    if (loss != kNone && f.e(loss).kind == ExprKind::Call && f.callee_attr(loss) == "scale"sv) {
      Id inner = f.arg(loss, 0);
      if (inner != kNone) loss = inner;
    }
  } else if (f.callee_qual(backward.call) == "torch.autograd.backward"sv) {
    loss = f.arg(backward.call, 0, "tensors");
  } else if (battr == "manual_backward"sv) {
    // Lightning's manual optimization back-propagates what it is handed, unscaled.
    loss = f.arg(backward.call, 0, "loss");
  }
  // engine.backward(loss) (DeepSpeed), accelerator.backward(loss): they scale themselves.
  if (loss == kNone) return;
  std::set<std::string> seen;
  if (scaled(f, backward.func, loss, n, 0, seen)) return;
  // Accumulation to a nominal batch of a loss summed over samples: each update is one
  // nominal batch's summed gradient, the scale the learning rate was tuned for.
  if (nominal && summed_over_batch(f, backward.func, loss)) return;
  if (normalised_to_nominal_batch(f, backward.func, loss)) return;
  // A loss summed over the samples (`reduction="sum"`, `torch.sum(...)`): N micro-batches'
  // summed gradients are the summed gradient of one batch of all their samples, the
  // convention the loss itself sets.
  if (std::set<std::string> s2; summed_loss(f, backward.func, loss, 0, s2)) return;
  if (!reported.insert(backward.call).second) return;

  const std::string n_text = ctx.text(n);
  const std::string loss_text = ctx.text(loss);
  std::string step_text = ctx.text(step.call);
  if (step_text.size() > 40 || step_text.find('\n') != std::string::npos)
    step_text = ctx.text(f.e(step.call).kids[0]) + "(...)";
  const bool simple = f.e(loss).kind == ExprKind::Name || f.e(loss).kind == ExprKind::Attribute ||
                      f.e(loss).kind == ExprKind::Call || f.e(loss).kind == ExprKind::Subscript;
  const std::string scaled_text = "(" + loss_text + " / " + n_text + ")";
  std::string message =
      "`" + step_text + "` runs once every `" + n_text + "` backward() calls, so `.grad` holds the sum of `" +
      n_text + "` micro-batch gradients, but `" + loss_text + "` is not divided by `" + n_text +
      "`: each update applies `" + n_text + "` times the mean gradient (with SGD, `" + n_text +
      "` times the learning rate); back-propagate `" + scaled_text + "`";
  // Only an optimizer whose update scales with the gradient turns the sum into a larger
  // step; when the file does not show which optimizer this is, the evidence is weak.
  Finding* fd = nullptr;
  if (kind == OptimizerKind::Unknown)
    fd = ctx.report_weak("LL206", bcall.range, message,
                         "the optimizer's type is not visible here; Adam-family optimizers divide out the "
                         "gradient's scale, so only an SGD-like update grows");
  else if (kind == OptimizerKind::Mixed)
    fd = ctx.report_weak("LL206", bcall.range, message,
                         "the configuration chooses between an SGD-like and an Adam-family optimizer here; "
                         "Adam-family optimizers divide out the gradient's scale, so only the SGD-like choice grows");
  else if (!count_from.empty())
    fd = ctx.report_weak("LL206", bcall.range, message,
                         "`" + n_text + "` is set in another module (" + count_from +
                         "), whose value is not visible here; with `" + n_text + "` = 1 nothing accumulates");
  else if (nominal)
    fd = ctx.report_weak("LL206", bcall.range, message,
                         "`" + n_text + "` counts micro-batches to a nominal batch size; when the loss is a sum "
                         "over samples, each update is already one nominal batch's gradient");
  else
    fd = ctx.report("LL206", bcall.range, message);
  if (!fd) return;
  fd->notes.push_back({f.e(step.call).range, "step every " + n_text + " iterations"});
  if (!simple) return;
  Fix fix;
  fix.title = "Divide the loss by `" + n_text + "` before backward()";
  fix.safe = false;
  fix.edits.push_back({f.e(loss).range.begin, f.e(loss).range.end, scaled_text});
  fd->fixes.push_back(std::move(fix));
}

// The condition of the innermost `if` around statement `target` in `body` (`cond` when none
// inside it), or nothing when `target` is not in `body`.
std::optional<Id> enclosing_condition(const Module& m, const std::vector<Id>& body, Id target, Id cond) {
  for (Id sid : body) {
    if (sid == target) return cond;
    const Stmt& st = m.s(sid);
    if (st.kind == StmtKind::FunctionDef || st.kind == StmtKind::ClassDef) continue;
    const Id inner = st.kind == StmtKind::If ? st.value : cond;
    for (const std::vector<Id>* b : {&st.body, &st.orelse, &st.finalbody})
      if (auto r = enclosing_condition(m, *b, target, inner)) return r;
    for (const Handler& h : st.handlers)
      if (auto r = enclosing_condition(m, h.body, target, cond)) return r;
  }
  return std::nullopt;
}

}  // namespace

void summarize_LL206(const Facts& f, FileSummary& out) {
  // (Only a function with a statement whose value is a product by a batch size, `loss = l * bs`,
  // `return loss * bs, items`, `loss *= bs`, can return a batch sum: found in one pass over the
  // file's statements, not by following every function's returns.)
  std::set<Id> multiplies_by_batch;
  for (const StmtSite& ss : f.stmt_sites) {
    const Stmt& st = f.m.s(ss.stmt);
    if (ss.func == kNone || st.value == kNone ||
        (st.kind != StmtKind::Assign && st.kind != StmtKind::AugAssign && st.kind != StmtKind::Return))
      continue;
    if (st.kind == StmtKind::AugAssign) {
      if (st.text == "*=" && is_batch_size(f, st.value)) multiplies_by_batch.insert(ss.func);
      continue;
    }
    Id v = st.value;
    if (f.e(v).kind == ExprKind::Sequence && !f.e(v).kids.empty()) v = f.e(v).kids[0];
    const Expr& e = f.e(v);
    if (e.kind == ExprKind::BinOp && e.text == "*"sv && e.kids.size() == 2 &&
        (is_batch_size(f, e.kids[0]) || is_batch_size(f, e.kids[1])))
      multiplies_by_batch.insert(ss.func);
  }
  for (Id g = 0; g < f.m.funcs.size(); ++g) {
    const Function& fn = f.m.funcs[g];
    if (fn.parent != kNone) continue;
    if (fn.cls == kNone) {
      // (An imported factory builds an optimizer only when it is named for one:
      // Facts::is_optimizer.)
      std::vector<OptimizerKind> kinds;
      if (Facts::optimizer_factory_name(fn.name))
        for (Id r : f.returned_values(g)) kinds.push_back(optimizer_kind(f, g, r, 1));
      const OptimizerKind k = combine(kinds);
      if (k != OptimizerKind::Unknown &&
          std::none_of(kinds.begin(), kinds.end(), [](OptimizerKind x) { return x == OptimizerKind::Unknown; }))
        out.optimizer_factories.emplace_back(fn.name, k == OptimizerKind::ScaleSensitive   ? 1
                                                      : k == OptimizerKind::ScaleInvariant ? 2
                                                                                           : 3);
      if (multiplies_by_batch.count(g) && returns_batch_sum(f, g)) out.batch_summed_losses.push_back(fn.name);
    } else if ((fn.name == "__call__"sv || fn.name == "forward"sv) && multiplies_by_batch.count(g) &&
               returns_batch_sum(f, g)) {
      out.batch_summed_losses.push_back(f.m.classes[fn.cls].name);
    }
  }
}

// The loop of micro-batches an unguarded step follows: `for i in range(N):` in the step's
// own loop (or function body), ending before the step, whose body back-propagates and
// neither steps nor resets the gradients. Each of its N backward() calls adds to `.grad`
// before the one step. -1 when there is none.
int micro_batch_loop(const Facts& f, const CallSite& step) {
  for (size_t l = 0; l < f.loops.size(); ++l) {
    const Loop& in = f.loops[l];
    if (in.func != step.func || in.parent != step.loop || in.stmt == kNone || in.range.end > f.e(step.call).range.begin)
      continue;
    if (in.iter == kNone || f.e(in.iter).kind != ExprKind::Call || !python_builtin_call(f, in.iter) ||
        f.e(f.e(in.iter).kids[0]).text != "range"sv ||
        f.e(in.iter).kids.size() != 2 || !f.e(in.iter).kw.empty())
      continue;
    // (A forward in the loop, and no retain_graph: each pass a new micro-batch through the
    // model, not several losses of one forward summed into one objective.)
    bool backward = false, steps = false, forward = false, retained = false;
    for (int ci : in.calls) {
      const CallSite& x = f.calls[ci];
      if (x.func != step.func || x.in_lambda) continue;
      backward = backward || f.is_backward(x);
      retained = retained || (f.is_backward(x) && f.arg(x.call, static_cast<size_t>(-1), "retain_graph") != kNone);
      forward = forward || f.is_model_call(x);
      steps = steps || f.callee_attr(x.call) == "step"sv;
    }
    if (backward && forward && !steps && !retained) return static_cast<int>(l);
  }
  return -1;
}

void check_LL206(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  std::set<int> reported;
  for (const CallSite& step : f.calls) {
    if (step.in_lambda || f.callee_attr(step.call) != "step"sv) continue;  // (most calls: no step)
    // The iteration the step runs in: its loop, or the body of a Lightning-style
    // `training_step` method, which the runner calls once per batch (manual optimization
    // accumulates with `if (batch_idx + 1) % N == 0: opt.step()`).
    const bool per_batch_method = step.loop < 0 && step.func != kNone && f.m.funcs[step.func].cls != kNone &&
                                  f.m.funcs[step.func].parent == kNone &&
                                  f.m.funcs[step.func].name == "training_step"sv;
    if (step.loop < 0 && !per_batch_method) continue;
    // The condition of the innermost `if` around a call of the iteration.
    auto guard_of = [&](const CallSite& x) {
      return per_batch_method ? enclosing_condition(f.m, f.m.funcs[step.func].body, x.stmt, kNone).value_or(kNone)
                              : x.guard;
    };
    const Id guard = guard_of(step);
    // Or an inner loop of N micro-batches, each back-propagated, before an unguarded step.
    const int inner = guard == kNone && !per_batch_method ? micro_batch_loop(f, step) : -1;
    if (guard == kNone && inner < 0) continue;
    Id opt = f.optimizer_of_step(step);
    if (opt == kNone) continue;
    Id n = inner >= 0 ? f.arg(f.loops[inner].iter, 0) : accumulation_count(f, guard);
    if (n == kNone) continue;
    // Adam-family updates are invariant to the gradient's scale (measured: the same update
    // with and without the division).
    const OptimizerKind kind = optimizer_kind(f, step.func, opt, 0);
    if (kind == OptimizerKind::ScaleInvariant) continue;
    if (const Expr* lit = f.literal_of(n, step.func); lit && lit->lit == LitKind::Int && lit->text == "1"sv) continue;
    if (learning_rate_scaled(f, n) || gradients_divided(f, n)) continue;
    // The frameworks that scale for the user.
    bool framework = false;
    for (const CallSite& x : f.calls) {
      const std::string& a = f.callee_attr(x.call);
      if (a == "accumulate"sv || a == "no_sync_accumulate"sv) framework = true;
    }
    if (framework) continue;
    const int loop = inner >= 0 ? inner : step.loop;
    // Gradients reset every iteration: nothing accumulates (a different problem).
    bool reset_each_iteration = false;
    std::vector<const CallSite*> backwards;  // every backward() of the loop: each branch answers for itself
    for (int ci : per_batch_method ? f.calls_in(step.func) : f.loops[loop].calls) {
      if (inner >= 0) {
        const CallSite& x = f.calls[ci];
        Id o = kNone;
        if (x.func == step.func && !x.in_lambda && f.is_grad_reset(x, &o)) reset_each_iteration = true;
        if (x.func == step.func && !x.in_lambda && f.is_backward(x)) backwards.push_back(&x);
        continue;
      }
      const CallSite& x = f.calls[ci];
      if (x.func != step.func || x.in_lambda) continue;
      Id o = kNone;
      if (x.loop == loop && guard_of(x) == kNone && f.is_grad_reset(x, &o)) reset_each_iteration = true;
      // A backward on the other side of a branch from the guarded step (the configuration
      // without accumulation, which steps every iteration) never feeds it.
      if (f.is_backward(x) && guard_of(x) != guard && !f.exclusive_paths(x, step)) backwards.push_back(&x);
    }
    if (reset_each_iteration) continue;
    const bool nominal = nominal_batch_count(f, step.func, n);
    const std::string count_from = count_from_another_module(f, step.func, n);
    for (const CallSite* backward : backwards)
      report_unscaled(ctx, step, n, *backward, kind, nominal, count_from, reported);
  }
}

}  // namespace ll
