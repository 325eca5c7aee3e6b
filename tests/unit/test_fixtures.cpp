// The fixture runner: every tests/fixtures/<ID>/**/*.py declares its expected findings as
// `# expect: LL101` comments on the flagged line; any missing or unexpected finding fails.
// `# fixture-config: key = value` lines configure the file ([tool.leaklint] TOML lines).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
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

TEST_P(Fixture, FindingsMatchExpectations) {
  const FixtureCase& fc = GetParam();
  std::string text = read(fc.file);
  std::set<std::pair<uint32_t, std::string>> expected;
  std::string toml;
  static const std::regex expect_re("#\\s*expect:\\s*((?:LL\\d{3}[ ,]*)+)");
  static const std::regex id_re("LL\\d{3}");
  std::istringstream lines(text);
  std::string line;
  uint32_t no = 0;
  while (std::getline(lines, line)) {
    ++no;
    std::smatch m;
    if (std::regex_search(line, m, expect_re)) {
      std::string ids = m[1];
      for (std::sregex_iterator it(ids.begin(), ids.end(), id_re), end; it != end; ++it)
        expected.insert({no, it->str()});
    }
    static const std::string cfg_prefix = "# fixture-config:";
    if (line.rfind(cfg_prefix, 0) == 0) toml += line.substr(cfg_prefix.size()) + "\n";
  }
  Config cfg;
  if (auto err = parse_config(toml, false, cfg)) FAIL() << "bad fixture-config: " << *err;
  // The path as a user would pass it: relative to the rule's fixture folder, so that
  // `tests/test_x.py` inside it exercises the test-file semantics.
  std::string rel = fc.rel.substr(fc.rel.find('/') + 1);
  FileResult r = analyze_text(rel, text, cfg, EngineOptions{});
  for (const auto& d : r.diagnostics) ADD_FAILURE() << fc.rel << ":" << d.line << ": diagnostic: " << d.message;
  std::set<std::pair<uint32_t, std::string>> got;
  for (const auto& f : r.findings) {
    if (f.suppressed) continue;
    got.insert({f.range.line, f.rule});
    if (!expected.count({f.range.line, f.rule}))
      ADD_FAILURE() << fc.rel << ":" << f.range.line << ":" << f.range.col << ": unexpected " << f.rule << ": "
                    << f.message;
  }
  for (const auto& [l, rule] : expected)
    if (!got.count({l, rule})) ADD_FAILURE() << fc.rel << ":" << l << ": expected " << rule << " but found none";
}

INSTANTIATE_TEST_SUITE_P(Rules, Fixture, ::testing::ValuesIn(discover_fixtures()),
                         [](const ::testing::TestParamInfo<FixtureCase>& info) {
                           std::string n = info.param.rel;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });
