#include "checks/project.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "checks/common.hpp"

namespace ll {

std::string module_of_path(const std::string& path) {
  std::string p = path;
  while (p.rfind("./", 0) == 0) p = p.substr(2);
  size_t dot = p.rfind('.');
  if (dot != std::string::npos && p.find('/', dot) == std::string::npos) p = p.substr(0, dot);
  if (p.size() >= 9 && p.compare(p.size() - 9, 9, "/__init__") == 0) p = p.substr(0, p.size() - 9);
  for (char& c : p)
    if (c == '/') c = '.';
  return p;
}

std::string package_of(const std::string& mod) {
  size_t p = mod.rfind('.');
  return p == std::string::npos ? "" : mod.substr(0, p);
}

// A package's `__init__.py`?
static bool package_init_file(const std::string& path) {
  return path == "__init__.py" || (path.size() > 12 && path.compare(path.size() - 12, 12, "/__init__.py") == 0);
}

std::string importer_package(const std::string& module, const std::string& path) {
  return package_init_file(path) ? module : package_of(module);
}

std::string absolute_import(const std::string& package, const std::string& imp) {
  size_t dots = 0;
  while (dots < imp.size() && imp[dots] == '.') ++dots;
  if (dots == 0) return imp;
  std::string base = package;
  for (size_t up = 1; up < dots; ++up) base = package_of(base);
  const std::string rest = imp.substr(dots);
  return base.empty() ? rest : rest.empty() ? base : base + "." + rest;
}

bool module_is(const std::string& mod, const std::string& q) {
  if (q.empty()) return false;
  const std::string m = "." + mod, s = "." + q;
  return m.size() >= s.size() && m.compare(m.size() - s.size(), s.size(), s) == 0;
}

namespace {

// Does the qualified name `q` ("pkg.data.Frames", ".data.Frames") name `name` defined in
// module `mod` ("src.pkg.data")? Matches on the longest common module suffix.
bool names(const std::string& q, const std::string& mod, const std::string& name) {
  std::string want = "." + name;
  if (q.size() < want.size() || q.compare(q.size() - want.size(), want.size(), want) != 0) return false;
  std::string qmod = q.substr(0, q.size() - want.size());
  while (!qmod.empty() && qmod[0] == '.') qmod = qmod.substr(1);
  return module_is(mod, qmod);
}

std::string last(const std::string& q) {
  size_t p = q.rfind('.');
  return p == std::string::npos ? q : q.substr(p + 1);
}


// The files among `candidates` that define what `q` names, as imported by `importer`.
// Python resolves a relative import against the importer's package, and a script's plain
// `from dsets import X` finds its own directory first (sys.path[0]): so `dsets` beside the
// importer wins over every other `*.dsets` of the project (several chapters of a book each
// with their own dsets.py). Only when neither applies does the longest-suffix match decide.
std::vector<size_t> defining_files(const std::string& q, size_t importer, const std::vector<size_t>& candidates,
                                   const std::vector<FileSummary>& files,
                                   const std::unordered_set<std::string>* modules = nullptr) {
  std::vector<size_t> out;
  const std::string name = last(q);
  std::string qmod = q.size() > name.size() ? q.substr(0, q.size() - name.size() - 1) : "";
  const std::string pkg = package_of(files[importer].module);
  size_t dots = 0;
  while (dots < qmod.size() && qmod[dots] == '.') ++dots;
  auto exactly = [&](const std::string& mod) {
    for (size_t j : candidates)
      if (j != importer && files[j].module == mod) out.push_back(j);
  };
  if (dots > 0) {
    std::string base = pkg;
    for (size_t up = 1; up < dots; ++up) base = package_of(base);
    const std::string rest = qmod.substr(dots);
    exactly(base.empty() ? rest : rest.empty() ? base : base + "." + rest);
    if (!out.empty() || !base.empty()) return out;
  } else if (!qmod.empty()) {
    const std::string mod = pkg.empty() ? qmod : pkg + "." + qmod;
    exactly(mod);
    // The module beside the importer exists but does not define it (`from train import
    // train` beside a train.py that wraps nothing): another `*.train` of the tree is not it.
    if (!out.empty() || (modules && modules->count(mod))) return out;
  }
  for (size_t j : candidates)
    if (j != importer && names(q, files[j].module, name)) out.push_back(j);
  return out;
}

// The files that define `q`'s name through star re-exports: the module `q` names
// (`src` of `src.evaluate`, a package's __init__) star-imports the defining module
// (`from .train_utils import *`), directly or through further star imports.
std::vector<size_t> reexporting_files(const std::string& q, size_t importer, const std::vector<size_t>& candidates,
                                      const std::vector<FileSummary>& files,
                                      const std::unordered_map<std::string, std::vector<size_t>>& by_last) {
  std::vector<size_t> out;
  const std::string name = last(q);
  if (q.size() <= name.size() + 1) return out;
  // (module as written, the file that imports it)
  std::vector<std::pair<std::string, size_t>> frontier = {{q.substr(0, q.size() - name.size() - 1), importer}};
  std::unordered_set<size_t> seen;  // files visited (a few; never one flag per file of the run)
  for (int depth = 0; depth < 4 && !frontier.empty(); ++depth) {
    std::vector<std::pair<std::string, size_t>> next;
    for (const auto& [mod, from] : frontier) {
      auto it = by_last.find(last(mod));
      if (it == by_last.end()) continue;
      // A script's `from src import *` finds `src` beside it first (sys.path[0]); only
      // when there is none does any `*.src` of the project count.
      const std::string beside = package_of(files[from].module).empty() ? mod : package_of(files[from].module) + "." + mod;
      std::vector<size_t> named;
      for (size_t k : it->second)
        if (k != from && (files[k].module == beside || files[k].module == mod)) named.push_back(k);
      if (named.empty())
        for (size_t k : it->second)
          if (k != from && module_is(files[k].module, mod)) named.push_back(k);
      for (size_t k : named) {
        if (k == importer || !seen.insert(k).second) continue;
        if (depth > 0 && std::find(candidates.begin(), candidates.end(), k) != candidates.end()) out.push_back(k);
        for (const std::string& s : files[k].star_modules) next.emplace_back(s, k);
      }
    }
    if (!out.empty()) break;
    frontier = std::move(next);
  }
  return out;
}

}  // namespace

// `q` = "pkg.datasets.RLDSDataset" where pkg/datasets/__init__.py imports the defining
// module by name (`from .datasets import RLDSDataset`: its imports hold
// "pkg.datasets.datasets"): a package re-exporting a class of one of its modules.
static bool reexported_by_name(const std::string& q, const std::vector<size_t>& candidates,
                        const std::vector<FileSummary>& files,
                        const std::unordered_map<std::string, std::vector<size_t>>& by_last) {
  const std::string name = last(q);
  if (q.size() <= name.size() + 1) return false;
  const std::string mod = q.substr(0, q.size() - name.size() - 1);
  auto it = by_last.find(last(mod));
  if (it == by_last.end()) return false;
  for (size_t j : it->second) {
    if (!module_is(files[j].module, mod)) continue;
    for (size_t k : candidates)
      for (std::string imp : files[j].imports) {
        while (!imp.empty() && imp[0] == '.') imp.erase(0, 1);  // `from .datasets import ...`
        if (!imp.empty() && k != j && module_is(files[k].module, imp)) return true;
      }
  }
  return false;
}

ModuleIndex::ModuleIndex(const std::vector<FileSummary>& files) : files_(files) {
  for (size_t j = 0; j < files.size(); ++j) by_last_[last(files[j].module)].push_back(j);
}

std::vector<size_t> ModuleIndex::resolve(const std::string& imp, size_t i) const {
  std::vector<size_t> out;
  size_t dots = 0;
  while (dots < imp.size() && imp[dots] == '.') ++dots;
  const std::string_view rest = std::string_view(imp).substr(dots);
  // (Candidates by the last component first: most imports name no module of the run. A
  // relative import of the package itself, `from . import x`, is looked up by the package.)
  const std::string key = rest.empty() ? std::string() : last(std::string(rest));
  auto it = key.empty() ? by_last_.end() : by_last_.find(key);
  if (!key.empty() && it == by_last_.end()) return out;
  const std::string here = importer_package(files_[i].module, files_[i].path);
  auto matching = [&](std::string_view mod) {
    for (size_t j : it->second)
      if (j != i && files_[j].module == mod) out.push_back(j);
    return !out.empty();
  };
  if (dots > 0) {
    const std::string target = absolute_import(here, imp);
    if (key.empty()) it = by_last_.find(last(target));
    if (it != by_last_.end()) matching(target);
    return out;
  }
  if (it == by_last_.end()) return out;
  if (!here.empty() && matching(here + "." + imp)) return out;
  if (matching(imp)) return out;
  for (size_t j : it->second)
    if (j != i && module_is(files_[j].module, imp)) out.push_back(j);
  return out;
}

namespace {

bool python_file(const std::string& p) {
  return p.size() > 3 && (p.compare(p.size() - 3, 3, ".py") == 0 || (p.size() > 6 && p.compare(p.size() - 6, 6, ".ipynb") == 0));
}

// The run's Python files as Python imports them: what each file's imports run (the modules
// they resolve to, and the packages' `__init__.py` above them), whether some file imports it,
// and whether GPU evidence lies in it or anywhere its imports reach.
struct ImportGraph {
  std::vector<std::vector<size_t>> down;
  std::vector<bool> imported, gpu;
};

// Package modules and their `__init__.py`.
std::unordered_map<std::string_view, size_t> package_inits(const std::vector<FileSummary>& files) {
  std::unordered_map<std::string_view, size_t> out;
  for (size_t j = 0; j < files.size(); ++j)
    if (package_init_file(files[j].path)) out.emplace(files[j].module, j);
  return out;
}

// What file i's imports run: the modules they resolve to, and the packages' `__init__.py` above
// them.
std::vector<size_t> files_imported_by(const std::vector<FileSummary>& files, const ModuleIndex& index,
                                      const std::unordered_map<std::string_view, size_t>& package_init, size_t i) {
  std::vector<size_t> out;
  if (!python_file(files[i].path)) return out;
  auto add = [&](size_t j) {
    if (j != i && std::find(out.begin(), out.end(), j) == out.end()) out.push_back(j);
  };
  for (const std::string& imp : files[i].imports)
    for (size_t j : index.resolve(imp, i)) {
      add(j);
      for (std::string pkg = package_of(files[j].module); !pkg.empty(); pkg = package_of(pkg))
        if (auto it = package_init.find(pkg); it != package_init.end()) add(it->second);
    }
  return out;
}

ImportGraph import_graph(const std::vector<FileSummary>& files, const ModuleIndex& index) {
  const size_t n = files.size();
  ImportGraph g{std::vector<std::vector<size_t>>(n), std::vector<bool>(n), std::vector<bool>(n)};
  const auto package_init = package_inits(files);
  for (size_t i = 0; i < n; ++i) {
    g.down[i] = files_imported_by(files, index, package_init, i);
    for (size_t j : g.down[i]) g.imported[j] = true;
  }
  // GPU evidence carried up to every importer.
  std::vector<std::vector<size_t>> up(n);
  for (size_t i = 0; i < n; ++i)
    for (size_t j : g.down[i]) up[j].push_back(i);
  std::vector<size_t> work;
  for (size_t i = 0; i < n; ++i)
    if (files[i].gpu_evidence) g.gpu[i] = true, work.push_back(i);
  while (!work.empty()) {
    const size_t j = work.back();
    work.pop_back();
    for (size_t i : up[j])
      if (!g.gpu[i]) g.gpu[i] = true, work.push_back(i);
  }
  return g;
}

}  // namespace

std::vector<std::vector<size_t>> cpu_only_importers(const std::vector<FileSummary>& files,
                                                    const std::vector<bool>& eligible) {
  const size_t n = files.size();
  std::vector<std::vector<size_t>> out(n);
  auto python = [&](size_t i) { return python_file(files[i].path); };
  for (const FileSummary& s : files)
    for (const std::string& d : s.dispatched_modules)
      if (d == "*") return out;  // a module loaded by a computed name could be any of them
  const ModuleIndex index(files);
  const ImportGraph graph = import_graph(files, index);
  const std::vector<std::vector<size_t>>& down = graph.down;
  const std::vector<bool>& imported = graph.imported;
  const std::vector<bool>& gpu = graph.gpu;
  std::vector<size_t> work;
  // What the CPU-only programs reach (the first two of them, to name), and what any other
  // entry point reaches: a GPU program, or a Python file nothing imports that is no program.
  std::vector<std::vector<size_t>> cpu(n);
  std::vector<bool> blocked(n);
  for (size_t r = 0; r < n; ++r) {
    if (!python(r) || !(files[r].program && !gpu[r])) continue;
    work.assign(down[r].begin(), down[r].end());
    while (!work.empty()) {
      const size_t j = work.back();
      work.pop_back();
      if (cpu[j].size() >= 2 || std::find(cpu[j].begin(), cpu[j].end(), r) != cpu[j].end()) continue;
      cpu[j].push_back(r);
      work.insert(work.end(), down[j].begin(), down[j].end());
    }
  }
  for (size_t r = 0; r < n; ++r)
    if (python(r) && (files[r].program ? gpu[r] : !imported[r])) work.push_back(r);
  for (size_t r : work) blocked[r] = true;
  while (!work.empty()) {
    const size_t j = work.back();
    work.pop_back();
    for (size_t k : down[j])
      if (!blocked[k]) blocked[k] = true, work.push_back(k);
  }
  for (size_t i = 0; i < n && i < eligible.size(); ++i)
    if (eligible[i] && python(i) && !files[i].program && !blocked[i] && !gpu[i]) out[i] = std::move(cpu[i]);
  return out;
}

std::vector<ProjectView> join_summaries(const std::vector<FileSummary>& files) {
  std::unordered_set<std::string> modules;  // every module of the run
  for (const FileSummary& f : files) modules.insert(f.module);
  std::vector<ProjectView> views(files.size());
  // Index definitions by their simple name, then confirm the module.
  std::unordered_map<std::string, std::vector<size_t>> class_def, func_def, wrap_def, off_forward_def, sharding_def,
      synthetic_def, linear_def, module_def, comm_def, method_def, eval_def, freeze_def, size_def,
      trainer_def, helper_def, detached_def, mode_free_def, factory_def, summed_def, p2p_def, class_any_def;
  const ModuleIndex index(files);
  const auto& by_last = index.by_last();
  // Imported calls whose mode the entry of the function holding them decides
  // (ImportedCall::via): the calling file and function, and the call's slot in the callee's
  // file's external_calls.
  struct Relayed {
    size_t from;
    const std::string* via;
    size_t to;
    std::string callee;
    size_t site;
  };
  std::vector<Relayed> relayed;
  auto imported_modules = [&](const std::string& imp, size_t i) { return index.resolve(imp, i); };
  for (size_t i = 0; i < files.size(); ++i) {
    for (const auto& c : files[i].classes) class_def[c].push_back(i);
    for (const auto& f : files[i].functions) func_def[f].push_back(i);
    for (const auto& f : files[i].wrapping_functions) wrap_def[f].push_back(i);
    for (const auto& c : files[i].grad_off_forwards) off_forward_def[c].push_back(i);
    for (const auto& c : files[i].sharding_datasets) sharding_def[c].push_back(i);
    for (const auto& c : files[i].synthetic_datasets) synthetic_def[c].push_back(i);
    for (const auto& c : files[i].linear_classes) linear_def[c].push_back(i);
    for (const auto& c : files[i].module_classes) module_def[c].push_back(i);
    for (const auto& c : files[i].defined_classes)
      if (auto& v = class_any_def[c]; v.empty() || v.back() != i) v.push_back(i);
    for (const auto& c : files[i].communicating_classes) comm_def[c].push_back(i);
    for (const auto& [g, k] : files[i].optimizer_factories) factory_def[g].push_back(i);
    for (const auto& g : files[i].batch_summed_losses) summed_def[g].push_back(i);
    for (const auto& g : files[i].point_to_point) p2p_def[g].push_back(i);
    // Classes with methods that accumulate (LL102) or back-propagate (LL101): one index, one
    // lookup per import.
    for (const auto* methods : {&files[i].accumulating_methods, &files[i].backprop_methods, &files[i].history_methods})
      for (const auto& cm : *methods)
        if (auto& v = method_def[cm.substr(0, cm.find('.'))]; v.empty() || v.back() != i) v.push_back(i);
    for (const auto& h : files[i].helper_methods) {
      auto& v = helper_def[h.param >= 0 ? h.method : h.method.substr(0, h.method.find('.'))];
      if (v.empty() || v.back() != i) v.push_back(i);
    }
    for (const auto& e : files[i].eval_leaving) eval_def[e.function].push_back(i);
    for (const auto& e : files[i].freezing)
      if (auto& v = freeze_def[e.function]; v.empty() || v.back() != i) v.push_back(i);
    for (const auto& [c, n] : files[i].model_sizes) size_def[c].push_back(i);
    for (const auto& g : files[i].trainers) trainer_def[g].push_back(i);
    for (const auto& entry : files[i].mode_free_classes)
      if (auto& v = mode_free_def[entry.substr(0, entry.find('|'))]; v.empty() || v.back() != i) v.push_back(i);
    for (const auto& ck : files[i].detached_forward_elements)
      if (auto& v = detached_def[ck.substr(0, ck.rfind('.'))]; v.empty() || v.back() != i) v.push_back(i);
  }
  // Functions named like a loss, by name: a name whose every definition in the run returns a
  // Python number (`calc_dataset_loss`, three copies of one helper, each summing `.item()`),
  // or one with a definition that does not.
  {
    std::unordered_map<std::string, bool> number;  // name -> every definition returns a number
    for (const FileSummary& s : files)
      for (const auto& [name, is_number] : s.loss_functions) {
        auto [it, fresh] = number.try_emplace(name, is_number);
        it->second = it->second && is_number;
      }
    // (To the files that read the name: `referenced` is sorted, and holds the words of what a
    // file imports, so `from stats import calc_dataset_loss as dl` counts.)
    // A name some definition of which returns something else: a file reading it learns that
    // the run shows what it returns (its own number-returning definitions, or a `get_*()`
    // accessor it would otherwise take for an object's own, are not all there is).
    if (!number.empty())
      for (size_t i = 0; i < files.size(); ++i) {
        // (A name imported by name, `from stats import calc_dataset_loss`, is read as its import
        // qualifies it: FileSummary::imported_refs, by their last components.)
        const auto& refs = files[i].imported_refs;
        for (const auto& [name, is_number] : number) {
          auto names_it = [&](const std::string& q) {  // `pkg.stats.calc_dataset_loss`
            return q.size() > name.size() && q[q.size() - name.size() - 1] == '.' &&
                   q.compare(q.size() - name.size(), name.size(), name) == 0;
          };
          if (!std::binary_search(files[i].referenced.begin(), files[i].referenced.end(), name) &&
              std::none_of(refs.begin(), refs.end(), names_it))
            continue;
          if (is_number) {
            views[i].number_losses.insert(name);
            continue;
          }
          // (Only where it changes a reading: a `get_*` accessor, or a file whose own
          // definitions return numbers; the others read the name as a loss already, and get
          // no view, no second analysis, for it.)
          bool own_number = name.rfind("get_", 0) == 0;
          for (const auto& [own, n] : files[i].loss_functions) own_number = own_number || (own == name && n);
          if (own_number) views[i].other_losses.insert(name);
        }
      }
  }
  // The files defining what file i imports as `q`: the module Python imports is found among all
  // the files of its name first (another `nets.py` elsewhere in the tree is not it), else, with
  // `defs` (the files defining the name), through a package's star re-exports. Callers decide
  // what several definitions mean (most: nothing).
  auto imported_from = [&](const std::string& q, size_t i,
                           const std::unordered_map<std::string, std::vector<size_t>>* defs) {
    std::vector<size_t> def;
    const std::string qmod = q.size() > last(q).size() ? q.substr(0, q.size() - last(q).size() - 1) : "";
    if (auto m = by_last.find(last(qmod)); !qmod.empty() && m != by_last.end())
      def = defining_files(q, i, m->second, files, &modules);
    if (def.empty() && defs)
      if (auto z = defs->find(last(q)); z != defs->end()) def = reexporting_files(q, i, z->second, files, by_last);
    return def;
  };
  // LL205: is the class file i imports as `q` mode-free? Its one defining module says so, and
  // every imported class that says depends on is too (a cycle, or a chain past 8, is not).
  std::map<std::pair<size_t, std::string>, char> mode_free_memo;  // 0 deciding, 1 no, 2 yes
  std::function<bool(size_t, const std::string&, int)> mode_free = [&](size_t i, const std::string& q, int depth) {
    if (depth > 8 || !mode_free_def.count(last(q))) return false;
    auto [it, fresh] = mode_free_memo.try_emplace({i, q}, 0);
    if (!fresh) return it->second == 2;
    bool r = false;
    if (const std::vector<size_t> def = imported_from(q, i, &mode_free_def); def.size() == 1)
      for (const std::string& entry : files[def[0]].mode_free_classes) {
        std::vector<std::string> parts;
        for (size_t b = 0, e; b <= entry.size(); b = e + 1) {
          e = entry.find('|', b);
          if (e == std::string::npos) e = entry.size();
          parts.push_back(entry.substr(b, e - b));
        }
        if (parts[0] != last(q)) continue;
        r = true;
        for (size_t k = 1; k < parts.size() && r; ++k) r = mode_free(def[0], parts[k], depth + 1);
        break;
      }
    mode_free_memo[{i, q}] = r ? 2 : 1;
    return r;
  };
  for (size_t i = 0; i < files.size(); ++i) {
    for (const auto& q : files[i].dataset_uses) {
      auto it = class_def.find(last(q));
      if (it == class_def.end()) continue;
      for (size_t j : defining_files(q, i, it->second, files, &modules)) views[j].classes_with_workers.insert(last(q));
    }
    for (const auto& [q, off, via] : files[i].imported_calls) {
      const std::string lq = last(q);  // (asked of every index below: one copy)
      auto it = func_def.find(lq);
      if (it != func_def.end()) {
        std::vector<size_t> def = defining_files(q, i, it->second, files, &modules);
        if (def.empty()) def = reexporting_files(q, i, it->second, files, by_last);
        for (size_t j : def) {
          if (lq.compare(0, 4, "test") == 0 && j != i) views[j].called_tests.insert(lq);
          auto& sites = views[j].external_calls[lq];
          if (!off && !via.empty()) relayed.push_back({i, &via, j, lq, sites.size()});
          sites.push_back(off);
        }
      }
      auto w = wrap_def.find(lq);
      if (w != wrap_def.end() && !defining_files(q, i, w->second, files, &modules).empty()) views[i].distributed_wrappers.insert(q);
      // Classes too may come through a package's `__init__` that re-exports them
      // (`from pkg.datasets import RLDSDataset`, defined in pkg/datasets/datasets.py).
      auto defined = [&](const std::vector<size_t>& defs) {
        return !defining_files(q, i, defs, files, &modules).empty() || !reexporting_files(q, i, defs, files, by_last).empty() ||
               reexported_by_name(q, defs, files, by_last);
      };
      auto o = off_forward_def.find(lq);
      if (o != off_forward_def.end() && defined(o->second)) views[i].grad_off_forward_classes.insert(q);
      auto r = sharding_def.find(lq);
      if (r != sharding_def.end() && defined(r->second)) views[i].sharding_datasets.insert(q);
      auto y = synthetic_def.find(lq);
      if (y != synthetic_def.end() && defined(y->second)) views[i].synthetic_datasets.insert(q);
      auto l = linear_def.find(lq);
      if (l != linear_def.end() && defined(l->second)) views[i].linear_classes.insert(q);
      auto mc = module_def.find(lq);
      if (mc != module_def.end() && defined(mc->second)) views[i].module_classes.insert(q);
      // (Only a class that is no module and is named like one, `FullPipeline`, where LL301
      // reads it: a view, and a second reading of the file, for nothing otherwise.)
      auto ac = class_any_def.find(lq);
      if (ac != class_any_def.end() && !views[i].module_classes.count(q)) {
        if (last_word_names_a_model(lq) && defined(ac->second)) views[i].run_classes.insert(q);
      }
      if (ac != class_any_def.end() && named_for_a_gradient_method(lq) && defined(ac->second))
        views[i].run_gradient_named_classes.insert(q);
      // (Any definition of the name that communicates: a class of that name might be it.)
      if (comm_def.count(lq)) views[i].communicating_classes.insert(q);
      // LL206: an optimizer factory, or a loss summed over the batch, of the one module defining it.
      // (A package's `__init__` that re-exports it by name, `from .misc import build_optimizer`,
      // counts when one module of the run defines the name.)
      if (auto g = factory_def.find(lq); g != factory_def.end()) {
        std::vector<size_t> def = defining_files(q, i, g->second, files, &modules);
        if (def.empty()) def = reexporting_files(q, i, g->second, files, by_last);
        if (def.empty() && g->second.size() == 1 && reexported_by_name(q, g->second, files, by_last)) def = g->second;
        if (def.size() == 1)
          for (const auto& [name, kind] : files[def[0]].optimizer_factories)
            if (name == lq) views[i].optimizer_factory_kinds[q] = kind;
      }
      if (auto g = summed_def.find(lq); g != summed_def.end() && defined(g->second)) views[i].batch_summed_losses.insert(q);
      if (auto g = p2p_def.find(lq); g != p2p_def.end() && defined(g->second)) views[i].point_to_point_imports.insert(q);
      // Functions that leave their argument in eval mode, or frozen: (position, parameter) per
      // imported name.
      auto param_effects = [&](const std::unordered_map<std::string, std::vector<size_t>>& defs,
                               std::vector<EvalLeaving> FileSummary::*effects, auto&& take) {
        auto ev = defs.find(lq);
        if (ev == defs.end()) return;
        std::vector<size_t> def = defining_files(q, i, ev->second, files, &modules);
        if (def.empty()) def = reexporting_files(q, i, ev->second, files, by_last);
        for (size_t j : def)
          for (const auto& e : files[j].*effects)
            if (e.function == lq) take(e);
      };
      param_effects(eval_def, &FileSummary::eval_leaving, [&](const EvalLeaving& e) {
        auto& v = views[i].eval_leaving_imports[q];
        const std::pair<int, std::string> entry{e.index, e.param};
        if (std::find(v.begin(), v.end(), entry) == v.end()) v.push_back(entry);
      });
      param_effects(freeze_def, &FileSummary::freezing, [&](const EvalLeaving& e) {
        auto& v = views[i].freezing_imports[q];
        if (std::none_of(v.begin(), v.end(), [&](const EvalLeaving& x) { return x.index == e.index && x.flag == e.flag; }))
          v.push_back(e);
      });
      // LL301: a model class of visible size, a trainer.
      if (size_def.count(lq))
        if (const std::vector<size_t> def = imported_from(q, i, &size_def); def.size() == 1)
          for (const auto& [c, n] : files[def[0]].model_sizes)
            if (c == lq) views[i].imported_model_sizes[q] = n;
      if (mode_free(i, q, 0)) views[i].mode_free_classes.insert(q);
      // A module class's forward elements without history (one defining module).
      if (detached_def.count(lq))
        if (const std::vector<size_t> def = imported_from(q, i, &detached_def); def.size() == 1)
          for (const auto& ck : files[def[0]].detached_forward_elements)
            if (ck.compare(0, ck.rfind('.'), lq) == 0 && ck.rfind('.') == lq.size())
              views[i].detached_forward_elements[q].push_back(std::stoi(ck.substr(ck.rfind('.') + 1)));
      if (trainer_def.count(lq))
        if (const std::vector<size_t> def = imported_from(q, i, &trainer_def); def.size() == 1)
          for (const auto& g : files[def[0]].trainers)
            if (g == lq) views[i].imported_trainers.insert(q);
      if (auto a = method_def.find(lq); a != method_def.end()) {
        for (size_t j : defining_files(q, i, a->second, files, &modules))
          for (const auto& cm : files[j].accumulating_methods)
            if (cm.compare(0, cm.find('.'), lq) == 0) views[i].accumulating_imports.insert(q + cm.substr(cm.find('.')));
        if (const std::vector<size_t> def = imported_from(q, i, &method_def); def.size() == 1)
        {
          for (const auto& cm : files[def[0]].backprop_methods)
            if (cm.compare(0, cm.find('.'), lq) == 0 && cm.find('.') == lq.size())
              views[i].backprop_method_imports.insert(q + cm.substr(cm.find('.')));
          for (const auto& cm : files[def[0]].history_methods)
            if (cm.compare(0, cm.find('.'), lq) == 0 && cm.find('.') == lq.size())
              views[i].history_method_imports.insert(q + cm.substr(cm.find('.')));
        }
      }
      // (One defining module: ambiguous definitions decide nothing.)
      if (helper_def.count(lq))
        if (const std::vector<size_t> def = imported_from(q, i, &helper_def); def.size() == 1)
          for (const auto& h : files[def[0]].helper_methods) {
            if (h.param >= 0 && h.method == lq) views[i].helper_method_imports[q] = h;
            if (h.param < 0 && h.method.compare(0, h.method.find('.'), lq) == 0)
              views[i].helper_method_imports[q + h.method.substr(h.method.find('.'))] = h;
          }
    }
    // Classes a star import brings (`from src.methods.gradCAM import *`): their methods that
    // back-propagate, by the class's own name, "Class.method", as the file names it.
    // Also through further star imports (`from model import *` in a notebook, where model.py
    // does `from utils import *`), a few modules deep.
    if (!method_def.empty() && !files[i].star_modules.empty()) {
      std::vector<std::string> frontier(files[i].star_modules.begin(), files[i].star_modules.end());
      std::unordered_set<size_t> seen{i};
      for (int depth = 0; depth < 4 && !frontier.empty(); ++depth) {
        std::vector<std::string> next;
        for (const std::string& mod : frontier)
          if (auto m = by_last.find(last(mod)); m != by_last.end())
            for (size_t j : m->second) {
              if (!(files[j].module == mod || module_is(files[j].module, mod)) || !seen.insert(j).second) continue;
              views[i].backprop_method_imports.insert(files[j].backprop_methods.begin(), files[j].backprop_methods.end());
              next.insert(next.end(), files[j].star_modules.begin(), files[j].star_modules.end());
            }
        frontier = std::move(next);
      }
    }
    // Methods of an imported class called in a loop: the defining module (found as the import
    // names it, one of them) learns its method runs once per iteration there.
    for (const auto& call : files[i].loop_method_calls) {
      const std::string& q = call.cls;  // qualified class
      const std::vector<size_t> def = imported_from(q, i, nullptr);
      if (def.size() != 1) continue;
      // (One shared copy per loop, however many of its methods keep something.)
      std::shared_ptr<const FileSummary::LoopMethodCall> shared;
      for (const std::string& method : call.methods) {
        const std::string key = last(q) + "." + method;
        const auto& keeping = files[def[0]].keeping_methods;
        const auto& hooking = files[def[0]].hooking_methods;
        const bool keeps = std::find(keeping.begin(), keeping.end(), key) != keeping.end();
        const bool hooks = std::find(hooking.begin(), hooking.end(), key) != hooking.end();
        if (!keeps && !hooks) continue;
        if (!shared) shared = std::make_shared<const FileSummary::LoopMethodCall>(call);
        if (keeps) views[def[0]].loop_called_methods[key].emplace_back(shared, files[i].path);
        if (hooks) views[def[0]].loop_called_hooks[key].emplace_back(shared, files[i].path);
      }
    }
    for (const auto& q : files[i].type_refs) {
      auto o = off_forward_def.find(last(q));
      if (o != off_forward_def.end() && !defining_files(q, i, o->second, files, &modules).empty())
        views[i].grad_off_forward_classes.insert(q);
      auto r = sharding_def.find(last(q));
      if (r != sharding_def.end() && !defining_files(q, i, r->second, files, &modules).empty())
        views[i].sharding_datasets.insert(q);
    }
    for (const DistributedFeed& d : files[i].distributed_feeds) {
      auto it = func_def.find(last(d.callee));
      if (it == func_def.end()) continue;
      for (size_t j : defining_files(d.callee, i, it->second, files, &modules))
        views[j].feeds_distributed[last(d.callee)].emplace_back(d, files[i].path.empty() ? files[i].module : files[i].path);
    }
  }
  // Methods called by name in other files: an open method (still with grad) turns off when
  // every call in the other files runs with grad disabled; one this file's own calls turned
  // off turns back on when another file calls it with grad.
  {
    std::unordered_map<std::string, std::vector<std::pair<size_t, bool>>> by_name, namesakes;  // name -> (file, all off)
    for (size_t i = 0; i < files.size(); ++i) {
      for (const auto& [name, off] : files[i].method_calls) by_name[name].emplace_back(i, off);
      for (const auto& [name, off] : files[i].method_calls_from_namesakes) namesakes[name].emplace_back(i, off);
    }
    // A call naming a method reaches file j's method unless the caller's imports show which
    // definition it reaches: a file whose project imports (followed transitively) lead to a
    // definition of a method of that name reaches only those (a tutorial collection's
    // `net.sample(image)` in one chapter's notebook is its own chapter's `Net.sample`, not
    // another chapter's).
    std::unordered_map<std::string, std::vector<size_t>> definers;  // method name -> files
    for (size_t j = 0; j < files.size(); ++j)
      for (const auto* keys : {&files[j].open_methods, &files[j].name_off_methods})
        for (const auto& key : *keys)
          if (auto& v = definers[last(key)]; v.empty() || v.back() != j) v.push_back(j);
    std::unordered_map<size_t, std::vector<size_t>> closures;  // file -> files it imports, sorted (empty: unknown)
    constexpr size_t kClosureFiles = 256;
    auto closure = [&](size_t i) -> const std::vector<size_t>& {
      auto [it, fresh] = closures.try_emplace(i);
      if (!fresh) return it->second;
      std::vector<size_t> seen{i};
      for (size_t w = 0; w < seen.size() && seen.size() <= kClosureFiles; ++w)
        for (const std::string& imp : files[seen[w]].imports)
          for (size_t k : imported_modules(imp, seen[w]))
            if (std::find(seen.begin(), seen.end(), k) == seen.end()) seen.push_back(k);
      if (seen.size() > kClosureFiles) seen.clear();  // too far to tell: unknown
      std::sort(seen.begin(), seen.end());
      return it->second = std::move(seen);
    };
    auto reaches = [&](size_t i, size_t j, const std::string& name) {
      auto d = definers.find(name);
      if (d == definers.end() || d->second.size() < 2) return true;
      const std::vector<size_t>& c = closure(i);
      if (c.empty() || std::binary_search(c.begin(), c.end(), j)) return true;
      for (size_t k : d->second)
        if (std::binary_search(c.begin(), c.end(), k)) return false;  // it reaches another definition
      return true;
    };
    // `inherited`: the calls on `self` of file j's classes' bases in other files, if any
    // (+1 all with grad disabled, 0 not all, -1 none).
    auto others_all_off = [&](size_t j, const std::string& name, bool* any, int inherited = -1) {
      bool all = inherited != 0;
      *any = inherited >= 0;
      for (const auto* index : {&by_name, &namesakes}) {
        if (*any && index == &namesakes) break;  // calls from namesakes count only when nothing else names it
        auto it = index->find(name);
        if (it != index->end())
          for (const auto& [i, off] : it->second)
            if (i != j && reaches(i, j, name)) { *any = true; all = all && off; }
      }
      return all;
    };
    // A subclass's override receives the calls its bases in other files make on `self`.
    std::unordered_map<std::string, std::vector<size_t>> class_files;  // class with self calls or bases -> files
    for (size_t i = 0; i < files.size(); ++i) {
      std::set<std::string> named;
      for (const auto& sc : files[i].self_calls) named.insert(std::get<0>(sc));
      for (const auto& cb : files[i].class_bases) named.insert(cb.first);
      for (const auto& n : named) class_files[n].push_back(i);
    }
    // "Class.method" -> whether every call on self of that class's bases in other files runs
    // with grad disabled, for file j's classes.
    auto inherited = [&](size_t j) {
      std::map<std::string, bool> out;
      std::set<std::string> own;
      for (const auto& cb : files[j].class_bases) own.insert(cb.first);
      for (const std::string& start : own) {
        std::vector<std::pair<size_t, std::string>> work;  // (file, class) ancestors
        std::set<std::pair<size_t, std::string>> seen;
        auto up = [&](size_t i, const std::string& cls) {
          for (const auto& [k, base] : files[i].class_bases) {
            if (k != cls) continue;
            if (base.find('.') == std::string::npos) {  // a class of the same file
              if (seen.insert({i, base}).second) work.emplace_back(i, base);
              continue;
            }
            auto it = class_files.find(last(base));
            if (it == class_files.end()) continue;
            for (size_t d : defining_files(base, i, it->second, files, &modules))
              if (d != j && seen.insert({d, last(base)}).second) work.emplace_back(d, last(base));
          }
        };
        up(j, start);
        for (size_t w = 0; w < work.size() && w < 64; ++w) {
          const auto [i, cls] = work[w];
          // (j's own classes' calls on self are j's own callers already)
          for (const auto& [k, method, off] : files[i].self_calls)
            if (k == cls && i != j) {
              auto [it, fresh] = out.try_emplace(start + "." + method, off);
              it->second = it->second && off;
            }
          up(i, cls);
        }
      }
      return out;
    };
    for (size_t j = 0; j < files.size(); ++j) {
      if (files[j].open_methods.empty() && files[j].name_off_methods.empty()) continue;
      const std::map<std::string, bool> from_bases = files[j].class_bases.empty() ? std::map<std::string, bool>() : inherited(j);
      auto all_off = [&](const std::string& key, bool* any) {
        const std::string name = last(key);
        auto it = from_bases.find(key);
        return others_all_off(j, name, any, it == from_bases.end() ? -1 : it->second ? 1 : 0);
      };
      // Entries are "Class.method": the calls naming the method, and the class's bases' calls
      // on self.
      bool any = false;
      for (const auto& key : files[j].open_methods)
        if (all_off(key, &any) && any) views[j].external_method_calls[key] = true;
      for (const auto& key : files[j].name_off_methods)
        if (!all_off(key, &any) && any) views[j].external_method_calls[key] = false;
    }
  }
  // Functions named like evaluation that another file trains through.
  {
    std::unordered_map<std::string, std::vector<size_t>> trained;  // call name -> files
    for (size_t i = 0; i < files.size(); ++i)
      for (const auto& name : files[i].backprop_results) trained[name].push_back(i);
    for (size_t j = 0; j < files.size(); ++j)
      for (const auto& name : files[j].eval_named) {
        auto it = trained.find(name);
        if (it == trained.end()) continue;
        for (size_t i : it->second)
          if (i != j) views[j].trained_by_callers.insert(name);
      }
  }
  // A program with no GPU evidence of its own whose imports reach some (`from trainer import
  // Trainer`, whose constructor moves the model to CUDA) is no CPU-only program.
  // (A file without torch of its own was not read as a program yet: it may be one.) Only the
  // imports such files reach are resolved; a walk that finds no evidence clears everything it
  // saw, whose imports it followed to the end.
  {
    const size_t n = files.size();
    bool any_gpu = false;
    for (const FileSummary& f : files) any_gpu = any_gpu || f.gpu_evidence;
    const auto package_init = any_gpu ? package_inits(files) : decltype(package_inits(files)){};
    std::vector<std::vector<size_t>> down(n);
    std::vector<char> resolved(n), known(n);  // known: 1 reaches no GPU evidence, 2 reaches some
    std::vector<size_t> seen, work;
    std::vector<char> in_walk(n);
    for (size_t i = 0; i < n && any_gpu; ++i) {
      if (!(files[i].program || !files[i].imports_torch) || files[i].gpu_evidence) continue;
      bool gpu = false;
      seen.assign(1, i);
      work.assign(1, i);
      in_walk[i] = 1;
      while (!work.empty() && !gpu) {
        const size_t j = work.back();
        work.pop_back();
        if (!resolved[j]) resolved[j] = 1, down[j] = files_imported_by(files, index, package_init, j);
        for (size_t k : down[j]) {
          if (in_walk[k] || known[k] == 1) continue;
          if (known[k] == 2 || files[k].gpu_evidence) {
            gpu = true;
            break;
          }
          in_walk[k] = 1;
          seen.push_back(k);
          work.push_back(k);
        }
      }
      for (size_t k : seen) in_walk[k] = 0;
      if (gpu) known[i] = 2;
      else
        for (size_t k : seen) known[k] = 1;
      views[i].gpu_via_imports = gpu;
    }
  }
  // Relevance through project imports, to a fixed point: a file that imports no torch is
  // analysed when it imports a project module that does, directly or through others.
  {
    std::vector<bool> relevant(files.size());
    for (size_t j = 0; j < files.size(); ++j) relevant[j] = files[j].imports_torch;
    // The project files each file without torch imports, resolved once.
    std::vector<std::vector<size_t>> imported(files.size());
    for (size_t i = 0; i < files.size(); ++i)
      if (!relevant[i])
        for (const std::string& imp : files[i].imports)
          for (size_t j : imported_modules(imp, i)) imported[i].push_back(j);
    // A module without torch that runs what torch code hands it (`test(model, users)` of a
    // `batch_test.py` calling `.detach().cpu()` on the model's outputs), imported by a file of
    // the run that imports torch itself.
    bool any_tensor_api = false;
    for (size_t i = 0; i < files.size(); ++i) any_tensor_api = any_tensor_api || (!relevant[i] && files[i].tensor_api);
    for (size_t j = 0; j < files.size() && any_tensor_api; ++j) {
      if (!files[j].imports_torch) continue;
      for (const std::string& imp : files[j].imports)
        for (size_t k : imported_modules(imp, j))
          if (!relevant[k] && files[k].tensor_api) relevant[k] = views[k].torch_via_project = true;
    }
    bool changed = true;
    for (int round = 0; changed && round < 16; ++round) {
      changed = false;
      for (size_t i = 0; i < files.size(); ++i) {
        if (relevant[i]) continue;
        for (size_t j : imported[i])
          if (relevant[j]) {
            relevant[i] = views[i].torch_via_project = changed = true;
            break;
          }
      }
    }
  }
  // A call whose mode its function's entry decides runs with grad disabled when every other
  // file's call of that function does: `with torch.no_grad(): validate(model)` in one module,
  // `validate` calling `evaluate` in a second, `evaluate` defined in a third. Calls only turn
  // off, so the chains settle; each round follows one more link.
  for (int round = 0; round < 8 && !relayed.empty(); ++round) {
    bool changed = false;
    for (size_t k = 0; k < relayed.size();) {
      const Relayed& r = relayed[k];
      const auto& entry = views[r.from].external_calls;
      auto e = entry.find(*r.via);
      bool off = e != entry.end() && !e->second.empty();
      if (off)
        for (bool o : e->second) off = off && o;
      if (!off) { ++k; continue; }
      views[r.to].external_calls[r.callee][r.site] = true;
      relayed[k] = std::move(relayed.back());
      relayed.pop_back();
      changed = true;
    }
    if (!changed) break;
  }
  // Keep only call facts that can change a finding (see Facts::summarize): all calls grad-off
  // for a function that is not off yet, any call grad-on for one its own file turned off.
  // Most imported functions are called with grad on and are on already: their files need
  // no second analysis.
  for (size_t j = 0; j < files.size(); ++j) {
    auto& calls = views[j].external_calls;
    for (auto it = calls.begin(); it != calls.end();) {
      bool all_off = true;
      for (bool off : it->second) all_off = all_off && off;
      const auto& co = files[j].caller_off;
      bool is_caller_off = std::find(co.begin(), co.end(), it->first) != co.end();
      if (is_caller_off || all_off) ++it;
      else it = calls.erase(it);
    }
  }
  return views;
}

}  // namespace ll
