#include "checks/facts.hpp"
#include "checks/dataloader.hpp"

#include "checks/common.hpp"

#include "checks/flow.hpp"
#include "checks/relevance.hpp"
#include "rules/budget.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_set>
#include <set>
#include <utility>
#include <cctype>
#include <cstring>

namespace ll {

std::vector<Id>& expr_walk_stack() {
  thread_local std::vector<Id> stack;
  return stack;
}

namespace {


// Could one of the name's tokens (Facts::name_tokens) be a GPU word? Every such word holds
// one of these letter sequences (case aside), so a name without any has no such token: the
// test that spares tokenising most names.
// Does `name` hold the lower-case letters `w` at position i, case aside?
bool letters_at(std::string_view name, size_t i, std::string_view w) {
  if (i + w.size() > name.size()) return false;
  for (size_t k = 0; k < w.size(); ++k)
    if ((name[i + k] | 0x20) != w[k]) return false;  // w is lower-case letters: ASCII case folding
  return true;
}

bool holds_letters(std::string_view name, std::string_view w) {
  for (size_t i = 0; i + w.size() <= name.size(); ++i)
    if (letters_at(name, i, w)) return true;
  return false;
}

bool may_name_a_gpu(std::string_view name) {
  auto at = [&](size_t i, std::string_view w) { return letters_at(name, i, w); };
  for (size_t i = 0; i < name.size(); ++i) {
    switch (name[i] | 0x20) {  // ASCII lower case
      case 'c': if (at(i, "cuda")) return true; break;  // cudnn too
      case 'g': if (at(i, "gpu")) return true; break;
      case 'd': if (at(i, "devic") || at(i, "distrib") || at(i, "ddp")) return true; break;
      case 'a': if (at(i, "accel")) return true; break;
      case 'r': if (at(i, "rank")) return true; break;
      case 'm': if (at(i, "mps")) return true; break;
      case 'x': if (at(i, "xla")) return true; break;
      case 't': if (at(i, "tpu")) return true; break;
      default: break;
    }
  }
  return false;
}

// Seeding the CUDA generator and cuDNN flags (`torch.cuda.manual_seed(0)`,
// `torch.backends.cudnn.benchmark = True`): boilerplate that places nothing on a GPU.
bool gpu_setting_only(const std::string& q) {
  return q == "torch.cuda.manual_seed"sv || q == "torch.cuda.manual_seed_all"sv || q == "torch.cuda.seed"sv ||
         q == "torch.cuda.seed_all"sv || starts_with(q, "torch.backends.cudnn");
}

// Under a tests/ or test/ directory, or pytest's conftest.py.
bool in_test_directory(const std::string& path) {
  std::string_view p = path;
  return p.find("tests/") != std::string_view::npos || starts_with(p, "test/") ||
         p.find("/test/") != std::string_view::npos || p == "conftest.py"sv || ends_with(p, "/conftest.py");
}

// Named like a test module: test_*.py, *_test.py.
bool named_like_a_test(const std::string& path) {
  std::string_view p = path;
  size_t slash = p.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? p : p.substr(slash + 1);
  return starts_with(base, "test_") || ends_with(base, "_test.py");
}

}  // namespace

std::vector<std::string> Facts::name_tokens(std::string_view name) {
  std::vector<std::string> out;
  out.reserve(4);
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(std::move(cur));
    cur.clear();
  };
  // (ASCII tests inline: this is asked of most names the checks meet.)
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    if (c == '_' || c == '.' || (c >= '0' && c <= '9')) { flush(); continue; }
    // A camel-case boundary (`trainLoader`, `HTTPServer`); an upper-case name (`DEVICE`,
    // `MODEL`) is one word. (`cur` holds lower case: the original spelling decides.)
    if (upper(c)) {
      if (!cur.empty() && (lower(name[i - 1]) || (upper(name[i - 1]) && i + 1 < name.size() && lower(name[i + 1]))))
        flush();
      c = static_cast<char>(c | 0x20);
    }
    cur.push_back(c);
  }
  flush();
  return out;
}

Facts::Facts(const Module& mod, const Config& config, const std::string& p, const ProjectView* proj)
    : project(proj), m(mod), cfg(config), path(p) {
  // A name alone is weaker evidence than a directory: `u2net_test.py` that runs a loaded
  // model over a folder under a main guard is the project's test-set inference script, and
  // `test_time_augmentation.py` a module of the model's test-time augmentation.
  is_test_file = in_test_directory(path) || (named_like_a_test(path) && !shows_no_test());
  size_t nf = m.funcs.size();
  entry_off_.assign(nf, 0);
  decorated_off_.assign(nf, 0);
  framework_off_.assign(nf, 0);
  func_calls_.assign(nf + 1, {});
  func_stmts_.assign(nf + 1, {});
  callers_.assign(nf, {});
  bind_.assign(nf + 1, {});
  bound_names_.assign(nf + 1, {});
  class_bind_.assign(m.classes.size(), {});
  for (Id f = 0; f < nf; ++f)
    if (m.funcs[f].cls == kNone && m.funcs[f].parent == kNone) module_funcs_[m.funcs[f].name].push_back(f);

  collect_bindings();
  // Decorators and framework contexts.
  // Lightning calls a module's (or a mixin's) `validation_step` / `test_step` / `predict_step`
  // by name, with grad disabled: in a file that imports it, the hook names say so.
  // Not an nn.Module of its own (a module whose hooks a manual loop calls), and nothing in the
  // file calls the hook itself (Fabric users do, with grad on).
  bool imports_lightning = false;
  for (const auto& [local, q] : m.aliases) {
    const std::string_view root = std::string_view(q).substr(0, q.find('.'));
    imports_lightning = imports_lightning || root == "lightning"sv || root == "pytorch_lightning"sv;
  }
  auto lightning_mixin = [&](Id cls, const std::string& hook) {
    for (Id b : m.classes[cls].bases) {
      const std::string q = qual(b).empty() ? dotted(b) : qual(b);
      if (last_component(q) == "Module"sv) return false;
    }
    for (const Expr& x : m.exprs)
      if (x.kind == ExprKind::Attribute && x.text == hook) return false;
    return true;
  };
  for (Id f = 0; f < nf; ++f) {
    for (Id d : m.funcs[f].decorators) {
      Id target = d;
      bool called = false;
      if (e(d).kind == ExprKind::Call) { target = e(d).kids[0]; called = true; }
      const std::string& q = qual(target);
      if (q == "torch.no_grad"sv || q == "torch.autograd.no_grad"sv || q == "torch.autograd.grad_mode.no_grad"sv ||
          q == "torch.inference_mode"sv || q == "torch.autograd.grad_mode.inference_mode"sv) {
        bool enabled_arg = false;
        if (called && q.find("inference_mode") != std::string::npos) {
          Id a = arg(d, 0, "mode");
          if (a != kNone && !(e(a).kind == ExprKind::Literal && e(a).lit == LitKind::True)) enabled_arg = true;
        }
        if (!enabled_arg) decorated_off_[f] = 1;
      } else {
        // Project wrappers such as `@smart_inference_mode()` / `@torch_no_grad`.
        std::string name = q.empty() ? dotted(target) : q;  // owns what `last` views
        std::string squeezed;  // `no_grad`, `nograd`, `NoGrad`, `torch_inference_mode`
        for (char ch : last_component(name))
          if (ch != '_') squeezed.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
        if (squeezed.find("nograd") != std::string::npos || squeezed.find("inferencemode") != std::string::npos)
          decorated_off_[f] = 1;
      }
    }
    Id cls = m.funcs[f].cls;
    if (cls != kNone && in(m.funcs[f].name, {"validation_step", "test_step", "predict_step"}) &&
        (class_derives(cls, {"LightningModule"}) || (imports_lightning && lightning_mixin(cls, m.funcs[f].name))))
      framework_off_[f] = 1;
  }
  // Walk everything.
  expr_stmt_.assign(m.exprs.size(), kNone);
  bool off = false;
  walk_body(m.body, kNone, -1, off, -1);
  // The file's own decorators whose wrapper calls the function under no_grad, whatever
  // they are named (`@nograd`, `@eval_only`); known only once the wrapper's calls are walked.
  for (Id f = 0; f < nf; ++f)
    for (Id d : m.funcs[f].decorators)
      if (!decorated_off_[f] && e(d).kind == ExprKind::Name && e(d).qname.empty()) {
        auto it = module_funcs_.find(e(d).text);
        if (it != module_funcs_.end() && it->second.size() == 1 && wraps_with_grad_off(it->second.front()))
          decorated_off_[f] = 1;
      }
  for (const CallSite& c : calls)
    if (callee_attr(c.call) == "load_state_dict"sv) {
      const std::string& d = dotted(callee_receiver(c.call));
      if (!d.empty()) load_state_dict_[d].insert(c.func);
    } else if (m.lang == Lang::Cpp && e(c.call).kids.size() >= 3 && callee_qual(c.call) == "torch.load"sv) {
      // LibTorch's `torch::load(net, "net.pt")` reads the weights into the module it is handed.
      const std::string& d = dotted(e(c.call).kids[1]);
      if (!d.empty()) load_state_dict_[d].insert(c.func);
    }
  for (Id f = 0; f < nf; ++f) {
    nested_funcs_.emplace(std::to_string(m.funcs[f].parent) + ":" + m.funcs[f].name, f);
    if (m.funcs[f].parent != kNone) nested_names_.insert(m.funcs[f].name);
  }
  for (Id k = 0; k < m.classes.size(); ++k) {
    classes_by_name_[m.classes[k].name].push_back(k);
    for (Id f : m.classes[k].methods) methods_[std::to_string(k) + ":" + m.funcs[f].name] = f;
  }
  for (auto& l : loop_memo_) l.assign(loops.size(), -1);
  resolve_calls();
  note_helper_freezes();
  mark_framework_steps();
  compute_entry_off();
  calls_in_stmt.assign(m.stmts.size(), {});
  for (size_t ci = 0; ci < calls.size(); ++ci)
    if (calls[ci].stmt != kNone) calls_in_stmt[calls[ci].stmt].push_back(static_cast<int>(ci));
  for (const auto& c : calls)
    if (is_backprop(c) || optimizer_of_step(c) != kNone || framework_fit(c) || imported_backprop_call(c)) {
      file_trains_ = true;
      break;
    }
}

void Facts::mark_framework_steps() {
  // A class whose `training_step` / `train_step` returns what it computes and never calls
  // backward() hands its loss to a runner (Lightning, mmcv / mmengine, ppln and the like),
  // which back-propagates it, and which runs the sibling validation and test steps with grad
  // disabled.
  for (Id k = 0; k < m.classes.size(); ++k) {
    bool runner = false;
    for (Id f : m.classes[k].methods) {
      if (!in(m.funcs[f].name, {"training_step", "train_step"})) continue;
      const auto& fc = calls_in(f);
      const bool backprop = std::any_of(fc.begin(), fc.end(), [&](int ci) { return is_backward(calls[ci]); });
      runner = runner || (!returned_values(f).empty() && !backprop);
    }
    if (!runner) continue;
    for (Id f : m.classes[k].methods)
      if (in(m.funcs[f].name, {"validation_step", "val_step", "test_step", "predict_step"})) framework_off_[f] = 1;
  }
}

bool Facts::imported_backprop_call(const CallSite& c) const {
  // `loss = loss_func(out, y, norm)` on `loss_func = SimpleLossCompute(...)` of the project's
  // utils, whose `__call__` runs `loss.backward()` and the step; `trainer.step(batch)` the same
  // through a method (FileSummary::backprop_methods).
  if (!project || project->backprop_method_imports.empty() || e(c.call).kids.empty()) return false;
  const Id callee = e(c.call).kids[0];
  const Expr& ce = e(callee);
  Id owner = kNone;
  std::string method;
  if (ce.kind == ExprKind::Name && ce.qname.empty()) {
    owner = callee;
    method = "__call__";
  } else if (ce.kind == ExprKind::Attribute && !ce.kids.empty()) {
    owner = ce.kids[0];
    method = ce.text;
  }
  const std::string& d = owner == kNone ? std::string() : dotted(owner);
  if (d.empty()) return false;
  const std::vector<Id> values = bindings_at(c.func, d, owner);
  std::string q = imported_class_built_by(values);
  // A class a star import brings (`from utils import *`, then `SimpleLossCompute(...)`): by its
  // own name, as the project records it, when this file defines nothing so named.
  if (q.empty() && !values.empty()) {
    for (Id v : values) {
      const Expr& ve = e(unplaced(v));
      const Expr* callee = ve.kind == ExprKind::Call && !ve.kids.empty() ? &e(ve.kids[0]) : nullptr;
      if (!callee || callee->kind != ExprKind::Name || !callee->qname.empty() || (!q.empty() && callee->text != q)) {
        q.clear();
        break;
      }
      q = callee->text;
    }
    for (const Class& k : m.classes)
      if (k.name == q) q.clear();
    if (!q.empty() && !bindings(kNone, q).empty()) q.clear();
    for (Id fn = 0; fn < static_cast<Id>(m.funcs.size()) && !q.empty(); ++fn)
      if (m.funcs[fn].name == q && m.funcs[fn].cls == kNone) q.clear();
  }
  return !q.empty() && project->backprop_method_imports.count(q + "." + method) > 0;
}

bool Facts::framework_fit(const CallSite& c) const {
  // `learn.fit(5)`, `learn.fit_one_cycle(...)`, `trainer.fit(model)`: a training framework
  // runs backward() and the steps inside its library.
  // (`trainer.train()`: Hugging Face's and TRL's trainers, and a project's trainer object,
  // which run the steps in `train()`; on a receiver named for a trainer only, as `model.train()`
  // is a mode switch.)
  const std::string& a = callee_attr(c.call);
  if (a == "train"sv) {
    const Id r = callee_receiver(c.call);
    if (r == kNone || e(r).kind == ExprKind::Call) return false;
    for (const auto& t : name_tokens(last_component(dotted(r))))
      if (in(t, {"trainer", "learner"})) return true;
    return false;
  }
  if (!in(a, {"fit", "fit_one_cycle", "fine_tune", "fit_flat_cos", "fit_sgdr"})) return false;
  for (const auto& [local, q] : m.aliases)
    for (std::string_view fw : {"fastai", "miniai", "lightning", "pytorch_lightning", "poutyne", "skorch", "ignite"})
      if (q == fw || starts_with(q, std::string(fw) + ".")) return true;
  Id r = callee_receiver(c.call);
  if (r == kNone) return false;
  for (const auto& t : name_tokens(last_component(dotted(r))))
    if (in(t, {"learn", "learner", "trainer"})) return true;
  return false;
}

bool Facts::cpu_only_at(uint32_t pos) const {
  if (cpu_only_program()) return true;
  if (!is_program()) return false;  // a module of definitions: its callers may run it on a GPU
  if (project && project->gpu_via_imports) return false;  // what it imports places tensors on a GPU
  const uint32_t first = first_gpu_evidence();
  if (first == 0) return false;
  // The top-level statement the position is in: evidence after its end cannot have run
  // when it runs (a notebook's later cells, a script's later lines). Inside a function or
  // class, callers anywhere may run it: the whole file decides.
  for (Id s : m.body) {
    const Stmt& st = m.s(s);
    if (st.range.begin > pos || st.range.end < pos) continue;
    if (st.kind == StmtKind::FunctionDef || st.kind == StmtKind::ClassDef) return false;
    return first >= st.range.end;
  }
  return false;
}

bool Facts::shows_no_test() const {
  if (m.lang != Lang::Python) return false;
  for (const auto& [local, q] : m.aliases)
    for (std::string_view fw : {"pytest", "unittest", "nose", "hypothesis", "absl.testing"})
      if (q == fw || starts_with(q, std::string(fw) + ".")) return false;
  for (Id fn = 0; fn < m.funcs.size(); ++fn)
    if (starts_with(m.funcs[fn].name, "test_") && !called_by_code(fn)) return false;
  for (const Class& k : m.classes)
    if (starts_with(k.name, "Test")) return false;
  // A command-line program: a main guard, and arguments parsed. A training script named
  // `*_test.py` whose evaluation function is `test(model, loader)` is one; a test module
  // without a test framework, whose tests are named `test_*`, does not parse a command line.
  if (has_main_guard())
    for (const auto& [local, q] : m.aliases)
      for (std::string_view cli : {"argparse", "click", "fire", "typer", "absl", "hydra", "jsonargparse"})
        if (q == cli || starts_with(q, std::string(cli) + ".")) return true;
  for (Id fn = 0; fn < m.funcs.size(); ++fn)
    if (starts_with(m.funcs[fn].name, "test") && !called_by_code(fn)) return false;
  // A check script: an `assert` in the file's top-level code on what a top-level loop
  // computed (`max_error = max(max_error, err)` over a loader, then `assert max_error <
  // 1e-4`); not an argument check (`assert os.path.isfile(args.weights)`).
  std::set<std::string> computed;
  std::vector<Id> asserts;
  std::vector<std::pair<Id, bool>> work;  // statement, inside a loop
  for (Id s : m.body) work.push_back({s, false});
  for (size_t seen = 0; !work.empty() && seen < 100000; ++seen) {
    const auto [sid, looped] = work.back();
    work.pop_back();
    const Stmt& st = m.s(sid);
    if (st.kind == StmtKind::FunctionDef || st.kind == StmtKind::ClassDef) continue;
    if (st.kind == StmtKind::Other && st.text == "assert"sv && st.value != kNone) asserts.push_back(st.value);
    if (looped && (st.kind == StmtKind::Assign || st.kind == StmtKind::AugAssign))
      for (Id t : st.targets)
        if (e(t).kind == ExprKind::Name) computed.insert(e(t).text);
    const bool inner = looped || st.kind == StmtKind::For || st.kind == StmtKind::While;
    for (const auto* part : {&st.body, &st.orelse, &st.finalbody})
      for (Id b : *part) work.push_back({b, inner});
    for (const Handler& h : st.handlers)
      for (Id b : h.body) work.push_back({b, inner});
  }
  for (Id a : asserts) {
    bool on_computed = false;
    for_each_expr(m, a, [&](Id y) {
      on_computed = on_computed || (e(y).kind == ExprKind::Name && computed.count(e(y).text));
      return !on_computed;
    });
    if (on_computed) return false;
  }
  return true;
}

bool Facts::is_notebook() const { return ends_with(path, ".ipynb"); }

bool Facts::is_program() const {
  if (is_program_ < 0) is_program_ = compute_is_program() ? 1 : 0;
  return is_program_ == 1;
}

bool Facts::compute_is_program() const {
  if (is_notebook()) return true;
  for (Id s : m.body) {
    const Stmt& st = m.s(s);
    if (st.kind == StmtKind::For || st.kind == StmtKind::While) return true;
    // An optimizer built at import (`optimizer = torch.optim.Adam(model.parameters())` beside
    // `def train(loader):`): a training script's state, which no library builds for its users.
    if (st.kind == StmtKind::Assign && st.value != kNone && e(st.value).kind == ExprKind::Call &&
        starts_with(callee_qual(st.value), "torch.optim.") &&
        callee_qual(st.value).find("lr_scheduler") == std::string::npos)
      return true;
  }
  for (const Function& fn : m.funcs)
    if (m.lang == Lang::Cpp && fn.name == "main"sv && fn.cls == kNone) return true;
  if (has_main_guard()) return true;
  // A script whose top level runs the work it defines (`rbfn = RbfImplement(...)`, then
  // `model, history = rbfn.train(data, labels)`): a call of a module-level function of the
  // file, or of a method of an object the top level built from a class of the file, whose body
  // loops or runs a model. (A library's import-time calls register or configure; they do not
  // run its loops.)
  if (m.lang != Lang::Python) return false;
  // A script that defines nothing and wires objects of imported classes together at its top
  // level, also under a top-level `if 1:` or `try:` (`method_obj = MethodGraphBert(config)`, then
  // `setting_obj.prepare(data_obj, method_obj)` and `setting_obj.load_run_save_evaluate()`): it
  // runs the work at import, which no module of definitions does.
  if (m.funcs.empty() && m.classes.empty()) {
    std::unordered_set<std::string_view> built;
    bool runs = false;
    std::function<void(const std::vector<Id>&)> walk = [&](const std::vector<Id>& block) {
      for (Id s : block) {
        if (runs) return;
        const Stmt& st = m.s(s);
        if (st.kind == StmtKind::If || st.kind == StmtKind::With || st.kind == StmtKind::Try) {
          walk(st.body);
          walk(st.orelse);
          continue;
        }
        if ((st.kind != StmtKind::Assign && st.kind != StmtKind::Expr) || st.value == kNone ||
            e(st.value).kind != ExprKind::Call || e(st.value).kids.empty())
          continue;
        const Expr& callee = e(e(st.value).kids[0]);
        const std::string_view last = last_component(qual(e(st.value).kids[0]));
        if (st.kind == StmtKind::Assign && (callee.kind == ExprKind::Name || callee.kind == ExprKind::Attribute) &&
            !last.empty() && std::isupper(static_cast<unsigned char>(last[0]))) {
          for (Id t : st.targets)
            if (e(t).kind == ExprKind::Name) built.insert(e(t).text);
          continue;
        }
        // (Also inside the statement: `print(trainer_obj.score(batches))`.)
        for_each_expr(m, st.value, [&](Id y) {
          const Expr& c = e(y);
          if (c.kind == ExprKind::Call && !c.kids.empty()) {
            const Expr& ce = e(c.kids[0]);
            runs = runs || (ce.kind == ExprKind::Attribute && !ce.kids.empty() &&
                            e(ce.kids[0]).kind == ExprKind::Name && built.count(e(ce.kids[0]).text));
          }
          return !runs;
        });
      }
    };
    walk(m.body);
    if (runs) return true;
  }
  auto runs_work = [&](Id fn) {
    if (fn == kNone) return false;
    for (const Loop& l : loops)
      if (l.func == fn) return true;
    for (int ci : calls_in(fn))
      if (is_model_call(calls[ci])) return true;
    return false;
  };
  auto function_named = [&](std::string_view name, Id cls) {
    const std::vector<Id>* pool = nullptr;
    if (cls != kNone) pool = &m.classes[cls].methods;
    for (Id g = 0; g < m.funcs.size(); ++g) {
      if (pool && std::find(pool->begin(), pool->end(), g) == pool->end()) continue;
      const Function& fn = m.funcs[g];
      if (fn.name == name && fn.parent == kNone && (cls != kNone || fn.cls == kNone)) return g;
    }
    return kNone;
  };
  std::unordered_map<std::string_view, Id> instances;  // top-level name -> class of the file
  for (Id s : m.body) {
    const Stmt& st = m.s(s);
    if ((st.kind != StmtKind::Assign && st.kind != StmtKind::Expr) || st.value == kNone ||
        e(st.value).kind != ExprKind::Call || e(st.value).kids.empty())
      continue;
    const Expr& callee = e(e(st.value).kids[0]);
    if (callee.kind == ExprKind::Name && callee.qname.empty())
      if (const Id k = class_at(callee.text, st.range.begin); k != kNone) {
        for (Id t : st.targets)
          if (e(t).kind == ExprKind::Name) instances[e(t).text] = k;
        continue;
      }
    // (Also inside the statement: `print(runner.test(points, model))`.)
    bool work = false;
    for_each_expr(m, st.value, [&](Id y) {
      const Expr& c = e(y);
      if (c.kind != ExprKind::Call || c.kids.empty()) return !work;
      const Expr& ce = e(c.kids[0]);
      if (ce.kind == ExprKind::Name && ce.qname.empty() && class_at(ce.text, st.range.begin) == kNone)
        work = runs_work(function_named(ce.text, kNone));
      else if (ce.kind == ExprKind::Attribute && !ce.kids.empty() && e(ce.kids[0]).kind == ExprKind::Name)
        if (auto it = instances.find(e(ce.kids[0]).text); it != instances.end())
          work = runs_work(function_named(ce.text, it->second));
      return !work;
    });
    if (work) return true;
  }
  return false;
}

bool Facts::compute_cpu_only_program() const {
  // A module of definitions is never one on its own: its callers may run it on a GPU. Nor is a
  // program whose imports reach a module that places tensors on a GPU.
  return is_program() && first_gpu_evidence() == UINT32_MAX && !(project && project->gpu_via_imports);
}

bool Facts::has_gpu_evidence() const {
  if (gpu_evidence_pos_ != kNotComputed) return gpu_evidence_pos_ != UINT32_MAX;
  if (any_gpu_evidence_ < 0) any_gpu_evidence_ = scan_gpu_evidence(/*any=*/true) != UINT32_MAX ? 1 : 0;
  return any_gpu_evidence_ == 1;
}

uint32_t Facts::first_gpu_evidence() const {
  if (gpu_evidence_pos_ == kNotComputed) gpu_evidence_pos_ = scan_gpu_evidence(/*any=*/false);
  return gpu_evidence_pos_;
}

uint32_t Facts::scan_gpu_evidence(bool any) const {
  // A Lightning file whose every Trainer is told to run on the CPU (`pl.Trainer(accelerator=
  // "cpu")`, at least one): the framework places the model there.
  auto lightning_on_cpu = [&] {
    int trainers = 0;
    for (const CallSite& c : calls) {
      const std::string& q = callee_qual(c.call);
      if (!(starts_with(q, "lightning.") || starts_with(q, "pytorch_lightning.")) || !ends_with(q, ".Trainer")) continue;
      const Id acc = arg(c.call, static_cast<size_t>(-1), "accelerator");
      if (acc == kNone || e(acc).kind != ExprKind::Literal || e(acc).lit != LitKind::String || e(acc).text != "cpu"sv)
        return false;
      ++trainers;
    }
    return trainers > 0;
  };
  // Frameworks that place the model themselves: evidence everywhere.
  for (const auto& [local, q] : m.aliases) {
    for (std::string_view p : {"lightning", "pytorch_lightning", "accelerate", "deepspeed", "torch.distributed",
                               "torch.cuda", "torch.nn.parallel", "horovod", "ignite", "fastai"})
      if (q == p || starts_with(q, std::string(p) + ".")) {
        if ((p == "lightning"sv || p == "pytorch_lightning"sv) && lightning_on_cpu()) continue;
        return 0;
      }
    // Hugging Face's Trainer places the model; its models and tokenizers load on the CPU
    // (`GPT2LMHeadModel.from_pretrained("gpt2")` in a CPU notebook places nothing).
    if (starts_with(q, "transformers.") && q.find("Trainer") != std::string::npos) return 0;
  }
  // A device chosen and never used (`args.device = "cuda" if torch.cuda.is_available() else
  // "cpu"`, nothing reads args.device) places nothing: mentions inside an assignment whose
  // targets are never read elsewhere are no evidence.
  std::unordered_map<Id, bool> unused_assignment;  // statement -> its targets are never read
  std::unordered_map<std::string, int> uses;        // dotted target -> expressions naming it or inside it
  // What a `print(...)` or a logging call shows is read, not used (`print("device:", device)`
  // places nothing): an expression in such a call's arguments, when the call is its statement
  // and no call among the arguments contains it (`print(score(x.cuda()))` moves `x`).
  int print_defined = -1;  // the file defines its own `print` (asked once)
  auto shown_only = [&](Id y) {
    const Id st = stmt_of(y);
    if (st == kNone || m.s(st).kind != StmtKind::Expr || m.s(st).value == kNone) return false;
    const Id c = m.s(st).value;
    const Expr& call = e(c);
    if (call.kind != ExprKind::Call || call.kids.size() < 2 || y == c) return false;
    const Expr& ce = e(call.kids[0]);
    if (ce.kind == ExprKind::Name && ce.text == "print"sv && print_defined < 0)
      print_defined = std::any_of(m.funcs.begin(), m.funcs.end(), [](const Function& fn) { return fn.name == "print"sv; });
    bool logs = ce.kind == ExprKind::Name && ce.text == "print"sv && print_defined == 0;
    if (!logs && ce.kind == ExprKind::Attribute && !ce.kids.empty() && e(ce.kids[0]).kind == ExprKind::Name) {
      const std::string_view base = e(ce.kids[0]).text;
      const std::string_view leaf = ce.text;
      logs = (base == "logging"sv || base == "logger"sv || base == "log"sv || base == "LOGGER"sv) &&
             (leaf == "info"sv || leaf == "debug"sv || leaf == "warning"sv || leaf == "warn"sv);
    }
    if (!logs) return false;
    const Range& r = e(y).range;
    if (r.begin < e(call.kids[0]).range.end) return false;  // (the callee itself)
    bool inside_call = false;
    for (size_t i = 1; i < call.kids.size() && !inside_call; ++i)
      for_each_expr(m, call.kids[i], [&](Id z) {
        const Expr& ze = e(z);
        if (ze.kind == ExprKind::Call && ze.range.begin <= r.begin && r.end <= ze.range.end) inside_call = true;
        return !inside_call;
      });
    return !inside_call;
  };
  // `args.device` is read by `args.device` and `args.device.type`.
  auto names = [&](Id y, const std::string& d) {
    if (e(y).kind != ExprKind::Name && e(y).kind != ExprKind::Attribute) return 0;
    const std::string& dy = dotted(y);
    return dy.size() >= d.size() && dy.compare(0, d.size(), d) == 0 && (dy.size() == d.size() || dy[d.size()] == '.')
               ? 1 : 0;
  };
  auto ignorable = [&](Id xi) {
    Id st = stmt_of(xi);
    if (st == kNone) return false;
    auto it = unused_assignment.find(st);
    if (it != unused_assignment.end()) return it->second;
    const Stmt& s = m.s(st);
    bool unused = s.kind == StmtKind::Assign && !s.targets.empty();
    for (Id t : s.targets) {
      if (!unused) break;
      const std::string& d = dotted(t);
      if (d.empty()) { unused = false; break; }
      auto u = uses.find(d);
      if (u == uses.end()) {
        int n = 0;
        for (Id y = 0; y < m.exprs.size(); ++y)
          if (names(y, d) && !shown_only(y)) ++n;
        u = uses.emplace(d, n).first;
      }
      // Occurrences inside the statement itself (its targets, its value) do not count.
      int own = 0;
      for (Id t2 : s.targets) for_each_expr(m, t2, [&](Id y) { own += names(y, d); return true; });
      for_each_expr(m, s.value, [&](Id y) { own += names(y, d); return true; });
      if (u->second > own) unused = false;
    }
    unused_assignment[st] = unused;
    return unused;
  };
  // `torch.device("cpu")` / `torch::Device(torch::kCPU)` names a device, the CPU.
  std::unordered_set<Id> cpu_device_callees;
  for (Id xi = 0; xi < m.exprs.size(); ++xi) {
    const Expr& x = m.exprs[xi];
    if (x.kind != ExprKind::Call || x.kids.empty()) continue;
    const std::string& q = m.exprs[x.kids[0]].qname;
    if ((q == "torch.device"sv || q == "torch.Device"sv) && cpu_device_value(xi)) cpu_device_callees.insert(x.kids[0]);
  }
  // Strings that name a device and place nothing: one compared with (`if device_type ==
  // "cuda":`, a test), a key a load maps to the CPU (`map_location={"cuda:0": "cpu"}`). Found
  // on the first string that names a GPU (most files hold none).
  std::unordered_set<Id> not_placing;
  bool not_placing_known = false;
  auto places_nothing = [&](Id lit) {
    if (!not_placing_known) {
      not_placing_known = true;
      for (Id xi = 0; xi < m.exprs.size(); ++xi) {
        const Expr& x = m.exprs[xi];
        if (x.kind == ExprKind::Compare) {
          for (Id k : x.kids)
            if (m.exprs[k].kind == ExprKind::Literal && m.exprs[k].lit == LitKind::String) not_placing.insert(k);
        } else if (x.kind == ExprKind::Sequence && x.text == "dict"sv && x.kids.size() % 2 == 0) {
          for (size_t i = 0; i + 1 < x.kids.size(); i += 2) {
            const Expr& v = m.exprs[x.kids[i + 1]];
            if (v.kind == ExprKind::Literal && v.lit == LitKind::String && v.text == "cpu"sv) not_placing.insert(x.kids[i]);
          }
        }
      }
    }
    return not_placing.count(lit) > 0;
  };
  // `torch.cuda.manual_seed(...)`, `torch.backends.cudnn.benchmark`: the whole chain, its
  // `torch.cuda` part included, places nothing.
  std::unordered_set<Id> settings;
  for (Id xi = 0; xi < m.exprs.size(); ++xi)
    if (m.exprs[xi].kind == ExprKind::Attribute && gpu_setting_only(m.exprs[xi].qname))
      for_each_expr(m, xi, [&](Id y) { settings.insert(y); return true; });
  // A flag that is only ever false (`use_cuda = False`, then `net.module if use_cuda else net`):
  // every binding of the name is the literal False, 0 or None, and no function takes it as a
  // parameter. Reading it chooses the CPU.
  auto false_flag = [&](Id xi) { return flag(xi, false); };
  // What only runs when a test is always false (`if use_cuda: net.cuda()`, `x.cuda() if use_cuda
  // else x`, `"cuda" if torch.cuda.is_available() and not force_cpu else "cpu"`) never runs, and
  // the test itself chooses nothing.
  std::vector<std::pair<uint32_t, uint32_t>> never_runs;  // [begin, end)
  // A statement that only sets the GPU's seed or cuDNN's flags (`torch.cuda.manual_seed(0)`,
  // `torch.backends.cudnn.deterministic = True`).
  auto setting_statement = [&](Id sid) {
    const Stmt& st = m.s(sid);
    if (st.kind == StmtKind::Expr && st.value != kNone && e(st.value).kind == ExprKind::Call)
      return gpu_setting_only(e(e(st.value).kids[0]).qname);
    if (st.kind == StmtKind::Assign && !st.targets.empty())
      return std::all_of(st.targets.begin(), st.targets.end(), [&](Id t) { return gpu_setting_only(e(t).qname); });
    return false;
  };
  for (const StmtSite& site : stmt_sites) {
    const Stmt& st = m.s(site.stmt);
    if (st.kind == StmtKind::If && st.value != kNone && !st.body.empty() && always_false(st.value)) {
      never_runs.push_back({m.s(st.body.front()).range.begin, m.s(st.body.back()).range.end});
      never_runs.push_back({e(st.value).range.begin, e(st.value).range.end});  // (its test chooses nothing)
    }
    // `if torch.cuda.is_available(): torch.cuda.manual_seed(0)`: a test that only guards
    // settings chooses nothing either.
    if (st.kind == StmtKind::If && st.value != kNone && !st.body.empty() && st.orelse.empty() &&
        std::all_of(st.body.begin(), st.body.end(), setting_statement))
      never_runs.push_back({e(st.value).range.begin, e(st.value).range.end});
  }
  for (const Expr& x : m.exprs)
    if (x.kind == ExprKind::Conditional && x.kids.size() == 3 && always_false(x.kids[1])) {
      never_runs.push_back({e(x.kids[0]).range.begin, e(x.kids[0]).range.end});
      never_runs.push_back({e(x.kids[1]).range.begin, e(x.kids[1]).range.end});
    }
  auto dead = [&](Id xi) {
    for (const auto& [b, en] : never_runs)
      if (b <= e(xi).range.begin && e(xi).range.end <= en) return true;
    return false;
  };
  // An attribute of an imported name, `numpy.random.rand`: the words of its base were read at
  // the base's own expression, only its last one is new.
  auto extends_qualified = [&](Id xi) {
    const Expr& x = e(xi);
    if (x.kind != ExprKind::Attribute || x.kids.empty()) return false;
    const std::string& base = e(x.kids[0]).qname;
    return !base.empty() && x.qname.size() > base.size() && x.qname.compare(0, base.size(), base) == 0;
  };
  // The first piece of GPU evidence, by position (cpu_only_at() reads it). Every expression
  // is looked at, so the common ones (no qualified name, no GPU word) cost a few tests.
  uint32_t first = UINT32_MAX;
  for (Id xi = 0; xi < m.exprs.size(); ++xi) {
    const Expr& x = m.exprs[xi];
    if (x.range.begin >= first) continue;
    bool evidence = false;
    const bool torch_name = x.qname.size() > 6 && x.qname.compare(0, 6, "torch.") == 0;
    if (!torch_name && starts_with(x.qname, "transformers.") && x.qname.find("Trainer") != std::string::npos) {
      first = x.range.begin;  // `import transformers; transformers.Trainer(...)`
      if (any) break;
      continue;
    }
    if (torch_name && (starts_with(x.qname, "torch.distributed") || starts_with(x.qname, "torch.backends.mps"))) {
      evidence = true;
    } else if (torch_name && starts_with(x.qname, "torch.cuda")) {
      evidence = !ignorable(xi);
    } else if (x.kind == ExprKind::Literal && x.lit == LitKind::String &&
               may_name_a_gpu(std::string_view(x.text).substr(0, 64))) {
      std::string low;
      for (char ch : x.text.substr(0, 64)) low.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
      // (Prose is no device: `print("Training on the GPU")`, a help text.)
      const bool prose = low.find_first_of(" \t\n") != std::string::npos;
      evidence = !prose &&
                 (low.find("cuda") != std::string::npos || low.find("gpu") != std::string::npos ||
                  low.rfind("mps", 0) == 0 || low.rfind("xla", 0) == 0) &&
                 !ignorable(xi) && !places_nothing(xi);
    } else if (x.kind == ExprKind::Attribute && x.text == "device"sv && follows_a_tensor(xi)) {
      // `torch.zeros(n, device=x.device)`: the device of a tensor the code already has places
      // nothing new.
    } else if ((x.kind == ExprKind::Name || x.kind == ExprKind::Attribute) && !starts_with(x.qname, "std.") &&
               may_name_a_gpu(x.qname.empty() || extends_qualified(xi) ? x.text : x.qname)) {
      // (C++'s standard library places nothing on a GPU: `std::random_device rd;` is a
      // random number source.)
      // An imported name counts by what it is (`import pyro.distributions as dist` is not
      // torch.distributed; `torch.device` is a device), a local one by how it is spelled.
      for (const auto& t : name_tokens(x.qname.empty() ? x.text : x.qname))
        // (`dist` alone is as often a distance or a distribution, `output_dist`; the module
        // `torch.distributed as dist` is caught by its qualified name above.)
        if (in(t, {"cuda", "gpu", "gpus", "device", "devices", "accelerator", "distributed", "ddp", "rank",
                   "mps", "xla", "tpu", "kcuda", "cudnn"}) &&
            !shown_only(xi) && !ignorable(xi) &&
            !(in(t, {"device", "devices"}) && (cpu_device_name(xi) || handed_device(xi))) && !false_flag(xi)) {
          evidence = true;
          break;
        }
    }
    if (evidence && !cpu_device_callees.count(xi) && !settings.count(xi) && !dead(xi)) {
      first = x.range.begin;
      if (any) break;  // whether there is any, not where the first is
    }
  }
  return first;
}

