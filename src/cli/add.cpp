// envlock add SPEC... [-f MANIFEST] [-e ENV] [--pypi] [--no-install] [--offline]
// Adds each spec to the environment's dependencies (or, with --pypi, its `pip:` list), keeping
// the manifest's comments and formatting, re-locks minimally and updates the environment, as
// `pixi add` does (edit_run.hpp; docs/environments.md, "Adding and removing packages").
#include "edit_run.hpp"

namespace envlock::cli {
namespace {

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<EditArgs>();
  sub.add_option("spec", args->values, "MatchSpecs to add (`numpy >=1.26`), or pip requirements with --pypi")->required();
  add_edit_options(sub, *args);
  sub.add_flag("--no-pin", args->no_pin,
               "write a spec given without a version as it is (default: `>=LOCKED,<NEXT-MAJOR`, as pixi add)");
  sub.callback([&ctx, args] { ctx.exit_code = run_edit(ctx, EditCommand::Add, *args); });
}

const RegisterCommand reg{"add", "add packages to a manifest's environment, re-lock minimally and install", &setup};

}  // namespace
}  // namespace envlock::cli
