#include "cli/cache.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace ll {
namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t hash64(const std::string& s, uint64_t seed) {
  uint64_t h = seed ^ (s.size() * 0x9e3779b97f4a7c15ULL);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = mix(h ^ w) + 0x9e3779b97f4a7c15ULL;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  return mix(h ^ tail ^ (s.size() - i));
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string default_dir() {
  if (const char* d = std::getenv("LEAKLINT_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/leaklint";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/leaklint";
  return "";
}

// Identifies this exact build: a hash of the executable (any code change invalidates).
std::string binary_identity() {
  std::ifstream in("/proc/self/exe", std::ios::binary);
  if (!in) return LEAKLINT_VERSION;
  std::ostringstream ss;
  ss << in.rdbuf();
  return content_hash(ss.str());
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

Json range_json(const Range& r) {
  return Json::array({r.line, r.col, r.end_line, r.end_col, r.begin, r.end});
}
Range range_from(const Json& j) {
  Range r;
  r.line = j.at(0); r.col = j.at(1); r.end_line = j.at(2); r.end_col = j.at(3);
  r.begin = j.at(4); r.end = j.at(5);
  return r;
}

}  // namespace

std::string content_hash(const std::string& data) {
  return hex(hash64(data, 0x1234567887654321ULL)) + hex(hash64(data, 0x0f1e2d3c4b5a6978ULL));
}

ResultCache::ResultCache(std::string dir) {
  dir_ = dir.empty() ? default_dir() : std::move(dir);
  if (dir_.empty()) return;
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || ::access(dir_.c_str(), W_OK) != 0) return;
  binary_id_ = binary_identity();
  enabled_ = true;
}

std::string ResultCache::key(const std::string& path, const std::string& bytes, const Config& cfg) const {
  return content_hash(binary_id_ + '\0' + path + '\0' + config_fingerprint(cfg) + '\0' + content_hash(bytes));
}

bool ResultCache::load(const std::string& key, FileResult& out, FileSummary& summary) const {
  if (!enabled_) return false;
  std::ifstream in(dir_ + "/" + key.substr(0, 2) + "/" + key + ".json", std::ios::binary);
  if (!in) return false;
  Json j = Json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  try {
    out.findings.clear();
    out.diagnostics.clear();
    for (const auto& f : j.at("f")) {
      Finding x;
      x.rule = f.at("r");
      x.severity = static_cast<Severity>(f.at("s").get<int>());
      x.path = out.path;
      x.range = range_from(f.at("g"));
      x.message = f.at("m");
      x.suppressed = f.value("u", false);
      x.suppression = f.value("us", "");
      x.low_confidence = f.value("lc", false);
      for (const auto& n : f.value("n", Json::array())) x.notes.push_back({range_from(n.at("g")), n.at("m")});
      for (const auto& fx : f.value("x", Json::array())) {
        Fix fix;
        fix.title = fx.at("t");
        fix.safe = fx.at("s");
        for (const auto& e : fx.at("e")) fix.edits.push_back({e.at(0), e.at(1), e.at(2)});
        x.fixes.push_back(std::move(fix));
      }
      out.findings.push_back(std::move(x));
    }
    for (const auto& d : j.at("d")) {
      Diagnostic x;
      x.path = out.path;
      x.kind = d.at("k");
      x.message = d.at("m");
      x.line = d.at("l");
      x.col = d.at("c");
      x.fatal = d.at("x");
      out.diagnostics.push_back(std::move(x));
    }
    out.transcoded = j.value("t", false);
    const Json& s = j.at("p");
    summary.module = s.at("mod");
    summary.dataset_uses = s.at("du").get<std::vector<std::string>>();
    summary.classes = s.at("cl").get<std::vector<std::string>>();
    summary.functions = s.at("fn").get<std::vector<std::string>>();
    summary.caller_off = s.at("co").get<std::vector<std::string>>();
    summary.imported_calls.clear();
    for (const auto& c : s.at("ic")) summary.imported_calls.emplace_back(c.at(0), c.at(1));
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

void ResultCache::store(const std::string& key, const FileResult& r, const FileSummary& summary) const {
  if (!enabled_) return;
  Json j;
  j["f"] = Json::array();
  for (const auto& f : r.findings) {
    Json x = {{"r", f.rule}, {"s", static_cast<int>(f.severity)}, {"g", range_json(f.range)}, {"m", f.message}};
    if (f.suppressed) { x["u"] = true; x["us"] = f.suppression; }
    if (f.low_confidence) x["lc"] = true;
    if (!f.notes.empty()) {
      x["n"] = Json::array();
      for (const auto& n : f.notes) x["n"].push_back({{"g", range_json(n.range)}, {"m", n.message}});
    }
    if (!f.fixes.empty()) {
      x["x"] = Json::array();
      for (const auto& fx : f.fixes) {
        Json e = Json::array();
        for (const auto& ed : fx.edits) e.push_back(Json::array({ed.begin, ed.end, ed.text}));
        x["x"].push_back({{"t", fx.title}, {"s", fx.safe}, {"e", e}});
      }
    }
    j["f"].push_back(std::move(x));
  }
  j["d"] = Json::array();
  for (const auto& d : r.diagnostics)
    j["d"].push_back({{"k", d.kind}, {"m", d.message}, {"l", d.line}, {"c", d.col}, {"x", d.fatal}});
  if (r.transcoded) j["t"] = true;
  Json ic = Json::array();
  for (const auto& [q, off] : summary.imported_calls) ic.push_back(Json::array({q, off}));
  j["p"] = {{"mod", summary.module}, {"du", summary.dataset_uses}, {"cl", summary.classes},
            {"fn", summary.functions}, {"co", summary.caller_off}, {"ic", ic}};
  std::string sub = dir_ + "/" + key.substr(0, 2);
  std::error_code ec;
  fs::create_directories(sub, ec);
  std::string tmp = sub + "/." + key + "." + std::to_string(::getpid()) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    // Invalid UTF-8 never reaches here (such files are not analysed), but be safe.
    out << j.dump(-1, ' ', false, Json::error_handler_t::replace);
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  if (std::rename(tmp.c_str(), (sub + "/" + key + ".json").c_str()) != 0) fs::remove(tmp, ec);
}

}  // namespace ll
