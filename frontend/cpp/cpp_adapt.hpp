// Running the shared checks on a lowered C++ file: only the rules whose catalog entry
// lists C++, C++ spellings in messages and fixes (`.item<double>()`, `torch::NoGradGuard`,
// `emptyCache()`, `push_back`), then inline suppressions (`// NOLINT(leaklint-LL101)`).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rules/config.hpp"
#include "rules/finding.hpp"
#include "rules/model.hpp"

namespace ll {
struct FileSummary;
}

namespace ll::cpp {

bool rule_supports_cpp(std::string_view rule_id);

// Findings for one lowered C++ file, sorted by (line, col, rule); suppressed ones are kept
// with `suppressed = true`. `low_confidence` marks every finding (the tree-sitter lowering, or a TU
// with errors) and drops their fixes; `fixable` false (headers were skipped) drops fixes only.
// `summary`, when given, receives the impact facts of the project-level policy (program,
// gpu_evidence); the rest of a summary is Python's.
std::vector<Finding> run_cpp_checks(const Module& m, const Config& cfg, const std::string& path,
                                    std::string_view source, bool low_confidence, bool fixable = true,
                                    FileSummary* summary = nullptr);

}  // namespace ll::cpp
