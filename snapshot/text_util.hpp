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

/// The most any file capture reads from a host is read to (a host fact, a dist-info file, a
/// bundled paths.json): a link to /dev/zero or a huge /proc file must not fill memory. The same
/// 64 MiB cap as the dist-info files of envlock_pip; a real dpkg status database is under 10 MiB.
inline constexpr std::size_t kMaxReadFile = 64u << 20;

/// What read_regular_file() found at a path.
struct FileRead {
  std::optional<std::string> text;  ///< the whole file; nullopt when absent or refused
  std::string refused;              ///< why it was not read ("is a FIFO, not a regular file, ..."); empty when read or absent
};

/// How read_regular_file() treats the path's last component.
enum class ReadAs {
  HostFile,      ///< a file of the host (live) or named by the user: links followed
  ResolvedFile,  ///< a path Host::resolve() returned for a tree: a link at the end refused (O_NOFOLLOW)
};

/// The one reader of host files in snapshot/: opens with O_NONBLOCK (a FIFO never blocks the
/// open), fstat()s the open descriptor and reads only a regular file, at most kMaxReadFile bytes (counted while reading: /proc files report size 0).
/// Absent (ENOENT, ENOTDIR): text and refused both empty. Anything else not read: `refused` says why.
FileRead read_regular_file(const std::filesystem::path& p, ReadAs how = ReadAs::HostFile);

/// The whole file as bytes, or nullopt when it is absent or read_regular_file() refuses it.
inline std::optional<std::string> read_text(const std::filesystem::path& p) { return read_regular_file(p).text; }

/// x86-64 psABI level number of "x86_64_v1".."x86_64_v4"; 0 for any other name (aarch64, "").
inline int x86_level_number(std::string_view level) {
  if (level.size() != 9 || !level.starts_with("x86_64_v") || level[8] < '1' || level[8] > '4') return 0;
  return level[8] - '0';
}

}  // namespace envlock::snapshot_detail
