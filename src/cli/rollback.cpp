// envlock rollback [-p PREFIX | -e ENV [-f MANIFEST]] [--to N] [--json] — makes an earlier
// generation of the environment current in one atomic step: no network, no solve, no script
// (envlock/generations.hpp, rollback_generation()).
#include <iostream>
#include <nlohmann/json.hpp>

#include "generations_cli.hpp"

namespace envlock::cli {
namespace {

struct RollbackArgs {
  GenerationTarget target;
  std::uint64_t to = 0;
};

int run_rollback(const Context& ctx, const RollbackArgs& args) {
  auto prefix = generation_prefix(args.target);
  if (!prefix) return report_error(ctx, prefix.error());
  auto report =
      rollback_generation(*prefix, args.to == 0 ? std::nullopt : std::optional<std::uint64_t>(args.to), say_lock_wait);
  if (!report) return report_error(ctx, report.error());
  for (const auto& w : report->warnings) warn(w);
  const bool changed = report->from != report->to || report->interrupted_install;
  if (ctx.json) {
    std::cout << json_text({{"prefix", prefix->string()},
                            {"from", report->from},
                            {"to", report->to},
                            {"changed", changed},
                            {"interrupted_install", report->interrupted_install},
                            {"environment_left", report->environment_left},
                            {"packages", report->packages},
                            {"warnings", report->warnings}})
              << "\n";
    return 0;
  }
  const auto n = [](std::uint64_t g) { return g == 0 ? std::string("-") : std::to_string(g); };
  if (report->interrupted_install && !report->environment_left)
    std::cout << terminal_text("rolled back " + prefix->string() + " from generation " + n(report->from) +
                               ", an install that did not finish (never committed; not kept); it was the first "
                               "install into it, so no environment is left: run the install again to make it")
              << "\n";
  else if (report->interrupted_install)
    std::cout << terminal_text("rolled back " + prefix->string() + " from generation " + n(report->from) +
                               ", an install that did not finish (never committed; not kept), to generation " +
                               n(report->to) + " (" + std::to_string(report->packages) +
                               (report->packages == 1 ? " package" : " packages") +
                               "), the one before it; `envlock rollback` again goes back further")
              << "\n";
  else if (!changed)
    std::cout << terminal_text(prefix->string() + ": generation " + std::to_string(report->to) +
                               " is the current one already; nothing was changed")
              << "\n";
  else
    std::cout << terminal_text("rolled back " + prefix->string() + " from generation " + std::to_string(report->from) +
                               " to generation " + std::to_string(report->to) + " (" +
                               std::to_string(report->packages) + (report->packages == 1 ? " package); generation " : " packages); generation ") +
                               std::to_string(report->from) + " is kept: envlock rollback --to " +
                               std::to_string(report->from) + " returns to it")
              << "\n";
  return 0;
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<RollbackArgs>();
  add_generation_target(sub, args->target);
  add_whole_number_option(sub, "--to", args->to, 1, kMaxGenerationNumber,
                          "the generation to make current (default: the newest one older than the current)");
  sub.callback([&ctx, args] { ctx.exit_code = run_rollback(ctx, *args); });
}

const RegisterCommand reg{"rollback", "make an earlier generation of an environment current, in one step", &setup};

}  // namespace
}  // namespace envlock::cli
