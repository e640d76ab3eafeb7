// `envlock run` and `envlock shell-hook` end to end. Facts followed:
//   * conda activation (conda/conda, conda/activate.py: _build_activate_stack sets PATH,
//     CONDA_PREFIX, CONDA_SHLVL, CONDA_DEFAULT_ENV, then runs sorted(activate.d/*.sh);
//     build_deactivate runs deactivate.d/*.sh reverse sorted and unsets what it set);
//   * pixi (prefix-dev/pixi, src/cli/shell_hook.rs: get_up_to_date_prefix before printing;
//     docs "pixi run": the environment is created or updated first; --frozen installs the
//     lockfile as it is, --locked fails when it is not up to date).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "support/files.hpp"
#include "support/run_command.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using envlock::testing::envlock_cmd;
using envlock::testing::run_command;
using envlock::testing::q;
using envlock::testing::spit;

bool have(const char* program) {
  return run_command(std::string("command -v ") + program + " >/dev/null").exit_code == 0;
}

class RunCli : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("envlock-cli-activate-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    // A known starting environment: no environment active, a plain PATH.
    env_ = {{"ENVLOCK_PKGS_DIR", (root_ / "pkgs").string()}, {"NO_COLOR", "1"}, {"PATH", "/usr/bin:/bin"},
            {"CONDA_SHLVL", "\x01unset"}, {"CONDA_PREFIX", "\x01unset"}, {"CONDA_DEFAULT_ENV", "\x01unset"},
            {"CUDA_HOME", "\x01unset"}, {"ORDER", "\x01unset"}};
  }
  void TearDown() override { fs::remove_all(root_); }

  envlock::testing::CommandResult envlock(const std::string& args) { return run_command(envlock_cmd() + " " + args, env_); }

  /// A hand-made environment: conda-meta/ and the activate.d / deactivate.d scripts a CUDA or
  /// compiler package ships.
  fs::path hand_made_prefix() {
    const fs::path p = root_ / "envs/work";
    fs::create_directories(p / "conda-meta");
    spit(p / "etc/conda/activate.d/10-cuda.sh", "export CUDA_HOME=\"$CONDA_PREFIX/cuda\"\necho 'cuda activated'\n");
    spit(p / "etc/conda/activate.d/20-order.sh", "export ORDER=\"${ORDER}second\"\n");
    spit(p / "etc/conda/activate.d/05-order.sh", "export ORDER=\"${ORDER}first-\"\n");
    spit(p / "etc/conda/deactivate.d/10-cuda.sh", "unset CUDA_HOME ORDER\necho 'cuda deactivated'\n");
    return p;
  }

  fs::path project_with_channel(const std::string& extra = "") {
    const fs::path channel = root_ / "channel";
    auto r = run_command("'" + std::string(ENVLOCK_SOURCE_DIR) + "/scripts/make-fixture-channel' " + q(channel));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const fs::path project = root_ / "project";
    spit(project / "envlock.yaml", "name: example\nchannels: [" + channel.string() +
                                       "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-greet\n"
                                       "variables:\n  OMP_NUM_THREADS: \"4\"\n  GREETING: it's a \"test\" $HOME\n" + extra);
    return project;
  }

  fs::path root_;
  std::map<std::string, std::string> env_;
};

const char* const kShow = "sh -c 'echo \"$CONDA_PREFIX|$CONDA_SHLVL|$CONDA_DEFAULT_ENV|$CUDA_HOME|$ORDER|${PATH%%:*}\"'";

TEST_F(RunCli, RunSeesTheActivateScriptsInOrder) {
  const fs::path p = hand_made_prefix();
  auto r = envlock("run -p " + q(p) + " -- " + kShow);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, p.string() + "|1|work|" + p.string() + "/cuda|first-second|" + p.string() + "/bin\n");
  EXPECT_EQ(r.err, "cuda activated\n");  // a script's stdout goes to stderr: stdout is the command's
}

