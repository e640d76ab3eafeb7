// Shared text helpers (envlock/text.hpp).
#include "envlock/text.hpp"

#include <cctype>
#include <cstdio>

namespace envlock {

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

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
// The code point of an invisible formatting character at byte i (UTF-8), or 0: the bidi controls
// of "Trojan Source" (CVE-2021-42574: U+202A-U+202E embeddings and overrides, U+2066-U+2069
// isolates, U+200E/U+200F marks, U+061C), zero-width characters (U+200B-U+200D, U+2060, U+FEFF)
// and the line and paragraph separators U+2028/U+2029. They change how the text around them
// reads without being seen.
char32_t invisible_at(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  if (i + 1 < s.size() && b(i) == 0xd8 && b(i + 1) == 0x9c) return 0x061c;
  if (i + 2 >= s.size()) return 0;
  if (b(i) == 0xef && b(i + 1) == 0xbb && b(i + 2) == 0xbf) return 0xfeff;
  if (b(i) != 0xe2) return 0;
  const char32_t cp = 0x2000 + ((b(i + 1) & 0x3f) << 6) + (b(i + 2) & 0x3f);
  if ((b(i + 1) & 0xc0) != 0x80 || (b(i + 2) & 0xc0) != 0x80 || b(i + 1) > 0x81) return 0;
  if ((cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069)) return cp;
  return 0;
}
}  // namespace

std::string printable(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && !is_control_at(s, i) && invisible_at(s, i) == 0) ++i;
  if (i == s.size()) return std::string(s);
  std::string out(s.substr(0, i));
  auto hex = [&out](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  };
  for (; i < s.size(); ++i) {
    if (const char32_t cp = invisible_at(s, i); cp != 0) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u{%04x}", static_cast<unsigned>(cp));
      out += buf;
      i += cp == 0x061c ? 1 : 2;
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
