#include "checks/common.hpp"

#include "checks/flow.hpp"

#include <algorithm>

#include <map>
#include <set>
#include <unordered_set>

namespace ll {

bool mentions_any(const Facts& f, Id x, const std::set<std::string>& names, Id seed) {
  bool hit = false;
  for_each_expr(f.m, x, [&](Id y) {
    if ((seed != kNone && y == seed) || names.count(f.dotted(y))) hit = true;
    return !hit;
  });
  return hit;
}

void follow_flow(const Facts& f, const std::vector<Id>& stmts, std::set<std::string>& names, int hops,
                 bool appends, Id seed) {
  auto bind = [&](Id sid) {
    const Stmt& st = f.m.s(sid);
    bool grew = false;
    // `x = f(name)`, `x += name`, and `for x in name:` (a container's elements); a store
    // into an element, `losses[0] = f(name)`, flows into the container.
    if ((st.kind == StmtKind::Assign || st.kind == StmtKind::AugAssign || st.kind == StmtKind::For) &&
        st.value != kNone && mentions_any(f, st.value, names, seed))
      for (Id t : st.targets)
        for_each_expr(f.m, t, [&](Id y) {
          const Expr& ye = f.e(y);
          Id stored = ye.kind == ExprKind::Subscript && !ye.kids.empty() ? ye.kids[0] : y;
          const std::string& d = f.dotted(stored);
          if (!d.empty()) grew |= names.insert(d).second;
          // A field of a local record (`out.cost = total_cost`, then `return out`) flows into
          // the record, as an element flows into its container. Only a name the function binds
          // itself: not `self`, a parameter (`args.last_acc = acc`) or a global.
          if (ye.kind == ExprKind::Attribute && !ye.kids.empty() && f.e(ye.kids[0]).kind == ExprKind::Name) {
            const std::string& rec = f.e(ye.kids[0]).text;
            auto at = f.stmt_index.find(sid);
            const Id func = at == f.stmt_index.end() ? kNone : f.stmt_sites[at->second].func;
            if (func != kNone && rec != "self"sv && rec != "cls"sv && rec != "this"sv && !f.is_param(func, rec) &&
                !f.own_bindings(func, rec).empty())
              grew |= names.insert(rec).second;
          }
          return ye.kind == ExprKind::Sequence;
        });
    if (appends && st.kind == StmtKind::Expr && st.value != kNone && f.e(st.value).kind == ExprKind::Call &&
        in(f.callee_attr(st.value), {"append", "extend", "insert"}) && mentions_any(f, st.value, names, seed)) {
      const std::string& d = f.dotted(f.callee_receiver(st.value));
      if (!d.empty()) grew |= names.insert(d).second;
    }
    return grew;
  };
  for (int hop = 0; hop < hops; ++hop) {
    bool grew = false;
    for (Id sid : stmts) grew |= bind(sid);
    if (!grew) break;
  }
}

// A callback of a training framework (`def predict(self, learn): learn.preds =
// learn.model(x)`): the model is reached through a parameter other than self, and the
// function stores its results on that same object for the framework's loss and backward.
// Its name says nothing about evaluation.
static bool callback_on_a_state_object(const Facts& f, const CallSite& c, Id callee) {
  if (c.func == kNone) return false;
  const std::string& d = f.dotted(callee);
  const std::string root = d.substr(0, d.find('.'));
  if (root.empty() || root == d || root == "self"sv) return false;
  if (!f.is_param(c.func, root)) return false;
  for (const StmtSite& ss : f.stmt_sites) {
    if (ss.func != c.func) continue;
    const Stmt& st = f.m.s(ss.stmt);
    if (st.kind != StmtKind::Assign) continue;
    for (Id t : st.targets)
      if (f.e(t).kind == ExprKind::Attribute && f.dotted(t).rfind(root + ".", 0) == 0) return true;
  }
  return false;
}

// Does the forward's result leave its loop into a value that an enclosing loop
// back-propagates? An attack or a multi-view step runs the model over views in an inner
// loop, collects the outputs, and the step loop around it calls backward() (or
// torch.autograd.grad) on a loss built from them: the inner loop never trains, but its
// graph is the point. Follows the names the result is bound or appended to, a few hops.
bool feeds_enclosing_training(const Facts& f, const CallSite& c) {
  int train_loop = -1;
  for (int l = f.loops[c.loop].parent; l >= 0 && train_loop < 0; l = f.loops[l].parent)
    if (f.loop_trains(l)) train_loop = l;
  if (train_loop < 0 || c.stmt == kNone) return false;
  std::set<std::string> names;
  follow_flow(f, {c.stmt}, names, 1, true, c.call);
  follow_flow(f, f.loops[train_loop].stmts, names, 4, true, c.call);
  auto mentions = [&](Id x) { return mentions_any(f, x, names, c.call); };
  const std::vector<Id>& body = f.loops[train_loop].stmts;
  if (names.empty()) return false;
  for (Id sid : body)
    if (sid < f.calls_in_stmt.size())
      for (int ci : f.calls_in_stmt[sid])
        // In the training loop itself (not in a sibling training loop of an epoch), after
        // the forward: a validation loop's `loss` is not the next batch's `loss.backward()`.
        if (f.calls[ci].loop == train_loop && f.is_backprop(f.calls[ci]) &&
            f.e(f.calls[ci].call).range.begin > f.e(c.call).range.begin && mentions(f.calls[ci].call))
          return true;
  return false;
}

bool walks_data(const Facts& f, int loop, Id func) {
  for (int l = loop; l >= 0; l = f.loops[l].parent) {
    const std::string& it = f.dotted(f.loops[l].iter);
    if (f.is_eval_source(f.loops[l].iter) || iterates_batches(f, l) || (!it.empty() && f.is_param(func, it)) ||
        it.find("loader") != std::string::npos)
      return true;
  }
  return false;
}

std::string eval_loop_reason(const Facts& f, const CallSite& c) {
  if (c.loop < 0) return "";
  auto trains = [&](const CallSite& x) { return f.is_backprop(x) || f.optimizer_of_step(x) != kNone; };
  if (f.loop_trains(c.loop)) return "";
  if (feeds_enclosing_training(f, c)) return "";
  // The most concrete evidence first: the model was put in eval mode, then the data the
  // loop reads, then only the function's name.
  const Id callee = f.forward_receiver(c.call);
  const std::string& d = f.dotted(callee);
  std::string eval_source;
  for (int l = c.loop; l >= 0 && eval_source.empty(); l = f.loops[l].parent)
    if (f.is_eval_source(f.loops[l].iter)) {
      const std::string& src = f.dotted(f.loops[l].iter);
      eval_source = src.empty() ? "in a loop over an evaluation set" : "in a loop over `" + src + "`";
    }
  // A module's own forward (and a helper it calls) runs its submodules in its caller's grad
  // mode, even after `self.decoder.eval()` under a flag: the caller's evaluation loop is where
  // no_grad belongs, and where it is judged. Only a loop of the forward over data (an
  // evaluation set, a loader, batches handed in) is an evaluation loop of its own.
  if (eval_source.empty() && (d == "self" || starts_with(d, "self.")) && f.in_module_forward(c.func)) {
    if (!walks_data(f, c.loop, c.func)) return "";
  }
  if (!d.empty() && f.eval_called_before(c.func, d, f.e(c.call).range.begin))
    return "after `" + f.eval_switch(c.func, d, f.e(c.call).range.begin) + "`" +
           (eval_source.empty() ? "" : ", " + eval_source);
  if (!eval_source.empty()) return eval_source;
  if (c.func != kNone) {
    const std::string& name = f.m.funcs[c.func].name;
    // (A `test_*` function the program's code calls, in this file or another module, is no
    // pytest test, which only pytest calls: `test_single_case(net, image)` of a segmentation
    // project's `test_util.py`.)
    const bool called_test = starts_with(name, "test_") && (!f.callers(c.func).empty() || f.called_by_code(c.func));
    if ((f.is_eval_function_name(name) || called_test) && !(f.is_test_file && f.reaches(c.func, trains)) &&
        !f.called_from_training(c.func) && !f.part_of_forward(c.func) && !callback_on_a_state_object(f, c, callee))
      return "in evaluation function `" + name + "`";
  }
  return "";
}

Finding* report_memory_claim(CheckContext& ctx, std::string_view rule, const Range& where, std::string message) {
  const Facts& f = ctx.facts;
  if (f.cpu_only_program())
    return ctx.report_weak(rule, where, std::move(message),
                           "nothing in this program places a tensor on a GPU, so this costs host memory of a CPU run");
  if (f.cpu_only_at(where.begin))
    return ctx.report_weak(rule, where, std::move(message),
                           "nothing before this point of the program places a tensor on a GPU, so this costs host "
                           "memory of a CPU run");
  Finding* fd = ctx.report(rule, where, std::move(message));
  // A module of definitions without GPU evidence: its program may still be CPU-only, which
  // only the whole project shows (the engine's project-level policy).
  if (fd && !f.has_gpu_evidence()) fd->memory_claim = true;
  return fd;
}

// Every value bound to `name` in `func` reads a size of a tensor or a sequence
// (`x.shape[0]`, `len(items)`, `out.size(0)`).
bool size_of_a_tensor(const Facts& f, Id func, const std::string& name) {
  std::vector<Id> values = f.bindings(func, name);
  if (values.empty()) return false;
  for (Id v : values) {
    bool sized = false;
    for_each_expr(f.m, v, [&](Id x) {
      const Expr& e = f.e(x);
      if (e.kind == ExprKind::Attribute && e.text == "shape"sv) sized = true;
      if (e.kind == ExprKind::Call) {
        const Expr& callee = f.e(e.kids[0]);
        if ((callee.kind == ExprKind::Name && callee.text == "len"sv && f.qual(e.kids[0]).empty()) ||
            (callee.kind == ExprKind::Attribute && in(callee.text, {"size", "numel"})))
          sized = true;
      }
      return !sized;
    });
    if (!sized) return false;
  }
  return true;
}

Id size_read_of(const Facts& f, Id x) {
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::Call && e.kids.size() >= 2 && f.e(e.kids[0]).kind == ExprKind::Name &&
      f.e(e.kids[0]).text == "len"sv)
    return e.kids[1];
  if (e.kind == ExprKind::Call && f.callee_attr(x) == "size"sv) return f.callee_receiver(x);
  if (e.kind == ExprKind::Subscript && !e.kids.empty() && f.e(e.kids[0]).kind == ExprKind::Attribute &&
      f.e(e.kids[0]).text == "shape"sv && !f.e(e.kids[0]).kids.empty())
    return f.e(e.kids[0]).kids[0];
  return kNone;
}

