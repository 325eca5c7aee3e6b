// LL304 oom-retry-in-except: the failed work is retried inside the except clause that
// caught an out-of-memory error, while the traceback still pins the failed attempt.
#include <set>

#include "checks/common.hpp"
#include "checks/facts.hpp"

namespace ll {
namespace {

// An expression that names an out-of-memory error: a string holding its message, or the
// exception type (`isinstance(e, torch.cuda.OutOfMemoryError)`).
bool oom_leaf(const Facts& f, Id x) {
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::Literal && e.lit == LitKind::String)
    return e.text.find("out of memory") != std::string::npos || e.text.find("CUDA out of") != std::string::npos ||
           e.text.find("OutOfMemory") != std::string::npos;
  if (e.kind == ExprKind::Name || e.kind == ExprKind::Attribute) return e.text == "OutOfMemoryError"sv;
  return false;
}

// What a test's outcome says about the error: when it is true, and when it is false, the error
// is an out-of-memory one (+1), is another one (-1), or either (0). `"out of memory" in str(e)`
// and `isinstance(e, torch.cuda.OutOfMemoryError)` are {+1, -1}; `not` swaps; `a and b` is
// true only when both are, false when either is false.
struct Outcome {
  int if_true = 0, if_false = 0;
};

Outcome oom_outcome(const Facts& f, Id t, int depth = 0) {
  if (t == kNone || depth > 8) return {};
  const Expr& e = f.e(t);
  if (e.kind == ExprKind::UnaryOp && e.text == "not"sv && !e.kids.empty()) {
    const Outcome o = oom_outcome(f, e.kids[0], depth + 1);
    return {o.if_false, o.if_true};
  }
  if (e.kind == ExprKind::BoolOp && !e.kids.empty()) {
    // and: true -> every operand true (any known one decides, conflicts unknown);
    //      false -> some operand false (known only when every operand's false says the same).
    // or: the mirror image.
    const bool conj = e.text == "and"sv;
    int all_agree = 0;
    bool first = true, agree = true;
    int known = 0;
    for (Id k : e.kids) {
      const Outcome o = oom_outcome(f, k, depth + 1);
      const int each = conj ? o.if_true : o.if_false;   // what this operand's deciding value says
      const int some = conj ? o.if_false : o.if_true;   // what the whole's other value needs from all
      if (each != 0) known = known == 0 || known == each ? each : 2;
      if (first) all_agree = some;
      else if (some != all_agree) agree = false;
      first = false;
    }
    const int decided = known == 2 ? 0 : known;
    const int other = agree ? all_agree : 0;
    return conj ? Outcome{decided, other} : Outcome{other, decided};
  }
  if (e.kind == ExprKind::Compare && e.kids.size() == 2 && (oom_leaf(f, e.kids[0]) || oom_leaf(f, e.kids[1]))) {
    if (e.text == "in"sv || e.text == "=="sv) return {1, -1};
    if (e.text == "not in"sv || e.text == "!="sv) return {-1, 1};
    return {};
  }
  if (e.kind == ExprKind::Call && e.kids.size() == 3 && f.dotted(e.kids[0]) == "isinstance" && oom_leaf(f, e.kids[2]))
    return {1, -1};
  // `str(e).startswith("CUDA out of memory")`
  if (e.kind == ExprKind::Call && e.kids.size() == 2 && in(f.callee_attr(t), {"startswith", "endswith", "__contains__"}) &&
      oom_leaf(f, e.kids[1]))
    return {1, -1};
  // A list of messages among which an out-of-memory one: `any(p in msg for p in critical)`
  // with `critical = ["CUDA out of memory", "device-side assert", ...]`. True: that error or
  // another listed one; false: not an out-of-memory error.
  if (e.kind == ExprKind::Call && e.kids.size() == 2 && f.dotted(e.kids[0]) == "any" && e.qname.empty()) {
    // (One clause and no `if` filter, which could leave the out-of-memory message out.)
    const Expr& gen = f.e(e.kids[1]);
    if (gen.kind != ExprKind::Comprehension || gen.fors.size() != 1 || gen.kids.size() != 1) return {};
    const Expr& test = f.e(gen.kids[0]);
    const Id target = gen.fors[0].target;
    if (test.kind != ExprKind::Compare || test.text != "in"sv || test.kids.size() != 2 || target == kNone ||
        f.e(target).kind != ExprKind::Name || f.dotted(test.kids[0]) != f.e(target).text)
      return {};
    Id list = gen.fors[0].iter;
    if (list != kNone && f.e(list).kind == ExprKind::Name) {
      // A name bound once to the list and never changed (`critical.remove(...)`, `.append`).
      const std::string& name = f.e(list).text;
      const std::vector<Id> vals = f.bindings(f.function_at(f.e(list).range.begin), name);
      list = vals.size() == 1 ? vals[0] : kNone;
      for (const CallSite& c : f.calls)
        if (list != kNone && f.dotted(f.callee_receiver(c.call)) == name) list = kNone;
    }
    if (list == kNone || f.e(list).kind != ExprKind::Sequence) return {};
    for (Id k : f.e(list).kids)
      if (oom_leaf(f, k)) return {0, -1};
    return {};
  }
  return {};
}

// The test an `if` asks, where its condition is a name the statements before it in the same
// block bind to a test (`is_critical = any(...)`, then `if is_critical: break`): that test.
// A name bound elsewhere (before the loop, from other text) is not a test of this error.
Id test_of(const Facts& f, const std::vector<Id>& body, Id sid) {
  const Id cond = f.m.s(sid).value;
  if (cond == kNone || f.e(cond).kind != ExprKind::Name) return cond;
  Id found = kNone;
  for (Id x : body) {
    if (x == sid) break;
    const Stmt& st = f.m.s(x);
    bool binds = false;
    for (Id t : st.targets) binds = binds || (t != kNone && f.dotted(t) == f.e(cond).text);
    if (!binds) continue;
    found = st.kind == StmtKind::Assign && st.targets.size() == 1 ? st.value : kNone;
  }
  return found != kNone ? found : cond;
}

// Does the body always leave (its last statement raises, returns, breaks, continues or ends
// the process: `sys.exit(1)`)?
bool always_leaves(const Facts& f, const std::vector<Id>& body) {
  if (body.empty()) return false;
  const StmtKind k = f.m.s(body.back()).kind;
  return k == StmtKind::Raise || k == StmtKind::Return || k == StmtKind::Break || k == StmtKind::Continue ||
         ends_the_process(f, body.back());
}

// On the way from the handler's entry to position `at`, which errors get there: only
// out-of-memory ones (+1: inside `if "out of memory" in str(e):`, or after `if "out of memory"
// not in str(e): raise`), only others (-1: after `if "out of memory" in str(e): raise`, or in
// the else branch of that test), or unknown (0). Conflicting tests count as "only others".
int path_polarity(const Facts& f, const std::vector<Id>& body, uint32_t at, int depth = 0) {
  auto combine = [](int a, int b) { return a < 0 || b < 0 ? -1 : a > 0 || b > 0 ? 1 : 0; };
  int acc = 0;
  if (depth > 32) return 0;
  for (Id sid : body) {
    const Stmt& s = f.m.s(sid);
    if (s.range.begin <= at && at < s.range.end) {
      auto within = [&](const std::vector<Id>& b) {
        return !b.empty() && f.m.s(b.front()).range.begin <= at && at < f.m.s(b.back()).range.end;
      };
      if (s.kind == StmtKind::If && within(s.body))
        return combine(acc, combine(oom_outcome(f, test_of(f, body, sid)).if_true, path_polarity(f, s.body, at, depth + 1)));
      if (s.kind == StmtKind::If && within(s.orelse))
        return combine(acc, combine(oom_outcome(f, test_of(f, body, sid)).if_false, path_polarity(f, s.orelse, at, depth + 1)));
      for (const std::vector<Id>* b : {&s.body, &s.orelse, &s.finalbody})
        if (within(*b)) return combine(acc, path_polarity(f, *b, at, depth + 1));
      for (const Handler& h : s.handlers)
        if (within(h.body)) return combine(acc, path_polarity(f, h.body, at, depth + 1));
      return acc;
    }
    if (s.range.end <= at && s.kind == StmtKind::If && s.orelse.empty() && always_leaves(f, s.body))
      acc = combine(acc, oom_outcome(f, test_of(f, body, sid)).if_false);
  }
  return acc;
}

// Does the retry run on the CPU? A forward of a model the handler moved to the CPU on the way to
// it (`model.to("cpu")`, `net = net.cpu()`, `model.to(device)` after `device = "cpu"`; not moved
// back), or any call handed the CPU as a device (`predictor(data, "cpu")`), or a function (not a
// model) handed inputs moved there (`cpu_batch = move_tensors_to_cpu(batch)`). A retry on the
// CPU does not compete with the GPU memory the traceback pins. Only the statements that always
// run before the retry count: those before it in each block that holds it.
bool retried_on_the_cpu(const Facts& f, const Handler& h, const CallSite& c) {
  const Id call = c.call;
  const uint32_t at = f.e(call).range.begin;
  auto to_cpu = [&](Id v) {
    // `[t.cpu() for t in (a, b)]`: each element moved.
    while (v != kNone && f.e(v).kind == ExprKind::Comprehension && !f.e(v).kids.empty()) v = f.e(v).kids[0];
    if (v == kNone || f.e(v).kind != ExprKind::Call) return false;
    const std::string& a = f.callee_attr(v);
    if (a == "cpu"sv && f.e(v).kids.size() == 1) return true;
    if (a == "to"sv && f.cpu_device_at(f.arg(v, 0, "device"))) return true;
    const std::string& d = f.dotted(f.e(v).kids[0]);
    for (const auto& t : Facts::name_tokens(d.substr(d.rfind('.') == std::string::npos ? 0 : d.rfind('.') + 1)))
      if (t == "cpu"sv) return true;
    return false;
  };
  auto to_gpu = [&](Id v) {
    if (v == kNone || f.e(v).kind != ExprKind::Call) return false;
    const std::string& a = f.callee_attr(v);
    return a == "cuda"sv || (a == "to"sv && !f.cpu_device_at(f.arg(v, 0, "device")));
  };
  // The statements on the way: in each block from the handler's body down to the retry, those
  // before the statement that holds it.
  std::vector<Id> before;
  const std::vector<Id>* block = &h.body;
  for (int depth = 0; block && depth < 32; ++depth) {
    const std::vector<Id>* next = nullptr;
    for (Id sid : *block) {
      const Stmt& s = f.m.s(sid);
      if (s.range.end <= at) {
        before.push_back(sid);
        continue;
      }
      if (s.range.begin <= at)
        for (const std::vector<Id>* b : {&s.body, &s.orelse, &s.finalbody})
          if (!b->empty() && f.m.s(b->front()).range.begin <= at && at < f.m.s(b->back()).range.end) next = b;
      break;
    }
    block = next;
  }
  std::set<std::string> on_cpu;  // names holding a value moved to the CPU, models moved in place
  std::set<std::string> models_moved;  // models moved to the CPU on the way (and not back)
  for (Id sid : before) {
    const Stmt& s = f.m.s(sid);
    if (s.kind == StmtKind::Expr && s.value != kNone && f.callee_receiver(s.value) != kNone) {
      const Id recv = f.callee_receiver(s.value);
      const std::string d = f.dotted(recv);
      if (to_cpu(s.value)) on_cpu.insert(d);
      else if (to_gpu(s.value)) on_cpu.erase(d);
      if (f.is_model_value(c.func, recv)) {
        if (to_cpu(s.value)) models_moved.insert(d);
        else if (to_gpu(s.value)) models_moved.erase(d);
      }
    } else if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call && to_cpu(s.value)) {
      // A helper that moves what it is handed (`move_model_to_cpu(model)`).
      const Expr& m = f.e(s.value);
      for (size_t k = 1; k < m.kids.size(); ++k)
        if (f.is_model_value(c.func, m.kids[k])) {
          models_moved.insert(f.dotted(m.kids[k]));
          on_cpu.insert(f.dotted(m.kids[k]));
        }
    }
    if (s.kind == StmtKind::Assign)
      for (Id t : s.targets) {
        if (to_cpu(s.value)) on_cpu.insert(f.dotted(t));
        else on_cpu.erase(f.dotted(t));
        if (f.is_model_value(c.func, t)) {
          if (to_cpu(s.value)) models_moved.insert(f.dotted(t));
          else models_moved.erase(f.dotted(t));
        }
      }
  }
  on_cpu.erase("");
  const Expr& x = f.e(call);
  // Handed the CPU as its device: positionally or as `device=` (not `out_device="cpu"`, where
  // only the output goes).
  const size_t positional = x.kids.size() - 1 - x.kw.size();
  for (size_t k = 1; k < x.kids.size(); ++k)
    if ((k <= positional || x.kw[k - 1 - positional] == "device") && f.cpu_device_at(x.kids[k])) return true;
  if (f.is_model_call(c)) {
    std::string model = f.dotted(x.kids[0]);
    if (model.size() > 8 && model.compare(model.size() - 8, 8, ".forward") == 0) model.resize(model.size() - 8);
    return !model.empty() && on_cpu.count(model) != 0;
  }
  bool inputs_on_cpu = true;  // every input of the retry is on the CPU (none counts)
  for (size_t k = 1; k < x.kids.size(); ++k) {
    Id a = x.kids[k];
    if (f.e(a).kind == ExprKind::Starred && !f.e(a).kids.empty()) a = f.e(a).kids[0];
    if (to_cpu(a) || on_cpu.count(f.dotted(a))) return true;
    inputs_on_cpu = false;
  }
  // A callable the function was handed (a closure over the model, `inference_fn()`), run again
  // after every model the function names was moved to the CPU, with nothing of the GPU handed
  // to it: the retry runs on the CPU and competes with no GPU memory. (Moving another model
  // only, `teacher.cpu()` to make room, leaves the retry on the GPU.)
  const Expr& callee = f.e(x.kids[0]);
  if (models_moved.empty() || !inputs_on_cpu || callee.kind != ExprKind::Name || !f.is_param(c.func, callee.text))
    return false;
  // What the caller's closure can hold: a model handed in (`model`, `self.model`), not one this
  // function builds.
  for (const std::string& d : models_moved)
    if (!f.is_param(c.func, d.substr(0, d.find('.')))) return false;
  for (int ci : f.calls_in(c.func)) {
    const Expr& y = f.e(f.calls[ci].call);
    for (size_t k = 0; k < y.kids.size(); ++k) {
      Id v = k == 0 ? f.callee_receiver(f.calls[ci].call) : y.kids[k];
      if (v == kNone || f.dotted(v).empty() || !f.is_model_value(c.func, v)) continue;
      if (!models_moved.count(f.dotted(v))) return false;
    }
  }
  return true;
}