TEST_F(RunCli, ExitCodesPassThrough) {
  const fs::path p = root_ / "bare";
  fs::create_directories(p / "conda-meta");
  auto seven = envlock("run -p " + q(p) + " -- sh -c 'echo out; echo err >&2; exit 7'");
  EXPECT_EQ(seven.exit_code, 7);
  EXPECT_EQ(seven.out, "out\n");
  EXPECT_EQ(seven.err, "err\n");
  auto term = envlock("run -p " + q(p) + " sh -c 'kill -TERM $$'");  // no `--` needed either
  EXPECT_EQ(term.exit_code, 143);  // 128 + SIGTERM, as shells report it
  EXPECT_EQ(term.out, "");
  EXPECT_EQ(term.err, "");
  auto args = envlock("run -p " + q(p) + " -- printf '%s|' -p --json -- x");  // words after the command are its own
  EXPECT_EQ(args.exit_code, 0);
  EXPECT_EQ(args.out, "-p|--json|--|x|");
  auto missing = envlock("run -p " + q(p) + " -- envlock-no-such-tool a");
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_EQ(missing.out, "");
  EXPECT_EQ(missing.err, "envlock run: envlock-no-such-tool: command not found\n");
}

// Ctrl-C goes to the whole foreground process group: the command gets it and decides (here it
// exits 3); envlock ignores it meanwhile and passes the command's code on, as a shell does.
TEST_F(RunCli, CtrlCIsTheCommandsToHandle) {
  const fs::path p = root_ / "bare";
  fs::create_directories(p / "conda-meta");
  const fs::path mark = root_ / "trapped";
  // In a session of its own (setsid), so that `kill -INT 0` reaches this group only.
  spit(root_ / "ctrl-c.sh", "trap '' INT\n" + envlock_cmd() + " run -p " + q(p) +
                                " -- sh -c 'trap \"echo child got INT; kill \\$!; exit 3\" INT; touch " + q(mark) +
                                "; sleep 30 & wait' &\npid=$!\nwhile [ ! -e " + q(mark) +
                                " ]; do sleep 0.05; done\nkill -INT 0\nwait $pid\necho rc=$?\n");
  auto r = run_command("setsid sh " + q(root_ / "ctrl-c.sh"), env_);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "child got INT\nrc=3\n");
  EXPECT_EQ(r.err, "");
}

// envlock stands in for the command as tini and dumb-init do: every terminating signal sent to
// envlock alone (a supervisor's HUP, `timeout -s USR1`, a scheduler's TERM) is passed on to the
// command, which decides, and envlock's exit code is the command's own: 7 after a trap that exits 7,
// 128 + N only when signal N ended it (attack 30, F4: HUP, USR1, USR2 and ALRM ended envlock and
// left the command running; after a forwarded TERM that the command handled, envlock exited 143).
TEST_F(RunCli, EverySignalIsPassedOnAndTheExitCodeIsTheCommands) {
  const fs::path p = root_ / "bare";
  fs::create_directories(p / "conda-meta");
  const fs::path mark = root_ / "started";
  // bash, not sh: its background subshell can give SIGINT and SIGQUIT their defaults back, so
  // that envlock gets them as a supervisor's kill sends them (an ignored signal stays ignored).
  std::string script;
  for (const std::string sig : {"HUP", "INT", "QUIT", "TERM", "USR1", "USR2", "ALRM"}) {
    for (const std::string& handled : {"trap 'echo child got " + sig + "; exit 7' " + sig + "; ", std::string()}) {
      script += "rm -f " + q(mark) + "\n(trap - INT QUIT; exec " + envlock_cmd() + " run -p " + q(p) + " -- sh -c \"" +
                handled + "touch " + q(mark) + "; sleep 30 & wait\") &\npid=$!\nwhile [ ! -e " + q(mark) +
                " ]; do sleep 0.05; done\nkill -" + sig + " $pid\nwait $pid\necho " + sig + " rc=$?\n";
    }
  }
  // A TERM that the command handles by exiting 0 (a checkpoint saved): envlock exits 0.
  script += "rm -f " + q(mark) + "\n" + envlock_cmd() + " run -p " + q(p) +
            " -- sh -c \"trap 'exit 0' TERM; touch " + q(mark) + "; sleep 30 & wait\" &\npid=$!\nwhile [ ! -e " +
            q(mark) + " ]; do sleep 0.05; done\nkill -TERM $pid\nwait $pid\necho TERM handled rc=$?\n";
  spit(root_ / "signals.sh", script);
  auto r = run_command("setsid bash " + q(root_ / "signals.sh"), env_);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out,
            "child got HUP\nHUP rc=7\nHUP rc=129\n"
            "child got INT\nINT rc=7\nINT rc=130\n"
            "child got QUIT\nQUIT rc=7\nQUIT rc=131\n"
            "child got TERM\nTERM rc=7\nTERM rc=143\n"
            "child got USR1\nUSR1 rc=7\nUSR1 rc=138\n"
            "child got USR2\nUSR2 rc=7\nUSR2 rc=140\n"
            "child got ALRM\nALRM rc=7\nALRM rc=142\n"
            "TERM handled rc=0\n");
  EXPECT_EQ(r.err, "");
}