// Does `x` read the size of one batch (`len(batch)`, `img_batch.size(0)`, `x_batch.shape[0]`)?
static bool size_of_one_batch(const Facts& f, Id x) {
  const Id of = size_read_of(f, x);
  if (of == kNone || (f.e(of).kind != ExprKind::Name && f.e(of).kind != ExprKind::Attribute)) return false;
  for (const auto& t : Facts::name_tokens(f.e(of).text))
    if (t == "batch"sv || t == "minibatch"sv) return true;
  return false;
}

bool last_word_names_a_model(std::string_view name) {
  const auto toks = Facts::name_tokens(name);
  return !toks.empty() && in(toks.back(), {"model"sv, "pipeline"sv, "net"sv, "network"sv});
}

bool iterates_batches(const Facts& f, int loop) {
  if (loop < 0) return false;
  Id iter = f.loops[loop].iter;
  if (iter == kNone) return false;
  // `range(0, img_batch.size(0), chunk_size)`: chunks of one batch, whatever the step is named.
  {
    const Expr& r = f.e(iter);
    if (r.kind == ExprKind::Call && f.e(r.kids[0]).kind == ExprKind::Name && f.e(r.kids[0]).text == "range"sv &&
        f.qual(r.kids[0]).empty() && r.kids.size() >= 2 && r.kw.empty() &&
        size_of_one_batch(f, r.kids[r.kids.size() == 2 ? 1 : 2]))
      return false;
  }
  bool found = false;
  // `range(config.dataset.n_folds)`: a count, named by its last part; the namespaces it is
  // read from (`config.dataset`) say nothing of what the loop walks.
  const bool count = f.e(iter).kind == ExprKind::Call && f.e(f.e(iter).kids[0]).kind == ExprKind::Name &&
                     f.e(f.e(iter).kids[0]).text == "range"sv && f.qual(f.e(iter).kids[0]).empty();
  const Id stop = count && f.e(iter).kids.size() >= 2 && f.e(iter).kids.size() <= 4
                      ? f.e(iter).kids[f.e(iter).kids.size() == 2 ? 1 : 2]
                      : kNone;
  for_each_expr(f.m, iter, [&](Id x) {
    if (found) return false;
    const Expr& e = f.e(x);
    // `range(batch.shape[0])`, `range(len(batch))`, `range(batch.size(0))`: the size of one
    // batch counts the items of that batch; the loop walks them, not batches.
    if (e.kind == ExprKind::Attribute && e.text == "shape"sv) return false;
    if (e.kind == ExprKind::Call) {
      const Expr& callee = f.e(e.kids[0]);
      if ((callee.kind == ExprKind::Name && callee.text == "len"sv) ||
          (callee.kind == ExprKind::Attribute && in(callee.text, {"size", "numel", "dim"})))
        return false;
    }
    if (e.kind == ExprKind::Call) {
      const std::string& q = f.callee_qual(x);
      if (q == "torch.utils.data.DataLoader"sv || q == "torch.utils.data.dataloader.DataLoader"sv) found = true;
      return !found;
    }
    // `batch_n = list(out.shape)[0]; range(batch_n)`: a size read from a tensor, the same.
    if (e.kind == ExprKind::Name && size_of_a_tensor(f, f.loops[loop].func, e.text)) return false;
    if (e.kind == ExprKind::Name || e.kind == ExprKind::Attribute) {
      const auto toks = Facts::name_tokens(e.text);
      // `range(self.ghost_batch_size)`, `range(batch_len)` as the bound: the size of a batch
      // counts its items (or its chunks), not batches. (As the step, `range(0, len(data),
      // batch_size)`, it walks data batch by batch.)
      if (x == stop && !toks.empty() && in(toks.back(), {"size", "sz", "len", "length"})) return false;
      for (const auto& t : toks)
        if (t == "loader"sv || t == "dataloader"sv || t == "batches"sv || t == "batch"sv || t == "dataset"sv || t == "dl"sv ||
            t == "ds"sv || t == "loaders"sv || t == "iterator"sv)
          found = true;
      return !found && e.kind == ExprKind::Attribute && !count;
    }
    return true;
  });
  // A list or tuple of literals written out (`for batch_size in [1, 4, 8]:`, or a name whose
  // binding that reaches the loop is one): settings to try, whatever the name says, not batches.
  // (Asked only of a loop the names took for one over batches.)
  if (found && f.e(iter).kind == ExprKind::Name) {
    auto literals = [&](Id x) {
      const Expr& d = f.e(x);
      if (d.kind != ExprKind::Sequence || (d.text != "list"sv && d.text != "tuple"sv) || d.kids.empty()) return false;
      for (Id k : d.kids)
        if (f.e(k).kind != ExprKind::Literal) return false;
      return true;
    };
    const std::vector<Id> vs = f.bindings_at(f.loops[loop].func, f.e(iter).text, iter);
    if (vs.size() == 1 && literals(vs[0])) return false;
  }
  return found;
}

long int_arithmetic(std::string_view op, long a, long b) {
  if (a < 0 || b < 0 || a > 1'000'000'000L || b > 1'000'000'000L) return -1;
  if (op == "+"sv) return a + b;
  if (op == "*"sv) return a * b > 1'000'000'000'000L ? -1 : a * b;
  if (op == "-"sv) return a >= b ? a - b : -1;
  if (op == "//"sv) return b > 0 ? a / b : -1;
  return -1;
}

long int_literal_text(std::string_view text) {
  long v = 0;
  size_t digits = 0;
  for (char ch : text) {
    if (ch == '_') continue;
    if (ch < '0' || ch > '9' || ++digits > 9) return -1;
    v = v * 10 + (ch - '0');
  }
  return digits == 0 ? -1 : v;
}

long int_literal_value(const Expr& e) {
  if (e.kind != ExprKind::Literal) return -1;
  return int_literal_text(e.text);
}

bool int_constant(const Facts& f, Id func, Id x, long* out, int depth) {
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::Literal) {
    *out = int_literal_value(e);
    return *out >= 0;
  }
  // `rows + 1`, `n * 2` over constants.
  if (e.kind == ExprKind::BinOp && e.kids.size() == 2 && depth < 4) {
    long a = 0, b = 0;
    if (!int_constant(f, func, e.kids[0], &a, depth + 1) || !int_constant(f, func, e.kids[1], &b, depth + 1))
      return false;
    *out = int_arithmetic(e.text, a, b);
    return *out >= 0;
  }
  if (e.kind != ExprKind::Name || depth > 1) return false;
  auto vals = f.bindings(func, e.text);
  if (vals.size() == 1) return int_constant(f, func, vals[0], out, depth + 1);
  if (depth > 0) return false;
  // A parameter never rebound, for which every same-file call passes an integer literal
  // (`train_model(model, 100, ...)`): the largest of them.
  if (!vals.empty() || func == kNone) return false;
  if (!f.is_param(func, e.text)) return false;
  // Called from another file of the run too: those calls are not visible here.
  if (f.project && f.project->external_calls.count(f.m.funcs[func].name)) return false;
  // (A call that leaves it out passes its literal default: `def show(model, num_images=6)`.)
  const Function& fn = f.m.funcs[func];
  long fallback = -1;
  for (size_t k = 0; k < fn.params.size() && k < fn.param_defaults.size(); ++k)
    if (fn.params[k] == e.text && !fn.param_defaults[k].empty()) fallback = int_literal_text(fn.param_defaults[k]);
  const std::vector<int>& callers = f.callers(func);
  if (callers.empty() || callers.size() > 16) return false;
  long most = -1;
  for (int ci : callers) {
    // (`evaluate(*args)`, `evaluate(model, it, **cfg)`: what they pass is not visible.)
    for (Id k : f.e(f.calls[ci].call).kids)
      if (f.e(k).kind == ExprKind::Starred) return false;
    const Id a = f.argument_for(f.calls[ci].call, func, e.text);
    const long v = a == kNone ? fallback : f.e(a).kind == ExprKind::Literal ? int_literal_value(f.e(a)) : -1;
    if (v < 0) return false;
    most = std::max(most, v);
  }
  *out = most;
  return true;
}

bool modulus_by_one(const Facts& f, Id test, Id func) {
  if (test == kNone) return false;
  const Expr& t = f.e(test);
  Id mod = kNone;
  if (t.kind == ExprKind::Compare && t.text == "=="sv && t.kids.size() == 2) {
    for (size_t i = 0; i < 2; ++i)
      if (f.e(t.kids[i]).kind == ExprKind::BinOp && f.e(t.kids[i]).text == "%"sv && int_literal_value(f.e(t.kids[1 - i])) == 0)
        mod = t.kids[i];
  } else if (t.kind == ExprKind::UnaryOp && t.text == "not"sv && !t.kids.empty()) {
    mod = t.kids[0];
  }
  if (mod == kNone) return false;
  const Expr& m = f.e(mod);
  if (m.kind != ExprKind::BinOp || m.text != "%"sv || m.kids.size() != 2 || f.e(m.kids[0]).lit == LitKind::String ||
      f.e(m.kids[0]).kind == ExprKind::FString)
    return false;
  long n = -1;
  return int_constant(f, func, m.kids[1], &n) && n == 1;
}

namespace {

bool never_none_param(const Facts& f, Id func, const std::string& param, int depth);

// Is argument `a`, written in function `caller`, never None: a literal other than None, or a
// parameter of the caller it never rebinds that is itself never None.
bool never_none_argument(const Facts& f, Id caller, Id a, int depth) {
  const Expr& x = f.e(a);
  if (x.kind == ExprKind::Literal) return x.lit != LitKind::None;
  return x.kind == ExprKind::Name && caller != kNone && f.is_param(caller, x.text) && f.bindings(caller, x.text).empty() &&
         never_none_param(f, caller, x.text, depth + 1);
}

bool never_none_param(const Facts& f, Id func, const std::string& param, int depth) {
  // (At most 32 callers a level: the relays multiply, and a default is rarely that shared.)
  if (func == kNone || depth > 2 || f.callers(func).empty() || f.callers(func).size() > 32) return false;
  const Function& fn = f.m.funcs[func];
  if (f.project && f.project->external_calls.count(fn.name)) return false;
  std::string_view fallback;
  for (size_t k = 0; k < fn.params.size() && k < fn.param_defaults.size(); ++k)
    if (fn.params[k] == param) fallback = fn.param_defaults[k];
  for (int ci : f.callers(func)) {
    const CallSite& c = f.calls[ci];
    for (Id k : f.e(c.call).kids)
      if (f.e(k).kind == ExprKind::Starred) return false;  // `run(*args)`, `run(**cfg)`: not visible
    const Id a = f.argument_for(c.call, func, param);
    if (a == kNone ? fallback.empty() || fallback == "None"sv : !never_none_argument(f, c.func, a, depth)) return false;
  }
  return true;
}

}  // namespace

