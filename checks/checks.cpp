#include "checks/checks.hpp"

#include <algorithm>
#include <bitset>
#include <functional>
#include <map>
#include <optional>
#include <cctype>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "checks/common.hpp"
#include "checks/project.hpp"
#include "checks/relevance.hpp"
#include "rules/budget.hpp"

#include "rules/registry.hpp"

namespace ll {

void check_LL101(CheckContext&);
void check_LL102(CheckContext&);
void check_LL103(CheckContext&);
void check_LL104(CheckContext&);
void check_LL105(CheckContext&);
void check_LL106(CheckContext&);
void check_LL201(CheckContext&);
void check_LL202(CheckContext&);
void check_LL203(CheckContext&);
void check_LL205(CheckContext&);
void check_LL206(CheckContext&);
void check_LL301(CheckContext&);
void check_LL302(CheckContext&);
void check_LL303(CheckContext&);
void check_LL304(CheckContext&);
void check_LL401(CheckContext&);
void check_LL402(CheckContext&);
void check_LL403(CheckContext&);
void check_LL404(CheckContext&);
void check_LL405(CheckContext&);
void check_LL501(CheckContext&);
void check_LL502(CheckContext&);

const std::vector<CheckEntry>& all_checks() {
  static const std::vector<CheckEntry> table = {
      {"LL101", check_LL101}, {"LL102", check_LL102}, {"LL103", check_LL103}, {"LL104", check_LL104},
      {"LL105", check_LL105}, {"LL205", check_LL205}, {"LL206", check_LL206}, {"LL405", check_LL405},
      {"LL203", check_LL203}, {"LL106", check_LL106},
      {"LL201", check_LL201}, {"LL202", check_LL202}, {"LL301", check_LL301}, {"LL302", check_LL302},
      {"LL303", check_LL303}, {"LL304", check_LL304}, {"LL401", check_LL401}, {"LL402", check_LL402},
      {"LL403", check_LL403}, {"LL404", check_LL404}, {"LL501", check_LL501}, {"LL502", check_LL502},
  };
  return table;
}

bool CheckContext::enabled(std::string_view rule) const {
  return facts.cfg.enabled(std::string(rule), facts.path);
}

bool CheckContext::suppressed(const std::string& rule, uint32_t line) const {
  if (!suppressions_) suppressions_.emplace(facts.m.comments, facts.m.lang);
  return suppressions_->match(rule, line) != nullptr;
}

Finding* CheckContext::report(std::string_view rule, const Range& where, std::string message) {
  if (!enabled(rule)) return nullptr;
  // One finding per rule and location (a set: files with thousands of findings stay linear).
  if (!reported_.insert(std::string(rule) + ":" + std::to_string(where.begin) + ":" + std::to_string(where.end))
           .second)
    return nullptr;
  const RuleInfo* info = find_rule(rule);
  Finding f;
  f.rule = std::string(rule);
  f.severity = facts.cfg.severity_of(f.rule, info ? info->severity : Severity::Warning);
  f.path = facts.path;
  f.range = where;
  f.message = std::move(message);
  out_.push_back(std::move(f));
  return &out_.back();
}

Finding* CheckContext::report_weak(std::string_view rule, const Range& where, std::string message,
                                   const std::string& why) {
  Finding* f = report(rule, where, std::move(message));
  if (f) make_weak(*f, why);
  return f;
}

std::string CheckContext::text(const Range& r) const {
  if (r.begin > source.size() || r.end > source.size() || r.end < r.begin) return {};
  return std::string(source.substr(r.begin, r.end - r.begin));
}

std::string CheckContext::brief(Id expr, size_t max) const {
  // Line by line, without the comment that ends a line (`# valid`, `// valid`).
  const Range& r = facts.e(expr).range;
  const std::string all = text(r);
  std::string out;
  size_t pos = 0;
  for (uint32_t line = r.line; pos <= all.size(); ++line) {
    size_t nl = all.find('\n', pos);
    std::string piece = all.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    for (const Comment& c : facts.m.comments) {
      if (c.line != line) continue;
      for (const char* mark : {"#", "//"}) {
        const std::string tail = mark + c.text;
        if (piece.size() >= tail.size() && piece.compare(piece.size() - tail.size(), tail.size(), tail) == 0) {
          piece.resize(piece.size() - tail.size());
          break;
        }
      }
    }
    for (char c : piece) {
      const bool space = c == ' ' || c == '\t' || c == '\r';
      if (space && (out.empty() || out.back() == ' ')) continue;
      out.push_back(space ? ' ' : c);
    }
    if (nl == std::string::npos) break;
    if (!out.empty() && out.back() != ' ') out.push_back(' ');
    pos = nl + 1;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > max) out = out.substr(0, max - 3) + "...";
  return out;
}

uint32_t CheckContext::line_start(uint32_t byte) const {
  if (byte > source.size()) byte = static_cast<uint32_t>(source.size());
  // A lone `\r` (old Mac line ending) ends a line too.
  while (byte > 0 && source[byte - 1] != '\n' &&
         !(source[byte - 1] == '\r' && (byte == source.size() || source[byte] != '\n')))
    --byte;
  return byte;
}

std::string CheckContext::indent_at(uint32_t byte) const {
  uint32_t b = line_start(byte), e = b;
  while (e < source.size() && (source[e] == ' ' || source[e] == '\t')) ++e;
  return std::string(source.substr(b, e - b));
}

std::string CheckContext::newline() const {
  size_t p = source.find_first_of("\r\n");
  if (p == std::string_view::npos || source[p] == '\n') return "\n";
  return p + 1 < source.size() && source[p + 1] == '\n' ? "\r\n" : "\r";
}

std::string CheckContext::indent_unit() const {
  // The smallest positive indentation of any line, in the file's own characters.
  size_t best = 0;
  char ch = ' ';
  size_t i = 0;
  while (i < source.size()) {
    size_t j = i;
    while (j < source.size() && (source[j] == ' ' || source[j] == '\t')) ++j;
    if (j > i && j < source.size() && source[j] != '\n' && source[j] != '\r' && source[j] != '#') {
      if (best == 0 || j - i < best) { best = j - i; ch = source[i]; }
    }
    size_t nl = source.find_first_of("\r\n", i);
    if (nl == std::string_view::npos) break;
    i = nl + 1;
  }
  if (best == 0) return "    ";
  return std::string(best, ch);
}

namespace {

// Could something other than a call by name run `fn`: a decorator (a route, a registry, a
// CLI command), a dunder or `forward` (Python calls them), or a method of a class with a
// base this file does not show (a framework's hook: Lightning's `validation_step`, a
// Trainer's `evaluate`)? torch's own decorators and staticmethod/classmethod register nothing.
// (`imported_base`, when given, is set instead of answering true for a method whose class
// derives from a class the file imports: whether that base calls it by dispatch is the join's
// to decide.)
bool callable_without_its_name(const Facts& f, Id fn, bool* imported_base = nullptr) {
  const Function& F = f.m.funcs[fn];
  if (F.name.empty() || starts_with(F.name, "__") || F.name == "forward") return true;
  for (Id d : F.decorators) {
    Id callee = f.e(d).kind == ExprKind::Call ? f.e(d).kids[0] : d;
    const std::string& q = f.qual(callee);
    // torch's grad and precision switches and compilers wrap a function its callers still call
    // by name; `@torch.jit.export` and the like expose it to callers that name it elsewhere
    // (TorchScript, C++ `run_method("score")`).
    if (in(q, {"torch.no_grad", "torch.inference_mode", "torch.enable_grad", "torch.set_grad_enabled",
               "torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast", "torch.compile",
               "torch.jit.script", "torch.jit.ignore", "torch.jit.unused", "torch.autograd.no_grad"}))
      continue;
    if (f.e(callee).kind == ExprKind::Name && in(f.e(callee).text, {"staticmethod", "classmethod"})) continue;
    return true;
  }
  if (F.cls == kNone) return false;
  for (Id b : f.m.classes[F.cls].bases) {
    const Expr& be = f.e(b);
    if (be.kind == ExprKind::Name && (be.text == "object" || f.class_at(be.text, be.range.begin) != kNone)) continue;
    if (in(f.qual(b), {"torch.nn.Module", "torch.nn.modules.module.Module"})) continue;
    if (imported_base && be.kind == ExprKind::Name && !f.qual(b).empty()) {
      *imported_base = true;
      continue;
    }
    return true;
  }
  return false;
}

// A string literal that may name code (`getattr(self, "evaluate")`, `"pkg.module:main"`), not
// prose: short, and only identifier characters, dots and colons.
bool identifier_like_string(const Expr& x) {
  return x.kind == ExprKind::Literal && x.lit == LitKind::String && !x.text.empty() && x.text.size() <= 128 &&
         std::all_of(x.text.begin(), x.text.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == ':';
         });
}

// The identifier-like words of a string (`"pkg.module:main"` -> pkg, module, main).
template <class F>
void for_each_word(std::string_view t, F&& fn) {
  size_t i = 0;
  while (i < t.size()) {
    while (i < t.size() && !(std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_')) ++i;
    size_t j = i;
    while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '_')) ++j;
    if (j > i && !std::isdigit(static_cast<unsigned char>(t[i]))) fn(t.substr(i, j - i));
    i = j;
  }
}

// Python's scopes for a name read: is `x` (a Name) a read of a local of the function around it
// (a parameter `save_blackbox` of `train(..., save_blackbox=False)`, an assignment, a loop
// target), not of a module-level name? A nested def is read through its local name: not a local.
class LocalReads {
 public:
  explicit LocalReads(const Facts& f) : f_(f) {}
  bool local(const Expr& x) const {
    const Id fn = f_.function_at(x.range.begin);
    if (fn == kNone || !f_.binds_locally(fn, x.text)) return false;
    if (!nested_) {  // (built on first need: most files never ask)
      nested_.emplace();
      for (const Function& g : f_.m.funcs)
        if (g.parent != kNone) nested_->insert({g.parent, g.name});
    }
    return !nested_->count({fn, x.text});
  }

