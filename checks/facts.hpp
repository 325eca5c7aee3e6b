// Facts about one module that several checks share, computed once per file: every call
// with its loop and grad-mode context, loops, name bindings, which values are models and
// optimizers, the file's call graph and interprocedural grad mode.
#pragma once

#include <deque>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "checks/project.hpp"
#include "rules/budget.hpp"
#include "rules/config.hpp"
#include "rules/finding.hpp"
#include "rules/model.hpp"

namespace ll {

inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
inline bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// `s == "name"sv` compares lengths first; `std::string == const char*` runs strlen and an
// out-of-line compare on every call (the checks ask millions of such questions).
using namespace std::string_view_literals;

class Flow;

// Does the qualified callee build a torchvision model (`torchvision.models.resnet18`,
// `models.get_model(name)`)? Not a weights enum nor what it hands out: the preprocessing preset
// of `ResNet18_Weights.IMAGENET1K_V1.transforms()` holds no parameters.
inline bool torchvision_model_builder(std::string_view q) {
  if (!starts_with(q, "torchvision.models.")) return false;
  for (size_t b = 0, e; b < q.size(); b = e + 1) {
    e = q.find('.', b);
    if (e == std::string_view::npos) e = q.size();
    const std::string_view part = q.substr(b, e - b);
    if (ends_with(part, "Weights") || part == "transforms"sv || part == "get_weight"sv ||
        part == "get_model_weights"sv || part == "list_models"sv || part == "get_model_builder"sv)
      return false;
  }
  return true;
}

// Is `s` one of `set`? (Name tables of the checks.)
inline bool in(std::string_view s, std::initializer_list<std::string_view> set) {
  for (auto x : set)
    if (x == s) return true;
  return false;
}

struct Loop {
  Id stmt = kNone;   // For/While statement, or
  Id comp = kNone;   // a comprehension expression
  Id func = kNone;   // enclosing function (kNone: module level)
  int parent = -1;   // enclosing loop in the same function
  Id iter = kNone;   // iterable (For / first comprehension clause); kNone for While
  Range range;
  std::vector<int> calls;  // call sites directly or transitively (nested loops) inside
  std::vector<Id> stmts;   // statements inside (all nesting levels, not nested defs)
};

struct CallSite {
  Id call = kNone;
  Id stmt = kNone;       // innermost statement containing the call
  Id func = kNone;       // enclosing function
  int loop = -1;         // innermost enclosing loop in this function
  bool local_off = false;  // grad disabled by a construct inside the function
  bool grad_set = false;   // inside a `with` of the function that sets grad mode on purpose:
                           // `torch.enable_grad()`, `torch.set_grad_enabled(<not False>)`
  bool in_lambda = false;
  int try_handler = -1;  // index into Facts::handlers when inside an except clause
  Id target_func = kNone;  // same-file function this call resolves to
  Id guard = kNone;        // condition of the innermost `if` around the call inside its loop
  int guard_chain = -1;    // every `if` around the call inside its loop: Facts::guards()
};

struct StmtSite {
  Id stmt = kNone;
  Id func = kNone;
  int loop = -1;
  bool local_off = false;
};

struct HandlerSite {
  Id try_stmt = kNone;
  int index = 0;  // handler index in the Try statement
  Id func = kNone;
  int loop = -1;
};

class Facts {
 public:
  Facts(const Module& m, const Config& cfg, const std::string& path, const ProjectView* project = nullptr);
  ~Facts();
  Facts(const Facts&) = delete;
  Facts& operator=(const Facts&) = delete;

  // The flow-sensitive core (checks/flow.hpp): control-flow graphs, reaching bindings,
  // liveness. Built lazily.
  const Flow& flow() const;
  // Innermost statement containing an expression (kNone for decorators' own scope etc.).
  Id stmt_of(Id expr) const { return expr < expr_stmt_.size() ? expr_stmt_[expr] : kNone; }
  // Conditions of every `if` between the call and its innermost loop, innermost first
  // (an `else` branch is reported with the same condition).
  std::vector<Id> guards(const CallSite& c) const;

  // What other files of the run know about this one (null when analysed alone).
  const ProjectView* project = nullptr;
  // This file's contribution to the cross-file facts.
  FileSummary summarize() const;
  // Is the Dataset class handed to a DataLoader with workers in another file?
  bool used_with_workers_elsewhere(Id cls) const;

  const Module& m;
  const Config& cfg;
  std::string path;
  bool is_test_file = false;  // under tests/ (or conftest.py); test_*.py, *_test.py unless shows_no_test()

  std::vector<Loop> loops;
  std::vector<CallSite> calls;
  std::vector<StmtSite> stmt_sites;     // every statement, in source order
  std::vector<HandlerSite> handlers;
  std::unordered_map<Id, int> call_index;  // call expr -> index in calls
  std::unordered_map<Id, int> stmt_index;  // stmt -> index in stmt_sites
  std::vector<std::vector<int>> calls_in_stmt;  // stmt id -> its own call sites, in order

  // ---- grad mode
  bool func_entry_off(Id func) const { return func == kNone ? false : entry_off_[func]; }
  // A method of a class whose constructor leaves grad off for the thread: weak evidence that
  // it runs with grad off (note_constructor_grad_off).
  bool constructor_grad_off(Id func) const { return func != kNone && func < ctor_off_.size() && ctor_off_[func]; }
  // A method decided by the calls that name it (`decoder.generate(...)` in this file or
  // another): no call resolves to it, and Python does not invoke it implicitly (forward,
  // dunders).
  bool called_by_name(Id func) const;
  // The innermost function whose definition holds the byte `pos` (kNone at module level).
  Id function_at(uint32_t pos) const;
  bool grad_off(const CallSite& c) const { return c.local_off || func_entry_off(c.func); }
  bool grad_off(const StmtSite& s) const { return s.local_off || func_entry_off(s.func); }
  bool decorated_off(Id func) const { return decorated_off_[func]; }
  // A module-level decorator of this file whose returned wrapper calls the function it
  // wraps with grad disabled.
  bool wraps_with_grad_off(Id deco) const;
  // Why a function runs with grad disabled ("decorated with @torch.no_grad()", ...).
  std::string entry_off_reason(Id func) const;

