// LL102 accumulated-autograd-history: a tensor that carries autograd history is
// accumulated, inside a grad-enabled loop, into something that outlives the iteration.
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_set>

#include "checks/common.hpp"
#include "checks/flow.hpp"
#include "checks/model_size.hpp"

namespace ll {
namespace {

// A function named for what it builds (`_create_loss(name, cfg)`, `build_criterion(cfg)`,
// `make_loss_fn(...)`): it returns a loss function, not a loss value.
bool builds_a_criterion(std::string_view name) {
  const auto toks = Facts::name_tokens(name.substr(name.rfind('.') + 1));  // (npos + 1 is 0)
  return !toks.empty() && in(toks.front(), {"create", "build", "make", "construct", "instantiate", "init", "setup",
                                            "define", "new"});
}

class History;
// Does a `return` of `func` carry history? With `element` >= 0: element `element` of the
// returned tuple (`return loss.item(), logits` unpacked by the caller).
bool returns_history(CheckContext& ctx, Id func, int element = -1, Id call = kNone);

class History {
 public:
  History(CheckContext& ctx, Id func)
      : ctx_(ctx), f_(ctx.facts), func_(func), accumulating_methods_(ctx.facts.accumulating_methods()) {}

  void run(const std::vector<Id>& body) { walk(body, 0); }
  // Analyse without reporting; true when a `return` value carries history.
  // `fixed`: parameters the call binds to a literal (`val=True`), whose tests (`if not val:`)
  // then take one branch.
  bool returns(const std::vector<Id>& body, int element, std::map<std::string, bool> fixed = {}) {
    quiet_ = true;
    element_ = element;
    fixed_ = std::move(fixed);
    walk(body, 0);
    return returned_history_;
  }

 private:
  CheckContext& ctx_;
  const Facts& f_;
  Id func_;
  std::unordered_set<std::string> tainted_;   // source-order walk: the fallback outside the flow graphs
  std::unordered_set<std::string> detached_;  // detach_()'d in place since their last binding (source order)
  mutable std::map<std::pair<Id, std::string>, char> reach_memo_;  // 0 computing, 1 no, 2 yes
  // Accumulators this function's visible findings already name (`total_loss += loss`): their
  // statements. While one question is asked, the accumulations taken as numbers.
  std::map<std::string, std::vector<Id>> reported_sums_;
  // Accumulators whose every reported term was back-propagated in its iteration (`epoch_loss +=
  // loss` after `loss.backward()`) in loops of a few constant trips, whatever the finding's
  // severity: each holds at most that many scalars and their autograd nodes. Their statements,
  // and the most trips of any of them.
  std::map<std::string, std::vector<Id>> freed_sums_;
  long freed_sum_trips_ = 0;
  std::set<Id> numbered_;
  // Names `.backward()` runs on in the function, with those statements (backpropagated_binding).
  mutable std::optional<std::map<std::string, std::vector<Id>>> backward_receivers_;
  mutable std::map<int, long> loop_params_;                       // loop_models_params, per loop
  mutable std::map<int, std::map<std::string, std::vector<Id>>> loop_backwards_;  // plain_backwards of a loop
  const std::unordered_set<std::string>& accumulating_methods_;  // same-file methods that keep their argument
  bool quiet_ = false;
  int element_ = -1;
  std::map<std::string, bool> fixed_;
  // The statement lists the walk is in, innermost last: the list, the position of the
  // statement being walked in it, and whether the list is a loop's body.
  struct Block {
    const std::vector<Id>* body;
    size_t pos;
    bool loop_body;
  };
  std::vector<Block> blocks_;

  // The truth of an `if` test over parameters bound to literals: 1, 0, or -1 when unknown.
  int truth(Id cond) const {
    if (cond == kNone || fixed_.empty()) return -1;
    const Expr& c = f_.e(cond);
    if (c.kind == ExprKind::Name) {
      auto it = fixed_.find(c.text);
      return it == fixed_.end() ? -1 : it->second ? 1 : 0;
    }
    if (c.kind == ExprKind::UnaryOp && c.text == "not"sv && !c.kids.empty()) {
      const int t = truth(c.kids[0]);
      return t < 0 ? -1 : 1 - t;
    }
    return -1;
  }
  bool returned_history_ = false;

  bool grad_off_at(Id stmt) const {
    auto it = f_.stmt_index.find(stmt);
    return it != f_.stmt_index.end() && f_.grad_off(f_.stmt_sites[it->second]);
  }
  int loop_at(Id stmt) const {
    auto it = f_.stmt_index.find(stmt);
    return it == f_.stmt_index.end() ? -1 : f_.stmt_sites[it->second].loop;
  }

  // A key that names a count or an accuracy (`correct`, `total`, `num_samples`, `acc`).
  static bool counts_by_name(std::string_view key) {
    auto toks = Facts::name_tokens(key);
    if (toks.empty()) return false;
    for (const auto& t : toks)
      if (Facts::named_like_a_loss(t)) return false;
    return in(toks.back(), {"correct", "total", "count", "counts", "num", "n", "size", "samples", "accuracy", "acc",
                            "steps", "step", "tokens", "examples", "hits", "seen", "batches"}) ||
           in(toks.front(), {"num", "n", "count", "correct", "total"});
  }

  // Does the expression's value carry autograd history?
  bool carries(Id x, bool off, int depth = 0) const {
    if (x == kNone || depth > 48) return false;
    const Expr& e = f_.e(x);
    switch (e.kind) {
      case ExprKind::Name:
        return name_carries(e.text, x, depth);
      case ExprKind::Attribute: {
        // `torch.max(x, 1).indices`: integer positions, which carry no history.
        if (e.text == "indices"sv && f_.e(e.kids[0]).kind == ExprKind::Call && returns_values_and_indices(e.kids[0]))
          return false;
        if (in(e.text, {"data", "grad", "shape", "dtype", "device", "requires_grad", "is_cuda", "ndim", "T"}))
          return e.text == "T"sv && carries(e.kids[0], off, depth + 1);
        const std::string& d = f_.dotted(x);
        if (!d.empty() && name_carries(d, x, depth)) return true;
        return carries(e.kids[0], off, depth + 1);
      }
      case ExprKind::Subscript:
        // `torch.max(out, 1)[1]`, `out.topk(5)[1]`: the indices element of a (values, indices)
        // result.
        if (e.kids.size() == 2 && f_.e(e.kids[1]).kind == ExprKind::Literal && f_.e(e.kids[1]).text == "1"sv &&
            f_.e(e.kids[0]).kind == ExprKind::Call && returns_values_and_indices(e.kids[0]))
          return false;
        // `metrics["correct"]`, `stats["n_samples"]`: counts and accuracies are computed
        // through comparisons and sizes, which record no autograd history, whatever else
        // the container holds (`metrics["loss"]` does).
        if (e.kids.size() > 1 && f_.e(e.kids[1]).kind == ExprKind::Literal &&
            f_.e(e.kids[1]).lit == LitKind::String && counts_by_name(f_.e(e.kids[1]).text))
          return false;
        // `batch_outs["loss"]` of `batch_outs = self.predict_batch(x, y)`, whose every return is a
        // dict display holding a Python number under that key (`{"loss": loss.item(), "y_preds":
        // output}`): the entry read is the number, whatever else the dict holds.
        if (number_under_key(x)) return false;
        return carries(e.kids[0], off, depth + 1);
      case ExprKind::BinOp:
        return carries(e.kids[0], off, depth + 1) || carries(e.kids[1], off, depth + 1);
      case ExprKind::UnaryOp:
        return e.text != "not"sv && carries(e.kids[0], off, depth + 1);
      case ExprKind::BoolOp: case ExprKind::Sequence:
        for (Id k : e.kids)
          if (carries(k, off, depth + 1)) return true;
        return false;
      case ExprKind::Conditional: {
        if (e.kids.size() != 3) return false;
        // `loss.item() if isinstance(loss, torch.Tensor) else loss`: the branch that keeps the
        // value runs only when it is not a tensor (and the other way round).
        const int tensor_test = tensor_type_test(e.kids[1]);
        // `flat.item() if task != 0 else flat`, with `flat = 0.0` reaching it: the author takes
        // `.item()` on one branch and the bare value on the other, a test of whether it is a
        // tensor yet that the code does not spell out. The bare branch is the number.
        const bool body_plain = (tensor_test == 0 && same_value(e.kids[0], e.kids[1])) ||
                                number_where_the_other_branch_takes_item(e.kids[0], e.kids[2]);
        const bool else_plain = (tensor_test == 1 && same_value(e.kids[2], e.kids[1])) ||
                                number_where_the_other_branch_takes_item(e.kids[2], e.kids[0]);
        return (!body_plain && branch_carries(e.kids[0], e.kids[1], true, off, depth + 1)) ||
               (!else_plain && branch_carries(e.kids[2], e.kids[1], false, off, depth + 1));
      }
      case ExprKind::Comprehension:
        return !e.kids.empty() && carries(e.kids[0], off, depth + 1);
      case ExprKind::Call:
        return call_carries(x, off, depth);
      default:
        return false;
    }
  }

  // A Python number, plainly: `loss.item()`, `x.tolist()`, `x.size(0)`, `float(...)`, `len(...)`, a
  // numeric literal, arithmetic of those, or a name of `func` bound only to such values.
  bool plainly_number(Id func, Id v, int depth = 0) const {
    if (v == kNone || depth > 4) return false;
    const Expr& e = f_.e(v);
    switch (e.kind) {
      case ExprKind::Literal:
        return e.lit == LitKind::Int || e.lit == LitKind::Float;
      case ExprKind::BinOp:
        return plainly_number(func, e.kids[0], depth + 1) && plainly_number(func, e.kids[1], depth + 1);
      case ExprKind::UnaryOp:
        return !e.kids.empty() && plainly_number(func, e.kids[0], depth + 1);
      case ExprKind::Call: {
        const Expr& callee = f_.e(e.kids[0]);
        if (callee.kind == ExprKind::Name && f_.qual(e.kids[0]).empty())
          return in(callee.text, {"float", "int", "len", "round"}) && f_.bindings(func, callee.text).empty();
        return (in(f_.callee_attr(v), {"item", "tolist"}) && e.kids.size() == 1) ||
               in(f_.callee_attr(v), {"size", "numel", "dim"});
      }
      case ExprKind::Name: {
        const std::vector<Id> values = f_.bindings(func, e.text);
        if (values.empty()) return false;
        for (Id b : values)
          if (!plainly_number(func, b, depth + 1)) return false;
        return true;
      }
      default:
        return false;
    }
  }

  // `d["key"]` where every binding of `d` reaching it is a call of a same-file function whose
  // every return is a dict display (written there, or bound to a name there) holding a plain
  // number under that key.
  bool number_under_key(Id sub) const {
    const Expr& e = f_.e(sub);
    if (e.kids.size() != 2 || f_.e(e.kids[1]).kind != ExprKind::Literal || f_.e(e.kids[1]).lit != LitKind::String)
      return false;
    const std::string& key = f_.e(e.kids[1]).text;
    const std::string& d = f_.dotted(e.kids[0]);
    if (d.empty()) return false;
    const std::vector<Id> values = f_.bindings_at(func_, d, e.kids[0]);
    if (values.empty()) return false;
    for (Id v : values) {
      if (f_.e(v).kind != ExprKind::Call) return false;
      const Id target = f_.same_file_target(v, func_);
      if (target == kNone || f_.returned_values(target).empty()) return false;
      for (Id r : f_.returned_values(target)) {
        std::vector<Id> displays;
        if (f_.e(r).kind == ExprKind::Name) displays = f_.bindings(target, f_.e(r).text);
        else displays.push_back(r);
        if (displays.empty()) return false;
        for (Id disp : displays) {
          const Expr& dict = f_.e(disp);
          if (dict.kind != ExprKind::Sequence || dict.text != "dict"sv || dict.kids.size() % 2 != 0) return false;
          bool found = false;
          for (size_t i = 0; i + 1 < dict.kids.size(); i += 2) {
            const Expr& k = f_.e(dict.kids[i]);
            if (k.kind == ExprKind::Starred) return false;
            if (k.kind == ExprKind::Literal && k.lit == LitKind::String && k.text == key) {
              if (!plainly_number(target, dict.kids[i + 1])) return false;
              found = true;
            }
          }
          if (!found) return false;
        }
      }
    }
    return true;
  }

  // A call returning a (values, indices) pair: `max` / `min` / `median` / `mode` along a
  // dimension, `topk`, `sort`, `kthvalue`, as tensor methods or `torch.` functions.
  bool returns_values_and_indices(Id call) const {
    const std::string& attr = f_.callee_attr(call);
    const std::string& q = f_.callee_qual(call);
    const std::string_view name = !q.empty() && starts_with(q, "torch.") ? std::string_view(q).substr(6)
                                  : q.empty()                           ? std::string_view(attr)
                                                                        : std::string_view();
    if (in(name, {"topk", "sort", "kthvalue"})) return true;
    if (!in(name, {"max", "min", "median", "mode"})) return false;
    // Along a dimension: `x.max(1)`, `torch.max(x, 1)`, `dim=` given.
    const Expr& x = f_.e(call);
    const size_t positional = x.kids.size() - 1 - x.kw.size();
    const bool method = q.empty();
    if (f_.arg(call, static_cast<size_t>(-1), "dim") != kNone) return true;
    auto integer = [&](Id a) {
      const Expr& v = f_.e(a);
      if (v.kind == ExprKind::UnaryOp && v.text == "-"sv && v.kids.size() == 1) return integer_literal(v.kids[0]);
      return integer_literal(a);
    };
    return method ? positional >= 1 && integer(x.kids[1]) : positional >= 2 && integer(x.kids[2]);
  }
  bool integer_literal(Id a) const {
    return f_.e(a).kind == ExprKind::Literal && f_.e(a).lit == LitKind::Int;
  }

  // `isinstance(x, torch.Tensor)`: 1; `not isinstance(x, torch.Tensor)`: 0; else -1.
  int tensor_type_test(Id t) const {
    const Expr& c = f_.e(t);
    if (c.kind == ExprKind::UnaryOp && c.text == "not"sv && !c.kids.empty()) {
      const int v = tensor_type_test(c.kids[0]);
      return v < 0 ? -1 : 1 - v;
    }
    // `torch.is_tensor(loss)`, the same test.
    if (c.kind == ExprKind::Call && c.kids.size() == 2 && f_.callee_qual(t) == "torch.is_tensor"sv) return 1;
    if (c.kind != ExprKind::Call || c.kids.size() != 3 || f_.e(c.kids[0]).kind != ExprKind::Name ||
        f_.e(c.kids[0]).text != "isinstance"sv)
      return -1;
    return f_.qual(c.kids[2]) == "torch.Tensor"sv ? 1 : -1;
  }
  // The branch value is the tested value itself (`... else loss` after `isinstance(loss, ...)`
  // or `torch.is_tensor(loss)`).
  bool same_value(Id branch, Id test) const {
    const Expr& c = f_.e(test);
    if (c.kind == ExprKind::UnaryOp) return !c.kids.empty() && same_value(branch, c.kids[0]);
    const std::string& d = f_.dotted(branch);
    return !d.empty() && c.kind == ExprKind::Call && (c.kids.size() == 3 || c.kids.size() == 2) &&
           f_.dotted(c.kids[1]) == d;
  }

  // `bare` is a name that `other` turns into a number (`bare.item()`, `float(bare)`), and a
  // Python number bound to it reaches the conditional: the author dispatches by what it holds.
  bool number_where_the_other_branch_takes_item(Id bare, Id other) const {
    const Expr& b = f_.e(bare);
    const Expr& o = f_.e(other);
    if (b.kind != ExprKind::Name || o.kind != ExprKind::Call) return false;
    Id receiver = kNone;
    if (o.kids.size() == 1 && f_.callee_attr(other) == "item"sv && f_.e(o.kids[0]).kind == ExprKind::Attribute)
      receiver = f_.e(o.kids[0]).kids[0];
    else if (o.kids.size() == 2 && o.kw.empty() && f_.e(o.kids[0]).kind == ExprKind::Name &&
             f_.e(o.kids[0]).text == "float"sv && f_.qual(o.kids[0]).empty())
      receiver = o.kids[1];
    if (receiver == kNone || f_.e(receiver).kind != ExprKind::Name || f_.e(receiver).text != b.text) return false;
    const Id st = f_.stmt_of(bare);
    if (st == kNone) return false;
    bool outside = false;
    for (const Def& df : f_.flow().reaching(st, b.text, &outside))
      if (df.kind == DefKind::Assign && df.value != kNone && plainly_number(func_, df.value)) return true;
    return false;
  }

