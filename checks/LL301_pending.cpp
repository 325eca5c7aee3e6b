#include "checks/common.hpp"
namespace ll { void check_LL301(CheckContext&) {} }
