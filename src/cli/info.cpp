// envlock info — what envlock sees on this machine: versions, platform, cache, virtual packages.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "envlock/build_info.hpp"
#include "envlock/package_cache.hpp"
#include "envlock/paths.hpp"
#include "envlock/platform.hpp"
#include "envlock/settings.hpp"
#include "envlock/text.hpp"
#include "envlock/solver_info.hpp"
#include "envlock/virtual_packages.hpp"
#include "registry.hpp"

namespace envlock::cli {
namespace {

namespace fs = std::filesystem;


int run_info(const Context& ctx) {
  auto vps = detect_virtual_packages(Host::system());
  if (!vps) return report_error(ctx, vps.error());
  // The package cache folders every install uses (docs/cache.md): ENVLOCK_PKGS_DIRS's folders in
  // search order when it is set, else the one folder of package_cache_dir() (ENVLOCK_PKGS_DIR,
  // ENVLOCK_CACHE_DIR/pkgs, ...). Where none can be placed, info says so and still succeeds.
  const bool listed = !settings().pkgs_dirs.empty();
  std::vector<std::string> pkgs_dirs;
  std::string no_cache;
  if (auto dirs = default_package_cache_dirs(); dirs) {
    for (const auto& d : *dirs) pkgs_dirs.push_back(d.string());
  } else if (listed) {
    return report_error(ctx, dirs.error());
  } else {
    no_cache = dirs.error().message;
  }
  const std::string platform = Platform::host().to_string();
  if (ctx.json) {
    nlohmann::json j;
    j["version"] = ENVLOCK_VERSION_STRING;
    j["libsolv_version"] = libsolv_version();
    j["platform"] = platform;
    j["cache_dir"] = cache_root().string();
    j["pkgs_dir"] = pkgs_dirs.empty() ? nlohmann::json(nullptr) : nlohmann::json(pkgs_dirs.front());
    if (listed) j["pkgs_dirs"] = pkgs_dirs;
    j["virtual_packages"] = nlohmann::json::array();
    for (const auto& vp : *vps) {
      j["virtual_packages"].push_back({{"name", vp.name}, {"version", vp.version}, {"build", vp.build}});
    }
    std::cout << json_text(j) << "\n";
    return 0;
  }
  std::cout << "envlock version   : " << ENVLOCK_VERSION_STRING << "\n"
            << "libsolv version   : " << libsolv_version() << " (conda)\n"
            << "platform          : " << platform << "\n"
            << "cache directory   : " << printable(cache_root().string()) << "\n";
  // ENVLOCK_PKGS_DIRS's folders are listed as `conda info` lists its pkgs_dirs.
  if (pkgs_dirs.empty()) std::cout << "package cache     : (none: " << printable(no_cache) << ")\n";
  for (std::size_t i = 0; i < pkgs_dirs.size(); ++i) {
    std::error_code ec;
    const bool read_only = fs::exists(pkgs_dirs[i], ec) && !package_cache_folder_writable(pkgs_dirs[i]);
    std::cout << (i == 0 ? "package cache     : " : "                    ") << printable(pkgs_dirs[i])
              << (read_only ? " (read-only)" : "") << (i == 0 && listed ? " (ENVLOCK_PKGS_DIRS)" : "") << "\n";
  }
  std::cout << "virtual packages  :";
  if (vps->empty()) std::cout << " (none)";
  std::cout << "\n";
  for (const auto& vp : *vps) std::cout << "  " << vp.to_string() << "\n";
  return 0;
}

void setup(CLI::App& sub, Context& ctx) {
  sub.callback([&ctx] { ctx.exit_code = run_info(ctx); });
}

const RegisterCommand reg{"info", "show envlock's version, this host's platform and virtual packages", &setup};

}  // namespace
}  // namespace envlock::cli
