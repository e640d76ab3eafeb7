// Redeploy a captured environment: compatibility check, pip files staged and hash-checked, conda
// records through the package cache and the installer of `envlock install`, pip files moved in.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "text_util.hpp"
#include "envlock/generations.hpp"
#include "envlock/hash.hpp"
#include "envlock/install.hpp"
#include "envlock/match_spec.hpp"
#include "envlock/package_cache.hpp"
#include "envlock/record_path.hpp"
#include "envlock/snapshot.hpp"
#include "envlock/snapshot_deploy.hpp"
#include "envlock/url.hpp"
#include "envlock/work_folder.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {


std::optional<std::string> sha256_of(const fs::path& p) {
  auto d = hash_file(p, HashAlgorithm::Sha256);
  if (!d) return std::nullopt;
  return *d;
}

const char* pip_source_label(PipSource s) {
  switch (s) {
    case PipSource::Editable: return "editable";
    case PipSource::Directory: return "local folder";
    case PipSource::Archive: return "local archive";
    case PipSource::Vcs: return "VCS";
    case PipSource::Index: break;
  }
  return "index";
}

// Copies every pip-installed file of `env` from `source` into `stage`, checking RECORD hashes.
Result<std::vector<std::string>> stage_pip_files(const CapturedEnvironment& env, const fs::path& source, const fs::path& stage) {
  std::vector<std::string> restored;
  for (const auto& d : env.pip) {
    const std::string site = d.dist_info.substr(0, d.dist_info.rfind('/'));
    for (const auto& e : d.files) {
      const auto rel = record_path_in_prefix(site, e.path, env.prefix);
      if (!rel || rel->ends_with(".pyc") || rel->find("__pycache__/") != std::string::npos) continue;
      const fs::path from = source / *rel;
      std::error_code ec;
      if (!fs::exists(fs::symlink_status(from, ec))) {
        return Error{ErrorKind::Io, from.string(), "pip:" + d.name + " " + d.version + ": the installed file is gone", "",
                     "deploy on the captured host (or mount its prefix and pass --pip-source), or use --without-pip"};
      }
      if (!e.sha256.empty()) {
        const auto actual = sha256_of(from);
        if (!actual || *actual != e.sha256) {
          // The snapshot holds the RECORD hash as captured: either the capture already found the
          // file modified (drift), or it changed afterwards.
          const bool drifted = std::any_of(env.drift.modified.begin(), env.drift.modified.end(),
                                           [&](const ModifiedFile& m) { return m.path == *rel; });
          return Error{ErrorKind::Integrity, from.string(),
                       "pip:" + d.name + " " + d.version + ": sha256 " + (actual ? *actual : "(unreadable)") +
                           " does not match the RECORD hash the snapshot records (" + e.sha256 + ")",
                       "",
                       drifted ? "the file was already modified when the snapshot was captured (its drift section lists it); "
                                 "reinstall the distribution on the source (or restore the file) and capture again"
                               : "the file changed since the snapshot was captured; capture the prefix again (or deploy "
                                 "from a bundle made with the snapshot)"};
        }
      }
      const fs::path to = stage / *rel;
      fs::create_directories(to.parent_path(), ec);
      if (!ec) fs::copy(from, to, fs::copy_options::overwrite_existing | fs::copy_options::copy_symlinks, ec);
      if (ec) return Error{ErrorKind::Io, to.string(), "cannot stage a pip file: " + ec.message(), "", ""};
    }
    restored.push_back(d.name + " " + d.version);
  }
  std::sort(restored.begin(), restored.end());
  return restored;
}

// Moves the staged tree into `prefix` (same filesystem: renames).
Status move_tree(const fs::path& stage, const fs::path& prefix) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::recursive_directory_iterator it(stage, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec) || it->is_symlink(ec)) files.push_back(it->path());
  }
  if (ec) return Error{ErrorKind::Io, stage.string(), "cannot read the staged pip files: " + ec.message(), "", ""};
  for (const auto& f : files) {
    const fs::path to = prefix / f.lexically_relative(stage);
    fs::create_directories(to.parent_path(), ec);
    if (!ec) fs::rename(f, to, ec);
    if (ec) return Error{ErrorKind::Io, to.string(), "cannot move a pip file into the prefix: " + ec.message(), "", ""};
  }
  return ok_status();
}

