// Configuration: `[tool.leaklint]` in pyproject.toml or `.leaklint.toml` (nearest parent
// directory of each file wins), then command-line --select/--ignore on top.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "rules/finding.hpp"

namespace ll {

struct Config {
  std::string source;                       // file it came from ("" = defaults)
  std::string root;                         // directory of that file (per-file-ignores are relative to it)
  std::vector<std::string> select{"LL"};    // IDs or prefixes
  std::vector<std::string> ignore;
  std::vector<std::pair<std::string, std::vector<std::string>>> per_file_ignores;  // glob -> codes
  std::map<std::string, Severity> severity;
  int max_workers = 8;
  int max_inflight_batches = 32;
  bool assume_dataloader_workers = false;
  std::vector<std::string> eval_function_names;
  std::vector<std::string> eval_loader_names;
  std::vector<std::string> model_names;
  int torch_major = 2, torch_minor = 0;
  // Report low-confidence findings (docs/impact.md) instead of counting them as hidden.
  bool show_low_confidence = false;

  // Is `rule` enabled for the file at `path` (absolute or relative to cwd)?
  bool enabled(const std::string& rule, const std::string& path) const;
  Severity severity_of(const std::string& rule, Severity dflt) const;
};

// Parses TOML text holding the leaklint table (the `[tool.leaklint]` table of a pyproject,
// or the top level of .leaklint.toml when `is_pyproject` is false). Returns an error
// message on invalid input.
std::optional<std::string> parse_config(const std::string& toml_text, bool is_pyproject,
                                        Config& cfg);

// Finds and caches the configuration that applies to each directory.
class ConfigResolver {
 public:
  // `explicit_file`: --config FILE (used for every file); `overrides` applied on top.
  // `show_low_confidence`: --show-low-confidence, which turns the key on for every file.
  ConfigResolver(std::string explicit_file, std::vector<std::string> select,
                 std::vector<std::string> ignore, bool show_low_confidence = false);
  // Returns the config for a file; on a config error fills `error` (and returns defaults).
  std::shared_ptr<const Config> for_file(const std::string& path, std::string* error);
  std::optional<std::string> load_error() const { return explicit_error_; }

 private:
  std::shared_ptr<const Config> for_dir(const std::string& dir, std::string* error);
  void apply_overrides(Config& c) const;
  std::string explicit_file_;
  std::vector<std::string> cli_select_, cli_ignore_;
  bool cli_show_low_confidence_ = false;
  std::optional<std::string> explicit_error_;
  std::shared_ptr<const Config> explicit_cfg_;
  std::mutex mu_;
  std::map<std::string, std::pair<std::shared_ptr<const Config>, std::string>> cache_;
};

bool rule_matches(const std::string& rule, const std::string& selector);  // "LL4" matches LL401
// "ALL", or a rule ID or prefix of one ("LL", "LL4", "LL401"); what select/ignore accept.
bool is_valid_selector(const std::string& selector);

}  // namespace ll
