// write_file_atomic: temp file in the target's directory, fsync, rename, fsync the directory.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "envlock/lockfile.hpp"
#include "envlock/paths.hpp"

namespace envlock {
namespace {

Error io_error(const std::filesystem::path& path, const std::string& what, int err) {
  return Error{ErrorKind::Io, path.string(), what + ": " + std::strerror(err), "",
               "check that the directory exists and is writable and that the disk has space"};
}

}  // namespace

Status write_file_atomic(const std::filesystem::path& output, std::string_view content) {
  const auto target = output_file_target(output);
  if (!target) return target.error();
  const std::filesystem::path& path = *target;
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return io_error(path, "cannot create a temporary file beside it", errno);
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
