#include "cli/lsp.hpp"

#include <algorithm>
#include <cctype>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/discover.hpp"
#include "cli/engine.hpp"
#include "rules/config.hpp"
#include "rules/registry.hpp"

namespace ll {
namespace lsp {

// ---- framing -----------------------------------------------------------------------------

namespace {

constexpr std::size_t kMaxHeaderLine = 64 * 1024;

// Reads one header line without its terminator ("\n" or "\r\n"). Returns false at end of
// input before any byte. Over-long lines are truncated (the rest is discarded).
bool read_header_line(std::istream& in, std::string& line, bool* got_bytes) {
  line.clear();
  *got_bytes = false;
  std::streambuf* sb = in.rdbuf();
  if (sb == nullptr) return false;
  for (;;) {
    int c = sb->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return *got_bytes;
    }
    *got_bytes = true;
    if (c == '\n') break;
    if (line.size() < kMaxHeaderLine) line.push_back(static_cast<char>(c));
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Parses a Content-Length value: optional blanks, decimal digits, optional blanks.
bool parse_length(std::string_view v, std::size_t* out) {
  std::size_t i = 0, n = 0;
  while (i < v.size() && (v[i] == ' ' || v[i] == '\t')) ++i;
  std::size_t digits = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i, ++digits) {
    if (n > (std::size_t{1} << 48)) return false;  // absurd; treated as malformed
    n = n * 10 + static_cast<std::size_t>(v[i] - '0');
  }
  while (i < v.size() && (v[i] == ' ' || v[i] == '\t')) ++i;
  if (digits == 0 || i != v.size()) return false;
  *out = n;
  return true;
}

}  // namespace

ReadStatus read_message(std::istream& in, std::string& body, std::size_t max_body) {
  body.clear();
  bool in_headers = false, have_length = false;
  std::size_t length = 0;
  std::string line;
  for (;;) {
    bool got = false;
    if (!read_header_line(in, line, &got)) return in_headers ? ReadStatus::Truncated : ReadStatus::Eof;
    if (line.empty()) {
      if (in.eof()) return in_headers ? ReadStatus::Truncated : ReadStatus::Eof;
      if (!in_headers) continue;  // stray blank line between messages
      break;
    }
    in_headers = true;
    // Searching (not prefix-matching) lets a reader resynchronise when a previous body was
    // shorter than announced: `...}Content-Length: 52`.
    std::string l = lower(line);
    std::size_t at = l.find("content-length:");
    if (at != std::string::npos) {
      std::size_t n = 0;
      if (parse_length(std::string_view(line).substr(at + 15), &n)) {
        length = n;
        have_length = true;
      } else {
        have_length = false;
      }
    }
    if (in.eof()) return ReadStatus::Truncated;
  }
  if (!have_length) return ReadStatus::BadHeader;
  if (length > max_body) {
    in.ignore(static_cast<std::streamsize>(length));
    return in.gcount() == static_cast<std::streamsize>(length) ? ReadStatus::BadHeader : ReadStatus::Truncated;
  }
  body.resize(length);
  if (length == 0) return ReadStatus::Ok;
  in.read(&body[0], static_cast<std::streamsize>(length));
  if (static_cast<std::size_t>(in.gcount()) != length) {
    body.resize(static_cast<std::size_t>(in.gcount()));
    return ReadStatus::Truncated;
  }
  return ReadStatus::Ok;
}

void write_message(std::ostream& out, std::string_view body) {
  out << "Content-Length: " << body.size() << "\r\n\r\n";
  out.write(body.data(), static_cast<std::streamsize>(body.size()));
  out.flush();
}

// ---- positions ---------------------------------------------------------------------------

namespace {

// Length of the UTF-8 sequence that starts with `c` (1 for stray continuation bytes).
std::size_t seq_len(unsigned char c) {
  if (c < 0xC0) return 1;
  if (c < 0xE0) return 2;
  if (c < 0xF0) return 3;
  return 4;
}

}  // namespace

LineIndex::LineIndex(std::string_view text) : text_(text) {
  starts_.push_back(0);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      starts_.push_back(i + 1);
    } else if (text[i] == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
      starts_.push_back(i + 1);
    }
  }
}

