#pragma once
// provision.hpp — the one install pipeline (issue 19 step 2): a locked environment of an
// envlock.lock installed into a prefix, as `envlock install`, `envlock create` and the reference
// run (`verify --clean`, `reference record`) do it: choose the environment and this host's
// platform, check the prefix, the records and the host, fetch and verify every archive into the
// package cache, fetch the locked wheels, then link, run the scripts, write conda-meta, install
// the wheels into the stage and swap (install_packages(), envlock/install.hpp). It prints
// nothing: it returns what it did (LockedInstallReport), and says what happens while it runs
// through LockedInstallHooks. Module provision (src/provision), over install, cache, fetch,
// wheel and host; docs/install.md.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "envlock/fetch.hpp"
#include "envlock/install.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/package_cache.hpp"
#include "envlock/pip_step.hpp"
#include "envlock/result.hpp"

namespace envlock {

/// What to install, and how (the flags of `envlock install` and `envlock create`).
struct LockedInstallRequest {
  std::filesystem::path lockfile_path;  ///< the lockfile read (hashed into conda-meta/envlock)
  std::string environment;              ///< -e; empty: the only environment, else `default`
  std::filesystem::path prefix;
  LinkMode link_mode = LinkMode::Hardlink;
  RunScripts scripts = RunScripts::Yes;
  bool ignore_host = false;
  CacheValidation cache_validation = kInstallCacheValidation;  ///< --extra-safety-checks: Hashes
  std::string command = "install";      ///< recorded in conda-meta/history
  std::string manifest;                 ///< `create -f`: the manifest's file name, for history
  /// (channel URL as the lockfile records it, URL to fetch its packages from instead): the
  /// manifest's channels with their credentials (`create`), `--channel-url` mirrors (`install`).
  std::vector<std::pair<std::string, std::string>> channel_urls;
  bool allow_unverified = false;        ///< --allow-unverified: records without sha256 or md5 install
  ForeignPrefix foreign = ForeignPrefix::Refuse;  ///< --force: Allow
  DryRun dry_run = DryRun::No;          ///< --dry-run: plan and preview only, change nothing
};

/// Fills the package cache with the archives of `records` (each entry's Result in the records'
/// order, as PackageCache::ensure_all() returns them), or fails as a whole (the cache cannot be
/// opened). The default takes them from the channel URLs the records hold (through
/// `options.fetch.url_prefixes`, the request's channel_urls) into PackageCache::open_default().
using ArchiveSource = std::function<Result<std::vector<Result<CacheEntry>>>(const std::vector<RepoDataRecord>& records,
                                                                            const CacheOptions& options)>;

/// What the caller hears while the install runs; each is optional.
struct LockedInstallHooks {
  /// The checks passed (not called in a dry run): their warnings (outside local folders,
  /// --allow-unverified, --ignore-host, hidden CUDA devices), before anything is fetched.
  std::function<void(const std::vector<std::string>& warnings)> checked;
  /// Where the archives come from (default: the channels, into the default package cache).
  ArchiveSource archives;
  /// The package downloads' progress (CacheOptions::fetch.on_progress).
  FetchProgressCallback fetch_progress;
  /// The package cache returned every entry (before an entry's error is returned).
  std::function<void()> fetched;
  /// Every package is in the package cache: how many, how many were downloaded, how many came
  /// from the cache (before the locked wheels are fetched).
  std::function<void(std::size_t packages, std::size_t downloaded, std::size_t cached)> packages_ready;
  LinkProgress link_progress;  ///< InstallOptions::progress
  std::function<void()> linked;  ///< install_packages() returned (done or failed)
  /// Asked before the package downloads, after them and before the link: true stops the install
  /// there, the prefix not touched (ErrorKind::Io, "stopped"). The reference run passes
  /// InterruptScope::received(), so that a SIGINT or SIGTERM it notes ends its throwaway
  /// environment's build at the next step (the signal no longer kills a child `envlock install`).
  std::function<bool()> stop;
  LockWait lock_wait;          ///< InstallOptions::on_lock_wait
};

/// A dry run's answer: what would change, nothing changed.
struct LockedInstallPreview {
  TransactionPlan plan;
  InstallPreview preview;
};

/// What install_locked_environment() did (or, in a dry run, would do).
struct LockedInstallReport {
  std::string environment;    ///< the lockfile's environment installed
  std::string platform;       ///< this host's platform
  std::string prefix;         ///< the prefix, absolute and normal
  std::string lockfile_hash;  ///< "sha256:<hex>" of the lockfile (not in a dry run)
  /// The checks' warnings (those LockedInstallHooks::checked heard); in a dry run also the
  /// plan's and the preview's, and what the preview could not decide.
  std::vector<std::string> early_warnings;
  std::vector<HostMismatch> host_mismatches;  ///< ignored (--ignore-host); else the install was refused
  std::optional<LockedInstallPreview> dry_run;  ///< set in a dry run, and then nothing below
  std::size_t packages = 0, downloaded = 0, cached = 0;
  /// The conda transaction; its warnings are then the transaction's, the pip step's and the one
  /// naming the pip entries not installed, in that order (not the early ones).
  InstallReport install;
  PipInstallReport pip;  ///< the locked wheels' step
  bool pip_step = false;  ///< there were locked wheels, or the pip step removed some: report it
};

/// Installs environment `request.environment` of `lockfile` (read from request.lockfile_path)
/// for this host's platform into request.prefix, keeping the tree it replaces as a generation
/// (KeepGenerations::Yes). Errors are those `envlock install` reports; after one that a signal
/// caused, install_interrupted_by() names the signal.
Result<LockedInstallReport> install_locked_environment(const Lockfile& lockfile, const LockedInstallRequest& request,
                                                       const LockedInstallHooks& hooks = {});

/// The checks of the lockfile's records made before anything is fetched (docs/install.md, "Unverified
/// content"): a record with neither sha256 nor md5 (or with an empty one) is refused unless
/// `allow_unverified` (then a warning names it); a `__*` virtual package as a record is refused
/// always; a record's `fn` that is not a plain file name is refused; a `file://` URL outside the
/// lockfile's folder tree is a warning naming it. Warnings go to `warnings`.
Status check_records(const std::vector<RepoDataRecord>& records, const std::filesystem::path& lockfile_path,
                     bool allow_unverified, std::vector<std::string>& warnings);

}  // namespace envlock
