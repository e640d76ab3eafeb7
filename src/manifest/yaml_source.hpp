#pragma once
// Internal: YAML text with its file name, so every error can point at file:line:col and show
// the offending line with a caret. Shared by the manifest and lockfile readers (yaml-cpp).

#include <yaml-cpp/yaml.h>

#include <string>
#include <string_view>
#include <vector>

#include "envlock/result.hpp"

namespace envlock::yaml {

class Source {
 public:
  Source(std::string text, std::string name);

  /// Parses the whole text. YAML syntax errors become ErrorKind::Parse at file:line:col.
  [[nodiscard]] Result<YAML::Node> load() const;

  /// An ErrorKind::Parse error at `mark` (yaml-cpp marks are 0-based) with the line and a caret.
  [[nodiscard]] Error error_at(const YAML::Mark& mark, const std::string& message,
                               const std::string& hint = {}) const;
  [[nodiscard]] Error error_at(const YAML::Node& node, const std::string& message,
                               const std::string& hint = {}) const {
    return error_at(node.Mark(), message, hint);
  }

  /// "file:line:col" (1-based) of a mark; "file" for a null mark.
  [[nodiscard]] std::string where(const YAML::Mark& mark) const;
  /// The text of a 1-based line without its newline; empty when out of range.
  [[nodiscard]] std::string_view line(int one_based) const;
  [[nodiscard]] const std::string& name() const { return name_; }

 private:
  std::string text_;
  std::string name_;
  std::vector<std::string_view> lines_;
};

/// "a map", "a list", "a string", "null" — for "expected a list, found a map".
std::string kind_name(const YAML::Node& node);

/// Checks that `map` has no key twice (yaml-cpp keeps the last silently). Returns the error
/// at the second occurrence.
Status check_unique_keys(const Source& src, const YAML::Node& map);

}  // namespace envlock::yaml
