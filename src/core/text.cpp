// Shared text helpers (envlock/text.hpp).
#include "envlock/text.hpp"

#include <cctype>
#include <cstdio>

namespace envlock {

std::string_view trim_view(std::string_view s, std::string_view chars) {
  const std::size_t b = s.find_first_not_of(chars);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(chars) - b + 1);
}

std::string trim(std::string_view s) { return std::string(trim_view(s)); }

std::string ascii_lower(std::string s) {
  for (auto& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

bool is_control_at(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x20 || c == 0x7f) return true;
  return c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
         static_cast<unsigned char>(s[i + 1]) <= 0x9f;
}

namespace {
// Unicode 15.1.0 DerivedCoreProperties.txt, property Default_Ignorable_Code_Point (4,174 code
// points, https://www.unicode.org/Public/15.1.0/ucd/DerivedCoreProperties.txt): characters a
// renderer shows as nothing when it does not support them (UAX #44, section 5.3). They include the
// bidi controls of "Trojan Source" (CVE-2021-42574: U+202A-U+202E, U+2066-U+2069, U+200E/U+200F,
// U+061C), the zero-width characters (U+200B-U+200D, U+2060, U+FEFF), the soft hyphen U+00AD,
// the combining grapheme joiner U+034F, the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0),
// variation selectors (U+180B-U+180F, U+FE00-U+FE0F, U+E0100-U+E01EF) and the tag characters
// U+E0000-U+E007F, with the unassigned code points the property reserves. Besides them: the line
// and paragraph separators U+2028/U+2029, which break a line without looking like a break.
struct Range {
  char32_t first, last;
};
constexpr Range kInvisible[] = {
    {0x00ad, 0x00ad},   {0x034f, 0x034f},   {0x061c, 0x061c},   {0x115f, 0x1160},   {0x17b4, 0x17b5},
    {0x180b, 0x180f},   {0x200b, 0x200f},   {0x2028, 0x202e},   {0x2060, 0x206f},   {0x3164, 0x3164},
    {0xfe00, 0xfe0f},   {0xfeff, 0xfeff},   {0xffa0, 0xffa0},   {0xfff0, 0xfff8},   {0x1bca0, 0x1bca3},
    {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff},
};

// The code point of an invisible character (kInvisible) starting at byte i of valid UTF-8, with
// its length in bytes; {0, 0} for anything else (ASCII, visible text, invalid bytes).
struct Invisible {
  char32_t cp = 0;
  std::size_t len = 0;
};
Invisible invisible_at(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const auto cont = [&](std::size_t k) { return k < s.size() && (b(k) & 0xc0) == 0x80; };
  const unsigned char c = b(i);
  char32_t cp = 0;
  std::size_t len = 0;
  if (c >= 0xc2 && c <= 0xdf && cont(i + 1)) {
    cp = (static_cast<char32_t>(c & 0x1f) << 6) | (b(i + 1) & 0x3f);
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef && cont(i + 1) && cont(i + 2)) {
    cp = (static_cast<char32_t>(c & 0x0f) << 12) | (static_cast<char32_t>(b(i + 1) & 0x3f) << 6) | (b(i + 2) & 0x3f);
    len = 3;
    if (cp < 0x800) return {};  // overlong
  } else if (c >= 0xf0 && c <= 0xf4 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
    cp = (static_cast<char32_t>(c & 0x07) << 18) | (static_cast<char32_t>(b(i + 1) & 0x3f) << 12) |
         (static_cast<char32_t>(b(i + 2) & 0x3f) << 6) | (b(i + 3) & 0x3f);
    len = 4;
    if (cp < 0x10000) return {};  // overlong
  } else {
    return {};
  }
  for (const Range& r : kInvisible)
    if (cp >= r.first && cp <= r.last) return {cp, len};
  return {};
}
}  // namespace

std::string printable(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && !is_control_at(s, i) && (static_cast<unsigned char>(s[i]) < 0x80 || invisible_at(s, i).len == 0)) ++i;
  if (i == s.size()) return std::string(s);
  std::string out(s.substr(0, i));
  auto hex = [&out](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  };
  for (; i < s.size(); ++i) {
    if (const Invisible inv = static_cast<unsigned char>(s[i]) < 0x80 ? Invisible{} : invisible_at(s, i); inv.len != 0) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(inv.cp));
      out += buf;
      i += inv.len - 1;
      continue;
    }
    if (!is_control_at(s, i)) {
      out += s[i];
      continue;
    }
    hex(static_cast<unsigned char>(s[i]));
    if (static_cast<unsigned char>(s[i]) == 0xc2) hex(static_cast<unsigned char>(s[++i]));
  }
  return out;
}

namespace {
// What json_escape_invisible() writes as an escape at byte i of JSON text: an invisible character
// (invisible_at), or a control character a serialiser leaves raw, DEL (0x7f) and the C1 controls
// U+0080-U+009F (nlohmann's dump() escapes only U+0000-U+001F, as RFC 8259 section 7 requires;
// U+009B is a terminal's CSI, attack on issue 17, A5). {0, 0} for anything else.
Invisible json_escaped_at(std::string_view json, std::size_t i) {
  const auto c = static_cast<unsigned char>(json[i]);
  if (c == 0x7f) return {0x7f, 1};
  if (c < 0x80) return {};
  if (is_control_at(json, i)) return {static_cast<unsigned char>(json[i + 1]), 2};  // 0xc2 0x80-0x9f
  return invisible_at(json, i);
}
}  // namespace

std::string json_escape_invisible(std::string_view json) {
  std::size_t i = 0;
  while (i < json.size() && json_escaped_at(json, i).len == 0) ++i;
  if (i == json.size()) return std::string(json);
  std::string out(json.substr(0, i));
  char buf[16];
  for (; i < json.size(); ++i) {
    const Invisible inv = json_escaped_at(json, i);
    if (inv.len == 0) {
      out += json[i];
      continue;
    }
    if (inv.cp < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(inv.cp));
    } else {  // a UTF-16 surrogate pair (RFC 8259 section 7)
      const char32_t v = inv.cp - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xd800 + (v >> 10)),
                    static_cast<unsigned>(0xdc00 + (v & 0x3ff)));
    }
    out += buf;
    i += inv.len - 1;
  }
  return out;
}

std::string escape_invalid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto cont = [&](std::size_t i) { return i < s.size() && (byte(i) & 0xc0) == 0x80; };
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = byte(i);
    std::size_t n = 0;  // length of a valid sequence starting at i, 0 when invalid
    if (c < 0x80) {
      n = 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
      n = cont(i + 1) ? 2 : 0;
    } else if (c >= 0xe0 && c <= 0xef) {
      const bool second_ok = i + 1 < s.size() && (c == 0xe0   ? byte(i + 1) >= 0xa0 && byte(i + 1) <= 0xbf
                                                  : c == 0xed ? byte(i + 1) >= 0x80 && byte(i + 1) <= 0x9f
                                                              : cont(i + 1));
      n = second_ok && cont(i + 2) ? 3 : 0;
    } else if (c >= 0xf0 && c <= 0xf4) {
      const bool second_ok = i + 1 < s.size() && (c == 0xf0   ? byte(i + 1) >= 0x90 && byte(i + 1) <= 0xbf
                                                  : c == 0xf4 ? byte(i + 1) >= 0x80 && byte(i + 1) <= 0x8f
                                                              : cont(i + 1));
      n = second_ok && cont(i + 2) && cont(i + 3) ? 4 : 0;
    }
    if (n == 0) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace envlock
