// posix_spawn(3) for the activate module: capture a child's stdout, or run it in the foreground.
#include "spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace envlock::activate_detail {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

Ended wait_for(pid_t pid) {
  Ended e;
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) return e;
  }
  if (WIFEXITED(st)) e.status = WEXITSTATUS(st);
  else if (WIFSIGNALED(st)) e.signal = WTERMSIG(st);
  return e;
}

}  // namespace

Ended capture_stdout(const std::string& program, const std::vector<std::string>& argv,
                     const std::vector<std::string>& env, std::string& out) {
  Ended e;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    e.spawn_errno = errno;
    return e;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  auto args = c_strings(argv);
  auto envp = c_strings(env);
  pid_t pid = 0;
  const int rc = program.find('/') == std::string::npos
                     ? ::posix_spawnp(&pid, program.c_str(), &fa, nullptr, args.data(), envp.data())
                     : ::posix_spawn(&pid, program.c_str(), &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    e.spawn_errno = rc;
    return e;
  }
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  ::close(fds[0]);
  return wait_for(pid);
}

Ended run_foreground(const std::filesystem::path& path, const std::vector<std::string>& argv,
                     const std::vector<std::string>& env) {
  Ended e;
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults, empty;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGQUIT);
  sigemptyset(&empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  // Ignored before the child starts, so a Ctrl-C at any moment reaches the child only.
  struct sigaction ignore {}, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  auto args = c_strings(argv);
  auto envp = c_strings(env);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, path.c_str(), nullptr, &attr, args.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  if (rc != 0) e.spawn_errno = rc;
  else e = wait_for(pid);
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  return e;
}

}  // namespace envlock::activate_detail
