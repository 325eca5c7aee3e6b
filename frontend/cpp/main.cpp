// leaklint-cpp: the C++ (LibTorch) companion of `leaklint`. Lowers each translation unit
// with Clang into the shared model, runs the checks that support C++ and the inline
// suppressions, and prints one JSON array of per-file results on stdout (the format
// cli/cpp_driver.cpp reads; see docs/cpp.md).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <llvm/Support/ErrorHandling.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <thread>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "checks/project.hpp"
#include "frontend/cpp/cpp_adapt.hpp"
#include "frontend/cpp/model_builder.hpp"
#include "frontend/cpp/tu_analysis.hpp"
#include "rules/config.hpp"

using namespace ll;
using json = nlohmann::json;

// Under -DLEAKLINT_SANITIZE=ON: LLVM installs its own alternate signal stack on the threads
// that write files (the PCH), which AddressSanitizer would try to unmap as its own.
extern "C" const char* __asan_default_options() { return "use_sigaltstack=0"; }

namespace {

// Exit status when the memory limit was reached (cli/cpp_driver.cpp reports the file as
// `resource-limit`).
constexpr int kExitResourceLimit = 75;

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define LEAKLINT_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LEAKLINT_SANITIZED 1
#endif

[[noreturn]] void out_of_memory() {
  static const char msg[] = "leaklint-cpp: memory limit reached (LEAKLINT_CPP_MEMORY_MB)\n";
  ssize_t n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)n;
  ::_exit(kExitResourceLimit);
}

void bad_alloc_handler(void*, const char*, bool) { out_of_memory(); }

uint64_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

// A scanned file (a macro bomb, a template explosion) must not take the machine's memory.
// RLIMIT_AS makes allocation fail at the limit; a sampling thread also ends the process when
// its resident size passes the limit, which is the only bound under AddressSanitizer (it
// reserves terabytes of address space, so no address-space or data limit can be set there).
void limit_memory(uint64_t mib) {
  if (mib == 0) return;
  uint64_t bytes = mib << 20;
  std::set_new_handler([] { out_of_memory(); });
  llvm::install_bad_alloc_error_handler(bad_alloc_handler, nullptr);
#ifndef LEAKLINT_SANITIZED
  // Address space, not resident memory: the mapped shared libraries, thread stacks and malloc
  // arenas count too, hence the margin.
  rlimit rl{};
  if (::getrlimit(RLIMIT_AS, &rl) == 0) {
    rlim_t want = static_cast<rlim_t>(bytes + (1ull << 30));
    if (rl.rlim_max == RLIM_INFINITY || want < rl.rlim_max) {
      rl.rlim_cur = want;
      ::setrlimit(RLIMIT_AS, &rl);
    }
  }
#endif
  std::thread([bytes] {
    for (;;) {
      if (rss_bytes() > bytes) out_of_memory();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }).detach();
}

// Started by `leaklint`: end with it (kill -9 of leaklint, a CI job cancelled), even if it
// died before this line ran.
void die_with_parent() {
  const char* p = std::getenv("LEAKLINT_CPP_PARENT");
  if (!p || !*p) return;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // Gone already (a wrapper script in between is fine: only a dead leaklint counts).
  pid_t parent = static_cast<pid_t>(std::strtol(p, nullptr, 10));
  if (parent > 0 && ::getppid() != parent && ::kill(parent, 0) != 0 && errno == ESRCH) ::_exit(1);
}

json range_json(const Range& r) {
  return {{"line", r.line}, {"col", r.col}, {"end_line", r.end_line}, {"end_col", r.end_col},
          {"begin", r.begin}, {"end", r.end}};
}

json finding_json(const Finding& f) {
  json j = range_json(f.range);
  j["rule"] = f.rule;
  j["severity"] = severity_name(f.severity);
  j["message"] = f.message;
  json notes = json::array();
  for (const auto& n : f.notes) {
    json nj = range_json(n.range);
    nj["message"] = n.message;
    notes.push_back(nj);
  }
  j["notes"] = notes;
  json fixes = json::array();
  for (const auto& fx : f.fixes) {
    json edits = json::array();
    for (const auto& e : fx.edits) edits.push_back({{"begin", e.begin}, {"end", e.end}, {"text", e.text}});
    fixes.push_back({{"title", fx.title}, {"safe", fx.safe}, {"edits", edits}});
  }
  j["fixes"] = fixes;
  j["low_confidence"] = f.low_confidence;
  if (f.memory_claim) j["memory_claim"] = true;
  j["suppressed"] = f.suppressed;
  if (f.suppressed) j["suppression"] = f.suppression;
  return j;
}

json diag_json(const Diagnostic& d) {
  return {{"kind", d.kind}, {"message", d.message}, {"line", d.line}, {"col", d.col}, {"fatal", d.fatal}};
}

}  // namespace

