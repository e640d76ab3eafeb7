// Work files and folders beside what envlock writes: the flock(2) convention, and the removal of
// those a killed process left (include/envlock/work_folder.hpp).
#include "envlock/work_folder.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace envlock {
namespace fs = std::filesystem;

bool remove_if_abandoned(const fs::path& path, const AbandonedRule& rule) {
  if (rule.owner > 0 && !(::kill(rule.owner, 0) != 0 && errno == ESRCH)) return false;  // still running (or not ours to ask)
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (rule.folder ? O_DIRECTORY : 0));
  if (fd < 0) return false;
  bool removed = false;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && (rule.folder ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) &&
      st.st_mtime + rule.min_age.count() <= ::time(nullptr) && ::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    std::error_code ec;
    if (rule.folder) {
      fs::remove_all(path, ec);
    } else {
      fs::remove(path, ec);
    }
    removed = !ec;
  }
  ::close(fd);
  return removed;
}

namespace {

// The process id in `<stem><digits>[-<digits>]`, or 0 when `name` is not such a name.
pid_t owner_in_name(const std::string& name, const std::string& stem) {
  if (!name.starts_with(stem)) return 0;
  std::string_view rest = std::string_view(name).substr(stem.size());
  const auto dash = rest.find('-');
  const std::string_view pid = rest.substr(0, dash);
  const auto digits_only = [](std::string_view s) {
    return !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (!digits_only(pid) || (dash != std::string_view::npos && !digits_only(rest.substr(dash + 1)))) return 0;
  return static_cast<pid_t>(std::stol(std::string(pid)));
}

}  // namespace

void remove_abandoned_work_folders(const fs::path& dir, const std::string& stem) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const pid_t owner = owner_in_name(it->path().filename().string(), stem);
    if (owner > 0 && owner != ::getpid()) remove_if_abandoned(it->path(), {.folder = true, .owner = owner});
  }
}

Result<WorkFolder> WorkFolder::create(const fs::path& dir, const std::string& stem) {
  remove_abandoned_work_folders(dir, stem);
  std::error_code ec;
  static std::atomic<unsigned> made{0};
  const unsigned n = made++;
  const fs::path path = dir / (stem + std::to_string(::getpid()) + (n == 0 ? std::string() : "-" + std::to_string(n)));
  fs::remove_all(path, ec);  // this process id's: an earlier process of the same id is gone
  if (::mkdir(path.c_str(), 0700) != 0) {
    return Error{ErrorKind::Io, path.string(), std::string("cannot create a work folder: ") + std::strerror(errno), "",
                 "check that the folder exists and is writable"};
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    fs::remove_all(path, ec);
    return Error{ErrorKind::Io, path.string(), std::string("cannot open the work folder: ") + std::strerror(err), "", ""};
  }
  while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {
  }
  return WorkFolder(path, fd);
}

WorkFolder::WorkFolder(WorkFolder&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
  other.path_.clear();
}

WorkFolder::~WorkFolder() {
  if (!path_.empty()) {
    std::error_code ec;
    fs::remove_all(path_, ec);  // under the lock: no later run takes it for abandoned meanwhile
  }
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace envlock
