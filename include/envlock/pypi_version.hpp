#pragma once
// envlock/pypi_version.hpp — PEP 440 versions and specifiers, PEP 508 requirements and
// environment markers: what the PyPI resolver (envlock/pypi_resolve.hpp) and the manifest's
// `pypi-dependencies:` speak.
//
// This is not conda's version order (envlock/version.hpp): PEP 440 sorts `1.0.dev0 < 1.0a1 <
// 1.0 < 1.0.post1`, normalises spellings (`1.0-ALPHA.1` is `1.0a1`), and its specifiers have
// rules of their own for pre-releases, post-releases and local labels. The rules followed are
// those of pypa/packaging 21.3, the version pip 23.0 vendors (the pip the agreement tests run):
//   * Pep440Version: packaging.version.Version (VERSION_PATTERN, _cmpkey);
//   * Pep440Specifier / Pep440SpecifierSet: packaging.specifiers.Specifier / SpecifierSet
//     (contains, filter, the `prereleases` property);
//   * Pep508Requirement, Marker: packaging.requirements.Requirement, packaging.markers.Marker
//     (the legacy names `os.name`, `sys.platform`, `platform.version`, `platform.machine`,
//     `platform.python_implementation`, `python_implementation` included, as 21.3 reads them).
// Round trips: Pep440Version::parse(v.to_string()) == v (to_string is packaging's normalised
// str()); Pep508Requirement::to_string() parses back to an equal requirement.

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "envlock/result.hpp"

namespace envlock {

class Pep440Version {
 public:
  Pep440Version() = default;  ///< "0"
  /// Parses a PEP 440 version (case-insensitive, optional `v`, surrounding white space allowed).
  /// Errors: ErrorKind::Parse naming the text and the rule.
  static Result<Pep440Version> parse(std::string_view text);

  /// The normalised spelling (`1.0-ALPHA.1` -> `1.0a1`, `1.0-1` -> `1.0.post1`, `1!2.0+Ub.1`).
  [[nodiscard]] std::string to_string() const;
  /// Without the local label (`2.4.1+cu121` -> `2.4.1`).
  [[nodiscard]] Pep440Version public_version() const;
  /// Epoch and release only (`1!2.0rc1.post2` -> `1!2.0`).
  [[nodiscard]] Pep440Version base_version() const;
  [[nodiscard]] bool is_prerelease() const { return pre_.has_value() || dev_.has_value(); }
  [[nodiscard]] bool is_postrelease() const { return post_.has_value(); }
  [[nodiscard]] bool has_local() const { return !local_.empty(); }
  [[nodiscard]] const std::vector<std::uint64_t>& release() const { return release_; }
  [[nodiscard]] std::uint64_t epoch() const { return epoch_; }

  friend std::strong_ordering operator<=>(const Pep440Version& a, const Pep440Version& b);
  friend bool operator==(const Pep440Version& a, const Pep440Version& b) { return (a <=> b) == 0; }

 private:
  using LocalPart = std::variant<std::uint64_t, std::string>;
  std::uint64_t epoch_ = 0;
  std::vector<std::uint64_t> release_{0};
  std::optional<std::pair<std::string, std::uint64_t>> pre_;  ///< ("a" | "b" | "rc", n)
  std::optional<std::uint64_t> post_;
  std::optional<std::uint64_t> dev_;
  std::vector<LocalPart> local_;
};

/// One clause: `>=1.26`, `==2.*`, `~=1.4.2`, `!=1.5`, `===foo`.
class Pep440Specifier {
 public:
  static Result<Pep440Specifier> parse(std::string_view text);
  [[nodiscard]] const std::string& op() const { return op_; }
  [[nodiscard]] const std::string& version() const { return version_; }  ///< as written, trimmed
  [[nodiscard]] std::string to_string() const { return op_ + version_; }
  /// packaging's Specifier.prereleases: the clause names a pre-release (`>=2.0b1`).
  [[nodiscard]] bool prereleases() const;
  /// packaging's Specifier.contains(item, prereleases): with `prereleases` nullopt, the clause's own.
  [[nodiscard]] bool contains(const Pep440Version& v, std::optional<bool> prereleases = std::nullopt) const;
  /// packaging's Specifier.contains for a string item (a marker's value): false when it is no version.
  [[nodiscard]] bool contains_text(std::string_view text) const;

