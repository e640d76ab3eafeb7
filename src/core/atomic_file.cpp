// write_file_atomic (envlock/atomic_file.hpp): an unnamed temporary file (O_TMPFILE) in the
// target's directory, fsync, a name given only for the rename, fsync the directory; where the
// filesystem has no O_TMPFILE (or /proc is not mounted), a named temporary file.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>

#include "envlock/atomic_file.hpp"
#include "envlock/paths.hpp"
#include "envlock/work_folder.hpp"

namespace envlock {
namespace {

Error io_error(const std::filesystem::path& path, const std::string& what, int err) {
  return Error{ErrorKind::Io, path.string(), what + ": " + std::strerror(err), "",
               err == EFBIG ? "a file-size limit is set (`ulimit -f`): raise it and retry"
                            : "check that the directory exists and is writable and that the disk has space"};
}

/// Removes the temporary files of earlier writes of `path` that a killed process left (a new-user
/// attack, session 9: `kill -9` during `envlock lock` left `.envlock.lock.tmp-*` for good). A
/// writer holds flock(2) on its temporary file until the rename, so a file whose lock is free,
/// written over a minute ago, has no writer left.
void remove_abandoned_temporaries(const std::filesystem::path& dir, const std::string& file_name) {
  const std::string stem = "." + file_name + ".tmp-";
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() != stem.size() + 6 || !name.starts_with(stem)) continue;
    remove_if_abandoned(it->path(), {.folder = false, .min_age = std::chrono::seconds(61)});
  }
}

/// Six letters and digits, as mkstemp's XXXXXX (so remove_abandoned_temporaries() matches it).
std::string random_suffix() {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char bytes[6] = {};
  if (::getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes))
    for (auto& b : bytes) b = static_cast<unsigned char>(std::rand());
  std::string out;
  for (unsigned char b : bytes) out += kChars[b % (sizeof kChars - 1)];
  return out;
}

bool write_all(int fd, std::string_view content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

void sync_folder(const std::filesystem::path& dir) {
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: some filesystems refuse fsync on directories
    ::close(dfd);
  }
}

/// The write through an unnamed file (open(2) O_TMPFILE): a process killed before the rename
/// leaves nothing behind, as the file has no name until linkat(2) gives it one just before the
/// rename (attack 20, L1: `kill -9` of `envlock lock` left `.envlock.lock.tmp-*` files).
/// Returns nullopt when this filesystem or sandbox cannot (no O_TMPFILE, no /proc), with nothing
/// written, so the caller falls back to a named temporary file.
std::optional<Status> write_through_unnamed_file(const std::filesystem::path& dir, const std::filesystem::path& path,
                                                 std::string_view content, mode_t mode, bool sync) {
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
  if (fd < 0) return std::nullopt;  // EOPNOTSUPP, EISDIR (kernel without it), ...
  auto fail = [&](const std::string& what) -> Status {
    const int err = errno;
    ::close(fd);
    return io_error(path, what, err);
  };
  if (::fchmod(fd, mode) != 0) return fail("cannot set the mode of the temporary file");  // past the umask
  if (!write_all(fd, content)) return fail("cannot write");
  if (sync && ::fsync(fd) != 0) return fail("cannot flush to disk");
  // A name beside the target, for the rename only: linkat fails with EEXIST rather than replace.
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  std::string name;
  for (int attempt = 0; attempt < 16; ++attempt) {
    name = (dir / ("." + path.filename().string() + ".tmp-" + random_suffix())).string();
    if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) break;
    if (errno != EEXIST) {
      ::close(fd);
      return std::nullopt;  // no /proc in this sandbox
    }
    name.clear();
  }
  ::close(fd);
  if (name.empty()) return io_error(path, "cannot name the temporary file beside it", EEXIST);
  if (::rename(name.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(name.c_str());
    return io_error(path, "cannot rename the temporary file into place", err);
  }
  if (sync) sync_folder(dir);
  return ok_status();
}

}  // namespace

Status write_file_atomic(const std::filesystem::path& output, std::string_view content,
                         const AtomicWriteOptions& options) {
  std::filesystem::path path = output;
  if (options.follow_symlink) {
    auto target = output_file_target(output);
    if (!target) return target.error();
    path = std::move(*target);
  }
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  remove_abandoned_temporaries(dir, path.filename().string());
  // The mode asked for; else that of the file being replaced; new files get 0644.
  struct stat st {};
  const mode_t mode = options.mode ? (*options.mode & 07777)
                      : (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ? (st.st_mode & 07777)
                                                                                  : 0644;
  if (auto done = write_through_unnamed_file(dir, path, content, mode, options.sync)) return *done;
  const bool sync = options.sync;
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return io_error(path, "cannot create a temporary file beside it", errno);
  (void)::flock(fd, LOCK_EX);  // held until close: marks the file as being written
  auto fail = [&](const std::string& what) -> Status {
    int err = errno;
    ::close(fd);
    ::unlink(tmpl.c_str());
    return io_error(path, what, err);
  };
  if (::fchmod(fd, mode) != 0) return fail("cannot set the mode of the temporary file");  // mkstemp makes 0600
  if (!write_all(fd, content)) return fail("cannot write");
  if (sync && ::fsync(fd) != 0) return fail("cannot flush to disk");
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmpl.c_str());
    return io_error(path, "cannot close the temporary file", err);
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmpl.c_str());
    return io_error(path, "cannot rename the temporary file into place", err);
  }
  if (sync) sync_folder(dir);
  return ok_status();
}

}  // namespace envlock