bool mentions_oom_text(const Facts& f, const std::vector<Id>& stmts, Id extra = kNone) {
  auto has = [&](Id root) {
    bool hit = false;
    for_each_expr(f.m, root, [&](Id x) {
      if (oom_leaf(f, x)) hit = true;
      return !hit;
    });
    return hit;
  };
  if (extra != kNone && has(extra)) return true;
  std::vector<Id> work(stmts.begin(), stmts.end());
  for (size_t i = 0; i < work.size() && i < 4096; ++i) {
    const Stmt& s = f.m.s(work[i]);
    if (has(s.value)) return true;
    for (Id b : s.body) work.push_back(b);
    for (Id b : s.orelse) work.push_back(b);
  }
  return false;
}

// Which kind of OOM handler is this (empty: none)?
std::string catches_oom(const Facts& f, const Stmt& tr, const Handler& h) {
  std::vector<Id> types;
  if (h.type != kNone) {
    if (f.e(h.type).kind == ExprKind::Sequence) types = f.e(h.type).kids;
    else types.push_back(h.type);
  }
  bool body_has_forward = false;
  // Does the try body run a forward?
  std::vector<Id> work(tr.body.begin(), tr.body.end());
  for (size_t i = 0; i < work.size() && !body_has_forward; ++i) {
    for (int ci : f.calls_in_stmt[work[i]])
      if (f.is_model_call(f.calls[ci])) body_has_forward = true;
    const Stmt& s = f.m.s(work[i]);
    for (Id b : s.body) work.push_back(b);
    for (Id b : s.orelse) work.push_back(b);
  }
  if (types.empty()) return body_has_forward ? "a bare `except:` around a forward" : "";
  for (Id t : types) {
    std::string q = f.qual(t);
    std::string d = q.empty() ? f.dotted(t) : q;
    if (d == "torch.cuda.OutOfMemoryError"sv || d == "torch.OutOfMemoryError"sv ||
        d == "torch.cuda.memory.OutOfMemoryError"sv || d == "OutOfMemoryError"sv)
      return "`" + f.dotted(t) + "`";
    if (d == "RuntimeError"sv || d == "Exception"sv || d == "BaseException"sv) {
      if (mentions_oom_text(f, h.body)) return "`" + d + "` checked for \"out of memory\"";
      if (body_has_forward) return "`" + d + "` around a forward";
    }
  }
  return "";
}

