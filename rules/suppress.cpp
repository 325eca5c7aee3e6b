#include "rules/suppress.hpp"

#include <algorithm>
#include <cctype>

#include "rules/config.hpp"

namespace ll {
namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Splits "LL101, LL102" / "leaklint-LL101,leaklint-LL2" into rule selectors.
std::vector<std::string> codes_of(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    std::string c = trim(cur);
    cur.clear();
    if (c.rfind("leaklint-", 0) == 0) c = c.substr(9);
    if (!c.empty()) out.push_back(c);
  };
  for (char ch : list) {
    if (ch == ',' || ch == ' ') flush();
    else cur.push_back(ch);
  }
  flush();
  return out;
}

bool only_leaklint_codes(const std::vector<std::string>& codes) {
  for (const auto& c : codes)
    if (c.size() >= 2 && c[0] == 'L' && c[1] == 'L') return true;
  return false;
}

}  // namespace

Suppressions::Suppressions(const std::vector<Comment>& comments, Lang lang) {
  std::vector<std::pair<uint32_t, std::vector<std::string>>> open_blocks;
  for (const Comment& c : comments) {
    std::string t = trim(c.text);
    if (lang == Lang::Python) {
      // Several directives may share one comment: `# type: ignore  # noqa: LL101`
      size_t pos = 0;
      while (pos < t.size()) {
        size_t hash = t.find('#', pos);
        std::string part = trim(t.substr(pos, hash == std::string::npos ? std::string::npos : hash - pos));
        pos = hash == std::string::npos ? t.size() : hash + 1;
        std::string lower = part;
        std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
        if (lower.rfind("leaklint:", 0) == 0) {
          std::string rest = trim(part.substr(9));
          bool file = rest.rfind("ignore-file", 0) == 0;
          bool line = !file && rest.rfind("ignore", 0) == 0;
          if (!file && !line) continue;
          std::vector<std::string> codes;
          size_t lb = rest.find('['), rb = rest.find(']');
          if (lb != std::string::npos && rb != std::string::npos && rb > lb) codes = codes_of(rest.substr(lb + 1, rb - lb - 1));
          Entry e;
          e.first = file ? 0 : c.line;
          e.last = file ? UINT32_MAX : c.line;
          e.codes = std::move(codes);
          e.text = "#" + c.text;
          entries_.push_back(std::move(e));
        } else if (lower.rfind("noqa", 0) == 0) {
          std::string rest = trim(part.substr(4));
          Entry e;
          e.first = e.last = c.line;
          e.text = "#" + c.text;
          if (!rest.empty() && rest[0] == ':') {
            e.codes = codes_of(rest.substr(1));
            if (!only_leaklint_codes(e.codes)) continue;  // `# noqa: E501` is another tool's
          }
          entries_.push_back(std::move(e));
        }
      }
    } else {
      for (const char* kw : {"NOLINTNEXTLINE", "NOLINTBEGIN", "NOLINTEND", "NOLINT"}) {
        size_t p = t.find(kw);
        if (p == std::string::npos) continue;
        std::string k = kw;
        std::string rest = t.substr(p + k.size());
        std::vector<std::string> codes;
        if (!rest.empty() && rest[0] == '(') {
          size_t rb = rest.find(')');
          codes = codes_of(rest.substr(1, rb == std::string::npos ? std::string::npos : rb - 1));
          // NOLINT(other-check) is not ours.
          bool ours = false;
          for (auto& cd : codes)
            if (cd.rfind("LL", 0) == 0 || cd == "*") ours = true;
          if (!ours) break;
          codes.erase(std::remove(codes.begin(), codes.end(), std::string("*")), codes.end());
        }
        if (k == "NOLINTBEGIN") {
          open_blocks.emplace_back(c.line, codes);
        } else if (k == "NOLINTEND") {
          if (!open_blocks.empty()) {
            Entry e;
            e.first = open_blocks.back().first;
            e.last = c.line;
            e.codes = open_blocks.back().second;
            e.text = "//" + c.text;
            open_blocks.pop_back();
            entries_.push_back(std::move(e));
          }
        } else {
          Entry e;
          e.first = e.last = k == "NOLINTNEXTLINE" ? c.line + 1 : c.line;
          e.codes = std::move(codes);
          e.text = "//" + c.text;
          entries_.push_back(std::move(e));
        }
        break;
      }
    }
  }
}

const std::string* Suppressions::match(const std::string& rule, uint32_t line) const {
  for (const Entry& e : entries_) {
    if (line < e.first || line > e.last) continue;
    if (e.codes.empty()) return &e.text;
    for (const auto& c : e.codes)
      if (rule_matches(rule, c)) return &e.text;
  }
  return nullptr;
}

void Suppressions::apply(std::vector<Finding>& findings) const {
  if (entries_.empty()) return;
  for (Finding& f : findings) {
    const std::string* s = match(f.rule, f.range.line);
    if (!s) s = match(f.rule, f.range.end_line);
    if (s) {
      f.suppressed = true;
      f.suppression = *s;
    }
  }
}

}  // namespace ll
