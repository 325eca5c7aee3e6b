// Reporter tests: golden files for text/json/github, structural checks for SARIF.
#include "cli/report.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "rules/registry.hpp"

#ifndef LEAKLINT_SOURCE_DIR
#error "LEAKLINT_SOURCE_DIR must point at the source tree (for tests/golden)"
#endif

namespace ll {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The range of the first `needle` on 1-based `line` of `src` (byte columns, end exclusive).
Range range_of(const std::string& src, uint32_t line, const std::string& needle) {
  std::size_t start = 0;
  for (uint32_t l = 1; l < line; ++l) start = src.find('\n', start) + 1;
  const std::size_t at = src.find(needle, start);
  Range r;
  r.line = r.end_line = line;
  r.col = static_cast<uint32_t>(at - start + 1);
  r.end_col = static_cast<uint32_t>(r.col + needle.size());
  r.begin = static_cast<uint32_t>(at);
  r.end = static_cast<uint32_t>(at + needle.size());
  return r;
}

Finding make_finding(const std::string& rule, Severity sev, const std::string& path, Range r,
                     const std::string& message) {
  Finding f;
  f.rule = rule;
  f.severity = sev;
  f.path = path;
  f.range = r;
  f.message = message;
  return f;
}

const char* const kTrainPy =
    "import torch\n"
    "\n"
    "def evaluate(model, val_loader):\n"
    "    model.eval()\n"
    "    total = 0\n"
    "    for x, y in val_loader:\n"
    "        out = model(x)\n"
    "        total += out.sum()\n"
    "        torch.cuda.empty_cache()  # leaklint: ignore[LL303]\n"
    "    return total\n"
    "\n"
    "with torch.no_grad:\n"
    "\tpass\n";

const char* const kUnicodePy = "x = \"\xF0\x9F\x98\x80\xE4\xB8\xAD\" + model(y)\n";

const char* const kModelCpp =
    "void run(torch::jit::Module& m, std::vector<torch::Tensor>& xs) {\n"
    "  torch::Tensor total = torch::zeros({});\n"
    "  for (auto& x : xs) {\n"
    "\ttotal += m.forward({x}).toTensor().sum();\n"
    "    c10::cuda::CUDACachingAllocator::emptyCache();\n"
    "  }\n"
    "}\n";

// A run over five files: findings with notes and fixes, a suppressed finding, non-ASCII
// text, a non-fatal syntax error and a file that could not be read.
std::vector<FileResult> sample_results() {
  std::vector<FileResult> results;

  FileResult cpp;
  cpp.path = "lib/model.cpp";
  cpp.source = kModelCpp;
  {
    Finding f = make_finding("LL102", Severity::Error, cpp.path,
                             range_of(cpp.source, 4, "total += m.forward({x}).toTensor().sum()"),
                             "`total` accumulates a tensor that carries autograd history; every "
                             "iteration's graph stays alive until `total` dies");
    f.notes.push_back({range_of(cpp.source, 2, "total"), "`total` is declared outside the loop"});
    f.low_confidence = true;
    cpp.findings.push_back(f);
    cpp.findings.push_back(make_finding(
        "LL303", Severity::Note, cpp.path,
        range_of(cpp.source, 5, "c10::cuda::CUDACachingAllocator::emptyCache()"),
        "emptyCache() on every batch returns cached blocks only to request them again"));
  }
  results.push_back(cpp);

  FileResult broken;
  broken.path = "src/broken.py";
  broken.source = "def f(:\n    return 1\n";
  broken.diagnostics.push_back({broken.path, "syntax-error", "invalid syntax", 1, 7, false});
  results.push_back(broken);

  FileResult missing;
  missing.path = "src/missing.py";
  missing.diagnostics.push_back(
      {missing.path, "io-error", "cannot read file: Permission denied", 0, 0, true});
  results.push_back(missing);

  FileResult train;
  train.path = "src/train.py";
  train.source = kTrainPy;
  {
    Finding f = make_finding("LL101", Severity::Warning, train.path,
                             range_of(train.source, 7, "model(x)"),
                             "forward pass in an evaluation loop runs with grad enabled: "
                             "activations are kept for a backward pass that never comes");
    f.notes.push_back({range_of(train.source, 4, "model.eval()"), "model.eval() called here"});
    Fix fix;
    fix.title = "Decorate `evaluate` with `@torch.no_grad()`";
    fix.safe = false;
    const Range def = range_of(train.source, 3, "def evaluate");
    fix.edits.push_back({def.begin, def.begin, "@torch.no_grad()\n"});
    f.fixes.push_back(fix);
    train.findings.push_back(f);
  }
  {
    Finding f = make_finding("LL102", Severity::Error, train.path,
                             range_of(train.source, 8, "total += out.sum()"),
                             "`total` accumulates a tensor that carries autograd history");
    Fix fix;
    fix.title = "Use `.item()`";
    fix.safe = false;
    const Range sum = range_of(train.source, 8, "out.sum()");
    fix.edits.push_back({sum.end, sum.end, ".item()"});
    f.fixes.push_back(fix);
    train.findings.push_back(f);
  }
  {
    Finding f = make_finding("LL303", Severity::Note, train.path,
                             range_of(train.source, 9, "torch.cuda.empty_cache()"),
                             "empty_cache() on every batch");
    f.suppressed = true;
    f.suppression = "# leaklint: ignore[LL303]";
    train.findings.push_back(f);
  }
  {
    Finding f = make_finding("LL104", Severity::Error, train.path,
                             range_of(train.source, 12, "torch.no_grad"),
                             "`torch.no_grad` is used without calling it: entering the block "
                             "raises an error");
    Fix fix;
    fix.title = "Add `()` to call torch.no_grad";
    fix.safe = true;
    const Range r = range_of(train.source, 12, "torch.no_grad");
    fix.edits.push_back({r.end, r.end, "()"});
    f.fixes.push_back(fix);
    train.findings.push_back(f);
  }
  results.push_back(train);

  FileResult uni;
  uni.path = "src/\xC3\xBCn\xC3\xAF code.py";
  uni.source = kUnicodePy;
  uni.findings.push_back(make_finding("LL101", Severity::Warning, uni.path,
                                      range_of(uni.source, 1, "model(y)"),
                                      "forward pass with grad enabled"));
  results.push_back(uni);
  return results;
}

std::string render(const std::vector<FileResult>& results, const ReportOptions& opts) {
  std::ostringstream out;
  write_report(out, results, opts);
  return out.str();
}

std::string golden_path(const std::string& name) {
  return std::string(LEAKLINT_SOURCE_DIR) + "/tests/golden/" + name;
}

// Compares with tests/golden/<name>. LEAKLINT_UPDATE_GOLDEN=1 rewrites a differing file
// and still fails the test, so an update can never pass unnoticed; run again without it.
void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = golden_path(name);
  if (std::getenv("LEAKLINT_UPDATE_GOLDEN") != nullptr) {
    std::ifstream old(path, std::ios::binary);
    std::stringstream before;
    before << old.rdbuf();
    if (!old || before.str() != actual) {
      std::ofstream(path, std::ios::binary) << actual;
      ADD_FAILURE() << "golden file rewritten: " << path << " (review it, then run again without LEAKLINT_UPDATE_GOLDEN)";
    }
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path
                  << " (run with LEAKLINT_UPDATE_GOLDEN=1 to create it)";
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "golden mismatch: " << path;
}

ReportOptions options(const std::string& format) {
  ReportOptions o;
  o.format = format;
  o.version = "0.0.0-test";
  return o;
}

// ---- text ------------------------------------------------------------------------------

TEST(ReportText, Golden) { expect_golden("report.txt", render(sample_results(), options("text"))); }

TEST(ReportText, GoldenColor) {
  ReportOptions o = options("text");
  o.color = true;
  expect_golden("report_color.txt", render(sample_results(), o));
}

TEST(ReportText, NoColorEscapesUnlessAsked) {
  EXPECT_EQ(render(sample_results(), options("text")).find('\x1b'), std::string::npos);
}

TEST(ReportText, WithoutSourceHasNoSnippets) {
  ReportOptions o = options("text");
  o.show_source = false;
  const std::string text = render(sample_results(), o);
  EXPECT_EQ(text.find('^'), std::string::npos);
  EXPECT_NE(text.find("src/train.py:7:15: warning: "), std::string::npos);
}

TEST(ReportText, CaretUnderRangeCountsDisplayColumns) {
  const std::string text = render(sample_results(), options("text"));
  // 5 ASCII bytes, one emoji and one CJK character (2 columns each), then `" + `.
  EXPECT_NE(text.find(std::string(kUnicodePy) + std::string(13, ' ') + "^~~~~~~~\n"),
            std::string::npos)
      << text;
  // Tabs before the range are kept so the caret lines up in any terminal.
  EXPECT_NE(text.find("\ttotal += m.forward({x}).toTensor().sum();\n\t^~~"), std::string::npos)
      << text;
}

TEST(ReportText, CaretForZeroWidthAndMultiLineRanges) {
  FileResult r;
  r.path = "m.py";
  r.source = "abc = f(\n  x)\n";
  r.findings.push_back(make_finding("LL101", Severity::Warning, r.path, Range{1, 7, 1, 7, 6, 6}, "z"));
  r.findings.push_back(make_finding("LL102", Severity::Error, r.path, Range{1, 7, 2, 4, 6, 12}, "m"));
  EXPECT_EQ(render({r}, options("text")),
            "m.py:1:7: warning: z [LL101]\n"
            "abc = f(\n"
            "      ^\n"
            "m.py:1:7: error: m [LL102]\n"
            "abc = f(\n"
            "      ^~\n"
            "Found 2 findings (1 error, 1 warning) in 1 file.\n");
}

TEST(ReportText, SuppressedFindingsAreOmitted) {
  const std::string text = render(sample_results(), options("text"));
  EXPECT_EQ(text.find("LL303]\n        torch.cuda"), std::string::npos);
  EXPECT_EQ(text.find("src/train.py:9:"), std::string::npos);
}

TEST(ReportText, SummaryLines) {
  EXPECT_EQ(render({}, options("text")), "All checks passed!\n");

  FileResult clean;
  clean.path = "a.py";
  Finding hidden = make_finding("LL101", Severity::Warning, "a.py", Range{1, 1, 1, 2, 0, 1}, "m");
  hidden.suppressed = true;
  clean.findings.push_back(hidden);
  EXPECT_EQ(render({clean}, options("text")), "All checks passed!\n");

  ReportOptions fixed = options("text");
  fixed.fixed_count = 2;
  EXPECT_EQ(render({clean}, fixed), "All checks passed! (2 fixed)\n");

  FileResult bad;
  bad.path = "b.py";
  bad.diagnostics.push_back({"b.py", "encoding", "not valid UTF-8", 0, 0, true});
  EXPECT_EQ(render({clean, bad}, options("text")),
            "b.py: error: not valid UTF-8 (file not analysed) [encoding]\n"
            "No findings; 1 file could not be analysed.\n");

  FileResult one;
  one.path = "c.py";
  one.findings.push_back(make_finding("LL303", Severity::Note, "c.py", Range{1, 1, 1, 2, 0, 1}, "m"));
  ReportOptions plain = options("text");
  plain.show_source = false;
  EXPECT_EQ(render({one}, plain), "c.py:1:1: note: m [LL303]\nFound 1 finding (1 note) in 1 file.\n");
  EXPECT_EQ(render({one, bad}, fixed),
            "c.py:1:1: note: m [LL303]\n"
            "b.py: error: not valid UTF-8 (file not analysed) [encoding]\n"
            "Found 1 finding (1 note) in 1 file; 2 fixed; 1 file could not be analysed.\n");
}

TEST(ReportText, FixHints) {
  const std::string text = render(sample_results(), options("text"));
  EXPECT_NE(text.find("  fix available: Add `()` to call torch.no_grad (run with --fix)\n"),
            std::string::npos);
  EXPECT_NE(text.find("  fix available: Use `.item()` (run with --fix --unsafe-fixes)\n"),
            std::string::npos);
}

// ---- JSON ------------------------------------------------------------------------------

TEST(ReportJson, Golden) { expect_golden("report.json", render(sample_results(), options("json"))); }

TEST(ReportJson, Structure) {
  const Json doc = Json::parse(render(sample_results(), options("json")));
  EXPECT_EQ(doc["version"], "0.0.0-test");
  ASSERT_EQ(doc["findings"].size(), 6U);  // the suppressed one is left out
  for (const Json& f : doc["findings"]) {
    for (const char* key : {"rule", "slug", "severity", "path", "line", "column", "end_line",
                            "end_column", "message", "notes", "fixes"}) {
      EXPECT_TRUE(f.contains(key)) << key;
    }
  }
  ASSERT_EQ(doc["errors"].size(), 2U);
  EXPECT_EQ(doc["errors"][1]["fatal"], true);
  EXPECT_EQ(doc["summary"]["findings"], 6);
  EXPECT_EQ(doc["summary"]["by_severity"]["error"], 3);
  EXPECT_FALSE(doc["summary"].contains("errors"));  // not to be confused with doc["errors"]
  EXPECT_EQ(doc["findings"][0]["low_confidence"], true);   // lib/model.cpp, read without headers
  EXPECT_EQ(doc["findings"][2]["low_confidence"], false);
  EXPECT_EQ(doc["summary"]["by_severity"]["warning"], 2);
  EXPECT_EQ(doc["summary"]["by_severity"]["note"], 1);
  EXPECT_EQ(doc["summary"]["suppressed"], 1);
  EXPECT_EQ(doc["summary"]["files_not_analysed"], 1);
}

TEST(ReportJson, EditPositionsComeFromByteOffsets) {
  const Json doc = Json::parse(render(sample_results(), options("json")));
  const Json* ll104 = nullptr;
  for (const Json& f : doc["findings"]) {
    if (f["rule"] == "LL104") ll104 = &f;
  }
  ASSERT_NE(ll104, nullptr);
  const Json& edit = (*ll104)["fixes"][0]["edits"][0];
  EXPECT_EQ(edit["line"], 12);
  EXPECT_EQ(edit["column"], 19);  // after "with torch.no_grad"
  EXPECT_EQ(edit["end_line"], 12);
  EXPECT_EQ(edit["end_column"], 19);
  EXPECT_EQ(edit["text"], "()");
  EXPECT_EQ((*ll104)["fixes"][0]["safe"], true);
}

TEST(ReportJson, InvalidUtf8DoesNotThrow) {
  FileResult r;
  r.path = "bad\xFF.py";
  r.findings.push_back(make_finding("LL101", Severity::Warning, r.path, Range{1, 1, 1, 2, 0, 1},
                                    "message \xC3("));
  std::string out;
  EXPECT_NO_THROW(out = render({r}, options("json")));
  EXPECT_TRUE(Json::accept(out));
  EXPECT_TRUE(Json::accept(render({r}, options("sarif"))));
}

// ---- GitHub ----------------------------------------------------------------------------

TEST(ReportGithub, Golden) {
  expect_golden("report.github", render(sample_results(), options("github")));
}

TEST(ReportGithub, ErrorsFirstAndACountPastTheAnnotationLimit) {
  std::vector<FileResult> results(1);
  results[0].path = "a.py";
  for (uint32_t i = 1; i <= 12; ++i) {
    results[0].findings.push_back(make_finding("LL101", Severity::Warning, "a.py", Range{i, 1, i, 2, 0, 0}, "w"));
    results[0].findings.push_back(make_finding("LL102", Severity::Error, "a.py", Range{i, 3, i, 4, 0, 0}, "e"));
  }
  const std::string out = render(results, options("github"));
  const auto first_warning = out.find("::warning ");
  EXPECT_LT(out.rfind("::error "), first_warning);
  EXPECT_NE(out.find("::notice title=leaklint::Found 24 findings (12 errors, 12 warnings) in 1 file. 12 error and "
                     "12 warning annotations in all"),
            std::string::npos)
      << out;
}

TEST(ReportGithub, StepSummaryIsMarkdown) {
  const fs::path md = fs::temp_directory_path() / ("leaklint-summary-" + std::to_string(getpid()) + ".md");
  std::ofstream(md) << "earlier step\n";
  FileResult r;
  r.path = "a|b.py";
  r.findings.push_back(make_finding("LL102", Severity::Error, r.path, Range{3, 5, 3, 9, 0, 0}, "x | y\nz"));
  ReportOptions o = options("github");
  o.step_summary = md.string();
  (void)render({r}, o);
  std::ifstream in(md);
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_EQ(got.str().rfind("earlier step\n## leaklint\n", 0), 0U) << got.str();  // appended
  EXPECT_NE(got.str().find("| LL102 accumulated-autograd-history | 1 |"), std::string::npos) << got.str();
  EXPECT_NE(got.str().find("| `a\\|b.py:3` | error | LL102 | x \\| y z |"), std::string::npos) << got.str();
  std::error_code ec;
  fs::remove(md, ec);
}

TEST(ReportGithub, Escaping) {
  FileResult r;
  r.path = "dir,x/a:b.py";
  r.findings.push_back(make_finding("LL102", Severity::Error, r.path, Range{3, 5, 3, 9, 0, 0},
                                    "100% of memory\r\nheld: forever, really"));
  EXPECT_EQ(render({r}, options("github")),
            "::error file=dir%2Cx/a%3Ab.py,line=3,col=5,endLine=3,endColumn=9,"
            "title=LL102 accumulated-autograd-history::100%25 of memory%0D%0Aheld: forever, "
            "really\n"
            "::notice title=leaklint::Found 1 finding (1 error) in 1 file.\n");
  r.findings[0].severity = Severity::Note;
  EXPECT_EQ(render({r}, options("github")).rfind("::notice ", 0), 0U);
}

// ---- SARIF -----------------------------------------------------------------------------

Json sarif(const std::vector<FileResult>& results, const std::string& root = "") {
  ReportOptions o = options("sarif");
  std::error_code ec;
  o.root = root.empty() ? fs::current_path(ec).string() : root;
  return Json::parse(render(results, o));
}

const Json* find_result(const Json& run, const std::string& rule, const std::string& uri_part) {
  for (const Json& r : run["results"]) {
    if (r["ruleId"] == rule &&
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].get<std::string>().find(
            uri_part) != std::string::npos) {
      return &r;
    }
  }
  return nullptr;
}

