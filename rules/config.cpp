// Configuration: parsing (toml++), discovery of the nearest config file, rule selection.
#include "rules/config.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string_view>
#include <system_error>
#include <utility>

#include "rules/glob.hpp"
#include "rules/registry.hpp"

namespace ll {

namespace fs = std::filesystem;

bool rule_matches(const std::string& rule, const std::string& selector) {
  if (selector == "ALL") return true;
  return !selector.empty() && rule.compare(0, selector.size(), selector) == 0;
}

bool is_valid_selector(const std::string& selector) {
  if (selector == "ALL") return true;
  if (selector.size() < 2) return false;
  return std::any_of(all_rules().begin(), all_rules().end(), [&](const RuleInfo& r) {
    return rule_matches(std::string(r.id), selector);
  });
}

namespace {

// How specific a selector is: "ALL" least, then longer prefixes more. "LL" (the default
// `select`) names every rule too, so it is exactly as specific as "ALL": `ignore = ["ALL"]`
// turns the default selection off, while `select = ["LL1"]` still beats it.
int specificity(const std::string& selector) {
  return selector == "ALL" || selector == "LL" ? 0 : static_cast<int>(selector.size());
}

// The specificity of the most specific selector in `list` matching `rule`, -1 if none.
int best_match(const std::string& rule, const std::vector<std::string>& list) {
  int best = -1;
  for (const std::string& s : list) {
    if (rule_matches(rule, s)) best = std::max(best, specificity(s));
  }
  return best;
}

std::string generic(const fs::path& p) { return p.generic_string(); }

// `path` made absolute (against the current directory) and lexically normalised.
fs::path absolute_normal(const std::string& path) {
  std::error_code ec;
  fs::path abs = fs::absolute(fs::path(path), ec);
  if (ec) abs = fs::path(path);
  return abs.lexically_normal();
}

// Does a per-file-ignores glob apply to `path`? Globs are relative to `root`; a glob
// without `/` also matches the file name at any depth; a glob naming a directory applies
// to everything below it.
bool per_file_glob_matches(const std::string& pattern, const std::string& root,
                           const std::string& path) {
  std::string pat = pattern;
  while (pat.size() > 2 && pat.compare(0, 2, "./") == 0) pat.erase(0, 2);
  while (pat.size() > 1 && pat.back() == '/') pat.pop_back();
  const fs::path abs = absolute_normal(path);
  std::string rel;
  if (!root.empty()) {
    const fs::path r = abs.lexically_relative(fs::path(root).lexically_normal());
    rel = generic(r);
    if (rel.empty() || rel == "." || rel.compare(0, 2, "..") == 0) rel.clear();
  } else {
    rel = generic(fs::path(path).lexically_normal());
  }
  const Glob glob(pat);
  if (pat.find('/') == std::string::npos && glob.match(generic(abs.filename()))) return true;
  if (rel.empty()) return false;
  if (glob.match(rel)) return true;
  // Directories above the file: "tests" or "tests/" covers tests/unit/x.py.
  for (std::size_t slash = rel.find('/'); slash != std::string::npos;
       slash = rel.find('/', slash + 1)) {
    const std::string_view dir(rel.data(), slash);
    if (glob.match(dir)) return true;
    if (pat.find('/') == std::string::npos) {
      const std::size_t prev = dir.rfind('/');
      const std::string_view name = prev == std::string_view::npos ? dir : dir.substr(prev + 1);
      if (glob.match(name)) return true;
    }
  }
  return false;
}

const char* type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date:
    case toml::node_type::time:
    case toml::node_type::date_time: return "a date/time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

std::string quote(std::string_view key) { return "`" + std::string(key) + "`"; }

std::optional<std::string> read_string_list(const toml::node& n, std::string_view key,
                                            std::vector<std::string>& out) {
  const toml::array* arr = n.as_array();
  if (arr == nullptr) {
    return quote(key) + " must be an array of strings, got " + type_name(n);
  }
  std::vector<std::string> values;
  for (const toml::node& item : *arr) {
    const toml::value<std::string>* s = item.as_string();
    if (s == nullptr) {
      return quote(key) + " must be an array of strings, but has " + type_name(item);
    }
    values.push_back(s->get());
  }
  out = std::move(values);
  return std::nullopt;
}

std::optional<std::string> read_selectors(const toml::node& n, std::string_view key,
                                          std::vector<std::string>& out) {
  std::vector<std::string> values;
  if (auto err = read_string_list(n, key, values)) return err;
  for (const std::string& v : values) {
    if (!is_valid_selector(v)) {
      return "unknown rule selector " + quote(v) + " in " + quote(key) +
             " (expected a rule ID such as LL101, a prefix such as LL1, or ALL)";
    }
  }
  out = std::move(values);
  return std::nullopt;
}

std::optional<std::string> read_count(const toml::node& n, std::string_view key, int& out) {
  const toml::value<int64_t>* v = n.as_integer();
  if (v == nullptr) return quote(key) + " must be an integer, got " + type_name(n);
  const int64_t x = v->get();
  if (x < 0 || x > std::numeric_limits<int>::max()) {
    return quote(key) + " must be a non-negative integer, got " + std::to_string(x);
  }
  out = static_cast<int>(x);
  return std::nullopt;
}

std::optional<Severity> parse_severity(std::string_view s) {
  if (s == "error") return Severity::Error;
  if (s == "warning") return Severity::Warning;
  if (s == "note") return Severity::Note;
  return std::nullopt;
}

std::optional<std::string> read_severity_entry(std::string_view rule, const toml::node& n,
                                               Config& cfg) {
  const std::string key = "severity." + std::string(rule);
  if (!is_valid_selector(std::string(rule))) {
    return "unknown rule " + quote(rule) + " in `severity`";
  }
  const toml::value<std::string>* s = n.as_string();
  if (s == nullptr) {
    return quote(key) + R"( must be "error", "warning" or "note", got )" + type_name(n);
  }
  const std::optional<Severity> sev = parse_severity(s->get());
  if (!sev) {
    return quote(key) + R"( must be "error", "warning" or "note", got ")" + s->get() + "\"";
  }
  cfg.severity[std::string(rule)] = *sev;
  return std::nullopt;
}

std::optional<std::string> read_torch_version(const toml::node& n, Config& cfg) {
  if (const toml::value<int64_t>* i = n.as_integer()) {
    if (i->get() < 0 || i->get() > 1000) return std::string("`torch-version` is out of range");
    cfg.torch_major = static_cast<int>(i->get());
    cfg.torch_minor = 0;
    return std::nullopt;
  }
  const toml::value<std::string>* s = n.as_string();
  if (s == nullptr) {
    return std::string("`torch-version` must be a string such as \"2.1\", got ") + type_name(n);
  }
  const std::string& text = s->get();
  const auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  // major[.minor][suffix], where a suffix starts with '.', '+' or a letter ("2.1.0+cu121").
  std::size_t i = 0;
  const auto number = [&](int& out) {
    const std::size_t start = i;
    out = 0;
    while (i < text.size() && is_digit(text[i]) && i - start < 6) out = out * 10 + (text[i++] - '0');
    return i > start && (i == text.size() || !is_digit(text[i]));
  };
  int parts[2] = {0, 0};
  bool ok = number(parts[0]);
  if (ok && i < text.size()) {
    ok = text[i] == '.';
    ++i;
    ok = ok && number(parts[1]);
    if (ok && i < text.size()) {
      const char c = text[i];
      ok = (c == '.' || c == '+' || std::isalpha(static_cast<unsigned char>(c)) != 0) &&
           i + 1 < text.size();
    }
  }
  if (!ok) {
    return R"(`torch-version` must look like "2.1" or "1.13", got ")" + text + "\"";
  }
  cfg.torch_major = parts[0];
  cfg.torch_minor = parts[1];
  return std::nullopt;
}

