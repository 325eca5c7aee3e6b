// LL404 cuda-in-dataloader-worker: worker-side code (__getitem__, collate_fn,
// worker_init_fn) creates or moves tensors onto CUDA.
#include <set>

#include "checks/common.hpp"
#include "checks/dataloader.hpp"

namespace ll {
namespace {

void check_function(CheckContext& ctx, Id func, const std::string& role) {
  const Facts& f = ctx.facts;
  for (const CallSite& c : f.calls) {
    if (c.func != func) continue;
    // `self.device` set in __init__ to torch.device("cuda") counts through bindings.
    if (!is_cuda_call(f, c)) continue;
    ctx.report("LL404", f.e(c.call).range,
               "`" + role + "` runs in DataLoader worker processes and uses CUDA here: with fork this fails (\"Cannot "
               "re-initialize CUDA in forked subprocess\"), with spawn/forkserver every worker creates its own CUDA "
               "context (hundreds of MiB of GPU memory each); return CPU tensors, use `pin_memory=True` and move "
               "batches in the main loop with `non_blocking=True`");
    return;  // the first use is enough
  }
}

}  // namespace

void check_LL404(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  for (Id cls = 0; cls < f.m.classes.size(); ++cls) {
    if (!f.class_derives(cls, {"Dataset", "IterableDataset"})) continue;
    bool used = f.cfg.assume_dataloader_workers || f.used_with_workers_elsewhere(cls);
    for (int li : loaders_of_class(f, cls))
      if (workers_of(f, f.calls[li]) != 0) used = true;
    if (!used) continue;
    for (Id fn : f.m.classes[cls].methods)
      if (f.m.funcs[fn].name == "__getitem__"sv || f.m.funcs[fn].name == "__iter__"sv ||
          f.m.funcs[fn].name == "__getitems__"sv)
        check_function(ctx, fn, f.m.classes[cls].name + "." + f.m.funcs[fn].name);
  }
  std::set<Id> done;
  for (auto [fn, loader] : worker_functions(f))
    if (done.insert(fn).second) check_function(ctx, fn, f.m.funcs[fn].name);
}

}  // namespace ll
