#pragma once
// Small POSIX file helpers for the installer (private to src/install). Every failure is an
// ErrorKind::Io error naming the file and the system's reason.
#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "envlock/result.hpp"

namespace envlock::detail {

/// ErrorKind::Io for `path`: "<what>: <strerror(err)>", with a hint for ENOSPC/EACCES/EROFS.
Error io_error(const std::filesystem::path& path, const std::string& what, int err);

/// sha256 (lower-case hex) of bytes in memory / of a file (errors name the file).
std::string sha256_bytes(std::string_view data);
Result<std::string> sha256_file(const std::filesystem::path& path);

/// Reads a whole file (bounded: files over 4 GiB are refused).
Result<std::string> read_file(const std::filesystem::path& path);

/// Whether the files write_new_file() and copy_regular_file() write are collected for fsync:
/// yes unless ENVLOCK_INSTALL_SYNC=none (read once per process).
bool fsync_written_files();

/// While alive, collects the paths write_new_file() and copy_regular_file() write on this thread;
/// sync() fsyncs them from `threads` threads at once (concurrent fsyncs share journal commits,
/// where one after the other each waits for its own) and forgets them.
class WrittenFiles {
 public:
  WrittenFiles();
  ~WrittenFiles();
  WrittenFiles(const WrittenFiles&) = delete;
  WrittenFiles& operator=(const WrittenFiles&) = delete;
  Status sync(std::size_t threads);

  /// The collection the calling thread writes into (null: none).
  static std::vector<std::filesystem::path>* current();
  /// While alive, what this thread writes goes into `target` (a collection of another thread,
  /// from current(); null: none) — for worker threads of an install.
  class Join {
   public:
    explicit Join(std::vector<std::filesystem::path>* target);
    ~Join();
    Join(const Join&) = delete;
    Join& operator=(const Join&) = delete;

   private:
    std::vector<std::filesystem::path>* previous_;
  };

 private:
  std::vector<std::filesystem::path> paths_;
  std::vector<std::filesystem::path>* previous_;
};

/// Creates `path` (must not exist) with `data` and permission bits `mode` (collected, see above).
Status write_new_file(const std::filesystem::path& path, std::string_view data, mode_t mode);

/// Writes `data` to `path` through a temporary sibling and rename(2): readers see the old or the
/// new content, never a part.
Status write_file_atomic(const std::filesystem::path& path, std::string_view data, mode_t mode);

/// Copies the bytes of regular file `from` into new file `to` with permission bits `mode`
/// (copy_file_range, falling back to read/write); collected for fsync (see WrittenFiles).
Status copy_regular_file(const std::filesystem::path& from, const std::filesystem::path& to,
                         mode_t mode);

/// mkdir -p that reports errors as values.
Status make_dirs(const std::filesystem::path& path);

/// rm -rf that reports errors as values; a missing path is fine.
Status remove_tree(const std::filesystem::path& path);

}  // namespace envlock::detail