  // A branch of `a if flag else b` that reads a name chosen by the same flag before
  // (`aux = out.pow(2).mean() if use_aux else 0.0`, then `total += aux.item() if use_aux else
  // aux`): under the flag's value, the name holds that binding's matching branch. The flag is a
  // name or attribute (or its `not`) that the function never rebinds.
  bool branch_carries(Id branch, Id test, bool truth, bool off, int depth) const {
    const Expr& b = f_.e(branch);
    if (b.kind != ExprKind::Name || depth > 48) return carries(branch, off, depth);
    // The flag under its `not`s, and whether it holds when the test does.
    auto unnegated = [&](Id t, bool& positive) {
      positive = true;
      while (f_.e(t).kind == ExprKind::UnaryOp && f_.e(t).text == "not"sv && !f_.e(t).kids.empty()) {
        t = f_.e(t).kids[0];
        positive = !positive;
      }
      return t;
    };
    bool positive = true;
    const Id flag = unnegated(test, positive);
    const std::string& d = f_.dotted(flag);
    const Id st = f_.stmt_of(branch);
    if (d.empty() || st == kNone || !f_.own_bindings(func_, d).empty()) return carries(branch, off, depth);
    bool outside = false;
    const std::vector<Def> defs = f_.flow().reaching(st, b.text, &outside);
    if (outside || defs.empty()) return carries(branch, off, depth);
    std::vector<Id> chosen;
    for (const Def& df : defs) {
      if (df.kind != DefKind::Assign || df.value == kNone) return carries(branch, off, depth);
      const Expr& v = f_.e(df.value);
      if (v.kind != ExprKind::Conditional || v.kids.size() != 3) return carries(branch, off, depth);
      bool vpositive = true;
      if (f_.dotted(unnegated(v.kids[1], vpositive)) != d) return carries(branch, off, depth);
      // The flag holds `truth == positive`; the binding took its body when it holds `vpositive`.
      chosen.push_back((truth == positive) == vpositive ? v.kids[0] : v.kids[2]);
    }
    for (Id c : chosen)
      if (carries(c, off, depth + 1)) return true;
    return false;
  }

  // Does the name, read at expression `at`, carry history? Flow-sensitive: it does when a
  // binding of it that reaches this point does (branches join, loops carry values round).
  bool name_carries(const std::string& d, Id at, int depth) const {
    if (detached_.count(d)) return false;
    Id st = f_.stmt_of(at);
    if (st == kNone || depth > 48) return tainted_.count(d) != 0;
    return reaching_carries(d, st, depth);
  }

  bool reaching_carries(const std::string& d, Id st, int depth) const {
    auto key = std::make_pair(st, d);
    auto it = reach_memo_.find(key);
    if (it != reach_memo_.end()) return it->second == 2;  // in progress (a loop): no
    reach_memo_[key] = 0;
    bool outside = false, r = false;
    for (const Def& df : f_.flow().reaching(st, d, &outside)) {
      r = def_carries(d, df, depth);
      if (r) break;
    }
    reach_memo_[key] = r ? 2 : 1;
    return r;
  }

  // Is the value statement `stmt` binds to `d` one that `d.backward()` runs on (the binding
  // reaches the backward)? Whatever computed it (`l = model.compute_loss(x, y)`, a method this
  // file cannot read), a tensor back-propagated carries autograd history.
  bool backpropagated_binding(const std::string& d, Id stmt) const {
    if (!backward_receivers_) {
      backward_receivers_.emplace();
      for (int ci : f_.calls_in(func_)) {
        const CallSite& c = f_.calls[ci];
        if (c.stmt == kNone || f_.callee_attr(c.call) != "backward"sv) continue;
        // A tensor's own backward: on a plain name, handed no loss by name
        // (`accelerator.backward(loss)`, `engine.backward(loss)` back-propagate their argument).
        const Id a = f_.arg(c.call, 0);
        if (a != kNone && f_.e(a).kind == ExprKind::Name) continue;
        // And one that runs whenever its block does (not under `if torch.is_tensor(loss):`, which
        // leaves the other path's value a number).
        const std::vector<Id>& block = c.loop >= 0 && f_.loops[c.loop].stmt != kNone
                                           ? f_.m.s(f_.loops[c.loop].stmt).body
                                           : (func_ != kNone ? f_.m.funcs[func_].body : f_.m.body);
        if (!unconditional_in(block, c.stmt)) continue;
        const Id r = f_.callee_receiver(c.call);
        if (r != kNone && f_.e(r).kind == ExprKind::Name) (*backward_receivers_)[f_.e(r).text].push_back(c.stmt);
      }
    }
    auto it = backward_receivers_->find(d);
    if (it == backward_receivers_->end()) return false;
    for (Id bw : it->second) {
      bool outside = false;
      for (const Def& df : f_.flow().reaching(bw, d, &outside))
        if (df.stmt == stmt) return true;
    }
    return false;
  }

  // `rest[0]`, `rest[0] if rest else -1`: an element read out of a container.
  bool element_read(Id v) const {
    const Expr& e = f_.e(v);
    if (e.kind == ExprKind::Subscript) return true;
    return e.kind == ExprKind::Conditional && e.kids.size() == 3 && element_read(e.kids[0]) &&
           (f_.e(e.kids[2]).kind == ExprKind::Literal || f_.e(e.kids[2]).kind == ExprKind::UnaryOp ||
            element_read(e.kids[2]));
  }

  bool def_carries(const std::string& d, const Def& df, int depth) const {
    if (df.value == kNone || (!numbered_.empty() && numbered_.count(df.stmt))) return false;
    bool off = grad_off_at(df.stmt);
    // An element of a tuple (`outputs, *rest = model(**batch)`; `acc = rest[0]`) named like an
    // accuracy or a count: a metric computed by comparisons, which record no history.
    if ((df.kind == DefKind::Unpacked || (df.kind == DefKind::Assign && element_read(df.value))) &&
        counts_by_name(f_.last_component(d)))
      return false;
    switch (df.kind) {
      case DefKind::Assign: case DefKind::Declared: case DefKind::WithAlias:
        return carries(df.value, off, depth + 1) || backpropagated_binding(d, df.stmt);
      case DefKind::Unpacked: {
        // `loss, sample_size, logs = criterion(model, sample)`: only the loss carries history
        // when a loss function's tuple is unpacked (a model's outputs all do).
        if (!carries(df.value, off, depth + 1)) return backpropagated_binding(d, df.stmt);
        Id call = unpacked_call(df.stmt, df.value);
        if (call == kNone) return true;
        auto ci = f_.call_index.find(call);
        if (ci != f_.call_index.end() && f_.is_model_call(f_.calls[ci->second]))
          return model_element_history(f_.calls[ci->second], unpacked_element(df.stmt, d));
        if (int k = unpacked_element(df.stmt, d); k >= 0 && same_file_callee(call) != kNone)
          return returns_history(ctx_, same_file_callee(call), k, call);
        return Facts::named_like_a_loss(f_.last_component(d));
      }
      case DefKind::Augmented:
        return carries(df.value, off, depth + 1) || reaching_carries(d, df.stmt, depth + 1);
      default:
        return false;
    }
  }

  // Element `k` of what a forward returns, when this file shows the module's class and every
  // return hands it back without history (`return h, torch.tensor(total_flops)`: a count). A
  // forward the file does not show, or the whole value (k < 0): a model's outputs carry it.
  bool model_element_history(const CallSite& c, int k) const {
    return k < 0 || !f_.forward_returns_detached(c.func, c.call, static_cast<size_t>(k));
  }

  // Is every argument of the call a literal or a local name bound in this function on
  // every path to it (nothing from a parameter, attribute, global or another call)?
  bool inputs_known(Id call) const {
    const Expr& e = f_.e(call);
    Id st = f_.stmt_of(call);
    if (st == kNone || e.kids.size() < 2) return false;
    for (size_t i = 1; i < e.kids.size(); ++i) {
      // A reshape or selection of a local value is that value (`logits.view(-1, n)`,
      // `labels[:, 1:]`): its root name decides.
      Id x = e.kids[i];
      // An imported name handed over as it is (`loss_fn=l1_loss`): another module's function
      // or constant, never a graph of this run's forward. (Reached through a call it is a
      // module: `F.softmax(y)` computes on `y`, which stays unknown.)
      if (f_.e(x).kind == ExprKind::Name && !f_.qual(x).empty() && !local_name(st, x)) continue;
      for (int hops = 0; hops < 16; ++hops) {
        const Expr& k = f_.e(x);
        if (k.kind == ExprKind::Subscript || (k.kind == ExprKind::Attribute && !k.kids.empty())) x = k.kids[0];
        else if (k.kind == ExprKind::Call && f_.e(k.kids[0]).kind == ExprKind::Attribute) x = f_.e(k.kids[0]).kids[0];
        else break;
      }
      if (!input_known(st, x)) return false;
    }
    return true;
  }

  // Is the input or the target of the call (its first two positional arguments, where a
  // criterion takes them; not a weight) a NumPy array, or a selection of one: made by a NumPy
  // call (`np.zeros(...)`, also with `np` unimported, as in code pasted out of a notebook, when
  // nothing binds the name `np`) or read out of a tensor (`.numpy()`), directly or through a
  // name whose every binding reaching the call is one?
  bool numpy_argument(Id call) const {
    const Expr& e = f_.e(call);
    const bool np_free = f_.bindings(func_, "np").empty() && f_.bindings(kNone, "np").empty();
    auto made_by_numpy = [&](Id v) {
      if (v == kNone || f_.e(v).kind != ExprKind::Call) return false;
      const std::string& q = f_.callee_qual(v);
      return starts_with(q, "numpy.") ||
             (q.empty() && np_free && starts_with(f_.dotted(f_.e(v).kids[0]), "np.")) ||
             f_.callee_attr(v) == "numpy"sv;
    };
    const size_t positional = e.kids.size() - 1 - std::min(e.kw.size(), e.kids.size() - 1);
    for (size_t i = 1; i <= std::min<size_t>(positional, 2); ++i) {
      Id x = e.kids[i];
      while (f_.e(x).kind == ExprKind::Subscript && !f_.e(x).kids.empty()) x = f_.e(x).kids[0];
      if (made_by_numpy(x)) return true;
      const std::string& d = f_.dotted(x);
      if (d.empty() || f_.e(x).kind != ExprKind::Name) continue;
      const std::vector<Id> vals = f_.bindings_at(func_, d, x);
      if (!vals.empty() && std::all_of(vals.begin(), vals.end(), made_by_numpy)) return true;
    }
    return false;
  }

  // Is the name bound in this function on some path to the statement?
  bool local_name(Id st, Id x) const {
    bool outside = false;
    return !f_.flow().reaching(st, f_.e(x).text, &outside).empty();
  }

  // A literal, a choice between literals (`None if exact else 1.0`), or a name bound in this
  // function on every path to the statement, or on every path that binds it at all: a name
  // nothing outside the function could bind (`y_val` of the last pass of an evaluation loop,
  // read after it) has no other value to hold.
  bool input_known(Id st, Id x) const {
    const Expr& a = f_.e(x);
    if (a.kind == ExprKind::Literal) return true;
    if (a.kind == ExprKind::Conditional)
      return a.kids.size() == 3 && input_known(st, a.kids[0]) && input_known(st, a.kids[2]);
    if (a.kind != ExprKind::Name) return false;
    bool outside = false;
    if (f_.flow().reaching(st, a.text, &outside).empty()) return false;
    return !outside || bound_only_here(a.text);
  }

  // Could only this function (or, at the top level, the module's own statements) bind `name`?
  bool bound_only_here(const std::string& name) const {
    if (!f_.m.star_imports.empty()) return false;
    if (func_ == kNone) return true;
    return f_.m.funcs[func_].parent == kNone && !f_.is_param(func_, name) && f_.bindings(kNone, name).empty();
  }

  // The same-file function a call runs (not this one), else kNone.
  Id same_file_callee(Id call) const {
    auto ci = f_.call_index.find(call);
    if (ci == f_.call_index.end()) return kNone;
    Id t = f_.calls[ci->second].target_func;
    return t == func_ ? kNone : t;
  }

  // The call whose tuple statement `stmt` unpacks: `value` itself, or the call every
  // reaching binding of the name `value` holds (`result = step(...)`, then
  // `a, b = result`); else kNone.
  Id unpacked_call(Id stmt, Id value) const {
    if (f_.e(value).kind == ExprKind::Call) return value;
    if (f_.e(value).kind != ExprKind::Name) return kNone;
    bool outside = false;
    Id call = kNone;
    for (const Def& df : f_.flow().reaching(stmt, f_.e(value).text, &outside)) {
      if (df.kind != DefKind::Assign || df.value == kNone || f_.e(df.value).kind != ExprKind::Call) return kNone;
      if (call != kNone && same_file_callee(call) != same_file_callee(df.value)) return kNone;
      call = df.value;
    }
    return outside ? kNone : call;
  }

  // Position of `d` in the tuple target of statement `stmt` (`a, d, c = ...`), else -1.
  int unpacked_element(Id stmt, const std::string& d) const {
    const Stmt& s = f_.m.s(stmt);
    if (s.targets.size() != 1 || f_.e(s.targets[0]).kind != ExprKind::Sequence) return -1;
    const auto& kids = f_.e(s.targets[0]).kids;
    for (size_t k = 0; k < kids.size(); ++k)
      if (f_.dotted(kids[k]) == d) return static_cast<int>(k);
    return -1;
  }

  bool any_arg_carries(Id call, bool off, int depth) const {
    const Expr& e = f_.e(call);
    for (size_t i = 1; i < e.kids.size(); ++i)
      if (carries(e.kids[i], off, depth + 1)) return true;
    return false;
  }

  // Does function `fn` drop history anywhere (`.data`, `.detach()`, `.item()`, a block under
  // no_grad)?
  bool detaches_something(Id fn) const {
    for (int ci : f_.calls_in(fn)) {
      const CallSite& c = f_.calls[ci];
      if (c.local_off || in(f_.callee_attr(c.call), {"detach", "detach_", "item", "numpy", "tolist"})) return true;
    }
    for (Id sid : f_.stmts_in(fn)) {
      bool data = false;
      for_each_expr(f_.m, f_.m.s(sid).value, [&](Id x) {
        data = data || (f_.e(x).kind == ExprKind::Attribute && f_.e(x).text == "data"sv);
        return !data;
      });
      if (data) return true;
    }
    return false;
  }

  // Does a class of this file define a method of that name (whose returns are then the
  // file's to follow: `Output.get_logits()` returning a forward's logits)?
  // (Also a definition another module of the run shows returning something other than a
  // number: `get_current_loss()` returning `self.loss`, ProjectView::other_losses.)
  bool defines_method(const std::string& name) const {
    for (const Function& fn : f_.m.funcs)
      if (fn.cls != kNone && fn.name == name) return true;
    return f_.project && f_.project->other_losses.count(name);
  }

