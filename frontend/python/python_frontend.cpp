// Lowers a tree-sitter-python syntax tree into the shared model. Children are lowered
// before their parent, so an expression's kids always have smaller ids than itself.
// Recursion depth is bounded by kMaxDepth; deeper subtrees become opaque nodes.
#include "frontend/python/python_frontend.hpp"
#include "rules/budget.hpp"

#include <tree_sitter/api.h>

#include <array>
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

extern "C" const TSLanguage* tree_sitter_python(void);

namespace ll::python {
namespace {

// Node kinds the lowering distinguishes; everything else is K::Unknown.
enum class K : uint8_t {
  Unknown, Module, Block, Comment, Error,
  FunctionDefinition, ClassDefinition, DecoratedDefinition, Decorator,
  ExpressionStatement, Assignment, AugmentedAssignment, ReturnStatement, DeleteStatement,
  PassStatement, BreakStatement, ContinueStatement, RaiseStatement, ImportStatement,
  ImportFromStatement, FutureImportStatement, AliasedImport, DottedName, RelativeImport,
  WildcardImport, IfStatement, ElifClause, ElseClause, ForStatement, WhileStatement,
  WithStatement, WithClause, WithItem, AsPattern, AsPatternTarget, TryStatement,
  ExceptClause, ExceptGroupClause, FinallyClause, MatchStatement, CaseClause,
  Identifier, Attribute, Call, ArgumentList, KeywordArgument, ListSplat, DictionarySplat,
  Subscript, Integer, Float, String, ConcatenatedString, Interpolation, True, False, None,
  Ellipsis, BinaryOperator, UnaryOperator, NotOperator, ComparisonOperator,
  BooleanOperator, ParenthesizedExpression, Tuple, List, Set, Dictionary, Pair,
  ExpressionList, PatternList, TuplePattern, ListPattern, ListComprehension,
  SetComprehension, DictionaryComprehension, GeneratorExpression, ForInClause, IfClause,
  Lambda, ConditionalExpression, Await, NamedExpression, Parameters, LambdaParameters,
  DefaultParameter, TypedParameter, TypedDefaultParameter, ListSplatPattern,
  DictionarySplatPattern, Keyword, Async, StringContent, Type, AssertStatement, GlobalStatement,
  NonlocalStatement,
};

struct Grammar {
  const TSLanguage* lang = nullptr;
  std::vector<K> kinds;       // by symbol id, named and anonymous (`async`)
  std::vector<uint8_t> named; // by symbol id: a named node (ts_node_is_named without a call)
  TSFieldId f_name{}, f_body{}, f_left{}, f_right{}, f_value{}, f_function{}, f_arguments{},
      f_object{}, f_attribute{}, f_condition{}, f_consequence{}, f_alternative{},
      f_operator{}, f_parameters{}, f_superclasses{}, f_module_name{}, f_alias{},
      f_subscript{}, f_key{}, f_argument{}, f_definition{}, f_type{}, f_subject{};
};

const Grammar& grammar() {
  static const Grammar g = [] {
    Grammar g;
    g.lang = tree_sitter_python();
    static const std::unordered_map<std::string_view, K> names = {
        {"module", K::Module}, {"block", K::Block}, {"comment", K::Comment}, {"ERROR", K::Error},
        {"function_definition", K::FunctionDefinition}, {"class_definition", K::ClassDefinition},
        {"decorated_definition", K::DecoratedDefinition}, {"decorator", K::Decorator},
        {"expression_statement", K::ExpressionStatement}, {"assignment", K::Assignment},
        {"assert_statement", K::AssertStatement}, {"global_statement", K::GlobalStatement},
        {"nonlocal_statement", K::NonlocalStatement},
        {"augmented_assignment", K::AugmentedAssignment}, {"return_statement", K::ReturnStatement},
        {"delete_statement", K::DeleteStatement}, {"pass_statement", K::PassStatement},
        {"break_statement", K::BreakStatement}, {"continue_statement", K::ContinueStatement},
        {"raise_statement", K::RaiseStatement}, {"import_statement", K::ImportStatement},
        {"import_from_statement", K::ImportFromStatement},
        {"future_import_statement", K::FutureImportStatement},
        {"aliased_import", K::AliasedImport}, {"dotted_name", K::DottedName},
        {"relative_import", K::RelativeImport}, {"wildcard_import", K::WildcardImport},
        {"if_statement", K::IfStatement}, {"elif_clause", K::ElifClause},
        {"else_clause", K::ElseClause}, {"for_statement", K::ForStatement},
        {"while_statement", K::WhileStatement}, {"with_statement", K::WithStatement},
        {"with_clause", K::WithClause}, {"with_item", K::WithItem}, {"as_pattern", K::AsPattern},
        {"as_pattern_target", K::AsPatternTarget}, {"try_statement", K::TryStatement},
        {"except_clause", K::ExceptClause}, {"except_group_clause", K::ExceptGroupClause},
        {"finally_clause", K::FinallyClause}, {"match_statement", K::MatchStatement},
        {"case_clause", K::CaseClause}, {"identifier", K::Identifier},
        {"attribute", K::Attribute}, {"call", K::Call}, {"argument_list", K::ArgumentList},
        {"keyword_argument", K::KeywordArgument}, {"list_splat", K::ListSplat},
        {"dictionary_splat", K::DictionarySplat}, {"subscript", K::Subscript},
        {"integer", K::Integer}, {"float", K::Float}, {"string", K::String},
        {"concatenated_string", K::ConcatenatedString}, {"interpolation", K::Interpolation},
        {"true", K::True}, {"false", K::False}, {"none", K::None}, {"ellipsis", K::Ellipsis},
        {"binary_operator", K::BinaryOperator}, {"unary_operator", K::UnaryOperator},
        {"not_operator", K::NotOperator}, {"comparison_operator", K::ComparisonOperator},
        {"boolean_operator", K::BooleanOperator},
        {"parenthesized_expression", K::ParenthesizedExpression}, {"tuple", K::Tuple},
        {"list", K::List}, {"set", K::Set}, {"dictionary", K::Dictionary}, {"pair", K::Pair},
        {"expression_list", K::ExpressionList}, {"pattern_list", K::PatternList},
        {"tuple_pattern", K::TuplePattern}, {"list_pattern", K::ListPattern},
        {"list_comprehension", K::ListComprehension}, {"set_comprehension", K::SetComprehension},
        {"dictionary_comprehension", K::DictionaryComprehension},
        {"generator_expression", K::GeneratorExpression}, {"for_in_clause", K::ForInClause},
        {"if_clause", K::IfClause}, {"lambda", K::Lambda},
        {"conditional_expression", K::ConditionalExpression}, {"await", K::Await},
        {"named_expression", K::NamedExpression}, {"parameters", K::Parameters},
        {"lambda_parameters", K::LambdaParameters}, {"default_parameter", K::DefaultParameter},
        {"typed_parameter", K::TypedParameter},
        {"typed_default_parameter", K::TypedDefaultParameter},
        {"list_splat_pattern", K::ListSplatPattern},
        {"dictionary_splat_pattern", K::DictionarySplatPattern},
        {"keyword_identifier", K::Identifier}, {"string_content", K::StringContent},
        {"type", K::Type},
    };
    uint32_t n = ts_language_symbol_count(g.lang);
    g.kinds.assign(n, K::Unknown);
    g.named.assign(n, 0);
    for (uint32_t i = 0; i < n; ++i) {
      auto sym = static_cast<TSSymbol>(i);
      const char* nm = ts_language_symbol_name(g.lang, sym);
      if (ts_language_symbol_type(g.lang, sym) != TSSymbolTypeRegular) {
        // Anonymous tokens we care about: `async`.
        if (ts_language_symbol_type(g.lang, sym) == TSSymbolTypeAnonymous && std::strcmp(nm, "async") == 0)
          g.kinds[i] = K::Async;
        continue;
      }
      g.named[i] = 1;
      auto it = names.find(nm);
      if (it != names.end()) g.kinds[i] = it->second;
    }
    auto f = [&](const char* s) { return ts_language_field_id_for_name(g.lang, s, std::strlen(s)); };
    g.f_name = f("name"); g.f_body = f("body"); g.f_left = f("left"); g.f_right = f("right");
    g.f_value = f("value"); g.f_function = f("function"); g.f_arguments = f("arguments");
    g.f_object = f("object"); g.f_attribute = f("attribute"); g.f_condition = f("condition");
    g.f_consequence = f("consequence"); g.f_alternative = f("alternative");
    g.f_operator = f("operator"); g.f_parameters = f("parameters");
    g.f_superclasses = f("superclasses"); g.f_module_name = f("module_name");
    g.f_alias = f("alias"); g.f_subscript = f("subscript"); g.f_key = f("key");
    g.f_argument = f("argument"); g.f_definition = f("definition"); g.f_type = f("type");
    g.f_subject = f("subject");
    return g;
  }();
  return g;
}

// kind_of and is_named run for nearly every node the lowering visits: one table lookup by
// symbol each. The ERROR symbol is 65535 in tree-sitter (named); map it explicitly.
inline K kind_of(TSNode n) {
  if (ts_node_is_null(n)) return K::Unknown;
  TSSymbol s = ts_node_symbol(n);
  if (s == static_cast<TSSymbol>(-1)) return K::Error;
  const Grammar& g = grammar();
  return s < g.kinds.size() ? g.kinds[s] : K::Unknown;
}

inline bool is_named(TSNode n) {
  if (ts_node_is_null(n)) return false;
  TSSymbol s = ts_node_symbol(n);
  if (s == static_cast<TSSymbol>(-1)) return true;
  const Grammar& g = grammar();
  return s < g.named.size() ? g.named[s] != 0 : ts_node_is_named(n);
}

struct Child {
  TSNode node;
  TSFieldId field;
};

// A node's children: up to 8 inline (nearly every node), more on the heap. children_of
// runs for most nodes of every file, so it must not allocate.
class Kids {
 public:
  void push_back(const Child& c) {
    if (n_ < kInline) inline_[n_] = c;
    else {
      if (n_ == kInline) heap_.assign(inline_.begin(), inline_.end());
      heap_.push_back(c);
    }
    ++n_;
  }
  const Child* begin() const { return n_ <= kInline ? inline_.data() : heap_.data(); }
  const Child* end() const { return begin() + n_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  const Child& operator[](size_t i) const { return begin()[i]; }

 private:
  static constexpr size_t kInline = 8;
  std::array<Child, kInline> inline_;  // not zero-filled: only [0, n_) is read
  std::vector<Child> heap_;
  size_t n_ = 0;
};

// All children (named and anonymous) with their field ids, in O(n) via one cursor per
// thread, re-pointed at each node (no allocation per call).
void children_of(TSNode n, Kids& out) {
  struct Cursor {
    TSTreeCursor c{};
    bool live = false;
    ~Cursor() {
      if (live) ts_tree_cursor_delete(&c);
    }
  };
  if (n.id == nullptr || ts_node_child_count(n) == 0) return;  // a leaf: no cursor work
  thread_local Cursor cur;
  if (cur.live) {
    ts_tree_cursor_reset(&cur.c, n);
  } else {
    cur.c = ts_tree_cursor_new(n);
    cur.live = true;
  }
  if (ts_tree_cursor_goto_first_child(&cur.c)) {
    do {
      out.push_back({ts_tree_cursor_current_node(&cur.c), ts_tree_cursor_current_field_id(&cur.c)});
    } while (ts_tree_cursor_goto_next_sibling(&cur.c));
  }
}

Kids children_of(TSNode n) {
  Kids out;
  children_of(n, out);
  return out;
}

// The named children only (field ids left 0), in order. A node with few children (nearly
// all) is read by index, which skips punctuation without stepping a cursor over it; a
// larger one (a long block, an ERROR run) goes through the cursor, so the cost stays
// linear in the number of children. (Index i costs at most i iterator steps of a few
// dozen instructions; a cursor step costs ~600 with its node and field id, so up to 32
// children the index is cheaper even on a flat node.)
void named_children_of(TSNode n, Kids& out) {
  if (n.id == nullptr) return;
  uint32_t c = ts_node_child_count(n);
  if (c == 0) return;
  if (c <= 32) {
    uint32_t k = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < k; ++i) out.push_back({ts_node_named_child(n, i), 0});
    return;
  }
  Kids all;
  children_of(n, all);
  for (const auto& ch : all)
    if (is_named(ch.node)) out.push_back({ch.node, 0});
}

Kids named_children_of(TSNode n) {
  Kids out;
  named_children_of(n, out);
  return out;
}

// One child by field: tree-sitter looks it up in the production's field map and stops at
// the first match, instead of listing every child with its field id.
inline TSNode fchild(TSNode n, TSFieldId f) { return n.id ? ts_node_child_by_field_id(n, f) : TSNode{}; }

TSNode field(const Kids& kids, TSFieldId f) {
  for (const auto& k : kids)
    if (k.field == f) return k.node;
  return TSNode{};
}

class Lowerer {
 public:
  Lowerer(std::string_view src, Module& m, std::vector<Diagnostic>& diags)
      : src_(src), m_(m), diags_(diags), g_(grammar()) {}

