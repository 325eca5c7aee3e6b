#include "cli/engine.hpp"

#include "cli/crash_guard.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <cstring>
#include <random>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checks/checks.hpp"
#include "cli/report.hpp"
#include "checks/relevance.hpp"
#include "cli/cache.hpp"
#include "cli/discover.hpp"
#include "cli/notebook.hpp"
#include "frontend/python/python_frontend.hpp"
#include "rules/budget.hpp"
#include "rules/suppress.hpp"

namespace ll {

namespace {

// ASCII lower case (coding names, folder and file names).
std::string ascii_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

bool valid_utf8(std::string_view s, size_t* bad_at) {
  size_t i = 0, n = s.size();
  auto u = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < n) {
    // ASCII runs eight bytes at a time (most source files are all ASCII).
    while (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    unsigned char c = u(i);
    if (c < 0x80) { ++i; continue; }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else { *bad_at = i; return false; }
    if (i + len > n) { *bad_at = i; return false; }
    for (size_t k = 1; k < len; ++k) {
      if ((u(i + k) & 0xC0) != 0x80) { *bad_at = i; return false; }
      cp = (cp << 6) | (u(i + k) & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      *bad_at = i;
      return false;
    }
    i += len;
  }
  return true;
}

namespace {

// PEP 263: `# -*- coding: latin-1 -*-` in the first two lines.
std::string coding_declaration(const std::string& text) {
  size_t end = 0;
  for (int line = 0; line < 2 && end != std::string::npos; ++line) {
    size_t start = line == 0 ? 0 : end + 1;
    if (start > text.size()) break;
    end = text.find('\n', start);
    std::string l = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t hash = l.find('#');
    if (hash == std::string::npos) continue;
    static const std::regex re("coding[:=][ \\t]*([-\\w.]+)");
    std::smatch m;
    if (std::regex_search(l, m, re)) {
      std::string enc = m[1];
      enc = ascii_lower(std::move(enc));
      std::replace(enc.begin(), enc.end(), '_', '-');
      return enc;
    }
  }
  return "";
}

bool is_latin1_family(const std::string& enc) {
  return enc == "latin-1" || enc == "latin1" || enc == "iso-8859-1" || enc == "iso8859-1" || enc == "cp1252" ||
         enc == "windows-1252" || enc == "l1" || enc == "iso-8859-15" || enc == "latin-9";
}

std::string latin1_to_utf8(const std::string& in) {
  std::string out;
  out.reserve(in.size() + in.size() / 8);
  for (unsigned char c : in) {
    if (c < 0x80) out.push_back(static_cast<char>(c));
    else {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

Diagnostic fatal(const std::string& path, std::string kind, std::string message, uint32_t line = 0,
                 uint32_t col = 0) {
  Diagnostic d;
  d.path = path;
  d.kind = std::move(kind);
  d.message = std::move(message);
  d.line = line;
  d.col = col;
  d.fatal = true;
  return d;
}

void line_col_of(const std::string& text, size_t at, uint32_t* line, uint32_t* col) {
  *line = 1;
  size_t ls = 0;
  for (size_t i = 0; i < at && i < text.size(); ++i)
    if (text[i] == '\n' || (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n'))) {
      ++*line;
      ls = i + 1;
    }
  *col = static_cast<uint32_t>(at - ls + 1);
}

}  // namespace

// Reads a regular file of at most `max` bytes without ever blocking (no FIFO, device or
// terminal is opened for reading in blocking mode). False on anything else.
bool read_regular_file(const std::string& path, uint64_t max, std::string& text) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) <= max;
  if (ok) {
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  return ok;
}

void sort_result(FileResult& r) {
  std::stable_sort(r.findings.begin(), r.findings.end(), [](const Finding& a, const Finding& b) {
    if (a.range.line != b.range.line) return a.range.line < b.range.line;
    if (a.range.col != b.range.col) return a.range.col < b.range.col;
    return a.rule < b.rule;
  });
  std::stable_sort(r.diagnostics.begin(), r.diagnostics.end(),
                   [](const Diagnostic& a, const Diagnostic& b) { return a.line < b.line; });
}

namespace {

// A Python file whose indentation CPython refuses (python::kPythonRejectsIndentation) never
// runs as written, and its blocks are tree-sitter's reading of its tabs: what its findings say
// a run costs is weak. (A notebook's other cells still run: only a `.py` file.)
void weaken_where_python_will_not_run(FileResult& r) {
  if (r.path.size() >= 6 && r.path.compare(r.path.size() - 6, 6, ".ipynb") == 0) return;
  for (const Diagnostic& d : r.diagnostics)
    if (d.kind == "syntax-error" && d.message.find(python::kPythonRejectsIndentation) != std::string::npos) {
      for (Finding& f : r.findings)
        if (!f.low_confidence)
          make_weak(f, "Python refuses this file's indentation (line " + std::to_string(d.line) +
                           "), so as written it never runs, and its blocks are read with a tab as 8 columns");
      return;
    }
}

Diagnostic timeout_diagnostic(const std::string& path, const EngineOptions& opts) {
  return fatal(path, "timeout",
               "analysis took longer than the per-file budget (" + std::to_string(opts.parse_timeout_ms) +
                   " ms of CPU time); file not analysed");
}

}  // namespace

FileResult analyze_text(const std::string& path, std::string text, const Config& cfg, const EngineOptions& opts,
                        const ProjectView* project, FileSummary* summary, std::unique_ptr<Module>* keep) {
  FileResult r;
  r.path = path;
  auto m = std::make_unique<Module>();
  python::ParseOptions po;
  po.timeout_micros = std::max<uint64_t>(1, opts.parse_timeout_ms * 1000);
  // One budget for the whole analysis: parsing (tree-sitter's own timeout), then lowering,
  // facts and checks (budget::tick() throws past the deadline, in this thread's CPU time).
  bool checked = false;
  try {
    budget::Scope scope(opts.parse_timeout_ms, opts.max_work);
    if (python::lower(text, path, *m, r.diagnostics, po)) {
      r.findings = run_checks(*m, cfg, path, text, project, summary);
      weaken_where_python_will_not_run(r);
      Suppressions(m->comments, m->lang).apply(r.findings);
      checked = true;
    }
  } catch (const budget::Exceeded&) {
    r.findings.clear();
    if (summary) *summary = FileSummary{};
    r.diagnostics.push_back(timeout_diagnostic(path, opts));
  }
  if (keep && checked) *keep = std::move(m);
  r.source = std::move(text);
  sort_result(r);
  return r;
}

// The checks again over a module lowered by analyze_text, with what the other files say:
// the same result a fresh analyze_text with `project` gives, without parsing twice.
FileResult recheck(const FileResult& first, const Module& m, const Config& cfg, const EngineOptions& opts,
                   const ProjectView* project) {
  FileResult r;
  r.path = first.path;
  r.source = first.source;
  r.diagnostics = first.diagnostics;  // the lowering's: the checks add none
  try {
    budget::Scope scope(opts.parse_timeout_ms, opts.max_work);
    r.findings = run_checks(m, cfg, r.path, r.source, project, nullptr);
    weaken_where_python_will_not_run(r);
    Suppressions(m.comments, m.lang).apply(r.findings);
  } catch (const budget::Exceeded&) {
    r.findings.clear();
    r.diagnostics.push_back(timeout_diagnostic(r.path, opts));
  }
  sort_result(r);
  return r;
}

namespace {

// Slots for the names of live temporary files; the signal handler reads them without a lock
// (a slot's name is complete before its flag is set, and the flag is cleared before reuse).
constexpr int kTempSlots = 16;
char g_temp_names[kTempSlots][4096];
volatile std::sig_atomic_t g_temp_live[kTempSlots];
std::mutex g_temp_mu;

extern "C" void remove_temps_and_die(int sig) {
  // Files first, then the private directories that held them.
  for (int i = 0; i < kTempSlots; ++i)
    if (g_temp_live[i]) ::unlink(g_temp_names[i]);
  for (int i = 0; i < kTempSlots; ++i)
    if (g_temp_live[i]) ::rmdir(g_temp_names[i]);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_temp_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = remove_temps_and_die;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

// A temporary copy of a buffer, removed (and untracked) when this goes out of scope.
struct TempCopy {
  std::string file, dir;  // dir: a private directory made for it ("" when beside the file)
  int slot = -1, dir_slot = -1;
  ~TempCopy() {
    if (!file.empty()) ::unlink(file.c_str());
    untrack_temp_file(slot);
    if (!dir.empty()) ::rmdir(dir.c_str());
    untrack_temp_file(dir_slot);
  }
};

bool write_whole(int fd, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    off += static_cast<size_t>(w);
  }
  return true;
}

// Six random letters or digits for a temporary name (as mkstemp's XXXXXX).
std::string random_suffix() {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string out(6, 'x');
  for (char& c : out) c = kChars[rng() % (sizeof kChars - 1)];
  return out;
}

// Creates `prefix + XXXXXX + suffix` exclusively (a file 0600, or with `directory` a
// directory 0700) and tracks it for the signal handler. The name is tracked before it exists,
// so a SIGTERM at any moment after creation finds it (mkstemp would create it first and leave
// a window in which a signal left the copy behind); a name already taken is never tracked.
// Sets `*name`, `*slot` (-1 when tracking is full) and, for a file, the open `*fd`.
bool create_tracked(const std::string& prefix, const std::string& suffix, bool directory, std::string* name,
                    int* slot, int* fd, std::string* error) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string candidate = prefix + random_suffix() + suffix;
    struct stat st {};
    if (::lstat(candidate.c_str(), &st) == 0) continue;  // taken: never track someone else's name
    const int s = track_temp_file(candidate);
    int got = directory ? ::mkdir(candidate.c_str(), 0700)
                        : ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (got >= 0) {
      *name = candidate;
      *slot = s;
      if (!directory) *fd = got;
      return true;
    }
    const int e = errno;
    untrack_temp_file(s);
    if (e != EEXIST) {
      *error = std::strerror(e);
      return false;
    }
  }
  *error = "no free temporary name";
  return false;
}

// Creates `dir/<stem>.leaklint-XXXXXX<ext>` (O_EXCL, 0600) holding `text`. The stem comes
// first so that a compile database without this name infers the command of the file itself.
bool make_copy(const std::string& dir, const std::string& stem, const std::string& ext, const std::string& text,
               TempCopy& t, std::string* error) {
  const std::string prefix = (dir.empty() ? std::string(".") : dir) + "/" + stem + ".leaklint-";
  int fd = -1;
  if (!create_tracked(prefix, ext, false, &t.file, &t.slot, &fd, error)) return false;
  const bool ok = write_whole(fd, text);
  if (!ok) *error = std::string("write failed: ") + std::strerror(errno);
  ::close(fd);
  return ok;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
}

}  // namespace

int track_temp_file(const std::string& name) {
  install_temp_handlers();
  if (name.size() >= sizeof g_temp_names[0]) return -1;
  std::lock_guard<std::mutex> lock(g_temp_mu);
  for (int i = 0; i < kTempSlots; ++i)
    if (!g_temp_live[i]) {
      std::memcpy(g_temp_names[i], name.c_str(), name.size() + 1);
      g_temp_live[i] = 1;
      return i;
    }
  return -1;
}

void untrack_temp_file(int slot) {
  if (slot < 0 || slot >= kTempSlots) return;
  std::lock_guard<std::mutex> lock(g_temp_mu);
  g_temp_live[slot] = 0;
}

FileResult analyze_cpp_buffer(const std::string& path, const std::string& text, const EngineOptions& opts,
                              bool beside_path) {
  FileResult r;
  r.path = path;
  r.source = text;
  if (text.size() > opts.max_file_size) {
    r.diagnostics.push_back(fatal(path, "too-large", too_large_message(text.size(), opts.max_file_size)));
    return r;
  }
  // Relevance, as for files on disk: nothing a C++ rule starts from, no Clang.
  if (!cpp_may_hold_a_pattern(text)) return r;
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  std::string stem = dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
  std::string ext = dot == std::string::npos || dot == 0 ? ".cpp" : base.substr(dot);
  if (stem.empty()) stem = "buffer";
  TempCopy copy;
  std::string err, elsewhere;
  if (!beside_path || !make_copy(dir, stem, ext, text, copy, &err)) {
    if (beside_path)
      elsewhere = "the buffer could not be copied next to the file (" + err +
                  "), so it was analysed from a temporary directory: includes relative to the file, its compile "
                  "database and its configuration did not apply";
    if (!copy.file.empty()) {  // created but not written: remove it now
      ::unlink(copy.file.c_str());
      untrack_temp_file(copy.slot);
      copy.file.clear();
      copy.slot = -1;
    }
    const char* tmp = std::getenv("TMPDIR");
    const std::string prefix = std::string(tmp && *tmp == '/' ? tmp : "/tmp") + "/leaklint-buffer-";
    std::string why;
    if (!create_tracked(prefix, "", true, &copy.dir, &copy.dir_slot, nullptr, &why)) {
      r.diagnostics.push_back(fatal(path, "io-error",
                                    "cannot create a temporary copy of the buffer for leaklint-cpp: " + why +
                                        "; not analysed"));
      return r;
    }
    if (!make_copy(copy.dir, stem, ext, text, copy, &err)) {
      r.diagnostics.push_back(fatal(path, "io-error", "cannot write a temporary copy of the buffer: " + err + "; not analysed"));
      return r;
    }
  }
  CppDriverOptions co = opts.cpp;
  co.jobs = 1;
  if (!co.max_file_size_kib) co.max_file_size_kib = std::max<uint64_t>(1, opts.max_file_size / 1024);
  FileResult got = std::move(analyze_cpp_files({copy.file}, co).front());
  const std::string tmp_base = copy.file.substr(copy.file.find_last_of('/') + 1);
  r.findings = std::move(got.findings);
  r.diagnostics = std::move(got.diagnostics);
  auto rename = [&](std::string& message) {
    replace_all(message, copy.file, path);
    replace_all(message, tmp_base, base);
  };
  for (auto& f : r.findings) {
    f.path = path;
    rename(f.message);
    for (auto& n : f.notes) rename(n.message);
  }
  for (auto& d : r.diagnostics) {
    d.path = path;
    rename(d.message);
  }
  if (!elsewhere.empty()) {
    Diagnostic d;
    d.path = path;
    d.kind = "buffer-copy";
    d.message = elsewhere;
    r.diagnostics.push_back(std::move(d));
  }
  sort_result(r);
  return r;
}

// A notebook's code cells (`nb`, read from the .ipynb bytes `raw`), analysed as one Python text
// and mapped back onto the .ipynb bytes, with the project's view when there is one.
static FileResult analyze_notebook(const std::string& path, const Notebook& nb, std::string raw, const Config& cfg,
                                   const EngineOptions& opts, const ProjectView* project, FileSummary* summary) {
  FileResult v = analyze_text(path, nb.python, cfg, opts, project, summary);
  map_notebook_result(nb, v, raw);
  // The functions holding findings, in the .ipynb file's bytes like the findings now.
  if (summary)
    for (auto& h : summary->holding) {
      const uint32_t e = h.end > h.begin ? notebook_raw_offset(nb, h.end - 1) + 1 : h.begin;
      h.begin = notebook_raw_offset(nb, h.begin);
      h.end = std::max(h.begin, e);
    }
  v.source = std::move(raw);
  return v;
}

FileResult analyze_file(const std::string& path, const Config& cfg, const EngineOptions& opts,
                        const std::string* text_override, FileSummary* summary, std::unique_ptr<Module>* keep) {
  if (is_cpp_path(path)) {
    if (!text_override) {
      CppDriverOptions co = opts.cpp;
      co.jobs = 1;
      if (!co.max_file_size_kib) co.max_file_size_kib = std::max<uint64_t>(1, opts.max_file_size / 1024);
      FileResult r = std::move(analyze_cpp_files({path}, co).front());
      sort_result(r);
      return r;
    }
    return analyze_cpp_buffer(path, *text_override, opts);
  }
  FileResult r;
  r.path = path;
  std::string text;
  if (text_override) {
    text = *text_override;
  } else {
    // Never a blocking open: a FIFO or a terminal named here must not hang the run, and
    // only a regular file is read (bounded by --max-file-size even if it grows).
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
      r.diagnostics.push_back(fatal(path, "io-error", std::string("cannot read file: ") + std::strerror(errno)));
      return r;
    }
    struct Closer {
      int fd;
      ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      r.diagnostics.push_back(fatal(path, "io-error", std::string("cannot read file: ") + std::strerror(errno)));
      return r;
    }
    if (S_ISDIR(st.st_mode)) {
      r.diagnostics.push_back(fatal(path, "io-error", "is a directory"));
      return r;
    }
    if (!S_ISREG(st.st_mode)) {
      r.diagnostics.push_back(fatal(path, "io-error", std::string("not a regular file (") +
                                                          special_file_kind(st.st_mode) + "); not analysed"));
      return r;
    }
    auto too_large = [&](uint64_t size) {
      r.diagnostics.push_back(fatal(path, "too-large", too_large_message(size, opts.max_file_size)));
      return r;
    };
    if (static_cast<uint64_t>(st.st_size) > opts.max_file_size) return too_large(static_cast<uint64_t>(st.st_size));
    text.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    for (;;) {
      if (got == text.size()) {
        if (got > opts.max_file_size) return too_large(got);
        text.resize(std::min<uint64_t>(std::max<size_t>(2 * got, 4096), opts.max_file_size + 1));
      }
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        r.diagnostics.push_back(fatal(path, "io-error", std::string("read error: ") + std::strerror(errno)));
        return r;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
  }
  if (text.size() > opts.max_file_size) {
    r.diagnostics.push_back(fatal(path, "too-large", "input over the size limit; not analysed"));
    return r;
  }
  if (is_notebook_path(path)) {
    std::string err;
    auto nb = load_notebook(text, &err);
    if (!nb) {
      r.diagnostics.push_back(fatal(path, "syntax-error", err + "; not analysed"));
      return r;
    }
    return analyze_notebook(path, *nb, std::move(text), cfg, opts, nullptr, summary);
  }
  size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    uint32_t l, c;
    line_col_of(text, nul, &l, &c);
    r.diagnostics.push_back(fatal(path, "encoding", "file contains a NUL byte, which Python source cannot; not analysed", l, c));
    return r;
  }
  size_t bad = 0;
  if (!valid_utf8(text, &bad)) {
    std::string enc = coding_declaration(text);
    uint32_t l, c;
    line_col_of(text, bad, &l, &c);
    if (is_latin1_family(enc)) {
      // Analysed as decoded text; fixes are withheld because offsets differ from the file.
      FileResult t = analyze_text(path, latin1_to_utf8(text), cfg, opts, nullptr, summary);
      t.transcoded = true;
      for (auto& f : t.findings) f.fixes.clear();
      return t;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
    r.diagnostics.push_back(fatal(path, "encoding",
                                  std::string("invalid UTF-8 (byte ") + hex + ")" +
                                      (enc.empty() ? " and no coding declaration" : " for declared coding " + enc) +
                                      "; not analysed",
                                  l, c));
    return r;
  }
  if (opts.cache && summary && !text_override) {
    std::string key = opts.cache->key(path, text, cfg);
    FileResult cached;
    cached.path = path;
    if (opts.cache->load(key, cached, *summary)) {
      cached.source = std::move(text);
      return cached;
    }
    FileResult fresh = analyze_text(path, std::move(text), cfg, opts, nullptr, summary, keep);
    // A timeout depends on the machine and its load, not on the file: never cached.
    if (std::none_of(fresh.diagnostics.begin(), fresh.diagnostics.end(),
                     [](const Diagnostic& d) { return d.kind == "timeout"; }))
      opts.cache->store(key, fresh, *summary);
    return fresh;
  }
  return analyze_text(path, std::move(text), cfg, opts, nullptr, summary, keep);
}

namespace {

// Runs `work(i)` for i in [0, n) on `jobs` threads.
template <typename F>
void parallel_for(size_t n, int jobs, F work) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    prepare_thread_for_crash_report();
    for (size_t i; (i = next.fetch_add(1)) < n;) work(i);
  };
  jobs = static_cast<int>(std::min<size_t>(static_cast<size_t>(std::max(1, jobs)), std::max<size_t>(1, n)));
  if (jobs <= 1) {
    worker();
    return;
  }
  std::vector<std::thread> pool;
  for (int j = 0; j < jobs; ++j) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
}

// For each file: a module of a package that nothing in the tree installs. Its top package
// directory (the last of its parents with an `__init__.py` in the run) and the directories
// above it, up to the repository's root (the first with a `.git`), hold no setup.py,
// pyproject.toml or setup.cfg. Files outside every root, loose modules and non-Python files:
// false.
std::vector<bool> unpackaged_modules(const std::vector<std::string>& files, const std::vector<std::string>& roots) {
  namespace fs = std::filesystem;
  std::vector<bool> out(files.size());
  std::vector<fs::path> abs_roots;
  std::error_code ec;
  for (const std::string& r : roots) {
    fs::path p = fs::absolute(r, ec).lexically_normal();
    if (!ec) abs_roots.push_back(p);
  }
  std::unordered_set<std::string> in_run;
  std::vector<fs::path> abs(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    abs[i] = fs::absolute(files[i], ec).lexically_normal();
    if (!ec) in_run.insert(abs[i].string());
  }
  auto package = [&](const fs::path& dir) { return in_run.count((dir / "__init__.py").string()) > 0; };
  auto within = [&](const fs::path& dir) -> const fs::path* {
    for (const fs::path& r : abs_roots) {
      auto [ri, di] = std::mismatch(r.begin(), r.end(), dir.begin(), dir.end());
      if (ri == r.end() || (std::next(ri) == r.end() && ri->empty())) return &r;
    }
    return nullptr;
  };
  std::unordered_map<std::string, bool> installed;  // top package directory -> installed
  for (size_t i = 0; i < files.size(); ++i) {
    if (abs[i].extension() != ".py" || !package(abs[i].parent_path())) continue;
    fs::path top = abs[i].parent_path();
    while (top.has_parent_path() && top.parent_path() != top && package(top.parent_path())) top = top.parent_path();
    const fs::path* root = within(top);
    if (!root) continue;
    auto [it, fresh] = installed.try_emplace(top.string(), false);
    if (fresh) {
      // Up to the repository's root, which may lie above the run's (`leaklint src/` in a
      // repository whose pyproject.toml is at its top): only whether such a file exists is
      // asked there, nothing is read.
      int up = 0;
      for (fs::path d = top;; d = d.parent_path()) {
        for (const char* meta : {"setup.py", "pyproject.toml", "setup.cfg"})
          if (fs::exists(d / meta, ec)) it->second = true;
        if (it->second || fs::exists(d / ".git", ec) || !d.has_parent_path() || d.parent_path() == d || ++up > 32)
          break;
      }
    }
    out[i] = !it->second;
  }
  return out;
}

// A license file's name (lower case): `license`, `licence`, `copying`, `unlicense`, with an
// optional qualifier (`license-mit`, `license.apache`) and text extension (`.txt`, `.md`,
// `.rst`). Not a module that starts so (`license_plate_dataset.py`).
bool license_file_name(std::string_view name) {
  for (std::string_view ext : {".txt", ".md", ".rst"})
    if (name.size() > ext.size() && name.substr(name.size() - ext.size()) == ext) {
      name.remove_suffix(ext.size());
      break;
    }
  for (std::string_view stem : {"license", "licence", "copying", "unlicense"}) {
    if (name.rfind(stem, 0) != 0) continue;
    std::string_view rest = name.substr(stem.size());
    if (rest.empty()) return true;
    if (rest[0] != '-' && rest[0] != '.') continue;
    rest.remove_prefix(1);
    return !rest.empty() && rest.size() <= 12 &&
           std::all_of(rest.begin(), rest.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.'; });
  }
  return false;
}

// For each file: why it is code vendored from another project, "" when it is not. Three signs,
// below the run's root (a path the user names is what they asked to check):
// - a folder named as vendored code holds it (`third_party/`, `vendor/`, `external/`, ...);
// - a folder holds it that has a license file of its own while a folder above it, up to the
//   repository's root (the first with a `.git`, else the run's root), has one too: another
//   project copied into this one (a baseline's repository under `baselines/`);
// - in a repository, a folder holds it that has a `.git` of its own: a submodule's checkout
//   or a clone kept in the tree.
// Only names are looked at: whether such folders and files exist; nothing is read.
std::vector<std::string> vendored_code(const std::vector<std::string>& files, const std::vector<std::string>& roots) {
  namespace fs = std::filesystem;
  std::vector<std::string> out(files.size());
  std::error_code ec;
  struct Root {
    fs::path path, top;
    bool repository = false;  // top holds a `.git`
  };
  std::vector<Root> abs_roots;
  for (const std::string& r : roots) {
    fs::path p = fs::absolute(r, ec).lexically_normal();
    if (ec || !fs::is_directory(p, ec)) continue;
    if (!p.has_filename()) p = p.parent_path();  // ("dir/" normalises to a trailing empty name)
    fs::path top = p;
    bool repository = false;
    int up = 0;
    for (fs::path d = p; !ec; d = d.parent_path()) {
      if (fs::exists(d / ".git", ec)) {
        top = d;
        repository = true;
        break;
      }
      if (!d.has_parent_path() || d.parent_path() == d || ++up > 32) break;
    }
    abs_roots.push_back({p, top, repository});
  }
  if (abs_roots.empty()) return out;
  std::unordered_set<std::string> named_files;  // a file the user names is checked in full
  for (const std::string& r : roots) {
    fs::path p = fs::absolute(r, ec).lexically_normal();
    if (!ec && !fs::is_directory(p, ec)) named_files.insert(p.string());
  }
  std::unordered_map<std::string, bool> licensed;  // folder -> holds a license file
  auto has_license = [&](const fs::path& dir) {
    auto [it, fresh] = licensed.try_emplace(dir.string(), false);
    if (!fresh) return it->second;
    std::error_code e2;
    int seen = 0;
    for (fs::directory_iterator d(dir, e2), end; !e2 && d != end && ++seen < 4096; d.increment(e2)) {
      std::string name = d->path().filename().string();
      name = ascii_lower(std::move(name));
      if (license_file_name(name)) {
        std::error_code e3;
        if (d->is_regular_file(e3)) {
          it->second = true;
          break;
        }
      }
    }
    return it->second;
  };
  static constexpr std::string_view kVendorNames[] = {"third_party", "third-party", "thirdparty", "3rdparty",
                                                      "3rd_party",   "3rd-party",   "vendor",     "vendored",
                                                      "_vendor",     "extern",      "external",   "externals"};
  for (size_t i = 0; i < files.size(); ++i) {
    const fs::path file = fs::absolute(files[i], ec).lexically_normal();
    if (ec || named_files.count(file.string())) continue;
    const Root* root = nullptr;
    for (const Root& r : abs_roots) {
      auto [ri, fi] = std::mismatch(r.path.begin(), r.path.end(), file.begin(), file.end());
      if (ri == r.path.end() && (!root || r.path.string().size() > root->path.string().size())) root = &r;
    }
    if (!root) continue;
    // The folders between the root (excluded) and the file, outermost first.
    std::vector<fs::path> dirs;
    for (fs::path d = file.parent_path(); d != root->path && d.has_parent_path() && d.parent_path() != d;
         d = d.parent_path())
      dirs.push_back(d);
    std::reverse(dirs.begin(), dirs.end());
    const std::string root_text = root->path.string();
    auto shown = [&](const fs::path& d) { return escape_path(d.string().substr(root_text.size() + 1)) + "/"; };
    for (const fs::path& d : dirs) {
      std::string name = d.filename().string();
      name = ascii_lower(std::move(name));
      if (std::find(std::begin(kVendorNames), std::end(kVendorNames), name) != std::end(kVendorNames)) {
        out[i] = "`" + shown(d) + "` holds vendored third-party code, fixed upstream rather than here";
        break;
      }
      // A repository inside the repository: a submodule's checkout (its `.git` file) or a
      // clone kept in the tree.
      if (root->repository && fs::exists(d / ".git", ec)) {
        out[i] = "`" + shown(d) + "` is another repository inside this one (a submodule or a clone), fixed "
                 "upstream rather than here";
        break;
      }
      if (!has_license(d)) continue;
      bool enclosed = false;
      for (fs::path e = d.parent_path(); !enclosed; e = e.parent_path()) {
        enclosed = has_license(e);
        if (e == root->top || !e.has_parent_path() || e.parent_path() == e) break;
      }
      if (enclosed) {
        out[i] = "`" + shown(d) + "` is another project vendored into this one (it has a license file of its own), "
                 "fixed upstream rather than here";
        break;
      }
    }
  }
  return out;
}

}  // namespace

// Source bytes whose lowered modules analyze_all keeps for the cross-file re-check.
constexpr uint64_t kKeptSourceBytes = 32ull << 20;  // about 15x that in modules

std::vector<FileResult> analyze_all(const std::vector<std::string>& files, ConfigResolver& configs,
                                    const EngineOptions& opts) {
  std::vector<FileResult> results(files.size());
  std::vector<FileSummary> summaries(files.size());
  std::vector<std::shared_ptr<const Config>> cfgs(files.size());
  int jobs = opts.jobs > 0 ? opts.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> done{0};
  std::vector<std::unique_ptr<Module>> kept(files.size());
  std::atomic<uint64_t> kept_bytes{0};
  auto config_of = [&](size_t i) {
    std::string err;
    cfgs[i] = configs.for_file(files[i], &err);
    if (err.empty()) return true;
    results[i].path = files[i];
    results[i].diagnostics.push_back(fatal(files[i], "config", err));
    return false;
  };
  // C++ translation units go to the companion process pool (it loads Clang; leaklint does
  // not), which runs while this process analyses the Python files.
  std::vector<size_t> cpp_index;
  std::vector<std::string> cpp_files;
  for (size_t i = 0; i < files.size(); ++i)
    if (!is_python_source(files[i]) && !is_notebook_path(files[i]) && config_of(i)) {
      // Relevance: a unit whose text holds nothing a C++ rule starts from (a CUDA kernel,
      // Python bindings) never reaches Clang.
      std::string text;
      if (read_regular_file(files[i], opts.max_file_size, text) && !cpp_may_hold_a_pattern(text)) {
        results[i].path = files[i];
        // A CUDA source, or one that names a GPU, is GPU evidence for the project even with
        // nothing for Clang to read.
        summaries[i].gpu_evidence = is_cuda_path(files[i]) || cpp_text_mentions_gpu(text);
        if (opts.cpp.verbose)
          std::cerr << "leaklint: " << escape_path(files[i])
                    << ": skipped: nothing a C++ rule looks for (forward/backward calls, optimizer steps, grad "
                       "guards, data loaders, emptyCache, fork, model loading)\n";
        continue;
      }
      cpp_index.push_back(i);
      cpp_files.push_back(files[i]);
    }
  std::vector<FileResult> cpp_results;
  std::vector<FileSummary> cpp_impact;
  std::thread cpp_thread;
  if (!cpp_files.empty()) {
    CppDriverOptions co = opts.cpp;
    co.jobs = jobs;
    if (!co.max_file_size_kib) co.max_file_size_kib = std::max<uint64_t>(1, opts.max_file_size / 1024);
    cpp_thread = std::thread(
        [&cpp_results, &cpp_impact, &cpp_files, co] { cpp_results = analyze_cpp_files(cpp_files, co, &cpp_impact); });
  }
  parallel_for(files.size(), jobs, [&](size_t i) {
    const std::string& path = files[i];
    if (!is_python_source(path) && !is_notebook_path(path)) return;  // C++: above
    if (!config_of(i)) return;
    if (crashed_files().count(path)) {
      // A previous attempt of this run crashed on it (crash_guard.hpp).
      results[i].path = path;
      results[i].diagnostics.push_back(
          fatal(path, "internal-error",
                "leaklint crashed while analysing this file (a defect of leaklint: please report it with the file); "
                "not analysed, and the other files were analysed without it"));
      return;
    }
    analysing(&path);
    maybe_injected_crash(path);
    // The lowered module is kept for the cross-file re-check while the modules kept hold
    // less than kKeptSourceBytes of source; past it, a re-checked file is parsed again.
    std::unique_ptr<Module> module;
    results[i] = analyze_file(path, *cfgs[i], opts, nullptr, &summaries[i], &module);
    if (module && kept_bytes.fetch_add(results[i].source.size()) + results[i].source.size() <= kKeptSourceBytes)
      kept[i] = std::move(module);
    analysing(nullptr);
    if (opts.progress) opts.progress(done.fetch_add(1) + 1, files.size());
  });
  if (cpp_thread.joinable()) {
    cpp_thread.join();
    for (size_t k = 0; k < cpp_index.size(); ++k) {
      sort_result(cpp_results[k]);
      results[cpp_index[k]] = std::move(cpp_results[k]);
      if (k < cpp_impact.size()) summaries[cpp_index[k]] = std::move(cpp_impact[k]);
      if (opts.progress) opts.progress(done.fetch_add(1) + 1, files.size());
    }
  }
  // Cross-file facts: only files that another file says something about are analysed again.
  std::vector<ProjectView> views = join_summaries(summaries);
  std::vector<size_t> again;
  for (size_t i = 0; i < files.size(); ++i)
    if (!views[i].empty() && !results[i].source.empty() && !results[i].transcoded && cfgs[i] &&
        (is_python_source(files[i]) || is_notebook_path(files[i])))
      again.push_back(i);
  parallel_for(again.size(), jobs, [&](size_t k) {
    size_t i = again[k];
    analysing(&files[i]);
    if (is_notebook_path(files[i])) {
      // A notebook's code cells, analysed again with what the project's modules say (the
      // trainer it imports from the `utils.py` beside it), mapped back onto the .ipynb bytes.
      std::string err;
      if (auto nb = load_notebook(results[i].source, &err))
        results[i] = analyze_notebook(files[i], *nb, std::move(results[i].source), *cfgs[i], opts, &views[i], nullptr);
    } else if (kept[i]) {
      results[i] = recheck(results[i], *kept[i], *cfgs[i], opts, &views[i]);
    } else {
      std::string text = results[i].source;
      results[i] = analyze_text(files[i], std::move(text), *cfgs[i], opts, &views[i]);
    }
    analysing(nullptr);
  });
  kept.clear();
  // The impact policy across files (docs/impact.md): programs, and nothing anywhere that
  // places a tensor on a GPU. A file that was not analysed could hold such evidence.
  bool program = false, gpu = false;
  for (size_t i = 0; i < files.size(); ++i) {
    // (A launcher without torch of its own, `main.py` running the trainer it imports, is a
    // program of the run; a script of the tree that reaches no torch is not one of its programs.)
    program = program || (summaries[i].program && (summaries[i].imports_torch || views[i].torch_via_project ||
                                                   !(is_python_source(files[i]) || is_notebook_path(files[i]))));
    gpu = gpu || summaries[i].gpu_evidence;
    for (const Diagnostic& d : results[i].diagnostics) gpu = gpu || d.fatal;
  }
  if (program && !gpu)
    for (FileResult& r : results) weaken_memory_claims(r);
  // Code nothing calls, and modules only CPU-only programs import: only when every Python file
  // and notebook of the run was read, since one that was not (undecodable, too large, a crash)
  // may be the caller.
  bool whole_python = opts.whole_tree;
  for (size_t i = 0; i < files.size() && whole_python; ++i)
    if (is_python_source(files[i]) || is_notebook_path(files[i]))
      for (const Diagnostic& d : results[i].diagnostics) whole_python = whole_python && !d.fatal;
  if (whole_python) {
    const std::vector<bool> unpackaged = unpackaged_modules(files, opts.cpp.roots);
    if (!(program && !gpu)) weaken_cpu_only_importers(results, summaries, unpackaged);
    weaken_uncalled(results, summaries, unpackaged);
  }
  const std::vector<std::string> vendored = vendored_code(files, opts.cpp.roots);
  for (size_t i = 0; i < files.size(); ++i)
    if (!vendored[i].empty()) weaken_vendored(results[i], vendored[i]);
  return results;
}

}  // namespace ll
