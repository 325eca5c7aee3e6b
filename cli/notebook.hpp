// Jupyter notebooks: the code cells of an .ipynb become one virtual Python module
// (cells in order; IPython magics, shell escapes and help lines blanked so line numbers
// are kept), findings map back to "cell N, line L" and to the line of the .ipynb file
// that holds that source line (so SARIF consumers can open it), and fixes are applied
// back into the cell sources without touching outputs or metadata.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "rules/finding.hpp"

namespace ll {

struct NotebookLine {
  int cell = 0;            // 1-based index among all cells (as Jupyter shows execution order)
  uint32_t line = 0;       // 1-based line within the cell
  uint32_t json_line = 0;  // 1-based line of the .ipynb text holding this source line
  uint32_t json_col = 0;   // 1-based column of the string's first character there
};

struct Notebook {
  std::string python;                 // the virtual module
  std::vector<NotebookLine> lines;    // per virtual line (index = line - 1)
  std::vector<int> code_cells;        // cell index of each code cell, in order
  std::vector<uint32_t> cell_start;   // byte offset of each code cell in `python`
  std::vector<uint32_t> cell_end;
};

// Parses an .ipynb; on failure returns nullopt and sets *error.
std::optional<Notebook> load_notebook(const std::string& json_text, std::string* error);

// Re-maps a virtual-module result onto the notebook: ranges move to the .ipynb text's
// line/column (so reporters and SARIF point into the file), and each finding's message
// gains its "cell N, line L" location. Fixes that span cells are dropped.
void map_notebook_result(const Notebook& nb, FileResult& r);

// Applies edits made to the virtual module back into the notebook JSON text; returns the
// new .ipynb text, or nullopt when the edits cannot be mapped.
std::optional<std::string> apply_notebook_edits(const std::string& json_text, const Notebook& nb,
                                                const std::string& fixed_python);

bool is_notebook_path(const std::string& path);

}  // namespace ll
