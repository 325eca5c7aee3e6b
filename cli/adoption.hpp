// Adopting leaklint on a large legacy repository without fixing everything first:
// a baseline file of known findings (--write-baseline / --baseline) and reporting only
// findings on lines changed since a git revision (--diff-base REV).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rules/finding.hpp"

namespace ll {

// Writes the fingerprints of all unsuppressed findings; returns an error message on failure.
// The file is replaced atomically (the old baseline stays whole on any failure); a path
// that is not UTF-8 is stored as "path_hex" (its bytes in hex) beside a readable "path".
std::optional<std::string> write_baseline(const std::string& file, const std::vector<FileResult>& results,
                                          const std::string& root);
// Drops findings recorded in the baseline; returns how many were dropped, or an error.
std::optional<std::string> apply_baseline(const std::string& file, std::vector<FileResult>& results,
                                          const std::string& root, size_t* dropped);

// Changed lines per absolute path since `rev` (`git diff -U0 rev`, plus untracked files as
// wholly changed): (first, last) line ranges of the new file, and (n + 1, n) where lines
// were removed after line n. nullopt with *error set when git fails.
using ChangedLines = std::map<std::string, std::vector<std::pair<uint32_t, uint32_t>>>;
std::optional<ChangedLines> changed_lines(const std::string& rev, const std::string& cwd, std::string* error);
// Keeps the findings that the change may have made: a changed or removed line at the
// finding's range or one of its notes (the loop, the guard, the call it points at), or
// inside the function it is in (at module level: the outermost loop; C/C++: the outermost
// code block), so that deleting a `with torch.no_grad():` line or a decorator reports the
// untouched forward it guarded. Notebooks: their ranges and notes only.
void keep_changed(const ChangedLines& changed, std::vector<FileResult>& results, size_t* dropped);

}  // namespace ll
