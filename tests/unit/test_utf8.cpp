// valid_utf8() skips ASCII eight bytes at a time; the first bad byte it reports must be the
// one a byte-by-byte reading finds, wherever it falls against the eight-byte steps.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

#include "cli/engine.hpp"

namespace {

// Byte by byte (the definition: RFC 3629, no surrogates, no overlong forms).
bool reference(const std::string& s, size_t* bad_at) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || i + len > s.size()) { *bad_at = i; return false; }
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) { *bad_at = i; return false; }
      cp = (cp << 6) | (d & 0x3F);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      *bad_at = i;
      return false;
    }
    i += len;
  }
  return true;
}

TEST(Utf8, BadByteAtEveryOffsetOfAnAsciiRun) {
  for (size_t n = 0; n < 40; ++n) {
    for (size_t at = 0; at <= n; ++at) {
      for (const std::string bad : {"\xff", "\xc3", "\xed\xa0\x80", "\xc3\xa9"}) {
        std::string s(n, 'a');
        s.insert(at, bad);
        size_t want = 0, got = 0;
        const bool ok_want = reference(s, &want);
        const bool ok_got = ll::valid_utf8(s, &got);
        ASSERT_EQ(ok_want, ok_got) << n << " " << at;
        if (!ok_want) EXPECT_EQ(want, got) << n << " " << at;
      }
    }
  }
}

TEST(Utf8, RandomTextAgreesWithTheByteByByteReading) {
  std::mt19937 rng(11);
  const std::string pieces[] = {"x", "abcdefgh", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\x80",
                                "\xf8", "\xe0\x80\x80", "\xf4\x90\x80\x80", "\n", "\xc3"};
  for (int t = 0; t < 5000; ++t) {
    std::string s;
    const int k = static_cast<int>(rng() % 24);
    for (int i = 0; i < k; ++i) {
      const auto p = rng() % 20;
      s += p < 11 ? pieces[p] : pieces[1];
    }
    size_t want = 0, got = 0;
    const bool ok_want = reference(s, &want);
    ASSERT_EQ(ok_want, ll::valid_utf8(s, &got)) << t;
    if (!ok_want) ASSERT_EQ(want, got) << t;
  }
}

}  // namespace