// A SIGKILLed envlock (kill -9 of the job's pid, the OOM killer) cannot pass anything on: the
// command gets SIGKILL too (PR_SET_PDEATHSIG, tini's -p) instead of running on, re-parented to
// init, holding the GPU (attack 30, F4).
TEST_F(RunCli, ACommandDoesNotOutliveASigkilledEnvlock) {
  const fs::path p = root_ / "bare";
  fs::create_directories(p / "conda-meta");
  const fs::path mark = root_ / "child-pid";
  spit(root_ / "kill9.sh", envlock_cmd() + " run -p " + q(p) + " -- sh -c 'echo $$ > " + q(mark) +
                               ".tmp; mv " + q(mark) + ".tmp " + q(mark) + "; exec sleep 30' &\npid=$!\nwhile [ ! -e " +
                               q(mark) + " ]; do sleep 0.05; done\nchild=$(cat " + q(mark) +
                               ")\nkill -KILL $pid\nwait $pid 2>/dev/null  # (sh says \"Killed\" on stderr)\necho envlock rc=$?\ni=0\nwhile kill -0 $child 2>/dev/null "
                               "&& [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done\nkill -0 $child 2>/dev/null && "
                               "{ echo child still running; kill $child; } || echo child ended\n");
  auto r = run_command("sh " + q(root_ / "kill9.sh"), env_);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "envlock rc=137\nchild ended\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(RunCli, BadInvocations) {
  const fs::path p = hand_made_prefix();
  auto none = envlock("run -p " + q(p));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(none.err, "error: envlock run: no command given\nhint: write the command after `--`, e.g. `envlock run -- python train.py`\n");
  auto gone = envlock("run -p " + q(root_ / "nope") + " -- true");
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_EQ(gone.out, "");
  EXPECT_EQ(gone.err, "error: " + (root_ / "nope").string() + ": no such environment (the folder does not exist)\n"
                      "hint: create it first: `envlock create -f envlock.yaml -p " + (root_ / "nope").string() + "`\n");
  auto frozen_alone = envlock("run --frozen -p " + q(p) + " -- true");
  EXPECT_EQ(frozen_alone.exit_code, 2);
  EXPECT_EQ(frozen_alone.err, "error: -e, --locked and --frozen need a manifest\nhint: pass the manifest with -f, or drop them to use "
                              "the environment in " + p.string() + "\n");
  auto no_manifest = run_command("cd " + q(root_) + " && " + envlock_cmd() + " run -- true", env_);
  EXPECT_EQ(no_manifest.exit_code, 1);
  EXPECT_EQ(no_manifest.err, "error: envlock.yaml: no manifest in the current folder\nhint: pass the manifest with -f, or an "
                             "environment folder with -p\n");
  for (const std::string cmd : {"run", "shell-hook"}) {  // the network options, checked as create checks them
    auto net = envlock(cmd + " --connect-timeout soon -p " + q(p) + (cmd == "run" ? " -- true" : ""));
    EXPECT_EQ(net.exit_code, 2) << cmd;
    EXPECT_EQ(net.out, "") << cmd;
    EXPECT_EQ(net.err, "error: " + cmd + ": --connect-timeout: 'soon' is not a whole number of seconds (at most 6 digits)\n"
                       "hint: run `envlock " + cmd + " --help` for its options\n") << cmd;
  }
  auto shell = envlock("shell-hook -p " + q(p) + " --shell tcsh");
  EXPECT_EQ(shell.exit_code, 2);
  EXPECT_EQ(shell.out, "");
  EXPECT_EQ(shell.err, "error: --shell: unknown shell 'tcsh'\nhint: use bash, zsh, fish or posix (any POSIX sh: dash, busybox)\n");
}

