#pragma once
// Linking one extracted package into a staging directory (private to src/install).
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_set>

#include "envlock/install.hpp"

namespace envlock::detail {

struct LinkContext {
  std::filesystem::path stage;   ///< the directory files are written into
  std::string target_prefix;     ///< the final prefix path, written into relocated files
  LinkMode mode = LinkMode::Hardlink;
  std::string site_packages;     ///< e.g. "lib/python3.11/site-packages"; empty: no python
  std::string python_xy;         ///< e.g. "3.11"; empty: no python
  /// Directories of the stage known to exist (saves a stat per file); may be null.
  std::unordered_set<std::string>* known_dirs = nullptr;
};

struct LinkResult {
  PrefixRecord record;
  std::uint64_t linked = 0;
  std::uint64_t copied = 0;
  std::uint64_t relocated = 0;
  std::vector<std::string> clobbered;
};

/// Links `package` into `ctx.stage` and returns its PrefixRecord (paths as installed).
Result<LinkResult> link_package(const LinkContext& ctx, const PackageToLink& package);

/// True when `rel` is a relative '/'-separated path without "..", "." or empty segments.
bool safe_relative_path(std::string_view rel);

}  // namespace envlock::detail