  void run(TSNode root) {
    // About one expression per 16 bytes of source and one statement per 64 (measured on
    // public PyTorch code): reserving that up front spares re-moving every node as the
    // arenas grow. Pages of an overestimate are never touched.
    m_.exprs.reserve(m_.exprs.size() + src_.size() / 10 + 16);
    m_.stmts.reserve(m_.stmts.size() + src_.size() / 64 + 16);
    m_.body = lower_block_children(root, 0);
    resolve_qnames();
  }

 private:
  std::string_view src_;
  Module& m_;
  std::vector<Diagnostic>& diags_;
  const Grammar& g_;
  Id cur_func_ = kNone;
  Id cur_class_ = kNone;
  bool too_deep_reported_ = false;

  // (Called for every node: kept inline in the lowering's hot paths.)
  [[gnu::always_inline]] Range range_of(TSNode n) const {
    Range r;
    TSPoint s = ts_node_start_point(n), e = ts_node_end_point(n);
    r.line = s.row + 1; r.col = s.column + 1;
    r.end_line = e.row + 1; r.end_col = e.column + 1;
    r.begin = ts_node_start_byte(n); r.end = ts_node_end_byte(n);
    return r;
  }
  std::string text_of(TSNode n) const {
    uint32_t b = ts_node_start_byte(n), e = ts_node_end_byte(n);
    if (b > src_.size() || e > src_.size() || e < b) return {};
    return std::string(src_.substr(b, e - b));
  }

  void too_deep(TSNode n) {
    if (too_deep_reported_) return;
    too_deep_reported_ = true;
    Diagnostic d;
    d.path = m_.path;
    d.kind = "too-deep";
    auto r = range_of(n);
    d.line = r.line; d.col = r.col;
    d.message = "nesting deeper than " + std::to_string(kMaxDepth) +
                " levels; the innermost part of this construct was not analysed";
    diags_.push_back(std::move(d));
  }

  Id add_expr(Expr&& e) {
    budget::tick();
    m_.exprs.push_back(std::move(e));
    return static_cast<Id>(m_.exprs.size() - 1);
  }
  Id add_stmt(Stmt&& s) {
    budget::tick();
    m_.stmts.push_back(std::move(s));
    return static_cast<Id>(m_.stmts.size() - 1);
  }

  Id opaque(TSNode n) {
    Expr e;
    e.kind = ExprKind::Other;
    e.range = range_of(n);
    return add_expr(std::move(e));
  }

