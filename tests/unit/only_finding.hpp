// The one finding of a rule in a file's result (a test failure when there are several).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "cli/engine.hpp"

namespace ll::test {

inline const Finding* only(const FileResult& r, const std::string& rule) {
  const Finding* found = nullptr;
  for (const auto& f : r.findings)
    if (f.rule == rule) {
      EXPECT_EQ(found, nullptr) << "more than one " << rule;
      found = &f;
    }
  return found;
}

}  // namespace ll::test
