#include "checks/common.hpp"
namespace ll { void check_LL302(CheckContext&) {} }
