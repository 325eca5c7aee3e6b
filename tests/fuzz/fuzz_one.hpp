// One fuzz input through the pipeline the CLI runs on a file: validation (NUL bytes,
// UTF-8, declared Latin-1 codings), the Python frontend, every check, the cross-file
// (project) pass and the fix loop. Shared by the libFuzzer target (fuzz_python.cpp) and
// the regression test (tests/unit/test_fuzz_regressions.cpp). Must never crash, hang or
// trip a sanitizer, whatever the bytes.
#pragma once

#include <string>
#include <vector>

#include "checks/project.hpp"
#include "cli/engine.hpp"
#include "cli/fix.hpp"

namespace ll::fuzz {

struct Outcome {
  int findings = 0;
  int rollbacks = 0;  // fix rounds rolled back because they broke the syntax
};

inline Outcome run_one(const std::string& text) {
  Outcome out;
  Config cfg;
  EngineOptions opts;
  opts.jobs = 1;
  size_t bad = 0;
  if (text.find('\0') == std::string::npos && valid_utf8(text, &bad)) {
    // analyze_text's contract: UTF-8 without NUL bytes (analyze_file checks both).
    FileSummary summary;
    FileResult r = analyze_text("fuzz.py", text, cfg, opts, nullptr, &summary);
    out.findings = static_cast<int>(r.findings.size());
    // The project pass, with a view built from this file's own summary.
    ProjectView view;
    for (const auto& c : summary.classes) view.classes_with_workers.insert(c);
    for (const auto& f : summary.functions) view.external_calls[f] = {true, false};
    for (const auto& c : summary.imported_calls) view.external_calls[c.callee].push_back(c.off);
    if (!view.empty()) (void)analyze_text("fuzz.py", text, cfg, opts, &view);
    // Safe and unsafe fixes, iterated to a fixed point.
    FixOutcome o = fix_text("fuzz.py", text, r, cfg, opts, /*unsafe=*/true);
    out.rollbacks = static_cast<int>(o.errors.size());
  } else {
    // NUL bytes, bad UTF-8, a declared Latin-1 coding: the checks analyze_file makes.
    FileResult r = analyze_file("fuzz.py", cfg, opts, &text);
    out.findings = static_cast<int>(r.findings.size());
  }
  if (!text.empty() && text[0] == '{') (void)analyze_file("fuzz.ipynb", cfg, opts, &text);
  return out;
}

}  // namespace ll::fuzz
