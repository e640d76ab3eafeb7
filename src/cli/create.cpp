// envlock create -f MANIFEST [-e ENV] [-p PREFIX] [--locked|--frozen] [--copy] [--ignore-host]
//                [--no-scripts] [--allow-unverified] [--force] [--dry-run]
// The main job: lock when the lockfile beside the manifest is missing or stale, then install.
//   (default)  lock when the lockfile is missing or no longer satisfies the manifest;
//   --locked   fail (exit 1) instead of re-locking a missing or stale lockfile;
//   --frozen   install the lockfile as it is, without checking it against the manifest.
// These are the meanings pixi and uv give the two flags.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "envlock/lock.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/manifest.hpp"
#include "envlock/reference.hpp"
#include "create_run.hpp"
#include "install_run.hpp"
#include "network_options.hpp"
#include "project_lock.hpp"

namespace envlock::cli {
namespace {

namespace fs = std::filesystem;

Result<Lockfile> lock_now(const Context& ctx, const Manifest& manifest, std::optional<Lockfile> previous,
                          const fs::path& path, DryRun dry_run) {
  LockDiagnostics diagnostics;
  LockOptions options;
  options.previous = std::move(previous);
  options.repodata.fetch.on_progress = repodata_progress_lines(ctx);
  options.diagnostics = &diagnostics;
  auto lockfile = lock_manifest(manifest, options);
  for (const auto& w : diagnostics.warnings) warn(w);
  if (!ctx.json)
    for (const auto& h : diagnostics.hints) std::cerr << "hint: " << terminal_text(h) << "\n";
  if (!lockfile) return lockfile.error();
  if (dry_run == DryRun::Yes) {  // the lockfile is not written either
    if (!ctx.json) std::cerr << "locked " << manifest.path.string() << " (dry run: " << path.string() << " not written)\n";
    return lockfile;
  }
  if (auto st = lockfile->write(path); !st) return st.error();
  if (!ctx.json) std::cerr << "locked " << manifest.path.string() << " -> " << path.string() << "\n";
  return lockfile;
}

}  // namespace

Status check_project_envs_folder(const fs::path& project) {
  // Each folder from the project down to where the environments live must be a real folder of
  // the project: a `.envlock` (or `.envlock/envs`) committed as a symbolic link would make
  // `create` replace, and relocate, an environment anywhere on the machine — a production one,
  // as root, with the pull request's post-link scripts. pixi places environments outside the
  // project only through the user's own configuration (`detached-environments`), never through
  // something in the checkout; envlock's way is `-p PREFIX`.
  for (const fs::path& folder : {project / ".envlock", project / ".envlock" / "envs"}) {
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0) {
      if (errno == ENOENT) return ok_status();
      return Error{ErrorKind::Io, folder.string(), std::string("cannot read: ") + std::strerror(errno)};
    }
    if (S_ISLNK(st.st_mode))
      return Error{ErrorKind::Io, folder.string(),
                   "is a symbolic link: the project's environments must live in the project's own folder", "",
                   "remove the link (a checkout should not carry one), or install elsewhere with -p PREFIX"};
    if (!S_ISDIR(st.st_mode))
      return Error{ErrorKind::Io, folder.string(), "is not a folder: the project's environments live in it", "",
                   "move it away, or install elsewhere with -p PREFIX"};
  }
  return ok_status();
}

Status check_project_file_is_no_link(const fs::path& path, const std::string& what) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return ok_status();  // absent, or read as it is
  return Error{ErrorKind::Io, path.string(),
               "is a symbolic link: envlock reads and writes a project's " + what +
                   " in the project's own folder, never through a link (a checkout's link could name any file "
                   "on the machine)",
               "", "replace the link with the file it names, or delete it"};
}

