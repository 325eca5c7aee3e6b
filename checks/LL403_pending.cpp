#include "checks/common.hpp"
namespace ll { void check_LL403(CheckContext&) {} }