std::size_t LineIndex::line_start(uint32_t line) const {
  return line < starts_.size() ? starts_[line] : text_.size();
}

std::size_t LineIndex::line_end(uint32_t line) const {
  if (line >= starts_.size()) return text_.size();
  if (line + 1 >= starts_.size()) return text_.size();
  std::size_t start = starts_[line], end = starts_[line + 1] - 1;  // the terminator's last byte
  if (text_[end] == '\n' && end > start && text_[end - 1] == '\r') --end;
  return end;
}

Position LineIndex::position(std::size_t off) const {
  off = std::min(off, text_.size());
  auto it = std::upper_bound(starts_.begin(), starts_.end(), off);
  auto line = static_cast<uint32_t>((it - starts_.begin()) - 1);
  std::size_t i = starts_[line], end = line_end(line);
  off = std::min(off, end);
  uint32_t units = 0;
  while (i < off) {
    std::size_t len = seq_len(static_cast<unsigned char>(text_[i]));
    if (i + len > off) break;  // inside a character: its start
    units += len == 4 ? 2 : 1;
    i += len;
  }
  return Position{line, units};
}

std::size_t LineIndex::offset(Position p) const {
  if (p.line >= starts_.size()) return text_.size();
  std::size_t i = starts_[p.line], end = line_end(p.line);
  uint32_t units = 0;
  while (i < end && units < p.character) {
    std::size_t len = seq_len(static_cast<unsigned char>(text_[i]));
    uint32_t u = len == 4 ? 2 : 1;
    if (units + u > p.character) break;  // between the halves of a surrogate pair
    units += u;
    i = std::min(i + len, end);
  }
  return i;
}

std::string path_from_uri(std::string_view uri) {
  if (uri.size() < 7 || lower(std::string(uri.substr(0, 7))) != "file://") return "";
  std::string_view rest = uri.substr(7);
  std::size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return "";
  rest = rest.substr(slash);  // drops the authority (empty or "localhost")
  std::size_t cut = rest.find_first_of("?#");
  if (cut != std::string_view::npos) rest = rest.substr(0, cut);
  std::string out;
  out.reserve(rest.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && hex(rest[i + 1]) >= 0 && hex(rest[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(rest[i + 1]) * 16 + hex(rest[i + 2])));
      i += 2;
    } else {
      out.push_back(rest[i]);
    }
  }
  return out;
}

std::string uri_from_path(std::string_view path) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "file://";
  if (path.empty() || path[0] != '/') out.push_back('/');
  for (char ch : path) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

// ---- the server --------------------------------------------------------------------------

namespace {

using json = nlohmann::json;

// JSON-RPC / LSP error codes.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kServerNotInitialized = -32002;

struct Document {
  std::string uri, path, language_id, text;
  json version;  // integer (or null)
  bool dirty = true;
  FileResult result;
  std::string problem;  // a configuration or internal error shown instead of findings
};

json to_json(Position p) { return json{{"line", p.line}, {"character", p.character}}; }

Position position_of(const json& j) {
  Position p;
  p.line = j.at("line").get<uint32_t>();
  p.character = j.at("character").get<uint32_t>();
  return p;
}

json range_json(const LineIndex& idx, std::size_t b, std::size_t e) {
  return json{{"start", to_json(idx.position(b))}, {"end", to_json(idx.position(std::max(b, e)))}};
}

int lsp_severity(Severity s) {
  switch (s) {
    case Severity::Error: return 1;
    case Severity::Warning: return 2;
    case Severity::Note: return 3;
  }
  return 2;
}

bool is_config_file(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return base == "pyproject.toml" || base == ".leaklint.toml";
}

class Server {
 public:
  Server(std::istream& in, std::ostream& out) : in_(in), out_(out) {}

