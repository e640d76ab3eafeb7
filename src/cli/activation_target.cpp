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
/// Whether `prefix` was installed at another path than where it is now (its conda-meta/envlock
/// records the prefix written into its files; an older record without it counts as not moved).
bool moved_from(const fs::path& prefix, const PrefixOrigin& origin) {
  if (origin.prefix.empty()) return false;
  std::error_code ec;
  fs::path here = fs::absolute(prefix, ec).lexically_normal();  // as install_packages() records it
  if (!here.has_filename()) here = here.parent_path();
  return !ec && origin.prefix != here.string();
}

bool up_to_date(const CreatePlan& plan) {
  auto origin = read_prefix_origin(plan.prefix);
  if (!origin || !*origin || (*origin)->environment != plan.environment) return false;
  // A prefix moved or copied from elsewhere (a restored CI cache, `cp -a` of the project) has
  // the old path in its files: not current, so create's install links it again where it is
  // (attack 30, F1: run used it as it was, running the other location's programs).
  if (moved_from(plan.prefix, **origin)) return false;
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
    // An environment given by its folder is used as it is, so it must be one: not an install
    // interrupted before its commit (history, verify and list call the generation before it
    // current: attack 30, F9), not a tree moved from another path (its programs run the old
    // path's: F1). Both are refused as verify refuses them; `envlock install` puts them right.
    auto pending = interrupted_install(given.prefix);
    if (!pending) return report_error(ctx, pending.error());
    if (*pending)
      return report_error(ctx, Error{ErrorKind::Io, given.prefix,
                                     "an install was interrupted (conda-meta/envlock-pending): the tree there was "
                                     "never committed",
                                     "", "run `envlock install` again (or `envlock rollback`); each rolls the "
                                         "interrupted install back first"});
    if (auto origin = read_prefix_origin(given.prefix); origin && *origin && moved_from(given.prefix, **origin))
      return report_error(ctx, Error{ErrorKind::Io, given.prefix,
                                     "was installed at " + (*origin)->prefix +
                                         " and moved here: its files name that path, so its programs would run "
                                         "what is there",
                                     "", "install it again where it is: `envlock install -l LOCKFILE -p " +
                                             given.prefix + "` (or `envlock create` in its project)"});
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
