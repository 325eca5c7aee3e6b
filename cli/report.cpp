// Reporters: text (clang style), JSON, SARIF 2.1.0 and GitHub workflow annotations.
#include "cli/report.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/notebook.hpp"
#include "rules/registry.hpp"

namespace ll {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr std::string_view kSarifSchema =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
constexpr std::string_view kInformationUri = "https://github.com/leaklint/leaklint";
constexpr std::string_view kFingerprintKey = "leaklint/v1";

std::string version_of(const ReportOptions& opts) {
  if (!opts.version.empty()) return opts.version;
#ifdef LEAKLINT_VERSION
  return LEAKLINT_VERSION;
#else
  return "0.0.0";
#endif
}

std::string plural(std::size_t n, std::string_view word) {
  std::string s = std::to_string(n) + " " + std::string(word);
  if (n != 1) s += 's';
  return s;
}

// ---- UTF-8 helpers ---------------------------------------------------------------------

// Length of the UTF-8 sequence starting with `lead` (1 for ASCII and invalid bytes).
std::size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0U) == 0xC0U) return 2;
  if ((lead & 0xF0U) == 0xE0U) return 3;
  if ((lead & 0xF8U) == 0xF0U) return 4;
  return 1;
}

// Decodes the code point at s[i] (U+FFFD when malformed) and its length in bytes.
std::pair<uint32_t, std::size_t> decode_utf8(std::string_view s, std::size_t i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  const std::size_t len = utf8_length(lead);
  if (len == 1) return {lead < 0x80 ? lead : 0xFFFDU, 1};
  if (i + len > s.size()) return {0xFFFDU, 1};
  uint32_t cp = lead & (0x7FU >> len);
  for (std::size_t k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xC0U) != 0x80U) return {0xFFFDU, 1};
    cp = (cp << 6U) | (c & 0x3FU);
  }
  return {cp, len};
}

