#include "cli/cache.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <mutex>
#include <tuple>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace ll {
namespace {

constexpr std::string_view kMagic = "leaklint-result-v2";
constexpr uint64_t kDefaultMaxMiB = 256;
constexpr time_t kRefreshAfterS = 24 * 3600;  // a hit refreshes an older entry's mtime
constexpr time_t kStaleTmpS = 3600;           // temporary files older than this are debris

// Incremental SHA-256 through OpenSSL's EVP interface; the algorithm is fetched once.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { ok_ = ctx_ && EVP_DigestInit_ex(ctx_, md(), nullptr) == 1; }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::string_view s) {
    if (ok_ && !s.empty()) ok_ = EVP_DigestUpdate(ctx_, s.data(), s.size()) == 1;
  }
  // A field with its length in front, so that concatenations cannot collide.
  void field(std::string_view s) {
    char len[24];
    int n = std::snprintf(len, sizeof len, "%zu:", s.size());
    update(std::string_view(len, static_cast<size_t>(n)));
    update(s);
  }
  std::string hex() {
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!ok_ || EVP_DigestFinal_ex(ctx_, out, &n) != 1 || n != 32) return "";
    static const char digits[] = "0123456789abcdef";
    std::string h(64, '0');
    for (unsigned i = 0; i < 32; ++i) {
      h[2 * i] = digits[out[i] >> 4];
      h[2 * i + 1] = digits[out[i] & 15];
    }
    return h;
  }

 private:
  static const EVP_MD* md() {
    // Explicit fetch: OpenSSL 3's implicit fetch in EVP_sha256() costs a lookup per digest.
    static const EVP_MD* m = [] {
      const EVP_MD* f = EVP_MD_fetch(nullptr, "SHA256", nullptr);
      return f ? f : EVP_sha256();
    }();
    return m;
  }
  EVP_MD_CTX* ctx_;
  bool ok_ = false;
};

