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
  CacheValidation cache_validation = kInstallCacheValidation;  ///< --extra-safety-checks: Hashes
  std::string command = "install";      ///< recorded in conda-meta/history
};

/// The environment to use: `requested` when given (it must exist), else the only one, else
/// `default`. ErrorKind::Usage naming the environments the lockfile has.
Result<std::string> choose_environment(const Lockfile& lockfile, const std::string& requested,
                                       const std::string& source);

/// Runs the install and prints the outcome (text or JSON). Returns the exit code.
int run_install(const Context& ctx, const Lockfile& lockfile, const InstallRequest& request);

}  // namespace envlock::cli
