// LL205 eval-mode-not-restored: a training loop runs code that puts the model in eval()
// mode (inline or through a same-file function such as validate()) and nothing puts it
// back in train() before the loop's next training forward.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "checks/common.hpp"
#include "checks/flow.hpp"

namespace ll {
namespace {

// Prefix of the names of models a called function builds on every call.
constexpr const char* kFresh = "@fresh";

struct Ev {
  char kind;          // 'E' eval, 'T' train (or unknown mode), 'F' training forward
  std::string model;  // dotted name in the loop's terms ("" when unknown)
  int site;           // call site in the loop (the statement a fix goes after)
  int origin;         // call site of the eval()/train()/forward itself
  bool evidence = true;  // 'T': the receiver is known to be a model (not only a name)
};

// Dotted name of a model-ish receiver, with `.module` (DDP/DataParallel wrapper) and a
// trailing `.forward` dropped. A name `func` binds only to the module under placement and
// mode calls (`model = self.train()`, `net = net.to(device)`: they return the module itself)
// is that module.
std::string model_name(const Facts& f, Id func, Id x) {
  x = f.unplaced(x);  // `net.cuda().eval()` names `net`
  std::string d = f.dotted(x);
  if (f.e(x).kind == ExprKind::Name) {
    std::string same;
    bool all = true;
    for (Id v : f.bindings(func, d)) {
      Id u = f.unplaced(v);
      const std::string& ud = u == v ? std::string() : f.dotted(u);
      if (ud.empty() || ud == d || (!same.empty() && ud != same)) { all = false; break; }
      same = ud;
    }
    if (all && !same.empty()) d = same;
  }
  for (const char* suffix : {".forward", ".module"})
    if (d.size() > std::string(suffix).size() && d.compare(d.size() - std::string(suffix).size(), std::string::npos, suffix) == 0)
      d.resize(d.size() - std::string(suffix).size());
  return d;
}

Id moved_module(const Facts& f, Id v);

// A model that function `g` builds for itself on every call (`model = PINN(...).to(device)`)
// and neither returns nor stores anywhere else: its mode ends with the call. Not a parameter,
// not `self`, not built by a method of one of them (which may hand back a shared module).
bool fresh_each_call(const Facts& f, Id g, const std::string& root) {
  if (g == kNone || root.empty() || root == "self"sv) return false;
  auto foreign = [&](const std::string& d) {
    const std::string r = d.substr(0, d.find('.'));
    return r == "self"sv || f.is_param(g, r);
  };
  if (foreign(root)) return false;
  const std::vector<Id> vals = f.own_bindings(g, root);
  if (vals.empty()) return false;
  for (Id v : vals) {
    Id u = moved_module(f, v);
    if (f.dotted(u) == root) continue;  // `model = model.to(device)`
    if (f.e(u).kind != ExprKind::Call) return false;
    const std::string& callee = f.dotted(f.e(u).kids[0]);
    if (foreign(callee) || callee.rfind(root + ".", 0) == 0) return false;
  }
  // Handed back: `return model`, `return model, history`.
  auto is_it = [&](Id x) { return f.dotted(moved_module(f, x)) == root; };
  for (Id r : f.returned_values(g)) {
    if (is_it(r)) return false;
    if (f.e(r).kind == ExprKind::Sequence)
      for (Id k : f.e(r).kids)
        if (is_it(k)) return false;
  }
  // Stored elsewhere: `self.model = model`, `models.append(model)`.
  for (const StmtSite& ss : f.stmt_sites) {
    if (ss.func != g) continue;
    const Stmt& st = f.m.s(ss.stmt);
    if (st.kind != StmtKind::Assign || st.value == kNone || !is_it(st.value)) continue;
    for (Id t : st.targets)
      if (f.dotted(t) != root) return false;
  }
  for (int ci : f.calls_in(g)) {
    const Id call = f.calls[ci].call;
    if (!in(f.callee_attr(call), {"append"sv, "extend"sv, "insert"sv, "add"sv, "put"sv})) continue;
    const Expr& x = f.e(call);
    for (size_t k = 1; k < x.kids.size(); ++k)
      if (is_it(x.kids[k])) return false;
  }
  return true;
}

class Events {
 public:
  explicit Events(const Facts& f) : f_(f) {}