  // ---- names and values
  const Expr& e(Id id) const { return m.e(id); }
  // "self.model", "" if not a name chain. Computed once per expression; the reference stays
  // valid as long as the Facts.
  // (Inline: an expression asked again, the common case, costs a lookup.)
  const std::string& dotted(Id expr) const {
    if (expr < dotted_memo_.size()) {
      const uint32_t memo = dotted_memo_[expr];
      if (memo >= 2) return dotted_strings_[memo - 2];
      if (memo == 1) return kEmptyName;
    }
    return compute_dotted(expr);
  }
  std::string_view last_component(std::string_view dotted) const;
  const std::string& qual(Id expr) const { return m.exprs[expr].qname; }
  // Qualified name of a call's callee; the method name for `x.m(...)`, else "". (Inline: asked
  // in every scan over a file's calls, and counted for the budget.)
  const std::string& callee_qual(Id call) const {
    budget::tick();
    if (call == kNone || e(call).kind != ExprKind::Call) return kEmptyName;
    return qual(e(call).kids[0]);
  }
  // The qualified names call `call`'s callee may have through the file's star imports
  // (`from utils.utils import *`, then `compute_loss(p, t)`: "utils.utils.compute_loss"), as the
  // project's join keys what it learns of another module's functions (FileSummary::imported_calls):
  // a bare name that nothing in `func` or the file binds. Absolute imports only; empty otherwise.
  std::vector<std::string> star_quals(Id call, Id func) const;
  const std::string& callee_attr(Id call) const {
    if (call == kNone || e(call).kind != ExprKind::Call) return kEmptyName;
    const Expr& c = e(e(call).kids[0]);
    return c.kind == ExprKind::Attribute ? c.text : kEmptyName;
  }
  static const std::string kEmptyName;
  Id callee_receiver(Id call) const;                 // `x` of `x.m(...)`, else kNone
  Id arg(Id call, size_t pos, std::string_view kw = {}) const;  // kNone if absent
  bool has_kwargs_splat(Id call) const;
  // The keywords every `**name` of the call passes, when each such name is bound only to dict
  // displays with string keys (`kwargs = {"num_workers": 1, "pin_memory": True} if cuda else
  // {}`) and read nowhere else in its function (no `kwargs["sampler"] = s`, no update()):
  // true and the keys in `*keys`; false when any splat could pass anything.
  bool splat_keys(Id call, std::vector<std::string>* keys) const;
  // Values assigned to `dotted` in `func` (then class attributes, then module level).
  std::vector<Id> bindings(Id func, const std::string& dotted) const;
  // The same, restricted to the bindings that can reach expression `at` (flow-sensitive,
  // through Flow::reaching); falls back to bindings() when `at` is not in `func`'s graph.
  std::vector<Id> bindings_at(Id func, const std::string& dotted, Id at) const;
  // Values assigned to `dotted` by `func`'s own statements only (no class, enclosing or
  // module-level fallback): empty when the function does not bind it.
  std::vector<Id> own_bindings(Id func, const std::string& dotted) const;
  // The function's only calls are commented out (`# self.get_DBindex(x, labels)`) and nothing
  // else in the file names it: code the author switched off. Python only.
  bool switched_off(Id func) const;
  // Is `name` a parameter of `func` (false at module level)?
  bool is_param(Id func, std::string_view name) const;
  // Does the function bind the name itself (a parameter, an assignment, a loop target, an
  // import, a nested def): a read of it there is of that local, not of a module-level name?
  bool binds_locally(Id func, const std::string& name) const {
    return func != kNone && (is_param(func, name) || bound_names_[func].count(name) != 0);
  }
  // Literal value visible for an expression: the expression itself when a literal, or the
  // single literal assigned to a plain name in the same function.
  const Expr* literal_of(Id expr, Id func) const;

