#include "checks/flow.hpp"

#include <algorithm>

#include "checks/facts.hpp"
#include "rules/budget.hpp"

namespace ll {
namespace {

constexpr int kEntry = 0, kExit = 1;
// Reaching definitions use one 64-bit set per node and name: bit 0 is "bound outside the
// function", bits 1..63 the name's bindings. A name bound more often than that in one
// function (generated code) falls back to "any binding may reach".
constexpr size_t kMaxDefs = 63;
// Work bound per graph: dense per-name dataflow and liveness walks may visit at most this
// many nodes per node of the graph (plus a constant). Beyond it a name is answered
// flow-insensitively (every binding may reach; "still used" for liveness), so a generated
// function with thousands of names stays linear.
constexpr size_t kWorkPerNode = 64, kWorkBase = 100000;

bool has_prefix(const std::string& s, const std::string& p) {
  return s.size() > p.size() && s.compare(0, p.size(), p) == 0 && s[p.size()] == '.';
}

}  // namespace

struct Flow::NameFlow {
  std::vector<Def> defs;       // bit i + 1
  std::vector<int> nodes;      // nodes that bind or unbind the name (or a prefix of it)
  std::vector<uint64_t> gens;  // per nodes[i]: the bits it generates (0: unbinds; 1: unknown)
  int single = -1;             // the only such node, when it binds the name itself
  bool dense = false;          // `in` computed
  std::vector<uint64_t> in;    // per node
  bool overflow = false;
};

struct Flow::Graph {
  Id func = kNone;
  std::vector<Id> stmt;        // node -> statement (kNone: entry / exit)
  std::vector<int> handler;    // node -> handler index of a Try (pseudo node binding `as e`), else -1
  std::vector<std::vector<int>> succ;
  std::unordered_map<Id, int> node_of;
  std::vector<int> order;      // reverse postorder from the entry
  // Per node: names it binds (with the binding) and names it unbinds (`del x`).
  std::vector<std::vector<std::pair<std::string, Def>>> binds;
  std::vector<std::vector<std::string>> unbinds;
  std::unordered_map<std::string, std::unique_ptr<NameFlow>> names;
  // Built once per graph.
  std::vector<std::vector<int>> pred;  // predecessors that run at all
  std::unordered_map<std::string, std::vector<int>> affecting;  // name -> nodes binding/unbinding it
  std::vector<int> rpo;                // node -> index in `order` (-1: unreachable)
  std::vector<int> idom, dom_pre, dom_post;  // dominator tree, on the first question that needs it
  size_t work = 0;                     // nodes visited by dense name flows and liveness walks
  size_t budget() const { return kWorkPerNode * stmt.size() + kWorkBase; }
};

namespace {

struct Builder {
  const Facts& f;
  Flow::Graph& g;
  struct Ctx {
    int brk = -1, cont = -1;
    std::vector<int> raise_to;  // handlers (and a finally) of enclosing try bodies
  };

  int add(Id stmt, int handler) {
    budget::tick();
    int n = static_cast<int>(g.stmt.size());
    g.stmt.push_back(stmt);
    g.handler.push_back(handler);
    g.succ.emplace_back();
    if (stmt != kNone && handler < 0) g.node_of[stmt] = n;
    return n;
  }

  int seq(const std::vector<Id>& body, int next, const Ctx& c) {
    for (auto it = body.rbegin(); it != body.rend(); ++it) next = stmt(*it, next, c);
    return next;
  }