  // Events of the call sites `sites` (any order), expanded through same-file functions.
  std::vector<Ev> of_sites(std::vector<int> sites, int depth, const std::map<std::string, std::string>& rename,
                           int top, bool top_level, Id loop_func) {
    std::sort(sites.begin(), sites.end(),
              [&](int a, int b) { return f_.e(f_.calls[a].call).range.begin < f_.e(f_.calls[b].call).range.begin; });
    if (depth == 0) expanded_ = 0;
    std::vector<Ev> out;
    for (int ci : sites) {
      const CallSite& c = f_.calls[ci];
      if (c.in_lambda) continue;
      int here = top_level ? ci : top;
      const std::string& attr = f_.callee_attr(c.call);
      Id recv = f_.callee_receiver(c.call);
      if ((attr == "eval"sv || attr == "train"sv) && recv != kNone && f_.qual(recv).empty()) {
        char k = 'T';
        if (attr == "eval"sv) k = f_.e(c.call).kids.size() == 1 ? 'E' : 'T';
        else if (f_.e(c.call).kids.size() > 1) {
          Id a = f_.arg(c.call, 0, "mode");
          if (a != kNone && f_.e(a).kind == ExprKind::Literal && f_.e(a).lit == LitKind::False) k = 'E';
        }
        // Leaving eval mode needs no evidence that the receiver is a model: a `train()` only
        // matters to an eval() of the same name, which had it (`model = Imported(...)` whose
        // class this file cannot see, put back by `model.train()` at the top of each step).
        const bool model = is_model(c, recv);
        if (model || (k == 'T' && !f_.dotted(f_.unplaced(recv)).empty())) {
          out.push_back({k, map_name(model_name(f_, c.func, recv), rename), here, ci, model});
          continue;
        }
      }
      // A method of the model whose class the call does not resolve (the model is handed in),
      // named as methods of the file's module classes that each put the module or a part of it
      // in train mode (`discriminator.train_custom()` calling `self.classifier_head.train()`,
      // the part that trains): leaving eval mode.
      if (c.target_func == kNone && recv != kNone && !attr.empty() && f_.qual(recv).empty() &&
          !f_.dotted(f_.unplaced(recv)).empty() && trains_by_name(attr)) {
        out.push_back({'T', map_name(model_name(f_, c.func, recv), rename), here, ci, is_model(c, recv)});
        continue;
      }
      // A forward: a model call, or (C++) a call that resolves to a same-file `forward` method.
      const bool forward = f_.is_model_call(c) ||
                           (c.target_func != kNone && f_.m.funcs[c.target_func].name == "forward"sv &&
                            f_.func_is_method_of_module(c.target_func));
      if (!f_.grad_off(c) && forward && !detached_at_once(c) && trains_here(c, loop_func)) {
        Id callee = f_.e(c.call).kids[0];
        out.push_back({'F', map_name(model_name(f_, c.func, callee), rename), here, ci});
        continue;
      }
      // A function of another module of the run that leaves the module it is handed in eval
      // mode (`from utils import evaluate`; its `model.eval()` is never undone).
      if (c.target_func == kNone && f_.project && !f_.project->eval_leaving_imports.empty()) {
        auto it = f_.project->eval_leaving_imports.find(f_.e(f_.e(c.call).kids[0]).qname);
        if (it != f_.project->eval_leaving_imports.end()) {
          for (const auto& [index, param] : it->second) {
            const Id a = f_.arg(c.call, static_cast<size_t>(index), param);
            if (a != kNone) out.push_back({'E', map_name(model_name(f_, c.func, a), rename), here, ci});
          }
          continue;
        }
      }
      // (Helpers that call each other thousands of times would be walked once per path: only
      // a callee whose calls can give an event is expanded, and at most kMaxExpanded events
      // come from the callees of one loop.)
      if (c.target_func != kNone && depth < 4 && c.target_func != c.func && expanded_ < kMaxExpanded &&
          eventful(c.target_func)) {
        std::map<std::string, std::string> inner = bind_params(c, rename);
        const std::vector<int>& body = f_.calls_in(c.target_func);
        add_fresh_locals(c.target_func, body, inner);
        auto sub = of_sites(body, depth + 1, inner, here, false, c.target_func);
        expanded_ += sub.size();
        out.insert(out.end(), sub.begin(), sub.end());
      }
    }
    return out;
  }

 private:
  // Can a call of `g` give an event: an eval()/train() call, a forward or a call of an imported
  // function that leaves its argument in eval mode, in `g` or a same-file function it reaches?
  bool eventful(Id g) {
    auto [it, fresh] = eventful_.try_emplace(g, false);
    if (fresh)
      it->second = f_.reaches(g, [&](const CallSite& x) {
        const std::string& a = f_.callee_attr(x.call);
        return a == "eval"sv || a == "train"sv || f_.is_model_call(x) ||
               (x.target_func != kNone && f_.m.funcs[x.target_func].name == "forward"sv) ||
               (x.target_func == kNone && f_.project && !f_.project->eval_leaving_imports.empty() &&
                f_.project->eval_leaving_imports.count(f_.e(f_.e(x.call).kids[0]).qname));
      });
    return it->second;
  }
  std::unordered_map<Id, bool> eventful_;

  // Is every method so named, of the file's module classes, one that calls `self.train()` or
  // `self.<part>.train()` (at least one such method)?
  bool trains_by_name(const std::string& name) {
    auto [it, fresh] = trains_by_name_.try_emplace(name, false);
    if (!fresh) return it->second;
    bool any = false, all = true;
    for (Id k = 0; k < f_.m.classes.size() && all; ++k) {
      if (!f_.is_module_class(k)) continue;
      for (Id g : f_.m.classes[k].methods) {
        if (f_.m.funcs[g].name != name || name == "train"sv || name == "eval"sv) continue;
        bool sets = false;
        for (int ci : f_.calls_in(g)) {
          const Id x = f_.calls[ci].call;
          if (f_.callee_attr(x) != "train"sv || f_.e(x).kids.size() > 1) continue;
          const std::string& r = f_.dotted(f_.callee_receiver(x));
          sets = sets || r == "self"sv || starts_with(r, "self.");
        }
        any = any || sets;
        all = all && sets;
      }
    }
    it->second = any && all;
    return it->second;
  }
  std::unordered_map<std::string, bool> trains_by_name_;
  static constexpr size_t kMaxExpanded = 20000;
  size_t expanded_ = 0;

  bool is_model(const CallSite& c, Id recv) const {
    const Expr& r = f_.e(recv);
    // C++: only modules (torch::nn holders, jit modules) have eval()/train(); the facts do
    // not yet see a same-file `TORCH_MODULE(Net)` holder parameter (`Net& model`) as a model.
    if (f_.m.lang == Lang::Cpp) return !f_.dotted(recv).empty();
    if (r.kind == ExprKind::Name && r.text == "self"sv) return f_.func_is_method_of_module(c.func);
    return f_.is_model_value(c.func, recv);
  }

  // Models the called function `g` builds on every call get a name of their own
  // (kFresh...), which no event of the loop's models matches.
  void add_fresh_locals(Id g, const std::vector<int>& body, std::map<std::string, std::string>& names) const {
    for (int cj : body) {
      const CallSite& x = f_.calls[cj];
      Id recv = kNone;
      if (in(f_.callee_attr(x.call), {"eval"sv, "train"sv})) recv = f_.callee_receiver(x.call);
      else if (f_.is_model_call(x)) recv = f_.e(x.call).kids[0];
      if (recv == kNone) continue;
      const std::string d = model_name(f_, g, recv);
      const std::string root = d.substr(0, d.find('.'));
      if (root.empty() || names.count(root)) continue;
      if (fresh_each_call(f_, g, root)) names[root] = kFresh + std::to_string(g) + "." + root;
    }
  }

  // A forward that trains: in the loop's own function, its innermost loop back-propagates;
  // in a called function, that function reaches backward().
  // `z = self.encoder(x).detach()`: no gradient reaches the model through this forward, so
  // it is not trained here (a frozen feature extractor feeding a head that is).
  bool detached_at_once(const CallSite& c) const {
    if (f_.detach_of(c) != kNone) return true;
    if (c.stmt == kNone) return false;
    bool hit = false;  // `self.encoder(x).data`
    for_each_expr(f_.m, f_.m.s(c.stmt).value, [&](Id x) {
      const Expr& ex = f_.e(x);
      hit = ex.kind == ExprKind::Attribute && ex.text == "data"sv && !ex.kids.empty() && ex.kids[0] == c.call;
      return !hit;
    });
    // Or bound to a name read only that way (`probs = policy(state)`, then `probs.data` to pick an
    // action, in a rollout that back-propagates another forward at the episode's end).
    return hit || detached_later(f_, c) != kNone;
  }

