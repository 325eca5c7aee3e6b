// Robustness of the tree-sitter C++ lowering (the fallback for files Clang cannot compile):
// lowers each input file and N deterministic mutations of it (bytes flipped, tokens
// dropped or duplicated, truncations, deep nesting spliced in) and runs the C++ checks on
// every result. It fails only by crashing, hanging (CTest's timeout) or, under
// -DLEAKLINT_SANITIZE=ON, a sanitizer report; it also checks that every range in the
// model lies inside its file.
//
// usage: leaklint_cpp_syntactic_mutations [-n MUTATIONS] FILE...
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/cpp/cpp_adapt.hpp"
#include "frontend/cpp/model_builder.hpp"
#include "frontend/cpp/ts_lowering.hpp"
#include "rules/config.hpp"

namespace {

std::string read(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string mutate(const std::string& s, std::mt19937& rng) {
  if (s.empty()) return s;
  std::string out = s;
  std::uniform_int_distribution<size_t> pos(0, out.size() - 1);
  static const char* pieces[] = {"{", "}", "(", ")", "<", ">", ">>", ";", "::", "->", "[", "]", "\"", "'", "/*",
                                 "//", "#if 0\n", "#endif\n", "\\\n", "template <", "auto", "for (", "if (",
                                 "torch::NoGradGuard g;", "[&]{", "R\"x(", "operator", "= {", ",", "..."};
  int edits = 1 + static_cast<int>(rng() % 8);
  for (int i = 0; i < edits && !out.empty(); ++i) {
    size_t at = pos(rng) % out.size();
    switch (rng() % 7) {
      case 0: out[at] = static_cast<char>(rng() % 256); break;
      case 1: out.erase(at, 1 + rng() % 16); break;
      case 2: out.insert(at, pieces[rng() % (sizeof pieces / sizeof *pieces)]); break;
      case 3: out.insert(at, out.substr(at, rng() % 64)); break;
      case 4: out.resize(at); break;
      case 5: {
        std::string deep;
        int n = 200 + static_cast<int>(rng() % 2000);
        const char* open[] = {"(", "{", "[", "if (x) ", "- ", "a.", "f(", "<"};
        const char* o = open[rng() % (sizeof open / sizeof *open)];
        for (int k = 0; k < n; ++k) deep += o;
        out.insert(at, deep);
        break;
      }
      default: std::swap(out[at], out[pos(rng) % out.size()]); break;
    }
  }
  return out;
}

bool check_ranges(const ll::Module& m, size_t size) {
  auto ok = [&](const ll::Range& r) { return r.begin <= r.end && r.end <= size && r.line >= 1 && r.col >= 1; };
  for (const auto& e : m.exprs)
    if (!ok(e.range)) return false;
  for (const auto& s : m.stmts)
    if (!ok(s.range)) return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 50;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-n" && i + 1 < argc) n = std::atoi(argv[++i]);
    else files.push_back(a);
  }
  ll::Config cfg;
  size_t runs = 0, findings = 0;
  int bad = 0;
  for (const auto& f : files) {
    std::string text = read(f);
    std::mt19937 rng(static_cast<unsigned>(std::hash<std::string>{}(f)));
    for (int k = 0; k <= n; ++k) {
      std::string input = k == 0 ? text : mutate(text, rng);
      ll::Module m;
      std::vector<ll::Diagnostic> diags;
      ll::cpp::lower_tree_sitter(input, m, diags);
      m.path = f;
      m.comments = ll::cpp::scan_comments(input);
      if (!check_ranges(m, input.size())) {
        std::cerr << f << " mutation " << k << ": a range lies outside the file\n";
        ++bad;
      }
      findings += ll::cpp::run_cpp_checks(m, cfg, f, input, true).size();
      ++runs;
    }
  }
  std::printf("%zu lowerings, %zu findings, %d range errors\n", runs, findings, bad);
  return bad ? 1 : 0;
}
