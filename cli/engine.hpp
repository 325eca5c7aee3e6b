// Per-file analysis and the parallel driver.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "checks/project.hpp"
#include "cli/cpp_driver.hpp"
#include "rules/config.hpp"
#include "rules/finding.hpp"

namespace ll {

struct EngineOptions {
  int jobs = 0;                           // 0 = hardware concurrency
  // The run was given directories only (no single files, no editor buffer): it sees every
  // caller a project's function has, so a function nothing reads is not called
  // (FileSummary::referenced). Pre-commit and editors name files: false there.
  bool whole_tree = false;
  uint64_t max_file_size = 10u << 20;     // bytes; larger files are skipped with a diagnostic
  uint64_t parse_timeout_ms = 10'000;     // per-file budget: parse, lowering, facts and checks
  uint64_t max_work = 0;                  // also a cap in budget::tick() units (0: none; exact, for tests)
  const class ResultCache* cache = nullptr;  // null: no caching
  // Called from worker threads after each file (progress display); may be empty.
  std::function<void(size_t done, size_t total)> progress;
  // C++ files (discover.hpp's is_cpp_path) go to the companion leaklint-cpp with these
  // options; `jobs` is taken from above.
  CppDriverOptions cpp;
};

// Reads, validates and analyses one file. `text_override` (when non-null) is used instead
// of reading the file (stdin, editors, re-linting after fixes).
FileResult analyze_file(const std::string& path, const Config& cfg, const EngineOptions& opts,
                        const std::string* text_override = nullptr, FileSummary* summary = nullptr,
                        std::unique_ptr<Module>* keep = nullptr);

// C/C++/CUDA text that is not on disk as given (an editor's buffer, stdin), analysed by
// leaklint-cpp through a temporary copy: beside `path` (`<stem>.leaklint-XXXXXX<ext>`, created
// with O_EXCL and mode 0600, always removed) so that relative includes, the compile database
// and the configuration resolve as for the file itself; when that directory cannot take it
// (or `beside_path` is false: an untitled buffer), in a private temporary directory, with a
// note that includes relative to the file did not resolve. Findings and diagnostics name
// `path`. A buffer holding nothing a C++ rule looks for never reaches leaklint-cpp.
FileResult analyze_cpp_buffer(const std::string& path, const std::string& text, const EngineOptions& opts,
                              bool beside_path = true);

// Temporary files this process has created and not yet removed: SIGINT, SIGTERM or SIGHUP
// removes them before the process dies (a handler is installed where the signal's action is
// still the default). `track_temp_file` returns a slot for `untrack_temp_file` (-1: none free).
int track_temp_file(const std::string& name);
void untrack_temp_file(int slot);

// Analyses text that is already in memory and known to be valid (used by --fix). With
// `keep`, the lowered module is handed back (when the analysis completed) for a later
// re-check with cross-file facts (analyze_all), so the file is not parsed twice.
FileResult analyze_text(const std::string& path, std::string text, const Config& cfg,
                        const EngineOptions& opts, const ProjectView* project = nullptr,
                        FileSummary* summary = nullptr, std::unique_ptr<Module>* keep = nullptr);

// Analyses all files on a thread pool, then re-analyses the few whose findings depend
// on other files (checks/project.hpp); results in the order of `files`.
std::vector<FileResult> analyze_all(const std::vector<std::string>& files, ConfigResolver& configs,
                                    const EngineOptions& opts);

// Sorts findings by (line, col, rule) and diagnostics by line.
void sort_result(FileResult& r);

// Checks that `text` is UTF-8; on failure returns the byte offset of the first bad byte.
bool valid_utf8(std::string_view text, size_t* bad_at);

}  // namespace ll