  bool trains_here(const CallSite& c, Id loop_func) const {
    if (c.func == loop_func && c.loop >= 0) return f_.loop_reaches_backward(c.loop);
    // (Once per function: a function of thousands of forwards asks the same question.)
    auto [it, fresh] = reaches_backward_.try_emplace(c.func, false);
    if (fresh) it->second = f_.reaches(c.func, [&](const CallSite& x) { return f_.is_backward(x); });
    return it->second;
  }
  mutable std::map<Id, bool> reaches_backward_;  // trains_here's answer per function

  static std::string map_name(const std::string& d, const std::map<std::string, std::string>& rename) {
    if (d.empty()) return d;
    std::string root = d.substr(0, d.find('.'));
    auto it = rename.find(root);
    if (it == rename.end()) return d;
    if (it->second.empty()) return "";
    return it->second + d.substr(root.size());
  }

  // Parameter name -> the caller's dotted argument (already in the loop's terms).
  std::map<std::string, std::string> bind_params(const CallSite& c, const std::map<std::string, std::string>& outer) const {
    std::map<std::string, std::string> out;
    const Function& g = f_.m.funcs[c.target_func];
    const Expr& call = f_.e(c.call);
    size_t first = (g.cls != kNone && !g.params.empty() && (g.params[0] == "self"sv || g.params[0] == "cls"sv)) ? 1 : 0;
    size_t nkw = call.kw.size();
    size_t npos = call.kids.size() - 1 - nkw;
    for (const auto& p : g.params) out[p] = "";  // unknown unless bound below
    if (first == 1) out.erase(g.params[0]);
    for (size_t i = 0; i < npos && first + i < g.params.size(); ++i)
      out[g.params[first + i]] = map_name(f_.dotted(call.kids[1 + i]), outer);
    for (size_t i = 0; i < nkw; ++i)
      if (out.count(call.kw[i])) out[call.kw[i]] = map_name(f_.dotted(call.kids[1 + npos + i]), outer);
    return out;
  }

