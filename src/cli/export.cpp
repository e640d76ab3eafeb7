// envlock export — one environment x platform of a lockfile in another format.
//   envlock export -l envlock.lock [-e ENV] [--platform P] [--format explicit] [-o FILE]
// `explicit` is conda's @EXPLICIT spec file (install order, `#sha256:` fragments), accepted by
// `conda create --file`, `micromamba create -f` and `envlock install`. Without -o the file goes
// to stdout. Exit codes: 0 ok, 1 unreadable lockfile, an environment it lacks (pick_environment:
// the rule of every command with -e) or write failure, 2 usage (unknown platform, several
// environments and no -e, bad flags).
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/atomic_file.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/platform.hpp"
#include "envlock/reference.hpp"
#include "registry.hpp"
#include "lock_input.hpp"

namespace envlock::cli {
namespace {

struct Options {
  std::string lockfile = "envlock.lock";
  std::string environment;
  std::string platform;
  std::string format = "explicit";
  std::string output;
};

std::string names_of(const auto& map) {
  std::string out;
  for (const auto& kv : map) out += (out.empty() ? "" : ", ") + kv.first;
  return out;
}

int run_export(const Context& ctx, const Options& o) {
  auto lf = read_envlock_lockfile(o.lockfile, "export");
  if (!lf) return report_error(ctx, lf.error());

  auto picked = pick_environment(*lf, o.environment, o.lockfile);
  if (!picked) return report_error(ctx, picked.error());
  const std::string& env_name = *picked;
  auto env = lf->environments.find(env_name);

  std::string platform = o.platform;
  if (platform.empty()) {
    const std::string host = Platform::host().to_string();
    if (env->second.platforms.size() == 1) platform = env->second.platforms.begin()->first;
    else if (env->second.platforms.count(host)) platform = host;
    else
      return report_error(ctx, Error{ErrorKind::Usage, o.lockfile,
                                     "environment '" + env_name + "' is not locked for this host (" + host + "); choose a platform with --platform",
                                     "", "platforms: " + names_of(env->second.platforms)});
  }
  auto lp = env->second.platforms.find(platform);
  if (lp == env->second.platforms.end())
    return report_error(ctx, Error{ErrorKind::Usage, o.lockfile,
                                   "environment '" + env_name + "' is not locked for " + platform, "",
                                   "platforms: " + names_of(env->second.platforms)});

  auto text = to_explicit(lp->second);
  if (!text) return report_error(ctx, text.error().with_context(o.lockfile));
  if (!lp->second.pip.empty())
    warn(std::to_string(lp->second.pip.size()) + " pip requirement(s) of " + env_name + "/" + platform +
         " are not part of an @EXPLICIT file; install them with pip");

  if (!o.output.empty()) {
    if (auto st = write_file_atomic(o.output, *text); !st) return report_error(ctx, st.error());
  }
  if (ctx.json) {
    nlohmann::json j = {{"environment", env_name},
                        {"platform", platform},
                        {"format", o.format},
                        {"packages", lp->second.packages.size()}};
    if (o.output.empty()) j["content"] = *text;
    else j["output"] = o.output;
    std::cout << json_text(j) << "\n";
  } else if (o.output.empty()) {
    std::cout << terminal_text(*text);  // stdout may be a terminal: control bytes escaped (-o writes them as they are)
  } else {
    std::cout << "exported " << env_name << "/" << platform << " (" << lp->second.packages.size() << " packages) to "
              << o.output << "\n";
  }
  return 0;
}

void setup(CLI::App& sub, Context& ctx) {
  static Options o;
  sub.add_option("-l,--lockfile", o.lockfile, "the lockfile to read")->capture_default_str();
  sub.add_option("-e,--environment", o.environment, "environment to export (default: `default`, or the only one)");
  sub.add_option("--platform", o.platform, "subdir to export (default: the only one, else this host's)");
  sub.add_option("--format", o.format, "output format")->check(CLI::IsMember({"explicit"}))->capture_default_str();
  sub.add_option("-o,--output", o.output, "write to this file (atomically) instead of stdout");
  sub.callback([&ctx] { ctx.exit_code = run_export(ctx, o); });
}

const RegisterCommand reg{"export", "write one locked environment as a conda @EXPLICIT file", &setup};

}  // namespace
}  // namespace envlock::cli
