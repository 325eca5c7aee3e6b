// File discovery: expands paths into the files to analyse, honouring .gitignore files
// (in every directory from the repository root down), skipping .git, virtualenvs, build/,
// node_modules and __pycache__, and never following a symlink loop.
#pragma once

#include <string>
#include <vector>

#include "rules/finding.hpp"

namespace ll {

struct DiscoveredFiles {
  std::vector<std::string> files;          // sorted, unique; as the user would write them
  std::vector<Diagnostic> diagnostics;     // unreadable directories, missing paths, loops
};

// Python: .py .pyi (.ipynb later); C++: .cpp .cc .cxx .h .hpp .hh .cu
bool is_python_path(const std::string& path);
bool is_cpp_path(const std::string& path);

// Paths named explicitly are always included (even if ignored), like ruff.
DiscoveredFiles discover(const std::vector<std::string>& paths);

}  // namespace ll
