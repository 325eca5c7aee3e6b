// Which compile flags from a project's compile database (or compile_flags.txt) leaklint-cpp
// passes to Clang. The database comes with the scanned tree, which may be a stranger's (CI
// on pull requests, pre-commit, editors): a flag that writes a file (`-MF`, `-o`,
// `--serialize-diagnostics`, `-Xclang -dependency-file`, ...), loads code (`-fplugin`,
// `-Xclang -load`), reads options from elsewhere (`@file`, `--config`) or redirects the
// toolchain (`-B`, `--sysroot`) must never reach Clang. So the command is rebuilt from an
// allowlist of what the analysis needs (include directories, macros, language standard and
// dialect, target); everything else is dropped and reported with a reason.
//
// Pure and Clang-independent: also used by the unit tests and tests/fuzz/fuzz_compile_args.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace ll::cpp {

struct DroppedArg {
  std::string arg;     // the flag as spelled (its separate value, if any, is not repeated)
  std::string reason;  // short: "writes files", "loads code", "not on the allowlist", ...
};

struct ArgPolicyResult {
  std::vector<std::string> args;  // argv: args[0] the compiler ("clang++" or "clang"), the input last
  std::vector<DroppedArg> dropped;
};

struct ArgPolicyOptions {
  // The translation unit being analysed, as spelled in the command (matched against its
  // positional arguments, after `resolve`); always kept, last.
  std::string input;
  // Absolute form of a path argument of the command (relative ones are resolved against the
  // command's directory by the caller); identity when empty.
  std::function<std::string(const std::string&)> resolve;
  // Whether a file named by `-include`/`-imacros` (or a `--sysroot`) may be used: only files
  // inside the scanned tree. Unset: such flags are dropped.
  std::function<bool(const std::string&)> path_allowed;
};

// `in` is a database command line (argv[0] the compiler). The result never holds a flag of
// a dropped class (see arg_policy_forbidden), whatever `in` is.
ArgPolicyResult apply_arg_policy(const std::vector<std::string>& in, const ArgPolicyOptions& opts);

// True for an argument the policy must never keep (the invariant the fuzz target checks):
// output, dependency and diagnostic files, plugins, -Xclang & co, response files, config
// files, toolchain redirection, modules.
bool arg_policy_forbidden(const std::string& arg);

}  // namespace ll::cpp
