#pragma once
// Linking one extracted package into a staging directory (private to src/install).
#include <cstdint>
#include <filesystem>
#include <string>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "envlock/install.hpp"
#include "fs_util.hpp"

namespace envlock::detail {

struct LinkContext {
  std::filesystem::path stage;   ///< the directory files are written into
  std::string target_prefix;     ///< the final prefix path, written into relocated files
  LinkMode mode = LinkMode::Hardlink;
  std::string site_packages;     ///< e.g. "lib/python3.11/site-packages"; empty: no python
  std::string python_xy;         ///< e.g. "3.11"; empty: no python
  /// The stage, opened: every write goes through it, beneath the stage (fs_util.hpp). One per
  /// thread; must be set before linking.
  Tree* tree = nullptr;
};

struct LinkResult {
  PrefixRecord record;
  std::uint64_t linked = 0;
  std::uint64_t copied = 0;
  std::uint64_t relocated = 0;
  std::vector<std::string> clobbered;
};

/// One entry to link, as read from the package's info/.
struct SourceEntry {
  std::string path;  ///< inside the package
  PathEntry::Type type = PathEntry::Type::HardLink;
  std::string sha256;
  std::optional<std::uint64_t> size;
  std::string placeholder;
  PathEntry::PlaceholderMode mode = PathEntry::PlaceholderMode::None;
  bool no_link = false;
};

/// info/link.json's noarch: python part.
struct NoarchPython {
  bool active = false;
  std::vector<std::string> entry_points;
};

/// What linking a package will do, read from its info/ before anything is written.
struct LinkPlan {
  std::vector<SourceEntry> entries;
  NoarchPython noarch;
  /// Per entry (then per entry point, "bin/<name>"): the path in the prefix, and whether it is a
  /// file or symlink (false: a directory entry).
  std::vector<std::pair<std::string, bool>> targets;
  /// Per entry: the symbolic link's target as read from the package (empty: not a link).
  std::vector<std::string> link_targets;
};

/// Reads `package`'s info/ (paths.json or files/has_prefix/no_link, link.json) and checks every
/// path-valued field before anything is written: each `_path` and where it goes in the prefix
/// (after the noarch: python moves), each entry point name, each symbolic link's target (relative,
/// and inside the prefix from where the link is) must be a relative, normalised path inside the
/// prefix and not in `conda-meta/` (the records' folder); otherwise ErrorKind::Integrity naming
/// the package, the field and the value. Errors as link_package's before it writes anything.
Result<LinkPlan> plan_package(const LinkContext& ctx, const PackageToLink& package);

/// Links `package` into `ctx.stage` as `plan` says and returns its PrefixRecord (paths as
/// installed). Safe to run for several packages at once on separate threads, each with its own
/// LinkContext::tree, when no path of one is a path (or a folder above a path) of another.
Result<LinkResult> link_planned(const LinkContext& ctx, const PackageToLink& package, const LinkPlan& plan);

/// plan_package() then link_planned().
Result<LinkResult> link_package(const LinkContext& ctx, const PackageToLink& package);

/// True when `rel` is a relative '/'-separated path without "..", "." or empty segments.
bool safe_relative_path(std::string_view rel);

/// True when symbolic link `target`, read at prefix path `link` ('/'-separated, relative), is
/// relative and, taken lexically from the link's folder, stays inside the prefix.
bool link_target_inside(std::string_view link, std::string_view target);

}  // namespace envlock::detail
