// LL301 model-switch-without-release: a name holding a model is rebound to a new model
// (in a loop, or replacing self.<model> in a method) without releasing the old one first.
#include "checks/common.hpp"

namespace ll {
namespace {

bool mentions(const Facts& f, Id x, const std::string& d) {
  bool hit = false;
  for_each_expr(f.m, x, [&](Id y) {
    if (f.dotted(y) == d) hit = true;
    return !hit;
  });
  return hit;
}

// `del x`, `x = None`, `x.cpu()`, `x.to("cpu")` among the statements.
bool releases(const Facts& f, const std::vector<Id>& stmts, const std::string& d, uint32_t before) {
  for (Id sid : stmts) {
    const Stmt& s = f.m.s(sid);
    if (s.range.begin >= before) continue;
    if (s.kind == StmtKind::Delete)
      for (Id t : s.targets)
        if (f.dotted(t) == d) return true;
    if (s.kind == StmtKind::Assign && s.value != kNone && f.e(s.value).kind == ExprKind::Literal &&
        f.e(s.value).lit == LitKind::None)
      for (Id t : s.targets)
        if (f.dotted(t) == d) return true;
    if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call) {
      std::string a = f.callee_attr(s.value);
      if (f.dotted(f.callee_receiver(s.value)) == d &&
          (a == "cpu" || (a == "to" && f.arg(s.value, 0, "device") != kNone &&
                          f.e(f.arg(s.value, 0, "device")).text == "cpu")))
        return true;
    }
  }
  return false;
}

// Is the model kept on purpose (appended to a list, stored in a dict)?
bool stored(const Facts& f, const std::vector<Id>& stmts, const std::string& d) {
  for (Id sid : stmts) {
    const Stmt& s = f.m.s(sid);
    if (s.kind == StmtKind::Expr && s.value != kNone && f.e(s.value).kind == ExprKind::Call) {
      std::string a = f.callee_attr(s.value);
      if (a == "append" || a == "add" || a == "insert" || a == "extend")
        for (size_t k = 1; k < f.e(s.value).kids.size(); ++k)
          if (f.dotted(f.e(s.value).kids[k]) == d) return true;
    }
    if (s.kind == StmtKind::Assign && s.value != kNone && f.dotted(s.value) == d)
      for (Id t : s.targets)
        if (f.e(t).kind == ExprKind::Subscript) return true;
  }
  return false;
}

// Loaded with map_location="cpu" / device="cpu" and never moved to a GPU in the loop.
bool stays_on_cpu(const Facts& f, Id value, const std::vector<Id>& stmts, const std::string& d) {
  Id where = f.arg(value, static_cast<size_t>(-1), "map_location");
  if (where == kNone) where = f.arg(value, static_cast<size_t>(-1), "device");
  if (where == kNone || f.e(where).kind != ExprKind::Literal || f.e(where).text != "cpu") return false;
  for (Id sid : stmts) {
    bool moved = false;
    for_each_expr(f.m, f.m.s(sid).value, [&](Id x) {
      if (f.e(x).kind == ExprKind::Call && (f.callee_attr(x) == "cuda" || f.callee_attr(x) == "to") &&
          f.dotted(f.callee_receiver(x)) == d)
        moved = true;
      return !moved;
    });
    if (moved) return false;
  }
  return true;
}

void report(CheckContext& ctx, Id sid, const std::string& d) {
  ctx.report("LL301", ctx.facts.m.s(sid).range,
             "`" + d + "` is rebound to a new model while the previous one is still referenced: the old model stays "
             "resident until the new one is fully built (peak = old + new), and its freed blocks stay in PyTorch's "
             "cache, invisible to other processes; `del " + d + "` (or set it to None), `gc.collect()` and "
             "`torch.cuda.empty_cache()` before loading the next one");
}

}  // namespace

void check_LL301(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  for (const StmtSite& site : f.stmt_sites) {
    const Stmt& s = f.m.s(site.stmt);
    if (s.kind != StmtKind::Assign || s.value == kNone || s.targets.size() != 1) continue;
    if (f.e(s.value).kind != ExprKind::Call) continue;
    Id t = s.targets[0];
    std::string d = f.dotted(t);
    if (d.empty()) continue;
    // Wrapping or moving the same model (`model = model.cuda()`, `model = DDP(model)`) is no switch.
    if (mentions(f, s.value, d)) continue;
    if (!f.is_model_value(site.func, s.value)) continue;
    if (site.loop >= 0) {
      const Loop& L = f.loops[site.loop];
      if (L.stmt == kNone) continue;
      if (stays_on_cpu(f, s.value, L.stmts, d)) continue;
      if (releases(f, L.stmts, d, UINT32_MAX) || stored(f, L.stmts, d)) continue;
      report(ctx, site.stmt, d);
      continue;
    }
    // A method other than __init__ that replaces an existing self.<model>.
    if (site.func == kNone || d.rfind("self.", 0) != 0) continue;
    const Function& fn = f.m.funcs[site.func];
    if (fn.cls == kNone || fn.name == "__init__") continue;
    std::vector<Id> method_stmts;
    for (const StmtSite& o : f.stmt_sites)
      if (o.func == site.func) method_stmts.push_back(o.stmt);
    if (releases(f, method_stmts, d, s.range.begin)) continue;
    // Some other statement of the class binds it too (an existing model is replaced).
    bool existing = false;
    for (const StmtSite& o : f.stmt_sites) {
      if (o.stmt == site.stmt || o.func == kNone || f.m.funcs[o.func].cls != fn.cls) continue;
      const Stmt& os = f.m.s(o.stmt);
      if (os.kind == StmtKind::Assign)
        for (Id ot : os.targets)
          if (f.dotted(ot) == d && !(os.value != kNone && f.e(os.value).kind == ExprKind::Literal)) existing = true;
    }
    if (existing) report(ctx, site.stmt, d);
  }
}

}  // namespace ll
