// What checks produce and reporters consume: language-neutral findings, fixes and
// per-file diagnostics.
#pragma once

#include <cstdint>
#include <algorithm>
#include <string>
#include <vector>

#include "rules/model.hpp"

namespace ll {

enum class Severity : uint8_t { Note, Warning, Error };
const char* severity_name(Severity s);  // "note" | "warning" | "error"

// One replacement of the byte range [begin, end) of the original file by `text`.
struct Edit {
  uint32_t begin = 0, end = 0;
  std::string text;
};

struct Fix {
  std::string title;       // "Add `()` to call torch.no_grad"
  bool safe = true;        // applied by --fix; unsafe ones need --unsafe-fixes
  std::vector<Edit> edits; // non-overlapping, any order
};

struct Note {
  Range range;
  std::string message;
};

struct Finding {
  std::string rule;        // "LL101"
  Severity severity = Severity::Warning;
  std::string path;        // as given on the command line / discovered (relative when possible)
  Range range;             // primary location
  std::string message;     // one line
  std::vector<Note> notes;
  std::vector<Fix> fixes;  // at most one today
  bool suppressed = false; // matched an inline suppression (reported only in SARIF)
  std::string suppression; // the suppression comment text, when suppressed
  bool low_confidence = false;  // e.g. C++ analysed without semantic information
  // A claim about memory held (docs/impact.md) made at full strength only because this file
  // alone cannot show that its program runs on the CPU: the engine weakens it when no file of
  // the project places a tensor on a GPU (weaken_memory_claims).
  bool memory_claim = false;
  // Jupyter notebooks: where the finding is in the notebook's cells (0 = not a notebook).
  int cell = 0;
  uint32_t cell_line = 0, cell_col = 0;
};

// A problem with one input file (unreadable, not UTF-8, syntax errors, too deep ...).
struct Diagnostic {
  std::string path;
  std::string kind;     // "io-error" | "syntax-error" | "encoding" | "too-large" | "too-deep" | "internal"
  std::string message;
  uint32_t line = 0;    // 0 when not tied to a line
  uint32_t col = 0;
  bool fatal = false;   // the file was not analysed at all
};

struct FileResult {
  std::string path;
  std::vector<Finding> findings;
  std::vector<Diagnostic> diagnostics;
  std::string source;   // the file's text, for reporters that show the line (may be empty)
  bool transcoded = false;  // analysed through a declared non-UTF-8 coding (no fixes offered)
  // Low-confidence findings removed because the file's configuration does not show them
  // (show-low-confidence, --show-low-confidence); the summary counts them.
  int hidden_low_confidence = 0;
  // The project-level impact policy applied here (no file of the project places a tensor on
  // a GPU, or none of the programs that import this module does): why its memory claims are
  // weak, "" when they are not. The fix loop keeps them so on every re-lint.
  std::string cpu_only;
  // Functions the run found nothing calls (checks.hpp, weaken_uncalled): their findings are
  // weak, and the fix loop keeps them so on every re-lint.
  std::vector<std::string> uncalled;
  // The run found the file in code vendored from another project (cli/engine.cpp,
  // vendored_code): why, "" when not. Its findings are weak, and the fix loop keeps them so.
  std::string vendored;
};

// The impact policy's weak evidence: one severity step lower, marked low-confidence, and the
// message says why. Checks (CheckContext::report_weak) and the engine's project-level policy
// use this one spelling.
inline void make_weak(Finding& f, const std::string& why) {
  f.message += " (low confidence: " + why + ")";
  f.low_confidence = true;
  f.severity = f.severity == Severity::Error ? Severity::Warning : Severity::Note;
}

// The project-level impact policy (docs/impact.md): in a project whose programs never place
// a tensor on a GPU, or in a module only such programs import, a memory claim is about host
// RAM of a CPU run. `why` says which (kCpuOnlyProject by default).
inline constexpr const char* kCpuOnlyProject = "nothing in this project places a tensor on a GPU";
inline void weaken_memory_claims(FileResult& r, const std::string& why = kCpuOnlyProject) {
  r.cpu_only = why;
  for (Finding& f : r.findings)
    if (f.memory_claim && !f.low_confidence) make_weak(f, why + ", so this costs host memory of a CPU run");
}

// The impact policy for vendored code (docs/impact.md): the file is another project's copy
// (`why` says where), whose defects are fixed upstream, not here.
inline void weaken_vendored(FileResult& r, const std::string& why) {
  r.vendored = why;
  for (Finding& f : r.findings)
    if (!f.low_confidence) make_weak(f, why);
}

// Removes the low-confidence findings of `r` unless `show` (the file's show-low-confidence)
// and adds how many went to r.hidden_low_confidence.
inline void hide_low_confidence(FileResult& r, bool show) {
  if (show) return;
  size_t before = r.findings.size();
  r.findings.erase(std::remove_if(r.findings.begin(), r.findings.end(),
                                  [](const Finding& f) { return f.low_confidence; }),
                   r.findings.end());
  r.hidden_low_confidence += static_cast<int>(before - r.findings.size());
}

// "file is 2.4 MiB, over the 1 MiB limit (--max-file-size); not analysed": one wording for
// both frontends, in units that never read "0 KiB".
inline std::string byte_size(uint64_t n) {
  if (n < 1024) return std::to_string(n) + (n == 1 ? " byte" : " bytes");
  if (n < 1024 * 1024) return std::to_string((n + 1023) / 1024) + " KiB";
  const uint64_t tenths = (n * 10 + 1024 * 1024 - 1) / (1024 * 1024);
  return std::to_string(tenths / 10) + (tenths % 10 ? "." + std::to_string(tenths % 10) : "") + " MiB";
}
inline std::string too_large_message(uint64_t size, uint64_t limit) {
  return "file is " + byte_size(size) + ", over the " + byte_size(limit) + " limit (--max-file-size); not analysed";
}

}  // namespace ll
