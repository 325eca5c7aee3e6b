// Reporters: text (clang style), json, sarif (2.1.0), github (workflow annotations).
// All take the complete, deterministically sorted results of a run.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "rules/finding.hpp"

namespace ll {

struct ReportOptions {
  std::string format = "text";  // text | json | sarif | github
  bool color = false;           // text only: ANSI colours (only when writing to a terminal)
  bool show_source = true;      // text only: the source line and a caret
  std::string root;             // absolute path of the repository root (SARIF %SRCROOT%)
  std::string version;          // leaklint version
  bool show_fixes = true;       // json/sarif: include fixes
  int fixed_count = 0;          // text: "N fixed" in the summary line when --fix ran
  bool quiet = false;           // text: findings only, no summary line
  std::string step_summary;     // github: append a Markdown summary here ($GITHUB_STEP_SUMMARY)
  // Errors that fail the whole run rather than one file (an invalid configuration): SARIF
  // says executionSuccessful: false with each as a notification, so an uploaded report
  // never closes open alerts; text and github never claim "All checks passed!".
  std::vector<std::string> run_errors;
};

// Whether text output is coloured. `mode` is --color (always | never | auto); for auto:
// NO_COLOR set and non-empty turns colour off (no-color.org), FORCE_COLOR set and
// non-empty turns it on (force-color.org), TERM=dumb turns it off, else a terminal decides.
bool color_enabled(std::string_view mode, bool to_tty, const char* no_color, const char* force_color,
                   const char* term);

// Whether a diagnostic fails the run (exit 1 even without findings): the file, or part of
// it, was not analysed. The exit code and every report's summary use this one predicate.
bool diagnostic_fails_run(const Diagnostic& d);

// `results` is sorted by path; each FileResult's findings by (line, col, rule).
// Suppressed findings are present with suppressed=true: sarif reports them with
// `suppressions`, other formats omit them.
void write_report(std::ostream& out, const std::vector<FileResult>& results,
                  const ReportOptions& opts);

// A file name made safe for a terminal or a line-oriented log: control characters become
// `\n`, `\t`, `\x1b` ..., bytes that are not UTF-8 `\xff`, bidirectional overrides
// `\u{202e}`; everything else (including non-ASCII names) is kept.
std::string escape_path(std::string_view path);

// The stable fingerprint of each finding of `r` (same order), as written to SARIF's
// partialFingerprints: it survives edits elsewhere in the file (baselines use it too).
std::vector<std::string> finding_fingerprints(const FileResult& r, const std::string& root);

}  // namespace ll
