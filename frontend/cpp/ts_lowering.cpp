// tree-sitter-cpp tree -> ll::Module, for files Clang cannot analyse. The shapes are the
// ones ast_lowering.cpp produces (docs/cpp.md has the table); what Clang's types say there
// is read here from declarations:
//   torch::NoGradGuard g;             -> with torch.no_grad() as g: <rest of the block>
//   module->forward(x) / module(x)    -> module.forward(x) / module(x)
//   float total = v; total += v       -> total = float(v); total += float(v)   (a number)
//   std::vector<float> v; v.push_back(x) -> v.append(float(x))
//   std::get<1>(f(x))                 -> f(x)[1]
//   std::make_tuple(y, z)             -> (y, z)
//   auto [a, b] = f(x)                -> a, b = f(x)
//   parameters/fields of module/optimizer type -> `p: T = T()` first in the body; of a
//   class type that is not LibTorch's (dlib::, cv::, ...) -> the same, so a name like
//   `classifier` is never taken for a model.
// Parse errors are tolerated: tree-sitter recovers, and the statements inside ERROR nodes
// are lowered like any others.
#include "frontend/cpp/ts_lowering.hpp"

#include <tree_sitter/api.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "frontend/cpp/model_builder.hpp"

extern "C" const TSLanguage* tree_sitter_cpp(void);

namespace ll::cpp {
namespace {

struct TypeFacts {
  ValueKind kind = ValueKind::None;
  bool smart = false;
  bool builtin = false;  // int, double, auto ...
  bool is_auto = false;
  bool is_void = false;
  const char* number = nullptr;  // "float" / "int" / "bool" for arithmetic types
  const char* elem_number = nullptr;  // a container of numbers (std::vector<float>)
  bool other = false;   // a class type that is not LibTorch's
  bool indirect = false;  // declared through a pointer or reference
  GuardKind guard = GuardKind::None;
  bool holder = false;
  std::string resolved;     // C++ qualified name of the class
  std::string qname;        // model spelling (library class)
  std::string local_class;  // or this file's class
};

struct VarInfo {
  TypeFacts type;
  Id init = kNone;  // lowered initialiser (for DataLoaderOptions chains)
};

struct ClassInfo {
  Id id = kNone;
  std::vector<std::string> bases;  // as spelled
  std::vector<std::pair<std::string, TypeFacts>> fields;
  std::vector<std::pair<std::string, TSNode>> field_inits;  // name -> initialiser node
  bool has_ctor = false;
  std::string holder_impl;  // TORCH_MODULE(Net): Net -> NetImpl
};

bool interesting(ValueKind k) {
  return k == ValueKind::Module || k == ValueKind::Optimizer || k == ValueKind::Scheduler || k == ValueKind::JitMethod;
}

const char* number_word(std::string_view w) {
  static const char* const floats[] = {"float", "double", "half", "float16_t", "float32_t", "float64_t", "bfloat16_t"};
  for (const char* f : floats)
    if (w == f) return "float";
  if (w == "bool") return "bool";
  static const char* const ints[] = {"int", "long", "short", "unsigned", "signed", "char", "size_t", "ssize_t",
                                     "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
                                     "uint64_t", "ptrdiff_t", "wchar_t", "char8_t", "char16_t", "char32_t",
                                     "std::size_t", "std::int64_t", "std::int32_t", "std::uint8_t", "std::ptrdiff_t",
                                     "intptr_t", "uintptr_t"};
  for (const char* i : ints)
    if (w == i) return "int";
  if (w.find("double") != std::string_view::npos || w.find("float") != std::string_view::npos) return "float";
  if (w.find("int") != std::string_view::npos || w.find("long") != std::string_view::npos ||
      w.find("short") != std::string_view::npos || w.find("unsigned") != std::string_view::npos ||
      w.find("char") != std::string_view::npos)
    return "int";
  return nullptr;
}

bool is_macro_name(std::string_view w) {
  if (w.size() < 3) return false;
  for (char c : w)
    if (std::islower(static_cast<unsigned char>(c))) return false;
  return true;
}

class TsLowerer {
 public:
  TsLowerer(std::string_view src, Module& m, std::vector<Diagnostic>& diags) : b_(m, src), src_(src), diags_(diags) {
    // A file that never spells LibTorch (dlib, OpenCV, plain C++): none of its class types
    // can be a LibTorch module. `Tensor` and `TORCH_` count, for files that reach LibTorch
    // through a project header.
    mentions_torch_ = mentions_libtorch(src, /*bare_tensor=*/true);
  }

  void run() {
    b_.m.lang = Lang::Cpp;
    std::unique_ptr<TSParser, void (*)(TSParser*)> parser(ts_parser_new(), ts_parser_delete);
    ts_parser_set_language(parser.get(), tree_sitter_cpp());
    // A parse that takes unreasonably long (pathological input) gives up, with a diagnostic,
    // rather than hanging the run.
    ts_parser_set_timeout_micros(parser.get(), 20'000'000);
    std::unique_ptr<TSTree, void (*)(TSTree*)> tree(
        ts_parser_parse_string(parser.get(), nullptr, src_.data(), static_cast<uint32_t>(src_.size())),
        ts_tree_delete);
    if (!tree) {
      Diagnostic d;
      d.kind = "internal";
      d.message = "the C++ parse of this file did not finish in time; the file was not analysed";
      d.fatal = true;
      diags_.push_back(std::move(d));
      return;
    }
    TSNode root = ts_tree_root_node(tree.get());
    prescan(root);
    std::vector<Id> body;
    decls(root, body, "");
    b_.m.body = std::move(body);
  }

 private:
  ModelBuilder b_;
  std::string_view src_;
  std::vector<Diagnostic>& diags_;
  bool mentions_torch_ = false;
  int depth_ = 0;
  bool too_deep_ = false;
  Id cur_func_ = kNone;
  std::string cur_class_;
  std::vector<std::string> using_ns_;
  std::unordered_map<std::string, std::string> ns_alias_;
  std::unordered_map<std::string, std::string> type_alias_;
  std::unordered_map<std::string, ClassInfo> classes_;
  std::unordered_set<std::string> local_funcs_;
  std::unordered_set<std::string> namespaces_{"std", "torch", "at", "c10", "nn", "optim", "jit", "data"};
  std::vector<std::unordered_map<std::string, VarInfo>> scopes_;
  std::vector<Id> hoisted_;
  std::unordered_set<Id> smart_values_;  // results of std::make_shared / make_unique

  // ------------------------------------------------------------------ tree access
  static std::string_view kind(TSNode n) { return ts_node_is_null(n) ? std::string_view() : ts_node_type(n); }
  static bool is(TSNode n, std::string_view k) { return kind(n) == k; }
  static TSNode field(TSNode n, const char* f) {
    if (ts_node_is_null(n)) return TSNode{};
    return ts_node_child_by_field_name(n, f, static_cast<uint32_t>(std::strlen(f)));
  }
  static uint32_t named_count(TSNode n) { return ts_node_is_null(n) ? 0 : ts_node_named_child_count(n); }
  static TSNode named(TSNode n, uint32_t i) { return ts_node_named_child(n, i); }
  // Children with a given field name (declarations have several `declarator`s).
  static std::vector<TSNode> fields(TSNode n, const char* f) {
    std::vector<TSNode> out;
    if (ts_node_is_null(n)) return out;
    TSTreeCursor c = ts_tree_cursor_new(n);
    if (ts_tree_cursor_goto_first_child(&c)) {
      do {
        const char* name = ts_tree_cursor_current_field_name(&c);
        if (name && std::strcmp(name, f) == 0) out.push_back(ts_tree_cursor_current_node(&c));
      } while (ts_tree_cursor_goto_next_sibling(&c));
    }
    ts_tree_cursor_delete(&c);
    return out;
  }
  std::string_view text(TSNode n) const {
    if (ts_node_is_null(n)) return {};
    uint32_t b = ts_node_start_byte(n), e = ts_node_end_byte(n);
    if (b > src_.size()) return {};
    return src_.substr(b, std::min<size_t>(e, src_.size()) - b);
  }
  std::string str(TSNode n) const { return std::string(text(n)); }
  Range rng(TSNode n) const {
    if (ts_node_is_null(n)) return b_.range(0, 0);
    uint32_t b = std::min<uint32_t>(ts_node_start_byte(n), static_cast<uint32_t>(src_.size()));
    uint32_t e = std::min<uint32_t>(ts_node_end_byte(n), static_cast<uint32_t>(src_.size()));
    return b_.range(b, std::max(b, e));
  }
  Range span(TSNode a, TSNode z) const {
    Range ra = rng(a), rz = rng(z);
    return b_.range(ra.begin, std::max(ra.begin, rz.end));
  }

  void too_deep(const Range& r) {
    if (too_deep_) return;
    too_deep_ = true;
    diags_.push_back(b_.too_deep(r));
  }
  struct Depth {
    int& d;
    explicit Depth(int& d) : d(d) { ++d; }
    ~Depth() { --d; }
  };

  // ------------------------------------------------------------------ prescan
  void prescan(TSNode root) {
    std::vector<std::pair<TSNode, int>> work{{root, 0}};
    while (!work.empty()) {
      auto [n, d] = work.back();
      work.pop_back();
      std::string_view k = kind(n);
      if ((k == "struct_specifier" || k == "class_specifier") && !ts_node_is_null(field(n, "body"))) {
        TSNode name = field(n, "name");
        if (!ts_node_is_null(name)) {
          std::vector<std::string> parts;
          name_parts(name, parts, nullptr);
          if (!parts.empty()) {
            ClassInfo& ci = classes_[parts.back()];
            if (ci.bases.empty()) ci.bases = base_names(n);
          }
        }
      } else if (k == "call_expression") {
        TSNode fn = field(n, "function");
        TSNode args = field(n, "arguments");
        if (text(fn) == "TORCH_MODULE" && named_count(args) >= 1 && is(named(args, 0), "identifier")) {
          std::string name = str(named(args, 0));
          classes_[name].holder_impl = name + "Impl";
        }
      } else if (k == "function_definition") {
        TSNode decl = innermost_declarator(field(n, "declarator"));
        if (is(decl, "function_declarator")) {
          TSNode id = field(decl, "declarator");
          if (is(id, "identifier")) local_funcs_.insert(str(id));
        }
      } else if (k == "namespace_definition") {
        TSNode name = field(n, "name");
        std::vector<std::string> parts;
        name_parts(name, parts, nullptr);
        for (auto& p : parts) namespaces_.insert(p);
      } else if (k == "using_declaration" || k == "namespace_alias_definition" || k == "alias_declaration" ||
                 k == "type_definition") {
        // File-wide, as written at the top of a file; block-level ones are read in place too.
        using_like(n);
      }
      if (d > kMaxDepth) continue;
      for (uint32_t i = named_count(n); i-- > 0;) work.emplace_back(named(n, i), d + 1);
    }
  }

  std::vector<std::string> base_names(TSNode cls) {
    std::vector<std::string> out;
    for (uint32_t i = 0; i < named_count(cls); ++i) {
      TSNode c = named(cls, i);
      if (!is(c, "base_class_clause")) continue;
      for (uint32_t j = 0; j < named_count(c); ++j) {
        TSNode b = named(c, j);
        if (is(b, "access_specifier") || is(b, "virtual")) continue;
        std::vector<std::string> parts;
        name_parts(b, parts, nullptr);
        if (!parts.empty()) out.push_back(join_qualified(parts, "::"));
      }
    }
    return out;
  }

