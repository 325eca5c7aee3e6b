#include "cli/notebook.hpp"

#include "frontend/python/python_frontend.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>

#include <nlohmann/json.hpp>

namespace ll {

using OJson = nlohmann::ordered_json;

bool is_notebook_path(const std::string& path) {
  return path.size() > 6 && path.compare(path.size() - 6, 6, ".ipynb") == 0;
}

namespace {

const char* const kBoundary = "#leaklint-cell-boundary\n";

struct StringPos {
  int cell = -1;
  int index = -1;   // element of the source array (-1: source is one string)
  size_t quote = 0;  // offset of the string's opening quote in the .ipynb text
};

// Finds where each cells[i].source[j] string starts in the raw JSON text, with an explicit
// stack (no recursion), so positions can be reported in the .ipynb file itself.
std::vector<StringPos> source_positions(const std::string& t) {
  struct Frame {
    bool object;
    std::string key;
    int index;
  };
  std::vector<Frame> stack;
  std::vector<StringPos> out;
  bool expect_key = false;
  auto in_source = [&](int* cell, int* index) {
    // path: {cells: [ {source: [ str ]} ]} or {cells: [ {source: str} ]}
    size_t n = stack.size();
    if (n >= 4 && stack[n - 1].object == false && stack[n - 2].object && stack[n - 2].key == "source" &&
        !stack[n - 3].object && stack[n - 3].index >= 0 && stack[n - 4].key == "cells" && n == 4) {
      *cell = stack[n - 3].index;
      *index = stack[n - 1].index;
      return true;
    }
    if (n == 3 && stack[n - 1].object && stack[n - 1].key == "source" && !stack[n - 2].object &&
        stack[n - 3].key == "cells") {
      *cell = stack[n - 2].index;
      *index = -1;
      return true;
    }
    return false;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '{') { stack.push_back({true, "", 0}); expect_key = true; continue; }
    if (c == '[') { stack.push_back({false, "", 0}); expect_key = false; continue; }
    if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
      continue;
    }
    if (c == ',') {
      if (!stack.empty()) {
        if (stack.back().object) expect_key = true;
        else ++stack.back().index;
      }
      continue;
    }
    if (c == ':') { expect_key = false; continue; }
    if (c == '"') {
      size_t j = i + 1;
      while (j < t.size() && t[j] != '"') j += t[j] == '\\' ? 2 : 1;
      if (!stack.empty() && stack.back().object && expect_key) {
        stack.back().key = t.substr(i + 1, std::min(j, t.size()) - i - 1);
        i = j;
        continue;
      }
      int cell, index;
      if (in_source(&cell, &index)) out.push_back({cell, index, i});
      i = j;
      continue;
    }
  }
  return out;
}

uint32_t hex4(const std::string& t, size_t at, bool* ok) {
  uint32_t v = 0;
  for (size_t k = 0; k < 4; ++k) {
    char c = at + k < t.size() ? t[at + k] : 0;
    v <<= 4;
    if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
    else *ok = false;
  }
  return v;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) out += static_cast<char>(cp);
  else if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
  else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Decodes the JSON string whose opening quote is at `q`: its bytes, and for each byte the
// offset in `t` of the character (or escape) it came from. Returns the closing quote's
// offset, or npos when the string is malformed.
size_t decode_json_string(const std::string& t, size_t q, std::string* out, std::vector<uint32_t>* offs) {
  size_t i = q + 1;
  while (i < t.size() && t[i] != '"') {
    const size_t at = i;
    const size_t before = out->size();
    if (t[i] != '\\') {
      *out += t[i++];
    } else {
      if (i + 1 >= t.size()) return std::string::npos;
      char e = t[i + 1];
      i += 2;
      switch (e) {
        case '"': *out += '"'; break;
        case '\\': *out += '\\'; break;
        case '/': *out += '/'; break;
        case 'b': *out += '\b'; break;
        case 'f': *out += '\f'; break;
        case 'n': *out += '\n'; break;
        case 'r': *out += '\r'; break;
        case 't': *out += '\t'; break;
        case 'u': {
          bool ok = true;
          uint32_t cp = hex4(t, i, &ok);
          i += 4;
          if (cp >= 0xD800 && cp < 0xDC00 && i + 6 <= t.size() && t[i] == '\\' && t[i + 1] == 'u') {
            uint32_t lo = hex4(t, i + 2, &ok);
            if (lo >= 0xDC00 && lo < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              i += 6;
            }
          }
          if (!ok) return std::string::npos;
          append_utf8(*out, cp);
          break;
        }
        default: return std::string::npos;
      }
    }
    offs->insert(offs->end(), out->size() - before, static_cast<uint32_t>(at));
  }
  return i < t.size() ? i : std::string::npos;
}