// Terminal columns of a code point: 2 for East Asian wide and emoji ranges, else 1.
int display_width(uint32_t cp) {
  static constexpr std::pair<uint32_t, uint32_t> kWide[] = {
      {0x1100, 0x115F},   {0x2E80, 0x303E},   {0x3041, 0x33FF},   {0x3400, 0x4DBF},
      {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},
      {0xFE30, 0xFE4F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x1F300, 0x1F64F},
      {0x1F900, 0x1F9FF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
  };
  for (const auto& [lo, hi] : kWide) {
    if (cp >= lo && cp <= hi) return 2;
  }
  return 1;
}

// A source file split into lines, for snippets and for converting positions.
class SourceIndex {
 public:
  // The line starts are found on first use: most files of a run have nothing to report.
  explicit SourceIndex(std::string_view src) : src_(src) {}

  bool available() const { return !src_.empty(); }
  std::string_view source() const { return src_; }

  bool has_line(uint32_t line) const { return line >= 1 && line <= starts().size(); }

  // The text of a 1-based line without its line terminator.
  std::string_view line_text(uint32_t line) const {
    if (!has_line(line)) return {};
    const std::size_t begin = starts()[line - 1];
    std::size_t end = line < starts().size() ? starts()[line] - 1 : src_.size();
    if (end > begin && src_[end - 1] == '\r') --end;
    return src_.substr(begin, end - begin);
  }

  // 1-based line and byte column of a byte offset.
  std::pair<uint32_t, uint32_t> position(uint32_t offset) const {
    if (starts().empty()) return {0, 0};
    const std::size_t off = std::min<std::size_t>(offset, src_.size());
    const auto it = std::upper_bound(starts().begin(), starts().end(), off);
    const auto line = static_cast<std::size_t>(it - starts().begin());  // >= 1
    return {static_cast<uint32_t>(line), static_cast<uint32_t>(off - starts()[line - 1] + 1)};
  }

  // The byte offset of a 1-based line/byte column, clamped to the source.
  std::size_t offset(uint32_t line, uint32_t byte_col) const {
    if (!has_line(line)) return src_.size();
    return std::min<std::size_t>(starts()[line - 1] + (byte_col > 0 ? byte_col - 1 : 0), src_.size());
  }

  // Converts a 1-based byte column to a 1-based UTF-16 column on `line`.
  uint32_t utf16_column(uint32_t line, uint32_t byte_col) const {
    if (byte_col <= 1 || !has_line(line)) return std::max<uint32_t>(byte_col, 1);
    const std::string_view text = line_text(line);
    const std::size_t want = byte_col - 1;
    std::size_t i = 0;
    uint32_t units = 0;
    while (i < want && i < text.size()) {
      const auto [cp, len] = decode_utf8(text, i);
      units += cp >= 0x10000 ? 2 : 1;
      i += len;
    }
    if (want > i) units += static_cast<uint32_t>(want - i);  // past the end of the line
    return units + 1;
  }

 private:
  std::string_view src_;
  const std::vector<std::size_t>& starts() const {
    if (!indexed_ && !src_.empty()) {
      indexed_ = true;
      starts_.push_back(0);
      for (std::size_t i = 0; i < src_.size(); ++i) {
        // `\n`, `\r\n`, or a lone `\r` (old Mac files; the Python frontend reads it so).
        if (src_[i] == '\n' || (src_[i] == '\r' && (i + 1 == src_.size() || src_[i + 1] != '\n')))
          starts_.push_back(i + 1);
      }
    }
    return starts_;
  }

  mutable bool indexed_ = false;
  mutable std::vector<std::size_t> starts_;
};

// ---- shared facts ----------------------------------------------------------------------

struct Counts {
  std::size_t findings = 0, errors = 0, warnings = 0, notes = 0, suppressed = 0;
  std::size_t files_with_findings = 0, files_not_analysed = 0;
  std::size_t files_partly_analysed = 0;  // syntax errors, too-deep code: the rest was analysed
  std::size_t run_errors = 0;
  std::size_t hidden_low_confidence = 0;
};

Counts count(const std::vector<FileResult>& results) {
  Counts c;
  for (const FileResult& r : results) {
    bool any = false;
    c.hidden_low_confidence += static_cast<std::size_t>(std::max(0, r.hidden_low_confidence));
    for (const Finding& f : r.findings) {
      if (f.suppressed) {
        ++c.suppressed;
        continue;
      }
      any = true;
      ++c.findings;
      switch (f.severity) {
        case Severity::Error: ++c.errors; break;
        case Severity::Warning: ++c.warnings; break;
        case Severity::Note: ++c.notes; break;
      }
    }
    if (any) ++c.files_with_findings;
    if (std::any_of(r.diagnostics.begin(), r.diagnostics.end(),
                    [](const Diagnostic& d) { return d.fatal; })) {
      ++c.files_not_analysed;
    } else if (std::any_of(r.diagnostics.begin(), r.diagnostics.end(), diagnostic_fails_run)) {
      ++c.files_partly_analysed;
    }
  }
  return c;
}

Counts count(const std::vector<FileResult>& results, const ReportOptions& opts) {
  Counts c = count(results);
  c.run_errors = opts.run_errors.size();
  return c;
}

// "error" for diagnostics that lose analysis (fatal, syntax errors, internal failures),
// "warning" for the rest.
const char* diagnostic_level(const Diagnostic& d) {
  return d.fatal || d.kind == "syntax-error" || d.kind == "internal" ? "error" : "warning";
}

std::string diagnostic_message(const Diagnostic& d) {
  std::string msg = d.message;
  if (d.fatal && msg.find("not analysed") == std::string::npos)
    msg += msg.empty() ? "file not analysed" : " (file not analysed)";
  return msg;
}

std::string_view slug_of(const std::string& rule) {
  const RuleInfo* info = find_rule(rule);
  return info != nullptr ? info->slug : std::string_view();
}

std::string fix_hint(const Fix& fix) {
  return "fix available: " + fix.title +
         (fix.safe ? " (run with --fix)" : " (run with --fix --unsafe-fixes)");
}

std::string summary_line(const Counts& c, int fixed) {
  std::string line;
  if (c.findings > 0) {
    std::vector<std::string> parts;
    if (c.errors > 0) parts.push_back(plural(c.errors, "error"));
    if (c.warnings > 0) parts.push_back(plural(c.warnings, "warning"));
    if (c.notes > 0) parts.push_back(plural(c.notes, "note"));
    line = "Found " + plural(c.findings, "finding") + " (";
    for (std::size_t i = 0; i < parts.size(); ++i) line += (i > 0 ? ", " : "") + parts[i];
    line += ") in " + plural(c.files_with_findings, "file");
  } else if (c.files_not_analysed > 0 || c.files_partly_analysed > 0 || c.run_errors > 0 ||
             c.hidden_low_confidence > 0) {
    line = "No findings";  // never "All checks passed!" on a run that fails or hides findings
  } else {
    line = "All checks passed!";
    if (fixed > 0) line += " (" + std::to_string(fixed) + " fixed)";
    return line;
  }
  if (fixed > 0) line += "; " + std::to_string(fixed) + " fixed";
  if (c.hidden_low_confidence > 0)
    line += "; " + plural(c.hidden_low_confidence, "low-confidence finding") +
            " hidden (--show-low-confidence shows them)";
  if (c.run_errors > 0) line += "; the configuration is invalid";
  if (c.files_not_analysed > 0) {
    line += "; " + plural(c.files_not_analysed, "file") + " could not be analysed";
  }
  if (c.files_partly_analysed > 0) {
    line += "; " + plural(c.files_partly_analysed, "file") + " only partly analysed (syntax errors)";
  }
  return line + ".";
}

// ---- text ------------------------------------------------------------------------------

struct Style {
  bool on = false;
  std::string operator()(std::string_view code, std::string_view text) const {
    if (!on) return std::string(text);
    return "\x1b[" + std::string(code) + "m" + std::string(text) + "\x1b[0m";
  }
};

const char* severity_color(std::string_view level) {
  if (level == "error") return "1;31";
  if (level == "warning") return "1;35";
  return "1;36";
}

std::string location_prefix(const std::string& path, uint32_t line, uint32_t col) {
  std::string s = escape_path(path);
  if (line > 0) {
    s += ':' + std::to_string(line);
    if (col > 0) s += ':' + std::to_string(col);
  }
  return s + ':';
}

// The source line and a caret line under [col, end_col) (to the end of the line when the
// range continues on later lines). Tabs are kept so the caret stays aligned.
void write_snippet(std::ostream& out, const SourceIndex& src, const Range& r, const Style& style) {
  if (!src.has_line(r.line)) return;
  const std::string_view text = src.line_text(r.line);
  const std::size_t start = r.col > 0 ? r.col - 1 : 0;
  std::size_t stop = start;  // a zero-width or unknown end: a lone caret
  if (r.end_line > r.line) {
    stop = text.size();
  } else if (r.end_line == r.line && r.end_col > r.col) {
    stop = std::min<std::size_t>(r.end_col - 1, text.size());
  }
  std::string pad;
  std::size_t marks = 0;
  std::size_t i = 0;
  while (i < text.size() && i < std::max(start, stop)) {
    const auto [cp, len] = decode_utf8(text, i);
    const int width = text[i] == '\t' ? 1 : display_width(cp);
    if (i < start) {
      pad.append(static_cast<std::size_t>(width), text[i] == '\t' ? '\t' : ' ');
    } else {
      marks += static_cast<std::size_t>(width);
    }
    i += len;
  }
  if (start > text.size()) pad.append(start - text.size(), ' ');
  std::string caret = "^";
  if (marks > 1) caret.append(marks - 1, '~');
  out << text << '\n' << pad << style("1;32", caret) << '\n';
}

void write_text(std::ostream& out, const std::vector<FileResult>& results, const ReportOptions& opts) {
  const Style style{opts.color};
  for (const FileResult& r : results) {
    const SourceIndex src(r.source);
    // Notebooks: positions and source lines are the cells' (`nb.ipynb:cell 4:3:5:` is cell,
    // line and column within the cell), never the .ipynb file's JSON.
    std::optional<Notebook> nb;
    if (is_notebook_path(r.path) && !r.source.empty()) {
      std::string err;
      nb = load_notebook(r.source, &err);
    }
    const SourceIndex cells(nb ? std::string_view(nb->python) : std::string_view());
    // The location prefix and the snippet of a range of the .ipynb text.
    auto where_and_snippet = [&](const std::string& path, const Range& g, bool snippet) {
      std::optional<NotebookPosition> a, b;
      if (nb && g.line > 0) a = notebook_position(*nb, g.line, g.col);
      if (!a) {
        out << style("1", location_prefix(path, g.line, g.col));
        return std::function<void()>([&, g, snippet] {
          if (snippet && opts.show_source && g.line > 0) write_snippet(out, src, g, style);
        });
      }
      if (g.end_line > 0) b = notebook_position(*nb, g.end_line, g.end_col);
      out << style("1", location_prefix(path + ":cell " + std::to_string(a->cell), a->line, a->col));
      Range v;
      v.line = v.end_line = a->virtual_line;
      v.col = v.end_col = a->col;
      if (b && b->virtual_line >= a->virtual_line) {
        v.end_line = b->virtual_line;
        v.end_col = b->virtual_line == a->virtual_line ? std::max(b->col, a->col) : b->col;
      }
      return std::function<void()>([&, v, snippet] {
        if (snippet && opts.show_source) write_snippet(out, cells, v, style);
      });
    };
    for (const Diagnostic& d : r.diagnostics) {
      const std::string level = diagnostic_level(d);
      Range at;
      at.line = at.end_line = d.line;
      at.col = at.end_col = std::max<uint32_t>(d.col, 1);
      auto snippet = where_and_snippet(d.path.empty() ? r.path : d.path, at, true);
      out << ' ' << style(severity_color(level), level + ":") << ' '
          << style("1", escape_path(diagnostic_message(d)) + " [" + d.kind + "]") << '\n';
      snippet();
    }
    for (const Finding& f : r.findings) {
      if (f.suppressed) continue;
      const std::string level = severity_name(f.severity);
      const std::string& path = f.path.empty() ? r.path : f.path;
      auto snippet = where_and_snippet(path, f.range, true);
      out << ' ' << style(severity_color(level), level + ":") << ' '
          << style("1", f.message + " [" + f.rule + "]") << '\n';
      snippet();
      for (const Note& n : f.notes) {
        where_and_snippet(path, n.range, false);
        out << ' ' << style(severity_color("note"), "note:") << ' ' << n.message << '\n';
      }
      for (const Fix& fix : f.fixes) out << "  " << style("36", fix_hint(fix)) << '\n';
    }
  }
  if (!opts.quiet) out << style("1", summary_line(count(results, opts), opts.fixed_count)) << '\n';
}

// ---- JSON ------------------------------------------------------------------------------

Json json_edit(const Edit& e, const SourceIndex& src) {
  Json j;
  j["begin"] = e.begin;
  j["end"] = e.end;
  uint32_t line = 0;
  uint32_t col = 0;
  uint32_t end_line = 0;
  uint32_t end_col = 0;
  if (src.available()) {
    std::tie(line, col) = src.position(e.begin);
    std::tie(end_line, end_col) = src.position(e.end);
  }
  j["line"] = line;
  j["column"] = col;
  j["end_line"] = end_line;
  j["end_column"] = end_col;
  j["text"] = e.text;
  return j;
}

Json json_summary(const Counts& c, std::size_t files, int fixed) {
  Json s;
  s["findings"] = c.findings;
  // Findings per severity; the top-level `errors` are files that could not be (fully)
  // analysed, a different thing, so the counts live under their own name.
  s["by_severity"] = {{"error", c.errors}, {"warning", c.warnings}, {"note", c.notes}};
  s["suppressed"] = c.suppressed;
  s["low_confidence_hidden"] = c.hidden_low_confidence;
  s["files"] = files;
  s["files_with_findings"] = c.files_with_findings;
  s["files_not_analysed"] = c.files_not_analysed;
  s["files_partly_analysed"] = c.files_partly_analysed;
  s["fixed"] = fixed;
  return s;
}

void write_json(std::ostream& out, const std::vector<FileResult>& results, const ReportOptions& opts) {
  Json doc;
  doc["version"] = version_of(opts);
  Json findings = Json::array();
  Json errors = Json::array();
  for (const FileResult& r : results) {
    const SourceIndex src(r.source);
    for (const Diagnostic& d : r.diagnostics) {
      Json e;
      e["path"] = d.path.empty() ? r.path : d.path;
      e["kind"] = d.kind;
      e["message"] = d.message;
      e["line"] = d.line;
      e["column"] = d.col;
      e["fatal"] = d.fatal;
      errors.push_back(std::move(e));
    }
    for (const Finding& f : r.findings) {
      if (f.suppressed) continue;
      Json j;
      j["rule"] = f.rule;
      j["slug"] = slug_of(f.rule);
      j["severity"] = severity_name(f.severity);
      j["path"] = f.path.empty() ? r.path : f.path;
      j["line"] = f.range.line;
      j["column"] = f.range.col;
      j["end_line"] = f.range.end_line;
      j["end_column"] = f.range.end_col;
      j["message"] = f.message;
      j["low_confidence"] = f.low_confidence;
      if (f.cell > 0) j["notebook"] = {{"cell", f.cell}, {"line", f.cell_line}, {"column", f.cell_col}};
      Json notes = Json::array();
      for (const Note& n : f.notes) {
        Json jn;
        jn["line"] = n.range.line;
        jn["column"] = n.range.col;
        jn["message"] = n.message;
        notes.push_back(std::move(jn));
      }
      j["notes"] = std::move(notes);
      Json fixes = Json::array();
      if (opts.show_fixes) {
        for (const Fix& fix : f.fixes) {
          Json jf;
          jf["title"] = fix.title;
          jf["safe"] = fix.safe;
          Json edits = Json::array();
          for (const Edit& e : fix.edits) edits.push_back(json_edit(e, src));
          jf["edits"] = std::move(edits);
          fixes.push_back(std::move(jf));
        }
      }
      j["fixes"] = std::move(fixes);
      findings.push_back(std::move(j));
    }
  }
  doc["findings"] = std::move(findings);
  doc["errors"] = std::move(errors);
  doc["summary"] = json_summary(count(results, opts), results.size(), opts.fixed_count);
  if (!opts.run_errors.empty()) doc["run_errors"] = opts.run_errors;
  out << doc.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
}

// ---- SARIF -----------------------------------------------------------------------------

std::string percent_encode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                            c == '~' || c == '/';
    if (unreserved) {
      out += ch;
    } else {
      out += '%';
      out += kHex[c >> 4U];
      out += kHex[c & 0xFU];
    }
  }
  return out;
}