constexpr std::string_view kKnownKeys[] = {
    "select",          "ignore",
    "extend-select",   "per-file-ignores",
    "severity",        "max-workers",
    "max-inflight-batches", "assume-dataloader-workers",
    "eval-function-names", "eval-loader-names",
    "model-names",     "torch-version",
    "show-low-confidence",
};

// Levenshtein distance, capped: enough to suggest a key for a typo.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string unknown_key_message(std::string_view key, bool is_pyproject) {
  std::string msg = "unknown key " + quote(key);
  msg += is_pyproject ? " in [tool.leaklint]" : "";
  if (key.size() > 64) return msg;
  std::string dashed(key);
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  // The closest known key within a third of its length (at least 1, at most 3 edits).
  std::string_view best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const std::string_view k : kKnownKeys) {
    const size_t d = edit_distance(dashed, k);
    if (d < best_d) best_d = d, best = k;
  }
  const size_t allowed = std::clamp<size_t>(best.size() / 3, 1, 3);
  if (!best.empty() && best_d <= allowed && best != key) msg += " (did you mean " + quote(best) + "?)";
  return msg;
}

std::optional<std::string> apply_table(const toml::table& t, bool is_pyproject, Config& cfg) {
  std::vector<std::string> extend_select;
  for (const auto& [k, node] : t) {
    const std::string_view key = k.str();
    std::optional<std::string> err;
    if (key == "select") {
      err = read_selectors(node, key, cfg.select);
    } else if (key == "ignore") {
      err = read_selectors(node, key, cfg.ignore);
    } else if (key == "extend-select") {
      err = read_selectors(node, key, extend_select);
    } else if (key == "per-file-ignores") {
      const toml::table* pfi = node.as_table();
      if (pfi == nullptr) {
        err = "`per-file-ignores` must be a table of glob = [rule codes], got " +
              std::string(type_name(node));
      } else {
        std::vector<std::pair<std::string, std::vector<std::string>>> entries;
        for (const auto& [glob, codes] : *pfi) {
          std::vector<std::string> list;
          err = read_selectors(codes, "per-file-ignores." + std::string(glob.str()), list);
          if (err) break;
          entries.emplace_back(std::string(glob.str()), std::move(list));
        }
        if (!err) cfg.per_file_ignores = std::move(entries);
      }
    } else if (key == "severity") {
      const toml::table* sev = node.as_table();
      if (sev == nullptr) {
        err = R"(`severity` must be a table of rule = "error"|"warning"|"note", got )" +
              std::string(type_name(node));
      } else {
        for (const auto& [rule, level] : *sev) {
          err = read_severity_entry(rule.str(), level, cfg);
          if (err) break;
        }
      }
    } else if (key.rfind("severity.", 0) == 0) {  // a quoted "severity.LL101" key
      err = read_severity_entry(key.substr(9), node, cfg);
    } else if (key == "max-workers") {
      err = read_count(node, key, cfg.max_workers);
    } else if (key == "max-inflight-batches") {
      err = read_count(node, key, cfg.max_inflight_batches);
    } else if (key == "show-low-confidence") {
      if (const toml::value<bool>* b = node.as_boolean()) {
        cfg.show_low_confidence = b->get();
      } else {
        err = "`show-low-confidence` must be a boolean, got " + std::string(type_name(node));
      }
    } else if (key == "assume-dataloader-workers") {
      if (const toml::value<bool>* b = node.as_boolean()) {
        cfg.assume_dataloader_workers = b->get();
      } else {
        err = "`assume-dataloader-workers` must be a boolean, got " + std::string(type_name(node));
      }
    } else if (key == "eval-function-names") {
      err = read_string_list(node, key, cfg.eval_function_names);
    } else if (key == "eval-loader-names") {
      err = read_string_list(node, key, cfg.eval_loader_names);
    } else if (key == "model-names") {
      err = read_string_list(node, key, cfg.model_names);
    } else if (key == "torch-version") {
      err = read_torch_version(node, cfg);
    } else {
      err = unknown_key_message(key, is_pyproject);
    }
    if (err) return err;
  }
  for (std::string& s : extend_select) {
    if (std::find(cfg.select.begin(), cfg.select.end(), s) == cfg.select.end()) {
      cfg.select.push_back(std::move(s));
    }
  }
  return std::nullopt;
}

