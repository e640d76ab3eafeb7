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
#include <sstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "envlock/hash.hpp"
#include "envlock/url.hpp"

namespace envlock {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int kMarkerFormat = 1;
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
    return Error{ErrorKind::Usage, where.empty() ? redact_url(r.url) : where,
                 "not a conda package file name (expected <name>-<version>-<build>.conda or .tar.bz2)"};
  }
  p.dist = strip_extension(p.file_name);
  p.archive = root / p.file_name;
  p.dir = root / p.dist;
  p.lock = root / (p.dist + ".lock");
  return p;
}

std::string lower_hex(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
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

bool files_present(const fs::path& dir, bool hashes) {
  auto pj = read_json(dir / "info/paths.json");
  if (!pj) return fs::exists(dir / "info/index.json");
  const auto it = pj->find("paths");
  if (it == pj->end() || !it->is_array()) return false;
  for (const auto& e : *it) {
    if (!e.is_object() || !e.contains("_path")) return false;
    const fs::path f = dir / e["_path"].get<std::string>();
    struct stat st {};
    if (::lstat(f.c_str(), &st) != 0) return false;
    if (e.value("path_type", "hardlink") == "hardlink" && e.contains("size_in_bytes") &&
        static_cast<std::uint64_t>(st.st_size) != e["size_in_bytes"].get<std::uint64_t>()) {
      return false;
    }
    if (hashes && S_ISREG(st.st_mode) && e.value("path_type", "hardlink") == "hardlink" && e.contains("sha256") &&
        e["sha256"].is_string()) {
      auto h = hash_file(f, HashAlgorithm::Sha256);
      if (!h.ok() || !digest_equal(*h, e["sha256"].get<std::string>())) return false;
    }
  }
  return true;
}

std::optional<CacheEntry> valid_entry(const Plan& p, const RepoDataRecord& r, CacheValidation v) {
  auto m = read_json(p.dir / kMarker);
  if (!m || !marker_matches(*m, p, r)) return std::nullopt;
  if (v != CacheValidation::Marker && !files_present(p.dir, v == CacheValidation::Hashes)) return std::nullopt;
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
    return FileDigests{size, *sha, lower_hex(r.md5)};
  }
  auto d = digest_file(p.archive);
  if (!d.ok()) return std::nullopt;
  if (!r.sha256.empty() && !digest_equal(d->sha256, r.sha256)) return std::nullopt;
  if (r.sha256.empty() && !r.md5.empty() && !digest_equal(d->md5, r.md5)) return std::nullopt;
  return *d;
}

Status write_file_atomic(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) return Error{ErrorKind::Io, tmp.string(), "cannot write file"};
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Error{ErrorKind::Io, path.string(), "cannot write file: " + ec.message()};
  return ok_status();
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

/// Extracts the verified archive into place with the marker and repodata_record.json.
Result<CacheEntry> extract_entry(const Plan& p, const RepoDataRecord& r, const FileDigests& d, CacheOrigin origin,
                                 const ExtractLimits& limits) {
  clear_for_extraction(p);
  auto stats = extract_package(p.archive, p.dir, limits, [&](const fs::path& staging) -> Status {
    json rec;
    r.to_json(rec);
    rec["url"] = redact_url(r.url);
    if (!r.channel.empty()) rec["channel"] = redact_url(r.channel);
    rec["fn"] = p.file_name;
    rec["sha256"] = d.sha256;
    rec["md5"] = d.md5;
    rec["size"] = d.size;
    if (auto s = write_file_atomic(staging / kRepodataRecord, rec.dump(1) + "\n"); !s.ok()) return s;
    json marker = {{"format", kMarkerFormat}, {"file_name", p.file_name}, {"archive_sha256", d.sha256},
                   {"archive_md5", d.md5}, {"archive_size", d.size}};
    return write_file_atomic(staging / kMarker, marker.dump(1) + "\n");
  });
  if (!stats.ok()) {
    // A verified archive that does not extract is bad at the source: keep nothing of it.
    std::error_code ec;
    fs::remove(p.archive, ec);
    return stats.error().with_context(p.file_name);
  }
  CacheEntry e;
  e.dist_name = p.dist;
  e.archive = p.archive;
  e.extracted_dir = p.dir;
  e.sha256 = d.sha256;
  e.size = d.size;
  e.origin = origin;
  return e;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

}  // namespace