  bool call_carries(Id call, bool off, int depth) const {
    if (off) return false;
    const Expr& e = f_.e(call);
    const std::string& attr = f_.callee_attr(call);
    const std::string& q = f_.callee_qual(call);
    const Expr& callee = f_.e(e.kids[0]);
    // History dropped.
    if (in(attr, {"item", "detach", "detach_", "tolist", "numpy", "argmax", "argmin", "eq", "ne", "lt", "gt",
                  "le", "ge", "size", "dim", "numel", "nonzero", "long", "int", "bool", "byte", "isnan",
                  "isinf", "isfinite", "any", "all", "nelement", "element_size", "stride", "data_ptr",
                  "zero_", "requires_grad_", "backward", "argsort",
                  // Sampled indices and draws: not differentiable, no grad_fn.
                  "multinomial", "bernoulli"}) ||
        registers_a_hook(attr))
      return false;
    // torch.autograd.grad results carry history only with create_graph=True.
    // (Written out as `create_graph=False`, or the fifth positional argument, it is the default.)
    if (q == "torch.autograd.grad"sv) {
      const Id cg = f_.arg(call, 4, "create_graph");
      if (cg == kNone || (f_.e(cg).kind == ExprKind::Literal && f_.e(cg).lit == LitKind::False)) return false;
    }
    // A same-file function: its returned values decide.
    {
      auto ci = f_.call_index.find(call);
      if (ci != f_.call_index.end() && f_.calls[ci->second].target_func != kNone &&
          f_.calls[ci->second].target_func != func_)
        return returns_history(ctx_, f_.calls[ci->second].target_func, -1, call);
    }
    if (callee.kind == ExprKind::Name && q.empty() &&
        in(callee.text, {"float", "int", "bool", "len", "str", "repr", "print", "isinstance", "round", "format",
                         "type", "id", "hash", "range", "enumerate"}))
      return false;
    // A method of another module's class whose result carries history (`out =
    // model.train_step(x, y, opt)`, returning `loss * x.size(0)`), on a receiver every binding
    // of which builds that class (FileSummary::history_methods).
    if (callee.kind == ExprKind::Attribute && f_.project && !f_.project->history_method_imports.empty()) {
      const Id recv = callee.kids[0];
      const std::string& d = f_.dotted(recv);
      const std::string k = d.empty() ? std::string() : f_.imported_class_built_by(f_.bindings_at(func_, d, recv));
      if (!k.empty() && f_.project->history_method_imports.count(k + "." + callee.text)) return true;
    }
    // Host-side numeric libraries never hand back a tensor with history (`sklearn.metrics.
    // log_loss(y, p)` is a float whatever its name says).
    // (Asked of every qualified call: the first letter rules out most, torch's among them.)
    if (!q.empty() && (q[0] == 'm' || q[0] == 'n' || q[0] == 's' || q[0] == 'p' || q[0] == 'l' || q[0] == 'x')) {
      const std::string_view lib = std::string_view(q).substr(0, q.find('.'));
      if (lib.size() < q.size() && in(lib, {"math", "numpy", "np", "scipy", "sklearn", "pandas", "lightgbm", "xgboost",
                                           "statistics"}))
        return false;
    }
    // A model forward.
    auto ci = f_.call_index.find(call);
    if (ci != f_.call_index.end()) {
      const CallSite& c = f_.calls[ci->second];
      if (f_.grad_off(c)) return false;
      if (f_.is_model_call(c)) {
        if (f_.output_read_as_numpy(c)) return false;
        // A frozen module (all parameters switched off) keeps history only of its inputs.
        Id m = f_.forward_receiver(call);
        if (f_.frozen_at(c.func, f_.dotted(m), e.range.begin) || f_.forward_grad_off(c.func, m)) return false;
        // So does a module with no parameters at all (a greedy CTC decoder).
        if (parameter_free_model(f_, c.func, m)) return any_arg_carries(call, off, depth);
        // An instance of a module class of this file whose forward detaches what it works on
        // (a RISE explainer computing on `.data`): its returns decide. A forward that detaches
        // nothing is taken to return history whatever it calls (an ODE solver of another
        // library, which this file does not show).
        if (const Id fw = f_.forward_of(c.func, m); fw != kNone && fw != func_ && detaches_something(fw))
          return returns_history(ctx_, fw, -1, kNone);
        return true;
      }
    }
    if (q.rfind("torch.", 0) == 0) {
      if (in(q, {"torch.argmax", "torch.argmin", "torch.multinomial", "torch.bernoulli", "torch.eq", "torch.ne", "torch.lt", "torch.gt", "torch.isnan",
                 "torch.isinf", "torch.isfinite", "torch.numel", "torch.is_tensor", "torch.tensor",
                 "torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.randn_like",
                 "torch.rand_like", "torch.full_like", "torch.no_grad"}))
        return false;
      return any_arg_carries(call, off, depth);
    }
    // An accessor handed nothing (`loss.get_loss()`, `meter.get_avg()`): no tensor method is
    // named `get_*` (`get_device()` returns an int), so the receiver is another object (a loss
    // class with its own backward()) whose class, not shown here, decides what it returns.
    if (callee.kind == ExprKind::Attribute && starts_with(callee.text, "get_") && e.kids.size() == 1 &&
        !defines_method(callee.text))
      return false;
    // Methods of a tensor with history keep it (sum, mean, cpu, to, view, float, ...).
    if (callee.kind == ExprKind::Attribute && carries(callee.kids[0], off, depth + 1)) return true;
    // Losses and criteria.
    std::string_view cname = callee.kind == ExprKind::Name ? std::string_view(callee.text)
                             : callee.kind == ExprKind::Attribute ? std::string_view(callee.text)
                                                                  : std::string_view();
    // A criterion has no parameters of its own: its result carries history through its
    // inputs. When every input is a local value known to carry none (a forward's output
    // made under no_grad a few lines earlier), neither does the loss; inputs of unknown
    // origin (parameters, attributes) keep the usual assumption.
    bool criterion = !cname.empty() && Facts::named_like_a_loss(cname) && !builds_a_criterion(cname);
    // A call named like a loss whose every definition returns a Python number
    // (`model.get_current_loss()` of a trainer whose method returns `self.loss.item()`, an
    // imported `calc_dataset_loss(loader, net, loss_fn)` that sums `loss.item()`).
    if (criterion && f_.number_loss_call(call)) return false;
    const std::string& d = f_.dotted(e.kids[0]);
    if (!criterion && !d.empty())
      for (Id v : f_.bindings(func_, d)) {
        const std::string& vq = f_.callee_qual(v);
        if (vq.rfind("torch.nn.", 0) == 0 && vq.size() > 4 && vq.compare(vq.size() - 4, 4, "Loss") == 0)
          criterion = true;
      }
    // A function handed a NumPy array (`log_loss(target[:, i], oof[:, i])` with `oof =
    // np.zeros(...)`) is no torch criterion, which rejects arrays: a host-side score.
    if (criterion && numpy_argument(call)) return false;
    if (criterion) return any_arg_carries(call, off, depth) || !inputs_known(call);
    // A torch.nn layer that is not a forward (parameter-free: `act = nn.Sigmoid()`): its result
    // carries what its input carries.
    if (!d.empty())
      for (Id v : f_.bindings(func_, d))
        if (starts_with(f_.callee_qual(v), "torch.nn.")) return any_arg_carries(call, off, depth);
    // Python builtins that combine tensors.
    if (callee.kind == ExprKind::Name && q.empty() && in(callee.text, {"sum", "max", "min", "abs"}))
      return any_arg_carries(call, off, depth);
    return false;
  }

  // Is `base` trimmed to its last entries in this function: `base.pop(0)`, `base.popleft()`,
  // `del base[0]`, `base = base[-k:]`, or bound to a `deque(..., maxlen=k)`?
  bool trimmed_to_a_window(const std::string& base) const {
    for (int ci : f_.calls_in(func_)) {
      const Id x = f_.calls[ci].call;
      const std::string& a = f_.callee_attr(x);
      if ((a == "popleft"sv || (a == "pop"sv && f_.e(x).kids.size() == 2 &&
                                 int_literal_value(f_.e(f_.e(x).kids[1])) == 0)) &&
          f_.dotted(f_.callee_receiver(x)) == base)
        return true;
    }
    for (Id sid : f_.stmts_in(func_)) {
      const Stmt& st = f_.m.s(sid);
      for (Id t : st.targets) {
        const Expr& te = f_.e(t);
        if (st.kind == StmtKind::Delete && te.kind == ExprKind::Subscript && te.kids.size() == 2 &&
            f_.dotted(te.kids[0]) == base && int_literal_value(f_.e(te.kids[1])) == 0)
          return true;
        if (st.kind == StmtKind::Assign && f_.dotted(t) == base && st.value != kNone) {
          const Expr& v = f_.e(st.value);
          if (v.kind == ExprKind::Subscript && !v.kids.empty() && f_.dotted(v.kids[0]) == base) return true;
          if (v.kind == ExprKind::Call && f_.last_component(f_.callee_qual(st.value)) == "deque"sv &&
              std::find(v.kw.begin(), v.kw.end(), "maxlen") != v.kw.end())
            return true;
        }
      }
    }
    return false;
  }

  // `meter.update(loss, n)` on an instance of a class another file of the run defines
  // (`from utils import AverageMeter`; `meter = AverageMeter()`) whose method keeps its
  // argument.
  bool imported_accumulating_method(Id recv, const std::string& attr) const {
    if (!f_.project || f_.project->accumulating_imports.empty()) return false;
    const std::string& d = f_.dotted(recv);
    if (d.empty()) return false;
    const std::vector<Id> values = f_.bindings_at(func_, d, recv);
    if (values.empty()) return false;
    for (Id v : values) {
      const Expr& ve = f_.e(v);
      if (ve.kind != ExprKind::Call || f_.e(ve.kids[0]).qname.empty() ||
          !f_.project->accumulating_imports.count(f_.e(ve.kids[0]).qname + "." + attr))
        return false;
    }
    return true;
  }

  // Is the method that `recv.attr(...)` runs one that keeps its argument? When the
  // receiver's class is known (`meter = AverageMeter()`), that class's method decides;
  // else any same-file method of that name.
  bool runs_accumulating_method(Id recv, const std::string& attr) const {
    if (!accumulating_methods_.count(attr)) return imported_accumulating_method(recv, attr);
    const std::string& d = f_.dotted(recv);
    if (d.empty()) return true;
    Id cls = kNone;
    bool known = true;
    for (Id v : f_.bindings_at(func_, d, recv)) {
      const Expr& ve = f_.e(v);
      Id k = ve.kind == ExprKind::Call && f_.e(ve.kids[0]).kind == ExprKind::Name && f_.qual(ve.kids[0]).empty()
                 ? f_.class_at(f_.e(ve.kids[0]).text, ve.range.begin)
                 : kNone;
      if (k == kNone || (cls != kNone && k != cls)) known = false;
      cls = k;
    }
    if (!known || cls == kNone) return true;
    for (Id fn : f_.m.classes[cls].methods)
      if (f_.m.funcs[fn].name == attr) return accumulating_methods_.count("#" + std::to_string(fn)) != 0;
    return true;  // inherited: unknown
  }

  // Accumulators whose graph is wanted: back-propagated later, or (in a loop that does not
  // itself back-propagate) returned to a caller that will.
  // Asked once per (accumulator, loop): many `total += x` lines of one accumulator in one
  // loop share the answer, which walks the function.
  bool accumulator_wanted(const std::string& base, int loop) const {
    auto key = std::make_pair(base, loop);
    auto it = wanted_memo_.find(key);
    if (it != wanted_memo_.end()) return it->second;
    bool w = compute_accumulator_wanted(base, loop);
    wanted_memo_.emplace(std::move(key), w);
    return w;
  }
  mutable std::map<std::pair<std::string, int>, bool> wanted_memo_;

  // Is the accumulator kept for a backward: back-propagated here (or in a nested function),
  // handed to a same-file function that back-propagates, or read and back-propagated by
  // another function of the file (a rollout buffer)? Independent of any loop.
  // An evaluation method (`validate`, `evaluate`) whose loop iterates a parameter of its own
  // (`for batch in it:`), not a range or the module's layers.
  // Does the loop walk the layers of one module, calling each (`for layer in
  // model.children(): x = layer(x)`, `for i, m in enumerate(net.features):`)? Its iterations are
  // the parts of one forward, not repetitions: what it keeps is that forward's graph, once.
  bool walks_a_modules_layers(int loop) const {
    const Loop& L = f_.loops[loop];
    if (L.iter == kNone || L.stmt == kNone) return false;
    Id it = L.iter;
    for (int hops = 0; hops < 2 && f_.e(it).kind == ExprKind::Call && f_.e(it).kids.size() == 2 &&
                       in(f_.e(f_.e(it).kids[0]).text, {"enumerate", "list", "reversed"});
         ++hops)
      it = f_.e(it).kids[1];
    bool parts = f_.e(it).kind == ExprKind::Call && f_.e(it).kids.size() == 1 &&
                 in(f_.callee_attr(it), {"children", "modules", "named_children", "named_modules"});
    // `model.features._modules.values()` (or `.items()`): a module's own table of parts.
    if (!parts && f_.e(it).kind == ExprKind::Call && f_.e(it).kids.size() == 1 &&
        in(f_.callee_attr(it), {"values", "items"})) {
      const Id table = f_.callee_receiver(it);
      parts = table != kNone && f_.e(table).kind == ExprKind::Attribute && f_.e(table).text == "_modules"sv;
    }
    if (!parts && !(f_.e(it).kind != ExprKind::Call && f_.is_model_value(L.func, it))) return false;
    // The loop's target (the last name of `i, layer`) is what the body calls.
    std::string layer;
    for_each_expr(f_.m, f_.m.s(L.stmt).targets.empty() ? kNone : f_.m.s(L.stmt).targets[0], [&](Id y) {
      if (f_.e(y).kind == ExprKind::Name) layer = f_.e(y).text;
      return true;
    });
    if (layer.empty()) return false;
    for (int ci : L.calls) {
      const CallSite& c = f_.calls[ci];
      Id callee = f_.e(c.call).kids[0];
      if (f_.e(callee).kind == ExprKind::Attribute && f_.e(callee).text == "forward"sv && !f_.e(callee).kids.empty())
        callee = f_.e(callee).kids[0];  // `m.forward(x)`
      if (c.loop == loop && f_.e(callee).kind == ExprKind::Name && f_.e(callee).text == layer) return true;
    }
    return false;
  }

  bool walks_data_handed_in(int loop) const {
    if (func_ == kNone || !f_.is_eval_function_name(f_.m.funcs[func_].name)) return false;
    const Id it = f_.loops[loop].iter;
    return it != kNone && f_.e(it).kind == ExprKind::Name && f_.is_param(func_, f_.e(it).text);
  }

  bool read_for_backprop(const std::string& base, const std::set<std::string>& derived) const {
    auto mentions_derived = [&](Id x) { return mentions_any(f_, x, derived); };
    // Also in functions nested in this one, which read its names as closure cells
    // (`def process(batch): gcam.backward(statistic)`).
    auto here_or_nested = [&](Id fn) {
      for (int hops = 0; fn != kNone && hops < 16; ++hops, fn = f_.m.funcs[fn].parent)
        if (fn == func_) return true;
      return fn == func_;
    };
    for (int bi : f_.backprop_calls())
      if (here_or_nested(f_.calls[bi].func) && mentions_derived(f_.calls[bi].call)) return true;
    // Handed to a same-file function that back-propagates (`compute_acer_loss(policies, ...)`,
    // `agent.learn(torch.stack(log_probs), rewards)`): the loss is built there.
    // (Not a name that reaches the call detached: `log_probs = torch.cat(log_probs).detach()`
    // before `update(model, log_probs)`, a PPO rollout whose graphs nothing back-propagates.)
    auto backprops = [&](const CallSite& x) { return f_.is_backprop(x); };
    auto detached_here = [&](Id stmt, Id arg) {
      if (stmt == kNone || f_.e(arg).kind != ExprKind::Name) return false;
      bool outside = false;
      const auto defs = f_.flow().reaching(stmt, f_.e(arg).text, &outside);
      if (outside || defs.empty()) return false;
      for (const Def& df : defs) {
        if (df.kind != DefKind::Assign || df.value == kNone) return false;
        const Expr& v = f_.e(df.value);
        const bool detached = (v.kind == ExprKind::Call && in(f_.callee_attr(df.value), {"detach", "item", "tolist", "numpy"})) ||
                              (v.kind == ExprKind::Attribute && v.text == "data"sv);
        if (!detached) return false;
      }
      return true;
    };
    // (The calls of this function and of those nested in it: the module level's are every call.)
    std::vector<int> own;
    if (func_ != kNone) {
      own = f_.calls_in(func_);
      for (Id g : f_.nested_functions(func_)) own.insert(own.end(), f_.calls_in(g).begin(), f_.calls_in(g).end());
    }
    for (size_t k = 0; k < (func_ == kNone ? f_.calls.size() : own.size()); ++k) {
      const CallSite& c = f_.calls[func_ == kNone ? k : static_cast<size_t>(own[k])];
      if (!here_or_nested(c.func) || c.target_func == kNone || !f_.reaches(c.target_func, backprops)) continue;
      const Expr& call = f_.e(c.call);
      for (size_t k = 1; k < call.kids.size(); ++k)
        if (mentions_derived(call.kids[k]) && !detached_here(c.stmt, call.kids[k])) return true;
    }
    // Kept on an attribute or a module-level name that another function of the file reads
    // and back-propagates (`values = torch.stack(critic.saved_values)` in `update()`, a
    // rollout buffer of an actor-critic; `self.saved_log_probs` in `finish_episode()`).
    if (base.find('.') != std::string::npos || func_ == kNone ||
        (!f_.is_param(func_, base) && f_.own_bindings(func_, base).empty())) {
      const bool on_self = starts_with(base, "self.");
      std::set<Id> done;
      for (int bi : f_.backprop_calls()) {
        const Id g = f_.calls[bi].func;
        if (g == func_ || !done.insert(g).second) continue;
        if (on_self && (g == kNone || func_ == kNone || f_.m.funcs[g].cls != f_.m.funcs[func_].cls)) continue;
        std::set<std::string> there{base};
        follow_flow(f_, f_.stmts_in(g), there, 3, true);
        if (there.size() == 1) continue;  // the function never reads it
        for (int bi : f_.calls_in(g))
          if (f_.is_backprop(f_.calls[bi]) && mentions_any(f_, f_.calls[bi].call, there)) return true;
      }
    }
    return false;
  }

