// How one C++ file is compiled for analysis: its entry in a compile database (given with
// -p BUILD_DIR or found by walking up from the file), an entry inferred from a
// neighbouring file, or a default command line that finds LibTorch's headers.
#pragma once

#include <string>
#include <vector>

namespace ll::cpp {

struct CompileSetupOptions {
  std::string build_dir;                 // -p; empty: search upwards from the file
  std::vector<std::string> extra_args;   // --extra-arg, appended
  bool torch_search = true;              // false: LEAKLINT_NO_TORCH_INCLUDES=1
};

struct CompileCommand {
  std::vector<std::string> args;  // argv, argv[0] the compiler, includes the file
  std::string directory;          // working directory of the command
  std::string origin;             // "compile_commands.json in DIR", "inferred from X (...)", "default"
  bool exact = false;             // an entry for this very file
  std::string torch_include;      // LibTorch include directory added by us ("" if none)
  std::string warning;            // e.g. "-p DIR has no compile_commands.json"
};

CompileCommand compile_command(const std::string& abs_file, const CompileSetupOptions& opts);

// The first LibTorch installation found ($LIBTORCH, $Torch_DIR, Debian's libtorch-dev,
// a pip/conda torch); empty when none. Returns the include root (the directory holding
// `torch/csrc/api/include`).
std::string find_torch_include();

// Clang's resource directory (builtin headers): $LEAKLINT_CLANG_RESOURCE_DIR or the one
// recorded at build time.
std::string clang_resource_dir();

}  // namespace ll::cpp