bool Facts::handed_device(Id x) const {
  // (Where it points is the callers' choice: their own evidence decides, through the project's
  // imports. A module of definitions no program of the run imports keeps its claims.)
  if (m.lang != Lang::Python) return false;
  const Expr& ex = e(x);
  const Id fn = function_at(ex.range.begin);
  auto param = [&](Id func, Id v) {
    return func != kNone && e(v).kind == ExprKind::Name && is_param(func, e(v).text) &&
           own_bindings(func, e(v).text).empty();
  };
  if (ex.kind == ExprKind::Name) return param(fn, x);
  if (ex.kind != ExprKind::Attribute || fn == kNone) return false;
  const std::string& d = dotted(x);
  if (!starts_with(d, "self.") || d.find('.', 5) != std::string::npos) return false;
  const std::vector<Id> values = bindings(fn, d);
  if (values.empty()) return false;
  for (Id v : values)
    if (!param(function_at(e(v).range.begin), v) && !cpu_device_value(v)) return false;
  return true;
}

bool Facts::follows_a_tensor(Id x) const {
  // `x.device`, `inputs[0].device`, `next(model.parameters()).device`: the device of a value
  // the code already has; not `args.device` / `self.device` / `cfg.device`, which hold a choice.
  const Id obj = e(x).kids.empty() ? kNone : e(x).kids[0];
  if (obj == kNone) return false;
  const Expr& o = e(obj);
  if (o.kind == ExprKind::Call || o.kind == ExprKind::Subscript) return true;
  if (o.kind != ExprKind::Name || in(o.text, {"self", "args", "cfg", "config", "opt", "opts", "hparams", "params"}))
    return false;
  const Id fn = function_at(o.range.begin);
  return fn != kNone && is_param(fn, o.text);
}

bool Facts::flag(Id xi, bool truth) const {
  const Expr& x = e(xi);
  if (x.kind != ExprKind::Name || !x.qname.empty()) return false;
  if (!flags_known_) {
    flags_known_ = true;
    for (const StmtSite& site : stmt_sites) {
      const Stmt& st = m.s(site.stmt);
      if (st.targets.empty()) continue;
      const Expr* v = st.kind == StmtKind::Assign && st.value != kNone ? &e(st.value) : nullptr;
      const bool is_false = v && v->kind == ExprKind::Literal &&
                            (v->lit == LitKind::False || v->lit == LitKind::None ||
                             (v->lit == LitKind::Int && v->text == "0"));
      const bool is_true = v && v->kind == ExprKind::Literal && v->lit == LitKind::True;
      const unsigned char bits = (is_false ? 1 : 0) | (is_true ? 2 : 0);
      for (Id t : st.targets)
        for_each_expr(m, t, [&](Id y) {
          if (e(y).kind != ExprKind::Name) return true;
          auto [it, fresh] = flags_.try_emplace(e(y).text, bits);
          if (!fresh) it->second &= bits;
          return true;
        });
    }
    // (A name no statement binds is no flag either way: only those bound are looked up.)
    for (const Function& fn : m.funcs)
      for (const std::string& p : fn.params)
        if (auto it = flags_.find(p); it != flags_.end()) it->second = 0;
  }
  auto it = flags_.find(x.text);
  return it != flags_.end() && (it->second & (truth ? 2 : 1)) != 0;
}

bool Facts::always_false(Id xi) const {
  for (int depth = 0; xi != kNone && depth < 8; ++depth) {
    const Expr& x = e(xi);
    if (x.kind == ExprKind::UnaryOp && x.text == "not"sv && !x.kids.empty()) return flag(x.kids[0], true);
    if (x.kind != ExprKind::BoolOp || x.text != "and"sv || x.kids.size() != 2) return flag(xi, false);
    if (always_false(x.kids[0])) return true;
    xi = x.kids[1];
  }
  return false;
}

std::vector<Id> Facts::own_or_global_bindings(Id func, const std::string& d) const {
  std::vector<Id> values = bindings(func, d);
  if (values.empty() && func != kNone && !starts_with(d, "self.") &&
      (d.find('.') != std::string::npos || !is_param(func, d)))
    values = bindings(kNone, d);
  return values;
}

bool Facts::cpu_device_name(Id x) const {
  // `device = torch.device("cpu")`, `torch::Device device(torch::kCPU);`: a name that only
  // ever holds the CPU places nothing on a GPU.
  const std::string& d = dotted(x);
  Id st = stmt_of(x);
  if (d.empty() || st == kNone) return false;
  auto site = stmt_index.find(st);
  if (site == stmt_index.end()) return false;
  const std::vector<Id> values = own_or_global_bindings(stmt_sites[site->second].func, d);
  if (values.empty()) return false;
  for (Id v : values)
    if (!cpu_device_value(v)) return false;
  return true;
}

bool Facts::cpu_device_value(Id v) const {
  auto cpu = [&](Id x) {
    const Expr& xe = e(x);
    // `"cuda" if torch.cuda.is_available() and not force_cpu else "cpu"`: the test is always false.
    if (xe.kind == ExprKind::Conditional && xe.kids.size() == 3 && always_false(xe.kids[1])) {
      const Expr& other = e(xe.kids[2]);
      return other.kind == ExprKind::Literal && other.lit == LitKind::String && other.text == "cpu"sv;
    }
    if (xe.kind == ExprKind::Literal) return xe.lit == LitKind::String && xe.text == "cpu"sv;
    if (xe.kind == ExprKind::Name || xe.kind == ExprKind::Attribute)
      return xe.qname == "torch.kCPU"sv || xe.qname == "c10.kCPU"sv || xe.qname == "c10.DeviceType.CPU"sv;
    return false;
  };
  if (cpu(v)) return true;
  if (e(v).kind != ExprKind::Call || !in(callee_qual(v), {"torch.device", "torch.Device"})) return false;
  Id a = arg(v, 0, "type");
  if (a == kNone) return false;
  if (cpu(a)) return true;
  // A local that only ever holds the CPU's type (`torch::DeviceType device_type =
  // torch::kCPU; torch::Device device(device_type, 0);`).
  // (Or a global, `device_type = "cpu"` at the top of a script or notebook.)
  if (e(a).kind != ExprKind::Name || !e(a).qname.empty()) return false;
  const std::vector<Id> values = own_or_global_bindings(function_at(e(a).range.begin), e(a).text);
  if (values.empty()) return false;
  for (Id b : values)
    if (!cpu(b)) return false;
  return true;
}

bool Facts::cpu_device_at(Id x) const {
  if (x == kNone) return false;
  if (cpu_device_value(x)) return true;
  const Expr& ex = e(x);
  if (ex.kind != ExprKind::Name && ex.kind != ExprKind::Attribute) return false;
  const std::string d = dotted(x);
  const Id st = stmt_of(x);
  if (d.empty() || st == kNone) return false;
  bool outside = false;
  const std::vector<Def> defs = flow().reaching(st, d, &outside);
  if (outside || defs.empty()) return false;
  for (const Def& df : defs)
    if (df.kind != DefKind::Assign || df.value == kNone || !cpu_device_value(df.value)) return false;
  return true;
}

int Facts::push_loop(Loop l) {
  loops.push_back(std::move(l));
  return static_cast<int>(loops.size() - 1);
}

void Facts::note_call_in_loops(int loop, int call) {
  for (int l = loop; l >= 0; l = loops[l].parent) {
    budget::tick();
    loops[l].calls.push_back(call);
  }
}
void Facts::note_stmt_in_loops(int loop, Id stmt) {
  for (int l = loop; l >= 0; l = loops[l].parent) {
    budget::tick();
    loops[l].stmts.push_back(stmt);
  }
}

// Returns true when the item is a grad-mode context; *disables tells which way.
bool Facts::grad_item_effect(Id item, bool* disables) const {
  if (item == kNone) return false;
  // `with torch.no_grad:` (LL104) crashes, but its intent is clear: analyse the body as
  // intended so the one real problem gets one finding.
  if (e(item).kind == ExprKind::Name || e(item).kind == ExprKind::Attribute) {
    const std::string& q = qual(item);
    if (q == "torch.no_grad"sv || q == "torch.inference_mode"sv || q == "torch.autograd.no_grad"sv) {
      *disables = true;
      return true;
    }
    // A local holding the switch (`ctx = torch.no_grad()`, then `with ctx:`): every binding of
    // it in the function is one, and they agree.
    if (e(item).kind == ExprKind::Name && q.empty() && grad_context_depth_ < 2) {
      const std::vector<Id> vals = bindings(function_at(e(item).range.begin), e(item).text);
      int off = 0, on = 0;
      ++grad_context_depth_;
      for (Id v : vals) {
        bool dis = false;
        if (e(v).kind == ExprKind::Call && grad_item_effect(v, &dis)) (dis ? off : on) += 1;
      }
      --grad_context_depth_;
      if (!vals.empty() && (off == static_cast<int>(vals.size()) || on == static_cast<int>(vals.size()))) {
        *disables = off > 0;
        return true;
      }
    }
    return false;
  }
  if (e(item).kind != ExprKind::Call) return false;
  const std::string& q = callee_qual(item);
  if (q == "torch.no_grad"sv || q == "torch.autograd.no_grad"sv || q == "torch.autograd.grad_mode.no_grad"sv) {
    *disables = true;
    return true;
  }
  if (q == "torch.enable_grad"sv || q == "torch.autograd.enable_grad"sv) {
    *disables = false;
    return true;
  }
  // MONAI's `eval_mode(*nets)` puts the networks in eval mode and runs the block under
  // `torch.no_grad()`; its `train_mode` switches grad on.
  if (q == "monai.networks.eval_mode"sv || q == "monai.networks.utils.eval_mode"sv) {
    *disables = true;
    return true;
  }
  if (q == "monai.networks.train_mode"sv || q == "monai.networks.utils.train_mode"sv) {
    *disables = false;
    return true;
  }
  if (q == "torch.inference_mode"sv || q == "torch.autograd.grad_mode.inference_mode"sv) {
    Id a = arg(item, 0, "mode");
    *disables = a == kNone || (e(a).kind == ExprKind::Literal && e(a).lit == LitKind::True);
    return true;
  }
  if (q == "torch.set_grad_enabled"sv || q == "torch.autograd.set_grad_enabled"sv ||
      q == "torch.autograd.grad_mode.set_grad_enabled"sv) {
    Id a = arg(item, 0, "mode");
    if (a == kNone) return false;
    *disables = e(a).kind == ExprKind::Literal && e(a).lit == LitKind::False;
    return true;
  }
  // `with th.no_grad():` where `th` is bound by no import of the file, or a project's own
  // `utils.inference_mode()`: a context named after torch's grad switch switches grad off
  // (its author meant it to). Analysing the body as if grad were on blames the one place
  // where it was turned off.
  const Expr& callee = e(e(item).kids[0]);
  std::string_view last = callee.kind == ExprKind::Attribute || callee.kind == ExprKind::Name ? std::string_view(callee.text) : std::string_view();
  if (q.rfind("torch.", 0) != 0 && (last == "no_grad"sv || last == "inference_mode"sv) && arg(item, 0, "mode") == kNone) {
    *disables = true;
    return true;
  }
  // A module-level function of the file that hands back the grad switch (`def ctx(): if
  // new_torch: return torch.no_grad(); return contextlib.suppress()`): `with ctx():` switches
  // grad off. Every return must be a grad-off context or a context that does nothing.
  if (callee.kind == ExprKind::Name && q.empty())
    if (Id fn = module_func_at(callee.text, callee.range.begin); fn != kNone && m.funcs[fn].cls == kNone)
      return returns_grad_off_context(fn, disables);
  return false;
}

bool Facts::returns_grad_off_context(Id fn, bool* disables) const {
  int off = 0, other = 0, noop = 0;
  std::vector<Id> work(m.funcs[fn].body.rbegin(), m.funcs[fn].body.rend());
  for (size_t seen = 0; !work.empty() && seen < 4096; ++seen) {
    const Stmt& s = m.s(work.back());
    work.pop_back();
    if (s.kind == StmtKind::FunctionDef || s.kind == StmtKind::ClassDef) continue;
    if (s.kind == StmtKind::Return) {
      bool dis = false;
      Id v = s.value;
      const std::string& rq = v != kNone && e(v).kind == ExprKind::Call ? callee_qual(v) : std::string();
      // Only torch's own switches here (no further helpers): the search stays one level deep.
      if (v != kNone && e(v).kind == ExprKind::Call && rq.rfind("torch.", 0) == 0 && grad_item_effect(v, &dis) && dis)
        ++off;
      else if (rq == "contextlib.nullcontext"sv || rq == "contextlib.suppress"sv)
        ++noop;
      else
        ++other;
      continue;
    }
    for (const auto* part : {&s.body, &s.orelse, &s.finalbody}) work.insert(work.end(), part->rbegin(), part->rend());
    for (const Handler& h : s.handlers) work.insert(work.end(), h.body.rbegin(), h.body.rend());
  }
  // A context that does nothing leaves grad on: it is allowed only where the choice cannot
  // be made per call (a function of no parameters, choosing by the PyTorch version), not in
  // `def grad_ctx(train): return nullcontext() if train else torch.no_grad()`.
  if (off == 0 || other != 0 || (noop != 0 && !m.funcs[fn].params.empty())) return false;
  *disables = true;
  return true;
}

Facts::~Facts() = default;

const Flow& Facts::flow() const {
  if (!flow_) flow_ = std::make_unique<Flow>(*this);
  return *flow_;
}

std::vector<Id> Facts::guards(const CallSite& c) const {
  std::vector<Id> out;
  for (int g = c.guard_chain; g >= 0 && out.size() < static_cast<size_t>(kMaxDepth); g = guard_nodes_[g].second)
    out.push_back(guard_nodes_[g].first);
  return out;
}

void Facts::walk_body(const std::vector<Id>& body, Id func, int loop, bool& off, int handler) {
  for (Id s : body) walk_stmt(s, func, loop, off, handler);
}

void Facts::walk_stmt(Id sid, Id func, int loop, bool& off, int handler) {
  const Stmt& s = m.stmts[sid];
  stmt_index[sid] = static_cast<int>(stmt_sites.size());
  stmt_sites.push_back({sid, func, loop, off});
  func_stmts_[func == kNone ? m.funcs.size() : func].push_back(sid);
  note_stmt_in_loops(loop, sid);
  auto ex = [&](Id x, bool o) { walk_expr(x, sid, func, loop, o, handler, false); };
  switch (s.kind) {
    case StmtKind::For: {
      ex(s.value, off);
      Id saved_guard = guard_;
      int saved_top = guard_top_;
      guard_ = kNone;
      guard_top_ = -1;
      Loop l;
      l.stmt = sid; l.func = func; l.parent = loop; l.iter = s.value; l.range = s.range;
      int li = push_loop(std::move(l));
      for (Id t : s.targets) walk_expr(t, sid, func, li, off, handler, false);
      bool inner = off;
      walk_body(s.body, func, li, inner, handler);
      guard_ = saved_guard;
      guard_top_ = saved_top;
      bool after = off;
      walk_body(s.orelse, func, loop, after, handler);
      break;
    }
    case StmtKind::While: {
      Id saved_guard = guard_;
      int saved_top = guard_top_;
      guard_ = kNone;
      guard_top_ = -1;
      Loop l;
      l.stmt = sid; l.func = func; l.parent = loop; l.range = s.range;
      int li = push_loop(std::move(l));
      walk_expr(s.value, sid, func, li, off, handler, false);
      bool inner = off;
      walk_body(s.body, func, li, inner, handler);
      guard_ = saved_guard;
      guard_top_ = saved_top;
      bool after = off;
      walk_body(s.orelse, func, loop, after, handler);
      break;
    }
    case StmtKind::With: {
      bool inner = off, sets_on = false;
      for (Id it : s.items) {
        ex(it, off);
        bool dis = false;
        if (grad_item_effect(it, &dis)) {
          inner = dis;
          // (Not `inference_mode(flag)`: off, it leaves grad mode as it found it.)
          const std::string& q = e(it).kind == ExprKind::Call ? callee_qual(it) : std::string();
          sets_on = !dis && q.find("inference_mode") == std::string::npos;
        }
      }
      for (Id t : s.targets) ex(t, off);
      grad_set_depth_ += sets_on;
      walk_body(s.body, func, loop, inner, handler);
      grad_set_depth_ -= sets_on;
      break;
    }
    case StmtKind::If: {
      ex(s.value, off);
      bool a = off, b = off;
      Id saved = guard_;
      int saved_top = guard_top_;
      if (loop >= 0) {
        guard_ = s.value;
        guard_nodes_.push_back({s.value, guard_top_});
        guard_top_ = static_cast<int>(guard_nodes_.size()) - 1;
      }
      walk_body(s.body, func, loop, a, handler);
      walk_body(s.orelse, func, loop, b, handler);
      guard_ = saved;
      guard_top_ = saved_top;
      // A grad switch in either branch (`if cond: stack.enter_context(torch.no_grad())`)
      // is taken as the intent for what follows.
      off = off || a || b;
      break;
    }
    case StmtKind::Try: {
      bool a = off;
      walk_body(s.body, func, loop, a, handler);
      for (size_t i = 0; i < s.handlers.size(); ++i) {
        int hi = static_cast<int>(handlers.size());
        handlers.push_back({sid, static_cast<int>(i), func, loop});
        if (s.handlers[i].type != kNone) ex(s.handlers[i].type, off);
        bool h = off;
        walk_body(s.handlers[i].body, func, loop, h, hi);
      }
      bool b = a;
      walk_body(s.orelse, func, loop, b, handler);
      bool c = off;
      walk_body(s.finalbody, func, loop, c, handler);
      break;
    }
    case StmtKind::FunctionDef: {
      const Function& f = m.funcs[s.func];
      for (Id d : f.decorators) ex(d, off);
      bool inner = false;
      const int saved_set = std::exchange(grad_set_depth_, 0);
      walk_body(f.body, s.func, -1, inner, -1);
      grad_set_depth_ = saved_set;
      break;
    }
    case StmtKind::ClassDef: {
      for (Id b : m.classes[s.cls].bases) ex(b, off);
      bool inner = false;
      const int saved_set = std::exchange(grad_set_depth_, 0);
      walk_body(s.body, func, -1, inner, -1);
      grad_set_depth_ = saved_set;
      break;
    }
    default: {
      for (Id t : s.targets) ex(t, off);
      ex(s.value, off);
      for (Id it : s.items) ex(it, off);
      bool inner = off;
      walk_body(s.body, func, loop, inner, handler);
      // `torch.set_grad_enabled(False)` as a statement switches grad mode for what follows.
      if (s.kind == StmtKind::Expr && s.value != kNone && e(s.value).kind == ExprKind::Call &&
          callee_attr(s.value) == "enter_context"sv) {
        bool dis = false;
        Id a = arg(s.value, 0);
        if (a != kNone && grad_item_effect(a, &dis)) off = dis;
      }
      // `torch.no_grad().__enter__()`: the context entered by hand, never left, switches grad
      // mode for the rest of the body as the statement form does.
      if (s.kind == StmtKind::Expr && s.value != kNone && e(s.value).kind == ExprKind::Call &&
          callee_attr(s.value) == "__enter__"sv) {
        bool dis = false;
        Id r = callee_receiver(s.value);
        if (r != kNone && e(r).kind == ExprKind::Call && grad_item_effect(r, &dis)) off = dis;
      }
      if (s.kind == StmtKind::Expr && s.value != kNone && e(s.value).kind == ExprKind::Call) {
        const int sw = grad_switch(s.value);
        if (sw >= 0) off = sw == 0;
      }
      // A call of the file's own function that switches grad off for the rest of the process
      // (`model = setup(args)`, whose body runs `torch.set_grad_enabled(False)`): what follows
      // runs with grad off, as after the statement itself.
      if ((s.kind == StmtKind::Expr || s.kind == StmtKind::Assign) && s.value != kNone &&
          e(s.value).kind == ExprKind::Call && leaves_grad_off(s.value))
        off = true;
      break;
    }
  }
}

void Facts::walk_expr(Id root, Id stmt, Id func, int loop, bool off, int handler, bool in_lambda) {
  if (root == kNone) return;
  // Explicit stack of (expr, loop, in_lambda).
  struct Item { Id id; int loop; bool lambda; };
  std::vector<Item> stack{{root, loop, in_lambda}};
  while (!stack.empty()) {
    Item it = stack.back();
    stack.pop_back();
    if (it.id == kNone) continue;
    if (it.id < expr_stmt_.size()) expr_stmt_[it.id] = stmt;
    const Expr& x = e(it.id);
    if (x.kind == ExprKind::Call) {
      CallSite c;
      c.call = it.id; c.stmt = stmt; c.func = func; c.loop = it.lambda ? -1 : it.loop;
      c.local_off = off; c.grad_set = grad_set_depth_ > 0; c.in_lambda = it.lambda; c.try_handler = handler; c.guard = guard_;
      c.guard_chain = guard_top_;
      int ci = static_cast<int>(calls.size());
      call_index[it.id] = ci;
      calls.push_back(c);
      func_calls_[func == kNone ? m.funcs.size() : func].push_back(ci);
      if (!it.lambda) note_call_in_loops(it.loop, ci);
    }
    if (x.kind == ExprKind::Comprehension) {
      // The first iterable is evaluated outside the comprehension's loop.
      Loop l;
      l.comp = it.id; l.func = func; l.parent = it.loop; l.range = x.range;
      l.iter = x.fors.empty() ? kNone : x.fors[0].iter;
      int li = it.lambda ? it.loop : push_loop(std::move(l));
      for (size_t i = x.fors.size(); i-- > 0;) {
        stack.push_back({x.fors[i].target, li, it.lambda});
        stack.push_back({x.fors[i].iter, i == 0 ? it.loop : li, it.lambda});
      }
      for (auto k = x.kids.rbegin(); k != x.kids.rend(); ++k) stack.push_back({*k, li, it.lambda});
      continue;
    }
    bool lam = it.lambda || x.kind == ExprKind::Lambda;
    for (auto k = x.kids.rbegin(); k != x.kids.rend(); ++k) stack.push_back({*k, it.loop, lam});
  }
}

void Facts::collect_bindings() {
  size_t module_slot = m.funcs.size();
  // Which function each statement belongs to: walk bodies.
  // (stmt, func, under an `if` of its function)
  std::vector<std::tuple<Id, Id, bool>> work;
  std::function<void(const std::vector<Id>&, Id, bool)> add = [&](const std::vector<Id>& body, Id func, bool under_if) {
    for (Id s : body) work.emplace_back(s, func, under_if);
  };
  add(m.body, kNone, false);
  for (size_t i = 0; i < work.size(); ++i) {
    auto [sid, func, under_if] = work[i];
    const Stmt& s = m.stmts[sid];
    auto slot = [&](Id f) -> auto& { return bind_[f == kNone ? module_slot : f]; };
    // Every name the statement binds or unbinds, of any kind (for bindings_at's fast path).
    {
      auto& names = bound_names_[func == kNone ? module_slot : func];
      auto note_target = [&](Id t) {
        for_each_expr(m, t, [&](Id y) {
          const std::string& d = dotted(y);
          if (!d.empty()) names.insert(d);
          return e(y).kind == ExprKind::Sequence || e(y).kind == ExprKind::Starred;
        });
      };
      if (s.kind == StmtKind::Assign || s.kind == StmtKind::AnnAssign || s.kind == StmtKind::AugAssign ||
          s.kind == StmtKind::For || s.kind == StmtKind::With || s.kind == StmtKind::Delete)
        for (Id t : s.targets) note_target(t);
      if (s.kind == StmtKind::FunctionDef) names.insert(m.funcs[s.func].name);
      if (s.kind == StmtKind::ClassDef) names.insert(m.classes[s.cls].name);
      for (const auto& h : s.handlers)
        if (!h.name.empty()) names.insert(h.name);
    }
    if (s.kind == StmtKind::Assign || s.kind == StmtKind::AnnAssign) {
      if (s.value != kNone)
        for (Id t : s.targets) {
          const std::string& d = dotted(t);
          if (!d.empty()) {
            slot(func)[d].push_back(s.value);
            if (starts_with(d, "self.") && func != kNone && m.funcs[func].cls != kNone)
              class_bind_[m.funcs[func].cls][d].push_back(s.value);
          } else if (e(t).kind == ExprKind::Sequence && e(s.value).kind == ExprKind::Sequence &&
                     e(t).kids.size() == e(s.value).kids.size()) {
            for (size_t k = 0; k < e(t).kids.size(); ++k) {
              const std::string& dk = dotted(e(t).kids[k]);
              if (!dk.empty()) slot(func)[dk].push_back(e(s.value).kids[k]);
            }
          }
        }
    } else if (s.kind == StmtKind::With) {
      for (size_t k = 0; k < s.items.size() && k < s.targets.size(); ++k) {
        if (s.targets[k] == kNone) continue;
        const std::string& d = dotted(s.targets[k]);
        if (!d.empty()) slot(func)[d].push_back(s.items[k]);
      }
    }
    // .eval() calls, in source order, for LL101's ".eval() called earlier" criterion.
    // (Also as a rebinding: `model = model.eval().cuda()` switches the object the name then
    // holds again; `net = model.eval()` switches it for both names.)
    if ((s.kind == StmtKind::Expr || (s.kind == StmtKind::Assign && s.targets.size() == 1)) && s.value != kNone &&
        e(s.value).kind == ExprKind::Call) {
      Id c = s.value;
      // model.cuda().eval(), model.eval().to(dev): any .eval() in the chain
      // And the calls that switch it back, `.train()`, `.train(True)`, `.train(flag)` (`.train(False)`
      // is an eval()): a forward after them is no longer shown to be an evaluation by the eval().
      // (Along the statement's chain of calls: `model.cuda().eval()`, `net.eval().to(dev)`.)
      for (Id x = c; x != kNone && e(x).kind == ExprKind::Call; x = callee_receiver(x)) {
        const std::string& a = callee_attr(x);
        if (a != "eval"sv && a != "train"sv) continue;
        bool eval = a == "eval"sv;
        if (!eval) {
          const Id mode = arg(x, 0, "mode");
          eval = mode != kNone && e(mode).kind == ExprKind::Literal && e(mode).lit == LitKind::False;
        }
        Id r = callee_receiver(x);
        while (r != kNone && e(r).kind == ExprKind::Call && in(callee_attr(r), {"to", "cuda", "half", "float", "cpu"}))
          r = callee_receiver(r);
        std::string d = r == kNone ? "" : dotted(r);
        // (A train() under an `if` of the function, `if adapt_bn: model.train()`, may not run:
        // it does not undo the eval().)
        if (!d.empty() && (eval || !under_if)) (eval ? evals_ : trains_)[func].emplace_back(d, e(x).range.begin);
        if (eval && a == "train"sv) evals_as_train_false_.insert(e(x).range.begin);
        if (s.kind == StmtKind::Assign && !d.empty() && (eval || !under_if))
          if (const std::string& target = dotted(s.targets[0]); !target.empty() && target != d)
            (eval ? evals_ : trains_)[func].emplace_back(target, e(x).range.begin);
      }
    }
    note_freezes(s, func);
    if (s.kind == StmtKind::FunctionDef) {
      add(m.funcs[s.func].body, s.func, false);
    } else if (s.kind == StmtKind::ClassDef) {
      add(s.body, func, under_if);
    } else {
      const bool inner = under_if || s.kind == StmtKind::If;
      add(s.body, func, inner);
      add(s.orelse, func, inner);
      add(s.finalbody, func, inner);
      for (const auto& h : s.handlers) add(h.body, func, inner);
    }
  }
}

