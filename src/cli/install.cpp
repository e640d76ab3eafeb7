// envlock install -l LOCKFILE [-e ENV] -p PREFIX [--copy] [--ignore-host] [--no-scripts]
// Installs exactly the lockfile's records for this host's platform; never solves.
#include <fstream>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <iostream>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "envlock/hash.hpp"
#include "envlock/match_spec.hpp"
#include "envlock/package_cache.hpp"
#include "envlock/platform.hpp"
#include "envlock/reference.hpp"
#include "envlock/url.hpp"
#include "envlock/virtual_packages.hpp"
#include "install_run.hpp"
#include "lock_input.hpp"
#include "network_options.hpp"
#include "pip_install.hpp"

namespace envlock::cli {

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

/// `records` as packages to link, each with its package cache entry when the cache holds a whole
/// one already (PackageCache::lookup, only where the entry's folder exists: nothing is created,
/// downloaded or extracted), else with an empty extracted_dir.
std::vector<PackageToLink> cached_packages(const LockedEnvironment& env, const std::vector<RepoDataRecord>& records) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> present;
  if (auto dirs = default_package_cache_dirs(); dirs)
    for (const auto& d : *dirs)
      if (fs::is_directory(d, ec)) present.push_back(d);
  std::optional<PackageCache> cache;
  if (!present.empty())
    if (auto c = PackageCache::open(present); c) cache.emplace(std::move(*c));
  std::vector<PackageToLink> out;
  for (const auto& r : records) {
    PackageToLink p;
    p.record = r;
    p.requested_spec = requested_spec_for(env, r.name);
    std::string dist = r.file_name.empty() ? r.dist_name() : r.file_name;
    for (const char* ext : {".conda", ".tar.bz2"})
      if (dist.ends_with(ext)) dist.resize(dist.size() - std::string_view(ext).size());
    const bool there = std::any_of(present.begin(), present.end(), [&](const fs::path& d) {
      return !dist.empty() && dist.find('/') == std::string::npos && fs::is_directory(d / dist, ec);
    });
    if (cache && there)
      if (auto entry = cache->lookup(r)) {
        p.extracted_dir = entry->extracted_dir;
        p.archive_path = entry->archive;
      }
    out.push_back(std::move(p));
  }
  return out;
}

/// The text and JSON of a --dry-run: what would change, nothing changed.
int print_dry_run(const Context& ctx, TransactionPlan plan, const InstallPreview& preview, const std::string& prefix,
                  const std::string& env, const std::string& platform, const std::vector<std::string>& warnings) {
  const std::vector<std::string>& relinked = preview.relinked;
  // What the install links again is not unchanged (attack 20, I1: the clobber's loser was listed
  // unchanged, and the install relinked it); nor is a package whose record it rewrites.
  std::erase_if(plan.unchanged, [&](const std::string& d) {
    return std::find(relinked.begin(), relinked.end(), d) != relinked.end() ||
           std::find(preview.undecided.begin(), preview.undecided.end(), d) != preview.undecided.end() ||
           std::any_of(preview.rewritten.begin(), preview.rewritten.end(),
                       [&](const RecordRewrite& r) { return r.dist == d; });
  });
  auto joined = [](const std::vector<std::string>& items) {
    std::string out;
    for (const auto& i : items) out += (out.empty() ? "" : ", ") + i;
    return out;
  };
  for (const auto& w : warnings) warn(w);
  if (ctx.json) {
    nlohmann::json changed = nlohmann::json::array();
    for (const auto& [from, to] : plan.changed) changed.push_back({{"from", from}, {"to", to}});
    nlohmann::json record = nlohmann::json::array();
    for (const auto& r : preview.rewritten) record.push_back({{"dist", r.dist}, {"fields", r.fields}});
    std::cout << json_text({{"dry_run", true},
                            {"prefix", prefix},
                            {"environment", env},
                            {"platform", platform},
                            {"added", plan.added},
                            {"removed", plan.removed},
                            {"changed", changed},
                            {"unchanged", plan.unchanged},
                            {"relinked", relinked},
                            {"record", record},
                            {"undecided", preview.undecided},
                            {"warnings", warnings}})
              << "\n";
    return 0;
  }
  std::string out = "dry run: environment '" + env + "' (" + platform + ") in " + prefix +
                    " would change as follows; nothing was changed\n";
  for (const auto& d : plan.added) out += "  added      " + d + "\n";
  for (const auto& d : plan.removed) out += "  removed    " + d + "\n";
  for (const auto& [from, to] : plan.changed) out += "  changed    " + from + " -> " + to + "\n";
  for (const auto& d : relinked) out += "  relinked   " + d + "\n";
  for (const auto& r : preview.rewritten) out += "  record     " + r.dist + " (" + joined(r.fields) + ")\n";
  for (const auto& d : preview.undecided) out += "  undecided  " + d + "\n";
  for (const auto& d : plan.unchanged) out += "  unchanged  " + d + "\n";
  out += "  " + std::to_string(plan.added.size()) + " added, " + std::to_string(plan.removed.size()) + " removed, " +
         std::to_string(plan.changed.size()) + " changed, " +
         (relinked.empty() ? std::string() : std::to_string(relinked.size()) + " relinked, ") +
         (preview.rewritten.empty() ? std::string()
                                    : std::to_string(preview.rewritten.size()) +
                                          (preview.rewritten.size() == 1 ? " record" : " records") + " rewritten, ") +
         (preview.undecided.empty() ? std::string() : std::to_string(preview.undecided.size()) + " undecided, ") +
         std::to_string(plan.unchanged.size()) + " unchanged\n";
  std::cout << terminal_text(out);
  return 0;
}

}  // namespace