bool iterates_parameters(const Facts& f, Id iter) {
  bool params = false;
  if (iter != kNone)
    for_each_expr(f.m, iter, [&](Id x) {
      if (f.e(x).kind == ExprKind::Call) {
        const std::string& a = f.callee_attr(x);
        if (a == "parameters"sv || a == "named_parameters"sv) params = true;
      }
      return !params;
    });
  return params;
}

bool dead_none_fallback(const Facts& f, Id func, Id value) {
  if (func == kNone || value == kNone) return false;
  const Id sid = f.stmt_of(value);
  if (sid == kNone) return false;
  for (Id s : f.stmts_in(func)) {
    const Stmt& st = f.m.s(s);
    if (st.kind != StmtKind::If || st.value == kNone || std::find(st.body.begin(), st.body.end(), sid) == st.body.end())
      continue;
    const Expr& t = f.e(st.value);
    if (t.kind != ExprKind::Compare || t.text != "is"sv || t.kids.size() != 2) return false;
    const Expr& p = f.e(t.kids[0]);
    const Expr& none = f.e(t.kids[1]);
    if (p.kind != ExprKind::Name || none.kind != ExprKind::Literal || none.lit != LitKind::None) return false;
    return f.is_param(func, p.text) && never_none_param(f, func, p.text, 0);
  }
  return false;
}

// Does the loop's first iteration reach a `break` at the top of its body: an unconditional
// one, or one under a counter test that already holds (`count = 0` before the loop, `count +=
// 1` in the body, then `if count >= 1: break`)?
static bool breaks_in_first_iteration(const Facts& f, const Loop& L) {
  std::map<std::string, long> added;  // counter -> sum of `+= <int>` seen so far in the body
  for (Id sid : f.m.s(L.stmt).body) {
    const Stmt& s = f.m.s(sid);
    // `break`, `return`, `raise`, or a call that ends the program (`sys.exit()` at the end of
    // a visualisation loop's first pass), run on every pass.
    if (s.kind == StmtKind::Break || s.kind == StmtKind::Return || s.kind == StmtKind::Raise ||
        ends_the_process(f, sid))
      return true;
    if (s.kind == StmtKind::AugAssign && s.text == "+="sv && s.targets.size() == 1 &&
        f.e(s.targets[0]).kind == ExprKind::Name && s.value != kNone) {
      long n = int_literal_value(f.e(s.value));
      if (n >= 0) added[f.e(s.targets[0]).text] += n;
      continue;
    }
    if (s.kind != StmtKind::If || s.body.empty() || f.m.s(s.body[0]).kind != StmtKind::Break || s.value == kNone)
      continue;
    const Expr& test = f.e(s.value);
    if (test.kind != ExprKind::Compare || test.kids.size() != 2 || f.e(test.kids[0]).kind != ExprKind::Name) continue;
    const std::string& counter = f.e(test.kids[0]).text;
    auto it = added.find(counter);
    long bound = int_literal_value(f.e(test.kids[1]));
    if (it == added.end() || bound < 0) continue;
    // The counter's one plain binding in the function is a literal: its value before the loop.
    long start = -1;
    int plain = 0;
    for (Id v : f.bindings(L.func, counter)) {
      if (f.e(v).kind == ExprKind::Literal) start = int_literal_value(f.e(v));
      if (f.e(v).kind != ExprKind::Literal || ++plain > 1) start = -1;
    }
    if (start < 0) continue;
    const long now = start + it->second;
    if ((test.text == ">="sv && now >= bound) || (test.text == ">"sv && now > bound) ||
        (test.text == "=="sv && now == bound))
      return true;
  }
  return false;
}

long range_size(const Facts& f, Id func, Id x);
long subplot_grid_size(const Facts& f, Id func, Id x, const Range& loop);

// A loop that ends when a counter it increments on every pass reaches a constant
// (`images_so_far += 1` for each image of a batch, then `if images_so_far == num_images:
// return`): at most that many trips. The increment must not sit under an `if` (counting
// misclassified images runs until enough are found); the exit is a `return`, or a `break` of
// this loop itself. 0 when there is no such bound.
static long counter_exit_trips(const Facts& f, const Loop& L) {
  std::map<std::string, bool> counted;  // counter -> incremented on every pass (not under an `if`)
  std::vector<std::pair<Id, bool>> tests;  // `if c == K:` that leaves the loop, with its counter test
  struct Item { Id sid; bool under_if; bool in_inner_loop; };
  std::vector<Item> work;
  for (Id sid : f.m.s(L.stmt).body) work.push_back({sid, false, false});
  auto leaves = [&](const std::vector<Id>& body, bool inner) {
    for (Id b : body) {
      const StmtKind k = f.m.s(b).kind;
      if (k == StmtKind::Return || (k == StmtKind::Break && !inner)) return true;
    }
    return false;
  };
  for (size_t seen = 0; !work.empty() && seen < 10000; ++seen) {
    const Item it = work.back();
    work.pop_back();
    const Stmt& s = f.m.s(it.sid);
    if (s.kind == StmtKind::FunctionDef || s.kind == StmtKind::ClassDef) continue;
    if (s.kind == StmtKind::AugAssign && s.text == "+="sv && s.targets.size() == 1 &&
        f.e(s.targets[0]).kind == ExprKind::Name && s.value != kNone && int_literal_value(f.e(s.value)) > 0) {
      auto [c, fresh] = counted.try_emplace(f.e(s.targets[0]).text, !it.under_if);
      if (!fresh) c->second = c->second || !it.under_if;
    }
    // (An exit test under another `if` or in a handler, `if debug: ... if seen == 3: break`,
    // ends the loop only on some runs.)
    if (s.kind == StmtKind::If && s.value != kNone && !it.under_if && leaves(s.body, it.in_inner_loop))
      tests.push_back({s.value, true});
    const bool inner = it.in_inner_loop || s.kind == StmtKind::For || s.kind == StmtKind::While;
    const bool cond = it.under_if || s.kind == StmtKind::If || s.kind == StmtKind::Try;
    for (const auto* part : {&s.body, &s.orelse, &s.finalbody})
      for (Id b : *part) work.push_back({b, cond, inner});
    for (const Handler& h : s.handlers)
      for (Id b : h.body) work.push_back({b, true, inner});
  }
  long fewest = 0;
  for (const auto& [test_id, unused] : tests) {
    const Expr& test = f.e(test_id);
    if (test.kind != ExprKind::Compare || test.kids.size() != 2 || f.e(test.kids[0]).kind != ExprKind::Name ||
        !in(test.text, {"=="sv, ">="sv, ">"sv}))
      continue;
    auto c = counted.find(f.e(test.kids[0]).text);
    long bound = -1, start = 0;
    if (c == counted.end() || !c->second || !int_constant(f, L.func, test.kids[1], &bound)) continue;
    // Its one plain binding in the function, a literal, is where it starts.
    int plain = 0;
    for (Id v : f.bindings(L.func, c->first)) {
      if (f.e(v).kind != ExprKind::Literal || ++plain > 1) start = -1;
      else start = int_literal_value(f.e(v));
    }
    if (start < 0 || plain != 1) continue;
    const long trips = bound - start + (test.text == ">"sv ? 1 : 0);
    if (trips > 0 && (fewest == 0 || trips < fewest)) fewest = trips;
  }
  return fewest;
}

long constant_trips_uncached(const Facts& f, int loop, long limit);

// (Asked per statement of a loop by several rules: answered once per loop and limit.)
long constant_trips(const Facts& f, int loop, long limit) {
  if (loop < 0) return 0;
  auto [it, fresh] = f.constant_trips_memo_.try_emplace({loop, limit}, 0);
  if (fresh) it->second = constant_trips_uncached(f, loop, limit);
  return it->second;
}

