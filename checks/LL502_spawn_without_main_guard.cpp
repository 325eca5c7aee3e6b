// LL502 spawn-without-main-guard: processes started with spawn/forkserver at module top
// level (outside `if __name__ == "__main__":`), so every child re-runs the start.
#include <set>

#include "checks/common.hpp"

namespace ll {
namespace {

bool is_main_guard(const Facts& f, Id cond) {
  if (cond == kNone || f.e(cond).kind != ExprKind::Compare) return false;
  bool name = false, main = false;
  for (Id k : f.e(cond).kids) {
    if (f.e(k).kind == ExprKind::Name && f.e(k).text == "__name__"sv) name = true;
    if (f.e(k).kind == ExprKind::Literal && f.e(k).text == "__main__"sv) main = true;
  }
  return name && main;
}

void mark(const Facts& f, const std::vector<Id>& body, std::set<Id>& out, int depth = 0) {
  if (depth > kMaxDepth) return;
  for (Id s : body) {
    out.insert(s);
    const Stmt& st = f.m.s(s);
    if (st.kind == StmtKind::FunctionDef || st.kind == StmtKind::ClassDef) continue;
    mark(f, st.body, out, depth + 1);
    mark(f, st.orelse, out, depth + 1);
    mark(f, st.finalbody, out, depth + 1);
    for (const auto& h : st.handlers) mark(f, h.body, out, depth + 1);
  }
}

std::string literal_str(const Facts& f, Id call, size_t pos, const char* kw) {
  Id a = f.arg(call, pos, kw);
  if (a == kNone || f.e(a).kind != ExprKind::Literal) return "";
  return f.e(a).text;
}

}  // namespace

void check_LL502(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  // A notebook's cells are not a module a child re-imports: spawned children never run them
  // again, so there is no main guard to add. What breaks there is the target: defined in a
  // cell, it is pickled by reference to `__main__`, which in a spawned child is not the
  // notebook (reported below with that mechanism and fix).
  const bool notebook = f.is_notebook();
  // Statements that run on import: top level, outside the main guard.
  std::set<Id> guarded;
  for (Id s : f.m.body)
    if (f.m.s(s).kind == StmtKind::If && is_main_guard(f, f.m.s(s).value)) mark(f, f.m.s(s).body, guarded);
  // Spawn selected for the whole program, and contexts bound to spawn/forkserver.
  bool spawn_default = false;
  std::set<std::string> spawn_ctx;
  for (const CallSite& c : f.calls) {
    const std::string& q = f.callee_qual(c.call);
    std::string m = literal_str(f, c.call, 0, "method");
    bool spawnish = m == "spawn"sv || m == "forkserver"sv;
    if (q.size() >= 16 && q.compare(q.size() - 16, 16, "set_start_method") == 0 && spawnish && c.func == kNone &&
        !guarded.count(c.stmt))
      spawn_default = true;
    if (q.size() >= 11 && q.compare(q.size() - 11, 11, "get_context") == 0 && spawnish) {
      const Stmt& s = f.m.s(c.stmt);
      if (s.kind == StmtKind::Assign)
        for (Id t : s.targets) spawn_ctx.insert(f.dotted(t));
    }
  }
  auto starts_spawned = [&](const CallSite& c) -> std::string {
    const std::string& q = f.callee_qual(c.call);
    if (q == "torch.multiprocessing.spawn"sv) return "`torch.multiprocessing.spawn` (always spawn)";
    if (q == "torch.multiprocessing.start_processes"sv) {
      std::string m = literal_str(f, c.call, static_cast<size_t>(-1), "start_method");
      if (m.empty() || m == "spawn"sv || m == "forkserver"sv) return "`start_processes` with " + (m.empty() ? std::string("spawn") : m);
    }
    const std::string& a = f.callee_attr(c.call);
    if (a == "Process"sv || a == "Pool"sv || a == "ProcessPoolExecutor"sv) {
      const std::string& recv = f.dotted(f.callee_receiver(c.call));
      if (spawn_ctx.count(recv)) return "a spawn/forkserver context's `" + a + "`";
      // `get_context("spawn").Pool(...)` inline
      Id r = f.callee_receiver(c.call);
      if (r != kNone && f.e(r).kind == ExprKind::Call) {
        std::string m = literal_str(f, r, 0, "method");
        if (m == "spawn"sv || m == "forkserver"sv) return "a " + m + " context's `" + a + "`";
      }
      if (spawn_default && (q == "multiprocessing.Process"sv || q == "multiprocessing.Pool"sv ||
                            q == "torch.multiprocessing.Process"sv || q == "torch.multiprocessing.Pool"sv))
        return "`" + a + "` after `set_start_method(\"spawn\")`";
    }
    return "";
  };
  // Functions called at import time (unguarded top-level calls), one level deep.
  std::set<Id> import_time_funcs;
  for (const CallSite& c : f.calls)
    if (c.func == kNone && !guarded.count(c.stmt) && c.target_func != kNone) import_time_funcs.insert(c.target_func);
  if (notebook) {
    for (const CallSite& c : f.calls) {
      std::string how = starts_spawned(c);
      if (how.empty() || c.in_lambda) continue;
      // The target: `spawn(fn, ...)`, `start_processes(fn, ...)`, `Process(target=fn)`.
      const std::string& a = f.callee_attr(c.call);
      Id target = a == "Process"sv ? f.arg(c.call, 1, "target") : a == "Pool"sv || a == "ProcessPoolExecutor"sv
                                                                      ? kNone : f.arg(c.call, 0, "fn");
      if (target == kNone || f.e(target).kind != ExprKind::Name) continue;
      const std::string& name = f.e(target).text;
      if (f.module_func_at(name, f.e(c.call).range.begin) == kNone) continue;
      ctx.report("LL502", f.e(c.call).range,
                 "processes are started with " + how + " from a notebook, and their target `" + name +
                     "` is defined in a cell: a spawned child unpickles it by reference to `__main__`, which there is "
                     "not the notebook, so every child fails with \"AttributeError: Can't get attribute '" + name +
                     "' on <module '__main__'>\"; move `" + name + "` into a .py module and import it");
    }
    return;
  }
  for (const CallSite& c : f.calls) {
    bool at_import = (c.func == kNone && !guarded.count(c.stmt)) || (c.func != kNone && import_time_funcs.count(c.func));
    if (!at_import || c.in_lambda) continue;
    std::string how = starts_spawned(c);
    if (how.empty()) continue;
    ctx.report("LL502", f.e(c.call).range,
               "processes are started with " + how + " when the module is imported: each child re-imports the main "
               "module and starts processes again, and Python raises \"An attempt has been made to start a new process "
               "before the current process has finished its bootstrapping phase\" (a Pool may instead hang while its "
               "workers keep dying at start-up); move this under "
               "`if __name__ == \"__main__\":`");
  }
}

}  // namespace ll
