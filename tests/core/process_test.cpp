// The one child-process runner (envlock/process.hpp): capture, merge, environment, working
// folder, timeout with the kill of the whole group, stop requests, limits, forked functions,
// signals to envlock passed on to the child.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "envlock/process.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

SpawnOptions sh(const std::string& script) {
  SpawnOptions s;
  s.argv = {"/bin/sh", "-c", script};
  return s;
}

TEST(Process, CapturesStdoutAndStderrApart) {
  const ChildResult r = run_process(sh("echo out; echo err >&2; exit 3"));
  EXPECT_FALSE(r.start_error);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.exit_status, 3);
  EXPECT_EQ(r.signal, 0);
  EXPECT_FALSE(r.succeeded());
  EXPECT_EQ(r.ending(), "exited with status 3");
}

TEST(Process, MergesStderrIntoStdoutInOrder) {
  SpawnOptions s = sh("echo one; echo two >&2; echo three");
  s.err = ChildOutput::Merge;
  const ChildResult r = run_process(s);
  EXPECT_EQ(r.out, "one\ntwo\nthree\n");
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.succeeded());
}

TEST(Process, EnvironmentWorkingFolderAndStdin) {
  SpawnOptions s = sh("echo \"$ONLY:${HOME:-none}\"; pwd; cat");
  s.environment = std::vector<std::string>{"ONLY=1"};
  s.working_directory = "/";
  const ChildResult r = run_process(s);
  EXPECT_EQ(r.out, "1:none\n/\n");  // stdin is /dev/null: cat ends at once
}

TEST(Process, PathLookupAndStartErrors) {
  SpawnOptions s;
  s.argv = {"sh", "-c", "echo found"};
  s.lookup = ProgramLookup::Path;
  EXPECT_EQ(run_process(s).out, "found\n");
  s.lookup = ProgramLookup::AsGiven;  // "sh" is then a path relative to the current folder
  s.working_directory = "/nonexistent-envlock-folder";
  ChildResult r = run_process(s);
  ASSERT_TRUE(r.start_error);
  EXPECT_EQ(r.start_error->step, "posix_spawn");
  EXPECT_EQ(r.start_error->error_number, ENOENT);
  EXPECT_EQ(r.ending(), "could not be started: posix_spawn: No such file or directory");
  EXPECT_TRUE(run_process(SpawnOptions{}).start_error);
}

TEST(Process, ReportsTheSignalTheChildDiedOf) {
  const ChildResult r = run_process(sh("kill -SEGV $$"));
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.exit_status, -1);
  EXPECT_EQ(r.ending(), "was killed by signal 11");
}

TEST(Process, TimeoutKillsTheWholeGroup) {
  const fs::path marker = fs::temp_directory_path() / ("envlock-process-" + std::to_string(::getpid()));
  fs::remove(marker);
  SpawnOptions s = sh("(sleep 1; touch '" + marker.string() + "') & sleep 30");
  s.group = ProcessGroup::Own;
  WaitOptions w;
  w.timeout = milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  const ChildResult r = run_process(s, w);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_status, -1);
  EXPECT_EQ(r.signal, 0);  // the runner's own kill is not the child's death
  EXPECT_EQ(r.ending(), "timed out");
  ::sleep(2);
  EXPECT_FALSE(fs::exists(marker)) << "the background child outlived the timeout";
}

TEST(Process, ABackgroundChildHoldingThePipesDoesNotHang) {
  SpawnOptions s = sh("echo done; sleep 30 &");
  s.group = ProcessGroup::Own;
  WaitOptions w;
  w.strays = Strays::Kill;
  const auto start = std::chrono::steady_clock::now();
  const ChildResult r = run_process(s, w);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.out, "done\n");
  EXPECT_EQ(r.exit_status, 0);
}

TEST(Process, StopRequestKillsOrTerminates) {
  WaitOptions w;
  w.stop = [] { return true; };
  SpawnOptions s = sh("sleep 30");
  s.group = ProcessGroup::Own;
  ChildResult r = run_process(s, w);
  EXPECT_TRUE(r.stopped);
  w.on_stop = OnStop::Terminate;
  s.out = ChildOutput::Discard;
  s.err = ChildOutput::Discard;
  r = run_process(s, w);
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.signal, SIGTERM);
}

TEST(Process, CaptureLimits) {
  WaitOptions w;
  w.capture_limit = 10;
  const ChildResult dropped = run_process(sh("printf 0123456789abcdef; sleep 0.2; printf more"), w);
  EXPECT_EQ(dropped.out, "0123456789abcdef");  // whole chunks while under the limit
  EXPECT_EQ(dropped.exit_status, 0);
  w.over_limit = OverLimit::Stop;
  const ChildResult stopped = run_process(sh("printf 0123456789abcdef; sleep 30"), w);
  EXPECT_TRUE(stopped.overflowed);
  EXPECT_EQ(stopped.ending(), "wrote too much output");
}

