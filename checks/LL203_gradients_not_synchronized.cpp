// LL203 gradients-not-synchronized: manual data-parallel training. The file initialises a
// process group, the model is built here and never wrapped (DDP, FSDP, DeepSpeed,
// accelerate, Horovod), and the training loop steps its optimizer with no all-reduce of the
// gradients on the way: each rank applies its own gradients and the replicas diverge.
#include <algorithm>
#include <map>
#include <set>

#include "checks/common.hpp"

namespace ll {
namespace {


// Anything in the file that synchronises or shards training for the user. The names that
// DDP/FSDP wrap (`teacher = DDP(teacher)`) go to `wrapped`: a wrap of one model does not
// synchronise another's gradients. A wrap of anything but a name counts for the whole file.

bool framework_sync(const Facts& f, std::set<std::string>& wrapped) {
  for (const auto& [local, q] : f.m.aliases) {
    (void)local;
    if (starts_with(q, "horovod") || starts_with(q, "deepspeed") || starts_with(q, "accelerate") ||
        starts_with(q, "torch.distributed.rpc") || starts_with(q, "torch.distributed.fsdp") ||
        starts_with(q, "pytorch_lightning") || starts_with(q, "lightning") || starts_with(q, "colossalai") ||
        starts_with(q, "fairscale") || starts_with(q, "apex.parallel") || starts_with(q, "torch.distributed.pipeline") ||
        starts_with(q, "torch.distributed.optim") || starts_with(q, "torch.distributed.algorithms") ||
        starts_with(q, "torch.distributed.tensor") || starts_with(q, "torch.distributed._composable"))
      return true;
  }
  for (const CallSite& c : f.calls) {
    const std::string& q = f.callee_qual(c.call);
    const std::string& a = f.callee_attr(c.call);
    std::string name = a.empty() ? f.dotted(f.e(c.call).kids[0]) : a;
    // Point-to-point messages through a function of another module of the run: pipeline stages
    // (each rank holds other layers: nothing to average) or a parameter server. (Messages in the
    // file count as collectives do: only those of gradients or parameters synchronise.)
    if (f.project && f.project->point_to_point_imports.count(q)) return true;
    if (starts_with(q, "torch.distributed.rpc") || q.find("fully_shard") != std::string::npos || name == "prepare"sv ||
        name == "initialize"sv || name == "setup_module"sv || name == "DistributedOptimizer"sv)
      return true;
    if (q.find("DistributedDataParallel") != std::string::npos || q.find("FullyShardedDataParallel") != std::string::npos ||
        name == "DistributedDataParallel"sv || name == "DDP"sv || name == "FSDP"sv) {
      const std::string w = f.dotted(f.unplaced(f.arg(c.call, 0, "module")));
      if (w.empty()) return true;
      wrapped.insert(w);
      // ... and the names the wrap is bound to (`model = DDP(net)`).
      if (c.stmt != kNone && f.m.s(c.stmt).kind == StmtKind::Assign)
        for (Id t : f.m.s(c.stmt).targets) {
          const std::string& d = f.dotted(t);
          if (d.empty()) return true;
          wrapped.insert(d);
        }
    }
  }
  return false;
}

bool point_to_point(const std::string& q) {
  // (One prefix test spares the comparisons for almost every call.)
  if (q.size() < 22 || q.compare(0, 18, "torch.distributed.") != 0) return false;
  return in(q, {"torch.distributed.send", "torch.distributed.recv", "torch.distributed.isend", "torch.distributed.irecv",
                "torch.distributed.batch_isend_irecv", "torch.distributed.P2POp"});
}

bool is_collective(const Facts& f, const CallSite& c) {
  const std::string& q = f.callee_qual(c.call);
  if (!(q.empty() || starts_with(q, "torch.distributed."))) return false;
  const std::string_view last = q.empty() ? std::string_view(f.callee_attr(c.call)) : f.last_component(q);
  if (last.empty()) return false;
  return last == "all_reduce"sv || last == "all_reduce_coalesced"sv || last == "reduce"sv || last == "reduce_scatter"sv ||
         last == "all_gather"sv || last == "all_gather_into_tensor"sv || last == "reduce_scatter_tensor"sv ||
         last == "broadcast"sv || last == "allreduce"sv ||
         // Point to point, as a parameter server or a pipeline stage exchanges tensors.
         (!q.empty() && point_to_point(q));
}

bool mentions_grad(const Facts& f, Id func, Id root, int depth) {
  if (root == kNone || depth > 3) return false;
  bool hit = false;
  for_each_expr(f.m, root, [&](Id x) {
    const Expr& e = f.e(x);
    if (e.kind == ExprKind::Attribute && (e.text == "grad"sv || e.text == "grads"sv || e.text == "gradients"sv)) hit = true;
    if (e.kind == ExprKind::Name || e.kind == ExprKind::Attribute)
      for (const auto& t : Facts::name_tokens(e.text))
        if (t == "grad"sv || t == "grads"sv || t == "gradient"sv || t == "gradients"sv) hit = true;
    if (!hit && e.kind == ExprKind::Name)
      for (Id v : f.bindings(func, e.text))
        if (mentions_grad(f, func, v, depth + 1)) hit = true;
    return !hit;
  });
  return hit;
}

// Is call `c` inside a loop over a model's parameters (`for p in model.parameters():`)?
bool in_loop_over_parameters(const Facts& f, const CallSite& c) {
  for (int l = c.loop; l >= 0; l = f.loops[l].parent)
    if (iterates_parameters(f, f.loops[l].iter)) return true;
  return false;
}

// Does function `func` of the file exchange tensors with other ranks: a collective or a
// point-to-point call in its body or in a same-file function it calls (two levels down)?
// (`memo` keeps each function's answer per depth: a file of many calls asks each once.)
using CommMemo = std::map<std::pair<Id, int>, bool>;
bool communicates(const Facts& f, Id func, int depth, CommMemo& memo) {
  if (func == kNone || depth > 2) return false;
  auto [it, fresh] = memo.try_emplace({func, depth}, false);
  if (!fresh) return it->second;
  bool yes = false;
  for (int ci : f.calls_in(func)) {
    const CallSite& x = f.calls[ci];
    yes = is_collective(f, x) ||
          (x.target_func != kNone && x.target_func != func && communicates(f, x.target_func, depth + 1, memo));
    if (yes) break;
  }
  memo[{func, depth}] = yes;
  return yes;
}

// A collective on gradients (`dist.all_reduce(p.grad)`, a flat buffer built from grads,
// inside a loop over parameters); a same-file helper that exchanges tensors with the other
// ranks, handed gradients or called per parameter (`ring_all_reduce(p.grad.data, rank, ws)`
// built on isend/irecv); or a helper whose name says it averages gradients.
bool syncs_gradients(const Facts& f, const CallSite& c, CommMemo& memo) {
  if (is_collective(f, c)) {
    Id a = f.arg(c.call, 0, "tensor");
    if (a == kNone) a = f.arg(c.call, 0, "tensors");
    if (a == kNone) a = f.arg(c.call, 0, "tensor_list");
    if (a != kNone && mentions_grad(f, c.func, a, 0)) return true;
    // Inside a loop over the parameters: `for p in model.parameters(): dist.all_reduce(p.grad)`
    return in_loop_over_parameters(f, c);
  }
  if (c.target_func != kNone && c.target_func != c.func && communicates(f, c.target_func, 0, memo)) {
    const Expr& call = f.e(c.call);
    for (size_t k = 1; k < call.kids.size(); ++k)
      if (mentions_grad(f, c.func, call.kids[k], 0)) return true;
    if (in_loop_over_parameters(f, c)) return true;
  }
  const std::string& a = f.callee_attr(c.call);
  std::string name = a.empty() ? f.dotted(f.e(c.call).kids[0]) : a;
  auto toks = Facts::name_tokens(f.last_component(name));
  bool grad = false, sync = false;
  for (const auto& t : toks) {
    if (t == "grad"sv || t == "grads"sv || t == "gradient"sv || t == "gradients"sv) grad = true;
    if (t == "average"sv || t == "avg"sv || t == "allreduce"sv || t == "all"sv || t == "reduce"sv || t == "sync"sv ||
        t == "synchronize"sv || t == "mean"sv || t == "aggregate"sv)
      sync = true;
  }
  return grad && sync;
}

// The model whose parameters the optimizer steps, when it is built in this file (a class of
// this file or of another module of the run, a torch.nn layer, torchvision): nothing
// elsewhere could have wrapped it.
std::string model_built_here(const Facts& f, Id func, Id opt) {
  const std::string& od = f.dotted(opt);
  if (od.empty()) return "";
  auto vals = f.bindings(func, od);
  if (vals.size() != 1 || f.e(vals[0]).kind != ExprKind::Call) return "";
  Id params = f.arg(vals[0], 0, "params");
  if (params == kNone || f.e(params).kind != ExprKind::Call ||
      !in(f.callee_attr(params), {"parameters", "named_parameters"}))
    return "";
  Id model = f.callee_receiver(params);
  const std::string& md = f.dotted(model);
  if (md.empty()) return "";
  auto mvals = f.bindings(func, md);
  if (mvals.empty()) return "";
  for (Id v : mvals) {
    Id cur = v;
    // net.to(device), net.cuda(), net.double()
    while (cur != kNone && f.e(cur).kind == ExprKind::Call &&
           (f.callee_attr(cur) == "to"sv || f.callee_attr(cur) == "cuda"sv || f.callee_attr(cur) == "double"sv ||
            f.callee_attr(cur) == "float"sv))
      cur = f.callee_receiver(cur);
    // `model = model.to(device)`: the same model, which its other bindings describe.
    if (cur != kNone && cur != v && f.dotted(cur) == md) continue;
    if (cur == kNone || f.e(cur).kind != ExprKind::Call) return "";
    // `model = MyDDP(model, device_ids=[rank])`: a wrapper of the model, which may
    // synchronise its gradients itself (a hand-written DDP with a reducer or hooks).
    for (size_t k = 1; k < f.e(cur).kids.size(); ++k)
      if (f.dotted(f.unplaced(f.e(cur).kids[k])) == md) return "";
    const std::string& q = f.callee_qual(cur);
    Id callee = f.e(cur).kids[0];
    bool here = false;
    if (starts_with(q, "torch.nn.") || torchvision_model_builder(q)) here = true;
    // A module class another file of the run defines (`from models import Net`): built here
    // all the same, unless it synchronises ranks itself.
    if (f.project && f.project->module_classes.count(q) && !f.project->communicating_classes.count(q)) here = true;
    // A class's own constructor of a fresh or pretrained model (`TinyBert.from_scratch(cfg)`,
    // `BertModel.from_pretrained(path)`): nothing elsewhere wrapped what it returns.
    if (in(f.callee_attr(cur), {"from_pretrained", "from_scratch", "from_config"}) && !f.not_a_torch_model(f.callee_receiver(cur)))
      here = true;
    if (f.e(callee).kind == ExprKind::Name && q.empty())
      for (Id k = 0; k < f.m.classes.size(); ++k)
        if (f.m.classes[k].name == f.e(callee).text && f.is_module_class(k)) here = true;
    if (!here) return "";
  }
  return md;
}

// The same for an optimizer the loop's function takes as a parameter (`def train(loader, model,
// criterion, optimizer, ...)`): the models built for it by every same-file caller that hands
// one in, followed up to 3 calls; nothing if a caller hands in one not built in the file.
std::vector<std::string> models_built_for(const Facts& f, Id func, Id opt, int depth = 0) {
  if (std::string m = model_built_here(f, func, opt); !m.empty()) return {m};
  const Expr& oe = f.e(opt);
  if (depth >= 3 || oe.kind != ExprKind::Name || !f.is_param(func, oe.text) || !f.bindings(func, oe.text).empty())
    return {};
  std::vector<std::string> out;
  for (const auto& [where, v] : f.argument_values(func, oe.text)) {
    if (where == func) return {};
    std::vector<std::string> m =
        f.e(v).kind == ExprKind::Name ? models_built_for(f, where, v, depth + 1) : std::vector<std::string>{};
    if (m.empty()) return {};
    for (std::string& x : m)
      if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(std::move(x));
  }
  return out;
}

// The model communicates by itself: a collective runs in a method of one of the file's
// modules or autograd Functions (tensor or pipeline parallelism: `dist.all_reduce(out)` in a
// row-parallel layer's forward, `dist.all_reduce(dX)` in its backward). Its parameters are
// shards, not replicas, and it synchronises what it needs itself.
bool model_communicates(const Facts& f) {
  for (const CallSite& x : f.calls) {
    const Id k = f.class_of(x.func);  // (the cheap test first: most calls are not in a method)
    if (k != kNone && is_collective(f, x) && (f.is_module_class(k) || f.class_derives(k, {"Function"}))) return true;
  }
  return false;
}

// The training loop runs a wrapper of the model that another function built from it
// (`ddp_model = wrap_model(model, rank)`, a helper of another module that may return a DDP
// wrap): its gradients may be synchronised there.
// Or the loop calls a method of an object an imported class that synchronises ranks built
// from the model (`dgc = DGC(model=model, ...)`; `dgc.gradient_update(it)` between backward()
// and step(): a gradient-compression exchange of another module).
bool trains_a_wrapper(const Facts& f, int loop, Id func, const std::string& model) {
  auto built_from_model = [&](Id v) {
    for (size_t k = 1; k < f.e(v).kids.size(); ++k)
      if (f.dotted(f.unplaced(f.e(v).kids[k])) == model) return true;
    return false;
  };
  for (int ci : f.loops[loop].calls) {
    const CallSite& x = f.calls[ci];
    const Id callee = f.e(x.call).kids[0];
    const std::string& d = f.dotted(callee);
    if (d.empty() || d == model) continue;
    for (Id v : f.bindings(func, d)) {
      if (f.e(v).kind != ExprKind::Call || starts_with(f.callee_qual(v), "torch.")) continue;
      if (built_from_model(v)) return true;
    }
    const Id recv = f.callee_receiver(x.call);
    if (!f.project || f.project->communicating_classes.empty() || recv == kNone || f.e(recv).kind != ExprKind::Name)
      continue;
    for (Id v : f.bindings(func, f.e(recv).text))
      if (f.e(v).kind == ExprKind::Call && f.project->communicating_classes.count(f.callee_qual(v)) && built_from_model(v))
        return true;
  }
  return false;
}

}  // namespace

void summarize_LL203(const Facts& f, FileSummary& out) {
  for (Id g = 0; g < f.m.funcs.size(); ++g) {
    if (f.m.funcs[g].cls != kNone || f.m.funcs[g].parent != kNone) continue;  // (module-level functions only)
    const auto& calls = f.calls_in(g);
    if (std::any_of(calls.begin(), calls.end(), [&](int ci) { return point_to_point(f.callee_qual(f.calls[ci].call)); }))
      out.point_to_point.push_back(f.m.funcs[g].name);
  }
  // As in the file itself (model_communicates): where one module class communicates, the
  // classes built from it may be the model (`ParallelMLP` of `RowParallelLinear`), so every
  // module class of the file counts.
  if (f.m.lang != Lang::Python || !model_communicates(f)) return;
  for (Id k = 0; k < f.m.classes.size(); ++k)
    if (f.is_module_class(k)) out.communicating_classes.push_back(f.m.classes[k].name);
}

void check_LL203(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  const CallSite* init = nullptr;
  for (const CallSite& c : f.calls)
    if (f.callee_qual(c.call) == "torch.distributed.init_process_group"sv) { init = &c; break; }
  std::set<std::string> wrapped;
  if (!init || framework_sync(f, wrapped) || model_communicates(f)) return;
  std::set<int> seen_loops;
  CommMemo memo;
  for (const CallSite& step : f.calls) {
    if (step.in_lambda || step.loop < 0) continue;
    Id opt = f.optimizer_of_step(step);
    if (opt == kNone) continue;
    int loop = step.loop;
    while (loop >= 0 && !f.loop_reaches_backward(loop)) loop = f.loops[loop].parent;
    if (loop < 0 || !seen_loops.insert(loop).second) continue;
    if (f.loop_reaches(loop, [&](const CallSite& x) { return syncs_gradients(f, x, memo); })) continue;
    // Gradient hooks that all-reduce (`p.register_hook(lambda g: dist.all_reduce(g))`) or a
    // comm hook anywhere in the file.
    bool hooked = false;
    for (const CallSite& x : f.calls)
      if ((x.in_lambda || x.func != step.func) && is_collective(f, x) && mentions_grad(f, x.func, x.call, 0)) hooked = true;
    if (hooked) continue;
    const std::vector<std::string> models = models_built_for(f, step.func, opt);
    if (models.empty()) continue;
    // Wrapped in DDP somewhere in the file (under this name or a holder of it), or the file
    // wraps something whose name it cannot follow.
    if (std::any_of(models.begin(), models.end(), [&](const std::string& m) {
          return wrapped.count(m) || wrapped.count(m.substr(0, m.find('.'))) || trains_a_wrapper(f, loop, step.func, m);
        }))
      continue;
    const std::string& model = models.front();
    std::string step_text = ctx.text(step.call);
    if (step_text.size() > 40) step_text = ctx.text(f.e(step.call).kids[0]) + "()";
    std::string message =
        "each rank runs `" + step_text + "` on its own gradients: a process group is initialised but `" + model +
        "` is not wrapped in DistributedDataParallel and no all_reduce of its gradients runs between backward() "
        "and step(), so the replicas' parameters silently diverge; wrap it in "
        "`DistributedDataParallel` or all-reduce and average every `p.grad` before the step";
    Finding* fd = ctx.report("LL203", f.e(step.call).range, message);
    if (fd) fd->notes.push_back({f.e(init->call).range, "process group initialised here"});
  }
}

}  // namespace ll