std::string absolute_normal(const std::string& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(fs::path(p), ec);
  if (ec) abs = fs::path(p);
  std::string s = abs.lexically_normal().generic_string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// Resolves file paths against the SARIF %SRCROOT%.
class UriMapper {
 public:
  explicit UriMapper(const std::string& root) {
    if (root.empty()) {
      std::error_code ec;
      root_ = fs::current_path(ec).lexically_normal().generic_string();
      if (ec) root_ = "/";
    } else {
      root_ = absolute_normal(root);
    }
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  }

  std::string root_uri() const {
    std::string uri = "file://" + percent_encode(root_);
    if (uri.back() != '/') uri += '/';
    return uri;
  }

  // The path relative to the root ("" when outside it).
  std::string relative(const std::string& path) const {
    const std::string abs = absolute_normal(path);
    if (root_ == "/") return abs.size() > 1 ? abs.substr(1) : std::string();
    if (abs.size() > root_.size() && abs.compare(0, root_.size(), root_) == 0 &&
        abs[root_.size()] == '/') {
      return abs.substr(root_.size() + 1);
    }
    return {};
  }

  Json artifact_location(const std::string& path) const {
    Json loc;
    const std::string rel = relative(path);
    if (!rel.empty()) {
      loc["uri"] = percent_encode(rel);
      loc["uriBaseId"] = "%SRCROOT%";
    } else {
      loc["uri"] = "file://" + percent_encode(absolute_normal(path));
    }
    return loc;
  }

 private:
  std::string root_;
};

const char* sarif_level(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "warning";
}

std::string pascal_case(std::string_view slug) {
  std::string out;
  bool upper = true;
  for (const char c : slug) {
    if (c == '-' || c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out;
}

// Rules whose detection rests on syntax alone are "high" precision; those that rely on
// names, conventions or cross-function facts are "medium".
const char* precision_of(std::string_view id) {
  static constexpr std::string_view kHigh[] = {"LL102", "LL104", "LL202", "LL401", "LL502"};
  return std::find(std::begin(kHigh), std::end(kHigh), id) != std::end(kHigh) ? "high" : "medium";
}

const char* category_tag(std::string_view id) {
  if (id.rfind("LL1", 0) == 0) return "autograd";
  if (id.rfind("LL2", 0) == 0) return "gradients";
  if (id.rfind("LL3", 0) == 0) return "cuda-caching-allocator";
  if (id.rfind("LL4", 0) == 0) return "dataloader";
  return "multiprocessing";
}

// Links in a rule page are relative to docs/rules/ in the repository; in SARIF they are
// shown on GitHub's alert page, far from that folder, so they are made absolute.
std::string absolute_links(std::string_view md, const std::string& help_uri) {
  const std::string dir = help_uri.substr(0, help_uri.rfind('/') + 1);  // .../docs/rules/
  std::string out;
  std::size_t i = 0;
  while (i < md.size()) {
    const std::size_t at = md.find("](", i);
    if (at == std::string_view::npos) break;
    const std::size_t end = md.find(')', at + 2);
    if (end == std::string_view::npos) break;
    std::string target(md.substr(at + 2, end - at - 2));
    out.append(md.substr(i, at + 2 - i));
    if (target.find("://") == std::string::npos && !target.empty() && target[0] != '#') {
      std::string base = dir;
      while (target.rfind("../", 0) == 0) {
        target.erase(0, 3);
        base.pop_back();
        base.erase(base.rfind('/') + 1);
      }
      target = base + target;
    }
    out += target;
    out += ')';
    i = end + 1;
  }
  out.append(md.substr(i));
  return out;
}

// Plain text of a rule page for SARIF's help.text: no emphasis, code-span backticks or
// fences, headings without their #, links as "text (url)".
std::string markdown_to_text(std::string_view md) {
  std::string out;
  std::istringstream in{std::string(md)};
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) continue;
    std::size_t h = 0;
    while (h < line.size() && line[h] == '#') ++h;
    if (h > 0 && h < line.size() && line[h] == ' ') line.erase(0, h + 1);
    std::string t;
    for (std::size_t k = 0; k < line.size(); ++k) {
      const char c = line[k];
      if (c == '`') continue;
      if (c == '*' && k + 1 < line.size() && line[k + 1] == '*') { ++k; continue; }
      if (c == '[') {
        const std::size_t close = line.find("](", k);
        const std::size_t end = close == std::string::npos ? std::string::npos : line.find(')', close);
        if (end != std::string::npos) {
          t += line.substr(k + 1, close - k - 1) + " (" + line.substr(close + 2, end - close - 2) + ")";
          k = end;
          continue;
        }
      }
      t += c;
    }
    out += t + '\n';
  }
  return out;
}

Json sarif_rule(const RuleInfo& r) {
  Json j;
  const std::string id(r.id);
  j["id"] = id;
  j["name"] = pascal_case(r.slug);
  j["shortDescription"]["text"] = rule_short_description(r.id);
  j["fullDescription"]["text"] = rule_full_description(r.id);
  const std::string_view doc = rule_doc(r.id);
  const std::string help_uri = rule_help_uri(r.id);
  if (doc.empty()) {
    const std::string text = std::string(r.summary) + ".\n\nSee " + help_uri;
    j["help"]["text"] = text;
    j["help"]["markdown"] = std::string(r.summary) + ".\n\nSee [" + id + "](" + help_uri + ").";
  } else {
    const std::string markdown = absolute_links(doc, help_uri);
    j["help"]["text"] = markdown_to_text(markdown);
    j["help"]["markdown"] = markdown;
  }
  j["helpUri"] = help_uri;
  j["defaultConfiguration"]["level"] = sarif_level(r.severity);
  Json tags = Json::array({"pytorch", "memory", category_tag(r.id)});
  if (r.languages.find("Python") != std::string_view::npos) tags.push_back("python");
  if (r.languages.find("C++") != std::string_view::npos) tags.push_back("c++");
  if (r.severity == Severity::Error) tags.push_back("correctness");
  j["properties"]["tags"] = std::move(tags);
  j["properties"]["precision"] = precision_of(r.id);
  j["properties"]["problem.severity"] =
      r.severity == Severity::Note ? "recommendation" : sarif_level(r.severity);
  return j;
}

Json sarif_region(const Range& r, const SourceIndex& src, bool with_snippet) {
  const uint32_t line = std::max<uint32_t>(r.line, 1);
  const uint32_t col = std::max<uint32_t>(r.col, 1);
  uint32_t end_line = r.end_line == 0 ? line : r.end_line;
  uint32_t end_col = r.end_col == 0 ? col : r.end_col;
  if (end_line < line || (end_line == line && end_col < col)) {
    end_line = line;
    end_col = col;
  }
  Json j;
  j["startLine"] = line;
  j["startColumn"] = src.utf16_column(line, col);
  j["endLine"] = end_line;
  j["endColumn"] = src.utf16_column(end_line, end_col);
  if (with_snippet && src.has_line(line)) {
    const std::size_t begin = src.offset(line, col);
    const std::size_t end = std::max(begin, src.offset(end_line, end_col));
    if (end > begin) j["snippet"]["text"] = std::string(src.source().substr(begin, end - begin));
  }
  return j;
}

Json sarif_location(const Json& artifact, Json region) {
  Json loc;
  loc["physicalLocation"]["artifactLocation"] = artifact;
  loc["physicalLocation"]["region"] = std::move(region);
  return loc;
}

Json sarif_fix(const Fix& fix, const Json& artifact, const SourceIndex& src) {
  std::vector<Edit> edits = fix.edits;
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  Json replacements = Json::array();
  for (const Edit& e : edits) {
    Json deleted;
    const uint32_t end_offset = std::max(e.begin, e.end);
    if (src.available()) {
      const auto [line, col] = src.position(e.begin);
      const auto [end_line, end_col] = src.position(end_offset);
      deleted["startLine"] = line;
      deleted["startColumn"] = src.utf16_column(line, col);
      deleted["endLine"] = end_line;
      deleted["endColumn"] = src.utf16_column(end_line, end_col);
    } else {
      deleted["byteOffset"] = e.begin;
      deleted["byteLength"] = end_offset - e.begin;
    }
    Json rep;
    rep["deletedRegion"] = std::move(deleted);
    rep["insertedContent"]["text"] = e.text;
    replacements.push_back(std::move(rep));
  }
  Json change;
  change["artifactLocation"] = artifact;
  change["replacements"] = std::move(replacements);
  Json j;
  j["description"]["text"] = fix.title;
  j["artifactChanges"] = Json::array({std::move(change)});
  j["properties"]["safe"] = fix.safe;
  return j;
}

// 64-bit FNV-1a.
uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ULL) {
  for (const char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string hex64(uint64_t v) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i) {
    s[static_cast<std::size_t>(i)] = kHex[v & 0xFU];
    v >>= 4U;
  }
  return s;
}

