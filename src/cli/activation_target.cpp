// resolve_activation(): which environment `run` and `shell-hook` use, made current first.
#include "activation_target.hpp"

#include <iostream>

#include "envlock/generations.hpp"
#include "envlock/hash.hpp"
#include "envlock/install.hpp"
#include "network_options.hpp"

namespace envlock::cli {
namespace {

namespace fs = std::filesystem;

/// While alive, what the command writes on stdout goes to stderr: stdout carries only the
/// command's output (`run`) or the activation script (`shell-hook`).
class StdoutToStderr {
 public:
  StdoutToStderr() : saved_(std::cout.rdbuf(std::cerr.rdbuf())) {}
  ~StdoutToStderr() { std::cout.rdbuf(saved_); }
  StdoutToStderr(const StdoutToStderr&) = delete;
  StdoutToStderr& operator=(const StdoutToStderr&) = delete;

 private:
  std::streambuf* saved_;
};

/// True when `plan.prefix` holds what the lockfile pins for the environment: conda-meta/envlock
/// names the environment and the lockfile's sha256, and no install was interrupted there.
bool up_to_date(const CreatePlan& plan) {
  auto origin = read_prefix_origin(plan.prefix);
  if (!origin || !*origin || (*origin)->environment != plan.environment) return false;
  auto digest = hash_file(plan.lock_path, HashAlgorithm::Sha256);
  if (!digest || (*origin)->lockfile_hash != "sha256:" + *digest) return false;
  auto pending = interrupted_install(plan.prefix);
  return pending && !pending->has_value();
}

}  // namespace

void add_activation_options(CLI::App& sub, CreateArgs& args) {
  sub.add_option("-f,--file", args.manifest, "the manifest (default: envlock.yaml in the current folder)");
  sub.add_option("-e,--environment", args.environment, "the manifest's environment (default: the only one, or 'default')");
  sub.add_option("-p,--prefix", args.prefix,
                 "the environment folder (alone: an existing environment; with -f: where the manifest's goes)");
  sub.add_flag("--locked", args.locked, "fail instead of locking when the lockfile is missing or stale");
  sub.add_flag("--frozen", args.frozen, "use the lockfile as it is, without checking it against the manifest");
  add_network_options(sub);  // for the lock and install that may come first, as create has them
}

int resolve_activation(const Context& ctx, const CreateArgs& given, ActivationRequest& out) {
  if (!given.prefix.empty() && given.manifest.empty()) {
    if (!given.environment.empty() || given.locked || given.frozen) {
      return report_error(ctx, Error{ErrorKind::Usage, "", "-e, --locked and --frozen need a manifest", "",
                                     "pass the manifest with -f, or drop them to use the environment in " + given.prefix});
    }
    if (auto st = check_environment_prefix(given.prefix); !st) {
      Error e = st.error();
      // No tree there because a rollback in two renames was stopped between them: say how to end it.
      if (const auto to = interrupted_rollback(given.prefix))
        e.hint = "a rollback to generation " + std::to_string(*to) +
                 " was stopped between its two renames; `envlock rollback -p " + given.prefix + " --to " +
                 std::to_string(*to) + "` finishes it";
      return report_error(ctx, e);
    }
    out.prefix = given.prefix;
    return 0;
  }
  CreateArgs args = given;
  if (args.manifest.empty()) {
    args.manifest = "envlock.yaml";
    std::error_code ec;
    if (!fs::exists(args.manifest, ec)) {
      return report_error(ctx, Error{ErrorKind::Io, "envlock.yaml", "no manifest in the current folder", "",
                                     "pass the manifest with -f, or an environment folder with -p"});
    }
  }
  // An environment the manifest lacks is named before anything is locked.
  if (!args.environment.empty()) {
    auto manifest = load_manifest(args.manifest);
    if (!manifest) return report_error(ctx, manifest.error());
    if (manifest->environment(args.environment) == nullptr) {
      std::string names;
      for (const auto& [name, env] : manifest->environments) names += (names.empty() ? "" : ", ") + name;
      return report_error(ctx, Error{ErrorKind::Incompatible, args.manifest, "has no environment '" + args.environment + "'",
                                     "environments in it: " + names, "pass one of them with -e"});
    }
  }
  StdoutToStderr redirect;
  CreatePlan plan;
  if (const int code = prepare_create(ctx, args, plan); code != 0) return code;
  if (!up_to_date(plan)) {
    if (const int code = install_created(ctx, args, plan); code != 0) return code;
  }
  out.prefix = plan.prefix;
  out.variables = plan.manifest.variables_for(plan.environment);
  return 0;
}

}  // namespace envlock::cli