  bool is_model_value(Id func, Id expr) const;
  // A model only by the last-resort name heuristic (`model`, `net`, `build_model(...)`):
  // nothing the file binds to it says so. Findings that rest on it say so.
  bool model_by_name(Id func, Id expr) const;
  // Calls of `callee` build modules (a model class handed in and kept under a model's name):
  // a result annotated `nn.Module`, or whose `state_dict()` / `parameters()` the file reads.
  bool builds_modules(Id callee) const;
  bool is_model_call(const CallSite& c) const;       // a forward: model(x) / model.forward(x)
  bool func_is_method_of_module(Id func) const;
  // Is a same-file caller of `func` a function that back-propagates?
  // Does the caller back-propagate through what call `c` returned, in its own function?
  bool result_back_propagated(const CallSite& c) const;
  // The `.detach()` (no argument) called on call `c`'s result in its own statement
  // (`z = encoder(x).detach()`), or kNone: nothing back-propagates through that result.
  Id detach_of(const CallSite& c) const;
  // The receiver `x` is an object of an imported library (torch.distributions, NumPy, ...).
  bool from_library(Id func, Id x) const;
  bool called_from_training(Id func) const;
  // A method of a module class that the class's forward() calls (directly or through its
  // other methods).
  bool part_of_forward(Id func) const;
  // `forward` (or a `forward_*` variant) of a module class, or a method that forward calls: the
  // module's own computation,
  // which runs in whatever grad mode its caller set.
  bool in_module_forward(Id func) const;
  // A torch.nn layer class with no parameters (`Sigmoid`, `Dropout`, `MaxPool2d`).
  static bool parameter_free_layer(std::string_view cls);
  // A class named like a loss or a metric (`FocalLoss`, `DiceScore`): not a model to run.
  static bool loss_or_metric_class(std::string_view cls);
  // Does the class build torch.nn layers, parameters or modules of the file in its methods (or
  // derive from something other than nn.Module)? Not a wrapper of another framework's model.
  bool builds_layers(Id cls) const;
  // A module class of the file that owns no parameters: derives from nn.Module itself and
  // keeps only plain tensors and values (`self.w = torch.zeros(v)`).
  bool parameterless_class(Id cls) const;
  // The `forward` of the module class of the file behind a forward's receiver (`Net()` built in
  // the call, or an instance `func` binds); kNone when the file does not show it.
  Id forward_of(Id func, Id receiver) const;
  // Does every `return` of the forward behind forward call `call` (its module class in this
  // file) hand back element `k` without history: detached (`return self.proj(out), hid.detach()`,
  // `tuple(map(lambda h: h.detach(), hid))`), a new leaf (`torch.tensor(total_flops)`), a
  // number or `.item()`? A language model that truncates its own state; a FLOP count.
  // (Also a forward of a module class another module of the project defines, which its
  // summary says returns element `k` so: FileSummary::detached_forward_elements.)
  bool forward_returns_detached(Id func, Id call, size_t k) const;
  // The elements every `return` of forward `fw` hands back without history, as above.
  std::vector<int> detached_elements(Id fw) const;
  // Methods of the file that keep their first argument on their object (`AverageMeter.update`:
  // `self.sum += val * n`): their names and, as "#<function id>", the methods themselves.
  // Computed once per file, for LL102 and the cross-file summary.
  const std::unordered_set<std::string>& accumulating_methods() const;
  // A `Test*` class that is test code: no base, a test base, or `test*` methods.
  bool test_class(Id cls) const;
  // Validation / test steps of a class whose training step a runner back-propagates.
  void mark_framework_steps();
  // Test code: a test file (test_*.py, *_test.py, tests/...) or a method of a `Test*` class;
  // with `by_name`, also a function named like a test (`test_*`, `testFoo`, `TestFoo`, or
  // nested in one): a self-check. A Python function named exactly `test` that is handed what it
  // runs (`def test(model, device, test_loader)`, not sets_up_its_inputs) is the program's
  // evaluation phase instead.
  // It runs once, on small inputs, to check behaviour (docs/impact.md).
  bool in_test_code(Id func, bool by_name = false) const;
  // Is the function handed nothing to run (no parameter but `self`, or only literal defaults),
  // or does it assert what it checks, as a pytest function handed fixtures does?
  bool sets_up_its_inputs(Id func) const;
  // The program reads the value as a NumPy array with its history intact (`out.cpu().numpy()`,
  // `torch.cat(outs).numpy()`; no `.detach()`, `.data` or cast to an integer type on the
  // way), which raises for a tensor that requires grad: the value carries no history.
  // `value` is a call (the forward itself) or, with `name`, a name read in `func` after `after`.
  // Tensor methods whose result keeps the receiver's history (and its values): moves, casts
  // to a float dtype, views, copies (`.cpu()`, `.to(device)`, `.view(...)`, `.clone()`).
  static bool keeps_history_method(std::string_view attr);
  // The value `x` is a copy or a view of: down through such methods, subscripts and `.T`
  // (`x_t.cpu()`, `h[:, -1].clone()` -> `x_t`, `h`); `x` itself when it is none.
  Id history_base(Id x) const;
  bool read_as_numpy(Id func, Id value, const std::string& name = "", uint32_t after = 0) const;
  // A forward whose output is read so (`model(x).cpu().numpy()`, or `out = model(x)` ...
  // `out.numpy()`): it records no graph (grad is disabled where it runs, or the model is frozen).
  bool output_read_as_numpy(const CallSite& c) const;
  // The class's own `forward` is decorated to run with grad disabled (`@torch.no_grad()`,
  // `@torch.inference_mode()`, a project decorator that does so).
  bool forward_decorated_off(Id cls) const;
  // The class's constructor switches off every parameter it holds: `for p in
  // self.parameters(): p.requires_grad = False` (or `self.requires_grad_(False)`), or the same
  // with a parameter whose default is `False` (`def __init__(self, ..., requires_grad=False)`,
  // vendored pytorch_fid's InceptionV3), then `*param` names it: a construction that passes it
  // may switch them back on.
  bool constructor_freezes(Id cls, std::string* param = nullptr) const;
  // Is `self.<attr>` of class `k` only data (`self.labels[i]`, `i != self.blank`): no method
  // calls it, calls a method on it, or hands it to a call? A module handed to the constructor
  // is run or handed on somewhere; a vocabulary, a setting or a flag is read.
  bool data_attribute(Id k, const std::string& attr) const;
  // Calling an instance of the class records no graph: its forward is decorated off, or its
  // constructor freezes it and `construction` (a call of the class, or kNone) does not pass
  // the switch.
  bool graph_free_class(Id cls, Id construction = kNone) const;
  // A module class that is one linear layer: its `forward` returns `self.fc(x)` of its input,
  // `self.fc` an `nn.Linear` (a linear probe), or whose forward runs every other part of it
  // under `torch.no_grad()` (linear_past_grad_off).
  bool one_linear_class(Id cls) const;
  bool linear_probe_class(Id cls) const;  // the first form only
  bool linear_past_grad_off(Id fwd) const;
  // `nn.Linear(...)` (through `.to(device)` and the like).
  bool linear_layer(Id value) const;
  // `obj` (read in `func`) holds an instance of such a class: of this file, or imported from
  // another project module (ProjectView::grad_off_forward_classes). Calling it records no graph.
  bool forward_grad_off(Id func, Id obj, int depth = 0) const;
  // The parameter `name` of `func` is annotated with such a class (`model: Transformer`).
  bool annotated_grad_off(Id func, const std::string& name) const;
  // A call site that does not decide `func`'s entry grad mode: its own recursion, or test
  // code calling production code.
  bool neutral_caller(const CallSite& c, Id func) const;
  // The methods (by name) whose entry grad mode other files' calls may decide and that
  // reach `funcs` (the functions holding findings): their own names and those of the
  // same-file callers, with grad not turned off, they are reached from.
  std::vector<std::string> open_methods(std::vector<Id> funcs) const;
  bool is_function_name(Id func, const std::string& name) const;
  bool not_a_torch_model(Id receiver) const;
  // Obtained by loading weights, here or (a parameter) in what every caller of the file hands in.
  bool is_loaded_model(Id func, Id expr) const;
  // Weights are loaded into the name itself (`net.load_state_dict(...)`, C++ `torch::load(net,
  // path)`) in `func` or at module level, whether or not it is switched to eval mode after.
  bool weights_loaded_into(Id func, Id expr) const;
  // Does the function hand back a loss (a returned name, attribute or call named like one, or
  // the function named like one: `compute_loss`, C++ `loss()`)?
  bool returns_a_loss(Id func) const;
  // Interprocedural summaries (same file): the values a function returns, and the function
  // a call resolves to (kNone for unresolved calls and recursion).
  const std::vector<Id>& returned_values(Id func) const;
  Id same_file_target(Id call, Id func) const;
  // The top-level function / class of this name in effect at byte `pos` (a notebook may
  // define one twice): the last definition before `pos`, else the last one. kNone if none.
  Id module_func_at(const std::string& name, uint32_t pos) const;
  Id class_at(const std::string& name, uint32_t pos) const;
  // The method `name` of a same-file class or of its same-file bases (kNone if none).
  Id method_in(Id cls, const std::string& name) const;
  // The same-file class a call constructs (`GradCAM(model)`), kNone otherwise.
  Id constructed_class(Id call) const;
  Id same_file_base(Id cls) const;  // the class of this file that `cls` names as a base (kNone if none)
  // The same-file class whose instance the name `obj` holds in `func`: every binding of it
  // is a construction of that class (`cam = GradCAM(model)`). kNone when unknown or mixed.
  Id instance_class(Id func, Id obj) const;
  // The class of another module that every value in `values` builds (`agent = Agent(4, 2)` with
  // `from agent import Agent`), qualified as the file imports it: "" when a value is no such
  // call, the class is torch's, or two values build different classes.
  std::string imported_class_built_by(const std::vector<Id>& values) const;
  // The module a forward call runs: `m` of `m(x)` and of `m.forward(x)`.
  Id forward_receiver(Id call) const;
  // A library call that runs the model it is handed, as its forward (MONAI's
  // `sliding_window_inference(inputs, roi, n, model)`, `inferer(inputs, model)` of a
  // `monai.inferers` inferer): the model argument; kNone otherwise.
  Id runner_model(Id call) const;
  // The object under placement and mode calls: `Extractor(model)` of
  // `Extractor(model).to(device).eval()`.
  Id unplaced(Id v) const;
  // Is value `v`, bound to `d`, the object `d` already held: moved or switched
  // (`rnn = rnn.to(device)`) or wrapped so that calling it runs the same forward
  // (`model = DDP(model, ...)`, `torch.compile(model)`)?
  bool same_object(Id v, const std::string& d) const;
  // Do the two calls of one function run on paths that exclude each other: the two sides of
  // one `if`, or `if`s with complementary conditions (`x == v` / `x != v`, `x is None` /
  // `x is not None`, `not x` / `x`)?
  bool exclusive_paths(const CallSite& a, const CallSite& b) const;
  // The call sites inside `func` (kNone: module level), in source order.
  const std::vector<int>& calls_in(Id func) const { return func_calls_[func == kNone ? m.funcs.size() : func]; }
  // The statements of a function (kNone: module level), in the order of stmt_sites.
  const std::vector<Id>& stmts_in(Id func) const { return func_stmts_[func == kNone ? m.funcs.size() : func]; }
  // The block holding statement `stmt` of `func`: the body (or else, finally, handler body) of
  // a statement of the function, else its top level (`*top` holds it then).
  const std::vector<Id>& block_holding(Id func, Id stmt, std::vector<Id>* top) const;
  // Does statement `stmt` of `func` run before position `at` on every path that reaches it: is
  // `at` after `stmt`, in the block that holds `stmt` (not in another branch of an `if`)?
  // (Early exits between the two are not looked at.)
  bool precedes_in_its_block(Id func, Id stmt, uint32_t at) const;
  // Indices built on first use, for questions asked once per statement that would otherwise
  // walk the whole file each time: the calls that back-propagate (is_backprop), in source
  // order; the functions (kNone: module level) whose assignments bind `dotted` (`self.losses =
  // []`), in source order; the loops directly in `func`; the functions nested in `func`, at
  // any depth.
  const std::vector<int>& backprop_calls() const;
  const std::vector<Id>& assigning_functions(const std::string& dotted) const;
  const std::vector<int>& loops_in(Id func) const;
  const std::vector<Id>& nested_functions(Id func) const;
  // The calls that resolve to `func` (CallSite::target_func), in source order.
  const std::vector<int>& calls_to(Id func) const;
  // The calls that build an object of the file's class `cls` (`Evaluator(pipe)`), in source order.
  const std::vector<int>& constructions_of(Id cls) const;
  // The same-file class of the objects every same-file caller of `func` passes as its
  // parameter `param` (kNone when unknown, mixed, or no caller).
  Id argument_class(Id func, const std::string& param) const;
  // What every same-file caller of `func` passes for `param`: (calling function, argument
  // expression) per call site; empty when there is no caller or one passes nothing visible
  // for it (a default, `*args`). The callers of a class's `__init__` are its constructions.
  // (`absent_none`: a call that leaves out a parameter whose default is None hands in nothing,
  // and is skipped rather than making the answer unknown.)
  std::vector<std::pair<Id, Id>> argument_values(Id func, const std::string& param, bool absent_none = false) const;
  // The same-file call sites (indices into calls) that resolve to `func`.
  const std::vector<int>& callers(Id func) const { return callers_[func]; }
  // The argument `call` passes for parameter `param` of `func`: by position (after `self` for
  // a method) or by keyword; kNone when it passes none or a `*args` stands there.
  Id argument_for(Id call, Id func, std::string_view param) const;
  bool is_optimizer(Id func, Id expr) const;
  // For `opt.step()` / `scaler.step(opt)`: the optimizer expression; kNone otherwise.
  Id optimizer_of_step(const CallSite& c) const;
  // Is a function so named a factory of optimizers (`build_optimizer`, `create_optimizer_v2`)?
  static bool optimizer_factory_name(std::string_view name);
  // For `x.zero_grad()`: the optimizer reset, or kNone with *all = true for model resets.
  bool is_grad_reset(const CallSite& c, Id* optimizer) const;
  bool is_backward(const CallSite& c) const;          // loss.backward(), autograd.backward
  // `diffopt.step(loss)` of a differentiable optimizer (higher, torchopt): a backward too.
  bool differentiable_step(const CallSite& c) const;
  bool is_backprop(const CallSite& c) const;          // backward or torch.autograd.grad
  // A call the run does not show, handed a loss and an optimizer (`loss_scaler(loss, optimizer,
  // ...)`): it back-propagates the loss (is_backward counts it).
  bool handed_loss_and_optimizer(const CallSite& c) const;
  bool is_torch_call(Id call, std::initializer_list<std::string_view> qnames) const;

