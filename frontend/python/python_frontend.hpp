// Python frontend: tree-sitter-python -> the shared program model (rules/model.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rules/finding.hpp"
#include "rules/model.hpp"

namespace ll::python {

struct ParseOptions {
  uint64_t timeout_micros = 10'000'000;  // per-file parse budget
};

// The marker in a syntax-error diagnostic's message for indentation CPython refuses to
// compile (TabError, IndentationError) that tree-sitter accepted: the file never runs as
// written, and its blocks are tree-sitter's reading of the tabs.
inline constexpr std::string_view kPythonRejectsIndentation = "(Python raises ";

// Lowers `source` (UTF-8, validated by the caller) into `out`. Never throws. Appends
// non-fatal diagnostics (syntax errors, too-deep nesting) and returns false only when the
// file could not be analysed at all (parse budget exhausted).
bool lower(std::string_view source, const std::string& path, Module& out,
           std::vector<Diagnostic>& diags, const ParseOptions& opts = {});

// A `\r` not followed by `\n` ends a line (CPython's universal newlines). has_lone_cr
// says whether `s` has one; normalize_lone_cr turns each into `\n` (offsets unchanged).
bool has_lone_cr(std::string_view s);
void normalize_lone_cr(std::string& s);

// Where multi-line string literals lie, per `\n`-separated row of `source`: `starts` is
// true for a row that begins inside one (a continuation row of a triple-quoted string),
// `ends` for a row whose end lies inside one (the row that opens it, or a middle row).
// Notebook cells use it to leave such rows alone: IPython reads `a?` inside a string as text.
struct StringRows {
  std::vector<bool> starts, ends;
};
StringRows string_rows(std::string_view source, uint64_t timeout_micros = 1'000'000);

// Parse only (no lowering): the floor for benchmarks. Returns the number of nodes.
size_t parse_only(std::string_view source);

}  // namespace ll::python
