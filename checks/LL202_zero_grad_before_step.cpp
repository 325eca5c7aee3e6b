// LL202 zero-grad-before-step: gradients are reset after backward() and before step() in
// the same iteration, so step() applies zero/None gradients.
#include <set>

#include "checks/common.hpp"

namespace ll {
namespace {

struct Event {
  enum Kind { Backward, Reset, Step, GradWrite } kind;
  std::string opt;  // optimizer name for Reset/Step ("" = model reset)
  Id call;
};

bool ends_with_jump(const Facts& f, const std::vector<Id>& body) {
  if (body.empty()) return false;
  StmtKind k = f.m.s(body.back()).kind;
  return k == StmtKind::Continue || k == StmtKind::Break || k == StmtKind::Return || k == StmtKind::Raise;
}

// Gradients written by hand (`p.grad = g`, `p.grad.data.add_(q.grad)`, `p.grad.copy_(g)`):
// meta-learning and parameter-server code resets an optimizer, then fills its gradients
// itself before the step.
bool grad_target(const Facts& f, Id x) {
  for (int hops = 0; x != kNone && hops < 4; ++hops) {
    const Expr& e = f.e(x);
    if (e.kind != ExprKind::Attribute || e.kids.empty()) return false;
    if (e.text == "grad"sv) return true;
    if (e.text != "data"sv) return false;
    x = e.kids[0];
  }
  return false;
}

// `p.grad = g`, `p.grad += g` (not `p.grad *= s`, which only scales what is there).
bool fills_grad(const Facts& f, const Stmt& st) {
  if (st.kind != StmtKind::Assign && !(st.kind == StmtKind::AugAssign && (st.text == "+=" || st.text == "-=")))
    return false;
  for (Id t : st.targets)
    if (grad_target(f, t)) return true;
  return false;
}

bool writes_grad(const Facts& f, const CallSite& c) {
  if (in(f.callee_attr(c.call), {"add_", "copy_", "set_", "sub_"}) &&
      grad_target(f, f.callee_receiver(c.call)))
    return true;
  return c.stmt != kNone && fills_grad(f, f.m.s(c.stmt));
}

// What writes gradients by hand: loops over the parameters (statement ids) and same-file
// functions (directly or through what they call).
struct GradWriters {
  std::set<Id> loops, funcs;
};

void linearize(const Facts& f, const GradWriters& gw, const std::vector<Id>& body, std::vector<Event>& out,
               int depth) {
  if (depth > kMaxDepth) return;
  // A block that ends in continue/break/return/raise never reaches what follows it.
  if (depth > 0 && ends_with_jump(f, body)) return;
  for (Id sid : body) {
    const Stmt& s = f.m.s(sid);
    if (s.kind == StmtKind::For || s.kind == StmtKind::While) {
      // Another iteration unit; but a loop over the parameters that writes their
      // gradients (`for p, q in ...: p.grad = ...`) fills them here.
      if (gw.loops.count(sid)) out.push_back({Event::GradWrite, "", kNone});
      continue;
    }
    if (s.kind == StmtKind::FunctionDef || s.kind == StmtKind::ClassDef) continue;
    // Calls of this statement itself (not of nested blocks), in source order.
    for (int ci : f.calls_in_stmt[sid]) {
      const CallSite& c = f.calls[ci];
      Id o = kNone;
      if (f.is_backward(c)) out.push_back({Event::Backward, "", c.call});
      else if (f.is_grad_reset(c, &o)) out.push_back({Event::Reset, o == kNone ? "" : f.dotted(o), c.call});
      else if ((o = f.optimizer_of_step(c)) != kNone) out.push_back({Event::Step, f.dotted(o), c.call});
      else if (writes_grad(f, c) || (c.target_func != kNone && gw.funcs.count(c.target_func)))
        out.push_back({Event::GradWrite, "", c.call});
    }
    if (f.calls_in_stmt[sid].empty() && fills_grad(f, s)) out.push_back({Event::GradWrite, "", kNone});
    linearize(f, gw, s.body, out, depth + 1);
    for (const auto& h : s.handlers) linearize(f, gw, h.body, out, depth + 1);
    linearize(f, gw, s.orelse, out, depth + 1);
    linearize(f, gw, s.finalbody, out, depth + 1);
  }
}

// A reset of one part of a module the iteration trains as a whole (`generator.style.zero_grad()`
// after `e_loss.backward()`, with `generator` run and reset itself): the step still applies
// the other parts' gradients; the part is kept from updating on purpose.
bool resets_a_part(const Facts& f, const std::vector<Event>& ev, Id call) {
  if (f.callee_attr(call) != "zero_grad"sv) return false;
  const std::string d = f.dotted(f.callee_receiver(call));
  const size_t dot = d.rfind('.');
  if (dot == std::string::npos) return false;
  const std::string whole = d.substr(0, dot);
  if (whole == "self"sv) return false;
  // The module a DistributedDataParallel / DataParallel wrap holds (`model.module`), or the one
  // torch.compile wraps (`model._orig_mod`), is the whole model, not a part of it.
  if (in(std::string_view(d).substr(dot + 1), {"module"sv, "_orig_mod"sv})) return false;
  for (const Event& x : ev)
    if (x.kind == Event::Reset && x.call != kNone && f.callee_attr(x.call) == "zero_grad"sv &&
        f.dotted(f.callee_receiver(x.call)) == whole)
      return true;
  return false;
}

void check_unit(CheckContext& ctx, const GradWriters& gw, const std::vector<Id>& body, TrainingStakeMemo& stake) {
  const Facts& f = ctx.facts;
  std::vector<Event> ev;
  linearize(f, gw, body, ev, 0);
  for (size_t z = 0; z < ev.size(); ++z) {
    if (ev[z].kind != Event::Reset) continue;
    if (resets_a_part(f, ev, ev[z].call)) continue;
    // A backward whose gradients no step has consumed yet, for this reset: a step of the same
    // optimizer consumes them; a model's reset (no optimizer named), any step. Another
    // optimizer's step leaves them in place (`loss.backward(); optimizer.step();
    // aux_optimizer.zero_grad(); aux_optimizer.step()`: the auxiliary step applies nothing).
    bool backward_before = false;
    for (size_t b = 0; b < z; ++b) {
      if (ev[b].kind == Event::Backward) backward_before = true;
      if (ev[b].kind == Event::Step && (ev[z].opt.empty() || ev[b].opt == ev[z].opt))
        backward_before = false;  // that backward was consumed
    }
    if (!backward_before) continue;
    for (size_t s = z + 1; s < ev.size(); ++s) {
      // Gradients recomputed, or written by hand, before the step.
      if (ev[s].kind == Event::Backward || ev[s].kind == Event::GradWrite) break;
      if (ev[s].kind != Event::Step) continue;
      if (!ev[z].opt.empty() && ev[z].opt != ev[s].opt) continue;
      std::string what = ev[z].opt.empty() ? "the model's gradients" : "`" + ev[z].opt + "`'s gradients";
      std::string message = "`" + ctx.text(f.e(ev[z].call).range) + "` resets " + what +
                            " after backward() and before `" + ev[s].opt +
                            ".step()`, so the step applies zero (or None) gradients and the model never learns; "
                            "move the reset before backward() or after step()";
      // Impact: a few steps, or a benchmark: what the update computes is not at stake.
      const std::string why = training_not_at_stake(f, f.calls[f.call_index.at(ev[z].call)].loop, stake);
      Finding* fd = why.empty() ? ctx.report("LL202", f.e(ev[z].call).range, std::move(message))
                                : ctx.report_weak("LL202", f.e(ev[z].call).range, std::move(message), why);
      if (fd) {
        // Fix: move the reset statement to just after the step statement.
        Id zs = f.calls[f.call_index.at(ev[z].call)].stmt;
        Id ss = f.calls[f.call_index.at(ev[s].call)].stmt;
        const Stmt& zst = f.m.s(zs);
        const Stmt& sst = f.m.s(ss);
        if (zst.kind == StmtKind::Expr && zst.value == ev[z].call && sst.kind == StmtKind::Expr &&
            ctx.indent_at(zst.range.begin) == ctx.indent_at(sst.range.begin) &&
            zst.range.line != sst.range.line) {
          uint32_t zb = ctx.line_start(zst.range.begin), ze = zst.range.end;
          while (ze < ctx.source.size() && ctx.source[ze] != '\n') ++ze;
          if (ze < ctx.source.size()) ++ze;
          uint32_t se = sst.range.end;
          while (se < ctx.source.size() && ctx.source[se] != '\n') ++se;
          if (se > 0 && se <= ctx.source.size() && ctx.source[se - 1] == '\r') --se;
          std::string line(ctx.source.substr(zb, ze - zb));
          bool only = ctx.text(zst.range) == line.substr(ctx.indent_at(zst.range.begin).size(),
                                                         zst.range.end - zst.range.begin);
          if (only) {
            Fix fix;
            fix.title = "Move the reset after `" + ev[s].opt + ".step()`";
            fix.safe = false;
            fix.edits.push_back({zb, ze, ""});
            std::string moved = line;
            if (!moved.empty() && moved.back() == '\n') moved.pop_back();
            if (!moved.empty() && moved.back() == '\r') moved.pop_back();
            fix.edits.push_back({se, se, ctx.newline() + moved});
            fd->fixes.push_back(std::move(fix));
          }
        }
      }
      break;
    }
  }
}

}  // namespace

void check_LL202(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  // Loops that write gradients by hand (`for p, q in ...: p.grad = p.data - q.data`).
  GradWriters gw;
  for (const Loop& l : f.loops) {
    if (l.stmt == kNone) continue;
    bool writes = false;
    for (Id inner : l.stmts) writes = writes || fills_grad(f, f.m.s(inner));
    for (int ci : l.calls) writes = writes || writes_grad(f, f.calls[ci]);
    if (writes) gw.loops.insert(l.stmt);
  }
  for (const StmtSite& ss : f.stmt_sites)
    if (ss.func != kNone && fills_grad(f, f.m.s(ss.stmt))) gw.funcs.insert(ss.func);
  for (const CallSite& c : f.calls)
    if (c.func != kNone && writes_grad(f, c)) gw.funcs.insert(c.func);
  for (int round = 0; round < 8 && !gw.funcs.empty(); ++round) {
    size_t before = gw.funcs.size();
    for (const CallSite& c : f.calls)
      if (c.func != kNone && c.target_func != kNone && gw.funcs.count(c.target_func)) gw.funcs.insert(c.func);
    if (gw.funcs.size() == before) break;
  }
  TrainingStakeMemo stake;
  for (const Loop& l : f.loops)
    if (l.stmt != kNone) check_unit(ctx, gw, f.m.s(l.stmt).body, stake);
  for (const Function& fn : f.m.funcs) check_unit(ctx, gw, fn.body, stake);
  check_unit(ctx, gw, f.m.body, stake);
}

}  // namespace ll
