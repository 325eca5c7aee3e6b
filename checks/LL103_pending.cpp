#include "checks/common.hpp"
namespace ll { void check_LL103(CheckContext&) {} }
