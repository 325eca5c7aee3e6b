#include "frontend/cpp/model_builder.hpp"

#include <algorithm>
#include <cctype>

namespace ll::cpp {

LineTable::LineTable(std::string_view src) : size_(static_cast<uint32_t>(src.size())) {
  starts_.push_back(0);
  for (uint32_t i = 0; i < src.size(); ++i)
    if (src[i] == '\n') starts_.push_back(i + 1);
}

uint32_t LineTable::line_of(uint32_t off) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), std::min(off, size_));
  return static_cast<uint32_t>(it - starts_.begin());
}

uint32_t LineTable::col_of(uint32_t off) const {
  off = std::min(off, size_);
  return off - starts_[line_of(off) - 1] + 1;
}

uint32_t LineTable::line_start(uint32_t line) const {
  if (line == 0) return 0;
  if (line > starts_.size()) return size_;
  return starts_[line - 1];
}

Range LineTable::range(uint32_t b, uint32_t e) const {
  Range r;
  b = std::min(b, size_);
  e = std::max(b, std::min(e, size_));
  r.begin = b;
  r.end = e;
  r.line = line_of(b);
  r.col = col_of(b);
  r.end_line = line_of(e);
  r.end_col = col_of(e);
  return r;
}

std::vector<Comment> scan_comments(std::string_view s) {
  std::vector<Comment> out;
  size_t i = 0, n = s.size();
  uint32_t line = 1;
  auto ident_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < n) {
    char c = s[i];
    if (c == '\n') { ++line; ++i; continue; }
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      size_t j = i + 2;
      std::string text;
      uint32_t start_line = line;
      while (j < n && s[j] != '\n') {
        // A backslash-newline continues a line comment.
        if (s[j] == '\\' && j + 1 < n && s[j + 1] == '\n') { ++line; j += 2; continue; }
        text.push_back(s[j]);
        ++j;
      }
      if (!text.empty() && text.back() == '\r') text.pop_back();
      out.push_back({start_line, std::move(text)});
      i = j;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t j = i + 2;
      uint32_t start_line = line;
      while (j < n && !(s[j] == '*' && j + 1 < n && s[j + 1] == '/')) {
        if (s[j] == '\n') ++line;
        ++j;
      }
      out.push_back({start_line, std::string(s.substr(i + 2, std::min(j, n) - (i + 2)))});
      i = std::min(n, j + 2);
      continue;
    }
    if (c == 'R' && i + 1 < n && s[i + 1] == '"' && (i == 0 || !ident_char(s[i - 1]) ||
                                                     (i >= 1 && (s[i - 1] == '8' || s[i - 1] == 'u' ||
                                                                 s[i - 1] == 'U' || s[i - 1] == 'L')))) {
      // Raw string R"delim( ... )delim"
      size_t p = s.find('(', i + 2);
      if (p == std::string_view::npos || p - (i + 2) > 16) { ++i; continue; }
      std::string close = ")" + std::string(s.substr(i + 2, p - (i + 2))) + "\"";
      size_t q = s.find(close, p + 1);
      size_t end = q == std::string_view::npos ? n : q + close.size();
      for (size_t k = i; k < end; ++k)
        if (s[k] == '\n') ++line;
      i = end;
      continue;
    }
    if (c == '"' || c == '\'') {
      // A digit separator (1'000'000) is not a character literal.
      if (c == '\'' && i > 0 && std::isxdigit(static_cast<unsigned char>(s[i - 1])) && i + 1 < n &&
          std::isxdigit(static_cast<unsigned char>(s[i + 1]))) {
        size_t k = i;
        while (k > 0 && (ident_char(s[k - 1]) || s[k - 1] == '\'' || s[k - 1] == '.')) --k;
        if (k < n && std::isdigit(static_cast<unsigned char>(s[k]))) { ++i; continue; }
      }
      size_t j = i + 1;
      while (j < n && s[j] != c && s[j] != '\n') {
        if (s[j] == '\\' && j + 1 < n) {
          if (s[j + 1] == '\n') ++line;
          j += 2;
          continue;
        }
        ++j;
      }
      i = j < n && s[j] == c ? j + 1 : j;
      continue;
    }
    ++i;
  }
  return out;
}

