// LL401 dataloader-invalid-worker-options: DataLoader options that need worker processes
// given while num_workers is 0, which PyTorch rejects with ValueError at construction.
#include "checks/common.hpp"
#include "checks/dataloader.hpp"

namespace ll {

void check_LL401(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  for (const CallSite& c : f.calls) {
    if (!is_dataloader_call(f, c.call) || f.has_kwargs_splat(c.call)) continue;
    Id nw = f.arg(c.call, 5, "num_workers");
    bool zero;
    if (nw == kNone) {
      zero = true;
    } else {
      const Expr* lit = f.literal_of(nw, c.func);
      zero = lit && lit->lit == LitKind::Int && lit->text == "0"sv;
    }
    if (!zero) continue;
    std::string bad;
    Id pf = f.arg(c.call, static_cast<size_t>(-1), "prefetch_factor");
    if (pf != kNone) {
      const Expr* lit = f.literal_of(pf, c.func);
      bool none = lit && lit->lit == LitKind::None;
      // torch < 2.0 used 2 as the default and only rejected other values.
      bool default_old = f.cfg.torch_major < 2 && lit && lit->lit == LitKind::Int && lit->text == "2"sv;
      if (!none && !default_old && (lit || f.cfg.torch_major >= 2)) bad = "`prefetch_factor`";
    }
    Id pw = f.arg(c.call, static_cast<size_t>(-1), "persistent_workers");
    if (pw != kNone) {
      const Expr* lit = f.literal_of(pw, c.func);
      if (lit && lit->lit == LitKind::True) bad = bad.empty() ? "`persistent_workers=True`" : bad + " and `persistent_workers=True`";
    }
    Id mc = f.arg(c.call, 11, "multiprocessing_context");
    if (mc != kNone) {
      const Expr* lit = f.literal_of(mc, c.func);
      if (!(lit && lit->lit == LitKind::None))
        bad = bad.empty() ? "`multiprocessing_context`" : bad + " and `multiprocessing_context`";
    }
    if (bad.empty()) continue;
    ctx.report("LL401", f.e(c.call).range,
               "DataLoader sets " + bad + " while `num_workers` is " + (nw == kNone ? "not set (0)" : "0") +
                   ": these options only apply to worker processes and PyTorch raises ValueError when the "
                   "DataLoader is constructed; set `num_workers` > 0 or drop them");
  }
}

}  // namespace ll
