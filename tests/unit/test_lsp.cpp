// Language server: Content-Length framing, byte offset <-> UTF-16 position conversion,
// file URIs, and a whole session driven through string streams.
#include "cli/lsp.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/fix.hpp"

namespace ll::lsp {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using namespace std::string_literals;

std::string frame(const std::string& body, const std::string& headers_before = "") {
  return headers_before + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// ---- framing ----------------------------------------------------------------------------

TEST(LspFraming, ReadsConsecutiveMessages) {
  std::istringstream in(frame(R"({"a":1})") + frame(R"({"b":22})"));
  std::string body;
  ASSERT_EQ(read_message(in, body), ReadStatus::Ok);
  EXPECT_EQ(body, R"({"a":1})");
  ASSERT_EQ(read_message(in, body), ReadStatus::Ok);
  EXPECT_EQ(body, R"({"b":22})");
  EXPECT_EQ(read_message(in, body), ReadStatus::Eof);
}

TEST(LspFraming, MultipleHeadersAnyOrderAnyCase) {
  std::string body = R"({"x":"y"})";
  std::istringstream in("Content-Type: application/vscode-jsonrpc; charset=utf-8\r\ncontent-length: " +
                        std::to_string(body.size()) + "\r\nX-Other: 1\r\n\r\n" + body);
  std::string got;
  ASSERT_EQ(read_message(in, got), ReadStatus::Ok);
  EXPECT_EQ(got, body);
}

TEST(LspFraming, AcceptsBareLineFeeds) {
  std::istringstream in("Content-Length: 2\n\n{}");
  std::string got;
  ASSERT_EQ(read_message(in, got), ReadStatus::Ok);
  EXPECT_EQ(got, "{}");
}

TEST(LspFraming, BodyIsReadAsRawBytes) {
  // CR, LF, CRLFCRLF, NUL and non-ASCII bytes inside the body are not framing.
  std::string body = "{\"t\":\"a\r\n\r\nb\"}\0\xC3\xA9\xF0\x9F\x9A\x80"s;
  std::istringstream in(frame(body) + frame("{}"));
  std::string got;
  ASSERT_EQ(read_message(in, got), ReadStatus::Ok);
  EXPECT_EQ(got, body);
  ASSERT_EQ(read_message(in, got), ReadStatus::Ok);
  EXPECT_EQ(got, "{}");
}

TEST(LspFraming, ContentLengthCountsBytesNotCharacters) {
  std::string body = "{\"t\":\"\xF0\x9F\x9A\x80\xC3\xA9\"}";  // 4 + 2 bytes of UTF-8
  std::istringstream in(frame(body));
  std::string got;
  ASSERT_EQ(read_message(in, got), ReadStatus::Ok);
  EXPECT_EQ(got.size(), body.size());
  EXPECT_EQ(Json::parse(got)["t"].get<std::string>(), "\xF0\x9F\x9A\x80\xC3\xA9");
}

TEST(LspFraming, EmptyBody) {
  std::istringstream in("Content-Length: 0\r\n\r\n");
  std::string got = "stale";
  ASSERT_EQ(read_message(in, got), ReadStatus::Ok);
  EXPECT_EQ(got, "");
  EXPECT_EQ(read_message(in, got), ReadStatus::Eof);
}

TEST(LspFraming, TruncatedBodyAndHeaders) {
  {
    std::istringstream in("Content-Length: 10\r\n\r\n{\"a\"");
    std::string got;
    EXPECT_EQ(read_message(in, got), ReadStatus::Truncated);
  }
  {
    std::istringstream in("Content-Length: 10\r\n");
    std::string got;
    EXPECT_EQ(read_message(in, got), ReadStatus::Truncated);
  }
  {
    std::istringstream in("Content-Len");
    std::string got;
    EXPECT_EQ(read_message(in, got), ReadStatus::Truncated);
  }
}

TEST(LspFraming, MissingOrBadLengthIsReportedAndSkipped) {
  for (const char* header : {"Content-Type: x\r\n\r\n", "Content-Length: abc\r\n\r\n", "Content-Length: -5\r\n\r\n",
                             "Content-Length: 99999999999999999999999\r\n\r\n"}) {
    std::istringstream in(std::string(header) + frame("{}"));
    std::string got;
    EXPECT_EQ(read_message(in, got), ReadStatus::BadHeader) << header;
    ASSERT_EQ(read_message(in, got), ReadStatus::Ok) << header;
    EXPECT_EQ(got, "{}");
  }
}

TEST(LspFraming, ResynchronisesAfterAShortBody) {
  // The first message announces fewer bytes than it has: the rest runs into the next
  // header line, which is still found.
  std::istringstream in("Content-Length: 3\r\n\r\n{}}xyz" + frame(R"({"ok":1})"));
  std::string got;
  ASSERT_EQ(read_message(in, got), ReadStatus::Ok);
  EXPECT_EQ(got, "{}}");
  ASSERT_EQ(read_message(in, got), ReadStatus::Ok);
  EXPECT_EQ(got, R"({"ok":1})");
}

TEST(LspFraming, OversizedBodyIsSkipped) {
  std::istringstream in(frame(std::string(100, 'x')) + frame("{}"));
  std::string got;
  EXPECT_EQ(read_message(in, got, 50), ReadStatus::BadHeader);
  ASSERT_EQ(read_message(in, got, 50), ReadStatus::Ok);
  EXPECT_EQ(got, "{}");
}

TEST(LspFraming, WritesHeaderAndExactBytes) {
  std::ostringstream out;
  write_message(out, "{\"\xC3\xA9\":1}");
  EXPECT_EQ(out.str(), "Content-Length: 8\r\n\r\n{\"\xC3\xA9\":1}");
  std::istringstream back(out.str());
  std::string got;
  ASSERT_EQ(read_message(back, got), ReadStatus::Ok);
  EXPECT_EQ(got, "{\"\xC3\xA9\":1}");
}

// ---- positions --------------------------------------------------------------------------

TEST(LspPositions, Ascii) {
  std::string t = "ab\ncd\n";
  LineIndex idx(t);
  EXPECT_EQ(idx.line_count(), 3u);
  EXPECT_EQ(idx.position(0), (Position{0, 0}));
  EXPECT_EQ(idx.position(2), (Position{0, 2}));
  EXPECT_EQ(idx.position(3), (Position{1, 0}));
  EXPECT_EQ(idx.position(5), (Position{1, 2}));
  EXPECT_EQ(idx.position(6), (Position{2, 0}));
  EXPECT_EQ(idx.position(600), (Position{2, 0}));
  EXPECT_EQ(idx.offset({1, 1}), 4u);
  EXPECT_EQ(idx.offset({1, 99}), 5u);  // past the line's end: its end
  EXPECT_EQ(idx.offset({9, 0}), t.size());
}

TEST(LspPositions, LineTerminators) {
  std::string t = "a\r\nb\rc\nd";
  LineIndex idx(t);
  ASSERT_EQ(idx.line_count(), 4u);
  EXPECT_EQ(idx.position(1), (Position{0, 1}));  // the CR of CRLF
  EXPECT_EQ(idx.position(2), (Position{0, 1}));  // inside CRLF: end of line 0
  EXPECT_EQ(idx.position(3), (Position{1, 0}));
  EXPECT_EQ(idx.position(5), (Position{2, 0}));  // after a lone CR
  EXPECT_EQ(idx.position(7), (Position{3, 0}));
  EXPECT_EQ(idx.line_end(0), 1u);
  EXPECT_EQ(idx.line_end(1), 4u);
  EXPECT_EQ(idx.line_end(3), t.size());
  EXPECT_EQ(idx.offset({0, 5}), 1u);
  EXPECT_EQ(idx.offset({2, 1}), 6u);
}

TEST(LspPositions, Utf16CodeUnits) {
  // é: 2 bytes, 1 unit. 中: 3 bytes, 1 unit. 🚀: 4 bytes, 2 units (a surrogate pair).
  std::string t = "x = \"\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x9A\x80\" + y\n";
  LineIndex idx(t);
  std::size_t e_acute = t.find("\xC3\xA9"), zhong = t.find("\xE4\xB8\xAD"), rocket = t.find("\xF0\x9F\x9A\x80");
  std::size_t y = t.find('y');
  EXPECT_EQ(idx.position(e_acute), (Position{0, 5}));
  EXPECT_EQ(idx.position(zhong), (Position{0, 6}));
  EXPECT_EQ(idx.position(rocket), (Position{0, 7}));
  EXPECT_EQ(idx.position(rocket + 4), (Position{0, 9}));
  EXPECT_EQ(idx.position(y), (Position{0, 13}));
  // Inside a UTF-8 sequence: the character's start.
  EXPECT_EQ(idx.position(rocket + 2), (Position{0, 7}));
  // Round trips.
  for (std::size_t off : {e_acute, zhong, rocket, rocket + 4, y}) EXPECT_EQ(idx.offset(idx.position(off)), off);
  // Between the two halves of the surrogate pair: the character's start.
  EXPECT_EQ(idx.offset({0, 8}), rocket);
}

TEST(LspPositions, EmptyText) {
  LineIndex idx("");
  EXPECT_EQ(idx.line_count(), 1u);
  EXPECT_EQ(idx.position(0), (Position{0, 0}));
  EXPECT_EQ(idx.offset({0, 3}), 0u);
  EXPECT_EQ(idx.offset({4, 3}), 0u);
}

TEST(LspUris, FileUris) {
  EXPECT_EQ(path_from_uri("file:///home/u/a%20b/x.py"), "/home/u/a b/x.py");
  EXPECT_EQ(path_from_uri("file://localhost/tmp/x.py"), "/tmp/x.py");
  EXPECT_EQ(path_from_uri("FILE:///tmp/%E2%82%AC.py"), "/tmp/\xE2\x82\xAC.py");
  EXPECT_EQ(path_from_uri("file:///tmp/100%.py"), "/tmp/100%.py");  // not an escape
  EXPECT_EQ(path_from_uri("untitled:Untitled-1"), "");
  EXPECT_EQ(uri_from_path("/home/u/a b/\xE2\x82\xAC.py"), "file:///home/u/a%20b/%E2%82%AC.py");
  EXPECT_EQ(path_from_uri(uri_from_path("/x/#1 [a]/y.py")), "/x/#1 [a]/y.py");
}

// ---- a session --------------------------------------------------------------------------

std::string request(int id, const std::string& method, const Json& params) {
  return frame(Json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump());
}
std::string notification(const std::string& method, const Json& params) {
  return frame(Json{{"jsonrpc", "2.0"}, {"method", method}, {"params", params}}.dump());
}

std::vector<Json> messages_of(const std::string& out) {
  std::istringstream in(out);
  std::vector<Json> msgs;
  std::string body;
  while (read_message(in, body) == ReadStatus::Ok) msgs.push_back(Json::parse(body));
  return msgs;
}

const Json* response(const std::vector<Json>& msgs, int id) {
  for (const Json& m : msgs)
    if (m.contains("id") && m["id"] == id) return &m;
  return nullptr;
}

std::vector<Json> diagnostics_for(const std::vector<Json>& msgs, const std::string& uri) {
  std::vector<Json> out;
  for (const Json& m : msgs)
    if (m.value("method", "") == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri) out.push_back(m["params"]);
  return out;
}

// Applies LSP TextEdits (UTF-16 positions) to a UTF-8 text.
std::string apply_text_edits(const std::string& text, const Json& edits) {
  LineIndex idx(text);
  std::vector<Edit> bytes;
  for (const Json& e : edits) {
    Edit b;
    b.begin = static_cast<uint32_t>(
        idx.offset({e["range"]["start"]["line"].get<uint32_t>(), e["range"]["start"]["character"].get<uint32_t>()}));
    b.end = static_cast<uint32_t>(
        idx.offset({e["range"]["end"]["line"].get<uint32_t>(), e["range"]["end"]["character"].get<uint32_t>()}));
    b.text = e["newText"].get<std::string>();
    bytes.push_back(b);
  }
  return apply_edits(text, bytes);
}

class LspSession : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("leaklint_lsp_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    // A config of its own so that no pyproject.toml above the temp dir applies.
    std::ofstream(dir_ / ".leaklint.toml") << "select = [\"LL\"]\n";
    uri_ = uri_from_path((dir_ / "eval \xC3\xA9.py").string());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::vector<Json> run(const std::string& input, int* rc = nullptr) {
    std::istringstream in(input);
    std::ostringstream out;
    int r = run_lsp(in, out);
    if (rc) *rc = r;
    return messages_of(out.str());
  }
  fs::path dir_;
  std::string uri_;
};

// The emoji before `model(x)` makes UTF-16 columns differ from byte columns.
const std::string kLeaky =
    "import torch\n"
    "\n"
    "\n"
    "def evaluate(model, val_loader):\n"
    "    model.eval()\n"
    "    correct = 0\n"
    "    for x, y in val_loader:\n"
    "        correct += len(\"\xF0\x9F\x9A\x80\") * (model(x).argmax(1) == y).sum().item()\n"
    "    return correct\n";

TEST_F(LspSession, PublishesFixesAndClears) {
  Json init = {{"processId", nullptr}, {"rootUri", nullptr}, {"capabilities", Json::object()}};
  std::string input = request(1, "initialize", init) + notification("initialized", Json::object()) +
                      notification("textDocument/didOpen", {{"textDocument",
                                                             {{"uri", uri_},
                                                              {"languageId", "python"},
                                                              {"version", 1},
                                                              {"text", kLeaky}}}});
  // Diagnostics are published once the server has read everything queued (here: at the
  // end of the input). First just open, to learn the diagnostic.
  std::vector<Json> msgs = run(input);
  const Json* init_reply = response(msgs, 1);
  ASSERT_NE(init_reply, nullptr);
  const Json& caps = (*init_reply)["result"]["capabilities"];
  EXPECT_EQ(caps["textDocumentSync"]["change"], 1);
  EXPECT_EQ(caps["textDocumentSync"]["openClose"], true);
  EXPECT_TRUE(caps["textDocumentSync"].contains("save"));
  EXPECT_EQ(caps["codeActionProvider"]["codeActionKinds"], Json::array({"quickfix"}));

  auto pubs = diagnostics_for(msgs, uri_);
  ASSERT_EQ(pubs.size(), 1u);
  EXPECT_EQ(pubs[0]["version"], 1);
  ASSERT_EQ(pubs[0]["diagnostics"].size(), 1u);
  Json d = pubs[0]["diagnostics"][0];
  EXPECT_EQ(d["code"], "LL101");
  EXPECT_EQ(d["source"], "leaklint");
  EXPECT_EQ(d["severity"], 2);
  EXPECT_NE(d["codeDescription"]["href"].get<std::string>().find("LL101"), std::string::npos);
  // `model(x)` starts at byte 35 of line 7, but the emoji is 4 bytes and 2 UTF-16 units.
  const std::string line7 = "        correct += len(\"\xF0\x9F\x9A\x80\") * (";
  EXPECT_EQ(d["range"]["start"]["line"], 7);
  EXPECT_EQ(d["range"]["start"]["character"], line7.size() - 2);
  EXPECT_EQ(d["range"]["end"]["character"], line7.size() - 2 + std::string("model(x)").size());

  // Second session: open, ask for code actions at the diagnostic, apply the fix, change.
  Json range = d["range"];
  std::string s2 = input + request(2, "textDocument/codeAction",
                                   {{"textDocument", {{"uri", uri_}}},
                                    {"range", range},
                                    {"context", {{"diagnostics", Json::array({d})}}}});
  msgs = run(s2);
  const Json* actions = response(msgs, 2);
  ASSERT_NE(actions, nullptr);
  ASSERT_TRUE((*actions)["result"].is_array());
  const Json* fix = nullptr;
  const Json* suppress = nullptr;
  for (const Json& a : (*actions)["result"]) {
    EXPECT_EQ(a["kind"], "quickfix");
    if (a["title"] == "Suppress LL101 on this line") suppress = &a;
    else fix = &a;
  }
  ASSERT_NE(fix, nullptr);
  ASSERT_NE(suppress, nullptr);
  std::string fixed = apply_text_edits(kLeaky, (*fix)["edit"]["changes"][uri_]);
  EXPECT_NE(fixed.find("@torch.no_grad()\ndef evaluate"), std::string::npos) << fixed;
  std::string suppressed = apply_text_edits(kLeaky, (*suppress)["edit"]["changes"][uri_]);
  EXPECT_NE(suppressed.find(".sum().item()  # noqa: LL101\n"), std::string::npos) << suppressed;

  for (const std::string& new_text : {fixed, suppressed}) {
    msgs = run(input + notification("textDocument/didChange",
                                    {{"textDocument", {{"uri", uri_}, {"version", 2}}},
                                     {"contentChanges", Json::array({{{"text", new_text}}})}}) +
               request(3, "textDocument/codeAction",
                       {{"textDocument", {{"uri", uri_}}}, {"range", range}, {"context", Json::object()}}) +
               notification("textDocument/didClose", {{"textDocument", {{"uri", uri_}}}}));
    pubs = diagnostics_for(msgs, uri_);
    ASSERT_GE(pubs.size(), 2u);
    EXPECT_EQ(pubs[pubs.size() - 2]["version"], 2);
    EXPECT_EQ(pubs[pubs.size() - 2]["diagnostics"], Json::array());
    EXPECT_EQ(pubs.back()["diagnostics"], Json::array());  // cleared on close
    EXPECT_FALSE(pubs.back().contains("version"));
    ASSERT_NE(response(msgs, 3), nullptr);
    EXPECT_EQ((*response(msgs, 3))["result"], Json::array());
  }
}

TEST_F(LspSession, ExtendsAnExistingNoqa) {
  std::string text = kLeaky;
  std::string tail = ".sum().item()\n";
  text.replace(text.find(tail), tail.size(), ".sum().item()  # noqa: E501\n");
  std::string input =
      request(1, "initialize", {{"capabilities", Json::object()}}) +
      notification("textDocument/didOpen",
                   {{"textDocument", {{"uri", uri_}, {"languageId", "python"}, {"version", 1}, {"text", text}}}}) +
      request(2, "textDocument/codeAction",
              {{"textDocument", {{"uri", uri_}}},
               {"range", {{"start", {{"line", 7}, {"character", 0}}}, {"end", {{"line", 8}, {"character", 0}}}}},
               {"context", {{"diagnostics", Json::array()}}}});
  auto msgs = run(input);
  ASSERT_NE(response(msgs, 2), nullptr);
  bool found = false;
  for (const Json& a : (*response(msgs, 2))["result"]) {
    if (a["title"] != "Suppress LL101 on this line") continue;
    found = true;
    std::string out = apply_text_edits(text, a["edit"]["changes"][uri_]);
    EXPECT_NE(out.find("# noqa: E501, LL101\n"), std::string::npos) << out;
  }
  EXPECT_TRUE(found);
}

TEST_F(LspSession, SurvivesMalformedInput) {
  std::string input = frame("{not json") + frame("[1,2]") + frame("42") +
                      request(7, "textDocument/hover", Json::object()) +  // before initialize
                      request(1, "initialize", {{"capabilities", Json::object()}}) +
                      request(1, "initialize", {{"capabilities", Json::object()}}) +  // again
                      "Content-Type: nothing\r\n\r\n" +                             // no length
                      request(2, "leaklint/unknown", Json::object()) +
                      notification("leaklint/unknownNotification", Json::object()) +
                      notification("textDocument/didOpen", {{"textDocument", 5}}) +   // bad params
                      notification("textDocument/didChange", {{"textDocument", {{"uri", "file:///nope.py"}}},
                                                              {"contentChanges", Json::array()}}) +
                      request(3, "textDocument/codeAction", {{"textDocument", {{"uri", 3}}}}) +
                      request(4, "textDocument/codeAction",
                              {{"textDocument", {{"uri", "file:///not/open.py"}}},
                               {"range", {{"start", {{"line", 0}, {"character", 0}}},
                                          {"end", {{"line", 0}, {"character", 0}}}}}}) +
                      frame(R"({"jsonrpc":"2.0","id":99,"result":null})") +  // a stray response
                      request(5, "shutdown", nullptr) + request(6, "textDocument/codeAction", Json::object()) +
                      notification("exit", nullptr);
  int rc = -1;
  auto msgs = run(input, &rc);
  EXPECT_EQ(rc, 0);
  int parse_errors = 0, invalid = 0;
  for (const Json& m : msgs) {
    if (!m.contains("error") || !m["id"].is_null()) continue;
    if (m["error"]["code"] == -32700) ++parse_errors;
    if (m["error"]["code"] == -32600) ++invalid;
  }
  EXPECT_EQ(parse_errors, 1);
  EXPECT_EQ(invalid, 2);  // [1,2] and 42
  auto code_of = [&](int id) { return (*response(msgs, id))["error"]["code"].get<int>(); };
  ASSERT_NE(response(msgs, 7), nullptr);
  EXPECT_EQ(code_of(7), -32002);
  ASSERT_NE(response(msgs, 2), nullptr);
  EXPECT_EQ(code_of(2), -32601);
  ASSERT_NE(response(msgs, 3), nullptr);
  EXPECT_EQ(code_of(3), -32602);
  ASSERT_NE(response(msgs, 4), nullptr);
  EXPECT_EQ((*response(msgs, 4))["result"], Json::array());
  ASSERT_NE(response(msgs, 5), nullptr);
  EXPECT_TRUE((*response(msgs, 5))["result"].is_null());
  ASSERT_NE(response(msgs, 6), nullptr);
  EXPECT_EQ(code_of(6), -32600);
  EXPECT_EQ(response(msgs, 99), nullptr);
}

TEST_F(LspSession, ExitWithoutShutdownAndEndOfInput) {
  int rc = -1;
  run(request(1, "initialize", {{"capabilities", Json::object()}}) + notification("exit", nullptr), &rc);
  EXPECT_EQ(rc, 1);
  run(request(1, "initialize", {{"capabilities", Json::object()}}), &rc);
  EXPECT_EQ(rc, 1);
  run("Content-Length: 40\r\n\r\n{\"jsonrpc\"", &rc);
  EXPECT_EQ(rc, 1);
}

TEST_F(LspSession, ConfigurationErrorsAreShown) {
  std::ofstream(dir_ / ".leaklint.toml") << "select = [\n";  // invalid TOML
  auto msgs = run(request(1, "initialize", {{"capabilities", Json::object()}}) +
                  notification("textDocument/didOpen",
                               {{"textDocument", {{"uri", uri_}, {"languageId", "python"}, {"version", 1}, {"text", kLeaky}}}}));
  auto pubs = diagnostics_for(msgs, uri_);
  ASSERT_EQ(pubs.size(), 1u);
  ASSERT_EQ(pubs[0]["diagnostics"].size(), 1u);
  EXPECT_EQ(pubs[0]["diagnostics"][0]["severity"], 1);
  EXPECT_NE(pubs[0]["diagnostics"][0]["message"].get<std::string>().find("configuration"), std::string::npos);
}

TEST_F(LspSession, LowConfidenceFindingsFollowTheConfiguration) {
  // A CPU-only script: its LL101 finding is weak, hidden unless show-low-confidence is on.
  const std::string cpu = "import torch\n\nmodel = torch.nn.Linear(4, 2)\nmodel.eval()\n"
                          "for x in [torch.randn(1, 4) for _ in range(3)]:\n    print(model(x))\n";
  auto open_once = [&] {
    auto msgs = run(request(1, "initialize", {{"capabilities", Json::object()}}) +
                    notification("textDocument/didOpen",
                                 {{"textDocument", {{"uri", uri_}, {"languageId", "python"}, {"version", 1}, {"text", cpu}}}}));
    return diagnostics_for(msgs, uri_);
  };
  auto hidden = open_once();
  ASSERT_EQ(hidden.size(), 1u);
  EXPECT_EQ(hidden[0]["diagnostics"], Json::array());
  std::ofstream(dir_ / ".leaklint.toml") << "show-low-confidence = true\n";
  auto shown = open_once();
  ASSERT_EQ(shown.size(), 1u);
  ASSERT_EQ(shown[0]["diagnostics"].size(), 1u);
  EXPECT_EQ(shown[0]["diagnostics"][0]["code"], "LL101");
}

TEST_F(LspSession, IncrementalChangesAndNonPythonDocuments) {
  std::string cpp_uri = uri_from_path((dir_ / "x.cpp").string());
  std::string start = "import torch\n";
  auto msgs = run(
      request(1, "initialize", {{"capabilities", Json::object()}}) +
      notification("textDocument/didOpen",
                   {{"textDocument", {{"uri", uri_}, {"languageId", "python"}, {"version", 1}, {"text", start}}}}) +
      notification("textDocument/didChange",
                   {{"textDocument", {{"uri", uri_}, {"version", 2}}},
                    {"contentChanges", Json::array({{{"range", {{"start", {{"line", 1}, {"character", 0}}},
                                                               {"end", {{"line", 1}, {"character", 0}}}}},
                                                     {"text", kLeaky.substr(start.size())}}})}}) +
      notification("textDocument/didOpen",
                   {{"textDocument", {{"uri", cpp_uri}, {"languageId", "cpp"}, {"version", 1}, {"text", "int x;\n"}}}}));
  auto pubs = diagnostics_for(msgs, uri_);
  ASSERT_FALSE(pubs.empty());
  EXPECT_EQ(pubs.back()["version"], 2);
  ASSERT_EQ(pubs.back()["diagnostics"].size(), 1u);
  EXPECT_EQ(pubs.back()["diagnostics"][0]["code"], "LL101");
  auto cpp = diagnostics_for(msgs, cpp_uri);
  ASSERT_EQ(cpp.size(), 1u);
  EXPECT_EQ(cpp[0]["diagnostics"], Json::array());
}

TEST_F(LspSession, CppDocumentsGoToTheCppFrontendThroughACopyBesideTheFile) {
  // A C++ buffer that holds a forward is analysed (here leaklint-cpp is made unavailable, so
  // the analysis says it needs it, under the document's own name); no copy is left behind.
  const char* old = std::getenv("LEAKLINT_CPP");
  const std::string saved = old ? old : "";
  ::setenv("LEAKLINT_CPP", (dir_ / "no-such-leaklint-cpp").c_str(), 1);
  std::string cpp_uri = uri_from_path((dir_ / "eval.cpp").string());
  auto before = std::distance(fs::directory_iterator(dir_), fs::directory_iterator());
  auto msgs = run(request(1, "initialize", {{"capabilities", Json::object()}}) +
                  notification("textDocument/didOpen",
                               {{"textDocument",
                                 {{"uri", cpp_uri},
                                  {"languageId", "cpp"},
                                  {"version", 1},
                                  {"text", "#include <torch/torch.h>\nvoid f(torch::nn::Linear& m, torch::Tensor x) {\n"
                                           "  m->forward(x);\n}\n"}}}}));
  if (old) ::setenv("LEAKLINT_CPP", saved.c_str(), 1);
  else ::unsetenv("LEAKLINT_CPP");
  auto pubs = diagnostics_for(msgs, cpp_uri);
  ASSERT_EQ(pubs.size(), 1u);
  ASSERT_EQ(pubs[0]["diagnostics"].size(), 1u) << pubs[0].dump();
  EXPECT_EQ(pubs[0]["diagnostics"][0]["code"], "unsupported");
  const std::string message = pubs[0]["diagnostics"][0]["message"].get<std::string>();
  EXPECT_NE(message.find("leaklint-cpp"), std::string::npos) << message;
  EXPECT_EQ(message.find(".leaklint-"), std::string::npos) << message;  // the copy's name never shows
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), before);
}

}  // namespace
}  // namespace ll::lsp