  // ------------------------------------------------------------------ names
  // The components of a (qualified, templated) name; `targs` receives the last template
  // argument list seen.
  void name_parts(TSNode n, std::vector<std::string>& parts, TSNode* targs, int depth = 0) const {
    if (ts_node_is_null(n) || depth > 32) return;
    std::string_view k = kind(n);
    if (k == "identifier" || k == "type_identifier" || k == "namespace_identifier" || k == "field_identifier" ||
        k == "primitive_type") {
      parts.emplace_back(text(n));
      return;
    }
    if (k == "qualified_identifier" || k == "nested_namespace_specifier") {
      TSNode scope = field(n, "scope");
      if (k == "qualified_identifier" && ts_node_is_null(scope)) parts.emplace_back("");
      if (k == "nested_namespace_specifier") {
        for (uint32_t i = 0; i < named_count(n); ++i) name_parts(named(n, i), parts, targs, depth + 1);
        return;
      }
      name_parts(scope, parts, targs, depth + 1);
      name_parts(field(n, "name"), parts, targs, depth + 1);
      return;
    }
    if (k == "template_type" || k == "template_function" || k == "template_method") {
      name_parts(field(n, "name"), parts, targs, depth + 1);
      if (targs) *targs = field(n, "arguments");
      return;
    }
    if (k == "destructor_name") {
      parts.push_back("~" + std::string(text(named_count(n) ? named(n, 0) : n)));
      return;
    }
    if (k == "operator_name") {
      parts.emplace_back(text(n));
      return;
    }
    if (k == "dependent_name" || k == "dependent_type") {
      if (named_count(n)) name_parts(named(n, 0), parts, targs, depth + 1);
      return;
    }
    if (k == "struct_specifier" || k == "class_specifier" || k == "enum_specifier" || k == "union_specifier") {
      name_parts(field(n, "name"), parts, targs, depth + 1);
      return;
    }
  }

  bool known_library(const std::string& n) const {
    if (guard_kind(n) != GuardKind::None || value_kind_by_name(n) != ValueKind::None) return true;
    for (const char* p : {"torch::", "at::", "c10::", "std::"})
      if (n.rfind(p, 0) == 0) return true;
    std::string dotted;
    for (size_t i = 0; i < n.size(); ++i) {
      if (n[i] == ':' && i + 1 < n.size() && n[i + 1] == ':') { dotted.push_back('.'); ++i; }
      else dotted.push_back(n[i]);
    }
    return model_qname(n) != dotted;  // a name the tables map specially (fork -> os.fork)
  }

  std::string resolve(std::vector<std::string> parts) const {
    if (!parts.empty() && parts[0].empty()) parts.erase(parts.begin());
    if (parts.empty()) return "";
    for (int guard = 0; guard < 4; ++guard) {
      auto it = ns_alias_.find(parts[0]);
      if (it == ns_alias_.end()) break;
      std::vector<std::string> exp = split_qualified(it->second);
      parts.erase(parts.begin());
      parts.insert(parts.begin(), exp.begin(), exp.end());
    }
    if (parts.size() == 1) {
      auto ta = type_alias_.find(parts[0]);
      if (ta != type_alias_.end()) return ta->second;
    }
    std::string name = join_qualified(parts, "::");
    if (parts.size() == 1 && (classes_.count(name) || local_funcs_.count(name))) return name;
    if (known_library(name)) return name;
    if (is_macro_name(parts[0])) return name;  // FORWARD(...): a macro, not torch::FORWARD
    for (const auto& ns : using_ns_) {
      std::string cand = ns + "::" + name;
      if (known_library(cand)) return cand;
    }
    return name;
  }

  void using_like(TSNode n) {
    std::string_view k = kind(n);
    if (k == "using_declaration") {
      std::vector<std::string> parts;
      for (uint32_t i = 0; i < named_count(n); ++i) name_parts(named(n, i), parts, nullptr);
      if (parts.empty()) return;
      bool ns = false;  // `using namespace X;`: an anonymous `namespace` token among the children
      for (uint32_t i = 0; i < ts_node_child_count(n); ++i)
        if (is(ts_node_child(n, i), "namespace")) ns = true;
      if (ns) {
        std::string r = resolve(parts);
        if (!r.empty() && std::find(using_ns_.begin(), using_ns_.end(), r) == using_ns_.end()) using_ns_.push_back(r);
      } else if (parts.size() >= 2) {
        type_alias_[parts.back()] = resolve(parts);
      }
      return;
    }
    if (k == "namespace_alias_definition") {
      TSNode name = field(n, "name");
      std::vector<std::string> target;
      for (uint32_t i = 0; i < named_count(n); ++i) {
        TSNode c = named(n, i);
        if (ts_node_eq(c, name)) continue;
        name_parts(c, target, nullptr);
      }
      if (!ts_node_is_null(name) && !target.empty()) ns_alias_[str(name)] = resolve(target);
      return;
    }
    if (k == "alias_declaration") {
      TSNode name = field(n, "name");
      TypeFacts tf = type_facts(field(field(n, "type"), "type"));
      std::string target = tf.number ? std::string(text(field(field(n, "type"), "type"))) : tf.resolved;
      if (!ts_node_is_null(name) && !target.empty() && str(name) != target) type_alias_[str(name)] = target;
      return;
    }
    if (k == "type_definition") {
      TypeFacts tf = type_facts(field(n, "type"));
      std::string target = tf.number ? std::string(text(field(n, "type"))) : tf.resolved;
      for (TSNode d : fields(n, "declarator"))
        if (is(d, "type_identifier") && !target.empty() && str(d) != target) type_alias_[str(d)] = target;
    }
  }

  // ------------------------------------------------------------------ types
  ValueKind class_kind(const std::string& name, int depth = 0) const {
    if (depth > 8) return ValueKind::None;
    auto it = classes_.find(name);
    if (it == classes_.end()) {
      if (name == "torch::nn::Cloneable" || name == "torch::nn::ModuleHolder") return ValueKind::Module;
      return value_kind_by_name(name);
    }
    if (!it->second.holder_impl.empty()) return ValueKind::Module;
    for (const auto& b : it->second.bases) {
      ValueKind k = class_kind(resolve(split_qualified(b)), depth + 1);
      if (interesting(k)) return k;
    }
    return ValueKind::None;
  }

  TypeFacts facts_of_name(const std::string& resolved) const {
    TypeFacts f;
    f.resolved = resolved;
    if (const char* num = number_word(resolved); num && resolved.find("::") == std::string::npos) {
      f.builtin = true;
      f.number = num;
      f.resolved.clear();
      return f;
    }
    if (resolved == "std::size_t" || resolved == "std::int64_t" || resolved == "std::int32_t" ||
        resolved == "std::uint8_t" || resolved == "std::ptrdiff_t" || resolved == "std::uint64_t") {
      f.builtin = true;
      f.number = "int";
      f.resolved.clear();
      return f;
    }
    f.guard = guard_kind(resolved);
    if (f.guard != GuardKind::None) return f;
    if (classes_.count(resolved)) {
      f.kind = class_kind(resolved);
      f.local_class = resolved;
      f.holder = !classes_.at(resolved).holder_impl.empty();
      return f;
    }
    f.kind = value_kind_by_name(resolved);
    if (f.kind == ValueKind::None && (resolved == "torch::nn::Cloneable" || resolved == "torch::nn::ModuleHolder"))
      f.kind = ValueKind::Module;
    if (f.kind != ValueKind::None) f.qname = class_qname(resolved, f.kind);
    f.holder = f.kind == ValueKind::Module && resolved.rfind("torch::nn::", 0) == 0 && resolved.size() > 4 &&
               resolved.compare(resolved.size() - 4, 4, "Impl") != 0 && resolved != "torch::nn::Module";
    if (f.kind == ValueKind::None && !resolved.empty()) {
      // Not LibTorch: a class of another library (dlib::, cv::, std::string), or any class
      // in a file that never mentions LibTorch. A class this file only sees the name of
      // (a project header's Net) stays unknown.
      std::vector<std::string> parts = split_qualified(resolved);
      bool torch_ns = parts[0] == "torch" || parts[0] == "at" || parts[0] == "c10" || parts[0] == "ATen";
      bool foreign = parts.size() > 1 && !torch_ns && !namespaces_project(parts[0]);
      f.other = foreign || !mentions_torch_;
    }
    return f;
  }
  // A namespace this file opens (`namespace mynet {`): its classes may be LibTorch modules.
  bool namespaces_project(const std::string& ns) const {
    static const std::unordered_set<std::string> libs{"std", "torch", "at", "c10", "nn", "optim", "jit", "data"};
    return namespaces_.count(ns) && !libs.count(ns);
  }

  TypeFacts type_facts(TSNode t, int depth = 0) const {
    TypeFacts f;
    if (ts_node_is_null(t) || depth > 8) return f;
    std::string_view k = kind(t);
    if (k == "type_descriptor") return type_facts(field(t, "type"), depth + 1);
    if (k == "primitive_type" || k == "sized_type_specifier") {
      f.builtin = true;
      f.is_void = text(t) == "void";
      if (!f.is_void) f.number = number_word(text(t));
      if (!f.number && !f.is_void) f.number = "int";
      return f;
    }
    if (k == "placeholder_type_specifier" || k == "decltype" || k == "auto") {
      f.builtin = true;
      f.is_auto = true;
      return f;
    }
    std::vector<std::string> parts;
    TSNode targs{};
    name_parts(t, parts, &targs);
    if (parts.empty()) return f;
    std::string res = resolve(parts);
    f = facts_of_name(res);
    if (!ts_node_is_null(targs) && named_count(targs) > 0 &&
        (f.kind == ValueKind::SmartPtr || f.kind == ValueKind::Container)) {
      TypeFacts inner = type_facts(named(targs, 0), depth + 1);
      if (f.kind == ValueKind::SmartPtr) {
        if (inner.kind != ValueKind::None) {
          inner.smart = true;
          return inner;
        }
        f.smart = true;
      } else if (inner.number && (res == "std::vector" || res == "std::deque" || res == "std::list" ||
                                  res == "std::set" || res == "std::unordered_set")) {
        f.elem_number = inner.number;
      }
    }
    if (f.kind == ValueKind::SmartPtr) f.smart = true;
    return f;
  }

  // ------------------------------------------------------------------ declarators
  static TSNode innermost_declarator(TSNode d) {
    for (int guard = 0; guard < 64 && !ts_node_is_null(d); ++guard) {
      std::string_view k = kind(d);
      if (k == "pointer_declarator" || k == "reference_declarator" || k == "init_declarator" ||
          k == "array_declarator" || k == "attributed_declarator" || k == "parenthesized_declarator") {
        TSNode inner = field(d, "declarator");
        if (ts_node_is_null(inner) && named_count(d)) inner = named(d, named_count(d) - 1);
        if (k == "reference_declarator" && named_count(d)) inner = named(d, 0);
        if (ts_node_is_null(inner)) return d;
        d = inner;
        continue;
      }
      return d;
    }
    return d;
  }
  // Through pointers/references to the name (or structured binding, or function declarator).
  static TSNode unwrap(TSNode d, bool* indirect) {
    for (int guard = 0; guard < 64 && !ts_node_is_null(d); ++guard) {
      std::string_view k = kind(d);
      if (k == "pointer_declarator" || k == "reference_declarator" || k == "array_declarator" ||
          k == "attributed_declarator" || k == "parenthesized_declarator") {
        if (k != "array_declarator" && indirect) *indirect = true;
        TSNode inner = field(d, "declarator");
        if (ts_node_is_null(inner) && named_count(d)) inner = named(d, 0);
        if (k == "reference_declarator" && named_count(d)) inner = named(d, named_count(d) - 1);
        if (ts_node_is_null(inner)) return d;
        d = inner;
        continue;
      }
      return d;
    }
    return d;
  }

