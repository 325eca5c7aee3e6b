// LL405 distributed-without-sampler: in a file that wraps its model in
// DistributedDataParallel / FSDP, a DataLoader that feeds a training loop has no
// DistributedSampler (or other sampler) and its dataset does not shard by rank: every
// rank trains on the whole dataset.
#include <algorithm>
#include <cstdint>
#include <set>

#include "checks/common.hpp"
#include "checks/dataloader.hpp"

namespace ll {
namespace {

bool is_distributed_wrap(const Facts& f, Id call) {
  const std::string& q = f.callee_qual(call);
  return q == "torch.nn.parallel.DistributedDataParallel"sv ||
         q == "torch.nn.parallel.distributed.DistributedDataParallel"sv ||
         // The CPU variant of PyTorch before 1.2 (gloo, one process per CPU worker).
         q == "torch.nn.parallel.DistributedDataParallelCPU"sv ||
         q == "torch.nn.parallel.distributed_cpu.DistributedDataParallelCPU"sv ||
         q == "torch.distributed.fsdp.FullyShardedDataParallel"sv ||
         q == "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel"sv ||
         q == "torch.distributed.fsdp.fully_shard"sv || q == "torch.distributed._composable.fsdp.fully_shard"sv;
}

bool text_says_rank(std::string_view text) {
  for (const auto& t : Facts::name_tokens(text))
    if (t == "rank"sv || t == "ranks"sv || t == "world"sv || t == "replicas"sv || t == "shard"sv || t == "shards"sv ||
        t == "sharded"sv || t == "node"sv || t == "nodes"sv)
      return true;
  return false;
}

bool expr_says_rank(const Facts& f, Id root) {
  bool hit = false;
  for_each_expr(f.m, root, [&](Id x) {
    const Expr& e = f.e(x);
    if ((e.kind == ExprKind::Name || e.kind == ExprKind::Attribute) && text_says_rank(e.text)) hit = true;
    if (e.kind == ExprKind::Call && text_says_rank(f.callee_attr(x))) hit = true;
    return !hit;
  });
  return hit;
}

// Data split by rank: a subscript whose index reads the rank (`items[rank::world_size]`), or a
// call that takes the data and the rank (`split_for(items, rank, world_size)`). A value built
// from the rank alone (`torch.device(f"cuda:{rank}")`) splits nothing.
bool split_by_rank(const Facts& f, Id v) {
  const Expr& e = f.e(v);
  if (e.kind == ExprKind::Subscript && e.kids.size() >= 2) {
    if (expr_says_rank(f, e.kids[0])) return false;
    for (size_t k = 1; k < e.kids.size(); ++k)
      if (expr_says_rank(f, e.kids[k])) return true;
    return false;
  }
  if (e.kind != ExprKind::Call || f.callee_qual(v).rfind("torch.", 0) == 0) return false;
  bool rank = false, data = false;
  for (size_t k = 1; k < e.kids.size(); ++k) (expr_says_rank(f, e.kids[k]) ? rank : data) = true;
  return rank && data;
}

// Does `name` occur in the function's body other than as a `del` target (`del index`)?
bool reads_param(const Facts& f, const Function& fn, const std::string& name) {
  std::vector<Range> dels;
  for (const Stmt& st : f.m.stmts)
    if (st.kind == StmtKind::Delete && st.range.begin >= fn.range.begin && st.range.end <= fn.range.end)
      dels.push_back(st.range);
  for (const Expr& ex : f.m.exprs) {
    if (ex.kind != ExprKind::Name || ex.text != name || ex.range.begin < fn.range.begin || ex.range.end > fn.range.end)
      continue;
    bool deleted = false;
    for (const Range& d : dels) deleted = deleted || (ex.range.begin >= d.begin && ex.range.end <= d.end);
    if (!deleted) return true;
  }
  return false;
}

// A same-file Dataset class that shards by rank itself: an IterableDataset / datapipe, or a
// class that reads the rank / world size.
bool sharding_class(const Facts& f, Id k) {
  const Class& cls = f.m.classes[k];
  if (f.class_derives(k, {"IterableDataset", "IterDataPipe"})) return true;
  for (const auto& ex : f.m.exprs)
    if ((ex.kind == ExprKind::Name || ex.kind == ExprKind::Attribute) && ex.range.begin >= cls.range.begin &&
        ex.range.end <= cls.range.end && text_says_rank(ex.text))
      return true;
  return false;
}

// A same-file Dataset class that makes its items on the fly: `__getitem__` never reads its
// index (synthetic data, a fresh draw per item).
// Or whose items are rows of tensors its constructor makes (`self.features = torch.randn(size,
// 10)`; `return self.features[index], self.labels[index]`): every attribute `__getitem__` reads
// is bound only to a made tensor.
bool synthetic_class(const Facts& f, Id k) {
  const Id init = f.method_in(k, "__init__");
  for (Id mi : f.m.classes[k].methods) {
    const Function& fn = f.m.funcs[mi];
    if (fn.name != "__getitem__"sv || fn.params.size() < 2) continue;
    if (!reads_param(f, fn, fn.params[1])) return true;
    if (init == kNone) return false;
    bool any = false;
    const Range& r = fn.range;
    for (Id x = 0; x < f.m.exprs.size(); ++x) {
      const Expr& a = f.e(x);
      if (a.kind != ExprKind::Attribute || a.range.begin < r.begin || a.range.end > r.end || a.kids.empty() ||
          f.e(a.kids[0]).kind != ExprKind::Name || f.e(a.kids[0]).text != "self"sv)
        continue;
      const std::vector<Id> vs = f.bindings(init, f.dotted(x));
      if (vs.empty() || !std::all_of(vs.begin(), vs.end(), [&](Id v) { return made_tensor(f, init, v); })) return false;
      any = true;
    }
    return any;
  }
  return false;
}

// Synthetic data: `TensorDataset` of made tensors, torchvision's `FakeData`, a same-file
// class whose items ignore their index. Ranks draw different samples (unless seeded alike):
// the duplicated passes the rule is about need a real dataset, so the evidence is weak.
bool synthetic_dataset(const Facts& f, Id func, Id ds, int depth = 0) {
  if (ds == kNone || depth > 4) return false;
  const Expr& e = f.e(ds);
  if (e.kind == ExprKind::Name) {
    std::vector<Id> vs = f.bindings(func, e.text);
    for (Id v : vs)
      if (!synthetic_dataset(f, func, v, depth + 1)) return false;
    return !vs.empty();
  }
  if (e.kind != ExprKind::Call) return false;
  const std::string& q = f.callee_qual(ds);
  if (q == "torchvision.datasets.FakeData"sv) return true;
  if (q == "torch.utils.data.TensorDataset"sv || q == "torch.utils.data.dataset.TensorDataset"sv) {
    if (e.kids.size() < 2) return false;
    for (size_t k = 1; k < e.kids.size(); ++k)
      if (!made_tensor(f, func, e.kids[k])) return false;
    return true;
  }
  Id callee = e.kids[0];
  if (f.e(callee).kind == ExprKind::Name && f.qual(callee).empty())
    for (Id k = 0; k < f.m.classes.size(); ++k)
      if (f.m.classes[k].name == f.e(callee).text && synthetic_class(f, k)) return true;
  // A class of another module of the run whose items ignore their index.
  return f.project && !q.empty() && f.project->synthetic_datasets.count(q) > 0;
}

// A dataset that shards by rank itself (an IterableDataset, a class that reads the rank /
// world size, here or in a project module; `.shard(...)`, `split_dataset_by_node(...)` on the
// way), or whose data are split by rank before it is built.
bool rank_aware_dataset(const Facts& f, Id func, Id ds, int depth = 0) {
  if (ds == kNone || depth > 4) return false;
  if (expr_says_rank(f, ds)) return true;
  const Expr& e = f.e(ds);
  if (e.kind == ExprKind::Name || e.kind == ExprKind::Attribute) {
    for (Id v : f.bindings(func, f.dotted(ds)))
      if (rank_aware_dataset(f, func, v, depth + 1)) return true;
    return false;
  }
  if (e.kind != ExprKind::Call) return false;
  // Data split by rank before the dataset is built: an argument bound to such a split
  // (`mine = items[rank::world]`, `part = split_for(items, rank, world_size)`; `Pairs(mine)`).
  for (size_t k = 1; k < e.kids.size(); ++k) {
    const Expr& a = f.e(e.kids[k]);
    if (a.kind != ExprKind::Name && a.kind != ExprKind::Attribute) continue;
    for (Id v : f.bindings(func, f.dotted(e.kids[k])))
      if (split_by_rank(f, v)) return true;
  }
  Id callee = e.kids[0];
  if (f.e(callee).kind == ExprKind::Name && f.qual(callee).empty())
    for (Id k = 0; k < f.m.classes.size(); ++k)
      if (f.m.classes[k].name == f.e(callee).text && sharding_class(f, k)) return true;
  const std::string& q = f.callee_qual(ds);
  if (q.find("IterableDataset") != std::string::npos || q.find("datapipes") != std::string::npos) return true;
  return f.project && f.project->sharding_datasets.count(q) > 0;
}

// A process group of one (`init_process_group(..., world_size=1)`, every such call of the
// file): the only process walks the data once, whatever the loader.
bool single_process_group(const Facts& f) {
  bool one = false;
  for (const CallSite& c : f.calls) {
    if (f.callee_qual(c.call) != "torch.distributed.init_process_group"sv) continue;
    Id ws = f.arg(c.call, 3, "world_size");
    if (ws == kNone || int_literal_value(f.e(ws)) != 1) return false;
    one = true;
  }
  return one;
}

// The `if` statements of the call's function around it (its body or its else branch).
std::vector<Id> ifs_around(const Facts& f, const CallSite& c) {
  const Range& r = f.e(c.call).range;
  std::vector<Id> out;
  for (const StmtSite& s : f.stmt_sites) {
    if (s.func != c.func) continue;
    const Stmt& st = f.m.s(s.stmt);
    if (st.kind == StmtKind::If && st.range.begin <= r.begin && r.end <= st.range.end) out.push_back(s.stmt);
  }
  return out;
}

// A wrap that drives several devices from one process (`DistributedDataParallel(model,
// device_ids=[0, 1, 2, 3])`, or `device_ids=gpu_ids` under `if len(gpu_ids) > 1:`): the
// single-process multi-device mode, one process per node, so one node walks the data once.
bool several_devices_per_process(const Facts& f, const CallSite& w) {
  Id ids = f.arg(w.call, 1, "device_ids");
  if (ids == kNone) return false;
  const Expr& x = f.e(ids);
  if (x.kind == ExprKind::Sequence) return x.kids.size() >= 2;
  const std::string& d = f.dotted(ids);
  if (d.empty()) return false;
  // The `if` statements whose body (not else branch) holds the wrap.
  const uint32_t at = f.e(w.call).range.begin;
  std::vector<Id> conditions;
  for (Id sid : ifs_around(f, w)) {
    const Stmt& st = f.m.s(sid);
    if (st.body.empty() || st.value == kNone) continue;
    if (f.m.s(st.body.front()).range.begin <= at && at < f.m.s(st.body.back()).range.end) conditions.push_back(st.value);
  }
  for (Id g : conditions) {
    bool several = false;
    for_each_expr(f.m, g, [&](Id y) {
      const Expr& c = f.e(y);
      // `len(ids) > 1`, `len(ids) >= 2`
      if (c.kind == ExprKind::Compare && c.kids.size() == 2 && f.e(c.kids[0]).kind == ExprKind::Call &&
          f.e(f.e(c.kids[0]).kids[0]).text == "len"sv && f.e(c.kids[0]).kids.size() == 2 &&
          f.dotted(f.e(c.kids[0]).kids[1]) == d) {
        const long k = int_literal_value(f.e(c.kids[1]));
        several = several || (c.text == ">"sv && k >= 1) || (c.text == ">="sv && k >= 2);
      }
      return !several;
    });
    if (several) return true;
  }
  return false;
}

// Is the call inside an `if` that selects one rank (`if rank == 0:`, `if is_main_process():`)?
bool under_rank_guard(const Facts& f, const CallSite& c) {
  for (Id sid : ifs_around(f, c)) {
    const Stmt& st = f.m.s(sid);
    bool hit = false;
    for_each_expr(f.m, st.value, [&](Id x) {
      const Expr& e = f.e(x);
      // Names only: the main guard's `"__main__"` selects no rank.
      std::string_view t = e.kind == ExprKind::Name || e.kind == ExprKind::Attribute ? std::string_view(e.text)
                                                                                       : std::string_view();
      if (e.kind == ExprKind::Call) {
        const std::string& a = f.callee_attr(x);
        const std::string& q = f.callee_qual(x);
        if (q == "torch.distributed.get_rank"sv || text_says_rank(a)) hit = true;
        for (const auto& tok : Facts::name_tokens(a.empty() ? f.dotted(e.kids[0]) : a))
          if (tok == "main"sv || tok == "master"sv) hit = true;
      }
      for (const auto& tok : Facts::name_tokens(t))
        if (tok == "rank"sv || tok == "main"sv || tok == "master"sv) hit = true;
      return !hit;
    });
    if (hit) return true;
  }
  return false;
}

bool iter_mentions(const Facts& f, Id iter, const std::string& name) {
  bool hit = false;
  for_each_expr(f.m, iter, [&](Id x) {
    if (f.dotted(x) == name) hit = true;
    return !hit;
  });
  return hit;
}

// A training loop (back-propagates or steps an optimizer) of `func` that iterates `name`.
int training_loop_over(const Facts& f, Id func, const std::string& name, Id cls = kNone) {
  for (int li = 0; li < static_cast<int>(f.loops.size()); ++li) {
    const Loop& l = f.loops[li];
    if (l.iter == kNone) continue;
    if (cls != kNone ? f.class_of(l.func) != cls : l.func != func) continue;
    if (!iter_mentions(f, l.iter, name)) continue;
    // The batch loop itself or an epoch loop around it.
    if (f.loop_trains(li)) return li;
  }
  return -1;
}

// A wrap of this file, or a call of another project module's function that returns one.
bool wraps_model(const Facts& f, Id call) {
  if (is_distributed_wrap(f, call)) return true;
  return f.project && f.project->distributed_wrappers.count(f.callee_qual(call)) > 0;
}

// A wrap that can reach the model the loop trains: in the loop's function or class, at module
// level, in a function on a same-file call chain with the loop's function, or in one that
// returns the wrapped model to a function on such a chain. A wrap in an unrelated sibling
// (a DDP entry point next to a single-process one) says nothing about this loop. When the
// loader reaches the loop through a call (`via`: a training helper shared by a single-process
// and a DDP entry point), the model comes with it from the same caller: the wrap must be on a
// chain with that caller too, not only with the helper.
const CallSite* wrap_for_loop(const Facts& f, int loop, const CallSite* via) {
  const Id L = f.loops[loop].func;
  const Id feeder = via && via->target_func != kNone ? via->func : kNone;
  auto chained = [&](Id a, Id b) {
    if (a == b || a == kNone || b == kNone) return true;
    if (f.class_of(a) != kNone && f.class_of(a) == f.class_of(b)) return true;
    return f.reaches(a, [&](const CallSite& c) { return c.target_func == b; }) ||
           f.reaches(b, [&](const CallSite& c) { return c.target_func == a; });
  };
  auto reaches_loop = [&](Id g) { return chained(g, L) && (feeder == kNone || chained(g, feeder)); };
  for (const CallSite& w : f.calls) {
    if (!wraps_model(f, w.call)) continue;
    if (reaches_loop(w.func)) return &w;
    // `model = setup_ddp(net)` in a caller of the wrapping function.
    for (const CallSite& c : f.calls)
      if (c.target_func == w.func && w.func != kNone && reaches_loop(c.func)) return &w;
  }
  return nullptr;
}

// Is the loader built only where the model is not wrapped: every wrap in its function on a
// path the loader's excludes? (No wrap in its function: not known.)
bool built_where_not_wrapped(const Facts& f, const CallSite& loader) {
  bool any = false;
  for (int wi : f.calls_in(loader.func)) {
    const CallSite& w = f.calls[wi];
    if (!wraps_model(f, w.call)) continue;
    if (!f.exclusive_paths(loader, w)) return false;
    any = true;
  }
  return any;
}

bool has_sampler(const Facts& f, Id call) {
  Id sampler = f.arg(call, static_cast<size_t>(-1), "sampler");
  Id batch_sampler = f.arg(call, static_cast<size_t>(-1), "batch_sampler");
  // DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
  if (sampler == kNone) sampler = f.arg(call, 3);
  if (batch_sampler == kNone) batch_sampler = f.arg(call, 4);
  auto given = [&](Id x) { return x != kNone && !(f.e(x).kind == ExprKind::Literal && f.e(x).lit == LitKind::None); };
  return given(sampler) || given(batch_sampler);
}

// The function builds a loader with a sampler on a path that excludes this one (`if
// distributed: ... DataLoader(ds, batch_sampler=...)` / `else: DataLoader(ds, shuffle=True)`):
// it chooses by configuration, and the plain loader is the single-process one.
bool beside_a_sampled_loader(const Facts& f, const CallSite& loader) {
  for (int ci : f.calls_in(loader.func)) {
    const CallSite& d = f.calls[ci];
    if (&d != &loader && is_dataloader_call(f, d.call) && has_sampler(f, d.call) && f.exclusive_paths(loader, d))
      return true;
  }
  return false;
}

// A DataLoader call that hands every rank the whole dataset: no sampler or batch sampler, a
// dataset that does not shard by rank, not built for one rank only, no `**kwargs` that may
// carry a sampler.
bool plain_loader(const Facts& f, const CallSite& c) {
  if (c.in_lambda || !is_dataloader_call(f, c.call)) return false;
  // (`**kwargs` of worker options only, `{"num_workers": 1, "pin_memory": True} if cuda else {}`,
  // passes no sampler.)
  if (f.has_kwargs_splat(c.call)) {
    std::vector<std::string> keys;
    if (!f.splat_keys(c.call, &keys)) return false;
    for (const std::string& k : keys)
      if (k == "sampler" || k == "batch_sampler" || k == "dataset") return false;
  }
  if (has_sampler(f, c.call)) return false;
  if (rank_aware_dataset(f, c.func, f.arg(c.call, 0, "dataset"))) return false;
  return !under_rank_guard(f, c) && !built_where_not_wrapped(f, c) && !beside_a_sampled_loader(f, c);
}

// A training loop that iterates `name` (bound in `func`): in `func` itself, in the class's
// methods for `self.x`, or in a same-file function `name` is passed to (`*via`).
int loop_fed_by(const Facts& f, Id func, const std::string& name, const CallSite** via) {
  if (name.rfind("self.", 0) == 0 && f.class_of(func) != kNone) return training_loop_over(f, kNone, name, f.class_of(func));
  int loop = training_loop_over(f, func, name);
  if (loop >= 0) return loop;
  // A module-level loader read as a global by the file's functions (`def train_epoch(epoch):
  // for X, Y in train_loader:`), which neither take nor bind a name of their own for it.
  if (func == kNone && name.find('.') == std::string::npos)
    for (Id g = 0; g < f.m.funcs.size(); ++g) {
      if (f.is_param(g, name)) continue;
      bool local = false;
      for (Id v : f.bindings(g, name)) local = local || f.function_at(f.e(v).range.begin) == g;
      if (local) continue;
      loop = training_loop_over(f, g, name);
      if (loop >= 0) return loop;
    }
  for (const CallSite& x : f.calls) {
    if (x.func != func) continue;
    // `mp.spawn(worker, args=(world, loader), nprocs=n)`: each process runs `worker(rank, world,
    // loader)` with a copy of the loader.
    if (in(f.callee_qual(x.call), {"torch.multiprocessing.spawn", "torch.multiprocessing.start_processes"})) {
      const Id fn = f.arg(x.call, 0, "fn");
      const Id args = f.arg(x.call, 1, "args");
      if (fn == kNone || args == kNone || f.e(fn).kind != ExprKind::Name || f.e(args).kind != ExprKind::Sequence)
        continue;
      const Id g = f.module_func_at(f.e(fn).text, f.e(x.call).range.begin);
      if (g == kNone) continue;
      const std::vector<Id>& handed = f.e(args).kids;
      for (size_t i = 0; i < handed.size() && i + 1 < f.m.funcs[g].params.size(); ++i) {
        if (f.dotted(handed[i]) != name) continue;
        loop = training_loop_over(f, g, f.m.funcs[g].params[i + 1]);
        if (loop >= 0) {
          *via = &x;
          return loop;
        }
      }
      continue;
    }
    if (x.target_func == kNone) continue;
    const Expr& call = f.e(x.call);
    const Function& g = f.m.funcs[x.target_func];
    size_t first = (g.cls != kNone && !g.params.empty() && g.params[0] == "self"sv) ? 1 : 0;
    size_t nkw = call.kw.size(), npos = call.kids.size() - 1 - nkw;
    std::string param;
    for (size_t i = 0; i < npos; ++i)
      if (f.dotted(call.kids[1 + i]) == name && first + i < g.params.size()) param = g.params[first + i];
    for (size_t i = 0; i < nkw; ++i)
      if (f.dotted(call.kids[1 + npos + i]) == name) param = call.kw[i];
    if (param.empty()) continue;
    loop = training_loop_over(f, x.target_func, param);
    if (loop >= 0) {
      *via = &x;
      return loop;
    }
  }
  return -1;
}

// Is the loader handed over and replaced? accelerate / Lightning Fabric shard a loader passed
// to prepare() / setup_dataloaders(); an engine object's method that takes the loader and
// rebinds its name with what it returns (`model, opt, train_loader =
// privacy_engine.make_private(..., data_loader=train_loader)`) decides the batches the loop
// sees. A plain function or a constructor (`DataPrefetcher(train_loader)`, `tqdm(...)`)
// wraps the same loader.
bool prepared(const Facts& f, const std::string& name) {
  for (const CallSite& x : f.calls) {
    const Expr& call = f.e(x.call);
    bool passes = false;
    for (size_t i = 1; i < call.kids.size(); ++i) passes = passes || f.dotted(call.kids[i]) == name;
    if (!passes) continue;
    const std::string& a = f.callee_attr(x.call);
    if (in(a, {"prepare"sv, "setup_dataloaders"sv, "prepare_data_loader"sv})) return true;
    Id recv = f.callee_receiver(x.call);
    if (a.empty() || recv == kNone || !f.qual(recv).empty() || x.stmt == kNone) continue;
    const Stmt& st = f.m.s(x.stmt);
    if (st.kind != StmtKind::Assign || st.value != x.call) continue;
    for (Id t : st.targets) {
      if (f.dotted(t) == name) return true;
      if (f.e(t).kind == ExprKind::Sequence)
        for (Id k : f.e(t).kids)
          if (f.dotted(k) == name) return true;
    }
  }
  return false;
}

constexpr const char* kSyntheticReason =
    "the data are synthetic (tensors the program makes, or items that ignore their index): the extra passes "
    "per epoch only matter for a real dataset";

// Reports through the impact policy: a loader of synthetic data is weak evidence.
Finding* report_loader(CheckContext& ctx, const CallSite& c, std::string message) {
  const Facts& f = ctx.facts;
  const Range& where = f.e(c.call).range;
  if (synthetic_dataset(f, c.func, f.arg(c.call, 0, "dataset")))
    return ctx.report_weak("LL405", where, std::move(message), kSyntheticReason);
  return ctx.report("LL405", where, std::move(message));
}

// The mechanism and the fix for the plain loader `c`. A DistributedSampler the function
// already builds over the same dataset and never hands to a loader (`train_sampler =
// DistributedSampler(train_dataset)`, only `set_epoch` called on it) is the one to pass. A
// sampler and `shuffle=True` together make DataLoader raise: the sampler shuffles.
std::string consequence(const CheckContext& ctx, const CallSite& c) {
  const Facts& f = ctx.facts;
  const Id ds = f.arg(c.call, 0, "dataset");
  const std::string data = ds != kNone && ctx.text(ds).size() <= 40 ? ctx.text(ds) : std::string("dataset");
  std::string sampler = "sampler=DistributedSampler(" + data + ")";
  std::string unused;
  bool epoch_set = false;  // (that sampler's set_epoch() is called already)
  for (int ci : f.calls_in(c.func)) {
    const CallSite& s = f.calls[ci];
    if (s.stmt == kNone || f.last_component(f.callee_qual(s.call)) != "DistributedSampler"sv) continue;
    const Stmt& st = f.m.s(s.stmt);
    const Id a = f.arg(s.call, 0, "dataset");
    if (st.kind != StmtKind::Assign || st.value != s.call || st.targets.size() != 1 ||
        f.e(st.targets[0]).kind != ExprKind::Name || a == kNone || ds == kNone || ctx.text(a) != ctx.text(ds))
      continue;
    const std::string& name = f.e(st.targets[0]).text;
    bool handed = false;
    for (const CallSite& l : f.calls)
      if (is_dataloader_call(f, l.call))
        for (Id x : {f.arg(l.call, 3, "sampler"), f.arg(l.call, 4, "batch_sampler")})
          handed = handed || (x != kNone && f.dotted(x) == name);
    if (handed) continue;
    for (const CallSite& x : f.calls)
      epoch_set = epoch_set || (f.callee_attr(x.call) == "set_epoch"sv && f.dotted(f.callee_receiver(x.call)) == name);
    sampler = "sampler=" + name;
    unused = " (the DistributedSampler built on line " + std::to_string(f.e(s.call).range.line) +
             " is never handed to a loader)";
    break;
  }
  const Id shuffle = f.arg(c.call, 2, "shuffle");
  const bool drop_shuffle = shuffle != kNone && f.e(shuffle).kind == ExprKind::Literal && f.e(shuffle).lit == LitKind::True;
  return ": every rank iterates the whole dataset, so each epoch is world-size passes over the data and costs "
         "world-size times the work; pass `" + sampler + "`" + unused +
         (drop_shuffle ? " in place of `shuffle=True`, as the sampler shuffles" : "") +
         (epoch_set ? "" : std::string(drop_shuffle ? "," : "") + " and call `sampler.set_epoch(epoch)` every epoch");
}

// The values a function returns as element `element` of its tuple (-1: the whole value),
// through names it binds.
std::vector<Id> returned_element(const Facts& f, Id func, int element) {
  std::vector<Id> out;
  for (Id r : f.returned_values(func)) {
    if (element >= 0) {
      if (f.e(r).kind != ExprKind::Sequence || f.e(r).kids.size() <= static_cast<size_t>(element)) continue;
      r = f.e(r).kids[element];
    }
    if (f.e(r).kind == ExprKind::Name) {
      for (Id v : f.bindings(func, f.e(r).text)) out.push_back(v);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

// What a call passes, as DistributedFeed::passed records it.
std::vector<std::string> passed_arguments(const Facts& f, Id call) {
  std::vector<std::string> out;
  const Expr& e = f.e(call);
  if (e.kind != ExprKind::Call || e.kids.empty()) return out;
  const size_t nargs = e.kids.size() - 1;
  const size_t first_kw = nargs - std::min(nargs, e.kw.size());
  for (size_t i = 0; i < nargs; ++i) {
    const Expr& a = f.e(e.kids[i + 1]);
    if (a.kind == ExprKind::Starred) out.push_back("*");
    else if (a.kind == ExprKind::Literal && a.lit == LitKind::None) continue;
    else out.push_back(i >= first_kw ? e.kw[i - first_kw] : "#" + std::to_string(i));
  }
  return out;
}

// Whether the branch holding loader `c` of a module-level function can run when the function
// is called with `passed`: a loader built under `if args is None:` is not what a caller
// passing `args` gets, nor one under `if sampler is not None:` what a caller leaving the
// None default gets. Conditions on anything else are not decided, and run.
bool reachable_when_called_with(const Facts& f, const CallSite& c, const std::vector<std::string>& passed) {
  if (c.func == kNone || f.m.funcs[c.func].cls != kNone || std::count(passed.begin(), passed.end(), "*") != 0)
    return true;
  const Function& fn = f.m.funcs[c.func];
  Env env;
  std::set<std::string> given;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    const std::string& p = fn.params[i];
    if (std::count(passed.begin(), passed.end(), "#" + std::to_string(i)) != 0 ||
        std::count(passed.begin(), passed.end(), p) != 0) {
      given.insert(p);
    } else if (i < fn.param_defaults.size()) {
      if (auto d = known_default(fn.param_defaults[i])) env[p] = *d;
    }
  }
  std::vector<std::pair<Id, bool>> conds;
  if (!conditions_to(f, fn.body, c.stmt, f.e(c.call).range.begin, conds)) return true;
  for (const auto& [cond, branch] : conds) {
    const Expr& x = f.e(cond);
    std::optional<bool> holds;
    // `p is None` / `p is not None` of a parameter the caller passes something other than None.
    if (x.kind == ExprKind::Compare && x.kids.size() == 2 && (x.text == "is"sv || x.text == "is not"sv) &&
        f.e(x.kids[1]).kind == ExprKind::Literal && f.e(x.kids[1]).lit == LitKind::None &&
        f.e(x.kids[0]).kind == ExprKind::Name && given.count(f.e(x.kids[0]).text) != 0) {
      holds = x.text == "is not"sv;
    } else if (auto v = decide(f, c.func, cond, env)) {
      holds = truthy(*v);
    }
    if (holds && *holds != branch) return false;
  }
  return true;
}

// A loader this file's function returns to a distributed training loop in another module.
void check_returned_loaders(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  for (const auto& [name, uses] : f.project->feeds_distributed) {
    Id g = f.module_func_at(name, UINT32_MAX);
    if (g == kNone) continue;
    for (const auto& [feed, importer] : uses)
      for (Id v : returned_element(f, g, feed.element)) {
        auto ci = f.call_index.find(v);
        if (ci == f.call_index.end()) continue;
        const CallSite& c = f.calls[ci->second];
        if (c.func != g || !plain_loader(f, c) || !reachable_when_called_with(f, c, feed.passed)) continue;
        std::string message = "the DataLoader `" + name + "` returns feeds the training loop of a distributed "
                              "(DDP/FSDP) model in `" + importer +
                              "` but has no DistributedSampler and its dataset does not shard by rank" +
                              consequence(ctx, c);
        report_loader(ctx, c, std::move(message));
      }
  }
}

// What an assignment's target binds: the name (element -1), or each name of a tuple target
// with its position (`train_loader, val_loader = build_loaders(cfg)`).
std::vector<std::pair<int, std::string>> bound_elements(const Facts& f, Id target) {
  std::vector<std::pair<int, std::string>> out;
  if (f.e(target).kind != ExprKind::Sequence) {
    out.emplace_back(-1, f.dotted(target));
    return out;
  }
  for (size_t k = 0; k < f.e(target).kids.size(); ++k)
    out.emplace_back(static_cast<int>(k), f.dotted(f.e(target).kids[k]));
  return out;
}

// A loader a same-file function builds and returns (`loader = get_loader(ds, 64)`, or one
// element of a returned tuple) that a training loop of a wrapped model iterates, as the
// cross-file builders above: reported where the loader is built.
void check_loaders_of_same_file_builders(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  std::set<Id> reported;
  for (const CallSite& u : f.calls) {
    if (u.target_func == kNone || u.target_func == u.func || u.stmt == kNone || u.in_lambda) continue;
    const Stmt& st = f.m.s(u.stmt);
    if (st.kind != StmtKind::Assign || st.value != u.call || st.targets.size() != 1) continue;
    if (under_rank_guard(f, u) || built_where_not_wrapped(f, u)) continue;
    for (const auto& [element, name] : bound_elements(f, st.targets[0])) {
      if (name.empty() || prepared(f, name)) continue;
      const CallSite* via = nullptr;
      const int loop = loop_fed_by(f, u.func, name, &via);
      if (loop < 0) continue;
      const CallSite* wrap = wrap_for_loop(f, loop, via);
      if (!wrap || several_devices_per_process(f, *wrap)) continue;
      for (Id v : returned_element(f, u.target_func, element)) {
        auto ci = f.call_index.find(v);
        if (ci == f.call_index.end()) continue;
        const CallSite& c = f.calls[ci->second];
        if (c.func != u.target_func || !plain_loader(f, c) ||
            !reachable_when_called_with(f, c, passed_arguments(f, u.call)) || !reported.insert(c.call).second)
          continue;
        const std::string& builder = f.m.funcs[u.target_func].name;
        std::string message = "the DataLoader `" + builder + "()` returns feeds the training loop of a distributed "
                              "(DDP/FSDP) model as `" + name +
                              "` but has no DistributedSampler and its dataset does not shard by rank" +
                              consequence(ctx, c);
        Finding* fd = report_loader(ctx, c, std::move(message));
        if (!fd) continue;
        fd->notes.push_back({f.e(u.call).range, "built here for the training loop"});
        fd->notes.push_back({f.e(wrap->call).range, "model wrapped here"});
        fd->notes.push_back({f.e(f.loops[loop].iter).range, "training loop over it"});
      }
    }
  }
}

}  // namespace

void summarize_LL405(const Facts& f, FileSummary& out) {
  if (f.m.lang != Lang::Python) return;
  for (Id k = 0; k < f.m.classes.size(); ++k)
    if (f.class_derives(k, {"Dataset", "IterableDataset", "IterDataPipe"})) {
      if (sharding_class(f, k)) out.sharding_datasets.push_back(f.m.classes[k].name);
      else if (synthetic_class(f, k)) out.synthetic_datasets.push_back(f.m.classes[k].name);
    }
  bool wraps = false;
  for (const CallSite& c : f.calls) wraps = wraps || is_distributed_wrap(f, c.call);
  if (!wraps) return;
  for (Id g = 0; g < f.m.funcs.size(); ++g) {
    if (f.m.funcs[g].cls != kNone || f.m.funcs[g].parent != kNone) continue;
    for (Id v : returned_element(f, g, -1)) {
      while (f.e(v).kind == ExprKind::Call && in(f.callee_attr(v), {"to", "cuda"}) && f.callee_receiver(v) != kNone)
        v = f.callee_receiver(v);
      if (f.e(v).kind == ExprKind::Call && is_distributed_wrap(f, v)) {
        out.wrapping_functions.push_back(f.m.funcs[g].name);
        break;
      }
    }
  }
  // Imported loader builders whose result a training loop of this file iterates.
  for (const CallSite& c : f.calls) {
    const std::string& q = f.callee_qual(c.call);
    if (q.empty() || q.rfind("torch", 0) == 0 || c.stmt == kNone) continue;
    // Called for one rank only, or on the path where the model is not wrapped.
    if (under_rank_guard(f, c) || built_where_not_wrapped(f, c)) continue;
    const Stmt& st = f.m.s(c.stmt);
    if (st.kind != StmtKind::Assign || st.value != c.call || st.targets.size() != 1) continue;
    // A training loop of a wrapped model iterates `name`.
    auto feeds = [&](const std::string& name) {
      const CallSite* via = nullptr;
      if (name.empty() || prepared(f, name)) return false;
      int loop = loop_fed_by(f, c.func, name, &via);
      return loop >= 0 && wrap_for_loop(f, loop, via) != nullptr;
    };
    for (const auto& [element, name] : bound_elements(f, st.targets[0]))
      if (feeds(name)) out.distributed_feeds.push_back({q, element, passed_arguments(f, c.call)});
  }
}

void check_LL405(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  if (f.m.lang != Lang::Python || single_process_group(f)) return;
  if (f.project && !f.project->feeds_distributed.empty()) check_returned_loaders(ctx);
  bool any_wrap = false;
  for (const CallSite& c : f.calls) any_wrap = any_wrap || wraps_model(f, c.call);
  if (!any_wrap) return;
  for (const CallSite& c : f.calls) {
    if (!plain_loader(f, c)) continue;
    // What the loader is bound to, and a training loop that iterates it.
    const Stmt& st = f.m.s(c.stmt);
    if (st.kind != StmtKind::Assign || st.value != c.call || st.targets.size() != 1) continue;
    const std::string& name = f.dotted(st.targets[0]);
    if (name.empty()) continue;
    const CallSite* via = nullptr;
    int loop = loop_fed_by(f, c.func, name, &via);
    if (loop < 0 || prepared(f, name)) continue;
    const CallSite* wrap = wrap_for_loop(f, loop, via);
    if (!wrap) continue;
    const bool one_per_node = several_devices_per_process(f, *wrap);
    std::string wrapper = is_distributed_wrap(f, wrap->call)
                              ? std::string(f.last_component(f.callee_qual(wrap->call)))
                              : "distributed (DDP/FSDP, wrapped by `" + f.dotted(f.e(wrap->call).kids[0]) + "`)";
    std::string message = "`" + name + "` feeds the training loop of a " + wrapper +
                          " model but has no DistributedSampler and its dataset does not shard by rank" +
                          consequence(ctx, c);
    Finding* fd = one_per_node
                      ? ctx.report_weak("LL405", f.e(c.call).range, std::move(message),
                                        "the wrap drives several devices from one process (`device_ids` holds "
                                        "several), one process per node: a single node walks the data once")
                      : report_loader(ctx, c, std::move(message));
    if (!fd) continue;
    fd->notes.push_back({f.e(wrap->call).range, "model wrapped here"});
    fd->notes.push_back({f.e(f.loops[loop].iter).range, "training loop over it"});
    if (via) fd->notes.push_back({f.e(via->call).range, "passed to the training function here"});
  }
  check_loaders_of_same_file_builders(ctx);
}

}  // namespace ll