// The files of records pip shadowed that were gone from the captured prefix (pip removed them
// when it uninstalled the conda package's distribution; capture lists them as missing), removed
// from the new prefix so it holds what the captured one held. Emptied folders go too, as pip's
// uninstall removes them. Returns how many files were removed.
Result<std::size_t> remove_uninstalled_by_pip(const CapturedEnvironment& env, const fs::path& prefix) {
  std::size_t removed = 0;
  for (const auto& p : env.packages) {
    if (p.shadowed_by.empty()) continue;
    const auto missing = env.drift.missing.find(p.record.name);
    if (missing == env.drift.missing.end()) continue;
    for (const auto& path : missing->second) {
      const auto rel = normalize_relative(path);
      if (!rel || rel->empty() || *rel == "conda-meta" || rel->starts_with("conda-meta/")) continue;
      std::error_code ec;
      const fs::path file = prefix / *rel;
      if (fs::is_directory(fs::symlink_status(file, ec))) continue;  // a folder another file still needs
      if (!fs::remove(file, ec) && ec) {
        return Error{ErrorKind::Io, file.string(), "cannot remove a file of " + p.record.dist_name() + " that " + p.shadowed_by +
                                                       "'s install had removed: " + ec.message(), "", ""};
      }
      if (!ec) ++removed;
      for (fs::path dir = file.parent_path(); dir != prefix && dir.has_relative_path() && fs::is_empty(dir, ec) && !ec;
           dir = dir.parent_path()) {
        if (!fs::remove(dir, ec)) break;
      }
    }
  }
  return removed;
}

// Every regular file of an extracted re-packed archive against the sha256 its paths.json carries
// (the conda-meta hash of the file as it was installed on the capture host).
Status check_repacked(const RepoDataRecord& record, const fs::path& extracted) {
  std::error_code ec;
  const auto text = snapshot_detail::read_text(extracted / "info/paths.json");
  nlohmann::json j = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (!j.is_object() || !j.contains("paths") || !j["paths"].is_array()) {
    return Error{ErrorKind::Integrity, record.dist_name(), "the re-packed archive in the bundle has no readable info/paths.json", "", ""};
  }
  for (const auto& p : j["paths"]) {
    if (!p.is_object() || p.value("path_type", "") != "hardlink" || !p.contains("sha256")) continue;
    const auto rel = normalize_relative(p.value("_path", ""));
    if (!rel) return Error{ErrorKind::Integrity, record.dist_name(), "the re-packed archive lists an unsafe path", "", ""};
    const auto actual = sha256_of(extracted / *rel);
    const std::string expected = p["sha256"].is_string() ? p["sha256"].get<std::string>() : "";
    if (!actual || *actual != expected) {
      return Error{ErrorKind::Integrity, record.dist_name(),
                   "the re-packed archive's " + *rel + " does not match its conda-meta sha256 (" + expected + ")", "",
                   "the bundle was altered or damaged; make it again on the source host"};
    }
  }
  return ok_status();
}

// An error about a member of an unpacked bundle, as the user must read it: the bundle file and the
// member ("host.tar.zst: pkgs/python-3.11.9-h0_0.conda"), never the temporary folder it was
// unpacked into, and a cause that is the bundle's (damaged or altered), not a server's.
Error bundle_member_error(Error e, const DeployOptions& options) {
  const std::string dir = options.bundle_dir.string(), normal = options.bundle_dir.lexically_normal().string();
  const std::string name = options.bundle_name.empty() ? dir : options.bundle_name;
  auto rename = [&](std::string& text) {
    if (dir.empty()) return;
    // The archives were fetched from file_url_from_path() URLs (a space is %20 there).
    for (const std::string& from : {file_url_from_path(fs::absolute(dir).string()) + "/",
                                     file_url_from_path(fs::absolute(normal).string()) + "/", dir + "/", normal + "/"}) {
      for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
        text.replace(at, from.size(), name + ": ");
        at += name.size() + 2;
      }
    }
  };
  rename(e.where);
  rename(e.message);
  rename(e.detail);
  // fetch's words for a download ("the server sent more than ..."): here the bundle is the source.
  for (std::size_t at = e.message.find("the server sent"); at != std::string::npos; at = e.message.find("the server sent", at)) {
    e.message.replace(at, 15, "the bundle holds");
  }
  if (e.kind == ErrorKind::Integrity || e.kind == ErrorKind::Network) {
    e.kind = ErrorKind::Integrity;
    e.message = "the bundle is damaged or was altered: " + e.message;
    e.hint = "copy the bundle again from where it was made, or make a new one on the source host with "
             "`envlock snapshot capture --bundle FILE.tar.zst`";
  }
  return e;
}

}  // namespace

