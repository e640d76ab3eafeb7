// The one child-process runner (envlock/process.hpp).
#include "envlock/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>

extern char** environ;

namespace envlock {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long a pipe may stay quiet after the child exited before reading stops, and the longest
// poll while a stop request or a deadline without a pidfd must be looked at.
constexpr milliseconds kQuiet{100};

// InterruptScope's state: the signal noted (and whether the terminal sent it), the scopes alive
// and the handlers they replaced.
volatile std::sig_atomic_t g_interrupt = 0;
volatile std::sig_atomic_t g_from_terminal = 0;
std::mutex g_scopes_mutex;
int g_scopes = 0;
struct sigaction g_old_int {}, g_old_term {}, g_old_hup {};

void note_interrupt(int sig, siginfo_t* info, void*) {
  g_interrupt = sig;
  g_from_terminal = info != nullptr && info->si_code == SI_KERNEL ? 1 : 0;
}

// Interrupts::Relay's state: the signals noted and not yet passed on (bit N for signal N),
// whether the child shares envlock's process group, and the dispositions the relay replaced.
constexpr int kRelayed[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,   SIGUSR1, SIGUSR2,  SIGALRM,
                            SIGVTALRM, SIGPROF, SIGXCPU, SIGSTKFLT, SIGIO,   SIGPWR};
constexpr int kRelayedCount = static_cast<int>(sizeof kRelayed / sizeof kRelayed[0]);
std::atomic<std::uint32_t> g_relay_pending{0};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "the relay's handler must be async-signal-safe");
volatile std::sig_atomic_t g_relay_same_group = 0;

void note_relayed(int sig, siginfo_t* info, void*) {
  // The terminal's Ctrl-C / Ctrl-\ went to the whole foreground group: a child in it has it.
  const bool from_terminal = info != nullptr && info->si_code == SI_KERNEL && (sig == SIGINT || sig == SIGQUIT);
  if (from_terminal && g_relay_same_group != 0) return;
  if (sig > 0 && sig < 32) g_relay_pending.fetch_or(1u << sig);
}

// Installs the relay's handlers (Interrupts::Relay) for its lifetime; signals envlock ignores
// are left ignored. Handlers are reset to the default at exec, so the child starts with them.
class RelayScope {
 public:
  explicit RelayScope(ProcessGroup group) {
    g_relay_pending = 0;
    g_relay_same_group = group == ProcessGroup::Inherit ? 1 : 0;
    struct sigaction sa {};
    sa.sa_sigaction = note_relayed;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO;  // no SA_RESTART: poll returns EINTR and passes the signal on at once
    for (int i = 0; i < kRelayedCount; ++i) {
      installed_[i] = ::sigaction(kRelayed[i], nullptr, &old_[i]) == 0 && old_[i].sa_handler != SIG_IGN &&
                      ::sigaction(kRelayed[i], &sa, nullptr) == 0;
    }
  }
  ~RelayScope() {
    for (int i = 0; i < kRelayedCount; ++i)
      if (installed_[i]) ::sigaction(kRelayed[i], &old_[i], nullptr);
  }
  RelayScope(const RelayScope&) = delete;
  RelayScope& operator=(const RelayScope&) = delete;