// Does any statement of `body` (at any depth) call a callee spelled `callee`?
bool called_in(const Facts& f, const std::vector<Id>& body, const std::string& callee) {
  std::vector<Id> work(body.begin(), body.end());
  for (size_t i = 0; i < work.size() && i < 4096; ++i) {
    for (int ci : f.calls_in_stmt[work[i]]) {
      if (f.dotted(f.e(f.calls[ci].call).kids[0]) == callee) return true;
    }
    const Stmt& s = f.m.s(work[i]);
    for (Id b : s.body) work.push_back(b);
    for (Id b : s.orelse) work.push_back(b);
  }
  return false;
}

// The handler calls the same callee with the same values unpacked differently
// (`try: model(*inputs)` / `except: model(inputs)`): a fallback between calling
// conventions, whatever the handler catches, not a retry of work that ran out of memory.
bool calling_convention_fallback(const Facts& f, const Stmt& tr, Id call) {
  auto shape = [&](Id c, std::vector<std::string>* names, std::vector<std::string>* stars) {
    const Expr& x = f.e(c);
    for (size_t k = 1; k < x.kids.size(); ++k) {
      Id a = x.kids[k];
      std::string star;
      if (f.e(a).kind == ExprKind::Starred && !f.e(a).kids.empty()) {
        star = f.e(a).text;
        a = f.e(a).kids[0];
      }
      const std::string& d = f.dotted(a);
      if (d.empty()) return false;
      names->push_back(d);
      stars->push_back(star);
    }
    return true;
  };
  std::vector<std::string> names, stars;
  const std::string& callee = f.dotted(f.e(call).kids[0]);
  if (callee.empty() || !shape(call, &names, &stars) || names.empty()) return false;
  std::vector<Id> work(tr.body.begin(), tr.body.end());
  for (size_t i = 0; i < work.size() && i < 4096; ++i) {
    for (int ci : f.calls_in_stmt[work[i]]) {
      Id other = f.calls[ci].call;
      std::vector<std::string> n2, s2;
      if (f.dotted(f.e(other).kids[0]) == callee && shape(other, &n2, &s2) && n2 == names && s2 != stars) return true;
    }
    const Stmt& s = f.m.s(work[i]);
    for (Id b : s.body) work.push_back(b);
    for (Id b : s.orelse) work.push_back(b);
  }
  return false;
}

