// `leaklint lsp`: a language server over stdio (LSP 3.17, JSON-RPC 2.0 with Content-Length
// framing). Open Python documents are analysed on open/change/save and their findings
// published as diagnostics; code actions offer each finding's fix and a suppression comment.
// C/C++/CUDA documents go to leaklint-cpp through a temporary copy beside the file
// (engine.hpp's analyze_cpp_buffer), so that their includes and compile command resolve.
#pragma once

#include <cstddef>
#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace ll {

// Serves one client until `exit` (or end of input). Returns 0 when the client sent
// `shutdown` before `exit`, 1 otherwise (the LSP convention).
int run_lsp(std::istream& in, std::ostream& out);

namespace lsp {

// ---- framing -----------------------------------------------------------------------------

enum class ReadStatus {
  Ok,         // `body` holds one message's content
  Eof,        // clean end of input between messages
  BadHeader,  // a header block without a usable Content-Length; it was skipped
  Truncated,  // input ended inside a message
};

// Reads one message: header lines (`Name: value`, terminated by CRLF or LF, names
// case-insensitive) up to an empty line, then exactly Content-Length bytes, read as raw
// bytes. Bodies over `max_body` bytes are skipped (returned as BadHeader).
ReadStatus read_message(std::istream& in, std::string& body, std::size_t max_body = std::size_t{1} << 30);

// Writes `Content-Length: N\r\n\r\n` + body and flushes.
void write_message(std::ostream& out, std::string_view body);

// ---- positions ---------------------------------------------------------------------------

struct Position {
  uint32_t line = 0;       // 0-based
  uint32_t character = 0;  // 0-based, in UTF-16 code units
  bool operator==(const Position& o) const { return line == o.line && character == o.character; }
};

// Converts between byte offsets into a UTF-8 text and LSP positions. Lines end at "\n",
// "\r\n" or "\r" (as LSP defines them). The text must outlive the index.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);
  // Offsets inside a line terminator map to the end of that line; past the end of the text,
  // to the end of the text; inside a UTF-8 sequence, to the start of that character.
  Position position(std::size_t byte_offset) const;
  // Characters past the end of a line map to its end (before the terminator), lines past
  // the last to the end of the text; a position between the two halves of a surrogate
  // pair maps to the start of that character.
  std::size_t offset(Position p) const;
  std::size_t line_count() const { return starts_.size(); }
  std::size_t line_start(uint32_t line) const;
  std::size_t line_end(uint32_t line) const;  // before the terminator
 private:
  std::string_view text_;
  std::vector<std::size_t> starts_;
};

// `file:///home/a%20b/x.py` -> `/home/a b/x.py`; other schemes (untitled:) -> "".
std::string path_from_uri(std::string_view uri);
// `/home/a b/x.py` -> `file:///home/a%20b/x.py`.
std::string uri_from_path(std::string_view path);

}  // namespace lsp
}  // namespace ll