std::vector<std::string> unmet_dependencies(const CapturedEnvironment& env) {
  std::vector<std::string> unmet;
  std::set<std::string> pip_projects;
  for (const auto& d : env.pip) pip_projects.insert(d.normalized_name());
  for (const auto& p : env.packages) {
    for (const auto& dep : p.record.depends) {
      const auto spec = MatchSpec::parse(dep);
      if (!spec) {
        unmet.push_back(p.record.dist_name() + " needs " + dep + " (not a MatchSpec: " + spec.error().message + ")");
        continue;
      }
      const std::string name = spec->exact_name();
      if (name.starts_with("__")) continue;
      const bool met = std::any_of(env.packages.begin(), env.packages.end(),
                                   [&](const CapturedPackage& q) { return spec->matches(static_cast<const PackageRecord&>(q.record)); }) ||
                       pip_projects.count(name) != 0;
      if (!met) unmet.push_back(p.record.dist_name() + " needs " + dep);
    }
  }
  std::sort(unmet.begin(), unmet.end());
  return unmet;
}

std::vector<std::string> host_checklist(const HostFacts& captured, const HostFacts& target_facts) {
  std::vector<std::string> out;
  // The target as `envlock install` sees it (CONDA_OVERRIDE_*); an invalid override value is
  // refused by check_compatibility(), here the detected facts stand.
  const auto seen = as_install_sees(target_facts);
  const HostFacts& target = seen ? *seen : target_facts;
  const std::string had_driver = captured.nvidia ? captured.nvidia->driver_version : "";
  const std::string has_driver = target.nvidia ? target.nvidia->driver_version : "";
  if (had_driver != has_driver) {
    out.push_back("driver: NVIDIA " + (had_driver.empty() ? std::string("none") : had_driver) + " on the capture host; this host has " +
                  (has_driver.empty() ? std::string("none") : has_driver));
  }
  if (captured.glibc != target.glibc) out.push_back("glibc: " + captured.glibc + " on the capture host; this host has " + target.glibc);
  // A lower x86-64 level: code built for the capture host's CPU (-march, a package's own
  // dispatch, pip wheels) may stop with "illegal instruction" although no record says so.
  const int had_level = snapshot_detail::x86_level_number(captured.cpu_level);
  const int has_level = snapshot_detail::x86_level_number(target.cpu_level);
  if (had_level > 0 && has_level < had_level) {
    out.push_back("cpu: " + captured.cpu_level + " on the capture host; this host has " +
                  (target.cpu_level.empty() ? std::string("an unknown level") : target.cpu_level) +
                  " (programs built for the newer level may stop with an illegal instruction)");
  }
  if (captured.os.id != target.os.id || captured.os.version_id != target.os.version_id) {
    out.push_back("os: " + captured.os.id + " " + captured.os.version_id + " on the capture host; this host has " + target.os.id + " " +
                  target.os.version_id);
  }
  if (!captured.system_package_manager.empty() && captured.system_package_manager == target.system_package_manager) {
    std::map<std::string, std::string> have;
    for (const auto& p : target.system_packages) {
      if (p.status.empty() || p.status.ends_with("installed")) have[p.name + ":" + p.architecture] = p.version;
    }
    for (const auto& p : captured.system_packages) {
      if (!p.status.empty() && !p.status.ends_with("installed")) continue;
      const auto it = have.find(p.name + ":" + p.architecture);
      if (it == have.end()) {
        out.push_back("system package: " + p.name + " " + p.version + " (" + p.architecture + ") is not installed here");
      } else if (it->second != p.version) {
        out.push_back("system package: " + p.name + " " + p.version + " (" + p.architecture + ") is " + it->second + " here");
      }
    }
  }
  return out;
}

