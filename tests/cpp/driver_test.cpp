// Runs cli/cpp_driver.cpp's analyze_cpp_files() and prints what it returned as JSON, for
// tests/cpp/test_cli.py: `driver_test [--companion PATH] [--jobs N] [-p DIR] FILE...`.
// `--companion none` makes the companion unfindable (the "missing leaklint-cpp" case).
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cpp_driver.hpp"

int main(int argc, char** argv) {
  ll::CppDriverOptions opts;
  std::vector<std::string> files;
  bool none = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--companion" && i + 1 < argc) {
      opts.companion = argv[++i];
      if (opts.companion == "none") none = true;
    } else if (a == "--jobs" && i + 1 < argc) {
      opts.jobs = std::atoi(argv[++i]);
    } else if (a == "-p" && i + 1 < argc) {
      opts.build_dir = argv[++i];
    } else {
      files.push_back(a);
    }
  }
  if (none) {
    // Nothing next to this executable is called leaklint-cpp, and PATH/LEAKLINT_CPP are cleared.
    unsetenv("LEAKLINT_CPP");
    setenv("PATH", "/nonexistent", 1);
    opts.companion.clear();
  }
  std::vector<ll::FileResult> results = none ? ll::analyze_cpp_files(files, opts.build_dir, opts.jobs)
                                             : ll::analyze_cpp_files(files, opts);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json fj;
    fj["path"] = r.path;
    fj["source_bytes"] = r.source.size();
    nlohmann::json fs = nlohmann::json::array(), ds = nlohmann::json::array();
    for (const auto& f : r.findings)
      fs.push_back({{"rule", f.rule}, {"line", f.range.line}, {"col", f.range.col}, {"path", f.path},
                    {"low_confidence", f.low_confidence}, {"suppressed", f.suppressed},
                    {"fixes", f.fixes.size()}, {"message", f.message}});
    for (const auto& d : r.diagnostics)
      ds.push_back({{"kind", d.kind}, {"message", d.message}, {"fatal", d.fatal}, {"path", d.path}});
    fj["findings"] = fs;
    fj["diagnostics"] = ds;
    out.push_back(fj);
  }
  std::cout << out.dump(2) << "\n";
  return 0;
}
