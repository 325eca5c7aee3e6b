#include "checks/common.hpp"
namespace ll { void check_LL404(CheckContext&) {} }
