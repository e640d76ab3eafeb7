// pip_step.cpp — the pip step of install_locked_environment() (envlock/pip_step.hpp).
#include "envlock/pip_step.hpp"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <system_error>

#include "envlock/fetch.hpp"
#include "envlock/text.hpp"
#include "envlock/hash.hpp"
#include "envlock/input_file.hpp"
#include "envlock/paths.hpp"
#include "envlock/pip.hpp"
#include "envlock/pypi_name.hpp"
#include "envlock/pypi_version.hpp"
#include "envlock/url.hpp"
#include "envlock/wheel.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

/// The last path segment of `url` (no query, no fragment), percent-decoded.
std::string url_file_name(std::string_view url) {
  url = url.substr(0, url.find_first_of("?#"));
  const std::size_t slash = url.rfind('/');
  return percent_decode(slash == std::string_view::npos ? url : url.substr(slash + 1));
}

std::string url_without_fragment(const std::string& url) { return url.substr(0, url.find('#')); }

std::string pin(const PipPackage& p) { return p.name + (p.version.empty() ? "" : "==" + p.version); }

/// Whether the installed `dist` (in `prefix`) is the locked wheel's build: the same PEP 440
/// version and, when it records the sha256 of the wheel it came from (installed_wheel_sha256():
/// envlock's ENVLOCK_SHA256, PEP 610 direct_url.json), that sha256 (attack 23 F8), as uv pip sync
/// installs again a URL distribution whose recorded hash is not the locked one.
bool same_build(const fs::path& prefix, const PipDistribution& dist, const std::string& version, const std::string& sha256) {
  if (!same_pep440_version(dist.version, version)) return false;
  const std::string recorded = installed_wheel_sha256(prefix / dist.dist_info);
  return recorded.empty() || recorded == ascii_lower(sha256);
}

}  // namespace

bool same_pep440_version(const std::string& a, const std::string& b) {
  if (a == b) return true;
  auto va = Pep440Version::parse(a);
  auto vb = Pep440Version::parse(b);
  return va && vb && *va == *vb;
}

PipPlan plan_pip(const std::vector<PipPackage>& pip) {
  PipPlan plan;
  for (const PipPackage& p : pip) {
    const bool wheel = !p.editable && url_file_name(p.url).ends_with(".whl") && is_hex_digest(p.sha256, HashAlgorithm::Sha256);
    (wheel ? plan.wheels : plan.others).push_back(p);
  }
  return plan;
}

std::vector<std::string> outside_wheel_warnings(const std::vector<PipPackage>& wheels, const fs::path& lockfile_path) {
  std::error_code ec;
  fs::path folder = fs::weakly_canonical(fs::absolute(lockfile_path), ec).parent_path();
  if (ec) folder = fs::absolute(lockfile_path).lexically_normal().parent_path();
  std::map<std::string, std::vector<std::string>> outside;  // the folder's file:// URL -> its wheels
  for (const PipPackage& p : wheels) {
    const std::string url = url_without_fragment(p.url);
    std::optional<fs::path> local;
    if (url.starts_with("file:")) {
      if (auto path = path_from_file_url(url)) local = fs::path(*path);
    } else if (url.find("://") == std::string::npos) {
      local = fs::path(url).is_relative() ? fs::absolute(lockfile_path).parent_path() / url : fs::path(url);
    }
    if (!local) continue;  // downloaded: the lockfile's sha256 is the check
    std::error_code wec;
    const fs::path real = fs::weakly_canonical(*local, wec);
    const fs::path rel = wec ? fs::path() : real.lexically_relative(folder);
    if (!wec && !rel.empty() && *rel.begin() != "..") continue;
    if (!system_file_refusal(*local).empty()) continue;  // refused unread when fetched, named there
    outside[redact_url(file_url_from_path((wec ? local->lexically_normal() : real).parent_path().string()))].push_back(url_file_name(url));
  }
  std::vector<std::string> out;
  for (auto& [where, names] : outside) {
    std::sort(names.begin(), names.end());
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    out.push_back(std::to_string(names.size()) + " package(s) come from " + where + ", a local folder outside the lockfile's folder " +
                  folder.string() + " (check that it is the one meant): " + list);
  }
  return out;
}

