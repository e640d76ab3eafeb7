#pragma once
// caps.hpp — the content cap of one archive (envlock/extract.hpp, ExtractLimits), shared by the
// package, bundle and ZIP readers of this module. Internal to src/extract.
#include <cstdint>
#include <filesystem>
#include <string>

#include "envlock/extract.hpp"

namespace envlock::detail {

/// The bound on the content of one archive and its name in errors.
struct ContentCap {
  std::uint64_t bytes = 0;
  std::string name;
};

/// max(max_expansion_ratio x the size of `archive_path`, expansion_floor), at most
/// max_total_bytes (only the absolute cap when the ratio is 0 or the size cannot be read).
ContentCap content_cap(const std::filesystem::path& archive_path, const ExtractLimits& limits);

}  // namespace envlock::detail
