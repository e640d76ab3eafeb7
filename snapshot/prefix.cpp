// Conda prefixes: discovery, conda-meta records, pip distributions, pip-over-conda shadowing and
// drift (modified, unowned and missing files).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "text_util.hpp"
#include "envlock/hash.hpp"
#include "envlock/snapshot.hpp"
#include "envlock/url.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {

using snapshot_detail::normalize_relative;

std::string pep503(std::string_view name) {
  PipDistribution d;
  d.name = std::string(name);
  return d.normalized_name();
}

// Streams a file through SHA-256; nullopt when it cannot be read.
std::optional<std::string> sha256_file(const fs::path& p, std::vector<char>& buf) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Hasher h(HashAlgorithm::Sha256);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    h.update(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return h.hex_digest();
}

bool ignored_runtime_file(const std::string& rel) {
  if (rel == ".messages.txt") return true;
  if (rel.ends_with(".pyc")) return true;
  return rel.find("__pycache__/") != std::string::npos;
}

// Project name of a "<name>-<version>.dist-info" folder, normalised (PEP 503).
std::string dist_info_project(std::string_view folder) {
  const auto dash = folder.find('-');
  return pep503(folder.substr(0, dash == std::string_view::npos ? folder.size() - 10 : dash));
}

std::string environment_name(const HostSeam& seam, const fs::path& prefix) {
  const fs::path p = prefix.lexically_normal();
  const std::string leaf = p.has_filename() ? p.filename().string() : p.parent_path().filename().string();
  const std::string parent = (p.has_filename() ? p : p.parent_path()).parent_path().filename().string();
  if (parent == "envs") return leaf;
  // A conda installation's root prefix holds envs/ or condabin/: conda names it "base".
  if (seam.resolve(p / "condabin") || seam.resolve(p / "envs")) return "base";
  return leaf.empty() ? "root" : leaf;
}

}  // namespace

std::vector<fs::path> discover_prefixes(const HostSeam& seam) {
  std::set<fs::path> found;
  auto consider = [&](const fs::path& host) {
    if (auto local = seam.resolve(host / "conda-meta"); local && fs::is_directory(*local)) found.insert(host.lexically_normal());
  };
  auto children = [&](const fs::path& host_dir) {
    auto local = seam.resolve(host_dir);
    if (!local) return;
    std::error_code ec;
    for (fs::directory_iterator it(*local, ec), end; !ec && it != end; it.increment(ec)) {
      consider(host_dir / it->path().filename());
    }
  };
  for (const auto& home : seam.home_dirs) {
    if (auto txt = seam.resolve(home / ".conda/environments.txt")) {
      std::ifstream in(*txt);
      for (std::string line; std::getline(in, line);) {
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (line.empty() || line[0] != '/') continue;
        consider(line);
        children(fs::path(line) / "envs");
      }
    }
    children(home / ".conda/envs");
  }
  return {found.begin(), found.end()};
}

