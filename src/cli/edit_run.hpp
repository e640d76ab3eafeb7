#pragma once
// `envlock add` and `envlock rm`, one flow (docs/environments.md, "Adding and removing packages"),
// as `pixi add` / `pixi remove` run it (prefix-dev/pixi, src/cli/add.rs, remove.rs):
//   1. the manifest's text is edited in memory (envlock/manifest_edit.hpp: comments, order and
//      formatting kept, only the entry's line changes);
//   2. the edited manifest is locked with the existing lockfile as LockOptions::previous, so
//      every locked record that still fits stays (only what the change requires moves);
//   3. only when that lock succeeds are the manifest and then the lockfile written (pixi's order), each
//      atomically (write_file_atomic: temporary file, rename). A spec that cannot be satisfied,
//      or any other error before this step, leaves both files byte-identical; a manifest that
//      changed on disk meanwhile is not overwritten (nothing is written); when the lockfile
//      cannot be written after the manifest was, the manifest's old bytes are put back;
//   3a. add: a conda spec given without a version gets pixi's implicit constraint from the
//      locked version (`>=1.26.4,<2`) unless --no-pin, and is locked again (nothing moves);
//   4. unless --no-install, the environment is installed or updated as `envlock create` does
//      (install_created(): the path `envlock install` takes), into .envlock/envs/<env>.
// Output: "✔ Added SPEC" / "✔ Removed SPEC" lines (pixi's wording, on stdout here, as envlock
// prints every command's outcome there), the lock's change per environment x platform (as
// `envlock lock` prints it), then the install's own report. --json: one object on stdout.
// Exit codes: 0 done; 1 failure (unsatisfiable, not a dependency, network, install); 2 usage.
#include <string>
#include <vector>

#include "registry.hpp"

namespace envlock::cli {

struct EditArgs {
  std::string manifest;              ///< -f; empty: envlock.yaml in the current folder
  std::string environment;           ///< -e; empty: `default`, or the only environment
  std::vector<std::string> values;   ///< add: the specs; rm: the package names
  bool pypi = false;                 ///< --pypi: the environment's `pip:` list
  bool no_install = false;           ///< --no-install: edit and lock only
  bool no_pin = false;               ///< add --no-pin: a spec without a version is written as given
  bool offline = false;              ///< --offline: cached repodata only
};

enum class EditCommand { Add, Remove };

/// Runs `envlock add` or `envlock rm` (see the file comment). Returns the exit code.
int run_edit(const Context& ctx, EditCommand command, const EditArgs& args);

/// The options `add` and `rm` share (-f, -e, --pypi, --no-install, --offline, network options);
/// `values` is added by each command with its own name and help.
void add_edit_options(CLI::App& sub, EditArgs& args);

}  // namespace envlock::cli
