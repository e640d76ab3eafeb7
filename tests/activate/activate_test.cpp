// The activate module: conda's activation rules (conda/activate.py at conda 4.8: _Activator.
// _build_activate_stack, build_deactivate, _default_env, _get_activate_scripts,
// _get_deactivate_scripts), the scripts run by bash, and a command's exit code as a shell
// reports it (POSIX.1-2017 XCU 2.8.2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "envlock/activate.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using Set = std::vector<std::pair<std::string, std::string>>;

void spit(const fs::path& p, const std::string& data) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << data;
}

std::optional<std::string> get(const EnvironmentBlock& env, const std::string& name) {
  for (const auto& e : env)
    if (e.starts_with(name + "=")) return e.substr(name.size() + 1);
  return std::nullopt;
}

class Activate : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("envlock-activate-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "envs/train/conda-meta");
    prefix_ = root_ / "envs/train";
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_, prefix_;
};

// conda: PATH gets PREFIX/bin first, CONDA_PREFIX, CONDA_SHLVL old+1, CONDA_DEFAULT_ENV the
// folder's name inside `envs` (_default_env), then the environment's variables.
TEST_F(Activate, SetsWhatCondaSetsInItsOrder) {
  const EnvironmentBlock current = {"HOME=/home/u", "PATH=/usr/bin:/bin"};
  const Activation a = plan_activation({prefix_ / "", {{"OMP_NUM_THREADS", "4"}}}, current);
  EXPECT_EQ(a.prefix, prefix_);
  EXPECT_EQ(a.set, (Set{{"PATH", (prefix_ / "bin").string() + ":/usr/bin:/bin"},
                        {"CONDA_PREFIX", prefix_.string()},
                        {"CONDA_SHLVL", "1"},
                        {"CONDA_DEFAULT_ENV", "train"},
                        {"OMP_NUM_THREADS", "4"}}));
  EXPECT_TRUE(a.activate_scripts.empty());
  // A prefix outside an `envs` folder is named by its path; no PATH at all: bin/ alone.
  fs::create_directories(root_ / "p/conda-meta");
  const Activation b = plan_activation({root_ / "p", {}}, {});
  EXPECT_EQ(b.set, (Set{{"PATH", (root_ / "p/bin").string()},
                        {"CONDA_PREFIX", (root_ / "p").string()},
                        {"CONDA_SHLVL", "1"},
                        {"CONDA_DEFAULT_ENV", (root_ / "p").string()}}));
}

// An environment already active: stacked as `conda activate --stack` does (CONDA_PREFIX_<old
// level> keeps the previous one). A CONDA_SHLVL that is no number counts as 0 (conda: int()).
TEST_F(Activate, StacksOnAnActiveEnvironment) {
  const Activation a = plan_activation({prefix_, {}}, {"PATH=/base/bin:/usr/bin", "CONDA_SHLVL=1", "CONDA_PREFIX=/base"});
  EXPECT_EQ(a.set, (Set{{"PATH", (prefix_ / "bin").string() + ":/base/bin:/usr/bin"},
                        {"CONDA_PREFIX", prefix_.string()},
                        {"CONDA_SHLVL", "2"},
                        {"CONDA_DEFAULT_ENV", "train"},
                        {"CONDA_PREFIX_1", "/base"}}));
  const Activation odd = plan_activation({prefix_, {}}, {"CONDA_SHLVL=x", "CONDA_PREFIX=/base"});
  EXPECT_EQ(odd.set[2], (std::pair<std::string, std::string>{"CONDA_SHLVL", "1"}));
  EXPECT_EQ(odd.set.size(), 4u);
}

// conda: sorted(glob(activate.d/*.sh)); deactivate.d reverse sorted. Other files are not scripts.
TEST_F(Activate, ScriptsInSortedOrderDeactivationReversed) {
  for (const char* n : {"20-b.sh", "10-a.sh", "zz.csh", "notes.txt", "A.sh"}) spit(prefix_ / "etc/conda/activate.d" / n, "");
  for (const char* n : {"1.sh", "2.sh"}) spit(prefix_ / "etc/conda/deactivate.d" / n, "");
  fs::create_directories(prefix_ / "etc/conda/activate.d/dir.sh");
  const Activation a = plan_activation({prefix_, {}}, {});
  const fs::path ad = prefix_ / "etc/conda/activate.d", dd = prefix_ / "etc/conda/deactivate.d";
  EXPECT_EQ(a.activate_scripts, (std::vector<fs::path>{ad / "10-a.sh", ad / "20-b.sh", ad / "A.sh"}));
  EXPECT_EQ(a.deactivate_scripts, (std::vector<fs::path>{dd / "2.sh", dd / "1.sh"}));
}

