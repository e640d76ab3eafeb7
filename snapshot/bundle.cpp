// Bundles: a snapshot plus every package archive and pip-installed file, in one .tar.zst, so a
// host without network can be deployed. Archives come from package folders or the prefix's pkgs/
// folders; a package whose archive is gone is re-packed from its installed files (conda-meta).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "text_util.hpp"
#include "envlock/encoding.hpp"
#include "envlock/install.hpp"
#include "envlock/extract.hpp"
#include "envlock/hash.hpp"
#include "envlock/record_path.hpp"
#include "envlock/snapshot.hpp"
#include "envlock/snapshot_deploy.hpp"
#include "envlock/work_folder.hpp"
#include "envlock/url.hpp"

namespace envlock {

namespace fs = std::filesystem;

namespace {


/// True when the archive at `path` is the one `record` names (sha256, else md5; a record with
/// neither is taken by its file name alone).
bool archive_matches(const fs::path& path, const RepoDataRecord& record) {
  if (record.sha256.empty() && record.md5.empty()) return true;
  const bool sha = !record.sha256.empty();
  const auto d = hash_file(path, sha ? HashAlgorithm::Sha256 : HashAlgorithm::Md5);
  return d && digest_equal(*d, sha ? record.sha256 : record.md5);
}

/// The archive of `record`: the first of `dirs/<fn>`, `<prefix>/pkgs/<fn>`, `<root>/pkgs/<fn>` (a
/// prefix in `<root>/envs/`) that exists and matches the record's hash.
std::optional<fs::path> find_archive(const Host& seam, const std::vector<fs::path>& dirs, const fs::path& prefix,
                                     const RepoDataRecord& record) {
  if (record.file_name.empty() || record.file_name.find('/') != std::string::npos) return std::nullopt;
  std::vector<fs::path> candidates;
  for (const auto& d : dirs) candidates.push_back(d / record.file_name);
  if (auto p = seam.resolve(prefix / "pkgs" / record.file_name)) candidates.push_back(*p);
  if (prefix.parent_path().filename() == "envs") {
    if (auto p = seam.resolve(prefix.parent_path().parent_path() / "pkgs" / record.file_name)) candidates.push_back(*p);
  }
  for (const auto& c : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(c, ec) && archive_matches(c, record)) return c;
  }
  return std::nullopt;
}

const char* path_type_name(PathEntry::Type t) {
  switch (t) {
    case PathEntry::Type::SoftLink: return "softlink";
    case PathEntry::Type::Directory: return "directory";
    default: return "hardlink";
  }
}

/// Re-packs `record` from the files installed in `local_prefix` (the host's `host_prefix`) into
/// `out` (a .conda). Every regular file is checked against the conda-meta sha256 first: a file
/// that changed since it was installed cannot be re-packed faithfully. The prefix-relative paths
/// in `leave_out` are not packed (files a pip RECORD lists: pip overwrote them, the bundle carries
/// pip's copy; files pip's uninstall removed from a shadowed record).
Status repack(const PrefixRecord& record, const fs::path& local_prefix, const std::string& host_prefix, const fs::path& out,
              const std::set<std::string>& leave_out) {
  // The prefix really written into the files: what envlock recorded when it installed them
  // (conda-meta/envlock "prefix"; a prefix moved since then still holds the old one), else the
  // captured prefix (an environment conda made).
  std::string placeholder = host_prefix;
  if (auto origin = read_prefix_origin(local_prefix); origin && *origin && !(*origin)->prefix.empty())
    placeholder = (*origin)->prefix;
  std::vector<ArchiveEntry> entries;
  nlohmann::json paths = nlohmann::json::array();
  std::vector<PathEntry> listed = record.paths;
  if (listed.empty()) {
    for (const auto& f : record.files) {
      PathEntry e;
      e.path = f;
      listed.push_back(std::move(e));
    }
  }
  const std::string dist = record.dist_name();
  for (const auto& e : listed) {
    if (e.type == PathEntry::Type::PycFile || e.type == PathEntry::Type::LinkedPackageRecord ||
        e.type == PathEntry::Type::WindowsPythonEntryPointExe || e.type == PathEntry::Type::WindowsPythonEntryPointScript) {
      continue;  // made at link time, not part of the package
    }
    const auto rel = normalize_relative(e.path);
    if (!rel || rel->starts_with("info/") || *rel == "info") {
      return Error{ErrorKind::Integrity, dist, "cannot re-pack: conda-meta lists the unsafe path \"" + e.path + "\"", "", ""};
    }
    if (leave_out.count(*rel) != 0) continue;
    const fs::path local = local_prefix / *rel;
    struct stat st {};
    if (::lstat(local.c_str(), &st) != 0) {
      return Error{ErrorKind::Io, (fs::path(host_prefix) / *rel).string(),
                   dist + ": its archive is in no package folder and this installed file is gone, so it cannot be re-packed", "",
                   "put the package archive into the package cache (or pass --pkgs-dir) and capture the bundle again"};
    }
    ArchiveEntry a;
    a.path = *rel;
    nlohmann::json pj{{"_path", *rel}};
    if (S_ISDIR(st.st_mode)) {
      a.kind = ArchiveEntry::Kind::Directory;
      a.mode = 0755;
      pj["path_type"] = "directory";
    } else if (S_ISLNK(st.st_mode)) {
      std::error_code ec;
      a.kind = ArchiveEntry::Kind::Symlink;
      a.link_target = fs::read_symlink(local, ec).string();
      if (ec || a.link_target.empty() || a.link_target.front() == '/') {
        return Error{ErrorKind::Integrity, (fs::path(host_prefix) / *rel).string(),
                     dist + ": cannot re-pack a symlink whose target is absolute or unreadable", "", ""};
      }
      pj["path_type"] = "softlink";
    } else if (S_ISREG(st.st_mode)) {
      a.source = local;
      a.mode = static_cast<std::uint32_t>(st.st_mode & 0755);
      pj["path_type"] = path_type_name(e.type == PathEntry::Type::UnixPythonEntryPoint ? PathEntry::Type::HardLink : e.type);
      pj["size_in_bytes"] = static_cast<std::uint64_t>(st.st_size);
      if (!e.sha256.empty()) {
        const auto d = hash_file(local, HashAlgorithm::Sha256);
        if (!d || !digest_equal(*d, e.sha256)) {
          return Error{ErrorKind::Integrity, (fs::path(host_prefix) / *rel).string(),
                       dist + ": its archive is in no package folder and this file changed since it was installed (sha256 " +
                           (d ? *d : std::string("unreadable")) + ", conda-meta " + e.sha256 + "), so it cannot be re-packed",
                       "", "put the package archive into the package cache (or pass --pkgs-dir) and capture the bundle again"};
        }
        pj["sha256"] = e.sha256;
      }
      if (!e.prefix_placeholder.empty()) {
        // The file holds the captured prefix where the package had its placeholder: the captured
        // prefix becomes the placeholder, so the installer relocates it to the new prefix.
        pj["prefix_placeholder"] = placeholder;
        pj["file_mode"] = e.file_mode == PathEntry::PlaceholderMode::Binary ? "binary" : "text";
      }
      if (e.no_link) pj["no_link"] = true;
    } else {
      return Error{ErrorKind::Integrity, (fs::path(host_prefix) / *rel).string(), dist + ": cannot re-pack a file that is not a regular file, symlink or folder", "", ""};
    }
    entries.push_back(std::move(a));
    paths.push_back(std::move(pj));
  }
  nlohmann::json index;
  static_cast<const PackageRecord&>(record).to_json(index);
  ArchiveEntry idx;
  idx.path = "info/index.json";
  idx.content = index.dump(2);
  entries.push_back(std::move(idx));
  ArchiveEntry pj;
  pj.path = "info/paths.json";
  pj.content = nlohmann::json{{"paths", paths}, {"paths_version", 1}}.dump(2);
  entries.push_back(std::move(pj));
  ArchiveEntry marker;
  marker.path = "info/envlock-repacked.json";
  marker.content = nlohmann::json{{"repacked_from", "installed files"}, {"placeholder", placeholder}}.dump(2);
  entries.push_back(std::move(marker));
  return write_conda_package(out, std::move(entries));
}

/// A lower-case hex digest as RECORD writes it: urlsafe base64 without padding (PEP 376/427).
std::string record_hash(const std::string& hex) { return record_sha256_field(hex); }

/// A pip distribution's direct_url.json whose URL carries credentials (a VCS install from
/// https://user:token@host/...) is bundled with them removed (redact_url), and its RECORD row
/// rewritten to the new hash and size, so the bundle holds no secret and the deployed
/// distribution still checks against its RECORD. Returns prefix-relative path -> bundled bytes
/// (empty when nothing needs rewriting) and updates `dist`'s file list to the bundled files.
Result<std::map<std::string, std::string>> redacted_pip_files(PipDistribution& dist, const fs::path& local_prefix) {
  std::map<std::string, std::string> out;
  const std::string direct_url = dist.dist_info + "/direct_url.json";
  const auto text = snapshot_detail::read_text(local_prefix / direct_url);
  if (!text) return out;
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("url") || !j["url"].is_string() || !url_has_credentials(j["url"].get<std::string>())) return out;
  j["url"] = redact_url(j["url"].get<std::string>());
  const std::string redacted = j.dump();
  const std::string site = dist.dist_info.substr(0, dist.dist_info.rfind('/'));
  RecordEntry* row = nullptr;
  for (auto& f : dist.files) {
    if (record_path_in_prefix(site, f.path, {}) == direct_url) row = &f;  // direct_url.json: a relative row
  }
  out[direct_url] = redacted;
  if (row == nullptr) return out;
  row->sha256 = hash_bytes(redacted, HashAlgorithm::Sha256);
  row->size = redacted.size();
  const std::string record_path = dist.dist_info + "/RECORD";
  const auto record = snapshot_detail::read_text(local_prefix / record_path);
  if (!record) return Error{ErrorKind::Io, (local_prefix / record_path).string(), "cannot read RECORD to rewrite its direct_url.json row", "", ""};
  std::string rewritten;
  std::size_t start = 0;
  while (start < record->size()) {
    auto end = record->find('\n', start);
    if (end == std::string::npos) end = record->size();
    std::string line = record->substr(start, end - start);
    const bool cr = !line.empty() && line.back() == '\r';
    if (cr) line.pop_back();
    if (line.starts_with(row->path + ",")) {
      line = row->path + "," + record_hash(row->sha256) + "," + std::to_string(redacted.size());
    }
    rewritten += line + (cr ? "\r\n" : "\n");
    start = end + 1;
  }
  out[record_path] = rewritten;
  return out;
}

}  // namespace