int prepare_create(const Context& ctx, const CreateArgs& args, CreatePlan& plan) {
  if (args.locked && args.frozen) {
    return report_error(ctx, Error{ErrorKind::Usage, "", "--locked and --frozen cannot be combined",
                                   "", "--locked checks the lockfile; --frozen uses it without checking"});
  }
  // Held until the lockfile, if it must be made again, is written (not during the install).
  std::optional<ProjectLock> turn;
  if (!args.frozen) turn.emplace(args.manifest);
  auto manifest = load_manifest(args.manifest);
  if (!manifest) return report_error(ctx, manifest.error());
  for (const auto& w : manifest->warnings) warn(w);
  const fs::path dir = fs::absolute(args.manifest).parent_path();
  if (args.prefix.empty())
    if (auto st = check_project_envs_folder(dir); !st) return report_error(ctx, st.error());
  const fs::path lock_path = dir / "envlock.lock";
  if (auto st = check_project_file_is_no_link(lock_path, "lockfile"); !st) return report_error(ctx, st.error());
  if (auto st = check_base_is_not_the_lockfile(*manifest, lock_path); !st) return report_error(ctx, st.error());
  const DryRun dry = args.dry_run ? DryRun::Yes : DryRun::No;

  std::optional<Lockfile> lockfile;
  std::error_code ec;
  if (fs::exists(lock_path, ec)) {
    auto read = Lockfile::read(lock_path);
    if (!read) return report_error(ctx, read.error());
    lockfile = std::move(*read);
  }
  if (args.frozen) {
    if (!lockfile) {
      return report_error(ctx, Error{ErrorKind::Stale, lock_path.string(), "does not exist, and --frozen never locks",
                                     "", "run `envlock lock -f " + args.manifest + "` first, or drop --frozen"});
    }
  } else if (!lockfile) {
    if (args.locked) {
      return report_error(ctx, Error{ErrorKind::Stale, lock_path.string(), "does not exist, and --locked never locks",
                                     "", "run `envlock lock -f " + args.manifest + "` and commit the lockfile"});
    }
    auto fresh = lock_now(ctx, *manifest, std::nullopt, lock_path, dry);
    if (!fresh) return report_error(ctx, fresh.error());
    lockfile = std::move(*fresh);
  } else {
    auto reasons = check_lockfile(*manifest, *lockfile);
    if (auto vps = check_assumed_virtual_packages(*manifest, *lockfile, nullptr, reasons); !vps)
      return report_error(ctx, vps.error());
    if (auto st = check_base_lockfiles(*manifest, *lockfile, {}, reasons); !st) return report_error(ctx, st.error());
    if (!reasons.empty()) {
      if (args.locked) {
        Error e{ErrorKind::Stale, lock_path.string(), "no longer matches " + args.manifest + ": " + reasons.front().message,
                "", "run `envlock lock -f " + args.manifest + "` to update it, or drop --locked"};
        e.detail = "every reason:";
        for (const auto& r : reasons) e.detail += "\n  " + r.message;
        return report_error(ctx, e);
      }
      if (!ctx.json)
        std::cerr << terminal_text("the lockfile is stale (" + reasons.front().message + "); locking again") << "\n";
      auto fresh = lock_now(ctx, *manifest, std::move(lockfile), lock_path, dry);
      if (!fresh) return report_error(ctx, fresh.error());
      lockfile = std::move(*fresh);
    }
  }

  auto env = pick_environment(*lockfile, args.environment, lock_path.string());
  if (!env) return report_error(ctx, env.error());
  plan.manifest = std::move(*manifest);
  plan.lockfile = std::move(*lockfile);
  plan.lock_path = lock_path;
  plan.environment = *env;
  plan.prefix = args.prefix.empty() ? dir / ".envlock" / "envs" / *env : fs::path(args.prefix);
  return 0;
}

