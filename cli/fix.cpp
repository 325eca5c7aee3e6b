#include "cli/fix.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <ostream>
#include <random>
#include <set>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checks/checks.hpp"
#include "cli/discover.hpp"
#include "cli/notebook.hpp"

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

// What --fix may act on is what the report shows: low-confidence findings the file's
// configuration hides (show-low-confidence) are left alone, their fixes too.
// A file analysed again while fixing keeps what the whole run decided about it (the
// project-level impact policy of `before`, the run's first result).
FileResult relinted(FileResult fresh, const FileResult& before) {
  if (!before.cpu_only.empty()) weaken_memory_claims(fresh, before.cpu_only);
  if (!before.vendored.empty()) weaken_vendored(fresh, before.vendored);
  fresh.uncalled = before.uncalled;
  return fresh;
}

FileResult shown(FileResult r, const Config& cfg) {
  hide_low_confidence(r, cfg.show_low_confidence);
  return r;
}

// Keeps the run's decision that nothing in the tree calls some of the file's functions
// (`before.uncalled`) on a fresh analysis with its summary: wherever edits moved them, their
// findings stay weak and their fixes are left alone.
void keep_uncalled(FileResult& r, const FileSummary& summary, const FileResult& before) {
  if (before.uncalled.empty()) return;
  weaken_uncalled_in(r, summary, [&](const FileSummary::Holding& h) {
    return std::find(before.uncalled.begin(), before.uncalled.end(), uncalled_key(h)) != before.uncalled.end();
  });
}

// A fresh analysis (with its summary) under both of the run's decisions about the file.
FileResult as_decided(FileResult r, const FileSummary& summary, const FileResult& before) {
  keep_uncalled(r, summary, before);
  return relinted(std::move(r), before);
}

// Analyses edited text (in memory) as the run decided about the file.
FileResult relint_text(const std::string& path, const std::string& text, const Config& cfg, const EngineOptions& opts,
                       const FileResult& before) {
  FileSummary summary;
  FileResult r = analyze_text(path, text, cfg, opts, nullptr, &summary);
  return as_decided(std::move(r), summary, before);
}

// Analyses the file (or `text` in its place) again as the run decided about it.
FileResult relint_file(const std::string& path, const Config& cfg, const EngineOptions& opts, const std::string* text,
                       const FileResult& before) {
  FileSummary summary;
  FileResult r = analyze_file(path, cfg, opts, text, &summary);
  return as_decided(std::move(r), summary, before);
}

}  // namespace

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
    relint = shown(relint_text(path, next, cfg, opts, first), cfg);
    if (syntax_errors(relint) <= base_errors) return true;
    out.errors.push_back("a fix would introduce a syntax error; rolled back (please report this)");
    return false;
  });
}

FixOutcome fix_cpp_file(const std::string& path, const std::string& original, const FileResult& first,
                        const Config& cfg, const EngineOptions& opts, bool unsafe, LockedFile* file) {
  int base_errors = syntax_errors(first);
  return fix_loop(original, first, unsafe, [&](const std::string& next, FileResult& relint, bool& more, FixOutcome& out) {
    if (!file) {  // --diff: one round, shown, nothing touched
      relint = first;
      more = false;
      return true;
    }
    std::string err;
    if (!file->replace(next, &err)) {
      out.errors.push_back(err);
      return false;
    }
    out.written = true;
    relint = shown(relint_file(path, cfg, opts, nullptr, first), cfg);
    if (syntax_errors(relint) <= base_errors) return true;
    if (!file->replace(out.fixed, &err)) out.errors.push_back("could not restore the file: " + err);
    out.errors.push_back("a fix would introduce a compile error; rolled back (please report this)");
    return false;
  });
}