 private:
  struct sigaction old_[kRelayedCount] {};
  bool installed_[kRelayedCount] = {};
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// A pidfd (Linux >= 5.3) becomes readable when the child exits: poll(2) then wakes at once
// instead of at the next 100 ms slice. -1 where the kernel has none (the slices remain).
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// The read, deadline, stop, kill and reap loop both run_process and run_function end in.
// `out_fd`/`err_fd` are the read ends of the captured pipes (-1 when not captured); they are
// closed here.
ChildResult wait_child(pid_t pid, int out_fd, int err_fd, ProcessGroup group, const WaitOptions& w) {
  ChildResult r;
  // A SIGINT/SIGTERM/SIGHUP meanwhile is noted and passed on (below), not fatal, until the child is reaped.
  const bool forwarding = !w.stop && w.interrupts == Interrupts::Forward;
  std::optional<InterruptScope> interrupts;
  if (forwarding) interrupts.emplace();
  const bool relaying = !w.stop && w.interrupts == Interrupts::Relay;
  auto relay = [&](bool exited) {
    if (!relaying) return;
    const std::uint32_t pending = g_relay_pending.exchange(0);
    if (pending == 0 || exited) return;
    for (const int sig : kRelayed) {
      if ((pending & (1u << sig)) == 0) continue;
      r.forwarded = sig;
      ::kill(group == ProcessGroup::Own ? -pid : pid, sig);
    }
  };
  auto forward = [&](bool exited) {
    const int sig = InterruptScope::received();
    if (!forwarding || sig == 0 || r.forwarded != 0 || exited) return;
    r.forwarded = sig;
    // A child in envlock's group had the terminal's Ctrl-C already; a second one may cut short
    // the cleanup of a child that handles the first.
    if (group == ProcessGroup::Own) ::kill(-pid, sig);
    else if (!InterruptScope::received_from_terminal()) ::kill(pid, sig);
  };
  int pidfd = open_pidfd(pid);
  const bool has_deadline = w.timeout.count() > 0;
  const auto deadline = Clock::now() + w.timeout;
  bool exited = false, terminated = false;
  int status = 0;
  auto keep = [&](std::string& into, const std::function<void(std::string_view)>& sink, std::string_view chunk) {
    if (sink) {
      sink(chunk);
      return;
    }
    if (w.capture_limit == 0 || w.over_limit == OverLimit::Stop || into.size() < w.capture_limit) into.append(chunk);
    if (w.capture_limit != 0 && w.over_limit == OverLimit::Stop && into.size() > w.capture_limit) r.overflowed = true;
  };
  char buf[65536];
  for (;;) {
    if (!exited && ::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      close_fd(pidfd);
    }
    if (w.stop && w.stop()) {
      if (w.on_stop == OnStop::Kill) {
        r.stopped = true;
        break;
      }
      if (!terminated && !exited) ::kill(pid, SIGTERM);
      terminated = true;
    }
    forward(exited);
    relay(exited);
    const auto now = Clock::now();
    if (has_deadline && now >= deadline) {
      r.timed_out = !exited;  // past the deadline a background child's output is not waited for either
      break;
    }
    const bool reading = out_fd >= 0 || err_fd >= 0;
    if (!reading && exited) break;
    if (!reading && !has_deadline && !forwarding && !relaying) {
      // Nothing to read and no deadline: block in waitpid; a signal (EINTR) looks at `stop`.
      if (::waitpid(pid, &status, 0) == pid) {
        exited = true;
        close_fd(pidfd);
      } else if (errno != EINTR) {
        break;
      }
      continue;
    }
    // Unbounded only when end of file or the pidfd is sure to wake the poll and nothing else
    // needs a look meanwhile.
    milliseconds slice = exited || w.stop || forwarding || relaying || pidfd < 0 ? kQuiet : milliseconds(-1);
    if (has_deadline) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - now) + milliseconds(1);
      slice = slice.count() < 0 ? left : std::min(slice, left);
    }
    pollfd fds[3] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {exited ? -1 : pidfd, POLLIN, 0}};
    const int ready = ::poll(fds, 3, static_cast<int>(slice.count()));
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (ready == 0) {
      if (exited) break;  // the child is gone and a background child holds the pipes: stop reading
      continue;
    }
    for (int i = 0; i < 2; ++i) {
      int& fd = i == 0 ? out_fd : err_fd;
      if (fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        const std::string_view chunk(buf, static_cast<std::size_t>(n));
        keep(i == 0 ? r.out : r.err, i == 0 ? w.on_out : w.on_err, chunk);
        if (i == 0 && !w.on_out && !r.overflowed && w.finished && w.finished(r.out)) r.finished = true;
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close_fd(fd);
      }
    }
    if (r.overflowed || r.finished) break;
  }
  close_fd(out_fd);
  close_fd(err_fd);
  close_fd(pidfd);
  const bool killed = r.timed_out || r.stopped || r.overflowed || r.finished;
  if (killed) {
    if (group == ProcessGroup::Own) ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
  if (!exited) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (group == ProcessGroup::Own && w.strays == Strays::Kill) ::kill(-pid, SIGKILL);
  if (!killed) {
    if (WIFEXITED(status)) r.exit_status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  }
  // No caller's scope takes the signal: it ends envlock now, as it would have without the child.
  if (interrupts && interrupts->leave() && InterruptScope::received() != 0) ::raise(InterruptScope::received());
  return r;
}

ChildResult start_failed(const char* step, int err) {
  ChildResult r;
  r.start_error = StartError{step, err};
  return r;
}

// A pipe for one captured stream: {read end, write end}, both close-on-exec (the child's copy
// is made by dup2, which clears the flag), so no other child started meanwhile inherits them.
bool open_pipe(int fds[2]) { return ::pipe2(fds, O_CLOEXEC) == 0; }

