// Cross-file facts. Every file is analysed on its own first (in parallel) and leaves a
// small summary; the summaries are joined, and only the files whose findings depend on
// another file are analysed again with that knowledge (a Dataset class handed to a
// DataLoader in another module; a function called under no_grad from another module).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace ll {

// A module-level function that leaves the module handed in as argument `index` (parameter
// `param`) in eval mode.
struct EvalLeaving {
  std::string function;
  int index = 0;
  std::string param;
  // For a function that freezes its parameter only under `if <flag>:` of another parameter
  // (`set_parameter_requires_grad(model, feature_extracting)`): that parameter's position and
  // name (-1 and "" when the freeze is unconditional). A caller passing a literal False, 0 or
  // None for it freezes nothing.
  int flag = -1;
  std::string flag_param;
  // A freeze whose switch takes its value from the flag (`def set_requires_grad(nets,
  // requires_grad=False): ... param.requires_grad = requires_grad`): 1, and a call freezes only
  // when it passes a literal False; 2 when the flag's default is False, so a call that leaves it
  // out freezes too. 0 for the `if <flag>:` form above.
  int value = 0;
};

// A call of an imported loader builder whose result feeds a distributed training loop of the
// calling file (LL405): the callee as that file names it, the element of the returned tuple it
// binds (-1: the whole value), and what the call passes: `#k` for the k-th positional argument,
// a keyword's name, `*` for a splat (anything may be passed). An argument written `None` is
// not listed, as it passes what an absent one with a None default would.
struct DistributedFeed {
  std::string callee;
  int element = -1;
  std::vector<std::string> passed;
  bool operator==(const DistributedFeed& o) const {
    return callee == o.callee && element == o.element && passed == o.passed;
  }
};

// A call of an imported function: the callee as this file qualifies it, whether grad is
// disabled there, and, when only the entry mode of the module-level function holding it can
// decide that (the call is not under a guard of its own and nothing in its file calls that
// function), that function's name: when every other file's call of it runs with grad
// disabled, so does this call (join_summaries follows such chains across modules).
struct ImportedCall {
  std::string callee;
  bool off = false;
  std::string via;
  bool operator==(const ImportedCall& o) const { return callee == o.callee && off == o.off && via == o.via; }
};