 private:
  const Facts& f_;
  mutable std::optional<std::set<std::pair<Id, std::string_view>>> nested_;
};

// A module that is not a program may be a helper of the run's programs (weaken_uncalled): then
// its module-level functions are live only if reached from outside them. Records which of them
// each reads its own module-level functions' names: `{caller, callee}`, caller empty when the read
// is outside every module-level function (module level, a class). Module-level functions do
// not nest, so the one around a read is found by binary search over their ranges.
void summarize_own_reads(const Facts& f, FileSummary& s, bool dispatches_by_name) {
  std::vector<Id> tops;
  std::unordered_set<std::string_view> names;
  for (Id fn = 0; fn < f.m.funcs.size(); ++fn)
    if (f.m.funcs[fn].cls == kNone && f.m.funcs[fn].parent == kNone && !f.m.funcs[fn].name.empty()) {
      tops.push_back(fn);
      names.insert(f.m.funcs[fn].name);
    }
  if (tops.empty()) return;
  std::sort(tops.begin(), tops.end(), [&](Id a, Id b) { return f.m.funcs[a].range.begin < f.m.funcs[b].range.begin; });
  std::set<std::pair<std::string_view, std::string_view>> reads;
  auto read_at = [&](std::string_view name, uint32_t pos) {
    if (!names.count(name)) return;
    auto it = std::upper_bound(tops.begin(), tops.end(), pos,
                               [&](uint32_t p, Id fn) { return p < f.m.funcs[fn].range.begin; });
    std::string_view caller;
    if (it != tops.begin() && pos < f.m.funcs[*std::prev(it)].range.end) {
      const Id fn = *std::prev(it);
      const Function& F = f.m.funcs[fn];
      // A read in a decorator, a default or an annotation runs when the module is imported; a
      // function that runs without its name being read (a decorator registers it, a dunder)
      // reaches what it reads: both are roots.
      const bool def_time = !F.body.empty() && pos < f.m.s(F.body.front()).range.begin;
      if (!def_time && !callable_without_its_name(f, fn)) caller = F.name;
    }
    if (caller != name) reads.insert({caller, name});
  };
  // The module looks its own functions up by a computed name (`globals()[name]`,
  // `getattr(sys.modules[__name__], name)`, `fire.Fire()`): every one is reachable.
  if (dispatches_by_name)
    for (Id fn : tops) reads.insert({std::string_view(), f.m.funcs[fn].name});
  const LocalReads locals(f);
  for (const Expr& x : f.m.exprs) {
    if (x.kind == ExprKind::Name || x.kind == ExprKind::Attribute) {
      if (!names.count(x.text) || (x.kind == ExprKind::Name && locals.local(x))) continue;
      read_at(x.text, x.range.begin);
    } else if (identifier_like_string(x)) {
      // (identifier-like strings only, as summarize_references reads them: `"run_" + mode`
      // builds names no word of a string shows; such dispatch makes every function a root)
      for_each_word(x.text, [&](std::string_view w) { read_at(w, x.range.begin); });
    }
  }
  for (const auto& [caller, callee] : reads) s.own_reads.emplace_back(std::string(caller), std::string(callee));
}

}  // namespace

