// The rule catalog as one table: ID, slug, default severity, languages, summary and the
// compiled-in doc page. `--list-rules`, `explain`, SARIF rules[] and checks all read it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rules/finding.hpp"

namespace ll {

struct RuleInfo {
  std::string_view id;        // "LL101"
  std::string_view slug;      // "missing-no-grad"
  Severity severity;
  std::string_view languages; // "Python, C++"
  std::string_view summary;   // one line
  std::string_view fix;       // "safe" | "unsafe" | "" (none)
};

const std::vector<RuleInfo>& all_rules();
const RuleInfo* find_rule(std::string_view id_or_slug);
// The markdown doc page of a rule (docs/rules/<ID>-<slug>.md, compiled in); empty if none.
std::string_view rule_doc(std::string_view id);
// First sentence / first paragraph of "What it does" from the doc page.
std::string rule_short_description(std::string_view id);
std::string rule_full_description(std::string_view id);
std::string rule_help_uri(std::string_view id);

}  // namespace ll