TEST_F(RunCli, BadVariablesInTheManifestAreNamedWhereTheyAre) {
  const fs::path project = root_ / "bad";
  spit(project / "envlock.yaml", "channels: [conda-forge]\ndependencies: [python]\nvariables:\n  A: \"one\\ntwo\"\n");
  auto r = envlock("run -f " + q(project / "envlock.yaml") + " -- true");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + (project / "envlock.yaml").string() + ":4:6: the value of variable 'A' holds a newline\n"
                   "    A: \"one\\ntwo\"\n       ^\n"
                   "hint: a variable's value is one line of text (a NUL cannot be in an environment variable; a line "
                   "break would not survive every shell's activation script)\n");
  spit(project / "envlock.yaml", "channels: [conda-forge]\ndependencies: [python]\nvariables:\n  A: \"a\\0b\"\n");
  auto nul = envlock("shell-hook -f " + q(project / "envlock.yaml"));
  EXPECT_EQ(nul.exit_code, 1);
  EXPECT_EQ(nul.out, "");
  EXPECT_NE(nul.err.find(":4:6: the value of variable 'A' holds a NUL byte\n"), std::string::npos) << nul.err;
}

// The shell-hook output, evaluated by bash and by sh: activation as `run` sees it, then
// `envlock_deactivate` runs deactivate.d and puts every variable back.
TEST_F(RunCli, ShellHookEvaluatedByBashAndSh) {
  const fs::path p = hand_made_prefix();
  const std::string hook = envlock_cmd() + " shell-hook -p " + q(p);
  const std::string body = std::string("echo \"$CONDA_PREFIX|$CONDA_SHLVL|$CONDA_DEFAULT_ENV|$CUDA_HOME|$ORDER|${PATH%%:*}\"; ") +
                           "envlock_deactivate; echo \"[$CONDA_PREFIX|${CONDA_SHLVL-unset}|$CUDA_HOME|$ORDER|$PATH]\"; "
                           "command -v envlock_deactivate || echo gone";
  const std::string active = p.string() + "|1|work|" + p.string() + "/cuda|first-second|" + p.string() + "/bin\n";
  for (const std::string shell : {"bash", "posix"}) {
    const std::string runner = shell == "bash" ? "bash --norc --noprofile" : "sh";
    auto r = run_command(runner + " -c " + q("eval \"$(" + hook + " --shell " + shell + ")\"; " + body), env_);
    EXPECT_EQ(r.exit_code, 0) << shell;
    EXPECT_EQ(r.out, "cuda activated\n" + active + "cuda deactivated\n[|unset|||/usr/bin:/bin]\ngone\n") << shell;
    EXPECT_EQ(r.err, "") << shell;
  }
  // The script itself, whole: values single-quoted, the deactivation restoring what was there.
  auto text = envlock("shell-hook -p " + q(p) + " --shell posix");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_EQ(text.err, "");
  const std::string ad = (p / "etc/conda/activate.d/").string();
  EXPECT_EQ(text.out, "# envlock shell-hook: activates " + p.string() + "\n"
                      "# (evaluate with `eval \"$(envlock shell-hook)\"`; `envlock_deactivate` leaves it)\n"
                      "envlock_deactivate() {\n"
                      "    . '" + (p / "etc/conda/deactivate.d/10-cuda.sh").string() + "'\n"
                      "    PATH='/usr/bin:/bin'; export PATH\n"
                      "    unset CONDA_PREFIX\n"
                      "    unset CONDA_SHLVL\n"
                      "    unset CONDA_DEFAULT_ENV\n"
                      "    unset -f envlock_deactivate\n"
                      "}\n"
                      "PATH='" + p.string() + "/bin:/usr/bin:/bin'; export PATH\n"
                      "CONDA_PREFIX='" + p.string() + "'; export CONDA_PREFIX\n"
                      "CONDA_SHLVL='1'; export CONDA_SHLVL\n"
                      "CONDA_DEFAULT_ENV='work'; export CONDA_DEFAULT_ENV\n"
                      ". '" + ad + "05-order.sh'\n. '" + ad + "10-cuda.sh'\n. '" + ad + "20-order.sh'\n");
}

