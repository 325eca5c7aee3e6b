// Clang AST -> the shared program model. Only the main file's declarations are lowered;
// LibTorch concepts are spelled the Python way (see cpp_names.hpp and docs/cpp.md).
#pragma once

#include <string_view>
#include <vector>

#include "rules/finding.hpp"
#include "rules/model.hpp"

namespace clang {
class ASTContext;
}

namespace ll::cpp {

// `src` is the main file's text (offsets in the model are offsets into it).
void lower_ast(clang::ASTContext& ctx, std::string_view src, Module& m, std::vector<Diagnostic>& diags);

}  // namespace ll::cpp
