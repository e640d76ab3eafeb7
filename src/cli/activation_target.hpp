#pragma once
// The environment `envlock run` and `envlock shell-hook` activate, from their shared options
// (-e ENV | -p PREFIX, -f MANIFEST, --frozen | --locked), created or updated first when needed.
#include "create_run.hpp"
#include "envlock/activate.hpp"
#include "registry.hpp"

namespace envlock::cli {

/// Adds -e, -p, -f, --locked, --frozen to `sub`, stored in `args`, and the network options
/// (network_options.hpp) for the lock and install that may come first.
void add_activation_options(CLI::App& sub, CreateArgs& args);

/// The environment to activate:
///   * `-p PREFIX` without `-f`: that environment as it is (it must exist and have conda-meta/;
///     no manifest, so no variables);
///   * otherwise the manifest (`-f`, default ./envlock.yaml) and its environment (`-e`, else the
///     only one, else `default`): prepare_create() locks as `create` does (--locked, --frozen
///     meaning what they mean there), then the environment is installed (install_created())
///     unless its prefix already holds this lockfile's environment (conda-meta/envlock: the
///     same environment and lockfile hash, no interrupted install), as `pixi run` installs only
///     an environment that is missing or out of date. Every message of that goes to stderr.
/// Returns 0 with `out` filled (the prefix, the manifest's variables for the environment), or
/// the exit code of the error reported.
int resolve_activation(const Context& ctx, const CreateArgs& args, ActivationRequest& out);

}  // namespace envlock::cli