  // ------------------------------------------------------------------ scopes
  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() {
    if (!scopes_.empty()) scopes_.pop_back();
  }
  void declare(const std::string& name, VarInfo v) {
    if (scopes_.empty()) push_scope();
    scopes_.back()[name] = std::move(v);
  }
  const VarInfo* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &f->second;
    }
    return nullptr;
  }
  const TypeFacts* field_type(const std::string& name) const {
    std::string cls = cur_class_;
    for (int hops = 0; !cls.empty() && hops < 8; ++hops) {
      auto it = classes_.find(cls);
      if (it == classes_.end()) return nullptr;
      for (const auto& f : it->second.fields)
        if (f.first == name) return &f.second;
      std::string next;
      for (const auto& b : it->second.bases)
        if (classes_.count(b)) next = b;
      cls = next;
    }
    return nullptr;
  }
  // The declared type of a lowered target (`x`, `self.x`), when the file shows it.
  const TypeFacts* declared(Id target) const {
    const ll::Expr& e = b_.m.exprs[target];
    if (e.kind == ExprKind::Name && e.qname.empty()) {
      const VarInfo* vi = lookup(e.text);
      return vi ? &vi->type : nullptr;
    }
    if (e.kind == ExprKind::Attribute && !e.kids.empty()) {
      const ll::Expr& o = b_.m.exprs[e.kids[0]];
      if (o.kind == ExprKind::Name && o.text == "self" && !lookup(e.text)) return field_type(e.text);
    }
    return nullptr;
  }

  // `number(v)`: a value converted to a declared arithmetic type. Literals stay as they are.
  Id as_number(const char* num, Id v) {
    if (v == kNone || !num) return v;
    const ll::Expr& e = b_.m.exprs[v];
    if (e.kind == ExprKind::Literal) return v;
    if (e.kind == ExprKind::Call && b_.m.exprs[e.kids[0]].kind == ExprKind::Name &&
        b_.m.exprs[e.kids[0]].qname.empty() && b_.m.exprs[e.kids[0]].text == num)
      return v;
    Range r = e.range;
    return b_.call(b_.name(num, r), {v}, r);
  }

  // ------------------------------------------------------------------ declarations
  void flush(std::vector<Id>& out, size_t mark) {
    for (size_t i = mark; i < hoisted_.size(); ++i) out.push_back(hoisted_[i]);
    hoisted_.resize(mark);
  }

  // Declarations at namespace scope (the translation unit, namespace and linkage bodies).
  void decls(TSNode parent, std::vector<Id>& out, const std::string& cls) {
    for (uint32_t i = 0; i < named_count(parent); ++i) decl(named(parent, i), out, cls);
  }

  void decl(TSNode n, std::vector<Id>& out, const std::string& cls) {
    Depth dg(depth_);
    if (depth_ > kMaxDepth) { too_deep(rng(n)); return; }
    std::string_view k = kind(n);
    if (k == "namespace_definition" || k == "linkage_specification") {
      TSNode body = field(n, "body");
      if (is(body, "declaration_list")) decls(body, out, cls);
      else if (!ts_node_is_null(body)) decl(body, out, cls);
      return;
    }
    if (k == "declaration_list" || k == "ERROR" || k == "translation_unit") {
      decls(n, out, cls);
      return;
    }
    if (k == "preproc_if" || k == "preproc_ifdef" || k == "preproc_elif" || k == "preproc_else" ||
        k == "preproc_elifdef") {
      // The first branch only, as the compiler would most likely see it.
      TSNode alt = field(n, "alternative");
      TSNode cond = field(n, "condition");
      TSNode nm = field(n, "name");
      for (uint32_t i = 0; i < named_count(n); ++i) {
        TSNode c = named(n, i);
        if (ts_node_eq(c, alt) || ts_node_eq(c, cond) || ts_node_eq(c, nm)) continue;
        decl(c, out, cls);
      }
      return;
    }
    if (k == "template_declaration") {
      for (uint32_t i = 0; i < named_count(n); ++i) {
        TSNode c = named(n, i);
        if (!is(c, "template_parameter_list")) decl(c, out, cls);
      }
      return;
    }
    if (k == "using_declaration" || k == "alias_declaration" || k == "namespace_alias_definition" ||
        k == "type_definition") {
      using_like(n);
      return;
    }
    if (k == "function_definition") {
      function_def(n, out, cls);
      return;
    }
    if (k == "struct_specifier" || k == "class_specifier") {
      if (!ts_node_is_null(field(n, "body"))) class_def(n, out);
      return;
    }
    if (k == "declaration" || k == "field_declaration") {
      TSNode t = field(n, "type");
      if ((is(t, "struct_specifier") || is(t, "class_specifier")) && !ts_node_is_null(field(t, "body")))
        class_def(t, out);
      if (!cls.empty() && k == "field_declaration") {
        field_decl(n, cls);
        return;
      }
      // Variables at namespace scope (or function declarations, which lower to nothing).
      size_t mark = hoisted_.size();
      std::vector<Id> made;
      declaration(n, made);
      flush(out, mark);
      for (Id s : made) out.push_back(s);
      return;
    }
    if (k == "expression_statement") {
      // TORCH_MODULE(Net);
      TSNode c = named_count(n) ? named(n, 0) : TSNode{};
      if (is(c, "call_expression") && text(field(c, "function")) == "TORCH_MODULE") {
        TSNode args = field(c, "arguments");
        if (named_count(args) >= 1) holder_class(str(named(args, 0)), rng(n), out);
        return;
      }
      size_t mark = hoisted_.size();
      std::vector<Id> made;
      statement(n, made, out);
      flush(out, mark);
      for (Id s : made) out.push_back(s);
      return;
    }
    // Other top-level statements (ERROR recovery can place them here).
    if (k == "compound_statement" || k == "if_statement" || k == "for_statement" || k == "for_range_loop" ||
        k == "while_statement" || k == "do_statement" || k == "return_statement" || k == "try_statement") {
      size_t mark = hoisted_.size();
      std::vector<Id> made;
      statement(n, made, out);
      flush(out, mark);
      for (Id s : made) out.push_back(s);
    }
  }

  Id base_expr(const std::string& spelled, const Range& r) {
    std::string res = resolve(split_qualified(spelled));
    if (classes_.count(res)) return b_.name(res, r);
    if (res == "torch::nn::Cloneable" || res == "torch::nn::ModuleHolder" || class_kind(res) == ValueKind::Module)
      return b_.model_name("torch.nn.Module", r);
    if (class_kind(res) == ValueKind::Optimizer) return b_.model_name("torch.optim.Optimizer", r);
    return b_.qualified(res, r);
  }

  Id ensure_class(const std::string& name, const Range& r, std::vector<Id>& out) {
    ClassInfo& ci = classes_[name];
    if (ci.id != kNone) return ci.id;
    // A class defined elsewhere (a header) whose methods this file defines.
    Class c;
    c.name = name;
    c.range = r;
    Id id = b_.add_class(std::move(c));
    classes_[name].id = id;
    Id st = b_.stmt(StmtKind::ClassDef, r);
    b_.s(st).cls = id;
    b_.m.classes[id].stmt = st;
    out.push_back(st);
    return id;
  }

  void holder_class(const std::string& name, const Range& r, std::vector<Id>& out) {
    ClassInfo& ci = classes_[name];
    if (ci.holder_impl.empty()) ci.holder_impl = name + "Impl";
    Class c;
    c.name = name;
    c.range = r;
    c.bases.push_back(b_.name(ci.holder_impl, r));
    Id id = b_.add_class(std::move(c));
    classes_[name].id = id;
    Id st = b_.stmt(StmtKind::ClassDef, r);
    b_.s(st).cls = id;
    b_.m.classes[id].stmt = st;
    out.push_back(st);
  }

  void class_def(TSNode n, std::vector<Id>& out) {
    std::vector<std::string> np;
    name_parts(field(n, "name"), np, nullptr);
    std::string name = np.empty() ? "<anonymous>" : np.back();
    Range r = rng(n);
    ClassInfo& ci0 = classes_[name];
    if (ci0.bases.empty()) ci0.bases = base_names(n);
    Class c;
    c.name = name;
    c.range = r;
    for (uint32_t i = 0; i < named_count(n); ++i) {
      TSNode bc = named(n, i);
      if (!is(bc, "base_class_clause")) continue;
      for (uint32_t j = 0; j < named_count(bc); ++j) {
        TSNode b = named(bc, j);
        if (is(b, "access_specifier") || is(b, "virtual")) continue;
        std::vector<std::string> parts;
        name_parts(b, parts, nullptr);
        if (!parts.empty()) c.bases.push_back(base_expr(join_qualified(parts, "::"), rng(b)));
      }
    }
    Id id = b_.add_class(std::move(c));
    classes_[name].id = id;
    Id st = b_.stmt(StmtKind::ClassDef, r);
    b_.s(st).cls = id;
    b_.m.classes[id].stmt = st;
    out.push_back(st);

    std::string saved_class = cur_class_;
    cur_class_ = name;
    std::vector<Id> body;
    // Members: fields first, method bodies after, as C++ reads them.
    TSNode list = field(n, "body");
    std::vector<TSNode> methods;
    std::vector<TSNode> work;
    for (uint32_t i = 0; i < named_count(list); ++i) work.push_back(named(list, i));
    for (size_t i = 0; i < work.size() && i < 100000; ++i) {
      TSNode m = work[i];
      std::string_view k = kind(m);
      if (k == "function_definition") methods.push_back(m);
      else if (k == "template_declaration" || k == "preproc_if" || k == "preproc_ifdef" ||
               k == "access_specifier_block" || k == "ERROR") {
        TSNode alt = field(m, "alternative");
        for (uint32_t j = 0; j < named_count(m); ++j)
          if (!ts_node_eq(named(m, j), alt)) work.push_back(named(m, j));
      } else if (k == "field_declaration") {
        TSNode t = field(m, "type");
        if ((is(t, "struct_specifier") || is(t, "class_specifier")) && !ts_node_is_null(field(t, "body")))
          class_def(t, body);
        field_decl(m, name);
      } else if (k == "declaration") {
        // A constructor declared here and defined out of line.
        TSNode d = innermost_declarator(field(m, "declarator"));
        if (is(d, "function_declarator") && text(field(d, "declarator")) == name) {}
      } else if (k == "struct_specifier" || k == "class_specifier") {
        if (!ts_node_is_null(field(m, "body"))) class_def(m, body);
      } else if (k == "alias_declaration" || k == "type_definition" || k == "using_declaration") {
        using_like(m);
      }
    }
    for (TSNode m : methods) function_def(m, body, name);
    if (!classes_[name].has_ctor && !classes_[name].fields.empty()) {
      // Fields whose type says what they hold: a synthetic __init__ so `self.x` bindings exist.
      Id fst = kNone;
      Id fid = b_.synthetic_init(id, r, &fst);
      Id saved_func = cur_func_;
      cur_func_ = fid;
      size_t mark = hoisted_.size();
      std::vector<Id> fb = field_prologue(name, r);
      std::vector<Id> lifted;
      flush(lifted, mark);
      fb.insert(fb.begin(), lifted.begin(), lifted.end());
      cur_func_ = saved_func;
      b_.m.funcs[fid].body = std::move(fb);
      body.push_back(fst);
    }
    cur_class_ = saved_class;
    b_.s(st).body = std::move(body);
  }

  void field_decl(TSNode n, const std::string& cls) {
    TypeFacts tf = type_facts(field(n, "type"));
    TSNode dflt = field(n, "default_value");
    for (TSNode d : fields(n, "declarator")) {
      bool indirect = false;
      TSNode id = unwrap(d, &indirect);
      if (is(id, "function_declarator")) {
        // A method declaration (`Net();`, `torch::Tensor forward(torch::Tensor x);`).
        std::vector<std::string> parts;
        name_parts(field(id, "declarator"), parts, nullptr);
        continue;
      }
      if (!is(id, "field_identifier") && !is(id, "identifier")) continue;
      TypeFacts ft = tf;
      ft.indirect = indirect;
      std::string name = str(id);
      ClassInfo& ci = classes_[cls];
      ci.fields.emplace_back(name, ft);
      if (!ts_node_is_null(dflt)) ci.field_inits.emplace_back(name, dflt);
    }
  }

