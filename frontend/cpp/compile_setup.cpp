#include "frontend/cpp/compile_setup.hpp"

#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/Utils.h>
#include <clang/Lex/HeaderSearchOptions.h>
#include <clang/Tooling/ArgumentsAdjusters.h>
#include <clang/Tooling/CompilationDatabase.h>
#include <clang/Tooling/JSONCompilationDatabase.h>

#include <cstdlib>
#include <filesystem>
#include <glob.h>
#include <limits.h>
#include <mutex>

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

bool exists(const std::string& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

// A directory LibTorch's or CUDA's headers live in (decided by what it holds, as in pch_cache.cpp).
bool library_include_dir(const std::string& dir) {
  for (const char* sub : {"/torch", "/ATen", "/c10", "/caffe2", "/cuda_runtime.h", "/cuda.h"})
    if (exists(dir + sub)) return true;
  return false;
}

// The project's compile database in `dir`, read without expanding response files (`@file`
// could name any file on the machine) and without loading any plugin.
std::unique_ptr<clang::tooling::CompilationDatabase> load_database(const std::string& dir, bool* found) {
  using namespace clang::tooling;
  std::string err;
  *found = false;
  std::string json_path = dir + "/compile_commands.json";
  if (exists(json_path)) {
    *found = true;
    auto db = JSONCompilationDatabase::loadFromFile(json_path, err, JSONCommandLineSyntax::AutoDetect);
    if (!db) return nullptr;
    return inferMissingCompileCommands(std::move(db));
  }
  std::string flags_path = dir + "/compile_flags.txt";
  if (exists(flags_path)) {
    *found = true;
    return FixedCompilationDatabase::loadFromFile(flags_path, err);
  }
  return nullptr;
}

// System include directories of the compiler we link, from a command line that holds nothing
// of the project's: what a default compile of this machine may read.
std::vector<std::string> system_include_dirs() {
  static std::once_flag once;
  static std::vector<std::string> dirs;
  std::call_once(once, [] {
    std::vector<std::string> args{"clang++", "--no-default-config", "-x", "c++", "-fsyntax-only"};
    std::string res = clang_resource_dir();
    if (!res.empty()) args.push_back("-resource-dir=" + res);
    args.push_back("/dev/null");
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    auto diag_opts = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
    clang::IgnoringDiagConsumer ignore;
    clang::CreateInvocationOptions cio;
    cio.Diags = clang::CompilerInstance::createDiagnostics(diag_opts.get(), &ignore, false);
    if (auto inv = clang::createInvocation(argv, cio)) {
      for (const auto& e : inv->getHeaderSearchOpts().UserEntries) dirs.push_back(e.Path);
      if (!inv->getHeaderSearchOpts().ResourceDir.empty()) dirs.push_back(inv->getHeaderSearchOpts().ResourceDir);
    }
    for (const char* d : {"/usr/include", "/usr/local/include", "/usr/local/cuda/include", "/usr/local/cuda/targets"})
      dirs.push_back(d);
    if (!res.empty()) dirs.push_back(res);
  });
  return dirs;
}

void add_root(std::vector<std::string>& roots, const std::string& p) {
  std::string r = real_path(p);
  if (r.empty() || r == "/") return;
  for (const auto& x : roots)
    if (x == r) return;
  roots.push_back(r);
}

}  // namespace

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  if (p.empty() || !::realpath(p.c_str(), buf)) return "";
  return buf;
}

bool path_within(const std::string& real, const std::string& root) {
  if (root.empty() || real.empty()) return false;
  if (root == "/") return true;
  return real == root || (real.size() > root.size() && real.compare(0, root.size(), root) == 0 && real[root.size()] == '/');
}

