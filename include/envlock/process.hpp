#pragma once
// envlock/process.hpp — the one child-process runner. Every process envlock starts goes through
// here: a package's link scripts (install), a reference command (probe), `git show` (diff's
// REV:PATH), dpkg-query/rpm and friends (snapshot capture), nvidia-smi and the forked child that
// loads the NVIDIA vendor libraries (host), the nested `envlock install` of a reference run.
//
// A program starts with posix_spawn(3) (POSIX.1-2017; the working folder through glibc's
// posix_spawn_file_actions_addchdir_np, glibc >= 2.29), a function with fork(2) (run_function:
// the vendor-library probe, whose crash or hang must only ever take its own process with it).
// Captured output is read from pipes with poll(2) as it arrives, so a child filling one pipe
// never blocks on the other. The runner then:
//   * kills the child at the deadline (WaitOptions::timeout), on a stop request, when its output
//     passes the limit (OverLimit::Stop) or says it is complete (WaitOptions::finished); a child
//     in a process group of its own (ProcessGroup::Own) is killed with its whole group
//     (kill(-pgid, SIGKILL)), so nothing it started outlives it;
//   * stops reading once the child has exited and its pipes have been quiet for 100 ms (a
//     background child still holding them can never hang envlock), and with Strays::Kill kills
//     what is left of its group;
//   * passes SIGINT and SIGTERM that envlock receives while it waits on to the child (its whole
//     group with ProcessGroup::Own), waits for it to end, and then, unless a caller's own
//     InterruptScope takes the signal, lets it end envlock as it would have: a signal never
//     leaves a child running without its parent (conda and mamba likewise pass a Ctrl-C or a
//     SIGTERM to the script they run and wait for it before they exit);
//   * always reaps the child (waitpid(2), EINTR retried).
// No call here throws for a failure of the child or of the system calls: a child that could
// not be started is ChildResult::start_error, everything else is a field of the result.

#include <signal.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace envlock {

/// How argv[0] is found: as written (execve(2) semantics; a path), or searched in PATH when it
/// has no slash (execvp(3) semantics).
enum class ProgramLookup : bool { AsGiven, Path };

/// The child's stdin: /dev/null, or envlock's own.
enum class ChildInput : std::uint8_t { Null, Inherit };

/// Where one of the child's output streams goes.
enum class ChildOutput : std::uint8_t {
  Capture,   ///< a pipe envlock reads: ChildResult::out/err, or WaitOptions::on_out/on_err
  Discard,   ///< /dev/null
  Inherit,   ///< envlock's own stream
  Merge,     ///< stderr only: wherever stdout goes (one captured stream, in the order written)
  ToStderr,  ///< stdout only: envlock's own stderr (stdout stays free for a --json report)
};

/// Whether the child gets a process group of its own (setpgid(0, 0) before it runs), so that a
/// kill reaches everything it started. A child in envlock's group gets the terminal's Ctrl-C as
/// envlock does.
enum class ProcessGroup : bool { Inherit, Own };

/// Whether the child starts with an empty signal mask and the default dispositions of SIGINT,
/// SIGTERM, SIGHUP and SIGQUIT, whatever envlock blocks or ignores meanwhile.
enum class ChildSignals : bool { Inherit, Reset };

/// What to start and how to wire it.
struct SpawnOptions {
  std::vector<std::string> argv;  ///< the program and its arguments; must not be empty
  ProgramLookup lookup = ProgramLookup::AsGiven;
  /// The whole environment as NAME=VALUE strings; nullopt: envlock's own (environ).
  std::optional<std::vector<std::string>> environment;
  std::filesystem::path working_directory;  ///< where it runs; empty: envlock's current folder
  ChildInput input = ChildInput::Null;
  ChildOutput out = ChildOutput::Capture;  ///< Merge is not valid here
  ChildOutput err = ChildOutput::Capture;  ///< ToStderr is not valid here (use Inherit)
  ProcessGroup group = ProcessGroup::Inherit;
  ChildSignals signals = ChildSignals::Inherit;
  /// When not 0, the signal the child gets when envlock (the thread that started it) dies,
  /// SIGKILLed included (prctl PR_SET_PDEATHSIG; the child is then started by fork and exec, as
  /// posix_spawn cannot set it); 0: none, the child outlives envlock.
  int parent_death_signal = 0;
};

