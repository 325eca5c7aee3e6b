#include "checks/common.hpp"
namespace ll { void check_LL402(CheckContext&) {} }
