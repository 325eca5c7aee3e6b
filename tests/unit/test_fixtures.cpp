// The fixture runner: every tests/fixtures/<ID>/**/*.py declares its expected findings as
// `# expect: LL101` comments on the flagged line; any missing or unexpected finding fails.
// An expectation can also pin the finding's column and key words of its message, as
// clang-tidy's CHECK-MESSAGES does: `# expect: LL101@13 "autograd enabled" "no_grad()"`
// (column in bytes, 1-based; each quoted word must appear in the message), several
// separated by commas: `# expect: LL101@13 "forward", LL102`.
// `# fixture-config: key = value` lines configure the file ([tool.leaklint] TOML lines).
#include <gtest/gtest.h>

#include <filesystem>
#include <cctype>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "cli/engine.hpp"
#include "rules/config.hpp"

namespace fs = std::filesystem;
using namespace ll;

namespace {

struct FixtureCase {
  std::string rel;   // path relative to tests/fixtures
  std::string file;  // absolute
};

std::vector<FixtureCase> discover_fixtures() {
  std::vector<FixtureCase> out;
  fs::path root = fs::path(LEAKLINT_SOURCE_DIR) / "tests" / "fixtures";
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file()) continue;
    auto ext = it->path().extension();
    if (ext != ".py") continue;
    out.push_back({fs::relative(it->path(), root).string(), it->path().string()});
  }
  std::sort(out.begin(), out.end(), [](const FixtureCase& a, const FixtureCase& b) { return a.rel < b.rel; });
  return out;
}

std::string read(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void PrintTo(const FixtureCase& c, std::ostream* os) { *os << c.rel; }

class Fixture : public ::testing::TestWithParam<FixtureCase> {};

}  // namespace

namespace ll::fixtures {

struct Expectation {
  uint32_t line = 0;
  std::string rule;
  uint32_t col = 0;                   // 0: any column
  std::vector<std::string> keywords;  // each must appear in the message
};

// Parses the text after `expect:`; false (with *error) on a malformed expectation.
bool parse_expectations(const std::string& text, uint32_t line, std::vector<Expectation>* out, std::string* error) {
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == ',')) ++i;
  };
  size_t before = out->size();
  for (;;) {
    skip();
    if (i + 5 > text.size() || text.compare(i, 2, "LL") != 0 || !std::isdigit(static_cast<unsigned char>(text[i + 2])) ||
        !std::isdigit(static_cast<unsigned char>(text[i + 3])) || !std::isdigit(static_cast<unsigned char>(text[i + 4])))
      break;
    Expectation e;
    e.line = line;
    e.rule = text.substr(i, 5);
    i += 5;
    if (i < text.size() && text[i] == '@') {
      size_t j = ++i;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      if (j == i) {
        *error = "`@` must be followed by a column number";
        return false;
      }
      e.col = static_cast<uint32_t>(std::stoul(text.substr(i, j - i)));
      i = j;
    }
    for (;;) {
      size_t save = i;
      while (i < text.size() && text[i] == ' ') ++i;
      if (i >= text.size() || text[i] != '"') {
        i = save;
        break;
      }
      size_t close = text.find('"', i + 1);
      if (close == std::string::npos || close == i + 1) {
        *error = "unterminated or empty \"keyword\"";
        return false;
      }
      e.keywords.push_back(text.substr(i + 1, close - i - 1));
      i = close + 1;
    }
    out->push_back(std::move(e));
  }
  if (out->size() == before) {
    *error = "no rule ID after `expect:`";
    return false;
  }
  return true;
}

bool matches(const Expectation& e, const Finding& f) {
  if (e.line != f.range.line || e.rule != f.rule) return false;
  if (e.col && e.col != f.range.col) return false;
  for (const auto& k : e.keywords)
    if (f.message.find(k) == std::string::npos) return false;
  return true;
}

// The expectations of a fixture's text, and its `# fixture-config:` TOML.
bool read_fixture(const std::string& text, std::vector<Expectation>* expected, std::string* toml, std::string* error) {
  std::istringstream lines(text);
  std::string line;
  uint32_t no = 0;
  static const std::regex expect_re("#\\s*expect:(.*)$");
  while (std::getline(lines, line)) {
    ++no;
    std::smatch m;
    if (std::regex_search(line, m, expect_re)) {
      std::string err;
      if (!parse_expectations(m[1], no, expected, &err)) {
        *error = "line " + std::to_string(no) + ": " + err;
        return false;
      }
    }
    static const std::string cfg_prefix = "# fixture-config:";
    if (line.rfind(cfg_prefix, 0) == 0) *toml += line.substr(cfg_prefix.size()) + "\n";
  }
  return true;
}

}  // namespace ll::fixtures

using ll::fixtures::Expectation;

