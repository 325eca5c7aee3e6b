// leaklint_parse_only: the floor for the benchmark (bench/run_bench.sh). Reads every file
// named in a list file (one path a line) and parses it with the same tree-sitter build that
// leaklint uses (ll::python::parse_only), single-threaded, without lowering or checks.
//
//   leaklint_parse_only LIST_FILE
//
// Prints "files=N bytes=B nodes=K read_ms=R parse_ms=P" on stdout.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/python/python_frontend.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " LIST_FILE\n";
    return 2;
  }
  std::ifstream list(argv[1]);
  if (!list) {
    std::cerr << "cannot read " << argv[1] << "\n";
    return 2;
  }
  using Clock = std::chrono::steady_clock;
  double read_ms = 0, parse_ms = 0;
  size_t files = 0, bytes = 0, nodes = 0, unreadable = 0;
  std::string path;
  while (std::getline(list, path)) {
    if (path.empty()) continue;
    auto t0 = Clock::now();
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      ++unreadable;
      continue;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    auto t1 = Clock::now();
    nodes += ll::python::parse_only(text);
    auto t2 = Clock::now();
    read_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
    parse_ms += std::chrono::duration<double, std::milli>(t2 - t1).count();
    ++files;
    bytes += text.size();
  }
  std::printf("files=%zu bytes=%zu nodes=%zu unreadable=%zu read_ms=%.1f parse_ms=%.1f\n", files,
              bytes, nodes, unreadable, read_ms, parse_ms);
  return unreadable ? 1 : 0;
}
