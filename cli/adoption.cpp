#include "cli/adoption.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <regex>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/discover.hpp"
#include "cli/fix.hpp"
#include "frontend/python/python_frontend.hpp"
#include "cli/report.hpp"

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace ll {

namespace {

bool is_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > s.size() || (n == 2 && c < 0xC2) || (n == 4 && c > 0xF4)) return false;
    uint32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    i += n;
  }
  return true;
}

}  // namespace

// A baseline entry's "path" is informational (entries match by fingerprint, which hashes
// the path's raw bytes). A path that is not UTF-8 (JSON strings must be) is stored
// losslessly as "path_hex", the hex of its bytes, and "path" holds the same name with each
// invalid byte shown as U+FFFD, for people to read.
std::optional<std::string> write_baseline(const std::string& file, const std::vector<FileResult>& results,
                                          const std::string& root) {
  Json j;
  j["version"] = 1;
  j["tool"] = "leaklint";
  Json entries = Json::array();
  for (const FileResult& r : results) {
    auto fps = finding_fingerprints(r, root);
    for (size_t i = 0; i < r.findings.size(); ++i) {
      const Finding& f = r.findings[i];
      if (f.suppressed) continue;
      std::string path = fs::relative(fs::absolute(r.path), root).generic_string();
      Json e = {{"rule", f.rule}, {"fingerprint", fps[i]}};
      if (is_utf8(path)) {
        e["path"] = path;
      } else {
        static const char kHex[] = "0123456789abcdef";
        std::string hex;
        for (unsigned char c : path) {
          hex += kHex[c >> 4];
          hex += kHex[c & 15];
        }
        e["path"] = Json::parse(Json(path).dump(-1, ' ', false, Json::error_handler_t::replace));
        e["path_hex"] = hex;
      }
      entries.push_back(std::move(e));
    }
  }
  j["findings"] = std::move(entries);
  std::string text;
  try {
    text = j.dump(2) + "\n";
  } catch (const Json::exception& e) {
    return "cannot write baseline " + file + ": " + e.what();
  }
  // Atomic: the old baseline stays whole until the new one is complete.
  std::string err;
  if (!write_atomic(file, text, &err)) return "cannot write baseline " + file + ": " + err;
  return std::nullopt;
}

std::optional<std::string> apply_baseline(const std::string& file, std::vector<FileResult>& results,
                                          const std::string& root, size_t* dropped) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "cannot read baseline " + file;
  Json j = Json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("findings") || !j["findings"].is_array())
    return "baseline " + file + " is not a leaklint baseline (write one with --write-baseline)";
  std::set<std::string> known;
  for (const auto& e : j["findings"])
    if (e.contains("fingerprint") && e["fingerprint"].is_string()) known.insert(e["fingerprint"].get<std::string>());
  *dropped = 0;
  for (FileResult& r : results) {
    auto fps = finding_fingerprints(r, root);
    std::vector<Finding> kept;
    for (size_t i = 0; i < r.findings.size(); ++i) {
      if (!r.findings[i].suppressed && known.count(fps[i])) {
        ++*dropped;
        continue;
      }
      kept.push_back(std::move(r.findings[i]));
    }
    r.findings = std::move(kept);
  }
  return std::nullopt;
}