struct FileSummary {
  std::string module;  // dotted module path derived from the file path ("pkg.data")
  std::string path;    // the file as the run names it (messages about this file name it so)
  // Qualified names of classes handed to a DataLoader with workers (num_workers != 0).
  std::vector<std::string> dataset_uses;
  // Calls of imported functions.
  std::vector<ImportedCall> imported_calls;
  // What this file defines that other files could reach.
  std::vector<std::string> classes;    // Dataset subclasses
  std::vector<std::string> functions;  // module-level functions (not off by their own decorator)
  std::vector<std::string> caller_off; // those of them that same-file callers turned grad-off
  // Relevance (checks/relevance.hpp): does the file import torch itself, and which modules
  // does it import (project modules among them may bring torch in).
  bool imports_torch = false;
  std::vector<std::string> imports;
  // A file without torch of its own that calls methods only torch's tensors and modules have
  // (`.detach()`, `.backward()`, `.cuda()`, `.zero_grad()`, `.load_state_dict()`): run on the
  // model a torch module of the project hands it, it is torch code when such a module imports it.
  bool tensor_api = false;
  // Modules this file star-imports (`from .train_utils import *`), relative ones resolved
  // against the file's package: what it re-exports, and where its unresolved names may live.
  std::vector<std::string> star_modules;
  // LL405 across files. Module-level functions that return a DistributedDataParallel / FSDP
  // wrap; and, in a file that wraps its model, imported functions whose result (element
  // `second` of a returned tuple, -1 for the whole value) a training loop iterates.
  std::vector<std::string> wrapping_functions;
  // Classes whose `forward` runs with grad disabled (`@torch.no_grad()` on it): calling an
  // instance records no graph, in this file or in the files that import the class.
  std::vector<std::string> grad_off_forwards;
  // Module classes that are one linear layer (`forward` returns `self.fc(x)` of an
  // `nn.Linear`): a linear probe, whose graph keeps nothing beyond its output.
  std::vector<std::string> linear_classes;
  // Module classes (nn.Module subclasses, or classes with a forward): an instance is a model
  // in the files that import the class.
  std::vector<std::string> module_classes;
  // Elements of a module class's returned tuple that carry no history at every return of its
  // forward (a mixup forward's `lam`, a detached state), as "Class.k".
  std::vector<std::string> detached_forward_elements;
  // Module classes whose layers behave the same in train() and eval() (LL205), each with the
  // imported names that must be so too: "Class|q1|q2".
  std::vector<std::string> mode_free_classes;
  // Module classes that synchronise ranks themselves: a collective in one of their methods (a
  // tensor-parallel layer, a `sync()` that all-reduces the gradients) or a gradient hook that
  // all-reduces (LL203).
  std::vector<std::string> communicating_classes;
  // Module-level functions that send or receive tensors point to point (`dist.isend`,
  // `dist.batch_isend_irecv`): a pipeline's stages, or a parameter server's messages (LL203).
  std::vector<std::string> point_to_point;
  // Imported names used as parameter annotations (`model: Transformer`), qualified: what a
  // typed parameter holds, for grad_off_forwards of the defining file.
  std::vector<std::string> type_refs;
  std::vector<DistributedFeed> distributed_feeds;
  // Dataset classes that shard by rank themselves (an IterableDataset / datapipe, a class that
  // reads the rank or world size): a loader of one needs no DistributedSampler.
  std::vector<std::string> sharding_datasets;
  // Dataset classes of synthetic data (items made on the fly, ignoring their index): a loader
  // of one is weak evidence for LL405 in the files that import the class.
  std::vector<std::string> synthetic_datasets;
  // Methods that keep their argument on their object (`AverageMeter.update`, whose body does
  // `self.sum += val * n`), as "Class.method": a tensor handed to one is kept.
  std::vector<std::string> accumulating_methods;
  // Methods of plain classes (a trainer, an engine: no base but `object`) that run a model
  // attribute's forward with grad on and never back-propagate (`def eval(self, x): output =
  // self.model(x)`), as {"Class.method", attribute}, and whether the method puts that model in
  // eval mode first: another module's evaluation loop calling one on an instance runs the forward.
  // Module-level functions that run the model they are handed the same way (`def
  // inference(input, model): return model(input)`), as {"function", parameter}, with the
  // parameter's position (`param`, -1 for a method).
  struct HelperMethod {
    std::string method;
    std::string model;
    bool evaluates = false;
    int param = -1;
  };
  std::vector<HelperMethod> helper_methods;
  // Loops of this file that call methods on an instance of an imported class (`agent =
  // Agent(...)`; `for t in range(steps): agent.update(obs)`), one entry per loop and object: the
  // class, qualified as this file imports it, whether the loop runs once per batch by this
  // file's own facts, the methods the loop calls on the object (a reset among them clears what
  // another keeps), and the object's attributes the loop reads or clears itself
  // (`torch.cat(agent.saved_log_probs)`: the caller manages what the method keeps). At most
  // kLoopNames names each; a loop with more records nothing.
  struct LoopMethodCall {
    static constexpr size_t kLoopNames = 64;
    std::string cls;
    bool batch_loop = false;
    std::vector<std::string> methods;
    std::vector<std::string> attrs;
  };
  std::vector<LoopMethodCall> loop_method_calls;
  // LL206: module-level functions whose every return builds an optimizer of a known kind
  // (`build_optimizer` choosing among Adam, Adamax and AdamW), with that kind (1 scale-sensitive,
  // 2 scale-invariant, 3 the configuration's choice of both); and loss functions (module-level
  // functions, or classes by their `__call__` / `forward`) whose loss is multiplied by the batch
  // size on its way out (`return loss * bs, items`): a sum over the batch's samples.
  std::vector<std::pair<std::string, int>> optimizer_factories;
  std::vector<std::string> batch_summed_losses;
  // LL105: methods of this file's classes (constructors included, "Class.__init__") that
  // register a hook whose handle they neither remove nor hand back, as "Class.method": a loop of
  // another file calling one (or building the class) once per iteration piles the hooks up.
  std::vector<std::string> hooking_methods;
  // Methods (not constructors) that keep a value on their object (`self.losses.append(loss)`,
  // `self.total += loss`), as "Class.method": only they hear of another file's loop calls.
  std::vector<std::string> keeping_methods;
  // Functions and methods named like a loss (`calc_dataset_loss`, `get_current_loss`,
  // `NLL.cal_nll_with_label`): each one this file defines, and whether every return hands back
  // a Python number (`return running_loss / len(loader)` after `running_loss += loss.item()`).
  std::vector<std::pair<std::string, bool>> loss_functions;
  // Module-level functions that put a module they are handed in eval mode and never back in
  // train mode (`def evaluate(model, loader): model.eval(); ...`).
  std::vector<EvalLeaving> eval_leaving;
  // Module-level functions that switch off every parameter of a module they are handed and
  // never back on (`def set_parameter_requires_grad(model, feature_extracting): for p in
  // model.parameters(): p.requires_grad = False`), with that parameter's position and name.
  std::vector<EvalLeaving> freezing;
  // LL301: module classes whose construction with no arguments has a visible size (every layer
  // of literal size, or sized by the constructor's literal defaults), with their parameter
  // count; module-level functions that back-propagate (a trainer handed the model).
  std::vector<std::pair<std::string, long>> model_sizes;
  std::vector<std::string> trainers;
  // Methods that back-propagate the same way, as "Class.method" (a Grad-CAM object's
  // `backward(label)` runs `self.logits.backward(...)` on what its `forward(x)` kept): LL101
  // leaves an object's forward alone in a loop that calls one of them on it.
  std::vector<std::string> backprop_methods;
  // LL102: methods other than `forward` whose returned value carries autograd history, as
  // "Class.method" (a module's `train_step()` that back-propagates and returns `loss *
  // x.size(0)`): a caller keeping what another module's method returns keeps its graph.
  std::vector<std::string> history_methods;
  // Methods called by name across files (`decoder.generate(...)` on a value whose class the
  // file does not show): each such attribute name, and whether every such call in this file
  // runs with grad disabled. And this file's methods that no call resolves to whose entry
  // grad mode other files' calls could change: `open_methods` still run with grad (they hold
  // a finding that depends on it), `name_off_methods` were turned off by this file's calls.
  std::vector<std::pair<std::string, bool>> method_calls;
  // The same for the calls made from a method of the same name (`super().eval_step(batch)`):
  // they decide only when no other call of the run names the method.
  std::vector<std::pair<std::string, bool>> method_calls_from_namesakes;
  // Calls on `self` in this file's classes, per (class, method): whether every one runs with
  // grad disabled. Another file's subclass that overrides the method receives them (a base's
  // `with torch.no_grad(): self.eval_step(batch)`). And each class's bases: a same-file class
  // by its name, an imported one by its qualified name.
  std::vector<std::tuple<std::string, std::string, bool>> self_calls;
  std::vector<std::pair<std::string, std::string>> class_bases;
  std::vector<std::string> open_methods;
  std::vector<std::string> name_off_methods;
  // The impact policy across files (docs/impact.md): is the file a program (a notebook, a
  // script with top-level loops or a main guard, a C++ file with main()), and does anything
  // in it place a tensor on a GPU. A project with programs and no such evidence anywhere is
  // CPU-only: its memory claims are weak (weaken_memory_claims in the engine).
  bool program = false;
  bool gpu_evidence = false;
  // Code nothing calls (docs/impact.md), Python only: every name the file reads (identifiers,
  // attribute names, identifier-like strings such as `getattr(self, "evaluate")`, imported
  // names), and the functions that hold a visible finding with their byte ranges. A run over
  // whole directories (EngineOptions::whole_tree) weakens the findings of a function whose
  // name no file of the run reads.
  std::vector<std::string> referenced;
  // Names of `referenced` the file reads only as `self.<name>` inside methods, as
  // "Class.name" for each class whose methods read it so: such a read reaches a method of that
  // class's hierarchy (`class_bases`), not a method of the same name of an unrelated class.
  std::vector<std::string> self_reads;
  // Names the file reads only as imported from a module (`from train_test import train`), as
  // the import qualifies them ("train_test.train"): they reach that module's definition, not
  // another module's function of the same name. (Not in `referenced`.)
  std::vector<std::string> imported_refs;
  // Training through a call across files: the names of calls this file cannot resolve whose
  // result it back-propagates (any method of an object, `model.run_batch(b)`; a plain function
  // when named like evaluation, `sample`, `predict`), and this file's functions that a caller
  // could so train through (named like evaluation, or methods that return a value).
  std::vector<std::string> backprop_results;
  std::vector<std::string> eval_named;
  struct Holding {
    std::string name;
    uint32_t begin = 0, end = 0;
    // A module-level function of a module that is not a program: the module's interface, unless
    // the module is a helper of the run's programs (weaken_uncalled).
    bool interface = false;
    std::string cls;  // the class of a method ("" otherwise)
    // The method's class derives from a class this file imports: a framework's base may call
    // it by dispatch (`Thread.start()` runs `run()`), unless the join finds every base up the
    // chain defined in the run (or `nn.Module`), where such calls are reads it sees.
    bool imported_base = false;
  };
  std::vector<Holding> holding;
  // Every class this file defines, by name (the join's test of a base defined in the run).
  std::vector<std::string> defined_classes;
  // A module that is not a program: its module-level functions' names read in it, as
  // {reading module-level function, or "" outside them; function read} (summarize_own_reads).
  std::vector<std::pair<std::string, std::string>> own_reads;
  // Modules this file reaches by a computed name: `getattr(L, name)` on an imported module,
  // the modules a `globals()[name]` dispatch sees through star imports; "*" for a module loaded
  // by a computed name (`importlib.import_module(name)`).
  std::vector<std::string> dispatched_modules;
};