long constant_trips_uncached(const Facts& f, int loop, long limit) {
  const Loop& L = f.loops[loop];
  if (L.stmt != kNone && breaks_in_first_iteration(f, L)) return 1;
  if (L.stmt != kNone)
    if (const long n = counter_exit_trips(f, L); n > 0) return n <= limit ? n : 0;
  Id iter = L.iter;
  if (L.stmt == kNone || iter == kNone) return 0;
  // `for ix, (img, target) in enumerate(loader): ... if ix == 3: break`: the index ends the
  // loop after a few trips (a demo cell that draws three predictions).
  if (const Stmt& fs = f.m.s(L.stmt); fs.kind == StmtKind::For && fs.targets.size() == 1 &&
                                      f.e(fs.targets[0]).kind == ExprKind::Sequence && !f.e(fs.targets[0]).kids.empty() &&
                                      f.e(iter).kind == ExprKind::Call && python_builtin_call(f, iter) &&
                                      f.e(f.e(iter).kids[0]).text == "enumerate"sv && f.e(iter).kids.size() == 2) {
    const Expr& index = f.e(f.e(fs.targets[0]).kids[0]);
    for (Id sid : fs.body) {
      const Stmt& st = f.m.s(sid);
      // (A test at the top of the body ends the loop before the pass it tests does anything:
      // `if ix == 1: break` first runs the rest of the body once.)
      const bool first = sid == fs.body.front();
      if (st.kind != StmtKind::If || st.value == kNone || !st.orelse.empty() || st.body.empty() ||
          f.m.s(st.body.back()).kind != StmtKind::Break)
        continue;
      const Expr& c = f.e(st.value);
      if (c.kind != ExprKind::Compare || c.kids.size() != 2 || index.kind != ExprKind::Name) continue;
      const Expr& lhs = f.e(c.kids[0]);
      const long k = int_literal_value(f.e(c.kids[1]));
      if (lhs.kind != ExprKind::Name || lhs.text != index.text || k < 0) continue;
      const long trips = c.text == "=="sv || c.text == ">="sv ? k + 1 : c.text == ">"sv ? k + 2 : 0;
      if (trips > 0) {
        const long full = first ? std::max(trips - 1, 1L) : trips;
        return full <= limit ? full : 0;
      }
    }
  }
  // A list or tuple written out (`for name in ["gpt2", "t5-small"]:`), directly or through a
  // name bound once to one that nothing appends to: one trip per element.
  // A dict written out counts its keys (`{"best": path}`), also through `.keys()`,
  // `.items()`, `.values()` and `sorted()` / `list()` / `enumerate()` around it.
  auto display_size = [&](Id x) -> long {
    const Expr& d = f.e(x);
    if (d.kind != ExprKind::Sequence || (d.text != "list"sv && d.text != "tuple"sv && d.text != "dict"sv)) return 0;
    for (Id k : d.kids)
      if (f.e(k).kind == ExprKind::Starred) return 0;
    if (d.text == "dict"sv) return d.kids.size() % 2 ? 0 : static_cast<long>(d.kids.size() / 2);
    return static_cast<long>(d.kids.size());
  };
  // A progress bar around the iterable (`tqdm(range(n))`, `trange(n, desc=...)`), directly or
  // through a name bound once to it (`epoch_range = trange(num_epochs)`): the same trips.
  auto progress_bar = [&](Id x) -> Id {
    if (f.e(x).kind != ExprKind::Call || f.e(x).kids.size() < 2) return kNone;
    const std::string& q = f.callee_qual(x);
    if (!starts_with(q, "tqdm")) return kNone;
    return f.last_component(q) == "trange"sv || f.last_component(q) == "tqdm"sv ? x : kNone;
  };
  if (f.e(iter).kind == ExprKind::Name) {
    const std::vector<Id> vs = f.bindings_at(L.func, f.e(iter).text, iter);
    if (vs.size() == 1 && progress_bar(vs[0]) != kNone) iter = vs[0];
  }
  if (const Id bar = progress_bar(iter); bar != kNone) {
    if (f.last_component(f.callee_qual(bar)) == "trange"sv) {
      // `trange(a[, b[, step]], desc=...)`: range's positional arguments.
      long v[3] = {0, 0, 1};
      const Expr& c = f.e(bar);
      size_t n = 0;
      // (The keywords name the trailing arguments.)
      for (size_t k = 1; k + c.kw.size() < c.kids.size() && n < 3; ++k) {
        if (!int_constant(f, L.func, c.kids[k], &v[n])) return 0;
        ++n;
      }
      if (n == 0) return 0;
      const long lo = n == 1 ? 0 : v[0], hi = n == 1 ? v[0] : v[1], step = n == 3 ? v[2] : 1;
      if (step <= 0 || hi <= lo) return 0;
      const long trips = (hi - lo + step - 1) / step;
      return trips <= limit ? trips : 0;
    }
    iter = f.e(bar).kids[1];
  }
  for (int hops = 0; hops < 4 && f.e(iter).kind == ExprKind::Call; ++hops) {
    const Expr& c = f.e(iter);
    const Expr& callee = f.e(c.kids[0]);
    if (callee.kind == ExprKind::Attribute && c.kids.size() == 1 && in(callee.text, {"keys", "items", "values"}))
      iter = callee.kids[0];
    else if (c.kids.size() == 2 && c.kw.empty() && python_builtin_call(f, iter) &&
             in(callee.text, {"sorted", "list", "tuple", "enumerate", "reversed"}))
      iter = c.kids[1];
    else
      break;
  }
  long shown = display_size(iter);
  if (shown == 0 && f.e(iter).kind == ExprKind::Name) {
    // (The binding that reaches the loop: a notebook's later cell may bind the name anew.)
    const std::vector<Id> vs = f.bindings_at(L.func, f.e(iter).text, iter);
    if (vs.size() == 1) shown = display_size(vs[0]);
    // Only a name bound to a display is worth the walk over the file's calls for appends.
    for (size_t ci = 0; shown > 0 && ci < f.calls.size(); ++ci) {
      const Id call = f.calls[ci].call;
      if (in(f.callee_attr(call), {"append"sv, "extend"sv, "insert"sv, "update"sv, "setdefault"sv}) &&
          f.callee_receiver(call) != kNone && f.dotted(f.callee_receiver(call)) == f.e(iter).text)
        shown = 0;
    }
    // Keys added by subscript (`paths[name] = p`).
    for (size_t si = 0; shown > 0 && si < f.stmt_sites.size(); ++si)
      for (Id t : f.m.s(f.stmt_sites[si].stmt).targets)
        if (t != kNone && f.e(t).kind == ExprKind::Subscript && f.dotted(f.e(t).kids[0]) == f.e(iter).text)
          shown = 0;
  }
  if (shown > 0) return shown <= limit ? shown : 0;
  if (f.e(iter).kind != ExprKind::Call) return 0;
  // `zip(axes.flatten(), picks)`: as many trips as its shortest sized argument.
  if (python_builtin_call(f, iter) && f.e(f.e(iter).kids[0]).text == "zip"sv && f.e(iter).kw.empty()) {
    long fewest = 0;
    for (size_t k = 1; k < f.e(iter).kids.size(); ++k) {
      const Id a = f.e(iter).kids[k];
      long n = display_size(a);
      if (n == 0) n = range_size(f, L.func, a);
      if (n == 0) n = subplot_grid_size(f, L.func, a, L.range);
      if (n > 0 && (fewest == 0 || n < fewest)) fewest = n;
    }
    return fewest > 0 && fewest <= limit ? fewest : 0;
  }
  const long count = range_size(f, L.func, iter);
  return count <= limit ? count : 0;
}

// Are the two expressions the same value written the same way (`len(paths)` twice)? Names,
// attributes, calls, literals and operators, structurally; nothing with a side effect but calls
// of the same callee on the same arguments.
static bool same_expression(const Facts& f, Id a, Id b, int depth = 0) {
  if (a == kNone || b == kNone || depth > 8) return a == b;
  const Expr& x = f.e(a);
  const Expr& y = f.e(b);
  if (x.kind != y.kind || x.text != y.text || x.qname != y.qname || x.kids.size() != y.kids.size() ||
      x.kw.size() != y.kw.size())
    return false;
  for (size_t k = 0; k < x.kids.size(); ++k)
    if (!same_expression(f, x.kids[k], y.kids[k], depth + 1)) return false;
  return true;
}

// A step that is a fixed share of the stop it walks to (`range(0, len(paths), len(paths) //
// 10)`, or through a name bound once to that share; `int(n / 10)`): about that many trips, plus
// one for a remainder. 0 when it is not so.
static long trips_of_a_share(const Facts& f, Id func, Id stop, Id step) {
  if (f.e(step).kind == ExprKind::Name) {
    const std::vector<Id> vs = f.bindings(func, f.e(step).text);
    if (vs.size() != 1) return 0;
    step = vs[0];
  }
  // `max(1, n // k)`: the same share, floored at one.
  if (f.e(step).kind == ExprKind::Call && python_builtin_call(f, step) && f.e(step).kids.size() == 3 &&
      f.e(f.e(step).kids[0]).text == "max"sv && int_literal_value(f.e(f.e(step).kids[1])) == 1)
    step = f.e(step).kids[2];
  if (f.e(step).kind == ExprKind::Call && python_builtin_call(f, step) && f.e(step).kids.size() == 2 &&
      f.e(f.e(step).kids[0]).text == "int"sv)
    step = f.e(step).kids[1];
  const Expr& d = f.e(step);
  if (d.kind != ExprKind::BinOp || d.kids.size() != 2 || (d.text != "//"sv && d.text != "/"sv)) return 0;
  const long k = int_literal_value(f.e(d.kids[1]));
  if (k <= 0 || !same_expression(f, d.kids[0], stop)) return 0;
  return k + 1;
}

// `range(...)` of constant bounds: its length, else 0.
long range_size(const Facts& f, Id func, Id x) {
  const Expr& call = f.e(x);
  if (call.kind != ExprKind::Call) return 0;
  const Expr& callee = f.e(call.kids[0]);
  if (!(callee.kind == ExprKind::Name && callee.text == "range"sv && callee.qname.empty())) return 0;
  if (!call.kw.empty() || call.kids.size() < 2 || call.kids.size() > 4) return 0;
  long v[3] = {0, 0, 1};
  size_t n = call.kids.size() - 1;
  if (n == 3 && int_constant(f, func, call.kids[1], &v[0]) && v[0] == 0)
    if (const long trips = trips_of_a_share(f, func, call.kids[2], call.kids[3]); trips > 0) return trips;
  for (size_t k = 0; k < n; ++k)
    if (!int_constant(f, func, call.kids[1 + k], &v[k])) return 0;
  long lo = n == 1 ? 0 : v[0], hi = n == 1 ? v[0] : v[1], step = n == 3 ? v[2] : 1;
  if (step <= 0 || hi <= lo) return 0;
  return (hi - lo + step - 1) / step;
}

// The axes of a figure's grid, flattened (`fig, axes = plt.subplots(2, 3)`, then
// `axes.flatten()`, `axes.ravel()`, `axes.flat`): rows x columns, else 0.
long subplot_grid_size(const Facts& f, Id func, Id x, const Range& loop) {
  const Expr* y = &f.e(x);
  if (y->kind == ExprKind::Call && y->kids.size() == 1 && f.e(y->kids[0]).kind == ExprKind::Attribute &&
      in(f.e(y->kids[0]).text, {"flatten", "ravel"}))
    y = &f.e(f.e(y->kids[0]).kids[0]);
  else if (y->kind == ExprKind::Attribute && y->text == "flat"sv)
    y = &f.e(y->kids[0]);
  else
    return 0;
  if (y->kind != ExprKind::Name) return 0;
  // The last statement before the loop that binds it, `fig, axes = plt.subplots(...)` (a
  // notebook's earlier cell may have drawn another grid under the same name); the loop must
  // not rebind it.
  Id grid = kNone;
  uint32_t last = 0;
  bool later = false;
  const uint32_t at = f.e(x).range.begin;
  for (const auto& site : f.stmt_sites) {
    const Stmt& st = f.m.s(site.stmt);
    if (site.func != func || st.kind != StmtKind::Assign) continue;
    for (Id t : st.targets)
      for_each_expr(f.m, t, [&](Id z) {
        if (f.e(z).kind == ExprKind::Name && f.e(z).text == y->text) {
          if (st.range.begin >= at) {
            later = later || (loop.begin <= st.range.begin && st.range.begin < loop.end);
          } else if (st.range.begin >= last) {
            last = st.range.begin;
            const Expr& tt = f.e(t);
            grid = tt.kind == ExprKind::Sequence && tt.kids.size() == 2 && tt.kids[1] == z ? st.value : kNone;
          }
        }
        return true;
      });
  }
  if (later || grid == kNone || f.e(grid).kind != ExprKind::Call) return 0;
  const std::string& q = f.callee_qual(grid);
  if (q != "matplotlib.pyplot.subplots"sv) return 0;
  long rows = 1, cols = 1;
  Id r = f.arg(grid, 0, "nrows"), c = f.arg(grid, 1, "ncols");
  if ((r != kNone && !int_constant(f, func, r, &rows)) || (c != kNone && !int_constant(f, func, c, &cols))) return 0;
  return rows > 0 && cols > 0 ? rows * cols : 0;
}

