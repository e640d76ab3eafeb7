// read_regular_file: the one reader of host files in snapshot/ (text_util.hpp). The seam capture
// reads the host through is envlock/host.hpp's Host (src/host/host.cpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "text_util.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

// What a file of this mode is, for a refusal: "a FIFO", "a character device", ...
const char* file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

}  // namespace

namespace snapshot_detail {

FileRead read_regular_file(const fs::path& p, ReadAs how) {
  FileRead r;
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (how == ReadAs::ResolvedFile ? O_NOFOLLOW : 0);
  const int fd = ::open(p.c_str(), flags);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return r;
    r.refused = err == ELOOP && how == ReadAs::ResolvedFile ? "is a symbolic link where a file was resolved, so it is not read"
                                                             : std::string("cannot be opened: ") + std::strerror(err);
    return r;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    r.refused = std::string("cannot be examined: ") + std::strerror(errno);
    ::close(fd);
    return r;
  }
  if (!S_ISREG(st.st_mode)) {
    r.refused = std::string("is ") + file_kind(st.st_mode) + ", not a regular file, so it is not read";
    ::close(fd);
    return r;
  }
  const std::string too_large = "is larger than " + std::to_string(kMaxReadFile >> 20) + " MiB, so it is not read";
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxReadFile) {
    r.refused = too_large;
    ::close(fd);
    return r;
  }
  std::string text;
  if (st.st_size > 0) text.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.refused = std::string("cannot be read: ") + std::strerror(errno);
      ::close(fd);
      return r;
    }
    if (n == 0) break;
    // /proc files report size 0 and a file may grow while read: the cap is counted here too.
    if (text.size() + static_cast<std::size_t>(n) > kMaxReadFile) {
      r.refused = too_large;
      ::close(fd);
      return r;
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  r.text = std::move(text);
  return r;
}

}  // namespace snapshot_detail

}  // namespace envlock
