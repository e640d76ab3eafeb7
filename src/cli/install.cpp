// envlock install -l LOCKFILE [-e ENV] -p PREFIX [--copy] [--ignore-host] [--no-scripts]
// Installs exactly the lockfile's records for this host's platform; never solves.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "envlock/hash.hpp"
#include "envlock/match_spec.hpp"
#include "envlock/package_cache.hpp"
#include "envlock/platform.hpp"
#include "envlock/url.hpp"
#include "envlock/virtual_packages.hpp"
#include "install_run.hpp"
#include "lock_input.hpp"

namespace envlock::cli {

Result<std::string> choose_environment(const Lockfile& lockfile, const std::string& requested,
                                       const std::string& source) {
  std::string names;
  for (const auto& [name, env] : lockfile.environments) names += (names.empty() ? "" : ", ") + name;
  if (!requested.empty()) {
    if (lockfile.environments.count(requested)) return requested;
    return Error{ErrorKind::Usage, source, "has no environment '" + requested + "'",
                 "environments in it: " + (names.empty() ? std::string("(none)") : names),
                 "pass one of them with -e"};
  }
  if (lockfile.environments.size() == 1) return lockfile.environments.begin()->first;
  if (lockfile.environments.count("default")) return std::string("default");
  return Error{ErrorKind::Usage, source, "has several environments and none is called 'default'",
               "environments in it: " + (names.empty() ? std::string("(none)") : names),
               "choose one with -e"};
}

namespace {

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && u < 3) bytes /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

/// The manifest spec of `env` that names `package`, if any.
std::string requested_spec_for(const LockedEnvironment& env, const std::string& package) {
  for (const auto& text : env.requested) {
    auto spec = MatchSpec::parse(text);
    if (spec && spec->exact_name() == package) return text;
  }
  return "";
}

}  // namespace

int run_install(const Context& ctx, const Lockfile& lockfile, const InstallRequest& request) {
  const std::string source = request.lockfile_path.filename().string();
  auto env_name = choose_environment(lockfile, request.environment, request.lockfile_path.string());
  if (!env_name) return report_error(ctx, env_name.error());
  const LockedEnvironment& env = lockfile.environments.at(*env_name);
  const std::string platform = Platform::host().to_string();
  const LockedPlatform* locked = lockfile.find(*env_name, platform);
  if (locked == nullptr) {
    std::string have;
    for (const auto& [p, lp] : env.platforms) have += (have.empty() ? "" : ", ") + p;
    return report_error(
        ctx, Error{ErrorKind::Incompatible, request.lockfile_path.string(),
                   "environment '" + *env_name + "' is not locked for this host's platform " + platform,
                   "locked platforms: " + (have.empty() ? std::string("(none)") : have),
                   "add " + platform + " to `platforms` in the manifest and run `envlock lock`"});
  }

  // The prefix and the host are checked first, before anything is downloaded.
  if (auto st = check_install_prefix(request.prefix); !st) return report_error(ctx, st.error());
  auto host = detect_virtual_packages(HostProbe::system());
  if (!host) return report_error(ctx, host.error());
  const auto order = install_order(*locked);
  std::vector<RepoDataRecord> records;
  for (const auto* p : order) records.push_back(*p);
  const auto mismatches = check_host(records, locked->virtual_packages, *host);
  if (!mismatches.empty()) {
    if (!request.ignore_host) return report_error(ctx, host_mismatch_error(mismatches));
    for (const auto& m : mismatches) warn("--ignore-host: installing although " + m.to_string());
  }

  // Package cache: download and extract what is missing.
  auto cache = PackageCache::open_default();
  if (!cache) return report_error(ctx, cache.error());
  CacheOptions cache_options;
  cache_options.validation = request.cache_validation;
  const bool progress = ctx.stderr_tty && !ctx.json;
  if (progress) {
    cache_options.fetch.on_progress = [](const FetchProgress& p) {
      std::fprintf(stderr, "\r\033[Kfetch %zu/%zu packages  %s / %s  %s/s", p.files_done, p.files_total,
                   human_bytes(static_cast<double>(p.bytes_done)).c_str(),
                   human_bytes(static_cast<double>(p.bytes_total)).c_str(),
                   human_bytes(p.bytes_per_second).c_str());
      std::fflush(stderr);
    };
  }
  auto entries = cache->ensure_all(records, cache_options);
  if (progress) std::fprintf(stderr, "\r\033[K");
  std::vector<PackageToLink> packages;
  std::size_t downloaded = 0, hits = 0;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i]) {
      Error e = entries[i].error();
      if (e.where.empty()) e.where = records[i].file_name;
      e.detail += std::string(e.detail.empty() ? "" : "\n") + "package: " + records[i].dist_name() +
                  " from " + redact_url(records[i].url) +
                  "\nnothing was installed; the prefix was not touched";
      return report_error(ctx, e);
    }
    if (entries[i]->origin == CacheOrigin::Downloaded) ++downloaded;
    if (entries[i]->origin == CacheOrigin::Hit) ++hits;
    PackageToLink p;
    p.record = records[i];
    p.extracted_dir = entries[i]->extracted_dir;
    p.archive_path = entries[i]->archive;
    p.requested_spec = requested_spec_for(env, records[i].name);
    packages.push_back(std::move(p));
  }
  if (!ctx.json) {
    std::cerr << "packages: " << records.size() << " (" << downloaded << " downloaded, " << hits
              << " from the package cache)\n";
  }

  auto digest = hash_file(request.lockfile_path, HashAlgorithm::Sha256);
  if (!digest) return report_error(ctx, digest.error());
  InstallOptions options;
  options.link_mode = request.link_mode;
  options.scripts = request.scripts;
  options.origin.lockfile = source;
  options.origin.lockfile_hash = "sha256:" + *digest;
  options.origin.manifest_hash = lockfile.manifest_hash;
  options.origin.environment = *env_name;
  options.origin.platform = platform;
  options.origin.command = request.command;
  if (progress) {
    options.progress = [](std::size_t i, std::size_t n, const RepoDataRecord& r) {
      std::fprintf(stderr, "\r\033[Klink %zu/%zu %s", i + 1, n, r.dist_name().c_str());
      std::fflush(stderr);
    };
  }
  auto report = install_packages(request.prefix, packages, options);
  if (progress) std::fprintf(stderr, "\r\033[K");
  if (!report) {
    const int code = report_error(ctx, report.error());
    const int sig = install_interrupted_by();
    return sig != 0 ? 128 + sig : code;  // the shell's convention for "stopped by a signal"
  }

  const std::string prefix = std::filesystem::absolute(request.prefix).lexically_normal().string();
  for (const auto& path : report->clobbered) warn(path + " is installed by more than one package; the later one won");
  // envlock install links conda packages only; the lockfile's pip entries (e.g. from
  // `envlock snapshot lock`) are named, never dropped silently.
  if (!locked->pip.empty()) {
    std::string names;
    for (const auto& p : locked->pip) {
      // A VCS, editable or URL install is named by its requirement ("mypkg @ git+https://...@<commit>"),
      // never as a name==version pin that pip would resolve from an index.
      names += (names.empty() ? "" : ", ") +
               (!p.requirement.empty() ? p.requirement : p.name + (p.version.empty() ? "" : "==" + p.version));
    }
    report->warnings.push_back(std::to_string(locked->pip.size()) + " pip package(s) in the lockfile were not installed "
                               "(envlock install installs conda packages only): " + names +
                               "; to restore a captured host's pip installs use `envlock snapshot deploy`, "
                               "or run pip in the environment");
  }
  for (const auto& w : report->warnings) warn(w);
  if (ctx.json) {
    nlohmann::json j;
    j["prefix"] = prefix;
    j["environment"] = *env_name;
    j["platform"] = platform;
    j["lockfile_hash"] = options.origin.lockfile_hash;
    j["installed"] = report->installed;
    j["removed"] = report->removed;
    j["kept"] = report->kept;
    j["files"] = {{"linked", report->files_linked},
                  {"copied", report->files_copied},
                  {"relocated", report->files_relocated}};
    j["messages"] = report->messages;
    j["warnings"] = report->warnings;
    j["clobbered"] = report->clobbered;
    j["host_mismatches_ignored"] = nlohmann::json::array();
    for (const auto& m : mismatches) j["host_mismatches_ignored"].push_back(m.to_string());
    std::cout << json_text(j) << "\n";
  } else {
    for (const auto& m : report->messages) std::cout << m << (m.ends_with('\n') ? "" : "\n");
    std::cout << "environment '" << *env_name << "' (" << platform << ") is ready in " << prefix << "\n"
              << "  " << report->installed.size() << " installed, " << report->kept.size() << " unchanged, "
              << report->removed.size() << " removed; files: " << report->files_linked << " linked, "
              << report->files_copied << " copied, " << report->files_relocated << " relocated\n";
  }
  return 0;
}