Result<CapturedEnvironment> capture_prefix(const HostSeam& seam, const fs::path& prefix, const std::string& host_platform,
                                           const CaptureOptions& options, std::vector<CaptureProblem>& problems) {
  const auto local_opt = seam.resolve(prefix);
  if (!local_opt || !fs::is_directory(*local_opt / "conda-meta")) {
    return Error{ErrorKind::Usage, prefix.string(), "not a conda environment (no conda-meta/ folder)", "",
                 "pass the folder that holds conda-meta/, e.g. ~/miniconda3/envs/<name>"};
  }
  const fs::path local = *local_opt;
  CapturedEnvironment env;
  env.prefix = prefix.lexically_normal().string();
  env.name = environment_name(seam, prefix);

  // 1. conda-meta records, one file at a time so one bad record does not hide the others.
  std::vector<fs::path> meta_files;
  {
    std::error_code ec;
    for (fs::directory_iterator it(local / "conda-meta", ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".json" && it->is_regular_file(ec)) meta_files.push_back(it->path());
    }
    std::sort(meta_files.begin(), meta_files.end());
  }
  std::vector<PrefixRecord> records;
  for (const auto& f : meta_files) {
    const std::string where = (prefix / "conda-meta" / f.filename()).string();
    std::ifstream in(f, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (!in && !in.eof()) {
      problems.push_back({where, "cannot read the record"});
      continue;
    }
    const auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      problems.push_back({where, "not valid JSON: the package it describes is left out of the snapshot"});
      continue;
    }
    auto rec = PrefixRecord::from_json(j);
    if (!rec) {
      problems.push_back({where, rec.error().message});
      continue;
    }
    records.push_back(std::move(*rec));
  }
  std::sort(records.begin(), records.end(), [](const PrefixRecord& a, const PrefixRecord& b) { return a.name < b.name; });

  // 2. Ownership of every path conda installed.
  std::map<std::string, std::string> owner;             // prefix-relative path -> conda name or pip:<name>
  std::map<std::string, std::string> conda_dist_infos;  // normalised project -> conda package
  for (const auto& r : records) {
    auto own = [&](const std::string& path) {
      owner[path] = r.name;
      const auto at = path.find(".dist-info/");
      if (at != std::string::npos) {
        const auto slash = path.rfind('/', at);
        conda_dist_infos[dist_info_project(path.substr(slash == std::string::npos ? 0 : slash + 1))] = r.name;
      }
    };
    for (const auto& pe : r.paths) own(pe.path);
    for (const auto& f : r.files) own(f);
  }
  std::map<std::string, std::size_t> by_name;
  for (std::size_t i = 0; i < records.size(); ++i) by_name[records[i].name] = i;

  // 3. pip distributions in site-packages.
  std::vector<std::string> site_dirs;
  {
    std::error_code ec;
    for (fs::directory_iterator it(local / "lib", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (n.starts_with("python") && fs::is_directory(it->path() / "site-packages")) site_dirs.push_back("lib/" + n + "/site-packages");
    }
    if (fs::is_directory(local / "Lib/site-packages", ec)) site_dirs.push_back("Lib/site-packages");
    std::sort(site_dirs.begin(), site_dirs.end());
  }
  std::map<std::string, std::string> shadowed;  // conda name -> pip:<name>
  for (const auto& site : site_dirs) {
    std::vector<fs::path> infos;
    std::error_code ec;
    for (fs::directory_iterator it(local / site, ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".dist-info" && it->is_directory(ec)) infos.push_back(it->path());
    }
    std::sort(infos.begin(), infos.end());
    for (const auto& info : infos) {
      const std::string rel = site + "/" + info.filename().string();
      const auto conda_owner = owner.find(rel + "/METADATA");
      // Read it; a conda-owned dist-info with a conda INSTALLER is the conda package's own metadata.
      auto dist = read_dist_info(info, rel);
      if (!dist) {
        if (conda_owner == owner.end()) problems.push_back({(prefix / dist.error().where).string(), dist.error().message});
        continue;
      }
      if (conda_owner != owner.end() && (dist->installer.empty() || dist->installer == "conda")) continue;
      // Installed by pip (or uv, ...) — possibly over a conda package.
      std::string replaced;
      if (conda_owner != owner.end()) {
        replaced = conda_owner->second;
      } else if (auto it = conda_dist_infos.find(dist->normalized_name()); it != conda_dist_infos.end()) {
        replaced = it->second;
      } else if (by_name.count(dist->normalized_name())) {
        replaced = dist->normalized_name();
      }
      if (!replaced.empty()) {
        dist->shadows = replaced;
        shadowed[replaced] = "pip:" + dist->name;
      }
      env.pip.push_back(std::move(*dist));
    }
  }
  std::sort(env.pip.begin(), env.pip.end(), [](const PipDistribution& a, const PipDistribution& b) {
    return a.normalized_name() < b.normalized_name();
  });
  // pip owns what its RECORD lists (overriding a conda owner it overwrote).
  std::map<std::string, std::pair<const PipDistribution*, const RecordEntry*>> pip_files;
  for (const auto& d : env.pip) {
    const std::string site = d.dist_info.substr(0, d.dist_info.rfind('/'));
    for (const auto& e : d.files) {
      const auto rel = normalize_relative(site + "/" + e.path);
      if (!rel) {
        problems.push_back({(prefix / d.dist_info / "RECORD").string(), "lists `" + e.path + "`, outside the prefix; not checked"});
        continue;
      }
      owner[*rel] = "pip:" + d.name;
      pip_files[*rel] = {&d, &e};
    }
  }

  // 4. Packages and platform.
  std::map<std::string, int> subdirs;
  for (const auto& r : records) {
    CapturedPackage p;
    p.record = static_cast<const RepoDataRecord&>(r);
    p.record.url = redact_url(p.record.url);
    p.record.channel = redact_url(p.record.channel);
    // conda writes the channel with its subdir (".../conda-forge/linux-64"); a lockfile keeps the channel.
    if (!r.subdir.empty() && p.record.channel.ends_with("/" + r.subdir)) {
      p.record.channel.resize(p.record.channel.size() - r.subdir.size() - 1);
    }
    std::set<std::string> files(r.files.begin(), r.files.end());
    for (const auto& pe : r.paths) files.insert(pe.path);
    p.files.assign(files.begin(), files.end());
    if (auto it = shadowed.find(r.name); it != shadowed.end()) p.shadowed_by = it->second;
    if (!r.subdir.empty() && r.subdir != "noarch") ++subdirs[r.subdir];
    env.packages.push_back(std::move(p));
  }
  env.platform = host_platform;
  int best = 0;
  for (const auto& [s, n] : subdirs) {
    if (n > best) {
      best = n;
      env.platform = s;
    }
  }

  // 5. Drift.
  env.drift.hashed = options.hash_files;
  // Files to hash are collected first and hashed afterwards on up to 2 threads (each with its own
  // buffer); modified files and problems are sorted at the end, so the output does not depend on
  // which thread hashed what.
  struct HashJob {
    fs::path file;
    ModifiedFile m;
    std::string digest;
    bool ok;
  };
  std::vector<HashJob> hash_jobs;
  auto check_file = [&](const std::string& rel, const std::string& who, const std::string& sha, std::optional<std::uint64_t> size,
                        PathEntry::Type type) {
    const fs::path f = local / rel;
    struct stat st {};
    if (::lstat(f.c_str(), &st) != 0) {
      env.drift.missing[who].push_back(rel);
      return;
    }
    if (type == PathEntry::Type::Directory) return;
    if (type == PathEntry::Type::SoftLink) return;  // a link's target is checked where it lives
    if (S_ISLNK(st.st_mode)) {
      if (::stat(f.c_str(), &st) != 0) {
        env.drift.missing[who].push_back(rel);
        return;
      }
    }
    const auto actual_size = static_cast<std::uint64_t>(st.st_size);
    ModifiedFile m{rel, who, sha, "", size, actual_size};
    if (size && *size != actual_size) {
      env.drift.modified.push_back(m);
      return;
    }
    if (options.hash_files && !sha.empty()) hash_jobs.push_back({f, std::move(m), {}, false});
  };
  for (const auto& r : records) {
    if (shadowed.count(r.name)) continue;  // pip replaced it: its files are pip's to check
    if (!r.paths.empty()) {
      for (const auto& pe : r.paths) {
        if (owner[pe.path] != r.name) continue;  // overwritten by a later package or pip
        // A text placeholder changes the size; paths_data records the size in the package.
        const bool text_relocated = !pe.prefix_placeholder.empty() && pe.file_mode != PathEntry::PlaceholderMode::Binary;
        check_file(pe.path, r.name, pe.sha256, text_relocated ? std::nullopt : pe.size_in_bytes, pe.type);
      }
    } else {
      for (const auto& f : r.files) {
        if (owner[f] != r.name) continue;
        check_file(f, r.name, "", std::nullopt, PathEntry::Type::HardLink);
      }
    }
  }
  for (const auto& [rel, de] : pip_files) {
    if (ignored_runtime_file(rel)) continue;
    check_file(rel, "pip:" + de.first->name, de.second->sha256, de.second->size, PathEntry::Type::HardLink);
  }
  if (!hash_jobs.empty()) {
    std::atomic<std::size_t> next{0};
    auto worker = [&] {
      std::vector<char> buf(1 << 20);
      for (std::size_t i; (i = next.fetch_add(1)) < hash_jobs.size();) {
        auto digest = sha256_file(hash_jobs[i].file, buf);
        hash_jobs[i].ok = digest.has_value();
        if (digest) hash_jobs[i].digest = std::move(*digest);
      }
    };
    const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1U, 2U);
    std::vector<std::jthread> pool;
    for (unsigned t = 1; t < threads && hash_jobs.size() > 1; ++t) pool.emplace_back(worker);
    worker();
    pool.clear();
    for (auto& j : hash_jobs) {
      if (!j.ok) {
        problems.push_back({(prefix / j.m.path).string(), "cannot be read to check its sha256"});
      } else if (j.digest != j.m.expected_sha256) {
        j.m.actual_sha256 = std::move(j.digest);
        env.drift.modified.push_back(std::move(j.m));
      }
    }
  }
  {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(local, fs::directory_options::none, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string rel = fs::path(it->path()).lexically_relative(local).generic_string();
      if (rel == "conda-meta" || rel.starts_with("conda-meta/")) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (it->is_directory(ec) && !it->is_symlink(ec)) {
        // Nested environments (a base prefix's envs/) and the package cache are not this prefix's files.
        const bool nested = fs::is_directory(it->path() / "conda-meta", ec);
        if (nested || (it.depth() == 0 && (rel == "envs" || rel == "pkgs"))) it.disable_recursion_pending();
        continue;
      }
      if (ignored_runtime_file(rel) || owner.count(rel)) continue;
      env.drift.unowned.push_back(rel);
    }
    if (ec) problems.push_back({prefix.string(), "could not walk the whole prefix: " + ec.message()});
  }
  std::sort(env.drift.modified.begin(), env.drift.modified.end(),
            [](const ModifiedFile& a, const ModifiedFile& b) { return a.path < b.path; });
  std::sort(env.drift.unowned.begin(), env.drift.unowned.end());
  for (auto& [who, files] : env.drift.missing) std::sort(files.begin(), files.end());
  return env;
}

Snapshot capture(const HostSeam& seam, const CaptureOptions& options) {
  Snapshot s;
  s.timestamp = options.timestamp;
  s.host = capture_host_facts(seam, options, s.problems);
  const auto prefixes = options.prefixes.empty() ? discover_prefixes(seam) : options.prefixes;
  std::set<std::string> names;
  for (const auto& p : prefixes) {
    auto env = capture_prefix(seam, p, s.host.platform, options, s.problems);
    if (!env) {
      s.problems.push_back({env.error().where, env.error().message});
      continue;
    }
    std::string name = env->name;
    for (int i = 2; names.count(name); ++i) name = env->name + "-" + std::to_string(i);
    env->name = name;
    names.insert(name);
    s.environments.push_back(std::move(*env));
  }
  std::sort(s.environments.begin(), s.environments.end(),
            [](const CapturedEnvironment& a, const CapturedEnvironment& b) { return a.name < b.name; });
  std::sort(s.problems.begin(), s.problems.end(), [](const CaptureProblem& a, const CaptureProblem& b) {
    return std::tie(a.where, a.message) < std::tie(b.where, b.message);
  });
  return s;
}

}  // namespace envlock