TEST(FixtureSyntax, ParsesRulesColumnsAndKeywords) {
  std::vector<Expectation> got;
  std::string err;
  const std::string text = " LL101@13 \"autograd enabled\" \"no_grad()\", LL102  trailing";
  const bool ok = ll::fixtures::parse_expectations(text, 7, &got, &err);
  ASSERT_TRUE(ok) << err;
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].rule, "LL101");
  EXPECT_EQ(got[0].col, 13u);
  EXPECT_EQ(got[0].keywords, (std::vector<std::string>{"autograd enabled", "no_grad()"}));
  EXPECT_EQ(got[1].rule, "LL102");
  EXPECT_EQ(got[1].col, 0u);
  EXPECT_TRUE(got[1].keywords.empty());
  got.clear();
  EXPECT_FALSE(ll::fixtures::parse_expectations(" LL101@ \"x\"", 1, &got, &err));
  EXPECT_FALSE(ll::fixtures::parse_expectations(" LL101 \"unterminated", 1, &got, &err));
  EXPECT_FALSE(ll::fixtures::parse_expectations(" nothing", 1, &got, &err));
}

TEST(FixtureSyntax, ColumnAndKeywordsMustMatch) {
  Finding f;
  f.rule = "LL101";
  f.range.line = 7;
  f.range.col = 13;
  f.message = "forward of `model` runs with autograd enabled";
  Expectation e{7, "LL101", 13, {"autograd enabled"}};
  EXPECT_TRUE(ll::fixtures::matches(e, f));
  e.col = 12;
  EXPECT_FALSE(ll::fixtures::matches(e, f));  // a wrong column fails
  e.col = 0;
  e.keywords = {"backward()"};
  EXPECT_FALSE(ll::fixtures::matches(e, f));  // a missing key word fails
}

TEST_P(Fixture, FindingsMatchExpectations) {
  const FixtureCase& fc = GetParam();
  std::string text = read(fc.file);
  std::vector<Expectation> expected;
  std::string toml, err;
  if (!ll::fixtures::read_fixture(text, &expected, &toml, &err)) FAIL() << fc.rel << ": bad expectation: " << err;
  Config cfg;
  if (auto e = parse_config(toml, false, cfg)) FAIL() << "bad fixture-config: " << *e;
  // The path as a user would pass it: relative to the rule's fixture folder, so that
  // `tests/test_x.py` inside it exercises the test-file semantics.
  std::string rel = fc.rel.substr(fc.rel.find('/') + 1);
  FileResult r = analyze_text(rel, text, cfg, EngineOptions{});
  for (const auto& d : r.diagnostics) ADD_FAILURE() << fc.rel << ":" << d.line << ": diagnostic: " << d.message;
  std::vector<bool> met(expected.size(), false);
  for (const auto& f : r.findings) {
    if (f.suppressed) continue;
    bool any_here = false, matched = false;
    for (size_t k = 0; k < expected.size(); ++k) {
      if (expected[k].line != f.range.line || expected[k].rule != f.rule) continue;
      any_here = true;
      if (ll::fixtures::matches(expected[k], f)) matched = met[k] = true;
    }
    if (!any_here)
      ADD_FAILURE() << fc.rel << ":" << f.range.line << ":" << f.range.col << ": unexpected " << f.rule << ": "
                    << f.message;
    else if (!matched)
      ADD_FAILURE() << fc.rel << ":" << f.range.line << ":" << f.range.col << ": " << f.rule
                    << " does not match its expectation (column or key words): " << f.message;
  }
  for (size_t k = 0; k < expected.size(); ++k)
    if (!met[k]) {
      const auto& e = expected[k];
      ADD_FAILURE() << fc.rel << ":" << e.line << (e.col ? ":" + std::to_string(e.col) : std::string()) << ": expected "
                    << e.rule << " but found none that matches";
    }
}

// Every rule pins the column and key words of its message in at least one fixture, so a
// finding that moves to the wrong place or says the wrong thing fails.
TEST(FixtureSyntax, EveryRuleFolderPinsAColumnAndKeywords) {
  std::map<std::string, bool> pinned;
  for (const FixtureCase& fc : discover_fixtures()) {
    const std::string rule = fc.rel.substr(0, fc.rel.find('/'));
    std::vector<Expectation> expected;
    std::string toml, err;
    if (!ll::fixtures::read_fixture(read(fc.file), &expected, &toml, &err)) continue;
    bool here = false;
    for (const auto& e : expected) here |= e.rule == rule && e.col > 0 && !e.keywords.empty();
    pinned[rule] = pinned[rule] || here;
  }
  ASSERT_FALSE(pinned.empty());
  for (const auto& [rule, ok] : pinned)
    EXPECT_TRUE(ok) << "no fixture of " << rule << " pins a column and message key words (# expect: " << rule
                    << "@COL \"words\")";
}

INSTANTIATE_TEST_SUITE_P(Rules, Fixture, ::testing::ValuesIn(discover_fixtures()),
                         [](const ::testing::TestParamInfo<FixtureCase>& info) {
                           std::string n = info.param.rel;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });
