#pragma once
// envlock/paths.hpp — where envlock keeps its state on this machine.
//
//   cache root     $ENVLOCK_CACHE_DIR, else $XDG_CACHE_HOME/envlock, else $HOME/.cache/envlock
//   package cache  $ENVLOCK_PKGS_DIR, else <cache root>/pkgs     (conda's pkgs/ layout)
//   repodata cache <cache root>/repodata

#include <filesystem>

namespace envlock {

std::filesystem::path cache_root();
std::filesystem::path package_cache_dir();
std::filesystem::path repodata_cache_dir();

}  // namespace envlock
