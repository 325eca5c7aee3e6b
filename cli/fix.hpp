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
};

// Applies the fixes of `result` (a lint of `original`) and iterates to a fixed point.
FixOutcome fix_text(const std::string& path, const std::string& original, const FileResult& result,
                    const Config& cfg, const EngineOptions& opts, bool unsafe);

// Applies a list of edits to a text (non-overlapping; overlapping ones are skipped).
std::string apply_edits(const std::string& text, std::vector<Edit> edits, int* applied = nullptr);

// Writes `text` to `path` atomically (temp file in the same directory + rename), keeping
// the original file's permission bits.
bool write_atomic(const std::string& path, const std::string& text, std::string* error);

// A unified diff of two texts (`--- a/path` / `+++ b/path`, 3 lines of context).
std::string unified_diff(const std::string& path, const std::string& a, const std::string& b);

}  // namespace ll
