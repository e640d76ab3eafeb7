#pragma once
// envlock/text.hpp — small text helpers every module shares (one definition each).

#include <string>
#include <string_view>

namespace envlock {

/// The ASCII white space of C's isspace() in the "C" locale.
inline constexpr std::string_view kAsciiSpace = " \t\n\v\f\r";

/// `s` without leading and trailing ASCII white space (space, \t, \n, \v, \f, \r).
std::string trim(std::string_view s);

/// A view of `s` without the leading and trailing bytes that are in `chars` (kAsciiSpace unless
/// told: HTTP's optional white space is " \t", a dpkg field's " \t\r").
std::string_view trim_view(std::string_view s, std::string_view chars = kAsciiSpace);

/// `s` with ASCII letters lower-cased; other bytes (UTF-8 included) unchanged. For hex digests,
/// conda package names and PEP 503 project names, which are ASCII by their specifications.
std::string ascii_lower(std::string s);

/// True when byte `i` of `s` starts a control character: C0 (0x00-0x1f), DEL (0x7f), or a
/// UTF-8 encoded C1 (U+0080-U+009F, bytes 0xc2 0x80-0x9f; U+009B is a terminal's CSI).
bool is_control_at(std::string_view s, std::size_t i);

/// `s` as it may be printed on a terminal or in a report: every control character
/// (is_control_at) written as `\xNN` (lower-case hex; a C1 as its two bytes, `\xc2\x9b`), every
/// invisible character written as `\u{202e}` (lower-case hex, at least 4 digits: `\u{e0041}`);
/// everything else unchanged. Invisible: Unicode's Default_Ignorable_Code_Point (Unicode 15.1.0
/// DerivedCoreProperties.txt, all 4,174 code points: the bidi controls of "Trojan Source",
/// CVE-2021-42574, U+202A-U+202E, U+2066-U+2069, U+200E/U+200F, U+061C; zero-width U+200B-U+200D,
/// U+2060, U+FEFF; soft hyphen U+00AD; combining grapheme joiner U+034F; Hangul fillers U+115F,
/// U+1160, U+3164, U+FFA0; variation selectors U+180B-U+180F, U+FE00-U+FE0F, U+E0100-U+E01EF;
/// tag characters U+E0000-U+E007F; and the reserved code points of the property) and the line and
/// paragraph separators U+2028/U+2029. Names, versions, paths and labels come from input files:
/// an edited record's "\e]0;..." must never reach a terminal raw, and `numpy` followed by a tag
/// character must not read as `numpy`. Invalid UTF-8 bytes pass unchanged (escape_invalid_utf8
/// names them). Returns `s` itself when clean.
std::string printable(std::string_view s);

/// `json` (serialised JSON text) with every invisible character that printable() shows as
/// `\u{...}` written as a JSON escape instead, `\u00ad` (a UTF-16 surrogate pair above U+FFFF,
/// `\udb40\udc41`; RFC 8259 section 7): the same document, in which no string carries one raw.
/// So is every control character a JSON serialiser may leave raw: DEL `\u007f` and the C1
/// controls U+0080-U+009F (`\u009b`, a terminal's CSI; nlohmann's dump() escapes only
/// U+0000-U+001F, all that RFC 8259 section 7 requires). Such characters occur in JSON text only
/// inside strings, where any character may be escaped; everything else is unchanged.
std::string json_escape_invisible(std::string_view json);

/// `s` with every byte that is not part of valid UTF-8 (RFC 3629: no overlong forms, no
/// surrogates, nothing above U+10FFFF) written as `\xNN` (lower-case hex), valid text unchanged.
/// For names that must go where only UTF-8 may (JSON): a file name's raw bytes stay readable and
/// two names that differ only there stay different.
std::string escape_invalid_utf8(std::string_view s);

}  // namespace envlock