bool is_hex_key(std::string_view k) {
  return k.size() == 64 && std::all_of(k.begin(), k.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

unsigned hex_digit(char c) { return c <= '9' ? static_cast<unsigned>(c - '0') : static_cast<unsigned>(c - 'a' + 10); }

std::string default_dir() {
  if (const char* d = std::getenv("LEAKLINT_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/leaklint";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/leaklint";
  return "";
}

uint64_t max_bytes_from_env() {
  if (const char* e = std::getenv("LEAKLINT_RESULT_CACHE_MAX_MB"); e && *e) {
    char* end = nullptr;
    errno = 0;
    unsigned long long mb = std::strtoull(e, &end, 10);
    if (errno == 0 && end && *end == '\0' && mb > 0 && mb < (1ull << 40)) return mb << 20;
  }
  return kDefaultMaxMiB << 20;
}

// Reads up to `limit` bytes of a regular file; false for anything else or on an error.
bool read_regular(int fd, size_t limit, std::string& out, struct stat& st) {
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
      static_cast<uint64_t>(st.st_size) > limit)
    return false;
  out.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd, &out[got], out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // error, or the file shrank: not the entry fstat saw
    got += static_cast<size_t>(n);
  }
  return true;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Identifies this exact build: a hash of the executable (any code change invalidates).
std::string binary_identity() {
  int fd = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return sha256_hex(LEAKLINT_VERSION);
  std::string bytes;
  struct stat st;
  bool ok = read_regular(fd, std::numeric_limits<size_t>::max() / 2, bytes, st);
  ::close(fd);
  return ok ? sha256_hex(bytes) : "";
}

std::string config_fingerprint(const Config& c) {
  std::ostringstream o;
  auto list = [&](const std::vector<std::string>& v) {
    for (const auto& s : v) o << s << '\x1f';
    o << '\x1e';
  };
  o << c.root << '\x1e';
  list(c.select);
  list(c.ignore);
  for (const auto& [glob, codes] : c.per_file_ignores) {
    o << glob << '=';
    list(codes);
  }
  for (const auto& [id, sev] : c.severity) o << id << ':' << static_cast<int>(sev) << ',';
  o << '\x1e' << c.max_workers << ',' << c.max_inflight_batches << ',' << c.assume_dataloader_workers << ','
    << c.torch_major << '.' << c.torch_minor << '\x1e';
  list(c.eval_function_names);
  list(c.eval_loader_names);
  list(c.model_names);
  return o.str();
}

// --- payload codec: strict, never trusting a type or a number ---

struct Bad : std::runtime_error {
  Bad() : std::runtime_error("invalid cache entry") {}
};

const Json& at(const Json& j, const char* k) {
  if (!j.is_object()) throw Bad();
  auto it = j.find(k);
  if (it == j.end()) throw Bad();
  return *it;
}
const Json& arr(const Json& j) {
  if (!j.is_array()) throw Bad();
  return j;
}
uint32_t u32(const Json& j) {
  if (!j.is_number_unsigned()) throw Bad();
  uint64_t v = j.get<uint64_t>();
  if (v > std::numeric_limits<uint32_t>::max()) throw Bad();
  return static_cast<uint32_t>(v);
}
std::string str(const Json& j) {
  if (!j.is_string()) throw Bad();
  return j.get<std::string>();
}
bool boolean(const Json& j) {
  if (!j.is_boolean()) throw Bad();
  return j.get<bool>();
}
std::vector<std::string> strings(const Json& j) {
  std::vector<std::string> v;
  for (const auto& s : arr(j)) v.push_back(str(s));
  return v;
}
// Optional members: absent is the default, present must have the right type.
bool opt_bool(const Json& j, const char* k) {
  auto it = j.find(k);
  return it != j.end() && boolean(*it);
}

Json range_json(const Range& r) { return Json::array({r.line, r.col, r.end_line, r.end_col, r.begin, r.end}); }
Range range_from(const Json& j) {
  if (arr(j).size() != 6) throw Bad();
  Range r;
  r.line = u32(j[0]);
  r.col = u32(j[1]);
  r.end_line = u32(j[2]);
  r.end_col = u32(j[3]);
  r.begin = u32(j[4]);
  r.end = u32(j[5]);
  if (r.end < r.begin) throw Bad();
  return r;
}

std::string payload_of(const FileResult& r, const FileSummary& summary) {
  Json j;
  j["f"] = Json::array();
  for (const auto& f : r.findings) {
    Json x = {{"r", f.rule}, {"s", static_cast<int>(f.severity)}, {"g", range_json(f.range)}, {"m", f.message}};
    if (f.suppressed) {
      x["u"] = true;
      x["us"] = f.suppression;
    }
    if (f.low_confidence) x["lc"] = true;
    if (f.memory_claim) x["mc"] = true;
    if (!f.notes.empty()) {
      x["n"] = Json::array();
      for (const auto& n : f.notes) x["n"].push_back({{"g", range_json(n.range)}, {"m", n.message}});
    }
    // Fixes: title and safety only. Edits are code and are never cached.
    if (!f.fixes.empty()) {
      x["x"] = Json::array();
      for (const auto& fx : f.fixes) x["x"].push_back({{"t", fx.title}, {"s", fx.safe}});
    }
    j["f"].push_back(std::move(x));
  }
  j["d"] = Json::array();
  for (const auto& d : r.diagnostics)
    j["d"].push_back({{"k", d.kind}, {"m", d.message}, {"l", d.line}, {"c", d.col}, {"x", d.fatal}});
  if (r.transcoded) j["t"] = true;
  Json ic = Json::array();
  for (const auto& [q, off, via] : summary.imported_calls) ic.push_back(Json::array({q, off, via}));
  j["p"] = {{"mod", summary.module}, {"pth", summary.path}, {"du", summary.dataset_uses}, {"cl", summary.classes},
            {"fn", summary.functions}, {"co", summary.caller_off}, {"ic", ic},
            {"tor", summary.imports_torch}, {"tap", summary.tensor_api}, {"im", summary.imports}, {"wf", summary.wrapping_functions}, {"sm", summary.star_modules},
            {"gof", summary.grad_off_forwards}, {"tr", summary.type_refs}, {"shd", summary.sharding_datasets},
            {"syn", summary.synthetic_datasets}, {"lin", summary.linear_classes}, {"mcl", summary.module_classes}, {"dfe", summary.detached_forward_elements}, {"mfc", summary.mode_free_classes}, {"ccl", summary.communicating_classes}, {"acc", summary.accumulating_methods}, {"bpm", summary.backprop_methods}, {"hsm", summary.history_methods},
            {"pg", summary.program}, {"ge", summary.gpu_evidence},
            {"om", summary.open_methods}, {"nom", summary.name_off_methods}, {"ref", summary.referenced}, {"srd", summary.self_reads}, {"irf", summary.imported_refs},
            {"bpr", summary.backprop_results}, {"evn", summary.eval_named},
            {"dsm", summary.dispatched_modules}, {"trn", summary.trainers}, {"dcl", summary.defined_classes}};
  Json hf = Json::array();
  for (const auto& h : summary.holding) hf.push_back(Json::array({h.name, h.begin, h.end, h.interface, h.cls, h.imported_base}));
  Json owr = Json::array();
  for (const auto& [caller, callee] : summary.own_reads) owr.push_back(Json::array({caller, callee}));
  j["p"]["hf"] = std::move(hf);
  j["p"]["owr"] = std::move(owr);
  Json hm = Json::array();
  for (const auto& h : summary.helper_methods) hm.push_back(Json::array({h.method, h.model, h.evaluates, h.param}));
  j["p"]["hm"] = std::move(hm);
  Json lmc = Json::array();
  for (const auto& c : summary.loop_method_calls) lmc.push_back(Json::array({c.cls, c.batch_loop, c.methods, c.attrs}));
  j["p"]["lmc"] = std::move(lmc);
  j["p"]["kpm"] = summary.keeping_methods;
  j["p"]["hkm"] = summary.hooking_methods;
  Json opf = Json::array();
  for (const auto& [g, k] : summary.optimizer_factories) opf.push_back(Json::array({g, k}));
  j["p"]["opf"] = std::move(opf);
  j["p"]["bsl"] = summary.batch_summed_losses;
  j["p"]["p2p"] = summary.point_to_point;
  Json slc = Json::array();
  for (const auto& [k, method, off] : summary.self_calls) slc.push_back(Json::array({k, method, off}));
  j["p"]["slc"] = std::move(slc);
  Json cbs = Json::array();
  for (const auto& [k, base] : summary.class_bases) cbs.push_back(Json::array({k, base}));
  j["p"]["cbs"] = std::move(cbs);
  Json msz = Json::array();
  for (const auto& [c, n] : summary.model_sizes) msz.push_back(Json::array({c, n}));
  j["p"]["msz"] = std::move(msz);
  Json mc = Json::array();
  for (const auto& [name, off] : summary.method_calls) mc.push_back(Json::array({name, off}));
  j["p"]["mc"] = std::move(mc);
  Json lg = Json::array();
  for (const auto& [name, number] : summary.loss_functions) lg.push_back(Json::array({name, number}));
  j["p"]["lf"] = std::move(lg);
  Json mcn = Json::array();
  for (const auto& [name, off] : summary.method_calls_from_namesakes) mcn.push_back(Json::array({name, off}));
  j["p"]["mcn"] = std::move(mcn);
  Json feeds = Json::array();
  for (const DistributedFeed& d : summary.distributed_feeds) feeds.push_back(Json::array({d.callee, d.element, d.passed}));
  j["p"]["df"] = std::move(feeds);
  Json evl = Json::array();
  for (const auto& e : summary.eval_leaving) evl.push_back(Json::array({e.function, e.index, e.param}));
  j["p"]["evl"] = std::move(evl);
  Json frz = Json::array();
  for (const auto& e : summary.freezing)
    frz.push_back(Json::array({e.function, e.index, e.param, e.flag, e.flag_param, e.value}));
  j["p"]["frz"] = std::move(frz);
  // Invalid UTF-8 never reaches here (such files are not analysed), but be safe.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string checksum(std::string_view key, std::string_view payload) {
  Sha256 h;
  h.update(key);
  h.update("\n");
  h.update(payload);
  return h.hex();
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex();
}

std::string encode_entry(std::string_view key, const FileResult& r, const FileSummary& summary) {
  std::string payload = payload_of(r, summary);
  std::string sum = checksum(key, payload);
  if (sum.empty()) return "";
  std::string out;
  out.reserve(kMagic.size() + key.size() + sum.size() + payload.size() + 32);
  out.append(kMagic).append(" ").append(key).append(" ").append(std::to_string(payload.size()));
  out.append(" ").append(sum).append("\n").append(payload);
  return out;
}

bool decode_entry(std::string_view bytes, std::string_view key, bool edits_needed, FileResult& out,
                  FileSummary& summary) {
  if (!is_hex_key(key) || bytes.size() > kMaxEntryBytes) return false;
  // Header: magic, key, decimal length, checksum, newline.
  std::string_view b = bytes;
  auto take = [&b](std::string_view s) {
    if (b.substr(0, s.size()) != s) return false;
    b.remove_prefix(s.size());
    return true;
  };
  if (!take(kMagic) || !take(" ") || !take(key) || !take(" ")) return false;
  size_t len = 0, digits = 0;
  while (!b.empty() && b[0] >= '0' && b[0] <= '9' && digits < 9) {
    len = len * 10 + static_cast<size_t>(b[0] - '0');
    b.remove_prefix(1);
    ++digits;
  }
  if (digits == 0 || (digits > 1 && bytes[bytes.size() - b.size() - digits] == '0') || !take(" ")) return false;
  if (b.size() < 65 || b[64] != '\n') return false;
  std::string_view sum = b.substr(0, 64);
  b.remove_prefix(65);
  if (b.size() != len) return false;
  std::string want = checksum(key, b);
  if (want.empty() || want != sum) return false;
  return decode_payload(b, edits_needed, out, summary);
}

bool decode_payload(std::string_view payload, bool edits_needed, FileResult& out, FileSummary& summary) {
  if (payload.size() > kMaxEntryBytes) return false;
  Json j = Json::parse(payload.begin(), payload.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  FileResult r;
  r.path = out.path;
  FileSummary s;
  try {
    for (const auto& f : arr(at(j, "f"))) {
      Finding x;
      x.rule = str(at(f, "r"));
      uint32_t sev = u32(at(f, "s"));
      if (sev > static_cast<uint32_t>(Severity::Error)) throw Bad();
      x.severity = static_cast<Severity>(sev);
      x.path = out.path;
      x.range = range_from(at(f, "g"));
      x.message = str(at(f, "m"));
      x.suppressed = opt_bool(f, "u");
      if (auto it = f.find("us"); it != f.end()) x.suppression = str(*it);
      x.low_confidence = opt_bool(f, "lc");
      x.memory_claim = opt_bool(f, "mc");
      if (auto it = f.find("n"); it != f.end())
        for (const auto& n : arr(*it)) x.notes.push_back({range_from(at(n, "g")), str(at(n, "m"))});
      if (auto it = f.find("x"); it != f.end()) {
        // A run that needs edits analyses the file: its edits come from the source only.
        if (edits_needed && !arr(*it).empty()) return false;
        for (const auto& fx : arr(*it)) {
          Fix fix;
          fix.title = str(at(fx, "t"));
          fix.safe = boolean(at(fx, "s"));
          x.fixes.push_back(std::move(fix));  // no edits, whatever the entry says
        }
      }
      r.findings.push_back(std::move(x));
    }
    for (const auto& d : arr(at(j, "d"))) {
      Diagnostic x;
      x.path = out.path;
      x.kind = str(at(d, "k"));
      x.message = str(at(d, "m"));
      x.line = u32(at(d, "l"));
      x.col = u32(at(d, "c"));
      x.fatal = boolean(at(d, "x"));
      r.diagnostics.push_back(std::move(x));
    }
    r.transcoded = opt_bool(j, "t");
    const Json& p = at(j, "p");
    s.module = str(at(p, "mod"));
    s.path = str(at(p, "pth"));
    s.dataset_uses = strings(at(p, "du"));
    s.classes = strings(at(p, "cl"));
    s.functions = strings(at(p, "fn"));
    s.caller_off = strings(at(p, "co"));
    s.imports_torch = boolean(at(p, "tor"));
    s.tensor_api = boolean(at(p, "tap"));
    s.imports = strings(at(p, "im"));
    for (const auto& c : arr(at(p, "ic"))) {
      if (arr(c).size() != 3) throw Bad();
      s.imported_calls.push_back({str(c[0]), boolean(c[1]), str(c[2])});
    }
    s.wrapping_functions = strings(at(p, "wf"));
    s.star_modules = strings(at(p, "sm"));
    s.grad_off_forwards = strings(at(p, "gof"));
    s.type_refs = strings(at(p, "tr"));
    s.sharding_datasets = strings(at(p, "shd"));
    s.synthetic_datasets = strings(at(p, "syn"));
    s.linear_classes = strings(at(p, "lin"));
    s.module_classes = strings(at(p, "mcl"));
    s.detached_forward_elements = strings(at(p, "dfe"));
    s.mode_free_classes = strings(at(p, "mfc"));
    for (const std::string& ck : s.detached_forward_elements)  // "Class.k"
      if (ck.rfind('.') == std::string::npos || ck.find_first_not_of("0123456789", ck.rfind('.') + 1) != std::string::npos ||
          ck.size() == ck.rfind('.') + 1 || ck.size() - ck.rfind('.') > 6)
        throw Bad();
    s.communicating_classes = strings(at(p, "ccl"));
    s.accumulating_methods = strings(at(p, "acc"));
    s.backprop_methods = strings(at(p, "bpm"));
    s.history_methods = strings(at(p, "hsm"));
    for (const auto& cm : s.history_methods)
      if (cm.find('.') == std::string::npos) throw Bad();  // "Class.method"
    for (const std::string& cm : s.accumulating_methods)
      if (cm.find('.') == std::string::npos) throw Bad();  // "Class.method"
    s.program = boolean(at(p, "pg"));
    s.gpu_evidence = boolean(at(p, "ge"));
    s.open_methods = strings(at(p, "om"));
    s.name_off_methods = strings(at(p, "nom"));
    s.referenced = strings(at(p, "ref"));
    s.self_reads = strings(at(p, "srd"));
    for (const std::string& q : s.self_reads)
      if (q.find('.') == std::string::npos) throw Bad();  // "Class.name"
    s.imported_refs = strings(at(p, "irf"));
    s.backprop_results = strings(at(p, "bpr"));
    s.eval_named = strings(at(p, "evn"));
    s.dispatched_modules = strings(at(p, "dsm"));
    s.trainers = strings(at(p, "trn"));
    s.defined_classes = strings(at(p, "dcl"));
    for (const auto& c : arr(at(p, "msz"))) {
      if (arr(c).size() != 2 || !c[1].is_number_integer() || c[1].get<int64_t>() < 0) throw Bad();
      s.model_sizes.emplace_back(str(c[0]), static_cast<long>(c[1].get<int64_t>()));
    }
    for (const auto& c : arr(at(p, "hf"))) {
      if (arr(c).size() != 6 || !c[1].is_number_unsigned() || !c[2].is_number_unsigned()) throw Bad();
      const uint64_t b = c[1].get<uint64_t>(), e = c[2].get<uint64_t>();
      if (b > e || e > UINT32_MAX) throw Bad();
      s.holding.push_back({str(c[0]), static_cast<uint32_t>(b), static_cast<uint32_t>(e), boolean(c[3]), str(c[4]),
                           boolean(c[5])});
    }
    for (const auto& c : arr(at(p, "slc"))) {
      if (arr(c).size() != 3) throw Bad();
      s.self_calls.emplace_back(str(c[0]), str(c[1]), boolean(c[2]));
    }
    for (const auto& c : arr(at(p, "cbs"))) {
      if (arr(c).size() != 2) throw Bad();
      s.class_bases.emplace_back(str(c[0]), str(c[1]));
    }
    for (const auto& c : arr(at(p, "hm"))) {
      if (arr(c).size() != 4 || !c[3].is_number_integer() || c[3].get<int64_t>() < -1 || c[3].get<int64_t>() > 4096)
        throw Bad();
      s.helper_methods.push_back({str(c[0]), str(c[1]), boolean(c[2]), static_cast<int>(c[3].get<int64_t>())});
      // A method is "Class.method", a function has no dot; either runs a named model.
      const FileSummary::HelperMethod& h = s.helper_methods.back();
      if (h.model.empty() || (h.param < 0) != (h.method.find('.') != std::string::npos)) throw Bad();
    }
    s.keeping_methods = strings(at(p, "kpm"));
    s.hooking_methods = strings(at(p, "hkm"));
    s.batch_summed_losses = strings(at(p, "bsl"));
    s.point_to_point = strings(at(p, "p2p"));
    for (const auto& c : arr(at(p, "opf"))) {
      if (arr(c).size() != 2 || !c[1].is_number_integer() || c[1].get<int64_t>() < 1 || c[1].get<int64_t>() > 3)
        throw Bad();
      s.optimizer_factories.emplace_back(str(c[0]), static_cast<int>(c[1].get<int64_t>()));
    }
    for (const auto& c : arr(at(p, "lmc"))) {
      if (arr(c).size() != 4) throw Bad();
      FileSummary::LoopMethodCall call{str(c[0]), boolean(c[1]), strings(c[2]), strings(c[3])};
      if (call.cls.find('.') == std::string::npos || call.methods.size() > FileSummary::LoopMethodCall::kLoopNames ||
          call.attrs.size() > FileSummary::LoopMethodCall::kLoopNames)
        throw Bad();
      s.loop_method_calls.push_back(std::move(call));
    }
    for (const auto& c : arr(at(p, "owr"))) {
      if (arr(c).size() != 2) throw Bad();
      s.own_reads.emplace_back(str(c[0]), str(c[1]));
    }
    for (const auto& c : arr(at(p, "mc"))) {
      if (arr(c).size() != 2) throw Bad();
      s.method_calls.emplace_back(str(c[0]), boolean(c[1]));
    }
    for (const auto& c : arr(at(p, "lf"))) {
      if (arr(c).size() != 2) throw Bad();
      s.loss_functions.emplace_back(str(c[0]), boolean(c[1]));
    }
    for (const auto& c : arr(at(p, "mcn"))) {
      if (arr(c).size() != 2) throw Bad();
      s.method_calls_from_namesakes.emplace_back(str(c[0]), boolean(c[1]));
    }
    for (const auto& c : arr(at(p, "df"))) {
      if (arr(c).size() != 3 || !c[1].is_number_integer()) throw Bad();
      const int64_t element = c[1].get<int64_t>();
      if (element < -1 || element > 1024) throw Bad();
      s.distributed_feeds.push_back({str(c[0]), static_cast<int>(element), {}});
      for (const auto& a : arr(c[2])) s.distributed_feeds.back().passed.push_back(str(a));
    }
    for (const auto& c : arr(at(p, "evl"))) {
      if (arr(c).size() != 3 || !c[1].is_number_integer()) throw Bad();
      const int64_t index = c[1].get<int64_t>();
      if (index < 0 || index > 1024) throw Bad();
      s.eval_leaving.push_back({str(c[0]), static_cast<int>(index), str(c[2])});
    }
    for (const auto& c : arr(at(p, "frz"))) {
      if (arr(c).size() != 6 || !c[1].is_number_integer() || !c[3].is_number_integer() || !c[5].is_number_integer())
        throw Bad();
      const int64_t index = c[1].get<int64_t>(), flag = c[3].get<int64_t>(), value = c[5].get<int64_t>();
      if (index < 0 || index > 1024 || flag < -1 || flag > 1024 || value < 0 || value > 2 || (value && flag < 0))
        throw Bad();
      s.freezing.push_back(
          {str(c[0]), static_cast<int>(index), str(c[2]), static_cast<int>(flag), str(c[4]), static_cast<int>(value)});
    }
  } catch (const std::exception&) {
    return false;
  }
  out.findings = std::move(r.findings);
  out.diagnostics = std::move(r.diagnostics);
  out.transcoded = r.transcoded;
  summary = std::move(s);
  return true;
}

ResultCache::ResultCache(std::string dir, bool edits_needed) : edits_needed_(edits_needed) {
  for (auto& fd : subdir_fd_) fd.store(-1, std::memory_order_relaxed);
  max_bytes_ = max_bytes_from_env();
  dir_ = dir.empty() ? default_dir() : std::move(dir);
  if (dir_.empty()) return;
  entries_ = dir_ + "/results-v2";
  std::error_code ec;
  fs::create_directories(entries_, ec);
  if (ec || ::access(entries_.c_str(), W_OK) != 0) return;
  entries_fd_ = ::open(entries_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (entries_fd_ < 0) return;
  binary_id_ = binary_identity();
  if (binary_id_.empty()) return;
  pid_ = std::to_string(::getpid());
  // A file size limit (RLIMIT_FSIZE) must make a cache write fail with EFBIG, not kill the run.
  std::signal(SIGXFSZ, SIG_IGN);
  enabled_ = true;
}

ResultCache::~ResultCache() {
  if (enabled_ && stored_.load() > 0) enforce_cap();
  for (auto& fd : subdir_fd_)
    if (int f = fd.load(); f >= 0) ::close(f);
  if (entries_fd_ >= 0) ::close(entries_fd_);
}

int ResultCache::subdir(unsigned index, bool create) const {
  int fd = subdir_fd_[index].load(std::memory_order_acquire);
  if (fd >= 0) return fd;
  static const char digits[] = "0123456789abcdef";
  const char name[3] = {digits[index >> 4], digits[index & 15], '\0'};
  fd = ::openat(entries_fd_, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && create && errno == ENOENT) {
    if (::mkdirat(entries_fd_, name, 0755) != 0 && errno != EEXIST) return -1;
    fd = ::openat(entries_fd_, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0) return -1;
  int expected = -1;
  if (!subdir_fd_[index].compare_exchange_strong(expected, fd, std::memory_order_acq_rel)) {
    ::close(fd);
    return expected;
  }
  return fd;
}

std::string ResultCache::key(const std::string& path, const std::string& bytes, const Config& cfg) const {
  if (!enabled_ || bytes.size() < kMinCachedBytes) return "";
  Sha256 h;
  h.field("leaklint-result-key-v2");
  h.field(binary_id_);
  h.field(path);
  h.field(config_fingerprint(cfg));
  h.field(bytes);
  return h.hex();
}

bool ResultCache::load(const std::string& key, FileResult& out, FileSummary& summary) const {
  if (!enabled_ || !is_hex_key(key)) return false;
  int dfd = subdir(hex_digit(key[0]) * 16 + hex_digit(key[1]), false);
  if (dfd < 0) return false;
  int fd = ::openat(dfd, key.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  std::string bytes;
  struct stat st;
  bool ok = read_regular(fd, kMaxEntryBytes, bytes, st) && decode_entry(bytes, key, edits_needed_, out, summary);
  if (ok && std::time(nullptr) - st.st_mtime > kRefreshAfterS) ::futimens(fd, nullptr);  // recently used
  ::close(fd);
  FileResult scratch;
  FileSummary scratch_summary;
  if (!ok && edits_needed_ && decode_entry(bytes, key, false, scratch, scratch_summary)) {
    // A valid entry that records a fix: analysed for its edits, but need not be rewritten.
    std::lock_guard<std::mutex> lock(valid_mu_);
    valid_.insert(key);
  }
  return ok;
}

void ResultCache::store(const std::string& key, const FileResult& r, const FileSummary& summary) const {
  if (!enabled_ || !is_hex_key(key)) return;
  if (edits_needed_) {
    std::lock_guard<std::mutex> lock(valid_mu_);
    if (valid_.count(key)) return;
  }
  std::string entry = encode_entry(key, r, summary);
  if (entry.empty() || entry.size() > kMaxEntryBytes) return;
  int dfd = subdir(hex_digit(key[0]) * 16 + hex_digit(key[1]), true);
  if (dfd < 0) return;
  std::string tmp = "." + key + "." + pid_ + "." + std::to_string(tmp_counter_.fetch_add(1)) + ".tmp";
  int fd = ::openat(dfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  bool ok = write_all(fd, entry);
  if (::close(fd) != 0) ok = false;
  // Only a complete entry is renamed into place (over a corrupt one, or a FIFO; a
  // directory in the way stays and the entry is not stored).
  if (!ok || ::renameat(dfd, tmp.c_str(), dfd, key.c_str()) != 0) {
    ::unlinkat(dfd, tmp.c_str(), 0);
    return;
  }
  stored_.fetch_add(1);
}

// Entries of the first cache layout (<dir>/<2 hex>/<32 hex>.json, fix edits included) are
// never read again: they are removed, so they neither linger nor escape the cap.
static void remove_v1_entries(const std::string& dir) {
  static const char digits[] = "0123456789abcdef";
  for (unsigned i = 0; i < 256; ++i) {
    const char name[3] = {digits[i >> 4], digits[i & 15], '\0'};
    const std::string sub = dir + "/" + name;
    int dfd = ::open(sub.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) continue;
    DIR* d = ::fdopendir(dfd);
    if (!d) {
      ::close(dfd);
      continue;
    }
    bool other = false;
    while (struct dirent* e = ::readdir(d)) {
      std::string_view n = e->d_name;
      if (n == "." || n == "..") continue;
      bool v1 = (n.size() == 37 && n.substr(32) == ".json" && n.substr(0, 2) == name &&
                 std::all_of(n.begin(), n.begin() + 32, [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) && !std::isupper(static_cast<unsigned char>(c)); })) ||
                (n.size() > 4 && n.front() == '.' && n.substr(n.size() - 4) == ".tmp");
      if (!v1 || ::unlinkat(dfd, e->d_name, 0) != 0) other = true;
    }
    ::closedir(d);
    if (!other) ::rmdir(sub.c_str());
  }
}

void ResultCache::enforce_cap() const {
  if (entries_fd_ < 0) return;
  remove_v1_entries(dir_);
  struct Entry {
    time_t mtime;
    long nsec;
    unsigned dir;
    std::string name;
    uint64_t bytes;
  };
  std::vector<Entry> all;
  uint64_t total = 0;
  const time_t now = std::time(nullptr);
  for (unsigned i = 0; i < 256; ++i) {
    int dfd = subdir(i, false);
    if (dfd < 0) continue;
    int lfd = ::dup(dfd);  // fdopendir takes ownership
    if (lfd < 0) continue;
    DIR* d = ::fdopendir(lfd);
    if (!d) {
      ::close(lfd);
      continue;
    }
    ::rewinddir(d);
    while (struct dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      struct stat st;
      if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
      bool tmp = name.size() > 4 && name.front() == '.' && name.substr(name.size() - 4) == ".tmp";
      if (tmp && now - st.st_mtime > kStaleTmpS) {
        ::unlinkat(dfd, e->d_name, 0);
        continue;
      }
      uint64_t bytes = static_cast<uint64_t>(st.st_blocks) * 512;
      total += bytes;
      if (!tmp) all.push_back({st.st_mtim.tv_sec, st.st_mtim.tv_nsec, i, std::string(name), bytes});
    }
    ::closedir(d);
  }
  if (total <= max_bytes_) return;
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.mtime, a.nsec, a.dir, a.name) < std::tie(b.mtime, b.nsec, b.dir, b.name);
  });
  const uint64_t target = max_bytes_ / 10 * 9;  // some room, so the next runs need not evict
  for (const Entry& e : all) {
    if (total <= target) break;
    int dfd = subdir(e.dir, false);
    if (dfd >= 0 && ::unlinkat(dfd, e.name.c_str(), 0) == 0) total -= std::min(total, e.bytes);
  }
}

}  // namespace ll
