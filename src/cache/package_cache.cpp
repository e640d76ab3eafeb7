// package_cache.cpp — see envlock/package_cache.hpp for the layout and the contract.
#include "envlock/package_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <signal.h>
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "envlock/atomic_file.hpp"
#include "envlock/hash.hpp"
#include "envlock/input_file.hpp"
#include "envlock/paths.hpp"
#include "envlock/settings.hpp"
#include "envlock/text.hpp"
#include "envlock/url.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Format 2 records whether the package had info/paths.json, and the files extracted when it had
// none (old packages list only info/files): a format-1 entry is extracted again.
constexpr int kMarkerFormat = 2;
constexpr const char* kMarker = "info/envlock_cache.json";
constexpr const char* kRepodataRecord = "info/repodata_record.json";

/// An exclusive flock(2) on `<root>/<dist>.lock`, released by the destructor.
class EntryLock {
 public:
  EntryLock() = default;
  ~EntryLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  EntryLock(EntryLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  EntryLock& operator=(EntryLock&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  EntryLock(const EntryLock&) = delete;
  EntryLock& operator=(const EntryLock&) = delete;

  /// A shared flock on an existing lock file of a read-only cache, never waited for: nullopt when
  /// another process holds it exclusively (it is changing the entry: skip it; waiting while
  /// holding our own locks could deadlock with a process whose writable folder this is). No
  /// lock file: an unlocked EntryLock (a cache made read-only by its owner is not being changed).
  static std::optional<EntryLock> shared_if_free(const fs::path& path) {
    EntryLock l;
    l.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (l.fd_ < 0) return l;
    int r = 0;
    while ((r = ::flock(l.fd_, LOCK_SH | LOCK_NB)) != 0 && errno == EINTR) {
    }
    if (r != 0) return std::nullopt;
    return l;
  }

  /// The exclusive flock, never waited for (clean_caches): nullopt when another process holds the
  /// entry's lock. A missing lock file is created only with `create` (else: an unlocked EntryLock,
  /// nobody uses an entry without creating its lock file first).
  static std::optional<EntryLock> exclusive_if_free(const fs::path& path, bool create) {
    EntryLock l;
    l.fd_ = ::open(path.c_str(), create ? (O_RDWR | O_CREAT | O_CLOEXEC) : (O_RDONLY | O_CLOEXEC), 0644);
    if (l.fd_ < 0) return l;
    int r = 0;
    while ((r = ::flock(l.fd_, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
    }
    if (r != 0) return std::nullopt;
    return l;
  }

  static Result<EntryLock> acquire(const fs::path& path) {
    EntryLock l;
    l.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (l.fd_ < 0) {
      return Error{ErrorKind::Io, path.string(), std::string("cannot open cache lock file: ") + std::strerror(errno),
                   "", "check that the package cache folder is writable (ENVLOCK_PKGS_DIR picks another)"};
    }
    while (::flock(l.fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        return Error{ErrorKind::Io, path.string(), std::string("cannot lock cache entry: ") + std::strerror(errno)};
      }
    }
    return l;
  }

 private:
  int fd_ = -1;
};

std::string file_name_of(const RepoDataRecord& r) {
  if (!r.file_name.empty()) return r.file_name;
  std::string_view u = r.url;
  u = u.substr(0, u.find_first_of("?#"));
  const auto slash = u.rfind('/');
  return std::string(slash == std::string_view::npos ? u : u.substr(slash + 1));
}

std::string strip_extension(const std::string& file_name) {
  for (std::string_view ext : {".conda", ".tar.bz2"}) {
    if (file_name.size() > ext.size() && file_name.compare(file_name.size() - ext.size(), ext.size(), ext) == 0) {
      return file_name.substr(0, file_name.size() - ext.size());
    }
  }
  return file_name;
}

/// What one record means for the cache.
struct Plan {
  std::string file_name;
  std::string dist;
  fs::path archive;
  fs::path dir;
  fs::path lock;
};

Result<Plan> plan_for(const fs::path& root, const RepoDataRecord& r) {
  Plan p;
  p.file_name = file_name_of(r);
  const std::string where = p.file_name.empty() ? r.name : p.file_name;
  if (r.url.empty()) {
    return Error{ErrorKind::Usage, where, "package record without a download URL", "",
                 "the lockfile or repodata entry is incomplete; lock again"};
  }
  if (p.file_name.empty() || !archive_format(p.file_name) || p.file_name.find('/') != std::string::npos ||
      p.file_name.front() == '.') {
    return Error{ErrorKind::Parse, where.empty() ? redact_url(r.url) : where,
                 "not a conda package file name (expected <name>-<version>-<build>.conda or .tar.bz2)"};
  }
  p.dist = strip_extension(p.file_name);
  // The cache names an entry by its file name without the extension, beside `<dist>.lock` and the
  // archive: a file name that is not the record's own `<name>-<version>-<build>` could take the
  // place of another entry's lock file (`x-1-0.lock.tar.bz2`) or archive (`x-1-0.tar.bz2.conda`)
  // and break every later install of that package from a shared cache. conda and rattler name
  // cache entries the same way; repodata's `fn` is always the record's identity.
  const std::string identity = r.dist_name();
  if (p.dist != identity) {
    return Error{ErrorKind::Parse, where.empty() ? redact_url(r.url) : where,
                 "the file name is not the record's " + identity + ".conda or .tar.bz2",
                 "", "the lockfile's url (or file_name) does not match its name, version and build; lock again"};
  }
  p.archive = root / p.file_name;
  p.dir = root / p.dist;
  p.lock = root / (p.dist + ".lock");
  return p;
}

std::optional<json> read_json(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return std::nullopt;
  // Parsed from memory: nlohmann's stream input reads a character at a time (3x slower).
  std::ostringstream text;
  text << f.rdbuf();
  json j = json::parse(text.view(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

/// The marker agrees with the record: same archive by the strongest digest the record carries.
bool marker_matches(const json& m, const Plan& p, const RepoDataRecord& r) {
  if (m.value("format", 0) != kMarkerFormat || m.value("file_name", "") != p.file_name) return false;
  const std::string sha = m.value("archive_sha256", "");
  const std::string md5 = m.value("archive_md5", "");
  if (!r.sha256.empty()) return digest_equal(sha, r.sha256);
  if (!r.md5.empty()) return digest_equal(md5, r.md5);
  if (r.size) return m.value("archive_size", std::uint64_t{0}) == *r.size;
  return true;
}

/// A JSON value as an unsigned size; nullopt for anything else (a damaged file has any shape).
std::optional<std::uint64_t> as_size(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return std::nullopt;
  return it->get<std::uint64_t>();
}

std::string as_string(const json& j, const char* key, const std::string& fallback = "") {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

/// A path listed by the package (paths.json or the marker) that stays inside the entry.
bool inside_entry(const std::string& rel) {
  if (rel.empty() || rel.front() == '/') return false;
  for (const auto& part : fs::path(rel)) {
    if (part == "..") return false;
  }
  return true;
}

/// One listed file against the folder: exists as the kind listed, with the size (and sha256
/// when `hashes`) recorded. Returns how it differs ("is 14 bytes, listed as 6"), or nothing.
std::optional<std::string> file_difference(const fs::path& dir, const std::string& rel, const std::string& type,
                                           std::optional<std::uint64_t> size, const std::string& sha256,
                                           bool hashes) {
  if (!inside_entry(rel)) return "is not a path inside the package";
  const fs::path f = dir / rel;
  struct stat st {};
  if (::lstat(f.c_str(), &st) != 0) return "is missing";
  // A symlink with an empty target is extracted as an empty file (envlock/extract.hpp).
  if (type == "softlink") {
    if (S_ISLNK(st.st_mode) || (S_ISREG(st.st_mode) && st.st_size == 0)) return std::nullopt;
    return "is not a symbolic link, listed as one";
  }
  if (type == "directory") {
    if (S_ISDIR(st.st_mode)) return std::nullopt;
    return "is not a folder, listed as one";
  }
  if (!S_ISREG(st.st_mode)) return "is not a regular file, listed as one";
  if (size && static_cast<std::uint64_t>(st.st_size) != *size)
    return "is " + std::to_string(st.st_size) + " bytes, listed as " + std::to_string(*size);
  if (hashes && !sha256.empty()) {
    auto h = hash_file(f, HashAlgorithm::Sha256);
    if (!h.ok() || !digest_equal(*h, sha256)) return "has another sha256 than listed";
  }
  return std::nullopt;
}

/// The first file the package lists that is not there as extracted ("PATH REASON"), or nothing:
/// info/paths.json's entries (size, and sha256 with `hashes`), or for a package without
/// paths.json the files the marker recorded.
std::optional<std::string> first_difference(const fs::path& dir, const json& marker, bool hashes) {
  if (marker.value("has_paths_json", true)) {
    auto pj = read_json(dir / "info/paths.json");
    if (!pj) return "info/paths.json is missing or damaged";  // listed by the package, now gone or damaged
    const auto it = pj->find("paths");
    if (it == pj->end() || !it->is_array()) return "info/paths.json has no \"paths\" list";
    for (const auto& e : *it) {
      if (!e.is_object()) return "info/paths.json has an entry that is not an object";
      const std::string rel = as_string(e, "_path");
      if (auto why = file_difference(dir, rel, as_string(e, "path_type", "hardlink"), as_size(e, "size_in_bytes"),
                                     as_string(e, "sha256"), hashes))
        return rel + " " + *why + " (info/paths.json)";
    }
    return std::nullopt;
  }
  const auto it = marker.find("files");
  if (it == marker.end() || !it->is_object()) return "the cache marker lists no files";
  for (const auto& [rel, size] : it->items()) {
    if (!size.is_number_unsigned()) return "the cache marker's entry for " + rel + " is not a size";
    if (auto why = file_difference(dir, rel, "hardlink", size.get<std::uint64_t>(), "", false)) return rel + " " + *why;
  }
  return std::nullopt;
}

std::optional<CacheEntry> valid_entry(const Plan& p, const RepoDataRecord& r, CacheValidation v) {
  auto m = read_json(p.dir / kMarker);
  if (!m || !marker_matches(*m, p, r)) return std::nullopt;
  if (v != CacheValidation::Marker && first_difference(p.dir, *m, v == CacheValidation::Hashes)) return std::nullopt;
  CacheEntry e;
  e.dist_name = p.dist;
  e.archive = p.archive;
  e.extracted_dir = p.dir;
  e.sha256 = m->value("archive_sha256", "");
  e.size = m->value("archive_size", std::uint64_t{0});
  e.origin = CacheOrigin::Hit;
  return e;
}

/// The cached archive, when it is there and matches the record.
std::optional<FileDigests> verified_archive(const Plan& p, const RepoDataRecord& r) {
  std::error_code ec;
  if (!fs::is_regular_file(p.archive, ec)) return std::nullopt;
  const auto size = fs::file_size(p.archive, ec);
  if (ec || (r.size && size != *r.size)) return std::nullopt;
  if (!r.sha256.empty() && !r.md5.empty()) {
    // One pass of the stronger digest; the record's md5 describes the same bytes.
    auto sha = hash_file(p.archive, HashAlgorithm::Sha256);
    if (!sha.ok() || !digest_equal(*sha, r.sha256)) return std::nullopt;
    return FileDigests{size, *sha, ascii_lower(r.md5)};
  }
  auto d = digest_file(p.archive);
  if (!d.ok()) return std::nullopt;
  if (!r.sha256.empty() && !digest_equal(d->sha256, r.sha256)) return std::nullopt;
  if (r.sha256.empty() && !r.md5.empty() && !digest_equal(d->md5, r.md5)) return std::nullopt;
  return *d;
}

/// A metadata file of a cache entry being staged: atomic, unsynced (an entry a crash damages is
/// rebuilt, docs/cache.md), never written through a link.
Status write_entry_file(const fs::path& path, std::string_view text) {
  return write_file_atomic(path, text, {.mode = 0644, .follow_symlink = false, .sync = false});
}

/// Removes staging folders (`.<dist>.extracting-*`) a killed process left for any of `dists`, in
/// one pass over the cache folder. The caller holds the locks of all of them.
void remove_staging_debris(const fs::path& root, const std::set<std::string>& dists) {
  if (dists.empty()) return;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string n = e.path().filename().string();
    const auto mark = n.find(".extracting-");
    if (n.size() < 2 || n.front() != '.' || mark == std::string::npos) continue;
    if (dists.count(n.substr(1, mark - 1)) != 0) fs::remove_all(e.path(), ec);
  }
}

/// Removes an extracted folder that failed validation (unmarked, other archive, damaged).
void clear_for_extraction(const Plan& p) {
  std::error_code ec;
  fs::remove_all(p.dir, ec);
}

/// The marker of a freshly extracted folder: the archive it came from, and whether the package
/// has info/paths.json; without one, every regular file extracted with its size (what a later
/// CacheValidation::Files check compares).
json make_marker(const fs::path& staging, const Plan& p, const FileDigests& d) {
  json marker = {{"format", kMarkerFormat}, {"file_name", p.file_name}, {"archive_sha256", d.sha256},
                 {"archive_md5", d.md5}, {"archive_size", d.size}};
  std::error_code ec;
  const bool has_paths = fs::is_regular_file(staging / "info/paths.json", ec);
  marker["has_paths_json"] = has_paths;
  if (!has_paths) {
    json files = json::object();
    for (fs::recursive_directory_iterator it(staging, ec), end; !ec && it != end; it.increment(ec)) {
      if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
      const std::string rel = it->path().lexically_relative(staging).generic_string();
      if (rel == kMarker || rel == kRepodataRecord) continue;
      files[rel] = static_cast<std::uint64_t>(it->file_size(ec));
    }
    marker["files"] = std::move(files);
  }
  return marker;
}

/// Extracts the verified archive `source` (in this cache, or in a read-only one) into place with
/// the marker and repodata_record.json.
Result<CacheEntry> extract_entry(const Plan& p, const fs::path& source, const RepoDataRecord& r, const FileDigests& d,
                                 CacheOrigin origin, const ExtractLimits& limits) {
  clear_for_extraction(p);
  auto stats = extract_package(source, p.dir, limits, [&](const fs::path& staging) -> Status {
    json rec;
    r.to_json(rec);
    rec["url"] = redact_url(r.url);
    if (!r.channel.empty()) rec["channel"] = redact_url(r.channel);
    rec["fn"] = p.file_name;
    rec["sha256"] = d.sha256;
    rec["md5"] = d.md5;
    rec["size"] = d.size;
    if (auto s = write_entry_file(staging / kRepodataRecord, rec.dump(1) + "\n"); !s.ok()) return s;
    json marker = make_marker(staging, p, d);
    // The package as extracted against its own info/paths.json (sizes): an archive that says one
    // thing and holds another (a tar member given twice, a truncated member) is refused here, not
    // found by `verify` after it was installed. conda warns (safety_checks: warn, its default)
    // and installs; envlock refuses, as conda does with safety_checks: enabled.
    if (marker.value("has_paths_json", false))
      if (auto why = first_difference(staging, marker, false)) {
        return Error{ErrorKind::Integrity, "", "does not hold what its info/paths.json lists: " + *why, "",
                     "the package is broken at its source: rebuild it, or ask the channel's maintainers for a fixed "
                     "build"};
      }
    return write_entry_file(staging / kMarker, marker.dump(1) + "\n");
  });
  if (!stats.ok()) {
    // A verified archive that does not extract is bad at the source: keep nothing of it (a
    // read-only cache's copy is left alone).
    std::error_code ec;
    if (source == p.archive) fs::remove(p.archive, ec);
    return stats.error().with_context(p.file_name);
  }
  CacheEntry e;
  e.dist_name = p.dist;
  e.archive = source;
  e.extracted_dir = p.dir;
  e.sha256 = d.sha256;
  e.size = d.size;
  e.origin = origin;
  return e;
}

}  // namespace

Result<std::vector<fs::path>> default_package_cache_dirs() {
  const std::string list = settings().pkgs_dirs;
  if (list.empty()) {
    auto one = package_cache_dir();  // envlock/paths.hpp: the one place the folder is decided
    if (!one.ok()) return one.error();
    return std::vector<fs::path>{*one};
  }
  std::vector<fs::path> dirs;
  std::size_t i = 0;
  while (i <= list.size()) {
    std::size_t j = list.find(',', i);
    if (j == std::string::npos) j = list.size();
    const std::string item = list.substr(i, j - i);
    if (!item.empty()) {
      if (item.front() != '/') {
        return Error{ErrorKind::Usage, "ENVLOCK_PKGS_DIRS", "'" + item + "' is not an absolute path", "",
                     "list absolute folders, separated by commas (as CONDA_PKGS_DIRS)"};
      }
      dirs.emplace_back(item);
    }
    i = j + 1;
  }
  if (dirs.empty()) {
    return Error{ErrorKind::Usage, "ENVLOCK_PKGS_DIRS", "names no folder", "", "list absolute folders, separated by commas"};
  }
  return dirs;
}

bool package_cache_folder_writable(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || ::access(dir.c_str(), W_OK) != 0) return false;
  if (::geteuid() != 0) return true;
  return (st.st_mode & (st.st_uid == 0 ? S_IWUSR : (S_IWUSR | S_IWGRP | S_IWOTH))) != 0;
}

Result<PackageCache> PackageCache::open(const fs::path& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec || !fs::is_directory(root)) {
    return Error{ErrorKind::Io, root.string(), "cannot create the package cache folder: " + ec.message(), "",
                 "set ENVLOCK_PKGS_DIR to a writable folder"};
  }
  return PackageCache(fs::absolute(root), {fs::absolute(root)});
}

Result<PackageCache> PackageCache::open(const std::vector<fs::path>& dirs) {
  if (dirs.empty()) return Error{ErrorKind::Usage, "", "no package cache folder given"};
  std::vector<fs::path> all;
  fs::path root;
  for (const auto& d : dirs) {
    const fs::path a = fs::absolute(d).lexically_normal();
    if (std::find(all.begin(), all.end(), a) != all.end()) continue;
    std::error_code ec;
    if (root.empty()) {
      // The first folder envlock may write, created when missing (conda's first writable pkgs_dir).
      if (!fs::exists(a, ec)) {
        fs::create_directories(a, ec);
        if (!ec && package_cache_folder_writable(a)) root = a;
      } else if (package_cache_folder_writable(a)) {
        root = a;
      }
    }
    if (fs::is_directory(a, ec)) all.push_back(a);
  }
  if (all.empty()) {
    return Error{ErrorKind::Io, dirs.front().string(), "none of the package cache folders exists or can be created", "",
                 "check ENVLOCK_PKGS_DIRS"};
  }
  return PackageCache(root, std::move(all));
}

Result<PackageCache> PackageCache::open_default() {
  if (!settings().pkgs_dirs.empty()) {
    auto dirs = default_package_cache_dirs();
    if (!dirs.ok()) return dirs.error();
    return open(*dirs);
  }
  auto dir = package_cache_dir();
  if (!dir.ok()) return dir.error();
  return open(*dir);
}

namespace {

/// The valid entry for `r` in the first of `dirs` that holds one. The writable `root`'s entry
/// lock is held by the caller; a read-only folder's is taken shared when it has one.
std::optional<CacheEntry> find_valid(const std::vector<fs::path>& dirs, const fs::path& root, const Plan& in_root,
                                     const RepoDataRecord& r, CacheValidation v) {
  for (const auto& d : dirs) {
    if (d == root) {
      if (auto e = valid_entry(in_root, r, v)) return e;
      continue;
    }
    auto q = plan_for(d, r);
    if (!q.ok()) return std::nullopt;
    const auto shared = EntryLock::shared_if_free(q->lock);
    if (!shared) continue;
    if (auto e = valid_entry(*q, r, v)) return e;
  }
  return std::nullopt;
}

/// The first archive of `dirs` (the writable root's first) that matches the record, and its digests.
std::optional<std::pair<fs::path, FileDigests>> find_archive(const std::vector<fs::path>& dirs, const fs::path& root,
                                                             const Plan& in_root, const RepoDataRecord& r) {
  if (!root.empty()) {
    if (auto d = verified_archive(in_root, r)) return std::make_pair(in_root.archive, *d);
  }
  for (const auto& dir : dirs) {
    if (dir == root) continue;
    auto q = plan_for(dir, r);
    if (!q.ok()) return std::nullopt;
    const auto shared = EntryLock::shared_if_free(q->lock);
    if (!shared) continue;
    if (auto d = verified_archive(*q, r)) return std::make_pair(q->archive, *d);
  }
  return std::nullopt;
}

}  // namespace

std::optional<CacheEntry> PackageCache::lookup(const RepoDataRecord& record, CacheValidation validation) const {
  auto p = plan_for(home(), record);
  if (!p.ok()) return std::nullopt;
  EntryLock lock;
  if (!root_.empty()) {
    auto l = EntryLock::acquire(p->lock);
    if (!l.ok()) return std::nullopt;
    lock = std::move(*l);
  }
  try {
    return find_valid(dirs_, root_, *p, record, validation);
  } catch (const std::exception&) {  // a damaged marker of the wrong shape (nlohmann type_error)
    return std::nullopt;
  }
}

Result<CacheEntry> PackageCache::ensure(const RepoDataRecord& record, const CacheOptions& options) {
  auto all = ensure_all({record}, options);
  return std::move(all.front());
}

Status PackageCache::remove(const RepoDataRecord& record) {
  if (root_.empty()) return no_writable_folder(record.file_name);
  auto p = plan_for(root_, record);
  if (!p.ok()) return p.error();
  auto lock = EntryLock::acquire(p->lock);
  if (!lock.ok()) return lock.error();
  std::error_code ec;
  fs::remove(p->archive, ec);
  fs::remove(partial_path(p->archive), ec);
  clear_for_extraction(*p);
  remove_staging_debris(root_, {p->dist});
  if (fs::exists(p->dir) || fs::exists(p->archive)) {
    return Error{ErrorKind::Io, p->dir.string(), "cannot remove cache entry: " + ec.message()};
  }
  return ok_status();
}

Error PackageCache::no_writable_folder(const std::string& what) const {
  std::string listed;
  for (const auto& d : dirs_) listed += (listed.empty() ? "" : ", ") + d.string();
  return Error{ErrorKind::Io, what, "no package cache folder is writable (read-only: " + listed + ")", "",
               "add a writable folder to ENVLOCK_PKGS_DIRS (the first writable one gets new packages)"};
}

namespace {

/// Threads for `jobs` independent entries: CacheOptions::extract_threads, else one per core.
std::size_t entry_threads(const CacheOptions& options, std::size_t jobs) {
  const std::size_t threads = options.extract_threads != 0 ? options.extract_threads
                                                           : std::max(1u, std::thread::hardware_concurrency());
  return std::min(threads, jobs);
}

/// Runs body(0..n-1) on `threads` threads (the calling one when threads <= 1).
template <class Body>
void parallel_for(std::size_t n, std::size_t threads, const Body& body) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t k = next++; k < n; k = next++) body(k);
  };
  if (threads <= 1) {
    worker();
    return;
  }
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
}

}  // namespace

std::vector<Result<CacheEntry>> PackageCache::ensure_all(const std::vector<RepoDataRecord>& records,
                                                         const CacheOptions& options) {
  std::vector<std::optional<Result<CacheEntry>>> results(records.size());
  // One piece of work per distinct entry; duplicates share it.
  std::map<std::string, std::vector<std::size_t>> by_dist;  // sorted: the lock order
  std::vector<Plan> plans(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    auto p = plan_for(home(), records[i]);
    if (!p.ok()) {
      results[i] = p.error();
      continue;
    }
    plans[i] = *p;
    by_dist[p->dist].push_back(i);
  }

  std::vector<EntryLock> locks;
  locks.reserve(by_dist.size());
  struct Job {
    std::size_t first;  // the representative record
    fs::path source;    // the verified archive to extract
    FileDigests digests;
    CacheOrigin origin = CacheOrigin::Extracted;
  };
  std::vector<Job> to_extract;
  std::vector<std::size_t> to_download;
  std::vector<std::size_t> locked;  // representatives whose lock is held (or, without a writable folder, all)
  for (const auto& [dist, idx] : by_dist) {
    const std::size_t i = idx.front();
    if (!root_.empty()) {
      auto lock = EntryLock::acquire(plans[i].lock);
      if (!lock.ok()) {
        results[i] = lock.error().with_context(plans[i].file_name);
        continue;
      }
      locks.push_back(std::move(*lock));
    }
    locked.push_back(i);
  }
  // Checking the entries (a stat per cached file with CacheValidation::Files) is independent per
  // entry: in parallel, each under its lock. Every folder is searched in order (pkgs_dirs).
  std::vector<std::optional<CacheEntry>> hits(locked.size());
  parallel_for(locked.size(), entry_threads(options, locked.size()), [&](std::size_t k) {
    try {
      hits[k] = find_valid(dirs_, root_, plans[locked[k]], records[locked[k]], options.validation);
    } catch (const std::exception&) {  // a marker of the wrong shape (nlohmann type_error): extract again
      hits[k].reset();
    }
  });
  for (std::size_t k = 0; k < locked.size(); ++k) {
    const std::size_t i = locked[k];
    if (hits[k]) {
      results[i] = std::move(*hits[k]);
    } else if (root_.empty()) {
      results[i] = no_writable_folder(plans[i].file_name);
    } else if (auto a = find_archive(dirs_, root_, plans[i], records[i])) {
      to_extract.push_back({i, a->first, a->second, CacheOrigin::Extracted});
    } else {
      // A cached archive that does not match the record is left in place: the download replaces
      // it only when the new bytes match (a lockfile with a wrong hash never deletes a good one).
      to_download.push_back(i);
    }
  }

  if (!to_download.empty()) {
    std::vector<FetchRequest> reqs;
    reqs.reserve(to_download.size());
    std::vector<std::size_t> fetching;
    for (std::size_t i : to_download) {
      // A local package is read only where read_input_file() reads (attack 22 A9, as pip install's
      // wheels): a file:// url that is, or links into, /proc, /sys or /dev is refused unread, so no
      // digest or size of /proc/self/environ reaches the mismatch error.
      // (A FIFO or device is fetch's to refuse, naming what it is.)
      if (std::string_view(records[i].url).starts_with("file:")) {
        struct stat st {};
        if (auto local = path_from_file_url(records[i].url); local && ::stat(local->c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
          if (const std::string why = system_file_refusal(*local); !why.empty()) {
            results[i] = Error{ErrorKind::Io, plans[i].file_name, "its url " + records[i].url + " " + why, "",
                               "a locked package's url names a package file of a channel or a download"};
            continue;
          }
        }
      }
      fetching.push_back(i);
    }
    to_download = std::move(fetching);
    for (std::size_t i : to_download) {
      FetchRequest q;
      q.url = records[i].url;
      q.destination = plans[i].archive;
      q.sha256 = records[i].sha256;
      q.md5 = records[i].md5;
      q.size = records[i].size;
      q.label = plans[i].file_name;
      reqs.push_back(std::move(q));
    }
    auto fetched = fetch_all(reqs, options.fetch);
    for (std::size_t k = 0; k < to_download.size(); ++k) {
      const std::size_t i = to_download[k];
      if (!fetched[k].ok()) {
        results[i] = fetched[k].error();
        continue;
      }
      FileDigests d{fetched[k]->size, fetched[k]->sha256, fetched[k]->md5};
      if (d.md5.empty()) {
        // repodata_record.json carries the md5 as conda's does. fetch verified the sha256, so the
        // record's md5 describes these bytes; only a record without one costs another pass.
        if (!records[i].md5.empty()) {
          d.md5 = ascii_lower(records[i].md5);
        } else if (auto md5 = hash_file(plans[i].archive, HashAlgorithm::Md5); md5.ok()) {
          d.md5 = *md5;
        }
      }
      to_extract.push_back({i, plans[i].archive, d, CacheOrigin::Downloaded});
    }
  }

  std::set<std::string> extracting;
  for (const Job& job : to_extract) extracting.insert(plans[job.first].dist);
  if (!root_.empty()) remove_staging_debris(root_, extracting);

  // Extract in parallel; each job owns a distinct entry (and holds its lock already).
  parallel_for(to_extract.size(), entry_threads(options, to_extract.size()), [&](std::size_t k) {
    const Job& job = to_extract[k];
    results[job.first] =
        extract_entry(plans[job.first], job.source, records[job.first], job.digests, job.origin, options.limits);
  });
  locks.clear();

  for (std::size_t i = 0; i < records.size(); ++i) {
    // A duplicate of an earlier record gets the representative's result.
    if (!results[i]) results[i] = *results[by_dist[plans[i].dist].front()];
  }
  std::vector<Result<CacheEntry>> out;
  out.reserve(records.size());
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

namespace {

/// Size of every regular file under `p` (or of `p` itself), not following symbolic links.
std::uint64_t tree_bytes(const fs::path& p) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return S_ISREG(st.st_mode) ? static_cast<std::uint64_t>(st.st_size) : 0;
  std::uint64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (::lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) total += static_cast<std::uint64_t>(st.st_size);
  }
  return total;
}

/// Whether a regular file under `dir` has another hard link (conda clean's test for a package in
/// use), not counting the links `going` says are about to go (gc_package_cache()).
bool has_linked_file(const fs::path& dir, const LinksGoing& going = {}) {
  std::error_code ec;
  struct stat st {};
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink <= 1) continue;
    const auto gone = going.find({static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)});
    if (st.st_nlink > 1 + (gone == going.end() ? 0 : gone->second)) return true;
  }
  return false;
}

