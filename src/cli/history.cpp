// envlock history [-p PREFIX | -e ENV [-f MANIFEST]] [--pin N | --unpin N] [--json] — the
// generations of an environment (envlock/generations.hpp), newest last, the current one marked;
// --pin/--unpin keep one from `envlock gc` or let it go.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/text.hpp"
#include "generations_cli.hpp"

namespace envlock::cli {
namespace {

struct HistoryArgs {
  GenerationTarget target;
  std::uint64_t pin = 0, unpin = 0;
};

nlohmann::json generation_json(const Generation& g) {
  auto text_or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"number", g.number},
          {"current", g.current},
          {"interrupted", g.interrupted},
          {"pinned", g.pinned},
          {"time", text_or_null(g.time)},
          {"command", text_or_null(g.command)},
          {"packages", g.packages},
          {"lockfile", text_or_null(g.lockfile)},
          {"lockfile_hash", text_or_null(g.lockfile_hash)},
          {"manifest_hash", text_or_null(g.manifest_hash)},
          {"environment", text_or_null(g.environment)},
          {"platform", text_or_null(g.platform)},
          {"tree", g.tree.string()},
          {"lockfile_copy", g.lockfile_copy.empty() ? nlohmann::json(nullptr) : nlohmann::json(g.lockfile_copy.string())}};
}

/// `* 3  2026-12-03 15:00:00  4 packages  envlock install -l envlock.lock  (pinned)`
std::string generation_line(const Generation& g) {
  char head[48];
  std::snprintf(head, sizeof head, "%s%4s  ", g.current ? "* " : "  ",
                g.number == 0 ? "-" : std::to_string(g.number).c_str());
  std::string line = head + (g.time.empty() ? std::string("(time unknown)     ") : g.time) + "  " +
                     std::to_string(g.packages) + (g.packages == 1 ? " package " : " packages") + "  " +
                     (g.command.empty() ? std::string("(command unknown)") : g.command);
  if (g.pinned) line += "  (pinned)";
  if (g.interrupted) line += "  (interrupted: never committed)";
  return printable(line);
}

int run_history(const Context& ctx, const HistoryArgs& args) {
  auto prefix = generation_prefix(args.target);
  if (!prefix) return report_error(ctx, prefix.error());
  if (args.pin != 0 && args.unpin != 0)
    return report_error(ctx, Error{ErrorKind::Usage, "--pin", "and --unpin cannot be given together", "", ""});
  if (args.pin != 0 || args.unpin != 0) {
    const bool pin = args.pin != 0;
    const std::uint64_t n = pin ? args.pin : args.unpin;
    auto warnings = set_generation_pinned(*prefix, n, pin, say_lock_wait);
    if (!warnings) return report_error(ctx, warnings.error());
    for (const auto& w : *warnings) warn(w);
    if (ctx.json)
      std::cout << json_text({{"prefix", prefix->string()}, {"generation", n}, {"pinned", pin}, {"warnings", *warnings}})
                << "\n";
    else
      std::cout << terminal_text((pin ? "pinned generation " : "unpinned generation ") + std::to_string(n) + " of " +
                                 prefix->string() + (pin ? " (envlock gc keeps it)" : ""))
                << "\n";
    return 0;
  }
  auto gens = list_generations(*prefix);
  if (!gens) return report_error(ctx, gens.error());
  if (const auto bad = unusable_generations_folder(*prefix))  // its trees are not listed: say why
    warn(bad->where + ": " + bad->message + "; " + bad->detail + ": no generation in it is listed (" + bad->hint + ")");
  if (const auto to = interrupted_rollback(*prefix))
    warn(prefix->string() + " holds no environment: a rollback to generation " + std::to_string(*to) +
         " was stopped between its two renames (its filesystem cannot swap two folders in one step); the next envlock "
         "command that takes its lock finishes it: envlock rollback -p " + prefix->string() + " --to " +
         std::to_string(*to));
  std::uint64_t current = 0;
  bool has_current = false;  // false while an interrupted first install is all there is
  for (const auto& g : *gens)
    if (g.current) current = g.number, has_current = true;
  for (const auto& g : *gens)
    if (g.interrupted)
      warn(prefix->string() + ": an install did not finish (conda-meta/envlock-pending: killed, or stopped while its "
           "post-link scripts ran): generation " + (g.number == 0 ? std::string("-") : std::to_string(g.number)) +
           " was never committed; the next envlock command that takes its lock (install, rollback, gc) rolls it "
           "back" +
           (current != 0   ? " to generation " + std::to_string(current)
            : has_current ? std::string(" to the environment before it")
                          : std::string("; it was the first install into it, so that leaves no environment")));
  if (ctx.json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& g : *gens) list.push_back(generation_json(g));
    std::cout << json_text({{"prefix", prefix->string()},
                            {"current", has_current ? nlohmann::json(current) : nlohmann::json(nullptr)},
                            {"generations", list}})
              << "\n";
    return 0;
  }
  std::cout << terminal_text(prefix->string()) << ": " << gens->size() << (gens->size() == 1 ? " generation" : " generations")
            << " (* current)\n";
  for (const auto& g : *gens) std::cout << generation_line(g) << "\n";
  return 0;
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<HistoryArgs>();
  add_generation_target(sub, args->target);
  add_whole_number_option(sub, "--pin", args->pin, 1, kMaxGenerationNumber, "pin generation N: envlock gc never removes it");
  add_whole_number_option(sub, "--unpin", args->unpin, 1, kMaxGenerationNumber, "unpin generation N");
  sub.callback([&ctx, args] { ctx.exit_code = run_history(ctx, *args); });
}

const RegisterCommand reg{"history", "list the generations of an environment (earlier states kept for rollback)", &setup};

}  // namespace
}  // namespace envlock::cli
