// LL302 empty-cache-before-release: empty_cache() runs while the object it should free is
// still referenced; the reference is dropped only afterwards in the same block.
#include <set>

#include "checks/common.hpp"
#include "checks/flow.hpp"

namespace ll {
namespace {

bool is_empty_cache(const Facts& f, Id stmt) {
  const Stmt& s = f.m.s(stmt);
  if (s.kind != StmtKind::Expr || s.value == kNone || f.e(s.value).kind != ExprKind::Call) return false;
  return f.is_torch_call(s.value, {"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache",
                                   "c10.cuda.CUDACachingAllocator.emptyCache"});
}

// The empty_cache() call statement `stmt` is, or ends with: a guard around it without an
// else (`if torch.cuda.is_available(): torch.cuda.empty_cache()`) runs it at the same point of
// the block. kNone when there is none.
Id empty_cache_at_end(const Facts& f, Id stmt, int depth = 0) {
  if (is_empty_cache(f, stmt)) return f.m.s(stmt).value;
  const Stmt& s = f.m.s(stmt);
  if (depth > 8 || s.kind != StmtKind::If || !s.orelse.empty() || s.body.empty()) return kNone;
  return empty_cache_at_end(f, s.body.back(), depth + 1);
}

// `gc.collect()` as a statement.
bool is_gc_collect(const Facts& f, Id stmt) {
  const Stmt& s = f.m.s(stmt);
  return s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call &&
         f.qual(f.e(s.value).kids[0]) == "gc.collect";
}

std::string released_name(const Facts& f, Id stmt) {
  const Stmt& s = f.m.s(stmt);
  if (s.kind == StmtKind::Delete && !s.targets.empty()) return f.dotted(s.targets[0]);
  if (s.kind == StmtKind::Assign && s.value != kNone && f.e(s.value).kind == ExprKind::Literal &&
      f.e(s.value).lit == LitKind::None && !s.targets.empty())
    return f.dotted(s.targets[0]);
  return "";
}

// Was `name` holding an object when empty_cache() ran: a binding of the function reaches
// the call, or it is a parameter or an attribute (bound outside)?
bool live_before(const Facts& f, const std::vector<Id>& body, size_t call, const std::string& name, Id func) {
  const Id call_stmt = body[call];
  if (name.find('.') != std::string::npos) {
    // An attribute: the block's last statement about it before the call decides (`del
    // self.gradients` or `self.gradients = None` drops it, another assignment binds it).
    for (size_t k = call; k-- > 0;) {
      const Stmt& s = f.m.s(body[k]);
      if (s.kind != StmtKind::Delete && s.kind != StmtKind::Assign) continue;
      for (Id t : s.targets)
        if (f.dotted(t) == name)
          return !(s.kind == StmtKind::Delete ||
                   (s.value != kNone && f.e(s.value).kind == ExprKind::Literal && f.e(s.value).lit == LitKind::None));
    }
    return true;
  }
  bool outside = false;
  if (!f.flow().reaching(call_stmt, name, &outside).empty()) return true;
  if (outside && func != kNone)
    for (const auto& p : f.m.funcs[func].params)
      if (p == name) return true;
  return false;
}

// At the call, does what `name` names hold no tensor memory, by the values of its base that
// reach the call? A literal holds none; the `.grad` of a tensor built there without
// `requires_grad=True` (`x = torch.tensor([1, 2, 3])`, then `x.grad = None`) is None. (A
// notebook's name bound to a GPU tensor only in a later cell says nothing about this point.)
bool holds_nothing_at(const Facts& f, Id call_stmt, const std::string& name) {
  const size_t dot = name.find('.');
  const std::string base = name.substr(0, dot);
  const std::string rest = dot == std::string::npos ? "" : name.substr(dot + 1);
  bool outside = false;
  const std::vector<Def> defs = f.flow().reaching(call_stmt, base, &outside);
  if (outside || defs.empty()) return false;
  for (const Def& df : defs) {
    if (df.kind != DefKind::Assign || df.value == kNone) return false;
    const Expr& v = f.e(df.value);
    if (v.kind == ExprKind::Literal) continue;
    if (rest != "grad" || v.kind != ExprKind::Call) return false;
    const std::string& q = f.callee_qual(df.value);
    if (!starts_with(q, "torch.") ||
        !in(f.last_component(q), {"tensor"sv, "zeros"sv, "ones"sv, "rand"sv, "randn"sv, "randint"sv, "arange"sv,
                                  "linspace"sv, "empty"sv, "full"sv, "from_numpy"sv, "as_tensor"sv, "eye"sv}))
      return false;
    const Id rg = f.arg(df.value, static_cast<size_t>(-1), "requires_grad");
    if (rg != kNone && !(f.e(rg).kind == ExprKind::Literal && f.e(rg).lit == LitKind::False)) return false;
  }
  if (rest != "grad") return true;
  // (Nor switched on anywhere in its scope: `x.requires_grad_()`, `x.requires_grad = True`.)
  const auto si = f.stmt_index.find(call_stmt);
  const Id func = si == f.stmt_index.end() ? kNone : f.stmt_sites[si->second].func;
  for (int ci : f.calls_in(func))
    if (f.callee_attr(f.calls[ci].call) == "requires_grad_"sv && f.dotted(f.callee_receiver(f.calls[ci].call)) == base)
      return false;
  return f.bindings(func, base + ".requires_grad").empty();
}

// A name that says it holds configuration (`dataset_config`, `args`, `cfg`, `out_dir`): an
// object of settings and paths, with no tensor of its own for empty_cache() to return.
bool names_configuration(const std::string& name) {
  for (const auto& t : Facts::name_tokens(name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1)))
    if (in(t, {"config"sv, "cfg"sv, "conf"sv, "configs"sv, "settings"sv, "args"sv, "opts"sv, "options"sv,
               "hparams"sv, "path"sv, "paths"sv, "dir"sv, "filename"sv}))
      return true;
  return false;
}

// Is `name` bound again by a statement of `stmts` (at any depth)? `checkpoint = None` followed
// by `if resume: checkpoint = load(...)` initialises a default; it releases nothing.
bool bound_again(const Facts& f, const std::vector<Id>& stmts, const std::string& name, int depth = 0) {
  if (depth > 16) return false;
  for (Id sid : stmts) {
    const Stmt& s = f.m.s(sid);
    if (s.kind == StmtKind::FunctionDef || s.kind == StmtKind::ClassDef) continue;
    if (s.kind == StmtKind::Assign || s.kind == StmtKind::AnnAssign || s.kind == StmtKind::For)
      for (Id t : s.targets)
        if (f.dotted(t) == name) return true;
    if (bound_again(f, s.body, name, depth + 1) || bound_again(f, s.orelse, name, depth + 1) ||
        bound_again(f, s.finalbody, name, depth + 1))
      return true;
    for (const auto& h : s.handlers)
      if (bound_again(f, h.body, name, depth + 1)) return true;
  }
  return false;
}

void check_block(CheckContext& ctx, const std::vector<Id>& body) {
  const Facts& f = ctx.facts;
  for (size_t i = 0; i < body.size(); ++i) {
    const Id call = empty_cache_at_end(f, body[i]);
    if (call == kNone) continue;
    auto si = f.stmt_index.find(body[i]);
    Id func = si == f.stmt_index.end() ? kNone : f.stmt_sites[si->second].func;
    std::set<std::string> rebound;
    for (size_t j = i + 1; j < body.size(); ++j) {
      std::string name = released_name(f, body[j]);
      if (name.empty()) {
        const Stmt& s = f.m.s(body[j]);
        if (s.kind == StmtKind::Assign)
          for (Id t : s.targets) rebound.insert(f.dotted(t));
        continue;
      }
      // `x = None` that initialises a new name, or releases an object bound after the
      // empty_cache() call, says nothing about what was live at the call.
      if (rebound.count(name) || names_configuration(name) || !live_before(f, body, i, name, func) ||
          holds_nothing_at(f, body[i], name) ||
          (f.m.s(body[j]).kind == StmtKind::Assign &&
           bound_again(f, std::vector<Id>(body.begin() + static_cast<long>(j) + 1, body.end()), name))) {
        rebound.insert(name);
        continue;
      }
      // Still used between the call and the release (`empty_cache(); out = pipe(x); del pipe`):
      // the object could not have been released before the call, so there is nothing to
      // reorder; the call is early, not misplaced.
      if (f.flow().read_after(body[i], name, body[j])) {
        rebound.insert(name);
        continue;
      }
      // The release is followed by a flush of its own (`del dummy_input, outputs;
      // torch.cuda.empty_cache()`): what it drops is returned there, and the earlier call marks
      // a boundary of its own (after a warm-up, before a measurement).
      // Its own: only more releases (`del`, `= None`, `gc.collect()`) stand between them; a flush
      // later in the block, after other work, is another boundary and leaves this call misplaced.
      bool flushed_after = false;
      for (size_t k = j + 1; k < body.size() && !flushed_after; ++k) {
        flushed_after = empty_cache_at_end(f, body[k]) != kNone;
        if (!flushed_after && released_name(f, body[k]).empty() && !is_gc_collect(f, body[k])) break;
      }
      if (flushed_after) break;
      Finding* fd = ctx.report(
          "LL302", f.e(call).range,
          "`empty_cache()` runs while `" + name + "` is still referenced (it is released only afterwards): "
          "empty_cache() only returns unused cached blocks, live tensors are not freed, so this call releases "
          "nothing of it; drop the references (and `gc.collect()`) first, then call empty_cache()");
      if (fd) fd->notes.push_back({f.m.s(body[j]).range, "reference dropped here"});
      break;
    }
  }
}

}  // namespace

void check_LL302(CheckContext& ctx) {
  const Module& m = ctx.facts.m;
  check_block(ctx, m.body);
  for (const Function& fn : m.funcs) check_block(ctx, fn.body);
  for (const Stmt& s : m.stmts) {
    if (s.kind == StmtKind::FunctionDef) continue;
    check_block(ctx, s.body);
    check_block(ctx, s.orelse);
    check_block(ctx, s.finalbody);
    for (const auto& h : s.handlers) check_block(ctx, h.body);
  }
}

}  // namespace ll