  // Names the accumulator flows into in this function, a few hops: `total = content +
  // style_loss`, `loss += subloss / n` (a per-crop sum added into the loss that is
  // back-propagated), and the containers it is appended into
  // (`means.append(torch.stack(per_sample[i]).mean())`).
  std::set<std::string> flows_of(const std::string& base) const {
    std::set<std::string> derived{base};
    follow_flow(f_, f_.stmts_in(func_), derived, 3, true);
    return derived;
  }

  bool compute_accumulator_wanted(const std::string& base, int loop) const {
    const std::set<std::string> derived = flows_of(base);
    if (read_for_backprop(base, derived)) return true;
    auto mentions = [&](Id x) {
      bool hit = false;
      for_each_expr(f_.m, x, [&](Id y) {
        if (f_.dotted(y) == base) hit = true;
        return !hit;
      });
      return hit;
    };
    auto mentions_derived = [&](Id x) { return mentions_any(f_, x, derived); };
    auto returned = [&]() {
      for (const StmtSite& s : f_.stmt_sites) {
        if (s.func != func_) continue;
        const Stmt& st = f_.m.s(s.stmt);
        if (st.kind == StmtKind::Return && st.value != kNone && (mentions(st.value) || mentions_derived(st.value)))
          return true;
      }
      // C++: handed back through a parameter (`void run(..., torch::Tensor& outputs)`, then
      // `outputs = torch::reshape(torch::cat(vec, 0), sizes)`), the out-parameter idiom.
      if (f_.m.lang == Lang::Cpp && func_ != kNone)
        for (const std::string& d : derived)
          if (d != base && f_.is_param(func_, d)) return true;
      return false;
    };
    // A loss summed over the items of one forward's output (`for i in range(pred.shape[0]):`)
    // and returned: one graph, the caller's to back-propagate, even when the loop takes
    // per-item gradients itself (a Jacobian row by row).
    if (walks_one_output(loop) && returned()) return true;
    if (f_.loop_reaches_backprop(loop)) return false;
    // Returned to a same-file caller that back-propagates through the result (an episode's
    // log-probabilities from `generate_episode()`, stacked into the policy loss), whatever
    // the function is named: the caller's backward is what the graphs are kept for.
    if (func_ != kNone && f_.called_from_training(func_) && returned()) return true;
    // Summing per-head losses for the caller is intended; keeping per-batch graphs is not.
    if (f_.is_eval_source(f_.loops[loop].iter) || iterates_batches(f_, loop)) return false;
    if (func_ != kNone && f_.is_eval_function_name(f_.m.funcs[func_].name)) return false;
    return returned();
  }

  // `for i in range(pred.shape[0])` (`pred.size(0)`, `len(pred)`) where `pred` is bound only to
  // a model's output in this function: the loop walks the items of one forward.
  bool walks_one_output(int loop) const {
    // A `while` loop has no iterable.
    if (f_.loops[loop].iter == kNone) return false;
    const Expr& r = f_.e(f_.loops[loop].iter);
    if (r.kind != ExprKind::Call || f_.e(r.kids[0]).kind != ExprKind::Name || f_.e(r.kids[0]).text != "range"sv ||
        !f_.qual(r.kids[0]).empty() || r.kids.size() != 2)
      return false;
    const Id of = size_read_of(f_, r.kids[1]);
    if (of == kNone || f_.e(of).kind != ExprKind::Name) return false;
    const std::vector<Id> vs = f_.own_bindings(func_, f_.e(of).text);
    if (vs.empty()) return false;
    for (Id v : vs) {
      auto ci = f_.call_index.find(v);
      if (ci == f_.call_index.end() || !f_.is_model_call(f_.calls[ci->second])) return false;
    }
    return true;
  }

  // `.add(x)` keeps `x` when the receiver is a set (`seen = set()`, `{...}`); on an object of
  // another library (`metric = d2l.Accumulator(2); metric.add(l, n)`) what it keeps is not
  // visible here (such accumulators commonly store `float(x)`). Same-file classes are read
  // (runs_accumulating_method).
  bool holds_a_set(Id recv) const {
    const std::string& d = f_.dotted(recv);
    if (d.empty()) return false;
    std::vector<Id> values = f_.bindings(func_, d);
    if (values.empty()) return false;
    for (Id v : values) {
      const Expr& e = f_.e(v);
      const bool set_call = e.kind == ExprKind::Call && f_.e(e.kids[0]).kind == ExprKind::Name &&
                            in(f_.e(e.kids[0]).text, {"set", "frozenset"}) && f_.qual(e.kids[0]).empty();
      if (!set_call && !((e.kind == ExprKind::Sequence || e.kind == ExprKind::Comprehension) && e.text == "set"sv))
        return false;
    }
    return true;
  }

  // The class of the object `base` holds, when every binding of it builds an instance of a
  // class the file does not show (`run_loss = CumulativeAverage()`, a library's metric): its
  // `.append` is that class's method, not a list's. "" otherwise (a list, a deque, a dict, a
  // class of the file, a value of unknown origin).
  std::string unseen_class_of(const std::string& base) const {
    std::vector<Id> vals = f_.bindings(func_, base);
    if (vals.empty() && func_ != kNone) vals = f_.bindings(kNone, base);
    if (vals.empty()) return "";
    std::string cls;
    for (Id v : vals) {
      if (f_.e(v).kind != ExprKind::Call || python_builtin_call(f_, v) || f_.constructed_class(v) != kNone ||
          f_.same_file_target(v, func_) != kNone)
        return "";
      const std::string& q = f_.callee_qual(v);
      if (starts_with(q, "torch.") || starts_with(q, "collections.") || starts_with(q, "queue.") ||
          starts_with(q, "numpy.") || starts_with(q, "array."))
        return "";
      const Expr& callee = f_.e(f_.e(v).kids[0]);
      if (callee.kind != ExprKind::Name && callee.kind != ExprKind::Attribute) return "";
      const std::string_view name = f_.last_component(f_.dotted(f_.e(v).kids[0]));
      if (name.empty() || !std::isupper(static_cast<unsigned char>(name[0]))) return "";
      if (!cls.empty() && cls != name) return "";
      cls = std::string(name);
    }
    return cls;
  }

  // The statement's `recv.append(x)` runs a method of a class of another module of the run
  // that keeps its argument (FileSummary::accumulating_methods): the class is shown there.
  bool kept_by_an_imported_method(Id sid) const {
    const Stmt& st = f_.m.s(sid);
    if (st.kind != StmtKind::Expr || st.value == kNone || f_.e(st.value).kind != ExprKind::Call) return false;
    const Id recv = f_.callee_receiver(st.value);
    return recv != kNone && imported_accumulating_method(recv, f_.callee_attr(st.value));
  }

  // Loop `loop` is its function's outermost loop and walks the elements of one input: it
  // iterates `range(n)` (or `range(a, n)`) where n reads a tensor's size (`target.size(0)`,
  // `x.shape[1]`, or a name bound only to such; not `len(...)`, which may count a dataset), and
  // every same-file call of the function runs inside a loop (a helper called once per item).
  bool over_one_inputs_elements(int loop) const {
    const Loop& L = f_.loops[loop];
    if (func_ == kNone || L.parent >= 0 || L.iter == kNone) return false;
    const Expr& r = f_.e(L.iter);
    if (r.kind != ExprKind::Call || !python_builtin_call(f_, L.iter) || f_.e(r.kids[0]).text != "range"sv ||
        r.kids.size() < 2 || r.kids.size() > 3 || !r.kw.empty())
      return false;
    auto tensor_size = [&](Id x) {
      const Expr& e = f_.e(x);
      return (e.kind == ExprKind::Call && f_.callee_attr(x) == "size"sv) ||
             (e.kind == ExprKind::Subscript && !e.kids.empty() && f_.e(e.kids[0]).kind == ExprKind::Attribute &&
              f_.e(e.kids[0]).text == "shape"sv) ||
             (e.kind == ExprKind::Subscript && !e.kids.empty() && f_.e(e.kids[0]).kind == ExprKind::Call &&
              f_.callee_attr(e.kids[0]) == "size"sv);
    };
    const Id n = r.kids[r.kids.size() == 2 ? 1 : 2];
    bool sized = tensor_size(n);
    if (!sized && f_.e(n).kind == ExprKind::Name) {
      const std::vector<Id> vs = f_.own_bindings(func_, f_.e(n).text);
      sized = !vs.empty() && std::all_of(vs.begin(), vs.end(), tensor_size);
    }
    if (!sized) return false;
    const std::vector<int>& callers = f_.callers(func_);
    return !callers.empty() &&
           std::all_of(callers.begin(), callers.end(), [&](int ci) { return f_.calls[ci].loop >= 0; });
  }

  // A plain local of the function (not an attribute, a parameter or a global): it dies with
  // the call.
  bool local_of_the_call(const std::string& base) const {
    return func_ != kNone && base.find('.') == std::string::npos && !f_.is_param(func_, base) &&
           !f_.own_bindings(func_, base).empty();
  }

  // Every call in the loop is a tensor or container operation, a `torch.*` function or a
  // Python builtin: no forward (and no helper that might run one) happens in it, so what the
  // loop keeps hangs off graphs built before it (`returns.append(r + gamma * values[i])`).
  bool loop_makes_no_forward(int loop) const {
    static const std::set<std::string_view> kOps = {
        "append", "extend", "insert", "item", "detach", "cpu", "cuda", "to", "float", "double", "long", "int",
        "half", "bool", "sum", "mean", "std", "var", "log", "exp", "squeeze", "unsqueeze", "view", "reshape", "pow",
        "sqrt", "abs", "clamp", "max", "min", "argmax", "argmin", "flatten", "t", "transpose", "permute",
        "contiguous", "clone", "softmax", "log_softmax", "sigmoid", "tanh", "norm", "dot", "mm", "matmul", "size",
        "dim", "numel", "tolist", "numpy", "index_select", "gather", "masked_select", "masked_fill", "add", "sub",
        "mul", "div", "neg", "split", "chunk", "repeat", "expand", "sort", "topk", "eq", "ne", "gt", "lt", "ge",
        "le", "keys", "values", "items", "get", "format", "log_prob", "entropy", "type", "expand_as", "view_as",
        "pop", "copy", "double", "where"};
    const Loop& L = f_.loops[loop];
    if (L.calls.empty()) return false;
    for (int ci : L.calls) {
      const CallSite& c = f_.calls[ci];
      if (f_.is_model_call(c)) return false;
      if (starts_with(f_.callee_qual(c.call), "torch.") || starts_with(f_.callee_qual(c.call), "math.") ||
          python_builtin_call(f_, c.call))
        continue;
      const Expr& callee = f_.e(f_.e(c.call).kids[0]);
      if (callee.kind == ExprKind::Attribute && f_.callee_qual(c.call).empty() && kOps.count(callee.text)) continue;
      return false;
    }
    return true;
  }

  static constexpr long kFewIterations = 1000;
  // Iterations between re-creations of a container that keep it bounded (a rollout of 20
  // steps); above it (a 128-step, 8-environment rollout of a CNN) the graphs add up.
  static constexpr long kFewSteps = 64;

  // Iterations of `loop` and of the enclosing loops inside the scope where `base` lives
  // (the container is not re-created in them), when every one has a constant trip count;
  // else 0 (unknown).
  long bounded_trips(const std::string& base, int loop) const {
    long total = 1;
    for (int l = loop; l >= 0 && !assigned_in_loop(f_, l, base); l = f_.loops[l].parent) {
      long n = constant_trips(f_, l, kFewIterations);
      if (n == 0) return 0;
      total *= n;
      if (total > kFewIterations) return 0;
    }
    return total;
  }

  // `for epoch in range(n_epochs):` (the target or the count named for epochs) with no
  // enclosing loop in the container's scope: it runs once per epoch, a few hundred times
  // at most, whatever the count is.
  bool epoch_loop(const std::string& base, int loop) const {
    const Loop& L = f_.loops[loop];
    if (L.stmt == kNone || L.iter == kNone) return false;
    if (L.parent >= 0 && !assigned_in_loop(f_, L.parent, base)) return false;
    const Expr& it = f_.e(L.iter);
    if (it.kind != ExprKind::Call || f_.e(it.kids[0]).kind != ExprKind::Name || f_.e(it.kids[0]).text != "range"sv)
      return false;
    auto says_epoch = [&](std::string_view text) {
      for (const auto& t : Facts::name_tokens(text))
        if (t == "epoch"sv || t == "epochs"sv) return true;
      return false;
    };
    const Stmt& st = f_.m.s(L.stmt);
    if (st.targets.size() == 1 && says_epoch(f_.dotted(st.targets[0]))) return true;
    for (size_t k = 1; k < it.kids.size(); ++k)
      if (says_epoch(f_.last_component(f_.dotted(it.kids[k])))) return true;
    return false;
  }

  // Does the loop read another element of `element`'s container by a literal key (`outputs[1]`
  // beside `outputs[0]`: the heads of a multi-output model)? Masks and slices of the same
  // tensor (`x_hat[x_hat > 1] = 1`) are not other elements.
  bool other_elements_read(Id element, int loop) const {
    const Expr& x = f_.e(element);
    const std::string& base = f_.dotted(x.kids[0]);
    if (base.empty()) return true;
    auto key = [&](const Expr& s) -> const Expr* {
      return s.kids.size() == 2 && f_.e(s.kids[1]).kind == ExprKind::Literal ? &f_.e(s.kids[1]) : nullptr;
    };
    const Expr* own = key(x);
    const Range& r = f_.loops[loop].range;
    for (Id y = 0; y < f_.m.exprs.size(); ++y) {
      const Expr& s = f_.e(y);
      if (s.kind != ExprKind::Subscript || s.kids.empty() || s.range.begin < r.begin || s.range.end > r.end ||
          y == element || f_.dotted(s.kids[0]) != base)
        continue;
      const Expr* other = key(s);
      if (other && (!own || other->text != own->text)) return true;
    }
    return false;
  }

  // `backward()` (no retain_graph) runs inside the loop on the value itself or on a value
  // computed from it (`score = classifier(fake).mean(); score.backward()`): the value's
  // graph has had its saved tensors freed. A list display counts by its elements.
  bool backpropagated_in_loop(Id value, int loop) const {
    std::set<std::string> names;
    // An element or a view of a value (`x_hat[0]`, `out.squeeze(0)`) shares its graph; not an
    // element of a value whose other elements the loop reads (`outputs[0]` back-propagated,
    // `outputs[1]` kept: that head's graph was never freed).
    for (int guard = 0; guard < 16; ++guard) {
      const Expr& x = f_.e(value);
      if (x.kind == ExprKind::Subscript && !x.kids.empty()) {
        if (other_elements_read(value, loop)) return false;
        value = x.kids[0];
      } else if (x.kind == ExprKind::Call &&
                 in(f_.callee_attr(value), {"squeeze", "unsqueeze", "view", "reshape", "flatten", "permute", "cpu",
                                            "float", "clone", "contiguous"}) &&
                 f_.callee_receiver(value) != kNone) {
        value = f_.callee_receiver(value);
      } else {
        break;
      }
    }
    const Expr& v = f_.e(value);
    if (v.kind == ExprKind::Sequence) {
      // A display keeps each element: every one that carries history must have been freed
      // (`(loss, loss_test, acc)` with only `loss` back-propagated keeps the test loss's whole
      // graph), and at least one element is.
      bool any = false;
      for (Id k : v.kids) {
        if (f_.dotted(k).empty()) return false;
        if (backpropagated_in_loop(k, loop)) {
          any = true;
          continue;
        }
        if (carries(k, grad_off_at(f_.stmt_of(value)))) return false;
      }
      return any;
    } else if (!f_.dotted(value).empty()) {
      names.insert(f_.dotted(value));
    } else {
      return false;
    }
    // (The kept name itself: a backward of the same binding, not of another value the name
    // held earlier in the iteration, a training loss before the test loss kept after it.)
    const std::set<std::string> own = names;
    const Id kept_at = f_.stmt_of(value);
    follow_flow(f_, f_.loops[loop].stmts, names, 3, false);
    for (int ci : f_.loops[loop].calls) {
      const CallSite& c = f_.calls[ci];
      if (!f_.is_backward(c) || f_.arg(c.call, static_cast<size_t>(-1), "retain_graph") != kNone) continue;
      Id r = f_.callee_attr(c.call) == "backward"sv ? f_.callee_receiver(c.call) : f_.arg(c.call, 0, "tensors");
      if (r == kNone || !names.count(f_.dotted(r))) continue;
      if (own.count(f_.dotted(r)) && kept_at != kNone && c.stmt != kNone && !same_binding(f_.dotted(r), kept_at, c.stmt))
        continue;
      return true;
    }
    return false;
  }

