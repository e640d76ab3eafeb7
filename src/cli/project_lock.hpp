#pragma once
// ProjectLock: the turn of one command at a time that writes a project's lockfile (and, for add
// and rm, its manifest): `lock`, `create`/`run`/`shell-hook` when they lock, `add`, `rm`.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <iostream>
#include <string>

#include "registry.hpp"

namespace envlock::cli {

/// While alive, holds flock(2) on the manifest's folder, so two commands that write the project's
/// lockfile take turns, each reading what the other wrote (attack 21, F10: `envlock lock` beside
/// an `add` left a lockfile for the old manifest). A folder is locked, not a file beside the
/// manifest: nothing is created in the project. Best effort: a folder that cannot be opened is
/// not locked. Says once on stderr that it waits, naming the folder.
class ProjectLock {
 public:
  explicit ProjectLock(const std::filesystem::path& manifest) {
    std::error_code ec;
    std::filesystem::path folder = std::filesystem::absolute(manifest, ec).parent_path();
    if (folder.empty()) folder = ".";
    fd_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) return;
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    std::cerr << terminal_text("waiting for another envlock command writing the lockfile in " + folder.string()) << "\n";
    while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~ProjectLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  ProjectLock(const ProjectLock&) = delete;
  ProjectLock& operator=(const ProjectLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace envlock::cli