// The handler calls the callee of the try body's call without an input that the try body
// built before it (`try: pos = g.ndata['pos_enc']; out = model(g, x, pos)` / `except: out =
// model(g, x)`): a fallback for the input that may be missing, not a retry of the same work.
bool drops_an_input_built_in_try(const Facts& f, const Stmt& tr, Id call) {
  auto args = [&](Id c, std::vector<std::string>* names) {
    const Expr& x = f.e(c);
    for (size_t k = 1; k < x.kids.size(); ++k) {
      const std::string& d = f.dotted(x.kids[k]);
      if (d.empty()) return false;
      names->push_back(d);
    }
    return true;
  };
  // `model.forward(...)` and `model(...)` run the same forward.
  auto callee_of = [&](Id c) {
    std::string d = f.dotted(f.e(c).kids[0]);
    if (d.size() > 8 && d.compare(d.size() - 8, 8, ".forward") == 0) d.resize(d.size() - 8);
    return d;
  };
  std::vector<std::string> mine;
  const std::string callee = callee_of(call);
  if (callee.empty() || !args(call, &mine)) return false;
  std::set<std::string> bound;  // names the try body binds
  std::vector<Id> work(tr.body.begin(), tr.body.end());
  for (size_t i = 0; i < work.size() && i < 4096; ++i) {
    const Stmt& s = f.m.s(work[i]);
    if (s.kind == StmtKind::Assign || s.kind == StmtKind::AugAssign || s.kind == StmtKind::AnnAssign)
      for (Id t : s.targets)
        if (!f.dotted(t).empty()) bound.insert(f.dotted(t));
    for (Id b : s.body) work.push_back(b);
    for (Id b : s.orelse) work.push_back(b);
  }
  // An argument built in the try body: a name it binds, or an expression over one.
  auto built = [&](Id a) {
    bool hit = false;
    for_each_expr(f.m, a, [&](Id y) {
      hit = hit || bound.count(f.dotted(y)) != 0;
      return !hit;
    });
    return hit;
  };
  for (Id sid : work)
    for (int ci : f.calls_in_stmt[sid]) {
      Id other = f.calls[ci].call;
      const Expr& ox = f.e(other);
      if (other == call || callee_of(other) != callee || ox.kids.size() <= mine.size() + 1) continue;
      // Each of the handler's inputs is one of the try call's; every one it leaves out was
      // built in the try body.
      std::multiset<std::string> want(mine.begin(), mine.end());
      bool dropped_built = true;
      for (size_t k = 1; k < ox.kids.size() && dropped_built; ++k) {
        auto it = want.find(f.dotted(ox.kids[k]));
        if (it != want.end() && !it->empty()) want.erase(it);
        else dropped_built = built(ox.kids[k]);
      }
      if (dropped_built && want.empty()) return true;
    }
  return false;
}

