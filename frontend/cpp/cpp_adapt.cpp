#include "frontend/cpp/cpp_adapt.hpp"

#include <algorithm>
#include <regex>

#include "checks/checks.hpp"
#include "checks/project.hpp"
#include "rules/registry.hpp"
#include "rules/suppress.hpp"

namespace ll::cpp {
namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  size_t p = 0;
  while ((p = s.find(from, p)) != std::string::npos) {
    s.replace(p, from.size(), to);
    p += to.size();
  }
}

std::string text(std::string_view src, const Range& r) {
  if (r.end <= r.begin || r.end > src.size()) return "";
  return std::string(src.substr(r.begin, r.end - r.begin));
}

uint32_t line_start(std::string_view src, uint32_t b) {
  b = std::min<uint32_t>(b, static_cast<uint32_t>(src.size()));
  while (b > 0 && src[b - 1] != '\n') --b;
  return b;
}

std::string newline_of(std::string_view src) {
  size_t p = src.find('\n');
  return p != std::string_view::npos && p > 0 && src[p - 1] == '\r' ? "\r\n" : "\n";
}

// The loop LL101 reports for a forward call (its outermost evaluation loop).
int outer_eval_loop(const Facts& f, const CallSite& c) {
  auto trains = [&](const CallSite& x) { return f.is_backprop(x) || f.optimizer_of_step(x) != kNone; };
  int outer = c.loop;
  while (outer >= 0 && f.loops[outer].parent >= 0 && !f.loop_reaches(f.loops[outer].parent, trains))
    outer = f.loops[outer].parent;
  return outer;
}

void adapt_LL101(const Facts& f, std::string_view src, Finding& fd) {
  replace_all(fd.message, "run it under `torch.no_grad()` (or `torch.inference_mode()`)",
              "run it under a `torch::NoGradGuard` (or `c10::InferenceMode`)");
  const CallSite* site = nullptr;
  for (const CallSite& c : f.calls)
    if (f.e(c.call).range.begin == fd.range.begin && f.e(c.call).range.end == fd.range.end) { site = &c; break; }
  if (!site) return;
  // Reported for its name alone, with no caller in this translation unit: its callers live
  // in other files, where a guard they hold cannot be seen (the analysis is per TU).
  if (site->func != kNone && fd.message.find("in evaluation function `") != std::string::npos &&
      std::none_of(f.calls.begin(), f.calls.end(), [&](const CallSite& c) { return c.target_func == site->func; })) {
    const Function& fn = f.m.funcs[site->func];
    fd.notes.push_back({fn.header, "`" + fn.name + "` has no caller in this translation unit: a `torch::NoGradGuard` "
                                   "held by callers in other files is not seen; if they hold one, suppress with "
                                   "`// NOLINT(leaklint-LL101)`"});
  }
  if (!fd.fixes.empty()) return;
  // A loop that trains in one of its passes (a forward judged for its evaluation pass, or a
  // teacher whose output is detached at once): a guard before it, or before the call, would
  // stop training in the other pass too.
  if (site->loop >= 0 && f.loop_trains(site->loop)) return;
  int outer = outer_eval_loop(f, *site);
  Id st = outer >= 0 && f.loops[outer].stmt != kNone ? f.loops[outer].stmt : site->stmt;
  if (st == kNone) return;
  const Range& sr = f.m.s(st).range;
  uint32_t ls = line_start(src, sr.begin);
  for (uint32_t i = ls; i < sr.begin; ++i)
    if (src[i] != ' ' && src[i] != '\t') return;  // not alone on its line
  std::string indent(src.substr(ls, sr.begin - ls));
  // A name that is free in the enclosing function.
  std::string var = "no_grad";
  if (site->func != kNone) {
    std::string body = text(src, f.m.funcs[site->func].range);
    if (std::regex_search(body, std::regex("\\bno_grad\\b"))) var = "no_grad_guard";
  }
  Fix fix;
  fix.title = std::string("Insert `torch::NoGradGuard ") + var + ";` before the " + (outer >= 0 ? "loop" : "call") +
              " (grad mode stays off until the end of the enclosing block)";
  fix.safe = false;
  fix.edits.push_back({ls, ls, indent + "torch::NoGradGuard " + var + ";" + newline_of(src)});
  fd.fixes.push_back(std::move(fix));
}

