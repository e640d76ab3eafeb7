#pragma once
// The activate module's two ways of starting a child (posix_spawn(3), POSIX.1-2017), kept in
// this one place so that they fold into envlock/process.hpp's runner once every module uses it.
#include <filesystem>
#include <string>
#include <vector>

namespace envlock::activate_detail {

/// How a child ended: `status` is its exit status, or -1 with `signal` set; `spawn_errno` is
/// set (and nothing ran) when it could not be started.
struct Ended {
  int status = -1;
  int signal = 0;
  int spawn_errno = 0;
};

/// Starts `program` (found in envlock's own PATH when it has no '/') with `argv` and the
/// environment `env`, stdin /dev/null, stdout captured into `out`, stderr envlock's; waits.
Ended capture_stdout(const std::string& program, const std::vector<std::string>& argv,
                     const std::vector<std::string>& env, std::string& out);

/// Starts the file `path` with `argv` and `env`, envlock's stdin, stdout and stderr, the
/// default dispositions of SIGINT and SIGQUIT and an empty signal mask; envlock ignores SIGINT
/// and SIGQUIT until it has ended (a shell's foreground job). Waits.
Ended run_foreground(const std::filesystem::path& path, const std::vector<std::string>& argv,
                     const std::vector<std::string>& env);

}  // namespace envlock::activate_detail