  // ---------------------------------------------------------------- expressions
  Id expr(TSNode n, int depth) {
    if (ts_node_is_null(n)) return kNone;
    if (depth > kMaxDepth) { too_deep(n); return opaque(n); }
    K k = kind_of(n);
    // Names, literals, attributes and calls (most expressions) read their parts by field
    // (ts_node_child_by_field_id) or by text: listing every child with a cursor costs
    // several hundred instructions per child, punctuation included.
    // Most other kinds use only their named children.
    Kids kids;
    switch (k) {
      case K::Identifier: case K::Attribute: case K::Call: case K::Integer: case K::Float:
      case K::True: case K::False: case K::None: case K::Ellipsis: case K::ConcatenatedString:
      case K::BinaryOperator: case K::BooleanOperator: case K::UnaryOperator: case K::NotOperator:
      case K::Lambda: case K::NamedExpression:
        break;
      case K::Subscript: case K::ComparisonOperator:
        children_of(n, kids);  // field ids or operator tokens
        break;
      default:
        named_children_of(n, kids);
        break;
    }
    Expr e;
    e.range = range_of(n);
    switch (k) {
      case K::Identifier:
        e.kind = ExprKind::Name;
        e.text = text_of(n);
        return add_expr(std::move(e));
      case K::Attribute: {
        Id obj = expr(fchild(n, g_.f_object), depth + 1);
        e.kind = ExprKind::Attribute;
        e.text = text_of(fchild(n, g_.f_attribute));
        if (obj != kNone) e.kids.push_back(obj);
        return add_expr(std::move(e));
      }
      case K::Call: {
        Id fn = expr(fchild(n, g_.f_function), depth + 1);
        e.kind = ExprKind::Call;
        e.kids.push_back(fn == kNone ? opaque(n) : fn);
        TSNode args = fchild(n, g_.f_arguments);
        if (kind_of(args) == K::GeneratorExpression) {
          e.kids.push_back(expr(args, depth + 1));
        } else if (!ts_node_is_null(args)) {
          std::vector<Id> pos;
          std::vector<std::pair<std::string, Id>> kws;
          for (const auto& a : named_children_of(args)) {
            if (!is_named(a.node)) continue;
            K ak = kind_of(a.node);
            if (ak == K::Comment) continue;
            if (ak == K::KeywordArgument) {
              std::string name = text_of(fchild(a.node, g_.f_name));
              Id v = expr(fchild(a.node, g_.f_value), depth + 1);
              kws.emplace_back(std::move(name), v == kNone ? opaque(a.node) : v);
            } else if (ak == K::DictionarySplat) {
              kws.emplace_back("**", expr(a.node, depth + 1));
            } else {
              pos.push_back(expr(a.node, depth + 1));
            }
          }
          for (Id p : pos) e.kids.push_back(p);
          for (auto& [name, v] : kws) {
            e.kids.push_back(v);
            e.kw.push_back(std::move(name));
          }
        }
        return add_expr(std::move(e));
      }
      case K::Subscript: {
        e.kind = ExprKind::Subscript;
        Id v = expr(fchild(n, g_.f_value), depth + 1);
        e.kids.push_back(v == kNone ? opaque(n) : v);
        for (const auto& c : kids)
          if (c.field == g_.f_subscript) e.kids.push_back(expr(c.node, depth + 1));
        return add_expr(std::move(e));
      }
      case K::Integer: case K::Float: case K::True: case K::False: case K::None:
      case K::Ellipsis:
        e.kind = ExprKind::Literal;
        e.lit = k == K::Integer ? LitKind::Int : k == K::Float ? LitKind::Float
              : k == K::True ? LitKind::True : k == K::False ? LitKind::False
              : k == K::None ? LitKind::None : LitKind::Ellipsis;
        e.text = text_of(n);
        return add_expr(std::move(e));
      case K::String: {
        bool interp = false;
        std::string content;
        for (const auto& c : kids) {
          K ck = kind_of(c.node);
          if (ck == K::Interpolation) {
            interp = true;
            auto ik = children_of(c.node);
            TSNode inner = field(ik, g_.f_value);
            if (ts_node_is_null(inner))
              for (const auto& x : ik)
                if (is_named(x.node)) { inner = x.node; break; }
            if (!ts_node_is_null(inner)) e.kids.push_back(expr(inner, depth + 1));
            content += '\x01';  // (an f-string's text: its written-out parts, '\x01' for each field)
          } else if (ck == K::StringContent) {
            content += text_of(c.node);
          }
        }
        if (interp) {
          e.kind = ExprKind::FString;
          e.text = std::move(content);
        } else {
          e.kind = ExprKind::Literal;
          e.lit = LitKind::String;
          e.text = std::move(content);
        }
        return add_expr(std::move(e));
      }
      case K::ConcatenatedString:
        e.kind = ExprKind::Literal;
        e.lit = LitKind::String;
        e.text = text_of(n);
        return add_expr(std::move(e));
      case K::BinaryOperator: case K::BooleanOperator: {
        e.kind = k == K::BinaryOperator ? ExprKind::BinOp : ExprKind::BoolOp;
        e.text = text_of(fchild(n, g_.f_operator));
        e.kids.push_back(expr(fchild(n, g_.f_left), depth + 1));
        e.kids.push_back(expr(fchild(n, g_.f_right), depth + 1));
        for (Id& x : e.kids) if (x == kNone) x = opaque(n);
        return add_expr(std::move(e));
      }
      case K::UnaryOperator: case K::NotOperator: {
        e.kind = ExprKind::UnaryOp;
        e.text = k == K::NotOperator ? "not" : text_of(fchild(n, g_.f_operator));
        Id a = expr(fchild(n, g_.f_argument), depth + 1);
        e.kids.push_back(a == kNone ? opaque(n) : a);
        return add_expr(std::move(e));
      }
      case K::ComparisonOperator: {
        e.kind = ExprKind::Compare;
        for (const auto& c : kids) {
          if (is_named(c.node)) {
            if (kind_of(c.node) != K::Comment) e.kids.push_back(expr(c.node, depth + 1));
          } else if (e.text.empty()) {
            e.text = ts_node_type(c.node);
          }
        }
        return add_expr(std::move(e));
      }
      case K::ParenthesizedExpression: {
        for (const auto& c : kids)
          if (is_named(c.node) && kind_of(c.node) != K::Comment) return expr(c.node, depth + 1);
        return opaque(n);
      }
      case K::Tuple: case K::List: case K::Set: case K::ExpressionList:
      case K::PatternList: case K::TuplePattern: case K::ListPattern: case K::Dictionary: {
        e.kind = ExprKind::Sequence;
        e.text = k == K::List || k == K::ListPattern ? "list" : k == K::Set ? "set"
               : k == K::Dictionary ? "dict" : "tuple";
        for (const auto& c : kids) {
          if (!is_named(c.node) || kind_of(c.node) == K::Comment) continue;
          if (kind_of(c.node) == K::Pair) {
            e.kids.push_back(expr(fchild(c.node, g_.f_key), depth + 1));
            e.kids.push_back(expr(fchild(c.node, g_.f_value), depth + 1));
          } else {
            e.kids.push_back(expr(c.node, depth + 1));
          }
        }
        for (Id& x : e.kids) if (x == kNone) x = opaque(n);
        return add_expr(std::move(e));
      }
      case K::ListComprehension: case K::SetComprehension: case K::DictionaryComprehension:
      case K::GeneratorExpression: {
        e.kind = ExprKind::Comprehension;
        e.text = k == K::ListComprehension ? "list" : k == K::SetComprehension ? "set"
               : k == K::DictionaryComprehension ? "dict" : "generator";
        // Clauses first (their ids are smaller), then the element.
        std::vector<Id> conds;
        for (const auto& c : kids) {
          K ck = kind_of(c.node);
          if (ck == K::ForInClause) {
            CompFor cf;
            cf.iter = expr(fchild(c.node, g_.f_right), depth + 1);
            cf.target = expr(fchild(c.node, g_.f_left), depth + 1);
            e.fors.push_back(cf);
          } else if (ck == K::IfClause) {
            for (const auto& x : children_of(c.node))
              if (is_named(x.node)) conds.push_back(expr(x.node, depth + 1));
          }
        }
        TSNode body = fchild(n, g_.f_body);
        Id el;
        if (kind_of(body) == K::Pair) {
          auto pk = children_of(body);
          Id key = expr(field(pk, g_.f_key), depth + 1);
          Id val = expr(field(pk, g_.f_value), depth + 1);
          Expr pe;
          pe.kind = ExprKind::Sequence;
          pe.text = "tuple";
          pe.range = range_of(body);
          pe.kids = {key == kNone ? opaque(body) : key, val == kNone ? opaque(body) : val};
          el = add_expr(std::move(pe));
        } else {
          el = expr(body, depth + 1);
        }
        e.kids.push_back(el == kNone ? opaque(n) : el);
        for (Id c : conds) e.kids.push_back(c);
        return add_expr(std::move(e));
      }
      case K::Lambda: {
        e.kind = ExprKind::Lambda;
        Id b = expr(fchild(n, g_.f_body), depth + 1);
        e.kids.push_back(b == kNone ? opaque(n) : b);
        return add_expr(std::move(e));
      }
      case K::ConditionalExpression: {
        e.kind = ExprKind::Conditional;
        for (const auto& c : kids)
          if (is_named(c.node) && kind_of(c.node) != K::Comment)
            e.kids.push_back(expr(c.node, depth + 1));
        return add_expr(std::move(e));
      }
      case K::ListSplat: case K::DictionarySplat: case K::ListSplatPattern:
      case K::DictionarySplatPattern: {
        e.kind = ExprKind::Starred;
        e.text = (k == K::DictionarySplat || k == K::DictionarySplatPattern) ? "**" : "*";
        for (const auto& c : kids)
          if (is_named(c.node)) { e.kids.push_back(expr(c.node, depth + 1)); break; }
        return add_expr(std::move(e));
      }
      case K::NamedExpression: {
        // `(x := value)`: the value, remembered as an assignment by the statement walker.
        Id v = expr(fchild(n, g_.f_value), depth + 1);
        return v == kNone ? opaque(n) : v;
      }
      default: {
        e.kind = ExprKind::Other;
        e.text = k == K::Await ? "await" : "";
        for (const auto& c : kids)
          if (is_named(c.node) && kind_of(c.node) != K::Comment)
            e.kids.push_back(expr(c.node, depth + 1));
        return add_expr(std::move(e));
      }
    }
  }

