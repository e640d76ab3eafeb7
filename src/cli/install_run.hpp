#pragma once
// The install step shared by `envlock install` and `envlock create`: choose the environment and
// the host's platform in a lockfile, check the host, fill the package cache, link the prefix.
#include <filesystem>
#include <iostream>
#include <string>

#include "envlock/install.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/package_cache.hpp"
#include "registry.hpp"

namespace envlock::cli {

struct InstallRequest {
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
  DryRun dry_run = DryRun::No;          ///< --dry-run: print the transaction, change nothing
};

/// `--channel-url CHANNEL=URL` values against the lockfile's channels: CHANNEL is a channel URL
/// the lockfile records, or the last path segments of one (`conda-forge` for
/// `https://conda.anaconda.org/conda-forge`). ErrorKind::Usage for a value without '=', a URL
/// that is not http(s):// or file://, or a CHANNEL that matches no channel or more than one.
Result<std::vector<std::pair<std::string, std::string>>> parse_channel_urls(const Lockfile& lockfile,
                                                                           const std::vector<std::string>& values);

/// The checks of the lockfile's records made before anything is fetched (docs/install.md, "Unverified
/// content"): a record with neither sha256 nor md5 (or with an empty one) is refused unless
/// `allow_unverified` (then a warning names it); a `__*` virtual package as a record is refused
/// always; a record's `fn` that is not a plain file name is refused; a `file://` URL outside the
/// lockfile's folder tree is a warning naming it. Warnings go to `warnings`.
Status check_records(const std::vector<RepoDataRecord>& records, const std::filesystem::path& lockfile_path,
                     bool allow_unverified, std::vector<std::string>& warnings);

/// The flags `install` and `create` share: --allow-unverified, --force, --dry-run.
void add_install_safety_flags(CLI::App& sub, bool& allow_unverified, bool& force, bool& dry_run);

/// What `install`, `create` and `remove` say on stderr when another envlock command holds the
/// prefix's lock (attack 20, L10: the second command waited without a word): one line naming it.
inline void say_lock_wait(const std::filesystem::path& prefix) {
  std::cerr << terminal_text("waiting for another envlock command that installs or removes " + prefix.string()) << "\n";
}

/// Runs the install and prints the outcome (text or JSON). Returns the exit code.
int run_install(const Context& ctx, const Lockfile& lockfile, const InstallRequest& request);

}  // namespace envlock::cli
