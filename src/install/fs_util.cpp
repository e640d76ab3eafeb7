// POSIX file helpers for the installer.
#include "fs_util.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>
#include <cstring>
#include <random>
#include <system_error>

#include "envlock/hash.hpp"

namespace envlock::detail {

Error io_error(const std::filesystem::path& path, const std::string& what, int err) {
  Error e{ErrorKind::Io, path.string(), what + ": " + std::strerror(err), "", ""};
  if (err == ENOSPC || err == EDQUOT) {
    e.hint = "free some space on that filesystem (or choose a prefix on another one) and retry";
  } else if (err == EACCES || err == EPERM || err == EROFS) {
    e.hint = "check the permissions of that path, or choose a prefix you can write to";
  }
  return e;
}

std::string sha256_bytes(std::string_view data) { return hash_bytes(data, HashAlgorithm::Sha256); }

Result<std::string> sha256_file(const std::filesystem::path& path) {
  return hash_file(path, HashAlgorithm::Sha256);
}

Result<std::string> read_file(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error(path, "cannot stat", err);
  }
  if (static_cast<unsigned long long>(st.st_size) > (4ULL << 30)) {
    ::close(fd);
    return Error{ErrorKind::Io, path.string(), "file larger than 4 GiB cannot be relocated", "", ""};
  }
  std::string data;
  data.resize(static_cast<std::size_t>(st.st_size));
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error(path, "cannot read", err);
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  data.resize(done);
  ::close(fd);
  return data;
}

bool fsync_written_files() {
  static const bool enabled = [] {
    const char* mode = std::getenv("ENVLOCK_INSTALL_SYNC");
    return mode == nullptr || std::string_view(mode) != "none";
  }();
  return enabled;
}

namespace {
thread_local std::vector<std::filesystem::path>* t_written = nullptr;
std::mutex g_written_mu;  // worker threads (WrittenFiles::Join) share one collection

void note_written(const std::filesystem::path& path) {
  if (t_written == nullptr || !fsync_written_files()) return;
  std::lock_guard<std::mutex> lock(g_written_mu);
  t_written->push_back(path);
}
}  // namespace

WrittenFiles::WrittenFiles() : previous_(t_written) { t_written = &paths_; }
WrittenFiles::~WrittenFiles() { t_written = previous_; }
std::vector<std::filesystem::path>* WrittenFiles::current() { return t_written; }
WrittenFiles::Join::Join(std::vector<std::filesystem::path>* target) : previous_(t_written) { t_written = target; }
WrittenFiles::Join::~Join() { t_written = previous_; }

Status WrittenFiles::sync(std::size_t threads) {
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  Status result = ok_status();
  auto worker = [&] {
    for (std::size_t i; (i = next++) < paths_.size();) {
      const int fd = ::open(paths_[i].c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
      int err = fd < 0 ? errno : 0;
      if (fd >= 0) {
        if (::fsync(fd) != 0) err = errno;
        ::close(fd);
      }
      if (err != 0 && err != ENOENT) {  // a post-link-free stage: nothing deletes files; ENOENT is benign
        std::lock_guard<std::mutex> lock(mu);
        if (result.ok()) result = io_error(paths_[i], "cannot fsync", err);
      }
    }
  };
  threads = std::max<std::size_t>(1, std::min(threads, paths_.size()));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  paths_.clear();
  return result;
}

namespace {
Status write_all(int fd, const std::filesystem::path& path, std::string_view data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error(path, "cannot write", errno);
    done += static_cast<std::size_t>(n);
  }
  return ok_status();
}
}  // namespace

Status write_new_file(const std::filesystem::path& path, std::string_view data, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return io_error(path, "cannot create", errno);
  Status st = write_all(fd, path, data);
  if (st.ok() && ::fchmod(fd, mode & 07777) != 0) st = io_error(path, "cannot chmod", errno);
  if (::close(fd) != 0 && st.ok()) st = io_error(path, "cannot close", errno);
  if (st.ok()) note_written(path);
  return st;
}

Status write_file_atomic(const std::filesystem::path& path, std::string_view data, mode_t mode) {
  std::random_device rd;
  const std::filesystem::path tmp =
      path.parent_path() / ("." + path.filename().string() + ".tmp-" + std::to_string(rd()));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return io_error(tmp, "cannot create", errno);
  Status st = write_all(fd, tmp, data);
  if (st.ok() && ::fchmod(fd, mode & 07777) != 0) st = io_error(tmp, "cannot chmod", errno);
  if (st.ok() && ::fsync(fd) != 0) st = io_error(tmp, "cannot fsync", errno);
  if (::close(fd) != 0 && st.ok()) st = io_error(tmp, "cannot close", errno);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = io_error(path, "cannot rename into place", errno);
  if (!st.ok()) ::unlink(tmp.c_str());
  return st;
}

Status copy_regular_file(const std::filesystem::path& from, const std::filesystem::path& to,
                         mode_t mode) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return io_error(from, "cannot open", errno);
  const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (out < 0) {
    const int err = errno;
    ::close(in);
    return io_error(to, "cannot create", err);
  }
  Status st = ok_status();
  bool fallback = false;
  for (;;) {
    const ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, 1 << 30, 0);
    if (n > 0) continue;
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) {
      fallback = true;
      break;
    }
    st = io_error(to, "cannot copy from " + from.string(), errno);
    break;
  }
  if (st.ok() && fallback) {
    char buffer[1 << 16];
    for (;;) {
      const ssize_t n = ::read(in, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        st = io_error(from, "cannot read", errno);
        break;
      }
      if (n == 0) break;
      st = write_all(out, to, std::string_view(buffer, static_cast<std::size_t>(n)));
      if (!st.ok()) break;
    }
  }
  if (st.ok() && ::fchmod(out, mode & 07777) != 0) st = io_error(to, "cannot chmod", errno);
  ::close(in);
  if (::close(out) != 0 && st.ok()) st = io_error(to, "cannot close", errno);
  if (st.ok()) note_written(to);
  return st;
}

Status make_dirs(const std::filesystem::path& path) {
  // mkdir(2) first: the parent usually exists, so one call does it (std::filesystem's
  // create_directories stats every level first). ENOENT: make the parent, then this one.
  if (path.empty() || ::mkdir(path.c_str(), 0777) == 0) return ok_status();
  int err = errno;
  if (err == ENOENT && path.has_relative_path() && path.parent_path() != path) {
    if (auto st = make_dirs(path.parent_path()); !st) return st;
    if (::mkdir(path.c_str(), 0777) == 0) return ok_status();
    err = errno;
  }
  if (err == EEXIST) {  // fine when it is a folder (or a link to one), as create_directories has it
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return ok_status();
    err = ENOTDIR;
  }
  return io_error(path, "cannot create directory", err);
}

Status remove_tree(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return io_error(path, "cannot remove", ec.value());
  return ok_status();
}

}  // namespace envlock::detail