bool python_builtin_call(const Facts& f, Id call) {
  static const std::unordered_set<std::string_view> kBuiltins = {
      "abs", "all", "any", "bool", "dict", "divmod", "enumerate", "filter", "float", "format", "getattr",
      "hasattr", "hash", "id", "int", "isinstance", "issubclass", "iter", "len", "list", "map", "max", "min",
      "next", "pow", "print", "range", "repr", "reversed", "round", "set", "setattr", "sorted", "str", "sum",
      "super", "tuple", "type", "zip"};
  if (f.m.lang != Lang::Python || f.e(call).kind != ExprKind::Call) return false;
  const Expr& callee = f.e(f.e(call).kids[0]);
  if (callee.kind != ExprKind::Name || !callee.qname.empty() || !kBuiltins.count(callee.text)) return false;
  const Id fn = f.function_at(callee.range.begin);
  return f.class_at(callee.text, callee.range.begin) == kNone && !f.is_function_name(fn, callee.text) &&
         f.bindings(fn, callee.text).empty();
}

// Tensors made by this process from nothing (`torch.randn(64, 3)`, `torch.arange(n)`, through
// `.to(device)`, `.repeat(k)`, arithmetic and the names bound to them): synthetic data, never a
// dataset whose passes an epoch counts; random draws differ per rank unless seeded alike.
bool made_tensor(const Facts& f, Id func, Id x, int depth) {
  if (x == kNone || depth > 4) return false;
  const Expr& e = f.e(x);
  switch (e.kind) {
    case ExprKind::Name: {
      std::vector<Id> vs = f.bindings(func, e.text);
      if (vs.empty()) return false;
      for (Id v : vs)
        if (!made_tensor(f, func, v, depth + 1)) return false;
      return true;
    }
    case ExprKind::BinOp:
      return (f.e(e.kids[0]).kind == ExprKind::Literal || made_tensor(f, func, e.kids[0], depth + 1)) &&
             (f.e(e.kids[1]).kind == ExprKind::Literal || made_tensor(f, func, e.kids[1], depth + 1));
    case ExprKind::Call: {
      const std::string& q = f.callee_qual(x);
      if (in(q, {"torch.randn"sv, "torch.rand"sv, "torch.randint"sv, "torch.randn_like"sv, "torch.rand_like"sv,
                 "torch.randint_like"sv, "torch.normal"sv, "torch.randperm"sv, "torch.arange"sv, "torch.zeros"sv,
                 "torch.ones"sv, "torch.full"sv, "torch.empty"sv, "torch.linspace"sv, "numpy.random.randn"sv,
                 "numpy.random.rand"sv, "numpy.random.randint"sv, "numpy.random.normal"sv,
                 "numpy.random.uniform"sv, "numpy.random.random"sv}))
        return true;
      Id r = f.callee_receiver(x);
      return r != kNone && in(f.callee_attr(x), {"to"sv, "cuda"sv, "float"sv, "long"sv, "half"sv, "int"sv,
                                                  "double"sv, "view"sv, "reshape"sv, "unsqueeze"sv, "squeeze"sv,
                                                  "abs"sv, "repeat"sv, "expand"sv, "clone"sv, "contiguous"sv})
                 ? made_tensor(f, func, r, depth + 1)
                 : false;
    }
    default:
      return false;
  }
}

std::string training_not_at_stake(const Facts& f, int loop, TrainingStakeMemo& memo) {
  if (loop < 0) return "";
  const Id func = f.loops[loop].func;
  // A clock or the memory counters read in the loop's function (at the top level: in the
  // outermost loop around it).
  int outer = loop;
  while (f.loops[outer].parent >= 0) outer = f.loops[outer].parent;
  const std::vector<int>& scope = func != kNone ? f.calls_in(func) : f.loops[outer].calls;
  auto [measured, fresh] = memo.measured.try_emplace(&scope, false);
  if (fresh)
    for (int ci : scope) {
      const std::string& q = f.callee_qual(f.calls[ci].call);
      if (in(q, {"time.time"sv, "time.perf_counter"sv, "time.monotonic"sv, "time.process_time"sv,
                 "timeit.timeit"sv, "timeit.default_timer"sv, "torch.cuda.Event"sv,
                 "torch.cuda.max_memory_allocated"sv, "torch.cuda.memory_allocated"sv,
                 "torch.cuda.memory_reserved"sv, "torch.cuda.max_memory_reserved"sv}) ||
          starts_with(q, "pynvml.") || starts_with(q, "torch.utils.benchmark.")) {
        measured->second = true;
        break;
      }
    }
  if (!measured->second) return "";
  // What the loop trains is thrown away: each model its forwards run is a plain name that
  // nothing reads after the outermost loop (in the function, or the rest of the module) before
  // rebinding it.
  if (!memo.indexed) {
    memo.indexed = true;
    std::unordered_set<Id> targets;
    for (const StmtSite& ss : f.stmt_sites) {
      const Stmt& st = f.m.s(ss.stmt);
      if (st.kind == StmtKind::Assign || st.kind == StmtKind::AnnAssign || st.kind == StmtKind::For)
        for (Id t : st.targets)
          if (t != kNone && f.e(t).kind == ExprKind::Name) targets.insert(t);
    }
    for (Id x = 0; x < f.m.exprs.size(); ++x)
      if (f.m.exprs[x].kind == ExprKind::Name)
        memo.uses[f.m.exprs[x].text].emplace_back(f.m.exprs[x].range.begin, targets.count(x) > 0);
    for (auto& [name, v] : memo.uses) std::sort(v.begin(), v.end());
  }
  const uint32_t after = f.loops[outer].range.end;
  const uint32_t until = func != kNone ? f.m.funcs[func].range.end : UINT32_MAX;
  bool forwards = false, made = true;
  for (int ci : f.loops[loop].calls) {
    const CallSite& x = f.calls[ci];
    if (x.in_lambda || !f.is_model_call(x)) continue;
    forwards = true;
    const Id recv = f.forward_receiver(x.call);
    if (recv == kNone || f.e(recv).kind != ExprKind::Name) return "";
    // A parameter or a global of the function: its caller, or the rest of the module, may
    // keep what it learned.
    if (func != kNone && (f.is_param(func, f.e(recv).text) || f.own_bindings(func, f.e(recv).text).empty())) return "";
    auto it = memo.uses.find(f.e(recv).text);
    if (it != memo.uses.end()) {
      auto u = std::upper_bound(it->second.begin(), it->second.end(), std::pair<uint32_t, bool>{after, true});
      if (u != it->second.end() && u->first < until && !u->second) return "";  // read again
    }
    const Expr& call = f.e(x.call);
    if (call.kids.size() < 2) made = false;
    for (size_t k = 1; k < call.kids.size() && made; ++k) made = made_tensor(f, x.func, call.kids[k]);
  }
  if (!forwards) return "";
  constexpr long kFewTrainingSteps = 10;
  long trips = 1;
  for (int l = loop; l >= 0 && trips > 0; l = f.loops[l].parent)
    if (trips *= constant_trips(f, l, kFewTrainingSteps); trips > kFewTrainingSteps) trips = 0;
  if (trips > 0)
    return "the loop runs " + (trips == 1 ? std::string("once") : std::to_string(trips) + " times") +
           " while the code reads a clock or the memory counters, and nothing reads the model it trains "
           "afterwards: a measurement of speed or memory, not training";
  if (made)
    return "the loop trains on tensors the program makes while the code reads a clock or the memory counters, "
           "and nothing reads the model it trains afterwards: a benchmark, whose parameters are thrown away";
  return "";
}

// Does `x` read one of `names` with its history: not under `.detach()`, `.item()`, `.tolist()`,
// `.numpy()` or `.data`, which cut the chain (`h_in = h.detach()` carries nothing round)?
bool mentions_attached(const Facts& f, Id x, const std::set<std::string>& names) {
  bool hit = false;
  for_each_expr(f.m, x, [&](Id y) {
    const Expr& e = f.e(y);
    if (e.kind == ExprKind::Call && in(f.callee_attr(y), {"detach", "item", "tolist", "numpy"})) return false;
    if (e.kind == ExprKind::Attribute && e.text == "data"sv) return false;
    if (names.count(f.dotted(y))) hit = true;
    return !hit;
  });
  return hit;
}

bool carried_in_loop_uncached(const Facts& f, int loop, const std::string& d);

// (Asked per statement of a loop: answered once per loop and name.)
bool carried_in_loop(const Facts& f, int loop, const std::string& d) {
  if (loop < 0 || d.empty()) return false;
  auto [it, fresh] = f.carried_in_loop_memo_.try_emplace({loop, d}, false);
  if (fresh) it->second = carried_in_loop_uncached(f, loop, d);
  return it->second;
}

bool carried_in_loop_uncached(const Facts& f, int loop, const std::string& d) {
  // Names computed from `d` earlier in the iteration (`x0 = (x_t - eps) / a` before
  // `x_t = b * x0 + dir`): the new value reads the old one through them.
  std::set<std::string> from{d};
  std::vector<Id> stmts = f.loops[loop].stmts;
  std::sort(stmts.begin(), stmts.end(), [&](Id a, Id b) { return f.m.s(a).range.begin < f.m.s(b).range.begin; });
  for (Id sid : stmts) {
    const Stmt& s = f.m.s(sid);
    if (s.kind != StmtKind::Assign || s.value == kNone) continue;
    bool bound = false;
    for (Id t : s.targets)
      for_each_expr(f.m, t, [&](Id x) {
        if (f.dotted(x) == d) bound = true;
        return !bound && (f.e(x).kind == ExprKind::Sequence || f.e(x).kind == ExprKind::Starred);
      });
    const bool reads = mentions_attached(f, s.value, from);
    if (!bound && reads)
      for (Id t : s.targets)
        for_each_expr(f.m, t, [&](Id x) {
          if (f.e(x).kind == ExprKind::Name) from.insert(f.e(x).text);
          return f.e(x).kind == ExprKind::Sequence || f.e(x).kind == ExprKind::Starred;
        });
    if (!bound || !reads) continue;
    // The value read must come round the loop (the previous iteration's, or the one it was
    // entered with): `K = x * 2; K = K.mean()` reads this iteration's K, a plain rebinding.
    bool outside = false;
    const std::vector<Def> defs = f.flow().reaching(sid, d, &outside);
    if (defs.empty() || outside) return true;
    const std::vector<Id>& body = f.loops[loop].stmts;
    for (const Def& df : defs)
      if (df.stmt == kNone || f.m.s(df.stmt).range.begin >= s.range.begin ||
          std::find(body.begin(), body.end(), df.stmt) == body.end())
        return true;
  }
  return false;
}