// Of same-named definitions (a notebook that redefines `train_batch` or `Net` in a later
// cell), the one in effect at `pos` in source order: the last that starts before it, else
// (a call to a function defined further down) the last one.
template <class Range_of>
static Id definition_at(const std::vector<Id>& defs, uint32_t pos, Range_of range_of) {
  Id best = kNone;
  for (Id d : defs)
    if (range_of(d).begin < pos) best = d;
  return best != kNone ? best : defs.back();
}

Id Facts::module_func_at(const std::string& name, uint32_t pos) const {
  auto it = module_funcs_.find(name);
  if (it == module_funcs_.end()) return kNone;
  return definition_at(it->second, pos, [&](Id f) { return m.funcs[f].range; });
}

Id Facts::class_at(const std::string& name, uint32_t pos) const {
  auto it = classes_by_name_.find(name);
  if (it == classes_by_name_.end()) return kNone;
  return definition_at(it->second, pos, [&](Id k) { return m.classes[k].range; });
}

Id Facts::same_file_base(Id cls) const {
  Id next = kNone;
  for (Id b : m.classes[cls].bases) {
    if (e(b).kind != ExprKind::Name) continue;
    auto named = classes_by_name_.find(e(b).text);
    if (named == classes_by_name_.end()) continue;
    for (Id k : named->second)
      if (k != cls) next = k;  // the last definition of that name other than this class
  }
  return next;
}

Id Facts::method_in(Id cls, const std::string& name) const {
  // Methods of the class or of its same-file bases.
  for (int hops = 0; cls != kNone && hops < 8; ++hops) {
    budget::tick();
    auto it = methods_.find(std::to_string(cls) + ":" + name);
    if (it != methods_.end()) return it->second;
    cls = same_file_base(cls);
  }
  return kNone;
}

Id Facts::constructed_class(Id call) const {
  if (e(call).kind != ExprKind::Call) return kNone;
  const Expr& callee = e(e(call).kids[0]);
  if (callee.kind != ExprKind::Name || !callee.qname.empty()) return kNone;
  return class_at(callee.text, callee.range.begin);
}

Id Facts::argument_for(Id call_id, Id func, std::string_view param) const {
  if (func == kNone) return kNone;
  const Function& fn = m.funcs[func];
  size_t index = fn.params.size();
  for (size_t i = 0; i < fn.params.size(); ++i)
    if (fn.params[i] == param) index = i;
  if (index == fn.params.size()) return kNone;
  const size_t first = (fn.cls != kNone && !fn.params.empty() && fn.params[0] == "self"sv) ? 1 : 0;
  if (index < first) return kNone;
  const Expr& call = e(call_id);
  const size_t nkw = call.kw.size(), npos = call.kids.size() - 1 - nkw;
  Id a = kNone;
  if (index - first < npos) a = call.kids[1 + index - first];
  for (size_t k = 0; k < nkw; ++k)
    if (call.kw[k] == param) a = call.kids[1 + npos + k];
  return a == kNone || e(a).kind == ExprKind::Starred ? kNone : a;
}

std::vector<std::pair<Id, Id>> Facts::argument_values(Id func, const std::string& param, bool absent_none) const {
  if (func == kNone || !is_param(func, param)) return {};
  const Function& fn = m.funcs[func];
  const bool init = fn.cls != kNone && fn.parent == kNone && fn.name == "__init__"sv;
  const std::vector<int>& sites = init && callers_[func].empty() ? constructions_of(fn.cls) : callers_[func];
  if (sites.empty()) return {};
  std::vector<std::pair<Id, Id>> out;
  for (int ci : sites) {
    const Id a = argument_for(calls[ci].call, func, param);
    if (a == kNone && absent_none) {
      const auto p = std::find(fn.params.begin(), fn.params.end(), param) - fn.params.begin();
      if (static_cast<size_t>(p) < fn.param_defaults.size() && fn.param_defaults[p] == "None"sv) continue;
    }
    if (a == kNone) return {};
    out.emplace_back(calls[ci].func, a);
  }
  return out;
}

Id Facts::argument_class(Id func, const std::string& param) const {
  auto args = argument_values(func, param);
  if (args.empty()) return kNone;
  Id cls = kNone;
  for (const auto& [caller, a] : args) {
    if (dotted(a).empty()) return kNone;
    Id k = instance_class(caller, a);
    if (k == kNone || (cls != kNone && k != cls)) return kNone;
    cls = k;
  }
  return cls;
}

// `x == v` / `x != v`, `x is None` / `x is not None`, `not x` / `x`: one holds exactly
// when the other does not.
static bool complementary(const Facts& f, Id a, Id b) {
  auto same = [&](Id x, Id y) {
    const Expr &ex = f.e(x), &ey = f.e(y);
    if (ex.kind == ExprKind::Literal || ey.kind == ExprKind::Literal)
      return ex.kind == ey.kind && ex.text == ey.text;
    const std::string& d = f.dotted(x);
    return !d.empty() && d == f.dotted(y);
  };
  const Expr &ea = f.e(a), &eb = f.e(b);
  if (ea.kind == ExprKind::UnaryOp && ea.text == "not"sv && !ea.kids.empty()) return same(ea.kids[0], b);
  if (eb.kind == ExprKind::UnaryOp && eb.text == "not"sv && !eb.kids.empty()) return same(eb.kids[0], a);
  if (ea.kind != ExprKind::Compare || eb.kind != ExprKind::Compare || ea.kids.size() != 2 || eb.kids.size() != 2)
    return false;
  static const std::pair<const char*, const char*> kOpposite[] = {
      {"==", "!="}, {"is", "is not"}, {"in", "not in"}, {"<", ">="}, {">", "<="}};
  bool opposite = false;
  for (const auto& [x, y] : kOpposite)
    opposite = opposite || (ea.text == x && eb.text == y) || (ea.text == y && eb.text == x);
  return opposite && same(ea.kids[0], eb.kids[0]) && same(ea.kids[1], eb.kids[1]);
}

bool Facts::exclusive_paths(const CallSite& a, const CallSite& b) const {
  const Facts& f = *this;
  if (a.func != b.func) return false;
  const Range &ra = f.e(a.call).range, &rb = f.e(b.call).range;
  auto inside = [](const Range& outer, const Range& r) { return outer.begin <= r.begin && r.end <= outer.end; };
  std::vector<Id> only_a, only_b;
  for (const StmtSite& ss : f.stmt_sites) {
    if (ss.func != a.func) continue;
    const Stmt& st = f.m.s(ss.stmt);
    if (st.kind != StmtKind::If || st.value == kNone) continue;
    const bool in_a = inside(st.range, ra), in_b = inside(st.range, rb);
    if (in_a && in_b) {
      if (st.orelse.empty()) continue;
      const uint32_t split = f.m.s(st.orelse.front()).range.begin;
      if ((ra.begin < split) != (rb.begin < split)) return true;
    } else if (in_a && ra.begin < (st.orelse.empty() ? st.range.end : f.m.s(st.orelse.front()).range.begin)) {
      only_a.push_back(st.value);
    } else if (in_b && rb.begin < (st.orelse.empty() ? st.range.end : f.m.s(st.orelse.front()).range.begin)) {
      only_b.push_back(st.value);
    }
  }
  for (Id x : only_a)
    for (Id y : only_b)
      if (complementary(f, x, y)) return true;
  return false;
}

Id Facts::forward_receiver(Id call) const {
  Id callee = e(call).kids[0];
  if (Id model = runner_model(call); model != kNone) return model;
  return e(callee).kind == ExprKind::Attribute && e(callee).text == "forward"sv ? e(callee).kids[0] : callee;
}

Id Facts::runner_model(Id call) const {
  if (imports_inferers_ < 0) {
    imports_inferers_ = 0;
    for (const auto& [local, q] : m.aliases)
      if (starts_with(q, "monai.inferers") || q == "monai"sv) imports_inferers_ = 1;
  }
  if (!imports_inferers_) return kNone;
  const std::string& q = callee_qual(call);
  if (q.empty()) {
    // `inferer(inputs, model)`, the name bound once to `SlidingWindowInferer(...)` and the like.
    const Id callee = e(call).kids[0];
    if (e(callee).kind != ExprKind::Name && e(callee).kind != ExprKind::Attribute) return kNone;
    const std::string& d = dotted(callee);
    if (d.empty()) return kNone;
    auto it = call_index.find(call);
    const std::vector<Id> vals = bindings(it == call_index.end() ? kNone : calls[it->second].func, d);
    if (vals.size() != 1 || e(vals[0]).kind != ExprKind::Call) return kNone;
    // The inferers that only run the network (not SaliencyInferer, whose CAM back-propagates).
    const std::string& made = callee_qual(vals[0]);
    if (!starts_with(made, "monai.inferers.") ||
        !in(last_component(made), {"SimpleInferer", "SlidingWindowInferer", "SlidingWindowInfererAdapt", "SliceInferer"}))
      return kNone;
    return arg(call, 1, "network");
  }
  if (q == "monai.inferers.sliding_window_inference"sv || q == "monai.inferers.utils.sliding_window_inference"sv)
    return arg(call, 3, "predictor");
  return kNone;
}

Id Facts::unplaced(Id v) const {
  while (v != kNone && e(v).kind == ExprKind::Call && in(callee_attr(v), {"to", "cuda", "cpu", "eval", "train"}) &&
         callee_receiver(v) != kNone)
    v = callee_receiver(v);
  return v;
}

bool Facts::same_object(Id v, const std::string& d) const {
  v = unplaced(v);
  if (d.empty() || v == kNone) return false;
  if (dotted(v) == d) return true;  // `rnn = rnn.to(device)`
  // `model = DistributedDataParallel(model, ...)`: calling the wrap runs the same forward.
  // (The argument first: most values are not a call on the name itself.)
  return e(v).kind == ExprKind::Call && dotted(unplaced(arg(v, 0, "module"))) == d &&
         in(callee_qual(v), {"torch.nn.parallel.DistributedDataParallel", "torch.nn.DataParallel",
                             "torch.nn.parallel.DataParallel", "torch.compile",
                             "torch.nn.parallel.DistributedDataParallelCPU"});
}

std::string Facts::imported_class_built_by(const std::vector<Id>& values) const {
  std::string q;
  for (Id v : values) {
    const Expr& ve = e(unplaced(v));  // `Net().to(device)` is still the Net
    const std::string& vq = ve.kind == ExprKind::Call ? e(ve.kids[0]).qname : std::string();
    if (vq.empty() || starts_with(vq, "torch") || (!q.empty() && vq != q)) return "";
    q = vq;
  }
  return q.find('.') == std::string::npos ? "" : q;
}

Id Facts::instance_class(Id func, Id obj) const {
  const std::string& d = dotted(obj);
  if (d.empty() || d == "self"sv) return kNone;
  Id cls = kNone;
  for (Id v : bindings(func, d)) {
    if (same_object(v, d)) continue;
    v = unplaced(v);  // `Extractor(model).to(device)` is still the Extractor
    // Another name for one (`m = model.to(device)` after `model = Bigram(vocab)`), a few
    // names deep.
    for (int hops = 0; hops < 3 && e(v).kind == ExprKind::Name && e(v).text != d; ++hops) {
      const std::vector<Id> vs = bindings(func, e(v).text);
      if (vs.size() != 1) break;
      v = unplaced(vs[0]);
    }
    Id k = constructed_class(v);
    if (k == kNone || (cls != kNone && k != cls)) return kNone;
    cls = k;
  }
  return cls;
}

// The file's function that every binding of `name` visible from `func` compiles or scripts
// (`torch.compile(fit_step, mode=...)`, `torch.jit.script(fn)`), kNone otherwise.
Id Facts::compiled_function(Id func, const std::string& name, uint32_t pos) const {
  Id found = kNone;
  const std::vector<Id> values = bindings(func, name);
  for (Id v : values) {
    if (e(v).kind != ExprKind::Call || !in(callee_qual(v), {"torch.compile", "torch.jit.script"})) return kNone;
    Id a = arg(v, 0, "model");
    if (a == kNone || e(a).kind != ExprKind::Name || !e(a).qname.empty()) return kNone;
    Id t = module_func_at(e(a).text, pos);
    if (t == kNone || (found != kNone && t != found)) return kNone;
    found = t;
  }
  return found;
}

void Facts::resolve_calls() {
  for (size_t ci = 0; ci < calls.size(); ++ci) {
    CallSite& c = calls[ci];
    Id callee = e(c.call).kids[0];
    const Expr& ce = e(callee);
    Id target = kNone;
    if (ce.kind == ExprKind::Name && ce.text == "self"sv && class_of(c.func) != kNone) {
      target = method_in(class_of(c.func), "__call__");
    } else if (ce.kind == ExprKind::Name && ce.qname.empty()) {
      // Nested function of the enclosing function first, then module level.
      if (c.func != kNone) {
        auto nested = nested_funcs_.find(std::to_string(c.func) + ":" + ce.text);
        if (nested != nested_funcs_.end()) target = nested->second;
      }
      if (target == kNone) target = module_func_at(ce.text, ce.range.begin);
      // A compiled or scripted function (`step_c = torch.compile(step)`): the same function.
      if (target == kNone) target = compiled_function(c.func, ce.text, ce.range.begin);
      // A callable object: `save = SaveOutput(); save(x)` runs SaveOutput.__call__.
      if (target == kNone && class_at(ce.text, ce.range.begin) == kNone)
        if (Id k = instance_class(c.func, callee); k != kNone) target = method_in(k, "__call__");
    } else if (ce.kind == ExprKind::Attribute && !ce.kids.empty()) {
      const Expr& obj = e(ce.kids[0]);
      Id cls = kNone;
      if (obj.kind == ExprKind::Name && (obj.text == "self"sv || obj.text == "cls"sv)) cls = class_of(c.func);
      else if (obj.kind == ExprKind::Name) {
        cls = class_at(obj.text, obj.range.begin);
        // Not a class name: an instance of one (`cam = GradCAM(model); cam.generate(x)`).
        if (cls == kNone || !bindings(c.func, obj.text).empty()) cls = instance_class(c.func, ce.kids[0]);
      } else if (obj.kind == ExprKind::Attribute) {
        cls = instance_class(c.func, ce.kids[0]);  // `self.extractor = Extractor(...)`
      }
      if (cls != kNone) target = method_in(cls, ce.text);
    }
    c.target_func = target;
    if (target != kNone) callers_[target].push_back(static_cast<int>(ci));
    if (ce.kind != ExprKind::Attribute || ce.kids.empty()) continue;
    const Expr& obj = e(ce.kids[0]);
    const bool on_self = obj.kind == ExprKind::Name && (obj.text == "self"sv || obj.text == "cls"sv);
    if (on_self && class_of(c.func) != kNone) {
      // Dynamic dispatch: `self.evaluate_mt(...)` in a base class runs the override of a
      // same-file subclass as well (or only, when the base declares no such method).
      const Id base = class_of(c.func);
      for (Id k = 0; k < m.classes.size(); ++k) {
        if (k == base || !derives_in_file(k, base)) continue;
        auto it = methods_.find(std::to_string(k) + ":" + ce.text);
        if (it != methods_.end() && it->second != target) callers_[it->second].push_back(static_cast<int>(ci));
      }
    } else if (target == kNone && obj.qname.empty()) {
      // `decoder.generate(...)` on a value whose class the file does not show: a caller, by
      // name, of any method so named (compute_entry_off; the join adds other files' calls).
      name_callers_[ce.text].push_back(static_cast<int>(ci));
    }
  }
}

bool Facts::derives_in_file(Id cls, Id base) const {
  for (int hops = 0; cls != kNone && hops < 8; ++hops) {
    Id next = same_file_base(cls);
    if (next == base) return true;
    cls = next;
  }
  return false;
}

Id Facts::function_at(uint32_t pos) const {
  // Functions by start (the outer first of two that start together), each with the innermost
  // function around it: the last function starting at or before `pos` that holds it is the
  // innermost, and otherwise one of those around that one is. Built on first use.
  if (by_start_.size() != m.funcs.size()) {
    by_start_.resize(m.funcs.size());
    for (Id f = 0; f < m.funcs.size(); ++f) by_start_[f] = f;
    auto size = [&](Id f) { return m.funcs[f].range.end - m.funcs[f].range.begin; };
    std::sort(by_start_.begin(), by_start_.end(), [&](Id a, Id b) {
      return m.funcs[a].range.begin != m.funcs[b].range.begin ? m.funcs[a].range.begin < m.funcs[b].range.begin
                                                              : size(a) > size(b);
    });
    around_.assign(m.funcs.size(), kNone);
    std::vector<Id> open;
    for (Id f : by_start_) {
      while (!open.empty() && m.funcs[open.back()].range.end <= m.funcs[f].range.begin) open.pop_back();
      around_[f] = open.empty() ? kNone : open.back();
      open.push_back(f);
    }
  }
  auto after = std::upper_bound(by_start_.begin(), by_start_.end(), pos,
                                [&](uint32_t p, Id f) { return p < m.funcs[f].range.begin; });
  if (after == by_start_.begin()) return kNone;
  for (Id f = *std::prev(after); f != kNone; f = around_[f])
    if (m.funcs[f].range.begin <= pos && pos < m.funcs[f].range.end) return f;
  return kNone;
}

bool Facts::called_by_name(Id func) const {
  const Function& fn = m.funcs[func];
  // Methods that Python or a framework invokes implicitly (`model(x)` runs forward, a
  // Dataset's __getitem__) have callers no name shows: their explicit calls are not all.
  if (fn.cls == kNone || fn.parent != kNone || fn.name == "forward"sv || (fn.name.size() > 4 && fn.name.rfind("__", 0) == 0))
    return false;
  for (int ci : callers_[func])
    if (!neutral_caller(calls[ci], func)) return false;
  return true;
}

bool Facts::neutral_caller(const CallSite& c, Id func) const {
  // A recursive call runs in the mode the function was entered with; a test calling
  // production code is a self-check run once (docs/impact.md), not how the program runs it.
  return c.func == func || (c.func != kNone && in_test_code(c.func, /*by_name=*/true) && !in_test_code(func, true));
}

std::vector<std::string> Facts::open_methods(std::vector<Id> work) const {
  std::set<Id> seen(work.begin(), work.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < work.size() && i < 64; ++i) {
    const Id g = work[i];
    if (func_entry_off(g)) continue;
    const bool by_name = called_by_name(g);
    if (by_name) {
      const std::string key = m.classes[m.funcs[g].cls].name + "." + m.funcs[g].name;
      if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
    }
    auto visit = [&](const std::vector<int>& sites) {
      for (int ci : sites) {
        const CallSite& c = calls[ci];
        if (c.local_off || c.func == kNone || neutral_caller(c, g)) continue;
        if (seen.insert(c.func).second) work.push_back(c.func);
      }
    };
    visit(callers_[g]);
    if (by_name)
      if (auto it = name_callers_.find(m.funcs[g].name); it != name_callers_.end()) visit(it->second);
  }
  return out;
}

// `torch.set_grad_enabled(False)` / `(True)` as a call: 0 off, 1 on, -1 neither or unknown.
int Facts::grad_switch(Id call) const {
  const std::string& q = callee_qual(call);
  if (q != "torch.set_grad_enabled"sv && q != "torch.autograd.set_grad_enabled"sv) return -1;
  Id a = arg(call, 0, "mode");
  if (a == kNone || e(a).kind != ExprKind::Literal) return -1;
  if (e(a).lit == LitKind::False) return 0;
  if (e(a).lit == LitKind::True) return 1;
  return -1;
}

// Is the call one of the file's module-level functions whose own body, at its top level (on
// every path through it), ends with grad switched off by `torch.set_grad_enabled(False)`?
// Grad mode is the thread's: it stays off after the function returns. Not when anything else
// in it switches grad mode (`torch.set_grad_enabled(prev)`, a switch back in `finally:` or under
// an `if`, a `with torch.enable_grad():`), when a decorator wraps it (it may restore the mode),
// or when a nested function of the same name may be the one called. Decided once per function.
bool Facts::leaves_grad_off(Id call) const {
  const Expr& callee = e(e(call).kids[0]);
  if (callee.kind != ExprKind::Name || !callee.qname.empty()) return false;
  auto it = module_funcs_.find(callee.text);
  if (it == module_funcs_.end() || it->second.size() != 1) return false;
  return body_leaves_grad_off(it->second.front());
}

bool Facts::body_leaves_grad_off(Id fid) const {
  if (leaves_grad_off_.size() != m.funcs.size()) leaves_grad_off_.assign(m.funcs.size(), -1);
  if (leaves_grad_off_[fid] >= 0) return leaves_grad_off_[fid] == 1;
  leaves_grad_off_[fid] = 0;
  const Function& fn = m.funcs[fid];
  if (!fn.decorators.empty()) return false;
  for (const Function& g : m.funcs)
    if (g.parent != kNone && g.name == fn.name) return false;
  int state = -1;
  uint32_t switched_at = 0;
  std::set<Id> top_switches;
  for (Id st : fn.body) {
    const Stmt& x = m.s(st);
    if (x.kind == StmtKind::Return) break;
    if (x.kind == StmtKind::Expr && x.value != kNone && e(x.value).kind == ExprKind::Call) {
      const int sw = grad_switch(x.value);
      if (sw >= 0) state = sw, switched_at = x.range.begin, top_switches.insert(x.value);
    }
  }
  if (state != 0) return false;
  // Any other grad switch inside it, at any depth.
  bool other = false;
  for (Id x = 0; x < m.exprs.size() && !other; ++x) {
    const Expr& y = e(x);
    if (y.kind != ExprKind::Call || y.range.begin < fn.range.begin || y.range.end > fn.range.end || top_switches.count(x))
      continue;
    const std::string& q = callee_qual(x);
    other = in(q, {"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.enable_grad", "torch.no_grad",
                   "torch.inference_mode", "torch.autograd.grad_mode.set_grad_enabled", "torch._C._set_grad_enabled"});
  }
  if (other) return false;
  // A return nested before the switch (`if cached: return model`) leaves by a path that
  // keeps grad on.
  std::vector<Id> work(fn.body.begin(), fn.body.end());
  for (size_t seen = 0; !work.empty() && seen < 100000; ++seen) {
    const Stmt& x = m.s(work.back());
    work.pop_back();
    if (x.range.begin >= switched_at || x.kind == StmtKind::FunctionDef || x.kind == StmtKind::ClassDef) continue;
    if (x.kind == StmtKind::Return) return false;
    for (const auto* part : {&x.body, &x.orelse, &x.finalbody}) work.insert(work.end(), part->begin(), part->end());
    for (const Handler& h : x.handlers) work.insert(work.end(), h.body.begin(), h.body.end());
  }
  leaves_grad_off_[fid] = 1;
  return true;
}

bool Facts::wraps_with_grad_off(Id deco) const {
  // def nograd(f):
  //     def new_f(*args, **kwargs):
  //         with torch.no_grad():
  //             return f(*args, **kwargs)
  //     return new_f
  const Function& fn = m.funcs[deco];
  if (fn.params.empty()) return false;
  const std::string& wrapped = fn.params.front();
  std::set<std::string_view> returned;
  for (Id st : fn.body)
    if (m.s(st).kind == StmtKind::Return && m.s(st).value != kNone && e(m.s(st).value).kind == ExprKind::Name)
      returned.insert(e(m.s(st).value).text);
  for (const CallSite& c : calls) {
    if (c.func == kNone || m.funcs[c.func].parent != deco || !c.local_off || !returned.count(m.funcs[c.func].name))
      continue;
    const Expr& callee = e(e(c.call).kids[0]);
    if (callee.kind == ExprKind::Name && callee.text == wrapped) return true;
  }
  return false;
}

bool Facts::has_main_guard() const {
  for (Id s : m.body) {
    const Stmt& st = m.s(s);
    bool guard = false;
    if (st.kind == StmtKind::If && st.value != kNone)
      for_each_expr(m, st.value, [&](Id x) {
        guard = guard || (e(x).kind == ExprKind::Literal && e(x).text == "__main__"sv);
        return !guard;
      });
    if (guard) return true;
  }
  return false;
}

bool Facts::runs_at_most_once(Id func, int depth) const {
  if (func == kNone || depth > 3 || m.funcs[func].cls != kNone || m.funcs[func].parent != kNone) return false;
  // Registered with an object's decorator (`@app.route("/predict")`, `@router.post(...)`,
  // `@bot.command()`): the framework calls it, once per request or event.
  for (Id d : m.funcs[func].decorators) {
    Id c = e(d).kind == ExprKind::Call ? e(d).kids[0] : d;
    if (e(c).kind != ExprKind::Attribute) continue;
    const std::string& q = qual(c);
    if (q.empty() || !(q.rfind("torch", 0) == 0 || q.rfind("functools.", 0) == 0 || q.rfind("contextlib.", 0) == 0 ||
                       q.rfind("typing.", 0) == 0 || q.rfind("abc.", 0) == 0))
      return false;
  }
  if (project && project->external_calls.count(m.funcs[func].name)) return false;
  // C++'s `main()` is the program's entry: the runtime calls it once, and the program may not
  // (a `worker::main()` that the real one calls in a loop is a function like any other).
  if (m.lang == Lang::Cpp && m.funcs[func].name == "main"sv && callers_[func].empty()) {
    int mains = 0;  // (the lowering keeps no namespaces: two `main`s leave the entry unknown)
    for (const Function& g : m.funcs) mains += g.name == "main"sv && g.cls == kNone && g.parent == kNone;
    if (mains == 1) return true;
  }
  // Handed on as a value (`dataset.map(score)`, `pool.imap(work, items)`, `callbacks=[log]`):
  // whatever receives it may call it any number of times (once per row of a dataset).
  if (handed_on(func)) return false;
  if (callers_[func].empty()) {
    // Never called: only a script's own functions are known to be unused (a library's are
    // its interface).
    return m.lang == Lang::Python && depth == 0 && has_main_guard();
  }
  for (int ci : callers_[func]) {
    const CallSite& c = calls[ci];
    if (c.loop >= 0 || c.in_lambda || c.func == func) return false;
    if (c.func != kNone && !runs_at_most_once(c.func, depth + 1)) return false;
  }
  return true;
}

// A class whose constructor leaves grad off for the thread (`torch::autograd::GradMode::
// set_enabled(false)` in an inference wrapper's constructor, `torch.set_grad_enabled(False)`
// in `__init__`, on every path): its other methods run after it, on an object it built, and
// on the same thread they start with grad off. Grad mode is per thread, and a server's
// handlers, a pool's workers or another module's threads run them elsewhere, so this is
// weak evidence (LL101 reports weak), and none at all when the file switches grad on anywhere
// (an `enable_grad`, a `set_grad_enabled` of anything but False) or shows threads itself.
// Static and class methods and the methods the constructor itself calls run without it.
void Facts::note_constructor_grad_off() {
  ctor_off_.assign(m.funcs.size(), 0);
  std::vector<Id> inits;
  for (Id f = 0; f < m.funcs.size(); ++f)
    if (m.funcs[f].cls != kNone && m.funcs[f].name == "__init__"sv && m.funcs[f].parent == kNone) inits.push_back(f);
  if (m.mentions_threads) return;
  // (Most files have no such constructor: the calls are scanned only when one does.)
  std::vector<Id> off_inits;
  for (Id init : inits) {
    int ctors = 0;
    for (Id f : inits) ctors += m.funcs[f].cls == m.funcs[init].cls;
    if (ctors == 1 && body_leaves_grad_off(init)) off_inits.push_back(init);
  }
  if (off_inits.empty()) return;
  auto threads = [](std::string_view q) {
    for (std::string_view p : {"threading.", "concurrent.futures.", "multiprocessing.", "torch.multiprocessing.",
                               "asyncio.to_thread", "flask.", "fastapi.", "gradio.", "uvicorn.", "aiohttp.",
                               "tornado.", "grpc.", "starlette.", "ray.", "socketserver.", "http.server."})
      if (starts_with(q, p)) return true;
    return false;
  };
  for (const auto& [local, q] : m.aliases)
    if (threads(q) || threads(q + ".")) return;
  for (const CallSite& c : calls) {
    const std::string& q = callee_qual(c.call);
    if (callee_attr(c.call) == "run_in_executor"sv) return;
    if (q.empty()) continue;
    if (in(q, {"torch.enable_grad", "torch.autograd.enable_grad", "torch._C._set_grad_enabled"}) ||
        ((q == "torch.set_grad_enabled"sv || q == "torch.autograd.set_grad_enabled"sv ||
          q == "torch.autograd.grad_mode.set_grad_enabled"sv) &&
         grad_switch(c.call) != 0) ||
        threads(q))
      return;
  }
  for (Id init : off_inits) {
    const Id cls = m.funcs[init].cls;
    // What the constructor calls on `self` runs while it builds the object, maybe before the
    // switch.
    std::unordered_set<std::string_view> called_by_init;
    for (int ci : calls_in(init)) {
      const Expr& callee = e(e(calls[ci].call).kids[0]);
      if (callee.kind == ExprKind::Attribute && !callee.kids.empty() && dotted(callee.kids[0]) == "self"sv)
        called_by_init.insert(callee.text);
    }
    for (Id f : m.classes[cls].methods) {
      if (f == init || m.funcs[f].cls != cls || called_by_init.count(m.funcs[f].name)) continue;
      bool unbound = false;
      for (Id d : m.funcs[f].decorators) unbound = unbound || in(dotted(d), {"staticmethod", "classmethod"});
      if (!unbound) ctor_off_[f] = 1;
    }
  }
}

// Does `name` fit `pattern`, whose '\x01's each stand for one or more characters (the
// interpolations of `f"{phase}_step"`)? Greedy wildcard matching with one backtrack point:
// at most |pattern| * |name| steps, however many fields the pattern has.
static bool fits_pattern(std::string_view pattern, std::string_view name) {
  size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '\x01') {
      star = ++p;     // a field: at least the character at n, then as many as needed
      resume = ++n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star;
      n = ++resume;
    } else {
      return false;
    }
  }
  return p == pattern.size();
}