// Where each cells[i].source value lies in the raw JSON text ([begin, end) bytes), and for
// an array the [begin, end) of each element, so a fix rewrites only those bytes.
struct SourceSpan {
  int cell = -1;
  size_t begin = 0, end = 0;
  bool array = false;
  std::vector<std::pair<size_t, size_t>> elems;
};

std::vector<SourceSpan> source_spans(const std::string& t) {
  struct Frame {
    bool object;
    std::string key;
    int index;
  };
  std::vector<Frame> st;
  std::vector<SourceSpan> out;
  bool expect_key = false, after_colon = false;
  int open = -1;  // index in `out` of the source value being scanned
  size_t open_depth = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (after_colon) {
      after_colon = false;
      size_t n = st.size();
      if (open < 0 && n == 3 && st[0].object && st[0].key == "cells" && !st[1].object && st[2].object &&
          st[2].key == "source" && (c == '"' || c == '[')) {
        out.push_back({st[1].index, i, 0, c == '[', {}});
        open = static_cast<int>(out.size()) - 1;
        open_depth = n;
      }
    }
    if (c == '"') {
      size_t j = i + 1;
      while (j < t.size() && t[j] != '"') j += t[j] == '\\' ? 2 : 1;
      if (j >= t.size()) return {};
      if (!st.empty() && st.back().object && expect_key) {
        st.back().key = t.substr(i + 1, j - i - 1);
        expect_key = false;
      } else if (open >= 0 && st.size() == open_depth) {
        out[open].end = j + 1;
        open = -1;
      } else if (open >= 0 && st.size() == open_depth + 1) {
        out[open].elems.emplace_back(i, j + 1);
      }
      i = j;
      continue;
    }
    if (c == '{' || c == '[') {
      st.push_back({c == '{', "", 0});
      expect_key = c == '{';
      continue;
    }
    if (c == '}' || c == ']') {
      if (st.empty()) return {};
      st.pop_back();
      if (open >= 0 && st.size() == open_depth && c == ']') {
        out[open].end = i + 1;
        open = -1;
      }
      continue;
    }
    if (c == ',') {
      if (!st.empty()) {
        if (st.back().object) expect_key = true;
        else ++st.back().index;
      }
      continue;
    }
    if (c == ':') after_colon = true;
  }
  if (open >= 0) out.pop_back();
  return out;
}

std::vector<std::string> source_lines(const OJson& src) {
  std::vector<std::string> lines;
  if (src.is_string()) {
    std::string s = src.get<std::string>();
    size_t p = 0;
    while (p < s.size()) {
      size_t nl = s.find('\n', p);
      if (nl == std::string::npos) { lines.push_back(s.substr(p)); break; }
      lines.push_back(s.substr(p, nl - p + 1));
      p = nl + 1;
    }
  } else if (src.is_array()) {
    for (const auto& l : src)
      if (l.is_string()) lines.push_back(l.get<std::string>());
  }
  return lines;
}

// IPython's automagic (on by default): `pip install torchinfo`, `cd data`, `conda install x`
// run the magic of that name without its `%`. A line is one when it starts with such a name
// followed by an argument (a word, an option, a path), which as Python would be a syntax error
// or an expression with no effect (`ls -la`); a Python keyword after the name (`cd in x`)
// keeps it Python.
bool automagic(const std::string& line, size_t i) {
  static constexpr std::string_view kNames[] = {"pip", "conda", "mamba", "cd", "ls", "pwd", "mkdir", "cat",
                                                "cp", "mv", "rm", "rmdir", "pushd", "popd", "load_ext",
                                                "matplotlib", "env"};
  size_t k = i;
  while (k < line.size() && (std::isalnum(static_cast<unsigned char>(line[k])) || line[k] == '_')) ++k;
  const std::string_view word = std::string_view(line).substr(i, k - i);
  if (std::find(std::begin(kNames), std::end(kNames), word) == std::end(kNames)) return false;
  if (k >= line.size() || (line[k] != ' ' && line[k] != '\t')) return false;
  const size_t a = line.find_first_not_of(" \t", k);
  if (a == std::string::npos || line[a] == '\n' || line[a] == '\r' || line[a] == '#') return false;
  const char c = line[a];
  if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '/' || c == '~' || c == '.'))
    return false;
  size_t e = a;
  while (e < line.size() && (std::isalnum(static_cast<unsigned char>(line[e])) || line[e] == '_')) ++e;
  static constexpr std::string_view kKeywords[] = {"in", "is", "and", "or", "if", "else", "not", "for"};
  const std::string_view next = std::string_view(line).substr(a, e - a);
  return std::find(std::begin(kKeywords), std::end(kKeywords), next) == std::end(kKeywords);
}