// What one file needs to know about the others.
struct ProjectView {
  std::set<std::string> classes_with_workers;           // local class names
  std::map<std::string, std::vector<bool>> external_calls;  // local function -> grad-off per call
  // The file imports no torch itself, but a project module it imports does (transitively).
  bool torch_via_project = false;
  // A program with no GPU evidence of its own whose imports reach a module with some: it is
  // no CPU-only program (docs/impact.md).
  bool gpu_via_imports = false;
  // Callees (as this file names them) that return a distributed wrap of a model.
  std::set<std::string> distributed_wrappers;
  // Local functions whose result feeds a distributed training loop in another file:
  // function -> each such call, with the importing file's path.
  std::map<std::string, std::vector<std::pair<DistributedFeed, std::string>>> feeds_distributed;
  // Imported Dataset classes (as this file names them) that shard by rank themselves.
  std::set<std::string> sharding_datasets;
  std::set<std::string> synthetic_datasets;  // qualified, as this file imports them
  // Imported classes' methods that keep their argument: "qualified.Class.method", as this file
  // imports the class (`src.utils.AverageMeter.update`).
  std::set<std::string> accumulating_imports;
  // Imported classes' methods that back-propagate (FileSummary::backprop_methods), qualified
  // as this file imports the class ("cam.GradCAM.heatmap"), or by the class's own name when a
  // star import brings it ("GradCAM.heatmap").
  std::set<std::string> backprop_method_imports;
  // Imported classes' methods whose result carries history (FileSummary::history_methods),
  // qualified as this file imports the class ("models.Net.train_step").
  std::set<std::string> history_method_imports;
  // Imported plain classes' methods that run a model attribute's forward (FileSummary::
  // helper_methods): "qualified.Class.method", as this file imports the class.
  std::map<std::string, FileSummary::HelperMethod> helper_method_imports;
  // This file's methods that another file calls in a loop on an instance of the class
  // (FileSummary::loop_method_calls): "Class.method" -> each such call, with the caller's path.
  std::map<std::string, std::vector<std::pair<std::shared_ptr<const FileSummary::LoopMethodCall>, std::string>>>
      loop_called_methods;
  // The same for this file's hooking methods (FileSummary::hooking_methods), "Class.__init__"
  // for a loop that builds the class (LL105).
  std::map<std::string, std::vector<std::pair<std::shared_ptr<const FileSummary::LoopMethodCall>, std::string>>>
      loop_called_hooks;
  // Imported functions (qualified, as this file imports them) that leave their argument in
  // eval mode: the argument's position and parameter name.
  std::map<std::string, std::vector<std::pair<int, std::string>>> eval_leaving_imports;
  // Imported functions (qualified, as this file imports them) that freeze their argument
  // (FileSummary::freezing): its position and parameter name.
  std::map<std::string, std::vector<EvalLeaving>> freezing_imports;
  // Imported module classes (qualified, as this file imports them) of visible size, and
  // imported functions that back-propagate (LL301's impact).
  std::map<std::string, long> imported_model_sizes;
  std::set<std::string> imported_trainers;
  // Methods of this file decided by the calls that name them: whether every such call in the
  // run's other files runs with grad disabled (only entries that change a decision).
  std::map<std::string, bool> external_method_calls;
  // Imported classes (as this file names them) whose forward runs with grad disabled.
  std::set<std::string> grad_off_forward_classes;
  // Imported classes (as this file names them) that are one linear layer.
  std::set<std::string> linear_classes;
  // Imported classes (as this file names them) that another file of the run defines as a module.
  std::set<std::string> module_classes;
  // Imported classes (as this file names them) that another file of the run defines, module or not.
  std::set<std::string> run_classes;
  // Imported classes named for a gradient method (`GradCam`) that a file of the run defines:
  // what their methods do is read there, not guessed from the name (LL101).
  std::set<std::string> run_gradient_named_classes;
  // Imported module classes (as this file names them) and the elements of their forward's
  // tuple that carry no history (FileSummary::detached_forward_elements).
  std::map<std::string, std::vector<int>> detached_forward_elements;
  // Imported module classes (as this file names them) whose mode changes nothing (LL205).
  std::set<std::string> mode_free_classes;
  // Imported classes (as this file names them) that synchronise ranks themselves.
  std::set<std::string> communicating_classes;
  // Imported optimizer factories (as this file names them) and their kind; imported loss
  // functions and classes that sum over the batch (FileSummary::optimizer_factories,
  // ::batch_summed_losses).
  std::map<std::string, int> optimizer_factory_kinds;
  // Imported functions (as this file names them) that communicate point to point.
  std::set<std::string> point_to_point_imports;
  std::set<std::string> batch_summed_losses;
  // This file's functions named like evaluation whose result another file back-propagates.
  std::set<std::string> trained_by_callers;
  // This file's module-level `test*` functions that another file of the run calls: helpers of
  // the program, not tests pytest collects (Facts::called_by_code).
  std::set<std::string> called_tests;
  // Calls named like a loss this file makes whose every definition in the run returns a Python
  // number, and those with a definition somewhere that does not.
  std::set<std::string> number_losses, other_losses;
  bool empty() const {
    return classes_with_workers.empty() && external_calls.empty() && !torch_via_project && !gpu_via_imports &&
           distributed_wrappers.empty() && feeds_distributed.empty() && external_method_calls.empty() &&
           grad_off_forward_classes.empty() && trained_by_callers.empty() && called_tests.empty() && sharding_datasets.empty() &&
           synthetic_datasets.empty() && accumulating_imports.empty() && backprop_method_imports.empty() && history_method_imports.empty() && helper_method_imports.empty() && loop_called_methods.empty() && loop_called_hooks.empty() && eval_leaving_imports.empty() && freezing_imports.empty() &&
           imported_model_sizes.empty() && imported_trainers.empty() && linear_classes.empty() && module_classes.empty() && run_classes.empty() && run_gradient_named_classes.empty() && communicating_classes.empty() &&
           optimizer_factory_kinds.empty() && batch_summed_losses.empty() && point_to_point_imports.empty() && detached_forward_elements.empty() && mode_free_classes.empty() && number_losses.empty() && other_losses.empty();
  }
};

