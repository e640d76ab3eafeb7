// envlock's entry point end to end: unknown commands, usage errors with --json, exit codes, and
// write errors on stdout (a full disk must not look like success).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_command.hpp"

namespace envlock {
namespace {

using testing::envlock_cmd;
using testing::run_command;

TEST(CliMain, UnknownCommandIsNamedAndCommandsListed) {
  auto r = run_command(envlock_cmd() + " bogus");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'bogus'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lock"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("install"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("A subcommand is required"), std::string::npos) << r.err;
}

TEST(CliMain, UnknownCommandWithJsonPrintsErrorObject) {
  auto r = run_command(envlock_cmd() + " --json bogus");
  EXPECT_EQ(r.exit_code, 2);
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("error").at("kind"), "usage");
  EXPECT_EQ(j.at("error").at("message"), "unknown command 'bogus'");
}

TEST(CliMain, MissingRequiredOptionWithJsonPrintsErrorObject) {
  // `lock` needs -f; the parse error must honour --json wherever it stands.
  auto r = run_command(envlock_cmd() + " lock --json");
  EXPECT_EQ(r.exit_code, 2);
  ASSERT_FALSE(r.out.empty()) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("error").at("kind"), "usage");
  EXPECT_EQ(j.at("error").at("where"), "lock");
  EXPECT_NE(j.at("error").at("hint").get<std::string>().find("envlock lock --help"), std::string::npos);
}

TEST(CliMain, NoCommandSaysOneIsRequired) {
  auto r = run_command(envlock_cmd());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("a command is required"), std::string::npos) << r.err;
}

TEST(CliMain, WriteErrorOnStdoutFailsTheRun) {
  // /dev/full is the only portable "write fails with ENOSPC" stdout; a container without it cannot test this.
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "/dev/full is missing";
  auto r = run_command("( " + envlock_cmd() + " info --json >/dev/full )");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot write output: No space left on device"), std::string::npos) << r.err;
  auto text = run_command("( " + envlock_cmd() + " info >/dev/full )");
  EXPECT_EQ(text.exit_code, 1);
}

TEST(CliMain, HelpStillExitsZero) {
  auto r = run_command(envlock_cmd() + " --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("lock"), std::string::npos);
}

// A folder passed where a lockfile belongs is named as a folder (not "found nothing").
TEST(CliMain, LockfileThatIsADirectoryIsNamedSo) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("envlock-cli-main-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "lockdir");
  auto r = run_command(envlock_cmd() + " install -l '" + (dir / "lockdir").string() + "' -p '" + (dir / "env").string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is a directory, not a lockfile"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("found nothing"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "env"));
  std::filesystem::remove_all(dir);
}


// Every path option of every command, end to end.
TEST(CliMain, AnEmptyPathOptionIsAUsageErrorNamingTheOption) {
  struct Case {
    std::string args;
    std::string option;
  };
  const std::vector<Case> cases = {
      {"snapshot deploy snap.yaml -p ''", "--prefix"},
      {"snapshot capture -p '' -o x.yaml", "--prefix"},
      {"snapshot capture --root '' -o x.yaml", "--root"},
      {"snapshot capture -o ''", "--output"},
      {"snapshot capture --bundle ''", "--bundle"},
      {"snapshot lock snap.yaml -o ''", "--output"},
      {"install -l envlock.lock -p ''", "--prefix"},
      {"install -l '' -p somewhere", "--lockfile"},
      {"lock -f envlock.yaml -o ''", "--output"},
      {"list -p ''", "--prefix"},
      {"export -o ''", "--output"},
  };
  for (const auto& c : cases) {
    const auto r = run_command(envlock_cmd() + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.option + ": is empty (an empty path"), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.find("internal"), std::string::npos) << c.args << "\n" << r.err;
  }
  // --json: the same usage error as JSON on stdout.
  const auto j = run_command(envlock_cmd() + " --json snapshot deploy snap.yaml -p ''");
  EXPECT_EQ(j.exit_code, 2);
  EXPECT_NE(j.out.find("\"kind\": \"usage\""), std::string::npos) << j.out;
}


// The error paths of each command that has no whole-output test of its own elsewhere (info,
// install, list, probe, remove, search, shell-hook, verify): exit code, stdout and stderr
// compared whole, run in an empty folder whose path is written <DIR>.
TEST(CliMain, EachCommandsErrorPathsPrintTheWholeMessage) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("envlock-cli-errors-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string no_lockfile =
      "error: missing.lock: cannot open the lockfile: No such file or directory\n"
      "hint: create it with `envlock lock -f envlock.yaml`, or pass the right path with -l\n";
  struct Case {
    std::string args;
    int exit_code;
    std::string err;
  };
  const std::vector<Case> cases = {
      {"info --bogus", 2,
       "error: info: The following argument was not expected: --bogus\n"
       "hint: run `envlock info --help` for its options\n"},
      {"install -l missing.lock -p env", 1, no_lockfile},
      {"list -l missing.lock", 1, no_lockfile},
      {"list -p missing", 1,
       "error: missing/conda-meta: no conda-meta folder: this is not a conda environment prefix\n"
       "hint: pass the environment's root folder (the one holding conda-meta/)\n"},
      {"probe -l missing.lock", 1, no_lockfile},
      {"remove -p missing", 1,
       "error: <DIR>/missing: is not an environment folder\n"
       "hint: check the path given with -p\n"},
      {"search", 2,
       "error: search: spec is required\n"
       "hint: run `envlock search --help` for its options\n"},
      {"shell-hook --shell tcsh", 2,
       "error: --shell: unknown shell 'tcsh'\n"
       "hint: use bash, zsh, fish or posix (any POSIX sh: dash, busybox)\n"},
      {"verify -p missing", 1,
       "error: missing: does not exist\n"
       "hint: check the path given with -p (an environment folder)\n"},
  };
  const auto filtered = [&](std::string text) {
    const std::string from = dir.string();
    for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) text.replace(at, from.size(), "<DIR>");
    return text;
  };
  for (const auto& c : cases) {
    const auto r = run_command("cd '" + dir.string() + "' && " + envlock_cmd() + " " + c.args, {{"HOME", dir.string()}});
    EXPECT_EQ(r.exit_code, c.exit_code) << c.args << "\n" << r.err;
    EXPECT_EQ(r.out, "") << c.args;
    EXPECT_EQ(filtered(r.err), c.err) << c.args;
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // no error path writes anything
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace envlock