namespace {
std::string dump_expr_at(const Module& m, Id id, int depth);
}  // namespace

std::string dump_expr(const Module& m, Id id) { return dump_expr_at(m, id, 0); }

namespace {

std::string dump_expr_at(const Module& m, Id id, int depth) {
  if (id == kNone) return "-";
  if (depth > kMaxDepth) return "...";
  if (id >= m.exprs.size()) return "?";
  const Expr& e = m.exprs[id];
  auto kids = [&](size_t from) {
    std::string s;
    for (size_t i = from; i < e.kids.size(); ++i) {
      if (i > from) s += ", ";
      size_t nkw = e.kw.size(), npos = e.kids.size() - 1 - nkw;
      if (e.kind == ExprKind::Call && i > npos) s += e.kw[i - 1 - npos] + "=";
      s += dump_expr_at(m, e.kids[i], depth + 1);
    }
    return s;
  };
  std::string q = e.qname.empty() ? "" : "{" + e.qname + "}";
  switch (e.kind) {
    case ExprKind::Name: return e.text + q;
    case ExprKind::Attribute: return (e.kids.empty() ? std::string("?") : dump_expr_at(m, e.kids[0], depth + 1)) + "." + e.text + q;
    case ExprKind::Call: return dump_expr_at(m, e.kids[0], depth + 1) + "(" + kids(1) + ")";
    case ExprKind::Subscript: return dump_expr_at(m, e.kids[0], depth + 1) + "[" + kids(1) + "]";
    case ExprKind::Literal: return e.lit == LitKind::String ? "'" + e.text + "'" : e.text;
    case ExprKind::BinOp: case ExprKind::Compare: case ExprKind::BoolOp:
      return "(" + (e.kids.size() > 0 ? dump_expr_at(m, e.kids[0], depth + 1) : "") + " " + e.text + " " +
             (e.kids.size() > 1 ? dump_expr_at(m, e.kids[1], depth + 1) : "") + ")";
    case ExprKind::UnaryOp: return e.text + "(" + kids(0) + ")";
    case ExprKind::Sequence: return e.text + "[" + kids(0) + "]";
    case ExprKind::Conditional: return "(" + kids(0) + " ?)";
    default: return "Other<" + e.text + ">(" + kids(0) + ")";
  }
}

}  // namespace