/// A repodata cache file some process is writing now: a `.tmp-<pid>` of a live process, or a
/// `.download` changed in the last 10 minutes (a transfer in progress).
bool being_written(const fs::path& p) {
  const std::string n = p.filename().string();
  if (const auto at = n.rfind(".tmp-"); at != std::string::npos) {
    const std::string pid = n.substr(at + 5);
    if (!pid.empty() && pid.size() < 10 && std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return ::kill(static_cast<pid_t>(std::stol(pid)), 0) == 0 || errno == EPERM;
  }
  if (n.ends_with(".download")) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && st.st_mtime + 600 > ::time(nullptr);
  }
  return false;
}

bool remove_path(const fs::path& p, CacheCleanReport& report) {
  std::error_code ec;
  fs::remove_all(p, ec);
  if (ec) report.failures.push_back(Error{ErrorKind::Io, p.string(), "cannot remove: " + ec.message()});
  return !ec;
}

/// Counts `path` (its size, tree_bytes) into `u`; with CleanMode::Remove deletes it first, and
/// what could not be deleted is a failure, not counted as removed.
void count_item(CacheKindUsage& u, const fs::path& path, CleanMode mode, CacheCleanReport& report) {
  const std::uint64_t bytes = tree_bytes(path);
  if (mode == CleanMode::Remove && !remove_path(path, report)) return;
  ++u.items;
  u.bytes += bytes;
}