TEST(ReportSarif, TopLevel) {
  const Json doc = sarif(sample_results());
  EXPECT_EQ(doc["version"], "2.1.0");
  EXPECT_TRUE(doc["$schema"].get<std::string>().find("sarif-schema-2.1.0.json") != std::string::npos);
  ASSERT_EQ(doc["runs"].size(), 1U);
  const Json& run = doc["runs"][0];
  EXPECT_EQ(run["columnKind"], "utf16CodeUnits");
  const Json& driver = run["tool"]["driver"];
  EXPECT_EQ(driver["name"], "leaklint");
  EXPECT_EQ(driver["version"], "0.0.0-test");
  EXPECT_EQ(driver["semanticVersion"], "0.0.0-test");
  EXPECT_TRUE(driver.contains("informationUri"));
  const std::string base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"];
  EXPECT_EQ(base.rfind("file:///", 0), 0U);
  EXPECT_EQ(base.back(), '/');
}

TEST(ReportSarif, RulesCoverTheWholeCatalog) {
  const Json doc = sarif({});
  const Json& rules = doc["runs"][0]["tool"]["driver"]["rules"];
  ASSERT_EQ(rules.size(), all_rules().size());
  ASSERT_EQ(rules.size(), 22U);  // the first wave (16) and the second (LL105, LL106, LL203, LL205, LL206, LL405)
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const Json& r = rules[i];
    EXPECT_EQ(r["id"], std::string(all_rules()[i].id));
    EXPECT_FALSE(r["name"].get<std::string>().empty());
    EXPECT_FALSE(r["shortDescription"]["text"].get<std::string>().empty());
    const std::string full = r["fullDescription"]["text"];
    EXPECT_FALSE(full.empty());
    EXPECT_LE(full.size(), 1024U);
    EXPECT_FALSE(r["help"]["text"].get<std::string>().empty());
    EXPECT_FALSE(r["help"]["markdown"].get<std::string>().empty());
    EXPECT_EQ(r["helpUri"].get<std::string>().rfind("https://", 0), 0U);
    // help.markdown: links work on GitHub's alert page (no relative paths); help.text: plain.
    const std::string md = r["help"]["markdown"], text = r["help"]["text"];
    EXPECT_EQ(md.find("](../"), std::string::npos) << r["id"];
    EXPECT_EQ(md.find("](docs/"), std::string::npos) << r["id"];
    for (const char* markup : {"**", "`", "](", "\n#"}) EXPECT_EQ(text.find(markup), std::string::npos) << r["id"] << " " << markup;
    EXPECT_EQ(r["defaultConfiguration"]["level"], severity_name(all_rules()[i].severity));
    const Json& tags = r["properties"]["tags"];
    EXPECT_NE(std::find(tags.begin(), tags.end(), "pytorch"), tags.end());
    EXPECT_NE(std::find(tags.begin(), tags.end(), "memory"), tags.end());
    const std::string precision = r["properties"]["precision"];
    EXPECT_TRUE(precision == "high" || precision == "medium");
    EXPECT_TRUE(r["properties"].contains("problem.severity"));
  }
  EXPECT_EQ(rules[0]["name"], "MissingNoGrad");
  EXPECT_NE(rules[0]["help"]["markdown"].get<std::string>().find(
                "(https://github.com/leaklint/leaklint/blob/main/docs/verification/README.md)"),
            std::string::npos);
  EXPECT_EQ(rules[0]["helpUri"],
            "https://github.com/leaklint/leaklint/blob/main/docs/rules/LL101-missing-no-grad.md");
}