  // Builds the node of `sid` whose normal successor is `next`; returns it.
  int stmt(Id sid, int next, const Ctx& c) {
    int n = add(sid, -1);
    const Stmt& s = f.m.s(sid);
    std::vector<int> out;
    switch (s.kind) {
      case StmtKind::If:
        out.push_back(seq(s.body, next, c));
        out.push_back(seq(s.orelse, next, c));
        break;
      case StmtKind::For:
      case StmtKind::While: {
        int after = seq(s.orelse, next, c);
        Ctx in = c;
        in.brk = next;
        in.cont = n;
        out.push_back(seq(s.body, n, in));
        out.push_back(after);
        break;
      }
      case StmtKind::With:
      case StmtKind::ClassDef:  // a class body runs inline, once
        out.push_back(seq(s.body, next, c));
        break;
      case StmtKind::Try: {
        int fin = s.finalbody.empty() ? next : seq(s.finalbody, next, c);
        std::vector<int> hs;
        for (size_t k = 0; k < s.handlers.size(); ++k) {
          int h = add(sid, static_cast<int>(k));
          int first = seq(s.handlers[k].body, fin, c);
          g.succ[h].push_back(first);
          hs.push_back(h);
        }
        int els = seq(s.orelse, fin, c);
        Ctx body = c;
        body.raise_to.insert(body.raise_to.end(), hs.begin(), hs.end());
        if (!s.finalbody.empty()) body.raise_to.push_back(fin);
        out.push_back(seq(s.body, els, body));
        out.insert(out.end(), hs.begin(), hs.end());
        break;
      }
      case StmtKind::Return:
      case StmtKind::Raise:
        out.push_back(kExit);
        break;
      case StmtKind::Break:
        out.push_back(c.brk >= 0 ? c.brk : next);
        break;
      case StmtKind::Continue:
        out.push_back(c.cont >= 0 ? c.cont : next);
        break;
      default:
        // A C++ block (`{ ... }`) and any other statement with a body: the body runs inline.
        out.push_back(s.body.empty() ? next : seq(s.body, next, c));
        break;
    }
    // Any statement of a try body may raise into its handlers.
    out.insert(out.end(), c.raise_to.begin(), c.raise_to.end());
    for (int t : out)
      if (t >= 0) g.succ[n].push_back(t);
    return n;
  }

  void target_binds(int node, Id t, Id value, DefKind kind, Id sid) {
    if (t == kNone) return;
    const Expr& te = f.e(t);
    if (te.kind == ExprKind::Sequence) {
      bool matched = value != kNone && f.e(value).kind == ExprKind::Sequence &&
                     f.e(value).kids.size() == te.kids.size() && kind == DefKind::Assign;
      for (size_t k = 0; k < te.kids.size(); ++k)
        target_binds(node, te.kids[k], matched ? f.e(value).kids[k] : value,
                     matched || kind != DefKind::Assign ? kind : DefKind::Unpacked, sid);
      return;
    }
    if (te.kind == ExprKind::Starred && !te.kids.empty()) {
      target_binds(node, te.kids[0], value, kind == DefKind::Assign ? DefKind::Unpacked : kind, sid);
      return;
    }
    const std::string& d = f.dotted(t);
    if (!d.empty()) g.binds[node].push_back({d, Def{sid, value, kind}});
  }

  void collect(int node) {
    Id sid = g.stmt[node];
    if (sid == kNone) return;
    const Stmt& s = f.m.s(sid);
    if (g.handler[node] >= 0) {
      const Handler& h = s.handlers[g.handler[node]];
      if (!h.name.empty()) g.binds[node].push_back({h.name, Def{sid, h.type, DefKind::Handler}});
      return;
    }
    switch (s.kind) {
      case StmtKind::Assign:
        for (Id t : s.targets) target_binds(node, t, s.value, DefKind::Assign, sid);
        break;
      case StmtKind::AnnAssign:
        if (s.value != kNone)
          for (Id t : s.targets) target_binds(node, t, s.value, DefKind::Declared, sid);
        break;
      case StmtKind::AugAssign:
        for (Id t : s.targets) target_binds(node, t, s.value, DefKind::Augmented, sid);
        break;
      case StmtKind::For:
        for (Id t : s.targets) target_binds(node, t, s.value, DefKind::LoopTarget, sid);
        break;
      case StmtKind::With:
        for (size_t k = 0; k < s.items.size() && k < s.targets.size(); ++k)
          target_binds(node, s.targets[k], s.items[k], DefKind::WithAlias, sid);
        break;
      case StmtKind::FunctionDef:
        g.binds[node].push_back({f.m.funcs[s.func].name, Def{sid, kNone, DefKind::Definition}});
        break;
      case StmtKind::ClassDef:
        g.binds[node].push_back({f.m.classes[s.cls].name, Def{sid, kNone, DefKind::Definition}});
        break;
      case StmtKind::Delete:
        for (Id t : s.targets) {
          const std::string& d = f.dotted(t);
          if (!d.empty()) g.unbinds[node].push_back(d);
        }
        break;
      default:
        break;
    }
  }

