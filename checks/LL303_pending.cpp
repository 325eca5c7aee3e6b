#include "checks/common.hpp"
namespace ll { void check_LL303(CheckContext&) {} }