bool is_magic(const std::string& line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos) return false;
  char c = line[i];
  if (c == '%' || c == '!') return true;
  std::string trimmed = line.substr(i);
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == '\r' || trimmed.back() == ' '))
    trimmed.pop_back();
  if (!trimmed.empty() && trimmed.back() == '?' && trimmed.find('#') == std::string::npos) return true;
  if (automagic(line, i)) return true;
  // `files = !ls`, `t = %timeit -o f()`: IPython's assignment forms, never valid Python.
  size_t k = i;
  while (k < line.size() && (std::isalnum(static_cast<unsigned char>(line[k])) || line[k] == '_' || line[k] == '.' ||
                             static_cast<unsigned char>(line[k]) >= 0x80))
    ++k;
  if (k == i || std::isdigit(static_cast<unsigned char>(line[i]))) return false;
  k = line.find_first_not_of(" \t", k);
  if (k == std::string::npos || line[k] != '=' || k + 1 >= line.size() || line[k + 1] == '=') return false;
  k = line.find_first_not_of(" \t", k + 1);
  return k != std::string::npos && (line[k] == '!' || line[k] == '%');
}

bool continues(const std::string& line) {  // ends with a backslash continuation
  size_t e = line.size();
  while (e > 0 && (line[e - 1] == '\n' || line[e - 1] == '\r')) --e;
  return e > 0 && line[e - 1] == '\\';
}

// Where a Python line leaves the logical line: inside how many open brackets, inside which
// triple-quoted string (its quote character, 0 for none), and whether it ends with a backslash.
// IPython reads a magic only at the start of a logical line: `print('%d' \n %(n))` continues
// the call on its second line, whatever its first character.
struct LogicalLine {
  int depth = 0;
  char triple = 0;
  bool backslash = false;
  bool open() const { return depth > 0 || triple != 0 || backslash; }
  void scan(const std::string& line) {
    backslash = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (triple) {
        if (c == '\\') ++i;
        else if (c == triple && line.compare(i, 3, std::string(3, triple)) == 0) triple = 0, i += 2;
        continue;
      }
      if (c == '#') break;
      if (c == '"' || c == '\'') {
        if (line.compare(i, 3, std::string(3, c)) == 0) {
          triple = c;
          i += 2;
          continue;
        }
        for (++i; i < line.size() && line[i] != c; ++i)
          if (line[i] == '\\') ++i;
        continue;
      }
      if (c == '(' || c == '[' || c == '{') ++depth;
      else if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    }
    backslash = !triple && continues(line);
  }
};

}  // namespace

// Cell magics whose body is Python that IPython runs (timed, captured, profiled, debugged):
// the body is analysed. Any other cell magic (%%bash, %%html, %%writefile, %%sql, ...) makes
// the cell something else, and the cell is left out.
bool python_cell_magic(const std::string& first_line) {
  if (first_line.rfind("%%", 0) != 0) return false;
  size_t e = 2;
  while (e < first_line.size() && (std::isalnum(static_cast<unsigned char>(first_line[e])) || first_line[e] == '_')) ++e;
  const std::string name = first_line.substr(2, e - 2);
  for (const char* m : {"time", "timeit", "capture", "prun", "debug", "memit", "mprun", "px", "snakeviz", "heat",
                        "lprun", "pyinstrument", "scalene"})
    if (name == m) return true;
  return false;
}

