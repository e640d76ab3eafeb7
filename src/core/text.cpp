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

std::string printable(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && !is_control_at(s, i)) ++i;
  if (i == s.size()) return std::string(s);
  std::string out(s.substr(0, i));
  auto hex = [&out](unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  };
  for (; i < s.size(); ++i) {
    if (!is_control_at(s, i)) {
      out += s[i];
      continue;
    }
    hex(static_cast<unsigned char>(s[i]));
    if (static_cast<unsigned char>(s[i]) == 0xc2) hex(static_cast<unsigned char>(s[++i]));
  }
  return out;
}

}  // namespace envlock