  // Same-file functions reachable from a call site / a function (transitively).
  bool reaches(Id func, const std::function<bool(const CallSite&)>& pred) const;
  bool loop_reaches(int loop, const std::function<bool(const CallSite&)>& pred) const;
  // loop_reaches for the questions most checks ask, memoised per loop: asked once per call
  // site of a loop, they must not cost the loop's size each time.
  bool loop_reaches_backward(int loop) const;  // is_backward
  bool loop_reaches_backprop(int loop) const;  // is_backprop
  bool loop_trains(int loop) const;            // is_backprop or an optimizer step

  // Functions by name at module level, methods by class.
  Id class_of(Id func) const { return func == kNone ? kNone : m.funcs[func].cls; }
  bool class_derives(Id cls, std::initializer_list<std::string_view> base_suffixes) const;
  bool is_module_class(Id cls) const;  // derives from torch.nn.Module (or Lightning)
  // A record of plain values: a same-file `@dataclass` (or `NamedTuple`) whose every annotated
  // field is a str, int, float, bool or None, a container of those, or another such record.
  // Its instances hold no tensor, whatever they were computed from (a cost model's
  // `_Fragment(op_name=..., mac_count=...)`).
  bool plain_record_class(Id cls, int depth = 0) const;
  // Does call `call` build such a record: its constructor, or a same-file function whose every
  // return builds one (`self._make_fragment(stage, module, x, out)`)?
  bool builds_plain_record(Id call, Id func) const;

