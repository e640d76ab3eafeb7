// Host: the one seam over the machine (envlock/host.hpp). Host::system() is this machine,
// Host::tree() a host tree; resolve() finds a host path under the root.
#include "envlock/host.hpp"

#include <fcntl.h>
#include <gnu/libc-version.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <system_error>

#include "envlock/probe.hpp"
#include "envlock/process.hpp"
#include "envlock/settings.hpp"
#include "envlock/virtual_packages.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

std::string join_argv(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Runs argv (found in PATH) with stdout captured, stderr discarded, stdin from /dev/null; kills
// it after `limit_ms`. Output is bounded to 64 MiB.
Result<std::string> run_command(const std::vector<std::string>& argv, int limit_ms) {
  const std::string what = join_argv(argv);
  if (argv.empty()) return Error{ErrorKind::Usage, "", "empty command", "", ""};
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.lookup = ProgramLookup::Path;
  spawn.err = ChildOutput::Discard;
  ChildResult r = run_process(spawn, WaitOptions::bounded(std::chrono::milliseconds(limit_ms), 64u << 20));
  if (r.start_error) {
    const std::string why = std::strerror(r.start_error->error_number);
    return Error{ErrorKind::Io, what, r.start_error->step == "pipe" ? why : "cannot run: " + why, "", ""};
  }
  if (r.timed_out || r.overflowed) {
    return Error{ErrorKind::Io, what, "did not finish within " + std::to_string(limit_ms / 1000) + " s (or its output was too large)", "", ""};
  }
  if (!r.succeeded()) return Error{ErrorKind::Io, what, r.ending(), "", ""};
  return std::move(r.out);
}

}  // namespace

Host Host::system() {
  Host host;
  host.root = "/";
  host.live = true;
  const Settings env = settings();
  if (!env.home.empty()) host.home_dirs.emplace_back(env.home);
  host.getenv = process_getenv;
  host.run = [](const std::vector<std::string>& argv) { return run_command(argv, 20000); };
  host.libcuda = env.libcuda;
  host.libnvml = env.libnvml;
  host.nvidia_smi = env.nvidia_smi;

  host.kernel_release = [] {
    struct utsname u {};
    return uname(&u) == 0 ? std::string(u.release) : std::string();
  };
  host.glibc_version = [] { return std::string(gnu_get_libc_version()); };
  host.microarchitecture = [] { return detect_microarchitecture(); };
  // One detection (every layout, the fallback chain) answers both questions, when first asked.
  auto facts = std::make_shared<std::optional<DriverFacts>>();
  auto detect = [facts]() -> const DriverFacts& {
    if (!*facts) {
      Host driver_host = Host::system();
      driver_host.timeout_ms = 5000;
      *facts = detect_driver(driver_host);
    }
    return **facts;
  };
  host.cuda_driver_version = [detect]() -> std::optional<std::string> {
    const DriverFacts& f = detect();
    if (f.cuda_version.empty()) return std::nullopt;
    return f.cuda_version;
  };
  host.cuda_visibility = [detect]() -> std::optional<std::string> {
    const auto hidden = hidden_devices(detect(), process_getenv("CUDA_VISIBLE_DEVICES"), process_getenv("NVIDIA_VISIBLE_DEVICES"));
    if (!hidden) return std::nullopt;
    return hidden->to_string();
  };
  return host;
}

Host Host::tree(const fs::path& root) {
  Host host;
  host.root = root;
  host.live = false;
  std::error_code ec;
  if (fs::is_directory(root / "root", ec)) host.home_dirs.emplace_back("/root");
  std::vector<fs::path> homes;
  for (fs::directory_iterator it(root / "home", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) homes.push_back(fs::path("/home") / it->path().filename());
  }
  std::sort(homes.begin(), homes.end());
  host.home_dirs.insert(host.home_dirs.end(), homes.begin(), homes.end());
  return host;
}

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

HostFileRead read_host_file_as(const fs::path& path, const HostFileOptions& options) {
  HostFileRead r;
  const int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | (options.follow_last_link ? 0 : O_NOFOLLOW);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return r;
    r.refused = err == ELOOP && !options.follow_last_link ? "is a symbolic link where a file was resolved, so it is not read"
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
  const std::size_t max = options.max_bytes;
  const std::string too_large = "is larger than " + std::to_string(max >> 20) + " MiB, so it is not read";
  if (options.refuse_larger && static_cast<std::uintmax_t>(st.st_size) > max) {
    r.refused = too_large;
    ::close(fd);
    return r;
  }
  std::string text;
  if (st.st_size > 0) text.reserve(std::min(static_cast<std::size_t>(st.st_size), max));
  char buf[65536];
  for (;;) {
    // Truncating: never more than what is left to max_bytes. Refusing: one byte past it tells.
    const std::size_t room = options.refuse_larger ? sizeof buf : std::min(sizeof buf, max - text.size());
    if (room == 0) break;
    const ssize_t n = ::read(fd, buf, room);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      r.refused = std::string("cannot be read: ") + std::strerror(errno);
      ::close(fd);
      return r;
    }
    if (n == 0) break;
    // /proc files report size 0 and a file may grow while read: the cap is counted here too.
    if (options.refuse_larger && text.size() + static_cast<std::size_t>(n) > max) {
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

std::optional<std::string> read_host_file(const fs::path& path, std::size_t max_bytes) {
  HostFileOptions options;
  options.max_bytes = max_bytes;
  return read_host_file_as(path, options).text;
}

std::optional<std::string> Host::env(const std::string& name) const { return getenv ? getenv(name) : std::nullopt; }

std::optional<fs::path> Host::resolve(const fs::path& host_path) const {
  if (live) {
    std::error_code ec;
    if (!fs::exists(host_path, ec)) return std::nullopt;
    return host_path;
  }
  // Walk component by component, resolving links against the tree's root.
  std::vector<std::string> pending;
  for (const auto& part : host_path.relative_path()) pending.push_back(part.string());
  std::reverse(pending.begin(), pending.end());
  fs::path current;  // relative to root
  int hops = 0;
  while (!pending.empty()) {
    const std::string part = pending.back();
    pending.pop_back();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      current = current.has_parent_path() ? current.parent_path() : fs::path();
      continue;
    }
    const fs::path local = root / current / part;
    std::error_code ec;
    const auto st = fs::symlink_status(local, ec);
    if (ec || !fs::exists(st)) return std::nullopt;
    if (fs::is_symlink(st)) {
      if (++hops > 40) return std::nullopt;
      const fs::path target = fs::read_symlink(local, ec);
      if (ec) return std::nullopt;
      std::vector<std::string> parts;
      for (const auto& p : target.relative_path()) parts.push_back(p.string());
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) pending.push_back(*it);
      if (target.is_absolute()) current.clear();
      continue;
    }
    current /= part;
  }
  return root / current;
}

}  // namespace envlock
