#pragma once
// envlock/record_path.hpp — where a file a pip RECORD lists lies in its prefix.
//
// A `*.dist-info/RECORD` (PEP 376; wheel installs per PEP 627 and the binary distribution
// format spec) lists each installed file relative to the site-packages folder that holds the
// dist-info — `numpy/__init__.py`, or `../../../bin/f2py` for a script installed into the
// prefix's bin/ — or, for a file installed outside site-packages' tree, as an absolute path.

#include <optional>
#include <string>
#include <string_view>

namespace envlock {

/// `path` ('/'-separated) with empty and `.` components dropped and `..` resolved;
/// std::nullopt when `..` climbs above its start.
std::optional<std::string> normalize_relative(std::string_view path);

/// The prefix-relative path ('/'-separated, normalised) of RECORD row path `record_path` of a
/// dist-info in `site` (its site-packages folder, prefix-relative: "lib/python3.12/site-packages").
/// A relative row is joined to `site`; an absolute row inside `host_prefix` (the prefix as the
/// installing host saw it: a captured host's path, not where a --root tree is mounted) is made
/// relative to it. std::nullopt: the file lies outside the prefix (a `..` too many, or an
/// absolute path elsewhere) — callers report it, never touch it.
std::optional<std::string> record_path_in_prefix(std::string_view site, std::string_view record_path, std::string_view host_prefix);

}  // namespace envlock
