// PEP 503 name normalisation (include/envlock/pypi_name.hpp).
#include "envlock/pypi_name.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <string>

namespace envlock {

std::string pep503_normalize(std::string_view name) {
  std::string out;
  bool sep = false;
  for (char c : name) {
    if (c == '-' || c == '_' || c == '.') {
      sep = true;
      continue;
    }
    if (sep && !out.empty()) out += '-';
    sep = false;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

bool is_valid_package_name(std::string_view name, bool pypi) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [&](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return (c < 0x80 && std::isalnum(c)) || c == '.' || c == '_' || c == '-' || (!pypi && c == '+');
  });
}

bool is_pep440_version(std::string_view version) {
  // packaging's VERSION_PATTERN (packaging/version.py), anchored, as ECMAScript.
  static const std::regex pattern(
      R"(^\s*v?(?:(?:[0-9]+!)?[0-9]+(?:\.[0-9]+)*)"
      R"((?:[-_.]?(?:alpha|a|beta|b|preview|pre|c|rc)[-_.]?[0-9]*)?)"
      R"((?:-[0-9]+|[-_.]?(?:post|rev|r)[-_.]?[0-9]*)?)"
      R"((?:[-_.]?dev[-_.]?[0-9]*)?)"
      R"((?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?)\s*$)",
      std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
  if (version.size() > 256) return false;
  return std::regex_match(version.begin(), version.end(), pattern);
}

}  // namespace envlock
