// C++ files go to the companion executable `leaklint-cpp` (the Clang frontend, built with
// -DLEAKLINT_ENABLE_CPP=ON), so that `leaklint` itself never loads LLVM: Python-only runs
// stay small and fast. This runs leaklint-cpp over the files in parallel processes and
// turns its JSON into FileResults.
#pragma once

#include <string>
#include <vector>

#include "checks/project.hpp"
#include "rules/finding.hpp"

namespace ll {

struct CppDriverOptions {
  std::string build_dir;                  // -p: directory with compile_commands.json ("" = search upwards)
  int jobs = 0;                           // parallel leaklint-cpp processes (0 = hardware concurrency)
  std::string config_file;                // --config, passed through
  std::vector<std::string> select, ignore;  // --select/--ignore, passed through
  std::vector<std::string> extra_args;    // appended to every compile command
  std::string companion;                  // leaklint-cpp to run ("" = find it, see find_cpp_companion)
  bool no_cache = false;                  // do not use the precompiled-preamble cache
  std::string cache_dir;                  // --cache-dir, passed through ("" = leaklint-cpp's default)
  size_t batch = 4;                       // files per leaklint-cpp process
  unsigned timeout_s = 300;               // per file of a batch (a cold PCH build is ~15 s here)
  uint64_t max_file_size_kib = 0;         // --max-file-size (0 = leaklint-cpp's default, 10 MiB)
  std::vector<std::string> roots;         // the paths given to leaklint (leaklint-cpp --root)
  bool verbose = false;                   // leaklint-cpp --verbose (compile-flags-dropped diagnostics)
};

// Results in the order of `files`; a file that could not be analysed carries a Diagnostic
// (e.g. "C++ analysis needs leaklint-cpp, built with -DLEAKLINT_ENABLE_CPP=ON").
std::vector<FileResult> analyze_cpp_files(const std::vector<std::string>& files, const std::string& build_dir,
                                          int jobs);
// `impact`, when given, receives each file's impact facts for the project-level policy
// (FileSummary::program, gpu_evidence; the rest of a summary is Python's).
std::vector<FileResult> analyze_cpp_files(const std::vector<std::string>& files, const CppDriverOptions& opts,
                                          std::vector<FileSummary>* impact = nullptr);

// leaklint-cpp: `hint` if given, else $LEAKLINT_CPP, else next to the running executable
// (/proc/self/exe), else on the absolute entries of PATH. Empty when not found.
std::string find_cpp_companion(const std::string& hint = "");

}  // namespace ll