  // ---------------------------------------------------------------- statements
  std::vector<Id> lower_block_children(TSNode block, int depth) {
    std::vector<Id> out;
    for (const auto& c : named_children_of(block)) stmt(c.node, depth, out);
    return out;
  }

  std::vector<Id> block_field(const Kids& kids, TSFieldId f, int depth) {
    TSNode b = field(kids, f);
    if (ts_node_is_null(b)) return {};
    return lower_block_children(b, depth + 1);
  }

  std::vector<Id> block_field(TSNode n, TSFieldId f, int depth) {
    TSNode b = fchild(n, f);
    if (ts_node_is_null(b)) return {};
    return lower_block_children(b, depth + 1);
  }

  void add_import(const std::string& local, const std::string& qualified) {
    if (!local.empty()) m_.aliases[local] = qualified;
  }

  void stmt(TSNode n, int depth, std::vector<Id>& out) {
    if (depth > kMaxDepth) { too_deep(n); return; }
    K k = kind_of(n);
    Kids kids;
    switch (k) {
      case K::Comment: return;
      case K::PassStatement: case K::BreakStatement: case K::ContinueStatement:
      case K::FutureImportStatement: case K::FunctionDefinition: case K::ClassDefinition:
        break;  // no children read here (definitions read their own)
      case K::ForStatement: case K::WhileStatement:
        break;  // parts read by field
      case K::ImportStatement: case K::ImportFromStatement: case K::IfStatement:
      case K::WithStatement: case K::TryStatement: case K::MatchStatement:
      case K::DecoratedDefinition:
        children_of(n, kids);  // field ids or anonymous tokens (`async`)
        break;
      default:
        named_children_of(n, kids);
        break;
    }
    Stmt s;
    s.range = range_of(n);
    switch (k) {
      case K::Comment:
        return;
      case K::Error: case K::Block: case K::Module:
        // Error recovery: keep whatever statements the parser recognised inside.
        for (const auto& c : kids)
          if (is_named(c.node)) stmt(c.node, depth + 1, out);
        return;
      case K::ExpressionStatement: {
        TSNode inner{};
        for (const auto& c : kids)
          if (is_named(c.node) && kind_of(c.node) != K::Comment) { inner = c.node; break; }
        if (ts_node_is_null(inner)) return;
        K ik = kind_of(inner);
        if (ik == K::Assignment) {
          // a = b = value: nested assignments on the right.
          TSNode cur = inner;
          while (kind_of(cur) == K::Assignment) {
            TSNode right = fchild(cur, g_.f_right);
            TSNode type = fchild(cur, g_.f_type);
            s.targets.push_back(expr(fchild(cur, g_.f_left), depth + 1));
            if (!ts_node_is_null(type)) s.text = text_of(type);  // the annotation (`nn.Module`)
            if (!ts_node_is_null(type) && ts_node_is_null(right)) {
              s.kind = StmtKind::AnnAssign;
              cur = TSNode{};
              break;
            }
            if (!ts_node_is_null(type)) s.kind = StmtKind::AnnAssign;
            cur = right;
          }
          if (s.kind != StmtKind::AnnAssign) s.kind = StmtKind::Assign;
          if (!ts_node_is_null(cur)) s.value = expr(cur, depth + 1);
        } else if (ik == K::AugmentedAssignment) {
          s.kind = StmtKind::AugAssign;
          s.targets.push_back(expr(fchild(inner, g_.f_left), depth + 1));
          s.text = text_of(fchild(inner, g_.f_operator));
          s.value = expr(fchild(inner, g_.f_right), depth + 1);
        } else {
          s.kind = StmtKind::Expr;
          // `a.zero_grad(), b.zero_grad()`: an unparenthesised tuple is the statement's
          // expressions side by side, not one node; every one of them runs.
          std::vector<TSNode> items;
          for (const auto& c : kids)
            if (is_named(c.node) && kind_of(c.node) != K::Comment) items.push_back(c.node);
          if (items.size() > 1) {
            Expr t;
            t.kind = ExprKind::Sequence;
            t.text = "tuple";
            t.range = range_of(n);
            for (TSNode x : items) {
              Id k = expr(x, depth + 1);
              t.kids.push_back(k == kNone ? opaque(x) : k);
            }
            s.value = add_expr(std::move(t));
          } else {
            s.value = expr(inner, depth + 1);
          }
        }
        break;
      }
      case K::ReturnStatement: case K::RaiseStatement: {
        s.kind = k == K::ReturnStatement ? StmtKind::Return : StmtKind::Raise;
        for (const auto& c : kids)
          if (is_named(c.node) && kind_of(c.node) != K::Comment) { s.value = expr(c.node, depth + 1); break; }
        break;
      }
      case K::DeleteStatement: {
        s.kind = StmtKind::Delete;
        for (const auto& c : kids) {
          if (!is_named(c.node)) continue;
          if (kind_of(c.node) == K::ExpressionList) {
            for (const auto& x : children_of(c.node))
              if (is_named(x.node)) s.targets.push_back(expr(x.node, depth + 1));
          } else {
            s.targets.push_back(expr(c.node, depth + 1));
          }
        }
        break;
      }
      case K::PassStatement: s.kind = StmtKind::Pass; break;
      case K::BreakStatement: s.kind = StmtKind::Break; break;
      case K::ContinueStatement: s.kind = StmtKind::Continue; break;
      case K::ImportStatement: {
        s.kind = StmtKind::Import;
        for (const auto& c : kids) {
          K ck = kind_of(c.node);
          if (ck == K::DottedName) {
            std::string full = text_of(c.node);
            std::string root = full.substr(0, full.find('.'));
            add_import(root, root);
          } else if (ck == K::AliasedImport) {
            auto ak = children_of(c.node);
            add_import(text_of(field(ak, g_.f_alias)), text_of(field(ak, g_.f_name)));
          }
        }
        break;
      }
      case K::ImportFromStatement: {
        s.kind = StmtKind::Import;
        std::string mod = text_of(field(kids, g_.f_module_name));
        for (const auto& c : kids) {
          if (c.field != g_.f_name) continue;
          K ck = kind_of(c.node);
          if (ck == K::DottedName) {
            std::string name = text_of(c.node);
            add_import(name, mod + "." + name);
          } else if (ck == K::AliasedImport) {
            auto ak = children_of(c.node);
            add_import(text_of(field(ak, g_.f_alias)), mod + "." + text_of(field(ak, g_.f_name)));
          }
        }
        for (const auto& c : kids)
          if (kind_of(c.node) == K::WildcardImport) m_.star_imports.push_back(mod);
        break;
      }
      case K::FutureImportStatement: s.kind = StmtKind::Import; break;
      case K::IfStatement: {
        s.kind = StmtKind::If;
        s.value = expr(field(kids, g_.f_condition), depth + 1);
        s.body = block_field(kids, g_.f_consequence, depth);
        // elif/else chain: build nested Ifs from the last clause backwards.
        std::vector<TSNode> alts;
        for (const auto& c : kids)
          if (c.field == g_.f_alternative) alts.push_back(c.node);
        std::vector<Id> tail;
        for (auto it = alts.rbegin(); it != alts.rend(); ++it) {
          if (kind_of(*it) == K::ElseClause) {
            tail = block_field(*it, g_.f_body, depth);
          } else {
            Stmt e;
            e.kind = StmtKind::If;
            e.range = range_of(*it);
            e.value = expr(fchild(*it, g_.f_condition), depth + 1);
            e.body = block_field(*it, g_.f_consequence, depth);
            e.orelse = std::move(tail);
            tail = {add_stmt(std::move(e))};
          }
        }
        s.orelse = std::move(tail);
        break;
      }
      case K::ForStatement: {
        s.kind = StmtKind::For;
        s.is_async = kind_of(ts_node_child(n, 0)) == K::Async;  // `async` can only come first
        s.value = expr(fchild(n, g_.f_right), depth + 1);
        s.targets.push_back(expr(fchild(n, g_.f_left), depth + 1));
        s.body = block_field(n, g_.f_body, depth);
        TSNode alt = fchild(n, g_.f_alternative);
        if (!ts_node_is_null(alt)) s.orelse = block_field(alt, g_.f_body, depth);
        break;
      }
      case K::WhileStatement: {
        s.kind = StmtKind::While;
        s.value = expr(fchild(n, g_.f_condition), depth + 1);
        s.body = block_field(n, g_.f_body, depth);
        TSNode alt = fchild(n, g_.f_alternative);
        if (!ts_node_is_null(alt)) s.orelse = block_field(alt, g_.f_body, depth);
        break;
      }
      case K::WithStatement: {
        s.kind = StmtKind::With;
        for (const auto& c : kids) {
          K ck = kind_of(c.node);
          if (ck == K::Async) s.is_async = true;
          if (ck != K::WithClause) continue;
          for (const auto& item : children_of(c.node)) {
            if (kind_of(item.node) != K::WithItem) continue;
            TSNode v = field(children_of(item.node), g_.f_value);
            if (kind_of(v) == K::AsPattern) {
              auto pk = children_of(v);
              TSNode ctx{}, alias = field(pk, g_.f_alias);
              for (const auto& x : pk)
                if (is_named(x.node) && x.field != g_.f_alias) { ctx = x.node; break; }
              s.items.push_back(expr(ctx, depth + 1));
              TSNode target{};
              if (!ts_node_is_null(alias))
                for (const auto& x : children_of(alias))
                  if (is_named(x.node)) { target = x.node; break; }
              s.targets.push_back(ts_node_is_null(target) ? kNone : expr(target, depth + 1));
            } else {
              s.items.push_back(expr(v, depth + 1));
              s.targets.push_back(kNone);
            }
          }
        }
        s.body = block_field(kids, g_.f_body, depth);
        break;
      }
      case K::TryStatement: {
        s.kind = StmtKind::Try;
        s.body = block_field(kids, g_.f_body, depth);
        for (const auto& c : kids) {
          K ck = kind_of(c.node);
          if (ck == K::ExceptClause || ck == K::ExceptGroupClause) {
            Handler h;
            h.range = range_of(c.node);
            auto hk = children_of(c.node);
            TSNode val = field(hk, g_.f_value), alias = field(hk, g_.f_alias);
            for (const auto& x : hk) {
              if (!is_named(x.node)) continue;
              K xk = kind_of(x.node);
              if (xk == K::Block) {
                h.body = lower_block_children(x.node, depth + 1);
              } else if (xk == K::AsPattern) {  // older shape: `except E as e`
                auto pk = children_of(x.node);
                for (const auto& y : pk)
                  if (is_named(y.node) && y.field != g_.f_alias) { h.type = expr(y.node, depth + 1); break; }
                TSNode al = field(pk, g_.f_alias);
                if (!ts_node_is_null(al)) h.name = text_of(al);
              } else if (xk != K::Comment && h.type == kNone && ts_node_is_null(val)) {
                h.type = expr(x.node, depth + 1);
              }
            }
            if (kind_of(val) == K::AsPattern) {
              auto pk = children_of(val);
              for (const auto& y : pk)
                if (is_named(y.node) && y.field != g_.f_alias) { h.type = expr(y.node, depth + 1); break; }
              TSNode al = field(pk, g_.f_alias);
              if (!ts_node_is_null(al)) h.name = text_of(al);
            } else if (!ts_node_is_null(val)) {
              h.type = expr(val, depth + 1);
            }
            if (!ts_node_is_null(alias)) h.name = text_of(alias);
            s.handlers.push_back(std::move(h));
          } else if (ck == K::ElseClause) {
            s.orelse = block_field(children_of(c.node), g_.f_body, depth);
          } else if (ck == K::FinallyClause) {
            for (const auto& x : children_of(c.node))
              if (kind_of(x.node) == K::Block) s.finalbody = lower_block_children(x.node, depth + 1);
          }
        }
        break;
      }
      case K::MatchStatement: {
        s.kind = StmtKind::Other;
        s.value = expr(field(kids, g_.f_subject), depth + 1);
        TSNode body = field(kids, g_.f_body);
        if (!ts_node_is_null(body))
          for (const auto& c : children_of(body))
            if (kind_of(c.node) == K::CaseClause)
              for (const auto& x : children_of(c.node))
                if (kind_of(x.node) == K::Block) {
                  auto b = lower_block_children(x.node, depth + 1);
                  s.body.insert(s.body.end(), b.begin(), b.end());
                }
        break;
      }
      case K::DecoratedDefinition: {
        std::vector<Id> decos;
        for (const auto& c : kids)
          if (kind_of(c.node) == K::Decorator)
            for (const auto& x : children_of(c.node))
              if (is_named(x.node) && kind_of(x.node) != K::Comment) {
                decos.push_back(expr(x.node, depth + 1));
                break;
              }
        TSNode def = field(kids, g_.f_definition);
        if (kind_of(def) == K::FunctionDefinition) {
          out.push_back(function(def, n, std::move(decos), depth));
        } else if (kind_of(def) == K::ClassDefinition) {
          out.push_back(klass(def, n, depth, std::move(decos)));
        }
        return;
      }
      case K::FunctionDefinition:
        out.push_back(function(n, n, {}, depth));
        return;
      case K::ClassDefinition:
        out.push_back(klass(n, n, depth));
        return;
      default: {
        s.kind = StmtKind::Other;
        if (kind_of(n) == K::AssertStatement) s.text = "assert";
        // `global a, b` / `nonlocal a`: the names it declares, as targets (of an Other statement,
        // which binds nothing).
        if (kind_of(n) == K::GlobalStatement || kind_of(n) == K::NonlocalStatement) {
          s.text = kind_of(n) == K::GlobalStatement ? "global" : "nonlocal";
          for (const auto& c : kids)
            if (is_named(c.node) && kind_of(c.node) != K::Comment) s.targets.push_back(expr(c.node, depth + 1));
          break;
        }
        for (const auto& c : kids) {
          if (!is_named(c.node) || kind_of(c.node) == K::Comment) continue;
          if (kind_of(c.node) == K::Block) {
            auto b = lower_block_children(c.node, depth + 1);
            s.body.insert(s.body.end(), b.begin(), b.end());
          } else if (s.value == kNone) {
            s.value = expr(c.node, depth + 1);
          }
        }
        break;
      }
    }
    out.push_back(add_stmt(std::move(s)));
  }

