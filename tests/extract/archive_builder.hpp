#pragma once
// Builds small tar.bz2 / .conda archives in tests (libarchive's writer), including hostile ones
// no well-behaved tool would make: `..` paths, escaping symlinks, device files.
#include <sys/types.h>

#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

namespace envlock::testing {

struct TestEntry {
  enum class Kind { File, Dir, Symlink, Hardlink, CharDevice, Fifo };
  Kind kind = Kind::File;
  std::string path;
  std::string data;    ///< file content
  std::string target;  ///< symlink/hardlink target
  mode_t perm = 0644;
  std::time_t mtime = 1700000000;
};

TestEntry file(std::string path, std::string data, mode_t perm = 0644);
TestEntry dir(std::string path);
TestEntry symlink(std::string path, std::string target);
TestEntry hardlink(std::string path, std::string target);

/// A tar compressed with "bzip2" or "zstd", in memory.
std::string make_tar(const std::vector<TestEntry>& entries, const std::string& compression);
/// Writes a .tar.bz2 package.
void write_tar_bz2(const std::filesystem::path& path, const std::vector<TestEntry>& entries);
/// Writes a .conda package: a stored ZIP of metadata.json, info-<stem>.tar.zst, pkg-<stem>.tar.zst.
void write_conda(const std::filesystem::path& path, const std::vector<TestEntry>& info,
                 const std::vector<TestEntry>& pkg);

}  // namespace envlock::testing