// Calls through a dispatch table or a computed method name reach the functions they may
// select: `STEPS[mode](model, loader)` (or `STEPS.get(mode)(...)`) with `STEPS = {"train":
// train, "eval": evaluate}`, a dict, list or tuple of same-file functions or of the class's
// `self.<method>`s; and `getattr(self, f"{phase}_step")(loader)`, which reaches the class's
// methods whose names fit the written-out parts. Such a call decides their entry grad mode
// like a direct call when the table is bound once and read only by such calls (not
// iterated, handed on or returned): then those calls are every run through it.
void Facts::add_dispatch_callers(std::vector<std::vector<int>>& via) const {
  const size_t nf = m.funcs.size();
  auto methods_of = [&](Id cls) {
    std::vector<Id> out;
    for (int hops = 0; cls != kNone && hops < 8; ++hops, cls = same_file_base(cls))
      for (Id g : m.classes[cls].methods)
        if (g < nf && m.funcs[g].parent == kNone) out.push_back(g);
    return out;
  };
  // The function a table entry names: a module-level function, or `self.<method>`.
  auto entry_func = [&](Id x, Id cls) -> Id {
    const Expr& xe = e(x);
    if (xe.kind == ExprKind::Name && xe.qname.empty()) {
      auto it = module_funcs_.find(xe.text);
      return it != module_funcs_.end() && it->second.size() == 1 ? it->second.front() : kNone;
    }
    if (xe.kind == ExprKind::Attribute && cls != kNone && e(xe.kids[0]).kind == ExprKind::Name &&
        e(xe.kids[0]).text == "self"sv)
      return method_in(cls, xe.text);
    return kNone;
  };
  // The written-out parts of a computed name: `f"{phase}_step"`, `"run_" + mode`.
  std::function<std::string(Id)> pattern = [&](Id x) -> std::string {
    const Expr& xe = e(x);
    if (xe.kind == ExprKind::Literal && xe.lit == LitKind::String) return xe.text;
    if (xe.kind == ExprKind::FString) return xe.text;
    if (xe.kind == ExprKind::BinOp && xe.text == "+"sv && xe.kids.size() == 2) return pattern(xe.kids[0]) + pattern(xe.kids[1]);
    return "\x01";
  };
  struct Table {
    Id func = kNone;  // where its calls run (for a local or module-level name: where it is read)
    Id cls = kNone;
    std::vector<std::pair<int, std::string>> calls;  // call site, the literal key it selects ("": any)
  };
  // A function that back-propagates is training, whatever a dispatch under no_grad may also
  // select (`getattr(self, f"{split}_epoch")` also fits `train_epoch`): only direct calls decide
  // its mode.
  auto credit = [&](Id g, int ci) {
    if (!reaches(g, [&](const CallSite& x) { return is_backprop(x); })) via[g].push_back(ci);
  };
  auto literal_key = [&](Id x) -> std::string {
    return x != kNone && e(x).kind == ExprKind::Literal && e(x).lit == LitKind::String && !e(x).text.empty()
               ? e(x).text
               : std::string();
  };
  std::map<std::pair<std::string, Id>, Table> tables;  // (name, its one binding) -> calls through it
  // (At most kDispatchSites such calls per file are followed, so at most that many tables,
  // each read-count one pass over the file: linear in the file. Past it, they decide nothing.)
  constexpr size_t kDispatchSites = 64;
  size_t sites = 0;
  for (size_t ci = 0; ci < calls.size() && sites < kDispatchSites; ++ci) {
    const CallSite& c = calls[ci];
    if (c.in_lambda) continue;
    const Id callee = e(c.call).kids[0];
    const Expr& ce = e(callee);
    Id table = kNone;
    std::string key;
    if (ce.kind == ExprKind::Subscript && ce.kids.size() == 2) {
      table = ce.kids[0];
      key = literal_key(ce.kids[1]);
    } else if (ce.kind == ExprKind::Call && callee_attr(callee) == "get"sv && ce.kids.size() >= 2) {
      table = callee_receiver(callee);
      key = literal_key(ce.kids[1]);
    } else if (ce.kind == ExprKind::Call && ce.kids.size() == 3 && ce.kw.empty() &&
               e(ce.kids[0]).kind == ExprKind::Name && e(ce.kids[0]).text == "getattr"sv &&
               e(ce.kids[0]).qname.empty() && e(ce.kids[1]).kind == ExprKind::Name &&
               e(ce.kids[1]).text == "self"sv && class_of(c.func) != kNone) {
      const std::string p = pattern(ce.kids[2]);
      size_t written = 0;
      for (char ch : p) written += ch != '\x01';
      if (written < 2) continue;
      ++sites;
      for (Id g : methods_of(class_of(c.func)))
        if (g != c.func && fits_pattern(p, m.funcs[g].name)) credit(g, static_cast<int>(ci));
      continue;
    }
    if (table == kNone || (e(table).kind != ExprKind::Name && e(table).kind != ExprKind::Attribute)) continue;
    const std::string& name = dotted(table);
    if (name.empty()) continue;
    const std::vector<Id> vals = bindings(c.func, name);
    if (vals.size() != 1 || e(vals[0]).kind != ExprKind::Sequence) continue;
    ++sites;
    Table& t = tables[{name, vals[0]}];
    t.func = c.func;
    t.cls = class_of(c.func);
    t.calls.emplace_back(static_cast<int>(ci), std::move(key));
  }
  for (const auto& [key, t] : tables) {
    const auto& [name, value] = key;
    // Every read of the name (in the scope that can see the binding) is one of the calls,
    // and the binding is the one other occurrence. An attribute (`self.steps`) counts wherever
    // the file reads an attribute of that name (`runner.steps["eval"](...)` outside the class).
    Range scope{};
    bool whole_module = true;
    const bool attribute = starts_with(name, "self.");
    if (attribute) {
      if (t.cls == kNone) continue;
    } else if (t.func != kNone && !own_bindings(t.func, name).empty()) {
      scope = m.funcs[t.func].range;
      whole_module = false;
    }
    size_t seen = 0;
    for (Id x = 0; x < m.exprs.size(); ++x) {
      const Expr& xe = m.exprs[x];
      if (xe.kind != ExprKind::Name && xe.kind != ExprKind::Attribute) continue;
      if (xe.text != last_component(name)) continue;
      if (!whole_module && (xe.range.begin < scope.begin || xe.range.end > scope.end)) continue;
      if (attribute ? xe.kind == ExprKind::Attribute : dotted(x) == name) ++seen;
    }
    if (seen != t.calls.size() + 1) continue;
    const Expr& v = e(value);
    const bool dict = v.text == "dict"sv;
    for (size_t k = dict ? 1 : 0; k < v.kids.size(); k += dict ? 2 : 1) {
      const Id g = entry_func(v.kids[k], t.cls);
      if (g == kNone) continue;
      // A call with a written-out key selects that entry only (`ENGINE["val"](...)`).
      const std::string entry_key = dict ? literal_key(v.kids[k - 1]) : std::string();
      for (const auto& [ci, call_key] : t.calls)
        if (call_key.empty() || !dict || call_key == entry_key) credit(g, ci);
    }
  }
}

void Facts::compute_entry_off() {
  size_t nf = m.funcs.size();
  note_constructor_grad_off();
  for (Id f = 0; f < nf; ++f) entry_off_[f] = decorated_off_[f] || framework_off_[f];
  // Calls through a local name a function binds to a module-level function (`fn = evaluate`,
  // `fn = functools.partial(evaluate, model)`, `run = lambda: evaluate(model, loader)`): they
  // decide its entry mode like direct calls; the calls inside such a lambda are decided by the
  // name's.
  std::vector<std::vector<int>> via_alias(nf);
  std::unordered_set<int> decided_by_alias;
  auto module_func = [&](Id x) -> Id {
    if (x == kNone || e(x).kind != ExprKind::Name || !e(x).qname.empty()) return kNone;
    auto it = module_funcs_.find(e(x).text);
    return it != module_funcs_.end() && it->second.size() == 1 ? it->second.front() : kNone;
  };
  for (Id g = 0; g < nf && !module_funcs_.empty(); ++g)
    for (const auto& [name, vals] : bind_[g]) {
      if (name.find('.') != std::string::npos) continue;
      for (Id v : vals) {
        // (Either branch of `evaluate if mode == "val" else predict`.)
        std::vector<Id> targets;
        const Expr& ve = e(v);
        if (ve.kind == ExprKind::Conditional && ve.kids.size() == 3) {
          for (Id x : {ve.kids[0], ve.kids[2]})
            if (Id t = module_func(x); t != kNone) targets.push_back(t);
        } else if (Id t = module_func(v); t != kNone) {
          targets.push_back(t);
        }
        std::vector<int> inside;  // the calls of the target inside a lambda
        if (targets.empty() && ve.kind == ExprKind::Call && callee_qual(v) == "functools.partial"sv)
          if (Id t = module_func(arg(v, 0, "func")); t != kNone) targets.push_back(t);
        if (targets.empty() && ve.kind == ExprKind::Lambda)
          for (int ci : calls_in(g)) {
            const CallSite& c = calls[ci];
            if (!c.in_lambda || c.target_func == kNone || e(c.call).range.begin < ve.range.begin ||
                e(c.call).range.end > ve.range.end)
              continue;
            targets.push_back(c.target_func);
            inside.push_back(ci);
          }
        if (targets.empty()) continue;
        // Only a name bound once and only ever called here, directly (not handed to a thread,
        // `map`, a callback list, returned, copied, or read by a nested function): those calls
        // are every run of the function through it. Anything else leaves the name out, as if
        // it were not there.
        if (vals.size() != 1 || is_param(g, name)) continue;
        std::vector<int> via;
        for (int ci : calls_in(g)) {
          const Id callee = e(calls[ci].call).kids[0];
          if (!calls[ci].in_lambda && e(callee).kind == ExprKind::Name && e(callee).text == name) via.push_back(ci);
        }
        if (via.empty()) continue;
        size_t reads = 0;
        const Range& body = m.funcs[g].range;
        for (Id x = 0; x < m.exprs.size(); ++x) {
          const Expr& xe = m.exprs[x];
          if (xe.kind == ExprKind::Name && xe.range.begin >= body.begin && xe.range.end <= body.end && xe.text == name)
            ++reads;
        }
        if (reads != via.size() + 1) continue;  // the calls, and the name bound
        for (Id target : targets)
          if (target != g) via_alias[target].insert(via_alias[target].end(), via.begin(), via.end());
        decided_by_alias.insert(inside.begin(), inside.end());
      }
    }
  add_dispatch_callers(via_alias);
  // Interprocedural: a function whose every same-file call site runs with grad disabled.
  for (int iter = 0; iter < 8; ++iter) {
    bool changed = false;
    for (Id f = 0; f < nf; ++f) {
      if (entry_off_[f]) continue;
      // Call sites in other files of the run count too (module-level functions).
      const std::vector<bool>* ext = nullptr;
      if (project && m.funcs[f].cls == kNone && m.funcs[f].parent == kNone) {
        auto it = project->external_calls.find(m.funcs[f].name);
        if (it != project->external_calls.end()) ext = &it->second;
      }
      // A method without a resolved caller: the calls that name it (`decoder.generate(...)`
      // in this file, and, through the join, in the run's other files).
      const std::vector<int>* by_name = nullptr;
      int ext_methods = -1;  // -1: no call in another file; 1: all with grad off; 0: not all
      if (called_by_name(f)) {
        auto it = name_callers_.find(m.funcs[f].name);
        if (it != name_callers_.end()) by_name = &it->second;
        if (project && !project->external_method_calls.empty()) {
          auto em = project->external_method_calls.find(m.classes[m.funcs[f].cls].name + "." + m.funcs[f].name);
          if (em != project->external_method_calls.end()) ext_methods = em->second ? 1 : 0;
        }
      }
      // The call sites that decide the entry mode (not neutral_caller()): at least one,
      // every one with grad disabled.
      size_t deciding = ext ? ext->size() : 0;
      if (ext_methods >= 0) ++deciding;
      bool all = ext_methods != 0;
      if (ext)
        for (bool off : *ext) all = all && off;
      auto all_off = [&](const std::vector<int>& sites) {
        for (int ci : sites) {
          const CallSite& c = calls[ci];
          if (neutral_caller(c, f) || decided_by_alias.count(ci)) continue;
          ++deciding;
          // A call inside a module's own forward runs in the mode of whatever calls that
          // forward, which is judged there (`self.head.forward_test(x)` in `forward`).
          if (!(c.local_off || func_entry_off(c.func) || in_module_forward(c.func))) return false;
        }
        return true;
      };
      all = all && all_off(callers_[f]) && (!by_name || all_off(*by_name)) && all_off(via_alias[f]);
      if (all && deciding > 0) { entry_off_[f] = 1; changed = true; }
    }
    if (!changed) break;
  }
}

// The qualified name an imported dotted name stands for (`Transformer` of `from model import
// Transformer` -> `model.Transformer`); "" when its root is not an import.
static std::string imported_name(const Module& m, const std::string& dotted) {
  const std::string root = dotted.substr(0, dotted.find('.'));
  auto it = root.empty() ? m.aliases.end() : m.aliases.find(root);
  return it == m.aliases.end() ? std::string() : it->second + dotted.substr(root.size());
}

// Is the receiver a library's object: a call of an imported library (`Categorical(probs)` from
// torch.distributions, `np.random.default_rng()`), directly or through a name bound only so?
bool Facts::from_library(Id func, Id x) const {
  auto library_call = [&](Id v) {
    if (v == kNone || e(v).kind != ExprKind::Call) return false;
    const std::string& q = callee_qual(v);
    const std::string root = q.substr(0, q.find('.'));
    return in(root, {"torch", "numpy", "scipy", "random", "jax", "tensorflow", "sklearn", "pyro", "gym", "gymnasium"});
  };
  if (library_call(x)) return true;
  if (e(x).kind != ExprKind::Name) return false;
  const std::vector<Id> vals = bindings(func, e(x).text);
  if (vals.empty()) return false;
  for (Id v : vals)
    if (!library_call(v)) return false;
  return true;
}

bool Facts::linear_layer(Id v) const {
  v = unplaced(v);
  return e(v).kind == ExprKind::Call && callee_qual(v) == "torch.nn.Linear"sv;
}

bool Facts::one_linear_class(Id cls) const {
  if (linear_probe_class(cls)) return true;
  const Id fwd = is_module_class(cls) ? method_in(cls, "forward") : kNone;
  return fwd != kNone && linear_past_grad_off(fwd);
}

bool Facts::linear_probe_class(Id cls) const {
  const Id fwd = is_module_class(cls) ? method_in(cls, "forward") : kNone;
  if (fwd == kNone) return false;
  // `return self.fc(x)`, after a docstring at most.
  std::vector<Id> body;
  for (Id sid : m.funcs[fwd].body) {
    const Stmt& st = m.s(sid);
    if (!(st.kind == StmtKind::Expr && st.value != kNone && e(st.value).kind == ExprKind::Literal)) body.push_back(sid);
  }
  if (body.size() != 1) return false;
  const Stmt& ret = m.s(body[0]);
  if (ret.kind != StmtKind::Return || ret.value == kNone || e(ret.value).kind != ExprKind::Call) return false;
  const Expr& call = e(ret.value);
  const std::string& layer = dotted(call.kids[0]);
  const std::vector<std::string>& params = m.funcs[fwd].params;
  if (!starts_with(layer, "self.") || call.kids.size() != 2 || params.size() != 2 ||
      e(call.kids[1]).kind != ExprKind::Name || e(call.kids[1]).text != params[1])
    return false;
  const std::vector<Id> layers = bindings(fwd, layer);
  return !layers.empty() && std::all_of(layers.begin(), layers.end(), [&](Id v) { return linear_layer(v); });
}

bool Facts::linear_past_grad_off(Id fwd) const {
  // A forward that runs its other parts under `torch.no_grad()` (a frozen backbone as a feature
  // extractor) and only linear layers with grad on: `with torch.no_grad(): f = self.backbone(x)`,
  // then `return self.linear(f.flatten(1))`. Its graph is that of linear layers.
  // (At least one part under no_grad: a stack of linear layers alone is a fully-connected model,
  // which the size policy decides.)
  const std::vector<int>& in_fwd = calls_in(fwd);
  if (std::none_of(in_fwd.begin(), in_fwd.end(), [&](int ci) { return calls[ci].local_off; })) return false;
  bool linear = false, off = false;
  for (int ci : in_fwd) {
    const CallSite& c = calls[ci];
    if (c.func != fwd || c.in_lambda) continue;
    const Id callee = e(c.call).kids.empty() ? kNone : e(c.call).kids[0];
    const std::string& d = callee == kNone ? std::string() : dotted(callee);
    // (Only the module's own parts: `self.<name>(...)`; methods of tensors and torch's
    // functions are judged with the layers whose outputs they take.)
    if (!starts_with(d, "self.") || d.find('.', 5) != std::string::npos) continue;
    if (c.local_off) {
      off = true;
      continue;
    }
    const std::vector<Id> layers = bindings(fwd, d);
    if (layers.empty() || !std::all_of(layers.begin(), layers.end(), [&](Id v) { return linear_layer(v); })) return false;
    linear = true;
  }
  return linear && off;
}

// Is parameter `k` of `fn` defaulted to `False` (a call that leaves it out passes False)?
static bool defaults_to_false(const Function& fn, int k) {
  return k >= 0 && static_cast<size_t>(k) < fn.param_defaults.size() && fn.param_defaults[k] == "False";
}

FileSummary Facts::summarize() const {
  FileSummary out;
  out.module = module_of_path(path);
  out.path = path;
  for (Id k = 0; k < m.classes.size(); ++k)
    if (graph_free_class(k)) out.grad_off_forwards.push_back(m.classes[k].name);
  for (Id k = 0; k < m.classes.size(); ++k)
    if (one_linear_class(k)) out.linear_classes.push_back(m.classes[k].name);
  for (Id k = 0; k < m.classes.size(); ++k)
    if (is_module_class(k) && builds_layers(k)) out.module_classes.push_back(m.classes[k].name);
  for (Id k = 0; k < m.classes.size(); ++k)
    if (const Id fw = is_module_class(k) ? method_in(k, "forward") : kNone; fw != kNone && class_of(fw) == k)
      for (int el : detached_elements(fw)) out.detached_forward_elements.push_back(m.classes[k].name + "." + std::to_string(el));
  {
    std::set<std::string> refs;
    for (const Function& fn : m.funcs)
      for (const std::string& t : fn.param_types)
        if (std::string q = imported_name(m, t); !q.empty() && q.rfind("torch", 0) != 0) refs.insert(std::move(q));
    out.type_refs.assign(refs.begin(), refs.end());
  }
  for (Id c = 0; c < m.classes.size(); ++c)
    if (class_derives(c, {"Dataset", "IterableDataset"})) out.classes.push_back(m.classes[c].name);
  // Module-level functions that switch a parameter to eval mode and never back.
  for (Id fn = 0; fn < m.funcs.size(); ++fn) {
    const Function& g = m.funcs[fn];
    if (g.cls != kNone || g.parent != kNone) continue;
    for (size_t pi = 0; pi < g.params.size(); ++pi) {
      bool eval = false, train = false;
      for (int ci : calls_in(fn)) {
        const Id x = calls[ci].call;
        if (dotted(callee_receiver(x)) != g.params[pi]) continue;
        const std::string& a = callee_attr(x);
        if (a == "eval"sv && e(x).kids.size() == 1) eval = true;
        if (a == "train"sv) train = true;
      }
      if (eval && !train) out.eval_leaving.push_back({g.name, static_cast<int>(pi), g.params[pi], -1, ""});
    }
    if (auto z = freezes_.find(fn); z != freezes_.end())
      for (size_t pi = 0; pi < g.params.size(); ++pi)
        if (freezes_param(z->second, g.params[pi])) {
          const int flag = freeze_flag(fn, g.params[pi]);
          out.freezing.push_back({g.name, static_cast<int>(pi), g.params[pi], flag, flag >= 0 ? g.params[flag] : ""});
        }
    if (!value_freezes_.empty() && value_freezes_.count(fn))
      for (size_t pi = 0; pi < g.params.size(); ++pi)
        if (const int flag = value_flag(fn, g.params[pi]); flag >= 0)
          out.freezing.push_back({g.name, static_cast<int>(pi), g.params[pi], flag, g.params[flag],
                                  defaults_to_false(g, flag) ? 2 : 1});
  }
  {
    const std::unordered_set<std::string>& acc = accumulating_methods();
    for (Id fn = 0; fn < m.funcs.size(); ++fn)
      if (m.funcs[fn].cls != kNone && acc.count("#" + std::to_string(fn)))
        out.accumulating_methods.push_back(m.classes[m.funcs[fn].cls].name + "." + m.funcs[fn].name);
  }
  // Another file's call sites can only change this file's findings through entry_off_:
  // all of them with grad off can turn a function off; one with grad on can turn back on
  // a function that only its same-file callers turned off. A function off by its own
  // decorator (or framework hook) stays off whatever calls it, so it is left out.
  for (const auto& [name, ids] : module_funcs_) {
    bool all_decorated = true, caller_off = false;
    for (Id f : ids) {
      bool own = decorated_off_[f] || framework_off_[f];
      all_decorated = all_decorated && own;
      caller_off = caller_off || (!own && entry_off_[f]);
    }
    if (all_decorated) continue;
    out.functions.push_back(name);
    if (caller_off) out.caller_off.push_back(name);
  }
  // Methods called by name (the join matches them with other files' methods): one entry per
  // attribute name; and this file's methods that only such calls turned off.
  {
    // A call made from a method of the same name (`super().eval_step(batch)` in an override,
    // `self.inner.eval_step(batch)` in a wrapper's) runs in the mode that method was entered
    // with, which the calls naming it decide: it counts only when no other call in the run
    // names the method (method_calls_from_namesakes; join_summaries).
    std::map<std::string, bool> by_name, from_namesakes;
    for (const auto& [name, sites] : name_callers_)
      for (int ci : sites) {
        // (only when that method's own mode is left to the calls naming it: no resolved caller)
        const bool namesake = calls[ci].func != kNone && m.funcs[calls[ci].func].name == name &&
                              called_by_name(calls[ci].func);
        auto [it, fresh] = (namesake ? from_namesakes : by_name).try_emplace(name, true);
        it->second = it->second && (grad_off(calls[ci]) || in_module_forward(calls[ci].func));
      }
    out.method_calls.assign(by_name.begin(), by_name.end());
    // Functions named like a loss, for LL102 across files (join_summaries; the files that read
    // such a name, as FileSummary::referenced tells, learn what it returns).
    // (Not an abstract method, whose body only raises: `def get_loss(self): raise
    // NotImplementedError`; its subclasses' definitions say what it returns.)
    auto abstract = [&](Id fn) {
      const std::vector<Id>& body = m.funcs[fn].body;
      for (Id sid : body) {
        const Stmt& st = m.s(sid);
        const bool doc = st.kind == StmtKind::Expr && st.value != kNone && e(st.value).kind == ExprKind::Literal;
        if (!doc && st.kind != StmtKind::Raise && st.kind != StmtKind::Pass) return false;
      }
      return !body.empty();
    };
    for (Id fn = 0; fn < m.funcs.size(); ++fn)
      if (m.funcs[fn].parent == kNone && named_like_a_loss(m.funcs[fn].name) && !abstract(fn))
        out.loss_functions.emplace_back(m.funcs[fn].name, returns_number(fn));
    out.method_calls_from_namesakes.assign(from_namesakes.begin(), from_namesakes.end());
    // Calls on `self`, for the subclasses other files define (join_summaries).
    std::map<std::pair<std::string_view, std::string_view>, bool> on_self;
    for (const CallSite& c : calls) {
      const Id callee = e(c.call).kids[0];
      if (e(callee).kind != ExprKind::Attribute || e(callee).kids.empty() || c.func == kNone) continue;
      const Expr& obj = e(e(callee).kids[0]);
      const Id k = class_of(c.func);
      if (k == kNone || obj.kind != ExprKind::Name || obj.text != "self"sv) continue;
      auto [it, fresh] = on_self.try_emplace({m.classes[k].name, e(callee).text}, true);
      it->second = it->second && (grad_off(c) || in_module_forward(c.func));
    }
    for (const auto& [key, off] : on_self) out.self_calls.emplace_back(std::string(key.first), std::string(key.second), off);
    for (Id k = 0; k < m.classes.size(); ++k)
      for (Id b : m.classes[k].bases) {
        const std::string d = dotted(b);
        if (d.empty()) continue;
        const std::string q = d.find('.') == std::string::npos && classes_by_name_.count(d) ? d : imported_name(m, d);
        if (!q.empty()) out.class_bases.emplace_back(m.classes[k].name, q);
      }
    for (Id f = 0; f < m.funcs.size(); ++f)
      if (entry_off_[f] && !decorated_off_[f] && !framework_off_[f] && called_by_name(f))
        out.name_off_methods.push_back(m.classes[m.funcs[f].cls].name + "." + m.funcs[f].name);
  }
  // Training through a call across files: unresolved calls whose result this file
  // back-propagates, and this file's functions a caller could train through
  // (FileSummary::backprop_results, eval_named).
  {
    // Per function that back-propagates, the names its backward reads and, up to three
    // assignments back, the names those were computed from (without program order: this is
    // a cross-file hint, and one pass per function keeps it linear). A call whose statement
    // back-propagates, or whose result is bound to one of those names, is trained through.
    std::set<std::string> trained, named;
    std::map<Id, std::set<std::string>> feeds;  // function -> names that reach its backward
    std::map<Id, std::set<Id>> backprop_stmts;
    for (const CallSite& b : calls)
      if (b.stmt != kNone && is_backprop(b)) {  // (kNone: a script's top level)
        backprop_stmts[b.func].insert(b.stmt);
        std::set<std::string>& names = feeds[b.func];
        for_each_expr(m, b.call, [&](Id y) {
          if (const std::string& d = dotted(y); !d.empty()) names.insert(d);
          return true;
        });
      }
    for (auto& [fn, names] : feeds)
      for (int hop = 0; hop < 3; ++hop) {
        bool grew = false;
        for (Id sid : stmts_in(fn)) {
          const Stmt& a = m.s(sid);
          if ((a.kind != StmtKind::Assign && a.kind != StmtKind::AugAssign) || a.value == kNone) continue;
          bool hit = false;
          for (Id t : a.targets) hit = hit || names.count(dotted(t));
          if (!hit) continue;
          for_each_expr(m, a.value, [&](Id y) {
            if (const std::string& d = dotted(y); !d.empty()) grew |= names.insert(d).second;
            return true;
          });
        }
        if (!grew) break;
      }
    for (const CallSite& c : calls) {
      if (c.target_func != kNone || c.stmt == kNone) continue;
      auto fd = feeds.find(c.func);
      if (fd == feeds.end()) continue;
      const Expr& callee = e(e(c.call).kids[0]);
      if (callee.kind != ExprKind::Name && callee.kind != ExprKind::Attribute) continue;
      const std::string name = callee.kind == ExprKind::Name ? callee.text : callee_attr(c.call);
      // (Any method of an object, `out = model.run_batch(batch)` then `out["loss"].backward()`;
      // a plain function only when named like evaluation.)
      if (name.empty() || trained.count(name) || (!is_eval_function_name(name) && callee.kind != ExprKind::Attribute))
        continue;
      bool hit = backprop_stmts[c.func].count(c.stmt) > 0;
      const Stmt& st = m.s(c.stmt);
      if (!hit && st.kind == StmtKind::Assign)
        for (Id t : st.targets)
          for_each_expr(m, t, [&](Id y) {
            if (const std::string& d = dotted(y); !d.empty() && fd->second.count(d)) hit = true;
            return !hit && e(y).kind == ExprKind::Sequence;
          });
      // A library's object (`m = Categorical(probs); action = m.sample()`), not a function
      // another file of the run could define. (Asked last: it reads the receiver's bindings.)
      if (hit && callee.kind == ExprKind::Attribute && from_library(c.func, callee.kids[0])) continue;
      if (hit) trained.insert(name);
    }
    // (A method only when it runs a forward, the one thing such a caller changes the reading
    // of: a name another file trains through makes that file's view, and a second reading of
    // it, for nothing otherwise.)
    auto runs_a_forward = [&](Id fn) {
      for (int ci : calls_in(fn))
        if (is_model_call(calls[ci])) return true;
      return false;
    };
    for (Id fn = 0; fn < m.funcs.size(); ++fn)
      if (is_eval_function_name(m.funcs[fn].name) ||
          (m.funcs[fn].cls != kNone && !starts_with(m.funcs[fn].name, "__") && runs_a_forward(fn) &&
           !returned_values(fn).empty()))
        named.insert(m.funcs[fn].name);
    out.backprop_results.assign(trained.begin(), trained.end());
    out.eval_named.assign(named.begin(), named.end());
  }
  // Star imports, relative ones resolved against this file's package.
  {
    const std::string package = importer_package(out.module, path);
    for (const std::string& s : m.star_imports) out.star_modules.push_back(absolute_import(package, s));
  }
  // The module-level function whose entry mode alone decides a call's (ImportedCall::via).
  auto note_call = [&](std::string q, const CallSite& c) {
    ImportedCall& ic = out.imported_calls.emplace_back();
    ic.callee = std::move(q);
    ic.off = grad_off(c);
    const Id g = c.func;
    if (!ic.off && !c.local_off && g != kNone && !entry_off_[g] && !decorated_off_[g] && !framework_off_[g] &&
        m.funcs[g].cls == kNone && m.funcs[g].parent == kNone && callers(g).empty())
      ic.via = m.funcs[g].name;
  };
  {
    size_t qualified = 0;
    for (const CallSite& c : calls) qualified += !e(e(c.call).kids[0]).qname.empty();
    out.imported_calls.reserve(qualified);
  }
  for (const CallSite& c : calls) {
    const Expr& callee = e(e(c.call).kids[0]);
    // A name no binding of this file explains may come from a star import.
    if (!out.star_modules.empty() && callee.kind == ExprKind::Name && callee.qname.empty() &&
        c.target_func == kNone && class_at(callee.text, callee.range.begin) == kNone &&
        bindings(c.func, callee.text).empty() && !nested_names_.count(callee.text))
      for (const std::string& s : out.star_modules) note_call(s + "." + callee.text, c);
    const std::string& q = callee.qname;
    if (q.empty() || q.rfind("torch", 0) == 0) continue;
    // A DataLoader whose dataset is an imported class: record it when workers may run.
    if (q == "torch.utils.data.DataLoader"sv) continue;
    note_call(q, c);
  }
  for (const CallSite& c : calls) {
    const std::string& q = callee_qual(c.call);
    if (q != "torch.utils.data.DataLoader"sv && q != "torch.utils.data.dataloader.DataLoader"sv) continue;
    // (Workers as the checks count them: a literal, an expression, or a dict of keyword
    // arguments, `DataLoader(ds, **params)`.)
    if (workers_of(*this, c) == 0) continue;
    Id ds = arg(c.call, 0, "dataset");
    for (int depth = 0; ds != kNone && depth < 4; ++depth) {
      if (e(ds).kind == ExprKind::Call) {
        const std::string& dq = callee_qual(ds);
        if (!dq.empty()) out.dataset_uses.push_back(dq);
        break;
      }
      // (The binding that reaches the loader: a name the function binds on another branch, or
      // a comprehension's own variable, is another dataset.)
      const std::string& d = dotted(ds);
      auto vals = d.empty() ? std::vector<Id>{} : bindings_at(c.func, d, ds);
      ds = vals.empty() ? kNone : vals.front();
    }
  }
  return out;
}

bool Facts::used_with_workers_elsewhere(Id cls) const {
  return project && cls != kNone && project->classes_with_workers.count(m.classes[cls].name) != 0;
}

std::string Facts::entry_off_reason(Id func) const {
  if (func == kNone) return "";
  if (decorated_off_[func]) return "decorated with a grad-disabling decorator";
  if (framework_off_[func]) return "run by a training framework (PyTorch Lightning, an mmcv-style runner) under no_grad";
  if (entry_off_[func]) return "every call site runs with grad disabled";
  return "";
}

const std::string& Facts::compute_dotted(Id id) const {
  static const std::string kEmpty;
  budget::tick();
  if (id == kNone || id >= m.exprs.size()) return kEmpty;
  if (dotted_memo_.empty()) dotted_memo_.assign(m.exprs.size(), 0);
  uint32_t& memo = dotted_memo_[id];
  if (memo == 1) return kEmpty;
  if (memo >= 2) return dotted_strings_[memo - 2];
  memo = 1;
  if (e(id).kind == ExprKind::Name) {  // (most expressions asked: no parts to join)
    dotted_strings_.push_back(e(id).text);
    memo = static_cast<uint32_t>(dotted_strings_.size() + 1);
    return dotted_strings_.back();
  }
  std::vector<std::string_view> parts;
  Id cur = id;
  for (int guard = 0; cur != kNone && guard < 64; ++guard) {
    const Expr& x = e(cur);
    // (The base's own dotted name, when it was asked before: `self.model` for `self.model.fc`.)
    const uint32_t known = cur != id ? dotted_memo_[cur] : 0;
    if (x.kind == ExprKind::Name || known >= 2) {
      std::string out = known >= 2 ? dotted_strings_[known - 2] : x.text;
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        out += '.';
        out += *it;
      }
      dotted_strings_.push_back(std::move(out));
      memo = static_cast<uint32_t>(dotted_strings_.size() + 1);
      return dotted_strings_.back();
    }
    if (known == 1 || x.kind != ExprKind::Attribute || x.kids.empty()) return kEmpty;
    parts.push_back(x.text);
    cur = x.kids[0];
  }
  return kEmpty;
}

std::string_view Facts::last_component(std::string_view d) const {
  size_t p = d.find_last_of('.');
  return p == std::string_view::npos ? d : d.substr(p + 1);
}

const std::string Facts::kEmptyName;
Id Facts::callee_receiver(Id call) const {
  if (call == kNone || e(call).kind != ExprKind::Call) return kNone;
  const Expr& c = e(e(call).kids[0]);
  return c.kind == ExprKind::Attribute && !c.kids.empty() ? c.kids[0] : kNone;
}

Id Facts::arg(Id call, size_t pos, std::string_view kw) const {
  const Expr& c = e(call);
  if (c.kind != ExprKind::Call || c.kids.size() < 1 + c.kw.size()) return kNone;  // no call: no argument
  size_t nkw = c.kw.size();
  size_t npos = c.kids.size() - 1 - nkw;
  if (!kw.empty())
    for (size_t i = 0; i < nkw; ++i)
      if (c.kw[i] == kw) return c.kids[1 + npos + i];
  if (pos != static_cast<size_t>(-1) && pos < npos) {
    Id a = c.kids[1 + pos];
    return e(a).kind == ExprKind::Starred ? kNone : a;
  }
  return kNone;
}

bool Facts::has_kwargs_splat(Id call) const {
  for (const auto& k : e(call).kw)
    if (k == "**") return true;
  return false;
}