// The scripts run in bash after the variables are set (they see CONDA_PREFIX and the
// manifest's variables), in order; what they export, change and unset is taken; what they
// print does not leak into the environment.
TEST_F(Activate, ScriptsRunInBashAndTheirEnvironmentIsTaken) {
  spit(prefix_ / "etc/conda/activate.d/10-cuda.sh",
       "echo 'noise on stdout'\nexport CUDA_HOME=\"$CONDA_PREFIX/cuda\"\nexport SEEN=\"$OMP_NUM_THREADS\"\n"
       "export MULTI='line one\nline two'\nunset DROPME\n");
  spit(prefix_ / "etc/conda/activate.d/20-order.sh", "export ORDER=\"${ORDER}2\"\nPATH=\"$CONDA_PREFIX/extra:$PATH\"\n");
  spit(prefix_ / "etc/conda/activate.d/05-order.sh", "export ORDER=\"${ORDER}1\"\n[[ -n $BASH_VERSION ]] && export SHELL_WAS=bash\n");
  const EnvironmentBlock current = {"PATH=/usr/bin:/bin", "DROPME=1", "KEEP=yes"};
  const Activation a = plan_activation({prefix_, {{"OMP_NUM_THREADS", "4"}}}, current);
  auto env = activated_environment(a, current);
  ASSERT_TRUE(env.ok()) << env.error().to_string();
  EXPECT_EQ(get(*env, "CUDA_HOME"), (prefix_ / "cuda").string());
  EXPECT_EQ(get(*env, "SEEN"), "4");
  EXPECT_EQ(get(*env, "ORDER"), "12");
  EXPECT_EQ(get(*env, "SHELL_WAS"), "bash");
  EXPECT_EQ(get(*env, "MULTI"), "line one\nline two");
  EXPECT_EQ(get(*env, "DROPME"), std::nullopt);
  EXPECT_EQ(get(*env, "KEEP"), "yes");
  EXPECT_EQ(get(*env, "PATH"), (prefix_ / "extra").string() + ":" + (prefix_ / "bin").string() + ":/usr/bin:/bin");
  EXPECT_EQ(get(*env, "CONDA_DEFAULT_ENV"), "train");
  EXPECT_EQ(get(*env, "_"), std::nullopt);  // bash's own last-argument variable is not carried
}

TEST_F(Activate, NoScriptsNoShell) {
  const EnvironmentBlock current = {"PATH=/nonexistent"};  // bash could not even be found
  auto env = activated_environment(plan_activation({prefix_, {}}, current), current);
  ASSERT_TRUE(env.ok()) << env.error().to_string();
  EXPECT_EQ(*env, (EnvironmentBlock{"PATH=" + (prefix_ / "bin").string() + ":/nonexistent",
                                    "CONDA_PREFIX=" + prefix_.string(), "CONDA_SHLVL=1", "CONDA_DEFAULT_ENV=train"}));
}

TEST_F(Activate, AScriptThatExitsIsAnError) {
  spit(prefix_ / "etc/conda/activate.d/bad.sh", "exit 3\n");
  auto env = activated_environment(plan_activation({prefix_, {}}, {}), {"PATH=/usr/bin:/bin"});
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.error().to_string(), (prefix_ / "etc/conda/activate.d").string() +
                                         ": the activation scripts made bash exit with status 3\n"
                                         "hint: a script in it ran `exit` or failed in bash; its message is above");
}

TEST_F(Activate, PrefixChecks) {
  EXPECT_TRUE(check_environment_prefix(prefix_).ok());
  auto missing = check_environment_prefix(root_ / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().to_string(), (root_ / "nope").string() + ": no such environment (the folder does not exist)\n"
                                             "hint: create it first: `envlock create -f envlock.yaml -p " +
                                             (root_ / "nope").string() + "`");
  fs::create_directories(root_ / "plain");
  auto plain = check_environment_prefix(root_ / "plain");
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(plain.error().message, "is not an environment (it has no conda-meta/ folder)");
}

