// envlock rm NAME... [-f MANIFEST] [-e ENV] [--pypi] [--no-install] [--offline]
// Deletes each package from the environment's dependencies (or its `pip:` list), keeping the
// manifest's comments and formatting, re-locks minimally and updates the environment, as
// `pixi remove` does (edit_run.hpp). `envlock remove` is another command: it deletes a prefix.
#include "edit_run.hpp"

namespace envlock::cli {
namespace {

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<EditArgs>();
  sub.add_option("name", args->values, "package names to remove (a spec is read for its name)")->required();
  add_edit_options(sub, *args);
  sub.callback([&ctx, args] { ctx.exit_code = run_edit(ctx, EditCommand::Remove, *args); });
}

const RegisterCommand reg{"rm", "remove packages from a manifest's environment, re-lock minimally and update it", &setup};

}  // namespace
}  // namespace envlock::cli
