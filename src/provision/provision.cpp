// provision.cpp — the one install pipeline (envlock/provision.hpp): what `envlock install` ran in
// the CLI (src/cli/install.cpp's run_install) before issue 19 step 2, printing nothing.
#include "envlock/provision.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <set>

#include "envlock/hash.hpp"
#include "envlock/host.hpp"
#include "envlock/match_spec.hpp"
#include "envlock/platform.hpp"
#include "envlock/reference.hpp"
#include "envlock/url.hpp"
#include "envlock/virtual_packages.hpp"

namespace envlock {

namespace {

namespace fs = std::filesystem;

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

/// The default ArchiveSource: the records' channels (or their mirrors), into the default cache.
Result<std::vector<Result<CacheEntry>>> from_channels(const std::vector<RepoDataRecord>& records, const CacheOptions& options) {
  auto cache = PackageCache::open_default();
  if (!cache) return cache.error();
  return cache->ensure_all(records, options);
}

}  // namespace

Status check_records(const std::vector<RepoDataRecord>& records, const fs::path& lockfile_path, bool allow_unverified,
                     std::vector<std::string>& warnings) {
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

Result<LockedInstallReport> install_locked_environment(const Lockfile& lockfile, const LockedInstallRequest& request,
                                                       const LockedInstallHooks& hooks) {
  const std::string source = request.lockfile_path.filename().string();
  auto env_name = pick_environment(lockfile, request.environment, request.lockfile_path.string());
  if (!env_name) return env_name.error();
  const LockedEnvironment& env = lockfile.environments.at(*env_name);
  const std::string platform = Platform::host().to_string();
  const LockedPlatform* locked = lockfile.find(*env_name, platform);
  if (locked == nullptr) {
    std::string have;
    for (const auto& [p, lp] : env.platforms) have += (have.empty() ? "" : ", ") + p;
    return Error{ErrorKind::Incompatible, request.lockfile_path.string(),
                 "environment '" + *env_name + "' is not locked for this host's platform " + platform,
                 "locked platforms: " + (have.empty() ? std::string("(none)") : have),
                 "add " + platform + " to `platforms` in the manifest and run `envlock lock`"};
  }
  LockedInstallReport out;
  out.environment = *env_name;
  out.platform = platform;
  out.prefix = fs::absolute(request.prefix).lexically_normal().string();

  // The prefix, the records and the host are checked first, before anything is downloaded.
  if (auto st = check_install_prefix(request.prefix, request.foreign); !st) return st.error();
  const auto order = install_order(*locked);
  std::vector<RepoDataRecord> records;
  for (const auto* p : order) records.push_back(*p);
  std::vector<std::string>& early_warnings = out.early_warnings;
  if (auto st = check_records(records, request.lockfile_path, request.allow_unverified, early_warnings); !st) return st.error();
  for (auto& w : outside_wheel_warnings(plan_pip(locked->pip).wheels, request.lockfile_path)) early_warnings.push_back(std::move(w));
  const Host probe = Host::system();
  auto host = detect_virtual_packages(probe);
  if (!host) return host.error();
  out.host_mismatches = check_host(records, locked->virtual_packages, *host);
  const auto& mismatches = out.host_mismatches;
  if (!mismatches.empty()) {
    if (!request.ignore_host) return host_mismatch_error(mismatches);
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
    if (!preview) return preview.error();
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
    out.dry_run = LockedInstallPreview{std::move(plan), std::move(*preview)};
    return out;
  }
  if (hooks.checked) hooks.checked(early_warnings);
  auto stopped = [&](const char* before) -> std::optional<Error> {
    if (!hooks.stop || !hooks.stop()) return std::nullopt;
    return Error{ErrorKind::Io, out.prefix, std::string("stopped before ") + before,
                 "nothing was installed; the prefix was not touched", ""};
  };
  if (auto e = stopped("the package downloads")) return *e;

  // Package cache: download and extract what is missing.
  CacheOptions cache_options;
  cache_options.validation = request.cache_validation;
  cache_options.fetch.url_prefixes = request.channel_urls;
  cache_options.fetch.on_progress = hooks.fetch_progress;
  auto fetched = (hooks.archives ? hooks.archives : ArchiveSource(from_channels))(records, cache_options);
  if (!fetched) return fetched.error();
  auto& entries = *fetched;
  if (hooks.fetched) hooks.fetched();
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
      return e;
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
  out.packages = records.size();
  out.downloaded = downloaded;
  out.cached = hits;
  if (hooks.packages_ready) hooks.packages_ready(records.size(), downloaded, hits);

  if (auto e = stopped("the locked wheels were fetched")) return *e;

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
  if (!wheels) return wheels.error();

  auto digest = hash_file(request.lockfile_path, HashAlgorithm::Sha256);
  if (!digest) return digest.error();
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
  options.on_lock_wait = hooks.lock_wait;
  out.lockfile_hash = options.origin.lockfile_hash;
  // The locked wheels go into the installer's stage after the conda packages (their python),
  // before its one swap (InstallOptions::finish_stage, as `snapshot deploy` adds its pip files): a
  // pip step that fails leaves the prefix as it was, so its conda-meta/envlock never names a
  // lockfile whose pip packages are not there and `run` installs again (attack 23 F11), as pixi
  // installs again a prefix that does not match the lock.
  std::optional<PipInstallReport> pip_report;
  options.finish_stage = [&](const fs::path& stage) -> Status {
    auto done = install_fetched_wheels(stage, *wheels, locked->pip, request.prefix);
    if (!done) {
      Error e = done.error();
      // The stage is deleted: a path in it is named as the path it was to have.
      const std::string staged = stage.string(), shown = fs::path(request.prefix).string();
      for (std::string* text : {&e.where, &e.message, &e.detail})
        for (std::size_t at; (at = text->find(staged)) != std::string::npos;) text->replace(at, staged.size(), shown);
      return e;
    }
    pip_report = std::move(*done);
    return ok_status();
  };
  options.progress = hooks.link_progress;
  // Every install through the CLI keeps the tree it replaces as a generation, with the lockfile
  // (envlock/generations.hpp; `envlock history`, `rollback`, `gc`).
  options.keep_generations = KeepGenerations::Yes;
  // The pip step changes the environment too: a wheel upgrade alone keeps the tree it replaces,
  // which rollback makes current again (attack 23 F6).
  options.stage_differs = pip_step_changes(request.prefix, *wheels, locked->pip);
  if (std::ifstream in(request.lockfile_path, std::ios::binary); in)
    options.lockfile_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (auto e = stopped("the link")) return *e;
  auto report = install_packages(request.prefix, packages, options);
  if (hooks.linked) hooks.linked();
  if (!report) return report.error();

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
  out.pip_step = !wheels->empty() || !pip_report->removed.empty();
  out.install = std::move(*report);
  out.pip = std::move(*pip_report);
  return out;
}

}  // namespace envlock
