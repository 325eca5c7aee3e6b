// LL103 loop-carried-graph: a value produced by a model forward in one iteration is fed
// back into the model in the next one without being detached, so the graph grows.
#include <set>

#include "checks/common.hpp"

namespace ll {
namespace {

void names_in_target(const Facts& f, Id t, std::vector<std::string>& out) {
  for_each_expr(f.m, t, [&](Id x) {
    const Expr& e = f.e(x);
    if (e.kind == ExprKind::Sequence || e.kind == ExprKind::Starred) return true;
    std::string d = f.dotted(x);
    if (!d.empty()) out.push_back(d);
    return false;
  });
}

bool mentions(const Facts& f, Id x, const std::string& d) {
  bool hit = false;
  for_each_expr(f.m, x, [&](Id y) {
    if (hit) return false;
    if (f.dotted(y) == d) hit = true;
    return !hit;
  });
  return hit;
}

}  // namespace

void check_LL103(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  std::set<Id> reported;
  auto backward = [&](const CallSite& c) { return f.is_backward(c); };
  // In a loop that back-propagates, any same-file or parameter callable fed its own output
  // (`h = cell(x, h)`) is a forward; elsewhere only known models count.
  auto forward_call = [&](const CallSite& c, bool loop_trains) {
    if (f.is_model_call(c)) return true;
    if (!loop_trains) return false;
    const Expr& callee = f.e(f.e(c.call).kids[0]);
    if (!callee.qname.empty()) return false;
    if (callee.kind == ExprKind::Name)
      return callee.text != "len" && callee.text != "range" && callee.text != "float" && callee.text != "int" &&
             callee.text != "tuple" && callee.text != "list" && callee.text != "zip" && callee.text != "print";
    return callee.kind == ExprKind::Attribute && f.dotted(f.e(c.call).kids[0]).rfind("self.", 0) == 0 &&
           f.dotted(f.e(c.call).kids[0]).find('.', 5) == std::string::npos;
  };
  for (int li = 0; li < static_cast<int>(f.loops.size()); ++li) {
    const Loop& L = f.loops[li];
    if (L.stmt == kNone) continue;
    bool trains = f.loop_reaches(li, backward);
    // Statement order inside the loop.
    std::vector<Id> order = L.stmts;
    auto pos = [&](Id sid) {
      for (size_t i = 0; i < order.size(); ++i)
        if (order[i] == sid) return static_cast<int>(i);
      return -1;
    };
    // Variables assigned from a grad-enabled forward in this loop, and where.
    std::vector<std::pair<std::string, Id>> carried;
    std::set<std::string> reset;
    for (Id sid : order) {
      const Stmt& s = f.m.s(sid);
      auto si = f.stmt_index.find(sid);
      bool off = si != f.stmt_index.end() && f.grad_off(f.stmt_sites[si->second]);
      if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call &&
          f.callee_attr(s.value) == "detach_") {
        reset.insert(f.dotted(f.callee_receiver(s.value)));
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
        forward = ci != f.call_index.end() && forward_call(f.calls[ci->second], trains);
      }
      for (const auto& n : names) {
        if (forward) carried.emplace_back(n, sid);
        else reset.insert(n);  // re-initialised or detached (`h = h.detach()`, `h = None`)
      }
    }
    if (carried.empty()) continue;
    auto retain = [&](const CallSite& c) {
      return f.is_backward(c) && f.arg(c.call, static_cast<size_t>(-1), "retain_graph") != kNone;
    };
    for (int ci : L.calls) {
      const CallSite& c = f.calls[ci];
      if (f.grad_off(c) || c.in_lambda || !forward_call(c, trains)) continue;
      int use = pos(c.stmt);
      if (use < 0) continue;
      const Expr& call = f.e(c.call);
      for (const auto& [name, assign] : carried) {
        if (reset.count(name)) continue;
        bool fed = false;
        for (size_t k = 1; k < call.kids.size() && !fed; ++k) fed = mentions(f, call.kids[k], name);
        if (!fed || use > pos(assign)) continue;  // used after this iteration's assignment: no carry
        if (!reported.insert(c.stmt).second) continue;
        Finding* fd = ctx.report(
            "LL103", f.m.s(c.stmt).range,
            "`" + name + "` comes from the previous iteration's forward and is fed back into the model without "
            "`.detach()`: the graph grows by one step every iteration, so memory and backward time grow without "
            "bound; detach it each iteration (`" + name + " = " + name + ".detach()`, truncated BPTT)");
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
