// The one home of envlock's environment settings (envlock/settings.hpp): read once into one
// struct, and what the library's readers (envlock/paths.hpp here) ask.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "envlock/paths.hpp"
#include "envlock/settings.hpp"

namespace envlock {
namespace {

TEST(Settings, ReadTakesEachVariableIntoItsFieldAndEmptyReadsAsUnset) {
  const std::map<std::string, std::string> env = {
      {"ENVLOCK_CACHE_DIR", "/c"},          {"ENVLOCK_PKGS_DIR", "/p"},      {"ENVLOCK_PKGS_DIRS", "/a,/b"},
      {"ENVLOCK_AUTH_FILE", "/auth.json"}, {"ENVLOCK_INSTALL_SYNC", "fs"},  {"ENVLOCK_CONNECT_TIMEOUT", "5"},
      {"ENVLOCK_READ_TIMEOUT", "6"},        {"ENVLOCK_RETRIES", "0"},         {"ENVLOCK_LOW_SPEED_LIMIT", "10"},
      {"ENVLOCK_MAX_TIME", "x"},            {"ENVLOCK_CA_BUNDLE", "/ca.pem"}, {"ENVLOCK_MAX_DOWNLOAD_SIZE", "16G"},
      {"ENVLOCK_LIBCUDA", "/l/cuda.so"},    {"ENVLOCK_LIBNVML", "/l/nvml.so"}, {"ENVLOCK_NVIDIA_SMI", "/bin/smi"},
      {"HOME", "/home/ana"},                {"XDG_CACHE_HOME", "rel"},        {"XDG_CONFIG_HOME", ""},
      {"NETRC", "/n"}};
  const Settings s = Settings::read([&env](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
  EXPECT_EQ(s.cache_dir, "/c");
  EXPECT_EQ(s.pkgs_dir, "/p");
  EXPECT_EQ(s.pkgs_dirs, "/a,/b");
  EXPECT_EQ(s.auth_file, "/auth.json");
  EXPECT_EQ(s.install_sync, "fs");
  EXPECT_EQ(s.connect_timeout, "5");
  EXPECT_EQ(s.read_timeout, "6");
  EXPECT_EQ(s.retries, "0");
  EXPECT_EQ(s.low_speed_limit, "10");
  EXPECT_EQ(s.max_time, "x");  // as written: its reader checks it (network_environment_problems)
  EXPECT_EQ(s.ca_bundle, "/ca.pem");
  EXPECT_EQ(s.max_download_size, "16G");
  EXPECT_EQ(s.libcuda, "/l/cuda.so");
  EXPECT_EQ(s.libnvml, "/l/nvml.so");
  EXPECT_EQ(s.nvidia_smi, "/bin/smi");
  EXPECT_EQ(s.home, "/home/ana");
  EXPECT_EQ(s.xdg_cache_home, "rel");
  EXPECT_EQ(s.xdg_config_home, "");
  EXPECT_EQ(s.netrc, "/n");
  const Settings none = Settings::read(nullptr);
  EXPECT_EQ(none.cache_dir, "");
  EXPECT_EQ(none.home, "");
}

// The CLI installs what it read at its edge; the library's readers then ask those settings, not
// the process environment. Without any installed, they read the environment at each call.
TEST(Settings, InstalledSettingsAreWhatTheLibraryReads) {
  const char* names[] = {"ENVLOCK_PKGS_DIR", "ENVLOCK_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  std::optional<std::string> keep[4];
  for (int i = 0; i < 4; ++i)
    if (const char* v = std::getenv(names[i])) keep[i] = v;
  ::setenv("ENVLOCK_PKGS_DIR", "/from/env/pkgs", 1);
  ::setenv("ENVLOCK_CACHE_DIR", "/from/env", 1);
  ::setenv("HOME", "/home/env", 1);
  EXPECT_EQ(package_cache_dir().value(), "/from/env/pkgs");
  EXPECT_EQ(settings().cache_dir, "/from/env");

  Settings installed;
  installed.cache_dir = "/installed";
  installed.home = "/home/installed";
  use_settings(installed);
  EXPECT_EQ(cache_root(), "/installed");
  EXPECT_EQ(package_cache_dir().value(), "/installed/pkgs");  // no ENVLOCK_PKGS_DIR in them
  EXPECT_EQ(home_folder(), "/home/installed");
  ::setenv("ENVLOCK_CACHE_DIR", "/changed", 1);  // read once: a later change is not seen
  EXPECT_EQ(cache_root(), "/installed");

  use_settings(std::nullopt);
  EXPECT_EQ(cache_root(), "/changed");
  EXPECT_EQ(home_folder(), "/home/env");
  for (int i = 0; i < 4; ++i) {
    if (keep[i]) ::setenv(names[i], keep[i]->c_str(), 1);
    else ::unsetenv(names[i]);
  }
}

}  // namespace
}  // namespace envlock