Result<std::vector<std::pair<std::string, std::string>>> parse_channel_urls(const Lockfile& lockfile,
                                                                           const std::vector<std::string>& values) {
  std::set<std::string> channels;
  std::map<std::string, std::set<std::string>> named;  // a mirror's recorded name -> its URLs
  for (const auto& [en, env] : lockfile.environments)
    for (const auto& [pn, plat] : env.platforms)
      for (std::size_t i = 0; i < plat.channels.size(); ++i) {
        channels.insert(redact_url(plat.channels[i]));
        if (i < plat.channel_names.size() && !plat.channel_names[i].empty())
          named[plat.channel_names[i]].insert(redact_url(plat.channels[i]));
      }
  std::string known;
  for (const auto& c : channels) known += (known.empty() ? "" : ", ") + c;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& v : values) {
    auto eq = v.find('=');
    const std::string key = eq == std::string::npos ? v : v.substr(0, eq);
    const std::string url = eq == std::string::npos ? "" : v.substr(eq + 1);
    if (eq == std::string::npos || key.empty() || url.empty())
      return Error{ErrorKind::Usage, "--channel-url", "'" + redact_text(v) + "' is not CHANNEL=URL", "",
                   "e.g. --channel-url conda-forge=https://mirror.example.com/conda-forge"};
    if (!url.starts_with("http://") && !url.starts_with("https://") && !url.starts_with("file://"))
      return Error{ErrorKind::Usage, "--channel-url", "the mirror of '" + key + "' is not an http(s):// or file:// URL",
                   "", "write the mirror's full URL"};
    std::vector<std::string> hits;
    for (const auto& c : channels)
      if (c == key || (c.size() > key.size() && c.ends_with("/" + key)) || (named.count(key) && named[key].count(c)))
        hits.push_back(c);
    if (hits.size() != 1)
      return Error{ErrorKind::Usage, "--channel-url",
                   hits.empty() ? "'" + key + "' names no channel of the lockfile"
                                : "'" + key + "' names more than one channel of the lockfile",
                   "", "the lockfile's channels: " + (known.empty() ? std::string("(none)") : known)};
    out.emplace_back(hits.front(), url);
  }
  return out;
}