std::string strip_whitespace(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\f' && c != '\v') out += c;
  }
  return out;
}

// Assigns each finding of one file a fingerprint that survives unrelated edits: the rule,
// the file, the flagged line's text without whitespace, and which occurrence of that
// (rule, text) pair in the file it is. Line numbers are deliberately left out.
class Fingerprinter {
 public:
  std::string next(const Finding& f, const std::string& rel_path, const SourceIndex& src) {
    const std::string text = src.has_line(f.range.line)
                                 ? strip_whitespace(src.line_text(f.range.line))
                                 : "message:" + f.message;
    const int occurrence = ++seen_[{f.rule, text}];
    std::string key = f.rule;
    key += '\x1f';
    key += rel_path;
    key += '\x1f';
    key += text;
    key += '\x1f';
    key += std::to_string(occurrence);
    // Two FNV-1a passes with different offsets: 128 bits against accidental collisions.
    return hex64(fnv1a(key)) + hex64(fnv1a(key, 0x6c62272e07bb0142ULL));
  }

 private:
  std::map<std::pair<std::string, std::string>, int> seen_;
};

void write_sarif(std::ostream& out, const std::vector<FileResult>& results, const ReportOptions& opts) {
  const UriMapper uris(opts.root);
  const std::vector<RuleInfo>& rules = all_rules();
  std::map<std::string_view, std::size_t> rule_index;
  Json jrules = Json::array();
  for (std::size_t i = 0; i < rules.size(); ++i) {
    rule_index.emplace(rules[i].id, i);
    jrules.push_back(sarif_rule(rules[i]));
  }

  bool success = opts.run_errors.empty();
  Json notifications = Json::array();
  for (const std::string& e : opts.run_errors) {
    Json n;
    n["level"] = "error";
    n["message"]["text"] = e;
    n["descriptor"]["id"] = "config";
    notifications.push_back(std::move(n));
  }
  Json jresults = Json::array();
  for (const FileResult& r : results) {
    const SourceIndex src(r.source);
    for (const Diagnostic& d : r.diagnostics) {
      if (d.fatal && d.kind == "internal") success = false;
      Json n;
      n["level"] = diagnostic_level(d);
      n["message"]["text"] = diagnostic_message(d);
      const std::string& path = d.path.empty() ? r.path : d.path;
      if (!path.empty()) {
        Json phys;
        phys["artifactLocation"] = uris.artifact_location(path);
        if (d.line > 0) {
          phys["region"]["startLine"] = d.line;
          if (d.col > 0) phys["region"]["startColumn"] = src.utf16_column(d.line, d.col);
        }
        Json loc;
        loc["physicalLocation"] = std::move(phys);
        n["locations"] = Json::array({std::move(loc)});
      }
      n["descriptor"]["id"] = d.kind;
      n["properties"]["fatal"] = d.fatal;
      notifications.push_back(std::move(n));
    }
    Fingerprinter fingerprints;
    for (const Finding& f : r.findings) {
      const std::string& path = f.path.empty() ? r.path : f.path;
      const Json artifact = uris.artifact_location(path);
      Json res;
      res["ruleId"] = f.rule;
      if (auto it = rule_index.find(f.rule); it != rule_index.end()) res["ruleIndex"] = it->second;
      res["level"] = sarif_level(f.severity);
      res["message"]["text"] = f.message;
      res["locations"] = Json::array({sarif_location(artifact, sarif_region(f.range, src, true))});
      if (!f.notes.empty()) {
        Json related = Json::array();
        int id = 0;
        for (const Note& n : f.notes) {
          Json loc = sarif_location(artifact, sarif_region(n.range, src, false));
          loc["id"] = id++;
          loc["message"]["text"] = n.message;
          related.push_back(std::move(loc));
        }
        res["relatedLocations"] = std::move(related);
      }
      const std::string rel = uris.relative(path);
      res["partialFingerprints"][std::string(kFingerprintKey)] =
          fingerprints.next(f, rel.empty() ? absolute_normal(path) : rel, src);
      if (opts.show_fixes && !f.fixes.empty()) {
        Json fixes = Json::array();
        for (const Fix& fix : f.fixes) fixes.push_back(sarif_fix(fix, artifact, src));
        res["fixes"] = std::move(fixes);
      }
      if (f.suppressed) {
        Json s;
        s["kind"] = "inSource";
        if (!f.suppression.empty()) s["justification"] = f.suppression;
        res["suppressions"] = Json::array({std::move(s)});
      }
      if (f.low_confidence) res["properties"]["confidence"] = "low";
      if (f.cell > 0) res["properties"]["notebook"] = {{"cell", f.cell}, {"line", f.cell_line}, {"column", f.cell_col}};
      jresults.push_back(std::move(res));
    }
  }

  Json driver;
  driver["name"] = "leaklint";
  driver["version"] = version_of(opts);
  driver["semanticVersion"] = version_of(opts);
  driver["informationUri"] = kInformationUri;
  driver["rules"] = std::move(jrules);

  Json invocation;
  invocation["executionSuccessful"] = success;
  invocation["toolExecutionNotifications"] = std::move(notifications);

  Json run;
  run["tool"]["driver"] = std::move(driver);
  run["invocations"] = Json::array({std::move(invocation)});
  run["originalUriBaseIds"]["%SRCROOT%"]["uri"] = uris.root_uri();
  run["results"] = std::move(jresults);
  run["columnKind"] = "utf16CodeUnits";

  Json doc;
  doc["$schema"] = kSarifSchema;
  doc["version"] = "2.1.0";
  doc["runs"] = Json::array({std::move(run)});
  out << doc.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
}