// What each source line of a code cell becomes in the virtual module (same number of
// lines): IPython-only lines (magics, shell escapes and their backslash continuations,
// help queries) become `pass` at the line's indentation (a block that held only a magic
// stays a block) and their continuation lines become empty; a cell magic's first line
// becomes empty, and the rest of the cell too unless its body is Python.
std::vector<std::string> lower_cell(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  out.reserve(lines.size());
  const bool cell_magic = !lines.empty() && lines[0].rfind("%%", 0) == 0;
  const bool python_body = cell_magic && python_cell_magic(lines[0]);
  // Rows inside a multi-line string are text, whatever they look like (`"""Why?` ends in
  // `?` but asks for no help): found by parsing the cell, with the lines that can only be
  // IPython's (`%`/`!` first, no quote in them) blanked so they cannot open a string.
  python::StringRows in_string;
  bool triple = false;
  for (const std::string& l : lines)
    triple = triple || l.find("\"\"\"") != std::string::npos || l.find("'''") != std::string::npos;
  if (triple) {
    std::string probe;
    for (const std::string& l : lines) {
      size_t i = l.find_first_not_of(" \t");
      const bool shell = i != std::string::npos && (l[i] == '%' || l[i] == '!') &&
                         l.find_first_of("\"'") == std::string::npos;
      std::string t = shell ? std::string() : l;
      if (t.empty() || t.back() != '\n') t += '\n';
      probe += t;
    }
    in_string = python::string_rows(probe);
  }
  auto text_row = [&](size_t k) {
    return k < in_string.starts.size() && (in_string.starts[k] || in_string.ends[k]);
  };
  bool in_magic = false;  // a continuation line of a magic or shell escape
  LogicalLine logical;    // where the Python lines so far leave the logical line
  for (size_t k = 0; k < lines.size(); ++k) {
    std::string l = lines[k];
    if (l.empty() || l.back() != '\n') l += '\n';
    if (cell_magic && (k == 0 || !python_body)) {
      l = "\n";
    } else if (in_magic) {
      in_magic = continues(l);
      l = "\n";
    } else if (!text_row(k) && !logical.open() && is_magic(l)) {
      in_magic = continues(l);
      l = l.substr(0, l.find_first_not_of(" \t")) + "pass\n";
    } else {
      logical.scan(l);
    }
    out.push_back(std::move(l));
  }
  return out;
}