namespace {

void dump_body(const Module& m, const std::vector<Id>& body, int indent, std::string& out);

void dump_stmt(const Module& m, Id sid, int indent, std::string& out) {
  const Stmt& s = m.stmts[sid];
  std::string pad(static_cast<size_t>(indent) * 2, ' ');
  std::string loc = " @" + std::to_string(s.range.line) + ":" + std::to_string(s.range.col);
  auto targets = [&] {
    std::string t;
    for (size_t i = 0; i < s.targets.size(); ++i) t += (i ? ", " : "") + dump_expr(m, s.targets[i]);
    return t;
  };
  switch (s.kind) {
    case StmtKind::FunctionDef: {
      const Function& f = m.funcs[s.func];
      std::string ps;
      for (size_t i = 0; i < f.params.size(); ++i) ps += (i ? ", " : "") + f.params[i];
      out += pad + "def " + f.name + "(" + ps + ")" + (f.cls != kNone ? " [" + m.classes[f.cls].name + "]" : "") +
             (f.parent != kNone ? " [in " + m.funcs[f.parent].name + "]" : "") + loc + "\n";
      dump_body(m, f.body, indent + 1, out);
      return;
    }
    case StmtKind::ClassDef: {
      const Class& c = m.classes[s.cls];
      std::string bs;
      for (size_t i = 0; i < c.bases.size(); ++i) bs += (i ? ", " : "") + dump_expr(m, c.bases[i]);
      out += pad + "class " + c.name + "(" + bs + ")" + loc + "\n";
      dump_body(m, s.body, indent + 1, out);
      return;
    }
    case StmtKind::Expr: out += pad + dump_expr(m, s.value) + loc + "\n"; return;
    case StmtKind::Assign: out += pad + targets() + " = " + dump_expr(m, s.value) + loc + "\n"; return;
    case StmtKind::AnnAssign: out += pad + targets() + " : " + dump_expr(m, s.value) + loc + "\n"; return;
    case StmtKind::AugAssign: out += pad + targets() + " " + s.text + " " + dump_expr(m, s.value) + loc + "\n"; return;
    case StmtKind::Delete: out += pad + "del " + targets() + loc + "\n"; return;
    case StmtKind::Return: out += pad + "return " + dump_expr(m, s.value) + loc + "\n"; return;
    case StmtKind::Break: out += pad + "break" + loc + "\n"; return;
    case StmtKind::Continue: out += pad + "continue" + loc + "\n"; return;
    case StmtKind::For:
      out += pad + "for " + targets() + " in " + dump_expr(m, s.value) + ":" + loc + "\n";
      dump_body(m, s.body, indent + 1, out);
      return;
    case StmtKind::While:
      out += pad + "while " + dump_expr(m, s.value) + ":" + loc + "\n";
      dump_body(m, s.body, indent + 1, out);
      return;
    case StmtKind::If:
      out += pad + "if " + dump_expr(m, s.value) + ":" + loc + "\n";
      dump_body(m, s.body, indent + 1, out);
      if (!s.orelse.empty()) {
        out += pad + "else:\n";
        dump_body(m, s.orelse, indent + 1, out);
      }
      return;
    case StmtKind::With: {
      std::string items;
      for (size_t i = 0; i < s.items.size(); ++i) items += (i ? ", " : "") + dump_expr(m, s.items[i]);
      out += pad + "with " + items + " as " + targets() + ":" + loc + "\n";
      dump_body(m, s.body, indent + 1, out);
      return;
    }
    case StmtKind::Try:
      out += pad + "try:" + loc + "\n";
      dump_body(m, s.body, indent + 1, out);
      for (const auto& h : s.handlers) {
        out += pad + "except " + dump_expr(m, h.type) + " as " + h.name + ":\n";
        dump_body(m, h.body, indent + 1, out);
      }
      return;
    default:
      out += pad + "<" + (s.text.empty() ? std::string("other") : s.text) + ">" + loc + "\n";
      dump_body(m, s.body, indent + 1, out);
      return;
  }
}

void dump_body(const Module& m, const std::vector<Id>& body, int indent, std::string& out) {
  for (Id s : body) dump_stmt(m, s, indent, out);
}

}  // namespace

std::string dump_module(const Module& m) {
  std::string out;
  dump_body(m, m.body, 0, out);
  return out;
}

Id ModelBuilder::add(Expr x) {
  m.exprs.push_back(std::move(x));
  return static_cast<Id>(m.exprs.size() - 1);
}

Id ModelBuilder::add(Stmt x) {
  m.stmts.push_back(std::move(x));
  return static_cast<Id>(m.stmts.size() - 1);
}

Id ModelBuilder::expr(ExprKind k, const Range& r, std::string text, std::vector<Id> kids) {
  Expr x;
  x.kind = k;
  x.range = r;
  x.text = std::move(text);
  x.kids = std::move(kids);
  return add(std::move(x));
}

Id ModelBuilder::name(std::string text, const Range& r, std::string qname) {
  Expr x;
  x.kind = ExprKind::Name;
  x.range = r;
  x.text = std::move(text);
  x.qname = std::move(qname);
  return add(std::move(x));
}

Id ModelBuilder::attr(Id obj, std::string text, const Range& r) {
  Expr x;
  x.kind = ExprKind::Attribute;
  x.range = r;
  x.text = std::move(text);
  x.kids.push_back(obj);
  return add(std::move(x));
}

