// LL402 dataloader-worker-memory: DataLoader worker settings that multiply host memory
// beyond a configurable budget.
#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "checks/common.hpp"
#include "checks/dataloader.hpp"
#include "checks/flow.hpp"

namespace ll {
namespace {

bool is_cpu_count(const Facts& f, Id call) {
  const std::string& q = f.callee_qual(call);
  return q == "os.cpu_count"sv || q == "multiprocessing.cpu_count"sv || q == "torch.multiprocessing.cpu_count"sv ||
         q == "os.sched_getaffinity"sv || q == "psutil.cpu_count"sv;
}

// num_workers derived from os.cpu_count() / multiprocessing.cpu_count() with no bound: no
// min(), and no choice on the count itself (`5 if cpu_count() > 4 else cpu_count()`).
bool unbounded_cpu_count(const Facts& f, Id func, Id x, int depth = 0) {
  if (x == kNone || depth > 4) return false;
  bool found = false, bounded = false;
  for_each_expr(f.m, x, [&](Id y) {
    const Expr& e = f.e(y);
    if (e.kind == ExprKind::Conditional && e.kids.size() == 3 && f.e(e.kids[1]).kind == ExprKind::Compare) {
      bool tests_count = false;
      for_each_expr(f.m, e.kids[1], [&](Id z) {
        tests_count = tests_count || (f.e(z).kind == ExprKind::Call && is_cpu_count(f, z));
        return !tests_count;
      });
      if (tests_count) { bounded = true; return false; }
    }
    if (e.kind == ExprKind::Call) {
      const std::string& q = f.callee_qual(y);
      const Expr& callee = f.e(e.kids[0]);
      if (callee.kind == ExprKind::Name && q.empty() && callee.text == "min"sv) { bounded = true; return false; }
      if (is_cpu_count(f, y)) found = true;
    }
    // (`if workers is None: workers = os.cpu_count()` runs only when a call leaves it None.)
    if (e.kind == ExprKind::Name && depth < 4)
      for (Id v : f.bindings(func, e.text))
        if (v != x && unbounded_cpu_count(f, func, v, depth + 1) && !dead_none_fallback(f, func, v)) found = true;
    return true;
  });
  return found && !bounded;
}

// `cpu_count() // k` (or `/ k`, `int(cpu_count() / k)`) with a literal k >= 2, directly or
// through the names bound to it: k, else 0. A deliberate fraction of the cores.
long cpu_count_fraction(const Facts& f, Id func, Id x, int depth = 0) {
  if (x == kNone || depth > 4) return 0;
  long k = 0;
  for_each_expr(f.m, x, [&](Id y) {
    const Expr& e = f.e(y);
    if (e.kind == ExprKind::BinOp && (e.text == "//"sv || e.text == "/"sv) && e.kids.size() == 2 &&
        unbounded_cpu_count(f, func, e.kids[0]))
      if (const long d = int_literal_value(f.e(e.kids[1])); d >= 2) k = d;
    if (k == 0 && e.kind == ExprKind::Name)
      for (Id v : f.bindings(func, e.text))
        if (v != x && k == 0) k = cpu_count_fraction(f, func, v, depth + 1);
    return k == 0;
  });
  return k;
}

// The CPU count itself, one worker per core: `os.cpu_count()`, `os.cpu_count() or 1`, or a name
// bound only to such (not a multiple of it, `os.cpu_count() * 8`).
bool plain_cpu_count(const Facts& f, Id func, Id x, int depth = 0) {
  if (x == kNone || depth > 4) return false;
  const Expr& e = f.e(x);
  if (e.kind == ExprKind::Call) return is_cpu_count(f, x);
  if (e.kind == ExprKind::BoolOp && e.text == "or"sv && !e.kids.empty()) return plain_cpu_count(f, func, e.kids[0], depth + 1);
  if (e.kind != ExprKind::Name) return false;
  const std::vector<Id> vals = f.bindings(func, e.text);
  if (vals.empty()) return false;
  for (Id v : vals)
    if (v == x || !plain_cpu_count(f, func, v, depth + 1)) return false;
  return true;
}

// Samples in flight (batches in flight x a visible batch size) small enough not to matter.
constexpr long kFewSamplesInFlight = 256;
// Batches in flight of a visible sample size small enough not to matter (1 GB).
constexpr long kSmallInflightBytes = 1'000'000'000;
// The core count a worker count that follows `os.cpu_count()` is weighed at: a large host.
constexpr long kLargeHostCores = 128;
// Worker counts GPU hosts commonly give one training process (16, 20, 32 on 32- to 128-core
// machines): above max-workers, but an ordinary setting rather than a mistake.
constexpr long kCommonWorkers = 32;

}  // namespace

// `dl = DataLoader(...)`, a local of a function that nothing in the file reads again (its only
// loop commented out): DataLoader starts its workers when it is iterated, so this one never
// starts any. (A module-level loader may be imported and iterated by another file; a class
// attribute read through the class.) `reads`: how often each name is read in the file, counted
// once per file on the first question.
bool never_read(const Facts& f, const CallSite& c, std::unordered_map<std::string_view, int>& reads) {
  if (c.stmt == kNone || c.func == kNone || f.m.lang != Lang::Python) return false;
  const Stmt& st = f.m.s(c.stmt);
  if (st.kind != StmtKind::Assign || st.value != c.call || st.targets.size() != 1 ||
      f.e(st.targets[0]).kind != ExprKind::Name)
    return false;
  if (reads.empty()) {
    reads.emplace("", 0);  // (counted)
    for (const Expr& y : f.m.exprs)
      if (y.kind == ExprKind::Name) ++reads[y.text];
  }
  for (std::string_view dyn : {"locals", "globals", "vars", "eval", "exec"})
    if (reads.count(dyn)) return false;
  auto it = reads.find(f.e(st.targets[0]).text);
  return it == reads.end() || it->second <= 1;  // (the binding's own target is one)
}

void check_LL402(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  // One setting, one finding: loaders of one function whose worker count is the same binding
  // of a name (`n_workers = os.cpu_count()` handed to the train, val and test loaders) share
  // the cause and the fix, so the first is reported and the others are its notes.
  std::map<std::tuple<Id, std::string, std::string>, size_t> by_setting;
  std::unordered_map<std::string_view, int> reads;
  for (const CallSite& c : f.calls) {
    if (!is_dataloader_call(f, c.call) || never_read(f, c, reads)) continue;
    // A dataset that LL403 flags already carries the per-worker host-RAM finding.
    bool copy_on_access = false;
    for (Id cls = 0; cls < f.m.classes.size() && !copy_on_access; ++cls)
      for (int li : loaders_of_class(f, cls))
        if (li == static_cast<int>(&c - f.calls.data()) && !copy_on_access_sites(f, cls).empty())
          copy_on_access = true;
    long workers = workers_of(f, c);
    Id nw = f.arg(c.call, 5, "num_workers");
    Id pf = f.arg(c.call, static_cast<size_t>(-1), "prefetch_factor");
    Id pm = f.arg(c.call, 7, "pin_memory");
    bool pinned = pm != kNone && f.literal_of(pm, c.func) && f.literal_of(pm, c.func)->lit == LitKind::True;
    long prefetch = 2;
    if (pf != kNone) {
      const Expr* lit = f.literal_of(pf, c.func);
      prefetch = lit ? int_literal_value(*lit) : -1;
    }
    std::string pin = pinned ? ", and pin_memory=True holds the same batches again in page-locked memory" : "";
    // LibTorch's DataLoader runs its workers as threads of the process, each with its own
    // copy of the dataset, and keeps up to max_jobs batches in flight (default 2 x workers);
    // it has no prefetch_factor.
    const bool cpp = f.m.lang == Lang::Cpp;
    long inflight = prefetch > 0 ? workers * prefetch : -1;
    if (cpp) {
      inflight = 2 * workers;
      if (Id mj = f.arg(c.call, static_cast<size_t>(-1), "max_jobs"); mj != kNone) {
        const Expr* lit = f.literal_of(mj, c.func);
        inflight = lit ? int_literal_value(*lit) : -1;
      }
    }
    const std::string each = cpp ? "each worker is a thread with its own copy of the dataset object"
                                 : "each worker is a separate process with its own copy of the dataset object";
    std::string msg;
    // Impact: a worker count above the budget whose batches in flight stay within
    // max-inflight-batches (num_workers=12 or 16 with the default prefetch) costs each
    // worker's copy of the dataset object, small unless it holds many Python objects (which
    // LL403 reports): weak. docs/rules/LL402-dataloader-worker-memory.md, Impact.
    bool only_the_count = false;
    bool common_count = false;  // at most kCommonWorkers, with at most 2 batches in flight each
    long fraction = 0;  // num_workers is cpu_count() // fraction
    if (cpp && nw != kNone && unbounded_cpu_count(f, c.func, nw)) {
      msg = "`workers` follows the machine's CPU count with no bound: " + each +
            " and up to max_jobs (default 2 x workers) batches in flight, so host RAM grows with the core count "
            "(host memory, not GPU memory); cap it, e.g. `std::min<size_t>(" + std::to_string(f.cfg.max_workers) +
            ", std::thread::hardware_concurrency())`";
    } else if (cpp && workers > f.cfg.max_workers && !copy_on_access) {
      only_the_count = inflight > 0 && inflight <= f.cfg.max_inflight_batches;
      common_count = workers <= kCommonWorkers && inflight > 0 && inflight <= 2 * kCommonWorkers;
      msg = "`workers(" + std::to_string(workers) + ")` is above the budget of " + std::to_string(f.cfg.max_workers) +
            " (max-workers): " + each + " and " +
            (inflight > 0 ? std::to_string(inflight) : std::string("several")) +
            " batches in flight (max_jobs) in host RAM (host memory, not GPU memory); lower workers";
    } else if (cpp && workers > 0 && inflight > f.cfg.max_inflight_batches) {
      msg = "DataLoader keeps up to max_jobs = " + std::to_string(inflight) +
            " batches in flight in host RAM (plus each worker thread's copy of the dataset), above the budget of " +
            std::to_string(f.cfg.max_inflight_batches) +
            " (max-inflight-batches); this is host memory, not GPU memory — lower max_jobs or workers";
    } else if (cpp) {
    } else if (nw != kNone && unbounded_cpu_count(f, c.func, nw)) {
      fraction = cpu_count_fraction(f, c.func, nw);
      msg = "`num_workers` follows the machine's CPU count with no bound: each worker is a separate process with "
            "its own copy of the dataset object and up to prefetch_factor batches in flight, so host RAM grows with "
            "the core count" + pin + " (host memory, not GPU memory); cap it, e.g. `min(" +
            std::to_string(f.cfg.max_workers) + ", os.cpu_count())`";
    } else if (workers > f.cfg.max_workers && !copy_on_access) {
      // (A dataset that LL403 flags already carries this loader's per-worker finding.)
      only_the_count = inflight > 0 && inflight <= f.cfg.max_inflight_batches;
      common_count = workers <= kCommonWorkers && inflight > 0 && inflight <= 2 * kCommonWorkers;
      msg = "`num_workers=" + std::to_string(workers) + "` is above the budget of " + std::to_string(f.cfg.max_workers) +
            " (max-workers): each worker is a separate process with its own copy of the dataset object and " +
            (prefetch > 0 ? std::to_string(workers * prefetch) : std::string("several")) +
            " batches in flight in host RAM" + pin + " (host memory, not GPU memory); lower num_workers";
    } else if (workers > 0 && prefetch > 0 && workers * prefetch > f.cfg.max_inflight_batches) {
      msg = "DataLoader keeps up to num_workers x prefetch_factor = " + std::to_string(workers) + " x " +
            std::to_string(prefetch) + " = " + std::to_string(workers * prefetch) +
            " batches in flight in host RAM (plus each worker's own copy of the pages it touches), above the budget of " + std::to_string(f.cfg.max_inflight_batches) +
            " (max-inflight-batches)" + pin + "; this is host memory, not GPU memory — lower prefetch_factor or "
            "num_workers";
    }
    if (msg.empty()) continue;
    // Impact: batches of a visible size that hold few samples in flight all together
    // (`batch_size=1` with 24 workers: 48 samples) cost little host RAM whatever a sample is.
    // A worker count that follows the CPU count is taken at a large host's, kLargeHostCores.
    const bool per_core = fraction == 0 && !cpp && nw != kNone && plain_cpu_count(f, c.func, nw);
    const long counted = per_core && prefetch > 0 ? kLargeHostCores * prefetch : inflight;
    long samples = -1;
    if (Id bs = f.arg(c.call, 1, "batch_size"); bs != kNone && counted > 0)
      if (const Expr* lit = f.literal_of(bs, c.func); lit && int_literal_value(*lit) >= 0)
        if (__builtin_mul_overflow(counted, int_literal_value(*lit), &samples)) samples = -1;
    // Batches of a sample size the file shows (images resized to 64 x 64, CIFAR's 32 x 32)
    // that stay within kSmallInflightBytes in flight, even on a large host.
    std::string small_bytes;
    if (samples > kFewSamplesInFlight)
      if (const auto shape = sample_shape(f, c)) {
        const long floats = shape->c * shape->h * shape->w;
        long bytes = -1;
        if (!__builtin_mul_overflow(samples, floats * 4, &bytes) && bytes <= kSmallInflightBytes) {
          const long bs = samples / counted;
          small_bytes = "its " + std::to_string(counted) + " batches in flight" +
                        (per_core ? " on a " + std::to_string(kLargeHostCores) + "-core host" : std::string()) +
                        " hold about " + std::to_string((bytes + 500'000) / 1'000'000) + " MB (batches of " +
                        std::to_string(bs) + " x " + std::to_string(shape->c) + " x " + std::to_string(shape->h) +
                        " x " + std::to_string(shape->w) + " floats), little host memory" +
                        (per_core ? "; what stays is one worker process per core" : std::string());
        }
      }
    std::string weak;  // why the evidence is weak, empty when it is not
    if (!small_bytes.empty())
      weak = small_bytes;
    else if (samples >= 0 && samples <= kFewSamplesInFlight && per_core)
      weak = "its batches in flight hold at most " + std::to_string(samples) + " samples even on a " +
             std::to_string(kLargeHostCores) +
             "-core host, little host memory whatever a sample is; what stays is one worker process per core";
    else if (samples >= 0 && samples <= kFewSamplesInFlight)
      weak = "its batches in flight hold " + std::to_string(samples) + " samples in all (at most " +
             std::to_string(kFewSamplesInFlight) + "), little host memory whatever a sample is";
    else if (fraction > 0)
      weak = "it is 1/" + std::to_string(fraction) + " of the core count, a deliberate share (" +
             std::to_string(64 / fraction) + " workers on a 64-core host)";
    else if (only_the_count)
      weak = "its " + std::to_string(inflight) + " batches in flight (" +
             (cpp ? inflight == 2 * workers ? "2 per worker thread" : std::string("max_jobs")
                  : std::to_string(workers) + " workers x prefetch_factor " + std::to_string(prefetch)) +
             ") are within max-inflight-batches (" +
             std::to_string(f.cfg.max_inflight_batches) +
             "); what each extra worker adds is its copy of the dataset object, small unless it holds many Python "
             "objects";
    else if (common_count)
      weak = std::to_string(workers) + " workers is a count GPU hosts commonly give one process (up to " +
             std::to_string(kCommonWorkers) + ", with at most 2 batches in flight each); lower it where host RAM "
             "is short";
    // One setting is one binding of a name: loaders that read the same binding share its
    // fix. A name bound again (even to the same `os.cpu_count()`, a notebook's later section
    // restating it) and an expression written inline in each loader need an edit each: a
    // finding each, or capping the first would leave the others unbounded.
    std::string setting = nw != kNone ? f.dotted(nw) : std::string();
    std::string binding;
    Id scope = c.func;
    if (!setting.empty() && c.stmt != kNone) {
      bool outside = false;
      std::vector<Id> defs;
      for (const Def& d : f.flow().reaching(c.stmt, setting, &outside)) defs.push_back(d.stmt);
      std::sort(defs.begin(), defs.end());
      for (Id d : defs) binding += std::to_string(d) + ",";
      if (outside) binding += "outside";
      // Only a binding of the module (`NUM_WORKERS = os.cpu_count()` read by the loaders of
      // several functions): one setting for the whole file, and one fix.
      if (defs.empty() && outside && c.func != kNone && f.m.funcs[c.func].parent == kNone &&
          setting.find('.') == std::string::npos) {
        // (A parameter of that name, or an import inside the function, `from config import
        // NUM_WORKERS`, binds another value: imports are not bindings the flow sees.)
        bool own_binding = false;
        for (const auto& p : f.m.funcs[c.func].params) own_binding = own_binding || p == setting;
        for (Id st : f.stmts_in(c.func)) own_binding = own_binding || f.m.s(st).kind == StmtKind::Import;
        const std::vector<Id> module_values = f.bindings(kNone, setting);
        if (!own_binding && !module_values.empty()) {
          scope = kNone;
          binding = "module:";
          for (Id v : module_values) binding += std::to_string(v) + ",";
        }
      }
    }
    // (A module's setting is one fix whatever each loader adds, pinned memory or a batch size:
    // its loaders group by whether they are weak only.)
    std::tuple<Id, std::string, std::string> key{
        scope, setting + "@" + binding, scope == kNone && c.func != kNone ? (weak.empty() ? "full" : "weak") : msg + "\n" + weak};
    // A loader whose line suppresses LL402 is never the head of a group: its notes would be
    // hidden with it (`# noqa: LL402` on the train loader only).
    const bool quiet = !setting.empty() && ctx.suppressed("LL402", f.e(c.call).range.line);
    if (!setting.empty() && !quiet)
      if (auto it = by_setting.find(key); it != by_setting.end()) {
        ctx.at(it->second).notes.push_back({f.e(c.call).range, "`" + setting + "` sets this loader's workers too"});
        continue;
      }
    Finding* fd = weak.empty() ? ctx.report("LL402", f.e(c.call).range, msg)
                               : ctx.report_weak("LL402", f.e(c.call).range, msg, weak);
    if (fd && !setting.empty() && !quiet) by_setting.emplace(key, ctx.handle(fd));
  }
}

}  // namespace ll