  std::vector<Id> field_prologue(const std::string& cls, const Range& fallback) {
    std::vector<Id> out;
    auto it = classes_.find(cls);
    if (it == classes_.end()) return out;
    auto fields_copy = it->second.fields;
    auto inits_copy = it->second.field_inits;
    for (const auto& [fname, tf] : fields_copy) {
      if (interesting(tf.kind)) {
        Id target = b_.attr(b_.name("self", fallback), fname, fallback);
        out.push_back(b_.typed_binding(target, tf.qname, tf.local_class, fallback));
      } else if (tf.other && !tf.is_auto) {
        Id target = b_.attr(b_.name("self", fallback), fname, fallback);
        out.push_back(b_.typed_binding(target, model_qname(tf.resolved), "", fallback));
      }
    }
    for (const auto& [fname, init] : inits_copy) {
      TypeFacts tf;
      for (const auto& f : fields_copy)
        if (f.first == fname) tf = f.second;
      Range r = rng(init);
      Id v = initializer_value(tf, init, r);
      if (v == kNone) continue;
      Id st = b_.stmt(StmtKind::Assign, r);
      b_.s(st).targets.push_back(b_.attr(b_.name("self", r), fname, r));
      b_.s(st).value = as_number(tf.number, v);
      out.push_back(st);
    }
    return out;
  }

  // The value of `= v`, `(args)`, `{args}` for a declaration of type `tf` (kNone: none).
  Id initializer_value(const TypeFacts& tf, TSNode init, const Range& r) {
    if (ts_node_is_null(init)) {
      // Default construction.
      if (tf.builtin || tf.is_auto || tf.indirect) return kNone;
      if (tf.kind == ValueKind::Tensor || tf.smart || tf.kind == ValueKind::SmartPtr)
        return b_.literal(LitKind::None, "None", r);
      if (tf.kind == ValueKind::Container) return b_.expr(ExprKind::Sequence, r, "list");
      if (tf.resolved.empty()) return kNone;
      return b_.call(type_callee(tf, r), {}, r);
    }
    std::string_view k = kind(init);
    if (k == "argument_list" || k == "initializer_list") return braced(tf, args_of(init), k == "initializer_list", r);
    return expr(init);
  }

  Id type_callee(const TypeFacts& tf, const Range& r) {
    if (!tf.local_class.empty()) return b_.name(tf.local_class, r);
    if (!tf.qname.empty()) return b_.model_name(tf.qname, r);
    return b_.qualified(tf.resolved.empty() ? "object" : tf.resolved, r);
  }

  // `(args)` / `{args}` after a declarator or a type name: a construction.
  Id braced(const TypeFacts& tf, std::vector<Id> args, bool brace, const Range& r) {
    if (tf.kind == ValueKind::Container) {
      if (tf.elem_number)
        for (Id& a : args) a = as_number(tf.elem_number, a);
      return b_.expr(ExprKind::Sequence, r, "list", brace ? args : std::vector<Id>{});
    }
    bool null = args.size() == 1 && b_.e(args[0]).kind == ExprKind::Literal && b_.e(args[0]).lit == LitKind::None;
    if ((tf.kind == ValueKind::Tensor || tf.smart || tf.kind == ValueKind::SmartPtr) && args.empty())
      return b_.literal(LitKind::None, "None", r);
    if ((tf.holder || tf.smart || tf.kind == ValueKind::Tensor) && null) return b_.literal(LitKind::None, "None", r);
    if (tf.number) return args.size() == 1 ? as_number(tf.number, args[0]) : b_.literal(LitKind::Int, "0", r);
    if (tf.builtin || tf.is_auto) return args.size() == 1 ? args[0] : b_.expr(ExprKind::Sequence, r, "list", args);
    if (tf.resolved.empty()) return args.size() == 1 ? args[0] : b_.expr(ExprKind::Other, r, "", args);
    return b_.call(type_callee(tf, r), args, r);
  }

  std::vector<Id> args_of(TSNode list) {
    std::vector<Id> out;
    for (uint32_t i = 0; i < named_count(list); ++i) {
      TSNode a = named(list, i);
      if (is(a, "comment")) continue;
      out.push_back(expr(a));
    }
    return out;
  }

  // What a lowered value is, for `auto x = <value>`.
  TypeFacts facts_of_value(Id v) const {
    TypeFacts f = facts_of_value_inner(v);
    if (smart_values_.count(v)) {
      f.smart = true;
      if (f.kind == ValueKind::None) f.kind = ValueKind::SmartPtr;
    }
    return f;
  }
  TypeFacts facts_of_value_inner(Id v) const {
    TypeFacts f;
    if (v == kNone) return f;
    const ll::Expr& e = b_.m.exprs[v];
    if (e.kind == ExprKind::Literal && (e.lit == LitKind::Int || e.lit == LitKind::Float)) {
      f.builtin = true;
      f.number = e.lit == LitKind::Int ? "int" : "float";
      return f;
    }
    if (e.kind == ExprKind::Sequence && e.text == "list") { f.kind = ValueKind::Container; return f; }
    if (e.kind != ExprKind::Call) return f;
    const ll::Expr& callee = b_.m.exprs[e.kids[0]];
    if (callee.kind == ExprKind::Name && callee.qname.empty() && (callee.text == "float" || callee.text == "int") &&
        e.kids.size() == 2) {
      f.builtin = true;
      f.number = callee.text == "float" ? "float" : "int";
      return f;
    }
    if (callee.kind == ExprKind::Attribute && callee.text == "item") {
      f.builtin = true;
      f.number = "float";
      return f;
    }
    if (callee.kind == ExprKind::Name && callee.qname.empty() && classes_.count(callee.text))
      return facts_of_name(callee.text);
    if (callee.qname == "torch.jit.load") { f.kind = ValueKind::Module; f.qname = "torch.nn.Module"; return f; }
    if (callee.kind == ExprKind::Attribute && callee.text == "get_method") { f.kind = ValueKind::JitMethod; return f; }
    if (!callee.qname.empty()) {
      static const std::pair<const char*, ValueKind> prefixes[] = {
          {"torch.optim.lr_scheduler.", ValueKind::Scheduler}, {"torch.optim.", ValueKind::Optimizer},
          {"torch.nn.", ValueKind::Module}};
      for (auto [p, k] : prefixes)
        if (callee.qname.rfind(p, 0) == 0 && !callee.text.empty() &&
            std::isupper(static_cast<unsigned char>(callee.text[0]))) {
          f.kind = k;
          f.qname = callee.qname;
          return f;
        }
      if (callee.qname == "torch.Tensor") f.kind = ValueKind::Tensor;
    }
    return f;
  }

  // A declaration in a block or at namespace scope: its variables (functions declared
  // here lower to nothing).
  void declaration(TSNode n, std::vector<Id>& out) {
    TypeFacts tf = type_facts(field(n, "type"));
    std::vector<TSNode> ds = fields(n, "declarator");
    bool first = true;
    for (TSNode d : ds) {
      Range r = first ? rng(n) : rng(d);
      if (ds.size() == 1) r = rng(n);
      first = false;
      var_declarator(d, tf, r, out);
    }
  }

  void var_declarator(TSNode d, const TypeFacts& tf0, const Range& r, std::vector<Id>& out) {
    TSNode init{};
    TSNode decl = d;
    if (is(d, "init_declarator")) {
      decl = field(d, "declarator");
      init = field(d, "value");
    }
    bool indirect = false;
    TSNode id = unwrap(decl, &indirect);
    TypeFacts tf = tf0;
    tf.indirect = indirect;
    std::vector<std::string> names;
    if (is(id, "function_declarator")) {
      // `torch::optim::SGD opt(params, lr);` read as a function declaration (the most vexing
      // parse): a variable when the type is a class and every "parameter" is a bare name.
      TSNode params = field(id, "parameters");
      TSNode nm = field(id, "declarator");
      if (!is(nm, "identifier") || tf.builtin || tf.resolved.empty() || named_count(params) == 0) return;
      std::vector<Id> args;
      for (uint32_t i = 0; i < named_count(params); ++i) {
        TSNode p = named(params, i);
        if (!is(p, "parameter_declaration") || !ts_node_is_null(field(p, "declarator"))) return;
        TSNode t = field(p, "type");
        if (!is(t, "type_identifier") && !is(t, "qualified_identifier")) return;
        std::vector<std::string> parts;
        name_parts(t, parts, nullptr);
        if (parts.size() == 1 && lookup(parts[0])) args.push_back(b_.name(parts[0], rng(t)));
        else args.push_back(expr_name(t));
      }
      names.push_back(str(nm));
      bind(names, tf, braced(tf, args, false, r), r, out, id);
      return;
    }
    if (is(id, "structured_binding_declarator")) {
      for (uint32_t i = 0; i < named_count(id); ++i)
        if (is(named(id, i), "identifier")) names.push_back(str(named(id, i)));
    } else if (is(id, "identifier") || is(id, "field_identifier")) {
      names.push_back(str(id));
    } else {
      return;  // a qualified name (`int Net::count = 0;`) or something unreadable
    }
    Id value;
    if (!ts_node_is_null(init) && is(init, "lambda_expression") && names.size() == 1) value = lambda(init, names[0]);
    else value = initializer_value(tf, init, r);
    bind(names, tf, value, r, out, id);
  }

  void bind(const std::vector<std::string>& names, const TypeFacts& tf, Id value, const Range& r,
            std::vector<Id>& out, TSNode id) {
    TypeFacts vt = tf;
    if (tf.is_auto && value != kNone) {
      vt = facts_of_value(value);
      vt.indirect = tf.indirect;
    }
    auto target = [&]() -> Id {
      if (names.size() == 1) return b_.name(names[0], rng(id));
      std::vector<Id> kids;
      for (const auto& n : names) kids.push_back(b_.name(n, rng(id)));
      return b_.expr(ExprKind::Sequence, rng(id), "tuple", kids);
    };
    bool direct = false;
    if (value != kNone && b_.e(value).kind == ExprKind::Call) {
      const ll::Expr& callee = b_.e(b_.e(value).kids[0]);
      direct = (!vt.local_class.empty() && callee.text == vt.local_class && callee.qname.empty()) ||
               (!vt.qname.empty() && callee.qname == vt.qname);
    }
    if (interesting(vt.kind) && !direct && names.size() == 1)
      out.push_back(b_.typed_binding(target(), vt.qname, vt.local_class, r));
    for (const auto& n : names) {
      VarInfo vi;
      vi.type = names.size() == 1 ? vt : TypeFacts{};
      vi.init = value;
      declare(n, vi);
    }
    if (value == kNone) return;
    if (names.size() == 1) value = as_number(vt.number, value);
    Id st = b_.stmt(StmtKind::Assign, r);
    b_.s(st).targets.push_back(target());
    b_.s(st).value = value;
    out.push_back(st);
  }

  struct Param {
    std::string name;
    TypeFacts type;
    Range range;
  };