  // Does the function (or the module when kNone) call .eval() on `dotted` before `before`, and
  // (`before` a position, not UINT32_MAX: anywhere) not switch it back with `.train()` between
  // the two, in source order?
  bool eval_called_before(Id func, const std::string& dotted, uint32_t before) const;
  // The switch that eval_called_before found, as the code spells it: `d.eval()`, or
  // `d.train(False)` when that is how the last one before `before` is written.
  std::string eval_switch(Id func, const std::string& d, uint32_t before) const;
  // The position of the last eval switch of `d` in `func` before `before` (false when none).
  bool last_eval_before(Id func, const std::string& d, uint32_t before, uint32_t* last) const;
  // Does a method of `func`'s class other than `func` call .eval() on `dotted` (a predictor's
  // constructor: `self.net = Net(); self.net.eval()`)? Asked once per (class, attribute).
  bool another_method_evals(Id func, const std::string& dotted) const;
  // The module `dotted` has all its parameters switched off before `pos` in `func`, in
  // source order: `model.eval().requires_grad_(False)`, `m = copy.deepcopy(G).requires_grad_(False)`,
  // `for p in model.parameters(): p.requires_grad = False`; undone by `requires_grad_(True)`
  // or by assigning a new submodule (`model.fc = nn.Linear(...)`). Its forward records no
  // graph from its parameters.
  bool frozen_at(Id func, const std::string& dotted, uint32_t pos, int depth = 0) const;
  // Frozen that way somewhere in the file.
  bool frozen_anywhere(const std::string& dotted) const;
  // A method of class `cls` leaves its attribute `dotted` frozen (`self.model.requires_grad_(False)`
  // in the constructor). Asked once per (class, attribute).
  bool class_freezes(Id cls, const std::string& dotted) const;
  // requires_grad switched back on for `dotted` in `func` or at the module level
  bool unfrozen_in(Id func, const std::string& dotted) const;
  std::string frozen_but_for_at(Id func, const std::string& dotted, uint32_t pos) const;
  // For a freeze loop's test on a parameter's name `name` that keeps one module trainable
  // (`name not in ["fc.weight", "fc.bias"]`, `not name.startswith("fc")`): that module ("fc").
  std::string kept_by_name_test(Id cond, const std::string& name) const;
  int returns_frozen(Id call, std::string* part) const;

