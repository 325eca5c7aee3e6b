// Jupyter notebooks: the code cells of an .ipynb become one virtual Python module
// (cells in order; IPython magics, shell escapes and help lines lowered so line numbers
// are kept), findings map back to "cell N, line L, column C" and to the exact text of the
// .ipynb file (so SARIF consumers can open it), and fixes are applied back into the cell
// sources without touching outputs or metadata.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rules/finding.hpp"

namespace ll {

struct NotebookLine {
  int cell = 0;            // 1-based index among all cells (as Jupyter shows execution order)
  uint32_t line = 0;       // 1-based line within the cell
  std::string text;        // the cell's source line, as written (no line terminator)
  uint32_t dedent = 0;     // bytes of leading indentation not in the virtual module
};

struct Notebook {
  std::string python;                 // the virtual module
  std::vector<NotebookLine> lines;    // per virtual line (index = line - 1)
  std::vector<int> code_cells;        // cell index of each code cell, in order
  std::vector<uint32_t> cell_start;   // byte offset of each code cell in `python`
  std::vector<uint32_t> cell_end;
  // Per code cell: the leading indentation removed from its lines, as IPython does when a
  // cell's first line is indented (0: none). Fixes are not offered in such a cell.
  std::vector<uint32_t> cell_dedent;
  // Per byte of `python`: the offset in the .ipynb text of the character it came from (an
  // escape such as \" or \u00e9 counts whole), and whether it is that text's own byte
  // (false: a lowered magic line, an added line end, a cell boundary).
  std::vector<uint32_t> raw;
  std::vector<bool> raw_exact;
  std::vector<uint32_t> exact;               // the bytes of `python` with raw_exact, in order
  std::vector<uint32_t> raw_line_starts;     // of the .ipynb text
  std::vector<uint32_t> python_line_starts;  // of `python`
};

// Parses an .ipynb; on failure returns nullopt and sets *error.
std::optional<Notebook> load_notebook(const std::string& json_text, std::string* error);

// Re-maps a virtual-module result onto the notebook: ranges move to the exact text of the
// .ipynb file (line, byte column and offsets, through JSON escapes and in one-line
// minified files), each finding gets its cell, line and column within the cell, and each
// fix becomes the one edit of the .ipynb text that applying it alone would make (a fix
// that spans cells is dropped).
void map_notebook_result(const Notebook& nb, FileResult& r, const std::string& json_text);

// Where a position of the .ipynb text (1-based line, byte column) lies in the notebook's
// code: the cell, the line and byte column within it, and that source line as written.
struct NotebookPosition {
  int cell = 0;
  uint32_t line = 0, col = 0;
  uint32_t virtual_line = 0;
  std::string text;
};
std::optional<NotebookPosition> notebook_position(const Notebook& nb, uint32_t line, uint32_t col);

// The byte of the .ipynb file that the byte `voff` of the notebook's Python text came from.
uint32_t notebook_raw_offset(const Notebook& nb, uint32_t voff);

// Applies edits made to the virtual module back into the notebook JSON text; returns the
// new .ipynb text, or nullopt when the edits cannot be mapped.
std::optional<std::string> apply_notebook_edits(const std::string& json_text, const Notebook& nb,
                                                const std::string& fixed_python);

// For each fix (edits of the virtual module), the one edit of the .ipynb text that applying
// it alone makes; nullopt for a fix that spans cells or cannot be written back.
std::vector<std::optional<Edit>> notebook_fix_edits(const std::string& json_text, const Notebook& nb,
                                                    const std::vector<const Fix*>& fixes);

// What a code cell's source lines become in the virtual module (see notebook.cpp): IPython
// lines lowered, one output line per input line.
std::vector<std::string> lower_cell(const std::vector<std::string>& lines);
// Whether a cell starting with this `%%` line holds Python (%%time, %%timeit, %%capture ...).
bool python_cell_magic(const std::string& first_line);

// (cell number, source text) of each code cell, for showing changes cell by cell.
std::vector<std::pair<int, std::string>> code_cell_sources(const std::string& json_text);

bool is_notebook_path(const std::string& path);

}  // namespace ll