std::optional<Notebook> load_notebook(const std::string& text, std::string* error) {
  OJson j = OJson::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("cells") || !j["cells"].is_array()) {
    *error = "not a Jupyter notebook (invalid JSON or no \"cells\")";
    return std::nullopt;
  }
  Notebook nb;
  auto positions = source_positions(text);
  if (text.size() >= UINT32_MAX) {
    *error = "notebook too large";
    return std::nullopt;
  }
  nb.raw_line_starts.push_back(0);
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') nb.raw_line_starts.push_back(static_cast<uint32_t>(i + 1));
  int cell_no = 0;
  size_t next_pos = 0;
  for (const auto& cell : j["cells"]) {
    ++cell_no;
    // This cell's source strings, decoded with the offset in the file of every byte.
    std::vector<std::string> strings;
    std::vector<std::vector<uint32_t>> offsets;
    size_t cell_end_raw = 0;
    while (next_pos < positions.size() && positions[next_pos].cell < cell_no - 1) ++next_pos;
    for (; next_pos < positions.size() && positions[next_pos].cell == cell_no - 1; ++next_pos) {
      std::string d;
      std::vector<uint32_t> o;
      size_t close = decode_json_string(text, positions[next_pos].quote, &d, &o);
      if (close == std::string::npos) continue;
      cell_end_raw = close;
      strings.push_back(std::move(d));
      offsets.push_back(std::move(o));
    }
    if (!cell.is_object() || cell.value("cell_type", "") != "code") continue;
    const OJson& src = cell.contains("source") ? cell["source"] : OJson();
    std::vector<std::string> lines = source_lines(src);
    // Per source line, the file offsets of its bytes: elements of an array source map one
    // to one; a string source is split into lines like source_lines does.
    std::vector<std::vector<uint32_t>> line_offs;
    if (src.is_string() && strings.size() == 1 && strings[0] == src.get<std::string>()) {
      size_t p = 0;
      for (const auto& l : lines) {
        line_offs.emplace_back(offsets[0].begin() + static_cast<long>(p), offsets[0].begin() + static_cast<long>(p + l.size()));
        p += l.size();
      }
    } else if (src.is_array() && strings.size() == lines.size()) {
      for (size_t k = 0; k < lines.size(); ++k)
        line_offs.push_back(strings[k] == lines[k] ? offsets[k] : std::vector<uint32_t>());
    }
    nb.code_cells.push_back(cell_no);
    nb.cell_start.push_back(static_cast<uint32_t>(nb.python.size()));
    std::vector<std::string> kept;  // the non-empty lines (an empty element holds no line)
    std::vector<size_t> kept_index;
    for (size_t k = 0; k < lines.size(); ++k)
      if (!lines[k].empty()) {
        kept.push_back(lines[k]);
        kept_index.push_back(k);
      }
    // IPython removes a cell's leading indentation (the first line's, from every line that
    // starts with it) before running it; kept, an indented cell would continue the previous
    // cell's last block in the virtual module.
    std::string indent;
    if (!kept.empty()) {
      const size_t body = kept[0].find_first_not_of(" \t");
      // (A first line that is blank, or all indentation, is left alone.)
      if (body != std::string::npos && kept[0][body] != '\n' && kept[0][body] != '\r') indent = kept[0].substr(0, body);
    }
    std::vector<size_t> skip(kept.size(), 0);
    for (size_t n = 0; n < kept.size() && !indent.empty(); ++n)
      if (kept[n].compare(0, indent.size(), indent) == 0) {
        skip[n] = indent.size();
        kept[n].erase(0, indent.size());
      }
    nb.cell_dedent.push_back(static_cast<uint32_t>(indent.size()));
    std::vector<std::string> lowered = lower_cell(kept);
    for (size_t n = 0; n < kept.size(); ++n) {
      const size_t k = kept_index[n];
      const size_t sk = skip[n];
      const std::string& l = lowered[n];
      const std::vector<uint32_t>* lo = k < line_offs.size() && line_offs[k].size() == lines[k].size() ? &line_offs[k] : nullptr;
      const uint32_t start = lo && lo->size() > sk ? (*lo)[sk] : static_cast<uint32_t>(cell_end_raw);
      const bool verbatim = l.compare(0, lines[k].size() - sk, lines[k], sk) == 0;
      for (size_t b = 0; b < l.size(); ++b) {
        if (verbatim && lo && b + sk < lo->size()) nb.raw.push_back((*lo)[b + sk]);
        else if (verbatim && lo && !lo->empty()) nb.raw.push_back(static_cast<uint32_t>(lo->back() + 1));  // added '\n'
        else nb.raw.push_back(start);
        nb.raw_exact.push_back(verbatim && lo && b + sk < lo->size());
      }
      nb.python += l;
      NotebookLine nl;
      nl.cell = cell_no;
      nl.line = static_cast<uint32_t>(k + 1);
      nl.text = lines[k];
      nl.dedent = static_cast<uint32_t>(sk);
      while (!nl.text.empty() && (nl.text.back() == '\n' || nl.text.back() == '\r')) nl.text.pop_back();
      nb.lines.push_back(std::move(nl));
    }
    nb.cell_end.push_back(static_cast<uint32_t>(nb.python.size()));
    // A comment line between cells: a dedent at a cell boundary is never a syntax error,
    // and fixed text splits back into cells at these lines.
    nb.python += kBoundary;
    nb.raw.insert(nb.raw.end(), std::strlen(kBoundary), static_cast<uint32_t>(cell_end_raw));
    nb.raw_exact.insert(nb.raw_exact.end(), std::strlen(kBoundary), false);
    nb.lines.push_back({cell_no, static_cast<uint32_t>(lines.size() + 1), ""});
  }
  for (uint32_t v = 0; v < nb.raw.size(); ++v)
    if (nb.raw_exact[v]) nb.exact.push_back(v);
  nb.python_line_starts.push_back(0);
  for (size_t i = 0; i < nb.python.size(); ++i)
    if (nb.python[i] == '\n') nb.python_line_starts.push_back(static_cast<uint32_t>(i + 1));
  return nb;
}

namespace {

// 1-based line and byte column of an offset of a text with the given line starts.
void line_col(const std::vector<uint32_t>& starts, uint32_t off, uint32_t* line, uint32_t* col) {
  auto it = std::upper_bound(starts.begin(), starts.end(), off);
  const size_t l = static_cast<size_t>(it - starts.begin());  // >= 1
  *line = static_cast<uint32_t>(l);
  *col = off - starts[l - 1] + 1;
}

// Offset in the virtual module of a 1-based line and byte column (clamped to the text).
uint32_t virtual_offset(const Notebook& nb, uint32_t line, uint32_t col) {
  if (line == 0 || nb.python_line_starts.empty()) return 0;
  if (line > nb.python_line_starts.size()) return static_cast<uint32_t>(nb.python.size());
  const uint32_t ls = nb.python_line_starts[line - 1];
  return std::min<uint32_t>(static_cast<uint32_t>(nb.python.size()), ls + (col > 0 ? col - 1 : 0));
}

uint32_t raw_offset(const Notebook& nb, uint32_t voff) {
  if (nb.raw.empty()) return 0;
  if (voff >= nb.raw.size()) return nb.raw.back();
  return nb.raw[voff];
}

// A range of the virtual module -> the same text's range in the .ipynb file.
void map_range(const Notebook& nb, Range& g) {
  if (g.line == 0) return;
  const uint32_t vb = virtual_offset(nb, g.line, g.col);
  const uint32_t ve = std::max(vb, virtual_offset(nb, g.end_line ? g.end_line : g.line, g.end_line ? g.end_col : g.col));
  const uint32_t rb = raw_offset(nb, vb);
  // The end: one past the raw character of the range's last byte (an escape counts whole).
  uint32_t re = rb;
  if (ve > vb) {
    const uint32_t last = raw_offset(nb, ve - 1);
    re = last + 1;
    if (ve - 1 < nb.raw.size() && nb.raw_exact[ve - 1]) {  // past a whole escape sequence
      size_t probe = ve;
      while (probe < nb.raw.size() && nb.raw[probe] == last) ++probe;
      if (probe < nb.raw.size() && nb.raw[probe] > last && nb.raw_exact[probe]) re = nb.raw[probe];
    }
  }
  g.begin = rb;
  g.end = std::max(rb, re);
  line_col(nb.raw_line_starts, rb, &g.line, &g.col);
  line_col(nb.raw_line_starts, g.end, &g.end_line, &g.end_col);
}

}  // namespace