bool assigned_in_loop(const Facts& f, int loop, const std::string& d) {
  if (loop < 0 || d.empty()) return false;
  // The names each statement of the loop binds that its value does not read, gathered once per
  // loop (asked per name and statement: a loop of n rebindings would be quadratic).
  auto [it, fresh] = f.loop_assigned_memo_.try_emplace(loop);
  if (fresh) {
    std::unordered_set<std::string>& out = it->second;
    for (Id sid : f.loops[loop].stmts) {
      const Stmt& s = f.m.s(sid);
      if (s.kind != StmtKind::Assign && s.kind != StmtKind::AnnAssign && s.kind != StmtKind::For &&
          s.kind != StmtKind::With)
        continue;
      // `total = total + loss` accumulates; it does not re-initialise.
      std::unordered_set<std::string> read;
      if (s.kind == StmtKind::Assign && s.value != kNone)
        for_each_expr(f.m, s.value, [&](Id x) {
          if (const std::string& n = f.dotted(x); !n.empty()) read.insert(n);
          return true;
        });
      for (Id t : s.targets) {
        if (t == kNone) continue;
        for_each_expr(f.m, t, [&](Id x) {
          if (const std::string& n = f.dotted(x); !n.empty() && !read.count(n)) out.insert(n);
          return f.e(x).kind == ExprKind::Sequence || f.e(x).kind == ExprKind::Starred;
        });
      }
    }
  }
  // A comprehension loop binds nothing outside itself.
  return it->second.count(d) > 0;
}

std::string spelling_of(const Module& m, const std::string& qualified) {
  // Exact import of the object, then an import of a parent module.
  std::string best;
  for (const auto& [local, q] : m.aliases)
    if (q == qualified && (best.empty() || local < best)) best = local;
  if (!best.empty()) return best;
  for (const auto& [local, q] : m.aliases)
    if (qualified.size() > q.size() && qualified.compare(0, q.size(), q) == 0 && qualified[q.size()] == '.') {
      std::string s = local + qualified.substr(q.size());
      if (best.empty() || s.size() < best.size()) best = s;
    }
  if (best.empty() && m.aliases.count("torch") == 0 && qualified.rfind("torch.", 0) == 0) {
    // Snippets that use `torch` without importing it resolve it as torch (frontend rule).
    return "";
  }
  return best;
}

Fix wrap_statement_fix(const CheckContext& ctx, Id stmt, const std::string& with_header,
                       std::string title) {
  Fix fix;
  fix.title = std::move(title);
  fix.safe = false;
  const Module& m = ctx.facts.m;
  const Stmt& s = m.s(stmt);
  std::string_view src = ctx.source;
  uint32_t start = ctx.line_start(s.range.begin);
  for (uint32_t i = start; i < s.range.begin; ++i)
    if (src[i] != ' ' && src[i] != '\t') return fix;  // not alone on its line
  // Multi-line string literals inside would change value if re-indented.
  for (const auto& e : m.exprs)
    if ((e.kind == ExprKind::Literal && e.lit == LitKind::String) || e.kind == ExprKind::FString)
      if (e.range.begin >= s.range.begin && e.range.end <= s.range.end && e.range.line != e.range.end_line)
        return fix;
  // ... and end it: `soft = teacher(x).detach(); out = student(x)` would take the rest of
  // the line into the block. A comment may follow.
  uint32_t end = s.range.end;
  for (; end < src.size() && src[end] != '\n'; ++end)
    if (src[end] == '#') {
      while (end < src.size() && src[end] != '\n') ++end;
      break;
    } else if (src[end] != ' ' && src[end] != '\t' && src[end] != '\r') {
      return fix;
    }
  std::string indent = ctx.indent_at(s.range.begin);
  std::string unit = ctx.indent_unit();
  std::string nl = ctx.newline();
  std::string out = indent + with_header + nl;
  uint32_t i = start;
  while (i < end) {
    uint32_t j = i;
    while (j < end && src[j] != '\n') ++j;
    std::string_view line = src.substr(i, j - i);
    bool blank = line.find_first_not_of(" \t\r") == std::string_view::npos;
    if (!blank) out += unit;
    out += std::string(line);
    if (j < end) out += '\n';
    i = j + 1;
  }
  fix.edits.push_back({start, end, out});
  return fix;
}

// Does the loop run once per batch: it trains, iterates batches or an evaluation set, or
// runs a model forward?
bool per_batch_loop(const Facts& f, int loop) {
  if (f.loop_trains(loop) || iterates_batches(f, loop) || f.is_eval_source(f.loops[loop].iter)) return true;
  for (int ci : f.loops[loop].calls)
    if (!f.calls[ci].in_lambda && f.is_model_call(f.calls[ci])) return true;
  return false;
}

// The innermost loop around the call site (in its function) that runs once per batch.
int batch_loop_of(const Facts& f, const CallSite& c) {
  for (int l = c.loop; l >= 0; l = f.loops[l].parent)
    if (per_batch_loop(f, l)) return l;
  return -1;
}

// Does `x` use the tensor `p` itself, not only a number read from it (`p.item()`,
// `p.size(0)`) or its detached view (`p.data`)?
static bool uses_tensor(const Facts& f, Id x, const std::string& p) {
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::Name) return e.text == p;
  if (e.kind == ExprKind::Attribute && e.text == "data"sv) return false;
  if (e.kind == ExprKind::Call && in(f.callee_attr(x), {"item", "size", "detach", "tolist", "numpy", "dim",
                                                       "numel", "argmax", "eq", "ne"}))
    return false;
  for (Id k : e.kids)
    if (k != kNone && uses_tensor(f, k, p)) return true;
  return false;
}

void find_accumulating_methods(const Facts& f, std::unordered_set<std::string>& out) {
  for (Id fid = 0; fid < f.m.funcs.size(); ++fid) {
    const Function& fn = f.m.funcs[fid];
    if (fn.cls == kNone || fn.params.size() < 2) continue;
    // `@torch.no_grad()` on the method: whatever it keeps has no history.
    if (f.func_entry_off(fid)) continue;
    const std::string& p = fn.params[1];
    bool keeps = false, rebound = false;
    std::vector<Id> work(fn.body.begin(), fn.body.end());
    for (size_t i = 0; i < work.size() && !rebound; ++i) {
      const Stmt& s = f.m.s(work[i]);
      // `v = v.data.sum()` before `self.sum += v`: what is kept is no longer the argument.
      if (s.kind == StmtKind::Assign)
        for (Id t : s.targets)
          for_each_expr(f.m, t, [&](Id x) {
            if (f.e(x).kind == ExprKind::Name && f.e(x).text == p) rebound = true;
            return !rebound;
          });
      auto mentions = [&](Id x) { return uses_tensor(f, x, p); };
      if (s.kind == StmtKind::AugAssign && !s.targets.empty() && f.dotted(s.targets[0]).rfind("self.", 0) == 0 &&
          mentions(s.value))
        keeps = true;
      if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call &&
          in(f.callee_attr(s.value), {"append", "extend"}) &&
          f.dotted(f.callee_receiver(s.value)).rfind("self.", 0) == 0 && mentions(s.value))
        keeps = true;
      for (Id b : s.body) work.push_back(b);
      for (Id b : s.orelse) work.push_back(b);
    }
    if (keeps && !rebound) {
      out.insert(fn.name);
      out.insert("#" + std::to_string(fid));
    }
  }
}

// Does the condition select the loop's last iteration (`i == len(batches) - 1`, `step >= n - 1`),
// directly or through a flag bound to its negation (`is_accumulating = i < len(batches) - 1`;
// `if not is_accumulating:`)?
bool ends_the_loop_after(const Facts& f, const std::vector<Id>& body, Id sid, int depth) {
  if (depth > kMaxDepth) return false;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] == sid) {
      for (size_t j = i + 1; j < body.size(); ++j)
        if (const StmtKind k = f.m.s(body[j]).kind; k == StmtKind::Break || k == StmtKind::Return || k == StmtKind::Raise)
          return true;
      return false;
    }
    const Stmt& s = f.m.s(body[i]);
    if (s.kind == StmtKind::For || s.kind == StmtKind::While || s.kind == StmtKind::FunctionDef ||
        s.kind == StmtKind::ClassDef)
      continue;
    for (const auto* b : {&s.body, &s.orelse, &s.finalbody})
      if (ends_the_loop_after(f, *b, sid, depth + 1)) return true;
    for (const auto& h : s.handlers)
      if (ends_the_loop_after(f, h.body, sid, depth + 1)) return true;
  }
  return false;
}

bool last_iteration_test(const Facts& f, Id cond, Id func) {
  if (cond == kNone) return false;
  const Expr& c = f.e(cond);
  auto mentions_last = [&](Id x) {
    bool hit = false;
    for_each_expr(f.m, x, [&](Id y) {
      const Expr& e = f.e(y);
      if (e.kind == ExprKind::BinOp && e.text == "-"sv && e.kids.size() == 2 && f.e(e.kids[1]).kind == ExprKind::Literal &&
          f.e(e.kids[1]).text == "1"sv)
        hit = true;
      if (e.kind == ExprKind::Call && f.e(e.kids[0]).kind == ExprKind::Name && f.e(e.kids[0]).text == "len"sv) hit = true;
      return !hit;
    });
    return hit;
  };
  if (c.kind == ExprKind::UnaryOp && c.text == "not"sv && !c.kids.empty() && f.e(c.kids[0]).kind == ExprKind::Name) {
    const std::vector<Id> vs = f.bindings(func, f.e(c.kids[0]).text);
    if (vs.size() != 1) return false;
    const Expr& v = f.e(vs[0]);
    return v.kind == ExprKind::Compare && (v.text == "<"sv || v.text == "!="sv) && mentions_last(vs[0]);
  }
  if (c.kind != ExprKind::Compare || (c.text != "==" && c.text != ">=")) return false;
  return mentions_last(cond);
}

std::optional<Known> known_literal(const Expr& x) {
  if (x.kind != ExprKind::Literal) return std::nullopt;
  switch (x.lit) {
    case LitKind::String: return Known{Known::Str, x.text, 0};
    case LitKind::True: return Known{Known::Bool, "", 1};
    case LitKind::False: return Known{Known::Bool, "", 0};
    case LitKind::None: return Known{Known::NoneV, "", 0};
    case LitKind::Int: {
      long v = 0;
      for (char ch : x.text) {
        if (ch < '0' || ch > '9' || v > 1000000000L) return std::nullopt;
        v = v * 10 + (ch - '0');
      }
      return Known{Known::Int, "", v};
    }
    default: return std::nullopt;
  }
}

