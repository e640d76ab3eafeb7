#include "envlock/paths.hpp"

#include <cstdlib>

namespace envlock {
namespace {
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}
}  // namespace

std::filesystem::path cache_root() {
  if (const char* v = env("ENVLOCK_CACHE_DIR")) return v;
  if (const char* v = env("XDG_CACHE_HOME")) return std::filesystem::path(v) / "envlock";
  if (const char* v = env("HOME")) return std::filesystem::path(v) / ".cache" / "envlock";
  return std::filesystem::temp_directory_path() / "envlock-cache";
}

std::filesystem::path package_cache_dir() {
  if (const char* v = env("ENVLOCK_PKGS_DIR")) return v;
  return cache_root() / "pkgs";
}

std::filesystem::path repodata_cache_dir() { return cache_root() / "repodata"; }

}  // namespace envlock
