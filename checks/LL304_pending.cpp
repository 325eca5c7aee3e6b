#include "checks/common.hpp"
namespace ll { void check_LL304(CheckContext&) {} }
