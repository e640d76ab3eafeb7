#pragma once
// envlock/package_cache.hpp — the package cache shared by every environment on the machine.
//
// Layout (conda's pkgs/ layout, so the folders read as conda's do):
//   <root>/<dist>.conda | <dist>.tar.bz2     the archive as downloaded (sha256 verified)
//   <root>/<dist>/                           the archive extracted; <dist> = file name without
//                                            its extension, i.e. conda's name-version-build
//   <root>/<dist>/info/repodata_record.json  the RepoDataRecord it was made for (as conda writes)
//   <root>/<dist>/info/envlock_cache.json    the completion marker: archive file name, size,
//                                            sha256 (and md5 when known), marker format version
//   <root>/<dist>.lock                       flock(2) lock file, one per entry
//
// Location: package_cache_dir() of envlock/paths.hpp ($ENVLOCK_PKGS_DIR, else <cache root>/pkgs,
// the cache root being $ENVLOCK_CACHE_DIR, $XDG_CACHE_HOME/envlock or $HOME/.cache/envlock).
// Several folders (conda's pkgs_dirs): $ENVLOCK_PKGS_DIRS, comma-separated as CONDA_PKGS_DIRS.
// They are searched in order for a valid entry or a matching archive; the first writable one
// (created when missing) gets every new entry; the others are read-only sources, never changed
// (conda's PackageCacheData.first_writable, mamba's MultiPackageCache).
//
// An entry is reused only when its marker exists and names the same archive (file name and
// sha256 — or md5, or size, whichever the record carries, in that order of preference), and —
// with CacheValidation::Files, what install uses — only when whole: info/paths.json is there
// and every file it lists exists as the kind it lists with its recorded size (for an old package
// without paths.json, every file the marker recorded at extraction). Otherwise it is extracted
// again from the cached archive. The extracted folder appears by rename() only after extraction
// and the marker are complete, so a folder without a marker is debris of an older envlock and is
// replaced. A cached archive is re-hashed before it is extracted again; one that does not match
// the record is never deleted: it is downloaded again, and the download replaces it only when
// the new bytes match the record (so a lockfile with a wrong hash cannot destroy a good archive).
// Several envlock processes may use one cache at once: each entry is read or changed only while
// holding an exclusive flock on its lock file (taken in sorted order, so batches cannot deadlock).
// A cache hit opens no network connection.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "envlock/extract.hpp"
#include "envlock/fetch.hpp"
#include "envlock/package_record.hpp"
#include "envlock/result.hpp"

