// Content-addressed result cache: a file's findings, diagnostics and cross-file summary,
// keyed by a SHA-256 of its bytes, its path, the configuration that applies to it and the
// leaklint binary itself. Stored under $LEAKLINT_CACHE_DIR, $XDG_CACHE_HOME/leaklint or
// ~/.cache/leaklint, in results-v2/<first two hex digits of the key>/<key>.
//
// The cache is never trusted for code, and never trusted blindly for anything else:
// * Entries hold no fix edits (only each fix's title and safety, for the "fix available"
//   hint). A run that applies or prints edits (--fix, --diff, json/sarif; `edits_needed`)
//   treats an entry that records a fix as a miss, so the file is analysed and its edits
//   are computed from the source. Whoever can write the cache cannot inject code.
// * Each entry records its key, its payload length and a SHA-256 of key and payload,
//   verified on every read; any mismatch is a miss and the entry is rewritten. Numbers,
//   types and severities are validated while decoding.
// * Entries are opened with O_NOFOLLOW|O_NONBLOCK, must be regular files (fstat) of at
//   most kMaxEntryBytes; directories, FIFOs, symlinks and devices are misses.
// * Entries are written to a temporary file and renamed into place. A short write, a
//   write error (EFBIG, ENOSPC; SIGXFSZ is ignored) or a failed close removes the
//   temporary file instead. There is no fsync: after a crash a torn entry fails its
//   checksum and is simply rewritten.
// * Files under kMinCachedBytes are not cached (cheaper to analyse than to look up).
// * Size cap: $LEAKLINT_RESULT_CACHE_MAX_MB (default 256 MiB of allocated blocks). Once
//   per run, after a run that stored entries, the oldest entries (by mtime; a hit
//   refreshes an entry's mtime at most once a day) are removed down to 90% of the cap,
//   and temporary files left by killed runs (older than an hour) are removed.
// Any problem (unwritable directory, corrupt entry) makes the cache step aside: the file
// is simply analysed.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>

#include "checks/project.hpp"
#include "rules/config.hpp"
#include "rules/finding.hpp"

namespace ll {

class ResultCache {
 public:
  // `dir` empty: the default location. A cache that cannot be used is disabled.
  // `edits_needed`: this run applies or prints fix edits (see above).
  explicit ResultCache(std::string dir = {}, bool edits_needed = false);
  ~ResultCache();  // enforces the size cap when this run stored entries
  ResultCache(const ResultCache&) = delete;
  ResultCache& operator=(const ResultCache&) = delete;

  bool enabled() const { return enabled_; }
  const std::string& dir() const { return dir_; }
  const std::string& entries_dir() const { return entries_; }
  uint64_t max_bytes() const { return max_bytes_; }
  void set_max_bytes(uint64_t bytes) { max_bytes_ = bytes; }

  // 64 hex digits; empty (nothing is cached for the file) for a file under kMinCachedBytes
  // or when hashing failed.
  std::string key(const std::string& path, const std::string& bytes, const Config& cfg) const;
  // On a hit, fills findings/diagnostics (not `source`) and the summary.
  bool load(const std::string& key, FileResult& out, FileSummary& summary) const;
  void store(const std::string& key, const FileResult& r, const FileSummary& summary) const;
  // Removes the oldest entries while the cache is over its cap (run by the destructor).
  void enforce_cap() const;

 private:
  int subdir(unsigned index, bool create) const;

  std::string dir_, entries_;
  std::string binary_id_;
  std::string pid_;  // in temporary file names
  bool enabled_ = false;
  bool edits_needed_ = false;
  uint64_t max_bytes_ = 0;
  int entries_fd_ = -1;
  mutable std::array<std::atomic<int>, 256> subdir_fd_;
  mutable std::atomic<uint64_t> stored_{0};
  mutable std::atomic<uint64_t> tmp_counter_{0};
  mutable std::mutex valid_mu_;
  mutable std::unordered_set<std::string> valid_;  // verified entries missed for their fixes
};

// Largest entry read or written.
inline constexpr size_t kMaxEntryBytes = 16u << 20;
// Smaller files are not cached: analysing one costs about what creating, writing and
// later reading its entry costs (~150 us), so caching them only made cold runs slower
// (50,000 four-line files: 2.5x the time of a run without the cache) and warm runs no faster.
inline constexpr size_t kMinCachedBytes = 512;

// The entry format, shared by load/store, the unit tests and the fuzz target:
//   "leaklint-result-v2 <key> <payload length> <sha256(key '\n' payload)>\n<payload>"
// where the payload is JSON (findings without edits, diagnostics, summary).
std::string encode_entry(std::string_view key, const FileResult& r, const FileSummary& summary);
// Verifies the header against `key` and the checksum, then decodes the payload. False (and
// `out`/`summary` unspecified) for anything else, and for an entry recording a fix when
// `edits_needed`. Findings get `out.path`.
bool decode_entry(std::string_view bytes, std::string_view key, bool edits_needed, FileResult& out,
                  FileSummary& summary);
// The payload decoder alone (after verification): strict about types and ranges.
bool decode_payload(std::string_view payload, bool edits_needed, FileResult& out, FileSummary& summary);

// SHA-256 (OpenSSL EVP) as 64 lowercase hex digits; empty if the digest failed.
std::string sha256_hex(std::string_view data);

}  // namespace ll
