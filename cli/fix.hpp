// Applying fixes: select safe (and with --unsafe-fixes, unsafe) fixes, apply them to the
// text, re-parse and re-lint; roll back a round that introduces a syntax error; repeat
// until nothing changes (fixes converge). Writes are atomic and keep permissions.
#pragma once

#include <string>
#include <vector>

#include "cli/engine.hpp"

namespace ll {

struct FixOutcome {
  std::string original;
  std::string fixed;
  int applied = 0;                 // fixes applied
  std::vector<std::string> errors; // rolled-back rounds, write failures
  FileResult final_result;         // lint result of the fixed text
  bool written = false;            // the file on disk already holds `fixed` (C++)
};

// Applies the fixes of `result` (a lint of `original`) and iterates to a fixed point.
FixOutcome fix_text(const std::string& path, const std::string& original, const FileResult& result,
                    const Config& cfg, const EngineOptions& opts, bool unsafe);

// C++: leaklint-cpp reads the file from disk (compile command, headers), so each round is
// written (atomically) and re-analysed; a round that adds a compile error is written back.
// With `write` false (--diff) one round is computed and nothing is touched.
FixOutcome fix_cpp_file(const std::string& path, const std::string& original, const FileResult& result,
                        const Config& cfg, const EngineOptions& opts, bool unsafe, bool write);

// The edits of one round: the first fix of each unsuppressed finding (safe ones, and unsafe
// ones when `unsafe`), skipping fixes that overlap one already taken. `fixes` gets the count.
std::vector<Edit> select_fix_edits(const FileResult& result, bool unsafe, int* fixes = nullptr);

// Applies a list of edits to a text (non-overlapping; overlapping ones are skipped).
std::string apply_edits(const std::string& text, std::vector<Edit> edits, int* applied = nullptr);

// Writes `text` to `path` atomically (temp file in the same directory + rename), keeping
// the original file's permission bits.
bool write_atomic(const std::string& path, const std::string& text, std::string* error);

// A unified diff of two texts (`--- a/path` / `+++ b/path`, 3 lines of context).
std::string unified_diff(const std::string& path, const std::string& a, const std::string& b);

}  // namespace ll
