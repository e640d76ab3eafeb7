#pragma once
// Small text and path helpers shared by the snapshot module's readers (private to snapshot/).
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace envlock::snapshot_detail {

/// The whole file as bytes, or nullopt when it cannot be opened.
inline std::optional<std::string> read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// x86-64 psABI level number of "x86_64_v1".."x86_64_v4"; 0 for any other name (aarch64, "").
inline int x86_level_number(std::string_view level) {
  if (level.size() != 9 || !level.starts_with("x86_64_v") || level[8] < '1' || level[8] > '4') return 0;
  return level[8] - '0';
}

}  // namespace envlock::snapshot_detail