namespace {

// An editor's C++ buffer (--fix --stdin-filename): each round is re-analysed through a
// temporary copy beside the file, and a round that adds a compile error is rolled back.
FixOutcome fix_cpp_buffer(const std::string& path, const std::string& original, const FileResult& first,
                          const EngineOptions& opts, bool unsafe) {
  int base_errors = syntax_errors(first);
  return fix_loop(original, first, unsafe, [&](const std::string& next, FileResult& relint, bool&, FixOutcome& out) {
    relint = relinted(analyze_cpp_buffer(path, next, opts), first);
    if (syntax_errors(relint) <= base_errors) return true;
    out.errors.push_back("a fix would introduce a compile error; rolled back (please report this)");
    return false;
  });
}

const char kTempPrefix[] = ".leaklint-fix-";

std::string dir_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return path.substr(0, slash == 0 ? 1 : slash);
}

// `.leaklint-fix-` and six letters or digits: the only names leaklint creates and removes.
bool is_temp_name(const char* name) {
  size_t n = std::strlen(name), p = sizeof kTempPrefix - 1;
  if (n != p + 6 || std::strncmp(name, kTempPrefix, p) != 0) return false;
  for (size_t i = p; i < n; ++i)
    if (!std::isalnum(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

std::string temp_name(const std::string& dir) {
  static const char kAlnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  static std::mutex mu;
  static std::mt19937_64 rng{std::random_device{}() ^ (static_cast<uint64_t>(::getpid()) << 32)};
  std::lock_guard<std::mutex> lock(mu);
  std::string name = dir + "/" + kTempPrefix;
  for (int i = 0; i < 6; ++i) name += kAlnum[rng() % (sizeof kAlnum - 1)];
  return name;
}

mode_t process_umask() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8) & 0777);
  return 022;
}

// Removes `.leaklint-fix-XXXXXX` files that a killed run left in `dir` (once per directory
// and process). A writer holds flock on its temporary file from creation to rename, so
// one that can be locked has no writer left.
void remove_stale_temps(const std::string& dir) {
  static std::mutex mu;
  static std::set<std::string> done;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!done.insert(dir).second) return;
  }
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  while (const dirent* e = ::readdir(d)) {
    if (!is_temp_name(e->d_name)) continue;
    std::string p = dir + "/" + e->d_name;
    int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat a {}, b {};
    if (::fstat(fd, &a) == 0 && S_ISREG(a.st_mode) && ::flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        ::lstat(p.c_str(), &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
      ::unlink(p.c_str());
    ::close(fd);
  }
  ::closedir(d);
}

bool write_all(int fd, const std::string& text, std::string* error) {
  size_t off = 0;
  while (off < text.size()) {
    ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      *error = std::string("write failed: ") + std::strerror(errno);
      return false;
    }
    off += static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, std::string* out) {
  out->clear();
  char buf[65536];
  for (off_t off = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) return true;
    out->append(buf, static_cast<size_t>(n));
    off += n;
  }
}

void lock_fd(int fd) {
  // Where the file system has no flock (ENOLCK), the content check before the rename
  // still guards the file.
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
}

