// envlock clean [--dry-run] [--json]
// Frees the caches of this machine: the repodata cache and the package cache's archives and
// extracted packages, what `conda clean --all` removes (docs/cache.md, "Freeing space"), while
// other envlock processes may be using them: an entry another process holds locked is kept and
// named (clean_caches(), envlock/package_cache.hpp). Prints the size of each kind first.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "envlock/package_cache.hpp"
#include "envlock/paths.hpp"
#include "envlock/text.hpp"
#include "registry.hpp"

namespace envlock::cli {
namespace {

namespace fs = std::filesystem;

struct CleanArgs {
  bool dry_run = false;
};

/// 512 B, 1.5 KiB, 20.0 MiB: powers of 1024, one decimal past bytes.
std::string size_text(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

const char* label_of(const std::string& kind) {
  if (kind == "repodata") return "repodata cache";
  if (kind == "archives") return "package archives";
  return "extracted packages";
}

int run_clean(const Context& ctx, const CleanArgs& args) {
  auto dirs = default_package_cache_dirs();
  if (!dirs) return report_error(ctx, dirs.error());
  const CleanMode mode = args.dry_run ? CleanMode::DryRun : CleanMode::Remove;
  const CacheCleanReport report = clean_caches(repodata_cache_dir(), *dirs, mode);
  std::size_t items = 0;
  std::uint64_t bytes = 0;
  for (const auto& k : report.kinds) {
    items += k.items;
    bytes += k.bytes;
  }
  if (ctx.json) {
    nlohmann::json j;
    j["dry_run"] = args.dry_run;
    j["kinds"] = nlohmann::json::array();
    for (const auto& k : report.kinds)
      j["kinds"].push_back({{"kind", k.kind}, {"folder", k.folder.string()}, {"items", k.items}, {"bytes", k.bytes}});
    j["in_use"] = nlohmann::json::array();
    for (const auto& p : report.in_use) j["in_use"].push_back(p.string());
    j["linked"] = report.linked;
    j["items"] = items;
    j["bytes"] = bytes;
    j["failures"] = nlohmann::json::array();
    for (const auto& f : report.failures) j["failures"].push_back({{"path", f.where}, {"message", f.message}});
    std::cout << json_text(j) << "\n";
    return report.failures.empty() ? 0 : 1;
  }
  for (const auto& k : report.kinds) {
    const char* unit = k.kind == "packages" ? (k.items == 1 ? "folder" : "folders") : (k.items == 1 ? "file" : "files");
    char line[64];
    std::snprintf(line, sizeof line, "%-19s %6zu %-8s %10s  ", label_of(k.kind), k.items, unit, size_text(k.bytes).c_str());
    std::cout << line << printable(k.folder.string()) << "\n";
  }
  for (const auto& p : report.in_use)
    std::cout << "kept " << printable(p.string()) << ": in use by another envlock process\n";
  if (report.linked > 0)
    std::cout << "kept " << report.linked << " extracted package" << (report.linked == 1 ? "" : "s")
              << " linked into environments\n";
  for (const auto& f : report.failures) warn(f.where + ": " + f.message);
  if (items == 0) {
    std::cout << (report.failures.empty() ? "nothing to free\n" : "nothing freed\n");
  } else if (args.dry_run) {
    std::cout << "would free " << size_text(bytes) << " (" << items << (items == 1 ? " item" : " items")
              << "; dry run: nothing removed)\n";
  } else {
    std::cout << "freed " << size_text(bytes) << " (" << items << (items == 1 ? " item" : " items") << " removed)\n";
  }
  // One rule for clean and gc (docs/cache.md): what could not be removed is not counted as
  // removed, is named in a warning and in this summary, and the exit code is 1.
  if (const auto n = report.failures.size(); n != 0)
    std::cout << "could not remove " << n << (n == 1 ? " item" : " items") << " (see the warnings)\n";
  return report.failures.empty() ? 0 : 1;
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<CleanArgs>();
  sub.add_flag("--dry-run", args->dry_run, "print what would be freed; remove nothing");
  sub.callback([&ctx, args] { ctx.exit_code = run_clean(ctx, *args); });
}

const RegisterCommand reg{"clean", "free the repodata and package caches (entries other processes use are kept)",
                          &setup};

}  // namespace
}  // namespace envlock::cli
