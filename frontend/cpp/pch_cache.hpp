// A persistent cache of precompiled LibTorch headers. One PCH of <torch/torch.h> and
// <torch/script.h> ("the umbrella", function bodies skipped: the analysis needs only
// declarations) is built per set of compile flags and reused by every translation unit
// that uses LibTorch, in this run and later ones: a file's own `#include <torch/torch.h>`
// then costs nothing (the headers are `#pragma once`), and its project headers are parsed
// as usual. Include directories that hold no LibTorch/CUDA headers are left out of the
// key, so the files of a project share one PCH. The key is a SHA-256 of (Clang version,
// flags, working directory when flags name relative paths, size and mtime of a few LibTorch
// headers: Clang does not validate -isystem headers against a PCH); a PCH Clang rejects is
// rebuilt.
//
// Location: $LEAKLINT_CACHE_DIR, else $XDG_CACHE_HOME/leaklint, else ~/.cache/leaklint.
// Concurrent processes building the same PCH serialise on a lock file; one builds, the
// others wait and reuse it. Least recently used PCHs beyond $LEAKLINT_CACHE_MAX_MB
// (default 2048) are removed.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <clang/Basic/Diagnostic.h>

namespace ll::cpp {

// Does the file use LibTorch (and so benefit from the umbrella PCH)?
bool mentions_torch(std::string_view src);

// Collects error diagnostics of one compiler run.
class DiagCollector : public clang::DiagnosticConsumer {
 public:
  struct Item {
    std::string message;
    std::string file;        // presumed file name ("" when no location)
    uint32_t line = 0, col = 0;
    uint32_t offset = 0;     // file offset of the location
    bool in_main = false;
    bool fatal = false;
    // A missing `template` or `typename` disambiguator (`x.item<int>()` on a dependent `x`):
    // MSVC accepts the code as written, and Clang recovers as if the keyword were there, so
    // the AST is the program's own.
    bool missing_keyword = false;
  };
  std::vector<Item> errors;
  bool fatal = false;
  std::string missing_header;  // the first `'x.h' file not found`
  std::string missing_header_in;  // the file whose #include names it
  bool pch_problem = false;    // the precompiled header could not be used
  void HandleDiagnostic(clang::DiagnosticsEngine::Level level, const clang::Diagnostic& info) override;
  void reset() {
    errors.clear();
    fatal = false;
    missing_header.clear();
    missing_header_in.clear();
    pch_problem = false;
    NumErrors = NumWarnings = 0;
  }
  bool main_file_errors() const {
    for (const auto& e : errors)
      if (e.in_main) return true;
    return false;
  }
  // Errors in the main file other than missing disambiguators: its AST is not the program's.
  bool main_file_hard_errors() const {
    for (const auto& e : errors)
      if (e.in_main && !e.missing_keyword) return true;
    return false;
  }
  // Every error is a missing disambiguator in the main file.
  bool only_missing_keywords() const {
    if (errors.empty() || fatal) return false;
    for (const auto& e : errors)
      if (!e.in_main || !e.missing_keyword) return false;
    return true;
  }
};

struct PchRequest {
  std::vector<std::string> args;  // the file's command line, args[input] the file
  size_t input = 0;
  std::string directory;          // working directory of the command
  std::vector<std::string> roots; // real paths the build may read (contained_fs.hpp); empty: any
};

struct PchOutcome {
  std::string pch;          // path of a usable PCH; empty when none
  std::string status;       // "hit" | "built" | "disabled" | "none" | "failed"
  double build_seconds = 0;
  DiagCollector diags;      // errors while building
};

class PchCache {
 public:
  // `dir` empty: caching disabled.
  explicit PchCache(std::string dir) : dir_(std::move(dir)) {}
  static std::string default_dir();
  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  // Returns the umbrella PCH for the request's flags, building it when missing (or when `rebuild`).
  PchOutcome get(const PchRequest& req, bool rebuild = false);

 private:
  void evict() const;
  std::string dir_;
  std::set<std::string> failed_keys_;  // builds that failed in this process
};

}  // namespace ll::cpp
