// envlock run [-e ENV | -p PREFIX] [-f MANIFEST] [--frozen|--locked] -- CMD ARGS...
// Runs CMD inside the environment, as `pixi run` and `conda run` do: creates or updates the
// environment first when the lockfile is stale or the prefix missing (resolve_activation()),
// activates it as conda does (envlock/activate.hpp: PATH, CONDA_PREFIX, CONDA_SHLVL,
// CONDA_DEFAULT_ENV, the manifest's variables, then etc/conda/activate.d/*.sh in bash) and
// exits with CMD's exit code (128 + N when a signal N ended it; 127 not found, 126 not
// executable, as shells report them).
#include <iostream>

#include "activation_target.hpp"
#include "envlock/activate.hpp"

namespace envlock::cli {
namespace {

struct RunArgs {
  CreateArgs target;
  std::vector<std::string> command;
};

int run_run(const Context& ctx, const RunArgs& args) {
  if (args.command.empty()) {
    return report_error(ctx, Error{ErrorKind::Usage, "envlock run", "no command given", "",
                                   "write the command after `--`, e.g. `envlock run -- python train.py`"});
  }
  ActivationRequest request;
  if (const int code = resolve_activation(ctx, args.target, request); code != 0) return code;
  const EnvironmentBlock current = current_environment();
  const Activation activation = plan_activation(request, current);
  for (const auto& skipped : activation.skipped_scripts)
    warn(skipped.string() + ": not run: its file name holds a control character (rename it to run it)");
  auto env = activated_environment(activation, current);
  if (!env) return report_error(ctx, env.error());
  std::cout.flush();
  std::cerr.flush();
  return run_in_environment(args.command, *env);
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<RunArgs>();
  add_activation_options(sub, args->target);
  args->target.command = "run";  // what conda-meta/history records when run installs
  // Everything from the first word that is not one of run's options (or after `--`) is the
  // command and its arguments, passed on untouched: once a positional word is read, every later
  // word is positional (positionals_at_end), and none falls through to envlock's own options.
  sub.add_option("command", args->command, "the command and its arguments (after `--`)");
  sub.positionals_at_end();
  sub.fallthrough(false);
  sub.footer("The command follows `--`: envlock run -e train -- python train.py --epochs 3");
  sub.callback([&ctx, args] {
    ctx.exit_code = run_run(ctx, *args);
  });
}

const RegisterCommand reg{"run", "run a command in an environment (created or updated first when needed), with its exit code",
                          &setup};

}  // namespace
}  // namespace envlock::cli