std::vector<std::string> project_roots(const std::string& file, const CompileSetupOptions& opts) {
  std::vector<std::string> roots;
  std::error_code ec;
  // Where the file is listed: a symlinked directory on the way must not move the tree.
  fs::path lex = fs::absolute(file, ec).lexically_normal().parent_path();
  std::string dir = real_path(lex.string());
  if (dir.empty()) return roots;
  for (const auto& r : opts.roots) {
    fs::path ra = fs::absolute(r, ec).lexically_normal();
    if (!is_dir(ra.string())) ra = ra.parent_path();
    std::string rl = ra.string();
    if (rl.size() > 1 && rl.back() == '/') rl.pop_back();
    if (path_within(lex.string(), rl) || path_within(dir, real_path(rl))) add_root(roots, rl);
  }
  std::string home = real_path(env("HOME"));
  for (fs::path d = lex; !d.empty() && d != d.root_path(); d = d.parent_path()) {
    if (real_path(d.string()) == home) break;
    bool marker = false;
    for (const char* m : {"/.git", "/.hg", "/.svn", "/compile_commands.json", "/compile_flags.txt"})
      marker |= exists(d.string() + m);
    if (marker) {
      add_root(roots, d.string());
      break;
    }
  }
  bool tree_found = !roots.empty();
  if (!opts.build_dir.empty()) add_root(roots, opts.build_dir);
  if (!tree_found) {
    // No tree named and no project marker: the working directory when the file is below it
    // (not / or $HOME), else the file's own directory.
    std::string cwd = fs::current_path(ec).string();
    std::string rc = real_path(cwd);
    if (!ec && rc != "/" && rc != home && path_within(lex.string(), cwd)) add_root(roots, cwd);
    else add_root(roots, lex.string());
  }
  return roots;
}

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
  out.project_roots = project_roots(file, opts);
  std::unique_ptr<CompilationDatabase> db;
  bool db_found = false;
  std::string db_dir;
  if (!opts.build_dir.empty()) {
    db_dir = opts.build_dir;
    db = load_database(opts.build_dir, &db_found);
    if (!db_found) out.warning = "no compile_commands.json in " + opts.build_dir + " (-p); using the default command line";
  } else {
    for (fs::path d = fs::path(file).parent_path(); !d.empty(); d = d.parent_path()) {
      db_dir = d.string();
      db = load_database(db_dir, &db_found);
      if (db_found || d == d.root_path()) break;
    }
  }
  if (db_found && !db)
    out.warning = "the compile database in " + db_dir +
                  " could not be read (not a JSON array of compile commands, or not a valid compile_flags.txt); "
                  "using the default command line";
  std::vector<std::string> args;
  if (db) {
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
  // The allowlist (arg_policy.hpp): a database is part of the scanned tree, which may be a
  // stranger's; nothing in it may write files, load code or redirect the toolchain.
  auto resolve = [&](const std::string& p) {
    fs::path q(p);
    if (q.is_relative()) q = fs::path(out.directory.empty() ? fs::path(file).parent_path().string() : out.directory) / q;
    return q.lexically_normal().string();
  };
  ArgPolicyOptions po;
  po.input = file;
  po.resolve = resolve;
  po.path_allowed = [&](const std::string& p) {
    std::string r = real_path(p);
    for (const auto& root : out.project_roots)
      if (path_within(r, root)) return true;
    return false;
  };
  ArgPolicyResult pol = apply_arg_policy(args, po);
  out.dropped = std::move(pol.dropped);
  args = std::move(pol.args);
  // No clang.cfg from the working directory or next to a compiler named in the database.
  args.insert(args.begin() + 1, "--no-default-config");
  args = getClangSyntaxOnlyAdjuster()(args, file);
  // Reading is confined (tu_analysis.cpp): the project, the system's and Clang's headers,
  // LibTorch's and CUDA's, and what --extra-arg names (given on the command line, trusted).
  for (const auto& r : out.project_roots) add_root(out.read_roots, r);
  for (const auto& d : system_include_dirs()) add_root(out.read_roots, d);
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "-I" || args[i] == "-isystem" || args[i] == "-idirafter" || args[i] == "-iquote") {
      std::string d = resolve(args[i + 1]);
      if (library_include_dir(d)) add_root(out.read_roots, d);
    } else if (args[i].rfind("-I", 0) == 0 && args[i].size() > 2 && library_include_dir(resolve(args[i].substr(2)))) {
      add_root(out.read_roots, resolve(args[i].substr(2)));
    }
  for (size_t i = 0; i < opts.extra_args.size(); ++i) {
    const std::string& e = opts.extra_args[i];
    for (const char* f : {"-I", "-isystem", "-idirafter", "-iquote"}) {
      size_t n = std::string(f).size();
      if (e == f && i + 1 < opts.extra_args.size()) add_root(out.read_roots, resolve(opts.extra_args[i + 1]));
      else if (e.rfind(f, 0) == 0 && e.size() > n) add_root(out.read_roots, resolve(e.substr(n)));
    }
  }
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
      add_root(out.read_roots, inc);
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