Status check_records(const std::vector<RepoDataRecord>& records, const std::filesystem::path& lockfile_path,
                     bool allow_unverified, std::vector<std::string>& warnings) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path folder = fs::weakly_canonical(fs::absolute(lockfile_path), ec).parent_path();
  if (ec) folder = fs::absolute(lockfile_path).lexically_normal().parent_path();
  std::vector<std::string> unverified;
  std::map<std::string, std::vector<std::string>> outside;  // local channel -> its packages
  for (const auto& r : records) {
    if (r.name.starts_with("__")) {
      return Error{ErrorKind::Integrity, r.dist_name(),
                   "is a virtual package (" + r.name + "), which describes the host and is never installed",
                   "lockfile: " + lockfile_path.string(),
                   "remove the record from the lockfile's packages (virtual packages belong in its virtual_packages), "
                   "or lock again"};
    }
    if (!r.file_name.empty() &&
        (r.file_name.find('/') != std::string::npos || r.file_name == "." || r.file_name == ".." ||
         r.file_name.find('\0') != std::string::npos)) {
      return Error{ErrorKind::Integrity, r.dist_name(),
                   "fn \"" + r.file_name + "\" is not a plain file name", "lockfile: " + lockfile_path.string(),
                   "fix the record's fn in the lockfile, or lock again"};
    }
    if (r.sha256.empty() && r.md5.empty()) unverified.push_back(r.dist_name());
    if (r.url.starts_with("file://")) {
      auto path = path_from_file_url(r.url);
      const fs::path p = path ? fs::weakly_canonical(fs::path(*path), ec) : fs::path();
      const auto rel = p.lexically_relative(folder);
      if (!path || p.empty() || rel.empty() || *rel.begin() == "..") {
        // Named by its channel (one warning per local folder), else by the file's folder.
        std::string channel = r.channel;
        while (channel.ends_with('/')) channel.pop_back();
        if (!channel.starts_with("file://") || !r.url.starts_with(channel + "/")) channel = r.url.substr(0, r.url.rfind('/'));
        outside[redact_url(channel)].push_back(r.dist_name());
      }
    }
  }
  for (auto& [channel, names] : outside) {
    std::sort(names.begin(), names.end());
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    warnings.push_back(std::to_string(names.size()) + " package(s) come from " + channel +
                       ", a local folder outside the lockfile's folder " + folder.string() +
                       " (check that it is the one meant): " + list);
  }
  if (!unverified.empty()) {
    std::sort(unverified.begin(), unverified.end());
    std::string names;
    for (const auto& n : unverified) names += (names.empty() ? "" : ", ") + n;
    if (!allow_unverified) {
      return Error{ErrorKind::Integrity, unverified.front(),
                   "has neither a sha256 nor an md5 in the lockfile, so its archive cannot be verified",
                   "records without a hash: " + names + "\nnothing was downloaded; the prefix was not touched",
                   "lock again (envlock records sha256 and md5), or pass --allow-unverified to install them unchecked"};
    }
    warnings.push_back("--allow-unverified: installing " + std::to_string(unverified.size()) +
                       " package(s) whose archives cannot be verified (no sha256 or md5): " + names);
  }
  return ok_status();
}

