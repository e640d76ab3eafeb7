// envlock gc --keep K [-p PREFIX | -e ENV [-f MANIFEST]] [-l LOCKFILE]... [--dry-run] [--json] —
// removes the old generations of an environment (keeping the current one, every pinned one and
// the K newest others: gc_generations(), envlock/generations.hpp), then the package cache entries
// that no environment links and no kept generation or named lockfile uses (gc_package_cache(),
// envlock/package_cache.hpp).
#include <sys/stat.h>

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "envlock/extract.hpp"
#include "envlock/lockfile.hpp"
#include "envlock/package_cache.hpp"
#include "envlock/text.hpp"
#include "generations_cli.hpp"

namespace envlock::cli {
namespace {

namespace fs = std::filesystem;

struct GcArgs {
  GenerationTarget target;
  std::uint64_t keep = 0;
  std::vector<std::string> lockfiles;
  bool dry_run = false;
};

std::string size_text(std::uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) v /= 1024.0, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string numbers(const std::vector<std::uint64_t>& ns) {
  std::string out;
  for (auto n : ns) out += (out.empty() ? "" : ", ") + std::to_string(n);
  return out;
}

/// Every package of `lockfile` (all environments and platforms) as cache entry names.
Status add_lockfile_dists(const fs::path& lockfile, std::set<std::string>& keep) {
  auto lf = Lockfile::read(lockfile);
  if (!lf) return lf.error();
  for (const auto& [name, env] : lf->environments)
    for (const auto& [platform, locked] : env.platforms)
      for (const auto& p : locked.packages) {
        keep.insert(p.dist_name());
        std::string file = p.file_name;
        for (const char* ext : {".conda", ".tar.bz2"})
          if (file.ends_with(ext)) file.resize(file.size() - std::string_view(ext).size());
        if (!file.empty()) keep.insert(file);
      }
  return ok_status();
}

/// The hard links of `trees` to files that have others: (st_dev, st_ino) -> how many. The trees
/// a dry run would remove still link their packages; counted as gone, the package cache line of
/// `gc --dry-run` is the real run's.
LinksGoing links_in(const std::vector<fs::path>& trees) {
  LinksGoing going;
  struct stat st {};
  for (const auto& tree : trees) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(tree, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec))
      if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1)
        ++going[{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)}];
  }
  return going;
}

int run_gc(const Context& ctx, const GcArgs& args) {
  auto prefix = generation_prefix(args.target);
  if (!prefix) return report_error(ctx, prefix.error());
  const DryRun dry = args.dry_run ? DryRun::Yes : DryRun::No;
  std::set<std::string> keep;
  for (const auto& l : args.lockfiles)  // read first: a bad one changes nothing
    if (auto st = add_lockfile_dists(l, keep); !st) return report_error(ctx, st.error());
  auto report = gc_generations(*prefix, args.keep, dry, say_lock_wait);
  if (!report) return report_error(ctx, report.error());
  std::vector<std::uint64_t> kept;
  for (const auto& g : report->kept) {
    kept.push_back(g.number);
    for (auto& d : generation_dists(g.tree)) keep.insert(std::move(d));
    if (!g.lockfile_copy.empty())
      if (auto st = add_lockfile_dists(g.lockfile_copy, keep); !st)
        report->warnings.push_back("a kept lockfile could not be read, so the packages it names were not all kept: " +
                                   st.error().to_string());
  }
  for (const auto& tree : report->not_removed_trees)  // still there: its packages stay too
    for (auto& d : generation_dists(tree)) keep.insert(std::move(d));
  auto dirs = default_package_cache_dirs();
  if (!dirs) return report_error(ctx, dirs.error());
  const CacheCleanReport cache = gc_package_cache(*dirs, keep, args.dry_run ? CleanMode::DryRun : CleanMode::Remove,
                                                  args.dry_run ? links_in(report->removed_trees) : LinksGoing{});
  std::size_t items = 0;
  std::uint64_t bytes = 0;
  for (const auto& k : cache.kinds) items += k.kind == "packages" ? k.items : 0, bytes += k.bytes;
  std::size_t archives = 0;
  for (const auto& k : cache.kinds) archives += k.kind == "archives" ? k.items : 0;
  // One rule for clean and gc (docs/cache.md): what could not be removed is named in a warning
  // and in the summary, and the exit code is 1.
  const int failed = cache.failures.empty() && report->not_removed.empty() ? 0 : 1;
  for (const auto& w : report->warnings) warn(w);
  for (const auto& f : cache.failures) warn(f.where + ": " + f.message);
  if (ctx.json) {
    nlohmann::json failures = nlohmann::json::array();
    for (const auto& f : cache.failures) failures.push_back({{"path", f.where}, {"message", f.message}});
    nlohmann::json in_use = nlohmann::json::array();
    for (const auto& p : cache.in_use) in_use.push_back(p.string());
    std::cout << json_text({{"prefix", prefix->string()},
                            {"dry_run", args.dry_run},
                            {"removed", report->removed},
                            {"not_removed", report->not_removed},
                            {"kept", kept},
                            {"lockfiles_removed", report->lockfiles_removed},
                            {"cache", {{"packages", items}, {"archives", archives}, {"bytes", bytes},
                                       {"kept_for_generations", keep.size()}, {"linked", cache.linked},
                                       {"in_use", in_use}}},
                            {"warnings", report->warnings},
                            {"failures", failures}})
              << "\n";
    return failed;
  }
  const std::string verb = args.dry_run ? "would remove" : "removed";
  std::string done;
  if (!report->removed.empty())
    done = verb + " generation" + (report->removed.size() == 1 ? " " : "s ") + numbers(report->removed);
  if (!report->not_removed.empty())
    done += (done.empty() ? "" : "; ") + std::string("could not remove generation") +
            (report->not_removed.size() == 1 ? " " : "s ") + numbers(report->not_removed);
  std::cout << terminal_text(prefix->string()) << ": " << (done.empty() ? std::string("no generation to remove") : done)
            << "; kept " << (kept.empty() ? std::string("none") : numbers(kept)) << "\n";
  for (const auto& p : cache.in_use) std::cout << "kept " << printable(p.string()) << ": in use by another envlock process\n";
  std::cout << "package cache: " << verb << " " << items << (items == 1 ? " package" : " packages") << " and " << archives
            << (archives == 1 ? " archive" : " archives") << " (" << size_text(bytes) << ") that no environment links and no "
            << "kept generation or lockfile names\n";
  if (const auto n = cache.failures.size(); n != 0)
    std::cout << "package cache: could not remove " << n << (n == 1 ? " item" : " items") << " (see the warnings)\n";
  if (args.dry_run) std::cout << "dry run: nothing was removed\n";
  return failed;
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<GcArgs>();
  add_generation_target(sub, args->target);
  add_whole_number_option(sub, "--keep", args->keep, 0, kMaxGenerationNumber,
                          "how many generations to keep besides the current one and the pinned ones")
      ->required();
  sub.add_option("-l,--lockfile", args->lockfiles, "a lockfile whose packages stay in the package cache (repeatable)");
  sub.add_flag("--dry-run", args->dry_run, "say what would be removed; remove nothing");
  sub.callback([&ctx, args] { ctx.exit_code = run_gc(ctx, *args); });
}

const RegisterCommand reg{"gc", "remove old generations of an environment and package cache entries nothing uses", &setup};

}  // namespace
}  // namespace envlock::cli
