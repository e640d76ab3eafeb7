#pragma once
// envlock/match_spec.hpp — conda MatchSpec: a query over package records.
//
// Follows conda's MatchSpec (conda/models/match_spec.py) and rattler_conda_types::MatchSpec.
// Accepted spellings:
//   numpy                          name only
//   numpy 1.26.*  /  numpy >=1.26,<2  /  numpy 1.26.4 py312h*_0    name version [build]
//   numpy=1.26=py312*  /  numpy==1.26.4                                conda '=' forms
//   conda-forge::numpy  /  conda-forge/linux-64::numpy                 channel[/subdir]::name
//   numpy[version='>=1.26', build=py312*, build_number='>=2', md5=..., sha256=..., subdir=...,
//         channel=..., license=..., license_family=..., track_features=..., features=...,
//         fn=..., url=...]                                                      bracket keys
// Bracket keys are conda's FIELD_NAMES (conda/models/match_spec.py), matched with conda's
// implementors: name (lower-cased glob), build (case-sensitive glob), license and
// license_family (case-insensitive globs), track_features and features (sets, equal as sets),
// subdir, fn and url (exact); md5 and sha256 are hex digests compared case-insensitively
// (rattler; conda compares them as exact strings, and repodata writes them in lower case).
//   https://host/channel/linux-64/numpy-1.26.4-py312h_0.conda[#sha256]          a package URL
//   numpy[optional]  /  ray[default,data] >=2.9                      bare bracket words
//   mkl@                                                             conda's legacy feature spec
// Bracket values win over positional ones, as in conda. Names are matched case-insensitively
// after lower-casing (conda normalises names to lower case). A `#` starts a comment (conda),
// except after a package URL, where `#<md5 or sha256>` pins the archive's hash (rattler).
// Not accepted (conda rejects them too): unknown bracket keys such as rattler's `when=`,
// `name:spec` with a single colon. conda's `(optional)` parenthesis section is not supported;
// parentheses group version constraints instead (rattler).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/result.hpp"
#include "envlock/version.hpp"

namespace envlock {

struct PackageRecord;
struct RepoDataRecord;

/// A string pattern as conda uses for names and build strings (conda's GlobStrMatch): exact text,
/// a glob with `*` (conda translates `*` to `.*` and anchors it), or a regex written `^...$`
/// (ECMAScript syntax, searched over the whole string). Matching is case-sensitive; MatchSpec
/// lower-cases names on both sides.
class StringMatcher {
 public:
  StringMatcher() = default;  ///< matches everything (`*`)
  /// Errors (ErrorKind::Parse): empty text, an invalid regex, a regex missing its `^` or `$`.
  static Result<StringMatcher> parse(std::string_view text);
  /// True when `s` matches in full (exact text, glob or regex; case-sensitive).
  [[nodiscard]] bool matches(std::string_view s) const;
  /// True for plain text without `*` or `^...$` (the text is then the only match).
  [[nodiscard]] bool is_exact() const { return kind_ == Kind::Exact; }
  /// True for `*`, which matches everything.
  [[nodiscard]] bool is_any() const { return kind_ == Kind::Glob && text_ == "*"; }
  /// The pattern as written; parse(to_string()) gives an equal matcher.
  [[nodiscard]] const std::string& to_string() const { return text_; }
  /// Equal when the pattern text is equal.
  friend bool operator==(const StringMatcher& a, const StringMatcher& b) { return a.text_ == b.text_; }

 private:
  enum class Kind { Exact, Glob, Regex };
  Kind kind_ = Kind::Glob;
  std::string text_ = "*";
};

/// A constraint on a record's build number (conda's BuildNumberMatch): `5`, `==5`, `=5`, `>=5`,
/// `<5`, `!=5`, `*` (read as `>=0`). Values are non-negative integers.
class BuildNumberSpec {
 public:
  enum class Op { Eq, Ne, Lt, Le, Gt, Ge };
  /// Errors (ErrorKind::Parse): empty text, an unknown operator, a value that is not an integer.
  static Result<BuildNumberSpec> parse(std::string_view text);
  /// True when `build_number` satisfies the constraint.
  [[nodiscard]] bool matches(std::uint64_t build_number) const;
  [[nodiscard]] std::string to_string() const;  ///< e.g. ">=5"; "5" prints as "5", "=5" as "==5"
  [[nodiscard]] Op op() const { return op_; }              ///< the comparison
  [[nodiscard]] std::uint64_t value() const { return value_; }  ///< the right-hand side
  /// Equal when operator, value and spelling (`5` vs `==5`) are equal.
  friend bool operator==(const BuildNumberSpec&, const BuildNumberSpec&) = default;

 private:
  Op op_ = Op::Eq;
  std::uint64_t value_ = 0;
  bool explicit_op_ = false;
};

struct MatchSpec {
  std::optional<std::string> channel;   ///< channel name or URL as written (credentials kept only in memory)
  std::optional<std::string> subdir;    ///< from `channel/subdir::` or `[subdir=...]`
  StringMatcher name;                   ///< usually exact; `*` allowed in bracket-only specs
  std::optional<VersionSpec> version;
  std::optional<StringMatcher> build;
  std::optional<BuildNumberSpec> build_number;
  std::optional<std::string> md5;
  std::optional<std::string> sha256;
  std::optional<std::string> license;         ///< glob, matched case-insensitively (conda)
  std::optional<std::string> license_family;  ///< glob, matched case-insensitively (conda)
  std::optional<std::string> file_name;  ///< `fn=`
  std::optional<std::string> url;        ///< a package URL spec, or `url=`
  std::vector<std::string> track_features;  ///< `[track_features='a b']`, sorted, no duplicates
  std::vector<std::string> features;        ///< `[features='a b']` (legacy), a set as track_features
  std::vector<std::string> extras;       ///< bare bracket words (`ray[default,data]`): pip-style
                                         ///< extras; conda ignores them when matching, so do we
  bool optional = false;                 ///< `[optional]` (conda's constrains marker)

  /// Parses a MatchSpec. Errors name the input, the character position and the rule
  /// (unbalanced bracket, unknown bracket key, bad version, `::` without a name, ...).
  static Result<MatchSpec> parse(std::string_view text);

  /// Canonical spelling, round-trippable: `channel/subdir::name version build[key=value,...]`
  /// with the version and build positional when they are plain, brackets otherwise; a package
  /// URL spec prints as its URL (`#sha256` kept). Channels and URLs print as stored: pass the
  /// text through redact_url() (url.hpp) before writing it to a file or a log.
  [[nodiscard]] std::string to_string() const;

  /// The name when it is an exact name (most specs); empty otherwise.
  [[nodiscard]] std::string exact_name() const;

  /// True when `record` satisfies every field of the spec: name (case-insensitive), version,
  /// build, build_number, md5, sha256, license and license_family (case-insensitive globs),
  /// subdir, track_features and features (the same set, as conda's FeatureMatch). A PackageRecord carries no channel, URL or file
  /// name, so those fields are not checked here.
  [[nodiscard]] bool matches(const PackageRecord& record) const;
  /// As above, and also channel (by channel name, e.g. `conda-forge` matches
  /// https://conda.anaconda.org/conda-forge[/linux-64], or by full URL), url and file name.
  [[nodiscard]] bool matches(const RepoDataRecord& record) const;

  /// Field-wise equality (versions by value, patterns by text).
  friend bool operator==(const MatchSpec&, const MatchSpec&);
};

}  // namespace envlock