  std::vector<Param> params_of(TSNode list) {
    std::vector<Param> out;
    int unnamed = 0;
    uint32_t n = named_count(list);
    for (uint32_t i = 0; i < n; ++i) {
      TSNode p = named(list, i);
      std::string_view k = kind(p);
      if (k != "parameter_declaration" && k != "optional_parameter_declaration" &&
          k != "variadic_parameter_declaration")
        continue;
      TypeFacts tf = type_facts(field(p, "type"));
      bool indirect = false;
      TSNode id = unwrap(field(p, "declarator"), &indirect);
      tf.indirect = indirect;
      std::string name;
      if (is(id, "identifier")) name = str(id);
      if (name.empty()) {
        // `f(void)` has no parameter.
        if (n == 1 && tf.is_void && !indirect) continue;
        name = "_arg" + std::to_string(unnamed++);
      }
      out.push_back({name, tf, rng(p)});
    }
    return out;
  }

  void function_def(TSNode n, std::vector<Id>& out, const std::string& cls) {
    TSNode body = field(n, "body");
    if (ts_node_is_null(body)) return;  // = default / = delete / a declaration
    TSNode fdecl = innermost_declarator(field(n, "declarator"));
    if (!is(fdecl, "function_declarator")) {
      // An unreadable header (a macro in front, say): the body is still worth reading.
      fdecl = TSNode{};
    }
    std::vector<std::string> name;
    name_parts(ts_node_is_null(fdecl) ? TSNode{} : field(fdecl, "declarator"), name, nullptr);
    if (name.empty()) name.push_back("<function:" + std::to_string(rng(n).line) + ">");
    if (!name.empty() && name[0].empty()) name.erase(name.begin());
    std::string owner = cls;
    // `R Cls::method(...)`: a method, of a class this file defines or one from a header.
    if (name.size() >= 2 && (classes_.count(name[name.size() - 2]) || !namespaces_.count(name[name.size() - 2])))
      owner = name[name.size() - 2];
    std::string fname = name.back();
    bool is_ctor = !owner.empty() && fname == owner;
    if (!fname.empty() && fname[0] == '~') fname = "__del__";
    else if (is_ctor) fname = "__init__";
    else if (fname == "operator()") fname = "__call__";
    Range r = rng(n);
    Function f;
    f.name = fname;
    f.range = r;
    f.header = b_.range(r.begin, std::max(r.begin, rng(body).begin));
    Id cls_id = kNone;
    if (!owner.empty()) {
      cls_id = ensure_class(owner, r, out);
      if (is_ctor) classes_[owner].has_ctor = true;
    }
    f.cls = cls_id;
    if (cls_id != kNone) f.params.push_back("self");
    std::vector<Param> params = params_of(ts_node_is_null(fdecl) ? TSNode{} : field(fdecl, "parameters"));
    for (const auto& p : params) f.params.push_back(p.name);
    if (is(body, "compound_statement") && named_count(body) > 0) f.body_indent = rng(named(body, 0)).col - 1;
    Id fid = b_.add_function(std::move(f));
    Id st = b_.stmt(StmtKind::FunctionDef, r);
    b_.s(st).func = fid;
    b_.m.funcs[fid].stmt = st;
    if (cls_id != kNone) b_.m.classes[cls_id].methods.push_back(fid);
    out.push_back(st);

    // The body.
    Id saved_func = cur_func_;
    std::string saved_class = cur_class_;
    auto saved_scopes = std::move(scopes_);
    scopes_.clear();
    cur_func_ = fid;
    cur_class_ = owner;
    push_scope();
    size_t fmark = hoisted_.size();
    std::vector<Id> lowered;
    for (const auto& p : params) {
      VarInfo vi;
      vi.type = p.type;
      declare(p.name, vi);
      if (interesting(p.type.kind))
        lowered.push_back(b_.typed_binding(b_.name(p.name, p.range), p.type.qname, p.type.local_class, p.range));
      else if (p.type.other)
        lowered.push_back(b_.typed_binding(b_.name(p.name, p.range), model_qname(p.type.resolved), "", p.range));
    }
    if (is_ctor) {
      for (Id s : field_prologue(owner, r)) lowered.push_back(s);
      for (uint32_t i = 0; i < named_count(n); ++i)
        if (is(named(n, i), "field_initializer_list")) mem_initializers(named(n, i), lowered);
    }
    if (is(body, "compound_statement")) block(body, lowered, rng(body).end);
    else if (is(body, "try_statement")) {
      std::vector<Id> made;
      statement(body, made, lowered);
      for (Id s : made) lowered.push_back(s);
    }
    if (hoisted_.size() > fmark) {
      lowered.insert(lowered.begin(), hoisted_.begin() + static_cast<long>(fmark), hoisted_.end());
      hoisted_.resize(fmark);
    }
    scopes_ = std::move(saved_scopes);
    cur_func_ = saved_func;
    cur_class_ = saved_class;
    b_.m.funcs[fid].body = std::move(lowered);
  }

  void mem_initializers(TSNode list, std::vector<Id>& out) {
    for (uint32_t i = 0; i < named_count(list); ++i) {
      TSNode fi = named(list, i);
      if (!is(fi, "field_initializer")) continue;
      TSNode who{}, args{};
      for (uint32_t j = 0; j < named_count(fi); ++j) {
        TSNode c = named(fi, j);
        if (is(c, "argument_list") || is(c, "initializer_list")) args = c;
        else if (ts_node_is_null(who)) who = c;
      }
      std::vector<std::string> parts;
      name_parts(who, parts, nullptr);
      if (parts.empty() || ts_node_is_null(args)) continue;
      const TypeFacts* tf = field_type(parts.back());
      if (!tf || parts.size() != 1) continue;  // a base class initialiser
      TypeFacts t = *tf;
      size_t mark = hoisted_.size();
      Range r = rng(fi);
      std::vector<Id> a = args_of(args);
      Id v = braced(t, a, is(args, "initializer_list"), r);
      if (v == kNone) continue;
      Id st = b_.stmt(StmtKind::Assign, r);
      b_.s(st).targets.push_back(b_.attr(b_.name("self", r), parts.back(), r));
      b_.s(st).value = v;
      flush(out, mark);
      out.push_back(st);
    }
  }

  // ------------------------------------------------------------------ statements
  // The statements of a compound statement; an RAII guard makes the rest of the block its body.
  void block(TSNode compound, std::vector<Id>& out, uint32_t scope_end) {
    std::vector<TSNode> items;
    collect_statements(compound, items, 0);
    block_items(items, 0, out, scope_end);
  }

  // Statement children, with preprocessor conditionals' first branch and ERROR nodes opened.
  void collect_statements(TSNode parent, std::vector<TSNode>& items, int depth) {
    if (depth > 32) return;
    for (uint32_t i = 0; i < named_count(parent); ++i) {
      TSNode c = named(parent, i);
      std::string_view k = kind(c);
      if (k == "comment") continue;
      if (k == "preproc_if" || k == "preproc_ifdef" || k == "preproc_else" || k == "preproc_elif") {
        TSNode alt = field(c, "alternative"), cond = field(c, "condition"), nm = field(c, "name");
        std::vector<TSNode> sub;
        for (uint32_t j = 0; j < named_count(c); ++j) {
          TSNode g = named(c, j);
          if (ts_node_eq(g, alt) || ts_node_eq(g, cond) || ts_node_eq(g, nm)) continue;
          items.push_back(g);
        }
        continue;
      }
      if (k == "ERROR") {
        collect_statements(c, items, depth + 1);
        continue;
      }
      items.push_back(c);
    }
  }

  // A grad guard declaration: its type, variable and constructor argument. `flag` is the
  // argument of `c10::AutoGradMode guard(training_);`, which the grammar reads as the
  // declaration of a function `guard` taking a `training_` (a guard type is never a function's
  // result declared in a block): the name it passes.
  bool guard_decl(TSNode n, TypeFacts& tf, std::string& var, TSNode& arg, TSNode& flag) {
    if (!is(n, "declaration")) return false;
    tf = type_facts(field(n, "type"));
    if (tf.guard == GuardKind::None) return false;
    std::vector<TSNode> ds = fields(n, "declarator");
    if (ds.size() != 1) return false;
    TSNode d = ds[0];
    TSNode init{};
    flag = TSNode{};
    if (is(d, "init_declarator")) {
      init = field(d, "value");
      d = field(d, "declarator");
    } else if (is(d, "function_declarator")) {
      TSNode params = field(d, "parameters");
      if (named_count(params) != 1) return false;
      TSNode p = named(params, 0);
      if (!is(p, "parameter_declaration") || !ts_node_is_null(field(p, "declarator"))) return false;
      flag = field(p, "type");
      if (!is(flag, "type_identifier")) return false;
      d = field(d, "declarator");
    }
    if (!is(d, "identifier")) return false;  // pointers/references guard nothing
    var = str(d);
    arg = TSNode{};
    if (is(init, "argument_list") || is(init, "initializer_list")) {
      if (named_count(init) > 0) arg = named(init, 0);
    }
    return true;
  }

  void block_items(const std::vector<TSNode>& items, size_t from, std::vector<Id>& out, uint32_t scope_end) {
    for (size_t i = from; i < items.size(); ++i) {
      TSNode n = items[i];
      Depth dg(depth_);
      if (depth_ > kMaxDepth) {
        too_deep(rng(n));
        return;
      }
      TypeFacts tf;
      std::string var;
      TSNode argn{}, flag{};
      if (guard_decl(n, tf, var, argn, flag)) {
        size_t mark = hoisted_.size();
        Id arg = !ts_node_is_null(flag) ? b_.name(str(flag), rng(flag)) : ts_node_is_null(argn) ? kNone : expr(argn);
        flush(out, mark);
        std::vector<Id> rest;
        block_items(items, i + 1, rest, scope_end);
        out.push_back(b_.guard(tf.guard, split_qualified(tf.resolved).back(), arg, var, rng(n), scope_end,
                               std::move(rest)));
        return;
      }
      size_t mark = hoisted_.size();
      std::vector<Id> made;
      statement(n, made, out);
      flush(out, mark);
      for (Id s : made) out.push_back(s);
    }
  }

  std::vector<Id> sub_statement(TSNode n) {
    std::vector<Id> out;
    if (ts_node_is_null(n)) return out;
    push_scope();
    if (is(n, "compound_statement")) {
      block(n, out, rng(n).end);
    } else {
      size_t mark = hoisted_.size();
      std::vector<Id> made;
      statement(n, made, out);
      flush(out, mark);
      for (Id s : made) out.push_back(s);
    }
    pop_scope();
    return out;
  }

  // `( [init;] cond )` of if/while/switch: statements to run before, and the condition.
  Id condition(TSNode c, std::vector<Id>& pre) {
    if (ts_node_is_null(c)) return b_.expr(ExprKind::Other, rng(c));
    if (is(c, "condition_clause")) {
      TSNode init = field(c, "initializer");
      if (!ts_node_is_null(init)) {
        std::vector<Id> made;
        statement(init, made, pre);
        for (Id s : made) pre.push_back(s);
      }
      TSNode v = field(c, "value");
      if (ts_node_is_null(v)) return b_.expr(ExprKind::Other, rng(c));
      if (is(v, "declaration")) {
        std::vector<Id> made;
        declaration(v, made);
        for (Id s : made) pre.push_back(s);
        std::vector<TSNode> ds = fields(v, "declarator");
        TSNode id = ds.empty() ? TSNode{} : unwrap(is(ds[0], "init_declarator") ? field(ds[0], "declarator") : ds[0], nullptr);
        if (is(id, "identifier")) return b_.name(str(id), rng(v));
        return b_.expr(ExprKind::Other, rng(v));
      }
      return expr(v);
    }
    if (is(c, "parenthesized_expression") && named_count(c) > 0) return expr(named(c, 0));
    return expr(c);
  }

