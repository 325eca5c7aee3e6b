// LL501 fork-with-cuda: a process is started with the fork start method in a program that
// uses CUDA before starting it (or in the child).
#include <map>
#include <set>

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

}  // namespace

// Does a call of `q` start a process (a Process, a pool, torch's spawn, os.fork)?
bool starts_a_process(const std::string& q) {
  return ends_with(q, "multiprocessing.Process") || ends_with(q, "multiprocessing.Pool") ||
         ends_with(q, "multiprocessing.pool.Pool") || q == "concurrent.futures.ProcessPoolExecutor"sv ||
         q == "torch.multiprocessing.spawn"sv || q == "torch.multiprocessing.start_processes"sv || q == "os.fork"sv;
}

void check_LL501(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  // Where CUDA is used: module level, and per function. A lambda's body runs when it is
  // called, not where it is defined (`cuda = lambda arr, gpu: arr.cuda(gpu)` at module level
  // initialises nothing at import).
  std::vector<uint32_t> first_cuda(f.m.funcs.size() + 1, UINT32_MAX);
  bool lambda_cuda = false;
  for (const CallSite& c : f.calls)
    if (c.in_lambda && is_cuda_call(f, c)) {
      lambda_cuda = true;
    } else if (is_cuda_call(f, c)) {
      uint32_t& slot = first_cuda[c.func == kNone ? f.m.funcs.size() : c.func];
      slot = std::min(slot, f.e(c.call).range.begin);
    }
  // A call of a lambda bound to a name (`to_device = lambda x: x.cuda()`) or of a function of
  // the file that reaches CUDA runs CUDA where it is called.
  if (lambda_cuda || !f.m.funcs.empty()) {
    std::set<std::string> cuda_lambdas;
    for (const CallSite& c : f.calls)
      if (c.in_lambda && c.stmt != kNone && is_cuda_call(f, c)) {
        const Stmt& st = f.m.s(c.stmt);
        if (st.kind == StmtKind::Assign && st.value != kNone && f.e(st.value).kind == ExprKind::Lambda)
          for (Id t : st.targets)
            if (f.e(t).kind == ExprKind::Name) cuda_lambdas.insert(f.e(t).text);
      }
    std::map<Id, bool> reaches_cuda;
    for (const CallSite& c : f.calls) {
      if (c.in_lambda) continue;
      bool runs = false;
      if (c.target_func != kNone && c.target_func != c.func) {
        // (Not a function that starts processes itself, `main()` called by the main guard:
        // where its CUDA falls against its forks is its own program order.)
        auto [it, fresh] = reaches_cuda.try_emplace(c.target_func, false);
        if (fresh)
          it->second = f.reaches(c.target_func, [&](const CallSite& x) { return is_cuda_call(f, x); }) &&
                       !f.reaches(c.target_func, [&](const CallSite& x) {
                         const std::string& q = f.callee_qual(x.call);
                         return starts_a_process(q) || ends_with(q, "multiprocessing.set_start_method") ||
                                ends_with(q, "multiprocessing.get_context");
                       });
        runs = it->second;
      } else if (!cuda_lambdas.empty()) {
        const Expr& callee = f.e(f.e(c.call).kids[0]);
        runs = callee.kind == ExprKind::Name && cuda_lambdas.count(callee.text) > 0;
      }
      if (runs) {
        uint32_t& slot = first_cuda[c.func == kNone ? f.m.funcs.size() : c.func];
        slot = std::min(slot, f.e(c.call).range.begin);
      }
    }
  }
  bool module_cuda = first_cuda[f.m.funcs.size()] != UINT32_MAX;
  bool any_cuda = lambda_cuda;
  for (uint32_t v : first_cuda) any_cuda |= v != UINT32_MAX;
  if (!any_cuda) return;  // CPU-only program

  // A program-wide start method: spawn/forkserver makes the default safe; an explicit fork
  // is reported where it is chosen, not again at every process.
  bool spawn_configured = false;
  for (const CallSite& c : f.calls) {
    const std::string& q = f.callee_qual(c.call);
    if (ends_with(q, "multiprocessing.set_start_method")) {
      std::string m = literal_arg(f, c.call, 0, "method");
      if (m == "spawn"sv || m == "forkserver"sv || m == "fork"sv) spawn_configured = true;
    }
  }
  // What the forked child runs: the Process target, or what is handed to the pool
  // (`pool.map(fn, ...)`, `executor.submit(fn, ...)`), and whether that reaches CUDA through
  // the file's functions. A function of another module (or a lambda) is not visible here.
  enum class Child { NoCuda, Cuda, Unknown };
  // Module-level names bound to CUDA tensors or models (`table = torch.arange(n,
  // device="cuda")`): a child that reads one uses the parent's CUDA memory.
  std::set<std::string> cuda_globals;
  for (const CallSite& c : f.calls)
    if (c.func == kNone && c.stmt != kNone && is_cuda_call(f, c)) {
      const Stmt& st = f.m.s(c.stmt);
      if (st.kind == StmtKind::Assign || st.kind == StmtKind::AnnAssign)
        for (Id t : st.targets)
          if (f.e(t).kind == ExprKind::Name) cuda_globals.insert(f.e(t).text);
    }
  auto reads_cuda_global = [&](Id fn) {
    if (cuda_globals.empty()) return false;
    const Range& r = f.m.funcs[fn].range;
    for (const Expr& x : f.m.exprs)
      if (x.kind == ExprKind::Name && x.range.begin >= r.begin && x.range.end <= r.end && cuda_globals.count(x.text))
        return true;
    return false;
  };
  auto callable_child = [&](Id callee, Id func, auto& self, int depth) -> Child {
    if (callee == kNone || depth > 3) return Child::Unknown;
    const Expr& ce = f.e(callee);
    if (ce.kind == ExprKind::Call && (f.callee_qual(callee) == "functools.partial"sv))
      return self(f.arg(callee, 0, "func"), func, self, depth + 1);
    if (ce.kind != ExprKind::Name || !ce.qname.empty()) return Child::Unknown;
    // A local bound once to the work (`fn = partial(preprocess, out_dir=d)`, then
    // `pool.imap_unordered(fn, images)`): what it is bound to.
    if (const std::vector<Id> bound = f.bindings_at(func, ce.text, callee); bound.size() == 1 && bound[0] != callee)
      return self(bound[0], func, self, depth + 1);
    bool found = false;
    for (Id fn = 0; fn < f.m.funcs.size(); ++fn) {
      const Function& d = f.m.funcs[fn];
      if (d.name != ce.text || d.cls != kNone || (d.parent != kNone && d.parent != func)) continue;
      found = true;
      if (reads_cuda_global(fn) || f.reaches(fn, [&](const CallSite& x) { return is_cuda_call(f, x); }))
        return Child::Cuda;
    }
    return found ? Child::NoCuda : Child::Unknown;
  };
  auto child_of = [&](const CallSite& c, const std::string& q) -> Child {
    if (ends_with(q, "Process")) {
      Id t = f.arg(c.call, 1, "target");
      return t == kNone ? Child::Unknown : callable_child(t, c.func, callable_child, 0);
    }
    // A pool: the name it is bound to (`pool = Pool(4)`, `with Pool(4) as pool:`), then the
    // work handed to it in the same function.
    std::string pool;
    if (c.stmt != kNone) {
      const Stmt& st = f.m.s(c.stmt);
      if (st.kind == StmtKind::Assign && st.value == c.call && st.targets.size() == 1) pool = f.dotted(st.targets[0]);
      if (st.kind == StmtKind::With)
        for (size_t k = 0; k < st.items.size() && k < st.targets.size(); ++k)
          if (st.items[k] == c.call && st.targets[k] != kNone) pool = f.dotted(st.targets[k]);
    }
    Child out = Child::Unknown;
    bool any = false;
    for (const CallSite& x : f.calls) {
      if (x.func != c.func) continue;
      Id r = f.callee_receiver(x.call);
      if (r == kNone || !(r == c.call || (!pool.empty() && f.dotted(r) == pool))) continue;
      if (!in(f.callee_attr(x.call), {"map", "imap", "imap_unordered", "starmap", "map_async", "starmap_async", "apply",
                                      "apply_async", "submit"}))
        continue;
      Child w = callable_child(f.arg(x.call, 0, "func"), c.func, callable_child, 0);
      if (w == Child::Cuda) return Child::Cuda;
      out = !any || out == Child::NoCuda ? w : out;
      any = true;
    }
    return any ? out : Child::Unknown;
  };
  auto parent_cuda_before = [&](const CallSite& c) {
    if (c.func != kNone && module_cuda) return true;  // module level runs first, at import
    uint32_t first = first_cuda[c.func == kNone ? f.m.funcs.size() : c.func];
    return first < f.e(c.call).range.begin;
  };
  const std::string msg =
      "the child process is started with fork after CUDA is initialised: it inherits a CUDA state it cannot use "
      "(\"Cannot re-initialize CUDA in forked subprocess\"); use `mp.get_context('spawn')` or "
      "`set_start_method('spawn')` (spawn needs picklable targets: a lambda or closure must become a top-level "
      "function)";
  const std::string fragile_msg =
      "the child process is started with fork and initialises CUDA itself: this works only while the parent has "
      "not initialised CUDA before the fork (one CUDA call there and every child fails with \"Cannot "
      "re-initialize CUDA in forked subprocess\"); use `mp.get_context('spawn')` or `set_start_method('spawn')` "
      "(spawn needs picklable targets: a lambda or closure must become a top-level function)";
  for (const CallSite& c : f.calls) {
    const std::string& q = f.callee_qual(c.call);
    // Explicit fork.
    std::string method;
    if (ends_with(q, "multiprocessing.set_start_method") || ends_with(q, "multiprocessing.get_context"))
      method = literal_arg(f, c.call, 0, "method");
    else if (q == "torch.multiprocessing.start_processes"sv)
      method = literal_arg(f, c.call, static_cast<size_t>(-1), "start_method");
    if (method == "fork"sv) {
      // `set_start_method('fork')` in a file that starts no process of its own: on Linux the
      // DataLoader's workers fork whatever it says; what it changes is how processes started
      // elsewhere begin (weak).
      const bool starts_processes = std::any_of(f.calls.begin(), f.calls.end(),
                                                [&](const CallSite& p) { return starts_a_process(f.callee_qual(p.call)); });
      Finding* fd = ends_with(q, "multiprocessing.set_start_method") && !starts_processes
                        ? ctx.report_weak("LL501", f.e(c.call).range, msg,
                                          "this file starts no process itself: DataLoader workers fork on Linux "
                                          "whatever the start method says, so this changes only how processes "
                                          "started elsewhere begin")
                        : ctx.report("LL501", f.e(c.call).range, msg);
      if (fd) {
        Id a = f.arg(c.call, q == "torch.multiprocessing.start_processes"sv ? static_cast<size_t>(-1) : 0,
                     q == "torch.multiprocessing.start_processes"sv ? "start_method" : "method");
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
    if (q == "os.fork"sv) {
      // The child continues the parent's program: CUDA initialised before the fork, in
      // program order (a notebook's earlier cells, the function's earlier lines), breaks it.
      if (parent_cuda_before(c)) ctx.report("LL501", f.e(c.call).range, msg);
      continue;
    }
    // The platform default (fork on Linux) when nothing selects spawn/forkserver.
    if (spawn_configured) continue;
    if (q == "multiprocessing.Process"sv || q == "multiprocessing.Pool"sv || q == "multiprocessing.pool.Pool"sv ||
        q == "torch.multiprocessing.Process"sv || q == "torch.multiprocessing.Pool"sv ||
        q == "concurrent.futures.ProcessPoolExecutor"sv) {
      if (q == "concurrent.futures.ProcessPoolExecutor"sv && f.arg(c.call, static_cast<size_t>(-1), "mp_context") != kNone)
        continue;
      const Child child = child_of(c, q);
      const bool before = parent_cuda_before(c);
      if (child == Child::Cuda && before)
        ctx.report("LL501", f.e(c.call).range, msg);
      else if (child == Child::Cuda)
        // Works while the parent stays off CUDA until the fork; one CUDA call added there
        // (or made by an imported library) breaks every child.
        ctx.report_weak("LL501", f.e(c.call).range, fragile_msg,
                        "the parent has not initialised CUDA when it forks; the child initialises it itself");
      else if (child == Child::Unknown && before)
        ctx.report_weak("LL501", f.e(c.call).range, msg,
                        "what the child runs is not visible in this file; a child that never touches CUDA is safe");
      // A child that never reaches CUDA is safe after fork, whatever the parent did (like
      // DataLoader workers).
    }
  }
}

}  // namespace ll