bool Facts::splat_keys(Id call, std::vector<std::string>* keys) const {
  const Expr& c = e(call);
  // A dict display whose every key is a string literal, or a choice between such displays.
  std::function<bool(Id)> display = [&](Id v) {
    const Expr& x = e(v);
    if (x.kind == ExprKind::Conditional) return x.kids.size() == 3 && display(x.kids[0]) && display(x.kids[2]);
    if (x.kind != ExprKind::Sequence || x.text != "dict"sv || x.kids.size() % 2) return false;
    for (size_t k = 0; k < x.kids.size(); k += 2) {
      const Expr& key = e(x.kids[k]);
      if (key.kind != ExprKind::Literal || key.lit != LitKind::String) return false;
      keys->push_back(key.text);
    }
    return true;
  };
  // (`**kwargs` lowers to a Starred expression around the name.)
  auto splatted = [&](const Expr& call, size_t k) {
    const Id x = call.kids[call.kids.size() - std::min(call.kw.size(), call.kids.size() - 1) + k];
    return e(x).kind == ExprKind::Starred && !e(x).kids.empty() ? e(x).kids[0] : x;
  };
  for (size_t k = 0; k < c.kw.size(); ++k) {
    if (c.kw[k] != "**") continue;
    const Id x = splatted(c, k);
    if (e(x).kind != ExprKind::Name) return false;
    const std::string& name = e(x).text;
    const Id func = function_at(c.range.begin);
    const std::vector<Id> values = bindings_at(func, name, x);
    if (values.empty() || (func != kNone && is_param(func, name))) return false;
    for (Id v : values)
      if (!display(v)) return false;
    // Read only by splats (and bound) in its function: nothing adds a key in between.
    size_t reads = 0, splats = 0;
    for (const Expr& y : m.exprs)
      if (y.kind == ExprKind::Name && y.text == name && function_at(y.range.begin) == func) ++reads;
    for (const CallSite& s : calls)
      if (s.func == func)
        for (size_t j = 0; j < e(s.call).kw.size(); ++j)
          if (e(s.call).kw[j] == "**" && e(splatted(e(s.call), j)).kind == ExprKind::Name &&
              e(splatted(e(s.call), j)).text == name)
            ++splats;
    if (reads != splats + bindings(func, name).size()) return false;
  }
  return true;
}

bool Facts::switched_off(Id func) const {
  if (func == kNone || m.lang != Lang::Python) return false;
  const std::string& name = m.funcs[func].name;
  if (name.empty() || name.rfind("__", 0) == 0 || name == "forward"sv || !m.funcs[func].decorators.empty()) return false;
  if (project && (project->external_calls.count(name) ||
                  (m.funcs[func].cls != kNone &&
                   project->external_method_calls.count(m.classes[m.funcs[func].cls].name + "." + name))))
    return false;
  // A commented-out call: the name at an identifier's start, and before it on the line only
  // what code has there (nothing, an expression ending in punctuation or an operator, a
  // keyword): `# model.fit(x)`, `# loss = fit(x)`, `# return fit(x)`; not prose that names it
  // (`# its `fit()` walks the data`, `# call fit() later`, `# benefit(x)`).
  const std::string called = name + "(";
  bool commented = false;
  for (const Comment& c : m.comments) {
    for (size_t at = c.text.find(called); at != std::string::npos && !commented; at = c.text.find(called, at + 1)) {
      const unsigned char before = at > 0 ? static_cast<unsigned char>(c.text[at - 1]) : ' ';
      if (std::isalnum(before) || before == '_') continue;
      size_t k = at;
      while (k > 0 && (c.text[k - 1] == ' ' || c.text[k - 1] == '\t')) --k;
      // Code before a call ends in punctuation or an operator (`acc = 100.0 * evaluate(`,
      // `print(f"{evaluate(`, `if e % 5 == 0: evaluate(`) or in a keyword (`return evaluate(`).
      size_t w = k;
      while (w > 0 && (std::isalnum(static_cast<unsigned char>(c.text[w - 1])) || c.text[w - 1] == '_')) --w;
      const std::string_view word = std::string_view(c.text).substr(w, k - w);
      commented = k == 0 || std::strchr(".=(,[{:*+-/%<>!&|^~@", c.text[k - 1]) != nullptr ||
                  in(word, {"return", "yield", "await", "not", "and", "or", "in", "is", "if", "elif", "else", "while",
                            "assert", "lambda"});
    }
    if (commented) break;
  }
  if (!commented) return false;
  // Any live mention: a call, or a reference handed on (`map(self.get_DBindex, xs)`).
  for (const Expr& x : m.exprs)
    if ((x.kind == ExprKind::Name || x.kind == ExprKind::Attribute) && x.text == name) return false;
  return true;
}

bool Facts::is_param(Id func, std::string_view name) const {
  if (func == kNone) return false;
  const auto& params = m.funcs[func].params;
  return std::find(params.begin(), params.end(), name) != params.end();
}

std::vector<Id> Facts::own_bindings(Id func, const std::string& d) const {
  const auto& local = bind_[func == kNone ? m.funcs.size() : func];
  auto it = local.find(d);
  return it == local.end() ? std::vector<Id>{} : it->second;
}

std::vector<Id> Facts::bindings(Id func, const std::string& d) const {
  std::vector<Id> out;
  const auto& local = bind_[func == kNone ? m.funcs.size() : func];
  auto it = local.find(d);
  if (it != local.end()) out = it->second;
  if (!out.empty()) return out;
  // A parameter shadows the names of enclosing functions and of the module (`def
  // build(dataset):` never reads a module-level `dataset = ...`); `self.x` is the class's.
  if (func != kNone && !starts_with(d, "self.")) {
    const std::string_view root = std::string_view(d).substr(0, d.find('.'));
    for (const auto& p : m.funcs[func].params)
      if (p == root) return out;
  }
  return outer_bindings(func, d);
}

// What a name holds when no binding of the function itself reaches: attributes set by any
// method of the class (and same-file bases), else enclosing functions, else module level.
std::vector<Id> Facts::outer_bindings(Id func, const std::string& d) const {
  std::vector<Id> out;
  if (starts_with(d, "self.") && class_of(func) != kNone) {
    Id cls = class_of(func);
    for (int hops = 0; cls != kNone && hops < 8; ++hops) {
      auto ct = class_bind_[cls].find(d);
      if (ct != class_bind_[cls].end()) { out = ct->second; break; }
      Id next = kNone;
      for (Id b : m.classes[cls].bases)
        for (Id k = 0; k < m.classes.size(); ++k)
          if (e(b).kind == ExprKind::Name && m.classes[k].name == e(b).text && k != cls) next = k;
      cls = next;
    }
  }
  if (out.empty() && func != kNone) {
    Id p = m.funcs[func].parent;
    if (p != kNone) return bindings(p, d);
    const auto& mod = bind_[m.funcs.size()];
    auto mt = mod.find(d);
    if (mt != mod.end()) out = mt->second;
  }
  return out;
}

std::vector<Id> Facts::bindings_at(Id func, const std::string& d, Id at) const {
  Id st = stmt_of(at);
  if (st == kNone || d.empty()) return bindings(func, d);
  auto si = stmt_index.find(st);
  if (si == stmt_index.end() || stmt_sites[si->second].func != func) return bindings(func, d);
  // Fast path: neither the name nor a prefix of it is bound in the function at all (a
  // parameter, `self.x`, a global): nothing local can reach, no graph is needed.
  {
    const auto& names = bound_names_[func == kNone ? m.funcs.size() : func];
    bool bound = false;
    for (size_t p = 0; p <= d.size() && !bound; ++p)
      if (p == d.size() || d[p] == '.') bound = names.count(d.substr(0, p)) != 0;
    if (!bound) {
      if (d.find('.') == std::string::npos && func != kNone)
        for (const auto& p : m.funcs[func].params)
          if (p == d) return {};
      return outer_bindings(func, d);
    }
  }
  bool outside = false;
  std::vector<Id> out;
  bool local = false;  // bound somewhere in the function: a local name (Python scoping)
  for (const Def& df : flow().reaching(st, d, &outside)) {
    local = true;
    if (df.value != kNone && (df.kind == DefKind::Assign || df.kind == DefKind::Declared || df.kind == DefKind::WithAlias))
      out.push_back(df.value);
  }
  if (!outside) return out;
  const auto& own = bind_[func == kNone ? m.funcs.size() : func];
  local = local || own.count(d) != 0;
  bool param = false;
  if (func != kNone)
    for (const auto& p : m.funcs[func].params) param = param || p == d;
  // A plain local name that no binding reaches here is unbound (or a parameter): nothing
  // the function assigns later is visible. Attributes and free names come from outside.
  if (d.find('.') == std::string::npos && (local || param)) return out;
  for (Id v : outer_bindings(func, d)) out.push_back(v);
  return out;
}

const Expr* Facts::literal_of(Id x, Id func) const {
  if (x == kNone) return nullptr;
  const Expr& ex = e(x);
  if (ex.kind == ExprKind::Literal) return &ex;
  if (ex.kind == ExprKind::UnaryOp && ex.text == "-"sv && e(ex.kids[0]).kind == ExprKind::Literal) return nullptr;
  if (ex.kind == ExprKind::Name) {
    auto vals = bindings_at(func, ex.text, x);
    if (vals.size() == 1 && e(vals[0]).kind == ExprKind::Literal) return &e(vals[0]);
  }
  return nullptr;
}

bool Facts::class_derives(Id cls, std::initializer_list<std::string_view> suffixes) const {
  for (int hops = 0; cls != kNone && hops < 16; ++hops) {
    Id next = kNone;
    for (Id b : m.classes[cls].bases) {
      std::string q = qual(b);
      std::string d = q.empty() ? dotted(b) : q;
      for (auto s : suffixes)
        if (!d.empty() && (d == s || ends_with(d, std::string(".") + std::string(s)))) return true;
      if (e(b).kind == ExprKind::Name)
        for (Id k = 0; k < m.classes.size(); ++k)
          if (k != cls && m.classes[k].name == e(b).text) next = k;
    }
    cls = next;
  }
  return false;
}

const std::unordered_set<std::string>& Facts::accumulating_methods() const {
  if (!accumulating_methods_) {
    accumulating_methods_.emplace();
    find_accumulating_methods(*this, *accumulating_methods_);
  }
  return *accumulating_methods_;
}

bool Facts::parameterless_class(Id cls) const {
  // Derives from nn.Module itself (not from a class that may hold parameters)...
  const Class& k = m.classes[cls];
  if (k.bases.size() != 1 || !in(qual(k.bases[0]), {"torch.nn.Module", "torch.nn.modules.module.Module"})) return false;
  // ... and nothing of it assigns, registers or builds anything but plain tensors and values
  // (`self.w = torch.zeros(v)`, `self.b = 0.0`): no layer, Parameter or submodule.
  for (Id fn : k.methods) {
    for (int ci : calls_in(fn))
      if (in(callee_attr(calls[ci].call), {"register_parameter", "add_module", "register_module"})) return false;
    for (Id sid : stmts_in(fn)) {
      const Stmt& st = m.s(sid);
      bool self_target = false;
      for (Id t : st.targets) self_target = self_target || starts_with(dotted(t), "self.");
      if ((st.kind != StmtKind::Assign && st.kind != StmtKind::AnnAssign) || !self_target) continue;
      // (A value handed in and kept as it is, `self.encoder = encoder`, may be a module.)
      bool plain = !(st.value != kNone && e(st.value).kind == ExprKind::Name && is_param(fn, e(st.value).text));
      for_each_expr(m, st.value, [&](Id x) {
        if (e(x).kind == ExprKind::Call) {
          const std::string& q = callee_qual(x);
          if (!starts_with(q, "torch.") || starts_with(q, "torch.nn.")) plain = false;
        }
        return plain;
      });
      if (!plain) return false;
    }
  }
  return true;
}

bool Facts::builds_layers(Id cls) const {
  // A base other than nn.Module itself (a class of the file, an imported model class) may.
  const Class& k = m.classes[cls];
  for (Id b : k.bases)
    if (!in(qual(b), {"torch.nn.Module", "torch.nn.modules.module.Module"})) return true;
  // What its methods build: torch.nn layers, parameters, modules of the file, what the facts
  // know makes a model (timm, torchvision, `from_pretrained`, a same-file builder returning a
  // module; not by a name such as `build_model` alone), or a class imported from anywhere
  // but another framework (`Block` of the project's blocks module).
  const bool saved = no_name_evidence_;
  no_name_evidence_ = true;
  bool builds = false;
  for (Id fn : k.methods) {
    for (int ci : calls_in(fn)) {
      const Id call = calls[ci].call;
      const std::string& q = callee_qual(call);
      const std::string_view last = last_component(q);
      if (in(callee_attr(call), {"register_parameter", "add_module", "register_module", "register_buffer"}) ||
          (starts_with(q, "torch.nn.") && !ends_with(q, "Loss") && !last.empty() &&
           std::isupper(static_cast<unsigned char>(last[0]))) ||
          (!q.empty() && !starts_with(q, "torch.") && !in_other_framework(q) && !last.empty() &&
           std::isupper(static_cast<unsigned char>(last[0]))) ||
          is_model_producer(fn, call, 0)) {
        builds = true;
        break;
      }
      if (const Id c = constructed_class(call); c != kNone && c != cls && is_module_class(c)) {
        builds = true;
        break;
      }
    }
    if (builds) break;
  }
  no_name_evidence_ = saved;
  return builds;
}

bool Facts::is_module_class(Id cls) const {
  if (cls == kNone) return false;
  if (module_class_memo_.size() != m.classes.size()) module_class_memo_.assign(m.classes.size(), -1);
  signed char& memo = module_class_memo_[cls];
  if (memo < 0) memo = compute_is_module_class(cls);
  return memo == 1;
}

bool Facts::compute_is_module_class(Id cls) const {
  // A class that defines forward() is a module whatever its (imported) bases are called.
  for (Id f : m.classes[cls].methods)
    if (m.funcs[f].name == "forward"sv) return true;
  for (int hops = 0; cls != kNone && hops < 16; ++hops) {
    Id next = kNone;
    for (Id b : m.classes[cls].bases) {
      std::string q = qual(b);
      if (q == "torch.nn.Module"sv || q == "torch.nn.modules.module.Module"sv ||
          ends_with(q, "LightningModule") || ends_with(q, "PreTrainedModel") ||
          (starts_with(q, "torch.nn.") && !ends_with(q, "Loss")))
        return true;
      const std::string& d = dotted(b);
      if (q.empty() && (d == "nn.Module"sv || d == "Module"sv || ends_with(d, "LightningModule"))) return true;
      if (e(b).kind == ExprKind::Name)
        for (Id k = 0; k < m.classes.size(); ++k)
          if (k != cls && m.classes[k].name == e(b).text) next = k;
    }
    cls = next;
  }
  return false;
}

bool Facts::name_looks_like_model(std::string_view d) const {
  std::string_view last = last_component(d);
  // Only the words below make a model name; most names hold none of them, and the answer is
  // then "no" whatever the exclusions say (they only turn a "yes" into a "no").
  if (cfg.model_names.empty()) {
    bool candidate = false;
    for (std::string_view w : {"model", "net", "encoder", "decoder", "generator", "backbone", "discriminator",
                               "classifier", "module", "teacher", "student"})
      if (last.find(w) != std::string_view::npos) {
        candidate = true;
        break;
      }
    if (!candidate) return false;
  }
  // `build_model`, `get_model`, `load_model`: functions that make models, not models.
  auto toks = name_tokens(last);
  if (!toks.empty() && in(toks[0], {"build", "create", "get", "make", "load", "init", "setup", "prepare",
                                     "compute", "run", "train", "evaluate", "save", "export", "wrap", "to",
                                     "is", "has", "num", "n", "extract", "unwrap", "convert", "freeze", "apply",
                                     "instantiate", "resolve", "count", "check", "update", "register"}))
    return false;
  // `model_cls`, `model_fn`, `model_name`, `model_config`: about a model, not one.
  if (!toks.empty() && in(toks.back(), {"cls", "class", "fn", "factory", "builder", "type", "name", "path", "id",
                                        "config", "cfg", "dir", "kwargs", "args", "names", "paths", "ids", "dtype",
                                        "device", "state", "params", "output", "outputs", "pred", "preds", "out"}))
    return false;
  for (const auto& t : toks)
    if (t == "tokenizer"sv || t == "processor"sv || t == "pipeline"sv || t == "pipe"sv) return false;
  for (const auto& extra : cfg.model_names)
    if (last == extra || d == extra) return true;
  if (in(last, {"model", "net", "network", "encoder", "decoder", "generator", "backbone",
                "discriminator", "classifier", "module", "teacher", "student"}))
    return last != "module"sv || starts_with(d, "self.") || d == "module"sv;
  if (ends_with(last, "_model") || ends_with(last, "_net") ||
      ends_with(last, "_encoder") || ends_with(last, "_decoder") || ends_with(last, "_backbone"))
    return true;
  return false;
}

// `AutoTokenizer.from_pretrained` and friends load things that are not torch modules
// (tokenizers, processors, configs, schedulers, pipelines that run under no_grad
// themselves, Flax/TF models).
bool Facts::not_a_torch_model(Id receiver) const {
  if (receiver == kNone) return false;
  std::string q = qual(receiver);
  // Another framework's class (`layers.Conv2D.from_config(cfg)` of tf.keras in a file that
  // uses both): not a torch module.
  if (in_other_framework(q)) return true;
  // A torch.nn layer's own from_pretrained (`nn.Embedding.from_pretrained(vectors)`): a lookup
  // table, frozen unless told otherwise, not a pretrained network.
  if (starts_with(q, "torch.nn.")) return true;
  // A library of ready inference callables, whose call runs its network under its own
  // no_grad: ControlNet's annotators (`MidasDetector.from_pretrained(path)`, then
  // `detector(image)`) return images, not graphs.
  for (std::string_view lib : {"controlnet_aux."})
    if (starts_with(q, lib)) return true;
  std::string d = q.empty() ? dotted(receiver) : q;
  std::string_view last = last_component(d);
  for (std::string_view bad : {"Tokenizer", "Processor", "FeatureExtractor", "Config", "Scheduler", "Pipeline",
                               "Extractor", "Encoding"})
    if (last.find(bad) != std::string_view::npos) return true;
  if (starts_with(last, "Flax") || starts_with(last, "TF")) return true;
  for (const auto& t : name_tokens(last))
    if (t == "tokenizer"sv || t == "processor"sv || t == "config"sv || t == "scheduler"sv || t == "pipe"sv || t == "pipeline"sv)
      return true;
  return false;
}

bool Facts::is_model_producer(Id func, Id v, int depth) const {
  if (v == kNone || depth > 6) return false;
  const Expr& x = e(v);
  // (A name is read where it is written: `self.model = model` binds the parameter of `__init__`.)
  if (x.kind == ExprKind::Name || x.kind == ExprKind::Attribute)
    return is_model_value_rec(function_at(x.range.begin), v, depth + 1);
  if (x.kind != ExprKind::Call) return false;
  const std::string& q = callee_qual(v);
  const std::string& attr = callee_attr(v);
  if (in_other_framework(q)) return false;  // `keras.Sequential(...)`, `tf.keras.Model(...)`
  if (!q.empty()) {
    if (starts_with(q, "torch.nn.")) {
      std::string_view last = last_component(q);
      if (!last.empty() && std::isupper(static_cast<unsigned char>(last[0])) && !ends_with(last, "Loss") &&
          !in(last, {"Parameter", "ParameterList", "ParameterDict", "ModuleList", "ModuleDict"}))
        return true;
    }
    if (torchvision_model_builder(q) || q == "timm.create_model"sv || q == "torch.jit.load"sv ||
        q == "torch.jit.script"sv || q == "torch.jit.trace"sv || q == "torch.load"sv || q == "torch.hub.load"sv ||
        q == "torch.compile"sv)
      return true;
    // A module class another file of the run defines (`from models import Net`), unless it is
    // a loss or a metric by its name.
    if (project && project->module_classes.count(q)) return !loss_or_metric_class(last_component(q));
  }
  if (attr == "from_pretrained"sv || attr == "from_config"sv || attr == "from_single_file"sv)
    return !not_a_torch_model(callee_receiver(v));
  if (in(attr, {"to", "cuda", "eval", "half", "float", "double", "train", "cpu", "bfloat16", "requires_grad_"})) {
    Id r = callee_receiver(v);
    return r != kNone && is_model_producer(func, r, depth + 1);
  }
  // What a same-file function returns (`model = build(cfg)` with `return Net(cfg)`).
  if (Id target = same_file_target(v, func); target != kNone)
    for (Id r : returned_values(target))
      if (is_model_producer(target, r, depth + 1)) return true;
  // A class of this file that derives from nn.Module.
  const Expr& callee = e(x.kids[0]);
  if (callee.kind == ExprKind::Name && q.empty())
    if (Id k = class_at(callee.text, callee.range.begin); k != kNone)
      return is_module_class(k) && !loss_or_metric_class(callee.text);
  // Builders by name: build_model(...), create_model(...), get_model(...)
  std::string_view cname = callee.kind == ExprKind::Name ? std::string_view(callee.text) : std::string_view(attr);
  if (!no_name_evidence_ &&
      in(cname, {"build_model", "create_model", "get_model", "load_model", "make_model", "init_model"}))
    return true;
  return false;
}

bool Facts::known_not_a_model(Id func, Id v, int depth) const {
  if (v == kNone || depth > 3) return false;
  const Expr& ve = e(v);
  // Past a name (depth 2 and more: a name's bindings, what callers hand in for a parameter)
  // only a library object called like a module that is none counts: a pipeline or tokenizer
  // `from_pretrained` loads, a Hugging Face `pipeline(...)`. Not a call of another library
  // (a project's `build_model(cfg)`, `copy.deepcopy(net)`, a segmentation library's model),
  // nor a lambda a smoke test hands in while other modules hand in models.
  const bool followed = depth >= 2;
  if (!followed && (ve.kind == ExprKind::Literal || ve.kind == ExprKind::Sequence ||
                    ve.kind == ExprKind::Comprehension || ve.kind == ExprKind::Lambda))
    return true;
  if (ve.kind == ExprKind::Call) {
    const Id u = unplaced(v);  // `Pipeline.from_pretrained(path).to("cuda")`
    const std::string& a = callee_attr(u);
    if ((a == "from_pretrained"sv || a == "from_config"sv) && not_a_torch_model(callee_receiver(u))) return true;
    const std::string& q = callee_qual(u);
    if (starts_with(q, "transformers.") && last_component(q) == "pipeline"sv) return true;
    if (followed) return false;
    const std::string& vq = callee_qual(v);
    if (!vq.empty() && !starts_with(vq, "torch") && !starts_with(vq, "transformers") && !starts_with(vq, "timm"))
      return true;
    if (starts_with(vq, "torch.nn.") && ends_with(vq, "Loss")) return true;
    return starts_with(vq, "torch.optim") || starts_with(vq, "torch.utils.data");
  }
  if (depth == 0 || (ve.kind != ExprKind::Name && ve.kind != ExprKind::Attribute)) return false;
  const std::string& d = dotted(v);
  if (d.empty()) return false;
  const Id where = function_at(ve.range.begin);  // (an attribute's binding may sit in another method)
  const std::vector<Id> vals = bindings_at(where, d, v);
  if (!vals.empty())
    return std::all_of(vals.begin(), vals.end(), [&](Id b) { return known_not_a_model(where, b, depth + 1); });
  if (ve.kind != ExprKind::Name) return false;
  // A parameter: what every same-file caller hands in, asked once per function and name.
  auto [memo, fresh] = param_not_a_model_.try_emplace({where, d}, false);
  if (fresh) {
    const auto args = argument_values(where, d);
    memo->second = !args.empty() && std::all_of(args.begin(), args.end(), [&](const std::pair<Id, Id>& a) {
      return known_not_a_model(a.first, a.second, 2);
    });
  }
  return memo->second;
}

bool Facts::is_model_value_rec(Id func, Id x, int depth) const {
  if (x == kNone || depth > 6) return false;
  const Expr& ex = e(x);
  if (ex.kind == ExprKind::Call) return is_model_producer(func, x, depth + 1);
  if (ex.kind == ExprKind::Subscript) {
    // self.models[i], models[name]
    const std::string& d = dotted(ex.kids[0]);
    return !no_name_evidence_ && !d.empty() && (ends_with(d, "models") || ends_with(d, "nets"));
  }
  const std::string& d = dotted(x);
  if (d.empty()) return false;
  if (!ex.qname.empty()) return false;  // an imported function or class, not a model instance
  if (ex.kind == ExprKind::Name && is_function_name(func, ex.text)) return false;
  bool tokenizer_named = false;
  {
    // A criterion is a module too (`criterion.eval()` in DETR-style code), but calling it
    // computes a loss, not a forward whose activations matter.
    auto toks = name_tokens(last_component(d));
    if (!toks.empty() && (in(toks.back(), {"criterion", "criterions", "loss", "losses"}) ||
                          std::find(toks.begin(), toks.end(), "criterion") != toks.end()))
      return false;
    // `loss_fn`, `loss_func`, `loss_module`: a loss by its name too.
    if (toks.size() >= 2 && in(toks.back(), {"fn", "func", "function", "module", "obj"}) &&
        in(toks[toks.size() - 2], {"loss", "losses"}))
      return false;
    // A tokenizer or processor by its own name (`tokenizer = CLASSES[name][0].from_pretrained(path)`)
    // returns encodings, not a graph, whatever `from_pretrained` built it; a module of that name
    // (a VQ-VAE `Tokenizer`, a graph network's `Processor`, put in eval mode) is still a model.
    for (const auto& t : toks)
      if (in(t, {"tokenizer", "tokenizers", "processor"})) tokenizer_named = true;
  }
  auto vals = bindings_at(func, d, x);
  // A Hugging Face `pipeline(...)` on some path: calling it runs the model under no_grad
  // and returns Python objects, so a call of this name is not (only) a forward.
  for (Id v : vals)
    if (e(v).kind == ExprKind::Call && starts_with(callee_qual(v), "transformers.") &&
        in(last_component(callee_qual(v)), {"pipeline"}))
      return false;
  // The same for Ultralytics' hub models (`torch.hub.load("ultralytics/yolov5", ...)`): an
  // AutoShape wrapper whose forward runs under inference mode and returns Detections.
  for (Id v : vals) {
    v = unplaced(v);
    if (e(v).kind != ExprKind::Call || callee_qual(v) != "torch.hub.load"sv) continue;
    const Id repo = arg(v, 0, "repo_or_dir");
    if (repo != kNone && e(repo).kind == ExprKind::Literal && e(repo).text.find("ultralytics/") != std::string::npos)
      return false;
  }
  // A parameter-free layer (`act = nn.Sigmoid()`, `nn.Softmax(dim=1)`, `nn.Dropout(p)`), or
  // a module class of the file that owns no parameters (a count-based classifier keeping
  // `torch.zeros` tables), records a graph only through its input, which the forward that
  // made it has judged.
  if (!vals.empty() && std::all_of(vals.begin(), vals.end(), [&](Id v) {
        v = unplaced(v);
        if (e(v).kind != ExprKind::Call) return false;
        const std::string& q = callee_qual(v);
        if (const Id k = constructed_class(v); k != kNone) return parameterless_class(k);
        return starts_with(q, "torch.nn.") && parameter_free_layer(last_component(q));
      }))
    return false;
  // Switched to eval mode, or given weights with `load_state_dict` (an optimizer's or a
  // scheduler's is never called): a module, whatever class built it.
  if (eval_called_before(func, d, UINT32_MAX) || loads_state(func, d) || loads_state(kNone, d)) return true;
  bool known_other = false, visible_other = false;
  std::vector<Id> named;  // bindings that are names (`self.model = model`)
  for (Id v : vals) {
    if (is_model_producer(func, v, depth + 1)) {
      if (tokenizer_named && callee_attr(unplaced(v)) == "from_pretrained"sv) continue;
      return true;
    }
    // A class of this file that is not a module (`self.metrics = MetricTracker()`, whose own
    // train()/eval() switch a log prefix).
    if (e(v).kind == ExprKind::Call)
      if (const Id k = constructed_class(v); k != kNone && !is_module_class(k)) visible_other = true;
    if (known_not_a_model(func, v, 0)) known_other = true;
    else if (e(v).kind == ExprKind::Name || e(v).kind == ExprKind::Attribute) named.push_back(v);
  }
  if (visible_other || tokenizer_named) return false;
  // An attribute of the object that another method of its class switches to eval mode (a
  // predictor's constructor: `self.net = Net(); self.net.eval()`, whatever imported class Net
  // is; not a class of this file that is not a module).
  if (func != kNone && starts_with(d, "self.") && another_method_evals(func, d)) return true;
  // (Names among the bindings last, they are followed: `self.model = model` in `__init__`,
  // every construction of the class handing in a pipeline.)
  if (known_other || std::any_of(named.begin(), named.end(), [&](Id v) { return known_not_a_model(func, v, 1); }))
    return false;
  if (d == "self"sv && func != kNone && is_module_class(class_of(func))) return true;
  if (no_name_evidence_ || !name_looks_like_model(d)) return false;
  // A parameter never rebound here, for which every caller of the file hands in something
  // known to be no module (`evaluate(pipe, loader)` with a diffusers pipeline): the name of
  // the parameter says nothing more.
  return !(vals.empty() && ex.kind == ExprKind::Name && known_not_a_model(func, x, 1));
}

bool Facts::loss_or_metric_class(std::string_view cls) {
  // `FocalLoss`, `DiceScore`, `IoUMetric`, `LabelSmoothingCriterion`: a module whose call
  // computes a loss or a score from outputs the forward that made them has judged.
  for (const auto& t : name_tokens(cls))
    if (in(t, {"loss", "losses", "criterion", "metric", "metrics", "score"})) return true;
  return false;
}

bool Facts::parameter_free_layer(std::string_view cls) {
  static const std::set<std::string_view> kLayers = {
      "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Hardtanh",
      "Hardsigmoid", "Hardswish", "Softplus", "Softsign", "Softmax", "Softmax2d", "LogSoftmax", "Softmin",
      "LogSigmoid", "Tanhshrink", "Softshrink", "Hardshrink", "Threshold", "GLU", "Identity", "Flatten",
      "Unflatten", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "MaxPool1d", "MaxPool2d",
      "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
      "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "Upsample",
      "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "ZeroPad2d",
      "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad2d",
      "CosineSimilarity", "PairwiseDistance", "ChannelShuffle"};
  return kLayers.count(cls) != 0;
}

bool Facts::is_function_name(Id func, const std::string& name) const {
  return module_funcs_.count(name) != 0 || nested_names_.count(name) != 0;
}

bool Facts::is_model_value(Id func, Id x) const { return is_model_value_rec(func, x, 0); }

bool Facts::model_by_name(Id func, Id x) const {
  if (!is_model_value(func, x)) return false;
  no_name_evidence_ = true;
  bool evidence = is_model_value_rec(func, x, 0);
  no_name_evidence_ = false;
  return !evidence;
}

bool Facts::is_model_call(const CallSite& c) const {
  // Every rule asks about the forwards it meets: answered once per call expression.
  if (c.call == kNone || c.call >= m.exprs.size()) return false;
  if (model_call_memo_.empty()) model_call_memo_.assign(m.exprs.size(), -1);
  signed char& memo = model_call_memo_[c.call];
  if (memo < 0) memo = compute_is_model_call(c) ? 1 : 0;
  return memo == 1;
}

bool Facts::another_frameworks_call(const CallSite& c) const {
  for (Id g = c.func; g != kNone; g = m.funcs[g].parent)
    for (Id d : m.funcs[g].decorators) {
      const Id callee = e(d).kind == ExprKind::Call ? e(d).kids[0] : d;
      if (in_other_framework(qual(callee))) return true;  // `@tf.function`, `@jax.jit`
    }
  const Expr& call = e(c.call);
  if (std::find(call.kw.begin(), call.kw.end(), "training") == call.kw.end()) return false;
  const Id callee = call.kids[0];
  if (e(callee).kind != ExprKind::Name && e(callee).kind != ExprKind::Attribute) return false;
  const Id k = instance_class(c.func, callee);
  return k == kNone || !is_module_class(k);
}