void adapt_LL102(std::string_view src, Finding& fd) {
  // `.item()` -> `.item<double>()`; `.append` -> the container method actually written.
  replace_all(fd.message, ".item()`", ".item<double>()`");
  for (auto& fix : fd.fixes) {
    for (auto& e : fix.edits)
      if (e.text.size() >= 7 && e.text.compare(e.text.size() - 7, 7, ".item()") == 0)
        e.text = e.text.substr(0, e.text.size() - 7) + ".item<double>()";
    replace_all(fix.title, "a Python number with `.item()`", "a C++ number with `.item<double>()`");
  }
  std::string stmt = text(src, fd.range);
  for (const char* m : {"emplace_back", "push_back", "emplace_front", "push_front", "emplace", "insert"}) {
    if (stmt.find(std::string(m) + "(") == std::string::npos) continue;
    std::string from = std::string(m) == "emplace_front" || std::string(m) == "push_front" ? "appendleft"
                       : std::string(m) == "emplace" || std::string(m) == "insert"          ? "insert"
                                                                                         : "append";
    replace_all(fd.message, "(`." + from + "`)", "(`." + std::string(m) + "`)");
    break;
  }
}

void adapt_empty_cache(Finding& fd) {
  replace_all(fd.message, " (and `gc.collect()`)", "");
  replace_all(fd.message, "`empty_cache()`", "`emptyCache()`");
  replace_all(fd.message, "empty_cache()", "emptyCache()");
}

void adapt_LL402(Finding& fd) {
  static const std::regex nw("`num_workers=([^`]*)`");
  fd.message = std::regex_replace(fd.message, nw, "`DataLoaderOptions().workers($1)`");
  replace_all(fd.message, "lower num_workers", "lower workers()");
  replace_all(fd.message, "`num_workers` follows", "`workers()` follows");
  static const std::regex cap("`min\\((\\d+), os\\.cpu_count\\(\\)\\)`");
  fd.message = std::regex_replace(fd.message, cap, "`std::min<size_t>($1, std::thread::hardware_concurrency())`");
}

void adapt_LL501(Finding& fd) {
  size_t p = fd.message.find("; use `mp.get_context('spawn')`");
  if (p != std::string::npos)
    fd.message = fd.message.substr(0, p) +
                 "; fork before CUDA is initialised, or start the child with posix_spawn/exec so that it creates its "
                 "own CUDA context";
  fd.fixes.clear();
}

}  // namespace

bool rule_supports_cpp(std::string_view id) {
  const RuleInfo* r = find_rule(id);
  return r && r->languages.find("C++") != std::string_view::npos;
}

std::vector<Finding> run_cpp_checks(const Module& m, const Config& cfg, const std::string& path,
                                    std::string_view source, bool low_confidence, bool fixable,
                                    FileSummary* summary) {
  std::vector<Finding> out;
  Facts facts(m, cfg, path);
  if (summary) {
    summary->program = facts.is_program();
    summary->gpu_evidence = facts.has_gpu_evidence();
  }
  CheckContext ctx(facts, source, out);
  for (const auto& c : all_checks())
    if (rule_supports_cpp(c.id) && ctx.enabled(c.id)) c.run(ctx);
  for (Finding& fd : out) {
    if (fd.rule == "LL101") adapt_LL101(facts, source, fd);
    else if (fd.rule == "LL102") adapt_LL102(source, fd);
    else if (fd.rule == "LL302" || fd.rule == "LL303") adapt_empty_cache(fd);
    else if (fd.rule == "LL402") adapt_LL402(fd);
    else if (fd.rule == "LL501") adapt_LL501(fd);
    else if (fd.rule == "LL103")
      replace_all(fd.message, "run the loop under `torch.no_grad()` (or `torch.inference_mode()`)",
                  "run the loop under a `torch::NoGradGuard` (or `c10::InferenceMode`)");
    // Members are lowered as `self.x` (the model's receiver spelling); C++ names them `x`.
    replace_all(fd.message, "`self.", "`");
    for (auto& n : fd.notes) replace_all(n.message, "`self.", "`");
    // A weak finding of the impact policy (report_weak) stays weak on a compiled file too.
    // A file analysed without a full compile is low-confidence whole, and its messages say why
    // (docs/impact.md); its severity stays the rule's.
    if (low_confidence && fd.message.find("(low confidence: ") == std::string::npos)
      fd.message += " (low confidence: the file was analysed without a full compile, its headers missing or its "
                    "code not compiling, so the types behind this finding are guessed)";
    fd.low_confidence = fd.low_confidence || low_confidence;
    // Never a fix for a file that does not compile (or was not compiled): the lowering
    // guessed at what the code means, and the edit could not be checked by a compile.
    if (low_confidence || !fixable) fd.fixes.clear();
  }
  Suppressions(m.comments, Lang::Cpp).apply(out);
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    if (a.range.line != b.range.line) return a.range.line < b.range.line;
    if (a.range.col != b.range.col) return a.range.col < b.range.col;
    return a.rule < b.rule;
  });
  return out;
}

}  // namespace ll::cpp