// Parses `text`; `found` (optional) says whether a leaklint table was present.
std::optional<std::string> parse_config_impl(const std::string& text, bool is_pyproject,
                                             Config& cfg, bool* found) {
  if (found != nullptr) *found = false;
  toml::table doc;
  try {
    doc = toml::parse(text);
  } catch (const toml::parse_error& e) {
    std::ostringstream msg;
    msg << "TOML parse error at line " << e.source().begin.line << ", column "
        << e.source().begin.column << ": " << e.description();
    return msg.str();
  } catch (const std::exception& e) {  // e.g. std::bad_alloc
    return std::string("cannot parse TOML: ") + e.what();
  }
  const toml::table* t = &doc;
  if (is_pyproject) {
    const toml::node_view<const toml::node> tool = std::as_const(doc)["tool"]["leaklint"];
    if (!tool) return std::nullopt;
    t = tool.as_table();
    if (t == nullptr) {
      return std::string("[tool.leaklint] must be a table, got ") + type_name(*tool.node());
    }
  }
  if (found != nullptr) *found = true;
  Config parsed = cfg;
  if (auto err = apply_table(*t, is_pyproject, parsed)) return err;
  cfg = std::move(parsed);
  return std::nullopt;
}

std::optional<std::string> read_file(const fs::path& p, std::string& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return "cannot read " + p.string();
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return "cannot read " + p.string();
  out = ss.str();
  return std::nullopt;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

bool Config::enabled(const std::string& rule, const std::string& path) const {
  const int sel = best_match(rule, select);
  if (sel < 0) return false;
  const int ign = best_match(rule, ignore);
  if (ign >= sel) return false;  // equally specific: ignore wins
  for (const auto& [glob, codes] : per_file_ignores) {
    const bool listed = std::any_of(codes.begin(), codes.end(),
                                    [&](const std::string& c) { return rule_matches(rule, c); });
    if (listed && per_file_glob_matches(glob, root, path)) return false;
  }
  return true;
}

Severity Config::severity_of(const std::string& rule, Severity dflt) const {
  int best = -1;
  Severity result = dflt;
  for (const auto& [selector, sev] : severity) {
    if (rule_matches(rule, selector) && specificity(selector) > best) {
      best = specificity(selector);
      result = sev;
    }
  }
  return result;
}

std::optional<std::string> parse_config(const std::string& toml_text, bool is_pyproject,
                                        Config& cfg) {
  return parse_config_impl(toml_text, is_pyproject, cfg, nullptr);
}

ConfigResolver::ConfigResolver(std::string explicit_file, std::vector<std::string> select,
                               std::vector<std::string> ignore, bool show_low_confidence)
    : explicit_file_(std::move(explicit_file)),
      cli_select_(std::move(select)),
      cli_ignore_(std::move(ignore)),
      cli_show_low_confidence_(show_low_confidence) {
  for (const auto* list : {&cli_select_, &cli_ignore_}) {
    for (const std::string& s : *list) {
      if (!is_valid_selector(s)) {
        explicit_error_ = "unknown rule selector " + quote(s) + " in " +
                          (list == &cli_select_ ? "--select" : "--ignore") +
                          " (expected a rule ID such as LL101, a prefix such as LL1, or ALL)";
        return;
      }
    }
  }
  if (explicit_file_.empty()) return;
  Config cfg;
  const fs::path file = absolute_normal(explicit_file_);
  cfg.source = explicit_file_;
  cfg.root = generic(file.parent_path());
  std::string text;
  if (auto err = read_file(file, text)) {
    explicit_error_ = *err;
    return;
  }
  if (auto err = parse_config(text, file.filename() == "pyproject.toml", cfg)) {
    explicit_error_ = explicit_file_ + ": " + *err;
    return;
  }
  apply_overrides(cfg);
  explicit_cfg_ = std::make_shared<const Config>(std::move(cfg));
}

void ConfigResolver::apply_overrides(Config& c) const {
  if (!cli_select_.empty()) c.select = cli_select_;
  if (cli_show_low_confidence_) c.show_low_confidence = true;
  c.ignore.insert(c.ignore.end(), cli_ignore_.begin(), cli_ignore_.end());
}

std::shared_ptr<const Config> ConfigResolver::for_file(const std::string& path,
                                                       std::string* error) {
  if (explicit_cfg_) return explicit_cfg_;
  if (explicit_error_) {
    if (error != nullptr) *error = *explicit_error_;
    Config dflt;
    apply_overrides(dflt);
    return std::make_shared<const Config>(std::move(dflt));
  }
  const fs::path abs = absolute_normal(path);
  return for_dir(generic(abs.parent_path()), error);
}

std::shared_ptr<const Config> ConfigResolver::for_dir(const std::string& dir,
                                                      std::string* error) {
  const std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> visited;
  std::pair<std::shared_ptr<const Config>, std::string> found;
  fs::path d(dir);
  while (true) {
    const std::string key = generic(d);
    if (auto it = cache_.find(key); it != cache_.end()) {
      found = it->second;
      break;
    }
    visited.push_back(key);
    Config cfg;
    cfg.root = key;
    std::string text;
    std::optional<std::string> err;
    bool have = false;
    const fs::path own = d / ".leaklint.toml";
    const fs::path pyproject = d / "pyproject.toml";
    if (is_file(own)) {
      have = true;
      cfg.source = generic(own);
      err = read_file(own, text);
      if (!err) err = parse_config_impl(text, false, cfg, nullptr);
    } else if (is_file(pyproject) && !read_file(pyproject, text)) {
      cfg.source = generic(pyproject);
      err = parse_config_impl(text, true, cfg, &have);
      // A pyproject.toml that does not parse is ours only if it mentions leaklint.
      if (err && !have) have = text.find("leaklint") != std::string::npos;
    }
    if (have) {
      apply_overrides(cfg);
      found.first = std::make_shared<const Config>(std::move(cfg));
      if (err) found.second = found.first->source + ": " + *err;
      break;
    }
    const fs::path parent = d.parent_path();
    if (parent.empty() || parent == d) {
      Config dflt;
      apply_overrides(dflt);
      found.first = std::make_shared<const Config>(std::move(dflt));
      break;
    }
    d = parent;
  }
  for (const std::string& v : visited) cache_[v] = found;
  if (!found.second.empty() && error != nullptr) *error = found.second;
  return found.first;
}

}  // namespace ll