  void build(const std::vector<Id>& body) {
    add(kNone, -1);  // entry
    add(kNone, -1);  // exit
    int first = seq(body, kExit, Ctx{});
    g.succ[kEntry].push_back(first);
    g.binds.resize(g.stmt.size());
    g.unbinds.resize(g.stmt.size());
    for (size_t n = 0; n < g.stmt.size(); ++n) collect(static_cast<int>(n));
    // Reverse postorder (iterative DFS).
    std::vector<char> seen(g.stmt.size(), 0);
    std::vector<std::pair<int, size_t>> stack{{kEntry, 0}};
    seen[kEntry] = 1;
    std::vector<int> post;
    while (!stack.empty()) {
      auto& [n, i] = stack.back();
      if (i < g.succ[n].size()) {
        int t = g.succ[n][i++];
        if (!seen[t]) {
          seen[t] = 1;
          stack.push_back({t, 0});
        }
      } else {
        post.push_back(n);
        stack.pop_back();
      }
    }
    g.order.assign(post.rbegin(), post.rend());
    g.rpo.assign(g.stmt.size(), -1);
    for (size_t i = 0; i < g.order.size(); ++i) g.rpo[g.order[i]] = static_cast<int>(i);
    // Predecessors that run at all (a statement after `break` contributes nothing).
    g.pred.assign(g.stmt.size(), {});
    for (size_t i = 0; i < g.stmt.size(); ++i)
      if (g.rpo[i] >= 0)
        for (int t : g.succ[i]) g.pred[t].push_back(static_cast<int>(i));
    for (size_t n = 0; n < g.stmt.size(); ++n) {
      auto note = [&](const std::string& name) {
        auto& v = g.affecting[name];
        if (v.empty() || v.back() != static_cast<int>(n)) v.push_back(static_cast<int>(n));
      };
      for (const auto& [name, def] : g.binds[n]) note(name);
      for (const auto& name : g.unbinds[n]) note(name);
    }
  }
};

// Dominator tree (Cooper, Harvey, Kennedy: "A Simple, Fast Dominance Algorithm") with
// pre/post numbers, so "does a dominate b" is two comparisons.
void build_dominators(Flow::Graph& g) {
  size_t n = g.stmt.size();
  g.idom.assign(n, -1);
  g.idom[kEntry] = kEntry;
  auto intersect = [&](int a, int b) {
    while (a != b) {
      while (g.rpo[a] > g.rpo[b]) a = g.idom[a];
      while (g.rpo[b] > g.rpo[a]) b = g.idom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (int v : g.order) {
      if (v == kEntry) continue;
      int nd = -1;
      for (int p : g.pred[v])
        if (g.idom[p] >= 0) nd = nd < 0 ? p : intersect(p, nd);
      if (nd >= 0 && g.idom[v] != nd) {
        g.idom[v] = nd;
        changed = true;
      }
    }
  }
  std::vector<std::vector<int>> kids(n);
  for (int v : g.order)
    if (v != kEntry && g.idom[v] >= 0) kids[g.idom[v]].push_back(v);
  g.dom_pre.assign(n, -1);
  g.dom_post.assign(n, -1);
  int clock = 0;
  std::vector<std::pair<int, size_t>> stack{{kEntry, 0}};
  g.dom_pre[kEntry] = clock++;
  while (!stack.empty()) {
    auto& [v, i] = stack.back();
    if (i < kids[v].size()) {
      int k = kids[v][i++];
      g.dom_pre[k] = clock++;
      stack.push_back({k, 0});
    } else {
      g.dom_post[v] = clock++;
      stack.pop_back();
    }
  }
}

bool dominates(Flow::Graph& g, int a, int b) {
  if (g.idom.empty()) build_dominators(g);
  if (g.dom_pre[a] < 0 || g.dom_pre[b] < 0) return false;
  return g.dom_pre[a] <= g.dom_pre[b] && g.dom_post[b] <= g.dom_post[a];
}

// Does the expression read `d` (the name itself, or an attribute / subscript / method of it)?
bool mentions(const Facts& f, Id x, const std::string& d) {
  bool hit = false;
  for_each_expr(f.m, x, [&](Id y) {
    if (hit) return false;
    const Expr& e = f.e(y);
    if (e.kind == ExprKind::Name || e.kind == ExprKind::Attribute) {
      const std::string& yd = f.dotted(y);
      if (!yd.empty() && (yd == d || has_prefix(yd, d))) hit = true;
    }
    return !hit;
  });
  return hit;
}

// Reads in an assignment target: `x[i] = v` and `x.a = v` read x; `x = v` does not.
bool target_reads(const Facts& f, Id t, const std::string& d) {
  if (t == kNone) return false;
  const Expr& e = f.e(t);
  if (e.kind == ExprKind::Sequence || e.kind == ExprKind::Starred) {
    for (Id k : e.kids)
      if (target_reads(f, k, d)) return true;
    return false;
  }
  const std::string& td = f.dotted(t);
  if (td == d) return false;
  if (!td.empty() && has_prefix(td, d)) return true;  // `x.a = v` uses the object x
  if (e.kind == ExprKind::Attribute || e.kind == ExprKind::Subscript)
    for (Id k : e.kids)
      if (mentions(f, k, d)) return true;
  return false;
}

bool node_reads(const Facts& f, const Flow::Graph& g, int n, const std::string& d) {
  Id sid = g.stmt[n];
  if (sid == kNone) return false;
  const Stmt& s = f.m.s(sid);
  if (g.handler[n] >= 0) return s.handlers[g.handler[n]].type != kNone && mentions(f, s.handlers[g.handler[n]].type, d);
  switch (s.kind) {
    case StmtKind::Try:
      return false;
    case StmtKind::FunctionDef:
      for (Id dec : f.m.funcs[s.func].decorators)
        if (mentions(f, dec, d)) return true;
      return false;
    case StmtKind::ClassDef:
      for (Id b : f.m.classes[s.cls].bases)
        if (mentions(f, b, d)) return true;
      return false;
    case StmtKind::Delete:
      return false;
    case StmtKind::AugAssign:
      for (Id t : s.targets)
        if (mentions(f, t, d)) return true;
      return s.value != kNone && mentions(f, s.value, d);
    default:
      for (Id t : s.targets)
        if (target_reads(f, t, d)) return true;
      for (Id it : s.items)
        if (mentions(f, it, d)) return true;
      return s.value != kNone && mentions(f, s.value, d);
  }
}

// Does node n bind or unbind `d` (or a prefix of it: rebinding `self.model` ends what was
// known about `self.model.head`, which then holds whatever the new object has: unknown
// here, *unknown = true)? *gen: the binding of `d` itself, if any.
bool node_affects(const Flow::Graph& g, int n, const std::string& d, const Def** gen, bool* unknown) {
  bool hit = false;
  *unknown = false;
  for (const auto& [name, def] : g.binds[n])
    if (name == d) {
      *gen = &def;
      *unknown = false;
      hit = true;
    } else if (has_prefix(d, name)) {
      *gen = nullptr;
      *unknown = true;
      hit = true;
    }
  for (const auto& name : g.unbinds[n])
    if (name == d || has_prefix(d, name)) {
      *gen = nullptr;
      *unknown = false;
      hit = true;
    }
  return hit;
}

}  // namespace

Flow::Flow(const Facts& f) : f_(f) {}
Flow::~Flow() = default;

size_t Flow::nodes_built() const {
  size_t n = 0;
  for (const auto& [k, g] : graphs_) n += g->stmt.size();
  return n;
}

size_t Flow::work_done() const {
  size_t n = 0;
  for (const auto& [k, g] : graphs_) n += g->work;
  return n;
}

const Flow::Graph* Flow::graph(Id func) const {
  auto it = graphs_.find(func);
  if (it != graphs_.end()) return it->second.get();
  auto g = std::make_unique<Graph>();
  g->func = func;
  Builder b{f_, *g};
  b.build(func == kNone ? f_.m.body : f_.m.funcs[func].body);
  return (graphs_[func] = std::move(g)).get();
}

const Flow::Graph* Flow::graph_of_stmt(Id stmt, int* node) const {
  auto si = f_.stmt_index.find(stmt);
  if (si == f_.stmt_index.end()) return nullptr;
  const Graph* g = graph(f_.stmt_sites[si->second].func);
  auto ni = g->node_of.find(stmt);
  if (ni == g->node_of.end()) return nullptr;
  *node = ni->second;
  return g;
}

const Flow::NameFlow& Flow::name_flow(const Graph& g, const std::string& d) const {
  auto it = g.names.find(d);
  if (it != g.names.end()) return *it->second;
  auto nf = std::make_unique<NameFlow>();
  // The nodes that bind or unbind `d` or one of its prefixes (`self.model` for `self.model.head`).
  std::vector<int> nodes;
  for (size_t p = 0; p <= d.size(); ++p) {
    if (p < d.size() && d[p] != '.') continue;
    auto a = g.affecting.find(d.substr(0, p));
    if (a != g.affecting.end()) nodes.insert(nodes.end(), a->second.begin(), a->second.end());
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  budget::tick(1 + nodes.size());
  for (int i : nodes) {
    const Def* def = nullptr;
    bool unknown = false;
    if (!node_affects(g, i, d, &def, &unknown)) continue;
    uint64_t gen = unknown ? 1 : 0;
    if (def) {
      nf->defs.push_back(*def);
      if (nf->defs.size() > kMaxDefs) nf->overflow = true;
      else gen = uint64_t{1} << nf->defs.size();
    }
    nf->nodes.push_back(i);
    nf->gens.push_back(gen);
  }
  if (nf->nodes.size() == 1 && nf->defs.size() == 1) nf->single = nf->nodes[0];
  return *(const_cast<Graph&>(g).names[d] = std::move(nf));
}

// Reaching definitions of one name at every node, iterated to a fixpoint in reverse
// postorder; within the graph's work budget, else the name is answered flow-insensitively.
void Flow::make_dense(const Graph& cg, const NameFlow& cnf) const {
  Graph& g = const_cast<Graph&>(cg);
  NameFlow& nf = const_cast<NameFlow&>(cnf);
  size_t n = g.stmt.size();
  nf.dense = true;
  if (nf.overflow || g.work + 3 * n > g.budget()) {
    nf.overflow = true;
    return;
  }
  std::vector<uint64_t> gen(n, 0);
  std::vector<char> kill(n, 0);
  for (size_t k = 0; k < nf.nodes.size(); ++k) {
    kill[nf.nodes[k]] = 1;
    gen[nf.nodes[k]] = nf.gens[k];
  }
  nf.in.assign(n, 0);
  auto out = [&](int i) { return kill[i] ? gen[i] : nf.in[i]; };
  nf.in[kEntry] = 1;  // bound outside
  for (bool changed = true; changed;) {
    changed = false;
    g.work += g.order.size();
    budget::tick(g.order.size());
    if (g.work > g.budget()) {
      nf.overflow = true;
      return;
    }
    for (int v : g.order) {
      if (v == kEntry) continue;
      uint64_t in = 0;
      for (int p : g.pred[v]) in |= out(p);
      if (in != nf.in[v]) {
        nf.in[v] = in;
        changed = true;
      }
    }
  }
}

std::vector<Def> Flow::reaching(Id at, const std::string& d, bool* outside) const {
  *outside = true;
  int node = -1;
  const Graph* g = graph_of_stmt(at, &node);
  if (!g) return {};
  const NameFlow& nf = name_flow(*g, d);
  if (nf.nodes.empty()) return {};  // never bound here: from outside
  // One binding that dominates the read (straight-line code, the common case): it is the
  // only one that reaches, and no path from the entry avoids it.
  if (nf.single >= 0 && nf.single != node && dominates(const_cast<Graph&>(*g), nf.single, node)) {
    *outside = false;
    return nf.defs;
  }
  if (!nf.dense) make_dense(*g, nf);
  if (nf.overflow) return nf.defs;  // over budget: any binding may reach, and the outside too
  uint64_t bits = nf.in[node];
  *outside = (bits & 1) != 0;
  std::vector<Def> out;
  for (size_t i = 0; i < nf.defs.size(); ++i)
    if (bits & (uint64_t{1} << (i + 1))) out.push_back(nf.defs[i]);
  return out;
}

bool Flow::read_after(Id from, const std::string& d, Id stop) const {
  int node = -1;
  const Graph* g = graph_of_stmt(from, &node);
  if (!g) return true;  // unknown: assume it is still used
  int stop_node = -1;
  if (stop != kNone) {
    auto si = g->node_of.find(stop);
    if (si != g->node_of.end()) stop_node = si->second;
  }
  std::vector<char> seen(g->stmt.size(), 0);
  std::vector<int> work(g->succ[node].begin(), g->succ[node].end());
  Graph& mg = const_cast<Graph&>(*g);
  while (!work.empty()) {
    int v = work.back();
    work.pop_back();
    if (seen[v] || v == stop_node) continue;
    seen[v] = 1;
    budget::tick();
    if (++mg.work > mg.budget()) return true;  // over budget: assume it is still used
    if (node_reads(f_, *g, v, d)) return true;
    const Def* def = nullptr;
    bool unknown = false;
    if (node_affects(*g, v, d, &def, &unknown)) continue;
    for (int t : g->succ[v]) work.push_back(t);
  }
  return false;
}

}  // namespace ll
