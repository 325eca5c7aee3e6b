// The syntactic fallback lowering: a tolerant recursive-descent reading of C++ tokens that
// produces the same model shapes as ast_lowering.cpp, without types. What it knows comes
// from spellings: `using namespace`, namespace aliases, `using X = ...`, TORCH_MODULE,
// this file's classes and their bases, and declared types of variables, parameters and
// fields. It never fails: a construct it does not understand is skipped to the next `;`
// or `}` at its level.
#include "frontend/cpp/syntactic_lowering.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "frontend/cpp/model_builder.hpp"

namespace ll::cpp {
namespace {

// ---------------------------------------------------------------------------- lexer

enum class T : uint8_t { Ident, Number, String, Char, Punct, End };

struct Tok {
  T kind = T::End;
  uint32_t b = 0, e = 0;
  std::string_view text;
  bool joined = false;  // a '>' that directly follows another '>' (was `>>`)
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80); }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (c & 0x80); }

std::vector<Tok> lex(std::string_view s) {
  std::vector<Tok> out;
  size_t i = 0, n = s.size();
  bool line_start = true;
  struct Cond { bool active; bool taken; };
  std::vector<Cond> conds;
  auto active = [&] { return conds.empty() || conds.back().active; };
  auto push = [&](T k, size_t b, size_t e, bool joined = false) {
    Tok t;
    t.kind = k;
    t.b = static_cast<uint32_t>(b);
    t.e = static_cast<uint32_t>(e);
    t.text = s.substr(b, e - b);
    t.joined = joined;
    out.push_back(t);
  };
  auto skip_string = [&](size_t j, char q) {  // j at the opening quote
    ++j;
    while (j < n && s[j] != q && s[j] != '\n') j += s[j] == '\\' && j + 1 < n ? 2 : 1;
    return j < n && s[j] == q ? j + 1 : j;
  };
  auto skip_raw = [&](size_t j) {  // j at the opening quote of R"d( ... )d"
    size_t p = s.find('(', j + 1);
    if (p == std::string_view::npos || p - j > 17) return skip_string(j, '"');
    std::string close = ")" + std::string(s.substr(j + 1, p - j - 1)) + "\"";
    size_t q = s.find(close, p + 1);
    return q == std::string_view::npos ? n : q + close.size();
  };
  while (i < n) {
    char c = s[i];
    if (c == '\n') { line_start = true; ++i; continue; }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') { ++i; continue; }
    if (c == '\\' && i + 1 < n && (s[i + 1] == '\n' || s[i + 1] == '\r')) { i += 2; continue; }
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') i += s[i] == '\\' && i + 1 < n && s[i + 1] == '\n' ? 2 : 1;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      i = e == std::string_view::npos ? n : e + 2;
      continue;
    }
    if (c == '#' && line_start) {
      // A directive: its logical line. Conditionals keep the first branch only.
      size_t e = i;
      while (e < n && s[e] != '\n') {
        if (s[e] == '\\' && e + 1 < n && s[e + 1] == '\n') e += 2;
        else if (s[e] == '/' && e + 1 < n && s[e + 1] == '*') {
          size_t ce = s.find("*/", e + 2);
          e = ce == std::string_view::npos ? n : ce + 2;
        } else ++e;
      }
      size_t d = i + 1;
      while (d < e && (s[d] == ' ' || s[d] == '\t')) ++d;
      size_t de = d;
      while (de < e && ident_char(s[de])) ++de;
      std::string_view name = s.substr(d, de - d);
      size_t a = de;
      while (a < e && (s[a] == ' ' || s[a] == '\t')) ++a;
      bool zero = a < e && s[a] == '0' && (a + 1 >= e || !ident_char(s[a + 1]));
      if (name == "if" || name == "ifdef" || name == "ifndef") {
        bool parent = active();
        conds.push_back({parent && !(name == "if" && zero), !(name == "if" && zero)});
      } else if (name == "elif" || name == "else" || name == "elifdef" || name == "elifndef") {
        if (!conds.empty()) {
          bool parent = conds.size() < 2 || conds[conds.size() - 2].active;
          Cond& cd = conds.back();
          cd.active = parent && !cd.taken && !(name == "elif" && zero);
          if (cd.active) cd.taken = true;
        }
      } else if (name == "endif") {
        if (!conds.empty()) conds.pop_back();
      }
      i = e;
      continue;
    }
    line_start = false;
    if (!active()) {
      // Skip the rest of an inactive line, minding strings and comments.
      if (c == '"' || c == '\'') { i = skip_string(i, c); continue; }
      ++i;
      continue;
    }
    if (ident_start(c)) {
      size_t j = i;
      while (j < n && ident_char(s[j])) ++j;
      std::string_view w = s.substr(i, j - i);
      if (j < n && s[j] == '"' && (w == "u8" || w == "u" || w == "U" || w == "L")) {
        size_t e = skip_string(j, '"');
        push(T::String, i, e);
        i = e;
        continue;
      }
      if (j < n && s[j] == '"' && (w == "R" || w == "u8R" || w == "uR" || w == "UR" || w == "LR")) {
        size_t e = skip_raw(j);
        push(T::String, i, e);
        i = e;
        continue;
      }
      if (j < n && s[j] == '\'' && (w == "u8" || w == "u" || w == "U" || w == "L")) {
        size_t e = skip_string(j, '\'');
        push(T::Char, i, e);
        i = e;
        continue;
      }
      push(T::Ident, i, j);
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t j = i + 1;
      while (j < n) {
        char d = s[j];
        if (ident_char(d) || d == '.') { ++j; continue; }
        if (d == '\'' && j + 1 < n && ident_char(s[j + 1])) { ++j; continue; }
        if ((d == '+' || d == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E' || s[j - 1] == 'p' || s[j - 1] == 'P')) { ++j; continue; }
        break;
      }
      push(T::Number, i, j);
      i = j;
      continue;
    }
    if (c == '"') { size_t e = skip_string(i, '"'); push(T::String, i, e); i = e; continue; }
    if (c == '\'') { size_t e = skip_string(i, '\''); push(T::Char, i, e); i = e; continue; }
    static const char* p3[] = {"<=>", "->*", "...", "<<=", ">>="};
    static const char* p2[] = {"::", "->", "++", "--", "<<", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=",
                               "*=", "/=", "%=", "&=", "|=", "^=", ".*", "##"};
    bool done = false;
    for (const char* p : p3)
      if (s.compare(i, 3, p) == 0) { push(T::Punct, i, i + 3); i += 3; done = true; break; }
    if (done) continue;
    if (c == '>' && i + 1 < n && s[i + 1] == '>') {
      push(T::Punct, i, i + 1);
      push(T::Punct, i + 1, i + 2, true);
      i += 2;
      continue;
    }
    for (const char* p : p2)
      if (s.compare(i, 2, p) == 0) { push(T::Punct, i, i + 2); i += 2; done = true; break; }
    if (done) continue;
    push(T::Punct, i, i + 1);
    ++i;
  }
  return out;
}

bool keyword(std::string_view w) {
  static const std::unordered_set<std::string_view> k = {
      "alignas", "alignof", "asm", "auto", "bool", "break", "case", "catch", "char", "char8_t", "char16_t",
      "char32_t", "class", "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum",
      "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long",
      "mutable", "namespace", "new", "noexcept", "nullptr", "operator", "private", "protected", "public",
      "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true",
      "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
      "wchar_t", "while", "override", "final"};
  return k.count(w) != 0;
}

bool builtin_type_word(std::string_view w) {
  return w == "int" || w == "double" || w == "float" || w == "bool" || w == "char" || w == "void" || w == "long" ||
         w == "short" || w == "unsigned" || w == "signed" || w == "auto" || w == "wchar_t" || w == "char8_t" ||
         w == "char16_t" || w == "char32_t";
}

bool specifier_word(std::string_view w) {
  return w == "const" || w == "constexpr" || w == "consteval" || w == "constinit" || w == "static" ||
         w == "volatile" || w == "inline" || w == "thread_local" || w == "mutable" || w == "register" ||
         w == "extern" || w == "typename" || w == "virtual" || w == "explicit" || w == "friend" ||
         w == "struct" || w == "class" || w == "enum" || w == "union";
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + v[i];
  return s;
}

// ---------------------------------------------------------------------------- lowering

struct TypeFacts {
  ValueKind kind = ValueKind::None;
  bool smart = false;
  bool builtin = false;     // int, double, auto ...
  bool is_auto = false;
  bool is_void = false;     // plain `void` (a function's return type)
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
  std::vector<std::string> bases;  // resolved spellings
  std::vector<std::pair<std::string, TypeFacts>> fields;
  std::vector<std::pair<std::string, std::pair<size_t, size_t>>> field_inits;  // name -> token range of initialiser
  bool has_ctor = false;
  std::string holder_impl;  // TORCH_MODULE(Net): Net -> NetImpl
};

struct Deferred {
  Id func;
  size_t body_begin, body_end;  // tokens inside the braces
  std::vector<std::pair<std::string, TypeFacts>> params;
  std::string cls;
  bool ctor = false;
  size_t init_begin = 0, init_end = 0;  // ctor mem-initialisers
};

class Syn {
 public:
  Syn(std::string_view src, Module& m, std::vector<Diagnostic>& diags)
      : b_(m, src), toks_(lex(src)), diags_(diags) {
    end_.kind = T::End;
    end_.b = end_.e = static_cast<uint32_t>(src.size());
  }

  void run() {
    b_.m.lang = Lang::Cpp;
    prescan();
    std::vector<Id> body;
    p_ = 0;
    decls(toks_.size(), body, "");
    b_.m.body = std::move(body);
  }

 private:
  ModelBuilder b_;
  std::vector<Tok> toks_;
  std::vector<Diagnostic>& diags_;
  Tok end_;
  size_t p_ = 0;
  size_t limit_ = 0;  // current parse limit (exclusive)
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

  // ------------------------------------------------------------------ token access
  const Tok& tok(size_t k = 0) const {
    size_t i = p_ + k;
    return i < std::min(limit_, toks_.size()) ? toks_[i] : end_;
  }
  const Tok& at(size_t i) const { return i < toks_.size() ? toks_[i] : end_; }
  bool is(std::string_view t, size_t k = 0) const {
    const Tok& x = tok(k);
    return x.kind != T::End && x.kind != T::String && x.kind != T::Char && x.text == t;
  }
  bool is_id(size_t k = 0) const { return tok(k).kind == T::Ident && !keyword(tok(k).text); }
  bool done() const { return p_ >= std::min(limit_, toks_.size()); }
  uint32_t pos_b(size_t i) const { return at(i).b; }
  uint32_t prev_e() const { return p_ > 0 ? at(p_ - 1).e : 0; }
  Range span(size_t from, size_t to_excl) const {
    if (to_excl <= from) return b_.range(at(from).b, at(from).b);
    return b_.range(at(from).b, at(to_excl - 1).e);
  }
  Range since(size_t from) const { return span(from, p_); }

  // Index of the token matching the bracket at `i` (or the limit).
  size_t match(size_t i) const {
    std::string_view open = at(i).text;
    std::string_view close = open == "(" ? ")" : open == "[" ? "]" : open == "{" ? "}" : ">";
    int d = 0;
    for (size_t j = i; j < toks_.size(); ++j) {
      const Tok& t = toks_[j];
      if (t.kind != T::Punct) continue;
      if (t.text == "(" || t.text == "[" || t.text == "{") ++d;
      else if (t.text == ")" || t.text == "]" || t.text == "}") {
        --d;
        if (d == 0) return t.text == close ? j : j;
        if (d < 0) return j;
      }
    }
    return toks_.size();
  }

  // After an identifier, is `<` at index i the start of template arguments? Returns the
  // index of the closing `>` or 0.
  size_t template_args(size_t i) const {
    if (!(at(i).kind == T::Punct && at(i).text == "<")) return 0;
    int depth = 1, parens = 0;
    size_t j = i + 1;
    for (; j < toks_.size() && j < i + 96; ++j) {
      const Tok& t = toks_[j];
      if (t.kind != T::Punct) continue;
      std::string_view x = t.text;
      if (x == "(" || x == "[" || x == "{") ++parens;
      else if (x == ")" || x == "]" || x == "}") {
        if (parens == 0) return 0;
        --parens;
      } else if (parens == 0) {
        if (x == "<") ++depth;
        else if (x == ">") {
          if (--depth == 0) break;
        } else if (x == ";" || x == "&&" || x == "||" || x == "==" || x == "!=" || x == "?" || x == "=" ||
                   x == "+=" || x == "-=") {
          return 0;
        }
      }
    }
    if (j >= toks_.size() || depth != 0) return 0;
    const Tok& nx = at(j + 1);
    if (nx.kind == T::End) return j;
    if (nx.kind == T::Ident) return j;
    static const std::set<std::string_view> ok = {"(", "::", "{", ")", ",", ";", ">", "&", "*", "&&", "...",
                                                  "[", "=", "]", ".", ":", "}"};
    return nx.kind == T::Punct && ok.count(nx.text) ? j : 0;
  }

  void too_deep(const Range& r) {
    if (too_deep_) return;
    too_deep_ = true;
    diags_.push_back(b_.too_deep(r));
  }

  // Skips to just after the next `;` at this level (or to a `}` that closes the level).
  bool at_statement_keyword() const {
    return tok().kind == T::Ident &&
           (is("for") || is("while") || is("if") || is("return") || is("do") || is("switch") || is("try") ||
            is("break") || is("continue") || is("throw") || is("case") || is("default"));
  }

  // A missing `;` must not swallow the next statement: stop before a statement keyword.
  void skip_statement() {
    size_t start = p_;
    while (!done()) {
      if (is("{") || is("(") || is("[")) { p_ = match(p_) + 1; continue; }
      if (is(";")) { ++p_; return; }
      if (is("}")) return;
      if (p_ > start && at_statement_keyword()) return;
      ++p_;
    }
  }

  // ------------------------------------------------------------------ prescan
  void prescan() {
    for (size_t i = 0; i + 1 < toks_.size(); ++i) {
      const Tok& t = toks_[i];
      if (t.kind != T::Ident) continue;
      if ((t.text == "struct" || t.text == "class") && at(i + 1).kind == T::Ident && !keyword(at(i + 1).text)) {
        // struct X [final] [: bases] {
        size_t j = i + 1;
        std::string name(at(j).text);
        ++j;
        while (at(j).kind == T::Ident && (at(j).text == "final" || at(j).text == "alignas")) ++j;
        std::vector<std::string> bases;
        if (at(j).text == ":" && at(j).kind == T::Punct) {
          ++j;
          std::vector<std::string> cur;
          for (; j < toks_.size() && !(at(j).kind == T::Punct && (at(j).text == "{" || at(j).text == ";")); ++j) {
            const Tok& x = at(j);
            if (x.kind == T::Punct && x.text == "<") {
              size_t close = template_args(j);
              if (close) {
                // Cloneable<NetImpl> / ModuleHolder<NetImpl>: keep the template's name.
                j = close;
                continue;
              }
            }
            if (x.kind == T::Punct && x.text == ",") {
              if (!cur.empty()) bases.push_back(join(cur, "::"));
              cur.clear();
              continue;
            }
            if (x.kind == T::Ident && x.text != "public" && x.text != "private" && x.text != "protected" &&
                x.text != "virtual")
              cur.emplace_back(x.text);
          }
          if (!cur.empty()) bases.push_back(join(cur, "::"));
        }
        if (at(j).kind == T::Punct && at(j).text == "{") {
          ClassInfo& ci = classes_[name];
          ci.bases = bases;
        }
      }
      if (t.text == "TORCH_MODULE" && at(i + 1).text == "(" && at(i + 2).kind == T::Ident) {
        ClassInfo& ci = classes_[std::string(at(i + 2).text)];
        ci.holder_impl = std::string(at(i + 2).text) + "Impl";
      }
      // name ( ... ) [qualifiers] {   : a function definition
      if (!keyword(t.text) && at(i + 1).kind == T::Punct && at(i + 1).text == "(") {
        bool qualified = i > 0 && at(i - 1).kind == T::Punct && at(i - 1).text == "::";
        const Tok& before = i > 0 ? at(i - 1) : end_;
        bool type_before = before.kind == T::Ident || (before.kind == T::Punct && (before.text == ">" || before.text == "*" || before.text == "&" || before.text == "&&"));
        if (!type_before || qualified) continue;
        size_t close = match(i + 1);
        size_t k = close + 1;
        while (at(k).kind == T::Ident && (at(k).text == "const" || at(k).text == "noexcept" || at(k).text == "override" || at(k).text == "final")) ++k;
        if (at(k).kind == T::Punct && at(k).text == "{") local_funcs_.insert(std::string(t.text));
      }
    }
  }

  // ------------------------------------------------------------------ names
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
    std::string name = join(parts, "::");
    if (parts.size() == 1 && (classes_.count(name) || local_funcs_.count(name))) return name;
    if (known_library(name)) return name;
    if (is_macro_name(parts[0])) return name;  // FORWARD(...): a macro, not torch::FORWARD
    for (const auto& ns : using_ns_) {
      std::string cand = ns + "::" + name;
      if (known_library(cand)) return cand;
    }
    return name;
  }

  // ------------------------------------------------------------------ types
  ValueKind class_kind(const std::string& name, int depth = 0) const {
    if (depth > 8) return ValueKind::None;
    auto it = classes_.find(name);
    if (it == classes_.end()) {
      ValueKind k = value_kind_by_name(name);
      if (name == "torch::nn::Cloneable" || name == "torch::nn::ModuleHolder") return ValueKind::Module;
      return k;
    }
    if (!it->second.holder_impl.empty()) return ValueKind::Module;
    for (const auto& b : it->second.bases) {
      ValueKind k = class_kind(resolve(split_qualified(b)), depth + 1);
      if (k == ValueKind::Module || k == ValueKind::Optimizer || k == ValueKind::Scheduler) return k;
    }
    return ValueKind::None;
  }

  TypeFacts facts_of_name(const std::string& resolved) const {
    TypeFacts f;
    f.resolved = resolved;
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
    f.holder = f.kind == ValueKind::Module && resolved.rfind("torch::nn::", 0) == 0 &&
               resolved.size() > 4 && resolved.compare(resolved.size() - 4, 4, "Impl") != 0 && resolved != "torch::nn::Module";
    return f;
  }

  // Parses a type at p_ (decl-specifiers, a qualified name with template arguments, cv,
  // pointer/reference declarators). Returns false (p_ unchanged) when there is none.
  bool parse_type(TypeFacts& out) {
    size_t save = p_;
    bool any_builtin = false;
    std::vector<std::string> parts;
    while (!done() && tok().kind == T::Ident && specifier_word(tok().text)) ++p_;
    if (!done() && tok().kind == T::Ident && builtin_type_word(tok().text)) {
      out.is_void = tok().text == "void";
      while (!done() && tok().kind == T::Ident && (builtin_type_word(tok().text) || tok().text == "const")) {
        if (tok().text == "auto") out.is_auto = true;
        ++p_;
      }
      any_builtin = true;
    } else if (is("decltype") && is("(", 1)) {
      p_ = match(p_ + 1) + 1;  // decltype(expr): an unknown type, like auto
      out.is_auto = true;
      any_builtin = true;
    } else {
      if (is("::")) { parts.emplace_back(""); ++p_; }
      size_t targs_for = 0;
      while (is_id()) {
        parts.emplace_back(tok().text);
        ++p_;
        if (is("<")) {
          size_t close = template_args(p_);
          if (!close) break;
          targs_for = p_;
          p_ = close + 1;
        }
        if (is("::") && tok(1).kind == T::Ident && tok(1).text != "operator") { ++p_; continue; }
        break;
      }
      if (parts.empty() || (parts.size() == 1 && parts[0].empty())) { p_ = save; return false; }
      std::string res = resolve(parts);
      out = facts_of_name(res);
      // Smart pointers: the pointee's kind.
      if ((out.kind == ValueKind::SmartPtr) && targs_for) {
        size_t keep = p_;
        p_ = targs_for + 1;
        TypeFacts inner;
        size_t lim = limit_;
        limit_ = template_args(targs_for);
        if (parse_type(inner) && inner.kind != ValueKind::None) {
          inner.smart = true;
          out = inner;
        } else {
          out.smart = true;
        }
        limit_ = lim;
        p_ = keep;
      }
    }
    while (!done() && ((tok().kind == T::Ident && (tok().text == "const" || tok().text == "volatile")) ||
                       is("*") || is("&") || is("&&"))) {
      if (!is("const") && !is("volatile")) out.is_void = false;
      ++p_;
    }
    out.builtin = any_builtin;
    return true;
  }

  // ------------------------------------------------------------------ scopes
  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() { if (!scopes_.empty()) scopes_.pop_back(); }
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
  bool is_field(const std::string& name) const {
    std::string cls = cur_class_;
    for (int hops = 0; !cls.empty() && hops < 8; ++hops) {
      auto it = classes_.find(cls);
      if (it == classes_.end()) return false;
      for (const auto& f : it->second.fields)
        if (f.first == name) return true;
      std::string next;
      for (const auto& b : it->second.bases)
        if (classes_.count(b)) next = b;
      cls = next;
    }
    return false;
  }

  // ------------------------------------------------------------------ declarations
  void decls(size_t end, std::vector<Id>& out, const std::string& cls) {
    size_t saved_limit = limit_;
    limit_ = end;
    while (!done()) {
      size_t start = p_;
      decl(out, cls);
      if (p_ == start) ++p_;  // always make progress
    }
    limit_ = saved_limit;
  }

  void decl(std::vector<Id>& out, const std::string& cls) {
    if (is(";")) { ++p_; return; }
    if (is("}")) { ++p_; return; }
    if (is("namespace")) {
      ++p_;
      std::vector<std::string> name;
      while (is_id() || is("::") || is("inline")) {
        if (is_id()) name.emplace_back(tok().text);
        ++p_;
      }
      if (is("=")) {  // namespace alias
        ++p_;
        std::vector<std::string> target;
        while (is_id() || is("::")) {
          if (is_id()) target.emplace_back(tok().text);
          ++p_;
        }
        if (!name.empty()) ns_alias_[name.back()] = resolve(target);
        skip_statement();
        return;
      }
      for (const auto& n : name) namespaces_.insert(n);
      if (is("{")) {
        size_t close = match(p_);
        ++p_;
        decls(close, out, cls);
        p_ = close + 1;
      }
      return;
    }
    if (is("using")) { using_decl(); return; }
    if (is("typedef")) { typedef_decl(); return; }
    if (is("template")) {
      ++p_;
      if (is("<")) {
        size_t close = template_args(p_);
        p_ = close ? close + 1 : match_angle(p_);
      }
      return;  // the templated declaration follows
    }
    if (is("extern") && tok(1).kind == T::String) {
      p_ += 2;
      if (is("{")) {
        size_t close = match(p_);
        ++p_;
        decls(close, out, cls);
        p_ = close + 1;
      }
      return;
    }
    if (is("static_assert") || is("friend")) { skip_statement(); return; }
    if (is("public") || is("private") || is("protected")) {
      ++p_;
      if (is(":")) ++p_;
      return;
    }
    if (is("enum")) {
      while (!done() && !is("{") && !is(";")) ++p_;
      if (is("{")) p_ = match(p_) + 1;
      skip_statement();
      return;
    }
    if ((is("struct") || is("class") || is("union")) && is_class_definition()) {
      class_def(out);
      return;
    }
    if (is("TORCH_MODULE") && is("(", 1)) {
      size_t b = p_;
      std::string name(tok(2).text);
      p_ = match(p_ + 1) + 1;
      if (is(";")) ++p_;
      holder_class(name, span(b, p_), out);
      return;
    }
    // Macro invocations at declaration level: NAME(...) [{...}]
    if (tok().kind == T::Ident && is("(", 1) && is_macro_name(tok().text)) {
      p_ = match(p_ + 1) + 1;
      if (is("{")) p_ = match(p_) + 1;
      if (is(";")) ++p_;
      return;
    }
    declaration(out, cls, /*block=*/false);
  }

  static bool is_macro_name(std::string_view w) {
    if (w.size() < 3) return false;
    bool lower = false;
    for (char c : w)
      if (std::islower(static_cast<unsigned char>(c))) lower = true;
    return !lower;
  }

  size_t match_angle(size_t i) const {
    int d = 0;
    for (size_t j = i; j < toks_.size(); ++j) {
      if (at(j).kind != T::Punct) continue;
      if (at(j).text == "<") ++d;
      else if (at(j).text == ">" && --d == 0) return j + 1;
      else if (at(j).text == "{" || at(j).text == ";") return j;
    }
    return toks_.size();
  }

  void using_decl() {
    size_t b = p_;
    ++p_;
    if (is("namespace")) {
      ++p_;
      std::vector<std::string> name;
      while (is_id() || is("::")) {
        if (is_id()) name.emplace_back(tok().text);
        ++p_;
      }
      std::string ns = resolve(name);
      if (!ns.empty() && std::find(using_ns_.begin(), using_ns_.end(), ns) == using_ns_.end()) using_ns_.push_back(ns);
      skip_statement();
      return;
    }
    if (is_id() && is("=", 1)) {  // using X = type;
      std::string alias(tok().text);
      p_ += 2;
      TypeFacts tf;
      if (parse_type(tf) && !tf.resolved.empty()) type_alias_[alias] = tf.resolved;
      skip_statement();
      return;
    }
    // using a::b;  -> b names a::b
    std::vector<std::string> name;
    while (is_id() || is("::") || is("typename")) {
      if (is_id()) name.emplace_back(tok().text);
      ++p_;
    }
    if (name.size() >= 2) type_alias_[name.back()] = resolve(name);
    (void)b;
    skip_statement();
  }

  void typedef_decl() {
    ++p_;
    TypeFacts tf;
    bool ok = parse_type(tf);
    if (ok && is_id() && is(";", 1) && !tf.resolved.empty()) type_alias_[std::string(tok().text)] = tf.resolved;
    skip_statement();
  }

  bool is_class_definition() const {
    // struct X ... { (not `struct X;`, not `struct X x;`)
    for (size_t k = 1; k < 64; ++k) {
      const Tok& t = tok(k);
      if (t.kind == T::End) return false;
      if (t.kind == T::Punct && t.text == "{") return true;
      if (t.kind == T::Punct && (t.text == ";" || t.text == "(" || t.text == "=" || t.text == ")")) return false;
    }
    return false;
  }

  Id base_expr(const std::string& spelled, const Range& r) {
    std::string res = resolve(split_qualified(spelled));
    if (classes_.count(res)) return b_.name(res, r);
    if (res == "torch::nn::Cloneable" || res == "torch::nn::ModuleHolder" ||
        class_kind(res) == ValueKind::Module)
      return b_.model_name("torch.nn.Module", r);
    if (class_kind(res) == ValueKind::Optimizer) return b_.model_name("torch.optim.Optimizer", r);
    return b_.qualified(res, r);
  }

  void holder_class(const std::string& name, const Range& r, std::vector<Id>& out) {
    ClassInfo& ci = classes_[name];
    Class c;
    c.name = name;
    c.range = r;
    c.bases.push_back(b_.name(ci.holder_impl.empty() ? name + "Impl" : ci.holder_impl, r));
    Id id = b_.add_class(std::move(c));
    ci.id = id;
    Id st = b_.stmt(StmtKind::ClassDef, r);
    b_.s(st).cls = id;
    b_.m.classes[id].stmt = st;
    out.push_back(st);
  }

  void class_def(std::vector<Id>& out) {
    size_t b = p_;
    ++p_;  // struct/class
    while (is("alignas") || (tok().kind == T::Ident && tok().text.size() > 2 && tok().text[0] == '[')) ++p_;
    std::string name = is_id() ? std::string(tok().text) : "<anonymous>";
    if (is_id()) ++p_;
    while (is("final") || is("::") || is_id()) {
      if (is_id()) name = std::string(tok().text);
      ++p_;
    }
    // Bases.
    std::vector<std::pair<std::string, Range>> bases;
    if (is(":")) {
      ++p_;
      std::vector<std::string> cur;
      size_t cur_b = p_;
      while (!done() && !is("{")) {
        if (is("<")) {
          size_t close = template_args(p_);
          if (close) { p_ = close + 1; continue; }
        }
        if (is(",")) {
          if (!cur.empty()) bases.emplace_back(join(cur, "::"), span(cur_b, p_));
          cur.clear();
          ++p_;
          cur_b = p_;
          continue;
        }
        if (is_id() || (tok().kind == T::Ident && tok().text != "public" && tok().text != "private" &&
                        tok().text != "protected" && tok().text != "virtual"))
          if (is_id()) cur.emplace_back(tok().text);
        ++p_;
      }
      if (!cur.empty()) bases.emplace_back(join(cur, "::"), span(cur_b, p_));
    }
    if (!is("{")) { skip_statement(); return; }
    size_t open = p_, close = match(p_);
    ClassInfo& ci = classes_[name];
    if (ci.bases.empty())
      for (auto& bs : bases) ci.bases.push_back(bs.first);
    Class c;
    c.name = name;
    Range r = span(b, std::min(close + 1, toks_.size()));
    c.range = r;
    for (auto& [bn, br] : bases) c.bases.push_back(base_expr(bn, br));
    Id id = b_.add_class(std::move(c));
    classes_[name].id = id;
    Id st = b_.stmt(StmtKind::ClassDef, r);
    b_.s(st).cls = id;
    b_.m.classes[id].stmt = st;
    out.push_back(st);

    // Members: declarations first (fields), method bodies after, as C++ reads them.
    std::string saved_class = cur_class_;
    cur_class_ = name;
    std::vector<Id> body;
    std::vector<Deferred> deferred;
    p_ = open + 1;
    size_t saved_limit = limit_;
    limit_ = close;
    deferred_ = &deferred;
    while (!done()) {
      size_t start = p_;
      decl(body, name);
      if (p_ == start) ++p_;
    }
    deferred_ = nullptr;
    limit_ = saved_limit;
    p_ = close + 1;
    for (Deferred& d : deferred) lower_body(d);
    if (!classes_[name].has_ctor && !classes_[name].fields.empty()) {
      // Fields whose type says what they hold: a synthetic __init__ so `self.x` bindings exist.
      Id fst = kNone;
      Id fid = b_.synthetic_init(id, r, &fst);
      Id saved_func = cur_func_;
      cur_func_ = fid;
      std::vector<Id> fb = field_prologue(name, r);
      cur_func_ = saved_func;
      b_.m.funcs[fid].body = std::move(fb);
      body.push_back(fst);
    }
    cur_class_ = saved_class;
    b_.s(st).body = std::move(body);
    // `struct X {...} x;`
    if (is(";")) ++p_;
    else skip_statement();
  }

  std::vector<Deferred>* deferred_ = nullptr;

  std::vector<Id> field_prologue(const std::string& cls, const Range& fallback) {
    std::vector<Id> out;
    auto it = classes_.find(cls);
    if (it == classes_.end()) return out;
    for (const auto& [fname, tf] : it->second.fields) {
      if (tf.kind == ValueKind::Module || tf.kind == ValueKind::Optimizer || tf.kind == ValueKind::Scheduler ||
          tf.kind == ValueKind::JitMethod) {
        Id target = b_.attr(b_.name("self", fallback), fname, fallback);
        out.push_back(b_.typed_binding(target, tf.qname, tf.local_class, fallback));
      }
    }
    for (const auto& [fname, range] : it->second.field_inits) {
      size_t save = p_, lim = limit_;
      p_ = range.first;
      limit_ = range.second;
      TypeFacts tf;
      for (const auto& f : it->second.fields)
        if (f.first == fname) tf = f.second;
      Id v = initializer_value(tf, range.first);
      p_ = save;
      limit_ = lim;
      if (v == kNone) continue;
      Range r = span(range.first, range.second);
      Id st = b_.stmt(StmtKind::Assign, r);
      b_.s(st).targets.push_back(b_.attr(b_.name("self", r), fname, r));
      b_.s(st).value = v;
      out.push_back(st);
    }
    return out;
  }

  // A declaration at namespace, class or block scope: variables or a function.
  void declaration(std::vector<Id>& out, const std::string& cls, bool block) {
    size_t b = p_;
    // explicit/virtual/inline/static/constexpr ... before a constructor or a type.
    while (tok().kind == T::Ident && (tok().text == "explicit" || tok().text == "virtual" || tok().text == "inline" ||
                                      tok().text == "static" || tok().text == "constexpr" || tok().text == "friend" ||
                                      tok().text == "consteval" || tok().text == "extern"))
      ++p_;
    // Destructors, conversion operators and constructors have no leading type.
    bool ctor_like = false;
    if (!cls.empty() && ((is_id() && tok().text == cls && is("(", 1)) || (is("~") && tok(1).text == cls)))
      ctor_like = true;
    std::vector<std::string> qual_name;
    TypeFacts tf;
    if (!ctor_like) {
      // Out-of-line constructor `Net::Net(` / destructor `Net::~Net(`.
      size_t k = 0;
      std::vector<std::string> parts;
      while (tok(k).kind == T::Ident && !keyword(tok(k).text) && tok(k + 1).text == "::") {
        parts.emplace_back(tok(k).text);
        k += 2;
      }
      if (!parts.empty() && ((tok(k).text == parts.back() && tok(k + 1).text == "(") ||
                             (tok(k).text == "~" && tok(k + 1).text == parts.back()))) {
        ctor_like = true;
      } else if (!parse_type(tf)) {
        if (block) { expression_statement(out); return; }
        skip_statement();
        return;
      }
    }
    // Declarators (the first one's statement starts at the type).
    bool first = true;
    while (!done()) {
      size_t db = first ? b : p_;
      while (is("*") || is("&") || is("&&") || is("const")) ++p_;
      std::vector<std::string> name;
      bool operator_fn = false;
      if (is("[") && (tf.is_auto || ctor_like)) {
        // structured binding
        size_t close = match(p_);
        std::vector<std::string> names;
        for (size_t k = p_ + 1; k < close; ++k)
          if (at(k).kind == T::Ident) names.emplace_back(at(k).text);
        p_ = close + 1;
        var_declarator(out, tf, names, db, block);
        if (is(",")) { ++p_; continue; }
        break;
      }
      if (is("~")) { name.emplace_back("~"); ++p_; }
      if (is("::")) ++p_;
      while (is_id() || is("operator")) {
        if (is("operator")) {
          operator_fn = true;
          size_t ob = p_;
          ++p_;
          if (is("(") && is(")", 1)) p_ += 2;
          else while (!done() && !is("(")) ++p_;
          name.push_back(std::string(b_.src.substr(at(ob).b, at(p_ - 1).e - at(ob).b)));
          break;
        }
        std::string part(tok().text);
        if (!name.empty() && name.back() == "~") name.back() += part;
        else name.push_back(part);
        ++p_;
        if (is("<")) {
          size_t close = template_args(p_);
          if (close) p_ = close + 1;
        }
        if (is("::")) { ++p_; continue; }
        break;
      }
      if (name.empty()) {
        if (first && block) {
          p_ = b;
          expression_statement(out);
          return;
        }
        skip_statement();
        return;
      }
      first = false;
      if (is("(") && (ctor_like || operator_fn || tf.is_void || looks_like_parameters(p_) || function_body_follows(p_))) {
        function_def(out, name, tf, ctor_like, b, cls);
        return;
      }
      // A variable (or field).
      while (is("[")) p_ = match(p_) + 1;  // array dimensions
      std::vector<std::string> names{name.back()};
      if (!cls.empty() && !block) {
        field(cls, name.back(), tf);
      } else {
        var_declarator(out, tf, names, db, block);
      }
      if (is(",")) { ++p_; continue; }
      break;
    }
    if (is(";")) ++p_;
    else if (!at_statement_keyword()) skip_statement();
  }

  void field(const std::string& cls, const std::string& name, const TypeFacts& tf) {
    ClassInfo& ci = classes_[cls];
    ci.fields.emplace_back(name, tf);
    if (is("=") || is("{") || is("(")) {
      size_t ib = p_;
      size_t ie;
      if (is("=")) {
        ++p_;
        int d = 0;
        while (!done()) {
          if (is("(") || is("[") || is("{")) { p_ = match(p_) + 1; continue; }
          if (d == 0 && (is(";") || is(","))) break;
          ++p_;
        }
        ie = p_;
        ci.field_inits.emplace_back(name, std::make_pair(ib, ie));
        return;
      }
      ie = match(p_) + 1;
      ci.field_inits.emplace_back(name, std::make_pair(ib, ie));
      p_ = ie;
    }
  }

  // `(int a, torch::Tensor b = {})` rather than `(1, x)`: parameters.
  bool looks_like_parameters(size_t open) {
    size_t close = match(open);
    if (close == open + 1) return true;  // ()
    if (at(open + 1).text == "void" && close == open + 2) return true;
    size_t save = p_, lim = limit_;
    p_ = open + 1;
    limit_ = close;
    bool all = true;
    while (!done()) {
      TypeFacts t;
      if (is("...")) { ++p_; continue; }
      if (!parse_type(t)) { all = false; break; }
      if (is_id()) ++p_;
      else if (!t.builtin) { all = false; break; }  // `(torch::kCUDA)`: an argument, not a parameter
      while (is("[")) p_ = match(p_) + 1;
      if (is("=")) {
        skip_until({","});
      }
      if (is(",")) { ++p_; continue; }
      if (!done()) { all = false; break; }
    }
    p_ = save;
    limit_ = lim;
    return all;
  }

  bool function_body_follows(size_t open) const {
    size_t k = match(open) + 1;
    while (at(k).kind == T::Ident && (at(k).text == "const" || at(k).text == "noexcept" || at(k).text == "override" ||
                                      at(k).text == "final" || at(k).text == "mutable"))
      ++k;
    return at(k).kind == T::Punct && (at(k).text == "{" || at(k).text == "->" || at(k).text == ":");
  }

  void function_def(std::vector<Id>& out, const std::vector<std::string>& name, const TypeFacts& ret, bool ctor_like,
                    size_t b, const std::string& cls) {
    (void)ret;
    size_t open = p_, close = match(p_);
    // Parameters.
    std::vector<std::pair<std::string, TypeFacts>> params;
    {
      size_t save = p_, lim = limit_;
      p_ = open + 1;
      limit_ = close;
      int unnamed = 0;
      while (!done()) {
        TypeFacts t;
        if (is("...")) { ++p_; continue; }
        if (!parse_type(t)) {
          while (!done() && !is(",")) ++p_;
        }
        std::string pname;
        if (is_id()) { pname = std::string(tok().text); ++p_; }
        while (is("[")) p_ = match(p_) + 1;
        if (is("=")) {
          skip_until({","});
        }
        if (pname.empty() && !(t.builtin && t.resolved.empty() && !t.is_auto && close == open + 2))
          pname = "_arg" + std::to_string(unnamed++);
        if (!(t.builtin && pname.rfind("_arg", 0) == 0 && close == open + 2))
          params.emplace_back(pname, t);
        if (is(",")) ++p_;
        else if (!done()) ++p_;
      }
      p_ = save;
      limit_ = lim;
    }
    p_ = close + 1;
    // Qualifiers, trailing return type, = 0/default/delete.
    while (!done() && tok().kind == T::Ident &&
           (tok().text == "const" || tok().text == "noexcept" || tok().text == "override" || tok().text == "final" ||
            tok().text == "mutable" || tok().text == "volatile"))
      ++p_;
    if (is("noexcept") && is("(", 1)) p_ = match(p_ + 1) + 1;
    if (is("->")) {
      ++p_;
      TypeFacts t;
      parse_type(t);
    }
    size_t init_b = 0, init_e = 0;
    if (is(":")) {  // mem-initialisers
      ++p_;
      init_b = p_;
      // name[<...>](...) or name{...}, separated by commas; then the body's `{`.
      while (!done()) {
        if (is_id() || is("::")) {
          while (is_id() || is("::")) ++p_;
          if (is("<")) {
            size_t c = template_args(p_);
            if (c) p_ = c + 1;
          }
          if (is("(") || is("{")) p_ = match(p_) + 1;
          if (is("...")) ++p_;
          continue;
        }
        if (is(",")) { ++p_; continue; }
        break;
      }
      init_e = p_;
    }
    if (!is("{")) {  // a declaration only
      skip_statement();
      return;
    }
    size_t body_open = p_, body_close = match(p_);
    p_ = body_close + 1;
    // The function.
    std::string owner = cls;
    // `R Cls::method(...)`: a method, of a class this file defines or one from a header.
    if (name.size() >= 2 && (classes_.count(name[name.size() - 2]) || !namespaces_.count(name[name.size() - 2])))
      owner = name[name.size() - 2];
    std::string fname = name.back();
    bool is_ctor = ctor_like || (!owner.empty() && fname == owner);
    if (is_ctor && !fname.empty() && fname[0] == '~') is_ctor = false;
    if (!fname.empty() && fname[0] == '~') fname = "__del__";
    else if (is_ctor) fname = "__init__";
    else if (fname == "operator()") fname = "__call__";
    Range r = span(b, body_close + 1);
    Function f;
    f.name = fname;
    f.range = r;
    f.header = span(b, body_open);
    f.parent = kNone;
    Id cls_id = kNone;
    if (!owner.empty()) {
      auto it = classes_.find(owner);
      if (it != classes_.end()) {
        if (it->second.id == kNone) {
          // A class defined elsewhere (a header) whose methods this file defines.
          Class c;
          c.name = owner;
          c.range = r;
          Id id = b_.add_class(std::move(c));
          it->second.id = id;
          Id cst = b_.stmt(StmtKind::ClassDef, r);
          b_.s(cst).cls = id;
          b_.m.classes[id].stmt = cst;
          out.push_back(cst);
        }
        cls_id = it->second.id;
        if (is_ctor) it->second.has_ctor = true;
      } else {
        // Unknown class (defined in a header): still a method.
        ClassInfo& ci = classes_[owner];
        Class c;
        c.name = owner;
        c.range = r;
        Id id = b_.add_class(std::move(c));
        ci.id = id;
        Id cst = b_.stmt(StmtKind::ClassDef, r);
        b_.s(cst).cls = id;
        b_.m.classes[id].stmt = cst;
        out.push_back(cst);
        cls_id = id;
        if (is_ctor) ci.has_ctor = true;
      }
    }
    f.cls = cls_id;
    if (cls_id != kNone) f.params.push_back("self");
    for (const auto& pp : params) f.params.push_back(pp.first);
    if (body_open + 1 < body_close) f.body_indent = b_.lines.col_of(at(body_open + 1).b) - 1;
    Id fid = b_.add_function(std::move(f));
    Id st = b_.stmt(StmtKind::FunctionDef, r);
    b_.s(st).func = fid;
    b_.m.funcs[fid].stmt = st;
    if (cls_id != kNone) b_.m.classes[cls_id].methods.push_back(fid);
    out.push_back(st);
    Deferred d{fid, body_open + 1, body_close, params, owner, is_ctor, init_b, init_e};
    if (deferred_ && !cls.empty() && owner == cls) deferred_->push_back(std::move(d));
    else lower_body(d);
  }

  void lower_body(Deferred& d) {
    size_t save = p_, lim = limit_;
    Id saved_func = cur_func_;
    std::string saved_class = cur_class_;
    auto saved_scopes = std::move(scopes_);
    scopes_.clear();
    cur_func_ = d.func;
    cur_class_ = d.cls;
    push_scope();
    std::vector<Id> body;
    const Function& fn = b_.m.funcs[d.func];
    Range r = fn.range;
    for (const auto& [pname, pt] : d.params) {
      VarInfo vi;
      vi.type = pt;
      declare(pname, vi);
      if (pt.kind == ValueKind::Module || pt.kind == ValueKind::Optimizer || pt.kind == ValueKind::Scheduler ||
          pt.kind == ValueKind::JitMethod)
        body.push_back(b_.typed_binding(b_.name(pname, fn.header), pt.qname, pt.local_class, fn.header));
    }
    if (d.ctor) {
      for (Id s : field_prologue(d.cls, r)) body.push_back(s);
      if (d.init_end > d.init_begin) mem_initializers(d.init_begin, d.init_end, body);
    }
    p_ = d.body_begin;
    limit_ = d.body_end;
    block_statements(body, b_.lines.range(at(d.body_end).b, at(d.body_end).e).end);
    b_.m.funcs[d.func].body = std::move(body);
    scopes_ = std::move(saved_scopes);
    cur_func_ = saved_func;
    cur_class_ = saved_class;
    p_ = save;
    limit_ = lim;
  }

  void mem_initializers(size_t b, size_t e, std::vector<Id>& out) {
    size_t save = p_, lim = limit_;
    p_ = b;
    limit_ = e;
    while (!done()) {
      if (!is_id()) { ++p_; continue; }
      size_t nb = p_;
      std::string member(tok().text);
      ++p_;
      while (is("::") || is_id()) ++p_;
      if (is("<")) {
        size_t c = template_args(p_);
        if (c) p_ = c + 1;
      }
      if (!(is("(") || is("{"))) continue;
      size_t close = match(p_);
      bool is_field = false;
      auto it = classes_.find(cur_class_);
      TypeFacts tf;
      if (it != classes_.end())
        for (const auto& f : it->second.fields)
          if (f.first == member) { is_field = true; tf = f.second; }
      if (!is_field) { p_ = close + 1; continue; }
      size_t lim2 = limit_;
      limit_ = close + 1;
      size_t mark = hoisted_.size();
      Id v = initializer_value(tf, nb);
      limit_ = lim2;
      p_ = close + 1;
      if (v == kNone) continue;
      Range r = span(nb, close + 1);
      Id st = b_.stmt(StmtKind::Assign, r);
      b_.s(st).targets.push_back(b_.attr(b_.name("self", r), member, r));
      b_.s(st).value = v;
      flush(out, mark);
      out.push_back(st);
      if (is(",")) ++p_;
    }
    p_ = save;
    limit_ = lim;
  }

  // ------------------------------------------------------------------ statements
  void flush(std::vector<Id>& out, size_t mark) {
    for (size_t i = mark; i < hoisted_.size(); ++i) out.push_back(hoisted_[i]);
    hoisted_.resize(mark);
  }

  // Statements up to the limit; a grad guard makes the rest of the block its body.
  void block_statements(std::vector<Id>& out, uint32_t scope_end) {
    while (!done()) {
      size_t start = p_;
      if (++depth_ > kMaxDepth) {
        too_deep(since(start));
        --depth_;
        p_ = std::min(limit_, toks_.size());
        return;
      }
      // An RAII guard?
      TypeFacts tf;
      size_t save = p_;
      if (parse_type(tf) && tf.guard != GuardKind::None && is_id()) {
        std::string var(tok().text);
        ++p_;
        Id arg = kNone;
        size_t mark = hoisted_.size();
        if (is("(") || is("{")) {
          size_t close = match(p_);
          size_t lim = limit_;
          limit_ = close;
          ++p_;
          if (!done()) arg = assignment();
          limit_ = lim;
          p_ = close + 1;
        } else if (is("=")) {
          // auto-free: `torch::NoGradGuard g = torch::NoGradGuard();`
          skip_until({";"});
        }
        if (is(";")) ++p_;
        Range dr = since(save);
        flush(out, mark);
        std::vector<Id> rest;
        block_statements(rest, scope_end);
        out.push_back(b_.guard(tf.guard, split_qualified(tf.resolved).back(), arg, var, dr, scope_end, std::move(rest)));
        --depth_;
        return;
      }
      p_ = save;
      statement(out);
      if (p_ == start) ++p_;
      --depth_;
    }
  }

  // Advances to the next token among `stops` at this nesting level (or to the end),
  // stepping over bracketed groups whole.
  void skip_until(std::initializer_list<std::string_view> stops) {
    auto stop = [&] {
      for (std::string_view t : stops)
        if (is(t)) return true;
      return false;
    };
    while (!done() && !stop()) {
      if (is("(") || is("{") || is("[")) p_ = match(p_) + 1;
      else ++p_;
    }
  }

  std::vector<Id> sub_statement() {
    std::vector<Id> out;
    if (is("{")) {
      size_t close = match(p_);
      size_t lim = limit_;
      ++p_;
      limit_ = close;
      push_scope();
      block_statements(out, at(close).e);
      pop_scope();
      limit_ = lim;
      p_ = close + 1;
    } else {
      push_scope();
      statement(out);
      pop_scope();
    }
    return out;
  }

  Id paren_condition(std::vector<Id>& pre) {
    // `( [init;] cond )`; a declaration in the condition binds a name.
    if (!is("(")) return b_.expr(ExprKind::Other, since(p_));
    size_t close = match(p_);
    size_t lim = limit_;
    ++p_;
    limit_ = close;
    // init-statement?
    size_t semi = 0;
    for (size_t k = p_; k < close; ++k) {
      if (at(k).kind == T::Punct && (at(k).text == "(" || at(k).text == "{" || at(k).text == "[")) { k = match(k); continue; }
      if (at(k).kind == T::Punct && at(k).text == ";") { semi = k; break; }
    }
    if (semi) {
      size_t l2 = limit_;
      limit_ = semi + 1;
      statement(pre);
      limit_ = l2;
      p_ = semi + 1;
    }
    Id cond;
    size_t save = p_;
    TypeFacts tf;
    if (parse_type(tf) && is_id() && (is("=", 1) || is("{", 1))) {
      std::string var(tok().text);
      size_t vb = save;
      ++p_;
      Id value = initializer_value(tf, vb);
      Range r = since(vb);
      VarInfo vi;
      vi.type = tf;
      vi.init = value;
      declare(var, vi);
      if (value != kNone) {
        Id st = b_.stmt(StmtKind::Assign, r);
        b_.s(st).targets.push_back(b_.name(var, r));
        b_.s(st).value = value;
        pre.push_back(st);
      }
      cond = b_.name(var, r);
    } else {
      p_ = save;
      cond = done() ? b_.expr(ExprKind::Other, since(save)) : expression();
    }
    limit_ = lim;
    p_ = close + 1;
    return cond;
  }

  Range stmt_range(size_t b) const { return since(b); }

  void statement(std::vector<Id>& out) {
    size_t b = p_;
    if (depth_ > kMaxDepth) {
      too_deep(since(b));
      p_ = std::min(limit_, toks_.size());
      return;
    }
    ++depth_;
    struct Dec { int& d; ~Dec() { --d; } } dec{depth_};
    size_t mark = hoisted_.size();
    std::vector<Id> made;
    statement_inner(made, out);
    flush(out, mark);
    for (Id s : made) out.push_back(s);
    (void)b;
  }

  void statement_inner(std::vector<Id>& made, std::vector<Id>& out) {
    size_t b = p_;
    if (is(";")) { ++p_; return; }
    if (is("{")) {
      Id st = b_.stmt(StmtKind::Other, since(b));
      std::vector<Id> body = sub_statement();
      b_.s(st).body = std::move(body);
      b_.s(st).text = "block";
      b_.s(st).range = since(b);
      made.push_back(st);
      return;
    }
    if (is("if")) {
      ++p_;
      if (is("constexpr") || is("!")) ++p_;
      push_scope();
      std::vector<Id> pre;
      Id cond = paren_condition(pre);
      for (Id x : pre) out.push_back(x);
      Id st = b_.stmt(StmtKind::If, since(b));
      b_.s(st).value = cond;
      std::vector<Id> body = sub_statement();
      std::vector<Id> orelse;
      if (is("else")) {
        ++p_;
        orelse = sub_statement();
      }
      pop_scope();
      b_.s(st).body = std::move(body);
      b_.s(st).orelse = std::move(orelse);
      b_.s(st).range = since(b);
      made.push_back(st);
      return;
    }
    if (is("for")) { for_statement(made, out); return; }
    if (is("while")) {
      ++p_;
      push_scope();
      std::vector<Id> pre;
      Id cond = paren_condition(pre);
      Id st = b_.stmt(StmtKind::While, since(b));
      b_.s(st).value = cond;
      std::vector<Id> body = pre;
      for (Id x : sub_statement()) body.push_back(x);
      pop_scope();
      b_.s(st).body = std::move(body);
      b_.s(st).range = since(b);
      made.push_back(st);
      return;
    }
    if (is("do")) {
      ++p_;
      Id st = b_.stmt(StmtKind::While, since(b));
      std::vector<Id> body = sub_statement();
      Id cond = kNone;
      if (is("while")) {
        ++p_;
        std::vector<Id> pre;
        cond = paren_condition(pre);
      }
      if (is(";")) ++p_;
      b_.s(st).value = cond == kNone ? b_.expr(ExprKind::Other, since(b)) : cond;
      b_.s(st).body = std::move(body);
      b_.s(st).text = "do";
      b_.s(st).range = since(b);
      made.push_back(st);
      return;
    }
    if (is("switch")) {
      ++p_;
      push_scope();
      std::vector<Id> pre;
      Id cond = paren_condition(pre);
      for (Id x : pre) out.push_back(x);
      Id st = b_.stmt(StmtKind::If, since(b));
      b_.s(st).value = cond;
      std::vector<Id> body = sub_statement();
      pop_scope();
      b_.s(st).body = std::move(body);
      b_.s(st).text = "switch";
      b_.s(st).range = since(b);
      made.push_back(st);
      return;
    }
    if (is("case") || is("default")) {
      // case X: / default:  (a label; the statement after it is lowered next)
      while (!done() && !(is(":") && !is("::"))) {
        if (is("(")) p_ = match(p_) + 1;
        else ++p_;
      }
      if (is(":")) ++p_;
      return;
    }
    if (is_id() && is(":", 1) && !is("::", 1)) {  // label
      p_ += 2;
      return;
    }
    if (is("return") || is("co_return")) {
      ++p_;
      Id v = is(";") ? kNone : expression();
      if (is(";")) ++p_;
      Id st = b_.stmt(StmtKind::Return, since(b));
      b_.s(st).value = v;
      made.push_back(st);
      return;
    }
    if (is("break") || is("continue")) {
      bool brk = is("break");
      ++p_;
      if (is(";")) ++p_;
      made.push_back(b_.stmt(brk ? StmtKind::Break : StmtKind::Continue, since(b)));
      return;
    }
    if (is("goto")) { skip_statement(); return; }
    if (is("throw")) {
      ++p_;
      Id v = is(";") ? kNone : expression();
      if (is(";")) ++p_;
      Id st = b_.stmt(StmtKind::Raise, since(b));
      b_.s(st).value = v;
      made.push_back(st);
      return;
    }
    if (is("try")) { try_statement(made); return; }
    if (is("using")) { using_decl(); return; }
    if (is("typedef")) { typedef_decl(); return; }
    if (is("namespace")) {  // namespace alias in a block
      std::vector<Id> dummy;
      decl(dummy, "");
      return;
    }
    if (is("static_assert")) { skip_statement(); return; }
    if ((is("struct") || is("class")) && is_class_definition()) { class_def(made); return; }
    if (is("enum")) { skip_statement(); return; }
    if (is("template")) { skip_statement(); return; }
    if (is("delete")) {
      ++p_;
      if (is("[") && is("]", 1)) p_ += 2;
      Id t = expression();
      if (is(";")) ++p_;
      Id st = b_.stmt(StmtKind::Delete, since(b));
      b_.s(st).targets.push_back(t);
      made.push_back(st);
      return;
    }
    // A declaration or an expression.
    if (looks_like_declaration()) {
      declaration(made, "", /*block=*/true);
      return;
    }
    expression_statement(made);
  }

  bool looks_like_declaration() {
    size_t save = p_;
    TypeFacts tf;
    bool ok = false;
    if (parse_type(tf)) {
      while (is("*") || is("&") || is("&&")) ++p_;
      if (is("[") && tf.is_auto) ok = true;
      else if (is_id()) {
        const Tok& n = tok(1);
        ok = n.kind == T::Punct && (n.text == "=" || n.text == "(" || n.text == "{" || n.text == ";" ||
                                    n.text == "," || n.text == "[" || n.text == ":");
        if (n.kind == T::End) ok = true;
      }
    }
    p_ = save;
    return ok;
  }

  void for_statement(std::vector<Id>& made, std::vector<Id>& out) {
    size_t b = p_;
    ++p_;
    if (!is("(")) { skip_statement(); return; }
    size_t open = p_, close = match(p_);
    // Range-for: a top-level ':' inside the parentheses.
    size_t colon = 0, semi = 0;
    for (size_t k = open + 1; k < close; ++k) {
      const Tok& t = at(k);
      if (t.kind != T::Punct) continue;
      if (t.text == "(" || t.text == "{" || t.text == "[") { k = match(k); continue; }
      if (t.text == "<") {
        size_t c = template_args(k);
        if (c) { k = c; continue; }
      }
      if (t.text == ";" && !semi) semi = k;
      if (t.text == ":" && !colon && !semi) colon = k;
    }
    push_scope();
    size_t lim = limit_;
    if (colon && !semi) {
      // for (decl : range)
      limit_ = colon;
      p_ = open + 1;
      TypeFacts tf;
      parse_type(tf);
      while (is("*") || is("&") || is("&&")) ++p_;
      Id target;
      size_t tb = p_;
      if (is("[")) {
        size_t c = match(p_);
        std::vector<Id> kids;
        for (size_t k = p_ + 1; k < c; ++k)
          if (at(k).kind == T::Ident) {
            kids.push_back(b_.name(std::string(at(k).text), span(k, k + 1)));
            declare(std::string(at(k).text), VarInfo{});
          }
        target = b_.expr(ExprKind::Sequence, span(tb, c + 1), "tuple", kids);
      } else {
        std::string var = is_id() ? std::string(tok().text) : "_";
        target = b_.name(var, span(tb, tb + 1));
        VarInfo vi;
        vi.type = tf;
        declare(var, vi);
      }
      limit_ = close;
      p_ = colon + 1;
      Id iter = done() ? b_.expr(ExprKind::Other, since(colon)) : expression();
      limit_ = lim;
      p_ = close + 1;
      Id st = b_.stmt(StmtKind::For, since(b));
      b_.s(st).value = iter;
      b_.s(st).targets.push_back(target);
      std::vector<Id> body = sub_statement();
      b_.s(st).body = std::move(body);
      b_.s(st).range = since(b);
      made.push_back(st);
      pop_scope();
      return;
    }
    // for (init; cond; inc)
    std::vector<Id> targets;
    size_t semi2 = 0;
    if (semi)
      for (size_t k = semi + 1; k < close; ++k) {
        const Tok& t = at(k);
        if (t.kind != T::Punct) continue;
        if (t.text == "(" || t.text == "{" || t.text == "[") { k = match(k); continue; }
        if (t.text == ";") { semi2 = k; break; }
      }
    if (semi) {
      limit_ = semi + 1;
      p_ = open + 1;
      std::vector<Id> init;
      if (!is(";")) statement(init);
      for (Id s : init) {
        out.push_back(s);
        const Stmt& st = b_.m.stmts[s];
        if ((st.kind == StmtKind::Assign || st.kind == StmtKind::AnnAssign) && !st.targets.empty())
          targets.push_back(b_.name(b_.m.exprs[st.targets[0]].text, b_.m.exprs[st.targets[0]].range));
      }
    }
    Id cond = kNone, inc_stmt = kNone;
    if (semi && semi2) {
      limit_ = semi2;
      p_ = semi + 1;
      if (!done()) cond = expression();
      limit_ = close;
      p_ = semi2 + 1;
      if (!done()) {
        size_t ib = p_;
        Id inc = expression();
        inc_stmt = b_.stmt(StmtKind::Expr, since(ib));
        b_.s(inc_stmt).value = inc;
      }
    }
    limit_ = lim;
    p_ = close + 1;
    Id st = b_.stmt(StmtKind::For, since(b));
    b_.s(st).value = cond == kNone ? b_.expr(ExprKind::Other, span(open, close + 1)) : cond;
    b_.s(st).targets = std::move(targets);
    std::vector<Id> body = sub_statement();
    if (inc_stmt != kNone) body.push_back(inc_stmt);
    b_.s(st).body = std::move(body);
    b_.s(st).range = since(b);
    made.push_back(st);
    pop_scope();
  }

  void try_statement(std::vector<Id>& made) {
    size_t b = p_;
    ++p_;
    Id st = b_.stmt(StmtKind::Try, since(b));
    std::vector<Id> body = sub_statement();
    std::vector<Handler> handlers;
    while (is("catch")) {
      size_t hb = p_;
      ++p_;
      Handler h;
      push_scope();
      if (is("(")) {
        size_t close = match(p_);
        size_t lim = limit_;
        limit_ = close;
        ++p_;
        if (!is("...")) {
          TypeFacts tf;
          size_t tb = p_;
          if (parse_type(tf)) h.type = b_.qualified(tf.resolved.empty() ? "exception" : tf.resolved, since(tb));
          if (is_id()) {
            h.name = std::string(tok().text);
            declare(h.name, VarInfo{});
          }
        }
        limit_ = lim;
        p_ = close + 1;
      }
      h.body = sub_statement();
      pop_scope();
      h.range = since(hb);
      handlers.push_back(std::move(h));
    }
    b_.s(st).body = std::move(body);
    b_.s(st).handlers = std::move(handlers);
    b_.s(st).range = since(b);
    made.push_back(st);
  }

  // `T x = v;`, `T x(args);`, `T x{args};`, `T x;` (p_ after the declarator name).
  void var_declarator(std::vector<Id>& out, const TypeFacts& tf, const std::vector<std::string>& names, size_t db,
                      bool block) {
    size_t vb = db;
    if (names.size() == 1 && is("=") && is("[", 1)) pending_lambda_name_ = names[0];
    Id value = initializer_value(tf, vb);
    TypeFacts vt = tf;
    if (tf.is_auto && value != kNone) vt = facts_of_value(value);
    Range r = since(vb);
    if (is(";")) r = b_.range(r.begin, tok().e);
    auto target = [&]() -> Id {
      if (names.size() == 1) return b_.name(names[0], b_.range(r.begin, r.end));
      std::vector<Id> kids;
      for (const auto& n : names) kids.push_back(b_.name(n, r));
      return b_.expr(ExprKind::Sequence, r, "tuple", kids);
    };
    bool direct = false;
    if (value != kNone && b_.e(value).kind == ExprKind::Call) {
      const ll::Expr& callee = b_.e(b_.e(value).kids[0]);
      direct = (!vt.local_class.empty() && callee.text == vt.local_class && callee.qname.empty()) ||
               (!vt.qname.empty() && callee.qname == vt.qname);
    }
    bool interesting = vt.kind == ValueKind::Module || vt.kind == ValueKind::Optimizer ||
                       vt.kind == ValueKind::Scheduler || vt.kind == ValueKind::JitMethod;
    if (interesting && !direct) out.push_back(b_.typed_binding(target(), vt.qname, vt.local_class, r));
    for (const auto& n : names) {
      VarInfo vi;
      vi.type = vt;
      vi.init = value;
      declare(n, vi);
    }
    (void)block;
    if (value == kNone) return;
    Id st = b_.stmt(StmtKind::Assign, r);
    b_.s(st).targets.push_back(target());
    b_.s(st).value = value;
    out.push_back(st);
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
    if (e.kind == ExprKind::Sequence && e.text == "list") { f.kind = ValueKind::Container; return f; }
    if (e.kind != ExprKind::Call) return f;
    const ll::Expr& callee = b_.m.exprs[e.kids[0]];
    if (callee.kind == ExprKind::Name && callee.qname.empty() && classes_.count(callee.text)) return facts_of_name(callee.text);
    if (callee.qname == "torch.jit.load") { f.kind = ValueKind::Module; f.qname = "torch.nn.Module"; return f; }
    if (callee.kind == ExprKind::Attribute && callee.text == "get_method") { f.kind = ValueKind::JitMethod; return f; }
    if (!callee.qname.empty()) {
      // A construction of a library class (`torch::optim::SGD(...)`): its kind.
      static const std::pair<const char*, ValueKind> prefixes[] = {
          {"torch.optim.lr_scheduler.", ValueKind::Scheduler}, {"torch.optim.", ValueKind::Optimizer},
          {"torch.nn.", ValueKind::Module}};
      for (auto [p, k] : prefixes)
        if (callee.qname.rfind(p, 0) == 0 && std::isupper(static_cast<unsigned char>(callee.text[0]))) {
          f.kind = k;
          f.qname = callee.qname;
          return f;
        }
      if (callee.qname == "torch.Tensor") f.kind = ValueKind::Tensor;
    }
    return f;
  }

  Id initializer_value(const TypeFacts& tf, size_t b) {
    if (is("=")) {
      ++p_;
      if (is("{")) return braced(tf, b);
      return assignment();
    }
    if (is("(") || is("{")) return braced(tf, b);
    // Default construction.
    if (tf.builtin || tf.is_auto) return kNone;
    Range r = since(b);
    if (tf.kind == ValueKind::Tensor || tf.smart || tf.kind == ValueKind::SmartPtr)
      return b_.literal(LitKind::None, "None", r);
    if (tf.kind == ValueKind::Container) return b_.expr(ExprKind::Sequence, r, "list");
    if (tf.resolved.empty()) return kNone;
    return b_.call(type_callee(tf, r), {}, r);
  }

  Id type_callee(const TypeFacts& tf, const Range& r) {
    if (!tf.local_class.empty()) return b_.name(tf.local_class, r);
    if (!tf.qname.empty()) return b_.model_name(tf.qname, r);
    return b_.qualified(tf.resolved.empty() ? "object" : tf.resolved, r);
  }

  // `(args)` / `{args}` after a declarator or a type name: a construction.
  Id braced(const TypeFacts& tf, size_t b) {
    bool brace = is("{");
    size_t close = match(p_);
    std::vector<Id> args = call_args(close);
    Range r = since(b);
    if (tf.kind == ValueKind::Container) return b_.expr(ExprKind::Sequence, r, "list", brace ? args : std::vector<Id>{});
    bool null = args.size() == 1 && b_.e(args[0]).kind == ExprKind::Literal && b_.e(args[0]).lit == LitKind::None;
    if ((tf.kind == ValueKind::Tensor || tf.smart || tf.kind == ValueKind::SmartPtr) && args.empty())
      return b_.literal(LitKind::None, "None", r);
    if ((tf.holder || tf.smart || tf.kind == ValueKind::Tensor) && null) return b_.literal(LitKind::None, "None", r);
    if (tf.builtin || tf.is_auto) return args.size() == 1 ? args[0] : b_.expr(ExprKind::Sequence, r, "list", args);
    if (tf.resolved.empty()) return args.size() == 1 ? args[0] : b_.expr(ExprKind::Other, r, "", args);
    return b_.call(type_callee(tf, r), args, r);
  }

  // Arguments between p_ (at `(` or `{`) and `close`; p_ ends after `close`.
  std::vector<Id> call_args(size_t close) {
    std::vector<Id> args;
    size_t lim = limit_;
    limit_ = close;
    ++p_;
    while (!done()) {
      size_t start = p_;
      args.push_back(assignment());
      if (is(",")) ++p_;
      else if (!done() && p_ == start) ++p_;
      else if (!done()) {
        // Something we could not read: skip to the next comma.
        skip_until({","});
        if (is(",")) ++p_;
      }
    }
    limit_ = lim;
    p_ = close + 1;
    return args;
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

  void expression_statement(std::vector<Id>& made) {
    size_t b = p_;
    Id e = expression();
    if (is(";")) ++p_;
    else if (!at_statement_keyword()) skip_statement();
    Range r = since(b);
    const ll::Expr& x = b_.e(e);
    if (x.kind == ExprKind::BinOp && x.kids.size() == 2 && is_assign_op(x.text)) {
      Id lhs = x.kids[0], rhs = x.kids[1];
      std::string op = x.text;
      // std::tie(h, c) = f(...)  ->  h, c = f(...)
      // std::forward_as_tuple(out, std::tie(h, c)) = f(...)  ->  out, (h, c) = f(...)
      if (op == "=") lhs = tie_target(lhs);
      Id st = b_.stmt(op == "=" ? StmtKind::Assign : StmtKind::AugAssign, r);
      b_.s(st).targets.push_back(lhs);
      b_.s(st).value = rhs;
      if (op != "=") b_.s(st).text = op;
      made.push_back(st);
      return;
    }
    // Releases: `p.reset()` on smart pointers and tensors, `v.clear()` on containers.
    if (x.kind == ExprKind::Call && x.kids.size() == 1) {
      const ll::Expr& callee = b_.e(x.kids[0]);
      if (callee.kind == ExprKind::Attribute && (callee.text == "reset" || callee.text == "clear") &&
          !callee.kids.empty() && b_.e(callee.kids[0]).kind == ExprKind::Name) {
        const VarInfo* vi = lookup(b_.e(callee.kids[0]).text);
        bool arrow = b_.src.substr(b_.e(callee.kids[0]).range.end, 2) == "->";
        bool release = vi && (callee.text == "reset" ? (vi->type.smart || vi->type.kind == ValueKind::Tensor ||
                                                        vi->type.kind == ValueKind::SmartPtr) && !arrow
                                                     : vi->type.kind == ValueKind::Container);
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

  static bool is_assign_op(const std::string& op) {
    return op == "=" || op == "+=" || op == "-=" || op == "*=" || op == "/=" || op == "%=" || op == "&=" ||
           op == "|=" || op == "^=" || op == "<<=" || op == ">>=";
  }

  // ------------------------------------------------------------------ expressions
  Id expression() {
    size_t b = p_;
    Id e = assignment();
    if (is(",")) {
      std::vector<Id> kids{e};
      while (is(",")) {
        ++p_;
        if (done()) break;
        kids.push_back(assignment());
      }
      return b_.expr(ExprKind::Other, since(b), ",", kids);
    }
    return e;
  }

  Id assignment() {
    size_t b = p_;
    if (++depth_ > kMaxDepth) {
      too_deep(since(b));
      --depth_;
      skip_until({";", ","});
      return b_.expr(ExprKind::Other, since(b));
    }
    Id lhs = ternary();
    if (tok().kind == T::Punct && is_assign_op(std::string(tok().text))) {
      std::string op(tok().text);
      ++p_;
      Id rhs = is("{") ? braced(TypeFacts{}, p_) : assignment();
      --depth_;
      return b_.expr(ExprKind::BinOp, since(b), op, {lhs, rhs});
    }
    // `a >> = b` never happens; `>` `>=` from `>>=` is handled by the lexer as one token.
    --depth_;
    return lhs;
  }

  Id ternary() {
    size_t b = p_;
    Id c = binary(1);
    if (is("?")) {
      ++p_;
      Id a = assignment();
      if (is(":")) ++p_;
      Id z = assignment();
      return b_.expr(ExprKind::Conditional, since(b), "", {a, c, z});
    }
    return c;
  }

  int precedence(std::string* op) {
    const Tok& t = tok();
    if (t.kind != T::Punct) return 0;
    std::string x(t.text);
    if (x == ">" && tok(1).joined && tok(1).text == ">") x = ">>";
    static const std::unordered_map<std::string, int> prec = {
        {"||", 1}, {"&&", 2}, {"|", 3},  {"^", 4},  {"&", 5},  {"==", 6}, {"!=", 6}, {"<", 7},  {">", 7},
        {"<=", 7}, {">=", 7}, {"<=>", 7}, {"<<", 8}, {">>", 8}, {"+", 9},  {"-", 9},  {"*", 10}, {"/", 10},
        {"%", 10}, {".*", 11}, {"->*", 11}};
    auto it = prec.find(x);
    if (it == prec.end()) return 0;
    *op = x;
    return it->second;
  }

  Id binary(int min_prec) {
    size_t b = p_;
    Id lhs = unary();
    std::vector<Id> flat;  // operands past kMaxDepth: kept flat, so the model stays shallow
    for (int chain = 0; !done(); ++chain) {
      std::string op;
      int pr = precedence(&op);
      if (pr == 0 || pr < min_prec) break;
      p_ += op == ">>" && tok().text == ">" ? 2 : 1;
      Id rhs = binary(pr + 1);
      if (chain >= kMaxDepth / 2) {
        flat.push_back(rhs);
        continue;
      }
      ExprKind k = (pr == 6 || pr == 7) ? ExprKind::Compare : (pr <= 2 ? ExprKind::BoolOp : ExprKind::BinOp);
      std::string text = op == "&&" ? "and" : op == "||" ? "or" : op;
      lhs = b_.expr(k, since(b), text, {lhs, rhs});
    }
    if (!flat.empty()) {
      flat.insert(flat.begin(), lhs);
      lhs = b_.expr(ExprKind::Other, since(b), "", flat);
    }
    return lhs;
  }

  Id unary() {
    size_t b = p_;
    if (done()) return b_.expr(ExprKind::Other, since(b));
    if (tok().kind == T::Punct) {
      std::string_view x = tok().text;
      if (x == "-" || x == "+" || x == "!" || x == "~" || x == "*" || x == "&" || x == "++" || x == "--" ||
          x == "&&") {
        ++p_;
        if (++depth_ > kMaxDepth) {
          too_deep(since(b));
          --depth_;
          while (!done() && !is(";") && !is(",") && !is(")")) ++p_;
          return b_.expr(ExprKind::Other, since(b));
        }
        Id a = unary();
        --depth_;
        if (x == "*") return a;  // `*loader`, `*ptr`: the object itself
        return b_.expr(ExprKind::UnaryOp, since(b), x == "!" ? "not" : std::string(x), {a});
      }
      // C-style cast of a builtin type: (double)x
      if (x == "(" && tok(1).kind == T::Ident && builtin_type_word(tok(1).text)) {
        size_t close = match(p_);
        bool cast = true;
        for (size_t k = p_ + 1; k < close; ++k)
          if (!(at(k).kind == T::Ident && (builtin_type_word(at(k).text) || at(k).text == "const")) &&
              !(at(k).kind == T::Punct && (at(k).text == "*" || at(k).text == "&")))
            cast = false;
        if (cast && close + 1 < std::min(limit_, toks_.size())) {
          p_ = close + 1;
          return unary();
        }
      }
    }
    if (tok().kind == T::Ident) {
      std::string_view w = tok().text;
      if (w == "sizeof" || w == "alignof" || w == "typeid" || w == "decltype" || w == "noexcept") {
        ++p_;
        if (is("...")) ++p_;
        if (is("(")) p_ = match(p_) + 1;
        else unary();
        return b_.expr(ExprKind::Other, since(b), std::string(w));
      }
      if (w == "new") {
        ++p_;
        if (is("(")) p_ = match(p_) + 1;  // placement
        TypeFacts tf;
        parse_type(tf);
        if (is("(") || is("{")) return braced(tf, b);
        while (is("[")) p_ = match(p_) + 1;
        return b_.call(type_callee(tf, since(b)), {}, since(b));
      }
      if (w == "delete") {
        ++p_;
        if (is("[") && is("]", 1)) p_ += 2;
        Id a = unary();
        return b_.expr(ExprKind::Other, since(b), "delete", {a});
      }
      if (w == "throw" || w == "co_await" || w == "co_yield") {
        ++p_;
        Id a = is(";") || is(")") ? kNone : assignment();
        return b_.expr(ExprKind::Other, since(b), std::string(w), a == kNone ? std::vector<Id>{} : std::vector<Id>{a});
      }
    }
    return postfix(primary());
  }

  Id postfix(Id cur) {
    uint32_t begin = cur == kNone ? tok().b : start_of(cur);
    for (int chain = 0; !done(); ++chain) {
      if (chain > kMaxDepth / 2) {
        // A chain this long (a.b.c... / f()()...): keep what was built, skip the rest.
        if (is("(") || is("[")) { p_ = match(p_) + 1; continue; }
        if ((is(".") || is("->")) && (tok(1).kind == T::Ident)) { p_ += 2; continue; }
        if (is("++") || is("--")) { ++p_; continue; }
        break;
      }
      if (is("(")) {
        size_t close = match(p_);
        std::vector<Id> args = call_args(close);
        cur = make_call(cur, std::move(args), 0);
        continue;
      }
      if (is("[")) {
        size_t close = match(p_);
        size_t lim = limit_;
        limit_ = close;
        ++p_;
        Id idx = done() ? b_.expr(ExprKind::Other, since(p_)) : expression();
        limit_ = lim;
        p_ = close + 1;
        cur = b_.expr(ExprKind::Subscript, from(begin), "", {cur, idx});
        continue;
      }
      if (is(".") || is("->")) {
        ++p_;
        if (is("template")) ++p_;
        if (is("~")) ++p_;
        if (!is_id() && !is("operator")) break;
        std::string member(tok().text);
        ++p_;
        if (is("<")) {
          size_t close = template_args(p_);
          if (close) p_ = close + 1;
        }
        cur = b_.attr(cur, member, from(begin));
        continue;
      }
      if (is("++") || is("--")) {
        std::string op(tok().text);
        ++p_;
        cur = b_.expr(ExprKind::UnaryOp, from(begin), op, {cur});
        continue;
      }
      break;
    }
    return cur;
  }

  uint32_t start_of(Id e) const { return b_.m.exprs[e].range.begin; }
  Range from(uint32_t begin) const { return b_.range(begin, prev_e()); }

  Id make_call(Id callee, std::vector<Id> args, size_t /*b*/) {
    uint32_t begin = start_of(callee);
    Range r = from(begin);
    ll::Expr& c = b_.e(callee);
    // Member calls: container methods, jit::Method::run, options.
    if (c.kind == ExprKind::Attribute && !c.kids.empty()) {
      std::string m = c.text;
      std::string mapped = container_method(m);
      if (mapped != m && (m == "push_back" || m == "emplace_back" || m == "push_front" || m == "emplace_front")) {
        b_.e(callee).text = mapped;
      } else if ((m == "insert" || m == "emplace") && b_.e(c.kids[0]).kind == ExprKind::Name) {
        const VarInfo* vi = lookup(b_.e(b_.e(callee).kids[0]).text);
        if (vi && vi->type.kind == ValueKind::Container) b_.e(callee).text = "insert";
      } else if (m == "run" && b_.e(c.kids[0]).kind == ExprKind::Name) {
        const VarInfo* vi = lookup(b_.e(b_.e(callee).kids[0]).text);
        if (vi && vi->type.kind == ValueKind::JitMethod) b_.e(callee).text = "forward";
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

  std::string unquote(std::string_view lit) const {
    // "abc" "def" -> abcdef (simple escapes only)
    std::string out;
    size_t q = lit.find('"');
    if (q == std::string_view::npos) return std::string(lit);
    if (q > 0 && lit[q - 1] == 'R') {
      size_t open = lit.find('(', q), close = lit.rfind(')');
      if (open != std::string_view::npos && close != std::string_view::npos && close > open)
        return std::string(lit.substr(open + 1, close - open - 1));
    }
    for (size_t i = q + 1; i + 1 < lit.size(); ++i) {
      if (lit[i] == '\\' && i + 2 < lit.size()) {
        char n = lit[++i];
        out.push_back(n == 'n' ? '\n' : n == 't' ? '\t' : n);
        continue;
      }
      out.push_back(lit[i]);
    }
    return out;
  }

  Id lambda() {
    size_t b = p_;
    p_ = match(p_) + 1;  // captures
    std::vector<std::pair<std::string, TypeFacts>> params;
    if (is("(")) {
      size_t close = match(p_);
      size_t lim = limit_;
      limit_ = close;
      ++p_;
      while (!done()) {
        TypeFacts t;
        if (!parse_type(t)) { ++p_; continue; }
        if (is_id()) { params.emplace_back(std::string(tok().text), t); ++p_; }
        skip_until({","});
        if (is(",")) ++p_;
      }
      limit_ = lim;
      p_ = close + 1;
    }
    while (!done() && !is("{")) {
      if (is("(")) p_ = match(p_) + 1;
      else ++p_;
    }
    if (!is("{")) return b_.expr(ExprKind::Other, since(b));
    size_t open = p_, close = match(p_);
    p_ = close + 1;
    Range r = since(b);
    std::string name = pending_lambda_name_.empty()
                           ? "<lambda:" + std::to_string(r.line) + ":" + std::to_string(r.col) + ">"
                           : pending_lambda_name_;
    pending_lambda_name_.clear();
    Function f;
    f.name = name;
    f.parent = cur_func_;
    f.range = r;
    f.header = r;
    for (const auto& pp : params) f.params.push_back(pp.first);
    Id fid = b_.add_function(std::move(f));
    Id st = b_.stmt(StmtKind::FunctionDef, r);
    b_.s(st).func = fid;
    b_.m.funcs[fid].stmt = st;
    // The body sees the enclosing scopes (captures).
    size_t save = p_, lim = limit_;
    Id saved_func = cur_func_;
    cur_func_ = fid;
    push_scope();
    for (const auto& pp : params) {
      VarInfo vi;
      vi.type = pp.second;
      declare(pp.first, vi);
    }
    std::vector<Id> body;
    size_t mark = hoisted_.size();
    p_ = open + 1;
    limit_ = close;
    block_statements(body, at(close).e);
    if (hoisted_.size() > mark) {
      body.insert(body.begin(), hoisted_.begin() + static_cast<long>(mark), hoisted_.end());
      hoisted_.resize(mark);
    }
    pop_scope();
    cur_func_ = saved_func;
    p_ = save;
    limit_ = lim;
    b_.m.funcs[fid].body = std::move(body);
    hoisted_.push_back(st);
    return b_.name(name, r);
  }
  std::string pending_lambda_name_;
  std::unordered_set<Id> smart_values_;  // results of std::make_shared / make_unique

  Id primary() {
    size_t b = p_;
    const Tok& t = tok();
    switch (t.kind) {
      case T::Number: {
        ++p_;
        std::string text(t.text);
        bool hex = text.size() > 1 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
        bool flt = !hex && (text.find('.') != std::string::npos || text.find_first_of("eE") != std::string::npos);
        std::string clean;
        for (char c : text)
          if (c != '\'') clean.push_back(c);
        // Strip integer suffixes (12u, 16UL) so the value reads as a Python int.
        if (!flt) while (!clean.empty() && (clean.back() == 'u' || clean.back() == 'U' || clean.back() == 'l' || clean.back() == 'L')) clean.pop_back();
        return b_.literal(flt ? LitKind::Float : LitKind::Int, flt ? text : clean, since(b));
      }
      case T::String: {
        std::string v;
        while (tok().kind == T::String) {
          v += unquote(tok().text);
          ++p_;
        }
        return b_.literal(LitKind::String, v, since(b));
      }
      case T::Char:
        ++p_;
        return b_.literal(LitKind::Other, std::string(t.text), since(b));
      case T::End:
        return b_.expr(ExprKind::Other, since(b));
      default:
        break;
    }
    if (t.kind == T::Punct) {
      if (t.text == "(") {
        size_t close = match(p_);
        size_t lim = limit_;
        limit_ = close;
        ++p_;
        Id inner = done() ? b_.expr(ExprKind::Other, since(b)) : expression();
        limit_ = lim;
        p_ = close + 1;
        return inner;
      }
      if (t.text == "[") return lambda();
      if (t.text == "{") {
        size_t close = match(p_);
        std::vector<Id> kids = call_args(close);
        return b_.expr(ExprKind::Sequence, since(b), "list", kids);
      }
      if (t.text != "::") {
        ++p_;
        return b_.expr(ExprKind::Other, since(b), std::string(t.text));
      }
    }
    // Keywords with a value.
    if (t.kind == T::Ident) {
      std::string_view w = t.text;
      if (w == "true") { ++p_; return b_.literal(LitKind::True, "True", since(b)); }
      if (w == "false") { ++p_; return b_.literal(LitKind::False, "False", since(b)); }
      if (w == "nullptr" || w == "NULL") { ++p_; return b_.literal(LitKind::None, "None", since(b)); }
      if (w == "this") { ++p_; return b_.name("self", since(b)); }
      if (w == "static_cast" || w == "dynamic_cast" || w == "const_cast" || w == "reinterpret_cast") {
        ++p_;
        if (is("<")) {
          size_t c = template_args(p_);
          p_ = c ? c + 1 : match_angle(p_);
        }
        if (is("(")) {
          size_t close = match(p_);
          size_t lim = limit_;
          limit_ = close;
          ++p_;
          Id inner = done() ? b_.expr(ExprKind::Other, since(b)) : expression();
          limit_ = lim;
          p_ = close + 1;
          return inner;
        }
        return b_.expr(ExprKind::Other, since(b));
      }
      if (builtin_type_word(w) && w != "auto") {
        // int(x), double{y}: a conversion.
        while (tok().kind == T::Ident && builtin_type_word(tok().text)) ++p_;
        if (is("(") || is("{")) {
          size_t close = match(p_);
          std::vector<Id> args = call_args(close);
          return args.size() == 1 ? args[0] : b_.expr(ExprKind::Other, since(b), "", args);
        }
        return b_.expr(ExprKind::Other, since(b));
      }
      if (keyword(w) && w != "operator") {
        ++p_;
        return b_.expr(ExprKind::Other, since(b), std::string(w));
      }
    }
    // A (qualified) name, maybe with template arguments.
    std::vector<std::string> parts;
    size_t targs_open = 0, targs_close = 0;
    if (is("::")) { parts.emplace_back(""); ++p_; }
    while (is_id()) {
      parts.emplace_back(tok().text);
      ++p_;
      if (is("<")) {
        size_t close = template_args(p_);
        if (close) {
          targs_open = p_;
          targs_close = close;
          p_ = close + 1;
        }
      }
      if (is("::") && (tok(1).kind == T::Ident || is("~", 1))) { ++p_; if (is("~")) ++p_; continue; }
      break;
    }
    if (parts.empty() || (parts.size() == 1 && parts[0].empty())) {
      ++p_;
      return b_.expr(ExprKind::Other, since(b));
    }
    Range r = since(b);
    bool qualified = parts.size() > 1;
    const std::string& first = parts[0].empty() && parts.size() > 1 ? parts[1] : parts[0];
    if (!qualified) {
      if (lookup(first)) return b_.name(first, r);
      if (!cur_class_.empty() && is_field(first)) return b_.attr(b_.name("self", r), first, r);
      if (local_funcs_.count(first) && !classes_.count(first)) return b_.name(first, r);
    }
    std::string res = resolve(parts);
    if (is_cuda_device_constant(res) || is_cuda_device_constant(join(parts, "::")))
      return b_.literal(LitKind::String, "cuda", r);
    // std::make_shared<T>(...) / make_unique<T>(...): a construction of T.
    if ((res == "std::make_shared" || res == "std::make_unique" || res == "c10::make_intrusive") && targs_open &&
        is("(")) {
      size_t save = p_, lim = limit_;
      p_ = targs_open + 1;
      limit_ = targs_close;
      TypeFacts tf;
      bool ok = parse_type(tf);
      p_ = save;
      limit_ = lim;
      if (ok) {
        size_t close = match(p_);
        std::vector<Id> args = call_args(close);
        Id c = b_.call(type_callee(tf, r), args, since(b));
        smart_values_.insert(c);
        return c;
      }
    }
    // A type followed by ( or {: a construction.
    if (is("(") || is("{")) {
      TypeFacts tf = facts_of_name(res);
      bool is_type = classes_.count(res) != 0 || tf.kind != ValueKind::None || tf.guard != GuardKind::None ||
                     (!parts.back().empty() && std::isupper(static_cast<unsigned char>(parts.back()[0])) &&
                      (res.rfind("torch::", 0) == 0 || res.rfind("c10::", 0) == 0 || res.rfind("at::", 0) == 0) &&
                      res.find("::functional::") == std::string::npos);
      if (is_type) {
        if (tf.resolved.empty()) tf.resolved = res;
        return braced(tf, b);
      }
    }
    if (classes_.count(res)) return b_.name(res, r);
    std::string last = parts.back();
    // In a method of a class whose members this file cannot see (declared in a header), a
    // name that resolves to nothing known is a member: `self.<name>`.
    if (!qualified && !cur_class_.empty() && res == first && !known_library(res) && !is_macro_name(first) &&
        !namespaces_.count(first))
      return b_.attr(b_.name("self", r), first, r);
    return b_.name(last, r, model_qname(res));
  }
};

}  // namespace

void lower_syntactic(std::string_view src, Module& m, std::vector<Diagnostic>& diags) {
  Syn(src, m, diags).run();
}

}  // namespace ll::cpp