Result<fs::path> default_package_cache_dir() {
  if (auto v = env_or_empty("ENVLOCK_PKGS_DIR"); !v.empty()) return fs::path(v);
  if (auto v = env_or_empty("XDG_CACHE_HOME"); !v.empty() && v.front() == '/') {
    return fs::path(v) / "envlock" / "pkgs";
  }
  if (auto v = env_or_empty("HOME"); !v.empty()) return fs::path(v) / ".cache" / "envlock" / "pkgs";
  return Error{ErrorKind::Usage, "", "cannot place the package cache: HOME is not set", "",
               "set ENVLOCK_PKGS_DIR to a writable folder"};
}

Result<PackageCache> PackageCache::open(const fs::path& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec || !fs::is_directory(root)) {
    return Error{ErrorKind::Io, root.string(), "cannot create the package cache folder: " + ec.message(), "",
                 "set ENVLOCK_PKGS_DIR to a writable folder"};
  }
  return PackageCache(fs::absolute(root));
}

Result<PackageCache> PackageCache::open_default() {
  auto dir = default_package_cache_dir();
  if (!dir.ok()) return dir.error();
  return open(*dir);
}

std::optional<CacheEntry> PackageCache::lookup(const RepoDataRecord& record, CacheValidation validation) const {
  auto p = plan_for(root_, record);
  if (!p.ok()) return std::nullopt;
  auto lock = EntryLock::acquire(p->lock);
  if (!lock.ok()) return std::nullopt;
  return valid_entry(*p, record, validation);
}

Result<CacheEntry> PackageCache::ensure(const RepoDataRecord& record, const CacheOptions& options) {
  auto all = ensure_all({record}, options);
  return std::move(all.front());
}

Status PackageCache::remove(const RepoDataRecord& record) {
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
    auto p = plan_for(root_, records[i]);
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
    FileDigests digests;
    CacheOrigin origin = CacheOrigin::Extracted;
  };
  std::vector<Job> to_extract;
  std::vector<std::size_t> to_download;
  std::vector<std::size_t> locked;  // representatives whose lock is held
  for (const auto& [dist, idx] : by_dist) {
    const std::size_t i = idx.front();
    auto lock = EntryLock::acquire(plans[i].lock);
    if (!lock.ok()) {
      results[i] = lock.error().with_context(plans[i].file_name);
      continue;
    }
    locks.push_back(std::move(*lock));
    locked.push_back(i);
  }
  // Checking the entries (a stat per cached file with CacheValidation::Files) is independent per
  // entry: in parallel, each under its lock.
  std::vector<std::optional<CacheEntry>> hits(locked.size());
  parallel_for(locked.size(), entry_threads(options, locked.size()), [&](std::size_t k) {
    try {
      hits[k] = valid_entry(plans[locked[k]], records[locked[k]], options.validation);
    } catch (const std::exception&) {  // a paths.json of the wrong shape (nlohmann type_error): extract again
      hits[k].reset();
    }
  });
  for (std::size_t k = 0; k < locked.size(); ++k) {
    const std::size_t i = locked[k];
    if (hits[k]) {
      results[i] = std::move(*hits[k]);
    } else if (auto d = verified_archive(plans[i], records[i])) {
      to_extract.push_back({i, *d, CacheOrigin::Extracted});
    } else {
      std::error_code ec;
      fs::remove(plans[i].archive, ec);
      to_download.push_back(i);
    }
  }

  if (!to_download.empty()) {
    std::vector<FetchRequest> reqs;
    reqs.reserve(to_download.size());
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
          d.md5 = lower_hex(records[i].md5);
        } else if (auto md5 = hash_file(plans[i].archive, HashAlgorithm::Md5); md5.ok()) {
          d.md5 = *md5;
        }
      }
      to_extract.push_back({i, d, CacheOrigin::Downloaded});
    }
  }

  std::set<std::string> extracting;
  for (const Job& job : to_extract) extracting.insert(plans[job.first].dist);
  remove_staging_debris(root_, extracting);

  // Extract in parallel; each job owns a distinct entry (and holds its lock already).
  parallel_for(to_extract.size(), entry_threads(options, to_extract.size()), [&](std::size_t k) {
    const Job& job = to_extract[k];
    results[job.first] = extract_entry(plans[job.first], records[job.first], job.digests, job.origin, options.limits);
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

}  // namespace envlock