TEST(Process, StreamsChunksToSinks) {
  std::string out, err;
  WaitOptions w;
  w.on_out = [&](std::string_view c) { out.append(c); };
  w.on_err = [&](std::string_view c) { err.append(c); };
  const ChildResult r = run_process(sh("echo a; echo b >&2"), w);
  EXPECT_EQ(out, "a\n");
  EXPECT_EQ(err, "b\n");
  EXPECT_EQ(r.out, "");
}

TEST(Process, ForkedFunctionAndFinishedAnswer) {
  WaitOptions w;
  w.timeout = milliseconds(5000);
  ChildResult r = run_function([](int fd) { (void)!::write(fd, "x=1\n", 4); }, ProcessGroup::Own, w);
  EXPECT_EQ(r.out, "x=1\n");
  EXPECT_EQ(r.exit_status, 0);
  w.finished = [](const std::string& out) { return out.find("done=1\n") != std::string::npos; };
  const auto start = std::chrono::steady_clock::now();
  r = run_function(
      [](int fd) {
        (void)!::write(fd, "done=1\n", 7);
        ::sleep(30);  // a library's helper holding on: the answer is complete anyway
      },
      ProcessGroup::Own, w);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));
  EXPECT_TRUE(r.finished);
  EXPECT_EQ(r.out, "done=1\n");
  r = run_function([](int) { ::raise(SIGABRT); }, ProcessGroup::Own, w);
  EXPECT_EQ(r.signal, SIGABRT);
}

/// Sends `sig` to this process once `marker` exists (the child is running), from a thread, as a
/// supervisor's `kill PID` would.
std::thread signal_when(const fs::path& marker, int sig) {
  return std::thread([marker, sig] {
    for (int i = 0; i < 500 && !fs::exists(marker); ++i) ::usleep(10000);
    ::kill(::getpid(), sig);
  });
}

// A SIGTERM to envlock while a child runs is passed on to the child's whole group and waited
// for (conda and mamba wait for the script they run): the child's own handler runs, its
// background process goes too, and the caller's InterruptScope holds the signal.
TEST(Process, ASignalToEnvlockIsPassedOnToTheChildsGroupAndWaitedFor) {
  const fs::path dir = fs::temp_directory_path() / ("envlock-forward-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const InterruptScope scope;
  SpawnOptions s = sh("trap 'echo got TERM; exit 7' TERM; sleep 30 & echo $! > '" + (dir / "bg").string() +
                      "'; touch '" + (dir / "ready").string() + "'; wait");
  s.group = ProcessGroup::Own;
  s.signals = ChildSignals::Reset;
  std::thread sender = signal_when(dir / "ready", SIGTERM);
  const auto start = std::chrono::steady_clock::now();
  const ChildResult r = run_process(s);
  sender.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(r.forwarded, SIGTERM);
  EXPECT_EQ(r.exit_status, 7);
  EXPECT_EQ(r.out, "got TERM\n");
  EXPECT_EQ(InterruptScope::received(), SIGTERM);
  std::ifstream bg(dir / "bg");
  pid_t pid = 0;
  bg >> pid;
  ASSERT_GT(pid, 0);
  int gone = 0;
  for (int i = 0; i < 200 && (gone = ::kill(pid, 0)) == 0; ++i) ::usleep(10000);
  EXPECT_NE(gone, 0) << "the child's background process outlived the signal";
  fs::remove_all(dir);
}

// With no scope of the caller's, the signal then ends envlock as it would have without the
// child, but only once the child has had it and ended: nothing is left running.
TEST(ProcessDeathTest, ASignalNobodyTakesEndsEnvlockAfterTheChild) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The threadsafe style runs this body again in a new process: one name for both (no pid).
  const fs::path dir = fs::temp_directory_path() / "envlock-forward-death-test";
  if (!fs::exists(dir / "ready")) fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path ready = dir / "ready", got = dir / "got";
  EXPECT_EXIT(
      {
        ::signal(SIGTERM, SIG_DFL);
        SpawnOptions s = sh("trap \"touch '" + got.string() + "'; exit 0\" TERM; touch '" + ready.string() +
                            "'; sleep 30 & wait");
        s.group = ProcessGroup::Own;
        s.signals = ChildSignals::Reset;
        std::thread sender = signal_when(ready, SIGTERM);
        sender.detach();
        (void)run_process(s);
        ::_exit(0);  // not reached: the signal ends the process
      },
      ::testing::KilledBySignal(SIGTERM), "");
  EXPECT_TRUE(fs::exists(got)) << "the child never had the signal";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace envlock