namespace {

std::optional<std::string> run_capture(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return std::nullopt;
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  if (rc != 0) return std::nullopt;
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::optional<ChangedLines> changed_lines(const std::string& rev, const std::string& cwd, std::string* error) {
  // The repository is part of the scanned tree and not trusted: its own config could name
  // commands git runs while diffing (core.fsmonitor, diff drivers' textconv via
  // .gitattributes, an external diff, hooks). Command-line settings override all of them.
  std::string cd = "cd " + shell_quote(cwd) +
                   " && git() { command git -c core.fsmonitor=false -c core.untrackedCache=false "
                   "-c core.hooksPath=/dev/null -c diff.external= -c core.pager=cat \"$@\"; } && ";
  auto top = run_capture(cd + "git rev-parse --show-toplevel 2>/dev/null");
  if (!top) {
    *error = "--diff-base needs a git repository";
    return std::nullopt;
  }
  std::string root = *top;
  while (!root.empty() && (root.back() == '\n' || root.back() == '\r')) root.pop_back();
  if (!run_capture(cd + "git rev-parse --verify --quiet " + shell_quote(rev + "^{commit}") + " >/dev/null")) {
    *error = "--diff-base: unknown revision '" + rev + "'";
    return std::nullopt;
  }
  auto diff = run_capture(cd + "git -c core.quotepath=off diff --no-color --no-ext-diff --no-textconv -U0 " + shell_quote(rev) +
                          " -- 2>/dev/null");
  if (!diff) {
    *error = "--diff-base: git diff failed";
    return std::nullopt;
  }
  ChangedLines out;
  std::istringstream ss(*diff);
  std::string line, current;
  while (std::getline(ss, line)) {
    if (line.rfind("+++ ", 0) == 0) {
      current = line.size() > 6 && line.compare(4, 2, "b/") == 0 ? root + "/" + line.substr(6) : "";
    } else if (line.rfind("@@ ", 0) == 0 && !current.empty()) {
      // @@ -a,b +c,d @@
      size_t plus = line.find(" +");
      if (plus == std::string::npos) continue;
      unsigned long start = std::strtoul(line.c_str() + plus + 2, nullptr, 10);
      unsigned long count = 1;
      size_t comma = line.find(',', plus);
      size_t space = line.find(' ', plus + 2);
      if (comma != std::string::npos && comma < space) count = std::strtoul(line.c_str() + comma + 1, nullptr, 10);
      if (count > 0)
        out[current].emplace_back(static_cast<uint32_t>(start), static_cast<uint32_t>(start + count - 1));
      else  // lines removed after line `start` of the new file: (start + 1, start), see adoption.hpp
        out[current].emplace_back(static_cast<uint32_t>(start + 1), static_cast<uint32_t>(start));
    }
  }
  if (auto untracked = run_capture(cd + "git -c core.quotepath=off ls-files --others --exclude-standard --full-name :/ 2>/dev/null")) {
    std::istringstream us(*untracked);
    while (std::getline(us, line))
      if (!line.empty()) out[root + "/" + line].emplace_back(1, UINT32_MAX);
  }
  return out;
}

namespace {

// The line span of the code a finding is about: the function it is in (decorators
// included), or at module level the outermost loop it is in; {0, 0} when neither.
struct Span {
  uint32_t first = 0, last = 0;
};

class PythonScopes {
 public:
  PythonScopes(const std::string& source, const std::string& path) {
    std::vector<Diagnostic> diags;
    ok_ = python::lower(source, path, m_, diags);
  }
  Span of(uint32_t line) const {
    Span best;
    if (!ok_) return best;
    auto inside = [&](const Range& r) { return r.line <= line && line <= std::max(r.line, r.end_line); };
    for (const Function& f : m_.funcs)  // the innermost function
      if (inside(f.range) && (best.first == 0 || f.range.end_line - f.range.line < best.last - best.first))
        best = {f.range.line, std::max(f.range.line, f.range.end_line)};
    if (best.first) return best;
    for (const Stmt& s : m_.stmts)  // the outermost loop
      if ((s.kind == StmtKind::For || s.kind == StmtKind::While) && inside(s.range) &&
          (best.first == 0 || s.range.end_line - s.range.line > best.last - best.first))
        best = {s.range.line, std::max(s.range.line, s.range.end_line)};
    return best;
  }

 private:
  Module m_;
  bool ok_ = false;
};

// C/C++: the outermost brace block that is code (not a namespace, class, struct, union,
// enum or extern "C" block), from the line of its header to its closing brace: a function
// body, or a lambda or initializer at namespace scope. Comments, strings and character
// literals are skipped; good enough to scope a finding, which is all it is used for.
std::vector<Span> cpp_code_blocks(const std::string& s) {
  std::vector<Span> out;
  struct Open {
    bool container;
    uint32_t header_line;
  };
  std::vector<Open> stack;
  uint32_t line = 1, stmt_line = 1;
  size_t stmt_start = 0;
  bool stmt_seen = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\n') { ++line; continue; }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
      --i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      for (i += 2; i + 1 < s.size() && !(s[i] == '*' && s[i + 1] == '/'); ++i)
        if (s[i] == '\n') ++line;
      ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      for (++i; i < s.size() && s[i] != c && s[i] != '\n'; ++i)
        if (s[i] == '\\') ++i;
      continue;
    }
    if (c == '#' && !stmt_seen) {  // a preprocessor line
      while (i < s.size() && s[i] != '\n') i += s[i] == '\\' && i + 1 < s.size() ? 2 : 1;
      --i;
      continue;
    }
    if (c == '{') {
      const std::string header = s.substr(stmt_start, i - stmt_start);
      static const std::regex container(R"((^|[^\w])(namespace|class|struct|union|enum)([^\w]|$)|extern\s*"C")");
      const bool in_code = std::any_of(stack.begin(), stack.end(), [](const Open& o) { return !o.container; });
      stack.push_back({!in_code && std::regex_search(header, container), stmt_seen ? stmt_line : line});
      stmt_start = i + 1;
      stmt_seen = false;
      continue;
    }
    if (c == '}' || c == ';') {
      if (c == '}' && !stack.empty()) {
        const Open o = stack.back();
        stack.pop_back();
        const bool outer_code = !o.container && std::all_of(stack.begin(), stack.end(), [](const Open& x) { return x.container; });
        if (outer_code) out.push_back({o.header_line, line});
      }
      stmt_start = i + 1;
      stmt_seen = false;
      continue;
    }
    if (!stmt_seen && c != ' ' && c != '\t' && c != '\r') {
      stmt_seen = true;
      stmt_line = line;
    }
  }
  return out;
}

}  // namespace