// Dotted module path of a file path: "src/pkg/data.py" -> "src.pkg.data".
std::string module_of_path(const std::string& path);
// The package of a dotted module path: "src.pkg.data" -> "src.pkg" ("" at the top).
std::string package_of(const std::string& mod);
// The package a file's imports are resolved in: a package's `__init__.py` is that package
// itself, any other module is in its parent package.
std::string importer_package(const std::string& module, const std::string& path);
// An import as an absolute dotted name, made from package `package`: a relative one (`.data`,
// `..utils`, `.`) resolved against it, an absolute one as written.
std::string absolute_import(const std::string& package, const std::string& imp);
// Does file module `mod` ("src.pkg.data") end with the dotted module name `q` ("pkg.data")?
bool module_is(const std::string& mod, const std::string& q);

// The run's Python modules, indexed for Python's resolution of an import.
class ModuleIndex {
 public:
  explicit ModuleIndex(const std::vector<FileSummary>& files);
  // The files a module name `imp` that file `i` imports can be: a relative name from the
  // importer's package; else the module beside the importer, or the top-level one, when the
  // run has it (`from utils import im2col` beside a utils.py is that file, not another
  // package's `utils`); else any module whose path ends with the name.
  std::vector<size_t> resolve(const std::string& imp, size_t i) const;
  // Files by the last component of their module ("pkg.data" -> "data").
  const std::unordered_map<std::string, std::vector<size_t>>& by_last() const { return by_last_; }

 private:
  const std::vector<FileSummary>& files_;
  std::unordered_map<std::string, std::vector<size_t>> by_last_;
};

// The impact policy's CPU-only importers (docs/impact.md), Python only. For each file that
// `eligible` allows (a module no installed package exposes) and that is not a program: the
// programs whose imports reach it, when there are some and every one runs on the CPU (neither
// it nor any module its imports reach has GPU evidence), and no other file that nothing
// imports (a module of definitions another project may use, a test, a launcher without torch)
// reaches it. Empty otherwise, and for every file when the run loads a module by a computed
// name. Importing `pkg.mod` also runs `pkg/__init__.py`.
std::vector<std::vector<size_t>> cpu_only_importers(const std::vector<FileSummary>& files,
                                                    const std::vector<bool>& eligible);

// Joins the summaries; returns one view per file (empty when nothing applies).
std::vector<ProjectView> join_summaries(const std::vector<FileSummary>& files);

}  // namespace ll