namespace {

/// Makes the project's `.envlock/` folder when it is missing, with a `.gitignore` of `*` in it, so
/// git ignores the environments without an edit to the project's own .gitignore (pixi writes
/// `.pixi/.gitignore` with `*` the same way: prefix-dev/pixi#357, and on every command that makes
/// `.pixi`: #3050). An existing `.envlock/` is left as it is, its .gitignore never replaced.
Status make_envlock_folder(const fs::path& folder) {
  std::error_code ec;
  if (fs::exists(folder, ec)) return ok_status();
  fs::create_directories(folder, ec);
  if (ec) return Error{ErrorKind::Io, folder.string(), "cannot create the folder: " + ec.message()};
  const fs::path ignore = folder / ".gitignore";
  const int fd = ::open(ignore.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) return ok_status();
  if (fd < 0) return Error{ErrorKind::Io, ignore.string(), std::string("cannot write: ") + std::strerror(errno)};
  const char text[] = "*\n";
  const bool written = ::write(fd, text, sizeof text - 1) == static_cast<ssize_t>(sizeof text - 1);
  ::close(fd);
  if (!written) return Error{ErrorKind::Io, ignore.string(), "cannot write"};
  return ok_status();
}

}  // namespace

int install_created(const Context& ctx, const CreateArgs& args, const CreatePlan& plan) {
  const DryRun dry = args.dry_run ? DryRun::Yes : DryRun::No;
  if (args.prefix.empty() && dry == DryRun::No) {  // <dir>/.envlock/envs/<env>
    if (auto st = make_envlock_folder(plan.prefix.parent_path().parent_path()); !st) return report_error(ctx, st.error());
  }
  InstallRequest request;
  request.lockfile_path = plan.lock_path;
  request.environment = plan.environment;
  request.prefix = plan.prefix;
  request.link_mode = args.copy ? LinkMode::Copy : LinkMode::Hardlink;
  request.scripts = args.no_scripts ? RunScripts::No : RunScripts::Yes;
  request.ignore_host = args.ignore_host;
  if (args.extra_safety_checks) request.cache_validation = CacheValidation::Hashes;
  request.command = args.command;
  request.manifest = fs::path(args.manifest).filename().string();
  // Packages come from the channels as the manifest spells them: with their credentials
  // (`user:pass@`, `/t/<token>/`), which the lockfile never records.
  for (const auto& [en, e] : plan.manifest.environments)
    for (const auto& c : plan.manifest.channels_for(e))
      if (c.url != c.public_url()) request.channel_urls.emplace_back(c.public_url(), c.url);
  request.allow_unverified = args.allow_unverified;
  request.foreign = args.force ? ForeignPrefix::Allow : ForeignPrefix::Refuse;
  request.dry_run = dry;
  return run_install(ctx, plan.lockfile, request);
}

namespace {

int run_create(const Context& ctx, const CreateArgs& args) {
  CreatePlan plan;
  if (const int code = prepare_create(ctx, args, plan); code != 0) return code;
  return install_created(ctx, args, plan);
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<CreateArgs>();
  sub.add_option("-f,--file", args->manifest, "the manifest (envlock.yaml or environment.yml)")->required();
  sub.add_option("-e,--environment", args->environment, "environment to create (default: the only one, or 'default')");
  sub.add_option("-p,--prefix", args->prefix, "where to create it (default: .envlock/envs/<env> beside the manifest)");
  sub.add_flag("--locked", args->locked, "fail instead of locking when the lockfile is missing or stale");
  sub.add_flag("--frozen", args->frozen, "install the lockfile as it is, without checking it against the manifest");
  sub.add_flag("--copy", args->copy, "copy files instead of hard-linking them from the package cache");
  sub.add_flag("--ignore-host", args->ignore_host, "install even when this host does not meet the lockfile's requirements");
  sub.add_flag("--no-scripts", args->no_scripts, "do not run packages' pre-link, post-link and pre-unlink scripts");
  sub.add_flag("--extra-safety-checks", args->extra_safety_checks,
               "check the sha256 of every cached package file before linking it (default: sizes only)");
  add_install_safety_flags(sub, args->allow_unverified, args->force, args->dry_run);
  add_network_options(sub);
  sub.callback([&ctx, args] { ctx.exit_code = run_create(ctx, *args); });
}

const RegisterCommand reg{"create", "create an environment from a manifest: lock if needed, then install", &setup};

}  // namespace
}  // namespace envlock::cli