uint32_t notebook_raw_offset(const Notebook& nb, uint32_t voff) { return raw_offset(nb, voff); }

std::optional<NotebookPosition> notebook_position(const Notebook& nb, uint32_t line, uint32_t col) {
  if (line == 0 || line > nb.raw_line_starts.size() || nb.raw.empty()) return std::nullopt;
  const uint32_t off = nb.raw_line_starts[line - 1] + (col > 0 ? col - 1 : 0);
  // The first virtual byte that came from this offset (or the closest one before it). The
  // file's own bytes appear in `python` in file order, so their offsets are sorted.
  auto it = std::upper_bound(nb.exact.begin(), nb.exact.end(), off,
                             [&](uint32_t o, uint32_t v) { return o < nb.raw[v]; });
  if (it == nb.exact.begin()) return std::nullopt;
  uint32_t best = *std::prev(it);
  while (best > 0 && nb.raw_exact[best - 1] && nb.raw[best - 1] == nb.raw[best]) --best;
  uint32_t vl, vc;
  line_col(nb.python_line_starts, best, &vl, &vc);
  if (vl == 0 || vl > nb.lines.size()) return std::nullopt;
  const NotebookLine& nl = nb.lines[vl - 1];
  NotebookPosition p;
  p.cell = nl.cell;
  p.line = nl.line;
  p.col = vc + nl.dedent;
  p.virtual_line = vl;
  p.text = nl.text;
  return p;
}

void map_notebook_result(const Notebook& nb, FileResult& r, const std::string& json_text) {
  // Each fix as the edit of the .ipynb file that --fix would make with it alone: applied
  // to its cell, written back into the cell's source, and reduced to the changed bytes
  // (the notebook is parsed once for all of them).
  std::vector<const Fix*> fixes;
  for (const auto& f : r.findings)
    for (const Fix& fx : f.fixes) fixes.push_back(&fx);
  const std::vector<std::optional<Edit>> edits = notebook_fix_edits(json_text, nb, fixes);
  size_t next = 0;
  for (auto& f : r.findings) {
    uint32_t l = f.range.line;
    if (l >= 1 && l <= nb.lines.size()) {
      f.cell = nb.lines[l - 1].cell;
      f.cell_line = nb.lines[l - 1].line;
      f.cell_col = f.range.col + nb.lines[l - 1].dedent;
    }
    map_range(nb, f.range);
    for (auto& n : f.notes) map_range(nb, n.range);
    std::vector<Fix> mapped;
    for (const Fix& fx : f.fixes) {
      const std::optional<Edit>& e = edits[next++];
      if (!e) continue;  // spans cells, or cannot be written back
      Fix m;
      m.title = fx.title;
      m.safe = fx.safe;
      m.edits.push_back(*e);
      mapped.push_back(std::move(m));
    }
    f.fixes = std::move(mapped);
  }
  for (auto& d : r.diagnostics)
    if (d.line >= 1 && d.line <= nb.lines.size()) {
      const NotebookLine& a = nb.lines[d.line - 1];
      d.message = "cell " + std::to_string(a.cell) + ", line " + std::to_string(a.line) + ": " + d.message;
      Range g;
      g.line = g.end_line = d.line;
      g.col = g.end_col = std::max<uint32_t>(d.col, 1);
      map_range(nb, g);
      d.line = g.line;
      d.col = g.col;
    }
}

