// SourceLocation: `file:line:col` as errors name a place.
#include "envlock/source_location.hpp"

namespace envlock {

std::string SourceLocation::to_string() const {
  std::string out = file;
  if (line > 0) {
    out += ":" + std::to_string(line);
    if (column > 0) out += ":" + std::to_string(column);
  }
  return out;
}

}  // namespace envlock