int run_install(const Context& ctx, const Lockfile& lockfile, const InstallRequest& request) {
  const std::string source = request.lockfile_path.filename().string();
  auto env_name = pick_environment(lockfile, request.environment, request.lockfile_path.string());
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

  // The prefix, the records and the host are checked first, before anything is downloaded.
  if (auto st = check_install_prefix(request.prefix, request.foreign); !st) return report_error(ctx, st.error());
  const auto order = install_order(*locked);
  std::vector<RepoDataRecord> records;
  for (const auto* p : order) records.push_back(*p);
  std::vector<std::string> early_warnings;
  if (auto st = check_records(records, request.lockfile_path, request.allow_unverified, early_warnings); !st)
    return report_error(ctx, st.error());
  for (auto& w : outside_wheel_warnings(plan_pip(locked->pip).wheels, request.lockfile_path)) early_warnings.push_back(std::move(w));
  const Host probe = Host::system();
  auto host = detect_virtual_packages(probe);
  if (!host) return report_error(ctx, host.error());
  const auto mismatches = check_host(records, locked->virtual_packages, *host);
  if (!mismatches.empty()) {
    if (!request.ignore_host) return report_error(ctx, host_mismatch_error(mismatches));
    for (const auto& m : mismatches) early_warnings.push_back("--ignore-host: installing although " + m.to_string());
  } else if (needs_cuda(records, locked->virtual_packages) && probe.cuda_visibility) {
    // Visibility is not presence: devices hidden from this process warn, never refuse.
    if (auto w = cuda_visibility_warning(records, locked->virtual_packages, probe.cuda_visibility()))
      early_warnings.push_back(*w);
  }
  if (request.dry_run == DryRun::Yes) {
    auto plan = plan_transaction(request.prefix, records);
    early_warnings.insert(early_warnings.end(), plan.warnings.begin(), plan.warnings.end());
    // What the install would warn about (or refuse) among the files no package owns, by the same
    // code (preview_install), from the package cache as it is: nothing is downloaded.
    auto preview = preview_install(request.prefix, cached_packages(env, records));
    if (!preview) return report_error(ctx, preview.error());
    early_warnings.insert(early_warnings.end(), preview->warnings.begin(), preview->warnings.end());
    if (!preview->unchecked.empty()) {
      std::string names;
      for (const auto& n : preview->unchecked) names += (names.empty() ? "" : ", ") + n;
      early_warnings.push_back(std::to_string(preview->unchecked.size()) +
                               " package(s) to link are not in the package cache, so the files of the environment "
                               "were not compared with the paths of the new packages (the install downloads them "
                               "first): " + names);
    }
    if (!preview->undecided.empty()) {
      // The install fetches every package first and then decides; the dry run says it cannot.
      std::string names;
      for (const auto& n : preview->undecided) names += (names.empty() ? "" : ", ") + n;
      early_warnings.push_back("whether the install keeps " + std::to_string(preview->undecided.size()) +
                               " package(s) as they are or links them again, to put back a file that a package which "
                               "goes took from them (a clobber), depends on packages that are not in the package "
                               "cache (the install downloads them first and decides): " + names);
    }
    return print_dry_run(ctx, plan, *preview, std::filesystem::absolute(request.prefix).lexically_normal().string(),
                         *env_name, platform, early_warnings);
  }
  for (const auto& w : early_warnings) warn(w);

  // Package cache: download and extract what is missing.
  auto cache = PackageCache::open_default();
  if (!cache) return report_error(ctx, cache.error());
  CacheOptions cache_options;
  cache_options.validation = request.cache_validation;
  cache_options.fetch.url_prefixes = request.channel_urls;
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
  if (!progress && !ctx.json) {
    // Not a terminal (CI logs): one plain line every 10 s at most, so a stalled job shows where
    // it waits; nothing when the downloads finish sooner.
    auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    cache_options.fetch.on_progress = [last](const FetchProgress& p) {
      const auto now = std::chrono::steady_clock::now();
      if (now - *last < std::chrono::seconds(10) || p.files_done == p.files_total) return;
      *last = now;
      std::fprintf(stderr, "fetch %zu/%zu packages  %s / %s  %s/s  (waiting on %s)\n", p.files_done, p.files_total,
                   human_bytes(static_cast<double>(p.bytes_done)).c_str(),
                   human_bytes(static_cast<double>(p.bytes_total)).c_str(), human_bytes(p.bytes_per_second).c_str(),
                   redact_text(p.current).c_str());
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
      if (e.kind == ErrorKind::Usage) {
        // A URL the lockfile holds that cannot be fetched (unparseable, an unknown scheme) is bad
        // input data, not a usage error: exit 1, at the lockfile's line and column (as pixi and
        // conda-lock report a bad lockfile entry), never exit 2.
        e.kind = ErrorKind::Parse;
        std::ifstream in(request.lockfile_path);
        std::string line;
        for (int n = 1; std::getline(in, line); ++n) {
          const auto at = line.find(records[i].url);
          if (at == std::string::npos || line.find("url") == std::string::npos) continue;
          e.where = request.lockfile_path.string() + ":" + std::to_string(n) + ":" + std::to_string(at + 1);
          e.message = "url of " + records[i].name + " '" + redact_url(records[i].url) + "': " + e.message;
          break;
        }
      }
      e.detail += std::string(e.detail.empty() ? "" : "\n") + "package: " + records[i].dist_name() +
                  " from " + redact_url(records[i].url) +
                  "\nnothing was installed; the prefix was not touched";
      return report_error(ctx, e);
    }
    if (entries[i]->origin == CacheOrigin::Downloaded) ++downloaded;
    if (entries[i]->origin != CacheOrigin::Downloaded) ++hits;  // an entry, or its cached archive extracted
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

  // The locked wheels come into the wheel cache before the prefix is touched (docs/pypi.md).
  const PipPlan pip_plan = plan_pip(locked->pip);
  WheelTarget wheel_target{platform, "", ""};
  for (const auto& r : records)
    if (r.name == "python") {
      const std::string& v = r.version.to_string();
      wheel_target.python_xy = v.substr(0, v.find('.', v.find('.') + 1));
    }
  for (const auto& v : *host)
    if (v.name == "__glibc") wheel_target.glibc = v.version;
  auto wheels = fetch_locked_wheels(pip_plan.wheels, request.lockfile_path, wheel_target);
  if (!wheels) return report_error(ctx, wheels.error());

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
  options.origin.manifest = request.manifest;
  options.foreign = request.foreign;
  options.on_lock_wait = say_lock_wait;
  // The locked wheels go into the installer's stage after the conda packages (their python),
  // before its one swap (InstallOptions::finish_stage, as `snapshot deploy` adds its pip files): a
  // pip step that fails leaves the prefix as it was, so its conda-meta/envlock never names a
  // lockfile whose pip packages are not there and `run` installs again (attack 23 F11), as pixi
  // installs again a prefix that does not match the lock.
  std::optional<PipInstallReport> pip_report;
  options.finish_stage = [&](const std::filesystem::path& stage) -> Status {
    auto done = install_fetched_wheels(stage, *wheels, locked->pip, request.prefix);
    if (!done) {
      Error e = done.error();
      // The stage is deleted: a path in it is named as the path it was to have.
      const std::string staged = stage.string(), shown = std::filesystem::path(request.prefix).string();
      for (std::string* text : {&e.where, &e.message, &e.detail})
        for (std::size_t at; (at = text->find(staged)) != std::string::npos;) text->replace(at, staged.size(), shown);
      return e;
    }
    pip_report = std::move(*done);
    return ok_status();
  };
  if (progress) {
    options.progress = [](std::size_t i, std::size_t n, const RepoDataRecord& r) {
      std::fprintf(stderr, "\r\033[Klink %zu/%zu %s", i + 1, n, r.dist_name().c_str());
      std::fflush(stderr);
    };
  }
  // Every install through the CLI keeps the tree it replaces as a generation, with the lockfile
  // (envlock/generations.hpp; `envlock history`, `rollback`, `gc`).
  options.keep_generations = KeepGenerations::Yes;
  // The pip step changes the environment too: a wheel upgrade alone keeps the tree it replaces,
  // which rollback makes current again (attack 23 F6).
  options.stage_differs = pip_step_changes(request.prefix, *wheels, locked->pip);
  if (std::ifstream in(request.lockfile_path, std::ios::binary); in)
    options.lockfile_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  auto report = install_packages(request.prefix, packages, options);
  if (progress) std::fprintf(stderr, "\r\033[K");
  if (!report) {
    const int code = report_error(ctx, report.error());
    const int sig = install_interrupted_by();
    return sig != 0 ? 128 + sig : code;  // the shell's convention for "stopped by a signal"
  }

  const std::string prefix = std::filesystem::absolute(request.prefix).lexically_normal().string();
  for (std::size_t i = 0; i < report->clobbered.size(); ++i)
    warn(report->clobbered[i] + " is installed by more than one package: " + report->clobbered_owners[i] +
         " (the later in the lockfile's order wins; only its record lists the path)");
  if (!pip_report) pip_report.emplace();  // finish_stage runs on every install that succeeds
  report->warnings.insert(report->warnings.end(), pip_report->warnings.begin(), pip_report->warnings.end());
  // The other pip entries (unresolved requirements, VCS and editable sources, pins without a
  // wheel URL, e.g. from `envlock snapshot lock`) are named, never dropped silently.
  if (!pip_plan.others.empty()) {
    std::string names;
    for (const auto& p : pip_plan.others) {
      // A VCS, editable or URL install is named by its requirement ("mypkg @ git+https://...@<commit>"),
      // never as a name==version pin that pip would resolve from an index.
      names += (names.empty() ? "" : ", ") +
               (!p.requirement.empty() ? p.requirement : p.name + (p.version.empty() ? "" : "==" + p.version));
    }
    report->warnings.push_back(std::to_string(pip_plan.others.size()) + " pip package(s) in the lockfile were not installed "
                               "(envlock install installs the conda packages and the locked wheels: a url to a .whl with its sha256): " + names +
                               "; to restore a captured host's pip installs use `envlock snapshot deploy`, "
                               "or run pip in the environment");
  }
  for (const auto& w : report->warnings) warn(w);
  report->warnings.insert(report->warnings.begin(), early_warnings.begin(), early_warnings.end());
  if (ctx.json) {
    nlohmann::json j;
    j["prefix"] = prefix;
    j["environment"] = *env_name;
    j["platform"] = platform;
    j["lockfile_hash"] = options.origin.lockfile_hash;
    j["installed"] = report->installed;
    j["removed"] = report->removed;
    j["kept"] = report->kept;
    j["rewritten"] = report->rewritten;
    j["files"] = {{"linked", report->files_linked},
                  {"copied", report->files_copied},
                  {"relocated", report->files_relocated}};
    j["messages"] = report->messages;
    j["warnings"] = report->warnings;
    j["clobbered"] = report->clobbered;
    if (!wheels->empty() || !pip_report->removed.empty()) {
      j["pip"] = {{"installed", pip_report->installed}, {"kept", pip_report->kept}, {"replaced", pip_report->replaced},
                  {"removed", pip_report->removed}};
    }
    j["host_mismatches_ignored"] = nlohmann::json::array();
    for (const auto& m : mismatches) j["host_mismatches_ignored"].push_back(m.to_string());
    std::cout << json_text(j) << "\n";
  } else {
    for (const auto& m : report->messages) std::cout << terminal_text(m) << (m.ends_with('\n') ? "" : "\n");
    std::cout << terminal_text("environment '" + *env_name + "' (" + platform + ") is ready in " + prefix) << "\n"
              << "  " << report->installed.size() << " installed, "
              << (report->rewritten.empty()
                      ? std::string()
                      : std::to_string(report->rewritten.size()) +
                            (report->rewritten.size() == 1 ? " record" : " records") + " rewritten, ")
              << report->kept.size() - report->rewritten.size() << " unchanged, " << report->removed.size()
              << " removed; files: " << report->files_linked << " linked, "
              << report->files_copied << " copied, " << report->files_relocated << " relocated\n";
    if (!wheels->empty() || !pip_report->removed.empty()) {
      std::cout << "  pip: " << pip_report->installed.size() << " installed, " << pip_report->kept.size() << " unchanged"
                << (pip_report->replaced.empty() ? "" : ", " + std::to_string(pip_report->replaced.size()) + " replaced")
                << (pip_report->removed.empty() ? "" : ", " + std::to_string(pip_report->removed.size()) + " removed") << "\n";
    }
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
  std::vector<std::string> channel_urls;
  bool allow_unverified = false;
  bool force = false;
  bool dry_run = false;
  bool base_only = false;
};

/// `--base-only` (issue 18 point 4): the environment's records of its base layers only — the pins
/// of a base lockfile (layer `base:…`), or those of a same-file `base:` (every layer but the
/// environment's own) — so that the base can be installed, and shared, on its own.
Status keep_base_only(Lockfile& lockfile, const std::string& environment, const std::string& path) {
  auto env_name = pick_environment(lockfile, environment, path);
  if (!env_name) return env_name.error();
  LockedEnvironment& env = lockfile.environments.at(*env_name);
  if (!env.base_lockfile && env.base.empty())
    return Error{ErrorKind::Usage, path, "environment '" + *env_name + "' has no base layer, so --base-only has nothing to install",
                 "", "drop --base-only, or name an environment built on a base (`base:` in its manifest)"};
  for (auto& [platform, lp] : env.platforms) {
    const bool had_packages = !lp.packages.empty();
    std::erase_if(lp.packages, [&](const LockedPackage& p) {
      return env.base_lockfile ? !p.layer.starts_with("base:") : p.layer == env.name;
    });
    lp.pip.clear();
    // No record of the base layer left (a hand-edited `layer`, attack on issue 18, finding 3):
    // an install that installs nothing would report success for a base it never installed.
    if (had_packages && lp.packages.empty())
      return Error{ErrorKind::Parse, path,
                   "environment '" + *env_name + "' has no package of its base layer for " + platform +
                       " (no `layer: " + (env.base_lockfile ? std::string("base:…") : env.base) +
                       "`), so --base-only would install nothing",
                   "", "a base pin's layer is `base:` and its layer in the base lockfile (docs/lockfile.md): "
                       "`envlock lock --check` names what was edited, and `envlock lock` writes it again"};
  }
  return ok_status();
}

void setup(CLI::App& sub, Context& ctx) {
  auto args = std::make_shared<InstallArgs>();
  sub.add_option("-l,--lockfile", args->lockfile, "the lockfile (envlock.lock)")->required();
  sub.add_option("-e,--environment", args->environment, "environment in the lockfile (default: the only one, or 'default')");
  sub.add_option("-p,--prefix", args->prefix, "the environment folder to create or update")->required();
  sub.add_flag("--copy", args->copy, "copy files instead of hard-linking them from the package cache");
  sub.add_flag("--ignore-host", args->ignore_host, "install even when this host does not meet the lockfile's requirements");
  sub.add_flag("--no-scripts", args->no_scripts, "do not run packages' pre-link, post-link and pre-unlink scripts");
  sub.add_flag("--extra-safety-checks,--verify-cache", args->verify_cache,
               "check the sha256 of every cached package file before linking it (mamba's name; default: sizes only)");
  sub.add_option("--channel-url", args->channel_urls,
                 "CHANNEL=URL: download CHANNEL's packages from URL, a mirror of it (repeatable; CHANNEL is a "
                 "channel URL of the lockfile or its name, e.g. conda-forge)");
  add_install_safety_flags(sub, args->allow_unverified, args->force, args->dry_run);
  sub.add_flag("--base-only", args->base_only,
               "install only the environment's base layer (the pins of its base lockfile, or of its `base:`)");
  add_network_options(sub);
  sub.callback([&ctx, args] {
    // The prefix first: a bad -p is a usage error whatever the lockfile holds.
    if (auto st = check_install_prefix(args->prefix, args->force ? ForeignPrefix::Allow : ForeignPrefix::Refuse); !st) {
      ctx.exit_code = report_error(ctx, st.error());
      return;
    }
    auto lockfile = read_envlock_lockfile(args->lockfile, "install");
    if (!lockfile) {
      ctx.exit_code = report_error(ctx, lockfile.error());
      return;
    }
    if (args->base_only)
      if (auto st = keep_base_only(*lockfile, args->environment, args->lockfile); !st) {
        ctx.exit_code = report_error(ctx, st.error());
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
    auto mirrors = parse_channel_urls(*lockfile, args->channel_urls);
    if (!mirrors) {
      ctx.exit_code = report_error(ctx, mirrors.error());
      return;
    }
    request.channel_urls = std::move(*mirrors);
    request.allow_unverified = args->allow_unverified;
    request.foreign = args->force ? ForeignPrefix::Allow : ForeignPrefix::Refuse;
    request.dry_run = args->dry_run ? DryRun::Yes : DryRun::No;
    ctx.exit_code = run_install(ctx, *lockfile, request);
  });
}

const RegisterCommand reg{"install", "install exactly what a lockfile pins for this platform into a prefix (never solves)",
                          &setup};

}  // namespace

void add_install_safety_flags(CLI::App& sub, bool& allow_unverified, bool& force, bool& dry_run) {
  sub.add_flag("--allow-unverified", allow_unverified,
               "install records that have neither a sha256 nor an md5 (their archives cannot be verified)");
  sub.add_flag("--force", force, "install into a conda environment that envlock did not make");
  sub.add_flag("--dry-run", dry_run, "print what would be added, removed, changed and kept; change nothing");
}

}  // namespace envlock::cli
