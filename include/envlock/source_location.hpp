#pragma once
// envlock/source_location.hpp — a place in a file envlock read (a manifest's line and column), as
// errors and messages name it: `file:line:col`, 1-based, as GCC and conda's YAML errors write it.

#include <string>

namespace envlock {

/// A place in a manifest file: 1-based line and column; 0 when unknown.
struct SourceLocation {
  std::string file;  ///< the path as given to load_manifest (or the `source` of parse_manifest)
  int line = 0;
  int column = 0;
  /// "file:line:col", or "file:line" / "file" when the parts are unknown.
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const SourceLocation&, const SourceLocation&) = default;
};

}  // namespace envlock