  const Facts& f_;
};

bool same_model(const std::string& a, const std::string& b) { return a.empty() || b.empty() || a == b; }

bool mode_free_container(const Facts& f, Id call, Id cls, int depth);

// A torch.nn layer call (`nn.Dropout(0.1)`, `nn.LSTM(..., dropout=0.2)`): does it behave
// differently in eval mode? Another library's layer, or a `torch.nn` call this does not
// know, counts as modal.
bool modal_layer(const Facts& f, Id call) {
  static const char* kModal[] = {"Dropout", "AlphaDropout", "BatchNorm", "SyncBatchNorm", "InstanceNorm",
                                 "Transformer", "RReLU"};
  // Recurrent layers and attention differ between modes only through their dropout
  // argument (default 0).
  // (position of `dropout` among their positional parameters)
  static const std::pair<const char*, size_t> kDropoutArg[] = {
      {"RNN", 6}, {"LSTM", 5}, {"GRU", 5}, {"MultiheadAttention", 2}};
  const std::string& q = f.callee_qual(call);
  if (q.rfind("torch.nn.", 0) != 0) return true;
  std::string_view last = f.last_component(q);
  for (const char* k : kModal)
    if (last.find(k) != std::string_view::npos) return true;
  for (const auto& [k, pos] : kDropoutArg)
    if (last == k) {
      Id d = f.arg(call, pos, "dropout");
      if (f.has_kwargs_splat(call)) return true;
      if (d != kNone && !(f.e(d).kind == ExprKind::Literal && (f.e(d).text == "0"sv || f.e(d).text == "0.0"sv)))
        return true;
    }
  if (q.find("dropout") != std::string::npos) return true;  // F.dropout(x, training=...)
  // Made of layers written out in the call: modal if any of them is.
  if (last == "Sequential"sv || last == "ModuleList"sv) return !mode_free_container(f, call, kNone, 0);
  return false;
}

bool mode_free_class(const Facts& f, Id cls, int depth = 0);
bool mode_free_function(const Facts& f, Id fn, int depth);

// An activation handed in as a parameter and called (`activation()`, `act_layer()`: timm's and
// many model zoos' convention): torch's activations behave the same in both modes.
bool activation_parameter(const Facts& f, Id call) {
  Id callee = f.e(call).kids[0];
  if (f.e(callee).kind != ExprKind::Name) return false;
  const Id fn = f.function_at(f.e(call).range.begin);
  if (fn == kNone) return false;
  const std::string& name = f.e(callee).text;
  if (!f.is_param(fn, name)) return false;
  for (const auto& t : Facts::name_tokens(name))
    if (in(t, {"activation"sv, "act"sv, "nonlinearity"sv, "nonlin"sv})) return true;
  return false;
}

// While summarize_LL205 reads a class: the imported names its mode-freeness depends on.
thread_local std::vector<std::string>* mode_free_conditions = nullptr;

// A same-file nn.Module class with methods (its layers are visible), `depth` levels down.
bool mode_free_submodule(const Facts& f, Id call, Id cls, int depth) {
  Id callee = f.e(call).kids[0];
  if (f.e(callee).kind != ExprKind::Name || !f.qual(callee).empty()) return false;
  Id sub = f.class_at(f.e(callee).text, f.e(callee).range.begin);
  return sub != kNone && sub != cls && depth < 4 && f.is_module_class(sub) && !f.m.classes[sub].methods.empty() &&
         mode_free_class(f, sub, depth + 1);
}

// A torch.nn call: a container (`nn.Sequential`, `nn.ModuleList`) is read through its
// layers, `depth` levels down; any other layer by what it is.
bool mode_free_nn_layer(const Facts& f, Id call, Id cls, int depth) {
  std::string_view last = f.last_component(f.callee_qual(call));
  if (last == "Sequential"sv || last == "ModuleList"sv) return mode_free_container(f, call, cls, depth);
  return !modal_layer(f, call);
}

// `nn.ModuleList([Block() for _ in range(n)])`, `nn.Sequential(Block(), nn.ReLU())`: the
// layers written in the container, torch.nn ones or same-file module classes. An empty
// container (`nn.Sequential()` filled by add_module, a C++ parameter) tells nothing.
bool mode_free_container(const Facts& f, Id call, Id cls, int depth) {
  const Expr& x = f.e(call);
  // An empty container a class fills (`self.convs = nn.ModuleList()`, then `conv =
  // HeteroConv(...)`, `self.convs.append(conv)`): its layers are the calls the class makes,
  // each read as one; only something handed in (`self.convs.append(layer)` of a parameter)
  // is unknown.
  if (x.kids.size() == 1 && x.kw.empty() && cls != kNone) {
    const Id st = f.stmt_of(call);
    if (st == kNone || f.m.s(st).kind != StmtKind::Assign || f.m.s(st).targets.size() != 1) return false;
    const std::string target = f.dotted(f.m.s(st).targets[0]);
    if (!starts_with(target, "self.")) return false;
    bool filled = false;
    for (const CallSite& c : f.calls) {
      if (c.func == kNone || f.class_of(c.func) != cls || f.dotted(f.callee_receiver(c.call)) != target) continue;
      if (!in(f.callee_attr(c.call), {"append", "extend", "insert", "add_module"})) continue;
      const Id a = f.e(c.call).kids.back();
      if (f.e(a).kind == ExprKind::Call) {
        filled = true;
        continue;
      }
      if (f.e(a).kind != ExprKind::Name) return false;
      const std::vector<Id> vs = f.bindings_at(c.func, f.e(a).text, a);
      if (vs.empty()) return false;
      for (Id v : vs)
        if (f.e(v).kind != ExprKind::Call) return false;
      filled = true;
    }
    return filled;
  }
  if (f.has_kwargs_splat(call) || !x.kw.empty() || x.kids.size() < 2) return false;
  auto layer = [&](Id y) {
    // `nn.Sequential(*layers)` in a class: `layers` collects displays of calls the class makes
    // (`layers = []`, `layers += [nn.Sequential(nn.Conv2d(...), act())]`), each of which the
    // class's own reading checks as one of its calls.
    if (f.e(y).kind == ExprKind::Starred && cls != kNone && !f.e(y).kids.empty() &&
        f.e(f.e(y).kids[0]).kind == ExprKind::Name) {
      const Id fn = f.function_at(f.e(y).range.begin);
      const std::vector<Id> vs = f.bindings(fn, f.e(f.e(y).kids[0]).text);
      if (fn == kNone || f.class_of(fn) != cls || vs.empty()) return false;
      for (Id v : vs)
        if (f.e(v).kind != ExprKind::Sequence && f.e(v).kind != ExprKind::Comprehension) return false;
      return true;
    }
    if (f.e(y).kind != ExprKind::Call) return false;
    if (f.callee_qual(y).rfind("torch.nn.", 0) == 0) return mode_free_nn_layer(f, y, cls, depth + 1);
    return activation_parameter(f, y) || mode_free_submodule(f, y, cls, depth);
  };
  for (size_t k = 1; k < x.kids.size(); ++k) {
    const Expr& a = f.e(x.kids[k]);
    if (a.kind == ExprKind::Sequence) {
      for (Id y : a.kids)
        if (!layer(y)) return false;
    } else if (a.kind == ExprKind::Comprehension) {
      if (a.kids.empty() || !layer(a.kids[0])) return false;
    } else if (!layer(x.kids[k])) {
      return false;
    }
  }
  return true;
}

// Is every definition of `name` that reaches call `c` one of `self`'s attributes, an element
// of one, or a loop over one?
bool bound_to_own_layers(const Facts& f, const CallSite& c, const std::string& name) {
  Id st = f.stmt_of(c.call);
  if (st == kNone) return false;
  bool outside = false;
  const std::vector<Def> defs = f.flow().reaching(st, name, &outside);
  if (outside || defs.empty()) return false;
  for (const Def& d : defs) {
    if (d.value == kNone || (d.kind != DefKind::Assign && d.kind != DefKind::LoopTarget)) return false;
    Id v = d.value;
    while (f.e(v).kind == ExprKind::Subscript || (f.e(v).kind == ExprKind::Call && in(f.callee_attr(v), {"values", "children", "modules"})))
      v = f.e(v).kind == ExprKind::Subscript ? f.e(v).kids[0] : f.callee_receiver(v);
    if (f.e(v).kind == ExprKind::Call && f.e(f.e(v).kids[0]).kind == ExprKind::Name &&
        in(f.e(f.e(v).kids[0]).text, {"zip", "enumerate"}) && f.e(v).kids.size() == 2)
      v = f.e(v).kids[1];
    if (v == kNone || f.dotted(v).rfind("self.", 0) != 0) return false;
  }
  return true;
}

// A call made by a module's methods (or by a function they call) that behaves the same in
// train() and eval(). `cls` is the class whose layers are being read (kNone in a function).
bool mode_free_call(const Facts& f, const CallSite& c, Id cls, int depth) {
  const std::string& q = f.callee_qual(c.call);
  if (q.rfind("torch.nn.", 0) == 0) return mode_free_nn_layer(f, c.call, cls, depth);
  if (q.rfind("torch.", 0) == 0)
    // Tensor functions (`torch.cat`, `torch.relu`) behave the same in both modes, except
    // the functional dropout and normalisations.
    return q.find("dropout") == std::string::npos && q.find("batch_norm") == std::string::npos &&
           q.find("instance_norm") == std::string::npos;
  // NumPy and math compute on plain arrays and numbers: no module, no mode.
  if (q.rfind("numpy.", 0) == 0 || q.rfind("math.", 0) == 0) return true;
  // PyTorch Geometric's message-passing layers and poolings behave the same in both modes
  // (the inner convolutions of a `HeteroConv` are calls of their own); the attention ones
  // only with their `dropout` left at 0.
  if (q.rfind("torch_geometric.nn.", 0) == 0) {
    const std::string_view last = f.last_component(q);
    if (in(last, {"GCNConv", "SAGEConv", "GraphConv", "ChebConv", "SGConv", "TAGConv", "HeteroConv", "Linear",
                  "HeteroLinear", "global_mean_pool", "global_add_pool", "global_max_pool", "to_hetero"}))
      return true;
    if (in(last, {"GATConv", "GATv2Conv", "TransformerConv"})) {
      const Id d = f.arg(c.call, static_cast<size_t>(-1), "dropout");
      return !f.has_kwargs_splat(c.call) &&
             (d == kNone || (f.e(d).kind == ExprKind::Literal && (f.e(d).text == "0"sv || f.e(d).text == "0.0"sv)));
    }
    return false;
  }
  if (!q.empty()) {
    // A module class of another module of the project that the run says is mode-free
    // (FileSummary::mode_free_classes); while this file's summary is made, any other name is
    // a condition the join decides. Else another library's layer: unknown.
    if (f.project && f.project->mode_free_classes.count(q)) return true;
    // (A class that needs many imported names to be mode-free is left undecided: few such
    // chains resolve, and each would cost the join a walk.)
    if (mode_free_conditions && mode_free_conditions->size() < 8) {
      mode_free_conditions->push_back(q);
      return true;
    }
    return false;
  }
  Id callee = f.e(c.call).kids[0];
  if (f.e(callee).kind == ExprKind::Name) {
    const std::string& name = f.e(callee).text;
    if (python_builtin_call(f, c.call)) return true;
    if (activation_parameter(f, c.call)) return true;
    // A submodule of a class of this file (`self.block = Block(dim)`): mode-free if its
    // own layers are, a few levels deep.
    if (mode_free_submodule(f, c.call, cls, depth)) return true;
    // A local name for the module's own layers (`for layer in self.layers: x = layer(x)`,
    // `block = self.blocks[i]`): those are read where the class builds them.
    if (cls != kNone && bound_to_own_layers(f, c, name)) return true;
    // A helper function of this file (`mask = pad_mask(q, k)`): mode-free if what it calls is.
    Id target = f.same_file_target(c.call, c.func);
    if (target != kNone && depth < 4 && f.class_of(target) == kNone && mode_free_function(f, target, depth + 1))
      return true;
    return false;  // another same-file class or function: unknown
  }
  // self.layer(x), x.view(...), a layer built and called at once: fine.
  return true;
}

// Reads `self.training` (or any `.training`) inside `r`: behaves differently by mode.
bool reads_training(const Facts& f, const Range& r) {
  // The file's `.training` reads, found once per file (this is asked per class and function).
  thread_local const Facts* of = nullptr;
  thread_local std::string of_path;
  thread_local size_t of_size = 0;
  thread_local std::vector<Range> reads;
  if (of != &f || of_size != f.m.exprs.size() || of_path != f.path) {
    of = &f;
    of_size = f.m.exprs.size();
    of_path = f.path;
    reads.clear();
    for (const auto& ex : f.m.exprs)
      if (ex.kind == ExprKind::Attribute && ex.text == "training"sv) reads.push_back(ex.range);
  }
  for (const Range& x : reads)
    if (x.begin >= r.begin && x.end <= r.end) return true;
  return false;
}

// A class of this file whose layers are all torch.nn layers that behave the same in
// train() and eval(): switching its mode changes nothing.
bool mode_free_class(const Facts& f, Id cls, int depth) {
  for (const CallSite& c : f.calls) {
    if (c.func == kNone || f.class_of(c.func) != cls) continue;
    if (!mode_free_call(f, c, cls, depth)) return false;
  }
  return !reads_training(f, f.m.classes[cls].range);
}

// A same-file function whose calls all behave the same in both modes.
bool mode_free_function(const Facts& f, Id fn, int depth) {
  for (int ci : f.calls_in(fn))
    if (!mode_free_call(f, f.calls[ci], kNone, depth)) return false;
  return !reads_training(f, f.m.funcs[fn].range);
}

// `model.cuda()`, `Net().to(device)`, `net.double()`: the module that is moved or cast.
Id moved_module(const Facts& f, Id v) {
  // (A mode switch hands back the module itself: `model = model.train()`.)
  while (f.e(v).kind == ExprKind::Call && f.callee_receiver(v) != kNone &&
         in(f.callee_attr(v), {"cuda", "to", "cpu", "double", "float", "half", "train", "eval"}))
    v = f.callee_receiver(v);
  return v;
}

// Is the module that expression `v` builds one whose mode changes nothing? `k` >= 0: the
// k-th element of the tuple it returns (`model, loss_fn, opt = get_model()`).
bool model_is_mode_free(const Facts& f, Id func, const std::string& name, Id at, int depth = 0);

bool mode_free_value(const Facts& f, Id func, Id v, int k, int depth) {
  if (depth > 4) return false;
  v = moved_module(f, v);
  if (f.e(v).kind != ExprKind::Call) return false;
  // A data-parallel wrap (`DDP(model, device_ids=[rank])`, `nn.DataParallel(net)`) runs the
  // module it wraps, in that module's mode: the wrapped module decides.
  if (const std::string_view last = f.last_component(f.callee_qual(v));
      f.callee_qual(v).rfind("torch.nn.", 0) == 0 && (last == "DataParallel"sv || last == "DistributedDataParallel"sv)) {
    const Id inner = f.arg(v, 0, "module");
    // (Wraps of wraps through names, `a = DDP(b)` and `b = DDP(a)` in a loop, stop a few deep:
    // model_is_mode_free starts its own count.)
    thread_local int wraps = 0;
    if (inner == kNone || k >= 0 || wraps > 4) return false;
    struct Deeper {
      int& n;
      explicit Deeper(int& n) : n(++n) {}
      ~Deeper() { --n; }
    } deeper(wraps);
    const std::string& d = f.dotted(inner);
    return d.empty() ? mode_free_value(f, func, inner, -1, depth + 1) : model_is_mode_free(f, func, d, inner, depth + 1);
  }
  // `model = nn.Sequential(nn.Conv2d(...), nn.ReLU(), ...)`: the layers are in the call.
  if (f.callee_qual(v).rfind("torch.nn.", 0) == 0) return k < 0 && !modal_layer(f, v);
  Id callee = f.e(v).kids[0];
  if (f.e(callee).kind == ExprKind::Name && f.qual(callee).empty()) {
    // C++: `TORCH_MODULE(Net)` makes a holder `Net` of the class `NetImpl` that has the
    // layers. A notebook may define `Net` twice: the definition in effect here counts.
    Id cls = f.class_at(f.e(callee).text + "Impl", f.e(callee).range.begin);
    if (cls == kNone) cls = f.class_at(f.e(callee).text, f.e(callee).range.begin);
    // A class without methods here tells nothing about its layers.
    if (cls != kNone) return k < 0 && !f.m.classes[cls].methods.empty() && mode_free_class(f, cls);
  }
  // A module class of another module of the project whose layers the run shows to be mode-free
  // (`model = TransformerLM(...)` of the project's `lm.py`: embeddings, linear layers, RMSNorm).
  if (f.e(callee).kind == ExprKind::Name && f.project && f.project->mode_free_classes.count(f.e(callee).qname))
    return k < 0;
  // A same-file builder (`def get_model(): model = nn.Sequential(...); return model, ...`).
  Id target = f.same_file_target(v, func);
  if (target == kNone) return false;
  bool any = false;
  for (Id r : f.returned_values(target)) {
    if (k >= 0) {
      if (f.e(r).kind != ExprKind::Sequence || static_cast<size_t>(k) >= f.e(r).kids.size()) return false;
      r = f.e(r).kids[k];
    }
    if (f.e(r).kind == ExprKind::Name) {
      auto vals = f.bindings(target, f.e(r).text);
      if (vals.empty()) return false;
      for (Id b : vals)
        if (!mode_free_value(f, target, b, -1, depth + 1)) return false;
    } else if (!mode_free_value(f, target, r, -1, depth + 1)) {
      return false;
    }
    any = true;
  }
  return any;
}

// Every binding of `name` that reaches `at` (flow-sensitive: a notebook that rebinds
// `model` in a later cell) is a module whose mode changes nothing.
bool model_is_mode_free(const Facts& f, Id func, const std::string& name, Id at, int depth) {
  if (name.empty() || depth > 2) return false;
  // (value, element of the tuple it returns that `name` takes, or -1)
  std::vector<std::pair<Id, int>> vals;
  bool outside = false;
  const Id st = f.stmt_of(at);
  // Statements whose reaching definitions of `name` are read: the use, then the rebindings
  // of itself it reaches (`net = net.to(device)` follows `net = Net()`), a few deep.
  std::vector<Id> from;
  if (st != kNone) from.push_back(st);
  std::set<Id> seen;
  for (size_t i = 0; i < from.size() && i < 8; ++i)
    for (const Def& df : f.flow().reaching(from[i], name, &outside)) {
      if (df.value == kNone) return false;
      if (df.kind == DefKind::Assign || df.kind == DefKind::Declared || df.kind == DefKind::WithAlias) {
        if (f.dotted(moved_module(f, df.value)) == name) {
          if (df.stmt != kNone && seen.insert(df.stmt).second) from.push_back(df.stmt);
          continue;
        }
        vals.push_back({df.value, -1});
      } else if (df.kind == DefKind::Unpacked) {
        // `model, loss_fn, optimizer = get_model()`: which element is the model.
        const auto& kids = f.e(f.m.s(df.stmt).targets.at(0)).kids;
        int k = -1;
        for (size_t j = 0; j < kids.size(); ++j)
          if (f.dotted(kids[j]) == name) k = static_cast<int>(j);
        if (k < 0) return false;
        vals.push_back({df.value, k});
      } else {
        return false;
      }
    }
  if (st == kNone || outside)
    for (Id v : f.bindings_at(func, name, at)) vals.push_back({v, -1});
  // (Rebindings of itself, `model = model.train()`, bind nothing new.)
  vals.erase(std::remove_if(vals.begin(), vals.end(),
                            [&](const std::pair<Id, int>& vk) { return f.dotted(moved_module(f, vk.first)) == name; }),
             vals.end());
  // A parameter of the function, rebound here only to itself: what every caller of the file
  // hands in (`train(model, ...)` called with the notebook's `Model()`).
  if (vals.empty() && name.find('.') == std::string::npos && f.is_param(func, name)) {
    const auto args = f.argument_values(func, name);
    for (const auto& [where, a] : args) {
      const std::string& d = f.dotted(a);
      if (d.empty() ? !mode_free_value(f, where, a, -1, 0) : !model_is_mode_free(f, where, d, a, depth + 1))
        return false;
    }
    return !args.empty();
  }
  bool any = false;
  for (const auto& [v, k] : vals) {
    if (f.dotted(moved_module(f, v)) == name) continue;  // rebinding of itself (`model = model.cuda()`)
    if (!mode_free_value(f, func, v, k, 0)) return false;
    any = true;
  }
  return any;
}

// A frozen model: the file builds optimizers and none of them is given the model's
// parameters (a feature extractor or a loaded TorchScript backbone under a trained head),
// or its parameters are switched off with requires_grad_(False). Eval mode is its
// intended state. With no optimizer built in the file nothing is known: not frozen.
// The model is known by its name in `func` and, when that is a parameter, by the names the
// file's callers hand in (`fit(m, ...)` after `opt = SGD(m.parameters())`); an optimizer
// built in a helper is matched through the helper's parameter the same way.
bool model_is_frozen(const Facts& f, Id func, const std::string& model) {
  if (model.empty()) return false;
  if (f.frozen_anywhere(model)) return true;
  std::set<std::string> names{model};
  for (const auto& [caller, arg] : f.argument_values(func, model))
    if (const std::string& d = f.dotted(f.unplaced(arg)); !d.empty()) names.insert(d);
  auto is_model = [&](const std::string& d) {
    for (const auto& n : names)
      if (d == n || d.rfind(n + ".", 0) == 0) return true;
    return false;
  };
  bool any_optimizer = false, trains_it = false;
  auto mentions_model = [&](Id x, Id where) {
    bool hit = false;
    for_each_expr(f.m, x, [&](Id y) {
      const std::string& d = f.dotted(y);
      if (d.empty()) return true;
      if (is_model(d)) hit = true;
      // A parameter of the optimizer's function: what its callers pass for it.
      const std::string root = d.substr(0, d.find('.'));
      if (!hit && where != kNone)
        for (const auto& [caller, arg] : f.argument_values(where, root))
          if (const std::string& a = f.dotted(f.unplaced(arg)); !a.empty() && is_model(a)) hit = true;
      return !hit && f.e(y).kind != ExprKind::Name;
    });
    return hit;
  };
  for (const CallSite& c : f.calls) {
    const std::string& q = f.callee_qual(c.call);
    if (q.rfind("torch.optim.", 0) != 0 || q.find("lr_scheduler") != std::string::npos ||
        q.find("swa_utils") != std::string::npos)
      continue;
    any_optimizer = true;
    const Expr& call = f.e(c.call);
    for (size_t k = 1; k < call.kids.size(); ++k) trains_it = trains_it || mentions_model(call.kids[k], c.func);
  }
  return any_optimizer && !trains_it;
}

// Attributes the function sets to a model once and never rebinds (`args.model = model`):
// code handed `args` reaches the same module as `args.model`. Attribute -> the name it holds.
std::map<std::string, std::string> attribute_aliases(const Facts& f, Id func) {
  std::map<std::string, std::string> out;
  std::set<std::string> rebound;
  for (const StmtSite& ss : f.stmt_sites) {
    if (ss.func != func) continue;
    const Stmt& st = f.m.s(ss.stmt);
    if (st.kind != StmtKind::Assign && st.kind != StmtKind::AugAssign) continue;
    for (Id t : st.targets) {
      const std::string& a = f.dotted(t);
      if (a.empty() || f.e(t).kind != ExprKind::Attribute || a.rfind("self.", 0) == 0) continue;
      const std::string& v = st.kind == StmtKind::Assign && st.targets.size() == 1 && st.value != kNone
                                 ? f.dotted(st.value) : std::string();
      if (v.empty() || out.count(a)) rebound.insert(a);
      else out[a] = v;
    }
  }
  for (const auto& a : rebound) out.erase(a);
  return out;
}

std::string canonical(const std::string& d, const std::map<std::string, std::string>& aliases) {
  for (const auto& [a, v] : aliases)
    if (d == a || (d.size() > a.size() && d.compare(0, a.size(), a) == 0 && d[a.size()] == '.'))
      return v + d.substr(a.size());
  return d;
}

// Does loop `li` bind `model` to a newly built module (`model = Net().to(device)`),
// unconditionally and directly in its body, on the way from the eval() at `from` round the
// loop's back edge to the forward at `to`?
bool rebuilt_between(const Facts& f, int li, const std::string& model, Id from, Id to) {
  if (model.empty() || model.find('.') != std::string::npos) return false;
  const uint32_t after = f.e(from).range.begin, before = f.e(to).range.begin;
  for (Id sid : f.loops[li].stmts) {
    const Stmt& st = f.m.s(sid);
    if (st.kind != StmtKind::Assign || st.value == kNone || st.targets.size() != 1 || f.dotted(st.targets[0]) != model)
      continue;
    const Id u = moved_module(f, st.value);
    if (f.e(u).kind != ExprKind::Call || f.dotted(u) == model) continue;
    bool direct = false;
    for (int ci : f.calls_in_stmt[sid])
      if (f.calls[ci].call == u) direct = f.calls[ci].loop == li && f.calls[ci].guard == kNone;
    if (direct && (st.range.begin > after || st.range.begin < before)) return true;
  }
  return false;
}

}  // namespace

// A model in eval mode from the start: every value the loop's function holds for it (its
// bindings, or what every caller hands in for a parameter) is put in eval mode where it is made
// (`getattr(models, name)().eval()`, `load(path).eval().to(device)`), and nothing in the file
// puts any module in train mode. An eval() on the way round changes nothing: the loop back-propagates
// to something else (an adversarial input), not to train the model.
bool in_eval_from_the_start(const Facts& f, Id func, const std::string& model) {
  if (model.empty()) return false;
  auto made_in_eval = [&](Id v) {
    for (; v != kNone && f.e(v).kind == ExprKind::Call && f.callee_receiver(v) != kNone; v = f.callee_receiver(v))
      if (f.callee_attr(v) == "eval"sv) return true;
    return false;
  };
  std::vector<Id> values = f.bindings(func, model);
  if (values.empty() && model.find('.') == std::string::npos)
    for (const auto& [caller, arg] : f.argument_values(func, model)) {
      if (f.e(arg).kind == ExprKind::Name) {
        // (What reaches the call: `model = Net()`, then `model = model.eval()`.)
        const std::vector<Id> reaching = f.bindings_at(caller, f.e(arg).text, arg);
        if (reaching.empty()) return false;
        values.insert(values.end(), reaching.begin(), reaching.end());
      } else {
        values.push_back(arg);
      }
    }
  if (values.empty() || !std::all_of(values.begin(), values.end(), made_in_eval)) return false;
  // (Any train() in the file: the model may reach it under another name.)
  for (const CallSite& c : f.calls)
    if (f.callee_attr(c.call) == "train"sv && f.callee_receiver(c.call) != kNone) return false;
  return true;
}

void summarize_LL205(const Facts& f, FileSummary& out) {
  // The module classes of the file whose layers behave the same in train() and eval(), with
  // the imported names that must be so too (at most 8): "Class|q1|q2". (Module-level
  // functions are not summarised: walking every one of them cost ~1 % of a run.)
  auto add = [&](const std::string& name, auto&& decide) {
    std::vector<std::string> conditions;
    mode_free_conditions = &conditions;
    const bool free = decide();
    mode_free_conditions = nullptr;
    if (!free) return;
    std::sort(conditions.begin(), conditions.end());
    conditions.erase(std::unique(conditions.begin(), conditions.end()), conditions.end());
    std::string entry = name;
    for (const std::string& q : conditions) entry += "|" + q;
    out.mode_free_classes.push_back(std::move(entry));
  };
  for (Id k = 0; k < f.m.classes.size(); ++k)
    if (f.is_module_class(k) && !f.m.classes[k].methods.empty())
      add(f.m.classes[k].name, [&] { return mode_free_class(f, k, 0); });
}

void check_LL205(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  Events events(f);
  std::set<int> reported;
  for (int li = 0; li < static_cast<int>(f.loops.size()); ++li) {
    const Loop& L = f.loops[li];
    if (L.stmt == kNone || !f.loop_reaches_backward(li)) continue;
    // A loop that runs once (`for epoch in range(1):`) has no next iteration to train in.
    if (constant_trips(f, li, 1) == 1) continue;
    // Lightning switches modes itself around validation.
    if (f.class_of(L.func) != kNone && f.class_derives(f.class_of(L.func), {"LightningModule"})) continue;
    std::vector<int> sites;
    for (int ci : L.calls)
      if (f.calls[ci].func == L.func) sites.push_back(ci);
    std::vector<Ev> ev = events.of_sites(sites, 0, {}, -1, true, L.func);
    const auto aliases = attribute_aliases(f, L.func);
    if (!aliases.empty())
      for (Ev& x : ev) x.model = canonical(x.model, aliases);
    const size_t n = ev.size();
    for (size_t i = 0; i < n; ++i) {
      if (ev[i].kind != 'E') continue;
      // A model the called function builds for itself: its mode ends with the call.
      if (ev[i].model.rfind(kFresh, 0) == 0) continue;
      // Eval mode set on the loop's last iteration only: judged by the enclosing loop.
      if (f.calls[ev[i].site].loop == li && last_iteration_test(f, f.calls[ev[i].site].guard, f.calls[ev[i].site].func)) continue;
      // Or set on the way out of the loop (`if stop: model.eval(); break`, or `return`): the
      // loop never comes round from it; an enclosing loop that does is judged on its own.
      if (ends_the_loop_after(f, f.m.s(L.stmt).body, f.calls[ev[i].site].stmt)) continue;
      // Going round the loop from the eval(): the next training forward of the same model,
      // unless train() or another eval() (judged on its own) comes first. A forward later in
      // the same pass (before the loop starts over) means eval mode is deliberate there
      // (frozen batch-norm in linear probing, `model.eval()` right before a training step).
      const Ev* forward = nullptr;
      bool wrapped = false;
      for (size_t k = 1; k <= n; ++k) {
        if (i + k >= n) wrapped = true;
        const Ev& x = ev[(i + k) % n];
        // train() on a submodule of the model (a distiller's `self.student.train()` after
        // `self.eval()`) restores the part that is being trained.
        // (A part known to be a module: `self.metrics.train()` on a tracker that switches its log
        // prefix restores nothing.)
        const bool part = x.kind == 'T' && x.evidence && !ev[i].model.empty() && starts_with(x.model, ev[i].model + ".");
        if (!same_model(x.model, ev[i].model) && !part) continue;
        if (x.kind == 'T' || (x.kind == 'E' && k < n)) break;
        if (x.kind == 'F' && !(x.model.empty() && ev[i].model.empty())) {
          if (wrapped) forward = &x;
          break;
        }
      }
      if (!forward) continue;
      // A fresh model built on the way round (`for lr in lrs: model = Net(); ...`).
      if (rebuilt_between(f, li, ev[i].model, f.calls[ev[i].site].call, f.calls[forward->site].call)) continue;
      std::string model = !ev[i].model.empty() ? ev[i].model : forward->model;
      if (model_is_mode_free(f, L.func, model, f.calls[ev[i].site].call)) continue;
      if (model_is_frozen(f, L.func, model)) continue;
      if (in_eval_from_the_start(f, L.func, model)) continue;
      if (!reported.insert(ev[i].site).second) continue;
      const CallSite& site = f.calls[ev[i].site];
      const CallSite& origin = f.calls[ev[i].origin];
      const bool cpp = f.m.lang == Lang::Cpp;
      std::string train_call = model + (cpp ? "->train()" : ".train()");
      std::string what;
      // (The switch as written: `net.train(mode=False)` is an eval(), and its fix `net.train()`.)
      auto switch_text = [&](Id call) {
        const Expr& x = f.e(call);
        return x.range.end - x.range.begin <= 80 ? ctx.text(x.range) : ctx.text(f.e(x.kids[0]).range) + "(...)";
      };
      if (ev[i].site == ev[i].origin) {
        what = "`" + switch_text(site.call) + "` puts `" + model + "` in eval mode";
      } else {
        const std::string& callee = f.dotted(f.e(site.call).kids[0]);
        what = "`" + (callee.empty() ? std::string("this call") : callee + "(...)") + "` puts `" + model +
               "` in eval mode (`" + switch_text(origin.call) + "` in `" +
               (origin.func != kNone ? f.m.funcs[origin.func].name : std::string("?")) + "`)";
      }
      std::string message = what + " and nothing puts it back in train mode before the loop's next training forward `" +
                            ctx.text(f.e(f.calls[forward->origin].call).kids[0]) +
                            "(...)`: dropout stays off and batch-norm normalises with, and stops updating, its "
                            "running statistics in the training steps that follow, until the model is put back in train mode; "
                            "call `" + train_call + "` after it";
      Finding* fd = ctx.report("LL205", f.e(site.call).range, message);
      if (!fd) continue;
      if (ev[i].site != ev[i].origin) fd->notes.push_back({f.e(origin.call).range, "eval mode set here"});
      fd->notes.push_back({f.e(f.calls[forward->origin].call).range, "next training forward"});
      // Fix: `model.train()` on the line after the statement in the loop.
      const Stmt& st = f.m.s(site.stmt);
      // Only after a call that switches the mode inside (validate()): right after an inline
      // `model.eval()` the statements that need eval mode still follow.
      if (ev[i].site == ev[i].origin && in(f.callee_attr(site.call), {"eval", "train"})) continue;
      if (cpp || (st.kind != StmtKind::Expr && st.kind != StmtKind::Assign)) continue;
      if (model.find('(') != std::string::npos) continue;
      uint32_t end = st.range.end;
      std::string_view src = ctx.source;
      size_t eol = src.find_first_of("\r\n", end);
      std::string_view rest = src.substr(end, (eol == std::string_view::npos ? src.size() : eol) - end);
      if (rest.find_first_not_of(" \t") != std::string_view::npos && rest.find_first_not_of(" \t") != rest.find('#'))
        continue;  // something else follows on the line
      if (ctx.line_start(st.range.begin) + ctx.indent_at(st.range.begin).size() != st.range.begin) continue;
      Fix fix;
      fix.title = "Call `" + train_call + "` after it";
      fix.safe = false;
      uint32_t at = static_cast<uint32_t>(eol == std::string_view::npos ? src.size() : eol);
      fix.edits.push_back({at, at, ctx.newline() + ctx.indent_at(st.range.begin) + train_call});
      fd->fixes.push_back(std::move(fix));
    }
  }
}

}  // namespace ll