// ---- GitHub annotations ----------------------------------------------------------------

// Workflow command escaping: data escapes % CR LF; property values also : and ,.
std::string escape_data(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '%': out += "%25"; break;
      case '\r': out += "%0D"; break;
      case '\n': out += "%0A"; break;
      default: out += c;
    }
  }
  return out;
}

std::string escape_property(std::string_view s) {
  std::string out;
  for (const char c : escape_data(s)) {
    switch (c) {
      case ':': out += "%3A"; break;
      case ',': out += "%2C"; break;
      default: out += c;
    }
  }
  return out;
}

const char* github_level(std::string_view level) {
  if (level == "error") return "error";
  if (level == "warning") return "warning";
  return "notice";
}

void write_github_annotations(std::ostream& out, const std::vector<FileResult>& results,
                              const ReportOptions& opts) {
  const UriMapper uris(opts.root);
  const auto github_path = [&](const std::string& path) {
    const std::string rel = opts.root.empty() ? std::string() : uris.relative(path);
    return rel.empty() ? path : rel;
  };
  for (const FileResult& r : results) {
    for (const Diagnostic& d : r.diagnostics) {
      const std::string path = github_path(d.path.empty() ? r.path : d.path);
      out << "::" << github_level(diagnostic_level(d)) << " file=" << escape_property(escape_path(path));
      if (d.line > 0) {
        out << ",line=" << d.line;
        if (d.col > 0) out << ",col=" << d.col;
      }
      out << ",title=" << escape_property("leaklint " + d.kind) << "::"
          << escape_data(escape_path(diagnostic_message(d))) << '\n';
    }
    for (const Finding& f : r.findings) {
      if (f.suppressed) continue;
      const std::string path = github_path(f.path.empty() ? r.path : f.path);
      out << "::" << github_level(severity_name(f.severity)) << " file=" << escape_property(escape_path(path))
          << ",line=" << f.range.line << ",col=" << f.range.col;
      if (f.range.end_line >= f.range.line && f.range.end_line > 0) {
        out << ",endLine=" << f.range.end_line << ",endColumn=" << f.range.end_col;
      }
      std::string title = f.rule;
      const std::string_view slug = slug_of(f.rule);
      if (!slug.empty()) title += " " + std::string(slug);
      std::string message = f.message;
      // A notebook's annotation sits on a line of its JSON: say where in the cells it is.
      if (f.cell > 0)
        message = "cell " + std::to_string(f.cell) + ", line " + std::to_string(f.cell_line) + ", column " +
                  std::to_string(f.cell_col) + ": " + message;
      for (const Note& n : f.notes) {
        message += "\n" + location_prefix(path, n.range.line, n.range.col) + " note: " + n.message;
      }
      for (const Fix& fix : f.fixes) message += "\n" + fix_hint(fix);
      out << ",title=" << escape_property(title) << "::" << escape_data(message) << '\n';
    }
  }
}

