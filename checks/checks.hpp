// One check per rule ID, each written once against the shared model (checks/facts.hpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "checks/facts.hpp"
#include "rules/finding.hpp"
#include "rules/suppress.hpp"

namespace ll {

class CheckContext {
 public:
  CheckContext(const Facts& f, std::string_view source, std::vector<Finding>& out)
      : facts(f), source(source), out_(out) {}
  const Facts& facts;
  std::string_view source;
  // Per-file memo for interprocedural questions (e.g. LL102: does a function return a
  // value that carries autograd history?): 0 computing, 1 no, 2 yes.
  std::unordered_map<Id, int> returns_history_memo;

  // Adds a finding (severity from the registry and configuration) unless the rule is
  // disabled for this file. Returns the finding for notes/fixes, or nullptr.
  Finding* report(std::string_view rule, const Range& where, std::string message);
  // The impact policy (docs/impact.md) for weak evidence: the finding is reported one
  // severity step lower, marked low-confidence, and its message says why.
  Finding* report_weak(std::string_view rule, const Range& where, std::string message, const std::string& why);
  bool enabled(std::string_view rule) const;
  // Does a comment of the file suppress `rule` at `line`? A finding that others join as
  // notes must not be one: its notes would be hidden with it.
  bool suppressed(const std::string& rule, uint32_t line) const;
  // A finding's position among the file's findings, which (unlike the Finding*) stays valid
  // while later findings are added, and the finding at a position.
  size_t handle(const Finding* fd) const { return static_cast<size_t>(fd - out_.data()); }
  Finding& at(size_t h) { return out_[h]; }

  // Source text helpers for messages and fixes.
  std::string text(const Range& r) const;
  std::string text(Id expr) const { return text(facts.e(expr).range); }
  // The text for a one-line message: whitespace runs (line breaks included) become one
  // space, and text longer than `max` is cut to `max - 3` characters and "...".
  std::string brief(Id expr, size_t max = 40) const;
  uint32_t line_start(uint32_t byte) const;      // byte offset of the line's first char
  std::string indent_at(uint32_t byte) const;     // leading whitespace of that line
  std::string newline() const;                    // "\r\n" when the file uses it
  std::string indent_unit() const;                // the file's indentation step ("    ")

 private:
  std::vector<Finding>& out_;
  std::unordered_set<std::string> reported_;  // "rule:begin:end" of out_'s findings
  mutable std::optional<Suppressions> suppressions_;  // read on the first suppressed() question
};

using CheckFn = void (*)(CheckContext&);
struct CheckEntry {
  std::string_view id;
  CheckFn run;
};
const std::vector<CheckEntry>& all_checks();

// LL405's contribution to the cross-file facts (checks/project.hpp): functions that return a
// distributed wrap, imported loader builders that feed a distributed training loop.
void summarize_LL405(const Facts& f, FileSummary& out);
void summarize_LL203(const Facts& f, FileSummary& out);
// LL301's: the sizes of the file's module classes built with no arguments, and its module-level
// functions that back-propagate (a sweep that hands its models to one trains each).
void summarize_LL301(const Facts& f, FileSummary& out);
// LL205's: the module classes whose layers behave the same in train() and eval(), and the
// imported classes that must too.
void summarize_LL205(const Facts& f, FileSummary& out);
// LL101's: methods of plain classes that run a model attribute's forward with grad on.
void summarize_LL101(const Facts& f, FileSummary& out);
// LL206's: optimizer factories of a known kind, and losses summed over the batch.
void summarize_LL206(const Facts& f, FileSummary& out);
// LL105's: methods (constructors included) that register a hook they neither remove nor hand back.
void summarize_LL105(const Facts& f, FileSummary& out);
// LL102's: methods that keep a value on their object, and the methods of imported classes this
// file calls in loops.
void summarize_LL102(const Facts& f, FileSummary& out);

// Code nothing calls (docs/impact.md): the names the file reads and the functions holding its
// visible findings (FileSummary::referenced, ::holding).
void summarize_references(const Facts& f, const std::vector<Finding>& out, FileSummary& s);
// For a run over whole directories: the findings of a function whose name no file of the run
// reads are weak, since nothing runs it as written.
// `unpackaged[i]`: file i is a module of a package that nothing in the tree installs (no
// setup.py, pyproject.toml or setup.cfg at or above its top package directory, within the
// run's roots), so only the tree's own code calls it; empty when not known.
void weaken_uncalled(std::vector<FileResult>& results, const std::vector<FileSummary>& summaries,
                     const std::vector<bool>& unpackaged = {});
// For a run over whole directories: the memory claims of a module of definitions that only
// CPU-only programs import (cpu_only_importers) are weak. Only a module no installed package
// exposes: a loose module (no `__init__.py` or setup.py beside it in the run) or an
// `unpackaged` one.
void weaken_cpu_only_importers(std::vector<FileResult>& results, const std::vector<FileSummary>& summaries,
                               const std::vector<bool>& unpackaged);
// The same for one file, with the decision made (`uncalled`): the fix loop's re-lints keep the
// run's decision (FileResult::uncalled) on the edited text.
// How FileResult::uncalled names a holding function.
std::string uncalled_key(const FileSummary::Holding& h);
void weaken_uncalled_in(FileResult& r, const FileSummary& s,
                        const std::function<bool(const FileSummary::Holding&)>& uncalled);

// Runs every enabled check over a lowered module; findings unsorted.
std::vector<Finding> run_checks(const Module& m, const Config& cfg, const std::string& path,
                                std::string_view source, const ProjectView* project = nullptr,
                                FileSummary* summary = nullptr);

}  // namespace ll
