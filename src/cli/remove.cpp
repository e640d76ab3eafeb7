// envlock remove -p PREFIX [--no-scripts] [--dry-run] — deletes an environment that envlock made
// (conda-meta/envlock), and nothing else; packages' pre-unlink scripts run first, as conda runs them.
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/install.hpp"
#include "install_run.hpp"
#include "registry.hpp"

namespace envlock::cli {
namespace {

struct RemoveArgs {
  std::string prefix;
  bool no_scripts = false;
  bool dry_run = false;
};

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<RemoveArgs>();
  sub.add_option("-p,--prefix", args->prefix, "the environment to delete")->required();
  sub.add_flag("--no-scripts", args->no_scripts, "do not run packages' pre-unlink scripts");
  sub.add_flag("--dry-run", args->dry_run, "print the packages that would be removed; change nothing");
  sub.callback([&ctx, args] {
    auto report = remove_environment(args->prefix, args->no_scripts ? RunScripts::No : RunScripts::Yes,
                                     args->dry_run ? DryRun::Yes : DryRun::No, say_lock_wait);
    if (!report) {
      ctx.exit_code = report_error(ctx, report.error());
      if (const int sig = install_interrupted_by(); sig != 0) ctx.exit_code = 128 + sig;  // a script stopped by it
      return;
    }
    for (const auto& w : report->warnings) warn(w);
    if (args->dry_run) {
      if (ctx.json) {
        std::cout << json_text({{"dry_run", true}, {"prefix", args->prefix}, {"removed", report->removed},
                                {"warnings", report->warnings}})
                  << "\n";
      } else {
        std::cout << terminal_text("dry run: " + args->prefix + " would be removed; nothing was changed") << "\n";
        for (const auto& d : report->removed) std::cout << "  removed    " << terminal_text(d) << "\n";
        std::cout << "  " << report->removed.size() << " removed\n";
      }
      ctx.exit_code = 0;
      return;
    }
    if (ctx.json) {
      std::cout << json_text({{"removed", args->prefix},
                              {"packages", report->removed},
                              {"messages", report->messages},
                              {"warnings", report->warnings}})
                << "\n";
    } else {
      for (const auto& m : report->messages) std::cout << terminal_text(m) << (m.ends_with('\n') ? "" : "\n");
      std::cout << terminal_text("removed " + args->prefix) << " (" << report->removed.size() << " packages)\n";
    }
    ctx.exit_code = 0;
  });
}

const RegisterCommand reg{"remove", "delete an environment that envlock made", &setup};

}  // namespace
}  // namespace envlock::cli
