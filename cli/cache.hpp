// Content-addressed result cache: a file's findings, diagnostics and cross-file summary,
// keyed by its bytes, its path, the configuration that applies to it and the leaklint
// binary itself. Stored under $LEAKLINT_CACHE_DIR, $XDG_CACHE_HOME/leaklint or
// ~/.cache/leaklint; entries are written to a temporary file and renamed into place, so
// concurrent runs never see a partial entry. Any problem (unwritable directory, corrupt
// entry) makes the cache step aside: the file is simply analysed.
#pragma once

#include <optional>
#include <string>

#include "checks/project.hpp"
#include "rules/config.hpp"
#include "rules/finding.hpp"

namespace ll {

class ResultCache {
 public:
  // `dir` empty: the default location. A cache that cannot be used is disabled.
  explicit ResultCache(std::string dir = {});
  bool enabled() const { return enabled_; }
  const std::string& dir() const { return dir_; }

  std::string key(const std::string& path, const std::string& bytes, const Config& cfg) const;
  // On a hit, fills findings/diagnostics (not `source`) and the summary.
  bool load(const std::string& key, FileResult& out, FileSummary& summary) const;
  void store(const std::string& key, const FileResult& r, const FileSummary& summary) const;

 private:
  std::string dir_;
  std::string binary_id_;
  bool enabled_ = false;
};

// 64-bit content hash (not cryptographic), hex-encoded twice with different seeds.
std::string content_hash(const std::string& data);

}  // namespace ll