Result<DeployReport> deploy_snapshot(const Snapshot& snapshot, const fs::path& prefix, const HostFacts& target,
                                     const DeployOptions& options) {
  // Which environment.
  const CapturedEnvironment* env = nullptr;
  if (options.environment.empty()) {
    if (snapshot.environments.size() != 1) {
      std::string names;
      for (const auto& e : snapshot.environments) names += (names.empty() ? "" : ", ") + e.name;
      return Error{ErrorKind::Usage, "", "the snapshot holds " + std::to_string(snapshot.environments.size()) + " environments (" +
                                             names + "); name one", "", "pass --env NAME"};
    }
    env = &snapshot.environments.front();
  } else {
    for (const auto& e : snapshot.environments) {
      if (e.name == options.environment) env = &e;
    }
    if (env == nullptr) {
      std::string names;
      for (const auto& e : snapshot.environments) names += (names.empty() ? "" : ", ") + e.name;
      return Error{ErrorKind::Usage, options.environment, "no such environment in the snapshot", "",
                   names.empty() ? std::string("the snapshot holds no environment; capture one with `envlock snapshot capture -p PREFIX`")
                                 : "the snapshot's environments: " + names + "; pass one of them with -e"};
    }
  }
  std::error_code ec;
  // What the named path holds is a failure (exit 1), never a usage error (docs/cli.md).
  if (fs::exists(prefix, ec) && !fs::is_directory(prefix, ec)) {
    return Error{ErrorKind::Io, prefix.string(), "the target prefix is a file, not a folder", "",
                 "deploy into a new folder: pass a path that does not exist yet with -p"};
  }
  // An environment envlock made is replaced as `envlock install` replaces it, the tree it held
  // kept as a generation (`envlock rollback` undoes the deploy); anything else that is there is
  // not the deploy's to replace.
  if (fs::exists(prefix, ec) && !fs::is_empty(prefix, ec)) {
    if (!fs::is_directory(fs::symlink_status(prefix / "conda-meta", ec)))
      return Error{ErrorKind::Io, prefix.string(), "the target prefix exists and is not empty", "",
                   "deploy into a new prefix, or into an environment envlock made (it is kept as a generation)"};
    if (!fs::exists(fs::symlink_status(prefix / "conda-meta" / "envlock", ec)))
      return Error{ErrorKind::Io, prefix.string(),
                   "holds a conda environment that envlock did not make (conda-meta/ without conda-meta/envlock)",
                   "a deploy would replace its packages with the snapshot's, and envlock keeps no generation of it",
                   "deploy into a new prefix, or remove that environment first"};
  }
  // The install's prefix checks (not a link, not inside another environment, ...), before anything
  // is checked, fetched or written.
  if (auto st = check_install_prefix(prefix); !st) return st.error();

  // 1. Compatibility.
  const auto failed = check_compatibility(snapshot, *env, target);
  if (!failed.empty()) {
    std::string detail;
    for (const auto& f : failed) detail += (detail.empty() ? "  - " : "\n  - ") + f.to_string();
    return Error{ErrorKind::Incompatible, env->name, "this host cannot run the snapshot: " + failed.front().to_string(), detail,
                 "deploy on a host that meets every requirement listed"};
  }

  DeployReport report;
  report.environment = env->name;
  report.checklist = host_checklist(snapshot.host, target);
  // A capture that could not read a conda-meta record of this environment can lack a package
  // others need: the environment would come up broken. Otherwise an unmet dependency was the
  // capture host's own state, reproduced as it was (and listed).
  const bool records_lost = std::any_of(snapshot.problems.begin(), snapshot.problems.end(), [&](const CaptureProblem& p) {
    return p.where.starts_with((fs::path(env->prefix) / "conda-meta").string() + "/");
  });
  if (const auto unmet = unmet_dependencies(*env); !unmet.empty()) {
    if (records_lost && !options.allow_partial) {
      std::string detail;
      for (const auto& u : unmet) detail += (detail.empty() ? "  - " : "\n  - ") + u;
      return Error{ErrorKind::Incompatible, env->name,
                   "the snapshot is partial and lacks packages its environment needs: " + unmet.front() +
                       (unmet.size() > 1 ? " (and " + std::to_string(unmet.size() - 1) + " more)" : ""),
                   detail,
                   "capture again after fixing the problems the snapshot lists (`envlock snapshot check` shows them), "
                   "or pass --allow-partial to deploy it without them"};
    }
    for (const auto& u : unmet) report.checklist.push_back("dependency not met: " + u);
  }

  // A pip install from a working tree or local path needs that source here: an editable one runs
  // from it, a path one was built from it. One that is missing refuses the deploy, naming each,
  // unless skip_missing_sources leaves those distributions out (named in the checklist). Such a
  // name is never looked up on an index: an index has no build of that tree.
  CapturedEnvironment filtered;
  if (!options.without_pip) {
    std::vector<std::string> missing;
    std::set<std::string> skipped;
    for (const auto& d : env->pip) {
      const bool local = d.source == PipSource::Editable || d.source == PipSource::Directory ||
                         (d.source == PipSource::Archive && d.url.starts_with("file:"));
      if (!local) continue;
      const auto path = d.url.empty() ? Result<std::string>(Error{}) : path_from_file_url(d.url);
      if (path && fs::exists(*path, ec)) continue;
      const std::string what = "pip:" + d.name + (d.version.empty() ? "" : " " + d.version) + " (" + pip_source_label(d.source) +
                               " install of " + (path ? *path : d.url.empty() ? std::string("an unknown folder") : d.url) + ")";
      missing.push_back(what);
      skipped.insert(d.dist_info);
    }
    if (!missing.empty() && !options.skip_missing_sources) {
      std::string detail;
      for (const auto& m : missing) detail += (detail.empty() ? "  - " : "\n  - ") + m + ": the source is not on this host";
      return Error{ErrorKind::Incompatible, env->name,
                   "the source of " + std::to_string(missing.size()) + (missing.size() == 1 ? " pip install is" : " pip installs are") +
                       " missing here: " + missing.front(),
                   detail,
                   "put each source folder at its path, or pass --skip-missing-sources to deploy without those installs"};
    }
    if (!missing.empty()) {
      filtered = *env;
      std::erase_if(filtered.pip, [&](const PipDistribution& d) { return skipped.count(d.dist_info) != 0; });
      for (const auto& m : missing) report.checklist.push_back(m + ": not restored, its source is not on this host (--skip-missing-sources)");
      env = &filtered;
    }
  }

  // 2. pip files, staged beside the prefix before anything is installed.
  const fs::path parent = prefix.has_parent_path() ? prefix.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  // `.<name>.envlock-pip-<pid>`, held while this deploy runs; those a killed deploy left are
  // removed, and its unpacked bundles (`.<name>.envlock-bundle-<pid>`, src/cli) too (work_folder.hpp).
  remove_abandoned_work_folders(parent, "." + prefix.filename().string() + ".envlock-bundle-");
  auto work = WorkFolder::create(parent, "." + prefix.filename().string() + ".envlock-pip-");
  if (!work) return work.error();
  const fs::path& stage = work->path();
  if (options.without_pip) {
    for (const auto& d : env->pip) report.checklist.push_back("pip: " + d.requirement() + " was not restored (--without-pip)");
  } else if (!env->pip.empty()) {
    const fs::path source = !options.pip_source.empty() ? options.pip_source
                            : !options.bundle_dir.empty() ? options.bundle_dir / "pip" / env->name
                                                          : fs::path(env->prefix);
    auto staged = stage_pip_files(*env, source, stage);
    if (!staged) return options.bundle_dir.empty() ? staged.error() : bundle_member_error(staged.error(), options);
    report.pip_restored = std::move(*staged);
  }
  for (const auto& d : env->pip) {
    if (d.source == PipSource::Editable) report.checklist.push_back("pip: " + d.name + " is an editable install of " + d.url + "; it runs from that folder");
  }
  // The missing files of a record pip shadowed are what pip's uninstall removed: reproduced with
  // pip's install (step 4), or left in place with the whole conda package by --without-pip. Those
  // of other packages, like modified and unowned files, are left to a person. (A pip file that is
  // gone fails step 2.)
  std::size_t missing = 0;
  for (const auto& entry : env->drift.missing) {
    const std::string& who = entry.first;  // (not a structured binding: clang 14 cannot capture one)
    const auto& files = entry.second;
    const auto p = std::find_if(env->packages.begin(), env->packages.end(),
                                [&](const CapturedPackage& c) { return c.record.name == who; });
    if (!who.starts_with("pip:") && (p == env->packages.end() || p->shadowed_by.empty())) missing += files.size();
  }
  if (!env->drift.modified.empty() || !env->drift.unowned.empty() || missing != 0) {
    report.checklist.push_back("drift: " + std::to_string(env->drift.modified.size()) + " modified, " +
                               std::to_string(env->drift.unowned.size()) + " unowned and " + std::to_string(missing) +
                               " missing files of the captured prefix are not reproduced (see the snapshot's drift section)");
  }

  // 3. conda records, in install order, through the package cache and the installer.
  LockedPlatform lp;
  lp.platform = env->platform;
  // Every record, shadowed ones included: the capture host had the conda package installed and
  // pip's files over it (step 4 restores those, and removes what pip's uninstall removed).
  for (const auto& p : env->packages) {
    LockedPackage lpkg;
    static_cast<RepoDataRecord&>(lpkg) = p.record;
    lpkg.layer = env->name;
    lp.packages.push_back(std::move(lpkg));
  }
  auto cache = options.package_cache.empty() ? PackageCache::open_default() : PackageCache::open(options.package_cache);
  if (!cache) return cache.error();
  const auto order = install_order(lp);
  std::vector<RepoDataRecord> records;
  for (const auto* p : order) records.push_back(static_cast<const RepoDataRecord&>(*p));
  // From a bundle: the cache takes each archive from the bundle (file://), nothing from the
  // network. A re-packed archive is checked against its own sha256 (recorded in the snapshot)
  // and, once extracted, every file against the conda-meta sha256 its paths.json carries.
  std::vector<RepoDataRecord> fetch = records;
  std::vector<bool> repacked(records.size(), false);
  if (!options.bundle_dir.empty()) {
    for (std::size_t i = 0; i < records.size(); ++i) {
      const auto cp = std::find_if(env->packages.begin(), env->packages.end(),
                                   [&](const CapturedPackage& c) { return c.record.name == records[i].name; });
      RepoDataRecord& r = fetch[i];
      fs::path at = options.bundle_dir / "pkgs" / r.file_name;
      if (cp != env->packages.end() && !cp->repacked_sha256.empty()) {
        if (cache->lookup(records[i], kInstallCacheValidation)) continue;  // the original archive is cached already: better than a re-pack
        repacked[i] = true;
        at = options.bundle_dir / "repacked" / env->name / (r.dist_name() + ".conda");
        r.file_name = r.dist_name() + ".conda";
        r.sha256 = cp->repacked_sha256;
        r.md5.clear();
        r.size.reset();
      }
      if (r.file_name.find('/') != std::string::npos || !fs::is_regular_file(at, ec)) {
        return Error{ErrorKind::Integrity, records[i].dist_name(), "the bundle holds no archive for this package", "",
                     "make the bundle again with `envlock snapshot capture --bundle`"};
      }
      r.url = file_url_from_path(fs::absolute(at).string());
    }
  }
  // The cache is checked as `envlock install` checks it (a cached file edited through a hard
  // link of an environment makes the package extract again).
  CacheOptions cache_options;
  cache_options.validation = kInstallCacheValidation;
  auto entries = cache->ensure_all(fetch, cache_options);
  std::vector<PackageToLink> to_link;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (!entries[i]) {
      Error e = entries[i].error();
      if (options.bundle_dir.empty()) return e;
      e.message = records[i].dist_name() + ": " + e.message;
      return bundle_member_error(std::move(e), options);
    }
    if (repacked[i]) {
      if (auto st = check_repacked(records[i], entries[i]->extracted_dir); !st) {
        (void)cache->remove(fetch[i]);
        Error e = st.error();
        e.where = (options.bundle_name.empty() ? options.bundle_dir.string() : options.bundle_name) + ": repacked/" + env->name + "/" +
                  records[i].dist_name() + ".conda";
        return e;
      }
    }
    to_link.push_back({records[i], entries[i]->extracted_dir, entries[i]->archive, ""});
  }
  // The installer of `envlock install`, keeping generations as it does for install and create:
  // history records the deploy, and the tree it replaces (if any) is kept for rollback.
  InstallOptions io;
  io.origin.lockfile = options.snapshot_name.empty() ? std::string("snapshot") : options.snapshot_name;
  io.origin.environment = env->name;
  io.origin.platform = env->platform;
  io.origin.command = "snapshot deploy";
  if (!options.snapshot_text.empty()) {
    io.origin.lockfile_hash = "sha256:" + hash_bytes(options.snapshot_text, HashAlgorithm::Sha256);
    io.lockfile_text = options.snapshot_text;
  }
  io.keep_generations = KeepGenerations::Yes;
  // 4. pip's install over the conda packages, in the installer's staging folder before its swap:
  // the files its uninstall of a shadowed package had removed go, then the staged pip files move
  // in (over the conda files pip had overwritten). A failure deletes the stage; the prefix stays.
  const bool pip_step = !options.without_pip;
  // Files no record lists make the tree differ from one with the same packages: a new
  // generation, the replaced tree kept (envlock does not compare pip's files).
  io.stage_differs = pip_step && (!report.pip_restored.empty() ||
                                  std::any_of(env->packages.begin(), env->packages.end(),
                                              [](const CapturedPackage& p) { return !p.shadowed_by.empty(); }));
  io.finish_stage = [&](const fs::path& tree) -> Status {
    Status st = ok_status();
    if (pip_step)
      if (auto removed = remove_uninstalled_by_pip(*env, tree); !removed) st = removed.error();
    if (st && !report.pip_restored.empty()) st = move_tree(stage, tree);
    if (st) return st;
    Error e = st.error();  // named as the path it was to have in the environment
    for (std::string* text : {&e.where, &e.message})
      for (std::size_t at; (at = text->find(tree.string())) != std::string::npos;)
        text->replace(at, tree.string().size(), fs::absolute(prefix).lexically_normal().string());
    return e;
  };
  const std::uint64_t before = [&] {
    auto o = read_prefix_origin(prefix);
    return o && *o ? (*o)->generation : 0;
  }();
  const bool had_tree = fs::is_directory(fs::symlink_status(prefix / "conda-meta", ec));
  auto installed = install_packages(prefix, to_link, io);
  if (!installed) return installed.error();
  // What the prefix holds: linked now, or kept from the environment it replaced.
  report.installed = installed->installed;
  report.installed.insert(report.installed.end(), installed->kept.begin(), installed->kept.end());
  std::sort(report.installed.begin(), report.installed.end());
  report.warnings = installed->warnings;
  if (auto o = read_prefix_origin(prefix); o && *o) report.generation = (*o)->generation;
  // The generation kept: the number the replaced tree had, or was given as it was kept (one made
  // before generations: the number below the new one's). The same packages keep their number.
  const bool changed = !installed->installed.empty() || !installed->removed.empty() || io.stage_differs;
  if (had_tree && report.generation != before && (before != 0 || changed)) {
    const std::uint64_t kept = before != 0 ? before : report.generation - 1;
    if (auto gens = list_generations(prefix); gens)
      for (const auto& g : *gens)
        if (!g.current && g.number == kept) report.previous = kept;
  }
  return report;
}

}  // namespace envlock
