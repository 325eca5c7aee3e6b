#include "cli/fix.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ll {

std::string apply_edits(const std::string& text, std::vector<Edit> edits, int* applied) {
  std::stable_sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  std::string out;
  out.reserve(text.size() + 64);
  uint32_t pos = 0;
  int n = 0;
  for (const Edit& e : edits) {
    if (e.begin < pos || e.end < e.begin || e.end > text.size()) continue;  // overlapping or invalid
    out.append(text, pos, e.begin - pos);
    out += e.text;
    pos = e.end;
    ++n;
  }
  out.append(text, pos, std::string::npos);
  if (applied) *applied = n;
  return out;
}

namespace {

int syntax_errors(const FileResult& r) {
  int n = 0;
  for (const auto& d : r.diagnostics)
    if (d.kind == "syntax-error" || d.kind == "compile-error" || d.fatal) ++n;
  return n;
}

}  // namespace

std::vector<Edit> select_fix_edits(const FileResult& result, bool unsafe, int* fixes) {
  // One fix per finding; whole fixes only (all their edits or none); a fix that touches
  // (or inserts at) a place another selected fix edits waits for the next round.
  std::vector<Edit> edits;
  std::vector<std::pair<uint32_t, uint32_t>> taken;
  int nfix = 0;
  for (const Finding& f : result.findings) {
    if (f.suppressed || f.fixes.empty()) continue;
    const Fix& fx = f.fixes.front();
    if (!fx.safe && !unsafe) continue;
    bool clash = false;
    for (const Edit& e : fx.edits)
      for (auto [b, en] : taken)
        if (e.begin < en && b < e.end + (e.begin == e.end ? 1 : 0)) clash = true;
    if (clash) continue;
    for (const Edit& e : fx.edits) {
      edits.push_back(e);
      taken.emplace_back(e.begin, std::max(e.end, e.begin + 1));
    }
    ++nfix;
  }
  if (fixes) *fixes = nfix;
  return edits;
}

namespace {

// The fix loop shared by Python and C++: select a round of edits, apply them, let `check`
// re-lint the result (it returns false, with a message in `out.errors`, to roll the round
// back), repeat until nothing changes (at most 10 rounds).
template <typename Check>
FixOutcome fix_loop(const std::string& original, const FileResult& first, bool unsafe, Check check) {
  FixOutcome out;
  out.original = original;
  out.fixed = original;
  FileResult current = first;
  for (int round = 0; round < 10; ++round) {
    int nfix = 0;
    std::vector<Edit> edits = select_fix_edits(current, unsafe, &nfix);
    if (edits.empty()) break;
    // Test hook: corrupt every edit, to prove that a fix that breaks the code is rolled back.
    if (std::getenv("LEAKLINT_TEST_CORRUPT_FIXES"))
      for (Edit& e : edits) e.text += "(:";
    std::string next = apply_edits(out.fixed, edits);
    if (next == out.fixed) break;
    FileResult relint;
    bool more = true;
    if (!check(next, relint, more, out)) break;
    out.fixed = std::move(next);
    out.applied += nfix;
    current = std::move(relint);
    if (!more) break;
  }
  out.final_result = std::move(current);
  return out;
}

}  // namespace

FixOutcome fix_text(const std::string& path, const std::string& original, const FileResult& first,
                    const Config& cfg, const EngineOptions& opts, bool unsafe) {
  int base_errors = syntax_errors(first);
  return fix_loop(original, first, unsafe, [&](const std::string& next, FileResult& relint, bool&, FixOutcome& out) {
    relint = analyze_text(path, next, cfg, opts);
    if (syntax_errors(relint) <= base_errors) return true;
    out.errors.push_back("a fix would introduce a syntax error; rolled back (please report this)");
    return false;
  });
}

FixOutcome fix_cpp_file(const std::string& path, const std::string& original, const FileResult& first,
                        const Config& cfg, const EngineOptions& opts, bool unsafe, bool write) {
  int base_errors = syntax_errors(first);
  return fix_loop(original, first, unsafe, [&](const std::string& next, FileResult& relint, bool& more, FixOutcome& out) {
    if (!write) {  // --diff: one round, shown, nothing touched
      relint = first;
      more = false;
      return true;
    }
    std::string err;
    if (!write_atomic(path, next, &err)) {
      out.errors.push_back(err);
      return false;
    }
    out.written = true;
    relint = analyze_file(path, cfg, opts);
    if (syntax_errors(relint) <= base_errors) return true;
    if (!write_atomic(path, out.fixed, &err)) out.errors.push_back("could not restore the file: " + err);
    out.errors.push_back("a fix would introduce a compile error; rolled back (please report this)");
    return false;
  });
}

