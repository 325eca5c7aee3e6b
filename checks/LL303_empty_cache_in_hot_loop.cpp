// LL303 empty-cache-in-hot-loop: empty_cache() inside a per-batch loop body.
#include "checks/common.hpp"

namespace ll {

void check_LL303(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  for (const CallSite& c : f.calls) {
    // In an except clause it is OOM recovery, not per-batch work.
    if (c.loop < 0 || c.in_lambda || c.try_handler >= 0) continue;
    if (!f.is_torch_call(c.call, {"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache",
                                  "c10.cuda.CUDACachingAllocator.emptyCache"}))
      continue;
    // Under a periodic condition (`if step % 100 == 0:`) it runs at phase boundaries.
    if (c.guard != kNone) {
      bool periodic = false;
      for_each_expr(f.m, c.guard, [&](Id x) {
        if (f.e(x).kind == ExprKind::BinOp && f.e(x).text == "%") periodic = true;
        return !periodic;
      });
      if (periodic) continue;
    }
    bool hot = iterates_batches(f, c.loop);
    if (!hot)
      for (int ci : f.loops[c.loop].calls)
        if (f.calls[ci].loop == c.loop && f.is_backward(f.calls[ci])) hot = true;
    if (!hot) continue;
    ctx.report("LL303", f.e(c.call).range,
               "`empty_cache()` runs on every batch: it forces the caching allocator to give memory back to the "
               "driver and request it again on the next iteration, which costs time and does not lower peak "
               "memory; call it at phase boundaries (after evaluation, between models), not per batch");
  }
}

}  // namespace ll