  Id function(TSNode def, TSNode outer, std::vector<Id> decos, int depth) {
    Function f;
    f.name = text_of(fchild(def, g_.f_name));
    f.cls = cur_class_;
    f.parent = cur_func_;
    f.decorators = std::move(decos);
    f.range = range_of(outer);
    f.header = range_of(def);
    TSNode params = fchild(def, g_.f_parameters);
    if (!ts_node_is_null(params)) {
      for (const auto& p : named_children_of(params)) {
        K pk = kind_of(p.node);
        const size_t before = f.params.size();
        if (pk == K::Identifier) {
          f.params.push_back(text_of(p.node));
        } else if (pk == K::DefaultParameter || pk == K::TypedDefaultParameter) {
          f.params.push_back(text_of(fchild(p.node, g_.f_name)));
        } else if (pk == K::TypedParameter) {
          for (const auto& x : children_of(p.node))
            if (kind_of(x.node) == K::Identifier) { f.params.push_back(text_of(x.node)); break; }
        }
        if (f.params.size() != before) {
          TSNode type = pk == K::TypedParameter || pk == K::TypedDefaultParameter ? fchild(p.node, g_.f_type)
                                                                                   : TSNode{};
          f.param_types.push_back(ts_node_is_null(type) ? std::string() : text_of(type));
          std::string def;
          if (pk == K::DefaultParameter || pk == K::TypedDefaultParameter) {
            TSNode v = fchild(p.node, g_.f_value);
            const K vk = ts_node_is_null(v) ? K::Unknown : kind_of(v);
            if (vk == K::True || vk == K::False || vk == K::None || vk == K::Integer || vk == K::Float) def = text_of(v);
            // A plain string (`split='val'`), quotes kept: no prefix, escape or interpolation.
            if (vk == K::String) {
              std::string t = text_of(v);
              if (t.size() >= 2 && (t[0] == '\'' || t[0] == '"') && t.back() == t[0] &&
                  t.find_first_of("\\\n{}", 1) == std::string::npos && t.find(t[0], 1) == t.size() - 1)
                def = std::move(t);
            }
          }
          f.param_defaults.push_back(std::move(def));
        }
      }
    }
    Id fid = static_cast<Id>(m_.funcs.size());
    m_.funcs.push_back(std::move(f));
    Stmt s;
    s.kind = StmtKind::FunctionDef;
    s.range = range_of(outer);
    s.func = fid;
    // `async` comes before the name: look at the tokens up to the first named child.
    for (uint32_t i = 0, nc = ts_node_child_count(def); i < nc; ++i) {
      TSNode c = ts_node_child(def, i);
      if (kind_of(c) == K::Async) s.is_async = true;
      if (is_named(c) && kind_of(c) != K::Comment) break;
    }
    Id sid = add_stmt(std::move(s));
    m_.funcs[fid].stmt = sid;
    if (cur_class_ != kNone && cur_func_ == kNone) m_.classes[cur_class_].methods.push_back(fid);

    Id saved_func = cur_func_, saved_class = cur_class_;
    cur_func_ = fid;
    cur_class_ = kNone;
    TSNode body = fchild(def, g_.f_body);
    std::vector<Id> b;
    if (!ts_node_is_null(body)) {
      b = lower_block_children(body, depth + 1);
      m_.funcs[fid].body_indent = ts_node_start_point(body).column;
    }
    m_.funcs[fid].body = std::move(b);
    cur_func_ = saved_func;
    cur_class_ = saved_class;
    return sid;
  }