void summarize_references(const Facts& f, const std::vector<Finding>& out, FileSummary& s) {
  // (Views into the module's own strings, deduplicated first: a file reads few distinct names
  // many times.)
  std::unordered_set<std::string_view> seen;
  seen.reserve(f.m.exprs.size() / 8 + 16);  // (a file reads about one distinct name in ten expressions)
  auto add_words = [&](std::string_view t) {
    for_each_word(t, [&](std::string_view w) { seen.insert(w); });
  };
  // Names resolved as Python scopes them: a read of a function's own local (a parameter
  // `save_blackbox` of `train(..., save_blackbox=False)`) is not a read of the module-level
  // function of that name; a nested def of the function is read through its local name. A
  // name imported from a module (`from train_test import train`), which the file does not define
  // itself, reaches that module's definition (`imported_refs`).
  const LocalReads locals(f);
  std::unordered_set<std::string_view> own_defs;
  for (const Function& fn : f.m.funcs)
    if (fn.parent == kNone && fn.cls == kNone) own_defs.insert(fn.name);
  for (const Class& k : f.m.classes) own_defs.insert(k.name);
  std::unordered_set<std::string_view> from_import;  // local names of `from m import name`
  std::unordered_set<std::string_view> from_torch;   // ... from torch, which defines none of the run's
  for (const auto& [local, q] : f.m.aliases)
    if (!own_defs.count(local) && q.size() > local.size() && q.compare(q.size() - local.size(), local.size(), local) == 0 &&
        q[q.size() - local.size() - 1] == '.')
      (is_torch_family(q) ? from_torch : from_import).insert(local);
  std::unordered_set<std::string_view> imported_read, own_named;
  // `self.name` reads: name -> the first class reading it, and any others.
  std::unordered_map<std::string_view, std::pair<Id, std::vector<Id>>> self_read;
  Id method = kNone;  // the method around the last `self.name` read
  // (Most names are neither: a test of their length first spares the lookups.)
  std::bitset<64> own_len, import_len;
  for (std::string_view n : own_defs) own_len.set(std::min<size_t>(n.size(), 63));
  for (std::string_view n : from_import) import_len.set(std::min<size_t>(n.size(), 63));
  for (const Expr& x : f.m.exprs) {
    if (x.kind == ExprKind::Name) {
      // (An imported name carries its qualified name: most names need no lookup here.)
      const size_t len = std::min<size_t>(x.text.size(), 63);
      if (!x.qname.empty() && import_len[len] && from_import.count(x.text)) {
        imported_read.insert(x.text);
        continue;
      }
      // (Only a name the file also defines at module level can be shadowed by a local that
      // matters here; another file's function read through a local of the same spelling is
      // still taken for a read, erring on the side of a caller.)
      if (own_len[len] && own_defs.count(x.text) && !seen.count(x.text) && locals.local(x)) continue;
      seen.insert(x.text);
    } else if (x.kind == ExprKind::Attribute) {
      // `self.evaluate()` in a method of a class: a read of that class's hierarchy's method.
      if (!x.kids.empty() && f.e(x.kids[0]).kind == ExprKind::Name && f.e(x.kids[0]).text == "self"sv) {
        // (The method around the last read is asked first: reads come method by method.)
        if (!(method != kNone && x.range.begin >= f.m.funcs[method].range.begin &&
              x.range.end <= f.m.funcs[method].range.end)) {
          method = f.function_at(x.range.begin);
          while (method != kNone && f.m.funcs[method].cls == kNone) method = f.m.funcs[method].parent;
        }
        if (method != kNone) {
          const Id k = f.m.funcs[method].cls;
          auto [it, fresh] = self_read.try_emplace(x.text, k, std::vector<Id>{});
          if (!fresh && it->second.first != k &&
              std::find(it->second.second.begin(), it->second.second.end(), k) == it->second.second.end())
            it->second.second.push_back(k);
          continue;
        }
      }
      seen.insert(x.text);
    } else if (identifier_like_string(x)) {
      // `getattr(self, "evaluate")`, `"pkg.module:main"`; not prose. A word naming one of the
      // file's own functions or classes (`__all__ = ["adversarial_test"]`) names that one.
      for_each_word(x.text, [&](std::string_view w) {
        if (own_len[std::min<size_t>(w.size(), 63)] && own_defs.count(w) && !s.module.empty()) own_named.insert(w);
        else seen.insert(w);
      });
    }
  }
  // Dispatch by a computed name reaches functions no text names: `fire.Fire()` puts the file's
  // functions on the command line, `getattr(self, mode)()` reaches any method of the class (or
  // of a same-file class whose instance it names), `globals()[name]()` any module-level function.
  bool every_function = false, module_functions = false, computed_getattr = false;
  std::set<Id> dispatched_classes;
  std::vector<std::tuple<Id, std::string, std::string>> dispatched_affixes;  // class, prefix, suffix
  for (const CallSite& c : f.calls) {
    const Expr& x = f.e(c.call);
    if (x.kids.empty()) continue;
    const Expr& callee = f.e(x.kids[0]);
    if (f.qual(x.kids[0]) == "fire.Fire") every_function = true;
    const bool computed = x.kids.size() >= 2 && !(f.e(x.kids[1]).kind == ExprKind::Literal &&
                                                   f.e(x.kids[1]).lit == LitKind::String);
    // A module loaded by a computed name may be any module of the run.
    if (in(f.qual(x.kids[0]), {"importlib.import_module", "__import__"}) && computed) s.dispatched_modules.push_back("*");
    if (callee.kind != ExprKind::Name) continue;
    // (`vars(args)` reads an object's fields; only `vars()` is the local namespace.)
    if (in(callee.text, {"globals", "locals"}) || (callee.text == "vars"sv && x.kids.size() == 1))
      module_functions = true;
    if (callee.text == "getattr"sv && x.kids.size() >= 3 &&
        !(f.e(x.kids[2]).kind == ExprKind::Literal && f.e(x.kids[2]).lit == LitKind::String)) {
      const Id obj = x.kids[1];
      if (!in(f.dotted(obj), {"self", "cls"})) computed_getattr = true;
      // `getattr(L, name)()` on an imported module reaches any of its functions.
      if (f.e(obj).kind == ExprKind::Name)
        if (auto a = f.m.aliases.find(f.e(obj).text); a != f.m.aliases.end()) s.dispatched_modules.push_back(a->second);
      Id k = f.dotted(obj) == "self"sv && c.func != kNone ? f.m.funcs[c.func].cls : f.instance_class(c.func, obj);
      if (k == kNone) continue;
      // A name built around a literal (`getattr(self, mode + "_writer")`, `getattr(self, "log_" +
      // kind)`) reaches only the names that end, or start, with it.
      const Expr& name = f.e(x.kids[2]);
      auto literal = [&](Id y) {
        return f.e(y).kind == ExprKind::Literal && f.e(y).lit == LitKind::String ? &f.e(y).text : nullptr;
      };
      const std::string* suffix = name.kind == ExprKind::BinOp && name.text == "+"sv && name.kids.size() == 2
                                      ? literal(name.kids[1]) : nullptr;
      const std::string* prefix = name.kind == ExprKind::BinOp && name.text == "+"sv && name.kids.size() == 2
                                      ? literal(name.kids[0]) : nullptr;
      if (suffix && !suffix->empty())
        dispatched_affixes.push_back({k, "", *suffix});
      else if (prefix && !prefix->empty())
        dispatched_affixes.push_back({k, *prefix, ""});
      else
        dispatched_classes.insert(k);
    }
  }
  for (const auto& [k, prefix, suffix] : dispatched_affixes)
    for (Id m : f.m.classes[k].methods)
      if (starts_with(f.m.funcs[m].name, prefix) && ends_with(f.m.funcs[m].name, suffix)) seen.insert(f.m.funcs[m].name);
  // `globals()[name]()` reaches the functions a star import brought in too.
  if (module_functions)
    for (const std::string& mod : f.m.star_imports) s.dispatched_modules.push_back(mod);
  // An imported module handed on as a value (`fire.Fire(lib)`, `vars(lib)[name]`,
  // `inspect.getmembers(lib)`), not only read through its attributes: any of its functions may
  // be called.
  if (!f.m.aliases.empty()) {
    std::vector<char> attribute_object(f.m.exprs.size(), 0);
    for (const Expr& x : f.m.exprs)
      if (x.kind == ExprKind::Attribute && !x.kids.empty() && x.kids[0] < attribute_object.size())
        attribute_object[x.kids[0]] = 1;
    std::set<std::string_view> handed;
    for (Id i = 0; i < f.m.exprs.size(); ++i) {
      const Expr& x = f.m.exprs[i];
      if (x.kind != ExprKind::Name || attribute_object[i]) continue;
      if (auto a = f.m.aliases.find(x.text); a != f.m.aliases.end() && !is_torch_family(a->second)) handed.insert(a->second);
    }
    for (std::string_view q : handed) s.dispatched_modules.emplace_back(q);
  }
  const bool own_dispatch = every_function || module_functions || computed_getattr;
  if (every_function || module_functions || !dispatched_classes.empty())
    for (const Function& fn : f.m.funcs)
      if (every_function || (module_functions && fn.cls == kNone && fn.parent == kNone) ||
          (fn.cls != kNone && dispatched_classes.count(fn.cls)))
        seen.insert(fn.name);
  // An imported name the file never uses (`from ..train_test import frontend_outputs` whose
  // one call is commented out) calls nothing. A package's `__init__.py` re-exports what it
  // imports, so there every import counts.
  // (`seen` holds every name read so far; an attribute, a parameter or a word of a string of
  // the same spelling keeps the import, which only errs on the side of a caller.)
  const bool reexports = ends_with(f.path, "__init__.py");
  for (const auto& [local, q] : f.m.aliases) {
    // (`from torch.utils.data import DataLoader`: as read in the file, the plain name.)
    if (from_torch.count(local)) continue;
    if (from_import.count(local)) {
      if (!reexports && !imported_read.count(local))
        continue;  // `from m import name`, never read: neither it nor its module is called here
      // Read, or re-exported by a package's `__init__.py`: its module's words, and the name as
      // the import qualifies it.
      add_words(std::string_view(q).substr(0, q.size() - local.size() - 1));
      s.imported_refs.push_back(q);
      continue;
    }
    seen.insert(local);
    add_words(q);
  }
  for (std::string_view w : own_named) s.imported_refs.push_back(s.module + "." + std::string(w));
  std::sort(s.imported_refs.begin(), s.imported_refs.end());
  s.imported_refs.erase(std::unique(s.imported_refs.begin(), s.imported_refs.end()), s.imported_refs.end());
  // Names read only as `self.<name>` (and so still in `referenced`, which other joins read).
  for (const auto& [name, classes] : self_read) {
    if (seen.count(name)) continue;  // (a name also read otherwise is read for every class)
    seen.insert(name);
    s.self_reads.push_back(f.m.classes[classes.first].name + "." + std::string(name));
    for (Id k : classes.second) s.self_reads.push_back(f.m.classes[k].name + "." + std::string(name));
  }
  std::sort(s.self_reads.begin(), s.self_reads.end());
  // (Sorted as views, which move for free, then copied once.)
  std::vector<std::string_view> names(seen.begin(), seen.end());
  std::sort(names.begin(), names.end());
  s.referenced.assign(names.begin(), names.end());
  // A module-level function of a module that is not a program is the module's interface:
  // its callers may live outside the tree (a web framework's handler, a library's API).
  // Methods, nested functions and the functions of a program are called from the tree.
  const bool program = f.is_program();
  std::set<Id> holding;
  bool any_interface = false;
  for (const Finding& fd : out) {
    if (fd.low_confidence || fd.suppressed) continue;
    for (Id fn = f.function_at(fd.range.begin); fn != kNone; fn = f.m.funcs[fn].parent) {
      if (!holding.insert(fn).second) continue;
      bool imported_base = false;
      if (callable_without_its_name(f, fn, &imported_base)) continue;
      const bool interface = !program && f.m.funcs[fn].cls == kNone && f.m.funcs[fn].parent == kNone;
      any_interface = any_interface || interface;
      const Id k = f.m.funcs[fn].cls;
      s.holding.push_back({f.m.funcs[fn].name, f.m.funcs[fn].range.begin, f.m.funcs[fn].range.end, interface,
                           k != kNone ? f.m.classes[k].name : std::string(), imported_base});
    }
  }
  // (Only a module-level function holding a finding is ever judged through the module's own
  // reads: a file without one needs none.)
  if (any_interface) summarize_own_reads(f, s, own_dispatch);
  for (const auto& k : f.m.classes) s.defined_classes.push_back(k.name);
}