  bool file_trains() const { return file_trains_; }  // any backward(), autograd.grad() or optimizer step
  // A training framework's fit (`learn.fit_one_cycle(5)`, `trainer.fit(model)`): it
  // back-propagates inside the library.
  bool framework_fit(const CallSite& c) const;
  // A call of an object of another module's class whose called method back-propagates
  // (ProjectView::backprop_method_imports): the loop or file that makes it trains.
  bool imported_backprop_call(const CallSite& c) const;
  // A module-level function that runs at most once per program run: every call of it in the
  // run is a statement outside loops at the top level of the file (a main guard's
  // `load_demo()`), or in a function that itself runs once that way; or a script (a file
  // with a main guard) that nothing in the run calls it from (a demo commented out there).
  bool runs_at_most_once(Id func, int depth = 0) const;
  // A top-level `if` whose condition mentions "__main__" (a script's main guard).
  bool has_main_guard() const;
  // A name (`device`) whose every value in its scope is the CPU device.
  bool cpu_device_name(Id expr) const;
  // A device the code is handed, not one it picks (Python): a parameter of the function reading
  // it that the function never rebinds (`def fit(model, loader, device)`), or `self.<name>` that
  // every method binds only from such a parameter or the CPU (`self.device = device`).
  bool handed_device(Id expr) const;
  bool follows_a_tensor(Id x) const;  // `x.device` of a parameter, `next(m.parameters()).device`
  // `"cpu"`, `torch::kCPU`, `torch.device("cpu")`, `torch::Device(torch::kCPU)`.
  bool cpu_device_value(Id expr) const;
  // What `func` reads for `d`: its own bindings, or, for a name it neither binds nor takes as a
  // parameter (and no attribute of `self`), the module's (`device = "cpu"` at a script's top).
  std::vector<Id> own_or_global_bindings(Id func, const std::string& d) const;
  // A test that is always false: a plain name only ever bound to False, 0 or None (and no
  // function's parameter), `not` of one only ever bound to True (`force_cpu = True`), or an
  // `and` holding such a test (`torch.cuda.is_available() and not force_cpu`).
  bool always_false(Id test) const;
  // In a file that imports another framework beside torch: a call in a function that framework
  // compiles (`@tf.function`), or a call made the Keras way (`model(x, training=False)`) on a
  // receiver not known to be a torch module.
  bool another_frameworks_call(const CallSite& c) const;
  // Is the device `x` the CPU where it is read: `"cpu"`, `torch.device("cpu")`, or a name or
  // attribute that every path binds to one right there (`args.device = "cpu"` earlier in the
  // iteration, whatever it held before)? A parameter or an attribute set elsewhere may hold a GPU.
  bool cpu_device_at(Id x) const;
  // Impact policy: a program (a notebook, a script with top-level loops or a main guard, a
  // C++ file with main()) in which nothing can place a tensor on a GPU: no CUDA, GPU,
  // device or accelerator name, string or API, no distributed or Lightning-style trainer.
  // Memory claims there are about host RAM of a CPU run. Modules that only define
  // functions are never CPU-only programs: their callers may run them on a GPU.
  // Computed on the first question (a scan of every expression): only files with a memory
  // finding ask.
  bool cpu_only_program() const {
    if (cpu_only_program_ < 0) cpu_only_program_ = compute_cpu_only_program() ? 1 : 0;
    return cpu_only_program_ == 1;
  }
  // A Jupyter notebook (`.ipynb`), lowered cell by cell into one module.
  bool is_notebook() const;
  // A notebook, a script with top-level loops or a main guard, or whose top level calls a
  // function (or a method of an object of a class) of the file that loops or runs a model; a
  // C++ file with main().
  bool is_program() const;
  // A Python file with nothing of a test: no test framework import, no test_* function, no
  // Test* class. A test-like file name alone does not make it test code.
  bool shows_no_test() const;
  // Is module-level function `func` called by the program's code: by name from this file, or
  // from another module of the run (ProjectView::called_tests)? Then a `test_*` function is
  // a helper of the program (`test_all_case(net, images)` of a `test_util.py`), not a pytest
  // test, which only pytest calls.
  bool called_by_code(Id func) const;
  // Python: a top-level function whose name is read as a value (`pool.map(work, items)`,
  // `callbacks=[log]`) where that read reaches this definition: what receives it calls it.
  bool handed_on(Id func) const;
  // Anything in the file that can place a tensor on a GPU (the evidence cpu_only_program()
  // reads), wherever it is; the project-level policy asks every file (FileSummary).
  bool has_gpu_evidence() const;
  // The same question at a point of the program: a top-level statement (a notebook cell's
  // loop, a script's line) that ends before the first GPU evidence of the file runs on the
  // CPU, whatever later cells do (a tutorial that moves to CUDA in its last section). Code
  // in functions and classes is decided by the whole file.
  bool cpu_only_at(uint32_t pos) const;

  static std::vector<std::string> name_tokens(std::string_view name);
  // A name that says loss (`loss`, `criterion`, `nll`, `objective`, as one of its words).
  static bool named_like_a_loss(std::string_view name);
  // Does every `return` of `fn` hand back a Python number (`self.loss.item()`, `float(x)`, a
  // literal, a display of them) or a fresh object of a class of the file that is no module
  // (`AverageMeter()`), at least one?
  bool returns_number(Id fn) const;
  // The name a call named like a loss is looked up by across the run: a method's attribute
  // (`model.get_current_loss()`, `NLL.cal_nll_with_label(...)`) or an imported function's
  // name; "" for other calls (a parameter `criterion(out, y)`, a same-file function).
  std::string loss_call_name(Id call) const;
  // A call named like a loss whose every definition, in this file (at least one) or else in
  // the run, returns a Python number.
  bool number_loss_call(Id call) const;
  bool is_eval_function_name(std::string_view name) const;
  bool is_eval_source(Id iter_expr) const;

  // Memo of checks/dataloader.cpp's dataloader_sites(): the call sites (indices into calls)
  // that construct a DataLoader.
  mutable std::optional<std::vector<int>> dataloader_sites_memo_;
  // Memo of checks/common.cpp's assigned_in_loop(): per loop, the names it re-initialises.
  mutable std::unordered_map<int, std::unordered_set<std::string>> loop_assigned_memo_;
  // Memo of checks/common.cpp's constant_trips(): per (loop, limit), the trips.
  mutable std::map<std::pair<int, long>, long> constant_trips_memo_;
  // Memo of checks/common.cpp's carried_in_loop(): per (loop, name).
  mutable std::map<std::pair<int, std::string>, bool> carried_in_loop_memo_;

