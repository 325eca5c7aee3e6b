// LL501 fork-with-cuda: a process is started with the fork start method in a program that
// uses CUDA before starting it (or in the child).
#include "checks/common.hpp"
#include "checks/dataloader.hpp"

namespace ll {
namespace {

std::string literal_arg(const Facts& f, Id call, size_t pos, const char* kw) {
  Id a = f.arg(call, pos, kw);
  if (a == kNone) return "";
  const Expr* lit = f.literal_of(a, f.calls[f.call_index.at(call)].func);
  return lit && lit->lit == LitKind::String ? lit->text : "";
}

bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

}  // namespace

void check_LL501(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  // Where CUDA is used: module level, and per function.
  std::vector<uint32_t> first_cuda(f.m.funcs.size() + 1, UINT32_MAX);
  for (const CallSite& c : f.calls)
    if (is_cuda_call(f, c)) {
      uint32_t& slot = first_cuda[c.func == kNone ? f.m.funcs.size() : c.func];
      slot = std::min(slot, f.e(c.call).range.begin);
    }
  bool module_cuda = first_cuda[f.m.funcs.size()] != UINT32_MAX;
  bool any_cuda = false;
  for (uint32_t v : first_cuda) any_cuda |= v != UINT32_MAX;
  if (!any_cuda) return;  // CPU-only program

  // A program-wide start method: spawn/forkserver makes the default safe; an explicit fork
  // is reported where it is chosen, not again at every process.
  bool spawn_configured = false;
  for (const CallSite& c : f.calls) {
    const std::string& q = f.callee_qual(c.call);
    if (ends_with(q, "multiprocessing.set_start_method")) {
      std::string m = literal_arg(f, c.call, 0, "method");
      if (m == "spawn" || m == "forkserver" || m == "fork") spawn_configured = true;
    }
  }
  auto func_uses_cuda = [&](Id fn) { return fn != kNone && first_cuda[fn] != UINT32_MAX; };
  auto target_uses_cuda = [&](const CallSite& c) {
    Id t = f.arg(c.call, static_cast<size_t>(-1), "target");
    if (t == kNone) t = f.arg(c.call, 0, "fn");
    if (t != kNone && f.e(t).kind == ExprKind::Name)
      for (Id fn = 0; fn < f.m.funcs.size(); ++fn)
        if (f.m.funcs[fn].name == f.e(t).text && func_uses_cuda(fn)) return true;
    return false;
  };
  auto parent_cuda_before = [&](const CallSite& c) {
    if (module_cuda) return true;
    if (c.func != kNone && first_cuda[c.func] < f.e(c.call).range.begin) return true;
    return false;
  };
  const std::string msg =
      "the child process is started with fork after CUDA is initialised: it inherits a CUDA state it cannot use "
      "(\"Cannot re-initialize CUDA in forked subprocess\"); use `mp.get_context('spawn')` or "
      "`set_start_method('spawn')` (spawn needs picklable targets: a lambda or closure must become a top-level "
      "function)";
  for (const CallSite& c : f.calls) {
    const std::string& q = f.callee_qual(c.call);
    // Explicit fork.
    std::string method;
    if (ends_with(q, "multiprocessing.set_start_method") || ends_with(q, "multiprocessing.get_context"))
      method = literal_arg(f, c.call, 0, "method");
    else if (q == "torch.multiprocessing.start_processes")
      method = literal_arg(f, c.call, static_cast<size_t>(-1), "start_method");
    if (method == "fork") {
      Finding* fd = ctx.report("LL501", f.e(c.call).range, msg);
      if (fd) {
        Id a = f.arg(c.call, q == "torch.multiprocessing.start_processes" ? static_cast<size_t>(-1) : 0,
                     q == "torch.multiprocessing.start_processes" ? "start_method" : "method");
        const Expr& lit = f.e(a);
        std::string quote(ctx.source.substr(lit.range.begin, 1));
        Fix fix;
        fix.title = "Use the spawn start method";
        fix.safe = false;
        fix.edits.push_back({lit.range.begin, lit.range.end, quote + "spawn" + quote});
        fd->fixes.push_back(std::move(fix));
      }
      continue;
    }
    if (q == "os.fork") {
      if (parent_cuda_before(c) || module_cuda) ctx.report("LL501", f.e(c.call).range, msg);
      continue;
    }
    // The platform default (fork on Linux) when nothing selects spawn/forkserver.
    if (spawn_configured) continue;
    if (q == "multiprocessing.Process" || q == "multiprocessing.Pool" || q == "multiprocessing.pool.Pool" ||
        q == "torch.multiprocessing.Process" || q == "torch.multiprocessing.Pool" ||
        q == "concurrent.futures.ProcessPoolExecutor") {
      if (q == "concurrent.futures.ProcessPoolExecutor" && f.arg(c.call, static_cast<size_t>(-1), "mp_context") != kNone)
        continue;
      if (parent_cuda_before(c) || target_uses_cuda(c)) ctx.report("LL501", f.e(c.call).range, msg);
    }
  }
}

}  // namespace ll