  int run() {
    for (;;) {
      // Publish once the client has nothing more queued: a burst of didChange
      // notifications is analysed once, for its last text.
      std::streambuf* sb = in_.rdbuf();
      if (sb == nullptr || sb->in_avail() <= 0) flush();
      std::string body;
      ReadStatus st = read_message(in_, body);
      if (st == ReadStatus::Eof || st == ReadStatus::Truncated) return shutdown_ ? 0 : 1;
      if (st == ReadStatus::BadHeader) {
        std::cerr << "leaklint lsp: skipped a message without a valid Content-Length header\n";
        continue;
      }
      json msg = json::parse(body, nullptr, /*allow_exceptions=*/false);
      if (msg.is_discarded()) {
        send_error(nullptr, kParseError, "Parse error: the message is not valid JSON");
        continue;
      }
      if (handle(msg)) return shutdown_ ? 0 : 1;
    }
  }

 private:
  // ---- output ----
  void send(const json& j) {
    write_message(out_, j.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  void reply(const json& id, json result) {
    send(json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
  }
  void send_error(const json& id, int code, const std::string& message) {
    send(json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
  }
  void notify(const char* method, json params) {
    send(json{{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
  }

  // ---- dispatch: returns true on `exit` ----
  bool handle(const json& msg) {
    if (!msg.is_object()) {
      send_error(nullptr, kInvalidRequest, "Invalid Request: expected a JSON object");
      return false;
    }
    auto id_it = msg.find("id");
    const bool is_request = id_it != msg.end();
    json id = is_request ? *id_it : json(nullptr);
    if (is_request && !id.is_string() && !id.is_number_integer() && !id.is_null()) {
      send_error(nullptr, kInvalidRequest, "Invalid Request: bad id");
      return false;
    }
    auto m_it = msg.find("method");
    if (m_it == msg.end() || !m_it->is_string()) {
      // A response to a request of ours (we send none), or garbage.
      if (is_request && !msg.contains("result") && !msg.contains("error"))
        send_error(id, kInvalidRequest, "Invalid Request: no method");
      return false;
    }
    const std::string method = m_it->get<std::string>();
    static const json kNoParams = json::object();
    auto p_it = msg.find("params");
    const json& params = p_it == msg.end() ? kNoParams : *p_it;

    if (method == "exit") return true;
    if (!initialized_ && method != "initialize") {
      if (is_request) send_error(id, kServerNotInitialized, "the server has not been initialized");
      return false;
    }
    if (shutdown_) {
      if (is_request) send_error(id, kInvalidRequest, "the server is shutting down");
      return false;
    }
    try {
      if (is_request) {
        if (method == "initialize") {
          if (initialized_) send_error(id, kInvalidRequest, "initialize was already received");
          else reply(id, initialize());
        } else if (method == "shutdown") {
          shutdown_ = true;
          reply(id, nullptr);
        } else if (method == "textDocument/codeAction") {
          reply(id, code_actions(params));
        } else {
          send_error(id, kMethodNotFound, "method not found: " + method);
        }
      } else if (method == "textDocument/didOpen") {
        did_open(params);
      } else if (method == "textDocument/didChange") {
        did_change(params);
      } else if (method == "textDocument/didSave") {
        did_save(params);
      } else if (method == "textDocument/didClose") {
        did_close(params);
      } else if (method == "workspace/didChangeWatchedFiles" || method == "workspace/didChangeConfiguration") {
        for (auto& [uri, doc] : docs_) doc.dirty = true;  // configuration may have changed
      }
      // Other notifications (initialized, $/cancelRequest, $/setTrace ...) need nothing.
    } catch (const json::exception& e) {
      if (is_request) send_error(id, kInvalidParams, std::string("invalid params: ") + e.what());
      else std::cerr << "leaklint lsp: ignored " << method << ": " << e.what() << "\n";
    } catch (const std::exception& e) {
      if (is_request) send_error(id, kInternalError, std::string("internal error: ") + e.what());
      else std::cerr << "leaklint lsp: " << method << ": internal error: " << e.what() << "\n";
    }
    return false;
  }

  json initialize() {
    initialized_ = true;
    json caps = {
        {"positionEncoding", "utf-16"},
        {"textDocumentSync", {{"openClose", true}, {"change", 1}, {"save", {{"includeText", false}}}}},
        {"codeActionProvider", {{"codeActionKinds", json::array({"quickfix"})}, {"resolveProvider", false}}},
    };
    return json{{"capabilities", std::move(caps)}, {"serverInfo", {{"name", "leaklint"}, {"version", LEAKLINT_VERSION}}}};
  }

  // ---- documents ----
  void did_open(const json& params) {
    const json& td = params.at("textDocument");
    Document doc;
    doc.uri = td.at("uri").get<std::string>();
    doc.path = path_from_uri(doc.uri);
    doc.language_id = td.contains("languageId") ? td.at("languageId").get<std::string>() : "";
    doc.text = td.at("text").get<std::string>();
    doc.version = td.contains("version") ? td.at("version") : json(nullptr);
    std::string uri = doc.uri;
    docs_[uri] = std::move(doc);
  }

  Document* find(const json& params) {
    const std::string uri = params.at("textDocument").at("uri").get<std::string>();
    auto it = docs_.find(uri);
    return it == docs_.end() ? nullptr : &it->second;
  }

  void did_change(const json& params) {
    Document* doc = find(params);
    if (doc == nullptr) return;
    for (const json& change : params.at("contentChanges")) {
      std::string text = change.at("text").get<std::string>();
      if (change.contains("range") && !change.at("range").is_null()) {  // incremental
        LineIndex idx(doc->text);
        std::size_t b = idx.offset(position_of(change.at("range").at("start")));
        std::size_t e = idx.offset(position_of(change.at("range").at("end")));
        if (e < b) std::swap(b, e);
        doc->text.replace(b, e - b, text);
      } else {
        doc->text = std::move(text);
      }
    }
    if (params.at("textDocument").contains("version")) doc->version = params.at("textDocument").at("version");
    doc->dirty = true;
  }

  void did_save(const json& params) {
    Document* doc = find(params);
    if (doc != nullptr) {
      if (params.contains("text") && params.at("text").is_string()) doc->text = params.at("text").get<std::string>();
      doc->dirty = true;
    }
    std::string path = path_from_uri(params.at("textDocument").at("uri").get<std::string>());
    if (is_config_file(path))
      for (auto& [uri, d] : docs_) d.dirty = true;
  }

  void did_close(const json& params) {
    const std::string uri = params.at("textDocument").at("uri").get<std::string>();
    if (docs_.erase(uri) > 0) notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", json::array()}});
  }

  // ---- analysis ----
  void flush() {
    for (auto& [uri, doc] : docs_)
      if (doc.dirty) analyse(doc);
  }

  static bool is_cpp_language(const std::string& id) {
    return id == "cpp" || id == "c" || id == "cuda-cpp" || id == "cuda";
  }

  static bool analysable(const Document& doc) {
    if (doc.language_id == "python" || is_cpp_language(doc.language_id)) return true;
    if (!doc.language_id.empty()) return false;
    const std::string& name = doc.path.empty() ? doc.uri : doc.path;
    return is_python_path(name) || is_cpp_path(name);
  }

  static bool is_cpp_document(const Document& doc) {
    if (!doc.language_id.empty()) return is_cpp_language(doc.language_id);
    return is_cpp_path(doc.path.empty() ? doc.uri : doc.path);
  }

  void analyse(Document& doc) {
    doc.dirty = false;
    doc.result = FileResult{};
    doc.problem.clear();
    if (analysable(doc)) {
      try {
        // A fresh resolver each time: configuration files may change while editing.
        ConfigResolver configs("", {}, {});
        const bool cpp = is_cpp_document(doc);
        std::string path = doc.path.empty() ? (cpp ? "untitled.cpp" : "untitled.py") : doc.path;
        std::string err;
        auto cfg = configs.for_file(path, &err);
        if (!err.empty()) doc.problem = "configuration error: " + err;
        // C++: the buffer goes to leaklint-cpp through a temporary copy beside the file, so
        // that its includes and compile command resolve (an untitled buffer: elsewhere).
        else if (cpp) doc.result = analyze_cpp_buffer(path, doc.text, EngineOptions{}, !doc.path.empty());
        else doc.result = analyze_file(path, *cfg, EngineOptions{}, &doc.text);
        if (doc.problem.empty()) hide_low_confidence(doc.result, cfg->show_low_confidence);
      } catch (const std::exception& e) {
        doc.result = FileResult{};
        doc.problem = std::string("internal error: ") + e.what();
      }
    }
    publish(doc);
  }

  void ensure_analysed(Document& doc) {
    if (doc.dirty) analyse(doc);
  }

  // The byte range of a finding in the analysed text.
  static std::pair<std::size_t, std::size_t> byte_range(const Range& r, const LineIndex& idx, std::size_t size) {
    std::size_t b = r.begin, e = r.end;
    bool ok = e >= b && e <= size && !(b == 0 && e == 0 && r.line > 1);
    if (!ok && r.line > 0) {  // fall back to 1-based line and byte column
      auto at = [&](uint32_t line, uint32_t col) {
        std::size_t ls = idx.line_start(line - 1), le = idx.line_end(line - 1);
        return std::min(le, ls + (col > 0 ? col - 1 : 0));
      };
      b = at(r.line, r.col);
      e = r.end_line > 0 ? at(r.end_line, r.end_col) : b;
    }
    b = std::min(b, size);
    e = std::min(std::max(e, b), size);
    return {b, e};
  }

  static json diagnostic(const Document& doc, const Finding& f, const LineIndex& idx) {
    auto [b, e] = byte_range(f.range, idx, doc.text.size());
    json d = {
        {"range", range_json(idx, b, e)},
        {"severity", lsp_severity(f.severity)},
        {"code", f.rule},
        {"codeDescription", {{"href", rule_help_uri(f.rule)}}},
        {"source", "leaklint"},
        {"message", f.message},
    };
    if (!f.notes.empty()) {
      json rel = json::array();
      for (const Note& n : f.notes) {
        auto [nb, ne] = byte_range(n.range, idx, doc.text.size());
        rel.push_back({{"location", {{"uri", doc.uri}, {"range", range_json(idx, nb, ne)}}}, {"message", n.message}});
      }
      d["relatedInformation"] = std::move(rel);
    }
    return d;
  }

  void publish(const Document& doc) {
    LineIndex idx(doc.text);
    json diags = json::array();
    if (!doc.problem.empty()) {
      diags.push_back({{"range", range_json(idx, 0, 0)},
                       {"severity", 1},
                       {"source", "leaklint"},
                       {"message", "leaklint: " + doc.problem}});
    }
    for (const Finding& f : doc.result.findings)
      if (!f.suppressed) diags.push_back(diagnostic(doc, f, idx));
    for (const Diagnostic& dg : doc.result.diagnostics) {
      // Editors show syntax errors already (and they flicker while typing); a file that
      // was not analysed at all is worth saying.
      if (dg.kind == "syntax-error" && !dg.fatal) continue;
      std::size_t at = 0;
      if (dg.line > 0) at = std::min(idx.line_end(dg.line - 1), idx.line_start(dg.line - 1) + (dg.col > 0 ? dg.col - 1 : 0));
      diags.push_back({{"range", range_json(idx, at, at)},
                       {"severity", dg.fatal ? 2 : 3},
                       {"code", dg.kind},
                       {"source", "leaklint"},
                       {"message", dg.message}});
    }
    json params = {{"uri", doc.uri}, {"diagnostics", std::move(diags)}};
    if (doc.version.is_number_integer()) params["version"] = doc.version;
    notify("textDocument/publishDiagnostics", std::move(params));
  }

  // ---- code actions ----
  static bool wants_quickfix(const json& context) {
    if (!context.is_object() || !context.contains("only") || !context.at("only").is_array()) return true;
    for (const json& k : context.at("only"))
      if (k.is_string() && (k.get<std::string>() == "quickfix" || k.get<std::string>().empty())) return true;
    return false;
  }

  // Appends a suppression comment to the line of the finding; nullopt-like empty json when
  // a comment cannot go there (a backslash continuation).
  static json suppress_edit(const Document& doc, const LineIndex& idx, std::size_t at, const std::string& rule) {
    uint32_t line = idx.position(at).line;
    std::size_t ls = idx.line_start(line), le = idx.line_end(line);
    std::string_view content = std::string_view(doc.text).substr(ls, le - ls);
    std::size_t keep = content.find_last_not_of(" \t");
    std::size_t insert = keep == std::string_view::npos ? ls : ls + keep + 1;
    std::string_view trimmed = content.substr(0, insert - ls);
    bool cpp = is_cpp_document(doc);
    std::string text;
    if (cpp) {
      text = "  // NOLINT(leaklint-" + rule + ")";
    } else {
      if (!trimmed.empty() && trimmed.back() == '\\') return json();
      // Extend a trailing `# noqa: CODES` rather than adding a second one.
      std::string low = lower(std::string(trimmed));
      std::size_t noqa = low.rfind("noqa:");
      bool extend = false;
      if (noqa != std::string::npos) {
        std::size_t hash = low.find_last_not_of(" \t", noqa == 0 ? std::string::npos : noqa - 1);
        std::string codes = low.substr(noqa + 5);
        bool only_codes = !codes.empty() && codes.find_first_not_of(" ,abcdefghijklmnopqrstuvwxyz0123456789_-") ==
                                                std::string::npos &&
                          codes.find_first_not_of(" ,") != std::string::npos;
        extend = noqa > 0 && hash != std::string::npos && low[hash] == '#' && only_codes;
      }
      text = extend ? ", " + rule : "  # noqa: " + rule;
    }
    return json{{"range", range_json(idx, insert, le)}, {"newText", text}};
  }

  json code_actions(const json& params) {
    json actions = json::array();
    Document* doc = find(params);
    if (doc == nullptr) return actions;
    if (params.contains("context") && !wants_quickfix(params.at("context"))) return actions;
    ensure_analysed(*doc);
    LineIndex idx(doc->text);
    std::size_t rb = idx.offset(position_of(params.at("range").at("start")));
    std::size_t re = idx.offset(position_of(params.at("range").at("end")));
    if (re < rb) std::swap(rb, re);

    std::vector<json> fixes, suppressions;
    std::set<std::pair<std::string, uint32_t>> suppressed_lines;
    for (const Finding& f : doc->result.findings) {
      if (f.suppressed) continue;
      auto [fb, fe] = byte_range(f.range, idx, doc->text.size());
      if (fb > re || rb > fe) continue;
      json diag = diagnostic(*doc, f, idx);
      for (const Fix& fix : f.fixes) {
        std::vector<Edit> edits = fix.edits;
        std::stable_sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
        json text_edits = json::array();
        bool valid = !edits.empty();
        std::size_t last_end = 0;
        for (const Edit& e : edits) {
          if (e.begin > e.end || e.end > doc->text.size() || e.begin < last_end) valid = false;
          last_end = e.end;
          text_edits.push_back({{"range", range_json(idx, e.begin, e.end)}, {"newText", e.text}});
        }
        if (!valid) continue;
        json action = {{"title", f.rule + ": " + fix.title + (fix.safe ? "" : " (unsafe fix)")},
                       {"kind", "quickfix"},
                       {"diagnostics", json::array({diag})},
                       {"isPreferred", fix.safe},
                       {"edit", {{"changes", {{doc->uri, std::move(text_edits)}}}}}};
        fixes.push_back(std::move(action));
      }
      uint32_t line = idx.position(fb).line;
      if (!suppressed_lines.insert({f.rule, line}).second) continue;
      json edit = suppress_edit(*doc, idx, fb, f.rule);
      if (edit.is_null()) continue;
      suppressions.push_back({{"title", "Suppress " + f.rule + " on this line"},
                              {"kind", "quickfix"},
                              {"diagnostics", json::array({diag})},
                              {"edit", {{"changes", {{doc->uri, json::array({std::move(edit)})}}}}}});
    }
    for (auto& a : fixes) actions.push_back(std::move(a));
    for (auto& a : suppressions) actions.push_back(std::move(a));
    return actions;
  }

  std::istream& in_;
  std::ostream& out_;
  bool initialized_ = false, shutdown_ = false;
  std::map<std::string, Document> docs_;
};

}  // namespace
}  // namespace lsp

int run_lsp(std::istream& in, std::ostream& out) {
  try {
    return lsp::Server(in, out).run();
  } catch (const std::exception& e) {
    std::cerr << "leaklint lsp: fatal: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ll