  // Does the loop walk a DataLoader: one built there, or a name that says loader?
  bool walks_a_loader(int loop) const {
    bool found = false;
    for_each_expr(f_.m, f_.loops[loop].iter, [&](Id x) {
      const Expr& e = f_.e(x);
      if (e.kind == ExprKind::Call && in(f_.callee_qual(x), {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}))
        found = true;
      if (e.kind == ExprKind::Name || e.kind == ExprKind::Attribute)
        for (const auto& t : Facts::name_tokens(e.text))
          found = found || in(t, {"loader"sv, "dataloader"sv, "loaders"sv, "dl"sv});
      return !found;
    });
    return found;
  }

  // Does a binding of `d` that reaches statement `a` also reach statement `b`? (True when the
  // flow graph cannot say.)
  bool same_binding(const std::string& d, Id a, Id b) const {
    bool outside_a = false, outside_b = false;
    const auto at_a = f_.flow().reaching(a, d, &outside_a);
    const auto at_b = f_.flow().reaching(b, d, &outside_b);
    if (at_a.empty() || at_b.empty()) return true;
    for (const Def& x : at_a)
      for (const Def& y : at_b)
        if (x.stmt == y.stmt) return true;
    return false;
  }

  // A `for` over a collection (a loader, `enumerate(self.train_data)`, `tqdm(loader)`), not
  // over a count of steps (`range(steps)`, `itertools.count()`) nor a `while`.
  bool walks_a_collection(int loop) const {
    Id it = f_.loops[loop].iter;
    for (int guard = 0; guard < 4 && it != kNone && f_.e(it).kind == ExprKind::Call; ++guard) {
      const Expr& callee = f_.e(f_.e(it).kids[0]);
      const std::string_view name = callee.kind == ExprKind::Name ? std::string_view(callee.text)
                                    : callee.kind == ExprKind::Attribute ? std::string_view(callee.text)
                                                                          : std::string_view();
      if (in(name, {"range", "count", "repeat", "cycle"})) return false;
      if (!in(name, {"enumerate", "tqdm", "iter", "trange"}) || f_.e(it).kids.size() < 2) break;
      if (name == "trange"sv) return false;
      it = f_.e(it).kids[1];
    }
    // A name that holds the collection (`loader`, `self.train_data`), not what a call makes
    // (`infinite(loader)`, a generator that never ends).
    return it != kNone && !f_.dotted(it).empty();
  }

  // Is the value (or every binding of the name it is) what a call of another module's object
  // returns, whose called method back-propagates (`loss = loss_func(out, y, norm)` on a
  // `SimpleLossCompute` whose `__call__` runs `loss.backward()` and the step)? Its graph's saved
  // tensors were freed there, and such a method most often hands back a number.
  bool from_imported_backprop(Id value) const {
    auto made_by = [&](Id v) {
      auto ci = f_.call_index.find(v);
      return f_.e(v).kind == ExprKind::Call && ci != f_.call_index.end() && f_.imported_backprop_call(f_.calls[ci->second]);
    };
    if (made_by(value)) return true;
    const std::string& d = f_.e(value).kind == ExprKind::Name ? f_.dotted(value) : std::string();
    if (d.empty()) return false;
    const std::vector<Id> vals = f_.bindings_at(func_, d, value);
    return !vals.empty() && std::all_of(vals.begin(), vals.end(), made_by);
  }

  // Does the function declare `global <base>` (or `nonlocal`)? Without it, an assignment in
  // the function makes the name its own local, whatever the module binds (a notebook's other
  // cell summing into a `tloss` of its own).
  bool declared_global(const std::string& base) const {
    if (func_ == kNone) return true;
    for (Id sid : f_.stmts_in(func_)) {
      const Stmt& st = f_.m.s(sid);
      if (st.kind == StmtKind::Other && (st.text == "global"sv || st.text == "nonlocal"sv))
        for (Id t : st.targets)
          if (f_.dotted(t) == base) return true;
    }
    return false;
  }

  // Does a `return` of the function read `base` (`return losses`, `return total / n`)?
  bool returned_by_the_call(const std::string& base) const {
    if (func_ == kNone) return false;
    for (Id r : f_.returned_values(func_)) {
      bool hit = false;
      for_each_expr(f_.m, r, [&](Id y) {
        hit = hit || f_.dotted(y) == base;
        return !hit;
      });
      if (hit) return true;
    }
    return false;
  }

  // Is statement `sid` run whenever `body` runs: in it, or in the body of a `with` in it
  // (`with autocast():`), not under an `if`, a loop or a handler?
  // `through_loops`: also in every iteration of a loop of `body` that never skips the rest of
  // an iteration (no `break` or `continue`), for a value read after it (a helper's `return
  // loss` after its loop over batches: an empty loop leaves the local unbound).
  bool unconditional_in(const std::vector<Id>& body, Id sid, int depth = 0, bool through_loops = false) const {
    if (depth > 16) return false;
    for (Id s : body) {
      if (s == sid) return true;
      const Stmt& st = f_.m.s(s);
      if (st.kind == StmtKind::With && unconditional_in(st.body, sid, depth + 1, through_loops)) return true;
      if (through_loops && (st.kind == StmtKind::For || st.kind == StmtKind::While) &&
          unconditional_in(st.body, sid, depth + 1, through_loops) && !skips_iterations(st.body))
        return true;
    }
    return false;
  }

  // Does a `break` or `continue` of this loop's body (not of a loop nested in it) appear?
  bool skips_iterations(const std::vector<Id>& body, int depth = 0) const {
    if (depth > 32) return true;
    for (Id s : body) {
      const Stmt& st = f_.m.s(s);
      if (st.kind == StmtKind::Break || st.kind == StmtKind::Continue) return true;
      if (st.kind == StmtKind::For || st.kind == StmtKind::While || st.kind == StmtKind::FunctionDef ||
          st.kind == StmtKind::ClassDef)
        continue;
      if (skips_iterations(st.body, depth + 1) || skips_iterations(st.orelse, depth + 1) ||
          skips_iterations(st.finalbody, depth + 1))
        return true;
      for (const Handler& h : st.handlers)
        if (skips_iterations(h.body, depth + 1)) return true;
    }
    return false;
  }

  // The plain `backward()`s (no argument at all: one element, no retain_graph or
  // create_graph, no **kwargs) that always run with `body`: receiver name -> statements.
  std::map<std::string, std::vector<Id>> plain_backwards(const std::vector<int>& calls,
                                                         const std::vector<Id>& body, bool through_loops = false) const {
    std::map<std::string, std::vector<Id>> out;
    for (int ci : calls) {
      const CallSite& c = f_.calls[ci];
      if (f_.callee_attr(c.call) != "backward"sv || f_.e(c.call).kids.size() != 1 || c.stmt == kNone) continue;
      if (!unconditional_in(body, c.stmt, 0, through_loops)) continue;
      if (const std::string& d = f_.dotted(f_.callee_receiver(c.call)); !d.empty()) out[d].push_back(c.stmt);
    }
    return out;
  }

  // The statements whose bindings of `n` reach statement `at`, with kNone for the value from
  // outside the function when `outside_counts`.
  std::set<Id> binding_stmts(const std::string& n, Id at, bool outside_counts) const {
    bool outside = false;
    std::set<Id> out;
    for (const Def& df : f_.flow().reaching(at, n, &outside)) out.insert(df.stmt);
    if (outside && outside_counts) out.insert(kNone);
    return out;
  }

  // Does name `d`, read at statement `at`, hold the value one of the backward()s in `freed`
  // ran on: the same bindings reach both (program order: `loss` rebound to a validation
  // loss after the step is another value)?
  // `local_in`: the function holding both, when known. In it a local name (bound there, no
  // parameter) unbound on some path holds nothing there: Python raises instead (`return loss`
  // after the loop over batches that binds and back-propagates it).
  bool same_value_as_backward(const std::map<std::string, std::vector<Id>>& freed, const std::string& d,
                              Id at, Id local_in = kNone) const {
    auto it = freed.find(d);
    if (it == freed.end()) return false;
    const bool local = local_in != kNone && d.find('.') == std::string::npos && !f_.is_param(local_in, d) &&
                       !f_.own_bindings(local_in, d).empty();
    auto defs_at = [&](Id stmt) { return binding_stmts(d, stmt, !local); };
    const std::set<Id> here = defs_at(at);
    // (An `if`/`elif` chain with no `else` leaves the name possibly unbound: kNone in both.)
    if (here.empty() || (here.size() == 1 && here.count(kNone))) return false;
    for (Id bw : it->second)
      if (defs_at(bw) == here) return true;
    return false;
  }

  // `d`, read at `sid`, is a term of a scalar that one of the backward()s in `freed` runs on
  // (`loss = loss_cls + 0.5 * loss_reg`, `loss += aux`; through names bound to such sums, two
  // levels), the same binding of it: that backward frees its saved tensors too. The
  // back-propagated name, or "".
  std::string total_holding_term(const std::map<std::string, std::vector<Id>>& freed, const std::string& d,
                                 Id sid) const {
    auto defs_at = [&](const std::string& n, Id stmt) { return binding_stmts(n, stmt, true); };
    const std::set<Id> here = defs_at(d, sid);
    if (here.empty() || here.count(kNone)) return "";
    std::function<bool(Id, Id, int)> holds;
    // Every binding of `n` reaching statement `at` holds `d` as a term.
    auto name_holds = [&](const std::string& n, Id at, int depth) {
      if (n == d) return defs_at(d, at) == here;
      if (depth > 2) return false;
      bool outside = false;
      const std::vector<Def> defs = f_.flow().reaching(at, n, &outside);
      if (outside || defs.empty()) return false;
      for (const Def& df : defs) {
        const bool plain = df.kind == DefKind::Assign || df.kind == DefKind::Declared;
        if (df.value == kNone || !(plain || df.kind == DefKind::Augmented)) return false;
        if (!holds(df.value, df.stmt, depth + 1) &&
            !(df.kind == DefKind::Augmented && holds_name_before(n, df.stmt, depth + 1, holds)))
          return false;
      }
      return true;
    };
    holds = [&](Id x, Id at, int depth) -> bool {
      const Expr& e = f_.e(x);
      switch (e.kind) {
        case ExprKind::BinOp:
          return e.kids.size() == 2 && in(e.text, {"+", "-", "*", "/"}) &&
                 (holds(e.kids[0], at, depth) || holds(e.kids[1], at, depth));
        case ExprKind::UnaryOp:
          return e.text == "-"sv && !e.kids.empty() && holds(e.kids[0], at, depth);
        case ExprKind::Name:
          return name_holds(e.text, at, depth);
        default:
          return false;
      }
    };
    for (const auto& [total, stmts] : freed) {
      if (total == d || total.find('.') != std::string::npos) continue;
      for (Id bw : stmts)
        if (name_holds(total, bw, 0)) return total;
    }
    return "";
  }
  // (`loss += aux`: the value `loss` held before the statement.)
  bool holds_name_before(const std::string& n, Id at, int depth, const std::function<bool(Id, Id, int)>& holds) const {
    if (depth > 2) return false;
    bool outside = false;
    const std::vector<Def> defs = f_.flow().reaching(at, n, &outside);
    if (outside || defs.empty()) return false;
    for (const Def& df : defs)
      if (df.value == kNone || df.kind != DefKind::Assign || !holds(df.value, df.stmt, depth + 1)) return false;
    return true;
  }

  // Does same-file function `g` return, as element `k` (the whole value when k < 0), on every
  // return, the scalar it back-propagated itself (`loss.backward(); return loss, preds`), or
  // a value computed from it (`reduced = reduce_mean(loss, n)`)? Its backward must run on
  // every call (not under `if train:`).
  bool returns_backpropagated_scalar(Id g, int k) const {
    const auto freed = plain_backwards(f_.calls_in(g), f_.m.funcs[g].body, /*through_loops=*/true);
    if (freed.empty()) return false;
    bool any = false;
    for (Id rs : f_.stmts_in(g)) {
      const Stmt& ret = f_.m.s(rs);
      if (ret.kind != StmtKind::Return) continue;
      if (ret.value == kNone) return false;
      any = true;
      Id el = ret.value;
      if (k >= 0) {
        const Expr& v = f_.e(ret.value);
        if (v.kind != ExprKind::Sequence || static_cast<size_t>(k) >= v.kids.size()) return false;
        el = v.kids[static_cast<size_t>(k)];
      }
      const std::string& d = f_.dotted(el);
      if (d.empty()) return false;
      if (same_value_as_backward(freed, d, rs, g)) continue;
      if (f_.is_param(g, d)) return false;
      bool outside = false;
      const std::vector<Def> defs = f_.flow().reaching(rs, d, &outside);
      if (outside || defs.empty()) return false;
      for (const Def& df : defs) {
        // Computed from it (`reduce_mean(loss, n)`, `loss.clone() / 2`): it reads the
        // back-propagated value.
        bool from_it = false;
        if (df.kind == DefKind::Assign && df.value != kNone)
          for_each_expr(f_.m, df.value, [&](Id y) {
            const std::string& yd = f_.dotted(y);
            from_it = from_it || (!yd.empty() && same_value_as_backward(freed, yd, df.stmt));
            return !from_it;
          });
        if (!from_it) return false;
      }
    }
    return any;
  }

  // Is the value `total += loss` (or `losses.append(loss)`, `total += loss * x.size(0)`)
  // adds, at statement `sid`, a scalar whose graph backward() already freed? Its name, when
  // a plain backward() that runs on every iteration of the loop ran on that very value
  // ("`loss` is back-propagated in the same iteration"), or the same-file helper that
  // returned it after back-propagating it (`loss, preds = self._run_batch(x, y)`:
  // "`_run_batch()` back-propagates the loss it returns"). "" otherwise.
  std::string backward_scalar_of(Id value, int loop, Id sid) const {
    for (int guard = 0; guard < 8; ++guard) {
      const Expr& x = f_.e(value);
      if (x.kind != ExprKind::BinOp || x.kids.size() != 2 || !in(x.text, {"*", "/"})) break;
      // Scaled by a number (`loss * x.size(0)`, `n * loss`, `loss / n`): the named side.
      value = !f_.dotted(x.kids[0]).empty() || f_.e(x.kids[0]).kind == ExprKind::BinOp ? x.kids[0] : x.kids[1];
    }
    const std::string& d = f_.dotted(value);
    const Loop& L = f_.loops[loop];
    if (d.empty() || L.stmt == kNone) return "";
    auto [freed, fresh] = loop_backwards_.try_emplace(loop);
    if (fresh) freed->second = plain_backwards(L.calls, f_.m.s(L.stmt).body);
    if (same_value_as_backward(freed->second, d, sid)) return "`" + d + "` is back-propagated in the same iteration";
    if (const std::string total = total_holding_term(freed->second, d, sid); !total.empty())
      return "`" + d + "` is a term of `" + total + "`, back-propagated in the same iteration";
    bool outside = false;
    const std::vector<Def> defs = f_.flow().reaching(sid, d, &outside);
    if (outside || defs.size() != 1 || defs[0].value == kNone) return "";
    const Def& df = defs[0];
    // The helper's call runs on every iteration too.
    if (!unconditional_in(f_.m.s(L.stmt).body, df.stmt)) return "";
    Id call = kNone;
    int k = -1;
    if (df.kind == DefKind::Assign) {
      call = df.value;
    } else if (df.kind == DefKind::Unpacked) {
      call = unpacked_call(df.stmt, df.value);
      k = unpacked_element(df.stmt, d);
      if (k < 0) return "";
    }
    if (call == kNone || f_.e(call).kind != ExprKind::Call) return "";
    const Id g = same_file_callee(call);
    if (g == kNone || !returns_backpropagated_scalar(g, k)) return "";
    return "`" + f_.m.funcs[g].name + "()` back-propagates the loss it returns";
  }