// A parameter's default as the frontend records it (`False`, `None`, `0`, `'val'`).
std::optional<Known> known_default(const std::string& d) {
  if (d == "True"sv) return Known{Known::Bool, "", 1};
  if (d == "False"sv) return Known{Known::Bool, "", 0};
  if (d == "None"sv) return Known{Known::NoneV, "", 0};
  if (d.size() >= 2 && (d[0] == '\'' || d[0] == '"') && d.back() == d[0]) return Known{Known::Str, d.substr(1, d.size() - 2), 0};
  if (!d.empty() && d.find_first_not_of("0123456789") == std::string::npos && d.size() < 10)
    return Known{Known::Int, "", std::stol(d)};
  return std::nullopt;
}

bool truthy(const Known& v) {
  return v.k == Known::Str ? !v.s.empty() : v.k == Known::NoneV ? false : v.i != 0;
}

std::optional<bool> same_value(const Known& a, const Known& b) {
  if (a.k == Known::NoneV || b.k == Known::NoneV) return a.k == b.k;
  if (a.k == Known::Str || b.k == Known::Str) {
    if (a.k != b.k) return false;
    return a.s == b.s;
  }
  return a.i == b.i;  // truth values and integers compare as numbers
}

// The value of a condition under `env` (names bound by a pass), or nullopt when it is not
// decided there. A local bound once from such names (`is_train = split == "train"`) is
// followed.
std::optional<Known> decide(const Facts& f, Id func, Id x, const Env& env, int depth) {
  if (x == kNone || depth > 8) return std::nullopt;
  const Expr& ex = f.e(x);
  auto boolean = [](bool b) { return Known{Known::Bool, "", b ? 1 : 0}; };
  switch (ex.kind) {
    case ExprKind::Literal: return known_literal(ex);
    case ExprKind::Name: {
      auto it = env.find(ex.text);
      if (it != env.end()) return it->second;
      if (func != kNone && f.is_param(func, ex.text)) return std::nullopt;
      // A name bound by exactly one statement of its scope (the function's, else the module's,
      // which no function may bind too: a `global` it may set), an assignment of it alone or of
      // a tuple of names from a tuple of values (`PPL, generation = False, True`).
      auto binders = [&](Id scope, Id* only) {
        int n = 0;
        for (Id sid : f.stmts_in(scope))
          for (Id t : f.m.s(sid).targets)
            if (t != kNone)
              for_each_expr(f.m, t, [&](Id y) {
                if (f.e(y).kind == ExprKind::Name && f.e(y).text == ex.text) ++n, *only = sid;
                return true;
              });
        return n;
      };
      Id scope = func, stmt = kNone;
      int n = func == kNone ? 0 : binders(func, &stmt);
      if (n == 0) {
        scope = kNone;
        n = binders(kNone, &stmt);
        for (Id g = 0; g < f.m.funcs.size() && n == 1; ++g)
          if (!f.own_bindings(g, ex.text).empty()) return std::nullopt;
      }
      if (n != 1) return std::nullopt;
      const Stmt& st = f.m.s(stmt);
      if (st.kind != StmtKind::Assign || st.targets.size() != 1 || st.value == kNone) return std::nullopt;
      Id value = kNone;
      const Expr& t = f.e(st.targets[0]);
      if (t.kind == ExprKind::Name) {
        value = st.value;
      } else if (t.kind == ExprKind::Sequence && f.e(st.value).kind == ExprKind::Sequence &&
                 f.e(st.value).kids.size() == t.kids.size()) {
        for (size_t k = 0; k < t.kids.size(); ++k) {
          if (f.e(t.kids[k]).kind == ExprKind::Starred || f.e(f.e(st.value).kids[k]).kind == ExprKind::Starred)
            return std::nullopt;
          if (f.e(t.kids[k]).kind == ExprKind::Name && f.e(t.kids[k]).text == ex.text) value = f.e(st.value).kids[k];
        }
      }
      if (value == kNone) return std::nullopt;
      return decide(f, scope, value, env, depth + 1);
    }
    case ExprKind::Attribute: {
      // `self.flag` in a method, bound by exactly one statement of the file (`self.DBval =
      // False` in `__init__`) and stored through no other object (`model.DBval = True`) nor
      // `setattr`: that value. (Another module may still set it: the callers make it weak.)
      const std::string& d = f.dotted(x);
      if (func == kNone || f.class_of(func) == kNone || !starts_with(d, "self.") || d.find('.', 5) != std::string::npos)
        return std::nullopt;
      const std::string_view attr = std::string_view(d).substr(5);
      Id only = kNone;
      int n = 0;
      for (const StmtSite& site : f.stmt_sites)
        for (Id t : f.m.s(site.stmt).targets)
          if (t != kNone)
            for_each_expr(f.m, t, [&](Id y) {
              if (f.e(y).kind == ExprKind::Attribute && f.e(y).text == attr) {
                ++n;
                if (f.dotted(y) == d && f.class_of(site.func) == f.class_of(func)) only = site.stmt;
                else n += 100;
              }
              return true;
            });
      if (n != 1 || only == kNone) return std::nullopt;
      for (const CallSite& c : f.calls)
        if (f.e(f.e(c.call).kids[0]).kind == ExprKind::Name && f.e(f.e(c.call).kids[0]).text == "setattr"sv) return std::nullopt;
      const Stmt& st = f.m.s(only);
      if (st.kind != StmtKind::Assign || st.targets.size() != 1 || st.value == kNone ||
          f.e(st.value).kind != ExprKind::Literal)
        return std::nullopt;
      return known_literal(f.e(st.value));
    }
    case ExprKind::UnaryOp: {
      if (ex.text != "not"sv || ex.kids.size() != 1) return std::nullopt;
      auto v = decide(f, func, ex.kids[0], env, depth + 1);
      if (!v) return std::nullopt;
      return boolean(!truthy(*v));
    }
    case ExprKind::BoolOp: {
      const bool is_and = ex.text == "and"sv;
      bool all_known = true;
      for (Id k : ex.kids) {
        auto v = decide(f, func, k, env, depth + 1);
        if (!v) {
          all_known = false;
          continue;
        }
        if (truthy(*v) != is_and) return boolean(!is_and);  // `and` with a false operand, `or` with a true one
      }
      if (all_known) return boolean(is_and);
      return std::nullopt;
    }
    case ExprKind::Compare: {
      if (ex.kids.size() != 2) return std::nullopt;
      auto a = decide(f, func, ex.kids[0], env, depth + 1);
      if (!a) return std::nullopt;
      const std::string& op = ex.text;
      if (op == "in"sv || op == "not in"sv) {
        const Expr& seq = f.e(ex.kids[1]);
        if (seq.kind != ExprKind::Sequence || seq.text == "dict"sv) return std::nullopt;
        bool found = false;
        for (Id k : seq.kids) {
          auto v = decide(f, func, k, env, depth + 1);
          if (!v) return std::nullopt;
          if (same_value(*a, *v).value_or(false)) found = true;
        }
        return boolean(found == (op == "in"sv));
      }
      auto b = decide(f, func, ex.kids[1], env, depth + 1);
      if (!b) return std::nullopt;
      auto eq = same_value(*a, *b);
      if (!eq) return std::nullopt;
      if (op == "=="sv || op == "is"sv) return boolean(*eq);
      if (op == "!="sv || op == "is not"sv) return boolean(!*eq);
      return std::nullopt;
    }
    default: return std::nullopt;
  }
}

bool conditions_to(const Facts& f, const std::vector<Id>& body, Id target, uint32_t pos,
                   std::vector<std::pair<Id, bool>>& out, int depth) {
  if (depth > kMaxDepth) return false;
  // The statements of a body are in source order: the one holding `pos` is the last that
  // starts at or before it.
  auto after = std::upper_bound(body.begin(), body.end(), pos,
                                [&](uint32_t p, Id sid) { return p < f.m.s(sid).range.begin; });
  if (after != body.begin()) {
    const Id sid = *(after - 1);
    const Stmt& s = f.m.s(sid);
    if (pos >= s.range.end) return false;
    if (sid == target) return true;
    // Without a target: this statement holds `pos`, in a header or in a body below.
    const bool here = target == kNone;
    if (s.kind == StmtKind::FunctionDef || s.kind == StmtKind::ClassDef) return here;
    if (s.kind == StmtKind::If) {
      if (here && (s.body.empty() || pos < f.m.s(s.body.front()).range.begin)) return true;  // the condition
      const bool in_body = s.orelse.empty() || pos < f.m.s(s.orelse.front()).range.begin;
      out.push_back({s.value, in_body});
      return conditions_to(f, in_body ? s.body : s.orelse, target, pos, out, depth + 1) || here;
    }
    if (conditions_to(f, s.body, target, pos, out, depth + 1) ||
        conditions_to(f, s.orelse, target, pos, out, depth + 1) ||
        conditions_to(f, s.finalbody, target, pos, out, depth + 1))
      return true;
    for (const auto& h : s.handlers)
      if (conditions_to(f, h.body, target, pos, out, depth + 1)) return true;
    return here;
  }
  return false;
}


bool ends_the_process(const Facts& f, Id stmt) {
  const Stmt& s = f.m.s(stmt);
  if (s.kind != StmtKind::Expr || s.value == kNone || f.e(s.value).kind != ExprKind::Call) return false;
  const std::string& q = f.callee_qual(s.value);
  if (in(q, {"sys.exit", "os._exit", "os.abort"})) return true;
  const Expr& callee = f.e(f.e(s.value).kids[0]);
  // The builtins, unless the file binds the name to something else anywhere (a module-level or
  // nested `def exit(...)`, a parameter, an assignment).
  if (callee.kind != ExprKind::Name || !callee.qname.empty() || !in(callee.text, {"exit", "quit"})) return false;
  for (const Function& fn : f.m.funcs) {
    if (fn.name == callee.text) return false;
    for (const std::string& p : fn.params)
      if (p == callee.text) return false;
  }
  for (Id g = 0; g < f.m.funcs.size(); ++g)
    if (!f.own_bindings(g, callee.text).empty()) return false;
  return f.bindings(kNone, callee.text).empty();
}