/// Which mount `p` (not followed) is on: its statx(2) mount ID, else its device; 0 when unknown.
std::uint64_t mount_id(const fs::path& p) {
  struct statx stx {};
  if (::statx(AT_FDCWD, p.c_str(), AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) != 0) return 0;
  if (stx.stx_mask & STATX_MNT_ID) return stx.stx_mnt_id;
  return (static_cast<std::uint64_t>(stx.stx_dev_major) << 32) | stx.stx_dev_minor;
}

/// The first folder at or below cache entry folder `entry` (links not followed) that is a mount
/// point: on another mount than the cache folder holding the entry (a bind mount of the same
/// filesystem has another mount ID). nullopt when there is none.
std::optional<fs::path> mount_point_in(const fs::path& entry) {
  const std::uint64_t up = mount_id(entry.parent_path());
  struct stat st {};
  if (up == 0 || ::lstat(entry.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  if (const auto here = mount_id(entry); here != 0 && here != up) return entry;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(entry, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_directory(type_ec) || it->is_symlink(type_ec)) continue;
    if (const auto here = mount_id(it->path()); here != 0 && here != up) return it->path();
  }
  return std::nullopt;
}

/// Whether the folders among `paths` (one entry's) hold a mount point: then the whole entry is
/// kept, its archive too, and a failure names the mount (what is mounted is never deleted,
/// `rm --one-file-system`, as envlock never deletes a mount inside an environment).
bool kept_for_mount(const std::vector<std::pair<fs::path, bool>>& paths, CacheCleanReport& report) {
  for (const auto& [path, is_archive] : paths) {
    if (is_archive) continue;
    const auto mounted = mount_point_in(path);
    if (!mounted) continue;
    report.failures.push_back(Error{
        ErrorKind::Io, path.string(),
        (*mounted == path ? std::string("is a mount point") : "holds a mount point (" + mounted->string() + ")") +
            "; what is mounted is never deleted, so the entry was kept: unmount it, then run the command again"});
    return true;
  }
  return false;
}

CacheKindUsage clean_repodata(const fs::path& dir, CleanMode mode, CacheCleanReport& report) {
  CacheKindUsage u{"repodata", dir, 0, 0};
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return u;
  std::vector<fs::path> files;
  struct stat st {};
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (::lstat(it->path().c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) files.push_back(it->path());
  }
  // State files first: a lock that starts meanwhile finds no state and fetches in full.
  std::stable_sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    const bool sa = a.filename().string().ends_with(".state.json"), sb = b.filename().string().ends_with(".state.json");
    return sa != sb ? sa : a < b;
  });
  for (const auto& f : files) {
    if (being_written(f)) {
      report.in_use.push_back(f);
      continue;
    }
    count_item(u, f, mode, report);
  }
  return u;
}