bool Facts::compute_is_model_call(const CallSite& c) const {
  const Expr& call = e(c.call);
  Id callee = call.kids[0];
  const Expr& ce = e(callee);
  // A library call that runs the model it is handed (`sliding_window_inference(x, roi, 4, model)`).
  if (Id model = runner_model(c.call); model != kNone) return is_model_value(c.func, model);
  // Another framework's model in a file that imports it beside torch (a book's notebook with
  // TensorFlow and PyTorch chapters): a call in a `@tf.function`, or one made the Keras way
  // (`model(x, training=False)`) on a receiver not known to be a torch module.
  if (m.lang == Lang::Python) {
    if (other_framework_ < 0) other_framework_ = imports_other_framework(m) ? 1 : 0;
    if (other_framework_ == 1 && another_frameworks_call(c)) return false;
  }
  if (ce.kind == ExprKind::Attribute && ce.text == "forward"sv && !ce.kids.empty()) {
    const Expr& r = e(ce.kids[0]);
    if (r.kind == ExprKind::Call && callee_qual(ce.kids[0]).empty() && e(r.kids[0]).kind == ExprKind::Name &&
        e(r.kids[0]).text == "super"sv)
      return false;
    return true;
  }
  if (ce.kind == ExprKind::Name || ce.kind == ExprKind::Attribute || ce.kind == ExprKind::Subscript) {
    if (ce.kind == ExprKind::Name && ce.text == "self"sv) return func_is_method_of_module(c.func);
    if (!is_model_value(c.func, callee)) return false;
    if (!model_by_name(c.func, callee)) return true;
    // Named like a model, but called as a diffusers pipeline is (`model(prompt,
    // num_inference_steps=50, guidance_scale=7.5).images[0]`): a pipeline's call runs its
    // models under no_grad itself, whatever handed it in from another module.
    for (const std::string& k : call.kw)
      if (in(k, {"num_inference_steps", "guidance_scale", "negative_prompt", "num_images_per_prompt"})) return false;
    // Named like a model, called with nothing, and bound by a loop over a list of classes or
    // builders (`for model in [resnet18, resnet34]: net = model().cuda()`): a construction.
    if (call.kids.size() == 1 && ce.kind == ExprKind::Name && loops_over_builders(c, ce.text)) return false;
    if (builds_modules(callee)) return false;
    // A method of another object, named like a model but handed one (`pruner.prune_model(model)`,
    // `quantizer.quantize_model(net)`): an operation on that model, not a forward, which takes
    // tensors. (A model's own attribute, `self.student_model(x, ...)`, stays a forward.)
    if (ce.kind == ExprKind::Attribute && !ce.kids.empty()) {
      const Id recv = ce.kids[0];
      const std::string& r = dotted(recv);
      if (!r.empty() && r != "self"sv && r != "cls"sv && !is_model_value(c.func, recv))
        for (size_t k = 1; k < call.kids.size(); ++k)
          if (e(call.kids[k]).kind == ExprKind::Name && is_model_value(c.func, call.kids[k]))
            return false;
    }
    return true;
  }
  return false;
}

// Is `name` the target of a loop around call site `c` over a list or tuple display of names
// (`models = [resnet18, densenet121]`, `for i, model in enumerate(models):`): classes or
// builders, not values?
bool Facts::loops_over_builders(const CallSite& c, const std::string& name) const {
  auto builders = [&](Id display) {
    const Expr& d = e(display);
    if (d.kind != ExprKind::Sequence || d.kids.empty()) return false;
    for (Id k : d.kids)
      if (e(k).kind != ExprKind::Name && e(k).kind != ExprKind::Attribute) return false;
    return true;
  };
  for (int l = c.loop; l >= 0; l = loops[l].parent) {
    const Loop& L = loops[l];
    if (L.stmt == kNone || L.iter == kNone) continue;
    bool target = false;
    for (Id t : m.s(L.stmt).targets)
      for_each_expr(m, t, [&](Id y) {
        target = target || (e(y).kind == ExprKind::Name && e(y).text == name);
        return !target && e(y).kind == ExprKind::Sequence;
      });
    if (!target) continue;
    Id it = L.iter;
    if (e(it).kind == ExprKind::Call && e(e(it).kids[0]).kind == ExprKind::Name && e(e(it).kids[0]).text == "enumerate"sv &&
        e(it).kids.size() >= 2)
      it = e(it).kids[1];
    if (builders(it)) return true;
    const std::string& d = dotted(it);
    if (d.empty()) return false;
    const std::vector<Id> vals = bindings(L.func, d);
    if (vals.empty()) return false;
    for (Id v : vals)
      if (!builders(v)) return false;
    return true;
  }
  return false;
}

// A name whose calls' results the file uses as modules: a call of it annotated `nn.Module`
// (`net: nn.Module = self.network(width=1.0)`), or a result whose `state_dict()` /
// `parameters()` is read. It holds a model class handed in (a builder), not a model.
bool Facts::builds_modules(Id callee) const {
  const std::string& name = dotted(callee);
  if (name.empty()) return false;
  auto memo = builds_modules_.find(name);
  if (memo != builds_modules_.end()) return memo->second;
  bool& out = builds_modules_[name];
  out = false;
  for (const StmtSite& ss : stmt_sites) {
    const Stmt& s = m.s(ss.stmt);
    if ((s.kind != StmtKind::Assign && s.kind != StmtKind::AnnAssign) || s.value == kNone || s.targets.size() != 1 ||
        e(s.value).kind != ExprKind::Call || dotted(e(s.value).kids[0]) != name)
      continue;
    if (s.kind == StmtKind::AnnAssign && last_component(s.text).find("Module") != std::string_view::npos)
      return out = true;
    const std::string& d = dotted(s.targets[0]);
    if (d.empty()) continue;
    for (int ci : calls_in(ss.func)) {
      const Id x = calls[ci].call;
      if (dotted(callee_receiver(x)) == d &&
          in(callee_attr(x), {"parameters"sv, "named_parameters"sv, "state_dict"sv, "load_state_dict"sv, "modules"sv,
                              "named_modules"sv, "children"sv}))
        return out = true;
    }
  }
  return false;
}

std::vector<std::string> Facts::star_quals(Id call, Id func) const {
  std::vector<std::string> out;
  if (m.star_imports.empty() || call == kNone || e(call).kind != ExprKind::Call) return out;
  const Expr& callee = e(e(call).kids[0]);
  if (callee.kind != ExprKind::Name || !callee.qname.empty() || !bindings(func, callee.text).empty() ||
      is_function_name(func, callee.text) || class_at(callee.text, callee.range.begin) != kNone)
    return out;
  for (const std::string& mod : m.star_imports)
    if (!mod.empty() && mod[0] != '.') out.push_back(mod + "." + callee.text);
  return out;
}

bool Facts::plain_record_class(Id cls, int depth) const {
  if (cls == kNone || depth > 3 || is_module_class(cls)) return false;
  const Class& k = m.classes[cls];
  bool record = false;
  for (Id b : k.bases) record = record || last_component(qual(b).empty() ? dotted(b) : qual(b)) == "NamedTuple"sv;
  const Id def = k.stmt;
  if (def == kNone) return false;
  for (Id d : k.decorators) {
    const Id callee = e(d).kind == ExprKind::Call ? e(d).kids[0] : d;
    record = record || last_component(qual(callee).empty() ? dotted(callee) : qual(callee)) == "dataclass"sv;
  }
  if (!record) return false;
  bool fields = false;
  for (Id s : m.s(def).body) {
    const Stmt& st = m.s(s);
    if (st.kind != StmtKind::AnnAssign) continue;
    fields = true;
    // Every word of the annotation a plain type, a typing wrapper, or another such record.
    bool plain = true;
    std::string word;
    // (`next`: the character after the word. A container of unnamed elements, a bare `list` or
    // `Dict`, may hold tensors.)
    auto judge = [&](char next) {
      if (word.empty()) return;
      static const std::set<std::string, std::less<>> kPlain = {
          "str", "int", "float", "bool", "None", "bytes", "complex", "tuple", "list", "dict", "set", "frozenset",
          "Tuple", "List", "Dict", "Set", "FrozenSet", "Optional", "Union", "Literal", "Sequence", "Mapping",
          "typing", "ClassVar"};
      static const std::set<std::string, std::less<>> kContainers = {
          "tuple", "list", "dict", "set", "frozenset", "Tuple", "List", "Dict", "Set", "FrozenSet", "Sequence",
          "Mapping", "Optional", "Union", "ClassVar"};
      if (kContainers.count(word) && next != '[') plain = false;
      else if (!kPlain.count(word)) {
        const Id other = class_at(word, st.range.begin);
        plain = plain && other != kNone && other != cls && plain_record_class(other, depth + 1);
      }
      word.clear();
    };
    for (char c : st.text) {
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') word.push_back(c);
      else if (c == '.') word.clear();  // `typing.Optional`: the last component decides
      else if (c == '"' || c == '\'') { plain = plain && word.empty(); }
      else if (c != ' ') judge(c);
    }
    judge('\0');
    if (!plain) return false;
  }
  return fields;
}

bool Facts::builds_plain_record(Id call, Id func) const {
  if (call == kNone || e(call).kind != ExprKind::Call) return false;
  if (const Id k = constructed_class(call); k != kNone) return plain_record_class(k);
  const Id g = same_file_target(call, func);
  if (g == kNone || g == func) return false;
  const std::vector<Id>& rs = returned_values(g);
  return !rs.empty() && std::all_of(rs.begin(), rs.end(), [&](Id r) {
    const Id k = constructed_class(r);
    return k != kNone && plain_record_class(k);
  });
}

bool Facts::handed_on(Id func) const {
  if (m.lang != Lang::Python || func == kNone) return false;
  if (!names_handed_on_) {
    names_handed_on_.emplace();
    std::vector<char> callee(m.exprs.size(), 0);
    for (const Expr& x : m.exprs)
      if (x.kind == ExprKind::Call && !x.kids.empty() && x.kids[0] < callee.size()) callee[x.kids[0]] = 1;
    for (Id i = 0; i < m.exprs.size(); ++i)
      if (m.exprs[i].kind == ExprKind::Name && !callee[i]) (*names_handed_on_)[m.exprs[i].text].push_back(m.exprs[i].range.begin);
  }
  auto it = names_handed_on_->find(m.funcs[func].name);
  if (it == names_handed_on_->end()) return false;
  for (uint32_t at : it->second) {
    // The definition of that name last before the read, else (a read above them all) the first.
    Id last_before = kNone, first = kNone;
    for (Id g = 0; g < m.funcs.size(); ++g) {
      const Function& d = m.funcs[g];
      if (d.name != m.funcs[func].name || d.cls != kNone || d.parent != kNone) continue;
      if (first == kNone || d.range.begin < m.funcs[first].range.begin) first = g;
      if (d.range.begin < at && (last_before == kNone || d.range.begin > m.funcs[last_before].range.begin))
        last_before = g;
    }
    if ((last_before != kNone ? last_before : first) == func) return true;
  }
  return false;
}

bool Facts::called_by_code(Id func) const {
  if (func == kNone || m.funcs[func].cls != kNone || m.funcs[func].parent != kNone) return false;
  const std::string& name = m.funcs[func].name;
  if (project && (project->called_tests.count(name) || project->external_calls.count(name))) return true;
  // (Handed on as a value, `pool.map(test_one_user, batches)`: the program calls it; pytest
  // collects tests by name and no code hands them on.)
  if (handed_on(func)) return true;
  if (!called_names_) {
    called_names_.emplace();
    for (const Expr& x : m.exprs)
      if (x.kind == ExprKind::Call && !x.kids.empty() && e(x.kids[0]).kind == ExprKind::Name)
        called_names_->insert(e(x.kids[0]).text);
  }
  return called_names_->count(name) != 0;
}

bool Facts::in_test_code(Id func, bool by_name) const {
  if (is_test_file) return true;
  for (Id fn = func; fn != kNone; fn = m.funcs[fn].parent) {
    const Function& d = m.funcs[fn];
    // pytest's `test_*`, unittest's and gtest-style `testFoo` / `TestFoo`, outside a test file:
    // a self-check that sets up what it runs (`def test(): net = ResNet18(); net(x)`), handed
    // nothing, or only literal defaults. A function so named that is handed what it runs
    // (`def test(model, device, test_loader)`) is the program's evaluation phase.
    if (by_name && (d.name.rfind("test", 0) == 0 || d.name.rfind("Test", 0) == 0) &&
        !(d.name == "test"sv && m.lang == Lang::Python && !sets_up_its_inputs(fn)) &&
        !(m.lang == Lang::Python && d.name.rfind("test_", 0) == 0 && called_by_code(fn)))
      return true;
    if (d.cls != kNone && test_class(d.cls)) return true;
  }
  return false;
}

bool Facts::sets_up_its_inputs(Id func) const {
  // A pytest function handed fixtures (`def test_export(tmp_path)`) asserts what it checks.
  for (Id sid : func_stmts_[func])
    if (m.s(sid).kind == StmtKind::Other && m.s(sid).text == "assert"sv) return true;
  const Function& d = m.funcs[func];
  for (size_t k = 0; k < d.params.size(); ++k) {
    if (k == 0 && d.cls != kNone && (d.params[k] == "self" || d.params[k] == "cls")) continue;
    if (k >= d.param_defaults.size() || d.param_defaults[k].empty()) return false;
  }
  return true;
}

bool Facts::test_class(Id cls) const {
  // `Test*` as pytest collects it (no base), a TestCase, or a class holding `test*` methods;
  // not a task or job named so (`class TestCheckpointsTask(Task)` that evaluates checkpoints).
  const Class& k = m.classes[cls];
  if (!starts_with(k.name, "Test")) return false;
  if (k.bases.empty()) return true;
  for (Id b : k.bases)
    if (dotted(b).find("Test") != std::string::npos) return true;
  for (Id f : k.methods)
    if (starts_with(m.funcs[f].name, "test")) return true;
  return false;
}

bool Facts::keeps_history_method(std::string_view attr) {
  return in(attr, {"cpu", "cuda", "to", "float", "double", "half", "squeeze", "unsqueeze", "permute", "transpose",
                   "view", "reshape", "contiguous", "flatten", "clone", "t"});
}

Id Facts::history_base(Id x) const {
  for (int depth = 0; x != kNone && depth < 16; ++depth) {
    const Expr& v = e(x);
    if (v.kind == ExprKind::Subscript || (v.kind == ExprKind::Attribute && v.text == "T"sv)) {
      x = v.kids.empty() ? kNone : v.kids[0];
    } else if (v.kind == ExprKind::Call && callee_receiver(x) != kNone && keeps_history_method(callee_attr(x))) {
      x = callee_receiver(x);
    } else {
      break;
    }
  }
  return x;
}

bool Facts::read_as_numpy(Id func, Id value, const std::string& name, uint32_t after) const {
  if (!numpy_calls_) {
    numpy_calls_.emplace();
    for (int ci = 0; ci < static_cast<int>(calls.size()); ++ci)
      if (callee_attr(calls[ci].call) == "numpy"sv) numpy_calls_->push_back(ci);
  }
  for (int ci : *numpy_calls_) {
    const CallSite& c = calls[ci];
    if (c.func != func || e(c.call).range.begin < after) continue;
    Id r = callee_receiver(c.call);
    // Down the chain to the value: steps that keep history (and a float dtype) only.
    for (int depth = 0; r != kNone && depth < 16; ++depth) {
      if (r == value) return true;
      const Expr& x = e(r);
      if (x.kind == ExprKind::Subscript || (x.kind == ExprKind::Attribute && x.text == "T"sv)) {
        r = x.kids.empty() ? kNone : x.kids[0];
      } else if (x.kind == ExprKind::Call && !x.kids.empty() && e(x.kids[0]).kind == ExprKind::Attribute) {
        const std::string& a = callee_attr(r);
        const std::string& q = e(x.kids[0]).qname;
        if (q == "torch.cat"sv || q == "torch.stack"sv || q == "torch.concat"sv) {
          r = arg(r, 0, "tensors");
          continue;
        }
        if (!keeps_history_method(a)) break;
        bool cast = false;
        if (a == "to"sv)
          for (size_t k = 1; k < x.kids.size() && !cast; ++k)
            for_each_expr(m, x.kids[k], [&](Id y) {
              for (const char* w : {"int", "long", "bool", "uint", "dtype", "short"})
                cast = cast || e(y).text.find(w) != std::string::npos;
              return !cast;
            });
        if (cast) break;
        r = callee_receiver(r);
      } else {
        if (!name.empty() && (x.kind == ExprKind::Name || x.kind == ExprKind::Attribute) && dotted(r) == name)
          return true;
        break;
      }
    }
  }
  return false;
}

bool Facts::output_read_as_numpy(const CallSite& c) const {
  if (read_as_numpy(c.func, c.call)) return true;
  if (c.stmt == kNone) return false;
  const Stmt& st = m.s(c.stmt);
  if (st.kind != StmtKind::Assign || st.value != c.call || st.targets.size() != 1) return false;
  const std::string& d = dotted(st.targets[0]);
  return !d.empty() && bindings(c.func, d).size() == 1 && read_as_numpy(c.func, kNone, d, st.range.end);
}

Id Facts::forward_of(Id func, Id receiver) const {
  if (receiver == kNone) return kNone;
  const Id cls = e(receiver).kind == ExprKind::Call ? constructed_class(receiver) : instance_class(func, receiver);
  return cls != kNone ? method_in(cls, "forward") : kNone;
}

bool Facts::named_like_a_loss(std::string_view name) {
  // The words of the name as name_tokens() splits them (at `_`, `.`, digits, at a capital after
  // a small letter, and before the last capital of a run that a small letter follows: `MSELoss`
  // is mse, loss; `LOSS` is loss), compared without allocating: this is asked
  // of every call's name.
  auto fold = [](char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c | 0x20 : c); };
  auto word = [&](size_t b, size_t e) {
    const size_t n = e - b;
    if (n != 3 && n != 4 && n != 6 && n != 9) return false;
    for (std::string_view w : {"loss", "criterion", "losses", "nll", "objective"}) {
      if (w.size() != n) continue;
      size_t k = 0;
      while (k < n && fold(name[b + k]) == w[k]) ++k;
      if (k == n) return true;
    }
    return false;
  };
  // First a pass that finds any of the words anywhere (most names hold none).
  auto at = [&](size_t i, std::string_view w) {
    if (i + w.size() > name.size()) return false;
    for (size_t k = 1; k < w.size(); ++k)
      if (fold(name[i + k]) != w[k]) return false;
    return true;
  };
  bool holds = false;
  for (size_t i = 0; i + 3 <= name.size() && !holds; ++i) {
    switch (fold(name[i])) {
      case 'l': holds = at(i, "loss"); break;
      case 'c': holds = at(i, "criterion"); break;
      case 'n': holds = at(i, "nll"); break;
      case 'o': holds = at(i, "objective"); break;
      default: break;
    }
  }
  if (!holds) return false;
  size_t start = 0;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '_' || c == '.' || (c >= '0' && c <= '9')) {
      if (word(start, i)) return true;
      start = i + 1;
    } else if (c >= 'A' && c <= 'Z' && i > start &&
               ((name[i - 1] >= 'a' && name[i - 1] <= 'z') ||
                (name[i - 1] >= 'A' && name[i - 1] <= 'Z' && i + 1 < name.size() && name[i + 1] >= 'a' &&
                 name[i + 1] <= 'z'))) {
      if (word(start, i)) return true;
      start = i;
    }
  }
  return word(start, name.size());
}

// Is a value of `fn` a Python number: a literal, `.item()`, `float(...)`, the math module's
// result, arithmetic and displays of numbers, or a local name every binding of which is one.
// One reader per function: its bindings are collected once and its answers memoised.
class Facts::NumberReader {
 public:
  NumberReader(const Facts& f, Id fn) : f_(f), fn_(fn) {
    // What each local name of `fn` is bound to, every binding counted: a plain assignment's
    // value, an augmented assignment's operand (`total += loss.item()`); a name bound any other
    // way (a loop target, a tuple unpacked from a call, `with ... as`) is no number.
    for (Id sid : f_.stmts_in(fn)) {
      const Stmt& st = f_.m.s(sid);
      if (!(st.kind == StmtKind::Assign || st.kind == StmtKind::AnnAssign || st.kind == StmtKind::AugAssign ||
            st.kind == StmtKind::For || st.kind == StmtKind::With || st.kind == StmtKind::Delete))
        continue;
      for (Id t : st.targets) {
        if (t == kNone) continue;
        const Expr& te = f_.e(t);
        const bool plain = (st.kind == StmtKind::Assign || st.kind == StmtKind::AnnAssign ||
                            st.kind == StmtKind::AugAssign) &&
                           te.kind == ExprKind::Name && st.value != kNone;
        if (plain) {
          values[te.text].push_back(st.value);
          continue;
        }
        for_each_expr(f_.m, t, [&](Id y) {
          if (f_.e(y).kind == ExprKind::Name) unknown.insert(f_.e(y).text);
          return f_.e(y).kind == ExprKind::Sequence || f_.e(y).kind == ExprKind::Starred;
        });
        // `outs[i] = v`: what the container holds.
        if (te.kind == ExprKind::Subscript && !te.kids.empty() && f_.e(te.kids[0]).kind == ExprKind::Name &&
            st.value != kNone && st.kind == StmtKind::Assign)
          values[f_.e(te.kids[0]).text].push_back(st.value);
      }
    }
    // A list filled after it is made (`outs = []`, then `outs.append(encoder(x))`): what goes
    // in counts as a binding of it (`extend`: the values' container). Other ways of filling a
    // container leave it unknown.
    for (int ci : f_.calls_in(fn)) {
      const Id call = f_.calls[ci].call;
      const Id recv = f_.callee_receiver(call);
      if (recv == kNone || f_.e(recv).kind != ExprKind::Name) continue;
      const std::string& a = f_.callee_attr(call);
      const std::string_view name = f_.e(recv).text;
      if (a == "append"sv || a == "extend"sv || a == "add"sv) {
        if (const Id v = f_.arg(call, 0); v != kNone) values[name].push_back(v);
        else unknown.insert(name);
      } else if (a == "insert"sv) {
        if (const Id v = f_.arg(call, 1); v != kNone) values[name].push_back(v);
        else unknown.insert(name);
      } else if (in(a, {"update", "setdefault", "__setitem__", "appendleft", "extendleft"})) {
        unknown.insert(name);
      }
    }
  }
  bool operator()(Id x) { return number(x); }

 private:
  const Facts& f_;
  const Id fn_;
  std::unordered_map<std::string_view, std::vector<Id>> values;
  std::unordered_set<std::string_view> unknown;
  // Memoised per expression (0 computing, 1 no, 2 yes): shared operands are read once, and a
  // name bound from itself (`total = total + x`) is read as the rest of its bindings.
  std::unordered_map<Id, char> memo;
  bool number(Id x) {
    if (x == kNone) return false;
    auto [it, fresh] = memo.try_emplace(x, 0);
    if (!fresh) return it->second != 1;
    bool r = false;
    const Expr& v = f_.e(x);
    switch (v.kind) {
      case ExprKind::Literal:
        r = true;
        break;
      case ExprKind::Call: {
        const Expr& callee = f_.e(v.kids[0]);
        // (`math.exp(nll)`: the math module computes on Python numbers and returns one; so do
        // Python's `random` and NumPy's draws, `np.random.beta(alpha, alpha)`, on the host.)
        const std::string& q = f_.callee_qual(x);
        r = (callee.kind == ExprKind::Name && f_.qual(v.kids[0]).empty() &&
             in(callee.text, {"float", "int", "round", "len"})) ||
            in(f_.callee_attr(x), {"item", "tolist"}) || starts_with(q, "math.") || starts_with(q, "random.") ||
            starts_with(q, "numpy.random.");
        // A fresh object of a class of the file that is no module, built with nothing
        // (`AverageMeter()`): it holds no tensor yet (a `*_loss_meter_setup()` returning a
        // meter and a dict of them returns no loss).
        if (!r && v.kids.size() == 1) {
          const Id k = f_.constructed_class(x);
          r = k != kNone && !f_.is_module_class(k);
        }
        break;
      }
      case ExprKind::BinOp:
        r = number(v.kids[0]) && number(v.kids[1]);
        break;
      case ExprKind::UnaryOp:
        r = !v.kids.empty() && number(v.kids[0]);
        break;
      case ExprKind::Sequence:
        r = true;
        for (Id k : v.kids) r = r && number(k);
        break;
      case ExprKind::Name: {
        auto b = values.find(v.text);
        r = !unknown.count(v.text) && b != values.end();
        if (r)
          for (Id y : b->second) r = r && number(y);
        break;
      }
      case ExprKind::Attribute: {
        // An attribute of the object (`self.alpha`) every binding of which in its class is a
        // literal number or a constructor parameter left at one by default (`alpha=0.99`): a
        // hyperparameter.
        const std::string& d = f_.dotted(x);
        if (!starts_with(d, "self.") || d.find('.', 5) != std::string::npos || f_.class_of(fn_) == kNone) break;
        const std::vector<Id> vals = f_.bindings(fn_, d);
        r = !vals.empty();
        for (Id y : vals) r = r && hyperparameter(y);
        break;
      }
      default:
        break;
    }
    memo[x] = r ? 2 : 1;
    return r;
  }
  bool hyperparameter(Id y) const {
    const Expr& ye = f_.e(y);
    if (ye.kind == ExprKind::Literal) return ye.lit == LitKind::Int || ye.lit == LitKind::Float;
    if (ye.kind != ExprKind::Name || !ye.qname.empty()) return false;
    const Id g = f_.function_at(ye.range.begin);
    if (g == kNone || !f_.own_bindings(g, ye.text).empty()) return false;
    const Function& fn = f_.m.funcs[g];
    for (size_t i = 0; i < fn.params.size() && i < fn.param_defaults.size(); ++i)
      if (fn.params[i] == ye.text) {
        const std::string& t = fn.param_defaults[i];
        return !t.empty() && t.find_first_not_of("0123456789._eE+-") == std::string::npos && t[0] >= '0' && t[0] <= '9';
      }
    return false;
  }
};

bool Facts::returns_number(Id fn) const {
  NumberReader number(*this, fn);
  bool any = false;
  for (Id sid : stmts_in(fn)) {
    const Stmt& st = m.s(sid);
    if (st.kind != StmtKind::Return) continue;
    if (st.value == kNone || !number(st.value)) return false;
    any = true;
  }
  return any;
}

std::string Facts::loss_call_name(Id call) const {
  const Expr& callee = e(e(call).kids[0]);
  std::string_view name;
  if (callee.kind == ExprKind::Attribute) {
    name = callee.text;
  } else if (callee.kind == ExprKind::Name) {
    const std::string& q = qual(e(call).kids[0]);
    // (A name a star import brings, `from utils import *`, that the file does not define: by
    // its own spelling, which the run's summaries know.)
    if (q.empty() && !m.star_imports.empty() && module_func_at(callee.text, callee.range.begin) == kNone &&
        class_at(callee.text, callee.range.begin) == kNone &&
        bindings(function_at(callee.range.begin), callee.text).empty())
      name = callee.text;
    else if (q.empty() || starts_with(q, "torch."))
      return "";
    else
      name = std::string_view(q).substr(q.rfind('.') + 1);
  }
  return named_like_a_loss(name) ? std::string(name) : std::string();
}

bool Facts::number_loss_call(Id call) const {
  const std::string name = loss_call_name(call);
  if (name.empty()) return false;
  // The run decides when it knows the name: every definition of it returns a number, or one
  // does not (a `compute_loss` of the model class in another module, whatever this file's
  // validator defines). Else this file's definitions, at least one.
  if (project) {
    if (project->number_losses.count(name)) return true;
    if (project->other_losses.count(name)) return false;
  }
  bool any = false;
  for (Id fn = 0; fn < m.funcs.size(); ++fn)
    if (m.funcs[fn].name == name && m.funcs[fn].parent == kNone) {
      if (!returns_number(fn)) return false;
      any = true;
    }
  return any;
}

std::vector<int> Facts::detached_elements(Id fw) const {
  // Per element: unseen (-1), every return so far hands it back detached (1), one does not (0).
  std::vector<int> state;
  std::optional<NumberReader> number;
  bool any = false;
  for (Id sid : stmts_in(fw)) {
    const Stmt& st = m.s(sid);
    if (st.kind != StmtKind::Return) continue;
    if (st.value == kNone || e(st.value).kind != ExprKind::Sequence) return {};
    const Expr& v = e(st.value);
    if (any && v.kids.size() != state.size()) return {};
    if (!any) state.assign(v.kids.size(), 1);
    any = true;
    for (size_t k = 0; k < v.kids.size(); ++k) {
      if (!state[k]) continue;
      const Id el = v.kids[k];
      const Expr& x = e(el);
      bool detached = x.kind == ExprKind::Literal ||
                      (x.kind == ExprKind::Call && (in(callee_qual(el), {"torch.tensor", "torch.scalar_tensor"}) ||
                                                    in(callee_attr(el), {"item", "tolist"})));
      if (!detached)
        for_each_expr(m, el, [&](Id y) {
          const Expr& ye = e(y);
          detached = detached || (ye.kind == ExprKind::Attribute && (ye.text == "data"sv || ye.text == "detach"sv ||
                                                                    ye.text == "detach_"sv));
          return !detached;
        });
      // A Python number: the mixing weight of a mixup forward (`lam = np.random.beta(a, a)`;
      // `lam = 1.0` on its other path), a count.
      if (!detached && x.kind == ExprKind::Name) {
        if (!number) number.emplace(*this, fw);
        detached = (*number)(el);
      }
      state[k] = detached;
    }
  }
  std::vector<int> out;
  for (size_t k = 0; k < state.size(); ++k)
    if (state[k] == 1) out.push_back(static_cast<int>(k));
  return out;
}

bool Facts::forward_returns_detached(Id func, Id call, size_t k) const {
  const Id receiver = forward_receiver(call);
  const Id fw = forward_of(func, receiver);
  auto has = [&](const std::vector<int>& ks) { return std::find(ks.begin(), ks.end(), static_cast<int>(k)) != ks.end(); };
  if (fw != kNone) return has(detached_elements(fw));
  // A module class of another module of the project: what its summary says of the element, for
  // the class every binding of the receiver builds (`model = MixNet().cuda()`).
  if (!project || project->detached_forward_elements.empty() || receiver == kNone) return false;
  auto built = [&](Id v) {
    v = unplaced(v);
    if (e(v).kind != ExprKind::Call) return false;
    auto it = project->detached_forward_elements.find(e(e(v).kids[0]).qname);
    return it != project->detached_forward_elements.end() && has(it->second);
  };
  if (e(receiver).kind == ExprKind::Call) return built(receiver);
  const std::string& d = dotted(receiver);
  if (d.empty()) return false;
  // (Past its rebindings to itself: `model = model.to(device)`, `nn.DataParallel(model)`.)
  std::vector<Id> values;
  for (Id v : bindings(func, d))
    if (!same_object(v, d)) values.push_back(v);
  return !values.empty() && std::all_of(values.begin(), values.end(), built);
}

bool Facts::forward_decorated_off(Id cls) const {
  // What calling an instance runs: `forward` of a module, `__call__` of a plain class (an
  // inference wrapper holding a network).
  const Id fw = is_module_class(cls) ? method_in(cls, "forward") : method_in(cls, "__call__");
  if (fw == kNone) return false;
  if (decorated_off_[fw]) return true;
  // Every forward it runs sits under `with torch.no_grad():` (`__call__` of an inference
  // wrapper); at least one.
  bool any = false;
  for (int ci : calls_in(fw)) {
    const CallSite& c = calls[ci];
    if (!is_model_call(c)) continue;
    if (!c.local_off) return false;
    any = true;
  }
  return any;
}

bool Facts::data_attribute(Id k, const std::string& attr) const {
  if (!starts_with(attr, "self.") || attr.find('.', 5) != std::string::npos) return false;
  for (Id g : m.classes[k].methods)
    for (int ci : calls_in(g)) {
      const Id call = calls[ci].call;
      const Id callee = e(call).kids[0];
      if (dotted(callee) == attr || dotted(callee_receiver(call)) == attr) return false;
      for (size_t i = 1; i < e(call).kids.size(); ++i)
        if (dotted(e(call).kids[i]) == attr) return false;
    }
  return true;
}

