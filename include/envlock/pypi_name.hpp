// PyPI project names (PEP 503), shared by the manifest's pip requirements, the pip side of a
// prefix (pip.hpp) and the diff's pairing of pip packages.
#pragma once

#include <string>
#include <string_view>

namespace envlock {

/// PEP 503 normalised project name: lower case, each run of `-`, `_` and `.` as one `-`
/// ("Foo__Bar.baz" -> "foo-bar-baz"). Leading separators are dropped. Never fails.
std::string pep503_normalize(std::string_view name);

/// A package name as envlock accepts it wherever a record enters (a lockfile, a prefix's
/// conda-meta or dist-info, a snapshot): conda names hold letters, digits and `._+-` (conda's
/// MatchSpec and conda-build rules), PyPI names letters, digits and `._-` (PEP 508). White space,
/// control characters, `|<>` and quotes would split `envlock show` lines or inject text into
/// diff output. Not empty.
bool is_valid_package_name(std::string_view name, bool pypi);

/// A PEP 440 version as `packaging.version.Version` accepts it (its VERSION_PATTERN: optional `v`,
/// epoch `N!`, release, pre-, post- and dev-release with their alternative spellings, local
/// `+label`; case-insensitive, surrounding white space allowed).
bool is_pep440_version(std::string_view version);

}  // namespace envlock
