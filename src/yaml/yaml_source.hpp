#pragma once
// Internal: YAML text with its file name, so every error can point at file:line:col and show
// the offending line with a caret. Shared by the manifest, lockfile, readers and snapshot file
// readers (yaml-cpp): the envlock_yaml module (src/yaml), whose users find this header through it.

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
  /// The same error with no text of the file quoted: for a key the file should not have (its
  /// name is in `message`) or a file that is not the kind expected (no `version`), where the line
  /// is no help and may be someone else's secret: a committed envlock.lock that links to a
  /// one-line `{"auths": {...}}` credentials file, or a YAML config whose line 1 is
  /// `oauth_token: ...` (attack 30, F13).
  [[nodiscard]] Error error_at_unquoted(const YAML::Mark& mark, const std::string& message,
                                        const std::string& hint = {}) const;
  /// The error of a map key the file should not have, at the key's `mark`: the line is quoted
  /// only up to the `:` after the key (the caret under it), never the value, which in a file that
  /// is not envlock's (a credentials file a committed link names) is the secret (attack 30, F13).
  [[nodiscard]] Error error_at_key(const YAML::Mark& mark, const std::string& message,
                                   const std::string& hint = {}) const;
  [[nodiscard]] Error error_at_key(const YAML::Node& key, const std::string& message,
                                   const std::string& hint = {}) const {
    return error_at_key(key.Mark(), message, hint);
  }
  [[nodiscard]] Error error_at_unquoted(const YAML::Node& node, const std::string& message,
                                        const std::string& hint = {}) const {
    return error_at_unquoted(node.Mark(), message, hint);
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

/// The most nodes a document may grow to through its aliases (`*name` repeats the node `&name`
/// marks) beyond the nodes written out: a "billion laughs" file of a few KB (nine levels of ten
/// aliases each) would otherwise expand to 10^9 nodes and take gigabytes. No lockfile, manifest
/// or snapshot of a real tool writes more than a handful of aliases (conda-lock, pixi and envlock
/// write none).
inline constexpr std::size_t kAliasExpansionBudget = 1'000'000;

/// Checks, before the text is loaded, that its aliases expand the document by at most `budget`
/// nodes: an ErrorKind::Parse error at `source`:line:col of the alias that goes past it. It walks
/// yaml-cpp's event stream once, counting each anchored node's expanded size, so it is linear in
/// the text whatever the aliases hold. Text without an anchor (`&` after a blank, `[`, `{`, `,`,
/// `-`, `:` or at a line start) is not parsed at all. A YAML syntax error is left to the loader.
Status check_alias_expansion(std::string_view text, const std::string& source,
                             std::size_t budget = kAliasExpansionBudget);

/// "a map", "a list", "a string", "null" — for "expected a list, found a map".
std::string kind_name(const YAML::Node& node);

/// Checks that `map` has no key twice (yaml-cpp keeps the last silently). Returns the error
/// at the second occurrence.
Status check_unique_keys(const Source& src, const YAML::Node& map);

}  // namespace envlock::yaml