bool Facts::constructor_freezes(Id cls, std::string* param) const {
  const Id init = method_in(cls, "__init__");
  if (init == kNone || class_of(init) != cls || m.lang != Lang::Python) return false;
  if (param) param->clear();
  // (Freezes the constructor makes itself: none, and neither the whole nor a part is frozen.)
  const bool freezes_here = freezes_.count(init) > 0;
  if (freezes_here && frozen_at(init, "self", m.funcs[init].range.end)) return true;
  // Part by part: every attribute the constructor binds is frozen there (`for p in
  // self.features.parameters(): p.requires_grad = False`), a torch.nn layer without parameters
  // (`nn.AdaptiveAvgPool2d(1)`, `nn.ReLU()`, `nn.Flatten()`), or a literal setting; at least one
  // frozen. (An attribute bound to anything else, a head handed in, may train.)
  if (freezes_here) {
    bool any_frozen = false, all_off = true;
    std::set<std::string> seen;
    // Attributes that are data if nothing else in them is a part (an empty container, a
    // constructor parameter): asked last, only when the rest is frozen.
    std::vector<std::pair<Id, Id>> maybe_data;  // target, value
    for (Id sid : stmts_in(init)) {
      const Stmt& s = m.s(sid);
      if (s.kind != StmtKind::Assign && s.kind != StmtKind::AnnAssign) continue;
      for (Id t : s.targets) {
        const std::string& d = dotted(t);
        if (!starts_with(d, "self.") || d.find('.', 5) != std::string::npos || !seen.insert(d).second) continue;
        const Id v = s.value;
        if (v != kNone && e(v).kind == ExprKind::Literal) continue;
        // Data, not a part: an empty container (`self.memory_bank = []`) or a constructor
        // parameter kept only to be read (`self.k_nearest = k_nearest`).
        if (v != kNone && ((e(v).kind == ExprKind::Sequence && e(v).kids.empty()) ||
                           (e(v).kind == ExprKind::Name && is_param(init, e(v).text)))) {
          maybe_data.emplace_back(t, v);
          continue;
        }
        if (v != kNone && e(v).kind == ExprKind::Call) {
          static constexpr std::string_view kParameterFree[] = {
              "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
              "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d",
              "ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "ELU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax",
              "Flatten", "Unflatten", "Identity", "Dropout", "Dropout2d", "Upsample", "Hardswish", "Mish"};
          const std::string& q = callee_qual(v);
          const std::string_view last = last_component(q);
          if (starts_with(q, "torch.nn.") &&
              std::find(std::begin(kParameterFree), std::end(kParameterFree), last) != std::end(kParameterFree))
            continue;
        }
        if (frozen_at(init, d, m.funcs[init].range.end)) {
          any_frozen = true;
          continue;
        }
        all_off = false;
      }
      if (!all_off) break;
    }
    // (An empty container never filled with layers, `self.memory_bank = []`, not
    // `self.blocks = []` then `self.blocks.append(nn.Linear(...))`; a parameter that is a
    // setting by its declaration, a literal default other than None or a plain type,
    // `k_nearest: int = 3`, or only read.)
    auto data = [&](const std::string& d, Id v) {
      if (e(v).kind == ExprKind::Sequence) {
        for (Id g : m.classes[cls].methods)
          for (int ci : calls_in(g)) {
            const Id call = calls[ci].call;
            if (dotted(callee_receiver(call)) != d || !in(callee_attr(call), {"append", "extend", "insert"})) continue;
            for (size_t i = 1; i < e(call).kids.size(); ++i) {
              const Id a = e(call).kids[i];
              if (e(a).kind == ExprKind::Call && (starts_with(callee_qual(a), "torch.nn.") || constructed_class(a) != kNone))
                return false;
            }
          }
        return true;
      }
      const Function& ifn = m.funcs[init];
      for (size_t i = 0; i < ifn.params.size(); ++i) {
        if (ifn.params[i] != e(v).text) continue;
        const std::string& dflt = i < ifn.param_defaults.size() ? ifn.param_defaults[i] : std::string();
        const std::string& type = i < ifn.param_types.size() ? ifn.param_types[i] : std::string();
        if ((!dflt.empty() && dflt != "None" &&
             (std::isdigit(static_cast<unsigned char>(dflt[0])) || dflt[0] == '\'' || dflt[0] == '"' || dflt[0] == '-' ||
              dflt[0] == '.' || dflt == "True" || dflt == "False")) ||
            in(type, {"int", "float", "str", "bool"}))
          return true;
      }
      return data_attribute(cls, d);
    };
    // (A part handed in and frozen there, `self.backbone = backbone` then its parameters
    // switched off, is frozen as any other.)
    for (size_t i = 0; i < maybe_data.size() && all_off; ++i) {
      const std::string& d = dotted(maybe_data[i].first);
      const Id v = maybe_data[i].second;
      if (e(v).kind == ExprKind::Name && frozen_at(init, d, m.funcs[init].range.end)) any_frozen = true;
      else if (!data(d, v)) all_off = false;
    }
    if (any_frozen && all_off) return true;
  }
  // `for p in self.parameters(): p.requires_grad = requires_grad`, the parameter defaulting to False.
  const Function& fn = m.funcs[init];
  for (Id sid : stmts_in(init)) {
    const Stmt& s = m.s(sid);
    if (s.kind != StmtKind::For || s.targets.size() != 1 || s.value == kNone || e(s.value).kind != ExprKind::Call ||
        callee_attr(s.value) != "parameters"sv || dotted(callee_receiver(s.value)) != "self"sv ||
        e(s.targets[0]).kind != ExprKind::Name)
      continue;
    const std::string& p = e(s.targets[0]).text;
    for (Id b : s.body) {
      const Stmt& st = m.s(b);
      if (st.kind != StmtKind::Assign || st.targets.size() != 1 || st.value == kNone ||
          dotted(st.targets[0]) != p + ".requires_grad" || e(st.value).kind != ExprKind::Name)
        continue;
      for (size_t i = 0; i < fn.params.size() && i < fn.param_defaults.size(); ++i)
        if (fn.params[i] == e(st.value).text && fn.param_defaults[i] == "False") {
          if (param) *param = fn.params[i];
          return true;
        }
    }
  }
  return false;
}

bool Facts::graph_free_class(Id cls, Id construction) const {
  if (forward_decorated_off(cls)) return true;
  std::string param;
  if (!constructor_freezes(cls, &param)) return false;
  if (param.empty() || construction == kNone || e(construction).kind != ExprKind::Call) return true;
  // The switch passed by name, or by position (after `self`), to anything but False.
  if (has_kwargs_splat(construction)) return false;
  const Id a = argument_for(construction, method_in(cls, "__init__"), param);
  return a == kNone || (e(a).kind == ExprKind::Literal && e(a).lit == LitKind::False);
}

// A parameter annotated with a class whose forward runs with grad disabled (`model:
// Transformer`): of this file, or imported from a project module that says so.
bool Facts::annotated_grad_off(Id func, const std::string& name) const {
  if (func == kNone) return false;
  const Function& fn = m.funcs[func];
  std::string type;
  for (size_t i = 0; i < fn.params.size() && i < fn.param_types.size(); ++i)
    if (fn.params[i] == name) type = fn.param_types[i];
  // `"Transformer"` (a forward reference) names the class too.
  if (type.size() >= 2 && (type.front() == '"' || type.front() == '\'') && type.back() == type.front())
    type = type.substr(1, type.size() - 2);
  if (type.empty()) return false;
  if (Id k = class_at(type, m.funcs[func].range.begin); k != kNone) return graph_free_class(k);
  if (!project || project->grad_off_forward_classes.empty()) return false;
  std::string q = imported_name(m, type);
  return project->grad_off_forward_classes.count(q.empty() ? type : q) > 0;
}

bool Facts::forward_grad_off(Id func, Id obj, int depth) const {
  const std::string& d = dotted(obj);
  if (d.empty()) return false;
  // `self(sample)` in a method of a module whose forward runs with grad off, or whose
  // constructor freezes every part (a frozen backbone and pooling, settings kept as data).
  // (Not a freeze a constructor parameter may switch off: how this object was built is not
  // known here.)
  if (d == "self"sv) {
    const Id k = class_of(func);
    if (k == kNone) return false;
    if (self_grad_off_.size() != m.classes.size()) self_grad_off_.assign(m.classes.size(), -1);
    signed char& memo = self_grad_off_[k];
    if (memo < 0) {
      std::string param;
      memo = is_module_class(k) && (forward_decorated_off(k) || (constructor_freezes(k, &param) && param.empty())) ? 1 : 0;
    }
    return memo == 1;
  }
  std::vector<Id> values = bindings(func, d);
  if (Id k = instance_class(func, obj); k != kNone) {
    for (Id v : values) {
      v = unplaced(v);
      if (dotted(v) != d && !graph_free_class(k, v)) return false;
    }
    return true;
  }
  if (values.empty() && e(obj).kind == ExprKind::Name && annotated_grad_off(func, d)) return true;
  // A parameter: what every same-file caller hands in (`extract(FeatNet(blocks), arrays)`).
  if (values.empty() && e(obj).kind == ExprKind::Name && d.find('.') == std::string::npos) {
    const auto args = depth < 4 ? argument_values(func, d) : std::vector<std::pair<Id, Id>>{};
    if (args.empty()) return false;
    for (const auto& [where, a] : args) {
      Id v = unplaced(a);
      // Handed down from the caller's own name (`get_activations(files, model)`), a few hops.
      if (e(v).kind == ExprKind::Name) {
        if (!forward_grad_off(where, v, depth + 1)) return false;
        continue;
      }
      const Id k = e(v).kind == ExprKind::Call ? constructed_class(v) : kNone;
      if (k != kNone ? !graph_free_class(k, v)
                     : !(project && e(v).kind == ExprKind::Call && project->grad_off_forward_classes.count(e(e(v).kids[0]).qname)))
        return false;
    }
    return true;
  }
  if (values.empty()) return false;
  bool any = false;
  for (Id v : values) {
    // Rebound to itself, moved or wrapped (`gen = gen.cuda().eval()`, `DataParallel(gen)`).
    if (same_object(v, d)) continue;
    any = true;
    v = unplaced(v);
    // `self.model = model` in `__init__(self, model: Transformer)`.
    if (e(v).kind == ExprKind::Name && annotated_grad_off(function_at(e(v).range.begin), e(v).text)) continue;
    if (!project || e(v).kind != ExprKind::Call || !project->grad_off_forward_classes.count(e(e(v).kids[0]).qname))
      return false;
  }
  return any;
}

bool Facts::part_of_forward(Id func) const {
  // A helper method of a module that its own forward() calls (`preprocess_sample`,
  // `sample_noise`): it runs inside the forward, in training as in evaluation.
  if (func == kNone || !func_is_method_of_module(func)) return false;
  std::vector<Id> work{func};
  std::set<Id> seen{func};
  for (size_t i = 0; i < work.size() && i < 16; ++i)
    for (int ci : callers_[work[i]]) {
      Id g = calls[ci].func;
      if (g == kNone || m.funcs[g].cls != m.funcs[func].cls) continue;
      if (m.funcs[g].name == "forward"sv) return true;
      if (seen.insert(g).second) work.push_back(g);
    }
  return false;
}

bool Facts::in_module_forward(Id func) const {
  // `forward_train`, `forward_test`, `forward_without_sampling`: variants of the forward.
  return func_is_method_of_module(func) &&
         (m.funcs[func].name == "forward"sv || starts_with(m.funcs[func].name, "forward_") || part_of_forward(func));
}

bool Facts::called_from_training(Id func) const {
  // A caller that back-propagates through what the function returned
  // (`masks = self.make_masks(x); loss_fn(masks).backward()`).
  if (func == kNone) return false;
  // Another file of the run back-propagates through what a call of this name returned
  // (`dags, log_probs = self.controller.sample()`, then `(-log_probs * adv).sum().backward()`).
  if (project && project->trained_by_callers.count(m.funcs[func].name)) return true;
  for (int ci : callers_[func]) {
    const CallSite& c = calls[ci];
    if (c.func == func) continue;
    if (result_back_propagated(c)) return true;
  }
  return false;
}

Id Facts::detach_of(const CallSite& c) const {
  if (c.stmt == kNone || c.stmt >= calls_in_stmt.size()) return kNone;
  for (int di : calls_in_stmt[c.stmt]) {
    const Id d = calls[di].call;
    if (callee_attr(d) == "detach"sv && e(d).kids.size() == 1 && callee_receiver(d) == c.call) return d;
  }
  return kNone;
}

bool Facts::result_back_propagated(const CallSite& c) const {
  if (c.stmt == kNone) return false;
  std::set<std::string> names;
  const Stmt& st = m.s(c.stmt);
  if (st.kind == StmtKind::Assign)
    for (Id t : st.targets)
      for_each_expr(m, t, [&](Id y) {
        const std::string& d = dotted(y);
        if (!d.empty()) names.insert(d);
        return e(y).kind == ExprKind::Sequence;
      });
  // Does `root`, read at statement `at`, read one of `from`'s names as bound by statement
  // `def` (program order: a later binding of the name, e.g. a loop variable of the same
  // name, cuts the path)?
  auto reads = [&](Id root, Id at, const std::set<std::string>& from, Id def) {
    bool hit = false;
    for_each_expr(m, root, [&](Id y) {
      const std::string& d = dotted(y);
      if (!d.empty() && from.count(d)) {
        bool outside = false;
        for (const Def& df : flow().reaching(at, d, &outside)) hit = hit || df.stmt == def;
      }
      return !hit;
    });
    return hit;
  };
  std::vector<int> backprops;
  for (int cj : calls_in(c.func)) {
    const CallSite& b = calls[cj];
    if (!is_backprop(b) || b.stmt == kNone) continue;
    if (b.stmt == c.stmt) return true;  // `loss_fn(self.f(x)).backward()`
    backprops.push_back(cj);
  }
  if (names.empty() || backprops.empty()) return false;
  // Up to three hops of assignments: `loss = -log_probs * adv`, `loss = loss.sum()`, then
  // `loss.backward()`. Each hop is a binding (its names and statement) read by the next.
  std::vector<std::pair<std::set<std::string>, Id>> frontier{{names, c.stmt}};
  std::set<Id> seen{c.stmt};
  for (int hop = 0; hop < 4 && !frontier.empty(); ++hop) {
    for (const auto& [from, def] : frontier)
      for (int cj : backprops)
        if (reads(calls[cj].call, calls[cj].stmt, from, def)) return true;
    if (hop == 3) break;
    std::vector<std::pair<std::set<std::string>, Id>> next;
    for (Id sid : stmts_in(c.func)) {
      if (seen.count(sid)) continue;
      const Stmt& a = m.s(sid);
      if ((a.kind != StmtKind::Assign && a.kind != StmtKind::AugAssign) || a.value == kNone) continue;
      bool reached = false;
      for (const auto& [from, def] : frontier) reached = reached || reads(a.value, sid, from, def);
      if (!reached) continue;
      std::set<std::string> targets;
      for (Id t : a.targets)
        if (const std::string& d = dotted(t); !d.empty()) targets.insert(d);
      if (targets.empty()) continue;
      seen.insert(sid);
      next.emplace_back(std::move(targets), sid);
      if (next.size() > 16) break;
    }
    frontier = std::move(next);
  }
  return false;
}

const std::vector<Id>& Facts::block_holding(Id func, Id stmt, std::vector<Id>* top) const {
  std::set<Id> nested;
  for (Id sid : stmts_in(func)) {
    const Stmt& s = m.s(sid);
    std::vector<const std::vector<Id>*> subs{&s.body, &s.orelse, &s.finalbody};
    for (const Handler& h : s.handlers) subs.push_back(&h.body);
    for (const std::vector<Id>* sub : subs) {
      if (std::find(sub->begin(), sub->end(), stmt) != sub->end()) return *sub;
      nested.insert(sub->begin(), sub->end());
    }
  }
  top->clear();
  for (Id sid : stmts_in(func))
    if (!nested.count(sid)) top->push_back(sid);
  return *top;
}

bool Facts::precedes_in_its_block(Id func, Id stmt, uint32_t at) const {
  if (stmt == kNone) return false;
  std::vector<Id> top;
  const std::vector<Id>& b = block_holding(func, stmt, &top);
  return !b.empty() && m.s(stmt).range.end <= at && at < m.s(b.back()).range.end;
}

bool Facts::func_is_method_of_module(Id func) const {
  return func != kNone && is_module_class(class_of(func));
}

const std::vector<Id>& Facts::returned_values(Id func) const {
  static const std::vector<Id> none;
  if (func == kNone) return none;
  if (returns_.empty()) {
    returns_.assign(m.funcs.size(), {});
    for (const StmtSite& site : stmt_sites) {
      const Stmt& s = m.s(site.stmt);
      if (site.func != kNone && s.kind == StmtKind::Return && s.value != kNone) returns_[site.func].push_back(s.value);
    }
  }
  return returns_[func];
}

Id Facts::same_file_target(Id call, Id func) const {
  auto ci = call_index.find(call);
  if (ci == call_index.end()) return kNone;
  Id t = calls[ci->second].target_func;
  return t == func ? kNone : t;  // recursion says nothing new
}

// Is the value a model obtained by loading weights: torch.load / jit.load / hub.load /
// from_pretrained, through .to()/.eval()/..., through the bindings that reach it, and
// through what a same-file function returns (`model = prepare_model(path)`).
bool Facts::loaded_value(Id func, Id v, int depth) const {
  if (v == kNone || depth > 6) return false;
  // An entry of a loaded checkpoint (`torch.load(path)["model"]`, `ckpt["ema"]`): the question is
  // asked of what runs forwards, so the entry is a whole pickled module, loaded with the rest.
  if (e(v).kind == ExprKind::Subscript && !e(v).kids.empty()) return loaded_value(func, e(v).kids[0], depth + 1);
  if (e(v).kind != ExprKind::Call) {
    const std::string& vd = dotted(v);
    if (vd.empty()) return false;
    for (Id w : bindings_at(func, vd, v))
      if (loaded_value(func, w, depth + 1)) return true;
    // Returned after load_state_dict(...) + eval() on the same name in that function.
    return depth > 0 && func != kNone && loads_state(func, vd) &&
           eval_called_before(func, vd, UINT32_MAX);
  }
  const std::string& q = callee_qual(v);
  const std::string& a = callee_attr(v);
  if (q == "torch.jit.load"sv || q == "torch.load"sv || q == "torch.hub.load"sv) return true;
  if (a == "from_pretrained"sv) return !not_a_torch_model(callee_receiver(v));
  if (in(a, {"to", "cuda", "eval", "half", "float", "cpu", "get"})) return loaded_value(func, callee_receiver(v), depth + 1);
  // C++: `std::make_shared<torch::jit::script::Module>(torch::jit::load(path))`, lowered as a
  // module built from one argument, holds what it is built from.
  if (m.lang == Lang::Cpp && (q == "torch.nn.Module"sv || in(last_component(q), {"make_shared", "make_unique"})) &&
      e(v).kids.size() == 2)
    return loaded_value(func, e(v).kids[1], depth + 1);
  Id target = same_file_target(v, func);
  if (target != kNone)
    for (Id r : returned_values(target))
      if (loaded_value(target, r, depth + 1)) return true;
  return false;
}

bool Facts::loads_state(Id func, const std::string& d) const {
  auto it = load_state_dict_.find(d);
  return it != load_state_dict_.end() && it->second.count(func) != 0;
}

bool Facts::is_loaded_model(Id func, Id x) const { return loaded_model_rec(func, x, 0); }

bool Facts::weights_loaded_into(Id func, Id x) const {
  const std::string& d = dotted(x);
  return !d.empty() && (loads_state(func, d) || loads_state(kNone, d));
}

bool Facts::returns_a_loss(Id func) const {
  for (Id r : returned_values(func)) {
    bool loss = false;
    for_each_expr(m, r, [&](Id y) {
      const Expr& ye = e(y);
      if (ye.kind == ExprKind::Name || ye.kind == ExprKind::Attribute) loss = named_like_a_loss(ye.text);
      return !loss;
    });
    if (loss) return true;
  }
  return named_like_a_loss(m.funcs[func].name);
}

template <class Candidates, class Key, class Has>
bool Facts::another_method(ClassMemo& memo, Id func, const std::string& d, const Candidates& candidates, Key key,
                           Has has) const {
  const Id cls = class_of(func);
  if (cls == kNone) return false;
  auto [it, fresh] = memo.try_emplace({cls, d});
  std::vector<Id>& found = it->second;
  if (fresh)
    for (const auto& c : candidates) {
      const Id g = key(c);
      if (found.size() < 2 && g != kNone && class_of(g) == cls && has(c)) found.push_back(g);
    }
  return std::any_of(found.begin(), found.end(), [&](Id g) { return g != func; });
}

bool Facts::loaded_model_rec(Id func, Id x, int depth) const {
  const std::string& d = dotted(x);
  if (d.empty()) return false;
  const std::vector<Id> values = bindings_at(func, d, x);
  for (Id v : values)
    if (loaded_value(func, v, 0)) return true;
  // load_state_dict(...) + eval() on the same name in this function or module.
  bool lsd = loads_state(func, d) || loads_state(kNone, d);
  if (lsd && eval_called_before(func, d, UINT32_MAX)) return true;
  // An attribute of the object (`self.net`, a C++ member `net_`) that another method of its
  // class loads and switches to eval mode (a predictor class's constructor), read by a method
  // that does not bind the name itself.
  // (Not a method that hands back a loss, `compute_loss()`: its caller, in another file,
  // back-propagates it; eval() in the constructor then freezes batch-norm for fine-tuning.)
  if (func != kNone && class_of(func) != kNone && own_bindings(func, d).empty() && !is_param(func, d) &&
      (starts_with(d, "self.") || m.lang == Lang::Cpp) && !returns_a_loss(func)) {
    static const std::set<Id> kNoLoader;
    auto it = load_state_dict_.find(d);
    if (another_method(class_loaders_, func, d, it == load_state_dict_.end() ? kNoLoader : it->second,
                       [](Id g) { return g; }, [&](Id g) { return eval_called_before(g, d, UINT32_MAX); }))
      return true;
  }
  // Both at module level, read by a function that does not bind the name itself (a request
  // handler running the global model a script loaded at import).
  if (func != kNone && loads_state(kNone, d) &&
      own_bindings(func, d).empty() && !is_param(func, d) && eval_called_before(kNone, d, UINT32_MAX))
    return true;
  // A parameter never rebound here: what the file's callers hand in (`mask = inference(net,
  // image)` per image, with the loaded `net`). Every value they pass must be a loaded model.
  // (A C++ parameter's declared type, `Net& net`, is lowered as a binding `net : Net()` that
  // says what the name holds, not where it came from.)
  const bool declared_only = std::all_of(values.begin(), values.end(), [&](Id v) {
    const Id st = stmt_of(v);
    return st != kNone && m.s(st).kind == StmtKind::AnnAssign && m.s(st).text == "declared-type"sv;
  });
  if (depth >= 2 || !declared_only || e(x).kind != ExprKind::Name) return false;
  const auto args = argument_values(func, d);
  for (const auto& [where, a] : args)
    if (!loaded_model_rec(where, a, depth + 1)) return false;
  return !args.empty();
}

// The module a chain such as `G.eval().requires_grad_(False).to(dev)` switches off ("" when
// the chain has no `requires_grad_(False)`), and whether it switches it back on instead.
static std::string frozen_receiver(const Facts& f, Id x, bool* on, Id* by = nullptr) {
  // (Along the statement's chain of calls, `net.to(dev).eval().requires_grad_(False)`: a walk
  // of every expression of every statement cost more than all the freezes it found.)
  for (Id y = x; y != kNone && f.e(y).kind == ExprKind::Call; y = f.callee_receiver(y)) {
    if (f.callee_attr(y) != "requires_grad_"sv) continue;
    Id a = f.arg(y, 0, "requires_grad");
    *on = a == kNone || f.e(a).kind != ExprKind::Literal || f.e(a).lit != LitKind::False;
    if (by && a != kNone && f.e(a).kind == ExprKind::Name) *by = a;
    Id r = f.callee_receiver(y);
    while (r != kNone && f.e(r).kind == ExprKind::Call &&
           in(f.callee_attr(r), {"to", "cuda", "eval", "half", "float", "cpu", "double", "bfloat16"}))
      r = f.callee_receiver(r);
    return r != kNone ? f.dotted(r) : std::string();
  }
  return {};
}

// Do a function's freeze events switch off every parameter of its parameter `p` and never
// switch them back on?
bool Facts::freezes_param(const std::vector<Freeze>& events, const std::string& p) {
  bool frozen = false, unfrozen = false;
  for (const Freeze& z : events)
    if (z.name == p) (z.frozen ? frozen : unfrozen) = true;
  return frozen && !unfrozen;
}

int Facts::freeze_flag(Id g, const std::string& p) const {
  auto it = freezes_.find(g);
  if (it == freezes_.end()) return -1;
  const auto& params = m.funcs[g].params;
  for (Id sid : stmts_in(g)) {
    const Stmt& st = m.s(sid);
    if (st.kind != StmtKind::If || st.value == kNone || e(st.value).kind != ExprKind::Name || st.body.empty()) continue;
    auto flag = std::find(params.begin(), params.end(), e(st.value).text);
    if (flag == params.end() || *flag == p) continue;
    const uint32_t b = m.s(st.body.front()).range.begin, end = m.s(st.body.back()).range.end;
    bool any = false, all = true;
    for (const Freeze& z : it->second)
      if (z.name == p) any = true, all = all && z.pos >= b && z.pos < end;
    if (any && all) return static_cast<int>(flag - params.begin());
  }
  return -1;
}

// A literal that switches a flag off: `False`, `None`, `0`.
static bool literal_off(const Facts& f, Id a) {
  if (a == kNone || f.e(a).kind != ExprKind::Literal) return false;
  const Expr& x = f.e(a);
  return x.lit == LitKind::False || x.lit == LitKind::None || x.text == "0";
}

int Facts::value_flag(Id g, const std::string& p) const {
  if (value_freezes_.empty()) return -1;
  auto it = value_freezes_.find(g);
  if (it == value_freezes_.end()) return -1;
  // (A literal switch of the same parameter as well: the literal form decides.)
  if (auto z = freezes_.find(g); z != freezes_.end())
    for (const Freeze& x : z->second)
      if (x.name == p) return -1;
  std::string by;
  for (const ValueFreeze& z : it->second)
    if (!p.empty() && z.name == p) {
      if (!by.empty() && z.by != by) return -1;
      by = z.by;
    }
  const auto& params = m.funcs[g].params;
  auto flag = std::find(params.begin(), params.end(), by);
  return by.empty() || flag == params.end() ? -1 : static_cast<int>(flag - params.begin());
}

// A literal False (what `requires_grad = <flag>` needs to freeze).
static bool literal_false(const Facts& f, Id a) {
  return a != kNone && f.e(a).kind == ExprKind::Literal && f.e(a).lit == LitKind::False;
}

bool Facts::call_freezes(Id call, Id g, const std::string& p) const {
  // `set_requires_grad(net, False)`, or a call leaving out a flag whose default is False.
  if (const int flag = value_flag(g, p); flag >= 0) {
    const Id a = argument_for(call, g, m.funcs[g].params[flag]);
    return a == kNone ? defaults_to_false(m.funcs[g], flag) : literal_false(*this, a);
  }
  auto it = freezes_.find(g);
  if (it == freezes_.end() || !freezes_param(it->second, p)) return false;
  // (Only under `if <flag>:`, and the call passes the flag off: nothing is frozen.)
  const int flag = freeze_flag(g, p);
  return flag < 0 || !literal_off(*this, argument_for(call, g, m.funcs[g].params[flag]));
}

// The modules an argument names: itself, or each element of a literal list or tuple
// (`set_requires_grad([net_d, net_g], False)`).
static std::vector<std::string> frozen_arguments(const Facts& f, Id a) {
  std::vector<std::string> out;
  if (a == kNone) return out;
  for (Id x : f.e(a).kind == ExprKind::Sequence ? f.e(a).kids : std::vector<Id>{a})
    if (!f.dotted(x).empty()) out.push_back(f.dotted(x));
  return out;
}

void Facts::note_helper_freezes() {
  // `freeze_model(model)` where the file's `freeze_model(m)` switches off every parameter of
  // its parameter (`for p in m.parameters(): p.requires_grad = False`) and never back on:
  // the argument is frozen from the call on.
  // A switch set by a parameter's value acts on a module the function is handed, directly or
  // as each element of a list (`for net in nets:`); other switches of that kind are dropped.
  for (auto& [func, events] : value_freezes_)
    for (ValueFreeze& z : events) {
      if (is_param(func, z.name)) continue;
      std::string handed;
      for (const Loop& l : loops)
        if (l.func == func && l.stmt != kNone && l.iter != kNone && e(l.iter).kind == ExprKind::Name &&
            is_param(func, e(l.iter).text) && l.range.begin <= z.pos && z.pos < l.range.end &&
            !m.s(l.stmt).targets.empty() && dotted(m.s(l.stmt).targets[0]) == z.name)
          handed = e(l.iter).text;
      z.name = handed == z.by ? "" : handed;
    }
  std::vector<std::pair<Id, Freeze>> added;
  for (const CallSite& c : calls) {
    const Id g = c.target_func;
    if (g == kNone || g == c.func || c.stmt == kNone || m.s(c.stmt).kind != StmtKind::Expr) continue;
    // (Every function has an entry in freezes_, mostly empty; flag-valued switches are rare.)
    const auto fz = freezes_.find(g);
    if ((fz == freezes_.end() || fz->second.empty()) && (value_freezes_.empty() || !value_freezes_.count(g))) continue;
    for (const std::string& p : m.funcs[g].params)
      if (call_freezes(c.call, g, p))
        for (std::string& d : frozen_arguments(*this, argument_for(c.call, g, p)))
          added.push_back({c.func, {std::move(d), e(c.call).range.begin, true}});
  }
  // The same for a function of another module of the project (ProjectView::freezing_imports):
  // `set_parameter_requires_grad(model, feature_extract)` imported from the project's utils.
  if (project && !project->freezing_imports.empty())
    for (const CallSite& c : calls) {
      if (c.target_func != kNone || c.stmt == kNone || m.s(c.stmt).kind != StmtKind::Expr) continue;
      auto it = project->freezing_imports.find(e(e(c.call).kids[0]).qname);
      if (it == project->freezing_imports.end()) continue;
      for (const EvalLeaving& z : it->second) {
        const Id flag = z.flag >= 0 ? arg(c.call, static_cast<size_t>(z.flag), z.flag_param) : kNone;
        if (z.value ? !(flag == kNone ? z.value == 2 : literal_false(*this, flag)) : literal_off(*this, flag)) continue;
        for (std::string& d : frozen_arguments(*this, arg(c.call, static_cast<size_t>(z.index), z.param)))
          added.push_back({c.func, {std::move(d), e(c.call).range.begin, true}});
      }
    }
  for (auto& [func, z] : added) freezes_[func].push_back(std::move(z));
}

void Facts::note_freezes(const Stmt& s, Id func) {
  auto& events = freezes_[func];
  bool on = false;
  // A switch set by a parameter of the function (`net.requires_grad_(flag)`): on which module
  // the function is handed is decided once the loops are known (note_helper_freezes).
  auto by_value = [&](const std::string& d, const std::string& by) {
    if (func == kNone || !is_param(func, by)) return false;
    if (d != by) value_freezes_[func].push_back({d, s.range.begin, by});
    return true;
  };
  if (s.kind == StmtKind::Expr && s.value != kNone) {
    Id by = kNone;
    std::string d = frozen_receiver(*this, s.value, &on, &by);
    if (d.empty()) return;
    if (by != kNone && by_value(d, e(by).text)) return;
    events.push_back({d, s.range.begin, !on});
  } else if ((s.kind == StmtKind::Assign || s.kind == StmtKind::AnnAssign) && s.value != kNone) {
    std::string d = frozen_receiver(*this, s.value, &on);
    for (Id t : s.targets) {
      // `model.classifier[6] = nn.Linear(...)`: a new layer in the part `model.classifier`.
      const bool slot = e(t).kind == ExprKind::Subscript && !e(t).kids.empty();
      // (Through the registry of submodules: `model.classifier._modules["6"] = ...`.)
      Id holder = slot ? e(t).kids[0] : t;
      if (slot && e(holder).kind == ExprKind::Attribute && e(holder).text == "_modules"sv && !e(holder).kids.empty())
        holder = e(holder).kids[0];
      const std::string& td = dotted(holder);
      if (td.empty()) continue;
      // A layer without parameters (`model.avgpool = nn.Identity()`) adds nothing that
      // requires grad: the holder stays frozen as it was.
      if (e(s.value).kind == ExprKind::Call && !e(s.value).kids.empty() && !e(e(s.value).kids[0]).text.empty() &&
          std::isupper(static_cast<unsigned char>(e(e(s.value).kids[0]).text[0])) &&
          parameter_free_layer(e(e(s.value).kids[0]).text) && starts_with(callee_qual(s.value), "torch.nn."))
        continue;
      // `ema = copy.deepcopy(G).eval().requires_grad_(False)`: the new name is frozen.
      if (!d.empty() && !slot) events.push_back({td, s.range.begin, !on});
      // A view or copy of a frozen module is frozen too: `extractor =
      // create_feature_extractor(model, ...)`, `net = torch.compile(model)`, `copy.deepcopy(model)`.
      if (d.empty() && !slot && e(s.value).kind == ExprKind::Call && e(s.value).kids.size() >= 2) {
        const Expr& callee = e(e(s.value).kids[0]);
        const std::string_view name = callee.kind == ExprKind::Name || callee.kind == ExprKind::Attribute
                                          ? std::string_view(callee.text) : std::string_view();
        if (in(name, {"create_feature_extractor"sv, "IntermediateLayerGetter"sv, "compile"sv, "deepcopy"sv,
                      "DataParallel"sv}) &&
            frozen_at(func, dotted(e(s.value).kids[1]), s.range.begin))
          events.push_back({td, s.range.begin, true});
      }
      // `model.fc = nn.Linear(...)`: a new submodule whose parameters require grad (its
      // holder is no longer frozen as a whole; its other parts stay as they were).
      size_t dot = td.rfind('.');
      if ((dot != std::string::npos || slot) && td.compare(dot == std::string::npos ? td.size() : dot, std::string::npos,
                                                           ".requires_grad") != 0)
        events.push_back({td, s.range.begin, false});
    }
  } else if (s.kind == StmtKind::For && !s.targets.empty() && s.value != kNone && e(s.value).kind == ExprKind::Call &&
             (callee_attr(s.value) == "parameters"sv || callee_attr(s.value) == "named_parameters"sv)) {
    // for p in model.parameters(): p.requires_grad = False
    // for k, v in model.named_parameters(): v.requires_grad = False
    Id target = s.targets[0];
    if (callee_attr(s.value) == "named_parameters"sv) {
      if (e(target).kind != ExprKind::Sequence || e(target).kids.size() != 2) return;
      target = e(target).kids[1];
    }
    if (e(target).kind != ExprKind::Name) return;
    const std::string& p = e(target).text;
    const std::string& d = dotted(callee_receiver(s.value));
    if (d.empty()) return;
    auto switches = [&](const Stmt& st) {  // `p.requires_grad = False`: 1 off, 0 on, -1 neither
      if (st.kind != StmtKind::Assign || st.targets.size() != 1 || st.value == kNone) return -1;
      if (dotted(st.targets[0]) != p + ".requires_grad" || e(st.value).kind != ExprKind::Literal) return -1;
      return e(st.value).lit == LitKind::False ? 1 : 0;
    };
    for (Id b : s.body) {
      const Stmt& st = m.s(b);
      // `p.requires_grad = requires_grad`: as the callers pass it.
      if (st.kind == StmtKind::Assign && st.targets.size() == 1 && st.value != kNone &&
          e(st.value).kind == ExprKind::Name && dotted(st.targets[0]) == p + ".requires_grad" &&
          by_value(d, e(st.value).text))
        continue;
      if (const int sw = switches(st); sw >= 0) events.push_back({d, s.range.begin, sw == 1});
      // `if name not in ["fc.weight", "fc.bias"]: p.requires_grad = False` (also `if not
      // name.startswith("fc")`): every parameter off but the named head's, which still
      // records a graph.
      if (st.kind == StmtKind::If && st.orelse.empty() && st.body.size() == 1 && switches(m.s(st.body[0])) == 1 &&
          callee_attr(s.value) == "named_parameters"sv) {
        const std::string head = kept_by_name_test(st.value, e(e(s.targets[0]).kids[0]).text);
        if (!head.empty()) {
          events.push_back({d, s.range.begin, true});
          events.push_back({d + "." + head, s.range.begin + 1, false});
        }
      }
    }
  }
}