// A broad catch's handler that runs the work on the try's input in another form: the input
// reshaped (`x.view(t * n, -1)`, `images.unsqueeze(0)`), in the call or through a name the
// handler binds to it. The failure it expects is the form's (a plain tensor where a packed
// sequence was tried, an image without its batch dimension), not memory: a retry after an
// out-of-memory error runs the same input, or a part of it.
bool runs_the_input_in_another_form(const Facts& f, const Handler& h, Id call) {
  static constexpr std::string_view kReshapes[] = {"view", "reshape", "unsqueeze", "squeeze", "flatten",
                                                   "permute", "transpose", "unflatten", "view_as", "reshape_as"};
  auto reshapes = [&](Id x) {
    bool hit = false;
    for_each_expr(f.m, x, [&](Id y) {
      if (f.e(y).kind == ExprKind::Call)
        for (std::string_view r : kReshapes) hit = hit || f.callee_attr(y) == r;
      return !hit;
    });
    return hit;
  };
  std::set<std::string> reshaped;  // names the handler binds to a reshaped value before the call
  const uint32_t at = f.e(call).range.begin;
  for (Id sid : h.body) {
    const Stmt& s = f.m.s(sid);
    if (s.range.begin >= at) break;
    if (s.kind == StmtKind::Assign && s.value != kNone && reshapes(s.value))
      for (Id t : s.targets)
        if (!f.dotted(t).empty()) reshaped.insert(f.dotted(t));
  }
  const Expr& x = f.e(call);
  for (size_t k = 1; k < x.kids.size(); ++k)
    if (reshapes(x.kids[k]) || reshaped.count(f.dotted(x.kids[k]))) return true;
  return false;
}

