// libFuzzer target: bytes read as a compile_commands.json (with Clang's JSON compile database,
// as leaklint-cpp reads it), every command through the argument allowlist
// (frontend/cpp/arg_policy.hpp). Invariants: no kept argument is of a forbidden class
// (writes files, loads code, passes options to other tools, response/config files, toolchain
// redirection), the command starts with clang/clang++ and ends with the input, and a second
// pass keeps the result unchanged (the policy is idempotent).
#include <clang/Tooling/JSONCompilationDatabase.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "frontend/cpp/arg_policy.hpp"

namespace {

[[noreturn]] void fail(const char* what, const std::string& arg) {
  std::fprintf(stderr, "fuzz_compile_args: %s: '%s'\n", what, arg.c_str());
  std::abort();
}

bool is_value_flag(const std::string& a) {
  return a == "-I" || a == "-isystem" || a == "-iquote" || a == "-idirafter" || a == "-D" || a == "-U" ||
         a == "-x" || a == "-include" || a == "-imacros" || a == "-target";
}

void check(const ll::cpp::ArgPolicyResult& r, const std::string& input) {
  if (r.args.size() < 2) fail("too short", "");
  if (r.args.front() != "clang++" && r.args.front() != "clang") fail("compiler", r.args.front());
  if (r.args.back() != input) fail("input not last", r.args.back());
  for (size_t i = 1; i + 1 < r.args.size(); ++i) {
    const std::string& a = r.args[i];
    if (is_value_flag(r.args[i - 1])) {
      if (a.empty() || a[0] == '-' || a[0] == '@') fail("value that reads as a flag", a);
      continue;
    }
    if (a.empty() || a[0] != '-') fail("positional argument kept", a);
    if (ll::cpp::arg_policy_forbidden(a)) fail("forbidden argument kept", a);
    if ((a == "-include" || a == "-imacros") && (i + 1 >= r.args.size() - 1 || r.args[i + 1].find("/tree/") != 0))
      fail("-include outside the tree", i + 1 < r.args.size() ? r.args[i + 1] : "");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string err;
  for (auto syntax : {clang::tooling::JSONCommandLineSyntax::Gnu, clang::tooling::JSONCommandLineSyntax::AutoDetect}) {
    auto db = clang::tooling::JSONCompilationDatabase::loadFromBuffer(text, err, syntax);
    if (!db) continue;
    for (const auto& cmd : db->getAllCompileCommands()) {
      ll::cpp::ArgPolicyOptions opts;
      opts.input = "/tree/a.cpp";
      opts.resolve = [](const std::string& p) { return p.empty() || p[0] == '/' ? p : "/tree/" + p; };
      opts.path_allowed = [](const std::string& p) { return p.rfind("/tree/", 0) == 0 && p.find("..") == std::string::npos; };
      ll::cpp::ArgPolicyResult r = ll::cpp::apply_arg_policy(cmd.CommandLine, opts);
      check(r, opts.input);
      ll::cpp::ArgPolicyResult again = ll::cpp::apply_arg_policy(r.args, opts);
      if (again.args != r.args) fail("not idempotent", "");
    }
  }
  return 0;
}
