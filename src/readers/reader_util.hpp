#pragma once
// Internal helpers shared by the lockfile readers: YAML access with file:line:col errors,
// duplicate-key checks, and the finishing steps every reader applies to its Lockfile.
// The readers walk the flat YAML tree of src/yaml/block_yaml.hpp: conda-lock and pixi write
// their lockfiles in the block subset it reads in one pass; anything else goes through yaml-cpp
// into the same tree, so both give the same records and the same file:line:col.

#include <yaml-cpp/yaml.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "envlock/lockfile.hpp"
#include "envlock/readers.hpp"
#include "envlock/result.hpp"
#include "envlock/text.hpp"
#include "block_yaml.hpp"

namespace envlock::readers {

using YamlNode = block_yaml::Node;

/// "source:line:col" for a node (1-based line and column, as editors count); `source` alone for
/// an Undefined node.
std::string where(const std::string& source, const YamlNode& node);
/// The same for a yaml-cpp mark (0-based, as yaml-cpp counts; a syntax error's place).
std::string where(const std::string& source, const YAML::Mark& mark);

/// A parse error at `node`.
Error error_at(const std::string& source, const YamlNode& node, const std::string& message,
               const std::string& hint = {});

/// Parses YAML text: in one pass when it is in the block subset (block_yaml::parse_block_yaml),
/// else with yaml-cpp; syntax errors (truncated files included) become `file:line:col` errors.
/// The Document may refer to `text`, which must outlive it and every node taken from it.
Result<block_yaml::Document> load_yaml(const std::string& text, const std::string& source);

/// The integer a scalar spells (decimal, optional sign), or nullopt for anything else.
std::optional<long long> as_integer(const YamlNode& node);

/// The scalar text of `node[key]`, or nullopt when absent or null. A non-scalar is an error.
Result<std::optional<std::string>> get_string(const std::string& source, const YamlNode& map,
                                              const char* key);
/// Like get_string, for an unsigned integer.
Result<std::optional<std::uint64_t>> get_uint(const std::string& source, const YamlNode& map,
                                              const char* key);
/// A list of strings at `map[key]` (absent/null -> empty); a scalar is read as a one-item list.
Result<std::vector<std::string>> get_string_list(const std::string& source, const YamlNode& map,
                                                 const char* key);

/// Parses `text`, the `version` of `entry`, into pkg.version; an empty text leaves it as it is.
/// The error (at the `version` node) starts with `label`, e.g. "package 'numpy': ".
Status read_version(const std::string& source, const YamlNode& entry, const std::string& text,
                    const std::string& label, LockedPackage& pkg);

/// Reads the optional record fields that conda-lock.yml and pixi.lock both spell as repodata
/// does: `build`, `build_number`, `subdir`, `license`, `size`, `timestamp`. An absent one leaves
/// `pkg` as it is; a wrong type is an error at its node.
Status read_record_fields(const std::string& source, const YamlNode& entry, LockedPackage& pkg);

/// A record's `name`, `version` and `build` against its URL's archive file name
/// (name-version-build.conda|.tar.bz2, after complete_record_from_url): an installer downloads
/// the URL, so a record that says numpy 1.26.4 while its URL names numpy-1.26.3 would be shown
/// by `show` and `diff` as one package and installed as another. Refused at the entry's
/// `version` (`name`, `build`) node, naming the package, both values and the file (issue 17, M4;
/// docs/review.md, "Records that disagree with their URL"). Versions compare as conda orders
/// them (`1.0` is `1.00`); a URL that names no archive (a pixi source package) is not checked.
Status check_record_matches_url(const std::string& source, const YamlNode& entry, const LockedPackage& pkg);

/// Fails when a YAML map holds the same key twice (yaml-cpp keeps both silently).
Status check_unique_keys(const std::string& source, const YamlNode& map, const std::string& what);

/// check_unique_keys on every map of the document under `root` (a package's `hash`, a
/// `metadata.channels` entry, ...): PyYAML, which conda-lock reads with, keeps the last of two
/// equal keys and yaml-cpp the first, so a second `sha256:` would install another archive than the
/// one compared. The error names the key above the map ("`hash`", "an entry of `channels`").
Status check_unique_keys_everywhere(const std::string& source, const YamlNode& root);

/// True for lower-case hex strings of `len` characters (upper case accepted and lower-cased).
bool is_hex(std::string_view s, std::size_t len);

/// Remembers, per environment x platform x name, where a package was first listed.
struct DuplicateIndex {
  struct Seen {
    std::string url;
    std::string place;
    std::set<std::string> layers;  ///< categories listed so far (conda-lock main, dev, ...)
  };
  std::map<std::string, Seen> seen;  ///< key -> first listing
};

/// An ErrorKind::Parse error at `place` when `name` is not a conda (or, with `pypi`, PyPI) package
/// name (is_valid_package_name), the name shown with control characters escaped.
Status check_name(const std::string& name, bool pypi, const std::string& place);

/// Adds `pkg` to `lock.environments[env].platforms[platform_key]` (created with `subdir` as its
/// platform). The same name listed again is merged (layers joined) only where conda-lock lists a
/// package once per category: the same record (same URL, version, build, hashes...) under a
/// category not listed before. Anything else -- another URL, another field, the same category
/// again, an entry without category (@EXPLICIT, pixi.lock) -- is an error naming both places
/// ("duplicated package").
/// `identity` replaces the name in the duplicate check where a format allows several records of
/// one name (pixi.lock 7 source packages with variants: their source id).
Status add_package(Lockfile& lock, DuplicateIndex& index, const std::string& env,
                   const std::string& platform_key, const std::string& subdir, LockedPackage pkg,
                   const std::string& place, const std::string& identity = {});
Status add_pip(Lockfile& lock, DuplicateIndex& index, const std::string& env,
               const std::string& platform_key, const std::string& subdir, PipPackage pkg,
               const std::string& place, const std::string& layer = {});

/// Sorts packages and pip packages of every platform by name, and channels keep their order.
void sort_lockfile(Lockfile& lock);

/// Reads a `depends` list entry "name spec..." and returns the name (lower-cased).
std::string spec_name(std::string_view spec);

}  // namespace envlock::readers