// Library and bookkeeping calls (logging, formatting, releasing what the failed attempt held:
// `optimizer.zero_grad()` drops the gradients, `empty_cache()` / `gc.collect()` / `.clear()`
// free the rest; moving or reading a tensor): not the work that ran out of memory. So is any
// call of the standard library's reporting and housekeeping modules
// (`traceback.format_exc()`, `logging.exception(...)`, `time.time()`, `sys.stderr.write`).
bool bookkeeping_call(const Facts& f, Id call) {
  const std::string& q = f.callee_qual(call);
  for (std::string_view mod : {"traceback.", "logging.", "warnings.", "time.", "datetime.", "sys.", "json.", "gc."})
    if (starts_with(q, mod)) return true;
  return in(f.callee_attr(call), {"append", "info", "warning", "debug", "error", "write", "format", "zero_grad",
                                  "empty_cache", "collect", "clear", "synchronize", "reset_peak_memory_stats",
                                  "print", "print_exception", "log", "exception", "critical", "warn", "echo",
                                  "secho", "flush", "set_postfix", "set_description", "cpu", "cuda",
                                  "to", "item", "detach", "numpy", "tolist", "float", "half"});
}

// A builtin that runs what it is handed: `map`/`filter`, or an argument that calls some work
// (not another builtin or bookkeeping call), a comprehension or a lambda
// (`list(map(model, chunks))`, `sum(model(x) for x in xs)`); `getattr(self.opts, "num_gpus", 1)`,
// `sorted(self.hooks)` and `print("skipped:", str(e))` run nothing.
bool runs_what_it_is_handed(const Facts& f, Id call) {
  const Expr& x = f.e(call);
  if (in(f.e(x.kids[0]).text, {"map", "filter"})) return true;
  bool runs = false;
  for (size_t k = 1; k < x.kids.size() && !runs; ++k)
    for_each_expr(f.m, x.kids[k], [&](Id y) {
      const ExprKind kind = f.e(y).kind;
      runs = runs || kind == ExprKind::Comprehension || kind == ExprKind::Lambda ||
             (kind == ExprKind::Call && !python_builtin_call(f, y) && !bookkeeping_call(f, y));
      return !runs;
    });
  return runs;
}

