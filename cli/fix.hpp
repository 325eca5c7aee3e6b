// Applying fixes: select safe (and with --unsafe-fixes, unsafe) fixes, apply them to the
// text, re-parse and re-lint; roll back a round that introduces a syntax error; repeat
// until nothing changes (fixes converge). Each file's read-fix-write cycle runs under an
// advisory lock and never overwrites an edit made meanwhile (LockedFile below).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <sys/stat.h>

#include "cli/engine.hpp"

namespace ll {

struct FixOutcome {
  std::string original;
  std::string fixed;
  int applied = 0;                 // fixes applied
  std::vector<std::string> errors; // rolled-back rounds, write failures
  FileResult final_result;         // lint result of the fixed text
  bool written = false;            // the file on disk already holds `fixed` (C++)
};

// Applies the fixes of `result` (a lint of `original`) and iterates to a fixed point.
FixOutcome fix_text(const std::string& path, const std::string& original, const FileResult& result,
                    const Config& cfg, const EngineOptions& opts, bool unsafe);

class LockedFile;

// C++: leaklint-cpp reads the file from disk (compile command, headers), so each round is
// written (atomically, through `file`, which must hold `original`) and re-analysed; a round
// that adds a compile error is written back. With `file` null (--diff) one round is
// computed and nothing is touched.
FixOutcome fix_cpp_file(const std::string& path, const std::string& original, const FileResult& result,
                        const Config& cfg, const EngineOptions& opts, bool unsafe, LockedFile* file);

// The edits of one round: the first fix of each unsuppressed finding (safe ones, and unsafe
// ones when `unsafe`), skipping fixes that overlap one already taken. `fixes` gets the count.
std::vector<Edit> select_fix_edits(const FileResult& result, bool unsafe, int* fixes = nullptr);

// Applies a list of edits to a text (non-overlapping; overlapping ones are skipped).
std::string apply_edits(const std::string& text, std::vector<Edit> edits, int* applied = nullptr);

// Writes `text` to `path` atomically (an anonymous O_TMPFILE, or a `.leaklint-fix-XXXXXX`
// file where the file system lacks it, in the same directory + rename), so the file holds
// either its old or its new bytes, never part of them and never nothing. A symlink is
// written through (the link stays a link); permission bits, and the owner where the
// process may set it, are kept; a new file gets 0666 & ~umask. Used for files leaklint
// owns (the baseline); source files go through LockedFile.
bool write_atomic(const std::string& path, const std::string& text, std::string* error);

// A source file held for one read-fix-write cycle. open() resolves symlinks (the real file
// is written, the link is kept), refuses a real path outside `roots` (the paths named on
// the command line, themselves resolved; empty = anywhere), refuses a file without write
// permission unless `allow_read_only` (checked by leaklint itself, so root is refused
// too), takes flock(LOCK_EX) on the file and re-checks that the path still names the
// locked inode (another leaklint replaces files by rename), then reads the content.
// replace() re-reads the file right before the atomic rename and refuses (changed() turns
// true) when it no longer holds content(), so an edit saved meanwhile is never lost. Each
// inode written stays locked until the object dies, so a concurrent leaklint waits for the
// whole cycle (several rounds for C++) and then fixes what is left.
class LockedFile {
 public:
  LockedFile() = default;
  ~LockedFile();
  LockedFile(const LockedFile&) = delete;
  LockedFile& operator=(const LockedFile&) = delete;

  bool open(const std::string& path, const std::vector<std::string>& roots, bool allow_read_only,
            std::string* error);
  bool replace(const std::string& text, std::string* error);
  const std::string& content() const { return content_; }
  const std::string& real_path() const { return real_; }
  bool changed() const { return changed_; }

 private:
  std::string real_, content_;
  std::vector<int> fds_;  // every inode this cycle has held, the current one last
  struct stat st_ {};     // of the current one, as last read or written
  bool changed_ = false;
};

// Options of one --fix / --diff run over many files.
struct FixRunOptions {
  bool unsafe = false;
  bool diff = false;           // print a unified diff to `out`, write nothing
  bool to_stdout = false;      // --stdin-filename: print the fixed text to `out`
  bool fix_read_only = false;  // --fix-read-only
  std::vector<std::string> roots;  // the paths named on the command line
};

// Fixes one analysed file (Python, notebook or C++) under a LockedFile: when the file no
// longer holds the analysed text (edited, or fixed by a concurrent run) it is analysed
// again under the lock and what is left is fixed. Errors go to `err` and set *failed; the
// diff or fixed text goes to `out`. `r` becomes the result of the written file. Returns
// the number of fixes written (or shown), never counting one that was not written.
int fix_file(FileResult& r, const Config& cfg, const EngineOptions& opts, const FixRunOptions& o,
             std::ostream& out, std::ostream& err, bool* failed);

// A unified diff of two texts (`--- a/path` / `+++ b/path`, 3 lines of context).
std::string unified_diff(const std::string& path, const std::string& a, const std::string& b);

}  // namespace ll
