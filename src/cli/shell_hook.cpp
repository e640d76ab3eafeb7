// envlock shell-hook [-e ENV | -p PREFIX] [-f MANIFEST] [--frozen|--locked] [--shell bash|zsh|fish|posix]
// Prints the activation script of the environment for the shell to evaluate, as `pixi
// shell-hook` does (creating or updating the environment first, resolve_activation()):
//   eval "$(envlock shell-hook)"                      bash, zsh, sh
//   envlock shell-hook --shell fish | source          fish
// The script defines `envlock_deactivate`, which runs etc/conda/deactivate.d/*.sh and puts back
// what activation changed (envlock/activate.hpp, activation_script()).
#include <cstdlib>
#include <iostream>

#include "activation_target.hpp"
#include "envlock/activate.hpp"

namespace envlock::cli {
namespace {

namespace fs = std::filesystem;

struct ShellHookArgs {
  CreateArgs target;
  std::string shell;
};

/// Without --shell: $SHELL's name when it is bash, zsh or fish, else POSIX sh.
Shell default_shell() {
  const char* s = std::getenv("SHELL");
  const std::string name = s != nullptr ? fs::path(s).filename().string() : "";
  if (name == "bash") return Shell::Bash;
  if (name == "zsh") return Shell::Zsh;
  if (name == "fish") return Shell::Fish;
  return Shell::Posix;
}

int run_shell_hook(const Context& ctx, const ShellHookArgs& args) {
  Shell shell = default_shell();
  if (!args.shell.empty()) {
    auto parsed = parse_shell(args.shell);
    if (!parsed) return report_error(ctx, parsed.error());
    shell = *parsed;
  }
  ActivationRequest request;
  if (const int code = resolve_activation(ctx, args.target, request); code != 0) return code;
  const EnvironmentBlock current = current_environment();
  const Activation activation = plan_activation(request, current);
  for (const auto& skipped : activation.skipped_scripts)
    warn(skipped.string() + ": not run: its file name holds a control character (rename it to run it)");
  std::vector<std::pair<std::string, std::optional<std::string>>> script_changes;
  if (shell == Shell::Fish && !activation.activate_scripts.empty()) {
    // fish cannot source the .sh scripts: what they set in bash is carried instead.
    EnvironmentBlock before = current;
    auto after = activated_environment(Activation{activation.prefix, activation.set, {}, {}}, current);
    auto activated = activated_environment(activation, current);
    if (!activated) return report_error(ctx, activated.error());
    if (after) before = *after;
    script_changes = environment_changes(before, *activated);
  }
  std::cout << activation_script(activation, shell, current, script_changes);
  return 0;
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<ShellHookArgs>();
  add_activation_options(sub, args->target);
  args->target.command = "shell-hook";  // what conda-meta/history records when it installs
  sub.add_option("--shell", args->shell, "bash, zsh, fish or posix (default: $SHELL's, else posix)");
  sub.callback([&ctx, args] { ctx.exit_code = run_shell_hook(ctx, *args); });
}

const RegisterCommand reg{"shell-hook", "print the script that activates an environment in a shell (eval it)", &setup};

}  // namespace
}  // namespace envlock::cli