// Does the handler say it is about memory: an out-of-memory exception type, or a test of
// the message for "out of memory"?
bool explicitly_oom(const Facts& f, const Handler& h) {
  std::vector<Id> types;
  if (h.type != kNone) {
    if (f.e(h.type).kind == ExprKind::Sequence) types = f.e(h.type).kids;
    else types.push_back(h.type);
  }
  for (Id t : types) {
    const std::string q = f.qual(t).empty() ? f.dotted(t) : f.qual(t);
    if (q.size() >= 16 && q.compare(q.size() - 16, 16, "OutOfMemoryError") == 0) return true;
  }
  return mentions_oom_text(f, h.body);
}

}  // namespace

void check_LL304(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  std::set<int> done;
  // Pass 0: calls that run the model again. Pass 1 (handlers without one): the exact call
  // that failed, made again.
  for (int pass = 0; pass < 2; ++pass)
  for (const CallSite& c : f.calls) {
    if (c.try_handler < 0 || done.count(c.try_handler)) continue;
    const HandlerSite& hs = f.handlers[c.try_handler];
    const Stmt& tr = f.m.s(hs.try_stmt);
    const Handler& h = tr.handlers[hs.index];
    std::string retry;
    if (pass == 1) {
      // The same callee as a call in the try body (`out = self.pipe(x)` in both), whatever
      // it runs; library and bookkeeping calls (torch ops, logging, gc, releases) are not the work.
      // A Python builtin (`getattr(self.opts, ...)` read again for a report) allocates
      // nothing on a GPU, unless it runs what it is handed (`list(map(model, chunks))`,
      // `sum(model(x) for x in xs)`). (An exception built to be raised, `raise TypeError(...)`, leaves:
      // it retries nothing.)
      if (c.stmt != kNone && f.m.s(c.stmt).kind == StmtKind::Raise) continue;
      const std::string& callee = f.dotted(f.e(c.call).kids[0]);  // "" unless a name chain
      const std::string& q = f.callee_qual(c.call);
      if (!callee.empty() && q.empty() && called_in(f, tr.body, callee) &&
          !(python_builtin_call(f, c.call) && !runs_what_it_is_handed(f, c.call)) && !bookkeeping_call(f, c.call))
        retry = "`" + callee + "(...)`, the call that failed";
    }
    else if (f.is_model_call(c)) retry = "forward";
    else if (f.is_backward(c)) retry = "backward";
    else if (c.func != kNone && c.target_func == c.func) retry = "call of `" + f.m.funcs[c.func].name + "`";
    else if (c.target_func != kNone &&
             f.reaches(c.target_func, [&](const CallSite& x) { return f.is_model_call(x) || f.is_backward(x); }))
      retry = "call of `" + f.m.funcs[c.target_func].name + "`, which runs the model again";
    if (retry.empty()) continue;
    std::string what = catches_oom(f, tr, h);
    if (what.empty() || calling_convention_fallback(f, tr, c.call)) continue;
    // The retry runs only for errors other than out-of-memory ones (`if "out of memory" in
    // str(e): raise` before it), or it runs on the CPU: not a retry next to the failed GPU memory.
    const int path = path_polarity(f, h.body, f.e(c.call).range.begin);
    if (path < 0) continue;
    if (retried_on_the_cpu(f, h, c)) {
      done.insert(c.try_handler);  // a CPU fallback: nothing else in it is a GPU retry
      continue;
    }
    // A broad catch (nothing says it is about memory) whose handler runs the work without an
    // input the try body built, or on the input in another form: the failure it expects is that
    // input's.
    if (!explicitly_oom(f, h) &&
        (drops_an_input_built_in_try(f, tr, c.call) || runs_the_input_in_another_form(f, h, c.call)))
      continue;
    done.insert(c.try_handler);
    std::string message =
        "retry (" + retry + ") inside the except clause that caught " + what +
        ": while the except clause runs, the exception's traceback keeps every frame of the failed attempt — "
        "and its tensors — alive, so the retry competes with the memory that failed; set a flag in the except "
        "clause and retry after it";
    // A broad catch around a forward (`except Exception:`) says nothing about memory: the
    // handler may be a fallback for any other error (a constructor's signature, a missing
    // input, an error report). The finding stands on the shape alone: weak evidence.
    Finding* fd = explicitly_oom(f, h) || path > 0
                      ? ctx.report("LL304", f.e(c.call).range, message)
                      : ctx.report_weak("LL304", f.e(c.call).range, message,
                                        "nothing in the handler says the error it catches is an out-of-memory one");
    if (fd) fd->notes.push_back({h.range, explicitly_oom(f, h) || path > 0 ? "out-of-memory error caught here"
                                                                           : "error caught here, out of memory among others"});
  }
}

}  // namespace ll