// posix_spawn's work done by hand after fork(2), for SpawnOptions::parent_death_signal, which
// posix_spawn cannot set (prctl PR_SET_PDEATHSIG). Only async-signal-safe calls in the child; an
// exec that fails sends its errno through a close-on-exec pipe. Returns the child's pid, or
// -errno.
pid_t fork_exec(const SpawnOptions& spawn, int out_pipe, int err_pipe, char* const* argv, char* const* env) {
  int report[2];
  if (!open_pipe(report)) return -errno;
  const pid_t parent = ::getpid();
  const std::string dir = spawn.working_directory.string();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(report[0]);
    ::close(report[1]);
    return -e;
  }
  if (pid == 0) {
    auto fail = [&](int e) {
      (void)!::write(report[1], &e, sizeof e);
      ::_exit(127);
    };
    if (::prctl(PR_SET_PDEATHSIG, spawn.parent_death_signal) != 0) fail(errno);
    if (::getppid() != parent) ::raise(spawn.parent_death_signal);  // envlock is already gone
    if (spawn.group == ProcessGroup::Own) ::setpgid(0, 0);
    if (spawn.signals == ChildSignals::Reset) {
      for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(sig, SIG_DFL);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
    }
    if (spawn.input == ChildInput::Null) {
      const int fd = ::open("/dev/null", O_RDONLY);
      if (fd < 0 || ::dup2(fd, STDIN_FILENO) < 0) fail(errno);
    }
    auto wire = [&](int fd, ChildOutput mode, int pipe_end) {
      int from = -1;
      switch (mode) {
        case ChildOutput::Capture: from = pipe_end; break;
        case ChildOutput::Discard: from = ::open("/dev/null", O_WRONLY); break;
        case ChildOutput::ToStderr: from = STDERR_FILENO; break;
        case ChildOutput::Merge: from = STDOUT_FILENO; break;
        case ChildOutput::Inherit: return;
      }
      if (from < 0 || ::dup2(from, fd) < 0) fail(errno);
    };
    wire(STDOUT_FILENO, spawn.out, out_pipe);
    wire(STDERR_FILENO, spawn.err, err_pipe);
    if (!dir.empty() && ::chdir(dir.c_str()) != 0) fail(errno);
    if (spawn.lookup == ProgramLookup::Path) ::execvpe(argv[0], argv, env);
    else ::execve(argv[0], argv, env);
    fail(errno);
  }
  ::close(report[1]);
  int e = 0;
  ssize_t n;
  while ((n = ::read(report[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return -e;
  }
  return pid;
}

}  // namespace

InterruptScope::InterruptScope() {
  sigset_t both;
  sigemptyset(&both);
  sigaddset(&both, SIGINT);
  sigaddset(&both, SIGTERM);
  sigaddset(&both, SIGHUP);
  {
    const std::lock_guard<std::mutex> lock(g_scopes_mutex);
    if (g_scopes++ == 0) {
      g_interrupt = 0;
      g_from_terminal = 0;
      struct sigaction sa {};
      sa.sa_sigaction = note_interrupt;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_SIGINFO;  // no SA_RESTART: a blocking waitpid or poll returns EINTR and looks
      ::sigaction(SIGINT, &sa, &g_old_int);
      ::sigaction(SIGTERM, &sa, &g_old_term);
      // SIGHUP as SIGTERM (attack 30, F11: a hangup during a post-link script neither stopped
      // the script nor envlock until the script ended by itself).
      ::sigaction(SIGHUP, &sa, &g_old_hup);
      // A signal the caller ignores (a background job's SIGINT, nohup) stays ignored.
      if (g_old_int.sa_handler == SIG_IGN) ::sigaction(SIGINT, &g_old_int, nullptr);
      if (g_old_term.sa_handler == SIG_IGN) ::sigaction(SIGTERM, &g_old_term, nullptr);
      if (g_old_hup.sa_handler == SIG_IGN) ::sigaction(SIGHUP, &g_old_hup, nullptr);
    }
  }
  restore_mask_ = ::pthread_sigmask(SIG_UNBLOCK, &both, &old_mask_) == 0;
}

InterruptScope::~InterruptScope() { (void)leave(); }

bool InterruptScope::leave() {
  if (!alive_) return false;
  alive_ = false;
  // The mask first: a signal that comes now waits, blocked, for whoever blocked it.
  if (restore_mask_) ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
  const std::lock_guard<std::mutex> lock(g_scopes_mutex);
  if (--g_scopes != 0) return false;
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
  ::sigaction(SIGHUP, &g_old_hup, nullptr);
  return true;
}

int InterruptScope::received() { return static_cast<int>(g_interrupt); }

bool InterruptScope::received_from_terminal() { return g_from_terminal != 0; }

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string StartError::message() const { return step + ": " + std::strerror(error_number); }

std::string ChildResult::ending() const {
  if (start_error) return "could not be started: " + start_error->message();
  if (timed_out) return "timed out";
  if (stopped) return "was stopped";
  if (overflowed) return "wrote too much output";
  if (finished) return "finished";
  if (signal != 0) return "was killed by signal " + std::to_string(signal);
  return "exited with status " + std::to_string(exit_status);
}

ChildResult run_process(const SpawnOptions& spawn, const WaitOptions& wait) {
  if (spawn.argv.empty()) return start_failed("posix_spawn", EINVAL);
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  if (spawn.out == ChildOutput::Capture && !open_pipe(out)) return start_failed("pipe", errno);
  if (spawn.err == ChildOutput::Capture && !open_pipe(err)) {
    const int e = errno;
    close_fd(out[0]);
    close_fd(out[1]);
    return start_failed("pipe", e);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (spawn.input == ChildInput::Null) posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // stdout first, so that ToStderr is envlock's stderr and Merge is the child's new stdout.
  auto wire = [&fa](int fd, ChildOutput mode, int pipe_end) {
    switch (mode) {
      case ChildOutput::Capture: posix_spawn_file_actions_adddup2(&fa, pipe_end, fd); break;
      case ChildOutput::Discard: posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", O_WRONLY, 0); break;
      case ChildOutput::ToStderr: posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, fd); break;
      case ChildOutput::Merge: posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, fd); break;
      case ChildOutput::Inherit: break;
    }
  };
  wire(STDOUT_FILENO, spawn.out, out[1]);
  wire(STDERR_FILENO, spawn.err, err[1]);
  const std::string dir = spawn.working_directory.string();
  if (!dir.empty()) posix_spawn_file_actions_addchdir_np(&fa, dir.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  short flags = 0;
  if (spawn.group == ProcessGroup::Own) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  if (spawn.signals == ChildSignals::Reset) {
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGHUP);
    sigaddset(&defaults, SIGQUIT);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    flags |= POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  }
  posix_spawnattr_setflags(&attr, flags);

  std::vector<char*> argv, envp;
  for (const auto& a : spawn.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  if (spawn.environment) {
    for (const auto& e : *spawn.environment) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  char* const* env = spawn.environment ? envp.data() : environ;
  std::fflush(nullptr);  // what envlock printed so far comes before what the child prints
  // From before the spawn, so that no signal in between ends envlock and leaves the child alone.
  std::optional<RelayScope> relay;
  if (!wait.stop && wait.interrupts == Interrupts::Relay) relay.emplace(spawn.group);
  pid_t pid = 0;
  int rc = 0;
  if (spawn.parent_death_signal != 0) {
    pid = fork_exec(spawn, out[1], err[1], argv.data(), env);
    if (pid < 0) rc = -pid;
  } else {
    rc = spawn.lookup == ProgramLookup::Path ? ::posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), env)
                                             : ::posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), env);
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close_fd(out[1]);
  close_fd(err[1]);
  if (rc != 0) {
    close_fd(out[0]);
    close_fd(err[0]);
    return start_failed("posix_spawn", rc);
  }
  return wait_child(pid, out[0], err[0], spawn.group, wait);
}

ChildResult run_function(const std::function<void(int fd)>& body, ProcessGroup group, const WaitOptions& wait) {
  int fds[2];
  if (!open_pipe(fds)) return start_failed("pipe", errno);
  std::fflush(nullptr);  // nothing buffered is written twice, by the child too
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    close_fd(fds[0]);
    close_fd(fds[1]);
    return start_failed("fork", e);
  }
  if (pid == 0) {
    ::close(fds[0]);
    // A new process group, so that a library's helper processes die with the child on a kill.
    if (group == ProcessGroup::Own) ::setpgid(0, 0);
    // A signal passed on ends the child, whatever handler a scope in the parent had set.
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction now {};
      if (::sigaction(sig, nullptr, &now) == 0 && now.sa_handler != SIG_IGN) ::signal(sig, SIG_DFL);
    }
    body(fds[1]);
    ::close(fds[1]);
    ::_exit(0);
  }
  if (group == ProcessGroup::Own) ::setpgid(pid, pid);  // either side may win the race
  ::close(fds[1]);
  return wait_child(pid, fds[0], -1, group, wait);
}

}  // namespace envlock