std::string uncalled_key(const FileSummary::Holding& h) {
  // A module function of a helper module and a method of the same name are decided apart.
  return h.interface ? h.name + "#interface" : h.name;
}

void weaken_uncalled_in(FileResult& r, const FileSummary& s,
                        const std::function<bool(const FileSummary::Holding&)>& uncalled) {
  for (const auto& h : s.holding) {
    if (!uncalled(h)) continue;
    if (std::find(r.uncalled.begin(), r.uncalled.end(), uncalled_key(h)) == r.uncalled.end())
      r.uncalled.push_back(uncalled_key(h));
    for (Finding& fd : r.findings)
      if (!fd.low_confidence && fd.range.begin >= h.begin && fd.range.begin < h.end)
        make_weak(fd, "nothing in the scanned tree calls `" + h.name + "()` or reads its name");
  }
}

namespace {

std::string_view dir_of(std::string_view path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

// The directories of the run that hold a package (an `__init__.py`) or a setup.py (which may
// install a loose module beside it: `py_modules=["lib"]`).
std::unordered_set<std::string_view> package_dirs_of(const std::vector<FileSummary>& summaries) {
  std::unordered_set<std::string_view> out;
  for (const FileSummary& s : summaries) {
    const std::string_view base = std::string_view(s.path).substr(s.path.find_last_of('/') + 1);
    if (base == "__init__.py" || base == "setup.py") out.insert(dir_of(s.path));
  }
  return out;
}

// Which files are helper modules of the run's programs: a loose Python module (no
// `__init__.py` beside it in the run, so not part of a package anyone installs) that a program
// of the run imports (`import d2l_torch as d2l` in a notebook beside it), or a module of a
// package the tree never installs (`unpackaged`, decided by the engine from the files around
// it). Such a module is no library's interface: its callers are the tree's own code, so its
// module-level functions are judged like a program's.
std::vector<bool> program_helper_modules(const std::vector<FileSummary>& summaries, const std::vector<bool>& unpackaged) {
  std::vector<bool> helper(summaries.size());
  for (size_t i = 0; i < summaries.size() && i < unpackaged.size(); ++i) helper[i] = unpackaged[i];
  const std::unordered_set<std::string_view> package_dirs = package_dirs_of(summaries);
  std::unordered_map<std::string_view, std::vector<size_t>> by_last;  // last module component -> files
  for (size_t i = 0; i < summaries.size(); ++i) {
    const std::string& mod = summaries[i].module;
    by_last[std::string_view(mod).substr(mod.find_last_of('.') + 1)].push_back(i);
    for (const std::string& d : summaries[i].dispatched_modules)
      if (d == "*") return helper;  // a module loaded by a computed name could be any of them
  }
  for (size_t i = 0; i < summaries.size(); ++i) {
    if (!summaries[i].program) continue;
    const std::string pkg = package_of(summaries[i].module);
    for (const std::string& imp : summaries[i].imports) {
      if (imp.empty() || imp[0] == '.') continue;  // relative: inside a package
      auto it = by_last.find(std::string_view(imp).substr(imp.find_last_of('.') + 1));
      if (it == by_last.end()) continue;
      for (size_t j : it->second) {
        const std::string& pj = summaries[j].path;
        if (j == i || pj.size() < 3 || pj.compare(pj.size() - 3, 3, ".py") != 0 || package_dirs.count(dir_of(pj))) continue;
        // Python finds `import x.y` beside the program first (sys.path[0]); a dotted path may
        // also start at the top of the tree (run with PYTHONPATH or -m). A single name
        // elsewhere in the tree is some other program's module.
        const bool beside = summaries[j].module == (pkg.empty() ? imp : pkg + "." + imp);
        if (beside || (imp.find('.') != std::string::npos && module_is(summaries[j].module, imp))) helper[j] = true;
      }
    }
  }
  // What the run calls by a computed name (`getattr(L, name)()`) is an interface still.
  for (const FileSummary& s : summaries)
    for (const std::string& d : s.dispatched_modules)
      if (auto it = by_last.find(std::string_view(d).substr(d.find_last_of('.') + 1)); it != by_last.end())
        for (size_t j : it->second)
          if (module_is(summaries[j].module, d)) helper[j] = false;
  return helper;
}

}  // namespace

void weaken_cpu_only_importers(std::vector<FileResult>& results, const std::vector<FileSummary>& summaries,
                               const std::vector<bool>& unpackaged) {
  const std::unordered_set<std::string_view> package_dirs = package_dirs_of(summaries);
  std::vector<bool> eligible(summaries.size());
  for (size_t i = 0; i < summaries.size(); ++i)
    eligible[i] = (i < unpackaged.size() && unpackaged[i]) || !package_dirs.count(dir_of(summaries[i].path));
  const std::vector<std::vector<size_t>> programs = cpu_only_importers(summaries, eligible);
  for (size_t i = 0; i < summaries.size() && i < results.size(); ++i) {
    if (programs[i].empty()) continue;
    std::string names = "`" + summaries[programs[i][0]].path + "`";
    if (programs[i].size() > 1) names += " and others";
    weaken_memory_claims(results[i], "the programs that import this module (" + names +
                                         ") never place a tensor on a GPU, nor does anything they import");
  }
}

void weaken_uncalled(std::vector<FileResult>& results, const std::vector<FileSummary>& summaries,
                     const std::vector<bool>& unpackaged) {
  // Each name read, with how many files read it (1 or 2: more does not matter) and one of them.
  std::unordered_map<std::string_view, std::pair<int, size_t>> read;
  auto note_read = [&](std::string_view n, size_t i) {
    auto [it, fresh] = read.try_emplace(n, 1, i);
    if (!fresh && it->second.second != i) it->second.first = 2;
  };
  // A name a file reads only as `self.<name>` reaches the methods of the classes an object of
  // the reading class may also be: its bases and subclasses, and the other bases of a subclass
  // (mixins), through base names defined in the run. Not a sibling's method of the same name
  // (a worker's and a master's `_evaluate_model` beside the evaluator's, all three deriving
  // from one trainer base, the evaluator's own the only one called).
  // (A torch base, `nn.Module`, or `object` relates nothing: its methods are not the run's. Any
  // other base does, by its last name, which errs on the side of a caller.)
  // `all_bases` keeps every base as qualified, for the test below of bases defined in the run.
  std::unordered_map<std::string_view, std::vector<std::string_view>> bases_of, all_bases;  // class -> bases
  std::unordered_set<std::string_view> defined;
  for (const auto& s : summaries) {
    for (const auto& k : s.defined_classes) defined.insert(k);
    for (const auto& [k, q] : s.class_bases) {
      all_bases[k].push_back(q);
      if (const std::string_view base = std::string_view(q).substr(q.find_last_of('.') + 1);
          !is_torch_family(q) && base != "object"sv && !base.empty())
        bases_of[k].push_back(base);
    }
  }
  // Is every base up the class's chain defined in the run (or `nn.Module`)? Then a base's call
  // of a method by dispatch is a read the run shows. (Namesake classes pool their bases.)
  std::function<bool(std::string_view, int)> bases_in_run = [&](std::string_view k, int depth) {
    if (depth > 16) return false;
    auto it = all_bases.find(k);
    if (it == all_bases.end()) return true;
    for (std::string_view q : it->second) {
      if (q == "torch.nn.Module"sv || q == "torch.nn.modules.module.Module"sv || q == "object"sv) continue;
      const std::string_view base = q.substr(q.find_last_of('.') + 1);
      if (base == k || !defined.count(base) || !bases_in_run(base, depth + 1)) return false;
    }
    return true;
  };
  // Each class with its ancestors (itself included; a cycle or a chain past 32 stops).
  std::unordered_map<std::string_view, std::vector<std::string_view>> lineage;
  for (const auto& [k, unused] : bases_of) {
    std::vector<std::string_view>& anc = lineage[k];
    std::vector<std::string_view> work{k};
    while (!work.empty() && anc.size() < 32) {
      const std::string_view c = work.back();
      work.pop_back();
      if (std::find(anc.begin(), anc.end(), c) != anc.end()) continue;
      anc.push_back(c);
      if (auto it = bases_of.find(c); it != bases_of.end()) work.insert(work.end(), it->second.begin(), it->second.end());
    }
  }
  // Each ancestor with the lineages it is in, and each class with the classes related to it so.
  std::unordered_map<std::string_view, std::vector<const std::vector<std::string_view>*>> lineages_with;
  for (const auto& [d, anc] : lineage)
    for (std::string_view a : anc) lineages_with[a].push_back(&anc);
  // (class, name): a self read of the name reaches that class's method of the name.
  std::set<std::pair<std::string_view, std::string_view>> self_read;
  std::unordered_map<std::string_view, std::vector<std::string_view>> related;
  auto note_self_read = [&](std::string_view k, std::string_view n) {
    self_read.insert({k, n});
    auto [it, fresh] = related.try_emplace(k);
    if (fresh)
      if (auto w = lineages_with.find(k); w != lineages_with.end()) {
        for (const auto* anc : w->second) it->second.insert(it->second.end(), anc->begin(), anc->end());
        std::sort(it->second.begin(), it->second.end());
        it->second.erase(std::unique(it->second.begin(), it->second.end()), it->second.end());
      }
    for (std::string_view a : it->second) self_read.insert({a, n});
  };
  for (size_t i = 0; i < summaries.size(); ++i) {
    std::unordered_set<std::string_view> only_self;
    for (const std::string& q : summaries[i].self_reads) {
      const size_t dot = q.find('.');
      const std::string_view k = std::string_view(q).substr(0, dot), n = std::string_view(q).substr(dot + 1);
      only_self.insert(n);
      note_self_read(k, n);
    }
    for (const std::string& n : summaries[i].referenced)
      if (!only_self.count(n)) note_read(n, i);
  }
  // Names read as imported from a module (`from train_test import train`): a read of that
  // module's function when a file of the run is that module and defines it (another module's
  // copy of `train` is not reached); otherwise (a package's re-export, a module outside the
  // run), a read of the name wherever it is defined.
  std::vector<std::unordered_set<std::string_view>> credited(summaries.size());
  {
    std::unordered_map<std::string_view, std::vector<size_t>> by_last;  // last module component -> files
    for (size_t k = 0; k < summaries.size(); ++k) {
      const std::string& mod = summaries[k].module;
      by_last[std::string_view(mod).substr(mod.find_last_of('.') + 1)].push_back(k);
    }
    for (size_t i = 0; i < summaries.size(); ++i)
      for (const std::string& q : summaries[i].imported_refs) {
        const size_t dot = q.rfind('.');
        if (dot == std::string::npos) continue;
        const std::string_view name = std::string_view(q).substr(dot + 1);
        std::string mod = q.substr(0, dot);
        while (!mod.empty() && mod[0] == '.') mod.erase(0, 1);
        size_t owner = summaries.size();
        if (auto it = by_last.find(std::string_view(mod).substr(mod.find_last_of('.') + 1)); it != by_last.end() && !mod.empty())
          for (size_t k : it->second) {
            const auto& fs = summaries[k].functions;
            if (module_is(summaries[k].module, mod) && std::find(fs.begin(), fs.end(), name) != fs.end())
              owner = owner == summaries.size() ? k : summaries.size() + 1;  // (two candidates: undecided)
          }
        if (owner < summaries.size()) credited[owner].insert(name);
        else note_read(name, i);
      }
  }
  const std::vector<bool> helper = program_helper_modules(summaries, unpackaged);
  for (size_t i = 0; i < results.size() && i < summaries.size(); ++i) {
    // A helper module's functions are live when another file reads their names, when the module
    // reads them outside its functions, or when a live function of it reads them.
    std::unordered_set<std::string_view> live;
    if (helper[i]) {
      std::vector<std::string_view> work;
      auto reach = [&](std::string_view n) {
        if (live.insert(n).second) work.push_back(n);
      };
      for (const auto& [caller, callee] : summaries[i].own_reads)
        if (caller.empty()) reach(callee);
      for (const auto& h : summaries[i].holding) {
        auto it = read.find(h.name);
        if ((it != read.end() && (it->second.first > 1 || it->second.second != i)) || credited[i].count(h.name))
          reach(h.name);
      }
      for (const auto& [caller, callee] : summaries[i].own_reads) {
        auto it = read.find(caller);
        // (Also a caller another file imports by its name: `from train_eval import run`.)
        if (!caller.empty() &&
            ((it != read.end() && (it->second.first > 1 || it->second.second != i)) || credited[i].count(caller)))
          reach(caller);
      }
      std::unordered_map<std::string_view, std::vector<std::string_view>> reads_of;  // caller -> callees
      for (const auto& [caller, callee] : summaries[i].own_reads) reads_of[caller].push_back(callee);
      while (!work.empty()) {
        const std::string_view n = work.back();
        work.pop_back();
        if (auto it = reads_of.find(n); it != reads_of.end())
          for (std::string_view callee : it->second) reach(callee);
      }
    }
    // A notebook is imported by no file: only its own reads reach its functions (a class's
    // `generate()` it never calls, beside other files' calls of their own `generate`).
    const bool notebook = ends_with(summaries[i].path, ".ipynb");
    weaken_uncalled_in(results[i], summaries[i], [&](const FileSummary::Holding& h) {
      if (notebook)
        return !h.interface && !std::binary_search(summaries[i].referenced.begin(), summaries[i].referenced.end(), h.name);
      if (h.interface) return helper[i] && !live.count(h.name);
      if (h.imported_base && !bases_in_run(h.cls, 0)) return false;
      return read.count(h.name) == 0 && !credited[i].count(h.name) &&
             (h.cls.empty() || !self_read.count({std::string_view(h.cls), std::string_view(h.name)}));
    });
  }
}

std::vector<Finding> run_checks(const Module& m, const Config& cfg, const std::string& path,
                                std::string_view source, const ProjectView* project, FileSummary* summary) {
  std::vector<Finding> out;
  Facts facts(m, cfg, path, project);
  const bool torch = imports_torch(m);
  if (summary) {
    *summary = facts.summarize();
    summary->imports_torch = torch;
    summary->imports = imported_modules(m);
    summary->tensor_api = !torch && calls_tensor_api(m);
    summarize_LL405(facts, *summary);
    summarize_LL203(facts, *summary);
    // (Also of a module that reaches torch only through a project module, `from utils import
    // *`: the join that finds that out reads its trainers and model sizes.)
    summarize_LL301(facts, *summary);
    summarize_LL205(facts, *summary);
    summarize_LL101(facts, *summary);
    summarize_LL102(facts, *summary);
    summarize_LL105(facts, *summary);
    summarize_LL206(facts, *summary);
  }
  // Relevance: Python that reaches no torch (MXNet, TensorFlow, plain Python) has none of
  // the mechanisms the rules describe. C++ units are filtered before Clang runs.
  // (Also of a launcher without torch of its own, `main.py` running the trainer it imports: a
  // program of the run, whose own flags may place the model on a GPU, for the CPU-only project.)
  if (summary) {
    summary->program = facts.is_program();
    // (A module without torch that is no program places nothing: its scan is spared.)
    summary->gpu_evidence = (torch || summary->program || m.lang != Lang::Python) && facts.has_gpu_evidence();
  }
  if (m.lang == Lang::Python && !torch && (!(project && project->torch_via_project) || imports_other_framework(m))) {
    // Still a caller: a launcher without torch of its own runs the trainer it imports.
    if (summary) summarize_references(facts, out, *summary);
    return out;
  }
  CheckContext ctx(facts, source, out);
  for (const auto& c : all_checks())
    if (ctx.enabled(c.id)) c.run(ctx);
  // Code that cannot run: the statements after a `return`, `raise`, `break` or `continue` in
  // the same block (a `def test(self): return` left in front of an evaluation loop). What
  // never runs leaks nothing. (Python only: a C++ `switch` lowers its cases into one block.)
  if (m.lang == Lang::Python && !out.empty()) {
    std::vector<std::pair<uint32_t, uint32_t>> dead;
    std::function<void(const std::vector<Id>&, int)> walk = [&](const std::vector<Id>& body, int depth) {
      if (depth > 200) return;
      bool exited = false;
      for (Id sid : body) {
        const Stmt& st = m.s(sid);
        if (exited) {
          dead.emplace_back(st.range.begin, st.range.end);
          continue;
        }
        exited = st.kind == StmtKind::Return || st.kind == StmtKind::Raise || st.kind == StmtKind::Break ||
                 st.kind == StmtKind::Continue;
        if (st.kind == StmtKind::FunctionDef && st.func != kNone) walk(m.funcs[st.func].body, depth + 1);
        walk(st.body, depth + 1);
        walk(st.orelse, depth + 1);
        walk(st.finalbody, depth + 1);
        for (const Handler& h : st.handlers) walk(h.body, depth + 1);
      }
    };
    walk(m.body, 0);
    if (!dead.empty())
      out.erase(std::remove_if(out.begin(), out.end(),
                               [&](const Finding& fd) {
                                 for (const auto& [b, e] : dead)
                                   if (fd.range.begin >= b && fd.range.begin < e) return true;
                                 return false;
                               }),
                out.end());
  }
  // One problem, one finding: an empty_cache() that LL303 reports as running every iteration
  // is the problem there. Releasing the references before it (LL302's advice) would still
  // leave a per-iteration cache flush; taking it out of the loop is the fix.
  {
    std::set<uint32_t> hot;
    for (const Finding& fd : out)
      if (fd.rule == "LL303"sv) hot.insert(fd.range.begin);
    for (Finding& fd : out)
      if (fd.rule == "LL302"sv && !fd.low_confidence && hot.count(fd.range.begin))
        make_weak(fd, "this call runs every iteration of a hot loop (LL303); take it out of the loop first");
  }
  // The impact policy's test code (docs/impact.md): a test runs once, on small inputs, to
  // check behaviour, so what a rule says a run wastes or computes wrongly over its
  // iterations is weak there. Patterns that fail at once (`with torch.no_grad:`, an invalid
  // DataLoader option, CUDA in a worker or a forked child, spawn without a main guard) keep
  // their severity in tests too.
  for (Finding& fd : out)
    if (!fd.low_confidence && !in(fd.rule, {"LL104", "LL401", "LL404", "LL501", "LL502"}) &&
        facts.in_test_code(facts.function_at(fd.range.begin)))
      make_weak(fd, kTestCodeReason);
  // Code the author switched off: a function whose only calls are commented out runs only if
  // something outside the file calls it.
  for (Finding& fd : out) {
    if (fd.low_confidence) continue;
    for (Id fn = facts.function_at(fd.range.begin); fn != kNone; fn = facts.m.funcs[fn].parent)
      if (facts.switched_off(fn)) {
        make_weak(fd, "`" + facts.m.funcs[fn].name + "()` is called only from commented-out lines; nothing in "
                      "this file runs it");
        break;
      }
  }
  // Code the file switches off by a value it binds itself: under `if RUN_PPL:` with
  // `RUN_PPL = False` bound once (or `if False:`), it never runs as written. The condition
  // that switches position `pos` off, with the branch it needs (kNone when none does).
  auto switched_off_by = [&](uint32_t pos) -> std::pair<Id, bool> {
    const Id fn = facts.function_at(pos);
    std::vector<std::pair<Id, bool>> conds;
    if (!conditions_to(facts, fn == kNone ? facts.m.body : facts.m.funcs[fn].body, kNone, pos, conds))
      return {kNone, false};
    for (const auto& [cond, branch] : conds) {
      const auto v = decide(facts, fn, cond, {});
      if (v && truthy(*v) != branch) return {cond, branch};
    }
    return {kNone, false};
  };
  auto condition_text = [&](Id cond) {
    const Range& r = facts.e(cond).range;
    return r.end > r.begin && r.end <= source.size() ? std::string(source.substr(r.begin, r.end - r.begin))
                                                     : std::string("its condition");
  };
  for (Finding& fd : out) {
    if (fd.low_confidence) continue;
    if (const auto [cond, branch] = switched_off_by(fd.range.begin); cond != kNone) {
      make_weak(fd, "the code runs only when `" + condition_text(cond) + "` is " + (branch ? "true" : "false") +
                        ", and the values this file binds make it " + (branch ? "false" : "true") +
                        ": as written, it never runs");
      continue;
    }
    // A method or function of the file every call of which is switched off so (`if
    // self.DBval: self.analysis_loop(val_loader)` with `self.DBval = False` in `__init__`), and
    // that nothing else reads by name.
    const Id fn = facts.function_at(fd.range.begin);
    if (fn == kNone || facts.m.funcs[fn].parent != kNone || facts.callers(fn).empty() || facts.handed_on(fn) ||
        (facts.project && facts.project->external_calls.count(facts.m.funcs[fn].name)))
      continue;
    Id first = kNone;
    bool all_off = true;
    for (int ci : facts.callers(fn)) {
      const auto [cond, branch] = switched_off_by(facts.e(facts.calls[ci].call).range.begin);
      if (cond == kNone) {
        all_off = false;
        break;
      }
      if (first == kNone) first = cond;
    }
    if (all_off && first != kNone)
      make_weak(fd, "`" + facts.m.funcs[fn].name + "()` is called only under `" + condition_text(first) +
                        "`, which the values this file binds decide against: as written, it never runs");
  }
  if (summary && m.lang == Lang::Python) summarize_references(facts, out, *summary);
  // Methods whose findings depend on their entry grad mode, which calls in other files may
  // decide (Facts::called_by_name), directly or through the same-file methods they are
  // reached from: the join looks them up.
  if (summary) {
    std::vector<Id> holding;
    for (const Finding& fd : out)
      if (in(fd.rule, {"LL101", "LL102", "LL103", "LL106"}))
        if (Id fn = facts.function_at(fd.range.begin); fn != kNone) holding.push_back(fn);
    summary->open_methods = facts.open_methods(std::move(holding));
  }
  return out;
}

}  // namespace ll
