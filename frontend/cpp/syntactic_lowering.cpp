#include "frontend/cpp/syntactic_lowering.hpp"
namespace ll::cpp {
void lower_syntactic(std::string_view, Module& m, std::vector<Diagnostic>&) { m.lang = Lang::Cpp; }
}