Result<std::vector<FetchedWheel>> fetch_locked_wheels(const std::vector<PipPackage>& wheels, const fs::path& lockfile_path,
                                                      const WheelTarget& target) {
  std::vector<FetchedWheel> out;
  const fs::path folder = fs::absolute(lockfile_path).lexically_normal().parent_path();
  for (const PipPackage& p : wheels) {
    const std::string sha = ascii_lower(p.sha256);
    const std::string file = url_file_name(p.url);
    const fs::path dest = cache_root() / "wheels" / sha / file;
    const std::string shown = redact_url(p.url);
    auto fail = [&](Error e) {
      e.detail += std::string(e.detail.empty() ? "" : "\n") + "pip package: " + pin(p) + " from " + shown +
                  "\nnothing was installed; the prefix was not touched";
      return e;
    };
    auto wheel_name = parse_wheel_file_name(file);
    if (file.find_first_of(std::string_view("/\0", 2)) != std::string::npos || !wheel_name) {
      return fail(Error{ErrorKind::Parse, lockfile_path.string(), "pip package " + p.name + ": '" + file + "' is not a wheel file name", "",
                        "a locked wheel's url ends in {distribution}-{version}-{tags}.whl (PEP 427)"});
    }
    if ((!p.name.empty() && pep503_normalize(p.name) != pep503_normalize(wheel_name->distribution)) ||
        (!p.version.empty() && !same_pep440_version(p.version, wheel_name->version))) {
      return fail(Error{ErrorKind::Parse, lockfile_path.string(),
                        "pip package " + pin(p) + ": its url names the wheel of " + wheel_name->distribution + " " + wheel_name->version, "",
                        "the entry's name, version and url disagree: lock again"});
    }
    if (!wheel_tags_supported(*wheel_name, target)) {
      return fail(Error{ErrorKind::Incompatible, lockfile_path.string(),
                        "pip package " + pin(p) + ": " + file + " is not compatible with " + describe_wheel_target(target) + " (tags " +
                            wheel_name->python_tag + "-" + wheel_name->abi_tag + "-" + wheel_name->platform_tag + ")",
                        "", "lock a wheel built for this environment (PEP 425 tags); pip and uv refuse it too"});
    }
    std::error_code ec;
    if (fs::is_regular_file(dest, ec)) {
      auto digest = hash_file(dest, HashAlgorithm::Sha256);
      if (digest && *digest == sha) {
        out.push_back({p, dest});
        continue;
      }
      fs::remove(dest, ec);  // damaged: fetched again
    }
    fs::create_directories(dest.parent_path(), ec);
    if (ec) return fail(Error{ErrorKind::Io, dest.parent_path().string(), "cannot create the wheel cache folder: " + ec.message(), "", ""});
    std::string url = url_without_fragment(p.url);
    if (url.find("://") == std::string::npos) {
      fs::path local = url;
      if (local.is_relative()) local = folder / local;
      url = file_url_from_path(local.lexically_normal().string());
    }
    // A local wheel is read only where read_input_file() reads (attack 22 A9): never /proc/self/environ
    // through a link, whose hash and size the mismatch error would print.
    if (url.starts_with("file:")) {
      if (auto local = path_from_file_url(url); local) {
        if (const std::string why = system_file_refusal(*local); !why.empty()) {
          return fail(Error{ErrorKind::Io, shown, why, "", "a locked wheel's url names a wheel file of the project or a download"});
        }
      }
    }
    FetchRequest request;
    request.url = url;
    request.destination = dest;
    request.sha256 = sha;
    request.label = file;
    auto fetched = fetch_to_file(request);
    if (!fetched) return fail(fetched.error());
    out.push_back({p, dest});
  }
  return out;
}

