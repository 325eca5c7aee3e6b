#include "checks/common.hpp"
namespace ll { void check_LL501(CheckContext&) {} }
