#pragma once
// envlock/work_folder.hpp — files and folders envlock works in beside what it writes, and how a
// later run removes those a killed process left.
//
// The convention (the lockfile writer's temporary files, deploy's staging folders): whoever makes
// one holds flock(2) on it until it is gone. The kernel releases a killed process's locks, so an
// entry whose lock is free has no owner left — unless its owner has not locked it yet, which the
// owner's process id in the name (or the entry's age) tells.

#include <chrono>
#include <filesystem>
#include <string>
#include <sys/types.h>

#include "envlock/result.hpp"

namespace envlock {

/// What makes an entry abandoned for remove_if_abandoned().
struct AbandonedRule {
  bool folder = false;                        ///< a folder (removed with what it holds); else a regular file
  std::chrono::seconds min_age{0};            ///< its mtime is at least this old
  pid_t owner = 0;                            ///< when non-zero: this process id is not running (kill(2) gives ESRCH)
};

/// Removes `path` when it is a file or folder as `rule` says (not a link: it is opened with
/// O_NOFOLLOW), no process holds flock(2) on it, and the rule's age and owner tests pass; the lock
/// is held while it is removed. Returns whether it was removed. Errors are not reported: an entry
/// that cannot be opened, locked or removed is left for a person (or a later run).
bool remove_if_abandoned(const std::filesystem::path& path, const AbandonedRule& rule);

/// Removes the folders `<dir>/<stem><digits>[-<digits>]` that a killed process left: their process
/// id is not running and nobody holds their lock (a process of another pid namespace sharing the
/// folder holds its lock, so it is never taken for dead). This process's own are left alone.
void remove_abandoned_work_folders(const std::filesystem::path& dir, const std::string& stem);

/// A work folder `<dir>/<stem><pid>` (`<stem><pid>-<n>` for this process's n-th, n >= 1), e.g.
/// `.train.envlock-pip-4242` beside the prefix `train`: created empty (mode 0700), held with
/// flock(2) while this object lives, and removed with everything in it when it is destroyed.
/// Before making it, create() calls remove_abandoned_work_folders(dir, stem).
class WorkFolder {
 public:
  /// Errors: Io naming the folder when it cannot be made or opened.
  static Result<WorkFolder> create(const std::filesystem::path& dir, const std::string& stem);
  WorkFolder(WorkFolder&& other) noexcept;
  WorkFolder& operator=(WorkFolder&&) = delete;
  WorkFolder(const WorkFolder&) = delete;
  WorkFolder& operator=(const WorkFolder&) = delete;
  ~WorkFolder();
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  WorkFolder(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace envlock