// Writes `text` to a new temporary file next to `target` (locked from its creation, mode
// 0600 until complete), gives it the owner and mode of `like` (null: a new file), and
// renames it over `target` if `check` (run right before the file is named and renamed) agrees. With O_TMPFILE
// the file has no name until just before the rename, so a killed run leaves nothing.
// On success `*fd_out` (when non-null) gets the new inode's locked descriptor.
bool replace_file(const std::string& target, const std::string& text, const struct stat* like,
                  const std::function<bool(std::string*)>& check, int* fd_out, std::string* error) {
  const std::string dir = dir_of(target);
  remove_stale_temps(dir);
  // The named temporary file that exists right now (from its creation or linkat to the
  // rename): SIGINT/SIGTERM/SIGHUP remove it before the process dies (engine.hpp).
  std::string name;
  int fd = -1, slot = -1;
#ifdef O_TMPFILE
  fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
  if (fd < 0) {  // no O_TMPFILE here: a named one
    for (int tries = 0; fd < 0 && tries < 100; ++tries) {
      name = temp_name(dir);
      fd = ::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0 && errno != EEXIST) break;
      if (fd >= 0) slot = track_temp_file(name);
    }
    if (fd < 0) {
      *error = "cannot create a temporary file next to " + target + ": " + std::strerror(errno);
      return false;
    }
  }
  lock_fd(fd);
  auto fail = [&](const std::string& msg) {
    if (!msg.empty()) *error = msg;
    if (!name.empty()) ::unlink(name.c_str());
    untrack_temp_file(slot);
    ::close(fd);
    return false;
  };
  if (!write_all(fd, text, error)) return fail("");
  if (like) {
    // Owner first (chown clears set-id bits), then the mode. Root keeps any owner; others
    // can keep the group at best.
    if (::fchown(fd, like->st_uid, like->st_gid) != 0) (void)::fchown(fd, static_cast<uid_t>(-1), like->st_gid);
    (void)::fchmod(fd, like->st_mode & 07777);
  } else {
    (void)::fchmod(fd, 0666 & ~process_umask());
  }
  if (::fsync(fd) != 0) return fail(std::string("write failed: ") + std::strerror(errno));
  // The check reads the target, which takes time on a large file: done before the anonymous
  // file gets its name, a kill (SIGKILL, which nothing can clean up after) leaves a named
  // temporary file only in the two system calls between linkat and rename.
  if (check && !check(error)) return fail("");
  if (name.empty()) {  // give the anonymous file a name to rename
    std::string proc = "/proc/self/fd/" + std::to_string(fd);
    for (int tries = 0; tries < 100; ++tries) {
      std::string n = temp_name(dir);
      if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, n.c_str(), AT_SYMLINK_FOLLOW) == 0 ||
          ::linkat(fd, "", AT_FDCWD, n.c_str(), AT_EMPTY_PATH) == 0) {
        name = n;
        slot = track_temp_file(name);
        break;
      }
      if (errno != EEXIST) break;
    }
    if (name.empty()) return fail("cannot create a temporary file next to " + target + ": " + std::strerror(errno));
  }
  if (::rename(name.c_str(), target.c_str()) != 0)
    return fail("cannot replace " + target + ": " + std::strerror(errno));
  untrack_temp_file(slot);
  if (fd_out) *fd_out = fd;
  else ::close(fd);
  return true;
}

}  // namespace

bool write_atomic(const std::string& path, const std::string& text, std::string* error) {
  std::string target = path;
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {  // write through the link
    char* rp = ::realpath(path.c_str(), nullptr);
    if (!rp) {
      *error = "cannot resolve the symlink " + path + ": " + std::strerror(errno);
      return false;
    }
    target = rp;
    std::free(rp);
  }
  struct stat st {};
  bool have = ::stat(target.c_str(), &st) == 0;
  return replace_file(target, text, have ? &st : nullptr, nullptr, nullptr, error);
}

LockedFile::~LockedFile() {
  for (size_t i = fds_.size(); i-- > 0;) ::close(fds_[i]);
}

bool LockedFile::open(const std::string& path, const std::vector<std::string>& roots, bool allow_read_only,
                      std::string* error) {
  char* rp = ::realpath(path.c_str(), nullptr);
  if (!rp) {
    *error = std::string("cannot resolve the path: ") + std::strerror(errno);
    return false;
  }
  real_ = rp;
  std::free(rp);
  if (!roots.empty()) {
    bool inside = false;
    for (const std::string& root : roots) {
      char* r = ::realpath(root.c_str(), nullptr);
      if (!r) continue;
      std::string R = r;
      std::free(r);
      if (R == "/" || real_ == R || (real_.size() > R.size() && real_.compare(0, R.size(), R) == 0 && real_[R.size()] == '/'))
        inside = true;
    }
    if (!inside) {
      *error = "resolves to " + real_ + ", outside the paths being fixed; not written";
      return false;
    }
  }
  for (int attempt = 0; attempt < 1000; ++attempt) {
    int fd = ::open(real_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      *error = std::string("cannot open: ") + std::strerror(errno);
      return false;
    }
    struct stat a {}, b {};
    if (::fstat(fd, &a) != 0 || !S_ISREG(a.st_mode)) {
      ::close(fd);
      *error = "not a regular file; not written";
      return false;
    }
    lock_fd(fd);
    // Another leaklint may have replaced the file (rename) while we waited: lock that one.
    if (::fstat(fd, &a) != 0 || ::stat(real_.c_str(), &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
      ::close(fd);
      continue;
    }
    if (!allow_read_only && ((a.st_mode & 0222) == 0 || ::faccessat(AT_FDCWD, real_.c_str(), W_OK, AT_EACCESS) != 0)) {
      ::close(fd);
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(a.st_mode & 07777));
      *error = std::string((a.st_mode & 0222) == 0 ? "file is read-only" : "file is not writable by this user") +
               " (mode " + mode + "); not fixed (--fix-read-only fixes it anyway)";
      return false;
    }
    if (!read_all(fd, &content_)) {
      *error = std::string("cannot read: ") + std::strerror(errno);
      ::close(fd);
      return false;
    }
    st_ = a;
    fds_.push_back(fd);
    return true;
  }
  *error = "the file kept being replaced; not written";
  return false;
}