 private:
  class NumberReader;
  void walk_body(const std::vector<Id>& body, Id func, int loop, bool& off, int handler);
  void walk_stmt(Id sid, Id func, int loop, bool& off, int handler);
  void walk_expr(Id root, Id stmt, Id func, int loop, bool off, int handler, bool in_lambda);
  int push_loop(Loop l);
  void note_call_in_loops(int loop, int call);
  void note_stmt_in_loops(int loop, Id stmt);
  void collect_bindings();
  void resolve_calls();
  void compute_entry_off();
  void add_dispatch_callers(std::vector<std::vector<int>>& via) const;
  bool grad_item_effect(Id item, bool* disables) const;  // for `with` items
  int grad_switch(Id call) const;
  Id compiled_function(Id func, const std::string& name, uint32_t pos) const;
  bool leaves_grad_off(Id call) const;
  bool body_leaves_grad_off(Id fid) const;  // leaves_grad_off() of the function itself
  bool loops_over_builders(const CallSite& c, const std::string& name) const;
  void note_constructor_grad_off();
  // Every return of module-level function `fn` is torch's grad-off context, or (for a function
  // of no parameters) a no-op one.
  bool returns_grad_off_context(Id fn, bool* disables) const;
  bool is_model_value_rec(Id func, Id expr, int depth) const;
  bool is_model_producer(Id func, Id value, int depth) const;
  // Is `value`, bound in `func`, known to be no torch module: a literal, container or lambda; a
  // call of another library (not torch, transformers or timm), a torch loss, optimizer or data
  // utility; what `from_pretrained` loads that is no module (a tokenizer, a diffusers pipeline,
  // whose call runs under no_grad itself), moved or not. Past depth 0 also a name whose every
  // binding is one, or a parameter for which every same-file caller hands one in.
  bool known_not_a_model(Id func, Id value, int depth) const;
  mutable std::map<std::pair<Id, std::string>, bool> param_not_a_model_;  // known_not_a_model(), per parameter
  bool name_looks_like_model(std::string_view dotted) const;
  std::vector<Id> outer_bindings(Id func, const std::string& dotted) const;

  mutable std::unique_ptr<Flow> flow_;
  mutable std::vector<signed char> leaves_grad_off_;  // per function: -1 not asked, 0 no, 1 yes
  mutable std::vector<signed char> model_call_memo_;  // is_model_call() per call expression
  // Names read as values (not called): `dataset.map(score)`, `callbacks=[log]`. Built once.
  // (Name -> positions of its reads; per read, the module-level definition of that name last
  // before it is the one handed on: a notebook redefines functions cell by cell.)
  mutable std::optional<std::unordered_map<std::string_view, std::vector<uint32_t>>> names_handed_on_;
  bool compute_is_model_call(const CallSite& c) const;
  const std::string& compute_dotted(Id expr) const;
  mutable signed char imports_inferers_ = -1;  // the file imports from monai.inferers (asked once)
  // dotted(): per expression 0 = not computed, 1 = "", k >= 2 = dotted_strings_[k - 2]
  // (a deque, so references handed out stay valid as it grows).
  mutable std::vector<uint32_t> dotted_memo_;
  mutable std::deque<std::string> dotted_strings_;
  mutable bool no_name_evidence_ = false;
  mutable std::vector<std::vector<Id>> returns_;   // returned_values(), built on first use
  mutable std::unordered_map<std::string, bool> builds_modules_;  // builds_modules(), per name
  mutable std::optional<std::vector<int>> numpy_calls_;  // `.numpy()` call sites, for read_as_numpy()
  std::vector<std::unordered_set<std::string>> bound_names_;  // per function slot: every name bound there
  bool loaded_value(Id func, Id v, int depth) const;  // model_by_name(): evaluate without name heuristics
  std::vector<Id> expr_stmt_;                      // expr -> innermost statement
  std::vector<std::pair<Id, int>> guard_nodes_;    // (condition, parent) chains
  int guard_top_ = -1;
  int grad_set_depth_ = 0;  // `with` blocks around the walk that set grad mode on on purpose

