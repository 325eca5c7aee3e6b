// Inline suppressions: `# leaklint: ignore[LL101]`, `# noqa: LL101`, bare `# noqa`,
// file-level `# leaklint: ignore-file[LL4]`; C++ `// NOLINT(leaklint-LL101)`,
// `// NOLINTNEXTLINE(leaklint-LL101)`, `// NOLINTBEGIN(...)` ... `// NOLINTEND(...)`.
#pragma once

#include <string>
#include <vector>

#include "rules/finding.hpp"
#include "rules/model.hpp"

namespace ll {

class Suppressions {
 public:
  Suppressions(const std::vector<Comment>& comments, Lang lang);
  // The comment that suppresses `rule` at `line`, or nullptr.
  const std::string* match(const std::string& rule, uint32_t line) const;
  void apply(std::vector<Finding>& findings) const;

 private:
  struct Entry {
    uint32_t first = 0, last = 0;     // lines covered
    std::vector<std::string> codes;   // empty = all rules
    std::string text;
  };
  std::vector<Entry> entries_;
};

}  // namespace ll