namespace {

struct InstallArgs {
  std::string lockfile;
  std::string environment;
  std::string prefix;
  bool copy = false;
  bool ignore_host = false;
  bool no_scripts = false;
  bool verify_cache = false;
};

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<InstallArgs>();
  sub.add_option("-l,--lockfile", args->lockfile, "the lockfile (envlock.lock)")->required();
  sub.add_option("-e,--environment", args->environment, "environment in the lockfile (default: the only one, or 'default')");
  sub.add_option("-p,--prefix", args->prefix, "the environment folder to create or update")->required();
  sub.add_flag("--copy", args->copy, "copy files instead of hard-linking them from the package cache");
  sub.add_flag("--ignore-host", args->ignore_host, "install even when this host does not meet the lockfile's requirements");
  sub.add_flag("--no-scripts", args->no_scripts, "do not run packages' post-link scripts");
  sub.add_flag("--extra-safety-checks,--verify-cache", args->verify_cache,
               "check the sha256 of every cached package file before linking it (mamba's name; default: sizes only)");
  sub.callback([&ctx, args] {
    // The prefix first: a bad -p is a usage error whatever the lockfile holds.
    if (auto st = check_install_prefix(args->prefix); !st) {
      ctx.exit_code = report_error(ctx, st.error());
      return;
    }
    auto lockfile = read_envlock_lockfile(args->lockfile, "install");
    if (!lockfile) {
      ctx.exit_code = report_error(ctx, lockfile.error());
      return;
    }
    InstallRequest request;
    request.lockfile_path = args->lockfile;
    request.environment = args->environment;
    request.prefix = args->prefix;
    request.link_mode = args->copy ? LinkMode::Copy : LinkMode::Hardlink;
    request.scripts = args->no_scripts ? RunScripts::No : RunScripts::Yes;
    request.ignore_host = args->ignore_host;
    if (args->verify_cache) request.cache_validation = CacheValidation::Hashes;
    ctx.exit_code = run_install(ctx, *lockfile, request);
  });
}

const RegisterCommand reg{"install", "install exactly what a lockfile pins for this platform into a prefix (never solves)",
                          &setup};

}  // namespace
}  // namespace envlock::cli