std::vector<std::pair<int, std::string>> code_cell_sources(const std::string& json_text) {
  std::vector<std::pair<int, std::string>> out;
  OJson j = OJson::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("cells") || !j["cells"].is_array()) return out;
  int cell_no = 0;
  for (const auto& cell : j["cells"]) {
    ++cell_no;
    if (!cell.is_object() || cell.value("cell_type", "") != "code") continue;
    std::string text;
    for (const auto& l : source_lines(cell.contains("source") ? cell["source"] : OJson())) text += l;
    out.emplace_back(cell_no, std::move(text));
  }
  return out;
}

namespace {

// The new bytes of a code cell's "source" value (the file's [span.begin, span.end)) holding
// `new_cell`, the cell's virtual-module text after fixes: lowered lines come back as they
// were written, and the value keeps the file's own formatting (string or list source,
// indentation, separators, the escapes of unchanged lines, trailing "" elements).
std::string encode_cell_source(const std::string& json_text, const OJson& cell, const SourceSpan& span,
                               const std::string& new_cell) {
  const OJson& src = cell.contains("source") ? cell["source"] : OJson();
  std::vector<std::string> all_lines = source_lines(src), orig_lines;
  for (const auto& l : all_lines)
    if (!l.empty()) orig_lines.push_back(l);
  size_t trailing_empty = 0;  // "" elements after the last line (kept as they were)
  while (trailing_empty < all_lines.size() && all_lines[all_lines.size() - 1 - trailing_empty].empty())
    ++trailing_empty;
  std::vector<std::string> out, new_lines;
  for (size_t q = 0; q < new_cell.size();) {
    size_t nl = new_cell.find('\n', q);
    if (nl == std::string::npos) { new_lines.push_back(new_cell.substr(q)); break; }
    new_lines.push_back(new_cell.substr(q, nl - q + 1));
    q = nl + 1;
  }
  // Restore the lines that were lowered (magics, shell escapes, cell magics) at their
  // original positions: fixes insert lines only after them, never before the first
  // line, in practice.
  const std::vector<std::string> lowered = lower_cell(orig_lines);
  for (size_t k = 0; k < new_lines.size(); ++k) {
    if (k < orig_lines.size() && new_lines[k] == lowered[k] && lowered[k] != orig_lines[k] &&
        lowered[k] != orig_lines[k] + "\n")
      out.push_back(orig_lines[k]);
    else out.push_back(new_lines[k]);
  }
  // Jupyter stores lines without the final newline on the last line.
  if (!out.empty() && !orig_lines.empty() && orig_lines.back().back() != '\n' && !out.back().empty() &&
      out.back().back() == '\n')
    out.back().pop_back();
  for (size_t k = 0; k < trailing_empty; ++k) out.push_back("");
  auto encode = [](const std::string& v) { return OJson(v).dump(-1, ' ', false, OJson::error_handler_t::strict); };
  if (!span.array) {
    std::string joined;
    for (const auto& l : out) joined += l;
    return encode(joined);
  }
  const auto& el = span.elems;
  // An unchanged line keeps its original bytes (its escapes), wherever it moved.
  std::map<std::string, std::string> raw;
  if (src.is_array() && src.size() == el.size())
    for (size_t k = 0; k < el.size(); ++k)
      if (src[k].is_string()) raw.emplace(src[k].get<std::string>(), json_text.substr(el[k].first, el[k].second - el[k].first));
  std::string open_ws = el.empty() ? "[" : json_text.substr(span.begin, el[0].first - span.begin);
  std::string close_ws = el.empty() ? "]" : json_text.substr(el.back().second, span.end - el.back().second);
  std::string sep = el.size() >= 2 ? json_text.substr(el[0].second, el[1].first - el[0].second) : "," + open_ws.substr(1);
  std::string value = open_ws;
  for (size_t k = 0; k < out.size(); ++k) {
    if (k) value += sep;
    auto it = raw.find(out[k]);
    value += it != raw.end() ? it->second : encode(out[k]);
  }
  value += out.empty() ? close_ws.substr(close_ws.find(']')) : close_ws;
  return value;
}

// The JSON object and "source" span of each code cell, in code-cell order (null when missing).
struct CodeCells {
  OJson doc;
  std::vector<const OJson*> cells;
  std::vector<const SourceSpan*> spans;
  std::vector<SourceSpan> all_spans;
};

bool code_cells(const std::string& json_text, CodeCells& out) {
  out.doc = OJson::parse(json_text, nullptr, false);
  if (out.doc.is_discarded() || !out.doc.is_object() || !out.doc.contains("cells")) return false;
  out.all_spans = source_spans(json_text);
  int cell_no = 0;
  for (const auto& cell : out.doc["cells"]) {
    ++cell_no;
    if (!cell.is_object() || cell.value("cell_type", "") != "code") continue;
    const SourceSpan* span = nullptr;
    for (const auto& sp : out.all_spans)
      if (sp.cell == cell_no - 1) span = &sp;
    out.cells.push_back(&cell);
    out.spans.push_back(span);
  }
  return true;
}

}  // namespace