bool named_for_a_gradient_method(std::string_view name) {
  return in(name, {"GradCAM"sv, "GradCam"sv, "GradCAMpp"sv, "GradCamPP"sv, "GradCAMPlusPlus"sv, "GradCamPlusPlus"sv,
                   "XGradCAM"sv, "HiResCAM"sv, "SmoothGradCAMpp"sv, "GuidedBackprop"sv, "GuidedBackpropReLUModel"sv,
                   "GuidedGradCam"sv, "IntegratedGradients"sv, "SmoothGrad"sv, "VanillaGrad"sv, "VanillaBackprop"sv});
}

// Does `root` reach the value of `x` only through tensor operations on it (`F.softmax(x, 1)`,
// `x.view(n, -1)`, `x[0] * 2`, `softmax(x)` of a layer object): torch functions, methods of
// the value itself, operators and subscripts? Nothing else on the way could keep it (`store(x)`, `[x, y]`).
static bool through_tensor_ops(const Facts& f, Id root, Id x, int depth = 0) {
  if (root == x) return true;
  if (root == kNone || depth > 8) return false;
  const Expr& r = f.e(root);
  if (r.kind == ExprKind::Call) {
    // A torch function, or a torch.nn layer object bound once (`softmax = nn.Softmax()`).
    bool torch_fn = starts_with(f.callee_qual(root), "torch.");
    if (!torch_fn && f.e(r.kids[0]).kind == ExprKind::Name) {
      const std::vector<Id> vs = f.bindings(kNone, f.e(r.kids[0]).text);
      torch_fn = vs.size() == 1 && f.e(vs[0]).kind == ExprKind::Call && starts_with(f.callee_qual(vs[0]), "torch.nn.");
    }
    const Id recv = f.callee_receiver(root);
    for (size_t k = 1; k < r.kids.size(); ++k)
      if (torch_fn && through_tensor_ops(f, r.kids[k], x, depth + 1)) return true;
    return recv != kNone && f.callee_qual(root).empty() && through_tensor_ops(f, recv, x, depth + 1);
  }
  if (r.kind == ExprKind::BinOp || r.kind == ExprKind::UnaryOp || r.kind == ExprKind::Subscript)
    for (Id k : r.kids)
      if (through_tensor_ops(f, k, x, depth + 1)) return true;
  return false;
}

static constexpr size_t kDetachReadWindow = 64;

// What statement `sid` reads: its value (or a header's test or iterable), a `with`'s context
// expressions, and its targets; `*bound` gets the names it binds, which are no reads (`x[t] =
// v` reads `t`; `total += t` reads `total`).
static std::vector<Id> statement_reads(const Facts& f, Id sid, std::set<Id>* bound) {
  const Stmt& st = f.m.s(sid);
  std::vector<Id> roots{st.value};
  roots.insert(roots.end(), st.items.begin(), st.items.end());
  roots.insert(roots.end(), st.targets.begin(), st.targets.end());
  if (st.kind != StmtKind::AugAssign)
    for (Id t : st.targets)
      for_each_expr(f.m, t, [&](Id y) {
        if (f.e(y).kind == ExprKind::Name) bound->insert(y);
        return f.e(y).kind == ExprKind::Sequence || f.e(y).kind == ExprKind::Starred;
      });
  return roots;
}

// Does statement `sid` read the name?
static bool reads_name(const Facts& f, Id sid, const std::string& name) {
  std::set<Id> bound;
  bool reads = false;
  for (Id root : statement_reads(f, sid, &bound))
    for_each_expr(f.m, root, [&](Id y) {
      reads = reads || (f.e(y).kind == ExprKind::Name && f.e(y).text == name && !bound.count(y));
      return !reads;
    });
  return reads;
}

// Is every read of `name` in `stmts` (from the first, until a statement that binds the name
// again) the receiver of `.detach()` or of `.data`, or an argument to a same-file function whose parameter
// is read only that way (`kd_loss(s, t)` with `q = softmax(t.detach() / T)`; `depth` such calls
// deep)? `*first` is the first such `.detach()` call or `.data`. False when nothing reads it.
static bool read_only_detached(const Facts& f, const std::vector<Id>& stmts, size_t from, const std::string& name,
                               int depth, Id* first, int chain = 0) {
  // The name under subscripts (`feats[1].data`: one output of a forward that returns several).
  auto base_name = [&](Id x) -> Id {
    while (x != kNone && f.e(x).kind == ExprKind::Subscript && !f.e(x).kids.empty()) x = f.e(x).kids[0];
    return x != kNone && f.e(x).kind == ExprKind::Name ? x : kNone;
  };
  size_t reads = 0;
  // (Within kDetachReadWindow statements: a name read farther on is not followed, so that a
  // function of thousands of forwards stays linear.)
  if (stmts.size() - std::min(stmts.size(), from) > kDetachReadWindow &&
      !std::any_of(stmts.begin() + static_cast<long>(from), stmts.begin() + static_cast<long>(from + kDetachReadWindow),
                   [&](Id sid) {
                     for (Id t : f.m.s(sid).targets)
                       if (f.dotted(t) == name) return true;
                     return false;
                   }))
    return false;
  for (size_t i = from; i < stmts.size() && i < from + kDetachReadWindow; ++i) {
    const Stmt& st = f.m.s(stmts[i]);
    std::set<Id> ok, targets;  // `targets`: the names bound, which are no reads
    const std::vector<Id> roots = statement_reads(f, stmts[i], &targets);
    bool rebinds = false;
    for (Id t : st.targets) rebinds = rebinds || f.dotted(t) == name;
    for (int ci : f.calls_in_stmt[stmts[i]]) {
      const CallSite& x = f.calls[ci];
      const Expr& xe = f.e(x.call);
      if (f.callee_attr(x.call) == "detach"sv && xe.kids.size() == 1) {
        const Id r = base_name(f.callee_receiver(x.call));
        if (r != kNone && f.e(r).text == name) {
          ok.insert(r);
          if (*first == kNone) *first = x.call;
        }
      }
      if (depth <= 0 || x.target_func == kNone) continue;
      const Function& g = f.m.funcs[x.target_func];
      const size_t self = g.cls != kNone && !g.params.empty() && g.params[0] == "self"sv ? 1 : 0;
      for (size_t k = 1; k < xe.kids.size(); ++k) {
        const Id a = xe.kids[k];
        if (f.e(a).kind != ExprKind::Name || f.e(a).text != name || k - 1 + self >= g.params.size()) continue;
        Id inner = kNone;
        if (read_only_detached(f, f.stmts_in(x.target_func), 0, g.params[k - 1 + self], depth - 1, &inner)) {
          ok.insert(a);
          if (*first == kNone) *first = inner;
        }
      }
    }
    // A value made from it by tensor operations and bound to a name of its own (`p =
    // softmax(logits)`), itself read only that way: a chain of at most a few such names.
    if (depth >= 0 && st.kind == StmtKind::Assign && st.targets.size() == 1 &&
        f.e(st.targets[0]).kind == ExprKind::Name && f.e(st.targets[0]).text != name && chain < 3) {
      std::vector<Id> mine;
      for_each_expr(f.m, st.value, [&](Id y) {
        if (f.e(y).kind == ExprKind::Name && f.e(y).text == name && !ok.count(y)) mine.push_back(y);
        return true;
      });
      Id inner = kNone;
      if (!mine.empty() &&
          std::all_of(mine.begin(), mine.end(), [&](Id y) { return through_tensor_ops(f, st.value, y); }) &&
          read_only_detached(f, stmts, i + 1, f.e(st.targets[0]).text, depth, &inner, chain + 1)) {
        ok.insert(mine.begin(), mine.end());
        if (*first == kNone) *first = inner;
      }
    }
    // `t.data` (a view detached from the graph) reads no graph either.
    for (Id root : roots)
      for_each_expr(f.m, root, [&](Id y) {
        const Expr& ye = f.e(y);
        if (ye.kind == ExprKind::Attribute && ye.text == "data"sv && !ye.kids.empty()) {
          const Id r = base_name(ye.kids[0]);
          if (r != kNone && f.e(r).text == name) {
            ok.insert(r);
            if (*first == kNone) *first = y;
          }
        }
        return true;
      });
    bool all = true;
    for (Id root : roots)
      for_each_expr(f.m, root, [&](Id y) {
        if (f.e(y).kind == ExprKind::Name && f.e(y).text == name && !targets.count(y)) {
          ++reads;
          all = all && ok.count(y);
        }
        return all;
      });
    if (!all) return false;
    if (rebinds) break;
  }
  return reads > 0;
}

Id detached_later(const Facts& f, const CallSite& c) {
  if (c.stmt == kNone) return kNone;
  const Stmt& st = f.m.s(c.stmt);
  if (st.kind != StmtKind::Assign || st.targets.size() != 1) return kNone;
  // The names that hold the output: one name (through tensor operations, `probs =
  // F.softmax(policy(s), 1)`), or each name of a tuple the forward itself returns (`value,
  // logits = net(s)`; an element nothing reads holds nothing read).
  std::vector<std::string> names;
  const Expr& t = f.e(st.targets[0]);
  if (t.kind == ExprKind::Name && through_tensor_ops(f, st.value, c.call)) {
    names.push_back(t.text);
  } else if (t.kind == ExprKind::Sequence && st.value == c.call) {
    for (Id k : t.kids) {
      if (f.e(k).kind != ExprKind::Name) return kNone;
      names.push_back(f.e(k).text);
    }
  }
  if (names.empty()) return kNone;
  const std::vector<Id>& stmts = f.stmts_in(c.func);
  const auto at = std::find(stmts.begin(), stmts.end(), c.stmt);
  if (at == stmts.end()) return kNone;
  const size_t from = static_cast<size_t>(at - stmts.begin()) + 1;
  Id first = kNone;
  for (const std::string& name : names) {
    if (c.loop >= 0) {
      const std::vector<Id>& body = f.loops[c.loop].stmts;
      const auto here = std::find(body.begin(), body.end(), c.stmt);
      if (here - body.begin() > static_cast<long>(kDetachReadWindow)) return kNone;
      for (Id sid : body) {
        if (sid == c.stmt) break;
        if (reads_name(f, sid, name)) return kNone;
      }
    }
    if (read_only_detached(f, stmts, from, name, 2, &first)) continue;
    if (names.size() == 1) return kNone;
    // An element of the tuple nothing reads before it is bound again (or the window ends).
    for (size_t i = from; i < stmts.size() && i < from + kDetachReadWindow; ++i) {
      if (reads_name(f, stmts[i], name)) return kNone;
      bool rebinds = false;
      for (Id x : f.m.s(stmts[i]).targets) rebinds = rebinds || f.dotted(x) == name;
      if (rebinds) break;
    }
    if (stmts.size() > from + kDetachReadWindow) return kNone;
  }
  return first;
}

}  // namespace ll