// A Markdown table cell: no line breaks, `|` escaped.
std::string markdown_cell(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

// The job's step summary ($GITHUB_STEP_SUMMARY): counts per rule, then the findings
// themselves (the first 200), so nothing is lost past the annotation limits.
void write_step_summary(std::ostream& md, const std::vector<FileResult>& results, const ReportOptions& opts) {
  const UriMapper uris(opts.root);
  md << "## leaklint\n\n" << summary_line(count(results, opts), 0) << "\n\n";
  std::map<std::string, std::size_t> per_rule;
  for (const FileResult& r : results)
    for (const Finding& f : r.findings)
      if (!f.suppressed) ++per_rule[f.rule];
  if (per_rule.empty()) return;
  md << "| rule | findings |\n|---|---:|\n";
  for (const auto& [rule, n] : per_rule)
    md << "| " << rule << " " << slug_of(rule) << " | " << n << " |\n";
  md << "\n| location | severity | rule | message |\n|---|---|---|---|\n";
  std::size_t shown = 0, total = 0;
  for (const FileResult& r : results) {
    for (const Finding& f : r.findings) {
      if (f.suppressed) continue;
      if (++total > 200) continue;
      ++shown;
      const std::string& path = f.path.empty() ? r.path : f.path;
      const std::string rel = opts.root.empty() ? std::string() : uris.relative(path);
      md << "| `" << markdown_cell(escape_path(rel.empty() ? path : rel)) << ":" << f.range.line << "` | "
         << severity_name(f.severity) << " | " << f.rule << " | " << markdown_cell(f.message) << " |\n";
    }
  }
  if (total > shown) md << "\n" << (total - shown) << " more findings are in the job log and the SARIF log.\n";
}

// GitHub shows at most 10 error and 10 warning annotations per step: errors come first,
// then warnings, then notices, and a closing notice says how many there were in all.
void write_github(std::ostream& out, const std::vector<FileResult>& results, const ReportOptions& opts) {
  std::ostringstream buf;
  write_github_annotations(buf, results, opts);
  std::vector<std::string> lines[3];
  std::istringstream in(buf.str());
  for (std::string line; std::getline(in, line);) {
    const int level = line.rfind("::error", 0) == 0 ? 0 : line.rfind("::warning", 0) == 0 ? 1 : 2;
    lines[level].push_back(std::move(line));
  }
  for (const auto& group : lines)
    for (const std::string& line : group) out << line << '\n';
  // The summary is a workflow command too, so that every stdout line is one.
  std::string summary = summary_line(count(results, opts), opts.fixed_count);
  if (lines[0].size() > 10 || lines[1].size() > 10) {
    summary += " " + std::to_string(lines[0].size()) + " error and " + std::to_string(lines[1].size()) +
               " warning annotations in all; GitHub shows 10 of each per step: every finding is in this log" +
               (opts.step_summary.empty() ? "" : ", the step summary") + " and the SARIF log.";
  }
  out << "::notice title=leaklint::" << escape_data(summary) << '\n';
  if (!opts.step_summary.empty()) {
    std::ofstream md(opts.step_summary, std::ios::app | std::ios::binary);
    write_step_summary(md, results, opts);
  }
}

}  // namespace