void keep_changed(const ChangedLines& changed, std::vector<FileResult>& results, size_t* dropped) {
  *dropped = 0;
  for (FileResult& r : results) {
    std::error_code ec;
    std::string abs = fs::weakly_canonical(fs::absolute(r.path), ec).string();
    auto it = changed.find(abs);
    static const std::vector<std::pair<uint32_t, uint32_t>> kNone;
    const auto& hunks = it != changed.end() ? it->second : kNone;
    // Lines [first, last] touched: a changed line in them, or lines removed right there.
    auto touched = [&](uint32_t first, uint32_t last, bool inside_only) {
      for (auto [a, b] : hunks) {
        if (a <= b) {
          if (a <= last && b >= first) return true;
        } else {  // removed after line b
          // Inside a scope, or right above it (a removed decorator).
          if (inside_only ? (first <= b + 1 && b < last) : (first <= b + 1 && b <= last)) return true;
        }
      }
      return false;
    };
    std::unique_ptr<PythonScopes> py;
    std::optional<std::vector<Span>> cpp;
    const bool python = is_python_source(r.path), is_cpp = is_cpp_path(r.path);
    std::vector<Finding> kept;
    for (Finding& f : r.findings) {
      bool keep = false;
      if (!hunks.empty()) {
        keep = touched(f.range.line, std::max(f.range.end_line, f.range.line), false);
        for (const Note& n : f.notes)  // what the finding points at: the loop, the guard, the .eval()
          keep = keep || (n.range.line > 0 && touched(n.range.line, std::max(n.range.end_line, n.range.line), false));
        // The function (or module-level loop) it is about: a change there, a removed
        // `with torch.no_grad():` or decorator included, can be what made it a finding.
        Span scope;
        if (!keep && python && !r.source.empty()) {
          if (!py) py = std::make_unique<PythonScopes>(r.source, r.path);
          scope = py->of(f.range.line);
        } else if (!keep && is_cpp && !r.source.empty()) {
          if (!cpp) cpp = cpp_code_blocks(r.source);
          for (const Span& sp : *cpp)
            if (sp.first <= f.range.line && f.range.line <= sp.last) scope = sp;
        }
        if (scope.first) keep = touched(scope.first, scope.last, true);
      }
      if (keep) kept.push_back(std::move(f));
      else ++*dropped;
    }
    r.findings = std::move(kept);
  }
}

}  // namespace ll
