// Configuration parsing, rule selection, config discovery, and the rule registry.
#include "rules/config.hpp"

#include <gtest/gtest.h>
#include <cstdlib>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rules/glob.hpp"
#include "rules/registry.hpp"

namespace ll {
namespace {

namespace fs = std::filesystem;

// A scratch directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "leaklint-config-XXXXXX").string();
    if (mkdtemp(tmpl.data()) != nullptr) path_ = fs::path(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }
  std::string str(const std::string& rel = "") const {
    return rel.empty() ? path_.string() : (path_ / rel).string();
  }
  void write(const std::string& rel, const std::string& text) const {
    const fs::path p = path_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
  }

 private:
  fs::path path_;
};

Config parsed(const std::string& text, bool pyproject = false) {
  Config c;
  const auto err = parse_config(text, pyproject, c);
  EXPECT_FALSE(err.has_value()) << *err;
  return c;
}

std::string error_of(const std::string& text, bool pyproject = false) {
  Config c;
  const auto err = parse_config(text, pyproject, c);
  return err.value_or("");
}

// ---- parsing ---------------------------------------------------------------------------

TEST(ConfigParse, Defaults) {
  const Config c;
  EXPECT_EQ(c.select, std::vector<std::string>{"LL"});
  EXPECT_TRUE(c.ignore.empty());
  EXPECT_EQ(c.max_workers, 8);
  EXPECT_EQ(c.max_inflight_batches, 32);
  EXPECT_EQ(c.torch_major, 2);
  for (const RuleInfo& r : all_rules()) EXPECT_TRUE(c.enabled(std::string(r.id), "x.py"));
}

TEST(ConfigParse, AllKeys) {
  const Config c = parsed(R"(
select = ["LL1", "LL4"]
ignore = ["LL104"]
extend-select = ["LL501"]
max-workers = 4
max-inflight-batches = 16
assume-dataloader-workers = true
eval-function-names = ["score"]
eval-loader-names = ["holdout"]
model-names = ["policy", "critic"]
torch-version = "1.13"

[per-file-ignores]
"tests/**" = ["LL101"]
"legacy_*.py" = ["ALL"]

[severity]
LL101 = "error"
LL4 = "note"
)");
  EXPECT_EQ(c.select, (std::vector<std::string>{"LL1", "LL4", "LL501"}));
  EXPECT_EQ(c.ignore, std::vector<std::string>{"LL104"});
  EXPECT_EQ(c.max_workers, 4);
  EXPECT_EQ(c.max_inflight_batches, 16);
  EXPECT_TRUE(c.assume_dataloader_workers);
  EXPECT_EQ(c.eval_function_names, std::vector<std::string>{"score"});
  EXPECT_EQ(c.eval_loader_names, std::vector<std::string>{"holdout"});
  EXPECT_EQ(c.model_names, (std::vector<std::string>{"policy", "critic"}));
  EXPECT_EQ(c.torch_major, 1);
  EXPECT_EQ(c.torch_minor, 13);
  ASSERT_EQ(c.per_file_ignores.size(), 2U);
  const std::map<std::string, std::vector<std::string>> pfi(c.per_file_ignores.begin(),
                                                            c.per_file_ignores.end());
  EXPECT_EQ(pfi.at("tests/**"), std::vector<std::string>{"LL101"});
  EXPECT_EQ(pfi.at("legacy_*.py"), std::vector<std::string>{"ALL"});
  EXPECT_EQ(c.severity.at("LL101"), Severity::Error);
  EXPECT_EQ(c.severity_of("LL101", Severity::Warning), Severity::Error);
  EXPECT_EQ(c.severity_of("LL402", Severity::Warning), Severity::Note);
  EXPECT_EQ(c.severity_of("LL201", Severity::Error), Severity::Error);
}

TEST(ConfigParse, DottedSeverityKeys) {
  Config c = parsed("severity.LL101 = \"note\"\nseverity.LL303 = \"warning\"\n");
  EXPECT_EQ(c.severity_of("LL101", Severity::Warning), Severity::Note);
  EXPECT_EQ(c.severity_of("LL303", Severity::Note), Severity::Warning);
  c = parsed("\"severity.LL102\" = \"warning\"\n");
  EXPECT_EQ(c.severity_of("LL102", Severity::Error), Severity::Warning);
  c = parsed("[tool.leaklint]\nseverity.LL101 = \"note\"\n", true);
  EXPECT_EQ(c.severity_of("LL101", Severity::Warning), Severity::Note);
  c = parsed("[tool.leaklint.severity]\nLL102 = \"note\"\n", true);
  EXPECT_EQ(c.severity_of("LL102", Severity::Error), Severity::Note);
}

TEST(ConfigParse, MostSpecificSeverityWins) {
  const Config c = parsed("[severity]\nALL = \"note\"\nLL1 = \"warning\"\nLL102 = \"error\"\n");
  EXPECT_EQ(c.severity_of("LL102", Severity::Note), Severity::Error);
  EXPECT_EQ(c.severity_of("LL101", Severity::Note), Severity::Warning);
  EXPECT_EQ(c.severity_of("LL501", Severity::Error), Severity::Note);
}

TEST(ConfigParse, PyprojectTable) {
  const Config c = parsed("[project]\nname = \"x\"\n[tool.leaklint]\nselect = [\"LL2\"]\n", true);
  EXPECT_EQ(c.select, std::vector<std::string>{"LL2"});
  // Without the table nothing changes and nothing is wrong.
  const Config d = parsed("[project]\nname = \"x\"\n[tool.ruff]\nline-length = 100\n", true);
  EXPECT_EQ(d.select, std::vector<std::string>{"LL"});
  // Other tools' keys are not ours to judge.
  EXPECT_EQ(error_of("[tool.other]\nbogus = 1\n", true), "");
}

TEST(ConfigParse, UnknownKeysAreNamed) {
  EXPECT_NE(error_of("selct = [\"LL1\"]\n").find("`selct`"), std::string::npos);
  // Typos get the closest known key; a word far from every key gets no guess.
  EXPECT_NE(error_of("selct = [\"LL1\"]\n").find("did you mean `select`?"), std::string::npos);
  EXPECT_NE(error_of("ignroe = [\"LL1\"]\n").find("did you mean `ignore`?"), std::string::npos);
  EXPECT_NE(error_of("max-worker = 3\n").find("did you mean `max-workers`?"), std::string::npos);
  EXPECT_NE(error_of("eval_loader_name = [\"x\"]\n").find("did you mean `eval-loader-names`?"), std::string::npos);
  EXPECT_EQ(error_of("colour = \"red\"\n").find("did you mean"), std::string::npos);
  const std::string e = error_of("[tool.leaklint]\nmax_workers = 3\n", true);
  EXPECT_NE(e.find("`max_workers`"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean `max-workers`"), std::string::npos) << e;
  EXPECT_NE(e.find("[tool.leaklint]"), std::string::npos) << e;
}

TEST(ConfigParse, WrongTypesAreErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"max-workers = \"8\"", "`max-workers`"},
      {"max-workers = -1", "`max-workers`"},
      {"select = \"LL1\"", "`select`"},
      {"select = [1]", "`select`"},
      {"ignore = [\"LL9\"]", "`LL9`"},
      {"select = [\"E501\"]", "`E501`"},
      {"assume-dataloader-workers = 1", "`assume-dataloader-workers`"},
      {"eval-function-names = \"evaluate\"", "`eval-function-names`"},
      {"per-file-ignores = [\"a\"]", "`per-file-ignores`"},
      {"[per-file-ignores]\n\"a.py\" = \"LL1\"", "per-file-ignores.a.py"},
      {"[severity]\nLL101 = \"fatal\"", "`severity.LL101`"},
      {"[severity]\nLL999 = \"error\"", "`LL999`"},
      {"severity = \"error\"", "`severity`"},
      {"torch-version = 2.1", "`torch-version`"},
      {"torch-version = \"two\"", "`torch-version`"},
      {"torch-version = \"2.\"", "`torch-version`"},
  };
  for (const auto& [text, needle] : cases) {
    const std::string e = error_of(text);
    EXPECT_NE(e.find(needle), std::string::npos) << text << " -> " << e;
  }
  EXPECT_NE(error_of("[tool]\nleaklint = 3\n", true).find("[tool.leaklint]"), std::string::npos);
}

TEST(ConfigParse, ErrorsLeaveTheConfigUntouched) {
  Config c;
  c.max_workers = 5;
  EXPECT_TRUE(parse_config("max-workers = 3\nbogus = 1\n", false, c).has_value());
  EXPECT_EQ(c.max_workers, 5);
}

TEST(ConfigParse, TomlSyntaxErrorIsReportedNotThrown) {
  std::string e;
  EXPECT_NO_THROW(e = error_of("select = [\"LL1\"\nignore = ]\n"));
  EXPECT_NE(e.find("TOML parse error at line"), std::string::npos) << e;
  EXPECT_NO_THROW(e = error_of(std::string("a = \"\xff\"\n")));
  EXPECT_FALSE(e.empty());
}

TEST(ConfigParse, TorchVersions) {
  const std::tuple<const char*, int, int> cases[] = {
      {"torch-version = \"2.1\"", 2, 1},
      {"torch-version = \"1.13\"", 1, 13},
      {"torch-version = \"2.1.0+cu121\"", 2, 1},
      {"torch-version = \"2\"", 2, 0},
      {"torch-version = 1", 1, 0},
  };
  for (const auto& [text, major, minor] : cases) {
    const Config c = parsed(text);
    EXPECT_EQ(c.torch_major, major) << text;
    EXPECT_EQ(c.torch_minor, minor) << text;
  }
}

// ---- selection -------------------------------------------------------------------------

TEST(ConfigSelect, RuleMatches) {
  EXPECT_TRUE(rule_matches("LL401", "LL4"));
  EXPECT_TRUE(rule_matches("LL401", "LL"));
  EXPECT_TRUE(rule_matches("LL401", "LL401"));
  EXPECT_TRUE(rule_matches("LL401", "ALL"));
  EXPECT_FALSE(rule_matches("LL401", "LL40 "));
  EXPECT_FALSE(rule_matches("LL401", "LL5"));
  EXPECT_FALSE(rule_matches("LL401", ""));
  EXPECT_FALSE(rule_matches("LL4", "LL401"));
  EXPECT_TRUE(is_valid_selector("LL4"));
  EXPECT_TRUE(is_valid_selector("ALL"));
  EXPECT_FALSE(is_valid_selector("LL9"));
  EXPECT_FALSE(is_valid_selector("L"));
  EXPECT_FALSE(is_valid_selector("ll101"));
}

TEST(ConfigSelect, MostSpecificSelectorWins) {
  Config c;
  c.select = {"LL"};
  c.ignore = {"LL4"};
  EXPECT_FALSE(c.enabled("LL401", "a.py"));
  EXPECT_TRUE(c.enabled("LL101", "a.py"));

  c.select = {"LL401"};
  c.ignore = {"LL4"};
  EXPECT_TRUE(c.enabled("LL401", "a.py"));  // more specific than the ignore
  EXPECT_FALSE(c.enabled("LL402", "a.py"));
  EXPECT_FALSE(c.enabled("LL101", "a.py"));  // not selected at all

  c.select = {"ALL"};
  c.ignore = {"LL"};
  EXPECT_FALSE(c.enabled("LL101", "a.py"));

  // `ignore = ["ALL"]` turns the default selection ("LL", every rule) off, as in ruff ...
  c.select = {"LL"};
  c.ignore = {"ALL"};
  EXPECT_FALSE(c.enabled("LL101", "a.py"));
  EXPECT_FALSE(c.enabled("LL502", "a.py"));
  // ... and a more specific select still wins over it.
  c.select = {"LL1"};
  EXPECT_TRUE(c.enabled("LL101", "a.py"));
  EXPECT_FALSE(c.enabled("LL201", "a.py"));

  c.select = {"LL", "LL401"};
  c.ignore = {"LL4"};
  EXPECT_TRUE(c.enabled("LL401", "a.py"));
  EXPECT_FALSE(c.enabled("LL402", "a.py"));
  EXPECT_TRUE(c.enabled("LL501", "a.py"));

  c.select = {"LL4"};
  c.ignore = {"LL4"};
  EXPECT_FALSE(c.enabled("LL401", "a.py"));  // equally specific: ignore wins

  c.select = {};
  c.ignore = {};
  EXPECT_FALSE(c.enabled("LL101", "a.py"));
}

TEST(ConfigSelect, PerFileIgnores) {
  Config c;
  c.root = "/proj";
  c.per_file_ignores = {
      {"tests/**", {"LL101"}},
      {"*_test.py", {"LL1"}},
      {"legacy", {"ALL"}},
      {"scripts/*.py", {"LL5"}},
      {"gen/", {"LL4"}},
  };
  EXPECT_FALSE(c.enabled("LL101", "/proj/tests/unit/test_a.py"));
  EXPECT_TRUE(c.enabled("LL102", "/proj/tests/unit/test_a.py"));
  EXPECT_FALSE(c.enabled("LL103", "/proj/src/deep/x_test.py"));  // basename glob, any depth
  EXPECT_TRUE(c.enabled("LL201", "/proj/src/deep/x_test.py"));
  EXPECT_FALSE(c.enabled("LL401", "/proj/legacy/old/m.py"));     // a directory covers its tree
  EXPECT_TRUE(c.enabled("LL401", "/proj/src/legacy_m.py"));
  EXPECT_FALSE(c.enabled("LL501", "/proj/scripts/run.py"));
  EXPECT_TRUE(c.enabled("LL501", "/proj/scripts/sub/run.py"));   // `*` does not cross `/`
  EXPECT_TRUE(c.enabled("LL501", "/proj/src/scripts/run.py"));   // anchored at the root
  EXPECT_FALSE(c.enabled("LL402", "/proj/gen/a.py"));
  EXPECT_TRUE(c.enabled("LL101", "/other/tests/a.py"));          // outside the config's tree
}

TEST(ConfigSelect, PerFileIgnoresResolveRelativePaths) {
  TempDir tmp;
  const fs::path old = fs::current_path();
  fs::current_path(tmp.path());
  Config c;
  c.root = tmp.str();
  c.per_file_ignores = {{"tests/*.py", {"LL1"}}};
  EXPECT_FALSE(c.enabled("LL101", "tests/a.py"));
  EXPECT_FALSE(c.enabled("LL101", "./tests/../tests/a.py"));
  EXPECT_TRUE(c.enabled("LL101", "src/a.py"));
  fs::current_path(old);
}

// ---- discovery of config files ---------------------------------------------------------

TEST(ConfigResolve, NearestConfigWins) {
  TempDir tmp;
  tmp.write("a/.leaklint.toml", "select = [\"LL1\"]\n");
  tmp.write("a/b/pyproject.toml", "[tool.leaklint]\nselect = [\"LL2\"]\n");
  tmp.write("a/b/c/pyproject.toml", "[project]\nname = \"no-leaklint-table\"\n");
  tmp.write("a/b/c/d/x.py", "");
  ConfigResolver resolver("", {}, {});
  std::string err;
  auto deep = resolver.for_file(tmp.str("a/b/c/d/x.py"), &err);
  EXPECT_EQ(err, "");
  EXPECT_EQ(deep->select, std::vector<std::string>{"LL2"});
  EXPECT_EQ(fs::path(deep->source).filename(), "pyproject.toml");
  EXPECT_EQ(fs::path(deep->root), fs::path(tmp.str("a/b")));
  auto top = resolver.for_file(tmp.str("a/y.py"), &err);
  EXPECT_EQ(top->select, std::vector<std::string>{"LL1"});
  auto outside = resolver.for_file(tmp.str("z.py"), &err);
  EXPECT_EQ(outside->select, std::vector<std::string>{"LL"});
  EXPECT_EQ(outside->source, "");
  // Cached per directory: the same object comes back.
  EXPECT_EQ(resolver.for_file(tmp.str("a/b/c/d/other.py"), &err), deep);
  EXPECT_EQ(resolver.for_file(tmp.str("a/b/c/sibling.py"), &err), deep);
}

TEST(ConfigResolve, DotLeaklintBeatsPyprojectInTheSameDirectory) {
  TempDir tmp;
  tmp.write(".leaklint.toml", "select = [\"LL3\"]\n");
  tmp.write("pyproject.toml", "[tool.leaklint]\nselect = [\"LL2\"]\n");
  ConfigResolver resolver("", {}, {});
  std::string err;
  EXPECT_EQ(resolver.for_file(tmp.str("m.py"), &err)->select, std::vector<std::string>{"LL3"});
}

TEST(ConfigResolve, RelativePaths) {
  TempDir tmp;
  tmp.write("pkg/.leaklint.toml", "ignore = [\"LL3\"]\n");
  const fs::path old = fs::current_path();
  fs::current_path(tmp.path());
  ConfigResolver resolver("", {}, {});
  std::string err;
  auto c = resolver.for_file("pkg/mod.py", &err);
  EXPECT_EQ(c->ignore, std::vector<std::string>{"LL3"});
  fs::current_path(old);
}

TEST(ConfigResolve, CommandLineOverrides) {
  TempDir tmp;
  tmp.write(".leaklint.toml", "select = [\"LL1\"]\nignore = [\"LL102\"]\n");
  ConfigResolver resolver("", {"LL4"}, {"LL401"});
  ASSERT_FALSE(resolver.load_error().has_value());
  std::string err;
  auto c = resolver.for_file(tmp.str("m.py"), &err);
  EXPECT_EQ(c->select, std::vector<std::string>{"LL4"});  // --select replaces
  EXPECT_EQ(c->ignore, (std::vector<std::string>{"LL102", "LL401"}));  // --ignore adds
  EXPECT_FALSE(c->enabled("LL401", tmp.str("m.py")));
  EXPECT_TRUE(c->enabled("LL402", tmp.str("m.py")));
  EXPECT_FALSE(c->enabled("LL101", tmp.str("m.py")));
  // Defaults get the overrides too.
  TempDir empty;
  auto d = resolver.for_file(empty.str("x.py"), &err);
  EXPECT_EQ(d->select, std::vector<std::string>{"LL4"});
}

TEST(ConfigResolve, InvalidCommandLineSelector) {
  ConfigResolver resolver("", {"LL9"}, {});
  ASSERT_TRUE(resolver.load_error().has_value());
  EXPECT_NE(resolver.load_error()->find("--select"), std::string::npos);
  ConfigResolver r2("", {}, {"nope"});
  ASSERT_TRUE(r2.load_error().has_value());
  EXPECT_NE(r2.load_error()->find("--ignore"), std::string::npos);
}

TEST(ConfigResolve, ErrorsNameTheFileAndFallBackToDefaults) {
  TempDir tmp;
  tmp.write("bad/.leaklint.toml", "select = [\"LL1\"]\nunknown-thing = 1\n");
  ConfigResolver resolver("", {}, {});
  std::string err;
  auto c = resolver.for_file(tmp.str("bad/m.py"), &err);
  EXPECT_NE(err.find(".leaklint.toml"), std::string::npos) << err;
  EXPECT_NE(err.find("`unknown-thing`"), std::string::npos) << err;
  EXPECT_EQ(c->select, std::vector<std::string>{"LL"});
  // Reported again for every file it governs.
  std::string again;
  resolver.for_file(tmp.str("bad/sub/n.py"), &again);
  EXPECT_EQ(again, err);
}

TEST(ConfigResolve, BrokenPyprojectWithoutLeaklintIsSkipped) {
  TempDir tmp;
  tmp.write(".leaklint.toml", "select = [\"LL5\"]\n");
  tmp.write("sub/pyproject.toml", "[project\nname = 1\n");  // not TOML, not ours
  tmp.write("sub2/pyproject.toml", "[tool.leaklint\nselect = 1\n");  // not TOML, ours
  ConfigResolver resolver("", {}, {});
  std::string err;
  EXPECT_EQ(resolver.for_file(tmp.str("sub/m.py"), &err)->select, std::vector<std::string>{"LL5"});
  EXPECT_EQ(err, "");
  resolver.for_file(tmp.str("sub2/m.py"), &err);
  EXPECT_NE(err.find("TOML parse error"), std::string::npos) << err;
}

TEST(ConfigResolve, ExplicitConfigFile) {
  TempDir tmp;
  tmp.write("cfg/custom.toml", "select = [\"LL2\"]\n[per-file-ignores]\n\"x.py\" = [\"LL201\"]\n");
  tmp.write("src/.leaklint.toml", "select = [\"LL1\"]\n");
  ConfigResolver resolver(tmp.str("cfg/custom.toml"), {}, {});
  ASSERT_FALSE(resolver.load_error().has_value()) << *resolver.load_error();
  std::string err;
  auto c = resolver.for_file(tmp.str("src/m.py"), &err);
  EXPECT_EQ(c->select, std::vector<std::string>{"LL2"});  // used for every file
  EXPECT_FALSE(c->enabled("LL201", tmp.str("cfg/x.py")));

  ConfigResolver missing(tmp.str("nope.toml"), {}, {});
  EXPECT_TRUE(missing.load_error().has_value());
  tmp.write("cfg/pyproject.toml", "[tool.leaklint]\nmax-workers = \"x\"\n");
  ConfigResolver bad(tmp.str("cfg/pyproject.toml"), {}, {});
  ASSERT_TRUE(bad.load_error().has_value());
  EXPECT_NE(bad.load_error()->find("`max-workers`"), std::string::npos);
  err.clear();
  bad.for_file(tmp.str("src/m.py"), &err);
  EXPECT_FALSE(err.empty());
}

TEST(ConfigResolve, ThreadSafe) {
  TempDir tmp;
  for (int i = 0; i < 8; ++i) {
    tmp.write("d" + std::to_string(i) + "/.leaklint.toml",
              "max-workers = " + std::to_string(i) + "\n");
  }
  ConfigResolver resolver("", {}, {});
  std::vector<std::thread> threads;
  threads.reserve(8);
  std::vector<int> bad(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < 200; ++k) {
        const int i = (t + k) % 8;
        std::string err;
        auto c = resolver.for_file(tmp.str("d" + std::to_string(i) + "/s" + std::to_string(k % 5) + "/f.py"), &err);
        if (c->max_workers != i || !err.empty()) ++bad[static_cast<std::size_t>(t)];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (const int b : bad) EXPECT_EQ(b, 0);
}

// ---- registry --------------------------------------------------------------------------

TEST(Registry, CatalogMatchesTheSpec) {
  const auto& rules = all_rules();
  ASSERT_EQ(rules.size(), 22U);
  std::set<std::string_view> ids, slugs;
  for (const RuleInfo& r : rules) {
    ids.insert(r.id);
    slugs.insert(r.slug);
    EXPECT_FALSE(r.summary.empty());
    EXPECT_EQ(r.summary.find('\n'), std::string_view::npos);
    EXPECT_TRUE(r.fix.empty() || r.fix == "safe" || r.fix == "unsafe");
  }
  EXPECT_EQ(ids.size(), 22U);
  EXPECT_EQ(slugs.size(), 22U);
  const RuleInfo* r = find_rule("LL104");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->slug, "grad-mode-not-called");
  EXPECT_EQ(r->severity, Severity::Error);
  EXPECT_EQ(r->fix, "safe");
  EXPECT_EQ(find_rule("missing-no-grad"), rules.data());
  EXPECT_EQ(find_rule("ll303")->severity, Severity::Note);
  EXPECT_EQ(find_rule("LL999"), nullptr);
  EXPECT_EQ(find_rule("LL101")->fix, "unsafe");
  EXPECT_EQ(find_rule("LL501")->fix, "unsafe");
  EXPECT_EQ(find_rule("LL201")->fix, "");
  EXPECT_STREQ(severity_name(Severity::Note), "note");
  EXPECT_STREQ(severity_name(Severity::Warning), "warning");
  EXPECT_STREQ(severity_name(Severity::Error), "error");
}

TEST(Registry, DescriptionsAndHelp) {
  for (const RuleInfo& r : all_rules()) {
    const std::string short_desc = rule_short_description(r.id);
    const std::string full = rule_full_description(r.id);
    EXPECT_FALSE(short_desc.empty()) << r.id;
    EXPECT_FALSE(full.empty()) << r.id;
    EXPECT_LE(full.size(), 1024U) << r.id;
    EXPECT_EQ(short_desc.find('\n'), std::string::npos) << r.id;
    if (rule_doc(r.id).empty()) {
      EXPECT_EQ(short_desc, r.summary) << r.id;
    } else {
      EXPECT_NE(rule_doc(r.id).find("## What it does"), std::string_view::npos) << r.id;
      // The first sentence opens the first paragraph.
      EXPECT_EQ(full.rfind(short_desc, 0), 0U) << r.id << ": " << short_desc << " | " << full;
      const char last = short_desc.back();
      EXPECT_TRUE(last == '.' || last == '!' || last == '?' || short_desc == r.summary)
          << r.id << ": " << short_desc;
    }
    EXPECT_EQ(rule_help_uri(r.id), "https://github.com/leaklint/leaklint/blob/main/docs/rules/" +
                                       std::string(r.id) + "-" + std::string(r.slug) + ".md");
  }
  EXPECT_TRUE(rule_doc("LL999").empty());
}

// ---- globs -----------------------------------------------------------------------------

TEST(Glob, Wildmatch) {
  EXPECT_TRUE(glob_match("*.py", "a.py"));
  EXPECT_FALSE(glob_match("*.py", "d/a.py"));
  EXPECT_TRUE(glob_match("**/a.py", "a.py"));
  EXPECT_TRUE(glob_match("**/a.py", "x/y/a.py"));
  EXPECT_TRUE(glob_match("a/**", "a/b/c"));
  EXPECT_FALSE(glob_match("a/**", "a"));
  EXPECT_TRUE(glob_match("a/**/b", "a/b"));
  EXPECT_TRUE(glob_match("a/**/b", "a/x/y/b"));
  EXPECT_FALSE(glob_match("a/**/b", "a/xb"));
  EXPECT_TRUE(glob_match("**", "x/y"));
  EXPECT_TRUE(glob_match("a**b", "axxb"));  // not a whole component: like `*`
  EXPECT_FALSE(glob_match("a**b", "a/b"));
  EXPECT_TRUE(glob_match("data?.py", "data1.py"));
  EXPECT_FALSE(glob_match("data?.py", "data12.py"));
  EXPECT_FALSE(glob_match("a?b", "a/b"));
  EXPECT_TRUE(glob_match("[abc]x", "bx"));
  EXPECT_FALSE(glob_match("[!abc]x", "bx"));
  EXPECT_TRUE(glob_match("[^abc]x", "dx"));
  EXPECT_TRUE(glob_match("[a-c]x", "cx"));
  EXPECT_TRUE(glob_match("[]]", "]"));
  EXPECT_TRUE(glob_match("[[:digit:]]*", "7up"));
  EXPECT_FALSE(glob_match("[[:digit:]]*", "up"));
  EXPECT_TRUE(glob_match("\\*.py", "*.py"));
  EXPECT_FALSE(glob_match("\\*.py", "a.py"));
  EXPECT_TRUE(glob_match("[ab", "[ab"));  // an unclosed class is literal
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_FALSE(glob_match("", "a"));
  EXPECT_TRUE(glob_match("a*b*c*d", "aXXbYYcZZd"));
  EXPECT_FALSE(glob_match("a*b*c*d", "aXXbYYcZZ"));
}

}  // namespace
}  // namespace ll