  void statement(TSNode n, std::vector<Id>& made, std::vector<Id>& out) {
    Depth dg(depth_);
    if (depth_ > kMaxDepth) {
      too_deep(rng(n));
      return;
    }
    std::string_view k = kind(n);
    Range r = rng(n);
    if (k == "compound_statement") {
      Id st = b_.stmt(StmtKind::Other, r);
      std::vector<Id> body = sub_statement(n);
      b_.s(st).body = std::move(body);
      b_.s(st).text = "block";
      made.push_back(st);
      return;
    }
    if (k == "expression_statement") {
      if (named_count(n) == 0) return;
      expression_statement(named(n, 0), r, made);
      return;
    }
    if (k == "declaration") {
      TSNode t = field(n, "type");
      if ((is(t, "struct_specifier") || is(t, "class_specifier")) && !ts_node_is_null(field(t, "body")))
        class_def(t, made);
      declaration(n, made);
      return;
    }
    if (k == "if_statement") {
      push_scope();
      std::vector<Id> pre;
      Id cond = condition(field(n, "condition"), pre);
      for (Id x : pre) out.push_back(x);
      Id st = b_.stmt(StmtKind::If, r);
      b_.s(st).value = cond;
      std::vector<Id> body = sub_statement(field(n, "consequence"));
      std::vector<Id> orelse;
      TSNode alt = field(n, "alternative");
      if (is(alt, "else_clause")) alt = named_count(alt) ? named(alt, 0) : TSNode{};
      if (!ts_node_is_null(alt)) orelse = sub_statement(alt);
      pop_scope();
      b_.s(st).body = std::move(body);
      b_.s(st).orelse = std::move(orelse);
      made.push_back(st);
      return;
    }
    if (k == "for_range_loop") {
      push_scope();
      TSNode init = field(n, "initializer");
      if (!ts_node_is_null(init)) {
        std::vector<Id> m2;
        statement(init, m2, out);
        for (Id s : m2) out.push_back(s);
      }
      TypeFacts tf = type_facts(field(n, "type"));
      bool indirect = false;
      TSNode d = unwrap(field(n, "declarator"), &indirect);
      Id target;
      if (is(d, "structured_binding_declarator")) {
        std::vector<Id> kids;
        for (uint32_t i = 0; i < named_count(d); ++i)
          if (is(named(d, i), "identifier")) {
            kids.push_back(b_.name(str(named(d, i)), rng(named(d, i))));
            declare(str(named(d, i)), VarInfo{});
          }
        target = b_.expr(ExprKind::Sequence, rng(d), "tuple", kids);
      } else {
        std::string var = is(d, "identifier") ? str(d) : "_";
        target = b_.name(var, rng(d));
        VarInfo vi;
        vi.type = tf;
        vi.type.indirect = indirect;
        declare(var, vi);
      }
      TSNode right = field(n, "right");
      Id iter = ts_node_is_null(right) ? b_.expr(ExprKind::Other, r) : expr(right);
      Id st = b_.stmt(StmtKind::For, r);
      b_.s(st).value = iter;
      b_.s(st).targets.push_back(target);
      std::vector<Id> body = sub_statement(field(n, "body"));
      b_.s(st).body = std::move(body);
      made.push_back(st);
      pop_scope();
      return;
    }
    if (k == "for_statement") {
      push_scope();
      std::vector<Id> targets;
      TSNode init = field(n, "initializer");
      if (!ts_node_is_null(init)) {
        std::vector<Id> m2;
        if (is(init, "declaration")) declaration(init, m2);
        else expression_statement(init, rng(init), m2);
        for (Id s : m2) {
          out.push_back(s);
          const ll::Stmt& s2 = b_.m.stmts[s];
          if ((s2.kind == StmtKind::Assign || s2.kind == StmtKind::AnnAssign) && !s2.targets.empty())
            targets.push_back(b_.name(b_.m.exprs[s2.targets[0]].text, b_.m.exprs[s2.targets[0]].range));
        }
      }
      TSNode cond = field(n, "condition");
      Id c = ts_node_is_null(cond) ? b_.expr(ExprKind::Other, r) : expr(cond);
      Id inc_stmt = kNone;
      TSNode upd = field(n, "update");
      if (!ts_node_is_null(upd)) {
        Id inc = expr(upd);
        inc_stmt = b_.stmt(StmtKind::Expr, rng(upd));
        b_.s(inc_stmt).value = inc;
      }
      Id st = b_.stmt(StmtKind::For, r);
      b_.s(st).value = c;
      b_.s(st).targets = std::move(targets);
      std::vector<Id> body = sub_statement(field(n, "body"));
      if (inc_stmt != kNone) body.push_back(inc_stmt);
      b_.s(st).body = std::move(body);
      made.push_back(st);
      pop_scope();
      return;
    }
    if (k == "while_statement") {
      push_scope();
      std::vector<Id> pre;
      Id cond = condition(field(n, "condition"), pre);
      Id st = b_.stmt(StmtKind::While, r);
      b_.s(st).value = cond;
      std::vector<Id> body = pre;
      for (Id x : sub_statement(field(n, "body"))) body.push_back(x);
      pop_scope();
      b_.s(st).body = std::move(body);
      made.push_back(st);
      return;
    }
    if (k == "do_statement") {
      Id st = b_.stmt(StmtKind::While, r);
      std::vector<Id> body = sub_statement(field(n, "body"));
      std::vector<Id> pre;
      Id cond = condition(field(n, "condition"), pre);
      b_.s(st).value = cond;
      b_.s(st).body = std::move(body);
      b_.s(st).text = "do";
      made.push_back(st);
      return;
    }
    if (k == "switch_statement") {
      push_scope();
      std::vector<Id> pre;
      Id cond = condition(field(n, "condition"), pre);
      for (Id x : pre) out.push_back(x);
      Id st = b_.stmt(StmtKind::If, r);
      b_.s(st).value = cond;
      std::vector<Id> body = sub_statement(field(n, "body"));
      pop_scope();
      b_.s(st).body = std::move(body);
      b_.s(st).text = "switch";
      made.push_back(st);
      return;
    }
    if (k == "case_statement") {
      // `case X: stmts...`: the statements, in the switch's body.
      TSNode value = field(n, "value");
      std::vector<TSNode> items;
      for (uint32_t i = 0; i < named_count(n); ++i) {
        TSNode c = named(n, i);
        if (!ts_node_eq(c, value) && !is(c, "comment")) items.push_back(c);
      }
      block_items(items, 0, made, r.end);
      return;
    }
    if (k == "labeled_statement" || k == "attributed_statement") {
      for (uint32_t i = 0; i < named_count(n); ++i) {
        TSNode c = named(n, i);
        std::string_view ck = kind(c);
        if (ck == "statement_identifier" || ck == "attribute_declaration") continue;
        statement(c, made, out);
      }
      return;
    }
    if (k == "return_statement" || k == "co_return_statement") {
      Id v = kNone;
      for (uint32_t i = 0; i < named_count(n); ++i)
        if (!is(named(n, i), "comment")) { v = expr(named(n, i)); break; }
      Id st = b_.stmt(StmtKind::Return, r);
      b_.s(st).value = v;
      made.push_back(st);
      return;
    }
    if (k == "break_statement" || k == "continue_statement") {
      made.push_back(b_.stmt(k == "break_statement" ? StmtKind::Break : StmtKind::Continue, r));
      return;
    }
    if (k == "throw_statement") {
      Id v = named_count(n) ? expr(named(n, 0)) : kNone;
      Id st = b_.stmt(StmtKind::Raise, r);
      b_.s(st).value = v;
      made.push_back(st);
      return;
    }
    if (k == "try_statement") {
      Id st = b_.stmt(StmtKind::Try, r);
      std::vector<Id> body = sub_statement(field(n, "body"));
      std::vector<Handler> handlers;
      for (uint32_t i = 0; i < named_count(n); ++i) {
        TSNode c = named(n, i);
        if (!is(c, "catch_clause")) continue;
        Handler h;
        h.range = rng(c);
        push_scope();
        TSNode params = field(c, "parameters");
        for (uint32_t j = 0; j < named_count(params); ++j) {
          TSNode p = named(params, j);
          if (!is(p, "parameter_declaration")) continue;
          TypeFacts tf = type_facts(field(p, "type"));
          h.type = b_.qualified(tf.resolved.empty() ? "exception" : tf.resolved, rng(p));
          TSNode id = unwrap(field(p, "declarator"), nullptr);
          if (is(id, "identifier")) {
            h.name = str(id);
            declare(h.name, VarInfo{});
          }
        }
        h.body = sub_statement(field(c, "body"));
        pop_scope();
        handlers.push_back(std::move(h));
      }
      b_.s(st).body = std::move(body);
      b_.s(st).handlers = std::move(handlers);
      made.push_back(st);
      return;
    }
    if (k == "using_declaration" || k == "alias_declaration" || k == "namespace_alias_definition" ||
        k == "type_definition") {
      using_like(n);
      return;
    }
    if (k == "struct_specifier" || k == "class_specifier") {
      if (!ts_node_is_null(field(n, "body"))) class_def(n, made);
      return;
    }
    if (k == "function_definition") {
      function_def(n, made, "");
      return;
    }
    if (k == "ERROR") {
      std::vector<TSNode> items;
      collect_statements(n, items, 0);
      block_items(items, 0, made, r.end);
      return;
    }
    if (k == "goto_statement" || k == "static_assert_declaration" || k == "comment" || k == "template_declaration" ||
        k == "enum_specifier")
      return;
    // An expression in statement position (error recovery).
    if (k.find("expression") != std::string_view::npos || k == "identifier") {
      expression_statement(n, r, made);
      return;
    }
  }

  // `std::tie(a, b)` / `std::forward_as_tuple(a, std::tie(b, c))` on the left of `=`: the
  // (nested) tuple of the names they bind.
  Id tie_target(Id lhs, int depth = 0) {
    const ll::Expr& le = b_.e(lhs);
    if (depth > 8 || le.kind != ExprKind::Call || le.kids.empty()) return lhs;
    const std::string& q = b_.e(le.kids[0]).qname;
    if (q != "std.tie" && q != "std.forward_as_tuple") return lhs;
    std::vector<Id> kids;
    for (size_t i = 1; i < b_.e(lhs).kids.size(); ++i) kids.push_back(tie_target(b_.e(lhs).kids[i], depth + 1));
    return b_.expr(ExprKind::Sequence, b_.e(lhs).range, "tuple", kids);
  }

  void expression_statement(TSNode x, const Range& r, std::vector<Id>& made) {
    std::string_view k = kind(x);
    if (k == "assignment_expression") {
      std::string op(text(field(x, "operator")));
      if (op.empty()) op = "=";
      Id lhs = expr(field(x, "left"));
      TSNode rn = field(x, "right");
      Id rhs = is(rn, "initializer_list") ? braced_rhs(lhs, rn) : expr(rn);
      if (op == "=") lhs = tie_target(lhs);
      if (const TypeFacts* t = declared(lhs)) rhs = as_number(t->number, rhs);
      Id st = b_.stmt(op == "=" ? StmtKind::Assign : StmtKind::AugAssign, r);
      b_.s(st).targets.push_back(lhs);
      b_.s(st).value = rhs;
      if (op != "=") b_.s(st).text = op;
      made.push_back(st);
      return;
    }
    if (k == "delete_expression") {
      Id st = b_.stmt(StmtKind::Delete, r);
      TSNode a = named_count(x) ? named(x, named_count(x) - 1) : TSNode{};
      b_.s(st).targets.push_back(expr(a));
      made.push_back(st);
      return;
    }
    if (k == "comma_expression") {
      expression_statement(field(x, "left"), rng(field(x, "left")), made);
      expression_statement(field(x, "right"), rng(field(x, "right")), made);
      return;
    }
    Id e = expr(x);
    const ll::Expr& ex = b_.e(e);
    // Releases: `p.reset()` on smart pointers and tensors, `v.clear()` on containers.
    if (ex.kind == ExprKind::Call && ex.kids.size() == 1) {
      const ll::Expr& callee = b_.e(ex.kids[0]);
      if (callee.kind == ExprKind::Attribute && (callee.text == "reset" || callee.text == "clear") &&
          !callee.kids.empty()) {
        const TypeFacts* t = declared(callee.kids[0]);
        bool arrow = b_.src.substr(b_.e(callee.kids[0]).range.end, 2) == "->";
        bool release = t && (callee.text == "reset"
                                 ? (t->smart || t->kind == ValueKind::Tensor || t->kind == ValueKind::SmartPtr) && !arrow
                                 : t->kind == ValueKind::Container);
        if (release) {
          Id st = b_.stmt(StmtKind::Delete, r);
          b_.s(st).targets.push_back(callee.kids[0]);
          made.push_back(st);
          return;
        }
      }
    }
    Id st = b_.stmt(StmtKind::Expr, r);
    b_.s(st).value = e;
    made.push_back(st);
  }