 private:
  std::string op_, version_;
  bool wildcard_ = false;
  Pep440Version parsed_;
};

/// A comma-separated set of clauses (empty = every version).
class Pep440SpecifierSet {
 public:
  static Result<Pep440SpecifierSet> parse(std::string_view text);
  [[nodiscard]] const std::vector<Pep440Specifier>& clauses() const { return clauses_; }
  [[nodiscard]] bool empty() const { return clauses_.empty(); }
  /// The clauses joined by `,` in packaging's order (sorted by their text).
  [[nodiscard]] std::string to_string() const;
  /// The intersection (packaging's `&`).
  void add(const Pep440SpecifierSet& other);
  [[nodiscard]] bool prereleases() const;
  /// packaging's SpecifierSet.contains(item, prereleases).
  [[nodiscard]] bool contains(const Pep440Version& v, std::optional<bool> prereleases = std::nullopt) const;
  /// packaging's SpecifierSet.filter(versions, prereleases=None): the versions that match, in
  /// the given order; pre-releases only when a clause names one, or (an empty set) when no
  /// final release is there.
  [[nodiscard]] std::vector<Pep440Version> filter(const std::vector<Pep440Version>& versions) const;

 private:
  std::vector<Pep440Specifier> clauses_;
};

/// The values markers are evaluated against (PEP 508 "Environment Markers"): `python_version`,
/// `python_full_version`, `os_name`, `sys_platform`, `platform_system`, `platform_machine`,
/// `platform_release`, `platform_version`, `platform_python_implementation`,
/// `implementation_name`, `implementation_version`. `extra` is set per evaluation.
using MarkerEnvironment = std::map<std::string, std::string>;

/// A parsed marker expression (`python_version < "3.11" and extra == "test"`).
class Marker {
 public:
  /// Errors: ErrorKind::Parse naming the marker, the character and what was expected.
  static Result<Marker> parse(std::string_view text);
  /// packaging's Marker.evaluate: `extra` (PEP 503 normalised on both sides) is `extra` here.
  /// A comparison it cannot make (`<` between strings that are no versions) is false.
  [[nodiscard]] bool evaluate(const MarkerEnvironment& env, std::string_view extra = "") const;
  /// True when the marker names the variable `extra` anywhere.
  [[nodiscard]] bool mentions_extra() const;
  [[nodiscard]] const std::string& to_string() const { return text_; }
  struct Node;

 private:
  std::shared_ptr<const Node> root_;
  std::string text_;
};

/// A PEP 508 requirement: `name[extra1,extra2] >=1.0,<2 ; marker` or `name @ URL ; marker`.
struct Pep508Requirement {
  std::string name;                 ///< as written
  std::vector<std::string> extras;  ///< PEP 503 normalised, sorted, unique
  Pep440SpecifierSet specifier;
  std::string url;                  ///< a direct reference (`@ URL`), else empty
  std::optional<Marker> marker;
  /// Errors: ErrorKind::Parse with the text, a caret and the rule.
  static Result<Pep508Requirement> parse(std::string_view text);
  [[nodiscard]] std::string normalized_name() const;
  /// `name[e1,e2]>=1.0,<2; marker` (packaging's str(Requirement)).
  [[nodiscard]] std::string to_string() const;
  /// True when the marker (if any) holds for `env` with `extra`.
  [[nodiscard]] bool applies(const MarkerEnvironment& env, std::string_view extra = "") const;
};

}  // namespace envlock
