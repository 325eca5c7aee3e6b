// Path globs with git's wildmatch semantics (used by .gitignore and per-file-ignores):
// `*` and `?` and `[...]` never match `/`; `**` as a whole path component matches any
// number of directories (`**/x`, `a/**/b`, `a/**`); `\` escapes the next character.
// Matching is case-sensitive, byte-wise, and runs without recursion in O(pattern x path).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ll {

class Glob {
 public:
  explicit Glob(std::string_view pattern);
  // `path` uses `/` separators and has no leading `./`.
  bool match(std::string_view path) const;

 private:
  enum class Kind : unsigned char { Literal, AnyChar, Class, Star, AnyPath, AnyDirs };
  struct Token {
    Kind kind = Kind::Literal;
    char c = 0;
    bool negate = false;
    std::vector<std::pair<unsigned char, unsigned char>> ranges;  // Class: inclusive ranges
  };
  std::vector<Token> tokens_;
  // Literal text the pattern must start / end with: most candidates are rejected by these
  // comparisons before the full match runs. `literal_`: the whole pattern is literal.
  std::string prefix_, suffix_;
  bool literal_ = false;
};

inline bool glob_match(std::string_view pattern, std::string_view path) {
  return Glob(pattern).match(path);
}

}  // namespace ll
