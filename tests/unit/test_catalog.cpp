// The catalog's completeness: every rule ID in the registry has exactly one check, a check
// source named by its ID, a doc page, bad/ok fixtures in each language it claims (every
// bad fixture expecting its folder's rule, no ok fixture expecting it) and a leaky/fixed
// verification pair. A newcomer finds all of them by the ID; this test keeps it so.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "checks/checks.hpp"
#include "rules/registry.hpp"

namespace fs = std::filesystem;
using namespace ll;

namespace {

const fs::path kSource = LEAKLINT_SOURCE_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has_file_with_prefix(const fs::path& dir, const std::string& prefix, const std::string& ext) {
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.rfind(prefix, 0) == 0 && e.path().extension() == ext) return true;
  }
  return false;
}

// Rule IDs named by `expect:` comments in a fixture file.
std::vector<std::string> expected_ids(const std::string& text) {
  static const std::regex expect_re("(#|//)\\s*expect:\\s*((?:LL\\d{3}[ ,]*)+)");
  static const std::regex id_re("LL\\d{3}");
  std::vector<std::string> out;
  for (std::sregex_iterator it(text.begin(), text.end(), expect_re), end; it != end; ++it) {
    const std::string ids = (*it)[2];
    for (std::sregex_iterator j(ids.begin(), ids.end(), id_re), e2; j != e2; ++j) out.push_back(j->str());
  }
  return out;
}

}  // namespace

TEST(Catalog, EveryRuleHasExactlyOneCheckAndEveryCheckARule) {
  std::map<std::string, int> checks;
  for (const CheckEntry& c : all_checks()) ++checks[std::string(c.id)];
  for (const RuleInfo& r : all_rules()) {
    EXPECT_EQ(checks[std::string(r.id)], 1) << r.id << ": registered checks";
    checks.erase(std::string(r.id));
  }
  for (const auto& [id, n] : checks) ADD_FAILURE() << id << ": a check without a registry row";
}

TEST(Catalog, EveryRuleHasItsCheckSourceDocFixturesAndVerificationPair) {
  ASSERT_FALSE(all_rules().empty());
  for (const RuleInfo& r : all_rules()) {
    const std::string id(r.id);
    SCOPED_TRACE(id);
    // The check, by its ID.
    bool check_source = false;
    for (const auto& e : fs::directory_iterator(kSource / "checks"))
      if (e.path().filename().string().rfind(id + "_", 0) == 0 && e.path().extension() == ".cpp") check_source = true;
    EXPECT_TRUE(check_source) << "no checks/" << id << "_*.cpp";
    // The doc page, on disk and compiled in.
    const fs::path doc = kSource / "docs" / "rules" / (id + "-" + std::string(r.slug) + ".md");
    EXPECT_TRUE(fs::is_regular_file(doc)) << doc;
    EXPECT_NE(rule_doc(r.id).find("## What it does"), std::string_view::npos) << "compiled-in doc page";
    EXPECT_EQ(slurp(doc), std::string(rule_doc(r.id))) << "compiled-in doc differs from " << doc;
    // Fixtures, in each language the rule claims.
    const fs::path fixtures = kSource / "tests" / "fixtures" / id;
    ASSERT_TRUE(fs::is_directory(fixtures)) << fixtures;
    const bool python = r.languages.find("Python") != std::string_view::npos;
    const bool cpp = r.languages.find("C++") != std::string_view::npos;
    EXPECT_TRUE(python || cpp) << "languages: " << r.languages;
    if (python) {
      EXPECT_TRUE(has_file_with_prefix(fixtures, "bad_", ".py")) << "no Python bad_ fixture";
      EXPECT_TRUE(has_file_with_prefix(fixtures, "ok_", ".py")) << "no Python ok_ fixture";
    }
    if (cpp) {
      EXPECT_TRUE(has_file_with_prefix(fixtures, "bad_", ".cpp")) << "no C++ bad_ fixture";
      EXPECT_TRUE(has_file_with_prefix(fixtures, "ok_", ".cpp")) << "no C++ ok_ fixture";
    }
    // The verification pair.
    EXPECT_TRUE(fs::is_regular_file(kSource / "tests" / "verify" / id / "leaky.py")) << "no verification leaky.py";
    EXPECT_TRUE(fs::is_regular_file(kSource / "tests" / "verify" / id / "fixed.py")) << "no verification fixed.py";
  }
}

TEST(Catalog, BadFixturesExpectTheirFolderRuleAndOkFixturesDoNot) {
  int bad = 0, ok = 0;
  for (const RuleInfo& r : all_rules()) {
    const std::string id(r.id);
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(kSource / "tests" / "fixtures" / id, ec)) {
      const std::string name = e.path().filename().string();
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".py" && ext != ".cpp")) continue;
      const auto ids = expected_ids(slurp(e.path()));
      const bool expects_rule = std::find(ids.begin(), ids.end(), id) != ids.end();
      if (name.rfind("bad_", 0) == 0) {
        ++bad;
        EXPECT_TRUE(expects_rule) << e.path() << " is a bad_ fixture of " << id << " but expects no " << id;
      } else if (name.rfind("ok_", 0) == 0) {
        ++ok;
        EXPECT_FALSE(expects_rule) << e.path() << " is an ok_ fixture of " << id << " but expects " << id;
      }
    }
  }
  EXPECT_GT(bad, 0);
  EXPECT_GT(ok, 0);
}