/// The entry (`<dist>`) a name of a package cache folder belongs to, and whether it is an
/// archive; nullopt for anything else (lock files, urls.txt, foreign files).
std::optional<std::pair<std::string, bool>> entry_of(const fs::directory_entry& e) {
  const std::string n = e.path().filename().string();
  std::error_code ec;
  if (e.is_directory(ec) && !e.is_symlink(ec)) {
    if (n.front() == '.') {  // a staging folder a killed process left: `.<dist>.extracting-<pid>-<n>`
      const auto mark = n.find(".extracting-");
      if (mark == std::string::npos || mark < 2) return std::nullopt;
      return std::make_pair(n.substr(1, mark - 1), false);
    }
    if (!fs::is_directory(e.path() / "info", ec)) return std::nullopt;
    return std::make_pair(n, false);
  }
  if (!e.is_regular_file(ec) || e.is_symlink(ec)) return std::nullopt;
  std::string base = n;
  if (base.ends_with(".partial")) base.resize(base.size() - 8);
  if (!archive_format(base) || base.front() == '.') return std::nullopt;
  return std::make_pair(strip_extension(base), true);
}

/// The entries of package cache folder `dir` (entry_of()), each with its paths and whether each
/// is an archive; sorted by name, the order their locks are taken in.
std::map<std::string, std::vector<std::pair<fs::path, bool>>> cache_entries(const fs::path& dir) {
  std::map<std::string, std::vector<std::pair<fs::path, bool>>> entries;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (auto which = entry_of(e)) entries[which->first].emplace_back(e.path(), which->second);
  return entries;
}

}  // namespace