bool LockedFile::replace(const std::string& text, std::string* error) {
  if (fds_.empty()) {
    *error = "internal: file not open";
    return false;
  }
  const int cur = fds_.back();
  // Right before the rename: the path must still name the inode we read, unmodified.
  auto unchanged = [&](std::string* e) {
    struct stat a {}, b {};
    bool same = ::fstat(cur, &a) == 0 && ::stat(real_.c_str(), &b) == 0 && a.st_ino == b.st_ino &&
                a.st_dev == b.st_dev && a.st_size == st_.st_size && a.st_mtim.tv_sec == st_.st_mtim.tv_sec &&
                a.st_mtim.tv_nsec == st_.st_mtim.tv_nsec;
    std::string now;
    if (same) same = read_all(cur, &now) && now == content_;
    if (!same) {
      changed_ = true;
      *e = "the file changed while it was being fixed; not written (run leaklint --fix again)";
    }
    return same;
  };
  int fd = -1;
  if (!replace_file(real_, text, &st_, unchanged, &fd, error)) return false;
  fds_.push_back(fd);
  (void)::fstat(fd, &st_);
  content_ = text;
  return true;
}

namespace {

bool has_fix(const FileResult& r, bool unsafe) {
  for (const auto& f : r.findings)
    if (!f.suppressed && !f.fixes.empty() && (f.fixes[0].safe || unsafe)) return true;
  return false;
}

// The fixed .ipynb text of `json` (nullopt when nothing changes or, with *error set, when
// the fixes cannot be mapped back into the cells).
std::optional<std::string> fix_notebook(const std::string& path, const std::string& json, const Config& cfg,
                                        const EngineOptions& opts, bool unsafe, int* applied,
                                        std::vector<std::string>* errors, const FileResult& before) {
  std::string err;
  auto nb = load_notebook(json, &err);
  if (!nb) return std::nullopt;
  FileResult v = shown(relint_text(path, nb->python, cfg, opts, before), cfg);
  FixOutcome o = fix_text(path, nb->python, v, cfg, opts, unsafe);
  for (auto& e : o.errors) errors->push_back(e);
  if (o.fixed == o.original) return std::nullopt;
  auto out = apply_notebook_edits(json, *nb, o.fixed);
  if (!out) {
    errors->push_back("fixes could not be mapped back into the notebook's cells");
    return std::nullopt;
  }
  *applied = o.applied;
  return out;
}

}  // namespace

// A notebook's changes cell by cell (`--- a/nb.ipynb:cell 3`), as the cells' source: a
// diff of the .ipynb JSON would show escaped text, and a minified notebook is one line.
std::string notebook_diff(const std::string& path, const std::string& before, const std::string& after) {
  auto a = code_cell_sources(before), b = code_cell_sources(after);
  if (a.size() != b.size()) return unified_diff(path, before, after);
  auto with_newline = [](std::string s) {
    if (!s.empty() && s.back() != '\n') s += '\n';
    return s;
  };
  std::string out;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].second != b[i].second)
      out += unified_diff(path + ":cell " + std::to_string(a[i].first), with_newline(a[i].second),
                          with_newline(b[i].second));
  return out;
}

