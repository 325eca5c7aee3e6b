#include "cli/notebook.hpp"

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
  int index = -1;  // element of the source array (-1: source is one string)
  uint32_t line = 0, col = 0;
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
  uint32_t line = 1, col = 1;
  bool expect_key = false;
  auto in_source = [&](int* cell, int* index) {
    // path: {cells: [ {source: [ str ]} ]} or {cells: [ {source: str} ]}
    size_t n = stack.size();
    if (n >= 3 && stack[n - 1].object == false && stack[n - 2].object && stack[n - 2].key == "source" &&
        !stack[n - 3].object && stack[n - 3].index >= 0 && n >= 4 && stack[n - 4].key == "cells") {
      *cell = stack[n - 3].index;
      *index = stack[n - 1].index;
      return true;
    }
    if (n >= 3 && stack[n - 1].object && stack[n - 1].key == "source" && !stack[n - 2].object &&
        stack[n - 3].key == "cells") {
      *cell = stack[n - 2].index;
      *index = -1;
      return true;
    }
    return false;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (c == '\n') { ++line; col = 1; continue; }
    if (c == '{') { stack.push_back({true, "", 0}); expect_key = true; ++col; continue; }
    if (c == '[') { stack.push_back({false, "", 0}); expect_key = false; ++col; continue; }
    if (c == '}' || c == ']') {
      if (!stack.empty()) stack.pop_back();
      ++col;
      continue;
    }
    if (c == ',') {
      if (!stack.empty()) {
        if (stack.back().object) expect_key = true;
        else ++stack.back().index;
      }
      ++col;
      continue;
    }
    if (c == ':') { expect_key = false; ++col; continue; }
    if (c == '"') {
      uint32_t sl = line, sc = col;
      std::string s;
      size_t j = i + 1;
      for (; j < t.size() && t[j] != '"'; ++j) {
        if (t[j] == '\\' && j + 1 < t.size()) { s += t[j]; ++j; }
        s += t[j];
      }
      col += static_cast<uint32_t>(j - i + 1);
      i = j;
      if (!stack.empty() && stack.back().object && expect_key) {
        stack.back().key = s;
        continue;
      }
      int cell, index;
      if (in_source(&cell, &index)) out.push_back({cell, index, sl, sc + 1});
      continue;
    }
    ++col;
  }
  return out;
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

bool is_magic(const std::string& line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos) return false;
  char c = line[i];
  if (c == '%' || c == '!') return true;
  std::string trimmed = line.substr(i);
  while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == '\r' || trimmed.back() == ' '))
    trimmed.pop_back();
  return !trimmed.empty() && trimmed.back() == '?' && trimmed.find('#') == std::string::npos;
}

}  // namespace

std::optional<Notebook> load_notebook(const std::string& text, std::string* error) {
  OJson j = OJson::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("cells") || !j["cells"].is_array()) {
    *error = "not a Jupyter notebook (invalid JSON or no \"cells\")";
    return std::nullopt;
  }
  Notebook nb;
  auto positions = source_positions(text);
  int cell_no = 0;
  for (const auto& cell : j["cells"]) {
    ++cell_no;
    if (!cell.is_object() || cell.value("cell_type", "") != "code") continue;
    std::vector<std::string> lines = source_lines(cell.contains("source") ? cell["source"] : OJson());
    nb.code_cells.push_back(cell_no);
    nb.cell_start.push_back(static_cast<uint32_t>(nb.python.size()));
    bool cell_magic = !lines.empty() && lines[0].rfind("%%", 0) == 0;
    // Positions of this cell's source strings.
    std::vector<const StringPos*> pos;
    for (const auto& p : positions)
      if (p.cell == cell_no - 1) pos.push_back(&p);
    for (size_t k = 0; k < lines.size(); ++k) {
      std::string l = lines[k];
      if (l.empty()) continue;  // an empty element (a trailing "") holds no line
      if (l.back() != '\n') l += '\n';
      if (cell_magic || is_magic(l)) l = "\n";  // keep the line, drop the magic
      nb.python += l;
      NotebookLine nl;
      nl.cell = cell_no;
      nl.line = static_cast<uint32_t>(k + 1);
      if (k < pos.size()) { nl.json_line = pos[k]->line; nl.json_col = pos[k]->col; }
      else if (!pos.empty()) { nl.json_line = pos.back()->line; nl.json_col = pos.back()->col; }
      nb.lines.push_back(nl);
    }
    nb.cell_end.push_back(static_cast<uint32_t>(nb.python.size()));
    // A comment line between cells: a dedent at a cell boundary is never a syntax error,
    // and fixed text splits back into cells at these lines.
    nb.python += kBoundary;
    nb.lines.push_back({cell_no, static_cast<uint32_t>(lines.size() + 1), 0, 0});
  }
  return nb;
}

