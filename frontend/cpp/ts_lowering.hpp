// The fallback lowering for C++ that Clang cannot analyse (LibTorch headers not found, a
// file that does not compile, --syntactic-only): the file is parsed by tree-sitter-cpp
// (pinned from npm, like the Python grammar) and its tree lowered into the same model
// shapes as ast_lowering.cpp. No headers are read, so LibTorch names are recognised by
// their spelling (through `using namespace`, namespace aliases, `using X = ...`,
// TORCH_MODULE and this file's classes), and declared types are read from the
// declarations: a variable declared `float`/`int`/... holds a number, never a tensor.
// Findings from this lowering are marked low confidence and never carry a fix.
#pragma once

#include <string_view>
#include <vector>

#include "rules/finding.hpp"
#include "rules/model.hpp"

namespace ll::cpp {

void lower_tree_sitter(std::string_view src, Module& m, std::vector<Diagnostic>& diags);

}  // namespace ll::cpp