  Id klass(TSNode def, TSNode outer, int depth, std::vector<Id> decorators = {}) {
    auto kids = children_of(def);
    Class c;
    c.name = text_of(field(kids, g_.f_name));
    c.decorators = std::move(decorators);
    c.range = range_of(outer);
    TSNode sup = field(kids, g_.f_superclasses);
    if (!ts_node_is_null(sup))
      for (const auto& x : children_of(sup))
        if (is_named(x.node) && kind_of(x.node) != K::KeywordArgument &&
            kind_of(x.node) != K::Comment)
          c.bases.push_back(expr(x.node, depth + 1));
    Id cid = static_cast<Id>(m_.classes.size());
    m_.classes.push_back(std::move(c));
    Stmt s;
    s.kind = StmtKind::ClassDef;
    s.range = range_of(outer);
    s.cls = cid;
    Id sid = add_stmt(std::move(s));
    m_.classes[cid].stmt = sid;
    Id saved_func = cur_func_, saved_class = cur_class_;
    cur_class_ = cid;
    cur_func_ = kNone;
    TSNode body = field(kids, g_.f_body);
    std::vector<Id> b;
    if (!ts_node_is_null(body)) b = lower_block_children(body, depth + 1);
    m_.stmts[sid].body = std::move(b);
    cur_func_ = saved_func;
    cur_class_ = saved_class;
    return sid;
  }

  // Names a function binds itself (parameters; assignment, loop, `with ... as` and handler
  // targets at any depth of its blocks, not in the functions and classes it defines): in Python they are the function's locals everywhere in it, so an
  // import of the same name (`import model` beside `def train(model, ...)`) is not what they
  // hold there, nor in the functions nested in it. Only names that are also imports are kept.
  std::vector<std::vector<std::string>> locals_shadowing_imports() const {
    std::vector<std::vector<std::string>> out(m_.funcs.size());
    if (m_.aliases.empty()) return out;
    // (Most bound names are no import: their lengths and first letters say so without hashing.)
    uint64_t lengths = 0, firsts[4] = {0, 0, 0, 0};
    for (const auto& [name, q] : m_.aliases) {
      if (name.empty()) continue;
      lengths |= uint64_t{1} << std::min<size_t>(name.size(), 63);
      const unsigned char c = static_cast<unsigned char>(name[0]);
      firsts[c >> 6] |= uint64_t{1} << (c & 63);
    }
    auto add = [&](size_t f, const std::string& name) {
      if (name.empty() || !(lengths & (uint64_t{1} << std::min<size_t>(name.size(), 63)))) return;
      const unsigned char c = static_cast<unsigned char>(name[0]);
      if (!(firsts[c >> 6] & (uint64_t{1} << (c & 63)))) return;
      if (m_.aliases.count(name) && std::find(out[f].begin(), out[f].end(), name) == out[f].end())
        out[f].push_back(name);
    };
    std::vector<Id> names;
    auto target_names = [&](Id t) {
      names.assign(1, t);
      for (size_t k = 0; k < names.size() && k < 256; ++k) {
        const Expr& x = m_.exprs[names[k]];
        if (x.kind == ExprKind::Name) continue;
        if (x.kind == ExprKind::Sequence || x.kind == ExprKind::Starred)
          for (Id kid : x.kids) names.push_back(kid);
      }
    };
    std::vector<const std::vector<Id>*> blocks;  // blocks still to walk (never copied)
    for (size_t f = 0; f < m_.funcs.size(); ++f) {
      for (const std::string& p : m_.funcs[f].params) add(f, p);
      blocks.assign(1, &m_.funcs[f].body);
      while (!blocks.empty()) {
        const std::vector<Id>* block = blocks.back();
        blocks.pop_back();
        for (Id sid : *block) {
          const Stmt& st = m_.stmts[sid];
          if (st.kind == StmtKind::FunctionDef || st.kind == StmtKind::ClassDef) continue;
          if (st.kind == StmtKind::Assign || st.kind == StmtKind::AugAssign || st.kind == StmtKind::AnnAssign ||
              st.kind == StmtKind::For || st.kind == StmtKind::With)
            for (Id t : st.targets) {
              if (t == kNone) continue;
              target_names(t);
              for (Id n : names)
                if (m_.exprs[n].kind == ExprKind::Name) add(f, m_.exprs[n].text);
            }
          for (const Handler& h : st.handlers) {
            if (!h.name.empty()) add(f, h.name);
            blocks.push_back(&h.body);
          }
          for (const auto* b : {&st.body, &st.orelse, &st.finalbody})
            if (!b->empty()) blocks.push_back(b);
        }
      }
    }
    return out;
  }

