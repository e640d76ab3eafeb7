// The CUDA driver's supported CUDA version, asked of libcuda.so.1 at run time.
//
// The vendor library is loaded in a forked child: a missing, half-installed or crashing driver
// can only kill the child, never envlock. The child writes the answer to a pipe; the parent waits
// at most `timeout_ms` and kills the child after that.
#include <dlfcn.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "envlock/virtual_packages.hpp"

namespace envlock {
namespace {

using CuInitFn = int (*)(unsigned int);
using CuDriverGetVersionFn = int (*)(int*);

// Runs in the child: returns the driver version integer (e.g. 12040), or -1.
int query_in_child(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return -1;
  auto cu_init = reinterpret_cast<CuInitFn>(dlsym(handle, "cuInit"));
  auto get_version = reinterpret_cast<CuDriverGetVersionFn>(dlsym(handle, "cuDriverGetVersion"));
  if (cu_init == nullptr || get_version == nullptr) return -1;
  if (cu_init(0) != 0) return -1;
  int version = 0;
  if (get_version(&version) != 0 || version <= 0) return -1;
  return version;
}

}  // namespace

std::optional<std::string> detect_cuda_driver_version(const std::string& library, int timeout_ms) {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    close(fds[0]);
    const int version = query_in_child(library);
    const ssize_t n = write(fds[1], &version, sizeof version);
    _exit(n == static_cast<ssize_t>(sizeof version) ? 0 : 1);
  }
  close(fds[1]);
  int version = -1;
  pollfd pfd{fds[0], POLLIN, 0};
  const int ready = poll(&pfd, 1, timeout_ms);
  bool got = false;
  if (ready > 0) got = read(fds[0], &version, sizeof version) == static_cast<ssize_t>(sizeof version);
  close(fds[0]);
  if (!got) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!got || version <= 0) return std::nullopt;
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

}  // namespace envlock
