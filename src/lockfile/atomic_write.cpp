// write_file_atomic: temp file in the target's directory, fsync, rename, fsync the directory.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <string>

#include "envlock/lockfile.hpp"
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

}  // namespace

Status write_file_atomic(const std::filesystem::path& output, std::string_view content) {
  const auto target = output_file_target(output);
  if (!target) return target.error();
  const std::filesystem::path& path = *target;
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  remove_abandoned_temporaries(dir, path.filename().string());
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
  // Keep the mode of the file being replaced; new files get 0644 (mkstemp creates 0600).
  struct stat st {};
  mode_t mode = (::stat(path.c_str(), &st) == 0) ? (st.st_mode & 07777) : 0644;
  if (::fchmod(fd, mode) != 0) return fail("cannot set the mode of the temporary file");
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot write");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("cannot flush to disk");
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
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: some filesystems refuse fsync on directories
    ::close(dfd);
  }
  return ok_status();
}

}  // namespace envlock
