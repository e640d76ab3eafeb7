// PyPI project names (PEP 503), shared by the manifest's pip requirements, the pip side of a
// prefix (pip.hpp) and the diff's pairing of pip packages.
#pragma once

#include <string>
#include <string_view>

namespace envlock {

/// PEP 503 normalised project name: lower case, each run of `-`, `_` and `.` as one `-`
/// ("Foo__Bar.baz" -> "foo-bar-baz"). Leading separators are dropped. Never fails.
std::string pep503_normalize(std::string_view name);

}  // namespace envlock