namespace envlock {

/// How much an existing entry is checked before reuse.
enum class CacheValidation {
  Marker,  ///< the completion marker matches the record (cheap: two small file reads)
  Files,   ///< also every file of info/paths.json exists with its recorded size (one stat each);
           ///< what `envlock install` uses: a cached file edited through a hard link of an
           ///< environment changes size in most edits, and the package is extracted again
  Hashes,  ///< also every hardlink-type file has its recorded sha256 (reads every byte;
           ///< `envlock install --extra-safety-checks`, mamba's name for it, like conda's
           ///< extra_safety_checks)
};

/// The check `envlock install` and `envlock snapshot deploy` make of a cached entry before they
/// link it (one setting for both; `envlock install --extra-safety-checks` raises it to Hashes).
inline constexpr CacheValidation kInstallCacheValidation = CacheValidation::Files;

/// How an entry came to be valid.
enum class CacheOrigin {
  Hit,        ///< already valid: nothing downloaded, nothing extracted
  Extracted,  ///< the archive was cached and verified; extracted now
  Downloaded, ///< downloaded and extracted now
};

/// A valid cache entry for one record.
struct CacheEntry {
  std::string dist_name;                  ///< folder name: archive file name without extension
  std::filesystem::path archive;          ///< <root>/<file name>
  std::filesystem::path extracted_dir;    ///< <root>/<dist_name>
  std::string sha256;                     ///< of the archive, lower-case hex
  std::uint64_t size = 0;                 ///< of the archive, bytes
  CacheOrigin origin = CacheOrigin::Hit;
};

/// Knobs for ensure()/ensure_all().
struct CacheOptions {
  FetchOptions fetch;                                 ///< parallelism, retries, progress of downloads
  ExtractLimits limits;                               ///< bounds for each archive
  CacheValidation validation = CacheValidation::Marker;
  std::size_t extract_threads = 0;                    ///< parallel extractions; 0 = CPU count
};

/// The cache folders, in search order: $ENVLOCK_PKGS_DIRS (absolute folders separated by commas,
/// as conda's CONDA_PKGS_DIRS; empty items ignored), else {package_cache_dir()} (envlock/paths.hpp).
/// ErrorKind::Usage for a relative item or a list that names no folder (`where` names the variable).
Result<std::vector<std::filesystem::path>> default_package_cache_dirs();

/// Whether `dir` is an existing folder this process may write package entries into: access(2)
/// allows writing and, for root (whom access(2) always lets write), the permission bits do too
/// (the owner's write bit for a root-owned folder, any write bit otherwise), so a cache an admin
/// made read-only with chmod stays a read-only source as conda's pkgs_dirs treat it.
bool package_cache_folder_writable(const std::filesystem::path& dir);

/// `envlock clean`: whether anything is removed.
enum class CleanMode : bool { DryRun, Remove };

/// What one kind of cache holds that clean_caches() frees (or, with CleanMode::DryRun, would free).
struct CacheKindUsage {
  std::string kind;              ///< "repodata" (the repodata cache: copies, states, shards, index
                                 ///< files, base lockfiles), "archives" (.conda / .tar.bz2 and their
                                 ///< .partial downloads) or "packages" (extracted folders)
  std::filesystem::path folder;  ///< the folder it lives in
  std::size_t items = 0;         ///< files (repodata, archives) or folders (packages)
  std::uint64_t bytes = 0;       ///< their size: st_size of every regular file
};

/// What clean_caches() did.
struct CacheCleanReport {
  std::vector<CacheKindUsage> kinds;          ///< repodata, then archives and packages per folder
  std::vector<std::filesystem::path> in_use;  ///< kept: another process holds the entry's lock, or
                                              ///< the repodata file is still being written
  std::size_t linked = 0;  ///< extracted packages kept: a file of theirs has other hard links (an
                           ///< environment uses it; conda clean's "unused packages" rule)
  std::vector<Error> failures;  ///< what could not be removed (ErrorKind::Io, `where` = the path),
                                ///< not counted in `kinds`: a failed deletion, or an entry kept
                                ///< whole because it is or holds a mount point (never entered)
};

/// Frees the repodata cache `repodata_dir` and the package cache folders `pkgs_dirs` (only those
/// that exist and are writable: package_cache_folder_writable(); a read-only folder is never
/// changed), as `conda clean --all` does (conda/cli/main_clean.py: index cache, tarballs and their
/// .part files, unused packages; lock files are kept):
///   - package entries are taken one by one under the package cache's own entry lock
///     (`<dist>.lock`, flock(2) LOCK_EX|LOCK_NB, never waited for): an entry whose lock another
///     process holds (it is downloading, extracting or checking it) is skipped and listed in
///     `in_use`. Lock files themselves are never removed (a process may be waiting on one);
///   - an extracted folder that has a regular file with more than one hard link is kept and
///     counted in `linked` (an environment, or an install linking now, uses it). An install holds
///     no entry lock while it links (only while ensure_all() runs): a package it has not linked
///     a file of yet, or copies, may be removed under it, and that install then fails;
///   - the repodata cache has no lock: its files are unlinked (a process that opened or mapped one
///     keeps reading it), state files first so a lock that starts meanwhile fetches afresh; a
///     `.download` changed in the last 10 minutes, or a `.tmp-<pid>` of a live process, is a write
///     in progress and is kept (in_use).
/// Missing folders hold nothing: a report of zeros, never an error. Nothing is created, also not
/// with CleanMode::Remove (a missing lock file means nobody uses the entry).
CacheCleanReport clean_caches(const std::filesystem::path& repodata_dir,
                              const std::vector<std::filesystem::path>& pkgs_dirs, CleanMode mode);

/// `envlock gc` (after it removed old generations: envlock/generations.hpp): removes whole package
/// entries (extracted folder, archive, `.partial`, a killed extraction's staging folder) of the
/// writable folders of `pkgs_dirs` that no environment uses — no file of the extracted folder has
/// another hard link (clean_caches()'s rule: an environment or a kept generation links it) — and
/// whose dist name ("name-version-build") is not in `keep` (the packages of the generations left
/// and of the lockfiles kept with them or named). Each entry under its lock, as clean_caches(),
/// never waited for. The repodata cache is left alone. `linked` counts the entries kept because
/// they are linked. `going`: links that are about to go, (st_dev, st_ino) -> how many links of
/// that file the trees to be deleted hold (`envlock gc --dry-run`: the generations it would
/// remove still link their packages); a file whose other links are all counted there is not
/// linked, so the dry run counts what the real run removes.
using LinksGoing = std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t>;
CacheCleanReport gc_package_cache(const std::vector<std::filesystem::path>& pkgs_dirs,
                                  const std::set<std::string>& keep, CleanMode mode, const LinksGoing& going = {});

class PackageCache {
 public:
  /// Uses (and creates, with parents) the folder `root`. ErrorKind::Io when it cannot be created.
  static Result<PackageCache> open(const std::filesystem::path& root);
  /// A pkgs_dirs list: the first folder that is writable (or missing and creatable) is root();
  /// every other existing one is a read-only source. A folder is read-only when access(2) or,
  /// for root too, its permission bits deny writing. ErrorKind::Io when none exists or can be
  /// created; a list without a writable folder opens, and then only serves entries it holds.
  static Result<PackageCache> open(const std::vector<std::filesystem::path>& dirs);
  /// open(default_package_cache_dirs()) when $ENVLOCK_PKGS_DIRS is set, else
  /// open(package_cache_dir()) (envlock/paths.hpp).
  static Result<PackageCache> open_default();

