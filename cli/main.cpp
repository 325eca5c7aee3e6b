// leaklint command line: thin main over the engine, discovery, fixes and reporters.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "cli/adoption.hpp"
#include "cli/cache.hpp"
#include "cli/crash_guard.hpp"
#include "cli/discover.hpp"
#include "cli/engine.hpp"
#include "cli/fix.hpp"
#include "cli/lsp.hpp"
#include "cli/notebook.hpp"
#include "cli/progress.hpp"
#include "cli/report.hpp"
#include "rules/registry.hpp"

namespace fs = std::filesystem;
using namespace ll;

namespace {

std::string repo_root_for(const std::string& start) {
  std::error_code ec;
  fs::path p = fs::absolute(start.empty() ? "." : start, ec);
  if (fs::is_regular_file(p, ec)) p = p.parent_path();
  for (fs::path cur = p; !cur.empty(); cur = cur.parent_path()) {
    if (fs::exists(cur / ".git", ec)) return cur.string();
    if (cur == cur.parent_path()) break;
  }
  return fs::absolute(".", ec).string();
}

void list_rules(std::ostream& out) {
  for (const RuleInfo& r : all_rules()) {
    out << r.id << "  " << r.slug;
    for (size_t i = r.slug.size(); i < 38; ++i) out << ' ';
    out << severity_name(r.severity);
    for (size_t i = std::string(severity_name(r.severity)).size(); i < 9; ++i) out << ' ';
    out << r.languages << (r.fix.empty() ? "" : r.fix == "safe" ? "  [fix]" : "  [unsafe fix]") << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"leaklint: finds code that leaks or wastes GPU memory in PyTorch and LibTorch programs"};
  app.set_version_flag("--version", std::string("leaklint ") + LEAKLINT_VERSION);
  std::vector<std::string> paths;
  std::string format = "text", output, config_file, color = "auto", stdin_filename;
  std::vector<std::string> select, ignore;
  bool fix = false, unsafe_fixes = false, diff = false, exit_zero = false, list = false, quiet = false;
  bool no_source = false, no_cache = false;
  DiscoverOptions discover_opts;
  bool verbose = false;
  std::string cache_dir, baseline, write_baseline_file, diff_base;
  int jobs = 0;
  uint64_t max_kib = 10 * 1024;
  app.add_option("paths", paths, "Files or directories to check (default: .)");
  app.add_option("--format", format, "Output format")->check(CLI::IsMember({"text", "json", "sarif", "github"}));
  app.add_option("-o,--output", output, "Write the report to FILE instead of stdout");
  // One value per occurrence (comma-separated), repeatable; never swallows the paths.
  auto list_option = [&](const char* name, std::vector<std::string>& into, const char* help) {
    app.add_option_function<std::string>(
           name,
           [&into](const std::string& v) {
             std::string cur;
             for (char c : v + ",") {
               if (c == ',') {
                 if (!cur.empty()) into.push_back(cur);
                 cur.clear();
               } else if (c != ' ') {
                 cur.push_back(c);
               }
             }
           },
           help)
        ->trigger_on_parse()
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  };
  list_option("--select", select, "Rule IDs or prefixes to enable (e.g. LL1,LL401)");
  list_option("--ignore", ignore, "Rule IDs or prefixes to disable");
  app.add_option("--config", config_file, "Use this configuration file for every file");
  app.add_flag("--fix", fix, "Apply safe fixes");
  app.add_flag("--unsafe-fixes", unsafe_fixes, "Also apply fixes that may change behaviour");
  bool fix_read_only = false;
  app.add_flag("--fix-read-only", fix_read_only, "Also fix files without write permission (skipped by default)");
  app.add_flag("--diff", diff, "Print the fixes as a unified diff instead of writing them");
  app.add_flag("--exit-zero", exit_zero, "Exit 0 even when there are findings");
  bool show_low_confidence = false;
  app.add_flag("--show-low-confidence", show_low_confidence,
               "Also report low-confidence findings (hidden and counted by default; docs/impact.md)");
  app.add_flag("--list-rules", list, "List the rules and exit");
  app.add_flag("-q,--quiet", quiet, "Text format: print findings only, no summary");
  app.add_flag("--no-show-source", no_source, "Text format: do not show the source line");
  app.add_option("-j,--jobs", jobs, "Parallel jobs (default: number of cores)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return v.find_first_not_of("0123456789") == std::string::npos && !v.empty() && v.size() <= 4
                       ? std::string()
                       : "must be a whole number from 0 (one per core) to 9999, got '" + v + "'";
          },
          "N"));
  app.add_option("--color", color, "Colour text output")->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--max-file-size", max_kib, "Skip files larger than this many KiB (default 10240)");
  app.add_option("--baseline", baseline, "Report only findings not recorded in this baseline file");
  app.add_option("--write-baseline", write_baseline_file, "Record all current findings in FILE and exit 0");
  app.add_option("--diff-base", diff_base, "Report only findings that changes since this git revision may have made: a changed or removed line at "
                 "the finding or in its function or loop (a removed no_grad line or decorator counts)");
  app.add_flag("--no-cache", no_cache, "Analyse every file, ignoring and not writing the result cache");
  std::vector<std::string> exclude, extend_exclude;
  list_option("--exclude", exclude,
              "Globs of files and directories not to analyse (comma-separated, repeatable); replaces the "
              "default list (.git, venv, build, node_modules, ...)");
  list_option("--extend-exclude", extend_exclude,
              "Globs of files and directories not to analyse, besides the default list");
  app.add_flag("--follow-external-symlinks", discover_opts.follow_external_symlinks,
               "Follow symbolic links whose real path is outside the scanned tree (default: skip them)");
  app.add_flag("-v,--verbose", verbose, "Say which files discovery skipped (e.g. links out of the tree) on stderr");
  app.add_option("--cache-dir", cache_dir, "Result cache directory (default: $XDG_CACHE_HOME/leaklint)");
  std::string build_dir;
  std::vector<std::string> extra_args;
  app.add_option("-p,--build-dir", build_dir, "C++: directory with compile_commands.json (default: searched upwards)");
  app.add_option("--extra-arg", extra_args, "C++: append an argument to every compile command")
      ->allow_extra_args(false);
  app.add_option("--stdin-filename", stdin_filename, "Read the source from stdin and report it under this name");

  auto* explain = app.add_subcommand("explain", "Show a rule's documentation");
  std::string explain_id;
  explain->add_option("rule", explain_id, "Rule ID or slug (e.g. LL101 or missing-no-grad)")->required();

  auto* lsp = app.add_subcommand("lsp", "Run the language server (LSP over stdio) for editors");
  // VS Code's language client (and others) pass --stdio; stdio is the only transport.
  lsp->add_flag("--stdio", "Talk LSP over stdin/stdout (the default and only transport)");
  auto* help = app.add_subcommand("help", "Show this help and exit");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  if (help->parsed()) {
    // app.help() would describe the `help` subcommand itself; format the main app.
    std::cout << app.get_formatter()->make_help(&app, "leaklint", CLI::AppFormatMode::Normal);
    return 0;
  }
  if (lsp->parsed()) {
    // Raw bytes both ways (Content-Length framing); buffered stdin lets the server see
    // whether more messages are queued, so bursts of didChange are analysed once.
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    return run_lsp(std::cin, std::cout);
  }
  if (explain->parsed()) {
    const RuleInfo* r = find_rule(explain_id);
    if (!r) {
      std::cerr << "leaklint: unknown rule '" << explain_id << "' (see --list-rules)\n";
      return 2;
    }
    std::string_view doc = rule_doc(r->id);
    if (doc.empty()) std::cout << r->id << " " << r->slug << "\n\n" << r->summary << "\n";
    else std::cout << doc;
    return 0;
  }
  if (list) {
    list_rules(std::cout);
    return 0;
  }
  for (const auto& s : select)
    if (s != "ALL" && s.rfind("LL", 0) != 0) {
      std::cerr << "leaklint: --select: '" << s << "' is not a rule ID or prefix (like LL1 or LL401)\n";
      return 2;
    }
  for (const auto& s : ignore)
    if (s != "ALL" && s.rfind("LL", 0) != 0) {
      std::cerr << "leaklint: --ignore: '" << s << "' is not a rule ID or prefix\n";
      return 2;
    }

  ConfigResolver configs(config_file, select, ignore, show_low_confidence);
  if (auto err = configs.load_error()) {
    std::cerr << "leaklint: " << *err << "\n";
    return 2;
  }
  EngineOptions opts;
  opts.jobs = jobs;
  opts.max_file_size = max_kib * 1024;
  opts.cpp.build_dir = build_dir;
  opts.cpp.extra_args = extra_args;
  opts.cpp.config_file = config_file;
  opts.cpp.select = select;
  opts.cpp.ignore = ignore;
  opts.cpp.no_cache = no_cache;
  if (!cache_dir.empty()) opts.cpp.cache_dir = cache_dir;
  if (const char* t = std::getenv("LEAKLINT_CPP_TIMEOUT"); t && std::atoi(t) > 0)
    opts.cpp.timeout_s = static_cast<unsigned>(std::atoi(t));

  std::vector<FileResult> results;
  std::vector<Diagnostic> discovery_diags;
  std::string stdin_text;  // --stdin-filename: the editor's buffer, as received
  if (!stdin_filename.empty()) {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    std::string text = ss.str();
    stdin_text = text;
    std::string err;
    auto cfg = configs.for_file(stdin_filename, &err);
    if (!err.empty()) {
      std::cerr << "leaklint: " << err << "\n";
      return 2;
    }
    results.push_back(analyze_file(stdin_filename, *cfg, opts, &text));
  } else {
    if (paths.empty()) paths.push_back(".");
    opts.whole_tree = std::all_of(paths.begin(), paths.end(), [](const std::string& p) {
      std::error_code ec;
      return std::filesystem::is_directory(p, ec);
    });
    opts.cpp.roots = paths;  // leaklint-cpp confines what C++ files include to these trees
    opts.cpp.verbose = verbose;  // and reports the compile flags it did not use
    if (!exclude.empty()) discover_opts.default_excludes = false;
    discover_opts.exclude = exclude;
    discover_opts.exclude.insert(discover_opts.exclude.end(), extend_exclude.begin(), extend_exclude.end());
    DiscoveredFiles found = discover(paths, discover_opts);
    discovery_diags = std::move(found.diagnostics);
    if (verbose)
      for (const auto& l : found.skipped_links)
        std::cerr << "leaklint: skipped " << escape_path(l)
                  << ": symbolic link to outside the scanned tree (--follow-external-symlinks follows it)\n";
    if (verbose)
      for (const auto& p : found.skipped_ignored)
        std::cerr << "leaklint: skipped " << escape_path(p) << ": ignored by a .gitignore (name it on the command line to analyse it)\n";
    // The analysis runs in a child process: a file that crashes it is reported and the run
    // is made again without it (crash_guard.hpp). The parent ends here with the child's status.
    if (std::optional<int> rc = run_guarded()) return *rc;
    std::unique_ptr<ResultCache> cache;
    if (!no_cache) {
      cache = std::make_unique<ResultCache>(cache_dir, fix || diff || unsafe_fixes || format == "json" || format == "sarif");
      if (cache->enabled()) opts.cache = cache.get();
    }
    Progress progress(format == "text" && ::isatty(STDERR_FILENO) && found.files.size() > 1);
    opts.progress = [&progress](size_t done, size_t total) { progress.update(done, total); };
    results = analyze_all(found.files, configs, opts);
    progress.finish();
  }
  for (auto& d : discovery_diags) {
    FileResult r;
    r.path = d.path;
    r.diagnostics.push_back(d);
    results.push_back(std::move(r));
  }
  std::stable_sort(results.begin(), results.end(),
                   [](const FileResult& a, const FileResult& b) { return a.path < b.path; });

  // A configuration error is the run's, not each file's: said once on stderr (and as a
  // failed execution in SARIF), however many files it stopped.
  std::vector<std::string> config_errors;
  for (auto& r : results) {
    for (const auto& d : r.diagnostics)
      if (d.kind == "config" &&
          std::find(config_errors.begin(), config_errors.end(), d.message) == config_errors.end())
        config_errors.push_back(d.message);
    r.diagnostics.erase(std::remove_if(r.diagnostics.begin(), r.diagnostics.end(),
                                       [](const Diagnostic& d) { return d.kind == "config"; }),
                        r.diagnostics.end());
  }
  for (const auto& e : config_errors) std::cerr << "leaklint: error: " << e << "\n";

  // Low-confidence findings are hidden unless the file's configuration shows them: before
  // baselines, fixes and reports, so that what is written, fixed and shown is one set.
  auto hide_weak = [&configs](std::vector<FileResult>& rs) {
    for (auto& r : rs) {
      std::string err;
      auto cfg = configs.for_file(r.path, &err);
      hide_low_confidence(r, cfg && cfg->show_low_confidence);
    }
  };
  hide_weak(results);

  ReportOptions ro;
  ro.root = repo_root_for(paths.empty() ? std::string(".") : paths.front());
  if (!write_baseline_file.empty()) {
    if (auto err = write_baseline(write_baseline_file, results, ro.root)) {
      std::cerr << "leaklint: " << *err << "\n";
      return 2;
    }
    size_t n = 0;
    for (const auto& r : results)
      for (const auto& f : r.findings) n += f.suppressed ? 0 : 1;
    std::cerr << "leaklint: wrote " << n << " finding(s) to " << write_baseline_file << "\n";
    return 0;
  }
  if (!baseline.empty()) {
    size_t dropped = 0;
    if (auto err = apply_baseline(baseline, results, ro.root, &dropped)) {
      std::cerr << "leaklint: " << *err << "\n";
      return 2;
    }
  }
  if (!diff_base.empty()) {
    std::string err;
    std::error_code ec;
    auto changed = changed_lines(diff_base, std::filesystem::current_path(ec).string(), &err);
    if (!changed) {
      std::cerr << "leaklint: " << err << "\n";
      return 2;
    }
    size_t dropped = 0;
    keep_changed(*changed, results, &dropped);
  }

  int fixed_count = 0;
  bool fix_failed = false;
  if (fix || diff || unsafe_fixes) {
    FixRunOptions fo;
    fo.unsafe = unsafe_fixes;
    fo.diff = diff;
    fo.to_stdout = !stdin_filename.empty();
    fo.fix_read_only = fix_read_only;
    fo.roots = paths;
    // --stdin-filename with --fix (an editor's fix-on-save), as ruff does: stdout always
    // gets the whole buffer, fixed or not, and the findings left go to stderr. Nothing is
    // written to disk, notebooks included.
    std::ostringstream fixed_buffer;
    std::ostream& fix_out = fo.to_stdout && !diff ? static_cast<std::ostream&>(fixed_buffer) : std::cout;
    for (auto& r : results) {
      if (r.source.empty() || r.findings.empty()) continue;
      std::string err;
      auto cfg = configs.for_file(r.path, &err);
      if (cfg) fixed_count += fix_file(r, *cfg, opts, fo, fix_out, std::cerr, &fix_failed);
    }
    if (fo.to_stdout && !diff) std::cout << (fixed_buffer.tellp() > 0 ? fixed_buffer.str() : stdin_text);
    if (diff) {
      std::cerr << (fixed_count ? std::to_string(fixed_count) + " fix(es) available" : "No fixes available") << "\n";
      return exit_zero ? 0 : (fixed_count ? 1 : 0);
    }
  }

  hide_weak(results);  // files analysed again while fixing
  ro.format = format;
  ro.version = LEAKLINT_VERSION;
  ro.show_source = !no_source && !quiet;
  ro.quiet = quiet;
  if (const char* md = std::getenv("GITHUB_STEP_SUMMARY"); md && *md && format == "github") ro.step_summary = md;
  ro.run_errors = config_errors;
  ro.fixed_count = fixed_count;
  bool to_tty = output.empty() && ::isatty(STDOUT_FILENO);
  ro.color = color_enabled(color, to_tty, std::getenv("NO_COLOR"), std::getenv("FORCE_COLOR"), std::getenv("TERM"));
  if (output.empty()) {
    // With --fix on stdin, stdout holds the buffer: the report goes to stderr.
    const bool buffer_on_stdout = stdin_filename.size() && (fix || unsafe_fixes);
    if (buffer_on_stdout) ro.color = color_enabled(color, ::isatty(STDERR_FILENO), std::getenv("NO_COLOR"),
                                                   std::getenv("FORCE_COLOR"), std::getenv("TERM"));
    write_report(buffer_on_stdout ? std::cerr : std::cout, results, ro);
  } else {
    std::ofstream out(output, std::ios::binary);
    if (!out) {
      std::cerr << "leaklint: cannot write " << output << "\n";
      return 2;
    }
    write_report(out, results, ro);
  }

  bool failures = fix_failed;
  size_t findings = 0;
  for (const auto& r : results) {
    for (const auto& f : r.findings)
      if (!f.suppressed) ++findings;
    for (const auto& d : r.diagnostics)
      if (diagnostic_fails_run(d)) failures = true;
  }
  if (!config_errors.empty()) return 2;
  if (exit_zero) return 0;
  return findings || failures ? 1 : 0;
}
