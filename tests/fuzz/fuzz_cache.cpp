// libFuzzer target over the result cache reader (cli/cache.hpp): arbitrary bytes as a cache
// entry, through the same verify-and-decode function ResultCache::load uses, and the part
// after the header line straight into the payload decoder (which a forged checksum would
// reach). A payload that decodes must encode to an entry that verifies and decodes to the
// same result, and no decoded fix may carry an edit.
// Built by tests/fuzz/CMakeLists.txt (clang, -DLEAKLINT_FUZZ=ON); seeds: tests/fuzz/seeds-cache/.
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/cache.hpp"

namespace {

void check_no_edits(const ll::FileResult& r) {
  for (const auto& f : r.findings)
    for (const auto& fx : f.fixes)
      if (!fx.edits.empty()) __builtin_trap();
}

bool has_fix(const ll::FileResult& r) {
  for (const auto& f : r.findings)
    if (!f.fixes.empty()) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  // The key the entry names (second header field) when there is one, so that inputs whose
  // checksum matches reach the payload decoder through the real reader.
  std::string key(64, '0');
  if (size_t sp = bytes.find(' '); sp != std::string_view::npos && bytes.size() >= sp + 65)
    key = std::string(bytes.substr(sp + 1, 64));

  for (bool edits_needed : {false, true}) {
    ll::FileResult out;
    out.path = "pkg/m.py";
    ll::FileSummary summary;
    if (ll::decode_entry(bytes, key, edits_needed, out, summary)) {
      check_no_edits(out);
      if (edits_needed && has_fix(out)) __builtin_trap();
    }
  }

  const size_t nl = bytes.find('\n');
  const std::string_view payload = nl == std::string_view::npos ? bytes : bytes.substr(nl + 1);
  ll::FileResult out;
  out.path = "pkg/m.py";
  ll::FileSummary summary;
  if (!ll::decode_payload(payload, false, out, summary)) return 0;
  check_no_edits(out);
  const std::string k(64, 'c');
  const std::string entry = ll::encode_entry(k, out, summary);
  ll::FileResult again;
  again.path = out.path;
  ll::FileSummary again_summary;
  if (!ll::decode_entry(entry, k, false, again, again_summary)) __builtin_trap();
  if (again.findings.size() != out.findings.size() || again.diagnostics.size() != out.diagnostics.size() ||
      again_summary.module != summary.module || again_summary.imported_calls != summary.imported_calls ||
      ll::encode_entry(k, again, again_summary) != entry)
    __builtin_trap();
  return 0;
}
