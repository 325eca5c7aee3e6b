// The shared program model: what every frontend lowers a source file into and the only
// thing checks read. Nodes live in arenas inside Module and refer to each other by index,
// so no structure is recursive in memory (a 50 000-deep input cannot overflow a destructor)
// and walks are bounded by kMaxDepth, which frontends enforce while lowering.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ll {

using Id = uint32_t;
inline constexpr Id kNone = 0xFFFFFFFFu;
// Deeper nesting than this is lowered as an opaque node and reported as a per-file note.
inline constexpr int kMaxDepth = 256;

enum class Lang : uint8_t { Python, Cpp };

// 1-based line, 1-based column counted in bytes; byte offsets into the source.
struct Range {
  uint32_t line = 0, col = 0, end_line = 0, end_col = 0;
  uint32_t begin = 0, end = 0;
};

enum class ExprKind : uint8_t {
  Name,        // text = identifier
  Attribute,   // kids[0] = object, text = attribute name
  Call,        // kids[0] = callee, kids[1..] = positional then keyword args (kw names in kw)
  Subscript,   // kids[0] = value, kids[1..] = index expressions
  Literal,     // lit says which; text = source text (strings: the unquoted value when simple)
  BinOp,       // text = operator, kids = {lhs, rhs}
  UnaryOp,     // text = operator, kids = {operand}
  Compare,     // text = first operator, kids = operands
  BoolOp,      // text = and/or, kids = operands
  Sequence,    // tuple/list/set/dict displays; text = "tuple"|"list"|"set"|"dict"
  Comprehension,  // kids[0] = element (dict: key); for-clauses in loops; text = kind
  Lambda,      // kids[0] = body
  Conditional, // kids = {body, test, orelse}
  Starred,     // *x / **x; text = "*" or "**"
  FString,     // kids = embedded expressions; text = the written-out parts, '\x01' for each field
  Other,       // anything else; kids = sub-expressions worth walking
};

enum class LitKind : uint8_t { None, True, False, Int, Float, String, Ellipsis, Other };

struct CompFor {     // one `for target in iter` clause of a comprehension
  Id target = kNone;
  Id iter = kNone;
};

struct Expr {
  ExprKind kind = ExprKind::Other;
  LitKind lit = LitKind::Other;
  Range range;
  std::string text;
  std::vector<Id> kids;
  std::vector<std::string> kw;  // Call: keyword names of the trailing kw.size() arguments
  std::vector<CompFor> fors;    // Comprehension clauses
  // Qualified name when the expression is a Name/Attribute chain rooted in an import
  // (`t.no_grad` with `import torch as t` -> "torch.no_grad"). C++: `torch::NoGradGuard`
  // is spelled "torch.NoGradGuard", so tables hold one spelling.
  std::string qname;
};

enum class StmtKind : uint8_t {
  Expr,       // value
  Assign,     // targets (one per `=`), value
  AugAssign,  // targets[0], text = operator ("+="), value
  AnnAssign,  // targets[0], value (may be kNone)
  For,        // targets[0] = loop target, value = iterable, body, orelse
  While,      // value = condition, body, orelse
  With,       // items = context expressions, targets = aliases (kNone when absent), body.
              // C++ RAII guards are lowered to a With whose body is the rest of the block.
  If,         // value = condition, body, orelse (elif is a nested If in orelse)
  Try,        // body, handlers, orelse, finalbody
  Return,     // value (may be kNone)
  Delete,     // targets
  FunctionDef,// func
  ClassDef,   // cls
  Import,     // nothing else: imports are resolved into Module::aliases by the frontend
  Raise, Break, Continue, Pass,
  Other,      // value may hold an expression worth walking; text "assert" for an assert
};

struct Handler {
  Id type = kNone;     // exception type expression (kNone for bare except)
  std::string name;    // `as e`
  std::vector<Id> body;
  Range range;
};

struct Stmt {
  StmtKind kind = StmtKind::Other;
  Range range;
  Id value = kNone;
  std::vector<Id> targets;
  std::vector<Id> items;
  std::string text;
  std::vector<Id> body, orelse, finalbody;
  std::vector<Handler> handlers;
  Id func = kNone;
  Id cls = kNone;
  bool is_async = false;
};

struct Function {
  std::string name;
  Id cls = kNone;          // enclosing class, for methods
  Id parent = kNone;       // enclosing function, for nested functions
  Id stmt = kNone;         // the FunctionDef statement
  std::vector<std::string> params;
  // Annotation text per parameter (`Transformer` of `model: Transformer`), "" when none;
  // empty when the frontend records none.
  std::vector<std::string> param_types;
  // Default per parameter when it is a simple literal (`True`, `False`, `None`, an integer
  // or a float as written), "" otherwise or when there is none; empty when the frontend records none.
  std::vector<std::string> param_defaults;
  std::vector<Id> decorators;
  std::vector<Id> body;
  Range range;             // whole definition (decorators included)
  Range header;            // the definition without its decorators (`def` to the end of the body)
  uint32_t body_indent = 0;  // column (0-based) of the body's first statement
};

struct Class {
  std::string name;
  std::vector<Id> bases;
  std::vector<Id> methods;  // Function ids
  std::vector<Id> decorators;  // `@dataclass(frozen=True)`: the expression after `@` (Python)
  Range range;
  Id stmt = kNone;
};

struct Comment {
  uint32_t line = 0;
  std::string text;  // without the leading '#' or '//'
};

struct Module {
  Lang lang = Lang::Python;
  std::string path;
  std::vector<Expr> exprs;
  std::vector<Stmt> stmts;
  std::vector<Function> funcs;
  std::vector<Class> classes;
  std::vector<Id> body;  // top-level statements
  std::vector<Comment> comments;
  // Local name -> qualified name of what it was imported as ("F" -> "torch.nn.functional").
  std::unordered_map<std::string, std::string> aliases;
  // Modules imported with `from M import *` (M as written, relative ones with their dots).
  std::vector<std::string> star_imports;
  // C++: the file's text names a way to start threads (`std::thread`, `std::async`, a thread
  // pool, OpenMP): grad mode is per thread, so a mode one function leaves need not hold where
  // another runs. (Python reads this from its calls.)
  bool mentions_threads = false;

  // kNone (an absent argument, value or target) reads as an empty expression or statement:
  // a check that asks about it gets "no", never a read outside the tables. (Ids the
  // frontends make are in range; one compare with a constant keeps this cheap, as these are
  // the analysis's most frequent calls.)
  const Expr& e(Id id) const { return id == kNone ? kNoExpr : exprs[id]; }
  const Stmt& s(Id id) const { return id == kNone ? kNoStmt : stmts[id]; }
  static inline const Expr kNoExpr{};
  static inline const Stmt kNoStmt{};
};

}  // namespace ll
