// One translation unit, start to end: compile command, cached preamble, Clang parse,
// lowering (semantic when the TU compiles, syntactic otherwise), per-file diagnostics.
#pragma once

#include <string>
#include <vector>

#include "frontend/cpp/compile_setup.hpp"
#include "frontend/cpp/pch_cache.hpp"
#include "rules/finding.hpp"
#include "rules/model.hpp"

namespace ll::cpp {

struct TuOptions {
  CompileSetupOptions compile;
  bool force_syntactic = false;   // --syntactic-only: skip Clang entirely
  uint64_t max_file_size = 10u << 20;
  bool verbose = false;           // --verbose: also report the compile flags the allowlist dropped
};

struct TuResult {
  std::string source;
  Module module;
  std::vector<Diagnostic> diagnostics;
  bool analysed = false;        // module holds a lowering (the checks can run)
  bool semantic = false;        // lowered from a Clang AST that compiled
  bool low_confidence = false;  // tree-sitter lowering, or a TU with errors (no fixes then)
  bool fixable = true;          // false when headers were skipped: no edit could be checked
  std::string pch_status;       // "hit" | "built" | "disabled" | "none" | "failed" | "retry"
  double seconds = 0, pch_seconds = 0;
  std::string command_origin;
};

// Turns crashes inside Clang (including stack exhaustion on pathological input) into a
// failed parse of that file; call once at start-up.
void enable_crash_recovery();

// True once a crash inside Clang was recovered from in this process. Recovery abandons the
// crashed compiler instance (no unwinding), so its memory is never freed.
bool crash_recovered();

// `path` is reported as given; the file is opened through its absolute form.
TuResult analyze_tu(const std::string& path, const TuOptions& opts, PchCache& cache);

}  // namespace ll::cpp