  // `x = {a, b}`: a construction of x's declared type.
  Id braced_rhs(Id lhs, TSNode list) {
    const TypeFacts* t = declared(lhs);
    std::vector<Id> args = args_of(list);
    if (t) return braced(*t, args, true, rng(list));
    return b_.expr(ExprKind::Sequence, rng(list), "list", args);
  }

  // ------------------------------------------------------------------ expressions
  Id expr(TSNode n) {
    if (ts_node_is_null(n)) return b_.expr(ExprKind::Other, b_.range(0, 0));
    Depth dg(depth_);
    if (depth_ > kMaxDepth) {
      too_deep(rng(n));
      return b_.expr(ExprKind::Other, rng(n));
    }
    return lower_expr(n);
  }

  Id literal_number(TSNode n) {
    std::string text = str(n);
    bool hex = text.size() > 1 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    bool flt = !hex && (text.find('.') != std::string::npos || text.find_first_of("eE") != std::string::npos);
    std::string clean;
    for (char c : text)
      if (c != '\'') clean.push_back(c);
    if (!flt)
      while (!clean.empty() && (clean.back() == 'u' || clean.back() == 'U' || clean.back() == 'l' || clean.back() == 'L'))
        clean.pop_back();
    return b_.literal(flt ? LitKind::Float : LitKind::Int, flt ? text : clean, rng(n));
  }

  std::string string_value(TSNode n) const {
    std::string_view k = kind(n);
    if (k == "concatenated_string") {
      std::string v;
      for (uint32_t i = 0; i < named_count(n); ++i) v += string_value(named(n, i));
      return v;
    }
    if (k == "raw_string_literal") {
      TSNode c = field(n, "delimiter");
      (void)c;
      for (uint32_t i = 0; i < named_count(n); ++i)
        if (is(named(n, i), "raw_string_content")) return str(named(n, i));
      return "";
    }
    std::string out;
    for (uint32_t i = 0; i < named_count(n); ++i) {
      TSNode c = named(n, i);
      if (is(c, "string_content")) out += text(c);
      else if (is(c, "escape_sequence")) {
        std::string_view e = text(c);
        char ch = e.size() > 1 ? e[1] : '\\';
        out.push_back(ch == 'n' ? '\n' : ch == 't' ? '\t' : ch);
      }
    }
    return out;
  }

  // A (qualified) name in an expression.
  Id expr_name(TSNode n) {
    Range r = rng(n);
    std::vector<std::string> parts;
    name_parts(n, parts, nullptr);
    if (parts.empty()) return b_.expr(ExprKind::Other, r);
    bool qualified = parts.size() > 1;
    const std::string& first = parts[0].empty() && parts.size() > 1 ? parts[1] : parts[0];
    if (!qualified) {
      if (lookup(first)) return b_.name(first, r);
      if (!cur_class_.empty() && field_type(first)) return b_.attr(b_.name("self", r), first, r);
      if (local_funcs_.count(first) && !classes_.count(first)) return b_.name(first, r);
    }
    std::string res = resolve(parts);
    if (is_cuda_device_constant(res) || is_cuda_device_constant(join_qualified(parts, "::")))
      return b_.literal(LitKind::String, "cuda", r);
    if (classes_.count(res)) return b_.name(res, r);
    // In a method of a class whose members this file cannot see (declared in a header), a
    // name that resolves to nothing known is a member: `self.<name>`.
    if (!qualified && !cur_class_.empty() && res == first && !known_library(res) && !is_macro_name(first) &&
        !namespaces_.count(first))
      return b_.attr(b_.name("self", r), first, r);
    return b_.name(parts.back(), r, model_qname(res));
  }

  bool is_type_name(const std::string& res, const std::string& last) const {
    TypeFacts tf = facts_of_name(res);
    return classes_.count(res) != 0 || tf.kind != ValueKind::None || tf.guard != GuardKind::None ||
           (!last.empty() && std::isupper(static_cast<unsigned char>(last[0])) &&
            (res.rfind("torch::", 0) == 0 || res.rfind("c10::", 0) == 0 || res.rfind("at::", 0) == 0) &&
            res.find("::functional::") == std::string::npos);
  }

  Id object(TSNode base) {
    if (is(base, "this")) return b_.name("self", rng(base));
    if (is(base, "pointer_expression") && text(base).substr(0, 1) == "*")
      return object(field(base, "argument"));
    if (is(base, "parenthesized_expression") && named_count(base) == 1) return object(named(base, 0));
    return expr(base);
  }

  Id call(TSNode n) {
    Range r = rng(n);
    TSNode fn = field(n, "function");
    TSNode argl = field(n, "arguments");
    std::string_view fk = kind(fn);
    // Conversions to a number: float(x), static_cast<double>(x).
    if (fk == "primitive_type" || fk == "sized_type_specifier") {
      std::vector<Id> args = args_of(argl);
      const char* num = number_word(text(fn));
      if (args.size() == 1) return num ? as_number(num, args[0]) : args[0];
      return b_.expr(ExprKind::Other, r, "", args);
    }
    if (fk == "template_function" || fk == "qualified_identifier" || fk == "identifier") {
      std::vector<std::string> parts;
      TSNode targs{};
      name_parts(fn, parts, &targs);
      std::string first = parts.empty() ? "" : parts[0];
      bool local = parts.size() == 1 && (lookup(first) || (!cur_class_.empty() && field_type(first)));
      std::string res = local || parts.empty() ? "" : resolve(parts);
      if (res == "static_cast" || res == "dynamic_cast" || res == "const_cast" || res == "reinterpret_cast" ||
          res == "std::static_pointer_cast" || res == "std::dynamic_pointer_cast" || res == "std::move" ||
          res == "std::forward" || res == "std::ref" || res == "std::cref") {
        std::vector<Id> args = args_of(argl);
        Id inner = args.empty() ? b_.expr(ExprKind::Other, r) : args[0];
        if (res == "static_cast" && !ts_node_is_null(targs) && named_count(targs) > 0) {
          TypeFacts tt = type_facts(named(targs, 0));
          if (tt.number && !tt.indirect) return as_number(tt.number, inner);
        }
        return inner;
      }
      // std::get<1>(t) -> t[1]
      if (res == "std::get" && !ts_node_is_null(targs) && named_count(targs) == 1 && named_count(argl) == 1 &&
          is(named(targs, 0), "number_literal")) {
        Id t = expr(named(argl, 0));
        Id idx = literal_number(named(targs, 0));
        return b_.expr(ExprKind::Subscript, r, "", {t, idx});
      }
      // std::make_tuple(y, z) -> (y, z): a forward's several outputs (also make_pair, and the
      // tuple's or pair's own constructor).
      if (res == "std::make_tuple" || res == "std::make_pair" ||
          ((res == "std::tuple" || res == "std::pair") && named_count(argl) > 1))
        return b_.expr(ExprKind::Sequence, r, "tuple", args_of(argl));
      // std::make_shared<T>(...) / make_unique<T>(...): a construction of T.
      if ((res == "std::make_shared" || res == "std::make_unique" || res == "c10::make_intrusive") &&
          !ts_node_is_null(targs) && named_count(targs) > 0) {
        TypeFacts tf = type_facts(named(targs, 0));
        if (!tf.resolved.empty() || !tf.local_class.empty()) {
          Id c = b_.call(type_callee(tf, rng(fn)), args_of(argl), r);
          smart_values_.insert(c);
          return c;
        }
      }
      // A type followed by (args): a construction.
      if (!local && !parts.empty() && is_type_name(res, parts.back())) {
        TypeFacts tf = facts_of_name(res);
        if (tf.resolved.empty() && !tf.number) tf.resolved = res;
        return braced(tf, args_of(argl), false, r);
      }
    }
    Id callee;
    if (fk == "field_expression") {
      TSNode fld = field(fn, "field");
      std::vector<std::string> mp;
      name_parts(fld, mp, nullptr);
      Id obj = object(field(fn, "argument"));
      callee = b_.attr(obj, mp.empty() ? str(fld) : mp.back(), rng(fn));
    } else {
      callee = expr(fn);
    }
    return make_call(callee, args_of(argl), r);
  }

  Id make_call(Id callee, std::vector<Id> args, const Range& r) {
    ll::Expr& c = b_.e(callee);
    // Member calls: container methods, jit::Method::run.
    if (c.kind == ExprKind::Attribute && !c.kids.empty()) {
      std::string m = c.text;
      std::string mapped = container_method(m);
      Id recv = c.kids[0];
      const TypeFacts* t = declared(recv);
      if (mapped != m && (m == "push_back" || m == "emplace_back" || m == "push_front" || m == "emplace_front")) {
        b_.e(callee).text = mapped;
        if (t && t->elem_number && args.size() == 1) args[0] = as_number(t->elem_number, args[0]);
      } else if ((m == "insert" || m == "emplace") && t && t->kind == ValueKind::Container) {
        b_.e(callee).text = "insert";
      } else if (m == "run" && t && t->kind == ValueKind::JitMethod) {
        b_.e(callee).text = "forward";
      }
      return b_.call(callee, std::move(args), r);
    }
    if (c.kind == ExprKind::Name) {
      std::string q = c.qname;
      if (q == "torch.utils.data.DataLoader") return data_loader(callee, args, r);
      if (q == "std.min" || q == "std.max" || q == "std.abs") {
        b_.e(callee).qname.clear();
        b_.e(callee).text = q.substr(4);
        return b_.call(callee, std::move(args), r);
      }
      if (q == "std.thread.hardware_concurrency") {
        b_.e(callee).qname = "os.cpu_count";
        return b_.call(callee, {}, r);
      }
      if (q == "torch.load" && args.size() >= 2 && b_.e(args[0]).kind == ExprKind::Name) {
        const VarInfo* vi = lookup(b_.e(args[0]).text);
        if (vi && vi->type.kind == ValueKind::Module) {
          Id load = b_.call(callee, std::vector<Id>(args.begin() + 1, args.end()), r);
          return b_.call(b_.attr(args[0], "load_state_dict", r), {load}, r);
        }
      }
      std::vector<std::pair<std::string, Id>> kws;
      if (q.rfind("torch.", 0) == 0 && q != "torch.device")
        for (Id a : args)
          if (Id d = cuda_literal_in(a); d != kNone) { kws.emplace_back("device", d); break; }
      return b_.call(callee, std::move(args), r, kws);
    }
    return b_.call(callee, std::move(args), r);
  }

  void for_each_in(Id root, const std::function<bool(Id)>& f) const {
    std::vector<Id> st{root};
    while (!st.empty()) {
      Id x = st.back();
      st.pop_back();
      if (x == kNone || x >= b_.m.exprs.size()) continue;
      if (!f(x)) return;
      for (Id k : b_.m.exprs[x].kids) st.push_back(k);
    }
  }

