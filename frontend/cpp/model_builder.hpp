// Building blocks shared by the two C++ lowerings (Clang AST, syntactic fallback): byte
// offsets to ranges, the comment scanner, node constructors, and the C++ constructs that
// are lowered into Python-shaped model nodes (RAII guards -> `with`, typed declarations ->
// bindings the checks can read).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontend/cpp/cpp_names.hpp"
#include "rules/finding.hpp"
#include "rules/model.hpp"

namespace ll::cpp {

// Byte offset -> 1-based line and byte column of one buffer.
class LineTable {
 public:
  explicit LineTable(std::string_view src);
  Range range(uint32_t begin, uint32_t end) const;
  uint32_t line_of(uint32_t off) const;    // 1-based
  uint32_t col_of(uint32_t off) const;     // 1-based, bytes
  uint32_t line_start(uint32_t line) const;  // offset of a 1-based line's first byte

 private:
  std::vector<uint32_t> starts_;
  uint32_t size_;
};

// `// text` -> {line, " text"}; `/* text */` -> {first line, " text "}. String, character
// and raw string literals are skipped, so `"//"` is not a comment.
std::vector<Comment> scan_comments(std::string_view src);

// A readable dump of a lowered module (leaklint-cpp --dump-model, tests).
std::string dump_module(const Module& m);
std::string dump_expr(const Module& m, Id e);

class ModelBuilder {
 public:
  ModelBuilder(Module& m, std::string_view src) : m(m), src(src), lines(src) {}
  Module& m;
  std::string_view src;
  LineTable lines;

  Range range(uint32_t b, uint32_t e) const { return lines.range(b, e); }
  Expr& e(Id id) { return m.exprs[id]; }
  Stmt& s(Id id) { return m.stmts[id]; }

  Id add(Expr x);
  Id add(Stmt x);
  Id expr(ExprKind k, const Range& r, std::string text = {}, std::vector<Id> kids = {});
  Id name(std::string text, const Range& r, std::string qname = {});
  Id attr(Id obj, std::string text, const Range& r);
  Id literal(LitKind k, std::string text, const Range& r);
  Id call(Id callee, std::vector<Id> args, const Range& r,
          std::vector<std::pair<std::string, Id>> kws = {});
  // A C++ qualified name (library entity): a Name spelled like its last component whose
  // qname is the model spelling (`c10::cuda::CUDACachingAllocator::emptyCache` ->
  // Name "emptyCache", qname "torch.cuda.empty_cache").
  Id qualified(std::string_view cxx, const Range& r);
  // A Name for an entity already spelled the model's way ("torch.nn.Linear" -> Name "Linear").
  Id model_name(const std::string& model_qname, const Range& r);
  Id stmt(StmtKind k, const Range& r);

  // `torch::NoGradGuard g;` -> `with torch.no_grad() as g:` over `body` (the rest of the block).
  // `arg` is the lowered constructor argument (kNone when absent).
  Id guard(GuardKind kind, std::string_view spelled, Id arg, const std::string& var, const Range& decl,
           uint32_t scope_end, std::vector<Id> body);
  // A binding the checks read for a declaration whose initialiser does not show what the
  // value is (parameters, fields, `Net& n = *p`): `var: T = T()` as an AnnAssign whose value
  // is a call of the class (`callee_qname` non-empty) or of this file's class `local_class`.
  Id typed_binding(Id target, const std::string& callee_qname, const std::string& local_class, const Range& r);

  // Function/class arenas.
  Id add_function(Function f);
  // A synthetic `__init__(self)` method of class `cls` spanning `r` (for classes whose fields
  // are typed but that define no constructor in the file): the function and its FunctionDef
  // statement (returned in `stmt`), linked to each other and to the class; the body is empty.
  Id synthetic_init(Id cls, const Range& r, Id* stmt);
  // The per-file diagnostic for nesting beyond kMaxDepth, at `r`.
  Diagnostic too_deep(const Range& r) const;
  Id add_class(Class c);
};

}  // namespace ll::cpp