Result<BundleReport> write_bundle(const Host& seam, const Snapshot& snapshot, const fs::path& bundle, const BundleOptions& options) {
  Snapshot snap = snapshot;
  BundleReport report;
  std::vector<ArchiveEntry> entries;
  std::error_code ec;
  const fs::path parent = bundle.has_parent_path() ? bundle.parent_path() : fs::path(".");
  // `.<bundle>.repack-<pid>`: re-packed archives; one a killed capture left is removed (work_folder.hpp).
  auto work_folder = WorkFolder::create(parent, "." + bundle.filename().string() + ".repack-");
  if (!work_folder) return work_folder.error();
  const fs::path& work = work_folder->path();
  std::set<std::string> archived;  // bundle paths already added (two environments may share a package)

  for (auto& env : snap.environments) {
    const auto local_prefix = seam.resolve(env.prefix);
    if (!local_prefix) {
      return Error{ErrorKind::Io, env.prefix, "the captured prefix cannot be read any more", "", "capture it again"};
    }
    std::optional<std::vector<PrefixRecord>> meta;  // read once, when a package needs re-packing
    // What a re-pack leaves out: the files pip's RECORDs list (pip's copies are bundled below).
    std::set<std::string> pip_owned;
    for (const auto& d : env.pip) {
      const std::string site = d.dist_info.substr(0, d.dist_info.rfind('/'));
      for (const auto& f : d.files) {
        if (const auto rel = record_path_in_prefix(site, f.path, env.prefix)) pip_owned.insert(*rel);
      }
    }
    // Every record, shadowed ones included: deploy installs them, then pip's files over them.
    for (auto& p : env.packages) {
      if (auto found = find_archive(seam, options.package_dirs, env.prefix, p.record)) {
        const std::string at = "pkgs/" + p.record.file_name;
        if (archived.insert(at).second) {
          ArchiveEntry a;
          a.path = at;
          a.source = *found;
          entries.push_back(std::move(a));
          ++report.archives;
        }
        continue;
      }
      if (!meta) {
        auto records = read_conda_meta(*local_prefix);
        if (!records) return records.error();
        meta = std::move(*records);
      }
      const auto rec = std::find_if(meta->begin(), meta->end(), [&](const PrefixRecord& r) { return r.name == p.record.name; });
      if (rec == meta->end()) {
        return Error{ErrorKind::Io, env.prefix, p.record.dist_name() + ": its archive is in no package folder and its conda-meta record is gone", "",
                     "put the package archive into the package cache (or pass --pkgs-dir) and capture again"};
      }
      fs::create_directories(work / env.name, ec);
      const fs::path out = work / env.name / (p.record.dist_name() + ".conda");
      std::set<std::string> leave_out = pip_owned;
      if (const auto gone = env.drift.missing.find(p.record.name); !p.shadowed_by.empty() && gone != env.drift.missing.end()) {
        leave_out.insert(gone->second.begin(), gone->second.end());  // pip's uninstall removed them
      }
      if (auto st = repack(*rec, *local_prefix, env.prefix, out, leave_out); !st) return st.error();
      auto d = hash_file(out, HashAlgorithm::Sha256);
      if (!d) return d.error();
      p.repacked_sha256 = *d;
      ArchiveEntry a;
      a.path = "repacked/" + env.name + "/" + p.record.dist_name() + ".conda";
      a.source = out;
      entries.push_back(std::move(a));
      report.repacked.push_back(env.name + ": " + p.record.dist_name());
    }
    // pip-installed files, by prefix-relative path.
    for (auto& d : env.pip) {
      auto rewritten = redacted_pip_files(d, *local_prefix);
      if (!rewritten) return rewritten.error();
      const std::string site = d.dist_info.substr(0, d.dist_info.rfind('/'));
      for (const auto& f : d.files) {
        const auto rel = record_path_in_prefix(site, f.path, env.prefix);
        if (!rel || rel->ends_with(".pyc") || rel->find("__pycache__/") != std::string::npos) continue;
        const std::string at = "pip/" + env.name + "/" + *rel;
        if (!archived.insert(at).second) continue;
        const fs::path local = *local_prefix / *rel;
        struct stat st {};
        if (::lstat(local.c_str(), &st) != 0) {
          return Error{ErrorKind::Io, (fs::path(env.prefix) / *rel).string(), "pip:" + d.name + " " + d.version + ": the installed file is gone", "",
                       "reinstall the distribution and capture again"};
        }
        ArchiveEntry a;
        a.path = at;
        if (const auto r = rewritten->find(*rel); r != rewritten->end()) {
          a.content = r->second;
          a.mode = static_cast<std::uint32_t>(st.st_mode & 0755);
        } else if (S_ISLNK(st.st_mode)) {
          a.kind = ArchiveEntry::Kind::Symlink;
          a.link_target = fs::read_symlink(local, ec).string();
        } else {
          a.source = local;
          a.mode = static_cast<std::uint32_t>(st.st_mode & 0755);
        }
        entries.push_back(std::move(a));
        ++report.pip_files;
      }
    }
    std::sort(report.repacked.begin(), report.repacked.end());
  }
  ArchiveEntry s;
  s.path = "snapshot.yaml";
  s.content = snap.to_yaml();
  entries.push_back(std::move(s));
  if (auto st = write_tar_zst(bundle, std::move(entries), options.zstd_level); !st) return st.error();
  report.snapshot = std::move(snap);
  return report;
}