TEST_F(RunCli, ShellHookEvaluatedByZshAndFishWhenInstalled) {
  const fs::path p = hand_made_prefix();
  const std::string hook = envlock_cmd() + " shell-hook -p " + q(p);
  const std::string active = p.string() + "|1|work|" + p.string() + "/cuda|first-second|" + p.string() + "/bin\n";
  if (have("zsh")) {
    auto r = run_command("zsh -f -c " + q("eval \"$(" + hook + " --shell zsh)\"; echo \"$CONDA_PREFIX|$CONDA_SHLVL|"
                                          "$CONDA_DEFAULT_ENV|$CUDA_HOME|$ORDER|${PATH%%:*}\"; envlock_deactivate; "
                                          "echo \"[$CONDA_PREFIX|$CUDA_HOME|$PATH]\""), env_);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, "cuda activated\n" + active + "cuda deactivated\n[||/usr/bin:/bin]\n");
  }
  if (have("fish")) {
    // fish cannot source the .sh scripts: their variables come as bash left them (its output on stderr).
    auto r = run_command("fish --no-config -c " + q(hook + " --shell fish | source; echo \"$CONDA_PREFIX|$CONDA_SHLVL|"
                                                    "$CONDA_DEFAULT_ENV|$CUDA_HOME|$ORDER|$PATH[1]\"; envlock_deactivate; "
                                                    "echo \"[$CONDA_PREFIX|$CUDA_HOME|$PATH]\""), env_);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.out, active + "[||/usr/bin:/bin]\n");  // fish joins a quoted path variable with ':'
    EXPECT_EQ(r.err, "cuda activated\n");
  }
  if (!have("zsh") && !have("fish")) GTEST_SKIP() << "neither zsh nor fish is installed";
}

// The README's main job with `run`: from a manifest, the environment is created on first use
// (locked, installed: messages on stderr), then used as it is; the manifest's variables are set
// literally; an environment the manifest lacks, and --frozen without a lockfile, are refused.
// A project copied to another folder (a restored CI cache, `cp -a`) carries its environment, whose
// files name the old path (attack 30, F1): `run` from the manifest links it again where it is, as
// create does, and runs the copy's programs; an environment given with -p alone is refused, as is
// one whose install was interrupted before its commit (F9: history, verify and list call the
// generation before it current; run used the uncommitted tree, and diff called it "no changes").
TEST_F(RunCli, AMovedOrUncommittedEnvironmentIsNeverRunAsItIs) {
  const fs::path project = project_with_channel();
  ASSERT_EQ(envlock("create -f " + q(project / "envlock.yaml")).exit_code, 0);
  const fs::path copy = root_ / "copy";
  ASSERT_EQ(run_command("cp -a " + q(project) + " " + q(copy)).exit_code, 0);
  const fs::path moved = copy / ".envlock/envs/default";
  for (const std::string& cmd : {"run -p " + q(moved) + " -- true", "shell-hook -p " + q(moved)}) {
    SCOPED_TRACE(cmd);
    auto r = envlock(cmd);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "error: " + moved.string() + ": was installed at " + (project / ".envlock/envs/default").string() +
                         " and moved here: its files name that path, so its programs would run what is there\n"
                         "hint: install it again where it is: `envlock install -l LOCKFILE -p " + moved.string() +
                         "` (or `envlock create` in its project)\n");
  }
  auto r = envlock("run -f " + q(copy / "envlock.yaml") + " -- envlock-greet");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "envlock-greet: prefix is " + moved.string() + "\nHello from an environment that envlock made.\n"
                   "envlock-hello: running from " + moved.string() + "\n");
  EXPECT_NE(r.err.find("warning: the environment was moved from " + (project / ".envlock/envs/default").string()),
            std::string::npos) << r.err;
  // An install killed while its post-link scripts ran leaves this marker in the tree it made.
  spit(moved / "conda-meta/envlock-pending", "{\"previous\": []}\n");
  const std::string pending = ": an install was interrupted (conda-meta/envlock-pending): the tree there was never "
                              "committed\n";
  for (const std::string& cmd : {"run -p " + q(moved) + " -- true", "shell-hook -p " + q(moved)}) {
    SCOPED_TRACE(cmd);
    r = envlock(cmd);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "error: " + moved.string() + pending +
                         "hint: run `envlock install` again (or `envlock rollback`); each rolls the interrupted "
                         "install back first\n");
  }
  r = envlock("diff " + q(copy / "envlock.lock") + " " + q(moved) + " --fail-on any");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "error: " + moved.string() + pending +
                       "hint: run `envlock install` again (or `envlock rollback`, `envlock remove`); each rolls the "
                       "interrupted install back first\n");
}

