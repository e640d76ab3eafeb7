// System package databases: /var/lib/dpkg/status (deb822 stanzas) and `rpm -qa` query output.
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include "envlock/host_facts.hpp"
#include "envlock/text.hpp"

namespace envlock {

namespace {

// The white space around a dpkg field or an rpm column (a line ends at \n already).
constexpr std::string_view kFieldSpace = " \t\r";

void sort_packages(std::vector<SystemPackage>& pkgs) {
  std::sort(pkgs.begin(), pkgs.end(), [](const SystemPackage& a, const SystemPackage& b) {
    return std::tie(a.name, a.architecture, a.version) < std::tie(b.name, b.architecture, b.version);
  });
}

}  // namespace

Result<std::vector<SystemPackage>> parse_dpkg_status(std::string_view text, const std::string& source,
                                                     std::vector<CaptureProblem>* warnings) {
  std::vector<SystemPackage> out;
  std::map<std::string, std::string> fields;
  int stanza_line = 0;      // first line of the current stanza (0: none yet)
  bool have_field = false;
  std::optional<Error> bad;  // the first fault of the current stanza
  auto reset = [&] {
    fields.clear();
    have_field = false;
    stanza_line = 0;
    bad.reset();
  };
  // Ends the stanza that ran to `end_line`: kept, or reported (strict: returned as the error).
  auto finish = [&](int end_line) -> Status {
    if (!bad && fields.empty()) return ok_status();
    if (!bad) {
      auto it = fields.find("package");
      if (it == fields.end() || it->second.empty()) {
        bad = Error{ErrorKind::Parse, source + ":" + std::to_string(stanza_line), "it has no Package field",
                    "", "every stanza of a dpkg status file starts with `Package: <name>`; the file may be damaged"};
      } else {
        SystemPackage p;
        p.name = it->second;
        p.version = fields["version"];
        p.architecture = fields["architecture"];
        p.status = fields["status"];
        out.push_back(std::move(p));
      }
    }
    if (bad) {
      // The stanza is named once: "a stanza (lines 4-9) was skipped: it has no Package field".
      const auto pkg = fields.find("package");
      std::string stanza = pkg != fields.end() && !pkg->second.empty() ? "the stanza of " + pkg->second : "a stanza";
      stanza += " (lines " + std::to_string(stanza_line) + "-" + std::to_string(end_line) + ")";
      if (warnings == nullptr) {
        Error e = *bad;
        e.message = stanza + ": " + e.message;
        return e;
      }
      warnings->push_back({bad->where, stanza + " was skipped: " + bad->message});
    }
    reset();
    return ok_status();
  };
  std::istringstream in{std::string(text)};
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim_view(line, kFieldSpace).empty()) {
      if (auto s = finish(lineno - 1); !s) return s.error();
      continue;
    }
    if (line[0] == '#') continue;
    if (stanza_line == 0) stanza_line = lineno;
    if (bad) continue;  // the rest of a faulty stanza is skipped up to the next blank line
    if (line[0] == ' ' || line[0] == '\t') {
      if (!have_field) {
        bad = Error{ErrorKind::Parse, source + ":" + std::to_string(lineno), "a continuation line comes before any field",
                    "  " + line, "continuation lines (starting with a space) belong to the field above them"};
      }
      continue;  // multi-line values (Description, Conffiles) are not recorded
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos || colon == 0) {
      bad = Error{ErrorKind::Parse, source + ":" + std::to_string(lineno), "expected `Field: value`", "  " + line,
                  "dpkg status lines are `Field: value` or continuation lines starting with a space"};
      continue;
    }
    const std::string key = ascii_lower(line.substr(0, colon));
    fields[key] = std::string(trim_view(std::string_view(line).substr(colon + 1), kFieldSpace));
    have_field = true;
  }
  if (auto s = finish(lineno); !s) return s.error();
  sort_packages(out);
  return out;
}

Result<std::vector<SystemPackage>> parse_rpm_query(std::string_view text, const std::string& source,
                                                   std::vector<CaptureProblem>* warnings) {
  constexpr int kNamedLines = 10;  // bad lines named one by one; the rest are counted
  std::vector<SystemPackage> out;
  std::istringstream in{std::string(text)};
  std::string line;
  int lineno = 0;
  int bad_lines = 0;
  int first_unnamed = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (trim_view(line, kFieldSpace).empty()) continue;
    std::vector<std::string> cols;
    std::size_t start = 0;
    for (;;) {
      const auto tab = line.find('\t', start);
      cols.push_back(std::string(trim_view(std::string_view(line).substr(start, tab == std::string::npos ? std::string::npos : tab - start), kFieldSpace)));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    if (cols.size() != 3 || cols[0].empty() || cols[1].empty()) {
      Error e{ErrorKind::Parse, source + ":" + std::to_string(lineno), "expected NAME<tab>EPOCH:VERSION-RELEASE<tab>ARCH",
              "  " + line, "produce it with rpm -qa --queryformat '%{NAME}\\t%{EPOCHNUM}:%{VERSION}-%{RELEASE}\\t%{ARCH}\\n'"};
      if (warnings == nullptr) return e;
      if (++bad_lines <= kNamedLines) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        warnings->push_back({e.where, "the line was skipped: " + e.message + ", got `" + line + "` (" + e.hint + ")"});
      } else if (first_unnamed == 0) {
        first_unnamed = lineno;
      }
      continue;
    }
    SystemPackage p;
    p.name = cols[0];
    p.version = cols[1].starts_with("0:") ? cols[1].substr(2) : cols[1];
    p.architecture = cols[2] == "(none)" ? "" : cols[2];
    p.status = "installed";
    out.push_back(std::move(p));
  }
  if (bad_lines > kNamedLines) {
    warnings->push_back({source + ":" + std::to_string(first_unnamed),
                         std::to_string(bad_lines - kNamedLines) + " more line(s) from here on were skipped the same way; " +
                             (out.empty() ? "no line is `rpm -qa --queryformat` output: is it the right file?"
                                          : "the file may be damaged")});
  }
  sort_packages(out);
  return out;
}

}  // namespace envlock
