// The one reader of envlock's environment variables (envlock/settings.hpp).
#include "envlock/settings.hpp"

#include <cstdlib>
#include <mutex>

namespace envlock {

namespace {

std::mutex g_mu;
std::optional<Settings> g_installed;  // use_settings()

}  // namespace

std::optional<std::string> process_getenv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

Settings Settings::read(const std::function<std::optional<std::string>(const std::string&)>& getenv) {
  auto get = [&getenv](const char* name) {
    std::optional<std::string> v = getenv ? getenv(name) : std::nullopt;
    return v ? std::move(*v) : std::string();
  };
  Settings s;
  s.cache_dir = get("ENVLOCK_CACHE_DIR");
  s.pkgs_dir = get("ENVLOCK_PKGS_DIR");
  s.pkgs_dirs = get("ENVLOCK_PKGS_DIRS");
  s.auth_file = get("ENVLOCK_AUTH_FILE");
  s.install_sync = get("ENVLOCK_INSTALL_SYNC");
  s.connect_timeout = get("ENVLOCK_CONNECT_TIMEOUT");
  s.read_timeout = get("ENVLOCK_READ_TIMEOUT");
  s.retries = get("ENVLOCK_RETRIES");
  s.low_speed_limit = get("ENVLOCK_LOW_SPEED_LIMIT");
  s.max_time = get("ENVLOCK_MAX_TIME");
  s.ca_bundle = get("ENVLOCK_CA_BUNDLE");
  s.max_download_size = get("ENVLOCK_MAX_DOWNLOAD_SIZE");
  s.libcuda = get("ENVLOCK_LIBCUDA");
  s.libnvml = get("ENVLOCK_LIBNVML");
  s.nvidia_smi = get("ENVLOCK_NVIDIA_SMI");
  s.home = get("HOME");
  s.xdg_cache_home = get("XDG_CACHE_HOME");
  s.xdg_config_home = get("XDG_CONFIG_HOME");
  s.netrc = get("NETRC");
  return s;
}

Settings Settings::from_environment() { return read(process_getenv); }

Settings settings() {
  {
    std::lock_guard lock(g_mu);
    if (g_installed) return *g_installed;
  }
  return Settings::from_environment();
}

void use_settings(std::optional<Settings> s) {
  std::lock_guard lock(g_mu);
  g_installed = std::move(s);
}

}  // namespace envlock