  /// The folder new entries go to; empty when no folder of the list is writable.
  [[nodiscard]] const std::filesystem::path& root() const { return root_; }
  /// Every folder, in search order (root() among them).
  [[nodiscard]] const std::vector<std::filesystem::path>& dirs() const { return dirs_; }

  /// The valid entry for `record` in the first folder that holds one (under the entry's lock);
  /// never touches the network and never changes the cache.
  [[nodiscard]] std::optional<CacheEntry> lookup(const RepoDataRecord& record,
                                                 CacheValidation validation = CacheValidation::Marker) const;

  /// Makes the entry for `record` valid: reuses one (any folder), extracts a verified cached
  /// archive (root()'s, else a read-only folder's) into root(), or downloads (record.url, checked
  /// against record.sha256/md5/size) into root() and extracts.
  /// Errors carry the record's file name in `where`: ErrorKind::Network / Integrity / Io from
  /// fetch and extract (nothing of a failed entry is left in the cache; a cached archive the
  /// record does not match is kept), ErrorKind::Io when the entry is missing and no folder is
  /// writable, ErrorKind::Usage for a record without url or with a file name that is not
  /// .conda / .tar.bz2.
  Result<CacheEntry> ensure(const RepoDataRecord& record, const CacheOptions& options = {});

  /// ensure() for many records: the misses are downloaded in parallel (one fetch_all batch), then
  /// extracted on options.extract_threads threads. One result per record, in input order; a
  /// record listed twice gets the same entry twice. One failure does not stop the others.
  std::vector<Result<CacheEntry>> ensure_all(const std::vector<RepoDataRecord>& records,
                                             const CacheOptions& options = {});

  /// Deletes the entry (archive, extracted folder, partial download) for `record` in root(),
  /// under its lock; read-only folders are never changed (ErrorKind::Io without a root()).
  Status remove(const RepoDataRecord& record);

 private:
  PackageCache(std::filesystem::path root, std::vector<std::filesystem::path> dirs)
      : root_(std::move(root)), dirs_(std::move(dirs)) {}
  /// Where entry names are planned: root(), else the first folder.
  [[nodiscard]] const std::filesystem::path& home() const { return root_.empty() ? dirs_.front() : root_; }
  [[nodiscard]] Error no_writable_folder(const std::string& what) const;
  std::filesystem::path root_;
  std::vector<std::filesystem::path> dirs_;
};

}  // namespace envlock
