// libFuzzer target over the Python frontend, all checks and the fix path.
// Built by tests/fuzz/CMakeLists.txt (clang, -DLEAKLINT_FUZZ=ON); run by tests/fuzz/smoke.sh.
//
// With LEAKLINT_FUZZ_STRICT_FIXES=1 in the environment, a fix round that had to be rolled
// back because it broke the syntax also counts as a crash (fixes must keep code parsable).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tests/fuzz/fuzz_one.hpp"

static bool strict_fixes = false;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* s = std::getenv("LEAKLINT_FUZZ_STRICT_FIXES");
  strict_fixes = s && *s && *s != '0';
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  ll::fuzz::Outcome o = ll::fuzz::run_one(text);
  if (strict_fixes && o.rollbacks > 0) __builtin_trap();
  return 0;
}