TEST(ReportSarif, ResultsReferenceTheirRules) {
  const Json doc = sarif(sample_results());
  const Json& run = doc["runs"][0];
  ASSERT_EQ(run["results"].size(), 7U);  // suppressed findings are included
  for (const Json& r : run["results"]) {
    const std::size_t index = r["ruleIndex"];
    EXPECT_EQ(run["tool"]["driver"]["rules"][index]["id"], r["ruleId"]);
    EXPECT_FALSE(r["message"]["text"].get<std::string>().empty());
    const Json& region = r["locations"][0]["physicalLocation"]["region"];
    for (const char* key : {"startLine", "startColumn", "endLine", "endColumn"}) {
      EXPECT_TRUE(region.contains(key)) << key;
    }
    EXPECT_EQ(r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    EXPECT_EQ(r["partialFingerprints"]["leaklint/v1"].get<std::string>().size(), 32U);
  }
}

TEST(ReportSarif, ColumnsAreUtf16AndEndIsExclusive) {
  const Json run = sarif(sample_results())["runs"][0];
  const Json* r = find_result(run, "LL101", "code.py");
  ASSERT_NE(r, nullptr);
  const Json& region = (*r)["locations"][0]["physicalLocation"]["region"];
  // `x = "` (5) + U+1F600 (2 units) + U+4E2D (1) + `" + ` (4) = 12 units before.
  EXPECT_EQ(region["startColumn"], 13);
  EXPECT_EQ(region["endColumn"], 21);
  EXPECT_EQ(region["snippet"]["text"], "model(y)");

  const Json* plain = find_result(run, "LL101", "train.py");
  ASSERT_NE(plain, nullptr);
  const Json& pr = (*plain)["locations"][0]["physicalLocation"]["region"];
  EXPECT_EQ(pr["startLine"], 7);
  EXPECT_EQ(pr["startColumn"], 15);
  EXPECT_EQ(pr["endColumn"], 23);
}

TEST(ReportSarif, UrisArePercentEncodedAndRelative) {
  const Json run = sarif(sample_results())["runs"][0];
  const Json* r = find_result(run, "LL101", "code.py");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ((*r)["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "src/%C3%BCn%C3%AF%20code.py");

  FileResult abs;
  abs.path = "/srv/my repo/pkg/a b.py";
  abs.findings.push_back(make_finding("LL101", Severity::Warning, abs.path, Range{1, 1, 1, 2, 0, 1}, "m"));
  const Json run2 = sarif({abs}, "/srv/my repo")["runs"][0];
  EXPECT_EQ(run2["originalUriBaseIds"]["%SRCROOT%"]["uri"], "file:///srv/my%20repo/");
  EXPECT_EQ(run2["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "pkg/a%20b.py");

  // Outside the root: an absolute file URI without a base.
  const Json run3 = sarif({abs}, "/elsewhere")["runs"][0];
  const Json& loc = run3["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
  EXPECT_EQ(loc["uri"], "file:///srv/my%20repo/pkg/a%20b.py");
  EXPECT_FALSE(loc.contains("uriBaseId"));
}

TEST(ReportSarif, NotesFixesAndSuppressions) {
  const Json run = sarif(sample_results())["runs"][0];
  const Json* r = find_result(run, "LL101", "train.py");
  ASSERT_NE(r, nullptr);
  ASSERT_EQ((*r)["relatedLocations"].size(), 1U);
  EXPECT_EQ((*r)["relatedLocations"][0]["message"]["text"], "model.eval() called here");
  EXPECT_EQ((*r)["relatedLocations"][0]["physicalLocation"]["region"]["startLine"], 4);

  const Json& fix = (*r)["fixes"][0];
  EXPECT_EQ(fix["description"]["text"], "Decorate `evaluate` with `@torch.no_grad()`");
  const Json& rep = fix["artifactChanges"][0]["replacements"][0];
  EXPECT_EQ(rep["deletedRegion"]["startLine"], 3);
  EXPECT_EQ(rep["deletedRegion"]["startColumn"], 1);
  EXPECT_EQ(rep["deletedRegion"]["endLine"], 3);
  EXPECT_EQ(rep["deletedRegion"]["endColumn"], 1);
  EXPECT_EQ(rep["insertedContent"]["text"], "@torch.no_grad()\n");
  EXPECT_EQ(fix["artifactChanges"][0]["artifactLocation"]["uri"], "src/train.py");

  const Json* suppressed = find_result(run, "LL303", "train.py");
  ASSERT_NE(suppressed, nullptr);
  ASSERT_EQ((*suppressed)["suppressions"].size(), 1U);
  EXPECT_EQ((*suppressed)["suppressions"][0]["kind"], "inSource");
  EXPECT_EQ((*suppressed)["suppressions"][0]["justification"], "# leaklint: ignore[LL303]");
  const Json* active = find_result(run, "LL104", "train.py");
  ASSERT_NE(active, nullptr);
  EXPECT_FALSE(active->contains("suppressions"));

  ReportOptions o = options("sarif");
  o.show_fixes = false;
  const Json nofix = Json::parse(render(sample_results(), o));
  for (const Json& res : nofix["runs"][0]["results"]) EXPECT_FALSE(res.contains("fixes"));
}

TEST(ReportSarif, InvocationAndNotifications) {
  const Json run = sarif(sample_results())["runs"][0];
  const Json& inv = run["invocations"][0];
  EXPECT_EQ(inv["executionSuccessful"], true);  // per-file problems are not tool failures
  const Json& notes = inv["toolExecutionNotifications"];
  ASSERT_EQ(notes.size(), 2U);
  EXPECT_EQ(notes[0]["level"], "error");
  EXPECT_EQ(notes[0]["descriptor"]["id"], "syntax-error");
  EXPECT_EQ(notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "src/broken.py");
  EXPECT_EQ(notes[0]["locations"][0]["physicalLocation"]["region"]["startLine"], 1);
  EXPECT_EQ(notes[1]["level"], "error");
  EXPECT_NE(notes[1]["message"]["text"].get<std::string>().find("Permission denied"),
            std::string::npos);

  FileResult crash;
  crash.path = "z.py";
  crash.diagnostics.push_back({"z.py", "internal", "check LL101 crashed", 0, 0, true});
  const Json failed = sarif({crash})["runs"][0];
  EXPECT_EQ(failed["invocations"][0]["executionSuccessful"], false);
}

std::string fingerprint_of(const Json& run, std::size_t i) {
  return run["results"][i]["partialFingerprints"]["leaklint/v1"];
}

TEST(ReportSarif, FingerprintsSurviveUnrelatedEdits) {
  const auto one_file = [](const std::string& src, uint32_t first, uint32_t second) {
    FileResult r;
    r.path = "pkg/m.py";
    r.source = src;
    r.findings.push_back(make_finding("LL102", Severity::Error, r.path,
                                      range_of(src, first, "total += loss"), "m"));
    r.findings.push_back(make_finding("LL102", Severity::Error, r.path,
                                      range_of(src, second, "total += loss"), "m"));
    return std::vector<FileResult>{r};
  };
  const std::string before = "for b in d:\n    total += loss\nfor b in d:\n    total += loss\n";
  const std::string after =
      "import os\n\n\nfor b in d:\n        total += loss\nfor b in d:\n    total  +=  loss\n";
  const Json a = sarif(one_file(before, 2, 4))["runs"][0];
  const Json b = sarif(one_file(after, 5, 7))["runs"][0];
  // Same line text (whitespace aside): same fingerprints despite the new line numbers;
  // identical lines are told apart by their occurrence.
  EXPECT_EQ(fingerprint_of(a, 0), fingerprint_of(b, 0));
  EXPECT_EQ(fingerprint_of(a, 1), fingerprint_of(b, 1));
  EXPECT_NE(fingerprint_of(a, 0), fingerprint_of(a, 1));

  const std::string changed = "for b in d:\n    total += loss * 2\nfor b in d:\n    total += loss\n";
  const Json c = sarif(one_file(changed, 2, 4))["runs"][0];
  EXPECT_NE(fingerprint_of(a, 0), fingerprint_of(c, 0));
}

TEST(ReportSarif, ValidatesAgainstSchema) {
  // The build fetches the schema (third_party/fetch-sarif-schema.sh); a missing schema or
  // validator is a failure, never a skip.
  const std::string schema = LEAKLINT_SARIF_SCHEMA;
  ASSERT_TRUE(fs::exists(schema)) << schema;
  ASSERT_TRUE(fs::exists("/usr/bin/python3"));
  const fs::path out = fs::temp_directory_path() / ("leaklint-report-" + std::to_string(getpid()) + ".sarif");
  {
    ReportOptions o = options("sarif");
    o.root = fs::current_path().string();
    std::ofstream f(out);
    write_report(f, sample_results(), o);
  }
  const std::string cmd = "/usr/bin/python3 '" + std::string(LEAKLINT_SOURCE_DIR) +
                          "/tests/integration/validate_sarif.py' '" + out.string() + "' '" +
                          schema + "' --min-results 1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::error_code ec;
  fs::remove(out, ec);
}

TEST(ReportText, ColourPolicy) {
  EXPECT_TRUE(color_enabled("always", false, "1", nullptr, "dumb"));
  EXPECT_FALSE(color_enabled("never", true, nullptr, "1", nullptr));
  EXPECT_TRUE(color_enabled("auto", true, nullptr, nullptr, "xterm-256color"));
  EXPECT_FALSE(color_enabled("auto", false, nullptr, nullptr, "xterm"));
  EXPECT_FALSE(color_enabled("auto", true, "1", nullptr, "xterm"));   // NO_COLOR
  EXPECT_TRUE(color_enabled("auto", true, "", nullptr, "xterm"));     // empty NO_COLOR counts as unset
  EXPECT_FALSE(color_enabled("auto", true, nullptr, nullptr, "dumb"));
  EXPECT_TRUE(color_enabled("auto", false, nullptr, "1", "dumb"));    // FORCE_COLOR
  EXPECT_TRUE(color_enabled("auto", false, nullptr, "0", nullptr));   // any non-empty value
  EXPECT_FALSE(color_enabled("auto", false, nullptr, "", nullptr));
  EXPECT_FALSE(color_enabled("auto", true, "1", "1", nullptr));       // NO_COLOR beats FORCE_COLOR
}

TEST(ReportAll, UnknownFormatFallsBackToText) {
  EXPECT_EQ(render({}, options("bogus")), "All checks passed!\n");
}

}  // namespace
}  // namespace ll