  Id cuda_literal_in(Id root) const {
    Id found = kNone;
    for_each_in(root, [&](Id x) {
      const ll::Expr& e = b_.m.exprs[x];
      if (e.kind == ExprKind::Literal && e.lit == LitKind::String && e.text.rfind("cuda", 0) == 0 &&
          b_.src.substr(e.range.begin, 1) != "\"")
        found = x;  // a device constant (torch::kCUDA), not an arbitrary string
      return found == kNone;
    });
    return found;
  }

  // make_data_loader(ds, DataLoaderOptions().workers(12).batch_size(64)) -> DataLoader(ds, num_workers=12, ...)
  Id data_loader(Id callee, const std::vector<Id>& args, const Range& r) {
    std::vector<Id> pos;
    std::vector<std::pair<std::string, Id>> kws;
    std::function<void(Id, int)> options = [&](Id x, int depth) {
      if (x == kNone || depth > 16) return;
      const ll::Expr& e = b_.m.exprs[x];
      if (e.kind == ExprKind::Name && e.qname.empty()) {
        const VarInfo* vi = lookup(e.text);
        if (vi && vi->init != kNone && vi->init != x) options(vi->init, depth + 1);
        return;
      }
      if (e.kind != ExprKind::Call) return;
      const ll::Expr& c = b_.m.exprs[e.kids[0]];
      if (c.kind == ExprKind::Attribute) {
        options(c.kids.empty() ? kNone : c.kids[0], depth + 1);
        static const std::pair<const char*, const char*> names[] = {
            {"workers", "num_workers"}, {"batch_size", "batch_size"}, {"drop_last", "drop_last"},
            {"max_jobs", "max_jobs"},   {"timeout", "timeout"},       {"enforce_ordering", "enforce_ordering"}};
        for (auto [cxx, py] : names)
          if (c.text == cxx && e.kids.size() >= 2) {
            for (auto& kw : kws)
              if (kw.first == py) kw.first.clear();
            kws.emplace_back(py, e.kids[1]);
          }
        return;
      }
      if (c.kind == ExprKind::Name && c.text == "DataLoaderOptions" && e.kids.size() >= 2)
        kws.emplace_back("batch_size", e.kids[1]);
    };
    for (size_t i = 0; i < args.size(); ++i) {
      const ll::Expr& a = b_.m.exprs[args[i]];
      if (i == 0) { pos.push_back(args[i]); continue; }
      bool opts = false;
      for_each_in(args[i], [&](Id x) {
        const ll::Expr& e = b_.m.exprs[x];
        if ((e.kind == ExprKind::Name && e.text == "DataLoaderOptions") ||
            (e.kind == ExprKind::Attribute && (e.text == "workers" || e.text == "batch_size")))
          opts = true;
        return !opts;
      });
      if (!opts && a.kind == ExprKind::Name && a.qname.empty()) {
        const VarInfo* vi = lookup(a.text);
        if (vi && vi->init != kNone) opts = true;
      }
      if (opts) options(args[i], 0);
      else if (a.kind == ExprKind::Literal && a.lit == LitKind::Int) kws.emplace_back("batch_size", args[i]);
      else kws.emplace_back(i == 1 ? "sampler" : "arg" + std::to_string(i), args[i]);
    }
    std::vector<std::pair<std::string, Id>> clean;
    for (auto& kw : kws)
      if (!kw.first.empty()) clean.push_back(kw);
    return b_.call(callee, pos, r, clean);
  }

  Id lambda(TSNode n, const std::string& hint) {
    Range r = rng(n);
    std::string name = hint.empty() ? "<lambda:" + std::to_string(r.line) + ":" + std::to_string(r.col) + ">" : hint;
    TSNode decl = field(n, "declarator");
    std::vector<Param> params = params_of(field(decl, "parameters"));
    Function f;
    f.name = name;
    f.parent = cur_func_;
    f.range = r;
    f.header = r;
    for (const auto& p : params) f.params.push_back(p.name);
    Id fid = b_.add_function(std::move(f));
    Id st = b_.stmt(StmtKind::FunctionDef, r);
    b_.s(st).func = fid;
    b_.m.funcs[fid].stmt = st;
    Id saved_func = cur_func_;
    cur_func_ = fid;
    // The body sees the enclosing scopes (captures).
    push_scope();
    for (const auto& p : params) {
      VarInfo vi;
      vi.type = p.type;
      declare(p.name, vi);
    }
    std::vector<Id> body;
    size_t mark = hoisted_.size();
    TSNode bd = field(n, "body");
    if (is(bd, "compound_statement")) block(bd, body, rng(bd).end);
    if (hoisted_.size() > mark) {
      body.insert(body.begin(), hoisted_.begin() + static_cast<long>(mark), hoisted_.end());
      hoisted_.resize(mark);
    }
    pop_scope();
    cur_func_ = saved_func;
    b_.m.funcs[fid].body = std::move(body);
    hoisted_.push_back(st);
    return b_.name(name, r);
  }

  Id lower_expr(TSNode n) {
    std::string_view k = kind(n);
    Range r = rng(n);
    if (k == "identifier" || k == "qualified_identifier" || k == "template_function" || k == "namespace_identifier" ||
        k == "type_identifier")
      return expr_name(n);
    if (k == "field_identifier") {
      const std::string f = str(n);
      if (lookup(f)) return b_.name(f, r);
      return b_.attr(b_.name("self", r), f, r);
    }
    if (k == "call_expression") return call(n);
    if (k == "field_expression") {
      TSNode fld = field(n, "field");
      std::vector<std::string> mp;
      name_parts(fld, mp, nullptr);
      Id obj = object(field(n, "argument"));
      return b_.attr(obj, mp.empty() ? str(fld) : mp.back(), r);
    }
    if (k == "parenthesized_expression") {
      for (uint32_t i = 0; i < named_count(n); ++i)
        if (!is(named(n, i), "comment")) return expr(named(n, i));
      return b_.expr(ExprKind::Other, r);
    }
    if (k == "number_literal") return literal_number(n);
    if (k == "string_literal" || k == "concatenated_string" || k == "raw_string_literal")
      return b_.literal(LitKind::String, string_value(n), r);
    if (k == "char_literal") return b_.literal(LitKind::Other, str(n), r);
    if (k == "true") return b_.literal(LitKind::True, "True", r);
    if (k == "false") return b_.literal(LitKind::False, "False", r);
    if (k == "null" || k == "nullptr") return b_.literal(LitKind::None, "None", r);
    if (k == "this") return b_.name("self", r);
    if (k == "lambda_expression") return lambda(n, "");
    if (k == "initializer_list") return b_.expr(ExprKind::Sequence, r, "list", args_of(n));
    if (k == "assignment_expression") {
      Id a = expr(field(n, "left")), c = expr(field(n, "right"));
      std::string op(text(field(n, "operator")));
      return b_.expr(ExprKind::BinOp, r, op.empty() ? "=" : op, {a, c});
    }
    if (k == "binary_expression") {
      Id a = expr(field(n, "left")), c = expr(field(n, "right"));
      std::string op(text(field(n, "operator")));
      if (op == "==" || op == "!=" || op == "<" || op == ">" || op == "<=" || op == ">=" || op == "<=>")
        return b_.expr(ExprKind::Compare, r, op, {a, c});
      if (op == "&&" || op == "and") return b_.expr(ExprKind::BoolOp, r, "and", {a, c});
      if (op == "||" || op == "or") return b_.expr(ExprKind::BoolOp, r, "or", {a, c});
      return b_.expr(ExprKind::BinOp, r, op, {a, c});
    }
    if (k == "unary_expression") {
      std::string op(text(field(n, "operator")));
      Id a = expr(field(n, "argument"));
      return b_.expr(ExprKind::UnaryOp, r, op == "!" || op == "not" ? "not" : op, {a});
    }
    if (k == "pointer_expression") {
      std::string op(text(field(n, "operator")));
      Id a = expr(field(n, "argument"));
      if (op == "*") return a;  // `*loader`, `*ptr`: the object itself
      return b_.expr(ExprKind::UnaryOp, r, op, {a});
    }
    if (k == "update_expression") {
      std::string op(text(field(n, "operator")));
      return b_.expr(ExprKind::UnaryOp, r, op, {expr(field(n, "argument"))});
    }
    if (k == "cast_expression") {
      TypeFacts tt = type_facts(field(n, "type"));
      Id v = expr(field(n, "value"));
      if (tt.number && !tt.indirect && !text(field(n, "type")).empty() &&
          text(field(n, "type")).find('*') == std::string_view::npos)
        return as_number(tt.number, v);
      return v;
    }
    if (k == "conditional_expression") {
      Id body = expr(field(n, "consequence")), test = expr(field(n, "condition")),
         orelse = expr(field(n, "alternative"));
      return b_.expr(ExprKind::Conditional, r, "", {body, test, orelse});
    }
    if (k == "subscript_expression") {
      Id base = expr(field(n, "argument"));
      TSNode idx = field(n, "indices");
      if (ts_node_is_null(idx)) idx = field(n, "index");
      if (is(idx, "subscript_argument_list") && named_count(idx) > 0) idx = named(idx, 0);
      return b_.expr(ExprKind::Subscript, r, "", {base, ts_node_is_null(idx) ? b_.expr(ExprKind::Other, r) : expr(idx)});
    }
    if (k == "compound_literal_expression") {
      TypeFacts tf = type_facts(field(n, "type"));
      std::vector<Id> args = args_of(field(n, "value"));
      if (tf.resolved.empty() && !tf.number && !tf.builtin) return b_.expr(ExprKind::Sequence, r, "list", args);
      return braced(tf, args, true, r);
    }
    if (k == "new_expression") {
      TypeFacts tf = type_facts(field(n, "type"));
      TSNode args = field(n, "arguments");
      std::vector<Id> a = args_of(args);
      if (tf.number || tf.builtin) return b_.expr(ExprKind::Other, r, "new", a);
      return b_.call(type_callee(tf, r), a, r);
    }
    if (k == "delete_expression") {
      TSNode a = named_count(n) ? named(n, named_count(n) - 1) : TSNode{};
      return b_.expr(ExprKind::Other, r, "delete", {expr(a)});
    }
    if (k == "comma_expression") {
      Id a = expr(field(n, "left")), c = expr(field(n, "right"));
      return b_.expr(ExprKind::Other, r, ",", {a, c});
    }
    if (k == "sizeof_expression" || k == "alignof_expression" || k == "offsetof_expression" ||
        k == "requires_expression" || k == "fold_expression" || k == "type_descriptor" || k == "primitive_type")
      return b_.expr(ExprKind::Other, r, std::string(k));
    if (k == "user_defined_literal") {
      TSNode lit = named_count(n) ? named(n, 0) : TSNode{};
      if (is(lit, "number_literal")) return literal_number(lit);
      return b_.literal(LitKind::Other, str(n), r);
    }
    if (k == "throw_expression" || k == "co_await_expression" || k == "co_yield_statement") {
      std::vector<Id> kids;
      for (uint32_t i = 0; i < named_count(n); ++i) kids.push_back(expr(named(n, i)));
      return b_.expr(ExprKind::Other, r, std::string(k), kids);
    }
    // Anything else (ERROR included): its sub-expressions, so calls inside are still seen.
    std::vector<Id> kids;
    for (uint32_t i = 0; i < named_count(n); ++i) {
      TSNode c = named(n, i);
      std::string_view ck = kind(c);
      if (ck == "comment" || ck == "argument_list" || ck.find("declarator") != std::string_view::npos) continue;
      kids.push_back(expr(c));
    }
    return b_.expr(ExprKind::Other, r, "", kids);
  }
};

}  // namespace

void lower_tree_sitter(std::string_view src, Module& m, std::vector<Diagnostic>& diags) {
  TsLowerer(src, m, diags).run();
}

}  // namespace ll::cpp