Id ModelBuilder::literal(LitKind k, std::string text, const Range& r) {
  Expr x;
  x.kind = ExprKind::Literal;
  x.lit = k;
  x.range = r;
  x.text = std::move(text);
  return add(std::move(x));
}

Id ModelBuilder::call(Id callee, std::vector<Id> args, const Range& r, std::vector<std::pair<std::string, Id>> kws) {
  Expr x;
  x.kind = ExprKind::Call;
  x.range = r;
  x.kids.push_back(callee);
  for (Id a : args) x.kids.push_back(a);
  for (auto& [k, v] : kws) {
    x.kids.push_back(v);
    x.kw.push_back(k);
  }
  return add(std::move(x));
}

Id ModelBuilder::qualified(std::string_view cxx, const Range& r) {
  auto parts = split_qualified(cxx);
  std::string last = parts.empty() ? std::string(cxx) : parts.back();
  return name(last, r, model_qname(cxx));
}

Id ModelBuilder::model_name(const std::string& q, const Range& r) {
  size_t dot = q.rfind('.');
  return name(dot == std::string::npos ? q : q.substr(dot + 1), r, q);
}

Id ModelBuilder::stmt(StmtKind k, const Range& r) {
  Stmt s;
  s.kind = k;
  s.range = r;
  return add(std::move(s));
}

Id ModelBuilder::guard(GuardKind kind, std::string_view spelled, Id arg, const std::string& var, const Range& decl,
                       uint32_t scope_end, std::vector<Id> body) {
  const char* q = kind == GuardKind::NoGrad          ? "torch.no_grad"
                  : kind == GuardKind::InferenceMode ? "torch.inference_mode"
                                                     : "torch.set_grad_enabled";
  std::vector<Id> args;
  // no_grad() takes nothing; InferenceMode(flag) and AutoGradMode(flag) keep their argument
  // (a non-literal stays a non-literal, which the checks do not count as disabling).
  if (arg != kNone && kind != GuardKind::NoGrad) args.push_back(arg);
  Id callee = name(std::string(spelled), decl, q);
  Id item = call(callee, args, decl);
  Id w = stmt(StmtKind::With, range(decl.begin, std::max(scope_end, decl.end)));
  s(w).items.push_back(item);
  s(w).targets.push_back(var.empty() ? kNone : name(var, decl));
  s(w).body = std::move(body);
  s(w).text = "raii";
  return w;
}

Id ModelBuilder::typed_binding(Id target, const std::string& callee_qname, const std::string& local_class,
                               const Range& r) {
  Id callee = callee_qname.empty() ? name(local_class, r) : model_name(callee_qname, r);
  Id v = call(callee, {}, r);
  Id st = stmt(StmtKind::AnnAssign, r);
  s(st).targets.push_back(target);
  s(st).value = v;
  s(st).text = "declared-type";
  return st;
}

Diagnostic ModelBuilder::too_deep(const Range& r) const {
  Diagnostic d;
  d.path = m.path;
  d.kind = "too-deep";
  d.line = r.line;
  d.col = r.col;
  d.message = "nesting deeper than " + std::to_string(kMaxDepth) +
              " levels; the innermost part of this construct was not analysed";
  return d;
}

Id ModelBuilder::synthetic_init(Id cls, const Range& r, Id* stmt_out) {
  Function f;
  f.name = "__init__";
  f.cls = cls;
  f.params = {"self"};
  f.range = r;
  f.header = r;
  Id fid = add_function(std::move(f));
  Id fst = stmt(StmtKind::FunctionDef, r);
  s(fst).func = fid;
  m.funcs[fid].stmt = fst;
  m.classes[cls].methods.push_back(fid);
  *stmt_out = fst;
  return fid;
}

Id ModelBuilder::add_function(Function f) {
  m.funcs.push_back(std::move(f));
  return static_cast<Id>(m.funcs.size() - 1);
}

Id ModelBuilder::add_class(Class c) {
  m.classes.push_back(std::move(c));
  return static_cast<Id>(m.classes.size() - 1);
}

}  // namespace ll::cpp