int fix_file(FileResult& r, const Config& cfg, const EngineOptions& opts, const FixRunOptions& o, std::ostream& out,
             std::ostream& err, bool* failed) {
  const bool notebook = is_notebook_path(r.path), cpp = is_cpp_path(r.path);
  if (!notebook && !has_fix(r, o.unsafe)) return 0;
  auto report = [&](const std::vector<std::string>& errors, bool fatal) {
    for (const auto& e : errors) err << r.path << ": error: " << e << "\n";
    if (fatal && !errors.empty()) *failed = true;
  };

  if (o.diff || o.to_stdout) {  // nothing is written: fix the analysed text
    int applied = 0;
    std::vector<std::string> errors;
    std::string before = r.source, after;
    if (notebook) {
      auto json = fix_notebook(r.path, r.source, cfg, opts, o.unsafe, &applied, &errors, r);
      report(errors, !json && !errors.empty());
      if (!json) return 0;
      after = *json;
      if (o.to_stdout) r = relint_file(r.path, cfg, opts, &after, r);  // report what is left
    } else {
      FixOutcome f = cpp ? (o.to_stdout ? fix_cpp_buffer(r.path, r.source, r, opts, o.unsafe)
                                        : fix_cpp_file(r.path, r.source, r, cfg, opts, o.unsafe, nullptr))
                         : fix_text(r.path, r.source, r, cfg, opts, o.unsafe);
      report(f.errors, false);
      if (f.fixed == f.original) return 0;
      applied = f.applied;
      after = std::move(f.fixed);
      if (o.to_stdout) r = std::move(f.final_result);
    }
    if (o.diff && notebook) out << notebook_diff(r.path, before, after);
    else if (o.diff) out << unified_diff(r.path, before, after);
    else out << after;
    return applied;
  }

  LockedFile file;
  std::string e;
  if (!file.open(r.path, o.roots, o.fix_read_only, &e)) {
    report({e}, true);
    return 0;
  }
  FileResult fresh;
  const FileResult* current = &r;
  if ((file.content() != r.source || cpp) && !notebook) {
    // Changed since it was analysed (an edit, or a concurrent run that fixed it first):
    // analyse what the file holds now, under the lock, and fix what is left. C++ always:
    // its result's text is read after leaklint-cpp analysed the file, so matching text
    // does not prove that the findings' offsets belong to it.
    fresh = shown(relint_file(r.path, cfg, opts, cpp ? nullptr : &file.content(), r), cfg);
    if (cpp && fresh.source != file.content()) {
      report({"the file changed while it was being fixed; not written (run leaklint --fix again)"}, true);
      return 0;
    }
    current = &fresh;
    if (!has_fix(fresh, o.unsafe)) {
      r = std::move(fresh);
      return 0;
    }
  }

  if (notebook) {
    int applied = 0;
    std::vector<std::string> errors;
    auto json = fix_notebook(r.path, file.content(), cfg, opts, o.unsafe, &applied, &errors, r);
    report(errors, !json && !errors.empty());
    if (!json) return 0;
    if (!file.replace(*json, &e)) {
      report({e}, true);
      return 0;
    }
    r = relint_file(r.path, cfg, opts, &file.content(), r);
    return applied;
  }

  const std::string original = file.content();
  FixOutcome f = cpp ? fix_cpp_file(r.path, original, *current, cfg, opts, o.unsafe, &file)
                     : fix_text(r.path, original, *current, cfg, opts, o.unsafe);
  report(f.errors, file.changed());
  if (f.fixed == f.original) {
    if (current == &fresh) r = std::move(fresh);
    return 0;
  }
  if (!cpp && !file.replace(f.fixed, &e)) {
    report({e}, true);
    return 0;
  }
  r = std::move(f.final_result);
  return f.applied;
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
      // On a tie the removal first: a changed line reads `-old` then `+new`.
      else if (i < n && (j == m || L[i + 1][j] >= L[i][j + 1])) { ops.emplace_back('-', A[pre + i]); ++i; }
      else { ops.emplace_back('+', B[pre + j]); ++j; }
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
