#pragma once
// envlock/activate.hpp — using an environment: what activation sets, the activation script a
// shell evaluates (`envlock shell-hook`), and running a command inside it (`envlock run`).
// The user's page is docs/environments.md.
//
// Activation follows conda's (conda/activate.py, _Activator._build_activate_stack and
// build_deactivate), stacked as `conda activate --stack` stacks:
//   * PATH gets PREFIX/bin in front (_add_prefix_to_path; on Unix _get_path_dirs is bin/ only);
//   * CONDA_PREFIX = PREFIX, CONDA_SHLVL = the old level + 1, CONDA_DEFAULT_ENV = the folder's
//     name when its parent is called `envs`, else the prefix (_default_env), and, when an
//     environment was active already (CONDA_SHLVL > 0), CONDA_PREFIX_<old level> = its prefix;
//   * the environment's variables (conda's `env_vars`: here the manifest's `variables:`) are
//     exported with them, before the scripts run, so that the scripts see them;
//   * then PREFIX/etc/conda/activate.d/*.sh run, in sorted (byte) order (_get_activate_scripts:
//     sorted(glob(...))); deactivation runs etc/conda/deactivate.d/*.sh in reverse sorted order
//     (_get_deactivate_scripts) and then puts back every variable activation set.
// The scripts are always run by a shell, never read by envlock: `envlock run` sources them in
// bash and takes the environment bash ends with (`env -0`); the shell-hook output sources them
// in the user's shell (bash, zsh, sh), or, for fish, which cannot source them, carries the
// variables they set as bash leaves them.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "envlock/result.hpp"

namespace envlock {

/// An environment as NAME=VALUE strings, in their order (as `environ` holds it).
using EnvironmentBlock = std::vector<std::string>;

/// The shells `envlock shell-hook` writes for.
enum class Shell {
  Bash,   ///< bash (POSIX syntax; `.` sources the scripts)
  Zsh,    ///< zsh (likewise)
  Fish,   ///< fish 3 (`set -gx`; the activate.d scripts' variables carried from bash)
  Posix,  ///< any POSIX sh (dash, busybox sh): POSIX.1-2017 XCU 2 syntax only
};

/// "bash", "zsh", "fish", "posix" -> Shell. ErrorKind::Usage naming the four otherwise.
Result<Shell> parse_shell(std::string_view name);

/// What to activate.
struct ActivationRequest {
  std::filesystem::path prefix;  ///< the environment folder; made absolute and normal here
  /// The manifest's variables for the environment (Manifest::variables_for()), in order.
  std::vector<std::pair<std::string, std::string>> variables;
};

/// What activation does, worked out from the request and the environment it starts from; no
/// script has run yet.
struct Activation {
  std::filesystem::path prefix;  ///< absolute, lexically normal
  /// The variables set, in this order: PATH, CONDA_PREFIX, CONDA_SHLVL, CONDA_DEFAULT_ENV,
  /// CONDA_PREFIX_<n> when stacking, then the manifest's variables.
  std::vector<std::pair<std::string, std::string>> set;
  std::vector<std::filesystem::path> activate_scripts;    ///< etc/conda/activate.d/*.sh, sorted
  std::vector<std::filesystem::path> deactivate_scripts;  ///< etc/conda/deactivate.d/*.sh, reverse sorted
  /// Scripts of either folder left out because their file name holds a control character (a
  /// byte below 0x20, or 0x7f): `shell-hook` would print it raw to the terminal that shows the
  /// script or a CI log (attack 30, F10), and no package names a script so. The CLI warns of each.
  std::vector<std::filesystem::path> skipped_scripts;
};

/// Checks that `prefix` is an environment: an existing folder with `conda-meta/` (conda's
/// EnvironmentLocationNotFound otherwise). ErrorKind::Io naming the prefix, with a hint to
/// create it (`envlock create`).
Status check_environment_prefix(const std::filesystem::path& prefix);

/// Works out the activation of `request` from `current` (the environment it starts from: its
/// PATH, CONDA_SHLVL and CONDA_PREFIX). Lists the scripts (an unreadable folder lists none).
/// Never fails; call check_environment_prefix() first.
Activation plan_activation(const ActivationRequest& request, const EnvironmentBlock& current);

/// `current` with the activation's variables set (PATH = PREFIX/bin + ":" + the old PATH, or
/// PREFIX/bin alone when there was none) and its activate.d scripts sourced by bash
/// (`bash --noprofile --norc`, found in envlock's own PATH), in order, their stdout sent to
/// stderr; what the scripts export, change or unset is taken from the environment bash ends
/// with. Without scripts no shell runs. Errors (ErrorKind::Io): bash cannot be started (hint:
/// install bash), or it ends other than with status 0 (a script ran `exit`; the status named).
Result<EnvironmentBlock> activated_environment(const Activation& activation, const EnvironmentBlock& current);

/// The activation script for `shell`, to be evaluated in the user's shell (`eval "$(envlock
/// shell-hook)"`; fish: `envlock shell-hook --shell fish | source`). It saves what it changes,
/// sets the activation's variables, sources the activate.d scripts (fish: sets the variables
/// `script_changes` lists instead, see activated_environment()), and defines the function
/// `envlock_deactivate`, which sources the deactivate.d scripts (not in fish), puts back each
/// saved variable (unsetting those that were unset) and removes itself. Values are quoted for
/// the shell: any text but NUL survives. `current`: the environment the shell has now (what
/// deactivation puts back; the one plan_activation() was given). `script_changes`: for fish
/// only, the variables the activate.d scripts changed (nullopt: unset); ignored otherwise.
std::string activation_script(const Activation& activation, Shell shell, const EnvironmentBlock& current,
                              const std::vector<std::pair<std::string, std::optional<std::string>>>& script_changes = {});

/// What `activated` changes of `before`: each variable set to a new value, and each removed
/// (nullopt), in `activated`'s order, then the removed ones in `before`'s order.
std::vector<std::pair<std::string, std::optional<std::string>>> environment_changes(const EnvironmentBlock& before,
                                                                                    const EnvironmentBlock& activated);

/// Runs `argv` with the environment `environment`, its stdin, stdout and stderr envlock's, and
/// waits for it. argv[0] without a '/' is looked up in `environment`'s PATH (execvp's rule,
/// POSIX.1-2017 XSH exec: the activated PATH, not envlock's), and started through
/// envlock/process.hpp's runner with the default dispositions of SIGINT, SIGTERM and SIGHUP.
/// While it runs envlock ignores SIGINT, as a shell does for a foreground job: Ctrl-C reaches
/// the command, which decides. Returns the exit code a shell would report (POSIX.1-2017 XCU 2.8.2): its exit
/// status, 128 + N for a death by signal N, 127 for a command not found, 126 for one found but
/// not executable (the reason printed on stderr as `envlock run: NAME: ...`, as shells do).
int run_in_environment(const std::vector<std::string>& argv, const EnvironmentBlock& environment);

/// envlock's own environment (environ) as a block.
EnvironmentBlock current_environment();

}  // namespace envlock