Result<PipInstallReport> install_fetched_wheels(const fs::path& prefix, const std::vector<FetchedWheel>& wheels,
                                                const std::vector<PipPackage>& locked, const fs::path& target_prefix) {
  PipInstallReport report;
  // What a wheel install killed mid-way left (its staging folder) goes first (attack 22 A10).
  std::error_code exists_ec;
  if (fs::is_directory(prefix, exists_ec)) remove_stale_wheel_staging(prefix);
  auto xy = prefix_python_xy(prefix);
  if (wheels.empty() && !xy) return report;  // no python: no pip package to install or remove
  if (!xy) {
    Error e = xy.error();
    e.kind = ErrorKind::Incompatible;  // the lockfile's environment, not the command line
    e.message = "cannot install the locked pip packages: " + e.message;
    e.hint = "the environment needs a python package for its pip packages (add python to its dependencies and lock again)";
    return e;
  }
  const fs::path site = prefix / ("lib/python" + *xy + "/site-packages");
  const std::string site_rel = "lib/python" + *xy + "/site-packages";
  // What is there already, read once (envlock install again over the same lockfile: the conda
  // step carries pip files over as files no package owns).
  std::multimap<std::string, PipDistribution> present;
  for (const fs::path& dir : dist_info_dirs(site)) {
    auto dist = read_dist_info(dir, site_rel + "/" + dir.filename().string(), DistInfoParts::WithoutRecord);
    if (dist) present.emplace(pep503_normalize(dist->name), std::move(*dist));
  }
  // A distribution an earlier envlock install put there (INSTALLER `envlock`) that the lockfile no
  // longer names goes first, RECORD-driven as `pip uninstall` removes it (uninstall_distribution):
  // so that a wheel that takes over its files (a renamed project) finds none. What pip, uv or
  // conda installed is the user's, never removed here.
  std::set<std::string> named;
  for (const PipPackage& p : locked)
    if (!p.name.empty()) named.insert(pep503_normalize(p.name));
  for (auto it = present.begin(); it != present.end();) {
    const PipDistribution& dist = it->second;
    if (dist.installer != "envlock" || named.count(it->first)) {
      ++it;
      continue;
    }
    auto removed = uninstall_distribution(prefix, dist.dist_info, *xy);
    if (!removed) {
      Error e = removed.error();
      e.detail += std::string(e.detail.empty() ? "" : "\n") + "pip package: " + dist.name + "==" + dist.version +
                  ", which the lockfile no longer holds\nnothing was installed; the prefix was not touched";
      return e;
    }
    report.removed.push_back(dist.name + "==" + dist.version);
    if (!removed->left_in_place.empty()) {  // as a replaced version's rows are named (attack 23 F9)
      std::string list;
      for (const std::string& f : removed->left_in_place) list += (list.empty() ? "" : ", ") + f;
      report.warnings.push_back("removing " + dist.name + "==" + dist.version + ", which the lockfile no longer holds, left " +
                                std::to_string(removed->left_in_place.size()) +
                                " file(s) its RECORD lists in place, which are no pip package's to remove: " + list);
    }
    it = present.erase(it);
  }
  std::sort(report.removed.begin(), report.removed.end());
  if (wheels.empty()) return report;
  // Plan each wheel (kept, new, or replacing another version), then install them in parallel:
  // the unpacking runs on every core, the moves into the prefix one at a time (commit_lock).
  struct Job {
    const FetchedWheel* wheel;
    std::string pin, replaced;
    WheelInstallOptions options;
    std::optional<Error> error;
    std::vector<std::string> left_in_place;  // of the replaced version's RECORD
  };
  // The files conda records own, read once: a replaced version's RECORD row naming one is left
  // in place (WheelInstallOptions::conda_files).
  std::optional<CondaOwnedFiles> conda_files;
  auto read_conda_files = [&]() -> Status {
    if (conda_files) return ok_status();
    auto files = conda_owned_files(prefix);
    if (!files) return files.error();
    conda_files = std::move(*files);
    return ok_status();
  };
  std::mutex commit_lock;
  std::vector<Job> jobs;
  for (const FetchedWheel& w : wheels) {
    auto name = parse_wheel_file_name(w.path.filename().string());
    if (!name) return name.error();
    bool kept = false;
    std::string replaces, replaced;
    const auto [from, to] = present.equal_range(pep503_normalize(name->distribution));
    for (auto it = from; it != to; ++it) {
      const PipDistribution* dist = &it->second;
      if (same_build(prefix, *dist, name->version, w.package.sha256)) {
        kept = true;
        break;
      }
      // Another version, or another build of it: replaced, all or nothing (pip uninstalls it first).
      if (!replaces.empty()) {
        return Error{ErrorKind::Incompatible, prefix.string(),
                     "pip package " + dist->name + " is installed more than once (" + replaced + ", " + dist->version + ")", "",
                     "remove the stale .dist-info folders by hand, or install into a new prefix"};
      }
      replaces = dist->dist_info;
      replaced = dist->name + "==" + dist->version;
    }
    if (kept) {
      report.kept.push_back(name->distribution + "==" + name->version);
      continue;
    }
    Job job{&w, name->distribution + "==" + name->version, replaced, {}, std::nullopt};
    job.options.replaces = replaces;
    if (!replaces.empty()) {
      if (auto st = read_conda_files(); !st) return st.error();
      job.options.conda_files = &*conda_files;
    }
    job.options.archive_sha256 = ascii_lower(w.package.sha256);
    job.options.python_xy = *xy;
    job.options.target_prefix = fs::absolute(target_prefix.empty() ? prefix : target_prefix).lexically_normal().string();
    job.options.commit_lock = &commit_lock;
    job.options.unpacked_cache = cache_root() / "wheels-unpacked";  // linked from, as uv installs (envlock/wheel.hpp)
    // PEP 376 REQUESTED for what the manifest asked for, as pip writes it for its command line's
    // requirements only: a pin whose required_by names no `(manifest)` is a dependency (a
    // lockfile without required_by marks every wheel, as before).
    const auto& by = w.package.required_by;
    if (!by.empty() && std::find(by.begin(), by.end(), "(manifest)") == by.end()) job.options.requested = Requested::No;
    if (w.package.requirement.find(" @ ") != std::string::npos || w.package.requirement.find("@ ") != std::string::npos) {
      job.options.direct_url = DirectUrl{url_without_fragment(w.package.url), w.package.sha256};
    }
    jobs.push_back(std::move(job));
  }
  // The folders every wheel may merge into exist first, so no install moves one in whole.
  for (const std::string& dir : {std::string("bin"), site_rel}) {
    std::error_code ec;
    fs::create_directories(prefix / dir, ec);
  }
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      auto installed = install_wheel(jobs[i].wheel->path, prefix, jobs[i].options);
      if (!installed) jobs[i].error = installed.error();
      else jobs[i].left_in_place = std::move(installed->left_in_place);
    }
  };
  const std::size_t threads = std::min<std::size_t>(jobs.size(), std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  if (threads > 0) work();
  for (auto& t : pool) t.join();
  for (Job& job : jobs) {
    if (job.error) {
      Error e = *job.error;
      // The wheel is named as the cache holds it, its home folder spelled `~` (attack 22 A9).
      if (const std::string cached = job.wheel->path.string(); e.where.starts_with(cached))
        e.where = tilde_path(job.wheel->path, home_folder()) + e.where.substr(cached.size());
      e.detail += std::string(e.detail.empty() ? "" : "\n") + "pip package: " + job.pin +
                  "\nnothing was installed; the prefix was not touched";
      return e;
    }
    report.installed.push_back(job.pin);
    if (!job.replaced.empty()) report.replaced.push_back(job.replaced);
    if (!job.left_in_place.empty()) {
      std::string list;
      for (const std::string& f : job.left_in_place) list += (list.empty() ? "" : ", ") + f;
      report.warnings.push_back("replacing " + job.replaced + " by " + job.pin + " left " + std::to_string(job.left_in_place.size()) +
                                " file(s) its RECORD lists in place, which are no pip package's to remove: " + list);
    }
  }
  return report;
}