CacheCleanReport clean_caches(const fs::path& repodata_dir, const std::vector<fs::path>& pkgs_dirs, CleanMode mode) {
  CacheCleanReport report;
  report.kinds.push_back(clean_repodata(repodata_dir, mode, report));
  for (const auto& dir : pkgs_dirs) {
    CacheKindUsage archives{"archives", dir, 0, 0}, packages{"packages", dir, 0, 0};
    std::error_code ec;
    if (fs::is_directory(dir, ec) && package_cache_folder_writable(dir)) {
      for (auto& [dist, paths] : cache_entries(dir)) {
        const auto lock = EntryLock::exclusive_if_free(dir / (dist + ".lock"), mode == CleanMode::Remove);
        if (!lock) {
          report.in_use.push_back(dir / dist);
          continue;
        }
        if (kept_for_mount(paths, report)) continue;
        std::sort(paths.begin(), paths.end());
        for (const auto& [path, is_archive] : paths) {
          if (!is_archive && path.filename().string().front() != '.' && has_linked_file(path)) {
            ++report.linked;
            continue;
          }
          count_item(is_archive ? archives : packages, path, mode, report);
        }
      }
    }
    report.kinds.push_back(std::move(archives));
    report.kinds.push_back(std::move(packages));
  }
  return report;
}