  // Every forward with grad on in `loop` runs a model of visible size (checks/model_size:
  // layers of literal sizes) of at most kSmallModel parameters, also through the same-file
  // helpers the loop calls (two levels): the most of them, else -1 (a model the file does
  // not size, a method of a model, a function of another module, or no forward at all).
  long loop_models_params(int loop) const {
    auto [it, fresh] = loop_params_.try_emplace(loop, -1);
    if (!fresh) return it->second;
    long most = -1;
    bool any = false;
    std::function<bool(const std::vector<int>&, int)> sized = [&](const std::vector<int>& calls, int depth) {
      for (int xi : calls) {
        const CallSite& x = f_.calls[xi];
        if (x.in_lambda || f_.grad_off(x)) continue;
        if (!f_.is_model_call(x)) {
          if (model_method_call(f_, x)) return false;  // `backbone.forward_features(x)`
          if (x.target_func != kNone && x.target_func != x.func &&
              (depth >= 2 || !sized(f_.calls_in(x.target_func), depth + 1)))
            return false;  // a helper's forwards count as the loop's
          continue;
        }
        any = true;
        const bool known = each_model_size(f_, x.func, f_.forward_receiver(x.call), [&](const ModelSize& sz) {
          if (sz.params < 0 || sz.params > kSmallModel) return false;
          most = std::max(most, sz.params);
          return true;
        });
        if (!known) return false;
      }
      return true;
    };
    it->second = sized(f_.loops[loop].calls, 0) && any ? most : -1;
    return it->second;
  }

  // The condition of an `if` around statement `sid` inside loop `loop` (its body, not an
  // `else`) that selects one step in so many (`if batch_idx % 500 == 0:`), or kNone.
  Id periodic_guard(Id sid, int loop) const {
    const Loop& L = f_.loops[loop];
    if (L.stmt == kNone) return kNone;
    Id found = kNone;
    std::function<bool(const std::vector<Id>&, Id, int)> walk = [&](const std::vector<Id>& body, Id guard, int depth) {
      if (depth > 32) return false;
      for (Id s : body) {
        if (s == sid) {
          found = guard;
          return true;
        }
        const Stmt& st = f_.m.s(s);
        if (st.kind == StmtKind::FunctionDef || st.kind == StmtKind::ClassDef) continue;
        if (st.kind == StmtKind::For || st.kind == StmtKind::While) continue;  // another loop's steps
        Id g = guard;
        if (st.kind == StmtKind::If && guard == kNone && selects_one_step_in_n(st.value, loop)) g = st.value;
        if (walk(st.body, g, depth + 1) || walk(st.orelse, guard, depth + 1) || walk(st.finalbody, guard, depth + 1))
          return true;
        for (const Handler& h : st.handlers)
          if (walk(h.body, guard, depth + 1)) return true;
      }
      return false;
    };
    walk(f_.m.s(L.stmt).body, kNone, 0);
    return found;
  }

  // `i % n == 0`, `(step + 1) % k == 0`, `not i % 10`: a test true on one step in so many
  // of loop `loop`, counted by the loop itself (its target, `for i, (x, y) in ...`, or a
  // counter it increments, `step += 1`); `epoch % 10` of an enclosing loop keeps every step
  // of one epoch in ten.
  bool selects_one_step_in_n(Id test, int loop) const {
    // (`% n` with n == 1 here keeps every step.)
    if (modulus_by_one(f_, test, f_.loops[loop].func)) return false;
    const Expr& t = f_.e(test);
    Id mod = kNone;
    if (t.kind == ExprKind::Compare && t.text == "=="sv && t.kids.size() == 2) {
      for (Id k : t.kids)
        if (f_.e(k).kind == ExprKind::BinOp && f_.e(k).text == "%"sv) mod = k;
    } else if (t.kind == ExprKind::UnaryOp && t.text == "not"sv && !t.kids.empty()) {
      mod = t.kids[0];
    }
    const Expr& m = f_.e(mod);
    if (m.kind != ExprKind::BinOp || m.text != "%"sv || m.kids.size() != 2 || f_.e(m.kids[0]).lit == LitKind::String ||
        f_.e(m.kids[0]).kind == ExprKind::FString)
      return false;
    const Loop& L = f_.loops[loop];
    std::set<std::string> counters;
    if (L.stmt != kNone && f_.m.s(L.stmt).kind == StmtKind::For)
      for (Id t : f_.m.s(L.stmt).targets)
        for_each_expr(f_.m, t, [&](Id y) {
          if (f_.e(y).kind == ExprKind::Name) counters.insert(f_.e(y).text);
          return true;
        });
    for (Id sid : L.stmts)
      if (const Stmt& st = f_.m.s(sid); st.kind == StmtKind::AugAssign && st.text == "+="sv && !st.targets.empty())
        counters.insert(f_.dotted(st.targets[0]));
    bool counted = false;
    for_each_expr(f_.m, m.kids[0], [&](Id y) {
      counted = counted || counters.count(f_.dotted(y)) > 0;
      return !counted;
    });
    return counted;
  }

  // `outputs = []` at the top of each batch, filled by an inner loop over the ensemble's
  // models (or a batch's items): it holds one batch's values and is dropped with it.
  // Also a container re-created in any enclosing loop and filled only by loops over a fixed
  // collection of models (`for net, l in zip(nets, losses)`): one entry per model.
  bool recreated_per_batch(const std::string& base, int loop) const {
    bool over_models = true;  // every loop from `loop` out to the re-creating one walks models
    for (int l = loop; l >= 0; l = f_.loops[l].parent) {
      const bool batches = iterates_batches(f_, l) || f_.is_eval_source(f_.loops[l].iter);
      if (assigned_in_loop(f_, l, base)) return l != loop && (batches || over_models);
      if (batches) return false;
      over_models = over_models && iterates_models(l);
    }
    return false;
  }

  // Emptied further down, before the iteration of the innermost loop can end
  // (`values.push_back(v)` in an update block that ends with `values.clear()`): what the
  // statement adds never outlives the iteration.
  bool emptied_later_in_block(const std::string& base) const {
    for (size_t k = blocks_.size(); k-- > 0;) {
      // 1: emptied; 0: a jump may leave the iteration first (or nothing empties it).
      const int r = emptied_after(blocks_[k], base);
      if (r >= 0) return r == 1;
      if (blocks_[k].loop_body) return false;
    }
    return false;
  }

  // After the statement being walked in `b`: 1 when a statement empties `base` before any jump
  // (`break`, `continue`, `return`, `raise`, also nested in an `if` or a `try`) can skip it; 0
  // when such a jump comes first; -1 when the block ends with neither.
  int emptied_after(const Block& b, const std::string& base) const {
    const BodyIndex& ix = body_index(*b.body);
    const size_t jump = ix.next_jump[b.pos + 1];
    auto e = ix.empties.find(base);
    if (e != ix.empties.end()) {
      auto first = std::upper_bound(e->second.begin(), e->second.end(), b.pos);
      if (first != e->second.end() && *first < jump) return 1;
    }
    return jump < b.body->size() ? 0 : -1;
  }
  // Per block body, asked once (a block of n statements asks for each): the index of the next
  // statement at or after each position that may jump, and the statements that empty a name
  // (`values.clear()`, `values = []`, `del values`), by name.
  struct BodyIndex {
    std::vector<size_t> next_jump;
    std::unordered_map<std::string, std::vector<size_t>> empties;
  };
  mutable std::map<const std::vector<Id>*, BodyIndex> body_index_;
  const BodyIndex& body_index(const std::vector<Id>& body) const {
    auto [it, fresh] = body_index_.try_emplace(&body);
    BodyIndex& ix = it->second;
    if (!fresh) return ix;
    ix.next_jump.assign(body.size() + 1, body.size());
    for (size_t i = body.size(); i-- > 0;) {
      const Id sid = body[i];
      const Stmt& s = f_.m.s(sid);
      ix.next_jump[i] = may_jump(sid) ? i : ix.next_jump[i + 1];
      if (s.kind == StmtKind::Expr && s.value != kNone && f_.e(s.value).kind == ExprKind::Call &&
          f_.callee_attr(s.value) == "clear"sv && f_.e(s.value).kids.size() == 1)
        if (const Id r = f_.callee_receiver(s.value); r != kNone && !f_.dotted(r).empty())
          ix.empties[f_.dotted(r)].push_back(i);
      if (s.kind == StmtKind::Assign && s.value != kNone && f_.e(s.value).kind == ExprKind::Sequence &&
          f_.e(s.value).kids.empty())
        for (Id t : s.targets)
          if (!f_.dotted(t).empty()) ix.empties[f_.dotted(t)].push_back(i);
      if (s.kind == StmtKind::Delete)
        for (Id t : s.targets)
          if (!f_.dotted(t).empty()) ix.empties[f_.dotted(t)].push_back(i);
    }
    for (auto& [name, at] : ix.empties) std::sort(at.begin(), at.end());
    return ix;
  }

  // Does the statement hold a jump out of straight-line code, at any depth (not inside a nested
  // function or class)?
  bool may_jump(Id sid) const {
    std::vector<Id> work{sid};
    for (size_t n = 0; !work.empty(); ++n) {
      if (n > 4096) return true;  // too large to tell: assume it may
      const Stmt& s = f_.m.s(work.back());
      work.pop_back();
      if (s.kind == StmtKind::Break || s.kind == StmtKind::Continue || s.kind == StmtKind::Return ||
          s.kind == StmtKind::Raise)
        return true;
      if (s.kind == StmtKind::FunctionDef || s.kind == StmtKind::ClassDef) continue;
      for (const std::vector<Id>* v : {&s.body, &s.orelse, &s.finalbody}) work.insert(work.end(), v->begin(), v->end());
      for (const auto& h : s.handlers) work.insert(work.end(), h.body.begin(), h.body.end());
    }
    return false;
  }

  bool iterates_models(int l) const {
    Id iter = f_.loops[l].iter;
    if (iter == kNone) return false;
    bool models = false;
    for_each_expr(f_.m, iter, [&](Id x) {
      const Expr& e = f_.e(x);
      if (e.kind == ExprKind::Name || e.kind == ExprKind::Attribute) {
        auto toks = Facts::name_tokens(e.text);
        if (!toks.empty() && in(toks.back(), {"models", "nets", "networks", "ensemble", "learners", "experts"}))
          models = true;
        return false;
      }
      return !models;
    });
    return models;
  }

  // A reduction over a dimension (`x.sum(0)`, `x.mean(dim=1)`) or a matrix product: not one
  // element, so `.item()` would raise.
  bool not_one_element(Id value) const {
    const Expr& v = f_.e(value);
    if (v.kind == ExprKind::BinOp && v.text == "@") return true;
    if (v.kind != ExprKind::Call) return false;
    const std::string& a = f_.callee_attr(value);
    return in(a, {"sum", "mean", "amax", "amin", "prod", "std", "var", "norm"}) &&
           (f_.arg(value, 0, "dim") != kNone);
  }

  std::string base_of(Id target) const {
    Id t = target;
    while (t != kNone && f_.e(t).kind == ExprKind::Subscript) t = f_.e(t).kids[0];
    return t == kNone ? "" : f_.dotted(t);
  }

  // A method that keeps a value in an attribute of its object (`self.running_loss += loss`)
  // and that a loop of the file calls once per batch (`for x, y in loader: agent.train(x, y)`):
  // the attribute outlives every call, so the calls are the loop's iterations. That call, or
  // nullptr.
  // The method keeps `base` across its calls: a method (not a module's forward, LL106's) of a
  // class whose other methods may reset the attribute (`resets`, filled), not one itself, with no
  // batch loop of its own (called once per epoch, it keeps one value per epoch), and the
  // attribute not read for a backward.
  bool keeps_across_calls(const std::string& base, std::set<Id>& resets) const {
    if (func_ == kNone || f_.class_of(func_) == kNone || !starts_with(base, "self.")) return false;
    if (f_.func_is_method_of_module(func_) && (f_.m.funcs[func_].name == "forward"sv || f_.part_of_forward(func_)))
      return false;
    // The class's methods (but its constructor) that bind the attribute afresh: resets.
    const Id cls = f_.class_of(func_);
    for (Id fn : f_.assigning_functions(base))
      if (fn != kNone && f_.m.funcs[fn].cls == cls && f_.m.funcs[fn].parent == kNone && f_.m.funcs[fn].name != "__init__"sv)
        resets.insert(fn);
    if (resets.count(func_) || read_for_backprop(base, flows_of(base))) return false;
    for (int l : f_.loops_in(func_))
      if (per_batch_loop(f_, l)) return false;
    return true;
  }

  // The same method called in a loop of another file of the run (ProjectView::
  // loop_called_methods) once per batch: that loop runs by this file's facts once per batch, or
  // the method trains (a step per call); not a loop that also calls a method resetting the
  // attribute. The caller's path, or "".
  std::string per_batch_caller_elsewhere(const std::string& base) const {
    if (!f_.project || f_.project->loop_called_methods.empty() || func_ == kNone || f_.class_of(func_) == kNone)
      return "";
    auto it = f_.project->loop_called_methods.find(f_.m.classes[f_.class_of(func_)].name + "." +
                                                   f_.m.funcs[func_].name);
    std::set<Id> resets;
    if (it == f_.project->loop_called_methods.end() || !keeps_across_calls(base, resets)) return "";
    const bool trains =
        f_.reaches(func_, [&](const CallSite& x) { return f_.is_backprop(x) || f_.optimizer_of_step(x) != kNone; });
    const std::string kept = base.substr(5, base.find('.', 5) == std::string::npos ? std::string::npos : base.find('.', 5) - 5);
    for (const auto& [call, path] : it->second) {
      if (!call->batch_loop && !trains) continue;
      if (std::any_of(call->methods.begin(), call->methods.end(), [&](const std::string& other) {
            return std::any_of(resets.begin(), resets.end(), [&](Id fn) { return f_.m.funcs[fn].name == other; });
          }))
        continue;
      // The caller's loop reads or clears what the method keeps (`torch.cat(agent.saved_log_probs)`
      // for the episode's loss, `del agent.saved_log_probs[:]`): kept on purpose, released there.
      if (std::find(call->attrs.begin(), call->attrs.end(), kept) != call->attrs.end()) continue;
      return path;
    }
    return "";
  }

  const CallSite* per_batch_caller(const std::string& base) const {
    std::set<Id> resets;
    if (!keeps_across_calls(base, resets)) return nullptr;
    for (int xi : f_.calls_to(func_)) {
      const CallSite& x = f_.calls[xi];
      if (x.func == func_ || x.in_lambda || f_.grad_off(x)) continue;
      const int l = batch_loop_of(f_, x);
      if (l < 0 || f_.loop_reaches(l, [&](const CallSite& y) { return resets.count(y.target_func) != 0; }))
        continue;
      return &x;
    }
    return nullptr;
  }

  void consider(Id sid, Id target_expr, Id value, const std::string& verb) {
    int loop = loop_at(sid);
    std::string base = base_of(target_expr);
    if (base.empty()) return;
    if (loop < 0) {
      if (const CallSite* caller = per_batch_caller(base)) report(sid, base, value, verb, -1, caller);
      else if (std::string elsewhere = per_batch_caller_elsewhere(base); !elsewhere.empty())
        report(sid, base, value, verb, -1, nullptr, elsewhere);
      return;
    }
    if (assigned_in_loop(f_, loop, base)) return;
    // Loops inside a module's own methods that neither train nor iterate data build its
    // forward computation (layers, tiles, skip connections); the caller back-propagates.
    // (Not an evaluation method of the module walking an iterable it is handed, `def
    // validate(self, it, loss): for batch in it:`: that loop walks data, whatever it is called.)
    if (f_.func_is_method_of_module(func_) && !iterates_batches(f_, loop) &&
        !f_.loop_reaches_backprop(loop) && !walks_data_handed_in(loop))
      return;
    // Anywhere, a loop that walks one module's layers and trains nothing (a plotting helper
    // collecting each layer's feature maps for one image): one forward's graph, kept once.
    if (!f_.loop_reaches_backprop(loop) && !iterates_batches(f_, loop) && walks_a_modules_layers(loop)) return;
    // The same inside `forward` itself (or a method it calls), even when the loop
    // back-propagates (a meta-learner taking inner-loop gradients for fast weights): one call
    // of the forward holds the list, and the graph it keeps is what the outer backward needs.
    // (A forward takes one batch: a loop there over something named for batches,
    // `for idx in num_batch_turn:`, walks that batch's items; only a loader is walked batch by
    // batch.)
    if (f_.func_is_method_of_module(func_) && (f_.m.funcs[func_].name == "forward"sv || f_.part_of_forward(func_)) &&
        !walks_a_loader(loop))
      return;
    if (accumulator_wanted(base, loop)) return;
    // Per-step states of a recurrent unroll (`h = cell(x[t], h); outs.append(h)`): the last
    // state's graph already holds every earlier step, so the list keeps nothing more (a
    // state carried across batches is LL103's).
    // Also a copy or a view of such a state (`frames.append(x_t.cpu())` in a sampling loop that
    // carries `x_t` round).
    if (carried_in_loop(f_, loop, f_.dotted(f_.history_base(value)))) return;
    if (recreated_per_batch(base, loop)) return;
    if (emptied_later_in_block(base)) return;
    // Read afterwards as a NumPy array with its history (`mu.cpu().numpy()`), which raises for
    // a tensor that requires grad: what it accumulates carries none.
    if (f_.read_as_numpy(func_, kNone, base, f_.m.s(sid).range.end)) return;
    report(sid, base, value, verb, loop, nullptr);
  }


