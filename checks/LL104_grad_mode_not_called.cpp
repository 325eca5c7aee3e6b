// LL104 grad-mode-not-called: `with torch.no_grad:` without the call parentheses.
#include "checks/common.hpp"

namespace ll {
namespace {

bool is_grad_mode_class(const std::string& q) {
  return q == "torch.no_grad"sv || q == "torch.enable_grad"sv || q == "torch.inference_mode"sv ||
         q == "torch.autograd.no_grad"sv || q == "torch.autograd.enable_grad"sv ||
         q == "torch.autograd.grad_mode.no_grad"sv || q == "torch.autograd.grad_mode.enable_grad"sv ||
         q == "torch.autograd.grad_mode.inference_mode"sv;
}

void report(CheckContext& ctx, Id item, const std::string& what, const std::string& consequence) {
  const Facts& f = ctx.facts;
  std::string text = ctx.text(item);
  Finding* fd = ctx.report("LL104", f.e(item).range,
                           "`" + text + "` " + what + " is the class, not a context manager instance: " +
                               consequence + "; call it: `" + text + "()`");
  if (!fd) return;
  Fix fix;
  fix.title = "Call `" + text + "()`";
  fix.safe = true;
  fix.edits.push_back({f.e(item).range.end, f.e(item).range.end, "()"});
  fd->fixes.push_back(std::move(fix));
}

}  // namespace

void check_LL104(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  const Module& m = f.m;
  for (const Stmt& s : m.stmts) {
    if (s.kind != StmtKind::With) continue;
    for (Id item : s.items) {
      if (item == kNone) continue;
      const Expr& x = f.e(item);
      if ((x.kind == ExprKind::Name || x.kind == ExprKind::Attribute) && is_grad_mode_class(x.qname))
        report(ctx, item, "without parentheses",
               "entering the `with` raises an error at run time (AttributeError/TypeError: the class has no "
               "`__enter__` bound to an instance)");
    }
  }
  // `@torch.no_grad` without parentheses is valid only from torch 2.0 on.
  if (f.cfg.torch_major < 2) {
    for (const Function& fn : m.funcs)
      for (Id d : fn.decorators) {
        const Expr& x = f.e(d);
        if ((x.kind == ExprKind::Name || x.kind == ExprKind::Attribute) &&
            (x.qname == "torch.no_grad"sv || x.qname == "torch.enable_grad"sv || x.qname == "torch.autograd.no_grad"sv))
          report(ctx, d, "used as a bare decorator",
                 "before torch 2.0 (configured `torch-version`) this raises TypeError when the function is defined");
      }
  }
}

}  // namespace ll
