#pragma once
// Internal: the YAML tree the lockfile reader validates, and two ways to build it.
//
// envlock writes envlock.lock itself (emit.cpp) in a small block-style subset of YAML: two-space
// indentation, `key: value` maps, `- item` lists, `[]` / `{}`, plain or double-quoted scalars,
// whole-line comments. parse_block_yaml() reads exactly that subset in one pass over the text
// (a lockfile of 1,000 packages x 5 platforms in milliseconds, where yaml-cpp takes seconds) and
// returns nullopt at the first construct outside it; from_yaml_cpp() converts what yaml-cpp
// parsed, so any other valid YAML (hand edits, other emitters) reads the same, only slower.
// Both give 1-based line and column for every node, for file:line:col errors.

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace envlock::block_yaml {

struct Node {
  enum class Kind { Undefined, Null, Scalar, Sequence, Map };
  Kind kind = Kind::Undefined;
  std::string scalar;                          ///< Scalar: the text (quotes and escapes resolved)
  std::vector<Node> items;                     ///< Sequence: the items
  std::vector<std::pair<Node, Node>> entries;  ///< Map: key, value in file order
  int line = 0;                                ///< 1-based; 0 for Undefined
  int column = 0;                              ///< 1-based

  [[nodiscard]] bool IsScalar() const { return kind == Kind::Scalar; }
  [[nodiscard]] bool IsSequence() const { return kind == Kind::Sequence; }
  [[nodiscard]] bool IsMap() const { return kind == Kind::Map; }
  [[nodiscard]] bool IsNull() const { return kind == Kind::Null; }
  [[nodiscard]] const std::string& Scalar() const { return scalar; }
  explicit operator bool() const { return kind != Kind::Undefined; }
  /// The value of `key` in a map (the first one), or an Undefined node.
  const Node& operator[](std::string_view key) const;
  /// A yaml-cpp mark (0-based) for yaml::Source::error_at.
  [[nodiscard]] YAML::Mark Mark() const;
};

/// "a map", "a list", "a scalar 'x'", "nothing (null)", "nothing" — as yaml::kind_name.
std::string kind_name(const Node& node);

/// Parses text in envlock's block subset; nullopt when the text uses anything else (the caller
/// then parses it with yaml-cpp).
std::optional<Node> parse_block_yaml(std::string_view text);

/// The same tree from a yaml-cpp document.
Node from_yaml_cpp(const YAML::Node& node);

}  // namespace envlock::block_yaml