  // One root cause, one finding: the accumulator (reported already) that is the only source
  // of the value's history, directly or through names computed from it
  // (`history.append((total_loss / n).cpu())`, `epoch_loss = loss_sum / n; losses.append(epoch_loss)`
  // after `total_loss += loss` is reported), else "". Accumulating a number there leaves this
  // value none.
  // Does the value carry history only through accumulators of back-propagated scalars
  // (freed_sums_: `loss_history.append(epoch_loss)`)? The walk's memo is set aside and restored.
  bool history_only_from_freed_sums(Id value) {
    if (freed_sums_.empty()) return false;
    auto memo = std::move(reach_memo_);
    reach_memo_.clear();
    numbered_.clear();
    for (const auto& [d, sids] : freed_sums_) numbered_.insert(sids.begin(), sids.end());
    const bool only = !carries(value, false);
    numbered_.clear();
    reach_memo_ = std::move(memo);
    return only;
  }

  std::string history_only_from_reported(Id value) {
    if (reported_sums_.empty()) return "";
    // Asked with the reported accumulations taken as numbers (all of them, then all but one
    // accumulator's, to name the one it comes from): by binding, so a name rebound to another
    // value (`epoch_loss = crit(model(x), y)` in a validation loop) keeps its own history.
    // The walk's memo is set aside and restored.
    auto memo = std::move(reach_memo_);
    auto carries_without = [&](const std::string& except) {
      reach_memo_.clear();
      numbered_.clear();
      for (const auto& [d, sids] : reported_sums_)
        if (d != except) numbered_.insert(sids.begin(), sids.end());
      return carries(value, false);
    };
    std::string source;
    if (!carries_without(""))
      for (const auto& [d, sids] : reported_sums_)
        if (carries_without(d)) {
          source = d;
          break;
        }
    numbered_.clear();
    reach_memo_ = std::move(memo);
    return source;
  }

  // The finding of consider(): in loop `loop`, or, with `caller`, in a method it calls once
  // per batch (loop -1).
  void report(Id sid, const std::string& base, Id value, const std::string& verb, int loop, const CallSite* caller,
              const std::string& caller_file = "") {
    const bool per_call = caller || !caller_file.empty();
    std::string vtext = ctx_.text(value);
    bool container = verb != "accumulates"sv;
    std::string shown = ctx_.brief(value);
    // `loss.item() if verbose else loss`: only the branch that keeps the tensor is fixed
    // (`(... if ... else ...).item()` would call `.item()` on the other branch's number).
    const Expr& whole = f_.e(value);
    Id fixed_branch = kNone;
    if (!container && whole.kind == ExprKind::Conditional && whole.kids.size() == 3) {
      const bool body = carries(whole.kids[0], false), other = carries(whole.kids[2], false);
      if (body != other) fixed_branch = body ? whole.kids[0] : whole.kids[2];
    }
    const Id fix_at = fixed_branch != kNone ? fixed_branch : value;
    if (fixed_branch != kNone) vtext = ctx_.text(fix_at);
    // The message shows the expression the fix writes (parenthesised where precedence
    // needs it): one set of facts for both.
    const Expr& v = f_.e(fix_at);
    bool simple = v.kind == ExprKind::Name || v.kind == ExprKind::Attribute || v.kind == ExprKind::Call ||
                  v.kind == ExprKind::Subscript;
    // A list or tuple display keeps its elements: each tensor among them needs detaching,
    // which no single edit of the display says.
    const bool display = container && v.kind == ExprKind::Sequence;
    // `.item()` turns a one-element tensor into a number; a value that is not one element
    // (`x.sum(0)`, `a.T @ a`, summed into `mu = torch.zeros(d)`) stays a tensor: detach it.
    const bool tensor_sum = !container && not_one_element(fix_at);
    const char* suffix = container || tensor_sum ? ".detach()" : ".item()";
    std::string repl = (simple ? vtext : "(" + vtext + ")") + suffix;
    const std::string shown_at = fixed_branch != kNone ? ctx_.brief(fix_at) : shown;
    std::string shown_fix = (simple ? shown_at : "(" + shown_at + ")") + suffix;
    std::string cure = display     ? "store `.detach()`ed copies of the tensors in it (add `.cpu()` if they are only logged)"
                       : container ? "store `" + shown_fix + "` (add `.cpu()` if it is only logged)"
                       : fixed_branch != kNone
                           ? "take `" + shown_fix + "` on the branch that keeps `" + shown_at + "` as well"
                           : "accumulate `" + shown_fix + "` instead";
    // A container the function trims to its last entries (`hist.pop(0)` past a length, `del
    // hist[0]`, `hist = hist[-k:]`, a `deque(maxlen=k)`): the graphs of a window stay, not all.
    const bool window = container && trimmed_to_a_window(base);
    std::string message = "`" + base + "` " + verb + " `" + shown +
                          "`, which carries autograd history: each " + (per_call ? "call's" : "iteration's") +
                          " graph stays reachable through `" +
                          base +
                          "` (every saved activation until backward() runs on it, its autograd nodes after), so "
                          "memory grows every " +
                          (caller            ? "call of `" + f_.m.funcs[func_].name + "()`, once per batch,"
                           : per_call ? "call of `" + f_.m.funcs[func_].name + "()`, once per batch (in a loop of `" +
                                            caller_file + "`),"
                                      : std::string("iteration")) +
                          (window ? " until its window of last entries is full (it is trimmed), each entry keeping "
                                    "a whole graph; "
                                  : " until it is released; ") +
                          cure;
    // Impact: a value back-propagated in the iteration has had its saved tensors freed, so
    // what stays is a scalar and its autograd nodes per iteration; in a loop whose trip count
    // is a small constant (a toy regression's 50 steps) that is bytes.
    Finding* fd = nullptr;
    if (per_call) {
      fd = report_memory_claim(ctx_, "LL102", f_.m.s(sid).range, std::move(message));
      if (fd && caller) fd->notes.push_back({f_.e(caller->call).range, "called once per batch here"});
    } else {
      long trips = bounded_trips(base, loop);
      // Re-created by an enclosing loop (a rollout's buffers, new every update) and filled by a
      // few constant iterations: it never holds more than that many graphs.
      bool recreated = false;
      for (int l = f_.loops[loop].parent; l >= 0 && !recreated; l = f_.loops[l].parent)
        recreated = assigned_in_loop(f_, l, base);
      // Re-created by an enclosing loop (each epoch), or a local of a function whose own loop
      // walks a collection once per call (`train_one_epoch()`), not a count of steps: it lives
      // one pass over the data.
      // (A name the module binds too and the function declares `global` lives on; a container
      // the function returns may be extended by its caller every epoch.)
      const bool one_pass_kept =
          recreated || (local_of_the_call(base) && (f_.bindings(kNone, base).empty() || !declared_global(base)) &&
                        !(container && returned_by_the_call(base)) && f_.loops[loop].parent < 0 &&
                        walks_a_collection(loop));
      // The back-propagated scalar the value is ("" when none), and a one-step-in-so-many
      // test around the statement: each asked once, for the condition and its message.
      const std::string freed_by = backward_scalar_of(value, loop, sid);
      const Id periodic = freed_by.empty() ? kNone : periodic_guard(sid, loop);
      const std::string from_sum = history_only_from_reported(value);
      // Back-propagated in the iteration, or kept only through sums of such values.
      const bool freed = !freed_by.empty() || backpropagated_in_loop(value, loop);
      if (freed && !container && trips > 0 && trips <= kFewIterations) {
        std::vector<Id>& sids = freed_sums_[base];
        if (std::find(sids.begin(), sids.end(), sid) == sids.end()) sids.push_back(sid);
        freed_sum_trips_ = std::max(freed_sum_trips_, trips);
      }
      // (Kept through such sums, `history.append(epoch_loss)` once per epoch: the loops around
      // it times the sums' own trips, few in all.)
      const bool only_freed =
          freed || (from_sum.empty() && trips > 0 && trips * std::max(freed_sum_trips_, 1L) <= kFewIterations &&
                    history_only_from_freed_sums(value));
      fd = !from_sum.empty()
               ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                  "its only history is `" + from_sum + "`'s, which is reported where it accumulates: "
                                  "accumulating a number there leaves this value none")
           : f_.project && !f_.project->backprop_method_imports.empty() && from_imported_backprop(value)
               ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                  "`" + shown + "` is what a method of another module's object returns after it "
                                  "back-propagated the loss itself: its saved tensors are freed, and such a method "
                                  "most often hands back a number")
           : trips > 0 && trips <= kFewIterations && only_freed
                        ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                           "the loops around it run at most " + std::to_string(trips) +
                                               " times and backward() already freed each graph's saved tensors, so "
                                               "it keeps that many values and their autograd nodes")
                    : epoch_loop(base, loop) && freed
                        ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                           "it keeps one value per epoch, and backward() already freed each graph's "
                                           "saved tensors, so it holds that many values and their autograd nodes")
                    : container && !display && !unseen_class_of(base).empty() && !kept_by_an_imported_method(sid)
                        ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                           "`" + base + "` holds a `" + unseen_class_of(base) +
                                               "`, a class this file does not show: what its method keeps is not "
                                               "known (a library's metric may detach or reduce its argument)")
                    : recreated && trips > 0 && trips <= kFewSteps
                        ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                           "`" + base + "` is re-created every iteration of the enclosing loop and "
                                               "filled at most " + std::to_string(trips) +
                                               " times in between, so it never holds more than that many graphs")
                    : local_of_the_call(base) && loop_makes_no_forward(loop)
                        ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                           "the loop runs no forward: each item adds a few autograd nodes to a graph "
                                           "built before it, and `" + base + "` dies when `" +
                                               f_.m.funcs[func_].name + "()` returns")
                    : local_of_the_call(base) && over_one_inputs_elements(loop)
                        ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                           "`" + base + "` is a local of `" + f_.m.funcs[func_].name +
                                               "()`, filled once per element of one input (a loop over a tensor's "
                                               "size) in a function its callers run once per item, so it holds that "
                                               "input's graphs until the call returns")
                    : trips > 0 && trips <= kFewSteps && local_of_the_call(base)
                        ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                           "`" + base + "` is a local of `" + f_.m.funcs[func_].name +
                                               "()` filled at most " + std::to_string(trips) +
                                               " times per call, so it holds that many graphs until the call returns")
                    : one_pass_kept && !freed_by.empty() && !container
                        ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                           freed_by +
                                               ", which frees its saved activations, and `" + base +
                                               "` is a sum that lives one pass over the data: it holds one tensor and "
                                               "each step's autograd nodes (host memory, about a kilobyte per operation "
                                               "of the forward), released when the pass ends")
                    : one_pass_kept && !freed_by.empty() && loop_models_params(loop) >= 0
                        ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                           freed_by +
                                               ", which frees its saved activations, every forward in the loop runs a model of visible size "
                                               "(at most " + param_count(loop_models_params(loop)) +
                                               " parameters), and `" + base + "` lives one pass over the data: it "
                                               "keeps a scalar and a few dozen autograd nodes per step, host memory")
                    : periodic != kNone
                        ? ctx_.report_weak("LL102", f_.m.s(sid).range, std::move(message),
                                           "it is kept only on the steps where `" + ctx_.brief(periodic) +
                                               "` (one in so many), and backward() already freed each graph's "
                                               "saved tensors, so it holds one value and its autograd nodes per such "
                                               "step")
                        : report_memory_claim(ctx_, "LL102", f_.m.s(sid).range, std::move(message));
      if (fd && !from_sum.empty())
        fd->notes.push_back({f_.m.s(reported_sums_[from_sum].front()).range, "`" + from_sum + "` accumulates here"});
    }
    // (Only a visible finding: a weak one, hidden by default, would hide this one with it.)
    if (fd && !fd->low_confidence && !container && !per_call) {
      std::vector<Id>& sids = reported_sums_[base];
      if (std::find(sids.begin(), sids.end(), sid) == sids.end()) sids.push_back(sid);
    }
    if (!fd || display) return;
    Fix fix;
    fix.title = container    ? "Store a detached tensor"
                : tensor_sum ? "Accumulate a detached tensor"
                             : "Accumulate a Python number with `.item()`";
    fix.safe = false;
    fix.edits.push_back({v.range.begin, v.range.end, repl});
    fd->fixes.push_back(std::move(fix));
  }

  void check_stmt(Id sid) {
    const Stmt& s = f_.m.s(sid);
    bool off = grad_off_at(sid);
    if (off) return;
    if (quiet_) {
      if (s.kind == StmtKind::Return && s.value != kNone) {
        Id v = s.value;
        const Expr& ve = f_.e(v);
        if (element_ >= 0 && ve.kind == ExprKind::Sequence && static_cast<size_t>(element_) < ve.kids.size())
          v = ve.kids[element_];
        if (carries(v, off)) returned_history_ = true;
      }
      return;
    }
    if (s.kind == StmtKind::AugAssign && !s.targets.empty() && s.text == "+=" &&
        f_.e(s.value).kind == ExprKind::Sequence && f_.e(s.value).text != "dict"sv) {
      // `history += [fake]` extends a list: it keeps the elements (the fix detaches them).
      for (Id k : f_.e(s.value).kids)
        if (carries(k, off)) {
          consider(sid, s.targets[0], k, "keeps (`+=`)");
          break;
        }
    } else if (s.kind == StmtKind::AugAssign && !s.targets.empty() && in(s.text, {"+=", "-=", "*=", "/="})) {
      if (carries(s.value, off)) consider(sid, s.targets[0], s.value, "accumulates");
    } else if (s.kind == StmtKind::Assign && s.targets.size() == 1 && s.value != kNone &&
               f_.e(s.value).kind == ExprKind::BinOp) {
      const std::string& t = f_.dotted(s.targets[0]);
      const Expr& b = f_.e(s.value);
      if (!t.empty() && (b.text == "+" || b.text == "-"sv || b.text == "*")) {
        for (int side = 0; side < 2; ++side) {
          Id self = b.kids[side], other = b.kids[1 - side];
          if (f_.dotted(self) == t && carries(other, off)) {
            consider(sid, s.targets[0], other, "accumulates");
            break;
          }
        }
      }
    } else if (s.kind == StmtKind::Expr && s.value != kNone && f_.e(s.value).kind == ExprKind::Call) {
      Id call = s.value;
      const std::string& attr = f_.callee_attr(call);
      Id recv = f_.callee_receiver(call);
      if (recv == kNone) return;
      const Expr& ce = f_.e(call);
      Id val = kNone;
      if (in(attr, {"append", "extend", "appendleft"}) && ce.kids.size() >= 2) val = ce.kids[1];
      else if (attr == "add"sv && ce.kids.size() >= 2 && holds_a_set(recv)) val = ce.kids[1];
      else if (attr == "insert"sv && ce.kids.size() >= 3) val = ce.kids[2];
      else if (runs_accumulating_method(recv, attr) && ce.kids.size() >= 2 && !f_.is_optimizer(func_, recv) &&
               !f_.is_model_value(func_, recv))
        val = ce.kids[1];
      if (val == kNone || !carries(val, off)) return;
      std::string verb = in(attr, {"append", "extend", "add", "appendleft", "insert"})
                             ? "keeps (`." + attr + "`)"
                             : "keeps (via `." + attr + "`, which accumulates its argument)";
      if (!in(attr, {"append", "extend", "add", "appendleft", "insert"})) {
        // meter.update(loss): the fix is `.item()`, the verb is an accumulation.
        verb = "accumulates (via `." + attr + "`)";
      }
      consider(sid, recv, val, verb);
    }
  }

  void update_taint(Id sid) {
    const Stmt& s = f_.m.s(sid);
    bool off = grad_off_at(sid);
    if ((s.kind == StmtKind::Assign || s.kind == StmtKind::AnnAssign) && s.value != kNone) {
      bool c = carries(s.value, off);
      // `loss, sample_size, logs = criterion(model, sample)`: only the loss carries history
      // when a loss function's tuple is unpacked (a model's outputs all do).
      bool loss_tuple = false;
      const CallSite* model_call = nullptr;
      Id unpacked = c ? unpacked_call(sid, s.value) : kNone;
      if (unpacked != kNone) {
        auto ci = f_.call_index.find(unpacked);
        if (ci != f_.call_index.end() && f_.is_model_call(f_.calls[ci->second])) model_call = &f_.calls[ci->second];
        loss_tuple = model_call == nullptr;
      }
      for (Id t : s.targets) {
        if (f_.e(t).kind == ExprKind::Sequence) {
          const Expr& v = f_.e(s.value);
          for (size_t k = 0; k < f_.e(t).kids.size(); ++k) {
            const std::string& d = f_.dotted(f_.e(t).kids[k]);
            if (d.empty()) continue;
            detached_.erase(d);
            Id callee = unpacked != kNone ? same_file_callee(unpacked) : kNone;
            bool ck = v.kind == ExprKind::Sequence && k < v.kids.size() ? carries(v.kids[k], off)
                      : !c                                           ? false
                      : callee != kNone && loss_tuple ? returns_history(ctx_, callee, static_cast<int>(k), unpacked)
                      : loss_tuple                    ? Facts::named_like_a_loss(f_.last_component(d))
                      : model_call != nullptr         ? model_element_history(*model_call, static_cast<int>(k))
                                                      : c;
            if (ck) tainted_.insert(d); else tainted_.erase(d);
          }
        } else {
          const std::string& d = f_.dotted(t);
          if (d.empty()) continue;
          detached_.erase(d);
          if (c) tainted_.insert(d); else tainted_.erase(d);
        }
      }
    } else if (s.kind == StmtKind::Expr && s.value != kNone && f_.e(s.value).kind == ExprKind::Call &&
               (f_.callee_attr(s.value) == "detach_"sv || f_.callee_attr(s.value) == "requires_grad_"sv)) {
      // loss.detach_() drops the history in place.
      const std::string& d = f_.dotted(f_.callee_receiver(s.value));
      if (!d.empty()) {
        tainted_.erase(d);
        detached_.insert(d);
      }
    } else if (s.kind == StmtKind::AugAssign && !s.targets.empty()) {
      const std::string& d = f_.dotted(s.targets[0]);
      if (!d.empty() && carries(s.value, off)) tainted_.insert(d);
    }
  }

  // Does the block always end in `return`, `raise` or `sys.exit()` (through `with` bodies and
  // `if`s whose branches all do)?
  bool always_exits(const std::vector<Id>& body, int depth) const {
    if (body.empty() || depth > 16) return false;
    const Stmt& last = f_.m.s(body.back());
    if (last.kind == StmtKind::Return || last.kind == StmtKind::Raise || ends_the_process(f_, body.back())) return true;
    if (last.kind == StmtKind::With) return always_exits(last.body, depth + 1);
    if (last.kind == StmtKind::If) return always_exits(last.body, depth + 1) && always_exits(last.orelse, depth + 1);
    return false;
  }

  // `doubled` counts enclosing loops already walked twice: nested loops are walked twice
  // only a few levels deep, so deeply nested input cannot make this exponential.
  void walk(const std::vector<Id>& body, int depth, int doubled = 0, bool loop_body = false) {
    if (depth > kMaxDepth) return;
    blocks_.push_back({&body, 0, loop_body});
    struct Pop {
      std::vector<Block>& v;
      ~Pop() { v.pop_back(); }
    } pop{blocks_};
    for (size_t i = 0; i < body.size(); ++i) {
      const Id sid = body[i];
      const Stmt& s = f_.m.s(sid);
      if (s.kind == StmtKind::FunctionDef || s.kind == StmtKind::ClassDef) continue;
      blocks_.back().pos = i;
      check_stmt(sid);
      update_taint(sid);
      if (s.kind == StmtKind::For || s.kind == StmtKind::While) {
        // Twice, so values carried from one iteration into the next are seen.
        walk(s.body, depth + 1, doubled + 1, true);
        if (doubled < 3) walk(s.body, depth + 1, doubled + 1, true);
        walk(s.orelse, depth + 1, doubled);
        continue;
      }
      if (const int t = s.kind == StmtKind::If ? truth(s.value) : -1; t >= 0) {
        const std::vector<Id>& taken = t ? s.body : s.orelse;
        walk(taken, depth + 1, doubled);
        // A taken branch that returns leaves the rest of this block unreachable.
        if (always_exits(taken, 0)) return;
        continue;
      }
      walk(s.body, depth + 1, doubled);
      walk(s.orelse, depth + 1, doubled);
      for (const auto& h : s.handlers) walk(h.body, depth + 1, doubled);
      walk(s.finalbody, depth + 1, doubled);
    }
  }
};