  // Kids precede parents in the arena, so one forward pass resolves attribute chains.
  void resolve_qnames() {
    bool torch_bound = m_.aliases.count("torch") != 0;
    // Functions with locals named like an import, by start; a name inside one of them (or in
    // a function nested in it) that it binds is its local, not the import.
    const std::vector<std::vector<std::string>> shadowing = locals_shadowing_imports();
    std::vector<Id> scopes;
    for (Id f = 0; f < m_.funcs.size(); ++f)
      if (!shadowing[f].empty()) scopes.push_back(f);
    std::sort(scopes.begin(), scopes.end(),
              [&](Id a, Id b) { return m_.funcs[a].range.begin < m_.funcs[b].range.begin; });
    // Each scope's innermost enclosing scope (they nest): a name's scopes are the last one
    // starting before it and, up this chain, those that still hold it.
    std::vector<Id> around(m_.funcs.size(), kNone), open;
    for (Id f : scopes) {
      while (!open.empty() && m_.funcs[open.back()].range.end <= m_.funcs[f].range.begin) open.pop_back();
      around[f] = open.empty() ? kNone : open.back();
      open.push_back(f);
    }
    auto local_at = [&](const Expr& e) {
      auto it = std::upper_bound(scopes.begin(), scopes.end(), e.range.begin,
                                 [&](uint32_t pos, Id f) { return pos < m_.funcs[f].range.begin; });
      if (it == scopes.begin()) return false;
      for (Id f = *std::prev(it); f != kNone; f = around[f]) {
        const Function& fn = m_.funcs[f];
        // (A decorator runs outside the function it decorates.)
        if (e.range.begin >= fn.range.end || e.range.begin < fn.header.begin) continue;
        const auto& names = shadowing[f];
        if (std::find(names.begin(), names.end(), e.text) != names.end()) return true;
      }
      return false;
    };
    for (auto& e : m_.exprs) {
      if (e.kind == ExprKind::Name) {
        if (!scopes.empty() && local_at(e)) continue;
        auto it = m_.aliases.find(e.text);
        if (it != m_.aliases.end()) e.qname = it->second;
        else if (!torch_bound && e.text == "torch") e.qname = "torch";  // snippet without imports
      } else if (e.kind == ExprKind::Attribute && !e.kids.empty()) {
        const Expr& obj = m_.exprs[e.kids[0]];
        if (!obj.qname.empty()) e.qname = obj.qname + "." + e.text;
      }
    }
  }
};

// Collects comments and the first syntax error with an explicit cursor walk (no recursion).
// Only subtrees that can hold what is looked for are entered: one whose bytes contain no
// `#` holds no comment, one without has_error holds no error. Most of a file is skipped.
void scan_tree(TSNode root, std::string_view src, Module& m, std::vector<Diagnostic>& diags) {
  std::vector<uint32_t> hashes;  // offsets of every '#', ascending
  for (const char* p = src.data(); (p = static_cast<const char*>(std::memchr(p, '#', src.data() + src.size() - p)));
       ++p)
    hashes.push_back(static_cast<uint32_t>(p - src.data()));
  auto has_hash = [&](TSNode n) {
    auto it = std::lower_bound(hashes.begin(), hashes.end(), ts_node_start_byte(n));
    return it != hashes.end() && *it < ts_node_end_byte(n);
  };
  bool reported = false;
  bool want_errors = ts_node_has_error(root);
  if (hashes.empty() && !want_errors) return;
  struct Cursor {
    TSTreeCursor c;
    ~Cursor() { ts_tree_cursor_delete(&c); }  // also when budget::tick() throws
  } cur{ts_tree_cursor_new(root)};
  TSTreeCursor& c = cur.c;
  for (;;) {
    budget::tick();
    TSNode n = ts_tree_cursor_current_node(&c);
    K k = kind_of(n);
    bool descend = has_hash(n) || (want_errors && !reported && ts_node_has_error(n));
    if (k == K::Comment) {
      uint32_t b = ts_node_start_byte(n), e = ts_node_end_byte(n);
      Comment cm;
      cm.line = ts_node_start_point(n).row + 1;
      if (b < e && e <= src.size()) cm.text = std::string(src.substr(b + 1, e - b - 1));
      m.comments.push_back(std::move(cm));
      descend = false;
    } else if (want_errors && !reported && (k == K::Error || ts_node_is_missing(n))) {
      reported = true;
      // Error recovery may wrap much of the file in one ERROR node (from the first import,
      // when a list inside a function lacks a comma): the error is its first innermost
      // ERROR or MISSING node, reached through the children that hold an error.
      for (int depth = 0; depth < 1024 && !ts_node_is_missing(n); ++depth) {
        budget::tick();
        bool deeper = false;
        const uint32_t count = ts_node_child_count(n);
        for (uint32_t i = 0; i < count && !deeper; ++i) {
          TSNode ch = ts_node_child(n, i);
          if (ts_node_is_missing(ch) || ts_node_has_error(ch)) n = ch, deeper = true;
        }
        if (!deeper) break;
      }
      Diagnostic d;
      d.path = m.path;
      d.kind = "syntax-error";
      TSPoint p = ts_node_start_point(n);
      d.line = p.row + 1;
      d.col = p.column + 1;
      if (ts_node_is_missing(n)) {
        d.message = std::string("syntax error: missing `") + ts_node_type(n) + "`";
      } else {
        d.message = "syntax error: unexpected input";
      }
      d.message += "; the rest of the file is analysed with error recovery";
      diags.push_back(std::move(d));
    }
    if (descend && ts_tree_cursor_goto_first_child(&c)) continue;
    while (!ts_tree_cursor_goto_next_sibling(&c)) {
      if (!ts_tree_cursor_goto_parent(&c)) return;
    }
  }
}

// CPython's indentation rules, which tree-sitter does not enforce (it reads a tab as 8 columns
// and accepts what Python rejects): Python compares each logical line's indentation both with
// tabs as 8 columns and as 1, and raises TabError when the two orders disagree, and
// IndentationError when a dedent lands between two levels. Such a file does not run at all; the
// first offending line gets a syntax-error diagnostic. Only files with a tab in some line's
// indentation are walked (one memchr for the rest): a space-only dedent mismatch is left to the
// grammar.
void check_indentation(TSNode root, std::string_view src, const std::string& path, std::vector<Diagnostic>& diags) {
  using namespace std::string_view_literals;
  bool tab_indent = false;
  for (size_t i = src.find('\t'); i != std::string_view::npos && !tab_indent; i = src.find('\t', i + 1)) {
    size_t b = src.rfind('\n', i);
    b = b == std::string_view::npos ? 0 : b + 1;
    tab_indent = src.substr(b, i - b).find_first_not_of(" \t\f") == std::string_view::npos;
  }
  if (!tab_indent) return;
  // The start of every statement and clause (`elif`, `else`, `except`, `finally`, `case`, a
  // decorator): the logical lines whose indentation Python checks.
  std::vector<uint32_t> starts;
  std::vector<TSNode> work{root};
  while (!work.empty()) {
    budget::tick();
    TSNode n = work.back();
    work.pop_back();
    const std::string_view nt = ts_node_type(n);
    // (Statements tree-sitter could not place, an unexpected indent among them, sit in an ERROR.)
    const bool holds_statements = nt == "module"sv || nt == "block"sv || nt == "ERROR"sv;
    const uint32_t count = ts_node_named_child_count(n);
    for (uint32_t i = 0; i < count; ++i) {
      TSNode ch = ts_node_named_child(n, i);
      const std::string_view t = ts_node_type(ch);
      if (t == "comment"sv) continue;
      const bool clause = t.size() > 7 && t.substr(t.size() - 7) == "_clause"sv && t != "as_pattern_clause"sv;
      if (t == "block"sv) {
        work.push_back(ch);
      } else if (holds_statements || clause || t == "decorator"sv || t == "function_definition"sv ||
                 t == "class_definition"sv) {
        starts.push_back(ts_node_start_byte(ch));
        if (t != "decorator"sv) work.push_back(ch);
      }
    }
  }
  std::sort(starts.begin(), starts.end());
  std::vector<std::pair<long, long>> stack{{0, 0}};  // (column with tabs of 8, with tabs of 1)
  long last_line_start = -1;
  for (uint32_t at : starts) {
    if (at > src.size()) continue;
    size_t b = src.rfind('\n', at == 0 ? 0 : at - 1);
    b = at == 0 || b == std::string_view::npos ? 0 : b + 1;
    if (static_cast<long>(b) == last_line_start) continue;  // `a = 1; b = 2`: one logical line
    const std::string_view lead = src.substr(b, at - b);
    if (lead.find_first_not_of(" \t\f") != std::string_view::npos) continue;  // not first on its line
    last_line_start = static_cast<long>(b);
    long col = 0, alt = 0;
    for (char ch : lead) {
      if (ch == ' ') ++col, ++alt;
      else if (ch == '\t') col = (col / 8 + 1) * 8, ++alt;
      else col = alt = 0;  // a form feed resets the column, as in CPython
    }
    const char* problem = nullptr;
    if (col == stack.back().first) {
      if (alt != stack.back().second) problem = "tab";
    } else if (col > stack.back().first) {
      if (alt <= stack.back().second) problem = "tab";
      else stack.push_back({col, alt});
    } else {
      while (stack.size() > 1 && col < stack.back().first) stack.pop_back();
      if (col != stack.back().first) problem = "dedent";
      else if (alt != stack.back().second) problem = "tab";
    }
    if (!problem) continue;
    Diagnostic d;
    d.path = path;
    d.kind = "syntax-error";
    size_t line = 1;
    for (size_t i = 0; i < b; ++i) line += src[i] == '\n';
    d.line = static_cast<int>(line);
    d.col = 1;
    d.message = std::string(problem[0] == 't' ? "inconsistent use of tabs and spaces in indentation "
                                              : "unindent does not match any outer indentation level ") +
                std::string(kPythonRejectsIndentation) + (problem[0] == 't' ? "TabError)" : "IndentationError)") +
                "; the file is analysed as tree-sitter reads it, a tab as 8 columns, but Python will not run it";
    diags.push_back(std::move(d));
    return;
  }
}

struct ParserDeleter { void operator()(TSParser* p) const { ts_parser_delete(p); } };
struct TreeDeleter { void operator()(TSTree* t) const { ts_tree_delete(t); } };

TSParser* thread_parser() {
  thread_local std::unique_ptr<TSParser, ParserDeleter> p([] {
    TSParser* parser = ts_parser_new();
    ts_parser_set_language(parser, grammar().lang);
    return parser;
  }());
  return p.get();
}

}  // namespace

bool lower(std::string_view source, const std::string& path, Module& out,
           std::vector<Diagnostic>& diags, const ParseOptions& opts) {
  // A lone `\r` ends a line, as in CPython (old Mac files). tree-sitter's rows count only
  // `\n`, so such a file is parsed as a copy with each lone `\r` made a `\n`: one byte for
  // one, so every byte offset (and every fix) still matches the original file.
  std::string normalized;
  if (has_lone_cr(source)) {
    normalized.assign(source);
    normalize_lone_cr(normalized);
    source = normalized;
  }
  out.lang = Lang::Python;
  out.path = path;
  TSParser* parser = thread_parser();
  ts_parser_reset(parser);
  ts_parser_set_timeout_micros(parser, opts.timeout_micros);
  std::unique_ptr<TSTree, TreeDeleter> tree(
      ts_parser_parse_string(parser, nullptr, source.data(), static_cast<uint32_t>(source.size())));
  ts_parser_set_timeout_micros(parser, 0);
  if (!tree) {
    Diagnostic d;
    d.path = path;
    d.kind = "timeout";
    d.message = "parsing took longer than the per-file budget (" +
                std::to_string(opts.timeout_micros / 1000) + " ms); file not analysed";
    d.fatal = true;
    diags.push_back(std::move(d));
    ts_parser_reset(parser);
    return false;
  }
  TSNode root = ts_tree_root_node(tree.get());
  scan_tree(root, source, out, diags);
  check_indentation(root, source, path, diags);
  Lowerer(source, out, diags).run(root);
  return true;
}

bool has_lone_cr(std::string_view s) {
  for (size_t i = s.find('\r'); i != std::string_view::npos; i = s.find('\r', i + 1))
    if (i + 1 == s.size() || s[i + 1] != '\n') return true;
  return false;
}

void normalize_lone_cr(std::string& s) {
  for (size_t i = s.find('\r'); i != std::string::npos; i = s.find('\r', i + 1))
    if (i + 1 == s.size() || s[i + 1] != '\n') s[i] = '\n';
}

StringRows string_rows(std::string_view source, uint64_t timeout_micros) {
  StringRows out;
  size_t rows = 1;
  for (char c : source) rows += c == '\n';
  out.starts.assign(rows, false);
  out.ends.assign(rows, false);
  TSParser* parser = thread_parser();
  ts_parser_reset(parser);
  ts_parser_set_timeout_micros(parser, timeout_micros);
  std::unique_ptr<TSTree, TreeDeleter> tree(
      ts_parser_parse_string(parser, nullptr, source.data(), static_cast<uint32_t>(source.size())));
  ts_parser_set_timeout_micros(parser, 0);
  if (!tree) return out;
  static const TSSymbol kString = ts_language_symbol_for_name(grammar().lang, "string", 6, true);
  // Only nodes spanning rows can hold a multi-line string: single-row subtrees are skipped.
  // One cursor walks the tree in O(nodes).
  TSTreeCursor c = ts_tree_cursor_new(ts_tree_root_node(tree.get()));
  for (;;) {
    TSNode n = ts_tree_cursor_current_node(&c);
    const uint32_t first = ts_node_start_point(n).row, last = ts_node_end_point(n).row;
    bool descend = false;
    if (first != last) {
      if (ts_node_symbol(n) == kString) {
        for (uint32_t r = first; r <= last && r < rows; ++r) {
          if (r > first) out.starts[r] = true;
          if (r < last) out.ends[r] = true;
        }
      } else {
        descend = true;
      }
    }
    if (descend && ts_tree_cursor_goto_first_child(&c)) continue;
    bool more = true;
    while (!ts_tree_cursor_goto_next_sibling(&c))
      if (!ts_tree_cursor_goto_parent(&c)) {
        more = false;
        break;
      }
    if (!more) break;
  }
  ts_tree_cursor_delete(&c);
  return out;
}

size_t parse_only(std::string_view source) {
  TSParser* parser = thread_parser();
  ts_parser_reset(parser);
  std::unique_ptr<TSTree, TreeDeleter> tree(
      ts_parser_parse_string(parser, nullptr, source.data(), static_cast<uint32_t>(source.size())));
  if (!tree) return 0;
  return ts_node_child_count(ts_tree_root_node(tree.get()));
}

}  // namespace ll::python
