// LL101 missing-no-grad: a model forward in an evaluation/inference loop (or in an
// inference-only program, on a loaded model) runs with grad mode enabled.
#include <set>

#include "checks/common.hpp"

namespace ll {
namespace {

constexpr long kFewForwards = 4;

}  // namespace

void check_LL101(CheckContext& ctx) {
  const Facts& f = ctx.facts;
  std::set<int> reported_loops;
  std::set<Id> decorated_funcs;
  for (const CallSite& c : f.calls) {
    if (c.in_lambda || f.grad_off(c) || !f.is_model_call(c)) continue;
    Id callee = f.e(c.call).kids[0];
    if (f.e(callee).kind == ExprKind::Attribute && f.e(callee).text == "forward") callee = f.e(callee).kids[0];
    // A module whose parameters were all switched off records no graph from them: there are
    // no activations to keep (its inputs come from data, or from forwards judged on their own).
    if (f.frozen_at(c.func, f.dotted(callee), f.e(c.call).range.begin)) continue;
    if (f.forward_grad_off(c.func, callee)) continue;
    std::string why = eval_loop_reason(f, c);
    bool serving = false;
    if (why.empty()) {
      // Inference-only programs: a loaded model's forward, loop or not.
      if (f.file_trains() || !f.is_loaded_model(c.func, callee)) continue;
      // Inside a module's own methods, calling submodules is the module's forward.
      if (f.func_is_method_of_module(c.func) && f.dotted(callee).rfind("self.", 0) == 0) continue;
      // Impact: a single forward in a test (a pytest function, a TestCase method, a test
      // file) is a one-shot check, not an inference program; its activations are freed
      // when the test returns.
      if (c.loop < 0 && f.in_test_code(c.func, /*by_name=*/true)) continue;
      if (c.loop >= 0 && f.loop_reaches_backprop(c.loop)) continue;
      why = "in a program that never back-propagates, on a loaded model";
      serving = true;
    }
    if (f.output_read_as_numpy(c)) continue;
    // One finding per outermost evaluation loop.
    int outer = c.loop;
    while (outer >= 0 && f.loops[outer].parent >= 0 && !f.loop_trains(f.loops[outer].parent))
      outer = f.loops[outer].parent;
    if (outer >= 0 && !reported_loops.insert(outer).second) continue;
    if (outer < 0 && c.func != kNone && decorated_funcs.count(c.func)) continue;

    std::string model = f.dotted(callee);
    if (model.empty()) model = "the model";
    else model = "`" + model + "`";
    std::string msg = "forward of " + model + " runs with autograd enabled " + why +
                      ": activations of every forward pass are kept for a backward pass that never comes, raising "
                      "peak memory, and any output kept beyond the iteration keeps its whole graph; run it under "
                      "`torch.no_grad()` (or `torch.inference_mode()`)" +
                      (f.model_by_name(c.func, callee) ? " (" + model + " is taken for a model from its name only)"
                                                      : std::string());
    // Impact: one forward at the top level of a script or notebook (a demo cell, a one-image
    // run) keeps one input's graph until its output is dropped, once; a function serving
    // requests (or any loop) repeats it.
    // A loop that runs a constant handful of times (a demo showing two images, a loop that
    // breaks after its first batch) is the same as a few single forwards.
    long trips = c.loop >= 0 ? 1 : 0;
    for (int l = c.loop; l >= 0 && trips > 0; l = l == outer ? -1 : f.loops[l].parent)
      trips *= constant_trips(f, l, kFewForwards);
    const bool test = f.in_test_code(c.func);
    Finding* fd = test ? ctx.report_weak("LL101", f.e(c.call).range, msg, kTestCodeReason)
                  : serving && c.loop < 0 && c.func == kNone
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "a single forward at the top level of a script or notebook keeps one "
                                        "input's graph, once")
                  : serving && c.loop < 0 && f.runs_at_most_once(c.func)
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        "a single forward in `" + f.m.funcs[c.func].name +
                                            "()`, which the program runs at most once, keeps one input's graph, "
                                            "once")
                  : trips > 0 && trips <= kFewForwards
                      ? ctx.report_weak("LL101", f.e(c.call).range, msg,
                                        trips == 1 ? "the loop runs once, the same as a single forward"
                                                  : "the loop runs " + std::to_string(trips) +
                                                        " times, the same as that many single forwards")
                      : report_memory_claim(ctx, "LL101", f.e(c.call).range, msg);
    if (!fd) continue;

    // Fix: decorate a whole-inference function, else wrap the outermost loop statement.
    std::string no_grad = spelling_of(f.m, "torch.no_grad");
    if (no_grad.empty() && f.m.aliases.count("torch") == 0) no_grad = "";
    if (no_grad.empty()) continue;
    bool whole_function = c.func != kNone && f.m.funcs[c.func].parent == kNone &&
                          !f.reaches(c.func, [&](const CallSite& x) { return f.is_backprop(x); }) &&
                          (f.is_eval_function_name(f.m.funcs[c.func].name) || serving);
    if (whole_function) {
      const Function& fn = f.m.funcs[c.func];
      uint32_t at = ctx.line_start(fn.range.begin);
      Fix fix;
      fix.title = "Decorate `" + fn.name + "` with `@" + no_grad + "()`";
      fix.safe = false;
      fix.edits.push_back({at, at, ctx.indent_at(fn.range.begin) + "@" + no_grad + "()" + ctx.newline()});
      fd->fixes.push_back(std::move(fix));
      decorated_funcs.insert(c.func);
    } else if (outer >= 0) {
      Id st = f.loops[outer].stmt != kNone ? f.loops[outer].stmt : c.stmt;
      Fix fix = wrap_statement_fix(ctx, st, "with " + no_grad + "():", "Wrap the loop in `with " + no_grad + "():`");
      if (!fix.edits.empty()) fd->fixes.push_back(std::move(fix));
    }
  }
}

}  // namespace ll