bool pip_step_changes(const fs::path& prefix, const std::vector<FetchedWheel>& wheels,
                      const std::vector<PipPackage>& locked) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(prefix / "conda-meta", ec))) return false;
  auto xy = prefix_python_xy(prefix);
  if (!xy) return !wheels.empty();
  const std::string site_rel = "lib/python" + *xy + "/site-packages";
  std::multimap<std::string, PipDistribution> present;  // as install_fetched_wheels() reads them
  for (const fs::path& dir : dist_info_dirs(prefix / site_rel)) {
    auto dist = read_dist_info(dir, site_rel + "/" + dir.filename().string(), DistInfoParts::WithoutRecord);
    if (dist) present.emplace(pep503_normalize(dist->name), std::move(*dist));
  }
  std::set<std::string> named;
  for (const PipPackage& p : locked)
    if (!p.name.empty()) named.insert(pep503_normalize(p.name));
  for (const auto& entry : present)
    if (entry.second.installer == "envlock" && !named.count(entry.first)) return true;  // removed
  for (const FetchedWheel& w : wheels) {
    auto name = parse_wheel_file_name(w.path.filename().string());
    if (!name) return true;
    const auto range = present.equal_range(pep503_normalize(name->distribution));
    if (std::none_of(range.first, range.second,
                     [&](const auto& d) { return same_build(prefix, d.second, name->version, w.package.sha256); }))
      return true;  // installed or replaced
  }
  return false;
}

}  // namespace envlock
