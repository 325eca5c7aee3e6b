// The flow-sensitive core: a control-flow graph per function (and one for module level),
// reaching definitions of names at every statement, and "is this name read again after
// this point" (liveness) over it. Checks ask "which bindings of `model` can this forward
// see?" instead of "what is `model` bound to anywhere in the function?".
//
// Nodes are statements; compound statements (if/for/while/with/try headers) are a node
// for their header, and their bodies are nodes of the same graph. Names are dotted chains
// (`x`, `self.model`). Graphs and per-name results are built lazily, on the first question
// about a function or a name, so a file whose checks ask nothing pays nothing.
#pragma once

#include <cstdint>
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "rules/model.hpp"

namespace ll {

class Facts;

enum class DefKind : uint8_t {
  Assign,     // x = value (value may be an element of a matching tuple display)
  Unpacked,   // a, b = f(): value is the whole right-hand side
  Augmented,  // x += value
  Declared,   // x: T = value / C++ `T x = value;` (Stmt::text holds T)
  LoopTarget, // for x in value: value is the iterable
  WithAlias,  // with value as x
  Handler,    // except E as x
  Definition, // def x / class x
};

struct Def {
  Id stmt = kNone;  // statement that binds (for a handler: the Try statement)
  Id value = kNone; // bound expression when known
  DefKind kind = DefKind::Assign;
};

class Flow {
 public:
  explicit Flow(const Facts& f);
  ~Flow();

  // Bindings of `dotted` that may reach the point just before statement `at` runs (for a
  // compound statement: before its header is evaluated). `*outside` is set when some path
  // from the function's entry reaches `at` with no binding of the name in the function
  // (a parameter, closure, global or attribute set elsewhere). An `at` outside any known
  // function graph yields nothing with *outside = true.
  std::vector<Def> reaching(Id at, const std::string& dotted, bool* outside) const;

  // Is `dotted` (or an attribute/subscript of it) read on some path that leaves statement
  // `from`, before the name is bound again or deleted? `stop` (optional) is a statement
  // at which paths end without counting it as a read.
  bool read_after(Id from, const std::string& dotted, Id stop = kNone) const;

  // Number of graph nodes built so far (for tests and --stats).
  size_t nodes_built() const;
  // Node visits spent on dense per-name dataflow and liveness walks (for the linearity test).
  size_t work_done() const;

  struct Graph;     // defined in flow.cpp
  struct NameFlow;

 private:
  const Graph* graph_of_stmt(Id stmt, int* node) const;
  const Graph* graph(Id func) const;  // func == kNone: module level
  const NameFlow& name_flow(const Graph& g, const std::string& dotted) const;
  void make_dense(const Graph& g, const NameFlow& nf) const;

  const Facts& f_;
  mutable std::unordered_map<Id, std::unique_ptr<Graph>> graphs_;  // key: func, kNone = module
};

}  // namespace ll
