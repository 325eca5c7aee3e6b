// The syntactic fallback: C++ lowered from tokens alone, for files Clang cannot compile
// (LibTorch headers not found, errors in the file). No types are known, so LibTorch names
// are recognised by their spelling (through `using namespace`, namespace aliases,
// TORCH_MODULE and this file's classes); findings from this lowering are marked low
// confidence.
#pragma once

#include <string_view>
#include <vector>

#include "rules/finding.hpp"
#include "rules/model.hpp"

namespace ll::cpp {

void lower_syntactic(std::string_view src, Module& m, std::vector<Diagnostic>& diags);

}  // namespace ll::cpp
