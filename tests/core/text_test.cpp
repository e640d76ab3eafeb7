// Shared text helpers (envlock/text.hpp).
#include <gtest/gtest.h>

#include "envlock/text.hpp"

namespace envlock {
namespace {

TEST(Text, TrimAndLower) {
  EXPECT_EQ(trim(" \t numpy >=1.26\r\n"), "numpy >=1.26");
  EXPECT_EQ(trim("   "), "");
  EXPECT_EQ(ascii_lower("PyYAML-6.0\xc3\x89"), "pyyaml-6.0\xc3\x89");
}

TEST(Text, PrintableEscapesControlCharactersOnly) {
  EXPECT_EQ(printable("plain caf\xc3\xa9"), "plain caf\xc3\xa9");
  EXPECT_EQ(printable("a\nb\x1b]0;x\x07"), "a\\x0ab\\x1b]0;x\\x07");
  EXPECT_EQ(printable("csi\xc2\x9b"), "csi\\xc2\\x9b");
}

TEST(Text, EscapeInvalidUtf8KeepsValidTextAndNamesEachBadByte) {
  EXPECT_EQ(escape_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8d"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8d");
  EXPECT_EQ(escape_invalid_utf8("bin/z\xff"), "bin/z\\xff");
  EXPECT_NE(escape_invalid_utf8("bin/z\xff"), escape_invalid_utf8("bin/z\xfe"));
  EXPECT_EQ(escape_invalid_utf8("lib/\xc3(x"), "lib/\\xc3(x");             // a lead byte without its continuation
  EXPECT_EQ(escape_invalid_utf8("\xc0\xaf"), "\\xc0\\xaf");                 // overlong '/'
  EXPECT_EQ(escape_invalid_utf8("\xed\xa0\x80"), "\\xed\\xa0\\x80");        // a UTF-16 surrogate
  EXPECT_EQ(escape_invalid_utf8("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(escape_invalid_utf8("end\xe2\x82"), "end\\xe2\\x82");           // cut short
}

}  // namespace
}  // namespace envlock