std::optional<std::string> apply_notebook_edits(const std::string& json_text, const Notebook& nb,
                                                const std::string& fixed) {
  CodeCells cc;
  if (!code_cells(json_text, cc) || cc.cells.size() != nb.code_cells.size()) return std::nullopt;
  std::vector<std::string> new_cells;
  const std::string boundary = kBoundary;
  size_t p = 0;
  while (p < fixed.size()) {
    size_t b = fixed.find(boundary, p);
    if (b == std::string::npos) break;
    if (b > 0 && fixed[b - 1] != '\n') return std::nullopt;
    new_cells.push_back(fixed.substr(p, b - p));
    p = b + boundary.size();
  }
  if (new_cells.size() != nb.code_cells.size() || p != fixed.size()) return std::nullopt;
  // Write back only cells whose code changed, and only the bytes of their "source" values:
  // the file's own formatting (indentation, string or list sources, key order, escapes) is
  // kept everywhere else.
  std::string result;
  size_t copied = 0;
  for (size_t c = 0; c < new_cells.size(); ++c) {
    if (new_cells[c] == std::string_view(nb.python).substr(nb.cell_start[c], nb.cell_end[c] - nb.cell_start[c]))
      continue;
    if (nb.cell_dedent[c] != 0) return std::nullopt;  // its lines were re-indented: not written back
    const SourceSpan* span = cc.spans[c];
    if (!span || span->begin < copied) return std::nullopt;
    result.append(json_text, copied, span->begin - copied);
    result += encode_cell_source(json_text, *cc.cells[c], *span, new_cells[c]);
    copied = span->end;
  }
  result.append(json_text, copied, std::string::npos);
  return result;
}

std::vector<std::optional<Edit>> notebook_fix_edits(const std::string& json_text, const Notebook& nb,
                                                    const std::vector<const Fix*>& fixes) {
  std::vector<std::optional<Edit>> out(fixes.size());
  CodeCells cc;
  if (!code_cells(json_text, cc) || cc.cells.size() != nb.code_cells.size()) return out;
  for (size_t i = 0; i < fixes.size(); ++i) {
    const Fix& fx = *fixes[i];
    if (fx.edits.empty()) continue;
    // The one cell all of the fix's edits lie in (a fix across cells is not mapped).
    size_t c = 0;
    while (c < nb.code_cells.size() && nb.cell_end[c] < fx.edits.front().begin) ++c;
    if (c == nb.code_cells.size() || !cc.spans[c] || nb.cell_dedent[c] != 0) continue;
    bool inside = true;
    for (const Edit& e : fx.edits)
      inside = inside && e.begin <= e.end && e.begin >= nb.cell_start[c] && e.end <= nb.cell_end[c];
    if (!inside) continue;
    std::string cell = nb.python.substr(nb.cell_start[c], nb.cell_end[c] - nb.cell_start[c]);
    std::vector<Edit> edits = fx.edits;
    std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin > b.begin; });
    for (const Edit& e : edits) cell.replace(e.begin - nb.cell_start[c], e.end - e.begin, e.text);
    const SourceSpan& span = *cc.spans[c];
    const std::string before = json_text.substr(span.begin, span.end - span.begin);
    const std::string after = encode_cell_source(json_text, *cc.cells[c], span, cell);
    if (after == before) continue;
    size_t pre = 0;
    while (pre < before.size() && pre < after.size() && before[pre] == after[pre]) ++pre;
    size_t suf = 0;
    while (suf < before.size() - pre && suf < after.size() - pre &&
           before[before.size() - 1 - suf] == after[after.size() - 1 - suf])
      ++suf;
    out[i] = Edit{static_cast<uint32_t>(span.begin + pre), static_cast<uint32_t>(span.begin + before.size() - suf),
                  after.substr(pre, after.size() - suf - pre)};
  }
  return out;
}

}  // namespace ll
