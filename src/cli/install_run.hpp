#pragma once
// The install step shared by `envlock install` and `envlock create` (and the reference run): its
// flags and the rendering of install_locked_environment()'s report (envlock/provision.hpp).
#include <filesystem>
#include <iostream>
#include <string>

#include "envlock/install.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/package_cache.hpp"
#include "envlock/provision.hpp"
#include "registry.hpp"

namespace envlock::cli {

/// What `install` and `create` ask of the install pipeline (envlock/provision.hpp).
using InstallRequest = LockedInstallRequest;

/// `--channel-url CHANNEL=URL` values against the lockfile's channels: CHANNEL is a channel URL
/// the lockfile records, or the last path segments of one (`conda-forge` for
/// `https://conda.anaconda.org/conda-forge`). ErrorKind::Usage for a value without '=', a URL
/// that is not http(s):// or file://, or a CHANNEL that matches no channel or more than one.
Result<std::vector<std::pair<std::string, std::string>>> parse_channel_urls(const Lockfile& lockfile,
                                                                           const std::vector<std::string>& values);

/// The flags `install` and `create` share: --allow-unverified, --force, --dry-run.
void add_install_safety_flags(CLI::App& sub, bool& allow_unverified, bool& force, bool& dry_run);

/// What `install`, `create` and `remove` say on stderr when another envlock command holds the
/// prefix's lock (attack 20, L10: the second command waited without a word): one line naming it.
inline void say_lock_wait(const std::filesystem::path& prefix) {
  std::cerr << terminal_text("waiting for another envlock command that installs or removes " + prefix.string()) << "\n";
}

/// The flags of `envlock install`.
struct InstallArgs {
  std::string lockfile;
  std::string environment;
  std::string prefix;
  bool copy = false;
  bool ignore_host = false;
  bool no_scripts = false;
  bool verify_cache = false;
  std::vector<std::string> channel_urls;
  bool allow_unverified = false;
  bool force = false;
  bool dry_run = false;
  bool base_only = false;
};

/// `envlock install` with `args`: checks the prefix, reads the lockfile (read_envlock_lockfile),
/// applies --base-only and --channel-url, then run_install() with the summary on `out`. Returns
/// the exit code. The reference run calls it for its throwaway environment, with `out` stderr.
int run_install_command(const Context& ctx, const InstallArgs& args, std::ostream& out = std::cout);

/// Runs the install (install_locked_environment()) and prints the outcome (text or JSON): the
/// summary on `out`, warnings, progress and errors on stderr. Returns the exit code.
int run_install(const Context& ctx, const Lockfile& lockfile, const InstallRequest& request, std::ostream& out = std::cout);

}  // namespace envlock::cli