// An activate.d script whose file name holds a control character (a package built to do it:
// attack 30, F10) is neither sourced nor printed: shell-hook's output went raw to the terminal or
// CI log that shows it. Each command says on stderr, escaped, which script it left out.
TEST_F(RunCli, AScriptWhoseNameHoldsAControlCharacterIsLeftOutAndNamed) {
  const fs::path prefix = hand_made_prefix();
  spit(prefix / "etc/conda/activate.d/\x1b[31mx.sh", "echo 'evil ran'\n");
  const std::string warning = "warning: " + prefix.string() +
                              "/etc/conda/activate.d/\\x1b[31mx.sh: not run: its file name holds a control character "
                              "(rename it to run it)\n";
  auto hook = envlock("shell-hook --shell bash -p " + q(prefix));
  EXPECT_EQ(hook.exit_code, 0) << hook.err;
  EXPECT_EQ(hook.err, warning);
  EXPECT_EQ(hook.out.find('\x1b'), std::string::npos) << hook.out;
  EXPECT_EQ(hook.out.find("x.sh"), std::string::npos) << hook.out;
  auto run = envlock("run -p " + q(prefix) + " -- true");
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, warning + "cuda activated\n");  // the scripts' output goes to stderr
}

TEST_F(RunCli, RunFromAManifestCreatesFirstThenReuses) {
  const fs::path project = project_with_channel();
  const fs::path manifest = project / "envlock.yaml";
  const fs::path prefix = project / ".envlock/envs/default";

  auto frozen = envlock("run --frozen -f " + q(manifest) + " -- true");
  EXPECT_EQ(frozen.exit_code, 1);
  EXPECT_EQ(frozen.out, "");
  EXPECT_EQ(frozen.err, "error: " + (project / "envlock.lock").string() + ": does not exist, and --frozen never locks\n"
                        "hint: run `envlock lock -f " + manifest.string() + "` first, or drop --frozen\n");
  auto unknown = envlock("run -e gpu -f " + q(manifest) + " -- true");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_EQ(unknown.out, "");
  EXPECT_EQ(unknown.err, "error: " + manifest.string() + ": has no environment 'gpu'\nenvironments in it: default\n"
                         "hint: pass one of them with -e\n");
  EXPECT_FALSE(fs::exists(project / "envlock.lock"));

  const std::string cmd = " -- sh -c 'echo \"$OMP_NUM_THREADS|$GREETING|$CONDA_DEFAULT_ENV\"; envlock-greet'";
  auto first = envlock("run -f " + q(manifest) + cmd);
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, "4|it's a \"test\" $HOME|default\nenvlock-greet: prefix is " + prefix.string() +
                           "\nHello from an environment that envlock made.\nenvlock-hello: running from " + prefix.string() + "\n");
  EXPECT_NE(first.err.find("locked " + manifest.string() + " -> " + (project / "envlock.lock").string() + "\n"),
            std::string::npos) << first.err;
  EXPECT_NE(first.err.find("environment 'default' (linux-64) is ready in " + prefix.string() + "\n"), std::string::npos)
      << first.err;  // install's report, on stderr
  ASSERT_TRUE(fs::exists(prefix / "conda-meta/envlock"));

  // Up to date: nothing is locked or installed, stderr stays empty; --locked and --frozen agree.
  for (const std::string flag : {"", "--locked ", "--frozen "}) {
    auto again = envlock("run " + flag + "-f " + q(manifest) + cmd);
    EXPECT_EQ(again.exit_code, 0) << flag;
    EXPECT_EQ(again.out, first.out) << flag;
    EXPECT_EQ(again.err, "") << flag;
  }
  // The activate.d script a package ships runs too.
  spit(prefix / "etc/conda/activate.d/x.sh", "export FROM_SCRIPT=\"$OMP_NUM_THREADS-seen\"\n");
  auto scripted = envlock("run -f " + q(manifest) + " -- sh -c 'echo $FROM_SCRIPT'");
  EXPECT_EQ(scripted.out, "4-seen\n");
  EXPECT_EQ(scripted.err, "");

  // A variable edit does not make the lock stale (variables are no solve input) ...
  spit(manifest, "name: example\nchannels: [" + (root_ / "channel").string() +
                     "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-greet\nvariables: {OMP_NUM_THREADS: '8'}\n");
  auto edited = envlock("run --locked -f " + q(manifest) + " -- sh -c 'echo $OMP_NUM_THREADS'");
  EXPECT_EQ(edited.exit_code, 0);
  EXPECT_EQ(edited.out, "8\n");
  EXPECT_EQ(edited.err, "");
  // ... a dependency edit does: --locked refuses, the default locks again and updates the prefix.
  spit(manifest, "name: example\nchannels: [" + (root_ / "channel").string() +
                     "]\nplatforms: [linux-64]\ndependencies:\n  - envlock-greet\n  - envlock-demo\n");
  auto stale = envlock("run --locked -f " + q(manifest) + " -- true");
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_NE(stale.err.find("no longer matches"), std::string::npos) << stale.err;
  auto relocked = envlock("run -f " + q(manifest) + " -- envlock-demo");
  EXPECT_EQ(relocked.exit_code, 0) << relocked.err;
  EXPECT_NE(relocked.out.find("Hello from an environment that envlock made."), std::string::npos) << relocked.out;
  EXPECT_NE(relocked.err.find("the lockfile is stale"), std::string::npos) << relocked.err;
  // Each install run made is a generation, recorded with its command; rollback undoes the update.
  const auto untimed = [](const std::string& text) {
    return std::regex_replace(text, std::regex("\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d"), "TIME");
  };
  auto history = envlock("history -f " + q(manifest));
  EXPECT_EQ(history.exit_code, 0) << history.err;
  EXPECT_EQ(untimed(history.out), prefix.string() + ": 2 generations (* current)\n"
                                  "     1  TIME  2 packages  envlock run -f envlock.yaml -e default\n"
                                  "*    2  TIME  4 packages  envlock run -f envlock.yaml -e default\n");
  auto back = envlock("rollback -f " + q(manifest));
  EXPECT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(back.out, "rolled back " + prefix.string() + " from generation 2 to generation 1 (2 packages); generation 2 "
                      "is kept: envlock rollback --to 2 returns to it\n");
  auto rolled = envlock("run -p " + q(prefix) + " -- sh -c 'command -v envlock-demo || echo none'");
  EXPECT_EQ(rolled.out, "none\n");
  // A rollback changes the environment, not the lockfile: run from the manifest makes the prefix
  // the lockfile's environment again, a new generation (docs/environments.md, "Generations").
  auto again = envlock("run -f " + q(manifest) + " -- envlock-demo");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("is ready in " + prefix.string()), std::string::npos) << again.err;
  history = envlock("history -f " + q(manifest));
  EXPECT_EQ(untimed(history.out), prefix.string() + ": 3 generations (* current)\n"
                                  "     1  TIME  2 packages  envlock run -f envlock.yaml -e default\n"
                                  "     2  TIME  4 packages  envlock run -f envlock.yaml -e default\n"
                                  "*    3  TIME  4 packages  envlock run -f envlock.yaml -e default\n");

  // shell-hook from the manifest: the variables, quoted so that bash gets them literally.
  auto hook = run_command("bash --norc -c " + q("eval \"$(" + envlock_cmd() + " shell-hook --shell bash -f " +
                                                q(manifest) + ")\"; echo \"[$GREETING|$CONDA_PREFIX]\""),
                          env_);
  EXPECT_EQ(hook.exit_code, 0) << hook.err;
  EXPECT_EQ(hook.out, "[|" + prefix.string() + "]\n");
}

}  // namespace
}  // namespace envlock