Result<Snapshot> open_bundle(const fs::path& bundle, const fs::path& into) {
  auto x = extract_tar_zst_into(bundle, into);
  if (!x) return x.error();
  std::error_code ec;
  if (!fs::is_regular_file(into / "snapshot.yaml", ec)) {
    return Error{ErrorKind::Integrity, bundle.string(), "not an envlock bundle: it holds no snapshot.yaml", "",
                 "make one with `envlock snapshot capture --bundle FILE.tar.zst`"};
  }
  auto snap = Snapshot::read(into / "snapshot.yaml");
  if (!snap) {
    // Named as the bundle and its member ("host.tar.zst: snapshot.yaml:55:17"), never the
    // temporary folder it was unpacked into (gone by the time the user reads the message).
    Error e = snap.error();
    const std::string unpacked = (into / "snapshot.yaml").string();
    if (e.where.starts_with(unpacked)) e.where = "snapshot.yaml" + e.where.substr(unpacked.size());
    e.where = bundle.string() + ": " + e.where;
    e.message = "the bundle is damaged: " + e.message;
    e.hint = "the bundle's snapshot.yaml does not read; copy the bundle again or capture a new one with "
             "`envlock snapshot capture --bundle FILE.tar.zst`";
    return e;
  }
  return snap;
}

}  // namespace envlock
