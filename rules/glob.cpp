#include "rules/glob.hpp"

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <utility>

namespace ll {

namespace {

using Ranges = std::vector<std::pair<unsigned char, unsigned char>>;

// Appends the ranges of a POSIX class name ("alpha", ...); false if the name is unknown.
bool posix_class(std::string_view name, Ranges& out) {
  struct Entry {
    std::string_view name;
    std::initializer_list<std::pair<unsigned char, unsigned char>> ranges;
  };
  static const Entry kClasses[] = {
      {"alpha", {{'A', 'Z'}, {'a', 'z'}}},
      {"digit", {{'0', '9'}}},
      {"alnum", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}}},
      {"lower", {{'a', 'z'}}},
      {"upper", {{'A', 'Z'}}},
      {"xdigit", {{'0', '9'}, {'A', 'F'}, {'a', 'f'}}},
      {"space", {{'\t', '\r'}, {' ', ' '}}},
      {"blank", {{'\t', '\t'}, {' ', ' '}}},
      {"punct", {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}}},
      {"cntrl", {{0, 31}, {127, 127}}},
      {"graph", {{'!', '~'}}},
      {"print", {{' ', '~'}}},
  };
  for (const Entry& e : kClasses) {
    if (e.name == name) {
      out.insert(out.end(), e.ranges.begin(), e.ranges.end());
      return true;
    }
  }
  return false;
}

// Parses the class starting at pattern[i] == '['. On success returns the index one past
// the closing ']' and fills `ranges`/`negate`; returns 0 when the class is not closed.
std::size_t parse_class(std::string_view p, std::size_t i, Ranges& ranges, bool& negate) {
  std::size_t j = i + 1;
  negate = false;
  if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
    negate = true;
    ++j;
  }
  bool first = true;
  while (j < p.size()) {
    auto c = static_cast<unsigned char>(p[j]);
    if (c == ']' && !first) return j + 1;
    first = false;
    if (c == '[' && j + 1 < p.size() && p[j + 1] == ':') {
      const std::size_t close = p.find(":]", j + 2);
      if (close != std::string_view::npos &&
          posix_class(p.substr(j + 2, close - j - 2), ranges)) {
        j = close + 2;
        continue;
      }
    }
    if (c == '\\' && j + 1 < p.size()) {
      ++j;
      c = static_cast<unsigned char>(p[j]);
    }
    ++j;
    unsigned char hi = c;
    if (j + 1 < p.size() && p[j] == '-' && p[j + 1] != ']') {
      ++j;
      if (p[j] == '\\' && j + 1 < p.size()) ++j;
      hi = static_cast<unsigned char>(p[j]);
      ++j;
    }
    if (hi >= c) ranges.emplace_back(c, hi);
  }
  return 0;
}

}  // namespace

Glob::Glob(std::string_view p) {
  std::size_t i = 0;
  while (i < p.size()) {
    const char c = p[i];
    Token t;
    if (c == '\\') {
      t.c = i + 1 < p.size() ? p[i + 1] : '\\';
      i += 2;
    } else if (c == '*') {
      std::size_t run = i;
      while (run < p.size() && p[run] == '*') ++run;
      const bool starts_component = i == 0 || p[i - 1] == '/';
      const bool ends_component = run == p.size() || p[run] == '/';
      if (run - i >= 2 && starts_component && ends_component) {
        if (run == p.size()) {
          t.kind = Kind::AnyPath;
          i = run;
        } else {
          t.kind = Kind::AnyDirs;  // consumes the following '/'
          i = run + 1;
        }
      } else {
        t.kind = Kind::Star;
        i = run;
      }
    } else if (c == '?') {
      t.kind = Kind::AnyChar;
      ++i;
    } else if (c == '[') {
      const std::size_t next = parse_class(p, i, t.ranges, t.negate);
      if (next != 0) {
        t.kind = Kind::Class;
        i = next;
      } else {
        t.ranges.clear();
        t.c = c;
        ++i;
      }
    } else {
      t.c = c;
      ++i;
    }
    tokens_.push_back(std::move(t));
  }
  std::size_t lead = 0;
  while (lead < tokens_.size() && tokens_[lead].kind == Kind::Literal) prefix_ += tokens_[lead++].c;
  literal_ = lead == tokens_.size();
  std::size_t tail = tokens_.size();
  while (tail > lead && tokens_[tail - 1].kind == Kind::Literal) --tail;
  for (std::size_t k = tail; k < tokens_.size(); ++k) suffix_ += tokens_[k].c;
}

bool Glob::match(std::string_view path) const {
  if (literal_) return path == prefix_;
  if (path.size() < prefix_.size() + suffix_.size() ||
      path.compare(0, prefix_.size(), prefix_) != 0 ||
      path.compare(path.size() - suffix_.size(), suffix_.size(), suffix_) != 0) {
    return false;
  }
  const std::string_view s = path;
  const std::size_t m = s.size();
  // cur[j]: the tokens seen so far match s[0, j).
  std::vector<char> cur(m + 1, 0);
  std::vector<char> next(m + 1, 0);
  cur[0] = 1;
  for (const Token& t : tokens_) {
    std::fill(next.begin(), next.end(), 0);
    switch (t.kind) {
      case Kind::Literal:
        for (std::size_t j = 0; j < m; ++j) next[j + 1] = static_cast<char>(cur[j] != 0 && s[j] == t.c);
        break;
      case Kind::AnyChar:
        for (std::size_t j = 0; j < m; ++j) next[j + 1] = static_cast<char>(cur[j] != 0 && s[j] != '/');
        break;
      case Kind::Class:
        for (std::size_t j = 0; j < m; ++j) {
          if (cur[j] == 0 || s[j] == '/') continue;
          const auto b = static_cast<unsigned char>(s[j]);
          bool in = false;
          for (const auto& [lo, hi] : t.ranges) in = in || (b >= lo && b <= hi);
          next[j + 1] = static_cast<char>(in != t.negate);
        }
        break;
      case Kind::Star:
        next[0] = cur[0];
        for (std::size_t j = 1; j <= m; ++j) {
          next[j] = static_cast<char>(cur[j] != 0 || (next[j - 1] != 0 && s[j - 1] != '/'));
        }
        break;
      case Kind::AnyPath:
        next[0] = cur[0];
        for (std::size_t j = 1; j <= m; ++j) next[j] = static_cast<char>(cur[j] != 0 || next[j - 1] != 0);
        break;
      case Kind::AnyDirs: {
        // Matches "" or any string ending in '/'.
        bool any_before = false;  // cur[k] for some k < j
        for (std::size_t j = 0; j <= m; ++j) {
          next[j] = static_cast<char>(cur[j] != 0 || (j > 0 && s[j - 1] == '/' && any_before));
          any_before = any_before || cur[j] != 0;
        }
        break;
      }
    }
    cur.swap(next);
  }
  return cur[m] != 0;
}

}  // namespace ll