// Parameters of `func` that `call` binds to a literal truth value (`val=True`, `False`,
// `None`, `0`): their tests take one branch in the callee.
std::map<std::string, bool> literal_flags(const Facts& f, Id func, Id call) {
  std::map<std::string, bool> out;
  if (call == kNone) return out;
  const Function& g = f.m.funcs[func];
  const Expr& x = f.e(call);
  if (f.has_kwargs_splat(call)) return out;
  auto value = [&](Id a, bool* v) {
    const Expr& l = f.e(a);
    if (l.kind != ExprKind::Literal) return false;
    if (l.lit == LitKind::True || l.lit == LitKind::False || l.lit == LitKind::None) {
      *v = l.lit == LitKind::True;
      return true;
    }
    if (l.lit == LitKind::Int) {
      *v = l.text != "0"sv;
      return true;
    }
    return false;
  };
  for (size_t k = 1; k < x.kids.size(); ++k)
    if (f.e(x.kids[k]).kind == ExprKind::Starred) return out;
  for (size_t i = 0; i < g.params.size(); ++i) {
    const Id a = f.argument_for(call, func, g.params[i]);
    bool v;
    if (a != kNone) {
      if (value(a, &v)) out[g.params[i]] = v;
    } else if (i < g.param_defaults.size() && !g.param_defaults[i].empty()) {
      // Left at a literal default (`def batch_predict(x, to_numpy=True)`).
      const std::string& d = g.param_defaults[i];
      out[g.params[i]] = !(d == "False" || d == "None" || d == "0" || d == "0.0" || d == "''" || d == "\"\"");
    }
  }
  return out;
}

bool returns_history(CheckContext& ctx, Id func, int element, Id call) {
  // Memoised per file and element; a recursive call in progress counts as "no history".
  if (element >= 31) element = -1;
  auto& memo = ctx.returns_history_memo;
  const Id key = func * 32 + static_cast<Id>(element + 1);
  auto it = memo.find(key);
  if (it != memo.end() && it->second == 0) return false;
  // A call that fixes flags of the callee (`_run_batch(x, y, val=True)`) reads its branches
  // under them, unmemoised.
  if (auto fixed = literal_flags(ctx.facts, func, call); !fixed.empty() && !ctx.facts.func_entry_off(func)) {
    const bool fresh = it == memo.end();
    if (fresh) memo[key] = 0;
    const bool r = History(ctx, func).returns(ctx.facts.m.funcs[func].body, element, std::move(fixed));
    if (fresh) memo.erase(key);
    return r;
  }
  if (it != memo.end()) return it->second == 2;
  memo[key] = 0;
  bool r = ctx.facts.func_entry_off(func) ? false
                                          : History(ctx, func).returns(ctx.facts.m.funcs[func].body, element);
  memo[key] = r ? 2 : 1;
  return r;
}

}  // namespace

void summarize_LL102(const Facts& f, FileSummary& out) {
  // Methods whose returned value carries history (not `forward`, which a caller runs as a
  // forward; not a special method), each asked without reporting.
  {
    std::vector<Finding> none;
    CheckContext ctx(f, {}, none);
    for (Id fn = 0; fn < f.m.funcs.size(); ++fn) {
      const Function& g = f.m.funcs[fn];
      if (g.cls == kNone || g.parent != kNone || g.name == "forward"sv || starts_with(g.name, "__")) continue;
      // Only a training method (it runs a forward and back-propagates: `train_step()`), whose
      // caller has no backward of its own to free the graph; a method returning a loss for the
      // caller to back-propagate is read where it is called in its own file. (Cheap first:
      // every file of the run reads this summary, and an imported class's method it names
      // costs the importer a second analysis.)
      const std::vector<int>& in_fn = f.calls_in(fn);
      if (std::none_of(in_fn.begin(), in_fn.end(), [&](int ci) { return f.callee_attr(f.calls[ci].call) == "backward"sv; }) ||
          std::none_of(in_fn.begin(), in_fn.end(), [&](int ci) { return f.is_backward(f.calls[ci]); }) ||
          std::none_of(in_fn.begin(), in_fn.end(), [&](int ci) { return f.is_model_call(f.calls[ci]); }))
        continue;
      bool returns_value = false;
      for (Id sid : f.stmts_in(fn))
        returns_value = returns_value || (f.m.s(sid).kind == StmtKind::Return && f.m.s(sid).value != kNone);
      if (returns_value && returns_history(ctx, fn)) out.history_methods.push_back(f.m.classes[g.cls].name + "." + g.name);
    }
  }
  // Methods keeping a value on their object: `self.x += v`, `self.x.append(v)` (any container
  // growth), `self.x[k] = v`.
  for (Id fn = 0; fn < f.m.funcs.size(); ++fn) {
    const Function& g = f.m.funcs[fn];
    if (g.cls == kNone || g.name == "__init__"sv) continue;
    bool keeps = false;
    for (Id sid : f.stmts_in(fn)) {
      const Stmt& st = f.m.s(sid);
      if (st.kind == StmtKind::AugAssign && !st.targets.empty() && starts_with(f.dotted(st.targets[0]), "self."))
        keeps = true;
      if (st.kind == StmtKind::Assign)
        for (Id t : st.targets)
          if (f.e(t).kind == ExprKind::Subscript && starts_with(f.dotted(f.e(t).kids[0]), "self.")) keeps = true;
      if (keeps) break;
    }
    for (int ci : f.calls_in(fn)) {
      if (keeps) break;
      const Id call = f.calls[ci].call;
      keeps = in(f.callee_attr(call), {"append", "extend", "insert", "add", "update", "setdefault"}) &&
              starts_with(f.dotted(f.callee_receiver(call)), "self.");
    }
    if (keeps) out.keeping_methods.push_back(f.m.classes[g.cls].name + "." + g.name);
  }
  // Methods of imported classes called in loops, on a receiver every binding of which builds
  // the class (`agent = Agent(4, 2)`), with grad not disabled at the call.
  // One entry per (loop, object): the loop once per batch or not, the methods it calls on the
  // object and the attributes of the object it reads or clears itself.
  std::map<std::pair<int, std::string>, size_t> entry_of;
  std::unordered_map<int, int> batch_of_loop;
  std::vector<bool> oversized;
  // The attribute reads of an object, by position (`agent.saved_log_probs` at byte 1234), built on
  // first need: asked of a loop's range by binary search.
  std::map<std::string, std::vector<std::pair<uint32_t, std::string>>> reads_of;
  auto attribute_reads = [&](const std::string& owner) -> const std::vector<std::pair<uint32_t, std::string>>& {
    auto [it, fresh] = reads_of.try_emplace(owner);
    if (fresh) {
      for (const Expr& x : f.m.exprs)
        if (x.kind == ExprKind::Attribute && !x.kids.empty() && f.dotted(x.kids[0]) == owner)
          it->second.emplace_back(x.range.begin, x.text);
      std::sort(it->second.begin(), it->second.end());
    }
    return it->second;
  };
  for (const CallSite& c : f.calls) {
    if (c.loop < 0 || c.in_lambda || c.target_func != kNone) continue;
    std::string owner, attr, q;
    const Id recv = f.callee_receiver(c.call);
    // (`Name(...)` of an imported class: its qualified name has a dot, a capital after the last.)
    const std::string& built = f.e(f.e(c.call).kids[0]).qname;
    const size_t dot = built.rfind('.');
    if (dot != std::string::npos && dot + 1 < built.size() && std::isupper(static_cast<unsigned char>(built[dot + 1])) &&
        !starts_with(built, "torch") && c.stmt != kNone) {
      // The loop builds an instance of an imported class (`cam = GradCAM(model, layer)`): its
      // constructor runs once per iteration (LL105's hooking constructors). Not a `with` item,
      // whose exit may undo what the constructor did.
      const Stmt& st = f.m.s(c.stmt);
      if (st.kind == StmtKind::With) continue;
      owner = st.kind == StmtKind::Assign && st.value == c.call && st.targets.size() == 1 ? f.dotted(st.targets[0])
                                                                                         : std::string();
      if (owner.empty()) owner = "@" + std::to_string(c.call);
      attr = "__init__";
      q = built;
    } else {
      if (recv == kNone) continue;
      owner = f.dotted(recv);
      if (owner.empty() || owner == "self"sv || f.grad_off(c)) continue;
      attr = f.callee_attr(c.call);
      // (Every binding of the function, not the ones reaching the call: a summary's question.)
      q = f.imported_class_built_by(f.bindings(c.func, owner));
      if (q.empty()) continue;
    }
    // The loop that runs once per batch around the call, else its own loop. (Asked once per
    // loop: every call of a loop body has the same answer.)
    auto [memo, fresh_loop] = batch_of_loop.try_emplace(c.loop, 0);
    if (fresh_loop) memo->second = batch_loop_of(f, c);
    const int batch = memo->second;
    const int loop = batch >= 0 ? batch : c.loop;
    auto [at, fresh] = entry_of.try_emplace({loop, owner}, out.loop_method_calls.size());
    if (fresh) {
      FileSummary::LoopMethodCall entry;
      entry.cls = q;
      entry.batch_loop = batch >= 0;
      const Range& r = f.loops[loop].range;
      if (owner[0] != '@') {  // (an instance no name holds has no attribute read)
        const auto& reads = attribute_reads(owner);
        for (auto it = std::lower_bound(reads.begin(), reads.end(), std::make_pair(r.begin, std::string()));
             it != reads.end() && it->first < r.end; ++it)
          entry.attrs.push_back(it->second);
      }
      std::sort(entry.attrs.begin(), entry.attrs.end());
      entry.attrs.erase(std::unique(entry.attrs.begin(), entry.attrs.end()), entry.attrs.end());
      out.loop_method_calls.push_back(std::move(entry));
      oversized.push_back(out.loop_method_calls.back().attrs.size() > FileSummary::LoopMethodCall::kLoopNames);
    }
    FileSummary::LoopMethodCall& entry = out.loop_method_calls[at->second];
    if (entry.cls != q) oversized[at->second] = true;
    if (std::find(entry.methods.begin(), entry.methods.end(), attr) == entry.methods.end()) {
      if (entry.methods.size() >= FileSummary::LoopMethodCall::kLoopNames) oversized[at->second] = true;
      else entry.methods.push_back(attr);
    }
  }
  // (A loop of more names than the bound records nothing: it decides nothing elsewhere.)
  std::vector<FileSummary::LoopMethodCall> kept;
  for (size_t i = 0; i < out.loop_method_calls.size(); ++i)
    if (!oversized[i]) {
      // Methods are also read as attributes (`agent.update`): only the others are the object's data.
      FileSummary::LoopMethodCall& e = out.loop_method_calls[i];
      std::vector<std::string> data;
      for (const std::string& a : e.attrs)
        if (std::find(e.methods.begin(), e.methods.end(), a) == e.methods.end()) data.push_back(a);
      e.attrs = std::move(data);
      std::sort(e.methods.begin(), e.methods.end());
      kept.push_back(std::move(e));
    }
  out.loop_method_calls = std::move(kept);
}

void check_LL102(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  const Module& m = f.m;
  History(ctx, kNone).run(m.body);
  for (Id fn = 0; fn < m.funcs.size(); ++fn) {
    History(ctx, fn).run(m.funcs[fn].body);
  }
}

}  // namespace ll
