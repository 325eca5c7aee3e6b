#include "frontend/cpp/compile_setup.hpp"

#include <clang/Tooling/ArgumentsAdjusters.h>
#include <clang/Tooling/CompilationDatabase.h>

#include <cstdlib>
#include <filesystem>
#include <glob.h>

namespace ll::cpp {
namespace fs = std::filesystem;

namespace {

bool is_dir(const std::string& p) {
  std::error_code ec;
  return !p.empty() && fs::is_directory(p, ec);
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// `root` holds `torch/csrc/api/include`?
bool torch_root(const std::string& root) { return is_dir(root + "/torch/csrc/api/include/torch"); }

std::vector<std::string> glob_dirs(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

bool ends_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
}

std::string language_flag(const std::string& file) {
  if (ends_with(file, ".cu") || ends_with(file, ".cuh")) return "cuda";
  return "c++";
}

// Drops what cannot work in an analysis run: precompiled headers made by another compiler,
// -Werror, nvcc-only options.
std::vector<std::string> sanitize(const std::vector<std::string>& in) {
  std::vector<std::string> out;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string& a = in[i];
    if (a == "-include-pch" || a == "--include-pch") { ++i; continue; }
    if (a == "-Xclang" && i + 1 < in.size() && (in[i + 1] == "-include-pch" || in[i + 1] == "-emit-pch")) {
      i += 3;  // -Xclang -include-pch -Xclang FILE
      continue;
    }
    if (a.rfind("-Werror", 0) == 0 || a == "-Winvalid-pch" || a == "-fpch-instantiate-templates") continue;
    out.push_back(a);
  }
  return out;
}

}  // namespace

std::string find_torch_include() {
  std::vector<std::string> roots;
  if (std::string lt = env("LIBTORCH"); !lt.empty()) roots.push_back(lt + "/include");
  if (std::string td = env("Torch_DIR"); !td.empty()) {
    // <prefix>/share/cmake/Torch -> <prefix>/include
    fs::path p(td);
    for (int up = 0; up < 5 && !p.empty(); ++up, p = p.parent_path()) roots.push_back((p / "include").string());
  }
  if (std::string cp = env("CONDA_PREFIX"); !cp.empty())
    for (auto& d : glob_dirs(cp + "/lib/python3*/site-packages/torch/include")) roots.push_back(d);
  if (std::string ve = env("VIRTUAL_ENV"); !ve.empty())
    for (auto& d : glob_dirs(ve + "/lib/python3*/site-packages/torch/include")) roots.push_back(d);
  roots.push_back("/usr/include");        // Debian/Ubuntu libtorch-dev
  roots.push_back("/usr/local/include");
  if (std::string home = env("HOME"); !home.empty())
    for (auto& d : glob_dirs(home + "/.local/lib/python3*/site-packages/torch/include")) roots.push_back(d);
  for (auto& d : glob_dirs("/usr/local/lib/python3*/*-packages/torch/include")) roots.push_back(d);
  for (auto& d : glob_dirs("/usr/lib/python3*/*-packages/torch/include")) roots.push_back(d);
  for (const auto& r : roots)
    if (torch_root(r)) return r;
  return "";
}

std::string clang_resource_dir() {
  std::string e = env("LEAKLINT_CLANG_RESOURCE_DIR");
  if (!e.empty()) return e;
#ifdef LEAKLINT_CLANG_RESOURCE_DIR
  return LEAKLINT_CLANG_RESOURCE_DIR;
#else
  return "";
#endif
}

CompileCommand compile_command(const std::string& file, const CompileSetupOptions& opts) {
  using namespace clang::tooling;
  CompileCommand out;
  std::unique_ptr<CompilationDatabase> db;
  std::string err;
  if (!opts.build_dir.empty()) {
    db = CompilationDatabase::loadFromDirectory(opts.build_dir, err);
    if (!db) out.warning = "no compile_commands.json in " + opts.build_dir + " (-p); using the default command line";
  } else {
    db = CompilationDatabase::autoDetectFromSource(file, err);
  }
  std::vector<std::string> args;
  if (db) {
    std::vector<CompileCommand> cmds;
    auto found = db->getCompileCommands(file);
    if (!found.empty()) {
      const auto& c = found.front();
      out.directory = c.Directory;
      out.exact = c.Heuristic.empty();
      out.origin = out.exact ? "compile database entry" : "compile database (" + c.Heuristic + ")";
      args = c.CommandLine;
      // nvcc command lines are not clang's: keep only the preprocessor options.
      if (!args.empty() && args[0].find("nvcc") != std::string::npos) {
        std::vector<std::string> keep{"clang++"};
        for (size_t i = 1; i < args.size(); ++i) {
          const std::string& a = args[i];
          if ((a == "-I" || a == "-isystem" || a == "-D" || a == "-U" || a == "-include") && i + 1 < args.size()) {
            keep.push_back(a);
            keep.push_back(args[++i]);
          } else if (a.rfind("-I", 0) == 0 || a.rfind("-D", 0) == 0 || a.rfind("-U", 0) == 0 ||
                     a.rfind("-std=", 0) == 0 || a.rfind("-isystem", 0) == 0) {
            keep.push_back(a);
          }
        }
        keep.push_back("-x");
        keep.push_back("cuda");
        keep.push_back("--cuda-host-only");
        keep.push_back("-nocudainc");
        keep.push_back("-nocudalib");
        keep.push_back(file);
        args = keep;
      }
    }
  }
  bool default_cmd = args.empty();
  if (default_cmd) {
    out.origin = "default command line";
    out.directory = fs::path(file).parent_path().string();
    args = {"clang++", "-x", language_flag(file), "-std=c++17"};
    if (language_flag(file) == "cuda") {
      args.push_back("--cuda-host-only");
      args.push_back("-nocudainc");
      args.push_back("-nocudalib");
    }
    args.push_back(file);
  }
  args = sanitize(args);
  args = getClangStripOutputAdjuster()(args, file);
  args = getClangStripDependencyFileAdjuster()(args, file);
  args = getClangSyntaxOnlyAdjuster()(args, file);
  std::vector<std::string> extra;
  // Builtin headers of the Clang we link, not of the compiler named in the database.
  std::string res = clang_resource_dir();
  bool has_res = false;
  for (const auto& a : args) has_res |= a.rfind("-resource-dir", 0) == 0;
  if (!res.empty() && !has_res) extra.push_back("-resource-dir=" + res);
  // LibTorch's headers when the command does not come from the project's own database
  // (default or inferred): lowest priority, so a project's own copy always wins.
  if (!out.exact && opts.torch_search) {
    std::string inc = find_torch_include();
    if (!inc.empty()) {
      out.torch_include = inc;
      const char* flag = default_cmd ? "-isystem" : "-idirafter";
      extra.push_back(flag);
      extra.push_back(inc + "/torch/csrc/api/include");
      if (inc != "/usr/include") {
        extra.push_back(flag);
        extra.push_back(inc);
      }
      for (const char* cuda : {"/usr/local/cuda/include"})
        if (is_dir(cuda)) {
          extra.push_back("-idirafter");
          extra.push_back(cuda);
        }
    }
  }
  extra.push_back("-w");  // warnings are not ours to report, and cost time
  extra.push_back("-Wno-unknown-warning-option");
  extra.push_back("-ferror-limit=50");
  for (const auto& e : opts.extra_args) extra.push_back(e);
  args = getInsertArgumentAdjuster(extra, ArgumentInsertPosition::END)(args, file);
  // Keep the file last (some adjusters append after it).
  out.args = std::move(args);
  if (out.directory.empty()) out.directory = fs::path(file).parent_path().string();
  return out;
}

}  // namespace ll::cpp
