#include "envlock/result.hpp"

namespace envlock {

std::string Error::to_string() const {
  std::string out;
  if (!where.empty()) out += where + ": ";
  out += message;
  if (!detail.empty()) out += "\n" + detail;
  if (!hint.empty()) out += "\nhint: " + hint;
  return out;
}

Error Error::with_context(const std::string& outer) const {
  Error e = *this;
  e.where = where.empty() ? outer : outer + ": " + where;
  return e;
}

Error parse_error(const std::string& what, const std::string& input, std::size_t pos,
                  const std::string& rule) {
  Error e;
  e.kind = ErrorKind::Parse;
  e.message = what + " '" + input + "' at character " + std::to_string(pos + 1) + ": " + rule;
  if (pos > input.size()) pos = input.size();
  e.detail = "  " + input + "\n  " + std::string(pos, ' ') + "^";
  return e;
}

}  // namespace envlock
