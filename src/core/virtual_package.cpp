// VirtualPackage: a conda virtual package's NAME=VERSION[=BUILD] spelling, parsed and written.
#include "envlock/virtual_package.hpp"

#include <cctype>

#include "envlock/text.hpp"
#include "envlock/version.hpp"

namespace envlock {

std::string VirtualPackage::to_string() const { return name + "=" + version + "=" + build; }

Result<VirtualPackage> VirtualPackage::parse(std::string_view text) {
  // conda, mamba and pixi spell a virtual package NAME=VERSION[=BUILD] (CONDA_OVERRIDE_*, pixi's
  // system-requirements, conda's `__cuda=12.4=0` records): every part is checked here, because a
  // name that is not the package's (`__cuda >=12`, `__CUDA`) would silently offer no `__cuda`.
  VirtualPackage vp;
  const std::string s(text);
  const std::size_t first = s.find('=');
  vp.name = s.substr(0, first);
  if (vp.name.size() < 3 || !vp.name.starts_with("__")) {
    return parse_error("virtual package", s, 0, "expected a name starting with '__', e.g. __cuda=12.4");
  }
  for (std::size_t i = 2; i < vp.name.size(); ++i) {
    const char c = vp.name[i];
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.') continue;
    if (c >= 'A' && c <= 'Z')
      return parse_error("virtual package", s, i, "virtual package names are lower case: write " +
                                                       ascii_lower(vp.name) + s.substr(vp.name.size()));
    return parse_error("virtual package", s, i,
                       "a virtual package is written NAME=VERSION[=BUILD], e.g. __cuda=12.4 (a version "
                       "spec such as '>=12' or a space has no place in it)");
  }
  if (first == std::string::npos) {
    vp.version = "0";
    vp.build = "0";
    return vp;
  }
  const std::size_t second = s.find('=', first + 1);
  vp.version = s.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  vp.build = second == std::string::npos ? "0" : s.substr(second + 1);
  // A system's version (a driver's CUDA, glibc, a kernel, macOS) starts with a digit: "banana"
  // or " 12" parses as a conda version but names no release.
  if (vp.version.empty() || !std::isdigit(static_cast<unsigned char>(vp.version.front())))
    return parse_error("virtual package", s, first + 1, "the version must start with a digit, e.g. __cuda=12.4");
  if (auto v = Version::parse(vp.version); !v) {
    return parse_error("virtual package", s, first + 1, "the version is not a conda version: " + v.error().message);
  }
  if (vp.build.empty()) return parse_error("virtual package", s, s.size(), "empty build string after '='");
  if (const std::size_t bad = vp.build.find_first_of(" \t=,|"); bad != std::string::npos)
    return parse_error("virtual package", s, second + 1 + bad,
                       "a build string may not contain spaces, '=', ',' or '|'");
  return vp;
}

}  // namespace envlock