bool write_atomic(const std::string& path, const std::string& text, std::string* error) {
  struct stat st {};
  bool have = ::stat(path.c_str(), &st) == 0;
  std::string dir = ".";
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos) dir = path.substr(0, slash == 0 ? 1 : slash);
  std::string tmpl = dir + "/.leaklint-fix-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = ::mkstemp(buf.data());
  if (fd < 0) {
    *error = std::string("cannot create a temporary file next to ") + path + ": " + std::strerror(errno);
    return false;
  }
  std::string tmp(buf.data());
  size_t off = 0;
  while (off < text.size()) {
    ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      *error = std::string("write failed: ") + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += static_cast<size_t>(w);
  }
  if (have) (void)::fchmod(fd, st.st_mode & 07777);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    *error = std::string("write failed: ") + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = std::string("cannot replace ") + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

namespace {

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find('\n', i);
    if (j == std::string::npos) { out.push_back(s.substr(i)); break; }
    out.push_back(s.substr(i, j - i + 1));
    i = j + 1;
  }
  return out;
}

}  // namespace

std::string unified_diff(const std::string& path, const std::string& a, const std::string& b) {
  if (a == b) return "";
  auto A = split_lines(a), B = split_lines(b);
  size_t pre = 0;
  while (pre < A.size() && pre < B.size() && A[pre] == B[pre]) ++pre;
  size_t suf = 0;
  while (suf < A.size() - pre && suf < B.size() - pre && A[A.size() - 1 - suf] == B[B.size() - 1 - suf]) ++suf;
  // LCS over the middle to find the changed runs.
  size_t n = A.size() - pre - suf, m = B.size() - pre - suf;
  std::vector<std::pair<char, std::string>> ops;  // ' ', '-', '+'
  for (size_t i = 0; i < pre; ++i) ops.emplace_back(' ', A[i]);
  if (n * m <= 4'000'000) {
    std::vector<std::vector<uint32_t>> L(n + 1, std::vector<uint32_t>(m + 1, 0));
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;)
        L[i][j] = A[pre + i] == B[pre + j] ? L[i + 1][j + 1] + 1 : std::max(L[i + 1][j], L[i][j + 1]);
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && A[pre + i] == B[pre + j]) { ops.emplace_back(' ', A[pre + i]); ++i; ++j; }
      else if (j < m && (i == n || L[i][j + 1] >= L[i + 1][j])) { ops.emplace_back('+', B[pre + j]); ++j; }
      else { ops.emplace_back('-', A[pre + i]); ++i; }
    }
  } else {
    for (size_t i = 0; i < n; ++i) ops.emplace_back('-', A[pre + i]);
    for (size_t j = 0; j < m; ++j) ops.emplace_back('+', B[pre + j]);
  }
  for (size_t i = A.size() - suf; i < A.size(); ++i) ops.emplace_back(' ', A[i]);

  std::string out = "--- a/" + path + "\n+++ b/" + path + "\n";
  const size_t ctx = 3;
  size_t k = 0;
  while (k < ops.size()) {
    while (k < ops.size() && ops[k].first == ' ') ++k;
    if (k >= ops.size()) break;
    size_t start = k >= ctx ? k - ctx : 0;
    size_t end = k;
    // Extend the hunk while changes are within 2*ctx lines of each other.
    for (;;) {
      while (end < ops.size() && ops[end].first != ' ') ++end;
      size_t gap = end;
      while (gap < ops.size() && ops[gap].first == ' ' && gap - end < 2 * ctx) ++gap;
      if (gap < ops.size() && ops[gap].first != ' ') { end = gap; continue; }
      end = std::min(ops.size(), end + ctx);
      break;
    }
    size_t a0 = 0, b0 = 0;
    for (size_t t = 0; t < start; ++t) {
      if (ops[t].first != '+') ++a0;
      if (ops[t].first != '-') ++b0;
    }
    size_t ac = 0, bc = 0;
    for (size_t t = start; t < end; ++t) {
      if (ops[t].first != '+') ++ac;
      if (ops[t].first != '-') ++bc;
    }
    out += "@@ -" + std::to_string(ac ? a0 + 1 : a0) + "," + std::to_string(ac) + " +" +
           std::to_string(bc ? b0 + 1 : b0) + "," + std::to_string(bc) + " @@\n";
    for (size_t t = start; t < end; ++t) {
      out += ops[t].first;
      out += ops[t].second;
      if (ops[t].second.empty() || ops[t].second.back() != '\n') out += "\n\\ No newline at end of file\n";
    }
    k = end;
  }
  return out;
}

}  // namespace ll