std::string Facts::kept_by_name_test(Id cond, const std::string& name) const {
  // The module a parameter name belongs to: `fc` of "fc.weight", `head` of "head".
  auto module_of = [](std::string n) {
    for (std::string_view leaf : {".weight", ".bias"})
      if (n.size() > leaf.size() && n.compare(n.size() - leaf.size(), leaf.size(), leaf) == 0) n.resize(n.size() - leaf.size());
    while (!n.empty() && n.back() == '.') n.pop_back();
    return n;
  };
  auto literal = [&](Id x) -> std::string {
    return x != kNone && e(x).kind == ExprKind::Literal && e(x).lit == LitKind::String ? e(x).text : std::string();
  };
  const Expr& c = e(cond);
  std::string head;
  // `name not in ["fc.weight", "fc.bias"]`: every literal names the same module.
  if (c.kind == ExprKind::Compare && c.text == "not in"sv && c.kids.size() == 2 && dotted(c.kids[0]) == name &&
      e(c.kids[1]).kind == ExprKind::Sequence) {
    for (Id x : e(c.kids[1]).kids) {
      const std::string n = module_of(literal(x));
      if (n.empty() || (!head.empty() && n != head)) return "";
      head = n;
    }
    return head;
  }
  // `not name.startswith("fc")`, `"fc" not in name`
  if (c.kind == ExprKind::UnaryOp && c.text == "not"sv && !c.kids.empty() && e(c.kids[0]).kind == ExprKind::Call &&
      callee_attr(c.kids[0]) == "startswith"sv && dotted(callee_receiver(c.kids[0])) == name)
    return module_of(literal(arg(c.kids[0], 0)));
  if (c.kind == ExprKind::Compare && c.text == "not in"sv && c.kids.size() == 2 && dotted(c.kids[1]) == name)
    return module_of(literal(c.kids[0]));
  return "";
}

bool Facts::frozen_at(Id func, const std::string& d, uint32_t pos, int depth) const {
  if (d.empty()) return false;
  auto it = freezes_.find(func);
  bool frozen = false, seen = false;
  uint32_t last = 0;
  if (it != freezes_.end())
    for (const Freeze& z : it->second)
      if (z.pos < pos && z.pos >= last) {
        // The module itself, a module that holds it (`ae.requires_grad_(False)` freezes
        // `ae.encoder`), or, undoing it, a part of it (`model.fc = nn.Linear(...)`).
        const bool self_or_holder = z.name == d || starts_with(d, z.name + ".");
        if (!self_or_holder && (z.frozen || !starts_with(z.name, d + "."))) continue;
        frozen = z.frozen && self_or_holder;
        seen = true;
        last = z.pos;
      }
  if (seen || func == kNone) return frozen;
  // A module-level name that the function neither binds nor takes as a parameter (a script's
  // `extractor` read by its `extract()` function): as the module's statements leave it.
  const std::string root = d.substr(0, d.find('.'));
  if (is_param(func, root) && root == d && depth < 2) {
    // A parameter: frozen when every same-file caller hands in a model frozen at the call.
    const auto args = argument_values(func, d);
    for (const auto& [caller, a] : args)
      if (!frozen_at(caller, dotted(a), e(a).range.begin, depth + 1)) return false;
    return !args.empty();
  }
  if (is_param(func, root) || bound_names_[func].count(root)) return false;
  return m.funcs[func].parent == kNone && frozen_at(kNone, d, UINT32_MAX);
}

// `d` at `pos` in `func` frozen as a whole and then given new parts (`for p in
// model.parameters(): p.requires_grad = False`, then `model.fc = nn.Sequential(...)`): the
// first new part's name, "" otherwise. Only those parts record a graph in a forward.
std::string Facts::frozen_but_for_at(Id func, const std::string& d, uint32_t pos) const {
  if (d.empty()) return "";
  auto it = freezes_.find(func);
  std::string part;
  bool frozen = false, seen = false;
  if (it != freezes_.end())
    for (const Freeze& z : it->second) {
      if (z.pos >= pos) continue;
      if (z.name == d) frozen = z.frozen, part.clear(), seen = true;
      else if (frozen && !z.frozen && starts_with(z.name, d + ".") && part.empty()) part = z.name;
    }
  // A module-level model a function reads without binding it: as the module's statements leave it.
  if (!seen && func != kNone && m.funcs[func].parent == kNone && !is_param(func, d.substr(0, d.find('.'))) &&
      !bound_names_[func].count(d.substr(0, d.find('.'))))
    return frozen_but_for_at(kNone, d, UINT32_MAX);
  return frozen ? part : "";
}

// The model a call of one of the file's functions returns (`model = Net(10)`, whose body
// freezes a pretrained backbone and attaches a head): 1 frozen as a whole, 0 frozen but for
// the parts named in `*part`, -1 neither.
int Facts::returns_frozen(Id call, std::string* part) const {
  const Expr& callee = e(e(call).kids[0]);
  if (callee.kind != ExprKind::Name || !callee.qname.empty()) return -1;
  const Id fn = module_func_at(callee.text, callee.range.begin);
  if (fn == kNone) return -1;
  int out = -2;
  for (Id st : stmts_in(fn)) {
    const Stmt& r = m.s(st);
    if (r.kind != StmtKind::Return || r.value == kNone || function_at(r.range.begin) != fn) continue;
    const std::string& d = dotted(r.value);
    int here = -1;
    std::string p;
    if (frozen_at(fn, d, r.range.begin)) here = 1;
    else if (p = frozen_but_for_at(fn, d, r.range.begin); !p.empty()) here = 0;
    if (out != -2 && here != out) return -1;
    out = here;
    if (here == 0) *part = p;
  }
  return out == -2 ? -1 : out;
}

bool Facts::unfrozen_in(Id func, const std::string& d) const {
  for (Id scope : {func, kNone}) {
    auto it = freezes_.find(scope);
    if (it != freezes_.end())
      for (const Freeze& z : it->second)
        if (!z.frozen && z.name == d) return true;
  }
  // Handed to a function of the file that switches its parameter's gradients back on
  // (`unfreeze(model)`).
  for (const CallSite& c : calls) {
    if ((c.func != func && c.func != kNone) || c.target_func == kNone) continue;
    auto it = freezes_.find(c.target_func);
    if (it == freezes_.end()) continue;
    for (const std::string& p : m.funcs[c.target_func].params) {
      const Id a = argument_for(c.call, c.target_func, p);
      if (a == kNone || dotted(unplaced(a)) != d) continue;
      for (const Freeze& z : it->second)
        if (!z.frozen && z.name == p) return true;
    }
  }
  return false;
}

const std::vector<int>& Facts::backprop_calls() const {
  if (!backprop_calls_) {
    backprop_calls_.emplace();
    for (size_t ci = 0; ci < calls.size(); ++ci)
      if (is_backprop(calls[ci])) backprop_calls_->push_back(static_cast<int>(ci));
  }
  return *backprop_calls_;
}

const std::vector<Id>& Facts::assigning_functions(const std::string& d) const {
  static const std::vector<Id> none;
  if (!assigning_functions_) {
    assigning_functions_.emplace();
    for (Id fn = 0; fn <= m.funcs.size(); ++fn) {
      const Id func = fn == m.funcs.size() ? kNone : fn;
      for (Id sid : stmts_in(func)) {
        const Stmt& st = m.s(sid);
        if (st.kind != StmtKind::Assign && st.kind != StmtKind::AnnAssign) continue;
        for (Id t : st.targets)
          if (const std::string& td = dotted(t); !td.empty()) {
            auto& v = (*assigning_functions_)[td];
            if (v.empty() || v.back() != func) v.push_back(func);
          }
      }
    }
  }
  auto it = assigning_functions_->find(d);
  return it == assigning_functions_->end() ? none : it->second;
}

const std::vector<int>& Facts::loops_in(Id func) const {
  if (loops_in_.empty()) {
    loops_in_.assign(m.funcs.size() + 1, {});
    for (size_t l = 0; l < loops.size(); ++l)
      loops_in_[loops[l].func == kNone ? m.funcs.size() : loops[l].func].push_back(static_cast<int>(l));
  }
  return loops_in_[func == kNone ? m.funcs.size() : func];
}

const std::vector<int>& Facts::calls_to(Id func) const {
  static const std::vector<int> none;
  if (func == kNone) return none;
  if (calls_to_.empty()) {
    calls_to_.assign(m.funcs.size(), {});
    for (size_t ci = 0; ci < calls.size(); ++ci)
      if (calls[ci].target_func != kNone) calls_to_[calls[ci].target_func].push_back(static_cast<int>(ci));
  }
  return calls_to_[func];
}

const std::vector<int>& Facts::constructions_of(Id cls) const {
  static const std::vector<int> none;
  if (cls == kNone || cls >= m.classes.size()) return none;
  if (constructions_.empty()) {
    constructions_.assign(m.classes.size(), {});
    for (size_t ci = 0; ci < calls.size(); ++ci)
      if (const Id k = constructed_class(calls[ci].call); k != kNone) constructions_[k].push_back(static_cast<int>(ci));
  }
  return constructions_[cls];
}

const std::vector<Id>& Facts::nested_functions(Id func) const {
  if (nested_functions_.empty()) {
    nested_functions_.assign(m.funcs.size() + 1, {});
    for (Id fn = 0; fn < m.funcs.size(); ++fn)
      // (Every enclosing function, up a bounded chain: a definition nested 16 deep is not code.)
      for (Id p = m.funcs[fn].parent, hops = 0; p != kNone && hops < 16; p = m.funcs[p].parent, ++hops)
        nested_functions_[p].push_back(fn);
  }
  return nested_functions_[func == kNone ? m.funcs.size() : func];
}

bool Facts::class_freezes(Id cls, const std::string& d) const {
  if (cls == kNone) return false;
  auto [memo, fresh] = class_freezes_.try_emplace({cls, d}, false);
  if (!fresh) return memo->second;
  // (Only the methods with freeze events can: one that freezes nothing leaves `self.<attr>` as
  // it found it.)
  for (const auto& [fn, events] : freezes_)
    if (fn != kNone && !events.empty() && class_of(fn) == cls && frozen_at(fn, d, m.funcs[fn].range.end))
      return memo->second = true;
  return false;
}

bool Facts::frozen_anywhere(const std::string& d) const {
  if (d.empty()) return false;
  for (const auto& [func, events] : freezes_)
    for (const Freeze& z : events)
      if (z.frozen && z.name == d) return true;
  return false;
}

bool Facts::another_method_evals(Id func, const std::string& d) const {
  return another_method(
      class_evals_, func, d, evals_, [](const auto& c) { return c.first; },
      [&](const auto& c) { return std::any_of(c.second.begin(), c.second.end(), [&](const auto& ev) { return ev.first == d; }); });
}

bool Facts::last_eval_before(Id func, const std::string& d, uint32_t before, uint32_t* last) const {
  auto it = evals_.find(func);
  if (it == evals_.end()) return false;
  bool found = false;
  *last = 0;
  for (const auto& [name, pos] : it->second)
    if (name == d && pos < before) found = true, *last = std::max(*last, pos);
  return found;
}

bool Facts::eval_called_before(Id func, const std::string& d, uint32_t before) const {
  uint32_t last = 0;
  const bool found = last_eval_before(func, d, before, &last);
  if (!found || before == UINT32_MAX) return found;
  // (At a position: not switched back to train mode between the eval() and it, in source order.)
  if (auto t = trains_.find(func); t != trains_.end())
    for (const auto& [name, pos] : t->second)
      if (name == d && pos > last && pos < before) return false;
  return true;
}

std::string Facts::eval_switch(Id func, const std::string& d, uint32_t before) const {
  uint32_t last = 0;
  const bool found = last_eval_before(func, d, before, &last);
  return d + (found && evals_as_train_false_.count(last) ? ".train(False)" : ".eval()");
}

bool Facts::optimizer_factory_name(std::string_view name) {
  // (Every such word holds "ptim": most names need no tokenising.)
  if (name.find("ptim") == std::string_view::npos) return false;
  bool opt = false;
  for (const auto& t : name_tokens(name)) {
    if (t == "sched"sv || t == "scheduler"sv || t == "lr"sv || t == "warmup"sv || t == "state"sv || t == "params"sv ||
        t == "param"sv || t == "groups"sv || t == "group"sv || t == "config"sv || t == "cfg"sv || t == "args"sv)
      return false;
    if (t == "optim"sv || t == "optimizer"sv || t == "optimiser"sv) opt = true;
  }
  return opt;
}

bool Facts::is_optimizer(Id func, Id x) const {
  if (x == kNone) return false;
  if (e(x).kind == ExprKind::Subscript) x = e(x).kids[0];
  const std::string& d = dotted(x);
  if (d.empty()) return false;
  for (Id v : bindings_at(func, d, x)) {
    if (e(v).kind != ExprKind::Call) continue;
    const std::string& q = callee_qual(v);
    if (starts_with(q, "torch.optim.") && q.find("lr_scheduler") == std::string::npos &&
        q.find("swa_utils") == std::string::npos)
      return true;
    if (callee_attr(v) == "optimizers"sv) return true;
    // A class of this file is an optimizer only if it is one (`WeightEMA`, whose step()
    // blends weights into an EMA copy and never reads .grad, is not, whatever it is named).
    if (Id k = constructed_class(v); k != kNone) return class_derives(k, {"Optimizer"});
    // A class the file does not show (a star import's) named for averaging weights
    // (`WeightEMA`, `ModelEma`, `AveragedModel`, `SWA`, `PolyakAverager`): its step() updates
    // a copy from the model's weights, not from gradients.
    if (const Expr& callee = e(e(v).kids[0]); (callee.kind == ExprKind::Name || callee.kind == ExprKind::Attribute)) {
      const std::string_view cls = last_component(dotted(e(v).kids[0]));
      if (!cls.empty() && std::isupper(static_cast<unsigned char>(cls[0])))
        for (const auto& t : name_tokens(cls))
          if (in(t, {"ema", "swa", "average", "averaged", "averager", "polyak", "moving"})) return false;
    }
    // An imported factory named for what it builds (`build_optimizer(cfg, model)`,
    // `create_optimizer_v2(...)`), not a scheduler's; any other imported call is not one.
    if (!q.empty()) return optimizer_factory_name(last_component(q));
  }
  // A parameter: what the same-file callers pass (`train(..., ema_optimizer, ...)` with
  // `ema_optimizer = WeightEMA(...)` in main()).
  if (Id k = argument_class(func, d); k != kNone) return class_derives(k, {"Optimizer"});
  auto toks = name_tokens(last_component(d));
  bool opt = false;
  for (const auto& t : toks) {
    if (t == "sched"sv || t == "scheduler"sv || t == "lr"sv || t == "warmup"sv) return false;
    if (t == "opt"sv || t == "optim"sv || t == "optimizer"sv || t == "optimiser"sv || t == "optimizers"sv) opt = true;
  }
  return opt;
}

Id Facts::optimizer_of_step(const CallSite& c) const {
  if (callee_attr(c.call) != "step"sv) return kNone;
  Id r = callee_receiver(c.call);
  if (r == kNone) return kNone;
  if (is_optimizer(c.func, r)) return r;
  // scaler.step(optimizer) with AMP's GradScaler
  Id a = arg(c.call, 0, "optimizer");
  if (a != kNone && is_optimizer(c.func, a)) {
    const std::string& d = dotted(r);
    bool scaler = false;
    for (const auto& t : name_tokens(last_component(d)))
      if (t == "scaler"sv) scaler = true;
    for (Id v : bindings(c.func, d))
      if (ends_with(callee_qual(v), "GradScaler")) scaler = true;
    if (scaler) return a;
  }
  return kNone;
}

bool Facts::is_grad_reset(const CallSite& c, Id* optimizer) const {
  *optimizer = kNone;
  const std::string& a = callee_attr(c.call);
  if (a == "zero_grad"sv) {
    Id r = callee_receiver(c.call);
    if (r != kNone && is_optimizer(c.func, r)) *optimizer = r;
    return true;
  }
  // p.grad.zero_(), p.grad.detach_().zero_()
  if (a == "zero_"sv || a == "detach_"sv) {
    Id r = callee_receiver(c.call);
    while (r != kNone && e(r).kind == ExprKind::Call) r = callee_receiver(r);
    if (r != kNone && e(r).kind == ExprKind::Attribute && (e(r).text == "grad"sv || e(r).text == "data"sv)) return true;
  }
  // A helper this file cannot see whose name says it resets gradients (`reset_grad()`,
  // `self.clear_grads()`, `zeroGrad(model)`): defined in another notebook or module. A
  // same-file helper is read through its body instead.
  if (c.target_func == kNone && (a.empty() || a != "step"sv)) {
    const Id callee = e(c.call).kids[0];
    const std::string_view name = e(callee).kind == ExprKind::Name || e(callee).kind == ExprKind::Attribute
                                      ? std::string_view(e(callee).text) : std::string_view();
    // Every gradient word below starts with these letters: most names need no tokenising.
    if (!holds_letters(name, "grad")) return false;
    bool reset = false, grad = false;
    for (const auto& t : name_tokens(name)) {
      reset = reset || in(t, {"zero"sv, "reset"sv, "clear"sv});
      grad = grad || in(t, {"grad"sv, "grads"sv, "gradient"sv, "gradients"sv});
    }
    if (!reset || !grad || callee_qual(c.call).rfind("torch.", 0) == 0) return false;
    // A method of another object (`self.gradient_diversity.reset_accum_grads(i)`, a
    // statistics helper that clears its own running sums) reaches the model's gradients
    // only when it is the model, an optimizer or the trainer itself (`self`), or is handed
    // one of those (`tracker.reset_grads(model)`, `h.zero_grads(model.parameters())`).
    const Id r = callee_receiver(c.call);
    if (r == kNone || (e(r).kind == ExprKind::Name && in(e(r).text, {"self"sv, "cls"sv}))) return true;
    auto reaches_gradients = [&](Id x) {
      if (x == kNone) return false;
      if (e(x).kind == ExprKind::Call && callee_attr(x) == "parameters"sv) x = callee_receiver(x);
      return x != kNone && (is_optimizer(c.func, x) || is_model_value(c.func, x));
    };
    if (reaches_gradients(r)) return true;
    for (size_t k = 1; k < e(c.call).kids.size(); ++k)
      if (reaches_gradients(e(c.call).kids[k])) return true;
    return false;
  }
  return false;
}

bool Facts::is_backward(const CallSite& c) const {
  // (Asked of every call, many times over: once per call expression.)
  return backprop_bits(c) & 1;
}

// is_backward() in bit 0, is_backprop() in bit 1, computed once per call expression.
int Facts::backprop_bits(const CallSite& c) const {
  if (backward_memo_.empty()) backward_memo_.assign(m.exprs.size(), -1);
  signed char& memo = backward_memo_[c.call];
  if (memo < 0) {
    const bool backward = compute_is_backward(c);
    memo = static_cast<signed char>((backward ? 1 : 0) | (backward || callee_qual(c.call) == "torch.autograd.grad"sv ? 2 : 0));
  }
  return memo;
}

bool Facts::compute_is_backward(const CallSite& c) const {
  const std::string& a = callee_attr(c.call);
  // mmengine's OptimWrapper.update_params(loss) runs backward() and step().
  if (a == "backward"sv || a == "manual_backward"sv || a == "update_params"sv) return true;
  if (a == "step"sv && differentiable_step(c)) return true;
  const std::string& q = callee_qual(c.call);
  return q == "torch.autograd.backward"sv || handed_loss_and_optimizer(c);
}

bool Facts::handed_loss_and_optimizer(const CallSite& c) const {
  // A call the run does not show, handed the loss and the optimizer: a loss scaler's training
  // step (`loss_scaler(loss, optimizer, parameters=model.parameters())`, timm's NativeScaler,
  // whose `__call__` runs `scale(loss).backward()` and the step), `backward_and_step(loss,
  // opt)` of another module. (Names first: most calls are handed no loss.)
  // The loss comes first, as the value to back-propagate (`loss`, `total_loss`, `self.loss_g`),
  // not a loss function or a record of losses (`train(criterion, optimizer)`, `log(loss_value,
  // optimizer)`).
  // (Asked of every call, often: a byte test of the first argument before anything else.)
  const Expr& call = e(c.call);
  if (c.target_func != kNone || call.kids.size() < 3) return false;
  const Id loss = call.kids.size() - 1 > call.kw.size() ? call.kids[1] : arg(c.call, 0, "loss");
  if (loss == kNone || (e(loss).kind != ExprKind::Name && e(loss).kind != ExprKind::Attribute)) return false;
  const std::string& text = e(loss).text;
  bool has_loss = false;
  for (size_t k = text.find_first_of("lL"); k != std::string::npos && k + 4 <= text.size() && !has_loss;
       k = text.find_first_of("lL", k + 1))
    has_loss = (text[k + 1] | 0x20) == 'o' && (text[k + 2] | 0x20) == 's' && (text[k + 3] | 0x20) == 's';
  if (!has_loss) return false;
  const std::string_view last = last_component(text);
  bool named = false;
  for (const auto& t : name_tokens(last)) {
    if (in(t, {"fn", "fns", "func", "function", "functions", "criterion", "crit", "meter", "meters", "scaler", "scale",
               "weight", "weights", "type", "cfg", "config", "name", "names", "history", "hist", "log", "logs", "list",
               "dict", "avg", "average", "value", "values", "item", "items", "record", "records", "module"}))
      return false;
    named = named || t == "loss"sv || t == "losses"sv;
  }
  if (!named || starts_with(callee_qual(c.call), "torch")) return false;
  // The callee says it steps: `loss_scaler`, `backward_and_step`, `self.optimize`, `amp_update`
  // (not `print(loss, optimizer)`, `report(val_loss, opt)`, `save_checkpoint(loss, optimizer)`).
  const Expr& callee = e(call.kids[0]);
  if (callee.kind != ExprKind::Name && callee.kind != ExprKind::Attribute) return false;
  bool steps = false;
  for (const auto& t : name_tokens(last_component(callee.text)))
    steps = steps || in(t, {"scaler", "scale", "backward", "backprop", "step", "optimize", "optimise", "minimize",
                            "minimise", "update", "amp"});
  if (!steps) return false;
  for (size_t k = 1; k < call.kids.size(); ++k)
    if (call.kids[k] != loss && (e(call.kids[k]).kind == ExprKind::Name || e(call.kids[k]).kind == ExprKind::Attribute) &&
        is_optimizer(c.func, call.kids[k]))
      return true;
  return false;
}

bool Facts::differentiable_step(const CallSite& c) const {
  // A differentiable optimizer takes the loss and differentiates it itself:
  // `with higher.innerloop_ctx(model, opt) as (fmodel, diffopt): ... diffopt.step(loss)`,
  // `opt = torchopt.MetaSGD(net); opt.step(loss)`.
  if (arg(c.call, 0) == kNone) return false;
  bool imported = false;
  for (const auto& [local, q] : m.aliases)
    imported = imported || starts_with(q, "higher") || starts_with(q, "torchopt");
  if (!imported) return false;
  Id r = callee_receiver(c.call);
  if (r == kNone || e(r).kind != ExprKind::Name) return false;
  const std::string& name = e(r).text;
  auto from_library = [&](Id v) {
    const std::string& q = e(v).kind == ExprKind::Call ? callee_qual(v) : std::string();
    return starts_with(q, "higher.") || starts_with(q, "torchopt.");
  };
  for (Id v : bindings(c.func, name))
    if (from_library(v)) return true;
  for (const StmtSite& ss : stmt_sites) {
    const Stmt& st = m.s(ss.stmt);
    if (ss.func != c.func || st.kind != StmtKind::With) continue;
    for (size_t k = 0; k < st.items.size() && k < st.targets.size(); ++k) {
      if (st.targets[k] == kNone || !from_library(st.items[k])) continue;
      bool names_it = false;
      for_each_expr(m, st.targets[k], [&](Id y) {
        names_it = names_it || (e(y).kind == ExprKind::Name && e(y).text == name);
        return e(y).kind == ExprKind::Sequence;
      });
      if (names_it) return true;
    }
  }
  return false;
}

bool Facts::is_backprop(const CallSite& c) const { return backprop_bits(c) & 2; }

bool Facts::is_torch_call(Id call, std::initializer_list<std::string_view> qnames) const {
  const std::string& q = callee_qual(call);
  for (auto n : qnames)
    if (q == n) return true;
  return false;
}

bool Facts::reaches(Id func, const std::function<bool(const CallSite&)>& pred) const {
  std::vector<Id> stack{func};
  std::unordered_set<Id> seen{func};
  while (!stack.empty()) {
    Id f = stack.back();
    stack.pop_back();
    for (int ci : func_calls_[f == kNone ? m.funcs.size() : f]) {
      budget::tick();
      const CallSite& c = calls[ci];
      if (pred(c)) return true;
      if (c.target_func != kNone && seen.insert(c.target_func).second) stack.push_back(c.target_func);
    }
  }
  return false;
}

bool Facts::loop_reaches(int loop, const std::function<bool(const CallSite&)>& pred) const {
  // The loop's own call sites, then every same-file function they reach, each visited once
  // (one walk for the loop, not one per call site).
  std::vector<Id> stack;
  std::unordered_set<Id> seen;
  for (int ci : loops[loop].calls) {
    budget::tick();
    const CallSite& c = calls[ci];
    if (pred(c)) return true;
    if (c.target_func != kNone && c.target_func != c.func && seen.insert(c.target_func).second)
      stack.push_back(c.target_func);
  }
  while (!stack.empty()) {
    Id f = stack.back();
    stack.pop_back();
    for (int ci : func_calls_[f]) {
      budget::tick();
      const CallSite& c = calls[ci];
      if (pred(c)) return true;
      if (c.target_func != kNone && seen.insert(c.target_func).second) stack.push_back(c.target_func);
    }
  }
  return false;
}

bool Facts::loop_memo(int which, int loop, const std::function<bool(const CallSite&)>& pred) const {
  signed char& memo = loop_memo_[which][static_cast<size_t>(loop)];
  if (memo < 0) memo = loop_reaches(loop, pred) ? 1 : 0;
  return memo == 1;
}
bool Facts::loop_reaches_backward(int loop) const {
  return loop_memo(0, loop, [this](const CallSite& c) { return is_backward(c); });
}
bool Facts::loop_reaches_backprop(int loop) const {
  return loop_memo(1, loop, [this](const CallSite& c) { return is_backprop(c); });
}
bool Facts::loop_trains(int loop) const {
  return loop_memo(2, loop, [this](const CallSite& c) { return is_backprop(c) || optimizer_of_step(c) != kNone; });
}

bool Facts::is_eval_function_name(std::string_view name) const {
  for (const auto& n : cfg.eval_function_names)
    if (n == name) return true;
  // Test functions (`test_*`) are not evaluation functions by their name alone.
  if (starts_with(name, "test_") && name != "test_epoch"sv && name != "test_one_epoch"sv && name != "test_loop"sv)
    return false;
  bool pytest_name = starts_with(name, "test_") || name == "test"sv;
  auto toks = name_tokens(name);
  for (const auto& t : toks) {
    if (in(t, {"validate", "validation", "valid", "val", "evaluate", "evaluation", "eval", "infer",
               "inference", "predict", "prediction", "predictions", "sample", "sampling", "generate",
               "generation", "accuracy"}))
      return true;
    if (t == "test"sv && !(pytest_name && is_test_file) && name != "test_step"sv) {
      // `test`, `test_epoch`, `run_test` outside pytest files
      if (!starts_with(name, "test_") || name == "test_epoch"sv || !is_test_file) return true;
    }
  }
  return false;
}

bool Facts::is_eval_source(Id iter) const {
  if (iter == kNone) return false;
  bool found = false;
  for_each_expr(m, iter, [&](Id x) {
    if (found) return false;
    const Expr& ex = e(x);
    if (ex.kind == ExprKind::Lambda || ex.kind == ExprKind::Comprehension) return false;
    // What a name says of the data: an evaluation split, a collection of data.
    // (A loop over a lone name, `for x in test:`, reads it as data; a key or a collection
    // must say so: `results["val"]` is no split of data.)
    auto reading = [&](std::string_view name, bool& evalish, bool& dataish, bool lone_name_is_data) {
      for (const auto& n : cfg.eval_loader_names)
        if (n == name) evalish = dataish = true;
      auto toks = name_tokens(name);
      if (toks.size() == 1 && lone_name_is_data) dataish = true;
      static constexpr std::string_view kEvalWords[] = {
          "val", "valid", "validation", "test", "testing", "eval", "evaluation", "dev", "infer",
          "inference", "predict", "prediction", "holdout", "heldout"};
      static constexpr std::string_view kDataWords[] = {
          "loader", "dataloader", "dl", "data", "dataset", "ds", "iter", "iterator", "batches", "set",
          "split", "samples", "examples", "images", "loaders", "gen", "stream", "queue", "datasets",
          "dataloaders"};
      auto one_of = [](std::string_view t, const auto& words) {
        return std::find(std::begin(words), std::end(words), t) != std::end(words);
      };
      for (const auto& t : toks) {
        if (one_of(t, kEvalWords)) evalish = true;
        if (one_of(t, kDataWords)) dataish = true;
        // Written as one word: `testloader`, `validloader`, `valset`, `testdata`.
        for (std::string_view w : kEvalWords)
          if (t.size() > w.size() && std::string_view(t).substr(0, w.size()) == w &&
              one_of(std::string_view(t).substr(w.size()), kDataWords))
            evalish = dataish = true;
      }
    };
    if (ex.kind == ExprKind::Name || ex.kind == ExprKind::Attribute) {
      bool evalish = false, dataish = false;
      reading(ex.text, evalish, dataish, true);
      if (evalish && dataish) found = true;
      return !found && ex.kind == ExprKind::Attribute;
    }
    // A split chosen by a written-out key of a collection of data: `dataloader["val_loader"]`,
    // `loaders["test"]` (the key names the split, the key or the collection names data).
    if (ex.kind == ExprKind::Subscript && ex.kids.size() == 2) {
      const Expr& key = e(ex.kids[1]);
      const Expr& of = e(ex.kids[0]);
      if (key.kind == ExprKind::Literal && key.lit == LitKind::String &&
          (of.kind == ExprKind::Name || of.kind == ExprKind::Attribute)) {
        bool evalish = false, key_data = false, of_eval = false, of_data = false;
        reading(key.text, evalish, key_data, false);
        reading(of.text, of_eval, of_data, false);
        if (evalish && (key_data || of_data)) found = true;
      }
      return !found;
    }
    return true;
  });
  return found;
}

}  // namespace ll
