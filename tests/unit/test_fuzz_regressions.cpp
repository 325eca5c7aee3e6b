// Fuzzing regressions: every input the fuzzer (tests/fuzz/) ever crashed on is kept under
// tests/fuzz/regressions/ and run through the same pipeline as the fuzz target (frontend,
// all checks, the project pass, the fix loop). The only assertion is that nothing
// crashes; under -DLEAKLINT_SANITIZE=ON, that no sanitizer fires either. The hand-made
// pathological seeds (tests/fuzz/seeds/) run too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_one.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> inputs_in(const std::string& sub) {
  std::vector<fs::path> out;
  fs::path dir = fs::path(LEAKLINT_SOURCE_DIR) / "tests" / "fuzz" / sub;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Each input runs the whole pipeline twice: it must neither crash (nor, in the sanitizer
// build, trip a sanitizer) and must give the same result both times.
void run_all(const std::vector<fs::path>& files) {
  ASSERT_FALSE(files.empty()) << "no inputs: a regression suite of nothing tests nothing";
  for (const auto& p : files) {
    SCOPED_TRACE(p.string());
    const std::string text = slurp(p);
    ASSERT_FALSE(text.empty());
    const auto first = ll::fuzz::run_one(text);
    const auto second = ll::fuzz::run_one(text);
    EXPECT_EQ(first.findings, second.findings);
    EXPECT_EQ(first.rollbacks, second.rollbacks);
  }
}

}  // namespace

TEST(FuzzRegressions, CrashersNoLongerCrash) { run_all(inputs_in("regressions")); }

TEST(FuzzRegressions, PathologicalSeedsDoNotCrash) {
  run_all(inputs_in("seeds"));
}
