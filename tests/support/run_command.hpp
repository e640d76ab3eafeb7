#pragma once
// tests/support/run_command.hpp — run a command line for end-to-end tests and capture its
// stdout, stderr and exit code. Header-only; usable by every suite (tests/ is on the include path).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace envlock::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs `command` through /bin/sh with `env` added to the environment (a value of "\x01unset"
/// unsets the variable). stdout and stderr are captured separately through temporary files.
inline CommandResult run_command(const std::string& command,
                                 const std::map<std::string, std::string>& env = {}) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path dir = fs::temp_directory_path() /
                       ("envlock-run-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  fs::create_directories(dir);
  std::string prefix;
  for (const auto& [k, v] : env) {
    if (v == "\x01unset") prefix += "unset " + k + "; ";
    else prefix += "export " + k + "='" + v + "'; ";
  }
  const std::string full = prefix + command + " >'" + (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
  const int status = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(dir / "out");
  r.err = slurp(dir / "err");
  fs::remove_all(dir);
  return r;
}

/// The envlock executable under test, quoted for the shell. A suite built where there is no
/// envlock target (the sanitizer tree of scripts/fuzz, ENVLOCK_FUZZ_SUITES) cannot run it: this
/// fails its build there instead of every test failing with "sh: 1: : Permission denied".
inline std::string envlock_cmd() {
  static_assert(sizeof(ENVLOCK_BINARY) > 1,
                "this test runs the envlock executable, which this build tree does not have: keep its "
                "source out of the ENVLOCK_FUZZ suites (tests/<suite>/CMakeLists.txt)");
  return std::string("'") + ENVLOCK_BINARY + "'";
}

}  // namespace envlock::testing
