#include "checks/common.hpp"
namespace ll { void check_LL502(CheckContext&) {} }