void map_notebook_result(const Notebook& nb, FileResult& r) {
  auto map = [&](Range& g) {
    uint32_t l = g.line;
    if (l == 0 || l > nb.lines.size()) return;
    const NotebookLine& a = nb.lines[l - 1];
    const NotebookLine& b = g.end_line >= 1 && g.end_line <= nb.lines.size() ? nb.lines[g.end_line - 1] : a;
    uint32_t cols = g.col;
    g.line = a.json_line ? a.json_line : 1;
    g.col = a.json_col ? a.json_col + cols - 1 : 1;
    if (b.json_line && g.end_line != l) {
      g.end_line = b.json_line;
      g.end_col = b.json_col + g.end_col - 1;
    } else {
      g.end_line = g.line;
      g.end_col = g.col + (g.end_col > cols ? g.end_col - cols : 1);
    }
  };
  for (auto& f : r.findings) {
    uint32_t l = f.range.line;
    if (l >= 1 && l <= nb.lines.size()) {
      f.cell = nb.lines[l - 1].cell;
      f.cell_line = nb.lines[l - 1].line;
      f.cell_col = f.range.col;
    }
    map(f.range);
    for (auto& n : f.notes) map(n.range);
    f.fixes.clear();  // edits address the virtual module; --fix maps them separately
  }
  for (auto& d : r.diagnostics)
    if (d.line >= 1 && d.line <= nb.lines.size()) {
      const NotebookLine& a = nb.lines[d.line - 1];
      d.message = "cell " + std::to_string(a.cell) + ", line " + std::to_string(a.line) + ": " + d.message;
      d.line = a.json_line;
      d.col = a.json_col;
    }
}

std::optional<std::string> apply_notebook_edits(const std::string& json_text, const Notebook& nb,
                                                const std::string& fixed) {
  OJson j = OJson::parse(json_text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  std::vector<std::string> old_cells, new_cells;
  for (size_t c = 0; c < nb.code_cells.size(); ++c)
    old_cells.push_back(nb.python.substr(nb.cell_start[c], nb.cell_end[c] - nb.cell_start[c]));
  const std::string boundary = kBoundary;
  size_t p = 0;
  while (p < fixed.size()) {
    size_t b = fixed.find(boundary, p);
    if (b == std::string::npos) break;
    if (b > 0 && fixed[b - 1] != '\n') return std::nullopt;
    new_cells.push_back(fixed.substr(p, b - p));
    p = b + boundary.size();
  }
  if (new_cells.size() != old_cells.size() || p != fixed.size()) return std::nullopt;
  // Write back only cells whose code changed (magic lines of the original are restored),
  // and only the bytes of their "source" values: the file's own formatting (indentation,
  // string or list sources, key order, escapes) is kept everywhere else.
  std::vector<SourceSpan> spans = source_spans(json_text);
  std::string result;
  size_t copied = 0;
  size_t c = 0;
  int cell_no = 0;
  for (auto& cell : j["cells"]) {
    ++cell_no;
    if (!cell.is_object() || cell.value("cell_type", "") != "code") continue;
    if (new_cells[c] != old_cells[c]) {
      const OJson& src = cell.contains("source") ? cell["source"] : OJson();
      std::vector<std::string> all_lines = source_lines(src), orig_lines;
      for (const auto& l : all_lines)
        if (!l.empty()) orig_lines.push_back(l);
      size_t trailing_empty = 0;  // "" elements after the last line (kept as they were)
      while (trailing_empty < all_lines.size() && all_lines[all_lines.size() - 1 - trailing_empty].empty())
        ++trailing_empty;
      std::vector<std::string> out;
      size_t q = 0;
      const std::string& nc = new_cells[c];
      std::vector<std::string> new_lines;
      while (q < nc.size()) {
        size_t nl = nc.find('\n', q);
        if (nl == std::string::npos) { new_lines.push_back(nc.substr(q)); break; }
        new_lines.push_back(nc.substr(q, nl - q + 1));
        q = nl + 1;
      }
      // Restore blanked magic lines at their original positions (fixes insert lines only
      // after them, never before the first line, in practice).
      for (size_t k = 0; k < new_lines.size(); ++k) {
        if (k < orig_lines.size() && new_lines[k] == "\n" && is_magic(orig_lines[k])) out.push_back(orig_lines[k]);
        else out.push_back(new_lines[k]);
      }
      // Jupyter stores lines without the final newline on the last line.
      if (!out.empty() && !orig_lines.empty() && orig_lines.back().back() != '\n' && !out.back().empty() &&
          out.back().back() == '\n')
        out.back().pop_back();
      for (size_t k = 0; k < trailing_empty; ++k) out.push_back("");
      const SourceSpan* span = nullptr;
      for (const auto& sp : spans)
        if (sp.cell == cell_no - 1) span = &sp;
      if (!span || span->begin < copied) return std::nullopt;
      auto encode = [](const std::string& v) { return OJson(v).dump(-1, ' ', false, OJson::error_handler_t::strict); };
      std::string value;
      if (!span->array) {
        std::string joined;
        for (const auto& l : out) joined += l;
        value = encode(joined);
      } else {
        const auto& el = span->elems;
        // An unchanged line keeps its original bytes (its escapes), wherever it moved.
        std::map<std::string, std::string> raw;
        if (src.is_array() && src.size() == el.size())
          for (size_t k = 0; k < el.size(); ++k)
            if (src[k].is_string()) raw.emplace(src[k].get<std::string>(), json_text.substr(el[k].first, el[k].second - el[k].first));
        std::string open_ws = el.empty() ? "[" : json_text.substr(span->begin, el[0].first - span->begin);
        std::string close_ws = el.empty() ? "]" : json_text.substr(el.back().second, span->end - el.back().second);
        std::string sep = el.size() >= 2 ? json_text.substr(el[0].second, el[1].first - el[0].second)
                                         : "," + open_ws.substr(1);
        value = open_ws;
        for (size_t k = 0; k < out.size(); ++k) {
          if (k) value += sep;
          auto it = raw.find(out[k]);
          value += it != raw.end() ? it->second : encode(out[k]);
        }
        value += out.empty() ? close_ws.substr(close_ws.find(']')) : close_ws;
      }
      result.append(json_text, copied, span->begin - copied);
      result += value;
      copied = span->end;
    }
    ++c;
  }
  result.append(json_text, copied, std::string::npos);
  return result;
}

}  // namespace ll
