#pragma once
// envlock/settings.hpp — the one home of the settings envlock takes from environment variables.
//
// Every ENVLOCK_* variable (and the few standard ones envlock reads for itself: HOME,
// XDG_CACHE_HOME, XDG_CONFIG_HOME, NETRC) is read by Settings::read(), in one place, into one
// struct. The CLI reads it once, at its edge (main), and installs it with use_settings(); the
// library asks settings() where it used to call getenv(3): the cache folders (envlock/paths.hpp,
// envlock/package_cache.hpp), the network settings and size cap (envlock/fetch.hpp), the
// credentials file, the install's sync mode and the NVIDIA libraries of Host::system()
// (envlock/host.hpp). Values are kept as written; each reader parses and checks its own (with
// its own message), so what a bad value does is unchanged. An empty value reads as unset, as every
// reader took it before.
//
// Other variables stay where they mean something else: the Host's environment lookup
// (Host::getenv: CONDA_OVERRIDE_*, CUDA_VISIBLE_DEVICES, what a reference command passes on) and
// the CLI's own (NO_COLOR, SHELL). Both go through process_getenv(), the one call of getenv(3)
// in the library.

#include <functional>
#include <optional>
#include <string>

namespace envlock {

struct Settings {
  // -- where envlock keeps its state (envlock/paths.hpp, envlock/package_cache.hpp) -------------
  std::string cache_dir;   ///< ENVLOCK_CACHE_DIR: the cache root
  std::string pkgs_dir;    ///< ENVLOCK_PKGS_DIR: the package cache folder
  std::string pkgs_dirs;   ///< ENVLOCK_PKGS_DIRS: several package cache folders, comma-separated
  std::string auth_file;   ///< ENVLOCK_AUTH_FILE: the credentials file (envlock/credentials.hpp)
  // -- install ---------------------------------------------------------------------------------
  std::string install_sync;  ///< ENVLOCK_INSTALL_SYNC: written (default), fs, files or none
  // -- network (envlock/fetch.hpp), as written --------------------------------------------------
  std::string connect_timeout;    ///< ENVLOCK_CONNECT_TIMEOUT, seconds
  std::string read_timeout;       ///< ENVLOCK_READ_TIMEOUT, seconds
  std::string retries;            ///< ENVLOCK_RETRIES
  std::string low_speed_limit;    ///< ENVLOCK_LOW_SPEED_LIMIT, bytes per second
  std::string max_time;           ///< ENVLOCK_MAX_TIME, seconds
  std::string ca_bundle;          ///< ENVLOCK_CA_BUNDLE, a file of CA certificates
  std::string max_download_size;  ///< ENVLOCK_MAX_DOWNLOAD_SIZE, bytes or with K, M, G, T
  // -- the NVIDIA driver to use instead of searching the layouts (Host::system()) ----------------
  std::string libcuda;     ///< ENVLOCK_LIBCUDA
  std::string libnvml;     ///< ENVLOCK_LIBNVML
  std::string nvidia_smi;  ///< ENVLOCK_NVIDIA_SMI
  // -- standard variables --------------------------------------------------------------------
  std::string home;             ///< HOME
  std::string xdg_cache_home;   ///< XDG_CACHE_HOME
  std::string xdg_config_home;  ///< XDG_CONFIG_HOME
  std::string netrc;            ///< NETRC, the netrc file libcurl reads

  /// The settings `getenv` gives (a variable unset or empty leaves its field empty).
  static Settings read(const std::function<std::optional<std::string>(const std::string&)>& getenv);
  /// read(process_getenv): the process environment as it is now.
  static Settings from_environment();
};

/// The value of the process's environment variable `name`, or nullopt when unset: the one call
/// of getenv(3) the library makes (Settings::from_environment, Host::system()'s lookup).
std::optional<std::string> process_getenv(const std::string& name);

/// The settings the library reads: those use_settings() installed, else Settings::from_environment()
/// at each call (a library caller that installs none, such as a test that sets a variable in the
/// process, sees the environment as it is).
Settings settings();

/// Installs `s` as what settings() returns from now on (nullopt: none, the environment again).
/// The CLI calls it once, before any work starts; safe to call from any thread.
void use_settings(std::optional<Settings> s);

}  // namespace envlock
