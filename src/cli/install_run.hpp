#pragma once
// The install step shared by `envlock install` and `envlock create`: choose the environment and
// the host's platform in a lockfile, check the host, fill the package cache, link the prefix.
#include <filesystem>
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
  CacheValidation cache_validation = kInstallCacheValidation;  ///< --verify-cache: Hashes
  std::string command = "install";      ///< recorded in conda-meta/history
  /// (channel URL as the lockfile records it, URL to fetch its packages from instead): the
  /// manifest's channels with their credentials (`create`), `--channel-url` mirrors (`install`).
  std::vector<std::pair<std::string, std::string>> channel_urls;
};

/// `--channel-url CHANNEL=URL` values against the lockfile's channels: CHANNEL is a channel URL
/// the lockfile records, or the last path segments of one (`conda-forge` for
/// `https://conda.anaconda.org/conda-forge`). ErrorKind::Usage for a value without '=', a URL
/// that is not http(s):// or file://, or a CHANNEL that matches no channel or more than one.
Result<std::vector<std::pair<std::string, std::string>>> parse_channel_urls(const Lockfile& lockfile,
                                                                           const std::vector<std::string>& values);

/// The environment to use: `requested` when given (it must exist), else the only one, else
/// `default`. ErrorKind::Usage naming the environments the lockfile has.
Result<std::string> choose_environment(const Lockfile& lockfile, const std::string& requested,
                                       const std::string& source);

/// Runs the install and prints the outcome (text or JSON). Returns the exit code.
int run_install(const Context& ctx, const Lockfile& lockfile, const InstallRequest& request);

}  // namespace envlock::cli