  std::vector<char> entry_off_, decorated_off_, framework_off_, ctor_off_;
  std::vector<std::vector<int>> func_calls_;          // call sites inside each function
  std::vector<std::vector<Id>> func_stmts_;           // statements inside each function
  mutable std::optional<std::unordered_set<std::string>> accumulating_methods_;
  std::vector<std::vector<int>> callers_;             // call sites targeting each function
  // Attribute calls whose callee the file cannot resolve (`decoder.generate(...)`), by the
  // attribute's name: callers of the methods so named that have no resolved caller.
  std::unordered_map<std::string, std::vector<int>> name_callers_;
  bool derives_in_file(Id cls, Id base) const;  // `cls` derives from `base` through same-file classes
  bool loaded_model_rec(Id func, Id x, int depth) const;  // is_loaded_model, `depth` calls up
  std::unordered_map<std::string, std::vector<Id>> module_funcs_;  // top-level functions
  // bindings: per function (index funcs.size() = module level) dotted -> values
  std::vector<std::unordered_map<std::string, std::vector<Id>>> bind_;
  std::vector<std::unordered_map<std::string, std::vector<Id>>> class_bind_;  // self.x
  struct Freeze {
    std::string name;
    uint32_t pos;
    bool frozen;  // false: parameters that require grad again (or a new submodule)
  };
  // A switch whose value a parameter `by` of the function sets (`p.requires_grad =
  // requires_grad`): frozen only for a caller that passes False (value_flag).
  struct ValueFreeze {
    std::string name;
    uint32_t pos;
    std::string by;
  };
  void note_freezes(const Stmt& s, Id func);
  void note_helper_freezes();
  std::unordered_map<Id, std::vector<Freeze>> freezes_;  // func -> events in source order
  // Switches whose value a parameter sets, kept apart: they freeze nothing in their own
  // function, only at the calls that pass False.
  std::unordered_map<Id, std::vector<ValueFreeze>> value_freezes_;
  static bool freezes_param(const std::vector<Freeze>& events, const std::string& p);
  // The parameter of function `g` under whose `if <flag>:` every freeze of its parameter `p`
  // lies (`if feature_extracting: for param in model.parameters(): ...`): its position, or -1.
  int freeze_flag(Id g, const std::string& p) const;
  // The parameter of `g` whose value every switch of its parameter `p` sets (ValueFreeze::by), by
  // position; -1 when the switches are literals.
  int value_flag(Id g, const std::string& p) const;
  // Does the call `call` of `g` freeze `g`'s parameter `p`, by the flags it passes?
  bool call_freezes(Id call, Id g, const std::string& p) const;
  mutable std::map<std::pair<Id, std::string>, bool> class_freezes_;
  mutable std::vector<Id> by_start_, around_;  // function_at()
  mutable std::vector<signed char> module_class_memo_;  // is_module_class(), per class: -1 not asked
  bool compute_is_module_class(Id cls) const;
  mutable std::vector<signed char> backward_memo_;  // backprop_bits(), per call expression: -1 not asked
  bool compute_is_backward(const CallSite& c) const;
  int backprop_bits(const CallSite& c) const;
  // Per (class, dotted name): at most two methods of the class with a property (the question
  // is whether one other than the asking method has it), found once by another_method().
  using ClassMemo = std::map<std::pair<Id, std::string>, std::vector<Id>>;
  template <class Candidates, class Key, class Has>
  bool another_method(ClassMemo& memo, Id func, const std::string& d, const Candidates& candidates, Key key,
                      Has has) const;
  mutable ClassMemo class_evals_;  // methods that switch the name to eval mode
  mutable std::optional<std::vector<int>> backprop_calls_;
  mutable std::optional<std::unordered_map<std::string, std::vector<Id>>> assigning_functions_;
  mutable std::vector<std::vector<int>> loops_in_;
  mutable std::vector<std::vector<Id>> nested_functions_;
  mutable std::vector<std::vector<int>> calls_to_;
  mutable std::vector<std::vector<int>> constructions_;
  std::unordered_map<Id, std::vector<std::pair<std::string, uint32_t>>> evals_;  // func -> (.eval() receiver, byte)
  std::unordered_set<uint32_t> evals_as_train_false_;  // bytes of the eval switches written `.train(False)`
  std::unordered_map<Id, std::vector<std::pair<std::string, uint32_t>>> trains_;  // func -> (.train() receiver, byte)
  bool file_trains_ = false;
  mutable std::optional<std::unordered_set<std::string_view>> called_names_;  // called_by_code()
  mutable signed char cpu_only_program_ = -1;  // -1 not computed yet
  mutable signed char is_program_ = -1;        // is_program(), memoised
  bool compute_is_program() const;
  mutable int grad_context_depth_ = 0;         // grad_item_effect through a local's bindings
  bool compute_cpu_only_program() const;
  static constexpr uint32_t kNotComputed = UINT32_MAX - 1;
  mutable uint32_t gpu_evidence_pos_ = kNotComputed;  // first_gpu_evidence(), memoised
  mutable signed char any_gpu_evidence_ = -1;          // has_gpu_evidence(), memoised
  // always_false(): per plain name, only ever bound to a false literal / to True; built on
  // first use.
  mutable std::unordered_map<std::string_view, unsigned char> flags_;  // bit 1: only false, 2: only True
  mutable std::vector<signed char> self_grad_off_;  // forward_grad_off() of `self`, per class
  mutable signed char other_framework_ = -1;         // imports_other_framework(m), memoised
  mutable bool flags_known_ = false;
  bool flag(Id x, bool truth) const;
  uint32_t scan_gpu_evidence(bool any) const;          // any: stop at the first piece found
  // Byte of the file's first GPU evidence: 0 for a framework that places the model itself,
  // UINT32_MAX when there is none.
  uint32_t first_gpu_evidence() const;
  Id guard_ = kNone;
  bool loop_memo(int which, int loop, const std::function<bool(const CallSite&)>& pred) const;
  mutable std::vector<signed char> loop_memo_[3];  // per loop: -1 unknown, 0 no, 1 yes
  // Receivers of `load_state_dict(...)` (C++: `torch::load(net, path)`), dotted -> the functions
  // that load them (kNone at module level), in call order.
  std::unordered_map<std::string, std::set<Id>> load_state_dict_;
  bool loads_state(Id func, const std::string& d) const;
  mutable ClassMemo class_loaders_;  // methods that load the attribute and switch it to eval mode
  std::unordered_map<std::string, Id> nested_funcs_;  // "<parent>:<name>" -> first function
  std::unordered_set<std::string> nested_names_;      // names of functions defined in functions
  std::unordered_map<std::string, Id> methods_;       // "<class>:<name>" -> last method of that name
  std::unordered_map<std::string, std::vector<Id>> classes_by_name_;  // while walking: the innermost `if` condition inside the current loop
};

// The work stack of for_each_expr(), one per thread, shared by nested walks (a visit may walk
// another expression): each walk uses the part above where it started, and leaves it as it
// found it, also when a budget exception leaves it. (A stack per call cost an allocation per
// walk.)
std::vector<Id>& expr_walk_stack();

// Walks an expression tree (pre-order) without recursion; `visit(id)` returns whether to go
// into the expression's children. (A template: the visit is inlined into the walk, with no
// std::function to build, which allocated for most captures, and no indirect call per node.)
template <class Visit>
void for_each_expr(const Module& m, Id root, Visit&& visit) {
  if (root == kNone) return;
  std::vector<Id>& stack = expr_walk_stack();
  const size_t base = stack.size();
  struct Restore {
    std::vector<Id>& s;
    size_t base;
    ~Restore() { s.resize(base); }
  } restore{stack, base};
  stack.push_back(root);
  while (stack.size() > base) {
    budget::tick();
    Id id = stack.back();
    stack.pop_back();
    if (id == kNone || id >= m.exprs.size()) continue;
    if (!visit(id)) continue;
    const Expr& x = m.exprs[id];
    for (auto it = x.kids.rbegin(); it != x.kids.rend(); ++it) stack.push_back(*it);
    for (auto it = x.fors.rbegin(); it != x.fors.rend(); ++it) {
      stack.push_back(it->target);
      stack.push_back(it->iter);
    }
  }
}

}  // namespace ll
