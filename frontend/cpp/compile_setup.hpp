// How one C++ file is compiled for analysis: its entry in a compile database (given with
// -p BUILD_DIR or found by walking up from the file), an entry inferred from a
// neighbouring file, or a default command line that finds LibTorch's headers.
#pragma once

#include <string>
#include <vector>

#include "frontend/cpp/arg_policy.hpp"

namespace ll::cpp {

struct CompileSetupOptions {
  std::string build_dir;                 // -p; empty: search upwards from the file
  std::vector<std::string> extra_args;   // --extra-arg, appended
  bool torch_search = true;              // false: LEAKLINT_NO_TORCH_INCLUDES=1
  std::vector<std::string> roots;        // --root: the scanned trees (files or directories)
};

struct CompileCommand {
  std::vector<std::string> args;  // argv, argv[0] the compiler, includes the file
  std::string directory;          // working directory of the command
  std::string origin;             // "compile_commands.json in DIR", "inferred from X (...)", "default"
  bool exact = false;             // an entry for this very file
  std::string torch_include;      // LibTorch include directory added by us ("" if none)
  std::string warning;            // e.g. "-p DIR has no compile_commands.json"
  std::vector<DroppedArg> dropped;  // database flags left out by the allowlist (arg_policy.hpp)
  // Real paths of the directories the compile may read: the project tree (`project_roots`),
  // then system, Clang, LibTorch and CUDA headers and --extra-arg include directories.
  std::vector<std::string> project_roots;
  std::vector<std::string> read_roots;
};

CompileCommand compile_command(const std::string& abs_file, const CompileSetupOptions& opts);

// The project tree a file belongs to (real paths): the --root entries that hold it, the
// nearest ancestor holding a .git/.hg/.svn or a compile database (never / or $HOME), and
// -p BUILD_DIR; the file's own directory when none. Found from where the file is listed
// (a symlink's own directory), not from what it points to.
std::vector<std::string> project_roots(const std::string& abs_file, const CompileSetupOptions& opts);

// Is `real` (a real path) `root` or below it?
bool path_within(const std::string& real, const std::string& root);

// Real path (symlinks resolved); "" when it does not exist.
std::string real_path(const std::string& p);

// The first LibTorch installation found ($LIBTORCH, $Torch_DIR, Debian's libtorch-dev,
// a pip/conda torch); empty when none. Returns the include root (the directory holding
// `torch/csrc/api/include`).
std::string find_torch_include();

// Clang's resource directory (builtin headers): $LEAKLINT_CLANG_RESOURCE_DIR or the one
// recorded at build time.
std::string clang_resource_dir();

}  // namespace ll::cpp