/// What happens to captured output past WaitOptions::capture_limit.
enum class OverLimit : bool {
  Drop,  ///< a chunk is kept only while the stream holds fewer bytes than the limit; reading goes on
  Stop,  ///< once a stream holds more than the limit the child is killed (ChildResult::overflowed)
};

/// What a stop request (WaitOptions::stop returning true) does.
enum class OnStop : bool {
  Kill,       ///< SIGKILL to the child (its group with ProcessGroup::Own); ChildResult::stopped
  Terminate,  ///< SIGTERM to the child once, and go on waiting for it to end
};

/// What a SIGINT, SIGTERM or SIGHUP that envlock receives while it waits does (when WaitOptions::stop is
/// not set; a caller with its own stop request decides itself).
enum class Interrupts : std::uint8_t {
  Forward,  ///< passed on to the child (its group with ProcessGroup::Own) once; the wait goes on
  Leave,    ///< envlock's own disposition of the signal applies, as if no child ran
  /// envlock stands in for the child, as tini and dumb-init do (`envlock run`): every signal
  /// whose default action would end envlock and that a supervisor sends to stop or tell a job
  /// (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU,
  /// SIGSTKFLT, SIGIO, SIGPWR) is passed on to the child each time it arrives, from before the
  /// child starts until it has been reaped, and never ends envlock itself; the caller reports
  /// the child's own status. A signal envlock ignores stays ignored (nohup, a background job's
  /// SIGINT), and a SIGINT/SIGQUIT sent by the terminal to the foreground group is not sent
  /// again to a child in envlock's group (ProcessGroup::Inherit), which has it already.
  /// Only with run_process; ChildResult::forwarded is the last signal passed on.
  Relay,
};

/// Whether what is left of the child's own process group is killed once the child has exited
/// (background processes it started). Only with ProcessGroup::Own.
enum class Strays : bool { Leave, Kill };

/// How to wait for a started child.
struct WaitOptions {
  std::chrono::milliseconds timeout{0};  ///< 0: no deadline
  std::size_t capture_limit = 0;         ///< bytes kept per captured stream; 0: no limit
  OverLimit over_limit = OverLimit::Drop;
  /// When set, each chunk read from stdout (stderr) goes here as it arrives, instead of into
  /// ChildResult::out (err); capture_limit does not apply to them.
  std::function<void(std::string_view)> on_out, on_err;
  /// When set, asked after each chunk kept in ChildResult::out: true means the answer is
  /// complete; the child is then killed (a helper process it started may hold the pipe for
  /// ever) and ChildResult::finished is set.
  std::function<bool(const std::string& out)> finished;
  /// When set, asked at least every 100 ms and after each signal that interrupts the wait:
  /// true asks the child to stop (on_stop).
  std::function<bool()> stop;
  OnStop on_stop = OnStop::Kill;
  Strays strays = Strays::Leave;
  Interrupts interrupts = Interrupts::Forward;

  /// A wait for a command that answers: killed at `timeout`, or once a captured stream holds
  /// more than `capture_limit` bytes (OverLimit::Stop).
  static WaitOptions bounded(std::chrono::milliseconds timeout, std::size_t capture_limit) {
    WaitOptions w;
    w.timeout = timeout;
    w.capture_limit = capture_limit;
    w.over_limit = OverLimit::Stop;
    return w;
  }
};

/// Why a child could not be started.
struct StartError {
  std::string step;  ///< the call that failed: "pipe", "posix_spawn" or "fork"
  int error_number;  ///< its errno (posix_spawn: also a failed chdir or exec in the child)
  /// "<step>: <strerror(error_number)>", e.g. "fork: Resource temporarily unavailable".
  [[nodiscard]] std::string message() const;
};