bool color_enabled(std::string_view mode, bool to_tty, const char* no_color, const char* force_color,
                   const char* term) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  if (no_color != nullptr && *no_color != '\0') return false;
  if (force_color != nullptr && *force_color != '\0') return true;
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return to_tty;
}

bool diagnostic_fails_run(const Diagnostic& d) {
  return d.fatal || d.kind == "syntax-error" || d.kind == "too-deep";
}

std::string escape_path(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  auto hex = [&](unsigned char c) {
    out += "\\x";
    out += kHex[c >> 4];
    out += kHex[c & 15];
  };
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default: hex(c);
      }
      ++i;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    const auto [cp, len] = decode_utf8(s, i);
    const bool valid = !(cp == 0xFFFDU && len == 1) && !(len == 2 && cp < 0x80) && !(len == 3 && cp < 0x800) &&
                       !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!valid) {
      hex(c);
      ++i;
    } else if ((cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) ||
               cp == 0x2028 || cp == 0x2029) {
      // C1 controls, bidirectional overrides and Unicode line separators.
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u{%x}", static_cast<unsigned>(cp));
      out += buf;
      i += len;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

void write_report(std::ostream& out, const std::vector<FileResult>& results,
                  const ReportOptions& opts) {
  if (opts.format == "json") {
    write_json(out, results, opts);
  } else if (opts.format == "sarif") {
    write_sarif(out, results, opts);
  } else if (opts.format == "github") {
    write_github(out, results, opts);
  } else {
    write_text(out, results, opts);
  }
}

std::vector<std::string> finding_fingerprints(const FileResult& r, const std::string& root) {
  const UriMapper uris(root);
  const SourceIndex src(r.source);
  Fingerprinter fp;
  std::vector<std::string> out;
  for (const Finding& f : r.findings) {
    const std::string& path = f.path.empty() ? r.path : f.path;
    const std::string rel = uris.relative(path);
    out.push_back(fp.next(f, rel.empty() ? absolute_normal(path) : rel, src));
  }
  return out;
}

}  // namespace ll
