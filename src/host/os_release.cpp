// os-release(5): /etc/os-release, else /usr/lib/os-release, as capture reads it.
#include <sstream>

#include "envlock/host_facts.hpp"
#include "envlock/text.hpp"

namespace envlock {

Result<OsRelease> parse_os_release(std::string_view text, const std::string& source) {
  OsRelease os;
  std::istringstream in{std::string(text)};
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    const auto eq = t.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Error{ErrorKind::Parse, source + ":" + std::to_string(lineno), "expected KEY=value", "  " + t,
                   "os-release(5) lines are KEY=value; fix or remove this line"};
    }
    const std::string key = t.substr(0, eq);
    std::string raw = t.substr(eq + 1), value;
    char quote = 0;
    if (!raw.empty() && (raw[0] == '"' || raw[0] == '\'')) quote = raw[0];
    for (std::size_t i = quote ? 1 : 0; i < raw.size(); ++i) {
      const char c = raw[i];
      if (quote && c == quote) break;
      if (c == '\\' && quote != '\'' && i + 1 < raw.size()) {
        value += raw[++i];
        continue;
      }
      value += c;
    }
    if (key == "ID") os.id = value;
    else if (key == "VERSION_ID") os.version_id = value;
    else if (key == "VERSION_CODENAME") os.version_codename = value;
    else if (key == "PRETTY_NAME") os.pretty_name = value;
  }
  return os;
}

}  // namespace envlock