/// How a child ended and what it wrote.
struct ChildResult {
  std::optional<StartError> start_error;  ///< set when it never ran; every other field is empty
  std::string out;  ///< captured stdout (ChildOutput::Capture without on_out), bounded by capture_limit
  std::string err;  ///< captured stderr, likewise
  int exit_status = -1;     ///< the status it exited with by itself; -1 when it did not exit
  int signal = 0;           ///< the signal it died of by itself (not one the runner sent); 0 if none
  bool timed_out = false;   ///< killed at the deadline
  bool stopped = false;     ///< killed on a stop request (OnStop::Kill)
  bool overflowed = false;  ///< killed because its output passed the limit (OverLimit::Stop)
  bool finished = false;    ///< killed after WaitOptions::finished said the answer is complete
  int forwarded = 0;        ///< the signal envlock received and passed on to it (Interrupts::Forward); 0 if none

  /// True when it ran, exited by itself and with status 0.
  [[nodiscard]] bool succeeded() const { return !start_error && exit_status == 0; }
  /// How it ended, for a message: "exited with status N", "was killed by signal N", "timed
  /// out", "was stopped", "wrote too much output", "finished", or "could not be started: ...".
  [[nodiscard]] std::string ending() const;
};

/// While one is alive, SIGINT, SIGTERM and SIGHUP do not end envlock at once: the signal is noted
/// (received()), a child the runner waits for gets it passed on (Interrupts::Forward), and the
/// owner of the scope cleans up and exits 128 + the signal (130, 143, 129), as a shell reports a
/// command stopped by it. A signal envlock ignores (a background job's SIGINT, nohup) stays
/// ignored, as conda leaves it. The calling thread has the three unblocked while the scope lives, so
/// one that waited blocked (an install's swap) is noted at once. Scopes nest, also across
/// threads: the first installs the handlers, the last restores the previous ones; received()
/// is reset only when a scope starts where none is alive, and keeps its value after the scopes
/// end, for the caller to read.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  /// Ends the scope before its destructor (which then does nothing); true when it was the last
  /// one alive, so that the previous handlers are back and a signal noted was nobody else's.
  bool leave();
  /// The signal received while a scope was alive (SIGINT, SIGTERM, SIGHUP), 0 if none.
  static int received();
  /// True when the latest signal came from the terminal (Ctrl-C: the kernel sent it to the whole
  /// foreground process group, so a child in envlock's group has it already).
  static bool received_from_terminal();

 private:
  bool alive_ = true;
  bool restore_mask_ = false;
  sigset_t old_mask_{};  ///< the calling thread's signal mask before the scope
};

/// SIGINT -> "SIGINT", SIGTERM -> "SIGTERM", others "SIG<abbrev>" or "signal N".
std::string signal_name(int sig);

/// Starts `spawn` and waits for it as `wait` says. Never throws for the child's sake; a program
/// that cannot be started (no such file, not executable, a working folder that cannot be
/// entered: posix_spawn reports them all) is ChildResult::start_error.
ChildResult run_process(const SpawnOptions& spawn, const WaitOptions& wait = {});

/// Forks a child that runs `body(fd)` and then _exit(0)s, `fd` being the write end of a pipe
/// the parent reads into ChildResult::out (or WaitOptions::on_out). The child keeps envlock's
/// stdin, stdout and stderr. `body` runs in a forked copy of a possibly multi-threaded process:
/// only async-signal-safe calls are safe there (POSIX fork(2)), dlopen and the vendor library's
/// own calls being the accepted exception of the vendor-library probe. For a library call that
/// may crash or hang: the crash or the hang ends the child only.
ChildResult run_function(const std::function<void(int fd)>& body, ProcessGroup group, const WaitOptions& wait = {});

}  // namespace envlock
