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

// Every Default_Ignorable_Code_Point of Unicode 15.1.0's DerivedCoreProperties.txt is shown as
// \u{...}, at each end of its ranges; the code points just outside them stay as they are.
TEST(Text, PrintableShowsEveryDefaultIgnorableCodePoint) {
  EXPECT_EQ(printable("numpy\U000E0041\U000E007F"), "numpy\\u{e0041}\\u{e007f}");  // tag characters
  EXPECT_EQ(printable("num\u00adpy"), "num\\u{00ad}py");                            // soft hyphen
  EXPECT_EQ(printable("\u3164numpy"), "\\u{3164}numpy");                             // Hangul filler
  EXPECT_EQ(printable("a\u034fb\u115f\u1160\uffa0"), "a\\u{034f}b\\u{115f}\\u{1160}\\u{ffa0}");
  EXPECT_EQ(printable("\u17b4\u17b5\u180b\u180e\u180f"), "\\u{17b4}\\u{17b5}\\u{180b}\\u{180e}\\u{180f}");
  EXPECT_EQ(printable("x\ufe00\ufe0f\U000E0100\U000E01EF"), "x\\u{fe00}\\u{fe0f}\\u{e0100}\\u{e01ef}");  // variation selectors
  EXPECT_EQ(printable("\u2061\u2064\u2065\u206f\ufff0\ufff8"), "\\u{2061}\\u{2064}\\u{2065}\\u{206f}\\u{fff0}\\u{fff8}");
  EXPECT_EQ(printable("\U0001BCA0\U0001BCA3\U0001D173\U0001D17A\U000E0000\U000E0FFF"),
            "\\u{1bca0}\\u{1bca3}\\u{1d173}\\u{1d17a}\\u{e0000}\\u{e0fff}");
  EXPECT_EQ(printable("\u202e\u200b\u2028\ufeff\u061c"), "\\u{202e}\\u{200b}\\u{2028}\\u{feff}\\u{061c}");  // as before
  // Neighbours outside the property: visible, unchanged.
  for (const char* s : {"\u00ac\u00ae", "\u034e\u0350", "\u115e\u1161", "\u180a\u1810", "\u3163\u3165", "\ufdff\ufe10",
                        "\uff9f\uffa1\ufff9", "\U0001BCA4\U0001D17B", "\U000DFFFF\U000E1000", "caf\u00e9 \u20ac \U0001F40D"})
    EXPECT_EQ(printable(s), s) << s;
  // An overlong or cut-short encoding is no character: its bytes pass as they are.
  EXPECT_EQ(printable("\xe0\x82\xad"), "\xe0\x82\xad");
  EXPECT_EQ(printable("end\xf3\xa0\x80"), "end\xf3\xa0\x80");
}

// JSON keeps the strings but shows no invisible character raw: \uXXXX, a surrogate pair above U+FFFF.
TEST(Text, JsonEscapeInvisibleWritesJsonEscapes) {
  EXPECT_EQ(json_escape_invisible("{\"name\": \"num\u00adpy\U000E0041\", \"url\": \"caf\u00e9\u202e\"}"),
            "{\"name\": \"num\\u00adpy\\udb40\\udc41\", \"url\": \"caf\u00e9\\u202e\"}");
  EXPECT_EQ(json_escape_invisible("{\"a\": \"\u00e9 \U0001F40D\"}"), "{\"a\": \"\u00e9 \U0001F40D\"}");
}

// A C1 control (U+009B is a terminal's CSI), DEL and the line and paragraph separators, which
// nlohmann's dump() leaves raw, are \uXXXX escapes too (attack on issue 17, A5); U+00A0 and
// U+00FF beside them are text.
TEST(Text, JsonEscapeInvisibleWritesControlCharactersAsEscapes) {
  EXPECT_EQ(json_escape_invisible("{\"a\": \"x\u0080\u009b[31m\u009f\x7f\u2028\u2029\u00a0\u00ff\"}"),
            "{\"a\": \"x\\u0080\\u009b[31m\\u009f\\u007f\\u2028\\u2029\u00a0\u00ff\"}");
  EXPECT_EQ(json_escape_invisible("\x7f"), "\\u007f");
  EXPECT_EQ(json_escape_invisible("\xc2"), "\xc2");  // a lead byte without its continuation stays
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
