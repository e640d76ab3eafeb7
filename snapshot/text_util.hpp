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

/// `s` without leading and trailing white space.
inline std::string trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

/// A '/'-separated relative path with `.` and `..` resolved; nullopt when `..` climbs above the
/// start (the path would leave its prefix).
inline std::optional<std::string> normalize_relative(const std::string& p) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= p.size()) {
    const auto slash = p.find('/', start);
    const std::string part = p.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  std::string out;
  for (const auto& part : parts) out += (out.empty() ? "" : "/") + part;
  return out;
}

/// x86-64 psABI level number of "x86_64_v1".."x86_64_v4"; 0 for any other name (aarch64, "").
inline int x86_level_number(std::string_view level) {
  if (level.size() != 9 || !level.starts_with("x86_64_v") || level[8] < '1' || level[8] > '4') return 0;
  return level[8] - '0';
}

}  // namespace envlock::snapshot_detail
