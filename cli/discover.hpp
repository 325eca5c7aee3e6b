// File discovery: expands paths into the files to analyse, honouring .gitignore files
// (in every directory from the repository root down), skipping .git, virtualenvs, build/,
// node_modules and __pycache__, and never following a symlink loop. A scanned tree is
// untrusted input: discovery does not leave it through symbolic links (unless asked to)
// and never lists a FIFO, device or socket for analysis.
#pragma once

#include <string>
#include <vector>

#include "rules/finding.hpp"

namespace ll {

struct DiscoveredFiles {
  std::vector<std::string> files;          // sorted, unique; as the user would write them
  std::vector<Diagnostic> diagnostics;     // unreadable directories, missing paths, loops,
                                           // FIFOs/devices/sockets
  // Symbolic links (to directories or source files) not followed because their real path
  // is outside the tree named on the command line; shown only with --verbose.
  std::vector<std::string> skipped_links;
  // Directories and source files that a .gitignore excludes (committed ones included, as in
  // ruff); shown only with --verbose. Naming one on the command line analyses it.
  std::vector<std::string> skipped_ignored;
};

struct DiscoverOptions {
  // Follow symbolic links whose real path is outside the tree being scanned.
  bool follow_external_symlinks = false;
  // --exclude / --extend-exclude (globs, as in ruff): a pattern without `/` matches a file
  // or directory name anywhere; one with `/` matches the path relative to the root named on
  // the command line. --exclude replaces the default directory list (.git, venv, build,
  // node_modules, ...); --extend-exclude adds to it. Paths named explicitly are always
  // analysed.
  std::vector<std::string> exclude;
  bool default_excludes = true;
};

// Python: .py .pyi (.ipynb later); C++: .cpp .cc .cxx .h .hpp .hh .cu .cuh
bool is_python_path(const std::string& path);
bool is_cpp_path(const std::string& path);
bool is_cuda_path(const std::string& path);  // .cu .cuh: CUDA sources
// A Python file by name, or an extensionless script whose first line is a python shebang
// (what pre-commit's `types: [python]` hands over too). Reads at most 256 bytes, never
// blocking.
bool is_python_source(const std::string& path);

// Paths named explicitly are always included (even if ignored), like ruff; each one is
// the root of its tree (a link named on the command line is followed: the user chose it).
DiscoveredFiles discover(const std::vector<std::string>& paths, const DiscoverOptions& opts = {});

// "FIFO", "character device", ... for a stat mode that is not a regular file or directory.
const char* special_file_kind(unsigned mode);

}  // namespace ll
