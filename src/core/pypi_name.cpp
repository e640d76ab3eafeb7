// PEP 503 name normalisation (include/envlock/pypi_name.hpp).
#include "envlock/pypi_name.hpp"

#include <cctype>

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

}  // namespace envlock
