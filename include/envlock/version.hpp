#pragma once
// envlock/version.hpp — conda versions and version constraints.
//
// Follows conda's VersionOrder (conda/models/version.py) and rattler_conda_types::Version:
//   [epoch!]release[+local]
// * epoch: a non-negative integer followed by `!` (default 0); compared first.
// * the version is lower-cased; `-` and `_` separate components like `.` (conda rule: when the
//   text has no `-`, `_` is a separator, as in `1_2`; when it has `-`, `-` is the separator);
// * each component is split into runs of digits, of `*`, and of other characters
//   ("1a2" -> 1, "a", 2); a component that does not start with a digit gets a leading 0
//   (`1.a1 == 1.0a1`); a trailing `_` stays on the last component (`1.0_` -> 1, [0, "_"]);
//   numbers compare as integers, strings lexicographically, with the special strings
//   `*` < `dev` < `_` (internal) < any other string < "" (release) < `post`; a number is greater
//   than any string except `post` (so `1.0a1 < 1.0 < 1.0post1`, `1.0dev < 1.0a < 1.0b < 1.0rc`);
//   other strings (`a`, `alpha`, `b`, `beta`, `c`, `rc`) compare as plain lower-case strings,
//   exactly as conda and libsolv do (this is not PEP 440);
// * trailing zero components are padded: `1.0 == 1.0.0`, `1.1 < 1.1.1`;
// * local versions (`+...`) are compared after the release when releases are equal, with the
//   same rules and padding: `1.0 < 1.0+1`, but `1.0+abc < 1.0` (a text part sorts below the
//   padding 0). libsolv deviates here: it sorts every local version above the plain release.
// A Version keeps its source spelling: to_string() gives back exactly what was parsed
// (`1.00` stays `1.00` although it equals `1.0`). Round trip: parse(v.to_string()) == v.

#include <compare>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/result.hpp"

namespace envlock {

class Version {
 public:
  /// One part of a component: a number, or a lower-cased string (`*`, `dev`, `post`, ...).
  struct Part {
    bool is_number = false;
    std::uint64_t number = 0;
    std::string text;
  };
  using Component = std::vector<Part>;

  Version() = default;  ///< the version "0"

  /// Parses a conda version string. Errors (ErrorKind::Parse) name the input, the character
  /// position and the rule: empty string, characters outside [A-Za-z0-9._+!*-], a non-numeric
  /// or repeated epoch, an empty component (`1..2`), more than one `+`.
  static Result<Version> parse(std::string_view text);

  /// The source spelling, exactly as parsed.
  [[nodiscard]] const std::string& to_string() const { return source_; }

  [[nodiscard]] std::uint64_t epoch() const { return epoch_; }  ///< 0 when not written
  /// The release components, split into parts as conda does (`1.2a` -> [[1], [2, "a"]]).
  [[nodiscard]] const std::vector<Component>& release() const { return release_; }
  /// The local version components (after `+`); empty when there is none.
  [[nodiscard]] const std::vector<Component>& local() const { return local_; }

  /// Three-way comparison by value in conda order (not by spelling).
  [[nodiscard]] std::strong_ordering compare(const Version& other) const;
  friend bool operator==(const Version& a, const Version& b) { return a.compare(b) == 0; }
  friend std::strong_ordering operator<=>(const Version& a, const Version& b) { return a.compare(b); }

  /// conda's `startswith` used by `=1.2` and `1.2.*`: every component of `prefix` equals this
  /// version's component at the same place (the last prefix component may be a string prefix of
  /// this version's, as conda does for `1.2a` vs `1.2a1`); the epoch must match.
  [[nodiscard]] bool starts_with(const Version& prefix) const;

  /// PEP 440-style `~=` as conda implements it: `*this >= base` and starts_with(base minus its
  /// last release component).
  [[nodiscard]] bool compatible_with(const Version& base) const;

 private:
  std::string source_ = "0";
  std::uint64_t epoch_ = 0;
  std::vector<Component> release_;
  std::vector<Component> local_;
};

/// A constraint over versions: `>=1.2,<2|==3.0`, `1.2.*`, `=1.2`, `~=1.2`, `!=1.5`, `*`.
/// Grammar (as conda and rattler): `,` (and) binds tighter than `|` (or); parentheses group.
/// A bare version `1.2` means `==1.2`, and `1.2.*` / `=1.2` mean starts-with; `*` matches all;
/// `1.2*` is read as `1.2.*` (conda's legacy spelling); operators may be followed by spaces.
/// `!=1.2.*` is "does not start with". Round trip: parse(s.to_string()) == s.
class VersionSpec {
 public:
  /// Any: `*`. Eq..Ge: relational against version(). StartsWith: `1.2.*` / `=1.2` / `1.2*`.
  /// NotStartsWith: `!=1.2.*`. Compatible: `~=1.2`. And/Or: children(). Glob: a `*` inside the
  /// version (`1.*.3`), matched as conda does, as a glob over the lower-cased version text.
  /// Regex: `^...$`, an ECMAScript regular expression over the version text (conda: Python re).
  enum class Op { Any, Eq, Ne, Lt, Le, Gt, Ge, StartsWith, NotStartsWith, Compatible, And, Or, Glob, Regex };

  VersionSpec() = default;  ///< matches every version (`*`)

  /// Parses a constraint. Errors (ErrorKind::Parse) name the input, the character position and
  /// the rule: empty constraint, unbalanced parenthesis, parentheses nested deeper than
  /// kMaxNesting, unknown operator (`=>`, `!1.2`), `~=` with `.*`, a bad version (see
  /// Version::parse), an invalid regex.
  static Result<VersionSpec> parse(std::string_view text);

  /// The deepest nesting of parentheses parse() accepts. Real constraints nest two deep at most;
  /// the cap keeps a hostile manifest, lockfile or repodata record from exhausting the stack of
  /// this recursive parser (and of libsolv's, which reads the same text: solver/solve.cpp).
  static constexpr std::size_t kMaxNesting = 64;

  /// The deepest nesting of parentheses in `text` (unbalanced ones counted as they open).
  static std::size_t nesting(std::string_view text);

  /// True when `v` satisfies the constraint (conda's VersionSpec.match).
  [[nodiscard]] bool matches(const Version& v) const;
  /// True for `*`.
  [[nodiscard]] bool is_any() const { return op_ == Op::Any; }

  /// Normalized spelling: no spaces, operators kept as written (`1.2.*` for starts-with,
  /// `==1.2` for exact). Groups are parenthesized only where `|` sits inside `,`.
  [[nodiscard]] std::string to_string() const;

  [[nodiscard]] Op op() const { return op_; }                             ///< the node kind
  [[nodiscard]] const Version& version() const { return version_; }       ///< leaf operand
  [[nodiscard]] const std::vector<VersionSpec>& children() const { return children_; }  ///< And/Or
  [[nodiscard]] const std::string& pattern() const { return pattern_; }   ///< Glob/Regex text

  /// Structural equality; leaf versions compare by value (`==1.0` equals `1.0.0`).
  friend bool operator==(const VersionSpec& a, const VersionSpec& b);

 private:
  Op op_ = Op::Any;
  Version version_;
  std::vector<VersionSpec> children_;
  std::string pattern_;
  friend class VersionSpecParser;
};

}  // namespace envlock