// Any text but NUL survives each shell's quoting: quotes, backslashes, `$`, spaces, a newline
// (a value an activate.d script may set; the manifest's own are one line).
TEST_F(Activate, ValuesSurviveEveryShellsQuoting) {
  const std::string tricky = "it's \"q\" $HOME \\ `x` \\' end\nline2";
  const EnvironmentBlock current = {"PATH=/usr/bin:/bin", "OLD=before"};
  const Activation a = plan_activation({prefix_, {{"V", tricky}, {"OLD", "new"}}}, current);
  struct Case {
    Shell shell;
    const char* runner;
  };
  for (const Case c : {Case{Shell::Posix, "sh"}, Case{Shell::Bash, "bash --norc --noprofile"}, Case{Shell::Zsh, "zsh -f"},
                       Case{Shell::Fish, "fish --no-config"}}) {
    const std::string program = std::string(c.runner).substr(0, std::string(c.runner).find(' '));
    if (envlock::testing::run_command("command -v " + program + " >/dev/null").exit_code != 0) continue;
    spit(root_ / "hook", activation_script(a, c.shell, current));
    const std::string show = c.shell == Shell::Fish ? "printf '%s|%s\\n' \"$V\" \"$OLD\"; envlock_deactivate; printf '%s|%s\\n' \"$V\" \"$OLD\""
                                                    : "printf '%s|%s\\n' \"$V\" \"$OLD\"; envlock_deactivate; printf '%s|%s\\n' \"${V-unset}\" \"$OLD\"";
    const std::string source = c.shell == Shell::Fish ? "source " : ". ";
    spit(root_ / "show", source + "'" + (root_ / "hook").string() + "'\n" + show + "\n");
    auto r = envlock::testing::run_command(std::string(c.runner) + " '" + (root_ / "show").string() + "'",
                                           {{"OLD", "before"}, {"V", "\x01unset"}});
    EXPECT_EQ(r.exit_code, 0) << program << r.err;
    EXPECT_EQ(r.out, tricky + "|new\n" + (c.shell == Shell::Fish ? "" : "unset") + "|before\n") << program;
    EXPECT_EQ(r.err, "") << program;
  }
}

TEST(ActivateShells, Names) {
  EXPECT_EQ(*parse_shell("bash"), Shell::Bash);
  EXPECT_EQ(*parse_shell("zsh"), Shell::Zsh);
  EXPECT_EQ(*parse_shell("fish"), Shell::Fish);
  EXPECT_EQ(*parse_shell("posix"), Shell::Posix);
  auto bad = parse_shell("tcsh");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::Usage);
  EXPECT_EQ(bad.error().to_string(), "--shell: unknown shell 'tcsh'\nhint: use bash, zsh, fish or posix (any POSIX sh: dash, busybox)");
}

TEST(ActivateChanges, SetChangedAndRemoved) {
  EXPECT_EQ(environment_changes({"A=1", "B=2", "_=/x", "C=3"}, {"B=2", "A=9", "D=4", "_=/y"}),
            (std::vector<std::pair<std::string, std::optional<std::string>>>{
                {"A", "9"}, {"D", "4"}, {"C", std::nullopt}}));
}

// Exit codes as a shell reports them: the status; 128+N for signal N; 127 not found; 126 found
// but not executable. argv[0] is looked up in the activated PATH.
TEST_F(Activate, RunPassesTheExitCodeThrough) {
  const EnvironmentBlock env = {"PATH=" + (prefix_ / "bin").string() + ":/usr/bin:/bin"};
  EXPECT_EQ(run_in_environment({"sh", "-c", "exit 7"}, env), 7);
  EXPECT_EQ(run_in_environment({"sh", "-c", "kill -TERM $$"}, env), 128 + 15);
  EXPECT_EQ(run_in_environment({"sh", "-c", "kill -KILL $$"}, env), 128 + 9);
  EXPECT_EQ(run_in_environment({"envlock-no-such-command"}, env), 127);
  spit(prefix_ / "bin/tool", "#!/bin/sh\nexit 5\n");
  fs::permissions(prefix_ / "bin/tool", fs::perms::owner_all);
  EXPECT_EQ(run_in_environment({"tool"}, env), 5);  // found in the environment's bin/
  spit(prefix_ / "bin/noexec", "#!/bin/sh\n");
  fs::permissions(prefix_ / "bin/noexec", fs::perms::owner_read);
  EXPECT_EQ(run_in_environment({"noexec"}, env), 126);  // no execute bit at all: root too
  EXPECT_EQ(run_in_environment({(prefix_ / "bin/missing").string()}, env), 127);
}

}  // namespace
}  // namespace envlock
