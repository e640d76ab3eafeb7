// envlock lock -f MANIFEST [-o LOCKFILE] [--update NAME...] [--update-all] [--check] [--offline]
// Pins every transitive package of every environment x platform into a lockfile (default:
// envlock.lock beside the manifest). With an existing lockfile, keeps what still fits; --check
// verifies the lockfile against the manifest without network or solving.
// Exit codes: 0 locked (or --check: fresh), 1 failure (unsatisfiable, network, stale), 2 usage.
#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/input_file.hpp"
#include "envlock/lock.hpp"
#include "envlock/url.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/manifest.hpp"
#include "create_run.hpp"
#include "lock_report.hpp"
#include "project_lock.hpp"
#include "network_options.hpp"
#include "registry.hpp"

namespace envlock::cli {
namespace {

namespace fs = std::filesystem;

struct LockArgs {
  std::string manifest;
  std::string output;
  std::vector<std::string> update;
  bool update_all = false;
  bool check = false;
  bool offline = false;
};

/// The file at the lockfile's path, read as every input is (read_input_file, envlock/input_file.hpp):
/// a FIFO, a device, a socket or a folder there is refused, naming it, whatever the options. Before,
/// `lock --update-all` passed over what it could not read, then blocked opening a FIFO with no
/// writer (to tell whether the lockfile changed) or failed writing over a folder with an internal
/// error (attack on issue 18, A7). Problem::Open with ENOENT: there is no lockfile yet.
Result<InputFile> existing_lockfile(const fs::path& lock_path) {
  InputFile file = read_input_file(lock_path, kMaxLockfileBytes);
  if (file.problem == InputFile::Problem::Refused)
    return Error{ErrorKind::Io, lock_path.string(), file.message, "",
                 "a lockfile is a regular file: move this away, or write the lockfile elsewhere with -o"};
  return file;
}

bool missing(const InputFile& file) { return file.problem == InputFile::Problem::Open && file.error_number == ENOENT; }

int run_check(const Context& ctx, const Manifest& manifest, const fs::path& lock_path, bool offline) {
  auto existing = existing_lockfile(lock_path);
  if (!existing) return report_error(ctx, existing.error());
  if (missing(*existing))
    return report_error(ctx, Error{ErrorKind::Stale, lock_path.string(), "lockfile does not exist", "",
                                   "run `envlock lock -f " + manifest.path.string() + "` and commit the lockfile"});
  auto lock = Lockfile::read(lock_path);
  if (!lock) return report_error(ctx, lock.error());
  auto reasons = check_lockfile(manifest, *lock);
  if (auto vps = check_assumed_virtual_packages(manifest, *lock, nullptr, reasons); !vps)
    return report_error(ctx, vps.error());
  RepodataOptions base_options;  // a path base is read, an https:// one fetched (cached copy with --offline)
  base_options.offline = offline;
  std::vector<std::string> warnings;  // a chain of bases cut short (attack 24, A1)
  if (auto st = check_base_lockfiles(manifest, *lock, base_options, reasons, lock_path, &warnings); !st)
    return report_error(ctx, st.error());
  for (const auto& w : warnings) std::cerr << "warning: " << terminal_text(w) << "\n";
  if (ctx.json) {
    nlohmann::json j;
    j["lockfile"] = lock_path.string();
    j["fresh"] = reasons.empty();
    j["warnings"] = warnings;
    j["reasons"] = nlohmann::json::array();
    for (const auto& r : reasons)
      j["reasons"].push_back({{"kind", std::string(to_string(r.kind))},
                              {"environment", r.environment},
                              {"platform", r.platform},
                              {"package", r.package},
                              {"message", r.message}});
    std::cout << json_text(j) << "\n";
  }
  if (reasons.empty()) {
    if (!ctx.json)
      std::cout << terminal_text(lock_path.string() + " is up to date with " + manifest.path.string()) << "\n";
    return 0;
  }
  // Reasons quote lockfile records and specs: through terminal_text() like every other message.
  std::cerr << "error: " << terminal_text(lock_path.string() + " no longer satisfies " + manifest.path.string()) << " ("
            << reasons.size() << (reasons.size() == 1 ? " reason" : " reasons") << "):\n";
  for (const auto& r : reasons) {
    std::string where = r.environment;
    if (!r.platform.empty()) where += (where.empty() ? "" : "/") + r.platform;
    // Most messages open with "env/platform:" already (they stand alone in `create`'s error).
    const bool placed = where.empty() || r.message.starts_with(where + ":");
    std::cerr << "  - " << terminal_text((placed ? "" : "[" + where + "] ") + r.message) << "\n";
  }
  // A stale link further down a chain of bases is its owners' to lock again, not this project's.
  const bool chain_only = std::all_of(reasons.begin(), reasons.end(),
                                      [](const StaleReason& r) { return r.kind == StaleReason::Kind::BaseChainChanged; });
  std::cerr << terminal_text(chain_only ? "hint: ask the owners of the base to lock it again on its own base; then run "
                                          "`envlock lock -f " + manifest.path.string() + "`"
                                        : "hint: run `envlock lock -f " + manifest.path.string() + "` to update the lockfile")
            << "\n";
  return 1;
}

int run_lock(const Context& ctx, const LockArgs& args) {
  if (args.check && (args.update_all || !args.update.empty()))
    return report_error(ctx, Error{ErrorKind::Usage, "", "--check cannot be combined with --update or --update-all",
                                   "", "--check only reads; run the update first, then check"});
  if (args.update_all && !args.update.empty())
    return report_error(ctx, Error{ErrorKind::Usage, "", "--update and --update-all cannot be combined", "",
                                   "--update-all already frees every package"});
  std::optional<ProjectLock> turn;  // --check only reads
  if (!args.check) turn.emplace(args.manifest);
  auto manifest = load_manifest(args.manifest);
  if (!manifest) return report_error(ctx, manifest.error());
  for (const auto& w : manifest->warnings) warn(w);
  // Spelled as the user spelled the manifest's folder, so messages name no home folder.
  fs::path lock_path = args.output.empty() ? fs::path(args.manifest).parent_path() / "envlock.lock"
                                           : fs::path(args.output);
  if (args.output.empty())  // beside the manifest: never through a link (-o names the user's own)
    if (auto st = check_project_file_is_no_link(lock_path, "lockfile"); !st) return report_error(ctx, st.error());
  if (auto st = check_base_is_not_the_lockfile(*manifest, lock_path); !st) return report_error(ctx, st.error());
  if (args.check) return run_check(ctx, *manifest, lock_path, args.offline);

  std::optional<Lockfile> previous;
  auto existing = existing_lockfile(lock_path);
  if (!existing) return report_error(ctx, existing.error());
  if (!missing(*existing)) {
    auto read = Lockfile::read(lock_path);
    if (!read) {
      if (!args.update_all) {
        Error e = read.error();
        e.hint = "fix the lockfile, or run with --update-all to replace it";
        return report_error(ctx, e);
      }
    } else {
      previous = std::move(*read);
    }
  }
  if (!args.update.empty() && !previous)
    return report_error(ctx, Error{ErrorKind::Usage, lock_path.string(), "--update needs an existing lockfile", "",
                                   "run `envlock lock -f " + args.manifest + "` first"});

  LockDiagnostics diag;
  LockOptions options;
  options.previous = previous;
  options.update = args.update;
  options.update_all = args.update_all;
  options.repodata.offline = args.offline;
  options.repodata.fetch.on_progress = repodata_progress_lines(ctx);
  options.diagnostics = &diag;
  options.lockfile = lock_path;
  auto lock = lock_manifest(*manifest, options);
  for (const auto& w : diag.warnings) warn(w);
  for (const auto& h : diag.hints) std::cerr << "hint: " << terminal_text(h) << "\n";
  if (!lock) {
    if (diag.conflict) return report_conflict(ctx, lock.error(), *diag.conflict);
    return report_error(ctx, lock.error());
  }

  // Channels the manifest (or a base it names by a relative path) names by a relative directory
  // travel with the checkout: lock_manifest() lists them in relative_channels, and the lockfile
  // records them relative to its own directory (docs/lockfile.md, "Local channels").
  for (const auto& w : home_channel_warnings(*manifest)) {
    warn(w);
    diag.warnings.push_back(w);
  }
  std::error_code abs_ec;
  std::string text = lock->to_yaml(fs::absolute(lock_path, abs_ec).parent_path());
  // (the bytes read before the lock: opening the path again could block on what replaced it)
  const bool unchanged = existing->problem == InputFile::Problem::None && existing->text == text;
  if (!unchanged)
    if (auto st = lock->write(lock_path); !st) return report_error(ctx, st.error());

  nlohmann::json j;
  j["lockfile"] = lock_path.string();
  j["changed"] = !unchanged;
  LockSummary summary = summarize_lock(*lock, previous, fs::absolute(lock_path, abs_ec).parent_path());
  j["environments"] = std::move(summary.environments);
  if (ctx.json) {
    j["hints"] = diag.hints;
    j["warnings"] = diag.warnings;
    std::cout << json_text(j) << "\n";
  } else {
    // The change list names channel records (a build string may hold control bytes).
    std::cout << terminal_text((unchanged ? "unchanged " : "locked ") + lock_path.string() + "\n" + summary.text);
  }
  return 0;
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<LockArgs>();
  sub.add_option("-f,--file", args->manifest, "the manifest (envlock.yaml or environment.yml)")->required();
  sub.add_option("-o,--output", args->output, "the lockfile to write (default: envlock.lock beside the manifest)");
  sub.add_option("--update", args->update, "solve these packages afresh, keep every other locked record")
      ->expected(1, -1);
  sub.add_flag("--update-all", args->update_all, "ignore the existing lockfile and solve everything afresh");
  sub.add_flag("--check", args->check, "verify the lockfile against the manifest (no solve; no network, except to fetch a base "
                                         "lockfile named by a URL: with --offline, its cached copy)");
  sub.add_flag("--offline", args->offline, "use cached repodata only");
  add_network_options(sub);
  sub.callback([&ctx, args] { ctx.exit_code = run_lock(ctx, *args); });
}

const RegisterCommand reg{"lock", "pin every package of every environment and platform into a lockfile", &setup};

}  // namespace
}  // namespace envlock::cli
