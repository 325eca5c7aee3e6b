// Predicates shared by more than one check.
#pragma once

#include <map>
#include <optional>
#include <set>

#include <string>
#include <unordered_map>
#include <unordered_set>

#include "checks/checks.hpp"

namespace ll {

// Why the loop around a forward call is an evaluation/inference loop whose forward runs
// with grad enabled for nothing (LL101's criterion); "" when it is not one. Loops that
// back-propagate or step an optimizer are never evaluation loops.
std::string eval_loop_reason(const Facts& f, const CallSite& c);
// Does loop `loop`, or one around it, walk data: an evaluation set, batches, a loader, a
// parameter of `func` (the data its caller hands in)?
bool walks_data(const Facts& f, int loop, Id func);
// Does the forward's result leave its loop into a value that an enclosing loop
// back-propagates (an attack's or a multi-view step's inner loop)?
bool feeds_enclosing_training(const Facts& f, const CallSite& c);

// A name whose last word says it makes or holds a model (`build_model`, `load_pipeline`,
// `FullPipeline`, `UNet`, `PolicyNetwork`).
bool last_word_names_a_model(std::string_view name);
// A class name of a gradient attribution method (`GradCAM`, `GradCamPlusPlus`, `GuidedBackprop`,
// `IntegratedGradients`, `SmoothGrad`, ...): such a class back-propagates through its model.
bool named_for_a_gradient_method(std::string_view name);

// Does the loop iterate batches (a DataLoader, loader, batches, dataset, or enumerate/tqdm
// of one)?
bool iterates_batches(const Facts& f, int loop);
// Does the loop run once per batch: it trains, iterates batches or an evaluation set, or
// runs a model forward?
bool per_batch_loop(const Facts& f, int loop);
// The innermost loop around the call site (in its function) that runs once per batch; -1.
int batch_loop_of(const Facts& f, const CallSite& c);

// Reports a finding about memory held by autograd through the impact policy: in a
// program that never uses a GPU (Facts::cpu_only_program) the cost is host RAM of a CPU
// run, so it is reported as weak (one severity step lower, low confidence, said why).
Finding* report_memory_claim(CheckContext& ctx, std::string_view rule, const Range& where, std::string message);

// What a value flows into, a few hops: grows `names` with the targets of the assignments
// (plain or augmented) and `for` loops among `stmts` whose value (iterable) mentions one of
// `names` (or the expression
// `seed`), and, with `appends`, with the receivers of `.append/.extend/.insert` calls that
// do. At most `hops` passes over `stmts`, fewer when one adds nothing.
void follow_flow(const Facts& f, const std::vector<Id>& stmts, std::set<std::string>& names, int hops,
                 bool appends, Id seed = kNone);
// Does expression `x` mention one of `names` (or contain the expression `seed`)?
bool mentions_any(const Facts& f, Id x, const std::set<std::string>& names, Id seed = kNone);

// Methods that keep their first argument on their object (`def update(self, val, n=1):
// self.sum += val * n`, `self.values.append(val)`) and do not disable grad: `out` gets their
// names and, as "#<function id>", the methods themselves.
void find_accumulating_methods(const Facts& f, std::unordered_set<std::string>& out);

// Does the condition select the loop's last iteration (`i == len(batches) - 1`, or `not flag`
// with `flag = i < len(batches) - 1` bound once in `func`)?
// Is statement `sid` followed, in the block that holds it (inside `body`, not in a nested
// loop), by a `break`, `return` or `raise` that always runs after it? Then it ends the loop,
// which never comes round from it (`model = torch.load(best); break` when early stopping
// fires rebinds once; `model.eval(); break` leaves no eval mode for the next pass).
bool ends_the_loop_after(const Facts& f, const std::vector<Id>& body, Id sid, int depth = 0);
bool last_iteration_test(const Facts& f, Id cond, Id func);

// Test code: Facts::in_test_code (docs/impact.md).
inline constexpr const char* kTestCodeReason = "test code runs once, on small inputs";

// Is `dotted` bound (assigned or a loop target) by any statement inside loop `loop`?
bool assigned_in_loop(const Facts& f, int loop, const std::string& dotted);

// `a op b` for non-negative integers of up to 10^9 (`+`, `-`, `*`, `//`), -1 when the operator
// is another, the result is negative or above 10^12.
long int_arithmetic(std::string_view op, long a, long b);

// A decimal integer literal's value (`16`, `1_024`), -1 for anything else or above 9 digits.
// A non-negative decimal integer as written (`1_000`, at most 9 digits), -1 otherwise.
long int_literal_text(std::string_view text);
long int_literal_value(const Expr& e);
// An integer the code fixes (>= 0): a literal, arithmetic over such, a name bound once to one,
// or a parameter never rebound for which every same-file call passes a literal (or leaves its
// literal default): the largest of them.
bool int_constant(const Facts& f, Id func, Id x, long* out, int depth = 0);

// Is `test` a step test whose divisor is 1 here: `i % n == 0` or `not i % n` with `n` a
// literal 1, or a name its function binds only to 1 (`disc_steps = 1`), or a parameter every
// same-file call passes 1? Such a test holds on every step: it selects nothing.
bool modulus_by_one(const Facts& f, Id test, Id func);

// Is `value` the fallback of a parameter no call leaves None: bound in the body of `if p is
// None:` (`if workers is None: workers = os.cpu_count()`) for a parameter `p` of `func` that
// every same-file call passes a value other than None, written out or relayed through the
// caller's own parameter (two levels up), or leaves at a default other than None? Then the
// fallback never runs. Not for a function another file calls, whose arguments are not visible.
bool dead_none_fallback(const Facts& f, Id func, Id value);

// Does iterable `iter` walk a model's parameters (`model.parameters()`,
// `net.named_parameters()`, anywhere inside it: `zip(a.parameters(), b.parameters())`)?
bool iterates_parameters(const Facts& f, Id iter);

// The value whose size `x` reads: `len(v)`, `v.size(...)`, `v.shape[k]`; kNone otherwise.
Id size_read_of(const Facts& f, Id x);

// How many times loop `loop` runs, when the code says so: `range(...)` of integer constants
// (names bound once to one, and `+ - * //` of those: `range(1, rows + 1)`), or a body that ends in an unconditional `break` (1).
// 0 when unknown or above `limit`.
long constant_trips(const Facts& f, int loop, long limit);

// Impact for the rules about what an update computes (LL201, LL202): why training loop
// `loop` measures speed or memory rather than trains, or "" when it trains. The loop's
// function (at the top level, the outermost loop around it) reads a clock or the memory
// counters; the model its forwards run is not read after the outermost loop around it (not
// saved, returned, printed or run again before it is rebound); and the loop runs at most 10
// constant times (a demo of a device's speed that stops after four batches) or every forward in
// it takes only tensors the program makes (a benchmark). `memo` keeps what one file's questions
// share (asked once per file or scope: a file of thousands of loops asks them all).
struct TrainingStakeMemo {
  std::unordered_map<const std::vector<int>*, bool> measured;  // scope's calls -> reads a clock
  // Name -> positions where it is read (false) or bound (true), in source order; built once.
  std::unordered_map<std::string, std::vector<std::pair<uint32_t, bool>>> uses;
  bool indexed = false;
};
std::string training_not_at_stake(const Facts& f, int loop, TrainingStakeMemo& memo);

// A call of a Python builtin (`max(a, b)`, `len(x)`, `float(v)`) that no import or
// definition of the file shadows. Python only: C++ has no such names.
bool python_builtin_call(const Facts& f, Id call);

// `x.register_hook(fn)`, `m.register_forward_hook(fn)` and the other `register_*hook*`
// methods: they return a RemovableHandle, which holds its hooks dictionary only weakly and
// carries no autograd history.
inline bool registers_a_hook(std::string_view method) {
  return method.rfind("register_", 0) == 0 && method.find("hook") != std::string_view::npos;
}

// A statement after which nothing of the function runs: `sys.exit(...)`, `exit()`, `quit()`,
// `os._exit(...)`, `os.abort()` (`raise` and `return` are statement kinds of their own).
bool ends_the_process(const Facts& f, Id stmt);

// Tensors made by this process from nothing (`torch.randn(64, 3)`, `torch.arange(n)`, through
// `.to(device)`, `.repeat(k)`, arithmetic and the names bound to them): synthetic data.
bool made_tensor(const Facts& f, Id func, Id x, int depth = 0);

// Is `dotted` a recurrent state of loop `loop`: rebound inside it from an expression that
// reads the value it had on entering the iteration (`h = cell(x[t], h)`, `hx, cx = lstm(x[t], (hx, cx))`;
// not `k = x * 2; k = k.mean()`, which reads this iteration's own value)?
bool carried_in_loop(const Facts& f, int loop, const std::string& dotted);

// How to spell a call of `qualified` (e.g. "torch.no_grad") with this module's imports:
// "torch.no_grad", "t.no_grad", "no_grad"; "" when no import makes it reachable.
std::string spelling_of(const Module& m, const std::string& qualified);

// A fix that wraps statement `stmt` in `with <ctx>:` re-indenting its lines; empty
// edits when that is not mechanical (multi-line strings, statement not alone on its line).
Fix wrap_statement_fix(const CheckContext& ctx, Id stmt, const std::string& with_header,
                       std::string title);


// ---- Conditions decided by known values (a pass of a loop over written-out phases, the
// literals a caller binds, names bound once to a literal).
// A value a condition can be decided on: a string, truth value, None or integer literal.
struct Known {
  enum Kind { Str, Bool, NoneV, Int } k = NoneV;
  std::string s;
  long i = 0;
};
using Env = std::map<std::string, Known>;

std::optional<Known> known_literal(const Expr& x);
// A parameter's default as the frontend records it (`False`, `None`, `0`, `'val'`).
std::optional<Known> known_default(const std::string& d);
bool truthy(const Known& v);
// The value of a condition under `env`, or nullopt when it is not decided there. A name not
// in `env` that is bound once (in the function, else at module level) to such a value is
// followed (`is_train = split == "train"`, `RUN_PPL = False`).
std::optional<Known> decide(const Facts& f, Id func, Id x, const Env& env, int depth = 0);
// The `if` conditions on the way from `body` down to the statement `target` (at byte `pos`),
// each with the branch taken (true: its body; false: its else). With `target` kNone, down to
// the innermost statement holding `pos`. False if not found.
bool conditions_to(const Facts& f, const std::vector<Id>& body, Id target, uint32_t pos,
                   std::vector<std::pair<Id, bool>>& out, int depth = 0);

// The forward's output, bound to a name, read later only through `.detach()` or `.data` (here
// or in the loss helper it is handed to): `t = teacher(x)`, then `kd_loss(s, t)` whose
// `t.detach()` is its only use; an acting forward whose `probs.data` is all its step reads.
// In a loop, a read of the name before the forward (the previous pass's output) disqualifies
// it. Reads are followed over the 64 statements after the forward. Returns the first
// detaching expression, kNone when not so.
Id detached_later(const Facts& f, const CallSite& c);

}  // namespace ll