CacheCleanReport gc_package_cache(const std::vector<fs::path>& pkgs_dirs, const std::set<std::string>& keep,
                                  CleanMode mode, const LinksGoing& going) {
  CacheCleanReport report;
  for (const auto& dir : pkgs_dirs) {
    CacheKindUsage archives{"archives", dir, 0, 0}, packages{"packages", dir, 0, 0};
    std::error_code ec;
    if (fs::is_directory(dir, ec) && package_cache_folder_writable(dir)) {
      for (auto& [dist, paths] : cache_entries(dir)) {
        if (keep.count(dist)) continue;  // a kept generation or a lockfile names it
        const auto lock = EntryLock::exclusive_if_free(dir / (dist + ".lock"), mode == CleanMode::Remove);
        if (!lock) {
          report.in_use.push_back(dir / dist);
          continue;
        }
        if (kept_for_mount(paths, report)) continue;
        // An entry an environment links (a file of its folder has another hard link) stays whole.
        if (std::any_of(paths.begin(), paths.end(), [&going](const auto& p) {
              return !p.second && p.first.filename().string().front() != '.' && has_linked_file(p.first, going);
            })) {
          ++report.linked;
          continue;
        }
        std::sort(paths.begin(), paths.end());
        for (const auto& [path, is_archive] : paths) {
          count_item(is_archive ? archives : packages, path, mode, report);
        }
      }
    }
    report.kinds.push_back(std::move(archives));
    report.kinds.push_back(std::move(packages));
  }
  return report;
}

}  // namespace envlock