int main(int argc, char** argv) {
  die_with_parent();
  // A crash inside Clang on one file becomes a diagnostic for that file, not a crash.
  cpp::enable_crash_recovery();
  CLI::App app{"leaklint-cpp: LibTorch C++ analysis for leaklint (Clang frontend); prints JSON"};
  app.set_version_flag("--version", std::string("leaklint-cpp ") + LEAKLINT_VERSION + " (LLVM " +
                                        LEAKLINT_LLVM_VERSION + ")");
  std::vector<std::string> files, select, ignore, extra_args;
  std::string build_dir, config_file, cache_dir;
  uint64_t max_kib = 10 * 1024;
  std::vector<std::string> roots;
  bool verbose = false;
#ifdef LEAKLINT_SANITIZED
  uint64_t memory_mb = 3 * 4096;  // ASan's shadow memory and redzones count as resident
#else
  uint64_t memory_mb = 4096;
#endif
  if (const char* m = std::getenv("LEAKLINT_CPP_MEMORY_MB"); m && *m) memory_mb = std::strtoull(m, nullptr, 10);
  bool no_cache = false, no_source = false, stats = false, syntactic_only = false, dump_model = false, pretty = false;
  app.add_option("files", files, "C++ files to analyse")->required();
  app.add_option("-p,--build-dir", build_dir, "Directory holding compile_commands.json (default: search upwards)");
  app.add_option("--config", config_file, "Use this configuration file for every file");
  app.add_option("--select", select, "Rule IDs or prefixes to enable")->delimiter(',');
  app.add_option("--ignore", ignore, "Rule IDs or prefixes to disable")->delimiter(',');
  app.add_option("--extra-arg", extra_args, "Append an argument to every compile command")->allow_extra_args(false);
  app.add_flag("--no-cache", no_cache, "Do not read or write the precompiled-preamble cache");
  app.add_option("--cache-dir", cache_dir, "Cache directory (default: $XDG_CACHE_HOME/leaklint or ~/.cache/leaklint)");
  app.add_flag("--syntactic-only", syntactic_only, "Skip Clang; lower from tokens only (low confidence)");
  app.add_flag("--no-source", no_source, "Leave the file text out of the JSON");
  app.add_flag("--stats", stats, "Add per-file timing and lowering details to the JSON");
  app.add_flag("--dump-model", dump_model, "Print the lowered model of each file on stderr (debugging)");
  app.add_flag("--pretty", pretty, "Indent the JSON");
  app.add_option("--max-file-size", max_kib, "Skip files larger than this many KiB (default 10240)");
  app.add_option("--root", roots,
                 "A scanned tree (file or directory); what a file may include is confined to its tree and "
                 "system/LibTorch headers")
      ->allow_extra_args(false);
  app.add_option("--memory-limit", memory_mb,
                 "Memory limit in MiB (default $LEAKLINT_CPP_MEMORY_MB or 4096; 0: none); a file that needs "
                 "more ends the process with status 75");
  app.add_flag("--verbose", verbose, "Also report the compile-database flags that were not used (compile-flags-dropped)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  limit_memory(memory_mb);

  ConfigResolver configs(config_file, select, ignore);
  if (auto err = configs.load_error()) {
    std::cerr << "leaklint-cpp: " << *err << "\n";
    return 2;
  }
  cpp::TuOptions opts;
  opts.compile.roots = roots;
  opts.verbose = verbose;
  opts.compile.build_dir = build_dir;
  opts.compile.extra_args = extra_args;
  const char* no_torch = std::getenv("LEAKLINT_NO_TORCH_INCLUDES");
  opts.compile.torch_search = !(no_torch && *no_torch && std::string(no_torch) != "0");
  opts.force_syntactic = syntactic_only;
  opts.max_file_size = max_kib * 1024;
  std::string dir = no_cache ? "" : (cache_dir.empty() ? cpp::PchCache::default_dir() : cache_dir + "/pch-v1");
  cpp::PchCache cache(dir);

  json out = json::array();
  for (const std::string& path : files) {
    json fj;
    fj["path"] = path;
    json findings = json::array(), diags = json::array();
    std::string err;
    auto cfg = configs.for_file(path, &err);
    if (!err.empty()) {
      Diagnostic d;
      d.kind = "config";
      d.message = err;
      d.fatal = true;
      diags.push_back(diag_json(d));
      fj["findings"] = findings;
      fj["diagnostics"] = diags;
      fj["source"] = "";
      out.push_back(fj);
      continue;
    }
    cpp::TuResult tu = cpp::analyze_tu(path, opts, cache);
    FileSummary impact;
    if (tu.analysed) {
      if (dump_model) std::cerr << "== " << path << "\n" << cpp::dump_module(tu.module);
      for (const Finding& f :
           cpp::run_cpp_checks(tu.module, *cfg, path, tu.source, tu.low_confidence, tu.fixable, &impact))
        findings.push_back(finding_json(f));
    }
    // The impact facts of the project-level policy (FileSummary::program, gpu_evidence).
    fj["program"] = impact.program;
    fj["gpu_evidence"] = impact.gpu_evidence;
    for (const Diagnostic& d : tu.diagnostics) diags.push_back(diag_json(d));
    fj["findings"] = findings;
    fj["diagnostics"] = diags;
    fj["source"] = no_source ? std::string() : tu.source;
    if (stats)
      fj["stats"] = {{"seconds", tu.seconds},       {"pch", tu.pch_status},         {"pch_seconds", tu.pch_seconds},
                     {"semantic", tu.semantic},     {"origin", tu.command_origin},  {"functions", tu.module.funcs.size()},
                     {"statements", tu.module.stmts.size()}};
    out.push_back(std::move(fj));
  }
  std::cout << out.dump(pretty ? 2 : -1, ' ', false, json::error_handler_t::replace) << "\n";
  if (cpp::crash_recovered()) {
    // The crashed compiler's heap was abandoned by design (see crash_recovered); end without
    // exit-time handlers, so that a leak checker does not report that memory as our leak.
    std::cout.flush();
    std::_Exit(0);
  }
  return 0;
}
